/*
 * profiles/devices.json <-> struct device_table. The daemon parses profile files with cJSON
 * (server/profiles/profiles.c); this maps the parsed tree to core's device table, checking every
 * field and naming the file, the entry and the field in the error ("devices.json: entry 12
 * (rtx-4090): memory_bandwidth_gbs must be a positive number"), and renders one entry back to JSON
 * for the API. A file with an unknown field, a duplicate id or two entries that one name could
 * resolve to is refused as a whole.
 */
#ifndef RIGFIT_API_DEVICE_JSON_H
#define RIGFIT_API_DEVICE_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"
#include "core/hw/device.h"

/* Fills *out from doc, the parsed devices.json ({"version", "source", "devices": [...]}, at most
 * DEVICE_TABLE_MAX entries). Returns 0 and a new table in *out (free with device_table_clear;
 * *out is overwritten, not freed), or a negative rf_err (RF_E_INVALID_VALUE, RF_E_MISSING_FIELD,
 * RF_E_UNKNOWN_FIELD, RF_E_TOO_LARGE, RF_E_CONFLICT, RF_E_NOMEM) with a message in err that
 * starts with "devices.json: "; *out is then untouched. Entries are numbered from 1. */
int api_device_table_from_json(const cJSON *doc, struct device_table *out /* OUT */, char *err,
			       size_t errlen);

/* Returns a new JSON object for p with the field names of devices.json and null for unknown
 * numbers (caller frees with cJSON_Delete), or NULL when out of memory. */
cJSON *api_device_to_cjson(const struct device_profile *p);

/* Answers the 422 for a device name no profile resolves: field names where it was given;
 * for_memory: the name was given for its memory (a GPU without memory_total_bytes). The
 * message names the closest profile name when one is a likely typo. Returns the error. */
int api_device_unknown(struct api_reply *out, const struct device_table *t, const char *field,
		       const char *name, bool for_memory);

#endif
