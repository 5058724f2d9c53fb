/*
 * Integration tests of the benchmark history: the real daemon over HTTP (record, list, read,
 * delete, idempotent re-recording, pagination across pages, the store down, runs surviving a
 * restart on the same --db) and the CLI on the same database file as a running daemon, in
 * both directions.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/server/harness.h"
#include "tests/test.h"

#define JSON_HDR "Content-Type: application/json\r\n"

static cJSON *body_json(const struct t_resp *r)
{
	cJSON *j = cJSON_ParseWithLength(r->body, r->body_len);

	ck_assert_msg(j != NULL, "body is not JSON: %s", r->body);
	return j;
}

/* Asserts r is an error envelope with status and code (and field when given). */
static void assert_err(const struct t_resp *r, int status, const char *code, const char *field)
{
	cJSON *j = body_json(r), *e = cJSON_GetObjectItem(j, "error");

	ck_assert_msg(r->status == status, "status %d, want %d: %s", r->status, status, r->body);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "code")->valuestring, code);
	if (field)
		ck_assert_str_eq(cJSON_GetObjectItem(e, "field")->valuestring, field);
	cJSON_Delete(j);
}

/* Sends method path with a JSON body (or none) and returns the parsed reply of status want
 * (NULL for a reply without a body). */
static cJSON *call(int port, const char *method, const char *path, const char *body, int want)
{
	struct t_resp r;
	cJSON *j = NULL;

	ck_assert_int_eq(t_http(port, method, path, body ? JSON_HDR : NULL, body,
				body ? strlen(body) : 0, &r),
			 0);
	ck_assert_msg(r.status == want, "%s %s: status %d, want %d: %s", method, path, r.status,
		      want, r.body);
	if (r.body_len > 0)
		j = body_json(&r);
	t_resp_free(&r);
	return j;
}

static char *fixture(void)
{
	char *path = t_path(t_src_dir(), "tests/fixtures/bench/llama-bench.json");
	char *text = t_read_file(path, NULL);

	ck_assert_ptr_nonnull(text);
	free(path);
	return text;
}

static int num(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItem(o, name);

	ck_assert_msg(cJSON_IsNumber(v), "%s is not a number", name);
	return v->valueint;
}

static const char *str(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItem(o, name);

	ck_assert_msg(cJSON_IsString(v), "%s is not a string", name);
	return v->valuestring;
}

START_TEST(test_record_list_get_delete)
{
	struct t_daemon d;
	struct t_resp r;
	char *text = fixture(), path[128], fp[64];
	cJSON *j, *runs, *hw;
	int id_pp, id_tg;

	t_daemon_start(&d, NULL);
	t_wait_scan(d.port);
	hw = call(d.port, "GET", "/api/hardware", NULL, 200);
	snprintf(fp, sizeof(fp), "%s", str(hw, "fingerprint"));
	cJSON_Delete(hw);

	j = call(d.port, "POST", "/api/benchmarks", text, 201);
	ck_assert_str_eq(str(j, "format"), "llama-bench");
	ck_assert_int_eq(num(j, "created"), 2);
	ck_assert_int_eq(num(j, "existing"), 0);
	runs = cJSON_GetObjectItem(j, "runs");
	ck_assert_int_eq(cJSON_GetArraySize(runs), 2);
	id_pp = num(cJSON_GetArrayItem(runs, 0), "id");
	id_tg = num(cJSON_GetArrayItem(runs, 1), "id");
	ck_assert_str_eq(str(cJSON_GetArrayItem(runs, 0), "hardware_fingerprint"), fp);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 0), "existed")));
	ck_assert(cJSON_IsNull(
		cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 0), "decode_tokens_per_s")));
	cJSON_Delete(j);

	/* The same output again: nothing new, 200, the same ids. */
	j = call(d.port, "POST", "/api/benchmarks", text, 200);
	ck_assert_int_eq(num(j, "created"), 0);
	ck_assert_int_eq(num(j, "existing"), 2);
	runs = cJSON_GetObjectItem(j, "runs");
	ck_assert_int_eq(num(cJSON_GetArrayItem(runs, 0), "id"), id_pp);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(runs, 1), "existed")));
	cJSON_Delete(j);

	/* Listed newest first: the tg test ran a second after the pp test. */
	j = call(d.port, "GET", "/api/benchmarks", NULL, 200);
	runs = cJSON_GetObjectItem(j, "runs");
	ck_assert_int_eq(cJSON_GetArraySize(runs), 2);
	ck_assert_int_eq(num(cJSON_GetArrayItem(runs, 0), "id"), id_tg);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "next_cursor")));
	cJSON_Delete(j);
	snprintf(path, sizeof(path), "/api/benchmarks?hardware=%s&model=Qwen2.5-7B-Instruct", fp);
	j = call(d.port, "GET", path, NULL, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs")), 2);
	cJSON_Delete(j);
	j = call(d.port, "GET", "/api/benchmarks?model=Qwen2.5-7B", NULL, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs")), 0);
	cJSON_Delete(j);
	j = call(d.port, "GET", "/api/benchmarks?hardware=hw-other", NULL, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs")), 0);
	cJSON_Delete(j);
	j = call(d.port, "GET", "/api/benchmarks?since=2025-04-24T11:58:51%2B00:00", NULL, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs")), 1);
	cJSON_Delete(j);

	/* One run; delete it; it is gone. */
	snprintf(path, sizeof(path), "/api/benchmarks/%d", id_pp);
	j = call(d.port, "GET", path, NULL, 200);
	ck_assert_int_eq(num(j, "prompt_tokens"), 512);
	ck_assert_str_eq(str(j, "measured_at"), "2025-04-24T11:58:50.000Z");
	cJSON_Delete(j);
	ck_assert_ptr_null(call(d.port, "DELETE", path, NULL, 204));
	ck_assert_int_eq(t_http(d.port, "GET", path, NULL, NULL, 0, &r), 0);
	assert_err(&r, 404, "not_found", "id");
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "DELETE", path, NULL, NULL, 0, &r), 0);
	assert_err(&r, 404, "not_found", "id");
	t_resp_free(&r);
	/* Deleted, it can be recorded again (one new run, one existing). */
	j = call(d.port, "POST", "/api/benchmarks", text, 201);
	ck_assert_int_eq(num(j, "created"), 1);
	ck_assert_int_eq(num(j, "existing"), 1);
	cJSON_Delete(j);

	/* Bad ids, cursors, filters and bodies. */
	ck_assert_int_eq(t_http(d.port, "DELETE", "/api/benchmarks/abc", NULL, NULL, 0, &r), 0);
	assert_err(&r, 422, "invalid_value", "id");
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/benchmarks/0", NULL, NULL, 0, &r), 0);
	assert_err(&r, 422, "invalid_value", "id");
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/benchmarks?cursor=xyz", NULL, NULL, 0, &r), 0);
	assert_err(&r, 422, "invalid_value", "cursor");
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/benchmarks?since=today", NULL, NULL, 0, &r),
			 0);
	assert_err(&r, 422, "invalid_value", "since");
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/benchmarks?limit=501", NULL, NULL, 0, &r), 0);
	assert_err(&r, 422, "invalid_value", "limit");
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "POST", "/api/benchmarks", JSON_HDR,
				"{\"model\":\"m\",\"speed\":1}", 23, &r),
			 0);
	assert_err(&r, 422, "unknown_field", "speed");
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "PUT", "/api/benchmarks", JSON_HDR, "{}", 2, &r), 0);
	ck_assert_int_eq(r.status, 405);
	t_resp_free(&r);
	free(text);
	t_daemon_stop(&d);
}
END_TEST

START_TEST(test_pagination)
{
	struct t_daemon d;
	char body[8192], path[256], seen[64] = {0};
	size_t used;
	int total = 0, pages = 0;
	cJSON *j;

	t_daemon_start(&d, NULL);
	/* Seven tg tests, two of them at the same second. */
	used = (size_t)snprintf(body, sizeof(body), "[");
	for (int i = 0; i < 7; i++)
		used += (size_t)snprintf(body + used, sizeof(body) - used,
					 "%s{\"model_filename\":\"m-Q8_0.gguf\",\"n_prompt\":0,"
					 "\"n_gen\":%d,\"avg_ts\":%d.5,\"test_time\":"
					 "\"2025-05-0%dT10:00:00Z\"}",
					 i ? "," : "", 16 + i, 10 + i, i < 2 ? 1 : i);
	snprintf(body + used, sizeof(body) - used, "]");
	j = call(d.port, "POST", "/api/benchmarks?hardware=hw-page", body, 201);
	ck_assert_int_eq(num(j, "created"), 7);
	cJSON_Delete(j);

	snprintf(path, sizeof(path), "/api/benchmarks?limit=3");
	for (;;) {
		const cJSON *runs, *run, *next;
		j = call(d.port, "GET", path, NULL, 200);
		runs = cJSON_GetObjectItem(j, "runs");
		pages++;
		cJSON_ArrayForEach(run, runs)
		{
			int id = num(run, "id");
			ck_assert_msg(id > 0 && id < 64 && !seen[id], "run %d twice", id);
			seen[id] = 1;
			total++;
		}
		next = cJSON_GetObjectItem(j, "next_cursor");
		if (cJSON_IsNull(next)) {
			cJSON_Delete(j);
			break;
		}
		ck_assert_int_eq(cJSON_GetArraySize(runs), 3);
		snprintf(path, sizeof(path), "/api/benchmarks?limit=3&cursor=%s",
			 str(j, "next_cursor"));
		cJSON_Delete(j);
		ck_assert_int_lt(pages, 10);
	}
	ck_assert_int_eq(total, 7);
	ck_assert_int_eq(pages, 3);
	t_daemon_stop(&d);
}
END_TEST

START_TEST(test_store_unavailable)
{
	struct t_daemon d;
	struct t_resp r;
	char *dir = t_mkdtemp(), *db = t_path(dir, "bad.db");
	const char junk[] =
		"this is not an SQLite database, and the daemon must not touch it at all "
		"because it is somebody else's file.............................";
	const char *extra[] = {"--db", db, NULL};
	const char *const paths[][2] = {{"GET", "/api/benchmarks"},
					{"GET", "/api/benchmarks/1"},
					{"DELETE", "/api/benchmarks/1"}};

	ck_assert_int_eq(t_write_file(db, junk, sizeof(junk) - 1), 0);
	t_daemon_start(&d, extra);
	ck_assert_int_eq(
		t_http(d.port, "POST", "/api/benchmarks?hardware=hw-x", JSON_HDR,
		       "{\"model\":\"m\",\"precision\":\"Q4_0\",\"backend\":\"cpu\","
		       "\"runtime\":\"x\",\"decode_tokens_per_s\":3}",
		       strlen("{\"model\":\"m\",\"precision\":\"Q4_0\",\"backend\":\"cpu\","
			      "\"runtime\":\"x\",\"decode_tokens_per_s\":3}"),
		       &r),
		0);
	assert_err(&r, 503, "store_unavailable", NULL);
	t_resp_free(&r);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		ck_assert_int_eq(t_http(d.port, paths[i][0], paths[i][1], NULL, NULL, 0, &r), 0);
		assert_err(&r, 503, "store_unavailable", NULL);
		t_resp_free(&r);
	}
	t_daemon_stop(&d);
	t_rmtree(dir);
	free(dir);
	free(db);
}
END_TEST

START_TEST(test_survives_restart)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "keep.db"), *text = fixture();
	const char *extra[] = {"--db", db, NULL};
	cJSON *j;

	t_daemon_start(&d, extra);
	j = call(d.port, "POST", "/api/benchmarks?hardware=hw-restart", text, 201);
	cJSON_Delete(j);
	t_daemon_stop(&d);

	t_daemon_start(&d, extra);
	j = call(d.port, "GET", "/api/benchmarks?hardware=hw-restart", NULL, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs")), 2);
	cJSON_Delete(j);
	/* And they are still the same runs: recording again changes nothing. */
	j = call(d.port, "POST", "/api/benchmarks?hardware=hw-restart", text, 200);
	ck_assert_int_eq(num(j, "existing"), 2);
	cJSON_Delete(j);
	t_daemon_stop(&d);
	t_rmtree(dir);
	free(dir);
	free(db);
	free(text);
}
END_TEST

START_TEST(test_cli_round_trip)
{
	struct t_daemon d;
	char *fix = t_path(t_src_dir(), "tests/fixtures/bench/llama-bench.json");
	char *db, *out = NULL, *err = NULL, *profiles, cmd[2048];
	cJSON *j, *runs;
	int rc;

	t_daemon_start(&d, NULL);
	db = t_path(d.dir, "var/rigfit.db");
	profiles = t_path(d.dir, "profiles");

	/* CLI -> API: recorded by the CLI while the daemon runs, listed by the daemon. */
	{
		const char *argv[] = {t_bin(), "bench",      "record",   fix, "--db",
				      db,      "--hardware", "hw-cli-1", NULL};
		rc = t_run(argv, &out, &err, 20000);
	}
	ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
	j = cJSON_Parse(out);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(num(j, "created"), 2);
	cJSON_Delete(j);
	free(out);
	free(err);
	j = call(d.port, "GET", "/api/benchmarks?hardware=hw-cli-1", NULL, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs")), 2);
	cJSON_Delete(j);

	/* From standard input, as `llama-bench -o json | rigfit bench record -`: idempotent. */
	snprintf(cmd, sizeof(cmd), "cat '%s' | '%s' bench record - --db '%s' --hardware hw-cli-1",
		 fix, t_bin(), db);
	{
		const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
		rc = t_run(argv, &out, &err, 20000);
	}
	ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
	j = cJSON_Parse(out);
	ck_assert_int_eq(num(j, "existing"), 2);
	ck_assert_int_eq(num(j, "created"), 0);
	cJSON_Delete(j);
	free(out);
	free(err);

	/* Without --hardware the CLI scans this machine: the daemon's fingerprint. */
	snprintf(cmd, sizeof(cmd),
		 "echo '{\"model\":\"m\",\"precision\":\"Q4_0\",\"backend\":\"cpu\",\"runtime\":"
		 "\"x\",\"decode_tokens_per_s\":3}' | '%s' bench record --db '%s' --profiles '%s'",
		 t_bin(), db, profiles);
	{
		const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
		rc = t_run(argv, &out, &err, 30000);
	}
	ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
	j = cJSON_Parse(out);
	runs = cJSON_GetObjectItem(j, "runs");
	{
		cJSON *hw;
		t_wait_scan(d.port);
		hw = call(d.port, "GET", "/api/hardware", NULL, 200);
		ck_assert_str_eq(str(cJSON_GetArrayItem(runs, 0), "hardware_fingerprint"),
				 str(hw, "fingerprint"));
		cJSON_Delete(hw);
	}
	cJSON_Delete(j);
	free(out);
	free(err);

	/* API -> CLI: recorded through the daemon, listed by the CLI. */
	j = call(d.port, "POST", "/api/benchmarks?hardware=hw-api-1",
		 "{\"run_id\":\"api-run\",\"model\":\"api-model\",\"precision\":\"Q8_0\","
		 "\"backend\":\"cpu\",\"runtime\":\"llama.cpp\",\"prefill_tokens_per_s\":99}",
		 201);
	cJSON_Delete(j);
	{
		const char *argv[] = {t_bin(),   "bench",     "list",    "--db", db,
				      "--model", "api-model", "--limit", "5",    NULL};
		rc = t_run(argv, &out, &err, 20000);
	}
	ck_assert_msg(rc == 0, "exit %d: %s", rc, err);
	j = cJSON_Parse(out);
	runs = cJSON_GetObjectItem(j, "runs");
	ck_assert_int_eq(cJSON_GetArraySize(runs), 1);
	ck_assert_str_eq(str(cJSON_GetArrayItem(runs, 0), "run_id"), "api-run");
	ck_assert_str_eq(str(cJSON_GetArrayItem(runs, 0), "hardware_fingerprint"), "hw-api-1");
	cJSON_Delete(j);
	free(out);
	free(err);

	/* Errors: one line on stderr, exit 2. */
	{
		const char *argv[] = {t_bin(), "bench", "list", "--db", db, "--limit", "0", NULL};
		rc = t_run(argv, &out, &err, 20000);
	}
	ck_assert_int_eq(rc, 2);
	ck_assert_ptr_nonnull(strstr(err, "invalid_value"));
	ck_assert_ptr_null(strchr(err, '\n') ? strchr(strchr(err, '\n') + 1, '\n') : NULL);
	free(out);
	free(err);
	{
		const char *argv[] = {t_bin(), "bench", "record", "--db", db, "--bogus", "1", NULL};
		rc = t_run(argv, &out, &err, 20000);
	}
	ck_assert_int_eq(rc, 2);
	free(out);
	free(err);
	snprintf(cmd, sizeof(cmd),
		 "echo '[{\"avg_ts\":-1}]' | '%s' bench record --db '%s' --hardware h", t_bin(),
		 db);
	{
		const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
		rc = t_run(argv, &out, &err, 20000);
	}
	ck_assert_int_eq(rc, 2);
	ck_assert_ptr_nonnull(strstr(err, "[0].avg_ts"));
	free(out);
	free(err);
	free(fix);
	free(db);
	free(profiles);
	t_daemon_stop(&d);
}
END_TEST

Suite *bench_http_suite(void)
{
	Suite *s = suite_create("bench_http");
	TCase *tc = tcase_create("http");
	int timeout = t_under_valgrind() ? 600 : 60;

	tcase_set_timeout(tc, timeout);
	tcase_add_test(tc, test_record_list_get_delete);
	tcase_add_test(tc, test_pagination);
	tcase_add_test(tc, test_store_unavailable);
	tcase_add_test(tc, test_survives_restart);
	tcase_add_test(tc, test_cli_round_trip);
	suite_add_tcase(s, tc);
	return s;
}
