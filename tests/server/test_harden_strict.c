/*
 * The transport as strict and as frugal as the issue of hardening III asks, against the real
 * daemon over real sockets: --static-dir serves regular files only (a FIFO is refused at
 * once, where opening it used to hang the daemon) and streams them from their descriptor (many
 * slow readers of a 20 MB file leave the daemon's resident memory where it was, where each
 * used to hold a copy); GET /mcp is a 405 whatever serves /; a chunked body that keeps coming
 * past the body cap gets its 413 envelope instead of a silent close; and POST /mcp refuses
 * invalid UTF-8 and trailing bytes as REST does, and shares its sessions out per client
 * address, so that an initialize flood from one address logs no other address out; an idle
 * daemon gives the heap a burst of requests freed back to the system. Every wait is bounded;
 * the memory checks compare the daemon with itself before the readers came, and after the
 * burst.
 */
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/server/harness.h"
#include "tests/test.h"

#define BIG_BYTES (20u << 20)
#define SLOW_READERS 100

static long mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Returns the VmRSS of pid in KiB. */
static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kb = strtol(line + 6, NULL, 10);
	fclose(f);
	ck_assert_int_gt(kb, 0);
	return kb;
}

/* Asserts r is the error envelope with this status and code. */
static void assert_code(const struct t_resp *r, int status, const char *code)
{
	cJSON *j = cJSON_ParseWithLength(r->body, r->body_len);
	cJSON *c = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"),
						    "code");

	ck_assert_msg(r->status == status, "status %d, want %d: %s", r->status, status, r->body);
	ck_assert_msg(cJSON_IsString(c) && strcmp(c->valuestring, code) == 0, "body %s", r->body);
	cJSON_Delete(j);
}

/* A web app directory: index.html, a 20 MB file of varied bytes and two FIFOs. */
static char *make_app(unsigned char **big)
{
	char *app = t_mkdtemp(), *p;

	t_put(app, "index.html", "<!doctype html><title>app</title>\n");
	*big = malloc(BIG_BYTES);
	for (size_t i = 0; i < BIG_BYTES; i++)
		(*big)[i] = (unsigned char)((i * 2654435761u) >> 13);
	p = t_path(app, "big.bin");
	ck_assert_int_eq(t_write_file(p, *big, BIG_BYTES), 0);
	free(p);
	p = t_path(app, "pipe.js");
	ck_assert_int_eq(mkfifo(p, 0644), 0);
	free(p);
	p = t_path(app, "pipe");
	ck_assert_int_eq(mkfifo(p, 0644), 0);
	free(p);
	return app;
}

START_TEST(static_files_are_regular_files_streamed_from_disk)
{
	struct t_daemon d;
	struct t_resp r;
	unsigned char *big;
	char *app = make_app(&big), *cl;
	const char *extra[] = {"--static-dir", app, NULL};
	int fds[SLOW_READERS];
	long before, after, t0;

	t_daemon_start(&d, extra);
	/* A FIFO is refused at once, not opened for a writer that never comes. */
	for (int i = 0; i < 2; i++) {
		const char *path = i == 0 ? "/pipe.js" : "/pipe";
		t0 = mono_ms();
		ck_assert_int_eq(t_http(d.port, "GET", path, NULL, NULL, 0, &r), 0);
		assert_code(&r, 403, "forbidden");
		ck_assert_int_lt(mono_ms() - t0, 4000);
		t_resp_free(&r);
	}
	/* GET /mcp is the 405 of POST /mcp, not the app's page. */
	ck_assert_int_eq(t_http(d.port, "GET", "/mcp", NULL, NULL, 0, &r), 0);
	assert_code(&r, 405, "method_not_allowed");
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "GET", "/finetune/settings", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(strstr(r.body, "<title>app</title>"));
	t_resp_free(&r);

	/* HEAD gives the length and no body; GET gives every byte. */
	ck_assert_int_eq(t_http(d.port, "HEAD", "/big.bin", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	cl = t_resp_header(&r, "Content-Length");
	ck_assert_ptr_nonnull(cl);
	ck_assert_int_eq(atol(cl), (long)BIG_BYTES);
	ck_assert_uint_eq(r.body_len, 0);
	free(cl);
	t_resp_free(&r);
	{
		static const char req[] = "GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n"
					  "Connection: close\r\n\r\n";
		ck_assert_int_eq(t_http_raw(d.port, req, sizeof(req) - 1, &r, 30000), 0);
	}
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.body_len, BIG_BYTES);
	ck_assert_msg(memcmp(r.body, big, BIG_BYTES) == 0, "the file was not served byte-exact");
	t_resp_free(&r);

	/* Slow readers: each asks for the file and reads a few bytes of it, then nothing. A copy
	 * per request would add 20 MB each; streamed, they add little. */
	before = rss_kb(d.pid);
	for (int i = 0; i < SLOW_READERS; i++) {
		static const char req[] = "GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
		int small = 4096;
		fds[i] = t_connect(d.port);
		ck_assert_int_ge(fds[i], 0);
		setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		ck_assert_int_eq(send(fds[i], req, sizeof(req) - 1, MSG_NOSIGNAL),
				 (ssize_t)sizeof(req) - 1);
	}
	for (int i = 0; i < SLOW_READERS; i++) {
		struct pollfd p = {fds[i], POLLIN, 0};
		char buf[64];
		ck_assert_msg(poll(&p, 1, 10000) == 1, "reader %d got nothing", i);
		ck_assert_int_gt(recv(fds[i], buf, sizeof(buf), 0), 0);
	}
	usleep(300000);
	after = rss_kb(d.pid);
	ck_assert_msg(after - before < 32 * 1024,
		      "%d slow readers of a 20 MB file took VmRSS from %ld to %ld KiB",
		      SLOW_READERS, before, after);
	/* And the daemon answers others meanwhile. */
	ck_assert_int_eq(t_http(d.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	for (int i = 0; i < SLOW_READERS; i++)
		close(fds[i]);
	printf("static files: VmRSS %ld KiB before %d slow readers, %ld KiB with them\n", before,
	       SLOW_READERS, after);
	t_daemon_stop(&d);
	t_rmtree(app);
	free(app);
	free(big);
}
END_TEST

/* Reads from fd into out (cap bytes, NUL-terminated) until the server closes it or 10 s
 * pass; returns how many bytes came. */
static size_t recv_until_close(int fd, char *out, size_t cap)
{
	size_t got = 0;

	for (long end = mono_ms() + 10000; mono_ms() < end && got < cap;) {
		struct pollfd p = {fd, POLLIN, 0};
		ssize_t k;
		if (poll(&p, 1, 200) != 1)
			continue;
		k = recv(fd, out + got, cap - got, 0);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	out[got] = '\0';
	return got;
}

/* A chunked body that goes on past the cap (1 MiB, plus 8 MiB read and dropped so that a
 * client that writes first can read its answer) is answered 413 with the envelope as soon as
 * it passes, while the client is still sending, instead of a close with no answer. */
/* A FIFO (and a directory) named as a GGUF file under --models-dir, on every route that reads
 * one: /api/estimate {"gguf"}, ModelForge's validate_custom_model and set_custom_model. Each is
 * a clear refusal at once, not an open waiting for a writer, and /healthz is answered between
 * them. */
START_TEST(a_fifo_named_as_a_model_is_refused_at_once)
{
	struct t_daemon d;
	struct t_resp r;
	char *dir = t_mkdtemp(), *fifo = t_path(dir, "pipe.gguf"), *sub = t_path(dir, "sub.gguf");
	const char *extra[] = {"--models-dir", dir, NULL};
	const char *paths[] = {fifo, sub};
	char body[4400];
	long t0;

	ck_assert_int_eq(mkfifo(fifo, 0644), 0);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	t_daemon_start(&d, extra);
	for (int i = 0; i < 2; i++) {
		static const char *const routes[] = {"/api/estimate",
						     "/api/finetune/validate_custom_model",
						     "/api/finetune/set_custom_model"};
		for (int k = 0; k < 3; k++) {
			cJSON *j;
			if (k == 0)
				snprintf(body, sizeof(body), "{\"model\":{\"gguf\":\"%s\"}}",
					 paths[i]);
			else
				snprintf(body, sizeof(body), "{\"repo_name\":\"%s\"}", paths[i]);
			t0 = mono_ms();
			ck_assert_int_eq(t_http(d.port, "POST", routes[k],
						"Content-Type: application/json\r\n", body,
						strlen(body), &r),
					 0);
			ck_assert_msg(mono_ms() - t0 < 4000, "%s %s took %ld ms", routes[k],
				      paths[i], mono_ms() - t0);
			j = cJSON_Parse(r.body);
			ck_assert_ptr_nonnull(j);
			/* validate_custom_model answers ModelForge's {"valid": false}; the others
			 * the error envelope. */
			if (k == 1)
				ck_assert_msg(r.status == 200 && cJSON_IsFalse(cJSON_GetObjectItem(
									 j, "valid")),
					      "%s: %d %s", routes[k], r.status, r.body);
			else
				ck_assert_msg(r.status >= 400 && r.status < 500 &&
						      cJSON_GetObjectItem(j, "error"),
					      "%s: %d %s", routes[k], r.status, r.body);
			cJSON_Delete(j);
			t_resp_free(&r);
			ck_assert_int_eq(t_http(d.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
			ck_assert_int_eq(r.status, 200);
			t_resp_free(&r);
		}
	}
	t_daemon_stop(&d);
	t_rmtree(dir);
	free(dir);
	free(fifo);
	free(sub);
}
END_TEST

START_TEST(chunked_body_past_the_cap_gets_413_while_sending)
{
	struct t_daemon d;
	struct t_resp r = {0};
	static const char head[] =
		"POST /api/estimate HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
	size_t chunk = 64 * 1024, sent = 0, cap = 1 << 16;
	char *buf = malloc(chunk + 16), *reply = calloc(1, cap + 1);
	int fd, n;
	bool answered = false;

	t_daemon_start(&d, NULL);
	fd = t_connect(d.port);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(send(fd, head, sizeof(head) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(head) - 1);
	n = snprintf(buf, 16, "%zx\r\n", chunk);
	memset(buf + n, ' ', chunk);
	memcpy(buf + n + chunk, "\r\n", 2);
	/* Send up to 64 MiB, stopping once the answer is there. */
	while (sent < (64u << 20) && !answered) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 0) == 1) {
			answered = true;
			break;
		}
		if (send(fd, buf, (size_t)n + chunk + 2, MSG_NOSIGNAL) <= 0)
			break;
		sent += chunk;
	}
	recv_until_close(fd, reply, cap);
	close(fd);
	ck_assert_msg(strstr(reply, "\r\n\r\n") != NULL, "no answer after %zu bytes sent", sent);
	r.status = atoi(reply + 9);
	r.body = strstr(reply, "\r\n\r\n") + 4;
	r.body_len = strlen(r.body);
	assert_code(&r, 413, "payload_too_large");
	ck_assert_ptr_nonnull(strstr(reply, "Content-Type: application/json"));
	ck_assert_msg(sent < (32u << 20), "the body was read to %zu bytes", sent);
	/* The daemon is fine. */
	ck_assert_int_eq(t_http(d.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	free(buf);
	free(reply);
	t_daemon_stop(&d);
}
END_TEST

/* Sends req from the loopback address src to the daemon; returns the reply text (malloc'd,
 * headers and body) of a Connection: close request. */
static char *http_from(const char *src, int port, const char *req)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	size_t cap = 1 << 16;
	char *out = calloc(1, cap + 1);

	ck_assert_int_ge(fd, 0);
	inet_pton(AF_INET, src, &a.sin_addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	a.sin_port = htons((uint16_t)port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	recv_until_close(fd, out, cap);
	close(fd);
	return out;
}

/* POSTs body to /mcp from src with the session sid (NULL: none); returns the reply text. */
static char *mcp_from(const char *src, int port, const char *sid, const char *body)
{
	char req[2048];

	snprintf(req, sizeof(req),
		 "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
		 "Content-Type: application/json\r\n%s%s%sContent-Length: %zu\r\n\r\n%s",
		 sid ? "Mcp-Session-Id: " : "", sid ? sid : "", sid ? "\r\n" : "", strlen(body),
		 body);
	return http_from(src, port, req);
}

/* The Mcp-Session-Id of reply (malloc'd). */
static char *session_id(const char *reply)
{
	const char *h = strstr(reply, "Mcp-Session-Id: ");

	ck_assert_msg(h != NULL, "no session id: %s", reply);
	h += strlen("Mcp-Session-Id: ");
	return strndup(h, strcspn(h, "\r\n"));
}

static const char init_body[] =
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	"\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";
static const char ping_body[] = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}";

START_TEST(mcp_is_strict_and_shares_sessions_per_client)
{
	struct t_daemon d;
	char *reply, *victim, *first;

	t_daemon_start(&d, NULL);
	/* Trailing bytes and invalid UTF-8 are a 400 parse error, as REST answers 400. */
	reply = mcp_from("127.0.0.1", d.port, NULL,
			 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}trailing");
	ck_assert_msg(strncmp(reply, "HTTP/1.1 400", 12) == 0 && strstr(reply, "-32700"), "%s",
		      reply);
	free(reply);
	reply = mcp_from("127.0.0.1", d.port, NULL,
			 "{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe<x>\",\"method\":\"initialize\"}");
	ck_assert_msg(strncmp(reply, "HTTP/1.1 400", 12) == 0 && strstr(reply, "-32700") &&
			      strstr(reply, "\"id\":null") && !strstr(reply, "\xff\xfe"),
		      "%s", reply);
	free(reply);

	/* A session from 127.0.0.2, then a flood of initializes from 127.0.0.1. */
	reply = mcp_from("127.0.0.2", d.port, NULL, init_body);
	ck_assert_msg(strncmp(reply, "HTTP/1.1 200", 12) == 0, "%s", reply);
	victim = session_id(reply);
	free(reply);
	reply = mcp_from("127.0.0.1", d.port, NULL, init_body);
	first = session_id(reply);
	free(reply);
	for (int i = 0; i < 300; i++) {
		reply = mcp_from("127.0.0.1", d.port, NULL, init_body);
		ck_assert_msg(strncmp(reply, "HTTP/1.1 200", 12) == 0, "%s", reply);
		free(reply);
	}
	reply = mcp_from("127.0.0.2", d.port, victim, ping_body);
	ck_assert_msg(strncmp(reply, "HTTP/1.1 200", 12) == 0,
		      "another address's flood closed the session: %s", reply);
	free(reply);
	/* The flooder's own oldest session made room for its newer ones. */
	reply = mcp_from("127.0.0.1", d.port, first, ping_body);
	ck_assert_msg(strncmp(reply, "HTTP/1.1 404", 12) == 0, "%s", reply);
	free(reply);
	free(victim);
	free(first);
	t_daemon_stop(&d);
}
END_TEST

/* A burst of planning requests leaves the heap holding what they freed; once the daemon has
 * been idle for a second it gives those pages back to the system (server/daemon/http.c). The
 * release binary: the sanitizers' allocator keeps its own pools whatever the daemon asks. */
START_TEST(an_idle_daemon_gives_its_freed_heap_back)
{
	const char *rel = getenv("RIGFIT_REL_BIN");
	static const char rec[] = "{\"limit\":5}", cfg[] = "{\"model\":{\"id\":\"qwen2.5-7b\"}}";
	char profiles[4096];
	const char *extra[] = {"--profiles", profiles, "--no-host-bench", NULL};
	struct t_daemon d;
	struct t_resp r;
	long loaded, idle;

	if (t_under_valgrind())
		return; /* valgrind's allocator, as the sanitizers' */
	ck_assert_msg(rel && *rel && access(rel, X_OK) == 0,
		      "the release binary is not built (make build/rigfit, or set RIGFIT_REL_BIN)");
	snprintf(profiles, sizeof(profiles), "%s/profiles", t_src_dir());
	setenv("RIGFIT_BIN", rel, 1);
	t_daemon_start(&d, extra);
	t_wait_scan(d.port);
	for (int i = 0; i < 20; i++) {
		ck_assert_int_eq(t_http(d.port, "POST", "/api/recommend",
					"Content-Type: application/json\r\n", rec, sizeof(rec) - 1,
					&r),
				 0);
		ck_assert_msg(r.status == 200, "recommend: %d %s", r.status, r.body);
		t_resp_free(&r);
		ck_assert_int_eq(t_http(d.port, "POST", "/api/config",
					"Content-Type: application/json\r\n", cfg, sizeof(cfg) - 1,
					&r),
				 0);
		ck_assert_int_eq(r.status, 200);
		t_resp_free(&r);
	}
	loaded = rss_kb(d.pid);
	usleep(1800 * 1000);
	idle = rss_kb(d.pid);
	printf("idle trim: VmRSS %ld KiB after 40 planning requests, %ld KiB idle 1.8 s later\n",
	       loaded, idle);
	ck_assert_msg(idle <= loaded - 256, "VmRSS %ld KiB after the burst, %ld KiB idle", loaded,
		      idle);
	/* Still serving, from the same heap. */
	ck_assert_int_eq(t_http(d.port, "POST", "/api/config", "Content-Type: application/json\r\n",
				cfg, sizeof(cfg) - 1, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	t_daemon_stop(&d);
}
END_TEST

Suite *harden_strict_suite(void)
{
	Suite *s = suite_create("harden_strict");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, t_under_valgrind() ? 600 : 120);
	tcase_add_test(tc, static_files_are_regular_files_streamed_from_disk);
	tcase_add_test(tc, chunked_body_past_the_cap_gets_413_while_sending);
	tcase_add_test(tc, a_fifo_named_as_a_model_is_refused_at_once);
	tcase_add_test(tc, mcp_is_strict_and_shares_sessions_per_client);
	tcase_add_test(tc, an_idle_daemon_gives_its_freed_heap_back);
	suite_add_tcase(s, tc);
	return s;
}
