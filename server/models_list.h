/*
 * The models this host holds (GET /api/models): see models_list.c.
 */
#ifndef RIGFIT_SERVER_MODELS_LIST_H
#define RIGFIT_SERVER_MODELS_LIST_H

#include "api/api.h"

/* ctx is a struct rf_config: lists at most max models of its models dirs, the Hugging Face
 * cache and Ollama's store into out (api_list_models_fn). Returns how many. */
int rf_list_models_cfg(void *ctx, struct api_local_model *out, int max);

#endif
