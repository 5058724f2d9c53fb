/*
 * The memo of parameter counts and scheme weights (api/model_memo.c): every answer, computed or
 * remembered, equals model_param_counts / rf_weights_from_scheme byte for byte; an architecture
 * that differs in one fact is never answered with another's entry, not even after its catalog
 * was freed; and the memo stays correct when more keys than its slots go through it. The same
 * holds for the vLLM facts it keeps.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_memo.h"
#include "core/err.h"
#include "core/fit/estimate.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "core/fit/serve_vllm.h"
#include "tests/memory_calib.h"
#include "tests/test.h"

static const char *const ftypes[] = {"Q4_K_M", "Q8_0", "F16", "IQ4_XS", "Q2_K", "Q6_K"};
#define N_FTYPES (sizeof(ftypes) / sizeof(ftypes[0]))

/* a validated, as the estimate hands it to the memo. */
static struct model_arch validated(const struct model_arch *a)
{
	struct model_arch v = *a;

	ck_assert_int_eq(model_arch_validate(&v, NULL), 0);
	return v;
}

/* The per-layer arrays' entries past n_layer as the memo leaves them: untouched. */
static void tail_untouched(const uint64_t *v, int64_t n_layer)
{
	uint64_t fill;

	memset(&fill, 0xa5, sizeof(fill));
	for (int64_t il = n_layer; il < MODEL_MAX_LAYERS; il++)
		ck_assert_uint_eq(v[il], fill);
}

/* got (filled with 0xa5 before the memo wrote it) equals want in every field and in the first
 * n_layer entries of each per-layer array, and the memo wrote nothing past those. A fresh
 * computation (the memo's first answer) zeroes the whole struct, so the tails are checked only
 * where got's tails still hold the fill. */
static void weights_same(const struct rf_mem_weights *want, const struct rf_mem_weights *got)
{
	struct rf_mem_weights *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	const int64_t n = want->n_layer;
	const bool from_memo = got->layer_bytes[MODEL_MAX_LAYERS - 1] != 0 || n == MODEL_MAX_LAYERS;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(got->n_layer, n);
	*a = *want;
	*b = *got;
	/* Compare everything with the tails made equal. */
	for (int64_t il = n; il < MODEL_MAX_LAYERS; il++) {
		a->layer_bytes[il] = b->layer_bytes[il] = 0;
		a->layer_expert_bytes[il] = b->layer_expert_bytes[il] = 0;
		a->layer_amx_bytes[il] = b->layer_amx_bytes[il] = 0;
		for (int c = 0; c < RF_REPACK_N; c++)
			a->layer_repack_bytes[c][il] = b->layer_repack_bytes[c][il] = 0;
	}
	ck_assert_mem_eq(a, b, sizeof(*a));
	if (from_memo) {
		tail_untouched(got->layer_bytes, n);
		tail_untouched(got->layer_expert_bytes, n);
		tail_untouched(got->layer_amx_bytes, n);
		for (int c = 0; c < RF_REPACK_N; c++)
			tail_untouched(got->layer_repack_bytes[c], n);
	}
	free(a);
	free(b);
}

/* Checks the memo's answers for (a, ftype) against the direct computation. */
static void check_same(const struct model_arch *a, int ftype, struct rf_mem_weights *want,
		       struct rf_mem_weights *got)
{
	struct model_params pw, pg;

	memset(&pg, 0xa5, sizeof(pg));
	ck_assert_int_eq(model_param_counts(a, &pw), 0);
	ck_assert_int_eq(api_memo_params(a, &pg), 0);
	ck_assert_mem_eq(&pw, &pg, sizeof(pw));
	memset(got, 0xa5, sizeof(*got));
	ck_assert_int_eq(rf_weights_from_scheme(a, ftype, -1, want), 0);
	ck_assert_int_eq(api_memo_weights(a, ftype, got), 0);
	weights_same(want, got);
}

START_TEST(answers_equal_the_direct_computation)
{
	struct model_catalog *c = mc_catalog_load(t_src_dir());
	struct rf_mem_weights *want = malloc(sizeof(*want)), *got = malloc(sizeof(*got));

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	/* Twice over: the first pass fills the memo, the second answers from it. */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < c->n; i++) {
			struct model_arch a = validated(&c->models[i].arch);
			for (size_t k = 0; k < N_FTYPES; k++)
				check_same(&a, rf_ftype_from_name(ftypes[k]), want, got);
		}
	model_catalog_free(c);
	free(want);
	free(got);
}
END_TEST

START_TEST(one_fact_apart_is_another_model)
{
	struct model_catalog *c = mc_catalog_load(t_src_dir());
	struct rf_mem_weights *want = malloc(sizeof(*want)), *got = malloc(sizeof(*got));
	struct model_arch a, b;
	struct model_params pa, pb;
	const struct model_entry *e;
	const int q4 = rf_ftype_from_name("Q4_K_M");

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	e = model_catalog_find(c, "qwen2.5-7b");
	ck_assert_ptr_nonnull(e);
	a = validated(&e->arch);
	/* Remembered from a catalog that is then freed: the key is the bytes, not the entry. */
	check_same(&a, q4, want, got);
	model_catalog_free(c);
	b = a;
	b.n_layers += 1;
	check_same(&b, q4, want, got);
	ck_assert_int_eq(api_memo_params(&a, &pa), 0);
	ck_assert_int_eq(api_memo_params(&b, &pb), 0);
	ck_assert(pb.total > pa.total);
	b = a;
	b.tie_word_embeddings = !a.tie_word_embeddings;
	check_same(&b, q4, want, got);
	free(want);
	free(got);
}
END_TEST

START_TEST(more_keys_than_slots)
{
	struct model_catalog *c = mc_catalog_load(t_src_dir());
	struct rf_mem_weights *want = malloc(sizeof(*want)), *got = malloc(sizeof(*got));
	const struct model_entry *e;
	const int q8 = rf_ftype_from_name("Q8_0");
	struct model_arch a;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	e = model_catalog_find(c, "qwen2.5-0.5b");
	ck_assert_ptr_nonnull(e);
	a = validated(&e->arch);
	/* Distinct vocabularies: each is a key of its own, and the first ones are replaced. */
	for (int i = 0; i < API_MODEL_MEMO_SLOTS + 40; i++) {
		struct model_arch v = a;
		v.vocab_size = a.vocab_size + i;
		ck_assert_int_eq(api_memo_weights(&v, q8, got), 0);
		if (i % 97 == 0)
			check_same(&v, q8, want, got);
	}
	/* Replaced slots left their buckets: the newest keys and the replaced ones, asked again
	 * in another order, still answer as computed. */
	for (int i = API_MODEL_MEMO_SLOTS + 39; i >= 0; i -= 13) {
		struct model_arch v = a;
		v.vocab_size = a.vocab_size + i;
		check_same(&v, q8, want, got);
	}
	check_same(&a, q8, want, got);
	model_catalog_free(c);
	free(want);
	free(got);
}
END_TEST

/* Asserts that the memo's vLLM facts of a equal vllm_facts_build over its tensors. */
static void check_vllm_facts(const struct model_arch *a)
{
	struct rf_tensor_list l = {0};
	struct vllm_facts want = {0}, got = {0};

	ck_assert_int_eq(model_tensors(a, &l), 0);
	ck_assert_int_eq(vllm_facts_build(a, &l, &want), 0);
	ck_assert_int_eq(api_memo_vllm_facts(a, &got), 0);
	ck_assert_int_eq(got.n_layer, want.n_layer);
	ck_assert_int_eq(got.n_embd, want.n_embd);
	ck_assert_int_eq(got.has_head, want.has_head);
	ck_assert_mem_eq(got.embd, want.embd, sizeof(want.embd));
	ck_assert_ptr_ne(got.layer, want.layer);
	ck_assert_mem_eq(got.layer, want.layer, ((size_t)want.n_layer + 2) * sizeof(*want.layer));
	ck_assert_mem_eq(got.prefix, want.prefix,
			 ((size_t)want.n_layer + 1) * sizeof(*want.prefix));
	vllm_facts_free(&want);
	vllm_facts_free(&got);
	rf_tensor_list_free(&l);
}

/* The vLLM facts: equal to the direct sum, computed or remembered, for every catalog decoder,
 * a model one layer apart is another, and a cleared memo computes them again. */
START_TEST(vllm_facts_equal_the_direct_sum)
{
	struct model_catalog *c = mc_catalog_load(t_src_dir());
	const struct model_entry *e;
	struct model_arch a;

	ck_assert_ptr_nonnull(c);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < c->n; i++) {
			if (c->models[i].arch.family != MODEL_DECODER)
				continue;
			a = validated(&c->models[i].arch);
			check_vllm_facts(&a);
		}
	e = model_catalog_find(c, "qwen2.5-7b");
	ck_assert_ptr_nonnull(e);
	a = validated(&e->arch);
	model_catalog_free(c);
	a.n_layers += 1;
	a = validated(&a);
	check_vllm_facts(&a);
	api_memo_clear();
	check_vllm_facts(&a);
}
END_TEST

Suite *model_memo_suite(void)
{
	Suite *s = suite_create("model_memo");
	TCase *tc = tcase_create("memo");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, answers_equal_the_direct_computation);
	tcase_add_test(tc, one_fact_apart_is_another_model);
	tcase_add_test(tc, more_keys_than_slots);
	tcase_add_test(tc, vllm_facts_equal_the_direct_sum);
	suite_add_tcase(s, tc);
	return s;
}
