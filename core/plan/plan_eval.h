/*
 * One setup, evaluated: the composition of the estimator's parts that every route shares.
 * A model (architecture, parameter counts, weights per quantization), a machine (memory budgets
 * per device and host, the speed model's hardware half) and one full setup (runtime, weight
 * format, KV cache types, flash attention, n_ctx, GPU layers, MoE experts kept in host memory,
 * n_parallel, batch and micro-batch) go in; the memory estimate (core/fit/estimate.h) and the
 * speed (core/fit/speed.h) come out. For llama.cpp that is plan_evaluate_llama, the one
 * evaluation, and for vLLM plan_vllm_figures over the capacity; both are asked through the one
 * estimate, plan_estimate (core/plan/plan_estimate.h), by /api/estimate and by the planner
 * (core/plan/plan_infer.h) for every setup it searches, and the predictions of recorded runs
 * are made with plan_evaluate_llama, so none of them can disagree. What a
 * format's setups share is computed once (struct plan_wsum): the weights' sums, their CPU
 * kernels, and what the runs recorded on the machine (core/fit/speed_calib.h) say of the model
 * in that format, a measured speed or an efficiency on the roofline.
 *
 * vLLM is sized by core/fit/serve_vllm.h, the model of vLLM's own start-up profiling (checked
 * against its logs): the KV cache's capacity in tokens for a weight format, KV dtype,
 * --gpu-memory-utilization, tensor parallelism and --max-num-seqs; plan_vllm_capacity gives it
 * once per such choice, and --max-model-len follows from it in closed form.
 *
 * Pure: no I/O. A llama.cpp setup allocates nothing: the weights of a scheme come from the
 * caller (a memo), so it costs one rf_estimate_inference and two speed_predict (three with
 * prefill, which only /api/estimate asks for). A vLLM setup
 * allocates the tensor list vllm_capacity walks, for the time of the call.
 */
#ifndef RIGFIT_CORE_PLAN_EVAL_H
#define RIGFIT_CORE_PLAN_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/estimate.h"
#include "core/fit/model.h"
#include "core/fit/serve_vllm.h"
#include "core/fit/speed.h"
#include "core/fit/speed_calib.h"

enum plan_runtime {
	PLAN_RT_AUTO = -1, /* a request only: both where vLLM runs, else llama.cpp */
	PLAN_RT_LLAMA_CPP = 0,
	PLAN_RT_VLLM = 1,
};

/* vLLM's weight formats. The first PLAN_VLLM_FORMATS are rated by the quality table; MXFP4 is
 * a model's native format (gpt-oss), rated as the model itself. */
enum plan_vllm_format {
	PLAN_VLLM_BF16 = 0,
	PLAN_VLLM_FP8 = 1, /* --quantization fp8: 1 byte per weight of the linear layers */
	PLAN_VLLM_AWQ = 2, /* an AWQ int4 checkpoint, group size 128 */
	PLAN_VLLM_MXFP4 = 3,
};
#define PLAN_VLLM_FORMATS 3

/* vLLM's default --gpu-memory-utilization: the share of each GPU's total memory it may use. */
#define PLAN_VLLM_GPU_UTIL 0.90
/* The higher share the planner may choose when the default leaves the use case short of
 * context: 5% of the GPU stays outside vLLM's pool, about 1 GiB of it for the CUDA graphs it
 * captures after sizing the cache (serve_vllm.h), so only on a GPU no other process uses. */
#define PLAN_VLLM_GPU_UTIL_HIGH 0.95
/* vLLM's speed: the tensor-parallel all-reduces cost this much per layer and token (as
 * /api/estimate states for runtime vllm). */
#define PLAN_VLLM_ALLREDUCE_MS 0.02

/* The --gpu-memory-utilization to run vLLM with on a GPU of total bytes with free bytes free:
 * the default when at least 95% is free, else what is free less 5 points (at least 0.10), so
 * vLLM does not claim memory other processes hold. */
double plan_vllm_gpu_util(int64_t total_bytes, int64_t free_bytes);

/* Returns the flag value of format f ("fp8", "awq"; NULL for bf16: no --quantization). */
const char *plan_vllm_format_flag(enum plan_vllm_format f);

/* Returns the bits 1 << enum plan_vllm_format of the formats catalog model m has no checkpoint
 * for: AWQ unless the catalog lists an AWQ checkpoint (vLLM loads AWQ only from a checkpoint
 * already in that format, and stops at start-up on a bf16 one). m NULL (a model outside the
 * catalog, or a release the catalog's artifacts are not of): AWQ. bf16 is the model itself
 * and fp8 vLLM also quantizes on load (--quantization fp8), so neither is ever missing. */
unsigned plan_vllm_missing(const struct model_entry *m);

/* Whether vLLM loads weights in precision p (enum vllm_precision) for a model whose checkpoint
 * stores own (enum vllm_precision: VLLM_BF16 for plain 16-bit weights), catalog model m (NULL:
 * outside the catalog) listing its checkpoints. 16-bit weights cast to bf16, fp16 or fp32 and
 * vLLM quantizes them on load to fp8 or bitsandbytes; AWQ and GPTQ load only from a
 * checkpoint already in that format (vLLM stops at start-up on a bf16 one): the model's own,
 * or the catalog's of m; int8 and mxfp4 only from the model's own. A quantized checkpoint
 * loads only as itself (vLLM refuses a --quantization its quantization_config does not
 * name). Writes the catalog's repository to serve into *repo when one is needed (else NULL). */
bool plan_vllm_loadable(const struct model_entry *m, int own, int p, const char **repo /* OUT */);

/* What vllm serve loads for one format. */
struct plan_vllm_ckpt {
	const char *repo;         /* the repository (or id) to serve */
	const char *quantization; /* --quantization to write; NULL: none (the checkpoint's own
				     quantization_config says it, or bf16) */
};

/* Fills out with what vllm serve loads for format f of catalog model m (NULL: none, see
 * plan_vllm_missing), whose weights are model_id otherwise: the catalog's checkpoint of that
 * format, else the chat release (or model_id) with fp8 quantized on load. Every repository
 * is one the catalog lists. Returns 0, or RF_E_NOT_FOUND for a format without a checkpoint. */
int plan_vllm_checkpoint(const struct model_entry *m, const char *model_id, enum plan_vllm_format f,
			 struct plan_vllm_ckpt *out /* OUT */);

/* Returns serve_vllm's precision (enum vllm_precision) of format f. */
int plan_vllm_precision(enum plan_vllm_format f);

/* The machine, as the estimator and the speed model take it. */
struct plan_machine {
	struct rf_mem_device dev[RF_MAX_DEVICES];
	int64_t dev_total_bytes[RF_MAX_DEVICES]; /* total memory of each device; <= 0 unknown */
	int n_dev;
	struct rf_mem_host host;
	struct speed_input speed; /* the hardware half: backend, devices, host */
	int threads;              /* physical (performance) cores; 0 unknown */
	/* The host's figures are this host's own measurement (the machine is this host's
	 * snapshot, measured once per fingerprint): a CPU setup with no run recorded stands on
	 * it (plan_estimate's basis "measured_host"). */
	bool host_measured;
	int64_t ram_total_bytes; /* the host's RAM; <= 0 unknown */
	/* The GPUs vLLM can use (CUDA or ROCm), as many as one engine may span (tensor times
	 * pipeline parallel); 0: vLLM does not run on this machine. */
	int n_vgpu;
	struct vllm_gpu vgpu[VLLM_MAX_GPUS];
};

/* One setup. p holds llama.cpp's settings (n_ctx: the cells all n_parallel sequences share).
 * For vLLM: p.n_ctx is --max-model-len (one request's), p.n_parallel the requests planned to
 * run together, type_k/type_v F16 or Q8_0 standing for an fp8 cache, and the fields below. */
struct plan_setup {
	enum plan_runtime runtime;
	int ftype;                     /* llama.cpp: enum rf_ftype; vLLM: -1 */
	enum plan_vllm_format vformat; /* vLLM only */
	int tp;                        /* vLLM: --tensor-parallel-size */
	double vllm_util;              /* vLLM: --gpu-memory-utilization */
	int64_t max_num_seqs;          /* vLLM: --max-num-seqs; 0: vLLM's default */
	/* vLLM: the tokens each of the p.n_parallel planned requests holds at once. Paged
	 * attention reserves nothing per request, so one request may grow to p.n_ctx
	 * (--max-model-len) while the cache holds p.n_parallel of this length together; 0:
	 * p.n_ctx each. */
	int64_t vllm_seq_ctx;
	struct rf_infer_params p;
};

struct plan_result {
	struct rf_mem_estimate mem;
	double decode_tps;          /* one stream, tg128-like; < 0 unknown */
	double decode_tps_full_ctx; /* with the whole context filled; < 0 unknown */
	double aggregate_tps;       /* n_parallel streams together (batched); decode_tps for one */
	double gpu_util;            /* highest bytes / budget over the GPUs; -1 none known */
	bool fits;                  /* every device and the host within budget */
	int64_t kv_tokens;          /* vLLM: the KV cache's tokens ("GPU KV cache size") */
	enum speed_basis decode_basis; /* llama.cpp: what decode_tps stands on (the runs recorded on
					  the machine, plan_wsum.calib); vLLM: the roofline */
};

/* What every setup of one llama.cpp format shares (a memo per format, plan_weights_sum): what
 * the speed model reads of its weights (the repeating layers' bytes and their routed experts'),
 * the CPU kernels' side of them on the machine's CPU, and what the runs recorded on the machine
 * say of the model in this format (plan_wsum_calibrate; the roofline until then). */
struct plan_wsum {
	double layers, experts;
	int ftype;                    /* enum rf_ftype; < 0 unknown */
	double repacked_share;        /* share of the weights llama.cpp repacks on this CPU */
	struct speed_cpu_mix cpu_mix; /* the weight types' kernels (rf_weights_cpu_mix) */
	struct speed_calib_figs calib;
	/* The host kernels' rates of this format on the machine (plan_wsum_rates), the same for
	 * every setup of it; false: each speed works them out. */
	bool host_rates_known;
	struct speed_cpu_rates host_rates;
};

/* Fills out for the weights w of model a in file type ftype on a host of repack class
 * repack_isa (enum rf_repack_isa, plan_machine.host.repack_isa), with no calibration. */
void plan_weights_sum(const struct model_arch *a, const struct rf_mem_weights *w, int ftype,
		      int repack_isa, struct plan_wsum *out /* OUT */);

/* Works out the host kernels' rates of sum's format on machine hw once (speed_host_rates),
 * for plan_speed_model to hand to every setup's speed. */
void plan_wsum_rates(struct plan_wsum *sum /* IN/OUT */, const struct plan_machine *hw);

/* Sets out->calib from the runs c recorded on machine hw (NULL: none, the roofline) for
 * catalog model (or, outside the catalog, a model named name) in out->ftype, whose
 * architecture, counts and weights are a, mp and w: runs of it are put on the roofline of the
 * setup they ran (plan_llama_bench_setup). Returns 0, or RF_E_INVALID_VALUE (out->calib then
 * the roofline). */
int plan_wsum_calibrate(struct plan_wsum *out /* IN/OUT */, const struct model_arch *a,
			const struct model_params *mp, const struct rf_mem_weights *w,
			const struct plan_machine *hw, const struct speed_calibration *c,
			const struct model_entry *model, const char *name);

/* The setup llama-bench runs by default, which a recorded run of model a in ftype on hw is
 * taken to have run: every layer on the GPUs (none without one), llama.cpp's default context
 * (within the model's), batch and cache. */
void plan_llama_bench_setup(const struct model_arch *a, const struct plan_machine *hw, int ftype,
			    struct plan_setup *out /* OUT */);

/* The speed model's inputs for a model with counts mp and weights w (their sums and CPU side
 * in sum), placed as m says, over the hardware half already in *in. The share of the bytes
 * read per token that the GPUs hold sets gpu_fraction: with routed experts in host memory
 * (n_cpu_moe) it is counted in bytes (the host reads only the active experts of its layers),
 * otherwise by layers. */
void plan_speed_model(const struct model_params *mp, const struct rf_mem_weights *w,
		      const struct plan_wsum *sum, const struct rf_mem_estimate *m,
		      const struct rf_infer_params *p, struct speed_input *in /* IN/OUT */);

/* The largest tensor-parallel size vLLM can run a on hw with: a power of two of the GPUs that
 * divides the attention heads and divides or is a multiple of the KV heads; 0 when vLLM does
 * not run here. */
int plan_vllm_tp(const struct model_arch *a, const struct plan_machine *hw);

/* vLLM's capacity for s (format, KV dtype, tp, vllm_util, max_num_seqs, p.n_ctx as
 * --max-model-len: <= 0 asks only for the KV tokens, as vLLM sizes its cache before it checks
 * the length), over a's facts f (vllm_facts_build; NULL: built for the call). Returns 0 and
 * *out, or a negative rf_err. */
int plan_vllm_capacity(const struct model_arch *a, const struct vllm_facts *f,
		       const struct plan_machine *hw, const struct plan_setup *s,
		       struct vllm_capacity *out /* OUT */);

/* A llama.cpp setup's speed as /api/estimate states it: each figure (enum speed_test) on the
 * roofline and refined by the runs recorded on the machine, and decode with the whole context
 * filled at decode's factor. */
struct plan_llama_speed {
	double roofline[SPEED_HISTORY_FIGURES]; /* < 0 unknown */
	double tps[SPEED_HISTORY_FIGURES];      /* refined; < 0 unknown */
	double factor[SPEED_HISTORY_FIGURES];   /* tps / roofline; < 0 unknown */
	enum speed_basis basis[SPEED_HISTORY_FIGURES];
	double decode_full_ctx; /* < 0 unknown */
};

/* The one evaluation of a llama.cpp setup, for the planner and /api/estimate alike: memory
 * (rf_estimate_inference; s->p.n_ctx < 0 asks for the largest context that fits,
 * rf_estimate_max_ctx, and out->mem.n_ctx holds it), single-stream decode at the start and
 * with the context filled, refined by sum->calib, and n_parallel streams' aggregate decode.
 * With speed not NULL, also prefill and each figure's roofline, factor and basis; with in not
 * NULL, the speed model's inputs the figures were computed from (for the batched figures and
 * the assumptions). Returns 0 and *out, or RF_E_INVALID_VALUE with out->mem.error_field naming
 * the setting at fault. */
int plan_evaluate_llama(const struct model_arch *a, const struct model_params *mp,
			const struct rf_mem_weights *w, const struct plan_wsum *sum,
			const struct plan_machine *hw, const struct plan_setup *s,
			struct plan_result *out /* OUT */, struct plan_llama_speed *speed /* OUT */,
			struct speed_input *in /* OUT */);

/* The serving traffic a setup's batched figures are for: concurrency streams, each a prompt of
 * prompt tokens generating output tokens. */
struct plan_traffic {
	int64_t concurrency, prompt, output;
};

/* What a llama.cpp setup's traffic meets (bits; the estimate says each in words). */
enum plan_llama_warning {
	PLAN_WARN_SLOTS_FULL = 1u << 0, /* more streams than n_parallel slots: the rest wait */
	PLAN_WARN_SLOT_SHORT = 1u << 1, /* a request is longer than a slot's cells */
};

/* Fits traffic t to llama-server's slots of setup p with n_ctx cells (the memory estimate's):
 * at most n_parallel streams decode at once (t->concurrency is capped there). Returns the
 * enum plan_llama_warning bits that apply. */
unsigned plan_llama_traffic(const struct rf_infer_params *p, int64_t n_ctx,
			    struct plan_traffic *t /* IN/OUT */);

/* The batched figures of traffic t on a setup of model (a, mp) whose speed model's inputs are
 * in (plan_evaluate_llama's, or vLLM's), with constants params: t->concurrency streams
 * decoding together, each reading its KV cache (kv_per_token bytes a token over every layer)
 * at its mean context (prompt + half the output); a MoE step reads the experts the batch
 * routes to (*moe: counted). Returns 0 and *out, or RF_E_INVALID_VALUE when the batched speed
 * cannot be known (no compute rate for prefill). */
int plan_batched(const struct model_arch *a, const struct model_params *mp,
		 const struct speed_input *in,
		 const struct speed_params params[SPEED_BACKEND_COUNT], double kv_per_token,
		 const struct plan_traffic *t, struct speed_batch_output *out /* OUT */,
		 bool *moe /* OUT */);

/* The speed input and fitted parameters of vLLM engine c (its tensor- and pipeline-parallel
 * shape) on devices like dev, with the cache full at ctx_full tokens: the one description of
 * vLLM's speed that /api/estimate and the planner evaluate. */
void plan_vllm_speed_input(const struct model_arch *a, const struct model_params *mp,
			   const struct speed_device *dev, const struct vllm_capacity *c,
			   bool quantized, int64_t ctx_full, struct speed_input *in /* OUT */,
			   struct speed_params params[SPEED_BACKEND_COUNT] /* OUT */);

/* The result of vLLM setup s from its capacity c (plan_vllm_capacity at s's --max-model-len):
 * memory per GPU as vLLM takes it (its pool plus the CUDA graphs), fit (vLLM starts and every
 * planned request holds p.n_ctx tokens), single-stream and batched speed. */
void plan_vllm_result(const struct model_arch *a, const struct model_params *mp,
		      const struct plan_machine *hw, const struct plan_setup *s,
		      const struct vllm_capacity *c, struct plan_result *out /* OUT */);

/* plan_vllm_result for an engine given by its parts: weights quantized (not 16 or 32-bit),
 * --max-model-len n_ctx, streams planned requests of seq_ctx tokens each (<= 0: n_ctx). With
 * in and params not NULL, also the speed model's inputs and constants the figures are of
 * (SPEED_BACKEND_COUNT of them). */
void plan_vllm_figures(const struct model_arch *a, const struct model_params *mp,
		       const struct plan_machine *hw, const struct vllm_capacity *c, bool quantized,
		       int64_t n_ctx, int64_t streams, int64_t seq_ctx,
		       struct plan_result *out /* OUT */, struct speed_input *in /* OUT */,
		       struct speed_params *params /* OUT */);

/* The highest bytes / budget over the GPUs of m; -1 when no GPU budget is known. */
double plan_gpu_util(const struct rf_mem_estimate *m);

#endif
