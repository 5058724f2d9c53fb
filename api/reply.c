/*
 * Replies and the one error helper: every error any route returns is built here, as
 * {"error":{"code","message","field"?}} with the status of core/err.h's table. Also the small
 * request helpers every handler shares (methods, query parameters).
 */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "api/json_alloc.h"
#include "core/err.h"
#include "core/numparse.h"

static const struct {
	enum api_method m;
	const char *name;
} api_methods[] = {
	{API_GET, "GET"},       {API_POST, "POST"},       {API_PUT, "PUT"},
	{API_DELETE, "DELETE"}, {API_OPTIONS, "OPTIONS"}, {API_HEAD, "HEAD"},
};

enum api_method api_method_parse(const char *name)
{
	for (size_t i = 0; i < sizeof(api_methods) / sizeof(api_methods[0]); i++)
		if (strcmp(name, api_methods[i].name) == 0)
			return api_methods[i].m;
	return 0;
}

const char *api_method_name(enum api_method m)
{
	for (size_t i = 0; i < sizeof(api_methods) / sizeof(api_methods[0]); i++)
		if (api_methods[i].m == m)
			return api_methods[i].name;
	return "?";
}

void api_reply_reset(struct api_reply *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* The envelope of last resort, used when even building the error fails for lack of memory. */
static const char api_nomem_body[] =
	"{\"error\":{\"code\":\"out_of_memory\",\"message\":\"the server is out of memory\"}}";

void api_reply_json(struct api_reply *r, int status, char *json)
{
	api_reply_reset(r);
	r->status = status;
	r->content_type = "application/json";
	/* A body printed by cJSON inside a request's arena is copied out of it. */
	if (json && api_json_arena_owns(json) && !(json = api_json_owned(json))) {
		api_json_note_failed_alloc();
		r->status = rf_err_status(RF_E_NOMEM);
		r->borrowed_body = api_nomem_body;
		r->len = sizeof(api_nomem_body) - 1;
		return;
	}
	r->body = json;
	r->len = json ? strlen(json) : 0;
}

int api_error(struct api_reply *r, int err, const char *field, const char *fmt, ...)
{
	char msg[512];
	cJSON *root = NULL, *e;
	char *json = NULL;

	if (!rf_err_valid(err))
		err = RF_E_INTERNAL;
	if (err == RF_E_NOMEM)
		api_json_note_failed_alloc();
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
	} else {
		snprintf(msg, sizeof(msg), "%s", rf_err_message(err));
	}
	root = cJSON_CreateObject();
	e = root ? cJSON_AddObjectToObject(root, "error") : NULL;
	if (e && cJSON_AddStringToObject(e, "code", rf_err_code(err)) &&
	    cJSON_AddStringToObject(e, "message", msg) &&
	    (!field || cJSON_AddStringToObject(e, "field", field)))
		json = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (json) {
		api_reply_json(r, rf_err_status(err), json);
	} else {
		api_reply_reset(r);
		r->status = rf_err_status(RF_E_NOMEM);
		r->content_type = "application/json";
		r->borrowed_body = api_nomem_body;
		r->len = sizeof(api_nomem_body) - 1;
	}
	return err;
}

int api_error_method(struct api_reply *r, unsigned allowed)
{
	/* Static storage: the reply borrows it. The table is small and fixed. */
	static char allow_cache[64][48];
	char *allow = allow_cache[allowed & 63];
	size_t used = 0;

	allow[0] = '\0';
	for (size_t i = 0; i < sizeof(api_methods) / sizeof(api_methods[0]); i++) {
		if (!(allowed & api_methods[i].m))
			continue;
		used += (size_t)snprintf(allow + used, 48 - used, "%s%s", used ? ", " : "",
					 api_methods[i].name);
		if (used >= 48)
			break;
	}
	api_error(r, RF_E_METHOD_NOT_ALLOWED, NULL, "method not allowed; this path accepts %s",
		  allow);
	r->allow = allow;
	return RF_E_METHOD_NOT_ALLOWED;
}

static int api_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int api_query_get(const char *query, const char *name, char *buf, size_t buflen)
{
	size_t nlen = strlen(name);
	const char *p = query;

	if (buflen == 0)
		return RF_E_INVALID_VALUE;
	buf[0] = '\0';
	while (p && *p) {
		const char *amp = strchr(p, '&');
		const char *end = amp ? amp : p + strlen(p);
		if ((size_t)(end - p) >= nlen && strncmp(p, name, nlen) == 0 &&
		    (p + nlen == end || p[nlen] == '=')) {
			const char *v = p + nlen == end ? end : p + nlen + 1;
			size_t o = 0;
			while (v < end) {
				char c = *v++;
				if (c == '+') {
					c = ' ';
				} else if (c == '%') {
					int hi = end - v >= 2 ? api_hexval(v[0]) : -1;
					int lo = end - v >= 2 ? api_hexval(v[1]) : -1;
					if (hi < 0 || lo < 0)
						goto bad;
					c = (char)(hi * 16 + lo);
					v += 2;
				}
				if (o + 1 >= buflen || c == '\0')
					goto bad;
				buf[o++] = c;
			}
			buf[o] = '\0';
			return 1;
		}
		p = amp ? amp + 1 : NULL;
	}
	return 0;
bad:
	buf[0] = '\0';
	return RF_E_INVALID_VALUE;
}

int api_query_uint(const struct api_request *req, struct api_reply *out, const char *name,
		   uint64_t min, uint64_t max, uint64_t *val)
{
	char buf[32];
	uint64_t v;
	int found = api_query_get(req->query, name, buf, sizeof(buf));

	if (found == 0)
		return 0;
	if (found < 0 || rf_parse_u64_str(buf, max, &v) < 0 || v < min)
		return api_error(out, RF_E_INVALID_VALUE, name,
				 "%s must be an integer from %llu to %llu", name,
				 (unsigned long long)min, (unsigned long long)max);
	*val = v;
	return 1;
}
