/*
 * The resolver as the planning routes take it (api_plan_input, api/estimate.h): the model and
 * the machine of a request, resolved once, exactly as /api/estimate resolves them, in the
 * planner's terms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_memo.h"
#include "core/err.h"
#include "api/estimate_priv.h"

/* ---- the planning routes' input ------------------------------------------------------------- */

static int plan_weights(void *ctx, const struct model_arch *a, int ftype,
			struct rf_mem_weights *out)
{
	const struct est *e = ctx;

	if (e->gguf)
		return ftype == e->ftype ? (*out = e->weights, 0) : RF_E_INVALID_VALUE;
	return api_memo_weights(a, ftype, out);
}

/* Allocates an input whose estimate is in training mode (a model named for fine-tuning) or
 * inference mode. Returns it, or NULL when out of memory. */
static struct api_plan_input *plan_input_new(bool training)
{
	struct api_plan_input *in = calloc(1, sizeof(*in));
	struct est *e = est_new();

	if (!in || !e) {
		free(in);
		est_release(e);
		return NULL;
	}
	in->est = e;
	hw_snapshot_init(&e->hw); /* no machine yet: api_model_input resolves none */
	e->rq.mode = training ? API_EST_LORA : API_EST_INFERENCE;
	return in;
}

/* Fills the model's side of in from its estimate. */
static void plan_input_model(struct api_plan_input *in)
{
	struct est *e = in->est;

	in->arch = &e->arch;
	in->params = &e->params;
	in->entry = e->entry;
	in->model_id = e->model_id;
	in->model_source = e->model_source;
	in->gguf_ftype = e->gguf ? e->ftype : -1;
	in->n_assumptions = e->n_assumptions;
	in->assumptions = (const char(*)[API_PLAN_NOTE_LEN])e->assumptions;
}

int api_model_input(const struct api_env *env, const cJSON *model, struct api_plan_input **out,
		    struct api_reply *err)
{
	struct api_plan_input *in = plan_input_new(true);
	int rc;

	*out = NULL;
	if (!in)
		return api_error(err, RF_E_NOMEM, NULL, NULL);
	if ((rc = est_model(env, in->est, model, err)) < 0) {
		api_plan_input_free(in);
		return rc;
	}
	in->est->n_resolved = in->est->n_assumptions;
	plan_input_model(in);
	*out = in;
	return 0;
}

/* api_plan_input, the model resolved as for fine-tuning when training. */
static int plan_input_resolve(const struct api_env *env, const cJSON *model, const cJSON *hardware,
			      const char *hardware_profile, bool training,
			      struct api_plan_input **out, struct api_reply *err)
{
	struct api_plan_input *in = plan_input_new(training);
	struct est *e = in ? in->est : NULL;
	struct plan_machine *pm;
	int rc;

	*out = NULL;
	if (!in)
		return api_error(err, RF_E_NOMEM, NULL, NULL);
	if (hardware_profile) {
		e->rq.has_hardware_profile = true;
		snprintf(e->rq.hardware_profile, sizeof(e->rq.hardware_profile), "%s",
			 hardware_profile);
	}
	if ((model && (rc = est_model(env, e, model, err)) < 0) ||
	    (rc = est_hardware(env, e, hardware, err)) < 0) {
		api_plan_input_free(in);
		return rc;
	}
	pm = &in->machine;
	/* The speed's notes (a GPU of unknown bandwidth) belong to each answer, which makes
	 * them again. */
	{
		int n0 = e->n_assumptions;
		est_plan_machine(env, e, pm);
		e->n_resolved = n0;
	}
	plan_input_model(in);
	in->hw = &e->hw;
	in->profile_id = e->hw.profile_id;
	*out = in;
	return 0;
}

int api_plan_input(const struct api_env *env, const cJSON *model, const cJSON *hardware,
		   const char *hardware_profile, struct api_plan_input **out, struct api_reply *err)
{
	return plan_input_resolve(env, model, hardware, hardware_profile, false, out, err);
}

int api_machine_input(const struct api_env *env, const cJSON *hardware,
		      const char *hardware_profile, struct api_plan_input **out,
		      struct api_reply *err)
{
	return plan_input_resolve(env, NULL, hardware, hardware_profile, false, out, err);
}

int api_train_input(const struct api_env *env, const cJSON *model, const cJSON *hardware,
		    const char *hardware_profile, struct api_plan_input **out,
		    struct api_reply *err)
{
	return plan_input_resolve(env, model, hardware, hardware_profile, true, out, err);
}

int api_plan_input_set_entry(struct api_plan_input *in, const struct model_entry *me)
{
	struct est *e = in->est;
	const char *bad = NULL;
	int rc;

	gguf_free(e->gguf);
	e->gguf = NULL;
	e->ftype = -1;
	e->entry = me;
	e->arch = me->arch;
	snprintf(e->model_id, sizeof(e->model_id), "%s", me->id);
	snprintf(e->model_source, sizeof(e->model_source), "catalog");
	if (model_arch_validate(&e->arch, &bad) < 0)
		return RF_E_INVALID_VALUE;
	if ((rc = api_memo_params(&e->arch, &e->params)) < 0)
		return rc;
	in->entry = me;
	in->gguf_ftype = -1;
	return 0;
}

/* The runs of a planning question's machine, and what predicts them on it. */
struct api_plan_history {
	struct api_history_calib cal;
	struct est_predict pr;
};

static void plan_history_free(struct api_plan_history *h)
{
	if (!h)
		return;
	api_history_calib_free(&h->cal);
	est_predict_free(&h->pr);
	free(h);
}

int api_plan_input_history(const struct api_env *env, struct api_plan_input *in)
{
	struct api_plan_history *h = calloc(1, sizeof(*h));
	struct api_history_query q;
	int rc;

	if (!h)
		return RF_E_NOMEM;
	h->pr.pm = &in->machine;
	/* Any precision: the planner searches them; a catalog model is matched by its entry,
	 * which a question about many models sets per model. */
	est_history_query(in->est, in->machine.speed.backend, -1, &h->pr, &q);
	rc = api_history_load(env, &q, &h->cal);
	if (rc < 0) {
		plan_history_free(h);
		return rc;
	}
	plan_history_free(in->history);
	in->history = h;
	return 0;
}

void api_plan_input_free(struct api_plan_input *in)
{
	if (!in)
		return;
	plan_history_free(in->history);
	est_release(in->est);
	free(in);
}

/* plan_vllm_facts_fn over the process's memo. */
static int plan_vllm_facts(void *ctx, const struct model_arch *a, struct vllm_facts *out)
{
	(void)ctx;
	return api_memo_vllm_facts(a, out);
}

void api_plan_model(struct api_plan_input *in, struct plan_model *m)
{
	memset(m, 0, sizeof(*m));
	m->arch = in->arch;
	m->params = in->params;
	m->weights = plan_weights;
	m->weights_ctx = in->est;
	m->vllm_facts = plan_vllm_facts;
	m->fixed_ftype = in->gguf_ftype;
	/* gpt-oss is released with its experts in MXFP4: that is the model, not a quantization
	 * of it, and llama.cpp runs it as such. */
	m->native_mxfp4 = in->gguf_ftype < 0 && strcmp(in->arch->model_type, "gpt_oss") == 0;
	m->vllm_missing = plan_vllm_missing(in->entry);
	if (in->entry)
		m->rope = in->entry->long_ctx;
	if (in->history) {
		m->calib = &in->history->cal.cal;
		m->calib_model = in->entry;
		m->calib_name = in->est->gguf ? in->model_id : NULL;
	}
	/* llama.cpp has no Llama 3.2 Vision (mllama) architecture (llama.cpp issue 9643): no GGUF
	 * of it loads, so only vLLM runs it. */
	m->no_llama_cpp = in->gguf_ftype < 0 && strcmp(in->arch->model_type, "mllama") == 0;
}
