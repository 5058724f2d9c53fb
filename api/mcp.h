/*
 * MCP (Model Context Protocol) over JSON-RPC 2.0: rigfit's questions as tools an LLM agent
 * calls, and the hardware snapshot and model catalog as resources. Transport-independent: a
 * message in, a reply out. server/cli/mcp_stdio.c carries it over standard input and output
 * (`rigfit mcp`); api/mcp_http.c is the Streamable HTTP transport of POST/DELETE /mcp.
 *
 * Each tool is a call of a route's handler with a synthetic request (api_dispatch), so a
 * tool's structuredContent is the route's answer byte for byte, and its inputSchema and
 * outputSchema come from the route's request and response schemas in the embedded
 * openapi.yaml (api_env.openapi_tree), their $refs moved under $defs, compacted so that every
 * tool lists in one small page: the input keeps every validation keyword of the arguments and
 * their fields and a line of description per argument, the output the answer's required
 * fields.
 */
#ifndef RIGFIT_API_MCP_H
#define RIGFIT_API_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api/api.h"

/* The protocol versions spoken, newest first; the first is offered to a client that asks for
 * one rigfit does not know. */
#define MCP_PROTOCOL_LATEST "2025-11-25"
#define MCP_PROTOCOL_PREVIOUS "2025-06-18"

/* The largest message either transport accepts (one stdio line, one POST body). */
#define MCP_MAX_MESSAGE_BYTES API_MAX_BODY_BYTES

/* JSON-RPC error codes. */
#define MCP_PARSE_ERROR (-32700)
#define MCP_INVALID_REQUEST (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS (-32602)
#define MCP_INTERNAL_ERROR (-32603)
#define MCP_RESOURCE_NOT_FOUND (-32002)
#define MCP_SERVER_BUSY (-32000) /* no session can be opened now (HTTP 503) */

/* One client's protocol state: one per stdio process, one per Mcp-Session-Id over HTTP. */
struct mcp_session {
	char version[16]; /* the negotiated protocol version; "" before initialize */
	bool initialized; /* initialize was answered */
	int log_level;    /* index in mcp_log_levels; notifications below it are not sent */
};

/* Handles one message, text[0..len) (not NUL-terminated necessarily). Writes to *reply a
 * malloc'd JSON text (free with free) to send back, or NULL when the message needs no answer
 * (a notification, or a response to the server). A message mcp_parse refuses gets its error
 * reply. Returns 0, or RF_E_NOMEM when no reply could be built (*reply is then NULL). */
int mcp_handle(const struct api_env *env, struct mcp_session *s, const char *text, size_t len,
	       char **reply /* OUT */);

/* Parses one message, text[0..len), as strictly as a REST body (api/jsonmap.h): valid UTF-8,
 * one JSON value and nothing after it, no \u0000 escape, so that no byte the client sent is
 * echoed back unchecked. Writes the tree to *msg (a cJSON *, free with cJSON_Delete), or, when
 * the text is refused, NULL and the JSON-RPC error to answer (-32700, or -32600 for a \u0000
 * escape; malloc'd) to *reply. Returns 0, or RF_E_NOMEM (both NULL). */
int mcp_parse(const char *text, size_t len, void **msg /* OUT */, char **reply /* OUT */);

/* What the HTTP transport needs to know of a message before handling it. */
enum mcp_kind {
	MCP_KIND_INVALID = 0,  /* not a JSON-RPC message (answered with an error) */
	MCP_KIND_REQUEST,      /* has a method and an id */
	MCP_KIND_INITIALIZE,   /* the initialize request */
	MCP_KIND_NOTIFICATION, /* has a method, no id */
	MCP_KIND_RESPONSE,     /* a result or error for the server */
};

/* Returns the kind of the parsed message msg (a const cJSON *). */
enum mcp_kind mcp_message_kind(const void *msg);

/* Handles the parsed message msg (a const cJSON *). Writes the reply as in mcp_handle.
 * Returns 0 or RF_E_NOMEM. */
int mcp_handle_json(const struct api_env *env, struct mcp_session *s, const void *msg,
		    char **reply /* OUT */);

/* Returns a JSON-RPC error reply {"jsonrpc","id":null,"error":{code,message}} (malloc'd), or
 * NULL when out of memory. */
char *mcp_error_text(int code, const char *message);

/* --- Tools (api/mcp_tools.c) ------------------------------------------------------------- */

struct mcp_tool {
	const char *name;         /* snake_case, as clients list it */
	const char *title;        /* for people */
	const char *operation_id; /* the openapi.yaml operation it calls */
	enum api_method method;
	const char *path; /* "/api/profiles/{id}": the id comes from the "id" argument */
	const char *description;
};

/* Returns the tool table and its length in *n. */
const struct mcp_tool *mcp_tools(size_t *n /* OUT */);

/* Builds the tools/list entry of tool t from the spec (a const cJSON * of openapi.yaml):
 * name, title, description, inputSchema, outputSchema, annotations. Returns a cJSON * (free
 * with cJSON_Delete) or NULL when the spec lacks the operation or its schemas, or out of
 * memory; err then says which. */
void *mcp_tool_describe(const struct mcp_tool *t, const void *spec, char *err, size_t errlen);

/* Runs tool t with args (a const cJSON * object) against env and returns the tools/call
 * result: {content, structuredContent, isError}. Returns a cJSON * or NULL (no memory). */
void *mcp_tool_call(const struct api_env *env, const struct mcp_tool *t, const void *args);

/* Returns the tool named name, or NULL. */
const struct mcp_tool *mcp_tool_find(const char *name);

/* --- Streamable HTTP (api/mcp_http.c) ----------------------------------------------------- */

/* Fills buf[0..n) with random bytes for session ids. Returns 0 or -1. */
typedef int (*mcp_random_fn)(void *buf, size_t n);

/* Creates the session table of the HTTP transport. loopback: the daemon listens on loopback
 * only, so the Host header must name a loopback host. origins[0..n_origins) are the
 * --cors-origin values, accepted as Origin besides the loopback ones. Returns NULL when out of
 * memory. Free with mcp_http_free. */
struct mcp_http *mcp_http_new(bool loopback, const char *const *origins, int n_origins,
			      mcp_random_fn random);

/* Frees h. NULL is a no-op. */
void mcp_http_free(struct mcp_http *h);

/* Returns how many sessions are open. */
size_t mcp_http_sessions(const struct mcp_http *h);

/* A table holding a copy of the one session that req's Mcp-Session-Id names, so that req can
 * be answered away from h (on another thread) while h goes on changing. Returns it (free with
 * mcp_http_free), or NULL: no such session, or out of memory. */
struct mcp_http *mcp_http_detach(const struct mcp_http *h, const struct api_request *req);

/* The handler of POST and DELETE /mcp (env->mcp holds the sessions; NULL: 503). */
int api_mcp(const struct api_env *env, const struct api_request *req, struct api_reply *out);

#endif
