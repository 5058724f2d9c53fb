/*
 * The request body of POST /api/benchmarks (and `rigfit bench record`) turned into runs of
 * the benchmark history. Three shapes are accepted as the tools write them, told apart by
 * their top level alone:
 *
 *   - a JSON array: what `llama-bench -o json` prints, one element per test (a single such
 *     element as an object, as `-o jsonl` prints one per line, is accepted too: it is the
 *     object that has "avg_ts");
 *   - an object with a "timings" object: llama-server's /completion (or chat completion)
 *     response, or just {"model": ..., "timings": {...}};
 *   - any other object: rigfit's own run object, mapped strictly (unknown fields are 422).
 *
 * Each llama-bench test becomes its own run: a pp test (n_prompt > 0, n_gen == 0) gives the
 * prefill speed, a tg test (n_gen > 0, n_prompt == 0) the decode speed. A pp and a tg test of
 * one configuration are NOT merged into one run: each has its own token count, time and
 * spread, the history may hold one speed per run, and with -p/-n/-d lists there is no honest
 * way to say which pp belongs with which tg. Combined pg tests (both > 0) measure neither
 * speed alone and are skipped with a reason.
 *
 * The foreign formats are read leniently (their field lists change between llama.cpp
 * releases, so unknown fields are ignored) but every field rigfit reads is type- and
 * range-checked and named in the error, as "[3].avg_ts".
 */
#ifndef RIGFIT_API_BENCH_INPUT_H
#define RIGFIT_API_BENCH_INPUT_H

#include <stdint.h>

#include "api/api.h"

/* The most runs (array elements) one request may record. */
#define API_BENCH_MAX_RUNS 256
/* Caps on what a run may carry. */
#define API_BENCH_MAX_TOKENS 100000000LL       /* prompt and generated tokens */
#define API_BENCH_MAX_SPEED 1e7                /* tokens per second */
#define API_BENCH_MAX_SETTINGS 64              /* keys in settings, devices in peak memory */
#define API_BENCH_MAX_JSON 8192                /* bytes of settings / peak memory JSON */
#define API_BENCH_MAX_BYTES 1125899906842624.0 /* 1 PiB of peak memory per device */

/* An input element that was not recorded, and why. */
struct api_bench_skip {
	int index;
	char reason[160];
};

/* What one request body holds. */
struct api_bench_batch {
	const char *format; /* "rigfit", "llama-bench" or "llama-server" (static) */
	struct api_bench_run *runs;
	int n;
	struct api_bench_skip *skipped;
	int n_skipped;
};

/* Frees what api_bench_parse put in b and zeroes it. NULL is a no-op. */
void api_bench_batch_free(struct api_bench_batch *b);

/* Maps req's body to runs. The query may give model=, precision= and hardware= (a
 * fingerprint), which override what the body says (llama-bench and llama-server output carry
 * no fingerprint and, for the server, often no usable model name). Model names that the
 * catalog (env->cat.models) knows, by id or alias, are stored as the catalog id. The hardware
 * fingerprint, when neither the query nor the body gives one, is the snapshot's. A run without
 * run_id gets one derived from its content ("auto-" and 32 hex digits), so that posting the
 * same output twice records it once.
 *
 * Returns 0 with out filled (free with api_bench_batch_free; at least one run), or a negative
 * rf_err with the envelope in reply: 400 invalid_json, 422 (unknown_field, missing_field,
 * invalid_value, too_large for more than API_BENCH_MAX_RUNS elements) naming the field, 503
 * unavailable when the fingerprint is needed and no scan has finished yet. */
int api_bench_parse(const struct api_env *env, const struct api_request *req,
		    struct api_bench_batch *out /* OUT */, struct api_reply *reply);

/* Parses an RFC 3339 timestamp ("2025-04-24T11:58:50Z", "...T13:58:50.123456+02:00"; a time
 * without an offset is refused, since it would mean different instants on different hosts)
 * into Unix milliseconds (digits beyond milliseconds are truncated). Years 1970 to 9999.
 * Returns 0 or RF_E_INVALID_VALUE. */
int api_bench_time_parse(const char *s, int64_t *ms /* OUT */);

/* Returns the catalog id for name when the catalog knows it (id or alias), else name. */
const char *api_bench_model_id(const struct api_env *env, const char *name);

#endif
