/*
 * ModelForge's session routes, so its web app runs its whole flow against rigfit:
 * POST /api/finetune/detect (api_finetune_detect's answer, completed with this host's free
 * disk and logical cores, and remembered), POST /api/finetune/set_model, GET
 * /api/finetune/session, GET /api/finetune/load_settings (the fitted settings of the chosen
 * model as `default_values`) and GET /api/info. ModelForge keeps one session per server, and
 * so does rigfit: a small, fixed-size struct owned by the daemon, touched only on the loop
 * thread. A route that resolves its model off the loop (a custom model looked up on the Hub,
 * or read from a model file) works on a copy, and what it changed is put back on the loop
 * (api_ft_session_apply).
 */
#ifndef RIGFIT_API_FINETUNE_SESSION_H
#define RIGFIT_API_FINETUNE_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"
#include "api/finetune_detect.h"

#define API_SESSION_MODEL_MAX 256
#define API_SESSION_HARDWARE_MAX 4096

/* The one session: the last detect's question and the model chosen since. */
struct api_ft_session {
	bool detected;                   /* a detect answered 200 */
	char task[64];                   /* its task */
	struct api_ft_question question; /* its question, to ask again */
	/* Its "hardware" (the machine described; none: a profile or this host), as JSON text,
	 * which the resolver reads again: the catalogs and this host's snapshot may have
	 * changed since, and the answer is the one detect would give now. */
	bool has_hardware;
	char hardware[API_SESSION_HARDWARE_MAX];
	char selected_model[API_SESSION_MODEL_MAX]; /* "" : none chosen */
	bool custom; /* chosen by set_custom_model ("Use Custom Model") */
};

/* POST /api/finetune/detect: api_finetune_detect's answer (api_ft_detect_ask), then
 * available_diskspace_gb from env->data_disk_free_bytes and cpu_cores as this host's logical
 * cores (when the question is about this host), and, with env->session, the question
 * remembered and the chosen model cleared (as ModelForge does on a new detection). */
int api_finetune_session_detect(const struct api_env *env, const struct api_request *req,
				struct api_reply *out);

/* POST /api/finetune/set_model {"selected_model": ID}: remembers the choice. 200 with
 * {"success", "selected_model", "message"}; 422 naming the field for a missing, empty, too
 * long or non-string model or another field. */
int api_finetune_set_model(const struct api_env *env, const struct api_request *req,
			   struct api_reply *out);

/* GET /api/finetune/session: {"success", "task", "selected_model", "is_custom_model"} (null
 * where nothing is known yet; a custom model is one the catalog does not know). */
int api_finetune_session_get(const struct api_env *env, const struct api_request *req,
			     struct api_reply *out);

/* GET /api/finetune/load_settings: asks the remembered detect again and answers
 * {"default_values": the chosen model's fitted settings (or the recommended model's when none
 * was chosen) with task, model_name and compute_specs, "selected_model", "fits",
 * "estimate"}. 409 before any detect; a chosen model that fits nowhere gets the tier's
 * settings with fits false. */
int api_finetune_load_settings(const struct api_env *env, const struct api_request *req,
			       struct api_reply *out);

/* POST /api/finetune/validate_custom_model {"repo_name": NAME, "task"?: TASK}: resolves NAME
 * with /api/estimate's model resolver (a Hugging Face id, a catalog alias, an Ollama tag, a
 * model folder or GGUF path) and says whether it can be fine-tuned for the task (TASK, else
 * the session's, else any) and what it is. 200 {"valid": true, "repo_name", "model" (what to
 * train), "task", "message", "model_info"}; a model that does not resolve or does not suit
 * the task is 200 {"valid": false, "error": a sentence, "errors": [the error object, naming
 * repo_name], "did_you_mean"} (ModelForge's page shows "error" as text). 422 naming the
 * field for a bad body; the resolver's 5xx as they are. */
int api_finetune_validate_custom_model(const struct api_env *env, const struct api_request *req,
				       struct api_reply *out);

/* POST /api/finetune/set_custom_model {"repo_name": NAME, "task"?: TASK}: the same check; a
 * valid model is remembered as the session's choice (its catalog id, or the name or path
 * given) and answered as validate_custom_model does with "success" and "selected_model"; an
 * invalid one is a 422 envelope naming repo_name. */
int api_finetune_set_custom_model(const struct api_env *env, const struct api_request *req,
				  struct api_reply *out);

/* Puts into s what a route did to a copy of it: before is the copy as it was taken, after as
 * the route left it. The chosen model (with its custom flag) and the detection are each
 * written when the route changed them, and left as s has them otherwise (another route may
 * have changed s meanwhile). */
void api_ft_session_apply(struct api_ft_session *s, const struct api_ft_session *before,
			  const struct api_ft_session *after);

/* GET /api/info: {"app_name": "rigfit", "name", "version", "description", "openapi",
 * "available_providers", "available_strategies" (ModelForge's lists, of what rigfit's
 * fine-tuning planner and estimator model), "providers" and "strategies" (the same with what
 * each is), "methods", "supported_tasks", "planned" (the provider, strategy and method the
 * session's plan chose for its model; null before a detect)}. */
int api_info(const struct api_env *env, const struct api_request *req, struct api_reply *out);

#endif
