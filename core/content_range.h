/*
 * The Content-Range header of an HTTP answer to a range request (RFC 9110, 14.4), as a Hugging
 * Face Hub (or its CDN) sends it: "Content-Range: bytes FIRST-LAST/TOTAL". TOTAL is the size
 * of the whole file, which the Hub lookup takes as a shard's size; it is the server's word
 * alone, so it is parsed strictly and capped. Pure: text in, struct out.
 */
#ifndef RIGFIT_CORE_CONTENT_RANGE_H
#define RIGFIT_CORE_CONTENT_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest file size believed: 2^53 bytes (8 PiB), which a JSON number still holds
 * exactly. No model file comes near it. */
#define RF_CONTENT_RANGE_MAX (UINT64_C(1) << 53)

struct rf_content_range {
	bool has_range; /* FIRST-LAST given ("*" in their place: not) */
	uint64_t first, last;
	bool has_total; /* TOTAL given ("*": unknown) */
	uint64_t total;
};

/* Parses one header line line[0..len) (no NUL needed; a trailing CR LF or LF is allowed). The
 * name is matched without case, the unit must be "bytes", FIRST <= LAST < TOTAL when both are
 * given. Returns 0 and writes *out, RF_E_NOT_FOUND when the line is another header, or
 * RF_E_PARSE (malformed) / RF_E_RANGE (a number above RF_CONTENT_RANGE_MAX, or a range that
 * does not fit the total). */
int rf_content_range_line(const char *line, size_t len, struct rf_content_range *out /* OUT */);

#endif
