/*
 * profiles/tiers.json (ModelForge's compute tiers, seed 000) read into a typed table once,
 * when the profiles are loaded: each tier's id, its settings template (what
 * POST /api/finetune/detect answers as tier_settings) and its own models per task, in order.
 * The classification rules and the members no route reads (ranges, provider, strategies) stay
 * in the file; the store's shipped rows are seeded from the file itself.
 */
#ifndef RIGFIT_API_CATALOG_TIERS_H
#define RIGFIT_API_CATALOG_TIERS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/fit/model.h"

#define API_TIERS_MAX 8
#define API_TIER_ID_LEN 32
#define API_TIER_TASKS_MAX 8
#define API_TIER_TASK_LEN 48
#define API_TIER_MODELS_MAX 16

/* A tier's settings template; every member but bf16 is required. */
struct api_tier_settings {
	bool use_4bit;
	bool has_bf16; /* bf16 is said (high_end says true) */
	bool bf16;
	int per_device_train_batch_size;
	int gradient_accumulation_steps;
	int max_seq_length;
};

/* The models a tier lists for one task ("text-generation"), in the file's order. */
struct api_tier_models {
	char task[API_TIER_TASK_LEN];
	int n;
	char ids[API_TIER_MODELS_MAX][MODEL_ID_LEN];
};

struct api_tier {
	char id[API_TIER_ID_LEN]; /* "low_end", "mid_range", "high_end" */
	struct api_tier_settings settings;
	int n_tasks;
	struct api_tier_models tasks[API_TIER_TASKS_MAX];
};

struct api_tier_table {
	int n;
	struct api_tier tiers[API_TIERS_MAX];
};

/* Reads doc (profiles/tiers.json: {"tiers": [{"id", "settings", "models": {TASK: [ID]}}]})
 * into *out. Returns 0, or RF_E_INVALID_VALUE (RF_E_TOO_LARGE past the limits above) with a
 * line that starts with "tiers.json: " and names the tier and the member in why. */
int api_tiers_from_json(const cJSON *doc, struct api_tier_table *out /* OUT */, char *why,
			size_t why_len);

/* Returns the tier called id, or NULL. */
const struct api_tier *api_tier_find(const struct api_tier_table *t, const char *id);

/* Returns the tier's models for task, or NULL when it lists none. */
const struct api_tier_models *api_tier_models(const struct api_tier *t, const char *task);

/* Returns the settings template as tiers.json writes it (use_4bit, bf16 when said, then the
 * three numbers), or NULL when out of memory. Free with cJSON_Delete. */
cJSON *api_tier_settings_json(const struct api_tier_settings *s);

#endif
