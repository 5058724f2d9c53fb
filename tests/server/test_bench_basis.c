/*
 * Issue 6's end-to-end promise, against the real daemon and its real SQLite store: runs
 * recorded with POST /api/benchmarks move this host's estimates. With no history the speed is
 * the roofline; a run of another model makes it "calibrated" (the host's efficiency carried
 * over); runs of the very model and precision make it "measured", and one outlier among them
 * does not swing it. Deleting the runs brings the roofline back. The history an estimate reads
 * is remembered between requests until the database changes: a run written by another process
 * (a second SQLite connection) moves the next estimate as a run posted here does.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/server/harness.h"
#include "tests/test.h"

#define JSON_HDR "Content-Type: application/json\r\n"
#define TARGET "qwen2.5-7b"
#define OTHER "llama-3.1-8b"

/* Sends a request and returns its parsed JSON reply, which must have status want. */
static cJSON *call(int port, const char *method, const char *path, const char *body, int want)
{
	struct t_resp r;
	cJSON *j = NULL;

	ck_assert_int_eq(t_http(port, method, path, body ? JSON_HDR : NULL, body,
				body ? strlen(body) : 0, &r),
			 0);
	ck_assert_msg(r.status == want, "%s %s: status %d, want %d: %s", method, path, r.status,
		      want, r.body);
	if (r.body_len > 0) {
		j = cJSON_ParseWithLength(r.body, r.body_len);
		ck_assert_msg(j != NULL, "not JSON: %s", r.body);
	}
	t_resp_free(&r);
	return j;
}

struct speed {
	double decode;
	char basis[16];
};

/* Estimates model at Q4_K_M on this host and returns its decode speed and basis. */
static struct speed estimate(int port, const char *model)
{
	char body[160];
	struct speed s;
	cJSON *j, *sp;

	snprintf(body, sizeof(body), "{\"model\":{\"id\":\"%s\"},\"quant\":\"Q4_K_M\"}", model);
	j = call(port, "POST", "/api/estimate", body, 200);
	sp = cJSON_GetObjectItem(j, "speed");
	ck_assert_ptr_nonnull(sp);
	s.decode = cJSON_GetNumberValue(cJSON_GetObjectItem(sp, "decode_tokens_per_s"));
	snprintf(s.basis, sizeof(s.basis), "%s",
		 cJSON_GetStringValue(cJSON_GetObjectItem(sp, "basis")));
	ck_assert_msg(s.decode > 0, "no decode speed for %s", model);
	cJSON_Delete(j);
	return s;
}

/* Records one decode run of model at Q4_K_M on this host's backend; returns its row id. */
static int record(int port, const char *run_id, const char *model, const char *backend,
		  double decode)
{
	char body[512];
	cJSON *j, *runs;
	int id;

	snprintf(body, sizeof(body),
		 "{\"run_id\":\"%s\",\"model\":\"%s\",\"precision\":\"Q4_K_M\",\"backend\":\"%s\","
		 "\"runtime\":\"llama.cpp\",\"prompt_tokens\":0,\"generated_tokens\":128,"
		 "\"decode_tokens_per_s\":%.3f,\"source\":\"manual\"}",
		 run_id, model, backend, decode);
	j = call(port, "POST", "/api/benchmarks", body, 201);
	runs = cJSON_GetObjectItem(j, "runs");
	ck_assert_int_eq(cJSON_GetArraySize(runs), 1);
	id = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 0), "id"));
	cJSON_Delete(j);
	return id;
}

START_TEST(recorded_runs_move_the_estimate_and_one_outlier_does_not)
{
	struct t_daemon d;
	struct speed roof, other_roof, cal, meas, after_outlier, back;
	char backend[32], run_id[32], path[64];
	const double host_eff = 0.6; /* this host runs at 60% of what the roofline expects */
	const double measured[] = {41.0, 42.5, 40.2, 41.8, 42.0};
	int ids[8], n = 0;
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *extra[] = {"--profiles", profiles, NULL};
	cJSON *hw;

	t_daemon_start(&d, extra);
	t_wait_scan(d.port);
	hw = call(d.port, "GET", "/api/hardware", NULL, 200);
	snprintf(backend, sizeof(backend), "%s",
		 cJSON_GetStringValue(cJSON_GetObjectItem(hw, "backend")));
	cJSON_Delete(hw);

	roof = estimate(d.port, TARGET);
	ck_assert_str_eq(roof.basis, "roofline");
	other_roof = estimate(d.port, OTHER);

	/* Another model, measured at 60% of its roofline: the host's efficiency applies. */
	ids[n++] = record(d.port, "other-1", OTHER, backend, host_eff * other_roof.decode);
	cal = estimate(d.port, TARGET);
	ck_assert_str_eq(cal.basis, "calibrated");
	ck_assert_msg(fabs(cal.decode / roof.decode - host_eff) < 0.02,
		      "calibrated %.2f is not %.0f%% of the roofline %.2f", cal.decode,
		      host_eff * 100, roof.decode);

	/* The model itself, five runs near 41.5 tok/s: measured, their centre. */
	for (int i = 0; i < 5; i++) {
		snprintf(run_id, sizeof(run_id), "target-%d", i);
		ids[n++] = record(d.port, run_id, TARGET, backend, measured[i]);
	}
	meas = estimate(d.port, TARGET);
	ck_assert_str_eq(meas.basis, "measured");
	ck_assert_msg(meas.decode > 40.2 && meas.decode < 42.5, "measured %.2f", meas.decode);

	/* One outlier ten times faster does not swing it. */
	ids[n++] = record(d.port, "target-outlier", TARGET, backend, 415.0);
	after_outlier = estimate(d.port, TARGET);
	ck_assert_str_eq(after_outlier.basis, "measured");
	ck_assert_msg(fabs(after_outlier.decode - meas.decode) / meas.decode < 0.03,
		      "one outlier moved %.2f to %.2f", meas.decode, after_outlier.decode);

	/* Runs deleted: back to the roofline. */
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/api/benchmarks/%d", ids[i]);
		ck_assert_ptr_null(call(d.port, "DELETE", path, NULL, 204));
	}
	back = estimate(d.port, TARGET);
	ck_assert_str_eq(back.basis, "roofline");
	ck_assert_double_eq_tol(back.decode, roof.decode, 1e-9);
	t_daemon_stop(&d);
	free(profiles);
}
END_TEST

/* Stores a decode run of model at Q4_K_M for fingerprint fp straight into the database file,
 * as another process on the host would (its own connection and transaction). */
static void record_elsewhere(const char *db_path, const char *fp, const char *model,
			     const char *backend, double decode)
{
	static const char sql[] =
		"INSERT INTO benchmarks (run_id, hardware_fingerprint, model, precision, backend, "
		"runtime, prompt_tokens, generated_tokens, decode_tokens_per_s, source, "
		"measured_at) VALUES ('elsewhere-1', ?1, ?2, 'Q4_K_M', ?3, 'llama.cpp', 0, 128, ?4, "
		"'manual', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))";
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	ck_assert_int_eq(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_text(s, 1, fp, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, model, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, backend, -1, SQLITE_STATIC);
	sqlite3_bind_double(s, 4, decode);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);
	ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
}

START_TEST(a_run_stored_by_another_process_moves_the_next_estimate)
{
	struct t_daemon d;
	struct speed roof, again, other_roof, cal;
	char backend[32], fp[64];
	char *profiles = t_path(t_src_dir(), "profiles"), *var, *db_path;
	const char *extra[] = {"--profiles", profiles, NULL};
	cJSON *hw;

	t_daemon_start(&d, extra);
	t_wait_scan(d.port);
	hw = call(d.port, "GET", "/api/hardware", NULL, 200);
	snprintf(backend, sizeof(backend), "%s",
		 cJSON_GetStringValue(cJSON_GetObjectItem(hw, "backend")));
	snprintf(fp, sizeof(fp), "%s",
		 cJSON_GetStringValue(cJSON_GetObjectItem(hw, "fingerprint")));
	cJSON_Delete(hw);
	ck_assert_int_eq((int)strlen(fp), 19);

	/* Asked twice with nothing stored: the same roofline (the second from what the first
	 * read). */
	roof = estimate(d.port, TARGET);
	again = estimate(d.port, TARGET);
	ck_assert_str_eq(roof.basis, "roofline");
	ck_assert_str_eq(again.basis, "roofline");
	ck_assert_double_eq_tol(again.decode, roof.decode, 1e-12);
	other_roof = estimate(d.port, OTHER);

	/* Another process records a run of another model at half its roofline. */
	var = t_path(d.dir, "var");
	db_path = t_path(var, "rigfit.db");
	record_elsewhere(db_path, fp, OTHER, backend, 0.5 * other_roof.decode);
	cal = estimate(d.port, TARGET);
	ck_assert_str_eq(cal.basis, "calibrated");
	ck_assert_msg(fabs(cal.decode / roof.decode - 0.5) < 0.02,
		      "after another process's run: %.2f, roofline %.2f", cal.decode, roof.decode);
	t_daemon_stop(&d);
	free(db_path);
	free(var);
	free(profiles);
}
END_TEST

Suite *bench_basis_suite(void)
{
	Suite *s = suite_create("bench_basis");
	TCase *tc = tcase_create("basis");

	tcase_set_timeout(tc, t_under_valgrind() ? 300 : 60);
	tcase_add_test(tc, recorded_runs_move_the_estimate_and_one_outlier_does_not);
	tcase_add_test(tc, a_run_stored_by_another_process_moves_the_next_estimate);
	suite_add_tcase(s, tc);
	return s;
}
