/*
 * The calibration CSV reader reads the real files: quoted commas, doubled quotes, padding.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/csv.h"
#include "tests/test.h"

START_TEST(reads_quotes_commas_and_the_real_calibration_files)
{
	char *dir = t_mkdtemp(), *f = t_path(dir, "x.csv");
	const char text[] = "a,b,c\r\n1,\"x, \"\"y\"\"\",3\n\n4,5\n";
	struct t_csv *t;
	double v;
	char *cal = t_path(t_data_dir(), "calibration/llamacpp_tg_pp.csv");

	ck_assert_int_eq(t_write_file(f, text, sizeof(text) - 1), 0);
	t = t_csv_read(f);
	ck_assert_int_eq(t->n_rows, 2);
	ck_assert_str_eq(t_csv_get(t, 0, "b"), "x, \"y\"");
	ck_assert_str_eq(t_csv_get(t, 1, "c"), "");
	ck_assert_int_eq(t_csv_num(t, 1, "b", &v), 0);
	ck_assert_double_eq(v, 5);
	ck_assert_int_eq(t_csv_num(t, 0, "b", &v), -1);
	t_csv_free(t);
	t = t_csv_read(cal);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_gt(t->n_rows, 100);
	ck_assert_int_ge(t_csv_col(t, "tokens_per_s"), 0);
	for (int r = 0; r < t->n_rows; r++)
		ck_assert_msg(t_csv_num(t, r, "tokens_per_s", &v) == 0, "row %d", r);
	t_csv_free(t);
	t_rmtree(dir);
	free(dir);
	free(f);
	free(cal);
}
END_TEST

Suite *csv_suite(void)
{
	Suite *s = suite_create("csv");
	TCase *tc = tcase_create("csv");

	tcase_add_test(tc, reads_quotes_commas_and_the_real_calibration_files);
	suite_add_tcase(s, tc);
	return s;
}
