/*
 * The strategy and GPU-count searches (see plan_strategy.h).
 */
#include "core/plan/plan_strategy.h"

#include <stddef.h>

#include "core/err.h"
#include "core/fit/train_parallel.h"

int plan_strategy_auto(const struct train_model *m, const struct train_settings *s,
		       int64_t budget_bytes, int64_t host_budget_bytes,
		       struct train_settings *chosen, struct train_memory *out)
{
	static const struct {
		enum train_strategy strategy;
		enum train_offload offload;
	} ladder[] = {
		{TRAIN_STRATEGY_DDP, TRAIN_OFFLOAD_NONE},
		{TRAIN_STRATEGY_ZERO1, TRAIN_OFFLOAD_NONE},
		{TRAIN_STRATEGY_ZERO2, TRAIN_OFFLOAD_NONE},
		{TRAIN_STRATEGY_ZERO3, TRAIN_OFFLOAD_NONE},
		{TRAIN_STRATEGY_ZERO3, TRAIN_OFFLOAD_OPTIMIZER},
		{TRAIN_STRATEGY_ZERO3, TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS},
	};
	struct train_settings t = *s;
	struct train_memory r;
	int rc;

	for (size_t i = 0; i < sizeof(ladder) / sizeof(ladder[0]); i++) {
		t.strategy = ladder[i].strategy;
		t.offload = ladder[i].offload;
		if (s->n_gpus <= 1 && i == 0)
			t.strategy = TRAIN_STRATEGY_NONE;
		/* One GPU: sharding saves nothing, only offloading does. */
		if (s->n_gpus <= 1 && i > 0 && i < 4)
			continue;
		/* Offloading needs host memory that is known to be there. */
		if (ladder[i].offload != TRAIN_OFFLOAD_NONE && host_budget_bytes < 0)
			continue;
		if (t.strategy == TRAIN_STRATEGY_ZERO3 && s->mode == TRAIN_QLORA)
			t.strategy = TRAIN_STRATEGY_FSDP_QLORA;
		rc = train_memory_estimate(m, &t, &r);
		if (rc < 0)
			return rc;
		train_page_optimizer(&t, budget_bytes, &r);
		*chosen = t;
		*out = r;
		if (r.total_bytes <= budget_bytes &&
		    (host_budget_bytes < 0 || r.host_bytes <= host_budget_bytes))
			return 1;
	}
	return 0;
}

int plan_strategy_min_gpus(const struct train_model *m, const struct train_settings *s,
			   int max_gpus, int gpus_per_node, int64_t budget_bytes,
			   int64_t host_budget_per_node, struct train_settings *chosen,
			   struct train_memory *out)
{
	if (max_gpus < 1 || max_gpus > PLAN_STRATEGY_MAX_GPUS || gpus_per_node < 1)
		return RF_E_INVALID_VALUE;
	for (int n = 1; n <= max_gpus; n++) {
		struct train_settings t = *s;
		int rc;
		t.n_gpus = n;
		t.nodes = (n + gpus_per_node - 1) / gpus_per_node;
		if (n % t.nodes != 0)
			continue;
		rc = plan_strategy_auto(m, &t, budget_bytes, host_budget_per_node, chosen, out);
		if (rc != 0)
			return rc;
	}
	return 0;
}
