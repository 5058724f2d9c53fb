/*
 * rf_vformat (through rf_format) against the C library's vsnprintf (through snprintf): the same bytes and the same return value for
 * every conversion it writes itself (%s with and without a precision, %c, %d/%i/%u with l, ll
 * and z, %f with 0 to 9 decimals on doubles of every magnitude, exact ties, negative zero and
 * subnormals), for those it hands back (%g, widths, flags, %x, a NULL string), and in buffers
 * too small for the text.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/format.h"
#include "tests/test.h"

/* Both ways into a large buffer and into buffers of 0, 1, 2 and 7 bytes. */
#define SAME(...)                                                                                  \
	do {                                                                                       \
		static const size_t sizes_[] = {256, 0, 1, 2, 7};                                  \
		for (size_t s_ = 0; s_ < sizeof(sizes_) / sizeof(sizes_[0]); s_++) {               \
			char a_[256], b_[256];                                                     \
			int na_, nb_;                                                              \
			memset(a_, 'x', sizeof(a_));                                               \
			memset(b_, 'x', sizeof(b_));                                               \
			na_ = rf_format(a_, sizes_[s_], __VA_ARGS__);                              \
			nb_ = snprintf(b_, sizes_[s_], __VA_ARGS__);                               \
			ck_assert_int_eq(na_, nb_);                                                \
			ck_assert_msg(memcmp(a_, b_, sizeof(a_)) == 0,                             \
				      "size %zu: '%.80s' != '%.80s'", sizes_[s_], a_, b_);         \
		}                                                                                  \
	} while (0)

/* Every precision the fast path writes, and printf's default. */
static void same_fixed(double x)
{
	SAME("%f", x);
	SAME("%.0f", x);
	SAME("%.1f", x);
	SAME("%.2f", x);
	SAME("%.3f", x);
	SAME("%.4f", x);
	SAME("%.6f", x);
	SAME("%.9f", x);
	SAME("at %.1f GB/s, %.0f%% of %s", x, x * 100, "peak");
}

START_TEST(fixed_decimals_round_as_printf_does)
{
	static const double edge[] = {0.0,     -0.0,    0.5,     1.5,      2.5,          -2.5,
				      0.125,   0.375,   -0.125,  0.05,     0.15,         0.25,
				      0.35,    1e-300,  -1e-300, 4.9e-324, DBL_MIN,      1e-10,
				      0.0005,  0.00049, 9.5,     99.95,    999.9995,     1e9,
				      1e15,    9.9e17,  1e18,    1e19,     1.8e19,       1e25,
				      DBL_MAX, 1.0 / 3, 2.0 / 3, 51.2,     7798468608.0, -4.46};
	uint64_t state = 0x9e3779b97f4a7c15ULL;

	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		same_fixed(edge[i]);
	/* Ties of every precision: k + 0.5 units of the last decimal, where that is exact. */
	for (int prec = 0; prec <= 9; prec++)
		for (int k = 0; k < 64; k++) {
			/* (2k + 1) / 2^(prec + 1): for prec <= 1 a tie of the last decimal */
			double x = ldexp((double)(2 * k + 1), -(prec + 1));
			same_fixed(x);
			same_fixed(x * 1e-1);
			same_fixed(-x * 1e-3);
		}
	/* Doubles of every magnitude and mantissa (a fixed-seed generator). */
	for (int i = 0; i < 20000; i++) {
		double x;
		state ^= state << 13;
		state ^= state >> 7;
		state ^= state << 17;
		x = ldexp((double)(state >> 11), (int)(state % 120) - 110);
		same_fixed(i % 2 ? x : -x);
	}
	SAME("%f", NAN);
	SAME("%.1f", INFINITY);
	SAME("%.1f", -INFINITY);
}
END_TEST

START_TEST(integers_strings_and_characters)
{
	const char *text = "Qwen/Qwen2.5-7B";

	SAME("%d %i %d %d", 0, -1, INT_MIN, INT_MAX);
	SAME("%u %u", 0u, UINT_MAX);
	SAME("%ld %ld %lu", LONG_MIN, LONG_MAX, ULONG_MAX);
	SAME("%lld %lld %llu", LLONG_MIN, LLONG_MAX, ULLONG_MAX);
	SAME("%zu %zu %zd", (size_t)0, SIZE_MAX, (ptrdiff_t)-42);
	SAME("%s|%.3s|%.0s|%.60s|%.*s|%.*s", text, text, text, text, 4, text, -1, text);
	SAME("%c%c%c", 'a', ' ', '%');
	SAME("100%% of %s%%", text);
	SAME("plain text, no conversion at all");
	SAME("%s", "");
}
END_TEST

START_TEST(what_the_fast_path_leaves_is_printfs)
{
	const char *volatile none = NULL; /* unknown to the compiler's format checks */

	SAME("%g %g %g", 0.1, 1e300, 123456789.0);
	SAME("%1.17g", 0.1);
	SAME("%5d|%-5d|%05d|%+d|% d", 42, 42, 42, 42, 42);
	SAME("%-8s|%8s|", "ab", "cd");
	SAME("%x %04x %016llx", 255u, 10u, 0xdeadbeefULL);
	SAME("%e", 12345.678);
	SAME("%10.2f|%-10.2f|%+.1f", 3.14159, 2.71828, 1.5);
	SAME("%.12f %.17f", 0.1, 0.1);
	SAME("%hd %hhu", (short)-3, (unsigned char)200);
	SAME("%s then %d", (const char *)none, 7);
	SAME("%p", (void *)0);
	SAME("%.1f then %g then %s", 2.25, 2.25, "tail");
}
END_TEST

Suite *format_suite(void)
{
	Suite *s = suite_create("format");
	TCase *tc = tcase_create("vformat");

	tcase_add_test(tc, fixed_decimals_round_as_printf_does);
	tcase_add_test(tc, integers_strings_and_characters);
	tcase_add_test(tc, what_the_fast_path_leaves_is_printfs);
	suite_add_tcase(s, tc);
	return s;
}
