/*
 * This process's figures for the `process_*` metrics, read from /proc/self the way the
 * Prometheus client libraries read them: CPU time, resident and virtual memory, open and
 * maximum file descriptors, and the start time.
 */
#ifndef RIGFIT_SERVER_DAEMON_PROCESS_STATS_H
#define RIGFIT_SERVER_DAEMON_PROCESS_STATS_H

#include <stddef.h>

#include "api/metrics.h"

/* Parses the text of /proc/PID/stat (text[0..len)) with the clock ticks per second, the page
 * size and the boot time (Unix seconds, from /proc/stat's btime) into cpu_seconds,
 * resident_bytes, virtual_bytes and start_time_s of out; the other fields are untouched.
 * Returns 0, or RF_E_PARSE when the text is not a stat line. */
int rf_process_stat_parse(const char *text, size_t len, long ticks, long page_size,
			  double boot_time_s, struct api_process_stats *out /* OUT */);

/* Reads this process's figures (api_env.io.read_process). Returns 0, or a negative rf_err when
 * /proc/self/stat cannot be read; figures that cannot be read alone are -1. */
int rf_process_stats_self(struct api_process_stats *out /* OUT */);

#endif
