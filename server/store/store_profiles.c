/*
 * The profiles table (see store_profiles.h). Each call holds the connection's mutex for its
 * whole duration; the calls that read before they write (seed, put, delete) do both inside one
 * BEGIN IMMEDIATE, so that the rule "a custom row never takes a shipped id" cannot be raced by
 * another connection to the same file.
 */
#include "server/store/store_profiles.h"
#include "server/store/store_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/profiles.h"
#include "core/err.h"

#define PROFILE_LIST_MAX 1000
#define PROFILE_COLUMNS "id, kind, source, body, created_at, updated_at"
#define PROFILE_NOW "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

struct rf_store_profile_stmts {
	sqlite3_stmt *get;  /* inside writes, on the write connection */
	sqlite3_stmt *rget; /* GET /api/profiles/{id}, on the read connection */
	sqlite3_stmt *list; /* on the read connection */
	sqlite3_stmt *seed_upsert;
	sqlite3_stmt *seed_prune;
	sqlite3_stmt *count_custom;
	sqlite3_stmt *put;
	sqlite3_stmt *del;
};

static const char SQL_GET[] = "SELECT " PROFILE_COLUMNS " FROM profiles WHERE id = ?1";
static const char SQL_LIST[] = "SELECT " PROFILE_COLUMNS " FROM profiles "
			       "WHERE (?1 = '' OR kind = ?1) AND (?2 = '' OR source = ?2) "
			       "AND id > ?3 ORDER BY id LIMIT ?4";
/* updated_at moves only when something changed, so a restart does not touch every row. */
static const char SQL_SEED_UPSERT[] =
	"INSERT INTO profiles (id, kind, source, body) VALUES (?1, ?2, 'shipped', ?3) "
	"ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, body = excluded.body, "
	"updated_at = " PROFILE_NOW " WHERE profiles.source = 'shipped' AND "
	"(profiles.kind <> excluded.kind OR profiles.body <> excluded.body)";
static const char SQL_SEED_PRUNE[] = "DELETE FROM profiles WHERE source = 'shipped' AND id NOT IN "
				     "(SELECT value FROM json_each(?1))";
static const char SQL_COUNT_CUSTOM[] = "SELECT count(*) FROM profiles WHERE source = 'custom'";
static const char SQL_PUT[] =
	"INSERT INTO profiles (id, kind, source, body) VALUES (?1, ?2, 'custom', ?3) "
	"ON CONFLICT (id) DO UPDATE SET body = excluded.body, updated_at = " PROFILE_NOW
	" WHERE profiles.source = 'custom' AND profiles.kind = excluded.kind";
static const char SQL_DELETE[] = "DELETE FROM profiles WHERE id = ?1 AND source = 'custom'";

int rf_store_profiles_prepare(struct rf_store *st, char *errbuf, size_t errlen)
{
	struct {
		const char *sql;
		sqlite3_stmt **out;
		bool read; /* prepared on the read connection */
	} list[8];
	struct rf_store_profile_stmts *s = calloc(1, sizeof(*s));

	if (!s)
		return RF_E_NOMEM;
	st->profiles = s;
	memset(list, 0, sizeof(list));
	list[0].sql = SQL_GET, list[0].out = &s->get;
	list[1].sql = SQL_LIST, list[1].out = &s->list, list[1].read = true;
	list[2].sql = SQL_SEED_UPSERT, list[2].out = &s->seed_upsert;
	list[3].sql = SQL_SEED_PRUNE, list[3].out = &s->seed_prune;
	list[4].sql = SQL_COUNT_CUSTOM, list[4].out = &s->count_custom;
	list[5].sql = SQL_PUT, list[5].out = &s->put;
	list[6].sql = SQL_DELETE, list[6].out = &s->del;
	list[7].sql = SQL_GET, list[7].out = &s->rget, list[7].read = true;
	for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++) {
		sqlite3 *db = list[i].read ? st->rdb : st->db;
		int src = sqlite3_prepare_v2(db, list[i].sql, -1, list[i].out, NULL);
		if (src != SQLITE_OK) {
			if (errbuf && errlen)
				snprintf(errbuf, errlen,
					 "cannot prepare the profile statements: %s",
					 sqlite3_errmsg(db));
			return rf_store_sqlite_err(src);
		}
	}
	return 0;
}

void rf_store_profiles_finalize(struct rf_store *st)
{
	struct rf_store_profile_stmts *s = st ? st->profiles : NULL;

	if (!s)
		return;
	sqlite3_finalize(s->get);
	sqlite3_finalize(s->rget);
	sqlite3_finalize(s->list);
	sqlite3_finalize(s->seed_upsert);
	sqlite3_finalize(s->seed_prune);
	sqlite3_finalize(s->count_custom);
	sqlite3_finalize(s->put);
	sqlite3_finalize(s->del);
	free(s);
	st->profiles = NULL;
}

/* Copies column i of s (text, at most size - 1 bytes) into dst. */
static void column_copy(sqlite3_stmt *s, int i, char *dst, size_t size)
{
	const unsigned char *t = sqlite3_column_text(s, i);
	snprintf(dst, size, "%s", t ? (const char *)t : "");
}

/* Reads the current row of s (PROFILE_COLUMNS) into *p. Returns 0 or RF_E_NOMEM. */
static int read_row(sqlite3_stmt *s, struct api_profile *p /* OUT */)
{
	const unsigned char *body;
	int len;

	memset(p, 0, sizeof(*p));
	column_copy(s, 0, p->id, sizeof(p->id));
	column_copy(s, 1, p->kind, sizeof(p->kind));
	column_copy(s, 2, p->source, sizeof(p->source));
	column_copy(s, 4, p->created_at, sizeof(p->created_at));
	column_copy(s, 5, p->updated_at, sizeof(p->updated_at));
	body = sqlite3_column_text(s, 3);
	len = sqlite3_column_bytes(s, 3);
	if (!body)
		return RF_E_NOMEM; /* the column is NOT NULL: no text means no memory */
	p->body = malloc((size_t)len + 1);
	if (!p->body)
		return RF_E_NOMEM;
	memcpy(p->body, body, (size_t)len);
	p->body[len] = '\0';
	return 0;
}

/* Looks the row id up with the get statement: 1 and its source and kind in src/kind when it
 * exists, 0 when not, or a negative rf_err. The caller holds the mutex. */
static int lookup(struct rf_store *st, const char *id, char *source, char *kind)
{
	sqlite3_stmt *s = st->profiles->get;
	int src = sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC), rc = 0;

	if (src == SQLITE_OK) {
		src = sqlite3_step(s);
		if (src == SQLITE_ROW) {
			column_copy(s, 2, source, 8);
			column_copy(s, 1, kind, 8);
			rc = 1;
		} else if (src != SQLITE_DONE) {
			rc = rf_store_sqlite_err(src);
		}
	} else {
		rc = rf_store_sqlite_err(src);
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc;
}

/* Ends the transaction the caller began: commits when rc is 0, else rolls back. Returns rc,
 * or the commit's error. */
static int finish(struct rf_store *st, int rc)
{
	if (rc == 0) {
		int src = rf_store_step_done(st->commit);
		if (src != SQLITE_DONE)
			rc = rf_store_sqlite_err(src);
	}
	if (!sqlite3_get_autocommit(st->db))
		rf_store_step_done(st->rollback);
	return rc;
}

/* Takes the connection's mutex and begins a write transaction without holding the mutex while
 * another process holds the lock (rf_store_begin_write). The mutex is held on return either
 * way. Returns 0 or a negative rf_err. */
static int begin(struct rf_store *st)
{
	int src = rf_store_begin_write(st);
	return src == SQLITE_DONE ? 0 : rf_store_sqlite_err(src);
}

/* Steps s, bound by the caller, to its end. Returns 0 or a negative rf_err. */
static int run(sqlite3_stmt *s)
{
	int src = rf_store_step_done(s);
	return src == SQLITE_DONE ? 0 : rf_store_sqlite_err(src);
}

/* Builds the JSON array of the seed's ids (valid ids need no escaping). Returns a malloc'd
 * string or NULL when out of memory. */
static char *ids_json(const struct rf_profile_seed *rows, int n)
{
	size_t cap = 3, at = 0;
	char *out;

	for (int i = 0; i < n; i++)
		cap += strlen(rows[i].id) + 3;
	out = malloc(cap);
	if (!out)
		return NULL;
	out[at++] = '[';
	for (int i = 0; i < n; i++)
		at += (size_t)snprintf(out + at, cap - at, "%s\"%s\"", i ? "," : "", rows[i].id);
	out[at++] = ']';
	out[at] = '\0';
	return out;
}

int rf_store_profiles_seed(struct rf_store *st, const struct rf_profile_seed *rows, int n,
			   int *shadowed)
{
	struct rf_store_profile_stmts *s;
	sqlite3_mutex *mx;
	char *ids;
	int rc = 0, skipped = 0;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (n < 0 || (n > 0 && !rows))
		return RF_E_INVALID_VALUE;
	for (int i = 0; i < n; i++)
		if (!api_profile_id_valid(rows[i].id) || !rows[i].kind || !rows[i].body)
			return RF_E_INVALID_VALUE;
	ids = ids_json(rows, n);
	if (!ids)
		return RF_E_NOMEM;
	s = st->profiles;
	mx = sqlite3_db_mutex(st->db);
	rc = begin(st); /* takes the mutex */
	for (int i = 0; i < n && rc == 0; i++) {
		char source[8] = "", kind[8] = "";
		int found = lookup(st, rows[i].id, source, kind);
		if (found < 0) {
			rc = found;
			break;
		}
		if (found && strcmp(source, "custom") == 0) {
			skipped++;
			continue;
		}
		if (sqlite3_bind_text(s->seed_upsert, 1, rows[i].id, -1, SQLITE_STATIC) !=
			    SQLITE_OK ||
		    sqlite3_bind_text(s->seed_upsert, 2, rows[i].kind, -1, SQLITE_STATIC) !=
			    SQLITE_OK ||
		    sqlite3_bind_text(s->seed_upsert, 3, rows[i].body, -1, SQLITE_STATIC) !=
			    SQLITE_OK) {
			rc = RF_E_NOMEM;
			sqlite3_clear_bindings(s->seed_upsert);
			break;
		}
		rc = run(s->seed_upsert);
	}
	if (rc == 0) {
		if (sqlite3_bind_text(s->seed_prune, 1, ids, -1, SQLITE_STATIC) != SQLITE_OK)
			rc = RF_E_NOMEM;
		else
			rc = run(s->seed_prune);
	}
	rc = finish(st, rc);
	sqlite3_mutex_leave(mx);
	free(ids);
	if (rc == 0 && shadowed)
		*shadowed = skipped;
	return rc;
}

int rf_store_profile_list(struct rf_store *st, const struct api_profile_filter *f,
			  struct api_profile **rows, int *n)
{
	struct api_profile *arr = NULL;
	sqlite3_stmt *s;
	sqlite3_mutex *mx;
	int count = 0, cap = 0, rc = 0, src, limit;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!f || !rows || !n)
		return RF_E_INTERNAL;
	limit = f->limit < 1 ? 1 : f->limit > PROFILE_LIST_MAX ? PROFILE_LIST_MAX : f->limit;
	s = st->profiles->list;
	mx = sqlite3_db_mutex(st->rdb);
	sqlite3_mutex_enter(mx);
	src = sqlite3_bind_text(s, 1, f->kind, -1, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_bind_text(s, 2, f->source, -1, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_bind_text(s, 3, f->after, -1, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int(s, 4, limit);
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
		rc = read_row(s, &arr[count]);
		if (rc < 0) {
			api_profile_clear(&arr[count]);
			goto out;
		}
		count++;
	}
	if (src != SQLITE_DONE)
		rc = rf_store_sqlite_err(src);
out:
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	sqlite3_mutex_leave(mx);
	if (rc < 0) {
		api_profiles_free(arr, count);
		return rc;
	}
	*rows = arr;
	*n = count;
	return 0;
}

int rf_store_profile_get(struct rf_store *st, const char *id, struct api_profile *row)
{
	sqlite3_stmt *s;
	sqlite3_mutex *mx;
	int rc, src;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!id || !row)
		return RF_E_INTERNAL;
	s = st->profiles->rget;
	mx = sqlite3_db_mutex(st->rdb);
	sqlite3_mutex_enter(mx);
	src = sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_step(s);
	if (src == SQLITE_ROW) {
		struct api_profile p;
		rc = read_row(s, &p);
		if (rc == 0)
			*row = p;
		else
			api_profile_clear(&p);
	} else {
		rc = src == SQLITE_DONE ? RF_E_NOT_FOUND : rf_store_sqlite_err(src);
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	sqlite3_mutex_leave(mx);
	return rc;
}

/* Counts the custom rows into *n. The caller holds the mutex. Returns 0 or a negative
 * rf_err. */
static int count_custom(struct rf_store *st, int *n /* OUT */)
{
	sqlite3_stmt *s = st->profiles->count_custom;
	int src = sqlite3_step(s), rc = 0;

	if (src == SQLITE_ROW)
		*n = sqlite3_column_int(s, 0);
	else
		rc = rf_store_sqlite_err(src == SQLITE_DONE ? SQLITE_ERROR : src);
	sqlite3_reset(s);
	return rc;
}

int rf_store_profile_put(struct rf_store *st, const struct api_profile *p, bool *created)
{
	struct rf_store_profile_stmts *s;
	sqlite3_mutex *mx;
	char source[8] = "", kind[8] = "";
	int rc, found = 0, customs = 0;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!p || !created || !p->body || !api_profile_id_valid(p->id))
		return RF_E_INVALID_VALUE;
	if (strlen(p->body) > RF_STORE_MAX_PROFILE_BODY)
		return RF_E_TOO_LARGE;
	s = st->profiles;
	mx = sqlite3_db_mutex(st->db);
	rc = begin(st); /* takes the mutex */
	if (rc == 0)
		found = rc = lookup(st, p->id, source, kind);
	if (rc >= 0 && found) {
		rc = strcmp(source, "custom") != 0 || strcmp(kind, p->kind) != 0 ? RF_E_CONFLICT :
										   0;
	} else if (rc >= 0) {
		rc = count_custom(st, &customs);
		if (rc == 0 && customs >= RF_STORE_MAX_CUSTOM_PROFILES)
			rc = RF_E_TOO_LARGE;
	}
	if (rc == 0) {
		if (sqlite3_bind_text(s->put, 1, p->id, -1, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_text(s->put, 2, p->kind, -1, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_text(s->put, 3, p->body, -1, SQLITE_STATIC) != SQLITE_OK) {
			sqlite3_clear_bindings(s->put);
			rc = RF_E_NOMEM;
		} else {
			rc = run(s->put);
		}
	}
	rc = finish(st, rc);
	sqlite3_mutex_leave(mx);
	if (rc == 0)
		*created = !found;
	return rc;
}

int rf_store_profile_delete(struct rf_store *st, const char *id)
{
	sqlite3_mutex *mx;
	char source[8] = "", kind[8] = "";
	int rc;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!id)
		return RF_E_INVALID_VALUE;
	mx = sqlite3_db_mutex(st->db);
	rc = begin(st); /* takes the mutex */
	if (rc == 0) {
		int found = lookup(st, id, source, kind);
		if (found < 0)
			rc = found;
		else if (!found)
			rc = RF_E_NOT_FOUND;
		else if (strcmp(source, "custom") != 0)
			rc = RF_E_CONFLICT;
	}
	if (rc == 0) {
		if (sqlite3_bind_text(st->profiles->del, 1, id, -1, SQLITE_STATIC) != SQLITE_OK) {
			sqlite3_clear_bindings(st->profiles->del);
			rc = RF_E_NOMEM;
		} else {
			rc = run(st->profiles->del);
		}
	}
	rc = finish(st, rc);
	sqlite3_mutex_leave(mx);
	return rc;
}

/* The api_store entries: the store handle travels as ctx. */
static int api_list(void *ctx, const struct api_profile_filter *f, struct api_profile **rows,
		    int *n)
{
	return rf_store_profile_list(ctx, f, rows, n);
}

static int api_get(void *ctx, const char *id, struct api_profile *row)
{
	return rf_store_profile_get(ctx, id, row);
}

static int api_put(void *ctx, const struct api_profile *p, bool *created)
{
	return rf_store_profile_put(ctx, p, created);
}

static int api_delete(void *ctx, const char *id)
{
	return rf_store_profile_delete(ctx, id);
}

void rf_store_profiles_api(struct api_store *api)
{
	api->profile_list = api_list;
	api->profile_get = api_get;
	api->profile_put = api_put;
	api->profile_delete = api_delete;
}
