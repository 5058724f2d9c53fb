/*
 * Request metrics kept by the process and rendered in the Prometheus text format (0.0.4):
 * request counts by route, method and status, and a latency histogram by route and method.
 * The HTTP glue calls api_metrics_observe once per answered request; only the loop thread
 * touches it, so it needs no lock.
 */
#ifndef RIGFIT_API_METRICS_H
#define RIGFIT_API_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "api/api.h"

struct api_metrics;

/* Scan figures the /metrics route shows beside the request metrics. Points in time are Unix
 * timestamps, as Prometheus prefers them (an age is `time() - x` in a query, and stays right
 * however late the scrape is). */
struct api_scan_stats {
	uint64_t scans_total;
	uint64_t scan_failures_total;
	double last_scan_duration_s;     /* < 0: no scan yet */
	double last_success_timestamp_s; /* of the snapshot being served; < 0: no scan yet */
	double last_failure_timestamp_s; /* < 0: no scan failed */
};

/* The process figures of the standard `process_*` series; a value below 0 is unknown and its
 * series left out. */
struct api_process_stats {
	double cpu_seconds; /* user + system */
	double resident_bytes;
	double virtual_bytes;
	double open_fds;
	double max_fds;
	double start_time_s; /* Unix time the process started */
};

/* Returns a new, empty metrics registry (NULL when out of memory). Free with
 * api_metrics_free. */
struct api_metrics *api_metrics_new(void);

/* Frees m. NULL is a no-op. */
void api_metrics_free(struct api_metrics *m);

/* Records one answered request. route is the matched route's path pattern (NULL for an
 * unmatched path, counted as "unmatched"), method its method, status the HTTP status,
 * seconds the time from the first byte to the queued reply. Series beyond the registry's cap
 * are folded into route "other". */
void api_metrics_observe(struct api_metrics *m, const char *route, enum api_method method,
			 int status, double seconds);

/* Sets the scan figures shown by the next render. */
void api_metrics_set_scan(struct api_metrics *m, const struct api_scan_stats *s);

/* Renders the metrics with the figures in env (version, store, and the process figures that
 * env->io.read_process returns, when set) as Prometheus text. Returns a malloc'd NUL-terminated string (length in *len) or NULL when out of memory. */
char *api_metrics_render(const struct api_metrics *m, const struct api_env *env,
			 size_t *len /* OUT */);

#endif
