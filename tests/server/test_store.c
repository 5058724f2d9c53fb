/*
 * Tests of server/store/store.c against real SQLite files in temporary directories: a fresh
 * database, an upgrade from a database that only migration 0001 built (rows in every table must
 * survive), the scan history (order, paging, clamping, trimming), files that must be refused
 * untouched (corrupt, truncated, foreign, newer, unwritable), a lock held by another
 * connection, broken migration tables, two threads sharing the handle and allocation failures
 * injected into SQLite. A second, raw sqlite3 connection is the witness of what is on disk.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "server/embedded.h"
#include "server/store/store.h"
#include "tests/test.h"

/* The indexes that the migrations leave (0002_indexes.sql, then 0003_history_index.sql). */
static const char *const index_names[] = {
	"benchmarks_by_model",
	"benchmarks_by_hardware_time",
	"benchmarks_by_hardware_model",
	"benchmarks_by_time",
	"scans_by_time",
	"profiles_by_kind",
};

/* Returns the number of embedded migrations. */
static int n_migrations(void)
{
	int n = 0;

	while (rf_embed_migrations[n].name)
		n++;
	return n;
}

/* Opens a raw connection that witnesses the file (no rigfit code involved). */
static sqlite3 *raw_open(const char *path)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
					 NULL),
			 SQLITE_OK);
	return db;
}

/* Runs SQL with no result on a raw connection; the test fails on error. */
static void raw_exec(sqlite3 *db, const char *sql)
{
	char *emsg = NULL;
	int src = sqlite3_exec(db, sql, NULL, NULL, &emsg);

	ck_assert_msg(src == SQLITE_OK, "%s: %s", sql, emsg ? emsg : "?");
	sqlite3_free(emsg);
}

/* Returns the integer in the first column of the first row of sql (the test fails if none). */
static int64_t raw_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	int64_t v;

	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* Returns the text in the first column of the first row of sql, malloc'd (NULL for no row or
 * a NULL value). */
static char *raw_text(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;
	char *v = NULL;

	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		v = strdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return v;
}

/* Asserts that the text result of sql is want. */
static void raw_text_eq(sqlite3 *db, const char *sql, const char *want)
{
	char *got = raw_text(db, sql);

	ck_assert_msg(got && strcmp(got, want) == 0, "%s: got '%s', want '%s'", sql,
		      got ? got : "(null)", want);
	free(got);
}

/* Returns true when a file exists at path. */
static bool exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

/* Asserts that errbuf holds a one-line message containing needle (NULL: any message). */
static void assert_msg(const char *errbuf, const char *needle)
{
	ck_assert_msg(errbuf[0] != '\0', "no error message");
	ck_assert_msg(strchr(errbuf, '\n') == NULL, "message is not one line: %s", errbuf);
	if (needle)
		ck_assert_msg(strstr(errbuf, needle) != NULL, "message '%s' lacks '%s'", errbuf,
			      needle);
}

/* Opens path with the embedded migrations; the test fails unless it works. */
static struct rf_store *open_ok(const char *path)
{
	struct rf_store *st = NULL;
	char err[512] = "";
	int rc = rf_store_open(path, rf_embed_migrations, &st, err, sizeof(err));

	ck_assert_msg(rc == 0, "open %s: %d %s", path, rc, err);
	ck_assert_ptr_nonnull(st);
	return st;
}

/* Opens path expecting failure with code want: *out stays NULL, the message names the cause
 * (needle, if given), and the file's bytes (if there is a file) do not change. */
static void open_refused(const char *path, const struct rf_embedded_file *migrations, int want,
			 const char *needle)
{
	struct rf_store *st = (struct rf_store *)&st; /* not NULL: the call must reset it */
	char err[512] = "";
	size_t before_len = 0, after_len = 0;
	char *before = t_read_file(path, &before_len), *after;
	int rc = rf_store_open(path, migrations, &st, err, sizeof(err));

	ck_assert_msg(rc == want, "open %s: got %d (%s), want %d", path, rc, err, want);
	ck_assert_ptr_null(st);
	assert_msg(err, needle);
	after = t_read_file(path, &after_len);
	if (before) {
		ck_assert_ptr_nonnull(after);
		ck_assert_uint_eq(before_len, after_len);
		ck_assert_msg(memcmp(before, after, before_len) == 0, "%s was modified", path);
	}
	free(before);
	free(after);
}

/* Builds a database that only migration 0001 made, as the first release left it. */
static void build_v1(const char *path)
{
	sqlite3 *db = raw_open(path);

	raw_exec(db, "PRAGMA journal_mode = WAL");
	raw_exec(db, "BEGIN IMMEDIATE");
	raw_exec(db, rf_embed_migrations[0].data);
	raw_exec(db, "PRAGMA user_version = 1");
	raw_exec(db, "COMMIT");
	sqlite3_close(db);
}

START_TEST(test_open_fresh)
{
	char *dir = t_mkdtemp(), *sub, *path, *sql;
	struct rf_store *st;
	sqlite3 *db;
	int n = n_migrations();

	ck_assert_ptr_nonnull(dir);
	ck_assert_int_ge(n, 2);
	sub = t_path(dir, "var");
	path = t_path(sub, "rigfit.db");
	ck_assert(!exists(sub));

	st = open_ok(path);
	ck_assert(exists(path));
	ck_assert_int_eq(rf_store_schema_version(st), n);

	db = raw_open(path);
	raw_text_eq(db, "PRAGMA journal_mode", "wal");
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), n);
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
				     "name IN ('profiles', 'benchmarks', 'scans')"),
			 3);
	sqlite3_close(db);
	rf_store_close(st);

	/* A second open of an up-to-date file changes nothing and works. */
	st = open_ok(path);
	ck_assert_int_eq(rf_store_schema_version(st), n);
	rf_store_close(st);

	/* A path with no directory part is created in the working directory's terms too. */
	sql = t_path(dir, "flat.db");
	st = open_ok(sql);
	rf_store_close(st);
	ck_assert(exists(sql));

	free(sql);
	free(path);
	free(sub);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_upgrade_from_0001)
{
	char *dir = t_mkdtemp(), *path;
	struct api_scan_row *rows = NULL;
	struct rf_store *st;
	sqlite3 *db;
	int n = 0;

	ck_assert_ptr_nonnull(dir);
	path = t_path(dir, "old.db");
	build_v1(path);

	db = raw_open(path);
	raw_exec(db, "INSERT INTO profiles (id, kind, source, body, created_at, updated_at) VALUES "
		     "('rtx-4090', 'device', 'shipped', '{\"memory_total_bytes\":25757220864}', "
		     " '2025-01-02T03:04:05.006Z', '2025-01-02T03:04:05.006Z'), "
		     "('my-box', 'tier', 'custom', '{\"name\":\"mine\"}', "
		     " '2025-02-01T00:00:00.000Z', '2025-03-01T12:00:00.500Z')");
	raw_exec(
		db,
		"INSERT INTO benchmarks (id, run_id, hardware_fingerprint, model, precision, "
		" backend, runtime, runtime_version, settings, prompt_tokens, generated_tokens, "
		" prefill_tokens_per_s, decode_tokens_per_s, peak_memory, source, measured_at, "
		" created_at) VALUES "
		"(7, 'run-a', 'fp-1', 'qwen2.5-7b', 'Q4_K_M', 'cuda', 'llama.cpp', 'b4500', "
		" '{\"n_ctx\":4096}', 512, 128, 4321.5, 123.25, '{\"gpu0_bytes\":5000000000}', "
		" 'api', '2025-01-03T00:00:00.000Z', '2025-01-03T00:00:01.000Z'), "
		"(8, 'run-b', 'fp-2', 'llama-3.1-8b', 'F16', 'cpu', 'llama.cpp', NULL, '{}', 0, 64, "
		" NULL, 9.5, NULL, 'cli', '2025-01-04T00:00:00.000Z', '2025-01-04T00:00:00.000Z')");
	raw_exec(db, "INSERT INTO scans (scanned_at_ms, scan_duration_ms, hardware_json) VALUES "
		     "(1700000000000, 12.5, '{\"gpus\":[]}'), "
		     "(1700000030000, 13.75, '{\"gpus\":[{\"name\":\"RTX 4090\"}]}')");
	sqlite3_close(db);

	st = open_ok(path);
	ck_assert_int_eq(rf_store_schema_version(st), n_migrations());

	/* The scans, through the store's own API. */
	ck_assert_int_eq(rf_store_scan_list(st, 0, 10, &rows, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(rows[0].id, 2);
	ck_assert_int_eq(rows[0].scanned_at_ms, 1700000030000LL);
	ck_assert_double_eq(rows[0].scan_duration_ms, 13.75);
	ck_assert_str_eq(rows[0].hardware_json, "{\"gpus\":[{\"name\":\"RTX 4090\"}]}");
	ck_assert_int_eq(rows[1].id, 1);
	ck_assert_int_eq(rows[1].scanned_at_ms, 1700000000000LL);
	ck_assert_double_eq(rows[1].scan_duration_ms, 12.5);
	ck_assert_str_eq(rows[1].hardware_json, "{\"gpus\":[]}");
	api_scan_rows_free(rows, n);

	/* AUTOINCREMENT survived: a new scan gets the next id. */
	ck_assert_int_eq(rf_store_scan_append(st, 1700000060000LL, 1.0, "{}", 2, 0), 0);
	ck_assert_int_eq(rf_store_scan_list(st, 0, 1, &rows, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(rows[0].id, 3);
	api_scan_rows_free(rows, n);
	rf_store_close(st);

	/* Profiles and benchmarks, byte for byte, through the witness. */
	db = raw_open(path);
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), n_migrations());
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM profiles"), 2);
	raw_text_eq(db,
		    "SELECT kind || '|' || source || '|' || body || '|' || created_at || '|' || "
		    "updated_at FROM profiles WHERE id = 'rtx-4090'",
		    "device|shipped|{\"memory_total_bytes\":25757220864}|2025-01-02T03:04:05.006Z|"
		    "2025-01-02T03:04:05.006Z");
	raw_text_eq(db,
		    "SELECT kind || '|' || source || '|' || body || '|' || created_at || '|' || "
		    "updated_at FROM profiles WHERE id = 'my-box'",
		    "tier|custom|{\"name\":\"mine\"}|2025-02-01T00:00:00.000Z|"
		    "2025-03-01T12:00:00.500Z");
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM benchmarks"), 2);
	raw_text_eq(
		db,
		"SELECT json_array(id, run_id, hardware_fingerprint, model, precision, backend, "
		"runtime, runtime_version, settings, prompt_tokens, generated_tokens, "
		"prefill_tokens_per_s, decode_tokens_per_s, peak_memory, source, measured_at, "
		"created_at) FROM benchmarks WHERE run_id = 'run-a'",
		"[7,\"run-a\",\"fp-1\",\"qwen2.5-7b\",\"Q4_K_M\",\"cuda\",\"llama.cpp\","
		"\"b4500\",\"{\\\"n_ctx\\\":4096}\",512,128,4321.5,123.25,"
		"\"{\\\"gpu0_bytes\\\":5000000000}\",\"api\",\"2025-01-03T00:00:00.000Z\","
		"\"2025-01-03T00:00:01.000Z\"]");
	raw_text_eq(
		db,
		"SELECT json_array(id, run_id, hardware_fingerprint, model, precision, backend, "
		"runtime, runtime_version, settings, prompt_tokens, generated_tokens, "
		"prefill_tokens_per_s, decode_tokens_per_s, peak_memory, source, measured_at, "
		"created_at) FROM benchmarks WHERE run_id = 'run-b'",
		"[8,\"run-b\",\"fp-2\",\"llama-3.1-8b\",\"F16\",\"cpu\",\"llama.cpp\",null,"
		"\"{}\",0,64,null,9.5,null,\"cli\",\"2025-01-04T00:00:00.000Z\","
		"\"2025-01-04T00:00:00.000Z\"]");

	/* 0002's indexes exist and the listing query uses them. */
	for (size_t i = 0; i < sizeof(index_names) / sizeof(index_names[0]); i++) {
		sqlite3_stmt *s = NULL;
		ck_assert_int_eq(sqlite3_prepare_v2(db,
						    "SELECT count(*) FROM sqlite_master WHERE "
						    "type = 'index' AND name = ?1",
						    -1, &s, NULL),
				 SQLITE_OK);
		sqlite3_bind_text(s, 1, index_names[i], -1, SQLITE_STATIC);
		ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
		ck_assert_msg(sqlite3_column_int(s, 0) == 1, "index %s missing", index_names[i]);
		sqlite3_finalize(s);
	}
	{
		sqlite3_stmt *s = NULL;
		bool used = false;
		ck_assert_int_eq(sqlite3_prepare_v2(db,
						    "EXPLAIN QUERY PLAN SELECT id FROM benchmarks "
						    "WHERE model = 'x' ORDER BY measured_at DESC",
						    -1, &s, NULL),
				 SQLITE_OK);
		while (sqlite3_step(s) == SQLITE_ROW) {
			const char *d = (const char *)sqlite3_column_text(s, 3);
			if (d && strstr(d, "benchmarks_by_model"))
				used = true;
		}
		sqlite3_finalize(s);
		ck_assert_msg(used, "the model listing does not use benchmarks_by_model");
	}
	/* The constraints of 0001 still hold after the upgrade. */
	ck_assert_int_ne(sqlite3_exec(db,
				      "INSERT INTO profiles (id, kind, source, body) VALUES "
				      "('x', 'gadget', 'custom', '{}')",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	ck_assert_int_ne(
		sqlite3_exec(db,
			     "INSERT INTO benchmarks (run_id, hardware_fingerprint, model, "
			     "precision, backend, runtime, prompt_tokens, generated_tokens, "
			     "measured_at) VALUES ('run-c', 'f', 'm', 'Q4_0', 'cpu', 'l', 1, "
			     "1, '2025-01-01T00:00:00.000Z')",
			     NULL, NULL, NULL),
		SQLITE_OK);
	ck_assert_int_ne(
		sqlite3_exec(db,
			     "INSERT INTO benchmarks (run_id, hardware_fingerprint, model, "
			     "precision, backend, runtime, prompt_tokens, generated_tokens, "
			     "decode_tokens_per_s, measured_at) VALUES ('run-a', 'f', 'm', "
			     "'Q4_0', 'cpu', 'l', 1, 1, 5, '2025-01-01T00:00:00.000Z')",
			     NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(db);

	free(path);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_append_list)
{
	char *dir = t_mkdtemp(), *path;
	struct api_scan_row *rows = NULL;
	struct rf_store *st;
	struct api_store api;
	char json[64];
	int n = 0;

	ck_assert_ptr_nonnull(dir);
	path = t_path(dir, "s.db");
	st = open_ok(path);

	for (int i = 1; i <= 5; i++) {
		int len = snprintf(json, sizeof(json), "{\"i\":%d}", i);
		ck_assert_int_eq(rf_store_scan_append(st, 1000 * i, i + 0.5, json, (size_t)len, 0),
				 0);
	}
	/* Only the len bytes given are stored, not up to a NUL. */
	ck_assert_int_eq(rf_store_scan_append(st, 6000, 6.5, "{\"i\":6}TRAILING", 7, 0), 0);

	ck_assert_int_eq(rf_store_scan_list(st, 0, 10, &rows, &n), 0);
	ck_assert_int_eq(n, 6);
	for (int i = 0; i < n; i++) {
		int want = 6 - i;
		snprintf(json, sizeof(json), "{\"i\":%d}", want);
		ck_assert_int_eq(rows[i].id, want);
		ck_assert_int_eq(rows[i].scanned_at_ms, 1000 * want);
		ck_assert_double_eq(rows[i].scan_duration_ms, want + 0.5);
		ck_assert_str_eq(rows[i].hardware_json, json);
	}
	api_scan_rows_free(rows, n);

	/* Paging with the id cursor. */
	ck_assert_int_eq(rf_store_scan_list(st, 0, 2, &rows, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(rows[0].id, 6);
	ck_assert_int_eq(rows[1].id, 5);
	api_scan_rows_free(rows, n);
	ck_assert_int_eq(rf_store_scan_list(st, 5, 2, &rows, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(rows[0].id, 4);
	ck_assert_int_eq(rows[1].id, 3);
	api_scan_rows_free(rows, n);
	ck_assert_int_eq(rf_store_scan_list(st, 2, 2, &rows, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(rows[0].id, 1);
	api_scan_rows_free(rows, n);
	rows = (struct api_scan_row *)&rows;
	n = -1;
	ck_assert_int_eq(rf_store_scan_list(st, 1, 2, &rows, &n), 0);
	ck_assert_int_eq(n, 0);
	ck_assert_ptr_null(rows);
	/* A negative cursor means "from the newest", like 0. */
	ck_assert_int_eq(rf_store_scan_list(st, -5, 1, &rows, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(rows[0].id, 6);
	api_scan_rows_free(rows, n);

	/* The limit is clamped to [1, 1000]. */
	ck_assert_int_eq(rf_store_scan_list(st, 0, 0, &rows, &n), 0);
	ck_assert_int_eq(n, 1);
	api_scan_rows_free(rows, n);
	ck_assert_int_eq(rf_store_scan_list(st, 0, -7, &rows, &n), 0);
	ck_assert_int_eq(n, 1);
	api_scan_rows_free(rows, n);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(rf_store_scan_append(st, 7000 + i, 1, "[]", 2, 0), 0);
	ck_assert_int_eq(rf_store_scan_list(st, 0, 5000, &rows, &n), 0);
	ck_assert_int_eq(n, 1000);
	ck_assert_int_eq(rows[0].id, 1006);
	ck_assert_int_eq(rows[999].id, 7);
	api_scan_rows_free(rows, n);

	/* The same through the api_store interface. */
	api = rf_store_api(st);
	ck_assert(api.available);
	ck_assert_ptr_eq(api.ctx, st);
	ck_assert_int_eq(api.scan_list(api.ctx, 3, 10, &rows, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(rows[0].id, 2);
	api_scan_rows_free(rows, n);

	/* keep_last trims to the newest rows, in the same transaction as the insert. */
	ck_assert_int_eq(rf_store_scan_append(st, 9000, 2, "{\"last\":true}", 13, 3), 0);
	ck_assert_int_eq(rf_store_scan_list(st, 0, 1000, &rows, &n), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(rows[0].id, 1007);
	ck_assert_str_eq(rows[0].hardware_json, "{\"last\":true}");
	ck_assert_int_eq(rows[1].id, 1006);
	ck_assert_int_eq(rows[2].id, 1005);
	api_scan_rows_free(rows, n);
	ck_assert_int_eq(rf_store_scan_append(st, 9001, 2, "{}", 2, 1), 0);
	ck_assert_int_eq(rf_store_scan_list(st, 0, 1000, &rows, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(rows[0].id, 1008);
	api_scan_rows_free(rows, n);
	/* keep_last <= 0 keeps everything; a larger keep_last deletes nothing. */
	ck_assert_int_eq(rf_store_scan_append(st, 9002, 2, "{}", 2, -1), 0);
	ck_assert_int_eq(rf_store_scan_append(st, 9003, 2, "{}", 2, 50), 0);
	ck_assert_int_eq(rf_store_scan_list(st, 0, 1000, &rows, &n), 0);
	ck_assert_int_eq(n, 3);
	api_scan_rows_free(rows, n);

	/* Bad input is refused and stores nothing. */
	ck_assert_int_eq(rf_store_scan_append(st, 1, 1, NULL, 0, 0), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_store_scan_append(st, -1, 1, "{}", 2, 0), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_store_scan_append(st, 1, -0.5, "{}", 2, 0), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_store_scan_append(st, 1, NAN, "{}", 2, 0), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_store_scan_append(st, 1, INFINITY, "{}", 2, 0), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_store_scan_append(st, 1, 1, "{\"broken\":", 10, 1), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_store_scan_list(st, 0, 1000, &rows, &n), 0);
	ck_assert_int_eq(n, 3);
	api_scan_rows_free(rows, n);

	rf_store_close(st);
	free(path);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Writes a valid rigfit database at path with enough scans to span many pages. */
static void build_big(const char *path)
{
	struct rf_store *st = open_ok(path);
	char json[2100];
	int len;

	memset(json, ' ', sizeof(json));
	json[0] = '[';
	len = (int)sizeof(json) - 1;
	json[len - 1] = ']';
	json[len] = '\0';
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(rf_store_scan_append(st, i, 1, json, (size_t)len, 0), 0);
	rf_store_close(st);
}

START_TEST(test_refuse_corrupt)
{
	char *dir = t_mkdtemp(), *path, *good, *wal;
	unsigned char noise[8192];
	uint32_t x = 2463534242u;
	size_t glen = 0;
	char *gbytes;
	sqlite3 *db;

	ck_assert_ptr_nonnull(dir);
	path = t_path(dir, "bad.db");
	wal = t_path(dir, "bad.db-wal");

	/* Random bytes (xorshift, so a failure can be replayed). */
	for (size_t i = 0; i < sizeof(noise); i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		noise[i] = (unsigned char)x;
	}
	ck_assert_int_eq(t_write_file(path, noise, sizeof(noise)), 0);
	open_refused(path, rf_embed_migrations, RF_E_STORE_UNAVAILABLE, "not a database");
	ck_assert(!exists(wal));

	/* A text file. */
	ck_assert_int_eq(t_write_file(path, "profiles:\n  - rtx-4090\n", 23), 0);
	open_refused(path, rf_embed_migrations, RF_E_STORE_UNAVAILABLE, "bad.db");
	ck_assert(!exists(wal));

	/* A rigfit database cut in half, and one with a page overwritten. */
	good = t_path(dir, "good.db");
	build_big(good);
	gbytes = t_read_file(good, &glen);
	ck_assert_ptr_nonnull(gbytes);
	ck_assert_uint_gt(glen, 100 * 4096);
	ck_assert_int_eq(t_write_file(path, gbytes, glen / 2), 0);
	open_refused(path, rf_embed_migrations, RF_E_STORE_UNAVAILABLE, "corrupt");
	memcpy(gbytes + 40 * 4096, noise, 4096);
	ck_assert_int_eq(t_write_file(path, gbytes, glen), 0);
	open_refused(path, rf_embed_migrations, RF_E_STORE_UNAVAILABLE, "corrupt");
	/* Only the first 50 bytes of a header: too short to be a database. */
	ck_assert_int_eq(t_write_file(path, gbytes, 50), 0);
	open_refused(path, rf_embed_migrations, RF_E_STORE_UNAVAILABLE, NULL);
	free(gbytes);

	/* Another program's SQLite database (rollback journal, user_version 0). */
	unlink(path);
	db = raw_open(path);
	raw_exec(db, "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT); "
		     "INSERT INTO notes (text) VALUES ('keep me')");
	sqlite3_close(db);
	open_refused(path, rf_embed_migrations, RF_E_STORE_UNAVAILABLE, "not a rigfit");
	ck_assert(!exists(wal));
	db = raw_open(path);
	raw_text_eq(db, "PRAGMA journal_mode", "delete");
	raw_text_eq(db, "SELECT text FROM notes", "keep me");
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM sqlite_master"), 1);
	sqlite3_close(db);

	free(good);
	free(wal);
	free(path);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Opens path as the unprivileged user nobody (in a child when we are root, since root ignores
 * permissions) and writes the open's result and message, and with write_rc not NULL, the
 * result of appending a scan through the store it opened. Returns false when that cannot be
 * arranged: privileges cannot be dropped, or we run under valgrind, whose helper files a
 * child that became nobody cannot remove (the ASan run covers this path). */
static bool open_unprivileged(const char *path, int *rc, char *err, size_t errlen, int *write_rc)
{
	int fds[2], status = 0;
	pid_t pid;

	if (geteuid() != 0) {
		struct rf_store *st = NULL;
		*rc = rf_store_open(path, rf_embed_migrations, &st, err, errlen);
		if (write_rc)
			*write_rc = rf_store_scan_append(st, 1, 1, "{}", 2, 0);
		rf_store_close(st);
		return true;
	}
	if (getenv("RIGFIT_VALGRIND"))
		return false;
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rf_store *st = NULL;
		char buf[600] = {0};
		int r, w;

		close(fds[0]);
		if (setgid(65534) != 0 || setuid(65534) != 0 || geteuid() == 0)
			_exit(3);
		r = rf_store_open(path, rf_embed_migrations, &st, buf + 2 * sizeof(int),
				  sizeof(buf) - 2 * sizeof(int));
		w = rf_store_scan_append(st, 1, 1, "{}", 2, 0);
		rf_store_close(st);
		memcpy(buf, &r, sizeof(int));
		memcpy(buf + sizeof(int), &w, sizeof(int));
		if (write(fds[1], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			_exit(4);
		_exit(0);
	}
	close(fds[1]);
	{
		char buf[600];
		ssize_t got = read(fds[0], buf, sizeof(buf));
		close(fds[0]);
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status) == 3)
			return false;
		ck_assert_int_eq(got, (ssize_t)sizeof(buf));
		memcpy(rc, buf, sizeof(int));
		if (write_rc)
			memcpy(write_rc, buf + sizeof(int), sizeof(int));
		buf[sizeof(buf) - 1] = '\0';
		snprintf(err, errlen, "%s", buf + 2 * sizeof(int));
	}
	return true;
}

START_TEST(test_refuse_unwritable_and_newer)
{
	char *dir = t_mkdtemp(), *file, *p1, *p2, *ro, *rodb, *path;
	struct rf_store *st;
	char err[600];
	size_t blen = 0, alen = 0;
	char *before, *after;
	sqlite3 *db;
	int rc = 0;

	ck_assert_ptr_nonnull(dir);
	/* A path whose directory is a regular file, or lies under one: cannot be created. */
	file = t_path(dir, "plain");
	ck_assert_int_eq(t_write_file(file, "x", 1), 0);
	p1 = t_path(file, "rigfit.db");
	p2 = t_path(file, "var/rigfit.db");
	open_refused(p1, rf_embed_migrations, RF_E_STORE_UNAVAILABLE, "not a directory");
	open_refused(p2, rf_embed_migrations, RF_E_STORE_UNAVAILABLE, "cannot create directory");
	open_refused("", rf_embed_migrations, RF_E_STORE_UNAVAILABLE, NULL);

	/* A read-only file in a read-only directory, opened by a user who cannot write. */
	ck_assert_int_eq(chmod(dir, 0755), 0);
	ro = t_path(dir, "ro");
	ck_assert_int_eq(mkdir(ro, 0755), 0);
	rodb = t_path(ro, "rigfit.db");
	st = open_ok(rodb);
	ck_assert_int_eq(rf_store_scan_append(st, 1, 1, "{}", 2, 0), 0);
	rf_store_close(st);
	ck_assert_int_eq(chmod(rodb, 0444), 0);
	ck_assert_int_eq(chmod(ro, 0555), 0);
	before = t_read_file(rodb, &blen);
	ck_assert_ptr_nonnull(before);
	err[0] = '\0';
	if (open_unprivileged(rodb, &rc, err, sizeof(err), NULL)) {
		ck_assert_msg(rc == RF_E_STORE_UNAVAILABLE, "got %d (%s)", rc, err);
		assert_msg(err, "rigfit.db");
		assert_msg(err, "write");
		/* A writable file in a directory where the WAL files cannot be made. */
		ck_assert_int_eq(chmod(ro, 0755), 0);
		ck_assert_int_eq(chmod(rodb, 0666), 0);
		ck_assert_int_eq(chmod(ro, 0555), 0);
		err[0] = '\0';
		ck_assert(open_unprivileged(rodb, &rc, err, sizeof(err), NULL));
		ck_assert_msg(rc == RF_E_STORE_UNAVAILABLE, "got %d (%s)", rc, err);
		assert_msg(err, "directory");
	}
	after = t_read_file(rodb, &alen);
	ck_assert_ptr_nonnull(after);
	ck_assert_uint_eq(blen, alen);
	ck_assert(memcmp(before, after, blen) == 0);
	free(before);
	free(after);
	ck_assert_int_eq(chmod(ro, 0755), 0);

	/* A database from a newer rigfit (a higher user_version) is refused untouched. */
	path = t_path(dir, "newer.db");
	st = open_ok(path);
	rf_store_close(st);
	db = raw_open(path);
	{
		char sql[64];
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", n_migrations() + 5);
		raw_exec(db, sql);
	}
	sqlite3_close(db);
	open_refused(path, rf_embed_migrations, RF_E_STORE_UNAVAILABLE, "newer rigfit");
	db = raw_open(path);
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), n_migrations() + 5);
	sqlite3_close(db);

	free(path);
	free(rodb);
	free(ro);
	free(p2);
	free(p1);
	free(file);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Returns milliseconds from a monotonic clock. */
static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(test_locked)
{
	char *dir = t_mkdtemp(), *path;
	struct api_scan_row *rows = NULL;
	struct rf_store *st;
	sqlite3 *other;
	int64_t t0;
	int n = 0;

	ck_assert_ptr_nonnull(dir);
	path = t_path(dir, "l.db");
	st = open_ok(path);
	ck_assert_int_eq(rf_store_set_busy_timeout(st, 50), 0);
	ck_assert_int_eq(rf_store_set_busy_timeout(st, -1), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_store_set_busy_timeout(NULL, 10), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_eq(rf_store_scan_append(st, 1, 1, "{\"n\":1}", 7, 0), 0);

	other = raw_open(path);
	raw_exec(other, "BEGIN EXCLUSIVE");
	raw_exec(other, "INSERT INTO scans (scanned_at_ms, scan_duration_ms, hardware_json) "
			"VALUES (2, 1, '{\"n\":2}')");

	t0 = now_ms();
	ck_assert_int_eq(rf_store_scan_append(st, 3, 1, "{\"n\":3}", 7, 1), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_lt(now_ms() - t0, 1500);
	/* WAL: reading is not blocked by the writer, and sees only committed rows. */
	ck_assert_int_eq(rf_store_scan_list(st, 0, 10, &rows, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(rows[0].hardware_json, "{\"n\":1}");
	api_scan_rows_free(rows, n);

	raw_exec(other, "COMMIT");
	sqlite3_close(other);

	ck_assert_int_eq(rf_store_scan_append(st, 3, 1, "{\"n\":3}", 7, 0), 0);
	ck_assert_int_eq(rf_store_scan_list(st, 0, 10, &rows, &n), 0);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(rows[0].hardware_json, "{\"n\":3}");
	ck_assert_str_eq(rows[1].hardware_json, "{\"n\":2}");
	ck_assert_str_eq(rows[2].hardware_json, "{\"n\":1}");
	api_scan_rows_free(rows, n);
	rf_store_close(st);

	free(path);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* An upgrade that cannot take the write lock waits the busy timeout, then fails cleanly and
 * leaves the old schema; once the lock is gone it succeeds. (Waits about 2 s.) */
START_TEST(test_locked_during_upgrade)
{
	char *dir = t_mkdtemp(), *path;
	struct rf_store *st;
	sqlite3 *other;

	ck_assert_ptr_nonnull(dir);
	path = t_path(dir, "u.db");
	build_v1(path);
	other = raw_open(path);
	raw_exec(other, "BEGIN EXCLUSIVE");
	raw_exec(other, "INSERT INTO scans (scanned_at_ms, scan_duration_ms, hardware_json) "
			"VALUES (2, 1, '{}')");
	open_refused(path, rf_embed_migrations, RF_E_STORE_UNAVAILABLE, "locked");
	ck_assert_int_eq(raw_int(other, "PRAGMA user_version"), 1);
	raw_exec(other, "COMMIT");
	sqlite3_close(other);

	st = open_ok(path);
	ck_assert_int_eq(rf_store_schema_version(st), n_migrations());
	rf_store_close(st);
	free(path);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* A database file that the daemon's user cannot write, in a directory it can: the start is
 * refused before SQLite reads it, leaving no -wal or -shm behind (one made read-only would
 * make every write of the next start fail), and once the file is fixed the next start
 * writes. */
START_TEST(test_readonly_start_leaves_nothing)
{
	char *dir = t_mkdtemp(), *path, *wal, *shm;
	struct rf_store *st;
	char err[600] = "";
	int rc = 0, wrc = -1;

	ck_assert_int_eq(chmod(dir, 0777), 0);
	path = t_path(dir, "ro.db");
	wal = t_path(dir, "ro.db-wal");
	shm = t_path(dir, "ro.db-shm");
	st = open_ok(path);
	ck_assert_int_eq(rf_store_scan_append(st, 1, 1, "{}", 2, 0), 0);
	rf_store_close(st);
	ck_assert_int_eq(chmod(path, 0444), 0);
	if (open_unprivileged(path, &rc, err, sizeof(err), NULL)) {
		ck_assert_msg(rc == RF_E_STORE_UNAVAILABLE, "got %d (%s)", rc, err);
		assert_msg(err, "read-only");
		ck_assert_msg(!exists(wal) && !exists(shm), "a refused start left its WAL files");
		ck_assert_int_eq(chmod(path, 0666), 0);
		ck_assert(open_unprivileged(path, &rc, err, sizeof(err), &wrc));
		ck_assert_msg(rc == 0, "got %d (%s)", rc, err);
		ck_assert_int_eq(wrc, 0);
	}
	t_rmtree(dir);
	free(dir);
	free(path);
	free(wal);
	free(shm);
}
END_TEST

START_TEST(test_bad_migrations)
{
	char *dir = t_mkdtemp(), *path;
	struct rf_store *st;
	sqlite3 *db;
	const char *init = rf_embed_migrations[0].data;
	const struct rf_embedded_file misnumbered[] = {
		{"0001_init.sql", init, strlen(init)},
		{"0003_skip.sql", "CREATE TABLE a (x);", 19},
		{NULL, NULL, 0},
	};
	const struct rf_embedded_file unnamed[] = {
		{"init.sql", init, strlen(init)},
		{NULL, NULL, 0},
	};
	const struct rf_embedded_file failing[] = {
		{"0001_init.sql", init, strlen(init)},
		{"0002_bad.sql", "CREATE TABLE b (x); INSERT INTO nosuch VALUES (1);", 51},
		{NULL, NULL, 0},
	};
	const struct rf_embedded_file commits[] = {
		{"0001_init.sql", init, strlen(init)},
		{"0002_commit.sql", "CREATE TABLE c (x); COMMIT; CREATE TABLE d (x);", 47},
		{NULL, NULL, 0},
	};
	const struct rf_embedded_file sets_version[] = {
		{"0001_init.sql", init, strlen(init)},
		{"0002_version.sql", "CREATE TABLE e (x); PRAGMA user_version = 9;", 44},
		{NULL, NULL, 0},
	};

	ck_assert_ptr_nonnull(dir);
	path = t_path(dir, "m.db");
	open_refused(path, misnumbered, RF_E_INTERNAL, "0003_skip.sql");
	ck_assert(!exists(path));
	open_refused(path, unnamed, RF_E_INTERNAL, "init.sql");
	open_refused(path, NULL, RF_E_INTERNAL, NULL);
	ck_assert(!exists(path));

	/* Migration 1 commits; migration 2 fails and leaves no trace. */
	open_refused(path, failing, RF_E_STORE_UNAVAILABLE, "0002_bad.sql");
	open_refused(path, failing, RF_E_STORE_UNAVAILABLE, "no such table");
	open_refused(path, commits, RF_E_INTERNAL, "COMMIT");
	open_refused(path, sets_version, RF_E_INTERNAL, "user_version");
	db = raw_open(path);
	ck_assert_int_eq(raw_int(db, "PRAGMA user_version"), 1);
	ck_assert_int_eq(raw_int(db, "SELECT count(*) FROM sqlite_master WHERE name IN "
				     "('a', 'b', 'c', 'd', 'e')"),
			 0);
	sqlite3_close(db);

	/* The real migrations still apply on top. */
	st = open_ok(path);
	ck_assert_int_eq(rf_store_schema_version(st), n_migrations());
	rf_store_close(st);

	free(path);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_null_handles)
{
	struct api_scan_row *rows = (struct api_scan_row *)&rows;
	struct rf_store *st = (struct rf_store *)&st;
	struct api_store api;
	char err[64];
	int n = 42;

	rf_store_close(NULL);
	api_scan_rows_free(NULL, 3);
	api = rf_store_api(NULL);
	ck_assert(!api.available);
	ck_assert_ptr_null(api.ctx);
	ck_assert_ptr_nonnull(api.scan_list);
	ck_assert_int_eq(api.scan_list(api.ctx, 0, 10, &rows, &n), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_eq(rf_store_scan_list(NULL, 0, 10, &rows, &n), RF_E_STORE_UNAVAILABLE);
	ck_assert_ptr_eq(rows, (struct api_scan_row *)&rows);
	ck_assert_int_eq(n, 42);
	ck_assert_int_eq(rf_store_scan_append(NULL, 1, 1, "{}", 2, 0), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_eq(rf_store_schema_version(NULL), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_lt(rf_store_open(NULL, rf_embed_migrations, &st, err, sizeof(err)), 0);
	ck_assert_ptr_null(st);
	/* No error buffer at all is allowed. */
	ck_assert_int_lt(rf_store_open(NULL, rf_embed_migrations, &st, NULL, 0), 0);
}
END_TEST

struct reader_arg {
	struct rf_store *st;
	volatile int stop;
	int failures;
	int reads;
};

/* Lists the history over and over while another thread appends. */
static void *reader_main(void *p)
{
	struct reader_arg *a = p;

	while (!a->stop) {
		struct api_scan_row *rows = NULL;
		int n = 0;
		if (rf_store_scan_list(a->st, 0, 100, &rows, &n) != 0 || n > 20)
			a->failures++;
		for (int i = 1; i < n; i++) {
			if (rows[i].id >= rows[i - 1].id)
				a->failures++;
		}
		api_scan_rows_free(rows, n);
		a->reads++;
	}
	return NULL;
}

START_TEST(test_threads)
{
	char *dir = t_mkdtemp(), *path;
	struct reader_arg arg = {0};
	struct api_scan_row *rows = NULL;
	pthread_t th;
	int n = 0;

	ck_assert_ptr_nonnull(dir);
	path = t_path(dir, "t.db");
	arg.st = open_ok(path);
	ck_assert_int_eq(pthread_create(&th, NULL, reader_main, &arg), 0);
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(rf_store_scan_append(arg.st, i, 1, "{\"x\":[1,2,3]}", 13, 20), 0);
	arg.stop = 1;
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(arg.failures, 0);
	ck_assert_int_gt(arg.reads, 0);
	ck_assert_int_eq(rf_store_scan_list(arg.st, 0, 100, &rows, &n), 0);
	ck_assert_int_eq(n, 20);
	ck_assert_int_eq(rows[0].id, 200);
	api_scan_rows_free(rows, n);
	rf_store_close(arg.st);
	free(path);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* SQLite allocator that fails exactly one allocation: the fail_at-th from when it is armed. */
static sqlite3_mem_methods oom_real;
static long oom_count;
static long oom_fail_at; /* 0: disarmed */
static bool oom_fired;

/* Returns true when this allocation is the one to fail. */
static bool oom_now(void)
{
	if (oom_fail_at <= 0)
		return false;
	if (++oom_count == oom_fail_at) {
		oom_fired = true;
		return true;
	}
	return false;
}

static void *oom_malloc(int n)
{
	return oom_now() ? NULL : oom_real.xMalloc(n);
}

static void *oom_realloc(void *p, int n)
{
	return oom_now() ? NULL : oom_real.xRealloc(p, n);
}

/* Installs (on) or removes (off) the failing allocator; SQLite must be shut down to swap. */
static void oom_install(bool on)
{
	static sqlite3_mem_methods wrapped;

	ck_assert_int_eq(sqlite3_shutdown(), SQLITE_OK);
	if (on) {
		ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &oom_real), SQLITE_OK);
		wrapped = oom_real;
		wrapped.xMalloc = oom_malloc;
		wrapped.xRealloc = oom_realloc;
		ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_MALLOC, &wrapped), SQLITE_OK);
	} else {
		ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_MALLOC, &oom_real), SQLITE_OK);
	}
	ck_assert_int_eq(sqlite3_initialize(), SQLITE_OK);
}

/* Runs open, append, list and close with the fail_at-th SQLite allocation failing. Every
 * failure must be a clean negative code, and the file must stay usable: a later open without
 * failures must succeed with every row that was reported as stored. */
static void oom_round(const char *dir, long fail_at, long *allocs /* OUT */)
{
	char name[64], err[512];
	struct api_scan_row *rows = NULL;
	struct rf_store *st = NULL;
	char *path;
	int rc, n = 0, stored = 0;

	snprintf(name, sizeof(name), "oom-%ld.db", fail_at);
	path = t_path(dir, name);
	oom_count = 0;
	oom_fired = false;
	oom_fail_at = fail_at;
	rc = rf_store_open(path, rf_embed_migrations, &st, err, sizeof(err));
	if (rc < 0) {
		ck_assert_msg(rc == RF_E_NOMEM || rc == RF_E_STORE_UNAVAILABLE,
			      "fail_at %ld: open returned %d (%s)", fail_at, rc, err);
		ck_assert_ptr_null(st);
		assert_msg(err, NULL);
	} else {
		rc = rf_store_scan_append(st, 1, 1, "{}", 2, 5);
		ck_assert_msg(rc == 0 || rc == RF_E_NOMEM || rc == RF_E_STORE_UNAVAILABLE,
			      "fail_at %ld: append returned %d", fail_at, rc);
		stored = rc == 0;
		rc = rf_store_scan_list(st, 0, 10, &rows, &n);
		ck_assert_msg(rc == 0 || rc == RF_E_NOMEM || rc == RF_E_STORE_UNAVAILABLE,
			      "fail_at %ld: list returned %d", fail_at, rc);
		if (rc == 0) {
			ck_assert_int_eq(n, stored);
			api_scan_rows_free(rows, n);
		}
		rf_store_close(st);
	}
	oom_fail_at = 0;
	*allocs = oom_count;

	st = open_ok(path);
	ck_assert_int_eq(rf_store_schema_version(st), n_migrations());
	ck_assert_int_eq(rf_store_scan_list(st, 0, 10, &rows, &n), 0);
	ck_assert_int_eq(n, stored);
	api_scan_rows_free(rows, n);
	rf_store_close(st);
	free(path);
}

START_TEST(test_oom)
{
	char *dir = t_mkdtemp();
	long total = 0, fail_at = 1, rounds = 0;
	/* Under valgrind each round is ~50x slower: sample the early points too. */
	long early = getenv("RIGFIT_VALGRIND") ? 5 : 1;

	ck_assert_ptr_nonnull(dir);
	oom_install(true);
	/* Every allocation point early on (open, quick_check, the migrations), then a stride, so
	 * the test stays quick while still reaching the statements and the append. */
	for (;;) {
		oom_round(dir, fail_at, &total);
		rounds++;
		if (!oom_fired)
			break;
		fail_at += fail_at < 300 ? early : 37;
		ck_assert_msg(rounds < 5000, "no end to the allocations (%ld)", total);
	}
	oom_install(false);
	/* The last round ran without a failure: it saw every allocation there is. */
	ck_assert_int_gt(total, 300);
	ck_assert_int_gt(rounds, 50);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* Declared here (not as a line starting with "Suite") so the Makefile collects it once. */

Suite *store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc = tcase_create("store");
	TCase *slow = tcase_create("store_slow");

	tcase_add_test(tc, test_open_fresh);
	tcase_add_test(tc, test_upgrade_from_0001);
	tcase_add_test(tc, test_append_list);
	tcase_add_test(tc, test_refuse_corrupt);
	tcase_add_test(tc, test_refuse_unwritable_and_newer);
	tcase_add_test(tc, test_locked);
	tcase_add_test(tc, test_bad_migrations);
	tcase_add_test(tc, test_readonly_start_leaves_nothing);
	tcase_add_test(tc, test_null_handles);
	tcase_add_test(tc, test_threads);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tcase_add_test(slow, test_locked_during_upgrade);
	tcase_add_test(slow, test_oom);
	tcase_set_timeout(slow, 300);
	suite_add_tcase(s, slow);
	return s;
}
