/*
 * Profile ids and profile entries, shared by the profile routes (api/profiles.c) and the
 * process that seeds the shipped profiles into the store (server/).
 *
 * A profile id is what /api/profiles/{id} names: 1 to 128 of A-Za-z0-9._- starting with a
 * letter or digit, so that it is one URL path segment that needs no escaping. A device's or a
 * tier's profile id is its id; a model's is its catalog id with each '/' written as "--"
 * (Hugging Face's own cache spelling: "Qwen/Qwen2.5-7B" is "Qwen--Qwen2.5-7B"), because
 * Hugging Face ids hold a '/' and never a "--".
 */
#ifndef RIGFIT_API_PROFILES_H
#define RIGFIT_API_PROFILES_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"

/* Returns true when id is a valid profile id (see above). */
bool api_profile_id_valid(const char *id);

/* Writes the profile id of an entry whose own id is entry_id ('/' as "--") into out (size
 * outlen). Returns 0, or RF_E_INVALID_VALUE when the result is not a valid profile id. */
int api_profile_id_of(const char *entry_id, char *out, size_t outlen);

/* Checks entry as one entry of the file of its kind ("device": devices.json, "model":
 * models.json), with the same parser that loads that file. Returns 0, or a negative rf_err
 * with the parser's reason in err (size errlen). A tier is RF_E_INVALID_VALUE: tiers are the
 * classifier's own and are shipped only. */
int api_profile_entry_check(const char *kind, const cJSON *entry, char *err, size_t errlen);

#endif
