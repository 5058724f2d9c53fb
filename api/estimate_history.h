/*
 * The benchmark history behind an estimate's speed: the runs recorded on the estimated
 * hardware (one store query by fingerprint, the newest API_HISTORY_LIMIT), their models
 * resolved in the catalog, and each distinct run of another model or precision predicted by
 * the caller with the same speed model (once per distinct pair, at most API_HISTORY_MAX_PAIRS
 * pairs): core's calibration (core/fit/speed_calib.h), which /api/estimate and the planner
 * (a config or a recommendation on the same machine) refine their speeds with alike. A store
 * that is missing, down or failing means no history: the estimate stays on the roofline and
 * says why; it never fails.
 */
#ifndef RIGFIT_API_ESTIMATE_HISTORY_H
#define RIGFIT_API_ESTIMATE_HISTORY_H

#include <stdbool.h>

#include "api/api.h"
#include "core/fit/model.h"
#include "core/fit/speed.h"
#include "core/fit/speed_calib.h"
#include "core/fit/speed_history.h"

#define API_HISTORY_LIMIT 200 /* the newest runs of the hardware an estimate looks at */
/* Each run of another model or precision needs that model's roofline, which costs about what
 * the estimate itself does; the newest this many distinct (model, precision) pairs are
 * predicted, so that an estimate with history stays within a small multiple of one without. */
#define API_HISTORY_MAX_PAIRS SPEED_CALIB_PAIRS
#define API_HISTORY_NOTES 4
#define API_HISTORY_NOTE_LEN 400

/* Predicts decode and prefill tokens per second (by enum speed_test; < 0 unknown) of catalog
 * model m in GGUF file type ftype (enum rf_ftype) on the estimated hardware with the
 * estimate's settings. Returns 0 and out, or a negative rf_err (the run is then skipped). */
typedef int (*api_history_predict_fn)(void *ctx, const struct model_entry *m, int ftype,
				      double out[SPEED_HISTORY_FIGURES] /* OUT */);

/* Whose runs are read, and what they are matched against. */
struct api_history_query {
	const char *fingerprint;    /* of the hardware estimated ("hw-..."); "" or NULL: none */
	enum speed_backend backend; /* the backend estimated; runs of another are left out */
	const struct model_entry *entry; /* the catalog model estimated, or NULL */
	const char *model_name;          /* matched by name when entry is NULL (a GGUF's
					    general.name); NULL: runs never match by name */
	int ftype; /* the precision estimated (enum rf_ftype); < 0: any (a planner's search):
		      every pair of the runs is predicted, up to SPEED_CALIB_MAX_PAIRS */
	api_history_predict_fn predict; /* NULL: no calibration from other models */
	void *predict_ctx;
};

/* The runs of one machine, read once, as core's calibration takes them
 * (core/fit/speed_calib.h): what every estimate and every planned setup on it is refined by. */
struct api_history_calib {
	struct speed_calibration cal;
	struct speed_calib_run *runs;    /* cal.runs, owned */
	char *names;                     /* the runs' model names when matched by name; owned */
	bool unavailable;                /* the store could not be read (no runs then) */
	char note[API_HISTORY_NOTE_LEN]; /* why, for the assumptions; "" none */
};

/* Reads the runs of q->fingerprint from env->store (newest API_HISTORY_LIMIT), resolves their
 * models in env's catalog and predicts the pairs (model, precision) a refinement of q can use.
 * Always fills *out: with no store, a store error or no run, no runs (the roofline). Running
 * out of memory, in the store or here, is RF_E_NOMEM, never a silent roofline. Returns 0 or
 * RF_E_NOMEM; free with api_history_calib_free either way. */
int api_history_load(const struct api_env *env, const struct api_history_query *q,
		     struct api_history_calib *out /* OUT */);

/* Frees what c owns (not c). NULL is a no-op. */
void api_history_calib_free(struct api_history_calib *c);

struct api_history {
	struct speed_history_result result; /* the refined figures and bases */
	int skipped; /* of the runs listed, unusable: another backend, precision or model not
			 known, or past the pairs predicted */
	int n_notes; /* lines for the estimate's assumptions */
	char notes[API_HISTORY_NOTES][API_HISTORY_NOTE_LEN];
};

/* Refines roofline (by enum speed_test; < 0 unknown) of q's model and precision with the runs
 * of c (speed_calib_refine) and says what was used. Returns 0, or RF_E_INVALID_VALUE (*out
 * then holds the roofline). */
int api_history_refine(const struct api_history_calib *c, const struct api_history_query *q,
		       const double roofline[SPEED_HISTORY_FIGURES],
		       struct api_history *out /* OUT */);

#endif
