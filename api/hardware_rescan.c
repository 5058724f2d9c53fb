/*
 * POST /api/hardware/rescan: scan now and answer with the new snapshot. The optional body
 * {"max_age_s": N} makes it conditional: a snapshot younger than N seconds is returned as it
 * is. The scan itself runs where every scan runs (the worker); this handler only validates and
 * asks the transport for it (api_reply.wait_for_scan), which also enforces the rate limit.
 */
#include <stddef.h>
#include <stdint.h>

#include "api/api.h"
#include "api/jsonmap.h"
#include "core/err.h"

struct rescan_request {
	int64_t max_age_s;
	bool has_max_age;
};

static const struct jm_field rescan_fields[] = {
	{"max_age_s", JM_INT, offsetof(struct rescan_request, max_age_s), 0, 0, 86400, false,
	 offsetof(struct rescan_request, has_max_age), NULL},
};

int api_hardware_rescan(const struct api_env *env, const struct api_request *req,
			struct api_reply *out)
{
	struct rescan_request rq = {0};
	cJSON *body = NULL;
	int rc;

	rc = jm_parse_body(req, true, &body, out);
	if (rc < 0)
		return rc;
	rc = jm_map(body, rescan_fields, sizeof(rescan_fields) / sizeof(rescan_fields[0]), &rq,
		    out);
	cJSON_Delete(body);
	if (rc < 0)
		return rc;
	if (rq.has_max_age && env->snapshot &&
	    env->now_ms - env->snapshot->hw.scanned_at_ms <= rq.max_age_s * 1000)
		return api_hardware_get(env, req, out);
	api_reply_reset(out);
	out->status = 202;
	out->wait_for_scan = true;
	return 0;
}
