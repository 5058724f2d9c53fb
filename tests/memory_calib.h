/*
 * The inference-memory estimate against measured data, shared by the unit tests
 * (tests/core/fit/test_estimate_memory.c, which assert the tolerances) and `make accuracy`
 * (tests/accuracy/memory_rows.c, which prints the tables and medians):
 *  - tests/data/calibration/llamacpp_memory.csv: the buffers llama.cpp logged (model on GPU and
 *    host, KV cache, compute), each row re-estimated from the catalog architecture and the
 *    row's settings;
 *  - tests/data/calibration/gguf_sizes.csv and a table of llama-bench sizes: GGUF tensor data
 *    of a quantization scheme, counted tensor by tensor with the scheme's mix.
 * Test code only.
 */
#ifndef RIGFIT_TESTS_MEMORY_CALIB_H
#define RIGFIT_TESTS_MEMORY_CALIB_H

#include <stdbool.h>

#include "core/fit/model.h"

/* Tolerances of issue 4. */
#define MC_WEIGHTS_TOL 0.03
#define MC_KV_TOL 0.01
#define MC_TOTAL_TOL 0.10
#define MC_SIZE_TOL 0.03
#define MC_TOTAL_MEDIAN_TOL 0.04

/* Loads the catalog from <src_dir>/profiles/models.json. Returns it (free with
 * model_catalog_free) or NULL with a message on stderr. */
struct model_catalog *mc_catalog_load(const char *src_dir);

struct mc_mem_row {
	int line; /* CSV line (header = 1) */
	char model[64];
	char quant[16];
	char device[48];
	bool usable;
	char reason[160];                 /* why a row or a column is not compared */
	double meas_weights, est_weights; /* MiB */
	bool has_kv;
	double meas_kv, est_kv;
	bool has_total; /* model + KV + compute */
	double meas_total, est_total;
};

/* Evaluates every row of llamacpp_memory.csv. Returns the row count and a malloc'd array in
 * *rows (free()), or -1 when the file cannot be read. */
int mc_memory_rows(const char *data_dir, const struct model_catalog *c,
		   struct mc_mem_row **rows /* OUT */);

struct mc_size_row {
	char origin[32]; /* "gguf_sizes.csv:LINE" or "llama-bench" */
	char model[48];
	char quant[24];
	bool usable;
	char reason[120];
	double meas_gib, est_gib;
};

/* Evaluates the GGUF size rows (gguf_sizes.csv, then the llama-bench table). Returns the count
 * and a malloc'd array in *rows (free()), or -1. */
int mc_size_rows(const char *data_dir, const struct model_catalog *c,
		 struct mc_size_row **rows /* OUT */);

/* Relative error (est - meas) / meas. */
double mc_rel(double est, double meas);

/* Median of v[0..n) (sorts v); 0 when n is 0. */
double mc_median(double *v, int n);

#endif
