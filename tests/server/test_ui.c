/*
 * The web page at / as a person meets it: the real daemon serves it, a real headless Chromium
 * (Debian's chromium) loads it, runs its script against the real API and prints the DOM it
 * built; the test reads that DOM (this host's CPU named, an SVG chart with the budget line, a
 * fit verdict, no script error) and keeps screenshots at desktop and phone widths under
 * build/artifacts/. The files' own rules (one origin, no remote resource, under 150 KB) and
 * --no-ui are checked over plain HTTP.
 *
 * Chromium runs without its sandbox (the tests run as root, where its sandbox refuses to
 * start) and with a virtual time budget, so the page's requests finish before the DOM is
 * printed. Under valgrind the browser is not traced and its start-up alone can take minutes,
 * so the browser tests run in the sanitizer build only; the HTTP checks run in both.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/server/harness.h"
#include "tests/test.h"

#define UI_MAX_BYTES (150 * 1024)
#define BROWSER_TIMEOUT_MS 90000

static struct t_daemon dmn;

static char *profiles_dir;

/* The daemon with the shipped profiles, so the page has models and devices to offer. */
static void start_ui(void)
{
	const char *extra[] = {"--profiles", NULL, NULL};

	profiles_dir = t_path(t_src_dir(), "profiles");
	extra[1] = profiles_dir;
	t_daemon_start(&dmn, extra);
	t_wait_scan(dmn.port);
}

static void stop_ui(void)
{
	t_daemon_stop(&dmn);
	free(profiles_dir);
	profiles_dir = NULL;
}

/* Runs headless chromium on the page at path ("/", or with a query that presets the form) with
 * one more argument (--dump-dom or --screenshot=F) at a window width; returns stdout
 * (malloc'd) and the browser's log in *log. */
static char *browse_at(const char *path, const char *what, int width, char **log)
{
	char url[512], size[32];
	char *out = NULL;
	const char *extra[] = {"--hide-scrollbars",
			       "--enable-logging=stderr",
			       "--v=0",
			       "--virtual-time-budget=20000",
			       size,
			       what,
			       NULL};
	int rc;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", dmn.port, path);
	snprintf(size, sizeof(size), "--window-size=%d,2400", width);
	rc = t_chromium(url, extra, &out, log, BROWSER_TIMEOUT_MS);
	ck_assert_msg(rc == 0, "chromium exited %d: %s", rc, *log ? *log : "");
	return out;
}

static char *browse(const char *what, int width, char **log)
{
	return browse_at("/", what, width, log);
}

/* Asserts the browser's log has no console message from the page: it writes none when all is
 * well, and Chromium logs uncaught exceptions, console.error and failed loads all as CONSOLE
 * lines (without their level), so any such line is a fault. */
static void assert_no_console_error(const char *log)
{
	const char *p = log ? strstr(log, ":CONSOLE") : NULL;

	if (p) {
		const char *eol = strchr(p, '\n');
		int n = eol ? (int)(eol - p) : (int)strlen(p);
		ck_abort_msg("console message: %.*s", n < 500 ? n : 500, p);
	}
}

/* Returns the CPU model this daemon's scan reports (malloc'd). */
static char *scanned_cpu_model(void)
{
	struct t_resp r;
	cJSON *j, *cpu, *model;
	char *name;

	ck_assert_int_eq(t_http(dmn.port, "GET", "/api/hardware", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	j = cJSON_ParseWithLength(r.body, r.body_len);
	cpu = cJSON_GetObjectItemCaseSensitive(j, "cpu");
	model = cJSON_GetObjectItemCaseSensitive(cpu, "model");
	ck_assert_msg(cJSON_IsString(model), "no cpu.model in %s", r.body);
	name = strdup(model->valuestring);
	cJSON_Delete(j);
	t_resp_free(&r);
	return name;
}

/* Records one benchmark run on this host, so the history chart has a point. */
static void record_run(void)
{
	static const char body[] =
		"{\"run_id\":\"ui-test-1\",\"model\":\"meta-llama/Llama-3.1-8B\","
		"\"precision\":\"Q4_K_M\",\"backend\":\"cpu\",\"runtime\":\"llama.cpp\","
		"\"decode_tokens_per_s\":4.2,\"prefill_tokens_per_s\":30}";
	struct t_resp r;

	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/benchmarks",
				"Content-Type: application/json\r\n", body, sizeof(body) - 1, &r),
			 0);
	ck_assert_msg(r.status == 201, "benchmark not recorded: %d %s", r.status, r.body);
	t_resp_free(&r);
}

/* Returns the text of the element whose attribute attr="value" in dom (malloc'd), or NULL. */
static char *element_text(const char *dom, const char *attr)
{
	const char *p = strstr(dom, attr), *gt, *lt;

	if (!p || !(gt = strchr(p, '>')) || !(lt = strchr(gt, '<')))
		return NULL;
	return strndup(gt + 1, (size_t)(lt - gt - 1));
}

START_TEST(page_draws_this_host_and_the_fit)
{
	char *log = NULL, *dom, *cpu, *text, *budget_svg;

	if (t_under_valgrind())
		return;
	record_run();
	cpu = scanned_cpu_model();
	dom = browse("--dump-dom", 1280, &log);
	ck_assert_ptr_nonnull(dom);
	/* The script ran to its end and caught no error of its own. */
	ck_assert_msg(strstr(dom, "data-ready=\"true\"") != NULL, "page never got ready: %.2000s",
		      dom);
	ck_assert_msg(strstr(dom, "<ol id=\"js-errors\" hidden=\"\"></ol>") != NULL,
		      "script errors: %.2000s", strstr(dom, "js-errors"));
	assert_no_console_error(log);
	/* This machine: the CPU the scan found is named on the card. */
	text = element_text(dom, "data-field=\"cpu-model\"");
	ck_assert_msg(text != NULL, "no CPU on the hardware card");
	ck_assert_str_eq(text, cpu);
	free(text);
	/* Will it fit: a verdict and the memory-against-context chart with its budget line and
	 * the largest context that fits. */
	ck_assert_msg(strstr(dom, "data-fits=\"true\"") || strstr(dom, "data-fits=\"false\""),
		      "no fit verdict");
	budget_svg = strstr(dom, "id=\"fit-ctx-chart\"");
	ck_assert_ptr_nonnull(budget_svg);
	ck_assert_msg(strstr(budget_svg, "<svg") != NULL, "no chart drawn");
	ck_assert_msg(strstr(budget_svg, "data-role=\"budget\"") != NULL, "no budget line");
	ck_assert_msg(strstr(budget_svg, "data-role=\"max-fit\"") != NULL,
		      "largest context that fits not marked");
	ck_assert_msg(strstr(budget_svg, "data-role=\"series\"") != NULL, "no memory curve");
	/* The runtime command, and the recorded run on the history chart. */
	ck_assert_msg(strstr(dom, "id=\"command\">llama-server ") != NULL, "no runtime command");
	/* The config's context is named (n_ctx, or vLLM's max_model_len), never "undefined". */
	ck_assert_msg(strstr(dom, "undefined") == NULL, "'undefined' on the page: %.300s",
		      strstr(dom, "undefined"));
	text = strstr(dom, "id=\"hist-chart\"");
	ck_assert_msg(text && strstr(text, "data-role=\"point\"") != NULL,
		      "the recorded run is not on the history chart");
	free(dom);
	free(log);
	free(cpu);
}
END_TEST

/* Asserts the page at path got ready with no script error and no console message; returns its
 * DOM (malloc'd). */
static char *page_ready_at(const char *path)
{
	char *log = NULL, *dom = browse_at(path, "--dump-dom", 1280, &log);

	ck_assert_ptr_nonnull(dom);
	ck_assert_msg(strstr(dom, "data-ready=\"true\"") != NULL, "%s never got ready", path);
	ck_assert_msg(strstr(dom, "<ol id=\"js-errors\" hidden=\"\"></ol>") != NULL,
		      "%s: script errors: %.2000s", path, strstr(dom, "js-errors"));
	assert_no_console_error(log);
	free(log);
	return dom;
}

/* The form follows the user: a model that fits nowhere is a verdict without a refusal in the
 * console; the config panel writes the quant and context picked; the model field takes what
 * the API resolves (an Ollama tag here), not only the catalog's ids. */
START_TEST(page_follows_the_users_choices)
{
	char *dom;

	if (t_under_valgrind())
		return;
	dom = page_ready_at("/?model=meta-llama/Llama-3.1-405B&quant=Q8_0&gpu=RTX%203060%2012GB"
			    "&use_case=coding");
	ck_assert_msg(strstr(dom, "data-fits=\"false\"") != NULL, "a 405B fits a 3060");
	ck_assert_msg(strstr(dom, "id=\"no-config\"") != NULL, "no word on the config");
	/* The use case picked (coding, one of the select's) is the one the config is for. */
	ck_assert_msg(strstr(dom, "No coding configuration") != NULL, "not the coding use case");
	free(dom);
	dom = page_ready_at("/?model=llama-3.1-8b&quant=Q8_0&ctx=16384&gpu=RTX%204090");
	ck_assert_msg(strstr(dom, "data-fits=\"true\"") != NULL, "no fit");
	ck_assert_msg(strstr(dom, "id=\"command\">llama-server ") && strstr(dom, "-c 16384 ") &&
			      strstr(dom, "Q8_0"),
		      "the command does not follow the choice: %.400s",
		      strstr(dom, "id=\"command\""));
	free(dom);
	dom = page_ready_at("/?model=qwen2.5:7b&gpu=RTX%204090");
	ck_assert_msg(strstr(dom, "data-fits=\"true\"") != NULL, "an Ollama tag is not resolved");
	ck_assert_msg(strstr(dom, "id=\"command\">llama-server ") != NULL, "no command for a tag");
	free(dom);
}
END_TEST

/* Writes x as the page prints it (Number.toLocaleString('en') with at most digits fraction
 * digits: thousands separated by commas, no trailing zeros) into buf. */
static void page_number(double x, int digits, char *buf, size_t len)
{
	char raw[64], *dot;
	size_t n, int_len, o = 0;
	double scale = digits ? 10.0 : 1.0;

	snprintf(raw, sizeof(raw), "%.*f", digits, (double)(long long)(x * scale + 0.5) / scale);
	dot = strchr(raw, '.');
	if (dot) {
		char *end = raw + strlen(raw) - 1;
		while (end > dot && *end == '0')
			*end-- = '\0';
		if (end == dot)
			*dot = '\0';
	}
	dot = strchr(raw, '.');
	int_len = dot ? (size_t)(dot - raw) : strlen(raw);
	for (n = 0; n < int_len && o + 2 < len; n++) {
		buf[o++] = raw[n];
		if ((int_len - n - 1) % 3 == 0 && n + 1 < int_len)
			buf[o++] = ',';
	}
	snprintf(buf + o, len - o, "%s", dot ? dot : "");
}

/* The page's figures are the route's: the speed it prints for a preset model, quant and
 * context is POST /api/estimate's answer for the same question, basis included. */
START_TEST(page_figures_are_the_routes)
{
	static const char body[] =
		"{\"model\":{\"id\":\"llama-3.2-1b\"},\"quant\":\"Q4_0\",\"n_ctx\":4096}";
	char want[160], fig[64], *dom;
	const cJSON *speed;
	struct t_resp r;
	cJSON *est;

	if (t_under_valgrind())
		return;
	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/estimate",
				"Content-Type: application/json\r\n", body, sizeof(body) - 1, &r),
			 0);
	ck_assert_int_eq(r.status, 200);
	est = cJSON_ParseWithLength(r.body, r.body_len);
	t_resp_free(&r);
	speed = cJSON_GetObjectItem(est, "speed");
	dom = page_ready_at("/?model=llama-3.2-1b&quant=Q4_0&ctx=4096");
	page_number(cJSON_GetObjectItem(speed, "decode_tokens_per_s")->valuedouble, 1, fig,
		    sizeof(fig));
	snprintf(want, sizeof(want), "<dt>decode</dt><dd>%s tok/s</dd>", fig);
	ck_assert_msg(strstr(dom, want) != NULL, "the page does not print %s: %.300s", want,
		      strstr(dom, "id=\"fit-speed\""));
	page_number(cJSON_GetObjectItem(speed, "prefill_tokens_per_s")->valuedouble, 0, fig,
		    sizeof(fig));
	snprintf(want, sizeof(want), "<dt>prefill</dt><dd>%s tok/s</dd>", fig);
	ck_assert_msg(strstr(dom, want) != NULL, "the page does not print %s", want);
	snprintf(want, sizeof(want), "<dt>speed basis</dt><dd>%s</dd>",
		 cJSON_GetObjectItem(speed, "basis")->valuestring);
	ck_assert_msg(strstr(dom, want) != NULL, "the page does not print %s", want);
	cJSON_Delete(est);
	free(dom);
}
END_TEST

/* Writes a screenshot at width under build/artifacts/ and asserts it is a PNG. */
static void screenshot(const char *name, int width)
{
	char *dir = t_path(t_src_dir(), "build/artifacts");
	char *file = t_path(dir, name);
	char arg[4200];
	char *log = NULL, *out, *png;
	size_t len = 0;

	mkdir(dir, 0755);
	unlink(file);
	snprintf(arg, sizeof(arg), "--screenshot=%s", file);
	out = browse(arg, width, &log);
	png = t_read_file(file, &len);
	ck_assert_msg(png && len > 8 && memcmp(png, "\x89PNG", 4) == 0, "no screenshot at %s",
		      file);
	assert_no_console_error(log);
	free(png);
	free(out);
	free(log);
	free(file);
	free(dir);
}

START_TEST(screenshots_at_desktop_and_phone_widths)
{
	if (t_under_valgrind())
		return;
	screenshot("ui-desktop.png", 1280);
	screenshot("ui-phone.png", 390);
}
END_TEST

/* GETs path; returns the body length and checks the status. */
static size_t get_len(const char *path, int status, char **body)
{
	struct t_resp r;
	size_t n;

	ck_assert_int_eq(t_http(dmn.port, "GET", path, NULL, NULL, 0, &r), 0);
	ck_assert_msg(r.status == status, "%s: %d, want %d", path, r.status, status);
	n = r.body_len;
	if (body)
		*body = strdup(r.body);
	t_resp_free(&r);
	return n;
}

START_TEST(page_is_small_self_contained_and_typed)
{
	char *html = NULL, *css = NULL;
	size_t total = get_len("/", 200, &html) + get_len("/ui/app.js", 200, NULL) +
		       get_len("/ui/app.css", 200, &css);
	struct t_resp r;
	char *ct;

	ck_assert_msg(total < UI_MAX_BYTES, "the page weighs %zu bytes", total);
	/* Nothing from another host: relative URLs only, system fonts. */
	ck_assert_ptr_null(strstr(html, "http://"));
	ck_assert_ptr_null(strstr(html, "https://"));
	ck_assert_ptr_null(strstr(css, "url("));
	ck_assert_ptr_null(strstr(css, "@import"));
	ck_assert_ptr_nonnull(strstr(html, "src=\"ui/app.js\""));
	ck_assert_int_eq(t_http(dmn.port, "GET", "/ui/app.js", NULL, NULL, 0, &r), 0);
	ct = t_resp_header(&r, "Content-Type");
	ck_assert_str_eq(ct, "text/javascript; charset=utf-8");
	free(ct);
	t_resp_free(&r);
	/* Unknown files and the index under a second name are 404 envelopes. */
	get_len("/ui/nope.js", 404, NULL);
	get_len("/ui/index.html", 404, NULL);
	get_len("/ui/../openapi.yaml", 404, NULL);
	free(html);
	free(css);
}
END_TEST

START_TEST(no_ui_turns_the_page_off)
{
	struct t_daemon off;
	const char *extra[] = {"--no-ui", NULL};
	struct t_resp r;

	t_daemon_start(&off, extra);
	ck_assert_int_eq(t_http(off.port, "GET", "/", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 404);
	ck_assert_ptr_nonnull(strstr(r.body, "\"not_found\""));
	t_resp_free(&r);
	ck_assert_int_eq(t_http(off.port, "GET", "/ui/app.js", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 404);
	t_resp_free(&r);
	/* The API is unchanged. */
	ck_assert_int_eq(t_http(off.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	t_daemon_stop(&off);
}
END_TEST

Suite *ui_suite(void)
{
	Suite *s = suite_create("ui");
	TCase *tc = tcase_create("page");

	tcase_add_unchecked_fixture(tc, start_ui, stop_ui);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, page_is_small_self_contained_and_typed);
	tcase_add_test(tc, page_draws_this_host_and_the_fit);
	tcase_add_test(tc, page_follows_the_users_choices);
	tcase_add_test(tc, page_figures_are_the_routes);
	tcase_add_test(tc, screenshots_at_desktop_and_phone_widths);
	tcase_add_test(tc, no_ui_turns_the_page_off);
	suite_add_tcase(s, tc);
	return s;
}
