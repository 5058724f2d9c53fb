/*
 * The benchmark history behind an estimate's speed (see estimate_history.h): one store query,
 * each run matched to the estimate or predicted for its own model and precision (once per
 * distinct pair, however many runs share it), the refinement, and the lines that say what was
 * used.
 */
#include "api/estimate_history.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/history_cache.h"
#include "core/err.h"
#include "core/hw/hw.h"
#include "core/fit/quant.h"

/* A prediction made for one (model, precision) pair of the runs. */
struct predicted {
	const struct model_entry *m;
	int ftype;
	int rc;
	double tps[SPEED_HISTORY_FIGURES];
};

static void note(struct api_history *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct api_history *h, const char *fmt, ...)
{
	va_list ap;

	if (h->n_notes >= API_HISTORY_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(h->notes[h->n_notes++], API_HISTORY_NOTE_LEN, fmt, ap);
	va_end(ap);
}

/* What one refinement keeps while it walks the runs: the predictions made (once per distinct
 * model and precision) and the model names resolved (runs repeat a few names many times, and a
 * catalog lookup compares every id and alias). */
#define HISTORY_NAMES 32
struct history_walk {
	const struct api_env *env;
	const struct api_history_query *q;
	struct predicted pred[API_HISTORY_MAX_PAIRS];
	size_t n_pred;
	struct {
		const char *name; /* points into the rows, which outlive the walk */
		const struct model_entry *m;
	} names[HISTORY_NAMES];
	size_t n_names;
};

/* The prediction for (m, ftype), made once; NULL when API_HISTORY_MAX_PAIRS pairs were
 * predicted already. */
static const struct predicted *predict_once(struct history_walk *w, const struct model_entry *m,
					    int ftype)
{
	struct predicted *p;

	for (size_t i = 0; i < w->n_pred; i++)
		if (w->pred[i].m == m && w->pred[i].ftype == ftype)
			return &w->pred[i];
	if (w->n_pred >= API_HISTORY_MAX_PAIRS)
		return NULL;
	p = &w->pred[w->n_pred++];
	p->m = m;
	p->ftype = ftype;
	p->tps[0] = p->tps[1] = -1;
	p->rc = w->q->predict(w->q->predict_ctx, m, ftype, p->tps);
	return p;
}

/* The catalog entry of a run's model (an id or alias, as the request's "model" resolves), or
 * NULL. */
static const struct model_entry *resolve_once(struct history_walk *w, const char *name)
{
	const struct model_entry *m;

	for (size_t i = 0; i < w->n_names; i++)
		if (strcmp(w->names[i].name, name) == 0)
			return w->names[i].m;
	m = w->env->models ? model_catalog_find(w->env->models, name) : NULL;
	if (w->n_names < HISTORY_NAMES) {
		w->names[w->n_names].name = name;
		w->names[w->n_names++].m = m;
	}
	return m;
}

/* Maps run r onto out. Returns false when the run cannot be used: another backend, a
 * precision rigfit does not know, or another model that cannot be predicted. */
static bool match_run(struct history_walk *w, const struct api_history_row *r,
		      struct speed_history_run *out)
{
	const struct api_history_query *q = w->q;
	const struct model_entry *m;
	const struct predicted *p;

	if (r->ftype < 0 || r->backend_kind == API_HISTORY_BACKEND_OTHER ||
	    (r->backend_kind == API_HISTORY_BACKEND_KNOWN && r->backend != (int)q->backend))
		return false;
	memset(out, 0, sizeof(*out));
	out->measured_tps[SPEED_TEST_DECODE] = r->measured_tps[SPEED_TEST_DECODE];
	out->measured_tps[SPEED_TEST_PREFILL] = r->measured_tps[SPEED_TEST_PREFILL];
	m = resolve_once(w, r->model);
	if (r->ftype == q->ftype &&
	    ((q->entry && m == q->entry) ||
	     (!q->entry && q->model_name && strcasecmp(r->model, q->model_name) == 0))) {
		out->same_model = true;
		return true;
	}
	if (!m || !q->predict)
		return false;
	p = predict_once(w, m, r->ftype);
	if (!p || p->rc < 0)
		return false;
	out->predicted_tps[SPEED_TEST_DECODE] = p->tps[SPEED_TEST_DECODE];
	out->predicted_tps[SPEED_TEST_PREFILL] = p->tps[SPEED_TEST_PREFILL];
	return true;
}

static void describe(struct api_history *h, const struct api_history_query *q)
{
	static const char *const figure_names[SPEED_HISTORY_FIGURES] = {"decode", "prefill"};

	for (int f = 0; f < SPEED_HISTORY_FIGURES; f++) {
		const struct speed_history_figure *g = &h->result.figure[f];
		char outl[48] = "";
		if (g->outliers > 0)
			snprintf(outl, sizeof(outl), ", %d outlier%s left out", g->outliers,
				 g->outliers > 1 ? "s" : "");
		if (g->basis == SPEED_BASIS_MEASURED)
			note(h,
			     "%s speed: measured, the robust mean of %d recorded run%s of this model "
			     "and precision on %s%s",
			     figure_names[f], g->runs, g->runs > 1 ? "s" : "", q->fingerprint,
			     outl);
		else if (g->basis == SPEED_BASIS_CALIBRATED)
			note(h,
			     "%s speed: calibrated, the roofline x %.2f, this host's measured / "
			     "predicted over %d run%s of other models or precisions on %s%s%s",
			     figure_names[f], g->efficiency, g->runs, g->runs > 1 ? "s" : "",
			     q->fingerprint, outl,
			     g->clamped ?
				     " (clamped to the sane range 0.25-4: the runs look unlike "
				     "this estimate)" :
				     "");
	}
	if (h->skipped > 0)
		note(h,
		     "speed: %d recorded run%s on %s left out (another backend, a model or "
		     "precision rigfit does not know, or more than the %d newest other "
		     "model/precision pairs)",
		     h->skipped, h->skipped > 1 ? "s" : "", q->fingerprint, API_HISTORY_MAX_PAIRS);
}

static void roofline_only(const struct api_history_query *q, struct api_history *out)
{
	speed_history_refine(q->roofline, NULL, 0, &out->result);
}

/* The newest runs of q->fingerprint as rows, listed from the store. Returns 0 (rows filled),
 * RF_E_NOMEM, or 1 when the store could not be read (out says so; rows empty). */
static int list_rows(const struct api_env *env, const struct api_history_query *q,
		     struct api_history *out, struct api_history_rows *rows)
{
	struct api_bench_filter f;
	struct api_bench_run *runs = NULL;
	int n = 0, rc;

	memset(rows, 0, sizeof(*rows));
	memset(&f, 0, sizeof(f));
	hw_strlcpy(f.hardware_fingerprint, q->fingerprint, sizeof(f.hardware_fingerprint));
	f.limit = API_HISTORY_LIMIT;
	rc = env->store.bench_list(env->store.ctx, &f, &runs, &n);
	if (rc == RF_E_NOMEM)
		return rc; /* out of memory is the request's failure, not a store outage */
	if (rc < 0 || n < 0 || (n > 0 && !runs)) {
		out->unavailable = true;
		note(out, "speed: the benchmark history could not be read (%s); roofline only",
		     rc < 0 ? rf_err_message(rc) : "a bad answer");
		api_bench_runs_free(runs, n > 0 ? n : 0);
		return 1;
	}
	/* A store that ignores the limit is held to it. */
	rc = api_history_rows_from_runs(runs, n > API_HISTORY_LIMIT ? API_HISTORY_LIMIT : n,
					q->fingerprint, rows);
	api_bench_runs_free(runs, n);
	return rc;
}

int api_history_refine(const struct api_env *env, const struct api_history_query *q,
		       struct api_history *out)
{
	struct api_history_cache *cache = env->history_cache;
	struct api_history_rows rows = {0};
	struct speed_history_run *hist = NULL;
	struct history_walk *w = NULL;
	size_t n_hist = 0;
	uint64_t version = 0;
	bool versioned, cached = false;
	int rc;

	memset(out, 0, sizeof(*out));
	roofline_only(q, out);
	if (!q->fingerprint || !q->fingerprint[0] || !env->store.available ||
	    !env->store.bench_list)
		return 0;
	versioned = cache && env->store.bench_version &&
		    env->store.bench_version(env->store.ctx, &version) == 0;
	if (versioned && api_history_cache_get(cache, q->fingerprint, version, &rows)) {
		cached = true;
	} else if ((rc = list_rows(env, q, out, &rows)) != 0) {
		return rc < 0 ? rc : 0;
	}
	out->listed = rows.listed;
	if (rows.listed == 0) {
		rc = 0;
		goto done;
	}
	hist = calloc((size_t)rows.n + 1, sizeof(*hist));
	w = calloc(1, sizeof(*w));
	if (!hist || !w) {
		rc = RF_E_NOMEM;
		goto done;
	}
	w->env = env;
	w->q = q;
	for (int i = 0; i < rows.n; i++)
		if (match_run(w, &rows.rows[i], &hist[n_hist]))
			n_hist++;
	out->skipped = rows.listed - (int)n_hist;
	rc = speed_history_refine(q->roofline, hist, n_hist, &out->result);
	if (rc < 0)
		roofline_only(q, out);
	else
		describe(out, q);
	rc = 0;
done:
	free(hist);
	free(w);
	if (cached)
		api_history_cache_put(cache);
	else if (versioned)
		api_history_cache_store(cache, q->fingerprint, version, &rows);
	else
		free((void *)rows.rows);
	return rc;
}
