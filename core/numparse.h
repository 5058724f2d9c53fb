/*
 * Checked number parsing: the only way rigfit turns text into numbers. Each parser takes a
 * buffer and its length (no NUL needed), rejects junk, signs where none are allowed, overflow
 * and values above a caller's maximum, and writes its output only on success.
 */
#ifndef RIGFIT_CORE_NUMPARSE_H
#define RIGFIT_CORE_NUMPARSE_H

#include <stddef.h>
#include <stdint.h>

/* Parses a decimal unsigned integer that fills s[0..len) exactly (no spaces, no sign).
 * Returns 0 and writes *out, or RF_E_PARSE (junk, empty) / RF_E_RANGE (above max). */
int rf_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out /* OUT */);

/* Like rf_parse_u64 but for a NUL-terminated string. */
int rf_parse_u64_str(const char *s, uint64_t max, uint64_t *out /* OUT */);

/* Parses a finite decimal number ("12", "3.5", "-1e3") that fills s[0..len) exactly and lies
 * in [min, max]. Returns 0 and writes *out, or RF_E_PARSE / RF_E_RANGE. */
int rf_parse_double(const char *s, size_t len, double min, double max, double *out /* OUT */);

#endif
