/*
 * The rope scaling a planned setup writes, one rule for every route that shows a setup
 * (/api/config's settings, command and estimate; /api/recommend's entries): the decision is
 * core's (core/plan/plan_rope.h) on each sequence's context; this maps it to the settings
 * rope_scaling, rope_scale and yarn_orig_ctx, as /api/estimate and /api/validate take them.
 */
#ifndef RIGFIT_API_ROPE_SETTINGS_H
#define RIGFIT_API_ROPE_SETTINGS_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "api/estimate_request.h"
#include "core/fit/model.h"
#include "core/plan/plan_infer.h"
#include "core/plan/plan_rope.h"

/* Decides for setup s of a model of architecture a whose card documents doc (NULL: nothing):
 * each sequence's share of llama.cpp's n_ctx, or vLLM's longest request (--max-model-len).
 * Writes *out; returns whether the setup needs scaling (out->need PLAN_ROPE_SCALED). */
bool api_rope_for(const struct model_arch *a, const struct model_rope *doc,
		  const struct plan_setup *s, struct plan_rope *out /* OUT */);

/* Adds rope_scaling "yarn", rope_scale and yarn_orig_ctx to the settings object set when r
 * scales; nothing otherwise. */
void api_rope_settings(const struct plan_rope *r, cJSON *set);

/* Sets the same three in rq when r scales; nothing otherwise. */
void api_rope_request(const struct plan_rope *r, struct api_estimate_request *rq);

#endif
