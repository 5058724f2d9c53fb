/*
 * POST /api/validate (and `rigfit validate --config FILE`): is this llama.cpp (or vLLM)
 * configuration right for this machine? The input is a runtime config as POST /api/config writes it
 * ({"backend", "model", "settings": {...}, "metadata"}) or the same settings flat beside
 * "model"; its types are checked strictly and every field is named by its path
 * ("settings.n_ctx"). The settings become one POST /api/estimate request, and the answer is read
 * for the memory checks; the other checks read the settings and the machine. Every error comes
 * with a suggestion whose numbers were asked of the estimator (the largest n_ctx that fits, the
 * GPU layers that fit), so applying it makes the config valid.
 *
 * With runtime "vllm" the settings are vllm serve's, as /api/config writes them; the
 * parallel layout is checked against the machine and the model's heads, then one runtime vllm
 * estimate (serve_vllm's start-up model) gives what stops vLLM from starting: free memory
 * below the requested share, nothing left for the KV cache, a max_model_len the cache cannot
 * hold, CUDA graphs beyond the share. The headroom warning follows the planner's own rule for
 * gpu_memory_utilization, so no config /api/config writes is flagged.
 *
 * Codes (stable; openapi.yaml lists them): vram_exceeded, vram_over_90, ram_exceeded,
 * threads_over_physical, ubatch_over_batch, batch_over_ctx, ctx_over_model,
 * gpu_layers_over_model, kv_quant_needs_flash_attn, backend_unavailable, thermal_risk,
 * unknown_model, tensor_split_overloads_gpu; vLLM's vram_not_free, kv_capacity_exceeded,
 * cuda_graphs_exceeded, parallel_over_gpus, tp_not_dividing_heads.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/device_json.h"
#include "api/estimate.h"
#include "api/hardware_input.h"
#include "api/jsonmap.h"
#include "api/model_json.h"
#include "api/plan_quality_json.h"
#include "api/validate.h"
#include "api/json_alloc.h"
#include "core/hw/classify.h"
#include "core/hw/device.h"
#include "core/err.h"
#include "core/hw/hw.h"
#include "core/fit/model.h"
#include "core/plan/plan_infer.h"
#include "core/fit/quant.h"
#include "core/fit/serve_vllm.h"

#define VAL_MAX_CHECKS 24
#define VAL_TEXT_LEN 320
#define VAL_KV_PAD 256
#define VAL_GIB (1024.0 * 1024.0 * 1024.0)
#define VAL_NGL_ALL 99 /* -ngl 99 and above: "every layer", as llama.cpp's docs write it */
#define VAL_THERMAL_BATCH 512
#define VAL_DEFAULT_BATCH 2048

/* llama.cpp's cache types; each maps to the estimator's nearest type that is not smaller. */
static const char *const val_cache_types[] = {"f16",  "bf16", "f32",  "q8_0",   "q4_0",
					      "q4_1", "q5_0", "q5_1", "iq4_nl", NULL};
static const char *const val_cache_est[] = {"f16",  "f16",  NULL,   "q8_0", "q4_0",
					    "q8_0", "q8_0", "q8_0", "q4_0"};
static const char *const val_backends[] = {"cuda", "rocm", "metal", "vulkan", "sycl", "cpu", NULL};
static const char *const val_rope[] = {"none", "linear", "yarn", NULL};
static const char *const val_vllm_kv[] = {"auto", "fp8", NULL};

struct val_cfg {
	bool nested;
	const char *prefix; /* "settings." or "" */
	int backend;        /* index in val_backends; -1: not given */
	const cJSON *model;
	const char *model_id; /* when the model is named by id */
	char quant[32];
	int64_t n_gpu_layers, n_threads, n_batch, n_ubatch, n_ctx, n_parallel, n_cpu_moe;
	bool has_ngl, has_threads, has_batch, has_ubatch, has_ctx, has_parallel, has_cpu_moe;
	bool flash_attn, has_fa;
	bool use_mmap, has_mmap, mlock, has_mlock, swa_full, has_swa_full;
	int cache_k, cache_v; /* index in val_cache_types; -1: not given */
	int rope;             /* index in val_rope; -1: not given */
	double rope_scale;    /* <= 0: not given */
	const cJSON *hardware;
	const char *hardware_profile;
	const cJSON *tensor_split; /* as given, checked; NULL: none */
	/* runtime vllm: vllm serve's engine arguments as /api/config writes them; the weight
	 * format (quantization, metadata.precision or a flat precision) is in quant. */
	bool vllm;
	int64_t tp, pp, max_model_len, max_num_seqs, max_batched;
	bool has_tp, has_pp, has_mml, has_mns, has_mbt, has_util, has_eager, enforce_eager;
	double util;
	int vkv; /* index in val_vllm_kv; -1: not given */
};

struct val_check {
	const char *code;
	bool error;
	char field[64];
	char message[VAL_TEXT_LEN];
	char suggestion[VAL_TEXT_LEN];
};

struct val {
	const struct api_env *env;
	struct val_cfg c;
	struct hw_snapshot *hw;
	bool mobile; /* a laptop, Jetson or other unified/mobile part */
	int n;
	struct val_check checks[VAL_MAX_CHECKS];
};

/* Overrides of the config's settings for one estimator question. */
struct val_over {
	int64_t n_ctx; /* 0: the config's; -1: "max" */
	bool set_ngl;
	int64_t ngl;
	const char *kv; /* NULL: the config's */
	bool fa_on;
	const char *quant; /* NULL: the config's */
	bool no_split;     /* layers by free memory instead of the config's tensor_split */
};

static struct val_check *add(struct val *v, const char *code, bool error, const char *field)
	__attribute__((nonnull(1, 2)));

static struct val_check *add(struct val *v, const char *code, bool error, const char *field)
{
	struct val_check *k;

	if (v->n >= VAL_MAX_CHECKS)
		return NULL;
	k = &v->checks[v->n++];
	memset(k, 0, sizeof(*k));
	k->code = code;
	k->error = error;
	if (field)
		snprintf(k->field, sizeof(k->field), "%s", field);
	return k;
}

static void text(char *dst, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text(char *dst, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, VAL_TEXT_LEN, fmt, ap);
	va_end(ap);
}

/* ---- the input ----------------------------------------------------------------------------- */

static int bad(struct api_reply *out, int err, const char *prefix, const char *name,
	       const char *what)
{
	char field[96];

	snprintf(field, sizeof(field), "%s%s", prefix, name);
	return api_error(out, err, field, "%s %s", field, what);
}

static int get_int(const cJSON *it, const char *prefix, int64_t min, int64_t max, int64_t *val,
		   bool *has, struct api_reply *out)
{
	double d = it->valuedouble;

	if (!cJSON_IsNumber(it) || !isfinite(d) || d != floor(d))
		return bad(out, RF_E_INVALID_VALUE, prefix, it->string, "must be an integer");
	if (d < (double)min || d > (double)max) {
		char what[96];
		snprintf(what, sizeof(what), "must be in [%lld, %lld]", (long long)min,
			 (long long)max);
		return bad(out, RF_E_INVALID_VALUE, prefix, it->string, what);
	}
	*val = (int64_t)d;
	*has = true;
	return 0;
}

static int get_enum(const cJSON *it, const char *prefix, const char *const *choices, int *val,
		    struct api_reply *out)
{
	if (cJSON_IsString(it))
		for (int i = 0; choices[i]; i++)
			if (strcmp(it->valuestring, choices[i]) == 0) {
				*val = i;
				return 0;
			}
	{
		char what[160];
		size_t n = (size_t)snprintf(what, sizeof(what), "must be one of");
		for (int i = 0; choices[i] && n < sizeof(what); i++)
			n += (size_t)snprintf(what + n, sizeof(what) - n, " %s", choices[i]);
		return bad(out, RF_E_INVALID_VALUE, prefix, it->string, what);
	}
}

static int get_bool(const cJSON *it, const char *prefix, bool *val, bool *has,
		    struct api_reply *out)
{
	if (!cJSON_IsBool(it))
		return bad(out, RF_E_INVALID_VALUE, prefix, it->string, "must be true or false");
	*val = cJSON_IsTrue(it);
	*has = true;
	return 0;
}

/* One llama.cpp setting; returns 1 when name is not a setting, 0 when taken, or an error. */
static int val_setting(struct val_cfg *c, const cJSON *it, struct api_reply *out)
{
	const char *p = c->prefix, *k = it->string;

	if (strcmp(k, "n_gpu_layers") == 0)
		return get_int(it, p, -1, 1000000, &c->n_gpu_layers, &c->has_ngl, out);
	if (strcmp(k, "n_cpu_moe") == 0)
		return get_int(it, p, 0, 1000000, &c->n_cpu_moe, &c->has_cpu_moe, out);
	if (strcmp(k, "n_threads") == 0)
		return get_int(it, p, 1, 4096, &c->n_threads, &c->has_threads, out);
	if (strcmp(k, "n_batch") == 0)
		return get_int(it, p, 1, 1 << 20, &c->n_batch, &c->has_batch, out);
	if (strcmp(k, "n_ubatch") == 0)
		return get_int(it, p, 1, 1 << 20, &c->n_ubatch, &c->has_ubatch, out);
	if (strcmp(k, "n_ctx") == 0)
		return get_int(it, p, 1, 1 << 24, &c->n_ctx, &c->has_ctx, out);
	if (strcmp(k, "n_parallel") == 0)
		return get_int(it, p, 1, 4096, &c->n_parallel, &c->has_parallel, out);
	if (strcmp(k, "flash_attn") == 0)
		return get_bool(it, p, &c->flash_attn, &c->has_fa, out);
	if (strcmp(k, "use_mmap") == 0)
		return get_bool(it, p, &c->use_mmap, &c->has_mmap, out);
	if (strcmp(k, "mlock") == 0)
		return get_bool(it, p, &c->mlock, &c->has_mlock, out);
	if (strcmp(k, "swa_full") == 0)
		return get_bool(it, p, &c->swa_full, &c->has_swa_full, out);
	if (strcmp(k, "cache_type_k") == 0)
		return get_enum(it, p, val_cache_types, &c->cache_k, out);
	if (strcmp(k, "cache_type_v") == 0)
		return get_enum(it, p, val_cache_types, &c->cache_v, out);
	if (strcmp(k, "rope_scaling") == 0)
		return get_enum(it, p, val_rope, &c->rope, out);
	if (strcmp(k, "rope_scale") == 0) {
		if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 1 ||
		    it->valuedouble > 1024)
			return bad(out, RF_E_INVALID_VALUE, p, k, "must be a number in [1, 1024]");
		c->rope_scale = it->valuedouble;
		return 0;
	}
	if (strcmp(k, "tensor_split") == 0) {
		const cJSON *x;
		if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) > HW_MAX_GPUS)
			return bad(out, RF_E_INVALID_VALUE, p, k,
				   "must be an array of at most 16 proportions");
		cJSON_ArrayForEach(x, it)
		{
			if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0)
				return bad(out, RF_E_INVALID_VALUE, p, k,
					   "must hold non-negative numbers");
		}
		/* Empty (one GPU) or all zero: llama.cpp splits by free memory. */
		c->tensor_split = NULL;
		cJSON_ArrayForEach(x, it)
		{
			if (x->valuedouble > 0)
				c->tensor_split = it;
		}
		return 0;
	}
	return 1;
}

static int val_quant(struct val_cfg *c, const cJSON *it, const char *field, struct api_reply *out)
{
	if (!cJSON_IsString(it) || !*it->valuestring || strlen(it->valuestring) >= sizeof(c->quant))
		return api_error(out, RF_E_INVALID_VALUE, field, "%s must be a quant name (Q4_K_M)",
				 field);
	if (c->vllm && vllm_precision_parse(it->valuestring) < 0)
		return api_error(
			out, RF_E_INVALID_VALUE, field,
			"%s must be a format vLLM loads (bf16, fp16, fp32, fp8, int8, awq, "
			"gptq, bitsandbytes, mxfp4)",
			field);
	snprintf(c->quant, sizeof(c->quant), "%s", it->valuestring);
	return 0;
}

/* One vllm serve setting, as val_setting. */
static int val_vllm_setting(struct val_cfg *c, const cJSON *it, struct api_reply *out)
{
	const char *p = c->prefix, *k = it->string;
	int64_t ignored;
	bool seen;

	if (strcmp(k, "tensor_parallel_size") == 0)
		return get_int(it, p, 1, VLLM_MAX_GPUS, &c->tp, &c->has_tp, out);
	if (strcmp(k, "pipeline_parallel_size") == 0)
		return get_int(it, p, 1, VLLM_MAX_GPUS, &c->pp, &c->has_pp, out);
	if (strcmp(k, "max_model_len") == 0)
		return get_int(it, p, 1, 1 << 24, &c->max_model_len, &c->has_mml, out);
	if (strcmp(k, "max_num_batched_tokens") == 0)
		return get_int(it, p, 1, 1 << 24, &c->max_batched, &c->has_mbt, out);
	if (strcmp(k, "max_num_seqs") == 0) /* null: vLLM's default */
		return cJSON_IsNull(it) ?
			       0 :
			       get_int(it, p, 1, 1 << 20, &c->max_num_seqs, &c->has_mns, out);
	if (strcmp(k, "kv_cache_tokens") == 0) /* /api/config's capacity: informative */
		return cJSON_IsNull(it) ? 0 :
					  get_int(it, p, 0, INT64_C(1) << 40, &ignored, &seen, out);
	if (strcmp(k, "gpu_memory_utilization") == 0) {
		if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble <= 0 ||
		    it->valuedouble > 1)
			return bad(out, RF_E_INVALID_VALUE, p, k, "must be a number in (0, 1]");
		c->util = it->valuedouble;
		c->has_util = true;
		return 0;
	}
	if (strcmp(k, "quantization") == 0) { /* null: the checkpoint's own weights */
		char f[64];
		snprintf(f, sizeof(f), "%s%s", p, k);
		return cJSON_IsNull(it) ? 0 : val_quant(c, it, f, out);
	}
	if (strcmp(k, "kv_cache_dtype") == 0)
		return get_enum(it, p, val_vllm_kv, &c->vkv, out);
	if (strcmp(k, "enforce_eager") == 0)
		return get_bool(it, p, &c->enforce_eager, &c->has_eager, out);
	return 1;
}

static int val_parse(struct val_cfg *c, const cJSON *body, struct api_reply *out)
{
	const cJSON *settings = cJSON_GetObjectItemCaseSensitive(body, "settings");
	const cJSON *it, *meta = NULL;
	int rc;

	memset(c, 0, sizeof(*c));
	c->backend = c->cache_k = c->cache_v = c->rope = c->vkv = -1;
	it = cJSON_GetObjectItemCaseSensitive(body, "runtime");
	c->vllm = cJSON_IsString(it) && strcmp(it->valuestring, "vllm") == 0;
	c->nested = settings != NULL;
	c->prefix = c->nested ? "settings." : "";
	if (c->nested && !cJSON_IsObject(settings))
		return api_error(out, RF_E_INVALID_VALUE, "settings", "settings must be an object");
	cJSON_ArrayForEach(it, body)
	{
		const char *k = it->string;
		if (strcmp(k, "model") == 0) {
			c->model = it;
		} else if (strcmp(k, "backend") == 0) {
			if ((rc = get_enum(it, "", val_backends, &c->backend, out)) < 0)
				return rc;
		} else if (strcmp(k, "settings") == 0) {
			continue;
		} else if (strcmp(k, "metadata") == 0) {
			if (!cJSON_IsObject(it))
				return api_error(out, RF_E_INVALID_VALUE, "metadata",
						 "metadata must be an object");
			meta = it;
		} else if (strcmp(k, "downgrades") == 0) {
			if (!cJSON_IsArray(it))
				return api_error(out, RF_E_INVALID_VALUE, "downgrades",
						 "downgrades must be an array");
		} else if (strcmp(k, "command") == 0) {
			if (!cJSON_IsString(it))
				return api_error(out, RF_E_INVALID_VALUE, "command",
						 "command must be a string");
		} else if (strcmp(k, "assumptions") == 0 || strcmp(k, "alternatives") == 0) {
			/* /api/config's own notes and other setups: accepted so its answer
			 * validates as is. */
			if (!cJSON_IsArray(it))
				return api_error(out, RF_E_INVALID_VALUE, k, "%s must be an array",
						 k);
		} else if (strcmp(k, "objective") == 0 || strcmp(k, "why") == 0) {
			if (!cJSON_IsString(it))
				return api_error(out, RF_E_INVALID_VALUE, k, "%s must be a string",
						 k);
		} else if (strcmp(k, "runtime_choice") == 0) {
			if (!cJSON_IsString(it) && !cJSON_IsNull(it))
				return api_error(out, RF_E_INVALID_VALUE, k,
						 "runtime_choice must be a string or null");
		} else if (strcmp(k, "runtime") == 0) {
			if (!cJSON_IsString(it) ||
			    (strcmp(it->valuestring, "llama.cpp") != 0 && !c->vllm))
				return api_error(out, RF_E_INVALID_VALUE, "runtime",
						 "runtime must be \"llama.cpp\" or \"vllm\"");
		} else if (strcmp(k, "hardware") == 0) {
			c->hardware = it;
		} else if (strcmp(k, "hardware_profile") == 0) {
			if (!cJSON_IsString(it) || !*it->valuestring)
				return api_error(out, RF_E_INVALID_VALUE, "hardware_profile",
						 "hardware_profile must be a device name or id");
			c->hardware_profile = it->valuestring;
		} else if (strcmp(k, c->vllm ? "precision" : "quant") == 0 && !c->nested) {
			if ((rc = val_quant(c, it, k, out)) < 0)
				return rc;
		} else if (c->nested || (rc = c->vllm ? val_vllm_setting(c, it, out) :
							val_setting(c, it, out)) == 1) {
			return api_error(out, RF_E_UNKNOWN_FIELD, k, "unknown field '%.60s'", k);
		} else if (rc < 0) {
			return rc;
		}
	}
	if (c->nested) {
		cJSON_ArrayForEach(it, settings)
		{
			rc = c->vllm ? val_vllm_setting(c, it, out) : val_setting(c, it, out);
			if (rc == 1)
				return bad(out, RF_E_UNKNOWN_FIELD, "settings.", it->string,
					   "is not a known setting");
			if (rc < 0)
				return rc;
		}
	}
	if (!c->model)
		return api_error(out, RF_E_MISSING_FIELD, "model", "model is required");
	if (cJSON_IsObject(c->model)) {
		/* What names the model, plus the facts /api/config writes beside it. */
		static const char *const known[] = {"id",
						    "architecture",
						    "gguf",
						    "params_b",
						    "quant",
						    "source",
						    "model_type",
						    "params_total",
						    "params_active",
						    "max_position_embeddings",
						    "n_layers"};
		const cJSON *mk;
		cJSON_ArrayForEach(mk, c->model)
		{
			bool ok = false;
			for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
				ok = ok || strcmp(mk->string, known[i]) == 0;
			if (!ok)
				return bad(out, RF_E_UNKNOWN_FIELD, "model.", mk->string,
					   "is not a model field");
		}
	}
	if (cJSON_IsString(c->model)) {
		c->model_id = c->model->valuestring;
	} else if (cJSON_IsObject(c->model)) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(c->model, "id");
		const cJSON *q = cJSON_GetObjectItemCaseSensitive(c->model, "quant");
		if (cJSON_IsString(id) && *id->valuestring)
			c->model_id = id->valuestring;
		if (q && (rc = val_quant(c, q, "model.quant", out)) < 0)
			return rc;
	}
	if (!c->quant[0] && meta) {
		const cJSON *prec = cJSON_GetObjectItemCaseSensitive(meta, "precision");
		if (prec && (rc = val_quant(c, prec, "metadata.precision", out)) < 0)
			return rc;
	}
	return 0;
}

/* ---- the estimator ------------------------------------------------------------------------ */

static const char *val_kv(const struct val_cfg *c)
{
	int k = c->cache_k >= 0 ? c->cache_k : 0, v = c->cache_v >= 0 ? c->cache_v : 0;
	const char *ek = val_cache_est[k], *ev = val_cache_est[v];

	if (!ek || !ev)
		return NULL; /* f32: not modelled; the estimator's f16 is the nearest */
	/* One type for both: the larger of the two. */
	if (strcmp(ek, "f16") == 0 || strcmp(ev, "f16") == 0)
		return "f16";
	if (strcmp(ek, "q8_0") == 0 || strcmp(ev, "q8_0") == 0)
		return "q8_0";
	return "q4_0";
}

static int64_t val_batch(const struct val_cfg *c)
{
	return c->has_batch ? c->n_batch : VAL_DEFAULT_BATCH;
}

static void val_machine_request(const struct val_cfg *c, cJSON *r)
{
	if (c->hardware)
		api_json_add(r, "hardware", cJSON_Duplicate(c->hardware, true));
	if (c->hardware_profile)
		cJSON_AddStringToObject(r, "hardware_profile", c->hardware_profile);
}

/* The rest of a runtime vllm request: the engine arguments as given (vLLM's defaults else). */
static void val_vllm_request(const struct val_cfg *c, cJSON *r)
{
	cJSON_AddStringToObject(r, "runtime", "vllm");
	if (c->quant[0])
		cJSON_AddStringToObject(r, "precision", c->quant);
	if (c->has_tp)
		cJSON_AddNumberToObject(r, "tensor_parallel_size", (double)c->tp);
	if (c->has_pp)
		cJSON_AddNumberToObject(r, "pipeline_parallel_size", (double)c->pp);
	if (c->has_util)
		cJSON_AddNumberToObject(r, "gpu_memory_utilization", c->util);
	if (c->has_mml)
		cJSON_AddNumberToObject(r, "max_model_len", (double)c->max_model_len);
	if (c->has_mns)
		cJSON_AddNumberToObject(r, "max_num_seqs", (double)c->max_num_seqs);
	if (c->has_mbt)
		cJSON_AddNumberToObject(r, "max_num_batched_tokens", (double)c->max_batched);
	if (c->vkv >= 0)
		cJSON_AddStringToObject(r, "kv_cache_dtype", val_vllm_kv[c->vkv]);
	if (c->has_eager)
		cJSON_AddBoolToObject(r, "enforce_eager", c->enforce_eager);
	val_machine_request(c, r);
}

/* The /api/estimate request of the config with o's overrides. NULL when out of memory. */
static cJSON *val_request(const struct val_cfg *c, const struct val_over *o)
{
	cJSON *r = cJSON_CreateObject(), *m;
	const char *kv = o && o->kv ? o->kv : val_kv(c);
	const char *quant = o && o->quant ? o->quant : (c->quant[0] ? c->quant : NULL);

	if (!r)
		return NULL;
	if (cJSON_IsObject(c->model)) {
		/* Only what names the model: /api/config also writes its facts (source,
		 * params_total...) beside the id. */
		static const char *const keep[] = {"id", "architecture", "gguf", "params_b"};
		m = cJSON_CreateObject();
		for (size_t i = 0; m && i < sizeof(keep) / sizeof(keep[0]); i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->model, keep[i]);
			if (v)
				api_json_add(m, keep[i], cJSON_Duplicate(v, true));
		}
	} else {
		m = cJSON_Duplicate(c->model, true);
	}
	api_json_add(r, "model", m);
	if (c->vllm) {
		val_vllm_request(c, r);
		return r;
	}
	if (quant)
		cJSON_AddStringToObject(r, "quant", quant);
	if (o && o->n_ctx < 0)
		cJSON_AddStringToObject(r, "n_ctx", "max");
	else if (o && o->n_ctx > 0)
		cJSON_AddNumberToObject(r, "n_ctx", (double)o->n_ctx);
	else if (c->has_ctx)
		cJSON_AddNumberToObject(r, "n_ctx", (double)c->n_ctx);
	if (c->has_batch)
		cJSON_AddNumberToObject(r, "n_batch", (double)c->n_batch);
	if (c->has_ubatch) /* an n_ubatch over n_batch is a check, not an estimator error */
		cJSON_AddNumberToObject(r, "n_ubatch",
					(double)(c->n_ubatch < val_batch(c) ? c->n_ubatch :
									      val_batch(c)));
	if (c->has_parallel)
		cJSON_AddNumberToObject(r, "n_parallel", (double)c->n_parallel);
	if (kv)
		cJSON_AddStringToObject(r, "kv_cache_type", kv);
	/* A quantized cache without flash attention does not start (kv_quant_needs_flash_attn
	 * says so): the estimate behind the checks is of the setup that does. */
	if ((o && o->fa_on) || (kv && strcmp(kv, "f16") != 0 && c->has_fa && !c->flash_attn))
		cJSON_AddBoolToObject(r, "flash_attn", true);
	else if (c->has_fa)
		cJSON_AddBoolToObject(r, "flash_attn", c->flash_attn);
	if (c->has_mmap)
		cJSON_AddBoolToObject(r, "use_mmap", c->use_mmap);
	if (c->has_mlock)
		cJSON_AddBoolToObject(r, "mlock", c->mlock);
	if (c->has_swa_full)
		cJSON_AddBoolToObject(r, "swa_full", c->swa_full);
	if (o && o->set_ngl)
		cJSON_AddNumberToObject(r, "n_gpu_layers", (double)o->ngl);
	else if (c->backend >= 0 && strcmp(val_backends[c->backend], "cpu") == 0)
		cJSON_AddNumberToObject(r, "n_gpu_layers", 0);
	else if (c->has_ngl)
		cJSON_AddNumberToObject(
			r, "n_gpu_layers",
			c->n_gpu_layers > MODEL_MAX_LAYERS ? -1 : (double)c->n_gpu_layers);
	if (c->has_cpu_moe) /* more than every layer is every layer, as llama.cpp takes it */
		cJSON_AddNumberToObject(r, "n_cpu_moe",
					(double)(c->n_cpu_moe > MODEL_MAX_LAYERS ?
							 MODEL_MAX_LAYERS :
							 c->n_cpu_moe));
	if (c->tensor_split && !(o && o->no_split))
		api_json_add(r, "tensor_split", cJSON_Duplicate(c->tensor_split, true));
	val_machine_request(c, r);
	return r;
}

/* Asks the estimator; returns its answer or NULL (an error, or out of memory). */
static cJSON *val_ask(const struct val *v, const struct val_over *o)
{
	cJSON *req = val_request(&v->c, o), *res = NULL;
	struct api_reply r = {0};

	if (req && api_estimate_object(v->env, req, &res, &r) < 0)
		res = NULL;
	api_reply_reset(&r);
	cJSON_Delete(req);
	return res;
}

static double num_at(const cJSON *o, const char *a, const char *b)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b)
		x = cJSON_GetObjectItemCaseSensitive(x, b);
	return cJSON_IsNumber(x) ? x->valuedouble : -1;
}

/* The highest bytes / budget_bytes over the GPUs; -1 when no budget is known. */
static double dev_util(const cJSON *est, const cJSON **worst)
{
	const cJSON *pd = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(est, "memory"), "per_device");
	const cJSON *d;
	double u = -1;

	cJSON_ArrayForEach(d, pd)
	{
		double b = num_at(d, "bytes", NULL), cap = num_at(d, "budget_bytes", NULL);
		double x = cap > 0 ? b / cap : (cap == 0 && b > 0 ? 2.0 : -1);
		if (x > u) {
			u = x;
			if (worst)
				*worst = d;
		}
	}
	return u;
}

static bool est_fits(const cJSON *est)
{
	return est && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(est, "fits"));
}

enum val_goal {
	GOAL_FITS,  /* fits: every budget holds */
	GOAL_UNDER, /* fits and every GPU at most PLAN_MAX_GPU_UTIL (the planner's 90%) */
};

static bool goal_met(const cJSON *est, enum val_goal g)
{
	return est_fits(est) && (g == GOAL_FITS || dev_util(est, NULL) <= PLAN_MAX_GPU_UTIL);
}

/* The largest value in [lo, hi] of n_ctx (in VAL_KV_PAD steps, when ctx) or n_gpu_layers that
 * meets goal with base's other overrides (NULL: none), by bisection (memory grows with
 * both); -1 when none does. */
static int64_t val_largest(const struct val *v, const struct val_over *base, bool ctx, int64_t lo,
			   int64_t hi, enum val_goal g)
{
	int64_t best = -1;

	while (lo <= hi) {
		int64_t mid = lo + (hi - lo) / 2;
		struct val_over o = {0};
		if (base)
			o = *base;
		cJSON *e;
		if (ctx) {
			o.n_ctx = mid * VAL_KV_PAD;
		} else {
			o.set_ngl = true;
			o.ngl = mid;
		}
		e = val_ask(v, &o);
		if (goal_met(e, g)) {
			best = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
		cJSON_Delete(e);
	}
	return best < 0 ? -1 : (ctx ? best * VAL_KV_PAD : best);
}

/* ---- the machine ---------------------------------------------------------------------------- */

static bool has_word(const char *s, const char *w)
{
	size_t n = strlen(w);

	for (; *s; s++) {
		size_t i = 0;
		while (i < n && s[i] && (s[i] | 0x20) == (w[i] | 0x20))
			i++;
		if (i == n)
			return true;
	}
	return false;
}

/* The machine the estimate ran on, as far as the checks need it (the estimator has already
 * accepted the hardware input, so it is valid here). */
static int val_machine(struct val *v, struct api_reply *out)
{
	const struct device_table *t = v->env->devices;
	struct hw_snapshot *hw = v->hw;
	int rc;

	hw_snapshot_init(hw);
	if (v->c.hardware) {
		rc = api_hardware_from_json(v->c.hardware, "hardware", hw, out);
		if (rc < 0)
			return rc;
		for (int i = 0; i < hw->n_gpus; i++) {
			const struct device_profile *p = NULL;
			if (!hw->gpus[i].vendor[0] && t &&
			    device_resolve(t, hw->gpus[i].name, &p) == 0 && p) {
				hw_strlcpy(hw->gpus[i].vendor, p->vendor,
					   sizeof(hw->gpus[i].vendor));
				for (char *ch = hw->gpus[i].vendor; *ch; ch++)
					if (*ch >= 'A' && *ch <= 'Z')
						*ch = (char)(*ch - 'A' + 'a');
				if (hw->gpus[i].memory_total_bytes < 0)
					hw->gpus[i].unified_memory = p->unified;
			}
		}
		hw_classify(hw);
	} else if (v->c.hardware_profile) {
		const struct device_profile *p = NULL;
		if (!t || device_resolve(t, v->c.hardware_profile, &p) < 0 || !p)
			return api_device_unknown(out, t, "hardware_profile", v->c.hardware_profile,
						  false);
		if (p->kind == DEVICE_KIND_CPU) {
			if (p->cpu_cores > 0)
				hw->cpu.physical_cores = p->cpu_cores;
		} else {
			struct hw_gpu *g = &hw->gpus[0];
			memset(g, 0, sizeof(*g));
			hw->n_gpus = 1;
			hw_strlcpy(g->name, p->name, sizeof(g->name));
			hw_strlcpy(g->vendor, p->vendor, sizeof(g->vendor));
			for (char *ch = g->vendor; *ch; ch++)
				if (*ch >= 'A' && *ch <= 'Z')
					*ch = (char)(*ch - 'A' + 'a');
			g->unified_memory = p->unified;
			g->memory_total_bytes =
				p->memory_gib > 0 ? (int64_t)(p->memory_gib * VAL_GIB) : HW_UNKNOWN;
		}
		hw_classify(hw);
	} else if (v->env->snapshot) {
		*hw = v->env->snapshot->hw;
	} else {
		return api_error(out, RF_E_UNAVAILABLE, NULL,
				 "the first hardware scan has not finished yet; retry shortly");
	}
	v->mobile = strcmp(hw->platform, "jetson") == 0;
	for (int i = 0; i < hw->n_gpus; i++) {
		const struct hw_gpu *g = &hw->gpus[i];
		const struct device_profile *p = NULL;
		if (has_word(g->name, "laptop") || has_word(g->name, "max-q") ||
		    has_word(g->name, "mobile") || has_word(g->name, "jetson"))
			v->mobile = true;
		if (t && device_resolve_mem(t, g->name, g->memory_total_bytes, &p) == 0 && p &&
		    (strcmp(p->device_class, "laptop") == 0 ||
		     strcmp(p->device_class, "embedded") == 0))
			v->mobile = true;
	}
	return 0;
}

static bool has_vendor(const struct hw_snapshot *hw, const char *vendor)
{
	for (int i = 0; i < hw->n_gpus; i++)
		if (strcmp(hw->gpus[i].vendor, vendor) == 0)
			return true;
	return false;
}

/* ---- the checks ----------------------------------------------------------------------------- */

static void field(char *dst, size_t len, const struct val_cfg *c, const char *name)
{
	snprintf(dst, len, "%s%s", c->prefix, name);
}

/* A tensor_split that overloads one GPU while the same layers fit split by free memory: an
 * error of the split, with the proportions of the GPUs' budgets as the fix. Returns true when
 * it reported that. */
static bool check_split(struct val *v, const cJSON *est, const cJSON *worst)
{
	struct val_over even = {.no_split = true};
	cJSON *e = val_ask(v, &even);
	const cJSON *pd = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(est, "memory"), "per_device");
	const cJSON *d, *dn = cJSON_GetObjectItemCaseSensitive(worst, "device");
	double min_budget = -1;
	char f[64], ratio[96] = "";
	size_t used = 0;
	struct val_check *k;
	bool fits = est_fits(e);

	cJSON_Delete(e);
	if (!fits)
		return false;
	cJSON_ArrayForEach(d, pd)
	{
		double b = num_at(d, "budget_bytes", NULL);
		if (b > 0 && (min_budget < 0 || b < min_budget))
			min_budget = b;
	}
	cJSON_ArrayForEach(d, pd)
	{
		double b = num_at(d, "budget_bytes", NULL);
		int n = snprintf(ratio + used, sizeof(ratio) - used, "%s%.0f", used ? ":" : "",
				 min_budget > 0 && b > 0 ? 10.0 * b / min_budget : 0.0);
		if (n < 0 || (size_t)n >= sizeof(ratio) - used)
			break;
		used += (size_t)n;
	}
	field(f, sizeof(f), &v->c, "tensor_split");
	if (!(k = add(v, "tensor_split_overloads_gpu", true, f)))
		return true;
	text(k->message,
	     "tensor_split puts %.2f GiB on %s, which can use %.2f GiB; split by free memory the "
	     "same settings fit",
	     num_at(worst, "bytes", NULL) / VAL_GIB, cJSON_IsString(dn) ? dn->valuestring : "a GPU",
	     num_at(worst, "budget_bytes", NULL) / VAL_GIB);
	text(k->suggestion, "set tensor_split to %s (the GPUs' usable memory) or leave it out",
	     ratio);
	return true;
}

static void check_memory(struct val *v, const cJSON *est)
{
	const struct val_cfg *c = &v->c;
	const cJSON *worst = NULL;
	double u = dev_util(est, &worst);
	int64_t n_ctx = (int64_t)num_at(est, "settings", "n_ctx");
	int64_t n_layers = (int64_t)num_at(est, "model", "n_layers");
	char f[64];
	struct val_check *k;

	if (u > 1.0 && worst && c->tensor_split && check_split(v, est, worst))
		return;
	if (u > 1.0 && worst) {
		struct val_over q8 = {.kv = "q8_0", .fa_on = true};
		int64_t best8 = -1;
		int64_t best = val_largest(v, NULL, true, 1, n_ctx / VAL_KV_PAD, GOAL_FITS);
		const cJSON *dn = cJSON_GetObjectItemCaseSensitive(worst, "device");

		field(f, sizeof(f), c, best > 0 ? "n_ctx" : "n_gpu_layers");
		if (!(k = add(v, "vram_exceeded", true, f)))
			return;
		text(k->message, "%s needs %.2f GiB but %.2f GiB of it can be used",
		     cJSON_IsString(dn) ? dn->valuestring : "a GPU",
		     num_at(worst, "bytes", NULL) / VAL_GIB,
		     num_at(worst, "budget_bytes", NULL) / VAL_GIB);
		if (best > 0 && strcmp(val_kv(c) ? val_kv(c) : "f16", "f16") == 0)
			best8 = val_largest(v, &q8, true, best / VAL_KV_PAD, n_ctx / VAL_KV_PAD,
					    GOAL_FITS);
		if (best > 0 && best8 >= n_ctx) {
			text(k->suggestion,
			     "lower n_ctx to %lld, or keep n_ctx %lld and use cache_type_k q8_0, "
			     "cache_type_v q8_0 and flash_attn true",
			     (long long)best, (long long)n_ctx);
		} else if (best > 0 && best8 > best) {
			text(k->suggestion,
			     "lower n_ctx to %lld, or to %lld with cache_type_k q8_0, cache_type_v "
			     "q8_0 and flash_attn true",
			     (long long)best, (long long)best8);
		} else if (best > 0) {
			text(k->suggestion, "lower n_ctx to %lld", (long long)best);
		} else {
			int64_t ngl = val_largest(v, NULL, false, 0, n_layers, GOAL_FITS);
			if (ngl >= 0)
				text(k->suggestion,
				     "set n_gpu_layers to %lld (of %lld; the rest runs on the CPU)",
				     (long long)ngl, (long long)n_layers);
			else
				text(k->suggestion,
				     "the model does not fit even with n_gpu_layers 0 and n_ctx %d; "
				     "use a smaller quant or model",
				     VAL_KV_PAD);
		}
		return;
	}
	if (!est_fits(est) && num_at(est, "utilization", NULL) >= 0) {
		/* No GPU is over its budget, so the host part is: RAM. */
		static const char *const ladder[] = {"Q4_K_M", "Q3_K_M", "Q2_K"};
		int64_t best = val_largest(v, NULL, true, 1, n_ctx / VAL_KV_PAD, GOAL_FITS);
		if (best > 0)
			field(f, sizeof(f), c, "n_ctx");
		else
			snprintf(f, sizeof(f), "%s", c->nested ? "metadata.precision" : "quant");
		if (!(k = add(v, "ram_exceeded", true, f)))
			return;
		text(k->message,
		     "the part in host memory needs %.2f GiB, more than the RAM this "
		     "machine can spare",
		     num_at(est, "memory", "host_bytes") / VAL_GIB);
		if (best > 0) {
			text(k->suggestion, "lower n_ctx to %lld", (long long)best);
			return;
		}
		for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]); i++) {
			struct val_over o = {.quant = ladder[i]};
			cJSON *e = val_ask(v, &o);
			bool ok = est_fits(e);
			double need = num_at(e, "memory", "total_bytes");
			cJSON_Delete(e);
			if (ok) {
				text(k->suggestion, "use quant %s (%.2f GiB in all)", ladder[i],
				     need / VAL_GIB);
				return;
			}
		}
		text(k->suggestion, "even quant Q2_K at n_ctx %d does not fit; use a smaller model",
		     VAL_KV_PAD);
		return;
	}
	if (u > PLAN_MAX_GPU_UTIL && worst) {
		int64_t best = val_largest(v, NULL, true, 1, n_ctx / VAL_KV_PAD, GOAL_UNDER);
		field(f, sizeof(f), c, "n_ctx");
		if (!(k = add(v, "vram_over_90", false, f)))
			return;
		text(k->message,
		     "a GPU is %.0f%% full; other programs and fragmentation can push "
		     "it over",
		     u * 100);
		if (best > 0)
			text(k->suggestion, "lower n_ctx to %lld to keep every GPU under 90%%",
			     (long long)best);
		else
			text(k->suggestion,
			     "use a smaller quant; even n_ctx %d leaves less than 10%% "
			     "free",
			     VAL_KV_PAD);
	}
}

static void check_settings(struct val *v, const cJSON *est)
{
	const struct val_cfg *c = &v->c;
	const struct hw_snapshot *hw = v->hw;
	int64_t batch = val_batch(c);
	int64_t n_ctx = c->has_ctx ? c->n_ctx : (int64_t)num_at(est, "settings", "n_ctx");
	int64_t par = c->has_parallel ? c->n_parallel : 1;
	char f[64];
	struct val_check *k;

	if (c->has_ubatch && c->n_ubatch > batch) {
		field(f, sizeof(f), c, "n_ubatch");
		if ((k = add(v, "ubatch_over_batch", true, f))) {
			text(k->message, "n_ubatch %lld is larger than n_batch %lld",
			     (long long)c->n_ubatch, (long long)batch);
			text(k->suggestion, "set n_ubatch to %lld (at most n_batch)",
			     (long long)(batch < 512 ? batch : 512));
		}
	}
	if (n_ctx > 0 && batch > n_ctx) {
		field(f, sizeof(f), c, "n_batch");
		if ((k = add(v, "batch_over_ctx", false, f))) {
			text(k->message,
			     "n_batch %lld is larger than n_ctx %lld; a prompt longer "
			     "than the context cannot be processed",
			     (long long)batch, (long long)n_ctx);
			text(k->suggestion, "set n_batch to %lld (n_ctx)", (long long)n_ctx);
		}
	}
	if (est) {
		int64_t maxpos = (int64_t)num_at(est, "model", "max_position_embeddings");
		int64_t layers = (int64_t)num_at(est, "model", "n_layers");
		int64_t seq = n_ctx / par;
		double scale = c->rope_scale > 0 ? c->rope_scale : 0;
		bool scaled = c->rope > 0 && (scale <= 0 || (double)seq <= (double)maxpos * scale);
		if (maxpos > 0 && seq > maxpos && !scaled) {
			bool err = seq > 2 * maxpos;
			field(f, sizeof(f), c, "n_ctx");
			if ((k = add(v, "ctx_over_model", err, f))) {
				text(k->message,
				     "each sequence gets %lld tokens but the model was "
				     "trained on %lld",
				     (long long)seq, (long long)maxpos);
				text(k->suggestion,
				     "lower n_ctx to %lld (%lld per sequence), or set "
				     "rope_scaling yarn with rope_scale %.2f",
				     (long long)(maxpos * par), (long long)maxpos,
				     (double)seq / (double)maxpos);
			}
		}
		if (c->has_ngl && c->n_gpu_layers > layers + 1 && c->n_gpu_layers < VAL_NGL_ALL &&
		    layers > 0) {
			field(f, sizeof(f), c, "n_gpu_layers");
			if ((k = add(v, "gpu_layers_over_model", false, f))) {
				text(k->message,
				     "n_gpu_layers %lld is more than the model's %lld "
				     "layers and its output layer",
				     (long long)c->n_gpu_layers, (long long)layers);
				text(k->suggestion, "set n_gpu_layers to %lld (every layer), or -1",
				     (long long)(layers + 1));
			}
		}
	}
	if (c->cache_v >= 0 && c->cache_v > 2 && !(c->has_fa && c->flash_attn)) {
		field(f, sizeof(f), c, "cache_type_v");
		if ((k = add(v, "kv_quant_needs_flash_attn", true, f))) {
			text(k->message,
			     "llama.cpp refuses a quantized V cache (%s) without flash "
			     "attention",
			     val_cache_types[c->cache_v]);
			text(k->suggestion, "set flash_attn true, or cache_type_v f16");
		}
	}
	if (c->backend >= 0) {
		const char *b = val_backends[c->backend];
		bool ok = strcmp(b, "cpu") == 0 ||
			  (strcmp(b, "cuda") == 0 && has_vendor(hw, "nvidia")) ||
			  (strcmp(b, "rocm") == 0 && has_vendor(hw, "amd")) ||
			  (strcmp(b, "metal") == 0 && has_vendor(hw, "apple")) ||
			  (strcmp(b, "sycl") == 0 && has_vendor(hw, "intel")) ||
			  (strcmp(b, "vulkan") == 0 &&
			   (has_vendor(hw, "nvidia") || has_vendor(hw, "amd") ||
			    has_vendor(hw, "intel")));
		if (!ok && (k = add(v, "backend_unavailable", true, "backend"))) {
			bool gpu = hw->backend[0] && strcmp(hw->backend, "cpu") != 0;
			text(k->message, "backend %s needs a GPU this machine does not have", b);
			if (gpu)
				text(k->suggestion, "use backend %s (this machine's %d GPU%s)",
				     hw->backend, hw->n_gpus, hw->n_gpus == 1 ? "" : "s");
			else
				text(k->suggestion, "use backend cpu with n_gpu_layers 0");
		}
	}
	if (c->has_threads) {
		int cores = hw->cpu.performance_cores > 0 ? hw->cpu.performance_cores :
							    hw->cpu.physical_cores;
		if (cores > 0 && c->n_threads > cores) {
			field(f, sizeof(f), c, "n_threads");
			if ((k = add(v, "threads_over_physical", false, f))) {
				text(k->message,
				     "n_threads %lld is more than the %d physical%s "
				     "cores; extra threads slow generation down",
				     (long long)c->n_threads, cores,
				     hw->cpu.performance_cores > 0 ? " performance" : "");
				text(k->suggestion, "use n_threads %d (the physical%s cores)",
				     cores, hw->cpu.performance_cores > 0 ? " performance" : "");
			}
		}
	}
	if (v->mobile && (batch > VAL_THERMAL_BATCH || par > 1)) {
		field(f, sizeof(f), c, batch > VAL_THERMAL_BATCH ? "n_batch" : "n_parallel");
		if ((k = add(v, "thermal_risk", false, f))) {
			text(k->message,
			     "a laptop or embedded GPU throttles under long bursts "
			     "(n_batch %lld, n_parallel %lld)",
			     (long long)batch, (long long)par);
			text(k->suggestion,
			     "set n_batch to %d and n_parallel to 1 for sustained runs",
			     VAL_THERMAL_BATCH);
		}
	}
}

/* ---- the route ------------------------------------------------------------------------------ */

static cJSON *checks_json(const struct val *v, bool errors)
{
	cJSON *arr = cJSON_CreateArray();

	for (int i = 0; arr && i < v->n; i++) {
		const struct val_check *k = &v->checks[i];
		cJSON *o;
		if (k->error != errors || !(o = cJSON_CreateObject()))
			continue;
		cJSON_AddStringToObject(o, "code", k->code);
		cJSON_AddStringToObject(o, "message", k->message);
		cJSON_AddStringToObject(o, "suggestion", k->suggestion);
		if (k->field[0])
			cJSON_AddStringToObject(o, "field", k->field);
		else
			cJSON_AddNullToObject(o, "field");
		api_json_append(arr, o);
	}
	return arr;
}

/* ---- the planner's setup ---------------------------------------------------------------- */

/* When a memory check failed or warned: the setup the planner chooses for this model on this
 * machine (general use, the config's quant and n_ctx kept when it gave them, else the
 * planner's), as settings to apply. Returns the object (NULL when none fits, the request cannot
 * be planned, or out of memory) and, in line, its summary for the suggestions. */
static cJSON *val_planned(const struct val *v, char *line, size_t len)
{
	const struct val_cfg *c = &v->c;
	struct api_plan_input *in = NULL;
	struct plan_answer *ans = malloc(sizeof(*ans));
	struct plan_quality q;
	struct plan_request r;
	struct plan_model pm;
	struct api_reply err = {0};
	cJSON *m = val_request(c, NULL), *set = NULL;
	int rc;

	line[0] = '\0';
	if (!ans || !m) {
		free(ans);
		cJSON_Delete(m);
		return NULL;
	}
	rc = api_plan_input(v->env, cJSON_GetObjectItemCaseSensitive(m, "model"), c->hardware,
			    c->hardware_profile, &in, &err);
	if (rc == 0)
		rc = api_plan_quality(v->env, &q, &err);
	api_reply_reset(&err);
	if (rc == 0) {
		plan_request_default(&r);
		if (c->vllm) {
			r.runtime = PLAN_RT_VLLM;
			if (c->has_mml)
				r.n_ctx = c->max_model_len;
		} else {
			if (c->quant[0] && in->gguf_ftype < 0)
				r.ftype = rf_ftype_from_name(c->quant);
			if (c->has_ctx)
				r.n_ctx = c->n_ctx;
			if (c->has_parallel && c->n_parallel <= 256)
				r.n_parallel = c->n_parallel;
		}
		api_plan_model(in, &pm);
		rc = plan_infer(&pm, &in->machine, &q, &r, ans);
		/* The context may be what cannot be kept: then the planner's own. */
		if (rc == 0 && !ans->found && (c->has_ctx || c->has_mml)) {
			r.n_ctx = 0;
			rc = plan_infer(&pm, &in->machine, &q, &r, ans);
		}
	}
	if (rc == 0 && ans->found && ans->best.setup.runtime == PLAN_RT_VLLM &&
	    (set = cJSON_CreateObject()) != NULL) {
		const struct plan_setup *s = &ans->best.setup;
		const char *qf = plan_vllm_format_flag(s->vformat);
		const char *kv = s->p.type_k != RF_GT_F16 ? "fp8" : "auto";
		cJSON_AddNumberToObject(set, "tensor_parallel_size", s->tp);
		cJSON_AddNumberToObject(set, "max_model_len", (double)s->p.n_ctx);
		cJSON_AddNumberToObject(set, "gpu_memory_utilization", s->vllm_util);
		if (qf)
			cJSON_AddStringToObject(set, "quantization", qf);
		else
			cJSON_AddNullToObject(set, "quantization");
		cJSON_AddStringToObject(set, "kv_cache_dtype", kv);
		if (s->max_num_seqs > 0)
			cJSON_AddNumberToObject(set, "max_num_seqs", (double)s->max_num_seqs);
		snprintf(line, len,
			 "the setup /api/config plans here: tensor_parallel_size %d, max_model_len "
			 "%lld, gpu_memory_utilization %.2f, quantization %s, kv_cache_dtype %s "
			 "(%lld tokens of KV cache)",
			 s->tp, (long long)s->p.n_ctx, s->vllm_util, qf ? qf : "none (bf16)", kv,
			 (long long)ans->best.res.kv_tokens);
	} else if (rc == 0 && ans->found && (set = cJSON_CreateObject()) != NULL) {
		const struct plan_setup *s = &ans->best.setup;
		const char *kv = s->p.type_k == RF_GT_Q8_0 ? "q8_0" :
				 s->p.type_k == RF_GT_Q4_0 ? "q4_0" :
							     "f16";
		int64_t ngl = in->machine.n_dev == 0 ? 0 :
			      s->p.n_gpu_layers < 0  ? model_n_layer(in->arch) + 1 :
						       s->p.n_gpu_layers;
		if (in->gguf_ftype < 0)
			cJSON_AddStringToObject(set, "quant", rf_ftype_name(s->ftype));
		cJSON_AddNumberToObject(set, "n_ctx", (double)s->p.n_ctx);
		cJSON_AddNumberToObject(set, "n_gpu_layers", (double)ngl);
		cJSON_AddNumberToObject(set, "n_cpu_moe", (double)s->p.n_cpu_moe);
		cJSON_AddNumberToObject(set, "n_ubatch", (double)s->p.n_ubatch);
		cJSON_AddStringToObject(set, "cache_type_k", kv);
		cJSON_AddStringToObject(set, "cache_type_v", kv);
		cJSON_AddBoolToObject(set, "flash_attn", s->p.flash_attn);
		snprintf(line, len,
			 "the setup /api/config plans here: %s, n_ctx %lld, n_gpu_layers %lld, "
			 "n_cpu_moe %lld, n_ubatch %lld, cache_type_k/v %s (every GPU under 90%%)",
			 in->gguf_ftype < 0 ? rf_ftype_name(s->ftype) : "the file's quant",
			 (long long)s->p.n_ctx, (long long)ngl, (long long)s->p.n_cpu_moe,
			 (long long)s->p.n_ubatch, kv);
	}
	api_plan_input_free(in);
	cJSON_Delete(m);
	free(ans);
	return set;
}

/* The checks the planner's setup answers: memory, and vLLM's parallel layout. */
static bool val_planned_code(const char *code)
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

/* Appends the planner's line to the memory checks' suggestions. */
static void val_add_plan(struct val *v, const char *line)
{
	for (int i = 0; i < v->n; i++) {
		struct val_check *k = &v->checks[i];
		size_t n = strlen(k->suggestion);
		if (!val_planned_code(k->code))
			continue;
		snprintf(k->suggestion + n, sizeof(k->suggestion) - n, "; or %s", line);
	}
}

/* ---- runtime vllm -------------------------------------------------------------------------- */

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

/* tensor_parallel_size x pipeline_parallel_size against the GPUs and the heads: vLLM refuses
 * either before it loads anything. Returns true when one failed. */
static bool check_vllm_parallel(struct val *v, const struct api_plan_input *in)
{
	const struct val_cfg *c = &v->c;
	int64_t tp = c->has_tp ? c->tp : 1, pp = c->has_pp ? c->pp : 1;
	int64_t heads = in->arch->n_heads;
	int64_t kvh = in->arch->n_kv_heads > 0 ? in->arch->n_kv_heads : heads;
	int n = in->machine.n_vgpu, room = (int)(pp <= n ? n / pp : 1);
	char f[64];
	struct val_check *k = NULL;

	field(f, sizeof(f), c,
	      tp * pp > n && tp <= n ? "pipeline_parallel_size" : "tensor_parallel_size");
	if (tp * pp > n && (k = add(v, "parallel_over_gpus", true, f)))
		text(k->message,
		     "tensor_parallel_size %lld x pipeline_parallel_size %lld needs %lld GPUs; this "
		     "machine has %d vLLM can use",
		     (long long)tp, (long long)pp, (long long)(tp * pp), n);
	else if (heads > 0 && (heads % tp != 0 || (kvh % tp != 0 && tp % kvh != 0)) &&
		 (k = add(v, "tp_not_dividing_heads", true, f)))
		text(k->message,
		     "tensor_parallel_size %lld does not divide the model's %lld attention heads "
		     "(%lld KV heads): vLLM refuses to start",
		     (long long)tp, (long long)heads, (long long)kvh);
	if (k)
		text(k->suggestion, "set tensor_parallel_size to %d%s",
		     vllm_best_tp(heads, kvh, room),
		     pp > n ? " and pipeline_parallel_size to 1" : "");
	return k != NULL;
}

/* The estimator's refusal of a max_model_len above the model's positions, as a finding. */
static void check_vllm_refused(struct val *v, const struct api_plan_input *in)
{
	char f[64];
	struct val_check *k;

	field(f, sizeof(f), &v->c, "max_model_len");
	if (!(k = add(v, "ctx_over_model", true, f)))
		return;
	text(k->message, "max_model_len %lld is more than the model's %lld positions: vLLM refuses",
	     (long long)v->c.max_model_len, (long long)in->arch->max_position_embeddings);
	text(k->suggestion, "lower max_model_len to %lld",
	     (long long)in->arch->max_position_embeddings);
}

/* vLLM's start-up over the estimator's serving answer (serve_vllm's capacity): the free memory
 * it checks first, then the memory profiling, then the KV cache against max_model_len, then
 * the CUDA graphs; the headroom rule last. */
static void check_vllm_memory(struct val *v, const struct api_plan_input *in, const cJSON *est)
{
	const struct val_cfg *c = &v->c;
	const cJSON *sv = cJSON_GetObjectItemCaseSensitive(est, "serving");
	double util = num_at(sv, "gpu_memory_utilization", NULL);
	double total = num_at(sv, "gpu_memory_bytes", NULL);
	double req = num_at(sv, "requested_bytes_per_gpu", NULL);
	double graphs = num_at(sv, "cuda_graph_bytes", NULL);
	double tokens = num_at(sv, "kv_cache_tokens", NULL);
	double block = num_at(sv, "block_size", NULL);
	int64_t mml = (int64_t)num_at(sv, "max_model_len", NULL);
	int used = (int)(num_at(sv, "tensor_parallel_size", NULL) *
			 num_at(sv, "pipeline_parallel_size", NULL));
	double free_util = 1; /* the share the GPUs' free memory allows, as the planner takes it */
	int short_gpu = -1;
	char f[64];
	struct val_check *k;

	if (!sv || util <= 0 || total <= 0)
		return;
	for (int i = 0; i < used && i < in->machine.n_vgpu; i++) {
		const struct vllm_gpu *g = &in->machine.vgpu[i];
		double q = util * (double)(g->total_bytes - VLLM_CUDA_RESERVED_BYTES);
		double u = plan_vllm_gpu_util(g->total_bytes, g->free_bytes);
		free_util = u < free_util ? u : free_util;
		if (g->free_bytes >= 0 && (double)g->free_bytes < q && short_gpu < 0)
			short_gpu = i;
	}
	field(f, sizeof(f), c, "gpu_memory_utilization");
	if (short_gpu >= 0 && (k = add(v, "vram_not_free", true, f))) {
		const struct vllm_gpu *g = &in->machine.vgpu[short_gpu];
		text(k->message,
		     "GPU %d has %.2f GiB free but gpu_memory_utilization %.2f asks for %.2f GiB: "
		     "vLLM refuses to start when free memory is below its share",
		     short_gpu, (double)g->free_bytes / VAL_GIB, util,
		     util * (double)(g->total_bytes - VLLM_CUDA_RESERVED_BYTES) / VAL_GIB);
		text(k->suggestion,
		     "set gpu_memory_utilization to %.2f (what is free, less 5 points)", free_util);
	}
	if (num_at(sv, "kv_cache_bytes_per_gpu", NULL) <= 0) {
		snprintf(f, sizeof(f), "%s", c->nested ? "settings.quantization" : "precision");
		if ((k = add(v, "vram_exceeded", true, f))) {
			text(k->message,
			     "weights (%.2f GiB per GPU), the profiling peak (%.2f GiB) and non-torch "
			     "memory (%.2f GiB) leave nothing of gpu_memory_utilization %.2f x %.2f "
			     "GiB for the KV cache: vLLM fails to start",
			     num_at(sv, "weights_bytes_per_gpu", NULL) / VAL_GIB,
			     num_at(sv, "activation_peak_bytes", NULL) / VAL_GIB,
			     num_at(sv, "non_torch_bytes", NULL) / VAL_GIB, util, total / VAL_GIB);
			text(k->suggestion, "use a smaller format (fp8, awq) or more GPUs with "
					    "tensor_parallel_size");
		}
	} else if (block > 0 && tokens < ceil((double)mml / block) * block) {
		field(f, sizeof(f), c, "max_model_len");
		if ((k = add(v, "kv_capacity_exceeded", true, f))) {
			text(k->message,
			     "max_model_len %lld is larger than the %.0f tokens the KV cache can "
			     "store: vLLM refuses to start",
			     (long long)mml, tokens);
			text(k->suggestion, "lower max_model_len to %.0f%s", tokens,
			     c->vkv == 1 ? "" : ", or set kv_cache_dtype fp8");
		}
	}
	if (req + graphs > total) {
		field(f, sizeof(f), c, "gpu_memory_utilization");
		if ((k = add(v, "cuda_graphs_exceeded", true, f))) {
			text(k->message,
			     "the CUDA graphs (%.2f GiB) captured after the KV cache do not fit beside "
			     "gpu_memory_utilization %.2f of the GPU",
			     graphs / VAL_GIB, util);
			text(k->suggestion,
			     "lower gpu_memory_utilization to %.2f, or set enforce_eager true",
			     floor((total - graphs) / total * 100) / 100);
		}
	}
	/* The planner goes above vLLM's default 0.90 only up to 0.95 and only on GPUs no other
	 * process uses: 5% stays for the CUDA graphs and what other programs allocate. */
	if (util > PLAN_VLLM_GPU_UTIL + 1e-9 &&
	    (util > PLAN_VLLM_GPU_UTIL_HIGH + 1e-9 || free_util < PLAN_VLLM_GPU_UTIL) &&
	    short_gpu < 0) {
		field(f, sizeof(f), c, "gpu_memory_utilization");
		if ((k = add(v, "vram_over_90", false, f))) {
			text(k->message,
			     "gpu_memory_utilization %.2f leaves less than %s of each GPU outside "
			     "vLLM's pool; the CUDA graphs, other programs and fragmentation can push "
			     "it out of memory",
			     util,
			     util > PLAN_VLLM_GPU_UTIL_HIGH ? "5%" : "10% (other programs use it)");
			text(k->suggestion, "set gpu_memory_utilization to %.2f",
			     free_util < PLAN_VLLM_GPU_UTIL ? free_util : PLAN_VLLM_GPU_UTIL);
		}
	}
}

/* The vLLM checks: the machine and the parallel layout first (vLLM refuses those before it
 * loads anything), then the estimator's runtime vllm answer. Returns 0 with *est (NULL when
 * no estimate could be made) or a negative rf_err with the envelope in out. */
static int val_vllm_checks(struct val *v, cJSON **est, struct api_reply *out)
{
	struct api_plan_input *in = NULL;
	cJSON *req = val_request(&v->c, NULL);
	struct val_check *k;
	int rc;

	*est = NULL;
	if (!req)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	rc = api_plan_input(v->env, cJSON_GetObjectItemCaseSensitive(req, "model"), v->c.hardware,
			    v->c.hardware_profile, &in, out);
	if (rc == 0 && in->machine.n_vgpu == 0 &&
	    (k = add(v, "backend_unavailable", true, "runtime"))) {
		text(k->message, "vLLM needs CUDA or ROCm GPUs; this machine's backend is %s",
		     in->hw->backend[0] ? in->hw->backend : "none");
		text(k->suggestion, "use runtime llama.cpp (POST /api/config plans it here)");
	} else if (rc == 0 && !check_vllm_parallel(v, in)) {
		rc = api_estimate_object(v->env, req, est, out);
		if (rc < 0 && v->c.has_mml && in->arch->max_position_embeddings > 0 &&
		    v->c.max_model_len > in->arch->max_position_embeddings) {
			check_vllm_refused(v, in);
			rc = 0;
		}
		if (rc == 0)
			api_reply_reset(out);
		if (*est)
			check_vllm_memory(v, in, *est);
	}
	api_plan_input_free(in);
	cJSON_Delete(req);
	return rc;
}

static int val_run(struct val *v, const cJSON *body, struct api_reply *out)
{
	cJSON *est = NULL, *root, *planned = NULL;
	char *json;
	int rc, n_err = 0;

	rc = val_parse(&v->c, body, out);
	if (rc < 0)
		return rc;
	if (v->c.model_id && v->env->models) {
		const struct model_entry *entry = NULL;
		struct api_reply tmp = {0};
		rc = api_model_resolve(v->env->models, v->c.model_id, "model.id", &tmp, &entry);
		api_reply_reset(&tmp);
		if (rc < 0) {
			struct val_check *k = add(v, "unknown_model", true, "model.id");
			text(k->message, "no model of the catalog is called '%.80s'",
			     v->c.model_id);
			text(k->suggestion,
			     "name one of the %zu catalog models by its id or alias "
			     "(Qwen/Qwen2.5-7B-Instruct, llama-3.1-8b), or give model.architecture "
			     "(a config.json)",
			     v->env->models->n);
		}
	}
	if (v->c.vllm) {
		if (v->n == 0 && (rc = val_vllm_checks(v, &est, out)) < 0)
			return rc;
	} else if (v->n == 0) {
		cJSON *req = val_request(&v->c, NULL);
		if (!req)
			return api_error(out, RF_E_NOMEM, NULL, NULL);
		rc = api_estimate_object(v->env, req, &est, out);
		cJSON_Delete(req);
		if (rc < 0)
			return rc; /* the estimator's error names its field */
		api_reply_reset(out);
	}
	if (!v->c.vllm) {
		rc = val_machine(v, out);
		if (rc < 0) {
			cJSON_Delete(est);
			return rc;
		}
		check_settings(v, est);
		if (est)
			check_memory(v, est);
	}
	for (int i = 0; i < v->n && !planned; i++)
		if (val_planned_code(v->checks[i].code)) {
			char line[VAL_TEXT_LEN];
			planned = val_planned(v, line, sizeof(line));
			if (planned)
				val_add_plan(v, line);
			break;
		}
	for (int i = 0; i < v->n; i++)
		n_err += v->checks[i].error;
	root = cJSON_CreateObject();
	if (!root) {
		cJSON_Delete(est);
		cJSON_Delete(planned);
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	}
	cJSON_AddBoolToObject(root, "is_valid", n_err == 0);
	api_json_add(root, "errors", checks_json(v, true));
	api_json_add(root, "warnings", checks_json(v, false));
	if (planned)
		api_json_add(root, "suggested_settings", planned);
	if (est)
		api_json_add(root, "estimate", est);
	else
		cJSON_AddNullToObject(root, "estimate");
	json = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!json)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	api_reply_json(out, 200, json);
	return 0;
}

int api_validate(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	cJSON *body = NULL;
	struct val *v;
	int rc = jm_parse_body(req, false, &body, out);

	if (rc < 0)
		return rc;
	v = calloc(1, sizeof(*v));
	if (v)
		v->hw = calloc(1, sizeof(*v->hw));
	if (!v || !v->hw) {
		if (v)
			free(v);
		cJSON_Delete(body);
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	}
	v->env = env;
	rc = val_run(v, body, out);
	free(v->hw);
	free(v);
	cJSON_Delete(body);
	return rc;
}
