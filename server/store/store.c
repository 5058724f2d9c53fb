/*
 * The SQLite store (see store.h): one serialized connection per handle, opened in WAL mode with
 * a busy timeout, checked (quick_check) before anything is written, and brought up to date by
 * the embedded migrations, each in its own BEGIN IMMEDIATE ... COMMIT together with its
 * PRAGMA user_version. A file that is not a SQLite database, is corrupt, belongs to another
 * program or was made by a newer rigfit is refused before the first write, so opening the
 * wrong path can never damage it.
 *
 * Every statement that takes a value is prepared once at open and bound at each call. The
 * handle is shared by the loop thread and the scan worker: each public call holds the
 * connection's own (recursive) mutex for its whole duration, so a transaction and the shared
 * prepared statements are never interleaved with another thread's call.
 */
#include "server/store/store.h"
#include "server/store/store_bench.h"
#include "server/store/store_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "server/log.h"

#define STORE_BUSY_TIMEOUT_MS 2000
/* A write waiting for another connection's lock tries again this often. */
#define STORE_WRITE_RETRY_MS 10
#define STORE_LIST_MAX 1000
#define STORE_DIR_MAX 4096
#define STORE_MAX_MIGRATIONS 9999
/* The largest hardware JSON a scan may store; a real one is a few KiB. */
#define STORE_MAX_SCAN_JSON (16 * 1024 * 1024)
/* SQLite failures logged per window; more are counted and reported once. */
#define STORE_LOG_WINDOW_MS 10000
#define STORE_LOG_PER_WINDOW 5
#define STORE_MSG_MAX 320

/* The last failure and the log's rate limit, shared by every thread. */
static pthread_mutex_t store_err_mx = PTHREAD_MUTEX_INITIALIZER;
static struct rf_store_error store_err_last;
static bool store_err_any;
static int64_t store_log_window_ms;
static int store_log_in_window;
static unsigned long store_log_suppressed;

static int64_t store_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void rf_store_note_error(int code, const char *message)
{
	int64_t now = store_wall_ms();
	unsigned long suppressed = 0;
	bool log_it;

	pthread_mutex_lock(&store_err_mx);
	store_err_last.code = code;
	snprintf(store_err_last.message, sizeof(store_err_last.message), "%s",
		 message ? message : "");
	for (char *p = store_err_last.message; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	store_err_last.at_ms = now;
	store_err_any = true;
	if (now - store_log_window_ms >= STORE_LOG_WINDOW_MS) {
		suppressed = store_log_suppressed;
		store_log_suppressed = 0;
		store_log_window_ms = now;
		store_log_in_window = 0;
	}
	log_it = store_log_in_window < STORE_LOG_PER_WINDOW;
	if (log_it)
		store_log_in_window++;
	else
		store_log_suppressed++;
	pthread_mutex_unlock(&store_err_mx);
	if (suppressed)
		rf_log_warn("store: %lu more SQLite failures were not logged", suppressed);
	if (log_it)
		rf_log_warn("store: SQLite error %d (%s): %.200s", code,
			    code ? sqlite3_errstr(code) : "check", message ? message : "");
}

bool rf_store_last_error(struct rf_store_error *out)
{
	bool any;

	pthread_mutex_lock(&store_err_mx);
	any = store_err_any;
	if (any)
		*out = store_err_last;
	pthread_mutex_unlock(&store_err_mx);
	return any;
}

/* SQLite's error log callback. Notices (a WAL recovered), warnings (an automatic index),
 * schema changes (retried by SQLite) and constraints (a client's invalid value, answered 422)
 * are not store failures. */
static void store_sqlite_log(void *arg, int code, const char *msg)
{
	(void)arg;
	switch (code & 0xff) {
	case SQLITE_OK:
	case SQLITE_NOTICE:
	case SQLITE_WARNING:
	case SQLITE_SCHEMA:
	case SQLITE_CONSTRAINT:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return;
	default:
		rf_store_note_error(code, msg);
	}
}

void rf_store_log_install(void)
{
	/* SQLITE_MISUSE once SQLite is initialized: the log is then simply not routed. */
	(void)sqlite3_config(SQLITE_CONFIG_LOG, store_sqlite_log, NULL);
}

static const char SQL_SCAN_INSERT[] =
	"INSERT INTO scans (scanned_at_ms, scan_duration_ms, hardware_json) VALUES (?1, ?2, ?3)";
/* Deletes every row older than the keep_last-th newest (bound as OFFSET keep_last - 1); with
 * fewer rows the subquery is NULL and nothing matches. */
static const char SQL_SCAN_TRIM[] = "DELETE FROM scans WHERE id < "
				    "(SELECT id FROM scans ORDER BY id DESC LIMIT 1 OFFSET ?1)";
static const char SQL_SCAN_LIST[] =
	"SELECT id, scanned_at_ms, scan_duration_ms, hardware_json FROM scans "
	"WHERE id < ?1 ORDER BY id DESC LIMIT ?2";

static void store_msg(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes a one-line message into errbuf (when there is one): a path or a SQLite message that
 * holds a newline must not break the one-line log the daemon writes. */
static void store_msg(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
	for (char *p = errbuf; *p; p++) {
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	}
}

int rf_store_sqlite_err(int src)
{
	switch (src & 0xff) {
	case SQLITE_NOMEM:
		return RF_E_NOMEM;
	case SQLITE_CONSTRAINT:
	case SQLITE_MISMATCH:
		return RF_E_INVALID_VALUE;
	case SQLITE_TOOBIG:
		return RF_E_TOO_LARGE;
	case SQLITE_MISUSE:
	case SQLITE_RANGE:
		return RF_E_INTERNAL;
	default:
		/* BUSY, LOCKED, FULL, IOERR, READONLY, CORRUPT, NOTADB, CANTOPEN, PERM, ERROR... */
		return RF_E_STORE_UNAVAILABLE;
	}
}

/* Returns advice to append to a message about SQLite error src: a file or directory that
 * cannot be written is the usual deployment mistake (a StateDirectory, a volume's owner). */
static const char *store_hint(int src)
{
	switch (src & 0xff) {
	case SQLITE_READONLY:
	case SQLITE_CANTOPEN:
	case SQLITE_PERM:
		return " (rigfit must be able to write the file and its directory)";
	default:
		return "";
	}
}

int rf_store_step_done(sqlite3_stmt *s)
{
	int src = sqlite3_step(s);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return src;
}

/* Reads PRAGMA user_version into *out. Returns SQLITE_OK or SQLite's error. */
static int store_read_version(struct rf_store *st, int *out /* OUT */)
{
	int src = sqlite3_step(st->version);

	if (src == SQLITE_ROW) {
		*out = sqlite3_column_int(st->version, 0);
		src = SQLITE_OK;
	}
	sqlite3_reset(st->version);
	return src == SQLITE_DONE ? SQLITE_ERROR : src;
}

/* Counts the objects (tables, indexes...) in the schema into *out. Returns SQLITE_OK or
 * SQLite's error. Used once at open and inside the first migration, so it is not kept. */
static int store_count_objects(sqlite3 *db, int *out /* OUT */)
{
	sqlite3_stmt *s = NULL;
	int src = sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1, &s, NULL);

	if (src == SQLITE_OK) {
		src = sqlite3_step(s);
		if (src == SQLITE_ROW) {
			*out = sqlite3_column_int(s, 0);
			src = SQLITE_OK;
		} else if (src == SQLITE_DONE) {
			src = SQLITE_ERROR;
		}
	}
	sqlite3_finalize(s);
	return src;
}

/* Runs PRAGMA quick_check(1), which reads every page of the file without writing, and writes
 * its first line ("ok" for a sound file) into verdict. Returns SQLITE_OK or SQLite's error
 * (a badly damaged file fails the statement itself with SQLITE_CORRUPT). */
static int store_quick_check(sqlite3 *db, char *verdict, size_t len)
{
	sqlite3_stmt *s = NULL;
	int src = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &s, NULL);

	if (src == SQLITE_OK) {
		src = sqlite3_step(s);
		if (src == SQLITE_ROW) {
			const unsigned char *t = sqlite3_column_text(s, 0);
			snprintf(verdict, len, "%s", t ? (const char *)t : "");
			src = t ? SQLITE_OK : SQLITE_NOMEM;
		} else if (src == SQLITE_DONE) {
			src = SQLITE_ERROR;
		}
	}
	sqlite3_finalize(s);
	return src;
}

/* Checks that the migration table is named 0001_*.sql, 0002_*.sql... in order, so that
 * migration N is always the same file whatever the build globbed. Writes their count to *n.
 * Returns 0 or RF_E_INTERNAL (the binary was built wrong). */
static int store_check_migrations(const struct rf_embedded_file *m, int *n /* OUT */, char *errbuf,
				  size_t errlen)
{
	int i;

	if (!m) {
		store_msg(errbuf, errlen, "no migration table was given");
		return RF_E_INTERNAL;
	}
	for (i = 0; m[i].name; i++) {
		const char *name = m[i].name;
		size_t len = strlen(name);
		int num = 0;

		if (i >= STORE_MAX_MIGRATIONS) {
			store_msg(errbuf, errlen, "more than %d migrations", STORE_MAX_MIGRATIONS);
			return RF_E_INTERNAL;
		}
		for (int k = 0; k < 4; k++) {
			if (name[k] < '0' || name[k] > '9') {
				num = -1;
				break;
			}
			num = num * 10 + (name[k] - '0');
		}
		if (num != i + 1 || name[4] != '_' || len < 10 ||
		    strcmp(name + len - 4, ".sql") != 0) {
			store_msg(errbuf, errlen,
				  "migration %d is named '%s'; expected %04d_<name>.sql", i + 1,
				  name, i + 1);
			return RF_E_INTERNAL;
		}
		if (!m[i].data) {
			store_msg(errbuf, errlen, "migration %s has no SQL", name);
			return RF_E_INTERNAL;
		}
	}
	*n = i;
	return 0;
}

/* Creates the parent directory of path when it is missing (one level, like ./var). Returns 0
 * or RF_E_STORE_UNAVAILABLE with the reason in errbuf. */
static int store_make_parent(const char *path, char *errbuf, size_t errlen)
{
	char dir[STORE_DIR_MAX];
	const char *slash = strrchr(path, '/');
	struct stat sb;
	size_t len;

	if (!slash || slash == path)
		return 0;
	len = (size_t)(slash - path);
	if (len >= sizeof(dir)) {
		store_msg(errbuf, errlen, "database path is too long (%zu bytes)", strlen(path));
		return RF_E_STORE_UNAVAILABLE;
	}
	memcpy(dir, path, len);
	dir[len] = '\0';
	if (stat(dir, &sb) == 0) {
		if (!S_ISDIR(sb.st_mode)) {
			store_msg(errbuf, errlen,
				  "cannot open database '%s': '%s' is not a directory", path, dir);
			return RF_E_STORE_UNAVAILABLE;
		}
		return 0;
	}
	if (errno != ENOENT || (mkdir(dir, 0750) != 0 && errno != EEXIST)) {
		store_msg(errbuf, errlen, "cannot create directory '%s' for the database: %s", dir,
			  strerror(errno));
		return RF_E_STORE_UNAVAILABLE;
	}
	return 0;
}

/* What the authorizer saw while a migration ran. */
struct store_auth {
	const char *refused; /* the statement kind refused, or NULL */
};

/* Authorizer installed while a migration's SQL runs: a migration must not end, nest or step
 * around the transaction the store wraps it in, set user_version itself or attach another
 * file. Refusing at prepare time means the offending statement never runs, and the rollback
 * undoes whatever ran before it. */
static int store_migration_auth(void *ctx, int action, const char *a1, const char *a2,
				const char *a3, const char *a4)
{
	struct store_auth *auth = ctx;

	(void)a2;
	(void)a3;
	(void)a4;
	switch (action) {
	case SQLITE_TRANSACTION:
		auth->refused = "BEGIN/COMMIT/ROLLBACK";
		return SQLITE_DENY;
	case SQLITE_SAVEPOINT:
		auth->refused = "SAVEPOINT/RELEASE";
		return SQLITE_DENY;
	case SQLITE_ATTACH:
	case SQLITE_DETACH:
		auth->refused = "ATTACH/DETACH";
		return SQLITE_DENY;
	case SQLITE_PRAGMA:
		if (a1 && sqlite3_stricmp(a1, "user_version") == 0) {
			auth->refused = "PRAGMA user_version";
			return SQLITE_DENY;
		}
		return SQLITE_OK;
	default:
		return SQLITE_OK;
	}
}

/* Applies migration number v + 1 (m[v]) in one transaction with its user_version, unless
 * another process got there first. *done is set when no migration remains. Returns 0 or a
 * negative rf_err with the reason (naming the file and SQLite's error) in errbuf. */
static int store_migrate_one(struct rf_store *st, const char *path,
			     const struct rf_embedded_file *m, bool *done /* OUT */, char *errbuf,
			     size_t errlen)
{
	struct store_auth auth = {NULL};
	char sql[64], *emsg = NULL;
	int src, rc = 0, v = 0, objects = 0;
	const char *name = NULL;

	src = rf_store_step_done(st->begin);
	if (src != SQLITE_DONE) {
		store_msg(errbuf, errlen, "cannot upgrade database '%s': %s%s", path,
			  sqlite3_errmsg(st->db), store_hint(src));
		return rf_store_sqlite_err(src);
	}
	/* Read again under the write lock: a second rigfit may have migrated meanwhile. */
	src = store_read_version(st, &v);
	if (src == SQLITE_OK && v == 0)
		src = store_count_objects(st->db, &objects);
	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "cannot upgrade database '%s': %s", path,
			  sqlite3_errmsg(st->db));
		rc = rf_store_sqlite_err(src);
		goto out;
	}
	if (v >= st->n_migrations) {
		if (v > st->n_migrations) {
			store_msg(
				errbuf, errlen,
				"database '%s' has schema version %d but this rigfit knows %d: it "
				"was made by a newer rigfit",
				path, v, st->n_migrations);
			rc = RF_E_STORE_UNAVAILABLE;
			goto out;
		}
		*done = true;
		goto out;
	}
	if (v < 0 || (v == 0 && objects > 0)) {
		store_msg(errbuf, errlen,
			  "'%s' is a SQLite database but not a rigfit one (user_version %d); "
			  "refusing to change it",
			  path, v);
		rc = RF_E_STORE_UNAVAILABLE;
		goto out;
	}
	name = m[v].name;
	sqlite3_set_authorizer(st->db, store_migration_auth, &auth);
	src = sqlite3_exec(st->db, m[v].data, NULL, NULL, &emsg);
	sqlite3_set_authorizer(st->db, NULL, NULL);
	if (src != SQLITE_OK) {
		if (auth.refused)
			store_msg(
				errbuf, errlen,
				"migration %s failed: it contains %s, which the store does itself",
				name, auth.refused);
		else
			store_msg(errbuf, errlen, "migration %s failed: %s", name,
				  emsg ? emsg : sqlite3_errstr(src));
		/* A migration that fights the wrapper is a bug in the binary, not in the file. */
		rc = auth.refused ? RF_E_INTERNAL : rf_store_sqlite_err(src);
		goto out;
	}
	/* PRAGMA takes no bound parameter; v + 1 is our own counter, never outside input. */
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v + 1);
	src = sqlite3_exec(st->db, sql, NULL, NULL, &emsg);
	if (src == SQLITE_OK)
		src = rf_store_step_done(st->commit);
	if (src != SQLITE_OK && src != SQLITE_DONE) {
		store_msg(errbuf, errlen, "migration %s failed: %s", name,
			  emsg ? emsg : sqlite3_errmsg(st->db));
		rc = rf_store_sqlite_err(src);
		goto out;
	}
	*done = v + 1 >= st->n_migrations;
out:
	sqlite3_free(emsg);
	if (!sqlite3_get_autocommit(st->db))
		rf_store_step_done(rc < 0 ? st->rollback : st->commit);
	return rc;
}

/* Prepares one statement of the handle. Returns 0 or a negative rf_err with errbuf set. */
static int store_prepare(struct rf_store *st, const char *path, const char *sql, sqlite3_stmt **out,
			 char *errbuf, size_t errlen)
{
	int src = sqlite3_prepare_v2(st->db, sql, -1, out, NULL);

	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "cannot use database '%s': %s", path,
			  sqlite3_errmsg(st->db));
		return rf_store_sqlite_err(src);
	}
	return 0;
}

/* Checks the file before the first write: readable as SQLite, writable, sound (quick_check),
 * not from a newer rigfit and not another program's database. Returns 0 or a negative rf_err
 * with the reason in errbuf. */
static int store_check_file(struct rf_store *st, const char *path, bool rw, char *errbuf,
			    size_t errlen)
{
	char verdict[256];
	int src, v = 0, objects = 0;

	/* The first read of page 1: a file that is not a database fails here. */
	src = store_read_version(st, &v);
	if (src == SQLITE_OK)
		src = store_count_objects(st->db, &objects);
	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "%s database '%s': %s%s",
			  (src & 0xff) == SQLITE_CORRUPT ? "corrupt" : "cannot open", path,
			  sqlite3_errmsg(st->db), store_hint(src));
		return rf_store_sqlite_err(src);
	}
	if (rw && sqlite3_db_readonly(st->db, "main") == 1) {
		store_msg(errbuf, errlen,
			  "database '%s' is read-only (check the permissions of the file and its "
			  "directory)",
			  path);
		return RF_E_STORE_UNAVAILABLE;
	}
	/* An existing file was checked read-only first (store_check_readonly); a new one is empty. */
	src = rw ? SQLITE_OK : store_quick_check(st->db, verdict, sizeof(verdict));
	if (!rw && src == SQLITE_OK && strcmp(verdict, "ok") != 0) {
		store_msg(errbuf, errlen, "database '%s' is corrupt: %s", path, verdict);
		return RF_E_STORE_UNAVAILABLE;
	}
	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "database '%s' is corrupt: %s", path,
			  sqlite3_errmsg(st->db));
		return rf_store_sqlite_err(src) == RF_E_NOMEM ? RF_E_NOMEM : RF_E_STORE_UNAVAILABLE;
	}
	if (v > st->n_migrations) {
		store_msg(errbuf, errlen,
			  "database '%s' has schema version %d but this rigfit knows %d: it was "
			  "made by a newer rigfit",
			  path, v, st->n_migrations);
		return RF_E_STORE_UNAVAILABLE;
	}
	if (v < 0 || (v == 0 && objects > 0)) {
		store_msg(errbuf, errlen,
			  "'%s' is a SQLite database but not a rigfit one (user_version %d); "
			  "refusing to change it",
			  path, v);
		return RF_E_STORE_UNAVAILABLE;
	}
	return 0;
}

/* Sets the connection's pragmas: WAL (readers never wait for the writer), NORMAL sync (safe
 * with WAL: a power cut may lose the last commits, never consistency), foreign keys. Returns 0
 * or a negative rf_err with errbuf set. */
static int store_configure(struct rf_store *st, const char *path, char *errbuf, size_t errlen)
{
	sqlite3_stmt *s = NULL;
	char *emsg = NULL;
	int src, rc = 0;

	src = sqlite3_prepare_v2(st->db, "PRAGMA journal_mode = WAL", -1, &s, NULL);
	if (src == SQLITE_OK) {
		src = sqlite3_step(s);
		/* The answer is the mode now in force; a file system without shared memory keeps
		 * the rollback journal, which is slower but correct, so that is not an error. */
		if (src == SQLITE_ROW || src == SQLITE_DONE)
			src = SQLITE_OK;
	}
	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "cannot set WAL mode on database '%s': %s%s", path,
			  sqlite3_errmsg(st->db), store_hint(src));
		rc = rf_store_sqlite_err(src);
		goto out;
	}
	src = sqlite3_exec(st->db, "PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL", NULL,
			   NULL, &emsg);
	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "cannot configure database '%s': %s", path,
			  emsg ? emsg : sqlite3_errstr(src));
		rc = rf_store_sqlite_err(src);
	}
out:
	sqlite3_finalize(s);
	sqlite3_free(emsg);
	return rc;
}

/* Opens the read connection (see struct rf_store) once the schema is current. Returns 0 or a
 * negative rf_err with errbuf set. */
static int store_open_reader(struct rf_store *st, const char *path, char *errbuf, size_t errlen)
{
	int src = sqlite3_open_v2(path, &st->rdb, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX,
				  NULL);

	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "cannot open database '%s' for reading: %s%s", path,
			  st->rdb ? sqlite3_errmsg(st->rdb) : sqlite3_errstr(src), store_hint(src));
		return rf_store_sqlite_err(src);
	}
	sqlite3_extended_result_codes(st->rdb, 1);
	sqlite3_busy_timeout(st->rdb, STORE_BUSY_TIMEOUT_MS);
	sqlite3_db_config(st->rdb, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	/* Only the read statements run here; a write through it would be a bug. */
	sqlite3_exec(st->rdb, "PRAGMA query_only = 1", NULL, NULL, NULL);
	return 0;
}

/* The files SQLite keeps beside a database: the database itself first. */
static const char *const store_side_suffix[] = {"", "-wal", "-shm", "-journal"};
#define STORE_SIDE_N 4

/* Writes path + the side suffix i into buf (size len). Returns false when it does not fit. */
static bool store_side_name(const char *path, int i, char *buf, size_t len)
{
	return (size_t)snprintf(buf, len, "%s%s", path, store_side_suffix[i]) < len;
}

/* Records which of the database's files exist now. */
static void store_side_exist(const char *path, bool had[STORE_SIDE_N] /* OUT */)
{
	char name[STORE_DIR_MAX + 16];

	for (int i = 0; i < STORE_SIDE_N; i++)
		had[i] = store_side_name(path, i, name, sizeof(name)) && access(name, F_OK) == 0;
}

/* Removes the -wal, -shm and -journal files that did not exist before a refused open (had),
 * so that a refusal leaves none behind: a -shm made by a read-only attempt would break the
 * next start. (A database file it created keeps the migrations that did commit.) */
static void store_side_remove_new(const char *path, const bool had[STORE_SIDE_N])
{
	char name[STORE_DIR_MAX + 16];

	for (int i = STORE_SIDE_N - 1; i >= 1; i--)
		if (!had[i] && store_side_name(path, i, name, sizeof(name)))
			(void)unlink(name);
}

/* Refuses, before SQLite touches anything, a database that this process cannot write: the
 * file, its -wal or -shm, or the directory where SQLite makes them. Returns 0 or
 * RF_E_STORE_UNAVAILABLE with the reason in errbuf. */
static int store_check_access(const char *path, const bool had[STORE_SIDE_N], char *errbuf,
			      size_t errlen)
{
	char name[STORE_DIR_MAX + 16];
	const char *slash = strrchr(path, '/');

	for (int i = 0; i < 3; i++) {
		if (!had[i] || !store_side_name(path, i, name, sizeof(name)) ||
		    access(name, R_OK | W_OK) == 0)
			continue;
		if (i == 0)
			store_msg(
				errbuf, errlen,
				"database '%s' is read-only (rigfit must be able to write the file "
				"and its directory)",
				path);
		else
			store_msg(
				errbuf, errlen,
				"'%s' cannot be written (left by a run that could not write?): fix "
				"its permissions, or delete it while no rigfit runs",
				name);
		return RF_E_STORE_UNAVAILABLE;
	}
	if (slash && (size_t)(slash - path) < sizeof(name)) {
		memcpy(name, path, (size_t)(slash - path));
		name[slash == path ? 1 : (size_t)(slash - path)] = '\0';
	} else {
		snprintf(name, sizeof(name), ".");
	}
	if (access(name, W_OK | X_OK) != 0) {
		store_msg(errbuf, errlen,
			  "cannot use database '%s': directory '%s' is not writable (SQLite makes "
			  "its -wal and -shm files there)",
			  path, name);
		return RF_E_STORE_UNAVAILABLE;
	}
	return 0;
}

/* Checks an existing database on a read-only connection before any read-write one opens it:
 * a SQLite file, sound (quick_check), a rigfit one, not from a newer rigfit. Returns 0 or a
 * negative rf_err with the reason in errbuf. */
static int store_check_readonly(const char *path, int n_migrations, char *errbuf, size_t errlen)
{
	struct rf_store ro;
	int rc, src;

	memset(&ro, 0, sizeof(ro));
	ro.n_migrations = n_migrations;
	src = sqlite3_open_v2(path, &ro.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_FULLMUTEX, NULL);
	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "cannot open database '%s': %s%s", path,
			  ro.db ? sqlite3_errmsg(ro.db) : sqlite3_errstr(src), store_hint(src));
		rc = rf_store_sqlite_err(src);
	} else {
		sqlite3_extended_result_codes(ro.db, 1);
		sqlite3_busy_timeout(ro.db, STORE_BUSY_TIMEOUT_MS);
		rc = store_prepare(&ro, path, "PRAGMA user_version", &ro.version, errbuf, errlen);
		if (rc == 0)
			rc = store_check_file(&ro, path, false, errbuf, errlen);
	}
	sqlite3_finalize(ro.version);
	sqlite3_close_v2(ro.db);
	return rc;
}

/* Openings so far in this process: each store handle's epoch (see store_priv.h). */
static atomic_uint_fast64_t store_openings;

int rf_store_open(const char *path, const struct rf_embedded_file *migrations,
		  struct rf_store **out, char *errbuf, size_t errlen)
{
	struct rf_store *st = NULL;
	bool done = false, had[STORE_SIDE_N];
	struct stat sb;
	int rc, src, n = 0, v = 0;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (out)
		*out = NULL;
	if (!out || !path || !*path) {
		store_msg(errbuf, errlen, "no database path was given");
		return RF_E_STORE_UNAVAILABLE;
	}
	rc = store_check_migrations(migrations, &n, errbuf, errlen);
	if (rc < 0)
		return rc;
	rc = store_make_parent(path, errbuf, errlen);
	if (rc < 0)
		return rc;
	store_side_exist(path, had);
	rc = store_check_access(path, had, errbuf, errlen);
	if (rc < 0)
		return rc;
	if (had[0] && (rc = store_check_readonly(path, n, errbuf, errlen)) < 0) {
		store_side_remove_new(path, had);
		return rc;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		store_msg(errbuf, errlen, "out of memory opening database '%s'", path);
		return RF_E_NOMEM;
	}
	st->n_migrations = n;
	st->epoch = atomic_fetch_add(&store_openings, 1) + 1;
	src = sqlite3_open_v2(path, &st->db,
			      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
			      NULL);
	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "cannot open database '%s': %s%s", path,
			  st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(src), store_hint(src));
		rc = rf_store_sqlite_err(src);
		goto out;
	}
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
	st->busy_ms = STORE_BUSY_TIMEOUT_MS;
	/* Refuses writes that could corrupt the file even through SQL (writable_schema...). */
	sqlite3_db_config(st->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);

	if ((rc = store_prepare(st, path, "PRAGMA user_version", &st->version, errbuf, errlen)) < 0)
		goto out;
	/* Nothing has been written yet: a wrong file is refused untouched. */
	if ((rc = store_check_file(st, path, true, errbuf, errlen)) < 0)
		goto out;
	if ((rc = store_configure(st, path, errbuf, errlen)) < 0)
		goto out;
	if ((rc = store_prepare(st, path, "BEGIN IMMEDIATE", &st->begin, errbuf, errlen)) < 0 ||
	    (rc = store_prepare(st, path, "COMMIT", &st->commit, errbuf, errlen)) < 0 ||
	    (rc = store_prepare(st, path, "ROLLBACK", &st->rollback, errbuf, errlen)) < 0)
		goto out;

	src = store_read_version(st, &v);
	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "cannot read database '%s': %s%s", path,
			  sqlite3_errmsg(st->db), store_hint(src));
		rc = rf_store_sqlite_err(src);
		goto out;
	}
	done = v >= n;
	while (!done) {
		rc = store_migrate_one(st, path, migrations, &done, errbuf, errlen);
		if (rc < 0)
			goto out;
	}

	if ((rc = store_open_reader(st, path, errbuf, errlen)) < 0)
		goto out;
	if ((rc = store_prepare(st, path, SQL_SCAN_INSERT, &st->scan_insert, errbuf, errlen)) < 0 ||
	    (rc = store_prepare(st, path, SQL_SCAN_TRIM, &st->scan_trim, errbuf, errlen)) < 0)
		goto out;
	src = sqlite3_prepare_v2(st->rdb, SQL_SCAN_LIST, -1, &st->scan_list, NULL);
	if (src != SQLITE_OK) {
		store_msg(errbuf, errlen, "cannot use database '%s': %s", path,
			  sqlite3_errmsg(st->rdb));
		rc = rf_store_sqlite_err(src);
		goto out;
	}
	if ((rc = rf_store_profiles_prepare(st, errbuf, errlen)) < 0)
		goto out;
	st->path = strdup(path);
	if (!st->path || stat(path, &sb) != 0) {
		store_msg(errbuf, errlen, "cannot use database '%s': %s", path,
			  st->path ? strerror(errno) : "out of memory");
		rc = st->path ? RF_E_STORE_UNAVAILABLE : RF_E_NOMEM;
		goto out;
	}
	st->dev = (uint64_t)sb.st_dev;
	st->ino = (uint64_t)sb.st_ino;
	*out = st;
	st = NULL;
	rc = 0;
out:
	if (st) {
		rf_store_close(st);
		store_side_remove_new(path, had);
	}
	return rc;
}

int rf_store_set_busy_timeout(struct rf_store *st, int ms)
{
	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (ms < 0)
		return RF_E_INVALID_VALUE;
	st->busy_ms = ms;
	if (st->rdb)
		sqlite3_busy_timeout(st->rdb, ms);
	return sqlite3_busy_timeout(st->db, ms) == SQLITE_OK ? 0 : RF_E_INTERNAL;
}

void rf_store_close(struct rf_store *st)
{
	if (!st)
		return;
	sqlite3_finalize(st->begin);
	sqlite3_finalize(st->commit);
	sqlite3_finalize(st->rollback);
	sqlite3_finalize(st->version);
	sqlite3_finalize(st->scan_insert);
	sqlite3_finalize(st->scan_trim);
	sqlite3_finalize(st->scan_list);
	rf_store_profiles_finalize(st);
	rf_store_bench_finalize(st);
	/* Every statement is finalized, so the close is immediate; the last connection (the
	 * writer, closed last) also checkpoints the WAL into the main file. */
	sqlite3_close_v2(st->rdb);
	sqlite3_close_v2(st->db);
	free(st->path);
	free(st);
}

int rf_store_check_linked(struct rf_store *st, char *msg, size_t msglen)
{
	char why[STORE_MSG_MAX];
	struct stat sb;
	const char *what;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (stat(st->path, &sb) != 0)
		what = errno == ENOENT || errno == ENOTDIR ? "deleted" : "made unreachable";
	else if ((uint64_t)sb.st_dev != st->dev || (uint64_t)sb.st_ino != st->ino)
		what = "replaced";
	else
		return 0;
	snprintf(why, sizeof(why), "database '%.200s' was %s while open; no write goes into it",
		 st->path, what);
	rf_store_note_error(0, why);
	store_msg(msg, msglen, "%s", why);
	return RF_E_STORE_UNAVAILABLE;
}

int rf_store_schema_version(struct rf_store *st)
{
	sqlite3_mutex *mx;
	int src, v = 0;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	mx = sqlite3_db_mutex(st->db);
	sqlite3_mutex_enter(mx);
	src = store_read_version(st, &v);
	sqlite3_mutex_leave(mx);
	return src == SQLITE_OK ? v : rf_store_sqlite_err(src);
}

/* True only when SQLite, asked on its own, says json (len bytes) is not valid JSON; false when
 * it is valid or the question itself failed (out of memory). */
static bool json_known_invalid(struct rf_store *st, const char *json, size_t len)
{
	sqlite3_stmt *s = NULL;
	bool invalid = false;

	if (sqlite3_prepare_v2(st->db, "SELECT json_valid(?1)", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_bind_text64(s, 1, json, (sqlite3_uint64)len, SQLITE_STATIC, SQLITE_UTF8) ==
		    SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		invalid = sqlite3_column_type(s, 0) == SQLITE_INTEGER &&
			  sqlite3_column_int(s, 0) == 0;
	sqlite3_finalize(s);
	return invalid;
}

int rf_store_scan_append(struct rf_store *st, int64_t scanned_at_ms, double duration_ms,
			 const char *hardware_json, size_t len, int keep_last)
{
	sqlite3_mutex *mx;
	int rc = 0, src;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!hardware_json || scanned_at_ms < 0 || !isfinite(duration_ms) || duration_ms < 0)
		return RF_E_INVALID_VALUE;
	if (len > STORE_MAX_SCAN_JSON)
		return RF_E_TOO_LARGE;

	mx = sqlite3_db_mutex(st->db);
	src = rf_store_begin_write(st);
	if (src != SQLITE_DONE)
		goto out;
	src = sqlite3_bind_int64(st->scan_insert, 1, scanned_at_ms);
	if (src == SQLITE_OK)
		src = sqlite3_bind_double(st->scan_insert, 2, duration_ms);
	if (src == SQLITE_OK)
		src = sqlite3_bind_text64(st->scan_insert, 3, hardware_json, (sqlite3_uint64)len,
					  SQLITE_STATIC, SQLITE_UTF8);
	if (src != SQLITE_OK)
		goto out;
	src = rf_store_step_done(st->scan_insert);
	/* SQLite's json_valid answers false when it runs out of memory parsing: the CHECK then
	 * fails on valid JSON. Asked again, a JSON that really is invalid still fails. */
	if ((src & 0xff) == SQLITE_CONSTRAINT && !json_known_invalid(st, hardware_json, len))
		src = SQLITE_NOMEM;
	if (src != SQLITE_DONE)
		goto out;
	if (keep_last > 0) {
		/* OFFSET keep_last - 1 names the oldest row to keep; older ones go. */
		src = sqlite3_bind_int(st->scan_trim, 1, keep_last - 1);
		if (src != SQLITE_OK)
			goto out;
		src = rf_store_step_done(st->scan_trim);
		if (src != SQLITE_DONE)
			goto out;
	}
	src = rf_store_step_done(st->commit);
out:
	if (src != SQLITE_DONE && src != SQLITE_OK)
		rc = rf_store_sqlite_err(src);
	/* A failed COMMIT (or step) may leave the transaction open; never leave it so. */
	if (!sqlite3_get_autocommit(st->db))
		rf_store_step_done(st->rollback);
	sqlite3_clear_bindings(st->scan_insert);
	sqlite3_mutex_leave(mx);
	return rc;
}

int rf_store_begin_write(struct rf_store *st)
{
	sqlite3_mutex *mx = sqlite3_db_mutex(st->db);
	const struct timespec tick = {0, STORE_WRITE_RETRY_MS * 1000000L};
	int src;

	/* A deleted file would take the write and lose it with the process. */
	if (rf_store_check_linked(st, NULL, 0) < 0) {
		sqlite3_mutex_enter(mx);
		return SQLITE_IOERR;
	}
	for (int waited = 0;; waited += STORE_WRITE_RETRY_MS) {
		sqlite3_mutex_enter(mx);
		/* SQLite's own busy handler would sleep holding the mutex: try once instead. */
		sqlite3_busy_timeout(st->db, 0);
		src = rf_store_step_done(st->begin);
		sqlite3_busy_timeout(st->db, st->busy_ms);
		if ((src & 0xff) == SQLITE_BUSY && waited >= st->busy_ms) {
			/* SQLite does not log a busy statement (it could be retried): we do. */
			char why[STORE_MSG_MAX];
			snprintf(why, sizeof(why),
				 "database is locked by another process: a write waited %d ms",
				 waited);
			rf_store_note_error(src, why);
		}
		if ((src & 0xff) != SQLITE_BUSY || waited >= st->busy_ms)
			return src;
		sqlite3_mutex_leave(mx);
		nanosleep(&tick, NULL);
	}
}

void *rf_store_grow(void *arr, int *cap, int limit, size_t elem)
{
	int ncap = *cap ? *cap * 2 : 16;
	void *grown;

	if (ncap > limit)
		ncap = limit;
	grown = realloc(arr, (size_t)ncap * elem);
	if (grown)
		*cap = ncap;
	return grown;
}

int rf_store_scan_list(struct rf_store *st, int64_t before_id, int limit,
		       struct api_scan_row **rows, int *n)
{
	struct api_scan_row *arr = NULL;
	sqlite3_stmt *s;
	sqlite3_mutex *mx;
	int count = 0, cap = 0, rc = 0, src;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!rows || !n)
		return RF_E_INTERNAL;
	if (limit < 1)
		limit = 1;
	if (limit > STORE_LIST_MAX)
		limit = STORE_LIST_MAX;

	s = st->scan_list;
	mx = sqlite3_db_mutex(st->rdb);
	sqlite3_mutex_enter(mx);
	src = sqlite3_bind_int64(s, 1, before_id > 0 ? before_id : INT64_MAX);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int(s, 2, limit);
	if (src != SQLITE_OK) {
		rc = rf_store_sqlite_err(src);
		goto out;
	}
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		struct api_scan_row *row;
		const unsigned char *text;
		int tlen;

		if (count == cap) {
			void *grown = rf_store_grow(arr, &cap, limit, sizeof(*arr));

			if (!grown) {
				rc = RF_E_NOMEM;
				goto out;
			}
			arr = grown;
		}
		text = sqlite3_column_text(s, 3);
		tlen = sqlite3_column_bytes(s, 3);
		if (!text) {
			/* The column is NOT NULL: no text means SQLite ran out of memory. */
			rc = sqlite3_errcode(st->rdb) == SQLITE_NOMEM ? RF_E_NOMEM :
									RF_E_STORE_UNAVAILABLE;
			goto out;
		}
		row = &arr[count];
		row->hardware_json = malloc((size_t)tlen + 1);
		if (!row->hardware_json) {
			rc = RF_E_NOMEM;
			goto out;
		}
		memcpy(row->hardware_json, text, (size_t)tlen);
		row->hardware_json[tlen] = '\0';
		row->id = sqlite3_column_int64(s, 0);
		row->scanned_at_ms = sqlite3_column_int64(s, 1);
		row->scan_duration_ms = sqlite3_column_double(s, 2);
		count++;
	}
	if (src != SQLITE_DONE)
		rc = rf_store_sqlite_err(src);
out:
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	sqlite3_mutex_leave(mx);
	if (rc < 0) {
		api_scan_rows_free(arr, count);
		return rc;
	}
	*rows = arr;
	*n = count;
	return 0;
}

/* The api_store.scan_list entry: the store handle travels as ctx. */
static int store_api_scan_list(void *ctx, int64_t before_id, int limit, struct api_scan_row **rows,
			       int *n)
{
	return rf_store_scan_list(ctx, before_id, limit, rows, n);
}

struct api_store rf_store_api(struct rf_store *st)
{
	struct api_store api = {
		.ctx = st,
		.available = st != NULL,
		.scan_list = store_api_scan_list,
	};
	rf_store_profiles_api(&api);
	rf_store_bench_api(&api);
	return api;
}
