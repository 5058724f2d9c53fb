/*
 * One fine-tuning run's memory, fit, speed and cost (see plan_train_eval.h).
 */
#include "core/plan/plan_train_eval.h"

#include <string.h>

#include "core/err.h"
#include "core/fit/train_parallel.h"
#include "core/plan/plan_strategy.h"

/* Estimates s on GPUs of budget each (host_budget per node, < 0 unknown): with want_auto the
 * cheapest placement that fits, else s as given. Writes the settings used and the estimate;
 * returns 1 when it fits, 0 when not, or a negative error. */
static int train_fit(const struct train_model *tm, const struct train_settings *s, bool want_auto,
		     int64_t budget, int64_t host_budget, struct train_settings *used,
		     struct train_memory *r)
{
	int rc;

	if (want_auto)
		return plan_strategy_auto(tm, s, budget, host_budget, used, r);
	*used = *s;
	rc = train_memory_estimate(tm, s, r);
	if (rc < 0)
		return rc;
	train_page_optimizer(s, budget, r);
	return r->total_bytes <= budget && (host_budget < 0 || r->host_bytes <= host_budget);
}

/* "max": the largest seq_len (or batch_size) that fits, by bisection over the monotonic
 * estimate; writes it into *s. */
static void train_max(const struct train_model *tm, const struct plan_train_request *q,
		      bool want_auto, int64_t budget, struct train_settings *s)
{
	const bool seq = q->max_seq_len;
	int64_t lo = 0, hi = seq ? (q->max_positions > 0 ? q->max_positions : PLAN_TRAIN_MAX_SEQ) :
				   PLAN_TRAIN_MAX_BATCH;
	struct train_settings used;
	struct train_memory r;

	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2;
		struct train_settings c = *s;
		if (seq)
			c.seq_len = mid;
		else
			c.batch_size = mid;
		if (!q->padded_given)
			c.padded = train_default_padded(&c);
		if (train_fit(tm, &c, want_auto, budget, q->gpus.host_budget, &used, &r) == 1)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (seq)
		s->seq_len = lo > 0 ? lo : 1;
	else
		s->batch_size = lo > 0 ? lo : 1;
	if (!q->padded_given)
		s->padded = train_default_padded(s);
}

void plan_train_placement(struct plan_train_request *q)
{
	if (q->strategy_auto && q->offload_given && q->s.offload != TRAIN_OFFLOAD_NONE) {
		/* Offloading is ZeRO-3's (FSDP-QLoRA's for a 4-bit base). */
		q->s.strategy = q->s.mode == TRAIN_QLORA ? TRAIN_STRATEGY_FSDP_QLORA :
							   TRAIN_STRATEGY_ZERO3;
		q->strategy_auto = false;
	}
}

int plan_train_evaluate(const struct train_model *m, const struct plan_train_request *r,
			struct plan_train_answer *out)
{
	struct plan_train_request req = *r, *q = &req;
	const struct plan_train_gpus *g = &q->gpus;
	struct train_settings s;
	bool want_auto;
	int fits;

	memset(out, 0, sizeof(*out));
	out->utilization = out->tokens_per_s = out->hours_per_epoch = out->cost_usd = -1;
	plan_train_placement(q);
	out->nodes = q->nodes;
	s = q->s;
	want_auto = q->strategy_auto;
	if (train_parallel_check(&s) < 0) {
		out->s = s;
		out->error = PLAN_TRAIN_E_STRATEGY;
		return RF_E_INVALID_VALUE;
	}
	out->one_gpu = (!want_auto && s.strategy == TRAIN_STRATEGY_NONE) || g->n <= 1;
	out->budget = g->n == 0                     ? -1 :
		      out->one_gpu && q->nodes == 1 ? g->budget[g->largest] :
						      g->min_budget;
	if (q->max_seq_len || q->max_batch) {
		if (out->budget < 0)
			out->error = PLAN_TRAIN_E_MAX_NO_GPU;
		else if (q->max_seq_len && q->max_batch)
			out->error = PLAN_TRAIN_E_MAX_BOTH;
		if (out->error)
			return RF_E_INVALID_VALUE;
		train_max(m, q, want_auto, out->budget, &s);
	}
	/* No GPU known: the answer is what one GPU needs to hold the whole run; no sharding or
	 * offload is picked for hardware that is not there (the most frugal of them would read
	 * as the need). */
	if (g->n == 0) {
		if (want_auto) {
			s.strategy = TRAIN_STRATEGY_NONE;
			s.offload = TRAIN_OFFLOAD_NONE;
		}
		want_auto = false;
	}
	fits = train_fit(m, &s, want_auto,
			 out->budget >= 0 ? out->budget :
			 g->n == 0        ? INT64_MAX / 4 :
					    0,
			 g->host_budget, &out->s, &out->mem);
	if (fits < 0) {
		out->error = PLAN_TRAIN_E_RANGE;
		return RF_E_INVALID_VALUE;
	}
	out->strategy_auto = want_auto;
	out->one_gpu = out->one_gpu || out->s.strategy == TRAIN_STRATEGY_NONE;
	out->fits = out->budget >= 0 && fits == 1;
	if (out->budget > 0)
		out->utilization = (double)out->mem.total_bytes / (double)out->budget;
	out->speed_known = g->n > 0 && q->dev &&
			   train_speed_estimate(m, &out->s, &out->mem, q->dev, &out->speed) == 0;
	if (out->speed_known)
		out->tokens_per_s = out->speed.tokens_per_s;
	out->epochs = q->epochs >= 0 ? q->epochs : 1.0;
	if (out->tokens_per_s > 0 && q->dataset_tokens >= 0) {
		out->hours_per_epoch = q->dataset_tokens / out->tokens_per_s / 3600.0;
		out->total_hours = out->hours_per_epoch * out->epochs;
		/* usd_per_hour is per GPU: the run pays for every GPU it uses. */
		if (q->usd_per_hour >= 0)
			out->cost_usd =
				out->total_hours * q->usd_per_hour * (double)out->mem.n_gpus;
	}
	return 0;
}
