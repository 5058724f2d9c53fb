/*
 * GET /api/models: what a request can name as its model. The catalog (profiles/models.json and
 * custom model profiles, with their parameter counts) and the models this host holds: GGUF
 * files and Hugging Face folders under --models-dir, the Hugging Face cache and Ollama's local
 * store, with their sizes on disk. ?source=catalog or ?source=local narrows the list.
 */
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/json_print.h"
#include "core/err.h"
#include "core/model.h"

#define MODELS_LOCAL_MAX 2000

/* Adds the catalog's entries to arr. Returns false when out of memory. */
static bool add_catalog(const struct model_catalog *c, cJSON *arr)
{
	for (size_t i = 0; c && i < c->n; i++) {
		const struct model_entry *m = &c->models[i];
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o) ||
		    !cJSON_AddStringToObject(o, "id", m->id) ||
		    !cJSON_AddStringToObject(o, "name", m->name) ||
		    !cJSON_AddStringToObject(o, "where", "catalog") ||
		    !cJSON_AddStringToObject(o, "format", "architecture") ||
		    !(m->params_b > 0 ? cJSON_AddNumberToObject(o, "params_b", m->params_b) :
					cJSON_AddNullToObject(o, "params_b")) ||
		    !cJSON_AddNullToObject(o, "size_bytes"))
			return false;
	}
	return true;
}

static bool add_local(const struct api_local_model *l, int n, cJSON *arr)
{
	for (int i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o) ||
		    !cJSON_AddStringToObject(o, "id", l[i].id) ||
		    !cJSON_AddStringToObject(o, "name", l[i].id) ||
		    !cJSON_AddStringToObject(o, "where", l[i].where) ||
		    !cJSON_AddStringToObject(o, "format", l[i].format) ||
		    !cJSON_AddNullToObject(o, "params_b") ||
		    !cJSON_AddNumberToObject(o, "size_bytes", (double)l[i].size_bytes))
			return false;
	}
	return true;
}

int api_models_list(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	char source[16] = "";
	struct api_local_model *local = NULL;
	int n_local = 0, rc;
	cJSON *root, *arr;

	rc = api_query_get(req->query, "source", source, sizeof(source));
	if (rc < 0 || (rc > 0 && strcmp(source, "catalog") && strcmp(source, "local")))
		return api_error(out, RF_E_INVALID_VALUE, "source",
				 "source must be catalog or local");
	if (strcmp(source, "catalog") != 0 && env->list_models) {
		local = calloc(MODELS_LOCAL_MAX, sizeof(*local));
		if (!local)
			return api_error(out, RF_E_NOMEM, NULL, NULL);
		n_local = env->list_models(env->list_models_ctx, local, MODELS_LOCAL_MAX);
		if (n_local < 0) {
			free(local);
			return api_error(out, n_local, NULL,
					 "the models on this host cannot be listed");
		}
	}
	root = cJSON_CreateObject();
	arr = root ? cJSON_AddArrayToObject(root, "models") : NULL;
	if (!arr || (strcmp(source, "local") != 0 && !add_catalog(env->models, arr)) ||
	    !add_local(local, n_local, arr)) {
		cJSON_Delete(root);
		free(local);
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	}
	free(local);
	return api_reply_cjson(out, 200, root);
}
