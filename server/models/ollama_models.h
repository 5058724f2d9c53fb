/*
 * Ollama's local model store ($OLLAMA_MODELS, else ~/.ollama/models): a tag's manifest
 * (manifests/registry.ollama.ai/library/NAME/TAG, JSON) names the layer that holds the model,
 * a GGUF file in blobs/sha256-<digest>. rigfit reads that blob's header as it reads any GGUF
 * file, confined to the store (server/models/model_files.c), so an estimate of "llama3.1:8b" is
 * exactly the file Ollama runs.
 */
#ifndef RIGFIT_SERVER_MODELS_OLLAMA_MODELS_H
#define RIGFIT_SERVER_MODELS_OLLAMA_MODELS_H

#include <stddef.h>
#include <stdint.h>

/* Where Ollama's Linux installer keeps the store of its system service (user ollama). */
#define RF_OLLAMA_SYSTEM_DIR "/usr/share/ollama/.ollama/models"

/* Writes Ollama's model store directory into buf: configured (--ollama-models) when set,
 * else $OLLAMA_MODELS, else $HOME/.ollama/models when it exists, else the system service's
 * store (RF_OLLAMA_SYSTEM_DIR) when it exists, else $HOME/.ollama/models; "" when none is
 * known. */
void rf_ollama_dir(const char *configured, char *buf, size_t buflen);

/* rf_ollama_dir with the system store at system_dir (tests point it elsewhere). */
void rf_ollama_dir_at(const char *configured, const char *system_dir, char *buf, size_t buflen);

/* Reads the header of the GGUF blob that Ollama reference ref ("qwen2.5:32b-instruct-q8_0",
 * ":latest" when no tag) names in the store dir, as rf_model_file_read does. Returns 0 and
 * the malloc'd buffer, or RF_E_NOT_FOUND when the store has no such tag, RF_E_INVALID_VALUE
 * for a manifest without a model layer or a reference that is no Ollama library tag, or the
 * errors of rf_model_file_read, with one line for the client in msg. */
int rf_ollama_read(const char *dir, const char *ref, char **buf /* OUT */, size_t *len /* OUT */,
		   uint64_t *file_size /* OUT */, char *msg, size_t msglen);

/* Finds the model layer (mediaType application/vnd.ollama.image.model) of the manifest text
 * manifest[0..len) and writes its sha256 digest, 64 lower-case hex digits, NUL-terminated, to
 * hex. Pure: no file is read. Returns 0, or RF_E_INVALID_VALUE (not JSON, no model layer, a
 * digest that is not sha256:<64 hex>) with one line for the client in msg. */
int rf_ollama_manifest_blob(const char *manifest, size_t len, char hex[65] /* OUT */, char *msg,
			    size_t msglen);

/* ctx is a struct rf_config: rf_ollama_read in its store (api_read_model_fn). */
int rf_ollama_read_cfg(void *ctx, const char *ref, char **buf, size_t *len, uint64_t *file_size,
		       char *msg, size_t msglen);

#endif
