/*
 * The Hub answers in the store (see store_hub.h). Writing is one BEGIN IMMEDIATE transaction
 * that deletes the old row (its shards go with it, ON DELETE CASCADE) and inserts the new
 * ones; reading holds the connection's mutex across both SELECTs, so a reader never sees a
 * model without its shards. Statements are prepared at each call: a lookup is rare.
 */
#include "server/store/store_hub.h"
#include "server/store/store_priv.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

static const char SQL_MODEL[] =
	"SELECT config, file_bytes, n_shards, fetched_at_ms FROM hub_models "
	"WHERE hub = ?1 AND model_id = ?2 AND revision = ?3";
static const char SQL_SHARDS[] =
	"SELECT shard, header FROM hub_model_shards WHERE hub = ?1 AND model_id = ?2 AND "
	"revision = ?3 ORDER BY shard";
static const char SQL_DELETE[] =
	"DELETE FROM hub_models WHERE hub = ?1 AND model_id = ?2 AND revision = ?3";
static const char SQL_INSERT[] =
	"INSERT INTO hub_models (hub, model_id, revision, config, file_bytes, n_shards, "
	"fetched_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
static const char SQL_INSERT_SHARD[] =
	"INSERT INTO hub_model_shards (hub, model_id, revision, shard, header) "
	"VALUES (?1, ?2, ?3, ?4, ?5)";

/* Prepares sql and binds the key (?1 hub, ?2 id, ?3 revision). Returns SQLite's result. */
static int prepare_key(struct rf_store *st, const char *sql, const char *hub, const char *id,
		       const char *rev, sqlite3_stmt **s)
{
	int src = sqlite3_prepare_v2(st->db, sql, -1, s, NULL);

	if (src == SQLITE_OK)
		src = sqlite3_bind_text(*s, 1, hub, -1, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_bind_text(*s, 2, id, -1, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_bind_text(*s, 3, rev, -1, SQLITE_STATIC);
	return src;
}

/* A malloc'd, NUL-terminated copy of text column i (its length in *len), or NULL. */
static char *col_copy(sqlite3_stmt *s, int i, size_t *len)
{
	const unsigned char *t = sqlite3_column_text(s, i);
	int n = sqlite3_column_bytes(s, i);
	char *c = t ? malloc((size_t)n + 1) : NULL;

	if (!c)
		return NULL;
	memcpy(c, t, (size_t)n);
	c[n] = '\0';
	*len = (size_t)n;
	return c;
}

int rf_store_hub_get(struct rf_store *st, const char *hub, const char *id, const char *rev,
		     struct api_model_dir *out)
{
	struct api_model_dir *d;
	sqlite3_stmt *m = NULL, *s = NULL;
	sqlite3_mutex *mx;
	int rc = 0, src, n = 0;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	d = calloc(1, sizeof(*d));
	if (!d)
		return RF_E_NOMEM;
	mx = sqlite3_db_mutex(st->db);
	sqlite3_mutex_enter(mx);
	src = prepare_key(st, SQL_MODEL, hub, id, rev, &m);
	if (src == SQLITE_OK)
		src = prepare_key(st, SQL_SHARDS, hub, id, rev, &s);
	if (src == SQLITE_OK)
		src = sqlite3_step(m);
	if (src == SQLITE_DONE) {
		rc = RF_E_NOT_FOUND;
		goto out;
	}
	if (src != SQLITE_ROW)
		goto out;
	d->config = col_copy(m, 0, &d->config_len);
	d->file_bytes = (uint64_t)sqlite3_column_int64(m, 1);
	n = sqlite3_column_int(m, 2);
	d->fetched_at_ms = sqlite3_column_int64(m, 3);
	if (!d->config) {
		rc = RF_E_NOMEM;
		goto out;
	}
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		int k = d->n_shards;
		if (k >= API_MODEL_DIR_MAX_SHARDS || sqlite3_column_int(s, 0) != k) {
			rc = RF_E_STORE_UNAVAILABLE; /* rows the writer never leaves */
			goto out;
		}
		d->headers[k] = col_copy(s, 1, &d->header_len[k]);
		if (!d->headers[k]) {
			rc = RF_E_NOMEM;
			goto out;
		}
		d->n_shards++;
	}
	if (src == SQLITE_DONE && d->n_shards != n)
		rc = RF_E_STORE_UNAVAILABLE;
out:
	if (rc == 0 && src != SQLITE_DONE)
		rc = rf_store_sqlite_err(src);
	sqlite3_finalize(m);
	sqlite3_finalize(s);
	sqlite3_mutex_leave(mx);
	if (rc == 0) {
		snprintf(d->where, sizeof(d->where), "hub");
		snprintf(d->revision, sizeof(d->revision), "%s", rev);
		*out = *d;
	} else {
		api_model_dir_free(d);
	}
	free(d);
	return rc;
}

int rf_store_hub_put(struct rf_store *st, const char *hub, const char *id, const char *rev,
		     const struct api_model_dir *d)
{
	sqlite3_stmt *del = NULL, *ins = NULL, *sh = NULL;
	sqlite3_mutex *mx;
	int rc = 0, src;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!d || !d->config || d->n_shards < 1)
		return RF_E_INVALID_VALUE;
	mx = sqlite3_db_mutex(st->db);
	/* Takes the mutex; waits for another process's write lock without holding it. */
	src = rf_store_begin_write(st);
	if (src != SQLITE_DONE)
		goto out;
	src = prepare_key(st, SQL_DELETE, hub, id, rev, &del);
	if (src == SQLITE_OK)
		src = prepare_key(st, SQL_INSERT, hub, id, rev, &ins);
	if (src == SQLITE_OK)
		src = prepare_key(st, SQL_INSERT_SHARD, hub, id, rev, &sh);
	if (src == SQLITE_OK)
		src = sqlite3_bind_text(ins, 4, d->config, (int)d->config_len, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int64(ins, 5, (sqlite3_int64)d->file_bytes);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int(ins, 6, d->n_shards);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int64(ins, 7, d->fetched_at_ms);
	if (src == SQLITE_OK)
		src = sqlite3_step(del);
	if (src == SQLITE_DONE)
		src = sqlite3_step(ins);
	for (int k = 0; k < d->n_shards && src == SQLITE_DONE; k++) {
		sqlite3_reset(sh);
		src = sqlite3_bind_int(sh, 4, k);
		if (src == SQLITE_OK)
			src = sqlite3_bind_text(sh, 5, d->headers[k], (int)d->header_len[k],
						SQLITE_STATIC);
		if (src == SQLITE_OK)
			src = sqlite3_step(sh);
	}
	if (src == SQLITE_DONE)
		src = rf_store_step_done(st->commit);
out:
	if (src != SQLITE_DONE && src != SQLITE_OK)
		rc = rf_store_sqlite_err(src);
	if (!sqlite3_get_autocommit(st->db))
		rf_store_step_done(st->rollback);
	sqlite3_finalize(del);
	sqlite3_finalize(ins);
	sqlite3_finalize(sh);
	sqlite3_mutex_leave(mx);
	return rc;
}
