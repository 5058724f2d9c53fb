/*
 * GET /api/models: what a request can name as its model. The catalog (profiles/models.json and
 * custom model profiles, with their parameter counts) and the models this host holds: GGUF
 * files and Hugging Face folders under --models-dir, the Hugging Face cache and Ollama's local
 * store, with their sizes on disk. The host's models come from the list the last scan walked
 * (api_snapshot.models): the request itself never reads a directory. ?source= narrows the list
 * to one place (catalog, local: every place on disk, cache, dir, ollama) and ?name= to the
 * models whose id or name holds that text, in any case. The walk lists at most so many models
 * from each place; "sources" says, for each place on disk the answer covers, how many it lists
 * and whether the walk stopped at a cap there ("truncated", true overall when any one did).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/hardware_json.h"
#include "api/json_print.h"
#include "core/err.h"
#include "core/fit/model.h"

#define MODELS_NAME_MAX 128

/* What ?source= keeps. */
struct models_filter {
	bool catalog;
	const char *where; /* a local model's where, "": every one, NULL: none */
	char name[MODELS_NAME_MAX + 1];
};

const char *api_local_source_name(enum api_local_source source)
{
	static const char *const names[API_N_LOCAL_SOURCES] = {"models_dir", "hf_cache", "ollama"};

	return (unsigned)source < API_N_LOCAL_SOURCES ? names[source] : "";
}

/* Whether hay holds needle, ignoring ASCII case. An empty needle is everywhere. */
static bool holds_text(const char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++) {
		size_t i = 0;
		while (i < n && hay[i] &&
		       tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
			i++;
		if (i == n)
			return true;
	}
	return n == 0;
}

static bool name_matches(const struct models_filter *f, const char *id, const char *name)
{
	return holds_text(id, f->name) || holds_text(name, f->name);
}

/* Adds the catalog's entries to arr. Returns false when out of memory. */
static bool add_catalog(const struct model_catalog *c, const struct models_filter *f, cJSON *arr)
{
	for (size_t i = 0; c && i < c->n; i++) {
		const struct model_entry *m = &c->models[i];
		cJSON *o;
		if (!name_matches(f, m->id, m->name))
			continue;
		o = cJSON_CreateObject();
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

/* Adds to root "sources" ({place: {listed, truncated}} for each place on disk f covers) and
 * "truncated" (whether any of them is). Returns false when out of memory. */
static bool add_sources(const struct api_local_models *l, const struct models_filter *f,
			const cJSON *arr, cJSON *root)
{
	cJSON *sources = cJSON_AddObjectToObject(root, "sources");
	bool any = false;

	if (!sources)
		return false;
	for (int s = 0; f->where && s < API_N_LOCAL_SOURCES; s++) {
		const char *name = api_local_source_name((enum api_local_source)s);
		const cJSON *m;
		cJSON *o;
		int listed = 0;
		bool cut = l && l->truncated[s];
		if (f->where[0] && strcmp(f->where, name) != 0)
			continue;
		cJSON_ArrayForEach(m, arr)
		{
			const cJSON *w = cJSON_GetObjectItemCaseSensitive(m, "where");
			listed += cJSON_IsString(w) && strcmp(w->valuestring, name) == 0;
		}
		o = cJSON_AddObjectToObject(sources, name);
		if (!o || !cJSON_AddNumberToObject(o, "listed", listed) ||
		    !cJSON_AddBoolToObject(o, "truncated", cut))
			return false;
		any = any || cut;
	}
	return cJSON_AddBoolToObject(root, "truncated", any) != NULL;
}

static bool add_local(const struct api_local_models *l, const struct models_filter *f, cJSON *arr)
{
	for (int i = 0; l && i < l->n; i++) {
		const struct api_local_model *m = &l->items[i];
		cJSON *o;
		if ((f->where[0] && strcmp(m->where, f->where) != 0) ||
		    !name_matches(f, m->id, m->id))
			continue;
		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o) ||
		    !cJSON_AddStringToObject(o, "id", m->id) ||
		    !cJSON_AddStringToObject(o, "name", m->id) ||
		    !cJSON_AddStringToObject(o, "where", m->where) ||
		    !cJSON_AddStringToObject(o, "format", m->format) ||
		    !cJSON_AddNullToObject(o, "params_b") ||
		    !cJSON_AddNumberToObject(o, "size_bytes", (double)m->size_bytes))
			return false;
	}
	return true;
}

/* Reads ?source= and ?name= into f. Returns 0, or a negative rf_err with the error reply in
 * out. */
static int filter_parse(const char *query, struct models_filter *f, struct api_reply *out)
{
	static const struct {
		const char *source;
		bool catalog;
		const char *where;
	} sources[] = {
		{"", true, ""},
		{"catalog", true, NULL},
		{"local", false, ""},
		{"cache", false, "hf_cache"},
		{"dir", false, "models_dir"},
		{"ollama", false, "ollama"},
	};
	char source[16];
	int rc = api_query_get(query, "source", source, sizeof(source));

	for (size_t i = 0; rc >= 0 && i < sizeof(sources) / sizeof(sources[0]); i++) {
		if (strcmp(source, sources[i].source) == 0) {
			f->catalog = sources[i].catalog;
			f->where = sources[i].where;
			if (api_query_get(query, "name", f->name, sizeof(f->name)) < 0)
				return api_error(
					out, RF_E_INVALID_VALUE, "name",
					"name must be text of at most 128 bytes (no NUL, %%XX "
					"escapes whole)");
			return 0;
		}
	}
	return api_error(out, RF_E_INVALID_VALUE, "source",
			 "source must be catalog, local, cache, dir or ollama");
}

int api_models_list(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	struct models_filter f = {0};
	const struct api_local_models *local = env->snapshot ? &env->snapshot->models : NULL;
	char when[40];
	cJSON *root, *arr;
	int rc = filter_parse(req->query, &f, out);

	if (rc != 0)
		return rc;
	if (f.where && !local)
		return api_error(out, RF_E_UNAVAILABLE, NULL,
				 "the first scan of this host's models has not finished yet; "
				 "retry shortly");
	root = cJSON_CreateObject();
	arr = root ? cJSON_AddArrayToObject(root, "models") : NULL;
	if (local && local->scanned_at_ms > 0)
		api_format_time_ms(local->scanned_at_ms, when, sizeof(when));
	if (!arr ||
	    !(local && local->scanned_at_ms > 0 ?
		      cJSON_AddStringToObject(root, "scanned_at", when) :
		      cJSON_AddNullToObject(root, "scanned_at")) ||
	    (f.catalog && !add_catalog(env->cat.models, &f, arr)) ||
	    (f.where && !add_local(local, &f, arr)) || !add_sources(local, &f, arr, root)) {
		cJSON_Delete(root);
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	}
	return api_reply_cjson(out, 200, root);
}
