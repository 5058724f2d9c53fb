/*
 * ModelForge's session routes (see finetune_session.h). The detect answer itself is
 * POST /api/finetune/detect's, asked in structs (api_ft_detect_ask: the machine resolved once,
 * the planner, the route's renderer); this file completes it with what only the server knows
 * (its disk, its logical cores), remembers the question, and answers the later steps of the
 * flow by asking the remembered question again the same way, so the settings a user gets are
 * always the ones rigfit fitted for the model they chose. No request is built or replayed.
 */
#include "api/finetune_session.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "api/json_alloc.h"
#include "api/json_print.h"
#include "core/err.h"
#include "core/fit/model.h"
#include "core/plan/plan_finetune.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Replaces key of o with a number (rounded to 2 decimals). */
static void set_number(cJSON *o, const char *key, double v)
{
	cJSON_DeleteItemFromObjectCaseSensitive(o, key);
	cJSON_AddNumberToObject(o, key, round(v * 100) / 100);
}

/* Remembers the detect question q of body (its task and "hardware", when they fit) and
 * forgets the chosen model. */
static void session_remember(struct api_ft_session *s, const struct api_ft_question *q,
			     const cJSON *body)
{
	const cJSON *task = cJSON_GetObjectItemCaseSensitive(body, "task");
	const cJSON *hw = cJSON_GetObjectItemCaseSensitive(body, "hardware");

	memset(s, 0, sizeof(*s));
	if (!cJSON_IsString(task))
		return;
	if (hw &&
	    !cJSON_PrintPreallocated((cJSON *)hw, s->hardware, (int)sizeof(s->hardware), false)) {
		s->hardware[0] = '\0';
		return; /* nothing to ask again: load_settings answers 409 */
	}
	s->has_hardware = hw != NULL;
	snprintf(s->task, sizeof(s->task), "%s", task->valuestring);
	memcpy(&s->question, q, sizeof(s->question));
	s->detected = true;
}

int api_finetune_session_detect(const struct api_env *env, const struct api_request *req,
				struct api_reply *out)
{
	struct api_ft_question q;
	cJSON *body, *ans;
	const cJSON *hw;
	bool about_host;
	int rc = api_ft_question_parse(req, &q, &body, out);

	if (rc < 0)
		return rc;
	hw = cJSON_GetObjectItemCaseSensitive(body, "hardware");
	rc = api_ft_detect_ask(env, &q, hw, &ans, out);
	if (rc < 0) {
		cJSON_Delete(body);
		return rc;
	}
	/* Described hardware has no disk, and its cores are what the client said. */
	about_host = !hw && !q.has_hardware_profile;
	if (about_host && env->data_disk_known)
		set_number(ans, "available_diskspace_gb", (double)env->data_disk_free_bytes / GIB);
	/* ModelForge shows os.cpu_count(): logical cores. */
	if (about_host && env->snapshot && env->snapshot->hw.cpu.logical_cores > 0)
		set_number(ans, "cpu_cores", env->snapshot->hw.cpu.logical_cores);
	if (env->session)
		session_remember(env->session, &q, body);
	cJSON_Delete(body);
	return api_reply_cjson(out, 200, ans);
}

int api_finetune_set_model(const struct api_env *env, const struct api_request *req,
			   struct api_reply *out)
{
	cJSON *in = cJSON_ParseWithLength(req->body ? req->body : "", req->body_len);
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(in, "selected_model"), *it;
	cJSON *o;

	if (!cJSON_IsObject(in)) {
		cJSON_Delete(in);
		return api_error(out, RF_E_INVALID_JSON, NULL,
				 "the body must be a JSON object {\"selected_model\": ID}");
	}
	cJSON_ArrayForEach(it, in)
	{
		if (strcmp(it->string, "selected_model") != 0) {
			int rc = api_error(out, RF_E_UNKNOWN_FIELD, it->string,
					   "unknown field; the body is {\"selected_model\": ID}");
			cJSON_Delete(in);
			return rc;
		}
	}
	if (!cJSON_IsString(m) || !*m->valuestring ||
	    strlen(m->valuestring) >= API_SESSION_MODEL_MAX) {
		int rc = api_error(out, m ? RF_E_INVALID_VALUE : RF_E_MISSING_FIELD,
				   "selected_model",
				   "selected_model must be a model id of 1 to %d "
				   "characters",
				   API_SESSION_MODEL_MAX - 1);
		cJSON_Delete(in);
		return rc;
	}
	if (!env->session) {
		cJSON_Delete(in);
		return api_error(out, RF_E_UNAVAILABLE, NULL, "no session is kept here");
	}
	snprintf(env->session->selected_model, sizeof(env->session->selected_model), "%s",
		 m->valuestring);
	env->session->custom = false;
	o = cJSON_CreateObject();
	cJSON_AddTrueToObject(o, "success");
	cJSON_AddStringToObject(o, "selected_model", m->valuestring);
	cJSON_AddStringToObject(o, "message", "Model selection saved successfully");
	cJSON_Delete(in);
	return api_reply_cjson(out, 200, o);
}

/* Adds s as a string, or null when it is empty. */
static void add_str_or_null(cJSON *o, const char *key, const char *s)
{
	if (s && *s)
		cJSON_AddStringToObject(o, key, s);
	else
		cJSON_AddNullToObject(o, key);
}

int api_finetune_session_get(const struct api_env *env, const struct api_request *req,
			     struct api_reply *out)
{
	const struct api_ft_session *s = env->session;
	cJSON *o = cJSON_CreateObject();

	(void)req;
	cJSON_AddTrueToObject(o, "success");
	add_str_or_null(o, "task", s && s->detected ? s->task : NULL);
	add_str_or_null(o, "selected_model", s ? s->selected_model : NULL);
	cJSON_AddBoolToObject(o, "is_custom_model",
			      s && s->selected_model[0] &&
				      (s->custom ||
				       (env->cat.models &&
					!model_catalog_find(env->cat.models, s->selected_model))));
	return api_reply_cjson(out, 200, o);
}

/* Returns the model_settings entry of the detect answer for model, or NULL. */
static const cJSON *fitted_for(const cJSON *ans, const char *model)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(ans, "model_settings"))
	{
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(it, "model");
		if (cJSON_IsString(m) && strcmp(m->valuestring, model) == 0)
			return it;
	}
	return NULL;
}

/* Asks the session's remembered question again: the machine resolved once, every model
 * planned and the answer rendered as POST /api/finetune/detect renders it
 * (api_ft_detect_ask). Returns 0 with the answer in *ans (free with cJSON_Delete), the chosen
 * model (the recommended one when none was chosen; NULL: neither) in *model, borrowed from the
 * session or *ans, and its model_settings entry in *entry (NULL: it was not fitted); or a
 * negative rf_err with the envelope in out (409 before any detect; the detect's own error:
 * no scan yet, profiles reloaded without the task...). */
static int session_replan(const struct api_env *env, struct api_reply *out, cJSON **ans,
			  const char **model, const cJSON **entry)
{
	const struct api_ft_session *s = env->session;
	cJSON *hw = NULL;
	const cJSON *rec;
	int rc;

	*ans = NULL;
	if (!s || !s->detected)
		return api_error(out, RF_E_CONFLICT, NULL,
				 "no hardware detection yet: POST /api/finetune/detect first");
	if (s->has_hardware && !(hw = cJSON_Parse(s->hardware)))
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	rc = api_ft_detect_ask(env, &s->question, hw, ans, out);
	cJSON_Delete(hw);
	if (rc < 0)
		return rc;
	rec = cJSON_GetObjectItemCaseSensitive(*ans, "recommended_model");
	*model = s->selected_model[0] ? s->selected_model :
		 cJSON_IsString(rec)  ? rec->valuestring :
					NULL;
	*entry = *model ? fitted_for(*ans, *model) : NULL;
	return 0;
}

int api_finetune_load_settings(const struct api_env *env, const struct api_request *req,
			       struct api_reply *out)
{
	const struct api_ft_session *s = env->session;
	const cJSON *entry, *settings;
	const char *model;
	cJSON *ans, *o, *dv;
	int rc;

	(void)req;
	rc = session_replan(env, out, &ans, &model, &entry);
	if (rc < 0)
		return rc;
	/* A model not planned here (nothing fits, or a chosen model the detect did not offer):
	 * the tier's template, said so by fits false; never another model's fitted settings. */
	settings = entry ? cJSON_GetObjectItemCaseSensitive(entry, "settings") :
			   cJSON_GetObjectItemCaseSensitive(ans, "tier_settings");
	o = cJSON_CreateObject();
	dv = cJSON_IsObject(settings) ? cJSON_Duplicate(settings, true) : cJSON_CreateObject();
	if (!o || !dv) {
		cJSON_Delete(o);
		cJSON_Delete(dv);
		cJSON_Delete(ans);
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	}
	cJSON_AddStringToObject(dv, "task", s->task);
	add_str_or_null(dv, "model_name", model);
	cJSON_AddItemReferenceToObject(dv, "compute_specs",
				       cJSON_GetObjectItemCaseSensitive(ans, "profile"));
	cJSON_AddItemToObject(o, "default_values", dv);
	add_str_or_null(o, "selected_model", model);
	cJSON_AddBoolToObject(o, "fits", entry != NULL);
	if (entry) {
		cJSON_AddItemReferenceToObject(
			o, "memory_total_bytes",
			cJSON_GetObjectItemCaseSensitive(entry, "memory_total_bytes"));
		cJSON_AddItemReferenceToObject(
			o, "utilization", cJSON_GetObjectItemCaseSensitive(entry, "utilization"));
	} else {
		cJSON_AddStringToObject(
			o, "explanation",
			model ? "the chosen model is not among those planned for this "
				"hardware (the best that fit); these are the tier's settings" :
				"no model fits this hardware; these are the tier's "
				"settings");
	}
	rc = api_reply_cjson(out, 200, o);
	cJSON_Delete(ans);
	return rc;
}

/* What rigfit's fine-tuning planner and estimator model, in ModelForge's terms. */
static const struct {
	const char *name, *description;
	bool planned; /* chosen by the planner; else estimated (POST /api/estimate) only */
	const char *methods[3];
} info_strategies[] = {
	{"sft",
	 "supervised fine-tuning: full, or LoRA adapters on a 16-bit base",
	 true,
	 {"full", "lora", NULL}},
	{"qlora",
	 "LoRA adapters on a 4-bit (NF4) base, with bitsandbytes (CUDA, ROCm)",
	 true,
	 {"qlora", NULL, NULL}},
	{"dpo",
	 "direct preference optimization: chosen and rejected sequences and a frozen reference "
	 "model (POST /api/estimate with objective dpo)",
	 false,
	 {"full", "lora", "qlora"}},
};

static const struct {
	enum train_provider id;
	const char *description;
} info_providers[] = {
	{TRAIN_PROVIDER_HUGGINGFACE, "transformers, PEFT and TRL: every model and backend"},
	{TRAIN_PROVIDER_UNSLOTH, "Unsloth's kernels: decoder models on NVIDIA GPUs only"},
};

/* The provider, strategy and method the session's plan chose for its model, or null. */
static cJSON *info_planned(const struct api_env *env)
{
	struct api_reply err = {0};
	const cJSON *entry, *set;
	const char *model;
	cJSON *ans = NULL, *o;
	static const char *const keys[] = {"provider", "strategy", "method"};

	if (!env->session || !env->session->detected ||
	    session_replan(env, &err, &ans, &model, &entry) < 0) {
		api_reply_reset(&err);
		return cJSON_CreateNull();
	}
	o = cJSON_CreateObject();
	set = entry ? cJSON_GetObjectItemCaseSensitive(entry, "settings") : NULL;
	cJSON_AddStringToObject(o, "task", env->session->task);
	add_str_or_null(o, "model", model);
	cJSON_AddBoolToObject(o, "fits", entry != NULL);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(set, keys[i]);
		add_str_or_null(o, keys[i], cJSON_IsString(v) ? v->valuestring : NULL);
	}
	cJSON_Delete(ans);
	return o;
}

int api_info(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	cJSON *o = cJSON_CreateObject(), *ap, *as, *p, *st, *m, *t;

	(void)req;
	if (!o)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	cJSON_AddStringToObject(o, "app_name", "rigfit");
	cJSON_AddStringToObject(o, "name", "rigfit");
	cJSON_AddStringToObject(o, "version", env->version ? env->version : "");
	cJSON_AddStringToObject(o, "description",
				"which LLMs fit this machine, and how to set them up");
	cJSON_AddStringToObject(o, "openapi", "/openapi.yaml");
	ap = cJSON_AddArrayToObject(o, "available_providers");
	p = cJSON_AddArrayToObject(o, "providers");
	for (size_t i = 0; i < sizeof(info_providers) / sizeof(info_providers[0]); i++) {
		cJSON *e = cJSON_CreateObject();
		const char *name = plan_ft_provider_name(info_providers[i].id);
		api_json_append(ap, cJSON_CreateString(name));
		cJSON_AddStringToObject(e, "name", name);
		cJSON_AddStringToObject(e, "description", info_providers[i].description);
		api_json_append(p, e);
	}
	as = cJSON_AddArrayToObject(o, "available_strategies");
	st = cJSON_AddArrayToObject(o, "strategies");
	for (size_t i = 0; i < sizeof(info_strategies) / sizeof(info_strategies[0]); i++) {
		cJSON *e = cJSON_CreateObject(), *ms;
		api_json_append(as, cJSON_CreateString(info_strategies[i].name));
		cJSON_AddStringToObject(e, "name", info_strategies[i].name);
		cJSON_AddStringToObject(e, "description", info_strategies[i].description);
		cJSON_AddBoolToObject(e, "planned", info_strategies[i].planned);
		ms = cJSON_AddArrayToObject(e, "methods");
		for (int k = 0; k < 3 && info_strategies[i].methods[k]; k++)
			api_json_append(ms, cJSON_CreateString(info_strategies[i].methods[k]));
		api_json_append(st, e);
	}
	m = cJSON_AddArrayToObject(o, "methods");
	for (int mode = TRAIN_FULL; mode <= TRAIN_QLORA; mode++)
		api_json_append(m, cJSON_CreateString(plan_ft_method_name((enum train_mode)mode)));
	t = cJSON_AddArrayToObject(o, "supported_tasks");
	for (unsigned bit = 1; bit <= MODEL_TASK_EXTRACTIVE_QA; bit <<= 1)
		api_json_append(t, cJSON_CreateString(model_task_name(bit)));
	api_json_add(o, "planned", info_planned(env));
	return api_reply_cjson(out, 200, o);
}

/* Whether the detection of a and b differ. */
static bool detection_differs(const struct api_ft_session *a, const struct api_ft_session *b)
{
	return a->detected != b->detected || strcmp(a->task, b->task) != 0 ||
	       memcmp(&a->question, &b->question, sizeof(a->question)) != 0 ||
	       a->has_hardware != b->has_hardware || strcmp(a->hardware, b->hardware) != 0;
}

void api_ft_session_apply(struct api_ft_session *s, const struct api_ft_session *before,
			  const struct api_ft_session *after)
{
	if (detection_differs(before, after)) {
		s->detected = after->detected;
		memcpy(s->task, after->task, sizeof(s->task));
		memcpy(&s->question, &after->question, sizeof(s->question));
		s->has_hardware = after->has_hardware;
		memcpy(s->hardware, after->hardware, sizeof(s->hardware));
	}
	if (strcmp(before->selected_model, after->selected_model) != 0 ||
	    before->custom != after->custom) {
		memcpy(s->selected_model, after->selected_model, sizeof(s->selected_model));
		s->custom = after->custom;
	}
}
