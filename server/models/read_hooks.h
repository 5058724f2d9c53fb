/*
 * The --models-dir policy as the API's read_model hooks (api_read_model_fn,
 * api_read_model_dir_fn): a request may name a GGUF file or a model folder only inside the
 * configured directories (server/models/model_files.c checks it); the Hugging Face cache is
 * read by id.
 */
#ifndef RIGFIT_SERVER_MODELS_READ_HOOKS_H
#define RIGFIT_SERVER_MODELS_READ_HOOKS_H

#include <stddef.h>
#include <stdint.h>

/* ctx is a struct rf_config (its models_dirs). Reads the header of path (see
 * rf_model_file_read). Returns 0 or a negative rf_err with a message for the client. */
int rf_model_file_read_cfg(void *ctx, const char *path, char **buf, size_t *len,
			   uint64_t *file_size, char *msg, size_t msglen);

struct api_model_dir;

/* ctx is a struct rf_config. kind 0: reads the model folder path under its models_dirs; kind 1:
 * reads Hugging Face id path from the hub cache (--hf-cache or the huggingface_hub default).
 * See rf_model_dir_read and rf_hf_cache_read. */
int rf_model_dir_read_cfg(void *ctx, int kind, const char *path, struct api_model_dir *out,
			  char *msg, size_t msglen);

#endif
