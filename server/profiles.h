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

/* Loads every *.json file of dir (sorted by name). Returns 0 and a new set in *out (free with
 * rf_profiles_free), or a negative rf_err with "FILE:LINE: reason" in err; *out is then
 * untouched. A missing directory is an error too (RF_E_NOT_FOUND). */
int rf_profiles_load(const char *dir, struct rf_profiles **out /* OUT */, char *err, size_t errlen);

/* Returns the parsed document of the file called name, or NULL. */
const cJSON *rf_profiles_get(const struct rf_profiles *p, const char *name);

/* Frees p. NULL is a no-op. */
void rf_profiles_free(struct rf_profiles *p);

/* The device table of a profile set, shared by the loop and the scan worker. The loop thread
 * alone takes and drops references, so no lock is needed. */
struct rf_devices {
	int refs;
	struct device_table table;
};

/* Builds the device table of p's devices.json (an empty table when p has none). Returns 0 and
 * a new object with one reference in *out, or a negative rf_err with "devices.json: ..." in
 * err. */
int rf_devices_from_profiles(const struct rf_profiles *p, struct rf_devices **out /* OUT */,
			     char *err, size_t errlen);

/* Takes a reference; returns d. NULL is a no-op. */
struct rf_devices *rf_devices_ref(struct rf_devices *d);

/* Drops a reference, freeing d with the last one. NULL is a no-op. */
void rf_devices_unref(struct rf_devices *d);

#endif
