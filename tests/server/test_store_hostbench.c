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
	tcase_add_test(tc, refused_figures);
	suite_add_tcase(s, tc);
	return s;
}
