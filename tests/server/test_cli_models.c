/*
 * `rigfit models` through the real binary, over fixture folders written by the tests: a models
 * dir with a GGUF file and a Hugging Face folder, a Hugging Face cache repository and Ollama's
 * store with one tag. What is checked: the JSON is the route's (the same models, sizes and
 * places as GET /api/models answers over the same walk), --source and NAME narrow it, each
 * format prints, and bad options are one-line usage errors.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/api.h"
#include "server/config.h"
#include "server/models/models_list.h"
#include "tests/api/profiles_fixture.h"
#include "tests/server/harness.h"
#include "tests/server/hf_fixture.h"
#include "server/models/ollama_models.h"
#include "tests/test.h"

#define MAX_ARGS 20

static char *root, *profiles;
static struct rf_config cfg;
static char gguf_path[4400], folder[4400];

static void setup(void)
{
	root = t_mkdtemp();
	profiles = t_path(t_src_dir(), "profiles");
	t_models_cfg_under(root, &cfg);
	snprintf(gguf_path, sizeof(gguf_path), "%s/tiny.gguf", cfg.models_dirs[0]);
	t_gguf_write_tiny_at(gguf_path);
	snprintf(folder, sizeof(folder), "%s/Qwen2.5-0.5B", cfg.models_dirs[0]);
	t_hf_write_qwen05(folder);
	t_hf_cache_write_qwen05(cfg.hf_cache, "acme", "qwen-tuned",
				"0123456789abcdef0123456789abcdef01234567");
	t_ollama_write_tag(cfg.ollama_models, "tiny", "1b-q8_0");
}

static void teardown(void)
{
	t_rmtree(root);
	free(root);
	free(profiles);
}

/* Runs `rigfit models` with this suite's folders and profiles, then args (NULL-terminated).
 * Returns the exit status; out and err as t_run gives them. */
static int models(const char *const *args, char **out, char **err)
{
	const char *argv[MAX_ARGS + 12];
	int n = 0;

	argv[n++] = t_bin();
	argv[n++] = "models";
	argv[n++] = "--models-dir";
	argv[n++] = cfg.models_dirs[0];
	argv[n++] = "--hf-cache";
	argv[n++] = cfg.hf_cache;
	argv[n++] = "--ollama-models";
	argv[n++] = cfg.ollama_models;
	argv[n++] = "--profiles";
	argv[n++] = profiles;
	for (int i = 0; args[i] && i < MAX_ARGS; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return t_run(argv, out, err, 30000);
}

/* The JSON answer of `rigfit models ARGS --format json`, checked to exit 0. */
static cJSON *models_json(const char *const *args)
{
	const char *a[MAX_ARGS + 3];
	char *out = NULL, *err = NULL;
	int n = 0, rc;
	cJSON *j;

	while (args[n] && n < MAX_ARGS) {
		a[n] = args[n];
		n++;
	}
	a[n++] = "--format";
	a[n++] = "json";
	a[n] = NULL;
	rc = models(a, &out, &err);
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	j = cJSON_Parse(out);
	ck_assert_msg(j != NULL, "not JSON: %s", out);
	free(out);
	free(err);
	return j;
}

static int count(const cJSON *list)
{
	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(list, "models"));
}

/* The models GET /api/models answers over a walk of the same folders, with the catalog of the
 * shipped profiles. */
static cJSON *route_models(void)
{
	struct device_table devices;
	struct model_catalog *catalog;
	struct api_snapshot snap = {0};
	struct api_env env = {.version = "test"};
	struct api_request req = {.method = API_GET, .path = "/api/models", .query = ""};
	struct api_reply r = {0};
	cJSON *j, *list;

	t_profiles_load(&devices, &catalog, NULL);
	ck_assert_int_eq(rf_models_walk(&cfg, &snap.models), 0);
	env.cat.models = catalog;
	env.snapshot = &snap;
	ck_assert_int_eq(api_models_list(&env, &req, &r), 0);
	j = cJSON_ParseWithLength(r.body, r.len);
	ck_assert_ptr_nonnull(j);
	list = cJSON_DetachItemFromObjectCaseSensitive(j, "models");
	cJSON_Delete(j);
	api_reply_reset(&r);
	rf_models_free(&snap.models);
	t_profiles_free(&devices, &catalog, NULL);
	return list;
}

START_TEST(the_json_is_the_routes_over_the_same_folders)
{
	const char *none[] = {NULL};
	cJSON *j = models_json(none), *route = route_models();
	const cJSON *m;

	/* Every model, size and place, in the route's order; only the time of the walk differs. */
	ck_assert_msg(cJSON_Compare(cJSON_GetObjectItemCaseSensitive(j, "models"), route, true),
		      "the CLI's list is not the route's");
	ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "scanned_at")));
	m = t_models_find(j, folder);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(m, "where")->valuestring, "models_dir");
	/* Qwen2.5-0.5B's BF16 shards hold its 494,032,768 parameters at 2 bytes each. */
	ck_assert_double_gt(cJSON_GetObjectItemCaseSensitive(m, "size_bytes")->valuedouble,
			    2 * 494032768.0);
	ck_assert_ptr_nonnull(t_models_find(j, gguf_path));
	ck_assert_ptr_nonnull(t_models_find(j, "acme/qwen-tuned"));
	ck_assert_ptr_nonnull(t_models_find(j, "tiny:1b-q8_0"));
	ck_assert_ptr_nonnull(t_models_find(j, "meta-llama/Llama-3.1-8B"));
	cJSON_Delete(j);
	cJSON_Delete(route);
}
END_TEST

START_TEST(source_and_name_narrow_the_list)
{
	static const struct {
		const char *source, *id;
		int n;
	} one[] = {{"cache", "acme/qwen-tuned", 1},
		   {"ollama", "tiny:1b-q8_0", 1},
		   {"dir", "tiny.gguf", 2},
		   {"local", "acme/qwen-tuned", 4}};
	const char *catalog[] = {"--source", "catalog", NULL};
	const char *named[] = {"TINY", "--source", "local", NULL};
	cJSON *j;

	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		const char *a[] = {"--source", one[i].source, NULL};
		const cJSON *m;
		bool found = false;
		j = models_json(a);
		ck_assert_msg(count(j) == one[i].n, "%s: %d models", one[i].source, count(j));
		cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(j, "models"))
		{
			const char *id = cJSON_GetObjectItemCaseSensitive(m, "id")->valuestring;
			found = found || strstr(id, one[i].id) != NULL;
			ck_assert_str_ne(cJSON_GetObjectItemCaseSensitive(m, "where")->valuestring,
					 "catalog");
		}
		ck_assert_msg(found, "%s: %s not listed", one[i].source, one[i].id);
		cJSON_Delete(j);
	}
	j = models_json(catalog);
	ck_assert_ptr_null(t_models_find(j, "tiny:1b-q8_0"));
	ck_assert_ptr_nonnull(t_models_find(j, "meta-llama/Llama-3.1-8B"));
	cJSON_Delete(j);
	/* A name in any case: the GGUF file and Ollama's tag. */
	j = models_json(named);
	ck_assert_int_eq(count(j), 2);
	ck_assert_ptr_nonnull(t_models_find(j, gguf_path));
	ck_assert_ptr_nonnull(t_models_find(j, "tiny:1b-q8_0"));
	cJSON_Delete(j);
}
END_TEST

/* The "truncated" flag of place in j's sources (asserting the place is there). */
static bool source_truncated(const cJSON *j, const char *place, int *listed)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "sources"), place);

	ck_assert_msg(o != NULL, "no sources.%s", place);
	*listed = cJSON_GetObjectItemCaseSensitive(o, "listed")->valueint;
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "truncated"));
}

/* A models dir with more GGUF files than one place may list: it is cut at its cap and says
 * so, per place and overall, and the Hugging Face cache and Ollama's store are still listed
 * beside it (one global cap used to let the crowded dir hide them, silently). */
START_TEST(a_crowded_models_dir_is_truncated_without_hiding_the_others)
{
	const char *local[] = {"--source", "local", NULL};
	const char *cache[] = {"--source", "cache", NULL};
	const char *summary[] = {"--source", "local", "--format", "summary", NULL};
	char *out = NULL, *err = NULL;
	int listed;
	cJSON *j;

	for (int i = 0; i < RF_MODELS_PER_SOURCE + 10; i++) {
		char name[32];
		snprintf(name, sizeof(name), "models/m%05d.gguf", i);
		t_put(root, name, "");
	}
	j = models_json(local);
	ck_assert_ptr_nonnull(t_models_find(j, "acme/qwen-tuned"));
	ck_assert_ptr_nonnull(t_models_find(j, "tiny:1b-q8_0"));
	ck_assert(source_truncated(j, "models_dir", &listed));
	ck_assert_int_eq(listed, RF_MODELS_PER_SOURCE);
	ck_assert(!source_truncated(j, "hf_cache", &listed));
	ck_assert_int_eq(listed, 1);
	ck_assert(!source_truncated(j, "ollama", &listed));
	ck_assert_int_eq(listed, 1);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "truncated")));
	ck_assert_int_eq(count(j), RF_MODELS_PER_SOURCE + 2);
	cJSON_Delete(j);
	/* One place that was walked whole is not truncated. */
	j = models_json(cache);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(j, "truncated")));
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "sources"), "models_dir"));
	cJSON_Delete(j);
	ck_assert_int_eq(models(summary, &out, &err), 0);
	ck_assert_msg(strstr(out, "models_dir: the walk stopped at its cap") != NULL, "%s", out);
	free(out);
	free(err);
}
END_TEST

START_TEST(each_format_prints_and_bad_options_are_usage_errors)
{
	const char *summary[] = {"--source", "local", "--format", "summary", NULL};
	const char *table[] = {"--source", "cache", "--format", "table", NULL};
	const char *bad[][4] = {
		{"--source", "disk", NULL}, {"--format", "xml", NULL}, {"a", "b", NULL},
		{"--frobnicate", NULL},     {"--source", NULL},
	};
	const char *words[] = {"--source must be", "--format must be", "unexpected argument",
			       "unknown option", "needs a value"};
	char *out = NULL, *err = NULL;

	/* The catalog's rows say how each fits here (Q4_K_M at 4k tokens, as /api/estimate
	 * answers): a 1B model fits any machine this suite runs on. */
	{
		const char *cat[] = {"Llama-3.2-1B", "--source", "catalog",
				     "--format",     "summary",  NULL};
		ck_assert_int_eq(models(cat, &out, NULL), 0);
		ck_assert_msg(strstr(out, "FIT (Q4_K_M, 4k, here)"), "%s", out);
		ck_assert_msg(strstr(out, "meta-llama/Llama-3.2-1B") &&
				      strstr(out, " comfortable "),
			      "%s", out);
		/* The percentage is `rigfit estimate`'s utilization for the same question (the
		 * free memory moves between the two scans: one point either way). */
		{
			const char *est[] = {t_bin(), "estimate",   "Llama-3.2-1B", "--ctx",
					     "4096",  "--profiles", profiles,       NULL};
			char *eout = NULL;
			const char *pct = strstr(out, " comfortable ");
			cJSON *ej;
			const cJSON *u;
			ck_assert_int_eq(t_run(est, &eout, NULL, 30000), 0);
			ej = cJSON_Parse(eout);
			u = cJSON_GetObjectItemCaseSensitive(ej, "utilization");
			ck_assert_msg(cJSON_IsNumber(u), "%s", eout);
			ck_assert_msg(fabs(atof(pct + strlen(" comfortable ")) -
					   u->valuedouble * 100) <= 1.0,
				      "%s against %g", out, u->valuedouble);
			cJSON_Delete(ej);
			free(eout);
		}
		free(out);
		out = NULL;
	}
	ck_assert_int_eq(models(summary, &out, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "4 model(s), on disk as of "));
	ck_assert_ptr_nonnull(strstr(out, "SOURCE"));
	ck_assert_ptr_nonnull(strstr(out, "acme/qwen-tuned"));
	ck_assert_ptr_nonnull(strstr(out, " hf_cache "));
	/* Qwen2.5-0.5B in BF16: just under 1 GiB. */
	ck_assert_ptr_nonnull(strstr(out, " MiB"));
	ck_assert_int_ne(out[0], '{');
	free(out);
	ck_assert_int_eq(models(table, &out, NULL), 0);
	ck_assert_ptr_nonnull(strstr(out, "\nmodels:\n"));
	ck_assert_ptr_nonnull(strstr(out, "size_bytes"));
	ck_assert_ptr_nonnull(strstr(out, "acme/qwen-tuned"));
	free(out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(models(bad[i], &out, &err) == 2, "%s", bad[i][0]);
		ck_assert_str_eq(out, "");
		ck_assert_msg(strncmp(err, "rigfit: ", 8) == 0 &&
				      strchr(err, '\n') == err + strlen(err) - 1 &&
				      strstr(err, words[i]),
			      "%s: %s", bad[i][0], err);
		free(out);
		free(err);
	}
}
END_TEST

/* A host without a cache, a models dir or Ollama lists nothing there, and says so. */
START_TEST(an_empty_host_lists_nothing_on_disk)
{
	const char *argv[] = {t_bin(),
			      "models",
			      "--hf-cache",
			      "/nonexistent/hub",
			      "--ollama-models",
			      "/nonexistent/ollama",
			      "--source",
			      "local",
			      "--format",
			      "summary",
			      NULL};
	char *out = NULL;

	ck_assert_int_eq(t_run(argv, &out, NULL, 30000), 0);
	ck_assert_msg(strncmp(out, "0 model(s), on disk as of ", 26) == 0, "%s", out);
	ck_assert_ptr_null(strstr(out, "SOURCE"));
	free(out);
}
END_TEST

/* Where Ollama's store is looked for: --ollama-models, $OLLAMA_MODELS, the user's
 * ~/.ollama/models when it is there, else a system install's (/usr/share/ollama/...), which a
 * daemon under its own user reads. */
START_TEST(the_ollama_store_of_a_system_install_is_found)
{
	char *dir = t_mkdtemp(), *home = t_path(dir, "home"), *sys = t_path(dir, "system/models");
	char *user = t_path(dir, "home/.ollama/models"), buf[4200];
	const char *old_home = getenv("HOME");
	char *saved = old_home ? strdup(old_home) : NULL;

	unsetenv("OLLAMA_MODELS");
	setenv("HOME", home, 1);
	rf_ollama_dir_at(NULL, sys, buf, sizeof(buf));
	ck_assert_str_eq(buf, user); /* neither exists: the user's, where a pull would go */
	t_put(dir, "system/models/manifests/x", "{}");
	rf_ollama_dir_at(NULL, sys, buf, sizeof(buf));
	ck_assert_str_eq(buf, sys);
	t_put(dir, "home/.ollama/models/manifests/x", "{}");
	rf_ollama_dir_at(NULL, sys, buf, sizeof(buf));
	ck_assert_str_eq(buf, user); /* the user's own store first */
	setenv("OLLAMA_MODELS", sys, 1);
	rf_ollama_dir_at(NULL, sys, buf, sizeof(buf));
	ck_assert_str_eq(buf, sys);
	rf_ollama_dir_at("/given", sys, buf, sizeof(buf));
	ck_assert_str_eq(buf, "/given");
	unsetenv("OLLAMA_MODELS");
	if (saved)
		setenv("HOME", saved, 1);
	free(saved);
	t_rmtree(dir);
	free(dir);
	free(home);
	free(sys);
	free(user);
}
END_TEST

Suite *cli_models_suite(void)
{
	Suite *s = suite_create("cli_models");
	TCase *tc = tcase_create("cli_models");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, t_under_valgrind() ? 600 : 60);
	tcase_add_test(tc, the_json_is_the_routes_over_the_same_folders);
	tcase_add_test(tc, source_and_name_narrow_the_list);
	tcase_add_test(tc, a_crowded_models_dir_is_truncated_without_hiding_the_others);
	tcase_add_test(tc, each_format_prints_and_bad_options_are_usage_errors);
	tcase_add_test(tc, an_empty_host_lists_nothing_on_disk);
	tcase_add_test(tc, the_ollama_store_of_a_system_install_is_found);
	suite_add_tcase(s, tc);
	return s;
}
