/*
 * Fine-tuning throughput (see train_speed.h).
 *
 * FLOPs per token, with N the weights a token multiplies (attention and FFN projections of
 * its routed experts, the output head; embeddings are a lookup) and A = 2 x q_dim x seq per
 * layer the causal attention scores and values of one token (half the sequence on average,
 * two matmuls, two FLOPs each):
 *   forward 2N + A; backward of the activations 2N + 2A; weight gradients 2N (full only);
 *   adapters 6 x their parameters; recomputation with checkpointing one more forward.
 * So 6N (+ 8N with checkpointing) for full fine-tuning and 4N (6N) plus adapters for LoRA.
 *
 * Memory-bound work per step: bitsandbytes dequantises every NF4 weight to 16 bits before each
 * matmul (read 0.5 bytes, write 2, the matmul reads 2) in each pass; PEFT reads each adapted
 * layer's input again for dropout and the A projection (read, write, read) in each pass; the
 * optimizer reads and writes every state once; packed rows without a varlen kernel read their
 * block-diagonal mask in every layer and pass.
 */
#include "core/fit/train_speed.h"

#include <math.h>

#include "core/err.h"
#include "core/fit/train_parallel.h"

/* Utilisation of the dense bf16 (fp32 accumulate) peak, fitted per device class to the
 * torchtune README's tokens/s (batch 2, packed 2048, torch.compile; see tests/train_calib.c):
 * the RTX 4090 rows give 0.47-0.60, the RTX A6000 rows 0.80-0.97 of the peak with this FLOP
 * count, the 8x A100 rows 0.39-0.42. A class without rows takes the consumer figure. */
#define UTIL_CONSUMER 0.52
#define UTIL_WORKSTATION 0.85
#define UTIL_DATACENTER 0.40
/* Unsloth states 2x Hugging Face + FA2 for QLoRA on Llama 3.1 8B and 3.3 70B (README). */
#define UNSLOTH_SPEEDUP 2.0
/* Share of the memory bandwidth that small memory-bound kernels reach. */
#define BANDWIDTH_EFFICIENCY 0.7
/* Collective bandwidth per GPU when the request gives none: NVLink in data-centre nodes,
 * PCIe through the host otherwise, and 200 Gb/s between nodes. */
#define LINK_NVLINK_GBS 200.0
#define LINK_PCIE_GBS 12.0
#define LINK_INTERNODE_GBS 25.0
/* Host <-> GPU copies of offloaded states (PCIe 4.0 x16, achieved). */
#define OFFLOAD_PCIE_GBS 20.0
/* Share of the communication that overlaps backward (DDP buckets, ZeRO prefetch). */
#define COMM_OVERLAP 0.67

static double matmul_params(const struct train_model *m)
{
	double h = (double)m->hidden, i = (double)m->intermediate;
	double q = (double)(m->n_heads * m->head_dim), kv = (double)(m->n_kv_heads * m->head_dim);
	double k = m->n_experts > 1 && m->n_experts_per_tok > 0 ? (double)m->n_experts_per_tok : 1;
	double layer = h * q + 2 * h * kv + q * h + k * (m->gated_ffn ? 3 : 2) * h * i;
	return layer * (double)m->n_layers + h * (double)m->vocab;
}

double train_flops_per_token(const struct train_model *m, const struct train_settings *s)
{
	double n = matmul_params(m);
	double a =
		2.0 * (double)(m->n_heads * m->head_dim) * (double)s->seq_len * (double)m->n_layers;
	double fwd = 2 * n + a, flops = fwd + 2 * n + 2 * a;

	if (s->mode == TRAIN_FULL)
		flops += 2 * n;
	else
		flops += 6.0 * (double)s->lora_rank *
			 (double)train_lora_params_per_rank(m, s->lora_targets);
	if (s->gradient_checkpointing)
		flops += fwd;
	return flops;
}

double train_utilisation(enum train_device_class c, enum train_provider p)
{
	double u = c == TRAIN_CLASS_WORKSTATION ? UTIL_WORKSTATION :
		   c == TRAIN_CLASS_DATACENTER  ? UTIL_DATACENTER :
						  UTIL_CONSUMER;
	/* Unsloth's gain, capped below the peak. */
	if (p == TRAIN_PROVIDER_UNSLOTH)
		u = fmin(u * UNSLOTH_SPEEDUP, 0.95);
	return u;
}

/* Bytes read and written per step by memory-bound kernels on one GPU. */
static double memory_bytes(const struct train_model *m, const struct train_settings *s,
			   const struct train_memory *mem, double tokens)
{
	double passes = s->gradient_checkpointing ? 3.0 : 2.0, bytes = 0;
	double h = (double)m->hidden, i = (double)m->intermediate;

	if (s->mode == TRAIN_QLORA) {
		double linear = (double)(m->params_total - m->params_embedding - m->params_output);
		bytes += passes * linear * (0.5 + 2.0 + 2.0);
	}
	if (s->mode != TRAIN_FULL) {
		unsigned t = s->lora_targets ? s->lora_targets : TRAIN_LORA_ALL_LINEAR;
		double in = 0;
		double q = (double)(m->n_heads * m->head_dim);
		in += (t & TRAIN_LORA_Q) ? h : 0;
		in += (t & TRAIN_LORA_K) ? h : 0;
		in += (t & TRAIN_LORA_V) ? h : 0;
		in += (t & TRAIN_LORA_O) ? q : 0;
		in += (t & TRAIN_LORA_GATE) && m->gated_ffn ? h : 0;
		in += (t & TRAIN_LORA_UP) ? h : 0;
		in += (t & TRAIN_LORA_DOWN) ? i : 0;
		bytes += passes * 3.0 * 2.0 * in * (double)m->n_layers * tokens;
	}
	/* SDPA with a mask (packed or padded rows): every layer's attention reads the seq x seq
	 * mask in each pass. */
	if (train_attention_mask(s) == TRAIN_MASK_SDPA)
		bytes += passes * (double)m->n_layers * tokens * (double)s->seq_len * 2.0;
	/* The optimizer step reads gradients and states and writes states and weights. */
	bytes += 2.0 * (double)(mem->weights_bytes + mem->adapter_bytes + mem->gradients_bytes +
				mem->optimizer_bytes);
	return bytes;
}

int train_speed_estimate(const struct train_model *m, const struct train_settings *s,
			 const struct train_memory *mem, const struct train_device *dev,
			 struct train_speed *out)
{
	struct train_speed r = {0};
	double tokens = (double)s->batch_size * (double)s->seq_len;
	double bw, link, alone;
	int n = mem->n_gpus > 0 ? mem->n_gpus : 1;
	int per_node = train_gpus_per_node(s);

	if (!(dev->bf16_tflops > 0) || !isfinite(dev->bf16_tflops) || dev->bf16_tflops > 1e5)
		return RF_E_INVALID_VALUE;
	if (s->objective != TRAIN_OBJECTIVE_SFT)
		tokens *= 2;
	bw = dev->bandwidth_gbs > 0 ? dev->bandwidth_gbs : 500.0;
	link = dev->link_gbs > 0                           ? dev->link_gbs :
	       dev->device_class == TRAIN_CLASS_DATACENTER ? LINK_NVLINK_GBS :
							     LINK_PCIE_GBS;
	if (s->nodes > 1)
		link = fmin(link, dev->internode_gbs > 0 ? dev->internode_gbs : LINK_INTERNODE_GBS);

	r.flops_per_token = train_flops_per_token(m, s);
	r.utilisation = train_utilisation(dev->device_class, s->provider);
	r.compute_s = r.flops_per_token * tokens / (dev->bf16_tflops * 1e12 * r.utilisation);
	r.memory_s = memory_bytes(m, s, mem, tokens) / (bw * 1e9 * BANDWIDTH_EFFICIENCY);
	/* Offloaded states cross PCIe twice a step (gradients out, weights back). */
	r.offload_s = 2.0 * (double)mem->host_bytes / (double)per_node / (OFFLOAD_PCIE_GBS * 1e9);
	if (s->provider == TRAIN_PROVIDER_UNSLOTH && s->gradient_checkpointing)
		r.offload_s = 0; /* Unsloth overlaps its checkpoint copies with compute */
	if (n > 1) {
		double comm = (double)mem->comm_bytes_per_step / (link * 1e9);
		r.comm_s = fmax(0.0, comm - COMM_OVERLAP * r.compute_s);
	}
	alone = r.compute_s + r.memory_s + r.offload_s;
	r.step_s = alone + r.comm_s;
	r.tokens_per_s = tokens * (double)n / r.step_s;
	r.scaling = alone / r.step_s;
	*out = r;
	return 0;
}
