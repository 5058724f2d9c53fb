/*
 * The benchmark history routes: POST /api/benchmarks records runs (any shape api/bench_input.h
 * accepts), GET /api/benchmarks lists them newest first one page at a time, GET and DELETE
 * /api/benchmarks/{id} read and remove one. All need the store (503 store_unavailable
 * without it). The CLI's `rigfit bench record` and `rigfit bench list` call the same
 * handlers.
 */
#ifndef RIGFIT_API_BENCHMARKS_H
#define RIGFIT_API_BENCHMARKS_H

#include "api/api.h"

/* The default and largest page of GET /api/benchmarks. */
#define API_BENCH_PAGE_DEFAULT 50
#define API_BENCH_PAGE_MAX 500

/* POST /api/benchmarks: 201 {"format","created","existing","runs":[run+"existed"],
 * "skipped":[{"index","reason"}]} when at least one run is new, 200 when every run was
 * already stored (the stored runs are returned either way). */
int api_benchmarks_post(const struct api_env *env, const struct api_request *req,
			struct api_reply *out);

/* GET /api/benchmarks?model=&hardware=&since=&limit=&cursor=: 200 {"runs":[...],
 * "next_cursor": string|null}; a bad since, limit or cursor is 422 naming it. */
int api_benchmarks_list(const struct api_env *env, const struct api_request *req,
			struct api_reply *out);

/* GET /api/benchmarks/{id}: 200 with the run, 404, or 422 for an id that is not a positive
 * integer. */
int api_benchmarks_get(const struct api_env *env, const struct api_request *req,
		       struct api_reply *out);

/* DELETE /api/benchmarks/{id}: 204 without a body, 404, or 422 for a bad id. */
int api_benchmarks_delete(const struct api_env *env, const struct api_request *req,
			  struct api_reply *out);

#endif
