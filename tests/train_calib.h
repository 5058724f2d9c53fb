/*
 * The fine-tuning calibration cases shared by the train_memory suite and `make accuracy`: rows
 * of ../shared/calibration/training_memory.csv whose settings can be stated, each model's
 * dimensions from model_arch.csv, and the estimate for each (see tests/core/test_train_memory.c
 * for why each setting was chosen).
 */
#ifndef RIGFIT_TESTS_TRAIN_CALIB_H
#define RIGFIT_TESTS_TRAIN_CALIB_H

#include <stddef.h>

struct train_calib_result {
	const char *model, *method, *framework;
	double measured_gib, estimate_gib, error, tolerance;
};

/* Estimates every case. Returns how many were written to out (at most cap), or -1 with a
 * reason in err when a calibration file or row is missing. */
int train_calib_run(const char *shared_dir, struct train_calib_result *out, int cap, char *err,
		    size_t errlen);

#endif
