/*
 * Content-Range lines (see content_range.h), walked with lengths; numbers through the checked
 * parser of core/numparse.h.
 */
#include "core/content_range.h"

#include <string.h>
#include <strings.h>

#include "core/err.h"
#include "core/numparse.h"

/* Parses a number of s[*at..len) up to the first byte not a digit, moving *at past it. */
static int number(const char *s, size_t len, size_t *at, uint64_t *v)
{
	size_t from = *at;

	while (*at < len && s[*at] >= '0' && s[*at] <= '9')
		(*at)++;
	return rf_parse_u64(s + from, *at - from, RF_CONTENT_RANGE_MAX, v);
}

static void skip_spaces(const char *s, size_t len, size_t *at)
{
	while (*at < len && (s[*at] == ' ' || s[*at] == '\t'))
		(*at)++;
}

int rf_content_range_line(const char *line, size_t len, struct rf_content_range *out)
{
	static const char name[] = "content-range:";
	struct rf_content_range r = {0};
	size_t at = sizeof(name) - 1;
	int rc;

	if (!line || len < at || strncasecmp(line, name, at) != 0)
		return RF_E_NOT_FOUND;
	if (len > 0 && line[len - 1] == '\n')
		len--;
	if (len > 0 && line[len - 1] == '\r')
		len--;
	skip_spaces(line, len, &at);
	if (len - at < 6 || strncasecmp(line + at, "bytes", 5) != 0 ||
	    (line[at + 5] != ' ' && line[at + 5] != '\t'))
		return RF_E_PARSE;
	at += 5;
	skip_spaces(line, len, &at);
	if (at < len && line[at] == '*') {
		at++;
	} else {
		if ((rc = number(line, len, &at, &r.first)) < 0)
			return rc;
		if (at >= len || line[at] != '-')
			return RF_E_PARSE;
		at++;
		if ((rc = number(line, len, &at, &r.last)) < 0)
			return rc;
		if (r.last < r.first)
			return RF_E_RANGE;
		r.has_range = true;
	}
	if (at >= len || line[at] != '/')
		return RF_E_PARSE;
	at++;
	if (at < len && line[at] == '*') {
		at++;
	} else {
		if ((rc = number(line, len, &at, &r.total)) < 0)
			return rc;
		r.has_total = true;
	}
	skip_spaces(line, len, &at);
	if (at != len || (!r.has_range && !r.has_total))
		return RF_E_PARSE;
	if (r.has_range && r.has_total && r.last >= r.total)
		return RF_E_RANGE;
	*out = r;
	return 0;
}
