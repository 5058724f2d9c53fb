/*
 * vLLM's KV-cache capacity, computed the way its V1 engine computes it at start-up.
 *
 * What vLLM does (vllm/v1/worker/gpu_worker.py determine_available_memory, kv_cache_utils.py):
 *  1. Each worker (one GPU: a tensor-parallel rank of a pipeline stage) may use
 *     gpu_memory_utilization x the device memory CUDA reports ("requested memory").
 *  2. It loads its shard of the weights: linear layers split over the tensor-parallel ranks
 *     (key/value projections replicated when there are fewer KV heads than ranks), the
 *     embedding and the LM head split by vocabulary rows (padded to 64), norms and routers
 *     whole; pipeline stages take contiguous layer ranges, the first the embedding, the last
 *     the head.
 *  3. It profiles one dummy forward pass of max_num_batched_tokens tokens and one dummy
 *     sampler run over max_num_seqs sequences; the torch peak of the two is the activation
 *     reserve. Memory allocated outside torch meanwhile (NCCL and custom all-reduce buffers,
 *     cuBLAS workspaces) is the non-torch reserve.
 *  4. What remains is cut into blocks of block_size tokens of every attention layer of the
 *     stage; the engine keeps the smallest block count over the workers. "GPU KV cache size"
 *     is blocks x block_size tokens and "Maximum concurrency for L tokens per request" is
 *     that over max_model_len (L). The engine refuses to start when one request of
 *     max_model_len tokens does not fit.
 *  5. CUDA graphs are captured afterwards, outside the requested memory.
 *
 * The reserves of step 3 are modelled from their mechanism (activation bytes per token, logits
 * bytes per sequence) with constants fitted to published start-up logs of vLLM 0.17-0.19 (see
 * serve_vllm.c); tests/fixtures/vllm_kv_capacity.csv holds the logs the result is checked
 * against, with their sources.
 *
 * Pure: no I/O. vllm_capacity() allocates only temporarily (the tensor list and its facts);
 * vllm_capacity_with() not at all, and walks no tensor: what it reads of the model was summed
 * once by vllm_facts_build().
 */
#ifndef RIGFIT_CORE_SERVE_VLLM_H
#define RIGFIT_CORE_SERVE_VLLM_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/hf_quant.h"
#include "core/fit/model.h"

#define VLLM_MAX_GPUS 64
#define VLLM_MAX_NOTES 12
#define VLLM_DEFAULT_BLOCK_SIZE 16
#define VLLM_DEFAULT_UTILIZATION 0.9

/* Weight formats vLLM loads. */
enum vllm_precision {
	VLLM_BF16 = 0,
	VLLM_FP16,
	VLLM_FP32,
	VLLM_FP8,   /* FP8 weights (fp8, fp8-dynamic, compressed-tensors FP8) */
	VLLM_INT8,  /* W8A8 int8 (compressed-tensors, SmoothQuant) */
	VLLM_AWQ,   /* 4-bit, group 128 */
	VLLM_GPTQ,  /* 4-bit, group 128 (gptq, gptq_marlin, W4A16) */
	VLLM_BNB4,  /* bitsandbytes NF4 */
	VLLM_MXFP4, /* MXFP4 experts (gpt-oss), the rest in bf16 */
	VLLM_PRECISION_COUNT
};

/* KV cache element types. */
enum vllm_kv_dtype {
	VLLM_KV_AUTO = 0, /* the model's activation dtype (2 bytes; 4 for fp32) */
	VLLM_KV_FP8,
};

/* Parses a precision name: "bf16" ("bfloat16"), "fp16" ("float16", "half"), "fp32", "fp8",
 * "int8" ("w8a8"), "awq", "gptq" ("w4a16"), "bitsandbytes" ("bnb", "nf4"), "mxfp4". Returns the
 * enum value or -1. */
int vllm_precision_parse(const char *name);
/* Returns the canonical name of p ("bf16"), or "unknown". Static storage. */
const char *vllm_precision_name(int p);

/* Returns the precision (enum vllm_precision) vLLM loads a checkpoint of model a in: what its
 * quantization_config q says (NULL: none, a plain checkpoint), else the model's own weights,
 * MXFP4 for gpt-oss's experts and bf16 for the rest. */
int vllm_precision_own(const struct model_arch *a, const struct hfq_config *q);

/* Returns the bytes one weight of a linear layer (an expert's when expert) takes in precision p,
 * scales and zero points included; 2 for an unknown p. */
double vllm_weight_bytes_per_param(int p, bool expert);

/* One GPU a worker runs on. */
struct vllm_gpu {
	int64_t total_bytes; /* as NVML reports it (CUDA sees VLLM_CUDA_RESERVED_BYTES less) */
	int64_t free_bytes;  /* free now; < 0: all of it */
	bool a100;           /* vLLM keeps the small batch defaults on A100s */
};

/* What CUDA's cudaMemGetInfo reports below NVML's total (the driver's reservation): 24576 -
 * 24146 MiB on an RTX 3090, 81559 - 81090 MiB on an H100 80GB (logged total_gpu_memory). */
#define VLLM_CUDA_RESERVED_BYTES (450LL * 1024 * 1024)

struct vllm_setup {
	int precision;                 /* enum vllm_precision */
	int kv_dtype;                  /* enum vllm_kv_dtype */
	int tensor_parallel;           /* >= 1 */
	int pipeline_parallel;         /* >= 1 */
	double gpu_memory_utilization; /* (0, 1]; <= 0: VLLM_DEFAULT_UTILIZATION */
	int64_t max_model_len;         /* <= 0: the model's max_position_embeddings */
	int64_t max_positions; /* > 0: the positions --rope-scaling reaches (its original window x
				  factor), which vLLM allows max_model_len up to; <= 0: the
				  model's max_position_embeddings */
	int64_t max_num_batched_tokens; /* <= 0: vLLM's default for the GPU */
	int64_t max_num_seqs;           /* <= 0: vLLM's default for the GPU */
	int block_size;                 /* <= 0: VLLM_DEFAULT_BLOCK_SIZE */
	bool enforce_eager;             /* no CUDA graphs */
};

/* Sets the defaults: bf16, auto KV, TP 1, PP 1, 0.9, everything else as vLLM chooses. */
void vllm_setup_default(struct vllm_setup *s /* OUT */);

struct vllm_capacity {
	/* The settings as vLLM resolves them. */
	int tensor_parallel, pipeline_parallel, block_size;
	double gpu_memory_utilization;
	int64_t max_model_len, max_num_batched_tokens, max_num_seqs;
	/* Per GPU, on the binding worker (the one with the fewest blocks). */
	int64_t cuda_total_bytes;       /* device memory as CUDA reports it */
	int64_t requested_bytes;        /* gpu_memory_utilization x cuda_total_bytes */
	int64_t weights_bytes;          /* this worker's shard */
	int64_t activation_bytes;       /* torch peak of the profiling runs */
	int64_t non_torch_bytes;        /* NCCL / all-reduce buffers, workspaces */
	int64_t kv_cache_bytes;         /* what was left for the KV cache ("Available KV cache") */
	int64_t kv_bytes_per_token;     /* per GPU, over the stage's self-attention layers */
	int64_t cross_kv_bytes_per_seq; /* per GPU: one image in the cross-attention layers */
	int64_t cuda_graph_bytes;       /* captured after, outside requested_bytes (estimate) */
	int binding_stage;              /* pipeline stage of the binding worker */
	/* The whole engine. */
	int64_t weights_bytes_total; /* every shard together */
	int64_t num_blocks;
	int64_t kv_cache_tokens; /* "GPU KV cache size: N tokens" */
	double max_concurrency;  /* "Maximum concurrency for max_model_len tokens": N x */
	bool fits;               /* vLLM would start: KV for one max_model_len request */
	const char *refusal;     /* why it would not start (static), or NULL */
	int n_notes;
	const char *notes[VLLM_MAX_NOTES]; /* assumptions taken, static strings */
};

/* Computes the capacity of serving a (validated) architecture with setup s on gpus[0..n_gpus)
 * (the first tensor_parallel x pipeline_parallel of them are used, stage by stage). Returns 0
 * and *out (fits false with refusal set when vLLM would refuse to start), or
 * RF_E_INVALID_VALUE with *field naming the setting at fault ("tensor_parallel_size",
 * "pipeline_parallel_size", "gpu_memory_utilization", "max_model_len" (also above the
 * model's max_position_embeddings, which vLLM refuses), "max_num_seqs",
 * "max_num_batched_tokens", "precision", "kv_cache_dtype", "gpus", "model" for a model
 * without a decoder KV cache), or RF_E_NOMEM. */
int vllm_capacity(const struct model_arch *a, const struct vllm_setup *s,
		  const struct vllm_gpu *gpus, int n_gpus, struct vllm_capacity *out /* OUT */,
		  const char **field /* OUT, may be NULL */);

/* What vLLM's loading reads of a model's tensors, summed once (vllm_facts_build) so that each
 * setup of the model costs arithmetic only. Element counts are doubles, as the bytes are. */
#define VLLM_MAX_STACKED 8
struct vllm_stacked {
	int64_t ne0, ne1, ne2; /* a stacked expert tensor of ne2 > 1 experts */
	bool down;             /* ffn_down: its rows run over the intermediate dimension */
};

/* Element counts of tensors, by how vLLM shards and stores them. */
struct vllm_sums {
	double plain;                   /* kept in the activation dtype (norms, routers, biases) */
	double linear, linear_rows;     /* quantized linear elements and output rows, not K/V */
	double kv, kv_rows;             /* the key and value projections */
	double stacked1, stacked1_rows; /* stacked expert tensors of one expert */
	double stacked, stacked_rows;   /* stacked expert tensors of more (listed in st too) */
};

/* The tensors of one layer (or of the input or output tensors). */
struct vllm_layer_facts {
	struct vllm_sums sum;
	int n_stacked;
	struct vllm_stacked st[VLLM_MAX_STACKED];
};

#define VLLM_MAX_EMBD 4
struct vllm_facts {
	int64_t n_layer;
	/* n_layer + 2 entries: the layers, the input tensors, then the output ones */
	struct vllm_layer_facts *layer;
	/* n_layer + 1 entries: prefix[i] sums layers [0, i), so a stage's range is one
	 * difference */
	struct vllm_sums *prefix;
	int n_embd; /* the token embedding and the head, split by vocabulary rows */
	struct {
		int64_t ne0, ne1;
		int32_t layer; /* where it is loaded, as rf_tensor.layer */
	} embd[VLLM_MAX_EMBD];
	bool has_head; /* an output tensor of its own: the head is not tied */
};

/* Sums a's tensor list l (model_tensors) into *out. Returns 0 (free with vllm_facts_free), or
 * RF_E_NOMEM, or RF_E_INVALID_VALUE for a list vLLM's loading does not describe (a tensor of a
 * layer past the model's, too many stacked expert tensors or embeddings). */
int vllm_facts_build(const struct model_arch *a, const struct rf_tensor_list *l,
		     struct vllm_facts *out /* OUT */);

/* Frees what f holds (not f). NULL is a no-op. */
void vllm_facts_free(struct vllm_facts *f);

/* vllm_capacity over a's facts f (vllm_facts_build), built once by a caller that asks for many
 * setups of one model (the planner); allocates nothing. */
int vllm_capacity_with(const struct model_arch *a, const struct vllm_facts *f,
		       const struct vllm_setup *s, const struct vllm_gpu *gpus, int n_gpus,
		       struct vllm_capacity *out /* OUT */,
		       const char **field /* OUT, may be NULL */);

#endif
