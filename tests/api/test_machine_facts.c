/*
 * Two facts of a described machine, the same through every route: a CPU named in the CPU
 * table has the table's instruction sets whatever the description lists (one CPU, one set of
 * kernels) and the cores the description gives (a VM has a share of the part), and a CPU the
 * table does not hold is said to be unknown; a Mac is one pool of unified
 * memory whose GPU budget is macOS's working set however the Mac is described, and no route
 * places more than that working set on it (no "host" to spill to: it is the same memory).
 * The profiles are the repository's, loaded as the daemon loads them.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/finetune_detect.h"
#include "api/recommend.h"
#include "api/runtime_config.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define GIB 1073741824.0

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

static int post(api_handler_fn fn, const char *path, const char *body, cJSON **out)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .cat.tiers = tiers,
			      .cat.quality = t_quality()};

	return t_route_post(fn, &env, path, body, out);
}

/* The number at the dotted path of j ("speed.decode_tokens_per_s"); fails when absent. */
static double num(const cJSON *j, const char *path)
{
	char buf[128], *save = NULL;
	const cJSON *v = j;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
		v = cJSON_GetObjectItemCaseSensitive(v, k);
	ck_assert_msg(cJSON_IsNumber(v), "%s is not a number", path);
	return v->valuedouble;
}

/* The first assumption of j that holds needle, or NULL. */
static const char *assumption_with(const cJSON *j, const char *needle)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(j, "assumptions"))
	{
		if (cJSON_IsString(a) && strstr(a->valuestring, needle))
			return a->valuestring;
	}
	return NULL;
}

/* ---- the CPU table ----------------------------------------------------------------------- */

#define CPU_BODY                                                                                     \
	"{\"model\":\"llama-3.1-8b\",\"quant\":\"Q4_K_M\",\"n_ctx\":4096,\"hardware\":{\"gpus\":[]," \
	"\"cpu\":{\"model\":\"%s\"%s},\"memory\":{\"total_bytes\":34359738368}}}"

/* The answer of POST /api/estimate for the CPU called model, described with extra. */
static cJSON *cpu_estimate(const char *model, const char *extra)
{
	char body[600];
	cJSON *a;

	snprintf(body, sizeof(body), CPU_BODY, model, extra);
	ck_assert_int_eq(post(api_estimate, "/api/estimate", body, &a), 200);
	return a;
}

/* One CPU, one set of kernels: a Zen 4 named with its core count and a Graviton3 (whose entry
 * has its cores) decode and prefill the same without an isa list, with a wrong one and with an
 * empty one, given the part's cores or none; what the table replaced does not make them slower
 * than the table's CPU. */
START_TEST(a_table_cpu_has_one_speed_whatever_is_listed)
{
	static const struct {
		const char *model, *variants[3];
	} cpus[] = {
		{"AMD Ryzen 9 7950X 16-Core Processor",
		 {",\"isa\":[\"avx2\"]", ",\"isa\":[\"avx2\",\"fma\"],\"physical_cores\":16",
		  ",\"physical_cores\":16"}},
		{"AWS Graviton3",
		 {",\"isa\":[\"neon\"]", ",\"physical_cores\":64",
		  ",\"isa\":[],\"physical_cores\":64"}},
	};
	static const char *const keys[] = {"speed.decode_tokens_per_s",
					   "speed.prefill_tokens_per_s", "memory.host_bytes"};

	for (size_t c = 0; c < sizeof(cpus) / sizeof(cpus[0]); c++) {
		cJSON *bare = cpu_estimate(cpus[c].model, "");
		for (size_t v = 0; v < 3; v++) {
			cJSON *other = cpu_estimate(cpus[c].model, cpus[c].variants[v]);
			for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
				ck_assert_msg(num(bare, keys[k]) == num(other, keys[k]),
					      "%s%s: %s %g, %g as named alone", cpus[c].model,
					      cpus[c].variants[v], keys[k], num(other, keys[k]),
					      num(bare, keys[k]));
			cJSON_Delete(other);
		}
		cJSON_Delete(bare);
	}
}
END_TEST

/* The cores given are the host's: a 2-vCPU Graviton3 VM (EC2 c7g.large: 2 of the part's 64
 * cores) prefills on 2 threads, far slower than the whole part, and the answer says that the
 * count given was used where the table has another. Its kernels are still the table's. */
START_TEST(the_cores_given_are_the_hosts)
{
	cJSON *part = cpu_estimate("AWS Graviton3", "");
	cJSON *vm = cpu_estimate("AWS Graviton3", ",\"isa\":[\"neon\"],\"physical_cores\":2");

	ck_assert(num(vm, "speed.prefill_tokens_per_s") > 0);
	ck_assert_msg(num(vm, "speed.prefill_tokens_per_s") <
			      0.1 * num(part, "speed.prefill_tokens_per_s"),
		      "2 cores prefill %g, 64 cores %g", num(vm, "speed.prefill_tokens_per_s"),
		      num(part, "speed.prefill_tokens_per_s"));
	ck_assert_ptr_nonnull(assumption_with(vm, "cpu.physical_cores: the 2 given, where the "
						  "CPU table has 64"));
	ck_assert_ptr_nonnull(assumption_with(vm, "replace the list given"));
	ck_assert_ptr_null(assumption_with(part, "cpu.physical_cores"));
	cJSON_Delete(part);
	cJSON_Delete(vm);
}
END_TEST

/* The table's facts are the ones used: the Zen 4's AVX-512 kernels prefill faster than the
 * same CPU would with AVX2 alone (a CPU the table does not hold is taken at its list). */
START_TEST(the_table_cpu_runs_the_table_kernels)
{
	cJSON *zen4 = cpu_estimate("AMD Ryzen 9 7950X 16-Core Processor", ",\"isa\":[\"avx2\"]");
	cJSON *other = cpu_estimate("Mystery CPU 7950 16-Core Processor",
				    ",\"isa\":[\"avx2\"],\"memory_bandwidth_gbs\":83.2");

	ck_assert(num(zen4, "speed.prefill_tokens_per_s") >
		  1.2 * num(other, "speed.prefill_tokens_per_s"));
	ck_assert_ptr_nonnull(assumption_with(zen4, "replace the list given"));
	ck_assert_ptr_null(assumption_with(other, "replace the list given"));
	cJSON_Delete(zen4);
	cJSON_Delete(other);
}
END_TEST

/* A CPU the table does not hold is said to be unknown, and the memory assumed for it is named
 * with why, never taken silently. */
START_TEST(an_unknown_cpu_is_said_unknown)
{
	cJSON *a = cpu_estimate("AMD EPYC 9999 Weird", "");

	ck_assert_ptr_nonnull(assumption_with(a, "'AMD EPYC 9999 Weird' is not in the CPU table"));
	ck_assert_ptr_nonnull(assumption_with(a, "cpu: 'AMD EPYC 9999 Weird' is not in the CPU "
						 "table: its instruction sets, cores"));
	ck_assert_ptr_nonnull(assumption_with(a, "assumed: dual-channel DDR4-3200, as no "
						 "measurement or CPU table entry gives it"));
	cJSON_Delete(a);
}
END_TEST

/* ---- one Mac, one budget ----------------------------------------------------------------- */

#define M2_MAX_64 "68719476736"

/* A 64 GB M2 Max as people describe it; macOS lets its GPU wire 3/4 of the RAM: 48 GiB. */
static const char *const mac64[] = {
	"{\"gpus\":[{\"name\":\"Apple M2 Max\",\"memory_total_bytes\":" M2_MAX_64 "}]}",
	"{\"gpus\":[{\"name\":\"Apple M2 Max\"}],\"memory\":{\"total_bytes\":" M2_MAX_64 "}}",
	"{\"gpus\":[{\"name\":\"Apple M2 Max\",\"unified_memory\":true,\"memory_total_bytes\":" M2_MAX_64
	"}],\"memory\":{\"total_bytes\":" M2_MAX_64 "}}",
	"{\"gpus\":[{\"name\":\"Apple M2 Max 64GB\"}]}",
};
#define N_MAC64 (sizeof(mac64) / sizeof(mac64[0]))
#define WS64 (48.0 * GIB)

/* The GPU budget of /api/estimate's answer a. */
static double estimate_budget(const cJSON *a)
{
	const cJSON *dev = cJSON_GetArrayItem(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(a, "memory"),
						 "per_device"),
		0);
	return num(dev, "budget_bytes");
}

START_TEST(a_mac_has_one_budget_in_estimate_and_detect)
{
	char body[600];
	cJSON *a;

	for (size_t i = 0; i < N_MAC64; i++) {
		snprintf(body, sizeof(body), "{\"model\":\"llama-3.1-8b\",\"hardware\":%s}",
			 mac64[i]);
		ck_assert_int_eq(post(api_estimate, "/api/estimate", body, &a), 200);
		ck_assert_msg(estimate_budget(a) == WS64, "%s: %.2f GiB", mac64[i],
			      estimate_budget(a) / GIB);
		cJSON_Delete(a);
		snprintf(body, sizeof(body), "{\"task\":\"text-generation\",\"hardware\":%s}",
			 mac64[i]);
		ck_assert_int_eq(post(api_finetune_detect, "/api/finetune/detect", body, &a), 200);
		ck_assert_msg(num(a, "gpu_total_memory_gb") == 48.0, "%s: %g GB", mac64[i],
			      num(a, "gpu_total_memory_gb"));
		ck_assert_double_eq(num(a, "plan.budget_bytes"), WS64);
		ck_assert_double_eq(num(a, "ram_total_gb"), 64.0);
		/* Nothing is offloaded to a "host" that is the same memory. */
		ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(a, "plan"), "host_ram_bytes")));
		cJSON_Delete(a);
	}
	/* By name alone the Mac is the profile's largest configuration (96 GB), said so, and
	 * the same 72 GiB to both routes. */
	ck_assert_int_eq(post(api_estimate, "/api/estimate",
			      "{\"model\":\"llama-3.1-8b\",\"hardware\":{\"gpus\":[{\"name\":"
			      "\"Apple M2 Max\"}]}}",
			      &a),
			 200);
	ck_assert_double_eq(estimate_budget(a), 72.0 * GIB);
	ck_assert_ptr_nonnull(assumption_with(a, "shares 96 GiB of unified memory"));
	cJSON_Delete(a);
	ck_assert_int_eq(post(api_finetune_detect, "/api/finetune/detect",
			      "{\"task\":\"text-generation\",\"hardware\":{\"gpus\":[{\"name\":"
			      "\"Apple M2 Max\"}]}}",
			      &a),
			 200);
	ck_assert_double_eq(num(a, "gpu_total_memory_gb"), 72.0);
	cJSON_Delete(a);
}
END_TEST

/* Checks that the memory block m (an estimate's) stays within the working set ws: every
 * device at most its budget, the whole (device and host) at most ws. */
static void assert_within(const cJSON *m, double ws, const char *what)
{
	const cJSON *d;

	ck_assert_msg(num(m, "total_bytes") <= ws, "%s: %.2f GiB in all, working set %.2f GiB",
		      what, num(m, "total_bytes") / GIB, ws / GIB);
	cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(m, "per_device"))
	{
		ck_assert_msg(num(d, "bytes") <= num(d, "budget_bytes"), "%s", what);
		ck_assert_double_eq_tol(num(d, "budget_bytes"), ws, 1.0);
	}
}

/* /api/config never places more than the working set on the Mac: the whole model on its GPU
 * (no layer or expert left to a CPU that is the same memory), within 48 GiB, for models up to
 * the largest that fit; and the one that does not fit is refused without offering the CPU. */
START_TEST(config_stays_within_the_working_set)
{
	static const char *const ids[] = {"llama-3.1-8b", "Qwen/Qwen3-30B-A3B",
					  "meta-llama/Llama-3.1-70B-Instruct", "qwen2.5-72b"};
	char body[700];
	cJSON *a;

	for (size_t h = 0; h < N_MAC64; h++)
		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
			const cJSON *s;
			snprintf(body, sizeof(body), "{\"model\":\"%s\",\"hardware\":%s}", ids[i],
				 mac64[h]);
			ck_assert_int_eq(post(api_config, "/api/config", body, &a), 200);
			s = cJSON_GetObjectItemCaseSensitive(a, "settings");
			ck_assert_msg(num(s, "n_cpu_moe") == 0, "%s", body);
			assert_within(
				cJSON_GetObjectItemCaseSensitive(
					cJSON_GetObjectItemCaseSensitive(
						cJSON_GetObjectItemCaseSensitive(a, "metadata"),
						"estimate"),
					"memory"),
				WS64, body);
			cJSON_Delete(a);
		}
	/* A 16 GB M2 Pro (10.7 GiB of working set): an MoE whose experts would spill to a CPU
	 * on a PC fits whole at a smaller quant. */
	ck_assert_int_eq(post(api_config, "/api/config",
			      "{\"model\":\"Qwen/Qwen3-30B-A3B\",\"hardware\":{\"gpus\":[{\"name\":"
			      "\"Apple M2 Pro\"}],\"memory\":{\"total_bytes\":17179869184}}}",
			      &a),
			 200);
	ck_assert_double_eq(num(cJSON_GetObjectItemCaseSensitive(a, "settings"), "n_cpu_moe"), 0);
	assert_within(cJSON_GetObjectItemCaseSensitive(
			      cJSON_GetObjectItemCaseSensitive(
				      cJSON_GetObjectItemCaseSensitive(a, "metadata"), "estimate"),
			      "memory"),
		      32.0 / 3.0 * GIB, "Qwen3-30B-A3B on a 16 GB M2 Pro");
	cJSON_Delete(a);
	snprintf(body, sizeof(body), "{\"model\":\"mixtral-8x22b\",\"hardware\":%s}", mac64[0]);
	ck_assert_int_eq(post(api_config, "/api/config", body, &a), 422);
	ck_assert_ptr_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
					  cJSON_GetObjectItemCaseSensitive(a, "error"), "message")),
				  "on the CPU,"));
	cJSON_Delete(a);
}
END_TEST

/* /api/recommend on the Mac: every model it offers runs whole on the GPU within 48 GiB. */
START_TEST(recommend_stays_within_the_working_set)
{
	char body[700];
	cJSON *a;
	const cJSON *r;
	int n = 0;

	snprintf(body, sizeof(body), "{\"limit\":20,\"hardware\":%s}", mac64[1]);
	ck_assert_int_eq(post(api_recommend, "/api/recommend", body, &a), 200);
	cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(a, "recommendations"))
	{
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(r, "settings");
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(r, "estimate");
		ck_assert_double_le(num(e, "memory_total_bytes"), WS64);
		ck_assert_double_le(num(e, "utilization"), 1.0);
		ck_assert_double_eq(num(s, "n_cpu_moe"), 0);
		ck_assert_double_eq(num(s, "n_gpu_layers"), -1);
		n++;
	}
	ck_assert_int_gt(n, 3);
	cJSON_Delete(a);
}
END_TEST

Suite *machine_facts_suite(void)
{
	Suite *s = suite_create("machine_facts");
	TCase *tc = tcase_create("machine_facts");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_table_cpu_has_one_speed_whatever_is_listed);
	tcase_add_test(tc, the_table_cpu_runs_the_table_kernels);
	tcase_add_test(tc, the_cores_given_are_the_hosts);
	tcase_add_test(tc, an_unknown_cpu_is_said_unknown);
	tcase_add_test(tc, a_mac_has_one_budget_in_estimate_and_detect);
	tcase_add_test(tc, config_stays_within_the_working_set);
	tcase_add_test(tc, recommend_stays_within_the_working_set);
	suite_add_tcase(s, tc);
	return s;
}
