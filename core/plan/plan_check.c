/*
 * validate's rules and advice (see plan_check.h): the settings rules read the config and the
 * machine; the memory rules evaluate the config's setup and ask the planner's searches for the
 * numbers of their suggestions; the planner's own setup closes every memory finding.
 */
#include "core/text.h"
#include "core/plan/plan_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/quant.h"
#include "core/plan/plan_machine.h"
#include "core/plan/plan_rope.h"
#include "core/format.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

struct check {
	const struct plan_model *m;
	const struct plan_check_machine *hw;
	const struct plan_quality *q;
	const struct plan_check_config *c;
	struct plan_check_answer *a;
	struct plan_machine *split; /* the machine with the config's tensor_split */
	bool plan_asked;
};

struct plan_check_finding *plan_check_add(struct plan_check_answer *a, const char *code, bool error,
					  const char *field)
{
	struct plan_check_finding *k;

	if (a->n >= PLAN_CHECK_MAX)
		return NULL;
	k = &a->f[a->n++];
	memset(k, 0, sizeof(*k));
	k->code = code;
	k->error = error;
	if (field)
		rf_format(k->field, sizeof(k->field), "%s", field);
	return k;
}

int plan_check_errors(const struct plan_check_answer *a)
{
	int n = 0;

	for (int i = 0; i < a->n; i++)
		n += a->f[i].error;
	return n;
}

static void text(char *dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text(char *dst, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rf_note_vformat(dst, PLAN_CHECK_TEXT, fmt, ap);
	va_end(ap);
}

/* ---- the planner's setup ------------------------------------------------------------------- */

/* The setup the planner chooses for the model here: general use, the config's runtime, its
 * n_ctx and n_parallel kept, its quant when it gave one; what cannot be kept is the
 * planner's (the context first, then the format). Asked once. */
static int ask_plan(struct check *k)
{
	const struct plan_check_config *c = k->c;
	struct plan_answer *ans;
	struct plan_request r;
	int rc;

	if (k->plan_asked || !k->q)
		return 0;
	k->plan_asked = true;
	if (!(ans = malloc(sizeof(*ans))))
		return RF_E_NOMEM;
	plan_request_default(&r);
	if (c->vllm) {
		r.runtime = PLAN_RT_VLLM;
		if (c->has_mml)
			r.n_ctx = c->v.max_model_len;
	} else {
		if (c->quant_given && k->m->fixed_ftype < 0)
			r.ftype = c->s.ftype;
		if (c->has_ctx)
			r.n_ctx = c->s.p.n_ctx;
		if (c->has_parallel && c->s.p.n_parallel <= 256)
			r.n_parallel = c->s.p.n_parallel;
	}
	rc = plan_infer(k->m, k->hw->pm, k->q, &r, ans);
	if (rc == 0 && !ans->found && r.n_ctx != 0) {
		r.n_ctx = 0;
		rc = plan_infer(k->m, k->hw->pm, k->q, &r, ans);
	}
	if (rc == 0 && !ans->found && r.ftype >= 0) {
		r.ftype = -1;
		rc = plan_infer(k->m, k->hw->pm, k->q, &r, ans);
	}
	if (rc == 0 && ans->found) {
		k->a->planned = true;
		k->a->plan = ans->best;
	}
	free(ans);
	return rc == RF_E_NOMEM ? rc : 0;
}

/* The summary of the planner's setup, for the memory findings' suggestions. */
static void plan_line(const struct check *k)
{
	const struct plan_setup *s = &k->a->plan.setup;
	char *line = k->a->plan_line;

	if (s->runtime == PLAN_RT_VLLM) {
		const char *qf = plan_vllm_format_flag(s->vformat);
		text(line,
		     "the setup /api/config plans here: tensor_parallel_size %d, max_model_len "
		     "%lld, gpu_memory_utilization %.2f, quantization %s, kv_cache_dtype %s "
		     "(%lld tokens of KV cache)",
		     s->tp, (long long)s->p.n_ctx, s->vllm_util, qf ? qf : "none (bf16)",
		     s->p.type_k != RF_GT_F16 ? "fp8" : "auto",
		     (long long)k->a->plan.res.kv_tokens);
		return;
	}
	text(line,
	     "the setup /api/config plans here: %s, n_ctx %lld, n_gpu_layers %lld, n_cpu_moe "
	     "%lld, n_ubatch %lld, cache_type_k/v %s (every GPU under %.0f%%)",
	     k->m->fixed_ftype < 0 ? rf_ftype_name(s->ftype) : "the file's quant",
	     (long long)s->p.n_ctx, (long long)plan_check_gpu_layers(k->m->arch, k->hw->pm, s),
	     (long long)s->p.n_cpu_moe, (long long)s->p.n_ubatch,
	     s->p.type_k == RF_GT_Q8_0 ? "q8_0" :
	     s->p.type_k == RF_GT_Q4_0 ? "q4_0" :
					 "f16",
	     PLAN_MAX_GPU_UTIL * 100);
}

int64_t plan_check_gpu_layers(const struct model_arch *a, const struct plan_machine *hw,
			      const struct plan_setup *s)
{
	if (hw->n_dev == 0)
		return 0;
	return s->p.n_gpu_layers < 0 ? model_n_layer(a) + 1 : s->p.n_gpu_layers;
}

/* The model's layers as /api/estimate counts them (an encoder's too). */
static int64_t n_layers(const struct model_arch *a)
{
	return a->n_layers + a->n_encoder_layers;
}

/* ---- llama.cpp's memory --------------------------------------------------------------------- */

/* The fullest GPU of m (bytes against budget); -1 when no budget is known. */
static int worst_device(const struct rf_mem_estimate *m, double *u)
{
	int w = -1;

	*u = -1;
	for (int i = 0; i < m->n_devices; i++) {
		const struct rf_mem_device_use *d = &m->per_device[i];
		double x = d->budget_bytes > 0 ? (double)d->bytes / (double)d->budget_bytes :
			   d->budget_bytes == 0 && d->bytes > 0 ? 2.0 :
								  -1;
		if (x > *u) {
			*u = x;
			w = i;
		}
	}
	return w;
}

/* A tensor_split that overloads one GPU while the same layers fit split by free memory: an
 * error of the split, with the proportions of the GPUs' budgets as the fix. Returns 1 when it
 * reported that, 0 when not, or a negative rf_err. */
static int check_split(struct check *k, const struct rf_mem_weights *w,
		       const struct rf_mem_estimate *m, int worst)
{
	struct plan_result *r = malloc(sizeof(*r));
	double min_budget = -1;
	char ratio[96] = "";
	size_t used = 0;
	struct plan_check_finding *f;
	int rc;

	if (!r)
		return RF_E_NOMEM;
	rc = plan_evaluate(k->m->arch, k->m->params, w, k->hw->pm, &k->c->s, r);
	rc = rc < 0 ? 0 : r->fits;
	free(r);
	if (!rc)
		return 0;
	for (int i = 0; i < m->n_devices; i++) {
		double b = (double)m->per_device[i].budget_bytes;
		if (b > 0 && (min_budget < 0 || b < min_budget))
			min_budget = b;
	}
	for (int i = 0; i < m->n_devices; i++) {
		double b = (double)m->per_device[i].budget_bytes;
		int n = rf_format(ratio + used, sizeof(ratio) - used, "%s%.0f", used ? ":" : "",
				  min_budget > 0 && b > 0 ? 10.0 * b / min_budget : 0.0);
		if (n < 0 || (size_t)n >= sizeof(ratio) - used)
			break;
		used += (size_t)n;
	}
	if (!(f = plan_check_add(k->a, "tensor_split_overloads_gpu", true, "tensor_split")))
		return 1;
	text(f->message,
	     "tensor_split puts %.2f GiB on %s, which can use %.2f GiB; split by free memory the "
	     "same settings fit",
	     (double)m->per_device[worst].bytes / GIB, m->per_device[worst].device,
	     (double)m->per_device[worst].budget_bytes / GIB);
	text(f->suggestion, "set tensor_split to %s (the GPUs' usable memory) or leave it out",
	     ratio);
	return 1;
}

/* The largest n_ctx up to the config's at which its setup fits with no GPU above util. */
static int64_t largest_ctx(const struct check *k, const struct plan_setup *s, double util,
			   int64_t lo, int64_t n_ctx)
{
	int64_t hi = n_ctx / RF_KV_PAD * RF_KV_PAD;

	return hi < RF_KV_PAD ? 0 : plan_largest_ctx(k->m, k->split, s, util, lo, hi);
}

static int vram_exceeded(struct check *k, const struct rf_mem_estimate *m, int worst)
{
	const struct plan_check_config *c = k->c;
	int64_t n_ctx = m->n_ctx, best8 = 0;
	int64_t best = largest_ctx(k, &c->s, 1.0, RF_KV_PAD, n_ctx);
	struct plan_check_finding *f;

	if (best < 0)
		return (int)best;
	if (!(f = plan_check_add(k->a, "vram_exceeded", true, best > 0 ? "n_ctx" : "n_gpu_layers")))
		return 0;
	text(f->message, "%s needs %.2f GiB but %.2f GiB of it can be used",
	     m->per_device[worst].device, (double)m->per_device[worst].bytes / GIB,
	     (double)m->per_device[worst].budget_bytes / GIB);
	if (best > 0 && c->kv_f16) {
		struct plan_setup q8 = c->s;
		q8.p.type_k = q8.p.type_v = RF_GT_Q8_0;
		q8.p.flash_attn = true;
		if ((best8 = largest_ctx(k, &q8, 1.0, best, n_ctx)) < 0)
			return (int)best8;
	}
	if (best > 0 && best8 >= n_ctx) {
		text(f->suggestion,
		     "lower n_ctx to %lld, or keep n_ctx %lld and use cache_type_k q8_0, "
		     "cache_type_v q8_0 and flash_attn true",
		     (long long)best, (long long)n_ctx);
	} else if (best > 0 && best8 > best) {
		text(f->suggestion,
		     "lower n_ctx to %lld, or to %lld with cache_type_k q8_0, cache_type_v q8_0 and "
		     "flash_attn true",
		     (long long)best, (long long)best8);
	} else if (best > 0) {
		text(f->suggestion, "lower n_ctx to %lld", (long long)best);
	} else {
		int64_t ngl = plan_most_gpu_layers(k->m, k->split, &c->s, 1.0);
		if (ngl < -1)
			return (int)ngl;
		if (ngl >= 0)
			text(f->suggestion,
			     "set n_gpu_layers to %lld (of %lld; the rest runs on the CPU)",
			     (long long)ngl, (long long)n_layers(k->m->arch));
		else
			text(f->suggestion,
			     "the model does not fit even with n_gpu_layers 0 and n_ctx %d; use a "
			     "smaller quant or model",
			     RF_KV_PAD);
	}
	return 0;
}

static int ram_exceeded(struct check *k, const struct rf_mem_estimate *m)
{
	const struct plan_check_config *c = k->c;
	int64_t best = largest_ctx(k, &c->s, 1.0, RF_KV_PAD, m->n_ctx);
	struct plan_check_finding *f;
	int rc;

	if (best < 0)
		return (int)best;
	if (!(f = plan_check_add(k->a, "ram_exceeded", true, best > 0 ? "n_ctx" : "quant")))
		return 0;
	text(f->message,
	     "the part in host memory needs %.2f GiB, more than the RAM this machine can spare",
	     (double)m->host_bytes / GIB);
	if (best > 0) {
		text(f->suggestion, "lower n_ctx to %lld", (long long)best);
		return 0;
	}
	/* No context fits at this format: the planner's choice of format. */
	if ((rc = ask_plan(k)) < 0)
		return rc;
	if (k->a->planned && k->a->plan.setup.ftype != c->s.ftype)
		text(f->suggestion, "use quant %s (%.2f GiB in all)",
		     rf_ftype_name(k->a->plan.setup.ftype),
		     (double)k->a->plan.res.mem.total_bytes / GIB);
	else if (k->a->planned || !k->q)
		text(f->suggestion, "use a smaller quant or model");
	else
		text(f->suggestion, "no quant fits here even at n_ctx %d; use a smaller model",
		     PLAN_MIN_CTX);
	return 0;
}

static int vram_over_90(struct check *k, const struct rf_mem_estimate *m, double u)
{
	int64_t best = largest_ctx(k, &k->c->s, PLAN_MAX_GPU_UTIL, RF_KV_PAD, m->n_ctx);
	struct plan_check_finding *f;

	if (best < 0)
		return (int)best;
	if (!(f = plan_check_add(k->a, "vram_over_90", false, "n_ctx")))
		return 0;
	text(f->message, "a GPU is %.0f%% full; other programs and fragmentation can push it over",
	     u * 100);
	if (best > 0)
		text(f->suggestion, "lower n_ctx to %lld to keep every GPU under %.0f%%",
		     (long long)best, PLAN_MAX_GPU_UTIL * 100);
	else
		text(f->suggestion,
		     "use a smaller quant; even n_ctx %d leaves less than %.0f%% free", RF_KV_PAD,
		     (1 - PLAN_MAX_GPU_UTIL) * 100);
	return 0;
}

/* The memory rules over r, the evaluation of the config's setup (weights w). */
static int check_memory(struct check *k, const struct rf_mem_weights *w,
			const struct plan_result *r)
{
	double u;
	int worst = worst_device(&r->mem, &u), rc;

	if (u > 1.0 && worst >= 0 && k->c->n_split > 0 &&
	    (rc = check_split(k, w, &r->mem, worst)) != 0)
		return rc < 0 ? rc : 0;
	if (u > 1.0 && worst >= 0)
		return vram_exceeded(k, &r->mem, worst);
	if (!r->fits && r->mem.utilization >= 0)
		return ram_exceeded(k, &r->mem);
	if (u > PLAN_MAX_GPU_UTIL && worst >= 0)
		return vram_over_90(k, &r->mem, u);
	return 0;
}

/* ---- llama.cpp's settings ------------------------------------------------------------------- */

static bool has_vendor(const struct hw_snapshot *hw, const char *vendor)
{
	for (int i = 0; i < hw->n_gpus; i++)
		if (strcmp(hw->gpus[i].vendor, vendor) == 0)
			return true;
	return false;
}

static void check_backend(struct check *k)
{
	const struct hw_snapshot *hw = k->hw->hw;
	const char *b = k->c->backend;
	struct plan_check_finding *f;
	bool ok = strcmp(b, "cpu") == 0 || (strcmp(b, "cuda") == 0 && has_vendor(hw, "nvidia")) ||
		  (strcmp(b, "rocm") == 0 && has_vendor(hw, "amd")) ||
		  (strcmp(b, "metal") == 0 && has_vendor(hw, "apple")) ||
		  (strcmp(b, "sycl") == 0 && has_vendor(hw, "intel")) ||
		  (strcmp(b, "vulkan") == 0 &&
		   (has_vendor(hw, "nvidia") || has_vendor(hw, "amd") || has_vendor(hw, "intel")));

	if (ok || !(f = plan_check_add(k->a, "backend_unavailable", true, "backend")))
		return;
	text(f->message, "backend %s needs a GPU this machine does not have", b);
	if (hw->backend[0] && strcmp(hw->backend, "cpu") != 0)
		text(f->suggestion, "use backend %s (this machine's %d GPU%s)", hw->backend,
		     hw->n_gpus, hw->n_gpus == 1 ? "" : "s");
	else
		text(f->suggestion, "use backend cpu with n_gpu_layers 0");
}

/* What to do about a context of seq positions per sequence beyond the trained maxpos: the
 * scaling the model card documents (d), else a lower n_ctx, or a factor of one's own. */
static void ctx_suggestion(struct plan_check_finding *f, const struct plan_rope *d, int64_t seq,
			   int64_t maxpos, int64_t par)
{
	if (d->need == PLAN_ROPE_SCALED)
		text(f->suggestion,
		     "set rope_scaling yarn with rope_scale %g and yarn_orig_ctx %lld (the YaRN "
		     "scaling the model card documents, up to %lld positions), or lower n_ctx to "
		     "%lld (%lld per sequence)",
		     d->use.factor, (long long)d->use.orig_ctx, (long long)d->max,
		     (long long)(maxpos * par), (long long)maxpos);
	else if (d->max > maxpos)
		text(f->suggestion,
		     "lower n_ctx to %lld (%lld per sequence, the most the model card's YaRN "
		     "reaches), with rope_scaling yarn, or to %lld (%lld) without",
		     (long long)(d->max * par), (long long)d->max, (long long)(maxpos * par),
		     (long long)maxpos);
	else
		text(f->suggestion,
		     "lower n_ctx to %lld (%lld per sequence): the model card documents no rope "
		     "scaling beyond it (rope_scaling yarn with rope_scale %.2f runs, untested)",
		     (long long)(maxpos * par), (long long)maxpos, (double)seq / (double)maxpos);
}

/* The rules on the model's size: context and layers. */
static void check_model(struct check *k, int64_t n_ctx, int64_t par)
{
	const struct plan_check_config *c = k->c;
	int64_t maxpos = k->m->arch->max_position_embeddings, layers = n_layers(k->m->arch);
	int64_t seq = n_ctx / par;
	/* YaRN stretches yarn_orig_ctx (llama.cpp's default: the trained window). */
	struct model_rope set = {MODEL_ROPE_YARN, c->rope_scale,
				 c->yarn_orig_ctx > 0 ? c->yarn_orig_ctx : maxpos, 0};
	bool scaled = c->rope_on && (c->rope_scale <= 0 || seq <= plan_rope_reach(&set, maxpos));
	struct plan_rope d;
	struct plan_check_finding *f;

	plan_rope_decide(k->m->arch, &k->m->rope, seq, &d);
	if (maxpos > 0 && seq > maxpos && !scaled &&
	    (f = plan_check_add(k->a, "ctx_over_model", seq > 2 * maxpos, "n_ctx"))) {
		text(f->message, "each sequence gets %lld tokens but the model was trained on %lld",
		     (long long)seq, (long long)maxpos);
		ctx_suggestion(f, &d, seq, maxpos, par);
	}
	/* Scaled, yet past what the model card documents: llama.cpp runs it, worse. */
	if (maxpos > 0 && scaled && d.need == PLAN_ROPE_BEYOND &&
	    (f = plan_check_add(k->a, "ctx_over_documented", false, "n_ctx"))) {
		text(f->message,
		     "each sequence gets %lld tokens, beyond the %lld %s; quality past it is "
		     "untested",
		     (long long)seq, (long long)d.max,
		     d.max > maxpos ? "the model card documents with YaRN" :
				      "the model was trained on, and its card documents no rope "
				      "scaling");
		text(f->suggestion, "lower n_ctx to %lld (%lld per sequence)",
		     (long long)(d.max * par), (long long)d.max);
	}
	if (c->has_ngl && c->ngl > layers + 1 && c->ngl < PLAN_CHECK_NGL_ALL && layers > 0 &&
	    (f = plan_check_add(k->a, "gpu_layers_over_model", false, "n_gpu_layers"))) {
		text(f->message,
		     "n_gpu_layers %lld is more than the model's %lld layers and its output layer",
		     (long long)c->ngl, (long long)layers);
		text(f->suggestion, "set n_gpu_layers to %lld (every layer), or -1",
		     (long long)(layers + 1));
	}
}

static void check_settings(struct check *k, int64_t n_ctx)
{
	const struct plan_check_config *c = k->c;
	const struct hw_snapshot *hw = k->hw->hw;
	int64_t batch = c->n_batch, par = c->has_parallel ? c->s.p.n_parallel : 1;
	struct plan_check_finding *f;

	if (c->has_ubatch && c->n_ubatch > batch &&
	    (f = plan_check_add(k->a, "ubatch_over_batch", true, "n_ubatch"))) {
		text(f->message, "n_ubatch %lld is larger than n_batch %lld",
		     (long long)c->n_ubatch, (long long)batch);
		text(f->suggestion, "set n_ubatch to %lld (at most n_batch)",
		     (long long)(batch < 512 ? batch : 512));
	}
	if (n_ctx > 0 && batch > n_ctx &&
	    (f = plan_check_add(k->a, "batch_over_ctx", false, "n_batch"))) {
		text(f->message,
		     "n_batch %lld is larger than n_ctx %lld; a prompt longer than the context "
		     "cannot be processed",
		     (long long)batch, (long long)n_ctx);
		text(f->suggestion, "set n_batch to %lld (n_ctx)", (long long)n_ctx);
	}
	if (k->m)
		check_model(k, n_ctx, par);
	if (c->cache_v && !c->fa_on &&
	    (f = plan_check_add(k->a, "kv_quant_needs_flash_attn", true, "cache_type_v"))) {
		text(f->message,
		     "llama.cpp refuses a quantized V cache (%s) without flash attention",
		     c->cache_v);
		text(f->suggestion, "set flash_attn true, or cache_type_v f16");
	}
	if (c->backend)
		check_backend(k);
	if (c->has_threads) {
		int cores = hw->cpu.performance_cores > 0 ? hw->cpu.performance_cores :
							    hw->cpu.physical_cores;
		const char *kind = hw->cpu.performance_cores > 0 ? " performance" : "";
		if (cores > 0 && c->n_threads > cores &&
		    (f = plan_check_add(k->a, "threads_over_physical", false, "n_threads"))) {
			text(f->message,
			     "n_threads %lld is more than the %d physical%s cores; extra threads "
			     "slow generation down",
			     (long long)c->n_threads, cores, kind);
			text(f->suggestion, "use n_threads %d (the physical%s cores)", cores, kind);
		}
	}
	if (k->hw->mobile && (batch > PLAN_CHECK_THERMAL_BATCH || par > 1) &&
	    (f = plan_check_add(k->a, "thermal_risk", false,
				batch > PLAN_CHECK_THERMAL_BATCH ? "n_batch" : "n_parallel"))) {
		text(f->message,
		     "a laptop or embedded GPU throttles under long bursts (n_batch %lld, "
		     "n_parallel %lld)",
		     (long long)batch, (long long)par);
		text(f->suggestion, "set n_batch to %d and n_parallel to 1 for sustained runs",
		     PLAN_CHECK_THERMAL_BATCH);
	}
}

/* ---- vLLM ----------------------------------------------------------------------------------- */

/* The largest tensor_parallel_size of at most max GPUs that vLLM takes for a model of heads
 * attention and kv_heads KV heads: it divides the heads and divides or is a multiple of the KV
 * heads. */
static int vllm_best_tp(int64_t heads, int64_t kv_heads, int max)
{
	for (int t = max; t > 1; t--)
		if (heads % t == 0 && (kv_heads % t == 0 || t % kv_heads == 0))
			return t;
	return 1;
}

/* vLLM stops at start-up when the config's quantization is not what the checkpoint it loads
 * can be: AWQ on a bf16 repository (vLLM issue 1419), or a --quantization that a quantized
 * checkpoint's own quantization_config does not name. Adds the finding and returns true. */
static bool vllm_unloadable(const struct plan_check_config *c, struct plan_check_answer *out)
{
	const char *own, *want, *repo;
	struct plan_check_finding *f;

	if (!c->quant_given || c->own_precision < 0 ||
	    plan_vllm_loadable(c->entry, c->own_precision, c->v.precision, &repo))
		return false;
	if (!(f = plan_check_add(out, "quantization_needs_checkpoint", true, "quantization")))
		return false;
	own = vllm_precision_name(c->own_precision);
	want = vllm_precision_name(c->v.precision);
	if (c->own_precision == VLLM_BF16 || c->own_precision == VLLM_FP16 ||
	    c->own_precision == VLLM_FP32) {
		text(f->message,
		     "vLLM loads %s only from a checkpoint already in that format, and %s has "
		     "%s weights with no %s checkpoint the catalog knows: vLLM stops at start-up",
		     want, c->entry ? c->entry->id : "this model", own, want);
		text(f->suggestion,
		     "serve a %s checkpoint of the model (its folder or Hub id, whose config.json "
		     "names it), or set quantization fp8, which vLLM applies on load",
		     want);
	} else {
		text(f->message,
		     "the checkpoint is quantized as %s (its quantization_config), and vLLM refuses "
		     "a quantization it does not name (%s)",
		     own, want);
		text(f->suggestion,
		     "set quantization null (or %s): vLLM reads it from the checkpoint", own);
	}
	out->layout_refused = true;
	return true;
}

bool plan_check_vllm_layout(const struct model_arch *a, const struct plan_check_machine *hw,
			    const struct plan_check_config *c, struct plan_check_answer *out)
{
	int64_t tp = c->has_tp ? c->v.tensor_parallel : 1,
		pp = c->has_pp ? c->v.pipeline_parallel : 1;
	int64_t heads = a->n_heads, kvh = a->n_kv_heads > 0 ? a->n_kv_heads : heads;
	int n = hw->pm->n_vgpu, room = (int)(pp <= n ? n / pp : 1);
	struct plan_check_finding *f = NULL;

	if (n == 0 && (f = plan_check_add(out, "backend_unavailable", true, "runtime"))) {
		char why[PLAN_NOTE_LEN];
		if (plan_machine_vllm_unable(hw->hw, why, sizeof(why)))
			text(f->message, "%s", why);
		else
			text(f->message,
			     "vLLM needs CUDA or ROCm GPUs; this machine's backend is %s",
			     hw->hw->backend[0] ? hw->hw->backend : "none");
		text(f->suggestion, "use runtime llama.cpp (POST /api/config plans it here)");
		out->layout_refused = true;
		return true;
	}
	if (vllm_unloadable(c, out))
		return true;
	if (tp * pp > n &&
	    (f = plan_check_add(out, "parallel_over_gpus", true,
				tp <= n ? "pipeline_parallel_size" : "tensor_parallel_size")))
		text(f->message,
		     "tensor_parallel_size %lld x pipeline_parallel_size %lld needs %lld GPUs; this "
		     "machine has %d vLLM can use",
		     (long long)tp, (long long)pp, (long long)(tp * pp), n);
	else if (heads > 0 && (heads % tp != 0 || (kvh % tp != 0 && tp % kvh != 0)) &&
		 (f = plan_check_add(out, "tp_not_dividing_heads", true, "tensor_parallel_size")))
		text(f->message,
		     "tensor_parallel_size %lld does not divide the model's %lld attention heads "
		     "(%lld KV heads): vLLM refuses to start",
		     (long long)tp, (long long)heads, (long long)kvh);
	if (f)
		text(f->suggestion, "set tensor_parallel_size to %d%s",
		     vllm_best_tp(heads, kvh, room),
		     pp > n ? " and pipeline_parallel_size to 1" : "");
	out->layout_refused = f != NULL;
	return f != NULL;
}

/* vLLM's start-up with the capacity v: the free memory it checks first, then the memory
 * profiling, then the KV cache against max_model_len, then the CUDA graphs; the headroom rule
 * last. */
static void vllm_memory(struct check *k, const struct vllm_capacity *v)
{
	const struct plan_check_config *c = k->c;
	const struct plan_machine *pm = k->hw->pm;
	double util = v->gpu_memory_utilization, total = (double)v->cuda_total_bytes;
	double graphs = (double)v->cuda_graph_bytes, tokens = (double)v->kv_cache_tokens;
	double block = v->block_size;
	int used = v->tensor_parallel * v->pipeline_parallel, short_gpu = -1;
	double free_util = 1; /* the share the GPUs' free memory allows, as the planner takes it */
	struct plan_check_finding *f;

	if (util <= 0 || total <= 0)
		return;
	for (int i = 0; i < used && i < pm->n_vgpu; i++) {
		const struct vllm_gpu *g = &pm->vgpu[i];
		double q = util * (double)(g->total_bytes - VLLM_CUDA_RESERVED_BYTES);
		double u = plan_vllm_gpu_util(g->total_bytes, g->free_bytes);
		free_util = u < free_util ? u : free_util;
		if (g->free_bytes >= 0 && (double)g->free_bytes < q && short_gpu < 0)
			short_gpu = i;
	}
	if (short_gpu >= 0 &&
	    (f = plan_check_add(k->a, "vram_not_free", true, "gpu_memory_utilization"))) {
		const struct vllm_gpu *g = &pm->vgpu[short_gpu];
		text(f->message,
		     "GPU %d has %.2f GiB free but gpu_memory_utilization %.2f asks for %.2f GiB: "
		     "vLLM refuses to start when free memory is below its share",
		     short_gpu, (double)g->free_bytes / GIB, util,
		     util * (double)(g->total_bytes - VLLM_CUDA_RESERVED_BYTES) / GIB);
		text(f->suggestion,
		     "set gpu_memory_utilization to %.2f (what is free, less 5 points)", free_util);
	}
	if (v->kv_cache_bytes <= 0) {
		if ((f = plan_check_add(k->a, "vram_exceeded", true, "quantization"))) {
			text(f->message,
			     "weights (%.2f GiB per GPU), the profiling peak (%.2f GiB) and non-torch "
			     "memory (%.2f GiB) leave nothing of gpu_memory_utilization %.2f x %.2f "
			     "GiB for the KV cache: vLLM fails to start",
			     (double)v->weights_bytes / GIB, (double)v->activation_bytes / GIB,
			     (double)v->non_torch_bytes / GIB, util, total / GIB);
			text(f->suggestion, "use a smaller format (fp8, awq) or more GPUs with "
					    "tensor_parallel_size");
		}
	} else if (block > 0 && tokens < ceil((double)v->max_model_len / block) * block &&
		   (f = plan_check_add(k->a, "kv_capacity_exceeded", true, "max_model_len"))) {
		text(f->message,
		     "max_model_len %lld is larger than the %.0f tokens the KV cache can store: "
		     "vLLM refuses to start",
		     (long long)v->max_model_len, tokens);
		text(f->suggestion, "lower max_model_len to %.0f%s", tokens,
		     c->kv_fp8 ? "" : ", or set kv_cache_dtype fp8");
	}
	if ((double)v->requested_bytes + graphs > total &&
	    (f = plan_check_add(k->a, "cuda_graphs_exceeded", true, "gpu_memory_utilization"))) {
		text(f->message,
		     "the CUDA graphs (%.2f GiB) captured after the KV cache do not fit beside "
		     "gpu_memory_utilization %.2f of the GPU",
		     graphs / GIB, util);
		text(f->suggestion,
		     "lower gpu_memory_utilization to %.2f, or set enforce_eager true",
		     floor((total - graphs) / total * 100) / 100);
	}
	/* The planner goes above vLLM's default 0.90 only up to 0.95 and only on GPUs no other
	 * process uses: 5% stays for the CUDA graphs and what other programs allocate. */
	if (util > PLAN_VLLM_GPU_UTIL + 1e-9 &&
	    (util > PLAN_VLLM_GPU_UTIL_HIGH + 1e-9 || free_util < PLAN_VLLM_GPU_UTIL) &&
	    short_gpu < 0 &&
	    (f = plan_check_add(k->a, "vram_over_90", false, "gpu_memory_utilization"))) {
		text(f->message,
		     "gpu_memory_utilization %.2f leaves less than %s of each GPU outside vLLM's "
		     "pool; the CUDA graphs, other programs and fragmentation can push it out of "
		     "memory",
		     util, util > PLAN_VLLM_GPU_UTIL_HIGH ? "5%" : "10% (other programs use it)");
		text(f->suggestion, "set gpu_memory_utilization to %.2f",
		     free_util < PLAN_VLLM_GPU_UTIL ? free_util : PLAN_VLLM_GPU_UTIL);
	}
}

static int check_vllm(struct check *k)
{
	const struct plan_check_config *c = k->c;
	const struct model_arch *a = k->m->arch;
	struct vllm_capacity v;
	const char *field = NULL;
	struct plan_check_finding *f;
	int rc = vllm_capacity(a, &c->v, k->hw->pm->vgpu, k->hw->pm->n_vgpu, &v, &field);

	if (rc == RF_E_NOMEM)
		return rc;
	int64_t reach = c->v.max_positions > 0 ? c->v.max_positions : a->max_position_embeddings;
	struct plan_rope d;

	plan_rope_decide(a, &k->m->rope, c->v.max_model_len, &d);
	if (rc < 0 && field && strcmp(field, "max_model_len") == 0 && c->has_mml && reach > 0 &&
	    c->v.max_model_len > reach &&
	    (f = plan_check_add(k->a, "ctx_over_model", true, "max_model_len"))) {
		if (reach > a->max_position_embeddings)
			text(f->message,
			     "max_model_len %lld is more than the %lld positions its rope scaling "
			     "reaches: vLLM refuses",
			     (long long)c->v.max_model_len, (long long)reach);
		else
			text(f->message,
			     "max_model_len %lld is more than the model's %lld positions: vLLM "
			     "refuses",
			     (long long)c->v.max_model_len, (long long)reach);
		if (d.need == PLAN_ROPE_SCALED)
			text(f->suggestion,
			     "set rope_scaling yarn with rope_scale %g and yarn_orig_ctx %lld (the "
			     "YaRN scaling the model card documents), or lower max_model_len to "
			     "%lld",
			     d.use.factor, (long long)d.use.orig_ctx,
			     (long long)a->max_position_embeddings);
		else
			text(f->suggestion, "lower max_model_len to %lld",
			     (long long)(d.max > 0 && d.max < reach ? d.max : reach));
	} else if (rc == 0 && c->rope_on && d.need == PLAN_ROPE_BEYOND &&
		   (f = plan_check_add(k->a, "ctx_over_documented", false, "max_model_len"))) {
		text(f->message,
		     "max_model_len %lld is beyond the %lld positions the model card "
		     "documents; quality past it is untested",
		     (long long)c->v.max_model_len, (long long)d.max);
		text(f->suggestion, "lower max_model_len to %lld", (long long)d.max);
	}
	if (rc == 0)
		vllm_memory(k, &v);
	return 0;
}

/* ---- the rules ------------------------------------------------------------------------------ */

/* The findings the planner's setup answers: memory, and vLLM's parallel layout. */
static bool planned_code(const char *code)
{
	static const char *const codes[] = {"vram_exceeded",        "ram_exceeded",
					    "vram_over_90",         "vram_not_free",
					    "kv_capacity_exceeded", "cuda_graphs_exceeded",
					    "parallel_over_gpus",   "tp_not_dividing_heads"};

	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(code, codes[i]) == 0)
			return true;
	return false;
}

/* Appends the planner's setup to the findings it answers. */
static int add_plan(struct check *k)
{
	bool any = false;
	int rc;

	for (int i = 0; i < k->a->n && !any; i++)
		any = planned_code(k->a->f[i].code);
	if (!any || !k->m)
		return 0;
	if ((rc = ask_plan(k)) < 0 || !k->a->planned)
		return rc;
	plan_line(k);
	for (int i = 0; i < k->a->n; i++) {
		struct plan_check_finding *f = &k->a->f[i];
		size_t n = strlen(f->suggestion);
		if (planned_code(f->code))
			rf_format(f->suggestion + n, sizeof(f->suggestion) - n, "; or %s",
				  k->a->plan_line);
	}
	return 0;
}

/* The llama.cpp rules: the settings, then the memory of the config's setup as evaluated. */
static int check_llama(struct check *k)
{
	const struct plan_check_config *c = k->c;
	const struct plan_model *m = k->m;
	struct rf_mem_weights *w = NULL;
	struct plan_result *r = NULL;
	int64_t n_ctx = c->has_ctx ? c->s.p.n_ctx : -1;
	int rc = 0;

	if (m) {
		w = malloc(sizeof(*w));
		r = malloc(sizeof(*r));
		k->split = malloc(sizeof(*k->split));
		if (!w || !r || !k->split) {
			rc = RF_E_NOMEM;
			goto out;
		}
		*k->split = *k->hw->pm;
		for (int i = 0; i < k->split->n_dev; i++)
			k->split->dev[i].split = i < c->n_split ? c->split[i] : 0;
		rc = m->weights(m->weights_ctx, m->arch, c->s.ftype, w);
		if (rc == 0)
			rc = plan_evaluate(m->arch, m->params, w, k->split, &c->s, r);
		if (rc < 0) { /* a setup the estimator refuses: the route has said so */
			rc = rc == RF_E_NOMEM ? rc : 0;
			m = NULL;
		} else if (!c->has_ctx) {
			n_ctx = r->mem.n_ctx; /* the context llama.cpp allocates */
		}
	}
	check_settings(k, n_ctx);
	if (m)
		rc = check_memory(k, w, r);
out:
	free(w);
	free(r);
	return rc;
}

int plan_check(const struct plan_model *m, const struct plan_check_machine *hw,
	       const struct plan_quality *q, const struct plan_check_config *c,
	       struct plan_check_answer *out)
{
	struct check k = {m, hw, q, c, out, NULL, false};
	int rc = 0;

	if (c->vllm && m && !out->layout_refused)
		rc = check_vllm(&k);
	else if (!c->vllm)
		rc = check_llama(&k);
	if (rc == 0)
		rc = add_plan(&k);
	free(k.split);
	return rc;
}
