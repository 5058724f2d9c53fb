/*
 * POST /api/finetune/detect (and `rigfit detect --task T`): ModelForge's "Detect Hardware"
 * step. Classifies a machine into seed 000's compute tier (the ModelForge field), plans every
 * catalog model for the task on the machine's real GPU (core/plan/plan_finetune.h) and offers
 * the best-ranked ones with their planned settings; a model that only fits below the task's
 * floor is dropped, never shrunk.
 */
#ifndef RIGFIT_API_FINETUNE_DETECT_H
#define RIGFIT_API_FINETUNE_DETECT_H

#include "api/api.h"

/* Answers the request in req's body ({"task", "compute_specs"?, "max_seq_length"?,
 * "effective_batch_size"?, "hardware"? | "hardware_profile"?}) with 200 and both the seed's
 * shape (hardware_specs, compute_profile, recommended_model, possible_models) and ModelForge's
 * flat one (status_code, profile, task, gpu_name, ... model_recommendation, possible_options),
 * plus settings (= recommended_settings), tier_settings, model_settings, plan, estimate and
 * assumptions. Every model offered fits by the estimator; when none does, recommended_model
 * and settings are null, possible_models [] and explanation says why (still 200).
 * 400 for malformed JSON, 422 naming the field (unknown task: "task"), 503 when the tiers,
 * the model catalog or the first scan are missing. Returns 0 or the negative rf_err of the
 * error envelope left in out. */
int api_finetune_detect(const struct api_env *env, const struct api_request *req,
			struct api_reply *out);

#endif
