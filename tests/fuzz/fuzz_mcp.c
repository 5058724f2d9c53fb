/*
 * Fuzz target: MCP messages through the stdio reader and the HTTP handler, as `rigfit mcp`
 * and POST /mcp run them. The first byte picks the way in: 0 the stdio reader on the raw
 * input (lines, oversized lines, no newline at the end); 1 the same after an initialize line,
 * so that tools/call and resources are reached; 2 one POST /mcp body in a session opened by
 * initialize. The env is the daemon's (fuzz_env) with the spec parsed from openapi.yaml, so
 * tools/list builds the real schemas. Every reply line must be a JSON-RPC message and every
 * HTTP reply a 2xx..4xx: a crash, leak, undefined behaviour, a 5xx or a reply that is not JSON
 * is a finding.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/mcp.h"
#include "server/cli/mcp_stdio.h"
#include "server/openapi_json.h"
#include "tests/fuzz/fuzz.h"

static const char init_line[] =
	"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	"\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"f\",\"version\":\"1\"}}}";

static const struct api_env *mcp_env(void)
{
	static struct api_env env;
	static bool ready;

	if (!ready) {
		char path[4096], err[256];
		FILE *f;
		char *text;
		long n;

		env = *fuzz_env();
		snprintf(path, sizeof(path), "%s/openapi.yaml", fuzz_src_dir());
		f = fopen(path, "rb");
		if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0)
			abort();
		rewind(f);
		text = malloc((size_t)n + 1);
		if (!text || fread(text, 1, (size_t)n, f) != (size_t)n)
			abort();
		fclose(f);
		env.openapi_tree = rf_yaml_to_json(text, (size_t)n, err, sizeof(err));
		free(text);
		if (!env.openapi_tree)
			abort();
		ready = true;
	}
	return &env;
}

/* Every line of out must be a JSON-RPC 2.0 message. */
static void check_lines(char *out, size_t len)
{
	char *p = out, *end = out + len;

	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		cJSON *j;
		if (!nl)
			abort(); /* every reply ends its line */
		j = cJSON_ParseWithLength(p, (size_t)(nl - p));
		if (!j || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "jsonrpc")))
			abort();
		cJSON_Delete(j);
		p = nl + 1;
	}
}

static void via_stdio(const uint8_t *data, size_t size, bool init)
{
	size_t plen = init ? sizeof(init_line) : 0; /* the line and its newline */
	char *in = malloc(plen + size + 1);
	char *out = NULL;
	size_t outlen = 0;
	FILE *fin, *fout;

	if (!in)
		abort();
	if (init) {
		memcpy(in, init_line, plen - 1);
		in[plen - 1] = '\n';
	}
	memcpy(in + plen, data, size);
	fin = fmemopen(in, plen + size, "r");
	fout = open_memstream(&out, &outlen);
	if (!fin || !fout)
		abort();
	rf_mcp_stdio_serve(mcp_env(), fin, fout);
	fclose(fin);
	fclose(fout);
	check_lines(out, outlen);
	free(out);
	free(in);
}

static char session[64];
static const char *header(void *ctx, const char *name)
{
	(void)ctx;
	if (strcmp(name, "Host") == 0)
		return "127.0.0.1:8080";
	if (strcmp(name, "Mcp-Session-Id") == 0)
		return session;
	return NULL;
}

static int counter_random(void *buf, size_t n)
{
	static uint8_t next;

	for (size_t i = 0; i < n; i++)
		((uint8_t *)buf)[i] = next++;
	return 0;
}

static void via_http(const uint8_t *data, size_t size)
{
	static struct mcp_http *h;
	struct api_env env = *mcp_env();
	struct api_request req = {
		.method = API_POST, .path = "/mcp", .query = "", .header = header};
	struct api_reply reply = {0};
	char *body;

	if (!h)
		h = mcp_http_new(true, NULL, 0, counter_random);
	if (!h)
		abort();
	env.mcp = h;
	session[0] = '\0';
	req.body = init_line;
	req.body_len = strlen(init_line);
	api_dispatch(&env, &req, &reply);
	if (reply.status != 200 || !reply.mcp_session[0])
		abort();
	snprintf(session, sizeof(session), "%s", reply.mcp_session);
	api_reply_reset(&reply);
	body = fuzz_strdup(data, size);
	req.body = body;
	req.body_len = size;
	api_dispatch(&env, &req, &reply);
	if (reply.status >= 500 || (reply.status != 202 && !reply.body))
		abort();
	fuzz_check_reply(&reply);
	api_reply_reset(&reply);
	free(body);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > API_MAX_BODY_BYTES)
		return 0;
	switch (data[0] % 3) {
	case 0:
		via_stdio(data + 1, size - 1, false);
		break;
	case 1:
		via_stdio(data + 1, size - 1, true);
		break;
	default:
		via_http(data + 1, size - 1);
		break;
	}
	return 0;
}
