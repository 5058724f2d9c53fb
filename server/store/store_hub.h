/*
 * Models looked up on a Hugging Face Hub, kept in the store (tables hub_models and
 * hub_model_shards, migration NNNN_hub_models.sql) by (hub URL, model id, revision): the
 * config.json and the safetensors headers that server/models/hub.c fetched, so that the model keeps
 * resolving offline.
 */
#ifndef RIGFIT_SERVER_STORE_STORE_HUB_H
#define RIGFIT_SERVER_STORE_STORE_HUB_H

#include "api/api.h"
#include "server/store/store.h"

/* Reads the stored answer for (hub, id, rev) into *out (where "hub", revision rev,
 * fetched_at_ms when the Hub answered). Returns 0 (free *out with api_model_dir_free),
 * RF_E_NOT_FOUND, RF_E_STORE_UNAVAILABLE (NULL store, busy, failing) or RF_E_NOMEM; on error
 * *out is not written. */
int rf_store_hub_get(struct rf_store *st, const char *hub, const char *id, const char *rev,
		     struct api_model_dir *out /* OUT */);

/* Stores d (config.json and d->n_shards headers, at least one) for (hub, id, rev), replacing
 * what was stored for it, in one transaction. Returns 0, RF_E_STORE_UNAVAILABLE (NULL store,
 * busy, full, read-only), RF_E_INVALID_VALUE (what the schema refuses: JSON that is not an
 * object, no shard) or RF_E_NOMEM. */
int rf_store_hub_put(struct rf_store *st, const char *hub, const char *id, const char *rev,
		     const struct api_model_dir *d);

#endif
