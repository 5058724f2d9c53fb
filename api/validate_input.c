/*
 * POST /api/validate's input (see validate_priv.h): the config as llama-server or vllm serve
 * takes it, in the shape POST /api/config writes ({"backend", "model", "settings": {...},
 * "metadata"}) or with the same settings flat beside "model". Its types are checked strictly
 * and every field is named by its path ("settings.n_ctx"). Then the config becomes core's
 * structs: the setup as its runtime runs it (llama.cpp's defaults where it is silent, as
 * /api/estimate takes them) and the settings as written, for plan_check.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/validate_priv.h"
#include "core/err.h"
#include "core/fit/serve_vllm.h"

/* llama.cpp's cache types; each maps to the estimator's nearest type that is not smaller. */
const char *const val_cache_types[] = {"f16",  "bf16", "f32",  "q8_0",   "q4_0",
				       "q4_1", "q5_0", "q5_1", "iq4_nl", NULL};
const char *const val_cache_est[] = {"f16",  "f16",  NULL,   "q8_0", "q4_0",
				     "q8_0", "q8_0", "q8_0", "q4_0"};
const char *const val_backends[] = {"cuda", "rocm", "metal", "vulkan", "sycl", "cpu", NULL};
const char *const val_rope[] = {"none", "linear", "yarn", NULL};
static const char *const val_vllm_kv[] = {"auto", "fp8", NULL};

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
/* Rope scaling, the same three settings for both runtimes (vLLM's --rope-scaling carries them
 * as rope_type, factor and original_max_position_embeddings). Returns 0 or a negative rf_err
 * when it is one of them, 1 when it is not. */
static int val_rope_setting(struct val_cfg *c, const cJSON *it, struct api_reply *out)
{
	const char *p = c->prefix, *k = it->string;
	bool seen;

	if (strcmp(k, "rope_scaling") == 0)
		return get_enum(it, p, val_rope, &c->rope, out);
	if (strcmp(k, "yarn_orig_ctx") == 0)
		return get_int(it, p, 1, MODEL_MAX_POSITIONS, &c->yarn_orig_ctx, &seen, out);
	if (strcmp(k, "rope_scale") == 0) {
		if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) || it->valuedouble < 1 ||
		    it->valuedouble > 1024)
			return bad(out, RF_E_INVALID_VALUE, p, k, "must be a number in [1, 1024]");
		c->rope_scale = it->valuedouble;
		return 0;
	}
	return 1;
}

static int val_setting(struct val_cfg *c, const cJSON *it, struct api_reply *out)
{
	const char *p = c->prefix, *k = it->string;
	int rc;

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
	if ((rc = val_rope_setting(c, it, out)) <= 0)
		return rc;
	if (strcmp(k, "tensor_split") == 0) {
		const cJSON *x;
		if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) > HW_MAX_GPUS)
			return bad(out, RF_E_INVALID_VALUE, p, k,
				   "must be an array of at most 16 proportions");
		cJSON_ArrayForEach(x, it)
		{
			if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0 ||
			    x->valuedouble > 1000000)
				return bad(out, RF_E_INVALID_VALUE, p, k,
					   "must hold proportions in [0, 1000000]");
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
	int rc;

	if ((rc = val_rope_setting(c, it, out)) <= 0)
		return rc;

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

int val_parse(struct val_cfg *c, const cJSON *body, struct api_reply *out)
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
