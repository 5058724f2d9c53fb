/*
 * POST /api/config without a socket, with the shipped profiles: every config it returns is
 * asked again of /api/estimate and must fit with every GPU at most 90% full (validate's
 * vram_over_90 rule); the use cases order as they promise (long_context gives more context than
 * general, quality more bits than speed); the scenarios of a new user answer as an expert would
 * (a 70B for long context on a 12 GB card with 64 GB of RAM keeps Q4_K_M with partial offload;
 * Qwen3-30B-A3B on a 3060 keeps Q8_0 with its experts in RAM); a 405B on a 4 GB card is a 422
 * naming model; the vLLM twin and the CLI twin answer too.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/device_json.h"
#include "api/model_json.h"
#include "api/runtime_config.h"
#include "core/hw/device.h"
#include "core/fit/model.h"
#include "core/plan/plan_infer.h"
#include "core/fit/quant.h"
#include "tests/server/harness.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

static struct device_table devices;
static struct model_catalog *models;

/* 12 GiB RTX 3060, 64 GiB of RAM, 6 performance cores of 8. */
#define HW_3060                                                                                    \
	"\"hardware\":{\"gpus\":[{\"name\":\"RTX 3060\",\"vendor\":\"nvidia\","                    \
	"\"memory_total_bytes\":12884901888}],\"memory\":{\"total_bytes\":68719476736},"           \
	"\"cpu\":{\"physical_cores\":8,\"performance_cores\":6}}"
#define HW_4090                                                                                    \
	"\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\"}],\"memory\":{\"total_bytes\":"            \
	"68719476736},\"cpu\":{\"physical_cores\":16}}"
#define HW_2X4090                                                                                  \
	"\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\",\"count\":2}],\"memory\":{\"total_"        \
	"bytes\":68719476736},\"cpu\":{\"physical_cores\":16}}"

static void setup(void)
{
	t_profiles_load(&devices, &models, NULL);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, NULL);
}

/* Runs handler on body; returns the status, the parsed answer in *out and the raw body in
 * *raw (when raw is not NULL; free it). */
static int run_handler(api_handler_fn handler, const char *path, const char *body, cJSON **out,
		       char **raw)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .cat.quality = t_quality()};
	struct api_request req = {.method = API_POST,
				  .path = path,
				  .query = "",
				  .body = body,
				  .body_len = strlen(body)};
	struct api_reply r = {0};
	int status;

	handler(&env, &req, &r);
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
	return run_handler(api_config, "/api/config", body, out, NULL);
}

static const cJSON *get(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

	ck_assert_msg(v != NULL, "no %s", a);
	if (b) {
		v = cJSON_GetObjectItemCaseSensitive(v, b);
		ck_assert_msg(v != NULL, "no %s.%s", a, b);
	}
	return v;
}

static double num(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = get(o, a, b);

	ck_assert_msg(cJSON_IsNumber(v), "%s.%s is not a number", a, b ? b : "");
	return v->valuedouble;
}

static const char *str(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = get(o, a, b);

	ck_assert_msg(cJSON_IsString(v), "%s.%s is not a string", a, b ? b : "");
	return v->valuestring;
}

/* Asks /api/estimate about the returned settings on the same machine; asserts they fit. */
static void assert_refits(const char *request, const cJSON *cfg)
{
	cJSON *rq = cJSON_Parse(request), *q = cJSON_CreateObject(), *est;
	const cJSON *set = get(cfg, "settings", NULL);
	char *body;

	ck_assert_ptr_nonnull(rq);
	cJSON_AddItemToObject(q, "model", cJSON_Duplicate(get(rq, "model", NULL), true));
	if (cJSON_GetObjectItem(rq, "hardware"))
		cJSON_AddItemToObject(q, "hardware",
				      cJSON_Duplicate(get(rq, "hardware", NULL), true));
	if (cJSON_GetObjectItem(rq, "hardware_profile"))
		cJSON_AddStringToObject(q, "hardware_profile", str(rq, "hardware_profile", NULL));
	cJSON_AddStringToObject(q, "quant", str(cfg, "metadata", "precision"));
	cJSON_AddNumberToObject(q, "n_ctx", num(set, "n_ctx", NULL));
	cJSON_AddNumberToObject(q, "n_batch", num(set, "n_batch", NULL));
	cJSON_AddNumberToObject(q, "n_ubatch", num(set, "n_ubatch", NULL));
	cJSON_AddNumberToObject(q, "n_parallel", num(set, "n_parallel", NULL));
	cJSON_AddNumberToObject(q, "n_gpu_layers", num(set, "n_gpu_layers", NULL));
	cJSON_AddNumberToObject(q, "n_cpu_moe", num(set, "n_cpu_moe", NULL));
	cJSON_AddStringToObject(q, "kv_cache_type", str(set, "cache_type_k", NULL));
	cJSON_AddBoolToObject(q, "flash_attn", cJSON_IsTrue(get(set, "flash_attn", NULL)));
	body = cJSON_PrintUnformatted(q);
	ck_assert_int_eq(run_handler(api_estimate, "/api/estimate", body, &est, NULL), 200);
	ck_assert_msg(cJSON_IsTrue(get(est, "fits", NULL)), "does not fit again: %s", body);
	{
		const cJSON *d;
		cJSON_ArrayForEach(d, get(est, "memory", "per_device"))
			ck_assert_msg(num(d, "bytes", NULL) <= 0.9 * num(d, "budget_bytes", NULL),
				      "a GPU over 90%%: %s", body);
	}
	ck_assert_double_eq(num(est, "settings", "n_ctx"), num(set, "n_ctx", NULL));
	ck_assert_str_eq(str(set, "cache_type_k", NULL), str(set, "cache_type_v", NULL));
	ck_assert(num(set, "n_ubatch", NULL) <= num(set, "n_batch", NULL));
	cJSON_Delete(est);
	free(body);
	cJSON_Delete(q);
	cJSON_Delete(rq);
}

static void assert_has(const char *hay, const char *needle)
{
	ck_assert_msg(strstr(hay, needle) != NULL, "'%s' not in '%s'", needle, hay);
}

static double bpw(const char *quant)
{
	return rf_gtype_bpw(rf_ftype_default_type(rf_ftype_from_name(quant)));
}

START_TEST(general_on_a_3060_fits_and_the_command_says_so)
{
	const char *rq = "{\"model\":\"llama-3.1-8b\",\"hardware_profile\":\"rtx-3060-12gb\"}";
	cJSON *j;
	char want[64];

	ck_assert_int_eq(run(rq, &j), 200);
	assert_refits(rq, j);
	ck_assert_str_eq(str(j, "backend", NULL), "cuda");
	/* 12 GiB holds an 8B at Q8_0 (8.5 GiB) with 32k tokens of a q8_0 cache: nearly
	 * lossless, where the old ladder stopped at Q4_K_M and 8k. */
	ck_assert_str_eq(str(j, "metadata", "precision"), "Q8_0");
	ck_assert_str_eq(str(j, "metadata", "use_case"), "general");
	ck_assert_str_eq(str(j, "metadata", "hardware_profile"), "rtx-3060-12gb");
	ck_assert_double_eq(num(j, "settings", "n_ctx"), 32768);
	ck_assert_double_eq(num(j, "settings", "n_gpu_layers"), 33); /* 32 layers + output */
	ck_assert_double_eq(num(j, "settings", "n_cpu_moe"), 0);
	/* The profile has no cores: the threads the speed is estimated at, said so. */
	ck_assert_double_eq(num(j, "settings", "n_threads"), 8);
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "settings", "tensor_split")), 0);
	ck_assert(cJSON_IsTrue(get(j, "settings", "flash_attn")));
	ck_assert(num(j, "metadata", "expected_tokens_per_sec") > 20);
	ck_assert(num(j, "metadata", "estimated_vram_usage_gb") > 8 &&
		  num(j, "metadata", "estimated_vram_usage_gb") < 12.9);
	ck_assert(cJSON_IsTrue(get(get(j, "metadata", "estimate"), "fits", NULL)));
	assert_has(str(j, "objective", NULL), "general: the best quality");
	ck_assert_int_ge(cJSON_GetArraySize(get(j, "alternatives", NULL)), 2);
	/* The chat release, from the catalog's GGUF repository holding Q8_0. */
	assert_has(str(j, "command", NULL),
		   "llama-server -hf bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q8_0");
	assert_has(str(j, "command", NULL), " -ngl 33 -c 32768 -t 8 -b 2048 -ub 512 -fa on");
	snprintf(want, sizeof(want), "-c %.0f", num(j, "settings", "n_ctx"));
	assert_has(str(j, "command", NULL), want);
	{
		char *t = cJSON_PrintUnformatted(get(j, "assumptions", NULL));
		assert_has(t, "n_threads: 8, the threads the speed is estimated at");
		free(t);
	}
	cJSON_Delete(j);
}
END_TEST

START_TEST(long_context_gives_more_context_than_general)
{
	const char *gen = "{\"model\":\"llama-3.1-8b\",\"hardware_profile\":\"rtx-3060-12gb\"}";
	const char *lc = "{\"model\":\"llama-3.1-8b\",\"hardware_profile\":\"rtx-3060-12gb\","
			 "\"use_case\":\"long_context\"}";
	cJSON *g, *l;

	ck_assert_int_eq(run(gen, &g), 200);
	ck_assert_int_eq(run(lc, &l), 200);
	assert_refits(lc, l);
	ck_assert(num(l, "settings", "n_ctx") > 2 * num(g, "settings", "n_ctx"));
	ck_assert(num(l, "settings", "n_ctx") <= 131072);
	ck_assert_str_eq(str(l, "settings", "cache_type_k"), "q8_0");
	ck_assert(cJSON_IsTrue(get(l, "settings", "flash_attn")));
	assert_has(str(l, "command", NULL), "-ctk q8_0 -ctv q8_0");
	cJSON_Delete(g);
	cJSON_Delete(l);
}
END_TEST

START_TEST(quality_takes_more_bits_than_speed)
{
	static const char *const hws[] = {"rtx-4090", "rtx-3060-12gb", "apple-m3-max", "h100-sxm"};

	for (size_t i = 0; i < sizeof(hws) / sizeof(hws[0]); i++) {
		char q[256], s[256];
		cJSON *jq, *js;
		snprintf(q, sizeof(q),
			 "{\"model\":\"llama-3.1-8b\",\"hardware_profile\":\"%s\",\"use_case\":"
			 "\"quality\",\"runtime\":\"llama.cpp\"}",
			 hws[i]);
		snprintf(s, sizeof(s),
			 "{\"model\":\"llama-3.1-8b\",\"hardware_profile\":\"%s\",\"use_case\":"
			 "\"speed\",\"runtime\":\"llama.cpp\"}",
			 hws[i]);
		ck_assert_int_eq(run(q, &jq), 200);
		ck_assert_int_eq(run(s, &js), 200);
		assert_refits(q, jq);
		assert_refits(s, js);
		ck_assert_str_eq(str(jq, "metadata", "precision"), "Q8_0");
		ck_assert_str_eq(str(js, "metadata", "precision"), "Q4_K_M");
		ck_assert(bpw(str(jq, "metadata", "precision")) >
			  bpw(str(js, "metadata", "precision")));
		ck_assert_double_eq(num(js, "settings", "n_ctx"), 8192); /* speed's cap */
		ck_assert_double_eq(num(js, "settings", "n_batch"), 2048);
		ck_assert_double_eq(num(js, "settings", "n_ubatch"), 512);
		cJSON_Delete(jq);
		cJSON_Delete(js);
	}
}
END_TEST

START_TEST(quality_on_an_8_gb_card_keeps_q8_0_at_reading_speed)
{
	/* 8B at Q8_0 (8.5 GiB) does not fit 8 GiB with headroom. Quality is the best divergence
	 * at 4k tokens and reading speed: Q8_0 with a few layers in RAM still reads faster than
	 * 5.2 tok/s, so it beats Q6_K on the GPU; every alternative is worse in quality, or
	 * faster, or longer. */
	const char *rq = "{\"model\":\"llama-3.1-8b\",\"use_case\":\"quality\",\"hardware\":{"
			 "\"gpus\":[{\"name\":\"RTX 3070\"}],\"memory\":{\"total_bytes\":"
			 "17179869184},\"cpu\":{\"physical_cores\":8}}}";
	cJSON *j;
	const cJSON *a;

	ck_assert_int_eq(run(rq, &j), 200);
	assert_refits(rq, j);
	ck_assert_str_eq(str(j, "metadata", "precision"), "Q8_0");
	ck_assert(num(j, "settings", "n_gpu_layers") < 33);
	ck_assert(num(j, "settings", "n_ctx") >= 4096);
	ck_assert(num(j, "metadata", "expected_tokens_per_sec") >= PLAN_READING_TPS);
	cJSON_ArrayForEach(a, get(j, "alternatives", NULL))
	{
		const cJSON *e = get(a, "estimate", NULL);
		ck_assert(num(e, "kl_divergence", NULL) >=
				  num(j, "metadata", "kl_divergence") - 0.0011 ||
			  num(e, "decode_tokens_per_s", NULL) < PLAN_READING_TPS);
	}
	cJSON_Delete(j);
}
END_TEST

START_TEST(a_70b_for_long_context_on_a_3060_keeps_q4_k_m)
{
	/* The ladder answered Q2_K at 2048 tokens with a q4_0 cache. Q4_K_M with most layers in
	 * 64 GB of RAM holds the model's whole 128k context; nothing reaches 5 tok/s here, and
	 * the answer says so. */
	const char *rq = "{\"model\":\"llama-3.3-70b\",\"use_case\":\"long_context\"," HW_3060 "}";
	cJSON *j;
	const cJSON *d;
	int said = 0;

	ck_assert_int_eq(run(rq, &j), 200);
	assert_refits(rq, j);
	ck_assert(bpw(str(j, "metadata", "precision")) >= bpw("Q4_K_M"));
	ck_assert(num(j, "settings", "n_ctx") >= 16384);
	ck_assert(num(j, "settings", "n_gpu_layers") > 0 &&
		  num(j, "settings", "n_gpu_layers") < 80);
	ck_assert_str_ne(str(j, "settings", "cache_type_k"), "q4_0");
	ck_assert_double_eq(num(j, "settings", "n_threads"), 6); /* performance cores */
	assert_has(str(j, "command", NULL), "-t 6 ");
	ck_assert(cJSON_IsTrue(get(j, "metadata", "below_speed_floor")));
	cJSON_ArrayForEach(d, get(j, "downgrades", NULL))
		said += strncmp(d->valuestring, "speed:", 6) == 0;
	ck_assert_int_eq(said, 1);
	cJSON_Delete(j);
}
END_TEST

START_TEST(qwen3_30b_a3b_on_a_3060_keeps_its_experts_in_ram)
{
	/* 30B MoE, 3B active: the experts of most layers in 32 GB of RAM, attention and the
	 * cache on the GPU, at Q4_K_M or better and 16-32k, where the ladder gave Q2_K at 2048. */
	const char *rq =
		"{\"model\":\"qwen3-30b-a3b\",\"hardware\":{\"gpus\":[{\"name\":"
		"\"RTX 3060\",\"vendor\":\"nvidia\",\"memory_total_bytes\":12884901888}],"
		"\"memory\":{\"total_bytes\":34359738368},\"cpu\":{\"physical_cores\":8}}}";
	cJSON *j;
	char want[64];

	ck_assert_int_eq(run(rq, &j), 200);
	assert_refits(rq, j);
	ck_assert(bpw(str(j, "metadata", "precision")) >= bpw("Q4_K_M"));
	ck_assert(num(j, "settings", "n_ctx") >= 16384 && num(j, "settings", "n_ctx") <= 32768);
	ck_assert(num(j, "settings", "n_cpu_moe") > 0 && num(j, "settings", "n_cpu_moe") <= 48);
	ck_assert_double_eq(num(j, "settings", "n_gpu_layers"), 49);
	ck_assert(num(j, "metadata", "expected_tokens_per_sec") >= 5);
	snprintf(want, sizeof(want), "--n-cpu-moe %.0f", num(j, "settings", "n_cpu_moe"));
	assert_has(str(j, "command", NULL), want);
	cJSON_Delete(j);
}
END_TEST

/* gpt-oss-120b on a 24 GB card with 64 GB of RAM: the experts of most layers in RAM cross
 * PCIe once per micro-batch when prefilling. For long prompts (long_context) the plan takes
 * -ub 2048, moving a layer's experts to RAM for the larger compute buffer, where prefill of a
 * 4096-token prompt is about three times -ub 512's (measured on an RTX 3090: 380 and 1,113
 * tokens/s) and decode within the objective's 5%; the general use case keeps llama.cpp's
 * default 512, not the 256 that would hold one more layer's experts (240 tokens/s). Either
 * way the output layer stays on the GPU (-ngl 37 of 36 layers). */
START_TEST(long_prompts_take_a_larger_micro_batch_when_experts_cross_the_link)
{
#define OSS_120B_24GB(use_case)                                                                    \
	"{\"model\":\"gpt-oss-120b\",\"use_case\":\"" use_case "\",\"hardware\":"                  \
	"{\"gpus\":[{\"name\":\"RTX 4090\"}],\"memory\":{\"total_bytes\":68719476736}}}"
	cJSON *lc, *gen, *d;
	int said = 0;

	ck_assert_int_eq(run(OSS_120B_24GB("long_context"), &lc), 200);
	ck_assert_int_eq(run(OSS_120B_24GB("general"), &gen), 200);
	ck_assert(num(lc, "settings", "n_cpu_moe") > 0);
	ck_assert_double_eq(num(lc, "settings", "n_ubatch"), 2048);
	ck_assert(num(lc, "settings", "n_batch") >= 2048);
	assert_has(str(lc, "command", NULL), "-ub 2048");
	ck_assert_double_eq(num(gen, "settings", "n_ubatch"), 512);
	ck_assert_double_eq(num(gen, "settings", "n_gpu_layers"), 37);
	ck_assert_double_eq(num(lc, "settings", "n_gpu_layers"), 37);
	cJSON_ArrayForEach(d, get(lc, "downgrades", NULL))
	{
		double pp = 0, pp0 = 0, dec = 0, dec0 = 0;
		if (!strstr(d->valuestring, "fewer micro-batches"))
			continue;
		said++;
		ck_assert_int_eq(sscanf(strstr(d->valuestring, "prompt at "),
					"prompt at %lf tokens/s where %lf; decode %lf -> %lf", &pp,
					&pp0, &dec0, &dec),
				 4);
		ck_assert(pp >= 2 * pp0);
		ck_assert(dec * 1.05 >= dec0);
	}
	ck_assert_int_eq(said, 1);
	/* The estimate the answer carries is of the setup it writes. */
	ck_assert_double_eq(num(get(lc, "metadata", "estimate"), "settings", "n_ubatch"), 2048);
	cJSON_Delete(lc);
	cJSON_Delete(gen);
}
END_TEST

START_TEST(a_mac_keeps_the_plan_inside_its_working_set)
{
	/* A 24 GB M2: Metal's working set is 16 GiB. A 30B MoE does not spill its experts to a
	 * "CPU" that is the same RAM (which would fill 96% of it): it takes a smaller quant on
	 * the GPU, and the answer names the wired-limit setting with its figure. */
	const char *rq = "{\"model\":\"qwen3-30b-a3b\",\"hardware_profile\":\"apple-m2\"}";
	cJSON *j, *d;
	bool named = false;

	ck_assert_int_eq(run(rq, &j), 200);
	ck_assert_double_eq(num(j, "settings", "n_cpu_moe"), 0);
	ck_assert_double_eq(num(j, "settings", "n_gpu_layers"), 49);
	ck_assert(num(j, "metadata", "estimated_vram_usage_gb") <= 16.0 * 1.073741824 * 0.9);
	cJSON_ArrayForEach(d, get(j, "downgrades", NULL))
		named = named || strstr(d->valuestring, "iogpu.wired_limit_mb=18432") != NULL;
	ck_assert_msg(named, "the wired limit is not named");
	cJSON_Delete(j);
}
END_TEST

START_TEST(qwen2_5_72b_quality_on_two_3090s)
{
	/* 2 x 24 GB at 90%: Q4_K_M (44 GiB with its cache) would need a few layers in RAM and
	 * fall below reading speed, so the best that runs at reading speed is IQ4_XS on the
	 * GPUs, with more than the 2048 tokens and q4_0 V cache the ladder gave. */
	const char *rq = "{\"model\":\"qwen2.5-72b\",\"use_case\":\"quality\",\"runtime\":"
			 "\"llama.cpp\",\"hardware\":{"
			 "\"gpus\":[{\"name\":\"RTX 3090\",\"count\":2}],\"memory\":{"
			 "\"total_bytes\":68719476736},\"cpu\":{\"physical_cores\":16}}}";
	cJSON *j;

	ck_assert_int_eq(run(rq, &j), 200);
	assert_refits(rq, j);
	ck_assert(bpw(str(j, "metadata", "precision")) >= bpw("IQ4_XS"));
	ck_assert(num(j, "settings", "n_ctx") >= 8192);
	ck_assert_str_ne(str(j, "settings", "cache_type_v"), "q4_0");
	ck_assert_double_eq(num(j, "settings", "n_gpu_layers"), 81);
	ck_assert_int_eq(cJSON_GetArraySize(get(j, "settings", "tensor_split")), 2);
	ck_assert(num(j, "metadata", "expected_tokens_per_sec") >= PLAN_READING_TPS);
	cJSON_Delete(j);
}
END_TEST

START_TEST(a_405b_on_a_1650_does_not_fit)
{
	cJSON *j;
	const cJSON *e;

	ck_assert_int_eq(run("{\"model\":\"llama-3.1-405b\",\"hardware\":{\"gpus\":[{\"name\":"
			     "\"GTX 1650\"}],\"memory\":{\"total_bytes\":8589934592}}}",
			     &j),
			 422);
	e = get(j, "error", NULL);
	ck_assert_str_eq(str(e, "code", NULL), "invalid_value");
	ck_assert_str_eq(str(e, "field", NULL), "model");
	assert_has(str(e, "message", NULL), "GiB");
	assert_has(str(e, "message", NULL), "needs at least");
	cJSON_Delete(j);
}
END_TEST

START_TEST(two_gpus_get_a_tensor_split)
{
	const char *rq = "{\"model\":\"llama-3.1-8b\",\"runtime\":\"llama.cpp\"," HW_2X4090
			 ",\"n_parallel\":4}";
	cJSON *j;
	const cJSON *split;

	ck_assert_int_eq(run(rq, &j), 200);
	assert_refits(rq, j);
	split = get(j, "settings", "tensor_split");
	ck_assert_int_eq(cJSON_GetArraySize(split), 2);
	ck_assert_double_eq(cJSON_GetArrayItem(split, 0)->valuedouble +
				    cJSON_GetArrayItem(split, 1)->valuedouble,
			    32);
	ck_assert_double_eq(num(j, "settings", "n_threads"), 16);
	ck_assert_double_eq(num(j, "settings", "n_parallel"), 4);
	assert_has(str(j, "command", NULL), "--tensor-split ");
	assert_has(str(j, "command", NULL), " -np 4");
	cJSON_Delete(j);
}
END_TEST

/* On the CPU too, flash attention, as llama.cpp's default -fa auto runs it there: the command
 * says it and the attached estimate costs it. */
START_TEST(cpu_only_speed_takes_q4_k_m_and_flash_attention)
{
	const char *rq = "{\"model\":\"llama-3.2-3b\",\"use_case\":\"speed\",\"hardware\":{"
			 "\"cpu\":{\"physical_cores\":12},\"memory\":{\"total_bytes\":"
			 "17179869184}}}";
	cJSON *j;

	ck_assert_int_eq(run(rq, &j), 200);
	assert_refits(rq, j);
	ck_assert_str_eq(str(j, "backend", NULL), "cpu");
	/* Q4_0 is faster but below the Q4_K_M-class floor speed keeps. */
	ck_assert_str_eq(str(j, "metadata", "precision"), "Q4_K_M");
	ck_assert_double_eq(num(j, "settings", "n_gpu_layers"), 0);
	ck_assert_double_eq(num(j, "settings", "n_threads"), 12);
	ck_assert(cJSON_IsTrue(get(j, "settings", "flash_attn")));
	assert_has(str(j, "command", NULL), "-ngl 0 -c 8192 -t 12");
	assert_has(str(j, "command", NULL), " -fa on");
	cJSON_Delete(j);
}
END_TEST

START_TEST(a_fixed_context_is_not_halved)
{
	const char *rq = "{\"model\":\"llama-3.1-8b\",\"hardware_profile\":\"rtx-3060-12gb\","
			 "\"n_ctx\":65536}";
	cJSON *j;
	const cJSON *step;

	ck_assert_int_eq(run(rq, &j), 200);
	assert_refits(rq, j);
	ck_assert_double_eq(num(j, "settings", "n_ctx"), 65536);
	cJSON_ArrayForEach(step, get(j, "downgrades", NULL))
		ck_assert_msg(strncmp(step->valuestring, "n_ctx", 5) != 0, "%s", step->valuestring);
	cJSON_Delete(j);
}
END_TEST

START_TEST(vllm_on_two_4090s)
{
	cJSON *j;

	ck_assert_int_eq(run("{\"model\":\"llama-3.1-8b\",\"runtime\":\"vllm\"," HW_2X4090 "}", &j),
			 200);
	ck_assert_str_eq(str(j, "runtime", NULL), "vllm");
	ck_assert_double_eq(num(j, "settings", "tensor_parallel_size"), 2);
	ck_assert_double_eq(num(j, "settings", "gpu_memory_utilization"), 0.90);
	/* fp8 is as good as bf16 by the quality table and faster; general's 32k cap. */
	ck_assert_double_eq(num(j, "settings", "max_model_len"), 32768);
	ck_assert_str_eq(str(j, "settings", "quantization"), "fp8");
	ck_assert_str_eq(str(j, "settings", "kv_cache_dtype"), "auto");
	ck_assert_str_eq(str(j, "metadata", "precision"), "fp8");
	ck_assert(cJSON_IsTrue(get(get(j, "metadata", "estimate"), "fits", NULL)));
	assert_has(str(j, "command", NULL),
		   "vllm serve RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8 --tensor-parallel-size 2 "
		   "--max-model-len 32768 --gpu-memory-utilization 0.90");
	/* The checkpoint carries its quantization: no --quantization flag. */
	ck_assert_ptr_null(strstr(str(j, "command", NULL), "--quantization"));
	cJSON_Delete(j);
	/* A GGUF k-quant maps to AWQ, with the assumption said. */
	ck_assert_int_eq(run("{\"model\":\"llama-3.1-8b\",\"runtime\":\"vllm\",\"precision\":"
			     "\"Q4_K_M\"," HW_2X4090 "}",
			     &j),
			 200);
	ck_assert_str_eq(str(j, "settings", "quantization"), "awq");
	/* vLLM loads AWQ only from an AWQ checkpoint: the catalog's, named in the command. */
	assert_has(str(j, "command", NULL),
		   "vllm serve hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4 ");
	{
		const cJSON *a;
		int said = 0;
		cJSON_ArrayForEach(a, get(j, "assumptions", NULL))
			said += strstr(a->valuestring, "maps to awq") != NULL;
		ck_assert_int_eq(said, 1);
	}
	cJSON_Delete(j);
	/* No AWQ checkpoint of phi-4 in the catalog: AWQ is refused, never written. */
	ck_assert_int_eq(run("{\"model\":\"phi-4\",\"runtime\":\"vllm\",\"precision\":"
			     "\"Q4_K_M\"," HW_2X4090 "}",
			     &j),
			 422);
	ck_assert_str_eq(str(get(j, "error", NULL), "field", NULL), "precision");
	assert_has(str(get(j, "error", NULL), "message", NULL),
		   "no awq checkpoint of microsoft/phi-4");
	cJSON_Delete(j);
}
END_TEST

/* Qwen2.5-7B-Instruct's card: 32,768 positions, YaRN x4 to 131,072 (profiles/models.json
 * long_context, from huggingface.co/Qwen/Qwen2.5-7B-Instruct); Qwen3's: 40,960 in its
 * config, YaRN from 32,768, with factor 2.0 advised for 65,536. */
#define H100 "\"hardware_profile\":\"h100-sxm\""

START_TEST(a_long_context_sets_the_cards_yarn_and_only_then)
{
	const char *rq =
		"{\"model\":\"qwen2.5-7b\",\"n_ctx\":131072,\"runtime\":\"llama.cpp\"," H100 "}";
	cJSON *j;
	const char *cmd;

	ck_assert_int_eq(run(rq, &j), 200);
	cmd = str(j, "command", NULL);
	assert_has(cmd, "llama-server ");
	assert_has(cmd, " -c 131072 ");
	assert_has(cmd, " --rope-scaling yarn --rope-scale 4 --yarn-orig-ctx 32768");
	ck_assert_str_eq(str(j, "settings", "rope_scaling"), "yarn");
	ck_assert_double_eq(num(j, "settings", "rope_scale"), 4);
	ck_assert_double_eq(num(j, "settings", "yarn_orig_ctx"), 32768);
	ck_assert_double_eq(num(j, "settings", "n_ctx"), 131072);
	ck_assert(cJSON_IsTrue(get(get(j, "metadata", "estimate"), "fits", NULL)));
	cJSON_Delete(j);
	/* 16k is inside the trained window: no scaling, which can cost short texts. */
	ck_assert_int_eq(run("{\"model\":\"qwen2.5-7b\",\"n_ctx\":16384,\"runtime\":"
			     "\"llama.cpp\"," H100 "}",
			     &j),
			 200);
	ck_assert_double_eq(num(j, "settings", "n_ctx"), 16384);
	ck_assert_ptr_null(strstr(str(j, "command", NULL), "rope"));
	ck_assert_ptr_null(cJSON_GetObjectItem(get(j, "settings", NULL), "rope_scaling"));
	cJSON_Delete(j);
	/* Qwen3-8B at 50000: past its 40960, within x2 of 32768: the smaller factor. */
	ck_assert_int_eq(run("{\"model\":\"qwen3-8b\",\"n_ctx\":50000,\"runtime\":"
			     "\"llama.cpp\"," H100 "}",
			     &j),
			 200);
	assert_has(str(j, "command", NULL), " --rope-scale 2 --yarn-orig-ctx 32768");
	ck_assert_double_eq(num(j, "settings", "rope_scale"), 2);
	cJSON_Delete(j);
	/* vLLM: the model's rope_parameters overridden as vLLM's Context Extension docs write it
	 * (rope_theta restated, 1e6 in Qwen2.5-7B's config), max_model_len past the config's. */
	ck_assert_int_eq(run("{\"model\":\"qwen2.5-7b\",\"n_ctx\":131072,\"runtime\":"
			     "\"vllm\"," H100 "}",
			     &j),
			 200);
	cmd = str(j, "command", NULL);
	assert_has(cmd, " --max-model-len 131072 ");
	assert_has(cmd, " --hf-overrides '{\"rope_parameters\":{\"rope_type\":\"yarn\",\"factor\":"
			"4.0,\"original_max_position_embeddings\":32768,\"rope_theta\":1000000}}'");
	ck_assert_double_eq(num(j, "settings", "max_model_len"), 131072);
	ck_assert_double_eq(num(j, "settings", "rope_scale"), 4);
	ck_assert(cJSON_IsTrue(get(get(j, "metadata", "estimate"), "fits", NULL)));
	cJSON_Delete(j);
}
END_TEST

START_TEST(long_context_reaches_the_documented_window)
{
	cJSON *j;

	/* An H100 holds 131072 tokens of Qwen2.5-7B: long_context goes past the trained
	 * 32768 to the card's YaRN window, with the flags. */
	ck_assert_int_eq(run("{\"model\":\"qwen2.5-7b\",\"use_case\":\"long_context\","
			     "\"runtime\":\"llama.cpp\"," H100 "}",
			     &j),
			 200);
	ck_assert_double_eq(num(j, "settings", "n_ctx"), 131072);
	assert_has(str(j, "command", NULL), "--rope-scaling yarn --rope-scale 4");
	cJSON_Delete(j);
	/* Llama 3.1 reaches 131072 natively (llama3 rope in its config): no flag. */
	ck_assert_int_eq(run("{\"model\":\"llama-3.1-8b\",\"use_case\":\"long_context\","
			     "\"runtime\":\"llama.cpp\"," H100 "}",
			     &j),
			 200);
	ck_assert_double_eq(num(j, "settings", "n_ctx"), 131072);
	ck_assert_ptr_null(strstr(str(j, "command", NULL), "rope"));
	cJSON_Delete(j);
}
END_TEST

START_TEST(a_context_beyond_the_model_is_refused_with_its_maximum)
{
	cJSON *j;

	/* Llama 3.1 has 131072 positions and its card documents nothing beyond. */
	ck_assert_int_eq(run("{\"model\":\"llama-3.1-8b\",\"n_ctx\":200000," H100 "}", &j), 422);
	ck_assert_str_eq(str(get(j, "error", NULL), "field", NULL), "n_ctx");
	assert_has(str(get(j, "error", NULL), "message", NULL), "at most 131072");
	assert_has(str(get(j, "error", NULL), "message", NULL), "documents no rope scaling");
	cJSON_Delete(j);
	/* Gemma 2 at twice its 8192, nothing documented. */
	ck_assert_int_eq(run("{\"model\":\"gemma-2-9b\",\"n_ctx\":16384," H100 "}", &j), 422);
	assert_has(str(get(j, "error", NULL), "message", NULL), "at most 8192");
	cJSON_Delete(j);
	/* Past the card's YaRN window. */
	ck_assert_int_eq(run("{\"model\":\"qwen2.5-7b\",\"n_ctx\":140000," H100 "}", &j), 422);
	assert_has(str(get(j, "error", NULL), "message", NULL), "at most 131072");
	assert_has(str(get(j, "error", NULL), "message", NULL), "x4 from 32768");
	cJSON_Delete(j);
	/* Each sequence's share counts: 4 x 32768 is no long context. */
	ck_assert_int_eq(run("{\"model\":\"gemma-2-9b\",\"n_ctx\":32768,\"n_parallel\":4,"
			     "\"runtime\":\"llama.cpp\"," H100 "}",
			     &j),
			 200);
	ck_assert_ptr_null(strstr(str(j, "command", NULL), "rope"));
	cJSON_Delete(j);
}
END_TEST

START_TEST(llama_8b_general_on_a_4090_takes_q8_0_at_32k)
{
	/* The ladder answered Q4_K_M at 8k using 6 GB of 24. */
	const char *rq = "{\"model\":\"llama-3.1-8b\"," HW_4090 "}";
	cJSON *j;

	ck_assert_int_eq(run(rq, &j), 200);
	assert_refits(rq, j);
	ck_assert_str_eq(str(j, "metadata", "precision"), "Q8_0");
	ck_assert_double_eq(num(j, "settings", "n_ctx"), 32768);
	ck_assert_str_eq(str(j, "settings", "cache_type_k"), "f16");
	ck_assert_double_eq(num(j, "settings", "n_gpu_layers"), 33);
	ck_assert(num(j, "metadata", "estimated_vram_usage_gb") > 12);
	cJSON_Delete(j);
}
END_TEST

START_TEST(vllm_70b_on_one_h100)
{
	/* fp8 weights (66 GiB) in 90% of 80 GiB leave room for a long fp8 cache: the ladder
	 * answered --max-model-len 2048. */
	cJSON *j;

	ck_assert_int_eq(run("{\"model\":\"llama-3.3-70b\",\"runtime\":\"vllm\","
			     "\"hardware_profile\":\"h100-sxm\"}",
			     &j),
			 200);
	ck_assert_str_eq(str(j, "settings", "quantization"), "fp8");
	ck_assert(num(j, "settings", "max_model_len") >= 16384);
	ck_assert_double_eq(num(j, "settings", "tensor_parallel_size"), 1);
	ck_assert(cJSON_IsTrue(get(get(j, "metadata", "estimate"), "fits", NULL)));
	assert_has(str(j, "command", NULL),
		   "vllm serve RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic ");
	cJSON_Delete(j);
}
END_TEST

/* The runtime's verdict starts with the winner's name. */
static void assert_runtime(const cJSON *j, const char *rt, const char *verdict)
{
	ck_assert_str_eq(str(j, "runtime", NULL), rt);
	if (verdict)
		ck_assert_msg(strncmp(str(j, "runtime_choice", NULL), verdict, strlen(verdict)) ==
				      0,
			      "%s", str(j, "runtime_choice", NULL));
	else
		ck_assert(cJSON_IsNull(get(j, "runtime_choice", NULL)));
}

START_TEST(the_runtime_is_chosen_by_the_objective)
{
	cJSON *j;
	const cJSON *a;
	int alt_rt[2] = {0, 0};

	/* One user, one 4090: llama.cpp's Q8_0 decodes faster than vLLM's fp8 (94 against 85
	 * tokens/s: vLLM keeps the 16-bit head and embeddings), at equal quality. */
	ck_assert_int_eq(run("{\"model\":\"llama-3.1-8b\"," HW_4090 "}", &j), 200);
	assert_runtime(j, "llama.cpp", "llama.cpp: faster");
	assert_has(str(j, "runtime_choice", NULL), "vLLM's best, fp8");
	cJSON_Delete(j);
	/* A 70B on one H100: vLLM's fp8 kernels use the HBM better than llama.cpp's (35 against
	 * 22 tokens/s), with 32k of fp8 cache at --gpu-memory-utilization 0.95, said. Both decode
	 * at interactive speed, so context, the objective's next criterion, tells them apart. */
	ck_assert_int_eq(run("{\"model\":\"llama-3.3-70b\",\"hardware_profile\":\"h100-sxm\"}", &j),
			 200);
	assert_runtime(j, "vllm", "vLLM: more context, fp8 at 32768 tokens");
	ck_assert_str_eq(str(j, "settings", "quantization"), "fp8");
	ck_assert_double_eq(num(j, "settings", "max_model_len"), 32768);
	ck_assert_double_eq(num(j, "settings", "gpu_memory_utilization"), 0.95);
	ck_assert(num(j, "settings", "kv_cache_tokens") >= 32768);
	ck_assert(cJSON_IsTrue(get(get(j, "metadata", "estimate"), "fits", NULL)));
	ck_assert_str_eq(str(get(j, "metadata", "estimate"), "settings", "runtime"), "vllm");
	/* The planner's capacity is /api/estimate's for the same flags, token for token. */
	ck_assert_double_eq(num(j, "settings", "kv_cache_tokens"),
			    num(get(j, "metadata", "estimate"), "serving", "kv_cache_tokens"));
	ck_assert_str_eq(str(j, "command", NULL),
			 "vllm serve RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic "
			 "--tensor-parallel-size 1 --max-model-len 32768 "
			 "--gpu-memory-utilization 0.95 --kv-cache-dtype fp8");
	{
		int said = 0;
		cJSON_ArrayForEach(a, get(j, "downgrades", NULL)) said +=
			strncmp(a->valuestring, "gpu_memory_utilization 0.90 -> 0.95", 35) == 0;
		ck_assert_int_eq(said, 1);
	}
	cJSON_Delete(j);
	/* Four streams on two 4090s: vLLM's tensor parallelism reads each GPU's half of the
	 * weights at once; llama.cpp's layer split reads them one GPU after the other. */
	ck_assert_int_eq(run("{\"model\":\"llama-3.1-8b\"," HW_2X4090 ",\"n_parallel\":4}", &j),
			 200);
	assert_runtime(j, "vllm", "vLLM: faster");
	assert_has(str(j, "runtime_choice", NULL), "over all streams");
	ck_assert_double_eq(num(j, "settings", "tensor_parallel_size"), 2);
	ck_assert_double_eq(num(j, "settings", "max_num_seqs"), 4);
	ck_assert(num(j, "settings", "kv_cache_tokens") >= 4 * num(j, "settings", "max_model_len"));
	assert_has(str(j, "command", NULL), "--max-num-seqs 4");
	cJSON_ArrayForEach(a, get(j, "alternatives", NULL))
		alt_rt[strcmp(str(a, "runtime", NULL), "vllm") == 0]++;
	ck_assert_int_gt(alt_rt[0], 0); /* the front mixes the runtimes */
	cJSON_Delete(j);
	/* No vLLM on Apple silicon, nor when the request names llama.cpp. */
	ck_assert_int_eq(run("{\"model\":\"llama-3.1-8b\",\"hardware_profile\":\"apple-m1\"}", &j),
			 200);
	assert_runtime(j, "llama.cpp", NULL);
	cJSON_Delete(j);
	ck_assert_int_eq(run("{\"model\":\"llama-3.3-70b\",\"hardware_profile\":\"h100-sxm\","
			     "\"runtime\":\"llama.cpp\"}",
			     &j),
			 200);
	assert_runtime(j, "llama.cpp", NULL);
	cJSON_Delete(j);
}
END_TEST

static void assert_error(const char *body, const char *code, const char *field)
{
	cJSON *j;
	int st = run(body, &j);
	const cJSON *e = get(j, "error", NULL);

	ck_assert_msg(st == 422, "%s: status %d", body, st);
	ck_assert_str_eq(str(e, "code", NULL), code);
	ck_assert_msg(cJSON_IsString(cJSON_GetObjectItem(e, "field")) &&
			      strcmp(str(e, "field", NULL), field) == 0,
		      "%s: want field %s", body, field);
	cJSON_Delete(j);
}

START_TEST(bad_input_names_the_field)
{
	assert_error("{\"model\":\"llama-3.1-8b\",\"use_case\":\"fastest\"}", "invalid_value",
		     "use_case");
	assert_error("{\"model\":\"llama-3.1-8b\",\"precision\":\"Q9_X\",\"hardware_profile\":"
		     "\"rtx-4090\"}",
		     "invalid_value", "precision");
	assert_error("{\"model\":\"llama-3.1-8b\",\"bogus\":1}", "unknown_field", "bogus");
	assert_error("{\"use_case\":\"general\"}", "missing_field", "model");
	assert_error("{\"model\":\"llama-3.1-8b\",\"runtime\":\"tgi\"}", "invalid_value",
		     "runtime");
	/* vLLM alone on GPUs too small for it: a refusal that says why, with no "-0.0 GiB". */
	{
		cJSON *j;
		const char *msg;
		ck_assert_int_eq(run("{\"model\":\"gpt-oss-120b\",\"runtime\":\"vllm\","
				     "\"hardware\":{\"gpus\":[{\"name\":\"RTX 3090\"},{\"name\":"
				     "\"RTX 3090\"}]}}",
				     &j),
				 422);
		msg = str(get(j, "error", NULL), "message", NULL);
		ck_assert_msg(strstr(msg, "no vLLM configuration fits") && !strstr(msg, "-0.0"),
			      "%s", msg);
		cJSON_Delete(j);
	}
	/* Beyond the 131072 positions Llama 3.1 was trained for: no silent -c 200000. */
	assert_error("{\"model\":\"llama-3.1-8b\",\"n_ctx\":200000,\"hardware_profile\":"
		     "\"h100-sxm\"}",
		     "invalid_value", "n_ctx");
	assert_error("{\"model\":\"llama-3.1-8b\",\"n_ctx\":0,\"hardware_profile\":\"rtx-4090\"}",
		     "invalid_value", "n_ctx");
	assert_error(
		"{\"model\":\"llama-3.1-8b\",\"n_ctx\":8,\"n_parallel\":16,\"hardware_profile\":"
		"\"rtx-4090\"}",
		"invalid_value", "n_ctx");
	assert_error("{\"model\":\"llama-3.1-8b\",\"hardware_profile\":\"no-such-gpu\"}",
		     "invalid_value", "hardware_profile");
	assert_error("{\"model\":\"no-such-model\",\"hardware_profile\":\"rtx-4090\"}",
		     "invalid_value", "model.id");
	assert_error("{\"model\":\"llama-3.1-8b\",\"runtime\":\"vllm\",\"hardware_profile\":"
		     "\"apple-m1\"}",
		     "invalid_value", "runtime");
}
END_TEST

START_TEST(the_cli_prints_the_route_answer)
{
	const char body[] = "{\"model\":\"llama-3.1-8b\",\"hardware_profile\":\"rtx-4090\","
			    "\"use_case\":\"long_context\"}";
	char *dir = t_mkdtemp(), *in = t_path(dir, "req.json"),
	     *profiles = t_path(t_src_dir(), "profiles"), *out = NULL, *raw = NULL;
	const char *argv[] = {t_bin(), "config", "--profiles", profiles, in, NULL};
	cJSON *j;

	ck_assert_int_eq(t_write_file(in, body, sizeof(body) - 1), 0);
	ck_assert_int_eq(run_handler(api_config, "/api/config", body, &j, &raw), 200);
	ck_assert_int_eq(t_run(argv, &out, NULL, 60000), 0);
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(strlen(out), strlen(raw) + 1);
	ck_assert(memcmp(out, raw, strlen(raw)) == 0);
	cJSON_Delete(j);
	free(out);
	free(raw);
	free(in);
	free(profiles);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* use_mmap false is llama.cpp's --load-mode none (older builds: --no-mmap): the planner
 * evaluates it so (only the repacked copy held on a CPU that repacks), the command carries it
 * and the settings say it;
 * vLLM, which loads its own weights, refuses it. */
START_TEST(no_mmap_is_planned_and_written)
{
	cJSON *a;
	const char *cmd;

	ck_assert_int_eq(run("{\"model\":\"qwen2.5-7b\",\"use_mmap\":false,"
			     "\"hardware_profile\":\"rtx-3060-12gb\"}",
			     &a),
			 200);
	cmd = cJSON_GetStringValue(cJSON_GetObjectItem(a, "command"));
	ck_assert_msg(cmd && strstr(cmd, " --load-mode none"), "%s", cmd ? cmd : "(none)");
	ck_assert(
		cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "settings"), "use_mmap")));
	cJSON_Delete(a);
	ck_assert_int_eq(
		run("{\"model\":\"qwen2.5-7b\",\"hardware_profile\":\"rtx-3060-12gb\"}", &a), 200);
	cmd = cJSON_GetStringValue(cJSON_GetObjectItem(a, "command"));
	ck_assert_ptr_null(strstr(cmd, "--load-mode"));
	cJSON_Delete(a);
	ck_assert_int_eq(run("{\"model\":\"qwen2.5-7b\",\"use_mmap\":false,\"runtime\":\"vllm\","
			     "\"hardware_profile\":\"rtx-4090\"}",
			     &a),
			 422);
	ck_assert_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "error"), "field")),
		"use_mmap");
	cJSON_Delete(a);
}
END_TEST

/* A coder alias is another release than the catalog entry it is counted with: served by its
 * own name, never with the base model's GGUF or AWQ repositories. */
START_TEST(a_coder_alias_is_served_by_its_own_name)
{
	cJSON *j;
	const cJSON *a;

	ck_assert_int_eq(run("{\"model\":\"qwen2.5-coder-7b\",\"runtime\":\"vllm\"," HW_2X4090 "}",
			     &j),
			 200);
	assert_has(str(j, "command", NULL), "vllm serve Qwen/Qwen2.5-Coder-7B-Instruct ");
	cJSON_ArrayForEach(a, get(j, "alternatives", NULL))
	{
		ck_assert_ptr_null(strstr(str(a, "command", NULL), "Qwen/Qwen2.5-7B"));
		ck_assert_str_ne(str(a, "precision", NULL), "awq");
	}
	cJSON_Delete(j);
	ck_assert_int_eq(
		run("{\"model\":\"qwen2.5-coder-7b\",\"runtime\":\"llama.cpp\"," HW_2X4090 "}", &j),
		200);
	/* From the coder's own repositories (artifacts.releases). */
	assert_has(str(j, "command", NULL),
		   "llama-server -hf bartowski/Qwen2.5-Coder-7B-Instruct-GGUF:");
	cJSON_Delete(j);
	/* A release the catalog lists no GGUF of (a base release): the file the user makes, and
	 * how. */
	ck_assert_int_eq(
		run("{\"model\":\"Qwen/Qwen3-8B-Base\",\"runtime\":\"llama.cpp\"," HW_2X4090 "}",
		    &j),
		200);
	assert_has(str(j, "command", NULL), "llama-server -m /path/to/Qwen3-8B-Base-");
	{
		char *t = cJSON_PrintUnformatted(get(j, "assumptions", NULL));
		assert_has(t, "convert_hf_to_gguf.py");
		assert_has(t, "llama-quantize");
		free(t);
	}
	cJSON_Delete(j);
	/* The entry's own names keep its artifacts. */
	ck_assert_int_eq(
		run("{\"model\":\"Qwen/Qwen2.5-7B-Instruct\",\"runtime\":\"llama.cpp\"," HW_2X4090
		    "}",
		    &j),
		200);
	assert_has(str(j, "command", NULL), "llama-server -hf Qwen/Qwen2.5-7B-Instruct-GGUF:");
	cJSON_Delete(j);
}
END_TEST

/* An Ollama tag or short name that spells one release of an entry is served that release:
 * "mistral-small3.2:24b" is the 2506 Instruct release, which the catalog counts with 3.1 (it
 * used to serve 3.1's); 3.1's own tag keeps 3.1, and a short name of the entry itself
 * ("qwen3-30b-a3b") is not taken for a later release that begins with it (2507). */
START_TEST(a_short_name_is_served_the_release_it_spells)
{
	static const struct {
		const char *name, *command;
	} cases[] = {
		{"mistral-small3.2:24b",
		 "llama-server -hf bartowski/mistralai_Mistral-Small-3.2-24B-Instruct-2506-GGUF:"},
		{"mistral-small-3.2",
		 "llama-server -hf bartowski/mistralai_Mistral-Small-3.2-24B-Instruct-2506-GGUF:"},
		{"mistral-small3.1:24b",
		 "llama-server -hf bartowski/mistralai_Mistral-Small-3.1-24B-Instruct-2503-GGUF:"},
	};
	char body[512];
	cJSON *j;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(body, sizeof(body), "{\"model\":\"%s\",\"runtime\":\"llama.cpp\",%s}",
			 cases[i].name, HW_2X4090);
		ck_assert_int_eq(run(body, &j), 200);
		assert_has(str(j, "command", NULL), cases[i].command);
		cJSON_Delete(j);
	}
	snprintf(body, sizeof(body), "{\"model\":\"qwen3-30b-a3b\",\"runtime\":\"vllm\",%s}",
		 HW_2X4090);
	ck_assert_int_eq(run(body, &j), 200);
	ck_assert_ptr_null(strstr(str(j, "command", NULL), "2507"));
	cJSON_Delete(j);
}
END_TEST

/* llama.cpp has no Llama 3.2 Vision (mllama) architecture: runtime llama.cpp is refused with
 * the reason, no runtime on CUDA GPUs plans vLLM, and a Mac (no vLLM either) is refused. */
START_TEST(llama_3_2_vision_is_never_given_to_llama_cpp)
{
	cJSON *j;

	ck_assert_int_eq(
		run("{\"model\":\"llama3.2-vision:11b\",\"runtime\":\"llama.cpp\"," HW_2X4090 "}",
		    &j),
		422);
	ck_assert_str_eq(str(get(j, "error", NULL), "field", NULL), "runtime");
	assert_has(str(get(j, "error", NULL), "message", NULL), "mllama");
	cJSON_Delete(j);
	ck_assert_int_eq(run("{\"model\":\"llama3.2-vision:11b\"," HW_2X4090 "}", &j), 200);
	assert_has(str(j, "command", NULL), "vllm serve meta-llama/Llama-3.2-11B-Vision-Instruct ");
	cJSON_Delete(j);
	ck_assert_int_eq(run("{\"model\":\"llama3.2-vision:11b\",\"hardware\":{\"gpus\":[{\"name\":"
			     "\"Apple M2 Max\"}],\"memory\":{\"total_bytes\":68719476736}}}",
			     &j),
			 422);
	ck_assert_str_eq(str(get(j, "error", NULL), "field", NULL), "runtime");
	cJSON_Delete(j);
}
END_TEST

Suite *runtime_config_suite(void)
{
	Suite *s = suite_create("runtime_config");
	TCase *tc = tcase_create("config");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, general_on_a_3060_fits_and_the_command_says_so);
	tcase_add_test(tc, long_context_gives_more_context_than_general);
	tcase_add_test(tc, quality_takes_more_bits_than_speed);
	tcase_add_test(tc, quality_on_an_8_gb_card_keeps_q8_0_at_reading_speed);
	tcase_add_test(tc, a_70b_for_long_context_on_a_3060_keeps_q4_k_m);
	tcase_add_test(tc, qwen3_30b_a3b_on_a_3060_keeps_its_experts_in_ram);
	tcase_add_test(tc, long_prompts_take_a_larger_micro_batch_when_experts_cross_the_link);
	tcase_add_test(tc, qwen2_5_72b_quality_on_two_3090s);
	tcase_add_test(tc, llama_8b_general_on_a_4090_takes_q8_0_at_32k);
	tcase_add_test(tc, a_long_context_sets_the_cards_yarn_and_only_then);
	tcase_add_test(tc, long_context_reaches_the_documented_window);
	tcase_add_test(tc, a_context_beyond_the_model_is_refused_with_its_maximum);
	tcase_add_test(tc, vllm_70b_on_one_h100);
	tcase_add_test(tc, a_405b_on_a_1650_does_not_fit);
	tcase_add_test(tc, two_gpus_get_a_tensor_split);
	tcase_add_test(tc, cpu_only_speed_takes_q4_k_m_and_flash_attention);
	tcase_add_test(tc, a_fixed_context_is_not_halved);
	tcase_add_test(tc, vllm_on_two_4090s);
	tcase_add_test(tc, the_runtime_is_chosen_by_the_objective);
	tcase_add_test(tc, bad_input_names_the_field);
	tcase_add_test(tc, the_cli_prints_the_route_answer);
	tcase_add_test(tc, no_mmap_is_planned_and_written);
	tcase_add_test(tc, a_mac_keeps_the_plan_inside_its_working_set);
	tcase_add_test(tc, a_coder_alias_is_served_by_its_own_name);
	tcase_add_test(tc, a_short_name_is_served_the_release_it_spells);
	tcase_add_test(tc, llama_3_2_vision_is_never_given_to_llama_cpp);
	suite_add_tcase(s, tc);
	return s;
}
