/*
 * The benchmark runs recorded on one machine, as data: what the history refinement
 * (speed_history.h) reads for any model and precision estimated there. A route reads the runs
 * of the machine's fingerprint from its store once, resolves each run's model against the
 * catalog and predicts the roofline of each distinct (model, precision) the runs hold; this
 * file then matches them to the model and precision being estimated, exactly as one estimate
 * does: runs of that model and precision give the measured basis; runs of others give the
 * calibrated one, the newest SPEED_CALIB_PAIRS distinct others only (each costs a
 * prediction).
 *
 * Since the match depends only on which model and precision is estimated, never on its
 * settings, a figure's refinement is the same for every setup of one format: an efficiency
 * times the setup's roofline. Calibrated, it is the host's measured / predicted over the other
 * models' runs; measured, it is the runs' speed over the roofline of the setup they ran
 * (llama-bench's defaults, given as run_roofline), so that the setup they ran gets what was
 * measured and another (a partial offload, a filled context) the same efficiency on its own
 * roofline. speed_calib_figures computes it once per format and speed_calib_apply puts it on a
 * setup's roofline, so that a planner searching thousands of setups and /api/estimate asked
 * about one of them give it the same speed.
 * Pure: no I/O, no allocation.
 */
#ifndef RIGFIT_CORE_SPEED_CALIB_H
#define RIGFIT_CORE_SPEED_CALIB_H

#include <stdbool.h>

#include "core/fit/model.h"
#include "core/fit/speed_history.h"

/* The distinct other (model, precision) pairs one refinement calibrates with, the newest first
 * (each needs a roofline of its own). */
#define SPEED_CALIB_PAIRS 8
/* Pairs a calibration holds: one more than a refinement uses, as the pair estimated is not
 * among its others. */
#define SPEED_CALIB_MAX_PAIRS (SPEED_CALIB_PAIRS + 1)
/* Runs a calibration holds, the newest first. */
#define SPEED_CALIB_MAX_RUNS 256

/* One usable run (its backend the machine's, its precision one rigfit knows). */
struct speed_calib_run {
	const struct model_entry *model; /* the catalog entry its model resolves to; NULL none */
	const char *name;                /* its model as recorded (matched to a GGUF's name) */
	int ftype;                       /* enum rf_ftype of its precision */
	int pair;                        /* index into pairs; -1: none (no entry, past the cap) */
	double measured_tps[SPEED_HISTORY_FIGURES]; /* <= 0: not measured */
};

/* One distinct (model, precision) of the runs, in the order the runs first name it. */
struct speed_calib_pair {
	const struct model_entry *model;
	int ftype;
	bool predicted;                    /* false: its roofline could not be known */
	double tps[SPEED_HISTORY_FIGURES]; /* its roofline on this machine, as run (llama-bench's
						 defaults); < 0 unknown */
};

/* What the runs give one format of one model: per figure (enum speed_test), the basis and
 * its value, a speed (measured) or the efficiency on the roofline (calibrated, clamped); for a
 * measured figure, the roofline of the setup the runs ran (< 0 unknown: the speed stands for
 * every setup). */
struct speed_calib_figs {
	enum speed_basis basis[SPEED_HISTORY_FIGURES];
	double value[SPEED_HISTORY_FIGURES];
	double run_roofline[SPEED_HISTORY_FIGURES];
};

struct speed_calibration {
	int listed; /* runs the store returned, usable or not */
	int n_runs;
	const struct speed_calib_run *runs; /* n_runs, the newest first */
	int n_pairs;
	struct speed_calib_pair pairs[SPEED_CALIB_MAX_PAIRS];
	/* speed_calib_prepare: the figures of any model and precision none of the runs is of
	 * (the same for all of them: the newest pairs calibrate), so that a planner searching many
	 * models and formats refines each without walking the runs again. */
	bool prepared;
	struct speed_calib_figs others;
};

/* Computes c->others (speed_calib_prepare's note above). Returns 0, or RF_E_INVALID_VALUE. */
int speed_calib_prepare(struct speed_calibration *c /* IN/OUT */);

/* Refines roofline (by enum speed_test; < 0 unknown) of catalog model (NULL: a model outside
 * the catalog, matched by name; NULL too: by nothing) in precision ftype with the runs of c
 * (NULL: none), as speed_history_refine does. Writes the runs left out (listed, unusable,
 * past the pairs) to *skipped (may be NULL). Returns 0 and *out, or RF_E_INVALID_VALUE. */
int speed_calib_refine(const struct speed_calibration *c, const struct model_entry *model,
		       const char *name, int ftype, const double roofline[SPEED_HISTORY_FIGURES],
		       struct speed_history_result *out /* OUT */, int *skipped /* OUT */);

/* The refinement of every setup of (model or name, ftype) on c's machine (NULL: the roofline),
 * run_roofline unknown. Returns 0 and *out, or RF_E_INVALID_VALUE. */
int speed_calib_figures(const struct speed_calibration *c, const struct model_entry *model,
			const char *name, int ftype, struct speed_calib_figs *out /* OUT */);

/* Puts figure f of figs on a setup's roofline (< 0 unknown): returns the speed (< 0 unknown)
 * and writes its factor over the roofline (< 0 unknown) and basis. Without run_roofline they
 * are what speed_calib_refine gives for that roofline; with it, a measured figure is that
 * efficiency (value / run_roofline) times the roofline. */
double speed_calib_apply(const struct speed_calib_figs *figs, int f, double roofline,
			 double *factor /* OUT */, enum speed_basis *basis /* OUT */);

#endif
