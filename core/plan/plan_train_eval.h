/*
 * One fine-tuning run, evaluated: the settings as resolved from a request (core/fit's
 * struct train_settings) on the GPUs a machine gives it (their budgets, the host's, the
 * largest GPU's speed figures) go in; the memory per GPU with the strategy and GPU count
 * (plan_strategy_auto when the strategy is auto), the fit, the throughput and the run's hours
 * and cost come out. "max" for seq_len or batch_size is the largest that fits, by bisection
 * over the monotonic estimate. What the request left out and the machine's GPUs are the
 * caller's (api/estimate_train.c fills this request and words the answer); the decisions and
 * the arithmetic are here, so every route answers a training question alike. Pure: no I/O.
 */
#ifndef RIGFIT_CORE_PLAN_TRAIN_EVAL_H
#define RIGFIT_CORE_PLAN_TRAIN_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/estimate.h"
#include "core/fit/train_memory.h"
#include "core/fit/train_speed.h"

/* The largest batch_size "max" searches. */
#define PLAN_TRAIN_MAX_BATCH 4096
/* The longest seq_len "max" searches for a model that states no trained positions. */
#define PLAN_TRAIN_MAX_SEQ 131072

/* The GPUs of one node a run may use, with their budgets. */
struct plan_train_gpus {
	int n;
	int64_t budget[RF_MAX_DEVICES];
	int largest;         /* the GPU of the largest budget */
	int64_t min_budget;  /* the smallest budget; < 0 none */
	int64_t host_budget; /* RAM of one node the run may use; < 0 unknown (unified memory) */
};

struct plan_train_request {
	struct train_settings s; /* as resolved; n_gpus and nodes set from gpus and nodes */
	bool strategy_auto;      /* strategy "auto": the cheapest placement that fits */
	bool offload_given;      /* an offload was asked for: ZeRO-3's (FSDP-QLoRA's) */
	bool max_seq_len;        /* seq_len "max" */
	bool max_batch;          /* batch_size "max" */
	bool padded_given;       /* s.padded as asked; else the default for each length tried */
	int64_t max_positions;   /* the model's trained positions; <= 0 unknown */
	int64_t nodes;
	struct plan_train_gpus gpus;
	const struct train_device *dev; /* the largest GPU's figures; NULL: none known */
	double dataset_tokens;          /* < 0: not given */
	double epochs;                  /* < 0: one */
	double usd_per_hour;            /* per GPU; < 0: not given */
};

/* Why a training request cannot be evaluated (each with RF_E_INVALID_VALUE). */
enum plan_train_error {
	PLAN_TRAIN_OK = 0,
	PLAN_TRAIN_E_STRATEGY,   /* the strategy and offload cannot run this mode on these GPUs */
	PLAN_TRAIN_E_MAX_NO_GPU, /* "max" with no GPU of a known size */
	PLAN_TRAIN_E_MAX_BOTH,   /* seq_len and batch_size both "max" */
	PLAN_TRAIN_E_RANGE,      /* the settings are out of range for this model */
};

struct plan_train_answer {
	struct train_settings s; /* as run: the strategy chosen, "max" resolved */
	struct train_memory mem;
	bool strategy_auto; /* chosen by the search (not with no GPU) */
	bool one_gpu;       /* the run is one GPU's: per_device shows the largest alone */
	int64_t budget;     /* per GPU; < 0 none known */
	int64_t nodes;
	bool fits;           /* within the GPUs' and, when known, the host's memory */
	double utilization;  /* total / budget; < 0 none */
	bool speed_known;    /* the largest GPU's peak is known: speed holds the figures */
	double tokens_per_s; /* the whole run; < 0 unknown */
	struct train_speed speed;
	double hours_per_epoch; /* < 0 unknown */
	double epochs, total_hours;
	double cost_usd; /* < 0 unknown */
	enum plan_train_error error;
};

/* Applies what the request fixes of the placement: an offload asked for with strategy auto
 * runs ZeRO-3 (FSDP-QLoRA for QLoRA). plan_train_evaluate applies it too; a caller that words
 * the settings before the evaluation calls it first. */
void plan_train_placement(struct plan_train_request *q /* IN/OUT */);

/* Evaluates request r for model m. Returns 0 and *out, or RF_E_INVALID_VALUE with out->error
 * saying why. */
int plan_train_evaluate(const struct train_model *m, const struct plan_train_request *r,
			struct plan_train_answer *out /* OUT */);

#endif
