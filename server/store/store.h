/*
 * The SQLite store behind an opaque handle: profiles, benchmark results and the scan history.
 * The file is opened in WAL mode with a busy timeout; every statement is prepared; the
 * embedded migrations (migrations/NNNN_*.sql) are applied in order at open, one transaction
 * each, tracked by PRAGMA user_version.
 *
 * A store that cannot be opened or migrated is reported, not fatal: the daemon keeps serving
 * what does not need it, and routes that do answer 503 store_unavailable.
 */
#ifndef RIGFIT_SERVER_STORE_STORE_H
#define RIGFIT_SERVER_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api.h"
#include "server/embedded.h"

struct rf_store;

/* Opens (creating if needed, with its parent directory) the database at path, applies the
 * migrations in `migrations` (NULL-name-terminated; pass rf_embed_migrations) that are newer
 * than its user_version, and writes the handle to *out. On failure returns a negative rf_err
 * (RF_E_STORE_UNAVAILABLE for a corrupt, read-only, locked or newer database, or a SQLite file
 * that is not a rigfit one; RF_E_INTERNAL for a migration table whose names are not numbered
 * 0001, 0002... in order; RF_E_NOMEM), writes a one-line reason into errbuf (size errlen) and
 * leaves *out NULL. A file that is not a valid rigfit database is never modified. Close the
 * handle with rf_store_close. */
int rf_store_open(const char *path, const struct rf_embedded_file *migrations,
		  struct rf_store **out /* OUT */, char *errbuf, size_t errlen);

/* Sets how long a statement waits for another connection's lock before it gives up with
 * RF_E_STORE_UNAVAILABLE (rf_store_open sets 2000 ms). ms < 0 is RF_E_INVALID_VALUE. Tests use
 * a short timeout to exercise the locked path quickly. Returns 0 or a negative rf_err. */
int rf_store_set_busy_timeout(struct rf_store *st, int ms);

/* Routes SQLite's own error log (every failed statement, with its extended code) to the
 * daemon's log, at most a few lines per 10 s, and remembers the last failure for
 * rf_store_last_error. Call once at start, before any database is opened. */
void rf_store_log_install(void);

/* The last failure of any store of the process: SQLite's extended result code (or 0 for one
 * of our own checks), a one-line message, and when (wall-clock ms). */
struct rf_store_error {
	int code;
	char message[256];
	int64_t at_ms;
};

/* Records a failure as the last one (and logs it, rate-limited). Thread-safe. */
void rf_store_note_error(int code, const char *message);

/* Copies the last failure into *out. Returns false (out untouched) when there was none.
 * Thread-safe. */
bool rf_store_last_error(struct rf_store_error *out /* OUT */);

/* Checks that the open database is still the file at its path: not deleted (its directory
 * included) and not replaced. Writes into a deleted file would be acknowledged and lost.
 * Returns 0, or RF_E_STORE_UNAVAILABLE (recorded as the last error, reason in msg when msg is
 * not NULL), or RF_E_STORE_UNAVAILABLE for a NULL store. */
int rf_store_check_linked(struct rf_store *st, char *msg, size_t msglen);

/* Closes the store. NULL is a no-op. */
void rf_store_close(struct rf_store *st);

/* Returns the schema version (PRAGMA user_version) of an open store, or a negative rf_err
 * (RF_E_STORE_UNAVAILABLE for a NULL store). */
int rf_store_schema_version(struct rf_store *st);

/* Appends one scan (its rendered hardware JSON, len bytes, valid JSON) to the scan history
 * and deletes all but the newest keep_last rows (keep_last <= 0: keeps all), in one
 * transaction. Returns 0 or a negative rf_err: RF_E_STORE_UNAVAILABLE when the database is
 * locked past the busy timeout, full, read-only or failing; RF_E_INVALID_VALUE for a negative
 * time or duration or JSON the schema rejects; RF_E_NOMEM. Safe to call from the scan worker
 * thread while the loop thread reads: each call holds the connection for its whole duration. */
int rf_store_scan_append(struct rf_store *st, int64_t scanned_at_ms, double duration_ms,
			 const char *hardware_json, size_t len, int keep_last);

/* Lists scans newest first (see struct api_store.scan_list); limit is clamped to [1, 1000].
 * With no row, *rows is NULL and *n is 0. On error the outputs are not written. */
int rf_store_scan_list(struct rf_store *st, int64_t before_id, int limit,
		       struct api_scan_row **rows /* OUT */, int *n /* OUT */);

/* Returns the api_store interface that handlers use, backed by st (NULL st: unavailable). */
struct api_store rf_store_api(struct rf_store *st);

#endif
