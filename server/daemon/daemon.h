/*
 * `rigfit serve`: the long-running process. One libuv loop owns everything: libmicrohttpd in
 * external-epoll mode (a uv_poll on MHD's epoll fd and a uv_timer from MHD_get_timeout), the
 * scan timer and its worker (uv_queue_work), signals and the systemd watchdog.
 */
#ifndef RIGFIT_SERVER_DAEMON_DAEMON_H
#define RIGFIT_SERVER_DAEMON_DAEMON_H

#include "server/config.h"

/* Runs the daemon until SIGTERM/SIGINT. Returns the process exit status: 0 after a clean
 * stop, 1 when it could not start (the reason is logged). */
int rf_serve(struct rf_config *cfg);

#endif
