/*
 * openapi.yaml's request examples are requests the server accepts: each one (every
 * `example:` and every `examples: NAME: value:` under a requestBody, written as JSON, which
 * YAML reads too) is sent to the real daemon, without a token, and must be answered 2xx. The
 * spec cannot drift into demanding what the server does not (a hardware object needs no
 * field; the token is optional), nor show a body the server refuses.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/server/harness.h"
#include "tests/test.h"

#define MAX_EXAMPLES 64

struct example {
	char method[8];
	char path[128];
	int line;
	char *json; /* malloc'd */
};

static size_t indent_of(const char *line)
{
	return strspn(line, " ");
}

/* Collects the request examples of spec (NUL-terminated); returns how many. Fails the test
 * on an example that is not JSON, or on an operation with a body and no example. */
static int collect(const char *spec, struct example *ex)
{
	char path[128] = "", method[8] = "";
	int n = 0, line_no = 0, in_body = 0, body_examples = 0;

	for (const char *p = spec; *p;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char line[1024];
		size_t ind;

		line_no++;
		snprintf(line, sizeof(line), "%.*s", (int)(len < 1023 ? len : 1023), p);
		ind = indent_of(line);
		if (ind == 2 && line[2] == '/')
			sscanf(line + 2, "%127[^:]", path);
		if (ind == 4 &&
		    (strncmp(line + 4, "get:", 4) == 0 || strncmp(line + 4, "post:", 5) == 0 ||
		     strncmp(line + 4, "put:", 4) == 0 || strncmp(line + 4, "delete:", 7) == 0)) {
			ck_assert_msg(!in_body || body_examples > 0,
				      "openapi.yaml: %s %s has a request body without an example",
				      method, path);
			sscanf(line + 4, "%7[a-z]", method);
			in_body = 0;
		}
		if (ind == 6 && strncmp(line + 6, "requestBody:", 12) == 0) {
			in_body = 1;
			body_examples = 0;
		}
		if (ind == 6 && strncmp(line + 6, "responses:", 10) == 0 && in_body) {
			ck_assert_msg(body_examples > 0,
				      "openapi.yaml: %s %s has a request body without an example",
				      method, path);
			in_body = 0;
		}
		if (in_body && (strncmp(line + ind, "example:", 8) == 0 ||
				strncmp(line + ind, "value:", 6) == 0)) {
			const char *rest = strchr(line + ind, ':') + 1;
			size_t cap = 1 << 16, used = 0;
			char *json = malloc(cap);
			const char *q = eol ? eol + 1 : p + len;

			ck_assert_ptr_nonnull(json);
			used = (size_t)snprintf(json, cap, "%s", rest);
			/* A block: the lines indented deeper than the key. */
			while (*q) {
				const char *qe = strchr(q, '\n');
				size_t ql = qe ? (size_t)(qe - q) : strlen(q);
				if (ql > 0 && strspn(q, " ") <= ind)
					break;
				ck_assert(used + ql + 2 < cap);
				used += (size_t)snprintf(json + used, cap - used, "\n%.*s", (int)ql,
							 q);
				q = qe ? qe + 1 : q + ql;
			}
			ck_assert_int_lt(n, MAX_EXAMPLES);
			snprintf(ex[n].method, sizeof(ex[n].method), "%s", method);
			snprintf(ex[n].path, sizeof(ex[n].path), "%s", path);
			ex[n].line = line_no;
			ex[n].json = json;
			{
				cJSON *j = cJSON_Parse(json);
				ck_assert_msg(j != NULL,
					      "openapi.yaml:%d: the %s %s example is not JSON: %s",
					      line_no, method, path, json);
				cJSON_Delete(j);
			}
			n++;
			body_examples++;
		}
		p = eol ? eol + 1 : p + len;
	}
	return n;
}

START_TEST(every_documented_request_example_is_accepted)
{
	char *file = t_path(t_src_dir(), "openapi.yaml"), *spec = t_read_file(file, NULL);
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *extra[] = {"--profiles", profiles, NULL};
	struct example ex[MAX_EXAMPLES];
	struct t_daemon d;
	int n, hardware_seen = 0;

	ck_assert_ptr_nonnull(spec);
	n = collect(spec, ex);
	/* Every route with a body has one, so there are at least as many as those routes. */
	ck_assert_int_ge(n, 10);
	t_daemon_start(&d, extra);
	t_wait_scan(d.port);
	for (int i = 0; i < n; i++) {
		struct t_resp r;
		char path[160], method[8];
		char *brace = strstr(ex[i].path, "/{");

		/* Path parameters get a fixed, valid id. */
		if (brace)
			snprintf(path, sizeof(path), "%.*s/docs-example", (int)(brace - ex[i].path),
				 ex[i].path);
		else
			snprintf(path, sizeof(path), "%s", ex[i].path);
		for (int k = 0; k < 7 && ex[i].method[k]; k++)
			method[k] = (char)(ex[i].method[k] - 'a' + 'A');
		method[strlen(ex[i].method)] = '\0';
		if (strstr(ex[i].json, "\"hardware\""))
			hardware_seen++;
		ck_assert_int_eq(t_http(d.port, method, path, "Content-Type: application/json\r\n",
					ex[i].json, strlen(ex[i].json), &r),
				 0);
		ck_assert_msg(r.status >= 200 && r.status < 300,
			      "openapi.yaml:%d: %s %s answered %d: %.400s", ex[i].line, method,
			      path, r.status, r.body);
		t_resp_free(&r);
		free(ex[i].json);
	}
	/* Partial hardware is documented by example, not only by schema. */
	ck_assert_int_ge(hardware_seen, 1);
	t_daemon_stop(&d);
	free(profiles);
	free(spec);
	free(file);
}
END_TEST

START_TEST(the_token_is_optional_and_described_so)
{
	char *file = t_path(t_src_dir(), "openapi.yaml"), *spec = t_read_file(file, NULL);
	const char *sec = strstr(spec, "\nsecurity:\n");

	/* The top-level requirement lists "no token" as an alternative: a token is needed only
	 * when the daemon runs with --token-file. */
	ck_assert_ptr_nonnull(sec);
	ck_assert_msg(strncmp(sec, "\nsecurity:\n  - {}\n  - bearerAuth: []\n", 36) == 0, "%.80s",
		      sec);
	/* Request hardware is the optional-field input, never the scan's full shape. */
	ck_assert_ptr_nonnull(strstr(spec, "\n    HardwareInput:\n"));
	for (const char *p = strstr(spec, "\n        hardware:\n"); p;
	     p = strstr(p + 1, "\n        hardware:\n")) {
		const char *next = p + strlen("\n        hardware:\n");
		if (strncmp(next, "          $ref:", 15) == 0)
			ck_assert_msg(
				strncmp(next,
					"          $ref: '#/components/schemas/HardwareInput'",
					52) == 0,
				"a request's hardware refers to %.60s", next);
	}
	free(spec);
	free(file);
}
END_TEST

Suite *openapi_examples_suite(void)
{
	Suite *s = suite_create("openapi_examples");
	TCase *tc = tcase_create("openapi_examples");

	tcase_set_timeout(tc, t_under_valgrind() ? 1800 : 120);
	tcase_add_test(tc, every_documented_request_example_is_accepted);
	tcase_add_test(tc, the_token_is_optional_and_described_so);
	suite_add_tcase(s, tc);
	return s;
}
