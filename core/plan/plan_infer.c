/*
 * The inference planner (see plan_infer.h): enumerate the discrete choices, solve n_ctx and
 * the offload split for each, keep every setup that fits, then choose by the use case's
 * objective and keep the Pareto front.
 */
#include "core/text.h"
#include "core/plan/plan_infer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/quant.h"
#include "core/plan/plan_estimate.h"
#include "core/plan/plan_rope.h"
#include "core/format.h"

/* The llama.cpp file types searched, best quality first: the formats GGUF repositories
 * commonly publish that the quality table rates. */
static const int llama_formats[] = {RF_FT_F16,    RF_FT_Q8_0,   RF_FT_Q6_K,   RF_FT_Q5_K_M,
				    RF_FT_Q5_K_S, RF_FT_Q4_K_M, RF_FT_Q4_K_S, RF_FT_IQ4_XS,
				    RF_FT_Q3_K_L, RF_FT_Q3_K_M, RF_FT_IQ3_M,  RF_FT_IQ3_XXS,
				    RF_FT_Q2_K,   RF_FT_IQ2_M};
#define N_LLAMA_FORMATS ((int)(sizeof(llama_formats) / sizeof(llama_formats[0])))

#define MAX_CANDS 512
#define MAX_VCAPS 32   /* vLLM capacities kept per request: formats x KV dtypes x GPU shares */
#define SPEED_TIE 0.05 /* speeds within 5% are equal: the speed model is good to about 10% */
/* A setup this many times faster, at most the quality floor's divergence worse, wins. */
#define DOMINANCE_SPEEDUP 2.0
#define DOMINANCE_KLD_DEFAULT 0.03 /* the margin when the quality table names no floor */
#define CTX_TIE 0.05               /* long_context: contexts within 5% are equal */
#define RELAXED_FLOOR 0.8
#define UBATCH_DEFAULT 512 /* llama.cpp's -ub */
/* The micro-batch tried where memory limits the context: half the compute buffers (their
 * activations scale with it), prompts in twice the steps. The objective weighs decode; prefill,
 * whose speed with weights in host memory follows n_ubatch (core/fit/speed.h), is weighed
 * after the choice (widen_ubatch). */
#define UBATCH_SMALL 256
/* Where the chosen setup copies host weights to the GPU once per micro-batch, a larger one
 * copies them less often (core/fit/speed.h). After the choice, n_ubatch is widened where that
 * raises the prefill of the use case's prompt by PREFILL_GAIN and decode stays within
 * SPEED_TIE, moving at most UBATCH_MOVES more layers (or layers' experts) to the host for its
 * compute buffers: for long_context and coding (documents, retrieved passages, code) to
 * UBATCH_PREFILL,
 * judged on a PREFILL_PROMPT-token prompt; for general and quality (chat: short prompts, a
 * small micro-batch leaves more experts on the GPU) back to llama.cpp's default, judged on a
 * prompt of that many tokens. speed keeps the micro-batch its decode chose. */
#define UBATCH_PREFILL 2048
#define PREFILL_PROMPT 4096
#define PREFILL_GAIN 1.25
#define UBATCH_MOVES 4

const char *const plan_use_case_names[PLAN_USE_CASES + 1] = {
	[PLAN_GENERAL] = "general", [PLAN_LONG_CONTEXT] = "long_context",
	[PLAN_SPEED] = "speed",     [PLAN_QUALITY] = "quality",
	[PLAN_CODING] = "coding",   [PLAN_USE_CASES] = NULL};

const char *plan_use_case_name(enum plan_use_case u)
{
	return u >= 0 && u < PLAN_USE_CASES ? plan_use_case_names[u] : "unknown";
}

bool plan_use_case_interactive(enum plan_use_case u)
{
	return u == PLAN_GENERAL || u == PLAN_CODING;
}

void plan_request_default(struct plan_request *r)
{
	memset(r, 0, sizeof(*r));
	r->use_case = PLAN_GENERAL;
	r->runtime = PLAN_RT_LLAMA_CPP;
	r->ftype = -1;
	r->vformat = -1;
	r->n_parallel = 1;
	r->min_tps = 0;      /* the use case's floor */
	r->max_gpu_util = 0; /* the runtime's */
}

/* One setup found to fit, with what the objective reads: ctx is each sequence's context
 * (llama.cpp's n_ctx shared by n_parallel, vLLM's max_model_len), tps one stream's decode
 * while all n_parallel run (the speed floor's), agg all of them together (the objective's). */
struct cand {
	struct plan_setup s;
	double kld, tps, agg;
	int64_t ctx;
};

struct work {
	const struct plan_model *m;
	const struct plan_machine *hw;
	const struct plan_quality *q;
	const struct plan_request *r;
	struct rf_mem_weights *w;    /* the current format's weights */
	struct plan_wsum wsum;       /* and their sums */
	struct plan_est_answer *ans; /* scratch: the one estimate's answer */
	struct plan_result *res;     /* its result (&ans->res) */
	int evaluated;
	struct cand *c;
	int n;
	int64_t ctx_target, ctx_cap;
	double max_util;
	double floor_tps; /* long_context: the speed the split toward the host must keep */
	double floor_kld; /* long_context and speed: the quality floor; < 0 none */
	double best_kld;  /* the best divergence meeting every constraint so far; < 0 none */
	bool moe;
	bool searched[2];  /* the runtimes searched (enum plan_runtime) */
	int64_t np;        /* the sequences planned to run together */
	bool no_walk;      /* long_context: only the edge of the splits toward the host */
	bool interactive;  /* general, coding: the choice is held to an interactive tier (choose) */
	double q4_fastest; /* general, coding, not interactive: the fastest setup at the quality
			      floor's class with the context asked (0: none) */
	/* vLLM's capacity of each (format, KV dtype, share) searched: the answer's setups are
	 * finished from them, without walking the model's tensors again. */
	struct vllm_facts *vf; /* what vLLM loads of the model, summed once for every capacity */
	struct plan_setup *vkey;
	struct vllm_capacity *vcap;
	int n_vcap;
	int64_t min_total;
};

/* Whether s runs the model in the format it was released in (gpt-oss's MXFP4). */
static bool native(const struct work *k, const struct plan_setup *s)
{
	return k->m->native_mxfp4 && s->runtime == PLAN_RT_LLAMA_CPP;
}

/* One stream's decode while all n_parallel run, from a result. */
static double stream_tps(const struct work *k, const struct plan_result *res)
{
	return k->np > 1 ? res->aggregate_tps / (double)k->np : res->decode_tps;
}

static bool all_unified(const struct plan_machine *hw);

/* The share of the host's budget the last evaluation holds there (the reclaimable page cache
 * of repacked weights not counted); 0 where the host is not a pool of its own (unified memory)
 * or its budget is not known. */
static double host_util(const struct work *k)
{
	const struct rf_mem_estimate *m = &k->res->mem;
	int64_t b = k->hw->host.budget_bytes;

	if (b <= 0 || all_unified(k->hw))
		return 0;
	return (double)(m->host_bytes - m->host_reclaimable_bytes) / (double)b;
}

/* Evaluates s into k->res with the one estimate (plan_estimate): a llama.cpp setup over the
 * current format's weights and their sums, a vLLM setup over its capacity c (sized already;
 * NULL: sized for the call). Returns 0 or a negative rf_err. */
static int evaluate(struct work *k, const struct plan_setup *s, const struct vllm_capacity *c)
{
	struct plan_est_request q = {.kind = PLAN_EST_LLAMA_CPP};
	const struct plan_est_context x = {
		.a = k->m->arch, .mp = k->m->params, .w = k->w, .sum = &k->wsum, .hw = k->hw};

	if (s->runtime == PLAN_RT_VLLM) {
		q.kind = PLAN_EST_VLLM;
		q.u.vllm.setup = s;
		q.u.vllm.cap = c;
	} else {
		q.u.llama = s;
	}
	return plan_estimate(&q, &x, k->ans);
}

/* Evaluates s; returns 1 when it fits with headroom, 0 when not, or a negative rf_err. With
 * gpu_only, only the GPUs' headroom is asked (the offload split's bisection). */
static int try_setup(struct work *k, const struct plan_setup *s, bool gpu_only)
{
	int rc = evaluate(k, s, NULL);

	k->evaluated++;
	if (rc < 0)
		return rc;
	if (k->res->gpu_util > k->max_util)
		return 0;
	if (!gpu_only && host_util(k) > PLAN_MAX_HOST_UTIL)
		return 0;
	return gpu_only || k->res->fits ? 1 : 0;
}

/* How full the fullest pool of the last evaluation is against its limit (a GPU against
 * max_util of its budget, the host against PLAN_MAX_HOST_UTIL of its budget): <= 1 fits. */
static double fill(const struct work *k)
{
	double g = k->res->gpu_util / k->max_util, u = k->res->mem.utilization;
	double h = host_util(k) / PLAN_MAX_HOST_UTIL;

	if (h > g)
		g = h;
	return g > u ? g : u;
}

/* The largest n_ctx in [lo, hi] (multiples of RF_KV_PAD, hi itself at the top) at which s
 * fits; 0 when even lo does not. Memory grows with n_ctx, nearly in proportion (cells, masks,
 * scores), so the boundary is found by false position on the fill of the fullest pool, which
 * lands next to it in one or two steps, with bisection whenever a step keeps the same side:
 * the bracket always holds a fitting n_ctx and a failing one, so the answer is exact. */
static int64_t solve_ctx(struct work *k, struct plan_setup *s, int64_t lo, int64_t hi)
{
	int64_t a, b;
	double fa, fb;
	int rc, last = 0;

	if (lo > hi)
		return 0;
	if (k->r->n_ctx > 0) {
		s->p.n_ctx = k->r->n_ctx;
		rc = try_setup(k, s, false);
		return rc == 1 ? k->r->n_ctx : (rc < 0 ? rc : 0);
	}
	s->p.n_ctx = hi;
	if ((rc = try_setup(k, s, false)) != 0)
		return rc == 1 ? hi : rc;
	fb = fill(k);
	s->p.n_ctx = lo;
	if ((rc = try_setup(k, s, false)) != 1)
		return rc < 0 ? rc : 0;
	fa = fill(k);
	a = lo / RF_KV_PAD;                         /* fits */
	b = hi / RF_KV_PAD + (hi % RF_KV_PAD != 0); /* fails (or lies past hi) */
	while (b - a > 1) {
		int64_t m = a + (b - a) / 2;
		if (last != 2 && fb > fa && fa <= 1 && fb > 1) {
			m = a + (int64_t)((1 - fa) / (fb - fa) * (double)(b - a));
			m = m <= a ? a + 1 : m >= b ? b - 1 : m;
		}
		s->p.n_ctx = m * RF_KV_PAD;
		rc = try_setup(k, s, false);
		if (rc < 0)
			return rc;
		/* Two steps on the same side: the next one bisects. */
		last = (rc == 1 ? 1 : -1) == (last == 2 ? 0 : last) ? 2 : (rc == 1 ? 1 : -1);
		if (rc == 1) {
			a = m;
			fa = fill(k);
		} else {
			b = m;
			fb = fill(k);
		}
	}
	return a * RF_KV_PAD > lo ? a * RF_KV_PAD : lo;
}

/* The context each sequence needs when the request fixes n_ctx (shared by n_parallel). */
static int64_t fixed_ctx(const struct work *k)
{
	return k->r->n_ctx > 0 ? k->r->n_ctx / k->np : 0;
}

/* Records the setup just evaluated in k->res as s with each sequence's context ctx. */
static void record(struct work *k, const struct plan_setup *s, int64_t ctx)
{
	struct cand *c;

	if (k->n >= MAX_CANDS)
		return;
	c = &k->c[k->n++];
	c->s = *s;
	c->ctx = ctx;
	c->tps = stream_tps(k, k->res);
	c->agg = k->res->aggregate_tps;
	c->kld = plan_quality_setup(k->q, s, native(k, s));
	if (c->kld >= 0 && c->ctx >= (k->r->n_ctx > 0 ? fixed_ctx(k) : k->ctx_target) &&
	    c->tps >= k->floor_tps && (k->floor_kld < 0 || c->kld <= k->floor_kld) &&
	    (k->best_kld < 0 || c->kld < k->best_kld))
		k->best_kld = c->kld;
}

/* Records s at n_ctx ctx (re-evaluated for its speed). */
static int push(struct work *k, struct plan_setup *s, int64_t ctx)
{
	int rc;

	if (ctx <= 0 || k->n >= MAX_CANDS)
		return 0;
	s->p.n_ctx = ctx;
	rc = try_setup(k, s, false);
	if (rc <= 0)
		return rc;
	record(k, s, ctx / k->np);
	return 0;
}

/* Solves n_ctx for s and records it. Returns the n_ctx (0: none fits) or a negative rf_err. */
static int64_t solve_push(struct work *k, struct plan_setup *s, int64_t lo)
{
	int64_t ctx = solve_ctx(k, s, lo * k->np, k->ctx_cap * k->np);
	int rc;

	if (ctx > 0 && (rc = push(k, s, ctx)) < 0)
		return rc;
	return ctx;
}

/* The smallest (more_is_less: n_cpu_moe) or largest (n_gpu_layers) value in [lo, hi] at which
 * s fits on the GPUs at n_ctx ctx; -1 when none. GPU memory falls as n_cpu_moe grows and rises
 * with n_gpu_layers. */
static int64_t solve_split(struct work *k, struct plan_setup *s, bool experts, int64_t lo,
			   int64_t hi, int64_t ctx)
{
	int64_t best = -1;

	s->p.n_ctx = ctx;
	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;
		int rc;
		if (experts)
			s->p.n_cpu_moe = mid;
		else
			s->p.n_gpu_layers = mid;
		rc = try_setup(k, s, true);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			best = mid;
			if (experts)
				hi = mid - 1;
			else
				lo = mid + 1;
		} else if (experts) {
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return best;
}

/* The split between v (the most on the GPUs) and all on the host with the least on the GPUs
 * whose decode still reaches k->floor_tps (speed falls monotonically toward the host); -1
 * when not even v does, or a negative rf_err below -1. */
static int64_t slowest_split(struct work *k, struct plan_setup *s, bool experts, int64_t v,
			     int64_t need)
{
	const int64_t n_layer = model_n_layer(k->m->arch);
	int64_t lo = experts ? v : 0, hi = experts ? n_layer : v, best = -1;

	s->p.n_ctx = need;
	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;
		int rc;
		if (experts)
			s->p.n_cpu_moe = mid;
		else
			s->p.n_gpu_layers = mid;
		rc = evaluate(k, s, NULL);
		k->evaluated++;
		if (rc < 0)
			return rc == -1 ? -2 : rc;
		if (stream_tps(k, k->res) >= k->floor_tps) {
			best = mid;
			if (experts)
				lo = mid + 1;
			else
				hi = mid - 1;
		} else if (experts) {
			hi = mid - 1;
		} else {
			lo = mid + 1;
		}
	}
	return best;
}

/* The split (n_cpu_moe when experts, else n_gpu_layers) that fits n_ctx need with the most on
 * the GPUs, recorded with its n_ctx solved; long_context also walks the splits toward the
 * host, which trade speed for context. Returns 0 or a negative rf_err. */
static int add_split(struct work *k, const struct plan_setup *base, bool experts, int64_t need)
{
	const int64_t n_layer = model_n_layer(k->m->arch);
	struct plan_setup s = *base;
	int64_t v;

	need *= k->np; /* the cells of every sequence */
	s.p.n_gpu_layers = experts ? -1 : 0;
	s.p.n_cpu_moe = 0;
	v = experts ? solve_split(k, &s, true, 1, n_layer, need) :
		      solve_split(k, &s, false, 0, n_layer, need);
	if (v < 0)
		return v == -1 ? 0 : (int)v;
	const bool long_ctx = k->r->use_case == PLAN_LONG_CONTEXT;
	for (int64_t step = 0; step <= (long_ctx && !k->no_walk ? 4 : 0); step++) {
		int64_t ctx;
		if (experts)
			s.p.n_cpu_moe = v + (n_layer - v) * step / 4;
		else
			s.p.n_gpu_layers = v - v * step / 4;
		ctx = solve_push(k, &s, PLAN_MIN_CTX);
		if (ctx < 0)
			return (int)ctx;
	}
	if (long_ctx) {
		/* Context grows as the split moves to the host and speed falls: the longest
		 * context at the floor is the split furthest toward the host that keeps it. */
		int64_t edge = slowest_split(k, &s, experts, v, need);
		if (edge < -1)
			return (int)edge;
		if (edge >= 0) {
			if (experts)
				s.p.n_cpu_moe = edge;
			else
				s.p.n_gpu_layers = edge;
			if ((edge = solve_push(k, &s, PLAN_MIN_CTX)) < 0)
				return (int)edge;
		}
	}
	return 0;
}

/* Whether every GPU of hw shares the host's RAM (Apple silicon, Jetson). */
static bool all_unified(const struct plan_machine *hw)
{
	for (int i = 0; i < hw->n_dev; i++)
		if (!hw->dev[i].unified)
			return false;
	return hw->n_dev > 0;
}

/* Every setup of one format and KV type: all on the GPUs; when that does not reach the
 * context asked (or the use case's cap), the splits that do: MoE experts in host memory, and
 * whole layers on the host. */
static int add_base_ub(struct work *k, const struct plan_setup *base, bool splits,
		       int64_t *full_ctx)
{
	const bool long_ctx = k->r->use_case == PLAN_LONG_CONTEXT;
	struct plan_setup s = *base;
	int64_t full, needs[3];
	int n_needs = 0, rc;

	s.p.n_gpu_layers = k->hw->n_dev > 0 ? -1 : 0;
	s.p.n_cpu_moe = 0;
	full = solve_push(k, &s, PLAN_MIN_CTX);
	if (full < 0)
		return (int)full;
	full /= k->np; /* each sequence's */
	*full_ctx = full;
	/* Layers or experts in host memory only where that memory is known, and is not the
	 * GPU's own: on unified memory the "host" is the same RAM, and what leaves the GPU's
	 * working set only crowds out the OS (see unified_note). */
	if (k->hw->n_dev == 0 || s.runtime == PLAN_RT_VLLM || !splits ||
	    k->hw->host.budget_bytes < 0 || all_unified(k->hw))
		return 0;
	if (k->r->n_ctx > 0) {
		needs[n_needs++] = fixed_ctx(k);
	} else {
		/* The target, the cap (more context for a slower split), and the least context
		 * when even the target does not fit. */
		if (full < k->ctx_target)
			needs[n_needs++] = k->ctx_target;
		if (full < k->ctx_cap && (long_ctx || k->ctx_cap > k->ctx_target))
			needs[n_needs++] = k->ctx_cap;
		if (full < PLAN_MIN_CTX || full == 0)
			needs[n_needs++] = PLAN_MIN_CTX;
	}
	if (full >= k->ctx_cap || (k->r->n_ctx > 0 && full >= fixed_ctx(k)))
		return 0;
	for (int i = 0; i < n_needs; i++) {
		if (k->moe && (rc = add_split(k, base, true, needs[i])) < 0)
			return rc;
		if ((rc = add_split(k, base, false, needs[i])) < 0)
			return rc;
	}
	return 0;
}

/* add_base_ub at llama.cpp's micro-batch and, where the GPUs then limit the context, at a
 * smaller one, whose compute buffers leave more of them for context or layers. */
static int add_base(struct work *k, const struct plan_setup *base, bool splits, int64_t *full_ctx)
{
	struct plan_setup u = *base;
	int64_t full_small = 0;
	int rc = add_base_ub(k, base, splits, full_ctx);

	if (rc < 0 || k->hw->n_dev == 0 ||
	    *full_ctx >= (k->r->n_ctx > 0 ? fixed_ctx(k) : k->ctx_cap))
		return rc;
	/* The smaller micro-batch moves the split by a layer or the context by a little: the
	 * steps toward the host, which trade speed for context in large strides, are not
	 * redone (its edge at the speed floor is). */
	u.p.n_ubatch = UBATCH_SMALL;
	k->no_walk = true;
	rc = add_base_ub(k, &u, splits, &full_small);
	k->no_walk = false;
	return rc;
}

/* Loads the weights of a format into k->w. Returns 0, 1 to skip the format, or RF_E_NOMEM. */
static int load_format(struct work *k, const struct plan_setup *s)
{
	int rc;

	if (s->runtime == PLAN_RT_VLLM)
		return 0; /* vllm_capacity weighs its own formats */
	rc = k->m->weights(k->m->weights_ctx, k->m->arch, s->ftype, k->w);
	if (rc == RF_E_NOMEM)
		return rc;
	if (rc < 0)
		return 1;
	plan_weights_sum(k->m->arch, k->w, s->ftype, k->hw->host.repack_isa, &k->wsum);
	plan_wsum_rates(&k->wsum, k->hw);
	/* The machine's recorded runs, as /api/estimate reads them for this model and format. */
	if (k->m->calib)
		(void)plan_wsum_calibrate(&k->wsum, k->m->arch, k->m->params, k->w, k->hw,
					  k->m->calib, k->m->calib_model, k->m->calib_name);
	return 0;
}

/* The smallest need seen: the setup at PLAN_MIN_CTX with every layer on the GPUs. */
static void note_need(struct work *k, const struct plan_setup *base)
{
	struct plan_setup s = *base;

	s.p.n_ctx = PLAN_MIN_CTX;
	s.p.n_gpu_layers = k->hw->n_dev > 0 ? -1 : 0;
	if (evaluate(k, &s, NULL) == 0 &&
	    (k->min_total < 0 || k->res->mem.total_bytes < k->min_total))
		k->min_total = k->res->mem.total_bytes;
}

/* Whether a candidate within divergence kld was found. */
static bool any_within(const struct work *k, double kld)
{
	for (int i = 0; i < k->n; i++)
		if (k->c[i].kld >= 0 && k->c[i].kld <= kld)
			return true;
	return false;
}

/* The divergence by which a faster setup may be worse and still win (see undominated). */
static double dominance_margin(const struct plan_quality *q)
{
	double m = plan_quality_floor(q);

	return m >= 0 ? m : DOMINANCE_KLD_DEFAULT;
}

/* Whether a setup of divergence kld cannot be the choice whatever its split: below the quality
 * floor, or worse than a setup already meeting every constraint by more than a tie (quality:
 * the formats come best first) or by more than the dominance margin (general, where a much
 * faster setup a little worse wins). Such a setup is still recorded with every layer on the
 * GPUs, for the alternatives; its splits are not searched. */
static bool hopeless(const struct work *k, double kld)
{
	enum plan_use_case uc = k->r->use_case;

	if (kld < 0)
		return false;
	if (k->floor_kld >= 0 && kld > k->floor_kld)
		return true;
	if (k->best_kld < 0)
		return false;
	if (uc == PLAN_QUALITY)
		return kld > k->best_kld + k->q->tie_kld;
	return plan_use_case_interactive(uc) && kld > k->best_kld + dominance_margin(k->q);
}

/* Whether weights of file type ft cannot fit whatever the split: 90% of the parameters at
 * the bits of the type most of the format's tensors get (the mixes only add bits) exceed
 * every budget together (the GPUs' with headroom, and the host's where it is known: with it
 * unknown, nothing is placed there). Skips computing a format's weights for nothing. */
static bool cannot_fit(const struct work *k, int ft)
{
	int t = rf_ftype_default_type(ft);
	double bound = 0.9 * (double)k->m->params->total * rf_gtype_bpw(t) / 8.0, room = 0;

	if (t < 0 || k->m->fixed_ftype >= 0)
		return false;
	for (int i = 0; i < k->hw->n_dev; i++) {
		if (k->hw->dev[i].budget_bytes < 0)
			return false;
		room += (double)k->hw->dev[i].budget_bytes * k->max_util;
	}
	if (k->hw->host.budget_bytes > 0)
		room += (double)k->hw->host.budget_bytes;
	else if (k->hw->n_dev == 0)
		return false;
	return bound > room;
}

/* Every llama.cpp setup: the formats, KV cache types, and the splits and n_ctx of each. */
static int search_llama(struct work *k, bool kv_q4)
{
	static const int kv_types[] = {RF_GT_F16, RF_GT_Q8_0};
	const struct plan_request *r = k->r;
	int formats[N_LLAMA_FORMATS];
	int nf = 0, rc;

	k->searched[PLAN_RT_LLAMA_CPP] = true;
	if (k->m->fixed_ftype >= 0) {
		formats[nf++] = k->m->fixed_ftype;
	} else if (r->ftype >= 0) {
		formats[nf++] = r->ftype;
	} else if (k->m->native_mxfp4) {
		formats[nf++] = RF_FT_MXFP4_MOE;
	} else {
		for (int i = 0; i < N_LLAMA_FORMATS; i++)
			if (plan_quality_weights(k->q, llama_formats[i]) >= 0 &&
			    (!k->m->gguf_held || llama_formats[i] >= 64 ||
			     (k->m->gguf_held >> llama_formats[i]) & 1))
				formats[nf++] = llama_formats[i];
	}
	for (int i = 0; i < nf; i++) {
		int64_t full_f16 = 0;
		struct plan_setup base;
		memset(&base, 0, sizeof(base));
		base.runtime = PLAN_RT_LLAMA_CPP;
		base.ftype = formats[i];
		rf_infer_params_default(&base.p);
		base.p.n_parallel = r->n_parallel;
		base.p.use_mmap = !r->no_mmap;
		if (r->choice_only) {
			struct plan_setup f16 = base;
			f16.p.type_k = f16.p.type_v = kv_q4 ? RF_GT_Q4_0 : RF_GT_F16;
			if (hopeless(k, plan_quality_setup(k->q, &f16, native(k, &f16))))
				continue;
		}
		/* Flash attention, as llama.cpp's default -fa auto turns it on for CUDA, Metal
		 * and the CPU (less memory, no slower); a quantized V cache needs it. */
		base.p.flash_attn = true;
		if (cannot_fit(k, base.ftype))
			continue;
		if ((rc = load_format(k, &base)) != 0) {
			if (rc < 0)
				return rc;
			continue;
		}
		for (int t = 0; t < (kv_q4 ? 1 : 2); t++) {
			int64_t full = 0;
			double kld;
			base.p.type_k = base.p.type_v = kv_q4 ? RF_GT_Q4_0 : kv_types[t];
			/* A quantized cache only buys context: not when the f16 one already has all
			 * the use case takes with every layer on the GPUs. */
			if (t == 1 && full_f16 >= k->ctx_cap)
				break;
			kld = plan_quality_setup(k->q, &base, native(k, &base));
			if ((rc = add_base(k, &base, !hopeless(k, kld), &full)) < 0)
				return rc;
			if (t == 0) {
				full_f16 = full;
				note_need(k, &base);
			}
		}
	}
	return 0;
}

/* The capacity vllm_setup kept for vLLM setup s, or NULL. */
static const struct vllm_capacity *vcap_of(const struct work *k, const struct plan_setup *s)
{
	for (int i = 0; i < k->n_vcap; i++) {
		const struct plan_setup *v = &k->vkey[i];
		if (v->vformat == s->vformat && v->p.type_k == s->p.type_k &&
		    v->vllm_util == s->vllm_util && v->tp == s->tp &&
		    v->max_num_seqs == s->max_num_seqs)
			return &k->vcap[i];
	}
	return NULL;
}

/* The vLLM setup s at the context vLLM's cache holds for each of its sequences together
 * (within the use case's cap, or the fixed n_ctx), recorded when it fits. Returns that
 * context (0: none fits) or a negative rf_err. vLLM sizes its cache from the rest of the
 * setup, before it checks --max-model-len, so the lengths are solved in closed form, in whole
 * 256-token steps: each sequence's share of the cache's tokens, and --max-model-len up to the
 * whole cache (paged attention reserves nothing per request: one long request may use what
 * the others leave, and vLLM queues or preempts when the cache is full). */
static int64_t vllm_setup(struct work *k, struct plan_setup *s)
{
	struct vllm_capacity c;
	int64_t ctx, seq;
	int rc;

	s->p.n_ctx = 0;
	s->vllm_seq_ctx = 0;
	if (vcap_of(k, s)) {
		c = *vcap_of(k, s); /* a search done again (a relaxed floor) */
	} else {
		rc = plan_vllm_capacity(k->m->arch, k->vf, k->hw, s, &c);
		k->evaluated++;
		if (rc < 0)
			return rc == RF_E_NOMEM ? rc : 0; /* a format or split vLLM refuses */
		if (k->n_vcap < MAX_VCAPS) {
			k->vkey[k->n_vcap] = *s;
			k->vcap[k->n_vcap++] = c;
		}
	}
	seq = c.kv_cache_tokens / k->np / RF_KV_PAD * RF_KV_PAD;
	ctx = c.kv_cache_tokens / RF_KV_PAD * RF_KV_PAD;
	/* Asked for: each request holds it, and none is longer (the use case's cap is for the
	 * context the planner chooses, not for one asked for). */
	if (k->r->n_ctx > 0)
		ctx = seq = seq >= fixed_ctx(k) ? fixed_ctx(k) : 0;
	if (seq > k->ctx_cap && k->r->n_ctx <= 0)
		seq = k->ctx_cap;
	if (ctx > k->ctx_cap && k->r->n_ctx <= 0)
		ctx = k->ctx_cap;
	if (seq < (k->r->n_ctx > 0 ? 1 : PLAN_MIN_CTX))
		return 0;
	s->p.n_ctx = ctx;
	s->vllm_seq_ctx = seq;
	(void)evaluate(k, s, &c);
	if (!k->res->fits)
		return 0;
	record(k, s, seq);
	return seq;
}

/* Every vLLM setup: its weight formats (the model's own MXFP4 for gpt-oss) and KV dtypes at
 * the largest tensor-parallel size, --gpu-memory-utilization 0.90 (or less where other
 * processes hold memory) and, where that leaves the use case short of context, 0.95. */
static int search_vllm(struct work *k)
{
	const struct plan_request *r = k->r;
	const int tp = plan_vllm_tp(k->m->arch, k->hw);
	double util = PLAN_VLLM_GPU_UTIL;
	bool all_free = true;
	int formats[PLAN_VLLM_FORMATS + 1];
	int nf = 0;

	if (tp < 1)
		return 0;
	k->searched[PLAN_RT_VLLM] = true;
	if (!k->vf->layer) {
		struct rf_tensor_list l = {0};
		int rc;
		if (k->m->vllm_facts) {
			rc = k->m->vllm_facts(k->m->vllm_facts_ctx, k->m->arch, k->vf);
		} else {
			rc = model_tensors(k->m->arch, &l);
			if (rc == 0)
				rc = vllm_facts_build(k->m->arch, &l, k->vf);
			rf_tensor_list_free(&l);
		}
		if (rc < 0)
			return rc == RF_E_NOMEM ? rc : 0; /* no tensors to weigh: no vLLM setup */
	}
	if (k->m->native_mxfp4)
		formats[nf++] = PLAN_VLLM_MXFP4;
	else if (r->vformat >= 0 && !(k->m->vllm_missing & (1u << r->vformat)))
		formats[nf++] = r->vformat;
	else if (r->vformat < 0)
		for (int f = 0; f < PLAN_VLLM_FORMATS; f++)
			if (!(k->m->vllm_missing & (1u << f)))
				formats[nf++] = f;
	for (int i = 0; i < tp; i++) {
		const struct vllm_gpu *g = &k->hw->vgpu[i];
		double u = plan_vllm_gpu_util(g->total_bytes,
					      g->free_bytes > 0 ? g->free_bytes : g->total_bytes);
		if (u < util)
			util = u;
		all_free = all_free && u >= PLAN_VLLM_GPU_UTIL;
	}
	/* The default share first, for both KV dtypes, so that on a tie it is kept. */
	for (int i = 0; i < nf; i++) {
		int64_t ctx_at[2] = {0, 0};
		for (int pass = 0; pass < 2; pass++)
			for (int t = 0; t < 2; t++) {
				struct plan_setup s;
				int64_t ctx;
				/* A higher share only where the default leaves context short and
				 * the GPUs hold nothing else. */
				if (pass == 1 &&
				    (ctx_at[t] >= k->ctx_cap || !all_free || r->n_ctx > 0))
					continue;
				/* An fp8 cache only buys context: not when the auto one has all
				 * the use case takes at this share. */
				if (t == 1 && ctx_at[0] >= k->ctx_cap &&
				    (pass == 0 || ctx_at[1] >= k->ctx_cap))
					continue;
				memset(&s, 0, sizeof(s));
				s.runtime = PLAN_RT_VLLM;
				s.ftype = -1;
				s.vformat = (enum plan_vllm_format)formats[i];
				s.tp = tp;
				s.vllm_util = pass ? PLAN_VLLM_GPU_UTIL_HIGH : util;
				s.max_num_seqs = r->n_parallel > 1 ? r->n_parallel : 0;
				rf_infer_params_default(&s.p);
				s.p.n_parallel = r->n_parallel;
				s.p.flash_attn = true;
				s.p.type_k = s.p.type_v = t ? RF_GT_Q8_0 : RF_GT_F16;
				if ((ctx = vllm_setup(k, &s)) < 0)
					return (int)ctx;
				ctx_at[t] = ctx;
			}
	}
	return 0;
}

static int search(struct work *k, bool kv_q4)
{
	int rc = 0;

	if (k->r->runtime != PLAN_RT_VLLM && !k->m->no_llama_cpp)
		rc = search_llama(k, kv_q4);
	if (rc == 0 && !kv_q4 &&
	    (k->r->runtime == PLAN_RT_VLLM || (k->r->runtime == PLAN_RT_AUTO && k->hw->n_vgpu > 0)))
		rc = search_vllm(k);
	return rc;
}

/* ---- choosing --------------------------------------------------------------------------- */

static double kld_of(const struct plan_choice *c)
{
	return c->kld < 0 ? 1e9 : c->kld;
}

static int64_t ctx_of(const struct plan_request *r, const struct plan_choice *c)
{
	int64_t cap = r->use_case == PLAN_LONG_CONTEXT ? c->ctx :
		      r->use_case == PLAN_SPEED        ? PLAN_SPEED_CTX_CAP :
							 PLAN_GENERAL_CTX_CAP;
	return c->ctx < cap ? c->ctx : cap;
}

enum crit {
	C_KLD, /* lower is better; within tie_kld of the best is equal */
	C_TPS, /* higher is better (all streams together); within SPEED_TIE of the best is equal */
	C_CTX, /* higher is better (up to the use case's cap); long_context and an interactive
		  choice: within CTX_TIE */
	C_RT,  /* equal on the rest: llama.cpp, which takes only the memory it needs, runs
		  layers from RAM and is one GGUF file */
	C_CTX_MAX, /* the most context, exactly (up to the use case's cap) */
};

static double crit_value(const struct plan_request *r, enum crit c, const struct plan_choice *x)
{
	return c == C_KLD ? -kld_of(x) :
	       c == C_TPS ? x->res.aggregate_tps :
	       c == C_RT  ? (x->setup.runtime == PLAN_RT_LLAMA_CPP ? 1.0 : 0.0) :
			    (double)ctx_of(r, x); /* C_CTX, C_CTX_MAX */
}

/* Whether v is within the criterion's tolerance of the best value top. */
static bool crit_near(const struct work *k, enum crit c, double v, double top, bool last)
{
	const struct plan_quality *q = k->q;

	if (last)
		return v >= top;
	if (c == C_KLD)
		return v >= top - q->tie_kld;
	if (c == C_TPS)
		return v * (1 + SPEED_TIE) >= top;
	if (c == C_RT || c == C_CTX_MAX)
		return v >= top;
	return k->r->use_case == PLAN_LONG_CONTEXT || k->interactive ? v * (1 + CTX_TIE) >= top :
								       v >= top;
}

/* The use cases' criteria, in order: the first three are the objective's (the runtime's verdict
 * names the first that tells two setups apart); the last, the exact speed, settles what is
 * left. */
#define N_STEPS 6
#define N_OBJECTIVE_STEPS 3
static const enum crit orders[PLAN_USE_CASES][N_STEPS] = {
	[PLAN_GENERAL] = {C_KLD, C_TPS, C_CTX, C_RT, C_TPS, C_TPS},
	[PLAN_LONG_CONTEXT] = {C_CTX, C_KLD, C_TPS, C_RT, C_TPS, C_TPS},
	[PLAN_SPEED] = {C_TPS, C_KLD, C_CTX, C_RT, C_TPS, C_TPS},
	[PLAN_QUALITY] = {C_KLD, C_TPS, C_CTX, C_RT, C_TPS, C_TPS},
	[PLAN_CODING] = {C_KLD, C_TPS, C_CTX, C_RT, C_TPS, C_TPS},
};
/* general and coding at interactive speed: every setup left keeps up with the user, so context
 * (up to the use case's cap, within 5%) comes before speed beyond that; among speeds within 5%, the most
 * context exactly (32768, not 32000 a hair faster). */
static const enum crit interactive_order[N_STEPS] = {C_KLD, C_CTX, C_TPS, C_RT, C_CTX_MAX, C_TPS};

/* The criteria of k's choice, in order. */
static const enum crit *order_of(const struct work *k)
{
	return k->interactive ? interactive_order : orders[k->r->use_case];
}

/* The objective's choice among the candidates flagged in eligible (keep is scratch): each
 * criterion, in the use case's order, keeps those within its tolerance of the best still in;
 * the exact speed settles what is left. Tolerances are measured from the best, not pairwise,
 * so the choice never drifts along a chain of near-ties. Returns the index or -1. */
static int select_best(const struct work *k, const struct plan_choice *all, int na,
		       const bool *eligible, bool *keep)
{
	const struct plan_request *r = k->r;
	int pick = -1;

	for (int i = 0; i < na; i++)
		keep[i] = eligible[i];
	for (int step = 0; step < N_STEPS; step++) {
		enum crit c = order_of(k)[step];
		double top = -1e300;
		for (int i = 0; i < na; i++)
			if (keep[i] && crit_value(r, c, &all[i]) > top)
				top = crit_value(r, c, &all[i]);
		for (int i = 0; i < na; i++)
			if (keep[i] &&
			    !crit_near(k, c, crit_value(r, c, &all[i]), top, step == N_STEPS - 1))
				keep[i] = false;
	}
	for (int i = 0; i < na && pick < 0; i++)
		if (keep[i])
			pick = i;
	return pick;
}

/* Whether a beats b by DOMINANCE_SPEEDUP times the speed, at a divergence at most margin
 * higher and with as much of the use case's context. */
static bool dominates(const struct plan_request *r, const struct plan_choice *a,
		      const struct plan_choice *b, double margin)
{
	return a->res.aggregate_tps >= DOMINANCE_SPEEDUP * b->res.aggregate_tps &&
	       kld_of(a) <= kld_of(b) + margin && ctx_of(r, a) >= ctx_of(r, b);
}

/* The objective's pick best, unless an eligible setup dominates it (see dominates, with the
 * quality floor's divergence as the margin): then the objective's pick among those that do,
 * until none does. Quality bought with speed nobody would pay is not bought: Q8_0 mostly in RAM
 * gives way to Q4_K_M on the GPU at twice the speed. Not for the quality use case, whose user
 * asked for quality whatever the speed. scratch holds na flags. */
static int undominated(const struct work *k, const struct plan_choice *all, int na,
		       const bool *eligible, bool *keep, bool *scratch, int best)
{
	const struct plan_request *r = k->r;
	double margin = dominance_margin(k->q);

	while (best >= 0 && r->use_case != PLAN_QUALITY) {
		bool any = false;
		for (int i = 0; i < na; i++) {
			scratch[i] = eligible[i] && dominates(r, &all[i], &all[best], margin);
			any = any || scratch[i];
		}
		if (!any)
			break;
		best = select_best(k, all, na, scratch, keep);
	}
	return best;
}

static int cmp_kld(const struct plan_quality *q, const struct plan_choice *a,
		   const struct plan_choice *b)
{
	double d = kld_of(a) - kld_of(b);

	return d < -q->tie_kld ? -1 : d > q->tie_kld ? 1 : 0;
}

/* What a level of the objective asks. */
struct need {
	int64_t ctx;
	double kld; /* < 0: no quality floor */
	double tps;
};

static bool meets(const struct cand *c, const struct need *n)
{
	return c->ctx >= n->ctx && (n->kld < 0 || (c->kld >= 0 && c->kld <= n->kld)) &&
	       c->tps >= n->tps;
}

static bool any_meets(const struct work *k, const struct need *n)
{
	for (int i = 0; i < k->n; i++)
		if (meets(&k->c[i], n))
			return true;
	return false;
}

static int64_t most_ctx(const struct work *k, const struct need *n)
{
	int64_t most = 0;

	for (int i = 0; i < k->n; i++)
		if (meets(&k->c[i], n) && k->c[i].ctx > most)
			most = k->c[i].ctx;
	return most;
}

static double fastest(const struct work *k, const struct need *n)
{
	double best = 0;

	for (int i = 0; i < k->n; i++)
		if (meets(&k->c[i], n) && k->c[i].tps > best)
			best = k->c[i].tps;
	return best;
}

static void to_choice(const struct cand *c, struct plan_choice *out)
{
	memset(out, 0, sizeof(*out));
	out->setup = c->s;
	out->kld = c->kld;
	out->ctx = c->ctx;
	out->res.decode_tps = c->tps;
	out->res.aggregate_tps = c->agg;
}

static const char *format_name(const struct plan_setup *s)
{
	if (s->runtime == PLAN_RT_VLLM)
		return s->vformat == PLAN_VLLM_FP8   ? "fp8" :
		       s->vformat == PLAN_VLLM_AWQ   ? "awq" :
		       s->vformat == PLAN_VLLM_MXFP4 ? "mxfp4" :
						       "bf16";
	return rf_ftype_name(s->ftype) ? rf_ftype_name(s->ftype) : "?";
}

static const char *kv_name(int t)
{
	return t == RF_GT_Q8_0 ? "q8_0" : t == RF_GT_Q4_0 ? "q4_0" : "f16";
}

static const char *runtime_name(enum plan_runtime rt)
{
	return rt == PLAN_RT_VLLM ? "vLLM" : "llama.cpp";
}

/* "Q4_K_M, q8_0 KV, 40 of 80 layers on the GPU: 16384 tokens, 3.1 tok/s, KLD 0.0321";
 * "vLLM fp8, fp8 KV, TP 1, 90% of the GPU: ..." */
static void describe(const struct work *k, const struct plan_choice *c, char *buf, size_t len)
{
	const struct plan_setup *s = &c->setup;
	const struct rf_mem_estimate *m = &c->res.mem;
	bool vllm = s->runtime == PLAN_RT_VLLM;
	int n = vllm ? rf_format(buf, len, "vLLM %s, %s KV, TP %d, %.0f%% of the GPU",
				 format_name(s), s->p.type_k != RF_GT_F16 ? "fp8" : "bf16", s->tp,
				 s->vllm_util * 100) :
		       rf_format(buf, len, "%s, %s KV", format_name(s), kv_name(s->p.type_k));

	if (n < 0 || (size_t)n >= len)
		return;
	if (vllm) {
		/* nothing on the host */
	} else if (s->p.n_cpu_moe > 0)
		n += rf_format(buf + n, len - (size_t)n, ", experts of %lld layers in RAM",
			       (long long)s->p.n_cpu_moe);
	else if (k->hw->n_dev > 0 && s->p.n_gpu_layers >= 0)
		n += rf_format(buf + n, len - (size_t)n, ", %lld of %lld layers on the GPU",
			       (long long)m->n_gpu_layers, (long long)model_n_layer(k->m->arch));
	if (n > 0 && (size_t)n < len && s->p.n_parallel > 1)
		n += rf_format(buf + n, len - (size_t)n,
			       ": %lld streams of %lld tokens, %.1f tok/s together at the start, "
			       "KLD %.4f",
			       (long long)s->p.n_parallel, (long long)c->ctx, c->res.aggregate_tps,
			       c->kld);
	else if (n > 0 && (size_t)n < len)
		rf_format(buf + n, len - (size_t)n, ": %lld tokens, %.1f tok/s, KLD %.4f",
			  (long long)c->ctx, c->res.decode_tps, c->kld);
}

static void why_alt(const struct work *k, const struct plan_choice *best, struct plan_choice *a)
{
	char d[PLAN_WHY_LEN - 40];
	const char *gain = cmp_kld(k->q, a, best) < 0                     ? "better quality" :
			   a->res.aggregate_tps > best->res.aggregate_tps ? "faster" :
			   a->ctx > best->ctx                             ? "more context" :
									    "a different trade";

	describe(k, a, d, sizeof(d));
	rf_format(a->why, sizeof(a->why), "%s than the choice: %s", gain, d);
}

static void answer_note(struct plan_answer *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void answer_note(struct plan_answer *a, const char *fmt, ...)
{
	va_list ap;

	if (a->n_notes >= PLAN_MAX_NOTES)
		return;
	va_start(ap, fmt);
	rf_note_vformat(a->notes[a->n_notes++], PLAN_NOTE_LEN, fmt, ap);
	va_end(ap);
}

/* Why the chosen runtime won over the other's best o (NULL: none of its setups meets the
 * objective's constraints): the first criterion, in the use case's order, that tells them
 * apart. */
static void runtime_text(const struct work *k, const struct plan_choice *w,
			 const struct plan_choice *o, struct plan_answer *a)
{
	const struct plan_request *r = k->r;
	const char *wn = runtime_name(w->setup.runtime);
	const char *on =
		runtime_name(w->setup.runtime == PLAN_RT_VLLM ? PLAN_RT_LLAMA_CPP : PLAN_RT_VLLM);

	if (!o) {
		rf_format(a->runtime_why, sizeof(a->runtime_why),
			  "%s: no %s setup meets the objective's context, speed and quality here",
			  wn, on);
		return;
	}
	for (int step = 0; step < N_OBJECTIVE_STEPS; step++) {
		enum crit c = order_of(k)[step];
		if (crit_near(k, c, crit_value(r, c, o), crit_value(r, c, w), false))
			continue;
		if (c == C_KLD)
			rf_format(a->runtime_why, sizeof(a->runtime_why),
				  "%s: better quality, %s (KLD %.4f) against %s's best, %s (KLD "
				  "%.4f)",
				  wn, format_name(&w->setup), w->kld, on, format_name(&o->setup),
				  o->kld);
		else if (c == C_TPS)
			rf_format(a->runtime_why, sizeof(a->runtime_why),
				  "%s: faster, %s at %.1f tokens/s%s against %s's best, %s at %.1f",
				  wn, format_name(&w->setup), w->res.aggregate_tps,
				  k->np > 1 ? " over all streams" : "", on, format_name(&o->setup),
				  o->res.aggregate_tps);
		else
			rf_format(
				a->runtime_why, sizeof(a->runtime_why),
				"%s: more context, %s at %lld tokens against %s's best, %s at %lld",
				wn, format_name(&w->setup), (long long)w->ctx, on,
				format_name(&o->setup), (long long)o->ctx);
		return;
	}
	rf_format(a->runtime_why, sizeof(a->runtime_why),
		  "%s: %s's best (%s) is no better on quality, speed or context, and llama.cpp "
		  "takes only the memory it needs, can run layers from RAM and is one GGUF file",
		  wn, on, format_name(&o->setup));
}

static void objective_text(const struct work *k, struct plan_answer *a)
{
	const struct plan_request *r = k->r;
	const char *floor = rf_ftype_name(k->q->floor_ftype);
	char head[200];

	if (r->use_case == PLAN_LONG_CONTEXT)
		rf_format(head, sizeof(head), "the longest context at %s-class quality or better",
			  floor ? floor : "?");
	else if (r->use_case == PLAN_SPEED)
		rf_format(head, sizeof(head), "the fastest decode at %s-class quality or better",
			  floor ? floor : "?");
	else if (plan_use_case_interactive(r->use_case))
		rf_format(head, sizeof(head),
			  "the best quality (llama.cpp KL divergence)%s, unless a setup twice as "
			  "fast is at most %.4f worse",
			  a->interactive ? " at interactive speed, then the most context" : "",
			  dominance_margin(k->q));
	else
		rf_format(head, sizeof(head), "the best quality (llama.cpp KL divergence)");
	rf_format(a->objective, sizeof(a->objective),
		  "%s: %s with n_ctx >= %lld%s and decode >= %.1f tokens/s%s, every GPU at most "
		  "%.0f%% of its budget%s",
		  plan_use_case_name(r->use_case), head, (long long)a->ctx_target,
		  k->np > 1 ? " per sequence" : "", a->floor_tps, k->np > 1 ? " per stream" : "",
		  k->max_util * 100,
		  k->searched[PLAN_RT_VLLM] ? " (vLLM: within --gpu-memory-utilization)" : "");
}

/* Chooses among k's candidates into out. */
static int choose(struct work *k, struct plan_answer *out)
{
	const struct plan_request *r = k->r;
	bool qfloor = r->use_case == PLAN_LONG_CONTEXT || r->use_case == PLAN_SPEED;
	struct need n = {k->ctx_target, qfloor ? plan_quality_floor(k->q) : -1,
			 r->min_tps > 0 ? r->min_tps : PLAN_MIN_TPS};
	struct plan_choice *all;
	bool *front, *keep, *elig, *scratch;
	int na = 0, best = -1, nfront = 0;

	if (r->use_case == PLAN_QUALITY && n.tps < PLAN_READING_TPS)
		n.tps = PLAN_READING_TPS;
	if (r->n_ctx > 0)
		n.ctx = fixed_ctx(k);
	/* Relax, in order, what no setup can meet: the context target, then (after general's
	 * interactive floor is set) the speed floor (to 80% of the fastest setup that meets the
	 * rest), then the quality floor. */
	if (!any_meets(k, &n) && r->n_ctx == 0) {
		struct need m = n;
		m.ctx = 0;
		if (most_ctx(k, &m) > 0) {
			n.ctx = most_ctx(k, &m);
			out->ctx_short = true;
		}
	}
	/* general and coding ask interactive speed where a setup at the quality floor's class
	 * reaches it with the context that can be had: a better quant that the user waits on is
	 * not a better answer. */
	k->interactive = false;
	k->q4_fastest = 0;
	if (plan_use_case_interactive(r->use_case) && r->min_tps <= 0) {
		static const double tiers[] = {PLAN_FLUENT_TPS, PLAN_INTERACTIVE_TPS};
		for (size_t t = 0; t < sizeof(tiers) / sizeof(tiers[0]) && !k->interactive; t++) {
			struct need m = {n.ctx, plan_quality_floor(k->q), tiers[t]};
			if (any_meets(k, &m)) {
				k->interactive = true;
				n.tps = tiers[t];
			}
		}
		out->interactive = k->interactive;
		/* Out of reach: as near it as that quality allows; a better quant at a fraction
		 * of the speed is not bought (Q8_0 at 6 tokens/s where Q4_K_M runs at 11). */
		if (!k->interactive) {
			struct need m = {n.ctx, plan_quality_floor(k->q), 0};
			k->q4_fastest = fastest(k, &m);
			if (k->q4_fastest * RELAXED_FLOOR > n.tps)
				n.tps = k->q4_fastest * RELAXED_FLOOR;
		}
	}
	if (!any_meets(k, &n)) {
		struct need m = n;
		m.tps = 0;
		if (fastest(k, &m) <= 0 && r->n_ctx == 0) {
			m.ctx = n.ctx = PLAN_MIN_CTX;
			out->ctx_short = true;
		}
		if (fastest(k, &m) > 0) {
			n.tps = fastest(k, &m) * RELAXED_FLOOR;
			out->below_floor = true;
		}
	}
	if (!any_meets(k, &n)) {
		n.kld = -1;
		n.tps = 0;
		n.ctx = r->n_ctx > 0 ? fixed_ctx(k) : PLAN_MIN_CTX;
		out->below_floor = true;
	}
	out->floor_tps = n.tps;
	out->ctx_target = n.ctx;
	all = calloc((size_t)(k->n > 0 ? k->n : 1), sizeof(*all));
	front = calloc((size_t)(k->n > 0 ? k->n : 1) * 4, sizeof(*front));
	if (!all || !front) {
		free(all);
		free(front);
		return RF_E_NOMEM;
	}
	keep = front + (k->n > 0 ? k->n : 1);
	elig = keep + (k->n > 0 ? k->n : 1);
	scratch = elig + (k->n > 0 ? k->n : 1);
	for (int i = 0; i < k->n; i++)
		if (meets(&k->c[i], &n))
			to_choice(&k->c[i], &all[na++]);
	for (int i = 0; i < na; i++)
		elig[i] = true;
	best = select_best(k, all, na, elig, keep);
	best = undominated(k, all, na, elig, keep, scratch, best);
	/* The Pareto front over quality, speed and context. */
	for (int i = 0; i < na; i++) {
		bool dominated = false;
		for (int j = 0; j < na && !dominated; j++) {
			const struct plan_choice *a = &all[j], *b = &all[i];
			bool ge = kld_of(a) <= kld_of(b) &&
				  a->res.aggregate_tps >= b->res.aggregate_tps && a->ctx >= b->ctx;
			bool gt = kld_of(a) < kld_of(b) ||
				  a->res.aggregate_tps > b->res.aggregate_tps || a->ctx > b->ctx;
			dominated = j != i && ge && (gt || j < i);
		}
		front[i] = !dominated && i != best;
		nfront += front[i];
	}
	if (best >= 0) {
		out->found = true;
		out->best = all[best];
	}
	if (best >= 0 && k->searched[PLAN_RT_LLAMA_CPP] && k->searched[PLAN_RT_VLLM]) {
		int other;
		for (int i = 0; i < na; i++)
			elig[i] = all[i].setup.runtime != all[best].setup.runtime;
		other = select_best(k, all, na, elig, keep);
		runtime_text(k, &all[best], other >= 0 ? &all[other] : NULL, out);
	}
	/* The front's best PLAN_MAX_ALTS by the objective, in its order. */
	while (out->n_alt < PLAN_MAX_ALTS && nfront > 0) {
		int pick = select_best(k, all, na, front, keep);
		if (pick < 0)
			break;
		front[pick] = false;
		nfront--;
		out->alt[out->n_alt++] = all[pick];
	}
	free(all);
	free(front);
	return 0;
}

/* Prefill of a prompt-token prompt for s with its evaluation res, on what the machine's runs
 * say of its format (k->w and k->wsum hold s's format: finish loaded it). */
static double long_prefill(const struct work *k, const struct plan_setup *s,
			   const struct plan_result *res, int64_t prompt)
{
	struct speed_input in = k->hw->speed;
	enum speed_basis basis;
	double factor;

	plan_speed_model(k->m->params, k->w, &k->wsum, &res->mem, &s->p, &in);
	in.prompt_tokens = prompt;
	return speed_calib_apply(&k->wsum.calib, SPEED_TEST_PREFILL,
				 speed_predict(&in, speed_fitted, SPEED_TEST_PREFILL), &factor,
				 &basis);
}

/* Whether c's prefill copies host weights to a GPU: routed experts or layers on the host. */
static bool crosses_link(const struct work *k, const struct plan_choice *c)
{
	const struct rf_mem_estimate *m = &c->res.mem;

	return k->hw->n_dev > 0 && c->setup.runtime == PLAN_RT_LLAMA_CPP &&
	       (m->experts_host_bytes > 0 ||
		(m->n_gpu_layers > 0 && m->n_gpu_layers < model_n_layer(k->m->arch)));
}

/* c (finished) at the use case's wider n_ubatch where that pays (see UBATCH_PREFILL), said in
 * a note. Returns 0 or a negative rf_err. */
static int widen_ubatch(struct work *k, struct plan_choice *c, struct plan_answer *a)
{
	struct plan_setup s = c->setup;
	const bool long_prompts = k->r->use_case == PLAN_LONG_CONTEXT ||
				  k->r->use_case == PLAN_CODING;
	const int target = long_prompts ? UBATCH_PREFILL : UBATCH_DEFAULT;
	const int prompt = long_prompts ? PREFILL_PROMPT : UBATCH_DEFAULT;
	double pp0, pp;
	int rc = 0;

	if (k->r->use_case == PLAN_SPEED || s.p.n_ubatch >= target || !crosses_link(k, c) ||
	    (pp0 = long_prefill(k, &c->setup, &c->res, prompt)) <= 0)
		return 0;
	s.p.n_ubatch = target;
	if (s.p.n_batch < target)
		s.p.n_batch = target;
	/* "All" as llama.cpp counts them: the repeating layers and the output layer. */
	if (s.p.n_gpu_layers < 0)
		s.p.n_gpu_layers = c->res.mem.n_gpu_layers + (c->res.mem.output_on_gpu ? 1 : 0);
	for (int step = 0; step <= UBATCH_MOVES; step++) {
		if ((rc = try_setup(k, &s, false)) < 0)
			return rc;
		if (rc == 1)
			break;
		/* Room for the larger compute buffers: one more layer's experts, or one more
		 * layer, on the host. */
		if (s.p.n_cpu_moe > 0 && s.p.n_cpu_moe < model_n_layer(k->m->arch))
			s.p.n_cpu_moe++;
		else if (s.p.n_cpu_moe == 0 && s.p.n_gpu_layers > 1)
			s.p.n_gpu_layers--;
		else
			return 0;
	}
	if (rc != 1 || k->res->aggregate_tps * (1 + SPEED_TIE) < c->res.aggregate_tps ||
	    (pp = long_prefill(k, &s, k->res, prompt)) < PREFILL_GAIN * pp0)
		return 0;
	answer_note(a,
		    "n_ubatch %lld -> %d, n_batch %d: prompts copy the host weights to the GPU in "
		    "fewer micro-batches, a %d-token prompt at %.0f tokens/s where %.0f; decode "
		    "%.1f -> %.1f tokens/s",
		    (long long)c->setup.p.n_ubatch, target, (int)s.p.n_batch, prompt, pp, pp0,
		    c->res.aggregate_tps, k->res->aggregate_tps);
	c->setup = s;
	c->res = *k->res;
	return 0;
}

/* Re-evaluates c (its memory estimate and speeds are kept in the answer). */
static int finish(struct work *k, struct plan_choice *c)
{
	const struct vllm_capacity *vc;
	int rc;

	if (c->setup.runtime == PLAN_RT_VLLM && (vc = vcap_of(k, &c->setup)) != NULL) {
		/* The cache is sized before the length is checked: the same capacity. */
		(void)evaluate(k, &c->setup, vc);
		c->res = *k->res;
		return 0;
	}
	rc = load_format(k, &c->setup);
	if (rc != 0)
		return rc < 0 ? rc : RF_E_INTERNAL;
	rc = evaluate(k, &c->setup, NULL);
	k->evaluated++;
	if (rc == 0)
		c->res = *k->res;
	return rc;
}

/* On Apple silicon: the plan stays inside Metal's working set, which leaves macOS the rest of
 * the RAM, and says how to move that line (iogpu.wired_limit_mb, macOS 14 and later), with
 * the figure that leaves the OS 8 GiB or a quarter of the RAM, whichever is less. */
static void unified_note(struct work *k, struct plan_answer *a)
{
	const struct plan_machine *hw = k->hw;
	int64_t ram = hw->ram_total_bytes, ws = hw->dev[0].budget_bytes, keep, wired;

	if (!all_unified(hw) || hw->speed.backend != SPEED_BACKEND_METAL || ram <= 0 || ws < 0)
		return;
	keep = ram / 4 < ((int64_t)8 << 30) ? ram / 4 : ((int64_t)8 << 30);
	wired = (ram - keep) >> 20;
	answer_note(a,
		    "unified memory: the plan stays within Metal's working set (%.1f of %.1f GiB "
		    "of RAM) and leaves the rest to macOS; `sudo sysctl iogpu.wired_limit_mb=%lld` "
		    "lets Metal wire %.1f GiB until the next reboot, at the risk of swapping",
		    (double)ws / (double)(1 << 30), (double)ram / (double)(1 << 30),
		    (long long)wired, (double)wired / 1024.0);
}

static void trade_notes(struct work *k, struct plan_answer *a)
{
	const struct plan_setup *s = &a->best.setup;
	const int64_t n_layer = model_n_layer(k->m->arch);

	unified_note(k, a);
	if (a->ctx_short)
		answer_note(a,
			    "n_ctx %lld -> %lld: no setup fits %lld tokens at the speed and "
			    "quality asked",
			    (long long)k->ctx_target, (long long)s->p.n_ctx,
			    (long long)k->ctx_target);
	if (s->runtime == PLAN_RT_VLLM && s->p.type_k != RF_GT_F16)
		answer_note(a, "kv_cache_dtype auto -> fp8: the fp8 cache holds twice the tokens "
			       "in the same memory");
	else if (s->p.type_k != RF_GT_F16)
		answer_note(a,
			    "kv_cache_type f16 -> %s: the quantized cache holds more context in "
			    "the same memory (flash attention on)",
			    kv_name(s->p.type_k));
	if (s->runtime == PLAN_RT_VLLM && s->vllm_util > PLAN_VLLM_GPU_UTIL)
		answer_note(a,
			    "gpu_memory_utilization %.2f -> %.2f: %.1f GiB more KV cache; %.1f GiB "
			    "of the GPU stay outside vLLM's pool, about 1 GiB of it for CUDA "
			    "graphs, so nothing else may run on it",
			    PLAN_VLLM_GPU_UTIL, s->vllm_util,
			    (s->vllm_util - PLAN_VLLM_GPU_UTIL) *
				    (double)a->best.res.mem.per_device[0].budget_bytes / RF_GIB,
			    (double)(a->best.res.mem.per_device[0].budget_bytes -
				     a->best.res.mem.per_device[0].bytes) /
				    RF_GIB);
	if (s->runtime == PLAN_RT_LLAMA_CPP && s->p.n_ubatch < UBATCH_DEFAULT)
		answer_note(a,
			    "n_ubatch %d -> %lld: a smaller micro-batch shrinks the compute "
			    "buffers, which buys context; prompts are processed in more steps",
			    UBATCH_DEFAULT, (long long)s->p.n_ubatch);
	if (s->p.n_cpu_moe > 0)
		answer_note(
			a,
			"n_cpu_moe 0 -> %lld: the routed experts of the first %lld of %lld "
			"layers stay in host memory; attention and the KV cache stay on the GPU",
			(long long)s->p.n_cpu_moe, (long long)s->p.n_cpu_moe, (long long)n_layer);
	if (s->runtime == PLAN_RT_LLAMA_CPP && s->p.n_gpu_layers >= 0 && k->hw->n_dev > 0)
		answer_note(a,
			    "n_gpu_layers all -> %lld: %lld of %lld layers fit on the GPU with "
			    "headroom; the rest run from host RAM",
			    (long long)a->best.res.mem.n_gpu_layers,
			    (long long)a->best.res.mem.n_gpu_layers, (long long)n_layer);
	if (plan_use_case_interactive(k->r->use_case) && k->r->min_tps <= 0 && !a->interactive &&
	    !a->below_floor)
		answer_note(a,
			    "speed: no setup at %s-class quality or better reaches interactive "
			    "speed (%.0f tokens/s) here (the fastest: %.1f); the best quality at "
			    "%.1f tokens/s or more",
			    rf_ftype_name(k->q->floor_ftype) ? rf_ftype_name(k->q->floor_ftype) :
							       "?",
			    PLAN_INTERACTIVE_TPS, k->q4_fastest, a->floor_tps);
	if (a->below_floor)
		answer_note(a,
			    "speed: no setup reaches %.1f tokens/s here; this is the best within "
			    "80%% of the fastest (%.1f tokens/s expected)",
			    k->r->min_tps > 0 ? k->r->min_tps : PLAN_MIN_TPS,
			    a->best.res.decode_tps);
}

int plan_infer(const struct plan_model *m, const struct plan_machine *hw,
	       const struct plan_quality *q, const struct plan_request *r, struct plan_answer *out)
{
	struct work k;
	int64_t max_pos = plan_rope_max(m->arch, &m->rope);
	bool kv_q4 = false;
	int rc;

	memset(out, 0, sizeof(*out));
	if (r->use_case < 0 || r->use_case >= PLAN_USE_CASES || r->n_parallel < 1 ||
	    r->n_parallel > 256 || r->n_ctx < -1 || r->n_ctx > MODEL_MAX_POSITIONS ||
	    r->runtime < PLAN_RT_AUTO || r->runtime > PLAN_RT_VLLM ||
	    (r->n_ctx > 0 && r->n_ctx < r->n_parallel))
		return RF_E_INVALID_VALUE;
	memset(&k, 0, sizeof(k));
	k.m = m;
	k.hw = hw;
	k.q = q;
	k.r = r;
	/* llama.cpp's headroom; vLLM's is its --gpu-memory-utilization. */
	k.max_util = r->max_gpu_util > 0 ? r->max_gpu_util : PLAN_MAX_GPU_UTIL;
	k.np = r->n_parallel;
	k.min_total = -1;
	k.moe = m->arch->n_experts > 0;
	k.floor_tps = r->min_tps > 0 ? r->min_tps : PLAN_MIN_TPS;
	if (r->use_case == PLAN_QUALITY && k.floor_tps < PLAN_READING_TPS)
		k.floor_tps = PLAN_READING_TPS;
	k.floor_kld = r->use_case == PLAN_LONG_CONTEXT || r->use_case == PLAN_SPEED ?
			      plan_quality_floor(q) :
			      -1;
	k.best_kld = -1;
	k.ctx_target = r->use_case == PLAN_QUALITY || r->use_case == PLAN_SPEED ? PLAN_SHORT_CTX :
		       r->use_case == PLAN_CODING                               ? PLAN_CODING_CTX :
										  PLAN_GENERAL_CTX;
	k.ctx_cap = r->use_case == PLAN_LONG_CONTEXT || r->n_ctx < 0 ?
			    (max_pos > 0 ? max_pos : (1 << 20)) :
		    r->use_case == PLAN_SPEED ? PLAN_SPEED_CTX_CAP :
						PLAN_GENERAL_CTX_CAP;
	if (max_pos > 0) {
		if (k.ctx_cap > max_pos)
			k.ctx_cap = max_pos;
		if (k.ctx_target > max_pos)
			k.ctx_target = max_pos;
	}
	if (k.ctx_cap < PLAN_MIN_CTX)
		k.ctx_cap = PLAN_MIN_CTX;
	k.w = malloc(sizeof(*k.w));
	k.ans = malloc(sizeof(*k.ans));
	k.res = k.ans ? &k.ans->res : NULL;
	k.c = malloc(sizeof(*k.c) * MAX_CANDS);
	k.vkey = malloc(sizeof(*k.vkey) * MAX_VCAPS);
	k.vf = calloc(1, sizeof(*k.vf));
	k.vcap = malloc(sizeof(*k.vcap) * MAX_VCAPS);
	rc = !k.w || !k.res || !k.c || !k.vkey || !k.vcap || !k.vf ? RF_E_NOMEM : 0;
	if (rc == 0)
		rc = search(&k, false);
	/* Below the quality floor the splits were not searched; when nothing meets the floor,
	 * the floor goes and they are. */
	if (rc == 0 && k.floor_kld >= 0 && !any_within(&k, k.floor_kld)) {
		k.floor_kld = -1;
		k.n = 0;
		rc = search(&k, false);
	}
	/* A q4_0 cache loses more than a measured table shows: only when nothing else fits. */
	if (rc == 0 && k.n == 0 && r->runtime != PLAN_RT_VLLM) {
		kv_q4 = true;
		rc = search(&k, true);
	}
	if (rc == 0)
		rc = choose(&k, out);
	/* long_context walks the splits to the speed floor; a relaxed floor moves that edge,
	 * so the walk is done again at the floor the answer applies. */
	if (rc == 0 && out->below_floor && r->use_case == PLAN_LONG_CONTEXT && out->floor_tps > 0 &&
	    out->floor_tps < k.floor_tps) {
		k.floor_tps = out->floor_tps;
		k.n = 0; /* the walk again finds every setup of the first */
		rc = search(&k, kv_q4);
		if (rc == 0) {
			memset(out, 0, sizeof(*out));
			rc = choose(&k, out);
		}
	}
	if (rc == 0 && out->found) {
		rc = finish(&k, &out->best);
		for (int i = 0; rc == 0 && i < out->n_alt; i++)
			rc = finish(&k, &out->alt[i]);
		if (rc == 0)
			rc = load_format(&k, &out->best.setup);
		if (rc == 0)
			rc = widen_ubatch(&k, &out->best, out);
		else if (rc == 1)
			rc = 0;
	}
	if (rc == 0 && out->found) {
		char d[PLAN_WHY_LEN];
		describe(&k, &out->best, d, sizeof(d));
		rf_format(out->best.why, sizeof(out->best.why), "%s", d);
		for (int i = 0; i < out->n_alt; i++)
			why_alt(&k, &out->best, &out->alt[i]);
		trade_notes(&k, out);
	}
	if (rc == 0) {
		if (!out->found && out->ctx_target == 0)
			out->ctx_target = k.ctx_target;
		objective_text(&k, out);
	}
	/* Nothing fitted and every format was too large to weigh: the need of the smallest. */
	if (rc == 0 && !out->found && k.min_total < 0 && r->runtime != PLAN_RT_VLLM &&
	    m->fixed_ftype < 0) {
		struct plan_setup s;
		memset(&s, 0, sizeof(s));
		s.ftype = m->native_mxfp4 ? RF_FT_MXFP4_MOE : llama_formats[N_LLAMA_FORMATS - 1];
		rf_infer_params_default(&s.p);
		s.p.flash_attn = true;
		if (load_format(&k, &s) == 0)
			note_need(&k, &s);
	}
	out->evaluated = k.evaluated;
	out->min_total_bytes = k.min_total;
	free(k.w);
	free(k.ans);
	free(k.vkey);
	free(k.vcap);
	vllm_facts_free(k.vf);
	free(k.vf);
	free(k.c);
	return rc;
}

/* ---- one setup's searches (plan_check) ------------------------------------------------------ */

/* A work for the searches over s alone: its format's weights loaded, headroom max_util. Returns
 * 0, or a negative rf_err (k freed). */
static int one_setup(struct work *k, const struct plan_model *m, const struct plan_machine *hw,
		     const struct plan_request *r, const struct plan_setup *s, double max_util)
{
	int rc;

	memset(k, 0, sizeof(*k));
	k->m = m;
	k->hw = hw;
	k->r = r;
	k->max_util = max_util;
	k->np = s->p.n_parallel > 0 ? s->p.n_parallel : 1;
	k->w = malloc(sizeof(*k->w));
	k->ans = malloc(sizeof(*k->ans));
	k->res = k->ans ? &k->ans->res : NULL;
	rc = !k->w || !k->res ? RF_E_NOMEM : load_format(k, s);
	if (rc != 0) {
		free(k->w);
		free(k->ans);
		return rc == 1 ? RF_E_INVALID_VALUE : rc;
	}
	return 0;
}

int64_t plan_largest_ctx(const struct plan_model *m, const struct plan_machine *hw,
			 const struct plan_setup *s, double max_gpu_util, int64_t lo, int64_t hi)
{
	struct plan_request r;
	struct plan_setup t = *s;
	struct work k;
	int64_t ctx;
	int rc;

	plan_request_default(&r); /* n_ctx 0: solved */
	if ((rc = one_setup(&k, m, hw, &r, s, max_gpu_util)) < 0)
		return rc;
	ctx = solve_ctx(&k, &t, lo, hi);
	free(k.w);
	free(k.ans);
	return ctx;
}

int64_t plan_most_gpu_layers(const struct plan_model *m, const struct plan_machine *hw,
			     const struct plan_setup *s, double max_gpu_util)
{
	struct plan_request r;
	struct plan_setup t = *s;
	struct work k;
	int64_t v;
	int rc;

	plan_request_default(&r);
	if ((rc = one_setup(&k, m, hw, &r, s, max_gpu_util)) < 0)
		return rc;
	/* The most on the GPUs that they hold; fewer would only put more on the host. */
	v = solve_split(&k, &t, false, 0, model_n_layer(m->arch), s->p.n_ctx);
	if (v >= 0) {
		t.p.n_gpu_layers = v;
		rc = try_setup(&k, &t, false);
		v = rc < 0 ? rc : (rc == 1 ? v : -1);
	}
	free(k.w);
	free(k.ans);
	return v;
}
