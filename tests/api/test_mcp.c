/*
 * MCP without a socket: the JSON-RPC layer (api/mcp.c), the tools (api/mcp_tools.c), the
 * Streamable HTTP handler (api/mcp_http.c) with headers given by a callback, the stdio reader
 * (server/cli/mcp_stdio.c) over memory streams, and the YAML reader that turns the embedded
 * openapi.yaml into the tools' schemas (server/openapi_json.c).
 *
 * The schema test does not trust the code that builds the schemas: it walks the spec itself,
 * follows every $ref on both sides, and requires each tool's input schema to be the spec's
 * with only annotations and the structure below a field dropped (so it accepts whatever the
 * route accepts); tools/list must be one page under a stated size.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "api/finetune_detect.h"
#include "api/hardware_json.h"
#include "api/mcp.h"
#include "api/recommend.h"
#include "api/runtime_config.h"
#include "core/err.h"
#include "core/hw/hw.h"
#include "server/embedded.h"
#include "server/cli/mcp_stdio.h"
#include "server/openapi_json.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

static struct device_table devices;
static struct model_catalog *models;
static cJSON *spec;
static struct api_tier_table *tiers;
static struct api_snapshot snap;
static struct api_env env;

static void setup(void)
{
	char *root = t_path(t_src_dir(), "tests/fixtures/machines/amd-ryzen5-1600-desktop");
	struct hw_snapshot *hw = t_scan(root);

	t_profiles_load(&devices, &models, &tiers);
	spec = rf_openapi_json();
	ck_assert_msg(spec != NULL, "the embedded openapi.yaml does not parse");
	snap.hw = *hw;
	snap.json = api_hardware_render(hw, &snap.json_len);
	ck_assert_ptr_nonnull(snap.json);
	snap.seq = 1;
	free(hw);
	free(root);
	memset(&env, 0, sizeof(env));
	env.version = "test";
	env.cat.devices = &devices;
	env.cat.models = models;
	env.cat.quality = t_quality();
	env.cat.tiers = tiers;
	env.snapshot = &snap;
	env.openapi_tree = spec;
}

static void teardown(void)
{
	free(snap.json);
	memset(&snap, 0, sizeof(snap));
	cJSON_Delete(spec);
	spec = NULL;
	t_profiles_free(&devices, &models, &tiers);
}

/* Sends one message text; returns the parsed reply (NULL when there is none). */
static cJSON *send_msg(struct mcp_session *s, const char *text)
{
	char *reply = NULL;
	cJSON *j;

	ck_assert_int_eq(mcp_handle(&env, s, text, strlen(text), &reply), 0);
	if (!reply)
		return NULL;
	j = cJSON_Parse(reply);
	ck_assert_msg(j != NULL, "reply is not JSON: %s", reply);
	free(reply);
	return j;
}

static void init_session(struct mcp_session *s)
{
	cJSON *r = send_msg(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
			       "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},"
			       "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(r, "result"));
	cJSON_Delete(r);
}

static int error_code(const cJSON *r)
{
	const cJSON *c = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "error"), "code");

	ck_assert_msg(cJSON_IsNumber(c), "no error in the reply");
	return c->valueint;
}

static void expect_error(struct mcp_session *s, const char *text, int code)
{
	cJSON *r = send_msg(s, text);

	ck_assert_msg(r != NULL, "no reply to %s", text);
	ck_assert_msg(error_code(r) == code, "%s: code %d, want %d", text, error_code(r), code);
	cJSON_Delete(r);
}

START_TEST(protocol_faults)
{
	struct mcp_session s = {0};

	expect_error(&s, "{not json", MCP_PARSE_ERROR);
	expect_error(&s, "[]", MCP_INVALID_REQUEST);
	expect_error(&s, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
		     MCP_INVALID_REQUEST);
	expect_error(&s, "42", MCP_INVALID_REQUEST);
	expect_error(&s, "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", MCP_INVALID_REQUEST);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}",
		     MCP_INVALID_REQUEST);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
		     MCP_INVALID_REQUEST);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":1e300,\"method\":\"ping\"}",
		     MCP_INVALID_REQUEST);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":-1e19,\"method\":\"ping\"}",
		     MCP_INVALID_REQUEST);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", MCP_INVALID_REQUEST);
	/* As strict as a REST body: bytes after the JSON, invalid UTF-8 (an id is never echoed
	 * raw: the error's id is null) and a \u0000 escape are refused. */
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}x", MCP_PARSE_ERROR);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}{}", MCP_PARSE_ERROR);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0000b\",\"method\":\"ping\"}",
		     MCP_INVALID_REQUEST);
	{
		static const char *const bad_utf8[] = {
			"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}",
			"{\"jsonrpc\":\"2.0\",\"id\":\"\xc0\xaf\",\"method\":\"ping\"}",
			"{\"jsonrpc\":\"2.0\",\"id\":\"\xed\xa0\x80\",\"method\":\"ping\"}",
			"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":\"\x80\"}}",
		};
		for (size_t i = 0; i < sizeof(bad_utf8) / sizeof(bad_utf8[0]); i++) {
			cJSON *r = send_msg(&s, bad_utf8[i]);
			ck_assert_ptr_nonnull(r);
			ck_assert_int_eq(error_code(r), MCP_PARSE_ERROR);
			ck_assert(cJSON_IsNull(cJSON_GetObjectItem(r, "id")));
			cJSON_Delete(r);
		}
	}
	{
		/* White space after the message is not trailing bytes. */
		cJSON *r =
			send_msg(&s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"} \r\n\t");
		ck_assert_ptr_nonnull(cJSON_GetObjectItem(r, "result"));
		cJSON_Delete(r);
	}
	/* Out of order: tools before initialize. */
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}",
		     MCP_INVALID_REQUEST);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}",
		     MCP_INVALID_PARAMS);
	ck_assert(!s.initialized);
	init_session(&s);
	expect_error(&s,
		     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
		     "{\"protocolVersion\":\"2025-11-25\"}}",
		     MCP_INVALID_REQUEST);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"no/such\"}",
		     MCP_METHOD_NOT_FOUND);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":[]}",
		     MCP_INVALID_PARAMS);
	expect_error(&s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{}}",
		     MCP_INVALID_PARAMS);
	expect_error(&s,
		     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"rm_rf\"}}",
		     MCP_INVALID_PARAMS);
	expect_error(&s,
		     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":"
		     "{\"name\":\"estimate\",\"arguments\":[1]}}",
		     MCP_INVALID_PARAMS);
	expect_error(&s,
		     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/setLevel\","
		     "\"params\":{\"level\":\"loud\"}}",
		     MCP_INVALID_PARAMS);
	expect_error(&s,
		     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\","
		     "\"params\":{\"uri\":\"file:///etc/passwd\"}}",
		     MCP_RESOURCE_NOT_FOUND);
	expect_error(&s,
		     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":"
		     "{\"cursor\":\"99\"}}",
		     MCP_INVALID_PARAMS);
}
END_TEST

START_TEST(lifecycle_and_versions)
{
	struct mcp_session s = {0}, old = {0}, future = {0};
	cJSON *r;

	/* Ping is allowed before initialize; notifications and responses get no reply. */
	r = send_msg(&s, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}");
	ck_assert_int_eq(cJSON_GetObjectItem(r, "id")->valueint, 7);
	ck_assert(cJSON_IsObject(cJSON_GetObjectItem(r, "result")));
	cJSON_Delete(r);
	ck_assert_ptr_null(
		send_msg(&s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
	ck_assert_ptr_null(send_msg(&s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}"));

	r = send_msg(&old, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"initialize\",\"params\":"
			   "{\"protocolVersion\":\"2025-06-18\"}}");
	ck_assert_str_eq(cJSON_GetObjectItem(r, "id")->valuestring, "x");
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "protocolVersion")
				 ->valuestring,
			 "2025-06-18");
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "capabilities"), "tools"));
	cJSON_Delete(r);
	r = send_msg(&future, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
			      "{\"protocolVersion\":\"2099-01-01\"}}");
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "protocolVersion")
				 ->valuestring,
			 MCP_PROTOCOL_LATEST);
	cJSON_Delete(r);
	r = send_msg(&future, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"logging/setLevel\","
			      "\"params\":{\"level\":\"error\"}}");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "result")), 0);
	ck_assert_int_eq(future.log_level, 4);
	cJSON_Delete(r);
}
END_TEST

/* Lists every tool, following nextCursor. Returns a new array of the tools. */
static cJSON *list_tools(struct mcp_session *s, int *pages)
{
	cJSON *all = cJSON_CreateArray();
	char cursor[32] = "";

	*pages = 0;
	for (;;) {
		char msg[160];
		cJSON *r, *res, *t, *next;
		snprintf(msg, sizeof(msg),
			 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"%s%s%s}",
			 cursor[0] ? ",\"params\":{\"cursor\":\"" : "", cursor,
			 cursor[0] ? "\"}" : "");
		r = send_msg(s, msg);
		res = cJSON_GetObjectItem(r, "result");
		ck_assert_msg(res != NULL, "tools/list failed");
		(*pages)++;
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(res, "tools"))
			cJSON_AddItemToArray(all, cJSON_Duplicate(t, true));
		next = cJSON_GetObjectItem(res, "nextCursor");
		if (!next) {
			cJSON_Delete(r);
			break;
		}
		snprintf(cursor, sizeof(cursor), "%s", next->valuestring);
		cJSON_Delete(r);
		ck_assert_int_lt(*pages, 10);
	}
	return all;
}

/* Follows a local $ref ("#/a/b") in root. */
static const cJSON *deref(const cJSON *root, const char *ref)
{
	char buf[256];
	const cJSON *cur = root;

	ck_assert_msg(ref[0] == '#' && ref[1] == '/', "not a local $ref: %s", ref);
	snprintf(buf, sizeof(buf), "%s", ref + 2);
	for (char *tok = buf, *sl; tok; tok = sl ? sl + 1 : NULL) {
		sl = strchr(tok, '/');
		if (sl)
			*sl = '\0';
		cur = cJSON_GetObjectItemCaseSensitive(cur, tok);
		ck_assert_msg(cur != NULL, "dangling $ref %s", ref);
	}
	return cur;
}

static bool annotation(const char *k)
{
	return !strcmp(k, "description") || !strcmp(k, "example") || !strcmp(k, "examples") ||
	       !strcmp(k, "title") || !strcmp(k, "externalDocs") || !strncmp(k, "x-", 2);
}

static bool structure(const char *k)
{
	return !strcmp(k, "properties") || !strcmp(k, "patternProperties") ||
	       !strcmp(k, "additionalProperties") || !strcmp(k, "required") ||
	       !strcmp(k, "propertyNames") || !strcmp(k, "dependentRequired") ||
	       !strcmp(k, "dependentSchemas") || !strcmp(k, "minProperties") ||
	       !strcmp(k, "maxProperties");
}

/* Whether b (in document rb, a tool's schema) is schema a (in ra, openapi.yaml's) compacted
 * as api/mcp_tools.c promises, checked here from the spec itself: every validation keyword of
 * the input (level 0), its arguments and shared definitions (1) and their fields (2) kept
 * exactly, the structure below a field (level >= 2) and every annotation but an argument's
 * description dropped, nothing added. Only constraints go, so b accepts whatever a accepts.
 * Writes the first difference into why. */
static bool compacted(const cJSON *ra, const cJSON *a, const cJSON *rb, const cJSON *b, int level,
		      char *why, size_t len)
{
	const cJSON *ref, *k;

	if (level > 16)
		return true; /* a recursive schema: equal so far */
	if ((ref = cJSON_GetObjectItemCaseSensitive(a, "$ref")) && cJSON_IsString(ref))
		return compacted(ra, deref(ra, ref->valuestring), rb, b, level, why, len);
	/* Shared definitions are compacted as arguments, wherever they are used. */
	if ((ref = cJSON_GetObjectItemCaseSensitive(b, "$ref")) && cJSON_IsString(ref))
		return compacted(ra, a, rb, deref(rb, ref->valuestring), 1, why, len);
	if (cJSON_IsArray(a)) {
		if (!cJSON_IsArray(b) || cJSON_GetArraySize(a) != cJSON_GetArraySize(b)) {
			snprintf(why, len, "a list differs in length");
			return false;
		}
		for (int i = 0; i < cJSON_GetArraySize(a); i++)
			if (!compacted(ra, cJSON_GetArrayItem(a, i), rb, cJSON_GetArrayItem(b, i),
				       level, why, len))
				return false;
		return true;
	}
	if (!cJSON_IsObject(a) || !cJSON_IsObject(b)) {
		snprintf(why, len, "a schema is %s", b ? "of another kind" : "missing");
		return false;
	}
	cJSON_ArrayForEach(k, b)
	{
		if (!strcmp(k->string, "$defs") && level == 0)
			continue;
		if (annotation(k->string) && !(level == 1 && !strcmp(k->string, "description"))) {
			snprintf(why, len, "annotation %s is kept at level %d", k->string, level);
			return false;
		}
		if (!cJSON_GetObjectItemCaseSensitive(a, k->string)) {
			snprintf(why, len, "%s is added", k->string);
			return false;
		}
	}
	cJSON_ArrayForEach(k, a)
	{
		const cJSON *bk = cJSON_GetObjectItemCaseSensitive(b, k->string);
		const cJSON *p;
		if (annotation(k->string))
			continue;
		if (level >= 2 && structure(k->string)) {
			if (bk) {
				snprintf(why, len, "%s is kept at level %d", k->string, level);
				return false;
			}
			continue;
		}
		if (!bk) {
			snprintf(why, len, "%s is dropped at level %d", k->string, level);
			return false;
		}
		if (!strcmp(k->string, "properties") || !strcmp(k->string, "patternProperties")) {
			if (cJSON_GetArraySize(k) != cJSON_GetArraySize(bk)) {
				snprintf(why, len, "the properties differ");
				return false;
			}
			cJSON_ArrayForEach(p, k)
			{
				if (!compacted(ra, p, rb,
					       cJSON_GetObjectItemCaseSensitive(bk, p->string),
					       level + 1, why, len)) {
					size_t n = strlen(why);
					snprintf(why + n, len - n, " (in %s)", p->string);
					return false;
				}
			}
		} else if (!strcmp(k->string, "additionalProperties") && cJSON_IsObject(k)) {
			if (!compacted(ra, k, rb, bk, level + 1, why, len))
				return false;
		} else if (!strcmp(k->string, "enum") || !strcmp(k->string, "const") ||
			   !strcmp(k->string, "type") || !strcmp(k->string, "default") ||
			   !strcmp(k->string, "required") ||
			   !(cJSON_IsObject(k) || cJSON_IsArray(k))) {
			if (!cJSON_Compare(k, bk, true)) {
				snprintf(why, len, "%s differs", k->string);
				return false;
			}
		} else if (!compacted(ra, k, rb, bk, level, why, len)) {
			return false;
		}
	}
	return true;
}

/* The spec's operation for method and path (as the tool table names them). */
static const cJSON *spec_op(const char *path, enum api_method m)
{
	const cJSON *item =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItem(spec, "paths"), path);
	const char *name = m == API_GET ? "get" : "post";

	ck_assert_msg(item != NULL, "openapi.yaml has no path %s", path);
	return cJSON_GetObjectItemCaseSensitive(item, name);
}

/* The JSON schema of op's a (a/b when b is not NULL): requestBody or responses/200. */
static const cJSON *op_schema(const cJSON *op, const char *a, const char *b)
{
	const cJSON *o = cJSON_GetObjectItem(op, a);

	if (b)
		o = cJSON_GetObjectItem(o, b);
	o = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "content"), "application/json");
	return cJSON_GetObjectItem(o, "schema");
}

/* A tool without a request body takes its operation's path and query parameters: each is a
 * property of inputSchema with the parameter's schema, and there is no other. */
static void check_param_schemas(const struct mcp_tool *t, const cJSON *in)
{
	const cJSON *item =
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItem(spec, "paths"), t->path);
	const cJSON *lists[2] = {cJSON_GetObjectItem(item, "parameters"),
				 cJSON_GetObjectItem(spec_op(t->path, t->method), "parameters")};
	const cJSON *props = cJSON_GetObjectItem(in, "properties"), *p;
	char why[256] = "";
	int n = 0;

	for (int l = 0; l < 2; l++) {
		cJSON_ArrayForEach(p, lists[l])
		{
			const char *name = cJSON_GetObjectItem(p, "name")->valuestring;
			const cJSON *mine = cJSON_GetObjectItemCaseSensitive(props, name);
			cJSON *want = cJSON_Duplicate(cJSON_GetObjectItem(p, "schema"), true);
			const cJSON *desc = cJSON_GetObjectItem(p, "description");
			if (strcmp(cJSON_GetObjectItem(p, "in")->valuestring, "header") == 0) {
				cJSON_Delete(want);
				continue;
			}
			n++;
			/* A referenced schema is the tool's top level; the parameter's description
			 * is carried into it. */
			if (cJSON_GetObjectItem(want, "$ref")) {
				cJSON *r = cJSON_Duplicate(
					deref(spec, cJSON_GetObjectItem(want, "$ref")->valuestring),
					true);
				cJSON_Delete(want);
				want = r;
			}
			if (desc && !cJSON_GetObjectItem(want, "description"))
				cJSON_AddStringToObject(want, "description", desc->valuestring);
			ck_assert_msg(mine != NULL, "%s: no argument %s", t->name, name);
			ck_assert_msg(compacted(spec, want, in, mine, 1, why, sizeof(why)),
				      "%s: argument %s is not openapi.yaml's compacted: %s",
				      t->name, name, why);
			cJSON_Delete(want);
		}
	}
	ck_assert_int_eq(cJSON_GetArraySize(props), n);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(in, "additionalProperties")));
}

/* The JSON of a tool description's example: the text after "Example: " up to its end. */
static cJSON *description_example(const char *desc)
{
	const char *at = strstr(desc, "Example: ");
	const char *end;

	if (!at)
		return NULL;
	at += strlen("Example: ");
	end = strrchr(at, '}');
	return end ? cJSON_ParseWithLength(at, (size_t)(end - at + 1)) : NULL;
}

/* Whether value v has JSON Schema type name t. */
static bool has_type(const cJSON *v, const char *t)
{
	return (!strcmp(t, "object") && cJSON_IsObject(v)) ||
	       (!strcmp(t, "array") && cJSON_IsArray(v)) ||
	       (!strcmp(t, "string") && cJSON_IsString(v)) ||
	       (!strcmp(t, "boolean") && cJSON_IsBool(v)) ||
	       (!strcmp(t, "null") && cJSON_IsNull(v)) ||
	       (!strcmp(t, "number") && cJSON_IsNumber(v)) ||
	       (!strcmp(t, "integer") && cJSON_IsNumber(v) &&
		v->valuedouble == (double)(long long)v->valuedouble);
}

/* Whether v is valid under s (in root): type, enum, properties, required,
 * additionalProperties, oneOf and $ref, the keywords the tools' input schemas use at the top;
 * deeper keywords are the routes' own checks, which tools_answer_as_the_routes covers. */
static bool valid_under(const cJSON *root, const cJSON *s, const cJSON *v, int depth)
{
	const cJSON *k, *p;

	if (depth > 16)
		return true;
	if ((k = cJSON_GetObjectItem(s, "$ref")))
		return valid_under(root, deref(root, k->valuestring), v, depth + 1);
	if ((k = cJSON_GetObjectItem(s, "type"))) {
		bool ok = false;
		if (cJSON_IsString(k))
			ok = has_type(v, k->valuestring);
		cJSON_ArrayForEach(p, k) ok = ok || has_type(v, p->valuestring);
		if (!ok)
			return false;
	}
	if ((k = cJSON_GetObjectItem(s, "enum"))) {
		bool ok = false;
		cJSON_ArrayForEach(p, k) ok = ok || cJSON_Compare(p, v, true);
		if (!ok)
			return false;
	}
	if ((k = cJSON_GetObjectItem(s, "oneOf"))) {
		int n = 0;
		cJSON_ArrayForEach(p, k) n += valid_under(root, p, v, depth + 1);
		if (n != 1)
			return false;
	}
	if (!cJSON_IsObject(v))
		return true;
	cJSON_ArrayForEach(
		p,
		cJSON_GetObjectItem(
			s, "required")) if (!cJSON_GetObjectItem(v, p->valuestring)) return false;
	cJSON_ArrayForEach(p, v)
	{
		const cJSON *ps = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItem(s, "properties"), p->string);
		if (ps ? !valid_under(root, ps, p, depth + 1) :
			 cJSON_IsFalse(cJSON_GetObjectItem(s, "additionalProperties")))
			return false;
	}
	return true;
}

/* The budget of a tools/list answer: every tool, in one page. */
#define TOOLS_LIST_BUDGET_BYTES (24 * 1024)

START_TEST(tools_list_is_one_small_page)
{
	struct mcp_session s = {0};
	size_t n;
	const struct mcp_tool *tools = mcp_tools(&n);
	const char msg[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}";
	char *reply = NULL;
	cJSON *r, *list;

	init_session(&s);
	ck_assert_int_eq(mcp_handle(&env, &s, msg, strlen(msg), &reply), 0);
	ck_assert_ptr_nonnull(reply);
	ck_assert_msg(strlen(reply) < TOOLS_LIST_BUDGET_BYTES, "tools/list is %zu bytes, over %d",
		      strlen(reply), TOOLS_LIST_BUDGET_BYTES);
	r = cJSON_Parse(reply);
	free(reply);
	list = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "tools");
	ck_assert_int_eq(cJSON_GetArraySize(list), (int)n);
	ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "nextCursor"));
	/* Each tool's description shows arguments its schema accepts; the check itself can
	 * fail (an argument the schema does not know). */
	for (size_t i = 0; i < n; i++) {
		const cJSON *t = cJSON_GetArrayItem(list, (int)i);
		const cJSON *in = cJSON_GetObjectItem(t, "inputSchema");
		cJSON *ex = description_example(cJSON_GetObjectItem(t, "description")->valuestring);
		ck_assert_msg(ex != NULL, "%s: no example in its description", tools[i].name);
		ck_assert_msg(valid_under(in, in, ex, 0), "%s: its example breaks inputSchema",
			      tools[i].name);
		cJSON_AddNumberToObject(ex, "no_such_argument", 1);
		if (cJSON_IsFalse(cJSON_GetObjectItem(in, "additionalProperties")))
			ck_assert_msg(!valid_under(in, in, ex, 0), "%s: an unknown argument passes",
				      tools[i].name);
		cJSON_Delete(ex);
	}
	cJSON_Delete(r);
}
END_TEST

START_TEST(tools_schemas_agree_with_openapi)
{
	struct mcp_session s = {0};
	size_t n;
	const struct mcp_tool *tools = mcp_tools(&n);
	int pages;
	cJSON *list;
	char why[256] = "";

	init_session(&s);
	list = list_tools(&s, &pages);
	ck_assert_int_eq(cJSON_GetArraySize(list), (int)n);
	ck_assert_int_eq(pages, 1);
	ck_assert_int_ge((int)n, 7);
	for (size_t i = 0; i < n; i++) {
		const cJSON *t = cJSON_GetArrayItem(list, (int)i);
		const cJSON *op = spec_op(tools[i].path, tools[i].method);
		const cJSON *in = cJSON_GetObjectItem(t, "inputSchema");
		const cJSON *out = cJSON_GetObjectItem(t, "outputSchema");
		const cJSON *ok = op_schema(op, "responses", "200");
		const cJSON *body = op_schema(op, "requestBody", NULL);
		const cJSON *ref = cJSON_GetObjectItem(ok, "$ref");

		ck_assert_str_eq(cJSON_GetObjectItem(t, "name")->valuestring, tools[i].name);
		ck_assert_msg(strlen(cJSON_GetObjectItem(t, "description")->valuestring) > 20,
			      "%s: no description", tools[i].name);
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "annotations"),
							   "readOnlyHint")));
		ck_assert_str_eq(cJSON_GetObjectItem(in, "type")->valuestring, "object");
		ck_assert_msg(ok != NULL, "%s: the spec has no 200 schema", tools[i].name);
		/* The answer's top level: an object with the fields it always has. */
		if (ref)
			ok = deref(spec, ref->valuestring);
		ck_assert_str_eq(cJSON_GetObjectItem(out, "type")->valuestring, "object");
		ck_assert_msg(cJSON_Compare(cJSON_GetObjectItem(ok, "required"),
					    cJSON_GetObjectItem(out, "required"), true) ||
				      (!cJSON_GetObjectItem(ok, "required") &&
				       !cJSON_GetObjectItem(out, "required")),
			      "%s: outputSchema's required fields differ", tools[i].name);
		ck_assert_int_eq(cJSON_GetArraySize(out),
				 1 + (cJSON_GetObjectItem(out, "required") != NULL));
		if (body)
			ck_assert_msg(compacted(spec, body, in, in, 0, why, sizeof(why)),
				      "%s: inputSchema is not openapi.yaml's compacted: %s",
				      tools[i].name, why);
		else
			check_param_schemas(&tools[i], in);
		/* No reference may point outside the tool's own schema. */
		{
			char *text = cJSON_PrintUnformatted(t);
			ck_assert_msg(strstr(text, "#/components/") == NULL,
				      "%s: a $ref into components is left", tools[i].name);
			free(text);
		}
	}
	/* The check itself can fail: a schema that differs is seen. */
	{
		cJSON *in = cJSON_Duplicate(
			cJSON_GetObjectItem(cJSON_GetArrayItem(list, 1), "inputSchema"), true);
		const cJSON *body =
			op_schema(spec_op(tools[1].path, tools[1].method), "requestBody", NULL);
		ck_assert(compacted(spec, body, in, in, 0, why, sizeof(why)));
		cJSON_AddStringToObject(cJSON_GetObjectItem(in, "properties"), "extra", "x");
		ck_assert(!compacted(spec, body, in, in, 0, why, sizeof(why)));
		cJSON_DeleteItemFromObject(cJSON_GetObjectItem(in, "properties"), "extra");
		cJSON_DeleteItemFromObject(in, "additionalProperties");
		ck_assert(!compacted(spec, body, in, in, 0, why, sizeof(why)));
		cJSON_Delete(in);
	}
	cJSON_Delete(list);
}
END_TEST

/* The text of content block i of a tool result. */
static const char *content_text(const cJSON *res, int i)
{
	const cJSON *b = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "content"), i);
	const cJSON *t = cJSON_GetObjectItem(b, "text");

	ck_assert_msg(cJSON_IsString(t), "no text block %d", i);
	ck_assert_str_eq(cJSON_GetObjectItem(b, "type")->valuestring, "text");
	return t->valuestring;
}

/* Calls tool name with args (JSON text); returns the result object. */
static cJSON *call_tool(struct mcp_session *s, const char *name, const char *args)
{
	size_t len = strlen(args) + 200;
	char *msg = malloc(len);
	cJSON *r, *res;

	snprintf(msg, len,
		 "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"%s\",\"arguments\":%s}}",
		 name, args);
	r = send_msg(s, msg);
	free(msg);
	res = cJSON_DetachItemFromObject(r, "result");
	ck_assert_msg(res != NULL, "tools/call %s: no result", name);
	cJSON_Delete(r);
	return res;
}

/* The route's answer for body, printed. */
static char *route_answer(api_handler_fn h, const char *path, enum api_method m, const char *body,
			  int *status)
{
	struct api_request req = {.method = m,
				  .path = path,
				  .query = "",
				  .body = body,
				  .body_len = body ? strlen(body) : 0};
	struct api_reply r = {0};
	char *text;

	h(&env, &req, &r);
	*status = r.status;
	text = strndup(r.body ? r.body : r.borrowed_body, r.len);
	api_reply_reset(&r);
	return text;
}

START_TEST(tools_answer_as_the_routes)
{
	static const struct {
		const char *tool;
		api_handler_fn h;
		const char *path;
		const char *args;
	} cases[] = {
		{"estimate", api_estimate, "/api/estimate",
		 "{\"model\":{\"id\":\"llama-3.1-8b\"},\"quant\":\"Q4_K_M\",\"n_ctx\":8192,"
		 "\"hardware_profile\":\"rtx-4090\"}"},
		{"write_runtime_config", api_config, "/api/config",
		 "{\"model\":{\"id\":\"qwen2.5-7b\"},\"hardware_profile\":\"rtx-4090\"}"},
		{"recommend_models", api_recommend, "/api/recommend",
		 "{\"hardware_profile\":\"rtx-4090\"}"},
		{"plan_finetuning", api_finetune_detect, "/api/finetune/detect",
		 "{\"task\":\"text-generation\",\"hardware_profile\":\"rtx-4090\"}"},
		{"detect_hardware", api_hardware_get, "/api/hardware", NULL},
	};
	struct mcp_session s = {0};

	init_session(&s);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int status;
		char *want = route_answer(cases[i].h, cases[i].path,
					  cases[i].args ? API_POST : API_GET, cases[i].args,
					  &status);
		cJSON *res = call_tool(&s, cases[i].tool, cases[i].args ? cases[i].args : "{}");
		const cJSON *sc = cJSON_GetObjectItem(res, "structuredContent");
		cJSON *wantj = cJSON_Parse(want);

		ck_assert_msg(status == 200, "%s: the route answered %d: %s", cases[i].tool, status,
			      want);
		ck_assert_msg(cJSON_IsFalse(cJSON_GetObjectItem(res, "isError")), "%s failed",
			      cases[i].tool);
		ck_assert_msg(cJSON_Compare(sc, wantj, true),
			      "%s: structuredContent is not the route's answer", cases[i].tool);
		ck_assert_str_eq(content_text(res, 1), want);
		/* The sentence says something of the answer, not a placeholder. */
		ck_assert_msg(strlen(content_text(res, 0)) > 20, "%s: no sentence", cases[i].tool);
		cJSON_Delete(wantj);
		cJSON_Delete(res);
		free(want);
	}
}
END_TEST

START_TEST(get_tools_pass_their_query)
{
	struct mcp_session s = {0};
	struct api_request req = {
		.method = API_GET, .path = "/api/models", .query = "source=catalog"};
	struct api_reply want = {0};
	cJSON *res, *wantj;

	init_session(&s);
	api_models_list(&env, &req, &want);
	ck_assert_int_eq(want.status, 200);
	wantj = cJSON_Parse(want.body);
	res = call_tool(&s, "list_models", "{\"source\":\"catalog\"}");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(res, "isError")));
	ck_assert(cJSON_Compare(cJSON_GetObjectItem(res, "structuredContent"), wantj, true));
	ck_assert_ptr_nonnull(strstr(content_text(res, 0), "in the catalog"));
	cJSON_Delete(res);
	cJSON_Delete(wantj);
	api_reply_reset(&want);
	/* The route refuses a value that is not one of the enum, naming the parameter. */
	res = call_tool(&s, "list_models", "{\"source\":\"nowhere\"}");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")));
	ck_assert_ptr_nonnull(strstr(content_text(res, 0), "\"field\":\"source\""));
	cJSON_Delete(res);
}
END_TEST

START_TEST(tool_sentences_quote_the_answer)
{
	struct mcp_session s = {0};
	cJSON *res;
	const char *text;

	init_session(&s);
	res = call_tool(&s, "estimate",
			"{\"model\":{\"id\":\"llama-3.1-8b\"},\"quant\":\"Q4_K_M\",\"n_ctx\":8192,"
			"\"hardware_profile\":\"rtx-4090\"}");
	text = content_text(res, 0);
	ck_assert_msg(strstr(text, "Q4_K_M") && strstr(text, "8192") && strstr(text, "fits") &&
			      strstr(text, "tok/s"),
		      "sentence: %s", text);
	cJSON_Delete(res);
}
END_TEST

START_TEST(bad_arguments_are_tool_errors)
{
	static const struct {
		const char *tool, *args, *code, *field;
	} cases[] = {
		{"estimate", "{\"model\":{\"id\":\"llama-3.1-8b\"},\"n_ctx\":-3}", "invalid_value",
		 "n_ctx"},
		{"estimate", "{\"model\":{\"id\":\"llama-3.1-8b\"},\"colour\":1}", "unknown_field",
		 "colour"},
		{"estimate", "{}", "missing_field", "model"},
		{"detect_hardware", "{\"x\":1}", "unknown_field", "x"},
		{"lookup_model", "{}", "missing_field", "id"},
		{"lookup_model", "{\"id\":\"a\",\"b\":2}", "unknown_field", "b"},
		{"list_models", "{\"colour\":\"red\"}", "unknown_field", "colour"},
		{"list_models", "{\"source\":[1]}", "invalid_value", "source"},
		{"list_models", "{\"source\":\"every&where\"}", "invalid_value", "source"},
	};
	struct mcp_session s = {0};

	init_session(&s);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *res = call_tool(&s, cases[i].tool, cases[i].args);
		const char *text = content_text(res, 0);
		cJSON *env_ = cJSON_Parse(text);
		const cJSON *e = cJSON_GetObjectItem(env_, "error");

		ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(res, "isError")), "%s %s: no error",
			      cases[i].tool, cases[i].args);
		ck_assert_ptr_null(cJSON_GetObjectItem(res, "structuredContent"));
		ck_assert_msg(e != NULL, "not an error envelope: %s", text);
		ck_assert_str_eq(cJSON_GetObjectItem(e, "code")->valuestring, cases[i].code);
		ck_assert_str_eq(cJSON_GetObjectItem(e, "field")->valuestring, cases[i].field);
		cJSON_Delete(env_);
		cJSON_Delete(res);
	}
}
END_TEST

/* Reads the resource uri; returns the whole reply (free it) and its first content in *c. */
static cJSON *read_resource(struct mcp_session *s, const char *uri, cJSON **c)
{
	char msg[256];
	cJSON *r;

	snprintf(msg, sizeof(msg),
		 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":"
		 "{\"uri\":\"%s\"}}",
		 uri);
	r = send_msg(s, msg);
	*c = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "contents"),
				0);
	ck_assert_msg(*c != NULL, "no contents for %s", uri);
	return r;
}

START_TEST(resources)
{
	struct mcp_session s = {0};
	cJSON *r, *c;

	init_session(&s);
	r = send_msg(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"),
								"resources")),
			 2);
	cJSON_Delete(r);
	r = read_resource(&s, "rigfit://hardware", &c);
	ck_assert_str_eq(cJSON_GetObjectItem(c, "text")->valuestring, snap.json);
	ck_assert_str_eq(cJSON_GetObjectItem(c, "mimeType")->valuestring, "application/json");
	cJSON_Delete(r);
	r = read_resource(&s, "rigfit://models", &c);
	{
		/* The catalog as GET /api/models?source=catalog answers it. */
		struct api_request req = {
			.method = API_GET, .path = "/api/models", .query = "source=catalog"};
		struct api_reply want = {0};
		cJSON *doc = cJSON_Parse(cJSON_GetObjectItem(c, "text")->valuestring);
		api_models_list(&env, &req, &want);
		ck_assert_int_eq(want.status, 200);
		ck_assert_str_eq(cJSON_GetObjectItem(c, "text")->valuestring, want.body);
		ck_assert_int_ge(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "models")),
				 (int)models->n);
		api_reply_reset(&want);
		cJSON_Delete(doc);
	}
	cJSON_Delete(r);
	/* Before the first scan the hardware resource is an error, not an empty text. */
	env.snapshot = NULL;
	expect_error(&s,
		     "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\","
		     "\"params\":{\"uri\":\"rigfit://hardware\"}}",
		     MCP_INTERNAL_ERROR);
	env.snapshot = &snap;
}
END_TEST

/* The conformance suite's fixture resources exist only with --mcp-conformance-fixtures, and
 * then are listed and read through the same table as rigfit's own. */
START_TEST(conformance_fixture_resources)
{
	static const char read_text[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
					"\"resources/read\",\"params\":{\"uri\":"
					"\"test://static-text\"}}";
	struct mcp_session s = {0};
	cJSON *r, *list, *c;

	init_session(&s);
	expect_error(&s, read_text, MCP_RESOURCE_NOT_FOUND);
	env.mcp_fixtures = true;
	r = send_msg(&s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}");
	list = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "result"), "resources");
	ck_assert_int_eq(cJSON_GetArraySize(list), 4);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 0), "uri")->valuestring,
			 "rigfit://hardware");
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(list, 2), "uri")->valuestring,
			 "test://static-text");
	cJSON_Delete(r);
	r = read_resource(&s, "test://static-text", &c);
	ck_assert_str_eq(cJSON_GetObjectItem(c, "uri")->valuestring, "test://static-text");
	ck_assert_str_eq(cJSON_GetObjectItem(c, "mimeType")->valuestring, "text/plain");
	ck_assert_str_eq(cJSON_GetObjectItem(c, "text")->valuestring,
			 "This is the content of the static text resource.");
	cJSON_Delete(r);
	r = read_resource(&s, "test://static-binary", &c);
	ck_assert_str_eq(cJSON_GetObjectItem(c, "mimeType")->valuestring, "image/png");
	ck_assert_ptr_null(cJSON_GetObjectItem(c, "text"));
	/* base64 of a PNG: its signature \x89PNG encodes as iVBORw0KGgo. */
	ck_assert_int_eq(strncmp(cJSON_GetObjectItem(c, "blob")->valuestring, "iVBORw0KGgo", 11),
			 0);
	cJSON_Delete(r);
	/* rigfit's own resources are unchanged beside them. */
	r = read_resource(&s, "rigfit://hardware", &c);
	ck_assert_str_eq(cJSON_GetObjectItem(c, "text")->valuestring, snap.json);
	cJSON_Delete(r);
	env.mcp_fixtures = false;
}
END_TEST

/* --- HTTP ---------------------------------------------------------------------------------- */

struct hdrs {
	const char *names[6];
	const char *values[6];
};

static const char *hdr_get(void *ctx, const char *name)
{
	struct hdrs *h = ctx;

	for (int i = 0; i < 6 && h->names[i]; i++)
		if (strcasecmp(h->names[i], name) == 0)
			return h->values[i];
	return NULL;
}

static int fake_random(void *buf, size_t n)
{
	static unsigned char next = 1;

	for (size_t i = 0; i < n; i++)
		((unsigned char *)buf)[i] = next++;
	return 0;
}

/* Random bytes that never repeat an id (fake_random's repeat every 16 ids). */
static int counter_random(void *buf, size_t n)
{
	static uint64_t next = 1;

	memset(buf, 0, n);
	memcpy(buf, &next, n < sizeof(next) ? n : sizeof(next));
	next++;
	return 0;
}

/* Sends a message to POST (or DELETE) /mcp from the client address client. */
static int post_from(const char *client, struct hdrs *h, enum api_method m, const char *body,
		     struct api_reply *out)
{
	struct api_request req = {.method = m,
				  .path = "/mcp",
				  .query = "",
				  .body = body,
				  .body_len = body ? strlen(body) : 0,
				  .header = hdr_get,
				  .header_ctx = h};

	snprintf(req.client, sizeof(req.client), "%s", client);
	api_reply_reset(out);
	api_mcp(&env, &req, out);
	return out->status;
}

static int post(struct hdrs *h, enum api_method m, const char *body, struct api_reply *out)
{
	return post_from("127.0.0.1", h, m, body, out);
}

static const char init_msg[] =
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	"\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";

START_TEST(http_transport)
{
	const char *origins[] = {"https://app.example"};
	struct mcp_http *h = mcp_http_new(true, origins, 1, fake_random);
	struct hdrs evil = {{"Host", "Origin"}, {"evil.example.com", "http://evil.example.com"}};
	struct hdrs evil_origin = {{"Host", "Origin"},
				   {"127.0.0.1:8080", "http://evil.example.com"}};
	struct hdrs evil_host = {{"Host"}, {"evil.example.com:8080"}};
	struct hdrs good = {{"Host", "Origin"}, {"localhost:8080", "http://localhost:8080"}};
	struct hdrs cors = {{"Host", "Origin"}, {"[::1]:8080", "https://app.example"}};
	struct hdrs sess = {{"Host", "Mcp-Session-Id", "MCP-Protocol-Version"},
			    {"127.0.0.1:1", NULL, "2025-11-25"}};
	struct hdrs badver = {{"Host", "MCP-Protocol-Version"}, {"127.0.0.1", "1999-01-01"}};
	struct api_reply out = {0};
	char id[64];

	env.mcp = h;
	ck_assert_int_eq(post(&evil, API_POST, init_msg, &out), 403);
	ck_assert_int_eq(post(&evil_origin, API_POST, init_msg, &out), 403);
	ck_assert_int_eq(post(&evil_host, API_POST, init_msg, &out), 403);
	ck_assert_int_eq(post(&badver, API_POST, init_msg, &out), 400);
	ck_assert_uint_eq(mcp_http_sessions(h), 0);
	ck_assert_int_eq(post(&cors, API_POST, init_msg, &out), 200);
	ck_assert_int_eq(post(&good, API_POST, init_msg, &out), 200);
	ck_assert_uint_eq(strlen(out.mcp_session), 32);
	snprintf(id, sizeof(id), "%s", out.mcp_session);
	ck_assert_uint_eq(mcp_http_sessions(h), 2);

	/* Without the session id, with an unknown one, then with the right one. */
	ck_assert_int_eq(post(&sess, API_POST, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
			      &out),
			 400);
	sess.values[1] = "0123456789abcdef0123456789abcdef";
	ck_assert_int_eq(post(&sess, API_POST, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
			      &out),
			 404);
	sess.values[1] = id;
	ck_assert_int_eq(post(&sess, API_POST,
			      "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
			      &out),
			 202);
	ck_assert_ptr_null(out.body);
	ck_assert_int_eq(post(&sess, API_POST,
			      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}", &out),
			 200);
	ck_assert_ptr_nonnull(strstr(out.body, "\"tools\""));
	ck_assert_int_eq(post(&sess, API_POST, "{\"jsonrpc\":", &out), 400);
	ck_assert_ptr_nonnull(strstr(out.body, "-32700"));
	ck_assert_int_eq(post(&sess, API_POST, "[]", &out), 400);
	ck_assert_ptr_nonnull(strstr(out.body, "-32600"));
	/* The body is checked as a REST body is: trailing bytes and invalid UTF-8 are a 400
	 * parse error, whose reply holds none of the client's bytes. */
	ck_assert_int_eq(post(&sess, API_POST,
			      "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}junk", &out),
			 400);
	ck_assert_ptr_nonnull(strstr(out.body, "-32700"));
	ck_assert_ptr_nonnull(strstr(out.body, "\"id\":null"));
	ck_assert_int_eq(post(&sess, API_POST,
			      "{\"jsonrpc\":\"2.0\",\"id\":\"\xfe\xff\",\"method\":\"ping\"}",
			      &out),
			 400);
	ck_assert_ptr_nonnull(strstr(out.body, "-32700"));
	ck_assert_ptr_null(strstr(out.body, "\xfe"));
	ck_assert_int_eq(post(&sess, API_DELETE, NULL, &out), 204);
	ck_assert_int_eq(post(&sess, API_DELETE, NULL, &out), 404);
	ck_assert_int_eq(post(&sess, API_POST, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
			      &out),
			 404);
	ck_assert_uint_eq(mcp_http_sessions(h), 1);

	/* The table is bounded: many initializes keep it at its cap. */
	for (int i = 0; i < 300; i++)
		ck_assert_int_eq(post(&good, API_POST, init_msg, &out), 200);
	ck_assert_uint_le(mcp_http_sessions(h), 256);
	api_reply_reset(&out);
	env.mcp = NULL;
	mcp_http_free(h);
	mcp_http_free(NULL);
}
END_TEST

/* Opens a session for client; returns the HTTP status and the id in id (on 200). */
static int open_for(const char *client, char *id, size_t idlen, struct api_reply *out)
{
	struct hdrs good = {{"Host"}, {"127.0.0.1:8080"}};
	int st = post_from(client, &good, API_POST, init_msg, out);

	if (st == 200)
		snprintf(id, idlen, "%s", out->mcp_session);
	return st;
}

/* Whether session id still answers a ping. */
static bool session_alive(const char *id, struct api_reply *out)
{
	struct hdrs sess = {{"Host", "Mcp-Session-Id"}, {"127.0.0.1:8080", id}};

	return post(&sess, API_POST, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", out) ==
	       200;
}

/* An initialize flood from one client (address) replaces only its own sessions; when the
 * table is full of other clients' live sessions a new client gets a 503 with Retry-After
 * rather than a place taken from someone else; a session idle for half an hour may be
 * taken. */
START_TEST(http_sessions_per_client)
{
	struct mcp_http *h = mcp_http_new(true, NULL, 0, counter_random);
	struct api_reply out = {0};
	char victim[64], first_flood[64], id[64], client[48];
	int st;

	env.mcp = h;
	env.now_ms = 1000000;
	ck_assert_int_eq(open_for("127.0.0.2", victim, sizeof(victim), &out), 200);
	ck_assert_int_eq(open_for("127.0.0.1", first_flood, sizeof(first_flood), &out), 200);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(open_for("127.0.0.1", id, sizeof(id), &out), 200);
	ck_assert_msg(session_alive(victim, &out), "a flood from another client dropped it");
	ck_assert_msg(!session_alive(first_flood, &out), "the flooder kept all its sessions");
	ck_assert_uint_le(mcp_http_sessions(h), 1 + 32);

	/* Fill the table with live sessions of many clients, 32 each. */
	for (int c = 0; mcp_http_sessions(h) < 256; c++) {
		snprintf(client, sizeof(client), "10.0.0.%d", c);
		for (int k = 0; k < 32 && mcp_http_sessions(h) < 256; k++)
			ck_assert_int_eq(open_for(client, id, sizeof(id), &out), 200);
	}
	st = open_for("192.0.2.1", id, sizeof(id), &out);
	ck_assert_int_eq(st, 503);
	ck_assert_int_gt(out.retry_after_s, 0);
	ck_assert_ptr_nonnull(strstr(out.body, "-32000"));
	ck_assert_uint_eq(mcp_http_sessions(h), 256);
	ck_assert(session_alive(victim, &out));
	/* A client already at its cap still opens sessions, in place of its own. */
	ck_assert_int_eq(open_for("10.0.0.0", id, sizeof(id), &out), 200);
	/* Half an hour later the idle sessions may be taken; the victim, used now, stays. */
	env.now_ms += 30 * 60 * 1000;
	ck_assert(session_alive(victim, &out));
	ck_assert_int_eq(open_for("192.0.2.1", id, sizeof(id), &out), 200);
	ck_assert(session_alive(id, &out));
	ck_assert(session_alive(victim, &out));
	api_reply_reset(&out);
	env.now_ms = 0;
	env.mcp = NULL;
	mcp_http_free(h);
}
END_TEST

START_TEST(http_not_loopback_skips_host)
{
	struct mcp_http *h = mcp_http_new(false, NULL, 0, fake_random);
	struct hdrs any = {{"Host"}, {"gpu-box.lan:8080"}};
	struct hdrs evil = {{"Host", "Origin"}, {"gpu-box.lan:8080", "http://evil.example.com"}};
	struct api_reply out = {0};

	env.mcp = h;
	ck_assert_int_eq(post(&any, API_POST, init_msg, &out), 200);
	ck_assert_int_eq(post(&evil, API_POST, init_msg, &out), 403);
	api_reply_reset(&out);
	env.mcp = NULL;
	mcp_http_free(h);
}
END_TEST

/* --- stdio --------------------------------------------------------------------------------- */

/* Runs the stdio loop over input; returns its output (malloc'd) and status in *rc. */
static char *stdio_run(const char *input, size_t len, int *rc)
{
	FILE *in = fmemopen((void *)input, len, "r");
	char *outbuf = NULL;
	size_t outlen = 0;
	FILE *out = open_memstream(&outbuf, &outlen);

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	*rc = rf_mcp_stdio_serve(&env, in, out);
	fclose(in);
	fclose(out);
	return outbuf;
}

START_TEST(stdio_lines)
{
	const char input[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
			     "{\"protocolVersion\":\"2025-06-18\"}}\r\n"
			     "\n"
			     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
			     "{oops\n"
			     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}";
	int rc, lines = 0;
	char *out = stdio_run(input, sizeof(input) - 1, &rc);

	ck_assert_int_eq(rc, 0);
	for (char *p = out; *p; p++)
		lines += *p == '\n';
	ck_assert_msg(lines == 3, "three replies expected: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "\"protocolVersion\":\"2025-06-18\""));
	ck_assert_ptr_nonnull(strstr(out, "-32700"));
	ck_assert_ptr_nonnull(strstr(out, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n"));
	free(out);
}
END_TEST

/* A line with bytes after its JSON or with invalid UTF-8 gets a -32700 with a null id, and the
 * reader goes on with the next line. */
START_TEST(stdio_strict_lines)
{
	const char input[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing\n"
			     "{\"jsonrpc\":\"2.0\",\"id\":\"\xc3\x28\",\"method\":\"ping\"}\n"
			     "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n";
	int rc, parse_errors = 0;
	char *out = stdio_run(input, sizeof(input) - 1, &rc);

	ck_assert_int_eq(rc, 0);
	for (const char *p = out; (p = strstr(p, "\"id\":null,\"error\":{\"code\":-32700")); p++)
		parse_errors++;
	ck_assert_msg(parse_errors == 2, "two parse errors expected: %s", out);
	ck_assert_ptr_null(strstr(out, "\xc3\x28"));
	ck_assert_ptr_nonnull(strstr(out, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n"));
	free(out);
}
END_TEST

START_TEST(stdio_oversized_line)
{
	size_t big = MCP_MAX_MESSAGE_BYTES + 100;
	const char tail[] = "\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n";
	char *input = malloc(big + sizeof(tail));
	int rc;
	char *out;

	memset(input, 'x', big);
	memcpy(input + big, tail, sizeof(tail));
	out = stdio_run(input, big + sizeof(tail) - 1, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_ptr_nonnull(strstr(out, "larger than 1 MiB"));
	ck_assert_ptr_nonnull(strstr(out, "\"id\":5,\"result\":{}"));
	free(out);
	free(input);
}
END_TEST

/* --- YAML ---------------------------------------------------------------------------------- */

START_TEST(yaml_subset)
{
	const char doc[] = "a: 1\nb: [x, 'y', 2.5, true, null, -3]\nc:\n  d: |\n    text\n"
			   "  '200': {e: ~}\nf: 127.0.0.1\n";
	char err[128];
	cJSON *j = rf_yaml_to_json(doc, sizeof(doc) - 1, err, sizeof(err));
	char *text;

	ck_assert_msg(j != NULL, "%s", err);
	text = cJSON_PrintUnformatted(j);
	ck_assert_str_eq(text,
			 "{\"a\":1,\"b\":[\"x\",\"y\",2.5,true,null,-3],\"c\":{\"d\":\"text\\n\","
			 "\"200\":{\"e\":null}},\"f\":\"127.0.0.1\"}");
	free(text);
	cJSON_Delete(j);
	ck_assert_ptr_null(rf_yaml_to_json("a: &x [1]\nb: *x\n", 16, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "alias"));
	ck_assert_ptr_null(rf_yaml_to_json("a: [1\n", 6, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "line"));
}
END_TEST

Suite *api_mcp_suite(void)
{
	Suite *s = suite_create("api_mcp");
	TCase *tc = tcase_create("mcp");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, protocol_faults);
	tcase_add_test(tc, lifecycle_and_versions);
	tcase_add_test(tc, tools_schemas_agree_with_openapi);
	tcase_add_test(tc, tools_list_is_one_small_page);
	tcase_add_test(tc, tools_answer_as_the_routes);
	tcase_add_test(tc, get_tools_pass_their_query);
	tcase_add_test(tc, tool_sentences_quote_the_answer);
	tcase_add_test(tc, bad_arguments_are_tool_errors);
	tcase_add_test(tc, resources);
	tcase_add_test(tc, conformance_fixture_resources);
	tcase_add_test(tc, http_transport);
	tcase_add_test(tc, http_sessions_per_client);
	tcase_add_test(tc, http_not_loopback_skips_host);
	tcase_add_test(tc, stdio_lines);
	tcase_add_test(tc, stdio_strict_lines);
	tcase_add_test(tc, stdio_oversized_line);
	tcase_add_test(tc, yaml_subset);
	suite_add_tcase(s, tc);
	return s;
}
