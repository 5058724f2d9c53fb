/*
 * The shipped profiles (devices.json, models.json, tiers.json, quality.json) loaded for the
 * route suites, which ask their questions against the same catalogs the daemon loads.
 */
#ifndef RIGFIT_TESTS_API_PROFILES_FIXTURE_H
#define RIGFIT_TESTS_API_PROFILES_FIXTURE_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "api/api.h"
#include "api/catalog/tiers.h"
#include "core/plan/plan_quality.h"
#include "core/hw/device.h"
#include "core/fit/model.h"

/* Loads profiles/devices.json and models.json (and tiers.json when tiers is not NULL) from
 * t_src_dir(); fails the test when one is missing or invalid. */
void t_profiles_load(struct device_table *devices, struct model_catalog **models,
		     struct api_tier_table **tiers);

/* Frees what t_profiles_load loaded (tiers may be NULL). */
void t_profiles_free(struct device_table *devices, struct model_catalog **models,
		     struct api_tier_table **tiers);

/* Returns profiles/<rel> parsed; fails the test when it cannot be read. Free with cJSON_Delete. */
cJSON *t_profiles_json(const char *rel);

/* Returns profiles/quality.json read into its table, loaded at the first call and kept for the
 * process (the env's quality table). */
const struct plan_quality *t_quality(void);

/* Returns profiles/tiers.json read into its table, loaded at the first call and kept for the
 * process (the env's tiers). */
const struct api_tier_table *t_tiers(void);

/* POSTs body to handler (the route at path) with env; returns the status and the answer parsed
 * in *out (fails the test when it is not JSON). Free *out with cJSON_Delete. */
int t_route_post(api_handler_fn handler, const struct api_env *env, const char *path,
		 const char *body, cJSON **out /* OUT */);

/* The handler of a planning route by its path: /api/estimate, /api/config, /api/recommend,
 * /api/validate, /api/finetune/detect; NULL for any other. */
api_handler_fn t_route_handler(const char *route);

/* Returns the number o.a (b NULL) or o.a.b of an answer; fails the test when it is not one. */
double t_num(const cJSON *o, const char *a, const char *b);

/* The check of code in a POST /api/validate answer's errors (error true) or warnings, or
 * NULL. */
const cJSON *t_check_find(const cJSON *answer, const char *code, bool error);

#endif
