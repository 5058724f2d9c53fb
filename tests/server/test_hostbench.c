/*
 * The host measurement: rf_hostbench_run's figures, `rigfit bench host`, and the daemon, which
 * measures this machine once per hardware fingerprint in a worker and then reports the read
 * bandwidth in GET /api/hardware and estimates on it with basis "measured_host". The other
 * daemon tests run with RIGFIT_NO_HOST_BENCH=1 (the Makefile's test environment), which the
 * flag's own check below relies on too.
 */
#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/hw/hw.h"
#include "server/embedded.h"
#include "server/detect/probes.h"
#include "server/hostbench.h"
#include "server/store/store.h"
#include "server/store/store_hostbench.h"
#include "tests/core/fit/cpu/oracle.h"
#include "tests/server/harness.h"
#include "tests/test.h"

START_TEST(measures_bandwidth_and_kernels)
{
	struct rf_hostbench h;
	const struct rf_detect_opts here = {.root = "/"};
	int64_t want;

	ck_assert_int_eq(rf_hostbench_run(2, 300, &h), 0);
	ck_assert_int_eq(h.threads, 2);
	ck_assert(h.memory_bandwidth_gbs > 0);
	/* Read over this host's sizing rule (pages aside; the room may move a little between the
	 * run and this probe, where it binds). */
	want = rf_hostbench_buffer_bytes(rf_probe_largest_cache(&here), rf_probe_memory_room(&here),
					 2);
	ck_assert_msg(h.bandwidth_bytes > want * 9 / 10 && h.bandwidth_bytes <= want * 11 / 10,
		      "read over %lld bytes, the rule gives %lld", (long long)h.bandwidth_bytes,
		      (long long)want);
	ck_assert(h.bandwidth_bytes >= INT64_C(32) << 20);
	ck_assert(h.int8_gops_per_thread > 0);
	ck_assert(h.f32_gflops_per_thread > 0);
	ck_assert_ptr_nonnull(h.kernel_isa);
	/* Bounds are clamped, never trusted. */
	ck_assert_int_eq(rf_hostbench_run(-5, 1, &h), 0);
	ck_assert_int_eq(h.threads, 1);
}
END_TEST

/* The bandwidth is read over more memory than any cache holds and no more than the process may
 * take. A 2-vCPU share of a server with a 480 MiB L3 read 34-43 GB/s over the 128 MiB the
 * measurement once took, and 17.5 GB/s, its memory's, over 512 MiB and more: the caches sizes
 * come from sysfs (a recorded root here), the room from the same probe the scan runs. */
START_TEST(bandwidth_is_read_past_the_caches)
{
	char *root = t_mkdtemp();
	const struct rf_detect_opts at = {.root = root};
	const struct rf_detect_opts container = {
		.root = "tests/fixtures/machines/container-docker-cgroup2-4g-2cpu"};
	struct hw_snapshot *s;
	const int64_t mib = INT64_C(1) << 20;

	ck_assert_int_eq(rf_probe_largest_cache(&at), HW_UNKNOWN);
	t_put(root, "sys/devices/system/cpu/cpu0/cache/index0/size", "48K\n");
	t_put(root, "sys/devices/system/cpu/cpu0/cache/index1/size", "32K\n");
	t_put(root, "sys/devices/system/cpu/cpu0/cache/index2/size", "2048K\n");
	t_put(root, "sys/devices/system/cpu/cpu0/cache/index3/size", "491520K\n");
	ck_assert_int_eq(rf_probe_largest_cache(&at), 480 * mib);
	/* The scan's own figure for what a process may still take (here a 4 GiB cgroup). */
	s = t_scan(container.root);
	ck_assert(s->memory.available_bytes > 0);
	ck_assert_int_eq(rf_probe_memory_room(&container), s->memory.available_bytes);
	free(s);

	ck_assert_int_eq(rf_hostbench_buffer_bytes(480 * mib, HW_UNKNOWN, 2), 1920 * mib);
	ck_assert_int_eq(rf_hostbench_buffer_bytes(32 * mib, 64 * 1024 * mib, 2), 512 * mib);
	ck_assert_int_eq(rf_hostbench_buffer_bytes(HW_UNKNOWN, HW_UNKNOWN, 2), 512 * mib);
	ck_assert_int_eq(rf_hostbench_buffer_bytes(1152 * mib, HW_UNKNOWN, 192), 4096 * mib);
	/* A 1 GiB container takes a quarter of its room; many threads keep 16 MiB each. */
	ck_assert_int_eq(rf_hostbench_buffer_bytes(480 * mib, 1024 * mib, 2), 256 * mib);
	ck_assert_int_eq(rf_hostbench_buffer_bytes(480 * mib, 1024 * mib, 64), 1024 * mib);
	ck_assert_int_eq(rf_hostbench_buffer_bytes(480 * mib, HW_UNKNOWN, 0), 1920 * mib);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(bench_host_prints_the_figures)
{
	const char *argv[] = {t_bin(), "bench", "host", "--budget-ms", "300", NULL};
	const char *bad[] = {t_bin(), "bench", "host", "--threads", "0", NULL};
	char *out = NULL, *err = NULL;
	cJSON *j;

	ck_assert_int_eq(t_run(argv, &out, &err, 30000), 0);
	j = cJSON_Parse(out);
	ck_assert_msg(j != NULL, "not JSON: %s", out);
	ck_assert(cJSON_GetObjectItem(j, "threads")->valuedouble >= 1);
	ck_assert(cJSON_GetObjectItem(j, "memory_bandwidth_gbs")->valuedouble > 0);
	ck_assert(cJSON_GetObjectItem(j, "int8_gops_per_thread")->valuedouble > 0);
	ck_assert(cJSON_GetObjectItem(j, "f32_gflops_per_thread")->valuedouble > 0);
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(j, "kernel_isa")));
	ck_assert_ptr_nonnull(
		strstr(cJSON_GetStringValue(cJSON_GetObjectItem(j, "fingerprint")), "hw-"));
	cJSON_Delete(j);
	free(out);
	free(err);
	out = err = NULL;
	ck_assert_int_eq(t_run(bad, &out, &err, 30000), 2);
	ck_assert_ptr_nonnull(strstr(err, "--threads"));
	free(out);
	free(err);
}
END_TEST

/* GET path's JSON from the daemon on port. */
static cJSON *get_json(int port, const char *method, const char *path, const char *body)
{
	struct t_resp r;
	cJSON *j;

	ck_assert_int_eq(t_http(port, method, path,
				body ? "Content-Type: application/json\r\n" : NULL, body,
				body ? strlen(body) : 0, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	j = cJSON_Parse(r.body);
	ck_assert_ptr_nonnull(j);
	t_resp_free(&r);
	return j;
}

static double cpu_bandwidth(int port)
{
	cJSON *j = get_json(port, "GET", "/api/hardware", NULL);
	const cJSON *bw =
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "cpu"), "memory_bandwidth_gbs");
	double v = cJSON_IsNumber(bw) ? bw->valuedouble : -1;

	cJSON_Delete(j);
	return v;
}

/* GET /api/hardware's host_bench object (a copy; NULL when it is null). */
static cJSON *host_bench(int port)
{
	cJSON *j = get_json(port, "GET", "/api/hardware", NULL);
	cJSON *hb = cJSON_DetachItemFromObject(j, "host_bench");

	ck_assert_ptr_nonnull(hb); /* always there: null or the figures */
	cJSON_Delete(j);
	if (cJSON_IsNull(hb)) {
		cJSON_Delete(hb);
		return NULL;
	}
	return hb;
}

/* Starts d with extra and returns /api/hardware's host_bench once the daemon has measured this
 * host (the measurement runs after the first scan; the scan it triggers publishes it). */
static cJSON *start_and_wait_for_the_measurement(struct t_daemon *d, const char *const *extra)
{
	cJSON *hb = NULL;

	unsetenv("RIGFIT_NO_HOST_BENCH");
	t_daemon_start(d, extra);
	t_wait_scan(d->port);
	for (int i = 0; i < 600 && !hb; i++) {
		usleep(100 * 1000);
		hb = host_bench(d->port);
	}
	ck_assert_msg(hb != NULL, "no host_bench in /api/hardware");
	return hb;
}

/* POST /api/estimate body stands on this host's measurement. */
static void assert_measured_host(int port, const char *body)
{
	cJSON *est = get_json(port, "POST", "/api/estimate", body);

	ck_assert_str_eq(cJSON_GetStringValue(
				 cJSON_GetObjectItem(cJSON_GetObjectItem(est, "speed"), "basis")),
			 "measured_host");
	cJSON_Delete(est);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Stops d after checking that it read this host's figures from the store and measured none. */
static void stop_having_read_the_store(struct t_daemon *d)
{
	char *log;

	usleep(300 * 1000);
	log = t_daemon_log(d);
	ck_assert_int_eq(count(log, "host measured in"), 0);
	ck_assert_int_eq(count(log, "read from the store"), 1);
	free(log);
	t_daemon_stop(d);
}

START_TEST(the_daemon_measures_this_host_once)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "keep.db");
	const char *extra[] = {"--db", db, NULL};
	cJSON *hb = NULL, *again;
	char *log;
	/* The daemon's profiles folder is empty: the model as a pasted config.json. */
	const char *body = "{\"model\":{\"architecture\":{\"model_type\":\"llama\","
			   "\"hidden_size\":2048,\"num_hidden_layers\":16,"
			   "\"num_attention_heads\":32,\"num_key_value_heads\":8,"
			   "\"intermediate_size\":8192,\"vocab_size\":128256}},"
			   "\"quant\":\"Q4_0\",\"n_ctx\":2048}";

	hb = start_and_wait_for_the_measurement(&d, extra);
	ck_assert(cJSON_GetObjectItem(hb, "memory_bandwidth_gbs")->valuedouble > 0);
	ck_assert(cJSON_GetObjectItem(hb, "int8_gops_per_thread")->valuedouble > 0);
	ck_assert(cJSON_GetObjectItem(hb, "f32_gflops_per_thread")->valuedouble > 0);
	ck_assert(cJSON_GetObjectItem(hb, "threads")->valuedouble >= 1);
	ck_assert_ptr_nonnull(cJSON_GetStringValue(cJSON_GetObjectItem(hb, "kernel_isa")));
	ck_assert_double_eq(cpu_bandwidth(d.port),
			    cJSON_GetObjectItem(hb, "memory_bandwidth_gbs")->valuedouble);
	assert_measured_host(d.port, body);
	/* Once per fingerprint: a rescan does not measure again. */
	{
		struct t_resp r;
		ck_assert_int_eq(t_http(d.port, "POST", "/api/hardware/rescan", NULL, "", 0, &r),
				 0);
		t_resp_free(&r);
	}
	usleep(500 * 1000);
	log = t_daemon_log(&d);
	ck_assert_int_eq(count(log, "host measured in"), 1);
	free(log);
	t_daemon_stop(&d);

	/* A restart on the same machine reads the figures back from the store: the same
	 * measurement (its time included), published with the first scan, and no new one. */
	t_daemon_start(&d, extra);
	t_wait_scan(d.port);
	again = host_bench(d.port);
	ck_assert_msg(again != NULL, "the stored figures were not read back");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(again, "measured_at")),
			 cJSON_GetStringValue(cJSON_GetObjectItem(hb, "measured_at")));
	ck_assert_double_eq(cJSON_GetObjectItem(again, "int8_gops_per_thread")->valuedouble,
			    cJSON_GetObjectItem(hb, "int8_gops_per_thread")->valuedouble);
	assert_measured_host(d.port, body);
	stop_having_read_the_store(&d);
	cJSON_Delete(hb);
	cJSON_Delete(again);
	t_rmtree(dir);
	free(dir);
	free(db);
}
END_TEST

/* rigfit bench host --save replaces the figures the daemon keeps for this machine (a first
 * measurement taken while the host was busy stays wrong otherwise): the daemon reads the saved
 * ones at its start and does not measure again. */
START_TEST(bench_host_save_replaces_the_stored_figures)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "saved.db");
	const char *save[] = {t_bin(),  "bench", "host", "--budget-ms", "300",
			      "--save", "--db",  db,     NULL};
	const char *bad[] = {t_bin(), "bench", "host", "--save", "--db", NULL};
	const char *extra[] = {"--db", db, NULL};
	char *out = NULL, *err = NULL;
	cJSON *j, *hb;

	ck_assert_int_eq(t_run(save, &out, &err, 30000), 0);
	j = cJSON_Parse(out);
	ck_assert_msg(j != NULL, "not JSON: %s", out);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "saved_to")), db);
	free(out);
	free(err);
	out = err = NULL;
	ck_assert_int_eq(t_run(bad, &out, &err, 30000), 2);
	ck_assert_ptr_nonnull(strstr(err, "--db"));
	free(out);
	free(err);

	unsetenv("RIGFIT_NO_HOST_BENCH");
	t_daemon_start(&d, extra);
	t_wait_scan(d.port);
	hb = host_bench(d.port);
	ck_assert_msg(hb != NULL, "the saved figures were not read");
	ck_assert_double_eq(cJSON_GetObjectItem(hb, "int8_gops_per_thread")->valuedouble,
			    cJSON_GetObjectItem(j, "int8_gops_per_thread")->valuedouble);
	ck_assert_double_eq(cJSON_GetObjectItem(hb, "memory_bandwidth_gbs")->valuedouble,
			    cJSON_GetObjectItem(j, "memory_bandwidth_gbs")->valuedouble);
	stop_having_read_the_store(&d);
	cJSON_Delete(hb);
	cJSON_Delete(j);
	t_rmtree(dir);
	free(dir);
	free(db);
}
END_TEST

/* Figures stored by an older way of measuring (migration 0006: method 1, 64-bit reads) are
 * measured again, and the new ones replace them. */
START_TEST(an_older_measurement_is_measured_again)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "old.db");
	const char *save[] = {t_bin(),  "bench", "host", "--budget-ms", "300",
			      "--save", "--db",  db,     NULL};
	const char *extra[] = {"--db", db, NULL};
	char *out = NULL, *err = NULL, *log;
	sqlite3 *raw;
	cJSON *hb = NULL;

	ck_assert_int_eq(t_run(save, &out, &err, 30000), 0);
	free(out);
	free(err);
	ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(raw, "UPDATE host_bench SET method = 1", NULL, NULL, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_changes(raw), 1);
	sqlite3_close(raw);

	hb = start_and_wait_for_the_measurement(&d, extra);
	log = t_daemon_log(&d);
	ck_assert_int_eq(count(log, "host measured in"), 1);
	ck_assert_int_eq(count(log, "read from the store"), 0);
	free(log);
	t_daemon_stop(&d);
	ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
	{
		sqlite3_stmt *s = NULL;
		ck_assert_int_eq(sqlite3_prepare_v2(raw, "SELECT method FROM host_bench", -1, &s,
						    NULL),
				 SQLITE_OK);
		ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
		ck_assert_int_eq(sqlite3_column_int(s, 0), RF_HOSTBENCH_METHOD);
		sqlite3_finalize(s);
	}
	sqlite3_close(raw);
	cJSON_Delete(hb);
	t_rmtree(dir);
	free(dir);
	free(db);
}
END_TEST

/* One binary on one machine gives one answer: `rigfit estimate` measures the host once into
 * the store (saying so on stderr), reads it back the next time, and the daemon started on that
 * store answers the same request with the same figures and basis. A question about a machine
 * the request describes (--gpu, a hardware profile) measures nothing and stores nothing. */
START_TEST(the_cli_and_the_daemon_answer_from_one_measurement)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "keep.db"), *req = t_path(dir, "req.json");
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *extra[] = {"--db", db, "--profiles", profiles, NULL};
	const char *argv[] = {t_bin(),    "estimate", "--json",     req,      "--db", db,
			      "--format", "json",     "--profiles", profiles, NULL};
	const char *body = "{\"model\":\"llama-3.2-1b\",\"quant\":\"Q4_0\",\"n_ctx\":4096}";
	const char *keys[] = {"decode_tokens_per_s", "prefill_tokens_per_s", "basis",
			      "decode_basis", "prefill_basis"};
	char *out = NULL, *err = NULL, *log;
	cJSON *cli, *again, *served;

	ck_assert_int_eq(t_write_file(req, body, strlen(body)), 0);
	unsetenv("RIGFIT_NO_HOST_BENCH");
	{
		const char *gpu[] = {t_bin(), "estimate", "llama-3.2-1b", "--gpu",  "RTX 4090",
				     "--db",  db,         "--profiles",   profiles, NULL};
		const char *prof[] = {t_bin(),
				      "estimate",
				      "llama-3.2-1b",
				      "--hardware-profile",
				      "rtx-4090",
				      "--db",
				      db,
				      "--profiles",
				      profiles,
				      NULL};
		ck_assert_msg(t_run(gpu, &out, &err, 60000) == 0, "%s", err);
		ck_assert_msg(strstr(err, "measuring") == NULL, "%s", err);
		free(out);
		free(err);
		ck_assert_msg(t_run(prof, &out, &err, 60000) == 0, "%s", err);
		ck_assert_msg(strstr(err, "measuring") == NULL, "%s", err);
		free(out);
		free(err);
	}
	/* This host's question measures it, as nothing was stored above. */
	ck_assert_msg(t_run(argv, &out, &err, 60000) == 0, "%s", err);
	ck_assert_msg(strstr(err, "measuring this host once") != NULL, "%s", err);
	cli = cJSON_Parse(out);
	ck_assert_ptr_nonnull(cli);
	free(out);
	free(err);
	ck_assert_str_eq(cJSON_GetStringValue(
				 cJSON_GetObjectItem(cJSON_GetObjectItem(cli, "speed"), "basis")),
			 "measured_host");
	/* The second command reads the stored figures: no measurement, the same speed. */
	ck_assert_msg(t_run(argv, &out, &err, 60000) == 0, "%s", err);
	ck_assert_msg(strstr(err, "measuring") == NULL, "%s", err);
	again = cJSON_Parse(out);
	free(out);
	free(err);
	/* The daemon on that store: the same figures, read back, none measured. */
	t_daemon_start(&d, extra);
	t_wait_scan(d.port);
	served = get_json(d.port, "POST", "/api/estimate", body);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *a = cJSON_GetObjectItem(cJSON_GetObjectItem(cli, "speed"), keys[i]);
		const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(again, "speed"), keys[i]);
		const cJSON *c = cJSON_GetObjectItem(cJSON_GetObjectItem(served, "speed"), keys[i]);
		ck_assert_msg(cJSON_Compare(a, b, true) && cJSON_Compare(a, c, true),
			      "speed.%s: cli %s, cli again %s, daemon %s", keys[i],
			      cJSON_PrintUnformatted(a), cJSON_PrintUnformatted(b),
			      cJSON_PrintUnformatted(c));
	}
	ck_assert(cJSON_Compare(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cli, "memory"), "weights_bytes"),
		cJSON_GetObjectItem(cJSON_GetObjectItem(served, "memory"), "weights_bytes"), true));
	usleep(300 * 1000);
	log = t_daemon_log(&d);
	ck_assert_int_eq(count(log, "host measured in"), 0);
	free(log);
	t_daemon_stop(&d);
	cJSON_Delete(cli);
	cJSON_Delete(again);
	cJSON_Delete(served);
	setenv("RIGFIT_NO_HOST_BENCH", "1", 1);
	t_rmtree(dir);
	free(dir);
	free(db);
	free(req);
	free(profiles);
}
END_TEST

/* `rigfit bench host --save` prints each quant class's kernel (its instructions and rate, and
 * AVX2's) and the store holds what it printed, for the fingerprint it printed. */
START_TEST(bench_host_kernels_round_trip_the_store)
{
	char *dir = t_mkdtemp(), *db = t_path(dir, "k.db");
	const char *save[] = {t_bin(),  "bench", "host", "--budget-ms", "300",
			      "--save", "--db",  db,     NULL};
	char *out = NULL, *err = NULL, errbuf[256];
	struct rf_store *st = NULL;
	struct hw_host_bench got;
	const cJSON *ks;
	cJSON *j;

	ck_assert_int_eq(t_run(save, &out, &err, 30000), 0);
	j = cJSON_Parse(out);
	ck_assert_msg(j != NULL, "not JSON: %s", out);
	ks = cJSON_GetObjectItem(j, "kernels");
	ck_assert_ptr_nonnull(ks);
	ck_assert_int_eq(rf_store_open(db, rf_embed_migrations, &st, errbuf, sizeof(errbuf)), 0);
	ck_assert_int_eq(rf_store_host_bench_get(
				 st, cJSON_GetStringValue(cJSON_GetObjectItem(j, "fingerprint")),
				 &got),
			 0);
	ck_assert_int_eq(got.method, RF_HOSTBENCH_METHOD);
	for (int k = 0; k < HW_KERNEL_N; k++) {
		const cJSON *one = cJSON_GetObjectItem(ks, hw_kernel_name(k));
		const cJSON *avx2 = cJSON_GetObjectItem(one, "avx2_gops_per_thread");
		/* Every class has a kernel on every CPU (a plain loop at the least). */
		ck_assert_msg(one != NULL, "no %s in %s", hw_kernel_name(k), out);
		ck_assert(cJSON_GetObjectItem(one, "gops_per_thread")->valuedouble > 0);
		/* JSON prints 15 significant digits where they read back the same. */
		ck_assert_double_eq_tol(got.kernel[k].gops_per_thread,
					cJSON_GetObjectItem(one, "gops_per_thread")->valuedouble,
					got.kernel[k].gops_per_thread * 1e-12);
		ck_assert_str_eq(got.kernel[k].isa,
				 cJSON_GetStringValue(cJSON_GetObjectItem(one, "isa")));
		ck_assert_double_eq_tol(got.kernel[k].avx2_gops_per_thread,
					cJSON_IsNumber(avx2) ? avx2->valuedouble : 0,
					got.kernel[k].avx2_gops_per_thread * 1e-12);
	}
	rf_store_close(st);
	cJSON_Delete(j);
	free(out);
	free(err);
	t_rmtree(dir);
	free(dir);
	free(db);
}
END_TEST

/* `rigfit estimate` on this host with run_bodies' stored measurement (fabricated, in the store:
 * the CLI reads a current one instead of measuring) and the speed it answers. */
static cJSON *estimate_on_stored(const char *dir, const char *fp, double q4_best)
{
	char *db = t_path(dir, q4_best > 50 ? "fast.db" : "plain.db"), *req = t_path(dir, "r.json");
	char *profiles = t_path(t_src_dir(), "profiles"), *out = NULL, *err = NULL;
	const char *argv[] = {t_bin(),    "estimate", "--json",     req,      "--db", db,
			      "--format", "json",     "--profiles", profiles, NULL};
	const char *body = "{\"model\":\"llama-3.2-1b\",\"quant\":\"Q4_0\",\"n_ctx\":4096}";
	struct rf_store *st = NULL;
	struct hw_host_bench b;
	char errbuf[256];
	cJSON *est;

	memset(&b, 0, sizeof(b));
	b.measured = true;
	b.threads = 2;
	b.memory_bandwidth_gbs = 2000; /* the kernels, not memory, hold decode */
	b.int8_gops_per_thread = 160;
	b.f32_gflops_per_thread = 45;
	snprintf(b.kernel_isa, sizeof(b.kernel_isa), "avx2");
	b.duration_ms = 1500;
	b.measured_at_ms = 1764000000000;
	b.method = RF_HOSTBENCH_METHOD;
	b.kernel[HW_KERNEL_Q4_0] = (struct hw_kernel_rate){q4_best, 40, "avx512_vnni"};
	b.kernel[HW_KERNEL_Q8_0] = (struct hw_kernel_rate){60, 40, "avx512_vnni"};
	b.kernel[HW_KERNEL_F16] = (struct hw_kernel_rate){70, 35, "avx512"};
	b.kernel[HW_KERNEL_BF16] = (struct hw_kernel_rate){140, 18, "avx512_bf16"};
	ck_assert_int_eq(rf_store_open(db, rf_embed_migrations, &st, errbuf, sizeof(errbuf)), 0);
	ck_assert_int_eq(rf_store_host_bench_put(st, fp, &b), 0);
	rf_store_close(st);
	ck_assert_int_eq(t_write_file(req, body, strlen(body)), 0);
	ck_assert_msg(t_run(argv, &out, &err, 60000) == 0, "%s", err);
	ck_assert_msg(strstr(err, "measuring") == NULL, "%s", err); /* read, not measured */
	est = cJSON_Parse(out);
	ck_assert_ptr_nonnull(est);
	free(out);
	free(err);
	free(db);
	free(req);
	free(profiles);
	return est;
}

/* Whether the answer's assumptions hold needle. */
static bool assumes(const cJSON *est, const char *needle)
{
	const cJSON *a;

	cJSON_ArrayForEach(a,
			   cJSON_GetObjectItem(est, "assumptions")) if (cJSON_IsString(a) &&
									strstr(a->valuestring,
									       needle)) return true;
	return false;
}

/* The estimate costs Q4_0 weights with the stored Q4_0 block dot, at the instructions the host's
 * class runs: on an AVX-512 VNNI host its VNNI rate (a faster one, a faster decode), on an AVX2
 * host its AVX2 rate (the VNNI figure does not apply), and `assumptions` names it; an Arm host
 * has no x86 kernel to take (the table stands). Independent of which class this host is. */
START_TEST(the_estimate_costs_each_weight_type_with_its_kernel)
{
	const char *bench[] = {t_bin(), "bench", "host", "--budget-ms", "300", NULL};
	char *dir = t_mkdtemp(), *out = NULL, *err = NULL;
	uint32_t bits = oracle_host_bits();
	cJSON *j, *fast, *plain;
	double dfast, dplain;

	ck_assert_int_eq(t_run(bench, &out, &err, 30000), 0);
	j = cJSON_Parse(out);
	ck_assert_ptr_nonnull(j);
	unsetenv("RIGFIT_NO_HOST_BENCH");
	fast = estimate_on_stored(dir, cJSON_GetStringValue(cJSON_GetObjectItem(j, "fingerprint")),
				  80);
	plain = estimate_on_stored(dir, cJSON_GetStringValue(cJSON_GetObjectItem(j, "fingerprint")),
				   40);
	setenv("RIGFIT_NO_HOST_BENCH", "1", 1);
	dfast = cJSON_GetObjectItem(cJSON_GetObjectItem(fast, "speed"), "decode_tokens_per_s")
			->valuedouble;
	dplain = cJSON_GetObjectItem(cJSON_GetObjectItem(plain, "speed"), "decode_tokens_per_s")
			 ->valuedouble;
	if ((bits & HW_ISA(AVX512_VNNI)) && (bits & HW_ISA(AVX2))) {
		ck_assert_msg(assumes(fast, "q4_legacy at the measured q4_0 dot (avx512_vnni, "
					    "2.00x AVX2)"),
			      "%s",
			      cJSON_PrintUnformatted(cJSON_GetObjectItem(fast, "assumptions")));
		ck_assert_msg(dfast > dplain * 1.2, "decode %.2f against %.2f", dfast, dplain);
	} else if (bits & HW_ISA(AVX2)) {
		ck_assert_msg(
			assumes(fast, "q4_legacy at the measured q4_0 dot (avx2, 1.00x AVX2)"),
			"%s", cJSON_PrintUnformatted(cJSON_GetObjectItem(fast, "assumptions")));
		ck_assert_double_eq(dfast, dplain);
	} else {
		ck_assert(!assumes(fast, "measured q4_0 dot"));
	}
	cJSON_Delete(j);
	cJSON_Delete(fast);
	cJSON_Delete(plain);
	free(out);
	free(err);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(no_host_bench_turns_it_off)
{
	struct t_daemon d;
	const char *extra[] = {"--no-host-bench", NULL};
	char *log;

	unsetenv("RIGFIT_NO_HOST_BENCH");
	t_daemon_start(&d, extra);
	t_wait_scan(d.port);
	usleep(300 * 1000);
	ck_assert(cpu_bandwidth(d.port) < 0);
	ck_assert_ptr_null(host_bench(d.port));
	log = t_daemon_log(&d);
	ck_assert_ptr_null(strstr(log, "host measured"));
	free(log);
	t_daemon_stop(&d);
}
END_TEST

Suite *hostbench_suite(void)
{
	Suite *s = suite_create("hostbench");
	TCase *tc = tcase_create("hostbench");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, measures_bandwidth_and_kernels);
	tcase_add_test(tc, bandwidth_is_read_past_the_caches);
	tcase_add_test(tc, bench_host_prints_the_figures);
	tcase_add_test(tc, the_daemon_measures_this_host_once);
	tcase_add_test(tc, bench_host_save_replaces_the_stored_figures);
	tcase_add_test(tc, an_older_measurement_is_measured_again);
	tcase_add_test(tc, no_host_bench_turns_it_off);
	tcase_add_test(tc, bench_host_kernels_round_trip_the_store);
	tcase_add_test(tc, the_estimate_costs_each_weight_type_with_its_kernel);
	tcase_add_test(tc, the_cli_and_the_daemon_answer_from_one_measurement);
	suite_add_tcase(s, tc);
	return s;
}
