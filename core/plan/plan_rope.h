/*
 * Long context: whether a context fits the positions a model was trained for, needs the rope
 * scaling its model card documents (struct model_rope, YaRN for Qwen2.5 and Qwen3), or lies
 * beyond both. llama.cpp (--rope-scaling yarn --rope-scale F --yarn-orig-ctx W) and vLLM
 * (--hf-overrides '{"rope_parameters":{"rope_type":"yarn",...}}') apply a static factor to
 * every request, and
 * Qwen's cards warn that it can hurt short texts and advise a factor fitted to the context
 * (Qwen3's: 2.0 for 65,536 tokens): so scaling is set only for a context beyond the trained
 * window, with the smallest power of two up to the documented factor that reaches it.
 *
 * Pure: no I/O.
 */
#ifndef RIGFIT_CORE_PLAN_ROPE_H
#define RIGFIT_CORE_PLAN_ROPE_H

#include <stdint.h>

#include "core/fit/model.h"

enum plan_rope_need {
	PLAN_ROPE_NATIVE = 0, /* within the trained positions (or the model states none) */
	PLAN_ROPE_SCALED = 1, /* within the documented scaling: use holds the setting */
	PLAN_ROPE_BEYOND = 2, /* beyond the longest window the model reaches */
};

struct plan_rope {
	enum plan_rope_need need;
	int64_t native;        /* max_position_embeddings (0: not stated) */
	int64_t max;           /* the longest context: scaled where documented, else native */
	struct model_rope use; /* PLAN_ROPE_SCALED: type, factor and original window to set */
};

/* Returns the longest context per sequence model a reaches: doc's original window x factor
 * when doc documents scaling (NULL or MODEL_ROPE_NONE: none), else max_position_embeddings;
 * 0 when the model states no positions (no limit). */
int64_t plan_rope_max(const struct model_arch *a, const struct model_rope *doc);

/* Decides for a context of seq positions per sequence of model a (doc as above). Writes *out
 * (always). */
void plan_rope_decide(const struct model_arch *a, const struct model_rope *doc, int64_t seq,
		      struct plan_rope *out /* OUT */);

/* Returns the positions a runtime reaches with scaling r set (r's original window x factor), or
 * native when r sets none: vLLM derives its longest length so (a yarn rope_scaling's
 * original_max_position_embeddings x factor), and llama.cpp's YaRN stretches --yarn-orig-ctx
 * by --rope-scale. */
int64_t plan_rope_reach(const struct model_rope *r, int64_t native);

#endif
