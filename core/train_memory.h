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
enum train_optimizer {
	TRAIN_OPT_ADAMW,
	TRAIN_OPT_ADAMW_8BIT,
	TRAIN_OPT_PAGED_ADAMW_8BIT,
	TRAIN_OPT_SGD
};
enum train_provider {
	TRAIN_PROVIDER_HUGGINGFACE,
	TRAIN_PROVIDER_UNSLOTH
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
	int weight_bits; /* 16 (bf16/fp16) or 32 for full and LoRA; ignored for QLoRA */
	int64_t batch_size;
	int64_t seq_len;
	int64_t lora_rank;
	unsigned lora_targets; /* train_lora_target bits; 0: all linear layers */
	bool gradient_checkpointing;
	enum train_optimizer optimizer;
	enum train_provider provider;
	bool flash_attention; /* SDPA/FlashAttention: no seq x seq scores are kept */
};

struct train_memory {
	int64_t trainable_params;
	int64_t weights_bytes; /* frozen or trained base weights on the GPU */
	int64_t adapter_bytes; /* LoRA A and B matrices */
	int64_t gradients_bytes;
	int64_t optimizer_bytes;
	int64_t activations_bytes; /* kept for the backward pass */
	int64_t logits_bytes;      /* logits, their fp32 copy and the loss gradient */
	int64_t overhead_bytes;    /* CUDA context and allocator slack */
	int64_t total_bytes;
};

/* Estimates the peak memory of one training step on one GPU. Returns 0 and fills *out, or
 * RF_E_INVALID_VALUE for dimensions or settings out of range (zero sizes, rank above hidden,
 * products that overflow). */
int train_memory_estimate(const struct train_model *m, const struct train_settings *s,
			  struct train_memory *out /* OUT */);

/* Returns the LoRA parameters per unit of rank for the targeted modules of all layers (the
 * adapter has rank x this many parameters). */
int64_t train_lora_params_per_rank(const struct train_model *m, unsigned targets);

/* Returns the activation bytes one token keeps in one layer without checkpointing
 * (16-bit activations). */
int64_t train_activation_bytes_per_token_layer(const struct train_model *m, int64_t seq_len,
					       bool flash_attention);

#endif
