/*
 * GET / and GET /ui/{file}: rigfit's own web page, embedded in the binary at build time
 * (server/ui/). The page is plain HTML, CSS and JavaScript that reads the API with relative
 * URLs, so it works offline and behind a proxy that serves the daemon under a prefix. The page
 * itself is public (it holds no data); its API calls carry the token like any other client.
 */
#include <string.h>

#include "api/api.h"
#include "core/err.h"

/* Returns the content type for a file name by its extension. */
static const char *ui_content_type(const char *name)
{
	const char *dot = strrchr(name, '.');

	if (dot && strcmp(dot, ".html") == 0)
		return "text/html; charset=utf-8";
	if (dot && strcmp(dot, ".js") == 0)
		return "text/javascript; charset=utf-8";
	if (dot && strcmp(dot, ".css") == 0)
		return "text/css; charset=utf-8";
	if (dot && strcmp(dot, ".svg") == 0)
		return "image/svg+xml";
	return "application/octet-stream";
}

/* Answers the embedded file named name (exactly), or a 404 envelope. */
static int ui_file(const struct api_env *env, const char *name, struct api_reply *out)
{
	if (!env->ui)
		return api_error(out, RF_E_NOT_FOUND, NULL,
				 "the web page is turned off (--no-ui); the API is at /api/");
	for (const struct api_asset *a = env->ui; a->name; a++) {
		if (strcmp(a->name, name) != 0)
			continue;
		api_reply_reset(out);
		out->status = 200;
		out->content_type = ui_content_type(a->name);
		out->borrowed_body = a->data;
		out->len = a->len;
		return 0;
	}
	return api_error(out, RF_E_NOT_FOUND, NULL, "no such file of the web page");
}

int api_ui_index(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	(void)req;
	return ui_file(env, "index.html", out);
}

int api_ui_asset(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	/* index.html is served at / only, so that the page has one address. */
	if (!req->path_id || strcmp(req->path_id, "index.html") == 0)
		return api_error(out, RF_E_NOT_FOUND, NULL, "no such file of the web page");
	return ui_file(env, req->path_id, out);
}
