/*
 * Peak GPU memory of fine-tuning (full, LoRA, QLoRA) with the Hugging Face stack or Unsloth:
 * weights in their training dtype or NF4 with its quantisation constants, LoRA adapters,
 * gradients, optimizer states, activations with and without gradient checkpointing, the
 * logits and loss buffers, and the CUDA context. Pure arithmetic over the model's dimensions,
 * so it is tested against measured runs without any model file.
 */
#ifndef RIGFIT_CORE_TRAIN_MEMORY_H
#define RIGFIT_CORE_TRAIN_MEMORY_H

#include <stdbool.h>
#include <stdint.h>

enum train_mode {
	TRAIN_FULL,
	TRAIN_LORA,
	TRAIN_QLORA
};
/* The optimizer's states, temporaries and passes are in core/fit/train_optimizer.h; zero is
 * torch's foreach AdamW, as the first estimates had it (train_optimizer_default gives what a
 * provider runs when nobody says). */
enum train_optimizer {
	TRAIN_OPT_ADAMW,            /* adamw_torch: torch.optim.AdamW, foreach */
	TRAIN_OPT_ADAMW_8BIT,       /* adamw_8bit: bitsandbytes AdamW8bit */
	TRAIN_OPT_PAGED_ADAMW_8BIT, /* paged_adamw_8bit: its states in unified memory */
	TRAIN_OPT_SGD,              /* sgd: torch.optim.SGD without momentum */
	TRAIN_OPT_ADAMW_FUSED,      /* adamw_torch_fused: torch.optim.AdamW(fused=True) */
	TRAIN_OPT_ADAFACTOR,        /* adafactor: transformers' Adafactor, factored moments */
	TRAIN_OPT_COUNT
};
enum train_provider {
	TRAIN_PROVIDER_HUGGINGFACE,
	TRAIN_PROVIDER_UNSLOTH
};

/* How full fine-tuning keeps its numbers, and whether the forward runs under autocast (LoRA
 * adapters are fp32 in either). */
enum train_precision {
	TRAIN_PRECISION_BF16 = 0, /* weights, gradients and AdamW moments all in bf16, as torch
				     keeps them for a bf16 model: 2 + 2 + 4 bytes per parameter;
				     adapters: the forward in the base's 16 bits, no autocast
				     (PEFT casts each adapter's input to fp32) */
	TRAIN_PRECISION_AMP       /* fp32 weights (the master copy), fp32 gradients and moments,
				     bf16 autocast compute: 4 + 4 + 8 bytes per parameter;
				     adapters: bf16 autocast, as the Trainer's bf16=True runs
				     (each adapter's input cast back to bf16 for its matmul) */
};

/* How the loss is computed over the vocabulary. */
enum train_loss {
	TRAIN_LOSS_AUTO = 0,     /* by provider: transformers for Hugging Face, fused for Unsloth */
	TRAIN_LOSS_TRANSFORMERS, /* all logits in 16 bits, an fp32 upcast, log-softmax, gradient */
	TRAIN_LOSS_CHUNKED       /* chunked/fused cross-entropy (Unsloth, Liger, torchtune): only
				    one chunk of logits lives at a time */
};

/* What is trained. */
enum train_objective {
	TRAIN_OBJECTIVE_SFT = 0,
	TRAIN_OBJECTIVE_DPO,  /* chosen and rejected sequences, plus a frozen reference model */
	TRAIN_OBJECTIVE_ORPO, /* chosen and rejected sequences, no reference model */
	TRAIN_OBJECTIVE_KTO,  /* TRL's KTOTrainer: unpaired rows, a reference model, and a
				 mismatched "KL batch" run forward without gradients */
	TRAIN_OBJECTIVE_GRPO  /* TRL's GRPOTrainer: rows are generated completions (prompt +
				 completion), the loss on the completions; a reference model
				 only with a KL term (beta > 0) */
};

/* Where GRPO's completions are generated (TRL's use_vllm and vllm_mode). */
enum train_generation {
	TRAIN_GEN_TRANSFORMERS = 0, /* model.generate in the training process (use_vllm false) */
	TRAIN_GEN_VLLM_SERVER,      /* a vLLM server on other GPUs (trl vllm-serve) */
	TRAIN_GEN_VLLM_COLOCATE     /* vLLM in the training process, holding its share of the GPU */
};

/* How several GPUs share the work (core/fit/train_parallel.h has the rules). */
enum train_strategy {
	TRAIN_STRATEGY_NONE = 0,  /* one GPU */
	TRAIN_STRATEGY_DDP,       /* every GPU holds everything; gradients all-reduced */
	TRAIN_STRATEGY_ZERO1,     /* optimizer states sharded */
	TRAIN_STRATEGY_ZERO2,     /* optimizer states and gradients sharded */
	TRAIN_STRATEGY_ZERO3,     /* optimizer states, gradients and weights sharded */
	TRAIN_STRATEGY_FSDP,      /* PyTorch FSDP full sharding: as ZeRO-3 */
	TRAIN_STRATEGY_FSDP_QLORA /* FSDP over the 4-bit base (Answer.AI/bitsandbytes) */
};

/* What ZeRO/FSDP moves to host memory. */
enum train_offload {
	TRAIN_OFFLOAD_NONE = 0,
	TRAIN_OFFLOAD_OPTIMIZER,           /* optimizer states, master weights, fp32 gradients */
	TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS /* and the weights (ZeRO-3/FSDP only) */
};

/* LoRA target modules, as bits (PEFT's names in comments). */
enum train_lora_target {
	TRAIN_LORA_Q = 1 << 0,    /* q_proj */
	TRAIN_LORA_K = 1 << 1,    /* k_proj */
	TRAIN_LORA_V = 1 << 2,    /* v_proj */
	TRAIN_LORA_O = 1 << 3,    /* o_proj */
	TRAIN_LORA_GATE = 1 << 4, /* gate_proj */
	TRAIN_LORA_UP = 1 << 5,   /* up_proj */
	TRAIN_LORA_DOWN = 1 << 6, /* down_proj */
	TRAIN_LORA_ALL_LINEAR = 0x7f,
};

/* The dimensions training depends on (filled from the architecture by the caller). */
struct train_model {
	int64_t params_total;     /* every weight */
	int64_t params_embedding; /* input token embedding */
	int64_t params_output;    /* output head; 0 when tied to the embedding */
	int64_t n_layers;
	int64_t hidden;
	int64_t intermediate; /* FFN width one token passes through (per expert for MoE) */
	int64_t n_heads;
	int64_t n_kv_heads;
	int64_t head_dim;
	int64_t vocab;
	bool gated_ffn;    /* SwiGLU/GeGLU (gate, up, down) rather than up, down */
	int64_t n_experts; /* 0 or 1: dense */
	int64_t n_experts_per_tok;
};

struct train_settings {
	enum train_mode mode;
	int weight_bits; /* 16 (bf16/fp16) or 32 for full and LoRA; ignored for QLoRA; 32 for
			    full fine-tuning is precision AMP (fp32 master weights) */
	int64_t batch_size;
	int64_t seq_len;
	int64_t lora_rank;
	unsigned lora_targets; /* train_lora_target bits; 0: all linear layers */
	bool gradient_checkpointing;
	enum train_optimizer optimizer;
	enum train_provider provider;
	bool flash_attention; /* SDPA/FlashAttention: no seq x seq scores are kept */
	/* Fields below were added later; zero is the default for each, so an initializer that
	 * stops at flash_attention keeps its meaning. */
	enum train_precision precision; /* full: the states; adapters: autocast or not */
	enum train_loss loss;
	enum train_objective objective;
	bool precomputed_ref_logps; /* DPO: reference log-probs computed beforehand (no model) */
	enum train_strategy strategy;
	enum train_offload offload;
	int n_gpus;            /* GPUs in the run, all nodes together; 0 or 1: one */
	int nodes;             /* machines the GPUs are spread over; 0 or 1: one */
	bool packing;          /* sample packing: every row is seq_len tokens of whole documents */
	bool varlen_attention; /* flash-attention (attention "flash"): its varlen kernel takes
				  packed documents and padded rows by their positions: no mask */
	/* DeepSpeed ZeRO-1/2's reduce_bucket_size in elements (0: DeepSpeed's default, 5e8) and
	 * overlap_comm (a second bucket, double-buffered). */
	int64_t zero_bucket_elems;
	bool zero_overlap_comm;
	/* Micro-batches per optimizer step: 0 not known, and the gradients are counted through
	 * the whole step, as accumulation keeps them between micro-batches; 1 none, and the
	 * Trainer's zero_grad (set_to_none) leaves them unallocated until backward reaches them. */
	int grad_accum_steps;
	/* LoRA dropout above zero: every adapter keeps a one-byte mask of its input. */
	bool lora_dropout;
	/* The rows of a batch are padded to a common length (a collator padding to the longest
	 * row, or to max_length): transformers then hands SDPA a 4D mask. */
	bool padded;
	/* The run compiles its element-wise work (torch.compile, as torchtune's recipes do):
	 * the LoRA path and the optimizer step fuse into a few kernels, with no Python dispatch
	 * per projection. Speed only. */
	bool compiled;
	/* GRPO (TRL's GRPOTrainer). batch_size counts completions per GPU
	 * (per_device_train_batch_size) and seq_len is a prompt and its completion; the
	 * completions of one optimizer step (batch_size x grad_accum_steps a GPU: TRL's
	 * steps_per_generation defaults to the accumulation steps) are generated together. */
	int64_t completion_len; /* max_completion_length, part of seq_len */
	bool grpo_reference;    /* beta > 0: TRL loads a reference model */
	enum train_generation generation;
	double vllm_share;        /* colocated vLLM's vllm_gpu_memory_utilization (0..1] */
	int64_t gpu_memory_bytes; /* the GPU's memory the share is of; 0 unknown: vLLM's own
				     need (its 16-bit weights and the completions' KV cache) */
};

struct train_memory {
	int64_t trainable_params;
	int64_t weights_bytes; /* frozen or trained base weights on the GPU */
	int64_t adapter_bytes; /* LoRA A and B matrices */
	int64_t gradients_bytes;
	int64_t optimizer_bytes;
	int64_t activations_bytes; /* kept for the backward pass, plus one layer's backward work */
	int64_t logits_bytes;      /* logits, their fp32 copy and the loss gradient */
	int64_t overhead_bytes;    /* CUDA context and allocator slack */
	int64_t total_bytes;       /* peak on each GPU */
	/* Added later. */
	int64_t reference_bytes;     /* DPO reference model weights on the GPU (in total_bytes) */
	int64_t host_bytes;          /* host RAM per node: offloaded states, weights, checkpoints */
	int64_t comm_bytes_per_step; /* bytes each GPU sends per optimizer step (ring collectives) */
	int64_t checkpoint_bytes;    /* layer inputs kept for recomputation (on the host when
					offloaded; counted in activations_bytes otherwise) */
	int n_gpus;                  /* GPUs the estimate spreads over (1 without a strategy) */
	int64_t mask_bytes;          /* the 4D mask transformers builds once a forward (batch x 1
			       x seq x seq; in activations_bytes): eager attention's, in the
			       embedding's dtype, or SDPA's boolean one for packed or padded rows,
			       whose per-layer 16-bit copies are in the layers' activations */
	int64_t bucket_bytes; /* DeepSpeed ZeRO-1/2's contiguous gradient buckets (in total) */
	int64_t optimizer_temp_bytes; /* the optimizer step's temporaries (foreach AdamW: the
					 moments' square roots; Adafactor: fp32 copies of one
					 tensor; fused and 8-bit AdamW: none), held next to the
					 gradients once backward is over; the total holds the
					 larger of this and the forward and backward's
					 activations and loss */
	int64_t reused_bytes; /* the loss's buffers and one layer's backward work are never alive
				 together: the smaller of the two, counted in logits_bytes or
				 activations_bytes and taken off total_bytes */
	int64_t autocast_weights_bytes; /* AMP: autocast's bf16 copies of the fp32 weights, kept
					   from the forward to the backward (in
					   activations_bytes) */
	int64_t reserved_bytes;         /* what the GPU shows held (torch.cuda.max_memory_reserved()
				   and the context) when it has memory to spare: total_bytes, or
				   more where the caching allocator keeps the optimizer step's
				   blocks and reserves the loss's anew, or reserves eager
				   attention's score tensors twice over (see train_memory.c) */
	int64_t reference_logits_bytes; /* DPO and KTO: the reference's forward (no gradients)
					   runs after the policy's, while its activations and
					   logits are held: its 16-bit logits and one row's
					   log-softmax (in total_bytes) */
	int64_t kv_cache_bytes;         /* GRPO: the generated completions' KV cache (prompt +
				   completion, every layer, 16 bits) */
	int64_t generation_bytes;       /* GRPO: what generation holds beyond the weights and
				   optimizer states: the KV cache and the prefill's layer work
				   (model.generate, a phase of its own before the training
				   forward), or colocated vLLM's share of the GPU, held all the
				   time */
};

/* Returns whether settings s run a reference model in the training step (DPO and KTO without
 * precomputed log-probs, GRPO with beta > 0). */
bool train_has_reference(const struct train_settings *s);

/* Returns the rows one GRPO generation batch holds per GPU: batch_size x the accumulation
 * steps (TRL's steps_per_generation defaults to gradient_accumulation_steps). */
int64_t train_generation_rows(const struct train_settings *s);

/* Returns the KV cache bytes one token keeps over all layers (keys and values in 16 bits). */
int64_t train_kv_bytes_per_token(const struct train_model *m);

/* Estimates the peak memory of one training step on each GPU, with the strategy, offload and GPU
 * count of s (one GPU by default), and the host memory that offloading needs. batch_size is per
 * GPU (per_device_train_batch_size). Returns 0 and fills *out, or RF_E_INVALID_VALUE for
 * dimensions or settings out of range (zero sizes, rank above hidden, products that overflow,
 * a strategy the mode cannot use, parameter offload without weight sharding). */
int train_memory_estimate(const struct train_model *m, const struct train_settings *s,
			  struct train_memory *out /* OUT */);

/* Returns the LoRA parameters per unit of rank for the targeted modules of all layers (the
 * adapter has rank x this many parameters). */
int64_t train_lora_params_per_rank(const struct train_model *m, unsigned targets);

/* Returns the bytes one token keeps in one layer for backward without checkpointing: for the
 * Hugging Face stack, what transformers, PEFT and torch's autograd save with s's mode,
 * precision, adapters, dropout and attention (measured tensor by tensor); for Unsloth, the
 * 16-bit tensors a block needs. */
int64_t train_activation_bytes_per_token_layer(const struct train_model *m,
					       const struct train_settings *s);

/* Returns the bytes per token and vocabulary entry that the loss keeps at its peak with loss
 * kernel l resolved for provider p (TRAIN_LOSS_AUTO resolved): 16 for transformers' chain, 0
 * for a chunked loss (whose chunk is sized from the hidden size instead). */
int train_loss_bytes_per_logit(enum train_loss l, enum train_provider p);

/* Returns the bytes of one element of the residual stream (each layer's input, which gradient
 * checkpointing keeps): 4 where the embedding is held in fp32 on one GPU or under DDP (Hugging
 * Face QLoRA, whose embedding PEFT upcasts; an fp32 LoRA base; AMP), else 2: DeepSpeed casts
 * the module to bf16 and FSDP computes from 16-bit copies. */
int train_residual_bytes(const struct train_settings *s);

/* The 4D attention mask transformers builds for s. */
enum train_attention_mask {
	TRAIN_MASK_NONE,  /* SDPA on unpadded rows (is_causal), flash-attention (varlen) */
	TRAIN_MASK_EAGER, /* eager attention: one additive mask, added to every layer's scores */
	TRAIN_MASK_SDPA,  /* SDPA on packed or padded rows: one boolean mask, which every
			     layer's SDPA converts to an additive one in q's dtype and keeps */
};

/* Returns the mask s's attention gets (Hugging Face; Unsloth's attention is its own). */
enum train_attention_mask train_attention_mask(const struct train_settings *s);

/* Returns whether the rows of a batch are taken as padded when the request does not say: a
 * micro-batch of several rows without packing, which a collator pads to its longest row. */
bool train_default_padded(const struct train_settings *s);

/* Returns whether LoRA dropout is on when the request does not say: PEFT's examples' 0.05 for
 * adapters with Hugging Face; none for full fine-tuning or Unsloth, whose fast kernels want
 * none. */
bool train_default_lora_dropout(enum train_mode mode, enum train_provider provider);
/* Returns the loss kernel TRAIN_LOSS_AUTO means for provider p. */
enum train_loss train_loss_resolve(enum train_loss l, enum train_provider p);

/* bitsandbytes' paged optimizers keep their states in CUDA unified memory, which the driver
 * pages out to host RAM when the GPU runs short. When r (an estimate of s) exceeds
 * budget_bytes with a paged optimizer and would fit with its states on the host, moves them
 * there (r->optimizer_bytes to r->host_bytes, totals adjusted) and returns true; else leaves r
 * alone and returns false. */
bool train_page_optimizer(const struct train_settings *s, int64_t budget_bytes,
			  struct train_memory *r /* IN/OUT */);

/* Returns the largest seq_len (1 .. max_seq) whose estimate with s fits budget_bytes per GPU
 * and, when host_budget_bytes >= 0, host_budget_bytes of host RAM; 0 when not even one token
 * fits. Bisection over the estimate, which grows with the sequence. */
int64_t train_max_seq_len(const struct train_model *m, const struct train_settings *s,
			  int64_t max_seq, int64_t budget_bytes, int64_t host_budget_bytes);

#endif
