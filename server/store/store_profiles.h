/*
 * The profiles table: the shipped profiles (profiles/devices.json, models.json, tiers.json)
 * seeded at start and on every good reload, and the custom ones clients PUT. Shipped rows are
 * the files' business: only the seed writes them. Custom rows are the clients': the seed
 * never touches them, and a custom row can never take a shipped id.
 */
#ifndef RIGFIT_SERVER_STORE_STORE_PROFILES_H
#define RIGFIT_SERVER_STORE_STORE_PROFILES_H

#include <stdbool.h>

#include "api/api.h"
#include "server/store/store.h"

/* The most custom profiles a store holds; a PUT of a new one beyond it is RF_E_TOO_LARGE. */
#define RF_STORE_MAX_CUSTOM_PROFILES 256
/* The largest profile body, in bytes. */
#define RF_STORE_MAX_PROFILE_BODY (64 * 1024)

/* One shipped profile to seed. */
struct rf_profile_seed {
	char id[API_PROFILE_ID_LEN + 1]; /* a valid profile id (api_profile_id_valid) */
	const char *kind;                /* device | model | tier */
	char *body;                      /* a JSON object; owned by whoever built the row */
};

/* Makes the shipped rows equal rows[0..n), in one transaction: inserts the new ones, updates
 * those whose kind or body changed (updated_at moves only then), deletes the shipped rows not
 * in rows. Custom rows are never touched: a shipped id that a custom row holds is skipped and
 * counted in *shadowed (may be NULL). Returns 0 or a negative rf_err (RF_E_INVALID_VALUE for
 * an invalid id or body; nothing is then changed). */
int rf_store_profiles_seed(struct rf_store *st, const struct rf_profile_seed *rows, int n,
			   int *shadowed /* OUT */);

/* See struct api_store.profile_list. */
int rf_store_profile_list(struct rf_store *st, const struct api_profile_filter *f,
			  struct api_profile **rows /* OUT */, int *n /* OUT */);

/* See struct api_store.profile_get. */
int rf_store_profile_get(struct rf_store *st, const char *id, struct api_profile *row /* OUT */);

/* See struct api_store.profile_put; also RF_E_TOO_LARGE past RF_STORE_MAX_CUSTOM_PROFILES
 * custom rows or a body over RF_STORE_MAX_PROFILE_BODY. */
int rf_store_profile_put(struct rf_store *st, const struct api_profile *p, bool *created /* OUT */);

/* See struct api_store.profile_delete. */
int rf_store_profile_delete(struct rf_store *st, const char *id);

#endif
