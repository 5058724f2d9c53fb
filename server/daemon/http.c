/*
 * libmicrohttpd glue: the only code that knows MHD. It turns a connection's request into a
 * struct api_request, applies the transport rules (URL and body caps, content type, token,
 * CORS), calls api_dispatch, and queues the reply. MHD runs in external-epoll mode inside the
 * libuv loop: a uv_poll watches MHD's epoll fd and a uv_timer follows MHD_get_timeout, so all
 * request handling happens on the loop thread and the snapshot swap needs no lock.
 *
 * Per-request state (struct rf_req) is created by the URI log callback (the first thing MHD
 * reports of a request, with the raw URI and its query string) and freed in one place, the
 * completed callback, which also writes the request's log line.
 */
#include <arpa/inet.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/err.h"
#include "core/numparse.h"
#include "server/daemon/daemon_priv.h"
#include "server/models/hub.h"
#include "server/log.h"
#include "server/store/store_bench.h"
#include "server/daemon/static_files.h"

/* Bodies that keep coming after the 1 MiB cap are read and dropped up to this much more, so
 * the client can read its 413; past it the connection is closed. */
#define DISCARD_MAX_BYTES (8u << 20)

struct rf_req {
	struct rf_daemon *d;
	uint64_t t0_ns;
	char *uri; /* raw URI with the query string, NUL-terminated */
	size_t uri_len;
	bool started;
	bool replied;
	bool too_large;
	bool over_budget; /* the bodies held at once would pass BODY_BUDGET_BYTES */
	bool has_body;    /* the headers announce a body (Content-Length > 0 or chunked) */
	bool body_done;   /* the whole body (if any) was read */
	size_t discarded;
	size_t held;        /* bytes of d->body_bytes this request accounts for */
	uint64_t body_want; /* the Content-Length, or 0 when chunked or absent */
	struct rf_conn *cn; /* the connection it arrived on (NULL: not tracked) */
	char *body;
	size_t body_len;
	size_t body_cap;
	enum api_method method;
	const struct api_route *route;
	int status;
	const char *allowed_origin; /* the request's Origin when it is allowed */
	struct MHD_Connection *conn;
	struct rf_req *next_waiter; /* in d->scan_waiters while suspended for a rescan */
	bool waiting;
	bool resumed;
	bool abandoned; /* its client left while its Hub lookup ran: close, answer nothing */
	int resume_err; /* 0, or why the awaited scan produced no new snapshot */
	struct rf_write_job *write_job; /* the store write running for it on the thread pool */
	bool write_ready;               /* write_reply holds the write's answer */
	struct api_reply write_reply;
};

/* Connection limits. rigfit holds at most CONN_LIMIT connections, one address at most
 * CONN_PER_IP_LIMIT of them (every local client shares 127.0.0.1: that leaves a load test's
 * 256 connections room for other local clients). libmicrohttpd's own limit is set above ours
 * (CONN_MHD_LIMIT), so that accepting never stops: the listen backlog drains at once and every
 * new connection is admitted or refused by rigfit's rules below, never left queued behind a
 * flood.
 *
 * A client that sends slowly cannot keep its slot: the request line and headers must arrive
 * within --header-timeout seconds and the body within --body-timeout seconds of the headers (a
 * total, not an idle time that each byte resets). A connection that has been waiting for its
 * headers or body for CONN_STALL_NS has stalled (an honest client sends its request the moment
 * it connects); stalled connections are evicted, oldest first and across all addresses:
 * - past CONN_SOFT_LIMIT, the deadline tick evicts them down to it, and each new connection
 *   makes room by closing the oldest;
 * - at CONN_LIMIT a new connection closes the oldest that has waited CONN_STALL_AT_CAP_NS,
 *   and only when none has does the newcomer go.
 * So a liveness probe is served whatever idle or byte-a-second connections hold. Each
 * connection's memory (the request line, the headers and MHD's read buffer) is capped: a URL
 * or header block larger than that is answered by libmicrohttpd itself (414/431). */
#define CONN_LIMIT 1024
#define CONN_MHD_LIMIT (CONN_LIMIT + 256)
#define CONN_SOFT_LIMIT 992
#define CONN_PER_IP_LIMIT 384
#define CONN_STALL_NS (1000ull * 1000 * 1000)
#define CONN_STALL_AT_CAP_NS (250ull * 1000 * 1000)
#define CONN_MEMORY_LIMIT ((size_t)64 * 1024)
#define DEADLINE_TICK_MS 250

/* The request bodies held at once, all connections together; past it a request answers 503
 * with Retry-After (1 MiB bodies on 500 connections would otherwise pin half a GiB). */
#define BODY_BUDGET_BYTES ((size_t)64 << 20)

/* A connection answered before its body was read (413, 415, 401...) is closed by shutting
 * down our side and reading what the client still sends, for up to LINGER_MS and
 * LINGER_MAX_BYTES, so that a client that writes its whole body before reading gets the
 * answer instead of a reset. At most LINGER_MAX connections linger at once. */
#define LINGER_MAX 64
#define LINGER_MS 2000
#define LINGER_MAX_BYTES ((size_t)16 << 20)

enum conn_phase {
	PHASE_HEADERS, /* waiting for a request line and headers */
	PHASE_BODY,    /* headers read, body still arriving */
	PHASE_BUSY,    /* the request is complete: ours to answer, no deadline */
};

/* One accepted connection (MHD's socket context), in d->conns oldest first. */
struct rf_conn {
	struct rf_daemon *d;
	struct MHD_Connection *c;
	int fd;
	int family;
	unsigned char addr[16];
	enum conn_phase phase;
	uint64_t phase_ns;     /* when the phase began */
	bool shut;             /* closed by a deadline or to make room */
	struct rf_req *lookup; /* its request, suspended while a Hub lookup runs for it */
	bool linger;           /* drain what the client still sends after the close */
	struct rf_conn *prev, *next;
};

/* A closed connection still read (and dropped) so its client can read its answer. */
struct rf_linger {
	uv_poll_t poll;
	uv_timer_t timer;
	int fd;
	int open_handles;
	size_t drained;
	struct rf_daemon *d;
	struct rf_linger *prev, *next;
};

/* A forced rescan is allowed at most this often; more answers 429. */
#define RESCAN_MIN_INTERVAL_NS (2ull * 1000 * 1000 * 1000)

static uint64_t now_ns(void)
{
	return uv_hrtime();
}

/* Returns the configured origin equal to the request's Origin header, or NULL. */
static const char *cors_origin(struct rf_daemon *d, struct MHD_Connection *c)
{
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");

	if (!origin)
		return NULL;
	for (int i = 0; i < d->cfg->n_cors_origins; i++)
		if (strcmp(d->cfg->cors_origins[i], origin) == 0 ||
		    strcmp(d->cfg->cors_origins[i], "*") == 0)
			return d->cfg->cors_origins[i];
	return NULL;
}

/* Compares the token without leaking its length or the position of the first difference. */
static bool token_equal(const char *given, const char *want)
{
	size_t gl = strlen(given), wl = strlen(want);
	unsigned char diff = (unsigned char)(gl != wl);

	for (size_t i = 0; i < wl; i++)
		diff |= (unsigned char)(want[i] ^ (i < gl ? given[i] : 0));
	return diff == 0;
}

static bool authorized(struct rf_daemon *d, struct MHD_Connection *c)
{
	const char *h;

	if (!d->cfg->token[0])
		return true;
	h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	h += 7;
	while (*h == ' ')
		h++;
	return token_equal(h, d->cfg->token);
}

static bool is_json_type(const char *ct)
{
	size_t n = strlen("application/json");

	if (!ct || strncasecmp(ct, "application/json", n) != 0)
		return false;
	return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ';
}

static void mhd_run(struct rf_daemon *d);

/* Whether name (a Host header's host part, no port, no trailing dot) is one that a page
 * rebinding its own DNS name to this machine cannot send: localhost, an IP address literal (a
 * browser sends one only for a page whose origin is that address) or an --allowed-host. */
static bool host_name_allowed(const struct rf_daemon *d, const char *name, const char *whole)
{
	unsigned char buf[16];
	size_t n = strlen(name);

	if (strcasecmp(name, "localhost") == 0 || inet_pton(AF_INET, name, buf) == 1 ||
	    strcasecmp(name, d->listen_host) == 0)
		return true;
	if (n > 2 && name[0] == '[' && name[n - 1] == ']') {
		char v6[64];
		if (n - 2 < sizeof(v6)) {
			memcpy(v6, name + 1, n - 2);
			v6[n - 2] = '\0';
			if (inet_pton(AF_INET6, v6, buf) == 1)
				return true;
		}
	}
	for (int i = 0; i < d->cfg->n_allowed_hosts; i++) {
		const char *a = d->cfg->allowed_hosts[i];
		if (strcmp(a, "*") == 0 || strcasecmp(a, name) == 0 || strcasecmp(a, whole) == 0)
			return true;
	}
	return false;
}

/* Whether the Host header h may be served without a token (see host_name_allowed): its host
 * part, with an optional :port of digits. No Host at all (HTTP/1.0) is not a browser's. */
static bool host_allowed(const struct rf_daemon *d, const char *h)
{
	char name[256];
	const char *port;
	size_t n;

	if (!h)
		return true;
	if (h[0] == '[') {
		const char *end = strchr(h, ']');
		if (!end)
			return false;
		n = (size_t)(end - h) + 1;
	} else {
		n = strcspn(h, ":");
	}
	port = h + n;
	if (*port) {
		if (*port != ':' || !port[1] || strspn(port + 1, "0123456789") != strlen(port + 1))
			return false;
	}
	if (n == 0 || n >= sizeof(name))
		return false;
	memcpy(name, h, n);
	name[n] = '\0';
	if (n > 1 && name[n - 1] == '.')
		name[n - 1] = '\0';
	return host_name_allowed(d, name, h);
}

/* Whether origin ("scheme://host[:port]") is the origin of this very request's Host: a page
 * served from here calling its own API, which CORS never restricts. */
static bool origin_is_same(const char *origin, const char *host)
{
	const char *sep = strstr(origin, "://");

	return host && sep && strcasecmp(sep + 3, host) == 0;
}

struct cl_scan {
	const char *first;
	bool conflict;
};

static enum MHD_Result cl_iter(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *value)
{
	struct cl_scan *cs = cls;

	(void)kind;
	if (!key || !value || strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0)
		return MHD_YES;
	if (!cs->first)
		cs->first = value;
	else if (strcmp(cs->first, value) != 0)
		cs->conflict = true;
	return MHD_YES;
}

/* Whether the request carries two different Content-Length headers (RFC 9112 6.3: a message
 * that cannot be framed, answered 400 and closed). */
static bool content_length_conflict(struct MHD_Connection *c)
{
	struct cl_scan cs = {NULL, false};

	MHD_get_connection_values(c, MHD_HEADER_KIND, cl_iter, &cs);
	return cs.conflict;
}

/* Accounts for the request body growing to total bytes against the shared budget. Returns
 * false (nothing taken) when that would pass BODY_BUDGET_BYTES. */
static bool budget_take(struct rf_req *r, size_t total)
{
	struct rf_daemon *d = r->d;
	size_t extra;

	if (total <= r->held)
		return true;
	extra = total - r->held;
	if (d->body_bytes + extra > BODY_BUDGET_BYTES)
		return false;
	d->body_bytes += extra;
	r->held = total;
	return true;
}

static void budget_release(struct rf_req *r)
{
	r->d->body_bytes -= r->held;
	r->held = 0;
}

static struct rf_conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

static void conn_phase(struct rf_conn *cn, enum conn_phase phase)
{
	if (!cn)
		return;
	cn->phase = phase;
	cn->phase_ns = now_ns();
}

/* Closes a connection from our side: MHD sees the socket shut down at its next run, aborts
 * the request and reports it completed and closed. */
static void conn_shut(struct rf_conn *cn, const char *why)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (cn->shut)
		return;
	cn->shut = true;
	inet_ntop(cn->family, cn->addr, ip, sizeof(ip));
	rf_log_info("http: closing a connection from %s: %s", ip, why);
	shutdown(cn->fd, SHUT_RDWR);
}

static bool conn_same_addr(const struct rf_conn *a, const struct rf_conn *b)
{
	return a->family == b->family &&
	       memcmp(a->addr, b->addr, a->family == AF_INET6 ? 16 : 4) == 0;
}

/* Returns whether k waits for its headers or body and has for at least stall_ns. */
static bool conn_stalled(const struct rf_conn *k, uint64_t now, uint64_t stall_ns)
{
	return !k->shut && k->phase != PHASE_BUSY && now - k->phase_ns >= stall_ns;
}

/* Applies the connection limits to the connection nc just accepted (see CONN_LIMIT). */
static void conn_admit(struct rf_daemon *d, struct rf_conn *nc)
{
	uint64_t now = now_ns();
	struct rf_conn *stale_ip = NULL, *stale_any = NULL, *waited_any = NULL;
	int same = 0, live = 0;

	for (struct rf_conn *k = d->conns; k; k = k->next) {
		if (k == nc || k->shut)
			continue;
		live++;
		if (conn_same_addr(k, nc)) {
			same++;
			if (!stale_ip && conn_stalled(k, now, CONN_STALL_NS))
				stale_ip = k;
		}
		if (!stale_any && conn_stalled(k, now, CONN_STALL_NS))
			stale_any = k;
		if (!waited_any && conn_stalled(k, now, CONN_STALL_AT_CAP_NS))
			waited_any = k;
	}
	if (same >= CONN_PER_IP_LIMIT) {
		if (stale_ip)
			conn_shut(stale_ip, "the oldest stalled connection of an address at its "
					    "cap makes room for a new one");
		else
			conn_shut(nc, "the address holds as many connections as it may");
	} else if (live >= CONN_LIMIT) {
		if (waited_any)
			conn_shut(waited_any, "the oldest waiting connection makes room for a new "
					      "one at the connection cap");
		else
			conn_shut(nc, "the daemon holds as many connections as it may");
	} else if (live >= CONN_SOFT_LIMIT && stale_any) {
		conn_shut(stale_any, "the oldest stalled connection makes room for a new one");
	}
}

static void linger_handle_closed(uv_handle_t *h)
{
	struct rf_linger *l = h->data;

	if (--l->open_handles > 0)
		return;
	close(l->fd);
	free(l);
}

static void linger_end(struct rf_linger *l)
{
	struct rf_daemon *d = l->d;

	if (uv_is_closing((uv_handle_t *)&l->poll))
		return;
	if (l->prev)
		l->prev->next = l->next;
	else
		d->lingers = l->next;
	if (l->next)
		l->next->prev = l->prev;
	d->n_lingers--;
	uv_close((uv_handle_t *)&l->poll, linger_handle_closed);
	uv_close((uv_handle_t *)&l->timer, linger_handle_closed);
}

static void on_linger_read(uv_poll_t *h, int status, int events)
{
	struct rf_linger *l = h->data;
	char buf[16384];
	ssize_t got;

	(void)events;
	if (status < 0) {
		linger_end(l);
		return;
	}
	while ((got = read(l->fd, buf, sizeof(buf))) > 0) {
		l->drained += (size_t)got;
		if (l->drained > LINGER_MAX_BYTES) {
			linger_end(l);
			return;
		}
	}
	if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		linger_end(l);
}

static void on_linger_timeout(uv_timer_t *t)
{
	linger_end(t->data);
}

/* Keeps reading a connection that MHD is about to close (see LINGER_MS). */
static void linger_start(struct rf_daemon *d, int fd)
{
	struct rf_linger *l;
	int dup_fd;

	if (d->n_lingers >= LINGER_MAX || d->stopping)
		return;
	dup_fd = dup(fd);
	if (dup_fd < 0)
		return;
	l = calloc(1, sizeof(*l));
	if (!l || uv_poll_init(&d->loop, &l->poll, dup_fd) != 0) {
		free(l);
		close(dup_fd);
		return;
	}
	/* Our answer is sent: the FIN after it tells the client nothing more comes. */
	shutdown(dup_fd, SHUT_WR);
	l->fd = dup_fd;
	l->d = d;
	l->open_handles = 2;
	l->poll.data = l;
	uv_timer_init(&d->loop, &l->timer);
	l->timer.data = l;
	l->next = d->lingers;
	if (d->lingers)
		d->lingers->prev = l;
	d->lingers = l;
	d->n_lingers++;
	uv_poll_start(&l->poll, UV_READABLE | UV_DISCONNECT, on_linger_read);
	uv_timer_start(&l->timer, on_linger_timeout, LINGER_MS, 0);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct rf_daemon *d = cls;
	struct rf_conn *cn = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *fdi =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *ai =
			MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);

		cn = calloc(1, sizeof(*cn));
		if (!cn)
			return;
		cn->d = d;
		cn->c = c;
		cn->fd = fdi ? fdi->connect_fd : -1;
		if (ai && ai->client_addr) {
			cn->family = ai->client_addr->sa_family;
			if (cn->family == AF_INET6)
				memcpy(cn->addr,
				       &((const struct sockaddr_in6 *)(const void *)ai->client_addr)
						->sin6_addr,
				       16);
			else
				memcpy(cn->addr,
				       &((const struct sockaddr_in *)(const void *)ai->client_addr)
						->sin_addr,
				       4);
		}
		conn_phase(cn, PHASE_HEADERS);
		cn->prev = d->conns_tail;
		if (d->conns_tail)
			d->conns_tail->next = cn;
		else
			d->conns = cn;
		d->conns_tail = cn;
		d->n_conns++;
		*socket_context = cn;
		if (cn->fd >= 0)
			conn_admit(d, cn);
		return;
	}
	if (!cn)
		return;
	if (cn->linger && !cn->shut && cn->fd >= 0)
		linger_start(d, cn->fd);
	if (cn->prev)
		cn->prev->next = cn->next;
	else
		d->conns = cn->next;
	if (cn->next)
		cn->next->prev = cn->prev;
	else
		d->conns_tail = cn->prev;
	d->n_conns--;
	/* libmicrohttpd takes its listening socket back into its epoll set only in a later run:
	 * with nothing else to wake it, a daemon whose connections all closed would stop
	 * accepting. */
	d->mhd_rerun = true;
	free(cn);
	*socket_context = NULL;
}

/* Whether the client of a suspended connection has gone (closed or reset): libmicrohttpd does
 * not watch suspended connections, so nothing else would tell. */
static bool client_gone(int fd)
{
	char c;
	ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* The client of k left while a Hub lookup ran for its request: the lookup is cancelled and the
 * connection closed without an answer. */
static void lookup_abandon(struct rf_conn *k)
{
	struct rf_req *r = k->lookup;

	k->lookup = NULL;
	rf_write_detach(r->write_job);
	r->write_job = NULL;
	r->abandoned = true;
	conn_shut(k, "the client went away while its Hub lookup ran");
	MHD_resume_connection(r->conn);
}

/* Gives the heap's free pages back to the system once requests have stopped for IDLE_TRIM_NS:
 * a burst of requests leaves malloc holding what they freed (2-3 MiB after make bench's load,
 * in the arenas of the loop and the worker threads), which the next burst would reuse but an
 * idle daemon should not keep. A trim walks the free chunks once (about a millisecond); it
 * runs only while nothing is in flight, at most once per burst. */
#define IDLE_TRIM_NS (1000ull * 1000 * 1000)

static void trim_when_idle(struct rf_daemon *d, uint64_t now)
{
	if (!d->heap_dirty || d->in_flight > 0 || now - d->last_done_ns < IDLE_TRIM_NS)
		return;
	d->heap_dirty = false;
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/* Closes the connections past their header or body deadline, then the oldest stalled ones
 * while more than CONN_SOFT_LIMIT are open (see CONN_LIMIT); gives the heap back when idle. */
static void on_deadline_tick(uv_timer_t *t)
{
	struct rf_daemon *d = t->data;
	uint64_t now = now_ns();
	uint64_t head_ns = (uint64_t)d->cfg->header_timeout_s * 1000000000ull;
	uint64_t body_ns = (uint64_t)d->cfg->body_timeout_s * 1000000000ull;
	bool closed = false;
	int live = 0;

	for (struct rf_conn *k = d->conns; k; k = k->next) {
		if (k->shut || k->fd < 0) {
			live += !k->shut;
			continue;
		}
		if (k->phase == PHASE_HEADERS && now - k->phase_ns > head_ns) {
			conn_shut(k, "no complete request headers within --header-timeout");
			closed = true;
		} else if (k->phase == PHASE_BODY && now - k->phase_ns > body_ns) {
			conn_shut(k, "the request body did not arrive within --body-timeout");
			closed = true;
		} else {
			live++;
		}
	}
	for (struct rf_conn *k = d->conns; k; k = k->next)
		if (k->lookup && !k->shut && k->fd >= 0 && client_gone(k->fd)) {
			lookup_abandon(k);
			closed = true;
		}
	for (struct rf_conn *k = d->conns; k && live > CONN_SOFT_LIMIT; k = k->next) {
		if (k->fd < 0 || !conn_stalled(k, now, CONN_STALL_NS))
			continue;
		conn_shut(k, "the oldest stalled connection makes room past the soft cap");
		closed = true;
		live--;
	}
	if (closed)
		mhd_run(d);
	trim_when_idle(d, now);
}

/* Queues resp (consumed) on c with reply's status and headers and the common ones. */
static enum MHD_Result send_response(struct rf_req *r, struct MHD_Connection *c,
				     struct MHD_Response *resp, struct api_reply *reply,
				     const char *extra_name, const char *extra_value)
{
	struct rf_daemon *d = r->d;
	enum MHD_Result ok;
	double secs;

	if (reply->content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, reply->content_type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (reply->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, reply->allow);
	if (reply->retry_after_s > 0) {
		char ra[16];
		snprintf(ra, sizeof(ra), "%d", reply->retry_after_s);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	if (extra_name)
		MHD_add_response_header(resp, extra_name, extra_value);
	if (reply->mcp_session[0])
		MHD_add_response_header(resp, "Mcp-Session-Id", reply->mcp_session);
	if (r->allowed_origin) {
		MHD_add_response_header(resp, "Access-Control-Expose-Headers", "Mcp-Session-Id");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN,
					r->allowed_origin);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Origin");
	}
	if (r->has_body && !r->body_done && r->cn) {
		/* Answered before the body was read: the rest of it cannot be told from a next
		 * request, so the connection closes, lingering for a client that writes first. */
		r->cn->linger = true;
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	} else if (d->stopping) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
	}
	ok = MHD_queue_response(c, (unsigned)reply->status, resp);
	MHD_destroy_response(resp);
	r->status = reply->status;
	r->replied = true;
	secs = (double)(now_ns() - r->t0_ns) / 1e9;
	api_metrics_observe(d->metrics, r->route ? r->route->path : NULL, r->method, reply->status,
			    secs);
	api_reply_reset(reply);
	return ok;
}

/* Queues reply on c with the common headers. Takes the reply's owned body. */
static enum MHD_Result send_reply(struct rf_req *r, struct MHD_Connection *c,
				  struct api_reply *reply, const char *extra_name,
				  const char *extra_value)
{
	struct MHD_Response *resp;

	if (reply->body) {
		resp = MHD_create_response_from_buffer(reply->len, reply->body,
						       MHD_RESPMEM_MUST_FREE);
		if (resp)
			reply->body = NULL;
	} else {
		resp = MHD_create_response_from_buffer(reply->len, (void *)reply->borrowed_body,
						       MHD_RESPMEM_MUST_COPY);
	}
	if (!resp) {
		api_reply_reset(reply);
		return MHD_NO;
	}
	return send_response(r, c, resp, reply, extra_name, extra_value);
}

static enum MHD_Result send_error(struct rf_req *r, struct MHD_Connection *c, int err,
				  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Queues the error envelope of err; fmt NULL uses the table's message. */
static enum MHD_Result send_error(struct rf_req *r, struct MHD_Connection *c, int err,
				  const char *fmt, ...)
{
	struct api_reply reply = {0};
	char msg[512];
	va_list ap;

	if (fmt) {
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		api_error(&reply, err, NULL, "%s", msg);
	} else {
		api_error(&reply, err, NULL, NULL);
	}
	return send_reply(r, c, &reply, NULL, NULL);
}

/* Queues a 200 that streams file (its descriptor is the response's from here on) with the
 * common headers: MHD sends it with sendfile, so no copy of it is held in memory. */
static enum MHD_Result send_file(struct rf_req *r, struct MHD_Connection *c,
				 struct rf_static_file *file)
{
	struct api_reply reply = {.status = 200, .content_type = file->type};
	struct MHD_Response *resp = MHD_create_response_from_fd64(file->size, file->fd);

	if (!resp) {
		close(file->fd);
		return send_error(r, c, RF_E_NOMEM, NULL);
	}
	return send_response(r, c, resp, &reply, NULL, NULL);
}

/* Answers OPTIONS: a CORS preflight for an allowed origin, or the Allow list. */
static enum MHD_Result send_options(struct rf_req *r, struct MHD_Connection *c, unsigned allowed)
{
	struct api_reply reply = {0};
	const char *req_method =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Access-Control-Request-Method");
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	struct MHD_Response *resp;
	char methods[64] = "";
	size_t used = 0;
	enum MHD_Result ok;

	if (origin && req_method && !r->allowed_origin)
		return send_error(r, c, RF_E_FORBIDDEN, "origin %s is not allowed", origin);
	for (unsigned bit = 1; bit <= API_HEAD; bit <<= 1)
		if (allowed & bit)
			used += (size_t)snprintf(methods + used, sizeof(methods) - used, "%s%s",
						 used ? ", " : "", api_method_name(bit));
	resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, methods);
	if (r->allowed_origin) {
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ACCESS_CONTROL_ALLOW_ORIGIN,
					r->allowed_origin);
		MHD_add_response_header(resp, "Access-Control-Allow-Methods", methods);
		MHD_add_response_header(resp, "Access-Control-Allow-Headers",
					"Authorization, Content-Type, Mcp-Session-Id, "
					"MCP-Protocol-Version");
		MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
		MHD_add_response_header(resp, MHD_HTTP_HEADER_VARY, "Origin");
	}
	ok = MHD_queue_response(c, MHD_HTTP_NO_CONTENT, resp);
	MHD_destroy_response(resp);
	r->status = MHD_HTTP_NO_CONTENT;
	r->replied = true;
	api_metrics_observe(r->d->metrics, r->route ? r->route->path : NULL, API_OPTIONS,
			    MHD_HTTP_NO_CONTENT, (double)(now_ns() - r->t0_ns) / 1e9);
	api_reply_reset(&reply);
	return ok;
}

/* The first call for a request: everything that can be decided from the headers. Returns
 * MHD_YES with r->replied set when it answered. */
static enum MHD_Result on_headers(struct rf_req *r, struct MHD_Connection *c, const char *method)
{
	struct rf_daemon *d = r->d;
	const char *qmark, *id;
	char path[API_MAX_URL_BYTES + 1];
	size_t plen, id_len;
	unsigned allowed = 0;
	const char *cl =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
	const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");

	r->started = true;
	r->cn = conn_of(c);
	r->method = api_method_parse(method);
	r->allowed_origin = cors_origin(d, c);
	r->has_body = (cl && strcmp(cl, "0") != 0) ||
		      MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						  MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
	if (content_length_conflict(c))
		return send_error(r, c, RF_E_BAD_REQUEST,
				  "the request has two different Content-Length headers");
	if (r->uri_len > API_MAX_URL_BYTES)
		return send_error(r, c, RF_E_URI_TOO_LONG,
				  "the request URL is longer than %d bytes", API_MAX_URL_BYTES);
	qmark = strchr(r->uri, '?');
	plen = qmark ? (size_t)(qmark - r->uri) : r->uri_len;
	memcpy(path, r->uri, plen);
	path[plen] = '\0';

	r->route = api_route_find(r->method == API_OPTIONS ? API_GET : r->method, path, &allowed,
				  &id, &id_len);
	/* Without a token, a page that rebinds its DNS name to this machine could use the API
	 * from a browser: serve only Host names that cannot be rebound (liveness stays open). */
	if (!d->cfg->token[0] && !(r->route && (r->route->flags & API_ROUTE_PUBLIC)) &&
	    !host_allowed(d, host)) {
		struct api_reply reply = {0};
		api_error(&reply, RF_E_FORBIDDEN, "Host",
			  "Host '%.200s' is not this machine's name; use localhost or an address, "
			  "or start rigfit with --allowed-host",
			  host);
		return send_reply(r, c, &reply, NULL, NULL);
	}
	/* A browser sends a "simple" cross-origin request without a preflight; refuse it as the
	 * preflight would be refused, before it has any effect. */
	if (r->method != API_OPTIONS && origin && !r->allowed_origin &&
	    !origin_is_same(origin, host))
		return send_error(r, c, RF_E_FORBIDDEN,
				  "origin %.200s is not allowed (see --cors-origin)", origin);
	if (r->method == API_OPTIONS) {
		r->route = NULL;
		/* An allowed origin's preflight is answered on any path, so a browser reports the
		 * real answer (a JSON 404, say) instead of a CORS failure. */
		if (!allowed && r->allowed_origin &&
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						"Access-Control-Request-Method"))
			allowed = API_GET | API_POST | API_PUT | API_DELETE;
		if (!allowed)
			return send_error(r, c, RF_E_NOT_FOUND, "no route for %s", path);
		return send_options(r, c, allowed | API_OPTIONS);
	}
	/* --static-dir: the web app's files in place of the embedded page; /api/ stays the API,
	 * and so does every path a route knows (GET /mcp is the 405 of POST /mcp, not a page). */
	if (d->cfg->static_dir[0] && (r->method == API_GET || r->method == API_HEAD) &&
	    ((!r->route && !allowed) || (r->route && (r->route->handler == api_ui_index ||
						      r->route->handler == api_ui_asset)))) {
		struct api_reply reply = {0};
		struct rf_static_file file;
		if (rf_static_reply(d->cfg->static_dir, path, &file, &reply) == 0)
			return file.fd >= 0 ? send_file(r, c, &file) :
					      send_reply(r, c, &reply, NULL, NULL);
	}
	if (!r->route) {
		struct api_reply reply = {0};
		if (allowed)
			api_error_method(&reply, allowed);
		else
			api_error(&reply, RF_E_NOT_FOUND, NULL, "no route for %.200s", path);
		return send_reply(r, c, &reply, NULL, NULL);
	}
	if (!(r->route->flags & API_ROUTE_PUBLIC) && !authorized(d, c)) {
		struct api_reply reply = {0};
		api_error(&reply, RF_E_UNAUTHORIZED, NULL,
			  "this route needs an Authorization: Bearer token");
		return send_reply(r, c, &reply, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
				  "Bearer realm=\"rigfit\"");
	}
	if (cl) {
		uint64_t n;
		/* MHD has already rejected a malformed Content-Length; only its size matters. */
		if (rf_parse_u64_str(cl, UINT64_MAX, &n) < 0 || n > API_MAX_BODY_BYTES)
			return send_error(r, c, RF_E_BODY_TOO_LARGE, NULL);
		r->body_want = n;
	}
	/* A body, when there is one, must be JSON; a POST without a body needs no type. */
	if ((r->method == API_POST || r->method == API_PUT) &&
	    ((cl && strcmp(cl, "0") != 0) ||
	     MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))) {
		const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_TYPE);
		if (!is_json_type(ct))
			return send_error(r, c, RF_E_UNSUPPORTED_MEDIA_TYPE,
					  "the request body must be application/json, not %s",
					  ct ? ct : "(none)");
	}
	conn_phase(r->cn, r->has_body ? PHASE_BODY : PHASE_BUSY);
	return MHD_YES;
}

/* Appends n bytes of body. Past the size cap or the shared budget the body is dropped and
 * the rest read and discarded, so that the client reads the answer; returns false when even
 * that is too much (then answer at once) or memory ran out. */
static bool body_append(struct rf_req *r, const char *data, size_t n)
{
	if (!r->over_budget && (r->too_large || r->body_len + n > API_MAX_BODY_BYTES))
		r->too_large = true;
	if (r->too_large || r->over_budget) {
		r->discarded += n;
		return r->discarded <= DISCARD_MAX_BYTES;
	}
	if (r->body_len + n + 1 > r->body_cap) {
		size_t cap = r->body_cap ? r->body_cap : 4096;
		char *nb;
		while (cap < r->body_len + n + 1)
			cap *= 2;
		/* A declared length is all the body needs: no doubling past it. */
		if (r->body_want && r->body_want + 1 >= r->body_len + n + 1 &&
		    cap > r->body_want + 1)
			cap = (size_t)r->body_want + 1;
		if (!budget_take(r, cap)) {
			r->over_budget = true;
			free(r->body);
			r->body = NULL;
			r->body_len = r->body_cap = 0;
			budget_release(r);
			r->discarded += n;
			return true;
		}
		nb = realloc(r->body, cap);
		if (!nb)
			return false;
		r->body = nb;
		r->body_cap = cap;
	}
	memcpy(r->body + r->body_len, data, n);
	r->body_len += n;
	r->body[r->body_len] = '\0';
	return true;
}

/* Suspends the connection until the next scan finishes (starting one unless one runs). */
static enum MHD_Result wait_for_scan(struct rf_req *r, struct MHD_Connection *c,
				     struct api_reply *reply)
{
	struct rf_daemon *d = r->d;
	uint64_t now = now_ns();

	api_reply_reset(reply);
	if (d->stopping)
		return send_error(r, c, RF_E_UNAVAILABLE, "the daemon is stopping");
	if (!d->scan_job && d->last_forced_scan_ns &&
	    now - d->last_forced_scan_ns < RESCAN_MIN_INTERVAL_NS) {
		api_error(reply, RF_E_RATE_LIMITED, NULL,
			  "a rescan ran less than %llu s ago; retry later",
			  RESCAN_MIN_INTERVAL_NS / 1000000000ull);
		reply->retry_after_s = (int)(RESCAN_MIN_INTERVAL_NS / 1000000000ull);
		return send_reply(r, c, reply, NULL, NULL);
	}
	if (!d->scan_job) {
		d->last_forced_scan_ns = now;
		rf_scan_start(d);
		if (!d->scan_job)
			return send_error(r, c, RF_E_UNAVAILABLE, "could not start a scan");
	}
	r->conn = c;
	r->waiting = true;
	r->next_waiter = d->scan_waiters;
	d->scan_waiters = r;
	MHD_suspend_connection(c);
	return MHD_YES;
}

void rf_http_resume_waiters(struct rf_daemon *d, int why)
{
	struct rf_req *r = d->scan_waiters;

	d->scan_waiters = NULL;
	while (r) {
		struct rf_req *next = r->next_waiter;
		r->waiting = false;
		r->resumed = true;
		r->resume_err = why;
		r->next_waiter = NULL;
		MHD_resume_connection(r->conn);
		r = next;
	}
	/* A resumed connection is only picked up by the next MHD_run: run it now rather than
	 * at MHD's next timeout. */
	mhd_run(d);
}

/* Sets reply to the answer of a request whose body was dropped: 413 past the size cap, 503
 * past the budget. */
static void body_refusal(const struct rf_req *r, struct api_reply *reply)
{
	if (r->too_large) {
		api_error(reply, RF_E_BODY_TOO_LARGE, NULL, NULL);
		return;
	}
	api_error(reply, RF_E_UNAVAILABLE, NULL,
		  "the server holds too many request bodies at once; retry shortly");
	reply->retry_after_s = 1;
}

/* Answers a request whose body was dropped, once the whole body has arrived. */
static enum MHD_Result send_body_refusal(struct rf_req *r, struct MHD_Connection *c)
{
	struct api_reply reply = {0};

	body_refusal(r, &reply);
	return send_reply(r, c, &reply, NULL, NULL);
}

/* Answers a request whose body is still arriving past DISCARD_MAX_BYTES (a chunked body has no
 * length to refuse up front): libmicrohttpd queues a reply only before a body or after it, so
 * the answer (the same envelope and headers as send_reply's, Connection: close) is written to
 * the socket here, and MHD_NO has libmicrohttpd close the connection, which lingers so that
 * the client reads the answer rather than a reset. The socket holds nothing else at this
 * point: the previous reply on it was sent before this request's headers were read. */
static enum MHD_Result send_body_refusal_now(struct rf_req *r)
{
	struct api_reply reply = {0};
	const char *body;
	char head[1024];
	int n;

	body_refusal(r, &reply);
	body = reply.body ? reply.body : reply.borrowed_body;
	n = snprintf(head, sizeof(head),
		     "HTTP/1.1 %d %s\r\nConnection: close\r\nContent-Length: %zu\r\n"
		     "Content-Type: %s\r\nCache-Control: no-store\r\n"
		     "X-Content-Type-Options: nosniff\r\n",
		     reply.status, MHD_get_reason_phrase_for((unsigned)reply.status), reply.len,
		     reply.content_type ? reply.content_type : "application/json");
	if (n > 0 && (size_t)n < sizeof(head) && reply.retry_after_s > 0)
		n += snprintf(head + n, sizeof(head) - (size_t)n, "Retry-After: %d\r\n",
			      reply.retry_after_s);
	if (n > 0 && (size_t)n < sizeof(head) && r->allowed_origin)
		n += snprintf(head + n, sizeof(head) - (size_t)n,
			      "Access-Control-Allow-Origin: %.300s\r\nVary: Origin\r\n",
			      r->allowed_origin);
	if (n > 0 && (size_t)n + 2 < sizeof(head) && r->cn && r->cn->fd >= 0 && body) {
		memcpy(head + n, "\r\n", 2);
		/* A few hundred bytes into an empty socket buffer: a short write is not retried. */
		if (send(r->cn->fd, head, (size_t)n + 2, MSG_NOSIGNAL | MSG_DONTWAIT) == n + 2)
			send(r->cn->fd, body, reply.len, MSG_NOSIGNAL | MSG_DONTWAIT);
		r->cn->linger = true;
	}
	r->status = reply.status;
	r->replied = true;
	api_metrics_observe(r->d->metrics, r->route ? r->route->path : NULL, r->method,
			    reply.status, (double)(now_ns() - r->t0_ns) / 1e9);
	api_reply_reset(&reply);
	return MHD_NO;
}

void rf_http_write_done(struct rf_daemon *d, void *ctx, struct api_reply *reply,
			const struct api_route *route)
{
	struct rf_req *r = ctx;

	if (r->cn && r->cn->lookup == r)
		r->cn->lookup = NULL;
	r->write_job = NULL;
	r->write_reply = *reply;
	memset(reply, 0, sizeof(*reply));
	r->route = route;
	r->write_ready = true;
	MHD_resume_connection(r->conn);
	mhd_run(d);
}

/* A route that may look its model up on the Hub runs on the loop with this reader in place of
 * the lookup: a stored answer serves at once; a model only the Hub can answer marks the
 * request (wanted), whose reply is then dropped and the request run again on the thread pool
 * with the real lookup (rf_write_start), so that a slow Hub holds up no other request. Model
 * files on this host (a GGUF header, a model folder, the Hugging Face cache, Ollama's store)
 * are read there too (files_wanted): a slow disk or a large header holds up nothing either. */
struct hub_defer {
	void *hub;
	bool wanted;
	bool files_wanted;
};

/* Marks the request for the thread pool and answers "not here", so that the resolver goes on
 * to the Hub where it would (the lookup is then counted, and capped, as one). */
static int file_defer(struct hub_defer *hd, char *msg, size_t msglen)
{
	hd->files_wanted = true;
	snprintf(msg, msglen, "read off the loop");
	return RF_E_NOT_FOUND;
}

static int read_model_deferred(void *ctx, const char *path, char **buf, size_t *len,
			       uint64_t *file_size, char *msg, size_t msglen)
{
	(void)path;
	(void)buf;
	(void)len;
	(void)file_size;
	return file_defer(ctx, msg, msglen);
}

static int read_model_dir_deferred(void *ctx, int kind, const char *path, struct api_model_dir *out,
				   char *msg, size_t msglen)
{
	(void)kind;
	(void)path;
	(void)out;
	return file_defer(ctx, msg, msglen);
}

static int hub_read_or_defer(void *ctx, int kind, const char *id, struct api_model_dir *out,
			     char *msg, size_t msglen)
{
	struct hub_defer *hd = ctx;
	int rc = rf_hub_read_stored(hd->hub, kind, id, out, msg, msglen);

	if (rc != RF_E_NOT_FOUND)
		return rc;
	hd->wanted = true;
	snprintf(msg, msglen, "looked up on the Hub off the loop");
	return RF_E_UNAVAILABLE;
}

/* Runs req on the thread pool (a store write, or a Hub lookup) with the connection suspended
 * until rf_http_write_done answers it. */
static enum MHD_Result run_off_loop(struct rf_req *r, struct MHD_Connection *c,
				    const struct api_request *req, bool hub_lookup)
{
	int rc;

	if (hub_lookup && r->d->hub_jobs >= RF_HUB_JOBS_MAX) {
		struct api_reply reply = {0};

		api_error(&reply, RF_E_UNAVAILABLE, "model.id",
			  "%d Hub lookups are under way already; retry shortly", RF_HUB_JOBS_MAX);
		reply.retry_after_s = 1;
		return send_reply(r, c, &reply, NULL, NULL);
	}
	rc = rf_write_start(r->d, req, r, hub_lookup, &r->write_job);
	if (rc < 0)
		return send_error(r, c, rc, NULL);
	if (hub_lookup && r->cn)
		r->cn->lookup = r;
	r->conn = c;
	MHD_suspend_connection(c);
	return MHD_YES;
}

/* The request headers, for handlers that read some (POST /mcp). */
static const char *request_header(void *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

static enum MHD_Result on_request_done(struct rf_req *r, struct MHD_Connection *c)
{
	struct rf_daemon *d = r->d;
	struct api_request req = {0};
	struct api_reply reply = {0};
	struct api_env env;
	struct hub_defer hub = {0};
	struct api_ft_session session, *d_session = NULL;
	const char *qmark = strchr(r->uri, '?');
	char path[API_MAX_URL_BYTES + 1];
	size_t plen = qmark ? (size_t)(qmark - r->uri) : r->uri_len;

	if (r->abandoned)
		return MHD_NO;
	if (r->write_ready) {
		r->write_ready = false;
		return send_reply(r, c, &r->write_reply, NULL, NULL);
	}
	r->body_done = true;
	conn_phase(r->cn, PHASE_BUSY);
	if (r->too_large || r->over_budget)
		return send_body_refusal(r, c);
	memcpy(path, r->uri, plen);
	path[plen] = '\0';
	req.method = r->method;
	req.path = path;
	req.query = qmark ? qmark + 1 : "";
	req.body = r->body;
	req.body_len = r->body_len;
	req.header = request_header;
	req.header_ctx = c;
	if (r->cn && !inet_ntop(r->cn->family, r->cn->addr, req.client, sizeof(req.client)))
		req.client[0] = '\0';
	rf_daemon_env(d, &env);
	if (r->resumed) {
		/* Back from waiting for a rescan: the new snapshot, or why there is none. */
		if (r->resume_err == RF_E_IO)
			return send_error(r, c, RF_E_UNAVAILABLE,
					  "the scan failed; the previous snapshot is still served "
					  "by GET /api/hardware");
		if (r->resume_err < 0)
			return send_error(r, c, RF_E_UNAVAILABLE, "the daemon is stopping");
		api_hardware_get(&env, &req, &reply);
		return send_reply(r, c, &reply, NULL, NULL);
	}
	/* A write may wait for another process's lock: never on the loop thread. */
	if (rf_write_route(r->route, r->method))
		return run_off_loop(r, c, &req, false);
	if (r->route && (r->route->flags & API_ROUTE_HUB_LOOKUP)) {
		if (env.io.read_hub) {
			hub.hub = env.io.read_hub_ctx;
			env.io.read_hub = hub_read_or_defer;
			env.io.read_hub_ctx = &hub;
		}
		if (env.io.read_model) {
			env.io.read_model = read_model_deferred;
			env.io.read_model_ctx = &hub;
		}
		if (env.io.read_model_dir) {
			env.io.read_model_dir = read_model_dir_deferred;
			env.io.read_model_dir_ctx = &hub;
		}
		if (env.io.read_ollama) {
			env.io.read_ollama = read_model_deferred;
			env.io.read_ollama_ctx = &hub;
		}
		/* A run whose answer is dropped for the thread pool must leave no trace on the
		 * session either (set_custom_model's choice): it works on a copy. */
		if (env.session) {
			d_session = env.session;
			memcpy(&session, d_session, sizeof(session));
			env.session = &session;
		}
	}
	r->route = api_dispatch(&env, &req, &reply);
	if (hub.wanted || hub.files_wanted) {
		api_reply_reset(&reply);
		return run_off_loop(r, c, &req, hub.wanted);
	}
	/* The answer stands: so does what it changed. */
	if (env.session == &session)
		memcpy(d_session, &session, sizeof(session));
	if (reply.wait_for_scan)
		return wait_for_scan(r, c, &reply);
	return send_reply(r, c, &reply, NULL, NULL);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *c, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **con_cls)
{
	struct rf_req *r = *con_cls;
	static const char nomem[] =
		"{\"error\":{\"code\":\"out_of_memory\",\"message\":\"the server is out of memory\"}}";

	(void)cls;
	(void)url;
	(void)version;
	if (!r) {
		/* The URI callback could not allocate: answer without per-request state. */
		struct MHD_Response *resp = MHD_create_response_from_buffer(
			sizeof(nomem) - 1, (void *)nomem, MHD_RESPMEM_PERSISTENT);
		enum MHD_Result ok;
		if (!resp)
			return MHD_NO;
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		ok = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, resp);
		MHD_destroy_response(resp);
		return ok;
	}
	if (!r->started)
		return on_headers(r, c, method);
	if (r->replied) {
		/* An early error was queued; drop whatever body still arrives. */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		bool ok = body_append(r, upload_data, *upload_data_size);

		*upload_data_size = 0;
		if (!ok && (r->too_large || r->over_budget))
			return send_body_refusal_now(r);
		return ok ? MHD_YES : MHD_NO;
	}
	return on_request_done(r, c);
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct rf_daemon *d = cls;
	struct rf_req *r = calloc(1, sizeof(*r));
	size_t n = strlen(uri);

	(void)c;
	if (!r)
		return NULL;
	r->d = d;
	r->t0_ns = now_ns();
	r->uri_len = n;
	/* Past the URL cap only the length matters; keep a bounded copy for the log line. */
	r->uri = strndup(uri, n > API_MAX_URL_BYTES ? 256 : n);
	if (!r->uri) {
		free(r);
		return NULL;
	}
	d->in_flight++;
	return r;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct rf_daemon *d = cls;
	struct rf_req *r = *con_cls;
	const char *method = r ? api_method_name(r->method) : "?";

	(void)c;
	if (!r)
		return;
	rf_log_info("http %s %.200s %d %lluus%s", r->method ? method : "-", r->uri, r->status,
		    (unsigned long long)((now_ns() - r->t0_ns) / 1000),
		    toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (aborted)");
	d->in_flight--;
	d->last_done_ns = now_ns();
	d->heap_dirty = true;
	budget_release(r);
	rf_write_detach(r->write_job);
	if (r->cn && r->cn->lookup == r)
		r->cn->lookup = NULL;
	api_reply_reset(&r->write_reply);
	if (r->cn && !r->cn->shut)
		conn_phase(r->cn, PHASE_HEADERS);
	if (r->waiting) {
		struct rf_req **pp = &d->scan_waiters;
		while (*pp && *pp != r)
			pp = &(*pp)->next_waiter;
		if (*pp)
			*pp = r->next_waiter;
	}
	free(r->body);
	free(r->uri);
	free(r);
	*con_cls = NULL;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	rf_log_debug("mhd: %s", line);
}

/* Runs MHD's pending work; called when its epoll fd is readable or its timeout expires. */
/* One turn of the HTTP server: the requests that arrived together are answered. */
static void mhd_run(struct rf_daemon *d)
{
	if (!d->mhd)
		return;
	rf_store_turn(d->store);
	rf_log_hold();
	MHD_run(d->mhd);
	rf_log_release();
}

static void on_mhd_poll(uv_poll_t *h, int status, int events)
{
	(void)status;
	(void)events;
	mhd_run(h->data);
}

static void on_mhd_timer(uv_timer_t *t)
{
	mhd_run(t->data);
}

/* Before the loop blocks: re-arm the timer with MHD's next deadline. */
static void on_mhd_prepare(uv_prepare_t *p)
{
	struct rf_daemon *d = p->data;
	MHD_UNSIGNED_LONG_LONG ms;

	if (!d->mhd)
		return;
	if (d->mhd_rerun) {
		d->mhd_rerun = false;
		uv_timer_start(&d->mhd_timer, on_mhd_timer, 0, 0);
	} else if (MHD_get_timeout(d->mhd, &ms) == MHD_YES)
		uv_timer_start(&d->mhd_timer, on_mhd_timer, ms, 0);
	else
		uv_timer_stop(&d->mhd_timer);
}

int rf_http_start(struct rf_daemon *d)
{
	char host[128];
	int port;
	struct sockaddr_storage ss;
	socklen_t sl;
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME |
			 MHD_USE_TURBO;
	const union MHD_DaemonInfo *info;
	int epfd, listen_fd;

	if (rf_listen_parse(d->cfg->listen, host, sizeof(host), &port) < 0)
		return RF_E_INVALID_VALUE;
	snprintf(d->listen_host, sizeof(d->listen_host), "%s", host);
	memset(&ss, 0, sizeof(ss));
	if (strchr(host, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, host, &s6->sin6_addr);
		flags |= MHD_USE_IPv6;
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, host, &s4->sin_addr);
	}
	d->mhd = MHD_start_daemon(
		flags, (uint16_t)port, NULL, NULL, on_access, d, MHD_OPTION_EXTERNAL_LOGGER,
		mhd_log, d, MHD_OPTION_SOCK_ADDR, &ss, MHD_OPTION_URI_LOG_CALLBACK, on_uri, d,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, d, MHD_OPTION_NOTIFY_CONNECTION,
		on_connection, d, MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONN_MHD_LIMIT,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)d->cfg->connection_timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONN_MEMORY_LIMIT, MHD_OPTION_END);
	if (!d->mhd) {
		rf_log_error("cannot listen on %s (address in use or not available)",
			     d->cfg->listen);
		return RF_E_IO;
	}
	info = MHD_get_daemon_info(d->mhd, MHD_DAEMON_INFO_EPOLL_FD);
	epfd = info ? info->epoll_fd : -1;
	info = MHD_get_daemon_info(d->mhd, MHD_DAEMON_INFO_LISTEN_FD);
	listen_fd = info ? info->listen_fd : -1;
	sl = sizeof(ss);
	if (listen_fd >= 0 && getsockname(listen_fd, (struct sockaddr *)&ss, &sl) == 0)
		d->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port :
							   ((struct sockaddr_in *)&ss)->sin_port);
	if (epfd < 0 || uv_poll_init(&d->loop, &d->mhd_poll, epfd) != 0) {
		MHD_stop_daemon(d->mhd);
		d->mhd = NULL;
		rf_log_error("cannot watch libmicrohttpd's epoll descriptor");
		return RF_E_IO;
	}
	d->mhd_poll.data = d;
	uv_timer_init(&d->loop, &d->mhd_timer);
	d->mhd_timer.data = d;
	uv_prepare_init(&d->loop, &d->mhd_prepare);
	d->mhd_prepare.data = d;
	uv_timer_init(&d->loop, &d->deadline_timer);
	d->deadline_timer.data = d;
	uv_poll_start(&d->mhd_poll, UV_READABLE, on_mhd_poll);
	uv_prepare_start(&d->mhd_prepare, on_mhd_prepare);
	uv_timer_start(&d->deadline_timer, on_deadline_tick, DEADLINE_TICK_MS, DEADLINE_TICK_MS);
	return 0;
}

void rf_http_quiesce(struct rf_daemon *d)
{
	MHD_socket fd;

	if (!d->mhd)
		return;
	fd = MHD_quiesce_daemon(d->mhd);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
}

void rf_http_stop(struct rf_daemon *d)
{
	if (!d->mhd)
		return;
	uv_poll_stop(&d->mhd_poll);
	uv_prepare_stop(&d->mhd_prepare);
	uv_timer_stop(&d->mhd_timer);
	uv_timer_stop(&d->deadline_timer);
	MHD_stop_daemon(d->mhd);
	d->mhd = NULL;
	while (d->lingers)
		linger_end(d->lingers);
	uv_close((uv_handle_t *)&d->mhd_poll, NULL);
	uv_close((uv_handle_t *)&d->mhd_prepare, NULL);
	uv_close((uv_handle_t *)&d->mhd_timer, NULL);
	uv_close((uv_handle_t *)&d->deadline_timer, NULL);
}
