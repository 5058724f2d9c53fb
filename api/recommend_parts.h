/*
 * The parts of POST /api/recommend, one file per role: api/recommend.c parses the request and
 * ranks models for inference; api/recommend_finetune.c ranks models for fine-tuning with the
 * fine-tuning planner; api/recommend_hardware.c renders the hardware sweep
 * (core/plan/plan_hardware.h); api/recommend_estimate.c gives each shown entry the estimator's
 * own account of its setup. Private to those files.
 */
#ifndef RIGFIT_API_RECOMMEND_PARTS_H
#define RIGFIT_API_RECOMMEND_PARTS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/estimate_request.h"
#include "core/fit/model.h"
#include "core/plan/plan_finetune.h"
#include "core/plan/plan_infer.h"

#define REC_DEFAULT_LIMIT 5
#define REC_MAX_LIMIT 50
#define REC_DEFAULT_CTX 4096
#define REC_WHY_LEN 1024

/* As rec_modes orders them. */
enum {
	REC_INFERENCE = 0,
	REC_LORA = 1,
	REC_QLORA = 2,
	REC_FULL = 3
};

extern const char *const rec_modes[];

struct rec_request {
	char task[48];
	bool has_task;
	char use_case[48];
	bool has_use_case;
	int mode;
	bool has_mode;
	int64_t limit;
	bool has_limit;
	int64_t min_context;
	bool has_min_context;
	char hardware_profile[64];
	bool has_hardware_profile;
	const cJSON *model; /* the request's "model", any shape /api/estimate takes; NULL none */
	int target;
	bool has_target;
	double usd_per_hour;
	bool has_usd_per_hour;
	int64_t n_ctx;
	bool has_n_ctx;
	char quant[24];
	bool has_quant;
	double min_tps;
	bool has_min_tps;
};

/* Maps task or use_case to a task bit (enum model_task) and writes its name; 0 with a 422 in
 * out for an unknown one. */
unsigned rec_task(const struct rec_request *rq, const char **name /* OUT */, struct api_reply *out);

/* Resolves the machine of the request (hw: its "hardware", else hardware_profile, else this
 * host) once, as every route resolves it, into *in, which has no model until
 * api_plan_input_set_entry puts one in (free with api_plan_input_free). Returns 0, or a
 * negative rf_err with the envelope in out (503 without a model catalog). */
int rec_machine(const struct api_env *env, const struct rec_request *rq, const cJSON *hw,
		struct api_plan_input **in /* OUT */, struct api_reply *out);

/* The train_mode of a fine-tuning mode of the request. */
enum train_mode rec_train_mode(int mode);

/* Which models fit here, for fine-tuning (mode lora, qlora or full): every catalog model that
 * may be fine-tuned for the task, planned by the fine-tuning planner on the machine of the
 * request (hw: its "hardware", else hardware_profile, else this host) exactly as
 * /api/finetune/detect plans it, ranked by plan_rank_finetune. Returns 0 with the answer in
 * out, or a negative rf_err with the envelope. */
int rec_finetune(const struct api_env *env, const struct rec_request *rq, const cJSON *hw,
		 struct api_reply *out);

/* Which hardware runs the request's model (core/plan/plan_hardware.h). Returns as
 * rec_finetune. */
int rec_hardware(const struct api_env *env, const struct rec_request *rq, struct api_reply *out);

/* The estimator's answer for the settings rq of the model on the machine in (resolved, as
 * /api/estimate answers them). Returns 0 and *answer (NULL when the estimator refused the
 * question), or RF_E_NOMEM. */
int rec_estimate(const struct api_env *env, struct api_plan_input *in,
		 const struct api_estimate_request *rq, cJSON **answer /* OUT */);

/* Writes rq, inference setup s as /api/estimate's settings (n_gpu_layers and n_cpu_moe only
 * where the machine has GPUs; no quant for a GGUF file, which has its own). */
void rec_infer_request(const struct plan_setup *s, bool gpus, bool gguf,
		       struct api_estimate_request *rq /* OUT */);

/* Writes rq, fine-tuning plan s as /api/estimate's settings: the run it plans. */
void rec_ft_request(const struct plan_ft_setup *s, struct api_estimate_request *rq /* OUT */);

/* The summary of an estimator's answer every entry carries (fits, utilization, fit_band,
 * memory, speed; for fine-tuning the strategy and offload); a null estimate when a is NULL. */
cJSON *rec_summary(const cJSON *a, bool inference);

/* The settings of an inference setup, as /api/estimate's fields (n_gpu_layers and n_cpu_moe
 * only where the machine has GPUs). */
cJSON *rec_infer_settings(const struct plan_setup *s, bool gpus);

/* The settings of a fine-tuning plan, as /api/estimate's fields: the run it plans. */
cJSON *rec_ft_settings(const struct plan_ft_setup *s);

#endif
