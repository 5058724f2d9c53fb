/*
 * The route table: every route rigfit serves, in one place. The HTTP glue and the tests use
 * it; tests/api/test_openapi.c checks that openapi.yaml lists exactly these routes.
 */
#include <string.h>

#include "api/api.h"
#include "api/benchmarks.h"
#include "api/finetune_detect.h"
#include "api/finetune_session.h"
#include "api/json_alloc.h"
#include "api/mcp.h"
#include "api/recommend.h"
#include "api/validate.h"
#include "api/runtime_config.h"
#include "core/err.h"

static const struct api_route api_route_table[] = {
	{API_GET, "/healthz", api_health, API_ROUTE_PUBLIC},
	{API_GET, "/readyz", api_ready, API_ROUTE_PUBLIC},
	{API_GET, "/openapi.yaml", api_openapi, API_ROUTE_PUBLIC},
	{API_GET, "/", api_ui_index, API_ROUTE_PUBLIC},
	{API_GET, "/ui/{id}", api_ui_asset, API_ROUTE_PUBLIC | API_ROUTE_HAS_ID},
	{API_GET, "/metrics", api_metrics_route, 0},
	{API_GET, "/api/hardware", api_hardware_get, 0},
	{API_POST, "/api/hardware/rescan", api_hardware_rescan, API_ROUTE_JSON_BODY},
	{API_GET, "/api/hardware/history", api_hardware_history, 0},
	{API_POST, "/api/estimate", api_estimate, API_ROUTE_JSON_BODY | API_ROUTE_HUB_LOOKUP},
	{API_POST, "/api/finetune/detect", api_finetune_session_detect, API_ROUTE_JSON_BODY},
	{API_POST, "/api/finetune/set_model", api_finetune_set_model, API_ROUTE_JSON_BODY},
	{API_POST, "/api/finetune/validate_custom_model", api_finetune_validate_custom_model,
	 API_ROUTE_JSON_BODY | API_ROUTE_HUB_LOOKUP},
	{API_POST, "/api/finetune/set_custom_model", api_finetune_set_custom_model,
	 API_ROUTE_JSON_BODY | API_ROUTE_HUB_LOOKUP},
	{API_GET, "/api/finetune/session", api_finetune_session_get, 0},
	{API_GET, "/api/finetune/load_settings", api_finetune_load_settings, 0},
	{API_GET, "/api/info", api_info, 0},
	{API_POST, "/api/recommend", api_recommend, API_ROUTE_JSON_BODY | API_ROUTE_HUB_LOOKUP},
	{API_POST, "/api/validate", api_validate, API_ROUTE_JSON_BODY | API_ROUTE_HUB_LOOKUP},
	{API_POST, "/api/config", api_config, API_ROUTE_JSON_BODY | API_ROUTE_HUB_LOOKUP},
	{API_GET, "/api/models", api_models_list, 0},
	{API_GET, "/api/profiles", api_profiles_list, 0},
	{API_GET, "/api/profiles/{id}", api_profile_get, API_ROUTE_HAS_ID},
	{API_PUT, "/api/profiles/{id}", api_profile_put,
	 API_ROUTE_HAS_ID | API_ROUTE_JSON_BODY | API_ROUTE_STORE_WRITE},
	{API_DELETE, "/api/profiles/{id}", api_profile_delete,
	 API_ROUTE_HAS_ID | API_ROUTE_STORE_WRITE},
	{API_POST, "/api/benchmarks", api_benchmarks_post,
	 API_ROUTE_JSON_BODY | API_ROUTE_STORE_WRITE},
	{API_GET, "/api/benchmarks", api_benchmarks_list, 0},
	{API_GET, "/api/benchmarks/{id}", api_benchmarks_get, API_ROUTE_HAS_ID},
	{API_DELETE, "/api/benchmarks/{id}", api_benchmarks_delete,
	 API_ROUTE_HAS_ID | API_ROUTE_STORE_WRITE},
	{API_POST, "/mcp", api_mcp, API_ROUTE_JSON_BODY | API_ROUTE_HUB_LOOKUP},
	{API_DELETE, "/mcp", api_mcp, 0},
};

const struct api_route *api_routes(size_t *n)
{
	*n = sizeof(api_route_table) / sizeof(api_route_table[0]);
	return api_route_table;
}

/* Matches path against a pattern that may end in "/{id}"; writes the id segment. */
static bool api_path_match(const char *pattern, const char *path, const char **id, size_t *id_len)
{
	const char *brace = strstr(pattern, "/{");
	size_t prefix;
	const char *seg;

	if (!brace)
		return strcmp(pattern, path) == 0;
	prefix = (size_t)(brace - pattern) + 1; /* include the '/' */
	if (strncmp(pattern, path, prefix) != 0)
		return false;
	seg = path + prefix;
	if (*seg == '\0' || strchr(seg, '/'))
		return false;
	*id = seg;
	*id_len = strlen(seg);
	return true;
}

const struct api_route *api_route_find(enum api_method method, const char *path, unsigned *allowed,
				       const char **id, size_t *id_len)
{
	const struct api_route *found = NULL;
	size_t n;
	const struct api_route *t = api_routes(&n);

	*allowed = 0;
	*id = NULL;
	*id_len = 0;
	for (size_t i = 0; i < n; i++) {
		const char *seg = NULL;
		size_t seg_len = 0;
		if (!api_path_match(t[i].path, path, &seg, &seg_len))
			continue;
		*allowed |= (unsigned)t[i].method;
		/* HEAD is answered by every GET route, as HTTP requires. */
		if (t[i].method == API_GET)
			*allowed |= API_HEAD;
		if (!found &&
		    (t[i].method == method || (method == API_HEAD && t[i].method == API_GET))) {
			found = &t[i];
			*id = seg;
			*id_len = seg_len;
		}
	}
	return found;
}

const struct api_route *api_dispatch(const struct api_env *env, struct api_request *req,
				     struct api_reply *out)
{
	unsigned allowed;
	const char *id;
	size_t id_len;
	unsigned long failed;
	const struct api_route *r = api_route_find(req->method, req->path, &allowed, &id, &id_len);

	if (!r) {
		if (allowed)
			api_error_method(out, allowed);
		else
			api_error(out, RF_E_NOT_FOUND, NULL, "no route for %s", req->path);
		return NULL;
	}
	req->path_id = id;
	failed = api_json_failed_allocs();
	r->handler(env, req, out);
	/* Handlers add members without checking each cJSON call: a reply built while cJSON
	 * could not allocate may lack some, so it is not sent (SQLite's mallocFailed idea). */
	if (api_json_failed_allocs() != failed)
		api_error(out, RF_E_NOMEM, NULL, NULL);
	else if (out->status == 0)
		api_error(out, RF_E_INTERNAL, NULL, "the handler produced no reply");
	return r;
}
