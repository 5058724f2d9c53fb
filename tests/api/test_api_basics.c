/*
 * Unit tests for the API layer without a socket: the error envelope, the route table and
 * dispatch, query parameters, the JSON field walker, the metrics text and the hardware JSON.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/hardware_json.h"
#include "api/hardware_summary.h"
#include "api/jsonmap.h"
#include "api/metrics.h"
#include "core/err.h"
#include "tests/test.h"

static cJSON *reply_json(const struct api_reply *r)
{
	const char *b = r->body ? r->body : r->borrowed_body;
	cJSON *j = cJSON_ParseWithLength(b, r->len);
	ck_assert_msg(j != NULL, "not JSON: %.*s", (int)r->len, b);
	return j;
}

START_TEST(error_envelope_has_code_message_and_field)
{
	struct api_reply r = {0};
	cJSON *j, *e;

	ck_assert_int_eq(api_error(&r, RF_E_INVALID_VALUE, "n_ctx", "n_ctx must be %d+", 1),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(r.status, 422);
	ck_assert_str_eq(r.content_type, "application/json");
	j = reply_json(&r);
	e = cJSON_GetObjectItem(j, "error");
	ck_assert_str_eq(cJSON_GetObjectItem(e, "code")->valuestring, "invalid_value");
	ck_assert_str_eq(cJSON_GetObjectItem(e, "message")->valuestring, "n_ctx must be 1+");
	ck_assert_str_eq(cJSON_GetObjectItem(e, "field")->valuestring, "n_ctx");
	cJSON_Delete(j);
	api_reply_reset(&r);
	/* Unknown codes become internal errors, never a bogus status. */
	api_error(&r, 77, NULL, NULL);
	ck_assert_int_eq(r.status, 500);
	j = reply_json(&r);
	ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "field"));
	cJSON_Delete(j);
	api_reply_reset(&r);
}
END_TEST

START_TEST(route_table_finds_routes_methods_and_ids)
{
	unsigned allowed;
	const char *id;
	size_t id_len;
	size_t n;
	const struct api_route *t = api_routes(&n);

	ck_assert_uint_gt(n, 4);
	ck_assert_ptr_eq(api_route_find(API_GET, "/healthz", &allowed, &id, &id_len)->handler,
			 api_health);
	ck_assert_ptr_nonnull(api_route_find(API_HEAD, "/api/hardware", &allowed, &id, &id_len));
	ck_assert_ptr_null(api_route_find(API_DELETE, "/api/hardware", &allowed, &id, &id_len));
	ck_assert_uint_eq(allowed, API_GET | API_HEAD);
	ck_assert_ptr_null(api_route_find(API_GET, "/api/hardware/", &allowed, &id, &id_len));
	ck_assert_uint_eq(allowed, 0);
	ck_assert_ptr_null(api_route_find(API_GET, "/HEALTHZ", &allowed, &id, &id_len));
	/* Every route has a handler and a path that starts with '/'. */
	for (size_t i = 0; i < n; i++) {
		ck_assert_ptr_nonnull(t[i].handler);
		ck_assert_int_eq(t[i].path[0], '/');
	}
}
END_TEST

START_TEST(dispatch_answers_404_and_405)
{
	struct api_env env = {0};
	struct api_request req = {.method = API_GET, .path = "/x", .query = ""};
	struct api_reply r = {0};

	ck_assert_ptr_null(api_dispatch(&env, &req, &r));
	ck_assert_int_eq(r.status, 404);
	api_reply_reset(&r);
	req.method = API_PUT;
	req.path = "/metrics";
	ck_assert_ptr_null(api_dispatch(&env, &req, &r));
	ck_assert_int_eq(r.status, 405);
	ck_assert_str_eq(r.allow, "GET, HEAD");
	api_reply_reset(&r);
	/* Before the first scan, the hardware route is a 503, not a crash. */
	req.method = API_GET;
	req.path = "/api/hardware";
	ck_assert_ptr_nonnull(api_dispatch(&env, &req, &r));
	ck_assert_int_eq(r.status, 503);
	api_reply_reset(&r);
}
END_TEST

START_TEST(query_parameters_decode_and_bound)
{
	char buf[8];

	ck_assert_int_eq(api_query_get("a=1&limit=25&b", "limit", buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "25");
	ck_assert_int_eq(api_query_get("a=1&b", "b", buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(api_query_get("x=%41%62+c", "x", buf, sizeof(buf)), 1);
	ck_assert_str_eq(buf, "Ab c");
	ck_assert_int_eq(api_query_get("limitx=1", "limit", buf, sizeof(buf)), 0);
	ck_assert_int_eq(api_query_get("x=%4", "x", buf, sizeof(buf)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_query_get("x=%00", "x", buf, sizeof(buf)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_query_get("x=123456789", "x", buf, sizeof(buf)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_query_get("", "x", buf, sizeof(buf)), 0);
}
END_TEST

struct demo {
	int64_t n;
	bool has_n;
	double ratio;
	bool flag;
	char name[8];
};

static const struct jm_field demo_fields[] = {
	{"n", JM_INT, offsetof(struct demo, n), 0, 1, 100, true, offsetof(struct demo, has_n),
	 NULL},
	{"ratio", JM_DOUBLE, offsetof(struct demo, ratio), 0, 0, 1, false, 0, NULL},
	{"flag", JM_BOOL, offsetof(struct demo, flag), 0, 0, 0, false, 0, NULL},
	{"name", JM_STRING, offsetof(struct demo, name), sizeof(((struct demo *)0)->name), 0, 0,
	 false, 0, NULL},
};

/* Maps body with the demo table; returns the rf_err and the offending field (or ""). */
static int map_demo(const char *body, struct demo *d, char *field, size_t flen)
{
	struct api_request req = {.body = body, .body_len = strlen(body)};
	struct api_reply r = {0};
	cJSON *obj = NULL, *j;
	int rc = jm_parse_body(&req, false, &obj, &r);

	if (rc == 0) {
		rc = jm_map(obj, demo_fields, 4, d, &r);
		cJSON_Delete(obj);
	}
	field[0] = '\0';
	if (rc < 0) {
		j = reply_json(&r);
		cJSON *f = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "error"), "field");
		if (f)
			snprintf(field, flen, "%s", f->valuestring);
		cJSON_Delete(j);
	}
	api_reply_reset(&r);
	return rc;
}

START_TEST(json_walker_maps_and_names_the_bad_field)
{
	struct demo d = {0};
	char field[64];

	ck_assert_int_eq(map_demo("{\"n\":5,\"ratio\":0.5,\"flag\":true,\"name\":\"abc\"}", &d,
				  field, sizeof(field)),
			 0);
	ck_assert_int_eq(d.n, 5);
	ck_assert(d.has_n);
	ck_assert_double_eq(d.ratio, 0.5);
	ck_assert(d.flag);
	ck_assert_str_eq(d.name, "abc");

	ck_assert_int_eq(map_demo("{\"n\":0}", &d, field, sizeof(field)), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "n");
	ck_assert_int_eq(map_demo("{\"n\":2.5}", &d, field, sizeof(field)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(map_demo("{\"n\":\"5\"}", &d, field, sizeof(field)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(map_demo("{\"n\":5,\"ratio\":2}", &d, field, sizeof(field)),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "ratio");
	ck_assert_int_eq(map_demo("{\"n\":5,\"flag\":1}", &d, field, sizeof(field)),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "flag");
	ck_assert_int_eq(map_demo("{\"n\":5,\"name\":\"too long!\"}", &d, field, sizeof(field)),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "name");
	ck_assert_int_eq(map_demo("{\"n\":5,\"extra\":1}", &d, field, sizeof(field)),
			 RF_E_UNKNOWN_FIELD);
	ck_assert_str_eq(field, "extra");
	ck_assert_int_eq(map_demo("{\"ratio\":0.1}", &d, field, sizeof(field)), RF_E_MISSING_FIELD);
	ck_assert_str_eq(field, "n");
	ck_assert_int_eq(map_demo("{\"n\":5} trailing", &d, field, sizeof(field)),
			 RF_E_INVALID_JSON);
	ck_assert_int_eq(map_demo("\"just a string\"", &d, field, sizeof(field)),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(map_demo("", &d, field, sizeof(field)), RF_E_INVALID_JSON);
}
END_TEST

struct demo2 {
	int64_t n_ctx;
	int mode;
	bool has_mode;
};

static const char *const demo2_modes[] = {"inference", "lora", "qlora", "full", NULL};
static const struct jm_field demo2_fields[] = {
	{"n_ctx", JM_INT_OR_MAX, offsetof(struct demo2, n_ctx), 0, 1, 1 << 20, false, 0, NULL},
	{"mode", JM_ENUM, offsetof(struct demo2, mode), 0, 0, 0, false,
	 offsetof(struct demo2, has_mode), demo2_modes},
	{"model", JM_ANY, 0, 0, 0, 0, true, 0, NULL},
};

START_TEST(json_walker_takes_max_enums_and_nested_objects)
{
	static const struct {
		const char *body;
		int rc;
		int64_t n_ctx;
		int mode;
	} cases[] = {
		{"{\"model\":{\"id\":\"x\"},\"n_ctx\":\"max\",\"mode\":\"qlora\"}", 0, -1, 2},
		{"{\"model\":1,\"n_ctx\":4096}", 0, 4096, 0},
		{"{\"model\":1,\"n_ctx\":\"big\"}", RF_E_INVALID_VALUE, 0, 0},
		{"{\"model\":1,\"n_ctx\":0}", RF_E_INVALID_VALUE, 0, 0},
		{"{\"model\":1,\"mode\":\"train\"}", RF_E_INVALID_VALUE, 0, 0},
		{"{\"model\":1,\"mode\":3}", RF_E_INVALID_VALUE, 0, 0},
		{"{\"n_ctx\":1}", RF_E_MISSING_FIELD, 0, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct demo2 d = {0};
		struct api_request req = {.body = cases[i].body, .body_len = strlen(cases[i].body)};
		struct api_reply r = {0};
		cJSON *obj = NULL;
		int rc = jm_parse_body(&req, false, &obj, &r);
		ck_assert_int_eq(rc, 0);
		rc = jm_map(obj, demo2_fields, 3, &d, &r);
		ck_assert_msg(rc == cases[i].rc, "case %zu: %d", i, rc);
		if (rc == 0) {
			ck_assert_int_eq(d.n_ctx, cases[i].n_ctx);
			ck_assert_int_eq(d.mode, cases[i].mode);
		}
		if (i == 4)
			ck_assert_ptr_nonnull(strstr(r.body, "inference, lora, qlora, full"));
		cJSON_Delete(obj);
		api_reply_reset(&r);
	}
}
END_TEST

START_TEST(utf8_validation)
{
	ck_assert(jm_utf8_valid("plain", 5));
	ck_assert(jm_utf8_valid("caf\xc3\xa9", 5));
	ck_assert(jm_utf8_valid("\xf0\x9f\x98\x80", 4));
	ck_assert(!jm_utf8_valid("\xc3", 1));             /* truncated */
	ck_assert(!jm_utf8_valid("\xc0\xaf", 2));         /* overlong */
	ck_assert(!jm_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
	ck_assert(!jm_utf8_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
	ck_assert(!jm_utf8_valid("a\0b", 3));             /* NUL */
}
END_TEST

START_TEST(metrics_text_is_prometheus_shaped)
{
	struct api_metrics *m = api_metrics_new();
	struct api_env env = {.version = "9.9.9", .uptime_s = 12.5};
	struct api_scan_stats st = {3, 1, 0.004, 1700000000.5, -1};
	size_t len = 0;
	char *text;

	api_metrics_observe(m, "/healthz", API_GET, 200, 0.0002);
	api_metrics_observe(m, "/healthz", API_GET, 200, 0.3);
	api_metrics_observe(m, NULL, API_POST, 404, 0.00001);
	api_metrics_set_scan(m, &st);
	text = api_metrics_render(m, &env, &len);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(len, strlen(text));
	ck_assert_ptr_nonnull(strstr(text, "rigfit_build_info{version=\"9.9.9\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(
		text,
		"rigfit_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(
		text,
		"rigfit_http_requests_total{route=\"unmatched\",method=\"POST\",status=\"404\"} 1\n"));
	/* Buckets are cumulative: 0.0002 falls in le=0.00025, 0.3 in le=0.5. */
	ck_assert_ptr_nonnull(
		strstr(text, "{route=\"/healthz\",method=\"GET\",le=\"0.0001\"} 0\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "{route=\"/healthz\",method=\"GET\",le=\"0.00025\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "{route=\"/healthz\",method=\"GET\",le=\"0.25\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "{route=\"/healthz\",method=\"GET\",le=\"0.5\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(text, "{route=\"/healthz\",method=\"GET\",le=\"+Inf\"} 2\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nrigfit_scans_total 3\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nrigfit_scan_failures_total 1\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "\nrigfit_scan_last_success_timestamp_seconds 1700000000.500\n"));
	ck_assert_ptr_null(strstr(text, "rigfit_scan_last_failure_timestamp_seconds"));
	ck_assert_ptr_nonnull(strstr(text, "\nrigfit_store_up 0\n"));
	/* Every line is a comment or "name{labels} value". */
	for (char *line = text; *line; line = strchr(line, '\n') + 1) {
		ck_assert(line[0] == '#' || strncmp(line, "rigfit_", 7) == 0);
		ck_assert_ptr_nonnull(strchr(line, '\n'));
	}
	free(text);
	api_metrics_free(m);
	api_metrics_free(NULL);
}
END_TEST

START_TEST(hardware_json_writes_null_for_unknown_and_never_invents_gpus)
{
	struct hw_snapshot *s = malloc(sizeof(*s));
	cJSON *j, *cpu;
	char *json;
	size_t len;

	hw_snapshot_init(s);
	s->memory.total_bytes = 1024;
	s->scanned_at_ms = 1700000000123LL;
	hw_warn(s, "cpu: %s", "unreadable");
	json = api_hardware_render(s, &len);
	ck_assert_ptr_nonnull(json);
	j = cJSON_Parse(json);
	cpu = cJSON_GetObjectItem(j, "cpu");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(cpu, "physical_cores")));
	ck_assert(cJSON_IsNull(
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "memory"), "available_bytes")));
	ck_assert_double_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "memory"), "total_bytes")->valuedouble,
		1024);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "gpus")), 0);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "scanned_at")->valuestring,
			 "2023-11-14T22:13:20.123Z");
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "warnings"), 0)->valuestring,
			 "cpu: unreadable");
	ck_assert_str_eq(cJSON_GetObjectItem(j, "platform")->valuestring, "cpu");
	cJSON_Delete(j);
	free(json);
	free(s);
}
END_TEST

START_TEST(summary_spells_out_the_scan)
{
	struct hw_snapshot *s = malloc(sizeof(*s));
	struct hw_gpu *g;
	char *text;

	hw_snapshot_init(s);
	hw_strlcpy(s->cpu.model, "Test CPU", sizeof(s->cpu.model));
	s->cpu.physical_cores = 8;
	s->cpu.logical_cores = 16;
	s->cpu.performance_cores = 4;
	s->cpu.efficiency_cores = 4;
	s->memory.total_bytes = 64LL << 30;
	s->n_gpus = 1;
	g = &s->gpus[0];
	memset(g, 0, sizeof(*g));
	hw_strlcpy(g->name, "NVIDIA H100 80GB HBM3", sizeof(g->name));
	hw_strlcpy(g->vendor, "nvidia", sizeof(g->vendor));
	g->memory_total_bytes = 80LL << 30;
	g->memory_free_bytes = -1;
	g->memory_bandwidth_gbs = 3352;
	g->memory_bus_width_bits = 5120;
	hw_strlcpy(g->architecture, "Hopper", sizeof(g->architecture));
	g->from_profile = HW_FROM_PROFILE(ARCHITECTURE);
	hw_strlcpy(s->compute_profile, "high_end", sizeof(s->compute_profile));
	hw_warn(s, "gpu: test warning");
	text = api_hardware_summary(s);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "Hardware Profile: high_end\n"));
	ck_assert_ptr_nonnull(strstr(text, "Cores: 8 physical, 16 logical, unknown socket(s)"));
	ck_assert_ptr_nonnull(strstr(text, "Performance cores: 4\n  Efficiency cores: 4\n"));
	ck_assert_ptr_nonnull(strstr(text, "RAM: 64.0 GiB total\n"));
	ck_assert_ptr_nonnull(strstr(text, "VRAM: 80.0 GiB (largest GPU)"));
	ck_assert_ptr_nonnull(strstr(text, "GPU 0:\n  Model: NVIDIA H100 80GB HBM3\n"));
	ck_assert_ptr_nonnull(strstr(text, "Memory: 80.0 GiB total\n"));
	ck_assert_ptr_nonnull(strstr(text, "Bandwidth: 3352 GB/s\n"));
	/* Facts a device profile gave are marked; measured ones are not. */
	ck_assert_ptr_nonnull(strstr(text, "  Architecture: Hopper (device profile)\n"));
	ck_assert_ptr_nonnull(strstr(text, "  Memory bus: 5120-bit\n"));
	ck_assert_ptr_nonnull(strstr(text, "  - gpu: test warning\n"));
	free(text);
	free(s);
}
END_TEST

Suite *api_basics_suite(void)
{
	Suite *s = suite_create("api_basics");
	TCase *tc = tcase_create("api");

	tcase_add_test(tc, error_envelope_has_code_message_and_field);
	tcase_add_test(tc, route_table_finds_routes_methods_and_ids);
	tcase_add_test(tc, dispatch_answers_404_and_405);
	tcase_add_test(tc, query_parameters_decode_and_bound);
	tcase_add_test(tc, json_walker_maps_and_names_the_bad_field);
	tcase_add_test(tc, json_walker_takes_max_enums_and_nested_objects);
	tcase_add_test(tc, utf8_validation);
	tcase_add_test(tc, metrics_text_is_prometheus_shaped);
	tcase_add_test(tc, hardware_json_writes_null_for_unknown_and_never_invents_gpus);
	tcase_add_test(tc, summary_spells_out_the_scan);
	suite_add_tcase(s, tc);
	return s;
}
