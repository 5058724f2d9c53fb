/*
 * profiles/quality.json (the planner's quality table: KL divergence per weight format and per
 * KV cache type, with its sources) read into core's struct plan_quality.
 */
#ifndef RIGFIT_API_PLAN_QUALITY_JSON_H
#define RIGFIT_API_PLAN_QUALITY_JSON_H

#include <cjson/cJSON.h>

#include "api/api.h"
#include "core/plan/plan_quality.h"

/* Reads doc (profiles/quality.json) into *out. Returns 0, or RF_E_INVALID_VALUE with a line
 * naming the offending member in why. */
int api_plan_quality_from_json(const cJSON *doc, struct plan_quality *out /* OUT */, char *why,
			       size_t why_len);

/* The env's table: 0 and *out, or a negative rf_err with the envelope in err (503 when no
 * quality.json is loaded, 500 when it does not read). */
int api_plan_quality(const struct api_env *env, struct plan_quality *out /* OUT */,
		     struct api_reply *err);

#endif
