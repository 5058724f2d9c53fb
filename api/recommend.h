/*
 * POST /api/recommend (and `rigfit recommend`): two questions answered by core/plan's planners,
 * in structs. "Which models fit here?": catalog models for a task, each at the inference
 * planner's best setup (or, for mode lora, qlora or full, the fine-tuning planner's plan, as
 * /api/finetune/detect makes it), ranked by core/plan/plan_rank.h's documented score. "Which
 * hardware runs this model?" ("for": "hardware"): core/plan/plan_hardware.h's sweep of the
 * devices of profiles/devices.json, one or several of a kind, ranked by cost per million
 * tokens where a price is known.
 */
#ifndef RIGFIT_API_RECOMMEND_H
#define RIGFIT_API_RECOMMEND_H

#include "api/api.h"

/* Answers the recommendation request in req's body. 200 {"recommendations": [...]} (or
 * {"hardware": [...]} for "for": "hardware"), best first, with "reason" when the list is empty;
 * 400 for malformed JSON; 422 naming the field for unknown fields, wrong types, an unknown
 * task, a model outside the catalog where the catalog is ranked, and a limit out of 1..50;
 * /api/estimate's errors for the model and the hardware, as it words them.
 * Every entry's estimate fits. Returns 0 or the negative rf_err of the envelope in out. */
int api_recommend(const struct api_env *env, const struct api_request *req, struct api_reply *out);

#endif
