/*
 * Integration tests: the real daemon, started on an ephemeral loopback port, driven over HTTP
 * with raw sockets. Every error status of the contract is provoked here and its envelope
 * checked; so are the token, CORS, the scan cache, graceful stop and SIGHUP.
 */
#include <cjson/cJSON.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/server/harness.h"
#include "tests/test.h"

#define JSON_HDR "Content-Type: application/json\r\n"

/* Parses r's body as JSON; fails the test otherwise. */
static cJSON *body_json(const struct t_resp *r)
{
	cJSON *j = cJSON_ParseWithLength(r->body, r->body_len);
	ck_assert_msg(j != NULL, "body is not JSON: %s", r->body);
	return j;
}

/* Asserts r is the error envelope with this status, code and (optional) field. */
static void assert_error(const struct t_resp *r, int status, const char *code, const char *field)
{
	cJSON *j, *e;
	char *ct = t_resp_header(r, "Content-Type");

	ck_assert_msg(r->status == status, "status %d, want %d; body %s", r->status, status,
		      r->body);
	ck_assert_ptr_nonnull(ct);
	ck_assert_str_eq(ct, "application/json");
	free(ct);
	j = body_json(r);
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	ck_assert_msg(cJSON_IsObject(e), "no error object: %s", r->body);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "code")->valuestring, code);
	ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message")));
	ck_assert(strlen(cJSON_GetObjectItemCaseSensitive(e, "message")->valuestring) > 0);
	if (field)
		ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "field")->valuestring, field);
	else
		ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(e, "field"));
	cJSON_Delete(j);
}

static struct t_daemon dmn;

static void start_plain(void)
{
	t_daemon_start(&dmn, NULL);
}

static void stop_plain(void)
{
	t_daemon_stop(&dmn);
}

START_TEST(healthz_reports_status_version_uptime)
{
	struct t_resp r;
	cJSON *j;

	ck_assert_int_eq(t_http(dmn.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	j = body_json(&r);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "status")->valuestring, "ok");
	ck_assert_str_eq(cJSON_GetObjectItem(j, "version")->valuestring, RIGFIT_VERSION);
	ck_assert(cJSON_GetObjectItem(j, "uptime_s")->valuedouble >= 0);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "store")->valuestring, "ok");
	cJSON_Delete(j);
	t_resp_free(&r);
}
END_TEST

START_TEST(head_answers_headers_only)
{
	struct t_resp r;
	const char req[] = "HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";

	ck_assert_int_eq(t_http_raw(dmn.port, req, sizeof(req) - 1, &r, 3000), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.body_len, 0);
	t_resp_free(&r);
}
END_TEST

START_TEST(openapi_is_the_embedded_spec)
{
	struct t_resp r;
	size_t len;
	char *path = t_path(t_src_dir(), "openapi.yaml");
	char *spec = t_read_file(path, &len);
	char *ct;

	ck_assert_ptr_nonnull(spec);
	ck_assert_int_eq(t_http(dmn.port, "GET", "/openapi.yaml", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.body_len, len);
	ck_assert(memcmp(r.body, spec, len) == 0);
	ct = t_resp_header(&r, "Content-Type");
	ck_assert_str_eq(ct, "application/yaml");
	free(ct);
	free(spec);
	free(path);
	t_resp_free(&r);
}
END_TEST

START_TEST(hardware_snapshot_matches_proc_meminfo)
{
	struct t_resp r;
	cJSON *j, *mem;
	char *meminfo = t_read_file("/proc/meminfo", NULL);
	long long kb = 0;

	ck_assert_ptr_nonnull(meminfo);
	ck_assert_int_eq(sscanf(strstr(meminfo, "MemTotal:"), "MemTotal: %lld kB", &kb), 1);
	ck_assert_int_eq(t_http(dmn.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	j = body_json(&r);
	mem = cJSON_GetObjectItem(j, "memory");
	ck_assert_double_eq(cJSON_GetObjectItem(mem, "total_bytes")->valuedouble,
			    (double)kb * 1024);
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(j, "gpus")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "gpus")), 0);
	ck_assert_int_eq((int)cJSON_GetObjectItem(cJSON_GetObjectItem(j, "cpu"), "logical_cores")
				 ->valuedouble,
			 (int)sysconf(_SC_NPROCESSORS_ONLN));
	cJSON_Delete(j);
	free(meminfo);
	t_resp_free(&r);
}
END_TEST

START_TEST(metrics_count_requests_and_scans)
{
	struct t_resp r;

	for (int i = 0; i < 3; i++) {
		/* /openapi.yaml: the harness itself polls /healthz. */
		ck_assert_int_eq(t_http(dmn.port, "GET", "/openapi.yaml", NULL, NULL, 0, &r), 0);
		t_resp_free(&r);
	}
	ck_assert_int_eq(t_http(dmn.port, "GET", "/nope", NULL, NULL, 0, &r), 0);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(dmn.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(dmn.port, "GET", "/metrics", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.head, "text/plain; version=0.0.4"));
	ck_assert_ptr_nonnull(strstr(
		r.body,
		"rigfit_http_requests_total{route=\"/openapi.yaml\",method=\"GET\",status=\"200\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(
		r.body,
		"rigfit_http_requests_total{route=\"unmatched\",method=\"GET\",status=\"404\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(
		r.body, "rigfit_http_request_duration_seconds_bucket{route=\"/openapi.yaml\","
			"method=\"GET\",le=\"+Inf\"} 3\n"));
	ck_assert_ptr_nonnull(
		strstr(r.body, "rigfit_http_request_duration_seconds_count{route=\"/openapi.yaml\","
			       "method=\"GET\"} 3\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "\nrigfit_scans_total 1\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "\nrigfit_scan_duration_seconds "));
	ck_assert_ptr_nonnull(strstr(r.body, "\nrigfit_scan_last_success_timestamp_seconds "));
	ck_assert_ptr_nonnull(strstr(r.body, "\nrigfit_store_up 1\n"));
	t_resp_free(&r);
}
END_TEST

START_TEST(unknown_route_is_404)
{
	struct t_resp r;

	ck_assert_int_eq(t_http(dmn.port, "GET", "/api/nothing-here", NULL, NULL, 0, &r), 0);
	assert_error(&r, 404, "not_found", NULL);
	t_resp_free(&r);
}
END_TEST

START_TEST(wrong_method_is_405_with_allow)
{
	struct t_resp r;
	char *allow;

	ck_assert_int_eq(t_http(dmn.port, "DELETE", "/api/hardware", NULL, NULL, 0, &r), 0);
	assert_error(&r, 405, "method_not_allowed", NULL);
	allow = t_resp_header(&r, "Allow");
	ck_assert_ptr_nonnull(allow);
	ck_assert_str_eq(allow, "GET, HEAD");
	free(allow);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(dmn.port, "GET", "/api/hardware/rescan", NULL, NULL, 0, &r), 0);
	assert_error(&r, 405, "method_not_allowed", NULL);
	allow = t_resp_header(&r, "Allow");
	ck_assert_str_eq(allow, "POST");
	free(allow);
	t_resp_free(&r);
}
END_TEST

START_TEST(body_over_limit_is_413_from_content_length)
{
	struct t_resp r;
	/* Only the headers are sent: the answer must come from Content-Length alone. */
	const char req[] = "POST /api/hardware/rescan HTTP/1.1\r\nHost: 127.0.0.1\r\n" JSON_HDR
			   "Content-Length: 1048577\r\n\r\n";

	ck_assert_int_eq(t_http_raw(dmn.port, req, sizeof(req) - 1, &r, 3000), 0);
	assert_error(&r, 413, "payload_too_large", NULL);
	t_resp_free(&r);
}
END_TEST

START_TEST(chunked_body_over_limit_is_413)
{
	struct t_resp r;
	const size_t chunk = 64 * 1024, chunks = 20; /* 1.25 MiB */
	size_t cap = chunks * (chunk + 16) + 256, n;
	char *req = malloc(cap);

	n = (size_t)snprintf(req, cap,
			     "POST /api/hardware/rescan HTTP/1.1\r\nHost: 127.0.0.1\r\n" JSON_HDR
			     "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n");
	for (size_t i = 0; i < chunks; i++) {
		n += (size_t)snprintf(req + n, cap - n, "%zx\r\n", chunk);
		memset(req + n, ' ', chunk);
		n += chunk;
		memcpy(req + n, "\r\n", 2);
		n += 2;
	}
	memcpy(req + n, "0\r\n\r\n", 5);
	n += 5;
	ck_assert_int_eq(t_http_raw(dmn.port, req, n, &r, 5000), 0);
	assert_error(&r, 413, "payload_too_large", NULL);
	t_resp_free(&r);
	free(req);
}
END_TEST

START_TEST(long_url_is_414)
{
	struct t_resp r;
	size_t n = 9000;
	char *path = malloc(n + 32);

	memcpy(path, "/api/hardware?x=", 16);
	memset(path + 16, 'a', n);
	path[16 + n] = '\0';
	ck_assert_int_eq(t_http(dmn.port, "GET", path, NULL, NULL, 0, &r), 0);
	assert_error(&r, 414, "uri_too_long", NULL);
	t_resp_free(&r);
	free(path);
}
END_TEST

START_TEST(post_that_is_not_json_is_415)
{
	struct t_resp r;

	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/hardware/rescan",
				"Content-Type: text/plain\r\n", "{}", 2, &r),
			 0);
	assert_error(&r, 415, "unsupported_media_type", NULL);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/hardware/rescan", NULL, "{}", 2, &r), 0);
	assert_error(&r, 415, "unsupported_media_type", NULL);
	t_resp_free(&r);
}
END_TEST

START_TEST(malformed_json_is_400)
{
	static const char *const bodies[] = {"{\"max_age_s\":", "{}x", "nul", "{\"a\":\"\xff\"}"};
	struct t_resp r;

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		ck_assert_int_eq(t_http(dmn.port, "POST", "/api/hardware/rescan", JSON_HDR,
					bodies[i], strlen(bodies[i]), &r),
				 0);
		assert_error(&r, 400, "invalid_json", NULL);
		t_resp_free(&r);
	}
}
END_TEST

START_TEST(deep_nesting_is_400_not_a_crash)
{
	struct t_resp r;
	size_t depth = 100000;
	char *body = malloc(depth * 2);

	memset(body, '[', depth);
	memset(body + depth, ']', depth);
	ck_assert_int_eq(
		t_http(dmn.port, "POST", "/api/hardware/rescan", JSON_HDR, body, depth * 2, &r), 0);
	assert_error(&r, 400, "invalid_json", NULL);
	t_resp_free(&r);
	free(body);
}
END_TEST

START_TEST(bad_values_are_422_naming_the_field)
{
	static const struct {
		const char *body;
		const char *code;
		const char *field;
	} cases[] = {
		{"{\"max_age_s\":-1}", "invalid_value", "max_age_s"},
		{"{\"max_age_s\":1.5}", "invalid_value", "max_age_s"},
		{"{\"max_age_s\":\"10\"}", "invalid_value", "max_age_s"},
		{"{\"max_age_s\":1e300}", "invalid_value", "max_age_s"},
		{"{\"bogus\":1}", "unknown_field", "bogus"},
		{"[1,2]", "invalid_value", NULL},
	};
	struct t_resp r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(t_http(dmn.port, "POST", "/api/hardware/rescan", JSON_HDR,
					cases[i].body, strlen(cases[i].body), &r),
				 0);
		assert_error(&r, 422, cases[i].code, cases[i].field);
		t_resp_free(&r);
	}
	ck_assert_int_eq(
		t_http(dmn.port, "GET", "/api/hardware/history?limit=0", NULL, NULL, 0, &r), 0);
	assert_error(&r, 422, "invalid_value", "limit");
	t_resp_free(&r);
	ck_assert_int_eq(
		t_http(dmn.port, "GET", "/api/hardware/history?before=abc", NULL, NULL, 0, &r), 0);
	assert_error(&r, 422, "invalid_value", "before");
	t_resp_free(&r);
}
END_TEST

START_TEST(rescan_publishes_a_new_snapshot_and_is_rate_limited)
{
	struct t_resp r;
	cJSON *j;
	char first[64], *ra;

	ck_assert_int_eq(t_http(dmn.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
	j = body_json(&r);
	snprintf(first, sizeof(first), "%s", cJSON_GetObjectItem(j, "scanned_at")->valuestring);
	cJSON_Delete(j);
	t_resp_free(&r);
	usleep(5000);

	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/hardware/rescan", NULL, NULL, 0, &r), 0);
	ck_assert_msg(r.status == 200, "rescan: %d %s", r.status, r.body);
	j = body_json(&r);
	ck_assert_str_ne(cJSON_GetObjectItem(j, "scanned_at")->valuestring, first);
	cJSON_Delete(j);
	t_resp_free(&r);

	/* A fresh snapshot satisfies max_age_s without a scan, even inside the rate limit. */
	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/hardware/rescan", JSON_HDR,
				"{\"max_age_s\":3600}", 18, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);

	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/hardware/rescan", NULL, NULL, 0, &r), 0);
	assert_error(&r, 429, "rate_limited", NULL);
	ra = t_resp_header(&r, "Retry-After");
	ck_assert_ptr_nonnull(ra);
	free(ra);
	t_resp_free(&r);

	/* Both scans are in the history, newest first, paginated. */
	ck_assert_int_eq(
		t_http(dmn.port, "GET", "/api/hardware/history?limit=1", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	j = body_json(&r);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "scans")), 1);
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(j, "next_before")));
	{
		char path[96];
		cJSON *j2;
		snprintf(path, sizeof(path), "/api/hardware/history?limit=5&before=%d",
			 (int)cJSON_GetObjectItem(j, "next_before")->valuedouble);
		t_resp_free(&r);
		ck_assert_int_eq(t_http(dmn.port, "GET", path, NULL, NULL, 0, &r), 0);
		j2 = body_json(&r);
		ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j2, "scans")), 1);
		ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j2, "next_before")));
		cJSON_Delete(j2);
	}
	cJSON_Delete(j);
	t_resp_free(&r);
}
END_TEST

START_TEST(idle_connections_do_not_block_others)
{
	int fds[64];
	struct t_resp r;

	for (int i = 0; i < 64; i++) {
		fds[i] = t_connect(dmn.port);
		ck_assert_int_ge(fds[i], 0);
		/* Half of them send half a request line and stall. */
		if (i % 2 && write(fds[i], "GET /hea", 8) != 8)
			ck_abort_msg("write failed");
	}
	ck_assert_int_eq(t_http(dmn.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	for (int i = 0; i < 64; i++)
		close(fds[i]);
}
END_TEST

START_TEST(sigterm_finishes_in_flight_request_and_exits_0)
{
	struct t_daemon d;
	const char head[] = "POST /api/hardware/rescan HTTP/1.1\r\nHost: 127.0.0.1\r\n" JSON_HDR
			    "Content-Length: 19\r\nConnection: close\r\n\r\n{\"max_age_s\":";
	char buf[8192];
	int fd, status;
	long ms = 0;
	ssize_t n, got = 0;

	t_daemon_start(&d, NULL);
	fd = t_connect(d.port);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, head, sizeof(head) - 1), (ssize_t)sizeof(head) - 1);
	usleep(100000);
	kill(d.pid, SIGTERM);
	usleep(200000);
	/* The request was in flight when the signal came: it must still be answered. */
	ck_assert_int_eq(write(fd, "86400}", 6), 6);
	while ((n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	close(fd);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 200", 12) == 0, "in-flight reply: %.200s", buf);
	status = t_daemon_signal_wait(&d, 0, t_under_valgrind() ? 20000 : 2000, &ms);
	if (status < 0) /* already gone: reap it */
		status = 0;
	ck_assert_int_eq(status, 0);
	/* New connections are refused once it stopped accepting. */
	ck_assert_int_lt(t_connect(d.port), 0);
	t_rmtree(d.dir);
	free(d.dir);
	free(d.log);
}
END_TEST

START_TEST(sigterm_exits_0_within_2s)
{
	struct t_daemon d;
	long ms = 0;
	int status;

	t_daemon_start(&d, NULL);
	status = t_daemon_signal_wait(&d, SIGTERM, 5000, &ms);
	ck_assert_int_eq(status, 0);
	if (!t_under_valgrind())
		ck_assert_msg(ms < 2000, "took %ld ms to stop", ms);
	t_rmtree(d.dir);
	free(d.dir);
	free(d.log);
}
END_TEST

START_TEST(token_guards_everything_but_healthz)
{
	struct t_daemon d;
	struct t_resp r;
	char *tok_dir = t_mkdtemp(), *tok = t_path(tok_dir, "token"), *www;
	const char *extra[] = {"--token-file", tok, NULL};

	ck_assert_int_eq(t_write_file(tok, "s3cret-token\n", 13), 0);
	t_daemon_start(&d, extra);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
	assert_error(&r, 401, "unauthorized", NULL);
	www = t_resp_header(&r, "WWW-Authenticate");
	ck_assert_ptr_nonnull(www);
	free(www);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware",
				"Authorization: Bearer wrong-token!\r\n", NULL, 0, &r),
			 0);
	assert_error(&r, 401, "unauthorized", NULL);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware",
				"Authorization: Bearer s3cret-token\r\n", NULL, 0, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	t_daemon_stop(&d);
	t_rmtree(tok_dir);
	free(tok_dir);
	free(tok);
}
END_TEST

START_TEST(non_loopback_without_token_refuses_to_start)
{
	struct t_daemon d;
	const char *extra[] = {"--listen", "0.0.0.0:0", NULL};
	const char *extra_ok[] = {"--listen", "0.0.0.0:0", "--insecure", NULL};
	char *log;
	int rc = t_daemon_try_start(&d, extra, 5000);

	ck_assert_int_eq(rc, 1);
	log = t_daemon_log(&d);
	ck_assert_ptr_nonnull(strstr(log, "refusing to listen on 0.0.0.0:0 without a token"));
	free(log);
	t_rmtree(d.dir);
	free(d.dir);
	free(d.log);
	rc = t_daemon_try_start(&d, extra_ok, 5000);
	ck_assert_int_eq(rc, -1);
	t_daemon_stop(&d);
}
END_TEST

START_TEST(cors_preflight_only_for_allowed_origins)
{
	struct t_daemon d;
	struct t_resp r;
	const char *extra[] = {"--cors-origin", "http://ui.example", NULL};
	char *acao;

	t_daemon_start(&d, extra);
	ck_assert_int_eq(
		t_http(d.port, "OPTIONS", "/api/hardware",
		       "Origin: http://ui.example\r\nAccess-Control-Request-Method: GET\r\n", NULL,
		       0, &r),
		0);
	ck_assert_int_eq(r.status, 204);
	acao = t_resp_header(&r, "Access-Control-Allow-Origin");
	ck_assert_str_eq(acao, "http://ui.example");
	free(acao);
	acao = t_resp_header(&r, "Access-Control-Allow-Methods");
	ck_assert_ptr_nonnull(strstr(acao, "GET"));
	free(acao);
	t_resp_free(&r);

	ck_assert_int_eq(
		t_http(d.port, "OPTIONS", "/api/hardware",
		       "Origin: http://evil.example\r\nAccess-Control-Request-Method: GET\r\n",
		       NULL, 0, &r),
		0);
	assert_error(&r, 403, "forbidden", NULL);
	ck_assert_ptr_null(t_resp_header(&r, "Access-Control-Allow-Origin"));
	t_resp_free(&r);

	ck_assert_int_eq(
		t_http(d.port, "GET", "/healthz", "Origin: http://ui.example\r\n", NULL, 0, &r), 0);
	acao = t_resp_header(&r, "Access-Control-Allow-Origin");
	ck_assert_str_eq(acao, "http://ui.example");
	free(acao);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/healthz", "Origin: http://evil.example\r\n", NULL,
				0, &r),
			 0);
	ck_assert_ptr_null(t_resp_header(&r, "Access-Control-Allow-Origin"));
	t_resp_free(&r);
	t_daemon_stop(&d);
}
END_TEST

START_TEST(corrupt_database_keeps_serving_without_the_store)
{
	struct t_daemon d;
	struct t_resp r;
	char *dir = t_mkdtemp(), *db = t_path(dir, "bad.db"), *log, *after;
	const char junk[] = "this is not an SQLite database, but it is long enough to look like "
			    "one to a careless reader of file headers..........................";
	const char *extra[] = {"--db", db, NULL};
	size_t len;
	cJSON *j;

	ck_assert_int_eq(t_write_file(db, junk, sizeof(junk) - 1), 0);
	t_daemon_start(&d, extra);
	log = t_daemon_log(&d);
	ck_assert_msg(strstr(log, "store: ") && strstr(log, "serving without it"), "log: %s", log);
	free(log);
	ck_assert_int_eq(t_http(d.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	j = body_json(&r);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "store")->valuestring, "unavailable");
	cJSON_Delete(j);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware/history", NULL, NULL, 0, &r), 0);
	assert_error(&r, 503, "store_unavailable", NULL);
	t_resp_free(&r);
	t_daemon_stop(&d);
	/* The file was not touched. */
	after = t_read_file(db, &len);
	ck_assert_uint_eq(len, sizeof(junk) - 1);
	ck_assert(memcmp(after, junk, len) == 0);
	free(after);
	t_rmtree(dir);
	free(dir);
	free(db);
}
END_TEST

START_TEST(sighup_reloads_profiles_and_survives_a_broken_file)
{
	struct t_daemon d;
	struct t_resp r;
	char *pdir, *pfile, *log;
	const char good[] = "{\"tiers\": []}\n";
	const char bad[] = "{\n  \"tiers\": [\n    {\"id\": \"x\",}\n  ]\n}\n";

	t_daemon_start(&d, NULL);
	pdir = t_path(d.dir, "profiles");
	pfile = t_path(pdir, "tiers.json");
	ck_assert_int_eq(t_write_file(pfile, good, sizeof(good) - 1), 0);
	kill(d.pid, SIGHUP);
	usleep(t_under_valgrind() ? 2000000 : 200000);
	log = t_daemon_log(&d);
	ck_assert_msg(strstr(log, "profiles: loaded 1 file(s)"), "log: %s", log);
	free(log);
	ck_assert_int_eq(t_write_file(pfile, bad, sizeof(bad) - 1), 0);
	kill(d.pid, SIGHUP);
	usleep(t_under_valgrind() ? 2000000 : 200000);
	log = t_daemon_log(&d);
	ck_assert_msg(strstr(log,
			     "tiers.json:3: invalid JSON; keeping the 1 file(s) loaded before"),
		      "log: %s", log);
	free(log);
	ck_assert_int_eq(t_http(d.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	t_daemon_stop(&d);
	free(pdir);
	free(pfile);
}
END_TEST

START_TEST(healthcheck_command_reports_the_daemon)
{
	char addr[64];
	const char *argv[] = {t_bin(), "healthcheck", "--listen", addr, NULL};
	char *err = NULL;

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", dmn.port);
	ck_assert_int_eq(t_run(argv, NULL, NULL, 5000), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:1");
	ck_assert_int_eq(t_run(argv, NULL, &err, 5000), 1);
	ck_assert_ptr_nonnull(strstr(err, "healthcheck"));
	free(err);
}
END_TEST

START_TEST(cli_rejects_bad_input_with_one_line)
{
	const char *bad_flag[] = {t_bin(), "serve", "--no-such-flag", NULL};
	const char *bad_interval[] = {t_bin(), "serve", "--scan-interval", "0", NULL};
	const char *bad_cmd[] = {t_bin(), "frobnicate", NULL};
	const char *const *cases[] = {bad_flag, bad_interval, bad_cmd};
	char *err = NULL;

	for (size_t i = 0; i < 3; i++) {
		ck_assert_int_eq(t_run(cases[i], NULL, &err, 5000), 2);
		ck_assert_msg(strncmp(err, "rigfit: ", 8) == 0 &&
				      strchr(err, '\n') == err + strlen(err) - 1,
			      "not one line: %s", err);
		free(err);
	}
}
END_TEST

START_TEST(cli_detect_json_is_the_hardware_object)
{
	const char *argv[] = {t_bin(), "detect", "--format", "json", NULL};
	char *out = NULL;
	cJSON *j;

	ck_assert_int_eq(t_run(argv, &out, NULL, 5000), 0);
	j = cJSON_Parse(out);
	ck_assert_ptr_nonnull(j);
	ck_assert(cJSON_IsObject(cJSON_GetObjectItem(j, "memory")));
	ck_assert(cJSON_IsArray(cJSON_GetObjectItem(j, "gpus")));
	ck_assert_str_eq(cJSON_GetObjectItem(j, "platform")->valuestring, "cpu");
	cJSON_Delete(j);
	free(out);
}
END_TEST

/* Removes the two fields that differ between two scans of the same machine. */
static char *without_scan_time(const char *json)
{
	cJSON *j = cJSON_Parse(json);
	char *out;

	ck_assert_ptr_nonnull(j);
	cJSON_DeleteItemFromObject(j, "scanned_at");
	cJSON_DeleteItemFromObject(j, "scan_duration_ms");
	out = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return out;
}

START_TEST(api_hardware_is_the_cli_json_for_the_same_machine)
{
	struct t_daemon d;
	struct t_resp r;
	char *root = t_path(t_src_dir(), "tests/fixtures/machines/nvidia-rtx3060-laptop");
	char *smi = t_path(root, "bin/nvidia-smi"), *profiles = t_path(t_src_dir(), "profiles");
	const char *extra[] = {"--root", root, "--nvidia-smi", smi, "--profiles", profiles, NULL};
	const char *argv[] = {t_bin(),        "detect", "--format",   "json",   "--root", root,
			      "--nvidia-smi", smi,      "--profiles", profiles, NULL};
	char *out = NULL, *a, *b;

	t_daemon_start(&d, extra);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(t_run(argv, &out, NULL, 10000), 0);
	/* The CLI ends its JSON with a newline; the route sends the object alone. */
	ck_assert_int_eq(out[strlen(out) - 1], '\n');
	ck_assert_int_eq(r.body[r.body_len - 1], '}');
	a = without_scan_time(r.body);
	b = without_scan_time(out);
	ck_assert_str_eq(a, b);
	/* A GPU through nvidia-smi, completed from its device profile. */
	ck_assert_ptr_nonnull(strstr(a, "\"profile_id\":\"rtx-3060-laptop\""));
	ck_assert_ptr_nonnull(strstr(a, "\"memory_bandwidth_gbs\":336"));
	free(a);
	free(b);
	free(out);
	t_resp_free(&r);
	t_daemon_stop(&d);
	free(root);
	free(smi);
	free(profiles);
}
END_TEST

static long ms_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

START_TEST(a_hung_probe_never_delays_a_request)
{
	struct t_daemon d;
	struct t_resp r;
	char *root = t_path(t_src_dir(), "tests/fixtures/machines/xeon-l5640-2socket");
	char *dir = t_mkdtemp(), *smi = t_path(dir, "nvidia-smi");
	const char script[] = "#!/bin/sh\nsleep 30\n";
	const char *extra[] = {"--root", root, "--nvidia-smi", smi, "--probe-timeout-ms",
			       "1500",   NULL};
	long t0, worst = 0;
	bool seen_503 = false;

	ck_assert_int_eq(t_write_file(smi, script, sizeof(script) - 1), 0);
	ck_assert_int_eq(chmod(smi, 0755), 0);
	ck_assert_int_eq(t_daemon_try_start(&d, extra, 5000), -1);
	/* The first scan is stuck in nvidia-smi: requests are answered at once meanwhile. */
	for (int i = 0; i < 10; i++) {
		t0 = ms_now();
		ck_assert_int_eq(t_http(d.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
		ck_assert_int_eq(r.status, 200);
		t_resp_free(&r);
		ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
		if (r.status == 503)
			seen_503 = true;
		t_resp_free(&r);
		if (ms_now() - t0 > worst)
			worst = ms_now() - t0;
		usleep(50000);
	}
	ck_assert_msg(seen_503, "the scan was not running while the requests were made");
	if (!t_under_valgrind())
		ck_assert_msg(worst < 250, "a request took %ld ms during a hung probe", worst);
	/* The timeout fires, the scan completes without inventing a GPU, and says why. */
	for (int i = 0; i < (t_under_valgrind() ? 300 : 60); i++) {
		ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
		if (r.status == 200)
			break;
		t_resp_free(&r);
		usleep(100000);
	}
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "\"gpus\":[]"));
	ck_assert_msg(strstr(r.body, "nvidia-smi") && strstr(r.body, "timed out"), "%s", r.body);
	t_resp_free(&r);
	t_daemon_stop(&d);
	t_rmtree(dir);
	free(dir);
	free(smi);
	free(root);
}
END_TEST

START_TEST(estimate_over_http_is_the_cli_answer_and_model_files_are_gated)
{
	struct t_daemon d;
	struct t_resp r;
	char *profiles = t_path(t_src_dir(), "profiles"), *mdir = t_mkdtemp();
	char *junk = t_path(mdir, "junk.gguf"), *in = t_path(mdir, "req.json"), *out = NULL;
	const char *extra[] = {"--profiles", profiles, "--models-dir", mdir, NULL};
	const char body[] = "{\"model\":{\"id\":\"llama-3.1-8b\"},\"hardware_profile\":"
			    "\"rtx-4090\",\"n_ctx\":16384,\"flash_attn\":true}";
	const char *argv[] = {t_bin(), "estimate", "--profiles", profiles, in, NULL};
	char gguf_body[512];

	ck_assert_int_eq(t_write_file(in, body, sizeof(body) - 1), 0);
	ck_assert_int_eq(t_write_file(junk, "not a gguf file", 15), 0);
	t_daemon_start(&d, extra);
	ck_assert_int_eq(
		t_http(d.port, "POST", "/api/estimate", JSON_HDR, body, sizeof(body) - 1, &r), 0);
	ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
	ck_assert_int_eq(t_run(argv, &out, NULL, 20000), 0);
	/* The same question about the same described hardware: the same bytes. */
	ck_assert_uint_eq(strlen(out), r.body_len + 1);
	ck_assert(memcmp(out, r.body, r.body_len) == 0);
	t_resp_free(&r);
	free(out);

	snprintf(gguf_body, sizeof(gguf_body),
		 "{\"model\":{\"gguf\":\"/etc/passwd\"},\"hardware_profile\":\"rtx-4090\"}");
	ck_assert_int_eq(t_http(d.port, "POST", "/api/estimate", JSON_HDR, gguf_body,
				strlen(gguf_body), &r),
			 0);
	assert_error(&r, 403, "forbidden", "model.gguf");
	ck_assert_ptr_null(strstr(r.body, "passwd"));
	t_resp_free(&r);
	snprintf(gguf_body, sizeof(gguf_body),
		 "{\"model\":{\"gguf\":\"%s/../%s/junk.gguf\"},\"hardware_profile\":\"rtx-4090\"}",
		 mdir, strrchr(mdir, '/') + 1);
	ck_assert_int_eq(t_http(d.port, "POST", "/api/estimate", JSON_HDR, gguf_body,
				strlen(gguf_body), &r),
			 0);
	assert_error(&r, 422, "invalid_value", "model.gguf");
	t_resp_free(&r);
	/* A real GGUF file inside the models dir: estimated from its own tensors. */
	{
		size_t glen = 0;
		unsigned char *g = t_gguf_write_tiny(&glen);
		char *gpath = t_path(mdir, "tiny.gguf");
		cJSON *j;
		ck_assert_int_eq(t_write_file(gpath, g, glen), 0);
		snprintf(gguf_body, sizeof(gguf_body),
			 "{\"model\":{\"gguf\":\"%s\"},\"hardware_profile\":\"rtx-4090\"}", gpath);
		ck_assert_int_eq(t_http(d.port, "POST", "/api/estimate", JSON_HDR, gguf_body,
					strlen(gguf_body), &r),
				 0);
		ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
		j = body_json(&r);
		ck_assert_str_eq(
			cJSON_GetObjectItem(cJSON_GetObjectItem(j, "model"), "source")->valuestring,
			"gguf");
		ck_assert(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "memory"), "weights_bytes")
				  ->valuedouble > 0);
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "fits")));
		cJSON_Delete(j);
		t_resp_free(&r);
		/* The same file cut short is a clear 422, never a crash. */
		ck_assert_int_eq(t_write_file(gpath, g, glen / 3), 0);
		ck_assert_int_eq(t_http(d.port, "POST", "/api/estimate", JSON_HDR, gguf_body,
					strlen(gguf_body), &r),
				 0);
		assert_error(&r, 422, "invalid_value", "model.gguf");
		t_resp_free(&r);
		free(g);
		free(gpath);
	}
	t_daemon_stop(&d);
	t_rmtree(mdir);
	free(mdir);
	free(junk);
	free(in);
	free(profiles);
}
END_TEST

START_TEST(nfd_file_and_gpu_gauges_follow_the_scan)
{
	struct t_daemon d;
	struct t_resp r;
	char *root = t_path(t_src_dir(), "tests/fixtures/machines/nvidia-rtx3060-laptop");
	char *smi = t_path(root, "bin/nvidia-smi"), *profiles = t_path(t_src_dir(), "profiles");
	char *nfd_dir = t_mkdtemp(), *nfd = t_path(nfd_dir, "rigfit.features"), *text;
	const char *extra[] = {"--root", root,        "--nvidia-smi", smi, "--profiles",
			       profiles, "--nfd-dir", nfd_dir,        NULL};

	t_daemon_start(&d, extra);
	text = t_read_file(nfd, NULL);
	ck_assert_msg(text != NULL, "no %s after the first scan", nfd);
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/gpu-count=1\n"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/profile-id=rtx-3060-laptop\n"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/gpu-vendor=nvidia\n"));
	free(text);
	ck_assert_int_eq(t_http(d.port, "GET", "/metrics", NULL, NULL, 0, &r), 0);
	ck_assert_ptr_nonnull(strstr(r.body, "\nrigfit_gpus 1\n"));
	ck_assert_ptr_nonnull(strstr(r.body, "rigfit_gpu_memory_total_bytes{index=\"0\""));
	ck_assert_ptr_nonnull(strstr(r.body, "name=\"NVIDIA GeForce RTX 3060 Laptop GPU\"}"));
	t_resp_free(&r);
	t_daemon_stop(&d);
	t_rmtree(nfd_dir);
	free(nfd_dir);
	free(nfd);
	free(root);
	free(smi);
	free(profiles);
}
END_TEST

/* POSTs body to path on port and returns the parsed 200 answer. */
static cJSON *post_ok(int port, const char *path, const char *body)
{
	struct t_resp r;
	cJSON *j;

	ck_assert_int_eq(t_http(port, "POST", path, JSON_HDR, body, strlen(body), &r), 0);
	ck_assert_msg(r.status == 200, "%s: %d %s", path, r.status, r.body);
	j = cJSON_Parse(r.body);
	ck_assert_ptr_nonnull(j);
	t_resp_free(&r);
	return j;
}

/* Runs the CLI with args and returns its parsed JSON answer. */
static cJSON *cli_json(const char *const *args)
{
	const char *argv[24];
	char *out = NULL, *err = NULL;
	cJSON *j;
	int n = 0;

	argv[n++] = t_bin();
	while (args[n - 1] && n < 23) {
		argv[n] = args[n - 1];
		n++;
	}
	argv[n] = NULL;
	ck_assert_msg(t_run(argv, &out, &err, 30000) == 0, "%s", err ? err : "");
	j = cJSON_Parse(out);
	ck_assert_ptr_nonnull(j);
	free(out);
	free(err);
	return j;
}

/* A host without a GPU (a laptop with Intel graphics only): POST /api/estimate for an 8B QLoRA
 * answers what one GPU needs, the same bytes as one H100 asked for with no strategy, with no
 * sharding or offload picked for GPUs that are not there (it once picked fsdp_qlora with
 * offload and reported 5.0 GB); `rigfit estimate` answers the same, and /api/finetune/detect
 * and `rigfit finetune` agree: no plan, no strategy, one GPU. */
START_TEST(no_gpu_here_is_one_gpus_need_on_every_route)
{
	struct t_daemon d;
	char *root = t_path(t_src_dir(), "tests/fixtures/machines/intel-i7-1165g7-laptop");
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *extra[] = {"--root", root, "--profiles", profiles, NULL};
	const char *est_args[] = {"estimate", "llama-3.1-8b", "--mode",          "qlora",
				  "--root",   root,           "--profiles",      profiles,
				  "--format", "json",         "--no-host-bench", NULL};
	const char *ft_args[] = {"finetune",        "--task",   "text-generation",
				 "--root",          root,       "--profiles",
				 profiles,          "--format", "json",
				 "--no-host-bench", NULL};
	cJSON *route, *cli, *h100, *ft, *ft_cli;
	const cJSON *t;

	t_daemon_start(&d, extra);
	t_wait_scan(d.port);
	route = post_ok(d.port, "/api/estimate", "{\"model\":\"llama-3.1-8b\",\"mode\":\"qlora\"}");
	h100 = post_ok(d.port, "/api/estimate",
		       "{\"model\":\"llama-3.1-8b\",\"mode\":\"qlora\",\"hardware_profile\":"
		       "\"h100-sxm\",\"strategy\":\"none\"}");
	t = cJSON_GetObjectItem(route, "training");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(t, "strategy")), "none");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(t, "offload")), "none");
	ck_assert_int_eq(cJSON_GetObjectItem(t, "n_gpus")->valueint, 1);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(t, "unlimited_gpu")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(route, "fits")));
	ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(route, "memory"), "total_bytes")
				    ->valuedouble,
			    cJSON_GetObjectItem(cJSON_GetObjectItem(h100, "memory"), "total_bytes")
				    ->valuedouble);
	ck_assert_double_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(route, "memory"), "host_bytes")->valuedouble,
		0);
	cli = cli_json(est_args);
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(cli, "memory"),
				cJSON_GetObjectItem(route, "memory"), true));
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(cli, "training"), t, true));

	ft = post_ok(d.port, "/api/finetune/detect", "{\"task\":\"text-generation\"}");
	ft_cli = cli_json(ft_args);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(ft, "estimate")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(ft, "settings")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(ft, "possible_models")), 0);
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(ft, "plan"), "n_gpus")->valueint,
			 1);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(ft, "plan"), "method")));
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(ft_cli, "plan"),
				cJSON_GetObjectItem(ft, "plan"), true));
	/* Detect points to the estimate's answer for one GPU. */
	ck_assert_ptr_nonnull(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(ft, "explanation")),
				     "training.unlimited_gpu"));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ft_cli, "explanation")),
			 cJSON_GetStringValue(cJSON_GetObjectItem(ft, "explanation")));
	cJSON_Delete(route);
	cJSON_Delete(cli);
	cJSON_Delete(h100);
	cJSON_Delete(ft);
	cJSON_Delete(ft_cli);
	t_daemon_stop(&d);
	free(root);
	free(profiles);
}
END_TEST

Suite *http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *shared = tcase_create("routes");
	TCase *own = tcase_create("lifecycle");
	int timeout = t_under_valgrind() ? 300 : 30;

	tcase_add_checked_fixture(shared, start_plain, stop_plain);
	tcase_set_timeout(shared, timeout);
	tcase_add_test(shared, healthz_reports_status_version_uptime);
	tcase_add_test(shared, head_answers_headers_only);
	tcase_add_test(shared, openapi_is_the_embedded_spec);
	tcase_add_test(shared, hardware_snapshot_matches_proc_meminfo);
	tcase_add_test(shared, metrics_count_requests_and_scans);
	tcase_add_test(shared, unknown_route_is_404);
	tcase_add_test(shared, wrong_method_is_405_with_allow);
	tcase_add_test(shared, body_over_limit_is_413_from_content_length);
	tcase_add_test(shared, chunked_body_over_limit_is_413);
	tcase_add_test(shared, long_url_is_414);
	tcase_add_test(shared, post_that_is_not_json_is_415);
	tcase_add_test(shared, malformed_json_is_400);
	tcase_add_test(shared, deep_nesting_is_400_not_a_crash);
	tcase_add_test(shared, bad_values_are_422_naming_the_field);
	tcase_add_test(shared, rescan_publishes_a_new_snapshot_and_is_rate_limited);
	tcase_add_test(shared, idle_connections_do_not_block_others);
	tcase_add_test(shared, healthcheck_command_reports_the_daemon);
	suite_add_tcase(s, shared);

	tcase_set_timeout(own, timeout);
	tcase_add_test(own, sigterm_finishes_in_flight_request_and_exits_0);
	tcase_add_test(own, sigterm_exits_0_within_2s);
	tcase_add_test(own, token_guards_everything_but_healthz);
	tcase_add_test(own, non_loopback_without_token_refuses_to_start);
	tcase_add_test(own, cors_preflight_only_for_allowed_origins);
	tcase_add_test(own, corrupt_database_keeps_serving_without_the_store);
	tcase_add_test(own, sighup_reloads_profiles_and_survives_a_broken_file);
	tcase_add_test(own, cli_rejects_bad_input_with_one_line);
	tcase_add_test(own, cli_detect_json_is_the_hardware_object);
	tcase_add_test(own, api_hardware_is_the_cli_json_for_the_same_machine);
	tcase_add_test(own, no_gpu_here_is_one_gpus_need_on_every_route);
	tcase_add_test(own, a_hung_probe_never_delays_a_request);
	tcase_add_test(own, estimate_over_http_is_the_cli_answer_and_model_files_are_gated);
	tcase_add_test(own, nfd_file_and_gpu_gauges_follow_the_scan);
	suite_add_tcase(s, own);
	return s;
}
