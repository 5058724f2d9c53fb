/*
 * The integration-test harness (see harness.h).
 */
#include "tests/server/harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/test.h"

/* Case-insensitive strstr (strcasestr is a GNU extension). */
static char *ci_find(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++)
		if (strncasecmp(hay, needle, n) == 0)
			return (char *)hay;
	return NULL;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

bool t_under_valgrind(void)
{
	const char *v = getenv("RIGFIT_VALGRIND");
	return v && *v == '1';
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

char *t_daemon_log(const struct t_daemon *d)
{
	return t_read_file(d->log, NULL);
}

/* Finds "listening on HOST:PORT" in the log. */
static int log_port(const char *log)
{
	const char *p = log ? strstr(log, " listening on ") : NULL;
	const char *colon;

	if (!p)
		return 0;
	p += strlen(" listening on ");
	colon = strchr(p, ' ');
	if (!colon)
		return 0;
	while (colon > p && colon[-1] != ':')
		colon--;
	return atoi(colon); /* test code: the daemon wrote digits */
}

int t_daemon_try_start(struct t_daemon *d, const char *const *extra, int timeout_ms)
{
	const char *argv[64];
	int n = 0, status;
	char *db, *profiles, *var;
	long deadline;

	memset(d, 0, sizeof(*d));
	d->dir = t_mkdtemp();
	ck_assert_ptr_nonnull(d->dir);
	d->log = t_path(d->dir, "daemon.log");
	var = t_path(d->dir, "var");
	db = t_path(var, "rigfit.db");
	profiles = t_path(d->dir, "profiles");
	mkdir(profiles, 0755);
	if (t_under_valgrind())
		timeout_ms *= 10;

	argv[n++] = t_bin();
	argv[n++] = "serve";
	argv[n++] = "--listen";
	argv[n++] = "127.0.0.1:0";
	argv[n++] = "--db";
	argv[n++] = db;
	argv[n++] = "--profiles";
	argv[n++] = profiles;
	argv[n++] = "--log-level";
	argv[n++] = "debug";
	for (int i = 0; extra && extra[i] && n < 62; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;

	d->pid = fork();
	ck_assert_int_ge(d->pid, 0);
	if (d->pid == 0) {
		int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		if (chdir(d->dir) != 0)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	free(db);
	free(var);
	free(profiles);
	deadline = now_ms() + timeout_ms;
	while (now_ms() < deadline) {
		char *log = t_read_file(d->log, NULL);
		int port = log_port(log);
		free(log);
		if (port > 0) {
			d->port = port;
			return -1;
		}
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			d->pid = 0;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		sleep_ms(10);
	}
	kill(d->pid, SIGKILL);
	waitpid(d->pid, &status, 0);
	d->pid = 0;
	return -2;
}

void t_daemon_start(struct t_daemon *d, const char *const *extra)
{
	int rc = t_daemon_try_start(d, extra, 5000);
	long deadline = now_ms() + (t_under_valgrind() ? 30000 : 5000);

	if (rc != -1) {
		char *log = t_daemon_log(d);
		ck_abort_msg("daemon did not start (status %d); log:\n%s", rc, log ? log : "");
	}
	/* The first scan runs in the background; tests start once it is published (until then
	 * GET /api/hardware answers 503, as documented). */
	while (now_ms() < deadline) {
		struct t_resp r;
		bool ready = false;
		if (t_http(d->port, "GET", "/healthz", NULL, NULL, 0, &r) == 0)
			ready = r.status == 200 && strstr(r.body, "\"count\":0") == NULL;
		t_resp_free(&r);
		if (ready)
			return;
		sleep_ms(5);
	}
	ck_abort_msg("the daemon's first scan did not finish");
}

int t_daemon_signal_wait(struct t_daemon *d, int sig, int timeout_ms, long *ms)
{
	long t0 = now_ms();
	int status;

	if (d->pid <= 0)
		return -1;
	kill(d->pid, sig);
	for (;;) {
		pid_t w = waitpid(d->pid, &status, WNOHANG);
		if (w == d->pid)
			break;
		if (now_ms() - t0 > timeout_ms) {
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &status, 0);
			d->pid = 0;
			if (ms)
				*ms = now_ms() - t0;
			return -1;
		}
		sleep_ms(5);
	}
	d->pid = 0;
	if (ms)
		*ms = now_ms() - t0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void t_daemon_stop(struct t_daemon *d)
{
	if (d->pid > 0) {
		int rc = t_daemon_signal_wait(d, SIGTERM, t_under_valgrind() ? 30000 : 5000, NULL);
		if (rc != 0) {
			char *log = t_daemon_log(d);
			fprintf(stderr, "daemon exit status %d; log:\n%s\n", rc, log ? log : "");
			free(log);
		}
		ck_assert_msg(rc == 0, "daemon exited with %d on SIGTERM", rc);
	}
	t_rmtree(d->dir);
	free(d->dir);
	free(d->log);
	d->dir = d->log = NULL;
}

int t_connect(int port)
{
	struct sockaddr_in sa;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Decodes a chunked body in place; returns the decoded length. */
static size_t dechunk(char *b, size_t len)
{
	size_t in = 0, out = 0;

	while (in < len) {
		char *end;
		unsigned long n = strtoul(b + in, &end, 16);
		char *crlf = strstr(b + in, "\r\n");
		if (!crlf)
			break;
		in = (size_t)(crlf - b) + 2;
		if (n == 0 || in + n > len)
			break;
		memmove(b + out, b + in, n);
		out += n;
		in += n + 2;
		(void)end;
	}
	b[out] = '\0';
	return out;
}

int t_http_raw(int port, const char *req, size_t len, struct t_resp *out, int timeout_ms)
{
	int fd = t_connect(port);
	size_t cap = 65536, n = 0, sent = 0;
	char *buf;
	long deadline;

	memset(out, 0, sizeof(*out));
	if (fd < 0)
		return -1;
	if (t_under_valgrind())
		timeout_ms *= 10;
	while (sent < len) {
		ssize_t w = send(fd, req + sent, len - sent, MSG_NOSIGNAL);
		if (w <= 0)
			break; /* the server may answer early and close: read what it said */
		sent += (size_t)w;
	}
	buf = malloc(cap + 1);
	deadline = now_ms() + timeout_ms;
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		long left = deadline - now_ms();
		ssize_t r;
		char *hdr_end;
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
		r = recv(fd, buf + n, cap - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
		buf[n] = '\0';
		/* Stop once a Content-Length reply is complete (keep-alive connections). */
		hdr_end = strstr(buf, "\r\n\r\n");
		if (hdr_end) {
			char *cl = ci_find(buf, "\r\nContent-Length:");
			if (cl && cl < hdr_end) {
				size_t want = (size_t)atol(cl + 17);
				if (n >= (size_t)(hdr_end + 4 - buf) + want)
					break;
			}
		}
	}
	close(fd);
	buf[n] = '\0';
	{
		char *hdr_end = strstr(buf, "\r\n\r\n");
		if (n < 12 || !hdr_end) {
			free(buf);
			return -1;
		}
		out->status = atoi(buf + 9);
		*hdr_end = '\0';
		out->head = strdup(buf);
		out->body_len = n - (size_t)(hdr_end + 4 - buf);
		out->body = malloc(out->body_len + 1);
		memcpy(out->body, hdr_end + 4, out->body_len);
		out->body[out->body_len] = '\0';
		if (ci_find(out->head, "Transfer-Encoding: chunked"))
			out->body_len = dechunk(out->body, out->body_len);
	}
	free(buf);
	return 0;
}

int t_http(int port, const char *method, const char *path, const char *headers, const char *body,
	   size_t body_len, struct t_resp *out)
{
	size_t cap = strlen(path) + (headers ? strlen(headers) : 0) + body_len + 256;
	char *req = malloc(cap);
	int n, rc;

	n = snprintf(req, cap, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s",
		     method, path, headers ? headers : "");
	if (body)
		n += snprintf(req + n, cap - (size_t)n, "Content-Length: %zu\r\n", body_len);
	n += snprintf(req + n, cap - (size_t)n, "\r\n");
	if (body) {
		memcpy(req + n, body, body_len);
		n += (int)body_len;
	}
	rc = t_http_raw(port, req, (size_t)n, out, 5000);
	free(req);
	return rc;
}

char *t_resp_header(const struct t_resp *r, const char *name)
{
	const char *p = r->head;
	size_t nl = strlen(name);

	while (p && (p = strstr(p, "\r\n")) != NULL) {
		p += 2;
		if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1;
			size_t len;
			while (*v == ' ')
				v++;
			len = strcspn(v, "\r\n");
			return strndup(v, len);
		}
	}
	return NULL;
}

void t_resp_free(struct t_resp *r)
{
	free(r->head);
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static char *read_all_fd(int fd)
{
	size_t cap = 4096, n = 0;
	char *b = malloc(cap + 1);
	ssize_t r;

	while ((r = read(fd, b + n, cap - n)) > 0) {
		n += (size_t)r;
		if (n == cap) {
			cap *= 2;
			b = realloc(b, cap + 1);
		}
	}
	b[n] = '\0';
	return b;
}

int t_run(const char *const *argv, char **out, char **err, int timeout_ms)
{
	char *dir = t_mkdtemp();
	char *of = t_path(dir, "out"), *ef = t_path(dir, "err");
	pid_t pid;
	int status = -1;
	long t0 = now_ms();

	if (t_under_valgrind())
		timeout_ms *= 10;
	pid = fork();
	if (pid == 0) {
		int o = open(of, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(ef, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int nul = open("/dev/null", O_RDONLY);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		dup2(nul, STDIN_FILENO);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (;;) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (now_ms() - t0 > timeout_ms) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			status = -1;
			break;
		}
		sleep_ms(5);
	}
	if (out) {
		int fd = open(of, O_RDONLY);
		*out = fd >= 0 ? read_all_fd(fd) : NULL;
		if (fd >= 0)
			close(fd);
	}
	if (err) {
		int fd = open(ef, O_RDONLY);
		*err = fd >= 0 ? read_all_fd(fd) : NULL;
		if (fd >= 0)
			close(fd);
	}
	t_rmtree(dir);
	free(dir);
	free(of);
	free(ef);
	if (status < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void t_wait_scan(int port)
{
	for (int i = 0; i < 500; i++) {
		struct t_resp r;
		int st;

		ck_assert_int_eq(t_http(port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
		st = r.status;
		t_resp_free(&r);
		if (st == 200)
			return;
		usleep(20000);
	}
	ck_abort_msg("the daemon never finished its first scan");
}

int t_chromium(const char *url, const char *const *extra, char **out, char **log, int timeout_ms)
{
	static const char *const cands[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser"};
	const char *env = getenv("RIGFIT_CHROMIUM"), *bin = NULL;
	const char *argv[24];
	char *profile = t_mkdtemp(), user_dir[4200];
	int n = 0, rc;

	if (env && *env)
		bin = env;
	for (size_t i = 0; !bin && i < sizeof(cands) / sizeof(cands[0]); i++)
		if (access(cands[i], X_OK) == 0)
			bin = cands[i];
	ck_assert_msg(bin != NULL,
		      "chromium is not installed (make deps installs Debian's chromium)");
	snprintf(user_dir, sizeof(user_dir), "--user-data-dir=%s", profile);
	argv[n++] = bin;
	argv[n++] = "--headless=new";
	argv[n++] = "--no-sandbox";
	argv[n++] = "--disable-gpu";
	argv[n++] = "--no-first-run";
	argv[n++] = "--disable-extensions";
	argv[n++] = user_dir;
	for (int i = 0; extra && extra[i] && n < 22; i++)
		argv[n++] = extra[i];
	argv[n++] = url;
	argv[n] = NULL;
	rc = t_run(argv, out, log, timeout_ms);
	t_rmtree(profile);
	free(profile);
	return rc;
}
