/*
 * ModelForge's "Use Custom Model": POST /api/finetune/validate_custom_model and
 * POST /api/finetune/set_custom_model, both {"repo_name": NAME}. NAME is resolved by the one
 * model resolver /api/estimate uses (api_model_input: a Hugging Face id, a catalog alias, an
 * Ollama tag, a model folder or a GGUF path), so a name the estimator knows is a name ModelForge
 * may use, and the answer says what the model is. Whether it suits the task is the planner's
 * rule (plan_ft_task_fits), the task being the request's, else the session's.
 *
 * ModelForge's page shows a failed validation's "error" as text, so validate answers a model
 * it cannot use as 200 {"valid": false, "error": "<sentence>"} with the error object in
 * "errors"; set_custom_model, whose failure the page only counts, answers the envelope.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/estimate.h"
#include "api/finetune_session.h"
#include "api/json_alloc.h"
#include "api/json_print.h"
#include "api/model_json.h"
#include "core/err.h"
#include "core/fit/model.h"
#include "core/plan/plan_finetune.h"

/* The parsed body: the name, trimmed, and the task (0: none named). */
struct custom_req {
	char name[API_SESSION_MODEL_MAX];
	unsigned task;
	const char *task_name;
};

/* Parses {"repo_name": NAME, "task"?: TASK}. Returns 0, or the error in out naming the field. */
static int custom_parse(const struct api_env *env, const struct api_request *req,
			struct custom_req *r, struct api_reply *out)
{
	cJSON *in = cJSON_ParseWithLength(req->body ? req->body : "", req->body_len);
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(in, "repo_name");
	const cJSON *task = cJSON_GetObjectItemCaseSensitive(in, "task"), *it;
	const char *s;
	size_t len;
	int rc = 0;

	memset(r, 0, sizeof(*r));
	if (!cJSON_IsObject(in)) {
		cJSON_Delete(in);
		return api_error(out, RF_E_INVALID_JSON, NULL,
				 "the body must be a JSON object {\"repo_name\": NAME}");
	}
	cJSON_ArrayForEach(it, in)
	{
		if (strcmp(it->string, "repo_name") != 0 && strcmp(it->string, "task") != 0) {
			rc = api_error(out, RF_E_UNKNOWN_FIELD, it->string,
				       "unknown field; the body is {\"repo_name\": NAME, \"task\": "
				       "TASK (optional)}");
			goto done;
		}
	}
	if (!cJSON_IsString(name)) {
		rc = api_error(out, name ? RF_E_INVALID_VALUE : RF_E_MISSING_FIELD, "repo_name",
			       "repo_name must be a model: a Hugging Face id, a catalog alias, an "
			       "Ollama tag or the path of a model folder");
		goto done;
	}
	/* ModelForge trims the name; so does rigfit, for clients that do not. */
	for (s = name->valuestring; isspace((unsigned char)*s); s++)
		;
	len = strlen(s);
	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	if (len == 0 || len >= sizeof(r->name)) {
		rc = api_error(out, RF_E_INVALID_VALUE, "repo_name",
			       "repo_name must be 1 to %d characters", API_SESSION_MODEL_MAX - 1);
		goto done;
	}
	memcpy(r->name, s, len);
	r->name[len] = '\0';
	if (task) {
		r->task = cJSON_IsString(task) ? model_task_from_name(task->valuestring) : 0;
		if (!r->task) {
			rc = api_error(out, RF_E_INVALID_VALUE, "task",
				       "task must be text-generation, summarization, "
				       "extractive-question-answering or question-answering");
			goto done;
		}
		r->task_name = model_task_name(r->task);
	} else if (env->session && env->session->detected) {
		r->task = model_task_from_name(env->session->task);
		r->task_name = r->task ? model_task_name(r->task) : NULL;
	}
done:
	cJSON_Delete(in);
	return rc;
}

/* The resolver's model for name: a path is a GGUF file or a model folder, anything else a
 * name (/api/estimate's "model": "NAME"). Returns a new JSON value or NULL. */
static cJSON *custom_model_json(const char *name)
{
	size_t len = strlen(name);
	cJSON *m;

	if (name[0] != '/')
		return cJSON_CreateString(name);
	m = cJSON_CreateObject();
	if (m && !cJSON_AddStringToObject(
			 m, len > 5 && strcasecmp(name + len - 5, ".gguf") == 0 ? "gguf" : "path",
			 name)) {
		cJSON_Delete(m);
		return NULL;
	}
	return m;
}

/* Renames the field of the error envelope in out to field (the resolver names model.id,
 * model.path or model.gguf, which this route calls repo_name). Returns the envelope's error
 * object, parsed (free with cJSON_Delete), or NULL. */
static cJSON *custom_error(struct api_reply *out, const char *field)
{
	const char *body = out->body ? out->body : out->borrowed_body;
	cJSON *env = body ? cJSON_ParseWithLength(body, out->len) : NULL;
	cJSON *err = cJSON_DetachItemFromObjectCaseSensitive(env, "error");
	int status = out->status;

	cJSON_Delete(env);
	if (!cJSON_IsObject(err)) {
		cJSON_Delete(err);
		return NULL;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(err, "field");
	cJSON_AddStringToObject(err, "field", field);
	env = cJSON_CreateObject();
	if (!env || !cJSON_AddItemReferenceToObject(env, "error", err)) {
		cJSON_Delete(env);
		cJSON_Delete(err);
		return NULL;
	}
	api_reply_reset(out);
	api_reply_cjson(out, status, env);
	return err;
}

static const char *family_name(enum model_family f)
{
	return f == MODEL_DECODER ? "decoder" : f == MODEL_ENCODER ? "encoder" : "encoder-decoder";
}

/* What the task loads, for a sentence on a model that does not suit it. */
static const char *task_needs(unsigned task)
{
	switch (task) {
	case MODEL_TASK_TEXT_GENERATION:
		return "a causal language model (a decoder such as Llama or Qwen)";
	case MODEL_TASK_SUMMARIZATION:
		return "a decoder or an encoder-decoder (T5) model";
	case MODEL_TASK_EXTRACTIVE_QA:
		return "an encoder with a span head (BERT, RoBERTa)";
	default:
		return "a generative or an extractive question-answering model";
	}
}

/* model_info: what the model is. Returns a new object or NULL. */
static cJSON *custom_info(const struct api_plan_input *in, const char *train_id, unsigned tasks)
{
	const struct model_arch *a = in->arch;
	const char *slash = strchr(train_id, '/');
	cJSON *o = cJSON_CreateObject(), *t, *p;
	char author[API_SESSION_MODEL_MAX];

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "id", train_id);
	if (slash && train_id[0] != '/') {
		snprintf(author, sizeof(author), "%.*s", (int)(slash - train_id), train_id);
		cJSON_AddStringToObject(o, "author", author);
	} else
		cJSON_AddNullToObject(o, "author");
	cJSON_AddStringToObject(o, "source", in->model_source);
	if (in->entry && in->entry->id[0])
		cJSON_AddStringToObject(o, "catalog_id", in->entry->id);
	cJSON_AddStringToObject(o, "model_type", a->model_type);
	cJSON_AddStringToObject(o, "family", family_name(a->family));
	cJSON_AddNumberToObject(o, "params_b", (double)(in->params->total / 10000000) / 100.0);
	p = cJSON_AddObjectToObject(o, "parameters");
	if (p) {
		cJSON_AddNumberToObject(p, "total", (double)in->params->total);
		cJSON_AddNumberToObject(p, "active", (double)in->params->active);
	}
	t = cJSON_AddArrayToObject(o, "tasks");
	for (unsigned bit = 1; t && bit <= MODEL_TASK_EXTRACTIVE_QA; bit <<= 1)
		if (tasks & bit)
			cJSON_AddItemToArray(t, cJSON_CreateString(model_task_name(bit)));
	if (a->max_position_embeddings > 0)
		cJSON_AddNumberToObject(o, "max_position_embeddings",
					(double)a->max_position_embeddings);
	else
		cJSON_AddNullToObject(o, "max_position_embeddings");
	api_json_add(o, "architecture", api_model_arch_json(a));
	return o;
}

/* What ModelForge should train for name, resolved as in: a path as given; a Hugging Face id
 * the catalog lists (its id or an alias: an Instruct release shares its base's entry) as the
 * catalog spells it; another catalog name (an alias, an Ollama tag) as the entry's id; a
 * Hugging Face id found in the cache or on the Hub as given. */
static const char *custom_train_id(const struct api_plan_input *in, const char *name)
{
	const struct model_entry *e = in->entry;

	if (name[0] == '/' || !e)
		return name[0] == '/' ? name : in->model_id;
	if (strchr(name, '/') && !strchr(name, ':')) {
		if (strcasecmp(e->id, name) == 0)
			return e->id;
		for (int i = 0; i < e->n_aliases; i++)
			if (strcasecmp(e->aliases[i], name) == 0)
				return e->aliases[i];
	}
	return e->id;
}

/* The verdict on one name. */
struct custom_check {
	struct api_plan_input *in; /* the resolved model; NULL when it did not resolve */
	const char *train_id;      /* what ModelForge should train: the catalog id, else the
				      name or path given */
	unsigned tasks;            /* the model's tasks (catalog, else its family's) */
	cJSON *error;              /* why it cannot be used (an error object); NULL: valid */
};

/* Resolves r->name and judges it. Returns 0 with *c filled (valid, or not with c->error and
 * the envelope in out), or a negative rf_err with its envelope in out (a server fault: 5xx,
 * or out of memory). */
static int custom_check(const struct api_env *env, const struct custom_req *r,
			struct custom_check *c, struct api_reply *out)
{
	cJSON *m = custom_model_json(r->name);
	const struct model_arch *a;
	int rc;

	memset(c, 0, sizeof(*c));
	if (!m)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	rc = api_model_input(env, m, &c->in, out);
	cJSON_Delete(m);
	if (rc < 0) {
		if (out->status >= 500)
			return rc;
		c->error = custom_error(out, "repo_name");
		return c->error ? 0 : api_error(out, RF_E_NOMEM, NULL, NULL);
	}
	a = c->in->arch;
	c->train_id = custom_train_id(c->in, r->name);
	c->tasks = c->in->entry ? c->in->entry->tasks : plan_ft_family_tasks(a->family);
	if (c->in->gguf_ftype >= 0)
		api_error(out, RF_E_INVALID_VALUE, "repo_name",
			  "'%.100s' is a GGUF file, an export for inference: fine-tuning loads the "
			  "model's Hugging Face checkpoint (config.json and safetensors)",
			  r->name);
	else if (r->task && !plan_ft_task_fits(r->task, a->family, c->tasks))
		api_error(out, RF_E_INVALID_VALUE, "repo_name",
			  "'%.100s' is a%s %s model (%s): %s fine-tunes %s", r->name,
			  a->family == MODEL_DECODER ? "" : "n", family_name(a->family),
			  a->model_type, r->task_name, task_needs(r->task));
	else
		return 0;
	c->error = custom_error(out, "repo_name");
	return c->error ? 0 : api_error(out, RF_E_NOMEM, NULL, NULL);
}

/* The answer of validate_custom_model for c (and set_custom_model's, valid). Returns a new
 * object or NULL. */
static cJSON *custom_answer(const struct api_env *env, const struct custom_req *r,
			    const struct custom_check *c)
{
	cJSON *o = cJSON_CreateObject(), *errs;
	char msg[400];

	if (!o)
		return NULL;
	cJSON_AddBoolToObject(o, "valid", c->error == NULL);
	cJSON_AddStringToObject(o, "repo_name", r->name);
	if (c->in)
		cJSON_AddStringToObject(o, "model", c->train_id);
	else
		cJSON_AddNullToObject(o, "model");
	if (r->task_name)
		cJSON_AddStringToObject(o, "task", r->task_name);
	else
		cJSON_AddNullToObject(o, "task");
	if (c->error) {
		const cJSON *m = cJSON_GetObjectItemCaseSensitive(c->error, "message");
		const char *near = env->cat.models && !c->in ?
					   model_catalog_suggest(env->cat.models, r->name) :
					   NULL;
		cJSON_AddStringToObject(o, "error",
					cJSON_IsString(m) ? m->valuestring : "validation failed");
		errs = cJSON_AddArrayToObject(o, "errors");
		api_json_append(errs, cJSON_Duplicate(c->error, true));
		if (near)
			cJSON_AddStringToObject(o, "did_you_mean", near);
		else
			cJSON_AddNullToObject(o, "did_you_mean");
	} else {
		snprintf(msg, sizeof(msg), "%s: a %s %s model of %.2fB parameters%s%s", c->train_id,
			 c->in->arch->model_type, family_name(c->in->arch->family),
			 (double)c->in->params->total / 1e9,
			 r->task_name ? " that can be fine-tuned for " : "",
			 r->task_name ? r->task_name : "");
		cJSON_AddStringToObject(o, "message", msg);
	}
	if (c->in)
		api_json_add(o, "model_info", custom_info(c->in, c->train_id, c->tasks));
	return o;
}

static void custom_check_free(struct custom_check *c)
{
	api_plan_input_free(c->in);
	cJSON_Delete(c->error);
}

int api_finetune_validate_custom_model(const struct api_env *env, const struct api_request *req,
				       struct api_reply *out)
{
	struct custom_req r;
	struct custom_check c;
	int rc = custom_parse(env, req, &r, out);

	if (rc < 0)
		return rc;
	rc = custom_check(env, &r, &c, out);
	if (rc < 0) {
		custom_check_free(&c);
		return rc;
	}
	api_reply_reset(out);
	rc = api_reply_cjson(out, 200, custom_answer(env, &r, &c));
	custom_check_free(&c);
	return rc;
}

int api_finetune_set_custom_model(const struct api_env *env, const struct api_request *req,
				  struct api_reply *out)
{
	struct custom_req r;
	struct custom_check c;
	cJSON *o;
	int rc = custom_parse(env, req, &r, out);

	if (rc < 0)
		return rc;
	if (!env->session)
		return api_error(out, RF_E_UNAVAILABLE, NULL, "no session is kept here");
	rc = custom_check(env, &r, &c, out);
	if (rc < 0 || c.error) {
		/* The envelope naming repo_name is in out. */
		custom_check_free(&c);
		return rc < 0 ? rc : RF_E_INVALID_VALUE;
	}
	snprintf(env->session->selected_model, sizeof(env->session->selected_model), "%s",
		 c.train_id);
	env->session->custom = true;
	o = custom_answer(env, &r, &c);
	if (o) {
		cJSON_AddTrueToObject(o, "success");
		cJSON_AddStringToObject(o, "selected_model", c.train_id);
	}
	rc = api_reply_cjson(out, 200, o);
	custom_check_free(&c);
	return rc;
}
