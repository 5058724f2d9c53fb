/*
 * POST /api/config (and `rigfit config`): turns a model, a machine and a use case into the
 * settings and the command line of llama-server (or vllm serve). Nothing here models memory:
 * every candidate is put to the estimator (api_estimate_object, the same answer as
 * /api/estimate), so a config this route returns is one /api/estimate says fits.
 *
 * Use cases choose the first candidate: general (Q4_K_M, n_ctx up to 8192, f16 KV, flash
 * attention on GPUs), long_context (the largest n_ctx that fits, q8_0 KV, flash attention),
 * speed (Q4_K_M, Q4_0 on CPUs, n_ctx 4096) and quality (Q8_0, else Q6_K, else Q5_K_M). A
 * candidate that does not fit is lowered in a fixed order, each step recorded in `downgrades`
 * with its reason: n_ctx halved down to 2048 (unless the client fixed it), KV cache f16 ->
 * q8_0 -> q4_0, precision down the ladder Q8_0 ... Q2_K, then n_gpu_layers by bisection (the
 * host holds the rest). When even that fails the answer is 422 (field model) with the memory
 * the smallest configuration needs.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/hardware_input.h"
#include "api/jsonmap.h"
#include "api/runtime_config.h"
#include "api/json_alloc.h"
#include "core/device.h"
#include "core/err.h"
#include "core/estimate.h"
#include "core/hw.h"
#include "core/quant.h"

#define CFG_MIN_CTX 2048
#define CFG_DEFAULT_THREADS 4
#define GIB (1024.0 * 1024.0 * 1024.0)

enum cfg_use_case {
	CFG_GENERAL,
	CFG_LONG_CONTEXT,
	CFG_SPEED,
	CFG_QUALITY
};
enum cfg_runtime {
	CFG_LLAMA_CPP,
	CFG_VLLM
};

static const char *const cfg_use_cases[] = {"general", "long_context", "speed", "quality", NULL};
static const char *const cfg_runtimes[] = {"llama.cpp", "vllm", NULL};
static const char *const cfg_kv_types[] = {"f16", "q8_0", "q4_0"};
/* The precision ladder, highest first; a step goes to the next type with fewer bits. */
static const char *const cfg_ladder[] = {"Q8_0",   "Q6_K",   "Q5_K_M", "Q4_K_M",
					 "IQ4_XS", "Q3_K_M", "Q2_K"};
/* vLLM's weight formats, by the GGUF type that stands in for them in the estimator. */
static const char *const cfg_vllm_ladder[] = {"F16", "Q8_0", "Q4_K_M"};

struct cfg_request {
	int use_case;
	bool has_use_case;
	char precision[24];
	bool has_precision;
	int64_t n_ctx, n_parallel;
	bool has_n_ctx, has_n_parallel;
	int runtime;
	bool has_runtime;
	char hardware_profile[64];
	bool has_hardware_profile;
};

#define F(name, kind, field, size, lo, hi, has)                                                    \
	{                                                                                          \
		name, kind, offsetof(struct cfg_request, field), size, lo, hi, false,              \
			offsetof(struct cfg_request, has), NULL                                    \
	}
#define E(name, field, has, choices)                                                               \
	{                                                                                          \
		name, JM_ENUM, offsetof(struct cfg_request, field), 0, 0, 0, false,                \
			offsetof(struct cfg_request, has), choices                                 \
	}

static const struct jm_field cfg_fields[] = {
	{"model", JM_ANY, 0, 0, 0, 0, true, 0, NULL},
	{"hardware", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	E("use_case", use_case, has_use_case, cfg_use_cases),
	F("precision", JM_STRING, precision, sizeof(((struct cfg_request *)0)->precision), 0, 0,
	  has_precision),
	F("n_ctx", JM_INT_OR_MAX, n_ctx, 0, 1, 1 << 24, has_n_ctx),
	F("n_parallel", JM_INT, n_parallel, 0, 1, 4096, has_n_parallel),
	E("runtime", runtime, has_runtime, cfg_runtimes),
	F("hardware_profile", JM_STRING, hardware_profile,
	  sizeof(((struct cfg_request *)0)->hardware_profile), 0, 0, has_hardware_profile),
};

/* One candidate configuration, in the estimator's terms. */
struct cfg_state {
	const char *quant; /* GGUF type name; NULL for a GGUF file (its own types) */
	int64_t n_ctx;     /* ignored when ctx_max */
	bool ctx_max;      /* ask for the largest n_ctx that fits */
	int64_t n_batch, n_ubatch;
	int kv; /* index in cfg_kv_types */
	bool flash_attn;
	int64_t n_gpu_layers; /* -1: all */
};

/* What the route knows about the machine beyond the estimate's answer. */
struct cfg_host {
	int threads;       /* physical performance cores; 0 unknown */
	double free_frac;  /* smallest free / total over the GPUs; 1 when not known */
	int64_t ram_bytes; /* RAM budget of the host; < 0 unknown */
};

struct cfg {
	const struct api_env *env;
	const cJSON *body;
	struct cfg_request rq;
	bool gguf;
	const char *gguf_path;
	bool vllm;
	char backend[16];
	int n_gpus;
	int64_t max_pos; /* 0 unknown */
	int64_t n_layers;
	cJSON *downgrades;
	cJSON *assumptions;
};

static void cfg_note(cJSON *arr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void cfg_note(cJSON *arr, const char *fmt, ...)
{
	char buf[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	api_json_append(arr, cJSON_CreateString(buf));
}

static const cJSON *jget(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

	return b ? cJSON_GetObjectItemCaseSensitive(v, b) : v;
}

static double jnum(const cJSON *o, const char *a, const char *b, double dflt)
{
	const cJSON *v = jget(o, a, b);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static bool jtrue(const cJSON *o, const char *a)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, a));
}

/* Bits per weight of the tensors most of scheme name gets. */
static double cfg_bpw(const char *name)
{
	int ft = rf_ftype_from_name(name);
	int t = ft >= 0 ? rf_ftype_default_type(ft) : -1;

	return t >= 0 ? rf_gtype_bpw(t) : 0;
}

/* The next lower rung of the ladder below quant, or NULL at the bottom. */
static const char *cfg_next_quant(const struct cfg *c, const char *quant)
{
	const char *const *ladder = c->vllm ? cfg_vllm_ladder : cfg_ladder;
	size_t n = c->vllm ? sizeof(cfg_vllm_ladder) / sizeof(cfg_vllm_ladder[0]) :
			     sizeof(cfg_ladder) / sizeof(cfg_ladder[0]);
	double bits = cfg_bpw(quant);

	for (size_t i = 0; i < n; i++)
		if (cfg_bpw(ladder[i]) < bits)
			return ladder[i];
	return NULL;
}

/* ---- asking the estimator --------------------------------------------------------------- */

/* Asks the estimator about s. Returns 0 and the answer in *est, or a negative rf_err with the
 * envelope in out. */
static int cfg_ask(const struct cfg *c, const struct cfg_state *s, cJSON **est,
		   struct api_reply *out)
{
	cJSON *q = cJSON_CreateObject();
	const cJSON *v;
	int rc;

	*est = NULL;
	if (!q)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	api_json_add(q, "model", cJSON_Duplicate(jget(c->body, "model", NULL), true));
	if ((v = jget(c->body, "hardware", NULL)) != NULL)
		api_json_add(q, "hardware", cJSON_Duplicate(v, true));
	if (c->rq.has_hardware_profile)
		cJSON_AddStringToObject(q, "hardware_profile", c->rq.hardware_profile);
	if (s->quant)
		cJSON_AddStringToObject(q, "quant", s->quant);
	if (s->ctx_max)
		cJSON_AddStringToObject(q, "n_ctx", "max");
	else if (s->n_ctx > 0)
		cJSON_AddNumberToObject(q, "n_ctx", (double)s->n_ctx);
	cJSON_AddNumberToObject(q, "n_batch", (double)s->n_batch);
	cJSON_AddNumberToObject(q, "n_ubatch", (double)s->n_ubatch);
	if (c->rq.has_n_parallel)
		cJSON_AddNumberToObject(q, "n_parallel", (double)c->rq.n_parallel);
	cJSON_AddStringToObject(q, "kv_cache_type", cfg_kv_types[s->kv]);
	cJSON_AddBoolToObject(q, "flash_attn", s->flash_attn);
	if (s->n_gpu_layers >= 0)
		cJSON_AddNumberToObject(q, "n_gpu_layers", (double)s->n_gpu_layers);
	rc = api_estimate_object(c->env, q, est, out);
	cJSON_Delete(q);
	return rc;
}

/* Asks about s and says whether it fits: 1 yes, 0 no (*est may then be NULL: no context at
 * all fitted a "max" question), or a negative rf_err. Replaces *est. */
static int cfg_try(const struct cfg *c, const struct cfg_state *s, cJSON **est,
		   struct api_reply *out)
{
	int rc;

	cJSON_Delete(*est);
	rc = cfg_ask(c, s, est, out);
	if (rc < 0 && s->ctx_max) {
		api_reply_reset(out); /* not even the smallest context fits */
		return 0;
	}
	if (rc < 0)
		return rc;
	if (s->ctx_max) {
		int64_t floor = c->max_pos > 0 && c->max_pos < CFG_MIN_CTX ? c->max_pos :
									     CFG_MIN_CTX;
		if (jnum(*est, "settings", "n_ctx", 0) < (double)floor)
			return 0;
	}
	return jtrue(*est, "fits") ? 1 : 0;
}

/* Why est does not fit, for a downgrade's reason. */
static void cfg_why(const cJSON *est, char *buf, size_t len)
{
	const cJSON *d;

	snprintf(buf, len, "did not fit");
	if (!est) {
		snprintf(buf, len, "not even %d tokens of context fitted", CFG_MIN_CTX);
		return;
	}
	if (jtrue(est, "fits")) {
		snprintf(buf, len, "only %.0f tokens of context fitted",
			 jnum(est, "settings", "n_ctx", 0));
		return;
	}
	cJSON_ArrayForEach(d, jget(est, "memory", "per_device"))
	{
		double need = jnum(d, "bytes", NULL, 0), budget = jnum(d, "budget_bytes", NULL, -1);
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(d, "device");
		if (budget >= 0 && need > budget) {
			snprintf(buf, len,
				 "did not fit (%.1f GiB needed on %s, %.1f GiB available)",
				 need / GIB, cJSON_IsString(name) ? name->valuestring : "the GPU",
				 budget / GIB);
			return;
		}
	}
	snprintf(buf, len, "did not fit in host RAM (%.1f GiB needed there)",
		 jnum(est, "memory", "host_bytes", 0) / GIB);
}

/* True when every GPU of est holds its share (the host aside). */
static bool cfg_gpus_fit(const cJSON *est)
{
	const cJSON *d;

	cJSON_ArrayForEach(d, jget(est, "memory", "per_device"))
	{
		double budget = jnum(d, "budget_bytes", NULL, -1);
		if (budget >= 0 && jnum(d, "bytes", NULL, 0) > budget)
			return false;
	}
	return true;
}

/* ---- the machine ------------------------------------------------------------------------ */

static void cfg_host_from_hw(const struct hw_snapshot *hw, struct cfg_host *h)
{
	if (hw->cpu.performance_cores > 0)
		h->threads = hw->cpu.performance_cores;
	else if (hw->cpu.physical_cores > 0)
		h->threads = hw->cpu.physical_cores;
	for (int i = 0; i < hw->n_gpus; i++) {
		const struct hw_gpu *g = &hw->gpus[i];
		if (g->memory_total_bytes > 0 && g->memory_free_bytes >= 0) {
			double f = (double)g->memory_free_bytes / (double)g->memory_total_bytes;
			if (f < h->free_frac)
				h->free_frac = f;
		}
	}
	if (hw->memory.available_bytes >= 0)
		h->ram_bytes = rf_budget_host(hw->memory.available_bytes, hw->memory.total_bytes,
					      hw->host.container.cgroup_memory_limit_bytes, -1);
}

/* Reads the CPU cores, GPU sharing and RAM of the machine the estimator used. The estimator
 * has already accepted the hardware, so an error here is unexpected. */
static int cfg_host(const struct cfg *c, struct cfg_host *h, struct api_reply *out)
{
	const cJSON *hw = jget(c->body, "hardware", NULL);

	h->threads = 0;
	h->free_frac = 1.0;
	h->ram_bytes = -1;
	if (hw) {
		struct hw_snapshot *s = malloc(sizeof(*s));
		int rc;
		if (!s)
			return api_error(out, RF_E_NOMEM, NULL, NULL);
		rc = api_hardware_from_json(hw, "hardware", s, out);
		if (rc == 0)
			cfg_host_from_hw(s, h);
		free(s);
		return rc;
	}
	if (c->rq.has_hardware_profile) {
		const struct device_profile *p = NULL;
		if (c->env->devices &&
		    device_resolve(c->env->devices, c->rq.hardware_profile, &p) == 0 && p &&
		    p->cpu_cores > 0)
			h->threads = p->cpu_cores;
		return 0;
	}
	if (c->env->snapshot)
		cfg_host_from_hw(&c->env->snapshot->hw, h);
	return 0;
}

/* ---- choosing --------------------------------------------------------------------------- */

static int64_t cfg_min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* n_ctx capped by the model's own limit. */
static int64_t cfg_ctx_cap(const struct cfg *c, int64_t n)
{
	return c->max_pos > 0 ? cfg_min64(c->max_pos, n) : n;
}

/* The use case's first candidate. */
static void cfg_initial(const struct cfg *c, struct cfg_state *s)
{
	bool gpu = c->n_gpus > 0;

	memset(s, 0, sizeof(*s));
	s->n_gpu_layers = -1;
	s->n_batch = 2048;
	s->n_ubatch = 512;
	s->flash_attn = gpu || c->vllm;
	s->kv = 0;
	s->n_ctx = cfg_ctx_cap(c, 8192);
	switch (c->rq.use_case) {
	case CFG_LONG_CONTEXT:
		s->ctx_max = true;
		s->kv = 1;
		s->flash_attn = true;
		s->n_batch = 1024;
		s->n_ubatch = 256;
		s->quant = "Q4_K_M";
		break;
	case CFG_SPEED:
		s->n_ctx = cfg_ctx_cap(c, 4096);
		s->quant = gpu ? "Q4_K_M" : "Q4_0";
		break;
	case CFG_QUALITY:
		s->quant = "Q8_0";
		break;
	default:
		s->quant = "Q4_K_M";
		break;
	}
	if (c->vllm)
		s->quant = c->rq.use_case == CFG_SPEED ? "Q8_0" : "F16";
	if (c->rq.has_precision)
		s->quant = rf_ftype_name(rf_ftype_from_name(c->rq.precision));
	if (c->rq.has_precision && c->vllm) {
		/* vLLM's formats: fp16/bf16, fp8 (Q8_0 stands in), awq (Q4_K_M stands in). */
		double bits = cfg_bpw(c->rq.precision);
		s->quant = bits >= 16 ? "F16" : bits >= 5 ? "Q8_0" : "Q4_K_M";
	}
	if (c->gguf)
		s->quant = NULL;
	if (c->rq.has_n_ctx) {
		s->ctx_max = c->rq.n_ctx < 0;
		s->n_ctx = c->rq.n_ctx > 0 ? c->rq.n_ctx : s->n_ctx;
	}
}

/* The 422 when nothing fits: how much the smallest configuration needs. */
static int cfg_nothing_fits(const struct cfg *c, const struct cfg_state *last,
			    const struct cfg_host *h, struct api_reply *out)
{
	struct cfg_state s = *last;
	cJSON *est = NULL, *d;
	double need, offer = 0;
	int rc;

	s.ctx_max = false;
	s.n_ctx = cfg_min64(s.n_ctx > 0 ? s.n_ctx : CFG_MIN_CTX, cfg_ctx_cap(c, CFG_MIN_CTX));
	s.n_gpu_layers = -1;
	rc = cfg_ask(c, &s, &est, out);
	if (rc < 0)
		return rc;
	need = jnum(est, "memory", "total_bytes", 0);
	cJSON_ArrayForEach(d, jget(est, "memory", "per_device"))
		offer += jnum(d, "budget_bytes", NULL, 0);
	cJSON_Delete(est);
	if (c->n_gpus > 0 && h->ram_bytes >= 0)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "no configuration fits: the model needs at least %.1f GiB on the "
				 "GPU; this machine offers %.1f GiB (and %.1f GiB of RAM for "
				 "layers kept on the host)",
				 need / GIB, offer / GIB, (double)h->ram_bytes / GIB);
	if (c->n_gpus > 0)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "no configuration fits: the model needs at least %.1f GiB on the "
				 "GPU; this machine offers %.1f GiB",
				 need / GIB, offer / GIB);
	if (h->ram_bytes >= 0)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "no configuration fits: the model needs at least %.1f GiB of RAM; "
				 "this machine offers %.1f GiB",
				 need / GIB, (double)h->ram_bytes / GIB);
	return api_error(out, RF_E_INVALID_VALUE, "model",
			 "no configuration fits: the model needs at least %.1f GiB of memory",
			 need / GIB);
}

/* Lowers n_gpu_layers to the largest count whose GPU share fits (bisection); 1 when the whole
 * then fits, 0 when not, or a negative rf_err. */
static int cfg_partial(const struct cfg *c, struct cfg_state *s, cJSON **est, struct api_reply *out)
{
	int64_t lo = 0, hi = c->n_layers, best = -1;
	cJSON *probe = NULL;
	char why[256];
	int rc;

	cfg_why(*est, why, sizeof(why));
	if (s->ctx_max) {
		s->ctx_max = false;
		s->n_ctx = cfg_ctx_cap(c, CFG_MIN_CTX);
		cfg_note(c->downgrades, "n_ctx max -> %lld: a fixed context for partial offload",
			 (long long)s->n_ctx);
	}
	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;
		s->n_gpu_layers = mid;
		rc = cfg_ask(c, s, &probe, out);
		if (rc < 0)
			return rc;
		if (cfg_gpus_fit(probe)) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
		cJSON_Delete(probe);
		probe = NULL;
	}
	if (best < 0)
		return 0;
	s->n_gpu_layers = best;
	rc = cfg_try(c, s, est, out);
	if (rc == 1)
		cfg_note(c->downgrades,
			 "n_gpu_layers all -> %lld: %s; %lld of %lld layers stay on the GPU, the "
			 "rest run from host RAM",
			 (long long)best, why, (long long)best, (long long)c->n_layers);
	return rc;
}

/* Finds the first candidate that fits, lowering s step by step. Returns 0 with the fitting
 * estimate in *est, or a negative rf_err (422 model when nothing fits). */
static int cfg_fit(const struct cfg *c, struct cfg_state *s, const struct cfg_host *h, cJSON **est,
		   struct api_reply *out)
{
	char why[256];
	int rc = cfg_try(c, s, est, out);

	/* quality: Q8_0, else Q6_K, else Q5_K_M before anything else is given up. */
	if (rc == 0 && c->rq.use_case == CFG_QUALITY && !c->rq.has_precision && !c->gguf &&
	    !c->vllm) {
		while (rc == 0 && strcmp(s->quant, "Q5_K_M") != 0) {
			const char *next = cfg_next_quant(c, s->quant);
			cfg_why(*est, why, sizeof(why));
			cfg_note(c->downgrades, "precision %s -> %s: %s", s->quant, next, why);
			s->quant = next;
			rc = cfg_try(c, s, est, out);
		}
	}
	/* (1) context, halved down to 2048 unless the client fixed it. */
	while (rc == 0 && !c->rq.has_n_ctx && !s->ctx_max && s->n_ctx > CFG_MIN_CTX) {
		int64_t next = s->n_ctx / 2 < CFG_MIN_CTX ? CFG_MIN_CTX : s->n_ctx / 2;
		cfg_why(*est, why, sizeof(why));
		cfg_note(c->downgrades, "n_ctx %lld -> %lld: %s", (long long)s->n_ctx,
			 (long long)next, why);
		s->n_ctx = next;
		rc = cfg_try(c, s, est, out);
	}
	/* (2) KV cache type, f16 -> q8_0 (with flash attention) -> q4_0. */
	while (rc == 0 && s->kv < (c->vllm ? 1 : 2)) {
		cfg_why(*est, why, sizeof(why));
		cfg_note(c->downgrades, "kv_cache_type %s -> %s%s: %s", cfg_kv_types[s->kv],
			 cfg_kv_types[s->kv + 1], s->flash_attn ? "" : " (flash_attn on)", why);
		s->kv++;
		s->flash_attn = true;
		rc = cfg_try(c, s, est, out);
	}
	/* (3) precision down the ladder. */
	while (rc == 0 && s->quant && cfg_next_quant(c, s->quant)) {
		const char *next = cfg_next_quant(c, s->quant);
		cfg_why(*est, why, sizeof(why));
		cfg_note(c->downgrades, "precision %s -> %s: %s", s->quant, next, why);
		s->quant = next;
		rc = cfg_try(c, s, est, out);
	}
	/* (4) partial offload: the GPU holds what it can, the host the rest. */
	if (rc == 0 && c->n_gpus > 0 && !c->vllm && c->n_layers > 0)
		rc = cfg_partial(c, s, est, out);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return cfg_nothing_fits(c, s, h, out);
	return 0;
}

/* ---- the answer ------------------------------------------------------------------------- */

struct cfg_cmd {
	char buf[2048];
	size_t len;
};

static void cmd_add(struct cfg_cmd *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void cmd_add(struct cfg_cmd *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (m->len >= sizeof(m->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(m->buf + m->len, sizeof(m->buf) - m->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		m->len += (size_t)n < sizeof(m->buf) - m->len ? (size_t)n :
								sizeof(m->buf) - m->len - 1;
}

/* Whether s is safe to put on a command line without quoting. */
static bool cfg_shell_safe(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("-_./:+=@,", *s)))
			return false;
	return true;
}

/* Appends word, single-quoted when it needs to be. */
static void cmd_word(struct cfg_cmd *m, const char *w)
{
	if (cfg_shell_safe(w) && w[0]) {
		cmd_add(m, " %s", w);
		return;
	}
	cmd_add(m, " '");
	for (; *w; w++) {
		if (*w == '\'')
			cmd_add(m, "'\\''");
		else
			cmd_add(m, "%c", *w);
	}
	cmd_add(m, "'");
}

static const char *cfg_model_id(const cJSON *est)
{
	const cJSON *id = jget(est, "model", "id");

	return cJSON_IsString(id) ? id->valuestring : "model";
}

/* llama-server's settings and command line. */
static void cfg_llama(const struct cfg *c, const struct cfg_state *s, const struct cfg_host *h,
		      const cJSON *est, cJSON *root)
{
	cJSON *set = cJSON_AddObjectToObject(root, "settings"), *split, *d;
	const cJSON *pd = jget(est, "memory", "per_device");
	/* Every layer and the output (llama.cpp counts the output as layer n_layers + 1). */
	int64_t ngl = s->n_gpu_layers < 0 && c->n_gpus > 0 ?
			      c->n_layers + 1 :
			      (int64_t)jnum(est, "settings", "n_gpu_layers", 0);
	int64_t n_ctx = (int64_t)jnum(est, "settings", "n_ctx", 0);
	int64_t n_par = (int64_t)jnum(est, "settings", "n_parallel", 1);
	int threads = h->threads > 0 ? h->threads : CFG_DEFAULT_THREADS;
	struct cfg_cmd m = {.len = 0};
	char path[256];

	if (!set)
		return;
	cJSON_AddNumberToObject(set, "n_gpu_layers", (double)ngl);
	cJSON_AddNumberToObject(set, "n_threads", threads);
	cJSON_AddNumberToObject(set, "n_batch", (double)s->n_batch);
	cJSON_AddNumberToObject(set, "n_ubatch", (double)s->n_ubatch);
	cJSON_AddNumberToObject(set, "n_ctx", (double)n_ctx);
	cJSON_AddNumberToObject(set, "n_parallel", (double)n_par);
	split = cJSON_AddArrayToObject(set, "tensor_split");
	if (split && cJSON_GetArraySize(pd) > 1)
		cJSON_ArrayForEach(d, pd)
			api_json_append(split, cJSON_CreateNumber(jnum(d, "layers", NULL, 0)));
	cJSON_AddBoolToObject(set, "flash_attn", s->flash_attn);
	cJSON_AddStringToObject(set, "cache_type_k", cfg_kv_types[s->kv]);
	cJSON_AddStringToObject(set, "cache_type_v", cfg_kv_types[s->kv]);
	if (h->threads <= 0)
		cfg_note(c->assumptions,
			 "n_threads: %d, as the number of physical cores is not "
			 "known",
			 CFG_DEFAULT_THREADS);

	if (c->gguf) {
		snprintf(path, sizeof(path), "%s", c->gguf_path);
	} else {
		const char *id = cfg_model_id(est), *slash = strrchr(id, '/');
		snprintf(path, sizeof(path), "%s-%s.gguf", slash ? slash + 1 : id, s->quant);
		cfg_note(c->assumptions,
			 "command: %s stands for the GGUF file of %s quantized as %s; put its path "
			 "after -m",
			 path, id, s->quant);
	}
	cmd_add(&m, "llama-server -m");
	cmd_word(&m, path);
	cmd_add(&m, " -ngl %lld -c %lld -t %d -b %lld -ub %lld", (long long)ngl, (long long)n_ctx,
		threads, (long long)s->n_batch, (long long)s->n_ubatch);
	if (s->flash_attn)
		cmd_add(&m, " -fa on");
	if (s->kv != 0)
		cmd_add(&m, " -ctk %s -ctv %s", cfg_kv_types[s->kv], cfg_kv_types[s->kv]);
	if (split && cJSON_GetArraySize(split) > 1) {
		bool first = true;
		cmd_add(&m, " --tensor-split ");
		cJSON_ArrayForEach(d, split)
		{
			cmd_add(&m, "%s%.0f", first ? "" : ",", d->valuedouble);
			first = false;
		}
	}
	if (n_par > 1)
		cmd_add(&m, " -np %lld", (long long)n_par);
	cJSON_AddStringToObject(root, "command", m.buf);
}

/* vLLM's settings and command line. */
static void cfg_vllm(const struct cfg *c, const struct cfg_state *s, const struct cfg_host *h,
		     const cJSON *est, cJSON *root)
{
	cJSON *set = cJSON_AddObjectToObject(root, "settings");
	int64_t n_ctx = (int64_t)jnum(est, "settings", "n_ctx", 0);
	int tp = 1;
	double util = 0.90;
	const char *quant = NULL;
	struct cfg_cmd m = {.len = 0};

	while (tp * 2 <= c->n_gpus)
		tp *= 2;
	if (h->free_frac < 0.95) {
		util = floor((h->free_frac - 0.05) * 100.0) / 100.0;
		if (util < 0.10)
			util = 0.10;
		cfg_note(c->assumptions,
			 "gpu_memory_utilization: %.2f, as other processes already use part of the "
			 "GPU memory",
			 util);
	}
	if (strcmp(s->quant, "Q8_0") == 0)
		quant = "fp8";
	else if (strcmp(s->quant, "F16") != 0 && strcmp(s->quant, "BF16") != 0)
		quant = "awq";
	if (!set)
		return;
	cJSON_AddNumberToObject(set, "tensor_parallel_size", tp);
	cJSON_AddNumberToObject(set, "max_model_len", (double)n_ctx);
	cJSON_AddNumberToObject(set, "gpu_memory_utilization", util);
	if (quant)
		cJSON_AddStringToObject(set, "quantization", quant);
	else
		cJSON_AddNullToObject(set, "quantization");
	cJSON_AddStringToObject(set, "kv_cache_dtype", s->kv ? "fp8" : "auto");
	if (c->rq.has_n_parallel)
		cJSON_AddNumberToObject(set, "max_num_seqs", (double)c->rq.n_parallel);
	cfg_note(c->assumptions,
		 "vLLM memory: estimated with llama.cpp's model and GGUF stand-ins (F16 for "
		 "fp16/bf16 weights, Q8_0 for fp8, Q4_K_M for awq; q8_0 KV for an fp8 cache)");
	if (c->rq.has_precision)
		cfg_note(c->assumptions,
			 "precision: vLLM does not load GGUF k-quants well; %s maps to %s",
			 c->rq.precision, quant ? quant : "fp16/bf16 weights");
	if (quant && strcmp(quant, "awq") == 0)
		cfg_note(c->assumptions, "quantization: awq needs an AWQ checkpoint of %s",
			 cfg_model_id(est));
	if (tp < c->n_gpus)
		cfg_note(c->assumptions,
			 "tensor_parallel_size: %d of %d GPUs (a power of two); the memory check "
			 "spread the model over all of them",
			 tp, c->n_gpus);

	cmd_add(&m, "vllm serve");
	cmd_word(&m, cfg_model_id(est));
	cmd_add(&m, " --tensor-parallel-size %d --max-model-len %lld --gpu-memory-utilization %.2f",
		tp, (long long)n_ctx, util);
	if (quant)
		cmd_add(&m, " --quantization %s", quant);
	if (s->kv)
		cmd_add(&m, " --kv-cache-dtype fp8");
	if (c->rq.has_n_parallel)
		cmd_add(&m, " --max-num-seqs %lld", (long long)c->rq.n_parallel);
	cJSON_AddStringToObject(root, "command", m.buf);
}

static const char *cfg_precision_name(const struct cfg *c, const struct cfg_state *s,
				      const cJSON *est)
{
	const cJSON *q = jget(est, "settings", "quant");

	if (c->vllm)
		return strcmp(s->quant, "Q8_0") == 0 ? "fp8" :
		       strcmp(s->quant, "F16") == 0  ? "fp16" :
		       strcmp(s->quant, "BF16") == 0 ? "bf16" :
						       "awq";
	return cJSON_IsString(q) ? q->valuestring : "unknown";
}

static cJSON *cfg_answer(struct cfg *c, const struct cfg_state *s, const struct cfg_host *h,
			 cJSON *est)
{
	cJSON *root = cJSON_CreateObject(), *meta;
	const cJSON *pid = jget(est, "hardware", "profile_id"), *speed, *d;
	double vram = 0;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "runtime", c->vllm ? "vllm" : "llama.cpp");
	cJSON_AddStringToObject(root, "backend", c->backend);
	api_json_add(root, "model", cJSON_Duplicate(jget(est, "model", NULL), true));
	if (c->vllm)
		cfg_vllm(c, s, h, est, root);
	else
		cfg_llama(c, s, h, est, root);
	meta = cJSON_AddObjectToObject(root, "metadata");
	if (meta) {
		if (cJSON_IsString(pid))
			cJSON_AddStringToObject(meta, "hardware_profile", pid->valuestring);
		else
			cJSON_AddNullToObject(meta, "hardware_profile");
		cJSON_AddStringToObject(meta, "use_case", cfg_use_cases[c->rq.use_case]);
		cJSON_AddStringToObject(meta, "precision", cfg_precision_name(c, s, est));
		speed = jget(est, "speed", "decode_tokens_per_s");
		if (cJSON_IsNumber(speed))
			cJSON_AddNumberToObject(meta, "expected_tokens_per_sec",
						round(speed->valuedouble * 10.0) / 10.0);
		else
			cJSON_AddNullToObject(meta, "expected_tokens_per_sec");
		cJSON_ArrayForEach(d, jget(est, "memory", "per_device"))
			vram += jnum(d, "bytes", NULL, 0);
		cJSON_AddNumberToObject(meta, "estimated_vram_usage_gb", round(vram / 1e7) / 100.0);
		api_json_add(meta, "estimate", cJSON_Duplicate(est, true));
	}
	/* cJSON_AddItemReferenceToObject leaks its reference when the add fails. */
	api_json_add(root, "downgrades",
		     cJSON_CreateArrayReference(c->downgrades ? c->downgrades->child : NULL));
	api_json_add(root, "assumptions",
		     cJSON_CreateArrayReference(c->assumptions ? c->assumptions->child : NULL));
	return root;
}

/* ---- the route -------------------------------------------------------------------------- */

/* Checks what the estimator cannot: precision, the model's form for the runtime. */
static int cfg_check(struct cfg *c, struct api_reply *out)
{
	const cJSON *model = jget(c->body, "model", NULL);
	const cJSON *g = cJSON_IsObject(model) ? cJSON_GetObjectItemCaseSensitive(model, "gguf") :
						 NULL;

	c->gguf = g != NULL;
	c->gguf_path = cJSON_IsString(g) ? g->valuestring : "model.gguf";
	c->vllm = c->rq.has_runtime && c->rq.runtime == CFG_VLLM;
	if (!c->rq.has_use_case)
		c->rq.use_case = CFG_GENERAL;
	if (c->rq.has_precision) {
		int ft = rf_ftype_from_name(c->rq.precision);
		if (ft < 0)
			return api_error(out, RF_E_INVALID_VALUE, "precision",
					 "precision '%.20s' is not a GGUF quantization type (F16, "
					 "Q8_0, Q6_K, Q5_K_M, Q4_K_M, IQ4_XS...)",
					 c->rq.precision);
		if (c->gguf)
			return api_error(out, RF_E_INVALID_VALUE, "precision",
					 "a GGUF file has its own quantization; leave precision "
					 "out");
	}
	if (c->vllm && c->gguf)
		return api_error(out, RF_E_INVALID_VALUE, "runtime",
				 "vLLM serves Hugging Face checkpoints; name the model by its id "
				 "or architecture, not a GGUF file");
	return 0;
}

/* The first question: checks model and hardware and learns the backend and the model. */
static int cfg_probe(struct cfg *c, struct api_reply *out)
{
	struct cfg_state s = {.quant = NULL,
			      .n_ctx = CFG_MIN_CTX,
			      .n_batch = 2048,
			      .n_ubatch = 512,
			      .n_gpu_layers = -1};
	const cJSON *b;
	cJSON *est = NULL;
	int rc;

	if (!c->gguf)
		s.quant = c->rq.has_precision ? c->rq.precision : "Q4_K_M";
	rc = cfg_ask(c, &s, &est, out);
	if (rc < 0)
		return rc;
	b = jget(est, "hardware", "backend");
	snprintf(c->backend, sizeof(c->backend), "%s", cJSON_IsString(b) ? b->valuestring : "cpu");
	/* The devices the estimator offloads to (not every GPU the machine has). */
	c->n_gpus = cJSON_GetArraySize(jget(est, "memory", "per_device"));
	c->max_pos = (int64_t)jnum(est, "model", "max_position_embeddings", 0);
	c->n_layers = (int64_t)jnum(est, "model", "n_layers", 0);
	cJSON_Delete(est);
	if (c->vllm && strcmp(c->backend, "cuda") != 0 && strcmp(c->backend, "rocm") != 0)
		return api_error(out, RF_E_INVALID_VALUE, "runtime",
				 "vLLM needs NVIDIA (CUDA) or AMD (ROCm) GPUs; this machine's "
				 "backend is %s",
				 c->backend);
	return 0;
}

int api_config(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	struct cfg c = {.env = env};
	struct cfg_state s;
	struct cfg_host h;
	cJSON *body = NULL, *est = NULL, *root = NULL;
	char *json;
	int rc = jm_parse_body(req, false, &body, out);

	if (rc < 0)
		return rc;
	c.body = body;
	c.downgrades = cJSON_CreateArray();
	c.assumptions = cJSON_CreateArray();
	if (!c.downgrades || !c.assumptions) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	rc = jm_map(body, cfg_fields, sizeof(cfg_fields) / sizeof(cfg_fields[0]), &c.rq, out);
	if (rc < 0)
		goto done;
	if ((rc = cfg_check(&c, out)) < 0 || (rc = cfg_probe(&c, out)) < 0 ||
	    (rc = cfg_host(&c, &h, out)) < 0)
		goto done;
	cfg_initial(&c, &s);
	rc = cfg_fit(&c, &s, &h, &est, out);
	if (rc < 0)
		goto done;
	root = cfg_answer(&c, &s, &h, est);
	json = root ? cJSON_PrintUnformatted(root) : NULL;
	if (!json) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	api_reply_json(out, 200, json);
	rc = 0;
done:
	cJSON_Delete(root);
	cJSON_Delete(est);
	cJSON_Delete(c.downgrades);
	cJSON_Delete(c.assumptions);
	cJSON_Delete(body);
	return rc;
}
