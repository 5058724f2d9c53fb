/*
 * Unit tests for core's foundations: the error table, checked number parsing and the
 * text walker.
 */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "core/err.h"
#include "core/numparse.h"
#include "core/text.h"
#include "tests/test.h"

START_TEST(every_error_has_a_unique_code_and_a_4xx_or_5xx_status)
{
	for (int e = RF_ERR_BASE_ + 1; e < RF_ERR_END_; e++) {
		ck_assert(rf_err_valid(e));
		ck_assert_int_ge(rf_err_status(e), 400);
		ck_assert_int_le(rf_err_status(e), 599);
		ck_assert(strlen(rf_err_message(e)) > 0);
		for (const char *c = rf_err_code(e); *c; c++)
			ck_assert_msg((*c >= 'a' && *c <= 'z') || *c == '_',
				      "code %s is not snake_case", rf_err_code(e));
		for (int f = e + 1; f < RF_ERR_END_; f++)
			ck_assert_str_ne(rf_err_code(e), rf_err_code(f));
	}
	ck_assert(!rf_err_valid(0));
	ck_assert(!rf_err_valid(12345));
	ck_assert_str_eq(rf_err_code(12345), "internal_error");
	ck_assert_int_eq(rf_err_status(RF_E_INVALID_JSON), 400);
	ck_assert_int_eq(rf_err_status(RF_E_BODY_TOO_LARGE), 413);
	ck_assert_int_eq(rf_err_status(RF_E_INVALID_VALUE), 422);
	ck_assert_int_eq(rf_err_status(RF_E_STORE_UNAVAILABLE), 503);
}
END_TEST

START_TEST(parse_u64_accepts_digits_only_and_enforces_max)
{
	uint64_t v = 7;

	ck_assert_int_eq(rf_parse_u64("0", 1, 10, &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(rf_parse_u64("18446744073709551615", 20, UINT64_MAX, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	v = 7;
	ck_assert_int_eq(rf_parse_u64("18446744073709551616", 20, UINT64_MAX, &v), RF_E_RANGE);
	ck_assert_int_eq(rf_parse_u64("11", 2, 10, &v), RF_E_RANGE);
	ck_assert_int_eq(rf_parse_u64("", 0, 10, &v), RF_E_PARSE);
	ck_assert_int_eq(rf_parse_u64("-1", 2, 10, &v), RF_E_PARSE);
	ck_assert_int_eq(rf_parse_u64(" 1", 2, 10, &v), RF_E_PARSE);
	ck_assert_int_eq(rf_parse_u64("1x", 2, 10, &v), RF_E_PARSE);
	ck_assert_uint_eq(v, 7);                                  /* untouched on failure */
	ck_assert_int_eq(rf_parse_u64("123abc", 3, 1000, &v), 0); /* length is honoured */
	ck_assert_uint_eq(v, 123);
	ck_assert_int_eq(rf_parse_u64_str(NULL, 1, &v), RF_E_PARSE);
}
END_TEST

START_TEST(parse_double_rejects_junk_inf_nan_and_out_of_range)
{
	double d = -9;

	ck_assert_int_eq(rf_parse_double("3.5", 3, 0, 10, &d), 0);
	ck_assert_double_eq(d, 3.5);
	ck_assert_int_eq(rf_parse_double("-1e3", 4, -1e4, 0, &d), 0);
	ck_assert_double_eq(d, -1000);
	ck_assert_int_eq(rf_parse_double("inf", 3, 0, 10, &d), RF_E_PARSE);
	ck_assert_int_eq(rf_parse_double("nan", 3, 0, 10, &d), RF_E_PARSE);
	ck_assert_int_eq(rf_parse_double("0x10", 4, 0, 100, &d), RF_E_PARSE);
	ck_assert_int_eq(rf_parse_double("1e999", 5, 0, 10, &d), RF_E_PARSE);
	ck_assert_int_eq(rf_parse_double("11", 2, 0, 10, &d), RF_E_RANGE);
	ck_assert_int_eq(rf_parse_double("1.2.3", 5, 0, 10, &d), RF_E_PARSE);
}
END_TEST

START_TEST(lines_and_key_values_stay_inside_the_buffer)
{
	const char text[] = "a : 1\r\nb:\t two words \n\nno colon\nlast:x";
	struct rf_lines it;
	struct rf_span line, k, v;
	int n = 0, kv = 0;

	/* Walk all but the final byte: "last:x" must come back as "last:" without the x. */
	rf_lines_init(&it, text, sizeof(text) - 2);
	while (rf_lines_next(&it, &line)) {
		n++;
		if (rf_split_kv(line, &k, &v)) {
			kv++;
			if (rf_span_eq(k, "b"))
				ck_assert(rf_span_eq(v, "two words"));
			if (rf_span_eq(k, "a"))
				ck_assert(rf_span_eq(v, "1"));
			if (rf_span_eq(k, "last"))
				ck_assert_uint_eq(v.len, 0);
		}
	}
	ck_assert_int_eq(n, 5);
	ck_assert_int_eq(kv, 3);
}
END_TEST

static __attribute__((format(printf, 3, 4))) void note(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rf_note_vformat(buf, len, fmt, ap);
	va_end(ap);
}

/* A note that fits is written whole and not counted; one that does not ends in "..." and is
 * counted, so a test over many answers can hold the count at zero. */
START_TEST(a_note_cut_to_its_buffer_says_so_and_is_counted)
{
	char buf[16];
	unsigned long before = rf_notes_cut();

	note(buf, sizeof(buf), "%s %d", "fits", 12);
	ck_assert_str_eq(buf, "fits 12");
	ck_assert_uint_eq(rf_notes_cut(), before);
	note(buf, sizeof(buf), "%s", "a sentence longer than sixteen bytes");
	ck_assert_str_eq(buf, "a sentence l...");
	ck_assert_uint_eq(rf_notes_cut(), before + 1);
	note(buf, sizeof(buf), "%s", "exactly 15 byte");
	ck_assert_str_eq(buf, "exactly 15 byte");
	ck_assert_uint_eq(rf_notes_cut(), before + 1);
}
END_TEST

Suite *core_basics_suite(void)
{
	Suite *s = suite_create("core_basics");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, every_error_has_a_unique_code_and_a_4xx_or_5xx_status);
	tcase_add_test(tc, parse_u64_accepts_digits_only_and_enforces_max);
	tcase_add_test(tc, parse_double_rejects_junk_inf_nan_and_out_of_range);
	tcase_add_test(tc, lines_and_key_values_stay_inside_the_buffer);
	tcase_add_test(tc, a_note_cut_to_its_buffer_says_so_and_is_counted);
	suite_add_tcase(s, tc);
	return s;
}
