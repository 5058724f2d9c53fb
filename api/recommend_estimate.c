/*
 * What /api/recommend shows of the estimator for each entry it offers: the estimator's own
 * account of the entry's setup (api_estimate_resolved on the model and machine already
 * resolved, with the setup as a struct api_estimate_request: one per shown entry, none for the
 * candidates that are only ranked), summarised, and the setup in /api/estimate's terms, so
 * that an entry can be asked of /api/estimate as it is.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/estimate.h"
#include "api/json_alloc.h"
#include "api/recommend_parts.h"
#include "core/err.h"
#include "core/fit/quant.h"
#include "core/fit/train_optimizer.h"
#include "core/fit/train_parallel.h"
#include "core/format.h"

int rec_estimate(const struct api_env *env, struct api_plan_input *in,
		 const struct api_estimate_request *rq, cJSON **answer)
{
	struct api_reply tmp = {0};
	int rc = api_estimate_resolved(env, in, rq, answer, &tmp);

	api_reply_reset(&tmp);
	if (rc < 0)
		*answer = NULL;
	return rc == RF_E_NOMEM ? rc : 0;
}

/* Returns the index of optimizer o among train_optimizer_choices (-1: none). */
static int rec_optimizer_choice(enum train_optimizer o)
{
	for (int i = 0; train_optimizer_choices[i]; i++)
		if (train_optimizer_from_choice(i) == o)
			return i;
	return -1;
}

void rec_ft_request(const struct plan_ft_setup *s, struct api_estimate_request *rq)
{
	api_estimate_request_init(rq);
	rq->has_mode = true;
	rq->mode = s->mode == TRAIN_QLORA ? API_EST_QLORA :
		   s->mode == TRAIN_FULL  ? API_EST_FULL :
					    API_EST_LORA;
	rq->batch_size = s->batch_size;
	rq->has_batch_size = true;
	rq->seq_len = s->seq_len;
	rq->has_seq_len = true;
	rq->provider = s->provider == TRAIN_PROVIDER_UNSLOTH ? 1 : 0;
	rq->has_provider = true;
	rq->gradient_checkpointing = s->gradient_checkpointing;
	rq->has_gradient_checkpointing = true;
	rq->optimizer = rec_optimizer_choice(s->optimizer);
	rq->has_optimizer = rq->optimizer >= 0;
	if (s->mode != TRAIN_FULL) {
		rq->lora_rank = s->lora_rank;
		rq->has_lora_rank = true;
	}
	/* The plan's placement, not the estimate's own cheapest: one GPU stays one. */
	rq->strategy = (int)s->strategy + 1; /* after "auto" */
	rq->has_strategy = true;
	rq->offload = (int)s->offload;
	rq->has_offload = true;
	rq->packing = s->packing;
	rq->has_packing = true;
}

void rec_infer_request(const struct plan_setup *s, bool gpus, bool gguf,
		       struct api_estimate_request *rq)
{
	api_estimate_request_init(rq);
	rq->has_mode = true;
	rq->mode = API_EST_INFERENCE;
	if (!gguf && rf_ftype_name(s->ftype)) { /* a GGUF file has its own quantization */
		rf_format(rq->quant, sizeof(rq->quant), "%s", rf_ftype_name(s->ftype));
		rq->has_quant = true;
	}
	rq->n_ctx = s->p.n_ctx;
	rq->has_n_ctx = true;
	rq->kv_type = s->p.type_k == RF_GT_Q8_0 ? 1 : s->p.type_k == RF_GT_Q4_0 ? 2 : 0;
	rq->has_kv_type = true;
	rq->n_ubatch = s->p.n_ubatch;
	rq->has_n_ubatch = true;
	rq->flash_attn = s->p.flash_attn;
	rq->has_flash_attn = true;
	if (gpus) {
		rq->n_gpu_layers = s->p.n_gpu_layers;
		rq->has_n_gpu_layers = true;
		rq->n_cpu_moe = s->p.n_cpu_moe;
		rq->has_n_cpu_moe = true;
	}
}

/* Returns the number at a dotted path of o, or dflt when it is absent or not a number. */
static double rec_num(const cJSON *o, const char *a, const char *b, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b)
		v = cJSON_GetObjectItemCaseSensitive(v, b);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* Adds key: the number at a.b rounded to digits decimals, or null. */
static void rec_add_rounded(cJSON *s, const char *key, const cJSON *a, const char *p1,
			    const char *p2, double scale)
{
	double v = rec_num(a, p1, p2, -1);

	if (v >= 0)
		cJSON_AddNumberToObject(s, key, round(v * scale) / scale);
	else
		cJSON_AddNullToObject(s, key);
}

cJSON *rec_summary(const cJSON *a, bool inference)
{
	cJSON *s;
	const cJSON *band = cJSON_GetObjectItemCaseSensitive(a, "fit_band");

	if (!a)
		return cJSON_CreateNull();
	s = cJSON_CreateObject();
	if (!s)
		return NULL;
	cJSON_AddBoolToObject(s, "fits", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "fits")));
	rec_add_rounded(s, "utilization", a, "utilization", NULL, 1000);
	if (cJSON_IsString(band))
		cJSON_AddStringToObject(s, "fit_band", band->valuestring);
	else
		cJSON_AddNullToObject(s, "fit_band");
	cJSON_AddNumberToObject(s, "memory_total_bytes", rec_num(a, "memory", "total_bytes", 0));
	if (inference) {
		rec_add_rounded(s, "decode_tokens_per_s", a, "speed", "decode_tokens_per_s", 10);
		rec_add_rounded(s, "prefill_tokens_per_s", a, "speed", "prefill_tokens_per_s", 10);
	} else {
		const cJSON *tr = cJSON_GetObjectItemCaseSensitive(a, "training");
		const char *keys[] = {"strategy", "offload"};
		rec_add_rounded(s, "training_tokens_per_s", a, "training", "tokens_per_s", 10);
		for (int i = 0; i < 2; i++) {
			const cJSON *v = cJSON_GetObjectItemCaseSensitive(tr, keys[i]);
			if (cJSON_IsString(v))
				cJSON_AddStringToObject(s, keys[i], v->valuestring);
		}
	}
	return s;
}

cJSON *rec_ft_settings(const struct plan_ft_setup *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "mode", plan_ft_method_name(s->mode));
	cJSON_AddNumberToObject(o, "batch_size", (double)s->batch_size);
	cJSON_AddNumberToObject(o, "seq_len", (double)s->seq_len);
	cJSON_AddStringToObject(o, "provider", plan_ft_provider_name(s->provider));
	cJSON_AddBoolToObject(o, "gradient_checkpointing", s->gradient_checkpointing);
	cJSON_AddStringToObject(o, "optimizer", plan_ft_optimizer_name(s->optimizer));
	if (s->mode != TRAIN_FULL)
		cJSON_AddNumberToObject(o, "lora_rank", (double)s->lora_rank);
	/* The plan's placement, not the estimate's own cheapest: one GPU stays one. */
	cJSON_AddStringToObject(o, "strategy", train_strategy_name(s->strategy));
	cJSON_AddStringToObject(o, "offload", train_offload_name(s->offload));
	cJSON_AddBoolToObject(o, "packing", s->packing);
	return o;
}

static const char *rec_kv(int t)
{
	return t == RF_GT_Q8_0 ? "q8_0" : t == RF_GT_Q4_0 ? "q4_0" : "f16";
}

cJSON *rec_infer_settings(const struct plan_setup *s, bool gpus)
{
	cJSON *set = cJSON_CreateObject();
	const char *prec = rf_ftype_name(s->ftype) ? rf_ftype_name(s->ftype) : "unknown";

	if (!set)
		return NULL;
	cJSON_AddStringToObject(set, "mode", "inference");
	cJSON_AddStringToObject(set, "quant", prec);
	cJSON_AddNumberToObject(set, "n_ctx", (double)s->p.n_ctx);
	cJSON_AddStringToObject(set, "kv_cache_type", rec_kv(s->p.type_k));
	/* The planner shrinks the micro-batch where that buys context. */
	cJSON_AddNumberToObject(set, "n_ubatch", (double)s->p.n_ubatch);
	/* Always said: /api/estimate's default is llama.cpp's -fa auto (on for CUDA, Metal and
	 * the CPU), which need not be the planner's choice. */
	cJSON_AddBoolToObject(set, "flash_attn", s->p.flash_attn);
	if (gpus) {
		cJSON_AddNumberToObject(set, "n_gpu_layers", (double)s->p.n_gpu_layers);
		cJSON_AddNumberToObject(set, "n_cpu_moe", (double)s->p.n_cpu_moe);
	}
	return set;
}
