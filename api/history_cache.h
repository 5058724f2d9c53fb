/*
 * The benchmark history an estimate reads, remembered between requests: the newest runs of a
 * hardware fingerprint, as the rows the matching needs (model, precision, backend, speeds),
 * tagged with the store's version of the benchmarks (api_store.bench_version). While the
 * version is unchanged, an estimate reuses the rows instead of listing and copying up to
 * API_HISTORY_LIMIT runs again; any commit to the database (a run stored or deleted here, or by
 * another process) changes the version, and the next estimate lists afresh (the daemon reads
 * the version once per turn of its event loop: see rf_store_turn).
 *
 * A few fingerprints are kept (the host's own and some described machines), the least recently
 * used replaced. The daemon guards it with a mutex: its write jobs run estimates on the thread
 * pool too.
 */
#ifndef RIGFIT_API_HISTORY_CACHE_H
#define RIGFIT_API_HISTORY_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"

/* The backend of a run as the matching compares it. */
enum api_history_backend_kind {
	API_HISTORY_BACKEND_ANY = 0, /* not given: comparable with any */
	API_HISTORY_BACKEND_KNOWN,   /* a backend rigfit estimates (backend holds it) */
	API_HISTORY_BACKEND_OTHER    /* another backend (SYCL, CANN...): never comparable */
};

/* One run, as the matching needs it. */
struct api_history_row {
	char model[sizeof(((struct api_bench_run *)0)->model)];
	int ftype; /* enum rf_ftype of its precision; < 0: not a precision rigfit knows */
	enum api_history_backend_kind backend_kind;
	int backend;            /* enum speed_backend, when backend_kind is KNOWN */
	double measured_tps[2]; /* decode, prefill (by enum speed_test); <= 0 not measured */
};

/* The rows of one fingerprint, valid while the caller holds them (api_history_cache_get until
 * api_history_cache_put). */
struct api_history_rows {
	const struct api_history_row *rows;
	int n;      /* usable rows */
	int listed; /* runs the store returned (some may be another fingerprint's) */
};

struct api_history_cache;

/* Locks and unlocks what guards a cache shared by threads (the process supplies them: api/
 * does no threading of its own). */
typedef void (*api_history_lock_fn)(void *lock_ctx);

/* Returns a new, empty cache guarded by lock/unlock on lock_ctx (NULL lock and unlock: used by
 * one thread only), or NULL when out of memory. */
struct api_history_cache *api_history_cache_new(api_history_lock_fn lock,
						api_history_lock_fn unlock, void *lock_ctx);

/* Frees c. NULL is a no-op. */
void api_history_cache_free(struct api_history_cache *c);

/* Converts runs[0..n) of fingerprint fp into rows (out->rows malloc'd, or NULL when n is 0).
 * Runs of another fingerprint are not kept but counted in out->listed. Returns 0 or
 * RF_E_NOMEM. */
int api_history_rows_from_runs(const struct api_bench_run *runs, int n, const char *fp,
			       struct api_history_rows *out /* OUT */);

/* Looks up fp at store version v. On a hit, locks the cache, fills *out and returns true: the
 * caller must call api_history_cache_put when done. On a miss returns false, unlocked. */
bool api_history_cache_get(struct api_history_cache *c, const char *fp, uint64_t v,
			   struct api_history_rows *out /* OUT */);

/* Releases the lock a hit of api_history_cache_get took. */
void api_history_cache_put(struct api_history_cache *c);

/* Remembers rows (taking ownership of rows->rows, which is freed when replaced) for fp at
 * version v. Always takes ownership, even when it cannot remember (it then frees them). */
void api_history_cache_store(struct api_history_cache *c, const char *fp, uint64_t v,
			     struct api_history_rows *rows);

#endif
