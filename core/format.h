/*
 * vsnprintf for the notes every answer carries, without the C library's general machinery:
 * the conversions the notes use (%s, %.Ns, %.*s, %c, %d, %i, %u with l, ll or z, %f and %.Nf
 * up to 9 decimals, %%) are written directly, %f exactly as printf rounds it (to nearest, ties
 * to even, on the double's exact binary value). Anything else (a flag, a width, %g, %x...)
 * hands the whole format to vsnprintf, so the text is always printf's, byte for byte.
 */
#ifndef RIGFIT_CORE_FORMAT_H
#define RIGFIT_CORE_FORMAT_H

#include <stdarg.h>
#include <stddef.h>

/* As vsnprintf(buf, len, fmt, ap): writes at most len - 1 characters and a NUL (nothing when
 * len is 0) and returns the length the whole text has, or a negative value on an encoding
 * error. */
int rf_vformat(char *buf, size_t len, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* As snprintf, through rf_vformat. */
int rf_format(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
