/*
 * The ranking scores /api/recommend orders its answers by, written once so that every door
 * (the route, the CLI, MCP) and its documentation agree:
 *
 *   models, inference:   score = quality + speed + wait + headroom, where
 *       quality  = 10 x log2(params in billions) - 100 x the setup's KL divergence: each
 *                  doubling of the parameters is worth 10 at every size (with 1 + params
 *                  a 135M model was within 10 of a 1B one, and outranked it on speed),
 *       speed    = 10 x log10(1 + decode tokens/s),
 *       wait     = -10 x log2(PLAN_INTERACTIVE_TPS / decode tokens/s) below interactive
 *                  speed (15 tokens/s, where a skimming reader starts to wait), else 0:
 *                  each halving of the speed below it costs what a doubling of the
 *                  parameters gains, so that a 14B the user waits on at 5 tokens/s does
 *                  not rank above an 8B at 10,
 *       headroom = 10 x (1 - utilization), 0 at or above 1;
 *     instruction-tuned models first (for chat), then by score;
 *   models, fine-tuning: the same with quality = 10 x log2(params in billions) and the
 *     training tokens/s as speed; runs on the GPUs alone (no offload to RAM) of current dense
 *     families first;
 *   hardware: usd_per_million_tokens = usd_per_hour x count / (tokens/s x 3600) x 1e6; priced
 *     candidates first, cheapest first, then fewer devices, faster, by id.
 *
 * Each term is rounded to 0.1 and the score is the sum of the rounded terms, rounded again, so
 * that the terms an answer shows add up to its score. Pure: no I/O.
 */
#ifndef RIGFIT_CORE_PLAN_RANK_H
#define RIGFIT_CORE_PLAN_RANK_H

#include <stdbool.h>
#include <stddef.h>

struct plan_rank_score {
	double quality, speed, wait, headroom, score; /* wait <= 0; 0 for fine-tuning */
};

/* Writes the inference score of a model of params_b billion parameters (<= 0: taken as 1, a
 * quality of 0)
 * at a setup of divergence kld (< 0 unknown: 0), decode_tps tokens/s (<= 0: 0) and
 * utilization of its memory budget (< 0 or >= 1: no headroom). */
void plan_rank_inference(double params_b, double kld, double decode_tps, double utilization,
			 struct plan_rank_score *out /* OUT */);

/* Writes the fine-tuning score: as plan_rank_inference without the divergence and the wait,
 * with the training tokens/s as the speed. */
void plan_rank_finetune(double params_b, double tokens_per_s, double utilization,
			struct plan_rank_score *out /* OUT */);

/* Returns usd_per_hour x count / (tokens_per_s x 3600) x 1e6, or -1 when the price is unknown
 * (< 0) or the speed is (<= 0). */
double plan_rank_usd_per_million(double usd_per_hour, int count, double tokens_per_s);

/* One model to order. */
struct plan_rank_model {
	const char *id; /* the tie-breaker: by strcmp */
	bool first;     /* of the group shown first (instruction-tuned, for chat) */
	double score;
	size_t index; /* the caller's */
};

/* Orders m[0..n) best first: the first group, then by score (higher first), then by id. */
void plan_rank_models(struct plan_rank_model *m, size_t n);

/* One hardware candidate to order. */
struct plan_rank_hw {
	const char *id;
	int count;
	double usd_per_million; /* < 0 unknown */
	double tokens_per_s;    /* < 0 unknown */
	size_t index;           /* the caller's */
};

/* Orders c[0..n) best first: those with a cost first, the cheapest first; then fewer devices,
 * faster, then by id. */
void plan_rank_hardware(struct plan_rank_hw *c, size_t n);

#endif
