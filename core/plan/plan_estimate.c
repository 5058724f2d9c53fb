/*
 * The one estimate of a setup (see plan_estimate.h).
 */
#include "core/plan/plan_estimate.h"

#include <string.h>

#include "core/err.h"

/* The traffic of ask: what it does not give is a chat turn, concurrency dflt. */
static struct plan_traffic traffic_of(const struct plan_traffic_ask *ask, int64_t dflt)
{
	struct plan_traffic t;

	t.concurrency = ask->concurrency > 0 ? ask->concurrency : dflt;
	t.prompt = ask->prompt > 0 ? ask->prompt : PLAN_PROMPT_TOKENS;
	t.output = ask->output > 0 ? ask->output : PLAN_OUTPUT_TOKENS;
	if (t.concurrency < 1)
		t.concurrency = 1;
	return t;
}

/* The batched figures of sv->t on a setup whose speed model's inputs are in (constants
 * params), kv_per_token KV bytes a token over every layer, and their price per token. */
static void serve_batched(const struct plan_est_context *x, const struct speed_input *in,
			  const struct speed_params params[SPEED_BACKEND_COUNT],
			  double kv_per_token, double usd_per_hour, struct plan_serving *sv)
{
	sv->moe = false;
	sv->ok = plan_batched(x->a, x->mp, in, params, kv_per_token, &sv->t, &sv->b, &sv->moe) == 0;
	sv->usd_per_million_tokens =
		sv->ok && usd_per_hour >= 0 ?
			usd_per_hour / (sv->b.aggregate_tokens_per_s * 3600) * 1e6 :
			-1;
}

/* A llama.cpp setup into res; with out (detail), also what the route states. */
static int estimate_llama(const struct plan_est_request *q, const struct plan_est_context *x,
			  struct plan_result *res, struct plan_est_answer *out)
{
	const struct plan_setup *s = q->u.llama;
	const struct rf_mem_estimate *m = &res->mem;
	const struct plan_wsum *sum = x->sum;
	struct plan_wsum local;
	struct plan_serving *sv;
	int rc;

	if (!sum) {
		plan_weights_sum(x->a, x->w, s->ftype, x->hw->host.repack_isa, &local);
		sum = &local;
	}
	rc = plan_evaluate_llama(x->a, x->mp, x->w, sum, x->hw, s, res, out ? &out->speed : NULL,
				 out ? &out->in : NULL);
	if (rc < 0 || !out)
		return rc;
	sv = &out->serving;
	out->basis = out->speed.basis[SPEED_TEST_DECODE] > out->speed.basis[SPEED_TEST_PREFILL] ?
			     out->speed.basis[SPEED_TEST_DECODE] :
			     out->speed.basis[SPEED_TEST_PREFILL];
	/* No run recorded, but this host was measured: the model stands on measured figures. */
	out->measured_host = out->in.backend == SPEED_BACKEND_CPU && x->hw->host_measured &&
			     out->basis == SPEED_BASIS_ROOFLINE;
	out->so_ok = speed_estimate(&out->in, &out->so) == 0;
	/* llama-server's slots: n_parallel streams at most decode together. */
	memset(sv, 0, sizeof(*sv));
	sv->t = traffic_of(&q->traffic, s->p.n_parallel);
	sv->asked = sv->t.concurrency;
	sv->warn = plan_llama_traffic(&s->p, m->n_ctx, &sv->t);
	serve_batched(x, &out->in, speed_fitted,
		      m->n_ctx > 0 ? (double)m->kv_cache_bytes / (double)m->n_ctx : 0,
		      q->traffic.usd_per_hour, sv);
	return 0;
}

/* vLLM's capacity for v's engine into *cap, sized over the context's facts; *field the
 * setting at fault when it cannot be. */
static int vllm_size(const struct plan_est_vllm *v, const struct plan_est_context *x,
		     struct vllm_capacity *cap, const char **field)
{
	const struct vllm_gpu *gpus = v->gpus ? v->gpus : x->hw->vgpu;
	const int n = v->gpus ? v->n_gpus : x->hw->n_vgpu;

	*field = NULL;
	if (v->setup)
		return plan_vllm_capacity(x->a, x->vf, x->hw, v->setup, cap);
	return x->vf ? vllm_capacity_with(x->a, x->vf, &v->engine, gpus, n, cap, field) :
		       vllm_capacity(x->a, &v->engine, gpus, n, cap, field);
}

/* What the route states of a vLLM engine c: the share of each GPU it takes, the batched
 * figures of the traffic asked at the concurrency vLLM runs, and the roofline's own notes. */
static void vllm_detail(const struct plan_est_request *q, const struct plan_est_context *x,
			const struct vllm_capacity *c,
			const struct speed_params params[SPEED_BACKEND_COUNT],
			struct plan_est_answer *out)
{
	struct plan_vllm_answer *va = &out->vllm;
	struct plan_serving *sv = &out->serving;
	double fits_each;
	int64_t dflt;

	va->utilization =
		(double)(c->requested_bytes + c->cuda_graph_bytes) / (double)c->cuda_total_bytes;
	if (c->kv_cache_bytes <= 0) /* nothing left for the cache: over */
		va->utilization = va->utilization > 1.01 ? va->utilization : 1.01;
	va->fit_band = c->fits ? rf_fit_band(va->utilization) : "over";
	memset(sv, 0, sizeof(*sv));
	out->so_ok = false;
	if (!c->fits)
		return;
	out->so_ok = speed_estimate_with(&out->in, params, &out->so) == 0;
	/* As many streams as the KV cache holds whole requests, up to max_num_seqs. */
	sv->t = traffic_of(&q->traffic, 1);
	fits_each = (double)c->kv_cache_tokens / (double)(sv->t.prompt + sv->t.output);
	dflt = (int64_t)fits_each < c->max_num_seqs ? (int64_t)fits_each : c->max_num_seqs;
	sv->vllm_at_once = dflt > 0 ? dflt : 0;
	if (q->traffic.concurrency <= 0)
		sv->t.concurrency = dflt > 0 ? dflt : 1;
	else
		sv->concurrency_queued = sv->t.concurrency > c->max_num_seqs ||
					 (double)sv->t.concurrency > fits_each;
	sv->asked = sv->t.concurrency;
	serve_batched(x, &out->in, params,
		      (double)c->kv_bytes_per_token * c->tensor_parallel * c->pipeline_parallel,
		      q->traffic.usd_per_hour, sv);
}

/* A vLLM engine into res, its capacity sized into *cap unless the request holds it (*field:
 * the setting at fault); with out (detail), also what the route states. */
static int estimate_vllm(const struct plan_est_request *q, const struct plan_est_context *x,
			 struct plan_result *res, struct vllm_capacity *cap, const char **field,
			 struct plan_est_answer *out)
{
	const struct plan_est_vllm *v = &q->u.vllm;
	const struct vllm_capacity *c = v->cap ? v->cap : cap;
	struct speed_params params[SPEED_BACKEND_COUNT];
	int rc, p;

	*field = NULL;
	if (!v->cap) {
		rc = vllm_size(v, x, cap, field);
		if (rc < 0) {
			memset(res, 0, sizeof(*res));
			res->mem.error_field = "model";
			return rc;
		}
	}
	if (v->setup) {
		plan_vllm_figures(x->a, x->mp, x->hw, c, v->setup->vformat != PLAN_VLLM_BF16,
				  v->setup->p.n_ctx,
				  v->setup->p.n_parallel > 0 ? v->setup->p.n_parallel : 1,
				  v->setup->vllm_seq_ctx, res, out ? &out->in : NULL,
				  out ? params : NULL);
	} else {
		p = v->engine.precision;
		plan_vllm_figures(x->a, x->mp, x->hw, c,
				  p != VLLM_BF16 && p != VLLM_FP16 && p != VLLM_FP32,
				  c->max_model_len, 1, 0, res, out ? &out->in : NULL,
				  out ? params : NULL);
	}
	if (out)
		vllm_detail(q, x, c, params, out);
	return 0;
}

/* plan_estimate of a llama.cpp or vLLM setup into res; out NULL: without detail. */
static int estimate_setup(const struct plan_est_request *q, const struct plan_est_context *x,
			  struct plan_result *res, struct vllm_capacity *cap, const char **field,
			  struct plan_est_answer *out)
{
	if (q->kind == PLAN_EST_VLLM)
		return estimate_vllm(q, x, res, cap, field, out);
	return estimate_llama(q, x, res, out);
}

int plan_estimate(const struct plan_est_request *q, const struct plan_est_context *x,
		  struct plan_est_answer *out)
{
	switch (q->kind) {
	case PLAN_EST_LLAMA_CPP:
	case PLAN_EST_VLLM:
		return estimate_setup(q, x, &out->res, &out->vllm.cap, &out->vllm.error_field,
				      q->detail ? out : NULL);
	case PLAN_EST_TRAIN:
		return plan_train_evaluate(x->tm, &q->u.train, &out->train);
	}
	return RF_E_INVALID_VALUE;
}

int plan_evaluate_summed(const struct model_arch *a, const struct model_params *mp,
			 const struct rf_mem_weights *w, const struct plan_wsum *sum,
			 const struct plan_machine *hw, const struct plan_setup *s,
			 struct plan_result *out)
{
	struct plan_est_request q = {.kind = PLAN_EST_LLAMA_CPP};
	const struct plan_est_context x = {.a = a, .mp = mp, .w = w, .sum = sum, .hw = hw};
	struct vllm_capacity cap;
	const char *field;

	if (s->runtime == PLAN_RT_VLLM) {
		q.kind = PLAN_EST_VLLM;
		q.u.vllm.setup = s;
	} else {
		q.u.llama = s;
	}
	return estimate_setup(&q, &x, out, &cap, &field, NULL);
}

int plan_evaluate(const struct model_arch *a, const struct model_params *mp,
		  const struct rf_mem_weights *w, const struct plan_machine *hw,
		  const struct plan_setup *s, struct plan_result *out)
{
	return plan_evaluate_summed(a, mp, w, NULL, hw, s, out);
}
