/*
 * The probes of `rigfit healthcheck`: one HTTP/1.1 GET /healthz (liveness) or /readyz
 * (readiness) over TCP to a running daemon, answered yes or no. It exists so that container images need no curl or wget: the
 * Dockerfile's HEALTHCHECK runs the rigfit binary itself. Plain sockets and poll, no
 * libmicrohttpd (a server library) and no DNS (a probe must not hang on a resolver).
 */
#ifndef RIGFIT_SERVER_CLI_HEALTHCHECK_H
#define RIGFIT_SERVER_CLI_HEALTHCHECK_H

#include <stddef.h>

/* The probe timeout `rigfit healthcheck` uses when none is given: well under Docker's default
 * HEALTHCHECK --timeout of 30 s, well over what a healthy daemon needs. */
#define RF_HEALTHCHECK_TIMEOUT_MS 3000
/* The most of the reply the probe reads; the status line is all it judges. */
#define RF_HEALTHCHECK_MAX_REPLY (64 * 1024)
/* The two probe paths: the process serves; the store is usable and a scan has finished. */
#define RF_HEALTHCHECK_LIVE "/healthz"
#define RF_HEALTHCHECK_READY "/readyz"

/* Asks the daemon listening at listen_addr ("127.0.0.1:8080", "[::1]:8080"; "localhost:PORT"
 * means 127.0.0.1; the wildcards 0.0.0.0 and [::] mean the loopback address of their family,
 * so the daemon's own --listen value can be passed unchanged) for GET /healthz, within
 * timeout_ms milliseconds in all (connect, send and reply together).
 * Returns 0 when the status line says 200. Otherwise returns a negative rf_err and, when errbuf
 * is not NULL, writes a one-line reason into errbuf (size errlen, always NUL-terminated):
 *   RF_E_INVALID_VALUE  listen_addr is not HOST:PORT with a numeric host and port 1..65535
 *   RF_E_RANGE          timeout_ms <= 0
 *   RF_E_IO             the connection failed (refused, reset, unreachable)
 *   RF_E_TIMEOUT        no complete status line came back within timeout_ms
 *   RF_E_PARSE          the reply is not HTTP
 *   RF_E_UNAVAILABLE    the daemon answered with a status other than 200
 * On success errbuf holds the empty string. */
int rf_healthcheck(const char *listen_addr, int timeout_ms, char *errbuf, size_t errlen);

/* rf_healthcheck for either probe: path is RF_HEALTHCHECK_LIVE or RF_HEALTHCHECK_READY
 * (anything else is RF_E_INVALID_VALUE, nothing sent). Same returns and errbuf otherwise; a
 * daemon that is alive but not ready answers /readyz with 503, so RF_E_UNAVAILABLE. */
int rf_healthcheck_path(const char *listen_addr, const char *path, int timeout_ms, char *errbuf,
			size_t errlen);

#endif
