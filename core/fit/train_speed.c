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
 * Preference objectives add forwards without gradients (no recomputation, no backward), each
 * 2N + A (the policy's with its adapters' 2 x their parameters): DPO the reference's over the
 * chosen and rejected rows; KTO (TRL's KTOTrainer) the policy's over the KL batch (each prompt
 * with another row's completion, as long as the batch), and the reference's over the batch
 * and the KL batch; GRPO the reference's when beta > 0. Precomputed reference log-probs drop
 * the reference's forwards. For full fine-tuning without checkpointing KTO is 12N to SFT's
 * 6N, DPO 8N a sequence.
 *
 * GRPO generates the completions of one optimizer step (batch_size x accumulation steps a
 * GPU) before training on them: a prefill of the prompts (2N + A a token, at the training
 * GEMMs' rate) and one decoding step per completion token, each reading the weights once and
 * every row's KV cache at its mean length, at BANDWIDTH_EFFICIENCY of the bandwidth, or its
 * rows' FLOPs where those take longer. model.generate reads the weights as training holds them
 * (NF4 dequantised to 16 bits per step for QLoRA) and pays PEFT's dispatch per adapted
 * projection and step; vLLM reads its own 16-bit copy. Completions are taken at
 * max_completion_length, the bound (generation stops at the longest row of the batch).
 *
 * The attention's matmuls (flash or SDPA kernels) reach a smaller share of the peak than the
 * projections' GEMMs: ATTENTION_SHARE of the class utilisation.
 *
 * Memory-bound work per step: bitsandbytes dequantises every NF4 weight to 16 bits before each
 * matmul (read 0.5 bytes, write 2, the matmul reads 2) in each pass; packed rows without a
 * varlen kernel read their block-diagonal mask in every layer and pass. Hugging Face's
 * element-wise kernels reach a smaller share of the bandwidth, on tensors the size of the
 * activations:
 * - PEFT's LoRA, per adapted projection of input a and output b, per token: the forward
 *   drops out the input (read 2a, write 2a and a 1-byte mask), the A projection reads it
 *   (2a), and B's output is written, scaled and added to the base output (12b); the backward
 *   scales B's gradient and reads it for both of B's products (8b), writes the input's
 *   gradient and reads the dropped input for A's (4a), undoes the dropout (5a) and adds into
 *   the input's gradient (6a): 22a + 20b, 10a fewer without dropout, the forward's again
 *   with checkpointing. Each adapted projection also costs PEFT's Python and autograd
 *   dispatch per pass (TRAIN_PEFT_HOST_S), which short sequences feel.
 * - A mixture of experts in Hugging Face's block: it loops over the experts a micro-batch's
 *   tokens reach (train_experts_hit; all 128 of Qwen3-30B-A3B at 2048 tokens) and PEFT wraps
 *   each expert's linear layers, so the dispatch counts every reached expert's adapted
 *   projections, and each token's traffic its experts_per_tok experts'. That is why MoE LoRA
 *   under transformers and PEFT runs at a few percent of the GPU (QwenLM/Qwen3 issue 736,
 *   LLaMA-Factory issue 8038, transformers PR 40016: under 20% MFU). Unsloth's fused path
 *   pays only the extra reads of each token's experts' inputs.
 * - torch's AdamW (foreach) makes about ten passes over each parameter's state: lerp of the
 *   first moment, scale and addcmul of the second, weight decay, its square root, two scalar
 *   ops on that, and addcdiv into the weight: 20 element accesses a parameter in the
 *   moments' dtype, ten times the moments' bytes. Other optimizers read and write each state
 *   once (fused kernels).
 * - Eager attention writes and reads the batch x heads x seq x seq scores in every layer:
 *   the product, the mask's addition, an fp32 softmax and its cast back, the product with v
 *   (22 bytes a score), and twice that in backward (30); checkpointing runs the forward again.
 *
 * Fitted to our H200 runs of the Hugging Face stack (tests/fixtures/training/gpu_peaks.csv):
 * the projections at 0.60 of the bf16 peak, attention at 0.36, LoRA's element-wise traffic at
 * 0.25 of the bandwidth, AdamW's and eager attention's at 0.43, 100 us of host time an adapted
 * projection and pass: 4% median error and 9% at the 90th percentile over 58 rows, where the
 * FLOPs at one utilisation missed by 24%. A grid over the host time (100-160 us), the LoRA
 * share (0.20-0.40), the attention's (0.5-0.7) and the projections' (0.57-0.63) moves the
 * median by 3-5% only; 100 us is the one that also keeps LoRA on q and v 1.65x faster than
 * on every projection at 2k tokens, and 24k tokens 0.86x of 2k, as measured.
 */
#include "core/fit/train_speed.h"

#include <math.h>
#include <stddef.h>

#include "core/err.h"
#include "core/fit/train_optimizer.h"
#include "core/fit/train_parallel.h"

/* Utilisation of the dense bf16 (fp32 accumulate) peak by the projections' GEMMs, fitted per
 * device class:
 * - data-centre 0.60: our H200 runs of the Hugging Face stack (above), which torchtune's 8x
 *   A100 runs (tests/train_calib.c: FSDP, checkpointing on as their configs and peaks say,
 *   compiled) and LLaMA-Factory's A100 comparison of Hugging Face and Unsloth meet within
 *   3-15% with the same figure;
 * - consumer 0.52 and workstation 0.85: torchtune's RTX 4090 and RTX A6000 runs (batch 2,
 *   packed 2048, compiled), 0.47-0.60 and 0.80-0.97 with this FLOP count; the A6000's share is
 *   unusually high and its LoRA row still 22% slow (see the note in tests/train_calib.c).
 * A class without rows takes the consumer figure. */
#define UTIL_CONSUMER 0.52
#define UTIL_WORKSTATION 0.85
#define UTIL_DATACENTER 0.60
/* Unsloth's gain is in the work around the GEMMs: its fused LoRA, RoPE, RMSNorm, loss and
 * dequantisation kernels and no PEFT dispatch (memory_seconds leaves PEFT's traffic and host
 * time out for it). Its GEMMs are cuBLAS's, as anyone's, so its projections reach the same
 * share of the peak: no doubled utilisation for its "2x" claim. Checked against LLaMA-Factory's
 * A100 comparison (Llama-2-7B, rank 8, batch 4 x 1024, quoted in Unsloth's README; the rows
 * are in tests/data/calibration/training_speed_llamafactory.csv): Unsloth+FA2 runs 1.68x
 * (LoRA) and 1.54x (QLoRA) Hugging Face's speed, the model 1.81x and 1.75x; in tokens/s the
 * four rows are within 3-9% (Hugging Face's QLoRA ran as fast as its LoRA there, where
 * dequantisation costs it 4% here). */
/* Share of the memory bandwidth that small memory-bound kernels reach. */
#define BANDWIDTH_EFFICIENCY 0.7
/* The attention's matmuls against the projections' (H200: 0.36 against 0.60 of the peak). */
#define ATTENTION_SHARE 0.6
/* Shares of the bandwidth that Hugging Face's element-wise kernels reach: PEFT's LoRA path,
 * torch's foreach AdamW and eager attention's score tensors (H200 fit, above). */
#define LORA_BANDWIDTH_EFFICIENCY 0.25
#define ELEMENTWISE_BANDWIDTH_EFFICIENCY 0.43
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

/* The forwards without gradients the objective adds to each trained token (see the top of
 * this file). */
static double no_grad_forwards(const struct train_settings *s)
{
	double ref = train_has_reference(s) ? 1.0 : 0.0;

	return s->objective == TRAIN_OBJECTIVE_KTO ? 1.0 + 2.0 * ref : ref;
}

/* The attention scores' and values' FLOPs of one token: forward, backward (twice), the
 * forward again with checkpointing, and the objective's forwards without gradients. */
static double attention_flops_per_token(const struct train_model *m, const struct train_settings *s)
{
	double a =
		2.0 * (double)(m->n_heads * m->head_dim) * (double)s->seq_len * (double)m->n_layers;
	return a * ((s->gradient_checkpointing ? 4.0 : 3.0) + no_grad_forwards(s));
}

double train_flops_per_token(const struct train_model *m, const struct train_settings *s)
{
	double n = matmul_params(m);
	double a =
		2.0 * (double)(m->n_heads * m->head_dim) * (double)s->seq_len * (double)m->n_layers;
	double fwd = 2 * n + a, flops = fwd + 2 * n + 2 * a, adapters = 0;

	if (s->mode == TRAIN_FULL) {
		flops += 2 * n;
	} else {
		adapters = (double)s->lora_rank *
			   (double)train_lora_params_per_rank(m, s->lora_targets);
		flops += 6.0 * adapters;
	}
	if (s->gradient_checkpointing)
		flops += fwd;
	/* Forwards without gradients (see the top of this file): KTO's KL batch through the
	 * policy carries its adapters. */
	flops += fwd * no_grad_forwards(s);
	if (s->objective == TRAIN_OBJECTIVE_KTO)
		flops += 2.0 * adapters;
	return flops;
}

double train_utilisation(enum train_device_class c, enum train_provider p)
{
	double u = c == TRAIN_CLASS_WORKSTATION ? UTIL_WORKSTATION :
		   c == TRAIN_CLASS_DATACENTER  ? UTIL_DATACENTER :
						  UTIL_CONSUMER;
	(void)p; /* the providers differ in their memory-bound work, not their GEMMs */
	return u;
}

/* The adapted projections of one layer as a token and a micro-batch meet them: their inputs'
 * and outputs' widths summed over what one token passes through (in, out), and how many
 * adapted modules the micro-batch calls (n). */
struct adapted {
	double in, out, n;
};

double train_experts_hit(const struct train_model *m, double tokens)
{
	double e = (double)m->n_experts, k = (double)m->n_experts_per_tok;

	if (m->n_experts <= 1 || m->n_experts_per_tok <= 0)
		return 1.0;
	if (k >= e || !(tokens > 0))
		return tokens > 0 ? e : 0.0;
	return e * (1.0 - pow(1.0 - k / e, tokens));
}

/* For a mixture of experts the FFN projections are each expert's: PEFT wraps every expert's
 * linear layers, a token passes through its experts_per_tok of them, and the Hugging Face
 * block loops over the experts the micro-batch's tokens_mb tokens reach (train_experts_hit),
 * calling each one's adapted projections. */
static struct adapted adapted_projections(const struct train_model *m, unsigned targets,
					  double tokens_mb)
{
	double h = (double)m->hidden, i = (double)m->intermediate;
	double q = (double)(m->n_heads * m->head_dim), kv = (double)(m->n_kv_heads * m->head_dim);
	bool moe = m->n_experts > 1 && m->n_experts_per_tok > 0;
	double per_token = moe ? (double)m->n_experts_per_tok : 1.0;
	double called = moe ? train_experts_hit(m, tokens_mb) : 1.0;
	const struct {
		unsigned bit;
		double in, out;
		bool expert;
	} proj[] = {{TRAIN_LORA_Q, h, q, false},   {TRAIN_LORA_K, h, kv, false},
		    {TRAIN_LORA_V, h, kv, false},  {TRAIN_LORA_O, q, h, false},
		    {TRAIN_LORA_GATE, h, i, true}, {TRAIN_LORA_UP, h, i, true},
		    {TRAIN_LORA_DOWN, i, h, true}};
	struct adapted a = {0, 0, 0};

	if (targets == 0)
		targets = TRAIN_LORA_ALL_LINEAR;
	for (size_t k = 0; k < sizeof(proj) / sizeof(proj[0]); k++) {
		if (!(targets & proj[k].bit) || (proj[k].bit == TRAIN_LORA_GATE && !m->gated_ffn))
			continue;
		a.in += proj[k].in * (proj[k].expert ? per_token : 1.0);
		a.out += proj[k].out * (proj[k].expert ? per_token : 1.0);
		a.n += proj[k].expert ? called : 1.0;
	}
	return a;
}

/* The optimizer step's bytes on one GPU, added to *plain (kernels that read and write each
 * tensor once) and *elementwise (separate element-wise passes). The step touches what is
 * trained and what this GPU steps: the adapters, their gradients and states for LoRA and
 * QLoRA, never the frozen base, whichever optimizer; for full fine-tuning the weights too.
 * Under ZeRO or FSDP each GPU steps its shard (1/n of the trained weights; the states and
 * gradients are already per GPU in mem); with the optimizer offloaded the host steps and the
 * GPU only moves the tensors (offload_s). Foreach AdamW makes step_passes over its states,
 * Adafactor over fp32 copies of the gradients it steps, unless compiled into one kernel; a
 * fused or 8-bit step reads and writes each tensor once (core/fit/train_optimizer.c). */
static void step_seconds(const struct train_model *m, const struct train_settings *s,
			 const struct train_memory *mem, double *plain, double *elementwise)
{
	const struct train_optimizer_info *opt = train_optimizer_info(s->optimizer);
	bool sharded = s->strategy != TRAIN_STRATEGY_NONE && s->strategy != TRAIN_STRATEGY_DDP;
	double share = sharded && mem->n_gpus > 1 ? 1.0 / (double)mem->n_gpus : 1.0;
	double weights = 0.0;

	if (!opt || s->offload != TRAIN_OFFLOAD_NONE)
		return;
	/* The trained weights this GPU writes: the whole model on one GPU or under DDP; its
	 * 16-bit shard under ZeRO and FSDP (an fp32 master is in the optimizer's bytes), never
	 * the layers FSDP gathers for compute. */
	if (s->mode == TRAIN_FULL)
		weights = sharded ? 2.0 * (double)m->params_total * share :
				    (double)mem->weights_bytes;
	if (opt->step_passes > 0 && !s->compiled)
		*elementwise += opt->step_passes *
				(opt->factored ? 4.0 * (double)mem->trainable_params * share :
						 (double)mem->optimizer_bytes);
	else
		*plain += 2.0 * (weights + (double)(mem->adapter_bytes + mem->gradients_bytes +
						    mem->optimizer_bytes));
}

/* Seconds per step of the memory-bound kernels on one GPU (see the top of this file). */
static double memory_seconds(const struct train_model *m, const struct train_settings *s,
			     const struct train_memory *mem, double tokens, double bw)
{
	double passes = s->gradient_checkpointing ? 3.0 : 2.0, plain = 0, lora = 0, elementwise = 0;
	double host = 0, layer_tokens = (double)m->n_layers * tokens;
	double rows = tokens / (double)s->seq_len;
	struct adapted a = adapted_projections(m, s->lora_targets, tokens);

	if (s->mode == TRAIN_QLORA) {
		double linear = (double)(m->params_total - m->params_embedding - m->params_output);
		plain += passes * linear * (0.5 + 2.0 + 2.0);
	}
	if (s->mode != TRAIN_FULL && s->provider == TRAIN_PROVIDER_HUGGINGFACE && !s->compiled) {
		/* PEFT's path: 22a + 20b a token (10a fewer without dropout), the forward's
		 * 7a + 12b again with checkpointing (5a fewer without dropout). */
		double drop = s->lora_dropout ? 0.0 : 1.0;
		lora = ((22.0 - 10.0 * drop) * a.in + 20.0 * a.out) * layer_tokens;
		if (s->gradient_checkpointing)
			lora += ((7.0 - 5.0 * drop) * a.in + 12.0 * a.out) * layer_tokens;
		lora /= LORA_BANDWIDTH_EFFICIENCY;
		host = a.n * (double)m->n_layers * passes * TRAIN_PEFT_HOST_S;
	} else if (s->mode != TRAIN_FULL) {
		/* Unsloth's fused LoRA kernels, or a compiled LoRA path: one more read of each
		 * adapted input a pass. */
		plain += passes * 3.0 * 2.0 * a.in * layer_tokens;
	}
	/* SDPA with a mask (packed or padded rows): every layer's attention reads the seq x seq
	 * mask in each pass. */
	if (train_attention_mask(s) == TRAIN_MASK_SDPA)
		plain += passes * (double)m->n_layers * tokens * (double)s->seq_len * 2.0;
	if (!s->flash_attention)
		elementwise += rows * (double)m->n_heads * (double)s->seq_len * (double)s->seq_len *
			       (double)m->n_layers * (s->gradient_checkpointing ? 74.0 : 52.0);
	step_seconds(m, s, mem, &plain, &elementwise);
	return (plain / BANDWIDTH_EFFICIENCY + elementwise / ELEMENTWISE_BANDWIDTH_EFFICIENCY +
		lora) / (bw * 1e9) +
	       host;
}

/* Seconds one GPU spends generating the completions of a micro-batch (GRPO; see the top of
 * this file): the generation batch's prefill and decoding, shared by the accumulation steps
 * it serves. */
static double generation_seconds(const struct train_model *m, const struct train_settings *s,
				 const struct train_memory *mem, const struct train_device *dev,
				 double bw, double util)
{
	double rows = (double)train_generation_rows(s), steps = (double)s->completion_len;
	double prompt = (double)(s->seq_len - s->completion_len), n = matmul_params(m);
	double q = (double)(m->n_heads * m->head_dim), peak = dev->bf16_tflops * 1e12 * util;
	double weights, kv_step, prefill, decode, host = 0;
	int accum = s->grad_accum_steps > 1 ? s->grad_accum_steps : 1;

	if (s->generation == TRAIN_GEN_TRANSFORMERS) {
		weights = (double)(mem->weights_bytes + mem->adapter_bytes);
		if (s->mode == TRAIN_QLORA) {
			/* bitsandbytes dequantises every NF4 weight each step, as in training. */
			double linear =
				(double)(m->params_total - m->params_embedding - m->params_output);
			weights += linear * (2.0 + 2.0);
		}
		if (s->mode != TRAIN_FULL && s->provider == TRAIN_PROVIDER_HUGGINGFACE)
			host = adapted_projections(m, s->lora_targets, rows).n *
			       (double)m->n_layers * TRAIN_PEFT_HOST_S;
	} else {
		weights = 2.0 * (double)m->params_total;
	}
	/* Each row's cache at its mean length over the completion. */
	kv_step = rows * (prompt + steps / 2.0) * (double)train_kv_bytes_per_token(m);
	prefill = rows * prompt * (2.0 * n + 2.0 * q * prompt * (double)m->n_layers) / peak;
	decode = fmax((weights + kv_step) / (bw * 1e9 * BANDWIDTH_EFFICIENCY),
		      rows * 2.0 * n / peak);
	return (prefill + steps * (decode + host)) / (double)accum;
}

int train_speed_estimate(const struct train_model *m, const struct train_settings *s,
			 const struct train_memory *mem, const struct train_device *dev,
			 struct train_speed *out)
{
	struct train_speed r = {0};
	double tokens = (double)s->batch_size * (double)s->seq_len;
	double bw, link, alone, attention;
	int n = mem->n_gpus > 0 ? mem->n_gpus : 1;
	int per_node = train_gpus_per_node(s);

	if (!(dev->bf16_tflops > 0) || !isfinite(dev->bf16_tflops) || dev->bf16_tflops > 1e5)
		return RF_E_INVALID_VALUE;
	if (s->objective == TRAIN_OBJECTIVE_DPO || s->objective == TRAIN_OBJECTIVE_ORPO)
		tokens *= 2;
	bw = dev->bandwidth_gbs > 0 ? dev->bandwidth_gbs : 500.0;
	link = dev->link_gbs > 0                           ? dev->link_gbs :
	       dev->device_class == TRAIN_CLASS_DATACENTER ? LINK_NVLINK_GBS :
							     LINK_PCIE_GBS;
	if (s->nodes > 1)
		link = fmin(link, dev->internode_gbs > 0 ? dev->internode_gbs : LINK_INTERNODE_GBS);

	r.flops_per_token = train_flops_per_token(m, s);
	r.utilisation = train_utilisation(dev->device_class, s->provider);
	attention = attention_flops_per_token(m, s);
	r.compute_s = ((r.flops_per_token - attention) + attention / ATTENTION_SHARE) * tokens /
		      (dev->bf16_tflops * 1e12 * r.utilisation);
	r.memory_s = memory_seconds(m, s, mem, tokens, bw);
	/* Offloaded states cross PCIe twice a step (gradients out, weights back). */
	r.offload_s = 2.0 * (double)mem->host_bytes / (double)per_node / (OFFLOAD_PCIE_GBS * 1e9);
	if (s->provider == TRAIN_PROVIDER_UNSLOTH && s->gradient_checkpointing)
		r.offload_s = 0; /* Unsloth overlaps its checkpoint copies with compute */
	if (n > 1) {
		double comm = (double)mem->comm_bytes_per_step / (link * 1e9);
		r.comm_s = fmax(0.0, comm - COMM_OVERLAP * r.compute_s);
	}
	if (s->objective == TRAIN_OBJECTIVE_GRPO)
		r.generation_s = generation_seconds(m, s, mem, dev, bw, r.utilisation);
	alone = r.compute_s + r.memory_s + r.offload_s + r.generation_s;
	r.step_s = alone + r.comm_s;
	r.tokens_per_s = tokens * (double)n / r.step_s;
	r.scaling = alone / r.step_s;
	*out = r;
	return 0;
}
