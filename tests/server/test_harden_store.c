/*
 * Hardening of the store, against real SQLite files: every benchmark listing is read in order
 * from an index (no sort of a machine's whole history, which made an estimate's cost grow with
 * the stored runs), checked on SQLite's own query plan.
 */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "server/embedded.h"
#include "server/store/store.h"
#include "server/store/store_bench.h"
#include "tests/test.h"

/* Every combination of the listing's filters (model, hardware, since, cursor) is planned
 * without a temporary B-tree, and the estimator's question (one machine, newest first) walks
 * the hardware/time index. A plan that sorts would show "USE TEMP B-TREE FOR ORDER BY". */
START_TEST(test_history_plans_use_an_index)
{
	char *dir = t_mkdtemp(), *path = t_path(dir, "plan.db");
	struct rf_store *st = NULL;
	char err[256], plan[1024];

	ck_assert_int_eq(rf_store_open(path, rf_embed_migrations, &st, err, sizeof(err)), 0);
	for (unsigned shape = 0; shape < 16; shape++) {
		struct api_bench_filter f;

		memset(&f, 0, sizeof(f));
		if (shape & 1u)
			snprintf(f.model, sizeof(f.model), "qwen2.5-7b");
		if (shape & 2u)
			snprintf(f.hardware_fingerprint, sizeof(f.hardware_fingerprint), "hw-1");
		if (shape & 4u)
			snprintf(f.since, sizeof(f.since), "2025-01-01T00:00:00.000Z");
		if (shape & 8u) {
			snprintf(f.before_measured_at, sizeof(f.before_measured_at),
				 "2025-06-01T00:00:00.000Z");
			f.before_id = 99;
		}
		f.limit = 200;
		ck_assert_int_eq(rf_store_bench_explain(st, &f, plan, sizeof(plan)), 0);
		ck_assert_msg(strstr(plan, "USING") && !strstr(plan, "TEMP B-TREE"),
			      "shape %u: plan '%s' sorts or scans", shape, plan);
		if (shape == 2u)
			ck_assert_msg(strstr(plan, "benchmarks_by_hardware_time"),
				      "history plan '%s'", plan);
	}
	ck_assert_int_eq(rf_store_bench_explain(NULL, NULL, plan, sizeof(plan)),
			 RF_E_STORE_UNAVAILABLE);
	rf_store_close(st);
	t_rmtree(dir);
	free(dir);
	free(path);
}
END_TEST

Suite *harden_store_suite(void)
{
	Suite *s = suite_create("harden_store");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_history_plans_use_an_index);
	suite_add_tcase(s, tc);
	return s;
}
