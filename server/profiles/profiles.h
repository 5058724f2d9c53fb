/*
 * The data files under --profiles (devices.json, tiers.json, models.json...): loaded at start
 * and on SIGHUP. A load is all or nothing: a broken file is reported with its name and line
 * and the caller keeps the last good set.
 */
#ifndef RIGFIT_SERVER_PROFILES_PROFILES_H
#define RIGFIT_SERVER_PROFILES_PROFILES_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "api/api.h"
#include "api/catalog/tiers.h"
#include "core/plan/plan_quality.h"
#include "core/hw/device.h"
#include "core/fit/model.h"
#include "server/store/store_profiles.h"

#define RF_PROFILES_MAX_FILES 64
#define RF_PROFILES_MAX_BYTES (16u << 20)

struct rf_profile_file {
	char name[256]; /* "tiers.json" */
	cJSON *doc;
};

struct rf_profiles {
	int n_files;
	struct rf_profile_file files[RF_PROFILES_MAX_FILES];
};

/* Parses one profile file's bytes buf[0..len) (buf[len] must be NUL, as the file reader
 * leaves it). Returns 0 and the document in *doc (free with cJSON_Delete), or RF_E_PARSE with
 * "LINE: reason" in err when it is not JSON or its top level is neither an object nor an
 * array. */
int rf_profile_parse(const char *buf, size_t len, cJSON **doc /* OUT */, char *err, size_t errlen);

/* Loads every *.json file of dir (sorted by name). Returns 0 and a new set in *out (free with
 * rf_profiles_free), or a negative rf_err with "FILE:LINE: reason" in err; *out is then
 * untouched. A missing directory is an error too (RF_E_NOT_FOUND). */
int rf_profiles_load(const char *dir, struct rf_profiles **out /* OUT */, char *err, size_t errlen);

/* Returns the parsed document of the file called name, or NULL. */
const cJSON *rf_profiles_get(const struct rf_profiles *p, const char *name);

/* Frees p. NULL is a no-op. */
void rf_profiles_free(struct rf_profiles *p);

/* The catalogs built from a profile set (devices.json, models.json, tiers.json, quality.json),
 * shared by the loop, requests and the scan worker: every file a request reads is parsed into
 * its struct here, once per load, and no request reads a profile's JSON. The loop thread alone
 * takes and drops references, so no lock is needed. */
struct rf_catalogs {
	int refs;
	struct device_table table;    /* devices.json (empty without one) */
	struct model_catalog *models; /* models.json (an empty catalog without one) */
	struct api_tier_table *tiers; /* tiers.json; NULL without one */
	struct plan_quality *quality; /* quality.json; NULL without one */
};

/* Builds the catalogs of p (empty ones for files p lacks; p may be NULL). Returns 0 and a new
 * object with one reference in *out, or a negative rf_err with "devices.json: ...",
 * "models.json: ...", "tiers.json: ..." or "quality.json: ..." in err. */
int rf_catalogs_from_profiles(const struct rf_profiles *p, struct rf_catalogs **out /* OUT */,
			      char *err, size_t errlen);

/* Builds the catalogs of a parsed devices.json and models.json (either may be NULL: an empty
 * catalog), without tiers or quality. Returns 0 and a new object with one reference in *out, or
 * a negative rf_err with "devices.json: ..." or "models.json: ..." in err. */
int rf_catalogs_from_docs(const cJSON *devices, const cJSON *models,
			  struct rf_catalogs **out /* OUT */, char *err, size_t errlen);

/* profiles_merge.c: builds the catalogs of the files in p (p may be NULL) and the custom
 * profiles custom[0..n) (device and model rows; others are ignored), with pending (a custom row
 * about to be written; NULL: none) replacing the row of its id. The files must be sound: their
 * error is returned with "devices.json: ..." in err. A custom row that does not parse or
 * clashes with the files or an earlier row is skipped and counted in *n_skipped (may be NULL;
 * logged, with its id and reason, unless pending is given); pending itself must join, or its
 * error (RF_E_CONFLICT: a name another profile has) is returned with the reason in err.
 * Returns 0 and a new object with one reference in *out, or a negative rf_err. */
int rf_catalogs_build(const struct rf_profiles *p, const struct api_profile *custom, int n,
		      const struct api_profile *pending, struct rf_catalogs **out /* OUT */,
		      int *n_skipped /* OUT */, char *err, size_t errlen);

/* profiles_merge.c: the shipped profiles of p (devices.json's devices, models.json's models,
 * tiers.json's tiers) as rows to seed into the store, with their profile ids (a model's
 * '/' written as "--"). An entry without a usable id is left out with a warning. Returns 0
 * and a malloc'd array in *rows (free with rf_profile_seeds_free) with its length in *n, or
 * RF_E_NOMEM. */
int rf_profile_seeds(const struct rf_profiles *p, struct rf_profile_seed **rows /* OUT */,
		     int *n /* OUT */);

/* Frees rows[0..n) and the array. NULL is a no-op. */
void rf_profile_seeds_free(struct rf_profile_seed *rows, int n);

/* Takes a reference; returns c. NULL is a no-op. */
struct rf_catalogs *rf_catalogs_ref(struct rf_catalogs *c);

/* Drops a reference, freeing c with the last one. NULL is a no-op. */
void rf_catalogs_unref(struct rf_catalogs *c);

#endif
