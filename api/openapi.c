/*
 * GET /openapi.yaml: the API description, embedded in the binary at build time.
 */
#include "api/api.h"
#include "core/err.h"

int api_openapi(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	(void)req;
	if (!env->openapi)
		return api_error(out, RF_E_NOT_FOUND, NULL, "no API description is embedded");
	api_reply_reset(out);
	out->status = 200;
	out->content_type = "application/yaml";
	out->borrowed_body = env->openapi;
	out->len = env->openapi_len;
	return 0;
}
