/*
 * The quality model the planner ranks setups by: the mean KL divergence of a setup's next-token
 * distribution from the unquantized model's, as llama.cpp's llama-perplexity measures it
 * (--kl-divergence). It is the sum of the loss of the weight format (per llama.cpp file type)
 * and that of the KV cache type, both from published measurements that profiles/quality.json
 * ships with their sources. Lower is better; 0 is the released model itself (a format the
 * model ships in natively, such as gpt-oss's MXFP4 experts, loses nothing).
 *
 * Two setups whose divergences differ by less than `tie_kld` are of equal quality: the table's
 * own F16 row shows that much divergence from the 16-bit rounding of the reference logits
 * alone, so a smaller difference is not a measured one.
 *
 * Plain data filled by the API layer from the profile; pure lookups.
 */
#ifndef RIGFIT_CORE_PLAN_QUALITY_H
#define RIGFIT_CORE_PLAN_QUALITY_H

#include <stdbool.h>

#include "core/plan/plan_eval.h"

#define PLAN_QUALITY_MAX_ROWS 48
#define PLAN_QUALITY_MAX_KV 12

struct plan_quality_row {
	int id;     /* weights: enum rf_ftype; KV cache: enum rf_gtype */
	double kld; /* mean KL divergence; < 0: not measured */
};

struct plan_quality {
	int n_weights;
	struct plan_quality_row weights[PLAN_QUALITY_MAX_ROWS];
	int n_kv;
	struct plan_quality_row kv[PLAN_QUALITY_MAX_KV]; /* added to the weights' divergence */
	int vllm_as[PLAN_VLLM_FORMATS]; /* the llama.cpp file type each vLLM format is rated as */
	double tie_kld;                 /* differences below this are ties */
	int floor_ftype;                /* "Q4_K_M-class": the floor of long_context and speed */
};

/* Returns the divergence of weights in file type ft, or -1 when the table has no row for it. */
double plan_quality_weights(const struct plan_quality *q, int ft);

/* Returns the divergence a KV cache of ggml type t adds, or -1 when not measured. */
double plan_quality_kv(const struct plan_quality *q, int t);

/* Returns the divergence of a setup: weights (native formats: 0) plus its K and V cache types
 * (the larger of the two measured symmetric rows). -1 when a part is not measured. */
double plan_quality_setup(const struct plan_quality *q, const struct plan_setup *s, bool native);

/* Returns the divergence the floor stands for: floor_ftype's weights with an f16 cache, plus
 * tie_kld (anything within a tie of the floor meets it). */
double plan_quality_floor(const struct plan_quality *q);

#endif
