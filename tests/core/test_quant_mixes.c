/*
 * Quantization mixes as llama-quantize writes them, checked against published file sizes:
 * gpt-oss keeps its routed experts in MXFP4 whatever the scheme (the checkpoint ships them so,
 * and every published gpt-oss GGUF keeps them), so its files differ by the non-expert tensors
 * only. Sizes within 3%.
 */
#include <math.h>
#include <stdlib.h>

#include "core/estimate.h"
#include "core/model.h"
#include "core/quant.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static double scheme_bytes(const struct model_catalog *c, const char *id, const char *quant)
{
	const struct model_entry *m = model_catalog_find(c, id);
	struct rf_mem_weights *w = malloc(sizeof(*w));
	double bytes;

	ck_assert_ptr_nonnull(m);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(rf_weights_from_scheme(&m->arch, rf_ftype_from_name(quant), -1, w), 0);
	bytes = (double)w->file_bytes;
	free(w);
	return bytes;
}

START_TEST(gpt_oss_files_keep_mxfp4_experts)
{
	struct device_table devices;
	struct model_catalog *models = NULL;
	/* Published files: bartowski/openai_gpt-oss-20b-GGUF README (llama.cpp b6096: "All quants
	 * keep the feed forward networks at mxfp4"): MXFP4 12.1 GB, Q6_K 12.04 GB; unsloth
	 * gpt-oss-120b F16 as llama-bench prints it, 60.87 GiB (community.frame.work thread
	 * "Will the AI Max+ 395 (128GB) be able to run gpt-oss-120b", post 26). */
	const struct {
		const char *id, *quant;
		double bytes;
	} rows[] = {
		{"openai/gpt-oss-20b", "MXFP4_MOE", 12.1e9},
		{"openai/gpt-oss-20b", "Q6_K", 12.04e9},
		{"openai/gpt-oss-120b", "F16", 60.87 * GIB},
	};
	static const char *const every[] = {"F16",  "Q8_0",   "Q6_K", "Q5_K_M", "Q4_K_M",
					    "Q4_0", "Q3_K_M", "Q2_K", "IQ4_XS"};

	t_profiles_load(&devices, &models, NULL);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		double b = scheme_bytes(models, rows[i].id, rows[i].quant);
		ck_assert_msg(fabs(b / rows[i].bytes - 1) <= 0.03, "%s %s: %.2f GB, published %.2f",
			      rows[i].id, rows[i].quant, b / 1e9, rows[i].bytes / 1e9);
	}
	/* Every published gpt-oss-20b GGUF, F16 to Q2_K, is 11.5-13.8 GB. */
	for (size_t i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
		double b = scheme_bytes(models, "openai/gpt-oss-20b", every[i]);
		ck_assert_msg(b >= 11.5e9 * 0.97 && b <= 13.8e9 * 1.03, "gpt-oss-20b %s: %.2f GB",
			      every[i], b / 1e9);
	}
	/* A model whose experts are not MXFP4 is quantized whole: Qwen3-30B-A3B in Q8_0 is
	 * about twice its Q4_K_M. */
	ck_assert(scheme_bytes(models, "Qwen/Qwen3-30B-A3B", "Q8_0") >
		  1.6 * scheme_bytes(models, "Qwen/Qwen3-30B-A3B", "Q4_K_M"));
	t_profiles_free(&devices, &models, NULL);
}
END_TEST

Suite *quant_mixes_suite(void)
{
	Suite *s = suite_create("quant_mixes");
	TCase *tc = tcase_create("published_sizes");

	tcase_add_test(tc, gpt_oss_files_keep_mxfp4_experts);
	suite_add_tcase(s, tc);
	return s;
}
