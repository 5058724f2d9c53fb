/*
 * The fine-tuning calibration cases shared by the train_memory suite and `make accuracy`: rows
 * of tests/data/calibration/training_memory.csv whose settings can be stated, the published
 * Hugging Face peaks of tests/fixtures/training/hf_peaks.csv, each model's
 * dimensions from model_arch.csv, and the estimate for each (see tests/core/fit/test_train_memory.c
 * for why each setting was chosen).
 */
#ifndef RIGFIT_TESTS_TRAIN_CALIB_H
#define RIGFIT_TESTS_TRAIN_CALIB_H

#include <stdbool.h>
#include <stddef.h>

#include "core/fit/train_speed.h"

struct train_calib_result {
	const char *model, *method, *framework;
	double measured_gib, estimate_gib, error, tolerance;
};

/* Estimates every case. Returns how many were written to out (at most cap), or -1 with a
 * reason in err when a calibration file or row is missing. */
int train_calib_run(const char *data_dir, struct train_calib_result *out, int cap, char *err,
		    size_t errlen);

/* One published longest trainable context: the sequence length a framework reached on a card of
 * card_gib, against the estimate's largest seq_len that fits the same card. */
struct train_context_result {
	const char *model, *framework;
	double card_gib;
	double published, estimate, ratio; /* ratio = estimate / published */
	double hi;                         /* the largest ratio allowed (the smallest is 0.8) */
};

/* Estimates every published longest context (Unsloth's README tables: Llama 3.1 8B and Llama
 * 3.3 70B QLoRA, rank 32 on all linear layers, batch 1, sequences padded to the length, for
 * Unsloth and for Hugging Face + FlashAttention 2). Returns how many were written to out (at
 * most cap), or -1 with a reason in err. */
int train_calib_contexts(const char *data_dir, struct train_context_result *out, int cap, char *err,
			 size_t errlen);

/* One published training speed (tokens/s of all GPUs) against the estimate. */
struct train_speed_result {
	const char *model, *method, *gpu;
	enum train_device_class device_class; /* the device profile's */
	double measured, estimate, error;     /* error = estimate / measured - 1 */
};

/* Estimates every training_memory.csv row that states tokens/s (torchtune's table), with the
 * devices' bf16 peaks from src_dir's profiles/devices.json. Returns how many were written to
 * out (at most cap), or -1 with a reason in err. */
int train_calib_speeds(const char *data_dir, const char *src_dir, struct train_speed_result *out,
		       int cap, char *err, size_t errlen);

/* One published Hugging Face peak (tests/fixtures/training/hf_peaks.csv) against the estimate:
 * the whole per-GPU total for a row measured as max_memory_reserved, the total less the
 * CUDA context and the allocator's slack for one measured as max_memory_allocated. */
struct train_hf_result {
	char label[128]; /* model, method, checkpointing, strategy and loss, for messages */
	bool checkpointing;
	bool in_band; /* the row's in_band column: rigfit is held to 0.85-1.15x of it (the notes
			 of a row marked no say why it is not) */
	double measured_gib, estimate_gib, ratio; /* ratio = estimate / measured */
};

/* Estimates every row of src_dir's tests/fixtures/training/hf_peaks.csv with the dimensions of
 * data_dir's model_arch.csv. Returns how many were written to out (at most cap), or -1 with
 * a reason in err when a file, column or value is missing or not understood. */
int train_calib_hf(const char *src_dir, const char *data_dir, struct train_hf_result *out, int cap,
		   char *err, size_t errlen);

/* Checks src_dir's profiles/devices.json: every GPU or SoC with a tensor fp16 rate has
 * bf16_tflops, half the fp16 rate for NVIDIA GeForce (consumer, laptop) cards except the Titan,
 * the fp16 rate for NVIDIA workstation and data-centre cards; Apple GPUs their fp32 rate.
 * Returns 0, or -1 with the first offending entry in err. */
int train_calib_devices_check(const char *src_dir, char *err, size_t errlen);

#endif
