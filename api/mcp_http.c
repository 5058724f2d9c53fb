/*
 * The Streamable HTTP transport of MCP on POST and DELETE /mcp (GET, the server-to-client
 * stream, is not offered: every answer here is a single JSON reply, so GET is a 405).
 *
 * Before anything else the Origin and Host headers are checked against DNS rebinding: a page
 * on another site must not reach a daemon on loopback through the victim's browser, so an
 * Origin that is neither a loopback origin nor a --cors-origin is refused, and so is a Host
 * that does not name a loopback address while the daemon listens on loopback only (403).
 * Tokens are checked by the transport before this handler runs, as for every other route.
 *
 * initialize opens a session (a random Mcp-Session-Id); every later message must carry it
 * (400 without, 404 for an unknown or closed one); DELETE closes it. The table is bounded, and
 * so is each client's share of it (a client is its address): a client at its cap replaces its
 * own session idle the longest, and a session idle for MCP_SESSION_IDLE_MS may be taken by
 * anyone, but no client's live session is ever dropped to make room for another client's.
 * When the table holds only live sessions of other clients, initialize is refused with a 503
 * and Retry-After, so that an initialize flood from one client cannot log the others out.
 *
 * A body is parsed as strictly as a REST body (mcp_parse): not UTF-8, bytes after the JSON
 * and malformed JSON are a 400 with a -32700 error.
 */
#include "api/mcp.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/err.h"

#define MCP_MAX_SESSIONS 256
#define MCP_SESSIONS_PER_CLIENT 32
#define MCP_SESSION_IDLE_MS (30 * 60 * 1000)
#define MCP_FULL_RETRY_S 30
#define MCP_SESSION_ID_BYTES 16
#define MCP_MAX_ORIGINS 16

struct mcp_slot {
	char id[2 * MCP_SESSION_ID_BYTES + 1]; /* "" : free */
	struct mcp_session s;
	char client[sizeof(((struct api_request *)0)->client)]; /* its client's address */
	uint64_t last_used;                                     /* a tick of h->clock */
	int64_t last_ms;                                        /* env->now_ms when last used */
};

struct mcp_http {
	bool loopback;
	char origins[MCP_MAX_ORIGINS][256];
	int n_origins;
	mcp_random_fn random;
	uint64_t clock; /* +1 per request: the recency of the sessions */
	struct mcp_slot slots[MCP_MAX_SESSIONS];
};

struct mcp_http *mcp_http_new(bool loopback, const char *const *origins, int n_origins,
			      mcp_random_fn random)
{
	struct mcp_http *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->loopback = loopback;
	h->random = random;
	for (int i = 0; i < n_origins && h->n_origins < MCP_MAX_ORIGINS; i++)
		if (strlen(origins[i]) < sizeof(h->origins[0]))
			snprintf(h->origins[h->n_origins++], sizeof(h->origins[0]), "%s",
				 origins[i]);
	return h;
}

void mcp_http_free(struct mcp_http *h)
{
	free(h);
}

size_t mcp_http_sessions(const struct mcp_http *h)
{
	size_t n = 0;

	for (size_t i = 0; h && i < MCP_MAX_SESSIONS; i++)
		n += h->slots[i].id[0] != '\0';
	return n;
}

/* Whether host (a Host header value, or the authority of an Origin) names loopback, with or
 * without a port. */
static bool loopback_host(const char *host, size_t len)
{
	static const char *const names[] = {"localhost", "127.0.0.1", "[::1]"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t n = strlen(names[i]);
		if (len >= n && strncasecmp(host, names[i], n) == 0 &&
		    (len == n || host[n] == ':')) {
			for (size_t k = n + 1; k < len; k++)
				if (host[k] < '0' || host[k] > '9')
					return false;
			return true;
		}
	}
	return false;
}

static bool origin_allowed(const struct mcp_http *h, const char *origin)
{
	const char *authority;

	for (int i = 0; i < h->n_origins; i++)
		if (strcmp(h->origins[i], origin) == 0 || strcmp(h->origins[i], "*") == 0)
			return true;
	if (strncmp(origin, "http://", 7) == 0)
		authority = origin + 7;
	else if (strncmp(origin, "https://", 8) == 0)
		authority = origin + 8;
	else
		return false;
	return loopback_host(authority, strlen(authority));
}

static const char *header(const struct api_request *req, const char *name)
{
	return req->header ? req->header(req->header_ctx, name) : NULL;
}

/* Sets out to a JSON-RPC error (id null) with HTTP status. Returns -1, so that a check can
 * `return rpc_http_error(...)` to say it answered. */
static int rpc_http_error(struct api_reply *out, int status, int code, const char *message)
{
	char *text = mcp_error_text(code, message);

	if (!text)
		api_error(out, RF_E_NOMEM, NULL, NULL);
	else
		api_reply_json(out, status, text);
	return -1;
}

static struct mcp_slot *find_session(struct mcp_http *h, const char *id)
{
	for (size_t i = 0; i < MCP_MAX_SESSIONS; i++)
		if (h->slots[i].id[0] && strcmp(h->slots[i].id, id) == 0)
			return &h->slots[i];
	return NULL;
}

/* Whether slot's session has been idle long enough to be taken by any client. */
static bool session_expired(const struct mcp_slot *slot, int64_t now_ms)
{
	return now_ms > slot->last_ms && now_ms - slot->last_ms >= MCP_SESSION_IDLE_MS;
}

/* Opens a session for client: in its own session idle the longest when it holds
 * MCP_SESSIONS_PER_CLIENT, else in a free slot, else in a session idle past
 * MCP_SESSION_IDLE_MS. Returns NULL when none of these is there (or no random bytes). */
static struct mcp_slot *open_session(struct mcp_http *h, const char *client, int64_t now_ms)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[MCP_SESSION_ID_BYTES];
	struct mcp_slot *own_lru = NULL, *free_slot = NULL, *expired = NULL, *slot;
	int own = 0;

	for (size_t i = 0; i < MCP_MAX_SESSIONS; i++) {
		struct mcp_slot *k = &h->slots[i];
		if (!k->id[0]) {
			if (!free_slot)
				free_slot = k;
			continue;
		}
		if (strcmp(k->client, client) == 0) {
			own++;
			if (!own_lru || k->last_used < own_lru->last_used)
				own_lru = k;
		} else if (session_expired(k, now_ms) &&
			   (!expired || k->last_used < expired->last_used)) {
			expired = k;
		}
	}
	slot = own >= MCP_SESSIONS_PER_CLIENT ? own_lru : free_slot ? free_slot : expired;
	if (!slot || !h->random || h->random(raw, sizeof(raw)) < 0)
		return NULL;
	memset(slot, 0, sizeof(*slot));
	for (size_t i = 0; i < sizeof(raw); i++) {
		slot->id[2 * i] = hex[raw[i] >> 4];
		slot->id[2 * i + 1] = hex[raw[i] & 15];
	}
	snprintf(slot->client, sizeof(slot->client), "%s", client);
	return slot;
}

/* The checks of every /mcp request: Origin, Host, and a known protocol version. */
static int preflight(const struct mcp_http *h, const struct api_request *req, struct api_reply *out)
{
	const char *origin = header(req, "Origin");
	const char *host = header(req, "Host");
	const char *version = header(req, "MCP-Protocol-Version");

	if (origin && !origin_allowed(h, origin))
		return rpc_http_error(out, 403, MCP_INVALID_REQUEST,
				      "Forbidden: this Origin may not use /mcp (add it with "
				      "--cors-origin)");
	if (h->loopback && (!host || !loopback_host(host, strlen(host))))
		return rpc_http_error(out, 403, MCP_INVALID_REQUEST,
				      "Forbidden: the Host header must name a loopback address");
	/* Without the header a client speaks 2025-03-26, whose messages are the same here. */
	if (version && strcmp(version, MCP_PROTOCOL_LATEST) != 0 &&
	    strcmp(version, MCP_PROTOCOL_PREVIOUS) != 0 && strcmp(version, "2025-03-26") != 0)
		return rpc_http_error(out, 400, MCP_INVALID_REQUEST,
				      "Bad Request: unsupported MCP-Protocol-Version");
	return 0;
}

/* Finds the request's session: 400 without the header, 404 when unknown. */
static struct mcp_slot *session_of(struct mcp_http *h, const struct api_request *req,
				   struct api_reply *out)
{
	const char *id = header(req, "Mcp-Session-Id");
	struct mcp_slot *slot;

	if (!id) {
		rpc_http_error(out, 400, MCP_INVALID_REQUEST,
			       "Bad Request: Mcp-Session-Id header is required (send initialize "
			       "first)");
		return NULL;
	}
	slot = find_session(h, id);
	if (!slot)
		rpc_http_error(out, 404, MCP_INVALID_REQUEST,
			       "Session not found: initialize a new session");
	return slot;
}

struct mcp_http *mcp_http_detach(const struct mcp_http *h, const struct api_request *req)
{
	const char *id = header(req, "Mcp-Session-Id");
	struct mcp_http *copy;

	if (!h || !id)
		return NULL;
	for (size_t i = 0; i < MCP_MAX_SESSIONS; i++) {
		if (!h->slots[i].id[0] || strcmp(h->slots[i].id, id) != 0)
			continue;
		copy = mcp_http_new(h->loopback, NULL, 0, h->random);
		if (!copy)
			return NULL;
		memcpy(copy->origins, h->origins, sizeof(h->origins));
		copy->n_origins = h->n_origins;
		copy->clock = h->clock;
		copy->slots[0] = h->slots[i];
		return copy;
	}
	return NULL;
}

static int mcp_post(const struct api_env *env, struct mcp_http *h, const struct api_request *req,
		    struct api_reply *out)
{
	void *parsed = NULL;
	cJSON *msg;
	enum mcp_kind kind;
	struct mcp_slot *slot;
	char *reply = NULL;
	int rc = mcp_parse(req->body, req->body_len, &parsed, &reply), status = 200;

	if (rc < 0)
		return api_error(out, rc, NULL, NULL);
	if (!parsed) {
		api_reply_json(out, 400, reply);
		return 0;
	}
	msg = parsed;
	kind = mcp_message_kind(msg);
	if (kind == MCP_KIND_INITIALIZE) {
		/* A slot is taken only for an initialize that succeeds, so refused ones never
		 * take the place of a live session. */
		struct mcp_session fresh = {0};
		rc = mcp_handle_json(env, &fresh, msg, &reply);
		cJSON_Delete(msg);
		if (rc < 0)
			return api_error(out, rc, NULL, NULL);
		slot = fresh.initialized ? open_session(h, req->client, env->now_ms) : NULL;
		if (fresh.initialized && !slot) {
			free(reply);
			rpc_http_error(out, 503, MCP_SERVER_BUSY,
				       "Server busy: every MCP session is in use by other clients; "
				       "retry later");
			out->retry_after_s = MCP_FULL_RETRY_S;
			return 0;
		}
		api_reply_json(out, 200, reply);
		if (slot) {
			slot->s = fresh;
			slot->last_used = ++h->clock;
			slot->last_ms = env->now_ms;
			snprintf(out->mcp_session, sizeof(out->mcp_session), "%s", slot->id);
		}
		return 0;
	}
	if (kind == MCP_KIND_INVALID) {
		struct mcp_session none = {0};
		rc = mcp_handle_json(env, &none, msg, &reply);
		status = 400;
	} else {
		slot = session_of(h, req, out);
		if (!slot) {
			cJSON_Delete(msg);
			return 0;
		}
		slot->last_used = ++h->clock;
		slot->last_ms = env->now_ms;
		rc = mcp_handle_json(env, &slot->s, msg, &reply);
	}
	cJSON_Delete(msg);
	if (rc < 0)
		return api_error(out, rc, NULL, NULL);
	if (!reply) {
		/* A notification or a response: accepted, nothing to answer. */
		out->status = 202;
		out->content_type = NULL;
		return 0;
	}
	api_reply_json(out, status, reply);
	return 0;
}

int api_mcp(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	struct mcp_http *h = env->mcp;
	struct mcp_slot *slot;

	if (!h)
		return api_error(out, RF_E_UNAVAILABLE, NULL, "MCP is not available here");
	if (preflight(h, req, out) < 0)
		return 0;
	if (req->method == API_DELETE) {
		slot = session_of(h, req, out);
		if (!slot)
			return 0;
		memset(slot, 0, sizeof(*slot));
		out->status = 204;
		return 0;
	}
	return mcp_post(env, h, req, out);
}
