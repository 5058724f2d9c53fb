/*
 * POST /api/recommend with "for": "hardware": the JSON side of "which hardware runs this
 * model". The model (any shape /api/estimate takes) is resolved once; the sweep over devices
 * and counts and every decision in it are core/plan/plan_hardware.h's, with each candidate's
 * machine resolved here as every route resolves a described machine (count devices of the
 * profile, the host RAM the sweep assumes). Each shown device carries its planned settings
 * and the estimator's account of them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/estimate.h"
#include "api/json_alloc.h"
#include "api/json_print.h"
#include "api/plan_quality_json.h"
#include "api/recommend_parts.h"
#include "core/err.h"
#include "core/fit/quant.h"
#include "core/fit/train_parallel.h"
#include "core/plan/plan_ft_machine.h"
#include "core/plan/plan_hardware.h"
#include "core/format.h"

/* What the machine resolver of the sweep works with. */
struct rec_hw_ctx {
	const struct api_env *env;
};

/* count devices of d with ram_bytes of RAM, as a described machine ("hardware"). */
static cJSON *rec_hw_json(const struct device_profile *d, int count, int64_t ram_bytes)
{
	cJSON *hw = cJSON_CreateObject(), *gpus, *g, *mem;

	if (!hw)
		return NULL;
	gpus = cJSON_AddArrayToObject(hw, "gpus");
	g = cJSON_CreateObject();
	cJSON_AddStringToObject(g, "name", d->id);
	cJSON_AddNumberToObject(g, "count", count);
	api_json_append(gpus, g);
	mem = cJSON_AddObjectToObject(hw, "memory");
	cJSON_AddNumberToObject(mem, "total_bytes", (double)ram_bytes);
	return hw;
}

/* plan_hw_machine_fn: the machine as the resolver (api_machine_input) takes a description of
 * it. */
static int rec_hw_machine(void *vctx, const struct device_profile *d, int count, int64_t ram_bytes,
			  struct plan_hw_machine *out)
{
	const struct rec_hw_ctx *c = vctx;
	cJSON *hw = rec_hw_json(d, count, ram_bytes);
	struct api_plan_input *in = NULL;
	struct api_reply err = {0};
	int rc;

	if (!hw)
		return RF_E_NOMEM;
	rc = api_machine_input(c->env, hw, NULL, &in, &err);
	api_reply_reset(&err);
	cJSON_Delete(hw);
	if (rc < 0)
		return rc;
	out->infer = in->machine;
	plan_ft_machine(in->hw, &in->machine, c->env->cat.devices, &out->ft);
	api_plan_input_free(in);
	return 0;
}

/* The settings an entry was planned with, as /api/estimate takes them. */
static cJSON *rec_hw_settings(const struct plan_hw_hit *h, bool finetune, bool gguf)
{
	cJSON *s;

	if (finetune)
		return rec_ft_settings(&h->ft.best);
	s = rec_infer_settings(&h->infer.setup, false);
	if (s && gguf) /* a GGUF file has its own quantization */
		cJSON_DeleteItemFromObjectCaseSensitive(s, "quant");
	return s;
}

/* The estimator's account of hit h: the model and the hit's machine resolved (as the entry's
 * settings and the same description give it to /api/estimate), the planned setup asked of it.
 * Returns 0 and *answer (NULL when it could not be told), or RF_E_NOMEM. */
static int rec_hw_estimate(const struct api_env *env, const struct rec_request *rq,
			   const struct plan_hw_hit *h, bool finetune, bool gguf, cJSON **answer)
{
	cJSON *hw = rec_hw_json(h->device, h->count, h->ram_bytes);
	struct api_plan_input *in = NULL;
	struct api_estimate_request erq;
	struct api_reply err = {0};
	int rc;

	*answer = NULL;
	if (!hw)
		return RF_E_NOMEM;
	rc = (finetune ? api_train_input : api_plan_input)(env, rq->model, hw, NULL, &in, &err);
	api_reply_reset(&err);
	cJSON_Delete(hw);
	if (rc < 0)
		return rc == RF_E_NOMEM ? rc : 0;
	if (finetune)
		rec_ft_request(&h->ft.best, &erq);
	else
		rec_infer_request(&h->infer.setup, false, gguf, &erq);
	rc = rec_estimate(env, in, &erq, answer);
	api_plan_input_free(in);
	return rc;
}

static cJSON *rec_hw_entry_json(const struct rec_request *rq, const struct plan_hw_hit *h,
				const char *model_id, cJSON *settings, cJSON *estimate)
{
	cJSON *o = cJSON_CreateObject();
	char why[REC_WHY_LEN], cost[160] = "";
	double u = h->utilization >= 0 ? h->utilization * 100 : 100;

	if (!o) {
		cJSON_Delete(settings);
		cJSON_Delete(estimate);
		return NULL;
	}
	cJSON_AddStringToObject(o, "device", h->device->id);
	cJSON_AddStringToObject(o, "name", h->device->name);
	cJSON_AddStringToObject(o, "kind", h->device->kind == DEVICE_KIND_SOC ? "soc" : "gpu");
	cJSON_AddNumberToObject(o, "count", h->count);
	api_json_add(o, "settings", settings);
	api_json_add(o, "estimate", estimate);
	if (h->tokens_per_s >= 0)
		cJSON_AddNumberToObject(o, "tokens_per_s", round(h->tokens_per_s * 10) / 10);
	else
		cJSON_AddNullToObject(o, "tokens_per_s");
	if (h->usd_per_hour >= 0)
		cJSON_AddNumberToObject(o, "usd_per_hour", h->usd_per_hour);
	else
		cJSON_AddNullToObject(o, "usd_per_hour");
	if (h->usd_per_million >= 0) {
		cJSON_AddNumberToObject(o, "usd_per_million_tokens", h->usd_per_million);
		rf_format(cost, sizeof(cost),
			  "; at $%.2f per device-hour, $%.2f per million tokens", h->usd_per_hour,
			  h->usd_per_million);
	} else {
		cJSON_AddNullToObject(o, "usd_per_million_tokens");
	}
	rf_format(why, sizeof(why),
		  "%d x %s (%.0f GiB each) hold%s %s %s using %.0f%% of the memory, at %.1f %s "
		  "tokens/s%s (system RAM assumed large enough).",
		  h->count, h->device->name, h->device->memory_gib, h->count == 1 ? "s" : "",
		  model_id, rec_modes[rq->mode], u, h->tokens_per_s > 0 ? h->tokens_per_s : 0,
		  rq->mode == REC_INFERENCE ? "decode" : "training", cost);
	cJSON_AddStringToObject(o, "why", why);
	return o;
}

/* The settings the sweep asks about (the root's "settings"). */
static cJSON *rec_hw_asked(const struct rec_request *rq, const struct plan_hw_request *r, bool gguf)
{
	cJSON *s = cJSON_CreateObject();

	if (!s)
		return NULL;
	cJSON_AddStringToObject(s, "mode", rec_modes[rq->mode]);
	if (r->finetune) {
		int64_t target, floor;
		plan_ft_task_lengths(r->ft.task, &target, &floor);
		cJSON_AddNumberToObject(s, "seq_len", (double)target);
		return s;
	}
	if (!gguf)
		cJSON_AddStringToObject(s, "quant", rf_ftype_name(r->infer.ftype));
	cJSON_AddNumberToObject(s, "n_ctx", (double)r->infer.n_ctx);
	return s;
}

static void rec_hw_assumptions(const struct rec_request *rq, cJSON *root)
{
	cJSON *as = cJSON_AddArrayToObject(root, "assumptions");
	char line[200];

	api_json_append(
		as, cJSON_CreateString(
			    rq->mode == REC_INFERENCE ?
				    "devices: every GPU and SoC profile with a known memory size; "
				    "GPUs 1, 2, 4 or 8 of a kind (the fewest whose planned setup "
				    "keeps every layer on them within 90% of their memory at a "
				    "usable speed), SoCs one" :
				    "devices: every GPU and SoC profile with a known memory size; "
				    "GPUs 1 to 8 of a kind: the fewest the fine-tuning planner "
				    "holds the run on at the task's length without offloading, "
				    "else the fewest with offload; SoCs one"));
	api_json_append(as, cJSON_CreateString("system RAM assumed large enough: twice the GPUs' "
					       "memory, at least 64 GiB (SoCs: their own memory)"));
	rf_format(line, sizeof(line),
		  "usd_per_million_tokens = usd_per_hour x count / (tokens_per_s x 3600) x 1e6; "
		  "usd_per_hour per device from its profile%s",
		  rq->has_usd_per_hour ? ", else the request's" :
					 " (none known: give usd_per_hour)");
	api_json_append(as, cJSON_CreateString(line));
}

/* Renders the sweep's answer, the first limit devices with an estimate each. */
static int rec_hw_render(const struct api_env *env, const struct rec_request *rq,
			 const struct api_plan_input *in, const struct plan_hw_request *r,
			 const struct plan_hw_answer *a, struct api_reply *out)
{
	int64_t limit = rq->has_limit ? rq->limit : REC_DEFAULT_LIMIT;
	bool gguf = in->gguf_ftype >= 0;
	cJSON *root = cJSON_CreateObject(), *arr;
	int rc = 0;

	if (!root)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	cJSON_AddStringToObject(root, "for", "hardware");
	cJSON_AddStringToObject(root, "model", in->model_id);
	cJSON_AddStringToObject(root, "mode", rec_modes[rq->mode]);
	api_json_add(root, "settings", rec_hw_asked(rq, r, gguf));
	cJSON_AddNumberToObject(root, "considered", a->considered);
	/* Planner calls, one per device and count asked (the name predates the planner). */
	cJSON_AddNumberToObject(root, "estimates", a->planned);
	cJSON_AddBoolToObject(root, "truncated", a->truncated);
	rec_hw_assumptions(rq, root);
	arr = cJSON_AddArrayToObject(root, "hardware");
	for (int i = 0; i < a->n_hits && i < limit && rc == 0; i++) {
		const struct plan_hw_hit *h = &a->hits[i];
		cJSON *est = NULL;
		rc = rec_hw_estimate(env, rq, h, r->finetune, gguf, &est);
		if (rc == 0)
			api_json_append(arr,
					rec_hw_entry_json(rq, h, in->model_id,
							  rec_hw_settings(h, r->finetune, gguf),
							  rec_summary(est, !r->finetune)));
		cJSON_Delete(est);
	}
	if (rc < 0) {
		cJSON_Delete(root);
		return api_error(out, rc, NULL, NULL);
	}
	if (a->n_hits == 0)
		cJSON_AddStringToObject(root, "reason",
					a->considered == 0 ?
						"no GPU or SoC profile is loaded" :
						"no device runs this model with up to 8 "
						"of a kind at these settings");
	return api_reply_cjson(out, 200, root);
}

/* The request of the sweep: the weight format and context asked (inference), the method
 * (fine-tuning). Returns 0 or a 422 in out. */
static int rec_hw_request(const struct rec_request *rq, const struct api_plan_input *in,
			  struct plan_hw_request *r, struct api_reply *out)
{
	int64_t maxpos = in->arch->max_position_embeddings;

	memset(r, 0, sizeof(*r));
	r->finetune = rq->mode != REC_INFERENCE;
	r->usd_per_hour = rq->has_usd_per_hour ? rq->usd_per_hour : -1;
	if (r->finetune) {
		r->ft.task = PLAN_FT_TEXT_GENERATION;
		r->ft.methods = PLAN_FT_METHOD_BIT(rec_train_mode(rq->mode));
		return 0;
	}
	plan_request_default(&r->infer);
	r->infer.runtime = PLAN_RT_LLAMA_CPP;
	r->infer.choice_only = true;
	r->infer.ftype = in->gguf_ftype >= 0 ? in->gguf_ftype :
			 rq->has_quant       ? rf_ftype_from_name(rq->quant) :
					       rf_ftype_from_name("Q4_K_M");
	if (r->infer.ftype < 0)
		return api_error(out, RF_E_INVALID_VALUE, "quant",
				 "unknown quant '%.20s'; use a GGUF type such as Q4_K_M",
				 rq->quant);
	if (rq->has_quant && in->gguf_ftype >= 0)
		return api_error(out, RF_E_INVALID_VALUE, "quant",
				 "a GGUF file has its own quantization; leave quant out");
	r->infer.n_ctx = rq->has_n_ctx ? rq->n_ctx : REC_DEFAULT_CTX;
	if (!rq->has_n_ctx && maxpos > 0 && maxpos < r->infer.n_ctx)
		r->infer.n_ctx = maxpos;
	return 0;
}

int rec_hardware(const struct api_env *env, const struct rec_request *rq, struct api_reply *out)
{
	struct api_plan_input *in = NULL;
	struct plan_hw_request r;
	struct plan_hw_answer a = {0};
	struct plan_quality q;
	struct plan_model im;
	struct plan_ft_model fm;
	struct rec_hw_ctx ctx = {env};
	int rc;

	/* The model, resolved once: for inference as /api/estimate resolves it for inference
	 * (on any machine: the first device profile stands in), else for fine-tuning. */
	if (rq->mode == REC_INFERENCE) {
		const char *first = env->cat.devices && env->cat.devices->n ?
					    env->cat.devices->devices[0].id :
					    NULL;
		rc = first ? api_plan_input(env, rq->model, NULL, first, &in, out) :
			     api_model_input(env, rq->model, &in, out);
	} else {
		rc = api_model_input(env, rq->model, &in, out);
	}
	if (rc < 0)
		return rc;
	if ((rc = rec_hw_request(rq, in, &r, out)) < 0 ||
	    (!r.finetune && (rc = api_plan_quality(env, &q, out)) < 0))
		goto done;
	api_plan_model(in, &im);
	fm.arch = in->arch;
	fm.params = in->params;
	rc = plan_hardware(env->cat.devices, &im, &fm, &q, &r, rec_hw_machine, &ctx, &a);
	if (rc < 0) {
		rc = api_error(out, rc, NULL, NULL);
		goto done;
	}
	rc = rec_hw_render(env, rq, in, &r, &a, out);
done:
	plan_hw_answer_free(&a);
	api_plan_input_free(in);
	return rc;
}
