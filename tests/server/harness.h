/*
 * Integration-test harness: starts the real rigfit binary (t_bin()) as a child process on an
 * ephemeral loopback port, talks to it with raw HTTP/1.1 over sockets (so tests control every
 * byte: chunked bodies, half-sent requests, bad headers), and stops it with a signal.
 */
#ifndef RIGFIT_TESTS_SERVER_HARNESS_H
#define RIGFIT_TESTS_SERVER_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct t_daemon {
	pid_t pid;
	int port;
	char *dir; /* temp working directory (db under dir/var) */
	char *log; /* path of the daemon's stderr */
};

struct t_resp {
	int status;
	char *head; /* status line and headers, NUL-terminated */
	char *body; /* NUL-terminated (chunked bodies decoded) */
	size_t body_len;
};

/* Returns true when tests run under valgrind (RIGFIT_VALGRIND=1): slower, so timing checks
 * relax. */
bool t_under_valgrind(void);

/* Starts `rigfit serve --listen 127.0.0.1:0 --db DIR/var/rigfit.db --profiles DIR/profiles`
 * plus extra (NULL-terminated) in a fresh temp dir, and waits until it logs its port. Fails
 * the test when it does not start. */
void t_daemon_start(struct t_daemon *d, const char *const *extra);

/* Like t_daemon_start without failing: returns the exit status when the daemon exits during
 * start-up (its refusal), or -1 when it started (then stop it). */
int t_daemon_try_start(struct t_daemon *d, const char *const *extra, int timeout_ms);

/* Sends sig, waits up to timeout_ms for exit. Returns the exit status (128+signal when
 * killed, -1 on timeout: then it is killed) and the time it took in *ms. */
int t_daemon_signal_wait(struct t_daemon *d, int sig, int timeout_ms, long *ms);

/* Stops the daemon (SIGTERM) and removes its directory. */
void t_daemon_stop(struct t_daemon *d);

/* Waits (up to 10 s) until the daemon on port has its first scan: GET /api/hardware answers
 * 200. Fails the test otherwise. */
void t_wait_scan(int port);

/* Returns the daemon's stderr so far (malloc'd). */
char *t_daemon_log(const struct t_daemon *d);

/* Sends raw bytes to the daemon and reads the reply until the server closes or the reply is
 * complete. Returns 0, or -1 on connection failure/timeout. Free with t_resp_free. */
int t_http_raw(int port, const char *req, size_t len, struct t_resp *out, int timeout_ms);

/* Sends METHOD PATH with optional headers ("Name: v\r\n..." or NULL) and body. */
int t_http(int port, const char *method, const char *path, const char *headers, const char *body,
	   size_t body_len, struct t_resp *out);

/* Returns the value of header name in r (case-insensitive), malloc'd, or NULL. */
char *t_resp_header(const struct t_resp *r, const char *name);

void t_resp_free(struct t_resp *r);

/* Connects to the daemon; returns the socket or -1. */
int t_connect(int port);

/* Runs argv (NULL-terminated) and captures stdout and stderr (malloc'd, may be NULL args).
 * Returns the exit status, or -1. */
int t_run(const char *const *argv, char **out, char **err, int timeout_ms);

/* Runs Debian's headless chromium (RIGFIT_CHROMIUM overrides the path; fails the test when
 * none is installed, since make deps installs it) on url with a fresh profile, without its
 * sandbox (the tests run as root, where it refuses to start), with the extra arguments
 * (NULL-terminated, at most 12). Returns the exit status; stdout and the browser's log in
 * *out and *log (malloc'd). */
int t_chromium(const char *url, const char *const *extra, char **out, char **log, int timeout_ms);

#endif
