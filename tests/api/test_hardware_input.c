/*
 * A client's hardware object: a pasted scan round-trips, every bad field is named by its path,
 * and caps hold (thousands of GPUs, absurd sizes).
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/hardware_input.h"
#include "api/hardware_json.h"
#include "core/err.h"
#include "tests/test.h"

/* Parses json as the hardware object; returns the rf_err and writes the error's field. */
static int parse_hw(const char *json, struct hw_snapshot *s, char *field, size_t flen)
{
	cJSON *o = cJSON_Parse(json);
	struct api_reply r = {0};
	int rc;

	ck_assert_msg(o != NULL, "test JSON is broken: %s", json);
	rc = api_hardware_from_json(o, "hardware", s, &r);
	field[0] = '\0';
	if (rc < 0) {
		cJSON *e = cJSON_Parse(r.body);
		cJSON *f = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "error"), "field");
		if (f)
			snprintf(field, flen, "%s", f->valuestring);
		ck_assert_int_eq(r.status, rf_err_status(rc));
		cJSON_Delete(e);
	}
	api_reply_reset(&r);
	cJSON_Delete(o);
	return rc;
}

START_TEST(a_described_machine_is_classified_again)
{
	struct hw_snapshot *s = malloc(sizeof(*s));
	char field[128];

	ck_assert_int_eq(parse_hw("{\"gpus\":[{\"name\":\"RTX 4090\",\"vendor\":\"nvidia\","
				  "\"memory_total_bytes\":25757220864,\"count\":2}],"
				  "\"memory\":{\"total_bytes\":68719476736},"
				  "\"platform\":\"cpu\",\"compute_profile\":\"low_end\"}",
				  s, field, sizeof(field)),
			 0);
	ck_assert_int_eq(s->n_gpus, 2);
	ck_assert_int_eq(s->gpus[1].index, 1);
	ck_assert_int_eq(s->gpus[1].memory_free_bytes, 25757220864LL);
	/* Derived fields are recomputed, not trusted. */
	ck_assert_str_eq(s->platform, "nvidia");
	ck_assert_str_eq(s->compute_profile, "high_end");
	ck_assert_str_eq(s->sources.gpu, "request");
	free(s);
}
END_TEST

START_TEST(a_pasted_scan_round_trips)
{
	struct hw_snapshot *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	char field[128], *ja, *jb;
	cJSON *x, *y;

	hw_snapshot_init(a);
	a->memory.total_bytes = 16LL << 30;
	a->memory.available_bytes = 8LL << 30;
	a->cpu.physical_cores = 8;
	a->cpu.logical_cores = 16;
	a->cpu.isa = HW_ISA(AVX2) | HW_ISA(FMA);
	a->host.container.detected = true;
	a->host.container.cgroup_memory_limit_bytes = 4LL << 30;
	hw_warn(a, "ignored on input");
	a->n_gpus = 1;
	memset(&a->gpus[0], 0, sizeof(a->gpus[0]));
	hw_strlcpy(a->gpus[0].vendor, "nvidia", sizeof(a->gpus[0].vendor));
	hw_strlcpy(a->gpus[0].name, "NVIDIA H100 80GB HBM3", sizeof(a->gpus[0].name));
	hw_strlcpy(a->gpus[0].architecture, "Hopper", sizeof(a->gpus[0].architecture));
	a->gpus[0].memory_total_bytes = 81559LL << 20;
	a->gpus[0].memory_free_bytes = a->gpus[0].memory_used_bytes = HW_UNKNOWN;
	a->gpus[0].memory_gtt_bytes = a->gpus[0].max_memory_clock_mhz = HW_UNKNOWN;
	a->gpus[0].memory_bus_width_bits = 5120;
	a->gpus[0].memory_bandwidth_gbs = a->gpus[0].fp16_tflops = -1;
	a->gpus[0].from_profile = HW_FROM_PROFILE(BUS_WIDTH) | HW_FROM_PROFILE(ARCHITECTURE);
	ja = api_hardware_render(a, NULL);
	ck_assert_int_eq(parse_hw(ja, b, field, sizeof(field)), 0);
	ck_assert_int_eq(b->memory.available_bytes, 8LL << 30);
	ck_assert_int_eq(b->cpu.logical_cores, 16);
	ck_assert_uint_eq(b->cpu.isa, HW_ISA(AVX2) | HW_ISA(FMA));
	ck_assert_int_eq(b->host.container.cgroup_memory_limit_bytes, 4LL << 30);
	/* Which GPU facts a device profile gave stays said. */
	ck_assert_int_eq(b->n_gpus, 1);
	ck_assert_uint_eq(b->gpus[0].from_profile,
			  HW_FROM_PROFILE(BUS_WIDTH) | HW_FROM_PROFILE(ARCHITECTURE));
	ck_assert_str_eq(b->gpus[0].architecture, "Hopper");
	jb = api_hardware_render(b, NULL);
	x = cJSON_Parse(ja);
	y = cJSON_Parse(jb);
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(x, "cpu"), cJSON_GetObjectItem(y, "cpu"), 1));
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(x, "memory"), cJSON_GetObjectItem(y, "memory"),
				1));
	cJSON_Delete(x);
	cJSON_Delete(y);
	free(ja);
	free(jb);
	free(a);
	free(b);
}
END_TEST

START_TEST(bad_fields_are_named_by_their_path)
{
	static const struct {
		const char *json;
		int err;
		const char *field;
	} cases[] = {
		{"{\"gpus\":[{\"name\":\"x\",\"memory_total_bytes\":-1}]}", RF_E_INVALID_VALUE,
		 "hardware.gpus[0].memory_total_bytes"},
		{"{\"gpus\":[{\"name\":\"x\"},{\"memory_total_bytes\":1.5}]}", RF_E_INVALID_VALUE,
		 "hardware.gpus[1].memory_total_bytes"},
		{"{\"gpus\":[{\"name\":\"x\",\"memory_total_bytes\":\"8GB\"}]}", RF_E_INVALID_VALUE,
		 "hardware.gpus[0].memory_total_bytes"},
		{"{\"gpus\":[{\"name\":\"x\",\"memory_total_bytes\":1e30}]}", RF_E_INVALID_VALUE,
		 "hardware.gpus[0].memory_total_bytes"},
		{"{\"gpus\":[{\"vendor\":\"nvidia\"}]}", RF_E_INVALID_VALUE,
		 "hardware.gpus[0].name"},
		{"{\"gpus\":[{\"name\":\"x\",\"vendor\":\"3dfx\"}]}", RF_E_INVALID_VALUE,
		 "hardware.gpus[0].vendor"},
		{"{\"gpus\":[{\"name\":\"x\",\"bogus\":1}]}", RF_E_UNKNOWN_FIELD,
		 "hardware.gpus[0].bogus"},
		{"{\"gpus\":[{\"name\":\"x\",\"count\":65}]}", RF_E_INVALID_VALUE,
		 "hardware.gpus[0].count"},
		{"{\"gpus\":[{\"name\":\"x\",\"memory_total_bytes\":10,\"memory_free_bytes\":11}]}",
		 RF_E_INVALID_VALUE, "hardware.gpus[0].memory_free_bytes"},
		{"{\"gpus\":{}}", RF_E_INVALID_VALUE, "hardware.gpus"},
		{"{\"gpus\":[1]}", RF_E_INVALID_VALUE, "hardware.gpus[0]"},
		{"{\"memory\":{\"total_bytes\":0}}", RF_E_INVALID_VALUE,
		 "hardware.memory.total_bytes"},
		{"{\"cpu\":{\"physical_cores\":4000000000}}", RF_E_INVALID_VALUE,
		 "hardware.cpu.physical_cores"},
		{"{\"cpu\":{\"isa\":[\"avx9\"]}}", RF_E_INVALID_VALUE, "hardware.cpu.isa"},
		{"{\"host\":{\"container\":{\"cgroup_memory_limit_bytes\":-5}}}",
		 RF_E_INVALID_VALUE, "hardware.host.container.cgroup_memory_limit_bytes"},
		{"{\"gpus\":[{\"name\":\"x\",\"from_profile\":[\"name\"]}]}", RF_E_INVALID_VALUE,
		 "hardware.gpus[0].from_profile"},
		{"{\"gpus\":[{\"name\":\"x\",\"from_profile\":\"architecture\"}]}",
		 RF_E_INVALID_VALUE, "hardware.gpus[0].from_profile"},
		{"{\"gpus\":[{\"name\":\"x\",\"from_profile\":[1]}]}", RF_E_INVALID_VALUE,
		 "hardware.gpus[0].from_profile"},
		{"{\"nope\":1}", RF_E_UNKNOWN_FIELD, "hardware.nope"},
		{"[]", RF_E_INVALID_VALUE, "hardware"},
	};
	struct hw_snapshot *s = malloc(sizeof(*s));
	char field[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = parse_hw(cases[i].json, s, field, sizeof(field));
		ck_assert_msg(rc == cases[i].err, "case %zu: rc %d", i, rc);
		ck_assert_msg(strcmp(field, cases[i].field) == 0, "case %zu: field '%s', want '%s'",
			      i, field, cases[i].field);
	}
	free(s);
}
END_TEST

START_TEST(thousands_of_gpus_are_refused)
{
	struct hw_snapshot *s = malloc(sizeof(*s));
	size_t n = 3000, cap = n * 40 + 32, used;
	char *json = malloc(cap), field[128];

	used = (size_t)snprintf(json, cap, "{\"gpus\":[");
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(json + used, cap - used, "%s{\"name\":\"RTX 4090\"}",
					 i ? "," : "");
	snprintf(json + used, cap - used, "]}");
	ck_assert_int_eq(parse_hw(json, s, field, sizeof(field)), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "hardware.gpus");
	free(json);
	free(s);
}
END_TEST

Suite *hardware_input_suite(void)
{
	Suite *s = suite_create("hardware_input");
	TCase *tc = tcase_create("input");

	tcase_add_test(tc, a_described_machine_is_classified_again);
	tcase_add_test(tc, a_pasted_scan_round_trips);
	tcase_add_test(tc, bad_fields_are_named_by_their_path);
	tcase_add_test(tc, thousands_of_gpus_are_refused);
	suite_add_tcase(s, tc);
	return s;
}
