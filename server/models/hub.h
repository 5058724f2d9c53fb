/*
 * Looking a model up on a Hugging Face Hub (opt-in, --hub URL): config.json, the safetensors
 * index and each shard's header by HTTP range requests (the 8-byte length, then the JSON
 * header), never the tensor data. Answers are kept in the store, keyed by (hub URL, id,
 * revision "main"), and a stored answer is used first, so a model looked up once keeps
 * resolving offline. The whole lookup is bounded by one timeout; see hub.c.
 */
#ifndef RIGFIT_SERVER_MODELS_HUB_H
#define RIGFIT_SERVER_MODELS_HUB_H

#include <stdatomic.h>
#include <stddef.h>

#include "api/api.h"

struct rf_store;
struct rf_hub;

#define RF_HUB_URL_MAX 512
#define RF_HUB_TIMEOUT_MS_DEFAULT 5000

struct rf_hub_opts {
	const char *url;   /* http:// or https://, e.g. https://huggingface.co or an HF_ENDPOINT */
	const char *token; /* a Bearer token for private repos; NULL or "": none */
	int timeout_ms;    /* the whole lookup; <= 0: RF_HUB_TIMEOUT_MS_DEFAULT */
};

/* Makes a Hub client over o (copied) that caches in store (borrowed, may be NULL: no cache).
 * A token with an http:// URL is logged as a warning (it would travel unencrypted). Returns 0
 * with *out (free with rf_hub_free), or RF_E_INVALID_VALUE (a URL that is not http or
 * https, or too long) or RF_E_NOMEM with one line in err. Call it before starting threads: it
 * initializes libcurl (once per process). */
int rf_hub_new(const struct rf_hub_opts *o, struct rf_store *store, struct rf_hub **out /* OUT */,
	       char *err, size_t errlen);

/* Frees h. NULL is a no-op. */
void rf_hub_free(struct rf_hub *h);

/* Looks up the Hugging Face id ("Qwen/Qwen2.5-7B-Instruct") over the network only (no store)
 * into *out (where "hub", revision "main", fetched_at_ms now). Returns 0 (free *out with
 * api_model_dir_free), or a negative rf_err with one line for the client in msg:
 * RF_E_INVALID_VALUE (not an id; the Hub has no such model or refuses it; an answer that is
 * not what a Hub serves: bad JSON, a header length past the file's end), RF_E_TIMEOUT (the
 * timeout passed), RF_E_UNAVAILABLE (the Hub cannot be reached or answers 5xx),
 * RF_E_TOO_LARGE or RF_E_NOMEM. */
int rf_hub_fetch(struct rf_hub *h, const char *id, struct api_model_dir *out /* OUT */, char *msg,
		 size_t msglen);

/* api_read_model_dir_fn over an rf_hub (ctx), kind 2: the store's answer when it has one, else
 * rf_hub_fetch, whose answer is checked (api_model_folder) and then stored. Returns as
 * rf_hub_fetch does. Shares lookups and remembers failures as rf_hub_read_for does; never
 * cancelled. */
int rf_hub_read(void *ctx, int kind, const char *id, struct api_model_dir *out /* OUT */, char *msg,
		size_t msglen);

/* A lookup on behalf of one request: cancelled is set (from any thread) when its client went
 * away. */
struct rf_hub_reader {
	struct rf_hub *hub;
	atomic_bool cancelled;
};

/* api_read_model_dir_fn over an rf_hub_reader (ctx), as rf_hub_read. Lookups of one id at
 * once share one request to the Hub; a failure is remembered for 10 s (the same answer, no
 * request); a lookup whose requests were all cancelled gives up (RF_E_UNAVAILABLE) within
 * about a second. */
int rf_hub_read_for(void *ctx, int kind, const char *id, struct api_model_dir *out /* OUT */,
		    char *msg, size_t msglen);

/* api_read_model_dir_fn over an rf_hub (ctx), kind 2, that never goes to the network: the
 * store's answer (0; free *out with api_model_dir_free), RF_E_NOT_FOUND when only the Hub can
 * answer (nothing stored, or no store; msg untouched), or RF_E_INVALID_VALUE (not an id) with
 * msg set. The daemon answers with it on the loop and runs rf_hub_read on the thread pool
 * when it says RF_E_NOT_FOUND. */
int rf_hub_read_stored(void *ctx, int kind, const char *id, struct api_model_dir *out /* OUT */,
		       char *msg, size_t msglen);

/* Points h at store (borrowed, may be NULL) after the daemon closed or reopened its store;
 * call it only while no lookup runs. NULL h is a no-op. */
void rf_hub_set_store(struct rf_hub *h, struct rf_store *store);

/* Makes every lookup under way, and every later one, give up at once (RF_E_UNAVAILABLE): the
 * daemon is stopping. Safe from any thread. NULL is a no-op. */
void rf_hub_stop(struct rf_hub *h);

#endif
