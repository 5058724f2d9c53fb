/*
 * Speed estimates refined by recorded runs (core/speed_history): the roofline without runs,
 * the robust centre of runs of the same model, an outlier that moves nothing, the host's
 * efficiency carried to another model, decode and prefill refined independently, and the
 * efficiency clamp.
 */
#include <math.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/speed_history.h"
#include "tests/test.h"

#define DEC SPEED_TEST_DECODE
#define PRE SPEED_TEST_PREFILL

/* A run of the model being estimated with the given measured figures (<= 0: not measured). */
static struct speed_history_run same(double decode, double prefill)
{
	struct speed_history_run r;

	memset(&r, 0, sizeof(r));
	r.same_model = true;
	r.measured_tps[DEC] = decode;
	r.measured_tps[PRE] = prefill;
	return r;
}

/* A run of another model: measured and what the roofline predicted for it. */
static struct speed_history_run other(double decode, double decode_pred, double prefill,
				      double prefill_pred)
{
	struct speed_history_run r = same(decode, prefill);

	r.same_model = false;
	r.predicted_tps[DEC] = decode_pred;
	r.predicted_tps[PRE] = prefill_pred;
	return r;
}

static void refine(const double roof[2], const struct speed_history_run *runs, size_t n,
		   struct speed_history_result *res)
{
	ck_assert_int_eq(speed_history_refine(roof, runs, n, res), 0);
}

START_TEST(no_runs_leave_the_roofline)
{
	const double roof[2] = {120, 3000};
	struct speed_history_result r;
	/* Runs that measured nothing, and a run of another model without a prediction, say
	 * nothing either. */
	struct speed_history_run runs[2] = {same(0, -1), other(80, -1, 900, 0)};

	refine(roof, NULL, 0, &r);
	ck_assert_int_eq(r.basis, SPEED_BASIS_ROOFLINE);
	ck_assert_str_eq(speed_basis_name(r.basis), "roofline");
	ck_assert_double_eq(r.figure[DEC].tokens_per_s, 120);
	ck_assert_double_eq(r.figure[PRE].tokens_per_s, 3000);
	ck_assert_int_eq(r.runs, 0);

	refine(roof, runs, 2, &r);
	ck_assert_int_eq(r.basis, SPEED_BASIS_ROOFLINE);
	ck_assert_double_eq(r.figure[DEC].tokens_per_s, 120);
	ck_assert_int_eq(r.runs, 0);
}
END_TEST

START_TEST(runs_of_the_same_model_are_measured_and_their_median_wins)
{
	const double roof[2] = {120, 3000};
	struct speed_history_result r;
	struct speed_history_run one = same(90, -1);
	struct speed_history_run three[3] = {same(88, -1), same(90, -1), same(92, -1)};

	/* One run is used as it is. */
	refine(roof, &one, 1, &r);
	ck_assert_int_eq(r.figure[DEC].basis, SPEED_BASIS_MEASURED);
	ck_assert_double_eq_tol(r.figure[DEC].tokens_per_s, 90, 1e-9);
	ck_assert_double_eq_tol(r.figure[DEC].factor, 90.0 / 120.0, 1e-9);
	ck_assert_int_eq(r.figure[DEC].runs, 1);
	ck_assert_int_eq(r.basis, SPEED_BASIS_MEASURED);
	ck_assert_str_eq(speed_basis_name(r.basis), "measured");
	ck_assert_int_eq(r.runs, 1);

	/* Several: their centre, not the roofline, whatever the roofline says. */
	refine(roof, three, 3, &r);
	ck_assert_double_eq_tol(r.figure[DEC].tokens_per_s, 90, 0.1);
	ck_assert_int_eq(r.figure[DEC].runs, 3);
	ck_assert_int_eq(r.figure[DEC].outliers, 0);
	ck_assert_int_eq(r.runs, 3);
}
END_TEST

START_TEST(one_outlier_among_several_runs_moves_nothing)
{
	const double roof[2] = {150, 3000};
	struct speed_history_result r;
	struct speed_history_run runs[6] = {same(98, -1),  same(99, -1),  same(100, -1),
					    same(101, -1), same(102, -1), same(1000, -1)};
	double plain_mean = 0;

	for (int i = 0; i < 6; i++)
		plain_mean += runs[i].measured_tps[DEC] / 6;
	refine(roof, runs, 6, &r);
	ck_assert_msg(fabs(r.figure[DEC].tokens_per_s - 100) < 1.5, "%.2f",
		      r.figure[DEC].tokens_per_s);
	ck_assert_int_eq(r.figure[DEC].outliers, 1);
	ck_assert_int_eq(r.figure[DEC].runs, 6);
	/* A plain mean would have been dragged to 250. */
	ck_assert(plain_mean > 240);

	/* A slow outlier (a throttled run) is left out as well. */
	runs[5] = same(10, -1);
	refine(roof, runs, 6, &r);
	ck_assert_msg(fabs(r.figure[DEC].tokens_per_s - 100) < 1.5, "%.2f",
		      r.figure[DEC].tokens_per_s);
	ck_assert_int_eq(r.figure[DEC].outliers, 1);
}
END_TEST

START_TEST(the_centre_keeps_ordinary_spread_and_drops_the_far_value)
{
	double v[5] = {100, 100, 100, 100, 103};
	double w[4] = {100, 110, 90, 400};
	double x[2] = {100, 400};
	int out = -1;

	/* Identical runs and one 3% off: run-to-run noise, not an outlier. */
	ck_assert_double_eq_tol(speed_history_centre(v, 5, &out),
				exp((4 * log(100) + log(103)) / 5), 1e-9);
	ck_assert_int_eq(out, 0);
	/* A spread of 10% around 100 and one at 4x. */
	ck_assert_double_eq_tol(speed_history_centre(w, 4, &out),
				exp((log(100) + log(110) + log(90)) / 3), 1e-9);
	ck_assert_int_eq(out, 1);
	/* Two runs cannot tell which one is wrong: their geometric mean. */
	ck_assert_double_eq_tol(speed_history_centre(x, 2, &out), 200, 1e-9);
	ck_assert_int_eq(out, 0);
	ck_assert_double_eq(speed_history_centre(x, 0, &out), -1);
}
END_TEST

START_TEST(other_models_calibrate_the_host)
{
	/* The host ran two other models at 80% of their roofline (one at 79%, one at 81%). */
	const double roof[2] = {200, 4000};
	struct speed_history_result r;
	struct speed_history_run runs[3] = {other(79, 100, 2000, 2500), other(162, 200, -1, -1),
					    other(81, 100, 2100, 2500)};

	refine(roof, runs, 3, &r);
	ck_assert_int_eq(r.basis, SPEED_BASIS_CALIBRATED);
	ck_assert_str_eq(speed_basis_name(r.basis), "calibrated");
	ck_assert_int_eq(r.figure[DEC].basis, SPEED_BASIS_CALIBRATED);
	ck_assert_double_eq_tol(r.figure[DEC].efficiency, 0.8, 0.01);
	ck_assert_double_eq_tol(r.figure[DEC].tokens_per_s, 160, 2);
	ck_assert_int_eq(r.figure[DEC].runs, 3);
	ck_assert(!r.figure[DEC].clamped);
	/* Prefill from the two runs that measured it: 0.8 and 0.84. */
	ck_assert_int_eq(r.figure[PRE].basis, SPEED_BASIS_CALIBRATED);
	ck_assert_int_eq(r.figure[PRE].runs, 2);
	ck_assert_double_eq_tol(r.figure[PRE].tokens_per_s, 4000 * sqrt(0.8 * 0.84), 1e-6);
	ck_assert_int_eq(r.runs, 3);

	/* Without a roofline there is nothing to apply an efficiency to. */
	{
		const double none[2] = {-1, -1};
		refine(none, runs, 3, &r);
		ck_assert_int_eq(r.basis, SPEED_BASIS_ROOFLINE);
		ck_assert(r.figure[DEC].tokens_per_s < 0);
	}
}
END_TEST

START_TEST(decode_and_prefill_are_refined_independently)
{
	const double roof[2] = {120, 3000};
	struct speed_history_result r;
	/* The same model measured decode only; another model measured prefill. */
	struct speed_history_run runs[3] = {same(95, -1), same(97, 0), other(50, 60, 1500, 2000)};

	refine(roof, runs, 2, &r);
	ck_assert_int_eq(r.figure[DEC].basis, SPEED_BASIS_MEASURED);
	ck_assert_int_eq(r.figure[PRE].basis, SPEED_BASIS_ROOFLINE);
	ck_assert_double_eq(r.figure[PRE].tokens_per_s, 3000);
	ck_assert_int_eq(r.basis, SPEED_BASIS_MEASURED);

	refine(roof, runs, 3, &r);
	ck_assert_int_eq(r.figure[DEC].basis, SPEED_BASIS_MEASURED);
	ck_assert_double_eq_tol(r.figure[DEC].tokens_per_s, sqrt(95.0 * 97.0), 1e-9);
	ck_assert_int_eq(r.figure[DEC].runs, 2); /* the other model does not dilute it */
	ck_assert_int_eq(r.figure[PRE].basis, SPEED_BASIS_CALIBRATED);
	ck_assert_double_eq_tol(r.figure[PRE].tokens_per_s, 3000 * 0.75, 1e-9);
	ck_assert_int_eq(r.runs, 3);

	/* Measured prefill needs no roofline. */
	{
		const double no_prefill[2] = {120, -1};
		struct speed_history_run p = same(-1, 2500);
		refine(no_prefill, &p, 1, &r);
		ck_assert_int_eq(r.figure[PRE].basis, SPEED_BASIS_MEASURED);
		ck_assert_double_eq_tol(r.figure[PRE].tokens_per_s, 2500, 1e-9);
		ck_assert(r.figure[PRE].factor < 0);
		ck_assert_int_eq(r.figure[DEC].basis, SPEED_BASIS_ROOFLINE);
	}
}
END_TEST

START_TEST(an_absurd_efficiency_is_clamped_and_says_so)
{
	const double roof[2] = {100, 1000};
	struct speed_history_result r;
	/* Runs 10x faster than their roofline: not comparable (wrong unit or precision). */
	struct speed_history_run fast[2] = {other(1000, 100, -1, -1), other(1000, 100, -1, -1)};
	struct speed_history_run slow = other(1, 100, -1, -1);

	refine(roof, fast, 2, &r);
	ck_assert(r.figure[DEC].clamped);
	ck_assert_double_eq_tol(r.figure[DEC].raw_efficiency, 10, 1e-9);
	ck_assert_double_eq(r.figure[DEC].efficiency, SPEED_HISTORY_RATIO_MAX);
	ck_assert_double_eq(r.figure[DEC].tokens_per_s, 100 * SPEED_HISTORY_RATIO_MAX);
	refine(roof, &slow, 1, &r);
	ck_assert(r.figure[DEC].clamped);
	ck_assert_double_eq(r.figure[DEC].tokens_per_s, 100 * SPEED_HISTORY_RATIO_MIN);
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
	const double roof[2] = {100, 1000};
	struct speed_history_result r = {.runs = 42};

	ck_assert_int_eq(speed_history_refine(roof, NULL, 1, &r), RF_E_INVALID_VALUE);
	ck_assert_int_eq(speed_history_refine(NULL, NULL, 0, &r), RF_E_INVALID_VALUE);
	ck_assert_int_eq(r.runs, 42);
	ck_assert_str_eq(speed_basis_name((enum speed_basis)7), "roofline");
}
END_TEST

Suite *speed_history_suite(void)
{
	Suite *s = suite_create("speed_history");
	TCase *tc = tcase_create("refine");

	tcase_add_test(tc, no_runs_leave_the_roofline);
	tcase_add_test(tc, runs_of_the_same_model_are_measured_and_their_median_wins);
	tcase_add_test(tc, one_outlier_among_several_runs_moves_nothing);
	tcase_add_test(tc, the_centre_keeps_ordinary_spread_and_drops_the_far_value);
	tcase_add_test(tc, other_models_calibrate_the_host);
	tcase_add_test(tc, decode_and_prefill_are_refined_independently);
	tcase_add_test(tc, an_absurd_efficiency_is_clamped_and_says_so);
	tcase_add_test(tc, bad_arguments_are_refused);
	suite_add_tcase(s, tc);
	return s;
}
