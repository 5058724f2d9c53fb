/*
 * The API layer: JSON in, JSON out, no sockets. A handler receives a parsed request
 * (struct api_request) and what the process can offer it (struct api_env), and writes a
 * status and a body into struct api_reply. The HTTP glue in server/daemon/http.c is the only code
 * that knows libmicrohttpd; the CLI calls the same handlers, so both print the same JSON.
 *
 * Services the handlers need from the process (the store) are declared here as a small
 * interface that server/ implements, so api/ never includes a server header.
 */
#ifndef RIGFIT_API_API_H
#define RIGFIT_API_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hw/hw.h"

#define API_MAX_BODY_BYTES (1024 * 1024)
#define API_MAX_URL_BYTES 8192

enum api_method {
	API_GET = 1 << 0,
	API_POST = 1 << 1,
	API_PUT = 1 << 2,
	API_DELETE = 1 << 3,
	API_OPTIONS = 1 << 4,
	API_HEAD = 1 << 5,
};

/* Returns the enum value of an HTTP method name, or 0 for one rigfit does not know. */
enum api_method api_method_parse(const char *name);
/* Returns the name ("GET") of a single method bit. */
const char *api_method_name(enum api_method m);

struct api_local_model;

/* The places on disk where models are found, as api_local_model.where names them. */
enum api_local_source {
	API_SOURCE_MODELS_DIR, /* "models_dir": the --models-dir folders */
	API_SOURCE_HF_CACHE,   /* "hf_cache": the Hugging Face cache */
	API_SOURCE_OLLAMA,     /* "ollama": Ollama's local store */
	API_N_LOCAL_SOURCES,
};

/* Returns the where name of source ("models_dir"...). */
const char *api_local_source_name(enum api_local_source source);

/* The models found on this host by one walk of the models dirs, the Hugging Face cache and
 * Ollama's store (GET /api/models answers from it; the walk runs beside the hardware scan). */
struct api_local_models {
	struct api_local_model *items; /* owned by the snapshot that holds the list */
	int n;
	int64_t scanned_at_ms; /* when the walk began (wall clock); 0: never walked */
	/* The walk of that place stopped at a cap (models per place, entries per directory)
	 * before it had looked at everything: it may hold more models than are listed. */
	bool truncated[API_N_LOCAL_SOURCES];
};

/* One immutable hardware scan and its pre-rendered JSON, shared read-only by requests. */
struct api_snapshot {
	struct hw_snapshot hw;
	char *json; /* NUL-terminated; owned by the snapshot */
	size_t json_len;
	uint64_t seq;                   /* 1 for the first scan, +1 for each later one */
	struct api_local_models models; /* this host's models, walked by the same scan */
};

/* One row of the scan history, as the store returns it. */
struct api_scan_row {
	int64_t id;
	int64_t scanned_at_ms;
	double scan_duration_ms;
	char *hardware_json; /* owned by the row */
};

/* One measured run of the benchmark history (POST/GET /api/benchmarks), as the store keeps
 * it. Text fields are NUL-terminated; "" means unknown for the optional ones. */
#define API_BENCH_ID_LEN 128
struct api_bench_run {
	int64_t id; /* the store's row id; 0 before it is stored */
	char run_id[API_BENCH_ID_LEN + 1];
	char hardware_fingerprint[API_BENCH_ID_LEN + 1];
	char model[256 + 1]; /* a catalog id when the model was recognised, else as given */
	char precision[32 + 1];
	char backend[32 + 1];
	char runtime[64 + 1];
	char runtime_version[64 + 1]; /* "" : not given */
	char source[64 + 1];          /* llama-bench | llama-server | manual | api */
	char *settings_json;          /* a JSON object (malloc'd), or NULL for {} */
	char *peak_memory_json;       /* a JSON object (malloc'd) of bytes per device, or NULL */
	int64_t prompt_tokens;
	int64_t generated_tokens;
	double prefill_tokens_per_s; /* <= 0: not measured */
	double decode_tokens_per_s;  /* <= 0: not measured */
	char measured_at[24 + 1];    /* 'YYYY-MM-DDTHH:MM:SS.sssZ' */
	char created_at[24 + 1];     /* set by the store */
};

/* Frees the owned members of runs[0..n) and the array. NULL is a no-op. */
void api_bench_runs_free(struct api_bench_run *runs, int n);

/* What GET /api/benchmarks filters on. Empty strings and 0 mean "no filter". */
struct api_bench_filter {
	char model[256 + 1];
	char hardware_fingerprint[API_BENCH_ID_LEN + 1];
	char since[24 + 1]; /* measured_at >= since */
	/* The cursor: rows strictly after (before_measured_at, before_id) in newest-first
	 * order; empty before_measured_at: from the newest. */
	char before_measured_at[24 + 1];
	int64_t before_id;
	int limit; /* clamped by the store to [1, 1000] */
};

/* One row of the profiles table (GET/PUT /api/profiles): a device, model or tier profile,
 * shipped (seeded from the profile files) or custom (PUT by a client). */
#define API_PROFILE_ID_LEN 128
struct api_profile {
	char id[API_PROFILE_ID_LEN + 1];
	char kind[8];   /* device | model | tier */
	char source[8]; /* shipped | custom */
	char *body;     /* the profile as a JSON object (malloc'd, owned by the row) */
	char created_at[24 + 1];
	char updated_at[24 + 1];
};

/* Frees the owned members of rows[0..n) and the array. NULL is a no-op. */
void api_profiles_free(struct api_profile *rows, int n);

/* What GET /api/profiles filters on. Empty strings mean "no filter". */
struct api_profile_filter {
	char kind[8];
	char source[8];
	char after[API_PROFILE_ID_LEN + 1]; /* the cursor: ids strictly after it, in id order */
	int limit;                          /* clamped by the store to [1, 1000] */
};

/* What the store offers the handlers. A NULL function or available == false means the store
 * is down; handlers that need it answer 503 store_unavailable. */
struct api_store {
	void *ctx;
	bool available;
	/* Lists up to limit scans with id < before_id (before_id <= 0: from the newest), newest
	 * first. Writes a malloc'd array to *rows (free with api_scan_rows_free) and its length
	 * to *n. Returns 0 or a negative rf_err. */
	int (*scan_list)(void *ctx, int64_t before_id, int limit, struct api_scan_row **rows,
			 int *n);
	/* Records run (run->id and created_at are ignored). When a run with the same run_id
	 * exists, stores nothing and sets *existed. Writes the row id to *id either way.
	 * Returns 0 or a negative rf_err. */
	int (*bench_insert)(void *ctx, const struct api_bench_run *run, int64_t *id, bool *existed);
	/* Lists runs matching f, newest first (measured_at DESC, id DESC). Writes a malloc'd
	 * array to *runs (free with api_bench_runs_free) and its length to *n. */
	int (*bench_list)(void *ctx, const struct api_bench_filter *f, struct api_bench_run **runs,
			  int *n);
	/* The version of the benchmark runs: it changes whenever they may have changed (any
	 * commit to the database, by this process or another, and every reopen), so an answer
	 * read at one version can be reused while it holds. Returns 0 and *version, or a
	 * negative rf_err (nothing may then be reused). NULL: no versions. */
	int (*bench_version)(void *ctx, uint64_t *version);
	/* Deletes the run with row id id. Returns 0, RF_E_NOT_FOUND or a negative rf_err. */
	int (*bench_delete)(void *ctx, int64_t id);
	/* Lists profiles matching f in id order. Writes a malloc'd array to *rows (free with
	 * api_profiles_free) and its length to *n. Returns 0 or a negative rf_err. */
	int (*profile_list)(void *ctx, const struct api_profile_filter *f,
			    struct api_profile **rows, int *n);
	/* Reads the profile id into *row (free its body with api_profile_clear). Returns 0,
	 * RF_E_NOT_FOUND (row untouched) or a negative rf_err. */
	int (*profile_get)(void *ctx, const char *id, struct api_profile *row);
	/* Creates or replaces the custom profile p (id, kind, body; the rest is ignored) and sets
	 * *created when it is new. Returns 0, RF_E_CONFLICT when the id is shipped or a custom
	 * profile of another kind, or a negative rf_err. */
	int (*profile_put)(void *ctx, const struct api_profile *p, bool *created);
	/* Deletes the custom profile id. Returns 0, RF_E_NOT_FOUND, RF_E_CONFLICT (shipped) or a
	 * negative rf_err. */
	int (*profile_delete)(void *ctx, const char *id);
	/* Reads the run with row id id into a malloc'd one-element array *run (free with
	 * api_bench_runs_free(*run, 1)). Returns 0, RF_E_NOT_FOUND or a negative rf_err. */
	int (*bench_get)(void *ctx, int64_t id, struct api_bench_run **run);
};

/* Frees the owned body of one profile row and empties it. NULL is a no-op. */
void api_profile_clear(struct api_profile *p);

/* Frees rows[0..n) and the array. NULL is a no-op. */
void api_scan_rows_free(struct api_scan_row *rows, int n);

struct api_metrics;       /* api/metrics.h */
struct device_table;      /* core/hw/device.h */
struct model_catalog;     /* core/fit/model.h */
struct plan_quality;      /* core/plan/plan_quality.h */
struct api_tier_table;    /* api/catalog/tiers.h */
struct mcp_http;          /* api/mcp.h */
struct api_history_cache; /* api/history_cache.h */

/* Reads the start of a model file the client named ({"gguf": PATH}) for its header. The
 * process decides what may be read (--models-dir). Returns 0 and a malloc'd buffer (length
 * *len, the file's whole size in *file_size), or a negative rf_err (RF_E_FORBIDDEN,
 * RF_E_NOT_FOUND, RF_E_INVALID_VALUE...) with one line for the client in msg. */
typedef int (*api_read_model_fn)(void *ctx, const char *path, char **buf, size_t *len,
				 uint64_t *file_size, char *msg, size_t msglen);

/* A Hugging Face model folder as read for an estimate: config.json and the JSON header of
 * every safetensors file (the 8-byte length and the header only; the tensor data is never
 * read). Filled by the process (api_read_model_dir_fn); freed with api_model_dir_free. */
#define API_MODEL_DIR_MAX_SHARDS 512
struct api_model_dir {
	char *config; /* config.json, NUL-terminated */
	size_t config_len;
	int n_shards;
	char *headers[API_MODEL_DIR_MAX_SHARDS]; /* each shard's JSON header, NUL-terminated */
	size_t header_len[API_MODEL_DIR_MAX_SHARDS];
	/* each shard's size (the file on disk, or the Hub's Content-Range total); 0: unknown (a
	 * stored Hub answer keeps only the total) */
	uint64_t shard_bytes[API_MODEL_DIR_MAX_SHARDS];
	uint64_t file_bytes;   /* the shards' sizes on disk, headers included */
	char where[16];        /* "models_dir", "hf_cache" or "hub" */
	char revision[64];     /* the HF cache snapshot read ("" for a models dir; "main": hub) */
	int64_t fetched_at_ms; /* hub: when the Hub answered (Unix ms; the store's copy may be old) */
};

/* Frees what d holds (not d itself) and zeroes it. NULL is a no-op. */
void api_model_dir_free(struct api_model_dir *d);

/* Reads the model folder at path (kind 0: a directory under --models-dir) or the Hugging Face
 * cache's snapshot of the model id path (kind 1: "Qwen/Qwen2.5-7B-Instruct", offline) into
 * *out. Returns 0, or a negative rf_err (RF_E_FORBIDDEN outside the models dirs, RF_E_NOT_FOUND,
 * RF_E_INVALID_VALUE, RF_E_TOO_LARGE...) with one line for the client in msg. */
typedef int (*api_read_model_dir_fn)(void *ctx, int kind, const char *path,
				     struct api_model_dir *out, char *msg, size_t msglen);

/* A model file or folder found on this host (GET /api/models). */
struct api_local_model {
	char id[160];    /* how a request names it: a path, an HF id, an Ollama tag */
	char where[16];  /* "models_dir", "hf_cache", "ollama" */
	char format[16]; /* "gguf", "safetensors" */
	int64_t size_bytes;
};

/* How the profile routes reach the catalogs behind api_env.cat.devices and .models, which the
 * process builds from the profile files and the store's custom rows. */
struct api_profile_hooks {
	void *ctx;
	/* Checks that the catalogs build with pending (a custom row about to be written,
	 * replacing the one with its id) among them, installing nothing. Returns 0, or
	 * RF_E_CONFLICT (a name another profile has) or another negative rf_err with one line
	 * for the client in msg. */
	int (*check)(void *ctx, const struct api_profile *pending, char *msg, size_t msglen);
	/* Rebuilds and installs the catalogs after a custom row changed. The env's devices and
	 * models pointers are stale after this call: the handler must not use them again. */
	void (*changed)(void *ctx);
};

struct api_process_stats;
struct api_ft_session;

/* A file the daemon serves as it is (the web page's HTML, script and style sheet). */
struct api_asset {
	const char *name; /* base name: "index.html", "app.js" */
	const char *data; /* NUL-terminated */
	size_t len;
};

/* The catalogs questions are answered from: the profiles' devices, models, tiers and quality
 * table, which the process builds at load and on reload (NULL: none loaded). */
struct api_catalogs {
	const struct device_table *devices; /* profiles/devices.json */
	const struct model_catalog *models; /* profiles/models.json */
	const struct api_tier_table *tiers; /* profiles/tiers.json */
	const struct plan_quality *quality; /* profiles/quality.json */
};

/* How the routes read this host: model files and folders, the Hub, Ollama's store and the
 * process's own figures (NULL: not read here). */
struct api_io {
	api_read_model_fn read_model; /* NULL: model files cannot be read here */
	void *read_model_ctx;
	api_read_model_dir_fn read_model_dir; /* NULL: no folder or cache is read here */
	void *read_model_dir_ctx;
	/* A Hugging Face id looked up on the Hub (--hub; kind 2, path: the id) when neither the
	 * catalog nor the HF cache knows it. NULL: no Hub is asked (the default). */
	api_read_model_dir_fn read_hub;
	void *read_hub_ctx;
	/* The GGUF header of an Ollama tag in Ollama's local store (path: the reference);
	 * RF_E_NOT_FOUND when it is not pulled there. NULL: the store is not read. */
	api_read_model_fn read_ollama;
	void *read_ollama_ctx;
	/* Fills the process figures of /metrics (struct api_process_stats, api/metrics.h).
	 * Returns 0, or < 0 when they cannot be read. NULL: no process series. */
	int (*read_process)(struct api_process_stats *out);
};

/* What a route answers with: the process's state (the scan, the store, the served files, the
 * sessions), the catalogs and the readers of this host. */
struct api_env {
	const char *version;
	double uptime_s;
	int64_t now_ms;
	const struct api_snapshot *snapshot; /* NULL until the first scan finished */
	const char *openapi;                 /* the embedded spec */
	const struct api_asset *ui; /* the web page's files, ended by a NULL name; NULL: --no-ui */
	size_t openapi_len;
	struct api_metrics *metrics;
	struct api_store store;
	/* The benchmark history estimates read, remembered per store version (history_cache.h);
	 * NULL: every estimate lists it afresh. */
	struct api_history_cache *history_cache;
	int scan_interval_s;
	int64_t last_scan_failed_ms; /* 0: never failed */
	const char *store_error;     /* the store's last failure (one line), or NULL: none so far */
	int64_t store_error_ms;      /* when it happened (wall clock) */
	struct api_catalogs cat;
	struct api_io io;
	struct api_profile_hooks profiles; /* NULL check: custom profiles cannot be changed */
	/* ModelForge's session (api/finetune_session.h), kept by the daemon; NULL: none. */
	struct api_ft_session *session;
	/* Free bytes of the data directory's file system (--data-dir), when known. */
	bool data_disk_known;
	int64_t data_disk_free_bytes;
	const void *openapi_tree; /* the spec as a cJSON tree (const cJSON *); NULL: not parsed */
	struct mcp_http *mcp;     /* the MCP sessions of POST /mcp (api/mcp.h); NULL: none */
	/* --mcp-conformance-fixtures: MCP also offers the conformance suite's fixture resources */
	bool mcp_fixtures;
};

struct api_request {
	enum api_method method;
	const char *path;  /* without the query string */
	const char *query; /* after '?', or "" */
	const char *body;  /* NULL when there is none */
	size_t body_len;
	const char *path_id; /* the {id} segment of routes that have one, else NULL */
	/* Looks up a request header by name (any case); NULL: absent, or no headers (the CLI) */
	const char *(*header)(void *ctx, const char *name);
	void *header_ctx;
	/* The client's address as text ("127.0.0.1", "::1"); "": unknown (the CLI). The MCP
	 * transport shares its sessions out per client by it. */
	char client[48];
};

struct api_reply {
	int status;
	const char *content_type;
	char *body;                /* owned (malloc'd) body, or NULL */
	const char *borrowed_body; /* or a body owned by the env (snapshot, spec); copied by the
				      transport before the env may change */
	size_t len;
	const char *allow;  /* the Allow header of a 405, else NULL */
	int retry_after_s;  /* > 0: a Retry-After header (429, 503) */
	bool wait_for_scan; /* the handler asks the transport for a fresh scan and to
				      answer with it (POST /api/hardware/rescan) */
	/* Non-empty: the Mcp-Session-Id header of the reply (POST /mcp's initialize). */
	char mcp_session[40];
};

/* Frees the owned body of r and resets it. */
void api_reply_reset(struct api_reply *r);

/* Sets r to the error envelope {"error":{"code","message","field"?}} for err (a negative
 * rf_err), with an optional printf-style message (NULL: the table's default message) and the
 * offending field (NULL: none). Returns err, so a handler can `return api_error(...)`. */
int api_error(struct api_reply *r, int err, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Sets r to a 405 envelope with its Allow header listing the methods in allowed. */
int api_error_method(struct api_reply *r, unsigned allowed);

/* Takes ownership of json (malloc'd, NUL-terminated) as r's body with the given status. */
void api_reply_json(struct api_reply *r, int status, char *json);

/* Looks up a query parameter and URL-decodes its value into buf (size buflen). Returns 1
 * when found, 0 when absent, RF_E_INVALID_VALUE when present but longer than buflen - 1 or
 * badly escaped (buf is then empty). */
int api_query_get(const char *query, const char *name, char *buf, size_t buflen);

/* Reads an optional unsigned integer query parameter in [min, max] into *val. Returns 1 when
 * found, 0 when absent (val untouched), or a 422 envelope in out naming the parameter. */
int api_query_uint(const struct api_request *req, struct api_reply *out, const char *name,
		   uint64_t min, uint64_t max, uint64_t *val /* OUT */);

typedef int (*api_handler_fn)(const struct api_env *env, const struct api_request *req,
			      struct api_reply *out);

enum api_route_flags {
	API_ROUTE_PUBLIC = 1 << 0,      /* answered without a token (liveness probes) */
	API_ROUTE_JSON_BODY = 1 << 1,   /* takes a JSON request body */
	API_ROUTE_HAS_ID = 1 << 2,      /* path ends in /{id} */
	API_ROUTE_STORE_WRITE = 1 << 3, /* writes to the store: the daemon runs it off the loop */
	/* may look its model up on the Hub (api_env.read_hub): the daemon runs it off the loop
	 * when the lookup has to go to the network */
	API_ROUTE_HUB_LOOKUP = 1 << 4,
};

struct api_route {
	enum api_method method;
	const char *path; /* as openapi.yaml writes it: "/api/profiles/{id}" */
	api_handler_fn handler;
	unsigned flags;
};

/* Returns the route table and writes its length to *n. */
const struct api_route *api_routes(size_t *n /* OUT */);

/* Finds the route for method and path. Returns it (and the {id} segment in *id, pointing into
 * path, NUL not added: *id_len says its length) or NULL; then *allowed holds the methods the
 * path does accept (0: the path is unknown). */
const struct api_route *api_route_find(enum api_method method, const char *path,
				       unsigned *allowed /* OUT */, const char **id /* OUT */,
				       size_t *id_len /* OUT */);

/* Dispatches req to its handler: 404/405 envelopes for unknown paths and methods, and 503
 * out_of_memory for a reply during which a cJSON allocation failed (api/json_alloc.h). Always
 * leaves a complete reply in out. Returns the route matched, or NULL. */
const struct api_route *api_dispatch(const struct api_env *env, struct api_request *req,
				     struct api_reply *out);

/* Handlers, one file each. */
int api_health(const struct api_env *env, const struct api_request *req, struct api_reply *out);
int api_ready(const struct api_env *env, const struct api_request *req, struct api_reply *out);
int api_openapi(const struct api_env *env, const struct api_request *req, struct api_reply *out);
/* GET /api/models: the catalog and the models on this host (api/models.c). */
int api_models_list(const struct api_env *env, const struct api_request *req,
		    struct api_reply *out);
/* GET / (the web page) and GET /ui/{id} (its script and style sheet): api/ui.c. */
int api_ui_index(const struct api_env *env, const struct api_request *req, struct api_reply *out);
int api_ui_asset(const struct api_env *env, const struct api_request *req, struct api_reply *out);
int api_metrics_route(const struct api_env *env, const struct api_request *req,
		      struct api_reply *out);
int api_hardware_get(const struct api_env *env, const struct api_request *req,
		     struct api_reply *out);
int api_hardware_rescan(const struct api_env *env, const struct api_request *req,
			struct api_reply *out);
int api_estimate(const struct api_env *env, const struct api_request *req, struct api_reply *out);
int api_hardware_history(const struct api_env *env, const struct api_request *req,
			 struct api_reply *out);
int api_profiles_list(const struct api_env *env, const struct api_request *req,
		      struct api_reply *out);
int api_profile_get(const struct api_env *env, const struct api_request *req,
		    struct api_reply *out);
int api_profile_put(const struct api_env *env, const struct api_request *req,
		    struct api_reply *out);
int api_profile_delete(const struct api_env *env, const struct api_request *req,
		       struct api_reply *out);

#endif
