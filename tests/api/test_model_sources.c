/*
 * Models named the way users' tools name them, through POST /api/estimate: Ollama tags (the
 * model and the quantization Ollama serves) and a bare Hugging Face config.json as the model.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/hw/device.h"
#include "core/fit/model.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define HW_4090 "\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\"}]}"

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

/* Runs POST /api/estimate on body; returns the status and the parsed answer in *out. */
static int estimate(const char *body, cJSON **out)
{
	struct api_env env = {.version = "test", .cat.devices = &devices, .cat.models = models};

	return t_route_post(api_estimate, &env, "/api/estimate", body, out);
}

static const char *str_at(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);
	ck_assert_msg(cJSON_IsString(v), "no %s.%s", a, b);
	return v->valuestring;
}

static double weights_bytes(const cJSON *o)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(o, "memory"), "weights_bytes");
	ck_assert(cJSON_IsNumber(v));
	return v->valuedouble;
}

/* Asserts body answers 422 naming field. */
static void assert_422(const char *body, const char *field)
{
	cJSON *j;
	int status = estimate(body, &j);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");

	ck_assert_msg(status == 422, "%s: %d", body, status);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "field")->valuestring, field);
	cJSON_Delete(j);
}

START_TEST(an_ollama_tag_is_the_model_at_the_quant_ollama_serves)
{
	cJSON *tag, *id;
	const char *hw = HW_4090;
	char body[512];

	/* The default tag is Q4_K_M: the same weights as the catalog id at Q4_K_M. */
	snprintf(body, sizeof(body), "{\"model\":{\"id\":\"llama3.1:8b\"},%s}", hw);
	ck_assert_int_eq(estimate(body, &tag), 200);
	snprintf(body, sizeof(body),
		 "{\"model\":{\"id\":\"meta-llama/Llama-3.1-8B\"},\"quant\":\"Q4_K_M\",%s}", hw);
	ck_assert_int_eq(estimate(body, &id), 200);
	ck_assert_str_eq(str_at(tag, "model", "id"), "meta-llama/Llama-3.1-8B");
	ck_assert_str_eq(str_at(tag, "settings", "quant"), "Q4_K_M");
	ck_assert_double_eq(weights_bytes(tag), weights_bytes(id));
	cJSON_Delete(tag);
	cJSON_Delete(id);
	/* A tag that names its quantization gets it. */
	snprintf(body, sizeof(body), "{\"model\":\"qwen2.5:32b-instruct-q8_0\",%s}", hw);
	ck_assert_int_eq(estimate(body, &tag), 200);
	ck_assert_str_eq(str_at(tag, "model", "id"), "Qwen/Qwen2.5-32B");
	ck_assert_str_eq(str_at(tag, "settings", "quant"), "Q8_0");
	cJSON_Delete(tag);
	/* quant may repeat the tag's, not contradict it; without a quant word it may choose. */
	snprintf(body, sizeof(body),
		 "{\"model\":\"qwen2.5:32b-instruct-q8_0\",\"quant\":\"q8_0\",%s}", hw);
	ck_assert_int_eq(estimate(body, &tag), 200);
	cJSON_Delete(tag);
	snprintf(body, sizeof(body), "{\"model\":\"qwen2.5:32b\",\"quant\":\"Q6_K\",%s}", hw);
	ck_assert_int_eq(estimate(body, &tag), 200);
	ck_assert_str_eq(str_at(tag, "settings", "quant"), "Q6_K");
	cJSON_Delete(tag);
	assert_422("{\"model\":\"qwen2.5:32b-instruct-q8_0\",\"quant\":\"Q4_K_M\"}", "quant");
	assert_422("{\"model\":\"llama3.1:13b\"}", "model.id");
	assert_422("{\"model\":\"somebody/llama3.1:8b\"}", "model.id");
}
END_TEST

/* Qwen2.5-7B-Instruct's config.json as Hugging Face serves it (keys and values verbatim from
 * the model repository, as of its last revision). */
static const char qwen25_7b_config[] =
	"{\"architectures\":[\"Qwen2ForCausalLM\"],\"attention_dropout\":0.0,"
	"\"bos_token_id\":151643,\"eos_token_id\":151645,\"hidden_act\":\"silu\","
	"\"hidden_size\":3584,\"initializer_range\":0.02,\"intermediate_size\":18944,"
	"\"max_position_embeddings\":32768,\"max_window_layers\":28,\"model_type\":\"qwen2\","
	"\"num_attention_heads\":28,\"num_hidden_layers\":28,\"num_key_value_heads\":4,"
	"\"rms_norm_eps\":1e-06,\"rope_theta\":1000000.0,\"sliding_window\":131072,"
	"\"tie_word_embeddings\":false,\"torch_dtype\":\"bfloat16\","
	"\"transformers_version\":\"4.43.1\",\"use_cache\":true,\"use_sliding_window\":false,"
	"\"vocab_size\":152064}";

START_TEST(a_bare_config_json_is_the_model)
{
	char body[2048];
	cJSON *bare, *wrapped, *p;

	snprintf(body, sizeof(body), "{\"model\":%s,\"quant\":\"Q4_K_M\",\"n_ctx\":8192,%s}",
		 qwen25_7b_config, HW_4090);
	ck_assert_int_eq(estimate(body, &bare), 200);
	snprintf(body, sizeof(body),
		 "{\"model\":{\"architecture\":%s},\"quant\":\"Q4_K_M\",\"n_ctx\":8192,%s}",
		 qwen25_7b_config, HW_4090);
	ck_assert_int_eq(estimate(body, &wrapped), 200);
	ck_assert_double_eq(weights_bytes(bare), weights_bytes(wrapped));
	/* 7.62 B parameters, as Qwen publishes for Qwen2.5-7B. */
	p = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(bare, "model"),
					     "params_total");
	ck_assert(cJSON_IsNumber(p));
	ck_assert_msg(p->valuedouble > 7.60e9 && p->valuedouble < 7.63e9, "%.0f parameters",
		      p->valuedouble);
	cJSON_Delete(bare);
	cJSON_Delete(wrapped);
	/* Errors name fields at the top of the model, where the user pasted them. */
	assert_422("{\"model\":{\"model_type\":\"qwen2\",\"hidden_size\":-1}}",
		   "model.hidden_size");
	/* An object that is neither a config.json nor a model reference is refused. */
	assert_422("{\"model\":{\"hidden_size\":4096}}", "model");
}
END_TEST

START_TEST(a_pasted_quantised_config_is_estimated_as_stored)
{
	cJSON *body = cJSON_CreateObject(), *j;
	const cJSON *qz, *a;
	char *text;
	bool said = false;

	size_t len;
	char *cfg = t_read_src("tests/fixtures/quantized/qwen25-7b-instruct-awq.json", &len);

	cJSON_AddItemToObject(body, "model", cJSON_ParseWithLength(cfg, len));
	free(cfg);
	cJSON_AddStringToObject(body, "runtime", "vllm");
	cJSON_AddStringToObject(body, "hardware_profile", "rtx-4090");
	text = cJSON_PrintUnformatted(body);
	ck_assert_int_eq(estimate(text, &j), 200);
	qz = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "model"),
					      "quantization");
	ck_assert_ptr_nonnull(qz);
	ck_assert_str_eq(str_at(j, "model", "source"), "architecture");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(qz, "method")->valuestring, "awq");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(qz, "basis")->valuestring, "formula");
	/* Qwen's published AWQ checkpoint is 5.57 GB (tests/fixtures/quantized/sizes.csv). */
	ck_assert_double_eq_tol(
		cJSON_GetObjectItemCaseSensitive(qz, "checkpoint_bytes")->valuedouble, 5.57e9,
		0.03 * 5.57e9);
	/* vLLM loads the checkpoint as AWQ, not as bf16, and says why. */
	ck_assert_str_eq(str_at(j, "settings", "precision"), "awq");
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(j, "assumptions"))
	{
		said = said || strstr(a->valuestring, "quantization_config (awq)") != NULL;
	}
	ck_assert(said);
	cJSON_Delete(j);
	free(text);
	cJSON_Delete(body);

	/* A method rigfit does not know is a 422 naming the field, not a bf16 guess. */
	assert_422("{\"model\":{\"model_type\":\"llama\",\"hidden_size\":64,"
		   "\"num_hidden_layers\":1,\"num_attention_heads\":1,\"intermediate_size\":64,"
		   "\"vocab_size\":8,\"quantization_config\":{\"quant_method\":\"hqq\"}}}",
		   "model.quantization_config.quant_method");
}
END_TEST

Suite *model_sources_suite(void)
{
	Suite *s = suite_create("model_sources");
	TCase *tc = tcase_create("route");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, an_ollama_tag_is_the_model_at_the_quant_ollama_serves);
	tcase_add_test(tc, a_bare_config_json_is_the_model);
	tcase_add_test(tc, a_pasted_quantised_config_is_estimated_as_stored);
	suite_add_tcase(s, tc);
	return s;
}
