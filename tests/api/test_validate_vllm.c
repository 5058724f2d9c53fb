/*
 * POST /api/validate with runtime vllm, without a socket, with the shipped profiles: every vLLM
 * config POST /api/config writes (a few models on CUDA cards, each use case) validates as it is
 * written with no error and no headroom warning; hand-written configs vLLM would refuse each
 * give their error naming the field, with the numbers POST /api/estimate gives for the same
 * settings (runtime vllm), and a setup from the planner that validates.
 */
#include <cjson/cJSON.h>
#include <math.h>
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

static cJSON *validate(const char *body)
{
	cJSON *j;
	int st = call(api_validate, "/api/validate", body, &j);
	char *s = cJSON_PrintUnformatted(j);

	ck_assert_msg(st == 200, "%s: status %d: %s", body, st, s);
	free(s);
	return j;
}

static const cJSON *find(const cJSON *j, const char *code, bool error)
{
	return t_check_find(j, code, error);
}

static const char *str_of(const cJSON *k, const char *name)
{
	const cJSON *x = cJSON_GetObjectItem(k, name);

	ck_assert_msg(cJSON_IsString(x), "%s is not a string", name);
	return x->valuestring;
}

/* Asserts the answer is invalid with the error code on field; returns the check. */
static const cJSON *expect_error(const cJSON *j, const char *code, const char *field)
{
	const cJSON *k = find(j, code, true);

	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "is_valid")));
	ck_assert_msg(k != NULL, "no %s", code);
	ck_assert_str_eq(str_of(k, "field"), field);
	return k;
}

/* /api/config's vLLM answer for (model, machine: JSON members, use case), put to /api/validate
 * as written with the same machine. */
static void round_trip(const char *model, const char *machine, const char *use_case)
{
	char body[768], *cfg_text, *txt;
	cJSON *cfg, *val, *mach;
	const cJSON *w, *it;

	snprintf(body, sizeof(body),
		 "{\"model\":{\"id\":\"%s\"},%s,\"use_case\":\"%s\",\"runtime\":\"vllm\"}", model,
		 machine, use_case);
	ck_assert_msg(call(api_config, "/api/config", body, &cfg) == 200, "%s", body);
	ck_assert_str_eq(str_of(cfg, "runtime"), "vllm");
	snprintf(body, sizeof(body), "{%s}", machine);
	mach = cJSON_Parse(body);
	ck_assert_ptr_nonnull(mach);
	cJSON_ArrayForEach(it, mach)
	{
		cJSON_AddItemToObject(cfg, it->string, cJSON_Duplicate(it, true));
	}
	cJSON_Delete(mach);
	cfg_text = cJSON_PrintUnformatted(cfg);
	val = validate(cfg_text);
	txt = cJSON_PrintUnformatted(val);
	ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(val, "is_valid")) &&
			      cJSON_GetArraySize(cJSON_GetObjectItem(val, "errors")) == 0,
		      "%s on %s (%s): %s", model, machine, use_case, txt);
	cJSON_ArrayForEach(w, cJSON_GetObjectItem(val, "warnings"))
	{
		ck_assert_msg(strcmp(str_of(w, "code"), "vram_over_90") != 0, "%s on %s (%s): %s",
			      model, machine, use_case, txt);
	}
	/* The capacity /api/config wrote is the one the validated estimate finds. */
	ck_assert_double_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cfg, "settings"), "kv_cache_tokens")
			->valuedouble,
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(val, "estimate"),
							"serving"),
				    "kv_cache_tokens")
			->valuedouble);
	free(txt);
	free(cfg_text);
	cJSON_Delete(val);
	cJSON_Delete(cfg);
}

START_TEST(every_vllm_config_rigfit_writes_validates)
{
	static const char *const ms[] = {"Qwen/Qwen2.5-7B", "meta-llama/Llama-3.1-8B",
					 "Qwen/Qwen2.5-32B", "openai/gpt-oss-20b"};
	static const char *const ds[] = {"\"hardware_profile\":\"rtx-4090\"",
					 "\"hardware_profile\":\"a100-pcie-80gb\"",
					 "\"hardware_profile\":\"h100-sxm\"",
					 "\"hardware_profile\":\"l4\""};
	/* Several GPUs: the planner's tensor-parallel sizes, free memory as given. */
	static const char *const multi[] = {
		"\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\",\"count\":2}]}",
		"\"hardware\":{\"gpus\":[{\"name\":\"NVIDIA A100-SXM4-80GB\","
		"\"memory_total_bytes\":85899345920,\"count\":4}]}",
		"\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\",\"memory_total_bytes\":"
		"25757220864,\"memory_free_bytes\":20000000000}]}"};
	static const char *const ucs[] = {"general", "long_context", "speed", "quality"};

	for (size_t m = 0; m < sizeof(ms) / sizeof(ms[0]); m++)
		for (size_t d = 0; d < sizeof(ds) / sizeof(ds[0]); d++)
			for (size_t u = 0; u < sizeof(ucs) / sizeof(ucs[0]); u++)
				if ((m + d + u) % 2 == 0) /* half of the grid keeps it quick */
					round_trip(ms[m], ds[d], ucs[u]);
	for (size_t i = 0; i < sizeof(multi) / sizeof(multi[0]); i++) {
		/* A 70B on two 24 GB cards runs only as AWQ: Llama 3.1's, whose AWQ checkpoint the
		 * catalog lists (Llama 3.3 has none there, so vLLM has no setup for it). */
		round_trip(i < 2 ? "meta-llama/Llama-3.1-70B" : "Qwen/Qwen2.5-7B", multi[i],
			   "general");
		round_trip(i < 2 ? "Qwen/Qwen2.5-32B" : "meta-llama/Llama-3.1-8B", multi[i],
			   "long_context");
	}
}
END_TEST

/* The serving block /api/estimate answers for the same settings. */
static double estimate_serving(const char *settings, const char *name)
{
	char body[768];
	cJSON *e;
	double v;

	snprintf(body, sizeof(body), "{\"runtime\":\"vllm\",%s}", settings);
	ck_assert_int_eq(call(api_estimate, "/api/estimate", body, &e), 200);
	v = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "serving"), name)->valuedouble;
	cJSON_Delete(e);
	return v;
}

/* A config of settings (flat JSON members) and the validate answer for it. */
static cJSON *validate_cfg(const char *model, const char *settings, const char *machine)
{
	char body[1024];

	snprintf(body, sizeof(body),
		 "{\"runtime\":\"vllm\",\"backend\":\"cuda\",\"model\":{\"id\":\"%s\"},"
		 "\"settings\":{%s},%s}",
		 model, settings, machine);
	return validate(body);
}

/* Applying suggested_settings to the machine makes the config valid. */
static void suggestion_validates(const cJSON *j, const char *model, const char *machine)
{
	const cJSON *set = cJSON_GetObjectItem(j, "suggested_settings");
	char *s, body[1024];
	cJSON *v;

	ck_assert_msg(cJSON_IsObject(set), "no suggested_settings");
	s = cJSON_PrintUnformatted(set);
	snprintf(body, sizeof(body), "{\"runtime\":\"vllm\",\"model\":\"%s\",\"settings\":%s,%s}",
		 model, s, machine);
	v = validate(body);
	ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(v, "is_valid")), "%s", body);
	free(s);
	cJSON_Delete(v);
}

START_TEST(a_70b_in_bf16_on_one_24gb_card_does_not_start)
{
	const char *hw = "\"hardware_profile\":\"rtx-4090\"";
	cJSON *j = validate_cfg("meta-llama/Llama-3.1-70B",
				"\"tensor_parallel_size\":1,\"max_model_len\":4096,"
				"\"gpu_memory_utilization\":0.9,\"quantization\":null",
				hw);
	const cJSON *k = expect_error(j, "vram_exceeded", "settings.quantization");
	ck_assert_ptr_nonnull(strstr(str_of(k, "message"), "vLLM fails to start"));
	/* 70B parameters at 2 bytes: far over the card; the message says how much. */
	ck_assert_ptr_nonnull(strstr(str_of(k, "message"), "131."));
	ck_assert_ptr_null(find(j, "kv_capacity_exceeded", true));
	cJSON_Delete(j);
}
END_TEST

START_TEST(max_model_len_above_the_kv_capacity_names_the_capacity)
{
	const char *hw = "\"hardware_profile\":\"rtx-4090\"";
	const char *est = "\"model\":\"meta-llama/Llama-3.1-8B\",\"hardware_profile\":\"rtx-"
			  "4090\",\"max_model_len\":131072,\"gpu_memory_utilization\":0.9";
	double cap = estimate_serving(est, "kv_cache_tokens");
	cJSON *j = validate_cfg("meta-llama/Llama-3.1-8B",
				"\"max_model_len\":131072,\"gpu_memory_utilization\":0.9", hw);
	const cJSON *k;
	char want[64];

	/* bf16 8B on 24 GB: 15 GiB of weights leave a few GiB, at 128 KiB a token. */
	ck_assert_double_gt(cap, 10000);
	ck_assert_double_lt(cap, 65536);
	k = expect_error(j, "kv_capacity_exceeded", "settings.max_model_len");
	snprintf(want, sizeof(want), "the %.0f tokens", cap);
	ck_assert_msg(strstr(str_of(k, "message"), want) != NULL, "%s lacks %s",
		      str_of(k, "message"), want);
	snprintf(want, sizeof(want), "max_model_len to %.0f", cap);
	ck_assert_ptr_nonnull(strstr(str_of(k, "suggestion"), want));
	ck_assert_double_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "estimate"),
							"serving"),
				    "kv_cache_tokens")
			->valuedouble,
		cap);
	suggestion_validates(j, "meta-llama/Llama-3.1-8B", hw);
	cJSON_Delete(j);
	/* Lowered to the capacity, the same config starts. */
	{
		char set[160];
		snprintf(set, sizeof(set), "\"max_model_len\":%.0f,\"gpu_memory_utilization\":0.9",
			 cap);
		j = validate_cfg("meta-llama/Llama-3.1-8B", set, hw);
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "is_valid")));
		cJSON_Delete(j);
	}
}
END_TEST

START_TEST(tensor_parallel_must_divide_the_heads_and_fit_the_gpus)
{
	/* Llama 3.3 70B: 64 attention heads, 8 KV heads; four A100 80GB. */
	const char *four = "\"hardware\":{\"gpus\":[{\"name\":\"NVIDIA A100-SXM4-80GB\","
			   "\"memory_total_bytes\":85899345920,\"count\":4}]}";
	cJSON *j = validate_cfg("meta-llama/Llama-3.3-70B-Instruct",
				"\"tensor_parallel_size\":3,\"max_model_len\":8192", four);
	const cJSON *k = expect_error(j, "tp_not_dividing_heads", "settings.tensor_parallel_size");
	ck_assert_ptr_nonnull(strstr(str_of(k, "message"), "64 attention heads"));
	ck_assert_ptr_nonnull(strstr(str_of(k, "suggestion"), "tensor_parallel_size to 4"));
	cJSON_Delete(j);

	j = validate_cfg("meta-llama/Llama-3.3-70B-Instruct",
			 "\"tensor_parallel_size\":8,\"max_model_len\":8192", four);
	k = expect_error(j, "parallel_over_gpus", "settings.tensor_parallel_size");
	ck_assert_ptr_nonnull(strstr(str_of(k, "message"), "has 4"));
	cJSON_Delete(j);

	j = validate_cfg("meta-llama/Llama-3.3-70B-Instruct",
			 "\"tensor_parallel_size\":4,\"max_model_len\":8192", four);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "is_valid")));
	cJSON_Delete(j);
}
END_TEST

/* An engine over more GPUs than llama.cpp splits over (16): validate sees the GPUs that the
 * estimate sees (up to an engine's 64), so 8 x 3 on 24 H100s is valid, with the estimate's
 * own figures, and 8 x 4 is 8 GPUs short. */
START_TEST(an_engine_over_24_gpus_is_validated_on_all_24)
{
	const char *many = "\"hardware\":{\"gpus\":[{\"name\":\"NVIDIA H100 80GB HBM3\","
			   "\"memory_total_bytes\":85899345920,\"count\":24}]}";
	cJSON *j = validate_cfg("meta-llama/Llama-3.1-405B-Instruct",
				"\"tensor_parallel_size\":8,\"pipeline_parallel_size\":3,"
				"\"max_model_len\":8192",
				many);
	const cJSON *est = cJSON_GetObjectItem(j, "estimate");
	const cJSON *k;

	ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(j, "is_valid")), "%s",
		      str_of(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "errors"), 0), "message"));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(est, "fits")));
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(est, "hardware"), "gpus")->valueint, 24);
	cJSON_Delete(j);
	j = validate_cfg("meta-llama/Llama-3.1-405B-Instruct",
			 "\"tensor_parallel_size\":8,\"pipeline_parallel_size\":4,"
			 "\"max_model_len\":8192",
			 many);
	k = expect_error(j, "parallel_over_gpus", "settings.pipeline_parallel_size");
	ck_assert_ptr_nonnull(strstr(str_of(k, "message"), "has 24"));
	cJSON_Delete(j);
}
END_TEST

/* An AWQ checkpoint of Qwen2.5-7B (its config.json) with the quantization q. */
#define QWEN_AWQ_WITH(q)                                                                           \
	"{\"runtime\":\"vllm\",\"model\":{\"architecture\":{\"model_type\":\"qwen2\","             \
	"\"hidden_size\":3584,\"intermediate_size\":18944,\"num_hidden_layers\":28,"               \
	"\"num_attention_heads\":28,\"num_key_value_heads\":4,\"vocab_size\":152064,"              \
	"\"torch_dtype\":\"float16\",\"quantization_config\":{\"quant_method\":\"awq\","           \
	"\"bits\":4,\"group_size\":128}}},\"settings\":{\"quantization\":\"" q "\","               \
	"\"max_model_len\":8192},\"hardware_profile\":\"h100-sxm\"}"

/* vLLM loads AWQ and GPTQ only from a checkpoint already in that format (vLLM issue 1419):
 * on a bf16 repository it stops at start-up. A catalog model with an AWQ checkpoint is served
 * from it; one without is refused; fp8 and bitsandbytes are quantized on load; a quantized
 * checkpoint loads only as itself. */
START_TEST(a_quantization_needs_a_checkpoint_in_that_format)
{
	const char *hw = "\"hardware_profile\":\"h100-sxm\"";
	const cJSON *k;
	cJSON *j;

	/* Qwen3-30B-A3B: the catalog lists no AWQ or GPTQ checkpoint of it. */
	j = validate_cfg("Qwen/Qwen3-30B-A3B", "\"quantization\":\"awq\",\"max_model_len\":8192",
			 hw);
	k = expect_error(j, "quantization_needs_checkpoint", "settings.quantization");
	ck_assert_ptr_nonnull(strstr(str_of(k, "message"), "stops at start-up"));
	ck_assert_ptr_nonnull(strstr(str_of(k, "suggestion"), "fp8"));
	/* Refused before anything loads: no memory rule is asked. */
	ck_assert_ptr_null(find(j, "vram_exceeded", true));
	cJSON_Delete(j);
	j = validate_cfg("Qwen/Qwen3-30B-A3B", "\"quantization\":\"gptq\",\"max_model_len\":8192",
			 hw);
	expect_error(j, "quantization_needs_checkpoint", "settings.quantization");
	cJSON_Delete(j);
	/* Quantized on load. */
	for (int i = 0; i < 2; i++) {
		char set[96];
		snprintf(set, sizeof(set), "\"quantization\":\"%s\",\"max_model_len\":8192",
			 i ? "bitsandbytes" : "fp8");
		j = validate_cfg("Qwen/Qwen3-30B-A3B", set, hw);
		ck_assert_ptr_null(find(j, "quantization_needs_checkpoint", true));
		cJSON_Delete(j);
	}
	/* Llama 3.1 70B: the catalog's AWQ checkpoint is what /api/config serves. */
	j = validate_cfg("meta-llama/Llama-3.1-70B",
			 "\"quantization\":\"awq\",\"max_model_len\":8192", hw);
	ck_assert_ptr_null(find(j, "quantization_needs_checkpoint", true));
	cJSON_Delete(j);
	/* An AWQ checkpoint loads as AWQ, never as fp8. */
	j = validate(QWEN_AWQ_WITH("awq"));
	ck_assert_ptr_null(find(j, "quantization_needs_checkpoint", true));
	cJSON_Delete(j);
	j = validate(QWEN_AWQ_WITH("fp8"));
	k = expect_error(j, "quantization_needs_checkpoint", "settings.quantization");
	ck_assert_ptr_nonnull(strstr(str_of(k, "message"), "quantized as awq"));
	cJSON_Delete(j);
}
END_TEST

START_TEST(utilization_above_free_memory_is_refused)
{
	/* An RTX 4090 with 12 GiB of its 24 in use by another program. */
	const char *busy =
		"\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\","
		"\"memory_total_bytes\":25757220864,\"memory_free_bytes\":12884901888}]}";
	cJSON *j = validate_cfg("Qwen/Qwen2.5-3B",
				"\"max_model_len\":4096,\"gpu_memory_utilization\":0.9", busy);
	const cJSON *k = expect_error(j, "vram_not_free", "settings.gpu_memory_utilization");
	double sug;
	const char *at;

	ck_assert_ptr_nonnull(strstr(str_of(k, "message"), "12.00 GiB free"));
	ck_assert_ptr_null(find(j, "vram_over_90", false));
	at = strstr(str_of(k, "suggestion"), "to ");
	ck_assert_ptr_nonnull(at);
	sug = strtod(at + 3, NULL);
	/* What is free (half) less 5 points. */
	ck_assert_double_eq_tol(sug, 0.45, 0.011);
	suggestion_validates(j, "Qwen/Qwen2.5-3B", busy);
	cJSON_Delete(j);
}
END_TEST

START_TEST(headroom_and_parse_errors)
{
	const char *hw = "\"hardware_profile\":\"h100-sxm\"";
	cJSON *j = validate_cfg("Qwen/Qwen2.5-7B",
				"\"max_model_len\":8192,\"gpu_memory_utilization\":0.98", hw);
	const cJSON *k = find(j, "vram_over_90", false);

	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "is_valid")));
	ck_assert_ptr_nonnull(k);
	ck_assert_str_eq(str_of(k, "field"), "settings.gpu_memory_utilization");
	ck_assert_ptr_nonnull(strstr(str_of(k, "suggestion"), "0.90"));
	cJSON_Delete(j);
	/* 0.95 on an idle GPU is the planner's own choice: no warning. */
	j = validate_cfg("Qwen/Qwen2.5-7B",
			 "\"max_model_len\":8192,\"gpu_memory_utilization\":0.95", hw);
	ck_assert_ptr_null(find(j, "vram_over_90", false));
	cJSON_Delete(j);
	/* Above the model's positions: vLLM refuses, a finding on the field. */
	j = validate_cfg("Qwen/Qwen2.5-7B", "\"max_model_len\":1000000", hw);
	k = expect_error(j, "ctx_over_model", "settings.max_model_len");
	cJSON_Delete(j);

	{
		static const struct {
			const char *body, *field, *code;
		} bad[] = {
			{"{\"runtime\":\"vllm\",\"model\":\"Qwen/Qwen2.5-7B\",\"settings\":{\"n_ctx\":"
			 "4096}}",
			 "settings.n_ctx", "unknown_field"},
			{"{\"runtime\":\"vllm\",\"model\":\"Qwen/Qwen2.5-7B\",\"settings\":{"
			 "\"gpu_memory_utilization\":1.5}}",
			 "settings.gpu_memory_utilization", "invalid_value"},
			{"{\"runtime\":\"vllm\",\"model\":\"Qwen/Qwen2.5-7B\",\"settings\":{"
			 "\"quantization\":\"Q4_K_M\"}}",
			 "settings.quantization", "invalid_value"},
			{"{\"runtime\":\"vllm\",\"model\":\"Qwen/Qwen2.5-7B\",\"settings\":{"
			 "\"kv_cache_dtype\":\"q8_0\"}}",
			 "settings.kv_cache_dtype", "invalid_value"},
			{"{\"runtime\":\"tgi\",\"model\":\"Qwen/Qwen2.5-7B\"}", "runtime",
			 "invalid_value"},
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			cJSON *e;
			const cJSON *err;
			ck_assert_int_eq(call(api_validate, "/api/validate", bad[i].body, &e), 422);
			err = cJSON_GetObjectItem(e, "error");
			ck_assert_str_eq(str_of(err, "field"), bad[i].field);
			ck_assert_str_eq(str_of(err, "code"), bad[i].code);
			cJSON_Delete(e);
		}
	}
	/* No CUDA GPU: vLLM cannot run here, a finding on runtime. */
	j = validate("{\"runtime\":\"vllm\",\"model\":\"Qwen/Qwen2.5-7B\",\"settings\":{},"
		     "\"hardware_profile\":\"apple-m3\"}");
	k = expect_error(j, "backend_unavailable", "runtime");
	cJSON_Delete(j);
	/* A Pascal card: CUDA, but vLLM needs compute capability 7.0; the finding says so. */
	j = validate("{\"runtime\":\"vllm\",\"model\":\"Qwen/Qwen2.5-7B\",\"settings\":{},"
		     "\"hardware_profile\":\"tesla-p100-pcie-16gb\"}");
	k = expect_error(j, "backend_unavailable", "runtime");
	ck_assert_ptr_nonnull(strstr(str_of(k, "message"), "compute capability 7.0 or newer"));
	ck_assert_ptr_nonnull(strstr(str_of(k, "message"), "is 6.0"));
	cJSON_Delete(j);
}
END_TEST

Suite *validate_vllm_suite(void)
{
	Suite *s = suite_create("validate_vllm");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, every_vllm_config_rigfit_writes_validates);
	tcase_add_test(tc, a_70b_in_bf16_on_one_24gb_card_does_not_start);
	tcase_add_test(tc, max_model_len_above_the_kv_capacity_names_the_capacity);
	tcase_add_test(tc, tensor_parallel_must_divide_the_heads_and_fit_the_gpus);
	tcase_add_test(tc, an_engine_over_24_gpus_is_validated_on_all_24);
	tcase_add_test(tc, a_quantization_needs_a_checkpoint_in_that_format);
	tcase_add_test(tc, utilization_above_free_memory_is_refused);
	tcase_add_test(tc, headroom_and_parse_errors);
	suite_add_tcase(s, tc);
	return s;
}
