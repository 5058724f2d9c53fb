/*
 * Speed estimates refined by recorded benchmarks (see speed_history.h): which runs count for
 * each figure, their robust centre, and the basis that results.
 */
#include "core/fit/speed_history.h"

#include <math.h>
#include <stdlib.h>

#include "core/err.h"

/* 1 / Phi^-1(3/4): scales a median absolute deviation to a standard deviation. */
#define MAD_TO_SIGMA 1.4826

static const char *const basis_names[] = {"roofline", "calibrated", "measured"};

const char *speed_basis_name(enum speed_basis b)
{
	return (b >= SPEED_BASIS_ROOFLINE && b <= SPEED_BASIS_MEASURED) ? basis_names[b] :
									  "roofline";
}

static bool known(double v)
{
	return isfinite(v) && v > 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of sorted v[0..n), n > 0. */
static double median_sorted(const double *v, size_t n)
{
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double speed_history_centre(double *v, size_t n, int *outliers)
{
	double dev[SPEED_HISTORY_MAX_RUNS];
	double med, spread, sum = 0;
	size_t kept = 0;

	if (outliers)
		*outliers = 0;
	if (n == 0 || n > SPEED_HISTORY_MAX_RUNS)
		return -1;
	for (size_t i = 0; i < n; i++)
		v[i] = log(v[i]);
	qsort(v, n, sizeof(*v), cmp_double);
	med = median_sorted(v, n);
	for (size_t i = 0; i < n; i++)
		dev[i] = fabs(v[i] - med);
	qsort(dev, n, sizeof(*dev), cmp_double);
	spread = MAD_TO_SIGMA * median_sorted(dev, n);
	if (spread < log1p(SPEED_HISTORY_MIN_SPREAD))
		spread = log1p(SPEED_HISTORY_MIN_SPREAD);
	/* At least half the values lie within one MAD of the median, so kept is never 0. */
	for (size_t i = 0; i < n; i++) {
		if (fabs(v[i] - med) <= SPEED_HISTORY_MAD_K * spread) {
			sum += v[i];
			kept++;
		}
	}
	if (outliers)
		*outliers = (int)(n - kept);
	return exp(sum / (double)kept);
}

/* Whether run r gives a value to figure f on basis b, and the value in *val. */
static bool run_gives(const struct speed_history_run *r, int f, enum speed_basis b, double *val)
{
	if (!known(r->measured_tps[f]))
		return false;
	if (b == SPEED_BASIS_MEASURED && r->same_model) {
		*val = r->measured_tps[f];
		return true;
	}
	if (b == SPEED_BASIS_CALIBRATED && known(r->predicted_tps[f])) {
		*val = r->measured_tps[f] / r->predicted_tps[f];
		return true;
	}
	return false;
}

/* Collects the values runs give to figure f on basis b into vals. Returns how many. */
static size_t collect(const struct speed_history_run *runs, size_t n, int f, enum speed_basis b,
		      double *vals)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (run_gives(&runs[i], f, b, &vals[k]))
			k++;
	return k;
}

static void refine_figure(double roofline, const struct speed_history_run *runs, size_t n, int f,
			  struct speed_history_figure *out)
{
	double vals[SPEED_HISTORY_MAX_RUNS];
	bool has_roofline = known(roofline);
	size_t k;

	out->basis = SPEED_BASIS_ROOFLINE;
	out->tokens_per_s = has_roofline ? roofline : -1;
	out->factor = has_roofline ? 1 : -1;
	out->efficiency = out->raw_efficiency = 1;
	out->clamped = false;
	out->runs = out->outliers = 0;

	k = collect(runs, n, f, SPEED_BASIS_MEASURED, vals);
	if (k > 0) {
		out->basis = SPEED_BASIS_MEASURED;
		out->tokens_per_s = speed_history_centre(vals, k, &out->outliers);
		out->factor = has_roofline ? out->tokens_per_s / roofline : -1;
		out->runs = (int)k;
		return;
	}
	/* An efficiency needs a roofline to apply it to. */
	k = has_roofline ? collect(runs, n, f, SPEED_BASIS_CALIBRATED, vals) : 0;
	if (k == 0)
		return;
	out->basis = SPEED_BASIS_CALIBRATED;
	out->raw_efficiency = speed_history_centre(vals, k, &out->outliers);
	out->efficiency = out->raw_efficiency;
	if (out->efficiency < SPEED_HISTORY_RATIO_MIN)
		out->efficiency = SPEED_HISTORY_RATIO_MIN;
	if (out->efficiency > SPEED_HISTORY_RATIO_MAX)
		out->efficiency = SPEED_HISTORY_RATIO_MAX;
	out->clamped = out->efficiency != out->raw_efficiency;
	out->tokens_per_s = roofline * out->efficiency;
	out->factor = out->efficiency;
	out->runs = (int)k;
}

int speed_history_refine(const double roofline_tps[SPEED_HISTORY_FIGURES],
			 const struct speed_history_run *runs, size_t n,
			 struct speed_history_result *out)
{
	struct speed_history_result r;

	if (!roofline_tps || !out || (n > 0 && !runs) || n > SPEED_HISTORY_MAX_RUNS)
		return RF_E_INVALID_VALUE;
	r.basis = SPEED_BASIS_ROOFLINE;
	for (int f = 0; f < SPEED_HISTORY_FIGURES; f++) {
		refine_figure(roofline_tps[f], runs, n, f, &r.figure[f]);
		if (r.figure[f].basis > r.basis)
			r.basis = r.figure[f].basis;
	}
	r.runs = 0;
	for (size_t i = 0; i < n; i++) {
		double unused;
		bool gives = false;
		for (int f = 0; f < SPEED_HISTORY_FIGURES; f++)
			gives = gives || (r.figure[f].basis != SPEED_BASIS_ROOFLINE &&
					  run_gives(&runs[i], f, r.figure[f].basis, &unused));
		r.runs += gives;
	}
	*out = r;
	return 0;
}
