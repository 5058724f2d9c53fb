/*
 * POST /api/validate without a socket, with the shipped profiles: a good config on an RTX 4090
 * is valid; every check code is triggered with its field and a suggestion that carries a
 * number, and applying the suggested n_ctx or n_gpu_layers makes the config valid; malformed
 * input is refused naming its field; `rigfit validate --config FILE` prints the route's JSON.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/device_json.h"
#include "api/model_json.h"
#include "api/validate.h"
#include "core/hw/device.h"
#include "core/fit/model.h"
#include "tests/server/harness.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

static struct device_table devices;
static struct model_catalog *models;

static void setup(void)
{
	t_profiles_load(&devices, &models, NULL);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, NULL);
}

/* Runs the handler on body; returns the status, the parsed answer in *out and, when raw is
 * not NULL, the body as it was (malloc'd). */
static int run_raw(const char *body, cJSON **out, char **raw)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .cat.quality = t_quality()};
	struct api_request req = {.method = API_POST,
				  .path = "/api/validate",
				  .query = "",
				  .body = body,
				  .body_len = strlen(body)};
	struct api_reply r = {0};
	int status;

	api_validate(&env, &req, &r);
	status = r.status;
	*out = cJSON_ParseWithLength(r.body, r.len);
	ck_assert_msg(*out != NULL, "not JSON: %.*s", (int)r.len, r.body);
	if (raw) {
		*raw = malloc(r.len + 1);
		ck_assert_ptr_nonnull(*raw);
		memcpy(*raw, r.body, r.len);
		(*raw)[r.len] = '\0';
	}
	api_reply_reset(&r);
	return status;
}

static int run(const char *body, cJSON **out)
{
	return run_raw(body, out, NULL);
}

/* Validates body (200 expected) and returns the answer. */
static cJSON *validate(const char *body)
{
	cJSON *j;
	int st = run(body, &j);
	char *s;

	if (st != 200) {
		s = cJSON_PrintUnformatted(j);
		ck_abort_msg("%s: status %d: %s", body, st, s);
	}
	ck_assert(cJSON_IsBool(cJSON_GetObjectItem(j, "is_valid")));
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(j, "errors")));
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(j, "warnings")));
	return j;
}

static const cJSON *find(const cJSON *j, const char *code, bool error)
{
	return t_check_find(j, code, error);
}

/* Asserts the check exists with field and a suggestion holding a digit; returns the first
 * integer of the suggestion after after (NULL: the first one). */
static long long expect(const cJSON *j, const char *code, bool error, const char *field,
			const char *after)
{
	const cJSON *k = find(j, code, error);
	const char *s, *p;
	char *dump;

	if (!k) {
		dump = cJSON_PrintUnformatted(j);
		ck_abort_msg("no %s %s in %s", error ? "error" : "warning", code, dump);
	}
	ck_assert_str_eq(cJSON_GetObjectItem(k, "field")->valuestring, field);
	ck_assert(strlen(cJSON_GetObjectItem(k, "message")->valuestring) > 10);
	s = cJSON_GetObjectItem(k, "suggestion")->valuestring;
	p = after ? strstr(s, after) : s;
	ck_assert_msg(p != NULL, "%s: suggestion '%s' lacks '%s'", code, s, after);
	p += after ? strlen(after) : 0;
	while (*p && (*p < '0' || *p > '9'))
		p++;
	ck_assert_msg(*p, "%s: suggestion '%s' has no number", code, s);
	return strtoll(p, NULL, 10);
}

static int n_checks(const cJSON *j, const char *which)
{
	return cJSON_GetArraySize(cJSON_GetObjectItem(j, which));
}

static bool valid(const cJSON *j)
{
	return cJSON_IsTrue(cJSON_GetObjectItem(j, "is_valid"));
}

#define GOOD_4090                                                                                  \
	"{\"backend\":\"cuda\",\"model\":{\"id\":\"Qwen/Qwen2.5-7B-Instruct\"},"                   \
	"\"settings\":{\"n_gpu_layers\":99,\"n_threads\":8,\"n_batch\":2048,\"n_ubatch\":512,"     \
	"\"n_ctx\":8192,\"n_parallel\":1,\"tensor_split\":[1],\"flash_attn\":true,"                \
	"\"cache_type_k\":\"f16\",\"cache_type_v\":\"f16\"},"                                      \
	"\"metadata\":{\"hardware_profile\":\"rtx-4090\",\"use_case\":\"general\","                \
	"\"precision\":\"Q4_K_M\"},\"hardware_profile\":\"NVIDIA GeForce RTX 4090\"}"

START_TEST(a_good_config_on_a_4090_is_valid)
{
	cJSON *j = validate(GOOD_4090), *est = cJSON_GetObjectItem(j, "estimate");

	ck_assert(valid(j));
	ck_assert_int_eq(n_checks(j, "errors"), 0);
	ck_assert_int_eq(n_checks(j, "warnings"), 0);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(est, "fits")));
	ck_assert_str_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(est, "settings"), "quant")->valuestring,
		"Q4_K_M");
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(est, "settings"), "n_ctx")->valueint, 8192);
	ck_assert_str_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(est, "hardware"), "profile_id")->valuestring,
		"rtx-4090");
	cJSON_Delete(j);

	/* The same settings flat, llama.cpp style, with the quant beside the model id. */
	j = validate("{\"model\":{\"id\":\"qwen2.5-7b\",\"quant\":\"Q4_K_M\"},\"n_ctx\":8192,"
		     "\"n_gpu_layers\":-1,\"flash_attn\":true,\"hardware_profile\":\"rtx-4090\"}");
	ck_assert(valid(j));
	ck_assert_int_eq(n_checks(j, "errors") + n_checks(j, "warnings"), 0);
	cJSON_Delete(j);
}
END_TEST

/* Replaces the first "key":NUMBER in body by value. */
static char *with(const char *body, const char *key, long long value)
{
	char pat[64], *out = malloc(strlen(body) + 64);
	const char *p, *end;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(body, pat);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(out);
	p += strlen(pat);
	end = p;
	while (*end == '-' || (*end >= '0' && *end <= '9'))
		end++;
	snprintf(out, strlen(body) + 64, "%.*s%lld%s", (int)(p - body), body, value, end);
	return out;
}

START_TEST(vram_exceeded_suggests_a_context_that_fits)
{
	/* Llama 3.1 8B at its full 128K context needs 16 GiB of f16 KV cache alone. */
	const char *body = "{\"backend\":\"cuda\",\"model\":{\"id\":\"llama-3.1-8b\"},"
			   "\"settings\":{\"n_ctx\":131072,\"n_gpu_layers\":-1,"
			   "\"flash_attn\":false},\"metadata\":{\"precision\":\"Q4_K_M\"},"
			   "\"hardware_profile\":\"rtx-3060-12gb\"}";
	cJSON *j = validate(body), *j2;
	long long n_ctx = expect(j, "vram_exceeded", true, "settings.n_ctx", "n_ctx to");
	char *fixed;

	ck_assert(!valid(j));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "estimate"), "fits")));
	/* 12 GiB less 5 GiB of weights and buffers leaves room for roughly 40-60K f16 cells. */
	ck_assert_msg(n_ctx >= 32768 && n_ctx < 131072 && n_ctx % 256 == 0, "n_ctx %lld", n_ctx);
	ck_assert_ptr_nonnull(strstr(
		cJSON_GetObjectItem(find(j, "vram_exceeded", true), "suggestion")->valuestring,
		"q8_0"));
	fixed = with(body, "n_ctx", n_ctx);
	j2 = validate(fixed);
	ck_assert_msg(valid(j2), "%s", fixed);
	ck_assert(find(j2, "vram_exceeded", true) == NULL);
	/* The largest that fits is tight: the 90% warning says how far to go down. */
	if (find(j2, "vram_over_90", false)) {
		long long safer = expect(j2, "vram_over_90", false, "settings.n_ctx", "n_ctx to");
		cJSON *j3;
		char *safe = with(body, "n_ctx", safer);
		ck_assert_int_lt(safer, n_ctx);
		j3 = validate(safe);
		ck_assert(valid(j3));
		ck_assert_int_eq(n_checks(j3, "warnings"), 0);
		cJSON_Delete(j3);
		free(safe);
	}
	cJSON_Delete(j2);
	free(fixed);
	cJSON_Delete(j);
}
END_TEST

START_TEST(vram_exceeded_suggests_partial_offload_when_no_context_fits)
{
	/* A 70B model (about 40 GiB at Q4_K_M) on a 4 GiB GTX 1650: only a few layers fit. */
	const char *body = "{\"model\":\"llama-3.1-70b\",\"quant\":\"Q4_K_M\",\"n_ctx\":4096,"
			   "\"n_gpu_layers\":-1,\"hardware_profile\":\"gtx-1650\"}";
	cJSON *j = validate(body), *j2;
	long long ngl = expect(j, "vram_exceeded", true, "n_gpu_layers", "n_gpu_layers to");
	char *fixed;

	ck_assert(!valid(j));
	ck_assert_msg(ngl >= 1 && ngl <= 8, "n_gpu_layers %lld", ngl);
	fixed = with(body, "n_gpu_layers", ngl);
	j2 = validate(fixed);
	ck_assert_msg(valid(j2), "%s", fixed);
	cJSON_Delete(j2);
	free(fixed);
	cJSON_Delete(j);
}
END_TEST

START_TEST(ram_exceeded_on_a_cpu_only_machine)
{
	/* 16 GiB of RAM and no GPU: a 70B model does not fit at any quant. In 32 GiB the planner
	 * chooses a smaller one (a 2- or 3-bit class: IQ2_M, Q2_K, IQ3_XXS), leaving a tenth of
	 * the host's budget free, and its setup validates. */
	const char *small = "{\"model\":\"llama-3.1-70b\",\"quant\":\"Q4_K_M\",\"n_ctx\":4096,"
			    "\"hardware\":{\"gpus\":[],\"memory\":{\"total_bytes\":17179869184}}}";
	const char *mid = "{\"model\":\"llama-3.1-70b\",\"quant\":\"Q4_K_M\",\"n_ctx\":4096,"
			  "\"hardware\":{\"gpus\":[],\"memory\":{\"total_bytes\":34359738368}}}";
	cJSON *j = validate(small);

	expect(j, "ram_exceeded", true, "quant", NULL);
	ck_assert(!valid(j));
	ck_assert(find(j, "vram_exceeded", true) == NULL);
	cJSON_Delete(j);
	j = validate(mid);
	expect(j, "ram_exceeded", true, "quant", NULL);
	{
		const cJSON *set = cJSON_GetObjectItem(j, "suggested_settings");
		const char *q = cJSON_GetObjectItem(set, "quant")->valuestring;
		char body[768], *s = cJSON_PrintUnformatted(set);
		cJSON *fixed;
		/* The suggestion names the planner's quant, smaller than Q4_K_M. */
		ck_assert_ptr_nonnull(
			strstr(cJSON_GetObjectItem(find(j, "ram_exceeded", true), "suggestion")
				       ->valuestring,
			       q));
		ck_assert_msg(strcmp(q, "Q4_K_M") != 0 &&
				      (q[1] == '2' || q[1] == '3' || q[2] == '2' || q[2] == '3'),
			      "quant %s", q);
		/* Applied flat, quant beside the model. */
		s[strlen(s) - 1] = '\0';
		snprintf(body, sizeof(body),
			 "{\"model\":\"llama-3.1-70b\",%s,\"hardware\":{\"gpus\":[],"
			 "\"memory\":{\"total_bytes\":34359738368}}}",
			 s + 1);
		fixed = validate(body);
		ck_assert_msg(valid(fixed), "%s", body);
		cJSON_Delete(fixed);
		free(s);
	}
	cJSON_Delete(j);
}
END_TEST

/* use_mmap reaches the estimate: a Q4_0 model on an AVX2 host holds the mapped file and the
 * repacked copy with mmap, only the copy without; a setting of the wrong type names itself. */
#define MMAP_BODY                                                                                  \
	"{\"model\":\"llama-3.1-8b\",\"metadata\":{\"precision\":\"Q4_0\"},"                       \
	"\"settings\":{\"n_ctx\":4096,\"n_gpu_layers\":0%s},\"hardware\":{\"gpus\":[],"            \
	"\"cpu\":{\"isa\":[\"avx2\"]},\"memory\":{\"total_bytes\":34359738368}}}"

START_TEST(use_mmap_reaches_the_estimate)
{
	char body[512];
	cJSON *on, *off, *j;
	double w_on, w_off;

	snprintf(body, sizeof(body), MMAP_BODY, "");
	on = validate(body);
	snprintf(body, sizeof(body), MMAP_BODY, ",\"use_mmap\":false,\"swa_full\":true");
	off = validate(body);
	w_on = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(on, "estimate"),
						       "memory"),
				   "weights_bytes")
		       ->valuedouble;
	w_off = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(off, "estimate"),
							"memory"),
				    "weights_bytes")
			->valuedouble;
	/* Nearly every weight of a Q4_0 file is Q4_0 and repacked: close to twice the file. */
	ck_assert_msg(w_on > 1.7 * w_off && w_on < 2.0 * w_off, "%.0f vs %.0f", w_on, w_off);
	cJSON_Delete(on);
	cJSON_Delete(off);
	snprintf(body, sizeof(body), MMAP_BODY, ",\"use_mmap\":\"no\"");
	ck_assert_int_eq(run(body, &j), 422);
	{
		char *text = cJSON_PrintUnformatted(j);
		ck_assert_ptr_nonnull(strstr(text, "use_mmap"));
		free(text);
	}
	cJSON_Delete(j);
}
END_TEST

START_TEST(settings_checks_name_their_fields)
{
	const char *hybrid = "\"hardware\":{\"cpu\":{\"physical_cores\":16,\"logical_cores\":24,"
			     "\"performance_cores\":8,\"efficiency_cores\":8},"
			     "\"gpus\":[{\"name\":\"NVIDIA GeForce RTX 4090\"}],"
			     "\"memory\":{\"total_bytes\":68719476736}}";
	char body[1024];
	cJSON *j;

	/* threads, ubatch over batch, batch over ctx, kv quant without flash attention. */
	snprintf(body, sizeof(body),
		 "{\"backend\":\"cuda\",\"model\":{\"id\":\"llama-3-8b\"},\"settings\":{"
		 "\"n_threads\":16,\"n_batch\":256,\"n_ubatch\":512,\"n_ctx\":128,"
		 "\"cache_type_k\":\"q8_0\",\"cache_type_v\":\"q8_0\",\"flash_attn\":false},%s}",
		 hybrid);
	j = validate(body);
	ck_assert(!valid(j));
	ck_assert_int_eq(
		expect(j, "threads_over_physical", false, "settings.n_threads", "n_threads"), 8);
	ck_assert_int_eq(expect(j, "ubatch_over_batch", true, "settings.n_ubatch", "n_ubatch to"),
			 256);
	ck_assert_int_eq(expect(j, "batch_over_ctx", false, "settings.n_batch", "n_batch to"), 128);
	ck_assert_ptr_nonnull(find(j, "kv_quant_needs_flash_attn", true));
	ck_assert_str_eq(cJSON_GetObjectItem(find(j, "kv_quant_needs_flash_attn", true), "field")
				 ->valuestring,
			 "settings.cache_type_v");
	ck_assert_ptr_nonnull(
		strstr(cJSON_GetObjectItem(find(j, "kv_quant_needs_flash_attn", true), "suggestion")
			       ->valuestring,
		       "flash_attn true"));
	ck_assert_int_eq(n_checks(j, "errors"), 2);
	cJSON_Delete(j);

	/* The same, fixed as suggested: valid and quiet. */
	snprintf(body, sizeof(body),
		 "{\"backend\":\"cuda\",\"model\":{\"id\":\"llama-3-8b\"},\"settings\":{"
		 "\"n_threads\":8,\"n_batch\":128,\"n_ubatch\":128,\"n_ctx\":128,"
		 "\"cache_type_k\":\"q8_0\",\"cache_type_v\":\"q8_0\",\"flash_attn\":true},%s}",
		 hybrid);
	j = validate(body);
	ck_assert(valid(j));
	ck_assert_int_eq(n_checks(j, "warnings"), 0);
	cJSON_Delete(j);
}
END_TEST

START_TEST(context_and_layers_beyond_the_model)
{
	cJSON *j;

	/* Llama 3 8B was trained on 8192 tokens: 16384 warns, 32768 is an error... */
	j = validate("{\"model\":\"llama-3-8b\",\"n_ctx\":16384,\"n_gpu_layers\":40,"
		     "\"flash_attn\":true,\"hardware_profile\":\"a100-sxm4-80gb\"}");
	ck_assert(valid(j));
	ck_assert_int_eq(expect(j, "ctx_over_model", false, "n_ctx", "n_ctx to"), 8192);
	ck_assert_int_eq(expect(j, "gpu_layers_over_model", false, "n_gpu_layers", "to"), 33);
	cJSON_Delete(j);
	j = validate("{\"model\":\"llama-3-8b\",\"n_ctx\":32768,\"n_parallel\":2,"
		     "\"flash_attn\":true,\"hardware_profile\":\"h100-sxm\"}");
	ck_assert(valid(j)); /* 16384 per sequence: twice the trained context at most */
	ck_assert_int_eq(expect(j, "ctx_over_model", false, "n_ctx", "n_ctx to"), 16384);
	cJSON_Delete(j);
	j = validate("{\"model\":\"llama-3-8b\",\"n_ctx\":32768,\"flash_attn\":true,"
		     "\"hardware_profile\":\"h100-sxm\"}");
	ck_assert(!valid(j));
	ck_assert_int_eq(expect(j, "ctx_over_model", true, "n_ctx", "n_ctx to"), 8192);
	cJSON_Delete(j);
	/* ...unless RoPE scaling stretches it, which runs; but Meta's card documents no scaling
	 * for Llama 3, so past 8192 is a warning that says so. -1 or 99 mean every layer. */
	j = validate("{\"model\":\"llama-3-8b\",\"n_ctx\":32768,\"rope_scaling\":\"yarn\","
		     "\"rope_scale\":4,\"n_gpu_layers\":99,\"flash_attn\":true,"
		     "\"hardware_profile\":\"h100-sxm\"}");
	ck_assert(valid(j));
	ck_assert_int_eq(n_checks(j, "warnings"), 1);
	ck_assert_int_eq(expect(j, "ctx_over_documented", false, "n_ctx", "n_ctx to"), 8192);
	cJSON_Delete(j);
}
END_TEST

START_TEST(backend_must_exist_here)
{
	cJSON *j;

	j = validate("{\"backend\":\"metal\",\"model\":\"qwen2.5-7b\",\"settings\":{"
		     "\"n_ctx\":4096},\"hardware_profile\":\"rtx-4090\"}");
	ck_assert(!valid(j));
	ck_assert_int_eq(expect(j, "backend_unavailable", true, "backend", "cuda"), 1);
	cJSON_Delete(j);
	j = validate("{\"backend\":\"cuda\",\"model\":\"qwen2.5-0.5b\",\"settings\":{"
		     "\"n_ctx\":4096},\"hardware\":{\"gpus\":[],\"memory\":{\"total_bytes\":"
		     "17179869184}}}");
	ck_assert_int_eq(expect(j, "backend_unavailable", true, "backend", "n_gpu_layers"), 0);
	cJSON_Delete(j);
	/* Metal on Apple silicon, cuda on a Jetson, cpu anywhere: fine. */
	j = validate("{\"backend\":\"metal\",\"model\":\"qwen2.5-7b\",\"settings\":{"
		     "\"n_ctx\":4096},\"hardware_profile\":\"apple-m3-max\"}");
	ck_assert(valid(j));
	ck_assert(find(j, "backend_unavailable", true) == NULL);
	cJSON_Delete(j);
	j = validate("{\"backend\":\"cpu\",\"model\":\"qwen2.5-0.5b\",\"settings\":{"
		     "\"n_ctx\":4096},\"hardware_profile\":\"rtx-4090\"}");
	ck_assert(valid(j));
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "estimate"),
								 "settings"),
					     "n_gpu_layers")
				 ->valueint,
			 0);
	cJSON_Delete(j);
}
END_TEST

START_TEST(laptops_and_jetsons_get_a_thermal_warning)
{
	cJSON *j;

	j = validate("{\"model\":\"qwen2.5-3b\",\"n_ctx\":4096,\"n_batch\":2048,"
		     "\"hardware_profile\":\"NVIDIA GeForce RTX 4060 Laptop GPU\"}");
	ck_assert(valid(j));
	ck_assert_int_eq(expect(j, "thermal_risk", false, "n_batch", "n_batch to"), 512);
	cJSON_Delete(j);
	j = validate("{\"backend\":\"cuda\",\"model\":\"qwen2.5-1.5b\",\"settings\":{"
		     "\"n_ctx\":4096,\"n_batch\":512,\"n_ubatch\":512,\"n_parallel\":2},"
		     "\"hardware_profile\":\"jetson-agx-orin-64gb\"}");
	ck_assert(valid(j));
	expect(j, "thermal_risk", false, "settings.n_parallel", NULL);
	cJSON_Delete(j);
	/* The desktop card with the same settings: no warning. */
	j = validate("{\"model\":\"qwen2.5-3b\",\"n_ctx\":4096,\"n_batch\":2048,"
		     "\"hardware_profile\":\"rtx-4060\"}");
	ck_assert(find(j, "thermal_risk", false) == NULL);
	cJSON_Delete(j);
}
END_TEST

START_TEST(an_unknown_model_is_a_check)
{
	cJSON *j = validate("{\"backend\":\"cuda\",\"model\":{\"id\":\"acme/llm-9000\"},"
			    "\"settings\":{\"n_ctx\":4096,\"n_batch\":8192,\"n_ubatch\":512},"
			    "\"hardware_profile\":\"rtx-4090\"}");

	ck_assert(!valid(j));
	expect(j, "unknown_model", true, "model.id", NULL);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "estimate")));
	/* The checks that need no estimate still run. */
	expect(j, "batch_over_ctx", false, "settings.n_batch", NULL);
	cJSON_Delete(j);
}
END_TEST

static void assert_error(const char *body, int status, const char *code, const char *field)
{
	cJSON *j, *e;
	int got = run(body, &j);

	e = cJSON_GetObjectItem(j, "error");
	ck_assert_msg(got == status, "%s: status %d", body, got);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "code")->valuestring, code);
	if (field)
		ck_assert_msg(cJSON_IsString(cJSON_GetObjectItem(e, "field")) &&
				      strcmp(cJSON_GetObjectItem(e, "field")->valuestring, field) ==
					      0,
			      "%s: want field %s", body, field);
	cJSON_Delete(j);
}

START_TEST(malformed_input_is_refused_naming_the_field)
{
	assert_error("{", 400, "invalid_json", NULL);
	assert_error("[]", 422, "invalid_value", NULL);
	assert_error("{\"settings\":{\"n_ctx\":4096}}", 422, "missing_field", "model");
	assert_error("{\"model\":\"qwen2.5-7b\",\"settings\":{\"n_ctx\":\"big\"}}", 422,
		     "invalid_value", "settings.n_ctx");
	assert_error("{\"model\":\"qwen2.5-7b\",\"settings\":{\"n_ctx\":4096.5}}", 422,
		     "invalid_value", "settings.n_ctx");
	assert_error("{\"model\":\"qwen2.5-7b\",\"settings\":{\"n_gpu_layers\":-2}}", 422,
		     "invalid_value", "settings.n_gpu_layers");
	assert_error("{\"model\":\"qwen2.5-7b\",\"settings\":{\"flash_attn\":1}}", 422,
		     "invalid_value", "settings.flash_attn");
	assert_error("{\"model\":\"qwen2.5-7b\",\"settings\":{\"cache_type_v\":\"q3\"}}", 422,
		     "invalid_value", "settings.cache_type_v");
	assert_error("{\"model\":\"qwen2.5-7b\",\"settings\":{\"tensor_split\":[1,-1]}}", 422,
		     "invalid_value", "settings.tensor_split");
	assert_error("{\"model\":\"qwen2.5-7b\",\"settings\":{\"n_kittens\":1}}", 422,
		     "unknown_field", "settings.n_kittens");
	assert_error("{\"model\":\"qwen2.5-7b\",\"settings\":[]}", 422, "invalid_value",
		     "settings");
	assert_error("{\"model\":\"qwen2.5-7b\",\"n_ctx\":4096,\"n_kittens\":1}", 422,
		     "unknown_field", "n_kittens");
	assert_error("{\"model\":\"qwen2.5-7b\",\"settings\":{},\"n_ctx\":4096}", 422,
		     "unknown_field", "n_ctx");
	assert_error("{\"model\":\"qwen2.5-7b\",\"backend\":\"opencl\"}", 422, "invalid_value",
		     "backend");
	assert_error("{\"model\":\"qwen2.5-7b\",\"metadata\":{\"precision\":7}}", 422,
		     "invalid_value", "metadata.precision");
	/* The estimator's own refusals pass through with its field. */
	assert_error("{\"model\":\"qwen2.5-7b\",\"quant\":\"Q9_X\",\"hardware_profile\":\"rtx-"
		     "4090\"}",
		     422, "invalid_value", "quant");
	assert_error("{\"model\":\"qwen2.5-7b\",\"hardware_profile\":\"no-such-gpu\"}", 422,
		     "invalid_value", "hardware_profile");
	assert_error("{\"model\":{\"id\":\"qwen2.5-7b\",\"colour\":1},\"hardware_profile\":"
		     "\"rtx-4090\"}",
		     422, "unknown_field", "model.colour");
	/* /api/config's own answer validates as it is written, runtime included (vLLM's in
	 * test_validate_vllm.c); other runtimes do not. */
	assert_error("{\"runtime\":\"tgi\",\"model\":\"qwen2.5-7b\",\"hardware_profile\":"
		     "\"rtx-4090\"}",
		     422, "invalid_value", "runtime");
}
END_TEST

START_TEST(the_cli_prints_the_routes_json)
{
	char *dir = t_mkdtemp(), *in = t_path(dir, "config.json");
	char *profiles = t_path(t_src_dir(), "profiles"), *out = NULL, *raw = NULL, *err = NULL;
	const char body[] = "{\"backend\":\"cuda\",\"model\":{\"id\":\"llama-3.1-8b\"},"
			    "\"settings\":{\"n_ctx\":131072,\"n_batch\":4096,\"n_ubatch\":8192},"
			    "\"hardware_profile\":\"rtx-3060-12gb\"}";
	const char *argv[] = {t_bin(), "validate", "--profiles", profiles, "--config", in, NULL};
	const char *bad = "{\"model\":\"x\",\"settings\":{\"n_ctx\":true}}";
	const char *bad_argv[] = {t_bin(), "validate", "--profiles", profiles, in, NULL};
	cJSON *j;

	ck_assert_int_eq(t_write_file(in, body, sizeof(body) - 1), 0);
	ck_assert_int_eq(run_raw(body, &j, &raw), 200);
	/* The config will not work: the answer is printed all the same, and the exit status
	 * says so (1). */
	ck_assert_int_eq(t_run(argv, &out, NULL, 60000), 1);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(strlen(out), strlen(raw) + 1);
	ck_assert(memcmp(out, raw, strlen(raw)) == 0);
	ck_assert(!valid(j));
	free(out);
	out = NULL;
	cJSON_Delete(j);
	/* A type error: one line on stderr naming the field, exit status 2. */
	ck_assert_int_eq(t_write_file(in, bad, strlen(bad)), 0);
	ck_assert_int_eq(t_run(bad_argv, &out, &err, 60000), 2);
	ck_assert_ptr_nonnull(err);
	ck_assert_ptr_nonnull(strstr(err, "settings.n_ctx"));
	free(out);
	free(err);
	free(raw);
	free(profiles);
	free(in);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(a_tensor_split_that_overloads_a_gpu_is_an_error)
{
	/* Llama 3.3 70B Q4_K_M (about 40 GiB) on two RTX 3090: by free memory it fits, 70:10
	 * puts seven eighths of the layers on the first card. */
	const char *lopsided =
		"{\"backend\":\"cuda\",\"model\":{\"id\":\"llama-3.3-70b\"},\"settings\":{"
		"\"n_ctx\":4096,\"n_gpu_layers\":-1,\"tensor_split\":[70,10]},\"metadata\":{"
		"\"precision\":\"Q4_K_M\"},\"hardware\":{\"gpus\":[{\"name\":\"RTX 3090\","
		"\"count\":2}]}}";
	const char *even =
		"{\"backend\":\"cuda\",\"model\":{\"id\":\"llama-3.3-70b\"},\"settings\":{"
		"\"n_ctx\":4096,\"n_gpu_layers\":-1,\"tensor_split\":[1,1]},\"metadata\":{"
		"\"precision\":\"Q4_K_M\"},\"hardware\":{\"gpus\":[{\"name\":\"RTX 3090\","
		"\"count\":2}]}}";
	cJSON *j = validate(lopsided), *j2 = validate(even);
	const cJSON *k = find(j, "tensor_split_overloads_gpu", true);

	ck_assert(!valid(j));
	ck_assert_ptr_nonnull(k);
	ck_assert_str_eq(cJSON_GetObjectItem(k, "field")->valuestring, "settings.tensor_split");
	ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(k, "suggestion")->valuestring, "10:10"));
	ck_assert(find(j, "vram_exceeded", true) == NULL);
	ck_assert_msg(valid(j2), "an even split of the same settings is valid");
	cJSON_Delete(j);
	cJSON_Delete(j2);
}
END_TEST

/* Qwen2.5-7B: 32768 trained positions, YaRN x4 from 32768 in its card (profiles/models.json
 * long_context). */
START_TEST(the_cards_yarn_is_suggested_and_checked)
{
	cJSON *j;
	const cJSON *f;

	j = validate("{\"model\":\"qwen2.5-7b\",\"n_ctx\":131072,\"flash_attn\":true,"
		     "\"hardware_profile\":\"h100-sxm\"}");
	ck_assert(!valid(j)); /* four times the trained window, unscaled */
	ck_assert_int_eq(expect(j, "ctx_over_model", true, "n_ctx", "n_ctx to"), 32768);
	f = find(j, "ctx_over_model", true);
	ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(f, "suggestion")->valuestring,
				     "rope_scale 4 and yarn_orig_ctx 32768"));
	cJSON_Delete(j);
	/* As the card sets it: clean. */
	j = validate("{\"model\":\"qwen2.5-7b\",\"n_ctx\":131072,\"flash_attn\":true,"
		     "\"rope_scaling\":\"yarn\",\"rope_scale\":4,\"yarn_orig_ctx\":32768,"
		     "\"hardware_profile\":\"h100-sxm\"}");
	ck_assert(valid(j));
	ck_assert_int_eq(n_checks(j, "warnings"), 0);
	cJSON_Delete(j);
	/* x2 from 32768 reaches 65536, not 131072. */
	j = validate("{\"model\":\"qwen2.5-7b\",\"n_ctx\":131072,\"flash_attn\":true,"
		     "\"rope_scaling\":\"yarn\",\"rope_scale\":2,\"yarn_orig_ctx\":32768,"
		     "\"hardware_profile\":\"h100-sxm\"}");
	ck_assert(!valid(j));
	ck_assert_ptr_nonnull(find(j, "ctx_over_model", true));
	cJSON_Delete(j);
	/* x8 runs, past the 131072 the card documents: a warning with that figure. */
	j = validate("{\"model\":\"qwen2.5-7b\",\"n_ctx\":262144,\"flash_attn\":true,"
		     "\"rope_scaling\":\"yarn\",\"rope_scale\":8,\"yarn_orig_ctx\":32768,"
		     "\"cache_type_k\":\"q8_0\",\"cache_type_v\":\"q8_0\","
		     "\"hardware_profile\":\"h100-sxm\"}");
	ck_assert_int_eq(expect(j, "ctx_over_documented", false, "n_ctx", "n_ctx to"), 131072);
	cJSON_Delete(j);
	/* vLLM refuses 131072 without --rope-scaling, and takes it with. */
	j = validate("{\"runtime\":\"vllm\",\"model\":\"Qwen/Qwen2.5-7B\",\"max_model_len\":"
		     "131072,\"hardware_profile\":\"h100-sxm\"}");
	ck_assert(!valid(j));
	f = find(j, "ctx_over_model", true);
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(f, "suggestion")->valuestring,
				     "rope_scaling yarn with rope_scale 4"));
	cJSON_Delete(j);
	j = validate("{\"runtime\":\"vllm\",\"model\":\"Qwen/Qwen2.5-7B\",\"max_model_len\":"
		     "131072,\"rope_scaling\":\"yarn\",\"rope_scale\":4,\"yarn_orig_ctx\":32768,"
		     "\"hardware_profile\":\"h100-sxm\"}");
	ck_assert(valid(j));
	ck_assert_ptr_null(find(j, "ctx_over_model", true));
	ck_assert_ptr_null(find(j, "ctx_over_model", false));
	cJSON_Delete(j);
}
END_TEST

Suite *validate_suite(void)
{
	Suite *s = suite_create("validate");
	TCase *tc = tcase_create("validate");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_good_config_on_a_4090_is_valid);
	tcase_add_test(tc, vram_exceeded_suggests_a_context_that_fits);
	tcase_add_test(tc, vram_exceeded_suggests_partial_offload_when_no_context_fits);
	tcase_add_test(tc, ram_exceeded_on_a_cpu_only_machine);
	tcase_add_test(tc, settings_checks_name_their_fields);
	tcase_add_test(tc, use_mmap_reaches_the_estimate);
	tcase_add_test(tc, context_and_layers_beyond_the_model);
	tcase_add_test(tc, the_cards_yarn_is_suggested_and_checked);
	tcase_add_test(tc, backend_must_exist_here);
	tcase_add_test(tc, laptops_and_jetsons_get_a_thermal_warning);
	tcase_add_test(tc, an_unknown_model_is_a_check);
	tcase_add_test(tc, malformed_input_is_refused_naming_the_field);
	tcase_add_test(tc, a_tensor_split_that_overloads_a_gpu_is_an_error);
	tcase_add_test(tc, the_cli_prints_the_routes_json);
	suite_add_tcase(s, tc);
	return s;
}
