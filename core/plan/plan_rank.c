/*
 * The ranking scores and orders of /api/recommend (see plan_rank.h).
 */
#include "core/plan/plan_rank.h"

#include "core/plan/plan_infer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double rank_round1(double v)
{
	return round(v * 10) / 10;
}

/* The terms shared by both scores; quality without what it adds for the setup, and the wait
 * (<= 0) the caller counts. */
static void rank_terms(double params_b, double quality_less, double tps, double wait,
		       double utilization, struct plan_rank_score *out)
{
	double params = params_b > 0 ? params_b : 1;

	out->quality = rank_round1(10 * log2(params) - quality_less);
	out->speed = rank_round1(tps > 0 ? 10 * log10(1 + tps) : 0);
	out->wait = rank_round1(wait);
	out->headroom =
		rank_round1(utilization >= 0 && utilization < 1 ? 10 * (1 - utilization) : 0);
	out->score = rank_round1(out->quality + out->speed + out->wait + out->headroom);
}

void plan_rank_inference(double params_b, double kld, double decode_tps, double utilization,
			 struct plan_rank_score *out)
{
	/* An unknown speed counts for nothing, as in the speed term. */
	double wait = decode_tps > 0 && decode_tps < PLAN_INTERACTIVE_TPS ?
			      -10 * log2(PLAN_INTERACTIVE_TPS / decode_tps) :
			      0;

	rank_terms(params_b, 100 * (kld > 0 ? kld : 0), decode_tps, wait, utilization, out);
}

void plan_rank_finetune(double params_b, double tokens_per_s, double utilization,
			struct plan_rank_score *out)
{
	rank_terms(params_b, 0, tokens_per_s, 0, utilization, out);
}

double plan_rank_usd_per_million(double usd_per_hour, int count, double tokens_per_s)
{
	if (usd_per_hour < 0 || !(tokens_per_s > 0))
		return -1;
	return usd_per_hour * count / (tokens_per_s * 3600) * 1e6;
}

static int rank_model_cmp(const void *pa, const void *pb)
{
	const struct plan_rank_model *a = pa, *b = pb;

	if (a->first != b->first)
		return a->first ? -1 : 1;
	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return strcmp(a->id, b->id);
}

void plan_rank_models(struct plan_rank_model *m, size_t n)
{
	if (n > 1)
		qsort(m, n, sizeof(*m), rank_model_cmp);
}

static int rank_hw_cmp(const void *pa, const void *pb)
{
	const struct plan_rank_hw *a = pa, *b = pb;
	bool ca = a->usd_per_million >= 0, cb = b->usd_per_million >= 0;

	if (ca != cb)
		return ca ? -1 : 1;
	if (ca && a->usd_per_million != b->usd_per_million)
		return a->usd_per_million < b->usd_per_million ? -1 : 1;
	if (a->count != b->count)
		return a->count < b->count ? -1 : 1;
	if (a->tokens_per_s != b->tokens_per_s)
		return a->tokens_per_s > b->tokens_per_s ? -1 : 1;
	return strcmp(a->id, b->id);
}

void plan_rank_hardware(struct plan_rank_hw *c, size_t n)
{
	if (n > 1)
		qsort(c, n, sizeof(*c), rank_hw_cmp);
}
