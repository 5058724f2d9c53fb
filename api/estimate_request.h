/*
 * The settings of one estimate: the body of POST /api/estimate (and `rigfit estimate`) less its
 * model and machine, parsed and checked. The estimate route parses it from JSON; the planning
 * routes fill it directly for the setup they chose and hand it to api_estimate_resolved
 * (api/estimate.h) with the model and machine they already resolved, so no route builds a JSON
 * request for another. Each setting has a has_* flag: unset, the runtime's default is taken
 * and said in the answer's assumptions.
 */
#ifndef RIGFIT_API_ESTIMATE_REQUEST_H
#define RIGFIT_API_ESTIMATE_REQUEST_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "core/fit/estimate.h"
#include "core/plan/plan_train_eval.h"

/* What is estimated: inference, or fine-tuning with a method. */
enum api_est_mode {
	API_EST_INFERENCE,
	API_EST_LORA,
	API_EST_QLORA,
	API_EST_FULL
};

/* The largest fine-tuning batch_size (and what "max" searches up to). */
#define API_EST_MAX_BATCH PLAN_TRAIN_MAX_BATCH

enum api_est_runtime {
	API_EST_RT_LLAMA_CPP,
	API_EST_RT_VLLM
};

/* The names of each enumerated setting, in the order of its index, ended by NULL: the
 * request's field values and the answer's. */
extern const char *const api_est_modes[];      /* mode */
extern const char *const api_est_kv_types[];   /* kv_cache_type */
extern const char *const api_est_providers[];  /* provider */
extern const char *const api_est_runtimes[];   /* runtime */
extern const char *const api_est_vllm_kv[];    /* kv_cache_dtype */
extern const char *const api_est_precisions[]; /* precision when fine-tuning */
extern const char *const api_est_losses[];     /* loss */
extern const char *const api_est_attentions[]; /* attention */
extern const char *const api_est_objectives[]; /* objective */
extern const char *const api_est_vllm_modes[]; /* vllm_mode (GRPO's generation) */
/* Indexes into api_est_objectives (enum train_objective's order). */
#define API_EST_OBJECTIVE_KTO 3
#define API_EST_OBJECTIVE_GRPO 4
extern const char *const api_est_strategies[]; /* strategy: "auto", then enum train_strategy */
extern const char *const api_est_offloads[];   /* offload */
extern const char *const api_est_ropes[];      /* rope_scaling: none, linear, yarn */

struct api_estimate_request {
	int mode;
	bool has_mode;
	char quant[24];
	bool has_quant;
	int64_t n_ctx, n_batch, n_ubatch, n_parallel, n_gpu_layers, n_cpu_moe;
	bool has_n_ctx, has_n_batch, has_n_ubatch, has_n_parallel, has_n_gpu_layers, has_n_cpu_moe;
	int kv_type;
	bool has_kv_type;
	bool flash_attn, has_flash_attn;
	bool use_mmap, has_use_mmap, mlock, has_mlock, swa_full, has_swa_full;
	int64_t batch_size, seq_len, lora_rank;
	bool has_batch_size, has_seq_len, has_lora_rank;
	bool gradient_checkpointing, has_gradient_checkpointing;
	int optimizer, provider;
	bool has_optimizer, has_provider;
	double dataset_tokens, epochs, usd_per_hour;
	bool has_dataset_tokens, has_epochs, has_usd_per_hour;
	char hardware_profile[64];
	bool has_hardware_profile;
	unsigned lora_targets;     /* train_lora_target bits; 0: all linear layers */
	bool history, has_history; /* false: the roofline alone, without recorded runs */
	/* Serving: the runtime and vLLM's engine arguments; the traffic the batched speed is for. */
	int runtime, vllm_kv;
	bool has_runtime, has_vllm_kv;
	char precision[24];
	bool has_precision;
	int64_t tp, pp, max_model_len, max_num_seqs, max_num_batched_tokens;
	bool has_tp, has_pp, has_max_model_len, has_max_num_seqs, has_max_num_batched_tokens;
	double gpu_util;
	bool has_gpu_util;
	bool enforce_eager, has_enforce_eager;
	int64_t concurrency, prompt_tokens, output_tokens;
	bool has_concurrency, has_prompt_tokens, has_output_tokens;
	/* llama.cpp's --tensor-split: layer proportions per GPU; none given: free memory. */
	double split[RF_MAX_DEVICES];
	int n_split;
	/* Rope scaling as both runtimes set it (llama.cpp --rope-scaling/--rope-scale/
	 * --yarn-orig-ctx; vLLM --rope-scaling's rope_type, factor and
	 * original_max_position_embeddings): the context it lets a request reach. */
	int rope;
	bool has_rope;
	double rope_scale;
	bool has_rope_scale;
	int64_t yarn_orig_ctx;
	bool has_yarn_orig_ctx;
	/* Fine-tuning, added later. */
	int train_precision, loss, attention, objective, strategy, offload;
	bool has_loss, has_attention, has_objective, has_strategy, has_offload;
	bool precomputed_ref_logps, has_precomputed_ref_logps;
	int64_t nodes;
	bool has_nodes;
	bool packing, has_packing;
	int64_t grad_accum;
	bool has_grad_accum;
	double lora_dropout;
	bool has_lora_dropout;
	bool padded, has_padded;
	bool compiled, has_compiled;
	/* GRPO (TRL's GRPOConfig names). */
	int64_t num_generations, max_prompt_length, max_completion_length;
	bool has_num_generations, has_max_prompt_length, has_max_completion_length;
	double beta, vllm_share;
	bool has_beta, has_vllm_share;
	bool use_vllm, has_use_vllm;
	int vllm_mode;
	bool has_vllm_mode;
};

/* Sets rq to a request that gives nothing (inference, every default). */
void api_estimate_request_init(struct api_estimate_request *rq /* OUT */);

/* Parses body, an object with the fields of POST /api/estimate, into rq (its model, hardware
 * and hardware_profile are read by the resolver, not here; hardware_profile's name is kept in
 * rq). Checks types, ranges and that the settings belong to the runtime and mode asked for.
 * Returns 0, or a negative rf_err with the error envelope in out naming the field. */
int api_estimate_request_parse(const cJSON *body, struct api_estimate_request *rq /* OUT */,
			       struct api_reply *out);

/* Checks that rq's settings belong to its runtime and mode (llama.cpp's refused with runtime
 * vllm and the other way round; precision for fine-tuning is bf16 or amp, whose index it sets
 * in rq->train_precision). Returns 0, or a negative rf_err with the envelope in out. */
int api_estimate_request_check(struct api_estimate_request *rq, struct api_reply *out);

#endif
