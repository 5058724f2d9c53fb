/*
 * What the files of server/store/ share: the handle's layout and the SQLite helpers. store.c
 * opens, migrates and closes; each other file (one per table family) adds its own calls.
 * Nothing outside server/store/ includes this header.
 *
 * Rules for a store file: hold sqlite3_db_mutex(st->db) for the whole call (the handle is
 * shared by the loop thread and the scan worker), bind every value, reset and clear bindings
 * before leaving, and never leave a transaction open (roll back on any failure).
 */
#ifndef RIGFIT_SERVER_STORE_STORE_PRIV_H
#define RIGFIT_SERVER_STORE_STORE_PRIV_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdint.h>

#include "server/store/store.h"

struct rf_store {
	sqlite3 *db;
	/* A second connection for the listings that requests make (benchmarks, the scan
	 * history): in WAL mode it reads the last commit while a write on db is in its
	 * transaction, and its own mutex is never held by the writer. */
	sqlite3 *rdb;
	int n_migrations;
	sqlite3_stmt *begin;    /* BEGIN IMMEDIATE */
	sqlite3_stmt *commit;   /* COMMIT */
	sqlite3_stmt *rollback; /* ROLLBACK */
	sqlite3_stmt *version;  /* PRAGMA user_version */
	sqlite3_stmt *scan_insert;
	sqlite3_stmt *scan_trim;
	sqlite3_stmt *scan_list;
	struct rf_store_profile_stmts *profiles; /* store_profiles.c */
	/* store_bench.c: the listing statement of each combination of filters (bit 0 model,
	 * 1 hardware, 2 since, 3 cursor), prepared at its first use. */
	sqlite3_stmt *bench_list[16];
	/* store_bench.c: "this fingerprint has no run", remembered for the estimator, which asks
	 * on every request. Valid while no other connection committed (PRAGMA data_version on
	 * rdb, read by bench_data_version): a write through db is such a commit too. */
	sqlite3_stmt *bench_data_version;
	char bench_none_fp[API_BENCH_ID_LEN + 1];
	int64_t bench_none_dv;
	/* The event loop's turns (rf_store_turn): the loop thread, the number of its current
	 * turn (0: none yet, every version read afresh) and the data_version read during
	 * turn bench_dv_turn, which that thread reuses until its next turn. */
	pthread_t loop_thread;
	_Atomic uint64_t turn;
	uint64_t bench_dv_turn;
	int64_t bench_dv;
	/* Which opening of a database this handle is (process-wide, from 1): a reopened store's
	 * data_version starts afresh, so the benchmarks' version (rf_store_bench_version) pairs
	 * it with this. */
	uint64_t epoch;
	int busy_ms; /* how long a write waits for another connection's lock */
	/* The file as opened, to notice it deleted or replaced underneath (rf_store_check_linked):
	 * its path, device and inode. (A descriptor held on it would do too, but closing any
	 * descriptor of the file drops the process's POSIX locks, SQLite's included.) */
	char *path;
	uint64_t dev, ino;
};

/* Takes the connection's mutex and begins a write transaction (BEGIN IMMEDIATE). While
 * another connection (another process) holds the write lock, it tries again every few
 * milliseconds for up to the busy timeout, sleeping WITHOUT the mutex, so that readers on the
 * request path never wait behind a writer's wait. Returns SQLite's result of BEGIN
 * (SQLITE_DONE when the transaction is open); the mutex is held on return either way. */
int rf_store_begin_write(struct rf_store *st);

/* Makes room for one more row in a listing: arr holds *cap elements of elem bytes, all used.
 * Doubles the room (16 at first), never past limit (> *cap). Returns the (possibly moved)
 * array and updates *cap, or NULL when out of memory (arr and *cap are then unchanged, and arr
 * is still the caller's to free). */
void *rf_store_grow(void *arr, int *cap, int limit, size_t elem);

/* Maps a SQLite result code (primary or extended) that is an error to an rf_err. A database
 * that is busy, locked, full, read-only, corrupt or failing I/O is "unavailable" to clients
 * (RF_E_STORE_UNAVAILABLE); a CHECK or UNIQUE constraint is RF_E_INVALID_VALUE; only our own
 * misuse is internal. */
int rf_store_sqlite_err(int src);

/* Steps a statement that returns no row to completion and resets it (bindings cleared, so no
 * pointer into a caller's buffer survives the call). Returns SQLite's result: SQLITE_DONE on
 * success. */
int rf_store_step_done(sqlite3_stmt *s);

/* store_profiles.c: prepares the profile statements of st. Returns 0 or a negative rf_err
 * with a one-line reason in errbuf. */
int rf_store_profiles_prepare(struct rf_store *st, char *errbuf, size_t errlen);

/* store_profiles.c: finalizes them. Safe when they were never (or partly) prepared. */
void rf_store_profiles_finalize(struct rf_store *st);

/* store_bench.c: finalizes the listing statements. Safe when none was prepared. */
void rf_store_bench_finalize(struct rf_store *st);

/* store_profiles.c: fills the profile members of api (its ctx is the store handle). */
void rf_store_profiles_api(struct api_store *api);

#endif
