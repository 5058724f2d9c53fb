/*
 * The one Check runner: every `Suite *NAME_suite(void)` in tests/ is collected by the Makefile
 * into suites.h and run here. Exit status is non-zero when any test failed.
 * `RIGFIT_SUITE=name` runs one suite only.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/test.h"

int main(void)
{
	const char *only = getenv("RIGFIT_SUITE");
	SRunner *sr = NULL;
	int failed;

#define SUITE(fn)                                                                                  \
	if (!only || !*only || strncmp(only, #fn, strlen(only)) == 0) {                            \
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
