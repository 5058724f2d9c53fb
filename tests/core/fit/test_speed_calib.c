/*
 * The recorded runs of one machine matched to the model estimated (core/fit/speed_calib): a
 * format's refinement computed once (speed_calib_figures) and put on any setup's roofline
 * (speed_calib_apply) is, to the bit, the refinement of that roofline itself
 * (speed_calib_refine), which the planner and /api/estimate depend on to agree; the runs of
 * the model estimated are measured, those of the newest eight other pairs calibrate and the
 * rest are left out; a model outside the catalog is matched by its name. The refinement shared
 * by the models without runs of their own (speed_calib_prepare) is theirs, to the bit.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/speed_calib.h"
#include "tests/test.h"

#define DEC SPEED_TEST_DECODE
#define PRE SPEED_TEST_PREFILL

static struct model_entry entries[4];

/* A deterministic generator: values in [0, 1). */
static double next(unsigned *state)
{
	*state = *state * 1103515245u + 12345u;
	return (double)((*state >> 8) & 0xffff) / 65536.0;
}

/* Fills c with n runs over the pairs of entries x 3 precisions (each run's pair as a route
 * numbers them, in the order the runs first name them), some unmeasured, some pairs not
 * predicted. */
static void random_calibration(unsigned *st, int n, struct speed_calibration *c,
			       struct speed_calib_run *runs)
{
	memset(c, 0, sizeof(*c));
	c->runs = runs;
	for (int i = 0; i < n; i++) {
		struct speed_calib_run *r = &runs[c->n_runs++];
		int p = -1;
		r->model = &entries[(int)(next(st) * 4)];
		r->name = r->model->id;
		r->ftype = (int)(next(st) * 3);
		r->measured_tps[DEC] = next(st) < 0.1 ? -1 : 10 + 100 * next(st);
		r->measured_tps[PRE] = next(st) < 0.3 ? -1 : 100 + 1000 * next(st);
		for (int k = 0; k < c->n_pairs; k++)
			if (c->pairs[k].model == r->model && c->pairs[k].ftype == r->ftype)
				p = k;
		if (p < 0 && c->n_pairs < SPEED_CALIB_MAX_PAIRS) {
			struct speed_calib_pair *q = &c->pairs[c->n_pairs];
			q->model = r->model;
			q->ftype = r->ftype;
			q->predicted = next(st) > 0.15;
			q->tps[DEC] = 20 + 100 * next(st);
			q->tps[PRE] = next(st) < 0.2 ? -1 : 200 + 1000 * next(st);
			p = c->n_pairs++;
		}
		r->pair = p;
	}
	c->listed = c->n_runs + (int)(next(st) * 3); /* and some of other hardware */
}

static void setup(void)
{
	memset(entries, 0, sizeof(entries));
	for (int i = 0; i < 4; i++)
		snprintf(entries[i].id, sizeof(entries[i].id), "org/model-%d", i);
}

START_TEST(a_formats_figures_on_any_roofline_are_its_refinement)
{
	static struct speed_calib_run runs[64];
	struct speed_calibration c;
	unsigned st = 7;
	int checked = 0, bases[3] = {0, 0, 0};

	for (int trial = 0; trial < 300; trial++) {
		random_calibration(&st, (int)(next(&st) * 40), &c, runs);
		/* Half of them with the shared refinement of models without runs. */
		if (trial % 2)
			ck_assert_int_eq(speed_calib_prepare(&c), 0);
		for (int m = 0; m < 5; m++) {
			/* The fifth: a model outside the catalog, matched by name. */
			const struct model_entry *me = m < 4 ? &entries[m] : NULL;
			const char *name = m < 4 ? NULL : "ORG/MODEL-1";
			for (int ft = 0; ft < 3; ft++) {
				struct speed_calib_figs figs;
				ck_assert_int_eq(speed_calib_figures(&c, me, name, ft, &figs), 0);
				for (int k = 0; k < 4; k++) {
					double roof[2] = {k == 3 ? -1 : 5 + 200 * next(&st),
							  k >= 2 ? -1 : 50 + 2000 * next(&st)};
					struct speed_history_result r;
					ck_assert_int_eq(speed_calib_refine(&c, me, name, ft, roof,
									    &r, NULL),
							 0);
					for (int f = 0; f < 2; f++) {
						double factor;
						enum speed_basis b;
						double tps = speed_calib_apply(&figs, f, roof[f],
									       &factor, &b);
						ck_assert_int_eq(b, r.figure[f].basis);
						ck_assert(tps == r.figure[f].tokens_per_s);
						ck_assert(factor == r.figure[f].factor);
						bases[b]++;
						checked++;
					}
				}
			}
		}
	}
	ck_assert_int_eq(checked, 300 * 5 * 3 * 4 * 2);
	/* Every basis was reached. */
	ck_assert_int_gt(bases[SPEED_BASIS_ROOFLINE], 100);
	ck_assert_int_gt(bases[SPEED_BASIS_CALIBRATED], 100);
	ck_assert_int_gt(bases[SPEED_BASIS_MEASURED], 100);
}
END_TEST

START_TEST(the_newest_eight_other_pairs_calibrate_and_the_rest_are_left_out)
{
	static struct model_entry many[SPEED_CALIB_MAX_PAIRS];
	struct speed_calib_run runs[SPEED_CALIB_MAX_PAIRS + 1];
	struct speed_calibration c;
	const double roof[2] = {100, 1000};
	struct speed_history_result r;
	int skipped;

	memset(&c, 0, sizeof(c));
	memset(runs, 0, sizeof(runs));
	c.runs = runs;
	/* Nine pairs, one run each, the i-th at 0.5 + i/100 of its roofline; a tenth run of a
	 * model beyond the pairs a route keeps. */
	for (int i = 0; i < SPEED_CALIB_MAX_PAIRS; i++) {
		snprintf(many[i].id, sizeof(many[i].id), "m%d", i);
		c.pairs[i].model = &many[i];
		c.pairs[i].ftype = 1;
		c.pairs[i].predicted = true;
		c.pairs[i].tps[DEC] = 50;
		c.pairs[i].tps[PRE] = -1;
		runs[i].model = &many[i];
		runs[i].ftype = 1;
		runs[i].pair = i;
		runs[i].measured_tps[DEC] = 50 * (0.5 + i / 100.0);
	}
	runs[SPEED_CALIB_MAX_PAIRS].pair = -1;
	runs[SPEED_CALIB_MAX_PAIRS].ftype = 1;
	runs[SPEED_CALIB_MAX_PAIRS].measured_tps[DEC] = 1;
	c.n_pairs = SPEED_CALIB_MAX_PAIRS;
	c.n_runs = SPEED_CALIB_MAX_PAIRS + 1;
	c.listed = c.n_runs;

	/* Another model: the eight newest pairs calibrate; the ninth and the tenth run are left
	 * out. */
	ck_assert_int_eq(speed_calib_refine(&c, &entries[0], NULL, 1, roof, &r, &skipped), 0);
	ck_assert_int_eq(r.figure[DEC].basis, SPEED_BASIS_CALIBRATED);
	ck_assert_int_eq(r.figure[DEC].runs, 8);
	ck_assert_int_eq(skipped, 2);
	ck_assert(r.figure[DEC].efficiency < 0.5 + 8 / 100.0);
	/* The model of the third pair: its run is measured, and the ninth pair is among the
	 * eight others. */
	ck_assert_int_eq(speed_calib_refine(&c, &many[2], NULL, 1, roof, &r, &skipped), 0);
	ck_assert_int_eq(r.figure[DEC].basis, SPEED_BASIS_MEASURED);
	ck_assert(fabs(r.figure[DEC].tokens_per_s - 50 * 0.52) < 1e-9);
	ck_assert_int_eq(skipped, 1);
	ck_assert_int_eq(r.figure[PRE].basis, SPEED_BASIS_ROOFLINE);
	/* Its other precision is not it. */
	ck_assert_int_eq(speed_calib_refine(&c, &many[2], NULL, 2, roof, &r, NULL), 0);
	ck_assert_int_eq(r.figure[DEC].basis, SPEED_BASIS_CALIBRATED);
	/* Without a roofline nothing of other models is used. */
	{
		const double none[2] = {-1, -1};
		ck_assert_int_eq(speed_calib_refine(&c, &entries[0], NULL, 1, none, &r, &skipped),
				 0);
		ck_assert_int_eq(r.figure[DEC].basis, SPEED_BASIS_ROOFLINE);
		ck_assert(r.figure[DEC].tokens_per_s < 0);
		ck_assert_int_eq(skipped, c.listed);
	}
	/* Measured on the roofline of the setup the runs ran: that setup gets their speed,
	 * one with half its roofline half of it. */
	{
		struct speed_calib_figs figs;
		enum speed_basis b;
		double factor, want;
		ck_assert_int_eq(speed_calib_figures(&c, &many[2], NULL, 1, &figs), 0);
		ck_assert(figs.run_roofline[DEC] < 0);
		want = speed_calib_apply(&figs, DEC, 80, &factor, &b);
		ck_assert(fabs(want - 50 * 0.52) < 1e-9); /* unscaled: the speed itself */
		figs.run_roofline[DEC] = 80;
		ck_assert(fabs(speed_calib_apply(&figs, DEC, 80, &factor, &b) - want) < 1e-9);
		ck_assert_int_eq(b, SPEED_BASIS_MEASURED);
		ck_assert(fabs(speed_calib_apply(&figs, DEC, 40, &factor, &b) - want / 2) < 1e-9);
		ck_assert(fabs(factor - want / 80) < 1e-12);
		ck_assert(speed_calib_apply(&figs, DEC, -1, &factor, &b) == figs.value[DEC]);
		ck_assert(factor < 0);
	}
	/* No calibration: the roofline. */
	ck_assert_int_eq(speed_calib_refine(NULL, &entries[0], NULL, 1, roof, &r, &skipped), 0);
	ck_assert(r.figure[DEC].tokens_per_s == 100 && r.figure[PRE].tokens_per_s == 1000);
	ck_assert_int_eq(skipped, 0);
	c.n_runs = SPEED_CALIB_MAX_RUNS + 1;
	ck_assert_int_eq(speed_calib_refine(&c, &entries[0], NULL, 1, roof, &r, NULL),
			 RF_E_INVALID_VALUE);
}
END_TEST

Suite *speed_calib_suite(void)
{
	Suite *s = suite_create("speed_calib");
	TCase *tc = tcase_create("calib");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, a_formats_figures_on_any_roofline_are_its_refinement);
	tcase_add_test(tc, the_newest_eight_other_pairs_calibrate_and_the_rest_are_left_out);
	suite_add_tcase(s, tc);
	return s;
}
