/*
 * POST /api/validate (and `rigfit validate --config FILE`): checks a llama.cpp or vLLM runtime
 * configuration (the format POST /api/config produces, or a flat llama.cpp-style settings
 * object) against a machine and answers with errors and warnings, each with a stable code and a
 * suggestion whose numbers are the planner's (core/plan/plan_check.h decides; the route's
 * parts are listed in api/validate_priv.h).
 */
#ifndef RIGFIT_API_VALIDATE_H
#define RIGFIT_API_VALIDATE_H

#include "api/api.h"

/* Validates the config in req's body. Answers 200 {"is_valid", "errors": [check],
 * "warnings": [check], "estimate": {...} | null} where a check is {"code", "message",
 * "suggestion", "field"}; 400 for malformed JSON, 422 naming the field for wrong types, unknown
 * fields and the estimator's own input errors (an unknown model is a check, unknown_model).
 * Returns 0 or the negative rf_err of the error envelope left in out. */
int api_validate(const struct api_env *env, const struct api_request *req, struct api_reply *out);

#endif
