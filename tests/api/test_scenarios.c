/*
 * The expert's scenarios: tests/data/scenarios/scenarios.txt holds questions a user asks (a
 * POST to /api/estimate, /api/config, /api/recommend, /api/validate or /api/finetune/detect
 * on a described machine), each with what an expert answers and the public source of that
 * answer (a model card, a runtime's documentation, a published run). The answer rigfit gives
 * must hold every expectation of its scenario. Each scenario names the point of the decisions
 * issue it covers (1-10: runnable commands, speed that matters, unified memory, CPU hosts,
 * MoE prefill, fine-tuning picks, fine-tuning speed, vLLM for many users, one set of numbers,
 * long context) and its host class (gpu, apple, cpu); the suite checks that every point is
 * covered on every class and prints the counts.
 *
 * A scenario:
 *   [name]
 *   point N
 *   host gpu|apple|cpu
 *   source TEXT (where the expert's answer comes from)
 *   post ROUTE BODY (one line of JSON)
 *   status CODE (200 unless given)
 *   expect PATH OP VALUE (any number of them)
 * PATH is a dotted path into the answer ("settings.n_ctx", "recommendations.0.model"); a "*"
 * segment means every element of an array (at least one), a final "#" the array's length. OP is
 * one of == != < <= > >= (numbers, strings, true/false/null) and ~ !~ (a string contains or
 * not; on an array of strings: some element does, or none). VALUE is JSON, or @PATH for
 * another value of the same answer, optionally times a factor: @estimate.decode*0.95.
 * Without a socket, with the shipped profiles.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/finetune_detect.h"
#include "api/recommend.h"
#include "api/runtime_config.h"
#include "api/validate.h"
#include "core/hw/device.h"
#include "core/fit/model.h"
#include "core/text.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define SCENARIOS_MIN 60
#define POINTS 10
#define MAX_EXPECT 16
#define LINE_MAX_LEN 4096

static struct device_table devices;
static struct model_catalog *models;
static struct api_tier_table *tiers;

static void setup(void)
{
	t_profiles_load(&devices, &models, &tiers);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, &tiers);
}

struct scenario {
	char name[128];
	int point;
	char host[16];
	char source[1024];
	char route[64];
	char body[LINE_MAX_LEN];
	int status;
	int n_expect;
	char expect[MAX_EXPECT][512];
	int line; /* of its "[name]" */
};

/* Reads every scenario; fails the test on a malformed file. Returns the count (*out malloc'd). */
static int load(struct scenario **out)
{
	size_t len;
	char *path = t_path(t_data_dir(), "scenarios/scenarios.txt");
	char *text = t_read_file(path, &len);
	struct scenario *all = NULL, *s = NULL;
	int n = 0, lineno = 0;
	char *save = NULL;

	ck_assert_msg(text != NULL, "%s is missing", path);
	free(path);
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		lineno++;
		if (l[0] == '#' || l[0] == '\0')
			continue;
		if (l[0] == '[') {
			char *end = strchr(l, ']');
			all = realloc(all, (size_t)(n + 1) * sizeof(*all));
			ck_assert_ptr_nonnull(all);
			s = &all[n++];
			memset(s, 0, sizeof(*s));
			s->status = 200;
			s->line = lineno;
			ck_assert_msg(end && end - l - 1 < (int)sizeof(s->name), "line %d: %s",
				      lineno, l);
			memcpy(s->name, l + 1, (size_t)(end - l - 1));
			continue;
		}
		ck_assert_msg(s != NULL, "line %d before any [scenario]", lineno);
		if (strncmp(l, "point ", 6) == 0) {
			s->point = atoi(l + 6);
		} else if (strncmp(l, "host ", 5) == 0) {
			snprintf(s->host, sizeof(s->host), "%s", l + 5);
		} else if (strncmp(l, "source ", 7) == 0) {
			snprintf(s->source, sizeof(s->source), "%s", l + 7);
		} else if (strncmp(l, "status ", 7) == 0) {
			s->status = atoi(l + 7);
		} else if (strncmp(l, "post ", 5) == 0) {
			const char *sp = strchr(l + 5, ' ');
			ck_assert_msg(sp && sp - l - 5 < (int)sizeof(s->route), "line %d", lineno);
			memcpy(s->route, l + 5, (size_t)(sp - l - 5));
			ck_assert_msg(strlen(sp + 1) < sizeof(s->body), "line %d: body too long",
				      lineno);
			snprintf(s->body, sizeof(s->body), "%s", sp + 1);
		} else if (strncmp(l, "expect ", 7) == 0) {
			ck_assert_msg(s->n_expect < MAX_EXPECT, "line %d: too many expectations",
				      lineno);
			snprintf(s->expect[s->n_expect++], sizeof(s->expect[0]), "%s", l + 7);
		} else {
			ck_abort_msg("line %d: unknown line '%s'", lineno, l);
		}
	}
	free(text);
	*out = all;
	return n;
}

/* The values at path in j (a "*" segment fans out): up to max into vals. Returns how many. */
static int lookup(const cJSON *j, const char *path, const cJSON **vals, int max, int *count)
{
	char seg[128];
	const char *dot = strchr(path, '.');
	size_t n = dot ? (size_t)(dot - path) : strlen(path);
	int found = 0;

	*count = -1;
	if (!j)
		return 0;
	if (n == 0)
		return 0;
	ck_assert(n < sizeof(seg));
	memcpy(seg, path, n);
	seg[n] = '\0';
	if (strcmp(seg, "#") == 0 && !dot) {
		*count = cJSON_GetArraySize(j);
		return 0;
	}
	if (strcmp(seg, "*") == 0) {
		const cJSON *e;
		if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) == 0)
			return 0;
		cJSON_ArrayForEach(e, j)
		{
			int c;
			if (!dot) {
				if (found < max)
					vals[found++] = e;
				continue;
			}
			{
				int k = lookup(e, dot + 1, vals + found, max - found, &c);
				if (k == 0)
					return 0; /* every element must have it */
				found += k;
			}
		}
		return found;
	}
	{
		const cJSON *next = (seg[0] >= '0' && seg[0] <= '9' && cJSON_IsArray(j)) ?
					    cJSON_GetArrayItem(j, atoi(seg)) :
					    cJSON_GetObjectItemCaseSensitive(j, seg);
		if (!next)
			return 0;
		if (!dot) {
			vals[0] = next;
			return 1;
		}
		return lookup(next, dot + 1, vals, max, count);
	}
}

/* A malloc'd failure message. */
static char *failure(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *failure(const char *fmt, ...)
{
	char *m = malloc(1024);
	va_list ap;

	ck_assert_ptr_nonnull(m);
	va_start(ap, fmt);
	vsnprintf(m, 1024, fmt, ap);
	va_end(ap);
	return m;
}

/* Whether v op want holds; why says what was compared when it does not. */
static bool holds(const cJSON *v, const char *op, const cJSON *want, double factor, char *why,
		  size_t whylen)
{
	char *vs = cJSON_PrintUnformatted(v), *ws = cJSON_PrintUnformatted(want);
	bool ok = false;

	if (strcmp(op, "~") == 0 || strcmp(op, "!~") == 0) {
		bool some = false;
		ck_assert_msg(cJSON_IsString(want), "%s needs a string", op);
		if (cJSON_IsString(v)) {
			some = strstr(v->valuestring, want->valuestring) != NULL;
		} else if (cJSON_IsArray(v)) {
			const cJSON *e;
			cJSON_ArrayForEach(e, v)
			{
				some |= cJSON_IsString(e) &&
					strstr(e->valuestring, want->valuestring);
			}
		}
		ok = op[0] == '~' ? some : !some;
	} else if (cJSON_IsNumber(v) && cJSON_IsNumber(want)) {
		double a = v->valuedouble, b = want->valuedouble * factor;
		ok = strcmp(op, "==") == 0 ? fabs(a - b) <= 1e-9 * fmax(1, fabs(b)) :
		     strcmp(op, "!=") == 0 ? fabs(a - b) > 1e-9 * fmax(1, fabs(b)) :
		     strcmp(op, "<") == 0  ? a < b :
		     strcmp(op, "<=") == 0 ? a <= b :
		     strcmp(op, ">") == 0  ? a > b :
		     strcmp(op, ">=") == 0 ? a >= b :
					     false;
	} else if (strcmp(op, "==") == 0 || strcmp(op, "!=") == 0) {
		bool same = cJSON_Compare(v, want, true);
		ok = op[0] == '=' ? same : !same;
	}
	if (!ok)
		snprintf(why, whylen, "%.300s %s %.200s (x%g)", vs ? vs : "?", op, ws ? ws : "?",
			 factor);
	free(vs);
	free(ws);
	return ok;
}

/* Checks one "PATH OP VALUE" against the answer j; returns NULL or a malloc'd failure. */
static char *check(const cJSON *j, const char *expect)
{
	char path[256], op[4], why[640] = "";
	const char *rest;
	const cJSON *vals[256];
	cJSON *want = NULL;
	double factor = 1;
	int n, count;
	char *fail = NULL;

	if (sscanf(expect, "%255s %3s", path, op) != 2)
		ck_abort_msg("malformed expectation '%s'", expect);
	rest = strstr(expect, op) + strlen(op);
	while (*rest == ' ')
		rest++;
	if (rest[0] == '@') {
		char other[256];
		const char *star = strchr(rest, '*');
		size_t ol = star ? (size_t)(star - rest - 1) : strlen(rest + 1);
		const cJSON *ov[1];
		int oc;
		ck_assert(ol < sizeof(other));
		memcpy(other, rest + 1, ol);
		other[ol] = '\0';
		if (star)
			factor = atof(star + 1);
		if (lookup(j, other, ov, 1, &oc) != 1)
			return failure("%s: no value at %s", expect, other);
		want = cJSON_Duplicate(ov[0], true);
	} else {
		want = cJSON_Parse(rest);
		ck_assert_msg(want != NULL, "expectation '%s': the value is not JSON", expect);
	}
	n = lookup(j, path, vals, 256, &count);
	if (count >= 0) {
		cJSON *c = cJSON_CreateNumber(count);
		if (!holds(c, op, want, factor, why, sizeof(why)))
			fail = failure("%s: length %s", expect, why);
		cJSON_Delete(c);
	} else if (n == 0) {
		fail = failure("%s: no value at %s", expect, path);
	} else {
		for (int i = 0; i < n && !fail; i++)
			if (!holds(vals[i], op, want, factor, why, sizeof(why)))
				fail = failure("%s: %s", expect, why);
	}
	cJSON_Delete(want);
	return fail;
}

START_TEST(every_scenario_gets_the_experts_answer)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .cat.quality = t_quality(),
			      .cat.tiers = tiers};
	struct scenario *all = NULL;
	int n = load(&all), failed = 0;
	static const char *const classes[3] = {"gpu", "apple", "cpu"};
	int per_point[POINTS + 1] = {0}, per_class[POINTS + 1][3] = {{0}};
	int gpu = 0, apple = 0, cpu = 0;
	unsigned long cut = rf_notes_cut();

	for (int i = 0; i < n; i++) {
		const struct scenario *s = &all[i];
		api_handler_fn h = t_route_handler(s->route);
		cJSON *out = NULL;
		int status;

		ck_assert_msg(h != NULL, "[%s]: unknown route '%s'", s->name, s->route);
		ck_assert_msg(s->point >= 1 && s->point <= POINTS, "[%s]: point %d", s->name,
			      s->point);
		ck_assert_msg(strlen(s->source) >= 12, "[%s]: no source", s->name);
		ck_assert_msg(s->n_expect > 0, "[%s]: no expectation", s->name);
		per_point[s->point]++;
		for (int c = 0; c < 3; c++)
			per_class[s->point][c] += strcmp(s->host, classes[c]) == 0;
		gpu += strcmp(s->host, "gpu") == 0;
		apple += strcmp(s->host, "apple") == 0;
		cpu += strcmp(s->host, "cpu") == 0;
		ck_assert_msg(!strcmp(s->host, "gpu") || !strcmp(s->host, "apple") ||
				      !strcmp(s->host, "cpu"),
			      "[%s]: host '%s'", s->name, s->host);
		status = t_route_post(h, &env, s->route, s->body, &out);
		if (status != s->status) {
			char *txt = cJSON_PrintUnformatted(out);
			fprintf(stderr, "scenario [%s] (line %d): status %d, want %d: %.400s\n",
				s->name, s->line, status, s->status, txt ? txt : "");
			free(txt);
			failed++;
			cJSON_Delete(out);
			continue;
		}
		for (int e = 0; e < s->n_expect; e++) {
			char *fail = check(out, s->expect[e]);
			if (fail) {
				fprintf(stderr, "scenario [%s] (line %d, point %d): %s\n", s->name,
					s->line, s->point, fail);
				free(fail);
				failed++;
			}
		}
		cJSON_Delete(out);
	}
	fprintf(stderr, "scenarios: %d (gpu %d, apple %d, cpu %d); per point:", n, gpu, apple, cpu);
	for (int p = 1; p <= POINTS; p++)
		fprintf(stderr, " %d:%d", p, per_point[p]);
	fprintf(stderr, "; %d expectation(s) failed\n", failed);
	ck_assert_msg(failed == 0, "%d expectation(s) failed (listed above)", failed);
	/* Every assumption and note of every answer whole: none cut to its buffer. */
	ck_assert_msg(rf_notes_cut() == cut, "%lu notes were cut to their buffers",
		      rf_notes_cut() - cut);
	ck_assert_msg(n >= SCENARIOS_MIN, "%d scenarios, at least %d wanted", n, SCENARIOS_MIN);
	/* Each point on each host class: a GPU, a Mac and a CPU-only host. */
	for (int p = 1; p <= POINTS; p++)
		for (int c = 0; c < 3; c++)
			ck_assert_msg(per_class[p][c] > 0,
				      "no scenario covers point %d on %s hosts", p, classes[c]);
	ck_assert(gpu > 0 && apple > 0 && cpu > 0);
	free(all);
}
END_TEST

/* The checker fails where it should: a wrong expectation is reported, not passed. */
START_TEST(a_wrong_expectation_fails)
{
	cJSON *j =
		cJSON_Parse("{\"a\":{\"b\":[1,2,3]},\"s\":\"vllm serve x\",\"l\":[\"p q\",\"r\"],"
			    "\"n\":5}");
	static const char *const good[] = {
		"a.b.0 == 1", "a.b.* >= 1", "a.b.# == 3",    "s ~ \"serve\"", "s !~ \"awq\"",
		"l ~ \"q\"",  "l !~ \"z\"", "n <= @a.b.2*2", "n > @a.b.2",
	};
	static const char *const bad[] = {
		"a.b.0 == 2", "a.b.* >= 2", "a.b.# == 2",   "s ~ \"awq\"", "s !~ \"serve\"",
		"l ~ \"z\"",  "n < @a.b.2", "missing == 1", "a.b.9 == 1",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		char *f = check(j, good[i]);
		ck_assert_msg(f == NULL, "%s: %s", good[i], f);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *f = check(j, bad[i]);
		ck_assert_msg(f != NULL, "%s passed", bad[i]);
		free(f);
	}
	cJSON_Delete(j);
}
END_TEST

Suite *scenarios_suite(void)
{
	Suite *s = suite_create("scenarios");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, a_wrong_expectation_fails);
	tcase_add_test(tc, every_scenario_gets_the_experts_answer);
	suite_add_tcase(s, tc);
	return s;
}
