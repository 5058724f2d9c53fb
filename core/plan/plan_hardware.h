/*
 * "Which hardware runs this model?": a sweep over the device profiles (every GPU and SoC with
 * a known memory size) and the number of devices of a kind, with the planner as the judge of
 * each candidate: the inference planner (core/plan/plan_infer.h) at the request's weight format
 * and context, or the fine-tuning planner (core/plan/plan_finetune.h) for the request's method.
 * For each device the fewest that run the model are kept, with the planner's setup, its speed
 * and, where a price per device-hour is known, the cost per million tokens; the candidates are
 * ranked by plan_rank_hardware (core/plan/plan_rank.h).
 *
 * What "runs" means:
 *  - inference: GPUs 1, 2, 4 or 8 of a kind, SoCs one; the planner's best setup keeps every
 *    layer and expert on the devices (a purchase that holds the model: offloading to the host
 *    would make its speed the host's, which the candidate does not include), within
 *    PLAN_MAX_GPU_UTIL of each budget, at the speed floor or above;
 *  - fine-tuning: GPUs 1 to PLAN_HW_MAX_COUNT of a kind, SoCs one; a plan that reaches the
 *    task's sequence length, first with nothing offloaded to host RAM at any count, and only
 *    when no count holds it so, with the host RAM assumed (offloading trains several times
 *    slower, and one GPU with everything in host RAM would otherwise answer for any model).
 * The host of a candidate is assumed large enough: PLAN_HW_RAM_FACTOR times the devices'
 * memory, at least PLAN_HW_MIN_RAM_GIB (SoCs: their own memory).
 *
 * The machine of each candidate is the caller's to resolve (plan_hw_machine_fn), as every
 * route resolves a described machine; the rest is pure.
 */
#ifndef RIGFIT_CORE_PLAN_HARDWARE_H
#define RIGFIT_CORE_PLAN_HARDWARE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hw/device.h"
#include "core/plan/plan_finetune.h"
#include "core/plan/plan_infer.h"

#define PLAN_HW_MAX_COUNT 8 /* devices of a kind */
#define PLAN_HW_RAM_FACTOR 2
#define PLAN_HW_MIN_RAM_GIB 64.0
#define PLAN_HW_MAX_PLANS 1024 /* planner calls per sweep: a bound on the work */

/* The two machines of one candidate, as the planners take them. */
struct plan_hw_machine {
	struct plan_machine infer;
	struct plan_ft_device ft;
};

/* Resolves count devices of profile d with ram_bytes of host RAM into *out (the inference
 * half for inference, the fine-tuning half for fine-tuning). Returns 0; RF_E_NOMEM (the sweep
 * stops with it); another negative rf_err when this device cannot be described (skipped). */
typedef int (*plan_hw_machine_fn)(void *ctx, const struct device_profile *d, int count,
				  int64_t ram_bytes, struct plan_hw_machine *out /* OUT */);

struct plan_hw_request {
	bool finetune;
	struct plan_request infer; /* inference: fixed ftype and n_ctx, as the caller sets them */
	struct plan_ft_request ft; /* fine-tuning: the task and method (methods) */
	double usd_per_hour;       /* per device without a price of its own; < 0 none */
};

/* One device that runs the model, at the fewest count. */
struct plan_hw_hit {
	const struct device_profile *device;
	int count;
	int64_t ram_bytes;        /* the host RAM assumed */
	struct plan_choice infer; /* inference: the planner's setup */
	struct plan_ft_result ft; /* fine-tuning: the planner's result (feasible) */
	double tokens_per_s;      /* decode (inference) or training; < 0 unknown */
	double utilization;       /* of the memory budget; < 0 unknown */
	double usd_per_hour;      /* per device; < 0 unknown */
	double usd_per_million;   /* < 0 unknown */
};

struct plan_hw_answer {
	int considered; /* device profiles swept */
	int planned;    /* planner calls */
	bool truncated; /* PLAN_HW_MAX_PLANS reached */
	int n_hits;
	struct plan_hw_hit *hits; /* best first (plan_rank_hardware); owned */
};

/* Returns the host RAM assumed for count devices of d (see above), bytes. */
int64_t plan_hw_ram_bytes(const struct device_profile *d, int count);

/* Sweeps the devices of t for model im (inference) or fm (fine-tuning) as r asks, rating
 * quality with q (inference). Returns 0 and *out (free with plan_hw_answer_free), RF_E_NOMEM,
 * or the first error of the planner other than a candidate's. */
int plan_hardware(const struct device_table *t, const struct plan_model *im,
		  const struct plan_ft_model *fm, const struct plan_quality *q,
		  const struct plan_hw_request *r, plan_hw_machine_fn machine, void *ctx,
		  struct plan_hw_answer *out /* OUT */);

/* Frees what a holds; NULL is a no-op. */
void plan_hw_answer_free(struct plan_hw_answer *a);

#endif
