/*
 * Estimates that learn from recorded benchmarks, through POST /api/estimate
 * (api_dispatch) with a fake store: no runs leave the roofline; runs of another
 * model on the same hardware calibrate it; runs of the same model and precision
 * replace it; the number moves toward what was measured, and one outlier does
 * not swing it. A store that fails or is down leaves the roofline, never a 5xx;
 * runs of other hardware, another backend or unknown models count for nothing.
 * With a history cache, the runs are listed once per store version and fingerprint, and the
 * answers are those of an estimate that lists them every time.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/history_cache.h"
#include "api/hardware_json.h"
#include "core/hw/classify.h"
#include "core/hw/device.h"
#include "core/err.h"
#include "core/hw/hw.h"
#include "core/hw/hw_profile.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "core/plan/plan_infer.h"
#include "api/estimate.h"
#include "api/runtime_config.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define MAX_RUNS 64
#define LLAMA "meta-llama/Llama-3.1-8B"
#define QWEN "Qwen/Qwen2.5-7B"
#define ON_3090 "\"hardware_profile\":\"NVIDIA GeForce RTX 3090\""

/* A store that keeps runs in memory and answers bench_list like the real one:
 * filtered by hardware fingerprint and model, at most limit rows. */
struct fake_store {
	struct api_bench_run runs[MAX_RUNS];
	int n;
	int fail;         /* bench_list returns this error when non-zero */
	int calls;        /* bench_list calls */
	int limit;        /* the last limit asked for */
	char hw[130];     /* the last fingerprint asked for */
	uint64_t version; /* what bench_version answers */
	int version_fail; /* bench_version returns this error when non-zero */
};

static struct device_table devices;
static struct model_catalog *models;
static struct fake_store store;

static int fake_bench_list(void *ctx, const struct api_bench_filter *f, struct api_bench_run **out,
			   int *n)
{
	struct fake_store *s = ctx;
	struct api_bench_run *rows;
	int k = 0;

	s->calls++;
	s->limit = f->limit;
	hw_strlcpy(s->hw, f->hardware_fingerprint, sizeof(s->hw));
	if (s->fail)
		return s->fail;
	rows = calloc(MAX_RUNS, sizeof(*rows));
	ck_assert_ptr_nonnull(rows);
	for (int i = s->n - 1; i >= 0 && k < f->limit; i--) {
		if (f->hardware_fingerprint[0] &&
		    strcmp(f->hardware_fingerprint, s->runs[i].hardware_fingerprint) != 0)
			continue;
		if (f->model[0] && strcmp(f->model, s->runs[i].model) != 0)
			continue;
		rows[k++] = s->runs[i]; /* no owned members in these runs */
	}
	*out = rows;
	*n = k;
	return 0;
}

static int fake_bench_version(void *ctx, uint64_t *version)
{
	struct fake_store *s = ctx;

	if (s->version_fail)
		return s->version_fail;
	*version = s->version;
	return 0;
}

static void setup(void)
{
	t_profiles_load(&devices, &models, NULL);
	memset(&store, 0, sizeof(store));
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, NULL);
}

static struct api_env env_with_store(bool available)
{
	struct api_env env = {.version = "test", .cat.devices = &devices, .cat.models = models};

	env.store.ctx = &store;
	env.store.available = available;
	env.store.bench_list = fake_bench_list;
	return env;
}

/* POSTs body to /api/estimate; returns the parsed 200 answer (fails the test
 * otherwise). */
static cJSON *estimate_with(const struct api_env *env, const char *body)
{
	struct api_request req = {.method = API_POST,
				  .path = "/api/estimate",
				  .query = "",
				  .body = body,
				  .body_len = strlen(body)};
	struct api_reply r = {0};
	cJSON *j;

	ck_assert_ptr_nonnull(api_dispatch(env, &req, &r));
	ck_assert_msg(r.status == 200, "%d: %.*s", r.status, (int)r.len, r.body);
	j = cJSON_ParseWithLength(r.body, r.len);
	ck_assert_ptr_nonnull(j);
	api_reply_reset(&r);
	return j;
}

static cJSON *estimate(const char *model, const char *quant)
{
	struct api_env env = env_with_store(true);
	char body[256];

	snprintf(body, sizeof(body), "{\"model\":\"%s\",\"quant\":\"%s\"," ON_3090 "}", model,
		 quant);
	return estimate_with(&env, body);
}

static const cJSON *speed_of(const cJSON *j)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(j, "speed");

	ck_assert_ptr_nonnull(s);
	return s;
}

static double speed_num(const cJSON *j, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(speed_of(j), name);

	ck_assert_msg(cJSON_IsNumber(v), "speed.%s is not a number", name);
	return v->valuedouble;
}

static const char *speed_str(const cJSON *j, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(speed_of(j), name);

	ck_assert_msg(cJSON_IsString(v), "speed.%s is not a string", name);
	return v->valuestring;
}

static const char *fingerprint_of(const cJSON *j)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "hardware"), "fingerprint");

	ck_assert(cJSON_IsString(v));
	ck_assert_int_eq((int)strlen(v->valuestring), 19);
	ck_assert(strncmp(v->valuestring, "hw-", 3) == 0);
	return v->valuestring;
}

/* Checks speed.basis, decode_basis and prefill_basis (NULL: not checked). */
static void assert_bases(const cJSON *j, const char *basis, const char *decode, const char *prefill)
{
	ck_assert_str_eq(speed_str(j, "basis"), basis);
	if (decode)
		ck_assert_str_eq(speed_str(j, "decode_basis"), decode);
	if (prefill)
		ck_assert_str_eq(speed_str(j, "prefill_basis"), prefill);
}

/* Whether one of j's assumptions contains a, and b when b is not NULL. */
static bool assumes(const cJSON *j, const char *a, const char *b)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "assumptions"))
	{
		if (cJSON_IsString(it) && strstr(it->valuestring, a) &&
		    (!b || strstr(it->valuestring, b)))
			return true;
	}
	return false;
}

static void record(const char *fp, const char *model, const char *precision, const char *backend,
		   double decode, double prefill)
{
	struct api_bench_run *r;

	ck_assert_int_lt(store.n, MAX_RUNS);
	r = &store.runs[store.n++];
	memset(r, 0, sizeof(*r));
	r->id = store.n;
	snprintf(r->run_id, sizeof(r->run_id), "run-%d", store.n);
	hw_strlcpy(r->hardware_fingerprint, fp, sizeof(r->hardware_fingerprint));
	hw_strlcpy(r->model, model, sizeof(r->model));
	hw_strlcpy(r->precision, precision, sizeof(r->precision));
	hw_strlcpy(r->backend, backend, sizeof(r->backend));
	hw_strlcpy(r->source, "llama-bench", sizeof(r->source));
	r->decode_tokens_per_s = decode;
	r->prefill_tokens_per_s = prefill;
}

START_TEST(history_moves_the_estimate_from_roofline_to_calibrated_to_measured)
{
	cJSON *j = estimate(LLAMA, "Q4_K_M"), *qwen = estimate(QWEN, "Q4_K_M");
	char fp[32];
	double roof_dec, roof_pre, qwen_dec, qwen_pre, target, calibrated, measured, roof_partial;
	const char *partial = "{\"model\":\"" LLAMA "\",\"quant\":\"Q4_K_M\","
			      "\"n_gpu_layers\":16," ON_3090 "}";

	/* No runs: the roofline, and the store was asked once for this hardware's
   * newest runs. */
	snprintf(fp, sizeof(fp), "%s", fingerprint_of(j));
	assert_bases(j, "roofline", "roofline", "roofline");
	ck_assert_int_eq((int)speed_num(j, "runs"), 0);
	ck_assert_int_eq(store.calls, 2);
	ck_assert_str_eq(store.hw, fp);
	ck_assert(store.limit > 0 && store.limit <= 1000);
	roof_dec = speed_num(j, "decode_tokens_per_s");
	roof_pre = speed_num(j, "prefill_tokens_per_s");
	qwen_dec = speed_num(qwen, "decode_tokens_per_s");
	qwen_pre = speed_num(qwen, "prefill_tokens_per_s");
	cJSON_Delete(j);
	cJSON_Delete(qwen);

	/* This host runs another model at about 70% of its roofline. */
	record(fp, QWEN, "Q4_K_M", "CUDA", 0.69 * qwen_dec, 0.69 * qwen_pre);
	record(fp, "qwen2.5-7b-instruct", "Q4_K_M", "CUDA", 0.70 * qwen_dec, 0.70 * qwen_pre);
	record(fp, QWEN, "q4_k_m", "cuda", 0.71 * qwen_dec, 0.71 * qwen_pre);
	j = estimate(LLAMA, "Q4_K_M");
	assert_bases(j, "calibrated", "calibrated", "calibrated");
	ck_assert_int_eq((int)speed_num(j, "runs"), 3);
	calibrated = speed_num(j, "decode_tokens_per_s");
	ck_assert_msg(fabs(calibrated / roof_dec - 0.70) < 0.01, "%.1f vs roofline %.1f",
		      calibrated, roof_dec);
	ck_assert(fabs(speed_num(j, "prefill_tokens_per_s") / roof_pre - 0.70) < 0.01);
	ck_assert(speed_num(j, "decode_tokens_per_s_at_full_ctx") < calibrated);
	ck_assert(assumes(j, "decode speed: calibrated", fp));
	cJSON_Delete(j);

	/* The host's efficiency carries to other settings: the runs are predicted as
   * they were run, not with this request's partial offload. */
	{
		struct api_env env = env_with_store(true);
		int n = store.n;
		store.n = 0;
		j = estimate_with(&env, partial);
		roof_partial = speed_num(j, "decode_tokens_per_s");
		cJSON_Delete(j);
		store.n = n;
		j = estimate_with(&env, partial);
		ck_assert(roof_partial < 0.8 * roof_dec);
		ck_assert_str_eq(speed_str(j, "decode_basis"), "calibrated");
		ck_assert_msg(fabs(speed_num(j, "decode_tokens_per_s") / roof_partial - 0.70) <
				      0.01,
			      "%.1f vs %.1f", speed_num(j, "decode_tokens_per_s"), roof_partial);
		cJSON_Delete(j);
	}

	/* Runs of this very model and precision (decode only, named by an alias)
   * replace it. */
	target = 0.55 * roof_dec;
	for (int i = -2; i <= 2; i++)
		record(fp, "llama-3.1-8b", "Q4_K_M", "CUDA", target * (1 + 0.01 * i), -1);
	j = estimate(LLAMA, "Q4_K_M");
	assert_bases(j, "measured", "measured", "calibrated");
	ck_assert_int_eq((int)speed_num(j, "runs"), 8);
	measured = speed_num(j, "decode_tokens_per_s");
	ck_assert_msg(fabs(measured - target) < 0.01 * target, "%.1f, want %.1f", measured, target);
	/* Each step is closer to what the host measured. */
	ck_assert(fabs(roof_dec - target) > fabs(calibrated - target));
	ck_assert(fabs(calibrated - target) > fabs(measured - target));
	ck_assert(assumes(j, "decode speed: measured", "5 recorded runs"));
	cJSON_Delete(j);

	/* The runs ran llama-bench's setup: a partial offload of the same model and precision
	 * gets the share of its own roofline they reached of theirs, not their speed. */
	{
		struct api_env env = env_with_store(true);
		j = estimate_with(&env, partial);
		ck_assert_str_eq(speed_str(j, "decode_basis"), "measured");
		ck_assert_msg(fabs(speed_num(j, "decode_tokens_per_s") / roof_partial -
				   measured / roof_dec) < 1e-6,
			      "%.2f on a roofline of %.2f; %.2f measured on %.2f",
			      speed_num(j, "decode_tokens_per_s"), roof_partial, measured,
			      roof_dec);
		ck_assert(speed_num(j, "decode_tokens_per_s") < 0.8 * measured);
		ck_assert(assumes(j, "decode speed: the runs ran llama-bench's defaults", NULL));
		cJSON_Delete(j);
	}

	/* One wild run does not swing it. */
	record(fp, LLAMA, "Q4_K_M", "CUDA", 10 * target, -1);
	j = estimate(LLAMA, "Q4_K_M");
	ck_assert_str_eq(speed_str(j, "decode_basis"), "measured");
	ck_assert_msg(fabs(speed_num(j, "decode_tokens_per_s") - measured) < 0.01 * measured,
		      "%.1f after the outlier, %.1f before", speed_num(j, "decode_tokens_per_s"),
		      measured);
	ck_assert(assumes(j, "6 recorded runs", "1 outlier left out"));
	cJSON_Delete(j);

	/* Another precision of the same model is calibrated, not measured. */
	j = estimate(LLAMA, "Q8_0");
	ck_assert_str_eq(speed_str(j, "decode_basis"), "calibrated");
	cJSON_Delete(j);
}
END_TEST

START_TEST(runs_of_other_hardware_backends_or_models_count_for_nothing)
{
	cJSON *j = estimate(LLAMA, "Q4_K_M"), *other;
	struct api_env env = env_with_store(true);
	char fp[32];
	double roof;

	snprintf(fp, sizeof(fp), "%s", fingerprint_of(j));
	roof = speed_num(j, "decode_tokens_per_s");
	cJSON_Delete(j);
	record(fp, LLAMA, "Q4_K_M", "Vulkan", 0.5 * roof, -1);              /* another backend */
	record(fp, "my-private-finetune", "Q4_K_M", "CUDA", 20, 100);       /* not in the catalog */
	record(fp, LLAMA, "Q4_K_SOMETHING", "CUDA", 0.5 * roof, -1);        /* not a GGUF type */
	record("hw-0000000000000000", LLAMA, "Q4_K_M", "", 0.5 * roof, -1); /* other hardware */
	j = estimate(LLAMA, "Q4_K_M");
	ck_assert_str_eq(speed_str(j, "basis"), "roofline");
	ck_assert_double_eq_tol(speed_num(j, "decode_tokens_per_s"), roof, 1e-9);
	ck_assert_int_eq((int)speed_num(j, "runs"), 0);
	ck_assert(assumes(j, "3 recorded runs", "left out"));
	cJSON_Delete(j);

	/* The same runs say nothing about a 4090 described in the request. */
	other = estimate_with(&env, "{\"model\":\"" LLAMA "\",\"quant\":\"Q4_K_M\","
				    "\"hardware\":{\"gpus\":[{\"name\":\"NVIDIA GeForce RTX "
				    "4090\"}]}}");
	ck_assert_str_eq(speed_str(other, "basis"), "roofline");
	ck_assert_str_ne(fingerprint_of(other), fp);
	cJSON_Delete(other);
}
END_TEST

START_TEST(a_failing_or_missing_store_leaves_the_roofline)
{
	cJSON *j = estimate(LLAMA, "Q4_K_M");
	struct api_env down = env_with_store(false), none = env_with_store(true);
	char fp[32];
	double roof;

	snprintf(fp, sizeof(fp), "%s", fingerprint_of(j));
	roof = speed_num(j, "decode_tokens_per_s");
	cJSON_Delete(j);
	for (int i = 0; i < 3; i++)
		record(fp, LLAMA, "Q4_K_M", "CUDA", 0.5 * roof, -1);

	store.fail = RF_E_IO;
	j = estimate(LLAMA, "Q4_K_M");
	ck_assert_str_eq(speed_str(j, "basis"), "roofline");
	ck_assert_double_eq_tol(speed_num(j, "decode_tokens_per_s"), roof, 1e-9);
	ck_assert(assumes(j, "benchmark history could not be read", NULL));
	cJSON_Delete(j);
	store.fail = 0;

	store.calls = 0;
	j = estimate_with(&down, "{\"model\":\"" LLAMA "\",\"quant\":\"Q4_K_M\"," ON_3090 "}");
	ck_assert_str_eq(speed_str(j, "basis"), "roofline");
	ck_assert_int_eq(store.calls, 0);
	cJSON_Delete(j);

	none.store.bench_list = NULL;
	j = estimate_with(&none, "{\"model\":\"" LLAMA "\",\"quant\":\"Q4_K_M\"," ON_3090 "}");
	ck_assert_str_eq(speed_str(j, "basis"), "roofline");
	cJSON_Delete(j);

	/* With the store back, the same runs are measured again. */
	j = estimate(LLAMA, "Q4_K_M");
	ck_assert_str_eq(speed_str(j, "basis"), "measured");
	ck_assert_double_eq_tol(speed_num(j, "decode_tokens_per_s"), 0.5 * roof, 1e-6 * roof);
	cJSON_Delete(j);
}
END_TEST

/* This host, as a scan leaves it: one RTX 3090 and 64 GiB of RAM. */
static struct api_snapshot *host_3090(void)
{
	struct api_snapshot *snap = calloc(1, sizeof(*snap));
	struct hw_gpu *g;

	ck_assert_ptr_nonnull(snap);
	hw_snapshot_init(&snap->hw);
	hw_strlcpy(snap->hw.platform, "linux", sizeof(snap->hw.platform));
	hw_strlcpy(snap->hw.cpu.model, "AMD Ryzen 9 5950X 16-Core Processor",
		   sizeof(snap->hw.cpu.model));
	snap->hw.cpu.physical_cores = 16;
	snap->hw.memory.total_bytes = snap->hw.memory.available_bytes = 64LL << 30;
	snap->hw.n_gpus = 1;
	g = &snap->hw.gpus[0];
	memset(g, 0, sizeof(*g));
	hw_strlcpy(g->vendor, "nvidia", sizeof(g->vendor));
	hw_strlcpy(g->name, "NVIDIA GeForce RTX 3090", sizeof(g->name));
	g->memory_total_bytes = g->memory_free_bytes = 24LL << 30;
	g->memory_used_bytes = g->memory_gtt_bytes = HW_UNKNOWN;
	g->memory_bus_width_bits = g->max_memory_clock_mhz = HW_UNKNOWN;
	hw_classify(&snap->hw);
	hw_apply_device_profiles(&snap->hw, &devices);
	snap->json = api_hardware_render(&snap->hw, &snap->json_len);
	ck_assert_ptr_nonnull(snap->json);
	return snap;
}

START_TEST(runs_recorded_under_this_hosts_fingerprint_refine_its_estimates)
{
	struct api_snapshot *snap = host_3090();
	struct api_env env = env_with_store(true);
	struct api_request req = {.method = API_GET, .path = "/api/hardware", .query = ""};
	const char *body = "{\"model\":\"llama-3.1-8b\",\"quant\":\"Q4_K_M\"}";
	struct api_reply r = {0};
	cJSON *hw, *j;
	char fp[32];

	env.snapshot = snap;
	/* The fingerprint GET /api/hardware shows is the one benchmarks are recorded under. */
	ck_assert_ptr_nonnull(api_dispatch(&env, &req, &r));
	ck_assert_int_eq(r.status, 200);
	hw = cJSON_ParseWithLength(r.body ? r.body : r.borrowed_body, r.len);
	ck_assert_ptr_nonnull(hw);
	api_reply_reset(&r);
	ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(hw, "fingerprint")));
	snprintf(fp, sizeof(fp), "%s",
		 cJSON_GetObjectItemCaseSensitive(hw, "fingerprint")->valuestring);
	cJSON_Delete(hw);

	j = estimate_with(&env, body);
	ck_assert_str_eq(fingerprint_of(j), fp);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(
				 cJSON_GetObjectItemCaseSensitive(j, "hardware"), "source")
				 ->valuestring,
			 "snapshot");
	assert_bases(j, "roofline", NULL, NULL);
	cJSON_Delete(j);

	record(fp, LLAMA, "Q4_K_M", "CUDA", 77, 2500);
	j = estimate_with(&env, body);
	assert_bases(j, "measured", "measured", "measured");
	ck_assert_double_eq_tol(speed_num(j, "decode_tokens_per_s"), 77, 1e-9);
	ck_assert_double_eq_tol(speed_num(j, "prefill_tokens_per_s"), 2500, 1e-9);
	ck_assert_int_eq((int)speed_num(j, "runs"), 1);
	cJSON_Delete(j);
	free(snap->json);
	free(snap);
}
END_TEST

/* Estimates body with env and returns its decode speed and the number of runs used. */
static double decode_of(const struct api_env *env, const char *body, int *runs)
{
	cJSON *j = estimate_with(env, body);
	double d = speed_num(j, "decode_tokens_per_s");

	*runs = (int)speed_num(j, "runs");
	cJSON_Delete(j);
	return d;
}

START_TEST(the_history_is_listed_once_per_store_version)
{
	static const char *const gpus[] = {"NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000",
					   "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3",
					   "NVIDIA GeForce RTX 4080"};
	struct api_env plain = env_with_store(true), cached = env_with_store(true);
	const char *body = "{\"model\":\"" LLAMA "\",\"quant\":\"Q4_K_M\"," ON_3090 "}";
	char fp[32], b[256];
	double roof, want, got;
	int runs, calls;
	cJSON *j;

	cached.history_cache = api_history_cache_new(NULL, NULL, NULL);
	ck_assert_ptr_nonnull(cached.history_cache);
	cached.store.bench_version = fake_bench_version;
	store.version = 1;
	j = estimate_with(&cached, body);
	snprintf(fp, sizeof(fp), "%s", fingerprint_of(j));
	roof = speed_num(j, "decode_tokens_per_s");
	cJSON_Delete(j);
	ck_assert_int_eq(store.calls, 1);

	/* Unchanged version: no second listing, the same answer. */
	ck_assert_double_eq_tol(decode_of(&cached, body, &runs), roof, 1e-12);
	ck_assert_int_eq(store.calls, 1);

	/* A run stored: the version changes, the run is read and counts, and the answer is the
	 * one an estimate without the cache gives. */
	record(fp, LLAMA, "Q4_K_M", "CUDA", 0.5 * roof, -1);
	store.version = 2;
	got = decode_of(&cached, body, &runs);
	ck_assert_int_eq(store.calls, 2);
	ck_assert_int_eq(runs, 1);
	want = decode_of(&plain, body, &runs);
	ck_assert_int_eq(store.calls, 3);
	ck_assert_double_eq_tol(got, want, 1e-12);
	ck_assert_double_eq_tol(got, 0.5 * roof, 0.01 * roof);
	calls = store.calls;
	ck_assert_double_eq_tol(decode_of(&cached, body, &runs), got, 1e-12);
	ck_assert_int_eq(store.calls, calls);

	/* A store that cannot say its version is listed every time. */
	store.version_fail = RF_E_STORE_UNAVAILABLE;
	(void)decode_of(&cached, body, &runs);
	(void)decode_of(&cached, body, &runs);
	ck_assert_int_eq(store.calls, calls + 2);
	ck_assert_int_eq(runs, 1);
	store.version_fail = 0;

	/* Four fingerprints are kept: a fifth replaces the least recently used. */
	for (int i = 0; i < 5; i++) {
		snprintf(b, sizeof(b),
			 "{\"model\":\"" LLAMA "\",\"quant\":\"Q4_K_M\","
			 "\"hardware\":{\"gpus\":[{\"name\":\"%s\"}]}}",
			 gpus[i]);
		(void)decode_of(&cached, b, &runs);
	}
	calls = store.calls;
	(void)decode_of(&cached, b, &runs); /* the fifth, just read */
	ck_assert_int_eq(store.calls, calls);
	(void)decode_of(&cached, body, &runs); /* the 3090 profile's, replaced */
	ck_assert_int_eq(store.calls, calls + 1);
	ck_assert_int_eq(runs, 1);
	api_history_cache_free(cached.history_cache);
}
END_TEST

/* The planner's pick for LLAMA on the 3090 profile, with the runs of env's store when history. */
static void plan_pick(const struct api_env *env, bool history, struct plan_answer *ans)
{
	cJSON *model = cJSON_CreateString(LLAMA);
	struct api_plan_input *in = NULL;
	struct api_reply r = {0};
	struct plan_request preq;
	struct plan_model pm;

	ck_assert_int_eq(api_plan_input(env, model, NULL, "NVIDIA GeForce RTX 3090", &in, &r), 0);
	if (history)
		ck_assert_int_eq(api_plan_input_history(env, in), 0);
	api_plan_model(in, &pm);
	ck_assert(history == (pm.calib != NULL));
	plan_request_default(&preq);
	ck_assert_int_eq(plan_infer(&pm, &in->machine, t_quality(), &preq, ans), 0);
	ck_assert(ans->found);
	ck_assert_int_eq(ans->best.setup.runtime, PLAN_RT_LLAMA_CPP);
	api_plan_input_free(in);
	cJSON_Delete(model);
}

/* /api/estimate of the planner's setup s. */
static cJSON *estimate_setup(const struct api_env *env, const struct plan_setup *s)
{
	char body[512];
	const char *kv = s->p.type_k == RF_GT_Q8_0 ? "q8_0" :
			 s->p.type_k == RF_GT_Q4_0 ? "q4_0" :
						     "f16";

	snprintf(body, sizeof(body),
		 "{\"model\":\"" LLAMA "\",\"quant\":\"%s\",\"n_ctx\":%lld,\"n_batch\":%lld,"
		 "\"n_ubatch\":%lld,\"n_parallel\":%lld,\"n_gpu_layers\":%lld,\"n_cpu_moe\":%lld,"
		 "\"kv_cache_type\":\"%s\",\"flash_attn\":%s,\"use_mmap\":%s," ON_3090 "}",
		 rf_ftype_name(s->ftype), (long long)s->p.n_ctx, (long long)s->p.n_batch,
		 (long long)s->p.n_ubatch, (long long)s->p.n_parallel, (long long)s->p.n_gpu_layers,
		 (long long)s->p.n_cpu_moe, kv, s->p.flash_attn ? "true" : "false",
		 s->p.use_mmap ? "true" : "false");
	return estimate_with(env, body);
}

/* /api/estimate of a config's llama.cpp settings in precision (as its answer states them). */
static cJSON *estimate_settings(const struct api_env *env, const cJSON *precision, const cJSON *set)
{
	char body[512];

	ck_assert(cJSON_IsString(precision));
	snprintf(
		body, sizeof(body),
		"{\"model\":\"" LLAMA "\",\"quant\":\"%s\",\"n_ctx\":%.0f,\"n_batch\":%.0f,"
		"\"n_ubatch\":%.0f,\"n_parallel\":%.0f,\"n_gpu_layers\":%.0f,\"n_cpu_moe\":%.0f,"
		"\"kv_cache_type\":\"%s\",\"flash_attn\":%s,\"use_mmap\":%s," ON_3090 "}",
		precision->valuestring, cJSON_GetObjectItemCaseSensitive(set, "n_ctx")->valuedouble,
		cJSON_GetObjectItemCaseSensitive(set, "n_batch")->valuedouble,
		cJSON_GetObjectItemCaseSensitive(set, "n_ubatch")->valuedouble,
		cJSON_GetObjectItemCaseSensitive(set, "n_parallel")->valuedouble,
		cJSON_GetObjectItemCaseSensitive(set, "n_gpu_layers")->valuedouble,
		cJSON_GetObjectItemCaseSensitive(set, "n_cpu_moe")->valuedouble,
		cJSON_GetObjectItemCaseSensitive(set, "cache_type_k")->valuestring,
		cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(set, "flash_attn")) ? "true" :
										    "false",
		cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(set, "use_mmap")) ? "true" : "false");
	return estimate_with(env, body);
}

START_TEST(config_plans_with_the_runs_its_estimate_states)
{
	struct api_env env = env_with_store(true);
	struct plan_answer *ans = malloc(sizeof(*ans));
	cJSON *j = estimate(QWEN, "Q4_K_M"), *cfg;
	char fp[32], body[256];
	double roofline_pick, calibrated_pick;

	ck_assert_ptr_nonnull(ans);
	env.cat.quality = t_quality();
	snprintf(fp, sizeof(fp), "%s", fingerprint_of(j));
	/* This host runs another model at 60% of its roofline. */
	record(fp, QWEN, "Q4_K_M", "CUDA", 0.60 * speed_num(j, "decode_tokens_per_s"),
	       0.60 * speed_num(j, "prefill_tokens_per_s"));
	record(fp, QWEN, "Q4_K_M", "CUDA", 0.62 * speed_num(j, "decode_tokens_per_s"),
	       0.62 * speed_num(j, "prefill_tokens_per_s"));
	cJSON_Delete(j);

	/* Without the runs the planner prices its pick on the roofline; with them, at what the
	 * estimate of that very setup states, to the bit, and on the same basis. */
	plan_pick(&env, false, ans);
	ck_assert_int_eq(ans->best.res.decode_basis, SPEED_BASIS_ROOFLINE);
	roofline_pick = ans->best.res.decode_tps;
	plan_pick(&env, true, ans);
	ck_assert_int_eq(ans->best.res.decode_basis, SPEED_BASIS_CALIBRATED);
	calibrated_pick = ans->best.res.decode_tps;
	j = estimate_setup(&env, &ans->best.setup);
	ck_assert_str_eq(speed_str(j, "decode_basis"), "calibrated");
	ck_assert_msg(speed_num(j, "decode_tokens_per_s") == calibrated_pick,
		      "estimate %.17g, planner %.17g", speed_num(j, "decode_tokens_per_s"),
		      calibrated_pick);
	ck_assert_msg(speed_num(j, "decode_tokens_per_s_at_full_ctx") ==
			      ans->best.res.decode_tps_full_ctx,
		      "full context: estimate %.17g, planner %.17g",
		      speed_num(j, "decode_tokens_per_s_at_full_ctx"),
		      ans->best.res.decode_tps_full_ctx);
	ck_assert(calibrated_pick < 0.7 * roofline_pick);
	cJSON_Delete(j);

	/* Runs of the model itself in the pick's precision: every setup of that format stands on
	 * what was measured, in the planner as in the estimate. */
	for (int i = 0; i < 3; i++)
		record(fp, "llama-3.1-8b", rf_ftype_name(ans->best.setup.ftype), "CUDA",
		       0.5 * roofline_pick * (1 + 0.01 * i), -1);
	plan_pick(&env, true, ans);
	j = estimate_setup(&env, &ans->best.setup);
	ck_assert_str_eq(speed_str(j, "decode_basis"),
			 speed_basis_name(ans->best.res.decode_basis));
	ck_assert(speed_num(j, "decode_tokens_per_s") == ans->best.res.decode_tps);
	cJSON_Delete(j);

	/* The route: what config states of its pick and of each alternative (the planner's
	 * figures) is what /api/estimate states of that setup. */
	snprintf(body, sizeof(body),
		 "{\"model\":\"" LLAMA "\",\"runtime\":\"llama.cpp\"," ON_3090 "}");
	ck_assert_int_eq(t_route_post(api_config, &env, "/api/config", body, &cfg), 200);
	{
		const cJSON *meta = cJSON_GetObjectItemCaseSensitive(cfg, "metadata"), *alt;
		int compared = 0;
		j = estimate_settings(&env, cJSON_GetObjectItemCaseSensitive(meta, "precision"),
				      cJSON_GetObjectItemCaseSensitive(cfg, "settings"));
		ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(meta,
								     "expected_tokens_per_sec")
					    ->valuedouble,
				    round(speed_num(j, "decode_tokens_per_s") * 10) / 10);
		ck_assert_str_ne(speed_str(j, "decode_basis"), "roofline");
		cJSON_Delete(j);
		cJSON_ArrayForEach(alt, cJSON_GetObjectItemCaseSensitive(cfg, "alternatives"))
		{
			const cJSON *pe = cJSON_GetObjectItemCaseSensitive(alt, "estimate");
			if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pe, "fits")))
				continue;
			j = estimate_settings(&env,
					      cJSON_GetObjectItemCaseSensitive(alt, "precision"),
					      cJSON_GetObjectItemCaseSensitive(alt, "settings"));
			ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(pe,
									     "decode_tokens_per_s")
						    ->valuedouble,
					    round(speed_num(j, "decode_tokens_per_s") * 10) / 10);
			cJSON_Delete(j);
			compared++;
		}
		ck_assert_int_ge(compared, 1);
	}
	cJSON_Delete(cfg);
	free(ans);
}
END_TEST

Suite *estimate_history_suite(void)
{
	Suite *s = suite_create("estimate_history");
	TCase *tc = tcase_create("history");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, history_moves_the_estimate_from_roofline_to_calibrated_to_measured);
	tcase_add_test(tc, runs_of_other_hardware_backends_or_models_count_for_nothing);
	tcase_add_test(tc, a_failing_or_missing_store_leaves_the_roofline);
	tcase_add_test(tc, runs_recorded_under_this_hosts_fingerprint_refine_its_estimates);
	tcase_add_test(tc, the_history_is_listed_once_per_store_version);
	tcase_add_test(tc, config_plans_with_the_runs_its_estimate_states);
	suite_add_tcase(s, tc);
	return s;
}
