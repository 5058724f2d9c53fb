/*
 * Hugging Face model folders: under a --models-dir ({"model": {"path": DIR}}) and in the
 * Hugging Face cache by id (offline). What is read: config.json and each safetensors file's
 * header (its 8-byte length and JSON), never the tensor data. See hf_folders.c.
 */
#ifndef RIGFIT_SERVER_MODELS_HF_FOLDERS_H
#define RIGFIT_SERVER_MODELS_HF_FOLDERS_H

#include <stddef.h>

#include "api/api.h"

/* Reads the model folder dir (absolute; every file confined to dirs[0..n_dirs) as
 * rf_model_file_read confines a GGUF file) into *out: config.json and the headers of the
 * shards model.safetensors.index.json lists, or of model.safetensors. Returns 0 (free *out
 * with api_model_dir_free), or RF_E_FORBIDDEN (outside every models dir, or none configured),
 * RF_E_NOT_FOUND (no folder, no config.json, no weights), RF_E_INVALID_VALUE (a header that
 * is not safetensors), RF_E_TOO_LARGE, RF_E_NOMEM or RF_E_IO, with one line for the client
 * in msg that never names a path. */
int rf_model_dir_read(const char *const *dirs, int n_dirs, const char *dir,
		      struct api_model_dir *out /* OUT */, char *msg, size_t msglen);

/* Reads the snapshot of Hugging Face id ("Qwen/Qwen2.5-7B-Instruct") that refs/main names in
 * the hub cache directory hub, as rf_model_dir_read does, confined to hub. Returns 0, or
 * RF_E_NOT_FOUND when the cache does not hold the id, or the errors above. */
int rf_hf_cache_read(const char *hub, const char *id, struct api_model_dir *out /* OUT */,
		     char *msg, size_t msglen);

/* Writes the Hugging Face hub cache directory into buf: configured (--hf-cache) when set, else
 * $HF_HUB_CACHE, $HF_HOME/hub or $HOME/.cache/huggingface/hub; "" when none is known. */
void rf_hf_hub_dir(const char *configured, char *buf, size_t buflen);

/* Calls each(ctx, name) once for every distinct shard file that the safetensors index idx
 * (len bytes of model.safetensors.index.json) lists in its weight_map, in order, stopping at
 * the first negative return, which it returns. Returns 0, that error, or RF_E_INVALID_VALUE
 * (no weight_map, a name that rf_model_shard_name_ok refuses), RF_E_TOO_LARGE (more than
 * API_MODEL_DIR_MAX_SHARDS distinct names) or RF_E_NOMEM with msg set. Each entry costs one
 * lookup among the names seen, whatever the index's size. */
int rf_model_index_shards(const char *idx, size_t len, int (*each)(void *ctx, const char *name),
			  void *ctx, char *msg, size_t msglen);

/* Returns 1 when s is a shard's file name as an index may list it: a plain name (no '/', not
 * starting with '.') ending in .safetensors, shorter than 256 bytes; else 0. */
int rf_model_shard_name_ok(const char *s);

#endif
