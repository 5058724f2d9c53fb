/*
 * Checked number parsers (see numparse.h). No strtol/atoi on unbounded input: the digits are
 * walked by hand so the length is honoured and overflow is detected exactly.
 */
#include "core/numparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

int rf_parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || len == 0)
		return RF_E_PARSE;
	for (size_t i = 0; i < len; i++) {
		unsigned d;
		if (s[i] < '0' || s[i] > '9')
			return RF_E_PARSE;
		d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return RF_E_RANGE;
		v = v * 10 + d;
	}
	if (v > max)
		return RF_E_RANGE;
	*out = v;
	return 0;
}

int rf_parse_u64_str(const char *s, uint64_t max, uint64_t *out)
{
	if (!s)
		return RF_E_PARSE;
	return rf_parse_u64(s, strlen(s), max, out);
}

int rf_parse_double(const char *s, size_t len, double min, double max, double *out)
{
	char buf[64];
	char *end = 0;
	double v;

	if (!s || len == 0 || len >= sizeof(buf))
		return RF_E_PARSE;
	/* strtod accepts leading spaces, hex, "inf" and "nan": refuse them before it sees them. */
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' ||
		      c == 'E'))
			return RF_E_PARSE;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	v = strtod(buf, &end);
	if (end != buf + len || !isfinite(v))
		return RF_E_PARSE;
	if (v < min || v > max)
		return RF_E_RANGE;
	*out = v;
	return 0;
}
