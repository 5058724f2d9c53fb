/*
 * The data files under --profiles (devices.json, tiers.json, models.json...): loaded at start
 * and on SIGHUP. A load is all or nothing: a broken file is reported with its name and line
 * and the caller keeps the last good set.
 */
#ifndef RIGFIT_SERVER_PROFILES_H
#define RIGFIT_SERVER_PROFILES_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "core/device.h"
#include "core/model.h"

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

/* The catalogs built from a profile set (devices.json, models.json), shared by the loop,
 * requests and the scan worker. The loop thread alone takes and drops references, so no lock
 * is needed. */
struct rf_catalogs {
	int refs;
	struct device_table table;    /* devices.json (empty without one) */
	struct model_catalog *models; /* models.json (an empty catalog without one) */
};

/* Builds the catalogs of p (empty ones for files p lacks; p may be NULL). Returns 0 and a new
 * object with one reference in *out, or a negative rf_err with "devices.json: ..." or
 * "models.json: ..." in err. */
int rf_catalogs_from_profiles(const struct rf_profiles *p, struct rf_catalogs **out /* OUT */,
			      char *err, size_t errlen);

/* Takes a reference; returns c. NULL is a no-op. */
struct rf_catalogs *rf_catalogs_ref(struct rf_catalogs *c);

/* Drops a reference, freeing c with the last one. NULL is a no-op. */
void rf_catalogs_unref(struct rf_catalogs *c);

#endif
