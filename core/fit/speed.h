/*
 * The speed model: tokens per second for decode and prefill from plain numbers (bytes and
 * FLOPs per token, device bandwidth and compute), so it does not depend on the model layer.
 *
 *   decode:  time per token = sum over the devices holding layers of
 *              bytes on the device / min(mem_eff x bandwidth, mem_ceiling)
 *            + n_layers x layer_ms                     (launch and sync cost per layer)
 *            + the host's share at host bandwidth       (partial offload)
 *            (mem_ceiling: the most the backend's kernels pull from memory, whatever the
 *            peak; it is what holds HBM parts such as the A100 and H100 far below theirs)
 *   prefill: time per token = sum over devices of FLOPs on the device / (eff x peak)
 *              (eff per device class: GeForce, or workstation/datacenter parts)
 *            + FLOPs / ceiling                          (tensor peaks: the kernels' own limit)
 *            + the host's share: with a GPU, llama.cpp runs batches of 32 tokens or more on
 *              it, copying the host layers' weights over the link once per micro-batch (a
 *              prompt of P tokens runs ceil(P / n_ubatch) of them), so that the copies'
 *              share of the time falls as n_ubatch grows; of the routed experts held on the
 *              host only those the micro-batch's tokens route to cross (llama.cpp PR 15346),
 *              a share that grows with n_ubatch (speed_expert_share: routing concentrates
 *              on some experts, by a skew fitted to measured rows); pinned weights and, on
 *              a native driver, mmap'd (pageable) ones cross at the link rate; where mapped
 *              memory cannot be page-locked (WSL) the driver first stages them into a pinned
 *              buffer at host_staging_gbs; on the CPU backend, threads x GFLOPS per thread
 *
 * A layer split over several devices runs one device after the other, so bandwidths are not
 * summed. The efficiencies, the per-layer cost and the ceilings are fitted per backend to
 * tests/data/calibration/llamacpp_tg_pp.csv by speed_fit() (make accuracy reruns the fit and
 * prints it); speed_fitted holds the result. basis is "roofline" until measured benchmarks
 * refine it. Pure: no I/O.
 */
#ifndef RIGFIT_CORE_SPEED_H
#define RIGFIT_CORE_SPEED_H

#include <stdbool.h>
#include <stddef.h>

#include "core/fit/cpu/speed_cpu.h"

#define SPEED_MAX_DEVICES 16
#define SPEED_MAX_ASSUMPTIONS 16
#define SPEED_ASSUMPTION_LEN 200
#define SPEED_DEFAULT_LAYERS 32 /* assumed when n_layers is unknown */

/* Host memory assumed when a partial offload needs it and the caller does not know it: a
 * dual-channel DDR4-3200 desktop (51.2 GB/s theoretical, profiles/devices.json). */
#define SPEED_ASSUMED_HOST_BANDWIDTH_GBS 51.2
#define SPEED_ASSUMED_HOST_THREADS 8

/* The share of a CPU's theoretical memory bandwidth (channels x 8 bytes x transfer rate, the
 * CPU table's figure) that llama.cpp's decode streams weights at, fitted with the per-thread
 * barrier cost (core/fit/cpu/speed_cpu.c) on the 29 decode rows of public CPU runs in
 * tests/data/calibration/llamacpp_tg_pp.csv: desktop and laptop DDR4/DDR5, LPDDR4X boards,
 * 8- and 12-channel servers, 2 to 192 threads, Ollama and llama-bench, 1B to 405B. One share
 * fits every memory class (decode medians by class 7-20%; docs/cpu-speed.md), so the
 * classes take the same figure. It replaces 0.40 (a measured-bandwidth efficiency fitted on
 * one row times a forum's 60% for measured over theoretical, below), which was a third low on
 * every class; that product stays the effective share of SPEED_ASSUMED_HOST_BANDWIDTH_GBS, the
 * guess for a host nothing describes (20.5 GB/s). */
#define SPEED_CPU_THEORETICAL_READ_SHARE 0.58
/* A measured host bandwidth (a STREAM-like copy) is about 60% of the theoretical peak (Radxa
 * forum, "DRAM speed capped to 4266 MT/s on O6": "I'm used to seeing about 60% efficiency
 * usually"): with the measured efficiency, the default host's effective share. */
#define SPEED_MEASURED_OVER_THEORETICAL 0.6
/* The share of rigfit's own host measurement (server/hostbench.c) that llama.cpp's CPU kernels
 * stream weights at: it reads with the same vector loads, and make bench-cpu's F16 rows (the
 * memory-bound ones) stream at 0.95-1.0 of it. */
#define SPEED_HOST_MEASURED_READ_SHARE 1.0

enum speed_backend {
	SPEED_BACKEND_CUDA = 0,
	SPEED_BACKEND_ROCM,
	SPEED_BACKEND_METAL,
	SPEED_BACKEND_VULKAN,
	SPEED_BACKEND_CPU,
	SPEED_BACKEND_COUNT
};

enum speed_compute {
	SPEED_COMPUTE_UNKNOWN = 0,
	SPEED_COMPUTE_TENSOR, /* dense tensor / matrix-core FP16 peak */
	SPEED_COMPUTE_VECTOR, /* shader / vector peak */
};

enum speed_test {
	SPEED_TEST_DECODE = 0, /* tokens generated per second at the start, like tg128 */
	SPEED_TEST_PREFILL,    /* prompt tokens per second for 512 tokens, like pp512 */
};

struct speed_device {
	double bandwidth_gbs;       /* peak memory bandwidth; must be > 0 */
	double compute_tflops;      /* dense peak of the kind below; <= 0 unknown */
	enum speed_compute compute; /* what compute_tflops is */
	bool tensor_units_unrated;  /* has tensor units but only a vector rate is known */
	bool hbm;                   /* HBM-class memory (device_hbm_class): mem_eff_hbm applies */
	bool pro;                   /* workstation or datacenter part (device_pro_class):
				       tensor_eff_pro applies */
	double layer_share;         /* share of the offloaded layers; <= 0 on all: equal shares */
};

struct speed_host {
	double bandwidth_gbs;    /* <= 0 unknown */
	bool bandwidth_measured; /* a measurement rather than the theoretical peak */
	/* The measurement is rigfit's own (server/hostbench.c): vector loads on every core, as
	 * llama.cpp's kernels stream weights (SPEED_HOST_MEASURED_READ_SHARE of it), where a
	 * figure another tool published takes the fitted mem_eff. Implies bandwidth_measured. */
	bool bandwidth_hostbench;
	/* Mapped memory cannot be page-locked (Windows Subsystem for Linux): pageable copies
	 * to the GPU are staged by the driver at host_staging_gbs. */
	bool no_page_lock;
	int threads;     /* threads doing CPU work; <= 0 unknown */
	double link_gbs; /* host to GPU copies (PCIe); <= 0 unknown */
	/* The CPU's kernels (core/fit/cpu/speed_cpu.h): with an ISA class, host work is timed by
	 * mechanism (bandwidth against dot-product throughput per weight type); UNSET (0)
	 * keeps the single GFLOPS figure of speed_params. Rates <= 0: the ISA's table. */
	int cpu_isa;                  /* enum speed_cpu_isa */
	double int8_gops_per_thread;  /* measured AVX2 int8 dot throughput, one thread */
	double f32_gflops_per_thread; /* measured f32 FMA dot throughput, one thread */
	struct speed_cpu_kernel cpu_kernel[HW_KERNEL_N]; /* measured per quant class; 0: none */
};

/* Host-to-GPU copy rate assumed when the link is unknown: PCIe 4.0 x16 (31.5 GB/s) at 80%. */
#define SPEED_ASSUMED_HOST_LINK_GBS 25.0
/* llama.cpp's default prefill micro-batch (n_ubatch): a partial offload copies the host
 * layers' weights to the GPU once per micro-batch. */
#define SPEED_PREFILL_UBATCH 512
/* The prompt prefill_tokens_per_s is for when the input names none: llama-bench's pp512. */
#define SPEED_PREFILL_PROMPT 512
/* Micro-batches smaller than this run the host layers on the CPU instead (the CUDA backend's
 * offload_op asks for a batch of at least 32). */
#define SPEED_OFFLOAD_MIN_BATCH 32

struct speed_input {
	enum speed_backend backend;
	double weight_bytes;    /* weight bytes read per generated token (active experts for MoE) */
	double kv_bytes_start;  /* KV bytes read per token at the start of generation (tg128: ~0) */
	double kv_bytes_full;   /* KV bytes read per token with the whole context filled */
	double flops_per_token; /* about 2 x active parameters */
	double moe_batch_bytes; /* MoE: the weight bytes a 512-token micro-batch reads beyond
				   weight_bytes (the experts its tokens route to); 0: dense */
	int n_layers;           /* repeating blocks; <= 0 unknown */
	bool quantized;         /* weights in a quantized type (dequantised when prefilling) */
	int weight_ftype;       /* enum rf_ftype when weight_ftype_known (CPU kernels) */
	bool weight_ftype_known;      /* false: the CPU kernel family follows the bits per weight */
	double repacked_share;        /* share of the host's weights in repacked layouts (0..1) */
	struct speed_cpu_mix cpu_mix; /* the weight types' kernels; all 0: weight_ftype's alone */
	/* The host kernels' rates of this host, weight type and mix (speed_host_rates), when the
	 * caller worked them out once for many inputs (a planner's format); false: worked out
	 * where a time needs them. Whoever changes host, weight_ftype, repacked_share or cpu_mix
	 * clears it. */
	bool host_rates_known;
	struct speed_cpu_rates host_rates;
	double gpu_fraction;      /* share of the layers on the devices (n_gpu_layers / layers) */
	double host_copy_bytes;   /* host weights a prefill micro-batch copies to the GPU (host
				   layers, experts n_cpu_moe keeps there, a host output layer);
				   <= 0: (weight_bytes + moe_batch_bytes) x (1 - gpu_fraction) */
	double host_expert_bytes; /* the routed experts among host_copy_bytes: a micro-batch
				     copies only those its tokens route to (speed_expert_share) */
	int n_experts;            /* routed experts per MoE layer; 0: dense or unknown (every
				     host expert is copied) */
	int n_experts_used;       /* routed experts per token */
	int n_ubatch;             /* llama.cpp's micro-batch; <= 0: SPEED_PREFILL_UBATCH */
	double prompt_tokens;     /* prompt of the prefill figure; <= 0: SPEED_PREFILL_PROMPT */
	bool host_pinned;         /* host weights in the GPU's pinned host buffer (--no-mmap);
				   false: mmap'd, pageable (llama.cpp's default) */
	int n_devices;            /* 0 only for SPEED_BACKEND_CPU */
	struct speed_device devices[SPEED_MAX_DEVICES];
	struct speed_host host;
};

/* The constants of one backend. rows_* count the calibration rows each group was fitted on;
 * 0 means the values were inherited from another backend (said so in the assumptions). */
struct speed_params {
	double mem_eff;               /* share of peak bandwidth reached while decoding */
	double mem_ceiling_gbs;       /* decode kernels' own bandwidth limit; 0: none */
	double mem_eff_hbm;           /* share of peak reached on HBM devices; <= 0: mem_eff */
	double layer_ms;              /* fixed cost per layer per generated token, ms */
	double tensor_eff;            /* share of a tensor peak reached by prefill (F16 weights) */
	double tensor_ceiling_tflops; /* prefill kernels' own throughput limit; 0: none */
	double tensor_quant_factor;   /* x tensor_eff for quantized weights */
	double tensor_eff_pro;        /* tensor_eff on workstation and datacenter parts; <= 0:
					 tensor_eff */
	double vector_eff;            /* share of a vector peak reached by prefill (F16 weights) */
	double vector_quant_factor;   /* x vector_eff for quantized weights */
	double cpu_gflops_per_thread; /* CPU backend: achieved prefill GFLOPS per thread */
	double host_staging_gbs;      /* partial offload: the rate the driver stages pageable
					 (mmap'd) weights into pinned memory before the copy */
	int rows_decode, rows_tensor, rows_vector, rows_cpu_prefill;
	int rows_staging; /* partial-offload rows host_staging_gbs was fitted on */
	/* Routing concentration: expert i of a layer (by popularity) is chosen with weight
	 * i^-expert_skew (0: uniform), which sets the share of host experts a micro-batch
	 * copies (speed_expert_share). */
	double expert_skew;
	int rows_skew; /* rows expert_skew was fitted on */
};

/* The fitted constants, indexed by enum speed_backend (see speed.c for how they were fitted). */
extern const struct speed_params speed_fitted[SPEED_BACKEND_COUNT];

struct speed_output {
	double decode_tokens_per_s;             /* < 0 unknown */
	double decode_tokens_per_s_at_full_ctx; /* < 0 unknown */
	double prefill_tokens_per_s;            /* < 0 unknown (a device without a compute rate) */
	double mem_efficiency;                  /* the values used, for the API's assumptions */
	double layer_overhead_ms;
	double compute_efficiency; /* quantization factor included, for devices[0]'s kind */
	double compute_ceiling_tflops;
	const char *basis; /* "roofline" (static) */
	int n_assumptions;
	char assumptions[SPEED_MAX_ASSUMPTIONS][SPEED_ASSUMPTION_LEN];
};

/* Returns the backend's name ("cuda") or "unknown". Static storage. */
const char *speed_backend_name(enum speed_backend b);

/* Parses "cuda", "rocm" (or "hip"), "metal", "vulkan", "cpu". Returns 0 and *out, or
 * RF_E_INVALID_VALUE. */
int speed_backend_parse(const char *name, enum speed_backend *out /* OUT */);

/* Estimates in with speed_fitted. Returns 0 and *out, or RF_E_INVALID_VALUE (a number out of
 * range: negative or non-finite sizes, no device for a GPU backend, gpu_fraction outside 0..1,
 * more than SPEED_MAX_DEVICES) with *out untouched. */
int speed_estimate(const struct speed_input *in, struct speed_output *out /* OUT */);

/* Like speed_estimate with an explicit constants table (a fit's result). */
int speed_estimate_with(const struct speed_input *in,
			const struct speed_params params[SPEED_BACKEND_COUNT],
			struct speed_output *out /* OUT */);

/* Returns tokens per second of test for in with params, or -1 when in is invalid or the rate
 * cannot be known (prefill without a compute rate). No assumptions are collected. */
double speed_predict(const struct speed_input *in,
		     const struct speed_params params[SPEED_BACKEND_COUNT], enum speed_test test);

/* The host kernels' rates of in (its host, weight type, repacked share and mix) into *out,
 * where they do not follow the sizes timed (a mix is given) and the host has an ISA class:
 * then true, and an input with them in host_rates (host_rates_known) times the same as one
 * without. */
bool speed_host_rates(const struct speed_input *in, struct speed_cpu_rates *out /* OUT */);

/* Decode tokens per second with the KV cache of the start (in->kv_bytes_start) and of the whole
 * context (in->kv_bytes_full): what speed_predict gives for in and for in with kv_bytes_start
 * set to kv_bytes_full, the host's kernel rates computed once for both. */
void speed_predict_decode_span(const struct speed_input *in,
			       const struct speed_params params[SPEED_BACKEND_COUNT],
			       double *at_start /* OUT */, double *at_full /* OUT */);

/* Batched decode: n_streams sequences generating together (llama-server with n_parallel
 * slots busy, vLLM's running batch). One step produces one token per stream: the weights are
 * read once per step (for MoE, the union of the experts the streams route to), each stream's
 * KV cache is read on its own, and each stream's token costs its FLOPs. The step is
 *   memory time (weights + n x KV, as decode) + n x marginal compute per token
 * where the marginal compute is the prefill time per token less the weight pass a 512-token
 * prefill shares, so that 512 streams process tokens at the pp512 rate. Pure roofline
 * arithmetic over speed_estimate's fitted constants; checked against llama.cpp runs at
 * micro-batch sizes 16-128 (tests/core/fit/test_speed.c). */
struct speed_batch {
	int n_streams;              /* >= 1 */
	double kv_bytes_per_stream; /* KV read per step by one stream, at its mean context */
	double expert_bytes;        /* bytes of all routed experts; 0: dense */
	int n_experts;              /* routed experts per MoE layer; 0: dense */
	int n_experts_used;         /* experts each token routes to */
	double prompt_tokens;       /* for the time to first token; <= 0: 512 */
};

struct speed_batch_output {
	double aggregate_tokens_per_s;  /* tokens per second over all streams */
	double per_stream_tokens_per_s; /* what each stream sees */
	double time_to_first_token_s;   /* prefill of prompt_tokens on an idle server + one step */
	double step_ms, memory_ms, compute_ms;
	double experts_read_share; /* share of the routed experts one step reads (1 dense) */
};

/* Estimates n_streams decoding together on in's hardware with speed_fitted. Returns 0 and
 * *out, or RF_E_INVALID_VALUE (in invalid, n_streams outside 1..65536, negative sizes, experts
 * used above experts, prefill unknown) with *out untouched. */
int speed_batched(const struct speed_input *in, const struct speed_batch *b,
		  struct speed_batch_output *out /* OUT */);

/* Like speed_batched with an explicit constants table (another runtime's kernels). */
int speed_batched_with(const struct speed_input *in,
		       const struct speed_params params[SPEED_BACKEND_COUNT],
		       const struct speed_batch *b, struct speed_batch_output *out /* OUT */);

/* One measured run: the inputs that describe it, which test, and the tokens per second. */
struct speed_obs {
	struct speed_input in;
	enum speed_test test;
	double measured_tps;
};

/* Fits the constants of every backend to the n observations by a coarse-then-fine grid search,
 * minimising the sum of absolute log errors per group (decode; prefill on tensor peaks;
 * prefill on vector peaks; CPU prefill): a median-like fit that one wild row cannot drag. A
 * parameter the rows cannot tell apart stays at its base value: the quantization factor needs
 * both quantized and F16 rows, a ceiling three distinct peaks (bandwidths for decode), the
 * per-layer cost three rows. Groups without rows inherit from another backend (tensor: CUDA;
 * vector: ROCm, then Metal, then Vulkan) or keep base. Returns 0 and out, or
 * RF_E_INVALID_VALUE when an observation is invalid. */
int speed_fit(const struct speed_obs *obs, size_t n,
	      const struct speed_params base[SPEED_BACKEND_COUNT],
	      struct speed_params out[SPEED_BACKEND_COUNT] /* OUT */);

/* The expected share of a layer's n_experts routed experts that tokens tokens, each using
 * n_used of them, route to at least once, when expert i (by popularity) is chosen with
 * weight i^-skew: (1/E) x sum_i (1 - (1 - p_i)^(tokens x n_used)). 1 for a uniform router
 * past a few dozen tokens; with the fitted skew it keeps growing up to thousands. Returns
 * 1 when n_experts or n_used is unknown (<= 0). */
double speed_expert_share(int n_experts, int n_used, double tokens, double skew);

/* Fits expert_skew to the n observations that copy host experts (prefill with
 * host_expert_bytes and n_experts known), every other constant taken from base: a grid in
 * steps of 0.05 over 0-4 minimising the sum of absolute log errors. Returns 0 and *skew, or
 * RF_E_INVALID_VALUE when an observation is invalid or none copies host experts. */
int speed_fit_expert_skew(const struct speed_obs *obs, size_t n,
			  const struct speed_params base[SPEED_BACKEND_COUNT],
			  double *skew /* OUT */);

/* Fits host_staging_gbs, the one constant of a partial offload's pageable copies, to the n
 * observations (prefill with some layers on the host, mmap'd, on a host that cannot
 * page-lock mapped memory): a grid search in steps of
 * 0.1 GB/s that minimises the sum of absolute log errors, every other constant taken from
 * base. Returns 0 and *gbs, or RF_E_INVALID_VALUE when an observation is invalid or none is a
 * partial-offload prefill of pageable weights. */
int speed_fit_staging(const struct speed_obs *obs, size_t n,
		      const struct speed_params base[SPEED_BACKEND_COUNT], double *gbs /* OUT */);

#endif
