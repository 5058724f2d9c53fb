/*
 * Every config rigfit writes passes its own validate: POST /api/config's answers for a sample
 * of requests (llama.cpp and vLLM; one GPU, several, CPU only and a Mac; dense and MoE models;
 * each use case, long context among them; a fixed n_parallel and a device profile) are put to
 * POST /api/validate as written, on the same machine, and none has an error-level finding.
 * And validate's estimate block is POST /api/estimate's answer for the same settings (flat
 * configs, whose fields both routes take). Without a socket, with the shipped profiles.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/runtime_config.h"
#include "api/validate.h"
#include "core/hw/device.h"
#include "core/fit/model.h"
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

static int call(api_handler_fn h, const char *path, const char *body, cJSON **out)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .cat.quality = t_quality()};

	return t_route_post(h, &env, path, body, out);
}

#define R4090 "\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\"}]}"
#define R3060                                                                                      \
	"\"hardware\":{\"gpus\":[{\"name\":\"RTX 3060 12GB\"}],\"memory\":{\"total_bytes\":34359738368}}"
#define A100X2 "\"hardware\":{\"gpus\":[{\"name\":\"A100 SXM4 80GB\",\"count\":2}]}"
#define R3090X2                                                                                     \
	"\"hardware\":{\"gpus\":[{\"name\":\"RTX 3090\",\"count\":2}],\"memory\":{\"total_bytes\":" \
	"137438953472}}"
#define LAPTOP                                                                                     \
	"\"hardware\":{\"gpus\":[{\"name\":\"RTX 4060 Laptop GPU\"}],\"memory\":{\"total_bytes\":" \
	"17179869184}}"
#define CPU16                                                                                      \
	"\"hardware\":{\"cpu\":{\"physical_cores\":12},\"memory\":{\"total_bytes\":17179869184}}"
#define CPU64                                                                                      \
	"\"hardware\":{\"cpu\":{\"physical_cores\":16},\"memory\":{\"total_bytes\":68719476736}}"

/* (the request's model and options, its machine) */
static const struct {
	const char *ask, *machine;
} cases[] = {
	{"\"model\":\"llama-3.1-8b\",\"use_case\":\"general\"", R4090},
	{"\"model\":\"llama-3.1-8b\",\"use_case\":\"long_context\"", R3060},
	{"\"model\":\"llama-3.1-8b\",\"use_case\":\"speed\"", A100X2},
	{"\"model\":\"qwen2.5-7b\",\"use_case\":\"quality\"", LAPTOP},
	{"\"model\":\"qwen2.5-14b\",\"use_case\":\"long_context\"", R3090X2},
	{"\"model\":\"llama-3.3-70b\",\"use_case\":\"general\"", R3090X2},
	{"\"model\":\"llama-3.3-70b\",\"use_case\":\"long_context\"", R3060},
	{"\"model\":\"llama-3.3-70b\",\"use_case\":\"quality\"", R3060},
	{"\"model\":\"mixtral-8x7b\",\"use_case\":\"general\"", LAPTOP},
	{"\"model\":\"mixtral-8x7b\",\"use_case\":\"long_context\"", R4090},
	{"\"model\":\"qwen3-30b-a3b\",\"use_case\":\"long_context\"", R3060},
	{"\"model\":\"qwen3-30b-a3b\",\"use_case\":\"speed\"", A100X2},
	{"\"model\":\"gemma-2-9b\",\"use_case\":\"quality\"", LAPTOP},
	{"\"model\":\"phi-4\",\"use_case\":\"long_context\"", R3090X2},
	{"\"model\":\"gpt-oss-20b\",\"use_case\":\"general\"", R3090X2},
	{"\"model\":\"gpt-oss-20b\",\"use_case\":\"long_context\"", LAPTOP},
	{"\"model\":\"qwen2.5-0.5b\",\"use_case\":\"long_context\"", R4090},
	{"\"model\":\"llama-3.1-8b\",\"n_parallel\":4",
	 "\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\",\"count\":2}]}"},
	{"\"model\":\"llama-3.3-70b\"", "\"hardware_profile\":\"h100-sxm\""},
	{"\"model\":\"qwen3-30b-a3b\"", "\"hardware_profile\":\"apple-m2\""},
	{"\"model\":\"qwen2.5-7b\",\"runtime\":\"llama.cpp\"", A100X2},
	{"\"model\":\"llama-3.2-3b\",\"use_case\":\"speed\"", CPU16},
	{"\"model\":\"qwen3-30b-a3b\",\"use_case\":\"long_context\"", CPU64},
	{"\"model\":\"llama-3.1-8b\",\"use_case\":\"quality\"", CPU64},
	{"\"model\":\"qwen2.5-7b\",\"runtime\":\"vllm\"", R4090},
	{"\"model\":\"meta-llama/Llama-3.1-8B\",\"runtime\":\"vllm\",\"use_case\":\"long_context\"",
	 "\"hardware_profile\":\"h100-sxm\""},
	{"\"model\":\"Qwen/Qwen2.5-32B\",\"runtime\":\"vllm\",\"use_case\":\"long_context\"",
	 "\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\",\"count\":2}]}"},
	{"\"model\":\"qwen3-30b-a3b\",\"runtime\":\"vllm\",\"use_case\":\"speed\"", A100X2},
	/* Past the trained 32768 with the card's YaRN, which the config writes. */
	{"\"model\":\"qwen2.5-7b\",\"n_ctx\":131072,\"runtime\":\"llama.cpp\"", A100X2},
	{"\"model\":\"qwen2.5-7b\",\"n_ctx\":131072,\"runtime\":\"vllm\"",
	 "\"hardware_profile\":\"h100-sxm\""},
	{"\"model\":\"qwen3-8b\",\"use_case\":\"long_context\"", A100X2},
};

/* /api/config's answer for case i, with the case's machine beside it, put to /api/validate. */
static void round_trip(size_t i)
{
	char body[1024], *cfg_text, *txt;
	cJSON *cfg, *val, *mach;
	const cJSON *it;
	int st;

	snprintf(body, sizeof(body), "{%s,%s}", cases[i].ask, cases[i].machine);
	st = call(api_config, "/api/config", body, &cfg);
	ck_assert_msg(st == 200, "config %s: %d", body, st);
	snprintf(body, sizeof(body), "{%s}", cases[i].machine);
	mach = cJSON_Parse(body);
	ck_assert_ptr_nonnull(mach);
	cJSON_ArrayForEach(it, mach)
	{
		cJSON_AddItemToObject(cfg, it->string, cJSON_Duplicate(it, true));
	}
	cJSON_Delete(mach);
	cfg_text = cJSON_PrintUnformatted(cfg);
	st = call(api_validate, "/api/validate", cfg_text, &val);
	txt = cJSON_PrintUnformatted(val);
	ck_assert_msg(st == 200, "validate %s: %d: %s", cfg_text, st, txt);
	ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(val, "is_valid")) &&
			      cJSON_GetArraySize(cJSON_GetObjectItem(val, "errors")) == 0,
		      "{%s, %s}: the written config %s does not validate: %s", cases[i].ask,
		      cases[i].machine, cfg_text, txt);
	free(txt);
	free(cfg_text);
	cJSON_Delete(val);
	cJSON_Delete(cfg);
}

START_TEST(every_config_rigfit_writes_validates)
{
	round_trip((size_t)_i);
}
END_TEST

/* Flat configs both routes take as they are. */
static const char *const same[] = {
	"{\"model\":\"qwen2.5-7b\",\"quant\":\"Q4_K_M\",\"n_ctx\":8192,\"n_gpu_layers\":-1,"
	"\"flash_attn\":true,\"hardware_profile\":\"rtx-4090\"}",
	"{\"model\":\"llama-3.1-8b\",\"quant\":\"Q8_0\",\"n_ctx\":131072,\"hardware_profile\":"
	"\"rtx-3060-12gb\"}",
	"{\"model\":\"qwen3-30b-a3b\",\"quant\":\"Q4_K_M\",\"n_ctx\":32768,\"n_cpu_moe\":20,"
	"\"hardware\":{\"gpus\":[{\"name\":\"RTX 3060 12GB\"}],"
	"\"memory\":{\"total_bytes\":34359738368}}}",
	"{\"model\":\"llama-3.3-70b\",\"quant\":\"Q4_K_M\",\"n_ctx\":16384,\"tensor_split\":[3,"
	"1],\"hardware\":{\"gpus\":[{\"name\":\"RTX 3090\",\"count\":2}]}}",
	"{\"model\":\"llama-3.2-3b\",\"n_ctx\":8192,\"use_mmap\":false,\"hardware\":{\"cpu\":{"
	"\"physical_cores\":12},\"memory\":{\"total_bytes\":17179869184}}}",
	"{\"runtime\":\"vllm\",\"model\":\"Qwen/Qwen2.5-7B\",\"max_model_len\":32768,"
	"\"gpu_memory_utilization\":0.9,\"hardware_profile\":\"l4\"}",
	"{\"runtime\":\"vllm\",\"model\":\"meta-llama/Llama-3.1-70B\",\"precision\":\"fp8\","
	"\"tensor_parallel_size\":2,\"hardware\":{\"gpus\":[{\"name\":\"A100 SXM4 80GB\","
	"\"count\":2}]}}",
	"{\"model\":\"qwen2.5-7b\",\"quant\":\"Q4_K_M\",\"n_ctx\":131072,\"flash_attn\":true,"
	"\"rope_scaling\":\"yarn\",\"rope_scale\":4,\"yarn_orig_ctx\":32768,"
	"\"hardware_profile\":\"h100-sxm\"}",
	"{\"runtime\":\"vllm\",\"model\":\"Qwen/Qwen2.5-7B\",\"max_model_len\":131072,"
	"\"rope_scaling\":\"yarn\",\"rope_scale\":4,\"yarn_orig_ctx\":32768,"
	"\"hardware_profile\":\"h100-sxm\"}",
};

START_TEST(the_estimate_block_is_the_estimate_routes_answer)
{
	cJSON *val, *est;
	char *a, *b;

	ck_assert_int_eq(call(api_validate, "/api/validate", same[_i], &val), 200);
	ck_assert_int_eq(call(api_estimate, "/api/estimate", same[_i], &est), 200);
	a = cJSON_PrintUnformatted(cJSON_GetObjectItem(val, "estimate"));
	b = cJSON_PrintUnformatted(est);
	ck_assert_msg(strcmp(a, b) == 0, "%s:\nvalidate's %s\nestimate's %s", same[_i], a, b);
	free(a);
	free(b);
	cJSON_Delete(val);
	cJSON_Delete(est);
}
END_TEST

Suite *validate_roundtrip_suite(void)
{
	Suite *s = suite_create("validate_roundtrip");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, every_config_rigfit_writes_validates, 0,
			    (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_loop_test(tc, the_estimate_block_is_the_estimate_routes_answer, 0,
			    (int)(sizeof(same) / sizeof(same[0])));
	suite_add_tcase(s, tc);
	return s;
}
