/*
 * The benchmark history behind an estimate's speed: the runs recorded on the estimated
 * hardware (one store query by fingerprint, the newest API_HISTORY_LIMIT), matched to the
 * model and precision being estimated; each run of another model or precision is predicted by
 * the caller with the same speed model (once per distinct pair, at most API_HISTORY_MAX_PAIRS
 * pairs); then core/speed_history refines the roofline. A store that is missing, down or
 * failing means no history: the estimate stays on the roofline and says why; it never fails.
 */
#ifndef RIGFIT_API_ESTIMATE_HISTORY_H
#define RIGFIT_API_ESTIMATE_HISTORY_H

#include <stdbool.h>

#include "api/api.h"
#include "core/fit/model.h"
#include "core/fit/speed.h"
#include "core/fit/speed_history.h"

#define API_HISTORY_LIMIT 200 /* the newest runs of the hardware an estimate looks at */
/* Each run of another model or precision needs that model's roofline, which costs about what
 * the estimate itself does; the newest this many distinct (model, precision) pairs are
 * predicted, so that an estimate with history stays within a small multiple of one without. */
#define API_HISTORY_MAX_PAIRS 8
#define API_HISTORY_NOTES 4
#define API_HISTORY_NOTE_LEN 240

/* Predicts decode and prefill tokens per second (by enum speed_test; < 0 unknown) of catalog
 * model m in GGUF file type ftype (enum rf_ftype) on the estimated hardware with the
 * estimate's settings. Returns 0 and out, or a negative rf_err (the run is then skipped). */
typedef int (*api_history_predict_fn)(void *ctx, const struct model_entry *m, int ftype,
				      double out[SPEED_HISTORY_FIGURES] /* OUT */);

/* What the runs are matched against. */
struct api_history_query {
	const char *fingerprint;    /* of the hardware estimated ("hw-..."); "" or NULL: none */
	enum speed_backend backend; /* the backend estimated; runs of another are left out */
	const struct model_entry *entry;        /* the catalog model estimated, or NULL */
	const char *model_name;                 /* matched by name when entry is NULL (a GGUF's
					    general.name); NULL: runs never match by name */
	int ftype;                              /* the precision estimated (enum rf_ftype) */
	double roofline[SPEED_HISTORY_FIGURES]; /* the estimate's own roofline; < 0 unknown */
	api_history_predict_fn predict;         /* NULL: no calibration from other models */
	void *predict_ctx;
};

struct api_history {
	struct speed_history_result result; /* the refined figures and bases */
	int listed;                         /* runs the store returned */
	int skipped;      /* of them, unusable: another backend, precision or model not known */
	bool unavailable; /* the store could not be read (the result is then the roofline) */
	int n_notes;      /* lines for the estimate's assumptions */
	char notes[API_HISTORY_NOTES][API_HISTORY_NOTE_LEN];
};

/* Reads the runs of q->fingerprint from env->store and refines q->roofline with them. Always
 * fills *out: with no store, a store error or no usable run, the roofline (basis "roofline").
 * Running out of memory, in the store or here, is RF_E_NOMEM, never a silent roofline.
 * Returns 0, or RF_E_NOMEM (*out then holds the roofline too). */
int api_history_refine(const struct api_env *env, const struct api_history_query *q,
		       struct api_history *out /* OUT */);

#endif
