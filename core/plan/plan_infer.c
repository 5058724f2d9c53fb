/*
 * The inference planner (see plan_infer.h): enumerate the discrete choices, solve n_ctx and
 * the offload split for each, keep every setup that fits, then choose by the use case's
 * objective and keep the Pareto front.
 */
#include "core/plan/plan_infer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/quant.h"

/* The llama.cpp file types searched, best quality first: the formats GGUF repositories
 * commonly publish that the quality table rates. */
static const int llama_formats[] = {RF_FT_F16,    RF_FT_Q8_0,   RF_FT_Q6_K,   RF_FT_Q5_K_M,
				    RF_FT_Q5_K_S, RF_FT_Q4_K_M, RF_FT_Q4_K_S, RF_FT_IQ4_XS,
				    RF_FT_Q3_K_L, RF_FT_Q3_K_M, RF_FT_IQ3_M,  RF_FT_IQ3_XXS,
				    RF_FT_Q2_K,   RF_FT_IQ2_M};
#define N_LLAMA_FORMATS ((int)(sizeof(llama_formats) / sizeof(llama_formats[0])))

#define MAX_CANDS 512
#define SPEED_TIE 0.05 /* speeds within 5% are equal: the speed model is good to about 10% */
#define CTX_TIE 0.05   /* long_context: contexts within 5% are equal */
#define RELAXED_FLOOR 0.8

static const char *const use_case_names[] = {"general", "long_context", "speed", "quality"};

const char *plan_use_case_name(enum plan_use_case u)
{
	return u >= 0 && u < PLAN_USE_CASES ? use_case_names[u] : "unknown";
}

void plan_request_default(struct plan_request *r)
{
	memset(r, 0, sizeof(*r));
	r->use_case = PLAN_GENERAL;
	r->runtime = PLAN_RT_LLAMA_CPP;
	r->ftype = -1;
	r->vformat = -1;
	r->n_parallel = 1;
	r->min_tps = PLAN_MIN_TPS;
	r->max_gpu_util = 0; /* the runtime's */
}

/* One setup found to fit, with what the objective reads. */
struct cand {
	struct plan_setup s;
	double kld, tps;
	int64_t ctx;
};

struct work {
	const struct plan_model *m;
	const struct plan_machine *hw;
	const struct plan_quality *q;
	const struct plan_request *r;
	struct rf_mem_weights *w;   /* the current format's weights */
	struct rf_mem_weights *f16; /* vLLM: the F16 weights the formats derive from */
	struct plan_result *res;    /* scratch */
	int evaluated;
	struct cand *c;
	int n;
	int64_t ctx_target, ctx_cap;
	double max_util;
	double floor_tps; /* long_context: the speed the split toward the host must keep */
	double floor_kld; /* long_context and speed: the quality floor; < 0 none */
	double best_kld;  /* the best divergence meeting every constraint so far; < 0 none */
	bool moe;
	int64_t min_total;
};

static bool native(const struct work *k)
{
	return k->m->native_mxfp4 && k->r->runtime == PLAN_RT_LLAMA_CPP;
}

/* Evaluates s; returns 1 when it fits with headroom, 0 when not, or a negative rf_err. With
 * gpu_only, only the GPUs' headroom is asked (the offload split's bisection). */
static int try_setup(struct work *k, const struct plan_setup *s, bool gpu_only)
{
	int rc = plan_evaluate(k->m->arch, k->m->params, k->w, k->hw, s, k->res);

	k->evaluated++;
	if (rc < 0)
		return rc;
	if (k->res->gpu_util > k->max_util)
		return 0;
	return gpu_only || k->res->fits ? 1 : 0;
}

/* How full the fullest pool of the last evaluation is against its limit (a GPU against
 * max_util of its budget, the host against its budget): <= 1 fits. */
static double fill(const struct work *k)
{
	double g = k->res->gpu_util / k->max_util, u = k->res->mem.utilization;

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

/* Records s at n_ctx ctx (re-evaluated for its speed). */
static int push(struct work *k, struct plan_setup *s, int64_t ctx)
{
	struct cand *c;
	int rc;

	if (ctx <= 0 || k->n >= MAX_CANDS)
		return 0;
	s->p.n_ctx = ctx;
	rc = try_setup(k, s, false);
	if (rc <= 0)
		return rc;
	c = &k->c[k->n++];
	c->s = *s;
	c->ctx = ctx;
	c->tps = k->res->decode_tps;
	c->kld = plan_quality_setup(k->q, s, native(k));
	if (c->kld >= 0 && c->ctx >= (k->r->n_ctx > 0 ? k->r->n_ctx : k->ctx_target) &&
	    c->tps >= k->floor_tps && (k->floor_kld < 0 || c->kld <= k->floor_kld) &&
	    (k->best_kld < 0 || c->kld < k->best_kld))
		k->best_kld = c->kld;
	return 0;
}

/* Solves n_ctx for s and records it. Returns the n_ctx (0: none fits) or a negative rf_err. */
static int64_t solve_push(struct work *k, struct plan_setup *s, int64_t lo)
{
	int64_t ctx = solve_ctx(k, s, lo, k->ctx_cap);
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
		rc = plan_evaluate(k->m->arch, k->m->params, k->w, k->hw, s, k->res);
		k->evaluated++;
		if (rc < 0)
			return rc == -1 ? -2 : rc;
		if (k->res->decode_tps >= k->floor_tps) {
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

	s.p.n_gpu_layers = experts ? -1 : 0;
	s.p.n_cpu_moe = 0;
	v = experts ? solve_split(k, &s, true, 1, n_layer, need) :
		      solve_split(k, &s, false, 0, n_layer, need);
	if (v < 0)
		return v == -1 ? 0 : (int)v;
	for (int64_t step = 0; step <= (k->r->use_case == PLAN_LONG_CONTEXT ? 4 : 0); step++) {
		int64_t ctx;
		if (experts)
			s.p.n_cpu_moe = v + (n_layer - v) * step / 4;
		else
			s.p.n_gpu_layers = v - v * step / 4;
		ctx = solve_push(k, &s, PLAN_MIN_CTX);
		if (ctx < 0)
			return (int)ctx;
	}
	if (k->r->use_case == PLAN_LONG_CONTEXT) {
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

/* Every setup of one format and KV type: all on the GPUs; when that does not reach the
 * context asked (or the use case's cap), the splits that do: MoE experts in host memory, and
 * whole layers on the host. */
static int add_base(struct work *k, const struct plan_setup *base, bool splits, int64_t *full_ctx)
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
	*full_ctx = full;
	/* Layers or experts in host memory only where that memory is known. */
	if (k->hw->n_dev == 0 || s.runtime == PLAN_RT_VLLM || !splits ||
	    k->hw->host.budget_bytes < 0)
		return 0;
	if (k->r->n_ctx > 0) {
		needs[n_needs++] = k->r->n_ctx;
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
	if (full >= k->ctx_cap || (k->r->n_ctx > 0 && full >= k->r->n_ctx))
		return 0;
	for (int i = 0; i < n_needs; i++) {
		if (k->moe && (rc = add_split(k, base, true, needs[i])) < 0)
			return rc;
		if ((rc = add_split(k, base, false, needs[i])) < 0)
			return rc;
	}
	return 0;
}

/* Loads the weights of a format into k->w. Returns 0, 1 to skip the format, or RF_E_NOMEM. */
static int load_format(struct work *k, const struct plan_setup *s)
{
	int rc;

	if (s->runtime == PLAN_RT_VLLM) {
		plan_vllm_weights(k->f16, s->vformat, k->w);
		return 0;
	}
	rc = k->m->weights(k->m->weights_ctx, k->m->arch, s->ftype, k->w);
	if (rc == RF_E_NOMEM)
		return rc;
	return rc < 0 ? 1 : 0;
}

/* The smallest need seen: the setup at PLAN_MIN_CTX with every layer on the GPUs. */
static void note_need(struct work *k, const struct plan_setup *base)
{
	struct plan_setup s = *base;

	s.p.n_ctx = PLAN_MIN_CTX;
	s.p.n_gpu_layers = k->hw->n_dev > 0 ? -1 : 0;
	if (plan_evaluate(k->m->arch, k->m->params, k->w, k->hw, &s, k->res) == 0 &&
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

/* Whether a setup of divergence kld cannot be the choice whatever its split: below the quality
 * floor, or worse than a setup already meeting every constraint by more than a tie (the
 * formats come best first). Such a setup is still recorded with every layer on the GPUs, for
 * the alternatives; its splits are not searched. */
static bool hopeless(const struct work *k, double kld)
{
	bool by_quality = k->r->use_case == PLAN_GENERAL || k->r->use_case == PLAN_QUALITY;

	if (kld < 0)
		return false;
	if (k->floor_kld >= 0 && kld > k->floor_kld)
		return true;
	return by_quality && k->best_kld >= 0 && kld > k->best_kld + k->q->tie_kld;
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

static int search(struct work *k, bool kv_q4)
{
	static const int kv_types[] = {RF_GT_F16, RF_GT_Q8_0};
	const struct plan_request *r = k->r;
	bool vllm = r->runtime == PLAN_RT_VLLM;
	int formats[N_LLAMA_FORMATS];
	int nf = 0, rc;

	if (vllm) {
		for (int f = 0; f < PLAN_VLLM_FORMATS; f++)
			if (r->vformat < 0 || r->vformat == f)
				formats[nf++] = f;
	} else if (k->m->fixed_ftype >= 0) {
		formats[nf++] = k->m->fixed_ftype;
	} else if (r->ftype >= 0) {
		formats[nf++] = r->ftype;
	} else if (k->m->native_mxfp4) {
		formats[nf++] = RF_FT_MXFP4_MOE;
	} else {
		for (int i = 0; i < N_LLAMA_FORMATS; i++)
			if (plan_quality_weights(k->q, llama_formats[i]) >= 0)
				formats[nf++] = llama_formats[i];
	}
	for (int i = 0; i < nf; i++) {
		int64_t full_f16 = 0;
		struct plan_setup base;
		memset(&base, 0, sizeof(base));
		base.runtime = r->runtime;
		base.ftype = vllm ? -1 : formats[i];
		base.vformat = vllm ? (enum plan_vllm_format)formats[i] : PLAN_VLLM_BF16;
		rf_infer_params_default(&base.p);
		base.p.n_parallel = r->n_parallel;
		if (r->choice_only) {
			struct plan_setup f16 = base;
			f16.p.type_k = f16.p.type_v = kv_q4 ? RF_GT_Q4_0 : RF_GT_F16;
			if (hopeless(k, plan_quality_setup(k->q, &f16, native(k))))
				continue;
		}
		/* Flash attention on GPUs (less memory, no slower); a quantized V cache needs
		 * it everywhere. */
		base.p.flash_attn = k->hw->n_dev > 0 || kv_q4;
		if (!vllm && cannot_fit(k, base.ftype))
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
			if (base.p.type_v != RF_GT_F16)
				base.p.flash_attn = true;
			/* A quantized cache only buys context: not when the f16 one already has all
			 * the use case takes with every layer on the GPUs. */
			if (t == 1 && full_f16 >= k->ctx_cap)
				break;
			kld = plan_quality_setup(k->q, &base, native(k));
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

/* ---- choosing --------------------------------------------------------------------------- */

static double kld_of(const struct plan_choice *c)
{
	return c->kld < 0 ? 1e9 : c->kld;
}

static int64_t ctx_of(const struct plan_request *r, const struct plan_choice *c)
{
	int64_t cap = r->use_case == PLAN_LONG_CONTEXT ? c->setup.p.n_ctx :
		      r->use_case == PLAN_SPEED        ? PLAN_SPEED_CTX_CAP :
							 PLAN_GENERAL_CTX_CAP;
	return c->setup.p.n_ctx < cap ? c->setup.p.n_ctx : cap;
}

enum crit {
	C_KLD, /* lower is better; within tie_kld of the best is equal */
	C_TPS, /* higher is better; within SPEED_TIE of the best is equal */
	C_CTX, /* higher is better (up to the use case's cap); long_context: within CTX_TIE */
};

static double crit_value(const struct plan_request *r, enum crit c, const struct plan_choice *x)
{
	return c == C_KLD ? -kld_of(x) : c == C_TPS ? x->res.decode_tps : (double)ctx_of(r, x);
}

/* Whether v is within the criterion's tolerance of the best value top. */
static bool crit_near(const struct plan_request *r, const struct plan_quality *q, enum crit c,
		      double v, double top, bool last)
{
	if (last)
		return v >= top;
	if (c == C_KLD)
		return v >= top - q->tie_kld;
	if (c == C_TPS)
		return v * (1 + SPEED_TIE) >= top;
	return r->use_case == PLAN_LONG_CONTEXT ? v * (1 + CTX_TIE) >= top : v >= top;
}

/* The objective's choice among the candidates flagged in eligible (keep is scratch): each
 * criterion, in the use case's order, keeps those within its tolerance of the best still in;
 * the exact speed settles what is left. Tolerances are measured from the best, not pairwise,
 * so the choice never drifts along a chain of near-ties. Returns the index or -1. */
static int select_best(const struct plan_request *r, const struct plan_quality *q,
		       const struct plan_choice *all, int na, const bool *eligible, bool *keep)
{
	static const enum crit orders[PLAN_USE_CASES][4] = {
		[PLAN_GENERAL] = {C_KLD, C_TPS, C_CTX, C_TPS},
		[PLAN_LONG_CONTEXT] = {C_CTX, C_KLD, C_TPS, C_TPS},
		[PLAN_SPEED] = {C_TPS, C_KLD, C_CTX, C_TPS},
		[PLAN_QUALITY] = {C_KLD, C_TPS, C_CTX, C_TPS},
	};
	int pick = -1;

	for (int i = 0; i < na; i++)
		keep[i] = eligible[i];
	for (int step = 0; step < 4; step++) {
		enum crit c = orders[r->use_case][step];
		double top = -1e300;
		for (int i = 0; i < na; i++)
			if (keep[i] && crit_value(r, c, &all[i]) > top)
				top = crit_value(r, c, &all[i]);
		for (int i = 0; i < na; i++)
			if (keep[i] &&
			    !crit_near(r, q, c, crit_value(r, c, &all[i]), top, step == 3))
				keep[i] = false;
	}
	for (int i = 0; i < na && pick < 0; i++)
		if (keep[i])
			pick = i;
	return pick;
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
	out->res.decode_tps = c->tps;
	out->setup.p.n_ctx = c->ctx;
}

static const char *format_name(const struct plan_setup *s)
{
	if (s->runtime == PLAN_RT_VLLM)
		return s->vformat == PLAN_VLLM_FP8 ? "fp8" :
		       s->vformat == PLAN_VLLM_AWQ ? "awq" :
						     "bf16";
	return rf_ftype_name(s->ftype) ? rf_ftype_name(s->ftype) : "?";
}

static const char *kv_name(int t)
{
	return t == RF_GT_Q8_0 ? "q8_0" : t == RF_GT_Q4_0 ? "q4_0" : "f16";
}

/* "Q4_K_M, q8_0 KV, 40 of 80 layers on the GPU" */
static void describe(const struct work *k, const struct plan_choice *c, char *buf, size_t len)
{
	const struct plan_setup *s = &c->setup;
	const struct rf_mem_estimate *m = &c->res.mem;
	int n = snprintf(buf, len, "%s, %s KV", format_name(s), kv_name(s->p.type_k));

	if (n < 0 || (size_t)n >= len)
		return;
	if (s->p.n_cpu_moe > 0)
		n += snprintf(buf + n, len - (size_t)n, ", experts of %lld layers in RAM",
			      (long long)s->p.n_cpu_moe);
	else if (k->hw->n_dev > 0 && s->p.n_gpu_layers >= 0)
		n += snprintf(buf + n, len - (size_t)n, ", %lld of %lld layers on the GPU",
			      (long long)m->n_gpu_layers, (long long)model_n_layer(k->m->arch));
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ": %lld tokens, %.1f tok/s, KLD %.4f",
			 (long long)s->p.n_ctx, c->res.decode_tps, c->kld);
}

static void why_alt(const struct work *k, const struct plan_choice *best, struct plan_choice *a)
{
	char d[PLAN_WHY_LEN - 40];
	const char *gain = cmp_kld(k->q, a, best) < 0               ? "better quality" :
			   a->res.decode_tps > best->res.decode_tps ? "faster" :
			   a->setup.p.n_ctx > best->setup.p.n_ctx   ? "more context" :
								      "a different trade";

	describe(k, a, d, sizeof(d));
	snprintf(a->why, sizeof(a->why), "%s than the choice: %s", gain, d);
}

static void answer_note(struct plan_answer *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void answer_note(struct plan_answer *a, const char *fmt, ...)
{
	va_list ap;

	if (a->n_notes >= PLAN_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(a->notes[a->n_notes++], PLAN_NOTE_LEN, fmt, ap);
	va_end(ap);
}

static void objective_text(const struct work *k, struct plan_answer *a)
{
	const struct plan_request *r = k->r;
	const char *floor = rf_ftype_name(k->q->floor_ftype);
	char head[120];

	if (r->use_case == PLAN_LONG_CONTEXT)
		snprintf(head, sizeof(head), "the longest context at %s-class quality or better",
			 floor ? floor : "?");
	else if (r->use_case == PLAN_SPEED)
		snprintf(head, sizeof(head), "the fastest decode at %s-class quality or better",
			 floor ? floor : "?");
	else
		snprintf(head, sizeof(head), "the best quality (llama.cpp KL divergence)");
	snprintf(a->objective, sizeof(a->objective),
		 "%s: %s with n_ctx >= %lld and decode >= %.1f tokens/s, every GPU at most "
		 "%.0f%% of its budget",
		 plan_use_case_name(r->use_case), head, (long long)a->ctx_target, a->floor_tps,
		 k->max_util * 100);
}

/* Chooses among k's candidates into out. */
static int choose(struct work *k, struct plan_answer *out)
{
	const struct plan_request *r = k->r;
	bool qfloor = r->use_case == PLAN_LONG_CONTEXT || r->use_case == PLAN_SPEED;
	struct need n = {k->ctx_target, qfloor ? plan_quality_floor(k->q) : -1,
			 r->min_tps > 0 ? r->min_tps : PLAN_MIN_TPS};
	struct plan_choice *all;
	bool *front, *keep, *elig;
	int na = 0, best = -1, nfront = 0;

	if (r->use_case == PLAN_QUALITY && n.tps < PLAN_READING_TPS)
		n.tps = PLAN_READING_TPS;
	if (r->n_ctx > 0)
		n.ctx = r->n_ctx;
	/* Relax, in order, what no setup can meet: the context target, then the speed floor
	 * (to 80% of the fastest setup that meets the rest), then the quality floor. */
	if (!any_meets(k, &n) && r->n_ctx == 0) {
		struct need m = n;
		m.ctx = 0;
		if (most_ctx(k, &m) > 0) {
			n.ctx = most_ctx(k, &m);
			out->ctx_short = true;
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
		n.ctx = r->n_ctx > 0 ? r->n_ctx : PLAN_MIN_CTX;
		out->below_floor = true;
	}
	out->floor_tps = n.tps;
	out->ctx_target = n.ctx;
	all = calloc((size_t)(k->n > 0 ? k->n : 1), sizeof(*all));
	front = calloc((size_t)(k->n > 0 ? k->n : 1) * 3, sizeof(*front));
	if (!all || !front) {
		free(all);
		free(front);
		return RF_E_NOMEM;
	}
	keep = front + (k->n > 0 ? k->n : 1);
	elig = keep + (k->n > 0 ? k->n : 1);
	for (int i = 0; i < k->n; i++)
		if (meets(&k->c[i], &n))
			to_choice(&k->c[i], &all[na++]);
	for (int i = 0; i < na; i++)
		elig[i] = true;
	best = select_best(r, k->q, all, na, elig, keep);
	/* The Pareto front over quality, speed and context. */
	for (int i = 0; i < na; i++) {
		bool dominated = false;
		for (int j = 0; j < na && !dominated; j++) {
			const struct plan_choice *a = &all[j], *b = &all[i];
			bool ge = kld_of(a) <= kld_of(b) &&
				  a->res.decode_tps >= b->res.decode_tps &&
				  a->setup.p.n_ctx >= b->setup.p.n_ctx;
			bool gt = kld_of(a) < kld_of(b) || a->res.decode_tps > b->res.decode_tps ||
				  a->setup.p.n_ctx > b->setup.p.n_ctx;
			dominated = j != i && ge && (gt || j < i);
		}
		front[i] = !dominated && i != best;
		nfront += front[i];
	}
	if (best >= 0) {
		out->found = true;
		out->best = all[best];
	}
	/* The front's best PLAN_MAX_ALTS by the objective, in its order. */
	while (out->n_alt < PLAN_MAX_ALTS && nfront > 0) {
		int pick = select_best(r, k->q, all, na, front, keep);
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

/* Re-evaluates c (its memory estimate and speeds are kept in the answer). */
static int finish(struct work *k, struct plan_choice *c)
{
	int rc = load_format(k, &c->setup);

	if (rc != 0)
		return rc < 0 ? rc : RF_E_INTERNAL;
	rc = plan_evaluate(k->m->arch, k->m->params, k->w, k->hw, &c->setup, &c->res);
	k->evaluated++;
	return rc;
}

static void trade_notes(struct work *k, struct plan_answer *a)
{
	const struct plan_setup *s = &a->best.setup;
	const int64_t n_layer = model_n_layer(k->m->arch);

	if (a->ctx_short)
		answer_note(a,
			    "n_ctx %lld -> %lld: no setup fits %lld tokens at the speed and "
			    "quality asked",
			    (long long)k->ctx_target, (long long)s->p.n_ctx,
			    (long long)k->ctx_target);
	if (s->p.type_k != RF_GT_F16)
		answer_note(a,
			    "kv_cache_type f16 -> %s: the quantized cache holds more context in "
			    "the same memory (flash attention on)",
			    kv_name(s->p.type_k));
	if (s->p.n_cpu_moe > 0)
		answer_note(
			a,
			"n_cpu_moe 0 -> %lld: the routed experts of the first %lld of %lld "
			"layers stay in host memory; attention and the KV cache stay on the GPU",
			(long long)s->p.n_cpu_moe, (long long)s->p.n_cpu_moe, (long long)n_layer);
	if (s->p.n_gpu_layers >= 0 && k->hw->n_dev > 0)
		answer_note(a,
			    "n_gpu_layers all -> %lld: %lld of %lld layers fit on the GPU with "
			    "headroom; the rest run from host RAM",
			    (long long)a->best.res.mem.n_gpu_layers,
			    (long long)a->best.res.mem.n_gpu_layers, (long long)n_layer);
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
	int64_t max_pos = m->arch->max_position_embeddings;
	bool kv_q4 = false;
	int rc;

	memset(out, 0, sizeof(*out));
	if (r->use_case < 0 || r->use_case >= PLAN_USE_CASES || r->n_parallel < 1 ||
	    r->n_parallel > 256 || r->n_ctx < -1 || r->n_ctx > MODEL_MAX_POSITIONS)
		return RF_E_INVALID_VALUE;
	memset(&k, 0, sizeof(k));
	k.m = m;
	k.hw = hw;
	k.q = q;
	k.r = r;
	/* vLLM's --gpu-memory-utilization already is its headroom. */
	k.max_util = r->max_gpu_util > 0        ? r->max_gpu_util :
		     r->runtime == PLAN_RT_VLLM ? 1.0 :
						  PLAN_MAX_GPU_UTIL;
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
	k.f16 = malloc(sizeof(*k.f16));
	k.res = malloc(sizeof(*k.res));
	k.c = malloc(sizeof(*k.c) * MAX_CANDS);
	rc = !k.w || !k.f16 || !k.res || !k.c ? RF_E_NOMEM : 0;
	if (rc == 0 && r->runtime == PLAN_RT_VLLM) {
		rc = m->weights(m->weights_ctx, m->arch, RF_FT_F16, k.f16);
		if (rc < 0 && rc != RF_E_NOMEM)
			rc = RF_E_INVALID_VALUE;
	}
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
	if (rc == 0 && k.n == 0 && r->runtime == PLAN_RT_LLAMA_CPP) {
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
	}
	if (rc == 0 && out->found) {
		char d[PLAN_WHY_LEN];
		describe(&k, &out->best, d, sizeof(d));
		snprintf(out->best.why, sizeof(out->best.why), "%s", d);
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
	if (rc == 0 && !out->found && k.min_total < 0 && r->runtime == PLAN_RT_LLAMA_CPP &&
	    m->fixed_ftype < 0) {
		struct plan_setup s;
		memset(&s, 0, sizeof(s));
		s.ftype = m->native_mxfp4 ? RF_FT_MXFP4_MOE : llama_formats[N_LLAMA_FORMATS - 1];
		rf_infer_params_default(&s.p);
		s.p.flash_attn = hw->n_dev > 0;
		if (load_format(&k, &s) == 0)
			note_need(&k, &s);
	}
	out->evaluated = k.evaluated;
	out->min_total_bytes = k.min_total;
	free(k.w);
	free(k.f16);
	free(k.res);
	free(k.c);
	return rc;
}
