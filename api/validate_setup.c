/*
 * POST /api/validate's config as its runtime runs it (see validate_priv.h): the parsed config
 * (validate_input.c) becomes core's structs, the setup with llama.cpp's or vLLM's defaults
 * where it is silent (as /api/estimate takes them) and the settings as written, for
 * plan_check; the estimate request of the block the answer shows; and whether the machine's
 * GPU is a mobile part.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "api/estimate_request.h"
#include "api/json_alloc.h"
#include "api/jsonmap.h"
#include "api/validate_priv.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "core/fit/serve_vllm.h"
#include "core/plan/plan_rope.h"
#include "core/hw/device.h"
#include "core/hw/hw.h"

#define VAL_DEFAULT_BATCH 2048     /* llama.cpp's -b */
#define VAL_DEFAULT_QUANT "Q4_K_M" /* /api/estimate's, when a config names none */

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

/* Whether the config runs on the CPU alone (backend cpu). */
static bool val_cpu(const struct val_cfg *c)
{
	return c->backend >= 0 && strcmp(val_backends[c->backend], "cpu") == 0;
}

/* n_cpu_moe as llama.cpp takes it: more than every layer is every layer. */
static int64_t val_cpu_moe(const struct val_cfg *c)
{
	return c->n_cpu_moe > MODEL_MAX_LAYERS ? MODEL_MAX_LAYERS : c->n_cpu_moe;
}

cJSON *val_model(const struct val_cfg *c)
{
	cJSON *m;

	if (!cJSON_IsObject(c->model))
		return cJSON_Duplicate(c->model, true);
	/* Only what names the model: /api/config also writes its facts (source,
	 * params_total...) beside the id. */
	static const char *const keep[] = {"id", "architecture", "gguf", "params_b"};
	m = cJSON_CreateObject();
	for (size_t i = 0; m && i < sizeof(keep) / sizeof(keep[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(c->model, keep[i]);
		if (v)
			api_json_add(m, keep[i], cJSON_Duplicate(v, true));
	}
	return m;
}

/* The rest of a runtime vllm estimate: the engine arguments as given (vLLM's defaults else). */
static void val_vllm_settings(const struct val_cfg *c, struct api_estimate_request *rq)
{
	rq->runtime = API_EST_RT_VLLM;
	rq->has_runtime = true;
	if (c->quant[0]) {
		snprintf(rq->precision, sizeof(rq->precision), "%s", c->quant);
		rq->has_precision = true;
	}
	rq->tp = c->tp;
	rq->has_tp = c->has_tp;
	rq->pp = c->pp;
	rq->has_pp = c->has_pp;
	rq->gpu_util = c->util;
	rq->has_gpu_util = c->has_util;
	rq->max_model_len = c->max_model_len;
	rq->has_max_model_len = c->has_mml;
	rq->max_num_seqs = c->max_num_seqs;
	rq->has_max_num_seqs = c->has_mns;
	rq->max_num_batched_tokens = c->max_batched;
	rq->has_max_num_batched_tokens = c->has_mbt;
	rq->vllm_kv = c->vkv;
	rq->has_vllm_kv = c->vkv >= 0;
	rq->enforce_eager = c->enforce_eager;
	rq->has_enforce_eager = c->has_eager;
}

/* The rope scaling for the estimate: only a whole one (a factor with linear or yarn), so that
 * what the checks flag is not an estimator error. */
static void val_rope_estimate(const struct val_cfg *c, struct api_estimate_request *rq)
{
	if (c->rope <= 0 || c->rope_scale <= 0)
		return;
	rq->rope = jm_choice(api_est_ropes, val_rope[c->rope]);
	rq->has_rope = rq->rope >= 0;
	rq->rope_scale = c->rope_scale;
	rq->has_rope_scale = true;
	rq->yarn_orig_ctx = c->yarn_orig_ctx;
	rq->has_yarn_orig_ctx = c->yarn_orig_ctx > 0 && strcmp(val_rope[c->rope], "yarn") == 0;
}

void val_estimate_settings(const struct val_cfg *c, struct api_estimate_request *rq)
{
	const char *kv = val_kv(c);
	const cJSON *x;

	api_estimate_request_init(rq);
	val_rope_estimate(c, rq);
	if (c->hardware_profile) {
		snprintf(rq->hardware_profile, sizeof(rq->hardware_profile), "%s",
			 c->hardware_profile);
		rq->has_hardware_profile = true;
	}
	if (c->vllm) {
		val_vllm_settings(c, rq);
		return;
	}
	if (c->quant[0]) {
		snprintf(rq->quant, sizeof(rq->quant), "%s", c->quant);
		rq->has_quant = true;
	}
	rq->n_ctx = c->n_ctx;
	rq->has_n_ctx = c->has_ctx;
	rq->n_batch = c->n_batch;
	rq->has_n_batch = c->has_batch;
	/* An n_ubatch over n_batch is a check, not an estimator error. */
	rq->n_ubatch = c->n_ubatch < val_batch(c) ? c->n_ubatch : val_batch(c);
	rq->has_n_ubatch = c->has_ubatch;
	rq->n_parallel = c->n_parallel;
	rq->has_n_parallel = c->has_parallel;
	/* Given: the cache type the estimator models (an unset one is llama.cpp's default, f16,
	 * and the estimate says it took it). */
	for (int i = 0; kv && (c->cache_k >= 0 || c->cache_v >= 0) && api_est_kv_types[i]; i++)
		if (strcmp(kv, api_est_kv_types[i]) == 0) {
			rq->kv_type = i;
			rq->has_kv_type = true;
		}
	/* A quantized cache without flash attention does not start (kv_quant_needs_flash_attn
	 * says so): the estimate behind the checks is of the setup that does. */
	rq->flash_attn = c->flash_attn || (kv && strcmp(kv, "f16") != 0);
	rq->has_flash_attn = c->has_fa;
	rq->use_mmap = c->use_mmap;
	rq->has_use_mmap = c->has_mmap;
	rq->mlock = c->mlock;
	rq->has_mlock = c->has_mlock;
	rq->swa_full = c->swa_full;
	rq->has_swa_full = c->has_swa_full;
	rq->has_n_gpu_layers = val_cpu(c) || c->has_ngl;
	rq->n_gpu_layers = val_cpu(c)                         ? 0 :
			   c->n_gpu_layers > MODEL_MAX_LAYERS ? -1 :
								c->n_gpu_layers;
	rq->n_cpu_moe = val_cpu_moe(c);
	rq->has_n_cpu_moe = c->has_cpu_moe;
	cJSON_ArrayForEach(x, c->tensor_split)
	{
		if (rq->n_split < RF_MAX_DEVICES)
			rq->split[rq->n_split++] = x->valuedouble;
	}
}

/* ---- core's structs ------------------------------------------------------------------------- */

/* llama.cpp's setup of c on in's model and machine, as /api/estimate resolves the same
 * settings. */
static void val_llama_setup(const struct val_cfg *c, const struct api_plan_input *in,
			    struct plan_check_config *out)
{
	struct rf_infer_params *p = &out->s.p;
	const char *kv = val_kv(c);
	const char *b = in->hw->backend;
	const cJSON *x;

	out->s.runtime = PLAN_RT_LLAMA_CPP;
	out->s.ftype = in->gguf_ftype >= 0 ?
			       in->gguf_ftype :
			       rf_ftype_from_name(c->quant[0] ? c->quant : VAL_DEFAULT_QUANT);
	rf_infer_params_default(p);
	if (c->has_ctx)
		p->n_ctx = c->n_ctx;
	else if (in->arch->max_position_embeddings > 0 &&
		 in->arch->max_position_embeddings < p->n_ctx)
		p->n_ctx = in->arch->max_position_embeddings;
	p->n_batch = val_batch(c);
	if (c->has_ubatch)
		p->n_ubatch = c->n_ubatch < p->n_batch ? c->n_ubatch : p->n_batch;
	if (c->has_parallel)
		p->n_parallel = c->n_parallel;
	if (kv)
		p->type_k = p->type_v = rf_gtype_from_name(kv);
	if (kv && strcmp(kv, "f16") != 0 && c->has_fa && !c->flash_attn)
		p->flash_attn = true; /* the setup that starts; kv_quant_needs_flash_attn says so */
	else if (c->has_fa)
		p->flash_attn = c->flash_attn;
	else /* llama.cpp's -fa auto: on where the backend has the kernels */
		p->flash_attn = !b[0] || strcmp(b, "cuda") == 0 || strcmp(b, "metal") == 0 ||
				strcmp(b, "cpu") == 0;
	if (c->has_mmap)
		p->use_mmap = c->use_mmap;
	if (c->has_mlock)
		p->mlock = c->mlock;
	if (c->has_swa_full)
		p->swa_full = c->swa_full;
	if (val_cpu(c) || in->machine.n_dev == 0)
		p->n_gpu_layers = 0;
	else if (c->has_ngl)
		p->n_gpu_layers = c->n_gpu_layers > MODEL_MAX_LAYERS ? -1 : c->n_gpu_layers;
	if (c->has_cpu_moe)
		p->n_cpu_moe = val_cpu_moe(c);
	out->n_split = 0;
	cJSON_ArrayForEach(x, c->tensor_split)
	{
		if (out->n_split < RF_MAX_DEVICES)
			out->split[out->n_split++] = x->valuedouble;
	}
}

void val_check_config(const struct val_cfg *c, const struct api_plan_input *in,
		      struct plan_check_config *out)
{
	const char *kv = val_kv(c);

	memset(out, 0, sizeof(*out));
	out->vllm = c->vllm;
	out->backend = c->backend >= 0 ? val_backends[c->backend] : NULL;
	out->has_ctx = c->has_ctx;
	out->has_ngl = c->has_ngl;
	out->has_threads = c->has_threads;
	out->has_ubatch = c->has_ubatch;
	out->has_parallel = c->has_parallel;
	out->ngl = c->n_gpu_layers;
	out->n_threads = c->n_threads;
	out->n_batch = val_batch(c);
	out->n_ubatch = c->n_ubatch;
	out->quant_given = c->quant[0] != '\0';
	out->kv_f16 = !kv || strcmp(kv, "f16") == 0;
	out->cache_v = c->cache_v > 2 ? val_cache_types[c->cache_v] : NULL; /* past f32 */
	out->fa_on = c->has_fa && c->flash_attn;
	out->rope_on = c->rope > 0;
	out->rope_scale = c->rope_scale;
	out->own_precision = -1;
	out->yarn_orig_ctx =
		c->rope > 0 && strcmp(val_rope[c->rope], "yarn") == 0 ? c->yarn_orig_ctx : 0;
	if (c->vllm) {
		struct vllm_setup *v = &out->v;
		vllm_setup_default(v);
		if (in) {
			out->own_precision = api_plan_input_precision(in);
			out->entry = in->entry;
		}
		if (c->quant[0])
			v->precision = vllm_precision_parse(c->quant);
		if (c->has_tp)
			v->tensor_parallel = (int)c->tp;
		if (c->has_pp)
			v->pipeline_parallel = (int)c->pp;
		if (c->has_util)
			v->gpu_memory_utilization = c->util;
		if (c->has_mml)
			v->max_model_len = c->max_model_len;
		if (c->has_mns)
			v->max_num_seqs = c->max_num_seqs;
		if (c->has_mbt)
			v->max_num_batched_tokens = c->max_batched;
		if (c->vkv >= 0)
			v->kv_dtype = c->vkv == 1 ? VLLM_KV_FP8 : VLLM_KV_AUTO;
		v->enforce_eager = c->has_eager && c->enforce_eager;
		/* vLLM allows max_model_len up to what its rope scaling reaches. */
		if (in && out->rope_on && c->rope_scale > 0) {
			struct model_rope r = {MODEL_ROPE_YARN, c->rope_scale,
					       out->yarn_orig_ctx > 0 ?
						       out->yarn_orig_ctx :
						       in->arch->max_position_embeddings,
					       0};
			v->max_positions = plan_rope_reach(&r, in->arch->max_position_embeddings);
		}
		out->has_tp = c->has_tp;
		out->has_pp = c->has_pp;
		out->has_mml = c->has_mml;
		out->has_util = c->has_util;
		out->kv_fp8 = c->vkv == 1;
		return;
	}
	if (in)
		val_llama_setup(c, in, out);
	else
		out->s.p.n_ctx = c->n_ctx;
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

bool val_mobile(const struct device_table *t, const struct hw_snapshot *hw)
{
	bool mobile = strcmp(hw->platform, "jetson") == 0;

	for (int i = 0; i < hw->n_gpus; i++) {
		const struct hw_gpu *g = &hw->gpus[i];
		const struct device_profile *p = NULL;
		if (has_word(g->name, "laptop") || has_word(g->name, "max-q") ||
		    has_word(g->name, "mobile") || has_word(g->name, "jetson"))
			mobile = true;
		if (t && device_resolve_mem(t, g->name, g->memory_total_bytes, &p) == 0 && p &&
		    (strcmp(p->device_class, "laptop") == 0 ||
		     strcmp(p->device_class, "embedded") == 0))
			mobile = true;
	}
	return mobile;
}
