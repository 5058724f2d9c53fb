/*
 * The Hugging Face Hub lookup (--hub) against a fake Hub that the tests start on a loopback
 * port: a small HTTP/1.1 server on a thread serving a Qwen2.5-0.5B checkpoint written by the
 * tests (real tensor names and shapes, data sparse) under /{id}/resolve/main/{file}, with
 * Range requests answered 206 as the Hub's CDN does. It can also be slow (never answers), fail
 * (500), lie (a header length past the end of the file, a config.json that is not JSON),
 * redirect (to a /cdn/ path, or in a loop), ignore Range (200 with the whole file), or be
 * gone (a port nothing listens on). What is checked: the parameters counted from the headers
 * are the published 494,032,768; each failure is a clear error naming model.id with the
 * status openapi.yaml documents; a model looked up once resolves from the store with the
 * Hub gone; a lookup (REST, MCP, ModelForge's custom model) waits off the loop.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/model_folder.h"
#include "core/err.h"
#include "server/embedded.h"
#include "server/models/hub.h"
#include "server/store/store.h"
#include "server/store/store_hub.h"
#include "tests/api/profiles_fixture.h"
#include "tests/server/harness.h"
#include "tests/server/hf_fixture.h"
#include "tests/test.h"

/* Qwen2.5-0.5B under an id that the catalog does not know. */
#define QWEN "rigfit-test/Qwen2.5-0.5B-copy"
#define HW "\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\"}]}"

enum fake_mode {
	FAKE_UP,
	FAKE_SLOW,
	FAKE_FAIL,
	FAKE_LIE_LEN,
	FAKE_BAD_JSON,
	FAKE_REDIRECT,
	FAKE_REDIRECT_LOOP,
	FAKE_NO_RANGE,
	FAKE_HUGE_CONFIG,
	FAKE_LIE_TOTAL,
};

struct fake_hub {
	int fd, port;
	pthread_t th;
	atomic_int stop, mode, requests;
	atomic_int slow_ms;     /* how long FAKE_SLOW holds a request; 0: 3 s */
	atomic_llong lie_total; /* the Content-Range total FAKE_LIE_TOTAL gives shards */
	char root[1024];
	char auth[256]; /* the last Authorization header received */
};

static struct fake_hub fake;
static struct device_table devices;
static struct model_catalog *models;
static char *tmp;
static struct rf_store *store;

static void send_all(int c, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(c, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void reply_status(int c, int status, const char *extra)
{
	char head[512];
	int n = snprintf(head, sizeof(head),
			 "HTTP/1.1 %d X\r\nContent-Length: 0\r\nConnection: close\r\n%s\r\n",
			 status, extra ? extra : "");
	send_all(c, head, (size_t)n);
}

/* Sends bytes [from, to] of path (206 when ranged, else 200 and the whole file). */
static void reply_file(int c, const char *path, long long from, long long to, int ranged)
{
	char head[512], buf[65536];
	struct stat st;
	int fd = open(path, O_RDONLY), n;
	long long size;

	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		reply_status(c, 404, NULL);
		return;
	}
	size = st.st_size;
	if (!ranged) {
		from = 0;
		to = size - 1;
	}
	if (to >= size)
		to = size - 1;
	if (ranged)
		n = snprintf(
			head, sizeof(head),
			"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes %lld-%lld/%lld\r\n"
			"Content-Length: %lld\r\nConnection: close\r\n\r\n",
			from, to,
			fake.mode == FAKE_LIE_TOTAL && strstr(path, ".safetensors") ?
				(long long)fake.lie_total :
				size,
			to - from + 1);
	else
		n = snprintf(head, sizeof(head),
			     "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\nConnection: close\r\n\r\n",
			     size);
	send_all(c, head, (size_t)n);
	for (long long off = from; off <= to;) {
		size_t want = (size_t)(to - off + 1) < sizeof(buf) ? (size_t)(to - off + 1) :
								     sizeof(buf);
		ssize_t r = pread(fd, buf, want, off);
		if (r <= 0)
			break;
		if (fake.mode == FAKE_LIE_LEN && off == 0 && r >= 8 && strlen(path) > 12 &&
		    strcmp(path + strlen(path) - 12, ".safetensors") == 0) {
			unsigned long long lie = (unsigned long long)size + 100;
			for (int i = 0; i < 8; i++)
				buf[i] = (char)(lie >> (8 * i));
		}
		if (send(c, buf, (size_t)r, MSG_NOSIGNAL) != r)
			break;
		off += r;
	}
	close(fd);
}

static void serve_one(int c)
{
	char req[8192], path[1024], file[2048], loc[1200];
	const char *h, *p;
	long long from = 0, to = -1;
	size_t len = 0;
	int ranged = 0;

	struct timeval tv = {2, 0};
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (len < sizeof(req) - 1) {
		ssize_t r = recv(c, req + len, sizeof(req) - 1 - len, 0);
		if (r <= 0)
			return;
		len += (size_t)r;
		req[len] = '\0';
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	fake.requests++;
	if (sscanf(req, "GET %1023s HTTP/1.1", path) != 1) {
		reply_status(c, 400, NULL);
		return;
	}
	h = strstr(req, "\r\nAuthorization: ");
	if (h) {
		h += 17;
		snprintf(fake.auth, sizeof(fake.auth), "%.*s", (int)strcspn(h, "\r\n"), h);
	}
	h = strstr(req, "\r\nRange: bytes=");
	if (h && sscanf(h + 15, "%lld-%lld", &from, &to) == 2 && fake.mode != FAKE_NO_RANGE)
		ranged = 1;
	switch (fake.mode) {
	case FAKE_SLOW:
		/* Never answers within the client's timeout; gives up when the test ends. */
		for (int i = 0; i < (fake.slow_ms > 0 ? fake.slow_ms : 3000) / 20 && !fake.stop;
		     i++)
			usleep(20000);
		return;
	case FAKE_FAIL:
		reply_status(c, 500, NULL);
		return;
	case FAKE_REDIRECT_LOOP:
		snprintf(loc, sizeof(loc), "Location: /loop%d\r\n", fake.requests);
		reply_status(c, 302, loc);
		return;
	case FAKE_REDIRECT:
		if (strncmp(path, "/cdn/", 5) != 0) {
			snprintf(loc, sizeof(loc), "Location: http://127.0.0.1:%d/cdn%s\r\n",
				 fake.port, path);
			reply_status(c, 302, loc);
			return;
		}
		memmove(path, path + 4, strlen(path + 4) + 1);
		break;
	default:
		break;
	}
	/* /{org}/{name}/resolve/main/{file} */
	p = strstr(path, "/resolve/main/");
	if (!p || strstr(path, "..")) {
		reply_status(c, 404, NULL);
		return;
	}
	snprintf(file, sizeof(file), "%s%.*s/%s", fake.root, (int)(p - path), path, p + 14);
	if (fake.mode == FAKE_BAD_JSON && strstr(file, "config.json")) {
		static const char bad[] = "{\"hidden_size\": 896, \"num_hidden";
		char head[256];
		int n = snprintf(
			head, sizeof(head),
			"HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			sizeof(bad) - 1);
		send_all(c, head, (size_t)n);
		send_all(c, bad, sizeof(bad) - 1);
		return;
	}
	if (fake.mode == FAKE_HUGE_CONFIG && strstr(file, "config.json")) {
		/* 2 MiB of JSON whitespace before the object: past the 1 MiB cap. */
		static char pad[65536];
		char head[256];
		int n = snprintf(
			head, sizeof(head),
			"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n",
			32 * 65536 + 2);
		memset(pad, ' ', sizeof(pad));
		send_all(c, head, (size_t)n);
		for (int i = 0; i < 32; i++)
			send_all(c, pad, sizeof(pad));
		send_all(c, "{}", 2);
		return;
	}
	reply_file(c, file, from, to, ranged);
}

static void *fake_main(void *arg)
{
	(void)arg;
	while (!fake.stop) {
		struct pollfd pfd = {fake.fd, POLLIN, 0};
		int c;
		if (poll(&pfd, 1, 20) <= 0)
			continue;
		c = accept(fake.fd, NULL, NULL);
		if (c < 0)
			continue;
		serve_one(c);
		close(c);
	}
	return NULL;
}

/* Binds a loopback listening socket on an ephemeral port; writes the port. */
static int listen_loopback(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t al = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	ck_assert_int_ge(fd, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(fd, 16), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	*port = ntohs(a.sin_port);
	return fd;
}

static void fake_start(enum fake_mode mode)
{
	fake.fd = listen_loopback(&fake.port);
	fake.stop = 0;
	fake.mode = (int)mode;
	fake.requests = 0;
	fake.auth[0] = '\0';
	ck_assert_int_eq(pthread_create(&fake.th, NULL, fake_main, NULL), 0);
}

static void fake_stop(void)
{
	if (fake.fd < 0)
		return;
	fake.stop = 1;
	pthread_join(fake.th, NULL);
	close(fake.fd);
	fake.fd = -1;
}

/* A port that nothing listens on: bound, then closed. */
static int dead_port(void)
{
	int port, fd = listen_loopback(&port);

	close(fd);
	return port;
}

static void setup(void)
{
	char err[256], *path;

	t_profiles_load(&devices, &models, NULL);
	tmp = t_mkdtemp();
	memset(&fake, 0, sizeof(fake));
	fake.fd = -1;
	snprintf(fake.root, sizeof(fake.root), "%s/hub", tmp);
	mkdir(fake.root, 0755);
	{
		char dir[1200];
		snprintf(dir, sizeof(dir), "%s/rigfit-test", fake.root);
		mkdir(dir, 0755);
		snprintf(dir, sizeof(dir), "%s/" QWEN, fake.root);
		t_hf_write_qwen05(dir);
	}
	path = t_path(tmp, "rigfit.db");
	ck_assert_int_eq(rf_store_open(path, rf_embed_migrations, &store, err, sizeof(err)), 0);
	free(path);
}

static void teardown(void)
{
	fake_stop();
	rf_store_close(store);
	t_rmtree(tmp);
	free(tmp);
	t_profiles_free(&devices, &models, NULL);
}

/* A client of the fake Hub (port: the fake's, or another) over the test's store. */
static struct rf_hub *hub_at(int port, const char *token, int timeout_ms, struct rf_store *st)
{
	char url[64], err[256];
	struct rf_hub_opts o = {url, token, timeout_ms};
	struct rf_hub *h = NULL;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", port);
	ck_assert_msg(rf_hub_new(&o, st, &h, err, sizeof(err)) == 0, "%s", err);
	return h;
}

/* POST /api/estimate with h as the env's Hub (NULL: none); now_ms is the env's clock. */
static int estimate(struct rf_hub *h, int64_t now_ms, const char *id, cJSON **out)
{
	char body[512];
	struct api_env env = {.version = "test",
			      .now_ms = now_ms,
			      .cat.devices = &devices,
			      .cat.models = models,
			      .io.read_hub = h ? rf_hub_read : NULL,
			      .io.read_hub_ctx = h};

	snprintf(body, sizeof(body), "{\"model\":{\"id\":\"%s\"},%s}", id, HW);
	return t_route_post(api_estimate, &env, "/api/estimate", body, out);
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The parameters api_model_folder counts in d. */
static int64_t params_of(const struct api_model_dir *d)
{
	struct api_reply r = {0};
	struct api_checkpoint ck;
	struct model_arch *arch = malloc(sizeof(*arch));
	int rc;

	ck_assert_ptr_nonnull(arch);
	rc = api_model_folder(d, "model.id", arch, &ck, &r);
	free(arch);
	api_reply_reset(&r);
	ck_assert_int_eq(rc, 0);
	return ck.params;
}

/* Asserts that an estimate of id through h is refused with status and model.id named, and
 * that the message holds words; returns nothing. */
static void assert_refused(struct rf_hub *h, const char *id, int status, const char *words)
{
	cJSON *out = NULL;
	const cJSON *e;
	int got = estimate(h, now_ms(), id, &out);

	ck_assert_msg(got == status, "%s: status %d, want %d", id, got, status);
	e = cJSON_GetObjectItemCaseSensitive(out, "error");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "field")->valuestring, "model.id");
	ck_assert_msg(strstr(cJSON_GetObjectItemCaseSensitive(e, "message")->valuestring, words),
		      "message '%s' lacks '%s'",
		      cJSON_GetObjectItemCaseSensitive(e, "message")->valuestring, words);
	cJSON_Delete(out);
}

static const char *assumption_with(const cJSON *out, const char *words)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(
				      out, "assumptions")) if (cJSON_IsString(a) &&
							       strstr(a->valuestring,
								      words)) return a->valuestring;
	return NULL;
}

/* Rows of table in the test's database, read by a connection of its own. */
static int rows_in(const char *table)
{
	char *path = t_path(tmp, "rigfit.db"), sql[128];
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int n = -1;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	free(path);
	return n;
}

START_TEST(an_id_on_the_hub_resolves_with_the_published_parameter_count)
{
	struct rf_hub *h;
	struct api_model_dir d = {0};
	char msg[256] = "";
	cJSON *out = NULL;
	const cJSON *model;

	fake_start(FAKE_UP);
	h = hub_at(fake.port, "s3cret-token", 5000, store);
	ck_assert_msg(rf_hub_fetch(h, QWEN, &d, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_int_eq(d.n_shards, 2);
	ck_assert_str_eq(d.where, "hub");
	ck_assert_int_eq(params_of(&d), T_QWEN05_PARAMS);
	/* Two sparse BF16 shards: the files' sizes from Content-Range, headers included. */
	ck_assert_uint_gt(d.file_bytes, (uint64_t)T_QWEN05_PARAMS * 2);
	ck_assert_uint_lt(d.file_bytes, (uint64_t)T_QWEN05_PARAMS * 2 + 200000);
	api_model_dir_free(&d);
	/* config.json, the index, then two range requests per shard: never the data. */
	ck_assert_int_eq(fake.requests, 6);
	ck_assert_str_eq(fake.auth, "Bearer s3cret-token");

	ck_assert_int_eq(estimate(h, now_ms(), QWEN, &out), 200);
	model = cJSON_GetObjectItemCaseSensitive(out, "model");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(model, "source")->valuestring, "hub");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(model, "id")->valuestring, QWEN);
	ck_assert_ptr_nonnull(
		assumption_with(out, "Hugging Face Hub (revision main, looked up now)"));
	ck_assert_ptr_nonnull(assumption_with(out, "494032768 parameters"));
	cJSON_Delete(out);
	rf_hub_free(h);
}
END_TEST

START_TEST(a_model_looked_up_once_resolves_offline_from_the_store)
{
	struct rf_hub *h;
	struct api_model_dir d = {0};
	char msg[256] = "";
	cJSON *out = NULL;
	int64_t t0 = now_ms();

	fake_start(FAKE_UP);
	h = hub_at(fake.port, NULL, 5000, store);
	ck_assert_msg(rf_hub_read(h, 2, QWEN, &d, msg, sizeof(msg)) == 0, "%s", msg);
	api_model_dir_free(&d);
	ck_assert_int_eq(fake.requests, 6);
	fake_stop();
	ck_assert_int_eq(rows_in("hub_models"), 1);
	ck_assert_int_eq(rows_in("hub_model_shards"), 2);

	/* The Hub is gone: the stored answer, as fetched. */
	ck_assert_msg(rf_hub_read(h, 2, QWEN, &d, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_int_eq(d.n_shards, 2);
	ck_assert_int_ge(d.fetched_at_ms, t0 - 1000);
	ck_assert_int_eq(params_of(&d), T_QWEN05_PARAMS);
	api_model_dir_free(&d);
	/* Two hours later by the request's clock, the answer says how old the copy is. */
	ck_assert_int_eq(estimate(h, now_ms() + 2 * 3600 * 1000 + 5 * 60 * 1000, QWEN, &out), 200);
	ck_assert_ptr_nonnull(assumption_with(out, "as stored 2 h 5 min ago"));
	cJSON_Delete(out);
	rf_hub_free(h);

	/* The store is keyed by the Hub's URL: another Hub does not see this one's copy. */
	h = hub_at(dead_port(), NULL, 2000, store);
	ck_assert_int_eq(rf_hub_read(h, 2, QWEN, &d, msg, sizeof(msg)), RF_E_UNAVAILABLE);
	rf_hub_free(h);
}
END_TEST

/* Starts the fake Hub in mode, asks it for QWEN with a timeout of timeout_ms and asserts the
 * refusal (see assert_refused); returns how many requests the fake received. */
static int fake_refuses(enum fake_mode mode, int timeout_ms, int status, const char *words)
{
	struct rf_hub *h;
	int n;

	fake_start(mode);
	h = hub_at(fake.port, NULL, timeout_ms, store);
	assert_refused(h, QWEN, status, words);
	rf_hub_free(h);
	fake_stop();
	n = fake.requests;
	return n;
}

START_TEST(a_hub_that_is_down_slow_or_failing_is_a_clear_error)
{
	struct rf_hub *h;

	/* Down: nothing listens. */
	h = hub_at(dead_port(), NULL, 2000, store);
	assert_refused(h, QWEN, 503, "cannot reach the Hugging Face Hub");
	rf_hub_free(h);
	/* Slow: never answers; the lookup gives up at its timeout. */
	fake_refuses(FAKE_SLOW, 300, 504, "did not answer within 300 ms");
	/* Failing: 500. */
	fake_refuses(FAKE_FAIL, 2000, 503, "answered HTTP 500");
	/* Redirected in a loop: at most 3 redirects are followed. */
	ck_assert_int_eq(fake_refuses(FAKE_REDIRECT_LOOP, 2000, 503,
				      "cannot reach the Hugging Face Hub"),
			 4);
	ck_assert_int_eq(rows_in("hub_models"), 0);
}
END_TEST

START_TEST(a_lying_hub_is_refused_and_not_stored)
{
	fake_refuses(FAKE_LIE_LEN, 2000, 422, "is not possible for a");
	fake_refuses(FAKE_BAD_JSON, 2000, 422, "config.json for '" QWEN "' is not a JSON object");
	fake_refuses(FAKE_HUGE_CONFIG, 2000, 422, "config.json on the Hugging Face Hub is larger");
	/* Content-Range totals of 9.2e18 bytes (past what is believed at all) and of 2^53 - 1
	 * (believable, but not what the headers account for: a few MB). */
	fake.lie_total = LLONG_MAX;
	fake_refuses(FAKE_LIE_TOTAL, 2000, 422, "without a file size to believe");
	fake.lie_total = (1LL << 53) - 1;
	fake_refuses(FAKE_LIE_TOTAL, 2000, 422,
		     "the Hugging Face Hub says the safetensors files hold");
	/* Nothing was kept for the offline path to serve. */
	ck_assert_int_eq(rows_in("hub_models"), 0);
	ck_assert_int_eq(rows_in("hub_model_shards"), 0);
}
END_TEST

/* An answer stored with a lying total (as a build that trusted Content-Range kept it) is not
 * served offline either: the stored copy is checked as a fresh one is. */
START_TEST(a_stored_answer_with_a_lying_total_is_not_served)
{
	struct rf_hub *h;
	struct api_model_dir d = {0};
	char msg[256] = "", url[64];

	fake_start(FAKE_UP);
	h = hub_at(fake.port, NULL, 5000, store);
	ck_assert_msg(rf_hub_fetch(h, QWEN, &d, msg, sizeof(msg)) == 0, "%s", msg);
	fake_stop();
	d.file_bytes = (uint64_t)LLONG_MAX;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fake.port);
	ck_assert_int_eq(rf_store_hub_put(store, url, QWEN, "main", &d), 0);
	api_model_dir_free(&d);
	assert_refused(h, QWEN, 422, "the Hugging Face Hub says the safetensors files hold");
	rf_hub_free(h);
}
END_TEST

START_TEST(an_unknown_id_and_odd_hubs)
{
	struct rf_hub *h;
	struct api_model_dir d = {0};
	char msg[256] = "", err[256];
	struct rf_hub_opts bad = {"ftp://example.org", NULL, 0};

	fake_start(FAKE_UP);
	h = hub_at(fake.port, NULL, 2000, store);
	assert_refused(h, "nobody/no-such-model", 422, "has no model 'nobody/no-such-model'");
	/* Not an id: never sent. */
	ck_assert_int_eq(rf_hub_read(h, 2, "a/../b", &d, msg, sizeof(msg)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_hub_read(h, 2, "a/b/c", &d, msg, sizeof(msg)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(fake.requests, 1);
	rf_hub_free(h);
	fake_stop();

	/* A CDN redirect is followed; a Hub that ignores Range is cut off after the bytes asked. */
	for (int m = 0; m < 2; m++) {
		fake_start(m == 0 ? FAKE_REDIRECT : FAKE_NO_RANGE);
		h = hub_at(fake.port, NULL, 5000, NULL);
		ck_assert_msg(rf_hub_fetch(h, QWEN, &d, msg, sizeof(msg)) == 0, "mode %d: %s", m,
			      msg);
		ck_assert_int_eq(params_of(&d), T_QWEN05_PARAMS);
		api_model_dir_free(&d);
		rf_hub_free(h);
		fake_stop();
	}

	ck_assert_int_eq(rf_hub_new(&bad, NULL, &h, err, sizeof(err)), RF_E_INVALID_VALUE);
	ck_assert_ptr_null(h);
	/* Without --hub the id is the catalog's unknown model, as before. */
	{
		cJSON *out = NULL;
		ck_assert_int_ne(estimate(NULL, now_ms(), QWEN, &out), 200);
		cJSON_Delete(out);
	}
}
END_TEST

/* The daemon with --hub: the flags, the token file, the lookup, then the stored copy with the
 * Hub gone. A URL that is not http(s) stops it at start. */
START_TEST(the_daemon_looks_ids_up_with_hub_and_keeps_them)
{
	struct t_daemon dmn;
	struct t_resp r;
	char url[64], *tok = t_path(tmp, "hub-token"), *log;
	/* The daemon's profiles may not name the GPU: its memory is given. */
	const char body[] = "{\"model\":\"" QWEN "\",\"hardware\":{\"gpus\":[{\"name\":"
			    "\"RTX 4090\",\"memory_total_bytes\":25757220864}]}}";
	const char *extra[] = {"--hub", url, "--hub-token-file", tok, "--hub-timeout-ms",
			       "5000",  NULL};
	const char *bad[] = {"--hub", "file:///etc", NULL};

	ck_assert_int_eq(t_write_file(tok, "hf_test-token\n", 14), 0);
	fake_start(FAKE_UP);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fake.port);
	t_daemon_start(&dmn, extra);
	/* First from the Hub (with the token), then, the Hub gone, from the daemon's store. */
	for (int pass = 0; pass < 2; pass++) {
		ck_assert_int_eq(t_http(dmn.port, "POST", "/api/estimate",
					"Content-Type: application/json\r\n", body, strlen(body),
					&r),
				 0);
		ck_assert_msg(r.status == 200, "pass %d: %d %s", pass, r.status, r.body);
		ck_assert_ptr_nonnull(strstr(r.body, "\"source\":\"hub\""));
		ck_assert_ptr_nonnull(strstr(r.body, "494032768 parameters"));
		t_resp_free(&r);
		ck_assert_str_eq(fake.auth, "Bearer hf_test-token");
		fake_stop();
	}
	/* The token went to an http:// Hub: said at start, once, without the token itself. */
	log = t_daemon_log(&dmn);
	ck_assert_ptr_nonnull(strstr(log, "is plain http://: the Hub token"));
	ck_assert_ptr_null(strstr(log, "hf_test-token"));
	free(log);
	t_daemon_stop(&dmn);
	ck_assert_int_eq(t_daemon_try_start(&dmn, bad, 10000), 1);
	log = t_daemon_log(&dmn);
	ck_assert_ptr_nonnull(strstr(log, "--hub: expected an http:// or https:// URL"));
	free(log);
	t_rmtree(dmn.dir);
	free(dmn.dir);
	free(dmn.log);
	free(tok);
}
END_TEST

/* Reads what the daemon sends on fd until it closes the connection (at most 30 s). Returns a
 * malloc'd NUL-terminated copy. */
static char *read_until_close(int fd)
{
	size_t cap = 65536, len = 0;
	char *buf = malloc(cap + 1);

	ck_assert_ptr_nonnull(buf);
	while (len < cap) {
		struct pollfd pfd = {fd, POLLIN, 0};
		ssize_t n;
		if (poll(&pfd, 1, 30000) <= 0)
			break;
		n = recv(fd, buf + len, cap - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

/* A lookup that waits on a slow Hub runs off the daemon's loop: while it waits, GET
 * /api/hardware on another connection is answered, and only then does the lookup end, at its
 * timeout (504 naming model.id). Were the lookup on the loop, the hardware request would wait
 * for that timeout and the estimate would be answered first. */
static long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

/* While a lookup waits on a stalling Hub, GETs path on port nine times: every one is
 * answered with 200 within 1 s (a liveness bound that holds on a loaded host under the
 * sanitizers), and their median within 50 ms (the bound for another route's delay;
 * valgrind: 10 s and 500 ms). */
static void probe_while_stalled(int port, const char *path)
{
	enum {
		PROBES = 9
	};
	long took[PROBES], t0;
	long limit = t_under_valgrind() ? 10000 : 1000, typical = t_under_valgrind() ? 500 : 50;
	struct t_resp r;

	for (int i = 0; i < PROBES; i++) {
		t0 = ms_now();
		ck_assert_int_eq(t_http(port, "GET", path, NULL, NULL, 0, &r), 0);
		took[i] = ms_now() - t0;
		ck_assert_int_eq(r.status, 200);
		t_resp_free(&r);
		ck_assert_msg(took[i] < limit, "GET %s took %ld ms", path, took[i]);
	}
	qsort(took, PROBES, sizeof(took[0]), cmp_long);
	ck_assert_msg(took[PROBES / 2] < typical, "GET %s took %ld ms (median)", path,
		      took[PROBES / 2]);
}

START_TEST(a_slow_hub_holds_up_no_other_request)
{
	struct t_daemon dmn;
	struct pollfd pfd;
	char url[64], req[1024], *answer;
	const char body[] = "{\"model\":\"" QWEN "\",\"hardware\":{\"gpus\":[{\"name\":"
			    "\"RTX 4090\",\"memory_total_bytes\":25757220864}]}}";
	/* Long enough for the hardware request to be answered first, under valgrind too. */
	const char *timeout = t_under_valgrind() ? "15000" : "3000";
	const char *extra[] = {"--hub", url, "--hub-timeout-ms", timeout, NULL};
	char within[64];
	int fd, n;

	fake_start(FAKE_SLOW);
	fake.slow_ms = 30000;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fake.port);
	t_daemon_start(&dmn, extra);
	fd = t_connect(dmn.port);
	n = snprintf(req, sizeof(req),
		     "POST /api/estimate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
		     "application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
		     strlen(body), body);
	send_all(fd, req, (size_t)n);
	/* The lookup has reached the Hub: the estimate now waits on it. */
	for (int i = 0; i < 2000 && fake.requests == 0; i++)
		usleep(5000);
	ck_assert_int_ge(fake.requests, 1);
	probe_while_stalled(dmn.port, "/api/hardware");
	probe_while_stalled(dmn.port, "/healthz");
	pfd = (struct pollfd){fd, POLLIN, 0};
	ck_assert_msg(poll(&pfd, 1, 0) == 0, "the estimate was answered before the hardware");
	answer = read_until_close(fd);
	ck_assert_msg(strncmp(answer, "HTTP/1.1 504 ", 13) == 0, "%s", answer);
	ck_assert_ptr_nonnull(strstr(answer, "\"field\":\"model.id\""));
	snprintf(within, sizeof(within), "did not answer within %s ms", timeout);
	ck_assert_ptr_nonnull(strstr(answer, within));
	free(answer);
	close(fd);
	fake_stop();
	/* No token: nothing to warn about. */
	answer = t_daemon_log(&dmn);
	ck_assert_ptr_null(strstr(answer, "plain http://"));
	free(answer);
	t_daemon_stop(&dmn);
}
END_TEST

/* Sends POST path with a JSON body and extra headers (each ending in CRLF) on a new
 * connection, without waiting for the answer. Returns the socket. */
static int post_nowait(int port, const char *path, const char *headers, const char *body)
{
	char req[4096];
	int fd = t_connect(port);
	int n = snprintf(req, sizeof(req),
			 "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
			 "%sContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
			 path, headers ? headers : "", strlen(body), body);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_lt(n, (int)sizeof(req));
	send_all(fd, req, (size_t)n);
	return fd;
}

/* An estimate body for id on a 24 GB RTX 4090 given in full. */
static void estimate_body(char *buf, size_t len, const char *id)
{
	snprintf(buf, len,
		 "{\"model\":\"%s\",\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\","
		 "\"memory_total_bytes\":25757220864}]}}",
		 id);
}

/* Waits up to 10 s for the fake Hub to have been asked at least n times. */
static void wait_hub_requests(int n)
{
	for (int i = 0; i < 2000 && fake.requests < n; i++)
		usleep(5000);
	ck_assert_int_ge(fake.requests, n);
}

/* A tools/call of MCP whose model only the Hub knows runs off the loop as REST's does: while
 * it waits on a stalling Hub, GET /api/hardware is answered (median within 50 ms), and SIGTERM ends the daemon
 * within 2 s rather than at the lookup's timeout. */
START_TEST(an_mcp_lookup_waits_off_the_loop_and_sigterm_is_prompt)
{
	static const char init[] =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
		"\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":"
		"\"t\",\"version\":\"1\"}}}";
	struct t_daemon dmn;
	struct t_resp r;
	struct pollfd pfd;
	char url[64], headers[256], args[512], call[1024], *sid;
	const char *extra[] = {"--hub", url, "--hub-timeout-ms", "20000", NULL};
	int fd, status;
	long ms;

	fake_start(FAKE_SLOW);
	fake.slow_ms = 30000;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fake.port);
	t_daemon_start(&dmn, extra);
	ck_assert_int_eq(t_http(dmn.port, "POST", "/mcp", "Content-Type: application/json\r\n",
				init, strlen(init), &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	sid = t_resp_header(&r, "Mcp-Session-Id");
	ck_assert_ptr_nonnull(sid);
	t_resp_free(&r);
	snprintf(headers, sizeof(headers),
		 "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n", sid);
	estimate_body(args, sizeof(args), QWEN);
	snprintf(call, sizeof(call),
		 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"estimate\",\"arguments\":%s}}",
		 args);
	fd = post_nowait(dmn.port, "/mcp", headers, call);
	wait_hub_requests(1);
	probe_while_stalled(dmn.port, "/api/hardware");
	pfd = (struct pollfd){fd, POLLIN, 0};
	ck_assert_msg(poll(&pfd, 1, 0) == 0, "the tool call was answered before the hardware");
	status = t_daemon_signal_wait(&dmn, SIGTERM, t_under_valgrind() ? 20000 : 2000, &ms);
	ck_assert_msg(status == 0, "exit status %d after %ld ms", status, ms);
	close(fd);
	free(sid);
	fake_stop();
	t_daemon_stop(&dmn);
}
END_TEST

/* POSTs body to path on the daemon at port and returns the answer's status, its JSON in *j
 * (free with cJSON_Delete). */
static int post_json(int port, const char *path, const char *body, cJSON **j)
{
	struct t_resp r;
	int status;

	ck_assert_int_eq(t_http(port, "POST", path, "Content-Type: application/json\r\n", body,
				strlen(body), &r),
			 0);
	status = r.status;
	*j = cJSON_ParseWithLength(r.body, r.body_len);
	ck_assert_msg(*j != NULL, "%s: not JSON: %s", path, r.body);
	t_resp_free(&r);
	return status;
}

/* GET /api/finetune/session's selected_model (NULL: none), copied, and whether it is custom. */
static char *session_model(int port, bool *custom)
{
	struct t_resp r;
	cJSON *j;
	const cJSON *m;
	char *id;

	ck_assert_int_eq(t_http(port, "GET", "/api/finetune/session", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	j = cJSON_ParseWithLength(r.body, r.body_len);
	ck_assert_ptr_nonnull(j);
	m = cJSON_GetObjectItemCaseSensitive(j, "selected_model");
	id = cJSON_IsString(m) ? strdup(m->valuestring) : NULL;
	*custom = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "is_custom_model"));
	cJSON_Delete(j);
	t_resp_free(&r);
	return id;
}

/* ModelForge's "Use Custom Model" with a model only the Hub knows runs off the loop as REST's
 * and MCP's lookups do: while set_custom_model waits on a stalling Hub, /healthz is answered
 * every time (in under 50 ms as a rule), the session still shows no choice, and SIGTERM ends
 * the daemon within 2 s rather than at the lookup's timeout. */
START_TEST(a_modelforge_lookup_waits_off_the_loop_and_sigterm_is_prompt)
{
	struct t_daemon dmn;
	struct pollfd pfd;
	char url[64], *chosen;
	const char *extra[] = {"--hub", url, "--hub-timeout-ms", "20000", NULL};
	int fd, status;
	long ms;
	bool custom;

	fake_start(FAKE_SLOW);
	fake.slow_ms = 30000;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fake.port);
	t_daemon_start(&dmn, extra);
	fd = post_nowait(dmn.port, "/api/finetune/set_custom_model", NULL,
			 "{\"repo_name\":\"" QWEN "\"}");
	wait_hub_requests(1);
	probe_while_stalled(dmn.port, "/healthz");
	probe_while_stalled(dmn.port, "/api/hardware");
	/* The choice is made when the lookup ends, not before. */
	chosen = session_model(dmn.port, &custom);
	ck_assert_ptr_null(chosen);
	pfd = (struct pollfd){fd, POLLIN, 0};
	ck_assert_msg(poll(&pfd, 1, 0) == 0, "set_custom_model was answered before the probes");
	status = t_daemon_signal_wait(&dmn, SIGTERM, t_under_valgrind() ? 20000 : 2000, &ms);
	ck_assert_msg(status == 0, "exit status %d after %ld ms", status, ms);
	close(fd);
	fake_stop();
	t_daemon_stop(&dmn);
}
END_TEST

/* A custom model looked up off the loop becomes the session's choice when its answer comes
 * back; one the Hub does not have is refused naming repo_name and leaves the choice as it
 * was. */
START_TEST(a_custom_model_looked_up_off_the_loop_is_chosen)
{
	struct t_daemon dmn;
	char url[64], *chosen;
	const char *extra[] = {"--hub", url, "--hub-timeout-ms", "5000", NULL};
	const cJSON *e;
	cJSON *j;
	bool custom;

	fake_start(FAKE_UP);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fake.port);
	t_daemon_start(&dmn, extra);
	ck_assert_int_eq(post_json(dmn.port, "/api/finetune/set_model",
				   "{\"selected_model\":\"llama-3.1-8b\"}", &j),
			 200);
	cJSON_Delete(j);
	ck_assert_int_eq(post_json(dmn.port, "/api/finetune/set_custom_model",
				   "{\"repo_name\":\"nobody/no-such-model\"}", &j),
			 422);
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "field")->valuestring, "repo_name");
	cJSON_Delete(j);
	ck_assert_int_eq(fake.requests, 1);
	chosen = session_model(dmn.port, &custom);
	ck_assert_str_eq(chosen, "llama-3.1-8b");
	free(chosen);
	ck_assert_int_eq(post_json(dmn.port, "/api/finetune/set_custom_model",
				   "{\"repo_name\":\"" QWEN "\"}", &j),
			 200);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "selected_model")->valuestring, QWEN);
	cJSON_Delete(j);
	ck_assert_int_gt(fake.requests, 1);
	chosen = session_model(dmn.port, &custom);
	ck_assert_str_eq(chosen, QWEN);
	ck_assert(custom);
	free(chosen);
	fake_stop();
	t_daemon_stop(&dmn);
}
END_TEST

/* Lookups of one id at once make one request to the Hub, and share its answer; two lookups
 * under way are the cap (the next answers 503 with Retry-After, keeping threads for store
 * writes); a failure is remembered, so asking again costs the Hub nothing. */
START_TEST(lookups_of_one_id_are_shared_capped_and_failures_remembered)
{
	struct t_daemon dmn;
	struct t_resp r;
	char url[64], body[512], other[512], *a1, *a2, *ra;
	const char *extra[] = {"--hub", url, "--hub-timeout-ms", "8000", NULL};
	int fd1, fd2;

	/* The Hub holds each request 1.5 s, then closes it without an answer. */
	fake_start(FAKE_SLOW);
	fake.slow_ms = 1500;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fake.port);
	t_daemon_start(&dmn, extra);
	estimate_body(body, sizeof(body), QWEN);
	estimate_body(other, sizeof(other), "rigfit-test/another-model");
	fd1 = post_nowait(dmn.port, "/api/estimate", NULL, body);
	wait_hub_requests(1);
	fd2 = post_nowait(dmn.port, "/api/estimate", NULL, body);
	usleep(200 * 1000);
	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/estimate",
				"Content-Type: application/json\r\n", other, strlen(other), &r),
			 0);
	ck_assert_msg(r.status == 503, "status %d: %s", r.status, r.body);
	ra = t_resp_header(&r, "Retry-After");
	ck_assert_ptr_nonnull(ra);
	ck_assert_str_eq(ra, "1");
	free(ra);
	t_resp_free(&r);
	a1 = read_until_close(fd1);
	a2 = read_until_close(fd2);
	ck_assert_msg(strncmp(a1, "HTTP/1.1 5", 10) == 0, "%s", a1);
	ck_assert_str_eq(strstr(a1, "\r\n\r\n"), strstr(a2, "\r\n\r\n"));
	ck_assert_int_eq(fake.requests, 1);
	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/estimate",
				"Content-Type: application/json\r\n", body, strlen(body), &r),
			 0);
	ck_assert_str_eq(r.body, strstr(a1, "\r\n\r\n") + 4);
	ck_assert_int_eq(fake.requests, 1);
	t_resp_free(&r);
	free(a1);
	free(a2);
	close(fd1);
	close(fd2);
	fake_stop();
	t_daemon_stop(&dmn);
}
END_TEST

/* 40 lookups of a stalling Hub whose clients went away at once: a store write meanwhile is
 * answered within a second, and the lookups give up (their slots free again) instead of
 * holding threads until their 20 s timeout. */
START_TEST(abandoned_lookups_give_up_and_hold_up_no_store_write)
{
	enum {
		N = 40
	};
	struct t_daemon dmn;
	struct t_resp r;
	struct pollfd pfd;
	char url[64], body[512], id[64], *bench_path, *bench;
	const char *extra[] = {"--hub", url, "--hub-timeout-ms", "20000", NULL};
	int fds[N], fd, limit = t_under_valgrind() ? 10000 : 1000;
	long t0, took;

	fake_start(FAKE_SLOW);
	fake.slow_ms = 30000;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", fake.port);
	t_daemon_start(&dmn, extra);
	t_wait_scan(dmn.port);
	for (int i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "rigfit-test/abandoned-%d", i);
		estimate_body(body, sizeof(body), id);
		fds[i] = post_nowait(dmn.port, "/api/estimate", NULL, body);
	}
	wait_hub_requests(1);
	for (int i = 0; i < N; i++)
		close(fds[i]);
	bench_path = t_path(t_src_dir(), "tests/fixtures/bench/llama-bench.json");
	bench = t_read_file(bench_path, NULL);
	ck_assert_ptr_nonnull(bench);
	t0 = ms_now();
	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/benchmarks",
				"Content-Type: application/json\r\n", bench, strlen(bench), &r),
			 0);
	took = ms_now() - t0;
	ck_assert_msg(r.status == 201, "status %d: %s", r.status, r.body);
	t_resp_free(&r);
	ck_assert_msg(took < limit, "the store write took %ld ms", took);
	/* libcurl reports progress about once a second: by then the lookups have given up. A
	 * new one is taken on rather than refused with 503 at once. */
	usleep((t_under_valgrind() ? 6000 : 2500) * 1000);
	estimate_body(body, sizeof(body), "rigfit-test/after-the-flood");
	fd = post_nowait(dmn.port, "/api/estimate", NULL, body);
	pfd = (struct pollfd){fd, POLLIN, 0};
	ck_assert_msg(poll(&pfd, 1, 500) == 0, "the new lookup was refused: slots still held");
	close(fd);
	free(bench);
	free(bench_path);
	fake_stop();
	t_daemon_stop(&dmn);
}
END_TEST

/* The store's half alone: a round trip, a second answer replacing the first (its shards
 * too), what the schema refuses, and no store at all. */
START_TEST(the_store_keeps_one_answer_per_hub_id_and_revision)
{
	struct api_model_dir d = {0}, got = {0};
	const char *url = "https://hub.example";

	d.config = strdup("{\"model_type\":\"llama\"}");
	d.config_len = strlen(d.config);
	for (int k = 0; k < 3; k++) {
		d.headers[k] = strdup("{\"__metadata__\":{}}");
		d.header_len[k] = strlen(d.headers[k]);
	}
	d.n_shards = 3;
	d.file_bytes = 123;
	d.fetched_at_ms = 1000;
	ck_assert_int_eq(rf_store_hub_put(store, url, "a/b", "main", &d), 0);
	d.n_shards = 2;
	d.fetched_at_ms = 2000;
	ck_assert_int_eq(rf_store_hub_put(store, url, "a/b", "main", &d), 0);
	ck_assert_int_eq(rows_in("hub_model_shards"), 2);
	ck_assert_int_eq(rf_store_hub_get(store, url, "a/b", "main", &got), 0);
	ck_assert_int_eq(got.n_shards, 2);
	ck_assert_int_eq(got.fetched_at_ms, 2000);
	ck_assert_uint_eq(got.file_bytes, 123);
	ck_assert_str_eq(got.config, d.config);
	ck_assert_str_eq(got.where, "hub");
	api_model_dir_free(&got);
	ck_assert_int_eq(rf_store_hub_get(store, url, "a/b", "other", &got), RF_E_NOT_FOUND);
	ck_assert_int_eq(rf_store_hub_get(store, "https://other.example", "a/b", "main", &got),
			 RF_E_NOT_FOUND);
	/* A config that is not a JSON object is refused, and the old answer stays. */
	free(d.config);
	d.config = strdup("[1]");
	d.config_len = 3;
	ck_assert_int_eq(rf_store_hub_put(store, url, "a/b", "main", &d), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rows_in("hub_model_shards"), 2);
	d.n_shards = 0;
	ck_assert_int_eq(rf_store_hub_put(store, url, "a/b", "main", &d), RF_E_INVALID_VALUE);
	d.n_shards = 3;
	ck_assert_int_eq(rf_store_hub_put(NULL, url, "a/b", "main", &d), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_eq(rf_store_hub_get(NULL, url, "a/b", "main", &got), RF_E_STORE_UNAVAILABLE);
	api_model_dir_free(&d);
}
END_TEST

Suite *hub_suite(void)
{
	Suite *s = suite_create("hub");
	TCase *tc = tcase_create("fake_hub");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, an_id_on_the_hub_resolves_with_the_published_parameter_count);
	tcase_add_test(tc, a_model_looked_up_once_resolves_offline_from_the_store);
	tcase_add_test(tc, a_hub_that_is_down_slow_or_failing_is_a_clear_error);
	tcase_add_test(tc, a_lying_hub_is_refused_and_not_stored);
	tcase_add_test(tc, a_stored_answer_with_a_lying_total_is_not_served);
	tcase_add_test(tc, an_unknown_id_and_odd_hubs);
	tcase_add_test(tc, the_daemon_looks_ids_up_with_hub_and_keeps_them);
	tcase_add_test(tc, a_slow_hub_holds_up_no_other_request);
	tcase_add_test(tc, an_mcp_lookup_waits_off_the_loop_and_sigterm_is_prompt);
	tcase_add_test(tc, a_modelforge_lookup_waits_off_the_loop_and_sigterm_is_prompt);
	tcase_add_test(tc, a_custom_model_looked_up_off_the_loop_is_chosen);
	tcase_add_test(tc, lookups_of_one_id_are_shared_capped_and_failures_remembered);
	tcase_add_test(tc, abandoned_lookups_give_up_and_hold_up_no_store_write);
	tcase_add_test(tc, the_store_keeps_one_answer_per_hub_id_and_revision);
	suite_add_tcase(s, tc);
	return s;
}
