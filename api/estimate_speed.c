/*
 * The memory and speed blocks of an estimate's answer (api/estimate_priv.h): the roofline
 * refined by the runs recorded on this hardware, and the batched speed of serving traffic.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/estimate_history.h"
#include "api/json_alloc.h"
#include "api/model_memo.h"
#include "api/hardware_json.h"
#include "core/err.h"
#include "api/estimate_priv.h"

cJSON *est_memory_json(const struct rf_mem_estimate *m)
{
	cJSON *o = cJSON_CreateObject(), *arr;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "weights_bytes", (double)m->weights_bytes);
	cJSON_AddNumberToObject(o, "kv_cache_bytes", (double)m->kv_cache_bytes);
	cJSON_AddNumberToObject(o, "compute_bytes", (double)m->compute_bytes);
	cJSON_AddNumberToObject(o, "overhead_bytes", (double)m->overhead_bytes);
	cJSON_AddNumberToObject(o, "output_buffer_bytes", (double)m->output_buffer_bytes);
	cJSON_AddNumberToObject(o, "total_bytes", (double)m->total_bytes);
	cJSON_AddNumberToObject(o, "host_bytes", (double)m->host_bytes);
	cJSON_AddNumberToObject(o, "experts_host_bytes", (double)m->experts_host_bytes);
	cJSON_AddNumberToObject(o, "host_reclaimable_bytes", (double)m->host_reclaimable_bytes);
	cJSON_AddNumberToObject(o, "host_weights_mapped_bytes", (double)m->weights_mapped_bytes);
	cJSON_AddNumberToObject(o, "host_weights_repacked_bytes", (double)m->weights_repack_bytes);
	arr = cJSON_AddArrayToObject(o, "per_device");
	for (int i = 0; arr && i < m->n_devices; i++) {
		const struct rf_mem_device_use *u = &m->per_device[i];
		cJSON *d = cJSON_CreateObject();
		if (!d)
			break;
		cJSON_AddStringToObject(d, "device", u->device);
		cJSON_AddNumberToObject(d, "layers", (double)u->layers);
		cJSON_AddBoolToObject(d, "output", u->output);
		cJSON_AddNumberToObject(d, "weights_bytes", (double)u->weights_bytes);
		cJSON_AddNumberToObject(d, "kv_cache_bytes", (double)u->kv_bytes);
		cJSON_AddNumberToObject(d, "compute_bytes", (double)u->compute_bytes);
		cJSON_AddNumberToObject(d, "overhead_bytes", (double)u->overhead_bytes);
		cJSON_AddNumberToObject(d, "bytes", (double)u->bytes);
		if (u->budget_bytes >= 0)
			cJSON_AddNumberToObject(d, "budget_bytes", (double)u->budget_bytes);
		else
			cJSON_AddNullToObject(d, "budget_bytes");
		api_json_append(arr, d);
	}
	return o;
}

void est_num_or_null(cJSON *o, const char *name, double v)
{
	if (v < 0 || !isfinite(v))
		cJSON_AddNullToObject(o, name);
	else
		cJSON_AddNumberToObject(o, name, v);
}

/* The roofline of catalog model me in ftype on the machine, run as llama-bench runs it by
 * default (every layer on the GPUs, llama.cpp's default context and batch), whatever an
 * estimate's own settings are: the run's efficiency is measured against what it did. It is
 * the one evaluation of a setup (plan_evaluate_llama) on the predicted model's own weights. */
int est_predict_run(void *ctx, const struct model_entry *me, int ftype,
		    double tps[SPEED_HISTORY_FIGURES])
{
	struct est_predict *pr = ctx;
	struct model_arch arch = me->arch;
	struct model_params params;
	struct plan_setup s;
	struct plan_wsum sum;
	struct plan_llama_speed sp;
	const char *bad = NULL;
	int rc;

	if (!pr->r && !(pr->r = calloc(1, sizeof(*pr->r))))
		return RF_E_NOMEM;
	if (!pr->w && !(pr->w = calloc(1, sizeof(*pr->w))))
		return RF_E_NOMEM;
	/* The weights and counts come from the memo: a host with history pays for them once,
	 * not in every estimate of a /api/recommend. */
	if (model_arch_validate(&arch, &bad) < 0 || api_memo_params(&arch, &params) < 0 ||
	    api_memo_weights(&arch, ftype, pr->w) < 0)
		return RF_E_INVALID_VALUE;
	plan_llama_bench_setup(&arch, pr->pm, ftype, &s);
	plan_weights_sum(&arch, pr->w, ftype, pr->pm->host.repack_isa, &sum);
	rc = plan_evaluate_llama(&arch, &params, pr->w, &sum, pr->pm, &s, pr->r, &sp, NULL);
	if (rc < 0)
		return rc;
	tps[SPEED_TEST_DECODE] = sp.roofline[SPEED_TEST_DECODE];
	tps[SPEED_TEST_PREFILL] = sp.roofline[SPEED_TEST_PREFILL];
	return 0;
}

void est_predict_free(struct est_predict *pr)
{
	free(pr->r);
	free(pr->w);
	pr->r = NULL;
	pr->w = NULL;
}

void est_history_query(struct est *e, enum speed_backend backend, int ftype, struct est_predict *pr,
		       struct api_history_query *q)
{
	memset(q, 0, sizeof(*q));
	est_fingerprint(e);
	/* "history": false asks for the roofline alone (what the page compares runs with). */
	q->fingerprint = e->rq.has_history && !e->rq.history ? NULL : e->fingerprint;
	q->backend = backend;
	q->entry = e->entry;
	q->model_name = e->gguf ? e->model_id : NULL;
	q->ftype = ftype;
	q->predict = est_predict_run;
	q->predict_ctx = pr;
}

int est_speed_json(struct est *e, const struct plan_est_answer *a,
		   const struct api_history_calib *cal, cJSON *speed)
{
	const struct plan_llama_speed *sp = &a->speed;
	struct api_history_query q;
	struct api_history *h = calloc(1, sizeof(*h));

	if (!h)
		return RF_E_NOMEM;
	/* The figures are the evaluation's; the refinement again only for what it used. */
	est_history_query(e, a->in.backend, e->ftype, NULL, &q);
	(void)api_history_refine(cal, &q, sp->roofline, h);
	est_num_or_null(speed, "decode_tokens_per_s", sp->tps[SPEED_TEST_DECODE]);
	/* Full context scales with the start of generation: the same host, the same kernels. */
	est_num_or_null(speed, "decode_tokens_per_s_at_full_ctx", sp->decode_full_ctx);
	est_num_or_null(speed, "prefill_tokens_per_s", sp->tps[SPEED_TEST_PREFILL]);
	if (a->measured_host) {
		/* No run recorded, but this host was measured (the daemon's host measurement,
		 * once per fingerprint, kept in the store): the model stands on measured figures. */
		const struct hw_host_bench *b = &e->hw.host_bench;
		char when[40];
		api_format_time_ms(b->measured_at_ms, when, sizeof(when));
		cJSON_AddStringToObject(speed, "basis", "measured_host");
		cJSON_AddStringToObject(speed, "decode_basis", "measured_host");
		est_assume(
			e,
			"speed: this host as measured at %s: %.1f GB/s read with %d threads, %.0f "
			"int8 GOPS and %.0f f32 GFLOPS per thread (%s kernels)",
			when, b->memory_bandwidth_gbs, b->threads, b->int8_gops_per_thread,
			b->f32_gflops_per_thread, b->kernel_isa);
	} else {
		cJSON_AddStringToObject(speed, "basis", speed_basis_name(a->basis));
		cJSON_AddStringToObject(speed, "decode_basis",
					speed_basis_name(sp->basis[SPEED_TEST_DECODE]));
	}
	cJSON_AddStringToObject(speed, "prefill_basis",
				speed_basis_name(sp->basis[SPEED_TEST_PREFILL]));
	cJSON_AddNumberToObject(speed, "runs", h->result.runs);
	if (a->so_ok) {
		for (int i = 0; i < a->so.n_assumptions; i++)
			est_assume(e, "speed: %s", a->so.assumptions[i]);
	} else {
		est_assume(e, "speed: no roofline for this machine (no bandwidth could be known)");
	}
	for (int i = 0; i < h->n_notes; i++)
		est_assume(e, "%s", h->notes[i]);
	for (int f = 0; f < SPEED_HISTORY_FIGURES; f++)
		if (sp->basis[f] == SPEED_BASIS_MEASURED && sp->factor[f] > 0)
			est_assume(e,
				   "%s speed: the runs ran llama-bench's defaults at %.2f of their "
				   "roofline; this setup gets that share of its own",
				   f == SPEED_TEST_DECODE ? "decode" : "prefill", sp->factor[f]);
	free(h);
	return 0;
}

/* ---- serving: batched speed ------------------------------------------------------------ */

struct plan_traffic_ask est_traffic_ask(const struct est *e)
{
	struct plan_traffic_ask t;

	t.concurrency = e->rq.has_concurrency ? e->rq.concurrency : 0;
	t.prompt = e->rq.has_prompt_tokens ? e->rq.prompt_tokens : 0;
	t.output = e->rq.has_output_tokens ? e->rq.output_tokens : 0;
	t.usd_per_hour = e->rq.has_usd_per_hour ? e->rq.usd_per_hour : -1;
	return t;
}

void est_traffic_note(struct est *e, const struct plan_traffic *t)
{
	if (!e->rq.has_prompt_tokens || !e->rq.has_output_tokens)
		est_assume(
			e,
			"serving traffic: %lld-token prompts generating %lld tokens (defaults of a "
			"chat turn where not given)",
			(long long)t->prompt, (long long)t->output);
}

void est_serving_json(struct est *e, const struct plan_serving *sv, cJSON *speed)
{
	const struct plan_traffic *t = &sv->t;

	cJSON_AddNumberToObject(speed, "concurrency", (double)t->concurrency);
	cJSON_AddNumberToObject(speed, "prompt_tokens", (double)t->prompt);
	cJSON_AddNumberToObject(speed, "output_tokens", (double)t->output);
	est_num_or_null(speed, "aggregate_decode_tokens_per_s",
			sv->ok ? sv->b.aggregate_tokens_per_s : -1);
	est_num_or_null(speed, "per_stream_decode_tokens_per_s",
			sv->ok ? sv->b.per_stream_tokens_per_s : -1);
	est_num_or_null(speed, "time_to_first_token_s", sv->ok ? sv->b.time_to_first_token_s : -1);
	if (sv->ok && e->rq.has_usd_per_hour)
		cJSON_AddNumberToObject(speed, "usd_per_million_tokens",
					sv->usd_per_million_tokens);
	else
		cJSON_AddNullToObject(speed, "usd_per_million_tokens");
	if (sv->ok)
		est_assume(
			e,
			"batched speed: %lld streams share each step's weight pass (%.1f ms memory, "
			"%.1f ms compute per step%s); time to first token on an idle server",
			(long long)t->concurrency, sv->b.memory_ms, sv->b.compute_ms,
			sv->moe ? ", the experts the batch routes to" : "");
	else
		est_assume(e, "batched speed: unknown (no compute rate for prefill)");
	if (sv->ok && e->rq.has_usd_per_hour)
		est_assume(e,
			   "usd_per_million_tokens: usd_per_hour over the aggregate output at "
			   "concurrency %lld",
			   (long long)t->concurrency);
}

/* The speed object of a setup that does not fit: no figures, basis "none". */
void est_no_speed(struct est *e, cJSON *speed)
{
	static const char *const figures[] = {"decode_tokens_per_s",
					      "decode_tokens_per_s_at_full_ctx",
					      "prefill_tokens_per_s",
					      "aggregate_decode_tokens_per_s",
					      "per_stream_decode_tokens_per_s",
					      "time_to_first_token_s",
					      "usd_per_million_tokens"};

	for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++)
		cJSON_AddNullToObject(speed, figures[i]);
	cJSON_AddStringToObject(speed, "basis", "none");
	est_assume(e,
		   "speed: none, as the setup does not fit (a smaller context, quant or fewer GPU "
		   "layers that fits has one)");
}
