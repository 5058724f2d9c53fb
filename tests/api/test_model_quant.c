/*
 * Quantised checkpoints from their config.json (api/model_quant.c, core/fit/hf_quant.c): the bytes
 * the formula gives are checked against the published sizes of real quantised checkpoints
 * (tests/fixtures/quantized/sizes.csv, with their sources), the layout rules one by one on
 * small shapes, and bad quantization_config values as 422s naming the field. POST
 * /api/estimate with a quantised config is in test_model_sources.c.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/model_json.h"
#include "api/model_quant.h"
#include "core/err.h"
#include "core/fit/hf_quant.h"
#include "core/fit/model.h"
#include "tests/csv.h"
#include "tests/test.h"

/* Reads tests/fixtures/quantized/<name>.json. */
static cJSON *fixture_config(const char *name)
{
	char rel[160], *text;
	size_t len;
	cJSON *j;

	snprintf(rel, sizeof(rel), "tests/fixtures/quantized/%s.json", name);
	text = t_read_src(rel, &len);
	j = cJSON_ParseWithLength(text, len);
	ck_assert_msg(j != NULL, "%s is not JSON", rel);
	free(text);
	return j;
}

/* Maps cfg and counts its checkpoint bytes. */
static struct hfq_bytes count(const cJSON *cfg, struct hfq_config *q)
{
	struct model_arch a;
	struct hfq_bytes b;
	struct api_reply r = {0};
	char field[MODEL_JSON_FIELD_LEN], msg[256];

	ck_assert_msg(model_arch_from_hf(cfg, "", &a, field, sizeof(field), msg, sizeof(msg)) == 0,
		      "%s: %s", field, msg);
	ck_assert_int_eq(api_hf_quant_from_config(cfg, "", q, &r), 1);
	api_reply_reset(&r);
	ck_assert_int_eq(hfq_checkpoint_bytes(&a, q, &b), 0);
	return b;
}

START_TEST(published_checkpoint_sizes_within_three_percent)
{
	char *path = t_path(t_src_dir(), "tests/fixtures/quantized/sizes.csv");
	struct t_csv *t = t_csv_read(path);
	unsigned methods = 0;
	int n_methods = 0;

	ck_assert_msg(t != NULL, "cannot read %s", path);
	ck_assert_int_ge(t->n_rows, 9);
	for (int r = 0; r < t->n_rows; r++) {
		cJSON *cfg = fixture_config(t_csv_get(t, r, "case"));
		struct hfq_config q;
		struct hfq_bytes b = count(cfg, &q);
		double published, err;

		ck_assert_int_eq(t_csv_num(t, r, "published_bytes", &published), 0);
		ck_assert_str_ne(t_csv_get(t, r, "source"), "");
		err = (double)b.total / published - 1;
		ck_assert_msg(fabs(err) < 0.03, "%s: %.3f GB counted, %.3f GB published (%+.1f%%)",
			      t_csv_get(t, r, "model"), (double)b.total / 1e9, published / 1e9,
			      err * 100);
		/* The quantised layers are most of every checkpoint here: a formula that kept
		 * them at 16 bits could not pass. */
		ck_assert_int_gt(b.quantized, b.dense / 4);
		if (!(methods & (1u << q.method)))
			n_methods++;
		methods |= 1u << q.method;
		cJSON_Delete(cfg);
	}
	ck_assert_int_ge(n_methods, 5);
	t_csv_free(t);
	free(path);
}
END_TEST

/* A one-layer llama of hidden h and FFN f, no embeddings to speak of (vocab 8). */
static struct model_arch tiny(int64_t h, int64_t f)
{
	struct model_arch a;
	const char *field = NULL;

	model_arch_init(&a);
	snprintf(a.model_type, sizeof(a.model_type), "llama");
	snprintf(a.llm_arch, sizeof(a.llm_arch), "llama");
	a.hidden_size = h;
	a.n_layers = 1;
	a.n_heads = h / 128;
	a.n_kv_heads = h / 128;
	a.intermediate_size = f;
	a.vocab_size = 8;
	a.tie_word_embeddings = true;
	ck_assert_int_eq(model_arch_validate(&a, &field), 0);
	return a;
}

START_TEST(awq_and_gptq_store_packed_weights_group_scales_and_zeros)
{
	struct model_arch a = tiny(1024, 2048);
	struct hfq_config q;
	struct hfq_bytes awq, gptq, g64;
	/* q, k, v, o: 4 x 1024 x 1024; gate, up, down: 3 x 1024 x 2048. */
	const int64_t n = 4 * 1024 * 1024 + 3 * 1024 * 2048;
	/* Groups of 128 along each matrix's input: every 128 weights share a scale and zero. */
	const int64_t groups = n / 128;

	hfq_config_init(&q);
	hfq_config_method(&q, HFQ_AWQ);
	ck_assert_int_eq(hfq_checkpoint_bytes(&a, &q, &awq), 0);
	ck_assert_int_eq(awq.quantized_params, n);
	ck_assert_int_eq(awq.quantized, n / 2);
	ck_assert_int_eq(awq.scales, groups * 2 + groups / 2);
	/* GPTQ adds an int32 group index per input column of every matrix: 6 of 1024 inputs
	 * (q, k, v, o, gate, up) and the down projection's 2048. */
	hfq_config_method(&q, HFQ_GPTQ);
	ck_assert_int_eq(hfq_checkpoint_bytes(&a, &q, &gptq), 0);
	ck_assert_int_eq(gptq.scales - awq.scales, (6 * 1024 + 2048) * 4);
	/* Halving the group doubles scales and zeros. */
	hfq_config_method(&q, HFQ_AWQ);
	q.group_size = 64;
	ck_assert_int_eq(hfq_checkpoint_bytes(&a, &q, &g64), 0);
	ck_assert_int_eq(g64.scales, 2 * awq.scales);
	ck_assert_int_eq(g64.dense, awq.dense);
}
END_TEST

START_TEST(bitsandbytes_fp8_and_mxfp4_layouts)
{
	struct model_arch a = tiny(1024, 2048);
	struct hfq_config q;
	struct hfq_bytes b, dq;
	const int64_t n = 4 * 1024 * 1024 + 3 * 1024 * 2048;
	const int64_t blocks = n / 64;

	hfq_config_init(&q);
	hfq_config_method(&q, HFQ_BNB_4BIT);
	ck_assert_int_eq(hfq_checkpoint_bytes(&a, &q, &b), 0);
	/* fp32 absmax per 64 weights and a 16-entry fp32 code book per matrix. */
	ck_assert_int_eq(b.scales, blocks * 4 + 7 * 64);
	q.double_quant = true;
	ck_assert_int_eq(hfq_checkpoint_bytes(&a, &q, &dq), 0);
	ck_assert_int_lt(dq.scales, b.scales / 3);
	ck_assert_int_eq(dq.quantized, n / 2);
	/* LLM.int8(): a byte a weight and an fp32 scale per output row. */
	hfq_config_method(&q, HFQ_BNB_8BIT);
	ck_assert_int_eq(hfq_checkpoint_bytes(&a, &q, &b), 0);
	ck_assert_int_eq(b.quantized, n);
	ck_assert_int_eq(b.scales, (4 * 1024 + 2 * 2048 + 1024) * 4);
	/* FP8 with 128 x 128 blocks (DeepSeek-V3): one fp32 scale a block. */
	hfq_config_method(&q, HFQ_FP8);
	q.block[0] = q.block[1] = 128;
	ck_assert_int_eq(hfq_checkpoint_bytes(&a, &q, &b), 0);
	ck_assert_int_eq(b.scales, n / (128 * 128) * 4);
	/* MXFP4 quantises only routed experts: a dense model stays whole. */
	hfq_config_method(&q, HFQ_MXFP4);
	ck_assert_int_eq(hfq_checkpoint_bytes(&a, &q, &b), 0);
	ck_assert_int_eq(b.quantized, 0);
	ck_assert_int_eq(b.dense, b.params * 2);
}
END_TEST

START_TEST(modules_to_not_convert_stay_in_the_checkpoint_dtype)
{
	cJSON *cfg = fixture_config("llama31-8b-instruct-awq-int4");
	cJSON *qc = cJSON_GetObjectItemCaseSensitive(cfg, "quantization_config");
	struct hfq_config q;
	struct hfq_bytes all, skip;
	const int64_t down = 4096LL * 14336;

	all = count(cfg, &q);
	{
		const char *names[] = {"model.layers.0.mlp.down_proj", "visual"};
		cJSON_ReplaceItemInObject(qc, "modules_to_not_convert",
					  cJSON_CreateStringArray(names, 2));
	}
	skip = count(cfg, &q);
	/* One down projection (layer 0) in fp16; the vision name matches nothing here. */
	ck_assert_int_eq(q.n_skip, 1);
	ck_assert_int_eq(skip.dense - all.dense, down * 2);
	ck_assert_int_eq(all.quantized - skip.quantized, down / 2);
	cJSON_Delete(cfg);

	/* compressed-tensors quantises lm_head unless ignore names it. */
	cfg = fixture_config("llama31-8b-instruct-w8a8");
	qc = cJSON_GetObjectItemCaseSensitive(cfg, "quantization_config");
	all = count(cfg, &q);
	ck_assert(!q.lm_head);
	cJSON_DeleteItemFromObject(qc, "ignore");
	skip = count(cfg, &q);
	ck_assert(q.lm_head);
	ck_assert_int_eq(all.dense - skip.dense, 128256LL * 4096 * 2);
	cJSON_Delete(cfg);
}
END_TEST

/* Asserts that cfg with quantization_config qc is refused naming field. */
static void assert_refused(const char *qc, const char *field)
{
	char text[1024];
	cJSON *cfg;
	struct hfq_config q;
	struct api_reply r = {0};
	cJSON *j, *e;

	snprintf(text, sizeof(text), "{\"model_type\":\"llama\",\"quantization_config\":%s}", qc);
	cfg = cJSON_Parse(text);
	ck_assert_ptr_nonnull(cfg);
	ck_assert_msg(api_hf_quant_from_config(cfg, "model", &q, &r) < 0, "%s was accepted", qc);
	ck_assert_int_eq(r.status, 422);
	j = cJSON_Parse(r.body);
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "field")->valuestring, field);
	cJSON_Delete(j);
	cJSON_Delete(cfg);
	api_reply_reset(&r);
}

START_TEST(bad_quantization_configs_are_422s_naming_the_field)
{
	assert_refused("\"awq\"", "model.quantization_config");
	assert_refused("{}", "model.quantization_config.quant_method");
	assert_refused("{\"quant_method\":\"hqq\"}", "model.quantization_config.quant_method");
	assert_refused("{\"quant_method\":\"gptq\",\"bits\":5}", "model.quantization_config.bits");
	assert_refused("{\"quant_method\":\"gptq\",\"bits\":4.5}",
		       "model.quantization_config.bits");
	assert_refused("{\"quant_method\":\"awq\",\"group_size\":0}",
		       "model.quantization_config.group_size");
	assert_refused("{\"quant_method\":\"awq\",\"modules_to_not_convert\":\"lm_head\"}",
		       "model.quantization_config.modules_to_not_convert");
	assert_refused("{\"quant_method\":\"bitsandbytes\",\"load_in_4bit\":false}",
		       "model.quantization_config.load_in_4bit");
	assert_refused("{\"quant_method\":\"bitsandbytes\",\"load_in_4bit\":true,"
		       "\"bnb_4bit_quant_type\":\"int4\"}",
		       "model.quantization_config.bnb_4bit_quant_type");
	assert_refused("{\"quant_method\":\"fp8\",\"weight_block_size\":[128]}",
		       "model.quantization_config.weight_block_size");
	assert_refused("{\"quant_method\":\"compressed-tensors\"}",
		       "model.quantization_config.config_groups");
	assert_refused("{\"quant_method\":\"compressed-tensors\",\"config_groups\":{\"g\":"
		       "{\"weights\":{\"num_bits\":4,\"strategy\":\"rows\"}}}}",
		       "model.quantization_config.config_groups.g.weights.strategy");
}
END_TEST

Suite *model_quant_suite(void)
{
	Suite *s = suite_create("model_quant");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, published_checkpoint_sizes_within_three_percent);
	tcase_add_test(tc, awq_and_gptq_store_packed_weights_group_scales_and_zeros);
	tcase_add_test(tc, bitsandbytes_fp8_and_mxfp4_layouts);
	tcase_add_test(tc, modules_to_not_convert_stay_in_the_checkpoint_dtype);
	tcase_add_test(tc, bad_quantization_configs_are_422s_naming_the_field);
	suite_add_tcase(s, tc);
	return s;
}
