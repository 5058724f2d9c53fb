/*
 * Request bodies of POST /api/benchmarks turned into runs (see bench_input.h): rigfit's own
 * object through the declarative mapper, llama-bench's array and llama-server's timings read
 * field by field. Whatever the shape, every run ends in bench_finish, which applies the query's
 * overrides, resolves the model against the catalog, fills the fingerprint and the time, and
 * derives the run id, so the three shapes cannot drift apart in what they store.
 */
#include "api/bench_input.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/hardware_json.h"
#include "api/jsonmap.h"
#include "core/err.h"
#include "core/hw/hw.h"
#include "core/hw/hw_fingerprint.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"

/* 9999-12-31T23:59:59.999Z, the last instant the stored form can write. */
#define BENCH_MAX_MS 253402300799999LL
/* How far in the future a measurement may claim to be (clock skew between hosts). */
#define BENCH_FUTURE_SLACK_MS (24LL * 3600 * 1000)

/* One parse: the request's overrides and where the runs go. */
struct bench_ctx {
	const struct api_env *env;
	struct api_reply *reply;
	char q_model[sizeof(((struct api_bench_run *)0)->model)];
	char q_precision[sizeof(((struct api_bench_run *)0)->precision)];
	char q_hardware[API_BENCH_ID_LEN + 1];
	struct api_bench_batch *out;
	int cap; /* of out->runs and out->skipped */
};

void api_bench_batch_free(struct api_bench_batch *b)
{
	if (!b)
		return;
	api_bench_runs_free(b->runs, b->n);
	free(b->skipped);
	memset(b, 0, sizeof(*b));
}

/* Writes "[index].name" (index >= 0) or "name" into buf: the field an error names. */
static const char *field_name(char *buf, size_t len, int index, const char *name)
{
	if (index < 0)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "[%d].%s", index, name);
	return buf;
}

static int bench_fail(struct bench_ctx *c, int err, int index, const char *name, const char *fmt,
		      ...) __attribute__((format(printf, 5, 6)));

/* Sets the error envelope naming field [index].name with a formatted message; returns err. */
static int bench_fail(struct bench_ctx *c, int err, int index, const char *name, const char *fmt,
		      ...)
{
	char field[96], msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return api_error(c->reply, err, name ? field_name(field, sizeof(field), index, name) : NULL,
			 "%s", msg);
}

/* Returns true when s holds no control character (it may be stored and printed in a log). */
static bool text_clean(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return false;
	return true;
}

/* Returns true when s is a usable key (run id, fingerprint): 1 to 128 of [A-Za-z0-9._:-]. */
static bool id_clean(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > API_BENCH_ID_LEN)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == ':' || *s == '-'))
			return false;
	return true;
}

/* Reads n decimal digits at s; returns the value or -1. */
static int digits(const char *s, int n)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int api_bench_time_parse(const char *s, int64_t *ms)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h, mi, sec, frac = 0, off = 0, dim;
	const char *p;
	int64_t total;

	if (!s || strlen(s) < 20)
		return RF_E_INVALID_VALUE;
	y = digits(s, 4);
	mo = digits(s + 5, 2);
	d = digits(s + 8, 2);
	h = digits(s + 11, 2);
	mi = digits(s + 14, 2);
	sec = digits(s + 17, 2);
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
	    sec < 0 || sec > 60 || s[4] != '-' || s[7] != '-' || (s[10] != 'T' && s[10] != 't') ||
	    s[13] != ':' || s[16] != ':')
		return RF_E_INVALID_VALUE;
	dim = mdays[mo - 1] + (mo == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0));
	if (d > dim)
		return RF_E_INVALID_VALUE;
	if (sec == 60)
		sec = 59; /* a leap second is kept in the second before it */
	p = s + 19;
	if (*p == '.') {
		int nd = 0;
		for (p++; *p >= '0' && *p <= '9'; p++, nd++) {
			if (nd >= 9)
				return RF_E_INVALID_VALUE;
			if (nd < 3)
				frac = frac * 10 + (*p - '0');
		}
		if (nd == 0)
			return RF_E_INVALID_VALUE;
		for (; nd < 3; nd++)
			frac *= 10;
	}
	if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
		off = 0;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 && p[3] == ':') {
		int oh = digits(p + 1, 2), om = digits(p + 4, 2);
		if (oh < 0 || oh > 23 || om < 0 || om > 59)
			return RF_E_INVALID_VALUE;
		off = (oh * 60 + om) * (*p == '-' ? -1 : 1);
	} else {
		return RF_E_INVALID_VALUE;
	}
	total = days_from_civil(y, mo, d) * 86400000LL + (int64_t)h * 3600000 +
		(int64_t)mi * 60000 + (int64_t)sec * 1000 + frac - (int64_t)off * 60000;
	if (total < 0 || total > BENCH_MAX_MS)
		return RF_E_INVALID_VALUE;
	*ms = total;
	return 0;
}

const char *api_bench_model_id(const struct api_env *env, const char *name)
{
	const struct model_entry *e =
		env && env->cat.models ? model_catalog_find(env->cat.models, name) : NULL;

	return e ? e->id : name;
}

/* Checks one value of a settings object: a scalar, or an array of at most 64 scalars. */
static bool setting_ok(const cJSON *v, bool in_array)
{
	if (cJSON_IsBool(v) || cJSON_IsNull(v))
		return true;
	if (cJSON_IsNumber(v))
		return isfinite(v->valuedouble) && fabs(v->valuedouble) <= 1e15;
	if (cJSON_IsString(v))
		return strlen(v->valuestring) <= 256 && text_clean(v->valuestring);
	if (cJSON_IsArray(v) && !in_array) {
		const cJSON *e;
		if (cJSON_GetArraySize(v) > API_BENCH_MAX_SETTINGS)
			return false;
		cJSON_ArrayForEach(e, v)
		{
			if (!setting_ok(e, true))
				return false;
		}
		return true;
	}
	return false;
}

/* Renders obj compactly into *json after checking its size. Returns 0 or an envelope naming
 * field. */
static int render_capped(struct bench_ctx *c, const cJSON *obj, int index, const char *field,
			 char **json)
{
	char *s = cJSON_PrintUnformatted(obj);

	if (!s)
		return api_error(c->reply, RF_E_NOMEM, NULL, NULL);
	if (strlen(s) > API_BENCH_MAX_JSON) {
		free(s);
		return bench_fail(c, RF_E_TOO_LARGE, index, field,
				  "%s is larger than %d bytes as JSON", field, API_BENCH_MAX_JSON);
	}
	*json = s;
	return 0;
}

/* Checks a settings object (at most 64 keys of 1..64 printable bytes; scalar values or short
 * arrays of them) and renders it into *json. Returns 0 or an envelope. */
static int settings_map(struct bench_ctx *c, const cJSON *o, int index, const char *field,
			char **json)
{
	const cJSON *v;

	if (!cJSON_IsObject(o))
		return bench_fail(c, RF_E_INVALID_VALUE, index, field, "%s must be an object",
				  field);
	if (cJSON_GetArraySize(o) > API_BENCH_MAX_SETTINGS)
		return bench_fail(c, RF_E_TOO_LARGE, index, field, "%s has more than %d keys",
				  field, API_BENCH_MAX_SETTINGS);
	cJSON_ArrayForEach(v, o)
	{
		size_t kl = strlen(v->string);
		if (kl == 0 || kl > 64 || !text_clean(v->string))
			return bench_fail(c, RF_E_INVALID_VALUE, index, field,
					  "%s keys must be 1 to 64 printable bytes", field);
		if (!setting_ok(v, false))
			return bench_fail(c, RF_E_INVALID_VALUE, index, field,
					  "%s.%.64s must be a number, string (up to 256 bytes), "
					  "boolean, null or a short array of those",
					  field, v->string);
	}
	return render_capped(c, o, index, field, json);
}

/* Checks peak_memory_bytes ({"device": bytes, ...}: at most 64 devices, whole bytes from 1 to
 * 1 PiB) and renders it into *json. Returns 0 or an envelope. */
static int peak_map(struct bench_ctx *c, const cJSON *o, char **json)
{
	static const char field[] = "peak_memory_bytes";
	const cJSON *v;

	if (!cJSON_IsObject(o) || cJSON_GetArraySize(o) == 0)
		return bench_fail(c, RF_E_INVALID_VALUE, -1, field,
				  "%s must be an object of bytes per device, e.g. {\"gpu0\": "
				  "5368709120}",
				  field);
	if (cJSON_GetArraySize(o) > API_BENCH_MAX_SETTINGS)
		return bench_fail(c, RF_E_TOO_LARGE, -1, field, "%s has more than %d devices",
				  field, API_BENCH_MAX_SETTINGS);
	cJSON_ArrayForEach(v, o)
	{
		size_t kl = strlen(v->string);
		double b = v->valuedouble;
		if (kl == 0 || kl > 64 || !text_clean(v->string))
			return bench_fail(c, RF_E_INVALID_VALUE, -1, field,
					  "%s device names must be 1 to 64 printable bytes", field);
		if (!cJSON_IsNumber(v) || !isfinite(b) || floor(b) != b || b < 1 ||
		    b > API_BENCH_MAX_BYTES)
			return bench_fail(c, RF_E_INVALID_VALUE, -1, field,
					  "%s.%.64s must be a whole number of bytes from 1 to %.0f",
					  field, v->string, API_BENCH_MAX_BYTES);
	}
	return render_capped(c, o, -1, field, json);
}

/* FNV-1a 64 of s continued from h, with a separator so "ab","c" differs from "a","bc". */
static uint64_t fnv(uint64_t h, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return (h ^ 0x1f) * 1099511628211ULL;
}

/* Derives run->run_id from its content: what was measured, on what, with which settings, and
 * the time when the input said it (a time rigfit filled in would make every post new). Two
 * 64-bit FNV-1a hashes from different offsets: this is a key against accidental repeats, not
 * against an adversary, who can choose run_id anyway. */
static void derive_run_id(struct api_bench_run *r, bool with_time)
{
	char num[160];
	uint64_t h[2] = {14695981039346656037ULL, 0x84222325cbf29ce4ULL};

	snprintf(num, sizeof(num), "%lld|%lld|%.17g|%.17g", (long long)r->prompt_tokens,
		 (long long)r->generated_tokens, r->prefill_tokens_per_s, r->decode_tokens_per_s);
	for (int i = 0; i < 2; i++) {
		h[i] = fnv(h[i], r->hardware_fingerprint);
		h[i] = fnv(h[i], r->model);
		h[i] = fnv(h[i], r->precision);
		h[i] = fnv(h[i], r->backend);
		h[i] = fnv(h[i], r->runtime);
		h[i] = fnv(h[i], r->runtime_version);
		h[i] = fnv(h[i], r->source);
		h[i] = fnv(h[i], r->settings_json);
		h[i] = fnv(h[i], r->peak_memory_json);
		h[i] = fnv(h[i], num);
		h[i] = fnv(h[i], with_time ? r->measured_at : "");
	}
	snprintf(r->run_id, sizeof(r->run_id), "auto-%016llx%016llx", (unsigned long long)h[0],
		 (unsigned long long)h[1]);
}

/* Where a run's time came from, for bench_finish. */
struct bench_time {
	const char *field; /* the input field that gave it (for errors) */
	int64_t ms;        /* -1: not given, now is used */
};

/* Completes run r (element index of the input; -1 for a single object) and appends it to the
 * batch: query overrides, catalog id, fingerprint, time, run id, the checks every shape
 * shares. Takes r's owned members in every case. Returns 0 or an envelope. */
static int bench_finish(struct bench_ctx *c, struct api_bench_run *r, int index,
			struct bench_time t)
{
	const struct api_env *env = c->env;
	int64_t ms = t.ms;
	int rc = 0;

	if (c->q_model[0])
		hw_strlcpy(r->model, c->q_model, sizeof(r->model));
	if (c->q_precision[0])
		hw_strlcpy(r->precision, c->q_precision, sizeof(r->precision));
	if (c->q_hardware[0])
		hw_strlcpy(r->hardware_fingerprint, c->q_hardware, sizeof(r->hardware_fingerprint));
	{
		const char *id = api_bench_model_id(env, r->model);
		if (id != r->model)
			hw_strlcpy(r->model, id, sizeof(r->model));
	}
	if (!r->hardware_fingerprint[0]) {
		if (!env->snapshot) {
			rc = api_error(c->reply, RF_E_UNAVAILABLE, "hardware_fingerprint",
				       "no hardware scan has finished yet; give the run's "
				       "hardware_fingerprint (?hardware=)");
			goto fail;
		}
		hw_fingerprint(&env->snapshot->hw, r->hardware_fingerprint,
			       sizeof(r->hardware_fingerprint));
	}
	if (ms < 0)
		ms = env->now_ms;
	else if (env->now_ms > 0 && ms > env->now_ms + BENCH_FUTURE_SLACK_MS) {
		rc = bench_fail(c, RF_E_INVALID_VALUE, index, t.field,
				"%s is more than a day in the future", t.field);
		goto fail;
	}
	api_format_time_ms(ms, r->measured_at, sizeof(r->measured_at));
	{
		const struct {
			const char *name, *value;
		} texts[] = {{"model", r->model},
			     {"precision", r->precision},
			     {"backend", r->backend},
			     {"runtime", r->runtime},
			     {"runtime_version", r->runtime_version}};
		for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
			if (!text_clean(texts[i].value)) {
				rc = bench_fail(c, RF_E_INVALID_VALUE, index, texts[i].name,
						"%s must not contain control characters",
						texts[i].name);
				goto fail;
			}
	}
	if (r->prefill_tokens_per_s <= 0 && r->decode_tokens_per_s <= 0) {
		rc = bench_fail(c, RF_E_MISSING_FIELD, index, "decode_tokens_per_s",
				"a run needs prefill_tokens_per_s or decode_tokens_per_s");
		goto fail;
	}
	if (!r->run_id[0])
		derive_run_id(r, t.ms >= 0);
	c->out->runs[c->out->n++] = *r;
	return 0;
fail:
	free(r->settings_json);
	free(r->peak_memory_json);
	r->settings_json = r->peak_memory_json = NULL;
	return rc;
}

/* --- rigfit's own run object -------------------------------------------------------------- */

static const char *const bench_sources[] = {"manual", "llama-bench", "llama-server", NULL};

struct bench_native {
	struct api_bench_run run;
	char measured_at[64];
	int source;
	bool has_source, has_measured_at;
};

#define NATIVE_STR(name, member, req)                                                              \
	{                                                                                          \
		name, JM_STRING, offsetof(struct bench_native, run.member),                        \
			sizeof(((struct api_bench_run *)0)->member), 0, 0, req, 0, NULL            \
	}
#define NATIVE_NUM(name, kind, member, min, max)                                                   \
	{                                                                                          \
		name, kind, offsetof(struct bench_native, run.member), 0, min, max, false, 0, NULL \
	}

static const struct jm_field native_fields[] = {
	NATIVE_STR("run_id", run_id, false),
	NATIVE_STR("hardware_fingerprint", hardware_fingerprint, false),
	NATIVE_STR("model", model, true),
	NATIVE_STR("precision", precision, true),
	NATIVE_STR("backend", backend, true),
	NATIVE_STR("runtime", runtime, true),
	NATIVE_STR("runtime_version", runtime_version, false),
	{"source", JM_ENUM, offsetof(struct bench_native, source), 0, 0, 0, false,
	 offsetof(struct bench_native, has_source), bench_sources},
	{"settings", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	{"peak_memory_bytes", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	NATIVE_NUM("prompt_tokens", JM_INT, prompt_tokens, 0, (double)API_BENCH_MAX_TOKENS),
	NATIVE_NUM("generated_tokens", JM_INT, generated_tokens, 0, (double)API_BENCH_MAX_TOKENS),
	NATIVE_NUM("prefill_tokens_per_s", JM_DOUBLE, prefill_tokens_per_s, 1e-6,
		   API_BENCH_MAX_SPEED),
	NATIVE_NUM("decode_tokens_per_s", JM_DOUBLE, decode_tokens_per_s, 1e-6,
		   API_BENCH_MAX_SPEED),
	{"measured_at", JM_STRING, offsetof(struct bench_native, measured_at), 64, 0, 0, false,
	 offsetof(struct bench_native, has_measured_at), NULL},
};

/* Maps rigfit's run object o (owned by the caller; null optional fields are dropped from it,
 * so a run as GET returns it, less id and created_at, can be posted again). */
static int bench_native(struct bench_ctx *c, cJSON *o)
{
	static const char *const nullable[] = {"runtime_version",      "peak_memory_bytes",
					       "prefill_tokens_per_s", "decode_tokens_per_s",
					       "hardware_fingerprint", "run_id"};
	struct bench_native nat;
	struct bench_time t = {"measured_at", -1};
	const cJSON *v;
	int rc;

	memset(&nat, 0, sizeof(nat));
	for (size_t i = 0; i < sizeof(nullable) / sizeof(nullable[0]); i++)
		if (cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, nullable[i])))
			cJSON_DeleteItemFromObjectCaseSensitive(o, nullable[i]);
	rc = jm_map(o, native_fields, sizeof(native_fields) / sizeof(native_fields[0]), &nat,
		    c->reply);
	if (rc < 0)
		return rc;
	if (nat.run.run_id[0] && !id_clean(nat.run.run_id))
		return bench_fail(c, RF_E_INVALID_VALUE, -1, "run_id",
				  "run_id must be 1 to 128 of A-Z a-z 0-9 . _ : -");
	if (nat.run.hardware_fingerprint[0] && !id_clean(nat.run.hardware_fingerprint))
		return bench_fail(c, RF_E_INVALID_VALUE, -1, "hardware_fingerprint",
				  "hardware_fingerprint must be 1 to 128 of A-Z a-z 0-9 . _ : -");
	if (nat.has_measured_at && api_bench_time_parse(nat.measured_at, &t.ms) < 0)
		return bench_fail(c, RF_E_INVALID_VALUE, -1, "measured_at",
				  "measured_at must be an RFC 3339 time with an offset, e.g. "
				  "2025-04-24T11:58:50Z");
	hw_strlcpy(nat.run.source, bench_sources[nat.has_source ? nat.source : 0],
		   sizeof(nat.run.source));
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "settings")) &&
	    (rc = settings_map(c, v, -1, "settings", &nat.run.settings_json)) < 0)
		return rc;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "peak_memory_bytes")) &&
	    (rc = peak_map(c, v, &nat.run.peak_memory_json)) < 0) {
		free(nat.run.settings_json);
		return rc;
	}
	return bench_finish(c, &nat.run, -1, t);
}

/* --- llama-bench -o json ------------------------------------------------------------------- */

/* Reads the integer el.name (absent: *given false) in [min, max]. Returns 0 or an envelope. */
static int lb_int(struct bench_ctx *c, const cJSON *el, int index, const char *name, double min,
		  double max, int64_t *out, bool *given)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(el, name);
	double d;

	*given = v != NULL;
	if (!v)
		return 0;
	d = v->valuedouble;
	if (!cJSON_IsNumber(v) || !isfinite(d) || floor(d) != d || d < min || d > max)
		return bench_fail(c, RF_E_INVALID_VALUE, index, name,
				  "%s must be an integer from %.0f to %.0f", name, min, max);
	*out = (int64_t)d;
	return 0;
}

/* Reads the string el.name (absent: NULL) of at most max bytes without control characters.
 * Returns 0 or an envelope. */
static int lb_str(struct bench_ctx *c, const cJSON *el, int index, const char *name, size_t max,
		  const char **out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(el, name);

	*out = NULL;
	if (!v)
		return 0;
	if (!cJSON_IsString(v) || strlen(v->valuestring) > max || !text_clean(v->valuestring))
		return bench_fail(c, RF_E_INVALID_VALUE, index, name,
				  "%s must be a string of at most %zu printable bytes", name, max);
	*out = v->valuestring;
	return 0;
}

/* Writes the canonical name of quantization scheme name (case-insensitive) into out; returns
 * false when it is not one. */
static bool quant_name(const char *name, char *out, size_t len)
{
	int ft = rf_ftype_from_name(name);
	const char *canon = ft >= 0 ? rf_ftype_name(ft) : NULL;

	if (!canon)
		return false;
	hw_strlcpy(out, canon, len);
	return true;
}

/* Reads the quantization from llama.cpp's model description ("qwen2 7B Q4_K - Medium",
 * "llama 7B mostly Q4_0", "llama 8B IQ4_XS - 4.25 bpw"): the words after architecture and
 * size, " - Medium/Small/Large" as the _M/_S/_L suffix (Q2_K is described as "Q2_K -
 * Medium"). Returns false when it names no known scheme. */
static bool quant_from_model_type(const char *mt, char *out, size_t len)
{
	const char *p = strchr(mt, ' '), *dash;
	char base[32], cand[40];
	size_t k;

	if (!p || !(p = strchr(p + 1, ' ')))
		return false;
	p++;
	if (strncmp(p, "mostly ", 7) == 0)
		p += 7;
	else if (strncmp(p, "all ", 4) == 0)
		p += 4;
	k = strcspn(p, " ");
	if (k == 0 || k >= sizeof(base))
		return false;
	memcpy(base, p, k);
	base[k] = '\0';
	dash = strstr(p, " - ");
	snprintf(cand, sizeof(cand), "%s%s", base,
		 !dash                               ? "" :
		 strncmp(dash + 3, "Medium", 6) == 0 ? "_M" :
		 strncmp(dash + 3, "Small", 5) == 0  ? "_S" :
		 strncmp(dash + 3, "Large", 5) == 0  ? "_L" :
						       "");
	return quant_name(cand, out, len) || quant_name(base, out, len);
}

/* Turns a model file path into a model name: the base name without ".gguf", a split suffix
 * ("-00001-of-00003") and a trailing quantization ("-Q4_K_M", ".Q4_0"), which goes to quant
 * (left as is when there is none). */
static void model_from_filename(const char *path, char *name, size_t len, char *quant, size_t qlen)
{
	const char *base = strrchr(path, '/');
	char *cut;
	size_t n;

	base = base ? base + 1 : path;
	hw_strlcpy(name, base, len);
	n = strlen(name);
	if (n > 5 && strcmp(name + n - 5, ".gguf") == 0)
		name[n -= 5] = '\0';
	if (n > 15 && name[n - 15] == '-' && strncmp(name + n - 9, "-of-", 4) == 0 &&
	    digits(name + n - 14, 5) >= 0 && digits(name + n - 5, 5) >= 0)
		name[n -= 15] = '\0';
	cut = strrchr(name, '-');
	if (!cut || (strrchr(name, '.') && strrchr(name, '.') > cut))
		cut = strrchr(name, '.');
	if (cut && cut > name && quant_name(cut + 1, quant, qlen))
		*cut = '\0';
}

/* Writes llama.cpp's backend list ("CUDA", "Metal,BLAS", "ROCm") as rigfit names its
 * backends: the first one, lower case, HIP as rocm. */
static void backend_name(const char *backends, char *out, size_t len)
{
	size_t k = 0;

	for (const char *p = backends; *p && *p != ',' && k + 1 < len; p++) {
		char ch = *p;
		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		if (ch != ' ')
			out[k++] = ch;
	}
	out[k] = '\0';
	if (strcmp(out, "hip") == 0)
		hw_strlcpy(out, "rocm", len);
}

/* Sets r's backend to this host's (the output of a tool that does not say), or "unknown". */
static void host_backend(const struct bench_ctx *c, struct api_bench_run *r)
{
	const struct api_snapshot *snap = c->env->snapshot;

	hw_strlcpy(r->backend, snap && snap->hw.backend[0] ? snap->hw.backend : "unknown",
		   sizeof(r->backend));
}

/* The llama-bench fields that describe the configuration, copied into settings as they are. */
static const char *const lb_settings[] = {
	"n_batch",      "n_ubatch", "n_threads",     "n_gpu_layers", "n_cpu_moe",
	"type_k",       "type_v",   "flash_attn",    "split_mode",   "main_gpu",
	"tensor_split", "use_mmap", "no_kv_offload", "embeddings",   "n_depth",
};

/* Builds the settings object of llama-bench element el into *json. */
static int lb_settings_map(struct bench_ctx *c, const cJSON *el, int index, char **json)
{
	cJSON *o = cJSON_CreateObject();
	int rc;

	if (!o)
		return api_error(c->reply, RF_E_NOMEM, NULL, NULL);
	for (size_t i = 0; i < sizeof(lb_settings) / sizeof(lb_settings[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(el, lb_settings[i]);
		cJSON *copy;
		if (!v)
			continue;
		if (cJSON_IsArray(v) || !setting_ok(v, true)) {
			cJSON_Delete(o);
			return bench_fail(c, RF_E_INVALID_VALUE, index, lb_settings[i],
					  "%s must be a number, string or boolean", lb_settings[i]);
		}
		copy = cJSON_Duplicate(v, false);
		if (!copy || !cJSON_AddItemToObject(o, lb_settings[i], copy)) {
			cJSON_Delete(copy);
			cJSON_Delete(o);
			return api_error(c->reply, RF_E_NOMEM, NULL, NULL);
		}
	}
	rc = render_capped(c, o, index, "settings", json);
	cJSON_Delete(o);
	return rc;
}

/* Maps llama-bench result el (element index) into a run, or records why it is skipped.
 * Returns 0 or an envelope. */
static int bench_llama_bench(struct bench_ctx *c, const cJSON *el, int index)
{
	struct api_bench_run r;
	struct bench_time t = {"test_time", -1};
	const char *commit, *backends, *file, *mtype, *when;
	int64_t n_prompt = 0, n_gen = 0, build = 0;
	bool has_p, has_g, has_build;
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(el, "avg_ts");
	char quant[33] = "";
	int rc;

	memset(&r, 0, sizeof(r));
	if (!cJSON_IsObject(el))
		return bench_fail(c, RF_E_INVALID_VALUE, index, "avg_ts",
				  "element %d is not a llama-bench result object", index);
	if ((rc = lb_int(c, el, index, "n_prompt", 0, (double)API_BENCH_MAX_TOKENS, &n_prompt,
			 &has_p)) < 0 ||
	    (rc = lb_int(c, el, index, "n_gen", 0, (double)API_BENCH_MAX_TOKENS, &n_gen, &has_g)) <
		    0 ||
	    (rc = lb_int(c, el, index, "build_number", 0, 1e9, &build, &has_build)) < 0 ||
	    (rc = lb_str(c, el, index, "build_commit", 40, &commit)) < 0 ||
	    (rc = lb_str(c, el, index, "backends", 128, &backends)) < 0 ||
	    (rc = lb_str(c, el, index, "model_filename", 4096, &file)) < 0 ||
	    (rc = lb_str(c, el, index, "model_type", 128, &mtype)) < 0 ||
	    (rc = lb_str(c, el, index, "test_time", 64, &when)) < 0)
		return rc;
	if (!ts)
		return bench_fail(c, RF_E_MISSING_FIELD, index, "avg_ts",
				  "element %d has no avg_ts: not a llama-bench result", index);
	if (!cJSON_IsNumber(ts) || !isfinite(ts->valuedouble) || ts->valuedouble <= 0 ||
	    ts->valuedouble > API_BENCH_MAX_SPEED)
		return bench_fail(c, RF_E_INVALID_VALUE, index, "avg_ts",
				  "avg_ts must be a number above 0 and at most %.0f",
				  API_BENCH_MAX_SPEED);
	if (!has_p && !has_g)
		return bench_fail(c, RF_E_MISSING_FIELD, index, "n_prompt",
				  "a llama-bench result needs n_prompt and n_gen");
	if (n_prompt > 0 && n_gen > 0) {
		struct api_bench_skip *s = &c->out->skipped[c->out->n_skipped++];
		s->index = index;
		snprintf(s->reason, sizeof(s->reason),
			 "combined prompt and generation test (pg %lld,%lld) measures neither "
			 "prefill nor decode speed alone",
			 (long long)n_prompt, (long long)n_gen);
		return 0;
	}
	if (n_prompt == 0 && n_gen == 0)
		return bench_fail(c, RF_E_INVALID_VALUE, index, "n_prompt",
				  "n_prompt and n_gen are both 0: nothing was measured");
	if (when && api_bench_time_parse(when, &t.ms) < 0)
		return bench_fail(c, RF_E_INVALID_VALUE, index, "test_time",
				  "test_time must be an RFC 3339 time, e.g. 2025-04-24T11:58:50Z");
	if (!file && !mtype && !c->q_model[0])
		return bench_fail(c, RF_E_MISSING_FIELD, index, "model_filename",
				  "the result names no model (model_filename, model_type or "
				  "?model=)");
	if (file)
		model_from_filename(file, r.model, sizeof(r.model), quant, sizeof(quant));
	else if (mtype)
		hw_strlcpy(r.model, mtype, sizeof(r.model));
	if (!mtype || !quant_from_model_type(mtype, r.precision, sizeof(r.precision)))
		hw_strlcpy(r.precision, quant[0] ? quant : "unknown", sizeof(r.precision));
	if (backends && *backends)
		backend_name(backends, r.backend, sizeof(r.backend));
	else
		host_backend(c, &r);
	hw_strlcpy(r.runtime, "llama.cpp", sizeof(r.runtime));
	/* llama.cpp's own form, as llama-server's system_fingerprint writes it: b5163-8cf427ff. */
	if (has_build && commit)
		snprintf(r.runtime_version, sizeof(r.runtime_version), "b%lld-%s", (long long)build,
			 commit);
	else if (has_build)
		snprintf(r.runtime_version, sizeof(r.runtime_version), "b%lld", (long long)build);
	else if (commit)
		hw_strlcpy(r.runtime_version, commit, sizeof(r.runtime_version));
	hw_strlcpy(r.source, "llama-bench", sizeof(r.source));
	r.prompt_tokens = n_prompt;
	r.generated_tokens = n_gen;
	if (n_gen == 0)
		r.prefill_tokens_per_s = ts->valuedouble;
	else
		r.decode_tokens_per_s = ts->valuedouble;
	if ((rc = lb_settings_map(c, el, index, &r.settings_json)) < 0)
		return rc;
	return bench_finish(c, &r, index, t);
}

/* --- llama-server's timings ---------------------------------------------------------------- */

/* Reads timings.name as a speed: absent or null is 0 (not measured), else a number from 0 to
 * the cap. Returns 0 or an envelope. */
static int ls_speed(struct bench_ctx *c, const cJSON *tm, const char *name, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(tm, name);
	char field[64];

	*out = 0;
	if (!v || cJSON_IsNull(v))
		return 0;
	snprintf(field, sizeof(field), "timings.%s", name);
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
	    v->valuedouble > API_BENCH_MAX_SPEED)
		return bench_fail(c, RF_E_INVALID_VALUE, -1, field,
				  "%s must be a number from 0 to %.0f", field, API_BENCH_MAX_SPEED);
	*out = v->valuedouble;
	return 0;
}

/* Maps a llama-server response (an object with a "timings" object) into a run. */
static int bench_llama_server(struct bench_ctx *c, const cJSON *o)
{
	const cJSON *tm = cJSON_GetObjectItemCaseSensitive(o, "timings");
	const cJSON *created = cJSON_GetObjectItemCaseSensitive(o, "created");
	struct api_bench_run r;
	struct bench_time t = {"created", -1};
	const char *model = NULL, *version = NULL;
	int64_t pn = 0, gn = 0;
	bool given;
	double pps, gps;
	char quant[33] = "";
	int rc;

	memset(&r, 0, sizeof(r));
	if (!cJSON_IsObject(tm))
		return bench_fail(c, RF_E_INVALID_VALUE, -1, "timings",
				  "timings must be llama-server's timings object");
	if ((rc = lb_int(c, tm, -1, "prompt_n", 0, (double)API_BENCH_MAX_TOKENS, &pn, &given)) <
		    0 ||
	    (rc = lb_int(c, tm, -1, "predicted_n", 0, (double)API_BENCH_MAX_TOKENS, &gn, &given)) <
		    0 ||
	    (rc = ls_speed(c, tm, "prompt_per_second", &pps)) < 0 ||
	    (rc = ls_speed(c, tm, "predicted_per_second", &gps)) < 0 ||
	    (rc = lb_str(c, o, -1, "model", sizeof(r.model) - 1, &model)) < 0 ||
	    (rc = lb_str(c, o, -1, "system_fingerprint", sizeof(r.runtime_version) - 1, &version)) <
		    0)
		return rc;
	if (created) {
		double d = created->valuedouble;
		if (!cJSON_IsNumber(created) || !isfinite(d) || floor(d) != d || d < 0 ||
		    d > BENCH_MAX_MS / 1000)
			return bench_fail(c, RF_E_INVALID_VALUE, -1, "created",
					  "created must be Unix seconds");
		t.ms = (int64_t)d * 1000;
	}
	if (!c->q_model[0] && (!model || !*model))
		return bench_fail(c, RF_E_MISSING_FIELD, -1, "model",
				  "llama-server's timings need the model: give \"model\" in the "
				  "body or ?model=");
	if (model && *model)
		model_from_filename(model, r.model, sizeof(r.model), quant, sizeof(quant));
	hw_strlcpy(r.precision, quant[0] ? quant : "unknown", sizeof(r.precision));
	host_backend(c, &r);
	hw_strlcpy(r.runtime, "llama.cpp", sizeof(r.runtime));
	if (version)
		hw_strlcpy(r.runtime_version, version, sizeof(r.runtime_version));
	hw_strlcpy(r.source, "llama-server", sizeof(r.source));
	r.prompt_tokens = pn;
	r.generated_tokens = gn;
	r.prefill_tokens_per_s = pn > 0 ? pps : 0;
	r.decode_tokens_per_s = gn > 0 ? gps : 0;
	if (r.prefill_tokens_per_s <= 0 && r.decode_tokens_per_s <= 0)
		return bench_fail(c, RF_E_INVALID_VALUE, -1, "timings",
				  "the timings hold no measured speed (prompt_n and predicted_n "
				  "are 0, or their speeds are missing)");
	return bench_finish(c, &r, -1, t);
}

/* --- the dispatcher ------------------------------------------------------------------------ */

/* Reads the query's overrides into c. Returns 0 or an envelope. */
static int bench_query(struct bench_ctx *c, const char *query)
{
	struct {
		const char *name;
		char *buf;
		size_t len;
	} q[] = {{"model", c->q_model, sizeof(c->q_model)},
		 {"precision", c->q_precision, sizeof(c->q_precision)},
		 {"hardware", c->q_hardware, sizeof(c->q_hardware)}};

	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		int rc = api_query_get(query ? query : "", q[i].name, q[i].buf, q[i].len);
		if (rc < 0 || (rc == 1 && (!q[i].buf[0] || !text_clean(q[i].buf))))
			return bench_fail(c, RF_E_INVALID_VALUE, -1, q[i].name,
					  "query parameter %s must be 1 to %zu printable bytes",
					  q[i].name, q[i].len - 1);
	}
	if (c->q_hardware[0] && !id_clean(c->q_hardware))
		return bench_fail(
			c, RF_E_INVALID_VALUE, -1, "hardware",
			"hardware must be a fingerprint: 1 to 128 of A-Z a-z 0-9 . _ : -");
	return 0;
}

/* Allocates room for n runs and skips in c->out. */
static int bench_alloc(struct bench_ctx *c, int n)
{
	c->out->runs = calloc((size_t)n, sizeof(*c->out->runs));
	c->out->skipped = calloc((size_t)n, sizeof(*c->out->skipped));
	c->cap = n;
	if (!c->out->runs || !c->out->skipped)
		return api_error(c->reply, RF_E_NOMEM, NULL, NULL);
	return 0;
}

int api_bench_parse(const struct api_env *env, const struct api_request *req,
		    struct api_bench_batch *out, struct api_reply *reply)
{
	struct bench_ctx c;
	cJSON *root = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	c.env = env;
	c.reply = reply;
	c.out = out;
	if ((rc = bench_query(&c, req->query)) < 0)
		return rc;
	if ((rc = jm_parse_value(req, false, &root, reply)) < 0)
		return rc;
	if (cJSON_IsArray(root)) {
		int n = cJSON_GetArraySize(root), i = 0;
		const cJSON *el;
		out->format = "llama-bench";
		if (n == 0) {
			rc = api_error(reply, RF_E_INVALID_VALUE, NULL,
				       "the array holds no llama-bench result");
			goto out;
		}
		if (n > API_BENCH_MAX_RUNS) {
			rc = api_error(reply, RF_E_TOO_LARGE, NULL,
				       "at most %d runs may be recorded at once (got %d)",
				       API_BENCH_MAX_RUNS, n);
			goto out;
		}
		if ((rc = bench_alloc(&c, n)) < 0)
			goto out;
		cJSON_ArrayForEach(el, root)
		{
			if ((rc = bench_llama_bench(&c, el, i++)) < 0)
				goto out;
		}
		if (out->n == 0) {
			rc = api_error(reply, RF_E_INVALID_VALUE, NULL,
				       "no result in the array measures prefill or decode speed "
				       "alone (pg tests are skipped)");
			goto out;
		}
	} else if (cJSON_IsObject(root)) {
		if ((rc = bench_alloc(&c, 1)) < 0)
			goto out;
		if (cJSON_HasObjectItem(root, "timings")) {
			out->format = "llama-server";
			rc = bench_llama_server(&c, root);
		} else if (cJSON_HasObjectItem(root, "avg_ts")) {
			out->format = "llama-bench";
			rc = bench_llama_bench(&c, root, 0);
			if (rc == 0 && out->n == 0)
				rc = api_error(reply, RF_E_INVALID_VALUE, "n_gen", "%s",
					       out->skipped[0].reason);
		} else {
			out->format = "rigfit";
			rc = bench_native(&c, root);
		}
	} else {
		rc = api_error(reply, RF_E_INVALID_VALUE, NULL,
			       "the body must be a run object, llama-bench's JSON array or "
			       "llama-server's response with timings");
	}
out:
	cJSON_Delete(root);
	if (rc < 0)
		api_bench_batch_free(out);
	return rc;
}
