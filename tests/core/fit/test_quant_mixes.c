/*
 * Quantization mixes as llama-quantize writes them, checked against published file sizes:
 * gpt-oss keeps its routed experts in MXFP4 whatever the scheme (the checkpoint ships them so,
 * and every published gpt-oss GGUF keeps them), so its files differ by the non-expert tensors
 * only. Sizes within 3%.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fit/estimate.h"
#include "core/fit/gguf.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "tests/core/fit/cpu/gguf_synth.h"
#include "tests/api/profiles_fixture.h"
#include "tests/csv.h"
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

/* Unsloth's dynamic quants by name, against the published files of
 * tests/fixtures/gguf_sizes/unsloth_dynamic.csv (each row with its source): within 3% (use
 * "assert"); the three January 2025 DeepSeek-R1 quants, made by hand before Dynamic 2.0 with
 * other down_proj bits, within 10% (use "check": -4.5%, -8.6%, +8.6% today). */
START_TEST(unsloth_dynamic_quants_by_name_match_published_files)
{
	struct device_table devices;
	struct model_catalog *models = NULL;
	char *path = t_path(t_src_dir(), "tests/fixtures/gguf_sizes/unsloth_dynamic.csv");
	struct t_csv *c = t_csv_read(path);
	int models_seen = 0, types_seen = 0, misses = 0;
	char seen_m[16][64], seen_t[16][32];

	ck_assert_ptr_nonnull(c);
	t_profiles_load(&devices, &models, NULL);
	for (int r = 0; r < c->n_rows; r++) {
		const char *id = t_csv_get(c, r, "model"), *quant = t_csv_get(c, r, "quant");
		double want, got, ud, base;
		bool new_m = true, new_t = true;
		ck_assert_int_eq(t_csv_num(c, r, "file_bytes", &want), 0);
		ck_assert_msg(t_csv_get(c, r, "source")[0], "row %d has no source", r + 2);
		got = scheme_bytes(models, id, quant);
		fprintf(stderr, "%s %s: %.3f GB, published %.3f (%+.1f%%)\n", id, quant, got / 1e9,
			want / 1e9, 100 * (got / want - 1));
		if (fabs(got / want - 1) >
		    (strcmp(t_csv_get(c, r, "use"), "assert") == 0 ? 0.03 : 0.10))
			misses++;
		/* The name is not an alias: the dynamic mix differs from its base scheme. */
		ud = got;
		base = scheme_bytes(models, id,
				    rf_ftype_name(rf_ftype_from_name(quant) & ~RF_FT_UD));
		ck_assert_msg(fabs(ud - base) > 1e6, "%s %s sized as its base scheme", id, quant);
		for (int k = 0; k < models_seen; k++)
			new_m = new_m && strcmp(seen_m[k], id) != 0;
		for (int k = 0; k < types_seen; k++)
			new_t = new_t && strcmp(seen_t[k], quant) != 0;
		if (strcmp(t_csv_get(c, r, "use"), "assert") != 0)
			continue; /* only the rows held to 3% count below */
		if (new_m && models_seen < 16)
			snprintf(seen_m[models_seen++], sizeof(seen_m[0]), "%s", id);
		if (new_t && types_seen < 16)
			snprintf(seen_t[types_seen++], sizeof(seen_t[0]), "%s", quant);
	}
	ck_assert_int_eq(misses, 0);
	ck_assert_int_ge(models_seen, 3);
	ck_assert_int_ge(types_seen, 3);
	t_profiles_free(&devices, &models, NULL);
	t_csv_free(c);
	free(path);
}
END_TEST

/* A UD file read from its header: its tensors carry their own types, so the GGUF path sizes
 * the real mix, whatever general.file_type (the base scheme's) says. A small qwen3moe file
 * typed as UD-Q4_K_XL (6-bit embeddings, attention and output around 4-bit experts). */
START_TEST(a_ud_gguf_is_sized_by_its_tensors)
{
	char *dir = t_mkdtemp(), *path = t_path(dir, "ud.gguf");
	struct model_arch a, back;
	struct gguf_file *f = NULL;
	struct rf_mem_weights *w = malloc(sizeof(*w)), *m = malloc(sizeof(*m));
	const char *field = NULL;
	char msg[160];
	size_t len;
	char *buf;
	int embd = -1, attn_q = -1, gate_exps = -1;

	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(m);
	model_arch_init(&a);
	snprintf(a.llm_arch, sizeof(a.llm_arch), "qwen3moe");
	snprintf(a.model_type, sizeof(a.model_type), "qwen3moe");
	a.hidden_size = 256;
	a.n_layers = 2;
	a.n_heads = 4;
	a.n_kv_heads = 2;
	a.head_dim = 64;
	a.vocab_size = 2048;
	a.max_position_embeddings = 32768;
	a.qk_norm = true;
	a.n_experts = 8;
	a.n_experts_per_tok = 2;
	a.moe_intermediate_size = 256;
	ck_assert_int_eq(model_arch_validate(&a, &field), 0);
	ck_assert_msg(gguf_synth_write(path, &a, RF_FT_Q4_K_M | RF_FT_UD, 3, msg, sizeof(msg)) == 0,
		      "%s", msg);
	buf = t_read_file(path, &len);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(gguf_parse(buf, len, len, &f, msg, sizeof(msg)), 0);
	ck_assert_int_eq(gguf_file_type(f), RF_FT_Q4_K_M); /* what Unsloth's files say */
	for (uint64_t i = 0; i < f->n_tensors; i++) {
		const struct rf_tensor *t = &f->tensors[i];
		if (strcmp(t->name, "token_embd.weight") == 0)
			embd = t->type;
		else if (strcmp(t->name, "blk.0.attn_q.weight") == 0)
			attn_q = t->type;
		else if (strcmp(t->name, "blk.0.ffn_gate_exps.weight") == 0)
			gate_exps = t->type;
	}
	ck_assert_int_eq(embd, RF_GT_Q6_K);
	ck_assert_int_eq(attn_q, RF_GT_Q6_K);
	ck_assert_int_eq(gate_exps, RF_GT_Q4_K);
	ck_assert_int_eq(gguf_to_arch(f, &back, msg, sizeof(msg)), 0);
	ck_assert_int_eq(rf_weights_from_tensors(&back, f->tensors, (size_t)f->n_tensors, w), 0);
	ck_assert_uint_eq(w->file_bytes, f->data_bytes);
	/* The name gives the same bytes as the file; its base scheme does not. */
	ck_assert_int_eq(rf_weights_from_scheme(&a, RF_FT_Q4_K_M | RF_FT_UD, -1, m), 0);
	ck_assert_uint_eq(m->file_bytes, w->file_bytes);
	ck_assert_int_eq(rf_weights_from_scheme(&a, RF_FT_Q4_K_M, -1, m), 0);
	ck_assert_uint_ne(m->file_bytes, w->file_bytes);
	gguf_free(f);
	free(buf);
	free(w);
	free(m);
	remove(path);
	remove(dir);
	free(path);
	free(dir);
}
END_TEST

START_TEST(unsloth_dynamic_names_parse_both_ways)
{
	ck_assert_int_eq(rf_ftype_from_name("UD-Q4_K_XL"), RF_FT_Q4_K_M | RF_FT_UD);
	ck_assert_int_eq(rf_ftype_from_name("ud-iq1_s"), RF_FT_IQ1_S | RF_FT_UD);
	ck_assert_int_eq(rf_ftype_from_name("Q2_K_XL"), RF_FT_Q2_K | RF_FT_UD);
	ck_assert_int_eq(rf_ftype_from_name("IQ1_S"), RF_FT_IQ1_S); /* llama-quantize's own */
	ck_assert_str_eq(rf_ftype_name(RF_FT_Q8_0 | RF_FT_UD), "UD-Q8_K_XL");
	ck_assert_int_eq(rf_ftype_default_type(RF_FT_Q4_K_M | RF_FT_UD), RF_GT_Q4_K);
	ck_assert(rf_ftype_needs_imatrix(RF_FT_Q4_K_M | RF_FT_UD));
	/* Unsloth publishes no UD-Q4_0: the flag on it is no scheme. */
	ck_assert_int_eq(rf_ftype_from_name("UD-Q4_0"), -1);
	ck_assert_ptr_null(rf_ftype_name(RF_FT_Q4_0 | RF_FT_UD));
	ck_assert_int_eq(rf_ftype_default_type(RF_FT_Q4_0 | RF_FT_UD), -1);
}
END_TEST

Suite *quant_mixes_suite(void)
{
	Suite *s = suite_create("quant_mixes");
	TCase *tc = tcase_create("published_sizes");

	tcase_add_test(tc, gpt_oss_files_keep_mxfp4_experts);
	tcase_add_test(tc, unsloth_dynamic_quants_by_name_match_published_files);
	tcase_add_test(tc, unsloth_dynamic_names_parse_both_ways);
	tcase_add_test(tc, a_ud_gguf_is_sized_by_its_tensors);
	suite_add_tcase(s, tc);
	return s;
}
