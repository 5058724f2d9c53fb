/*
 * Hardening of the store, against real SQLite files: every benchmark listing is read in order
 * from an index (no sort of a machine's whole history, which made an estimate's cost grow with
 * the stored runs), checked on SQLite's own query plan; and in the running daemon, a database
 * deleted underneath goes unavailable instead of acknowledging lost writes, store failures are
 * logged and reported by /healthz and /readyz, and a failed store is opened again.
 */
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "server/embedded.h"
#include "server/store/store.h"
#include "server/store/store_bench.h"
#include "server/store/store_priv.h"
#include "server/store/store_profiles.h"
#include "tests/server/harness.h"
#include "tests/test.h"

static long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* POSTs a benchmark run with this run_id (hardware hw-store) and returns the status. */
static int post_run(int port, const char *run_id)
{
	char body[512];
	struct t_resp r;
	int n = snprintf(body, sizeof(body),
			 "{\"run_id\":\"%s\",\"hardware_fingerprint\":\"hw-store\","
			 "\"model\":\"qwen2.5-7b\",\"precision\":\"Q4_K_M\",\"backend\":\"cpu\","
			 "\"runtime\":\"llama.cpp\",\"generated_tokens\":128,"
			 "\"decode_tokens_per_s\":10.5}",
			 run_id);
	int status;

	ck_assert_int_eq(t_http(port, "POST", "/api/benchmarks",
				"Content-Type: application/json\r\n", body, (size_t)n, &r),
			 0);
	status = r.status;
	t_resp_free(&r);
	return status;
}

/* GETs path and returns the status; *body (when not NULL) gets the body (free it). */
static int get(int port, const char *path, char **body)
{
	struct t_resp r;
	int status;

	ck_assert_int_eq(t_http(port, "GET", path, NULL, NULL, 0, &r), 0);
	status = r.status;
	if (body)
		*body = strdup(r.body);
	t_resp_free(&r);
	return status;
}

/* Polls GET path until it answers want (and its body holds text, when not NULL), for up to
 * ms. Returns whether it did. */
static bool wait_for(int port, const char *path, int want, const char *text, int ms)
{
	long end = mono_ms() + ms;

	do {
		char *body = NULL;
		bool ok = get(port, path, &body) == want && (!text || strstr(body, text));

		free(body);
		if (ok)
			return true;
		usleep(50 * 1000);
	} while (mono_ms() < end);
	return false;
}

/* Every combination of the listing's filters (model, hardware, since, cursor) is planned
 * without a temporary B-tree, and the estimator's question (one machine, newest first) walks
 * the hardware/time index. A plan that sorts would show "USE TEMP B-TREE FOR ORDER BY". */
START_TEST(test_history_plans_use_an_index)
{
	char *dir = t_mkdtemp(), *path = t_path(dir, "plan.db");
	struct rf_store *st = NULL;
	char err[256], plan[1024];

	ck_assert_int_eq(rf_store_open(path, rf_embed_migrations, &st, err, sizeof(err)), 0);
	for (unsigned shape = 0; shape < 16; shape++) {
		struct api_bench_filter f;

		memset(&f, 0, sizeof(f));
		if (shape & 1u)
			snprintf(f.model, sizeof(f.model), "qwen2.5-7b");
		if (shape & 2u)
			snprintf(f.hardware_fingerprint, sizeof(f.hardware_fingerprint), "hw-1");
		if (shape & 4u)
			snprintf(f.since, sizeof(f.since), "2025-01-01T00:00:00.000Z");
		if (shape & 8u) {
			snprintf(f.before_measured_at, sizeof(f.before_measured_at),
				 "2025-06-01T00:00:00.000Z");
			f.before_id = 99;
		}
		f.limit = 200;
		ck_assert_int_eq(rf_store_bench_explain(st, &f, plan, sizeof(plan)), 0);
		ck_assert_msg(strstr(plan, "USING") && !strstr(plan, "TEMP B-TREE"),
			      "shape %u: plan '%s' sorts or scans", shape, plan);
		if (shape == 2u)
			ck_assert_msg(strstr(plan, "benchmarks_by_hardware_time"),
				      "history plan '%s'", plan);
	}
	ck_assert_int_eq(rf_store_bench_explain(NULL, NULL, plan, sizeof(plan)),
			 RF_E_STORE_UNAVAILABLE);
	rf_store_close(st);
	t_rmtree(dir);
	free(dir);
	free(path);
}
END_TEST

/* The database directory deleted while the daemon runs: a write is refused (503), never
 * acknowledged into the deleted file; /healthz reports why; the store is created again by the
 * next check and its writes survive a restart. */
START_TEST(test_deleted_database_is_not_written)
{
	struct t_daemon d, d2;
	char *var, *db, *body = NULL;
	const char *extra[3] = {"--db", NULL, NULL};
	long end;
	int status = 0;

	t_daemon_start(&d, NULL);
	ck_assert_int_eq(post_run(d.port, "kept-1"), 201);
	var = t_path(d.dir, "var");
	db = t_path(var, "rigfit.db");
	t_rmtree(var);
	ck_assert_int_eq(post_run(d.port, "lost-1"), 503);
	ck_assert_int_eq(get(d.port, "/healthz", &body), 200);
	ck_assert_msg(strstr(body, "was deleted while open"), "healthz: %s", body);
	free(body);
	/* The next check opens a new database at the path; writes go there again. */
	end = mono_ms() + 8000;
	while (mono_ms() < end && (status = post_run(d.port, "kept-2")) != 201)
		usleep(100 * 1000);
	ck_assert_int_eq(status, 201);
	ck_assert(wait_for(d.port, "/readyz", 200, "\"status\":\"ready\"", 3000));
	ck_assert_int_eq(t_daemon_signal_wait(&d, SIGTERM, 5000, NULL), 0);

	extra[1] = db;
	t_daemon_start(&d2, extra);
	ck_assert_int_eq(get(d2.port, "/api/benchmarks?hardware=hw-store", &body), 200);
	ck_assert_msg(strstr(body, "kept-2") && !strstr(body, "lost-1"), "runs: %s", body);
	free(body);
	t_daemon_stop(&d2);
	t_daemon_stop(&d);
	free(var);
	free(db);
}
END_TEST

/* A store that cannot be opened at start: /readyz answers 503 with the reason, /healthz stays
 * 200 and reports it, the log names it; once the file is fixed, SIGHUP (or the timer) opens it
 * and the daemon is ready. */
START_TEST(test_failed_store_reopens)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "bad.db"), *body = NULL, *log;
	const char *extra[] = {"--db", db, NULL};

	ck_assert_int_eq(t_write_file(db, "this is not a database, not even close to one", 46), 0);
	t_daemon_start(&d, extra);
	ck_assert_int_eq(get(d.port, "/readyz", &body), 503);
	ck_assert_msg(strstr(body, "store_unavailable") && strstr(body, "bad.db"), "%s", body);
	free(body);
	ck_assert_int_eq(get(d.port, "/healthz", &body), 200);
	ck_assert_msg(strstr(body, "\"store\":\"unavailable\"") && strstr(body, "bad.db"), "%s",
		      body);
	free(body);
	log = t_daemon_log(&d);
	ck_assert_msg(strstr(log, "store:") && strstr(log, "bad.db"), "log: %s", log);
	free(log);
	ck_assert_int_eq(post_run(d.port, "early-1"), 503);

	ck_assert_int_eq(unlink(db), 0);
	kill(d.pid, SIGHUP);
	ck_assert(wait_for(d.port, "/readyz", 200, "\"store\":\"ok\"", 5000));
	ck_assert_int_eq(post_run(d.port, "late-1"), 201);
	t_daemon_stop(&d);
	t_rmtree(dir);
	free(dir);
	free(db);
}
END_TEST

/* A write refused because another process holds the lock past the busy timeout is logged
 * with SQLite's code, and /healthz reports the failure while still answering 200. */
START_TEST(test_store_failure_is_logged_and_reported)
{
	struct t_daemon d;
	sqlite3 *db = NULL;
	char *path, *body = NULL, *log;

	t_daemon_start(&d, NULL);
	path = t_path(d.dir, "var/rigfit.db");
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	ck_assert_int_eq(post_run(d.port, "locked-1"), 503);
	ck_assert_int_eq(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	ck_assert_int_eq(get(d.port, "/healthz", &body), 200);
	ck_assert_msg(strstr(body, "\"store_error\":{") && strstr(body, "locked"), "%s", body);
	free(body);
	log = t_daemon_log(&d);
	ck_assert_msg(strstr(log, "store: SQLite error 5"), "log: %s", log);
	free(log);
	ck_assert_int_eq(post_run(d.port, "locked-2"), 201);
	free(path);
	t_daemon_stop(&d);
}
END_TEST

/* What a reader thread did while the writer's connection was held. */
struct reader {
	struct rf_store *st;
	pthread_mutex_t mx;
	pthread_cond_t cv;
	bool done;
	int list_rc, scan_rc, profiles_rc, get_rc, n;
};

static void *reader_main(void *arg)
{
	struct reader *rd = arg;
	struct api_bench_filter f;
	struct api_bench_run *runs = NULL;
	struct api_scan_row *rows = NULL;
	struct api_profile_filter pf;
	struct api_profile *profiles = NULL, one;
	int n_scans = 0, n_profiles = 0;

	memset(&f, 0, sizeof(f));
	snprintf(f.hardware_fingerprint, sizeof(f.hardware_fingerprint), "hw-1");
	f.limit = 10;
	rd->list_rc = rf_store_bench_list(rd->st, &f, &runs, &rd->n);
	rd->scan_rc = rf_store_scan_list(rd->st, 0, 10, &rows, &n_scans);
	memset(&pf, 0, sizeof(pf));
	pf.limit = 10;
	rd->profiles_rc = rf_store_profile_list(rd->st, &pf, &profiles, &n_profiles);
	memset(&one, 0, sizeof(one));
	rd->get_rc = rf_store_profile_get(rd->st, "no-such-profile", &one);
	api_bench_runs_free(runs, rd->n);
	api_scan_rows_free(rows, n_scans);
	api_profiles_free(profiles, n_profiles);
	pthread_mutex_lock(&rd->mx);
	rd->done = true;
	pthread_cond_signal(&rd->cv);
	pthread_mutex_unlock(&rd->mx);
	return NULL;
}

/* The reads that requests make (benchmark runs, scans, profiles) use their own connection:
 * while a writer holds the write connection (its mutex, as for a whole transaction), they
 * still complete on another thread. The wait is bounded: a reader that waited for the writer is failed after
 * 5 s, once the writer lets go. */
START_TEST(test_reads_do_not_wait_for_the_writer)
{
	char *dir = t_mkdtemp(), *path = t_path(dir, "rw.db");
	struct reader rd;
	struct timespec until;
	pthread_t th;
	sqlite3_mutex *wmx;
	char err[256];
	bool done;

	memset(&rd, 0, sizeof(rd));
	pthread_mutex_init(&rd.mx, NULL);
	pthread_cond_init(&rd.cv, NULL);
	ck_assert_int_eq(rf_store_open(path, rf_embed_migrations, &rd.st, err, sizeof(err)), 0);
	wmx = sqlite3_db_mutex(rd.st->db);
	sqlite3_mutex_enter(wmx);
	ck_assert_int_eq(pthread_create(&th, NULL, reader_main, &rd), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&rd.mx);
	while (!rd.done && pthread_cond_timedwait(&rd.cv, &rd.mx, &until) == 0)
		;
	done = rd.done;
	pthread_mutex_unlock(&rd.mx);
	sqlite3_mutex_leave(wmx);
	pthread_join(th, NULL);
	ck_assert_msg(done, "a listing waited for the writer's connection");
	ck_assert_int_eq(rd.list_rc, 0);
	ck_assert_int_eq(rd.scan_rc, 0);
	ck_assert_int_eq(rd.profiles_rc, 0);
	ck_assert_int_eq(rd.get_rc, RF_E_NOT_FOUND);
	rf_store_close(rd.st);
	pthread_mutex_destroy(&rd.mx);
	pthread_cond_destroy(&rd.cv);
	t_rmtree(dir);
	free(dir);
	free(path);
}
END_TEST

Suite *harden_store_suite(void)
{
	Suite *s = suite_create("harden_store");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_history_plans_use_an_index);
	tcase_add_test(tc, test_reads_do_not_wait_for_the_writer);
	tcase_add_test(tc, test_deleted_database_is_not_written);
	tcase_add_test(tc, test_failed_store_reopens);
	tcase_add_test(tc, test_store_failure_is_logged_and_reported);
	suite_add_tcase(s, tc);
	return s;
}
