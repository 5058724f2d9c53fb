/*
 * The benchmark history routes (see benchmarks.h). A run is rendered the same way everywhere:
 * the stored columns, with null for what was not measured or not given, settings and
 * peak_memory_bytes as the objects they were stored as.
 *
 * The list cursor is opaque to clients; it is "<measured_at in Unix ms>_<id>" of the last run
 * of the page, the keyset (measured_at, id) the store orders by, so pages never repeat or skip
 * a run while runs are added or deleted meanwhile.
 */
#include "api/benchmarks.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/bench_input.h"
#include "api/json_print.h"
#include "api/hardware_json.h"
#include "core/err.h"
#include "core/numparse.h"

/* Answers 503 when the store (or the member needed) is missing; returns 1 when it is there. */
static int bench_store_ok(const struct api_env *env, bool member, struct api_reply *out)
{
	if (env->store.available && member)
		return 1;
	return api_error(out, RF_E_STORE_UNAVAILABLE, NULL,
			 "the benchmark history needs the database, which is unavailable");
}

/* Adds a string, or null when it is empty. Returns false when out of memory. */
static bool add_text(cJSON *o, const char *name, const char *v)
{
	return (v && *v ? cJSON_AddStringToObject(o, name, v) : cJSON_AddNullToObject(o, name)) !=
	       NULL;
}

/* Adds stored JSON text (parsed), or null. Returns false when out of memory. */
static bool add_json(cJSON *o, const char *name, const char *json, bool empty_object)
{
	cJSON *v = json ? cJSON_Parse(json) : NULL;

	if (!v && empty_object)
		v = cJSON_CreateObject();
	if (!v)
		return cJSON_AddNullToObject(o, name) != NULL;
	return cJSON_AddItemToObject(o, name, v) ? true : (cJSON_Delete(v), false);
}

/* Adds a speed, or null when it was not measured. */
static bool add_speed(cJSON *o, const char *name, double v)
{
	return (v > 0 ? cJSON_AddNumberToObject(o, name, v) : cJSON_AddNullToObject(o, name)) !=
	       NULL;
}

/* Returns a new cJSON object for run r, or NULL when out of memory. */
static cJSON *bench_run_json(const struct api_bench_run *r)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddNumberToObject(o, "id", (double)r->id) ||
	    !add_text(o, "run_id", r->run_id) ||
	    !add_text(o, "hardware_fingerprint", r->hardware_fingerprint) ||
	    !add_text(o, "model", r->model) || !add_text(o, "precision", r->precision) ||
	    !add_text(o, "backend", r->backend) || !add_text(o, "runtime", r->runtime) ||
	    !add_text(o, "runtime_version", r->runtime_version) ||
	    !add_json(o, "settings", r->settings_json, true) ||
	    !cJSON_AddNumberToObject(o, "prompt_tokens", (double)r->prompt_tokens) ||
	    !cJSON_AddNumberToObject(o, "generated_tokens", (double)r->generated_tokens) ||
	    !add_speed(o, "prefill_tokens_per_s", r->prefill_tokens_per_s) ||
	    !add_speed(o, "decode_tokens_per_s", r->decode_tokens_per_s) ||
	    !add_json(o, "peak_memory_bytes", r->peak_memory_json, false) ||
	    !add_text(o, "source", r->source) || !add_text(o, "measured_at", r->measured_at) ||
	    !add_text(o, "created_at", r->created_at)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

int api_benchmarks_post(const struct api_env *env, const struct api_request *req,
			struct api_reply *out)
{
	struct api_bench_batch b;
	cJSON *o = NULL, *runs, *skipped;
	int rc, created = 0, existing = 0;

	if ((rc = api_bench_parse(env, req, &b, out)) < 0)
		return rc;
	if ((rc = bench_store_ok(env, env->store.bench_insert != NULL, out)) <= 0)
		goto done;
	o = cJSON_CreateObject();
	runs = o ? cJSON_CreateArray() : NULL;
	skipped = runs ? cJSON_CreateArray() : NULL;
	if (!skipped || !cJSON_AddStringToObject(o, "format", b.format)) {
		cJSON_Delete(runs);
		cJSON_Delete(skipped);
		goto oom;
	}
	for (int i = 0; i < b.n; i++) {
		struct api_bench_run *stored = NULL;
		bool existed = false;
		int64_t id = 0;
		cJSON *item;

		/* Each run is its own transaction: a failure part-way leaves the earlier runs
		 * stored, and posting the same body again records only what is missing. */
		rc = env->store.bench_insert(env->store.ctx, &b.runs[i], &id, &existed);
		if (rc == 0 && env->store.bench_get)
			rc = env->store.bench_get(env->store.ctx, id, &stored);
		if (rc < 0) {
			cJSON_Delete(runs);
			cJSON_Delete(skipped);
			api_error(out, rc, NULL,
				  rc == RF_E_INVALID_VALUE ? "the store refused run %d" :
							     "run %d could not be stored",
				  i);
			goto done;
		}
		b.runs[i].id = id;
		item = bench_run_json(stored ? stored : &b.runs[i]);
		api_bench_runs_free(stored, 1);
		if (!item || !cJSON_AddItemToArray(runs, item) ||
		    !cJSON_AddBoolToObject(item, "existed", existed)) {
			cJSON_Delete(runs);
			cJSON_Delete(skipped);
			goto oom;
		}
		if (existed)
			existing++;
		else
			created++;
	}
	for (int i = 0; i < b.n_skipped; i++) {
		cJSON *s = cJSON_CreateObject();
		if (!s || !cJSON_AddItemToArray(skipped, s) ||
		    !cJSON_AddNumberToObject(s, "index", b.skipped[i].index) ||
		    !cJSON_AddStringToObject(s, "reason", b.skipped[i].reason)) {
			cJSON_Delete(runs);
			cJSON_Delete(skipped);
			goto oom;
		}
	}
	if (!cJSON_AddNumberToObject(o, "created", created) ||
	    !cJSON_AddNumberToObject(o, "existing", existing) ||
	    !cJSON_AddItemToObject(o, "runs", runs)) {
		cJSON_Delete(runs);
		cJSON_Delete(skipped);
		goto oom;
	}
	if (!cJSON_AddItemToObject(o, "skipped", skipped)) {
		cJSON_Delete(skipped);
		goto oom;
	}
	rc = api_reply_cjson(out, created > 0 ? 201 : 200, o);
	o = NULL;
	goto done;
oom:
	rc = api_error(out, RF_E_NOMEM, NULL, NULL);
done:
	cJSON_Delete(o);
	api_bench_batch_free(&b);
	return rc < 0 ? rc : 0;
}

/* Reads the cursor "<ms>_<id>" into f. Returns 0 or RF_E_INVALID_VALUE. */
static int cursor_parse(const char *s, struct api_bench_filter *f)
{
	const char *us = strchr(s, '_');
	uint64_t ms, id;

	if (!us || rf_parse_u64(s, (size_t)(us - s), 253402300799999ULL, &ms) < 0 ||
	    rf_parse_u64_str(us + 1, INT64_MAX, &id) < 0 || id == 0)
		return RF_E_INVALID_VALUE;
	api_format_time_ms((int64_t)ms, f->before_measured_at, sizeof(f->before_measured_at));
	f->before_id = (int64_t)id;
	return 0;
}

int api_benchmarks_list(const struct api_env *env, const struct api_request *req,
			struct api_reply *out)
{
	struct api_bench_filter f;
	struct api_bench_run *runs = NULL;
	uint64_t limit = API_BENCH_PAGE_DEFAULT;
	char buf[128];
	int n = 0, rc, page;
	cJSON *o, *arr;

	memset(&f, 0, sizeof(f));
	if ((rc = api_query_uint(req, out, "limit", 1, API_BENCH_PAGE_MAX, &limit)) < 0)
		return rc;
	rc = api_query_get(req->query, "model", f.model, sizeof(f.model));
	if (rc < 0 || (rc == 1 && !f.model[0]))
		return api_error(out, RF_E_INVALID_VALUE, "model", "model must be 1 to %zu bytes",
				 sizeof(f.model) - 1);
	if (rc == 1) {
		/* The catalog id when the name is an alias; the id points into the catalog, never
		 * into f.model, unless it is f.model itself. */
		const char *id = api_bench_model_id(env, f.model);
		if (id != f.model)
			snprintf(f.model, sizeof(f.model), "%s", id);
	}
	rc = api_query_get(req->query, "hardware", f.hardware_fingerprint,
			   sizeof(f.hardware_fingerprint));
	if (rc < 0 || (rc == 1 && !f.hardware_fingerprint[0]))
		return api_error(out, RF_E_INVALID_VALUE, "hardware",
				 "hardware must be a fingerprint of 1 to %d bytes",
				 API_BENCH_ID_LEN);
	rc = api_query_get(req->query, "since", buf, sizeof(buf));
	if (rc == 1) {
		int64_t ms;
		if (api_bench_time_parse(buf, &ms) < 0)
			return api_error(
				out, RF_E_INVALID_VALUE, "since",
				"since must be an RFC 3339 time, e.g. 2025-04-24T00:00:00Z");
		api_format_time_ms(ms, f.since, sizeof(f.since));
	}
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, "since", "since is too long");
	rc = api_query_get(req->query, "cursor", buf, sizeof(buf));
	if (rc < 0 || (rc == 1 && cursor_parse(buf, &f) < 0))
		return api_error(out, RF_E_INVALID_VALUE, "cursor",
				 "cursor must be a next_cursor this route returned");
	if ((rc = bench_store_ok(env, env->store.bench_list != NULL, out)) <= 0)
		return rc;
	/* One more than the page tells whether another page exists. */
	page = (int)limit;
	f.limit = page + 1;
	rc = env->store.bench_list(env->store.ctx, &f, &runs, &n);
	if (rc < 0)
		return api_error(out, rc, NULL, NULL);

	o = cJSON_CreateObject();
	arr = o ? cJSON_AddArrayToObject(o, "runs") : NULL;
	if (!arr)
		goto oom;
	for (int i = 0; i < n && i < page; i++) {
		cJSON *item = bench_run_json(&runs[i]);
		if (!item || !cJSON_AddItemToArray(arr, item)) {
			cJSON_Delete(item);
			goto oom;
		}
	}
	if (n > page) {
		int64_t ms = 0;
		char cursor[64];
		api_bench_time_parse(runs[page - 1].measured_at, &ms);
		snprintf(cursor, sizeof(cursor), "%lld_%lld", (long long)ms,
			 (long long)runs[page - 1].id);
		if (!cJSON_AddStringToObject(o, "next_cursor", cursor))
			goto oom;
	} else if (!cJSON_AddNullToObject(o, "next_cursor")) {
		goto oom;
	}
	api_bench_runs_free(runs, n);
	return api_reply_cjson(out, 200, o);
oom:
	cJSON_Delete(o);
	api_bench_runs_free(runs, n);
	return api_error(out, RF_E_NOMEM, NULL, NULL);
}

/* Reads the {id} of the path into *id. Returns 0 or a 422 envelope. */
static int bench_path_id(const struct api_request *req, struct api_reply *out, int64_t *id)
{
	uint64_t v;

	if (!req->path_id || rf_parse_u64_str(req->path_id, INT64_MAX, &v) < 0 || v == 0)
		return api_error(out, RF_E_INVALID_VALUE, "id",
				 "the id must be a positive integer");
	*id = (int64_t)v;
	return 0;
}

int api_benchmarks_get(const struct api_env *env, const struct api_request *req,
		       struct api_reply *out)
{
	struct api_bench_run *run = NULL;
	int64_t id = 0;
	int rc;

	if ((rc = bench_path_id(req, out, &id)) < 0)
		return rc;
	if ((rc = bench_store_ok(env, env->store.bench_get != NULL, out)) <= 0)
		return rc;
	rc = env->store.bench_get(env->store.ctx, id, &run);
	if (rc == RF_E_NOT_FOUND)
		return api_error(out, rc, "id", "no benchmark run with id %lld", (long long)id);
	if (rc < 0)
		return api_error(out, rc, NULL, NULL);
	rc = api_reply_cjson(out, 200, bench_run_json(run));
	api_bench_runs_free(run, 1);
	return rc;
}

int api_benchmarks_delete(const struct api_env *env, const struct api_request *req,
			  struct api_reply *out)
{
	int64_t id = 0;
	int rc;

	if ((rc = bench_path_id(req, out, &id)) < 0)
		return rc;
	if ((rc = bench_store_ok(env, env->store.bench_delete != NULL, out)) <= 0)
		return rc;
	rc = env->store.bench_delete(env->store.ctx, id);
	if (rc == RF_E_NOT_FOUND)
		return api_error(out, rc, "id", "no benchmark run with id %lld", (long long)id);
	if (rc < 0)
		return api_error(out, rc, NULL, NULL);
	api_reply_reset(out);
	out->status = 204;
	out->borrowed_body = "";
	return 0;
}
