/*
 * `make accuracy`: the estimator against measured runs. speed_rows.c turns the rows of
 * tests/data/calibration/llamacpp_tg_pp.csv into core/fit/speed.h observations (devices resolved
 * through profiles/devices.json, layer counts from model_arch.csv), prints per-row errors and
 * the medians in-sample, held out and leave-one-device-out, and refits the constants;
 * memory_rows.c does the same for the memory estimate. The speed unit tests
 * (tests/core/fit/test_speed.c) load the same rows through speed_rows_load().
 */
#ifndef RIGFIT_TESTS_ACCURACY_H
#define RIGFIT_TESTS_ACCURACY_H

#include <stdbool.h>
#include <stdio.h>

#include "core/hw/device.h"
#include "core/fit/speed.h"

/* Targets of issue 4 for the median relative error. */
#define ACCURACY_DECODE_TARGET 0.20
#define ACCURACY_PREFILL_TARGET 0.30

enum speed_row_use {
	ROW_FIT = 0, /* tg128 / pp512: fitted and measured */
	ROW_CHECK,   /* another test (tg512, ./main averages, fa=1): measured, never fitted */
	ROW_SKIPPED, /* not usable; reason says why */
};

struct speed_row {
	int line; /* line in the CSV file (the header is line 1) */
	char device[128];
	char model[96];
	char quant[48];
	char test[48];
	char device_id[DEVICE_ID_LEN];
	double measured;
	enum speed_row_use use;
	char reason[160];
	struct speed_obs obs; /* valid unless ROW_SKIPPED */
};

struct speed_rows {
	int n;
	struct speed_row *rows;
	struct device_table devices;
};

/* Loads the calibration rows. src_dir holds profiles/devices.json, data_dir holds
 * calibration/. Returns 0 and *out (free with speed_rows_free), or -1 with a message on stderr
 * when a file is missing or malformed. */
int speed_rows_load(const char *data_dir, const char *src_dir, struct speed_rows *out /* OUT */);

/* Frees r's rows and device table. NULL is a no-op. */
void speed_rows_free(struct speed_rows *r);

/* Builds the observations of rows with use == ROW_FIT (skipping every 4th of them when
 * odd_out is 1, keeping only every 4th when it is 2, all when 0; skipping device_id when not
 * NULL). Returns the count written to obs (at most cap). */
size_t speed_rows_obs(const struct speed_rows *r, int odd_out, const char *skip_device,
		      struct speed_obs *obs /* OUT */, size_t cap);

/* Relative error |estimate - measured| / measured of row with params, or -1 when it cannot be
 * estimated. */
double speed_row_error(const struct speed_row *row,
		       const struct speed_params params[SPEED_BACKEND_COUNT], double *estimate);

/* Median errors of the fitted rows by test with params: decode in *dec, prefill in *pre.
 * which: 0 all fit rows, 2 every 4th only. */
void speed_rows_medians(const struct speed_rows *r,
			const struct speed_params params[SPEED_BACKEND_COUNT], int which,
			double *dec /* OUT */, double *pre /* OUT */);

/* Medians when each device's rows are predicted by constants fitted without that device. */
int speed_rows_lodo(const struct speed_rows *r, double *dec /* OUT */, double *pre /* OUT */);

struct t_csv;

/* The partial-offload prefill rows, tests/fixtures/partial_offload_prefill.csv under src_dir
 * (free with t_csv_free), or NULL when missing. */
struct t_csv *speed_offload_csv(const char *src_dir);

/* The speed model's input for line r of that table, the device resolved in t. Returns 0 and
 * *out, or -1 when a column is missing or the device unknown. */
int speed_offload_input(const struct t_csv *c, int r, const struct device_table *t,
			struct speed_input *out /* OUT */);

/* Prints the speed tables and medians to f; refits and prints the constants. Returns 0 when
 * every median meets its target, 1 when one does not, -1 when the files cannot be read. */
int accuracy_speed(const char *data_dir, const char *src_dir, FILE *f);

/* The memory estimate against llamacpp_memory.csv and friends. Returns 0 when it met its
 * targets (or has nothing to check yet). */
int accuracy_memory(const char *data_dir);

/* Prints the fine-tuning memory table; returns 1 when its median misses the target. */
int accuracy_training(const char *data_dir);

#endif
