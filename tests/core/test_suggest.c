/*
 * "Did you mean": edit distances (with adjacent swaps) and the typo thresholds of
 * core/suggest.h.
 */
#include <string.h>

#include "core/suggest.h"
#include "tests/test.h"

START_TEST(distances_count_edits_and_swaps)
{
	ck_assert_int_eq(rf_edit_distance("estimate", "estimate"), 0);
	ck_assert_int_eq(rf_edit_distance("estimat", "estimate"), 1);  /* deletion */
	ck_assert_int_eq(rf_edit_distance("esitmate", "estimate"), 1); /* swap */
	ck_assert_int_eq(rf_edit_distance("Estimate", "estimate"), 0); /* case */
	ck_assert_int_eq(rf_edit_distance("", "abc"), 3);
	ck_assert_int_eq(rf_edit_distance("kitten", "sitting"), 3);
	{
		char longw[RF_SUGGEST_MAX_LEN + 2];
		memset(longw, 'a', sizeof(longw) - 1);
		longw[sizeof(longw) - 1] = '\0';
		ck_assert_int_eq(rf_edit_distance(longw, "a"), RF_SUGGEST_MAX_LEN + 1);
	}
}
END_TEST

START_TEST(suggestions_are_typos_only)
{
	const char *const cmds[] = {"serve", "detect", "estimate", "config", NULL, "validate"};
	const size_t n = sizeof(cmds) / sizeof(cmds[0]);

	ck_assert_str_eq(rf_suggest("estimat", cmds, n), "estimate");
	ck_assert_str_eq(rf_suggest("vaildate", cmds, n), "validate");
	ck_assert_str_eq(rf_suggest("serv", cmds, n), "serve");
	ck_assert_ptr_null(rf_suggest("estimate", cmds, n)); /* the word itself */
	ck_assert_ptr_null(rf_suggest("train", cmds, n));    /* nothing close */
	ck_assert_ptr_null(rf_suggest("xy", cmds, n));
}
END_TEST

Suite *suggest_suite(void)
{
	Suite *s = suite_create("suggest");
	TCase *tc = tcase_create("suggest");

	tcase_add_test(tc, distances_count_edits_and_swaps);
	tcase_add_test(tc, suggestions_are_typos_only);
	suite_add_tcase(s, tc);
	return s;
}
