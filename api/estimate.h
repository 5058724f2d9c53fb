/*
 * The estimator as other routes use it: /api/config, /api/validate, /api/recommend and
 * /api/finetune/detect ask it questions with the request object of POST /api/estimate and read
 * its answer, so every route agrees with what /api/estimate says.
 */
#ifndef RIGFIT_API_ESTIMATE_H
#define RIGFIT_API_ESTIMATE_H

#include <cjson/cJSON.h>

#include "api/api.h"

/* Estimates for body, an object with the fields of POST /api/estimate (model, mode, quant,
 * n_ctx..., hardware or hardware_profile). Returns 0 and the answer (the route's JSON as a
 * tree; free with cJSON_Delete) in *result, or a negative rf_err with the error envelope in
 * out (the field named as in /api/estimate). */
int api_estimate_object(const struct api_env *env, const cJSON *body, cJSON **result /* OUT */,
			struct api_reply *out);

#endif
