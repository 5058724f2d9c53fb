/*
 * The JSON field walker (see jsonmap.h). cJSON accepts some things a strict API must not:
 * bytes after the value, invalid UTF-8 inside strings, NUL bytes. Those are checked here
 * before the tree is used. cJSON's own nesting limit (CJSON_NESTING_LIMIT, 1000) stops deep
 * documents before they can exhaust the stack.
 */
#include "api/jsonmap.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api/json_alloc.h"
#include "core/err.h"
#include "core/suggest.h"

int jm_choice(const char *const *choices, const char *name)
{
	for (int i = 0; choices[i]; i++)
		if (strcmp(choices[i], name) == 0)
			return i;
	return -1;
}

bool jm_utf8_valid(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned c = s[i];
		size_t need;
		uint32_t cp;
		if (c == 0)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		if (len - i <= need)
			return false;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((need == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (need == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return false;
		i += need + 1;
	}
	return true;
}

/* Returns true when the JSON text holds a \u0000 escape. cJSON decodes it into a NUL that
 * silently cuts the C string short ("a.gguf\u0000/../x" would become "a.gguf"), so such a
 * request is refused rather than answered about a different value than the client sent.
 * Backslashes only occur inside strings in valid JSON, and each escape is skipped whole, so an
 * escaped backslash followed by "u0000" is not mistaken for one. */
static bool jm_has_nul_escape(const char *s, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] == 'u' && len - i >= 6 && memcmp(s + i + 2, "0000", 4) == 0)
			return true;
		i++; /* the escaped character */
	}
	return false;
}

int jm_parse_body(const struct api_request *req, bool allow_empty, cJSON **out,
		  struct api_reply *reply)
{
	cJSON *root = NULL;
	int rc = jm_parse_value(req, allow_empty, &root, reply);

	if (rc < 0)
		return rc;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return api_error(reply, RF_E_INVALID_VALUE, NULL,
				 "the request body must be a JSON object");
	}
	*out = root;
	return 0;
}

enum jm_text_fault jm_parse_text(const char *text, size_t len, cJSON **out, size_t *off)
{
	const char *end = NULL;
	unsigned long failed;
	cJSON *root;

	*off = 0;
	if (!jm_utf8_valid(text, len))
		return JM_TEXT_UTF8;
	if (jm_has_nul_escape(text, len))
		return JM_TEXT_NUL_ESCAPE;
	failed = api_json_failed_allocs();
	root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (!root && api_json_failed_allocs() != failed)
		return JM_TEXT_NOMEM;
	if (!root) {
		*off = end && end >= text ? (size_t)(end - text) : 0;
		return JM_TEXT_MALFORMED;
	}
	while (end && end < text + len &&
	       (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n'))
		end++;
	if (end && end < text + len) {
		*off = (size_t)(end - text);
		cJSON_Delete(root);
		return JM_TEXT_TRAILING;
	}
	*out = root;
	return JM_TEXT_OK;
}

int jm_parse_value(const struct api_request *req, bool allow_empty, cJSON **out,
		   struct api_reply *reply)
{
	cJSON *root = NULL;
	size_t off;

	if (!req->body || req->body_len == 0) {
		if (!allow_empty)
			return api_error(reply, RF_E_INVALID_JSON, NULL,
					 "the request needs a JSON body");
		root = cJSON_CreateObject();
		if (!root)
			return api_error(reply, RF_E_NOMEM, NULL, NULL);
		*out = root;
		return 0;
	}
	switch (jm_parse_text(req->body, req->body_len, &root, &off)) {
	case JM_TEXT_OK:
		*out = root;
		return 0;
	case JM_TEXT_NOMEM:
		return api_error(reply, RF_E_NOMEM, NULL, NULL);
	case JM_TEXT_UTF8:
		return api_error(reply, RF_E_INVALID_JSON, NULL,
				 "the request body is not valid UTF-8 (or holds a NUL byte)");
	case JM_TEXT_NUL_ESCAPE:
		return api_error(reply, RF_E_INVALID_VALUE, NULL,
				 "the request body holds a \\u0000 escape; strings may not contain "
				 "NUL characters");
	case JM_TEXT_TRAILING:
		return api_error(reply, RF_E_INVALID_JSON, NULL,
				 "the request body has bytes after its JSON value");
	case JM_TEXT_MALFORMED:
	default:
		return api_error(reply, RF_E_INVALID_JSON, NULL,
				 "the request body is not valid JSON (error near byte %zu)", off);
	}
}

static int jm_one(const cJSON *item, const struct jm_field *f, char *base, struct api_reply *reply)
{
	switch (f->kind) {
	case JM_INT_OR_MAX:
		if (cJSON_IsString(item) && item->valuestring &&
		    strcmp(item->valuestring, "max") == 0) {
			*(int64_t *)(void *)(base + f->offset) = -1;
			return 0;
		}
		if (!cJSON_IsNumber(item))
			return api_error(reply, RF_E_INVALID_VALUE, f->name,
					 "%s must be an integer or \"max\"", f->name);
		/* A number is checked as JM_INT is. */
		/* fall through */
	case JM_INT: {
		double v = item->valuedouble;
		if (!cJSON_IsNumber(item) || !isfinite(v) || floor(v) != v)
			return api_error(reply, RF_E_INVALID_VALUE, f->name,
					 "%s must be an integer", f->name);
		if (v < f->min || v > f->max)
			return api_error(reply, RF_E_INVALID_VALUE, f->name,
					 "%s must be from %.0f to %.0f", f->name, f->min, f->max);
		*(int64_t *)(void *)(base + f->offset) = (int64_t)v;
		return 0;
	}
	case JM_DOUBLE: {
		double v = item->valuedouble;
		if (!cJSON_IsNumber(item) || !isfinite(v))
			return api_error(reply, RF_E_INVALID_VALUE, f->name, "%s must be a number",
					 f->name);
		if (v < f->min || v > f->max)
			return api_error(reply, RF_E_INVALID_VALUE, f->name,
					 "%s must be from %g to %g", f->name, f->min, f->max);
		*(double *)(void *)(base + f->offset) = v;
		return 0;
	}
	case JM_BOOL:
		if (!cJSON_IsBool(item))
			return api_error(reply, RF_E_INVALID_VALUE, f->name,
					 "%s must be true or false", f->name);
		*(bool *)(void *)(base + f->offset) = cJSON_IsTrue(item);
		return 0;
	case JM_ENUM: {
		char allowed[256];
		size_t used = 0, n;
		const char *near;
		int i = cJSON_IsString(item) && item->valuestring && f->choices ?
				jm_choice(f->choices, item->valuestring) :
				-1;
		if (i >= 0) {
			*(int *)(void *)(base + f->offset) = i;
			return 0;
		}
		allowed[0] = '\0';
		for (n = 0; f->choices && f->choices[n]; n++)
			if (used < sizeof(allowed))
				used += (size_t)snprintf(allowed + used, sizeof(allowed) - used,
							 "%s%s", n ? ", " : "", f->choices[n]);
		/* A near miss of one of them is named (a typo of "adamw_8bit"). */
		near = cJSON_IsString(item) && item->valuestring && f->choices ?
			       rf_suggest(item->valuestring, f->choices, n) :
			       NULL;
		if (near)
			return api_error(reply, RF_E_INVALID_VALUE, f->name,
					 "%s must be one of: %s; did you mean '%s'?", f->name,
					 allowed, near);
		return api_error(reply, RF_E_INVALID_VALUE, f->name, "%s must be one of: %s",
				 f->name, allowed);
	}
	case JM_ANY:
		return 0;
	case JM_STRING: {
		size_t n;
		if (!cJSON_IsString(item) || !item->valuestring)
			return api_error(reply, RF_E_INVALID_VALUE, f->name, "%s must be a string",
					 f->name);
		n = strlen(item->valuestring);
		if (n == 0 || n >= f->size)
			return api_error(reply, RF_E_INVALID_VALUE, f->name,
					 "%s must be 1 to %zu bytes long", f->name, f->size - 1);
		memcpy(base + f->offset, item->valuestring, n + 1);
		return 0;
	}
	}
	return api_error(reply, RF_E_INTERNAL, f->name, NULL);
}

int jm_map(const cJSON *obj, const struct jm_field *fields, size_t n_fields, void *dst,
	   struct api_reply *reply)
{
	const cJSON *item;
	char *base = dst;

	cJSON_ArrayForEach(item, obj)
	{
		const struct jm_field *f = NULL;
		int rc;
		for (size_t i = 0; i < n_fields; i++)
			if (item->string && strcmp(item->string, fields[i].name) == 0)
				f = &fields[i];
		if (!f) {
			/* Echo at most a bounded, printable prefix of the unknown name. */
			char name[64];
			size_t k = 0;
			for (const char *p = item->string ? item->string : ""; *p && k < 60; p++)
				name[k++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
			name[k] = '\0';
			return api_error(reply, RF_E_UNKNOWN_FIELD, name, "unknown field '%s'",
					 name);
		}
		rc = jm_one(item, f, base, reply);
		if (rc < 0)
			return rc;
		if (f->set_offset)
			*(bool *)(void *)(base + f->set_offset) = true;
	}
	for (size_t i = 0; i < n_fields; i++)
		if (fields[i].required && !cJSON_GetObjectItemCaseSensitive(obj, fields[i].name))
			return api_error(reply, RF_E_MISSING_FIELD, fields[i].name,
					 "%s is required", fields[i].name);
	return 0;
}
