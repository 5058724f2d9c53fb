/*
 * stderr logging (see log.h). Lines are assembled in a buffer and written at once so that
 * lines from the loop and the scan worker never interleave mid-line.
 */
#include "server/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int rf_log_level_cur = RF_LOG_INFO;

void rf_log_set_level(enum rf_log_level level)
{
	atomic_store(&rf_log_level_cur, (int)level);
}

void rf_log(enum rf_log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	char line[2048];
	struct timespec ts;
	struct tm tm;
	size_t n;
	va_list ap;
	int w;

	if ((int)level > atomic_load(&rf_log_level_cur))
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	w = snprintf(line + n, sizeof(line) - n, ".%03ldZ %-5s ", ts.tv_nsec / 1000000L,
		     names[level]);
	n += w > 0 ? (size_t)w : 0;
	va_start(ap, fmt);
	w = vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (w < 0)
		w = 0;
	n += (size_t)w < sizeof(line) - n - 1 ? (size_t)w : sizeof(line) - n - 2;
	/* Control characters from request paths must not forge log lines. */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20)
			line[i] = '?';
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0) {
		/* Nowhere left to report a failing stderr. */
	}
}
