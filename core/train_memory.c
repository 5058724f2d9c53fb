/*
 * The fine-tuning memory model (see train_memory.h). Each term is the mechanism it names:
 *
 * - Weights: full and LoRA hold the base in its dtype. QLoRA (bitsandbytes NF4 with double
 *   quantisation) stores 4 bits per weight of every linear layer plus one 8-bit absmax per
 *   block of 64 and one fp32 constant per 256 blocks; embeddings, the output head and norms
 *   stay in 16 bits.
 * - Adapters: rank x (in + out) per targeted linear, kept in fp32 as PEFT creates them.
 * - Gradients: of every trained weight, in the weights' dtype (fp32 for adapters).
 * - Optimizer: AdamW keeps two fp32 moments per trained weight (8 bytes); the 8-bit
 *   variants two bytes; SGD without momentum none. Full fine-tuning is taken as pure 16-bit
 *   (no fp32 master copy), which is what the Hugging Face Trainer does for a bf16 model.
 * - Activations: per token and layer, the tensors a LLaMA-style block saves for backward:
 *   the inputs of both norms and of the projections, q/k/v, the attention output, and the FFN
 *   intermediates (gate, up, activation, product); plus the seq x seq scores when attention
 *   is not flash. With gradient checkpointing only each layer's input is kept, and one layer
 *   is recomputed at a time; Unsloth offloads those checkpoints to host memory.
 * - Logits: the output projection of every token over the whole vocabulary, its fp32 upcast
 *   for the loss and the loss gradient, which dominate long sequences with 128k+ vocabularies.
 *   Unsloth's fused cross-entropy keeps only the 16-bit logits.
 * - Overhead: the CUDA context plus the caching allocator's slack.
 */
#include "core/train_memory.h"

#include "core/err.h"

#define GIB (1024LL * 1024 * 1024)
/* The CUDA context and the caching allocator's fixed part (cuBLAS workspaces). */
#define CUDA_CONTEXT_BYTES (GIB / 2)
/* Allocator fragmentation, as a share of what is allocated. */
#define ALLOCATOR_SLACK 0.05
/* bitsandbytes NF4 with double quantisation: 4 bits + 8/64 bits + 32/(64*256) bits. */
#define NF4_BITS_PER_WEIGHT (4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0))
/* Cap on every dimension: far above any real model, low enough that products fit int64. */
#define DIM_MAX (1LL << 24)

static int64_t q_dim(const struct train_model *m)
{
	return m->n_heads * m->head_dim;
}

static int64_t kv_dim(const struct train_model *m)
{
	return m->n_kv_heads * m->head_dim;
}

int64_t train_lora_params_per_rank(const struct train_model *m, unsigned targets)
{
	int64_t h = m->hidden, i = m->intermediate, per_layer = 0;
	int64_t experts = m->n_experts > 1 ? m->n_experts : 1;

	if (targets == 0)
		targets = TRAIN_LORA_ALL_LINEAR;
	if (targets & TRAIN_LORA_Q)
		per_layer += h + q_dim(m);
	if (targets & TRAIN_LORA_K)
		per_layer += h + kv_dim(m);
	if (targets & TRAIN_LORA_V)
		per_layer += h + kv_dim(m);
	if (targets & TRAIN_LORA_O)
		per_layer += q_dim(m) + h;
	/* PEFT wraps every expert's linear layers. */
	if ((targets & TRAIN_LORA_GATE) && m->gated_ffn)
		per_layer += experts * (h + i);
	if (targets & TRAIN_LORA_UP)
		per_layer += experts * (h + i);
	if (targets & TRAIN_LORA_DOWN)
		per_layer += experts * (i + h);
	return per_layer * m->n_layers;
}

int64_t train_activation_bytes_per_token_layer(const struct train_model *m, int64_t seq_len,
					       bool flash_attention)
{
	int64_t h = m->hidden, i = m->intermediate;
	int64_t k = m->n_experts > 1 && m->n_experts_per_tok > 0 ? m->n_experts_per_tok : 1;
	/* Attention: norm input, projection input, q, k, v, attention output. */
	int64_t attn = 2 * h + q_dim(m) + 2 * kv_dim(m) + q_dim(m);
	/* FFN: norm input, projection input, then per routed expert gate/up outputs, the
	 * activation and the product (or up output and activation without a gate). */
	int64_t ffn = 2 * h + k * (m->gated_ffn ? 4 * i : 2 * i);
	int64_t elems = attn + ffn;

	/* Eager attention keeps the scores and their softmax for every head. */
	if (!flash_attention)
		elems += 2 * m->n_heads * seq_len;
	return elems * 2;
}

int train_memory_estimate(const struct train_model *m, const struct train_settings *s,
			  struct train_memory *out)
{
	struct train_memory r = {0};
	int64_t tokens, linear, non_linear, per_tok_layer;
	double weight_bytes = s->weight_bits == 32 ? 4.0 : 2.0;
	double opt_bytes;

	if (m->n_layers < 1 || m->n_layers > 4096 || m->hidden < 1 || m->hidden > DIM_MAX ||
	    m->intermediate < 1 || m->intermediate > DIM_MAX || m->n_heads < 1 ||
	    m->n_kv_heads < 1 || m->n_kv_heads > m->n_heads || m->head_dim < 1 ||
	    m->head_dim > 65536 || m->vocab < 1 || m->vocab > DIM_MAX || m->params_total < 1 ||
	    m->params_total > (1LL << 43) || m->n_experts < 0 || m->n_experts > 4096)
		return RF_E_INVALID_VALUE;
	if (s->batch_size < 1 || s->batch_size > 65536 || s->seq_len < 1 || s->seq_len > DIM_MAX ||
	    (s->mode != TRAIN_FULL && (s->lora_rank < 1 || s->lora_rank > m->hidden)))
		return RF_E_INVALID_VALUE;
	tokens = s->batch_size * s->seq_len;
	if (tokens > (1LL << 28))
		return RF_E_INVALID_VALUE;

	non_linear = m->params_embedding + m->params_output;
	linear = m->params_total - non_linear;
	if (linear < 0)
		return RF_E_INVALID_VALUE;

	switch (s->mode) {
	case TRAIN_FULL:
		r.trainable_params = m->params_total;
		r.weights_bytes = (int64_t)((double)m->params_total * weight_bytes);
		r.gradients_bytes = r.weights_bytes;
		break;
	case TRAIN_LORA:
		r.weights_bytes = (int64_t)((double)m->params_total * weight_bytes);
		break;
	case TRAIN_QLORA:
		r.weights_bytes =
			(int64_t)((double)linear * NF4_BITS_PER_WEIGHT / 8.0) + non_linear * 2;
		break;
	}
	if (s->mode != TRAIN_FULL) {
		r.trainable_params = s->lora_rank * train_lora_params_per_rank(m, s->lora_targets);
		r.adapter_bytes = r.trainable_params * 4;
		r.gradients_bytes = r.trainable_params * 4;
	}
	switch (s->optimizer) {
	case TRAIN_OPT_ADAMW:
		opt_bytes = 8.0;
		break;
	case TRAIN_OPT_ADAMW_8BIT:
	case TRAIN_OPT_PAGED_ADAMW_8BIT:
		opt_bytes = 2.0;
		break;
	default:
		opt_bytes = 0.0;
		break;
	}
	r.optimizer_bytes = (int64_t)((double)r.trainable_params * opt_bytes);

	per_tok_layer = train_activation_bytes_per_token_layer(m, s->seq_len, s->flash_attention);
	if (s->gradient_checkpointing) {
		/* Each layer's input stays (on the host with Unsloth), and one layer is
		 * recomputed at a time during backward. */
		int64_t checkpoints = s->provider == TRAIN_PROVIDER_UNSLOTH ?
					      0 :
					      tokens * m->n_layers * m->hidden * 2;
		r.activations_bytes = checkpoints + tokens * per_tok_layer;
	} else {
		r.activations_bytes = tokens * per_tok_layer * m->n_layers;
	}
	/* Logits in 16 bits, then (Hugging Face) an fp32 copy for the loss and its gradient. */
	r.logits_bytes = tokens * m->vocab * (s->provider == TRAIN_PROVIDER_UNSLOTH ? 2 : 10);

	r.total_bytes = r.weights_bytes + r.adapter_bytes + r.gradients_bytes + r.optimizer_bytes +
			r.activations_bytes + r.logits_bytes;
	r.overhead_bytes = CUDA_CONTEXT_BYTES + (int64_t)((double)r.total_bytes * ALLOCATOR_SLACK);
	r.total_bytes += r.overhead_bytes;
	*out = r;
	return 0;
}
