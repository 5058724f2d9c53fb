/*
 * The one estimate of a setup: plan_estimate(request, context, answer). Every way of asking
 * rigfit what a setup needs and how fast it runs ends here: POST /api/estimate (and so
 * `rigfit estimate`, the MCP estimate tool and the page, which ask that route) for its three
 * kinds of question, and the planner (core/plan/plan_infer.c) for every llama.cpp and vLLM
 * setup it searches.
 *
 *   request  a tagged union: a llama.cpp setup (struct plan_setup), a vLLM engine (its
 *            arguments, or the planner's setup with the capacity it sized once per choice)
 *            or a fine-tuning run (struct plan_train_request); with the serving traffic the
 *            batched figures are for, and whether the route's detail is wanted;
 *   context  the model (architecture, parameter counts, a format's weights and their memo with
 *            what the runs recorded on the machine say of it, vLLM's tensor facts, the
 *            training view), the machine (struct plan_machine, its host measurement included)
 *            as data;
 *   answer   memory and fit, speed with its basis, serving (traffic, concurrency, batched
 *            figures, cost per token), training, and the facts the assumptions are worded
 *            from (the route words them: the JSON layer renders, core decides).
 *
 * Why in core/plan and not core/fit: a llama.cpp setup's evaluation is composed from fit's
 * parts (memory, speed, the machine's calibration) in plan_eval.c, and a fine-tuning run with
 * strategy "auto" is a search over strategies and GPU counts (plan_strategy.c), a decision;
 * core/fit may not depend on core/plan (no import cycle), so the entry that covers all three
 * kinds lives here, above fit. Pure: no I/O; a vLLM engine sized here allocates its tensor
 * list for the time of the call.
 */
#ifndef RIGFIT_CORE_PLAN_ESTIMATE_H
#define RIGFIT_CORE_PLAN_ESTIMATE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/serve_vllm.h"
#include "core/fit/speed.h"
#include "core/fit/train_memory.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_train_eval.h"

/* Serving traffic assumed where a request does not say: a chat turn. */
#define PLAN_PROMPT_TOKENS 512
#define PLAN_OUTPUT_TOKENS 256

enum plan_est_kind {
	PLAN_EST_LLAMA_CPP = 0,
	PLAN_EST_VLLM = 1,
	PLAN_EST_TRAIN = 2,
};

/* The serving traffic asked about (<= 0: not given). */
struct plan_traffic_ask {
	int64_t concurrency, prompt, output;
	double usd_per_hour; /* the machine's price; < 0 not given */
};

/* A vLLM engine: the planner's setup, or the arguments as a request gives them. */
struct plan_est_vllm {
	/* The planner's setup (runtime vLLM): its engine (format, KV dtype, tensor parallelism,
	 * --gpu-memory-utilization, --max-num-seqs), its --max-model-len p.n_ctx and its
	 * p.n_parallel planned requests of vllm_seq_ctx tokens. NULL: engine. */
	const struct plan_setup *setup;
	struct vllm_setup engine; /* without setup: vLLM's arguments as given */
	/* The capacity already sized for this engine (the planner's memo; the cache is sized
	 * before the length is checked); NULL: sized here over the context's facts. */
	const struct vllm_capacity *cap;
	const struct vllm_gpu *gpus; /* the GPUs vLLM runs on; NULL: the machine's */
	int n_gpus;
};

struct plan_est_request {
	enum plan_est_kind kind;
	/* What /api/estimate states besides the planner's figures: prefill, each figure's
	 * roofline and basis, the speed model's own notes and the traffic's batched figures. */
	bool detail;
	struct plan_traffic_ask traffic; /* llama.cpp and vLLM with detail */
	union {
		const struct plan_setup *llama; /* runtime llama.cpp; p.n_ctx < 0: the largest
						   context that fits */
		struct plan_est_vllm vllm;
		struct plan_train_request train;
	} u;
};

struct plan_est_context {
	const struct model_arch *a;
	const struct model_params *mp;
	/* llama.cpp: the format's weights and their memo (plan_weights_sum, with the machine's
	 * runs from plan_wsum_calibrate); sum NULL: summed here, on the roofline. */
	const struct rf_mem_weights *w;
	const struct plan_wsum *sum;
	const struct vllm_facts *vf;  /* vLLM: the model's facts; NULL: built for the call */
	const struct train_model *tm; /* fine-tuning: the model as training sees it */
	const struct plan_machine *hw;
};

/* The serving side of a setup: the traffic as run and its batched figures. */
struct plan_serving {
	struct plan_traffic t;   /* as run: concurrency capped to what runs at once */
	int64_t asked;           /* the concurrency asked (or defaulted to) before the cap */
	unsigned warn;           /* llama.cpp: enum plan_llama_warning bits */
	int64_t vllm_at_once;    /* vLLM: requests the cache holds whole, up to max_num_seqs */
	bool concurrency_queued; /* vLLM: more were asked than it runs at once */
	bool ok;                 /* the batched figures are known */
	bool moe;                /* a step reads the experts the batch routes to */
	struct speed_batch_output b;
	double usd_per_million_tokens; /* < 0: no price given, or no figure */
};

/* vLLM's side of the answer. */
struct plan_vllm_answer {
	struct vllm_capacity cap; /* sized here (the request's own when it gave one) */
	const char *error_field;  /* the setting at fault when it cannot be sized */
	double utilization;       /* per GPU, over 1 when nothing is left for the cache */
	const char *fit_band;     /* "over" when vLLM would not start */
};

struct plan_est_answer {
	/* llama.cpp and vLLM: memory, fit, decode at the start and with the context filled,
	 * the n_parallel planned streams' aggregate. */
	struct plan_result res;
	/* With detail: */
	struct plan_llama_speed speed; /* llama.cpp: each figure's roofline, factor and basis */
	enum speed_basis basis;        /* llama.cpp: the speed's basis, the more measured figure */
	/* llama.cpp: this host's measurement stands in for runs (no run recorded; the host
	 * measured, the machine this host's own snapshot, the CPU its backend). */
	bool measured_host;
	struct speed_input in;  /* the speed model's inputs */
	bool so_ok;             /* so holds the roofline's figures and notes */
	struct speed_output so; /* the roofline's own statement of the figures */
	struct plan_serving serving;
	struct plan_vllm_answer vllm;
	struct plan_train_answer train;
};

/* Evaluates request q in context x. Returns 0 and *out, or a negative rf_err: for llama.cpp
 * RF_E_INVALID_VALUE with out->res.mem.error_field naming the setting at fault, for vLLM the
 * capacity's error with out->vllm.error_field (and out->res.mem.error_field "model"), for
 * fine-tuning out->train.error. Without detail only out->res (llama.cpp, vLLM) or out->train
 * is written, so the planner's evaluation of a setup costs what plan_evaluate_llama does. */
int plan_estimate(const struct plan_est_request *q, const struct plan_est_context *x,
		  struct plan_est_answer *out /* OUT */);

/* plan_estimate of setup s (llama.cpp or vLLM, without detail) of model (a, mp) with weights w
 * (llama.cpp: the scheme's; vLLM: unused, may be NULL) on hw, with no recorded runs, into
 * *out: for a caller that holds a plan_result, not an answer (the validate rules, tests).
 * Returns 0 and *out, or RF_E_INVALID_VALUE with out->mem.error_field naming the setting at
 * fault. */
int plan_evaluate(const struct model_arch *a, const struct model_params *mp,
		  const struct rf_mem_weights *w, const struct plan_machine *hw,
		  const struct plan_setup *s, struct plan_result *out /* OUT */);

/* plan_evaluate with the format's memo in hand (plan_weights_sum, plan_wsum_calibrate). */
int plan_evaluate_summed(const struct model_arch *a, const struct model_params *mp,
			 const struct rf_mem_weights *w, const struct plan_wsum *sum,
			 const struct plan_machine *hw, const struct plan_setup *s,
			 struct plan_result *out /* OUT */);

#endif
