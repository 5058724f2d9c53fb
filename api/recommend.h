/*
 * POST /api/recommend (and `rigfit recommend`): two questions answered by asking the estimator
 * (api/estimate.h) many times. "Which models fit here?": catalog models for a task, each at the
 * highest precision that fits, ranked by a documented score. "Which hardware runs this model?"
 * ("for": "hardware"): devices of profiles/devices.json, one or several of a kind, that fit the
 * model, ranked by cost per million tokens where a price is known.
 */
#ifndef RIGFIT_API_RECOMMEND_H
#define RIGFIT_API_RECOMMEND_H

#include "api/api.h"

/* Answers the recommendation request in req's body. 200 {"recommendations": [...]} (or
 * {"hardware": [...]} for "for": "hardware"), best first, with "reason" when the list is empty;
 * 400 for malformed JSON; 422 naming the field for unknown fields, wrong types, an unknown
 * task or model, and a limit out of 1..50; the estimator's hardware errors as it words them.
 * Every entry's estimate fits. Returns 0 or the negative rf_err of the envelope in out. */
int api_recommend(const struct api_env *env, const struct api_request *req, struct api_reply *out);

#endif
