/*
 * The --models-dir policy as the API's read_model hook (api_read_model_fn): a request may
 * name a GGUF file only inside the configured directories (server/model_files.c checks it).
 */
#ifndef RIGFIT_SERVER_MODELS_DIR_H
#define RIGFIT_SERVER_MODELS_DIR_H

#include <stddef.h>
#include <stdint.h>

/* ctx is a struct rf_config (its models_dirs). Reads the header of path (see
 * rf_model_file_read). Returns 0 or a negative rf_err with a message for the client. */
int rf_model_file_read_cfg(void *ctx, const char *path, char **buf, size_t *len,
			   uint64_t *file_size, char *msg, size_t msglen);

#endif
