/*
 * The benchmark history in the store: measured runs (table `benchmarks`, migrations 0001 and
 * 0002) recorded by POST /api/benchmarks and `rigfit bench record`, listed newest first with a
 * keyset cursor, read and deleted by row id. These are the functions behind struct api_store's
 * bench_* members (api/api.h), which say what each one means.
 */
#ifndef RIGFIT_SERVER_STORE_STORE_BENCH_H
#define RIGFIT_SERVER_STORE_STORE_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "server/store/store.h"

/* Records run unless a run with the same run_id is stored; then stores nothing and sets
 * *existed. Writes the row id (new or existing) to *id. An optional text field that is "" is
 * stored as NULL, a speed <= 0 as NULL (not measured), settings_json NULL as {}. Returns 0,
 * RF_E_STORE_UNAVAILABLE (NULL store, busy, full, read-only, I/O), RF_E_INVALID_VALUE (a value
 * the schema's CHECKs refuse: both speeds missing, a bad timestamp, JSON that is not an
 * object...) or RF_E_NOMEM. The outputs are written only on success. */
int rf_store_bench_insert(struct rf_store *st, const struct api_bench_run *run,
			  int64_t *id /* OUT */, bool *existed /* OUT */);

/* Lists the runs matching f newest first (measured_at DESC, id DESC), at most f->limit
 * (clamped to [1, 1000]). Writes a malloc'd array (free with api_bench_runs_free; NULL when
 * there is no row) to *runs and its length to *n. Returns 0 or a negative rf_err; on error the
 * outputs are not written. */
int rf_store_bench_list(struct rf_store *st, const struct api_bench_filter *f,
			struct api_bench_run **runs /* OUT */, int *n /* OUT */);

/* The version of the benchmark runs (see api_store.bench_version): the opening's epoch and
 * SQLite's PRAGMA data_version of the reading connection, which changes on every commit by
 * another connection (the writing one included). On the event loop's thread, the figure read
 * in one turn (rf_store_turn) serves the rest of that turn; every other caller reads it
 * afresh. Returns 0 and *version, or a negative rf_err. */
int rf_store_bench_version(struct rf_store *st, uint64_t *version /* OUT */);

/* Begins a turn of the event loop on the calling thread (the daemon calls it before each run
 * of the HTTP server): the requests of one turn arrived together, and reading the version once
 * for all of them spares a read transaction (two file locks) per request. A commit by this
 * daemon is answered in a later turn than the one it completed in, so its client's next
 * request always sees it; a commit by another process is seen from the next turn on. */
void rf_store_turn(struct rf_store *st);

/* Reads the run with row id id into a malloc'd one-element array *run (free with
 * api_bench_runs_free(*run, 1)). Returns 0, RF_E_NOT_FOUND or a negative rf_err. */
int rf_store_bench_get(struct rf_store *st, int64_t id, struct api_bench_run **run /* OUT */);

/* Deletes the run with row id id. Returns 0, RF_E_NOT_FOUND or a negative rf_err. */
int rf_store_bench_delete(struct rf_store *st, int64_t id);

/* Writes SQLite's query plan of the listing query for f (EXPLAIN QUERY PLAN, the details
 * joined by "; ") into out (size len, truncated to fit). Tests and `make bench` use it to check
 * that every listing is read in order from an index. Returns 0 or a negative rf_err. */
int rf_store_bench_explain(struct rf_store *st, const struct api_bench_filter *f, char *out,
			   size_t len);

/* Fills the bench_* members of api (whose ctx is the store handle) with the functions above. */
void rf_store_bench_api(struct api_store *api);

#endif
