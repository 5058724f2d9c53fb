/*
 * The host measurement in the store (server/store/store_hostbench.c) against a real SQLite
 * file: a round trip, a new measurement replacing the old one of the same fingerprint, two
 * fingerprints side by side, figures the schema refuses, and a file reopened (a restart).
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "server/embedded.h"
#include "server/store/store.h"
#include "server/store/store_hostbench.h"
#include "tests/test.h"

static struct hw_host_bench figures(double bw, int64_t at)
{
	struct hw_host_bench b;

	memset(&b, 0, sizeof(b));
	b.measured = true;
	b.threads = 2;
	b.memory_bandwidth_gbs = bw;
	b.int8_gops_per_thread = 165.25;
	b.f32_gflops_per_thread = 45.5;
	snprintf(b.kernel_isa, sizeof(b.kernel_isa), "avx2");
	b.duration_ms = 1502.5;
	b.measured_at_ms = at;
	return b;
}

static struct rf_store *open_store(const char *path)
{
	struct rf_store *st = NULL;
	char err[256];

	ck_assert_int_eq(rf_store_open(path, rf_embed_migrations, &st, err, sizeof(err)), 0);
	return st;
}

START_TEST(round_trip_replace_and_reopen)
{
	char *dir = t_mkdtemp(), *path = t_path(dir, "rigfit.db");
	struct rf_store *st = open_store(path);
	struct hw_host_bench a = figures(27.5, 1764000000000), b = figures(31.0, 1764000100000);
	struct hw_host_bench got, untouched;

	memset(&got, 0x5a, sizeof(got));
	untouched = got;
	ck_assert_int_eq(rf_store_host_bench_get(st, "hw-aaaa", &got), RF_E_NOT_FOUND);
	ck_assert_mem_eq(&got, &untouched, sizeof(got)); /* not written on error */
	ck_assert_int_eq(rf_store_host_bench_put(st, "hw-aaaa", &a), 0);
	ck_assert_int_eq(rf_store_host_bench_get(st, "hw-aaaa", &got), 0);
	ck_assert(got.measured);
	ck_assert_int_eq(got.threads, 2);
	ck_assert_double_eq(got.memory_bandwidth_gbs, 27.5);
	ck_assert_double_eq(got.int8_gops_per_thread, 165.25);
	ck_assert_double_eq(got.f32_gflops_per_thread, 45.5);
	ck_assert_str_eq(got.kernel_isa, "avx2");
	ck_assert_double_eq(got.duration_ms, 1502.5);
	ck_assert_int_eq(got.measured_at_ms, 1764000000000);
	ck_assert_int_eq(got.method, 1); /* it did not say how it was measured: the oldest way */
	/* Another machine's row stands beside it; a new measurement replaces the old one. */
	ck_assert_int_eq(rf_store_host_bench_put(st, "hw-bbbb", &b), 0);
	b.method = 2;
	ck_assert_int_eq(rf_store_host_bench_put(st, "hw-aaaa", &b), 0);
	ck_assert_int_eq(rf_store_host_bench_get(st, "hw-aaaa", &got), 0);
	ck_assert_double_eq(got.memory_bandwidth_gbs, 31.0);
	ck_assert_int_eq(got.method, 2);
	ck_assert_int_eq(got.measured_at_ms, 1764000100000);
	rf_store_close(st);

	/* A restart: the same file, opened again, holds both. */
	st = open_store(path);
	ck_assert_int_eq(rf_store_host_bench_get(st, "hw-aaaa", &got), 0);
	ck_assert_double_eq(got.memory_bandwidth_gbs, 31.0);
	ck_assert_int_eq(rf_store_host_bench_get(st, "hw-bbbb", &got), 0);
	ck_assert_int_eq(got.measured_at_ms, 1764000100000);
	rf_store_close(st);
	t_rmtree(dir);
	free(dir);
	free(path);
}
END_TEST

/* Per quant class: the classes measured go in with their row and come back, a new measurement
 * replaces them all, and a row of an older method (none of its own) still reads. */
START_TEST(kernels_per_quant_class)
{
	char *dir = t_mkdtemp(), *path = t_path(dir, "rigfit.db");
	struct rf_store *st = open_store(path);
	struct hw_host_bench a = figures(40, 1764000000000), got;
	sqlite3 *raw;

	a.method = 3;
	a.kernel[HW_KERNEL_Q4_0] = (struct hw_kernel_rate){61.5, 40.25, "avx512_vnni"};
	a.kernel[HW_KERNEL_F16] = (struct hw_kernel_rate){72.0, 36.0, "avx512"};
	a.kernel[HW_KERNEL_BF16] = (struct hw_kernel_rate){9.5, 0, "scalar"};
	ck_assert_int_eq(rf_store_host_bench_put(st, "hw-aaaa", &a), 0);
	ck_assert_int_eq(rf_store_host_bench_get(st, "hw-aaaa", &got), 0);
	ck_assert_int_eq(got.method, 3);
	ck_assert_double_eq(got.kernel[HW_KERNEL_Q4_0].gops_per_thread, 61.5);
	ck_assert_double_eq(got.kernel[HW_KERNEL_Q4_0].avx2_gops_per_thread, 40.25);
	ck_assert_str_eq(got.kernel[HW_KERNEL_Q4_0].isa, "avx512_vnni");
	ck_assert_double_eq(got.kernel[HW_KERNEL_F16].gops_per_thread, 72.0);
	ck_assert_str_eq(got.kernel[HW_KERNEL_F16].isa, "avx512");
	ck_assert_double_eq(got.kernel[HW_KERNEL_BF16].avx2_gops_per_thread, 0);
	ck_assert_str_eq(got.kernel[HW_KERNEL_BF16].isa, "scalar");
	ck_assert_double_eq(got.kernel[HW_KERNEL_Q8_0].gops_per_thread, 0); /* not measured */
	ck_assert_str_eq(got.kernel[HW_KERNEL_Q8_0].isa, "");
	/* A new measurement replaces every class: one it did not measure is gone. */
	a.kernel[HW_KERNEL_Q4_0] = (struct hw_kernel_rate){0};
	a.kernel[HW_KERNEL_Q8_0] = (struct hw_kernel_rate){80, 70, "avx512_vnni"};
	ck_assert_int_eq(rf_store_host_bench_put(st, "hw-aaaa", &a), 0);
	ck_assert_int_eq(rf_store_host_bench_get(st, "hw-aaaa", &got), 0);
	ck_assert_double_eq(got.kernel[HW_KERNEL_Q4_0].gops_per_thread, 0);
	ck_assert_double_eq(got.kernel[HW_KERNEL_Q8_0].gops_per_thread, 80);
	/* A refused class (a rate the schema's CHECK refuses) stores nothing of the row. */
	a.kernel[HW_KERNEL_F16].avx2_gops_per_thread = 1;
	a.kernel[HW_KERNEL_F16].isa[0] = '\0';
	a.memory_bandwidth_gbs = 99;
	ck_assert_int_eq(rf_store_host_bench_put(st, "hw-aaaa", &a), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_store_host_bench_get(st, "hw-aaaa", &got), 0);
	ck_assert_double_eq(got.memory_bandwidth_gbs, 40);
	ck_assert_double_eq(got.kernel[HW_KERNEL_F16].gops_per_thread, 72.0);
	rf_store_close(st);

	/* A row as method 2 wrote it (before migration 0007): no classes, the rest as ever. */
	ck_assert_int_eq(sqlite3_open(path, &raw), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(raw,
				      "INSERT INTO host_bench (fingerprint, threads, "
				      "memory_bandwidth_gbs, int8_gops_per_thread, "
				      "f32_gflops_per_thread, kernel_isa, duration_ms, "
				      "measured_at_ms, method) VALUES ('hw-old', 4, 30, 150, 40, "
				      "'avx2', 1500, 1, 2)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(raw);
	st = open_store(path);
	ck_assert_int_eq(rf_store_host_bench_get(st, "hw-old", &got), 0);
	ck_assert_int_eq(got.method, 2);
	ck_assert_double_eq(got.int8_gops_per_thread, 150);
	for (int k = 0; k < HW_KERNEL_N; k++)
		ck_assert_double_eq(got.kernel[k].gops_per_thread, 0);
	rf_store_close(st);
	t_rmtree(dir);
	free(dir);
	free(path);
}
END_TEST

START_TEST(refused_figures)
{
	char *dir = t_mkdtemp(), *path = t_path(dir, "rigfit.db");
	struct rf_store *st = open_store(path);
	struct hw_host_bench b = figures(20, 1), got;

	/* What the schema's CHECKs refuse is the caller's value, and nothing is stored. */
	b.memory_bandwidth_gbs = 0;
	ck_assert_int_eq(rf_store_host_bench_put(st, "hw-x", &b), RF_E_INVALID_VALUE);
	b = figures(20, 1);
	b.threads = 0;
	ck_assert_int_eq(rf_store_host_bench_put(st, "hw-x", &b), RF_E_INVALID_VALUE);
	b = figures(20, 1);
	b.kernel_isa[0] = '\0';
	ck_assert_int_eq(rf_store_host_bench_put(st, "hw-x", &b), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_store_host_bench_get(st, "hw-x", &got), RF_E_NOT_FOUND);
	/* No fingerprint, no measurement, no store. */
	b = figures(20, 1);
	ck_assert_int_eq(rf_store_host_bench_put(st, "", &b), RF_E_INVALID_VALUE);
	b.measured = false;
	ck_assert_int_eq(rf_store_host_bench_put(st, "hw-x", &b), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_store_host_bench_put(NULL, "hw-x", &b), RF_E_STORE_UNAVAILABLE);
	ck_assert_int_eq(rf_store_host_bench_get(NULL, "hw-x", &got), RF_E_STORE_UNAVAILABLE);
	rf_store_close(st);
	t_rmtree(dir);
	free(dir);
	free(path);
}
END_TEST

Suite *store_host_bench_suite(void)
{
	Suite *s = suite_create("store_host_bench");
	TCase *tc = tcase_create("store_host_bench");

	tcase_add_test(tc, round_trip_replace_and_reopen);
	tcase_add_test(tc, kernels_per_quant_class);
	tcase_add_test(tc, refused_figures);
	suite_add_tcase(s, tc);
	return s;
}
