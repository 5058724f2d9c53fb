/*
 * GET /api/hardware/history?limit=&before=: the stored scan history, newest first, one page at
 * a time (`next_before` is the cursor for the next page). Needs the store: 503 without it.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>

#include "api/api.h"
#include "api/hardware_json.h"
#include "api/json_alloc.h"
#include "core/err.h"

#define HISTORY_DEFAULT_LIMIT 50
#define HISTORY_MAX_LIMIT 1000

int api_hardware_history(const struct api_env *env, const struct api_request *req,
			 struct api_reply *out)
{
	uint64_t limit = HISTORY_DEFAULT_LIMIT, before = 0;
	struct api_scan_row *rows = NULL;
	int n = 0, rc;
	cJSON *o = NULL, *arr;
	char *json = NULL;

	if ((rc = api_query_uint(req, out, "limit", 1, HISTORY_MAX_LIMIT, &limit)) < 0)
		return rc;
	if ((rc = api_query_uint(req, out, "before", 1, INT64_MAX, &before)) < 0)
		return rc;
	if (!env->store.available || !env->store.scan_list)
		return api_error(out, RF_E_STORE_UNAVAILABLE, NULL,
				 "the scan history needs the database, which is unavailable");
	rc = env->store.scan_list(env->store.ctx, (int64_t)before, (int)limit, &rows, &n);
	if (rc < 0)
		return api_error(out, rc, NULL, NULL);

	o = cJSON_CreateObject();
	arr = o ? cJSON_AddArrayToObject(o, "scans") : NULL;
	if (!arr)
		goto oom;
	for (int i = 0; i < n; i++) {
		cJSON *item = cJSON_CreateObject(), *hw;
		char when[40];
		unsigned long failed;
		if (!item)
			goto oom;
		cJSON_AddItemToArray(arr, item);
		api_format_time_ms(rows[i].scanned_at_ms, when, sizeof(when));
		/* A row that does not parse shows as null; a parse without memory fails. */
		failed = api_json_failed_allocs();
		hw = rows[i].hardware_json ? cJSON_Parse(rows[i].hardware_json) : NULL;
		if (!hw && api_json_failed_allocs() != failed)
			goto oom;
		if (!cJSON_AddNumberToObject(item, "id", (double)rows[i].id) ||
		    !cJSON_AddStringToObject(item, "scanned_at", when) ||
		    !cJSON_AddNumberToObject(item, "scan_duration_ms", rows[i].scan_duration_ms)) {
			cJSON_Delete(hw);
			goto oom;
		}
		if (hw) {
			if (!cJSON_AddItemToObject(item, "hardware", hw)) {
				cJSON_Delete(hw);
				goto oom;
			}
		} else if (!cJSON_AddNullToObject(item, "hardware"))
			goto oom;
	}
	if ((n == (int)limit && n > 0 ?
		     cJSON_AddNumberToObject(o, "next_before", (double)rows[n - 1].id) :
		     cJSON_AddNullToObject(o, "next_before")) == NULL)
		goto oom;
	json = cJSON_PrintUnformatted(o);
	if (!json)
		goto oom;
	cJSON_Delete(o);
	api_scan_rows_free(rows, n);
	api_reply_json(out, 200, json);
	return 0;
oom:
	cJSON_Delete(o);
	api_scan_rows_free(rows, n);
	return api_error(out, RF_E_NOMEM, NULL, NULL);
}
