/*
 * The sweep of devices and counts for "which hardware runs this model" (see plan_hardware.h).
 */
#include "core/plan/plan_hardware.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/plan/plan_rank.h"

#define PHW_GIB 1073741824.0

int64_t plan_hw_ram_bytes(const struct device_profile *d, int count)
{
	double gib = d->memory_gib * count * PLAN_HW_RAM_FACTOR;

	if (d->kind == DEVICE_KIND_SOC)
		gib = d->memory_gib;
	else if (gib < PLAN_HW_MIN_RAM_GIB)
		gib = PLAN_HW_MIN_RAM_GIB;
	return (int64_t)round(gib * PHW_GIB);
}

/* The state of one sweep. */
struct phw {
	const struct plan_model *im;
	const struct plan_ft_model *fm;
	const struct plan_quality *q;
	const struct plan_hw_request *r;
	plan_hw_machine_fn machine;
	void *ctx;
	struct plan_hw_machine *hm;
	struct plan_answer *ans;
	struct plan_hw_answer *out;
	double need; /* inference: the least bytes any machine needed, all on the devices; < 0 */
};

/* Whether the sweep may plan once more (and counts it). */
static bool phw_budget(struct phw *w)
{
	if (w->out->planned >= PLAN_HW_MAX_PLANS) {
		w->out->truncated = true;
		return false;
	}
	w->out->planned++;
	return true;
}

/* Whether a setup keeps every layer and expert on the devices. */
static bool phw_all_on_devices(const struct plan_setup *s)
{
	return s->runtime != PLAN_RT_LLAMA_CPP || (s->p.n_gpu_layers < 0 && s->p.n_cpu_moe == 0);
}

/* Inference on count devices of d. Returns 1 with h filled when they run the model, 0 when
 * not (or the device cannot be described: *skip), or a negative rf_err. */
static int phw_infer(struct phw *w, const struct device_profile *d, int count,
		     struct plan_hw_hit *h, bool *skip)
{
	int64_t ram = plan_hw_ram_bytes(d, count);
	int rc = w->machine(w->ctx, d, count, ram, w->hm);

	if (rc == RF_E_NOMEM)
		return rc;
	if (rc < 0) {
		*skip = true;
		return 0;
	}
	rc = plan_infer(w->im, &w->hm->infer, w->q, &w->r->infer, w->ans);
	if (rc == RF_E_NOMEM)
		return rc;
	if (rc < 0 || !w->ans->found) {
		if (rc == 0 && w->ans->min_total_bytes > 0 &&
		    (w->need < 0 || (double)w->ans->min_total_bytes < w->need))
			w->need = (double)w->ans->min_total_bytes;
		return 0;
	}
	if (w->ans->below_floor || !phw_all_on_devices(&w->ans->best.setup))
		return 0;
	h->count = count;
	h->ram_bytes = ram;
	h->infer = w->ans->best;
	h->tokens_per_s = w->ans->best.res.decode_tps;
	h->utilization = w->ans->best.res.mem.utilization;
	return 1;
}

/* Fine-tuning on count devices of d, with host RAM to offload to or none. Returns as
 * phw_infer. */
static int phw_finetune(struct phw *w, const struct device_profile *d, int count, bool offload,
			struct plan_hw_hit *h, bool *skip)
{
	int64_t ram = plan_hw_ram_bytes(d, count), budget;
	const struct plan_ft_setup *s = &h->ft.best;
	int rc = w->machine(w->ctx, d, count, ram, w->hm);

	if (rc == RF_E_NOMEM)
		return rc;
	if (rc < 0) {
		*skip = true;
		return 0;
	}
	if (!offload)
		w->hm->ft.host_ram_bytes = -1; /* nothing is offloaded */
	rc = plan_finetune(w->fm, &w->hm->ft, &w->r->ft, &h->ft);
	if (rc < 0)
		return rc;
	if (!h->ft.feasible || !h->ft.reached_target)
		return 0;
	h->count = s->n_gpus > 0 ? s->n_gpus : 1;
	h->ram_bytes = ram;
	h->tokens_per_s = s->tokens_per_s;
	budget = h->count > 1 ? w->hm->ft.gpu_budget_bytes[h->count - 1] : w->hm->ft.budget_bytes;
	h->utilization = budget > 0 ? (double)s->memory.total_bytes / (double)budget : -1;
	return 1;
}

/* The fewest devices of d that run the model. Returns 1 with h filled, 0 when no count does,
 * or a negative rf_err. */
static int phw_device(struct phw *w, const struct device_profile *d, struct plan_hw_hit *h)
{
	static const int pow2[] = {1, 2, 4, 8};
	bool soc = d->kind == DEVICE_KIND_SOC, skip = false;
	int rc = 0;

	if (!w->r->finetune) {
		int n = soc ? 1 : (int)(sizeof(pow2) / sizeof(pow2[0]));
		for (int c = 0; c < n && !skip; c++) {
			/* Far less memory than any machine needed for the model: not planned. */
			if (w->need > 0 && pow2[c] * d->memory_gib * PHW_GIB < w->need * 0.9 &&
			    c + 1 < n)
				continue;
			if (!phw_budget(w))
				return 0;
			if ((rc = phw_infer(w, d, pow2[c], h, &skip)) != 0)
				return rc;
		}
		return 0;
	}
	/* Offloading only when no count holds the run without it. More devices run whatever
	 * fewer run (the planner may use fewer than it is given, and the host assumed grows
	 * with the count), so the fewest is found by bisection: one, then the most, then
	 * halves. */
	for (int offload = 0; offload < 2 && !skip; offload++) {
		int lo = 0, hi = soc ? 1 : PLAN_HW_MAX_COUNT, c = 1;
		bool hi_known = false;
		while (lo + 1 < hi || !hi_known) {
			if (!phw_budget(w))
				return 0;
			rc = phw_finetune(w, d, c, offload, h, &skip);
			if (rc < 0 || skip)
				return rc;
			if (rc == 1) {
				hi = c;
				hi_known = true;
			} else if (c == hi) {
				break; /* not even the most */
			} else {
				lo = c;
			}
			if (hi_known && lo + 1 >= hi)
				break;
			c = hi_known ? (lo + hi) / 2 : hi;
		}
		if (hi_known) {
			/* h holds the last plan asked: ask again at the fewest when it was not. */
			if (c != hi) {
				w->out->planned++; /* past the bound: the answer is known */
				if ((rc = phw_finetune(w, d, hi, offload, h, &skip)) != 1)
					return rc < 0 ? rc : 0;
			}
			return 1;
		}
	}
	return 0;
}

/* Orders the hits best first. */
static int phw_rank(struct plan_hw_answer *out)
{
	struct plan_rank_hw *order = calloc((size_t)out->n_hits + 1, sizeof(*order));
	struct plan_hw_hit *sorted = calloc((size_t)out->n_hits + 1, sizeof(*sorted));

	if (!order || !sorted) {
		free(order);
		free(sorted);
		return RF_E_NOMEM;
	}
	for (int i = 0; i < out->n_hits; i++) {
		order[i].id = out->hits[i].device->id;
		order[i].count = out->hits[i].count;
		order[i].usd_per_million = out->hits[i].usd_per_million;
		order[i].tokens_per_s = out->hits[i].tokens_per_s;
		order[i].index = (size_t)i;
	}
	plan_rank_hardware(order, (size_t)out->n_hits);
	for (int i = 0; i < out->n_hits; i++)
		sorted[i] = out->hits[order[i].index];
	free(out->hits);
	free(order);
	out->hits = sorted;
	return 0;
}

int plan_hardware(const struct device_table *t, const struct plan_model *im,
		  const struct plan_ft_model *fm, const struct plan_quality *q,
		  const struct plan_hw_request *r, plan_hw_machine_fn machine, void *ctx,
		  struct plan_hw_answer *out)
{
	struct phw w = {im, fm, q, r, machine, ctx, NULL, NULL, out, -1};
	int n = t ? t->n : 0, rc = 0;

	memset(out, 0, sizeof(*out));
	out->hits = calloc((size_t)n + 1, sizeof(*out->hits));
	w.hm = malloc(sizeof(*w.hm));
	w.ans = r->finetune ? NULL : malloc(sizeof(*w.ans));
	if (!out->hits || !w.hm || (!r->finetune && !w.ans)) {
		rc = RF_E_NOMEM;
		goto done;
	}
	for (int i = 0; i < n && !out->truncated; i++) {
		const struct device_profile *d = &t->devices[i];
		struct plan_hw_hit *h = &out->hits[out->n_hits];
		if (d->kind == DEVICE_KIND_CPU || d->memory_gib <= 0)
			continue;
		out->considered++;
		memset(h, 0, sizeof(*h));
		rc = phw_device(&w, d, h);
		if (rc < 0)
			goto done;
		if (rc == 0)
			continue;
		h->device = d;
		h->usd_per_hour = d->usd_per_hour >= 0 ? d->usd_per_hour : r->usd_per_hour;
		h->usd_per_million =
			plan_rank_usd_per_million(h->usd_per_hour, h->count, h->tokens_per_s);
		out->n_hits++;
	}
	rc = phw_rank(out);
done:
	free(w.hm);
	free(w.ans);
	if (rc < 0)
		plan_hw_answer_free(out);
	return rc;
}

void plan_hw_answer_free(struct plan_hw_answer *a)
{
	if (!a)
		return;
	free(a->hits);
	a->hits = NULL;
	a->n_hits = 0;
}
