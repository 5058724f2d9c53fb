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
#include "core/text.h"
#include "core/err.h"
#include "core/hw/hw.h"
#include "core/fit/quant.h"

static void note(struct api_history *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct api_history *h, const char *fmt, ...)
{
	va_list ap;

	if (h->n_notes >= API_HISTORY_NOTES)
		return;
	va_start(ap, fmt);
	rf_note_vformat(h->notes[h->n_notes++], API_HISTORY_NOTE_LEN, fmt, ap);
	va_end(ap);
}

/* The catalog entries of the runs' models: runs repeat a few names many times, and a catalog
 * lookup compares every id and alias. */
#define HISTORY_NAMES 32
struct history_names {
	struct {
		const char *name; /* points into the rows, which outlive the walk */
		const struct model_entry *m;
	} names[HISTORY_NAMES];
	size_t n;
};

/* The catalog entry of a run's model (an id or alias, as the request's "model" resolves), or
 * NULL. */
static const struct model_entry *resolve_once(const struct api_env *env, struct history_names *w,
					      const char *name)
{
	const struct model_entry *m;

	for (size_t i = 0; i < w->n; i++)
		if (strcmp(w->names[i].name, name) == 0)
			return w->names[i].m;
	m = env->cat.models ? model_catalog_find(env->cat.models, name) : NULL;
	if (w->n < HISTORY_NAMES) {
		w->names[w->n].name = name;
		w->names[w->n++].m = m;
	}
	return m;
}

/* The index of pair (m, ftype) among c's, added when new and there is room; -1 when not. */
static int pair_of(struct speed_calibration *c, const struct model_entry *m, int ftype)
{
	for (int i = 0; i < c->n_pairs; i++)
		if (c->pairs[i].model == m && c->pairs[i].ftype == ftype)
			return i;
	if (c->n_pairs >= SPEED_CALIB_MAX_PAIRS)
		return -1;
	c->pairs[c->n_pairs].model = m;
	c->pairs[c->n_pairs].ftype = ftype;
	c->pairs[c->n_pairs].predicted = false;
	return c->n_pairs++;
}

/* Maps the usable rows (this backend, a precision rigfit knows) into out's runs and pairs, and
 * predicts the pairs a refinement of q can use: of a known model and precision, every pair but
 * the one estimated, the newest API_HISTORY_MAX_PAIRS; of any model (a GGUF's, matched by name,
 * or a planner's search), all SPEED_CALIB_MAX_PAIRS. */
static void map_rows(const struct api_env *env, const struct api_history_query *q,
		     const struct api_history_rows *rows, struct api_history_calib *out)
{
	struct speed_calibration *c = &out->cal;
	struct history_names w;
	/* Only a model matched by name can have runs in a pair that is not all its own. */
	bool capped = q->ftype >= 0 && (q->entry || !q->model_name);
	int predicted = 0;

	w.n = 0;
	for (int i = 0; i < rows->n && c->n_runs < SPEED_CALIB_MAX_RUNS; i++) {
		const struct api_history_row *r = &rows->rows[i];
		struct speed_calib_run *o = &out->runs[c->n_runs];
		if (r->ftype < 0 || r->backend_kind == API_HISTORY_BACKEND_OTHER ||
		    (r->backend_kind == API_HISTORY_BACKEND_KNOWN && r->backend != (int)q->backend))
			continue;
		o->model = resolve_once(env, &w, r->model);
		o->ftype = r->ftype;
		o->measured_tps[SPEED_TEST_DECODE] = r->measured_tps[SPEED_TEST_DECODE];
		o->measured_tps[SPEED_TEST_PREFILL] = r->measured_tps[SPEED_TEST_PREFILL];
		o->name = NULL;
		if (out->names) {
			char *n = out->names + (size_t)c->n_runs * sizeof(r->model);
			memcpy(n, r->model, sizeof(r->model));
			o->name = n;
		}
		o->pair = o->model && q->predict ? pair_of(c, o->model, o->ftype) : -1;
		c->n_runs++;
	}
	for (int i = 0; i < c->n_pairs; i++) {
		struct speed_calib_pair *p = &c->pairs[i];
		if (q->ftype >= 0 && q->entry && p->model == q->entry && p->ftype == q->ftype)
			continue; /* the model estimated: its runs are measured, never predicted */
		if (capped && predicted >= API_HISTORY_MAX_PAIRS)
			break;
		p->tps[0] = p->tps[1] = -1;
		p->predicted = q->predict(q->predict_ctx, p->model, p->ftype, p->tps) == 0;
		predicted++;
	}
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

/* The newest runs of q->fingerprint as rows, listed from the store. Returns 0 (rows filled),
 * RF_E_NOMEM, or 1 when the store could not be read (out says so; rows empty). */
static int list_rows(const struct api_env *env, const struct api_history_query *q,
		     struct api_history_calib *out, struct api_history_rows *rows)
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
		snprintf(out->note, sizeof(out->note),
			 "speed: the benchmark history could not be read (%s); roofline only",
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

int api_history_load(const struct api_env *env, const struct api_history_query *q,
		     struct api_history_calib *out)
{
	struct api_history_cache *cache = env->history_cache;
	struct api_history_rows rows = {0};
	uint64_t version = 0;
	bool versioned, cached = false;
	int rc;

	memset(out, 0, sizeof(*out));
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
	out->cal.listed = rows.listed;
	rc = 0;
	if (rows.n > 0) {
		size_t n = rows.n < SPEED_CALIB_MAX_RUNS ? (size_t)rows.n : SPEED_CALIB_MAX_RUNS;
		out->runs = calloc(n, sizeof(*out->runs));
		/* Names are compared only for a model outside the catalog. */
		if (!q->entry && q->model_name)
			out->names = malloc(n * sizeof(rows.rows[0].model));
		if (!out->runs || (!q->entry && q->model_name && !out->names))
			rc = RF_E_NOMEM;
		else
			map_rows(env, q, &rows, out);
		out->cal.runs = out->runs;
		/* Any precision (a planner's): every pair was predicted, and the models with no
		 * run of their own share one refinement. */
		if (rc == 0 && q->ftype < 0)
			(void)speed_calib_prepare(&out->cal);
	}
	if (cached)
		api_history_cache_put(cache);
	else if (versioned)
		api_history_cache_store(cache, q->fingerprint, version, &rows);
	else
		free((void *)rows.rows);
	return rc;
}

void api_history_calib_free(struct api_history_calib *c)
{
	if (!c)
		return;
	free(c->runs);
	free(c->names);
	c->runs = NULL;
	c->names = NULL;
	c->cal.runs = NULL;
	c->cal.n_runs = 0;
}

int api_history_refine(const struct api_history_calib *c, const struct api_history_query *q,
		       const double roofline[SPEED_HISTORY_FIGURES], struct api_history *out)
{
	int rc;

	memset(out, 0, sizeof(*out));
	if (c->note[0])
		note(out, "%s", c->note);
	rc = speed_calib_refine(&c->cal, q->entry, q->model_name, q->ftype, roofline, &out->result,
				&out->skipped);
	if (rc < 0) {
		speed_history_refine(roofline, NULL, 0, &out->result);
		out->skipped = 0;
		return rc;
	}
	if (c->cal.listed > 0)
		describe(out, q);
	return 0;
}
