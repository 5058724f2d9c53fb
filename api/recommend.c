/*
 * POST /api/recommend (and `rigfit recommend`). The request is parsed here and each question
 * goes to core/plan, in structs, once per candidate:
 *
 *  - "Which models fit here?" (the default), for inference: every current catalog model that
 *    serves the task is planned by the inference planner (core/plan/plan_infer.h) on the
 *    machine (this host, "hardware" or "hardware_profile"), resolved once, and ranked by
 *    plan_rank_inference (core/plan/plan_rank.h): instruction-tuned models first for chat,
 *    then score = quality + speed + wait + headroom; each entry says its numbers in `why`.
 *  - The same for fine-tuning (mode lora, qlora or full): the fine-tuning planner, as
 *    /api/finetune/detect plans (api/recommend_finetune.c).
 *  - "Which hardware runs this model?" ("for": "hardware"): core/plan/plan_hardware.h's sweep
 *    of device profiles and counts (api/recommend_hardware.c).
 *
 * "model" takes every shape /api/estimate takes, resolved by api/estimate.h's resolver, with
 * /api/estimate's errors.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/json_alloc.h"
#include "api/json_print.h"
#include "api/jsonmap.h"
#include "api/plan_quality_json.h"
#include "api/recommend.h"
#include "api/recommend_parts.h"
#include "api/rope_settings.h"
#include "core/err.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "core/plan/plan_infer.h"
#include "core/plan/plan_rope.h"
#include "core/plan/plan_rank.h"
#include "core/format.h"

const char *const rec_modes[] = {"inference", "lora", "qlora", "full", NULL};
static const char *const rec_targets[] = {"models", "hardware", NULL};

enum {
	REC_FOR_MODELS = 0,
	REC_FOR_HARDWARE = 1
};

#define RF_(name, kind, field, size, lo, hi, has)                                                  \
	{                                                                                          \
		name, kind, offsetof(struct rec_request, field), size, lo, hi, false,              \
			offsetof(struct rec_request, has), NULL                                    \
	}
#define RS_(name, field, has)                                                                      \
	RF_(name, JM_STRING, field, sizeof(((struct rec_request *)0)->field), 0, 0, has)
#define RE_(name, field, has, choices)                                                             \
	{                                                                                          \
		name, JM_ENUM, offsetof(struct rec_request, field), 0, 0, 0, false,                \
			offsetof(struct rec_request, has), choices                                 \
	}

static const struct jm_field rec_fields[] = {
	{"hardware", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	RS_("task", task, has_task),
	RS_("use_case", use_case, has_use_case),
	RE_("mode", mode, has_mode, rec_modes),
	RF_("limit", JM_INT, limit, 0, 1, REC_MAX_LIMIT, has_limit),
	RF_("min_context", JM_INT, min_context, 0, 1, 1 << 24, has_min_context),
	RS_("hardware_profile", hardware_profile, has_hardware_profile),
	{"model", JM_ANY, 0, 0, 0, 0, false, 0, NULL}, /* any shape /api/estimate takes */
	RE_("for", target, has_target, rec_targets),
	RF_("usd_per_hour", JM_DOUBLE, usd_per_hour, 0, 0, 1e6, has_usd_per_hour),
	RF_("n_ctx", JM_INT, n_ctx, 0, 1, 1 << 24, has_n_ctx),
	RS_("quant", quant, has_quant),
	RF_("min_tokens_per_s", JM_DOUBLE, min_tps, 0, 0.01, 100000, has_min_tps),
};

/* Maps task or use_case to a task bit; 0 (and a 422 in out) for an unknown one. */
unsigned rec_task(const struct rec_request *rq, const char **name, struct api_reply *out)
{
	const char *field = rq->has_use_case ? "use_case" : "task";
	const char *t = rq->has_use_case ? rq->use_case :
			rq->has_task     ? rq->task :
					   "text-generation";
	unsigned bit;

	if (rq->has_task && rq->has_use_case) {
		api_error(out, RF_E_INVALID_VALUE, "use_case", "give task or use_case, not both");
		return 0;
	}
	if (strcmp(t, "chat") == 0 || strcmp(t, "general") == 0 || strcmp(t, "coding") == 0)
		t = "text-generation";
	bit = model_task_from_name(t);
	if (!bit) {
		api_error(out, RF_E_INVALID_VALUE, field,
			  "unknown task '%.48s'; use text-generation, summarization, "
			  "question-answering, extractive-question-answering, chat, general or "
			  "coding",
			  t);
		return 0;
	}
	*name = model_task_name(bit);
	return bit;
}

/* ---- which models fit here: inference, by the planner ------------------------------------- */

struct rec_plan_hit {
	const struct model_entry *m;
	const char *shown; /* the id shown: an Instruct release for chat when the catalog has it */
	bool chat;         /* tuned to follow instructions */
	struct plan_choice best;
	struct plan_rank_score score;
	char objective[PLAN_OBJECTIVE_LEN]; /* as the planner stated it for this model */
};

/* An entry: the estimate request's settings (so the entry can be asked of /api/estimate as it
 * is), the planner's estimate and the score with its terms. */
static cJSON *rec_plan_entry_json(const struct rec_plan_hit *h, bool gpus)
{
	const struct plan_setup *s = &h->best.setup;
	const struct rf_mem_estimate *e = &h->best.res.mem;
	cJSON *o = cJSON_CreateObject(), *est;
	const char *prec = rf_ftype_name(s->ftype) ? rf_ftype_name(s->ftype) : "unknown";
	char why[REC_WHY_LEN], wait[96] = "";

	if (!o)
		return NULL;
	if (h->score.wait < 0)
		rf_format(wait, sizeof(wait),
			  " - wait %.1f (below interactive speed, %.0f tokens/s)", -h->score.wait,
			  PLAN_INTERACTIVE_TPS);
	cJSON_AddStringToObject(o, "model", h->shown);
	cJSON_AddStringToObject(o, "catalog_id", h->m->id);
	cJSON_AddStringToObject(o, "name", h->m->name[0] ? h->m->name : h->m->id);
	if (h->m->params_b > 0)
		cJSON_AddNumberToObject(o, "params_b", h->m->params_b);
	else
		cJSON_AddNullToObject(o, "params_b");
	cJSON_AddBoolToObject(o, "instruct", h->chat);
	cJSON_AddStringToObject(o, "precision", prec);
	{
		/* Past the trained window: the card's rope scaling, as /api/config writes it. */
		struct plan_rope r;
		cJSON *set = rec_infer_settings(s, gpus);
		api_rope_for(&h->m->arch, &h->m->long_ctx, s, &r);
		api_rope_settings(&r, set);
		api_json_add(o, "settings", set);
	}
	est = cJSON_AddObjectToObject(o, "estimate");
	if (est) {
		cJSON_AddBoolToObject(est, "fits", h->best.res.fits);
		cJSON_AddNumberToObject(est, "utilization", round(e->utilization * 1000) / 1000);
		cJSON_AddStringToObject(est, "fit_band",
					e->fit_band ? e->fit_band : rf_fit_band(e->utilization));
		cJSON_AddNumberToObject(est, "memory_total_bytes", (double)e->total_bytes);
		/* What must stay resident: a repacked tensor's mapped pages are clean page cache. */
		cJSON_AddNumberToObject(est, "memory_needed_bytes",
					(double)(e->total_bytes - e->host_reclaimable_bytes));
		cJSON_AddNumberToObject(est, "decode_tokens_per_s",
					round(h->best.res.decode_tps * 10) / 10);
		cJSON_AddNumberToObject(est, "kl_divergence", h->best.kld);
	}
	cJSON_AddNumberToObject(o, "score", h->score.score);
	rf_format(why, sizeof(why),
		  "%s (%.2fB params) at %s, n_ctx %lld: quality %.1f (10 x log2(%.2f) - 100 x "
		  "KLD %.4f) + speed %.1f (%.1f decode tokens/s)%s + headroom %.1f (%.0f%% of the "
		  "memory used) = %.1f. %s",
		  h->shown, h->m->params_b > 0 ? h->m->params_b : 1, prec, (long long)s->p.n_ctx,
		  h->score.quality, h->m->params_b > 0 ? h->m->params_b : 1, h->best.kld,
		  h->score.speed, h->best.res.decode_tps, wait, h->score.headroom,
		  e->utilization * 100, h->score.score, h->best.why);
	cJSON_AddStringToObject(o, "why", why);
	return o;
}

int rec_machine(const struct api_env *env, const struct rec_request *rq, const cJSON *hw,
		struct api_plan_input **in, struct api_reply *out)
{
	if (!env->cat.models || env->cat.models->n == 0)
		return api_error(out, RF_E_UNAVAILABLE, NULL,
				 "no model catalog is loaded (profiles/models.json)");
	/* The machine alone: each catalog model is put in with api_plan_input_set_entry. */
	return api_machine_input(env, hw, rq->has_hardware_profile ? rq->hardware_profile : NULL,
				 in, out);
}

/* The catalog model the request names (model), ranked even where its family is stale: any
 * shape /api/estimate takes, resolved as it resolves it and refused with its errors; a model
 * outside the catalog is refused (it has no place in the catalog's ranking). Returns 0 with
 * *named (NULL when none is named), or a negative rf_err with the envelope in out. */
static int rec_named(const struct api_env *env, const struct rec_request *rq,
		     const struct model_entry **named, struct api_reply *out)
{
	struct api_plan_input *in = NULL;
	int rc;

	*named = NULL;
	if (!rq->model)
		return 0;
	if ((rc = api_model_input(env, rq->model, &in, out)) < 0)
		return rc;
	*named = in->entry;
	api_plan_input_free(in);
	if (!*named)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "recommend ranks catalog models; ask about a model outside the "
				 "catalog with \"for\": \"hardware\" or /api/estimate");
	return 0;
}

static int rec_models_planned(const struct api_env *env, const struct rec_request *rq,
			      const cJSON *hw, struct api_reply *out)
{
	const char *task_name = NULL;
	unsigned task = rec_task(rq, &task_name, out);
	size_t n_models = env->cat.models ? env->cat.models->n : 0, n_hits = 0, considered = 0;
	size_t slow = 0, stale = 0, evaluated = 0;
	const struct model_entry *named = NULL;
	struct rec_plan_hit *hits = NULL;
	struct plan_rank_model *order = NULL;
	struct plan_answer *ans = NULL;
	struct plan_quality q;
	struct plan_request preq;
	struct api_plan_input *in = NULL;
	bool chat = task == MODEL_TASK_TEXT_GENERATION, gpus;
	int64_t limit = rq->has_limit ? rq->limit : REC_DEFAULT_LIMIT;
	cJSON *root, *arr;
	int rc;

	if (!task)
		return RF_E_INVALID_VALUE;
	if ((rc = api_plan_quality(env, &q, out)) < 0)
		return rc;
	if ((rc = rec_named(env, rq, &named, out)) < 0)
		return rc;
	if ((rc = rec_machine(env, rq, hw, &in, out)) < 0)
		return rc;
	/* The runs recorded on this machine refine each model's speeds as they refine the
	 * estimate of its pick. */
	if ((rc = api_plan_input_history(env, in)) < 0) {
		api_plan_input_free(in);
		return api_error(out, rc, NULL, NULL);
	}
	gpus = in->machine.n_dev > 0;
	hits = calloc(n_models + 1, sizeof(*hits));
	order = calloc(n_models + 1, sizeof(*order));
	ans = malloc(sizeof(*ans));
	if (!hits || !order || !ans) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	plan_request_default(&preq);
	preq.choice_only = true;
	/* coding: text generation planned for coding (plan_infer.h) */
	if (rq->has_use_case && strcmp(rq->use_case, "coding") == 0)
		preq.use_case = PLAN_CODING;
	if (rq->has_min_context)
		preq.n_ctx = rq->min_context;
	if (rq->has_min_tps)
		preq.min_tps = rq->min_tps;
	for (size_t i = 0; i < n_models; i++) {
		const struct model_entry *m = &env->cat.models->models[i];
		struct plan_model pm;
		if (!(m->tasks & task) || m->arch.family != MODEL_DECODER)
			continue;
		if (m->stale && m != named) {
			stale++;
			continue;
		}
		if (rq->has_min_context && plan_rope_max(&m->arch, &m->long_ctx) > 0 &&
		    plan_rope_max(&m->arch, &m->long_ctx) < rq->min_context)
			continue; /* the model cannot take that context, even as its card scales it */
		considered++;
		rc = api_plan_input_set_entry(in, m);
		if (rc == RF_E_NOMEM) {
			rc = api_error(out, rc, NULL, NULL);
			goto done;
		}
		if (rc < 0)
			continue;
		api_plan_model(in, &pm);
		rc = plan_infer(&pm, &in->machine, &q, &preq, ans);
		if (rc == RF_E_NOMEM) {
			rc = api_error(out, rc, NULL, NULL);
			goto done;
		}
		evaluated += rc == 0 ? (size_t)ans->evaluated : 0;
		if (rc < 0 || !ans->found)
			continue;
		/* Nothing slower than the floor is recommended. */
		if (ans->below_floor) {
			slow++;
			continue;
		}
		hits[n_hits].m = m;
		hits[n_hits].shown = chat && model_chat_id(m) ? model_chat_id(m) : m->id;
		hits[n_hits].chat = chat && model_chat_id(m) != NULL;
		hits[n_hits].best = ans->best;
		rf_format(hits[n_hits].objective, sizeof(hits[n_hits].objective), "%s",
			  ans->objective);
		plan_rank_inference(m->params_b, ans->best.kld, ans->best.res.decode_tps,
				    ans->best.res.mem.utilization, &hits[n_hits].score);
		order[n_hits].id = m->id;
		order[n_hits].first = hits[n_hits].chat;
		order[n_hits].score = hits[n_hits].score.score;
		order[n_hits].index = n_hits;
		n_hits++;
	}
	rc = 0;
	plan_rank_models(order, n_hits);
	root = cJSON_CreateObject();
	if (!root) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	cJSON_AddStringToObject(root, "for", "models");
	cJSON_AddStringToObject(root, "task", task_name);
	cJSON_AddStringToObject(root, "mode", "inference");
	cJSON_AddNumberToObject(root, "considered", (double)considered);
	cJSON_AddNumberToObject(root, "below_speed_floor", (double)slow);
	cJSON_AddNumberToObject(root, "stale_left_out", (double)stale);
	cJSON_AddNumberToObject(root, "setups_evaluated", (double)evaluated);
	/* The objective the first recommendation was planned under (the last model's, which may
	 * not have fitted at all, states no floor it met). */
	cJSON_AddStringToObject(root, "objective",
				n_hits ? hits[order[0].index].objective : ans->objective);
	cJSON_AddStringToObject(
		root, "scoring",
		chat ? "instruction-tuned models first (chat), then score = quality (10 x log2("
		       "params in billions) - 100 x the setup's KL divergence) + speed (10 x "
		       "log10(1 + decode tokens/s)) - wait (10 x log2(15 / decode tokens/s) below "
		       "interactive speed, 15 tokens/s) + headroom (10 x (1 - utilization)); each "
		       "model at the planner's best setup for general use; none below the speed "
		       "floor; older families only when named (model)" :
		       "score = quality (10 x log2(params in billions) - 100 x the setup's KL "
		       "divergence) + speed (10 x log10(1 + decode tokens/s)) - wait (10 x log2(15 / "
		       "decode tokens/s) below interactive speed, 15 tokens/s) + headroom (10 x (1 - "
		       "utilization)); each model at the planner's best setup for general use; "
		       "none below the speed floor; older families only when named (model)");
	arr = cJSON_AddArrayToObject(root, "recommendations");
	for (size_t i = 0; i < n_hits && (int64_t)i < limit; i++)
		api_json_append(arr, rec_plan_entry_json(&hits[order[i].index], gpus));
	if (n_hits == 0)
		cJSON_AddStringToObject(
			root, "reason",
			considered == 0 ? "no current model in the catalog serves this task" :
			slow > 0        ? "no model for this task reaches the speed floor here" :
			rq->has_min_context ? "no model for this task fits this machine with this "
					      "min_context" :
					      "no model for this task fits this machine");
	rc = api_reply_cjson(out, 200, root);
done:
	api_plan_input_free(in);
	free(hits);
	free(order);
	free(ans);
	return rc;
}

/* ---- the route -------------------------------------------------------------------------- */

int api_recommend(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	struct rec_request rq;
	cJSON *body = NULL;
	const cJSON *hw;
	int rc;

	memset(&rq, 0, sizeof(rq));
	rc = jm_parse_body(req, true, &body, out);
	if (rc < 0)
		return rc;
	rc = jm_map(body, rec_fields, sizeof(rec_fields) / sizeof(rec_fields[0]), &rq, out);
	if (rc < 0)
		goto done;
	rq.model = cJSON_GetObjectItemCaseSensitive(body, "model");
	hw = cJSON_GetObjectItemCaseSensitive(body, "hardware");
	if (!rq.has_mode)
		rq.mode = REC_INFERENCE;
	if (rq.has_target && rq.target == REC_FOR_HARDWARE) {
		const char *unused = rq.has_task             ? "task" :
				     rq.has_use_case         ? "use_case" :
				     rq.has_min_context      ? "min_context" :
				     hw                      ? "hardware" :
				     rq.has_hardware_profile ? "hardware_profile" :
							       NULL;
		if (unused)
			rc = api_error(out, RF_E_INVALID_VALUE, unused,
				       "%s is not used with \"for\": \"hardware\"", unused);
		else if (!rq.model)
			rc = api_error(out, RF_E_MISSING_FIELD, "model",
				       "\"for\": \"hardware\" needs a model");
		else if (rq.has_quant && rq.mode != REC_INFERENCE)
			rc = api_error(out, RF_E_INVALID_VALUE, "quant",
				       "quant is for inference; fine-tuning ranks by mode");
		else if (rq.has_n_ctx && rq.mode != REC_INFERENCE)
			rc = api_error(out, RF_E_INVALID_VALUE, "n_ctx",
				       "n_ctx is for inference; fine-tuning plans the task's "
				       "sequence length");
		else
			rc = rec_hardware(env, &rq, out);
		goto done;
	}
	{
		const char *unused = rq.model && rq.mode != REC_INFERENCE ? "model" :
				     rq.has_usd_per_hour                  ? "usd_per_hour" :
				     rq.has_n_ctx                         ? "n_ctx" :
				     rq.has_quant                         ? "quant" :
									    NULL;
		if (unused) {
			rc = api_error(out, RF_E_INVALID_VALUE, unused,
				       "%s is only used with \"for\": \"hardware\"", unused);
			goto done;
		}
	}
	if (rq.has_min_context && rq.mode != REC_INFERENCE) {
		rc = api_error(out, RF_E_INVALID_VALUE, "min_context",
			       "min_context is for inference");
		goto done;
	}
	if (rq.has_min_tps && rq.mode != REC_INFERENCE) {
		rc = api_error(out, RF_E_INVALID_VALUE, "min_tokens_per_s",
			       "min_tokens_per_s is for inference");
		goto done;
	}
	rc = rq.mode == REC_INFERENCE ? rec_models_planned(env, &rq, hw, out) :
					rec_finetune(env, &rq, hw, out);
done:
	cJSON_Delete(body);
	return rc;
}
