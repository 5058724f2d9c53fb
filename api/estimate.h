/*
 * The estimator as the routes use it. POST /api/estimate parses, resolves and answers
 * (api_estimate_object). The planning routes (/api/config, /api/validate, /api/recommend,
 * /api/finetune/detect) resolve the model and the machine once (api_plan_input), plan in
 * core/plan over structs, and ask for the estimate block of the setup they chose with
 * api_estimate_resolved and a struct api_estimate_request: no JSON request is built for
 * another route, and every route's estimate block is /api/estimate's own answer.
 * The parts of the estimator live in api/estimate_*.c (api/estimate_priv.h lists them).
 */
#ifndef RIGFIT_API_ESTIMATE_H
#define RIGFIT_API_ESTIMATE_H

#include <cjson/cJSON.h>

#include "api/api.h"
#include "api/estimate_request.h"
#include "core/fit/model.h"
#include "core/plan/plan_infer.h"
#include "core/fit/train_speed.h"

struct est;
struct api_plan_input;

#define API_PLAN_NOTE_LEN 400

/* Estimates for body, an object with the fields of POST /api/estimate (model, mode, quant,
 * n_ctx..., hardware or hardware_profile). Returns 0 and the answer (the route's JSON as a
 * tree; free with cJSON_Delete) in *result, or a negative rf_err with the error envelope in
 * out (the field named as in /api/estimate). */
int api_estimate_object(const struct api_env *env, const cJSON *body, cJSON **result /* OUT */,
			struct api_reply *out);

/* The answer of POST /api/estimate for the model and machine in in (resolved once by
 * api_plan_input or api_train_input, perhaps moved to another model by
 * api_plan_input_set_entry) with the settings of rq: what api_estimate_object answers for a
 * body with the same model, machine and settings, without parsing or resolving anything
 * again. May be called many times on one in (each answer starts from the resolver's
 * assumptions); in is not thread-safe. Returns 0 and *result (free with cJSON_Delete), or a
 * negative rf_err with the envelope in out. */
int api_estimate_resolved(const struct api_env *env, struct api_plan_input *in,
			  const struct api_estimate_request *rq, cJSON **result /* OUT */,
			  struct api_reply *out);

/* Frees the working state one estimate keeps for the next (about 130 KiB, reused instead of
 * allocated per request); the next estimate allocates it again. The allocation-failure tests
 * call it so that every run of a request makes the same allocations. Safe from any thread. */
void api_estimate_spare_free(void);

/* What the planning routes (/api/config, /api/recommend, /api/validate) take from a request:
 * the model and the machine, resolved exactly as /api/estimate resolves them, in the planner's
 * terms. */
struct api_plan_input {
	struct est *est;               /* owned: the resolved request */
	const struct model_arch *arch; /* validated */
	const struct model_params *params;
	const struct model_entry *entry; /* catalog models; else NULL */
	const char *model_id, *model_source;
	int gguf_ftype; /* a GGUF file's type; -1 otherwise */
	struct plan_machine machine;
	const struct hw_snapshot *hw;
	const char *profile_id; /* "" when none */
	int n_assumptions;
	const char (*assumptions)[API_PLAN_NOTE_LEN];
	struct api_plan_history *history; /* owned: the machine's recorded runs
					     (api_plan_input_history); NULL: none read */
};

struct api_plan_history;

/* Reads the benchmark runs recorded on in's machine from env's store, as /api/estimate reads
 * them (api/estimate_history.h), so that the planner refines each format's speed with them as
 * the estimate of its pick does (api_plan_model hands them on). A store that cannot be read
 * leaves the roofline. Returns 0, or RF_E_NOMEM. */
int api_plan_input_history(const struct api_env *env, struct api_plan_input *in);

/* Resolves model (as /api/estimate's "model") and the machine (hardware, a hardware_profile id
 * or NULL for neither: this host's snapshot). Returns 0 and *out (free with
 * api_plan_input_free), or a negative rf_err with the envelope in err. */
int api_plan_input(const struct api_env *env, const cJSON *model, const cJSON *hardware,
		   const char *hardware_profile, struct api_plan_input **out /* OUT */,
		   struct api_reply *err);

/* The machine alone (hardware, a hardware_profile id or NULL for neither: this host's
 * snapshot), resolved as api_plan_input resolves it, for a question about many models: *out
 * has no model until api_plan_input_set_entry puts one in (its arch, params and assumptions
 * are the machine's only). Returns 0 and *out (free with api_plan_input_free), or a negative
 * rf_err with the envelope in err. */
int api_machine_input(const struct api_env *env, const cJSON *hardware,
		      const char *hardware_profile, struct api_plan_input **out /* OUT */,
		      struct api_reply *err);

/* api_plan_input for a fine-tuning question: the model resolved as /api/estimate resolves it
 * for a fine-tuning mode (an Ollama tag names its catalog model, never the GGUF file Ollama
 * holds), with the machine. */
int api_train_input(const struct api_env *env, const cJSON *model, const cJSON *hardware,
		    const char *hardware_profile, struct api_plan_input **out /* OUT */,
		    struct api_reply *err);

/* Resolves model alone (as /api/estimate's "model" for fine-tuning: an Ollama tag names its
 * catalog model, never the GGUF file Ollama holds), for a question about the model itself.
 * Returns 0 and *out with no machine (hw NULL, machine zero; free with api_plan_input_free),
 * or a negative rf_err with the envelope in err, naming model.id, model.path or model.gguf. */
int api_model_input(const struct api_env *env, const cJSON *model,
		    struct api_plan_input **out /* OUT */, struct api_reply *err);

/* Puts catalog model me in place of in's model (the machine stays): the planning of many
 * models on one machine resolves the machine once. Returns 0 or a negative rf_err (a model
 * whose parameters cannot be counted). */
int api_plan_input_set_entry(struct api_plan_input *in, const struct model_entry *me);

/* What the model's checkpoint stores, as vLLM loads it without --quantization (enum
 * vllm_precision): its quantization_config's format, gpt-oss's MXFP4 experts, else VLLM_BF16
 * (plain 16-bit weights). */
int api_plan_input_precision(const struct api_plan_input *in);

/* Frees in; NULL is a no-op. */
void api_plan_input_free(struct api_plan_input *in);

/* Fills m for in: weights from the process-wide memo (or the GGUF file's own). */
void api_plan_model(struct api_plan_input *in, struct plan_model *m /* OUT */);

#endif
