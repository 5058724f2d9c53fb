/*
 * Lookups in the quality table (see plan_quality.h).
 */
#include "core/plan/plan_quality.h"

#include "core/fit/quant.h"

static double find(const struct plan_quality_row *rows, int n, int id)
{
	for (int i = 0; i < n; i++)
		if (rows[i].id == id)
			return rows[i].kld;
	return -1;
}

double plan_quality_weights(const struct plan_quality *q, int ft)
{
	return find(q->weights, q->n_weights, ft);
}

double plan_quality_kv(const struct plan_quality *q, int t)
{
	return find(q->kv, q->n_kv, t);
}

double plan_quality_setup(const struct plan_quality *q, const struct plan_setup *s, bool native)
{
	bool vllm = s->runtime == PLAN_RT_VLLM;
	int ft = !vllm                                             ? s->ftype :
		 s->vformat >= 0 && s->vformat < PLAN_VLLM_FORMATS ? q->vllm_as[s->vformat] :
								     -1;
	/* vLLM's MXFP4 is a model's own format (gpt-oss), as llama.cpp's is. */
	double w = native || (vllm && s->vformat == PLAN_VLLM_MXFP4) ? 0 :
								       plan_quality_weights(q, ft);
	double k = plan_quality_kv(q, s->p.type_k), v = plan_quality_kv(q, s->p.type_v);

	if (w < 0 || k < 0 || v < 0)
		return -1;
	return w + (k > v ? k : v);
}

double plan_quality_floor(const struct plan_quality *q)
{
	double w = plan_quality_weights(q, q->floor_ftype);
	double k = plan_quality_kv(q, RF_GT_F16);

	return (w < 0 ? 0 : w) + (k < 0 ? 0 : k) + q->tie_kld;
}
