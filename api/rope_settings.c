/*
 * The rope scaling a planned setup writes (see rope_settings.h).
 */
#include "api/rope_settings.h"

#include "api/jsonmap.h"

bool api_rope_for(const struct model_arch *a, const struct model_rope *doc,
		  const struct plan_setup *s, struct plan_rope *out)
{
	const struct rf_infer_params *p = &s->p;
	int64_t seq = s->runtime == PLAN_RT_VLLM || p->n_parallel < 1 ? p->n_ctx :
									p->n_ctx / p->n_parallel;

	plan_rope_decide(a, doc, seq, out);
	return out->need == PLAN_ROPE_SCALED;
}

void api_rope_settings(const struct plan_rope *r, cJSON *set)
{
	if (r->need != PLAN_ROPE_SCALED || !set)
		return;
	cJSON_AddStringToObject(set, "rope_scaling", "yarn");
	cJSON_AddNumberToObject(set, "rope_scale", r->use.factor);
	cJSON_AddNumberToObject(set, "yarn_orig_ctx", (double)r->use.orig_ctx);
}

void api_rope_request(const struct plan_rope *r, struct api_estimate_request *rq)
{
	if (r->need != PLAN_ROPE_SCALED)
		return;
	rq->rope = jm_choice(api_est_ropes, "yarn");
	rq->has_rope = rq->rope >= 0;
	rq->rope_scale = r->use.factor;
	rq->has_rope_scale = true;
	rq->yarn_orig_ctx = r->use.orig_ctx;
	rq->has_yarn_orig_ctx = true;
}
