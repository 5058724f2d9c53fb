/*
 * A llama.cpp inference estimate (api/estimate_priv.h): llama.cpp's defaults for what the
 * request leaves out, the memory per device and host, and the speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_alloc.h"
#include "api/model_memo.h"
#include "core/err.h"
#include "core/format.h"
#include "api/estimate_priv.h"

/* One llama.cpp estimate's working state: the machine, the setup and its evaluation, the
 * runs recorded on the machine. Large, so on the heap. */
struct infer_work {
	struct plan_machine pm;
	struct plan_setup s;
	struct plan_wsum sum;
	struct plan_est_answer a;
	struct api_history_calib cal;
	struct est_predict pr;
	int n_speed_notes;
	char speed_notes[SPEED_MAX_DEVICES][EST_ASSUMPTION_LEN];
};

static void infer_work_free(struct infer_work *w)
{
	api_history_calib_free(&w->cal);
	est_predict_free(&w->pr);
	free(w);
}

int est_inference(const struct api_env *env, struct est *e, cJSON *root, struct api_reply *out)
{
	struct rf_infer_params p;
	struct infer_work *w = calloc(1, sizeof(*w));
	const struct rf_mem_estimate *m;
	cJSON *settings, *speed, *mem;
	int n_dev, rc;

	if (!w)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	w->pr.pm = &w->pm;
	if (!e->gguf) {
		const char *q = e->rq.has_quant ? e->rq.quant : EST_DEFAULT_QUANT;
		e->ftype = rf_ftype_from_name(q);
		if (e->ftype < 0) {
			infer_work_free(w);
			return api_error(
				out, RF_E_INVALID_VALUE, "quant",
				"quant '%.20s' is not a GGUF quantization type (F16, Q8_0, "
				"Q4_K_M, IQ4_XS, UD-Q4_K_XL...)",
				q);
		}
		if (!e->rq.has_quant)
			est_assume(e, "quant: %s (the usual download) as none was given",
				   EST_DEFAULT_QUANT);
		rc = api_memo_weights(&e->arch, e->ftype, &e->weights);
		if (rc < 0) {
			infer_work_free(w);
			if (rc == RF_E_NOMEM)
				return api_error(out, rc, NULL, NULL);
			return api_error(out, RF_E_INVALID_VALUE, "quant",
					 "the model cannot be quantized as %s", q);
		}
		if (e->ftype & RF_FT_UD)
			est_assume(
				e,
				"weights: %s as Unsloth describes it (%s, routed experts at the "
				"base type, embeddings and output 6-bit, MoE attention and shared "
				"experts 4-6 bit); the GGUF file gives its exact tensors",
				rf_ftype_name(e->ftype), rf_ftype_name(e->ftype & ~RF_FT_UD));
		else
			est_assume(e, "weights: per tensor as llama-quantize mixes %s",
				   rf_ftype_name(e->ftype));
	} else if (e->rq.has_quant) {
		infer_work_free(w);
		return api_error(out, RF_E_INVALID_VALUE, "quant",
				 "a GGUF file has its own quantization; leave quant out");
	}
	rf_infer_params_default(&p);
	if (e->rq.has_n_ctx && e->rq.n_ctx > 0)
		p.n_ctx = e->rq.n_ctx;
	else if (!e->rq.has_n_ctx && e->arch.max_position_embeddings > 0 &&
		 e->arch.max_position_embeddings < p.n_ctx)
		p.n_ctx = e->arch.max_position_embeddings;
	if (e->rq.has_n_batch)
		p.n_batch = e->rq.n_batch;
	if (e->rq.has_n_ubatch)
		p.n_ubatch = e->rq.n_ubatch;
	if (p.n_ubatch > p.n_batch) {
		infer_work_free(w);
		return api_error(out, RF_E_INVALID_VALUE, "n_ubatch",
				 "n_ubatch (%lld) must not exceed n_batch (%lld)",
				 (long long)p.n_ubatch, (long long)p.n_batch);
	}
	if (e->rq.has_n_parallel)
		p.n_parallel = e->rq.n_parallel;
	p.rope_positions = est_rope(e, p.n_ctx / (p.n_parallel > 0 ? p.n_parallel : 1));
	if (e->rq.has_kv_type) {
		p.type_k = p.type_v = rf_gtype_from_name(api_est_kv_types[e->rq.kv_type]);
		/* llama.cpp refuses to start with both: an explicit setting is honoured or
		 * refused, never switched. */
		if (e->rq.kv_type != 0 && e->rq.has_flash_attn && !e->rq.flash_attn) {
			infer_work_free(w);
			return api_error(out, RF_E_INVALID_VALUE, "flash_attn",
					 "a quantized V cache (kv_cache_type %s) needs flash "
					 "attention in llama.cpp: set flash_attn true, or "
					 "kv_cache_type f16",
					 api_est_kv_types[e->rq.kv_type]);
		}
		if (e->rq.kv_type != 0 && !e->rq.has_flash_attn)
			est_assume(e, "kv_cache_type: a quantized V cache needs flash attention in "
				      "llama.cpp");
	}
	if (e->rq.has_flash_attn) {
		p.flash_attn = e->rq.flash_attn;
	} else {
		/* llama.cpp's -fa defaults to auto since September 2025 (b6xxx, "use FA by
		 * default"): on where the backend has the kernels, CUDA, Metal and the CPU. */
		static const char *const fa_auto[] = {"cuda", "metal", "cpu"};
		for (size_t i = 0; i < sizeof(fa_auto) / sizeof(fa_auto[0]); i++)
			if (strcmp(e->hw.backend, fa_auto[i]) == 0 || !e->hw.backend[0])
				p.flash_attn = true;
		est_assume(e,
			   "flash_attn: %s, as llama.cpp's default -fa auto resolves on %s (on for "
			   "CUDA, Metal and CPU since September 2025)",
			   p.flash_attn ? "on" : "off", e->hw.backend[0] ? e->hw.backend : "cpu");
	}
	if (e->rq.has_use_mmap)
		p.use_mmap = e->rq.use_mmap;
	if (e->rq.has_mlock)
		p.mlock = e->rq.mlock;
	if (e->rq.has_swa_full)
		p.swa_full = e->rq.swa_full;
	if (e->rq.has_n_gpu_layers)
		p.n_gpu_layers = e->rq.n_gpu_layers;
	if (e->rq.has_n_cpu_moe)
		p.n_cpu_moe = e->rq.n_cpu_moe;

	{
		/* Every llama.cpp default taken, in one line. */
		char d[EST_ASSUMPTION_LEN] = "";
		size_t u = 0;
		const struct {
			bool given;
			const char *text;
		} dflt[] = {{e->rq.has_n_ctx, "n_ctx"},
			    {e->rq.has_n_batch, "n_batch 2048"},
			    {e->rq.has_n_ubatch, "n_ubatch 512"},
			    {e->rq.has_n_parallel, "n_parallel 1"},
			    {e->rq.has_kv_type, "cache f16"},
			    {e->rq.has_n_gpu_layers, "n_gpu_layers all"}};
		for (size_t i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++) {
			int k;
			if (dflt[i].given)
				continue;
			if (i == 0)
				k = rf_format(d + u, sizeof(d) - u, "%sn_ctx %lld", u ? ", " : "",
					      (long long)p.n_ctx);
			else
				k = rf_format(d + u, sizeof(d) - u, "%s%s", u ? ", " : "",
					      dflt[i].text);
			if (k < 0 || (size_t)k >= sizeof(d) - u)
				break;
			u += (size_t)k;
		}
		if (u)
			est_assume(e, "llama.cpp's defaults taken: %s", d);
		/* The pinned llama-server's own defaults are -c 0, -np auto and --fit on (common/
		 * arg.cpp, common/fit.cpp): a different answer, said so that it is not a surprise. */
		if (!e->rq.has_n_ctx && !e->rq.has_n_parallel &&
		    e->arch.max_position_embeddings > 0)
			est_assume(
				e,
				"n_ctx %lld is this estimate's default: llama-server started "
				"without -c and -np sizes one KV cache for 4 slots of the model's "
				"%lld tokens and --fit shrinks it to the free memory less 1 GiB (not "
				"below 4096); pass -c %lld -np 1 to run what is estimated here",
				(long long)p.n_ctx, (long long)e->arch.max_position_embeddings,
				(long long)p.n_ctx);
	}
	/* The machine as the planner takes it; the speed's notes (a GPU of unknown bandwidth)
	 * are kept for where the speed is answered. */
	w->n_speed_notes = est_plan_machine_held(env, e, &w->pm, w->speed_notes);
	n_dev = w->pm.n_dev;
	if (e->rq.n_split > 0) {
		if (e->rq.n_split > n_dev) {
			infer_work_free(w);
			return api_error(out, RF_E_INVALID_VALUE, "tensor_split",
					 "tensor_split has %d entries; the hardware has %d GPUs",
					 e->rq.n_split, n_dev);
		}
		for (int i = 0; i < n_dev; i++)
			w->pm.dev[i].split = i < e->rq.n_split ? e->rq.split[i] : 0;
		est_assume(e, "tensor_split: layers in the given proportions, as llama.cpp's "
			      "--tensor-split places them");
	}
	if (n_dev == 0 && p.n_gpu_layers != 0) {
		p.n_gpu_layers = 0;
		est_assume(e, "n_gpu_layers: 0 (no GPU to offload to)");
	}
	/* What the runs recorded on this machine say of this model and precision (read once,
	 * each other model's run predicted on this machine). */
	plan_weights_sum(&e->arch, &e->weights, e->ftype, w->pm.host.repack_isa, &w->sum);
	{
		struct api_history_query q;
		est_history_query(e, w->pm.speed.backend, e->ftype, &w->pr, &q);
		rc = api_history_load(env, &q, &w->cal);
		if (rc < 0) {
			infer_work_free(w);
			return api_error(out, rc, NULL, NULL);
		}
		(void)plan_wsum_calibrate(&w->sum, &e->arch, &e->params, &e->weights, &w->pm,
					  &w->cal.cal, q.entry, q.model_name);
	}
	w->s.runtime = PLAN_RT_LLAMA_CPP;
	w->s.ftype = e->ftype;
	w->s.p = p;
	/* n_ctx < 0: the largest context that fits. */
	if (e->rq.has_n_ctx && e->rq.n_ctx < 0)
		w->s.p.n_ctx = -1;
	{
		const struct plan_est_request q = {.kind = PLAN_EST_LLAMA_CPP,
						   .detail = true,
						   .traffic = est_traffic_ask(e),
						   .u.llama = &w->s};
		const struct plan_est_context x = {.a = &e->arch,
						   .mp = &e->params,
						   .w = &e->weights,
						   .sum = &w->sum,
						   .hw = &w->pm};
		rc = plan_estimate(&q, &x, &w->a);
	}
	m = &w->a.res.mem;
	if (rc < 0) {
		const char *field = m->error_field ? m->error_field : "model";
		infer_work_free(w);
		return api_error(out, rc == RF_E_NOMEM ? RF_E_NOMEM : RF_E_INVALID_VALUE, field,
				 "%s is out of range for this model", field);
	}
	for (int i = 0; i < m->n_notes; i++)
		est_assume(e, "%s", m->notes[i]);
	est_assume(e, "memory: buffers as %s allocates them; CPU weight repacking for %s",
		   RF_LLAMA_CPP_BUILD, rf_repack_isa_name(w->pm.host.repack_isa));

	mem = est_memory_json(m);
	if (mem)
		api_json_add(root, "memory", mem);
	cJSON_AddBoolToObject(root, "fits", m->fits);
	est_num_or_null(root, "utilization", m->utilization);
	if (m->fit_band)
		cJSON_AddStringToObject(root, "fit_band", m->fit_band);
	else
		cJSON_AddNullToObject(root, "fit_band");

	settings = cJSON_AddObjectToObject(root, "settings");
	if (settings) {
		cJSON_AddStringToObject(settings, "quant",
					e->ftype >= 0 ? rf_ftype_name(e->ftype) : "unknown");
		cJSON_AddNumberToObject(settings, "n_ctx", (double)m->n_ctx);
		cJSON_AddNumberToObject(settings, "n_batch", (double)p.n_batch);
		cJSON_AddNumberToObject(settings, "n_ubatch", (double)m->n_ubatch);
		cJSON_AddNumberToObject(settings, "n_parallel", (double)p.n_parallel);
		cJSON_AddStringToObject(settings, "kv_cache_type",
					api_est_kv_types[e->rq.has_kv_type ? e->rq.kv_type : 0]);
		cJSON_AddBoolToObject(settings, "flash_attn", p.flash_attn);
		cJSON_AddBoolToObject(settings, "use_mmap", p.use_mmap);
		cJSON_AddBoolToObject(settings, "mlock", p.mlock);
		cJSON_AddBoolToObject(settings, "swa_full", p.swa_full);
		cJSON_AddNumberToObject(settings, "n_gpu_layers", (double)m->n_gpu_layers);
		cJSON_AddNumberToObject(settings, "n_cpu_moe", (double)m->n_cpu_moe);
		cJSON_AddBoolToObject(settings, "output_on_gpu", m->output_on_gpu);
	}

	{
		/* llama-server's side of the serving question: n_parallel slots sharing the
		 * n_ctx cells. */
		cJSON *sv = cJSON_AddObjectToObject(root, "serving");
		if (sv) {
			cJSON_AddStringToObject(sv, "runtime", "llama.cpp");
			cJSON_AddNumberToObject(sv, "kv_cache_tokens", (double)m->n_ctx);
			cJSON_AddNumberToObject(sv, "slots", (double)p.n_parallel);
			cJSON_AddNumberToObject(sv, "tokens_per_slot",
						(double)(m->n_ctx / p.n_parallel));
			cJSON_AddNumberToObject(sv, "max_concurrency", (double)p.n_parallel);
		}
	}
	for (int i = 0; i < w->n_speed_notes; i++)
		est_assume(e, "%s", w->speed_notes[i]);
	speed = cJSON_AddObjectToObject(root, "speed");
	if (speed && !m->fits && m->fit_band) {
		/* A setup that cannot be loaded has no speed. */
		est_no_speed(e, speed);
	} else if (speed) {
		/* Memory not known (a CPU named without RAM): the fit is not judged, the speed is
		 * the machine's all the same. */
		if (!m->fits)
			est_assume(e, "speed: as if the setup fits, as the memory is not known");
		rc = est_speed_json(e, &w->a, &w->cal, speed);
		if (rc < 0) {
			infer_work_free(w);
			return api_error(out, rc, NULL, NULL);
		}
		{
			const struct plan_serving *sv = &w->a.serving;
			est_traffic_note(e, &sv->t);
			if (sv->warn & PLAN_WARN_SLOTS_FULL)
				est_assume(
					e,
					"concurrency %lld is more than the %lld slots (n_parallel): "
					"the rest wait",
					(long long)sv->asked, (long long)p.n_parallel);
			if (sv->warn & PLAN_WARN_SLOT_SHORT)
				est_assume(
					e,
					"a request of %lld tokens is longer than a slot's %lld cells "
					"(n_ctx / n_parallel)",
					(long long)(sv->t.prompt + sv->t.output),
					(long long)(m->n_ctx / p.n_parallel));
			est_serving_json(e, sv, speed);
		}
	}
	infer_work_free(w);
	return 0;
}
