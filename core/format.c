/*
 * The notes' formatter (see format.h). Text goes into a bounded buffer as vsnprintf fills one:
 * the prefix that fits, NUL-terminated, and the length of the whole.
 */
#include "core/format.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct fmt_out {
	char *buf;
	size_t len; /* the buffer's size */
	size_t n;   /* the text's length so far, written or not */
};

static void put(struct fmt_out *o, const char *s, size_t k)
{
	if (o->len && o->n < o->len - 1) {
		size_t room = o->len - 1 - o->n;
		memcpy(o->buf + o->n, s, k < room ? k : room);
	}
	o->n += k;
}

static void put_char(struct fmt_out *o, char c)
{
	put(o, &c, 1);
}

static void put_unsigned(struct fmt_out *o, bool neg, unsigned long long v)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (neg)
		tmp[--i] = '-';
	put(o, tmp + i, sizeof(tmp) - i);
}

static void put_signed(struct fmt_out *o, long long v)
{
	put_unsigned(o, v < 0, v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v);
}

__extension__ typedef unsigned __int128 u128;

static const uint64_t pow10_u64[10] = {1,      10,      100,      1000,      10000,
				       100000, 1000000, 10000000, 100000000, 1000000000};

/* Writes x with prec decimals as %.*f does: x's exact value times 10^prec rounded to an
 * integer, to nearest with ties to even. Returns false (nothing written) where this cannot be
 * done in 64 bits: the caller then leaves the whole text to vsnprintf. */
static bool put_fixed(struct fmt_out *o, double x, int prec)
{
	const double a = fabs(x);
	uint64_t q = 0, ip, frac;
	char tmp[48];
	size_t i = sizeof(tmp);

	if (!isfinite(x) || prec < 0 || prec > 9 || a * (double)pow10_u64[prec] >= 1e19)
		return false;
	if (a > 0) {
		int ex;
		/* a = m * 2^e exactly, m an integer of 53 bits */
		uint64_t m = (uint64_t)ldexp(frexp(a, &ex), 53);
		int e = ex - 53;
		u128 num = (u128)m * pow10_u64[prec]; /* below 2^83 */
		if (e >= 0) {
			q = (uint64_t)(num << e); /* below 10^19 by the test above */
		} else if (-e <= 84) {
			int s = -e;
			u128 rem = num & (((u128)1 << s) - 1), half = (u128)1 << (s - 1);
			q = (uint64_t)(num >> s);
			if (rem > half || (rem == half && (q & 1)))
				q++;
		} /* else below half a unit of the last decimal: 0 */
	}
	ip = q / pow10_u64[prec];
	frac = q % pow10_u64[prec];
	for (int k = 0; k < prec; k++) {
		tmp[--i] = (char)('0' + frac % 10);
		frac /= 10;
	}
	if (prec > 0)
		tmp[--i] = '.';
	do {
		tmp[--i] = (char)('0' + ip % 10);
		ip /= 10;
	} while (ip);
	if (signbit(x))
		tmp[--i] = '-';
	put(o, tmp + i, sizeof(tmp) - i);
	return true;
}

/* The fast path: returns false at the first conversion it does not write. */
static bool format_fast(struct fmt_out *o, const char *fmt, va_list ap)
{
	const char *p = fmt;

	for (;;) {
		const char *pct = strchr(p, '%');
		int prec = -1;
		enum {
			LEN_NONE,
			LEN_L,
			LEN_LL,
			LEN_Z
		} lm = LEN_NONE;

		if (!pct) {
			put(o, p, strlen(p));
			return true;
		}
		put(o, p, (size_t)(pct - p));
		p = pct + 1;
		if (*p == '.') {
			p++;
			if (*p == '*') {
				prec = va_arg(ap, int);
				p++;
				if (*p != 's')
					return false;
			} else {
				if (*p < '0' || *p > '9')
					return false;
				prec = 0;
				while (*p >= '0' && *p <= '9' && prec < 1000)
					prec = prec * 10 + (*p++ - '0');
			}
		}
		if (*p == 'l') {
			lm = LEN_L;
			if (*++p == 'l') {
				lm = LEN_LL;
				p++;
			}
		} else if (*p == 'z') {
			lm = LEN_Z;
			p++;
		}
		switch (*p++) {
		case '%':
			if (prec >= 0 || lm != LEN_NONE)
				return false;
			put_char(o, '%');
			break;
		case 'c':
			if (prec >= 0 || lm != LEN_NONE)
				return false;
			put_char(o, (char)va_arg(ap, int));
			break;
		case 's': {
			const char *s;
			if (lm != LEN_NONE)
				return false;
			s = va_arg(ap, const char *);
			if (!s)
				return false; /* "(null)" is the C library's to write */
			put(o, s, prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s));
			break;
		}
		case 'd':
		case 'i':
			if (prec >= 0)
				return false;
			put_signed(o, lm == LEN_LL ? va_arg(ap, long long) :
				      lm == LEN_L  ? va_arg(ap, long) :
				      lm == LEN_Z  ? (long long)va_arg(ap, ptrdiff_t) :
						     va_arg(ap, int));
			break;
		case 'u':
			if (prec >= 0)
				return false;
			put_unsigned(o, false,
				     lm == LEN_LL ? va_arg(ap, unsigned long long) :
				     lm == LEN_L  ? va_arg(ap, unsigned long) :
				     lm == LEN_Z  ? va_arg(ap, size_t) :
						    va_arg(ap, unsigned));
			break;
		case 'f':
			if (lm != LEN_NONE ||
			    !put_fixed(o, va_arg(ap, double), prec < 0 ? 6 : prec))
				return false;
			break;
		default:
			return false;
		}
	}
}

int rf_vformat(char *buf, size_t len, const char *fmt, va_list ap)
{
	struct fmt_out o = {buf, len, 0};
	va_list again;
	bool done;

	va_copy(again, ap);
	done = format_fast(&o, fmt, ap);
	if (done) {
		va_end(again);
		if (o.n > INT_MAX)
			return -1;
		if (len)
			buf[o.n < len ? o.n : len - 1] = '\0';
		return (int)o.n;
	}
	{
		int n = vsnprintf(buf, len, fmt, again);
		va_end(again);
		return n;
	}
}

int rf_format(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = rf_vformat(buf, len, fmt, ap);
	va_end(ap);
	return n;
}
