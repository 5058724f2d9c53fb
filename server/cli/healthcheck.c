/*
 * `rigfit healthcheck`: GET /healthz (or /readyz) from a running daemon over a plain TCP socket (see
 * healthcheck.h). Every step (connect, send, receive) is non-blocking and waits in poll() for
 * what is left of one overall deadline, so a daemon that accepts and then says nothing cannot
 * hang the probe: Docker would otherwise pile up stuck healthcheck processes.
 */
#include "server/cli/healthcheck.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/numparse.h"

/* Longer than any numeric host ("[" INET6_ADDRSTRLEN "]:65535"), so anything longer is junk. */
#define HC_MAX_ADDR 80

struct hc_target {
	struct sockaddr_storage sa;
	socklen_t salen;
	char name[HC_MAX_ADDR]; /* "127.0.0.1:8080" or "[::1]:8080": Host header and messages */
};

static void hc_err(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Writes a printf-formatted reason into errbuf (if any), cut to fit. */
static void hc_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || errlen == 0)
		return;
	va_start(ap, fmt);
	if (vsnprintf(errbuf, errlen, fmt, ap) < 0)
		errbuf[0] = '\0';
	va_end(ap);
}

/* Copies s into dst (size dstlen, > 0), cut to fit, with every byte that is not printable
 * ASCII replaced by '?', so that a reason stays on one line whatever the caller passed. */
static void hc_printable(const char *s, char *dst, size_t dstlen)
{
	size_t n = 0;

	for (; s[n] && n + 1 < dstlen; n++)
		dst[n] = (s[n] >= 0x20 && s[n] < 0x7f) ? s[n] : '?';
	dst[n] = '\0';
}

/* Milliseconds of CLOCK_MONOTONIC, for deadlines that the wall clock cannot move. */
static int64_t hc_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events or the deadline passes. Returns 1 when ready, 0 on
 * timeout, RF_E_IO when poll fails. POLLERR/POLLHUP count as ready: the next call on the
 * socket reports what happened. */
static int hc_wait(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int64_t left = deadline_ms - hc_now_ms();
		int n;

		if (left <= 0)
			return 0;
		n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (n > 0)
			return 1;
		if (n == 0)
			return 0;
		if (errno != EINTR)
			return RF_E_IO;
	}
}

/* Parses "HOST:PORT" / "[HOST6]:PORT" into *t. The host must be numeric (or "localhost"):
 * resolving names would put a resolver, and its timeouts, inside a liveness probe. Wildcard
 * addresses become the loopback address of their family. Returns 0 or RF_E_INVALID_VALUE. */
static int hc_parse_target(const char *addr, struct hc_target *t /* OUT */)
{
	char host[HC_MAX_ADDR], shown[INET6_ADDRSTRLEN];
	const char *colon, *host_p;
	size_t host_len, addr_len;
	uint64_t port;
	int v6;

	if (!addr)
		return RF_E_INVALID_VALUE;
	addr_len = strlen(addr);
	if (addr_len == 0 || addr_len >= HC_MAX_ADDR)
		return RF_E_INVALID_VALUE;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':')
			return RF_E_INVALID_VALUE;
		host_p = addr + 1;
		host_len = (size_t)(close - host_p);
		colon = close + 1;
		v6 = 1;
	} else {
		colon = strchr(addr, ':');
		/* A second ':' means an IPv6 address without brackets: its port is ambiguous. */
		if (!colon || strchr(colon + 1, ':'))
			return RF_E_INVALID_VALUE;
		host_p = addr;
		host_len = (size_t)(colon - addr);
		v6 = 0;
	}
	if (host_len == 0 || host_len >= sizeof(host))
		return RF_E_INVALID_VALUE;
	memcpy(host, host_p, host_len);
	host[host_len] = '\0';
	if (rf_parse_u64_str(colon + 1, 65535, &port) < 0 || port == 0)
		return RF_E_INVALID_VALUE;

	memset(t, 0, sizeof(*t));
	if (v6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&t->sa;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return RF_E_INVALID_VALUE;
		if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
			s6->sin6_addr = in6addr_loopback;
		t->salen = sizeof(*s6);
		if (!inet_ntop(AF_INET6, &s6->sin6_addr, shown, sizeof(shown)))
			return RF_E_INVALID_VALUE;
		snprintf(t->name, sizeof(t->name), "[%s]:%u", shown, (unsigned)port);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&t->sa;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		if (strcmp(host, "localhost") == 0)
			s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		else if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return RF_E_INVALID_VALUE;
		if (s4->sin_addr.s_addr == htonl(INADDR_ANY))
			s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		t->salen = sizeof(*s4);
		if (!inet_ntop(AF_INET, &s4->sin_addr, shown, sizeof(shown)))
			return RF_E_INVALID_VALUE;
		snprintf(t->name, sizeof(t->name), "%s:%u", shown, (unsigned)port);
	}
	return 0;
}

/* Returns a pointer just past the "\r\n\r\n" (or "\n\n") that ends the header block of
 * buf[0..len), or NULL when the headers are not complete yet. */
static const char *hc_headers_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return buf + i + 2;
		if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
			return buf + i + 3;
	}
	return NULL;
}

/* Reports whether the reply in buf[0..len) is complete without waiting for the server to
 * close: the headers are in and so are Content-Length bytes of body. A reply without
 * Content-Length ends when the server closes, as Connection: close asks it to. */
static int hc_reply_complete(const char *buf, size_t len)
{
	const char *end = hc_headers_end(buf, len);
	const char *p;
	static const char key[] = "content-length:";

	if (!end)
		return 0;
	for (p = buf; p < end;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		size_t line_len;
		if (!eol)
			break;
		line_len = (size_t)(eol - p);
		if (line_len > sizeof(key) - 1 && strncasecmp(p, key, sizeof(key) - 1) == 0) {
			const char *v = p + sizeof(key) - 1, *ve = eol;
			uint64_t cl;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			if (rf_parse_u64(v, (size_t)(ve - v), RF_HEALTHCHECK_MAX_REPLY, &cl) < 0)
				return 0;
			return (size_t)(buf + len - end) >= cl;
		}
		p = eol + 1;
	}
	return 0;
}

/* Parses the status line at the start of buf[0..len) ("HTTP/1.1 200 OK"). Returns the status
 * code, 0 when the line is not complete yet, or RF_E_PARSE when it is not HTTP. The reason
 * phrase, cut to printable ASCII, goes to reason (size rlen). */
static int hc_status(const char *buf, size_t len, char *reason, size_t rlen)
{
	const char *eol = memchr(buf, '\n', len);
	uint64_t code;
	size_t n = 0;

	reason[0] = '\0';
	if (len >= 5 && memcmp(buf, "HTTP/", 5) != 0)
		return RF_E_PARSE;
	if (!eol)
		return len >= 5 ? 0 : (memcmp(buf, "HTTP/", len) == 0 ? 0 : RF_E_PARSE);
	if (eol - buf < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[7] < '0' || buf[7] > '9' ||
	    buf[8] != ' ')
		return RF_E_PARSE;
	if (rf_parse_u64(buf + 9, 3, 999, &code) < 0 || code < 100)
		return RF_E_PARSE;
	if (buf[12] != ' ' && buf[12] != '\r' && buf[12] != '\n')
		return RF_E_PARSE;
	for (const char *p = buf + 13; p < eol && n + 1 < rlen; p++) {
		if (*p == '\r')
			break;
		reason[n++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
	}
	reason[n] = '\0';
	return (int)code;
}

/* Sends all of req[0..len) on non-blocking fd before the deadline. Returns 0, RF_E_TIMEOUT or
 * RF_E_IO (errno set). */
static int hc_send_all(int fd, const char *req, size_t len, int64_t deadline_ms)
{
	size_t off = 0;

	while (off < len) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			int w = hc_wait(fd, POLLOUT, deadline_ms);
			if (w < 0)
				return w;
			if (w == 0)
				return RF_E_TIMEOUT;
			continue;
		}
		return RF_E_IO;
	}
	return 0;
}

int rf_healthcheck(const char *listen_addr, int timeout_ms, char *errbuf, size_t errlen)
{
	return rf_healthcheck_path(listen_addr, RF_HEALTHCHECK_LIVE, timeout_ms, errbuf, errlen);
}

int rf_healthcheck_path(const char *listen_addr, const char *path, int timeout_ms, char *errbuf,
			size_t errlen)
{
	struct hc_target t;
	char req[256], reason[64];
	char *buf = NULL;
	size_t len = 0;
	int64_t deadline;
	int fd = -1, rc, n, status, timed_out = 0, soerr = 0;
	socklen_t soerr_len = sizeof(soerr);

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (timeout_ms <= 0) {
		hc_err(errbuf, errlen, "timeout must be positive, not %d ms", timeout_ms);
		return RF_E_RANGE;
	}
	if (!path ||
	    (strcmp(path, RF_HEALTHCHECK_LIVE) != 0 && strcmp(path, RF_HEALTHCHECK_READY) != 0)) {
		hc_err(errbuf, errlen, "probe path must be %s or %s", RF_HEALTHCHECK_LIVE,
		       RF_HEALTHCHECK_READY);
		return RF_E_INVALID_VALUE;
	}
	deadline = hc_now_ms() + timeout_ms;
	rc = hc_parse_target(listen_addr, &t);
	if (rc < 0) {
		char shown[HC_MAX_ADDR];
		hc_printable(listen_addr ? listen_addr : "(null)", shown, sizeof(shown));
		hc_err(errbuf, errlen, "bad address '%s': expected IPV4:PORT or [IPV6]:PORT",
		       shown);
		return rc;
	}

	fd = socket(t.sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		hc_err(errbuf, errlen, "socket: %s", strerror(errno));
		rc = RF_E_IO;
		goto out;
	}
	if (connect(fd, (const struct sockaddr *)&t.sa, t.salen) < 0) {
		if (errno != EINPROGRESS && errno != EINTR) {
			hc_err(errbuf, errlen, "connect %s: %s", t.name, strerror(errno));
			rc = RF_E_IO;
			goto out;
		}
		rc = hc_wait(fd, POLLOUT, deadline);
		if (rc == 0) {
			hc_err(errbuf, errlen, "connect %s: timed out after %d ms", t.name,
			       timeout_ms);
			rc = RF_E_TIMEOUT;
			goto out;
		}
		if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &soerr_len) < 0 ||
		    soerr != 0) {
			hc_err(errbuf, errlen, "connect %s: %s", t.name,
			       strerror(soerr ? soerr : errno));
			rc = RF_E_IO;
			goto out;
		}
	}

	n = snprintf(req, sizeof(req),
		     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: rigfit-healthcheck\r\n"
		     "Accept: */*\r\nConnection: close\r\n\r\n",
		     path, t.name);
	if (n < 0 || (size_t)n >= sizeof(req)) {
		hc_err(errbuf, errlen, "request too long");
		rc = RF_E_INTERNAL;
		goto out;
	}
	rc = hc_send_all(fd, req, (size_t)n, deadline);
	if (rc < 0) {
		if (rc == RF_E_TIMEOUT)
			hc_err(errbuf, errlen, "send to %s: timed out after %d ms", t.name,
			       timeout_ms);
		else
			hc_err(errbuf, errlen, "send to %s: %s", t.name, strerror(errno));
		goto out;
	}

	buf = malloc(RF_HEALTHCHECK_MAX_REPLY);
	if (!buf) {
		hc_err(errbuf, errlen, "out of memory");
		rc = RF_E_NOMEM;
		goto out;
	}
	while (len < RF_HEALTHCHECK_MAX_REPLY && !hc_reply_complete(buf, len)) {
		ssize_t got;
		rc = hc_wait(fd, POLLIN, deadline);
		if (rc < 0) {
			hc_err(errbuf, errlen, "poll: %s", strerror(errno));
			goto out;
		}
		if (rc == 0) {
			timed_out = 1;
			break;
		}
		got = recv(fd, buf + len, RF_HEALTHCHECK_MAX_REPLY - len, 0);
		if (got == 0)
			break;
		if (got < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			/* A reset after a complete status line still carries the answer. */
			if (hc_status(buf, len, reason, sizeof(reason)) > 0)
				break;
			hc_err(errbuf, errlen, "read from %s: %s", t.name, strerror(errno));
			rc = RF_E_IO;
			goto out;
		}
		len += (size_t)got;
	}

	/* The status line is the whole verdict: a daemon that sent it is alive even when the
	 * rest of its reply is slow. */
	status = hc_status(buf, len, reason, sizeof(reason));
	if (status < 0) {
		hc_err(errbuf, errlen, "%s did not answer with HTTP", t.name);
		rc = RF_E_PARSE;
		goto out;
	}
	if (status == 0) {
		if (timed_out) {
			hc_err(errbuf, errlen, "%s: no reply within %d ms", t.name, timeout_ms);
			rc = RF_E_TIMEOUT;
		} else {
			hc_err(errbuf, errlen, "%s closed the connection without a status line",
			       t.name);
			rc = RF_E_PARSE;
		}
		goto out;
	}
	if (status != 200) {
		hc_err(errbuf, errlen, "%s answered %d%s%s", t.name, status, reason[0] ? " " : "",
		       reason);
		rc = RF_E_UNAVAILABLE;
		goto out;
	}
	rc = 0;
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	return rc;
}
