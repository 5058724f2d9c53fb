/*
 * The benchmark history (see store_bench.h). Inserting is one BEGIN IMMEDIATE transaction:
 * INSERT ... ON CONFLICT(run_id) DO NOTHING, then, when nothing was inserted, the id of the
 * run already there, so two clients recording the same run at once both learn its id and only
 * one row exists.
 *
 * The listing query is built from fixed fragments for the filters actually given (every value
 * is still bound), so SQLite can pick the index that fits (by model, by hardware, by time)
 * instead of one plan with "?1 IS NULL OR ..." that uses none. There are 16 such texts; each is
 * prepared at its first use and kept (every estimate lists its hardware's runs, and parsing
 * and planning the query cost more than running it). The other statements are prepared at
 * each call.
 */
#include "server/store/store_bench.h"
#include "server/store/store_priv.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

#define BENCH_LIST_MAX 1000

static const char SQL_INSERT[] =
	"INSERT INTO benchmarks (run_id, hardware_fingerprint, model, precision, backend, runtime, "
	"runtime_version, settings, prompt_tokens, generated_tokens, prefill_tokens_per_s, "
	"decode_tokens_per_s, peak_memory, source, measured_at) "
	"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) "
	"ON CONFLICT (run_id) DO NOTHING";
static const char SQL_FIND[] = "SELECT id FROM benchmarks WHERE run_id = ?1";
static const char SQL_DELETE[] = "DELETE FROM benchmarks WHERE id = ?1";
/* The columns every read returns, in the order bench_row reads them. */
#define BENCH_COLUMNS                                                                              \
	"SELECT id, run_id, hardware_fingerprint, model, precision, backend, runtime, "            \
	"runtime_version, settings, prompt_tokens, generated_tokens, prefill_tokens_per_s, "       \
	"decode_tokens_per_s, peak_memory, source, measured_at, created_at FROM benchmarks "
static const char SQL_GET[] = BENCH_COLUMNS "WHERE id = ?1";

/* Binds text that may be "" (then NULL, for the optional columns) or NULL. */
static int bind_text(sqlite3_stmt *s, int i, const char *v, bool empty_is_null)
{
	if (!v || (empty_is_null && !*v))
		return sqlite3_bind_null(s, i);
	return sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC);
}

/* Binds a speed: <= 0 (or not a number) means not measured, NULL. */
static int bind_speed(sqlite3_stmt *s, int i, double v)
{
	if (!isfinite(v) || v <= 0)
		return sqlite3_bind_null(s, i);
	return sqlite3_bind_double(s, i, v);
}

/* Prepares sql on st's connection. Returns SQLite's result. */
static int bench_prepare(struct rf_store *st, const char *sql, sqlite3_stmt **s)
{
	return sqlite3_prepare_v2(st->db, sql, -1, s, NULL);
}

int rf_store_bench_insert(struct rf_store *st, const struct api_bench_run *run, int64_t *id,
			  bool *existed)
{
	sqlite3_stmt *ins = NULL, *find = NULL;
	sqlite3_mutex *mx;
	int64_t got = 0;
	bool was = false;
	int rc = 0, src;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!run || !id || !existed)
		return RF_E_INTERNAL;
	mx = sqlite3_db_mutex(st->db);
	/* Takes the mutex; waits for another process's write lock without holding it. */
	src = rf_store_begin_write(st);
	if (src != SQLITE_DONE)
		goto out;
	src = bench_prepare(st, SQL_INSERT, &ins);
	if (src == SQLITE_OK)
		src = bench_prepare(st, SQL_FIND, &find);
	if (src != SQLITE_OK)
		goto out;
	src = bind_text(ins, 1, run->run_id, false);
	if (src == SQLITE_OK)
		src = bind_text(ins, 2, run->hardware_fingerprint, false);
	if (src == SQLITE_OK)
		src = bind_text(ins, 3, run->model, false);
	if (src == SQLITE_OK)
		src = bind_text(ins, 4, run->precision, false);
	if (src == SQLITE_OK)
		src = bind_text(ins, 5, run->backend, false);
	if (src == SQLITE_OK)
		src = bind_text(ins, 6, run->runtime, false);
	if (src == SQLITE_OK)
		src = bind_text(ins, 7, run->runtime_version, true);
	if (src == SQLITE_OK)
		src = bind_text(ins, 8, run->settings_json ? run->settings_json : "{}", false);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int64(ins, 9, run->prompt_tokens);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int64(ins, 10, run->generated_tokens);
	if (src == SQLITE_OK)
		src = bind_speed(ins, 11, run->prefill_tokens_per_s);
	if (src == SQLITE_OK)
		src = bind_speed(ins, 12, run->decode_tokens_per_s);
	if (src == SQLITE_OK)
		src = bind_text(ins, 13, run->peak_memory_json, true);
	if (src == SQLITE_OK)
		src = bind_text(ins, 14, run->source[0] ? run->source : "api", false);
	if (src == SQLITE_OK)
		src = bind_text(ins, 15, run->measured_at, false);
	if (src != SQLITE_OK)
		goto out;
	src = rf_store_step_done(ins);
	if (src != SQLITE_DONE)
		goto out;
	if (sqlite3_changes(st->db) > 0) {
		got = sqlite3_last_insert_rowid(st->db);
	} else {
		was = true;
		src = bind_text(find, 1, run->run_id, false);
		if (src != SQLITE_OK)
			goto out;
		src = sqlite3_step(find);
		if (src == SQLITE_ROW) {
			got = sqlite3_column_int64(find, 0);
			src = SQLITE_OK;
		} else if (src == SQLITE_DONE) {
			/* DO NOTHING without a row of that run_id cannot happen in one transaction. */
			rc = RF_E_INTERNAL;
		}
		sqlite3_reset(find);
		if (rc < 0 || src != SQLITE_OK)
			goto out;
	}
	src = rf_store_step_done(st->commit);
out:
	if (rc == 0 && src != SQLITE_DONE && src != SQLITE_OK)
		rc = rf_store_sqlite_err(src);
	if (!sqlite3_get_autocommit(st->db))
		rf_store_step_done(st->rollback);
	sqlite3_finalize(ins);
	sqlite3_finalize(find);
	sqlite3_mutex_leave(mx);
	if (rc == 0) {
		*id = got;
		*existed = was;
	}
	return rc;
}

/* Copies column i (text or NULL) into dst of size len; NULL gives "". */
static void col_text(sqlite3_stmt *s, int i, char *dst, size_t len)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	snprintf(dst, len, "%s", t ? (const char *)t : "");
}

/* Returns a malloc'd copy of text column i, NULL when the column is NULL; *oom is set when
 * memory ran out. */
static char *col_dup(sqlite3_stmt *s, int i, bool *oom)
{
	const unsigned char *t;
	char *copy;
	int len;

	if (sqlite3_column_type(s, i) == SQLITE_NULL)
		return NULL;
	t = sqlite3_column_text(s, i);
	len = sqlite3_column_bytes(s, i);
	copy = t ? malloc((size_t)len + 1) : NULL;
	if (!copy) {
		*oom = true;
		return NULL;
	}
	memcpy(copy, t, (size_t)len);
	copy[len] = '\0';
	return copy;
}

/* Reads the current row of s (BENCH_COLUMNS) into r. Returns 0 or RF_E_NOMEM (r's owned
 * members are then freed by the caller's api_bench_runs_free). */
static int bench_row(sqlite3_stmt *s, struct api_bench_run *r)
{
	bool oom = false;

	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(s, 0);
	col_text(s, 1, r->run_id, sizeof(r->run_id));
	col_text(s, 2, r->hardware_fingerprint, sizeof(r->hardware_fingerprint));
	col_text(s, 3, r->model, sizeof(r->model));
	col_text(s, 4, r->precision, sizeof(r->precision));
	col_text(s, 5, r->backend, sizeof(r->backend));
	col_text(s, 6, r->runtime, sizeof(r->runtime));
	col_text(s, 7, r->runtime_version, sizeof(r->runtime_version));
	r->settings_json = col_dup(s, 8, &oom);
	r->prompt_tokens = sqlite3_column_int64(s, 9);
	r->generated_tokens = sqlite3_column_int64(s, 10);
	r->prefill_tokens_per_s =
		sqlite3_column_type(s, 11) == SQLITE_NULL ? 0 : sqlite3_column_double(s, 11);
	r->decode_tokens_per_s =
		sqlite3_column_type(s, 12) == SQLITE_NULL ? 0 : sqlite3_column_double(s, 12);
	r->peak_memory_json = col_dup(s, 13, &oom);
	col_text(s, 14, r->source, sizeof(r->source));
	col_text(s, 15, r->measured_at, sizeof(r->measured_at));
	col_text(s, 16, r->created_at, sizeof(r->created_at));
	return oom ? RF_E_NOMEM : 0;
}

/* The combination of filters f gives, as an index into st->bench_list. */
static unsigned bench_list_shape(const struct api_bench_filter *f)
{
	return (f->model[0] ? 1u : 0u) | (f->hardware_fingerprint[0] ? 2u : 0u) |
	       (f->since[0] ? 4u : 0u) | (f->before_measured_at[0] ? 8u : 0u);
}

/* Builds the listing query for the filters f gives into sql (size len). Only fixed fragments
 * go into the text; the values are bound by name. */
static void bench_list_sql(const struct api_bench_filter *f, char *sql, size_t len)
{
	const char *and = "WHERE ";
	size_t used = (size_t)snprintf(sql, len, "%s", BENCH_COLUMNS);

	if (f->model[0]) {
		used += (size_t)snprintf(sql + used, len - used, "%smodel = :model ", and);
		and = "AND ";
	}
	if (f->hardware_fingerprint[0]) {
		used += (size_t)snprintf(sql + used, len - used, "%shardware_fingerprint = :hw ",
					 and);
		and = "AND ";
	}
	if (f->since[0]) {
		used += (size_t)snprintf(sql + used, len - used, "%smeasured_at >= :since ", and);
		and = "AND ";
	}
	if (f->before_measured_at[0])
		used += (size_t)snprintf(
			sql + used, len - used,
			"%s(measured_at < :bt OR (measured_at = :bt AND id < :bid)) ", and);
	snprintf(sql + used, len - used, "ORDER BY measured_at DESC, id DESC LIMIT :limit");
}

/* Binds the named parameter name of s to text v when s has it. */
static int bind_named(sqlite3_stmt *s, const char *name, const char *v)
{
	int i = sqlite3_bind_parameter_index(s, name);

	return i > 0 ? sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC) : SQLITE_OK;
}

/* Reads PRAGMA data_version (it changes when another connection commits) into *dv. Returns
 * false when it cannot be read; the caller then does not trust its memory. Mutex held. */
static bool bench_data_version(struct rf_store *st, int64_t *dv)
{
	int src = SQLITE_OK;

	if (!st->bench_data_version)
		src = sqlite3_prepare_v3(st->rdb, "PRAGMA data_version", -1,
					 SQLITE_PREPARE_PERSISTENT, &st->bench_data_version, NULL);
	if (src != SQLITE_OK)
		return false;
	src = sqlite3_step(st->bench_data_version);
	if (src == SQLITE_ROW)
		*dv = sqlite3_column_int64(st->bench_data_version, 0);
	sqlite3_reset(st->bench_data_version);
	return src == SQLITE_ROW;
}

/* Whether f asks for the runs of one fingerprint only (what the estimator asks), and the
 * store remembers that fingerprint has none as of now. Mutex held; *dv gets the version. */
static bool bench_known_empty(struct rf_store *st, const struct api_bench_filter *f, int64_t *dv,
			      bool *dv_ok)
{
	*dv_ok = bench_list_shape(f) == 2u && bench_data_version(st, dv);
	return *dv_ok && st->bench_none_fp[0] && st->bench_none_dv == *dv &&
	       strcmp(st->bench_none_fp, f->hardware_fingerprint) == 0;
}

int rf_store_bench_version(struct rf_store *st, uint64_t *version)
{
	sqlite3_mutex *mx;
	int64_t dv = 0;
	uint64_t turn;
	bool ok;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	mx = sqlite3_db_mutex(st->rdb);
	sqlite3_mutex_enter(mx);
	turn = atomic_load(&st->turn);
	if (turn && st->bench_dv_turn == turn && pthread_equal(pthread_self(), st->loop_thread)) {
		dv = st->bench_dv;
		ok = true;
	} else if ((ok = bench_data_version(st, &dv)) && turn &&
		   pthread_equal(pthread_self(), st->loop_thread)) {
		st->bench_dv = dv;
		st->bench_dv_turn = turn;
	}
	sqlite3_mutex_leave(mx);
	if (!ok)
		return RF_E_STORE_UNAVAILABLE;
	/* data_version is a small counter of this connection; the epoch keeps two openings
	 * apart. */
	*version = (st->epoch << 40) ^ (uint64_t)dv;
	return 0;
}

void rf_store_turn(struct rf_store *st)
{
	if (!st)
		return;
	/* The first turn names the loop's thread; only it ever calls this. */
	if (!atomic_load(&st->turn))
		st->loop_thread = pthread_self();
	atomic_fetch_add(&st->turn, 1);
}

int rf_store_bench_list(struct rf_store *st, const struct api_bench_filter *f,
			struct api_bench_run **runs, int *n)
{
	int64_t dv = 0;
	bool dv_ok = false;
	struct api_bench_run *arr = NULL;
	sqlite3_stmt *s = NULL;
	sqlite3_mutex *mx;
	char sql[1024];
	unsigned shape;
	int count = 0, cap = 0, rc = 0, src, limit, i;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!f || !runs || !n)
		return RF_E_INTERNAL;
	limit = f->limit < 1 ? 1 : f->limit > BENCH_LIST_MAX ? BENCH_LIST_MAX : f->limit;
	shape = bench_list_shape(f);

	mx = sqlite3_db_mutex(st->rdb);
	sqlite3_mutex_enter(mx);
	if (bench_known_empty(st, f, &dv, &dv_ok)) {
		sqlite3_mutex_leave(mx);
		*runs = NULL;
		*n = 0;
		return 0;
	}
	s = st->bench_list[shape];
	if (s) {
		src = SQLITE_OK;
	} else {
		bench_list_sql(f, sql, sizeof(sql));
		src = sqlite3_prepare_v3(st->rdb, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, NULL);
		if (src == SQLITE_OK)
			st->bench_list[shape] = s;
	}
	if (src == SQLITE_OK)
		src = bind_named(s, ":model", f->model);
	if (src == SQLITE_OK)
		src = bind_named(s, ":hw", f->hardware_fingerprint);
	if (src == SQLITE_OK)
		src = bind_named(s, ":since", f->since);
	if (src == SQLITE_OK)
		src = bind_named(s, ":bt", f->before_measured_at);
	if (src == SQLITE_OK && (i = sqlite3_bind_parameter_index(s, ":bid")) > 0)
		src = sqlite3_bind_int64(s, i, f->before_id);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int(s, sqlite3_bind_parameter_index(s, ":limit"), limit);
	if (src != SQLITE_OK) {
		rc = rf_store_sqlite_err(src);
		goto out;
	}
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		if (count == cap) {
			void *grown = rf_store_grow(arr, &cap, limit, sizeof(*arr));

			if (!grown) {
				rc = RF_E_NOMEM;
				goto out;
			}
			arr = grown;
		}
		rc = bench_row(s, &arr[count]);
		count++;
		if (rc < 0)
			goto out;
	}
	if (src != SQLITE_DONE)
		rc = rf_store_sqlite_err(src);
	if (rc == 0 && count == 0 && dv_ok) {
		/* Remembered until the next write here or a commit elsewhere. */
		snprintf(st->bench_none_fp, sizeof(st->bench_none_fp), "%s",
			 f->hardware_fingerprint);
		st->bench_none_dv = dv;
	}
out:
	/* Kept for the next call, with no binding left pointing into f. */
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	sqlite3_mutex_leave(mx);
	if (rc < 0) {
		api_bench_runs_free(arr, count);
		return rc;
	}
	*runs = arr;
	*n = count;
	return 0;
}

int rf_store_bench_explain(struct rf_store *st, const struct api_bench_filter *f, char *out,
			   size_t len)
{
	sqlite3_stmt *s = NULL;
	sqlite3_mutex *mx;
	char sql[1024 + 32];
	size_t used = 0;
	int n, src;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!f || !out || len == 0)
		return RF_E_INTERNAL;
	out[0] = '\0';
	n = snprintf(sql, sizeof(sql), "EXPLAIN QUERY PLAN ");
	bench_list_sql(f, sql + n, sizeof(sql) - (size_t)n);
	mx = sqlite3_db_mutex(st->rdb);
	sqlite3_mutex_enter(mx);
	src = sqlite3_prepare_v2(st->rdb, sql, -1, &s, NULL);
	while (src == SQLITE_OK || src == SQLITE_ROW) {
		const unsigned char *detail;

		if ((src = sqlite3_step(s)) != SQLITE_ROW)
			break;
		detail = sqlite3_column_text(s, 3);
		if (detail && used < len)
			used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "; " : "",
						 (const char *)detail);
	}
	sqlite3_finalize(s);
	sqlite3_mutex_leave(mx);
	return src == SQLITE_DONE ? 0 : rf_store_sqlite_err(src);
}

void rf_store_bench_finalize(struct rf_store *st)
{
	sqlite3_finalize(st->bench_data_version);
	st->bench_data_version = NULL;
	for (size_t i = 0; i < sizeof(st->bench_list) / sizeof(st->bench_list[0]); i++) {
		sqlite3_finalize(st->bench_list[i]);
		st->bench_list[i] = NULL;
	}
}

int rf_store_bench_get(struct rf_store *st, int64_t id, struct api_bench_run **run)
{
	struct api_bench_run *r = NULL;
	sqlite3_stmt *s = NULL;
	sqlite3_mutex *mx;
	int rc = 0, src;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!run)
		return RF_E_INTERNAL;
	mx = sqlite3_db_mutex(st->rdb);
	sqlite3_mutex_enter(mx);
	src = sqlite3_prepare_v2(st->rdb, SQL_GET, -1, &s, NULL);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int64(s, 1, id);
	if (src == SQLITE_OK)
		src = sqlite3_step(s);
	if (src == SQLITE_ROW) {
		r = calloc(1, sizeof(*r));
		rc = r ? bench_row(s, r) : RF_E_NOMEM;
	} else if (src == SQLITE_DONE) {
		rc = RF_E_NOT_FOUND;
	} else {
		rc = rf_store_sqlite_err(src);
	}
	sqlite3_finalize(s);
	sqlite3_mutex_leave(mx);
	if (rc < 0) {
		api_bench_runs_free(r, r ? 1 : 0);
		return rc;
	}
	*run = r;
	return 0;
}

int rf_store_bench_delete(struct rf_store *st, int64_t id)
{
	sqlite3_stmt *s = NULL;
	sqlite3_mutex *mx;
	int rc = 0, src;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	mx = sqlite3_db_mutex(st->db);
	sqlite3_mutex_enter(mx);
	src = bench_prepare(st, SQL_DELETE, &s);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int64(s, 1, id);
	if (src == SQLITE_OK)
		src = sqlite3_step(s);
	if (src == SQLITE_DONE)
		rc = sqlite3_changes(st->db) > 0 ? 0 : RF_E_NOT_FOUND;
	else
		rc = rf_store_sqlite_err(src);
	sqlite3_finalize(s);
	sqlite3_mutex_leave(mx);
	return rc;
}

/* The api_store entries: the store handle travels as ctx. */
static int api_insert(void *ctx, const struct api_bench_run *run, int64_t *id, bool *existed)
{
	return rf_store_bench_insert(ctx, run, id, existed);
}

static int api_list(void *ctx, const struct api_bench_filter *f, struct api_bench_run **runs,
		    int *n)
{
	return rf_store_bench_list(ctx, f, runs, n);
}

static int api_version(void *ctx, uint64_t *version)
{
	return rf_store_bench_version(ctx, version);
}

static int api_get(void *ctx, int64_t id, struct api_bench_run **run)
{
	return rf_store_bench_get(ctx, id, run);
}

static int api_delete(void *ctx, int64_t id)
{
	return rf_store_bench_delete(ctx, id);
}

void rf_store_bench_api(struct api_store *api)
{
	api->bench_insert = api_insert;
	api->bench_list = api_list;
	api->bench_version = api_version;
	api->bench_get = api_get;
	api->bench_delete = api_delete;
}
