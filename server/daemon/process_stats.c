/*
 * process_* figures from /proc (see process_stats.h). /proc/self/stat gives CPU ticks, the
 * start time in ticks after boot, the virtual size and the resident pages; /proc/stat's btime
 * turns the start into Unix time; /proc/self/fd counts the open descriptors.
 */
#include "server/daemon/process_stats.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "core/err.h"
#include "core/numparse.h"
#include "server/detect/readfile.h"

#define STAT_MAX_BYTES 4096

int rf_process_stat_parse(const char *text, size_t len, long ticks, long page_size,
			  double boot_time_s, struct api_process_stats *out)
{
	/* Fields after the command name, counted from 3 (state) as proc(5) numbers them. */
	enum {
		F_UTIME = 14,
		F_STIME = 15,
		F_START = 22,
		F_VSIZE = 23,
		F_RSS = 24
	};
	uint64_t v[F_RSS + 1] = {0};
	const char *p = NULL, *end = text + len;
	int field = 3;

	/* The command name is in parentheses and may hold spaces and ')': skip to the last. */
	for (const char *q = text; q < end; q++)
		if (*q == ')')
			p = q + 1;
	if (!p || ticks <= 0 || page_size <= 0)
		return RF_E_PARSE;
	while (p < end && field <= F_RSS) {
		const char *s;
		while (p < end && *p == ' ')
			p++;
		s = p;
		while (p < end && *p != ' ' && *p != '\n')
			p++;
		if (p == s)
			return RF_E_PARSE;
		if (field >= F_UTIME && rf_parse_u64(s, (size_t)(p - s), UINT64_MAX, &v[field]) < 0)
			return RF_E_PARSE;
		field++;
	}
	if (field <= F_RSS)
		return RF_E_PARSE;
	out->cpu_seconds = (double)(v[F_UTIME] + v[F_STIME]) / (double)ticks;
	out->start_time_s = boot_time_s + (double)v[F_START] / (double)ticks;
	out->virtual_bytes = (double)v[F_VSIZE];
	out->resident_bytes = (double)v[F_RSS] * (double)page_size;
	return 0;
}

/* Returns /proc/stat's btime (Unix seconds of the boot), or -1. */
static double boot_time(void)
{
	char *buf = NULL;
	size_t len = 0;
	double t = -1;

	if (rf_read_under_root("/", "/proc/stat", 1 << 20, &buf, &len) < 0)
		return -1;
	for (const char *p = buf; p && *p;) {
		uint64_t s;
		if (strncmp(p, "btime ", 6) == 0) {
			size_t n = strcspn(p + 6, "\n");
			if (rf_parse_u64(p + 6, n, UINT64_MAX, &s) == 0)
				t = (double)s;
			break;
		}
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	free(buf);
	return t;
}

int rf_process_stats_self(struct api_process_stats *out)
{
	char *buf = NULL;
	size_t len = 0;
	struct rlimit rl;
	DIR *d;
	double boot = boot_time();
	int rc;

	out->cpu_seconds = out->resident_bytes = out->virtual_bytes = -1;
	out->open_fds = out->max_fds = out->start_time_s = -1;
	rc = rf_read_under_root("/", "/proc/self/stat", STAT_MAX_BYTES, &buf, &len);
	if (rc < 0)
		return rc;
	rc = rf_process_stat_parse(buf, len, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE),
				   boot < 0 ? 0 : boot, out);
	free(buf);
	if (rc < 0)
		return rc;
	if (boot < 0)
		out->start_time_s = -1;
	d = opendir("/proc/self/fd");
	if (d) {
		struct dirent *e;
		double n = 0;
		while ((e = readdir(d)) != NULL)
			if (e->d_name[0] != '.')
				n++;
		closedir(d);
		out->open_fds = n - 1; /* the directory's own descriptor */
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		out->max_fds = (double)rl.rlim_cur;
	return 0;
}
