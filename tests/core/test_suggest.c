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

/* A part of a name is no typo, but a whole token of one is what the name was meant to be:
 * "4090" is the RTX 4090, the shortest name holding it. */
START_TEST(a_token_of_a_name_finds_it)
{
	const char *const gpus[] = {"NVIDIA GeForce RTX 4090", "RTX 4090", "RTX 4090 D",
				    "RTX 40900"};
	struct rf_suggest_search s;

	ck_assert_str_eq(rf_suggest("4090", gpus, 4), "RTX 4090");
	ck_assert_ptr_null(rf_suggest("409", gpus, 4)); /* not a whole token, no typo */
	rf_suggest_begin(&s, "RTX 409");
	for (int i = 0; i < 4; i++)
		rf_suggest_offer(&s, gpus[i]);
	ck_assert_str_eq(rf_suggest_result(&s), "RTX 4090"); /* a typo beats a token */
}
END_TEST

Suite *suggest_suite(void)
{
	Suite *s = suite_create("suggest");
	TCase *tc = tcase_create("suggest");

	tcase_add_test(tc, distances_count_edits_and_swaps);
	tcase_add_test(tc, suggestions_are_typos_only);
	tcase_add_test(tc, a_token_of_a_name_finds_it);
	suite_add_tcase(s, tc);
	return s;
}
