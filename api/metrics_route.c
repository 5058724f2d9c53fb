/*
 * GET /metrics: the Prometheus text exposition of api/metrics.c's registry.
 */
#include <stdlib.h>

#include "api/api.h"
#include "api/metrics.h"
#include "core/err.h"

int api_metrics_route(const struct api_env *env, const struct api_request *req,
		      struct api_reply *out)
{
	size_t len = 0;
	char *text = api_metrics_render(env->metrics, env, &len);

	(void)req;
	if (!text)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	api_reply_reset(out);
	out->status = 200;
	out->content_type = "text/plain; version=0.0.4; charset=utf-8";
	out->body = text;
	out->len = len;
	return 0;
}
