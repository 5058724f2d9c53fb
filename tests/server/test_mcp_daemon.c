/*
 * POST /mcp on the real daemon, through libmicrohttpd: the token guards it as every route,
 * the session id travels in a header, a cross-origin request is refused, GET is a 405, a
 * browser's preflight may send the MCP headers, and a tool's answer is the route's answer
 * byte for byte. Also `rigfit mcp`'s usage error.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/server/harness.h"
#include "tests/test.h"

#define AUTH "Authorization: Bearer s3cret-token\r\n"

static const char init_body[] =
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	"\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";
static const char estimate_args[] =
	"{\"model\":{\"id\":\"llama-3.1-8b\"},\"quant\":\"Q4_K_M\",\"n_ctx\":4096,"
	"\"hardware_profile\":\"rtx-4090\"}";

static int post(int port, const char *headers, const char *body, struct t_resp *r)
{
	char h[512];

	snprintf(h, sizeof(h), "Content-Type: application/json\r\n%s", headers);
	return t_http(port, "POST", "/mcp", h, body, strlen(body), r);
}

START_TEST(mcp_on_the_daemon)
{
	struct t_daemon d;
	struct t_resp r;
	char *tok_dir = t_mkdtemp(), *tok = t_path(tok_dir, "token");
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *extra[] = {
		"--token-file", tok, "--cors-origin", "https://ui.example", "--profiles",
		profiles,       NULL};
	char *sid, *allow, headers[256], body[1024];
	cJSON *j, *text;
	char *rest;

	ck_assert_int_eq(t_write_file(tok, "s3cret-token\n", 13), 0);
	t_daemon_start(&d, extra);
	/* The first scan, asked for with the token (t_wait_scan sends none). */
	for (int i = 0; i < 500; i++) {
		int st;
		ck_assert_int_eq(t_http(d.port, "GET", "/api/hardware", AUTH, NULL, 0, &r), 0);
		st = r.status;
		t_resp_free(&r);
		if (st == 200)
			break;
		usleep(20000);
	}

	/* The REST token guards /mcp too. */
	ck_assert_int_eq(post(d.port, "", init_body, &r), 0);
	ck_assert_int_eq(r.status, 401);
	t_resp_free(&r);
	/* A page on another site is refused, token or not. */
	ck_assert_int_eq(post(d.port, AUTH "Origin: http://evil.example.com\r\n", init_body, &r),
			 0);
	ck_assert_int_eq(r.status, 403);
	/* Refused by the transport's CORS check for every route, before JSON-RPC. */
	ck_assert_ptr_nonnull(strstr(r.body, "\"forbidden\""));
	t_resp_free(&r);

	ck_assert_int_eq(post(d.port, AUTH, init_body, &r), 0);
	ck_assert_int_eq(r.status, 200);
	sid = t_resp_header(&r, "Mcp-Session-Id");
	ck_assert_ptr_nonnull(sid);
	ck_assert_uint_eq(strlen(sid), 32);
	t_resp_free(&r);

	/* A tool's answer is the route's, byte for byte. */
	snprintf(headers, sizeof(headers),
		 AUTH "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-11-25\r\n", sid);
	snprintf(body, sizeof(body),
		 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"estimate\",\"arguments\":%s}}",
		 estimate_args);
	ck_assert_int_eq(post(d.port, headers, body, &r), 0);
	ck_assert_int_eq(r.status, 200);
	j = cJSON_Parse(r.body);
	text = cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "result"), "content"),
				   1),
		"text");
	ck_assert_msg(cJSON_IsString(text), "no JSON text block: %s", r.body);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "POST", "/api/estimate",
				AUTH "Content-Type: application/json\r\n", estimate_args,
				strlen(estimate_args), &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	rest = r.body;
	ck_assert_str_eq(text->valuestring, rest);
	cJSON_Delete(j);
	t_resp_free(&r);

	/* GET is not offered; the preflight lets a browser send the MCP headers. */
	ck_assert_int_eq(t_http(d.port, "GET", "/mcp", AUTH, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 405);
	allow = t_resp_header(&r, "Allow");
	ck_assert_ptr_nonnull(allow);
	ck_assert_ptr_nonnull(strstr(allow, "POST"));
	ck_assert_ptr_nonnull(strstr(allow, "DELETE"));
	free(allow);
	t_resp_free(&r);
	ck_assert_int_eq(
		t_http(d.port, "OPTIONS", "/mcp",
		       "Origin: https://ui.example\r\nAccess-Control-Request-Method: POST\r\n",
		       NULL, 0, &r),
		0);
	ck_assert_int_eq(r.status, 204);
	allow = t_resp_header(&r, "Access-Control-Allow-Headers");
	ck_assert_ptr_nonnull(allow);
	ck_assert_ptr_nonnull(strstr(allow, "Mcp-Session-Id"));
	free(allow);
	t_resp_free(&r);

	/* DELETE closes the session; it is then unknown. */
	ck_assert_int_eq(t_http(d.port, "DELETE", "/mcp", headers, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 204);
	t_resp_free(&r);
	ck_assert_int_eq(
		post(d.port, headers, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}", &r), 0);
	ck_assert_int_eq(r.status, 404);
	t_resp_free(&r);
	free(sid);
	t_daemon_stop(&d);
	t_rmtree(tok_dir);
	free(tok_dir);
	free(tok);
	free(profiles);
}
END_TEST

START_TEST(cli_mcp_usage_error)
{
	const char *argv[] = {t_bin(), "mcp", "--bogus", NULL};
	char *out = NULL, *err = NULL;

	ck_assert_int_eq(t_run(argv, &out, &err, 10000), 2);
	ck_assert_ptr_nonnull(strstr(err, "rigfit: mcp: unknown option '--bogus'"));
	ck_assert_str_eq(out, "");
	free(out);
	free(err);
	argv[2] = "--help";
	ck_assert_int_eq(t_run(argv, &out, &err, 10000), 0);
	ck_assert_ptr_nonnull(strstr(out, "usage: rigfit mcp"));
	free(out);
	free(err);
}
END_TEST

Suite *mcp_daemon_suite(void)
{
	Suite *s = suite_create("mcp_daemon");
	TCase *tc = tcase_create("daemon");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, mcp_on_the_daemon);
	tcase_add_test(tc, cli_mcp_usage_error);
	suite_add_tcase(s, tc);
	return s;
}
