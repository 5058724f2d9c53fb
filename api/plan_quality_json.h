/*
 * The planner's quality table as the planning routes (recommend, config, validate) take it
 * from their env: parsed from profiles/quality.json once at load (api/catalog/quality.h).
 */
#ifndef RIGFIT_API_PLAN_QUALITY_JSON_H
#define RIGFIT_API_PLAN_QUALITY_JSON_H

#include "api/api.h"
#include "core/plan/plan_quality.h"

/* The env's table: 0 and a copy in *out, or RF_E_UNAVAILABLE with the envelope in err (503)
 * when no quality.json is loaded. */
int api_plan_quality(const struct api_env *env, struct plan_quality *out /* OUT */,
		     struct api_reply *err);

#endif
