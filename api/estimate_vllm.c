/*
 * A vLLM serving estimate (api/estimate_priv.h): the engine arguments a request gives, vLLM's
 * start-up sizing of its KV cache and the batched speed as the one estimate (plan_estimate,
 * core/plan/plan_estimate.h) evaluates them, worded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_alloc.h"
#include "core/err.h"
#include "api/estimate_priv.h"

/* ---- vLLM ------------------------------------------------------------------------------ */

static void est_vllm_setup(const struct est *e, struct vllm_setup *s)
{
	vllm_setup_default(s);
	if (e->rq.has_tp)
		s->tensor_parallel = (int)e->rq.tp;
	if (e->rq.has_pp)
		s->pipeline_parallel = (int)e->rq.pp;
	if (e->rq.has_gpu_util)
		s->gpu_memory_utilization = e->rq.gpu_util;
	if (e->rq.has_max_model_len)
		s->max_model_len = e->rq.max_model_len;
	if (e->rq.has_max_num_seqs)
		s->max_num_seqs = e->rq.max_num_seqs;
	if (e->rq.has_max_num_batched_tokens)
		s->max_num_batched_tokens = e->rq.max_num_batched_tokens;
	if (e->rq.has_vllm_kv)
		s->kv_dtype = e->rq.vllm_kv == 1 ? VLLM_KV_FP8 : VLLM_KV_AUTO;
	s->enforce_eager = e->rq.has_enforce_eager && e->rq.enforce_eager;
}

static cJSON *est_vllm_serving_json(const struct vllm_capacity *c, const struct vllm_setup *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "runtime", "vllm");
	cJSON_AddNumberToObject(o, "kv_cache_tokens", (double)c->kv_cache_tokens);
	cJSON_AddNumberToObject(o, "max_concurrency", c->max_concurrency);
	cJSON_AddNumberToObject(o, "max_model_len", (double)c->max_model_len);
	cJSON_AddNumberToObject(o, "max_num_seqs", (double)c->max_num_seqs);
	cJSON_AddNumberToObject(o, "max_num_batched_tokens", (double)c->max_num_batched_tokens);
	cJSON_AddNumberToObject(o, "block_size", c->block_size);
	cJSON_AddNumberToObject(o, "num_gpu_blocks", (double)c->num_blocks);
	cJSON_AddNumberToObject(o, "tensor_parallel_size", c->tensor_parallel);
	cJSON_AddNumberToObject(o, "pipeline_parallel_size", c->pipeline_parallel);
	cJSON_AddNumberToObject(o, "gpu_memory_utilization", c->gpu_memory_utilization);
	cJSON_AddStringToObject(o, "precision", vllm_precision_name(s->precision));
	cJSON_AddStringToObject(o, "kv_cache_dtype", s->kv_dtype == VLLM_KV_FP8 ? "fp8" : "auto");
	cJSON_AddNumberToObject(o, "gpu_memory_bytes", (double)c->cuda_total_bytes);
	cJSON_AddNumberToObject(o, "requested_bytes_per_gpu", (double)c->requested_bytes);
	cJSON_AddNumberToObject(o, "weights_bytes_per_gpu", (double)c->weights_bytes);
	cJSON_AddNumberToObject(o, "activation_peak_bytes", (double)c->activation_bytes);
	cJSON_AddNumberToObject(o, "non_torch_bytes", (double)c->non_torch_bytes);
	cJSON_AddNumberToObject(o, "kv_cache_bytes_per_gpu", (double)c->kv_cache_bytes);
	cJSON_AddNumberToObject(o, "kv_bytes_per_token_per_gpu", (double)c->kv_bytes_per_token);
	if (c->cross_kv_bytes_per_seq > 0)
		cJSON_AddNumberToObject(o, "cross_attention_kv_bytes_per_request_per_gpu",
					(double)c->cross_kv_bytes_per_seq);
	cJSON_AddNumberToObject(o, "cuda_graph_bytes", (double)c->cuda_graph_bytes);
	if (c->refusal)
		cJSON_AddStringToObject(o, "refusal", c->refusal);
	else
		cJSON_AddNullToObject(o, "refusal");
	return o;
}

/* The format e's checkpoint stores (api_plan_input_precision). */
static int est_own_precision(const struct est *e)
{
	return vllm_precision_own(&e->arch, e->quantized ? &e->quant : NULL);
}

int api_plan_input_precision(const struct api_plan_input *in)
{
	return est_own_precision(in->est);
}

/* The speed block of vLLM engine c from answer a: the roofline's figures, then the batched
 * figures of the traffic at the concurrency vLLM runs. */
static void est_vllm_speed(struct est *e, const struct vllm_capacity *c,
			   const struct plan_est_answer *a, cJSON *speed)
{
	const struct plan_serving *sv = &a->serving;

	est_num_or_null(speed, "decode_tokens_per_s", a->so_ok ? a->so.decode_tokens_per_s : -1);
	est_num_or_null(speed, "decode_tokens_per_s_at_full_ctx",
			a->so_ok ? a->so.decode_tokens_per_s_at_full_ctx : -1);
	est_num_or_null(speed, "prefill_tokens_per_s", a->so_ok ? a->so.prefill_tokens_per_s : -1);
	for (int i = 0; a->so_ok && i < a->so.n_assumptions; i++)
		est_assume(e, "speed: %s", a->so.assumptions[i]);
	cJSON_AddStringToObject(speed, "basis", "roofline");
	est_assume(e,
		   "vLLM speed: the llama.cpp-fitted efficiencies without llama.cpp's bandwidth "
		   "ceiling; tensor-parallel ranks read their shards side by side%s",
		   c->tensor_parallel > 1 ? ", 0.02 ms of all-reduce per layer (stated)" : "");
	est_traffic_note(e, &sv->t);
	if (!e->rq.has_concurrency)
		est_assume(e,
			   "concurrency: %lld, as many requests as the KV cache holds whole (up to "
			   "max_num_seqs)",
			   (long long)sv->t.concurrency);
	else if (sv->concurrency_queued)
		est_assume(e,
			   "concurrency %lld exceeds what vLLM runs at once (%lld): the rest queue",
			   (long long)sv->t.concurrency, (long long)sv->vllm_at_once);
	est_serving_json(e, sv, speed);
}

/* The memory block of vLLM engine c on e's machine: every GPU it uses holds the same. */
static void est_vllm_memory_json(const struct est *e, const struct vllm_capacity *c, cJSON *root)
{
	cJSON *mem = cJSON_AddObjectToObject(root, "memory"), *arr;
	int used = c->tensor_parallel * c->pipeline_parallel;

	if (!mem)
		return;
	cJSON_AddNumberToObject(mem, "weights_bytes", (double)c->weights_bytes_total);
	cJSON_AddNumberToObject(mem, "kv_cache_bytes", (double)c->kv_cache_bytes * used);
	cJSON_AddNumberToObject(mem, "compute_bytes", (double)c->activation_bytes * used);
	cJSON_AddNumberToObject(mem, "overhead_bytes",
				(double)(c->non_torch_bytes + c->cuda_graph_bytes) * used);
	cJSON_AddNumberToObject(mem, "total_bytes",
				(double)(c->requested_bytes + c->cuda_graph_bytes) * used);
	arr = cJSON_AddArrayToObject(mem, "per_device");
	for (int i = 0; arr && i < used; i++) {
		cJSON *d = cJSON_CreateObject();
		char name[32];
		if (!d)
			break;
		snprintf(name, sizeof(name), "%s%d", e->hw.backend, i);
		cJSON_AddStringToObject(d, "device", name);
		cJSON_AddNumberToObject(d, "bytes",
					(double)(c->requested_bytes + c->cuda_graph_bytes));
		cJSON_AddNumberToObject(d, "budget_bytes", (double)c->cuda_total_bytes);
		api_json_append(arr, d);
	}
}

static void est_vllm_settings_json(const struct vllm_capacity *c, const struct vllm_setup *s,
				   cJSON *root)
{
	cJSON *settings = cJSON_AddObjectToObject(root, "settings");

	if (!settings)
		return;
	cJSON_AddStringToObject(settings, "runtime", "vllm");
	cJSON_AddStringToObject(settings, "precision", vllm_precision_name(s->precision));
	cJSON_AddNumberToObject(settings, "tensor_parallel_size", c->tensor_parallel);
	cJSON_AddNumberToObject(settings, "pipeline_parallel_size", c->pipeline_parallel);
	cJSON_AddNumberToObject(settings, "gpu_memory_utilization", c->gpu_memory_utilization);
	cJSON_AddNumberToObject(settings, "max_model_len", (double)c->max_model_len);
	cJSON_AddNumberToObject(settings, "max_num_seqs", (double)c->max_num_seqs);
	cJSON_AddNumberToObject(settings, "max_num_batched_tokens",
				(double)c->max_num_batched_tokens);
	cJSON_AddStringToObject(settings, "kv_cache_dtype",
				s->kv_dtype == VLLM_KV_FP8 ? "fp8" : "auto");
	cJSON_AddBoolToObject(settings, "enforce_eager", s->enforce_eager);
}

/* The envelope of an engine vLLM refuses (rc from plan_estimate, field the setting). */
static int est_vllm_refused(const struct est *e, const struct vllm_setup *s, int n_gpus, int rc,
			    const char *field, struct api_reply *out)
{
	if (rc == RF_E_NOMEM)
		return api_error(out, rc, NULL, NULL);
	if (field && strcmp(field, "gpus") == 0 && n_gpus == 0) {
		char why[PLAN_NOTE_LEN];
		if (plan_machine_vllm_unable(&e->hw, why, sizeof(why)))
			return api_error(out, RF_E_INVALID_VALUE, "runtime",
					 "%s; use runtime llama.cpp", why);
	}
	if (field && strcmp(field, "gpus") == 0)
		return api_error(out, RF_E_INVALID_VALUE, "tensor_parallel_size",
				 "tensor_parallel_size x pipeline_parallel_size = %d GPUs; the "
				 "hardware has %d",
				 s->tensor_parallel * s->pipeline_parallel, n_gpus);
	if (field && strcmp(field, "tensor_parallel_size") == 0)
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "tensor_parallel_size must divide the %lld attention heads and "
				 "divide or be a multiple of the %lld KV heads",
				 (long long)e->arch.n_heads, (long long)e->arch.n_kv_heads);
	if (field && strcmp(field, "max_model_len") == 0)
		return api_error(
			out, RF_E_INVALID_VALUE, field,
			"max_model_len must be at most the %lld positions the model "
			"reaches%s (vLLM refuses more unless VLLM_ALLOW_LONG_MAX_MODEL_LEN "
			"is set)",
			(long long)s->max_positions,
			s->max_positions > e->arch.max_position_embeddings ?
				" with its rope_scaling" :
			e->entry && e->entry->long_ctx.type != MODEL_ROPE_NONE ?
				"; its card documents YaRN (rope_scaling yarn, rope_scale, "
				"yarn_orig_ctx) for more" :
				"");
	if (field && strcmp(field, "model") == 0)
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "runtime vllm estimates decoder models (with a KV cache); %s is "
				 "not one",
				 e->model_id);
	return api_error(out, RF_E_INVALID_VALUE, field ? field : "model",
			 "%s is out of range for this model and hardware",
			 field ? field : "the model");
}

/* One vLLM estimate's working state. Large, so on the heap. */
struct vllm_work {
	struct plan_machine pm;
	struct plan_est_request q;
	struct plan_est_answer a;
	int n_speed_notes;
	char speed_notes[SPEED_MAX_DEVICES][EST_ASSUMPTION_LEN];
};

int est_vllm(const struct api_env *env, struct est *e, cJSON *root, struct api_reply *out)
{
	struct vllm_work *w;
	struct plan_est_context x = {0};
	const struct vllm_capacity *c;
	struct vllm_setup *s;
	cJSON *serving, *speed;
	int n, rc;

	if (e->gguf)
		return api_error(
			out, RF_E_INVALID_VALUE, "model.gguf",
			"runtime vllm estimates Hugging Face checkpoints: give the model by "
			"id or architecture");
	if (strcmp(e->hw.backend, "cuda") != 0 && strcmp(e->hw.backend, "rocm") != 0)
		return api_error(out, RF_E_INVALID_VALUE, "runtime",
				 "vLLM needs CUDA or ROCm GPUs; this hardware's backend is %s",
				 e->hw.backend[0] ? e->hw.backend : "none");
	if (e->rq.has_precision && vllm_precision_parse(e->rq.precision) < 0)
		return api_error(out, RF_E_INVALID_VALUE, "precision",
				 "precision '%.20s' is not one vLLM loads (bf16, fp16, fp32, fp8, "
				 "int8, awq, gptq, bitsandbytes, mxfp4)",
				 e->rq.precision);
	w = calloc(1, sizeof(*w));
	if (!w)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	/* The machine's GPUs (vLLM's, up to an engine's most) are the planner's; its speed notes
	 * are said where the speed is. */
	w->n_speed_notes = est_plan_machine_held(env, e, &w->pm, w->speed_notes);
	n = w->pm.n_vgpu;
	w->q.kind = PLAN_EST_VLLM;
	w->q.detail = true;
	w->q.traffic = est_traffic_ask(e);
	s = &w->q.u.vllm.engine;
	est_vllm_setup(e, s);
	s->precision = e->rq.has_precision ? vllm_precision_parse(e->rq.precision) :
					     est_own_precision(e);
	/* vLLM derives its longest length from the rope scaling set (original window x factor). */
	s->max_positions = est_rope(e, s->max_model_len > 0 ? s->max_model_len :
							      e->arch.max_position_embeddings);
	if (e->rq.has_precision) {
		/* as given */
	} else if (e->quantized) {
		est_assume(e,
			   "precision: %s, as the checkpoint's quantization_config (%s) stores it",
			   vllm_precision_name(s->precision), hfq_method_name(e->quant.method));
	} else if (s->precision == VLLM_MXFP4) {
		est_assume(e, "precision: mxfp4, as the gpt-oss checkpoint ships its experts");
	} else {
		est_assume(e, "precision: bf16 (the checkpoint's dtype) as none was given");
	}
	x.a = &e->arch;
	x.mp = &e->params;
	x.hw = &w->pm;
	rc = plan_estimate(&w->q, &x, &w->a);
	if (rc < 0) {
		rc = est_vllm_refused(e, s, n, rc, w->a.vllm.error_field, out);
		free(w);
		return rc;
	}
	c = &w->a.vllm.cap;
	for (int i = 0; i < c->n_notes; i++)
		est_assume(e, "%s", c->notes[i]);
	if (c->refusal)
		est_assume(e, "vLLM would not start: %s", c->refusal);
	est_vllm_memory_json(e, c, root);
	cJSON_AddBoolToObject(root, "fits", c->fits);
	cJSON_AddNumberToObject(root, "utilization", w->a.vllm.utilization);
	cJSON_AddStringToObject(root, "fit_band", w->a.vllm.fit_band);
	est_vllm_settings_json(c, s, root);
	serving = est_vllm_serving_json(c, s);
	if (serving)
		api_json_add(root, "serving", serving);
	speed = cJSON_AddObjectToObject(root, "speed");
	if (speed && c->fits) {
		for (int i = 0; i < w->n_speed_notes; i++)
			est_assume(e, "%s", w->speed_notes[i]);
		est_vllm_speed(e, c, &w->a, speed);
	} else if (speed) {
		est_no_speed(e, speed);
	}
	free(w);
	return 0;
}
