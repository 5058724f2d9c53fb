/*
 * POST /api/finetune/detect (and `rigfit detect --task T`): ModelForge's "Detect Hardware"
 * step. Classifies a machine into seed 000's compute tier (the ModelForge field), plans every
 * catalog model for the task on the machine's real GPU (core/plan/plan_finetune.h) and offers
 * the best-ranked ones with their planned settings; a model that only fits below the task's
 * floor is dropped, never shrunk.
 */
#ifndef RIGFIT_API_FINETUNE_DETECT_H
#define RIGFIT_API_FINETUNE_DETECT_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"

/* A detect question in structs: the body's settings, less the machine ("hardware"), which
 * the resolver reads. The enums index the route's lists (task: text-generation,
 * summarization, extractive-question-answering, question-answering; compute_specs: low_end,
 * mid_range, high_end; method: full, lora, qlora; optimizer: train_optimizer_choices). */
struct api_ft_question {
	int task;
	bool has_task;
	int compute_specs;
	bool has_compute_specs;
	char hardware_profile[64];
	bool has_hardware_profile;
	int64_t max_seq_length;
	bool has_max_seq_length;
	int64_t effective_batch;
	bool has_effective_batch;
	int method;
	bool has_method;
	bool packing, has_packing;
	int optimizer;
	bool has_optimizer;
};

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

/* Parses req's body into *q (checked as the route checks it). Returns 0 with the body in
 * *body (free with cJSON_Delete; its "hardware" is the machine described), or a negative
 * rf_err with the envelope in out (*body NULL). */
int api_ft_question_parse(const struct api_request *req, struct api_ft_question *q /* OUT */,
			  cJSON **body /* OUT */, struct api_reply *out);

/* The route's answer to q, as a tree: the machine (hardware, a description, or NULL; else
 * q's hardware_profile; else this host's snapshot) resolved once by api_machine_input, every
 * catalog model of the task planned on it (core/plan/plan_finetune.h) and the answer rendered.
 * What POST /api/finetune/detect and ModelForge's session routes both answer from. Returns 0
 * and *result (free with cJSON_Delete), or a negative rf_err with the envelope in out. */
int api_ft_detect_ask(const struct api_env *env, const struct api_ft_question *q,
		      const cJSON *hardware, cJSON **result /* OUT */, struct api_reply *out);

#endif
