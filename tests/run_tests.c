/*
 * The one Check runner: every `Suite *NAME_suite(void)` in tests/ is collected by the Makefile
 * into suites.h and run here. Exit status is non-zero when any test failed.
 * `RIGFIT_SUITE=name` runs the suites whose function name starts with name;
 * `RIGFIT_SHARD=i/n` runs every n-th suite from the i-th (0-based), so that n processes run
 * the whole set between them (tests/tools/run_unit.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_alloc.h"
#include "tests/test.h"

int main(void)
{
	const char *only = getenv("RIGFIT_SUITE"), *shard = getenv("RIGFIT_SHARD");
	SRunner *sr = NULL;
	int failed, index = 0, shard_i = 0, shard_n = 1;

	if (shard && *shard &&
	    (sscanf(shard, "%d/%d", &shard_i, &shard_n) != 2 || shard_n < 1 || shard_n > 64 ||
	     shard_i < 0 || shard_i >= shard_n)) {
		fprintf(stderr, "RIGFIT_SHARD must be i/n with 0 <= i < n <= 64, not '%s'\n",
			shard);
		return 2;
	}
	/* The product's cJSON allocator (and its request arenas), as the daemon installs it. */
	api_json_init();
#define SUITE(fn)                                                                                  \
	if ((!only || !*only || strncmp(only, #fn, strlen(only)) == 0) &&                          \
	    index++ % shard_n == shard_i) {                                                        \
		if (!sr)                                                                           \
			sr = srunner_create(fn());                                                 \
		else                                                                               \
			srunner_add_suite(sr, fn());                                               \
	}
#include "suites.h"
#undef SUITE
	if (!sr)
		return 2;
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
