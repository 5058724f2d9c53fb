/*
 * Content-Range lines (core/content_range.c) as Hubs and CDNs send them, and as a lying or
 * broken server might: the total is believed only when the whole line is well formed and the
 * numbers are sane.
 */
#include <string.h>

#include "core/content_range.h"
#include "core/err.h"
#include "tests/test.h"

static int parse(const char *line, struct rf_content_range *r)
{
	memset(r, 0xa5, sizeof(*r));
	return rf_content_range_line(line, strlen(line), r);
}

START_TEST(well_formed_lines_give_their_numbers)
{
	struct rf_content_range r;

	ck_assert_int_eq(parse("Content-Range: bytes 0-7/988097824\r\n", &r), 0);
	ck_assert(r.has_range && r.has_total);
	ck_assert_uint_eq(r.first, 0);
	ck_assert_uint_eq(r.last, 7);
	ck_assert_uint_eq(r.total, 988097824);
	/* Any case, tabs, no line end; an unknown total; the form of a 416. */
	ck_assert_int_eq(parse("content-range:\tBYTES 8-16106/16107", &r), 0);
	ck_assert_uint_eq(r.total, 16107);
	ck_assert_int_eq(parse("Content-Range: bytes 0-7/*\n", &r), 0);
	ck_assert(r.has_range && !r.has_total);
	ck_assert_int_eq(parse("Content-Range: bytes */1234\r\n", &r), 0);
	ck_assert(!r.has_range && r.has_total);
	ck_assert_uint_eq(r.total, 1234);
	/* The largest total believed. */
	ck_assert_int_eq(parse("Content-Range: bytes 0-7/9007199254740992", &r), 0);
	ck_assert_uint_eq(r.total, RF_CONTENT_RANGE_MAX);
}
END_TEST

START_TEST(lies_and_junk_are_refused_and_leave_nothing)
{
	static const struct {
		const char *line;
		int rc;
	} bad[] = {
		{"Content-Length: 8\r\n", RF_E_NOT_FOUND},
		{"Content-Range", RF_E_NOT_FOUND},
		{"Content-Range: bytes 0-7/9007199254740993", RF_E_RANGE},
		{"Content-Range: bytes 0-7/9223372036854775807\r\n", RF_E_RANGE},
		{"Content-Range: bytes 0-7/99999999999999999999999", RF_E_RANGE},
		{"Content-Range: bytes 7-0/100", RF_E_RANGE},
		{"Content-Range: bytes 0-100/100", RF_E_RANGE},
		{"Content-Range: bytes 0-7/-1", RF_E_PARSE},
		{"Content-Range: bytes 0-7/12x", RF_E_PARSE},
		{"Content-Range: bytes 0-7/ 12", RF_E_PARSE},
		{"Content-Range: bytes 0-7", RF_E_PARSE},
		{"Content-Range: bytes -7/12", RF_E_PARSE},
		{"Content-Range: bytes */*", RF_E_PARSE},
		{"Content-Range: items 0-7/12", RF_E_PARSE},
		{"Content-Range: bytes0-7/12", RF_E_PARSE},
		{"Content-Range: bytes 0-7/12/13", RF_E_PARSE},
		{"Content-Range: bytes 0-7/12\r\nX: 1", RF_E_PARSE},
		{"Content-Range: ", RF_E_PARSE},
	};
	struct rf_content_range r, untouched;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse(bad[i].line, &r) == bad[i].rc, "%s", bad[i].line);
		memset(&untouched, 0xa5, sizeof(untouched));
		ck_assert_msg(memcmp(&r, &untouched, sizeof(r)) == 0, "%s wrote", bad[i].line);
	}
	ck_assert_int_eq(rf_content_range_line(NULL, 0, &r), RF_E_NOT_FOUND);
}
END_TEST

Suite *content_range_suite(void)
{
	Suite *s = suite_create("content_range");
	TCase *tc = tcase_create("lines");

	tcase_add_test(tc, well_formed_lines_give_their_numbers);
	tcase_add_test(tc, lies_and_junk_are_refused_and_leave_nothing);
	suite_add_tcase(s, tc);
	return s;
}
