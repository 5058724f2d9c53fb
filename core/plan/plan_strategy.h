/*
 * The fine-tuning decisions about several GPUs: which strategy (none, DDP, ZeRO-1..3,
 * FSDP-QLoRA, then CPU offload) runs a setup within a GPU's and a node's memory, and the fewest
 * GPUs that do. A search over core/fit's estimates (train_memory_estimate, with the
 * placements of core/fit/train_parallel.h), so it lives with the other decisions in
 * core/plan. Pure: no I/O.
 */
#ifndef RIGFIT_CORE_PLAN_STRATEGY_H
#define RIGFIT_CORE_PLAN_STRATEGY_H

#include <stdint.h>

#include "core/fit/train_memory.h"

/* The most GPUs a search considers (train_parallel_check's bound). */
#define PLAN_STRATEGY_MAX_GPUS 4096

/* The cheapest way to run s on its n_gpus GPUs (nodes as given): the first of, in order, one
 * GPU alone (n_gpus 1), DDP, ZeRO-1, ZeRO-2, ZeRO-3 (FSDP-QLoRA for QLoRA), then ZeRO-3 with
 * the optimizer and then also the weights offloaded, whose per-GPU peak fits budget_bytes and
 * whose host memory per node fits host_budget_bytes (< 0: unknown, and then nothing is
 * offloaded; Unsloth's checkpoints still are, unchecked). Returns 1 and writes
 * the settings chosen and their estimate when one fits; 0 when none does (then *chosen and
 * *out hold the last, most frugal one tried); RF_E_INVALID_VALUE for bad settings. */
int plan_strategy_auto(const struct train_model *m, const struct train_settings *s,
		       int64_t budget_bytes, int64_t host_budget_bytes,
		       struct train_settings *chosen /* OUT */, struct train_memory *out /* OUT */);

/* The smallest number of GPUs (1 .. max_gpus, gpus_per_node on each node) of budget_bytes each
 * that runs s with plan_strategy_auto. Returns 1 and writes the settings and estimate, 0 when
 * even max_gpus do not suffice, or RF_E_INVALID_VALUE. */
int plan_strategy_min_gpus(const struct train_model *m, const struct train_settings *s,
			   int max_gpus, int gpus_per_node, int64_t budget_bytes,
			   int64_t host_budget_per_node, struct train_settings *chosen /* OUT */,
			   struct train_memory *out /* OUT */);

#endif
