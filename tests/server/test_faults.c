/*
 * Faults at run time, against the real daemon: stalled and idle connections (per-connection
 * timeout and limits), the database locked, corrupted and full while the daemon runs, a
 * machine without /proc, a scan slower than the scan interval, and SIGTERM under load. Each
 * test shows the daemon keeps answering what does not depend on the fault, answers what does
 * with the error envelope, loses no committed row, and recovers when the fault clears.
 *
 * Faults covered elsewhere: NVML missing, failing, crashing or hanging (also mid-scan) and
 * nvidia-smi hanging or printing garbage in test_probe_nvidia.c; a hung probe never delaying a
 * request, SIGHUP with a broken profile file, a corrupt database at start and a request in
 * flight at SIGTERM in test_http.c; busy, read-only, corrupt and newer databases at open and
 * SQLite allocation failures in test_store.c.
 */
#define _GNU_SOURCE /* prlimit: a file size limit on the running daemon */

#include <cjson/cJSON.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "server/config.h"
#include "server/embedded.h"
#include "server/store/store.h"
#include "tests/server/harness.h"
#include "tests/test.h"

#define JSON_HDR "Content-Type: application/json\r\n"

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* How long a request may take while a fault is active: well under the stalls these tests
 * guard against (the 1 s connection timeout, the 2 s busy timeout), with room for a loaded
 * machine; generous under valgrind. */
static long prompt_ms(void)
{
	return t_under_valgrind() ? 5000 : 750;
}

/* GETs path and asserts a 200 that came promptly. */
static void get_ok_promptly(int port, const char *path)
{
	struct t_resp r;
	long t0 = now_ms(), took;

	ck_assert_int_eq(t_http(port, "GET", path, NULL, NULL, 0, &r), 0);
	took = now_ms() - t0;
	ck_assert_msg(r.status == 200, "%s: %d %.200s", path, r.status, r.body);
	ck_assert_msg(took < prompt_ms(), "%s took %ld ms", path, took);
	t_resp_free(&r);
}

/* Returns the ids listed by GET /api/hardware/history?limit=1000 (newest first) into ids
 * (capacity cap); returns how many, or -status when the route did not answer 200. */
static int history_ids(int port, int64_t *ids, int cap)
{
	struct t_resp r;
	cJSON *j, *scan;
	int n = 0;

	ck_assert_int_eq(t_http(port, "GET", "/api/hardware/history?limit=1000", NULL, NULL, 0, &r),
			 0);
	if (r.status != 200) {
		int st = r.status;
		t_resp_free(&r);
		return -st;
	}
	j = cJSON_Parse(r.body);
	ck_assert_ptr_nonnull(j);
	cJSON_ArrayForEach(scan, cJSON_GetObjectItem(j, "scans"))
	{
		if (n < cap)
			ids[n++] = (int64_t)cJSON_GetObjectItem(scan, "id")->valuedouble;
	}
	cJSON_Delete(j);
	t_resp_free(&r);
	return n;
}

/* Asserts every id of before[0..nb) is still in after[0..na). */
static void assert_rows_kept(const int64_t *before, int nb, const int64_t *after, int na)
{
	for (int i = 0; i < nb; i++) {
		bool found = false;
		for (int k = 0; k < na && !found; k++)
			found = after[k] == before[i];
		ck_assert_msg(found, "committed scan %lld was lost", (long long)before[i]);
	}
}

/* Waits until the history holds at least want rows; returns how many it holds. */
static int wait_rows(int port, int want, int64_t *ids, int cap)
{
	long deadline = now_ms() + (t_under_valgrind() ? 60000 : 8000);
	int n;

	do {
		n = history_ids(port, ids, cap);
		if (n >= want)
			return n;
		usleep(50000);
	} while (now_ms() < deadline);
	ck_abort_msg("the history has %d rows, want %d", n, want);
	return n;
}

/* Returns the error code of an error envelope in r, or "" (static storage). */
static const char *envelope_code(const struct t_resp *r)
{
	static char code[64];
	cJSON *j = cJSON_ParseWithLength(r->body, r->body_len);
	const cJSON *c = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "code");

	snprintf(code, sizeof(code), "%s", cJSON_IsString(c) ? c->valuestring : "");
	cJSON_Delete(j);
	return code;
}

/* ---- connections ------------------------------------------------------------------------ */

START_TEST(stalled_connections_neither_delay_others_nor_live_forever)
{
	struct t_daemon d;
	const char *extra[] = {"--connection-timeout", "1", NULL};
	static const char *const partial[] = {
		"", /* connected, sent nothing */
		"GET /hea",
		"POST /api/estimate HTTP/1.1\r\nHost: 127.0.0.1\r\n" JSON_HDR
		"Content-Length: 100\r\n\r\n{\"mo",
	};
	int fds[64];
	long opened, closed_at[64], deadline;
	int open_left = 64;

	t_daemon_start(&d, extra);
	for (int i = 0; i < 64; i++) {
		const char *p = partial[i % 3];
		fds[i] = t_connect(d.port);
		ck_assert_int_ge(fds[i], 0);
		if (*p)
			ck_assert_int_eq(send(fds[i], p, strlen(p), MSG_NOSIGNAL),
					 (ssize_t)strlen(p));
		closed_at[i] = 0;
	}
	opened = now_ms();
	/* 64 stalled clients do not delay a 65th. */
	get_ok_promptly(d.port, "/healthz");
	get_ok_promptly(d.port, "/api/hardware");

	/* Each stalled connection is closed by the server after the 1 s timeout. */
	deadline = opened + (t_under_valgrind() ? 30000 : 4000);
	while (open_left > 0 && now_ms() < deadline) {
		struct pollfd p[64];
		int np = 0, idx[64];
		for (int i = 0; i < 64; i++)
			if (!closed_at[i]) {
				p[np].fd = fds[i];
				p[np].events = POLLIN;
				idx[np++] = i;
			}
		if (poll(p, (nfds_t)np, 100) <= 0)
			continue;
		for (int k = 0; k < np; k++) {
			char buf[512];
			if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (recv(p[k].fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
				continue; /* a reply would be fine too; wait for the close */
			closed_at[idx[k]] = now_ms();
			open_left--;
		}
	}
	ck_assert_msg(open_left == 0, "%d stalled connections still open after %ld ms", open_left,
		      now_ms() - opened);
	for (int i = 0; i < 64; i++) {
		ck_assert_msg(closed_at[i] - opened >= 800,
			      "connection %d closed after %ld ms, before the timeout", i,
			      closed_at[i] - opened);
		close(fds[i]);
	}
	get_ok_promptly(d.port, "/healthz");
	t_daemon_stop(&d);
}
END_TEST

/* A load test holds 256 connections from loopback: one address may hold 384 at once, and the
 * 385th is turned away (none of the others has stalled to make room) without disturbing the
 * others. */
START_TEST(one_address_may_hold_384_connections)
{
	struct t_daemon d;
	enum {
		N = 560
	};
	static int fds[N];
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
	int answered = 0, refused = 0;
	long deadline;

	t_daemon_start(&d, NULL);
	for (int i = 0; i < N; i++) {
		fds[i] = t_connect(d.port);
		ck_assert_int_ge(fds[i], 0);
	}
	for (int i = 0; i < N; i++)
		(void)send(fds[i], req, sizeof(req) - 1, MSG_NOSIGNAL);
	deadline = now_ms() + (t_under_valgrind() ? 60000 : 10000);
	for (int i = 0; i < N; i++) {
		char buf[32] = "";
		struct pollfd p = {fds[i], POLLIN, 0};
		long left = deadline - now_ms();
		ssize_t got = 0;
		if (left > 0 && poll(&p, 1, (int)left) > 0)
			got = recv(fds[i], buf, sizeof(buf) - 1, 0);
		if (got >= 12 && strncmp(buf, "HTTP/1.1 200", 12) == 0)
			answered++;
		else
			refused++;
	}
	/* Closed only now: a slot freed earlier would let a later connection in. */
	for (int i = 0; i < N; i++)
		close(fds[i]);
	ck_assert_msg(answered == 384, "%d of %d connections answered, want 384", answered, N);
	ck_assert_int_eq(refused, N - 384);
	/* The slots come back once the daemon has seen the closes. */
	deadline = now_ms() + (t_under_valgrind() ? 30000 : 3000);
	for (;;) {
		struct t_resp r;
		int rc = t_http(d.port, "GET", "/healthz", NULL, NULL, 0, &r);
		bool ok = rc == 0 && r.status == 200;
		if (rc == 0)
			t_resp_free(&r);
		if (ok)
			break;
		ck_assert_msg(now_ms() < deadline, "the slots did not come back");
		usleep(20000);
	}
	t_daemon_stop(&d);
}
END_TEST

/* Started with the common soft limit of 1024 descriptors, the daemon raises it so that its
 * 1024 connections can all be served. */
START_TEST(descriptor_limit_is_raised_for_the_connection_limit)
{
	struct t_daemon d;
	struct rlimit rl;
	char path[64], *limits, *line;
	unsigned long long soft = 0, want;

	if (t_under_valgrind())
		return; /* valgrind keeps descriptors of its own and fakes the limit */
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = 1024;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	want = rl.rlim_max < 4096 ? (unsigned long long)rl.rlim_max : 4096;
	t_daemon_start(&d, NULL);
	snprintf(path, sizeof(path), "/proc/%d/limits", (int)d.pid);
	limits = t_read_file(path, NULL);
	ck_assert_ptr_nonnull(limits);
	line = strstr(limits, "Max open files");
	ck_assert_ptr_nonnull(line);
	ck_assert_int_eq(sscanf(line + strlen("Max open files"), "%llu", &soft), 1);
	ck_assert_msg(soft == want, "soft limit %llu, want %llu", soft, want);
	free(limits);
	t_daemon_stop(&d);
}
END_TEST

START_TEST(connection_timeout_is_a_flag_and_an_environment_variable)
{
	struct rf_config c;
	char err[256];
	char *flag[] = {"--connection-timeout", "7"};
	static const char *const bad[] = {"0", "3601", "1.5", "x", "-1"};

	unsetenv("RIGFIT_CONNECTION_TIMEOUT");
	ck_assert_int_eq(rf_config_parse(0, NULL, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.connection_timeout_s, 15);
	ck_assert_int_eq(rf_config_parse(2, flag, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.connection_timeout_s, 7);
	setenv("RIGFIT_CONNECTION_TIMEOUT", "9", 1);
	ck_assert_int_eq(rf_config_parse(0, NULL, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.connection_timeout_s, 9);
	ck_assert_int_eq(rf_config_parse(2, flag, &c, err, sizeof(err)), 0);
	ck_assert_int_eq(c.connection_timeout_s, 7);
	unsetenv("RIGFIT_CONNECTION_TIMEOUT");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = {"--connection-timeout", (char *)bad[i]};
		ck_assert_int_eq(rf_config_parse(2, argv, &c, err, sizeof(err)),
				 RF_E_INVALID_VALUE);
		ck_assert_ptr_nonnull(strstr(err, "--connection-timeout"));
	}
	ck_assert_ptr_nonnull(strstr(rf_serve_usage, "RIGFIT_CONNECTION_TIMEOUT"));
}
END_TEST

/* ---- the store ---------------------------------------------------------------------------- */

struct append_arg {
	struct rf_store *st;
	int rc;
	long ms;
};

static void *append_main(void *p)
{
	struct append_arg *a = p;
	long t0 = now_ms();

	a->rc = rf_store_scan_append(a->st, 2, 1, "{\"n\":2}", 7, 0);
	a->ms = now_ms() - t0;
	return NULL;
}

/* A scan waiting for another process's write lock must not hold the connection: the request
 * path (a history read) goes on meanwhile instead of waiting the busy timeout with it. */
START_TEST(a_write_waiting_on_a_lock_does_not_stall_reads)
{
	char *dir = t_mkdtemp(), *path = t_path(dir, "s.db"), err[256];
	struct rf_store *st = NULL;
	struct append_arg arg = {0};
	struct api_scan_row *rows = NULL;
	sqlite3 *other;
	pthread_t th;
	long t0, took;
	int n = 0, wait_ms = t_under_valgrind() ? 3000 : 600;

	ck_assert_int_eq(rf_store_open(path, rf_embed_migrations, &st, err, sizeof(err)), 0);
	ck_assert_int_eq(rf_store_set_busy_timeout(st, wait_ms), 0);
	ck_assert_int_eq(rf_store_scan_append(st, 1, 1, "{\"n\":1}", 7, 0), 0);
	ck_assert_int_eq(sqlite3_open(path, &other), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);

	arg.st = st;
	ck_assert_int_eq(pthread_create(&th, NULL, append_main, &arg), 0);
	usleep(50000);
	t0 = now_ms();
	ck_assert_int_eq(rf_store_scan_list(st, 0, 10, &rows, &n), 0);
	took = now_ms() - t0;
	ck_assert_int_eq(n, 1);
	api_scan_rows_free(rows, n);
	ck_assert_msg(took < wait_ms / 3, "a read waited %ld ms behind a blocked write", took);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(arg.rc, RF_E_STORE_UNAVAILABLE);
	ck_assert_msg(arg.ms >= wait_ms - 20, "the write gave up after %ld ms", arg.ms);

	/* The lock goes away: writes work again and nothing committed was lost. */
	ck_assert_int_eq(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(other);
	ck_assert_int_eq(rf_store_scan_append(st, 3, 1, "{\"n\":3}", 7, 0), 0);
	ck_assert_int_eq(rf_store_scan_list(st, 0, 10, &rows, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(rows[1].hardware_json, "{\"n\":1}");
	api_scan_rows_free(rows, n);
	rf_store_close(st);
	t_rmtree(dir);
	free(dir);
	free(path);
}
END_TEST

/* Another process holds the database's write lock while the daemon scans every second: the
 * scans are still published, every route answers promptly (WAL readers are not blocked),
 * the failed appends are logged, and once the lock goes the history grows again without
 * having lost a row. */
START_TEST(database_locked_at_run_time)
{
	struct t_daemon d;
	const char *extra[] = {"--scan-interval", "1", NULL};
	int64_t before[1000], after[1000];
	int nb, na;
	char *db, *log;
	sqlite3 *other;
	struct t_resp r;
	long until;

	t_daemon_start(&d, extra);
	nb = wait_rows(d.port, 2, before, 1000);
	db = t_path(d.dir, "var/rigfit.db");
	ck_assert_int_eq(sqlite3_open(db, &other), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	nb = history_ids(d.port, before, 1000);

	/* At least 3.5 s of requests, and on until an append has given up on the lock (a host
	 * busy with other work may take longer to get there; 15 s at most). */
	until = now_ms() + (t_under_valgrind() ? 20000 : 3500);
	for (long stop = now_ms() + (t_under_valgrind() ? 60000 : 15000);;) {
		bool failed;
		get_ok_promptly(d.port, "/healthz");
		get_ok_promptly(d.port, "/api/hardware");
		get_ok_promptly(d.port, "/api/hardware/history?limit=5");
		usleep(50000);
		log = t_daemon_log(&d);
		failed = strstr(log, "scan history: could not store the scan (store_unavailable)");
		if ((failed && now_ms() >= until) || now_ms() >= stop) {
			ck_assert_msg(failed, "no failed append in the log: %s", log);
			free(log);
			break;
		}
		free(log);
	}
	ck_assert_int_eq(history_ids(d.port, after, 1000), nb); /* nothing could be added */

	ck_assert_int_eq(sqlite3_exec(other, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(other);
	na = wait_rows(d.port, nb + 1, after, 1000);
	assert_rows_kept(before, nb, after, na);
	ck_assert_int_eq(t_http(d.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	t_daemon_stop(&d);
	free(db);
}
END_TEST

/* Reads the database's page size from its header. */
static size_t page_size(const unsigned char *hdr)
{
	size_t ps = (size_t)hdr[16] << 8 | hdr[17];
	return ps == 1 ? 65536 : ps;
}

/* Commits a change to page 1 only, so that the daemon's connection sees the file changed and
 * drops its page cache (WAL readers keep it while nothing was committed). */
static void touch_header(const char *db)
{
	sqlite3 *other;
	sqlite3_stmt *s;
	char sql[64];
	int v;

	ck_assert_int_eq(sqlite3_open(db, &other), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(other, "PRAGMA user_version", -1, &s, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", v);
	ck_assert_int_eq(sqlite3_exec(other, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(other);
}

/* The database file is corrupted under the running daemon (every page but the header page
 * overwritten): the history answers 503 with the envelope while the other routes serve; once
 * the file is repaired, every committed scan is there again. */
START_TEST(database_corrupted_at_run_time)
{
	struct t_daemon d;
	const char *extra[] = {"--scan-interval", "3600", NULL};
	int64_t before[1000], after[1000];
	int nb, na;
	char *db, *good, *bad;
	size_t len, ps;
	sqlite3 *other;
	struct t_resp r;

	t_daemon_start(&d, extra);
	ck_assert_int_eq(t_http(d.port, "POST", "/api/hardware/rescan", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	nb = wait_rows(d.port, 2, before, 1000);
	db = t_path(d.dir, "var/rigfit.db");
	/* Everything into the main file, so that the file alone holds the rows. */
	ck_assert_int_eq(sqlite3_open(db, &other), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(other, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(other);
	good = t_read_file(db, &len);
	ck_assert_ptr_nonnull(good);
	ps = page_size((const unsigned char *)good);
	ck_assert_uint_gt(len, 2 * ps);
	bad = malloc(len);
	memcpy(bad, good, ps);
	memset(bad + ps, 0x5a, len - ps);
	ck_assert_int_eq(t_write_file(db, bad, len), 0);
	touch_header(db);

	ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware/history", NULL, NULL, 0, &r), 0);
	ck_assert_msg(r.status == 503, "history on a corrupt file: %d %.200s", r.status, r.body);
	ck_assert_str_eq(envelope_code(&r), "store_unavailable");
	t_resp_free(&r);
	get_ok_promptly(d.port, "/healthz");
	get_ok_promptly(d.port, "/api/hardware");
	get_ok_promptly(d.port, "/metrics");

	/* Repaired (as a restore from a backup would): the rows are all there. */
	ck_assert_int_eq(t_write_file(db, good, len), 0);
	touch_header(db);
	na = history_ids(d.port, after, 1000);
	ck_assert_int_eq(na, nb);
	assert_rows_kept(before, nb, after, na);
	t_daemon_stop(&d);
	free(good);
	free(bad);
	free(db);
}
END_TEST

/* The disk fills up under the running daemon (a file size limit put on it from outside): its
 * scans go on and are served, the appends fail without killing it (SIGXFSZ), and once there
 * is room again the history grows with every committed row still in it. */
START_TEST(disk_full_at_run_time)
{
	struct t_daemon d;
	const char *extra[] = {"--scan-interval", "1", NULL};
	int64_t before[1000], after[1000];
	int nb, na;
	char *wal;
	struct stat sb;
	struct rlimit full, old;
	struct t_resp r;
	char first[64];
	cJSON *j;

	t_daemon_start(&d, extra);
	nb = wait_rows(d.port, 2, before, 1000);
	wal = t_path(d.dir, "var/rigfit.db-wal");
	ck_assert_int_eq(stat(wal, &sb), 0);
	/* No file may grow past the journal's current size: the next append has no room. */
	ck_assert_int_eq(prlimit(d.pid, RLIMIT_FSIZE, NULL, &old), 0);
	full = old;
	full.rlim_cur = (rlim_t)sb.st_size; /* the soft limit: it can be raised again */
	ck_assert_int_eq(prlimit(d.pid, RLIMIT_FSIZE, &full, NULL), 0);
	nb = history_ids(d.port, before, 1000);

	ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
	j = cJSON_Parse(r.body);
	snprintf(first, sizeof(first), "%s", cJSON_GetObjectItem(j, "scanned_at")->valuestring);
	cJSON_Delete(j);
	t_resp_free(&r);
	usleep(t_under_valgrind() ? 10000000 : 2500000);
	/* Still alive, still scanning, the history as it was. */
	ck_assert_int_eq(kill(d.pid, 0), 0);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	j = cJSON_Parse(r.body);
	ck_assert_str_ne(cJSON_GetObjectItem(j, "scanned_at")->valuestring, first);
	cJSON_Delete(j);
	t_resp_free(&r);
	ck_assert_int_eq(history_ids(d.port, after, 1000), nb);

	ck_assert_int_eq(prlimit(d.pid, RLIMIT_FSIZE, &old, NULL), 0);
	na = wait_rows(d.port, nb + 1, after, 1000);
	assert_rows_kept(before, nb, after, na);
	t_daemon_stop(&d);
	free(wal);
}
END_TEST

/* ---- scans and signals ---------------------------------------------------------------------- */

/* A machine without /proc or /sys: the scan says what it could not read and invents nothing,
 * and the routes that use the snapshot answer without a 5xx. */
START_TEST(machine_without_proc_serves_unknowns)
{
	struct t_daemon d;
	char *root = t_mkdtemp();
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *extra[] = {"--root", root, "--profiles", profiles, NULL};
	static const char body[] = "{\"model\": \"llama-3.1-8b\"}";
	struct t_resp r;

	t_daemon_start(&d, extra);
	ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "\"gpus\":[]"));
	ck_assert_ptr_nonnull(strstr(r.body, "\"total_bytes\":null"));
	ck_assert_ptr_nonnull(strstr(r.body, "cannot read /proc/meminfo"));
	t_resp_free(&r);
	ck_assert_int_eq(
		t_http(d.port, "POST", "/api/estimate", JSON_HDR, body, sizeof(body) - 1, &r), 0);
	ck_assert_msg(r.status < 500, "estimate without memory: %d %.300s", r.status, r.body);
	t_resp_free(&r);
	get_ok_promptly(d.port, "/healthz");
	get_ok_promptly(d.port, "/metrics");
	t_daemon_stop(&d);
	t_rmtree(root);
	free(root);
	free(profiles);
}
END_TEST

/* A scan slower than the scan interval (1.2 s of nvidia-smi every 1 s): a tick that comes
 * while a scan runs is skipped, so scans never overlap, and requests are not delayed. */
START_TEST(scan_slower_than_the_interval_never_overlaps)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *smi = t_path(dir, "nvidia-smi"), *trace = t_path(dir, "trace");
	char *root = t_path(t_src_dir(), "tests/fixtures/machines/xeon-l5640-2socket");
	char script[512], *text, *line, *save = NULL;
	const char *extra[] = {
		"--root", root, "--nvidia-smi", smi, "--scan-interval", "1", "--probe-timeout-ms",
		"5000",   NULL};
	int starts = 0, running = 0;
	long until;

	snprintf(script, sizeof(script), "#!/bin/sh\necho start >> %s\nsleep 1.2\necho end >> %s\n",
		 trace, trace);
	ck_assert_int_eq(t_write_file(smi, script, strlen(script)), 0);
	ck_assert_int_eq(chmod(smi, 0755), 0);
	t_daemon_start(&d, extra);
	until = now_ms() + (t_under_valgrind() ? 15000 : 4000);
	while (now_ms() < until) {
		get_ok_promptly(d.port, "/healthz");
		get_ok_promptly(d.port, "/api/hardware");
		usleep(100000);
	}
	t_daemon_stop(&d);
	text = t_read_file(trace, NULL);
	ck_assert_ptr_nonnull(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strcmp(line, "start") == 0) {
			ck_assert_msg(running == 0, "two scans ran at once");
			running = 1;
			starts++;
		} else {
			ck_assert_int_eq(running, 1);
			running = 0;
		}
	}
	ck_assert_msg(starts >= 3, "only %d scans in the run", starts);
	free(text);
	t_rmtree(dir);
	free(dir);
	free(smi);
	free(trace);
	free(root);
}
END_TEST

/* Sends estimates until the daemon stops accepting. Exits 0 when every reply it got was
 * complete (200 and a whole JSON body) and there was at least one; 1 for a torn reply. */
static void load_client(int port)
{
	static const char body[] = "{\"model\": \"llama-3.1-8b\", \"n_ctx\": 4096}";
	long until = now_ms() + (t_under_valgrind() ? 30000 : 4000);
	int ok = 0;

	while (now_ms() < until) {
		struct t_resp r;
		cJSON *j;
		if (t_http(port, "POST", "/api/estimate", JSON_HDR, body, sizeof(body) - 1, &r) !=
		    0)
			break; /* refused or reset before it was read: the daemon stopped accepting */
		j = cJSON_ParseWithLength(r.body, r.body_len);
		if (r.status != 200 || !j)
			_exit(1);
		cJSON_Delete(j);
		t_resp_free(&r);
		ok++;
	}
	_exit(ok > 0 ? 0 : 2);
}

/* SIGTERM while eight clients keep the daemon busy: every request it took is answered in full,
 * none is cut off (no "aborted" in its log), and it exits 0 within 2 s. */
START_TEST(sigterm_under_load_finishes_what_it_took)
{
	struct t_daemon d;
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *extra[] = {"--profiles", profiles, NULL};
	pid_t kids[8];
	long ms = 0;
	int status;
	char *log;

	t_daemon_start(&d, extra);
	for (int i = 0; i < 8; i++) {
		kids[i] = fork();
		ck_assert_int_ge(kids[i], 0);
		if (kids[i] == 0)
			load_client(d.port);
	}
	usleep(t_under_valgrind() ? 3000000 : 400000);
	status = t_daemon_signal_wait(&d, SIGTERM, t_under_valgrind() ? 20000 : 2000, &ms);
	ck_assert_msg(status == 0, "exit status %d after %ld ms", status, ms);
	for (int i = 0; i < 8; i++) {
		int st;
		ck_assert_int_eq(waitpid(kids[i], &st, 0), kids[i]);
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "client %d: status %d", i,
			      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	log = t_daemon_log(&d);
	ck_assert_msg(strstr(log, "(aborted)") == NULL, "a request was cut off: %s", log);
	free(log);
	t_rmtree(d.dir);
	free(d.dir);
	free(d.log);
	free(profiles);
}
END_TEST

Suite *faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *conn = tcase_create("connections");
	TCase *store = tcase_create("store");
	TCase *life = tcase_create("scans_and_signals");
	int timeout = t_under_valgrind() ? 600 : 30;

	tcase_set_timeout(conn, timeout);
	tcase_add_test(conn, stalled_connections_neither_delay_others_nor_live_forever);
	tcase_add_test(conn, one_address_may_hold_384_connections);
	tcase_add_test(conn, descriptor_limit_is_raised_for_the_connection_limit);
	tcase_add_test(conn, connection_timeout_is_a_flag_and_an_environment_variable);
	suite_add_tcase(s, conn);
	tcase_set_timeout(store, timeout);
	tcase_add_test(store, a_write_waiting_on_a_lock_does_not_stall_reads);
	tcase_add_test(store, database_locked_at_run_time);
	tcase_add_test(store, database_corrupted_at_run_time);
	tcase_add_test(store, disk_full_at_run_time);
	suite_add_tcase(s, store);
	tcase_set_timeout(life, timeout);
	tcase_add_test(life, machine_without_proc_serves_unknowns);
	tcase_add_test(life, scan_slower_than_the_interval_never_overlaps);
	tcase_add_test(life, sigterm_under_load_finishes_what_it_took);
	suite_add_tcase(s, life);
	return s;
}
