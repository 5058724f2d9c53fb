/*
 * The models this host holds (GET /api/models): see models_list.c.
 */
#ifndef RIGFIT_SERVER_MODELS_MODELS_LIST_H
#define RIGFIT_SERVER_MODELS_MODELS_LIST_H

#include <stdint.h>

#include "api/api.h"
#include "server/config.h"

/* The most models one walk lists from each place (all --models-dir folders together, the
 * Hugging Face cache, Ollama's store), so that one crowded place never hides the others. */
#define RF_MODELS_PER_SOURCE 2000

/* Walks cfg's models dirs, the Hugging Face cache and Ollama's store (bounded: two levels,
 * 4096 entries a directory, RF_MODELS_PER_SOURCE models a place) into *out, with scanned_at_ms
 * the wall clock when the walk began and out->truncated[] set for each place whose walk
 * stopped at one of those caps.
 * Blocks on the file system: call it off the event loop. Returns 0 (free out with
 * rf_models_free; a host without models gives n 0 and items NULL) or RF_E_NOMEM. */
int rf_models_walk(const struct rf_config *cfg, struct api_local_models *out /* OUT */);

/* Frees m's items and empties it. NULL is a no-op. */
void rf_models_free(struct api_local_models *m);

#endif
