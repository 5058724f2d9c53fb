/*
 * POST /api/recommend with mode lora, qlora or full: which catalog models can be fine-tuned
 * here for the task. Each model that may be fine-tuned for the task (plan_ft_task_fits) is
 * planned by the fine-tuning planner (core/plan/plan_finetune.h) for that method on the
 * machine as core/plan/plan_ft_machine.h describes it: the same plan /api/finetune/detect makes
 * for the same model, machine, task and method. The models whose plan is feasible (at least
 * the task's floor length) are ranked by plan_rank_finetune (core/plan/plan_rank.h); each
 * shown entry carries the plan's settings in /api/estimate's terms and the estimator's
 * account of them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/estimate.h"
#include "api/json_alloc.h"
#include "api/json_print.h"
#include "api/model_memo.h"
#include "api/recommend_parts.h"
#include "core/err.h"
#include "core/plan/plan_ft_machine.h"
#include "core/plan/plan_rank.h"
#include "core/format.h"

/* One model planned. */
struct rec_ft_hit {
	const struct model_entry *m;
	struct plan_ft_result plan;
	double utilization; /* of the smallest budget among the run's GPUs */
	struct plan_rank_score score;
};

enum train_mode rec_train_mode(int mode)
{
	return mode == REC_QLORA ? TRAIN_QLORA : mode == REC_FULL ? TRAIN_FULL : TRAIN_LORA;
}

static enum plan_ft_task rec_ft_task(unsigned task)
{
	return task == MODEL_TASK_SUMMARIZATION   ? PLAN_FT_SUMMARIZATION :
	       task == MODEL_TASK_TEXT_GENERATION ? PLAN_FT_TEXT_GENERATION :
						    PLAN_FT_QUESTION_ANSWERING;
}

static const char *rec_ft_precision(const struct plan_ft_setup *s)
{
	if (s->mode == TRAIN_QLORA)
		return s->bf16 ? "nf4 base, bf16 adapters" : "nf4 base, fp16 adapters";
	return s->bf16 ? "bf16" : "fp16";
}

/* Plans every model of the task on dev into hits (room for the catalog). Returns how many
 * are feasible, or a negative rf_err. */
static int rec_ft_plan_all(const struct api_env *env, const struct plan_ft_device *dev,
			   const struct plan_ft_request *r, unsigned task, struct rec_ft_hit *hits,
			   size_t *considered, long *evaluated)
{
	int n = 0;

	for (size_t i = 0; i < env->cat.models->n; i++) {
		const struct model_entry *m = &env->cat.models->models[i];
		struct model_params params;
		struct plan_ft_model pm = {&m->arch, &params};
		struct rec_ft_hit *h = &hits[n];
		const struct plan_ft_setup *s = &h->plan.best;
		int64_t budget;
		int rc;
		if (!plan_ft_task_fits(task, m->arch.family, m->tasks))
			continue;
		rc = api_memo_params(&m->arch, &params);
		if (rc == RF_E_NOMEM)
			return rc;
		if (rc < 0)
			continue;
		(*considered)++;
		rc = plan_finetune(&pm, dev, r, &h->plan);
		if (rc < 0)
			return rc;
		*evaluated += h->plan.n_evaluated;
		if (!h->plan.feasible)
			continue;
		h->m = m;
		budget = s->n_gpus > 1 ? dev->gpu_budget_bytes[s->n_gpus - 1] : dev->budget_bytes;
		h->utilization = budget > 0 ? (double)s->memory.total_bytes / (double)budget : -1;
		plan_rank_finetune(m->params_b > 0 ? m->params_b : (double)params.total / 1e9,
				   s->tokens_per_s, h->utilization, &h->score);
		n++;
	}
	return n;
}

/* What an expert offers first, by the rule /api/finetune/detect ranks with
 * (plan_ft_preferred). */
static bool rec_ft_preferred(const struct rec_ft_hit *h)
{
	struct plan_ft_candidate c = {.stale = h->m->stale, .moe = h->m->arch.n_experts > 0};

	c.plan = h->plan;
	return plan_ft_preferred(&c);
}

/* An entry: the plan's settings (as /api/estimate takes them), what the plan adds, the
 * estimator's account and the score with its terms. */
static cJSON *rec_ft_entry_json(const struct rec_ft_hit *h, cJSON *estimate)
{
	const struct plan_ft_setup *s = &h->plan.best;
	cJSON *o = cJSON_CreateObject(), *p;
	char why[REC_WHY_LEN];
	double params = h->m->params_b > 0 ? h->m->params_b : 1;

	if (!o) {
		cJSON_Delete(estimate);
		return NULL;
	}
	cJSON_AddStringToObject(o, "model", h->m->id);
	cJSON_AddStringToObject(o, "name", h->m->name[0] ? h->m->name : h->m->id);
	if (h->m->params_b > 0)
		cJSON_AddNumberToObject(o, "params_b", h->m->params_b);
	else
		cJSON_AddNullToObject(o, "params_b");
	cJSON_AddStringToObject(o, "precision", rec_ft_precision(s));
	api_json_add(o, "settings", rec_ft_settings(s));
	p = cJSON_AddObjectToObject(o, "plan");
	if (p) {
		cJSON_AddNumberToObject(p, "n_gpus", (double)(s->n_gpus > 0 ? s->n_gpus : 1));
		cJSON_AddNumberToObject(p, "gradient_accumulation_steps", (double)s->grad_accum);
		cJSON_AddNumberToObject(p, "effective_batch_size", (double)h->plan.effective_batch);
		cJSON_AddBoolToObject(p, "bf16", s->bf16);
		cJSON_AddBoolToObject(p, "reached_task_length", h->plan.reached_target);
		cJSON_AddNumberToObject(p, "task_seq_len", (double)h->plan.target_seq);
		cJSON_AddNumberToObject(p, "memory_total_bytes", (double)s->memory.total_bytes);
		cJSON_AddNumberToObject(p, "utilization", round(h->utilization * 1000) / 1000);
		if (s->tokens_per_s > 0)
			cJSON_AddNumberToObject(p, "tokens_per_s",
						round(s->tokens_per_s * 10) / 10);
		else
			cJSON_AddNullToObject(p, "tokens_per_s");
	}
	api_json_add(o, "estimate", estimate);
	cJSON_AddBoolToObject(o, "preferred", rec_ft_preferred(h));
	cJSON_AddNumberToObject(o, "score", h->score.score);
	rf_format(why, sizeof(why),
		  "%s (%.2fB params), %s in %s at seq_len %lld, micro-batch %lld x %lld steps: "
		  "quality "
		  "%.1f (10 x log2(%.2f)) + speed %.1f (%.1f training tokens/s) + headroom "
		  "%.1f (%.0f%% of the memory used) = %.1f.",
		  h->m->id, params, plan_ft_method_name(s->mode), rec_ft_precision(s),
		  (long long)s->seq_len, (long long)s->batch_size, (long long)s->grad_accum,
		  h->score.quality, params, h->score.speed,
		  s->tokens_per_s > 0 ? s->tokens_per_s : 0, h->score.headroom,
		  h->utilization >= 0 ? h->utilization * 100 : 100, h->score.score);
	cJSON_AddStringToObject(o, "why", why);
	return o;
}

/* Renders the ranked hits, the first limit of them with an estimate each. */
static int rec_ft_render(const struct api_env *env, const struct rec_request *rq,
			 struct api_plan_input *in, const char *task_name,
			 const struct rec_ft_hit *hits, const struct plan_rank_model *order, int n,
			 size_t considered, long evaluated, struct api_reply *out)
{
	int64_t limit = rq->has_limit ? rq->limit : REC_DEFAULT_LIMIT;
	cJSON *root = cJSON_CreateObject(), *arr;
	int rc = 0;

	if (!root)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	cJSON_AddStringToObject(root, "for", "models");
	cJSON_AddStringToObject(root, "task", task_name);
	cJSON_AddStringToObject(root, "mode", rec_modes[rq->mode]);
	cJSON_AddNumberToObject(root, "considered", (double)considered);
	cJSON_AddNumberToObject(root, "setups_evaluated", (double)evaluated);
	cJSON_AddStringToObject(
		root, "scoring",
		"each model at the fine-tuning planner's best setup for the task "
		"and method (as /api/finetune/detect plans it); preferred ones first (runs on "
		"the GPUs alone of current dense models), then by score = quality (10 "
		"x log2(params in billions)) + speed (10 x log10(1 + training "
		"tokens/s)) + headroom (10 x (1 - utilization))");
	arr = cJSON_AddArrayToObject(root, "recommendations");
	for (int i = 0; i < n && i < limit && rc == 0; i++) {
		const struct rec_ft_hit *h = &hits[order[i].index];
		struct api_estimate_request erq;
		cJSON *est = NULL;
		rec_ft_request(&h->plan.best, &erq);
		rc = api_plan_input_set_entry(in, h->m);
		if (rc == 0)
			rc = rec_estimate(env, in, &erq, &est);
		else if (rc != RF_E_NOMEM)
			rc = 0; /* planned, so its parameters were counted: not expected */
		if (rc == 0)
			api_json_append(arr, rec_ft_entry_json(h, rec_summary(est, false)));
		cJSON_Delete(est);
	}
	if (rc < 0) {
		cJSON_Delete(root);
		return api_error(out, rc, NULL, NULL);
	}
	if (n == 0)
		cJSON_AddStringToObject(root, "reason",
					considered == 0 ?
						"no model in the catalog can be fine-tuned "
						"for this task" :
						"no model for this task can be fine-tuned "
						"on this machine with this method at the "
						"task's shortest sequence length");
	return api_reply_cjson(out, 200, root);
}

int rec_finetune(const struct api_env *env, const struct rec_request *rq, const cJSON *hw,
		 struct api_reply *out)
{
	const char *task_name = NULL;
	unsigned task = rec_task(rq, &task_name, out);
	struct api_plan_input *in = NULL;
	struct plan_ft_device dev;
	struct plan_ft_request r = {0};
	struct rec_ft_hit *hits = NULL;
	struct plan_rank_model *order = NULL;
	size_t considered = 0;
	long evaluated = 0;
	int rc, n;

	if (!task)
		return RF_E_INVALID_VALUE;
	if ((rc = rec_machine(env, rq, hw, &in, out)) < 0)
		return rc;
	plan_ft_machine(in->hw, &in->machine, env->cat.devices, &dev);
	r.task = rec_ft_task(task);
	r.methods = PLAN_FT_METHOD_BIT(rec_train_mode(rq->mode));
	hits = calloc(env->cat.models->n + 1, sizeof(*hits));
	order = calloc(env->cat.models->n + 1, sizeof(*order));
	if (!hits || !order) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	n = rec_ft_plan_all(env, &dev, &r, task, hits, &considered, &evaluated);
	if (n < 0) {
		rc = api_error(out, n, NULL, NULL);
		goto done;
	}
	for (int i = 0; i < n; i++) {
		order[i].id = hits[i].m->id;
		order[i].first = rec_ft_preferred(&hits[i]);
		order[i].score = hits[i].score.score;
		order[i].index = (size_t)i;
	}
	plan_rank_models(order, (size_t)n);
	rc = rec_ft_render(env, rq, in, task_name, hits, order, n, considered, evaluated, out);
done:
	api_plan_input_free(in);
	free(hits);
	free(order);
	return rc;
}
