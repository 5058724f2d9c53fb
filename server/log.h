/*
 * Logging: one line per event on stderr, "TIME LEVEL message", filtered by --log-level.
 * Safe to call from the scan worker thread (each line is written whole, with one write call).
 */
#ifndef RIGFIT_SERVER_LOG_H
#define RIGFIT_SERVER_LOG_H

#include <stdbool.h>

#include "server/config.h"

/* Chooses the line format from the environment: with stderr connected to the journal
 * (JOURNAL_STREAM names stderr's device and inode), lines are "<N>message" with N the syslog
 * priority; otherwise "TIME LEVEL message". Call once at start. */
void rf_log_init(void);

/* Returns true when journal_stream (JOURNAL_STREAM's "DEVICE:INODE", may be NULL) names the
 * file open on fd. */
bool rf_log_stream_is_journal(const char *journal_stream, int fd);

/* Sets the most verbose level that is printed. */
void rf_log_set_level(enum rf_log_level level);

/* Holds the calling thread's info and debug lines (the access log's, under load one per
 * request) until rf_log_release, which writes them with one write call; a warning or an error
 * writes them at once, followed by itself. The daemon's loop holds them for one turn of its
 * HTTP server, so at most one turn's lines wait, and only in memory. */
void rf_log_hold(void);
void rf_log_release(void);

/* Writes one line at level when the level is enabled. */
void rf_log(enum rf_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define rf_log_error(...) rf_log(RF_LOG_ERROR, __VA_ARGS__)
#define rf_log_warn(...) rf_log(RF_LOG_WARN, __VA_ARGS__)
#define rf_log_info(...) rf_log(RF_LOG_INFO, __VA_ARGS__)
#define rf_log_debug(...) rf_log(RF_LOG_DEBUG, __VA_ARGS__)

#endif
