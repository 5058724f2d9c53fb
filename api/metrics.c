/*
 * The metrics registry (see metrics.h). A fixed table of series: the route table is small and
 * statuses are few, so a linear scan is cheaper than a hash and bounds memory by design.
 */
#include "api/metrics.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METRICS_MAX_COUNTERS 256
#define METRICS_MAX_HISTOS 64

static const double metrics_buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
					 0.025,  0.05,    0.1,    0.25,  0.5,    1.0,   2.5};
#define METRICS_NBUCKETS (sizeof(metrics_buckets) / sizeof(metrics_buckets[0]))

struct metrics_counter {
	const char *route;
	enum api_method method;
	int status;
	uint64_t count;
};

struct metrics_histo {
	const char *route;
	enum api_method method;
	uint64_t buckets[METRICS_NBUCKETS]; /* non-cumulative; summed when rendered */
	uint64_t count;
	double sum;
};

struct api_metrics {
	struct metrics_counter counters[METRICS_MAX_COUNTERS];
	int n_counters;
	struct metrics_histo histos[METRICS_MAX_HISTOS];
	int n_histos;
	struct api_scan_stats scan;
};

struct api_metrics *api_metrics_new(void)
{
	struct api_metrics *m = calloc(1, sizeof(*m));
	if (m) {
		m->scan.last_scan_duration_s = -1;
		m->scan.last_success_timestamp_s = -1;
		m->scan.last_failure_timestamp_s = -1;
	}
	return m;
}

void api_metrics_free(struct api_metrics *m)
{
	free(m);
}

void api_metrics_set_scan(struct api_metrics *m, const struct api_scan_stats *s)
{
	if (m && s)
		m->scan = *s;
}

void api_metrics_observe(struct api_metrics *m, const char *route, enum api_method method,
			 int status, double seconds)
{
	struct metrics_counter *c = NULL;
	struct metrics_histo *h = NULL;
	int i;

	if (!m)
		return;
	if (!route)
		route = "unmatched";
	for (i = 0; i < m->n_counters; i++)
		if (m->counters[i].route == route && m->counters[i].method == method &&
		    m->counters[i].status == status)
			c = &m->counters[i];
	if (!c && m->n_counters < METRICS_MAX_COUNTERS) {
		c = &m->counters[m->n_counters++];
		*c = (struct metrics_counter){route, method, status, 0};
	}
	if (c)
		c->count++;
	for (i = 0; i < m->n_histos; i++)
		if (m->histos[i].route == route && m->histos[i].method == method)
			h = &m->histos[i];
	if (!h && m->n_histos < METRICS_MAX_HISTOS) {
		h = &m->histos[m->n_histos++];
		memset(h, 0, sizeof(*h));
		h->route = route;
		h->method = method;
	}
	if (!h)
		return;
	if (seconds < 0)
		seconds = 0;
	h->count++;
	h->sum += seconds;
	for (size_t b = 0; b < METRICS_NBUCKETS; b++) {
		if (seconds <= metrics_buckets[b]) {
			h->buckets[b]++;
			break;
		}
	}
}

struct metrics_buf {
	char *p;
	size_t len;
	size_t cap;
	int oom;
};

static void mb_printf(struct metrics_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void mb_printf(struct metrics_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = 1;
			return;
		}
		if ((size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		char *np = realloc(b->p, b->cap * 2 + (size_t)n);
		if (!np) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = b->cap * 2 + (size_t)n;
	}
}

/* Writes s into a label value, escaping backslash, quote and newline as the text format
 * requires. */
static void label_value(const char *s, char *out, size_t outlen)
{
	size_t n = 0;

	for (; *s && n + 3 < outlen; s++) {
		if (*s == '\\' || *s == '"') {
			out[n++] = '\\';
			out[n++] = *s;
		} else if (*s == '\n') {
			out[n++] = '\\';
			out[n++] = 'n';
		} else {
			out[n++] = *s;
		}
	}
	out[n] = '\0';
}

/* The snapshot as gauges: what a fleet's monitoring aggregates across hosts. */
static void render_snapshot(struct metrics_buf *b, const struct hw_snapshot *s)
{
	static const char *const tiers[] = {"low_end", "mid_range", "high_end"};

	mb_printf(b,
		  "# HELP rigfit_gpus GPUs found by the last scan.\n# TYPE rigfit_gpus gauge\n"
		  "rigfit_gpus %d\n",
		  s->n_gpus);
	mb_printf(b, "# HELP rigfit_gpu_memory_total_bytes Memory of each GPU.\n"
		     "# TYPE rigfit_gpu_memory_total_bytes gauge\n");
	for (int pass = 0; pass < 2; pass++) {
		if (pass == 1)
			mb_printf(b,
				  "# HELP rigfit_gpu_memory_free_bytes Free memory of each GPU at "
				  "the last scan.\n# TYPE rigfit_gpu_memory_free_bytes gauge\n");
		for (int i = 0; i < s->n_gpus; i++) {
			const struct hw_gpu *g = &s->gpus[i];
			char uuid[2 * sizeof(g->uuid)], name[2 * sizeof(g->name)];
			int64_t v = pass == 0 ? g->memory_total_bytes : g->memory_free_bytes;
			if (v < 0)
				continue;
			label_value(g->uuid, uuid, sizeof(uuid));
			label_value(g->name, name, sizeof(name));
			mb_printf(
				b,
				"rigfit_gpu_memory_%s_bytes{index=\"%d\",uuid=\"%s\",name=\"%s\"} %lld\n",
				pass == 0 ? "total" : "free", g->index, uuid, name, (long long)v);
		}
	}
	if (s->memory.total_bytes >= 0)
		mb_printf(
			b,
			"# HELP rigfit_memory_total_bytes Host memory.\n"
			"# TYPE rigfit_memory_total_bytes gauge\nrigfit_memory_total_bytes %lld\n",
			(long long)s->memory.total_bytes);
	if (s->memory.available_bytes >= 0)
		mb_printf(b,
			  "# HELP rigfit_memory_available_bytes Host memory available at the last "
			  "scan.\n# TYPE rigfit_memory_available_bytes gauge\n"
			  "rigfit_memory_available_bytes %lld\n",
			  (long long)s->memory.available_bytes);
	mb_printf(b, "# HELP rigfit_compute_profile The tier of this host (1 for its tier).\n"
		     "# TYPE rigfit_compute_profile gauge\n");
	for (int t = 0; t < 3; t++)
		mb_printf(b, "rigfit_compute_profile{profile=\"%s\"} %d\n", tiers[t],
			  strcmp(s->compute_profile, tiers[t]) == 0 ? 1 : 0);
}

/* Renders the gauge name with its help when v is known (>= 0), with decimals digits. */
static void mb_gauge(struct metrics_buf *b, const char *name, const char *help, int decimals,
		     double v)
{
	if (v >= 0)
		mb_printf(b, "# HELP %s %s\n# TYPE %s gauge\n%s %.*f\n", name, help, name, name,
			  decimals, v);
}

/* The process series every Prometheus client library exports, under their standard names, so
 * the usual dashboards and alerts work unchanged. */
static void render_process(struct metrics_buf *b, const struct api_env *env)
{
	static const struct {
		const char *name, *type, *help;
		size_t offset;
	} series[] = {
		{"process_cpu_seconds_total", "counter",
		 "Total user and system CPU time spent in "
		 "seconds.",
		 offsetof(struct api_process_stats, cpu_seconds)},
		{"process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
		 offsetof(struct api_process_stats, resident_bytes)},
		{"process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
		 offsetof(struct api_process_stats, virtual_bytes)},
		{"process_open_fds", "gauge", "Number of open file descriptors.",
		 offsetof(struct api_process_stats, open_fds)},
		{"process_max_fds", "gauge", "Maximum number of open file descriptors.",
		 offsetof(struct api_process_stats, max_fds)},
		{"process_start_time_seconds", "gauge",
		 "Start time of the process since unix epoch "
		 "in seconds.",
		 offsetof(struct api_process_stats, start_time_s)},
	};
	struct api_process_stats p;

	if (!env->io.read_process || env->io.read_process(&p) < 0)
		return;
	for (size_t i = 0; i < sizeof(series) / sizeof(series[0]); i++) {
		double v = *(const double *)(const void *)((const char *)&p + series[i].offset);
		if (v < 0)
			continue;
		mb_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %.15g\n", series[i].name,
			  series[i].help, series[i].name, series[i].type, series[i].name, v);
	}
}

char *api_metrics_render(const struct api_metrics *m, const struct api_env *env, size_t *len)
{
	struct metrics_buf b = {malloc(8192), 0, 8192, 0};
	int i;

	if (!b.p)
		return NULL;
	b.p[0] = '\0';
	mb_printf(&b,
		  "# HELP rigfit_build_info The running rigfit version.\n"
		  "# TYPE rigfit_build_info gauge\n"
		  "rigfit_build_info{version=\"%s\"} 1\n",
		  env->version ? env->version : "");
	render_process(&b, env);
	mb_printf(&b,
		  "# HELP rigfit_store_up Whether the SQLite store is usable (1) or not (0).\n"
		  "# TYPE rigfit_store_up gauge\nrigfit_store_up %d\n",
		  env->store.available ? 1 : 0);
	mb_printf(&b, "# HELP rigfit_http_requests_total Requests answered, by route, method and "
		      "status.\n# TYPE rigfit_http_requests_total counter\n");
	for (i = 0; m && i < m->n_counters; i++)
		mb_printf(&b,
			  "rigfit_http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} "
			  "%llu\n",
			  m->counters[i].route, api_method_name(m->counters[i].method),
			  m->counters[i].status, (unsigned long long)m->counters[i].count);
	mb_printf(&b, "# HELP rigfit_http_request_duration_seconds Time to answer a request.\n"
		      "# TYPE rigfit_http_request_duration_seconds histogram\n");
	for (i = 0; m && i < m->n_histos; i++) {
		const struct metrics_histo *h = &m->histos[i];
		const char *meth = api_method_name(h->method);
		uint64_t cum = 0;
		for (size_t k = 0; k < METRICS_NBUCKETS; k++) {
			cum += h->buckets[k];
			mb_printf(&b,
				  "rigfit_http_request_duration_seconds_bucket{route=\"%s\","
				  "method=\"%s\",le=\"%g\"} %llu\n",
				  h->route, meth, metrics_buckets[k], (unsigned long long)cum);
		}
		mb_printf(
			&b,
			"rigfit_http_request_duration_seconds_bucket{route=\"%s\",method=\"%s\","
			"le=\"+Inf\"} %llu\n"
			"rigfit_http_request_duration_seconds_sum{route=\"%s\",method=\"%s\"} %.6f\n"
			"rigfit_http_request_duration_seconds_count{route=\"%s\",method=\"%s\"} "
			"%llu\n",
			h->route, meth, (unsigned long long)h->count, h->route, meth, h->sum,
			h->route, meth, (unsigned long long)h->count);
	}
	if (m) {
		mb_printf(&b,
			  "# HELP rigfit_scans_total Hardware scans completed.\n"
			  "# TYPE rigfit_scans_total counter\nrigfit_scans_total %llu\n",
			  (unsigned long long)m->scan.scans_total);
		mb_printf(&b,
			  "# HELP rigfit_scan_failures_total Hardware scans that failed.\n"
			  "# TYPE rigfit_scan_failures_total counter\n"
			  "rigfit_scan_failures_total %llu\n",
			  (unsigned long long)m->scan.scan_failures_total);
		mb_gauge(&b, "rigfit_scan_duration_seconds", "Duration of the last scan.", 6,
			 m->scan.last_scan_duration_s);
		mb_gauge(&b, "rigfit_scan_last_success_timestamp_seconds",
			 "When the snapshot being served was scanned (Unix time).", 3,
			 m->scan.last_success_timestamp_s);
		mb_gauge(&b, "rigfit_scan_last_failure_timestamp_seconds",
			 "When a scan last failed (Unix time).", 3,
			 m->scan.last_failure_timestamp_s);
	}
	if (env->snapshot)
		render_snapshot(&b, &env->snapshot->hw);
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	*len = b.len;
	return b.p;
}
