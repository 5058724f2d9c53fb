/*
 * Tests of server/cli/healthcheck.c against a tiny HTTP server in a thread of the test process:
 * it listens on an ephemeral loopback port, records the request it gets, and answers 200, 503,
 * garbage, half a reply or nothing at all, so each verdict and each timeout of the probe is
 * exercised over a real TCP connection.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "server/cli/healthcheck.h"
#include "tests/test.h"

enum srv_mode {
	SRV_OK_LENGTH,     /* 200 with Content-Length, then keeps the connection open */
	SRV_OK_CLOSE,      /* HTTP/1.0 200 without Content-Length, then closes */
	SRV_503,           /* 503 and close */
	SRV_404,           /* 404 and close */
	SRV_SILENT,        /* reads the request, answers nothing */
	SRV_GARBAGE,       /* answers something that is not HTTP */
	SRV_CLOSE,         /* closes without answering */
	SRV_BIG,           /* 200 with a body far over the probe's cap, no Content-Length */
	SRV_PARTIAL,       /* half a status line, then silence */
	SRV_HEADERS_STALL, /* a complete 200 status line, then silence */
};

struct srv {
	int lfd;
	int family;
	unsigned port;
	enum srv_mode mode;
	pthread_t thread;
	char req[4096]; /* the request as received */
	size_t req_len;
};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void send_str(int fd, const char *s)
{
	size_t off = 0, len = strlen(s);
	while (off < len) {
		ssize_t n = send(fd, s + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			return;
		off += (size_t)n;
	}
}

/* Waits (at most 5 s, so a broken probe cannot hang the suite) until the peer closes. */
static void wait_peer_close(int fd)
{
	char buf[512];
	long long end = now_ms() + 5000;

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		long long left = end - now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return;
		if (recv(fd, buf, sizeof(buf), 0) <= 0)
			return;
	}
}

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	struct pollfd p = {.fd = s->lfd, .events = POLLIN};
	int fd;

	if (poll(&p, 1, 5000) <= 0)
		return NULL;
	fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	/* Read the request head. */
	while (s->req_len < sizeof(s->req) - 1) {
		struct pollfd q = {.fd = fd, .events = POLLIN};
		ssize_t n;
		if (poll(&q, 1, 5000) <= 0)
			break;
		n = recv(fd, s->req + s->req_len, sizeof(s->req) - 1 - s->req_len, 0);
		if (n <= 0)
			break;
		s->req_len += (size_t)n;
		s->req[s->req_len] = '\0';
		if (strstr(s->req, "\r\n\r\n"))
			break;
	}
	switch (s->mode) {
	case SRV_OK_LENGTH:
		send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			     "content-length:  15\r\n\r\n{\"status\":\"ok\"}");
		wait_peer_close(fd);
		break;
	case SRV_OK_CLOSE:
		send_str(fd, "HTTP/1.0 200 OK\r\n\r\nok\n");
		break;
	case SRV_503:
		send_str(fd, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
			     "Connection: close\r\n\r\n");
		break;
	case SRV_404:
		send_str(fd, "HTTP/1.1 404 Not\001Found\r\nContent-Length: 0\r\n\r\n");
		break;
	case SRV_SILENT:
	case SRV_PARTIAL:
	case SRV_HEADERS_STALL:
		if (s->mode == SRV_PARTIAL)
			send_str(fd, "HTTP/1.1 2");
		if (s->mode == SRV_HEADERS_STALL)
			send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n");
		wait_peer_close(fd);
		break;
	case SRV_GARBAGE:
		send_str(fd, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n");
		break;
	case SRV_CLOSE:
		break;
	case SRV_BIG: {
		char chunk[4096];
		memset(chunk, 'x', sizeof(chunk) - 1);
		chunk[sizeof(chunk) - 1] = '\0';
		send_str(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n");
		for (int i = 0; i < 64; i++)
			send_str(fd, chunk);
		wait_peer_close(fd);
		break;
	}
	}
	close(fd);
	return NULL;
}

/* Starts a server for mode on the loopback address of family. Returns 0, or -1 when the
 * family has no loopback here (IPv6 disabled). */
static int srv_start(struct srv *s, enum srv_mode mode, int family)
{
	struct sockaddr_storage ss;
	socklen_t len;

	memset(s, 0, sizeof(*s));
	memset(&ss, 0, sizeof(ss));
	s->mode = mode;
	s->family = family;
	s->lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0)
		return -1;
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*a);
	}
	if (bind(s->lfd, (struct sockaddr *)&ss, len) != 0) {
		close(s->lfd);
		return -1;
	}
	ck_assert_int_eq(listen(s->lfd, 4), 0);
	ck_assert_int_eq(getsockname(s->lfd, (struct sockaddr *)&ss, &len), 0);
	s->port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
					     ((struct sockaddr_in *)&ss)->sin_port);
	ck_assert_int_eq(pthread_create(&s->thread, NULL, srv_main, s), 0);
	return 0;
}

static void srv_stop(struct srv *s)
{
	pthread_join(s->thread, NULL);
	close(s->lfd);
}

/* Runs the probe against a fresh server in mode; returns rc, the reason and the elapsed ms. */
static int probe(enum srv_mode mode, int timeout_ms, char *err, size_t errlen, long long *ms,
		 struct srv *s)
{
	char addr[64];
	long long t0;
	int rc;

	ck_assert_int_eq(srv_start(s, mode, AF_INET), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", s->port);
	t0 = now_ms();
	rc = rf_healthcheck(addr, timeout_ms, err, errlen);
	*ms = now_ms() - t0;
	srv_stop(s);
	return rc;
}

START_TEST(test_hc_ok_with_length)
{
	struct srv s;
	char err[256] = "untouched", want_host[64];
	long long ms;

	/* The server keeps the connection open: only Content-Length tells the probe it is done,
	 * so a quick return proves the probe does not wait for the close (or the timeout). */
	ck_assert_int_eq(probe(SRV_OK_LENGTH, 5000, err, sizeof(err), &ms, &s), 0);
	ck_assert_str_eq(err, "");
	ck_assert_int_lt(ms, 2500);
	snprintf(want_host, sizeof(want_host), "\r\nHost: 127.0.0.1:%u\r\n", s.port);
	ck_assert_msg(strncmp(s.req, "GET /healthz HTTP/1.1\r\n", 23) == 0, "request: %s", s.req);
	ck_assert_ptr_nonnull(strstr(s.req, want_host));
	ck_assert_ptr_nonnull(strstr(s.req, "\r\nConnection: close\r\n"));
	ck_assert_uint_ge(s.req_len, 4);
	ck_assert_mem_eq(s.req + s.req_len - 4, "\r\n\r\n", 4);
}
END_TEST

START_TEST(test_hc_ok_close)
{
	struct srv s;
	char err[256];
	long long ms;

	ck_assert_int_eq(probe(SRV_OK_CLOSE, 5000, err, sizeof(err), &ms, &s), 0);
	/* No errbuf at all is allowed too. */
	ck_assert_int_eq(probe(SRV_OK_CLOSE, 5000, NULL, 0, &ms, &s), 0);
}
END_TEST

START_TEST(test_hc_503)
{
	struct srv s;
	char err[256];
	long long ms;

	ck_assert_int_eq(probe(SRV_503, 5000, err, sizeof(err), &ms, &s), RF_E_UNAVAILABLE);
	ck_assert_msg(strstr(err, "503 Service Unavailable") != NULL, "reason: %s", err);
	ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

START_TEST(test_hc_404_reason_sanitised)
{
	struct srv s;
	char err[256];
	long long ms;

	ck_assert_int_eq(probe(SRV_404, 5000, err, sizeof(err), &ms, &s), RF_E_UNAVAILABLE);
	ck_assert_msg(strstr(err, "404 Not?Found") != NULL, "reason: %s", err);
}
END_TEST

START_TEST(test_hc_silent_times_out)
{
	struct srv s;
	char err[256];
	long long ms;

	ck_assert_int_eq(probe(SRV_SILENT, 300, err, sizeof(err), &ms, &s), RF_E_TIMEOUT);
	ck_assert_int_ge(ms, 280);
	ck_assert_int_lt(ms, 2000);
	ck_assert_msg(strstr(err, "300 ms") != NULL, "reason: %s", err);

	ck_assert_int_eq(probe(SRV_PARTIAL, 300, err, sizeof(err), &ms, &s), RF_E_TIMEOUT);
	ck_assert_int_ge(ms, 280);
	ck_assert_int_lt(ms, 2000);
}
END_TEST

START_TEST(test_hc_status_line_then_stall)
{
	struct srv s;
	char err[256];
	long long ms;

	/* The daemon answered 200 and then stalled: it is alive, the verdict is the status. */
	ck_assert_int_eq(probe(SRV_HEADERS_STALL, 300, err, sizeof(err), &ms, &s), 0);
	ck_assert_int_ge(ms, 280);
}
END_TEST

START_TEST(test_hc_not_http)
{
	struct srv s;
	char err[256];
	long long ms;

	ck_assert_int_eq(probe(SRV_GARBAGE, 5000, err, sizeof(err), &ms, &s), RF_E_PARSE);
	ck_assert_msg(strstr(err, "HTTP") != NULL, "reason: %s", err);
	ck_assert_int_eq(probe(SRV_CLOSE, 5000, err, sizeof(err), &ms, &s), RF_E_PARSE);
	ck_assert_msg(strstr(err, "closed") != NULL, "reason: %s", err);
}
END_TEST

START_TEST(test_hc_big_reply_capped)
{
	struct srv s;
	char err[256];
	long long ms;

	/* 256 KiB of body and no Content-Length: the probe stops at its 64 KiB cap instead of
	 * reading on until the timeout. */
	ck_assert_int_eq(probe(SRV_BIG, 5000, err, sizeof(err), &ms, &s), 0);
	ck_assert_int_lt(ms, 2500);
}
END_TEST

START_TEST(test_hc_closed_port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	char addr[64], err[256];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	/* Take a free port from the kernel, then give it back: nothing listens there now. */
	ck_assert_int_ge(fd, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", ntohs(a.sin_port));
	ck_assert_int_eq(rf_healthcheck(addr, 1000, err, sizeof(err)), RF_E_IO);
	ck_assert_msg(strstr(err, "refused") != NULL, "reason: %s", err);
	ck_assert_msg(strstr(err, addr) != NULL, "reason: %s", err);
}
END_TEST

START_TEST(test_hc_wildcard_and_ipv6)
{
	struct srv s;
	char addr[64], err[256], want_host[64];

	/* The daemon's own --listen value works: 0.0.0.0 means this host's loopback. */
	ck_assert_int_eq(srv_start(&s, SRV_OK_CLOSE, AF_INET), 0);
	snprintf(addr, sizeof(addr), "0.0.0.0:%u", s.port);
	ck_assert_int_eq(rf_healthcheck(addr, 5000, err, sizeof(err)), 0);
	srv_stop(&s);
	snprintf(want_host, sizeof(want_host), "Host: 127.0.0.1:%u\r\n", s.port);
	ck_assert_ptr_nonnull(strstr(s.req, want_host));

	ck_assert_int_eq(srv_start(&s, SRV_OK_CLOSE, AF_INET), 0);
	snprintf(addr, sizeof(addr), "localhost:%u", s.port);
	ck_assert_int_eq(rf_healthcheck(addr, 5000, err, sizeof(err)), 0);
	srv_stop(&s);

	if (srv_start(&s, SRV_503, AF_INET6) != 0) {
		printf("healthcheck: no IPv6 loopback here; skipping the [::1] checks\n");
		return;
	}
	snprintf(addr, sizeof(addr), "[::1]:%u", s.port);
	ck_assert_int_eq(rf_healthcheck(addr, 5000, err, sizeof(err)), RF_E_UNAVAILABLE);
	srv_stop(&s);
	snprintf(want_host, sizeof(want_host), "Host: [::1]:%u\r\n", s.port);
	ck_assert_ptr_nonnull(strstr(s.req, want_host));

	ck_assert_int_eq(srv_start(&s, SRV_OK_LENGTH, AF_INET6), 0);
	snprintf(addr, sizeof(addr), "[::]:%u", s.port);
	ck_assert_int_eq(rf_healthcheck(addr, 5000, err, sizeof(err)), 0);
	srv_stop(&s);
}
END_TEST

/* Readiness asks for /readyz on the same connection logic; a path other than the two probes
 * is refused before anything is sent. */
START_TEST(test_hc_ready_path)
{
	struct srv s;
	char addr[64], err[256];

	ck_assert_int_eq(srv_start(&s, SRV_OK_LENGTH, AF_INET), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", s.port);
	ck_assert_int_eq(rf_healthcheck_path(addr, RF_HEALTHCHECK_READY, 5000, err, sizeof(err)),
			 0);
	srv_stop(&s);
	ck_assert_msg(strncmp(s.req, "GET /readyz HTTP/1.1\r\n", 22) == 0, "request: %s", s.req);

	ck_assert_int_eq(srv_start(&s, SRV_503, AF_INET), 0);
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", s.port);
	ck_assert_int_eq(rf_healthcheck_path(addr, RF_HEALTHCHECK_READY, 5000, err, sizeof(err)),
			 RF_E_UNAVAILABLE);
	srv_stop(&s);
	ck_assert_msg(strstr(err, "503") != NULL, "reason: %s", err);

	ck_assert_int_eq(rf_healthcheck_path("127.0.0.1:1", "/metrics", 5000, err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "/readyz"));
	ck_assert_int_eq(rf_healthcheck_path("127.0.0.1:1", NULL, 5000, err, sizeof(err)),
			 RF_E_INVALID_VALUE);
}
END_TEST

START_TEST(test_hc_bad_addresses)
{
	static const char *const bad[] = {
		"",
		"127.0.0.1",
		"127.0.0.1:",
		":8080",
		"127.0.0.1:0",
		"127.0.0.1:65536",
		"127.0.0.1:99999999999999999999",
		"127.0.0.1:80x",
		"127.0.0.1:+80",
		"127.0.0.1:-80",
		"127.0.0.1: 80",
		" 127.0.0.1:80",
		"127.0.0.1:80 ",
		"1.2.3:80",
		"256.0.0.1:80",
		"example.com:80",
		"::1:8080",
		"[::1]8080",
		"[::1]",
		"[::1]:",
		"[]:80",
		"[127.0.0.1]:80",
		"[::1:80",
		"[fe80::1%eth0]:80",
		"127.0.0.1:80\nX: y",
		"127.0.0.1:80:81",
		"http://127.0.0.1:80",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:80",
	};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(rf_healthcheck(bad[i], 300, err, sizeof(err)) == RF_E_INVALID_VALUE,
			      "address '%s' accepted", bad[i]);
		ck_assert_msg(strstr(err, "bad address") != NULL, "reason: %s", err);
		ck_assert_msg(strchr(err, '\n') == NULL, "reason has a newline: %s", err);
	}
	ck_assert_int_eq(rf_healthcheck(NULL, 300, err, sizeof(err)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_healthcheck("127.0.0.1:8080", 0, err, sizeof(err)), RF_E_RANGE);
	ck_assert_int_eq(rf_healthcheck("127.0.0.1:8080", -5, err, sizeof(err)), RF_E_RANGE);
	/* A tiny errbuf is cut, never overrun, and stays terminated. */
	memset(err, 'Z', sizeof(err));
	ck_assert_int_eq(rf_healthcheck("junk", 300, err, 8), RF_E_INVALID_VALUE);
	ck_assert_uint_eq(strlen(err), 7);
	ck_assert_int_eq(err[8], 'Z');
}
END_TEST

Suite *healthcheck_suite(void)
{
	Suite *s = suite_create("healthcheck");
	TCase *tc = tcase_create("healthcheck");

	/* Several tests wait out 300 ms timeouts; valgrind makes everything slower. */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_hc_ok_with_length);
	tcase_add_test(tc, test_hc_ok_close);
	tcase_add_test(tc, test_hc_503);
	tcase_add_test(tc, test_hc_404_reason_sanitised);
	tcase_add_test(tc, test_hc_silent_times_out);
	tcase_add_test(tc, test_hc_status_line_then_stall);
	tcase_add_test(tc, test_hc_not_http);
	tcase_add_test(tc, test_hc_big_reply_capped);
	tcase_add_test(tc, test_hc_closed_port);
	tcase_add_test(tc, test_hc_wildcard_and_ipv6);
	tcase_add_test(tc, test_hc_ready_path);
	tcase_add_test(tc, test_hc_bad_addresses);
	suite_add_tcase(s, tc);
	return s;
}
