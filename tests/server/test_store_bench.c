/*
 * Tests of server/store/store_bench.c against real SQLite files: insert and the idempotent
 * repeat of a run_id, every filter of the listing, keyset pagination across pages (no run
 * twice, none missed, also when rows arrive between pages), get and delete, the schema's
 * CHECKs surfacing as RF_E_INVALID_VALUE, a NULL store, and the api_store wiring. A raw
 * sqlite3 connection witnesses what is on disk.
 */
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "server/embedded.h"
#include "server/store/store.h"
#include "server/store/store_bench.h"
#include "tests/test.h"

/* A fresh store in a temp dir; *dir to remove afterwards. */
static struct rf_store *open_fresh(char **dir, char **path)
{
	struct rf_store *st = NULL;
	char err[256];

	*dir = t_mkdtemp();
	*path = t_path(*dir, "b.db");
	ck_assert_int_eq(rf_store_open(*path, rf_embed_migrations, &st, err, sizeof(err)), 0);
	return st;
}

static void close_fresh(struct rf_store *st, char *dir, char *path)
{
	rf_store_close(st);
	t_rmtree(dir);
	free(dir);
	free(path);
}

/* A valid run: model m, measured at second sec of 2025-04-24 12:00, decode speed tps. */
static struct api_bench_run make_run(const char *run_id, const char *model, const char *hw, int sec,
				     double tps)
{
	struct api_bench_run r;

	memset(&r, 0, sizeof(r));
	snprintf(r.run_id, sizeof(r.run_id), "%s", run_id);
	snprintf(r.hardware_fingerprint, sizeof(r.hardware_fingerprint), "%s", hw);
	snprintf(r.model, sizeof(r.model), "%s", model);
	snprintf(r.precision, sizeof(r.precision), "Q4_K_M");
	snprintf(r.backend, sizeof(r.backend), "cuda");
	snprintf(r.runtime, sizeof(r.runtime), "llama.cpp");
	snprintf(r.source, sizeof(r.source), "manual");
	snprintf(r.measured_at, sizeof(r.measured_at), "2025-04-24T12:%02u:%02u.000Z",
		 (unsigned)(sec / 60) % 60u, (unsigned)sec % 60u);
	r.generated_tokens = 128;
	r.decode_tokens_per_s = tps;
	return r;
}

static int64_t insert_ok(struct rf_store *st, const struct api_bench_run *r, bool want_existed)
{
	int64_t id = -1;
	bool existed = !want_existed;

	ck_assert_int_eq(rf_store_bench_insert(st, r, &id, &existed), 0);
	ck_assert(existed == want_existed);
	ck_assert_int_gt(id, 0);
	return id;
}

START_TEST(test_insert_get_idempotent)
{
	char *dir, *path;
	struct rf_store *st = open_fresh(&dir, &path);
	struct api_bench_run r = make_run("run-a", "m1", "hw-1", 0, 120.5), *got = NULL;
	char settings[] = "{\"n_ctx\":4096}", peak[] = "{\"gpu0\":5000000000}";
	int64_t id, id2;
	sqlite3 *raw;
	sqlite3_stmt *s;

	r.settings_json = settings;
	r.peak_memory_json = peak;
	snprintf(r.runtime_version, sizeof(r.runtime_version), "b5163-8cf427ff");
	id = insert_ok(st, &r, false);
	/* The same run_id with other content: nothing stored, the first row's id. */
	r.decode_tokens_per_s = 999;
	id2 = insert_ok(st, &r, true);
	ck_assert_int_eq(id, id2);

	ck_assert_int_eq(rf_store_bench_get(st, id, &got), 0);
	ck_assert_str_eq(got->run_id, "run-a");
	ck_assert_str_eq(got->model, "m1");
	ck_assert_str_eq(got->runtime_version, "b5163-8cf427ff");
	ck_assert(got->decode_tokens_per_s == 120.5);
	ck_assert(got->prefill_tokens_per_s == 0);
	ck_assert_str_eq(got->settings_json, "{\"n_ctx\":4096}");
	ck_assert_str_eq(got->peak_memory_json, "{\"gpu0\":5000000000}");
	ck_assert_str_eq(got->measured_at, "2025-04-24T12:00:00.000Z");
	ck_assert_int_eq((int)strlen(got->created_at), 24);
	api_bench_runs_free(got, 1);

	/* On disk: one row; the unmeasured speed and absent version are NULL, not 0 or "". */
	raw = NULL;
	ck_assert_int_eq(sqlite3_open(path, &raw), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(raw,
					    "SELECT count(*), sum(prefill_tokens_per_s IS NULL), "
					    "sum(runtime_version IS NULL) FROM benchmarks",
					    -1, &s, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int(s, 0), 1);
	ck_assert_int_eq(sqlite3_column_int(s, 1), 1);
	ck_assert_int_eq(sqlite3_column_int(s, 2), 0);
	sqlite3_finalize(s);
	sqlite3_close(raw);

	/* A second run without version or settings: NULL and the default {}. */
	r = make_run("run-b", "m1", "hw-1", 1, 50);
	id2 = insert_ok(st, &r, false);
	ck_assert_int_ne(id, id2);
	ck_assert_int_eq(rf_store_bench_get(st, id2, &got), 0);
	ck_assert_str_eq(got->runtime_version, "");
	ck_assert_str_eq(got->settings_json, "{}");
	ck_assert_ptr_null(got->peak_memory_json);
	api_bench_runs_free(got, 1);

	ck_assert_int_eq(rf_store_bench_get(st, 9999, &got), RF_E_NOT_FOUND);
	close_fresh(st, dir, path);
}
END_TEST

START_TEST(test_checks_are_invalid_value)
{
	char *dir, *path;
	struct rf_store *st = open_fresh(&dir, &path);
	struct api_bench_run r;
	char not_object[] = "[1,2]", broken[] = "{\"a\":";
	int64_t id = 77;
	bool existed = true;

	/* No speed at all. */
	r = make_run("bad-1", "m", "hw", 0, 0);
	ck_assert_int_eq(rf_store_bench_insert(st, &r, &id, &existed), RF_E_INVALID_VALUE);
	/* A timestamp not in the canonical form. */
	r = make_run("bad-2", "m", "hw", 0, 10);
	snprintf(r.measured_at, sizeof(r.measured_at), "2025-04-24 12:00:00");
	ck_assert_int_eq(rf_store_bench_insert(st, &r, &id, &existed), RF_E_INVALID_VALUE);
	/* Settings that are not an object; peak memory that is not JSON. */
	r = make_run("bad-3", "m", "hw", 0, 10);
	r.settings_json = not_object;
	ck_assert_int_eq(rf_store_bench_insert(st, &r, &id, &existed), RF_E_INVALID_VALUE);
	r = make_run("bad-4", "m", "hw", 0, 10);
	r.peak_memory_json = broken;
	ck_assert_int_eq(rf_store_bench_insert(st, &r, &id, &existed), RF_E_INVALID_VALUE);
	/* Empty required text, negative tokens. */
	r = make_run("", "m", "hw", 0, 10);
	ck_assert_int_eq(rf_store_bench_insert(st, &r, &id, &existed), RF_E_INVALID_VALUE);
	r = make_run("bad-5", "", "hw", 0, 10);
	ck_assert_int_eq(rf_store_bench_insert(st, &r, &id, &existed), RF_E_INVALID_VALUE);
	r = make_run("bad-6", "m", "hw", 0, 10);
	r.prompt_tokens = -1;
	ck_assert_int_eq(rf_store_bench_insert(st, &r, &id, &existed), RF_E_INVALID_VALUE);
	/* Outputs untouched on failure, and no transaction left open: a good insert works. */
	ck_assert_int_eq(id, 77);
	ck_assert(existed);
	r = make_run("good", "m", "hw", 0, 10);
	insert_ok(st, &r, false);
	ck_assert_int_eq(rf_store_scan_append(st, 1, 1, "{}", 2, 0), 0);
	close_fresh(st, dir, path);
}
END_TEST

/* Lists with f and returns the runs (n in *n). */
static struct api_bench_run *list(struct rf_store *st, const struct api_bench_filter *f, int *n)
{
	struct api_bench_run *runs = NULL;

	ck_assert_int_eq(rf_store_bench_list(st, f, &runs, n), 0);
	return runs;
}

START_TEST(test_list_filters_and_order)
{
	char *dir, *path;
	struct rf_store *st = open_fresh(&dir, &path);
	struct api_bench_filter f;
	struct api_bench_run *runs, r;
	int n;

	r = make_run("a", "m1", "hw-1", 10, 1);
	insert_ok(st, &r, false);
	r = make_run("b", "m2", "hw-1", 30, 2);
	insert_ok(st, &r, false);
	r = make_run("c", "m1", "hw-2", 20, 3);
	insert_ok(st, &r, false);
	r = make_run("d", "m1", "hw-1", 30, 4); /* same time as b: the id breaks the tie */
	insert_ok(st, &r, false);

	memset(&f, 0, sizeof(f));
	f.limit = 100;
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 4);
	ck_assert_str_eq(runs[0].run_id, "d");
	ck_assert_str_eq(runs[1].run_id, "b");
	ck_assert_str_eq(runs[2].run_id, "c");
	ck_assert_str_eq(runs[3].run_id, "a");
	api_bench_runs_free(runs, n);

	snprintf(f.model, sizeof(f.model), "m1");
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(runs[0].run_id, "d");
	ck_assert_str_eq(runs[2].run_id, "a");
	api_bench_runs_free(runs, n);

	snprintf(f.hardware_fingerprint, sizeof(f.hardware_fingerprint), "hw-1");
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(runs[0].run_id, "d");
	ck_assert_str_eq(runs[1].run_id, "a");
	api_bench_runs_free(runs, n);

	snprintf(f.since, sizeof(f.since), "2025-04-24T12:00:11.000Z");
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(runs[0].run_id, "d");
	api_bench_runs_free(runs, n);

	/* since is inclusive. */
	memset(&f, 0, sizeof(f));
	f.limit = 100;
	snprintf(f.since, sizeof(f.since), "2025-04-24T12:00:20.000Z");
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 3);
	api_bench_runs_free(runs, n);

	/* Nothing matches: NULL and 0. A limit out of range is clamped, not an error. */
	snprintf(f.model, sizeof(f.model), "nope");
	f.limit = 0;
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 0);
	ck_assert_ptr_null(runs);
	/* A model name with SQL in it is only a value. */
	snprintf(f.model, sizeof(f.model), "m1' OR '1'='1");
	f.limit = 5000;
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 0);
	close_fresh(st, dir, path);
}
END_TEST

START_TEST(test_pagination_no_dup_no_gap)
{
	char *dir, *path;
	struct rf_store *st = open_fresh(&dir, &path);
	struct api_bench_filter f;
	struct api_bench_run r, *runs;
	char seen[64] = {0};
	int n, total = 0, pages = 0;

	/* 23 runs over 8 distinct times, so ties cross page boundaries. */
	for (int i = 0; i < 23; i++) {
		char id[16];
		snprintf(id, sizeof(id), "p%02d", i);
		r = make_run(id, "m", "hw", i / 3, 10 + i);
		insert_ok(st, &r, false);
	}
	memset(&f, 0, sizeof(f));
	f.limit = 5;
	for (;;) {
		runs = list(st, &f, &n);
		if (n == 0)
			break;
		pages++;
		for (int i = 0; i < n; i++) {
			int k = atoi(runs[i].run_id + 1) /* test code: digits we wrote */;
			ck_assert_msg(!seen[k], "run %s listed twice", runs[i].run_id);
			seen[k] = 1;
			total++;
			if (i > 0)
				ck_assert(strcmp(runs[i - 1].measured_at, runs[i].measured_at) >
						  0 ||
					  (strcmp(runs[i - 1].measured_at, runs[i].measured_at) ==
						   0 &&
					   runs[i - 1].id > runs[i].id));
		}
		snprintf(f.before_measured_at, sizeof(f.before_measured_at), "%s",
			 runs[n - 1].measured_at);
		f.before_id = runs[n - 1].id;
		api_bench_runs_free(runs, n);
		/* A run newer than the cursor, added between pages, does not shift the pages. */
		if (pages == 2) {
			r = make_run("late", "m", "hw", 59, 1);
			insert_ok(st, &r, false);
		}
	}
	ck_assert_int_eq(total, 23);
	ck_assert_int_eq(pages, 5);
	for (int i = 0; i < 23; i++)
		ck_assert(seen[i]);
	close_fresh(st, dir, path);
}
END_TEST

START_TEST(test_delete_and_api)
{
	char *dir, *path;
	struct rf_store *st = open_fresh(&dir, &path);
	struct api_store api = rf_store_api(st), down = rf_store_api(NULL);
	struct api_bench_run r = make_run("x", "m", "hw", 0, 5), *runs = NULL;
	struct api_bench_filter f;
	int64_t id = 0;
	bool existed = true;
	int n = -1;

	ck_assert(api.available);
	ck_assert_ptr_nonnull(api.bench_insert);
	ck_assert_ptr_nonnull(api.bench_list);
	ck_assert_ptr_nonnull(api.bench_get);
	ck_assert_ptr_nonnull(api.bench_delete);
	ck_assert_int_eq(api.bench_insert(api.ctx, &r, &id, &existed), 0);
	ck_assert(!existed);
	ck_assert_int_eq(api.bench_delete(api.ctx, id), 0);
	ck_assert_int_eq(api.bench_delete(api.ctx, id), RF_E_NOT_FOUND);
	ck_assert_int_eq(api.bench_delete(api.ctx, -5), RF_E_NOT_FOUND);
	memset(&f, 0, sizeof(f));
	f.limit = 10;
	ck_assert_int_eq(api.bench_list(api.ctx, &f, &runs, &n), 0);
	ck_assert_int_eq(n, 0);
	/* After a delete the run_id may be recorded again, as a new row. */
	ck_assert_int_eq(api.bench_insert(api.ctx, &r, &id, &existed), 0);
	ck_assert(!existed);

	/* The NULL store is unavailable, never a crash. */
	ck_assert(!down.available);
	ck_assert_int_eq(rf_store_bench_insert(NULL, &r, &id, &existed), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_eq(rf_store_bench_list(NULL, &f, &runs, &n), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_eq(rf_store_bench_get(NULL, 1, &runs), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_eq(rf_store_bench_delete(NULL, 1), RF_E_STORE_UNAVAILABLE);
	close_fresh(st, dir, path);
}
END_TEST

START_TEST(test_locked_is_unavailable)
{
	char *dir, *path;
	struct rf_store *st = open_fresh(&dir, &path);
	struct api_bench_run r = make_run("lk", "m", "hw", 0, 5);
	sqlite3 *raw = NULL;
	int64_t id;
	bool existed;

	ck_assert_int_eq(rf_store_set_busy_timeout(st, 50), 0);
	ck_assert_int_eq(sqlite3_open(path, &raw), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(raw, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(rf_store_bench_insert(st, &r, &id, &existed), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_eq(sqlite3_exec(raw, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(raw);
	/* The failed call left no transaction open. */
	insert_ok(st, &r, false);
	close_fresh(st, dir, path);
}
END_TEST

/* The store remembers that a fingerprint has no run (the estimator asks on every request),
 * but never past a write: its own, or a commit by another connection (another process, as
 * `rigfit bench record` is). */
START_TEST(test_no_run_memory_never_goes_stale)
{
	char *dir, *path;
	struct rf_store *st = open_fresh(&dir, &path), *other = NULL;
	struct api_bench_filter f;
	struct api_bench_run *runs, r = make_run("mine", "m", "hw-a", 0, 5);
	char err[256];
	int n = -1;
	int64_t id;

	memset(&f, 0, sizeof(f));
	snprintf(f.hardware_fingerprint, sizeof(f.hardware_fingerprint), "hw-a");
	f.limit = 10;
	for (int i = 0; i < 3; i++) {
		runs = list(st, &f, &n);
		ck_assert_int_eq(n, 0);
		ck_assert_ptr_null(runs);
	}
	/* Another connection records a run: seen at once. */
	ck_assert_int_eq(rf_store_open(path, rf_embed_migrations, &other, err, sizeof(err)), 0);
	id = insert_ok(other, &r, false);
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 1);
	api_bench_runs_free(runs, n);
	/* It deletes it: gone at once. */
	ck_assert_int_eq(rf_store_bench_delete(other, id), 0);
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 0);
	rf_store_close(other);
	/* This handle records one: seen at once too. */
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 0);
	insert_ok(st, &r, false);
	runs = list(st, &f, &n);
	ck_assert_int_eq(n, 1);
	api_bench_runs_free(runs, n);
	close_fresh(st, dir, path);
}
END_TEST

/* The benchmarks' version changes on every write (this handle's, or another connection's
 * insert and delete), never on a read, and two openings of one file never share one. */
START_TEST(test_version_follows_every_write)
{
	char *dir, *path;
	struct rf_store *st = open_fresh(&dir, &path), *other = NULL;
	struct api_bench_run r = make_run("v-1", "m", "hw-a", 0, 5),
			     r2 = make_run("v-2", "m", "hw-a", 1, 6);
	struct api_bench_filter f;
	struct api_bench_run *runs;
	uint64_t v0, v1, v2, v3, v4;
	char err[256];
	int64_t id;
	int n;

	memset(&f, 0, sizeof(f));
	f.limit = 10;
	ck_assert_int_eq(rf_store_bench_version(NULL, &v0), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_eq(rf_store_bench_version(st, &v0), 0);
	runs = list(st, &f, &n);
	api_bench_runs_free(runs, n);
	ck_assert_int_eq(rf_store_bench_version(st, &v1), 0);
	ck_assert(v1 == v0); /* a read is no change */
	insert_ok(st, &r, false);
	ck_assert_int_eq(rf_store_bench_version(st, &v1), 0);
	ck_assert(v1 != v0);
	ck_assert_int_eq(rf_store_open(path, rf_embed_migrations, &other, err, sizeof(err)), 0);
	ck_assert_int_eq(rf_store_bench_version(other, &v2), 0);
	ck_assert(v2 != v1); /* another opening */
	id = insert_ok(other, &r2, false);
	ck_assert_int_eq(rf_store_bench_version(st, &v2), 0);
	ck_assert(v2 != v1);
	ck_assert_int_eq(rf_store_bench_delete(other, id), 0);
	ck_assert_int_eq(rf_store_bench_version(st, &v3), 0);
	ck_assert(v3 != v2);
	ck_assert_int_eq(rf_store_bench_version(st, &v4), 0);
	ck_assert(v4 == v3);
	rf_store_close(other);
	close_fresh(st, dir, path);
}
END_TEST

struct version_read {
	struct rf_store *st;
	uint64_t v;
	int rc;
};

static void *read_version(void *arg)
{
	struct version_read *r = arg;

	r->rc = rf_store_bench_version(r->st, &r->v);
	return NULL;
}

/* In one turn of the event loop the loop's thread reads the version once: a commit by another
 * connection shows from its next turn on, and any other thread reads afresh meanwhile. */
START_TEST(test_version_read_once_per_turn)
{
	char *dir, *path;
	struct rf_store *st = open_fresh(&dir, &path), *other = NULL;
	struct api_bench_run r = make_run("t-1", "m", "hw-a", 0, 5),
			     r2 = make_run("t-2", "m", "hw-a", 1, 6);
	struct version_read pool = {st, 0, -1};
	uint64_t v0, v1, v2;
	pthread_t t;
	char err[256];

	rf_store_turn(NULL); /* no store: nothing */
	rf_store_turn(st);
	ck_assert_int_eq(rf_store_bench_version(st, &v0), 0);
	ck_assert_int_eq(rf_store_open(path, rf_embed_migrations, &other, err, sizeof(err)), 0);
	insert_ok(other, &r, false);
	ck_assert_int_eq(rf_store_bench_version(st, &v1), 0);
	ck_assert(v1 == v0); /* the same turn */
	ck_assert_int_eq(pthread_create(&t, NULL, read_version, &pool), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(pool.rc, 0);
	ck_assert(pool.v != v0); /* not the loop's thread: afresh */
	rf_store_turn(st);
	ck_assert_int_eq(rf_store_bench_version(st, &v1), 0);
	ck_assert(v1 != v0);
	ck_assert(v1 == pool.v);
	/* This handle's own write, seen from the next turn (its reply is sent in one). */
	insert_ok(st, &r2, false);
	rf_store_turn(st);
	ck_assert_int_eq(rf_store_bench_version(st, &v2), 0);
	ck_assert(v2 != v1);
	rf_store_close(other);
	close_fresh(st, dir, path);
}
END_TEST

Suite *bench_store_suite(void)
{
	Suite *s = suite_create("bench_store");
	TCase *tc = tcase_create("store");

	tcase_add_test(tc, test_insert_get_idempotent);
	tcase_add_test(tc, test_checks_are_invalid_value);
	tcase_add_test(tc, test_list_filters_and_order);
	tcase_add_test(tc, test_pagination_no_dup_no_gap);
	tcase_add_test(tc, test_delete_and_api);
	tcase_add_test(tc, test_locked_is_unavailable);
	tcase_add_test(tc, test_no_run_memory_never_goes_stale);
	tcase_add_test(tc, test_version_follows_every_write);
	tcase_add_test(tc, test_version_read_once_per_turn);
	suite_add_tcase(s, tc);
	return s;
}
