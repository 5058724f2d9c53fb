/*
 * Walking text captured from the machine: lines and "key: value" pairs, with lengths, never
 * past the buffer's end. Shared by every parser in core/.
 */
#ifndef RIGFIT_CORE_TEXT_H
#define RIGFIT_CORE_TEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

struct rf_span {
	const char *p;
	size_t len;
};

struct rf_lines {
	const char *p;
	const char *end;
};

/* Starts walking text[0..len) line by line. */
void rf_lines_init(struct rf_lines *it /* OUT */, const char *text, size_t len);

/* Writes the next line (without '\n' or '\r') to *line; returns false at the end. */
bool rf_lines_next(struct rf_lines *it, struct rf_span *line /* OUT */);

/* Returns s without leading and trailing spaces, tabs, CR and NUL bytes. */
struct rf_span rf_span_trim(struct rf_span s);

/* Splits line at its first ':' into trimmed key and value; returns false without a ':'. */
bool rf_split_kv(struct rf_span line, struct rf_span *key /* OUT */, struct rf_span *val /* OUT */);

/* Returns true when s equals the NUL-terminated word (exact, case-sensitive). */
bool rf_span_eq(struct rf_span s, const char *word);

/* Copies s into dst (size dstlen), cutting it to fit, always NUL-terminating. */
void rf_span_copy(struct rf_span s, char *dst, size_t dstlen);

/* Formats one note (an assumption, a planner's line) into buf (size len). A note too long for
 * its buffer ends in "..." rather than mid-word unnoticed, and is counted: rf_notes_cut()
 * returns how many were cut in this process, which the tests hold at zero. */
void rf_note_vformat(char *buf, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
unsigned long rf_notes_cut(void);

#endif
