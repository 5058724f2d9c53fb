/*
 * GET /api/hardware: the latest hardware snapshot, exactly the JSON pre-rendered when the
 * scan finished (no work on the request path). 503 until the first scan has finished.
 */
#include "api/api.h"
#include "core/err.h"

int api_hardware_get(const struct api_env *env, const struct api_request *req,
		     struct api_reply *out)
{
	(void)req;
	if (!env->snapshot || !env->snapshot->json)
		return api_error(out, RF_E_UNAVAILABLE, NULL,
				 "the first hardware scan has not finished yet; retry shortly");
	api_reply_reset(out);
	out->status = 200;
	out->content_type = "application/json";
	out->borrowed_body = env->snapshot->json;
	out->len = env->snapshot->json_len;
	return 0;
}
