/*
 * One setup, evaluated: the composition of the estimator's parts that every route shares.
 * A model (architecture, parameter counts, weights per quantization), a machine (memory budgets
 * per device and host, the speed model's hardware half) and one full setup (runtime, weight
 * format, KV cache types, flash attention, n_ctx, GPU layers, MoE experts kept in host memory,
 * n_parallel, batch and micro-batch) go in; the memory estimate (core/estimate.h) and the
 * speed (core/speed.h) come out. /api/estimate answers with it, and the planner
 * (core/plan/plan_infer.h) calls it for every setup it searches, so the two never disagree.
 *
 * vLLM is sized with the same memory model over vLLM's weight formats (bf16, fp8, AWQ int4,
 * counted from the F16 weights: plan_vllm_weights) inside the share of each GPU that
 * --gpu-memory-utilization gives it.
 *
 * Pure: no I/O, no allocation. The weights of a scheme come from the caller (a memo), so a
 * setup costs one rf_estimate_inference and one speed_predict.
 */
#ifndef RIGFIT_CORE_PLAN_EVAL_H
#define RIGFIT_CORE_PLAN_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/estimate.h"
#include "core/model.h"
#include "core/speed.h"

enum plan_runtime {
	PLAN_RT_LLAMA_CPP = 0,
	PLAN_RT_VLLM = 1,
};

/* vLLM's weight formats. */
enum plan_vllm_format {
	PLAN_VLLM_BF16 = 0,
	PLAN_VLLM_FP8 = 1, /* --quantization fp8: 1 byte per weight of the linear layers */
	PLAN_VLLM_AWQ = 2, /* an AWQ int4 checkpoint, group size 128 */
	PLAN_VLLM_FORMATS
};

/* vLLM's default --gpu-memory-utilization: the share of each GPU's total memory it may use. */
#define PLAN_VLLM_GPU_UTIL 0.90

/* The --gpu-memory-utilization to run vLLM with on a GPU of total bytes with free bytes free:
 * the default when at least 95% is free, else what is free less 5 points (at least 0.10), so
 * vLLM does not claim memory other processes hold. */
double plan_vllm_gpu_util(int64_t total_bytes, int64_t free_bytes);

/* Returns the flag value of format f ("fp8", "awq"; NULL for bf16: no --quantization). */
const char *plan_vllm_format_flag(enum plan_vllm_format f);

/* The weights of a vLLM checkpoint in format f, from the model's F16 weights f16: the
 * repeating layers' linear weights at 8 bits (fp8, per-channel scales) or 4 bits plus one
 * fp16 scale and one 4-bit zero per group of 128 (AWQ); embeddings and the LM head stay 16-bit,
 * as both formats leave them. */
void plan_vllm_weights(const struct rf_mem_weights *f16, enum plan_vllm_format f,
		       struct rf_mem_weights *out /* OUT */);

/* The machine, as the estimator and the speed model take it. */
struct plan_machine {
	struct rf_mem_device dev[RF_MAX_DEVICES];
	int64_t dev_total_bytes[RF_MAX_DEVICES]; /* total memory of each device; <= 0 unknown */
	int n_dev;
	struct rf_mem_host host;
	struct speed_input speed; /* the hardware half: backend, devices, host */
	int threads;              /* physical (performance) cores; 0 unknown */
};

/* One setup. p holds llama.cpp's settings (for vLLM: n_ctx is --max-model-len, n_parallel
 * --max-num-seqs, type_k/type_v F16 or Q8_0 standing for an fp8 cache). */
struct plan_setup {
	enum plan_runtime runtime;
	int ftype;                     /* llama.cpp: enum rf_ftype; vLLM: -1 */
	enum plan_vllm_format vformat; /* vLLM only */
	struct rf_infer_params p;
};

struct plan_result {
	struct rf_mem_estimate mem;
	double decode_tps;          /* tg128-like; < 0 unknown */
	double decode_tps_full_ctx; /* with the whole context filled; < 0 unknown */
	double gpu_util;            /* highest bytes / budget over the GPUs; -1 none known */
	bool fits;                  /* every device and the host within budget */
};

/* The speed model's inputs for a model with counts mp and weights w of file type ftype,
 * placed as m says, over the hardware half already in *in. The share of the bytes read per
 * token that the GPUs hold sets gpu_fraction: with routed experts in host memory
 * (n_cpu_moe) it is counted in bytes (the host reads only the active experts of its layers),
 * otherwise by layers. */
void plan_speed_model(const struct model_params *mp, const struct rf_mem_weights *w, int ftype,
		      const struct rf_mem_estimate *m, const struct rf_infer_params *p,
		      struct speed_input *in /* IN/OUT */);

/* The budgets a runtime plans in: the machine's, or for vLLM each GPU's share of its total
 * memory under plan_vllm_gpu_util. Writes n devices to dev. */
void plan_budgets(const struct plan_machine *hw, enum plan_runtime rt,
		  struct rf_mem_device dev[RF_MAX_DEVICES] /* OUT */);

/* Evaluates setup s of model (a, mp) with weights w (already in s's format: the scheme's, or
 * plan_vllm_weights' for vLLM) on hw. Returns 0 and *out, or RF_E_INVALID_VALUE with
 * out->mem.error_field naming the setting at fault. */
int plan_evaluate(const struct model_arch *a, const struct model_params *mp,
		  const struct rf_mem_weights *w, const struct plan_machine *hw,
		  const struct plan_setup *s, struct plan_result *out /* OUT */);

/* The highest bytes / budget over the GPUs of m; -1 when no GPU budget is known. */
double plan_gpu_util(const struct rf_mem_estimate *m);

#endif
