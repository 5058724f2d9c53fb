/*
 * stderr logging (see log.h). Lines are assembled in a buffer and written at once so that
 * lines from the loop and the scan worker never interleave mid-line. When stderr is the
 * journal, each line starts with its syslog priority as "<N>" (sd-daemon(3)) and leaves the
 * time to the journal, so `journalctl -p warning` finds the warnings. The loop holds its
 * info and debug lines for one turn (rf_log_hold) and writes them with one call.
 */
#include "server/log.h"

#include "core/format.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static atomic_int rf_log_level_cur = RF_LOG_INFO;
static atomic_bool rf_log_journal = false;

/* The lines a thread holds (rf_log_hold): whole lines, written together at the release. */
#define LOG_HELD_MAX 16384
static _Thread_local struct {
	bool holding;
	size_t len;
	char text[LOG_HELD_MAX];
} held;

static void log_write(const char *text, size_t n)
{
	if (n && write(STDERR_FILENO, text, n) < 0) {
		/* Nowhere left to report a failing stderr. */
	}
}

static void held_flush(void)
{
	log_write(held.text, held.len);
	held.len = 0;
}

void rf_log_hold(void)
{
	held.holding = true;
}

void rf_log_release(void)
{
	held_flush();
	held.holding = false;
}

bool rf_log_stream_is_journal(const char *journal_stream, int fd)
{
	unsigned long long dev, ino;
	struct stat st;
	char tail;

	/* systemd sets JOURNAL_STREAM=DEVICE:INODE of the stream it connected; stderr is that
	 * stream only while its device and inode match (a redirect in between breaks it). */
	if (!journal_stream || sscanf(journal_stream, "%llu:%llu%c", &dev, &ino, &tail) != 2)
		return false;
	if (fstat(fd, &st) != 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void rf_log_init(void)
{
	atomic_store(&rf_log_journal,
		     rf_log_stream_is_journal(getenv("JOURNAL_STREAM"), STDERR_FILENO));
}

void rf_log_set_level(enum rf_log_level level)
{
	atomic_store(&rf_log_level_cur, (int)level);
}

/* Writes "YYYY-MM-DDTHH:MM:SS.mmmZ LEVEL " for ts into line (room for 40); returns its
 * length. The seconds' part is formatted once per second per thread. */
static size_t log_stamp(char *line, const struct timespec *ts, const char *level)
{
	static _Thread_local time_t stamp_sec = -1;
	static _Thread_local char stamp[32];
	static _Thread_local size_t stamp_len;
	long ms = ts->tv_nsec / 1000000L;
	size_t n, k;

	if (ts->tv_sec != stamp_sec) {
		struct tm tm;
		gmtime_r(&ts->tv_sec, &tm);
		stamp_len = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		stamp_sec = ts->tv_sec;
	}
	memcpy(line, stamp, stamp_len);
	n = stamp_len;
	line[n++] = '.';
	line[n++] = (char)('0' + ms / 100 % 10);
	line[n++] = (char)('0' + ms / 10 % 10);
	line[n++] = (char)('0' + ms % 10);
	line[n++] = 'Z';
	line[n++] = ' ';
	/* The level left-aligned in five columns, as "%-5s" writes it. */
	for (k = 0; level[k]; k++)
		line[n++] = level[k];
	for (; k < 5; k++)
		line[n++] = ' ';
	line[n++] = ' ';
	return n;
}

void rf_log(enum rf_log_level level, const char *fmt, ...)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	/* syslog priorities: LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG */
	static const char priorities[] = {'3', '4', '6', '7'};
	char line[2048];
	struct timespec ts;
	size_t n;
	va_list ap;
	int w;

	if ((int)level > atomic_load(&rf_log_level_cur))
		return;
	if (atomic_load(&rf_log_journal)) {
		n = (size_t)snprintf(line, sizeof(line), "<%c>", priorities[level]);
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		n = log_stamp(line, &ts, names[level]);
	}
	va_start(ap, fmt);
	w = rf_vformat(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	if (w < 0)
		w = 0;
	n += (size_t)w < sizeof(line) - n - 1 ? (size_t)w : sizeof(line) - n - 2;
	/* Control characters from request paths must not forge log lines. */
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20)
			line[i] = '?';
	line[n++] = '\n';
	if (!held.holding) {
		log_write(line, n);
		return;
	}
	if (held.len + n > sizeof(held.text))
		held_flush();
	memcpy(held.text + held.len, line, n);
	held.len += n;
	/* A warning or an error is written at once, after what came before it. */
	if (level <= RF_LOG_WARN)
		held_flush();
}
