/*
 * Allocation-failure torture (the curl/SQLite idea): every route of the route table and every
 * parser that allocates is run once counting its allocations (K), then once for each N in
 * 1..K with the Nth allocation failing (tests/fault/alloc_fault.h). Each run must leave a
 * complete answer: a route either the same reply as without the failure (it recovered) or an
 * error envelope (503 out_of_memory), a parser either the same result or RF_E_NOMEM. Never a
 * crash, never a reply with a part silently missing, and never a leak: the suite runs under
 * ASan's leak checker (make test) and valgrind (make valgrind), which fail it on one.
 *
 * A request of up to 1000 allocations is tortured at every N. Longer ones (POST /api/recommend
 * and /api/finetune/detect estimate every candidate model: ~2000-3000 allocations with the
 * six-model catalog below, ~20000 with the shipped one) at every N up to 200 and then at 48
 * more points spread to the end (next_n): they finish the request after a failure (the reply
 * is then replaced by a 503), so each run costs a whole request, ~30-60 ms under ASan. Under
 * valgrind (RIGFIT_VALGRIND=1), where each run is ~30 times slower: every N up to 100, else up
 * to 20 and 8 more points. RIGFIT_TORTURE_VERBOSE=1 prints each request's count;
 * RIGFIT_TORTURE_ROUTE=/api/est tortures only the paths that contain it.
 * A route that joins the table without a request here is still tortured with a default one
 * (GET, or POST {}), which exercises at least its request checks.
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/json_alloc.h"
#include "api/model_memo.h"
#include "api/hardware_json.h"
#include "api/metrics.h"
#include "api/model_json.h"
#include "core/err.h"
#include "core/fit/gguf.h"
#include "core/hw/hw_parse_topology.h"
#include "server/profiles/profiles.h"
#include "tests/api/profiles_fixture.h"
#include "tests/fault/alloc_fault.h"
#include "tests/test.h"

/* A run of up to torture_full allocations is tortured at every N; a longer one at every N
 * up to torture_every and then at about torture_points more spread to the end. */
static size_t torture_full = 1000;
static size_t torture_every = 200;
static size_t torture_points = 48;

static bool under_valgrind(void)
{
	const char *v = getenv("RIGFIT_VALGRIND");
	return v && *v && strcmp(v, "0") != 0;
}

/* The Ns to fail for a run of k allocations, after n. The stride is odd, so that it does not
 * keep hitting the same allocation of a loop with an even period. */
static size_t next_n(size_t n, size_t k)
{
	size_t stride;

	if (k <= torture_full || n < torture_every || n >= k)
		return n + 1;
	stride = ((k - torture_every) / torture_points) | 1;
	return n + stride < k ? n + stride : k;
}

/* ---- the environment the routes see --------------------------------------------------- */

static struct device_table devices;
static struct model_catalog *models;
/* The routes see a catalog of a few models: recommend and finetune/detect estimate every
 * candidate, and with the 61 shipped models one run would take ~20000 allocations. These
 * cover a dense, a large, a mixture-of-experts and a tiny model, and the ids the requests
 * name. */
static const char *const catalog_ids[] = {
	"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-70B", "Qwen/Qwen2.5-7B",
	"Qwen/Qwen2.5-72B",        "Qwen/Qwen3-30B-A3B",       "HuggingFaceTB/SmolLM2-135M",
};
static struct model_catalog *few_models;
static struct api_tier_table *tiers;
static struct api_snapshot snapshot;
static struct api_metrics *metrics;
static char *openapi_text;
static size_t openapi_len;
static unsigned char *tiny_gguf;
static size_t tiny_gguf_len;

/* A store with three recorded scans: each call hands out malloc'd copies, as the real one. */
static int fake_scan_list(void *ctx, int64_t before_id, int limit, struct api_scan_row **rows,
			  int *n)
{
	int count = limit < 3 ? limit : 3;
	struct api_scan_row *r = calloc((size_t)count, sizeof(*r));

	(void)ctx;
	(void)before_id;
	if (!r)
		return RF_E_NOMEM;
	for (int i = 0; i < count; i++) {
		r[i].id = 30 - i;
		r[i].scanned_at_ms = 1700000000000 - i * 60000;
		r[i].scan_duration_ms = 12.5;
		r[i].hardware_json = strdup(snapshot.json);
		if (!r[i].hardware_json) {
			api_scan_rows_free(r, count);
			return RF_E_NOMEM;
		}
	}
	*rows = r;
	*n = count;
	return 0;
}

/* The benchmark history: two recorded runs of llama-3.1-8b on CUDA, whatever the filter
 * (so estimates consult them too), handed out as malloc'd copies, as the real store does. */
static int fake_bench_runs(int count, struct api_bench_run **runs)
{
	struct api_bench_run *r = calloc((size_t)count, sizeof(*r));

	if (!r)
		return RF_E_NOMEM;
	for (int i = 0; i < count; i++) {
		r[i].id = 7 - i;
		snprintf(r[i].run_id, sizeof(r[i].run_id), "run-%d", i);
		snprintf(r[i].model, sizeof(r[i].model), "llama-3.1-8b");
		snprintf(r[i].precision, sizeof(r[i].precision), "Q4_K_M");
		snprintf(r[i].backend, sizeof(r[i].backend), "cuda");
		snprintf(r[i].runtime, sizeof(r[i].runtime), "llama.cpp");
		snprintf(r[i].source, sizeof(r[i].source), "manual");
		snprintf(r[i].measured_at, sizeof(r[i].measured_at), "%s",
			 i ? "2026-01-02T00:00:00.000Z" : "2026-01-01T00:00:00.000Z");
		snprintf(r[i].created_at, sizeof(r[i].created_at), "2026-01-09T00:00:00.000Z");
		r[i].generated_tokens = 128;
		r[i].decode_tokens_per_s = 100.0 + i;
		r[i].settings_json = strdup("{\"n_gpu_layers\":99}");
		if (!r[i].settings_json) {
			api_bench_runs_free(r, count);
			return RF_E_NOMEM;
		}
	}
	*runs = r;
	return 0;
}

static int fake_bench_list(void *ctx, const struct api_bench_filter *f, struct api_bench_run **runs,
			   int *n)
{
	int rc = fake_bench_runs(2, runs);

	(void)ctx;
	(void)f;
	if (rc == 0)
		*n = 2;
	return rc;
}

static int fake_bench_get(void *ctx, int64_t id, struct api_bench_run **run)
{
	(void)ctx;
	(void)id;
	return fake_bench_runs(1, run);
}

static int fake_bench_insert(void *ctx, const struct api_bench_run *run, int64_t *id, bool *existed)
{
	(void)ctx;
	(void)run;
	*id = 7;
	*existed = false;
	return 0;
}

/* Model files: every path reads as the tiny GGUF of tests/core/fit/test_gguf.c. */
static int fake_read_model(void *ctx, const char *path, char **buf, size_t *len,
			   uint64_t *file_size, char *msg, size_t msglen)
{
	char *copy = malloc(tiny_gguf_len);

	(void)ctx;
	(void)path;
	if (!copy) {
		snprintf(msg, msglen, "out of memory");
		return RF_E_NOMEM;
	}
	memcpy(copy, tiny_gguf, tiny_gguf_len);
	*buf = copy;
	*len = tiny_gguf_len;
	*file_size = tiny_gguf_len;
	return 0;
}

static struct api_env env_of(void)
{
	struct api_env env = {
		.version = "torture",
		.uptime_s = 42,
		.now_ms = 1700000000000,
		.snapshot = &snapshot,
		.openapi = openapi_text,
		.openapi_len = openapi_len,
		.metrics = metrics,
		.store = {.available = true,
			  .scan_list = fake_scan_list,
			  .bench_insert = fake_bench_insert,
			  .bench_list = fake_bench_list,
			  .bench_get = fake_bench_get},
		.scan_interval_s = 60,
		.cat.devices = &devices,
		.cat.models = few_models,
		.cat.tiers = tiers,
		.cat.quality = t_quality(),
		.io.read_model = fake_read_model,
	};
	return env;
}

/* The shipped models.json with only the entries of catalog_ids. */
static struct model_catalog *catalog_of_few(void)
{
	cJSON *doc = t_profiles_json("profiles/models.json");
	cJSON *list = cJSON_GetObjectItemCaseSensitive(doc, "models");
	struct model_catalog *c = NULL;
	char err[512];

	for (cJSON *m = list ? list->child : NULL, *next; m; m = next) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
		bool keep = false;
		next = m->next;
		for (size_t i = 0; i < sizeof(catalog_ids) / sizeof(catalog_ids[0]); i++)
			keep = keep ||
			       (cJSON_IsString(id) && strcmp(id->valuestring, catalog_ids[i]) == 0);
		if (!keep)
			cJSON_Delete(cJSON_DetachItemViaPointer(list, m));
	}
	ck_assert_int_eq(cJSON_GetArraySize(list), sizeof(catalog_ids) / sizeof(catalog_ids[0]));
	ck_assert_msg(model_catalog_from_json(doc, &c, err, sizeof(err)) == 0, "%s", err);
	cJSON_Delete(doc);
	return c;
}

static void setup(void)
{
	char *root = t_path(t_src_dir(), "tests/fixtures/machines/amd-instinct-mi100-4gpu");
	char *spec = t_path(t_src_dir(), "openapi.yaml");
	struct hw_snapshot *hw = t_scan(root);

	if (under_valgrind()) {
		torture_full = 100;
		torture_every = 20;
		torture_points = 8;
	}
	t_profiles_load(&devices, &models, &tiers);
	(void)t_quality(); /* loaded here, not under fault injection */
	few_models = catalog_of_few();
	memset(&snapshot, 0, sizeof(snapshot));
	snapshot.hw = *hw;
	snapshot.seq = 1;
	snapshot.hw.scanned_at_ms = 1700000000000 - 5000;
	snapshot.json = api_hardware_render(&snapshot.hw, &snapshot.json_len);
	ck_assert_ptr_nonnull(snapshot.json);
	metrics = api_metrics_new();
	ck_assert_ptr_nonnull(metrics);
	api_metrics_observe(metrics, "/api/estimate", API_POST, 200, 1.5);
	openapi_text = t_read_file(spec, &openapi_len);
	ck_assert_ptr_nonnull(openapi_text);
	tiny_gguf = t_gguf_write_tiny(&tiny_gguf_len);
	free(hw);
	free(root);
	free(spec);
}

static void teardown(void)
{
	af_disarm();
	t_profiles_free(&devices, &models, &tiers);
	model_catalog_free(few_models);
	free(snapshot.json);
	snapshot.json = NULL;
	api_metrics_free(metrics);
	free(openapi_text);
	free(tiny_gguf);
}

/* ---- the requests ---------------------------------------------------------------------- */

struct torture_req {
	enum api_method method;
	const char *path;
	const char *query;
	const char *body;
};

#define HW_4090 "\"hardware_profile\":\"rtx-4090\""

static const struct torture_req requests[] = {
	{API_GET, "/healthz", "", NULL},
	{API_GET, "/openapi.yaml", "", NULL},
	{API_GET, "/metrics", "", NULL},
	{API_GET, "/api/hardware", "", NULL},
	{API_POST, "/api/hardware/rescan", "", "{\"max_age_s\":60}"},
	{API_GET, "/api/hardware/history", "limit=3", NULL},
	{API_POST, "/api/estimate", "",
	 "{\"model\":\"llama-3.1-8b\",\"quant\":\"Q4_K_M\",\"n_ctx\":8192," HW_4090 "}"},
	{API_POST, "/api/estimate", "",
	 "{\"model\":\"qwen2.5-72b\",\"n_ctx\":\"max\",\"flash_attn\":true,\"hardware\":{\"gpus\":"
	 "[{\"name\":\"RTX 4090\",\"count\":2}],\"memory\":{\"total_bytes\":68719476736}}}"},
	{API_POST, "/api/estimate", "",
	 "{\"model\":\"llama-3.1-8b\",\"mode\":\"qlora\"," HW_4090 "}"},
	{API_POST, "/api/estimate", "", "{\"model\":{\"gguf\":\"/models/tiny.gguf\"}," HW_4090 "}"},
	{API_POST, "/api/estimate", "", "{\"model\":\"llama-3.1-8b\"}"},
	{API_POST, "/api/finetune/detect", "", "{\"task\":\"text-generation\"," HW_4090 "}"},
	{API_POST, "/api/recommend", "", "{\"use_case\":\"chat\"," HW_4090 "}"},
	{API_POST, "/api/recommend", "", "{\"mode\":\"qlora\"," HW_4090 "}"},
	{API_POST, "/api/recommend", "",
	 "{\"for\":\"hardware\",\"model\":\"llama-3.1-8b\",\"limit\":2}"},
	{API_POST, "/api/validate", "",
	 "{\"backend\":\"cuda\",\"model\":{\"id\":\"Qwen/Qwen2.5-7B-Instruct\"},"
	 "\"settings\":{\"n_gpu_layers\":99,\"n_threads\":8,\"n_batch\":2048,\"n_ubatch\":512,"
	 "\"n_ctx\":8192,\"n_parallel\":1,\"tensor_split\":[1],\"flash_attn\":true,"
	 "\"cache_type_k\":\"f16\",\"cache_type_v\":\"f16\"},"
	 "\"metadata\":{\"hardware_profile\":\"rtx-4090\",\"use_case\":\"general\","
	 "\"precision\":\"Q4_K_M\"},\"hardware_profile\":\"NVIDIA GeForce RTX 4090\"}"},
	{API_POST, "/api/config", "",
	 "{\"model\":\"llama-3.1-8b\",\"hardware_profile\":\"rtx-3060-12gb\"}"},
	{API_POST, "/api/benchmarks", "",
	 "{\"run_id\":\"r1\",\"model\":\"llama-3.1-8b\",\"precision\":\"Q4_K_M\","
	 "\"backend\":\"cuda\",\"runtime\":\"llama.cpp\",\"generated_tokens\":128,"
	 "\"decode_tokens_per_s\":101.5,\"settings\":{\"n_ctx\":4096},"
	 "\"peak_memory_bytes\":{\"cuda0\":6000000000}}"},
	{API_POST, "/api/benchmarks", "",
	 "[{\"build_commit\":\"8cf427ff\",\"build_number\":5163,\"backends\":\"CUDA\","
	 "\"model_filename\":\"models/Meta-Llama-3.1-8B-Q4_K_M.gguf\","
	 "\"model_type\":\"llama 8B Q4_K - Medium\",\"n_batch\":2048,\"n_ubatch\":512,"
	 "\"n_threads\":8,\"n_gpu_layers\":99,\"n_prompt\":512,\"n_gen\":0,"
	 "\"test_time\":\"2023-11-01T11:57:09Z\",\"avg_ts\":5000.5}]"},
	{API_GET, "/api/benchmarks", "limit=2", NULL},
};

/* ---- checking one reply ---------------------------------------------------------------- */

struct saved_reply {
	int status;
	char *body;
	size_t len;
};

static const char *body_of(const struct api_reply *r)
{
	return r->body ? r->body : r->borrowed_body;
}

/* The problems found so far, one line each, reported together at the end of a test: one
 * run shows every route that misbehaves, not only the first. */
static char report[8192];
static int n_problems;

static void problem(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void problem(const char *fmt, ...)
{
	size_t used = strlen(report);
	va_list ap;

	n_problems++;
	if (used + 2 >= sizeof(report))
		return;
	va_start(ap, fmt);
	vsnprintf(report + used, sizeof(report) - used - 1, fmt, ap);
	va_end(ap);
	used = strlen(report);
	report[used] = '\n';
	report[used + 1] = '\0';
}

/* Returns whether r is a complete error envelope with this status and code. */
static bool is_envelope(const struct api_reply *r, int status, const char *code)
{
	cJSON *j = cJSON_ParseWithLength(body_of(r), r->len);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
	bool ok = r->status == status && cJSON_IsString(c) && strcmp(c->valuestring, code) == 0 &&
		  cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "message")) &&
		  r->content_type && strcmp(r->content_type, "application/json") == 0;

	cJSON_Delete(j);
	return ok;
}

/* Checks the reply to the Nth allocation failing: the baseline again, or a 503 out_of_memory
 * envelope. Returns false (and notes the problem) otherwise. */
static bool check_faulted(const struct saved_reply *base, const struct api_reply *r,
			  const char *what, size_t n)
{
	if (r->status == base->status && r->len == base->len && body_of(r) &&
	    memcmp(body_of(r), base->body, r->len) == 0)
		return true;
	if (body_of(r) && is_envelope(r, 503, "out_of_memory"))
		return true;
	problem("%s, allocation %zu failing: %d %.300s", what, n, r->status,
		body_of(r) ? body_of(r) : "(no body)");
	return false;
}

static void dispatch(const struct api_env *env, const struct torture_req *t, struct api_reply *r)
{
	/* Every run starts cold, so that the memo's computations are tortured too and each run
	 * makes the same allocations. */
	api_memo_clear();
	api_estimate_spare_free();
	api_json_arena_free();
	struct api_request req = {.method = t->method,
				  .path = t->path,
				  .query = t->query,
				  .body = t->body,
				  .body_len = t->body ? strlen(t->body) : 0};

	memset(r, 0, sizeof(*r));
	api_dispatch(env, &req, r);
}

/* Tortures one request; returns the number of allocations it makes. */
static size_t torture_request(const struct api_env *env, const struct torture_req *t,
			      bool need_success)
{
	const char *only = getenv("RIGFIT_TORTURE_ROUTE");
	char what[160];
	struct api_reply r;
	struct saved_reply base;
	size_t k;

	if (only && *only && !strstr(t->path, only))
		return 0;
	snprintf(what, sizeof(what), "%s %s%s%s %.40s", api_method_name(t->method), t->path,
		 *t->query ? "?" : "", t->query, t->body ? t->body : "");
	af_arm(0);
	dispatch(env, t, &r);
	k = af_disarm();
	ck_assert_msg(r.status != 0 && body_of(&r), "%s: no reply", what);
	if (need_success)
		ck_assert_msg(r.status == 200 || r.status == 201, "%s: baseline %d: %.*s", what,
			      r.status, (int)r.len, body_of(&r));
	if (getenv("RIGFIT_TORTURE_VERBOSE"))
		fprintf(stderr, "torture: %s: %zu allocations\n", what, k);
	base.status = r.status;
	base.len = r.len;
	base.body = malloc(r.len + 1);
	ck_assert_ptr_nonnull(base.body);
	memcpy(base.body, body_of(&r), r.len);
	api_reply_reset(&r);

	for (size_t n = 1; n <= k; n = next_n(n, k)) {
		af_arm(n);
		dispatch(env, t, &r);
		af_disarm();
		if (!af_fired())
			problem("%s: allocation %zu of %zu never came", what, n, k);
		else if (!check_faulted(&base, &r, what, n))
			n = k; /* one problem per request is enough */
		api_reply_reset(&r);
	}
	free(base.body);
	return k;
}

START_TEST(every_route_survives_each_failed_allocation)
{
	struct api_env env = env_of();
	size_t n_routes;
	const struct api_route *routes = api_routes(&n_routes);

	for (size_t i = 0; i < n_routes; i++) {
		bool listed = false;
		for (size_t q = 0; q < sizeof(requests) / sizeof(requests[0]); q++) {
			if (requests[q].method != routes[i].method ||
			    strcmp(requests[q].path, routes[i].path) != 0)
				continue;
			listed = true;
			torture_request(&env, &requests[q], true);
		}
		if (!listed) {
			/* A route without a request here: a default one, which may be refused. */
			struct torture_req d = {routes[i].method, routes[i].path, "",
						routes[i].method == API_POST ? "{}" : NULL};
			torture_request(&env, &d, false);
		}
	}
	ck_assert_msg(n_problems == 0, "%d problems:\n%s", n_problems, report);
}
END_TEST

/* The error helper's own allocations: an envelope comes back even when building it fails. */
START_TEST(error_envelope_survives_each_failed_allocation)
{
	struct api_reply r = {0};
	size_t k;

	af_arm(0);
	api_error(&r, RF_E_INVALID_VALUE, "n_ctx", "n_ctx must be %d+", 1);
	k = af_disarm();
	ck_assert_uint_gt(k, 0);
	ck_assert_int_eq(r.status, 422);
	api_reply_reset(&r);
	for (size_t n = 1; n <= k; n++) {
		af_arm(n);
		api_error(&r, RF_E_INVALID_VALUE, "n_ctx", "n_ctx must be %d+", 1);
		af_disarm();
		ck_assert(af_fired());
		ck_assert_msg(is_envelope(&r, 503, "out_of_memory"), "allocation %zu: %d %.*s", n,
			      r.status, (int)r.len, body_of(&r));
		api_reply_reset(&r);
	}
}
END_TEST

/* ---- parsers ----------------------------------------------------------------------------- */

/* One parse: returns 0 or a negative rf_err, and on success a summary of what it read. It
 * frees everything it made. */
typedef int (*parse_fn)(char *summary, size_t len);

static void torture_parse(const char *what, parse_fn fn)
{
	char base[256], got[256];
	size_t k;
	int rc;

	af_arm(0);
	rc = fn(base, sizeof(base));
	k = af_disarm();
	ck_assert_msg(rc == 0, "%s: baseline %d", what, rc);
	ck_assert_msg(k > 0, "%s allocates nothing", what);
	for (size_t n = 1; n <= k; n = next_n(n, k)) {
		got[0] = '\0';
		af_arm(n);
		rc = fn(got, sizeof(got));
		af_disarm();
		if (!af_fired())
			problem("%s: allocation %zu of %zu never came", what, n, k);
		else if (rc == 0 && strcmp(got, base) != 0)
			problem("%s, allocation %zu failing: %s, not %s", what, n, got, base);
		else if (rc < 0 && rc != RF_E_NOMEM)
			problem("%s, allocation %zu failing: %s", what, n, rf_err_code(rc));
	}
}

static int parse_gguf(char *summary, size_t len)
{
	struct gguf_file *f = NULL;
	struct model_arch a;
	char field[64];
	int rc = gguf_parse(tiny_gguf, tiny_gguf_len, 0, &f, NULL, 0);

	if (rc < 0)
		return rc;
	rc = gguf_to_arch(f, &a, field, sizeof(field));
	if (rc == 0)
		snprintf(summary, len, "%s kv %llu tensors %llu layers %lld", a.model_type,
			 (unsigned long long)f->n_kv, (unsigned long long)f->n_tensors,
			 (long long)a.n_layers);
	gguf_free(f);
	return rc;
}

static struct rf_profiles *profiles;

static int parse_catalogs(char *summary, size_t len)
{
	struct rf_catalogs *c = NULL;
	char err[512];
	int rc = rf_catalogs_from_profiles(profiles, &c, err, sizeof(err));

	if (rc < 0)
		return rc;
	snprintf(summary, len, "devices %d models %zu", c->table.n, c->models->n);
	rf_catalogs_unref(c);
	return 0;
}

static int parse_topology(char *summary, size_t len)
{
	static struct hw_topology t;
	struct hw_topology_summary s;
	int rc;

	hw_topology_init(&t);
	for (unsigned c = 0; c < 16; c++) {
		hw_cpuset_add(&t.online, c);
		t.cpu[c].core = (int32_t)(c % 8);
		t.cpu[c].first_sibling = (int32_t)(c % 8);
		t.cpu[c].package = 0;
	}
	t.have_online = true;
	rc = hw_topology_summarize(&t, &s);
	if (rc == 0)
		snprintf(summary, len, "logical %d physical %d sockets %d", s.logical, s.physical,
			 s.sockets);
	return rc;
}

START_TEST(parsers_survive_each_failed_allocation)
{
	char err[512];
	char *dir = t_path(t_src_dir(), "profiles");

	ck_assert_msg(rf_profiles_load(dir, &profiles, err, sizeof(err)) == 0, "%s", err);
	torture_parse("GGUF header and architecture", parse_gguf);
	torture_parse("device and model catalogs", parse_catalogs);
	torture_parse("CPU topology", parse_topology);
	ck_assert_msg(n_problems == 0, "%d problems:\n%s", n_problems, report);
	rf_profiles_free(profiles);
	profiles = NULL;
	free(dir);
}
END_TEST

Suite *alloc_torture_suite(void)
{
	Suite *s = suite_create("alloc_torture");
	TCase *tc = tcase_create("alloc_torture");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, every_route_survives_each_failed_allocation);
	tcase_add_test(tc, error_envelope_survives_each_failed_allocation);
	tcase_add_test(tc, parsers_survive_each_failed_allocation);
	suite_add_tcase(s, tc);
	return s;
}
