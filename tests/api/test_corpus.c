/*
 * The recorded corpus: tests/data/corpus/requests.txt holds POST bodies for /api/estimate,
 * /api/config, /api/recommend and /api/validate over catalog models, quantizations, contexts
 * and GPUs (one "ROUTE BODY" per line), and answers.txt what the handlers answered to each
 * when they were recorded, kept small: per answer its status, a hash of everything that is not
 * a number (keys, strings, booleans, nulls, the shape) and every number in document order.
 * Replaying them must give the same shape and every number equal within 1e-9 relative, so that
 * work on the request path (memos, printing, allocation) cannot change an answer unnoticed.
 *
 * No number is excluded: every body names its hardware, so no answer depends on this host, and
 * none of these routes writes a clock or a duration into its answer.
 *
 * RIGFIT_CORPUS_RECORD=PATH writes the answers of the code under test to PATH instead of
 * checking them (how answers.txt was made, before the request path changed).
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/recommend.h"
#include "api/runtime_config.h"
#include "api/validate.h"
#include "core/hw/device.h"
#include "core/fit/model.h"
#include "core/text.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define CORPUS_MIN 200
#define CORPUS_REL_TOL 1e-9

static struct device_table devices;
static struct model_catalog *models;

static void setup(void)
{
	t_profiles_load(&devices, &models, NULL);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, NULL);
}

/* What an answer is reduced to. */
struct digest {
	uint64_t hash;
	double *nums;
	size_t n, cap;
};

static void fnv(uint64_t *h, const void *p, size_t n)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++) {
		*h ^= c[i];
		*h *= 1099511628211ULL;
	}
}

static void fnv_str(uint64_t *h, const char *s)
{
	fnv(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* Folds j into d: numbers into d->nums, everything else into d->hash. */
static void digest_walk(struct digest *d, const cJSON *j)
{
	const cJSON *c;
	char t = (char)('0' + (j->type & 0xFF) % 64);

	fnv(&d->hash, &t, 1);
	if (cJSON_IsNumber(j)) {
		if (d->n == d->cap) {
			d->cap = d->cap ? 2 * d->cap : 256;
			d->nums = realloc(d->nums, d->cap * sizeof(*d->nums));
			ck_assert_ptr_nonnull(d->nums);
		}
		d->nums[d->n++] = j->valuedouble;
	} else if (cJSON_IsString(j)) {
		fnv_str(&d->hash, j->valuestring);
	}
	for (c = j->child; c; c = c->next) {
		if (cJSON_IsObject(j))
			fnv_str(&d->hash, c->string);
		digest_walk(d, c);
	}
	fnv(&d->hash, "}", 1);
}

/* Answers one "ROUTE BODY" line into *d; returns the status. */
static int answer(char *line, struct digest *d)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .cat.quality = t_quality()};
	char *body = strchr(line, ' ');
	api_handler_fn h;
	cJSON *out;
	int status;

	ck_assert_ptr_nonnull(body);
	*body++ = '\0';
	h = t_route_handler(line);
	ck_assert_msg(h != NULL, "unknown route %s", line);
	status = t_route_post(h, &env, line, body, &out);
	d->hash = 1469598103934665603ULL;
	d->n = 0;
	digest_walk(d, out);
	cJSON_Delete(out);
	return status;
}

/* The lines of tests/data/corpus/NAME, each NUL-terminated in place; *n of them. */
static char **read_lines(const char *name, char **text, size_t *n)
{
	char *dir = t_path(t_data_dir(), "corpus"), *p = t_path(dir, name);
	char **lines = NULL, *s, *nl;
	size_t cap = 0;

	*text = t_read_file(p, NULL);
	ck_assert_msg(*text != NULL, "cannot read %s", p);
	*n = 0;
	for (s = *text; *s; s = nl + 1) {
		nl = strchr(s, '\n');
		ck_assert_msg(nl != NULL, "%s: the last line has no newline", p);
		*nl = '\0';
		if (*n == cap) {
			cap = cap ? 2 * cap : 256;
			lines = realloc(lines, cap * sizeof(*lines));
			ck_assert_ptr_nonnull(lines);
		}
		lines[(*n)++] = s;
	}
	free(p);
	free(dir);
	return lines;
}

static bool close_enough(double want, double got)
{
	double scale = fabs(want) > fabs(got) ? fabs(want) : fabs(got);

	return want == got || fabs(want - got) <= CORPUS_REL_TOL * scale;
}

/* Records the answers to RIGFIT_CORPUS_RECORD's path. */
static void record(char **req, size_t n, const char *path)
{
	FILE *f = fopen(path, "w");
	struct digest d = {0};

	ck_assert_msg(f != NULL, "cannot write %s", path);
	for (size_t i = 0; i < n; i++) {
		int status = answer(req[i], &d);
		fprintf(f, "%d %016" PRIx64 " %zu", status, d.hash, d.n);
		for (size_t k = 0; k < d.n; k++)
			fprintf(f, " %.12g", d.nums[k]);
		fputc('\n', f);
	}
	ck_assert_int_eq(fclose(f), 0);
	free(d.nums);
}

START_TEST(corpus_answers_unchanged)
{
	char *rtext, *atext;
	size_t nreq, nans, checked = 0;
	char **req = read_lines("requests.txt", &rtext, &nreq);
	const char *rec = getenv("RIGFIT_CORPUS_RECORD");
	struct digest d = {0};
	char **ans;
	unsigned long cut;

	ck_assert_uint_ge(nreq, CORPUS_MIN);
	if (rec && *rec) {
		record(req, nreq, rec);
		free(req);
		free(rtext);
		return;
	}
	ans = read_lines("answers.txt", &atext, &nans);
	ck_assert_uint_eq(nans, nreq);
	cut = rf_notes_cut();
	for (size_t i = 0; i < nreq; i++) {
		char *p = ans[i], *end;
		char what[96];
		long status = strtol(p, &end, 10);
		uint64_t hash = strtoull(end, &end, 16);
		size_t n = strtoull(end, &end, 10);
		int got;

		snprintf(what, sizeof(what), "request %zu (line %zu)", i, i + 1);
		got = answer(req[i], &d);
		ck_assert_msg(got == status, "%s: status %d, recorded %ld", what, got, status);
		ck_assert_msg(d.hash == hash,
			      "%s: keys, strings or shape differ from the recording", what);
		ck_assert_msg(d.n == n, "%s: %zu numbers, recorded %zu", what, d.n, n);
		for (size_t k = 0; k < n; k++) {
			double want = strtod(end, &end);
			ck_assert_msg(close_enough(want, d.nums[k]),
				      "%s: number %zu is %.17g, recorded %.12g", what, k, d.nums[k],
				      want);
		}
		checked += n;
	}
	ck_assert_uint_gt(checked, 0);
	/* Every assumption and note whole: none cut to its buffer. */
	ck_assert_msg(rf_notes_cut() == cut, "%lu notes were cut to their buffers",
		      rf_notes_cut() - cut);
	free(d.nums);
	free(ans);
	free(atext);
	free(req);
	free(rtext);
}
END_TEST

/* The comparison itself must be able to fail: a number off by more than 1e-9 relative is not
 * close enough, one within it is. */
START_TEST(corpus_tolerance_is_tight)
{
	ck_assert(close_enough(4403.49, 4403.49 * (1 + 1e-12)));
	ck_assert(!close_enough(4403.49, 4403.49 * (1 + 1e-8)));
	ck_assert(!close_enough(0, 1e-300));
	ck_assert(close_enough(0, 0));
}
END_TEST

Suite *corpus_suite(void)
{
	Suite *s = suite_create("corpus");
	TCase *tc = tcase_create("replay");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, corpus_answers_unchanged);
	tcase_add_test(tc, corpus_tolerance_is_tight);
	suite_add_tcase(s, tc);
	return s;
}
