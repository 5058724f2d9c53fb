/*
 * POST /api/estimate (and `rigfit estimate`): memory and speed of one model with one set of
 * settings on one machine, for inference (llama.cpp semantics) or fine-tuning (full, LoRA,
 * QLoRA). The model comes from the catalog, a pasted config.json or a GGUF header; the machine
 * is this host's snapshot, a described one ("hardware") or a device profile
 * ("hardware_profile"). Every default taken and every modelling choice is listed in
 * `assumptions`. An estimate that does not fit is still a 200 with fits: false.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_print.h"
#include "api/jsonmap.h"
#include "api/model_quant.h"
#include "api/json_alloc.h"
#include "core/text.h"
#include "core/err.h"
#include "api/estimate_priv.h"

/* One struct est (about 130 KiB) is kept for the next request instead of freed: allocating it
 * afresh made glibc consolidate its free lists and clear the whole block on every estimate.
 * A global slot, taken and given back atomically, so any thread may use it. */
static _Atomic(struct est *) est_spare;

struct est *est_new(void)
{
	struct est *e = atomic_exchange(&est_spare, NULL);
	const size_t w_at = offsetof(struct est, weights), w_end = w_at + sizeof(e->weights);
	const size_t hw_at = offsetof(struct est, hw), hw_end = hw_at + sizeof(e->hw);
	const size_t notes_at = offsetof(struct est, assumptions);
	const size_t fi_at = offsetof(struct est, folder_info),
		     fi_end = fi_at + sizeof(e->folder_info);

	if (!e && !(e = malloc(sizeof(*e))))
		return NULL;
	/* Not cleared: the machine, which est_hardware writes whole before anything reads it
	 * (37 KiB), the assumptions, the last field, read up to n_assumptions only (19 KiB), and
	 * the folder's origin, written whole with has_checkpoint, which guards every read of it
	 * (12 KiB). */
	memset(e, 0, fi_at);
	memset((char *)e + fi_end, 0, w_at - fi_end);
	rf_mem_weights_reset(&e->weights);
	memset((char *)e + w_end, 0, hw_at - w_end);
	memset((char *)e + hw_end, 0, notes_at - hw_end);
	e->ftype = -1;
	return e;
}

/* Frees e's GGUF header and keeps e for the next est_new (or frees it). NULL is a no-op. */
void est_release(struct est *e)
{
	struct est *none = NULL;

	if (!e)
		return;
	gguf_free(e->gguf);
	e->gguf = NULL;
	if (!atomic_compare_exchange_strong(&est_spare, &none, e))
		free(e);
}

void api_estimate_spare_free(void)
{
	free(atomic_exchange(&est_spare, NULL));
}

void est_assume(struct est *e, const char *fmt, ...)
{
	va_list ap;

	if (e->n_assumptions >= EST_MAX_ASSUMPTIONS)
		return;
	va_start(ap, fmt);
	rf_note_vformat(e->assumptions[e->n_assumptions++], EST_ASSUMPTION_LEN, fmt, ap);
	va_end(ap);
}

/* ---- the route --------------------------------------------------------------------------- */

/* Adds model.quantization: what the checkpoint's quantization_config says and the bytes it
 * stores (the safetensors headers' when they were read, else the formula's). Returns 0 or
 * RF_E_NOMEM. */
static int est_quant_json(struct est *e, cJSON *model)
{
	struct hfq_bytes b;
	cJSON *q;
	int rc = hfq_checkpoint_bytes(&e->arch, &e->quant, &b);

	if (rc < 0)
		return rc == RF_E_NOMEM ? rc : 0;
	q = api_hf_quant_json(&e->quant, &b, e->has_checkpoint ? e->checkpoint.data_bytes : -1);
	if (!q || !cJSON_AddItemToObject(model, "quantization", q)) {
		cJSON_Delete(q);
		return RF_E_NOMEM;
	}
	if (!e->has_checkpoint)
		est_assume(e,
			   "model: the %s checkpoint's bytes (%.2f GB) counted from its "
			   "quantization_config, as the library stores them",
			   hfq_method_name(e->quant.method), (double)b.total / 1e9);
	if (e->rq.mode == API_EST_INFERENCE &&
	    !(e->rq.has_runtime && e->rq.runtime == API_EST_RT_VLLM))
		est_assume(
			e,
			"weights: llama.cpp runs a GGUF converted from the model, so its quant sets "
			"the weights, not the checkpoint's %s format",
			hfq_method_name(e->quant.method));
	return 0;
}

void est_fingerprint(struct est *e)
{
	if (!e->fingerprint[0] &&
	    hw_fingerprint(&e->hw, e->fingerprint, sizeof(e->fingerprint)) < 0)
		e->fingerprint[0] = '\0';
}

/* The answer for e, whose model and machine are resolved and whose settings are e->rq: the
 * model and hardware blocks, then the estimate of its mode and runtime, then the assumptions.
 * Returns 0 and *result, or a negative rf_err with the envelope in out. */
static int est_answer(const struct api_env *env, struct est *e, cJSON **result,
		      struct api_reply *out)
{
	cJSON *root = NULL, *model, *hw, *arr;
	int rc;

	est_fingerprint(e);
	root = cJSON_CreateObject();
	if (!root) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	model = cJSON_AddObjectToObject(root, "model");
	if (model) {
		cJSON_AddStringToObject(model, "id", e->model_id);
		cJSON_AddStringToObject(model, "source", e->model_source);
		cJSON_AddStringToObject(model, "model_type", e->arch.model_type);
		cJSON_AddNumberToObject(model, "params_total", (double)e->params.total);
		cJSON_AddNumberToObject(model, "params_active", (double)e->params.active);
		if (e->arch.max_position_embeddings > 0)
			cJSON_AddNumberToObject(model, "max_position_embeddings",
						(double)e->arch.max_position_embeddings);
		cJSON_AddNumberToObject(model, "n_layers",
					(double)(e->arch.n_layers + e->arch.n_encoder_layers));
		if (e->has_checkpoint)
			cJSON_AddItemToObject(model, "checkpoint",
					      api_checkpoint_json(&e->checkpoint, &e->folder_info));
		if (e->quantized) {
			rc = est_quant_json(e, model);
			if (rc < 0) {
				rc = api_error(out, rc, NULL, NULL);
				goto done;
			}
		}
	}
	cJSON_AddStringToObject(root, "mode", api_est_modes[e->rq.mode]);
	hw = cJSON_AddObjectToObject(root, "hardware");
	if (hw) {
		cJSON_AddStringToObject(hw, "source", e->hw_source);
		if (e->hw.profile_id[0])
			cJSON_AddStringToObject(hw, "profile_id", e->hw.profile_id);
		else
			cJSON_AddNullToObject(hw, "profile_id");
		cJSON_AddStringToObject(hw, "backend", e->hw.backend);
		cJSON_AddNumberToObject(hw, "gpus", e->hw.n_gpus);
		cJSON_AddStringToObject(hw, "fingerprint", e->fingerprint);
	}
	rc = api_estimate_request_check(&e->rq, out);
	if (rc == 0)
		rc = e->rq.mode != API_EST_INFERENCE  ? est_training(env, e, root, out) :
		     e->rq.runtime == API_EST_RT_VLLM ? est_vllm(env, e, root, out) :
							est_inference(env, e, root, out);
	if (rc < 0)
		goto done;
	arr = cJSON_AddArrayToObject(root, "assumptions");
	for (int i = 0; arr && i < e->n_assumptions; i++)
		api_json_append(arr, cJSON_CreateString(e->assumptions[i]));
	*result = root;
	root = NULL;
	rc = 0;
done:
	cJSON_Delete(root);
	return rc;
}

int api_estimate_object(const struct api_env *env, const cJSON *body, cJSON **result,
			struct api_reply *out)
{
	struct est *e = est_new();
	int rc;

	if (!e)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	rc = api_estimate_request_parse(body, &e->rq, out);
	if (rc == 0)
		rc = est_model(env, e, cJSON_GetObjectItemCaseSensitive(body, "model"), out);
	if (rc == 0)
		rc = est_hardware(env, e, cJSON_GetObjectItemCaseSensitive(body, "hardware"), out);
	if (rc == 0)
		rc = est_answer(env, e, result, out);
	est_release(e);
	return rc;
}

int api_estimate_resolved(const struct api_env *env, struct api_plan_input *in,
			  const struct api_estimate_request *rq, cJSON **result,
			  struct api_reply *out)
{
	struct est *e = in->est;

	*result = NULL;
	/* The resolver's state stays as it was resolved: its assumptions, the GGUF file's
	 * weights and type; what an earlier answer for this input added goes. */
	e->rq = *rq;
	e->n_assumptions = e->n_resolved;
	if (!e->gguf)
		e->ftype = -1;
	return est_answer(env, e, result, out);
}

static int estimate_route(const struct api_env *env, const struct api_request *req,
			  struct api_reply *out)
{
	cJSON *body = NULL, *result = NULL;
	char *json;
	int rc = jm_parse_body(req, false, &body, out);

	if (rc < 0)
		return rc;
	rc = api_estimate_object(env, body, &result, out);
	cJSON_Delete(body);
	if (rc < 0)
		return rc;
	json = api_json_print(result);
	cJSON_Delete(result);
	if (!json)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	api_reply_json(out, 200, json);
	return 0;
}

int api_estimate(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	int rc;

	/* The request's tree, the answer's and their strings live for this call only. */
	api_json_arena_begin();
	rc = estimate_route(env, req, out);
	api_json_arena_end();
	return rc;
}
