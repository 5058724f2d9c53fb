/*
 * Inference memory, with llama.cpp's semantics: where every buffer llama.cpp allocates goes and
 * how large it is, for a model (architecture + weight bytes), runtime settings (n_ctx, n_ubatch,
 * KV cache type, flash attention, n_gpu_layers...) and the memory a machine offers (devices and
 * host, as plain budgets), and whether that fits.
 *
 * What llama.cpp allocates, and how it is modelled here:
 *  - weights: per tensor, from the GGUF header or from a quantization scheme's mix
 *    (core/fit/quant.h). The input layer (token embeddings) always stays in host memory; the
 *    repeating layers and the output layer go to GPUs by n_gpu_layers, split across GPUs in
 *    proportion to their free memory; a tied model keeps a copy of token_embd as the head.
 *  - KV cache: per layer, on the device of its layer: K and V rows of the cache type for every
 *    cell (n_ctx padded to 256; n_ctx is the total shared by n_parallel sequences); windowed
 *    layers keep n_swa x n_parallel + n_ubatch cells; MLA keeps one latent row of
 *    kv_lora_rank + qk_rope_head_dim and no V; encoders keep none; cross-attention layers
 *    (mllama) keep one image's vision tokens per sequence instead of cells.
 *  - compute buffers: llama.cpp reserves the graph of one micro-batch (n_ubatch tokens,
 *    attending over all cells) and sizes each backend's buffer by the peak of tensors alive at
 *    once: the KQ mask (an input every backend holds), then the largest of the attention step
 *    (the n_kv x n_ubatch x n_head score matrix unless flash attention, plus residual, normed
 *    input and queries), the FFN step (gate and up activations; routed experts for MoE) and,
 *    on the device holding the output layer, the logits (n_vocab x n_ubatch). Every GPU that
 *    holds layers has one; the host has one for the inputs (embedding rows, positions, masks)
 *    and for any layer left on the CPU. A host logits buffer of n_vocab per sequence.
 *  - runtime overhead: a per-device constant the caller gives (rf_backend_overhead_bytes()).
 *
 * Pure functions over plain structs: the API layer fills the budgets from a hardware snapshot.
 */
#ifndef RIGFIT_CORE_ESTIMATE_H
#define RIGFIT_CORE_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/fit/cpu/repack.h"
#include "core/fit/cpu/speed_cpu.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"

#define RF_MAX_DEVICES 16
#define RF_DEVICE_NAME_LEN 64
#define RF_MEM_MAX_NOTES 12

#define RF_MIB (1024LL * 1024LL)
#define RF_GIB (1024LL * RF_MIB)

/* The llama.cpp build whose buffers these figures follow: the one the oracle tests load
 * (tests/llama/oracle.mjs), which asserts this name. */
#define RF_LLAMA_CPP_BUILD "llama.cpp v0.5.0 (node-llama-cpp 3.22.1)"

/* llama.cpp pads the KV cache to a multiple of this many cells. */
#define RF_KV_PAD 256
/* Flash attention pads the f16 KQ mask's token dimension to this. */
#define RF_KQ_MASK_PAD 64

/* Runtime overhead of a CUDA/ROCm/Vulkan/SYCL device (context, library handles, the pool for
 * temporaries): fitted to the one measured row that shows it (Ollama runner on an RTX 5070,
 * 4772 MiB resident - 4528 MiB of llama.cpp buffers = 244 MiB), rounded up. */
#define RF_GPU_OVERHEAD_BYTES (256 * RF_MIB)

/* Reserve kept free on a discrete GPU: the larger of 256 MiB and 2% of its memory. */
#define RF_GPU_RESERVE_MIN (256 * RF_MIB)
#define RF_GPU_RESERVE_FRAC 0.02
/* Reserve kept free in host RAM for the OS and other processes: the larger of 1 GiB and 10%. */
#define RF_HOST_RESERVE_MIN RF_GIB
#define RF_HOST_RESERVE_FRAC 0.10

/* Fit bands by utilisation (need / budget, the budget already net of the reserve):
 * comfortable up to 0.85, tight up to 1.0, over above. */
#define RF_FIT_COMFORTABLE_MAX 0.85
#define RF_FIT_TIGHT_MAX 1.0

struct rf_mem_device {
	char name[RF_DEVICE_NAME_LEN]; /* "CUDA0", "NVIDIA RTX 4090"... */
	int64_t free_bytes;     /* free memory now: the layer split follows it (<= 0: budget) */
	int64_t budget_bytes;   /* what the estimate may use: rf_budget_device() or, for unified
				 memory, rf_budget_unified(); < 0: unknown */
	bool unified;           /* shares host RAM (Apple silicon, Jetson): counted once */
	int64_t overhead_bytes; /* runtime overhead: rf_backend_overhead_bytes() */
	double split;           /* --tensor-split weight; all 0: in proportion to free memory */
};

struct rf_mem_host {
	int64_t budget_bytes; /* RAM the process may use: rf_budget_host(); < 0: unknown */
	int repack_isa;       /* enum rf_repack_isa of the host CPU (rf_repack_isa_from_bits) */
};

struct rf_infer_params {
	int64_t n_ctx;      /* KV cells for all sequences together */
	int64_t n_batch;    /* logical batch */
	int64_t n_ubatch;   /* physical micro-batch: sets the compute buffers */
	int64_t n_parallel; /* sequences sharing n_ctx */
	int type_k;         /* KV cache types (enum rf_gtype): F16, Q8_0, Q4_0... */
	int type_v;
	bool flash_attn;
	int64_t n_gpu_layers; /* -1: all layers and the output; else as llama.cpp counts them (the
				 output layer is the n_layer+1-th) */
	int64_t n_cpu_moe; /* --n-cpu-moe: the routed-expert tensors of the first n_cpu_moe layers
			      stay in host memory (attention, norms, shared experts and the KV
			      cache stay with their layer); >= n_layer: all of them, as
			      `-ot exps=CPU` */
	bool use_mmap;     /* map the file (llama.cpp's default); false: --no-mmap, read it into
			  buffers */
	bool mlock;    /* --mlock: the mapped pages are locked, none left for the OS to reclaim */
	bool swa_full; /* --swa-full: sliding-window layers keep the whole context */
	int64_t rope_positions; /* > 0: the positions the rope scaling set reaches (--rope-scaling,
				   core/plan/plan_rope.h); 0: max_position_embeddings */
};

/* Sets llama.cpp's defaults: n_ctx 4096, n_batch 2048, n_ubatch 512, one sequence, f16 cache,
 * no flash attention, every layer on the GPU, the file mapped, no mlock, windowed caches. */
void rf_infer_params_default(struct rf_infer_params *p /* OUT */);

/* Where the weights are, by llama.cpp's layers. */
struct rf_mem_weights {
	int64_t n_layer;
	uint64_t input_bytes;  /* token (and position, type) embeddings: host memory */
	uint64_t output_bytes; /* output norm and head (a tied head: the copy of token_embd) */
	uint64_t layer_bytes[MODEL_MAX_LAYERS];
	uint64_t layer_expert_bytes[MODEL_MAX_LAYERS]; /* the routed experts within layer_bytes */
	uint64_t file_bytes;     /* all tensor data as the file holds it (tied embeddings once) */
	uint64_t largest_matrix; /* the largest tensor outside the input layer */
	/* A tied model's head: the part of output_bytes that is the copy of token_embd. llama.cpp
	 * holds it twice only where the output layer's buffer is another one (a GPU, or the CPU's
	 * repack buffer); on the host beside token_embd it is the same tensor. */
	uint64_t tied_head_bytes;
	/* Per instruction-set class (enum rf_repack_isa): the bytes of each layer's and of the
	 * output layer's weights that llama.cpp's CPU backend repacks (core/fit/cpu/repack.h) when
	 * that layer runs on the host. A tied head's repacked copy is in output_repack_bytes. */
	uint64_t layer_repack_bytes[RF_REPACK_N][MODEL_MAX_LAYERS];
	uint64_t output_repack_bytes[RF_REPACK_N];
	/* The same weights as the AMX buffer holds them (rf_repack_bytes: Q8_0, Q4_K, Q5_K and
	 * IQ4_XS rows carry per-block extras there); for the other classes the copy has the
	 * file's bytes. */
	uint64_t layer_amx_bytes[MODEL_MAX_LAYERS];
	uint64_t output_amx_bytes;
	/* Per class: the output layer's repacked weights that lie at the file's ends, before the
	 * first or after the last tensor llama.cpp keeps in the plain buffer. The mapping covers
	 * only that span, so these are not mapped at all (a head written last, as llama.cpp's
	 * converter writes it). */
	uint64_t output_edge_repack_bytes[RF_REPACK_N];
	/* The matrices a token multiplies (layers and head, a tied head included), in elements
	 * per ggml type (enum rf_gtype): all of them, the routed experts among them, and those
	 * repacked per instruction-set class. The CPU kernels run each type at its own rate. */
	double type_elements[RF_GT_COUNT];
	double type_expert_elements[RF_GT_COUNT];
	double type_repack_elements[RF_REPACK_N][RF_GT_COUNT];
};

/* Empties w for a producer to fill (n_layer 0, every total and type count 0) without clearing
 * the per-layer arrays (layer_bytes, layer_expert_bytes, layer_repack_bytes, layer_amx_bytes,
 * MODEL_MAX_LAYERS entries each): every reader looks at their first n_layer entries only, and
 * each producer writes those. */
void rf_mem_weights_reset(struct rf_mem_weights *w /* OUT */);

/* Sums tensors (from a GGUF header or model_tensors() + rf_quant_apply()) into layers. a gives
 * the layer count and whether the model has an LM head. Returns 0 or RF_E_INVALID_VALUE (a
 * tensor of a layer beyond MODEL_MAX_LAYERS). */
int rf_weights_from_tensors(const struct model_arch *a, const struct rf_tensor *t, size_t n,
			    struct rf_mem_weights *out /* OUT */);

/* The weight-type mix of w's matrix products on a CPU of repack class repack_isa (enum
 * rf_repack_isa), with expert_active the share of the routed experts a token runs (1 for a
 * dense model). Returns 0, or RF_E_INVALID_VALUE when w has no typed matrices (*out all 0). */
int rf_weights_cpu_mix(const struct rf_mem_weights *w, int repack_isa, double expert_active,
		       struct speed_cpu_mix *out /* OUT */);

/* The weights of a (validated) architecture in quantization scheme ft (enum rf_ftype), tensor
 * by tensor with the scheme's mix. imatrix: 1 with an importance matrix, 0 without, -1 as the
 * scheme is usually made (rf_ftype_needs_imatrix). Returns 0 or a negative rf_err. */
int rf_weights_from_scheme(const struct model_arch *a, int ft, int imatrix,
			   struct rf_mem_weights *out /* OUT */);

/* Returns RF_GPU_OVERHEAD_BYTES for "cuda", "rocm", "vulkan", "sycl"; 0 for "metal" and "cpu"
 * (Metal buffers are plain wired memory; the CPU backend has no context). */
int64_t rf_backend_overhead_bytes(const char *backend);

/* Budget of a discrete GPU: free memory minus the reserve (never negative). */
int64_t rf_budget_device(int64_t free_bytes, int64_t total_bytes);
/* GPU-usable share of unified memory: Apple's working set is 2/3 of RAM up to 32 GiB and 3/4
 * above (recommendedMaxWorkingSetSize in the calibration logs), less what is already used. */
int64_t rf_budget_unified(int64_t ram_total_bytes, int64_t ram_available_bytes);
/* Host budget: available RAM, capped by a container limit (cgroup_limit_bytes <= 0: none; the
 * usage inside the container is cgroup_used_bytes), minus the reserve (never negative). */
int64_t rf_budget_host(int64_t available_bytes, int64_t total_bytes, int64_t cgroup_limit_bytes,
		       int64_t cgroup_used_bytes);

struct rf_mem_device_use {
	char device[RF_DEVICE_NAME_LEN];
	int64_t layers; /* repeating layers on this device */
	bool output;    /* holds the output layer */
	int64_t weights_bytes;
	int64_t kv_bytes;
	int64_t compute_bytes;
	int64_t overhead_bytes;
	int64_t bytes; /* the four above */
	int64_t budget_bytes;
};

struct rf_mem_estimate {
	int64_t weights_bytes;      /* every weight in memory, devices and host */
	int64_t weights_host_bytes; /* token embeddings, layers left on the CPU, experts kept
				       there by n_cpu_moe */
	int64_t experts_host_bytes; /* the routed experts n_cpu_moe keeps in host memory */
	int64_t kv_cache_bytes;
	int64_t kv_host_bytes;
	int64_t compute_bytes; /* devices and host */
	int64_t compute_host_bytes;
	int64_t output_buffer_bytes; /* host logits (or embeddings) buffer */
	int64_t overhead_bytes;
	int64_t total_bytes;
	int64_t host_bytes; /* host RAM this needs (weights, KV, compute, output on the host) */
	/* Host weights by llama.cpp's buffer: the mapped span of the file (use_mmap; 0
	 * without), the extra buffer of repacked copies (CPU_REPACK or AMX), and the plain CPU
	 * buffer (without mmap). They add up to weights_host_bytes. */
	int64_t weights_mapped_bytes;
	int64_t weights_repack_bytes;
	int64_t weights_cpu_bytes;
	/* Of host_bytes: file pages that llama.cpp read once and no longer touches (the
	 * originals of repacked weights in the mapping), which the OS may reclaim; 0 with mlock
	 * or without mmap. */
	int64_t host_reclaimable_bytes;
	int64_t n_ctx;        /* KV cells after padding */
	int64_t kv_cells_swa; /* cells of windowed layers (n_ctx when there are none) */
	int64_t n_ubatch;     /* tokens of the reserved micro-batch */
	int64_t n_gpu_layers; /* repeating layers on GPUs */
	int64_t n_cpu_moe;    /* layers whose routed experts are in host memory */
	bool output_on_gpu;
	int n_devices;
	struct rf_mem_device_use per_device[RF_MAX_DEVICES]; /* past n_devices: not written */
	bool fits;          /* every budget holds its need; false when no budget is known */
	double utilization; /* highest need / budget over the devices and the host; < 0: none known */
	const char *fit_band;    /* "comfortable", "tight", "over"; NULL when no budget is known */
	const char *error_field; /* on RF_E_INVALID_VALUE: the setting at fault ("n_ctx") */
	int n_notes;
	const char *notes[RF_MEM_MAX_NOTES]; /* assumptions made, static strings */
};

/* Estimates inference memory. dev[0..n_dev) are the GPUs (n_dev 0: CPU only); host may be
 * NULL (budget unknown). Returns 0 and fills *out, or RF_E_INVALID_VALUE with
 * out->error_field naming the setting (n_ctx, n_ubatch, n_parallel, cache_type_k,
 * cache_type_v, n_gpu_layers, n_cpu_moe, devices). */
int rf_estimate_inference(const struct model_arch *a, const struct rf_mem_weights *w,
			  const struct rf_infer_params *p, const struct rf_mem_device *dev,
			  int n_dev, const struct rf_mem_host *host,
			  struct rf_mem_estimate *out /* OUT */);

/* The largest n_ctx (a multiple of RF_KV_PAD, at most the model's context or 2^20 when it has
 * none) that fits, by binary search over rf_estimate_inference with p's other settings.
 * Returns 0 with *n_ctx and its estimate in *out; RF_E_RANGE when not even RF_KV_PAD cells fit
 * (then *n_ctx is 0 and *out the estimate at RF_KV_PAD cells); or another negative rf_err. */
int rf_estimate_max_ctx(const struct model_arch *a, const struct rf_mem_weights *w,
			const struct rf_infer_params *p, const struct rf_mem_device *dev, int n_dev,
			const struct rf_mem_host *host, int64_t *n_ctx /* OUT */,
			struct rf_mem_estimate *out /* OUT */);

/* Returns "comfortable", "tight" or "over" for a utilisation (RF_FIT_* thresholds). */
const char *rf_fit_band(double utilization);

#endif
