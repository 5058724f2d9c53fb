/*
 * Tests of api/bench_input.c: the three accepted shapes (llama-bench's documented JSON from
 * tests/fixtures/bench, llama-server's timings, rigfit's run object) mapped to runs with the
 * shipped model catalog, and hostile input: negative, infinite, huge and fractional numbers,
 * wrong types, unknown fields, bad times, too many runs, control characters.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/bench_input.h"
#include "core/err.h"
#include "core/hw/hw_fingerprint.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

/* 2026-01-01T00:00:00Z: "now" for every test, so measured_at defaults are known. */
#define NOW_MS 1767225600000LL

static struct device_table devices;
static struct model_catalog *models;
static struct api_snapshot snap;
static struct api_env env;
static char host_fp[HW_FINGERPRINT_LEN + 1];

static void setup(void)
{
	t_profiles_load(&devices, &models, NULL);
	memset(&snap, 0, sizeof(snap));
	snprintf(snap.hw.backend, sizeof(snap.hw.backend), "cuda");
	snprintf(snap.hw.platform, sizeof(snap.hw.platform), "nvidia");
	ck_assert_int_eq(hw_fingerprint(&snap.hw, host_fp, sizeof(host_fp)), 0);
	memset(&env, 0, sizeof(env));
	env.now_ms = NOW_MS;
	env.snapshot = &snap;
	env.cat.models = models;
	env.cat.devices = &devices;
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, NULL);
}

/* Parses body with query; returns api_bench_parse's result. */
static int parse(const char *body, const char *query, struct api_bench_batch *b,
		 struct api_reply *r)
{
	struct api_request req = {0};

	memset(r, 0, sizeof(*r));
	req.method = API_POST;
	req.path = "/api/benchmarks";
	req.query = query ? query : "";
	req.body = body;
	req.body_len = strlen(body);
	return api_bench_parse(&env, &req, b, r);
}

/* Asserts that body is refused with status, code and field (NULL: any). */
static void refused(const char *body, const char *query, int status, const char *code,
		    const char *field)
{
	struct api_bench_batch b;
	struct api_reply r;
	cJSON *j, *e;
	int rc = parse(body, query, &b, &r);

	ck_assert_msg(rc < 0, "accepted: %.200s", body);
	ck_assert_int_eq(b.n, 0);
	ck_assert_ptr_null(b.runs);
	ck_assert_msg(r.status == status, "status %d, want %d for %.200s: %s", r.status, status,
		      body, r.body);
	j = cJSON_Parse(r.body);
	e = cJSON_GetObjectItem(j, "error");
	ck_assert_str_eq(cJSON_GetObjectItem(e, "code")->valuestring, code);
	if (field)
		ck_assert_msg(cJSON_IsString(cJSON_GetObjectItem(e, "field")) &&
				      strcmp(cJSON_GetObjectItem(e, "field")->valuestring, field) ==
					      0,
			      "field of %s: %s", body, r.body);
	cJSON_Delete(j);
	api_reply_reset(&r);
}

/* Parses body and asserts it was accepted with n runs. */
static void accepted(const char *body, const char *query, int n, struct api_bench_batch *b)
{
	struct api_reply r;
	int rc = parse(body, query, b, &r);

	ck_assert_msg(rc == 0, "refused %.300s: %s", body, r.body);
	ck_assert_int_eq(b->n, n);
	api_reply_reset(&r);
}

/* The fixture, read from the tree. */
static char *fixture(void)
{
	char *path = t_path(t_src_dir(), "tests/fixtures/bench/llama-bench.json");
	size_t len;
	char *text = t_read_file(path, &len);

	ck_assert_ptr_nonnull(text);
	free(path);
	return text;
}

START_TEST(test_llama_bench_fixture)
{
	struct api_bench_batch b, again;
	char *text = fixture();
	cJSON *s;

	accepted(text, NULL, 2, &b);
	ck_assert_str_eq(b.format, "llama-bench");
	ck_assert_int_eq(b.n_skipped, 0);
	/* pp512: the prefill speed. */
	ck_assert_str_eq(b.runs[0].model, "Qwen/Qwen2.5-7B"); /* via the alias */
	ck_assert_str_eq(b.runs[0].precision, "Q4_K_M");      /* "Q4_K - Medium" */
	ck_assert_str_eq(b.runs[0].backend, "cuda");
	ck_assert_str_eq(b.runs[0].runtime, "llama.cpp");
	ck_assert_str_eq(b.runs[0].runtime_version, "b5163-8cf427ff");
	ck_assert_str_eq(b.runs[0].source, "llama-bench");
	ck_assert_str_eq(b.runs[0].hardware_fingerprint, host_fp);
	ck_assert_str_eq(b.runs[0].measured_at, "2025-04-24T11:58:50.000Z");
	ck_assert_int_eq(b.runs[0].prompt_tokens, 512);
	ck_assert_int_eq(b.runs[0].generated_tokens, 0);
	ck_assert(fabs(b.runs[0].prefill_tokens_per_s - 7100.002165) < 1e-9);
	ck_assert(b.runs[0].decode_tokens_per_s <= 0);
	/* tg128: the decode speed. */
	ck_assert_int_eq(b.runs[1].generated_tokens, 128);
	ck_assert(fabs(b.runs[1].decode_tokens_per_s - 118.881588) < 1e-9);
	ck_assert(b.runs[1].prefill_tokens_per_s <= 0);
	ck_assert_str_eq(b.runs[1].measured_at, "2025-04-24T11:58:51.000Z");
	/* Settings: the configuration, not the results or the machine. */
	s = cJSON_Parse(b.runs[0].settings_json);
	ck_assert_int_eq(cJSON_GetObjectItem(s, "n_batch")->valueint, 2048);
	ck_assert_int_eq(cJSON_GetObjectItem(s, "n_ubatch")->valueint, 512);
	ck_assert_int_eq(cJSON_GetObjectItem(s, "n_threads")->valueint, 8);
	ck_assert_int_eq(cJSON_GetObjectItem(s, "n_gpu_layers")->valueint, 99);
	ck_assert_str_eq(cJSON_GetObjectItem(s, "type_k")->valuestring, "f16");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(s, "flash_attn")));
	ck_assert_ptr_null(cJSON_GetObjectItem(s, "avg_ts"));
	ck_assert_ptr_null(cJSON_GetObjectItem(s, "gpu_info"));
	cJSON_Delete(s);
	/* Run ids: derived, distinct, and the same when the same output is posted again. */
	ck_assert_int_eq((int)strncmp(b.runs[0].run_id, "auto-", 5), 0);
	ck_assert_str_ne(b.runs[0].run_id, b.runs[1].run_id);
	accepted(text, NULL, 2, &again);
	ck_assert_str_eq(b.runs[0].run_id, again.runs[0].run_id);
	ck_assert_str_eq(b.runs[1].run_id, again.runs[1].run_id);
	api_bench_batch_free(&again);
	/* Query overrides: another model, precision and machine. */
	accepted(text, "model=my-model&precision=Q8_0&hardware=hw-0123456789abcdef", 2, &again);
	ck_assert_str_eq(again.runs[0].model, "my-model");
	ck_assert_str_eq(again.runs[0].precision, "Q8_0");
	ck_assert_str_eq(again.runs[1].hardware_fingerprint, "hw-0123456789abcdef");
	ck_assert_str_ne(again.runs[0].run_id, b.runs[0].run_id);
	api_bench_batch_free(&again);
	api_bench_batch_free(&b);
	free(text);
}
END_TEST

/* One llama-bench element with the given extra fields (JSON members, may be ""). */
static char *lb_element(const char *extra, int n_prompt, int n_gen, const char *avg_ts)
{
	char *buf = malloc(2048);

	snprintf(buf, 2048,
		 "{\"build_commit\":\"3f4fc97f\",\"build_number\":6500,\"backends\":\"Metal,BLAS\","
		 "\"model_filename\":\"/m/llama-2-7b.Q4_0.gguf\",\"model_type\":\"llama 7B "
		 "mostly Q4_0\",\"n_batch\":512,\"n_threads\":8,\"n_prompt\":%d,\"n_gen\":%d,"
		 "\"test_time\":\"2025-09-01T10:00:00Z\",\"avg_ts\":%s%s%s}",
		 n_prompt, n_gen, avg_ts, *extra ? "," : "", extra);
	return buf;
}

START_TEST(test_llama_bench_variants)
{
	struct api_bench_batch b;
	char body[8192], *e1, *e2, *e3;

	/* Newer fields are ignored; flash_attn -1 ("auto") is kept as it is; pg is skipped. */
	e1 = lb_element("\"n_cpu_moe\":0,\"repack\":true,\"flash_attn\":-1,\"n_depth\":512", 512, 0,
			"512.5");
	e2 = lb_element("", 512, 128, "70.1");
	e3 = lb_element("", 0, 64, "33.3");
	snprintf(body, sizeof(body), "[%s,%s,%s]", e1, e2, e3);
	accepted(body, NULL, 2, &b);
	ck_assert_int_eq(b.n_skipped, 1);
	ck_assert_int_eq(b.skipped[0].index, 1);
	ck_assert_ptr_nonnull(strstr(b.skipped[0].reason, "pg"));
	ck_assert_str_eq(b.runs[0].model, "meta-llama/Llama-2-7b-hf"); /* llama-2-7b alias */
	ck_assert_str_eq(b.runs[0].precision, "Q4_0");
	ck_assert_str_eq(b.runs[0].backend, "metal");
	ck_assert_str_eq(b.runs[0].runtime_version, "b6500-3f4fc97f");
	ck_assert_ptr_nonnull(strstr(b.runs[0].settings_json, "\"flash_attn\":-1"));
	ck_assert_ptr_nonnull(strstr(b.runs[0].settings_json, "\"n_depth\":512"));
	ck_assert_ptr_null(strstr(b.runs[0].settings_json, "repack"));
	ck_assert(b.runs[1].decode_tokens_per_s > 33 && b.runs[1].decode_tokens_per_s < 34);
	api_bench_batch_free(&b);

	/* One element alone, as -o jsonl prints it. */
	accepted(e3, NULL, 1, &b);
	ck_assert_str_eq(b.format, "llama-bench");
	api_bench_batch_free(&b);
	/* A file name the catalog does not know keeps its name; the quant and the split suffix
	 * come off it. */
	snprintf(body, sizeof(body),
		 "[{\"model_filename\":\"x/My-Finetune-7B-Q5_K_M-00001-of-00002.gguf\","
		 "\"n_prompt\":0,\"n_gen\":16,\"avg_ts\":10}]");
	accepted(body, NULL, 1, &b);
	ck_assert_str_eq(b.runs[0].model, "My-Finetune-7B");
	ck_assert_str_eq(b.runs[0].precision, "Q5_K_M");
	ck_assert_str_eq(b.runs[0].backend, "cuda"); /* no backends: the host's */
	ck_assert_str_eq(b.runs[0].runtime_version, "");
	ck_assert_str_eq(b.runs[0].measured_at, "2026-01-01T00:00:00.000Z"); /* no test_time */
	api_bench_batch_free(&b);
	free(e1);
	free(e2);
	free(e3);
}
END_TEST

START_TEST(test_llama_bench_hostile)
{
	static const struct {
		const char *avg_ts, *extra, *field;
		int n_prompt, n_gen;
	} bad[] = {
		{"-5", "", "[0].avg_ts", 0, 128},
		{"0", "", "[0].avg_ts", 0, 128},
		{"1e300", "", "[0].avg_ts", 0, 128},
		{"1e999", "", "[0].avg_ts", 0, 128}, /* cJSON reads it as infinity */
		{"\"fast\"", "", "[0].avg_ts", 0, 128},
		{"10", "", "[0].n_prompt", -1, 128},
		{"10", "", "[0].n_prompt", 0, 0},
		{"10", "\"n_threads\":{\"a\":1}", "[0].n_threads", 0, 128},
		{"10", "\"backends\":42", "[0].backends", 0, 128},
		{"10", "\"build_number\":1.5", "[0].build_number", 0, 128},
	};
	char body[4096];
	char *el;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		el = lb_element(bad[i].extra, bad[i].n_prompt, bad[i].n_gen, bad[i].avg_ts);
		/* A later duplicate key is ignored by cJSON lookups: put the bad value first. */
		if (*bad[i].extra) {
			snprintf(body, sizeof(body), "[{%s,%s]", bad[i].extra, el + 1);
		} else {
			snprintf(body, sizeof(body), "[%s]", el);
		}
		refused(body, NULL, 422, "invalid_value", bad[i].field);
		free(el);
	}
	refused("[{\"n_prompt\":1,\"n_gen\":0,\"avg_ts\":1,\"test_time\":\"yesterday\","
		"\"model_filename\":\"a.gguf\"}]",
		NULL, 422, "invalid_value", "[0].test_time");
	refused("[{\"n_prompt\":1,\"n_gen\":0,\"avg_ts\":1,\"test_time\":\"2025-04-24T11:58:50\","
		"\"model_filename\":\"a.gguf\"}]",
		NULL, 422, "invalid_value", "[0].test_time");
	refused("[{\"n_prompt\":1,\"n_gen\":0}]", NULL, 422, "missing_field", "[0].avg_ts");
	refused("[{\"n_prompt\":1,\"n_gen\":0,\"avg_ts\":5}]", NULL, 422, "missing_field",
		"[0].model_filename");
	refused("[1,2]", NULL, 422, "invalid_value", "[0].avg_ts");
	refused("[]", NULL, 422, "invalid_value", NULL);
	refused("[{\"n_prompt\":8,\"n_gen\":8,\"avg_ts\":5,\"model_filename\":\"a\"}]", NULL, 422,
		"invalid_value", NULL);
	/* The second element is the bad one, and the error says so. */
	el = lb_element("", 0, 16, "-1");
	{
		char *good = lb_element("", 0, 16, "1");
		snprintf(body, sizeof(body), "[%s,%s]", good, el);
		free(good);
	}
	refused(body, NULL, 422, "invalid_value", "[1].avg_ts");
	free(el);
}
END_TEST

START_TEST(test_too_many_runs)
{
	const char one[] = "{\"n_prompt\":0,\"n_gen\":1,\"avg_ts\":1,\"model_filename\":\"a\"}";
	size_t cap = (sizeof(one) + 1) * (API_BENCH_MAX_RUNS + 2) + 8, used = 0;
	char *body = malloc(cap);
	struct api_bench_batch b;

	for (int n = API_BENCH_MAX_RUNS; n <= API_BENCH_MAX_RUNS + 1; n++) {
		used = (size_t)snprintf(body, cap, "[");
		for (int i = 0; i < n; i++)
			used += (size_t)snprintf(body + used, cap - used, "%s%s", i ? "," : "",
						 one);
		snprintf(body + used, cap - used, "]");
		if (n == API_BENCH_MAX_RUNS) {
			accepted(body, NULL, n, &b);
			api_bench_batch_free(&b);
		} else {
			refused(body, NULL, 422, "too_large", NULL);
		}
	}
	free(body);
}
END_TEST

START_TEST(test_llama_server)
{
	struct api_bench_batch b;

	/* The whole /completion response, with fields rigfit does not read. */
	accepted("{\"content\":\"Hello\",\"id_slot\":0,\"stop\":true,\"model\":\"/models/"
		 "Qwen2.5-7B-Instruct-Q4_K_M.gguf\",\"tokens_predicted\":64,\"tokens_evaluated\":"
		 "20,\"generation_settings\":{\"n_ctx\":4096},\"timings\":{\"prompt_n\":20,"
		 "\"prompt_ms\":12.5,\"prompt_per_token_ms\":0.625,\"prompt_per_second\":1600.0,"
		 "\"predicted_n\":64,\"predicted_ms\":800.0,\"predicted_per_token_ms\":12.5,"
		 "\"predicted_per_second\":80.0}}",
		 NULL, 1, &b);
	ck_assert_str_eq(b.format, "llama-server");
	ck_assert_str_eq(b.runs[0].model, "Qwen/Qwen2.5-7B");
	ck_assert_str_eq(b.runs[0].precision, "Q4_K_M");
	ck_assert_str_eq(b.runs[0].source, "llama-server");
	ck_assert_str_eq(b.runs[0].backend, "cuda");
	ck_assert_int_eq(b.runs[0].prompt_tokens, 20);
	ck_assert_int_eq(b.runs[0].generated_tokens, 64);
	ck_assert(b.runs[0].prefill_tokens_per_s == 1600.0);
	ck_assert(b.runs[0].decode_tokens_per_s == 80.0);
	ck_assert_str_eq(b.runs[0].measured_at, "2026-01-01T00:00:00.000Z");
	api_bench_batch_free(&b);

	/* Only model and timings; a cached prompt (prompt_n 0, speed null) records decode only;
	 * a chat completion's created and system_fingerprint are used. */
	accepted(
		"{\"model\":\"phi\",\"created\":1745495930,\"system_fingerprint\":\"b5163-8cf427ff\","
		"\"timings\":{\"prompt_n\":0,\"prompt_per_second\":null,\"predicted_n\":10,"
		"\"predicted_per_second\":42.5}}",
		NULL, 1, &b);
	ck_assert_str_eq(b.runs[0].model, "phi");
	ck_assert_str_eq(b.runs[0].precision, "unknown");
	ck_assert(b.runs[0].prefill_tokens_per_s <= 0);
	ck_assert(b.runs[0].decode_tokens_per_s == 42.5);
	ck_assert_str_eq(b.runs[0].measured_at, "2025-04-24T11:58:50.000Z");
	ck_assert_str_eq(b.runs[0].runtime_version, "b5163-8cf427ff");
	api_bench_batch_free(&b);

	/* The model may come from the query instead. */
	accepted("{\"timings\":{\"predicted_n\":10,\"predicted_per_second\":42.5}}",
		 "model=qwen2.5-7b&precision=Q8_0", 1, &b);
	ck_assert_str_eq(b.runs[0].model, "Qwen/Qwen2.5-7B");
	ck_assert_str_eq(b.runs[0].precision, "Q8_0");
	api_bench_batch_free(&b);

	refused("{\"timings\":{\"predicted_n\":10,\"predicted_per_second\":42.5}}", NULL, 422,
		"missing_field", "model");
	refused("{\"model\":\"m\",\"timings\":{\"predicted_n\":10,\"predicted_per_second\":-1}}",
		NULL, 422, "invalid_value", "timings.predicted_per_second");
	refused("{\"model\":\"m\",\"timings\":{\"predicted_n\":-3,\"predicted_per_second\":5}}",
		NULL, 422, "invalid_value", "predicted_n");
	refused("{\"model\":\"m\",\"timings\":{\"prompt_n\":0,\"predicted_n\":0}}", NULL, 422,
		"invalid_value", "timings");
	refused("{\"model\":\"m\",\"timings\":[1]}", NULL, 422, "invalid_value", "timings");
	refused("{\"model\":7,\"timings\":{\"predicted_n\":1,\"predicted_per_second\":5}}", NULL,
		422, "invalid_value", "model");
	refused("{\"model\":\"m\",\"created\":-1,\"timings\":{\"predicted_n\":1,"
		"\"predicted_per_second\":5}}",
		NULL, 422, "invalid_value", "created");
}
END_TEST

/* A complete native run with one member replaced or added (a JSON fragment, may be ""). */
static char *native(const char *extra)
{
	char *buf = malloc(4096);

	snprintf(buf, 4096,
		 "{%s%s\"model\":\"qwen2.5-7b\",\"precision\":\"Q4_K_M\",\"backend\":\"cuda\","
		 "\"runtime\":\"llama.cpp\",\"decode_tokens_per_s\":50.5}",
		 extra, *extra ? "," : "");
	return buf;
}

START_TEST(test_native)
{
	struct api_bench_batch b, again;
	char *body;

	accepted("{\"run_id\":\"r-1\",\"hardware_fingerprint\":\"hw-feedfacefeedface\",\"model\":"
		 "\"qwen2.5-7b\",\"precision\":\"Q4_K_M\",\"backend\":\"cuda\",\"runtime\":"
		 "\"llama.cpp\",\"runtime_version\":\"b5163\",\"settings\":{\"n_ctx\":8192,"
		 "\"tensor_split\":[0.5,0.5],\"flash_attn\":true},\"prompt_tokens\":512,"
		 "\"generated_tokens\":128,\"prefill_tokens_per_s\":7100,\"decode_tokens_per_s\":"
		 "118.9,\"peak_memory_bytes\":{\"gpu0\":5905580032,\"gpu1\":1024},\"measured_at\":"
		 "\"2025-04-24T13:58:50.123456+02:00\",\"source\":\"llama-bench\"}",
		 NULL, 1, &b);
	ck_assert_str_eq(b.format, "rigfit");
	ck_assert_str_eq(b.runs[0].run_id, "r-1");
	ck_assert_str_eq(b.runs[0].hardware_fingerprint, "hw-feedfacefeedface");
	ck_assert_str_eq(b.runs[0].model, "Qwen/Qwen2.5-7B");
	ck_assert_str_eq(b.runs[0].measured_at, "2025-04-24T11:58:50.123Z");
	ck_assert_str_eq(b.runs[0].source, "llama-bench");
	ck_assert_str_eq(b.runs[0].settings_json,
			 "{\"n_ctx\":8192,\"tensor_split\":[0.5,0.5],\"flash_attn\":true}");
	ck_assert_str_eq(b.runs[0].peak_memory_json, "{\"gpu0\":5905580032,\"gpu1\":1024}");
	ck_assert_int_eq(b.runs[0].prompt_tokens, 512);
	api_bench_batch_free(&b);

	/* Defaults: manual, this host, now, a derived run id that does not depend on now. */
	body = native("");
	accepted(body, NULL, 1, &b);
	ck_assert_str_eq(b.runs[0].source, "manual");
	ck_assert_str_eq(b.runs[0].hardware_fingerprint, host_fp);
	ck_assert_str_eq(b.runs[0].measured_at, "2026-01-01T00:00:00.000Z");
	env.now_ms += 3600 * 1000;
	accepted(body, NULL, 1, &again);
	ck_assert_str_ne(again.runs[0].measured_at, b.runs[0].measured_at);
	ck_assert_str_eq(again.runs[0].run_id, b.runs[0].run_id);
	api_bench_batch_free(&again);
	api_bench_batch_free(&b);
	free(body);
	/* Nulls for what GET writes as null are accepted. */
	body = native("\"prefill_tokens_per_s\":null,\"runtime_version\":null,"
		      "\"peak_memory_bytes\":null");
	accepted(body, NULL, 1, &b);
	api_bench_batch_free(&b);
	free(body);
}
END_TEST

START_TEST(test_native_hostile)
{
	static const struct {
		const char *extra, *code, *field;
	} bad[] = {
		{"\"colour\":\"red\"", "unknown_field", "colour"},
		{"\"decode_tokens_per_s\":-1", "invalid_value", "decode_tokens_per_s"},
		{"\"decode_tokens_per_s\":0", "invalid_value", "decode_tokens_per_s"},
		{"\"decode_tokens_per_s\":1e999", "invalid_value", "decode_tokens_per_s"},
		{"\"decode_tokens_per_s\":2e7", "invalid_value", "decode_tokens_per_s"},
		{"\"decode_tokens_per_s\":\"fast\"", "invalid_value", "decode_tokens_per_s"},
		{"\"prompt_tokens\":1.5", "invalid_value", "prompt_tokens"},
		{"\"prompt_tokens\":-1", "invalid_value", "prompt_tokens"},
		{"\"prompt_tokens\":1e12", "invalid_value", "prompt_tokens"},
		{"\"generated_tokens\":true", "invalid_value", "generated_tokens"},
		{"\"run_id\":\"has space\"", "invalid_value", "run_id"},
		{"\"run_id\":\"\"", "invalid_value", "run_id"},
		{"\"hardware_fingerprint\":\"a/b\"", "invalid_value", "hardware_fingerprint"},
		{"\"measured_at\":\"yesterday\"", "invalid_value", "measured_at"},
		{"\"measured_at\":\"2025-02-29T00:00:00Z\"", "invalid_value", "measured_at"},
		{"\"measured_at\":\"2025-04-24T11:58:50\"", "invalid_value", "measured_at"},
		{"\"measured_at\":\"1969-12-31T23:59:59Z\"", "invalid_value", "measured_at"},
		{"\"measured_at\":\"2026-01-03T00:00:00Z\"", "invalid_value", "measured_at"},
		{"\"source\":\"api\"", "invalid_value", "source"},
		{"\"settings\":[1]", "invalid_value", "settings"},
		{"\"settings\":{\"a\":{\"b\":1}}", "invalid_value", "settings"},
		{"\"settings\":{\"a\":[[1]]}", "invalid_value", "settings"},
		{"\"peak_memory_bytes\":{\"gpu0\":-1}", "invalid_value", "peak_memory_bytes"},
		{"\"peak_memory_bytes\":{\"gpu0\":1.5}", "invalid_value", "peak_memory_bytes"},
		{"\"peak_memory_bytes\":{\"gpu0\":1e20}", "invalid_value", "peak_memory_bytes"},
		{"\"peak_memory_bytes\":{}", "invalid_value", "peak_memory_bytes"},
		{"\"runtime_version\":\"b1\\u0001\"", "invalid_value", "runtime_version"},
	};
	char *body;
	char big[9000];
	size_t used;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		body = native(bad[i].extra);
		refused(body, NULL, 422, bad[i].code, bad[i].field);
		free(body);
	}
	/* Required fields, and at least one speed. */
	refused("{\"precision\":\"Q4_0\",\"backend\":\"cpu\",\"runtime\":\"x\","
		"\"decode_tokens_per_s\":1}",
		NULL, 422, "missing_field", "model");
	refused("{\"model\":\"m\",\"precision\":\"Q4_0\",\"backend\":\"cpu\",\"runtime\":\"x\"}",
		NULL, 422, "missing_field", "decode_tokens_per_s");
	/* A model name longer than the store's cap. */
	memset(big, 'a', 300);
	big[300] = '\0';
	{
		char b2[600];
		snprintf(b2, sizeof(b2),
			 "{\"model\":\"%.300s\",\"precision\":\"Q4_0\",\"backend\":\"cpu\","
			 "\"runtime\":\"x\",\"decode_tokens_per_s\":1}",
			 big);
		refused(b2, NULL, 422, "invalid_value", "model");
	}
	/* Settings past 8 KiB of JSON. */
	snprintf(big, sizeof(big), "\"settings\":{");
	used = strlen(big);
	for (int i = 0; i < 40; i++) /* 40 x 212 bytes: past 8 KiB, within big */
		used += (size_t)snprintf(big + used, sizeof(big) - used, "%s\"key%02d\":\"%0200d\"",
					 i ? "," : "", i, 0);
	snprintf(big + used, sizeof(big) - used, "}");
	body = malloc(strlen(big) + 512);
	snprintf(body, strlen(big) + 512,
		 "{%s,\"model\":\"m\",\"precision\":\"Q4_0\",\"backend\":\"cpu\",\"runtime\":"
		 "\"x\",\"decode_tokens_per_s\":1}",
		 big);
	refused(body, NULL, 422, "too_large", "settings");
	free(body);

	/* Not a body at all, or the wrong top level. */
	refused("{\"model\":", NULL, 400, "invalid_json", NULL);
	refused("{\"decode_tokens_per_s\":NaN}", NULL, 400, "invalid_json", NULL);
	refused("\"text\"", NULL, 422, "invalid_value", NULL);
	refused("42", NULL, 422, "invalid_value", NULL);
	refused("", NULL, 400, "invalid_json", NULL);
	/* Bad query overrides. */
	body = native("");
	refused(body, "hardware=not%20a%20fingerprint", 422, "invalid_value", "hardware");
	refused(body, "model=", 422, "invalid_value", "model");
	refused(body, "model=%01x", 422, "invalid_value", "model");
	free(body);
}
END_TEST

START_TEST(test_no_snapshot)
{
	struct api_bench_batch b;
	char *body = native("");

	env.snapshot = NULL;
	refused(body, NULL, 503, "unavailable", "hardware_fingerprint");
	accepted(body, "hardware=hw-1", 1, &b);
	ck_assert_str_eq(b.runs[0].hardware_fingerprint, "hw-1");
	api_bench_batch_free(&b);
	free(body);
}
END_TEST

START_TEST(test_time_parse)
{
	int64_t ms = -1;

	ck_assert_int_eq(api_bench_time_parse("1970-01-01T00:00:00Z", &ms), 0);
	ck_assert_int_eq(ms, 0);
	ck_assert_int_eq(api_bench_time_parse("2024-02-29T12:00:00.5Z", &ms), 0);
	ck_assert_int_eq(ms, 1709208000500LL);
	ck_assert_int_eq(api_bench_time_parse("2025-04-24T11:58:50z", &ms), 0);
	ck_assert_int_eq(ms, 1745495930000LL);
	ck_assert_int_eq(api_bench_time_parse("2025-04-24t06:58:50.999999-05:00", &ms), 0);
	ck_assert_int_eq(ms, 1745495930999LL);
	ck_assert_int_eq(api_bench_time_parse("9999-12-31T23:59:59.999Z", &ms), 0);
	ck_assert_int_eq(ms, 253402300799999LL);
	ck_assert_int_eq(api_bench_time_parse("2025-13-01T00:00:00Z", &ms), RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_bench_time_parse("2025-04-24T24:00:00Z", &ms), RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_bench_time_parse("2025-04-24 11:58:50Z", &ms), RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_bench_time_parse("2025-04-24T11:58:50.Z", &ms), RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_bench_time_parse("2025-04-24T11:58:50+0200", &ms), RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_bench_time_parse("1970-01-01T00:00:00+01:00", &ms),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_bench_time_parse(NULL, &ms), RF_E_INVALID_VALUE);
}
END_TEST

Suite *bench_input_suite(void)
{
	Suite *s = suite_create("bench_input");
	TCase *tc = tcase_create("input");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_llama_bench_fixture);
	tcase_add_test(tc, test_llama_bench_variants);
	tcase_add_test(tc, test_llama_bench_hostile);
	tcase_add_test(tc, test_too_many_runs);
	tcase_add_test(tc, test_llama_server);
	tcase_add_test(tc, test_native);
	tcase_add_test(tc, test_native_hostile);
	tcase_add_test(tc, test_no_snapshot);
	tcase_add_test(tc, test_time_parse);
	suite_add_tcase(s, tc);
	return s;
}
