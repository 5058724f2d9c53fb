/*
 * vLLM's KV-cache capacity against the start-up logs people published
 * (tests/fixtures/vllm/kv_capacity.csv, sources in SOURCE.md): the weights per GPU, the KV
 * cache tokens and the maximum concurrency computed from the settings and the architecture
 * alone, within 10% of what vLLM printed (RIGFIT_SHOW_ROWS=1 prints every row's errors); then the mechanism (tensor and pipeline parallel
 * shards, KV heads replicated, the utilisation trade-off, refusals) and the input checks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/serve_vllm.h"
#include "tests/api/profiles_fixture.h"
#include "tests/csv.h"
#include "tests/test.h"

#define MIB (1024LL * 1024LL)
#define GIB (1024.0 * 1024.0 * 1024.0)

static double num(const struct t_csv *t, int r, const char *col)
{
	double v = 0;
	ck_assert_msg(t_csv_num(t, r, col, &v) == 0, "row %d: %s is not a number", r, col);
	return v;
}

static double num_or(const struct t_csv *t, int r, const char *col, double dflt)
{
	double v;
	return t_csv_num(t, r, col, &v) == 0 ? v : dflt;
}

static struct model_arch row_arch(const struct t_csv *t, int r)
{
	struct model_arch a;
	const char *bad = NULL;

	model_arch_init(&a);
	snprintf(a.model_type, sizeof(a.model_type), "llama");
	snprintf(a.llm_arch, sizeof(a.llm_arch), "llama");
	a.hidden_size = (int64_t)num(t, r, "hidden");
	a.n_layers = (int64_t)num(t, r, "layers");
	a.n_heads = (int64_t)num(t, r, "heads");
	a.n_kv_heads = (int64_t)num(t, r, "kv_heads");
	a.head_dim = (int64_t)num(t, r, "head_dim");
	a.intermediate_size = (int64_t)num(t, r, "intermediate");
	a.vocab_size = (int64_t)num(t, r, "vocab");
	a.tie_word_embeddings = num(t, r, "tied") > 0;
	a.n_experts = (int64_t)num(t, r, "experts");
	a.n_experts_per_tok = (int64_t)num(t, r, "topk");
	a.moe_intermediate_size = (int64_t)num(t, r, "moe_intermediate");
	a.max_position_embeddings = (int64_t)num(t, r, "max_pos");
	if (a.n_experts > 1)
		a.intermediate_size = 0; /* every layer is MoE */
	ck_assert_msg(model_arch_validate(&a, &bad) == 0, "row %d: %s", r, bad ? bad : "?");
	return a;
}

static struct vllm_setup row_setup(const struct t_csv *t, int r)
{
	struct vllm_setup s;

	vllm_setup_default(&s);
	s.precision = vllm_precision_parse(t_csv_get(t, r, "precision"));
	ck_assert_int_ge(s.precision, 0);
	s.kv_dtype = strcmp(t_csv_get(t, r, "kv_dtype"), "fp8") == 0 ? VLLM_KV_FP8 : VLLM_KV_AUTO;
	s.tensor_parallel = (int)num(t, r, "tp");
	s.pipeline_parallel = (int)num(t, r, "pp");
	s.gpu_memory_utilization = num(t, r, "util");
	s.max_model_len = (int64_t)num(t, r, "max_model_len");
	s.max_num_batched_tokens = (int64_t)num_or(t, r, "max_num_batched_tokens", 0);
	s.max_num_seqs = (int64_t)num_or(t, r, "max_num_seqs", 0);
	return s;
}

static struct t_csv *load(void)
{
	char *path = t_path(t_src_dir(), "tests/fixtures/vllm/kv_capacity.csv");
	struct t_csv *t = t_csv_read(path);

	ck_assert_msg(t != NULL, "cannot read %s", path);
	free(path);
	return t;
}

static void gpus_of(const struct t_csv *t, int r, struct vllm_gpu *g, int n)
{
	for (int i = 0; i < n; i++) {
		g[i].total_bytes = (int64_t)num(t, r, "gpu_total_mib") * MIB;
		g[i].free_bytes = -1;
		g[i].a100 = false;
	}
}

START_TEST(logged_capacity_is_reproduced_within_ten_percent)
{
	struct t_csv *t = load();
	int checked = 0, models = 0;
	double worst = 0;
	char last_model[128] = "";

	ck_assert_int_ge(t->n_rows, 5);
	for (int r = 0; r < t->n_rows; r++) {
		struct model_arch a = row_arch(t, r);
		struct vllm_setup s = row_setup(t, r);
		struct vllm_gpu g[VLLM_MAX_GPUS];
		struct vllm_capacity c;
		const char *field = NULL;
		double tok = num(t, r, "logged_tokens"), w = num(t, r, "logged_weights_gib");
		double conc = num(t, r, "logged_concurrency"), e_tok, e_w, e_c;

		gpus_of(t, r, g, s.tensor_parallel * s.pipeline_parallel);
		ck_assert_int_eq(vllm_capacity(&a, &s, g, s.tensor_parallel * s.pipeline_parallel,
					       &c, &field),
				 0);
		e_tok = (double)c.kv_cache_tokens / tok - 1;
		e_w = (double)c.weights_bytes / GIB / w - 1;
		e_c = c.max_concurrency / conc - 1;
		if (getenv("RIGFIT_SHOW_ROWS"))
			fprintf(stderr, "%-24s tok %+6.1f%% w %+5.1f%% conc %+5.1f%% fits %d\n",
				t_csv_get(t, r, "row"), 100 * e_tok, 100 * e_w, 100 * e_c, c.fits);
		ck_assert_msg(fabs(e_tok) <= 0.10 && fabs(e_c) <= 0.10,
			      "%s: %lld KV tokens (logged %.0f, %+.1f%%), concurrency %.2f (logged "
			      "%.2f)",
			      t_csv_get(t, r, "row"), (long long)c.kv_cache_tokens, tok,
			      100 * e_tok, c.max_concurrency, conc);
		ck_assert_msg(fabs(e_w) <= 0.03, "%s: weights %.2f GiB per GPU, logged %.2f",
			      t_csv_get(t, r, "row"), (double)c.weights_bytes / GIB, w);
		/* vLLM refused the rows whose concurrency is below one request. */
		ck_assert_msg(c.fits == (conc >= 1.0), "%s: fits %d", t_csv_get(t, r, "row"),
			      c.fits);
		if (fabs(e_tok) > worst)
			worst = fabs(e_tok);
		if (strcmp(last_model, t_csv_get(t, r, "model")) != 0) {
			snprintf(last_model, sizeof(last_model), "%s", t_csv_get(t, r, "model"));
			models++;
		}
		checked++;
	}
	ck_assert_int_ge(checked, 5);
	ck_assert_int_ge(models, 5);
	t_csv_free(t);
}
END_TEST

/* Multi-head latent attention from the catalog's DeepSeek-V2-Lite: one latent row of 576 per
 * layer, the same on every rank. vLLM 0.19 on an H100 80GB at 0.95 and 8192 tokens logged
 * "Model loading took 29.43 GiB", "GPU KV cache size: 1,505,552 tokens" (llm-d-planner
 * accuracy/results/v0.19.0/logs/deepseek-ai-deepseek-v2---h100-80gb--tp1pp1dp1--8192.log). */
START_TEST(mla_capacity_from_the_catalog_matches_its_log)
{
	struct device_table devices;
	struct model_catalog *models = NULL;
	const struct model_entry *m;
	struct vllm_setup s;
	struct vllm_gpu g = {81559 * MIB, -1, false};
	struct vllm_capacity c;

	t_profiles_load(&devices, &models, NULL);
	m = model_catalog_find(models, "deepseek-ai/DeepSeek-V2-Lite");
	ck_assert_ptr_nonnull(m);
	vllm_setup_default(&s);
	s.gpu_memory_utilization = 0.95;
	s.max_model_len = 8192;
	ck_assert_int_eq(vllm_capacity(&m->arch, &s, &g, 1, &c, NULL), 0);
	ck_assert_int_eq(c.kv_bytes_per_token, 27 * 576 * 2);
	ck_assert_msg(fabs((double)c.kv_cache_tokens / 1505552 - 1) < 0.10, "%lld tokens",
		      (long long)c.kv_cache_tokens);
	ck_assert_msg(fabs((double)c.weights_bytes / GIB / 29.43 - 1) < 0.03, "%.2f GiB",
		      (double)c.weights_bytes / GIB);
	t_profiles_free(&devices, &models, NULL);
}
END_TEST

/* A dense 8B-class model as the fixtures' Llama 3.1 8B, for the mechanism tests. */
static struct model_arch llama8b(void)
{
	struct model_arch a;

	model_arch_init(&a);
	snprintf(a.model_type, sizeof(a.model_type), "llama");
	snprintf(a.llm_arch, sizeof(a.llm_arch), "llama");
	a.hidden_size = 4096;
	a.n_layers = 32;
	a.n_heads = 32;
	a.n_kv_heads = 8;
	a.head_dim = 128;
	a.intermediate_size = 14336;
	a.vocab_size = 128256;
	a.max_position_embeddings = 131072;
	ck_assert_int_eq(model_arch_validate(&a, NULL), 0);
	return a;
}

static struct vllm_capacity cap(const struct model_arch *a, const struct vllm_setup *s,
				int64_t gpu_mib, int n)
{
	struct vllm_gpu g[VLLM_MAX_GPUS];
	struct vllm_capacity c;

	for (int i = 0; i < n; i++) {
		g[i].total_bytes = gpu_mib * MIB;
		g[i].free_bytes = -1;
		g[i].a100 = false;
	}
	ck_assert_int_eq(vllm_capacity(a, s, g, n, &c, NULL), 0);
	return c;
}

START_TEST(parallelism_shards_weights_and_kv)
{
	struct model_arch a = llama8b();
	struct vllm_setup s;
	struct vllm_capacity one, tp2, tp16, pp2;

	vllm_setup_default(&s);
	s.max_model_len = 8192;
	one = cap(&a, &s, 81559, 1);
	s.tensor_parallel = 2;
	tp2 = cap(&a, &s, 81559, 2);
	/* Half the weights and half the KV heads per GPU. */
	ck_assert(fabs((double)tp2.weights_bytes / (double)one.weights_bytes - 0.5) < 0.01);
	ck_assert_int_eq(tp2.kv_bytes_per_token * 2, one.kv_bytes_per_token);
	ck_assert_int_gt(tp2.non_torch_bytes, one.non_torch_bytes);
	/* 8 KV heads over 16 ranks: each keeps one whole head, so KV per GPU stops halving. */
	s.tensor_parallel = 16;
	s.max_num_seqs = 16;
	s.max_num_batched_tokens = 2048;
	tp16 = cap(&a, &s, 81559, 16);
	ck_assert_int_eq(tp16.kv_bytes_per_token, one.kv_bytes_per_token / 8);
	/* Pipeline stages split the layers; the last holds the head and the sampler. */
	vllm_setup_default(&s);
	s.max_model_len = 8192;
	s.pipeline_parallel = 2;
	pp2 = cap(&a, &s, 81559, 2);
	ck_assert_int_eq(pp2.kv_bytes_per_token * 2, one.kv_bytes_per_token);
	ck_assert_int_gt(pp2.kv_cache_tokens, one.kv_cache_tokens);
}
END_TEST

/* Llama 3.2 11B Vision from the catalog (its published config: 40 layers, 8 of them
 * cross-attention, 8 KV heads of 128; one image of 4 tiles x ((560 / 14)^2 + 1) = 6404
 * vision tokens): vLLM's per-token KV covers the 32 self-attention layers only, each request
 * also holding its image in the 8 cross-attention layers. */
START_TEST(mllama_cross_attention_is_per_image)
{
	struct device_table devices;
	struct model_catalog *models = NULL;
	const struct model_entry *m;
	struct model_arch all;
	struct vllm_setup s;
	struct vllm_capacity c, every, tp2;
	const int64_t row = 2LL * 8 * 128 * 2; /* K and V of one token and layer, bf16 */

	t_profiles_load(&devices, &models, NULL);
	m = model_catalog_find(models, "meta-llama/Llama-3.2-11B-Vision-Instruct");
	ck_assert_ptr_nonnull(m);
	vllm_setup_default(&s);
	s.max_model_len = 8192;
	c = cap(&m->arch, &s, 81559, 1);
	ck_assert_int_eq(c.kv_bytes_per_token, 32 * row);
	ck_assert_int_eq(c.cross_kv_bytes_per_seq, 8 * 6404 * row);
	/* The same model counting every layer per token: 40/32 as many bytes per token, so a
	 * quarter more tokens now fit in the same cache (within a block). */
	all = m->arch;
	memset(all.cross_attn_mask, 0, sizeof(all.cross_attn_mask));
	all.n_cross_attn_layers = 0;
	every = cap(&all, &s, 81559, 1);
	ck_assert_int_eq(every.kv_bytes_per_token, 40 * row);
	ck_assert_int_eq(every.kv_cache_bytes, c.kv_cache_bytes);
	ck_assert(fabs((double)c.kv_cache_tokens / (double)every.kv_cache_tokens - 1.25) < 0.001);
	/* Concurrency pays for each request's text and image. */
	ck_assert(fabs(c.max_concurrency -
		       (double)c.kv_cache_bytes / (double)(8192 * 32 * row + 8 * 6404 * row)) <
		  1e-9);
	ck_assert(c.max_concurrency > every.max_concurrency);
	/* Tensor parallelism halves both. */
	s.tensor_parallel = 2;
	tp2 = cap(&m->arch, &s, 81559, 2);
	ck_assert_int_eq(tp2.kv_bytes_per_token * 2, c.kv_bytes_per_token);
	ck_assert_int_eq(tp2.cross_kv_bytes_per_seq * 2, c.cross_kv_bytes_per_seq);
	t_profiles_free(&devices, &models, NULL);
}
END_TEST

START_TEST(utilisation_and_length_trade_off)
{
	struct model_arch a = llama8b();
	struct vllm_setup s;
	struct vllm_capacity lo, hi, long_ctx;

	vllm_setup_default(&s);
	s.max_model_len = 8192;
	s.gpu_memory_utilization = 0.80;
	lo = cap(&a, &s, 24576, 1);
	s.gpu_memory_utilization = 0.95;
	hi = cap(&a, &s, 24576, 1);
	/* Every extra byte of the budget goes to the KV cache. */
	ck_assert_int_gt(hi.kv_cache_tokens, lo.kv_cache_tokens);
	ck_assert(fabs((double)(hi.kv_cache_bytes - lo.kv_cache_bytes) -
		       0.15 * (double)hi.cuda_total_bytes) < 64.0 * MIB);
	/* A longer max_model_len keeps the pool but lowers the concurrency. */
	s.max_model_len = 32768;
	long_ctx = cap(&a, &s, 24576, 1);
	ck_assert_int_eq(long_ctx.kv_cache_tokens, hi.kv_cache_tokens);
	ck_assert(long_ctx.max_concurrency < hi.max_concurrency / 3.9);
}
END_TEST

START_TEST(vllm_refuses_what_cannot_start)
{
	struct model_arch a = llama8b();
	struct vllm_setup s;
	struct vllm_capacity c;
	struct vllm_gpu g = {24576 * MIB, 10000 * MIB, false};

	vllm_setup_default(&s);
	/* bf16 8B on a 16 GB card: the weights leave nothing for the cache. */
	c = cap(&a, &s, 16384, 1);
	ck_assert(!c.fits);
	ck_assert_ptr_nonnull(c.refusal);
	ck_assert_int_eq(c.kv_cache_tokens, 0);
	/* The model's full 131072 tokens do not fit one request on a 24 GB card. */
	c = cap(&a, &s, 24576, 1);
	ck_assert(!c.fits);
	/* Less free memory than the utilisation asks for. */
	s.max_model_len = 4096;
	ck_assert_int_eq(vllm_capacity(&a, &s, &g, 1, &c, NULL), 0);
	ck_assert(!c.fits);
	ck_assert(strstr(c.refusal, "free") != NULL);
}
END_TEST

START_TEST(bad_settings_name_their_field)
{
	struct model_arch a = llama8b();
	struct vllm_setup s;
	struct vllm_capacity c;
	struct vllm_gpu g[4] = {{81559 * MIB, -1, false},
				{81559 * MIB, -1, false},
				{81559 * MIB, -1, false},
				{81559 * MIB, -1, false}};
	const char *field = NULL;

	vllm_setup_default(&s);
	s.tensor_parallel = 3; /* 32 heads do not split in 3 */
	ck_assert_int_eq(vllm_capacity(&a, &s, g, 4, &c, &field), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "tensor_parallel_size");
	vllm_setup_default(&s);
	s.tensor_parallel = 4;
	s.pipeline_parallel = 2; /* 8 GPUs needed, 4 given */
	ck_assert_int_eq(vllm_capacity(&a, &s, g, 4, &c, &field), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "gpus");
	vllm_setup_default(&s);
	s.gpu_memory_utilization = 1.5;
	ck_assert_int_eq(vllm_capacity(&a, &s, g, 1, &c, &field), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "gpu_memory_utilization");
	vllm_setup_default(&s);
	s.max_num_seqs = 512;
	s.max_num_batched_tokens = 256;
	ck_assert_int_eq(vllm_capacity(&a, &s, g, 1, &c, &field), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "max_num_batched_tokens");
	vllm_setup_default(&s);
	s.max_model_len = 262144; /* twice the model's positions */
	ck_assert_int_eq(vllm_capacity(&a, &s, g, 1, &c, &field), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "max_model_len");
	ck_assert_int_eq(vllm_precision_parse("w8a8"), VLLM_INT8);
	ck_assert_int_eq(vllm_precision_parse("q4_k_m"), -1);
	ck_assert_str_eq(vllm_precision_name(VLLM_MXFP4), "mxfp4");
}
END_TEST

/* The facts a planner builds once give every setup the answer vllm_capacity gives it, and are
 * refused for another model or a tensor list vLLM's loading does not describe. */
START_TEST(facts_built_once_answer_as_the_tensors_do)
{
	struct model_arch a = llama8b(), b = llama8b();
	struct rf_tensor_list l = {0};
	struct vllm_facts f = {0};
	struct vllm_gpu g[2] = {{24576 * MIB, -1, false}, {24576 * MIB, -1, false}};
	struct vllm_setup s;
	struct vllm_capacity c1, c2;
	const int precisions[] = {VLLM_BF16, VLLM_FP8, VLLM_AWQ, VLLM_INT8};

	ck_assert_int_eq(model_tensors(&a, &l), 0);
	ck_assert_int_eq(vllm_facts_build(&a, &l, &f), 0);
	for (size_t p = 0; p < sizeof(precisions) / sizeof(precisions[0]); p++) {
		for (int tp = 1; tp <= 2; tp++) {
			vllm_setup_default(&s);
			s.precision = precisions[p];
			s.tensor_parallel = tp;
			s.max_model_len = 8192;
			ck_assert_int_eq(vllm_capacity(&a, &s, g, tp, &c1, NULL), 0);
			ck_assert_int_eq(vllm_capacity_with(&a, &f, &s, g, tp, &c2, NULL), 0);
			ck_assert_int_eq(c1.weights_bytes, c2.weights_bytes);
			ck_assert_int_eq(c1.num_blocks, c2.num_blocks);
			ck_assert_int_eq(c1.kv_cache_bytes, c2.kv_cache_bytes);
		}
	}
	/* Another model's facts (another layer count) are refused, not read past their end. */
	b.n_layers = 40;
	ck_assert_int_eq(model_arch_validate(&b, NULL), 0);
	vllm_setup_default(&s);
	ck_assert_int_eq(vllm_capacity_with(&b, &f, &s, g, 1, &c2, NULL), RF_E_INVALID_VALUE);
	vllm_facts_free(&f);
	/* A tensor of a layer the model does not have. */
	l.t[0].layer = 32;
	ck_assert_int_eq(vllm_facts_build(&a, &l, &f), RF_E_INVALID_VALUE);
	rf_tensor_list_free(&l);
	vllm_facts_free(NULL);
}
END_TEST

Suite *serve_vllm_suite(void)
{
	Suite *s = suite_create("serve_vllm");
	TCase *tc = tcase_create("capacity");

	tcase_add_test(tc, logged_capacity_is_reproduced_within_ten_percent);
	tcase_add_test(tc, mla_capacity_from_the_catalog_matches_its_log);
	tcase_add_test(tc, parallelism_shards_weights_and_kv);
	tcase_add_test(tc, mllama_cross_attention_is_per_image);
	tcase_add_test(tc, utilisation_and_length_trade_off);
	tcase_add_test(tc, vllm_refuses_what_cannot_start);
	tcase_add_test(tc, bad_settings_name_their_field);
	tcase_add_test(tc, facts_built_once_answer_as_the_tensors_do);
	suite_add_tcase(s, tc);
	return s;
}
