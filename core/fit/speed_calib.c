/*
 * The recorded runs matched to the model and precision estimated (see speed_calib.h), and
 * their refinement put on any setup's roofline.
 */
#include "core/fit/speed_calib.h"

#include <math.h>
#include <strings.h>

#include "core/err.h"

static bool known(double v)
{
	return isfinite(v) && v > 0;
}

/* Whether run r is of the model and precision estimated: the same catalog entry, or for a
 * model outside the catalog the same name. */
static bool same_model(const struct speed_calib_run *r, const struct model_entry *model,
		       const char *name, int ftype)
{
	if (r->ftype != ftype)
		return false;
	if (model)
		return r->model == model;
	return name && r->name && strcasecmp(r->name, name) == 0;
}

int speed_calib_refine(const struct speed_calibration *c, const struct model_entry *model,
		       const char *name, int ftype, const double roofline[SPEED_HISTORY_FIGURES],
		       struct speed_history_result *out, int *skipped)
{
	struct speed_history_run hist[SPEED_CALIB_MAX_RUNS];
	int seen[SPEED_CALIB_PAIRS], n_seen = 0;
	size_t n = 0;
	/* Other models calibrate only a known roofline (the estimate predicts them only then). */
	bool others = known(roofline[SPEED_TEST_DECODE]) || known(roofline[SPEED_TEST_PREFILL]);

	if (c &&
	    (c->n_runs < 0 || c->n_runs > SPEED_CALIB_MAX_RUNS || (c->n_runs > 0 && !c->runs) ||
	     c->n_pairs < 0 || c->n_pairs > SPEED_CALIB_MAX_PAIRS))
		return RF_E_INVALID_VALUE;
	for (int i = 0; c && i < c->n_runs; i++) {
		const struct speed_calib_run *r = &c->runs[i];
		const struct speed_calib_pair *p;
		struct speed_history_run *h = &hist[n];
		int k = 0;

		h->same_model = same_model(r, model, name, ftype);
		h->measured_tps[SPEED_TEST_DECODE] = r->measured_tps[SPEED_TEST_DECODE];
		h->measured_tps[SPEED_TEST_PREFILL] = r->measured_tps[SPEED_TEST_PREFILL];
		h->predicted_tps[SPEED_TEST_DECODE] = h->predicted_tps[SPEED_TEST_PREFILL] = 0;
		if (h->same_model) {
			n++;
			continue;
		}
		if (!others || r->pair < 0 || r->pair >= c->n_pairs)
			continue;
		/* The newest SPEED_CALIB_PAIRS distinct others; a pair that could not be predicted
		 * still takes its place among them. */
		while (k < n_seen && seen[k] != r->pair)
			k++;
		if (k == n_seen) {
			if (n_seen >= SPEED_CALIB_PAIRS)
				continue;
			seen[n_seen++] = r->pair;
		}
		p = &c->pairs[r->pair];
		if (!p->predicted)
			continue;
		h->predicted_tps[SPEED_TEST_DECODE] = p->tps[SPEED_TEST_DECODE];
		h->predicted_tps[SPEED_TEST_PREFILL] = p->tps[SPEED_TEST_PREFILL];
		n++;
	}
	if (skipped)
		*skipped = (c ? c->listed : 0) - (int)n;
	return speed_history_refine(roofline, hist, n, out);
}

/* The figures of (model or name, ftype) from the runs, walked. */
static int figures(const struct speed_calibration *c, const struct model_entry *model,
		   const char *name, int ftype, struct speed_calib_figs *out)
{
	/* A known roofline of 1: the measured figure is the speed, the calibrated one the
	 * efficiency, neither depending on the setup. */
	static const double unit[SPEED_HISTORY_FIGURES] = {1, 1};
	struct speed_history_result r;
	int rc = speed_calib_refine(c, model, name, ftype, unit, &r, NULL);

	if (rc < 0)
		return rc;
	for (int f = 0; f < SPEED_HISTORY_FIGURES; f++) {
		out->run_roofline[f] = -1;
		out->basis[f] = r.figure[f].basis;
		out->value[f] = r.figure[f].basis == SPEED_BASIS_CALIBRATED ?
					r.figure[f].efficiency :
					r.figure[f].tokens_per_s;
	}
	return 0;
}

double speed_calib_apply(const struct speed_calib_figs *figs, int f, double roofline,
			 double *factor, enum speed_basis *basis)
{
	bool has = known(roofline);

	if (figs && figs->basis[f] == SPEED_BASIS_MEASURED) {
		*basis = SPEED_BASIS_MEASURED;
		if (has && known(figs->run_roofline[f])) {
			/* What the runs' own setup reached of its roofline, on this one's. */
			*factor = figs->value[f] / figs->run_roofline[f];
			return roofline * *factor;
		}
		*factor = has ? figs->value[f] / roofline : -1;
		return figs->value[f];
	}
	if (figs && figs->basis[f] == SPEED_BASIS_CALIBRATED && has) {
		*basis = SPEED_BASIS_CALIBRATED;
		*factor = figs->value[f];
		return roofline * figs->value[f];
	}
	*basis = SPEED_BASIS_ROOFLINE;
	*factor = has ? 1 : -1;
	return has ? roofline : -1;
}

int speed_calib_prepare(struct speed_calibration *c)
{
	/* No run is of no model (NULL, no name): the others' figures. */
	int rc = figures(c, NULL, NULL, -1, &c->others);

	c->prepared = rc == 0;
	return rc;
}

int speed_calib_figures(const struct speed_calibration *c, const struct model_entry *model,
			const char *name, int ftype, struct speed_calib_figs *out)
{
	if (c && c->prepared) {
		/* None of the runs is of this model and precision: no pair is left out, so the
		 * newest pairs calibrate it as they calibrate any such model. */
		bool own = false;
		for (int i = 0; i < c->n_runs && !own; i++)
			own = same_model(&c->runs[i], model, name, ftype);
		if (!own) {
			*out = c->others;
			return 0;
		}
	}
	return figures(c, model, name, ftype, out);
}
