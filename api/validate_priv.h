/*
 * The parts of POST /api/validate (api/validate.h), one role each:
 *   validate_input.c   the config as written (llama-server's or vllm serve's settings, nested
 *                      as /api/config writes them or flat) parsed strictly into struct
 *                      val_cfg;
 *   validate_setup.c   the parsed config turned into core/plan/plan_check.h's structs (the
 *                      setup as its runtime runs it) and the estimate request it shows;
 *   validate_render.c  the findings and the planner's setup as the route's JSON;
 *   validate.c         the route: parse, resolve the model and the machine once, check in
 *                      core (plan_check), render.
 */
#ifndef RIGFIT_API_VALIDATE_PRIV_H
#define RIGFIT_API_VALIDATE_PRIV_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/estimate_request.h"
#include "core/plan/plan_check.h"

/* llama.cpp's backends and cache types, as a config names them (the index is the value). */
extern const char *const val_backends[];
extern const char *const val_cache_types[];
/* The estimator's cache type for each of val_cache_types (the nearest not smaller; NULL: f32,
 * which it does not take), and the rope scalings a config names (none, linear, yarn). */
extern const char *const val_cache_est[];
extern const char *const val_rope[];

struct val_cfg {
	bool nested;
	const char *prefix; /* "settings." or "" */
	int backend;        /* index in val_backends; -1: not given */
	const cJSON *model;
	const char *model_id; /* when the model is named by id */
	char quant[24];       /* as the estimator takes it */
	int64_t n_gpu_layers, n_threads, n_batch, n_ubatch, n_ctx, n_parallel, n_cpu_moe;
	bool has_ngl, has_threads, has_batch, has_ubatch, has_ctx, has_parallel, has_cpu_moe;
	bool flash_attn, has_fa;
	bool use_mmap, has_mmap, mlock, has_mlock, swa_full, has_swa_full;
	int cache_k, cache_v;  /* index in val_cache_types; -1: not given */
	int rope;              /* index of none, linear, yarn; -1: not given */
	double rope_scale;     /* <= 0: not given */
	int64_t yarn_orig_ctx; /* <= 0: not given (the trained window) */
	const cJSON *hardware;
	const char *hardware_profile;
	const cJSON *tensor_split; /* as given, checked; NULL: none */
	/* runtime vllm: vllm serve's engine arguments as /api/config writes them; the weight
	 * format (quantization, metadata.precision or a flat precision) is in quant. */
	bool vllm;
	int64_t tp, pp, max_model_len, max_num_seqs, max_batched;
	bool has_tp, has_pp, has_mml, has_mns, has_mbt, has_util, has_eager, enforce_eager;
	double util;
	int vkv; /* 0 auto, 1 fp8; -1: not given */
};

/* Parses the config in body into c (which points into body). Returns 0, or a negative rf_err
 * with the envelope in out naming the field ("settings.n_ctx"). */
int val_parse(struct val_cfg *c, const cJSON *body, struct api_reply *out);

/* Returns a new object with only what names c's model (id, architecture, gguf, params_b:
 * /api/config writes the model's facts beside its id), or NULL when out of memory. */
cJSON *val_model(const struct val_cfg *c);

/* Fills out with c as its runtime runs it on in's model and machine (llama.cpp's defaults
 * where c is silent, as /api/estimate takes them); vLLM's precision is out->v.precision when
 * c names none (the caller sets the checkpoint's). */
void val_check_config(const struct val_cfg *c, const struct api_plan_input *in,
		      struct plan_check_config *out /* OUT */);

/* Returns whether a GPU of hw is a laptop, Jetson or other mobile part (by its name or the
 * device table's class). */
bool val_mobile(const struct device_table *t, const struct hw_snapshot *hw);

/* Fills rq with c's settings for the estimate block the answer shows (api_estimate_resolved
 * on the model and machine already resolved). */
void val_estimate_settings(const struct val_cfg *c, struct api_estimate_request *rq /* OUT */);

/* Renders the answer: is_valid, errors, warnings, the planner's suggested_settings when a
 * check asked for them, and est (taken; NULL: null). Returns 0 with the reply in out, or
 * RF_E_NOMEM with the envelope. */
int val_render(const struct val_cfg *c, const struct api_plan_input *in,
	       const struct plan_check_answer *a, cJSON *est, struct api_reply *out);

#endif
