/*
 * `make accuracy`: the fine-tuning tables (tests/train_calib.c): peak memory against measured
 * runs with its median error, the longest trainable context against Unsloth's published
 * tables (estimate / published within 0.8-1.1x), published Hugging Face peaks with
 * checkpointing on and off (within 0.85-1.15x where placed), and training tokens/s against torchtune's
 * (median error under 20%).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/accuracy/accuracy.h"
#include "tests/test.h"
#include "tests/train_calib.h"

#define TRAIN_MEDIAN_TARGET 0.15
#define TRAIN_SPEED_MEDIAN_TARGET 0.20

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The longest contexts; returns 1 when one is outside its band. */
static int accuracy_training_contexts(const char *data_dir)
{
	struct train_context_result res[32];
	char err[256];
	int n = train_calib_contexts(data_dir, res, 32, err, sizeof(err)), bad = 0;

	if (n <= 0) {
		fprintf(stderr, "accuracy: training contexts: %s\n", err);
		return 1;
	}
	printf("\nLongest fine-tuning context (Unsloth README, QLoRA rank 32, batch 1)\n");
	printf("%-14s %-8s %5s %10s %10s %6s\n", "model", "stack", "GiB", "published", "estimate",
	       "ratio");
	for (int i = 0; i < n; i++) {
		printf("%-14s %-8s %5.0f %10.0f %10.0f %6.2f\n", res[i].model, res[i].framework,
		       res[i].card_gib, res[i].published, res[i].estimate, res[i].ratio);
		bad |= res[i].ratio < 0.8 || res[i].ratio > res[i].hi;
	}
	return bad;
}

/* Published Hugging Face peaks (tests/fixtures/training/hf_peaks.csv); returns 1 when a row
 * marked in_band is outside 0.85-1.15x. */
static int accuracy_training_hf(const char *data_dir)
{
	struct train_hf_result res[32];
	char err[256];
	int n = train_calib_hf(t_src_dir(), data_dir, res, 32, err, sizeof(err)), bad = 0;

	if (n <= 0) {
		fprintf(stderr, "accuracy: Hugging Face peaks: %s\n", err);
		return 1;
	}
	printf("\nHugging Face peaks, checkpointing on and off (hf_peaks.csv; (gap): not placed)\n");
	for (int i = 0; i < n; i++) {
		printf("%-72s %s %7.2f %7.2f %6.2f\n", res[i].label,
		       res[i].in_band ? "     " : "(gap)", res[i].measured_gib, res[i].estimate_gib,
		       res[i].ratio);
		bad |= res[i].in_band && (res[i].ratio < 0.85 || res[i].ratio > 1.15);
	}
	return bad;
}

/* Training tokens/s; returns 1 when the median misses its target. */
static int accuracy_training_speed(const char *data_dir)
{
	struct train_speed_result res[16];
	double errs[16];
	char err[256];
	int n = train_calib_speeds(data_dir, t_src_dir(), res, 16, err, sizeof(err));

	if (n <= 0) {
		fprintf(stderr, "accuracy: training speed: %s\n", err);
		return 1;
	}
	printf("\nFine-tuning tokens/s (torchtune README)\n");
	for (int i = 0; i < n; i++) {
		printf("%-15s %-6s %-18s %8.0f %8.0f %+7.1f%%\n", res[i].model, res[i].method,
		       res[i].gpu, res[i].measured, res[i].estimate, res[i].error * 100);
		errs[i] = fabs(res[i].error);
	}
	qsort(errs, (size_t)n, sizeof(errs[0]), cmp_double);
	printf("Training speed: %d rows, median |error| %.1f%% (target %.0f%%)\n", n,
	       errs[n / 2] * 100, TRAIN_SPEED_MEDIAN_TARGET * 100);
	return errs[n / 2] < TRAIN_SPEED_MEDIAN_TARGET ? 0 : 1;
}

int accuracy_training(const char *data_dir)
{
	struct train_calib_result res[64];
	double errs[64];
	char err[256];
	int n = train_calib_run(data_dir, res, 64, err, sizeof(err));

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
	return (errs[n / 2] < TRAIN_MEDIAN_TARGET ? 0 : 1) | accuracy_training_contexts(data_dir) |
	       accuracy_training_hf(data_dir) | accuracy_training_speed(data_dir);
}
