/*
 * profiles/quality.json (the planner's quality table: KL divergence per weight format and per
 * KV cache type, with its sources) read into core's struct plan_quality, once when the profiles
 * are loaded; requests read the struct.
 */
#ifndef RIGFIT_API_CATALOG_QUALITY_H
#define RIGFIT_API_CATALOG_QUALITY_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/plan/plan_quality.h"

/* Reads doc (profiles/quality.json) into *out. Returns 0, or RF_E_INVALID_VALUE with a line
 * that starts with "quality.json: " and names the offending member in why. */
int api_quality_from_json(const cJSON *doc, struct plan_quality *out /* OUT */, char *why,
			  size_t why_len);

#endif
