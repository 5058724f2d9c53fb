/*
 * One setup's memory and speed (see plan_eval.h).
 */
#include "core/plan/plan_eval.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/quant.h"
#include "core/fit/serve_vllm.h"
#include "core/format.h"

const char *plan_vllm_format_flag(enum plan_vllm_format f)
{
	return f == PLAN_VLLM_FP8 ? "fp8" : f == PLAN_VLLM_AWQ ? "awq" : NULL;
}

unsigned plan_vllm_missing(const struct model_entry *m)
{
	return model_ckpt_repo(m, MODEL_CKPT_AWQ) ? 0u : 1u << PLAN_VLLM_AWQ;
}

bool plan_vllm_loadable(const struct model_entry *m, int own, int p, const char **repo)
{
	const bool plain = own == VLLM_BF16 || own == VLLM_FP16 || own == VLLM_FP32;

	*repo = NULL;
	if (p == own)
		return true;
	if (!plain)
		return false;
	switch (p) {
	case VLLM_BF16:
	case VLLM_FP16:
	case VLLM_FP32:
	case VLLM_FP8:
	case VLLM_BNB4:
		return true;
	case VLLM_AWQ:
		*repo = model_ckpt_repo(m, MODEL_CKPT_AWQ);
		return *repo != NULL;
	case VLLM_GPTQ:
		*repo = model_ckpt_repo(m, MODEL_CKPT_GPTQ);
		return *repo != NULL;
	default:
		return false;
	}
}

int plan_vllm_checkpoint(const struct model_entry *m, const char *model_id, enum plan_vllm_format f,
			 struct plan_vllm_ckpt *out)
{
	const char *chat = model_chat_id(m);
	const char *own = chat ? chat : m ? m->id : model_id;
	const char *ckpt = f == PLAN_VLLM_FP8 ? model_ckpt_repo(m, MODEL_CKPT_FP8) :
			   f == PLAN_VLLM_AWQ ? model_ckpt_repo(m, MODEL_CKPT_AWQ) :
						NULL;

	if (f == PLAN_VLLM_AWQ && !ckpt)
		return RF_E_NOT_FOUND;
	/* A checkpoint already quantized carries its quantization_config: vLLM reads the method
	 * from it (and picks its faster Marlin kernels where it can), so no flag is written. */
	out->repo = ckpt ? ckpt : own;
	out->quantization = !ckpt && f == PLAN_VLLM_FP8 ? "fp8" : NULL;
	return 0;
}

int plan_vllm_precision(enum plan_vllm_format f)
{
	return f == PLAN_VLLM_FP8   ? VLLM_FP8 :
	       f == PLAN_VLLM_AWQ   ? VLLM_AWQ :
	       f == PLAN_VLLM_MXFP4 ? VLLM_MXFP4 :
				      VLLM_BF16;
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

void plan_weights_sum(const struct model_arch *a, const struct rf_mem_weights *w, int ftype,
		      int repack_isa, struct plan_wsum *out)
{
	double all = (double)w->output_bytes, rep = (double)w->output_repack_bytes[repack_isa];

	memset(out, 0, sizeof(*out));
	for (int64_t l = 0; l < w->n_layer && l < MODEL_MAX_LAYERS; l++) {
		out->layers += (double)w->layer_bytes[l];
		out->experts += (double)w->layer_expert_bytes[l];
		all += (double)w->layer_bytes[l];
		rep += (double)w->layer_repack_bytes[repack_isa][l];
	}
	/* The CPU kernels: the share llama.cpp repacks on this CPU (core/fit/cpu/repack.h),
	 * which runs the interleaved kernels, and each weight type at its own kernels' rate
	 * (without typed matrices, the file type's). */
	out->ftype = ftype;
	out->repacked_share = all > 0 && rep < all ? rep / all : all > 0 ? 1 : 0;
	(void)rf_weights_cpu_mix(
		w, repack_isa,
		a->n_experts > 0 ? (double)a->n_experts_per_tok / (double)a->n_experts : 1,
		&out->cpu_mix);
	for (int f = 0; f < SPEED_HISTORY_FIGURES; f++)
		out->calib.basis[f] = SPEED_BASIS_ROOFLINE;
}

void plan_wsum_rates(struct plan_wsum *sum, const struct plan_machine *hw)
{
	/* The host as plan_speed_model gives it to a setup of this format. */
	struct speed_input in = hw->speed;

	in.weight_ftype = sum->ftype;
	in.weight_ftype_known = sum->ftype >= 0;
	in.repacked_share = sum->repacked_share;
	in.cpu_mix = sum->cpu_mix;
	in.host_rates_known = false;
	sum->host_rates_known = speed_host_rates(&in, &sum->host_rates);
}

void plan_llama_bench_setup(const struct model_arch *a, const struct plan_machine *hw, int ftype,
			    struct plan_setup *out)
{
	memset(out, 0, sizeof(*out));
	out->runtime = PLAN_RT_LLAMA_CPP;
	out->ftype = ftype;
	rf_infer_params_default(&out->p);
	if (a->max_position_embeddings > 0 && out->p.n_ctx > a->max_position_embeddings)
		out->p.n_ctx = a->max_position_embeddings;
	if (hw->n_dev == 0)
		out->p.n_gpu_layers = 0;
}

int plan_wsum_calibrate(struct plan_wsum *out, const struct model_arch *a,
			const struct model_params *mp, const struct rf_mem_weights *w,
			const struct plan_machine *hw, const struct speed_calibration *c,
			const struct model_entry *model, const char *name)
{
	int rc = speed_calib_figures(c, model, name, out->ftype, &out->calib);
	struct plan_llama_speed sp;
	struct plan_setup s;
	struct plan_wsum plain;
	struct plan_result r;

	if (rc < 0) {
		for (int f = 0; f < SPEED_HISTORY_FIGURES; f++)
			out->calib.basis[f] = SPEED_BASIS_ROOFLINE;
		return rc;
	}
	if (out->calib.basis[SPEED_TEST_DECODE] != SPEED_BASIS_MEASURED &&
	    out->calib.basis[SPEED_TEST_PREFILL] != SPEED_BASIS_MEASURED)
		return 0;
	/* The runs of this model and format ran llama-bench's setup: what they measured is that
	 * setup's roofline times an efficiency, which other setups of the format share. */
	plain = *out;
	for (int f = 0; f < SPEED_HISTORY_FIGURES; f++)
		plain.calib.basis[f] = SPEED_BASIS_ROOFLINE;
	plan_llama_bench_setup(a, hw, out->ftype, &s);
	if (plan_evaluate_llama(a, mp, w, &plain, hw, &s, &r, &sp, NULL) < 0)
		return 0; /* no roofline for it: the speed stands for every setup */
	for (int f = 0; f < SPEED_HISTORY_FIGURES; f++)
		out->calib.run_roofline[f] = sp.roofline[f];
	return 0;
}

void plan_speed_model(const struct model_params *mp, const struct rf_mem_weights *w,
		      const struct plan_wsum *sum, const struct rf_mem_estimate *m,
		      const struct rf_infer_params *p, struct speed_input *in)
{
	const int ftype = sum->ftype;
	double active_share = mp->total > 0 ? (double)mp->active / (double)mp->total : 1;
	const double layer_bytes = sum->layers, expert_bytes = sum->experts;

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
	in->weight_ftype = ftype;
	in->weight_ftype_known = ftype >= 0;
	in->repacked_share = sum->repacked_share;
	in->cpu_mix = sum->cpu_mix;
	in->host_rates_known = sum->host_rates_known;
	if (sum->host_rates_known)
		in->host_rates = sum->host_rates;
	in->gpu_fraction = w->n_layer > 0 ? (double)m->n_gpu_layers / (double)w->n_layer : 0;
	/* Prefill copies host weights once per micro-batch; with --no-mmap llama.cpp keeps them
	 * in the GPU's pinned host buffer, mapped (the default) they are pageable. */
	in->n_ubatch = m->n_ubatch > 0 ? (int)m->n_ubatch : (int)p->n_ubatch;
	in->host_pinned = !p->use_mmap;
	/* What a micro-batch copies: the first layers llama.cpp leaves on the host, whole, the
	 * experts n_cpu_moe keeps there, and the output layer when it stays there too (its
	 * matrix runs on the GPU like the rest; token embeddings are looked up on the host). */
	{
		/* Summed in integers: every partial sum is below 2^53 bytes, so each is the double
		 * a running sum of doubles would hold. */
		int64_t copy = m->experts_host_bytes, experts = m->experts_host_bytes;
		for (int64_t l = 0; l < w->n_layer - m->n_gpu_layers && l < MODEL_MAX_LAYERS; l++) {
			copy += (int64_t)w->layer_bytes[l];
			experts += (int64_t)w->layer_expert_bytes[l];
		}
		in->host_copy_bytes = (double)copy;
		in->host_expert_bytes = (double)experts;
	}
	/* Of the routed experts there, a micro-batch copies those its tokens route to. */
	in->n_experts = mp->expert > 0 && mp->n_experts_used > 0 ? (int)mp->n_experts : 0;
	in->n_experts_used = in->n_experts > 0 ? (int)mp->n_experts_used : 0;
	if (!m->output_on_gpu)
		in->host_copy_bytes += (double)w->output_bytes;
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

/* Aggregate decode of the setup's n_parallel streams (speed_batched) at the start of their
 * generation, as decode_tps is one stream's (tg128): the speed does not depend on the context
 * allocated, only on the context in use, which grows alike for every setup; a single stream's
 * decode when the batched model cannot say (a device without a compute rate). The roofline's
 * figure is put on the machine's recorded runs as single's was: times factor (> 0). */
static double batched_tps(const struct model_arch *a, const struct speed_input *in,
			  const struct speed_params *params, int64_t n, double expert_bytes,
			  double single, double factor)
{
	struct speed_batch b;
	struct speed_batch_output o;

	if (n <= 1)
		return single;
	memset(&b, 0, sizeof(b));
	b.n_streams = (int)n;
	b.kv_bytes_per_stream = in->kv_bytes_start;
	if (a->n_experts > 0 && a->n_experts_per_tok > 0 && expert_bytes > 0) {
		b.expert_bytes = expert_bytes;
		b.n_experts = (int)a->n_experts;
		b.n_experts_used = (int)a->n_experts_per_tok;
	}
	if (speed_batched_with(in, params, &b, &o) < 0 || o.aggregate_tokens_per_s <= 0)
		return single;
	return factor > 0 ? o.aggregate_tokens_per_s * factor : o.aggregate_tokens_per_s;
}

unsigned plan_llama_traffic(const struct rf_infer_params *p, int64_t n_ctx, struct plan_traffic *t)
{
	unsigned w = 0;

	if (t->concurrency > p->n_parallel) {
		t->concurrency = p->n_parallel;
		w |= PLAN_WARN_SLOTS_FULL;
	}
	if (t->prompt + t->output > n_ctx / p->n_parallel)
		w |= PLAN_WARN_SLOT_SHORT;
	return w;
}

int plan_batched(const struct model_arch *a, const struct model_params *mp,
		 const struct speed_input *in,
		 const struct speed_params params[SPEED_BACKEND_COUNT], double kv_per_token,
		 const struct plan_traffic *t, struct speed_batch_output *out, bool *moe)
{
	struct speed_batch b;

	memset(&b, 0, sizeof(b));
	b.n_streams = (int)t->concurrency;
	b.kv_bytes_per_stream = kv_per_token * ((double)t->prompt + (double)t->output / 2.0);
	b.prompt_tokens = (double)t->prompt;
	if (a->n_experts > 1 && mp->expert > 0 && mp->total > 0 && mp->active > 0) {
		/* in->weight_bytes holds the active share; the experts' part of all weights
		 * scales with their share of the parameters. */
		double all = in->weight_bytes * (double)mp->total / (double)mp->active;
		b.expert_bytes = all * (double)mp->expert / (double)mp->total;
		b.n_experts = (int)a->n_experts;
		b.n_experts_used = (int)a->n_experts_per_tok;
	}
	*moe = b.n_experts > 0;
	return speed_batched_with(in, params, &b, out);
}

int plan_vllm_tp(const struct model_arch *a, const struct plan_machine *hw)
{
	int64_t kv = a->n_kv_heads > 0 ? a->n_kv_heads : a->n_heads;
	int tp = 1;

	if (hw->n_vgpu < 1)
		return 0;
	while (tp * 2 <= hw->n_vgpu && a->n_heads % (tp * 2) == 0 &&
	       (kv % (tp * 2) == 0 || (tp * 2) % kv == 0))
		tp *= 2;
	return tp;
}

int plan_vllm_capacity(const struct model_arch *a, const struct vllm_facts *f,
		       const struct plan_machine *hw, const struct plan_setup *s,
		       struct vllm_capacity *out)
{
	struct vllm_setup v;

	vllm_setup_default(&v);
	v.precision = plan_vllm_precision(s->vformat);
	v.kv_dtype = s->p.type_k != RF_GT_F16 ? VLLM_KV_FP8 : VLLM_KV_AUTO;
	v.tensor_parallel = s->tp > 0 ? s->tp : 1;
	v.gpu_memory_utilization = s->vllm_util > 0 ? s->vllm_util : PLAN_VLLM_GPU_UTIL;
	/* Sized before the length is checked: the smallest length asks only for the cache. */
	v.max_model_len = s->p.n_ctx > 0 ? s->p.n_ctx : VLLM_DEFAULT_BLOCK_SIZE;
	v.max_num_seqs = s->max_num_seqs;
	return f ? vllm_capacity_with(a, f, &v, hw->vgpu, hw->n_vgpu, out, NULL) :
		   vllm_capacity(a, &v, hw->vgpu, hw->n_vgpu, out, NULL);
}

void plan_vllm_speed_input(const struct model_arch *a, const struct model_params *mp,
			   const struct speed_device *dev, const struct vllm_capacity *c,
			   bool quantized, int64_t ctx_full, struct speed_input *in,
			   struct speed_params params[SPEED_BACKEND_COUNT])
{
	struct speed_device d = *dev;
	double active = mp->total > 0 ? (double)mp->active / (double)mp->total : 1;

	/* The ranks of a stage read their shards side by side (one device of tp x the bandwidth
	 * and compute), the stages run one after the other, without llama.cpp's kernel
	 * ceilings; each layer adds its all-reduces. */
	d.bandwidth_gbs *= c->tensor_parallel;
	d.compute_tflops *= c->tensor_parallel;
	d.layer_share = 0;
	in->n_devices = c->pipeline_parallel > 0 ? c->pipeline_parallel : 1;
	for (int i = 0; i < in->n_devices; i++)
		in->devices[i] = d;
	in->weight_bytes = (double)c->weights_bytes_total * active;
	in->moe_batch_bytes = mp->expert > 0 ? (double)c->weights_bytes_total * (1 - active) : 0;
	in->kv_bytes_start = 0;
	in->kv_bytes_full = (double)c->kv_bytes_per_token * c->tensor_parallel * in->n_devices *
			    (double)ctx_full;
	in->flops_per_token = 2.0 * (double)mp->active;
	in->n_layers = (int)model_n_layer(a);
	in->quantized = quantized;
	in->gpu_fraction = 1;
	memcpy(params, speed_fitted, sizeof(struct speed_params) * SPEED_BACKEND_COUNT);
	for (int b = 0; b < SPEED_BACKEND_COUNT; b++) {
		params[b].mem_ceiling_gbs = 0;
		params[b].mem_eff_hbm = 0; /* llama.cpp's lower HBM share is its kernels' */
		if (c->tensor_parallel > 1)
			params[b].layer_ms += PLAN_VLLM_ALLREDUCE_MS;
	}
}

void plan_vllm_figures(const struct model_arch *a, const struct model_params *mp,
		       const struct plan_machine *hw, const struct vllm_capacity *c, bool quantized,
		       int64_t n_ctx, int64_t streams, int64_t seq_ctx, struct plan_result *out,
		       struct speed_input *in_out, struct speed_params *params_out)
{
	struct speed_params params[SPEED_BACKEND_COUNT];
	struct speed_input in = hw->speed;
	struct speed_device dev = in.devices[0];
	const int used = c->tensor_parallel * c->pipeline_parallel;
	const int64_t per_gpu = c->requested_bytes + c->cuda_graph_bytes;

	memset(out, 0, sizeof(*out));
	out->mem.weights_bytes = c->weights_bytes_total;
	out->mem.kv_cache_bytes = c->kv_cache_bytes * used;
	out->mem.compute_bytes = c->activation_bytes * used;
	out->mem.overhead_bytes = (c->non_torch_bytes + c->cuda_graph_bytes) * used;
	out->mem.total_bytes = per_gpu * used;
	out->mem.n_devices = used < RF_MAX_DEVICES ? used : RF_MAX_DEVICES;
	out->mem.n_ctx = n_ctx;
	out->mem.n_gpu_layers = model_n_layer(a);
	out->mem.output_on_gpu = true;
	for (int i = 0; i < out->mem.n_devices; i++) {
		struct rf_mem_device_use *d = &out->mem.per_device[i];
		if (i < hw->n_dev)
			rf_format(d->device, sizeof(d->device), "%s", hw->dev[i].name);
		d->layers = model_n_layer(a) / c->pipeline_parallel;
		d->output = true;
		d->weights_bytes = c->weights_bytes;
		d->kv_bytes = c->kv_cache_bytes;
		d->compute_bytes = c->activation_bytes;
		d->overhead_bytes = c->non_torch_bytes + c->cuda_graph_bytes;
		d->bytes = per_gpu;
		d->budget_bytes = c->cuda_total_bytes;
	}
	out->gpu_util = c->cuda_total_bytes > 0 ? (double)per_gpu / (double)c->cuda_total_bytes : 2;
	out->mem.utilization = out->gpu_util;
	out->kv_tokens = c->kv_cache_tokens;
	/* vLLM starts, one request may fill --max-model-len, and the planned requests hold
	 * their planned length together (vLLM queues or preempts beyond that). */
	out->fits = c->fits && c->kv_cache_tokens >= n_ctx &&
		    c->kv_cache_tokens >= streams * (seq_ctx > 0 ? seq_ctx : n_ctx);
	out->mem.fits = out->fits;
	out->mem.fit_band = out->fits ? rf_fit_band(out->gpu_util) : "over";

	plan_vllm_speed_input(a, mp, &dev, c, quantized, n_ctx, &in, params);
	if (in_out)
		*in_out = in;
	if (params_out)
		memcpy(params_out, params, sizeof(params));
	out->decode_tps = speed_predict(&in, params, SPEED_TEST_DECODE);
	out->aggregate_tps = batched_tps(a, &in, params, streams,
					 mp->total > 0 ?
						 (double)c->weights_bytes_total *
							 (double)mp->expert / (double)mp->total :
						 0,
					 out->decode_tps, 1);
	in.kv_bytes_start = in.kv_bytes_full;
	out->decode_tps_full_ctx = speed_predict(&in, params, SPEED_TEST_DECODE);
}

void plan_vllm_result(const struct model_arch *a, const struct model_params *mp,
		      const struct plan_machine *hw, const struct plan_setup *s,
		      const struct vllm_capacity *c, struct plan_result *out)
{
	plan_vllm_figures(a, mp, hw, c, s->vformat != PLAN_VLLM_BF16, s->p.n_ctx,
			  s->p.n_parallel > 0 ? s->p.n_parallel : 1, s->vllm_seq_ctx, out, NULL,
			  NULL);
}

int plan_evaluate_llama(const struct model_arch *a, const struct model_params *mp,
			const struct rf_mem_weights *w, const struct plan_wsum *sum,
			const struct plan_machine *hw, const struct plan_setup *s,
			struct plan_result *out, struct plan_llama_speed *speed,
			struct speed_input *in_out)
{
	struct speed_input local, *in = in_out ? in_out : &local;
	struct rf_infer_params p = s->p;
	double roof, full, factor;
	int rc;

	if (p.n_ctx < 0) {
		int64_t best = 0;
		rc = rf_estimate_max_ctx(a, w, &p, hw->dev, hw->n_dev, &hw->host, &best, &out->mem);
		p.n_ctx = best;
	} else {
		rc = rf_estimate_inference(a, w, &p, hw->dev, hw->n_dev, &hw->host, &out->mem);
	}
	if (rc < 0)
		return rc;
	out->fits = out->mem.fits;
	out->gpu_util = plan_gpu_util(&out->mem);
	out->kv_tokens = 0;
	*in = hw->speed;
	plan_speed_model(mp, w, sum, &out->mem, &p, in);
	/* Every figure is the roofline's, put on what the runs recorded on this machine say of
	 * this model and format (the same for all its setups). */
	speed_predict_decode_span(in, speed_fitted, &roof, &full);
	out->decode_tps = speed_calib_apply(&sum->calib, SPEED_TEST_DECODE, roof, &factor,
					    &out->decode_basis);
	out->aggregate_tps = out->decode_tps;
	if (p.n_parallel > 1)
		out->aggregate_tps = batched_tps(a, in, speed_fitted, p.n_parallel, sum->experts,
						 out->decode_tps, factor);
	if (speed) {
		speed->roofline[SPEED_TEST_DECODE] = roof;
		speed->tps[SPEED_TEST_DECODE] = out->decode_tps;
		speed->factor[SPEED_TEST_DECODE] = factor;
		speed->basis[SPEED_TEST_DECODE] = out->decode_basis;
		speed->roofline[SPEED_TEST_PREFILL] =
			speed_predict(in, speed_fitted, SPEED_TEST_PREFILL);
		speed->tps[SPEED_TEST_PREFILL] = speed_calib_apply(
			&sum->calib, SPEED_TEST_PREFILL, speed->roofline[SPEED_TEST_PREFILL],
			&speed->factor[SPEED_TEST_PREFILL], &speed->basis[SPEED_TEST_PREFILL]);
	}
	/* With the whole context filled: its KV bytes are read for every token; the host runs
	 * as it does at the start (decode's factor). */
	out->decode_tps_full_ctx = factor > 0 && full > 0 ? full * factor : -1;
	if (speed)
		speed->decode_full_ctx = out->decode_tps_full_ctx;
	return 0;
}
