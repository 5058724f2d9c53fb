/*
 * The settings of POST /api/estimate, parsed and checked (api/estimate_request.h): the field
 * table the JSON is mapped by, the lists (lora_targets, tensor_split) and the rules that keep
 * a runtime's settings to that runtime.
 */
#include "api/estimate_request.h"

#include <math.h>
#include <string.h>

#include "api/jsonmap.h"
#include "core/err.h"
#include "core/fit/serve_vllm.h"
#include "core/fit/train_optimizer.h"

/* GPUs per node the fine-tuning estimate accepts (nodes x GPUs in the hardware). */
#define EST_MAX_NODES 1024

const char *const api_est_modes[] = {"inference", "lora", "qlora", "full", NULL};
const char *const api_est_kv_types[] = {"f16", "q8_0", "q4_0", NULL};
const char *const api_est_providers[] = {"huggingface", "unsloth", NULL};
const char *const api_est_runtimes[] = {"llama.cpp", "vllm", NULL};
const char *const api_est_vllm_kv[] = {"auto", "fp8", NULL};
const char *const api_est_precisions[] = {"bf16", "amp", NULL};
const char *const api_est_losses[] = {"auto", "transformers", "chunked", NULL};
const char *const api_est_attentions[] = {"sdpa", "flash", "eager", NULL};
const char *const api_est_objectives[] = {"sft", "dpo", "orpo", "kto", "grpo", NULL};
const char *const api_est_vllm_modes[] = {"server", "colocate", NULL};
const char *const api_est_strategies[] = {"auto",  "none", "ddp",        "zero1", "zero2",
					  "zero3", "fsdp", "fsdp_qlora", NULL};
const char *const api_est_offloads[] = {"none", "optimizer", "optimizer_and_params", NULL};
const char *const api_est_ropes[] = {"none", "linear", "yarn", NULL};

#define F(name, kind, field, size, lo, hi, has)                                                    \
	{                                                                                          \
		name, kind, offsetof(struct api_estimate_request, field), size, lo, hi, false,     \
			offsetof(struct api_estimate_request, has), NULL                           \
	}
#define E(name, field, has, choices)                                                               \
	{                                                                                          \
		name, JM_ENUM, offsetof(struct api_estimate_request, field), 0, 0, 0, false,       \
			offsetof(struct api_estimate_request, has), choices                        \
	}

static const struct jm_field est_fields[] = {
	{"model", JM_ANY, 0, 0, 0, 0, true, 0, NULL},
	{"hardware", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	{"lora_targets", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	{"tensor_split", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	E("mode", mode, has_mode, api_est_modes),
	F("quant", JM_STRING, quant, sizeof(((struct api_estimate_request *)0)->quant), 0, 0,
	  has_quant),
	F("n_ctx", JM_INT_OR_MAX, n_ctx, 0, 1, 1 << 24, has_n_ctx),
	F("n_batch", JM_INT, n_batch, 0, 1, 1 << 20, has_n_batch),
	F("n_ubatch", JM_INT, n_ubatch, 0, 1, 1 << 20, has_n_ubatch),
	F("n_parallel", JM_INT, n_parallel, 0, 1, 4096, has_n_parallel),
	E("kv_cache_type", kv_type, has_kv_type, api_est_kv_types),
	F("flash_attn", JM_BOOL, flash_attn, 0, 0, 0, has_flash_attn),
	F("use_mmap", JM_BOOL, use_mmap, 0, 0, 0, has_use_mmap),
	F("mlock", JM_BOOL, mlock, 0, 0, 0, has_mlock),
	F("swa_full", JM_BOOL, swa_full, 0, 0, 0, has_swa_full),
	F("history", JM_BOOL, history, 0, 0, 0, has_history),
	F("n_gpu_layers", JM_INT, n_gpu_layers, 0, -1, MODEL_MAX_LAYERS + 1, has_n_gpu_layers),
	F("n_cpu_moe", JM_INT, n_cpu_moe, 0, 0, MODEL_MAX_LAYERS, has_n_cpu_moe),
	F("batch_size", JM_INT_OR_MAX, batch_size, 0, 1, API_EST_MAX_BATCH, has_batch_size),
	F("seq_len", JM_INT_OR_MAX, seq_len, 0, 1, 1 << 24, has_seq_len),
	F("lora_rank", JM_INT, lora_rank, 0, 1, 65536, has_lora_rank),
	F("gradient_checkpointing", JM_BOOL, gradient_checkpointing, 0, 0, 0,
	  has_gradient_checkpointing),
	E("optimizer", optimizer, has_optimizer, train_optimizer_choices),
	E("provider", provider, has_provider, api_est_providers),
	F("dataset_tokens", JM_DOUBLE, dataset_tokens, 0, 1, 1e15, has_dataset_tokens),
	F("epochs", JM_DOUBLE, epochs, 0, 0.01, 1000, has_epochs),
	F("usd_per_hour", JM_DOUBLE, usd_per_hour, 0, 0, 1e6, has_usd_per_hour),
	F("hardware_profile", JM_STRING, hardware_profile,
	  sizeof(((struct api_estimate_request *)0)->hardware_profile), 0, 0, has_hardware_profile),
	E("runtime", runtime, has_runtime, api_est_runtimes),
	F("precision", JM_STRING, precision, sizeof(((struct api_estimate_request *)0)->precision),
	  0, 0, has_precision),
	F("tensor_parallel_size", JM_INT, tp, 0, 1, VLLM_MAX_GPUS, has_tp),
	F("pipeline_parallel_size", JM_INT, pp, 0, 1, VLLM_MAX_GPUS, has_pp),
	F("gpu_memory_utilization", JM_DOUBLE, gpu_util, 0, 0.01, 1, has_gpu_util),
	F("max_model_len", JM_INT, max_model_len, 0, 16, MODEL_MAX_POSITIONS, has_max_model_len),
	F("max_num_seqs", JM_INT, max_num_seqs, 0, 1, 65536, has_max_num_seqs),
	F("max_num_batched_tokens", JM_INT, max_num_batched_tokens, 0, 1, 1 << 24,
	  has_max_num_batched_tokens),
	E("kv_cache_dtype", vllm_kv, has_vllm_kv, api_est_vllm_kv),
	F("enforce_eager", JM_BOOL, enforce_eager, 0, 0, 0, has_enforce_eager),
	F("concurrency", JM_INT, concurrency, 0, 1, 65536, has_concurrency),
	F("prompt_tokens", JM_INT, prompt_tokens, 0, 1, 1 << 24, has_prompt_tokens),
	F("output_tokens", JM_INT, output_tokens, 0, 1, 1 << 24, has_output_tokens),
	E("loss", loss, has_loss, api_est_losses),
	E("attention", attention, has_attention, api_est_attentions),
	E("objective", objective, has_objective, api_est_objectives),
	F("precomputed_ref_logps", JM_BOOL, precomputed_ref_logps, 0, 0, 0,
	  has_precomputed_ref_logps),
	E("strategy", strategy, has_strategy, api_est_strategies),
	E("offload", offload, has_offload, api_est_offloads),
	F("nodes", JM_INT, nodes, 0, 1, EST_MAX_NODES, has_nodes),
	F("packing", JM_BOOL, packing, 0, 0, 0, has_packing),
	F("gradient_accumulation_steps", JM_INT, grad_accum, 0, 1, 4096, has_grad_accum),
	F("lora_dropout", JM_DOUBLE, lora_dropout, 0, 0, 1, has_lora_dropout),
	F("padded", JM_BOOL, padded, 0, 0, 0, has_padded),
	F("compiled", JM_BOOL, compiled, 0, 0, 0, has_compiled),
	E("rope_scaling", rope, has_rope, api_est_ropes),
	F("rope_scale", JM_DOUBLE, rope_scale, 0, 1, 1024, has_rope_scale),
	F("yarn_orig_ctx", JM_INT, yarn_orig_ctx, 0, 1, MODEL_MAX_POSITIONS, has_yarn_orig_ctx),
	F("num_generations", JM_INT, num_generations, 0, 1, 1024, has_num_generations),
	F("max_prompt_length", JM_INT, max_prompt_length, 0, 1, 1 << 20, has_max_prompt_length),
	F("max_completion_length", JM_INT, max_completion_length, 0, 1, 1 << 20,
	  has_max_completion_length),
	F("beta", JM_DOUBLE, beta, 0, 0, 1000, has_beta),
	F("use_vllm", JM_BOOL, use_vllm, 0, 0, 0, has_use_vllm),
	E("vllm_mode", vllm_mode, has_vllm_mode, api_est_vllm_modes),
	F("vllm_gpu_memory_utilization", JM_DOUBLE, vllm_share, 0, 0.01, 1, has_vllm_share),
};

static int est_lora_targets(const cJSON *v, unsigned *out, struct api_reply *reply)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {{"q_proj", TRAIN_LORA_Q},       {"k_proj", TRAIN_LORA_K},
		     {"v_proj", TRAIN_LORA_V},       {"o_proj", TRAIN_LORA_O},
		     {"gate_proj", TRAIN_LORA_GATE}, {"up_proj", TRAIN_LORA_UP},
		     {"down_proj", TRAIN_LORA_DOWN}, {"all-linear", TRAIN_LORA_ALL_LINEAR}};
	const cJSON *item;
	unsigned bits = 0;

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0 || cJSON_GetArraySize(v) > 16)
		return api_error(
			reply, RF_E_INVALID_VALUE, "lora_targets",
			"lora_targets must be a list of module names (q_proj, k_proj, "
			"v_proj, o_proj, gate_proj, up_proj, down_proj) or [\"all-linear\"]");
	cJSON_ArrayForEach(item, v)
	{
		unsigned bit = 0;
		for (size_t i = 0; cJSON_IsString(item) && i < sizeof(names) / sizeof(names[0]);
		     i++)
			if (strcmp(item->valuestring, names[i].name) == 0)
				bit = names[i].bit;
		if (!bit)
			return api_error(
				reply, RF_E_INVALID_VALUE, "lora_targets",
				"lora_targets names an unknown module; use q_proj, k_proj, "
				"v_proj, o_proj, gate_proj, up_proj, down_proj or all-linear");
		bits |= bit;
	}
	*out = bits;
	return 0;
}

/* Reads "tensor_split": up to RF_MAX_DEVICES non-negative proportions, not all zero. */
static int est_tensor_split(const cJSON *v, struct api_estimate_request *rq,
			    struct api_reply *reply)
{
	const cJSON *x;
	double sum = 0;

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 ||
	    cJSON_GetArraySize(v) > RF_MAX_DEVICES)
		return api_error(reply, RF_E_INVALID_VALUE, "tensor_split",
				 "tensor_split must be a list of 1 to %d proportions, one per GPU",
				 RF_MAX_DEVICES);
	rq->n_split = 0;
	cJSON_ArrayForEach(x, v)
	{
		if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0 ||
		    x->valuedouble > 1e6)
			return api_error(reply, RF_E_INVALID_VALUE, "tensor_split",
					 "tensor_split must hold proportions in [0, 1000000]");
		rq->split[rq->n_split++] = x->valuedouble;
		sum += x->valuedouble;
	}
	if (sum <= 0)
		return api_error(reply, RF_E_INVALID_VALUE, "tensor_split",
				 "tensor_split needs at least one GPU with a share above 0");
	return 0;
}

/* Rope scaling: inference only; a factor with linear or yarn scaling, and none without;
 * yarn's original window with yarn only. */
static int est_rope_check(const struct api_estimate_request *r, struct api_reply *out)
{
	bool on = r->has_rope && r->rope != 0,
	     yarn = on && strcmp(api_est_ropes[r->rope], "yarn") == 0;

	if (r->mode != API_EST_INFERENCE &&
	    (r->has_rope || r->has_rope_scale || r->has_yarn_orig_ctx))
		return api_error(out, RF_E_INVALID_VALUE, "rope_scaling",
				 "rope_scaling, rope_scale and yarn_orig_ctx apply to mode "
				 "inference only");
	if (on && !r->has_rope_scale)
		return api_error(
			out, RF_E_MISSING_FIELD, "rope_scale",
			"rope_scaling %s needs rope_scale, the factor (4 where Qwen's card "
			"documents YaRN x4)",
			api_est_ropes[r->rope]);
	if (!on && r->has_rope_scale)
		return api_error(out, RF_E_INVALID_VALUE, "rope_scale",
				 "rope_scale is the factor of rope_scaling linear or yarn; give "
				 "rope_scaling too");
	if (!yarn && r->has_yarn_orig_ctx)
		return api_error(out, RF_E_INVALID_VALUE, "yarn_orig_ctx",
				 "yarn_orig_ctx is YaRN's original window; give rope_scaling yarn");
	return 0;
}

int api_estimate_request_check(struct api_estimate_request *rq, struct api_reply *out)
{
	const struct api_estimate_request *r = rq;
	const struct {
		bool given;
		const char *name, *instead;
	} cpp[] = {{r->has_quant, "quant", "precision"},
		   {r->has_n_ctx, "n_ctx", "max_model_len"},
		   {r->has_n_batch, "n_batch", "max_num_batched_tokens"},
		   {r->has_n_ubatch, "n_ubatch", "max_num_batched_tokens"},
		   {r->has_n_parallel, "n_parallel", "max_num_seqs or concurrency"},
		   {r->has_n_gpu_layers, "n_gpu_layers", "tensor_parallel_size"},
		   {r->has_kv_type, "kv_cache_type", "kv_cache_dtype"},
		   {r->has_flash_attn, "flash_attn", "nothing (vLLM picks its attention backend)"},
		   {r->n_split > 0, "tensor_split", "tensor_parallel_size"}},
	  vllm[] = {{r->has_precision, "precision", "quant"},
		    {r->has_tp, "tensor_parallel_size", "n_gpu_layers and tensor_split"},
		    {r->has_pp, "pipeline_parallel_size", "n_gpu_layers"},
		    {r->has_gpu_util, "gpu_memory_utilization", "n_ctx"},
		    {r->has_max_model_len, "max_model_len", "n_ctx"},
		    {r->has_max_num_seqs, "max_num_seqs", "n_parallel"},
		    {r->has_max_num_batched_tokens, "max_num_batched_tokens", "n_batch"},
		    {r->has_vllm_kv, "kv_cache_dtype", "kv_cache_type"},
		    {r->has_enforce_eager, "enforce_eager", "nothing"}};
	bool is_vllm = r->has_runtime && r->runtime == API_EST_RT_VLLM;

	/* "precision" is the weight format for vLLM, the training precision (bf16, amp) when
	 * fine-tuning. */
	if (rq->mode != API_EST_INFERENCE && r->has_precision) {
		int k = -1;
		for (int i = 0; api_est_precisions[i]; i++)
			if (strcmp(r->precision, api_est_precisions[i]) == 0)
				k = i;
		if (k < 0)
			return api_error(out, RF_E_INVALID_VALUE, "precision",
					 "precision for fine-tuning is bf16 or amp");
		rq->train_precision = k;
	}

	for (size_t i = 0; is_vllm && i < sizeof(cpp) / sizeof(cpp[0]); i++)
		if (cpp[i].given)
			return api_error(out, RF_E_INVALID_VALUE, cpp[i].name,
					 "%s is a llama.cpp setting; with runtime vllm use %s",
					 cpp[i].name, cpp[i].instead);
	for (size_t i = 0; !is_vllm && i < sizeof(vllm) / sizeof(vllm[0]); i++)
		if (vllm[i].given && !(i == 0 && rq->mode != API_EST_INFERENCE))
			return api_error(
				out, RF_E_INVALID_VALUE, vllm[i].name,
				"%s is a vLLM setting (add \"runtime\": \"vllm\"); llama.cpp "
				"uses %s",
				vllm[i].name, vllm[i].instead);
	if (rq->mode != API_EST_INFERENCE && r->objective == API_EST_OBJECTIVE_GRPO) {
		if (r->has_seq_len)
			return api_error(
				out, RF_E_INVALID_VALUE, "seq_len",
				"with objective grpo a row is a prompt and its completion: "
				"use max_prompt_length and max_completion_length");
		if (!r->has_use_vllm || !r->use_vllm) {
			if (r->has_vllm_mode || r->has_vllm_share)
				return api_error(out, RF_E_INVALID_VALUE,
						 r->has_vllm_mode ? "vllm_mode" :
								    "vllm_gpu_memory_utilization",
						 "vllm_mode and vllm_gpu_memory_utilization need "
						 "\"use_vllm\": true");
		} else if (r->has_vllm_share && !(r->has_vllm_mode && r->vllm_mode == 1)) {
			return api_error(out, RF_E_INVALID_VALUE, "vllm_gpu_memory_utilization",
					 "vllm_gpu_memory_utilization is the colocated engine's "
					 "share (\"vllm_mode\": \"colocate\"); a vLLM server sets "
					 "its own");
		}
	} else {
		const struct {
			bool given;
			const char *name;
		} grpo[] = {{r->has_num_generations, "num_generations"},
			    {r->has_max_prompt_length, "max_prompt_length"},
			    {r->has_max_completion_length, "max_completion_length"},
			    {r->has_beta, "beta"},
			    {r->has_use_vllm, "use_vllm"},
			    {r->has_vllm_mode, "vllm_mode"},
			    {r->has_vllm_share, "vllm_gpu_memory_utilization"}};
		for (size_t i = 0; i < sizeof(grpo) / sizeof(grpo[0]); i++)
			if (grpo[i].given)
				return api_error(out, RF_E_INVALID_VALUE, grpo[i].name,
						 "%s is a GRPO setting (\"objective\": \"grpo\" "
						 "with a fine-tuning mode)",
						 grpo[i].name);
	}
	if (rq->mode != API_EST_INFERENCE && r->objective == API_EST_OBJECTIVE_KTO &&
	    r->has_batch_size && r->batch_size == 1)
		return api_error(out, RF_E_INVALID_VALUE, "batch_size",
				 "KTO needs at least 2 rows a micro-batch: its KL term pairs each "
				 "prompt with another row's completion (TRL refuses batch size 1)");
	if (rq->mode != API_EST_INFERENCE && (r->has_runtime || r->has_concurrency))
		return api_error(out, RF_E_INVALID_VALUE,
				 r->has_runtime ? "runtime" : "concurrency",
				 "runtime and concurrency apply to mode inference only");
	return est_rope_check(r, out);
}

void api_estimate_request_init(struct api_estimate_request *rq)
{
	memset(rq, 0, sizeof(*rq));
	rq->mode = API_EST_INFERENCE;
}

int api_estimate_request_parse(const cJSON *body, struct api_estimate_request *rq,
			       struct api_reply *out)
{
	const cJSON *v;
	int rc;

	api_estimate_request_init(rq);
	if (!cJSON_IsObject(body))
		return api_error(out, RF_E_INVALID_VALUE, NULL,
				 "the request must be a JSON object");
	rc = jm_map(body, est_fields, sizeof(est_fields) / sizeof(est_fields[0]), rq, out);
	if (rc < 0)
		return rc;
	if (!rq->has_mode)
		rq->mode = API_EST_INFERENCE;
	if ((v = cJSON_GetObjectItemCaseSensitive(body, "lora_targets")) &&
	    (rc = est_lora_targets(v, &rq->lora_targets, out)) < 0)
		return rc;
	if ((v = cJSON_GetObjectItemCaseSensitive(body, "tensor_split")) &&
	    (rc = est_tensor_split(v, rq, out)) < 0)
		return rc;
	return 0;
}
