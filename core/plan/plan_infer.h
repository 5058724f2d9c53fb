/*
 * The inference planner: the best setup of one model on one machine for a use case, found by
 * searching the setup space with the evaluator (core/plan/plan_eval.h) as the oracle, never by
 * a ladder that cuts one setting at a time.
 *
 * The space: the runtime's weight formats (llama.cpp: every file type the quality table rates,
 * or the one format a model ships natively, such as gpt-oss's MXFP4; vLLM: bf16, fp8, AWQ), the
 * KV cache type (f16, q8_0; q4_0 only when nothing else fits), flash attention, the layers on
 * the GPUs (all, or the most that fit: partial offload, only where the host's memory is known),
 * the routed experts kept in host
 * memory for MoE models (n_cpu_moe, llama.cpp's --n-cpu-moe), n_parallel as asked, and n_ctx,
 * solved for each of the discrete choices as the largest that fits (by bisection: memory
 * grows with n_ctx). Every setup must fit with headroom: no GPU above max_gpu_util of its
 * budget (validate's vram_over_90 rule) and the host at most PLAN_MAX_HOST_UTIL of its
 * budget (unified memory excepted: there the GPU's working set is the limit).
 *
 * The objective, by use case (the answer states it):
 *   general       best quality with n_ctx >= 8192 (or the request's) at interactive speed
 *                 (PLAN_FLUENT_TPS, else PLAN_INTERACTIVE_TPS) where a setup at the quality
 *                 floor's class or better reaches it, then the most context; else best
 *                 quality at 80% of the fastest such setup's speed, or usable speed if
 *                 more; and a setup twice as fast, at most the
 *                 quality floor's divergence worse and as long, wins over the best (Q4_K_M
 *                 on the GPU over Q8_0 mostly in RAM);
 *   coding        general's objective with n_ctx >= 16384, and its prompts are long: the
 *                 micro-batch widened for a 4096-token prompt as long_context's is;
 *   long_context  the longest n_ctx at Q4_K_M-class quality or better, usable speed;
 *   speed         the fastest with n_ctx >= 4096 at Q4_K_M-class quality or better;
 *   quality       best quality with n_ctx >= 4096 at reading speed or faster.
 * Quality is the quality table's divergence (ties within tie_kld); general and quality break
 * ties by speed (within 5%), then context; long_context by quality, then speed; speed by
 * quality, then context. "Usable" is min_tokens_per_s of decode (default 5; given, it is the floor of
 * every use case, general's interactive speed included). When no setup reaches the floor, the floor becomes 80% of the fastest setup that meets the rest, and the answer says
 * so (below_floor).
 *
 * The answer: the chosen setup and the Pareto front over quality, speed and context among the
 * setups that meet the constraints (the alternatives), each with a line of why.
 *
 * Pure: no I/O. plan_infer allocates its working set and frees it before returning.
 */
#ifndef RIGFIT_CORE_PLAN_INFER_H
#define RIGFIT_CORE_PLAN_INFER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/model.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_quality.h"

#define PLAN_MIN_TPS 5.0 /* default usable decode speed, tokens/s */
/* Reading speed: 238 words per minute, the mean of silent reading in English (Brysbaert 2019,
 * "How many words do we read per minute?", J. Memory and Language 109), at 1.3 tokens per
 * word: 5.2 tokens/s. */
#define PLAN_READING_TPS 5.2
/* Interactive speed: what general (chat and coding) asks where a setup at the quality floor's
 * class or better reaches it, the higher first. A reply is skimmed rather than read word by
 * word, and skimming runs at 2-3x reading speed (Rayner et al. 2016, "So Much to Read, So
 * Little Time", Psychological Science in the Public Interest 17(1): 400-700 words a minute,
 * and comprehension falls apart beyond about 900): 700 words a minute at 1.3 tokens per word
 * is 15 tokens/s, 900 is 20. At 20 no reader waits on the model; at 15 a skimming one keeps
 * up; below, the user waits. */
#define PLAN_FLUENT_TPS 20.0
#define PLAN_INTERACTIVE_TPS 15.0
#define PLAN_MAX_GPU_UTIL 0.90 /* the share of a GPU's budget validate warns above */
/* The share of the host's budget a plan fills at most (the budget already leaves the OS a
 * tenth of the RAM): a browser and an editor beside the model must not push it into swap. */
#define PLAN_MAX_HOST_UTIL 0.90
#define PLAN_MIN_CTX 2048 /* no setup with less context is offered */
#define PLAN_GENERAL_CTX 8192
/* coding: the files an assistant reads with the conversation (Continue's and aider's default
 * windows are of this order) */
#define PLAN_CODING_CTX 16384
#define PLAN_SHORT_CTX 4096
/* Context general and quality write at most: long conversations and documents fit, and memory
 * beyond it is better spent on quality (long_context takes all there is). */
#define PLAN_GENERAL_CTX_CAP 32768
#define PLAN_SPEED_CTX_CAP 8192
#define PLAN_MAX_ALTS 8
#define PLAN_WHY_LEN 200
#define PLAN_OBJECTIVE_LEN 320
#define PLAN_MAX_NOTES 8
#define PLAN_NOTE_LEN 400

enum plan_use_case {
	PLAN_GENERAL = 0,
	PLAN_LONG_CONTEXT,
	PLAN_SPEED,
	PLAN_QUALITY,
	PLAN_CODING,
	PLAN_USE_CASES
};

/* Whether u is one of the chat-like use cases held to interactive speed (general, coding). */
bool plan_use_case_interactive(enum plan_use_case u);

/* The use cases' names, in the enum's order, NULL-terminated (a request's "use_case"). */
extern const char *const plan_use_case_names[PLAN_USE_CASES + 1];

/* Returns the use case's name ("long_context"). */
const char *plan_use_case_name(enum plan_use_case u);

/* The weights of the model in file type ftype (a memo); returns 0 or a negative rf_err. */
typedef int (*plan_weights_fn)(void *ctx, const struct model_arch *a, int ftype,
			       struct rf_mem_weights *out /* OUT */);

/* vLLM's facts of the model (a memo; free with vllm_facts_free); returns 0 or a negative
 * rf_err. */
typedef int (*plan_vllm_facts_fn)(void *ctx, const struct model_arch *a,
				  struct vllm_facts *out /* OUT */);

struct plan_model {
	const struct model_arch *arch; /* validated */
	const struct model_params *params;
	plan_weights_fn weights;
	void *weights_ctx;
	plan_vllm_facts_fn vllm_facts; /* NULL: summed from the model's tensors per question */
	void *vllm_facts_ctx;
	int fixed_ftype;   /* >= 0: the weights are a file of this type (a GGUF): the only format */
	bool native_mxfp4; /* released with MXFP4 experts (gpt-oss): the only llama.cpp format */
	unsigned vllm_missing;  /* bits 1 << enum plan_vllm_format of the formats no checkpoint
				  exists for (plan_vllm_missing): never proposed */
	struct model_rope rope; /* the card's rope scaling beyond the trained window (none: zero):
				   the longest context searched is what it reaches (plan_rope.h) */
	/* The benchmark runs recorded on the machine (NULL: none): a llama.cpp format's speed is
	 * refined by them as /api/estimate refines it (plan_wsum_calibrate), for the catalog
	 * model calib_model, or outside the catalog the model named calib_name. */
	const struct speed_calibration *calib;
	const struct model_entry *calib_model;
	const char *calib_name;
	bool no_llama_cpp;  /* llama.cpp has no architecture for it (Llama 3.2 Vision's mllama):
			       only vLLM is searched */
	uint64_t gguf_held; /* bits 1 << ft of the llama.cpp file types a published GGUF of the
			       release holds (the catalog's repositories): only those are
			       searched; 0: every type (none is listed, the file is made) */
};

struct plan_request {
	enum plan_use_case use_case;
	enum plan_runtime runtime; /* PLAN_RT_AUTO: vLLM too where the machine runs it */
	int ftype;                 /* llama.cpp: a fixed file type; -1 search */
	int vformat;               /* vLLM: a fixed format (enum plan_vllm_format); -1 search */
	int64_t n_ctx;             /* 0: the use case's; > 0: exactly this (shared by n_parallel, as
				llama.cpp's -c); -1: the largest that fits */
	int64_t n_parallel;        /* sequences served together; >= 1: the context targets are each
				sequence's, the speed objective their aggregate (batched decode),
				the speed floor what each one sees */
	double min_tps;            /* the decode floor asked; <= 0: the use case's (general:
				interactive speed where reachable, else PLAN_MIN_TPS) */
	double max_gpu_util;       /* headroom; <= 0: PLAN_MAX_GPU_UTIL (vLLM: 1, its own share) */
	bool choice_only;          /* no alternatives wanted: formats that cannot be chosen are not
			     evaluated at all (a catalog sweep) */
	bool no_mmap;              /* llama.cpp with --no-mmap: weights read into buffers, only a
			     repacked copy kept (the user's choice; the default maps the file) */
};

/* Sets the defaults: general, llama.cpp, every format, the use case's context, one sequence,
 * the use case's speed floor, PLAN_MAX_GPU_UTIL. */
void plan_request_default(struct plan_request *r /* OUT */);

struct plan_choice {
	struct plan_setup setup;
	struct plan_result res;
	double kld; /* the quality table's divergence; < 0 unknown */
	/* Each sequence's context: n_ctx / n_parallel; vLLM: what each planned request holds
	 * at once (setup.vllm_seq_ctx), while one request may grow to setup.p.n_ctx. */
	int64_t ctx;
	char why[PLAN_WHY_LEN];
};

struct plan_answer {
	bool found;
	struct plan_choice best;
	int n_alt;
	struct plan_choice alt[PLAN_MAX_ALTS]; /* the Pareto front, best first, without best */
	int evaluated;                         /* setups put to the evaluator */
	bool below_floor;                      /* nothing reached the speed floor (see above) */
	/* general: a setup at the quality floor's class reached PLAN_FLUENT_TPS or
	 * PLAN_INTERACTIVE_TPS, which became the floor (false: the usable floor applied) */
	bool interactive;
	double floor_tps;   /* the floor applied */
	int64_t ctx_target; /* the least n_ctx the objective asked for */
	bool ctx_short;     /* nothing fitted ctx_target: the best fitted less */
	char objective[PLAN_OBJECTIVE_LEN];
	/* Both runtimes searched: which won and why, against the other's best ("" otherwise). */
	char runtime_why[PLAN_NOTE_LEN];
	int n_notes;
	char notes[PLAN_MAX_NOTES][PLAN_NOTE_LEN]; /* what was traded, one line each */
	/* When nothing fits: the smallest need found (the cheapest format at PLAN_MIN_CTX with
	 * every layer on the GPUs), for the error message. */
	int64_t min_total_bytes;
};

/* Plans model m on hw for r, rating quality with q. Returns 0 with *out (out->found false when
 * no setup fits at all), RF_E_NOMEM, or RF_E_INVALID_VALUE (a request out of range). */
int plan_infer(const struct plan_model *m, const struct plan_machine *hw,
	       const struct plan_quality *q, const struct plan_request *r,
	       struct plan_answer *out /* OUT */);

/* The planner's searches over one llama.cpp setup s of model m on hw, for advice on a setup
 * someone wrote (core/plan/plan_check.h). plan_largest_ctx: the largest n_ctx in [lo, hi]
 * (multiples of RF_KV_PAD) at which s fits with no GPU above max_gpu_util of its budget, found
 * as plan_infer solves each setup's context; 0 when even lo does not fit. plan_most_gpu_layers:
 * the most n_gpu_layers in [0, the model's layers] at which s (at its n_ctx) fits so, found as
 * plan_infer solves the offload split; -1 when none does. Each returns a negative rf_err
 * (RF_E_NOMEM; RF_E_INVALID_VALUE for a setup the evaluator refuses). */
int64_t plan_largest_ctx(const struct plan_model *m, const struct plan_machine *hw,
			 const struct plan_setup *s, double max_gpu_util, int64_t lo, int64_t hi);
int64_t plan_most_gpu_layers(const struct plan_model *m, const struct plan_machine *hw,
			     const struct plan_setup *s, double max_gpu_util);

#endif
