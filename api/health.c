/*
 * GET /healthz: liveness. Always 200 while the process answers; the body also says whether
 * the store is usable, its last failure, and how old the snapshot is, so a probe can alert on
 * either.
 *
 * GET /readyz: readiness. 200 with the same body once the store is usable and a scan has
 * finished; 503 with the error envelope naming what is missing (and the store's last failure)
 * until then, so a load balancer sends no traffic to a daemon that would answer 503.
 */
#include <cjson/cJSON.h>
#include <stdio.h>

#include "api/api.h"
#include "core/err.h"

/* Adds the store's last failure ({"message", "age_s"} or null) to o. Returns whether added. */
static bool add_store_error(const struct api_env *env, cJSON *o)
{
	cJSON *e;

	if (!env->store_error)
		return cJSON_AddNullToObject(o, "store_error") != NULL;
	e = cJSON_AddObjectToObject(o, "store_error");
	return e && cJSON_AddStringToObject(e, "message", env->store_error) &&
	       cJSON_AddNumberToObject(e, "age_s",
				       (double)(env->now_ms - env->store_error_ms) / 1000.0);
}

/* Answers 200 with the health body, its status string given. */
static int health_body(const struct api_env *env, const char *status, struct api_reply *out)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *scan = o ? cJSON_AddObjectToObject(o, "scan") : NULL;
	char *json = NULL;

	if (scan && cJSON_AddStringToObject(o, "status", status) &&
	    cJSON_AddStringToObject(o, "version", env->version ? env->version : "") &&
	    cJSON_AddNumberToObject(o, "uptime_s", env->uptime_s) &&
	    cJSON_AddStringToObject(o, "store", env->store.available ? "ok" : "unavailable") &&
	    add_store_error(env, o) &&
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

int api_health(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	(void)req;
	return health_body(env, "ok", out);
}

int api_ready(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	(void)req;
	if (!env->store.available) {
		api_error(out, RF_E_STORE_UNAVAILABLE, NULL,
			  "not ready: the store is unavailable%s%.300s",
			  env->store_error ? ": " : "", env->store_error ? env->store_error : "");
		out->retry_after_s = 2;
		return RF_E_STORE_UNAVAILABLE;
	}
	if (!env->snapshot) {
		api_error(out, RF_E_UNAVAILABLE, NULL,
			  "not ready: no hardware scan has finished yet");
		out->retry_after_s = 1;
		return RF_E_UNAVAILABLE;
	}
	return health_body(env, "ready", out);
}
