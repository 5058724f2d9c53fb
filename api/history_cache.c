/*
 * The benchmark history remembered between estimates (see history_cache.h): a handful of
 * fingerprints, each with the rows of its newest runs and the store version they were read at.
 */
#include "api/history_cache.h"

#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hw/hw.h"
#include "core/fit/quant.h"
#include "core/fit/speed.h"

#define HISTORY_CACHE_SLOTS 4

struct history_slot {
	char fp[API_BENCH_ID_LEN + 1]; /* "": unused */
	uint64_t version;
	uint64_t used; /* the cache's clock at its last use: the smallest is replaced */
	struct api_history_rows rows;
};

struct api_history_cache {
	api_history_lock_fn lock, unlock;
	void *lock_ctx;
	uint64_t clock;
	struct history_slot slot[HISTORY_CACHE_SLOTS];
};

struct api_history_cache *api_history_cache_new(api_history_lock_fn lock,
						api_history_lock_fn unlock, void *lock_ctx)
{
	struct api_history_cache *c = calloc(1, sizeof(*c));

	if (c) {
		c->lock = lock;
		c->unlock = unlock;
		c->lock_ctx = lock_ctx;
	}
	return c;
}

static void cache_lock(struct api_history_cache *c)
{
	if (c->lock)
		c->lock(c->lock_ctx);
}

static void cache_unlock(struct api_history_cache *c)
{
	if (c->unlock)
		c->unlock(c->lock_ctx);
}

void api_history_cache_free(struct api_history_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < HISTORY_CACHE_SLOTS; i++)
		free((void *)c->slot[i].rows.rows);
	free(c);
}

/* The backend of a run ("CUDA", "Metal,BLAS", "" unknown): its first name, lower-cased. */
static void classify_backend(const char *run_backend, struct api_history_row *row)
{
	char name[sizeof(((struct api_bench_run *)0)->backend)];
	enum speed_backend b;
	size_t i;

	for (i = 0; run_backend[i] && run_backend[i] != ',' && run_backend[i] != ' ' &&
		    i + 1 < sizeof(name);
	     i++)
		name[i] = (char)(run_backend[i] >= 'A' && run_backend[i] <= 'Z' ?
					 run_backend[i] - 'A' + 'a' :
					 run_backend[i]);
	name[i] = '\0';
	row->backend = 0;
	if (!name[0]) {
		row->backend_kind = API_HISTORY_BACKEND_ANY;
	} else if (speed_backend_parse(name, &b) == 0) {
		row->backend_kind = API_HISTORY_BACKEND_KNOWN;
		row->backend = (int)b;
	} else {
		row->backend_kind = API_HISTORY_BACKEND_OTHER;
	}
}

int api_history_rows_from_runs(const struct api_bench_run *runs, int n, const char *fp,
			       struct api_history_rows *out)
{
	struct api_history_row *rows = NULL;
	int kept = 0;

	memset(out, 0, sizeof(*out));
	out->listed = n;
	if (n <= 0)
		return 0;
	rows = calloc((size_t)n, sizeof(*rows));
	if (!rows)
		return RF_E_NOMEM;
	for (int i = 0; i < n; i++) {
		struct api_history_row *r = &rows[kept];

		/* Runs recorded under another fingerprint are not this hardware's. */
		if (strcmp(runs[i].hardware_fingerprint, fp) != 0)
			continue;
		hw_strlcpy(r->model, runs[i].model, sizeof(r->model));
		r->ftype = rf_ftype_from_name(runs[i].precision);
		classify_backend(runs[i].backend, r);
		r->measured_tps[SPEED_TEST_DECODE] = runs[i].decode_tokens_per_s;
		r->measured_tps[SPEED_TEST_PREFILL] = runs[i].prefill_tokens_per_s;
		kept++;
	}
	out->rows = rows;
	out->n = kept;
	return 0;
}

bool api_history_cache_get(struct api_history_cache *c, const char *fp, uint64_t v,
			   struct api_history_rows *out)
{
	cache_lock(c);
	for (int i = 0; i < HISTORY_CACHE_SLOTS; i++) {
		struct history_slot *s = &c->slot[i];

		if (s->fp[0] && s->version == v && strcmp(s->fp, fp) == 0) {
			s->used = ++c->clock;
			*out = s->rows;
			return true;
		}
	}
	cache_unlock(c);
	return false;
}

void api_history_cache_put(struct api_history_cache *c)
{
	cache_unlock(c);
}

void api_history_cache_store(struct api_history_cache *c, const char *fp, uint64_t v,
			     struct api_history_rows *rows)
{
	struct history_slot *s = NULL;

	if (strlen(fp) >= sizeof(c->slot[0].fp)) {
		free((void *)rows->rows);
		memset(rows, 0, sizeof(*rows));
		return;
	}
	cache_lock(c);
	/* The slot of this fingerprint (an older version), else an unused one, else the least
	 * recently used. */
	for (int i = 0; i < HISTORY_CACHE_SLOTS && !s; i++)
		if (strcmp(c->slot[i].fp, fp) == 0)
			s = &c->slot[i];
	for (int i = 0; i < HISTORY_CACHE_SLOTS && !s; i++)
		if (!c->slot[i].fp[0])
			s = &c->slot[i];
	if (!s) {
		s = &c->slot[0];
		for (int i = 1; i < HISTORY_CACHE_SLOTS; i++)
			if (c->slot[i].used < s->used)
				s = &c->slot[i];
	}
	free((void *)s->rows.rows);
	hw_strlcpy(s->fp, fp, sizeof(s->fp));
	s->version = v;
	s->used = ++c->clock;
	s->rows = *rows;
	memset(rows, 0, sizeof(*rows));
	cache_unlock(c);
}
