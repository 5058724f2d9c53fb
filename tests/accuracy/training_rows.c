/*
 * `make accuracy`: the fine-tuning memory table (tests/train_calib.c) with its median error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/accuracy/accuracy.h"
#include "tests/train_calib.h"

#define TRAIN_MEDIAN_TARGET 0.15

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int accuracy_training(const char *shared_dir)
{
	struct train_calib_result res[64];
	double errs[64];
	char err[256];
	int n = train_calib_run(shared_dir, res, 64, err, sizeof(err));

	if (n <= 0) {
		fprintf(stderr, "accuracy: training: %s\n", err);
		return 1;
	}
	printf("\nFine-tuning peak memory (training_memory.csv rows with stated settings)\n");
	printf("%-20s %-6s %-12s %9s %9s %8s\n", "model", "method", "framework", "measured",
	       "estimate", "error");
	for (int i = 0; i < n; i++) {
		printf("%-20s %-6s %-12s %9.2f %9.2f %+7.1f%%\n", res[i].model, res[i].method,
		       res[i].framework, res[i].measured_gib, res[i].estimate_gib,
		       res[i].error * 100);
		errs[i] = fabs(res[i].error);
	}
	qsort(errs, (size_t)n, sizeof(errs[0]), cmp_double);
	printf("Training: %d rows, median |error| %.1f%% (target %.0f%%)\n", n, errs[n / 2] * 100,
	       TRAIN_MEDIAN_TARGET * 100);
	return errs[n / 2] < TRAIN_MEDIAN_TARGET ? 0 : 1;
}
