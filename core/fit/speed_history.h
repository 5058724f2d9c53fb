/*
 * Speed estimates refined by the host's recorded benchmarks. The roofline model (speed.h)
 * predicts tokens per second from the hardware's peaks; the runs measured on the same
 * hardware say what this host really does. Each figure (decode, prefill) is refined on its
 * own, since a run may have measured only one of them:
 *
 *   measured    runs of the same model and precision measured the figure: their robust
 *               centre is the answer (the roofline is not used);
 *   calibrated  only runs of other models or precisions did: the host's efficiency, the
 *               robust centre of measured / predicted over those runs (each predicted by the
 *               same speed model for its own model and precision), times the roofline;
 *   roofline    no run measured it: the roofline as it is.
 *
 * The robust centre is a MAD-trimmed mean in log space (speeds and efficiencies are
 * multiplicative): values further than SPEED_HISTORY_MAD_K scaled median absolute deviations
 * from the median are outliers and left out, the rest are averaged. One bad run among several
 * (a thermal throttle, a misrecorded unit) therefore moves nothing; a single run is used as it
 * is. Pure: no I/O, no allocation.
 */
#ifndef RIGFIT_CORE_SPEED_HISTORY_H
#define RIGFIT_CORE_SPEED_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/fit/speed.h"

#define SPEED_HISTORY_MAX_RUNS 1000 /* runs one refinement looks at, at most */
#define SPEED_HISTORY_FIGURES 2     /* indexed by enum speed_test: decode, prefill */

/* An efficiency outside [1/4, 4] of the roofline says the runs were not like the estimate
 * (another backend, a power cap, a partial offload recorded without its settings) more than
 * that the host is so much better or worse than its peaks: the model's own error is 7% (decode)
 * and 19% (prefill) median. Such a ratio is clamped to the range, and the result says so. */
#define SPEED_HISTORY_RATIO_MIN 0.25
#define SPEED_HISTORY_RATIO_MAX 4.0

/* Outliers lie beyond K x 1.4826 x MAD (1.4826 makes the MAD a standard deviation for normal
 * noise; 3 of those keep 99.7% of honest runs). The deviation is floored at 5%, the
 * run-to-run spread of llama-bench on one machine, so that a few identical runs do not turn
 * an ordinary 2% difference into an outlier. */
#define SPEED_HISTORY_MAD_K 3.0
#define SPEED_HISTORY_MIN_SPREAD 0.05

enum speed_basis {
	SPEED_BASIS_ROOFLINE = 0,
	SPEED_BASIS_CALIBRATED,
	SPEED_BASIS_MEASURED,
};

/* One recorded run as the refinement sees it. Values <= 0 (or not finite) are "not known". */
struct speed_history_run {
	bool same_model; /* the model and precision being estimated */
	double measured_tps[SPEED_HISTORY_FIGURES];
	/* The roofline for the run's own model and precision on this hardware; only runs of
	 * another model need it (the calibrated basis). */
	double predicted_tps[SPEED_HISTORY_FIGURES];
};

/* One refined figure. */
struct speed_history_figure {
	enum speed_basis basis;
	double tokens_per_s;   /* the answer; < 0 unknown (no roofline and nothing measured) */
	double factor;         /* tokens_per_s / the roofline; < 0 when the roofline is unknown */
	double efficiency;     /* calibrated: the host's measured / predicted, clamped; else 1 */
	double raw_efficiency; /* calibrated: the same before clamping; else 1 */
	bool clamped;          /* the efficiency was outside the sane range */
	int runs;              /* runs that gave a value to the basis chosen */
	int outliers;          /* of those, left out as outliers */
};

struct speed_history_result {
	struct speed_history_figure figure[SPEED_HISTORY_FIGURES]; /* by enum speed_test */
	enum speed_basis basis; /* the strongest basis of the two figures */
	int runs;               /* distinct runs that gave a value to either figure's basis */
};

/* Returns "roofline", "calibrated" or "measured" (static storage). */
const char *speed_basis_name(enum speed_basis b);

/* The robust centre of v[0..n) (every value > 0 and finite): the MAD-trimmed mean in log
 * space described above. v is scratch: its contents are undefined afterwards. Writes the
 * number of values left out to *outliers (may be NULL). Returns the centre, or -1 when n is 0 or larger than SPEED_HISTORY_MAX_RUNS. */
double speed_history_centre(double *v, size_t n, int *outliers /* OUT */);

/* Refines roofline_tps (decode, prefill by enum speed_test; < 0 unknown) with runs[0..n).
 * Returns 0 and *out, or RF_E_INVALID_VALUE (runs NULL with n > 0, n above
 * SPEED_HISTORY_MAX_RUNS) with *out untouched. */
int speed_history_refine(const double roofline_tps[SPEED_HISTORY_FIGURES],
			 const struct speed_history_run *runs, size_t n,
			 struct speed_history_result *out /* OUT */);

#endif
