/*
 * GET /healthz: liveness. Always 200 while the process answers; the body also says whether
 * the store is usable and how old the snapshot is, so a probe can alert on either.
 */
#include <cjson/cJSON.h>

#include "api/api.h"
#include "core/err.h"

int api_health(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *scan = o ? cJSON_AddObjectToObject(o, "scan") : NULL;
	char *json = NULL;

	(void)req;
	if (scan && cJSON_AddStringToObject(o, "status", "ok") &&
	    cJSON_AddStringToObject(o, "version", env->version ? env->version : "") &&
	    cJSON_AddNumberToObject(o, "uptime_s", env->uptime_s) &&
	    cJSON_AddStringToObject(o, "store", env->store.available ? "ok" : "unavailable") &&
	    cJSON_AddNumberToObject(scan, "count",
				    env->snapshot ? (double)env->snapshot->seq : 0) &&
	    (env->snapshot ? cJSON_AddNumberToObject(
				     scan, "age_s",
				     (double)(env->now_ms - env->snapshot->hw.scanned_at_ms) /
					     1000.0) != NULL :
			     cJSON_AddNullToObject(scan, "age_s") != NULL))
		json = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	if (!json)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	api_reply_json(out, 200, json);
	return 0;
}
