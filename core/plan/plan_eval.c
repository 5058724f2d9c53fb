/*
 * One setup's memory and speed (see plan_eval.h).
 */
#include "core/plan/plan_eval.h"

#include <math.h>
#include <string.h>

#include "core/err.h"
#include "core/quant.h"

/* AWQ int4: 4 bits per weight plus an fp16 scale and a 4-bit zero point per group of 128. */
#define AWQ_BITS (4.0 + (16.0 + 4.0) / 128.0)

const char *plan_vllm_format_flag(enum plan_vllm_format f)
{
	return f == PLAN_VLLM_FP8 ? "fp8" : f == PLAN_VLLM_AWQ ? "awq" : NULL;
}

void plan_vllm_weights(const struct rf_mem_weights *f16, enum plan_vllm_format f,
		       struct rf_mem_weights *out)
{
	double k = f == PLAN_VLLM_FP8 ? 8.0 / 16.0 : f == PLAN_VLLM_AWQ ? AWQ_BITS / 16.0 : 1.0;

	*out = *f16;
	if (k == 1.0)
		return;
	out->file_bytes = f16->input_bytes + f16->output_bytes;
	out->largest_matrix = f16->output_bytes;
	for (int64_t l = 0; l < f16->n_layer; l++) {
		out->layer_bytes[l] = (uint64_t)((double)f16->layer_bytes[l] * k);
		out->layer_expert_bytes[l] = (uint64_t)((double)f16->layer_expert_bytes[l] * k);
		out->file_bytes += out->layer_bytes[l];
	}
}

double plan_vllm_gpu_util(int64_t total_bytes, int64_t free_bytes)
{
	double frac =
		total_bytes > 0 && free_bytes >= 0 ? (double)free_bytes / (double)total_bytes : 1.0;
	double u;

	if (frac >= 0.95)
		return PLAN_VLLM_GPU_UTIL;
	u = floor((frac - 0.05) * 100.0) / 100.0;
	return u < 0.10 ? 0.10 : u;
}

void plan_budgets(const struct plan_machine *hw, enum plan_runtime rt,
		  struct rf_mem_device dev[RF_MAX_DEVICES])
{
	for (int i = 0; i < hw->n_dev; i++) {
		dev[i] = hw->dev[i];
		if (rt != PLAN_RT_VLLM || hw->dev_total_bytes[i] <= 0)
			continue;
		/* vLLM takes its share of the total and allocates it whole at start. */
		int64_t total = hw->dev_total_bytes[i];
		dev[i].budget_bytes =
			(int64_t)((double)total * plan_vllm_gpu_util(total, dev[i].free_bytes));
	}
}

double plan_gpu_util(const struct rf_mem_estimate *m)
{
	double u = -1;

	for (int i = 0; i < m->n_devices; i++) {
		const struct rf_mem_device_use *d = &m->per_device[i];
		double x;
		if (d->budget_bytes < 0)
			continue;
		x = d->budget_bytes > 0 ? (double)d->bytes / (double)d->budget_bytes :
					  (d->bytes > 0 ? 2.0 : 0.0);
		if (x > u)
			u = x;
	}
	return u;
}

void plan_speed_model(const struct model_params *mp, const struct rf_mem_weights *w, int ftype,
		      const struct rf_mem_estimate *m, const struct rf_infer_params *p,
		      struct speed_input *in)
{
	double active_share = mp->total > 0 ? (double)mp->active / (double)mp->total : 1;
	double layer_bytes = 0, expert_bytes = 0;

	for (int64_t l = 0; l < w->n_layer; l++) {
		layer_bytes += (double)w->layer_bytes[l];
		expert_bytes += (double)w->layer_expert_bytes[l];
	}
	in->weight_bytes = (layer_bytes + (double)w->output_bytes) * active_share;
	/* A prefill micro-batch of MoE tokens reads (nearly) every expert. */
	in->moe_batch_bytes =
		mp->expert > 0 ? (layer_bytes + (double)w->output_bytes) * (1 - active_share) : 0;
	in->kv_bytes_start = 0;
	in->kv_bytes_full =
		(double)m->kv_cache_bytes / (double)(p->n_parallel > 0 ? p->n_parallel : 1);
	in->flops_per_token = 2.0 * (double)mp->active;
	in->n_layers = (int)w->n_layer;
	in->quantized = ftype >= 0 && ftype != RF_FT_F16 && ftype != RF_FT_BF16 &&
			ftype != RF_FT_F32;
	in->gpu_fraction = w->n_layer > 0 ? (double)m->n_gpu_layers / (double)w->n_layer : 0;
	if (m->experts_host_bytes > 0 && in->weight_bytes > 0 && expert_bytes > 0 &&
	    mp->expert > 0) {
		/* Routed experts read per token: the k of E used, which is the share of the
		 * expert parameters the active count holds (active = dense + k/E x experts). */
		double k_of_e =
			(double)(mp->active - (mp->total - mp->expert)) / (double)mp->expert;
		double expert_read, host_read, gpu_layers;
		if (k_of_e < 0)
			k_of_e = 0;
		if (k_of_e > 1)
			k_of_e = 1;
		expert_read = expert_bytes * k_of_e;
		host_read = (double)m->experts_host_bytes * k_of_e;
		gpu_layers = in->gpu_fraction > 1 ? 1 : in->gpu_fraction;
		if (expert_read > in->weight_bytes)
			in->weight_bytes = expert_read;
		in->gpu_fraction = (gpu_layers * in->weight_bytes - host_read) / in->weight_bytes;
		if (in->gpu_fraction < 0)
			in->gpu_fraction = 0;
	}
	if (in->gpu_fraction > 1)
		in->gpu_fraction = 1;
	for (int i = 0; i < in->n_devices; i++)
		in->devices[i].layer_share =
			m->n_devices > i && m->per_device[i].layers > 0 && m->n_gpu_layers > 0 ?
				(double)m->per_device[i].layers / (double)m->n_gpu_layers :
				0;
}

int plan_evaluate(const struct model_arch *a, const struct model_params *mp,
		  const struct rf_mem_weights *w, const struct plan_machine *hw,
		  const struct plan_setup *s, struct plan_result *out)
{
	struct rf_mem_device dev[RF_MAX_DEVICES];
	struct speed_input in;
	int rc;

	plan_budgets(hw, s->runtime, dev);
	rc = rf_estimate_inference(a, w, &s->p, dev, hw->n_dev, &hw->host, &out->mem);
	if (rc < 0)
		return rc;
	out->fits = out->mem.fits;
	out->gpu_util = plan_gpu_util(&out->mem);
	in = hw->speed;
	plan_speed_model(mp, w, s->runtime == PLAN_RT_VLLM ? RF_FT_F16 : s->ftype, &out->mem, &s->p,
			 &in);
	if (s->runtime == PLAN_RT_VLLM && s->vformat != PLAN_VLLM_BF16)
		in.quantized = true;
	out->decode_tps = speed_predict(&in, speed_fitted, SPEED_TEST_DECODE);
	/* With the whole context filled: its KV bytes are read for every token. */
	in.kv_bytes_start = in.kv_bytes_full;
	out->decode_tps_full_ctx = speed_predict(&in, speed_fitted, SPEED_TEST_DECODE);
	return 0;
}
