/*
 * The estimator's parts, shared by the files of POST /api/estimate and nothing else: the
 * working state of one estimate (struct est) and the functions each part gives the others.
 *   estimate.c          the route: parse -> resolve -> answer, and api_estimate_resolved
 *   estimate_request.c  the settings (api/estimate_request.h)
 *   estimate_model.c    which model: catalog id or alias, Ollama tag, GGUF, folder, HF cache,
 *                       Hub, pasted config.json
 *   estimate_machine.c  which machine: this host's snapshot, a description or a profile, and
 *                       its budgets and speed inputs
 *   estimate_input.c    the resolver as the planning routes take it (api_plan_input)
 *   estimate_infer.c    llama.cpp inference      estimate_vllm.c   vLLM serving
 *   estimate_train.c    fine-tuning              estimate_speed.c  the speed block, history
 * The arithmetic and the decisions are core's: each kind of estimate fills a request of the one
 * estimate (plan_estimate, core/plan/plan_estimate.h), asks it, and renders its answer, wording
 * the assumptions; these files map it to and from JSON.
 */
#ifndef RIGFIT_API_ESTIMATE_PRIV_H
#define RIGFIT_API_ESTIMATE_PRIV_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/estimate_request.h"
#include "api/model_folder.h"
#include "api/model_json.h"
#include "core/fit/estimate.h"
#include "core/fit/gguf.h"
#include "core/fit/hf_quant.h"
#include "core/fit/model.h"
#include "core/fit/speed.h"
#include "core/hw/hw.h"
#include "core/hw/hw_fingerprint.h"
#include "core/plan/plan_estimate.h"
#include "core/plan/plan_machine.h"
#include "api/estimate_history.h"

#define EST_MAX_ASSUMPTIONS 48
#define EST_ASSUMPTION_LEN API_PLAN_NOTE_LEN
#define EST_DEFAULT_QUANT "Q4_K_M"
#define EST_DEFAULT_SEQ_LEN 2048
/* GPUs of one fine-tuning run, all nodes together (core/fit/train_parallel.c's cap). */
#define EST_MAX_TRAIN_GPUS 4096

/* Everything one estimate works on; large, so it lives on the heap. */
struct est {
	struct api_estimate_request rq;
	struct model_arch arch;
	struct model_params params;
	const struct model_entry *entry;
	char model_id[MODEL_ID_LEN];
	char model_source[16]; /* catalog, ollama, architecture, gguf, folder, hf_cache, hub */
	bool has_checkpoint;   /* a Hugging Face folder: the census of its safetensors */
	struct api_checkpoint checkpoint;
	/* where/revision only: config and headers freed. Valid with has_checkpoint only (est_new
	 * leaves it as it was). */
	struct api_model_dir folder_info;
	bool quantized; /* config.json has a quantization_config */
	struct hfq_config quant;
	struct gguf_file *gguf;
	int ftype;
	struct rf_mem_weights weights;
	struct hw_snapshot hw;
	char hw_source[16];
	/* The host's memory bandwidth from the CPU table (devices.json entries of kind cpu)
	 * when nothing measured it: theoretical GB/s, <= 0 none. */
	double cpu_table_bandwidth_gbs;
	bool cpu_table_bandwidth_measured;        /* that figure is a published measurement */
	char fingerprint[HW_FINGERPRINT_LEN + 1]; /* of hw; "" when it cannot be computed */
	int n_assumptions;
	/* The assumptions of the model and machine as resolved, before any setup was asked
	 * about: where api_estimate_resolved starts each answer. */
	int n_resolved;
	/* Last: est_new leaves them as they were; only the first n_assumptions are read. */
	char assumptions[EST_MAX_ASSUMPTIONS][EST_ASSUMPTION_LEN];
};

/* What the predictions of recorded runs share: the machine they ran on. The scratch of a
 * prediction is allocated at the first, so estimates without history pay nothing for it; free
 * it with est_predict_free. */
struct est_predict {
	const struct plan_machine *pm;
	struct plan_result *r;
	struct rf_mem_weights *w; /* the predicted model's weights */
};

/* ---- estimate.c: the working state ---- */

/* Returns an empty est (as calloc would give it, except the weights' per-layer arrays, which
 * rf_mem_weights_reset leaves for their producer, the machine hw, which est_hardware writes
 * whole, folder_info, written with has_checkpoint, and the assumptions' text past
 * n_assumptions 0), or NULL when out of memory. */
struct est *est_new(void);
/* Frees e's GGUF header and keeps e for the next est_new (or frees it). NULL is a no-op. */
void est_release(struct est *e);
/* Computes e->fingerprint from e->hw once ("" when it cannot be). */
void est_fingerprint(struct est *e);
/* Adds one line to e's assumptions (at most EST_MAX_ASSUMPTIONS are kept). */
void est_assume(struct est *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- estimate_model.c ---- */

/* Resolves the "model" object or string m into e (arch, params, entry, id, source; a GGUF's
 * header and weights). Returns 0, or a negative rf_err with the envelope in out. */
int est_model(const struct api_env *env, struct est *e, const cJSON *m, struct api_reply *out);

/* ---- estimate_machine.c ---- */

/* Resolves the machine into e->hw: described (hw), a profile (e->rq.hardware_profile) or this
 * host's snapshot, with the CPU table's figures where nothing measured them. Returns 0, or a
 * negative rf_err with the envelope in out. */
int est_hardware(const struct api_env *env, struct est *e, const cJSON *hw, struct api_reply *out);
/* What core takes of e's machine (core/plan/plan_machine.h): its snapshot, the device
 * profiles and the CPU table's bandwidth. */
void est_machine_source(struct est *e, const struct api_env *env,
			struct plan_machine_source *m /* OUT */);
/* Fills pm with e's machine as the planner takes it (plan_machine_build); what that says of
 * the machine goes to e's assumptions. */
void est_plan_machine(const struct api_env *env, struct est *e, struct plan_machine *pm /* OUT */);
/* est_plan_machine, holding back what it says of the machine (a GPU of unknown bandwidth) for
 * where the speed is answered: at most SPEED_MAX_DEVICES lines into notes, not into e's
 * assumptions. Returns their number. */
int est_plan_machine_held(const struct api_env *env, struct est *e, struct plan_machine *pm,
			  char notes[SPEED_MAX_DEVICES][EST_ASSUMPTION_LEN] /* OUT */);

/* ---- estimate_speed.c ---- */

/* The "memory" block of m. Returns it, or NULL when out of memory. */
cJSON *est_memory_json(const struct rf_mem_estimate *m);
/* Adds v to o as name, or null when v is negative or not finite. */
void est_num_or_null(cJSON *o, const char *name, double v);
/* api_history_predict_fn: the roofline of catalog model me in ftype on the machine of ctx (a
 * struct est_predict), run as llama-bench runs it by default. */
int est_predict_run(void *ctx, const struct model_entry *me, int ftype,
		    double tps[SPEED_HISTORY_FIGURES] /* OUT */);
/* Frees pr's scratch. */
void est_predict_free(struct est_predict *pr);
/* The query of e's runs: its hardware's fingerprint (none when the request said "history":
 * false), backend, and model and precision (ftype; < 0: any, a planner's search), predicted
 * with pr. */
void est_history_query(struct est *e, enum speed_backend backend, int ftype, struct est_predict *pr,
		       struct api_history_query *q /* OUT */);
/* Fills the "speed" object from a llama.cpp setup's answer a (plan_estimate with detail) and
 * says what its figures stand on: the roofline's assumptions, this host's measurement and the
 * runs of cal used. Returns 0 or RF_E_NOMEM. */
int est_speed_json(struct est *e, const struct plan_est_answer *a,
		   const struct api_history_calib *cal, cJSON *speed);
/* The serving traffic e's request asks about (what it leaves out: 0). */
struct plan_traffic_ask est_traffic_ask(const struct est *e);
/* Says the traffic t stands on the defaults of a chat turn, where e's request gave none. */
void est_traffic_note(struct est *e, const struct plan_traffic *t);
/* Adds the batched speed of serving sv (plan_estimate's) to the "speed" object, and what it
 * assumed. */
void est_serving_json(struct est *e, const struct plan_serving *sv, cJSON *speed);
/* Fills the "speed" object of a setup that does not fit: none, and why. */
void est_no_speed(struct est *e, cJSON *speed);

/* ---- estimate_rope.c ---- */

/* Says in e's assumptions how a context of seq positions per sequence stands against the
 * model's trained positions, the rope scaling e's request sets and the scaling its card
 * documents. Returns the positions per sequence the runtime allows: what the request's
 * scaling reaches, else max_position_embeddings (0: the model states none). */
int64_t est_rope(struct est *e, int64_t seq);

/* ---- the three kinds of estimate: each fills root's memory, settings, serving or training
 * and speed. Return 0, or a negative rf_err with the envelope in out. ---- */

int est_inference(const struct api_env *env, struct est *e, cJSON *root, struct api_reply *out);
int est_vllm(const struct api_env *env, struct est *e, cJSON *root, struct api_reply *out);
int est_training(const struct api_env *env, struct est *e, cJSON *root, struct api_reply *out);

#endif
