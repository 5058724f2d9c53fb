/*
 * The JSON-RPC 2.0 layer of MCP: message validation, the lifecycle (initialize, then the rest),
 * and the methods rigfit offers: ping, tools/list (every tool in one page of MCP_TOOLS_PAGE;
 * a cursor past it), tools/call, resources/list and resources/read (the hardware snapshot and the model catalog),
 * resources/templates/list and logging/setLevel. Protocol faults are JSON-RPC errors; a tool
 * that refuses its arguments is a tool result with isError (api/mcp_tools.c).
 */
#include "api/mcp.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_alloc.h"
#include "api/json_print.h"
#include "api/jsonmap.h"
#include "core/err.h"

/* tools/list answers this many tools a page (every tool rigfit has: their compact schemas
 * fit one answer); a next page would be asked for with nextCursor. */
#define MCP_TOOLS_PAGE 32

static const char *const mcp_versions[] = {MCP_PROTOCOL_LATEST, MCP_PROTOCOL_PREVIOUS};

/* RFC 5424 severities as MCP names them, least severe first. */
static const char *const mcp_log_levels[] = {"debug", "info",     "notice", "warning",
					     "error", "critical", "alert",  "emergency"};

static cJSON *rpc_envelope(const cJSON *id)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "jsonrpc", "2.0");
	api_json_add(o, "id", id ? cJSON_Duplicate(id, true) : cJSON_CreateNull());
	return o;
}

/* Prints and frees o into *reply. */
static int rpc_finish(cJSON *o, char **reply)
{
	*reply = o ? api_json_print(o) : NULL;
	cJSON_Delete(o);
	return *reply ? 0 : RF_E_NOMEM;
}

static int rpc_error(const cJSON *id, int code, const char *message, cJSON *data, char **reply)
{
	cJSON *o = rpc_envelope(id);
	cJSON *e = cJSON_CreateObject();

	cJSON_AddNumberToObject(e, "code", code);
	cJSON_AddStringToObject(e, "message", message);
	if (data)
		api_json_add(e, "data", data);
	api_json_add(o, "error", e);
	return rpc_finish(o, reply);
}

static int rpc_result(const cJSON *id, cJSON *result, char **reply)
{
	cJSON *o = rpc_envelope(id);

	if (!result) {
		cJSON_Delete(o);
		*reply = NULL;
		return RF_E_NOMEM;
	}
	api_json_add(o, "result", result);
	return rpc_finish(o, reply);
}

char *mcp_error_text(int code, const char *message)
{
	char *reply = NULL;

	rpc_error(NULL, code, message, NULL, &reply);
	return reply;
}

/* An id is a string or an integer; numbers beyond 2^53 cannot be told apart, so they are not
 * ids (and converting them to an integer type would be undefined). */
static bool valid_id(const cJSON *id)
{
	return cJSON_IsString(id) ||
	       (cJSON_IsNumber(id) && fabs(id->valuedouble) <= 9007199254740992.0 &&
		id->valuedouble == floor(id->valuedouble));
}

enum mcp_kind mcp_message_kind(const void *msg_)
{
	const cJSON *msg = msg_;
	const cJSON *v, *m, *id;

	if (!cJSON_IsObject(msg))
		return MCP_KIND_INVALID;
	v = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
	if (!cJSON_IsString(v) || strcmp(v->valuestring, "2.0") != 0)
		return MCP_KIND_INVALID;
	m = cJSON_GetObjectItemCaseSensitive(msg, "method");
	id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	if (!m) {
		if (valid_id(id) && (cJSON_GetObjectItemCaseSensitive(msg, "result") ||
				     cJSON_GetObjectItemCaseSensitive(msg, "error")))
			return MCP_KIND_RESPONSE;
		return MCP_KIND_INVALID;
	}
	if (!cJSON_IsString(m))
		return MCP_KIND_INVALID;
	if (!id)
		return MCP_KIND_NOTIFICATION;
	if (!valid_id(id))
		return MCP_KIND_INVALID;
	return strcmp(m->valuestring, "initialize") == 0 ? MCP_KIND_INITIALIZE : MCP_KIND_REQUEST;
}

static cJSON *initialize_result(const struct api_env *env, const char *version)
{
	cJSON *r = cJSON_CreateObject();
	cJSON *caps = cJSON_CreateObject();
	cJSON *info = cJSON_CreateObject();

	cJSON_AddStringToObject(r, "protocolVersion", version);
	cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "tools"), "listChanged", false);
	cJSON_AddBoolToObject(cJSON_AddObjectToObject(caps, "resources"), "listChanged", false);
	cJSON_AddObjectToObject(caps, "logging");
	api_json_add(r, "capabilities", caps);
	cJSON_AddStringToObject(info, "name", "rigfit");
	cJSON_AddStringToObject(info, "title", "rigfit: which LLMs fit this machine");
	cJSON_AddStringToObject(info, "version", env->version ? env->version : "0");
	api_json_add(r, "serverInfo", info);
	cJSON_AddStringToObject(
		r, "instructions",
		"rigfit answers whether an LLM fits a machine and how to set it up. Call "
		"detect_hardware first to see this host, estimate for one model and settings, "
		"recommend_models to find models that fit, write_runtime_config for a llama.cpp "
		"command, validate_config to check one, plan_finetuning for a fine-tuning plan "
		"and lookup_model for a catalog entry. Every tool takes the JSON body of its "
		"REST route and returns the route's answer.");
	return r;
}

static int do_initialize(const struct api_env *env, struct mcp_session *s, const cJSON *id,
			 const cJSON *params, char **reply)
{
	const cJSON *pv = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
	const char *version = MCP_PROTOCOL_LATEST;

	if (s->initialized)
		return rpc_error(id, MCP_INVALID_REQUEST, "the session is already initialized",
				 NULL, reply);
	if (!cJSON_IsString(pv))
		return rpc_error(id, MCP_INVALID_PARAMS,
				 "initialize needs params.protocolVersion (a string)", NULL, reply);
	for (size_t i = 0; i < sizeof(mcp_versions) / sizeof(mcp_versions[0]); i++)
		if (strcmp(pv->valuestring, mcp_versions[i]) == 0)
			version = mcp_versions[i];
	snprintf(s->version, sizeof(s->version), "%s", version);
	s->initialized = true;
	if (s->log_level == 0)
		s->log_level = 1; /* info */
	return rpc_result(id, initialize_result(env, version), reply);
}

static int do_tools_list(const struct api_env *env, const cJSON *id, const cJSON *params,
			 char **reply)
{
	const cJSON *cursor = cJSON_GetObjectItemCaseSensitive(params, "cursor");
	size_t n, start = 0;
	const struct mcp_tool *tools = mcp_tools(&n);
	cJSON *result, *list;
	char err[256];

	if (cursor) {
		char *end;
		unsigned long v;
		if (!cJSON_IsString(cursor) || !cursor->valuestring[0] ||
		    strlen(cursor->valuestring) > 4)
			return rpc_error(id, MCP_INVALID_PARAMS,
					 "the cursor is not one rigfit gave", NULL, reply);
		v = strtoul(cursor->valuestring, &end, 10);
		if (*end || v == 0 || v >= n)
			return rpc_error(id, MCP_INVALID_PARAMS,
					 "the cursor is not one rigfit gave", NULL, reply);
		start = (size_t)v;
	}
	if (!env->openapi_tree)
		return rpc_error(id, MCP_INTERNAL_ERROR, "the tool schemas are not available", NULL,
				 reply);
	result = cJSON_CreateObject();
	list = cJSON_AddArrayToObject(result, "tools");
	for (size_t i = start; i < n && i < start + MCP_TOOLS_PAGE; i++) {
		cJSON *t = mcp_tool_describe(&tools[i], env->openapi_tree, err, sizeof(err));
		if (!t) {
			cJSON_Delete(result);
			return rpc_error(id, MCP_INTERNAL_ERROR, err, NULL, reply);
		}
		api_json_append(list, t);
	}
	if (start + MCP_TOOLS_PAGE < n) {
		char next[24];
		snprintf(next, sizeof(next), "%zu", start + MCP_TOOLS_PAGE);
		cJSON_AddStringToObject(result, "nextCursor", next);
	}
	return rpc_result(id, result, reply);
}

static int do_tools_call(const struct api_env *env, const cJSON *id, const cJSON *params,
			 char **reply)
{
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
	const struct mcp_tool *t;
	char msg[160];

	if (!cJSON_IsString(name))
		return rpc_error(id, MCP_INVALID_PARAMS, "tools/call needs params.name (a string)",
				 NULL, reply);
	t = mcp_tool_find(name->valuestring);
	if (!t) {
		snprintf(msg, sizeof(msg), "unknown tool '%.100s' (see tools/list)",
			 name->valuestring);
		return rpc_error(id, MCP_INVALID_PARAMS, msg, NULL, reply);
	}
	if (args && !cJSON_IsObject(args) && !cJSON_IsNull(args))
		return rpc_error(id, MCP_INVALID_PARAMS, "params.arguments must be an object", NULL,
				 reply);
	return rpc_result(id, mcp_tool_call(env, t, cJSON_IsObject(args) ? args : NULL), reply);
}

/* The resources. rigfit's own are each the answer of a GET route, read through api_dispatch
 * as the tools are, so that it is what the REST client sees. With --mcp-conformance-fixtures
 * (env->mcp_fixtures) the table also holds the fixture resources that the official
 * conformance suite reads, with the fixed contents it expects: listed and read like every
 * other entry, for testing MCP clients against rigfit. */
struct mcp_resource;

/* Fills content (an entry of resources/read's contents) with what the resource holds.
 * Returns 0, or -1 when it cannot be read now: *why then holds the error's data (or NULL). */
typedef int (*mcp_resource_read_fn)(const struct api_env *env, const struct mcp_resource *r,
				    cJSON *content, cJSON **why);

struct mcp_resource {
	const char *uri, *name, *title, *description, *mime;
	mcp_resource_read_fn read;
	const char *path, *query; /* read_route: the GET route and its query */
	const char *key, *value;  /* read_fixed: "text" or "blob", and its contents */
};

/* The answer of the resource's GET route, as text. */
static int read_route(const struct api_env *env, const struct mcp_resource *r, cJSON *content,
		      cJSON **why)
{
	struct api_request req = {.method = API_GET, .path = r->path, .query = r->query};
	struct api_reply out = {0};
	const char *text;

	api_dispatch(env, &req, &out);
	text = out.body ? out.body : out.borrowed_body;
	if (out.status != 200 || !text) {
		/* The route's error envelope says why (no scan yet, no catalog). */
		*why = text ? cJSON_ParseWithLength(text, out.len) : NULL;
		api_reply_reset(&out);
		return -1;
	}
	api_json_add(content, "text", cJSON_CreateString(text));
	api_reply_reset(&out);
	return 0;
}

/* Fixed contents, held in the table. */
static int read_fixed(const struct api_env *env, const struct mcp_resource *r, cJSON *content,
		      cJSON **why)
{
	(void)env;
	(void)why;
	api_json_add(content, r->key, cJSON_CreateString(r->value));
	return 0;
}

static const struct mcp_resource mcp_resources[] = {
	{"rigfit://hardware", "hardware", "This machine",
	 "The latest hardware scan of the host rigfit runs on: the JSON of GET /api/hardware.",
	 "application/json", read_route, "/api/hardware", "", NULL, NULL},
	{"rigfit://models", "models", "Model catalog",
	 "The models rigfit knows, with their parameter counts: the JSON of GET "
	 "/api/models?source=catalog.",
	 "application/json", read_route, "/api/models", "source=catalog", NULL, NULL},
};

/* The conformance suite's fixture resources (@modelcontextprotocol/conformance, scenarios
 * resources-read-text and resources-read-binary); the binary one is a 1x1 PNG. */
static const struct mcp_resource mcp_fixture_resources[] = {
	{"test://static-text", "static-text", "Conformance fixture: static text",
	 "A fixed text resource of the MCP conformance suite (--mcp-conformance-fixtures).",
	 "text/plain", read_fixed, NULL, NULL, "text",
	 "This is the content of the static text resource."},
	{"test://static-binary", "static-binary", "Conformance fixture: static binary",
	 "A fixed binary resource of the MCP conformance suite (--mcp-conformance-fixtures).",
	 "image/png", read_fixed, NULL, NULL, "blob",
	 "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5"
	 "ErkJggg=="},
};

#define MCP_N_RESOURCES (sizeof(mcp_resources) / sizeof(mcp_resources[0]))
#define MCP_N_FIXTURES (sizeof(mcp_fixture_resources) / sizeof(mcp_fixture_resources[0]))

/* The i-th resource this server offers, or NULL past the end. */
static const struct mcp_resource *mcp_resource_at(const struct api_env *env, size_t i)
{
	if (i < MCP_N_RESOURCES)
		return &mcp_resources[i];
	i -= MCP_N_RESOURCES;
	return env->mcp_fixtures && i < MCP_N_FIXTURES ? &mcp_fixture_resources[i] : NULL;
}

static int do_resources_list(const struct api_env *env, const cJSON *id, char **reply)
{
	cJSON *result = cJSON_CreateObject();
	cJSON *list = cJSON_AddArrayToObject(result, "resources");
	const struct mcp_resource *r;

	for (size_t i = 0; (r = mcp_resource_at(env, i)); i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "uri", r->uri);
		cJSON_AddStringToObject(e, "name", r->name);
		cJSON_AddStringToObject(e, "title", r->title);
		cJSON_AddStringToObject(e, "description", r->description);
		cJSON_AddStringToObject(e, "mimeType", r->mime);
		api_json_append(list, e);
	}
	return rpc_result(id, result, reply);
}

static int do_resources_read(const struct api_env *env, const cJSON *id, const cJSON *params,
			     char **reply)
{
	const cJSON *uri = cJSON_GetObjectItemCaseSensitive(params, "uri");
	const struct mcp_resource *res = NULL, *r;
	cJSON *result, *c, *why = NULL;

	if (!cJSON_IsString(uri))
		return rpc_error(id, MCP_INVALID_PARAMS,
				 "resources/read needs params.uri (a string)", NULL, reply);
	for (size_t i = 0; !res && (r = mcp_resource_at(env, i)); i++)
		if (strcmp(uri->valuestring, r->uri) == 0)
			res = r;
	if (!res) {
		cJSON *data = cJSON_CreateObject();
		cJSON_AddStringToObject(data, "uri", uri->valuestring);
		return rpc_error(id, MCP_RESOURCE_NOT_FOUND, "Resource not found", data, reply);
	}
	c = cJSON_CreateObject();
	cJSON_AddStringToObject(c, "uri", res->uri);
	cJSON_AddStringToObject(c, "mimeType", res->mime);
	if (res->read(env, res, c, &why) < 0) {
		cJSON_Delete(c);
		return rpc_error(id, MCP_INTERNAL_ERROR, "the resource is not available now", why,
				 reply);
	}
	result = cJSON_CreateObject();
	api_json_append(cJSON_AddArrayToObject(result, "contents"), c);
	return rpc_result(id, result, reply);
}

static int do_set_level(struct mcp_session *s, const cJSON *id, const cJSON *params, char **reply)
{
	const cJSON *level = cJSON_GetObjectItemCaseSensitive(params, "level");

	for (size_t i = 0;
	     cJSON_IsString(level) && i < sizeof(mcp_log_levels) / sizeof(mcp_log_levels[0]); i++) {
		if (strcmp(level->valuestring, mcp_log_levels[i]) == 0) {
			s->log_level = (int)i;
			return rpc_result(id, cJSON_CreateObject(), reply);
		}
	}
	return rpc_error(id, MCP_INVALID_PARAMS,
			 "params.level must be one of debug, info, notice, warning, error, "
			 "critical, alert, emergency",
			 NULL, reply);
}

int mcp_handle_json(const struct api_env *env, struct mcp_session *s, const void *msg_,
		    char **reply)
{
	const cJSON *msg = msg_;
	enum mcp_kind kind = mcp_message_kind(msg);
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
	const char *method;

	*reply = NULL;
	if (kind == MCP_KIND_INVALID)
		return rpc_error(valid_id(id) ? id : NULL, MCP_INVALID_REQUEST,
				 cJSON_IsArray(msg) ? "batches are not accepted: send one message" :
						      "not a JSON-RPC 2.0 request",
				 NULL, reply);
	method = cJSON_GetObjectItemCaseSensitive(msg, "method") ?
			 cJSON_GetObjectItemCaseSensitive(msg, "method")->valuestring :
			 "";
	if (kind == MCP_KIND_RESPONSE)
		return 0; /* rigfit sends no requests; a stray response is dropped */
	if (kind == MCP_KIND_NOTIFICATION)
		return 0; /* initialized, cancelled, progress: nothing to do or answer */
	if (params && !cJSON_IsObject(params))
		return rpc_error(id, MCP_INVALID_PARAMS, "params must be an object", NULL, reply);
	if (kind == MCP_KIND_INITIALIZE)
		return do_initialize(env, s, id, params, reply);
	if (strcmp(method, "ping") == 0)
		return rpc_result(id, cJSON_CreateObject(), reply);
	if (!s->initialized)
		return rpc_error(id, MCP_INVALID_REQUEST,
				 "the session is not initialized: send initialize first", NULL,
				 reply);
	if (strcmp(method, "tools/list") == 0)
		return do_tools_list(env, id, params, reply);
	if (strcmp(method, "tools/call") == 0)
		return do_tools_call(env, id, params, reply);
	if (strcmp(method, "resources/list") == 0)
		return do_resources_list(env, id, reply);
	if (strcmp(method, "resources/read") == 0)
		return do_resources_read(env, id, params, reply);
	if (strcmp(method, "resources/templates/list") == 0) {
		cJSON *r = cJSON_CreateObject();
		cJSON_AddArrayToObject(r, "resourceTemplates");
		return rpc_result(id, r, reply);
	}
	if (strcmp(method, "logging/setLevel") == 0)
		return do_set_level(s, id, params, reply);
	return rpc_error(id, MCP_METHOD_NOT_FOUND, "method not found", NULL, reply);
}

int mcp_parse(const char *text, size_t len, void **msg, char **reply)
{
	cJSON *root = NULL;
	size_t off;
	const char *why;
	int code = MCP_PARSE_ERROR;

	*msg = NULL;
	*reply = NULL;
	switch (text ? jm_parse_text(text, len, &root, &off) : JM_TEXT_MALFORMED) {
	case JM_TEXT_OK:
		*msg = root;
		return 0;
	case JM_TEXT_NOMEM:
		return RF_E_NOMEM;
	case JM_TEXT_UTF8:
		why = "Parse error: the message is not valid UTF-8 (or holds a NUL byte)";
		break;
	case JM_TEXT_NUL_ESCAPE:
		code = MCP_INVALID_REQUEST;
		why = "Invalid Request: strings may not contain NUL characters (\\u0000)";
		break;
	case JM_TEXT_TRAILING:
		why = "Parse error: the message has bytes after its JSON value";
		break;
	case JM_TEXT_MALFORMED:
	default:
		why = "Parse error: the message is not JSON";
		break;
	}
	*reply = mcp_error_text(code, why);
	return *reply ? 0 : RF_E_NOMEM;
}

int mcp_handle(const struct api_env *env, struct mcp_session *s, const char *text, size_t len,
	       char **reply)
{
	void *msg = NULL;
	int rc = mcp_parse(text, len, &msg, reply);

	if (rc < 0 || !msg)
		return rc;
	rc = mcp_handle_json(env, s, msg, reply);
	cJSON_Delete(msg);
	return rc;
}
