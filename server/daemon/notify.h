/*
 * The systemd service notification protocol ($NOTIFY_SOCKET), spoken directly: one datagram
 * of "KEY=value" lines to an AF_UNIX socket, as sd_notify(3) documents it. rigfit does not link
 * libsystemd, so that the same binary runs on machines without it (containers, other inits);
 * the protocol is small and stable enough to carry ourselves.
 *
 * The daemon sends READY=1 once it listens, WATCHDOG=1 every half watchdog period, STOPPING=1
 * when it drains on SIGTERM and RELOADING=1 ... READY=1 around a SIGHUP reload. Outside
 * systemd ($NOTIFY_SOCKET unset) every call is a no-op that succeeds.
 */
#ifndef RIGFIT_SERVER_DAEMON_NOTIFY_H
#define RIGFIT_SERVER_DAEMON_NOTIFY_H

#include <stdint.h>

/* The largest state rf_notifyf formats; longer states are refused with RF_E_TOO_LARGE. */
#define RF_NOTIFY_MAX_STATE 4096

/* Sends state ("READY=1\nSTATUS=serving on 127.0.0.1:8080") as one datagram to the socket
 * named by $NOTIFY_SOCKET: an abstract socket when the name starts with '@', a filesystem
 * path when it starts with '/'. Returns 0 when sent, 0 without sending anything when
 * NOTIFY_SOCKET is unset or empty, RF_E_INVALID_VALUE when state is NULL or the variable
 * names no usable address, RF_E_IO when the socket cannot be created or the send fails
 * (errno is left as the failing call set it). Never raises SIGPIPE. */
int rf_notify(const char *state);

/* Formats a state with printf rules (at most RF_NOTIFY_MAX_STATE - 1 bytes) and sends it with
 * rf_notify. Returns what rf_notify returns, or RF_E_TOO_LARGE / RF_E_INVALID_VALUE when the
 * formatting fails. */
int rf_notifyf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Sends "RELOADING=1" with MONOTONIC_USEC set to CLOCK_MONOTONIC now, which systemd 253's
 * Type=notify-reload requires and older systemd ignores. Returns what rf_notify returns. */
int rf_notify_reloading(void);

/* Reports whether systemd expects watchdog pings from this process: WATCHDOG_USEC holds a
 * positive decimal period in microseconds, and WATCHDOG_PID is either unset or equals
 * getpid() (a child that inherited the environment must not ping for its parent). Returns 1
 * and writes the period to *out when enabled; returns 0 and leaves *out untouched when the
 * watchdog is off, when either variable is junk (parsed with rf_parse_u64_str), or when out is
 * NULL. The caller pings with rf_notify("WATCHDOG=1") every *out / 2 microseconds. */
int rf_notify_watchdog_usec(uint64_t *out /* OUT */);

#endif
