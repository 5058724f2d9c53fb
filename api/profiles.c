/*
 * The profile routes: GET /api/profiles (?kind=, ?source=, paged by ?limit= and ?after=),
 * GET /api/profiles/{id}, PUT /api/profiles/{id} (a custom profile, created or replaced) and
 * DELETE /api/profiles/{id} (custom ones only). The shipped profiles are the files' and are
 * read-only here (409). A custom device or model is checked by the same parser that loads
 * devices.json or models.json, then against every other profile through the process's hook
 * (no two profiles may answer to one name), and is usable by every route as soon as the PUT
 * answers. Everything here needs the store: 503 without it.
 */
#include "api/profiles.h"

#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/device_json.h"
#include "api/json_print.h"
#include "api/jsonmap.h"
#include "api/model_json.h"
#include "core/err.h"

#define PROFILES_DEFAULT_LIMIT 100
#define PROFILES_MAX_LIMIT 1000

static const char *const profile_kinds[] = {"device", "model", "tier", NULL};
static const char *const profile_sources[] = {"shipped", "custom", NULL};

void api_profile_clear(struct api_profile *p)
{
	if (!p)
		return;
	free(p->body);
	p->body = NULL;
}

void api_profiles_free(struct api_profile *rows, int n)
{
	if (!rows)
		return;
	for (int i = 0; i < n; i++)
		free(rows[i].body);
	free(rows);
}

bool api_profile_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;

	if (n < 1 || n > API_PROFILE_ID_LEN || !isalnum((unsigned char)id[0]))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)id[i];
		if (!isalnum(c) && c != '.' && c != '_' && c != '-')
			return false;
	}
	return true;
}

int api_profile_id_of(const char *entry_id, char *out, size_t outlen)
{
	size_t at = 0;

	if (!entry_id || !out || outlen == 0)
		return RF_E_INVALID_VALUE;
	for (const char *p = entry_id; *p; p++) {
		size_t need = *p == '/' ? 2 : 1;
		if (at + need >= outlen) {
			out[0] = '\0';
			return RF_E_INVALID_VALUE;
		}
		if (*p == '/') {
			out[at++] = '-';
			out[at++] = '-';
		} else {
			out[at++] = *p;
		}
	}
	out[at] = '\0';
	return api_profile_id_valid(out) ? 0 : RF_E_INVALID_VALUE;
}

/* Rewrites a parser's message about the one-entry file into terms of the request:
 * "devices.json: entry 1 (x): unified is missing" -> "profile: unified is missing",
 * "models[0].config.hidden_size: ..." -> "profile.config.hidden_size: ...". */
static void tidy_entry_error(char *err, size_t errlen)
{
	static const char dev[] = "devices.json: entry 1 (", mod[] = "models[0]";
	char tmp[512];
	const char *rest = NULL;

	if (!err || errlen == 0)
		return;
	if (strncmp(err, dev, sizeof(dev) - 1) == 0 && (rest = strstr(err, "): ")) != NULL)
		rest += 1;
	else if (strncmp(err, mod, sizeof(mod) - 1) == 0)
		rest = err + sizeof(mod) - 1;
	if (!rest)
		return;
	snprintf(tmp, sizeof(tmp), "profile%s", rest);
	snprintf(err, errlen, "%s", tmp);
}

int api_profile_entry_check(const char *kind, const cJSON *entry, char *err, size_t errlen)
{
	cJSON *doc, *arr;
	int rc;

	if (strcmp(kind, "device") != 0 && strcmp(kind, "model") != 0) {
		snprintf(err, errlen,
			 "tiers are shipped only: the classifier chooses among its own tiers, so a "
			 "custom one could never be used");
		return RF_E_INVALID_VALUE;
	}
	/* A file of one entry, built around references: the entry itself is not copied. */
	doc = cJSON_CreateObject();
	arr = doc ? cJSON_AddArrayToObject(doc,
					   strcmp(kind, "device") == 0 ? "devices" : "models") :
		    NULL;
	if (!arr || !cJSON_AddItemReferenceToArray(arr, (cJSON *)entry)) {
		cJSON_Delete(doc);
		snprintf(err, errlen, "out of memory");
		return RF_E_NOMEM;
	}
	if (strcmp(kind, "device") == 0) {
		struct device_table t = {0};
		rc = api_device_table_from_json(doc, &t, err, errlen);
		if (rc == 0)
			device_table_clear(&t);
	} else {
		struct model_catalog *c = NULL;
		rc = model_catalog_from_json(doc, &c, err, errlen);
		model_catalog_free(c);
	}
	cJSON_Delete(doc);
	if (rc < 0)
		tidy_entry_error(err, errlen);
	return rc;
}

/* Renders one row: {id, kind, source, created_at, updated_at, profile}. Returns a new object
 * or NULL when out of memory. */
static cJSON *profile_json(const struct api_profile *p)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *body = p->body ? cJSON_Parse(p->body) : NULL;

	if (!o || !body || !cJSON_AddStringToObject(o, "id", p->id) ||
	    !cJSON_AddStringToObject(o, "kind", p->kind) ||
	    !cJSON_AddStringToObject(o, "source", p->source) ||
	    !cJSON_AddStringToObject(o, "created_at", p->created_at) ||
	    !cJSON_AddStringToObject(o, "updated_at", p->updated_at)) {
		cJSON_Delete(o);
		cJSON_Delete(body);
		return NULL;
	}
	cJSON_AddItemToObject(o, "profile", body);
	return o;
}

/* Checks what every route here needs: the store, and for the routes with {id} a valid id.
 * Returns 0 or an error envelope in out. */
static int profile_preflight(const struct api_env *env, const struct api_request *req,
			     struct api_reply *out)
{
	if (req->path_id && !api_profile_id_valid(req->path_id))
		return api_error(out, RF_E_INVALID_VALUE, "id",
				 "a profile id is 1 to %d of A-Z a-z 0-9 . _ - and starts with a "
				 "letter or a digit",
				 API_PROFILE_ID_LEN);
	if (!env->store.available || !env->store.profile_list || !env->store.profile_get)
		return api_error(out, RF_E_STORE_UNAVAILABLE, NULL,
				 "profiles live in the database, which is unavailable");
	return 0;
}

/* Reads the optional query parameter name, which must be one of choices, into buf. Returns
 * 0 or a 422 envelope naming it. */
static int query_choice(const struct api_request *req, struct api_reply *out, const char *name,
			const char *const *choices, const char *allowed, char *buf, size_t buflen)
{
	int rc = api_query_get(req->query, name, buf, buflen);

	if (rc == 0) {
		buf[0] = '\0';
		return 0;
	}
	for (int i = 0; rc > 0 && choices[i]; i++)
		if (strcmp(buf, choices[i]) == 0)
			return 0;
	return api_error(out, RF_E_INVALID_VALUE, name, "%s must be %s", name, allowed);
}

int api_profiles_list(const struct api_env *env, const struct api_request *req,
		      struct api_reply *out)
{
	struct api_profile_filter f;
	struct api_profile *rows = NULL;
	uint64_t limit = PROFILES_DEFAULT_LIMIT;
	cJSON *o = NULL, *arr;
	int n = 0, rc;

	memset(&f, 0, sizeof(f));
	if ((rc = query_choice(req, out, "kind", profile_kinds, "device, model or tier", f.kind,
			       sizeof(f.kind))) < 0 ||
	    (rc = query_choice(req, out, "source", profile_sources, "shipped or custom", f.source,
			       sizeof(f.source))) < 0 ||
	    (rc = api_query_uint(req, out, "limit", 1, PROFILES_MAX_LIMIT, &limit)) < 0)
		return rc;
	rc = api_query_get(req->query, "after", f.after, sizeof(f.after));
	if (rc < 0 || (rc > 0 && !api_profile_id_valid(f.after)))
		return api_error(
			out, RF_E_INVALID_VALUE, "after",
			"after must be a profile id (the next_after of the previous page)");
	if ((rc = profile_preflight(env, req, out)) < 0)
		return rc;
	f.limit = (int)limit;
	rc = env->store.profile_list(env->store.ctx, &f, &rows, &n);
	if (rc < 0)
		return api_error(out, rc, NULL, NULL);
	o = cJSON_CreateObject();
	arr = o ? cJSON_AddArrayToObject(o, "profiles") : NULL;
	for (int i = 0; arr && i < n; i++) {
		cJSON *item = profile_json(&rows[i]);
		if (!item) {
			arr = NULL;
			break;
		}
		cJSON_AddItemToArray(arr, item);
	}
	if (!arr ||
	    !(n == (int)limit && n > 0 ? cJSON_AddStringToObject(o, "next_after", rows[n - 1].id) :
					 cJSON_AddNullToObject(o, "next_after"))) {
		cJSON_Delete(o);
		o = NULL;
	}
	api_profiles_free(rows, n);
	return api_reply_cjson(out, 200, o);
}

int api_profile_get(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	struct api_profile p;
	int rc = profile_preflight(env, req, out);

	if (rc < 0)
		return rc;
	rc = env->store.profile_get(env->store.ctx, req->path_id, &p);
	if (rc == RF_E_NOT_FOUND)
		return api_error(out, rc, "id", "no profile %s", req->path_id);
	if (rc < 0)
		return api_error(out, rc, NULL, NULL);
	rc = api_reply_cjson(out, 200, profile_json(&p));
	api_profile_clear(&p);
	return rc;
}

/* The body of a PUT: the shape GET answers. source, created_at and updated_at are the
 * store's: accepted (so a GET can be edited and sent back) and not used. */
struct put_request {
	char id[API_PROFILE_ID_LEN + 1];
	bool has_id;
	int kind;
};

static const struct jm_field put_fields[] = {
	{"id", JM_STRING, offsetof(struct put_request, id), API_PROFILE_ID_LEN + 1, 0, 0, false,
	 offsetof(struct put_request, has_id), NULL},
	{"kind", JM_ENUM, offsetof(struct put_request, kind), 0, 0, 0, true, 0, profile_kinds},
	{"profile", JM_ANY, 0, 0, 0, 0, true, 0, NULL},
	{"source", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	{"created_at", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	{"updated_at", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
};

/* Checks the entry's own id against the path's: a model "org/name" is the profile
 * "org--name". An entry without one takes the path's id. Returns 0 or a 422 envelope. */
static int put_entry_id(const struct api_request *req, cJSON *entry, struct api_reply *out)
{
	const cJSON *eid = cJSON_GetObjectItemCaseSensitive(entry, "id");
	char mapped[API_PROFILE_ID_LEN + 1];

	if (!eid)
		return cJSON_AddStringToObject(entry, "id", req->path_id) ?
			       0 :
			       api_error(out, RF_E_NOMEM, NULL, NULL);
	if (!cJSON_IsString(eid) ||
	    api_profile_id_of(eid->valuestring, mapped, sizeof(mapped)) < 0 ||
	    strcmp(mapped, req->path_id) != 0)
		return api_error(out, RF_E_INVALID_VALUE, "profile.id",
				 "profile.id must name the profile of the path (%s; a model "
				 "\"org/name\" is the profile org--name)",
				 req->path_id);
	return 0;
}

int api_profile_put(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	struct put_request rq;
	struct api_profile p, existing, stored;
	cJSON *body = NULL, *entry;
	const cJSON *source;
	char msg[512];
	bool created = false;
	int rc = profile_preflight(env, req, out);

	memset(&rq, 0, sizeof(rq));
	memset(&p, 0, sizeof(p));
	if (rc < 0)
		return rc;
	if (!env->store.profile_put || !env->profiles.check || !env->profiles.changed)
		return api_error(out, RF_E_UNAVAILABLE, NULL,
				 "custom profiles cannot be changed in this process");
	if ((rc = jm_parse_body(req, false, &body, out)) < 0)
		return rc;
	if ((rc = jm_map(body, put_fields, sizeof(put_fields) / sizeof(put_fields[0]), &rq, out)) <
	    0)
		goto done;
	if (rq.has_id && strcmp(rq.id, req->path_id) != 0) {
		rc = api_error(out, RF_E_INVALID_VALUE, "id", "id must be the path's id (%s)",
			       req->path_id);
		goto done;
	}
	source = cJSON_GetObjectItemCaseSensitive(body, "source");
	if (source && !(cJSON_IsString(source) && strcmp(source->valuestring, "custom") == 0)) {
		rc = api_error(out, RF_E_INVALID_VALUE, "source",
			       "a profile that a client writes is custom");
		goto done;
	}
	/* A shipped id, or a custom one of another kind, is refused before anything else. */
	rc = env->store.profile_get(env->store.ctx, req->path_id, &existing);
	if (rc == 0) {
		bool clash = strcmp(existing.source, "custom") != 0 ||
			     strcmp(existing.kind, profile_kinds[rq.kind]) != 0;
		snprintf(msg, sizeof(msg), "%s is a %s %s profile%s", req->path_id, existing.source,
			 existing.kind,
			 strcmp(existing.source, "custom") != 0 ?
				 ": shipped profiles are read-only" :
				 "; DELETE it first");
		api_profile_clear(&existing);
		if (clash) {
			rc = api_error(out, RF_E_CONFLICT, "id", "%s", msg);
			goto done;
		}
	} else if (rc != RF_E_NOT_FOUND) {
		rc = api_error(out, rc, NULL, NULL);
		goto done;
	}
	entry = cJSON_GetObjectItemCaseSensitive(body, "profile");
	if (!cJSON_IsObject(entry)) {
		rc = api_error(out, RF_E_INVALID_VALUE, "profile", "profile must be an object");
		goto done;
	}
	if ((rc = put_entry_id(req, entry, out)) < 0)
		goto done;
	rc = api_profile_entry_check(profile_kinds[rq.kind], entry, msg, sizeof(msg));
	if (rc < 0) {
		rc = api_error(out, rc == RF_E_NOMEM ? rc : RF_E_INVALID_VALUE,
			       strcmp(profile_kinds[rq.kind], "tier") == 0 ? "kind" : "profile",
			       "%s", msg);
		goto done;
	}
	snprintf(p.id, sizeof(p.id), "%s", req->path_id);
	snprintf(p.kind, sizeof(p.kind), "%s", profile_kinds[rq.kind]);
	snprintf(p.source, sizeof(p.source), "custom");
	p.body = cJSON_PrintUnformatted(entry);
	if (!p.body) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	/* Every name must still lead to one profile once this one joins the others. */
	msg[0] = '\0';
	rc = env->profiles.check(env->profiles.ctx, &p, msg, sizeof(msg));
	if (rc < 0) {
		rc = api_error(out,
			       rc == RF_E_CONFLICT || rc == RF_E_NOMEM ? rc : RF_E_INVALID_VALUE,
			       "profile", "%s", msg[0] ? msg : rf_err_message(rc));
		goto done;
	}
	rc = env->store.profile_put(env->store.ctx, &p, &created);
	if (rc < 0) {
		rc = api_error(out, rc, rc == RF_E_CONFLICT ? "id" : NULL,
			       rc == RF_E_TOO_LARGE ? "the store holds at most its limit of custom "
						      "profiles; DELETE some first" :
						      NULL);
		goto done;
	}
	env->profiles.changed(env->profiles.ctx);
	rc = env->store.profile_get(env->store.ctx, req->path_id, &stored);
	if (rc < 0) {
		rc = api_error(out, rc, NULL, NULL);
		goto done;
	}
	rc = api_reply_cjson(out, created ? 201 : 200, profile_json(&stored));
	api_profile_clear(&stored);
done:
	api_profile_clear(&p);
	cJSON_Delete(body);
	return rc;
}

int api_profile_delete(const struct api_env *env, const struct api_request *req,
		       struct api_reply *out)
{
	int rc = profile_preflight(env, req, out);

	if (rc < 0)
		return rc;
	if (!env->store.profile_delete || !env->profiles.changed)
		return api_error(out, RF_E_UNAVAILABLE, NULL,
				 "custom profiles cannot be changed in this process");
	rc = env->store.profile_delete(env->store.ctx, req->path_id);
	if (rc == RF_E_NOT_FOUND)
		return api_error(out, rc, "id", "no profile %s", req->path_id);
	if (rc == RF_E_CONFLICT)
		return api_error(out, rc, "id", "%s is shipped: shipped profiles are read-only",
				 req->path_id);
	if (rc < 0)
		return api_error(out, rc, NULL, NULL);
	env->profiles.changed(env->profiles.ctx);
	out->status = 204;
	out->content_type = NULL;
	out->len = 0;
	return 0;
}
