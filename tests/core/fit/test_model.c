/*
 * Architectures and parameter counts. The counts are computed from the tensors llama.cpp
 * would hold for each catalog model and compared with the totals (and, for MoE models, the
 * active counts) their publishers give, as profiles/models.json cites them. A published figure
 * is itself rounded: "2.4B" stands for 2.35 to 2.45, so half a unit of its last digit (taken to
 * at least two significant digits) is allowed on top of the 2%.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/model.h"
#include "tests/memory_calib.h"
#include "tests/test.h"

static struct model_catalog *catalog(void)
{
	struct model_catalog *c = mc_catalog_load(t_src_dir());

	ck_assert_msg(c != NULL, "profiles/models.json does not load");
	return c;
}

/* 2% plus half a unit of the published figure's last digit (at least 2 significant digits). */
static double tolerance(double published)
{
	double unit = 1;
	int k = 0;

	while (k < 6 && fabs(published * pow(10, k) - round(published * pow(10, k))) > 1e-6)
		k++;
	unit = pow(10, -k);
	if (k == 0 && published < 10)
		unit = 0.1; /* "1" written for 1.0 */
	if (published / unit < 10)
		unit /= 10;
	return 0.02 + 0.5 * unit / published;
}

START_TEST(catalog_has_the_models_the_issue_and_seeds_name)
{
	static const char *const need[] = {
		"meta-llama/Llama-2-7b-hf",
		"meta-llama/Llama-2-13b-hf",
		"meta-llama/Llama-2-70b-hf",
		"meta-llama/Meta-Llama-3-8B",
		"meta-llama/Meta-Llama-3-70B",
		"llama-3.1-8b",
		"llama-3.1-70b",
		"llama-3.1-405b",
		"llama-3.2-1b",
		"llama-3.2-3b",
		"llama-3.3-70b",
		"mistral-7b",
		"mistral-small-24b",
		"mistralai/Mistral-Small-3.1-24B-Base-2503",
		"mixtral-8x7b",
		"mixtral-8x22b",
		"qwen2.5-0.5b",
		"qwen2.5-1.5b",
		"qwen2.5-3b",
		"qwen2.5-7b",
		"qwen2.5-14b",
		"qwen2.5-32b",
		"qwen2.5-72b",
		"qwen3-0.6b",
		"qwen3-1.7b",
		"qwen3-4b",
		"qwen3-8b",
		"qwen3-14b",
		"qwen3-32b",
		"qwen3-30b-a3b",
		"gemma-2-2b",
		"gemma-2-9b",
		"gemma-2-27b",
		"gemma-3-1b",
		"gemma-3-4b",
		"gemma-3-12b",
		"gemma-3-27b",
		"phi-3-mini",
		"phi-3-medium",
		"phi-3.5-mini",
		"phi-4",
		"deepseek-v2-lite",
		"gpt-oss-20b",
		"gpt-oss-120b",
		"llama-4-scout",
		"llama-4-maverick",
		"smollm2-135m",
		"smollm2-360m",
		"smollm2-1.7b",
		"tinyllama",
		"google/flan-t5-large",
		"roberta-base",
		"deepset/roberta-base-squad2",
		/* the seeds */
		"qwen/Qwen2.5-3B",
		"meta-llama/Llama-3.1-8B-Instruct",
		"meta-llama/Llama-4-Maverick-17B-128E-Instruct",
		"qwen/Qwen2.5-32B",
		"qwen/Qwen2.5-7B",
		"Qwen/Qwen3-8B",
		/* the second round of the catalog */
		"zai-org/GLM-4.5",
		"zai-org/GLM-4.5-Air",
		"meta-llama/Llama-3.2-11B-Vision-Instruct",
		"meta-llama/Llama-3.2-90B-Vision-Instruct",
	};
	struct model_catalog *c = catalog();

	ck_assert_uint_ge(c->n, 40);
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		ck_assert_msg(model_catalog_find(c, need[i]) != NULL, "%s is not in the catalog",
			      need[i]);
	model_catalog_free(c);
}
END_TEST

START_TEST(params_match_published_counts)
{
	struct model_catalog *c = catalog();
	int checked = 0, checked_active = 0, bad = 0;

	printf("\n%-46s %9s %9s %7s %9s %9s %7s\n", "model", "total_b", "publ_b", "err", "active_b",
	       "publ_b", "err");
	for (size_t i = 0; i < c->n; i++) {
		const struct model_entry *e = &c->models[i];
		struct model_params p;
		double total, err, active, aerr = 0;
		ck_assert_int_eq(model_param_counts(&e->arch, &p), 0);
		ck_assert_int_gt(p.total, 0);
		ck_assert_int_le(p.active, p.total);
		total = (double)p.total / 1e9;
		active =
			(double)(p.active - (e->active_excludes_embedding ? p.embedding : 0)) / 1e9;
		err = e->params_b > 0 ? mc_rel(total, e->params_b) : 0;
		if (e->active_params_b > 0)
			aerr = mc_rel(active, e->active_params_b);
		printf("%-46s %9.3f ", e->id, total);
		if (e->params_b > 0)
			printf("%9.3f %+6.2f%% ", e->params_b, 100 * err);
		else
			printf("%9s %7s ", "-", "-");
		if (e->active_params_b > 0)
			printf("%9.3f %9.3f %+6.2f%%\n", active, e->active_params_b, 100 * aerr);
		else
			printf("%9s\n", "-");
		if (e->params_b > 0) {
			checked++;
			if (fabs(err) > tolerance(e->params_b)) {
				bad++;
				fprintf(stderr, "%s: total %.3f B vs published %.3f B\n", e->id,
					total, e->params_b);
			}
		}
		if (e->active_params_b > 0) {
			checked_active++;
			if (fabs(aerr) > tolerance(e->active_params_b)) {
				bad++;
				fprintf(stderr, "%s: active %.3f B vs published %.3f B\n", e->id,
					active, e->active_params_b);
			}
		}
	}
	printf("%d totals and %d active counts checked\n", checked, checked_active);
	/* Every entry states its published total, and every one is checked. */
	ck_assert_int_eq(checked, (int)c->n);
	ck_assert_int_ge(checked_active, 8);
	ck_assert_int_eq(bad, 0);
	model_catalog_free(c);
}
END_TEST

START_TEST(moe_active_counts)
{
	static const struct {
		const char *id;
		double active_b;
	} moe[] = {
		{"mixtral-8x7b", 12.9}, {"qwen3-30b-a3b", 3.3}, {"deepseek-v2-lite", 2.4},
		{"gpt-oss-20b", 3.61},  {"gpt-oss-120b", 5.13}, {"mixtral-8x22b", 39},
	};
	struct model_catalog *c = catalog();

	for (size_t i = 0; i < sizeof(moe) / sizeof(moe[0]); i++) {
		const struct model_entry *e = model_catalog_find(c, moe[i].id);
		struct model_params p;
		double active;
		ck_assert_ptr_nonnull(e);
		ck_assert_int_eq(model_param_counts(&e->arch, &p), 0);
		active =
			(double)(p.active - (e->active_excludes_embedding ? p.embedding : 0)) / 1e9;
		ck_assert_msg(fabs(mc_rel(active, moe[i].active_b)) <= tolerance(moe[i].active_b),
			      "%s: active %.3f B", moe[i].id, active);
		ck_assert_int_gt(p.expert, 0);
		ck_assert_int_lt(p.active, p.total / 2);
	}
	model_catalog_free(c);
}
END_TEST

START_TEST(layers_sum_and_the_parts)
{
	struct model_catalog *c = catalog();
	const struct model_entry *e = model_catalog_find(c, "llama-3.1-8b");
	struct model_params p;
	int64_t sum = 0;

	ck_assert_int_eq(model_param_counts(&e->arch, &p), 0);
	for (int64_t il = 0; il < e->arch.n_layers; il++)
		sum += model_layer_params(&e->arch, il);
	ck_assert_int_eq(sum, p.layers);
	ck_assert_int_eq(p.total, p.layers + p.embedding + p.output + 4096 /* output_norm */);
	/* 128256 x 4096 each for the embedding and the untied head. */
	ck_assert_int_eq(p.embedding, 525336576);
	ck_assert_int_eq(p.output, 525336576);
	/* q 4096x4096, k and v 4096x1024, o 4096x4096, 3 x 4096x14336, 2 norms */
	ck_assert_int_eq(p.layer_max, 2 * 16777216 + 2 * 4194304 + 3 * 58720256 + 2 * 4096);
	ck_assert_int_eq(model_layer_params(&e->arch, -1), 0);
	ck_assert_int_eq(model_layer_params(&e->arch, 32), 0);

	/* Tied embeddings are counted once: Llama 3.2 1B has no separate head. */
	e = model_catalog_find(c, "llama-3.2-1b");
	ck_assert_int_eq(model_param_counts(&e->arch, &p), 0);
	ck_assert_int_eq(p.output, 0);
	model_catalog_free(c);
}
END_TEST

START_TEST(tensors_as_llama_cpp_names_them)
{
	struct model_catalog *c = catalog();
	const struct model_entry *e = model_catalog_find(c, "llama-3.1-8b");
	struct rf_tensor_list l;
	bool out = false, v0 = false;

	ck_assert_int_eq(model_tensors(&e->arch, &l), 0);
	/* token_embd, 9 per layer, output_norm, output: what llama.cpp loads (bar rope_freqs). */
	ck_assert_uint_eq(l.n, 1 + 32 * 9 + 2);
	for (size_t i = 0; i < l.n; i++) {
		if (strcmp(l.t[i].name, "output.weight") == 0) {
			out = true;
			ck_assert_int_eq(l.t[i].cat, RF_TC_OUTPUT);
			ck_assert_int_eq(l.t[i].layer, RF_LAYER_OUTPUT);
		}
		if (strcmp(l.t[i].name, "blk.0.attn_v.weight") == 0) {
			v0 = true;
			ck_assert_int_eq(l.t[i].layer, 0);
			ck_assert_int_eq(l.t[i].type, RF_GT_F16);
			ck_assert_int_eq(l.t[i].ne[0], 4096);
			ck_assert_int_eq(l.t[i].ne[1], 1024);
			ck_assert_uint_eq(l.t[i].bytes, 4096u * 1024u * 2u);
		}
		if (strcmp(l.t[i].name, "blk.3.attn_norm.weight") == 0)
			ck_assert_int_eq(l.t[i].type, RF_GT_F32);
	}
	ck_assert(out && v0);
	rf_tensor_list_free(&l);
	rf_tensor_list_free(&l); /* freeing twice is harmless */

	/* A tied model has no output.weight; MoE experts are stacked 3-D tensors. */
	e = model_catalog_find(c, "qwen3-30b-a3b");
	ck_assert_int_eq(model_tensors(&e->arch, &l), 0);
	for (size_t i = 0; i < l.n; i++)
		if (strcmp(l.t[i].name, "blk.5.ffn_down_exps.weight") == 0) {
			ck_assert(l.t[i].expert);
			ck_assert_int_eq(l.t[i].ne[0], 768);
			ck_assert_int_eq(l.t[i].ne[1], 2048);
			ck_assert_int_eq(l.t[i].ne[2], 128);
		}
	rf_tensor_list_free(&l);
	e = model_catalog_find(c, "gemma-3-1b");
	ck_assert_int_eq(model_tensors(&e->arch, &l), 0);
	for (size_t i = 0; i < l.n; i++)
		ck_assert_str_ne(l.t[i].name, "output.weight");
	rf_tensor_list_free(&l);
	model_catalog_free(c);
}
END_TEST

START_TEST(windowed_layers_as_llama_cpp_runs_them)
{
	struct model_catalog *c = catalog();
	const struct model_entry *g2 = model_catalog_find(c, "gemma-2-9b");
	const struct model_entry *g3 = model_catalog_find(c, "gemma-3-27b");
	const struct model_entry *oss = model_catalog_find(c, "gpt-oss-20b");
	const struct model_entry *l4 = model_catalog_find(c, "llama-4-scout");
	const struct model_entry *mis = model_catalog_find(c, "mistral-7b");
	const struct model_entry *phi = model_catalog_find(c, "phi-3-mini");
	int n = 0;

	/* Gemma 2: local and global alternate, local first. */
	ck_assert(model_layer_is_swa(&g2->arch, 0));
	ck_assert(!model_layer_is_swa(&g2->arch, 1));
	/* Gemma 3: five local layers, then a global one. */
	for (int64_t il = 0; il < g3->arch.n_layers; il++)
		n += model_layer_is_swa(&g3->arch, il);
	ck_assert_int_eq(n, 62 - 10);
	ck_assert(!model_layer_is_swa(&g3->arch, 5));
	ck_assert(model_layer_is_swa(&oss->arch, 0) && !model_layer_is_swa(&oss->arch, 1));
	ck_assert(model_layer_is_swa(&l4->arch, 2) && !model_layer_is_swa(&l4->arch, 3));
	ck_assert(l4->arch.swa_chunked);
	/* llama.cpp runs Mistral's and Phi-3's configured windows as full attention. */
	ck_assert_int_eq(mis->arch.sliding_window, 4096);
	ck_assert(!model_layer_is_swa(&mis->arch, 0));
	ck_assert(!model_layer_is_swa(&phi->arch, 0));
	/* Llama 4 Maverick alternates dense and MoE layers. */
	l4 = model_catalog_find(c, "llama-4-maverick");
	ck_assert(!model_layer_is_moe(&l4->arch, 0) && model_layer_is_moe(&l4->arch, 1));
	/* DeepSeek-V2-Lite: layer 0 dense. */
	ck_assert(!model_layer_is_moe(&model_catalog_find(c, "deepseek-v2-lite")->arch, 0));
	ck_assert(model_layer_is_moe(&model_catalog_find(c, "deepseek-v2-lite")->arch, 1));
	model_catalog_free(c);
}
END_TEST

static struct model_arch small_llama(void)
{
	struct model_arch a;

	model_arch_init(&a);
	snprintf(a.model_type, sizeof(a.model_type), "llama");
	snprintf(a.llm_arch, sizeof(a.llm_arch), "llama");
	a.hidden_size = 256;
	a.n_layers = 2;
	a.n_heads = 4;
	a.n_kv_heads = 2;
	a.intermediate_size = 512;
	a.vocab_size = 1000;
	return a;
}

START_TEST(validation_names_the_field)
{
	struct model_arch a = small_llama();
	const char *f = NULL;

	ck_assert_int_eq(model_arch_validate(&a, &f), 0);
	ck_assert_int_eq(a.head_dim, 64); /* hidden / heads */
	ck_assert_int_eq(a.v_head_dim, 64);

	a = small_llama();
	a.n_layers = 0;
	ck_assert_int_eq(model_arch_validate(&a, &f), RF_E_INVALID_VALUE);
	ck_assert_str_eq(f, "num_hidden_layers");
	a = small_llama();
	a.n_layers = 4000000000LL;
	ck_assert_int_eq(model_arch_validate(&a, &f), RF_E_INVALID_VALUE);
	ck_assert_str_eq(f, "num_hidden_layers");
	a = small_llama();
	a.n_kv_heads = 3;
	ck_assert_int_eq(model_arch_validate(&a, &f), RF_E_INVALID_VALUE);
	ck_assert_str_eq(f, "num_key_value_heads");
	a = small_llama();
	a.vocab_size = 20000000;
	ck_assert_int_eq(model_arch_validate(&a, &f), RF_E_INVALID_VALUE);
	ck_assert_str_eq(f, "vocab_size");
	a = small_llama();
	a.intermediate_size = -5;
	ck_assert_int_eq(model_arch_validate(&a, &f), RF_E_INVALID_VALUE);
	ck_assert_str_eq(f, "intermediate_size");
	a = small_llama();
	a.n_experts = 8;
	a.n_experts_per_tok = 9;
	a.moe_intermediate_size = 128;
	ck_assert_int_eq(model_arch_validate(&a, &f), RF_E_INVALID_VALUE);
	ck_assert_str_eq(f, "num_experts_per_tok");
	a = small_llama();
	a.hidden_size = -1;
	ck_assert_int_eq(model_arch_validate(&a, &f), RF_E_INVALID_VALUE);
	ck_assert_str_eq(f, "hidden_size");

	/* An invalid architecture has no tensors and no counts. */
	{
		struct rf_tensor_list l = {0};
		struct model_params p;
		a = small_llama();
		a.n_heads = 0;
		ck_assert_int_eq(model_tensors(&a, &l), RF_E_INVALID_VALUE);
		ck_assert_ptr_null(l.t);
		ck_assert_int_eq(model_param_counts(&a, &p), RF_E_INVALID_VALUE);
	}
}
END_TEST

START_TEST(catalog_lookup_is_exact)
{
	struct model_catalog *c = catalog();
	const struct model_entry *e = model_catalog_find(c, "META-LLAMA/LLAMA-3.1-8B-INSTRUCT");

	ck_assert_ptr_nonnull(e);
	ck_assert_str_eq(e->id, "meta-llama/Llama-3.1-8B");
	ck_assert_ptr_eq(model_catalog_find(c, "llama-3.1-8b"), e);
	ck_assert_ptr_null(model_catalog_find(c, "llama-3.1"));
	ck_assert_ptr_null(model_catalog_find(c, "llama-3.1-8b "));
	ck_assert_ptr_null(model_catalog_find(c, "3.1-8b"));
	ck_assert_ptr_null(model_catalog_find(c, ""));
	ck_assert_ptr_null(model_catalog_find(c, NULL));
	ck_assert_ptr_null(model_catalog_find(NULL, "llama-3.1-8b"));
	ck_assert_uint_eq(model_task_from_name("summarization"), MODEL_TASK_SUMMARIZATION);
	ck_assert_uint_eq(model_task_from_name("Summarization"), 0);
	ck_assert_str_eq(model_task_name(MODEL_TASK_EXTRACTIVE_QA),
			 "extractive-question-answering");
	ck_assert_ptr_null(model_task_name(1u << 20));
	model_catalog_free(c);
	model_catalog_free(NULL);
}
END_TEST

Suite *model_suite(void)
{
	Suite *s = suite_create("model");
	TCase *tc = tcase_create("model");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, catalog_has_the_models_the_issue_and_seeds_name);
	tcase_add_test(tc, params_match_published_counts);
	tcase_add_test(tc, moe_active_counts);
	tcase_add_test(tc, layers_sum_and_the_parts);
	tcase_add_test(tc, tensors_as_llama_cpp_names_them);
	tcase_add_test(tc, windowed_layers_as_llama_cpp_runs_them);
	tcase_add_test(tc, validation_names_the_field);
	tcase_add_test(tc, catalog_lookup_is_exact);
	suite_add_tcase(s, tc);
	return s;
}
