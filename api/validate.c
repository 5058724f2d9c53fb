/*
 * POST /api/validate (and `rigfit validate --config FILE`): is this llama.cpp (or vLLM)
 * configuration right for this machine? The route parses the config (validate_input.c),
 * resolves its model and the machine once (api_plan_input, as every planning route does),
 * asks core/plan/plan_check.h for the findings and the planner's setup, and renders them
 * (validate_render.c) with the estimate of the config's own settings. The rules, their
 * numbers and the suggestions are plan_check's: it evaluates the config's setup as
 * /api/estimate does and takes every suggested number from the planner's searches, so
 * applying a suggestion makes the config valid, and every config /api/config writes
 * validates.
 *
 * With runtime "vllm" the settings are vllm serve's: the layout is checked before anything
 * else (vLLM refuses it before it loads), then the estimate and the memory rules of vLLM's
 * start-up model.
 *
 * A model the catalog does not know is a finding (unknown_model), not an error: the rules
 * that need no model still run on the machine.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/jsonmap.h"
#include "api/model_json.h"
#include "api/plan_quality_json.h"
#include "api/validate.h"
#include "api/validate_priv.h"
#include "core/err.h"
#include "core/fit/model.h"
#include "core/fit/serve_vllm.h"

/* The estimate of c's own settings on in's model and machine, the block the answer shows.
 * Returns 0 and *est, or a negative rf_err with the estimator's envelope in out (naming its
 * field). */
static int val_estimate(const struct api_env *env, const struct val_cfg *c,
			struct api_plan_input *in, cJSON **est, struct api_reply *out)
{
	struct api_estimate_request rq;

	val_estimate_settings(c, &rq);
	return api_estimate_resolved(env, in, &rq, est, out);
}

/* A model the catalog does not know: the finding. Returns true when c names one. */
static bool val_unknown_model(const struct api_env *env, const struct val_cfg *c,
			      struct plan_check_answer *a)
{
	const struct model_entry *entry = NULL;
	struct api_reply tmp = {0};
	struct plan_check_finding *k;
	int rc;

	if (!c->model_id || !env->cat.models)
		return false;
	rc = api_model_resolve(env->cat.models, c->model_id, "model.id", &tmp, &entry);
	api_reply_reset(&tmp);
	if (rc >= 0 || !(k = plan_check_add(a, "unknown_model", true, "model.id")))
		return rc < 0;
	snprintf(k->message, sizeof(k->message), "no model of the catalog is called '%.80s'",
		 c->model_id);
	snprintf(k->suggestion, sizeof(k->suggestion),
		 "name one of the %zu catalog models by its id or alias (Qwen/Qwen2.5-7B-Instruct, "
		 "llama-3.1-8b), or give model.architecture (a config.json)",
		 env->cat.models->n);
	return true;
}

/* vLLM: the layout, then the estimate the answer shows, whose precision is the checkpoint's
 * own when the config names none. Returns 0 or a negative rf_err with the envelope in out. */
static int val_vllm(const struct api_env *env, const struct val_cfg *c, struct api_plan_input *in,
		    const struct plan_check_machine *mach, struct plan_check_config *pc,
		    struct plan_check_answer *a, cJSON **est, struct api_reply *out)
{
	const cJSON *prec;
	int rc;

	if (plan_check_vllm_layout(in->arch, mach, pc, a))
		return 0;
	rc = val_estimate(env, c, in, est, out);
	if (rc < 0 && c->has_mml && in->arch->max_position_embeddings > 0 &&
	    c->max_model_len > in->arch->max_position_embeddings)
		rc = 0; /* vLLM's refusal: plan_check's ctx_over_model */
	if (rc < 0)
		return rc;
	api_reply_reset(out);
	prec = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(*est, "settings"),
						"precision");
	if (!c->quant[0] && cJSON_IsString(prec) && vllm_precision_parse(prec->valuestring) >= 0)
		pc->v.precision = vllm_precision_parse(prec->valuestring);
	return 0;
}

static int val_run(const struct api_env *env, const cJSON *body, struct plan_check_answer *a,
		   struct plan_check_config *pc, struct api_reply *out)
{
	struct api_plan_input *in = NULL;
	struct plan_check_machine mach;
	struct plan_quality q;
	struct plan_model pm;
	struct api_reply err = {0};
	struct val_cfg c;
	cJSON *est = NULL, *model;
	bool unknown, has_q;
	int rc;

	if ((rc = val_parse(&c, body, out)) < 0)
		return rc;
	/* An unknown model leaves the checks that need none, on the machine alone. */
	unknown = val_unknown_model(env, &c, a);
	if (unknown) {
		rc = api_machine_input(env, c.hardware, c.hardware_profile, &in, out);
	} else {
		if (!(model = val_model(&c)))
			return api_error(out, RF_E_NOMEM, NULL, NULL);
		rc = api_plan_input(env, model, c.hardware, c.hardware_profile, &in, out);
		cJSON_Delete(model);
	}
	if (rc < 0)
		return rc;
	val_check_config(&c, unknown ? NULL : in, pc);
	mach.pm = &in->machine;
	mach.hw = in->hw;
	mach.mobile = val_mobile(env->cat.devices, in->hw);
	/* The runs recorded on this machine price the planner's suggestions as they price the
	 * estimate of the config. */
	if (!unknown && (rc = api_plan_input_history(env, in)) < 0) {
		api_plan_input_free(in);
		return api_error(out, rc, NULL, NULL);
	}
	api_plan_model(in, &pm);
	if (c.vllm && !unknown) {
		rc = val_vllm(env, &c, in, &mach, pc, a, &est, out);
	} else if (!unknown) {
		rc = val_estimate(env, &c, in, &est, out);
		if (rc == 0)
			api_reply_reset(out);
	}
	has_q = rc == 0 && api_plan_quality(env, &q, &err) == 0;
	api_reply_reset(&err);
	if (rc == 0)
		rc = plan_check(unknown ? NULL : &pm, &mach, has_q ? &q : NULL, pc, a);
	if (rc == RF_E_NOMEM)
		rc = api_error(out, rc, NULL, NULL);
	if (rc == 0) {
		rc = val_render(&c, in, a, est, out);
		est = NULL; /* taken */
	}
	cJSON_Delete(est);
	api_plan_input_free(in);
	return rc;
}

int api_validate(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	cJSON *body = NULL;
	struct plan_check_answer *a;
	struct plan_check_config *pc;
	int rc = jm_parse_body(req, false, &body, out);

	if (rc < 0)
		return rc;
	a = calloc(1, sizeof(*a));
	pc = calloc(1, sizeof(*pc));
	if (!a || !pc)
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
	else
		rc = val_run(env, body, a, pc, out);
	free(a);
	free(pc);
	cJSON_Delete(body);
	return rc;
}
