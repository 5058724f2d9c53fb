/*
 * Small models and machines the core planning tests share (test_plan_infer.c,
 * test_plan_estimate.c).
 */
#ifndef RIGFIT_TESTS_CORE_PLAN_FIXTURES_H
#define RIGFIT_TESTS_CORE_PLAN_FIXTURES_H

#include <stdint.h>

#include "core/fit/model.h"
#include "core/plan/plan_eval.h"

/* A small llama: 8 layers of 512, GQA 8/2, 32k context. */
void t_tiny_dense(struct model_arch *a /* OUT */);

/* One CUDA GPU with budget gpu bytes (all free) and host RAM of host bytes; vLLM does not run
 * on it (t_vllm_machine adds it). */
void t_gpu_machine(struct plan_machine *m /* OUT */, int64_t gpu, int64_t host);

/* The same machine with vLLM: the GPU's total memory as NVML reports it. */
void t_vllm_machine(struct plan_machine *m /* OUT */, int64_t gpu, int64_t host);

#endif
