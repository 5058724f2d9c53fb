/*
 * Line and key/value walking over length-delimited text, and notes cut to their buffers (see
 * text.h).
 */
#include "core/text.h"

#include "core/format.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

void rf_lines_init(struct rf_lines *it, const char *text, size_t len)
{
	it->p = text;
	it->end = text ? text + len : text;
}

bool rf_lines_next(struct rf_lines *it, struct rf_span *line)
{
	const char *nl;

	if (!it->p || it->p >= it->end)
		return false;
	nl = memchr(it->p, '\n', (size_t)(it->end - it->p));
	if (!nl)
		nl = it->end;
	line->p = it->p;
	line->len = (size_t)(nl - it->p);
	if (line->len > 0 && line->p[line->len - 1] == '\r')
		line->len--;
	it->p = nl < it->end ? nl + 1 : it->end;
	return true;
}

static bool rf_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\0' || c == '\n';
}

struct rf_span rf_span_trim(struct rf_span s)
{
	while (s.len > 0 && rf_is_space(s.p[0])) {
		s.p++;
		s.len--;
	}
	while (s.len > 0 && rf_is_space(s.p[s.len - 1]))
		s.len--;
	return s;
}

bool rf_split_kv(struct rf_span line, struct rf_span *key, struct rf_span *val)
{
	const char *colon = line.len ? memchr(line.p, ':', line.len) : NULL;
	struct rf_span k, v;

	if (!colon)
		return false;
	k.p = line.p;
	k.len = (size_t)(colon - line.p);
	v.p = colon + 1;
	v.len = line.len - k.len - 1;
	*key = rf_span_trim(k);
	*val = rf_span_trim(v);
	return true;
}

bool rf_span_eq(struct rf_span s, const char *word)
{
	size_t n = strlen(word);
	return s.len == n && memcmp(s.p, word, n) == 0;
}

void rf_span_copy(struct rf_span s, char *dst, size_t dstlen)
{
	size_t n;

	if (dstlen == 0)
		return;
	n = s.len < dstlen - 1 ? s.len : dstlen - 1;
	if (n)
		memcpy(dst, s.p, n);
	dst[n] = '\0';
}

static _Atomic unsigned long notes_cut;

void rf_note_vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	int n;

	if (!buf || len == 0)
		return;
	n = rf_vformat(buf, len, fmt, ap);
	if (n >= 0 && (size_t)n < len)
		return;
	if (len > 4)
		memcpy(buf + len - 4, "...", 4);
	atomic_fetch_add(&notes_cut, 1);
}

unsigned long rf_notes_cut(void)
{
	return atomic_load(&notes_cut);
}
