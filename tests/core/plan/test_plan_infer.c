/*
 * The planner against brute force: on small models and machines every setup of the space (each
 * weight format, KV type, GPU layer count or MoE expert split, and every n_ctx in steps of the
 * KV padding) is put to the evaluator, and no feasible one may beat the planner's choice on the
 * use case's objective. Also: the evaluator agrees with the estimator it composes, n_cpu_moe
 * moves exactly the expert bytes to the host, the quality table parses and orders as
 * llama.cpp's measurements do, and the relaxations (speed floor, context) are said.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "api/plan_quality_json.h"
#include "core/err.h"
#include "core/estimate.h"
#include "core/model.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_infer.h"
#include "core/plan/plan_quality.h"
#include "core/quant.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

static struct plan_quality quality;

static void setup(void)
{
	char why[160];

	ck_assert_msg(api_plan_quality_from_json(t_quality(), &quality, why, sizeof(why)) == 0,
		      "%s", why);
}

static int weights_fn(void *ctx, const struct model_arch *a, int ft, struct rf_mem_weights *out)
{
	(void)ctx;
	return rf_weights_from_scheme(a, ft, -1, out);
}

/* A small llama: 8 layers of 512, GQA 8/2, 32k context. */
static void tiny_dense(struct model_arch *a)
{
	const char *bad = NULL;

	model_arch_init(a);
	strcpy(a->model_type, "llama");
	strcpy(a->llm_arch, "llama");
	a->hidden_size = 512;
	a->n_layers = 8;
	a->n_heads = 8;
	a->n_kv_heads = 2;
	a->intermediate_size = 1536;
	a->vocab_size = 32000;
	a->max_position_embeddings = 32768;
	ck_assert_int_eq(model_arch_validate(a, &bad), 0);
}

/* A small MoE: 6 layers of 1024, 32 experts of which 4 per token (~0.6 B parameters). */
static void tiny_moe(struct model_arch *a)
{
	const char *bad = NULL;

	model_arch_init(a);
	strcpy(a->model_type, "qwen3_moe");
	strcpy(a->llm_arch, "qwen3moe");
	a->hidden_size = 1024;
	a->n_layers = 6;
	a->n_heads = 16;
	a->n_kv_heads = 4;
	a->head_dim = 64;
	a->qk_norm = true;
	a->n_experts = 32;
	a->n_experts_per_tok = 4;
	a->moe_intermediate_size = 1024;
	a->vocab_size = 32000;
	a->max_position_embeddings = 16384;
	ck_assert_int_eq(model_arch_validate(a, &bad), 0);
}

/* One CUDA GPU with budget gpu bytes (all free) and host RAM of host bytes. */
static void machine(struct plan_machine *m, int64_t gpu, int64_t host)
{
	memset(m, 0, sizeof(*m));
	m->n_dev = 1;
	strcpy(m->dev[0].name, "cuda0");
	m->dev[0].free_bytes = gpu;
	m->dev[0].budget_bytes = gpu;
	m->dev_total_bytes[0] = gpu;
	m->host.budget_bytes = host;
	m->speed.backend = SPEED_BACKEND_CUDA;
	m->speed.n_devices = 1;
	m->speed.devices[0].bandwidth_gbs = 360;
	m->speed.devices[0].compute_tflops = 50;
	m->speed.devices[0].compute = SPEED_COMPUTE_TENSOR;
	m->speed.host.bandwidth_gbs = 50;
	m->speed.host.threads = 8;
	m->threads = 8;
}

struct space {
	const struct model_arch *a;
	const struct model_params *mp;
	const struct plan_machine *hw;
	const struct plan_request *r;
	const struct plan_answer *ans;
	int64_t ctx_step;
	long feasible;
};

/* Whether a brute-force point meets what the answer's objective asked. */
static bool meets(const struct space *sp, const struct plan_result *res, double kld, int64_t ctx)
{
	double floor_kld = plan_quality_floor(&quality);
	bool qfloor = sp->r->use_case == PLAN_LONG_CONTEXT || sp->r->use_case == PLAN_SPEED;

	return res->fits && res->gpu_util <= PLAN_MAX_GPU_UTIL && ctx >= sp->ans->ctx_target &&
	       res->decode_tps >= sp->ans->floor_tps && (!qfloor || (kld >= 0 && kld <= floor_kld));
}

/* Asserts that the point does not beat the answer on the objective's first criterion, beyond
 * the tolerances the objective states. */
static void check_point(struct space *sp, const struct plan_setup *s, const struct plan_result *res)
{
	const struct plan_choice *b = &sp->ans->best;
	double kld = plan_quality_setup(&quality, s, false);
	int64_t ctx = s->p.n_ctx;

	if (!meets(sp, res, kld, ctx))
		return;
	sp->feasible++;
	switch (sp->r->use_case) {
	case PLAN_LONG_CONTEXT:
		ck_assert_msg((double)ctx <= (double)b->setup.p.n_ctx * 1.05,
			      "ft %d kv %d ngl %lld: %lld tokens beat %lld", s->ftype, s->p.type_k,
			      (long long)s->p.n_gpu_layers, (long long)ctx,
			      (long long)b->setup.p.n_ctx);
		break;
	case PLAN_SPEED:
		ck_assert_msg(res->decode_tps <= b->res.decode_tps * 1.05,
			      "ft %d ngl %lld: %.1f tok/s beat %.1f", s->ftype,
			      (long long)s->p.n_gpu_layers, res->decode_tps, b->res.decode_tps);
		break;
	default:
		ck_assert_msg(kld >= b->kld - quality.tie_kld,
			      "ft %d kv %d ngl %lld ctx %lld: KLD %.4f beats %.4f", s->ftype,
			      s->p.type_k, (long long)s->p.n_gpu_layers, (long long)ctx, kld,
			      b->kld);
		/* Nothing at least as good and as long is faster (beyond 5%). */
		if (kld <= b->kld && ctx >= b->setup.p.n_ctx)
			ck_assert_msg(res->decode_tps <= b->res.decode_tps * 1.05,
				      "ft %d ngl %lld ctx %lld: %.1f tok/s beat %.1f", s->ftype,
				      (long long)s->p.n_gpu_layers, (long long)ctx, res->decode_tps,
				      b->res.decode_tps);
		break;
	}
}

/* Every setup: formats x KV x (GPU layers -1, 0..n, or experts 0..n) x n_ctx. */
static void brute(struct space *sp, bool experts)
{
	static const int fts[] = {RF_FT_F16,    RF_FT_Q8_0,   RF_FT_Q6_K,   RF_FT_Q5_K_M,
				  RF_FT_Q5_K_S, RF_FT_Q4_K_M, RF_FT_Q4_K_S, RF_FT_IQ4_XS,
				  RF_FT_Q3_K_L, RF_FT_Q3_K_M, RF_FT_IQ3_M,  RF_FT_IQ3_XXS,
				  RF_FT_Q2_K,   RF_FT_IQ2_M};
	static const int kvs[] = {RF_GT_F16, RF_GT_Q8_0};
	struct rf_mem_weights *w = malloc(sizeof(*w));
	struct plan_result *res = malloc(sizeof(*res));
	const int64_t n = model_n_layer(sp->a);
	int64_t cap = sp->a->max_position_embeddings;

	ck_assert(w && res);
	if (sp->r->use_case != PLAN_LONG_CONTEXT)
		cap = sp->r->use_case == PLAN_SPEED ? PLAN_SPEED_CTX_CAP : PLAN_GENERAL_CTX_CAP;
	for (size_t f = 0; f < sizeof(fts) / sizeof(fts[0]); f++) {
		ck_assert_int_eq(rf_weights_from_scheme(sp->a, fts[f], -1, w), 0);
		for (size_t k = 0; k < 2; k++)
			for (int64_t split = -1; split <= n; split++)
				for (int64_t ctx = sp->ctx_step; ctx <= cap; ctx += sp->ctx_step) {
					struct plan_setup s;
					memset(&s, 0, sizeof(s));
					s.runtime = PLAN_RT_LLAMA_CPP;
					s.ftype = fts[f];
					rf_infer_params_default(&s.p);
					s.p.type_k = s.p.type_v = kvs[k];
					s.p.flash_attn = true;
					s.p.n_ctx = ctx;
					if (experts) {
						if (split < 0)
							continue;
						s.p.n_cpu_moe = split;
					} else {
						s.p.n_gpu_layers = split;
					}
					ck_assert_int_eq(plan_evaluate(sp->a, sp->mp, w, sp->hw, &s,
								       res),
							 0);
					check_point(sp, &s, res);
				}
	}
	free(w);
	free(res);
}

static void plan_and_brute(const struct model_arch *a, const struct plan_machine *hw,
			   enum plan_use_case uc, double min_tps, bool experts, int64_t step)
{
	struct model_params mp;
	struct plan_model m = {.arch = a, .params = &mp, .weights = weights_fn, .fixed_ftype = -1};
	struct plan_request r;
	struct plan_answer *ans = malloc(sizeof(*ans));
	struct space sp = {.a = a, .mp = &mp, .hw = hw, .r = &r, .ans = ans, .ctx_step = step};

	ck_assert_ptr_nonnull(ans);
	ck_assert_int_eq(model_param_counts(a, &mp), 0);
	plan_request_default(&r);
	r.use_case = uc;
	r.min_tps = min_tps;
	ck_assert_int_eq(plan_infer(&m, hw, &quality, &r, ans), 0);
	ck_assert_msg(ans->found, "%s: nothing found", plan_use_case_name(uc));
	ck_assert(ans->best.res.fits);
	ck_assert(ans->best.res.gpu_util <= PLAN_MAX_GPU_UTIL);
	ck_assert(ans->evaluated > 0);
	brute(&sp, experts);
	ck_assert_msg(sp.feasible > 0, "%s: brute force found nothing feasible",
		      plan_use_case_name(uc));
	free(ans);
}

START_TEST(dense_every_use_case_beats_brute_force)
{
	struct model_arch a;
	struct plan_machine hw;

	tiny_dense(&a);
	/* 96 MiB of GPU: F16 (~110 MiB) only with layers on the host. */
	machine(&hw, 96 * RF_MIB, 2 * RF_GIB);
	for (int uc = 0; uc < PLAN_USE_CASES; uc++)
		plan_and_brute(&a, &hw, (enum plan_use_case)uc, 5, false, 1024);
}
END_TEST

START_TEST(dense_with_a_binding_speed_floor)
{
	struct model_arch a;
	struct plan_machine hw;

	tiny_dense(&a);
	machine(&hw, 64 * RF_MIB, 2 * RF_GIB);
	/* A floor that layers on the host cannot reach: partial offloads drop out. */
	plan_and_brute(&a, &hw, PLAN_GENERAL, 2000, false, 1024);
	plan_and_brute(&a, &hw, PLAN_LONG_CONTEXT, 2000, false, 1024);
}
END_TEST

START_TEST(moe_experts_in_ram_beat_brute_force)
{
	struct model_arch a;
	struct plan_machine hw;

	tiny_moe(&a);
	/* Q8_0 is ~650 MiB: a 400 MiB GPU holds attention, the head and some experts. */
	machine(&hw, 400 * RF_MIB, 4 * RF_GIB);
	plan_and_brute(&a, &hw, PLAN_GENERAL, 5, true, 1024);
	plan_and_brute(&a, &hw, PLAN_LONG_CONTEXT, 5, true, 1024);
}
END_TEST

START_TEST(n_cpu_moe_moves_the_expert_bytes_to_the_host)
{
	struct model_arch a;
	struct model_params mp;
	struct plan_machine hw;
	struct rf_mem_weights *w = malloc(sizeof(*w));
	struct plan_result *r0 = malloc(sizeof(*r0)), *r3 = malloc(sizeof(*r3));
	struct plan_setup s;
	uint64_t experts = 0;

	ck_assert(w && r0 && r3);
	tiny_moe(&a);
	ck_assert_int_eq(model_param_counts(&a, &mp), 0);
	machine(&hw, 4 * RF_GIB, 8 * RF_GIB);
	ck_assert_int_eq(rf_weights_from_scheme(&a, RF_FT_Q8_0, -1, w), 0);
	memset(&s, 0, sizeof(s));
	s.ftype = RF_FT_Q8_0;
	rf_infer_params_default(&s.p);
	ck_assert_int_eq(plan_evaluate(&a, &mp, w, &hw, &s, r0), 0);
	s.p.n_cpu_moe = 3;
	ck_assert_int_eq(plan_evaluate(&a, &mp, w, &hw, &s, r3), 0);
	for (int l = 0; l < 3; l++)
		experts += w->layer_expert_bytes[l];
	ck_assert(experts > 0);
	ck_assert_int_eq(r3->mem.experts_host_bytes, (int64_t)experts);
	ck_assert_int_eq(r3->mem.n_cpu_moe, 3);
	/* The GPU holds exactly those bytes less; the KV cache does not move. */
	ck_assert_int_eq(r0->mem.per_device[0].weights_bytes - r3->mem.per_device[0].weights_bytes,
			 (int64_t)experts);
	ck_assert_int_eq(r0->mem.per_device[0].kv_bytes, r3->mem.per_device[0].kv_bytes);
	ck_assert(r3->mem.host_bytes > r0->mem.host_bytes + (int64_t)experts - 1);
	/* Reading experts from RAM is slower, but only their active share is read. */
	ck_assert(r3->decode_tps < r0->decode_tps);
	/* More than every layer is every layer; a negative count is refused. */
	s.p.n_cpu_moe = 1000;
	ck_assert_int_eq(plan_evaluate(&a, &mp, w, &hw, &s, r3), 0);
	ck_assert_int_eq(r3->mem.n_cpu_moe, 6);
	s.p.n_cpu_moe = -1;
	ck_assert_int_eq(plan_evaluate(&a, &mp, w, &hw, &s, r3), RF_E_INVALID_VALUE);
	ck_assert_str_eq(r3->mem.error_field, "n_cpu_moe");
	free(w);
	free(r0);
	free(r3);
}
END_TEST

START_TEST(the_evaluator_is_the_estimator)
{
	struct model_arch a;
	struct model_params mp;
	struct plan_machine hw;
	struct rf_mem_weights *w = malloc(sizeof(*w));
	struct rf_mem_estimate *e = malloc(sizeof(*e));
	struct plan_result *r = malloc(sizeof(*r));
	struct plan_setup s;

	ck_assert(w && e && r);
	tiny_dense(&a);
	ck_assert_int_eq(model_param_counts(&a, &mp), 0);
	machine(&hw, 96 * RF_MIB, 2 * RF_GIB);
	ck_assert_int_eq(rf_weights_from_scheme(&a, RF_FT_Q4_K_M, -1, w), 0);
	memset(&s, 0, sizeof(s));
	s.ftype = RF_FT_Q4_K_M;
	rf_infer_params_default(&s.p);
	s.p.n_ctx = 8192;
	s.p.n_gpu_layers = 5;
	ck_assert_int_eq(plan_evaluate(&a, &mp, w, &hw, &s, r), 0);
	ck_assert_int_eq(rf_estimate_inference(&a, w, &s.p, hw.dev, 1, &hw.host, e), 0);
	ck_assert_int_eq(r->mem.total_bytes, e->total_bytes);
	ck_assert_int_eq(r->mem.per_device[0].bytes, e->per_device[0].bytes);
	ck_assert(r->fits == e->fits);
	ck_assert(r->decode_tps > 0 && r->decode_tps_full_ctx > 0);
	ck_assert(r->decode_tps_full_ctx <= r->decode_tps);
	free(w);
	free(e);
	free(r);
}
END_TEST

START_TEST(vllm_formats_count_their_bytes)
{
	struct model_arch a;
	struct rf_mem_weights *f16 = malloc(sizeof(*f16)), *fp8 = malloc(sizeof(*fp8)),
			      *awq = malloc(sizeof(*awq));

	ck_assert(f16 && fp8 && awq);
	tiny_dense(&a);
	ck_assert_int_eq(rf_weights_from_scheme(&a, RF_FT_F16, -1, f16), 0);
	plan_vllm_weights(f16, PLAN_VLLM_FP8, fp8);
	plan_vllm_weights(f16, PLAN_VLLM_AWQ, awq);
	/* Linear layers at 8 and 4.16 bits; embeddings and head stay 16-bit. */
	ck_assert_int_eq(fp8->layer_bytes[0], f16->layer_bytes[0] / 2);
	ck_assert(awq->layer_bytes[0] > f16->layer_bytes[0] / 4 &&
		  awq->layer_bytes[0] < f16->layer_bytes[0] * 27 / 100);
	ck_assert_int_eq(fp8->output_bytes, f16->output_bytes);
	ck_assert_int_eq(fp8->input_bytes, f16->input_bytes);
	ck_assert_str_eq(plan_vllm_format_flag(PLAN_VLLM_FP8), "fp8");
	ck_assert_ptr_null(plan_vllm_format_flag(PLAN_VLLM_BF16));
	/* The default share of a free GPU, less when others hold memory. */
	ck_assert_double_eq(plan_vllm_gpu_util(80 * RF_GIB, 80 * RF_GIB), 0.90);
	ck_assert_double_eq(plan_vllm_gpu_util(80 * RF_GIB, 40 * RF_GIB), 0.45);
	free(f16);
	free(fp8);
	free(awq);
}
END_TEST

START_TEST(the_quality_table_orders_as_measured)
{
	static const int order[] = {RF_FT_Q8_0,   RF_FT_Q6_K,   RF_FT_Q5_K_M, RF_FT_Q4_K_M,
				    RF_FT_IQ4_XS, RF_FT_Q3_K_M, RF_FT_Q2_K};
	struct plan_setup s;

	for (size_t i = 1; i < sizeof(order) / sizeof(order[0]); i++)
		ck_assert(plan_quality_weights(&quality, order[i]) >
			  plan_quality_weights(&quality, order[i - 1]));
	/* The llama.cpp scoreboard's Q4_K_M row without an importance matrix. */
	ck_assert_double_eq_tol(plan_quality_weights(&quality, RF_FT_Q4_K_M), 0.031273, 1e-9);
	ck_assert(plan_quality_kv(&quality, RF_GT_Q8_0) > 0);
	ck_assert(plan_quality_kv(&quality, RF_GT_Q4_0) < 0); /* not measured */
	ck_assert_int_eq(quality.floor_ftype, RF_FT_Q4_K_M);
	memset(&s, 0, sizeof(s));
	s.ftype = RF_FT_Q4_K_M;
	s.p.type_k = s.p.type_v = RF_GT_Q8_0;
	ck_assert(plan_quality_setup(&quality, &s, false) <= plan_quality_floor(&quality));
	ck_assert_double_eq(plan_quality_setup(&quality, &s, true),
			    plan_quality_kv(&quality, RF_GT_Q8_0));
	s.ftype = RF_FT_IQ4_XS;
	ck_assert(plan_quality_setup(&quality, &s, false) > plan_quality_floor(&quality));
}
END_TEST

START_TEST(a_bad_quality_table_is_refused)
{
	struct plan_quality q;
	char why[160];
	cJSON *doc = cJSON_Parse("{\"tie_kld\":0.001,\"floor\":\"Q4_K_M\",\"weights\":[{\"quant\":"
				 "\"Q9_Z\",\"kld\":0.1}],\"kv_cache\":[],\"vllm\":{}}");

	ck_assert_ptr_nonnull(doc);
	ck_assert_int_eq(api_plan_quality_from_json(doc, &q, why, sizeof(why)), RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(why, "weights"));
	cJSON_Delete(doc);
}
END_TEST

START_TEST(nothing_fits_says_what_it_needs)
{
	struct model_arch a;
	struct model_params mp;
	struct plan_machine hw;
	struct plan_model m = {.arch = &a, .params = &mp, .weights = weights_fn, .fixed_ftype = -1};
	struct plan_request r;
	struct plan_answer *ans = malloc(sizeof(*ans));

	ck_assert_ptr_nonnull(ans);
	tiny_dense(&a);
	ck_assert_int_eq(model_param_counts(&a, &mp), 0);
	machine(&hw, 8 * RF_MIB, 16 * RF_MIB);
	plan_request_default(&r);
	ck_assert_int_eq(plan_infer(&m, &hw, &quality, &r, ans), 0);
	ck_assert(!ans->found);
	ck_assert(ans->min_total_bytes > 16 * RF_MIB);
	r.n_parallel = 0;
	ck_assert_int_eq(plan_infer(&m, &hw, &quality, &r, ans), RF_E_INVALID_VALUE);
	free(ans);
}
END_TEST

Suite *plan_infer_suite(void)
{
	Suite *s = suite_create("plan_infer");
	TCase *tc = tcase_create("plan");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, dense_every_use_case_beats_brute_force);
	tcase_add_test(tc, dense_with_a_binding_speed_floor);
	tcase_add_test(tc, moe_experts_in_ram_beat_brute_force);
	tcase_add_test(tc, n_cpu_moe_moves_the_expert_bytes_to_the_host);
	tcase_add_test(tc, the_evaluator_is_the_estimator);
	tcase_add_test(tc, vllm_formats_count_their_bytes);
	tcase_add_test(tc, the_quality_table_orders_as_measured);
	tcase_add_test(tc, a_bad_quality_table_is_refused);
	tcase_add_test(tc, nothing_fits_says_what_it_needs);
	suite_add_tcase(s, tc);
	return s;
}
