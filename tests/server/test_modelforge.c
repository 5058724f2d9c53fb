/*
 * ModelForge's whole flow against the real daemon: detect (this host's free disk on the data
 * directory and logical cores filled in), set_model, session, load_settings (the settings the
 * estimator fitted for the chosen model), info; bad bodies; preflights from an allowed origin
 * on any path; --static-dir serving a built web app same-origin. Then a small page making
 * ModelForge's exact calls runs in headless Chromium, served by the daemon itself and from
 * another origin through CORS.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "tests/server/harness.h"
#include "tests/test.h"

#define JSON_HDR "Content-Type: application/json\r\n"

/* Starts a daemon with the shipped profiles, a data directory and the extra flags. */
static void start(struct t_daemon *d, const char *data_dir, const char *const *extra)
{
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *argv[16] = {"--profiles", profiles, "--data-dir", data_dir};
	int n = 4;

	for (int i = 0; extra && extra[i] && n < 15; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	t_daemon_start(d, argv);
	t_wait_scan(d->port);
	free(profiles);
}

/* Sends a request and returns the JSON answer of status want. */
static cJSON *call(int port, const char *method, const char *path, const char *body, int want)
{
	struct t_resp r;
	cJSON *j;

	ck_assert_int_eq(t_http(port, method, path, body ? JSON_HDR : NULL, body,
				body ? strlen(body) : 0, &r),
			 0);
	ck_assert_msg(r.status == want, "%s %s: %d, want %d: %s", method, path, r.status, want,
		      r.body);
	j = cJSON_ParseWithLength(r.body, r.body_len);
	ck_assert_msg(j != NULL, "not JSON: %s", r.body);
	t_resp_free(&r);
	return j;
}

static const char *str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

START_TEST(detect_reports_the_data_disk_and_logical_cores_of_this_host)
{
	struct t_daemon d;
	char *data = t_mkdtemp();
	struct statvfs st;
	cJSON *j;
	double free_gib;

	start(&d, data, NULL);
	j = call(d.port, "POST", "/api/finetune/detect", "{\"task\":\"text-generation\"}", 200);
	ck_assert_int_eq(statvfs(data, &st), 0);
	free_gib = (double)st.f_bavail * (double)st.f_frsize / (1024.0 * 1024 * 1024);
	/* Measured at the daemon's scan; other writers may move it a little since. */
	ck_assert_msg(cJSON_IsNumber(cJSON_GetObjectItem(j, "available_diskspace_gb")), "%s",
		      cJSON_PrintUnformatted(j));
	ck_assert_double_eq_tol(cJSON_GetObjectItem(j, "available_diskspace_gb")->valuedouble,
				free_gib, 0.5);
	ck_assert_int_eq(cJSON_GetObjectItem(j, "cpu_cores")->valueint,
			 (int)sysconf(_SC_NPROCESSORS_ONLN));
	cJSON_Delete(j);
	/* Described hardware has no disk here. */
	j = call(d.port, "POST", "/api/finetune/detect",
		 "{\"task\":\"text-generation\",\"hardware_profile\":\"rtx-4090\"}", 200);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "available_diskspace_gb")));
	cJSON_Delete(j);
	t_daemon_stop(&d);
	t_rmtree(data);
	free(data);
}
END_TEST

/* A malformed body and the error it must get. */
struct bad_body {
	const char *body;
	int status;
	const char *code, *field; /* field NULL: none named */
};

/* Posts each body of cases to path and checks the envelope's code and field. */
static void assert_bad_bodies(int port, const char *path, const struct bad_body *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		cJSON *j = call(port, "POST", path, cases[i].body, cases[i].status);
		cJSON *e = cJSON_GetObjectItem(j, "error");
		ck_assert_str_eq(str(e, "code"), cases[i].code);
		if (cases[i].field)
			ck_assert_str_eq(str(e, "field"), cases[i].field);
		cJSON_Delete(j);
	}
}

/* Asserts that the array key of o holds the string want. */
static void assert_listed(const cJSON *o, const char *key, const char *want)
{
	const cJSON *it;

	ck_assert_ptr_nonnull(want);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(o, key)) if (cJSON_IsString(it) &&
								strcmp(it->valuestring, want) ==
									0) return;
	ck_abort_msg("%s lacks %s", key, want);
}

START_TEST(info_lists_what_the_planner_chooses_from)
{
	static const char *const listed[][2] = {
		{"available_providers", "huggingface"},
		{"available_providers", "unsloth"},
		{"available_strategies", "sft"},
		{"available_strategies", "qlora"},
		{"supported_tasks", "extractive-question-answering"},
		{"methods", "qlora"},
	};
	struct t_daemon d;
	char *data = t_mkdtemp();
	cJSON *j;

	start(&d, data, NULL);
	j = call(d.port, "GET", "/api/info", NULL, 200);
	/* ModelForge's fields, with every provider and strategy rigfit plans. */
	for (size_t i = 0; i < sizeof(listed) / sizeof(listed[0]); i++)
		assert_listed(j, listed[i][0], listed[i][1]);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "providers")),
			 cJSON_GetArraySize(cJSON_GetObjectItem(j, "available_providers")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "strategies")),
			 cJSON_GetArraySize(cJSON_GetObjectItem(j, "available_strategies")));
	ck_assert_str_eq(str(j, "name"), "rigfit");
	/* Nothing planned before a detect. */
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "planned")));
	cJSON_Delete(j);
	/* After one on a card with bitsandbytes and Unsloth: the plan's own choice. */
	cJSON_Delete(call(d.port, "POST", "/api/finetune/detect",
			  "{\"task\":\"text-generation\",\"hardware_profile\":\"rtx-4090\"}", 200));
	j = call(d.port, "GET", "/api/info", NULL, 200);
	ck_assert_str_eq(str(cJSON_GetObjectItem(j, "planned"), "task"), "text-generation");
	ck_assert_str_eq(str(cJSON_GetObjectItem(j, "planned"), "provider"), "unsloth");
	ck_assert_str_eq(str(cJSON_GetObjectItem(j, "planned"), "strategy"), "qlora");
	cJSON_Delete(j);
	t_daemon_stop(&d);
	t_rmtree(data);
	free(data);
}
END_TEST

/* ModelForge's "Use Custom Model": validate_custom_model then set_custom_model, both
 * {"repo_name": NAME}, over the estimator's resolver. */
START_TEST(custom_models_resolve_as_the_estimator_resolves_them)
{
	struct t_daemon d;
	char *data = t_mkdtemp();
	cJSON *j, *info, *e;

	start(&d, data, NULL);
	cJSON_Delete(call(d.port, "POST", "/api/finetune/detect",
			  "{\"task\":\"text-generation\",\"hardware_profile\":\"rtx-4090\"}", 200));
	/* An Instruct release the catalog lists: valid, as it is spelled there, and what it is. */
	j = call(d.port, "POST", "/api/finetune/validate_custom_model",
		 "{\"repo_name\":\" qwen/qwen2.5-7b-instruct \"}", 200);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "valid")));
	ck_assert_str_eq(str(j, "model"), "Qwen/Qwen2.5-7B-Instruct");
	ck_assert_str_eq(str(j, "task"), "text-generation");
	info = cJSON_GetObjectItem(j, "model_info");
	ck_assert_str_eq(str(info, "author"), "Qwen");
	ck_assert_str_eq(str(info, "family"), "decoder");
	ck_assert_str_eq(str(info, "model_type"), "qwen2");
	ck_assert_double_eq_tol(cJSON_GetObjectItem(info, "params_b")->valuedouble, 7.6, 0.1);
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(info, "architecture"),
					     "num_hidden_layers")
				 ->valueint,
			 28);
	cJSON_Delete(j);
	/* An Ollama tag names its catalog model, whose Hugging Face id is what to train. */
	j = call(d.port, "POST", "/api/finetune/validate_custom_model",
		 "{\"repo_name\":\"qwen2.5-coder:7b\"}", 200);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "valid")));
	ck_assert_ptr_nonnull(strchr(str(j, "model"), '/'));
	cJSON_Delete(j);
	/* A typo: not valid, the reason as text (ModelForge's page prints "error"), the error
	 * object naming repo_name, and the name meant. */
	j = call(d.port, "POST", "/api/finetune/validate_custom_model",
		 "{\"repo_name\":\"lama-3.1-8b\"}", 200);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "valid")));
	ck_assert_ptr_nonnull(strstr(str(j, "error"), "did you mean"));
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "errors"), 0);
	ck_assert_str_eq(str(e, "field"), "repo_name");
	ck_assert_str_eq(str(e, "code"), "invalid_value");
	ck_assert_str_eq(str(j, "did_you_mean"), "llama-3.1-8b");
	cJSON_Delete(j);
	/* An encoder cannot be fine-tuned for text generation; it can for extractive QA. */
	j = call(d.port, "POST", "/api/finetune/validate_custom_model",
		 "{\"repo_name\":\"FacebookAI/roberta-base\"}", 200);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "valid")));
	ck_assert_ptr_nonnull(strstr(str(j, "error"), "encoder"));
	ck_assert_str_eq(str(cJSON_GetObjectItem(j, "model_info"), "family"), "encoder");
	cJSON_Delete(j);
	j = call(d.port, "POST", "/api/finetune/validate_custom_model",
		 "{\"repo_name\":\"FacebookAI/roberta-base\",\"task\":"
		 "\"extractive-question-answering\"}",
		 200);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "valid")));
	cJSON_Delete(j);
	/* set_custom_model keeps the choice as a custom model; an unknown one is a 422. */
	j = call(d.port, "POST", "/api/finetune/set_custom_model",
		 "{\"repo_name\":\"Qwen/Qwen2.5-7B-Instruct\"}", 200);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "success")));
	ck_assert_str_eq(str(j, "selected_model"), "Qwen/Qwen2.5-7B-Instruct");
	cJSON_Delete(j);
	j = call(d.port, "GET", "/api/finetune/session", NULL, 200);
	ck_assert_str_eq(str(j, "selected_model"), "Qwen/Qwen2.5-7B-Instruct");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "is_custom_model")));
	cJSON_Delete(j);
	j = call(d.port, "GET", "/api/finetune/load_settings", NULL, 200);
	ck_assert_str_eq(str(cJSON_GetObjectItem(j, "default_values"), "model_name"),
			 "Qwen/Qwen2.5-7B-Instruct");
	cJSON_Delete(j);
	j = call(d.port, "POST", "/api/finetune/set_custom_model",
		 "{\"repo_name\":\"lama-3.1-8b\"}", 422);
	ck_assert_str_eq(str(cJSON_GetObjectItem(j, "error"), "field"), "repo_name");
	ck_assert_ptr_nonnull(
		strstr(str(cJSON_GetObjectItem(j, "error"), "message"), "llama-3.1-8b"));
	cJSON_Delete(j);
	/* The refused choice did not replace the kept one. */
	j = call(d.port, "GET", "/api/finetune/session", NULL, 200);
	ck_assert_str_eq(str(j, "selected_model"), "Qwen/Qwen2.5-7B-Instruct");
	cJSON_Delete(j);
	t_daemon_stop(&d);
	t_rmtree(data);
	free(data);
}
END_TEST

START_TEST(custom_model_bodies_are_checked_naming_the_field)
{
	static const struct bad_body cases[] = {
		{"{}", 422, "missing_field", "repo_name"},
		{"{\"repo_name\":\"  \"}", 422, "invalid_value", "repo_name"},
		{"{\"repo_name\":7}", 422, "invalid_value", "repo_name"},
		{"{\"repo_name\":\"a\",\"x\":1}", 422, "unknown_field", "x"},
		{"{\"repo_name\":\"qwen2.5-7b\",\"task\":\"poetry\"}", 422, "invalid_value",
		 "task"},
		{"[1]", 400, "invalid_json", NULL},
	};
	static const char *const paths[] = {"/api/finetune/validate_custom_model",
					    "/api/finetune/set_custom_model"};
	struct t_daemon d;
	char *data = t_mkdtemp();

	start(&d, data, NULL);
	for (size_t p = 0; p < 2; p++)
		assert_bad_bodies(d.port, paths[p], cases, sizeof(cases) / sizeof(cases[0]));
	t_daemon_stop(&d);
	t_rmtree(data);
	free(data);
}
END_TEST

START_TEST(the_session_flow_gives_the_fitted_settings_of_the_chosen_model)
{
	struct t_daemon d;
	char *data = t_mkdtemp(), body[512];
	cJSON *det, *j, *dv, *pick_settings = NULL, *it;
	const char *pick;

	start(&d, data, NULL);
	/* Before any detect: nothing known, and no settings to load. */
	j = call(d.port, "GET", "/api/finetune/session", NULL, 200);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "task")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "selected_model")));
	cJSON_Delete(j);
	cJSON_Delete(call(d.port, "GET", "/api/finetune/load_settings", NULL, 409));

	det = call(d.port, "POST", "/api/finetune/detect",
		   "{\"task\":\"text-generation\",\"hardware_profile\":\"rtx-4090\"}", 200);
	/* Not the recommended model: the second offered, whose settings differ in general. */
	pick = cJSON_GetArrayItem(cJSON_GetObjectItem(det, "possible_options"), 1)->valuestring;
	cJSON_ArrayForEach(it,
			   cJSON_GetObjectItem(det, "model_settings")) if (strcmp(str(it, "model"),
										  pick) == 0)
		pick_settings = cJSON_GetObjectItem(it, "settings");
	ck_assert_ptr_nonnull(pick_settings);
	snprintf(body, sizeof(body), "{\"selected_model\":\"%s\"}", pick);
	j = call(d.port, "POST", "/api/finetune/set_model", body, 200);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "success")));
	ck_assert_str_eq(str(j, "selected_model"), pick);
	cJSON_Delete(j);
	j = call(d.port, "GET", "/api/finetune/session", NULL, 200);
	ck_assert_str_eq(str(j, "task"), "text-generation");
	ck_assert_str_eq(str(j, "selected_model"), pick);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "is_custom_model")));
	cJSON_Delete(j);
	/* The defaults are what the estimator fitted for that model on that hardware. */
	j = call(d.port, "GET", "/api/finetune/load_settings", NULL, 200);
	dv = cJSON_GetObjectItem(j, "default_values");
	cJSON_ArrayForEach(it, pick_settings)
		ck_assert_msg(cJSON_Compare(it, cJSON_GetObjectItem(dv, it->string), true),
			      "%s differs", it->string);
	ck_assert_str_eq(str(dv, "model_name"), pick);
	ck_assert_str_eq(str(dv, "task"), "text-generation");
	ck_assert_str_eq(str(dv, "compute_specs"), str(det, "profile"));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "fits")));
	/* The settings page offers info's lists and selects default_values' provider and
	 * strategy: both must be among them, and info says the plan chose them. */
	{
		cJSON *info = call(d.port, "GET", "/api/info", NULL, 200);
		cJSON *planned = cJSON_GetObjectItem(info, "planned");
		assert_listed(info, "available_providers", str(dv, "provider"));
		assert_listed(info, "available_strategies", str(dv, "strategy"));
		ck_assert_str_eq(str(planned, "model"), pick);
		ck_assert_str_eq(str(planned, "provider"), str(dv, "provider"));
		ck_assert_str_eq(str(planned, "strategy"), str(dv, "strategy"));
		ck_assert_str_eq(str(planned, "method"), str(dv, "method"));
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(planned, "fits")));
		cJSON_Delete(info);
	}
	cJSON_Delete(j);

	/* A model the catalog does not know: custom, and the tier's settings, not fitted. */
	cJSON_Delete(call(d.port, "POST", "/api/finetune/set_model",
			  "{\"selected_model\":\"someone/custom-7b\"}", 200));
	j = call(d.port, "GET", "/api/finetune/session", NULL, 200);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "is_custom_model")));
	cJSON_Delete(j);
	j = call(d.port, "GET", "/api/finetune/load_settings", NULL, 200);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "fits")));
	ck_assert_ptr_nonnull(str(j, "explanation"));
	/* The tier's template, never the recommended model's fitted settings. */
	dv = cJSON_GetObjectItem(j, "default_values");
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(det, "tier_settings"))
		ck_assert_msg(cJSON_Compare(it, cJSON_GetObjectItem(dv, it->string), true),
			      "%s is not the tier's", it->string);
	cJSON_Delete(j);
	/* A new detect forgets the choice, as ModelForge does. */
	cJSON_Delete(
		call(d.port, "POST", "/api/finetune/detect", "{\"task\":\"summarization\"}", 200));
	j = call(d.port, "GET", "/api/finetune/session", NULL, 200);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "selected_model")));
	ck_assert_str_eq(str(j, "task"), "summarization");
	cJSON_Delete(j);
	j = call(d.port, "GET", "/api/info", NULL, 200);
	ck_assert_str_eq(str(j, "app_name"), "rigfit");
	cJSON_Delete(j);
	cJSON_Delete(det);
	t_daemon_stop(&d);
	t_rmtree(data);
	free(data);
}
END_TEST

START_TEST(set_model_refuses_bad_bodies_naming_the_field)
{
	static const struct bad_body cases[] = {
		{"{}", 422, "missing_field", "selected_model"},
		{"{\"selected_model\":\"\"}", 422, "invalid_value", "selected_model"},
		{"{\"selected_model\":7}", 422, "invalid_value", "selected_model"},
		{"{\"selected_model\":\"a\",\"x\":1}", 422, "unknown_field", "x"},
		{"[1]", 400, "invalid_json", NULL},
		{"{nope", 400, "invalid_json", NULL},
	};
	struct t_daemon d;
	char *data = t_mkdtemp(), long_model[400];

	start(&d, data, NULL);
	assert_bad_bodies(d.port, "/api/finetune/set_model", cases,
			  sizeof(cases) / sizeof(cases[0]));
	memset(long_model, 'm', sizeof(long_model));
	memcpy(long_model, "{\"selected_model\":\"", 19);
	memcpy(long_model + sizeof(long_model) - 3, "\"}", 3);
	cJSON_Delete(call(d.port, "POST", "/api/finetune/set_model", long_model, 422));
	t_daemon_stop(&d);
	t_rmtree(data);
	free(data);
}
END_TEST

START_TEST(an_allowed_origin_preflight_is_answered_on_any_path)
{
	struct t_daemon d;
	struct t_resp r;
	char *data = t_mkdtemp(), *acao;
	const char *extra[] = {"--cors-origin", "http://app.test", NULL};
	const char pre[] = "Origin: http://app.test\r\nAccess-Control-Request-Method: POST\r\n"
			   "Access-Control-Request-Headers: content-type\r\n";

	start(&d, data, extra);
	ck_assert_int_eq(t_http(d.port, "OPTIONS", "/api/finetune/set_model", pre, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 204);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "OPTIONS", "/api/no/such/route", pre, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 204);
	acao = t_resp_header(&r, "Access-Control-Allow-Origin");
	ck_assert_str_eq(acao, "http://app.test");
	free(acao);
	t_resp_free(&r);
	/* Another origin is refused, and a plain OPTIONS of an unknown path is still a 404. */
	ck_assert_int_eq(
		t_http(d.port, "OPTIONS", "/api/finetune/set_model",
		       "Origin: http://evil.test\r\nAccess-Control-Request-Method: POST\r\n", NULL,
		       0, &r),
		0);
	ck_assert_int_eq(r.status, 403);
	t_resp_free(&r);
	ck_assert_int_eq(t_http(d.port, "OPTIONS", "/api/no/such/route", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 404);
	t_resp_free(&r);
	t_daemon_stop(&d);
	t_rmtree(data);
	free(data);
}
END_TEST

/* A built "web app": index.html, an asset, a hidden file and a link out of the directory. */
static char *make_app(const char *page)
{
	char *app = t_mkdtemp(), *link = t_path(app, "static/passwd.js");

	t_put(app, "index.html", page);
	t_put(app, "static/app.js", "window.appLoaded = true;\n");
	t_put(app, ".env", "SECRET=1\n");
	ck_assert_int_eq(symlink("/etc/passwd", link), 0);
	free(link);
	return app;
}

START_TEST(static_dir_serves_the_app_same_origin_and_keeps_the_api)
{
	struct t_daemon d;
	struct t_resp r;
	char *data = t_mkdtemp(), *app = make_app("<!doctype html><title>app</title>\n"), *ct;
	const char *extra[] = {"--static-dir", app, NULL};
	static const struct {
		const char *path;
		int status;
		const char *has;
	} cases[] = {
		{"/", 200, "<title>app</title>"},
		{"/finetune/settings", 200, "<title>app</title>"}, /* a client-side route */
		{"/static/app.js", 200, "appLoaded"},
		{"/static/missing.js", 404, "not_found"}, /* not HTML where a script was asked */
		{"/static/passwd.js", 404, "not_found"},  /* a link out of the directory */
		{"/.env", 404, "not_found"},              /* hidden files are never served */
		{"/api/nope", 404, "\"error\""},
		{"/api/info", 200, "\"app_name\":\"rigfit\""},
		{"/healthz", 200, "\"status\""},
	};

	start(&d, data, extra);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(t_http(d.port, "GET", cases[i].path, NULL, NULL, 0, &r), 0);
		ck_assert_msg(r.status == cases[i].status && strstr(r.body, cases[i].has),
			      "%s: %d %s", cases[i].path, r.status, r.body);
		ck_assert_ptr_null(strstr(r.body, "root:"));
		ck_assert_ptr_null(strstr(r.body, "SECRET"));
		if (i == 2) {
			ct = t_resp_header(&r, "Content-Type");
			ck_assert_ptr_nonnull(strstr(ct, "javascript"));
			free(ct);
		}
		t_resp_free(&r);
	}
	{
		static const char raw[] = "GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n";
		ck_assert_int_eq(t_http_raw(d.port, raw, sizeof(raw) - 1, &r, 5000), 0);
	}
	ck_assert_ptr_null(strstr(r.body, "root:"));
	t_resp_free(&r);
	t_daemon_stop(&d);
	/* A directory without index.html is refused at start, with a reason. */
	{
		char *empty = t_mkdtemp();
		const char *bad[] = {"--static-dir", empty, NULL};
		struct t_daemon d2;
		char *log;
		ck_assert_int_eq(t_daemon_try_start(&d2, bad, 20000), 2);
		log = t_daemon_log(&d2);
		ck_assert_ptr_nonnull(strstr(log, "has no readable index.html"));
		free(log);
		t_rmtree(d2.dir);
		free(d2.dir);
		free(d2.log);
		t_rmtree(empty);
		free(empty);
	}
	t_rmtree(app);
	t_rmtree(data);
	free(app);
	free(data);
}
END_TEST

/* ModelForge's calls, in the order its pages make them, with the answers written into the
 * page for the test to read. ?api=ORIGIN sends them to another origin (CORS). */
static const char flow_page[] =
	"<!doctype html><html><head><title>flow</title></head><body><pre id=\"out\">pending</pre>\n"
	"<script>\n"
	"const api = new URLSearchParams(location.search).get('api') || '';\n"
	"const seen = {};\n"
	"const json = {'Content-Type': 'application/json'};\n"
	"async function call(name, path, init) {\n"
	"  const r = await fetch(api + path, init);\n"
	"  seen[name] = {status: r.status, body: await r.json()};\n"
	"  return seen[name].body;\n"
	"}\n"
	"(async () => {\n"
	"  try {\n"
	"    await call('info', '/api/info');\n"
	"    const d = await call('detect', '/api/finetune/detect', {method: 'POST', headers: "
	"json, body: JSON.stringify({task: 'text-generation'})});\n"
	"    const pick = (d.possible_options && d.possible_options[0]) || 'Qwen/Qwen2.5-0.5B';\n"
	"    seen.pick = pick;\n"
	"    await call('set_model', '/api/finetune/set_model', {method: 'POST', headers: json, "
	"body: JSON.stringify({selected_model: pick})});\n"
	"    await call('load_settings', '/api/finetune/load_settings');\n"
	"    await call('session', '/api/finetune/session');\n"
	/* "Use Custom Model": a typo first, then a real repository, as the page sends them. */
	"    const custom = (name) => ({method: 'POST', headers: json, body: "
	"JSON.stringify({repo_name: name.trim()})});\n"
	"    const typo = await call('validate_typo', '/api/finetune/validate_custom_model', "
	"custom('lama-3.1-8b'));\n"
	/* What the page renders for a failed validation: React refuses an object there. */
	"    seen.typo_shown = (typo && typo.error) || 'Validation failed';\n"
	"    seen.typo_shown_type = typeof seen.typo_shown;\n"
	"    const v = await call('validate_custom_model', "
	"'/api/finetune/validate_custom_model', custom('Qwen/Qwen2.5-7B-Instruct '));\n"
	"    seen.custom_valid = seen.validate_custom_model.status === 200 && v.valid === true;\n"
	"    await call('set_custom_model', '/api/finetune/set_custom_model', "
	"custom('Qwen/Qwen2.5-7B-Instruct'));\n"
	/* The settings page: info's lists and the loaded defaults, which select among them. */
	"    const info = await call('settings_info', '/api/info');\n"
	"    const ls = await call('settings_load', '/api/finetune/load_settings');\n"
	"    await call('settings_session', '/api/finetune/session');\n"
	"    const dv = ls.default_values || {};\n"
	"    seen.provider_listed = (info.available_providers || ['huggingface'])"
	".includes(dv.provider || 'huggingface');\n"
	"    seen.strategy_listed = (info.available_strategies || ['sft'])"
	".includes(dv.strategy || 'sft');\n"
	"  } catch (e) { seen.error = String(e); }\n"
	"  document.getElementById('out').textContent = JSON.stringify(seen);\n"
	"})();\n"
	"</script></body></html>\n";

/* Loads url in headless Chromium and returns what the page wrote into #out, parsed. */
static cJSON *run_page(const char *url)
{
	const char *extra[] = {"--virtual-time-budget=30000", "--dump-dom", NULL};
	char *out = NULL, *log = NULL;
	const char *start, *end;
	cJSON *j;
	int rc = t_chromium(url, extra, &out, &log, 120000);

	ck_assert_msg(rc == 0, "chromium exited %d: %s", rc, log ? log : "");
	start = out ? strstr(out, "<pre id=\"out\">") : NULL;
	ck_assert_msg(start != NULL, "no output element: %s", out);
	start += strlen("<pre id=\"out\">");
	end = strstr(start, "</pre>");
	ck_assert_ptr_nonnull(end);
	j = cJSON_ParseWithLength(start, (size_t)(end - start));
	ck_assert_msg(j != NULL, "the page wrote: %.*s", (int)(end - start), start);
	free(out);
	free(log);
	return j;
}

/* Asserts every call of the flow answered 200 and the session holds the page's choice. */
static void assert_flow(const cJSON *seen)
{
	static const char *const calls[] = {"info",
					    "detect",
					    "set_model",
					    "load_settings",
					    "session",
					    "validate_typo",
					    "validate_custom_model",
					    "set_custom_model",
					    "settings_info",
					    "settings_load",
					    "settings_session"};
	const char *pick = str(seen, "pick");

	ck_assert_msg(!cJSON_GetObjectItem(seen, "error"), "page error: %s", str(seen, "error"));
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		const cJSON *c = cJSON_GetObjectItem(seen, calls[i]);
		ck_assert_msg(c && cJSON_GetObjectItem(c, "status")->valueint == 200, "%s: %s",
			      calls[i], cJSON_PrintUnformatted(c));
	}
	ck_assert_ptr_nonnull(pick);
	ck_assert_str_eq(str(cJSON_GetObjectItem(cJSON_GetObjectItem(seen, "session"), "body"),
			     "selected_model"),
			 pick);
	ck_assert_str_eq(
		str(cJSON_GetObjectItem(
			    cJSON_GetObjectItem(cJSON_GetObjectItem(seen, "load_settings"), "body"),
			    "default_values"),
		    "model_name"),
		pick);
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(seen, "detect"), "body"),
		"available_diskspace_gb")));
	/* The custom model: a typo is shown as text naming the model meant; a real one is
	 * valid, kept, and the settings page loads it with a provider and strategy it lists. */
	ck_assert_str_eq(str(seen, "typo_shown_type"), "string");
	ck_assert_ptr_nonnull(strstr(str(seen, "typo_shown"), "llama-3.1-8b"));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(seen, "custom_valid")));
	ck_assert_str_eq(
		str(cJSON_GetObjectItem(cJSON_GetObjectItem(seen, "settings_session"), "body"),
		    "selected_model"),
		"Qwen/Qwen2.5-7B-Instruct");
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(seen, "provider_listed")));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(seen, "strategy_listed")));
}

START_TEST(modelforge_calls_answer_in_a_real_browser)
{
	struct t_daemon web, api;
	char *data = t_mkdtemp(), *data2 = t_mkdtemp(), *app = make_app(flow_page);
	const char *extra[] = {"--static-dir", app, NULL};
	char url[128], origin[64];
	cJSON *seen;

	if (t_under_valgrind()) {
		printf("modelforge: the browser is not run under valgrind\n");
		t_rmtree(app);
		free(app);
		t_rmtree(data);
		free(data);
		t_rmtree(data2);
		free(data2);
		return;
	}
	/* Same origin: the daemon serves the app. */
	start(&web, data, extra);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", web.port);
	seen = run_page(url);
	assert_flow(seen);
	cJSON_Delete(seen);
	/* Cross-origin: the page from one daemon, the API of another that allows its origin;
	 * the JSON POSTs need a preflight, which must pass for the flow to go on. */
	snprintf(origin, sizeof(origin), "http://127.0.0.1:%d", web.port);
	{
		const char *cors[] = {"--cors-origin", origin, NULL};
		start(&api, data2, cors);
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/?api=http://127.0.0.1:%d", web.port,
		 api.port);
	seen = run_page(url);
	assert_flow(seen);
	cJSON_Delete(seen);
	t_daemon_stop(&api);
	t_daemon_stop(&web);
	t_rmtree(app);
	t_rmtree(data);
	t_rmtree(data2);
	free(app);
	free(data);
	free(data2);
}
END_TEST

Suite *modelforge_suite(void)
{
	Suite *s = suite_create("modelforge");
	TCase *tc = tcase_create("modelforge");

	tcase_set_timeout(tc, t_under_valgrind() ? 1800 : 300);
	tcase_add_test(tc, detect_reports_the_data_disk_and_logical_cores_of_this_host);
	tcase_add_test(tc, the_session_flow_gives_the_fitted_settings_of_the_chosen_model);
	tcase_add_test(tc, set_model_refuses_bad_bodies_naming_the_field);
	tcase_add_test(tc, info_lists_what_the_planner_chooses_from);
	tcase_add_test(tc, custom_models_resolve_as_the_estimator_resolves_them);
	tcase_add_test(tc, custom_model_bodies_are_checked_naming_the_field);
	tcase_add_test(tc, an_allowed_origin_preflight_is_answered_on_any_path);
	tcase_add_test(tc, static_dir_serves_the_app_same_origin_and_keeps_the_api);
	tcase_add_test(tc, modelforge_calls_answer_in_a_real_browser);
	suite_add_tcase(s, tc);
	return s;
}
