/*
 * validate's rules and advice: is a runtime config (llama.cpp's or vLLM's) right for a machine,
 * why not, and what to change. The model, the machine and the config's setup go in as structs;
 * the findings (a stable code, error or warning, the setting at fault, a message and a
 * suggestion) come out, with the setup the planner chooses here when a memory rule fails.
 *
 * The memory rules evaluate the config's own setup with plan_evaluate (llama.cpp) or vLLM's
 * start-up model (core/fit/serve_vllm.h), as /api/estimate does. Every number a suggestion
 * carries is the planner's: the largest n_ctx (plan_largest_ctx, the planner's context search)
 * and the most GPU layers (plan_most_gpu_layers) that fit, the headroom of PLAN_MAX_GPU_UTIL
 * and vLLM's PLAN_VLLM_GPU_UTIL(_HIGH), and a weight format from plan_infer's own choice, so
 * applying a suggestion makes the config valid and every config /api/config writes validates.
 *
 * Codes (stable; openapi.yaml lists them): vram_exceeded, vram_over_90, ram_exceeded,
 * threads_over_physical, ubatch_over_batch, batch_over_ctx, ctx_over_model,
 * gpu_layers_over_model, kv_quant_needs_flash_attn, backend_unavailable, thermal_risk,
 * unknown_model (the route's: the model could not be named), tensor_split_overloads_gpu;
 * vLLM's vram_not_free, kv_capacity_exceeded, cuda_graphs_exceeded, parallel_over_gpus,
 * tp_not_dividing_heads, quantization_needs_checkpoint.
 *
 * Pure: no I/O. plan_check allocates its working set (weights, the planner's answer) and frees
 * it before returning.
 */
#ifndef RIGFIT_CORE_PLAN_CHECK_H
#define RIGFIT_CORE_PLAN_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/serve_vllm.h"
#include "core/hw/hw.h"
#include "core/plan/plan_estimate.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_infer.h"

#define PLAN_CHECK_MAX 24
#define PLAN_CHECK_TEXT 320
#define PLAN_CHECK_FIELD 64
/* n_batch where a laptop or embedded GPU starts to throttle under long bursts. */
#define PLAN_CHECK_THERMAL_BATCH 512
/* -ngl 99 and above: "every layer", as llama.cpp's docs write it. */
#define PLAN_CHECK_NGL_ALL 99

struct plan_check_finding {
	const char *code; /* static */
	bool error;
	/* The setting at fault as the config names it inside its settings ("n_ctx",
	 * "tensor_parallel_size"), or one of the config's own fields: "backend", "runtime",
	 * "model.id", "quant" (llama.cpp's weight format) and "quantization" (vLLM's); "" none.
	 * The route writes it where the config has it ("settings.n_ctx"). */
	char field[PLAN_CHECK_FIELD];
	char message[PLAN_CHECK_TEXT];
	char suggestion[PLAN_CHECK_TEXT];
};

/* The config, as written and as its runtime runs it. */
struct plan_check_config {
	bool vllm;
	/* llama.cpp: the setup as llama.cpp runs it (its defaults filled in, the KV types it
	 * would allocate, flash attention on where a quantized V cache needs it), ftype the
	 * weights' file type; the config's tensor_split (n_split 0: by free memory). */
	struct plan_setup s;
	double split[RF_MAX_DEVICES];
	int n_split;
	/* As written. */
	const char *backend; /* NULL: not given */
	bool has_ctx, has_ngl, has_threads, has_ubatch, has_parallel;
	int64_t ngl, n_threads, n_batch /* 2048 unless given */, n_ubatch;
	bool quant_given;      /* the config names its weights' format */
	bool kv_f16;           /* the KV cache is f16 (f32 and bf16 count as f16) */
	const char *cache_v;   /* cache_type_v's name when it is quantized; NULL otherwise */
	bool fa_on;            /* flash_attn true given */
	bool rope_on;          /* rope_scaling linear or yarn */
	double rope_scale;     /* <= 0: not given */
	int64_t yarn_orig_ctx; /* rope_scaling yarn's original window; <= 0: not given (llama.cpp
				  takes the trained one) */
	/* vLLM: the engine arguments (vLLM's defaults where not given; precision resolved, a
	 * checkpoint's own quantization included) and which were given. */
	struct vllm_setup v;
	bool has_tp, has_pp, has_mml, has_util, kv_fp8;
	/* vLLM: what the model's checkpoint stores (enum vllm_precision; VLLM_BF16 for plain
	 * weights; -1 unknown: not checked) and its catalog entry (NULL: outside the catalog),
	 * for whether the config's quantization can be loaded (plan_vllm_loadable). */
	int own_precision;
	const struct model_entry *entry;
};

/* The machine: the evaluator's (plan_input's), with the snapshot's facts the rules read
 * (backend, GPU vendors, cores) and whether a GPU is a laptop, Jetson or other mobile part. */
struct plan_check_machine {
	const struct plan_machine *pm;
	const struct hw_snapshot *hw;
	bool mobile;
};

struct plan_check_answer {
	int n;
	struct plan_check_finding f[PLAN_CHECK_MAX];
	/* A memory rule failed or warned: the setup the planner chooses for the model here
	 * (general use, the config's runtime, quant and n_ctx kept where they fit, else the
	 * planner's), planned true when it found one, with its summary line (also appended to
	 * the memory findings' suggestions). */
	bool planned;
	struct plan_choice plan;
	char plan_line[PLAN_CHECK_TEXT];
	/* vLLM: the layout was refused before anything loads (backend_unavailable,
	 * parallel_over_gpus, tp_not_dividing_heads): the memory rules were not asked. */
	bool layout_refused;
};

/* Adds a finding to a (NULL when it is full): the route's own, such as unknown_model. */
struct plan_check_finding *plan_check_add(struct plan_check_answer *a, const char *code, bool error,
					  const char *field);

/* Checks config c of model m (NULL: the model is unknown, only the rules that need no model
 * run) on machine hw, the planner rating quality with q (NULL: no planner's setup): llama.cpp's settings and memory rules;
 * vLLM's memory rules (after plan_check_vllm_layout, unless it refused). Returns 0 and *out,
 * or RF_E_NOMEM. The findings already in out (plan_check_add) are kept. */
int plan_check(const struct plan_model *m, const struct plan_check_machine *hw,
	       const struct plan_quality *q, const struct plan_check_config *c,
	       struct plan_check_answer *out /* IN/OUT */);

/* vLLM's layout rules, which vLLM applies before it loads anything: a machine without CUDA or
 * ROCm GPUs, a quantization the checkpoint cannot be loaded in, tensor_parallel_size x
 * pipeline_parallel_size against the GPUs and the model's heads (a: the validated
 * architecture). Adds the finding to out, sets out->layout_refused and
 * returns true when one failed. A route asks this before the estimate it shows; plan_check
 * then adds the memory rules unless the layout was refused. */
bool plan_check_vllm_layout(const struct model_arch *a, const struct plan_check_machine *hw,
			    const struct plan_check_config *c, struct plan_check_answer *out);

/* Returns the n_gpu_layers llama.cpp is given for setup s of a on hw: 0 without GPUs, every
 * layer and the output (n_layer + 1) for "all". */
int64_t plan_check_gpu_layers(const struct model_arch *a, const struct plan_machine *hw,
			      const struct plan_setup *s);

/* Returns the number of error-level findings of a. */
int plan_check_errors(const struct plan_check_answer *a);

#endif
