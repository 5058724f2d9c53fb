/*
 * POST /api/finetune/detect (and `rigfit detect --task T`): ModelForge's "Detect Hardware"
 * step. Classifies a machine into seed 000's compute tier, takes that tier's fine-tuning
 * template from profiles/tiers.json, and offers the catalog models for a task that the
 * estimator says fit with those settings (shrinking the settings before dropping a model).
 */
#ifndef RIGFIT_API_FINETUNE_DETECT_H
#define RIGFIT_API_FINETUNE_DETECT_H

#include "api/api.h"

/* Answers the request in req's body ({"task", "compute_specs"?, "hardware"? |
 * "hardware_profile"?}) with 200 and both the seed's shape (hardware_specs, compute_profile,
 * recommended_model, possible_models) and ModelForge's flat one (status_code, profile, task,
 * gpu_name, ... model_recommendation, possible_options), plus settings, model_settings,
 * estimate and assumptions. Every model offered fits by api_estimate_object; when none does,
 * recommended_model is null, possible_models [] and explanation says why (still 200).
 * 400 for malformed JSON, 422 naming the field (unknown task: "task"), 503 when the tiers,
 * the model catalog or the first scan are missing. Returns 0 or the negative rf_err of the
 * error envelope left in out. */
int api_finetune_detect(const struct api_env *env, const struct api_request *req,
			struct api_reply *out);

#endif
