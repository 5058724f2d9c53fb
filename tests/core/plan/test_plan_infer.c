/*
 * The planner against brute force: on small models and machines every setup of the space (each
 * weight format, KV type, micro-batch, GPU layer count or MoE expert split, and every n_ctx in
 * steps of the KV padding; on a machine vLLM runs on, every vLLM format, KV dtype, GPU share and
 * --max-model-len too, for one sequence and for several) is put to the evaluator, and no
 * feasible one may beat the planner's choice on the use case's objective. Also: the evaluator agrees with the estimator it composes, n_cpu_moe
 * moves exactly the expert bytes to the host, the quality table parses and orders as
 * llama.cpp's measurements do, and the relaxations (speed floor, context) are said.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/catalog/quality.h"
#include "core/err.h"
#include "core/fit/estimate.h"
#include "core/fit/model.h"
#include "core/plan/plan_estimate.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_infer.h"
#include "core/plan/plan_quality.h"
#include "core/fit/quant.h"
#include "core/fit/serve_vllm.h"
#include "tests/api/profiles_fixture.h"
#include "tests/core/plan/plan_fixtures.h"
#include "tests/test.h"

static struct plan_quality quality;

static void setup(void)
{
	quality = *t_quality();
}

static int weights_fn(void *ctx, const struct model_arch *a, int ft, struct rf_mem_weights *out)
{
	(void)ctx;
	return rf_weights_from_scheme(a, ft, -1, out);
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

/* The counts of a, its weights in file type ft and llama.cpp's default setup of them. */
static void format_setup(const struct model_arch *a, struct model_params *mp,
			 struct rf_mem_weights *w, int ft, struct plan_setup *s)
{
	ck_assert_int_eq(model_param_counts(a, mp), 0);
	ck_assert_int_eq(rf_weights_from_scheme(a, ft, -1, w), 0);
	memset(s, 0, sizeof(*s));
	s->ftype = ft;
	rf_infer_params_default(&s->p);
}

struct space {
	const struct model_arch *a;
	const struct model_params *mp;
	const struct plan_machine *hw;
	const struct plan_request *r;
	const struct plan_answer *ans;
	int64_t ctx_step;
	long feasible, feasible_rt[2];
	enum plan_runtime best_runtime;
	double best_agg;
	/* the fastest stream of a fitting point at the quality floor's class or better with the
	 * answer's context: what general's interactive floor is reached by */
	double q4_tps;
	/* general: every feasible point, for the dominance checks (see check_dominance) */
	struct point {
		double kld, tps;
		int64_t ctx;
	} * pts;
	size_t n_pts, cap_pts;
};

/* The planner's margin: a setup twice as fast may be worse by the quality floor's divergence. */
static bool point_dominates(const struct point *a, const struct point *b, double speedup)
{
	return a->tps >= speedup * b->tps && a->kld <= b->kld + plan_quality_floor(&quality) &&
	       a->ctx >= b->ctx;
}

/* General: nothing feasible dominates the answer (twice as fast, at most the quality floor's
 * divergence worse, as long; 5% of slack for the splits the planner does not try), and nothing
 * feasible of better quality (beyond a tie) is as long and as fast (within 5%): the answer
 * gives up quality only for speed or context. */
static void check_dominance(const struct space *sp)
{
	const struct plan_choice *b = &sp->ans->best;
	struct point best = {b->kld, b->res.aggregate_tps, b->ctx};

	for (size_t i = 0; i < sp->n_pts; i++) {
		const struct point *p = &sp->pts[i];
		ck_assert_msg(!point_dominates(p, &best, 2.0 * 1.05),
			      "KLD %.4f at %.1f tok/s (%lld) dominates the answer's KLD %.4f at "
			      "%.1f tok/s (%lld)",
			      p->kld, p->tps, (long long)p->ctx, best.kld, best.tps,
			      (long long)best.ctx);
		ck_assert_msg(p->kld >= best.kld - quality.tie_kld || p->ctx < best.ctx ||
				      p->tps * 1.05 < best.tps,
			      "KLD %.4f at %.1f tok/s (%lld) beats the answer's %.4f at %.1f "
			      "tok/s (%lld)",
			      p->kld, p->tps, (long long)p->ctx, best.kld, best.tps,
			      (long long)best.ctx);
	}
}

/* General with no floor asked: the floor is the highest interactive tier a setup at the
 * quality floor's class reaches, else 80% of the fastest such setup's speed or the usable
 * speed if more (5% of slack either way for the splits the planner and the brute force try
 * differently). */
static void check_interactive(const struct space *sp)
{
	static const double tiers[] = {PLAN_FLUENT_TPS, PLAN_INTERACTIVE_TPS};
	double want = 0;

	for (size_t t = 0; t < 2 && want == 0; t++) {
		if (sp->q4_tps >= tiers[t] * 1.05)
			want = tiers[t];
		else if (sp->q4_tps >= tiers[t] / 1.05)
			return; /* too close to tell */
	}
	if (want > 0) {
		ck_assert_msg(sp->ans->floor_tps == want && sp->ans->interactive,
			      "the fastest Q4_K_M-class setup decodes at %.1f tokens/s; the floor "
			      "applied is %.1f",
			      sp->q4_tps, sp->ans->floor_tps);
		return;
	}
	/* Out of reach: 80% of the fastest such setup, at least the usable speed. */
	want = 0.8 * sp->q4_tps > PLAN_MIN_TPS ? 0.8 * sp->q4_tps : PLAN_MIN_TPS;
	ck_assert(!sp->ans->interactive);
	if (!sp->ans->below_floor)
		ck_assert_msg(sp->ans->floor_tps >= want / 1.05 &&
				      sp->ans->floor_tps <= want * 1.05,
			      "the fastest Q4_K_M-class setup decodes at %.1f tokens/s; the floor "
			      "applied is %.1f, not %.1f",
			      sp->q4_tps, sp->ans->floor_tps, want);
}

/* What one stream sees while all of the request's run. */
static double per_stream(const struct space *sp, const struct plan_result *res)
{
	return sp->r->n_parallel > 1 ? res->aggregate_tps / (double)sp->r->n_parallel :
				       res->decode_tps;
}

/* Whether a brute-force point meets what the answer's objective asked (vLLM's headroom is its
 * --gpu-memory-utilization; llama.cpp's validate's 90%). */
static bool meets(const struct space *sp, const struct plan_setup *s, const struct plan_result *res,
		  double kld, int64_t ctx)
{
	double floor_kld = plan_quality_floor(&quality);
	bool qfloor = sp->r->use_case == PLAN_LONG_CONTEXT || sp->r->use_case == PLAN_SPEED;

	return res->fits && (s->runtime == PLAN_RT_VLLM || res->gpu_util <= PLAN_MAX_GPU_UTIL) &&
	       ctx >= sp->ans->ctx_target && per_stream(sp, res) >= sp->ans->floor_tps &&
	       (!qfloor || (kld >= 0 && kld <= floor_kld));
}

/* Asserts that the point does not beat the answer on the objective's first criterion, beyond
 * the tolerances the objective states. */
static void check_point(struct space *sp, const struct plan_setup *s, const struct plan_result *res)
{
	const struct plan_choice *b = &sp->ans->best;
	double kld = plan_quality_setup(&quality, s, false);
	/* Each sequence's context: llama.cpp's n_ctx is shared, vLLM's length is per request. */
	int64_t ctx = s->runtime == PLAN_RT_VLLM ? s->p.n_ctx : s->p.n_ctx / sp->r->n_parallel;
	double tps = res->aggregate_tps, best_tps = b->res.aggregate_tps;

	if (res->fits && (s->runtime == PLAN_RT_VLLM || res->gpu_util <= PLAN_MAX_GPU_UTIL) &&
	    ctx >= sp->ans->ctx_target && kld >= 0 && kld <= plan_quality_floor(&quality) &&
	    per_stream(sp, res) > sp->q4_tps)
		sp->q4_tps = per_stream(sp, res);
	if (!meets(sp, s, res, kld, ctx))
		return;
	sp->feasible++;
	sp->feasible_rt[s->runtime]++;
	switch (sp->r->use_case) {
	case PLAN_LONG_CONTEXT:
		ck_assert_msg((double)ctx <= (double)b->ctx * 1.05,
			      "rt %d ft %d/%d kv %d ngl %lld: %lld tokens beat %lld", s->runtime,
			      s->ftype, s->vformat, s->p.type_k, (long long)s->p.n_gpu_layers,
			      (long long)ctx, (long long)b->ctx);
		break;
	case PLAN_SPEED:
		ck_assert_msg(tps <= best_tps * 1.05,
			      "rt %d ft %d/%d ngl %lld: %.1f tok/s beat %.1f", s->runtime, s->ftype,
			      s->vformat, (long long)s->p.n_gpu_layers, tps, best_tps);
		break;
	default:
		if (plan_use_case_interactive(sp->r->use_case)) {
			/* Better quality may lose to a much faster setup: check_dominance. */
			if (sp->n_pts == sp->cap_pts) {
				sp->cap_pts = sp->cap_pts ? 2 * sp->cap_pts : 1024;
				sp->pts = realloc(sp->pts, sp->cap_pts * sizeof(*sp->pts));
				ck_assert_ptr_nonnull(sp->pts);
			}
			sp->pts[sp->n_pts++] = (struct point){kld, tps, ctx};
		} else {
			ck_assert_msg(kld >= b->kld - quality.tie_kld,
				      "rt %d ft %d/%d kv %d ngl %lld ctx %lld: KLD %.4f beats %.4f",
				      s->runtime, s->ftype, s->vformat, s->p.type_k,
				      (long long)s->p.n_gpu_layers, (long long)ctx, kld, b->kld);
		}
		/* Nothing at least as good and as long is faster (beyond 5%). */
		if (kld <= b->kld && ctx >= b->ctx)
			ck_assert_msg(tps <= best_tps * 1.05,
				      "rt %d ft %d/%d ngl %lld ctx %lld: %.1f tok/s beat %.1f",
				      s->runtime, s->ftype, s->vformat,
				      (long long)s->p.n_gpu_layers, (long long)ctx, tps, best_tps);
		break;
	}
}

/* Every vLLM setup: formats x KV dtypes x GPU shares x --max-model-len. */
static void brute_vllm(struct space *sp, int64_t cap)
{
	struct plan_result *res = malloc(sizeof(*res));
	static const double utils[] = {PLAN_VLLM_GPU_UTIL, PLAN_VLLM_GPU_UTIL_HIGH};

	ck_assert(res);
	for (int f = 0; f < PLAN_VLLM_FORMATS; f++)
		for (int k = 0; k < 2; k++)
			for (size_t u = 0; u < 2; u++)
				for (int64_t ctx = sp->ctx_step; ctx <= cap; ctx += sp->ctx_step) {
					struct plan_setup s;
					memset(&s, 0, sizeof(s));
					s.runtime = PLAN_RT_VLLM;
					s.ftype = -1;
					s.vformat = (enum plan_vllm_format)f;
					s.tp = 1;
					s.vllm_util = utils[u];
					s.max_num_seqs = sp->r->n_parallel > 1 ? sp->r->n_parallel :
										 0;
					rf_infer_params_default(&s.p);
					s.p.n_parallel = sp->r->n_parallel;
					s.p.type_k = s.p.type_v = k ? RF_GT_Q8_0 : RF_GT_F16;
					s.p.n_ctx = ctx;
					ck_assert_int_eq(plan_evaluate(sp->a, sp->mp, NULL, sp->hw,
								       &s, res),
							 0);
					check_point(sp, &s, res);
				}
	free(res);
}

/* Every setup: formats x KV x (GPU layers -1, 0..n, or experts 0..n) x n_ctx. */
static void brute(struct space *sp, bool experts)
{
	static const int fts[] = {RF_FT_F16,    RF_FT_Q8_0,   RF_FT_Q6_K,   RF_FT_Q5_K_M,
				  RF_FT_Q5_K_S, RF_FT_Q4_K_M, RF_FT_Q4_K_S, RF_FT_IQ4_XS,
				  RF_FT_Q3_K_L, RF_FT_Q3_K_M, RF_FT_IQ3_M,  RF_FT_IQ3_XXS,
				  RF_FT_Q2_K,   RF_FT_IQ2_M};
	static const int kvs[] = {RF_GT_F16, RF_GT_Q8_0};
	static const int ubs[] = {512, 256};
	struct rf_mem_weights *w = malloc(sizeof(*w));
	struct plan_result *res = malloc(sizeof(*res));
	const int64_t n = model_n_layer(sp->a);
	int64_t cap = sp->a->max_position_embeddings;

	ck_assert(w && res);
	if (sp->r->use_case != PLAN_LONG_CONTEXT)
		cap = sp->r->use_case == PLAN_SPEED ? PLAN_SPEED_CTX_CAP : PLAN_GENERAL_CTX_CAP;
	if (sp->hw->n_vgpu > 0)
		brute_vllm(sp, cap);
	for (size_t f = 0; f < sizeof(fts) / sizeof(fts[0]); f++) {
		ck_assert_int_eq(rf_weights_from_scheme(sp->a, fts[f], -1, w), 0);
		for (size_t k = 0; k < 2 * 2; k++)
			for (int64_t split = -1; split <= n; split++)
				for (int64_t ctx = sp->ctx_step; ctx <= cap; ctx += sp->ctx_step) {
					struct plan_setup s;
					memset(&s, 0, sizeof(s));
					s.runtime = PLAN_RT_LLAMA_CPP;
					s.ftype = fts[f];
					rf_infer_params_default(&s.p);
					s.p.type_k = s.p.type_v = kvs[k % 2];
					s.p.n_ubatch = ubs[k / 2];
					s.p.flash_attn = true;
					s.p.n_parallel = sp->r->n_parallel;
					s.p.n_ctx = ctx * sp->r->n_parallel;
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

static struct space plan_and_brute_np(const struct model_arch *a, const struct plan_machine *hw,
				      enum plan_use_case uc, double min_tps, bool experts,
				      int64_t step, int64_t np)
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
	r.n_parallel = np;
	r.runtime = hw->n_vgpu > 0 ? PLAN_RT_AUTO : PLAN_RT_LLAMA_CPP;
	ck_assert_int_eq(plan_infer(&m, hw, &quality, &r, ans), 0);
	ck_assert_msg(ans->found, "%s: nothing found", plan_use_case_name(uc));
	ck_assert(ans->best.res.fits);
	ck_assert(ans->best.setup.runtime == PLAN_RT_VLLM ||
		  ans->best.res.gpu_util <= PLAN_MAX_GPU_UTIL);
	ck_assert(ans->evaluated > 0);
	/* Both runtimes searched: the answer says which won and why. */
	ck_assert_int_eq(ans->runtime_why[0] != '\0', hw->n_vgpu > 0);
	brute(&sp, experts);
	ck_assert_msg(sp.feasible > 0, "%s: brute force found nothing feasible",
		      plan_use_case_name(uc));
	if (plan_use_case_interactive(uc))
		check_dominance(&sp);
	if (plan_use_case_interactive(uc) && min_tps <= 0)
		check_interactive(&sp);
	free(sp.pts);
	sp.pts = NULL;
	sp.ans = NULL;
	sp.best_runtime = ans->best.setup.runtime;
	sp.best_agg = ans->best.res.aggregate_tps;
	free(ans);
	return sp;
}

static void plan_and_brute(const struct model_arch *a, const struct plan_machine *hw,
			   enum plan_use_case uc, double min_tps, bool experts, int64_t step)
{
	plan_and_brute_np(a, hw, uc, min_tps, experts, step, 1);
}

START_TEST(dense_every_use_case_beats_brute_force)
{
	struct model_arch a;
	struct plan_machine hw;

	t_tiny_dense(&a);
	/* 96 MiB of GPU: F16 (~110 MiB) only with layers on the host. */
	t_gpu_machine(&hw, 96 * RF_MIB, 2 * RF_GIB);
	for (int uc = 0; uc < PLAN_USE_CASES; uc++)
		plan_and_brute(&a, &hw, (enum plan_use_case)uc, 5, false, 1024);
}
END_TEST

START_TEST(dense_with_a_binding_speed_floor)
{
	struct model_arch a;
	struct plan_machine hw;

	t_tiny_dense(&a);
	t_gpu_machine(&hw, 64 * RF_MIB, 2 * RF_GIB);
	/* A floor that layers on the host cannot reach: partial offloads drop out. */
	plan_and_brute(&a, &hw, PLAN_GENERAL, 2000, false, 1024);
	plan_and_brute(&a, &hw, PLAN_LONG_CONTEXT, 2000, false, 1024);
}
END_TEST

START_TEST(general_asks_interactive_speed_where_reachable)
{
	/* The GPU's bandwidth sweeps the tiny model's speeds across the tiers: fluent where a
	 * Q4_K_M-class setup reaches 20 tokens/s, interactive at 15, else near the fastest such
	 * setup, and the usable floor where that is slower still. Each outcome is checked against
	 * the brute force (check_interactive), for coding too, and each occurs. */
	static const double gbs[] = {360, 1.2, 0.5, 0.2, 0.15};
	struct model_arch a;
	struct plan_machine hw;
	int seen[4] = {0, 0, 0, 0};

	t_tiny_dense(&a);
	for (size_t i = 0; i < sizeof(gbs) / sizeof(gbs[0]); i++) {
		struct model_params mp;
		struct plan_model m = {
			.arch = &a, .params = &mp, .weights = weights_fn, .fixed_ftype = -1};
		struct plan_request r;
		struct plan_answer *ans = malloc(sizeof(*ans));

		t_gpu_machine(&hw, 96 * RF_MIB, 2 * RF_GIB);
		hw.speed.devices[0].bandwidth_gbs = gbs[i];
		hw.speed.host.bandwidth_gbs = gbs[i] / 8;
		plan_and_brute(&a, &hw, PLAN_GENERAL, 0, false, 1024);
		plan_and_brute(&a, &hw, PLAN_CODING, 0, false, 1024);
		ck_assert_ptr_nonnull(ans);
		ck_assert_int_eq(model_param_counts(&a, &mp), 0);
		plan_request_default(&r);
		ck_assert_int_eq(plan_infer(&m, &hw, &quality, &r, ans), 0);
		printf("  %.2f GB/s: floor %.1f, %s at %.1f tok/s\n", gbs[i], ans->floor_tps,
		       rf_ftype_name(ans->best.setup.ftype), ans->best.res.decode_tps);
		seen[ans->floor_tps >= PLAN_FLUENT_TPS     ? 0 :
		     ans->interactive                      ? 1 :
		     ans->floor_tps > PLAN_MIN_TPS * 1.001 ? 2 :
							     3]++;
		if (ans->interactive) {
			ck_assert(strstr(ans->objective, "at interactive speed"));
		} else {
			int said = 0;
			for (int n = 0; n < ans->n_notes; n++)
				said += strstr(ans->notes[n], "reaches interactive speed") != NULL;
			ck_assert_int_eq(said, 1);
		}
		free(ans);
	}
	ck_assert_msg(seen[0] && seen[1] && seen[2] && seen[3],
		      "fluent %d, interactive %d, near the fastest %d, usable %d", seen[0], seen[1],
		      seen[2], seen[3]);
}
END_TEST

START_TEST(moe_experts_in_ram_beat_brute_force)
{
	struct model_arch a;
	struct plan_machine hw;

	tiny_moe(&a);
	/* Q8_0 is ~650 MiB: a 400 MiB GPU holds attention, the head and some experts. */
	t_gpu_machine(&hw, 400 * RF_MIB, 4 * RF_GIB);
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
	t_gpu_machine(&hw, 4 * RF_GIB, 8 * RF_GIB);
	format_setup(&a, &mp, w, RF_FT_Q8_0, &s);
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
	t_tiny_dense(&a);
	ck_assert_int_eq(model_param_counts(&a, &mp), 0);
	t_gpu_machine(&hw, 96 * RF_MIB, 2 * RF_GIB);
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

START_TEST(vllm_is_sized_by_its_capacity_model)
{
	struct model_arch a;
	struct model_params mp;
	struct plan_machine hw;
	struct plan_setup s;
	struct vllm_setup v;
	struct vllm_capacity direct, planned;
	struct plan_result *r = malloc(sizeof(*r));
	int64_t len;

	ck_assert_ptr_nonnull(r);
	t_tiny_dense(&a);
	ck_assert_int_eq(model_param_counts(&a, &mp), 0);
	/* vLLM captures its CUDA graphs (about 1 GiB) beyond its share: a GPU of 12 GiB. */
	t_vllm_machine(&hw, 12 * RF_GIB, 16 * RF_GIB);
	memset(&s, 0, sizeof(s));
	s.runtime = PLAN_RT_VLLM;
	s.vformat = PLAN_VLLM_FP8;
	s.tp = 1;
	s.vllm_util = 0.9;
	rf_infer_params_default(&s.p);
	s.p.type_k = s.p.type_v = RF_GT_Q8_0;
	/* The planner's capacity is serve_vllm's for the same flags. */
	ck_assert_int_eq(plan_vllm_capacity(&a, NULL, &hw, &s, &planned), 0);
	vllm_setup_default(&v);
	v.precision = VLLM_FP8;
	v.kv_dtype = VLLM_KV_FP8;
	v.max_model_len = VLLM_DEFAULT_BLOCK_SIZE;
	ck_assert_int_eq(vllm_capacity(&a, &v, hw.vgpu, 1, &direct, NULL), 0);
	ck_assert_int_gt(direct.kv_cache_tokens, 0);
	ck_assert_int_eq(planned.kv_cache_tokens, direct.kv_cache_tokens);
	ck_assert_int_eq(planned.weights_bytes_total, direct.weights_bytes_total);
	/* Four requests fit when the cache holds four of their lengths, not one more token. */
	len = direct.kv_cache_tokens / 4;
	s.p.n_parallel = 4;
	s.max_num_seqs = 4;
	s.p.n_ctx = len > a.max_position_embeddings ? a.max_position_embeddings : len;
	ck_assert_int_eq(plan_evaluate(&a, &mp, NULL, &hw, &s, r), 0);
	ck_assert(r->fits);
	ck_assert(r->aggregate_tps > r->decode_tps);       /* batching */
	ck_assert(r->gpu_util > 0.9 && r->gpu_util < 1.0); /* the pool and the CUDA graphs */
	s.p.n_parallel = 5;
	s.max_num_seqs = 5;
	ck_assert_int_eq(plan_evaluate(&a, &mp, NULL, &hw, &s, r),
			 0); /* fewer tokens than 5 x len */
	ck_assert_int_eq(r->fits, direct.kv_cache_tokens >= 5 * s.p.n_ctx);
	/* Tensor parallelism: a power of two of the GPUs dividing the heads (8 of them, 2 KV). */
	hw.n_vgpu = 4;
	for (int i = 1; i < 4; i++)
		hw.vgpu[i] = hw.vgpu[0];
	ck_assert_int_eq(plan_vllm_tp(&a, &hw), 4);
	hw.n_vgpu = 3;
	ck_assert_int_eq(plan_vllm_tp(&a, &hw), 2);
	hw.n_vgpu = 0;
	ck_assert_int_eq(plan_vllm_tp(&a, &hw), 0);
	ck_assert_str_eq(plan_vllm_format_flag(PLAN_VLLM_FP8), "fp8");
	ck_assert_ptr_null(plan_vllm_format_flag(PLAN_VLLM_BF16));
	ck_assert_int_eq(plan_vllm_precision(PLAN_VLLM_AWQ), VLLM_AWQ);
	/* The default share of a free GPU, less when others hold memory. */
	ck_assert_double_eq(plan_vllm_gpu_util(80 * RF_GIB, 80 * RF_GIB), 0.90);
	ck_assert_double_eq(plan_vllm_gpu_util(80 * RF_GIB, 40 * RF_GIB), 0.45);
	free(r);
}
END_TEST

START_TEST(both_runtimes_beat_brute_force)
{
	struct model_arch a;
	struct plan_machine hw;
	struct space sp;

	t_tiny_dense(&a);
	/* 12 GiB: vLLM's reserves (CUDA's, the graphs, profiling) leave it room too. */
	t_vllm_machine(&hw, 12 * RF_GIB, 16 * RF_GIB);
	for (int uc = 0; uc < PLAN_USE_CASES; uc++) {
		sp = plan_and_brute_np(&a, &hw, (enum plan_use_case)uc, 5, false, 2048, 1);
		ck_assert_int_gt(sp.feasible_rt[PLAN_RT_VLLM], 0);
		ck_assert_int_gt(sp.feasible_rt[PLAN_RT_LLAMA_CPP], 0);
	}
}
END_TEST

/* vLLM's paged cache reserves nothing per request: with many users --max-model-len is the use
 * case's length (up to the whole cache), not the cache split by the users; the users hold
 * their planned share together. */
START_TEST(vllm_length_is_not_split_by_the_users)
{
	struct model_arch a;
	struct model_params mp;
	struct plan_model m = {.arch = &a, .params = &mp, .weights = weights_fn, .fixed_ftype = -1};
	struct plan_machine hw;
	struct plan_request r;
	struct plan_answer *ans = malloc(sizeof(*ans));
	const struct plan_setup *s;

	ck_assert_ptr_nonnull(ans);
	t_tiny_dense(&a);
	ck_assert_int_eq(model_param_counts(&a, &mp), 0);
	t_vllm_machine(&hw, 12 * RF_GIB, 16 * RF_GIB);
	plan_request_default(&r);
	r.use_case = PLAN_GENERAL;
	r.runtime = PLAN_RT_VLLM;
	r.n_parallel = 256; /* about 2.6M tokens of cache: 10k each */
	ck_assert_int_eq(plan_infer(&m, &hw, &quality, &r, ans), 0);
	ck_assert(ans->found);
	s = &ans->best.setup;
	ck_assert_int_eq(s->runtime, PLAN_RT_VLLM);
	/* The cache holds the users' shares together... */
	ck_assert_int_ge(ans->best.res.kv_tokens, 256 * s->vllm_seq_ctx);
	ck_assert_int_eq(ans->best.ctx, s->vllm_seq_ctx);
	ck_assert_int_ge(s->vllm_seq_ctx, PLAN_MIN_CTX);
	/* ...while one request may be as long as the use case takes, where the cache holds it. */
	ck_assert_msg(s->p.n_ctx > s->vllm_seq_ctx, "kv %lld ctx %lld seq %lld",
		      (long long)ans->best.res.kv_tokens, (long long)s->p.n_ctx,
		      (long long)s->vllm_seq_ctx);
	ck_assert_int_eq(s->p.n_ctx, ans->best.res.kv_tokens >= PLAN_GENERAL_CTX_CAP ?
					     PLAN_GENERAL_CTX_CAP :
					     ans->best.res.kv_tokens / RF_KV_PAD * RF_KV_PAD);
	free(ans);
}
END_TEST

START_TEST(concurrent_streams_beat_brute_force)
{
	struct model_arch a;
	struct plan_machine hw;
	struct space sp;

	t_tiny_dense(&a);
	t_vllm_machine(&hw, 12 * RF_GIB, 16 * RF_GIB);
	/* Eight sequences: contexts per sequence, the objective's speed is all of them together. */
	sp = plan_and_brute_np(&a, &hw, PLAN_GENERAL, 5, false, 2048, 8);
	ck_assert_int_gt(sp.feasible_rt[PLAN_RT_VLLM], 0);
	sp = plan_and_brute_np(&a, &hw, PLAN_SPEED, 5, false, 2048, 8);
	ck_assert_int_gt(sp.feasible_rt[PLAN_RT_LLAMA_CPP], 0);
	ck_assert(sp.best_agg > 0);
}
END_TEST

START_TEST(a_smaller_ubatch_frees_compute_buffer)
{
	struct model_arch a;
	struct model_params mp;
	struct plan_machine hw;
	struct plan_setup s;
	struct rf_mem_weights *w = malloc(sizeof(*w));
	struct plan_result *r512 = malloc(sizeof(*r512)), *r256 = malloc(sizeof(*r256));

	ck_assert(w && r512 && r256);
	t_tiny_dense(&a);
	t_gpu_machine(&hw, 96 * RF_MIB, 2 * RF_GIB);
	format_setup(&a, &mp, w, RF_FT_Q4_K_M, &s);
	s.p.flash_attn = true;
	s.p.n_ctx = 8192;
	ck_assert_int_eq(plan_evaluate(&a, &mp, w, &hw, &s, r512), 0);
	s.p.n_ubatch = 256;
	ck_assert_int_eq(plan_evaluate(&a, &mp, w, &hw, &s, r256), 0);
	/* The output logits of a micro-batch (32000 x 4 bytes a token) halve with it. */
	ck_assert_int_le(r256->mem.per_device[0].compute_bytes + 256 * 32000 * 4,
			 r512->mem.per_device[0].compute_bytes);
	ck_assert_int_eq(r256->mem.kv_cache_bytes, r512->mem.kv_cache_bytes);
	ck_assert_double_eq(r256->decode_tps, r512->decode_tps);
	free(w);
	free(r512);
	free(r256);
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
	ck_assert_int_eq(api_quality_from_json(doc, &q, why, sizeof(why)), RF_E_INVALID_VALUE);
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
	t_tiny_dense(&a);
	ck_assert_int_eq(model_param_counts(&a, &mp), 0);
	t_gpu_machine(&hw, 8 * RF_MIB, 16 * RF_MIB);
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
	tcase_add_test(tc, general_asks_interactive_speed_where_reachable);
	tcase_add_test(tc, moe_experts_in_ram_beat_brute_force);
	tcase_add_test(tc, n_cpu_moe_moves_the_expert_bytes_to_the_host);
	tcase_add_test(tc, the_evaluator_is_the_estimator);
	tcase_add_test(tc, vllm_is_sized_by_its_capacity_model);
	tcase_add_test(tc, both_runtimes_beat_brute_force);
	tcase_add_test(tc, concurrent_streams_beat_brute_force);
	tcase_add_test(tc, vllm_length_is_not_split_by_the_users);
	tcase_add_test(tc, a_smaller_ubatch_frees_compute_buffer);
	tcase_add_test(tc, the_quality_table_orders_as_measured);
	tcase_add_test(tc, a_bad_quality_table_is_refused);
	tcase_add_test(tc, nothing_fits_says_what_it_needs);
	suite_add_tcase(s, tc);
	return s;
}
