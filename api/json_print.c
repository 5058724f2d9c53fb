/*
 * cJSON_PrintUnformatted's output, faster (see json_print.h). The rules below follow cJSON
 * 1.7's print_value, print_number and print_string_ptr; tests/api/test_json_print.c compares
 * the two on numbers, strings and trees of every kind.
 */
#include "api/json_print.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/json_alloc.h"
#include "core/err.h"

struct jbuf {
	char *p;
	size_t len, cap;
	bool failed;
};

/* Makes room for n more bytes. Returns false (and marks the buffer failed) when it cannot. */
static bool jb_room(struct jbuf *b, size_t n)
{
	size_t cap;
	char *np;

	if (b->failed)
		return false;
	if (b->len + n + 1 <= b->cap)
		return true;
	cap = b->cap ? b->cap : 4096; /* most answers fit: no growing on the way */
	while (cap < b->len + n + 1)
		cap *= 2;
	np = realloc(b->p, cap);
	if (!np) {
		b->failed = true;
		return false;
	}
	b->p = np;
	b->cap = cap;
	return true;
}

static void jb_put(struct jbuf *b, const char *s, size_t n)
{
	if (!jb_room(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void jb_char(struct jbuf *b, char c)
{
	if (!jb_room(b, 1))
		return;
	b->p[b->len++] = c;
}

/* Writes v in decimal, as "%lld" would. */
static void jb_int(struct jbuf *b, long long v)
{
	char tmp[24];
	size_t i = sizeof(tmp);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do {
		tmp[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		tmp[--i] = '-';
	jb_put(b, tmp + i, sizeof(tmp) - i);
}

/* cJSON's test of a read-back: equal within one DBL_EPSILON of the larger magnitude. */
static bool same_double(double a, double c)
{
	double max = fabs(a) > fabs(c) ? fabs(a) : fabs(c);

	return fabs(a - c) <= max * DBL_EPSILON;
}

/* Exact arithmetic on the products below (up to 2^123) needs 128 bits. */
__extension__ typedef unsigned __int128 u128;

#define P10_19 ((u128)10000000000000000000ULL)
/* 10^0 .. 10^21, exactly. */
static const u128 p10[22] = {1ULL,
			     10ULL,
			     100ULL,
			     1000ULL,
			     10000ULL,
			     100000ULL,
			     1000000ULL,
			     10000000ULL,
			     100000000ULL,
			     1000000000ULL,
			     10000000000ULL,
			     100000000000ULL,
			     1000000000000ULL,
			     10000000000000ULL,
			     100000000000000ULL,
			     1000000000000000ULL,
			     10000000000000000ULL,
			     100000000000000000ULL,
			     1000000000000000000ULL,
			     P10_19,
			     P10_19 * 10,
			     P10_19 * 100};

/* The digits of m * 2^-sh (m in [2^52, 2^53), sh >= 1) rounded to prec significant digits as
 * printf's %e rounds them (to nearest, ties to even, on the exact binary value): *q holds them
 * (prec digits), *x the decimal exponent of the rounded value. Returns false where this cannot
 * tell exactly (a scale past 10^21), and the caller asks printf. */
static bool digits_of(uint64_t m, int sh, int prec, int guess, u128 *q, int *x)
{
	const u128 lo = p10[prec - 1], hi = p10[prec];

	for (int tries = 0; tries < 4; tries++) {
		int k = prec - 1 - guess; /* decimals */
		u128 n, q0, rem, half;
		if (k < 0 || k > 21)
			return false;
		n = (u128)m * p10[k];
		q0 = n >> sh;
		if (q0 >= hi) {
			guess++;
			continue;
		}
		if (q0 < lo) {
			guess--;
			continue;
		}
		rem = n & (((u128)1 << sh) - 1);
		half = (u128)1 << (sh - 1);
		if (rem > half || (rem == half && (q0 & 1)))
			q0++;
		if (q0 == hi) { /* 9.99... rounded up to 10.0... */
			q0 = lo;
			guess++;
		}
		*q = q0;
		*x = guess;
		return true;
	}
	return false;
}

/* Writes q (prec digits, exponent x, -4 <= x < prec) as %g writes it: fixed notation with
 * prec - 1 - x decimals, trailing zeros and a bare point dropped. */
static void jb_fixed(struct jbuf *b, bool neg, u128 q, int prec, int x)
{
	int k = prec - 1 - x;
	char tmp[48];
	size_t i = sizeof(tmp);
	u128 ip = q / p10[k];
	uint64_t frac = (uint64_t)(q % p10[k]);

	while (k > 0 && frac % 10 == 0) {
		frac /= 10;
		k--;
	}
	for (; k > 0; k--) {
		tmp[--i] = (char)('0' + frac % 10);
		frac /= 10;
		if (k == 1)
			tmp[--i] = '.';
	}
	do {
		tmp[--i] = (char)('0' + (int)(ip % 10));
		ip /= 10;
	} while (ip);
	if (neg)
		tmp[--i] = '-';
	jb_put(b, tmp + i, sizeof(tmp) - i);
}

/* Writes d (finite, not an integer) as cJSON does without printf and strtod where that can be
 * done exactly: 1e-4 <= |d| < 1e15, where %1.15g and %1.17g write fixed notation. The 15-digit
 * form is read back as strtod would (the nearest double of its value, in d's binade) and kept
 * when that is within one DBL_EPSILON of d as cJSON tests it, which for two doubles of one
 * binade means at most one unit in the last place apart. Returns false where it cannot tell;
 * the caller then prints as cJSON does. */
static bool jb_number_exact(struct jbuf *b, double d)
{
	const double a = fabs(d);
	u128 q, num, t, rem;
	uint64_t m;
	int ex, sh, x, k, guess;

	if (!(a >= 1e-4 && a < 1e15))
		return false;
	m = (uint64_t)ldexp(frexp(a, &ex), 53); /* a = m * 2^(ex - 53), m in [2^52, 2^53) */
	sh = 53 - ex;
	if (sh < 1 || sh > 70)
		return false;
	guess = (int)floor(log10(a));
	if (!digits_of(m, sh, 15, guess, &q, &x) || x < -4 || x >= 15)
		return false;
	/* What strtod reads back: q * 10^-k rounded to a multiple of 2^-sh, ties to even. */
	k = 14 - x;
	num = q << sh;
	t = num / p10[k];
	rem = num % p10[k];
	if (2 * rem > p10[k] || (2 * rem == p10[k] && (t & 1)))
		t++;
	if (t < ((u128)1 << 52) || t >= ((u128)1 << 53))
		return false; /* another binade: its units differ */
	if ((t > m ? t - m : m - t) <= 1) {
		jb_fixed(b, d < 0, q, 15, x);
		return true;
	}
	if (!digits_of(m, sh, 17, x, &q, &x) || x < -4 || x >= 17)
		return false;
	jb_fixed(b, d < 0, q, 17, x);
	return true;
}

static void jb_number(struct jbuf *b, const cJSON *item)
{
	const double d = item->valuedouble;
	char num[32];
	char *end = NULL;
	int n;

	if (isnan(d) || isinf(d)) {
		jb_put(b, "null", 4);
		return;
	}
	/* %1.15g of an integral value below 1e15 is its digits, and it reads back exactly
	 * (negative zero keeps its sign through printf). */
	if (d == floor(d) && fabs(d) < 1e15 && !(d == 0 && signbit(d))) {
		jb_int(b, (long long)d);
		return;
	}
	if (jb_number_exact(b, d))
		return;
	n = snprintf(num, sizeof(num), "%1.15g", d);
	if (n > 0 && (size_t)n < sizeof(num)) {
		double test = strtod(num, &end);
		if (end == num || !same_double(test, d))
			n = snprintf(num, sizeof(num), "%1.17g", d);
	}
	/* cJSON's buffer holds 25 characters; %1.17g never needs more. */
	if (n <= 0 || n > 25) {
		b->failed = true;
		return;
	}
	/* A locale's decimal comma is written as a point, as cJSON does. */
	for (int i = 0; i < n; i++)
		if (num[i] == ',')
			num[i] = '.';
	jb_put(b, num, (size_t)n);
}

/* Whether any of the 8 bytes of x needs escaping in a JSON string: a control character
 * (< 0x20), '"' or '\\'. A zero byte counts as a control character. */
static bool jb_word_special(uint64_t x)
{
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	const uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
	/* A byte below 0x20, or zero after the xor: its high bit is set in each test (bytes
	 * with the high bit set themselves are masked out by ~x, ~q and ~bs). */
	uint64_t t = ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((bs - ones) & ~bs);

	return (t & highs) != 0;
}

static void jb_string(struct jbuf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *end;
	size_t len;

	if (!s) {
		jb_put(b, "\"\"", 2);
		return;
	}
	len = strlen(s);
	end = p + len;
	/* Most strings need no escape: room for them whole, then runs copied at once. */
	if (!jb_room(b, len + 2))
		return;
	b->p[b->len++] = '"';
	while (p < end) {
		const unsigned char *run = p;
		char esc[6];
		size_t n = 2;
		uint64_t w;
		while (end - p >= 8) {
			memcpy(&w, p, 8);
			if (jb_word_special(w))
				break;
			p += 8;
		}
		while (p < end && *p >= 32 && *p != '"' && *p != '\\')
			p++;
		jb_put(b, (const char *)run, (size_t)(p - run));
		if (p == end)
			break;
		esc[0] = '\\';
		switch (*p) {
		case '"':
		case '\\':
			esc[1] = (char)*p;
			break;
		case '\b':
			esc[1] = 'b';
			break;
		case '\f':
			esc[1] = 'f';
			break;
		case '\n':
			esc[1] = 'n';
			break;
		case '\r':
			esc[1] = 'r';
			break;
		case '\t':
			esc[1] = 't';
			break;
		default:
			esc[1] = 'u';
			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[*p >> 4];
			esc[5] = hex[*p & 15];
			n = 6;
		}
		jb_put(b, esc, n);
		p++;
	}
	jb_char(b, '"');
}

static void jb_value(struct jbuf *b, const cJSON *item, int depth)
{
	const cJSON *c;

	if (b->failed)
		return;
	if (depth > CJSON_NESTING_LIMIT) {
		b->failed = true;
		return;
	}
	switch (item->type & 0xFF) {
	case cJSON_NULL:
		jb_put(b, "null", 4);
		break;
	case cJSON_False:
		jb_put(b, "false", 5);
		break;
	case cJSON_True:
		jb_put(b, "true", 4);
		break;
	case cJSON_Number:
		jb_number(b, item);
		break;
	case cJSON_Raw:
		if (!item->valuestring)
			b->failed = true;
		else
			jb_put(b, item->valuestring, strlen(item->valuestring));
		break;
	case cJSON_String:
		jb_string(b, item->valuestring);
		break;
	case cJSON_Array:
		jb_char(b, '[');
		for (c = item->child; c; c = c->next) {
			jb_value(b, c, depth + 1);
			if (c->next)
				jb_char(b, ',');
		}
		jb_char(b, ']');
		break;
	case cJSON_Object:
		jb_char(b, '{');
		for (c = item->child; c; c = c->next) {
			jb_string(b, c->string);
			jb_char(b, ':');
			jb_value(b, c, depth + 1);
			if (c->next)
				jb_char(b, ',');
		}
		jb_char(b, '}');
		break;
	default:
		b->failed = true;
	}
}

char *api_json_print(const cJSON *item)
{
	struct jbuf b = {NULL, 0, 0, false};

	if (!item)
		return NULL;
	jb_value(&b, item, 0);
	if (b.failed || !jb_room(&b, 0)) {
		/* Whatever this printer does not handle (an invalid item, a raw item without text,
		 * nesting deeper than cJSON parses, no memory) is cJSON's to decide. */
		free(b.p);
		return api_json_owned(cJSON_PrintUnformatted(item));
	}
	b.p[b.len] = '\0';
	return b.p;
}

int api_reply_cjson(struct api_reply *out, int status, cJSON *o)
{
	char *json = o ? api_json_print(o) : NULL;

	cJSON_Delete(o);
	if (!json)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	api_reply_json(out, status, json);
	return 0;
}
