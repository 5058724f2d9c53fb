/*
 * POST /api/config (and `rigfit config`): a runtime configuration for one model on one machine,
 * for llama.cpp's llama-server or for vLLM, chosen for a use case (general, long_context, speed,
 * quality) and checked by the estimator. When the first choice does not fit, the settings are
 * lowered step by step (context, KV cache type, precision, GPU layers) and every step is
 * reported with its reason; when nothing fits the answer is a 422 saying how much memory would.
 */
#ifndef RIGFIT_API_RUNTIME_CONFIG_H
#define RIGFIT_API_RUNTIME_CONFIG_H

#include "api/api.h"

/* The handler of POST /api/config. The body: model (as /api/estimate), use_case, precision,
 * n_ctx, n_parallel, runtime ("llama.cpp" | "vllm"), hardware or hardware_profile. Answers 200
 * with {backend, model, settings, metadata, downgrades, assumptions, command}, or an error
 * envelope naming the field (422 model when no configuration fits). Returns 0 or a negative
 * rf_err. */
int api_config(const struct api_env *env, const struct api_request *req, struct api_reply *out);

#endif
