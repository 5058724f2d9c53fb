/*
 * Fine-tuning on several GPUs: how data parallelism (DDP), DeepSpeed ZeRO stages 1-3, PyTorch
 * FSDP and FSDP over a 4-bit base (FSDP-QLoRA) divide the model states between GPUs, what
 * ZeRO-Offload/FSDP CPU offload moves to host memory, and how many bytes each GPU sends per
 * step. The per-GPU model states follow the ZeRO paper's accounting (Rajbhandari et al. 2020,
 * "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", section 5): with Psi
 * parameters, N GPUs and K bytes of optimizer state per parameter, DDP holds (2 + 2 + K) Psi,
 * stage 1 2 Psi + 2 Psi + K Psi / N, stage 2 2 Psi + (2 + K) Psi / N, stage 3 (2 + 2 + K) Psi /
 * N, plus the layers gathered for compute. Used by core/fit/train_memory.c; pure arithmetic.
 * Choosing a strategy and a GPU count is a decision: core/plan/plan_strategy.h.
 */
#ifndef RIGFIT_CORE_TRAIN_PARALLEL_H
#define RIGFIT_CORE_TRAIN_PARALLEL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/train_memory.h"

/* The model states of the whole model before sharding, in bytes (filled by train_memory.c). */
struct train_states {
	int64_t trainable_params;
	double base_bytes;               /* the base (or trained) weights as stored */
	double gathered_bytes_per_param; /* one weight as gathered for compute (16-bit or NF4) */
	double adapter_bytes;            /* LoRA A and B (fp32) */
	double grad_bytes;               /* gradients of the trained weights */
	double optimizer_bytes;          /* optimizer states */
	double largest_trained_elems;    /* elements of the largest trained tensor */
	double reference_bytes;          /* DPO's reference copy of the weights */
	bool amp;                        /* full fine-tuning with fp32 master weights */
};

/* Returns 0 when the strategy, offload, GPU and node counts of s can be used together with its
 * mode, else RF_E_INVALID_VALUE: FSDP-QLoRA needs QLoRA; parameter offload needs ZeRO-3 or
 * FSDP; optimizer offload needs a ZeRO stage or FSDP; more than 4096 GPUs, nodes that do not
 * divide the GPUs. */
int train_parallel_check(const struct train_settings *s);

/* Returns the GPUs of s that hold work: 1 without a strategy, else n_gpus (at least 1). */
int train_gpus(const struct train_settings *s);

/* Returns the GPUs on each node (train_gpus / nodes, at least 1). */
int train_gpus_per_node(const struct train_settings *s);

/* Writes the per-GPU weights, adapters, gradients, optimizer and reference bytes of st, as s's
 * strategy and offload place them, into r; sets r->host_bytes (per node), r->n_gpus and
 * r->comm_bytes_per_step. Returns 0 or RF_E_INVALID_VALUE (see train_parallel_check). */
int train_parallel_apply(const struct train_model *m, const struct train_settings *s,
			 const struct train_states *st, struct train_memory *r /* IN/OUT */);

/* Names as the API spells them ("none", "ddp", "zero1", ... "fsdp_qlora"; "none",
 * "optimizer", "optimizer_and_params"). Static strings; "unknown" out of range. */
const char *train_strategy_name(enum train_strategy st);
/* True for DeepSpeed's ZeRO stages (zero1, zero2, zero3), whose mixed-precision optimizers keep
 * an fp32 master copy and fp32 moments whatever the model's dtype. */
bool train_strategy_is_zero(enum train_strategy st);
const char *train_offload_name(enum train_offload o);

#endif
