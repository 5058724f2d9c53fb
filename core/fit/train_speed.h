/*
 * Fine-tuning throughput: the model FLOPs of one trained token (forward, backward of the
 * activations, weight gradients for full fine-tuning, the attention term that grows with the
 * sequence, one more forward with gradient checkpointing, the adapters' own matmuls) over the
 * device's dense bf16 tensor peak with fp32 accumulate times a utilisation fitted per device
 * class to published runs; plus the memory-bound parts that FLOPs miss (NF4 dequantisation
 * of every linear weight per pass, LoRA's extra reads of each adapted input, the optimizer
 * step) and, on several GPUs, the communication that backward does not hide; for GRPO, the
 * generation of the completions, bound by memory bandwidth per decoding step. Pure arithmetic.
 */
#ifndef RIGFIT_CORE_TRAIN_SPEED_H
#define RIGFIT_CORE_TRAIN_SPEED_H

#include <stdint.h>

#include "core/fit/train_memory.h"

enum train_device_class {
	TRAIN_CLASS_CONSUMER = 0, /* GeForce, Radeon RX, laptops */
	TRAIN_CLASS_WORKSTATION,  /* RTX A/Ada workstation cards */
	TRAIN_CLASS_DATACENTER,   /* A100, H100, MI300X... */
	TRAIN_CLASS_OTHER         /* Apple, Jetson, integrated: no fitted figure */
};

/* One GPU of the run (all GPUs are taken alike). */
struct train_device {
	double bf16_tflops;   /* dense bf16 tensor peak with fp32 accumulate; <= 0 unknown */
	double bandwidth_gbs; /* memory bandwidth, GB/s; <= 0 unknown */
	enum train_device_class device_class;
	double link_gbs;      /* collective bandwidth between GPUs of a node; <= 0: by class */
	double internode_gbs; /* per GPU between nodes; <= 0: 25 GB/s (200 Gb/s) */
};

struct train_speed {
	double flops_per_token; /* model FLOPs of one trained token */
	double utilisation;     /* the fitted share of the peak for the device class */
	double compute_s;       /* per step and GPU: FLOPs / (peak x utilisation) */
	double memory_s;        /* NF4 dequantisation, adapter reads, the optimizer step */
	double offload_s;       /* host <-> GPU traffic of offloaded states */
	double comm_s;          /* communication not hidden behind backward */
	double step_s;          /* one optimizer step of batch_size x seq_len per GPU */
	double tokens_per_s;    /* all GPUs together */
	double scaling;         /* tokens_per_s / (GPUs x one GPU's tokens_per_s alone) */
	/* Added later. */
	double generation_s; /* GRPO: generating the completions, per micro-batch (in step_s) */
};

/* Returns the model FLOPs of one trained token with settings s (see the top of this file),
 * with the forwards without gradients that the objective adds: the reference's (DPO, KTO,
 * GRPO with beta > 0) and KTO's KL batch through the policy and the reference. */
double train_flops_per_token(const struct train_model *m, const struct train_settings *s);

/* Returns the utilisation of the bf16 peak fitted for device class c with provider p: the
 * same for every provider, whose GEMMs are cuBLAS's (Unsloth's gain is in the memory-bound
 * work around them, train_speed_estimate). */
double train_utilisation(enum train_device_class c, enum train_provider p);

/* PEFT's host time an adapted module and pass (Python and autograd dispatch), fitted with the
 * rest on our H200 runs (see train_speed.c). */
#define TRAIN_PEFT_HOST_S 100e-6

/* The experts of one MoE layer that a micro-batch of tokens reaches, each token routed to
 * n_experts_per_tok of n_experts at random: E x (1 - (1 - k/E)^tokens); 1 for a dense model.
 * The Hugging Face block runs (and PEFT dispatches) each of them separately. */
double train_experts_hit(const struct train_model *m, double tokens);

/* Estimates the throughput of settings s whose memory estimate is mem (for the GPU count,
 * communication and offloaded bytes) on devices like dev. Returns 0 and fills *out, or
 * RF_E_INVALID_VALUE when the device's peak is unknown or an input is out of range. */
int train_speed_estimate(const struct train_model *m, const struct train_settings *s,
			 const struct train_memory *mem, const struct train_device *dev,
			 struct train_speed *out /* OUT */);

#endif
