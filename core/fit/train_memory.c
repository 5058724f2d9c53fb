/*
 * The fine-tuning memory model (see train_memory.h). Each term is the mechanism it names:
 *
 * - Weights: full and LoRA hold the base in its dtype (fp32 for full fine-tuning with AMP).
 *   QLoRA (bitsandbytes NF4 with double quantisation) stores 4 bits per weight of every linear
 *   layer plus one 8-bit absmax per block of 64 and one fp32 constant per 256 blocks;
 *   embeddings, the output head and norms stay unquantised: in fp32 with the Hugging Face
 *   stack (PEFT's prepare_model_for_kbit_training upcasts them), in 16 bits with Unsloth.
 * - Adapters: rank x (in + out) per targeted linear, kept in fp32 as PEFT creates them.
 * - Gradients: of every trained weight, in the weights' dtype (fp32 for adapters).
 * - Optimizer (core/fit/train_optimizer.c has each one's row): AdamW keeps two moments per
 *   trained weight in the weight's dtype (torch does not upcast them): 4 bytes for a bf16
 *   model, 8 for fp32 weights and adapters; the 8-bit variants two bytes and their block
 *   scales; Adafactor a row and a column per matrix; SGD without momentum none.
 * - Activations: per token and layer, the tensors the block saves for backward, as the Hugging
 *   Face stack saves them (counted tensor by tensor, see hf_activation_bytes): both norms'
 *   fp32 inputs, q/k/v, the attention output, the FFN intermediates, each projection's input
 *   for full fine-tuning and each adapter's own fp32 (or, under autocast, bf16) copy of its
 *   input with its dropout mask for LoRA; for eager attention the fp32 softmax and the 16-bit
 *   probabilities of every head (seq x seq), whose gradients backward needs again. Unsloth's
 *   fused kernels keep the 16-bit tensors a block needs. With gradient checkpointing only
 *   each layer's input is kept and one layer is recomputed at a time; Unsloth offloads those
 *   inputs to host memory (double-buffered on the GPU) and computes the MLP's backward in
 *   chunks. While a layer runs backward, the gradients of its FFN intermediates are alive too
 *   (Hugging Face).
 * - The residual stream (each layer's input, the norms' inputs and outputs) is in fp32 when
 *   the embedding is: PEFT's prepare_model_for_kbit_training upcasts it for QLoRA, an fp32
 *   LoRA base holds it so, and torch's autocast keeps AMP's master weights in fp32 (DeepSpeed
 *   casts the whole module to bf16 and FSDP computes from a 16-bit copy instead; the LoRA
 *   adapters compute in bf16 there too). Every layer adds its 16-bit output to the
 *   fp32 residual, which type promotion keeps in fp32, and bitsandbytes casts its output back
 *   to its input's dtype: the checkpointed layer inputs take 4 bytes an element, not 2. This
 *   is what grows with layers x hidden and sets a 70B's longest context apart from an 8B's.
 * - Two phases of the backward never overlap: the loss's buffers (below) are freed before
 *   the first layer is recomputed, and the caching allocator hands their blocks to the
 *   layer's activations and gradients. The peak holds the larger of the two, not both: the
 *   smaller is reported as reused_bytes and taken off the total. A chunked or fused loss
 *   keeps the hidden states' gradient it computed in the forward: nothing is handed over.
 * - Logits: the loss over the whole vocabulary peaks in log-softmax's backward, which holds
 *   the fp32 log-softmax, the loss's gradient and its own result: 12 bytes per token and
 *   vocabulary entry (measured by tests/tools/measure_activations.py with transformers 5 and
 *   the output dropped before backward, as the Trainer does). transformers 4.x upcast the
 *   logits to fp32 inside the model and returned them, and a loop that holds the output
 *   through backward keeps those 4 bytes as well: 16, which the published longest contexts
 *   reproduce and which is counted, on the safe side. With transformers 5 the 4 bytes are the
 *   block the caching allocator has to reserve anew: replayed over whole traced steps
 *   (tests/tools/trace_step.py), the first step's optimizer states land in the loss's freed
 *   blocks, and the next step's log-softmax backward finds no cached block of tokens x
 *   vocabulary x 4 bytes left whole (up to 20% over the tensors alive at 8k-32k tokens).
 *   A chunked or fused loss (Unsloth,
 *   Liger, torchtune) keeps one chunk whose logits are about as large as the hidden states:
 *   hidden x (2 + 4 + 4) bytes per token.
 * - Preference training: DPO and ORPO run a chosen and a rejected sequence per example (twice
 *   the tokens); DPO also runs a frozen reference model: for adapters the base with the
 *   adapter disabled (no extra weights), for full fine-tuning a second 16-bit copy, unless the
 *   reference log-probs were computed beforehand. TRL runs the reference forward (no
 *   gradients) after the policy's, while the policy's activations and logits are held: the
 *   reference's 16-bit logits and one row's log-softmax (TRL's selective_log_softmax goes row
 *   by row) come on top (reference_logits_bytes, Hugging Face's loss chain only).
 * - KTO (TRL's KTOTrainer): one completion per row, desirable or not, so the tokens are SFT's;
 *   the reference as DPO's. The KL term's mismatched batch (each prompt with another row's
 *   completion) runs through the policy under torch.no_grad before the main forward, so it
 *   keeps no activations: its buffers are freed before the peak, and it costs time only
 *   (train_speed.c), as do the reference's two forwards (the batch and the KL batch).
 * - GRPO (TRL's GRPOTrainer): a row is a prompt and one generated completion; the forward
 *   runs over both, the logits are kept for the completion only (logits_to_keep). The
 *   reference model (for its KL term) is loaded only for beta > 0; it scores the completions
 *   under no_grad in the generation phase, not alongside the training forward. Generation is
 *   a phase of its own, after the optimizer step freed the gradients (zero_grad to None): with
 *   model.generate the batch's KV cache (prompt + completion, every layer, 16 bits) and the
 *   prefill's layer work sit next to the weights and optimizer states, and the peak is the
 *   larger of that phase and training's. A colocated vLLM engine holds its
 *   vllm_gpu_memory_utilization share of the GPU from the start, beside everything training
 *   needs; a vLLM server runs on other GPUs. Under ZeRO-3 or FSDP model.generate runs on the
 *   whole weights, gathered for it (TRL's ds3_gather_for_generation, on by default).
 * - The attention mask (train_attention_mask). Sample packing makes every row a full
 *   seq_len of whole documents; padding makes the rows of a batch one length. Eager attention
 *   and SDPA have no varlen kernel, so transformers keeps documents and padding apart with a
 *   4D mask, batch x 1 x seq x seq, built once a forward (and alive through every recomputed
 *   layer). Eager attention always gets one, causal at least, additive, in the embedding's
 *   dtype. SDPA gets none for unpadded, unpacked rows (is_causal) and a boolean one
 *   otherwise, which torch's SDPA converts to an additive mask in q's dtype in every layer
 *   and keeps for backward; with a mask, transformers also repeats k and v to every query
 *   head for SDPA (no enable_gqa), and a grouped-query model keeps the repeated copies.
 *   flash-attention's varlen kernel (padding_free, DataCollatorWithFlattening, and unpadding
 *   for padded rows) takes positions instead and builds no mask. Unsloth's own attention: a
 *   16-bit mask once, for eager attention or packed rows without a varlen kernel.
 * - Gradients: with gradient accumulation they live from the first micro-batch to the step;
 *   with one micro-batch a step (grad_accum_steps 1) none exists until backward reaches its
 *   layer, so the forward and the loss peak without them and the end of backward with them.
 * - The optimizer step: torch's foreach AdamW computes the square roots of all second
 *   moments into a new buffer, one moment's size, after backward has freed the activations;
 *   a full fine-tune at short sequences peaks there (fms-acceleration's Mistral 7B at batch 4
 *   and 8 peak alike, at weights, gradients, moments and this buffer). The fused AdamW (the
 *   Trainer's default since torch 2.8) and the 8-bit ones update in place and build none;
 *   Adafactor holds fp32 copies of the tensor it steps (train_optimizer.c).
 * - Overhead: the CUDA context plus the caching allocator's reserved-over-allocated share.
 * - What a GPU with memory to spare shows held (reserved_bytes). The first step creates
 *   AdamW's moments in blocks the loss chain freed; from the second step on, the loss's
 *   tokens x vocabulary x 4-byte blocks find no cached block large enough (the step's
 *   freed gradients and square roots are one parameter each, the largest the embedding),
 *   and the allocator reserves them anew next to all the step's blocks: held = the step
 *   phase plus the loss chain (12 bytes per token and vocabulary entry). Nothing forces it
 *   to give the step's blocks back while the card has room; on a card without that room it
 *   frees them and retries, and the run needs no more than total_bytes, which decides what
 *   fits. Measured on an H200 (tests/fixtures/training/gpu_peaks.csv): full fine-tuning at
 *   8k-24k tokens holds 12-28 GiB over its allocated peak, as this gives.
 *
 * Several GPUs (strategy, offload) are applied by core/fit/train_parallel.c over these terms.
 */
#include "core/fit/train_memory.h"

#include "core/err.h"
#include "core/fit/train_optimizer.h"
#include "core/fit/train_parallel.h"

#define GIB (1024LL * 1024 * 1024)
/* The CUDA context and the caching allocator's fixed part (cuBLAS workspaces). */
#define CUDA_CONTEXT_BYTES GIB
/* Reserved over allocated: the caching allocator keeps freed blocks of other sizes (the
 * replayed whole steps need 0.4-7% over the tensors alive besides the loss's block, above). */
#define ALLOCATOR_SLACK 0.05
/* bitsandbytes NF4 with double quantisation: 4 bits + 8/64 bits + 32/(64*256) bits. */
#define NF4_BITS_PER_WEIGHT (4.0 + 8.0 / 64.0 + 32.0 / (64.0 * 256.0))
/* transformers' loss chain at its peak, bytes per token and vocabulary entry (see above). */
#define LOSS_TRANSFORMERS_BYTES 16
/* A chunked loss: one chunk of logits about the size of the hidden states, in 16 bits, fp32
 * and its fp32 gradient. */
#define LOSS_CHUNK_BYTES_PER_HIDDEN 10
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

static int64_t experts_per_token(const struct train_model *m)
{
	return m->n_experts > 1 && m->n_experts_per_tok > 0 ? m->n_experts_per_tok : 1;
}

/* The tensors a LLaMA-style block saves in 16 bits, whatever the stack: the inputs of both norms
 * and of the projections, q/k/v, the attention output, the FFN intermediates and, for eager
 * attention, every head's scores. Unsloth's fused kernels keep about this much (its published
 * longest contexts are fitted with it). */
static int64_t generic_activation_bytes(const struct train_model *m, int64_t seq_len,
					bool flash_attention)
{
	int64_t h = m->hidden, i = m->intermediate, k = experts_per_token(m);
	/* Attention: norm input, projection input, q, k, v, attention output. */
	int64_t attn = 2 * h + q_dim(m) + 2 * kv_dim(m) + q_dim(m);
	/* FFN: norm input, projection input, then per routed expert gate/up outputs, the
	 * activation and the product (or up output and activation without a gate). */
	int64_t ffn = 2 * h + k * (m->gated_ffn ? 4 * i : 2 * i);
	int64_t elems = attn + ffn;

	/* Eager attention keeps, per head, the fp32 softmax (two 16-bit elements' worth) and
	 * the 16-bit probabilities over the whole sequence. */
	if (!flash_attention)
		elems += 3 * m->n_heads * seq_len;
	return elems * 2;
}

/* Whether the run's module is torch's own (one GPU, DDP). DeepSpeed's engine casts the whole
 * module to bf16 (module.bfloat16(), adapters and the embedding included) and FSDP computes
 * from bf16 copies of the parameters under its mixed precision. */
static bool torch_module(const struct train_settings *s)
{
	return s->strategy == TRAIN_STRATEGY_NONE || s->strategy == TRAIN_STRATEGY_DDP;
}

/* Whether the forward runs under torch's bf16 autocast: AMP (fp32 master weights), and for
 * adapters precision amp, which is the Trainer's bf16=True (accelerate wraps the forward in
 * autocast). DeepSpeed and FSDP compute from their own 16-bit copy instead. */
static bool runs_autocast(const struct train_settings *s)
{
	return torch_module(s) && (s->precision == TRAIN_PRECISION_AMP ||
				   (s->mode == TRAIN_FULL && s->weight_bits == 32));
}

/* The bytes of an element of what the adapters compute in: PEFT creates them in fp32; autocast
 * casts their matmuls' inputs to bf16; DeepSpeed and FSDP run them in bf16. */
static int adapter_compute_bytes(const struct train_settings *s)
{
	return runs_autocast(s) || !torch_module(s) ? 2 : 4;
}

/* Whether a group's input reaches the adapters uncopied: in the adapters' dtype already, with
 * no dropout and no autocast to make a new tensor of it. */
static bool adapter_input_shared(const struct train_settings *s, int in_bytes)
{
	return !runs_autocast(s) && !s->lora_dropout && in_bytes == adapter_compute_bytes(s);
}

/* What the LoRA adapters of one group of linear layers that read the same input of width d
 * keep: n_targeted adapters (n_targeted of the group's layers wrapped). PEFT casts the input
 * to the adapter's dtype before dropout and the A projection, which keeps it: 4 bytes an
 * element for fp32 adapters, 2 where autocast casts it back to bf16 for the matmul or the
 * adapters are bf16; every adapter makes its own copy, unless the input is in the adapters'
 * dtype already and nothing (dropout, autocast) makes a new one. Dropout keeps a one-byte mask
 * (torch's fused dropout on CUDA), and B keeps A's output. */
static int64_t adapter_group_bytes(const struct train_settings *s, int64_t d, int n_targeted,
				   int in_bytes)
{
	int a = adapter_compute_bytes(s);
	int64_t per = a + (s->lora_dropout ? 1 : 0);
	int64_t copies = adapter_input_shared(s, in_bytes) ? 1 : n_targeted;

	if (n_targeted == 0)
		return 0;
	return copies * per * d + n_targeted * s->lora_rank * a;
}

enum train_attention_mask train_attention_mask(const struct train_settings *s)
{
	if (!s->flash_attention)
		return TRAIN_MASK_EAGER;
	if (s->varlen_attention)
		return TRAIN_MASK_NONE;
	if (s->packing || (s->padded && s->provider == TRAIN_PROVIDER_HUGGINGFACE))
		return TRAIN_MASK_SDPA;
	return TRAIN_MASK_NONE;
}

bool train_default_padded(const struct train_settings *s)
{
	return s->batch_size > 1 && !s->packing;
}

static int targeted(unsigned targets, unsigned bits)
{
	int n = 0;

	for (unsigned b = 1; b <= TRAIN_LORA_DOWN; b <<= 1)
		n += (bits & b) && (targets & b);
	return n;
}

/* The Hugging Face stack (transformers' modelling code, PEFT's adapters, torch's autograd), as
 * tests/tools/measure_activations.py counts it, tensor by tensor, with saved-tensor hooks
 * (tests/fixtures/training/saved_activations.csv):
 * - each RMSNorm upcasts its input to fp32 and keeps it, with its fp32 inverse RMS; a trained
 *   norm weight (full fine-tuning) also keeps the normalised input, in the residual's dtype;
 * - full fine-tuning keeps each projection's input for its weight's gradient: once for q/k/v
 *   and once for gate/up, which share it, or a bf16 copy per projection under autocast
 *   (which casts the fp32 residual for each); SDPA's output is o's input, eager's output is
 *   made contiguous first; a frozen base keeps none of these, its adapters do (above);
 * - attention: q and k after RoPE, v, the output and the fp32 log-sum-exp per head for SDPA
 *   and flash-attention; eager keeps q, k and v repeated to every query head, then the fp32
 *   softmax and the 16-bit probabilities of every head over the whole sequence;
 * - the FFN keeps the gate and up outputs and the activation's output (SiLU's input and
 *   output, the product's two factors), or the first projection's output without a gate;
 * - all of these in 16 bits, except where the residual is fp32 and nothing casts it down:
 *   Hugging Face QLoRA keeps q, k, v, the FFN's tensors and the adapters' inputs in fp32,
 *   because bitsandbytes returns its output in its input's dtype (autocast still casts
 *   attention's inputs to bf16). */
static int64_t hf_activation_bytes(const struct train_model *m, const struct train_settings *s)
{
	int64_t h = m->hidden, q = q_dim(m), kv = kv_dim(m), i = m->intermediate,
		k = experts_per_token(m), heads = m->n_heads;
	unsigned t = s->lora_targets ? s->lora_targets : TRAIN_LORA_ALL_LINEAR;
	bool full = s->mode == TRAIN_FULL, autocast = runs_autocast(s);
	int res = train_residual_bytes(s);
	/* The projections' outputs: bitsandbytes casts its output back to its input's dtype
	 * (the fp32 residual of Hugging Face QLoRA) with autocast or without; autocast makes the
	 * other linear layers' outputs bf16, and without it they keep the residual's dtype. */
	int lin = s->mode == TRAIN_QLORA ? res : autocast ? 2 : res;
	/* What attention keeps: autocast casts q, k and v to bf16 for its matmuls. */
	int att = autocast ? 2 : lin;
	int64_t b = 2 * (4 * h + 4 + (full ? res * h : 0));

	if (train_attention_mask(s) == TRAIN_MASK_SDPA)
		/* the mask in q's dtype, and k and v repeated to every head (a copy unless one
		 * k/v head expands as a view) */
		b += att * s->seq_len + att * (2 * q + 2 * (m->n_kv_heads > 1 ? q : kv)) +
		     4 * heads;
	else if (s->flash_attention)
		b += att * (2 * q + 2 * kv) + 4 * heads;
	else /* fp32 attention's probabilities are its softmax: no 16-bit copy */
		b += 3 * att * q + (att == 4 ? 4 : 6) * heads * s->seq_len;
	b += k * lin * (m->gated_ffn ? 3 * i : i);
	if (full) {
		b += 2 * h * (autocast ? 3 : 1) + (s->flash_attention ? 0 : 2 * q);
		b += k * (2 * h * (autocast && m->gated_ffn ? 2 : 1) + 2 * i);
	} else {
		b += adapter_group_bytes(
			s, h, targeted(t, TRAIN_LORA_Q | TRAIN_LORA_K | TRAIN_LORA_V), res);
		b += adapter_group_bytes(s, q, targeted(t, TRAIN_LORA_O), att);
		/* Without a copy of its own, o's adapter keeps SDPA's output, counted above. */
		if (targeted(t, TRAIN_LORA_O) && s->flash_attention && adapter_input_shared(s, att))
			b -= att * q;
		b += k * adapter_group_bytes(s, h,
					     targeted(t, (m->gated_ffn ? TRAIN_LORA_GATE : 0) |
								 TRAIN_LORA_UP),
					     res);
		b += k * adapter_group_bytes(s, i, targeted(t, TRAIN_LORA_DOWN), lin);
	}
	return b;
}

int64_t train_activation_bytes_per_token_layer(const struct train_model *m,
					       const struct train_settings *s)
{
	if (s->provider == TRAIN_PROVIDER_UNSLOTH)
		return generic_activation_bytes(m, s->seq_len, s->flash_attention);
	return hf_activation_bytes(m, s);
}

/* The gradients alive while one layer runs backward: its FFN intermediates' (gate, up and
 * activation outputs), and for eager attention the probabilities' gradient in 16 bits, its
 * fp32 upcast and the 16-bit result. Bytes per token. */
static int64_t backward_workspace_per_token(const struct train_model *m, int64_t seq_len,
					    bool flash_attention)
{
	int64_t i = m->intermediate, k = experts_per_token(m);
	int64_t elems = k * (m->gated_ffn ? 3 * i : 2 * i);

	if (!flash_attention)
		elems += 4 * m->n_heads * seq_len;
	return elems * 2;
}

enum train_loss train_loss_resolve(enum train_loss l, enum train_provider p)
{
	if (l != TRAIN_LOSS_AUTO)
		return l;
	return p == TRAIN_PROVIDER_UNSLOTH ? TRAIN_LOSS_CHUNKED : TRAIN_LOSS_TRANSFORMERS;
}

bool train_default_lora_dropout(enum train_mode mode, enum train_provider provider)
{
	return mode != TRAIN_FULL && provider == TRAIN_PROVIDER_HUGGINGFACE;
}

int train_loss_bytes_per_logit(enum train_loss l, enum train_provider p)
{
	return train_loss_resolve(l, p) == TRAIN_LOSS_TRANSFORMERS ? LOSS_TRANSFORMERS_BYTES : 0;
}

static bool settings_valid(const struct train_model *m, const struct train_settings *s)
{
	if (m->n_layers < 1 || m->n_layers > 4096 || m->hidden < 1 || m->hidden > DIM_MAX ||
	    m->intermediate < 1 || m->intermediate > DIM_MAX || m->n_heads < 1 ||
	    m->n_kv_heads < 1 || m->n_kv_heads > m->n_heads || m->head_dim < 1 ||
	    m->head_dim > 65536 || m->vocab < 1 || m->vocab > DIM_MAX || m->params_total < 1 ||
	    m->params_total > (1LL << 43) || m->n_experts < 0 || m->n_experts > 4096 ||
	    m->n_heads > 65536 || m->n_experts_per_tok < 0 || m->n_experts_per_tok > 4096 ||
	    m->params_embedding < 0 || m->params_output < 0)
		return false;
	if (s->batch_size < 1 || s->batch_size > 65536 || s->seq_len < 1 || s->seq_len > DIM_MAX ||
	    (s->mode != TRAIN_FULL && (s->lora_rank < 1 || s->lora_rank > m->hidden)))
		return false;
	if (s->grad_accum_steps < 0 || s->grad_accum_steps > 4096)
		return false;
	if ((unsigned)s->optimizer >= TRAIN_OPT_COUNT ||
	    (unsigned)s->precision > TRAIN_PRECISION_AMP ||
	    (unsigned)s->loss > TRAIN_LOSS_CHUNKED || (unsigned)s->objective > TRAIN_OBJECTIVE_GRPO)
		return false;
	if (s->objective == TRAIN_OBJECTIVE_GRPO &&
	    (s->completion_len < 1 || s->completion_len > s->seq_len ||
	     (unsigned)s->generation > TRAIN_GEN_VLLM_COLOCATE || !(s->vllm_share >= 0) ||
	     s->vllm_share > 1 || s->gpu_memory_bytes < 0 ||
	     (double)train_generation_rows(s) * (double)s->seq_len > (double)(1LL << 28)))
		return false;
	if (s->batch_size * s->seq_len > (1LL << 28))
		return false;
	/* The largest products (every layer's activations, the logits) must fit int64 with a
	 * wide margin: checked in floating point before they are formed. */
	double tokens = (double)s->batch_size * (double)s->seq_len * 2.0;
	double per_tok_layer = (double)train_activation_bytes_per_token_layer(m, s) +
			       8.0 * (double)m->n_heads * (double)s->seq_len +
			       8.0 * (double)m->intermediate;
	return tokens * per_tok_layer * (double)m->n_layers < 1e18 &&
	       tokens * (double)m->vocab * LOSS_TRANSFORMERS_BYTES < 1e18;
}

/* The rows plus columns of every matrix and the size of every vector a full fine-tune trains:
 * what a factored optimizer (Adafactor) keeps of the second moment. */
static double full_factored_elems(const struct train_model *m)
{
	double heads = (double)(m->vocab + m->hidden) * (m->params_output > 0 ? 2.0 : 1.0);

	return (double)train_lora_params_per_rank(m, TRAIN_LORA_ALL_LINEAR) + heads +
	       (double)((2 * m->n_layers + 1) * m->hidden);
}

int train_residual_bytes(const struct train_settings *s)
{
	bool torch_only = torch_module(s);

	switch (s->mode) {
	case TRAIN_QLORA:
		return s->provider == TRAIN_PROVIDER_HUGGINGFACE && torch_only ? 4 : 2;
	case TRAIN_LORA:
		return s->weight_bits == 32 && torch_only ? 4 : 2;
	default:
		return (s->precision == TRAIN_PRECISION_AMP || s->weight_bits == 32) && torch_only ?
			       4 :
			       2;
	}
}

/* The model states of the whole model, before any sharding (bytes). */
static void model_states(const struct train_model *m, const struct train_settings *s,
			 struct train_states *st)
{
	int64_t non_linear = m->params_embedding + m->params_output;
	int64_t linear = m->params_total - non_linear;
	double p = (double)m->params_total;

	if (s->mode == TRAIN_FULL) {
		/* weight_bits 32 (fp32 weights under fp16/bf16 autocast) is what precision amp
		 * names. DeepSpeed's ZeRO stages have no pure-bf16 optimizer: with bf16 enabled
		 * they keep an fp32 master copy and fp32 moments all the same (its bf16 and ZeRO
		 * optimizers), so precision bf16 under ZeRO is amp's split. */
		bool amp = s->precision == TRAIN_PRECISION_AMP || s->weight_bits == 32 ||
			   train_strategy_is_zero(s->strategy);
		st->trainable_params = m->params_total;
		st->base_bytes = p * (amp ? 4.0 : 2.0);
		st->gathered_bytes_per_param = 2.0;
		st->grad_bytes = st->base_bytes;
		st->optimizer_bytes = train_optimizer_state_bytes(s->optimizer, p, amp ? 4.0 : 2.0,
								  full_factored_elems(m));
		/* The largest trained tensor: the embedding or head, or an FFN matrix. */
		st->largest_trained_elems = (double)m->vocab * (double)m->hidden;
		if ((double)m->hidden * (double)m->intermediate > st->largest_trained_elems)
			st->largest_trained_elems = (double)m->hidden * (double)m->intermediate;
		st->amp = amp;
		return;
	}
	st->trainable_params = s->lora_rank * train_lora_params_per_rank(m, s->lora_targets);
	if (s->mode == TRAIN_LORA) {
		/* DeepSpeed and FSDP compute an fp32 base in bf16 (torch_module). */
		st->base_bytes = p * (s->weight_bits == 32 && torch_module(s) ? 4.0 : 2.0);
		st->gathered_bytes_per_param = 2.0;
	} else {
		/* PEFT's prepare_model_for_kbit_training upcasts them to fp32; Unsloth, DeepSpeed
		 * (which casts the module back to bf16) and FSDP-QLoRA (which stores everything in
		 * the 16-bit quant_storage dtype to shard it) keep 16 bits. */
		double nl_bytes = s->provider == TRAIN_PROVIDER_UNSLOTH || !torch_module(s) ? 2.0 :
											      4.0;
		st->base_bytes =
			(double)linear * NF4_BITS_PER_WEIGHT / 8.0 + (double)non_linear * nl_bytes;
		st->gathered_bytes_per_param = NF4_BITS_PER_WEIGHT / 8.0;
	}
	st->adapter_bytes = (double)st->trainable_params * 4.0;
	st->grad_bytes = st->adapter_bytes;
	/* An adapter pair of rank r over in x out: A (r x in) and B (out x r), whose rows and
	 * columns add up to in + out + 2r. */
	{
		unsigned t = s->lora_targets ? s->lora_targets : TRAIN_LORA_ALL_LINEAR;
		double per_rank = (double)train_lora_params_per_rank(m, t);
		double pairs = (double)(targeted(t, TRAIN_LORA_ALL_LINEAR) * m->n_layers *
					(m->n_experts > 1 ? m->n_experts : 1));
		int64_t widest = m->hidden > m->intermediate ? m->hidden : m->intermediate;
		st->optimizer_bytes =
			train_optimizer_state_bytes(s->optimizer, (double)st->trainable_params, 4.0,
						    per_rank + 2.0 * (double)s->lora_rank * pairs);
		st->largest_trained_elems = (double)s->lora_rank * (double)widest;
	}
	st->amp = false;
}

/* reserved_bytes (see the top of this file) for the transformers loss: the step phase's blocks
 * and the loss chain's together, when the loss's fp32 block is larger than any block the step
 * frees. Only where torch holds whole parameters (one GPU, DDP): ZeRO and FSDP keep flat
 * buffers of their own. */
static int64_t held_with_room(const struct train_model *m, const struct train_settings *s,
			      const struct train_memory *r)
{
	int64_t block = r->logits_bytes / LOSS_TRANSFORMERS_BYTES * 4, largest = 0, step, held;
	int64_t freed = r->gradients_bytes > r->optimizer_temp_bytes ? r->gradients_bytes :
								       r->optimizer_temp_bytes;

	if ((s->strategy != TRAIN_STRATEGY_NONE && s->strategy != TRAIN_STRATEGY_DDP) ||
	    r->trainable_params <= 0 || r->optimizer_bytes <= 0)
		return r->total_bytes;
	/* The largest parameter a full fine-tune trains is the embedding (or the head). */
	if (s->mode == TRAIN_FULL)
		largest = (int64_t)((double)freed / (double)r->trainable_params *
				    (double)(m->vocab * m->hidden));
	if (block <= largest)
		return r->total_bytes;
	step = r->weights_bytes + r->adapter_bytes + r->optimizer_bytes + r->reference_bytes +
	       r->bucket_bytes + r->gradients_bytes + r->optimizer_temp_bytes +
	       r->logits_bytes / LOSS_TRANSFORMERS_BYTES * (LOSS_TRANSFORMERS_BYTES - 4);
	held = CUDA_CONTEXT_BYTES + step + (int64_t)((double)step * ALLOCATOR_SLACK);
	if (s->objective == TRAIN_OBJECTIVE_GRPO && s->generation == TRAIN_GEN_VLLM_COLOCATE)
		held += r->generation_bytes;
	return held > r->total_bytes ? held : r->total_bytes;
}

/* reserved_bytes for eager attention: its score tensors (rows x heads x seq x seq, 4 and 8
 * bytes a score at 16 bits and fp32) are the largest blocks a layer asks for, and the layer's
 * other requests (64 MiB and up) split the cached ones between layers, so the allocator
 * reserves fresh segments for them: two fp32 score tensors more than the peak holds (the
 * allocator traces of our H200 runs, LoRA and full fine-tuning at 2k-12k tokens, replayed
 * with top-down addresses, reserve exactly that). With the allocator's slack. */
static int64_t eager_cache_bytes(const struct train_model *m, const struct train_settings *s,
				 int64_t rows)
{
	double scores = (double)rows * (double)m->n_heads * (double)s->seq_len * (double)s->seq_len;
	double bytes = 2.0 * 4.0 * scores * (1.0 + ALLOCATOR_SLACK);

	return bytes < (double)(INT64_MAX / 4) ? (int64_t)bytes : INT64_MAX / 4;
}

bool train_has_reference(const struct train_settings *s)
{
	switch (s->objective) {
	case TRAIN_OBJECTIVE_DPO:
	case TRAIN_OBJECTIVE_KTO:
		return !s->precomputed_ref_logps;
	case TRAIN_OBJECTIVE_GRPO:
		return s->grpo_reference;
	default:
		return false;
	}
}

int64_t train_generation_rows(const struct train_settings *s)
{
	return s->batch_size * (s->grad_accum_steps > 1 ? s->grad_accum_steps : 1);
}

int64_t train_kv_bytes_per_token(const struct train_model *m)
{
	return m->n_layers * 2 * m->n_kv_heads * m->head_dim * 2;
}

/* GRPO's generation (see the top of this file): the KV cache of one generation batch and
 * what holds it. model.generate's prefill runs one layer at a time without gradients: per
 * prompt token the residual and the normed input (2 x hidden), q, k and v, and the FFN's
 * gate, up and their product (3 x intermediate), in 16 bits; its logits are the last
 * position's only. vLLM colocated holds its share of the GPU; with the GPU unknown, what it
 * needs: its own 16-bit weights and the cache. Called after the strategy has sharded the
 * weights (r->weights_bytes per GPU). */
static void grpo_generation(const struct train_model *m, const struct train_settings *s,
			    struct train_memory *r)
{
	int64_t rows = train_generation_rows(s), prompt = s->seq_len - s->completion_len;
	int64_t q = m->n_heads * m->head_dim, kv = m->n_kv_heads * m->head_dim;
	int64_t prefill = rows * prompt * 2 * (2 * m->hidden + q + 2 * kv + 3 * m->intermediate);

	r->kv_cache_bytes = rows * s->seq_len * train_kv_bytes_per_token(m);
	switch (s->generation) {
	case TRAIN_GEN_TRANSFORMERS:
		r->generation_bytes = r->kv_cache_bytes + prefill + rows * m->vocab * 4;
		/* Sharded weights are gathered whole for generation (TRL's
		 * ds3_gather_for_generation, on by default; FSDP's full parameters alike). */
		if (s->strategy == TRAIN_STRATEGY_ZERO3 || s->strategy == TRAIN_STRATEGY_FSDP ||
		    s->strategy == TRAIN_STRATEGY_FSDP_QLORA) {
			int64_t linear = m->params_total - m->params_embedding - m->params_output;
			int64_t whole =
				(m->params_total - linear) * 2 +
				(s->mode == TRAIN_QLORA ?
					 (int64_t)((double)linear * NF4_BITS_PER_WEIGHT / 8.0) :
					 linear * 2);
			if (whole > r->weights_bytes)
				r->generation_bytes += whole - r->weights_bytes;
		}
		break;
	case TRAIN_GEN_VLLM_COLOCATE:
		r->generation_bytes =
			s->gpu_memory_bytes > 0 ?
				(int64_t)(s->vllm_share * (double)s->gpu_memory_bytes) :
				m->params_total * 2 + r->kv_cache_bytes;
		break;
	default:
		r->generation_bytes = 0; /* a vLLM server on other GPUs */
		break;
	}
}

int train_memory_estimate(const struct train_model *m, const struct train_settings *s,
			  struct train_memory *out)
{
	struct train_memory r = {0};
	struct train_states st = {0};
	int64_t tokens, per_tok_layer, workspace, kept, layer, work, res = train_residual_bytes(s);
	enum train_loss loss;
	int rc;

	if (!settings_valid(m, s) || m->params_embedding + m->params_output > m->params_total)
		return RF_E_INVALID_VALUE;
	rc = train_parallel_check(s);
	if (rc < 0)
		return rc;
	tokens = s->batch_size * s->seq_len;
	/* Chosen and rejected sequences go through the model together. */
	if (s->objective == TRAIN_OBJECTIVE_DPO || s->objective == TRAIN_OBJECTIVE_ORPO)
		tokens *= 2;

	model_states(m, s, &st);
	r.trainable_params = st.trainable_params;

	/* A layer's activations. The Hugging Face count has the residual's dtype in it; Unsloth's
	 * is in 16 bits, and its four residual-stream tensors (the norms' inputs and outputs)
	 * take fp32 where the residual is. */
	per_tok_layer = train_activation_bytes_per_token_layer(m, s);
	if (s->provider == TRAIN_PROVIDER_UNSLOTH)
		per_tok_layer += 4 * m->hidden * (res - 2);
	workspace = s->provider == TRAIN_PROVIDER_UNSLOTH ?
			    0 :
			    backward_workspace_per_token(m, s->seq_len, s->flash_attention);
	/* kept: alive from the forward to the end of the backward; layer: one layer's backward
	 * work, which comes after the loss's buffers are freed. */
	if (s->gradient_checkpointing) {
		r.checkpoint_bytes = tokens * m->n_layers * m->hidden * res;
		/* Unsloth keeps the checkpoints on the host and stages two layers' inputs. */
		if (s->provider == TRAIN_PROVIDER_UNSLOTH) {
			kept = 0;
			layer = tokens * (per_tok_layer + 2 * m->hidden * res);
		} else {
			kept = r.checkpoint_bytes;
			layer = tokens * (per_tok_layer + workspace);
		}
	} else {
		kept = tokens * per_tok_layer * m->n_layers;
		layer = tokens * workspace;
	}
	/* Autocast over fp32 weights casts every matmul's weight to bf16 once per forward and
	 * keeps the copies (its cache, then the saved tensors) until backward: 2 bytes per
	 * parameter of the layers and the head (measured: 2 x 218M a layer of Llama 3.1 8B). */
	if (s->mode == TRAIN_FULL && runs_autocast(s)) {
		r.autocast_weights_bytes = 2 * (m->params_total - m->params_embedding);
		if (m->params_output == 0)
			r.autocast_weights_bytes += 2 * m->params_embedding;
		kept += r.autocast_weights_bytes;
	}
	r.activations_bytes = kept + layer;
	/* The 4D mask, built once a forward: eager attention's additive one in the embedding's
	 * dtype, SDPA's boolean one (whose per-layer copies are in the layers' count). */
	if (s->provider == TRAIN_PROVIDER_UNSLOTH) {
		if ((s->packing && !s->varlen_attention) || !s->flash_attention)
			r.mask_bytes = tokens * s->seq_len * 2;
	} else if (train_attention_mask(s) != TRAIN_MASK_NONE) {
		r.mask_bytes = tokens * s->seq_len *
			       (train_attention_mask(s) == TRAIN_MASK_EAGER ? res : 1);
	}
	r.activations_bytes += r.mask_bytes;
	loss = train_loss_resolve(s->loss, s->provider);
	{
		/* GRPO keeps the logits of the completion's positions only. */
		int64_t scored = s->objective == TRAIN_OBJECTIVE_GRPO ?
					 tokens / s->seq_len * s->completion_len :
					 tokens;
		if (loss == TRAIN_LOSS_TRANSFORMERS)
			r.logits_bytes = scored * m->vocab * LOSS_TRANSFORMERS_BYTES;
		else
			r.logits_bytes = scored * m->hidden * LOSS_CHUNK_BYTES_PER_HIDDEN;
	}
	/* The reference's forward after the policy's (DPO, KTO): its 16-bit logits and one
	 * row's log-softmax, freed before backward. */
	if (train_has_reference(s) && s->objective != TRAIN_OBJECTIVE_GRPO &&
	    loss == TRAIN_LOSS_TRANSFORMERS)
		r.reference_logits_bytes = (tokens + s->seq_len) * m->vocab * 2;
	/* A chunked or fused loss computes the hidden states' gradient in its forward and keeps
	 * it, with its chunk's blocks, until backward: nothing is handed over. */
	if (loss == TRAIN_LOSS_TRANSFORMERS) {
		int64_t loss_phase = r.logits_bytes + r.reference_logits_bytes;
		r.reused_bytes = layer < loss_phase ? layer : loss_phase;
	}
	/* The reference model: a second 16-bit copy of the weights for full fine-tuning; for
	 * adapters the base with the adapter disabled. */
	if (train_has_reference(s) && s->mode == TRAIN_FULL)
		st.reference_bytes = (double)m->params_total * 2.0;

	rc = train_parallel_apply(m, s, &st, &r);
	if (rc < 0)
		return rc;
	if (s->gradient_checkpointing && s->provider == TRAIN_PROVIDER_UNSLOTH)
		r.host_bytes += r.checkpoint_bytes * train_gpus_per_node(s);

	/* The step comes after backward has freed the activations and the loss. */
	work = r.activations_bytes + r.logits_bytes + r.reference_logits_bytes - r.reused_bytes;
	if (s->grad_accum_steps == 1) {
		/* No gradient exists before backward: the forward and the loss peak without them,
		 * the end of backward holds them all with the first layer's work, the step with
		 * its buffer. */
		int64_t end = r.gradients_bytes + tokens * (per_tok_layer + workspace);
		int64_t step = r.gradients_bytes + r.optimizer_temp_bytes;
		work = work > end ? work : end;
		work = work > step ? work : step;
	} else {
		if (r.optimizer_temp_bytes > work)
			work = r.optimizer_temp_bytes;
		work += r.gradients_bytes;
	}
	if (s->objective == TRAIN_OBJECTIVE_GRPO)
		grpo_generation(m, s, &r);
	/* model.generate's phase: the KV cache and prefill beside the weights and states, no
	 * gradients (freed by the last step's zero_grad), no activations. */
	if (s->objective == TRAIN_OBJECTIVE_GRPO && s->generation == TRAIN_GEN_TRANSFORMERS &&
	    r.generation_bytes > work)
		work = r.generation_bytes;
	r.total_bytes = r.weights_bytes + r.adapter_bytes + r.optimizer_bytes + r.reference_bytes +
			r.bucket_bytes + work;
	r.overhead_bytes = CUDA_CONTEXT_BYTES + (int64_t)((double)r.total_bytes * ALLOCATOR_SLACK);
	r.total_bytes += r.overhead_bytes;
	/* Colocated vLLM's pool is its own, held through training: no allocator slack on it. */
	if (s->objective == TRAIN_OBJECTIVE_GRPO && s->generation == TRAIN_GEN_VLLM_COLOCATE)
		r.total_bytes += r.generation_bytes;
	r.reserved_bytes = r.total_bytes;
	if (loss == TRAIN_LOSS_TRANSFORMERS)
		r.reserved_bytes = held_with_room(m, s, &r);
	if (!s->flash_attention && s->provider == TRAIN_PROVIDER_HUGGINGFACE) {
		int64_t with = r.total_bytes + eager_cache_bytes(m, s, tokens / s->seq_len);
		if (with > r.reserved_bytes)
			r.reserved_bytes = with;
	}
	*out = r;
	return 0;
}

bool train_page_optimizer(const struct train_settings *s, int64_t budget_bytes,
			  struct train_memory *r)
{
	int64_t moved =
		r->optimizer_bytes + (int64_t)((double)r->optimizer_bytes * ALLOCATOR_SLACK);

	if (s->optimizer != TRAIN_OPT_PAGED_ADAMW_8BIT || r->total_bytes <= budget_bytes ||
	    r->optimizer_bytes <= 0 || r->total_bytes - moved > budget_bytes)
		return false;
	r->total_bytes -= moved;
	r->reserved_bytes -= moved;
	if (r->reserved_bytes < r->total_bytes)
		r->reserved_bytes = r->total_bytes;
	r->overhead_bytes -= moved - r->optimizer_bytes;
	r->host_bytes += r->optimizer_bytes * train_gpus_per_node(s);
	r->optimizer_bytes = 0;
	return true;
}

int64_t train_max_seq_len(const struct train_model *m, const struct train_settings *s,
			  int64_t max_seq, int64_t budget_bytes, int64_t host_budget_bytes)
{
	int64_t lo = 0, hi = max_seq;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2;
		struct train_settings t = *s;
		struct train_memory r;
		t.seq_len = mid;
		if (train_memory_estimate(m, &t, &r) == 0 &&
		    (r.total_bytes <= budget_bytes || train_page_optimizer(&t, budget_bytes, &r)) &&
		    (host_budget_bytes < 0 || r.host_bytes <= host_budget_bytes))
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}
