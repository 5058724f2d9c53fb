/*
 * One question, one answer at every door: the same estimate asked of the real daemon's
 * POST /api/estimate, of its MCP tool (POST /mcp) and of `rigfit estimate` on the same store
 * and profiles comes back the same, basis included, for a llama.cpp setup on this host, a vLLM
 * setup on described GPUs and a QLoRA run on a device profile. (The page asks the same route;
 * tests/server/test_ui.c holds its printed figures to the route's.)
 *
 * A described machine or a profile is the same machine at every door, so its answers must be
 * equal byte for byte. This host is scanned by the daemon and by the CLI each on its own, and
 * the RAM free at each scan moves the host's budget: there everything but the budget, the
 * share of it used and the hardware's fingerprint (which counts the RAM) must be equal.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/server/harness.h"
#include "tests/test.h"

static const char init_body[] =
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
	"\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";

static const struct door_case {
	const char *what;
	const char *body;
	bool this_host; /* the machine is this host's scan */
} cases[] = {
	{"llama.cpp on this host", "{\"model\":\"llama-3.2-1b\",\"quant\":\"Q4_0\",\"n_ctx\":4096}",
	 true},
	{"vLLM on two described GPUs",
	 "{\"model\":{\"id\":\"llama-3.1-8b\"},\"runtime\":\"vllm\",\"max_model_len\":16384,"
	 "\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\",\"count\":2}]}}",
	 false},
	{"QLoRA on a profile",
	 "{\"model\":\"llama-3.1-8b\",\"mode\":\"qlora\",\"seq_len\":4096,"
	 "\"hardware_profile\":\"rtx-4090\"}",
	 false},
};

static cJSON *rest_answer(int port, const char *body)
{
	struct t_resp r;
	cJSON *j;

	ck_assert_int_eq(t_http(port, "POST", "/api/estimate", "Content-Type: application/json\r\n",
				body, strlen(body), &r),
			 0);
	ck_assert_msg(r.status == 200, "%s: %d %s", body, r.status, r.body);
	j = cJSON_ParseWithLength(r.body, r.body_len);
	ck_assert_ptr_nonnull(j);
	t_resp_free(&r);
	return j;
}

/* Opens an MCP session on the daemon; returns its id (malloc'd). */
static char *mcp_session(int port)
{
	struct t_resp r;
	char *sid;

	ck_assert_int_eq(t_http(port, "POST", "/mcp", "Content-Type: application/json\r\n",
				init_body, strlen(init_body), &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	sid = t_resp_header(&r, "Mcp-Session-Id");
	ck_assert_ptr_nonnull(sid);
	t_resp_free(&r);
	return sid;
}

/* The estimate tool's answer: its JSON text block, parsed. */
static cJSON *mcp_answer(int port, const char *sid, const char *args)
{
	char headers[256], *body;
	size_t len = strlen(args) + 256;
	struct t_resp r;
	cJSON *j, *text, *answer;

	body = malloc(len);
	ck_assert_ptr_nonnull(body);
	snprintf(headers, sizeof(headers),
		 "Content-Type: application/json\r\nMcp-Session-Id: %s\r\n"
		 "MCP-Protocol-Version: 2025-11-25\r\n",
		 sid);
	snprintf(body, len,
		 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
		 "\"estimate\",\"arguments\":%s}}",
		 args);
	ck_assert_int_eq(t_http(port, "POST", "/mcp", headers, body, strlen(body), &r), 0);
	ck_assert_int_eq(r.status, 200);
	j = cJSON_ParseWithLength(r.body, r.body_len);
	text = cJSON_GetObjectItem(
		cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "result"), "content"),
				   1),
		"text");
	ck_assert_msg(cJSON_IsString(text), "no JSON text block: %s", r.body);
	answer = cJSON_Parse(text->valuestring);
	ck_assert_ptr_nonnull(answer);
	cJSON_Delete(j);
	t_resp_free(&r);
	free(body);
	return answer;
}

/* `rigfit estimate` on the daemon's store and profiles, as JSON. */
static cJSON *cli_answer(const char *dir, const char *db, const char *profiles, const char *body)
{
	char *req = t_path(dir, "req.json"), *out = NULL, *err = NULL;
	const char *argv[] = {t_bin(),    "estimate", "--json",     req,      "--db", db,
			      "--format", "json",     "--profiles", profiles, NULL};
	cJSON *j;

	ck_assert_int_eq(t_write_file(req, body, strlen(body)), 0);
	ck_assert_msg(t_run(argv, &out, &err, 60000) == 0, "%s", err);
	j = cJSON_Parse(out);
	ck_assert_msg(j != NULL, "not JSON: %s", out);
	free(out);
	free(err);
	free(req);
	return j;
}

/* Drops what the RAM free at the scan moves from an answer about this host. */
static void drop_scan_moments(cJSON *j)
{
	cJSON *mem = cJSON_GetObjectItem(j, "memory");

	cJSON_DeleteItemFromObject(j, "utilization");
	cJSON_DeleteItemFromObject(j, "fit_band");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "hardware"), "fingerprint");
	for (cJSON *d = cJSON_GetObjectItem(mem, "per_device")->child; d; d = d->next)
		cJSON_DeleteItemFromObject(d, "budget_bytes");
}

static void assert_same(const char *what, const char *door, cJSON *want, cJSON *got)
{
	char *a, *b;

	if (cJSON_Compare(want, got, true))
		return;
	a = cJSON_PrintUnformatted(want);
	b = cJSON_PrintUnformatted(got);
	ck_abort_msg("%s: %s differs from POST /api/estimate:\n route: %s\n %s: %s", what, door, a,
		     door, b);
}

START_TEST(every_door_gives_one_answer)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "doors.db");
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *extra[] = {"--db", db, "--profiles", profiles, NULL};
	char *sid;

	t_daemon_start(&d, extra);
	t_wait_scan(d.port);
	sid = mcp_session(d.port);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *rest = rest_answer(d.port, cases[i].body);
		cJSON *mcp = mcp_answer(d.port, sid, cases[i].body);
		cJSON *cli = cli_answer(dir, db, profiles, cases[i].body);
		const cJSON *basis =
			cJSON_GetObjectItem(cJSON_GetObjectItem(rest, "speed"), "basis");
		const cJSON *train_tps =
			cJSON_GetObjectItem(cJSON_GetObjectItem(rest, "training"), "tokens_per_s");

		/* An answer with a speed (and its basis when serving), not an error envelope. */
		ck_assert_msg(cJSON_IsString(basis) || cJSON_IsNumber(train_tps), "%s: no speed",
			      cases[i].what);
		assert_same(cases[i].what, "the MCP tool", rest, mcp);
		if (cases[i].this_host) {
			drop_scan_moments(rest);
			drop_scan_moments(cli);
		}
		assert_same(cases[i].what, "rigfit estimate", rest, cli);
		cJSON_Delete(rest);
		cJSON_Delete(mcp);
		cJSON_Delete(cli);
	}
	free(sid);
	t_daemon_stop(&d);
	t_rmtree(dir);
	free(dir);
	free(db);
	free(profiles);
}
END_TEST

Suite *doors_suite(void)
{
	Suite *s = suite_create("doors");
	TCase *tc = tcase_create("estimate");

	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, every_door_gives_one_answer);
	suite_add_tcase(s, tc);
	return s;
}
