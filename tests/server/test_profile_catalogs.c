/*
 * Tests of the typed catalogs of tiers.json and quality.json (api/catalog/, built by
 * server/profiles/profiles.c): both files are read into their structs once, when the profiles
 * are loaded, so the routes that use them answer after the parsed files are freed; custom rows
 * merged into the catalogs keep the files' tables; a bad file fails the load with its name, the
 * tier and the member, in the library and in the CLI, as a bad devices.json does.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/catalog/quality.h"
#include "api/catalog/tiers.h"
#include "api/finetune_detect.h"
#include "api/recommend.h"
#include "core/err.h"
#include "server/profiles/profiles.h"
#include "tests/api/profiles_fixture.h"
#include "tests/server/harness.h"
#include "tests/test.h"

#define CARD                                                                                       \
	"{\"id\":\"my-card\",\"vendor\":\"nvidia\",\"name\":\"My Card\",\"aliases\":[\"My "        \
	"Card\"],\"kind\":\"gpu\",\"device_class\":\"consumer\",\"unified\":false,"                \
	"\"memory_gib\":20,\"memory_bandwidth_gbs\":700,\"source\":\"a test\"}"

/* A tiers.json of one tier whose settings members are given. */
#define ONE_TIER(settings) "{\"tiers\":[{\"id\":\"low_end\",\"settings\":{" settings "}}]}"
#define GOOD_SETTINGS                                                                              \
	"\"max_seq_length\":4,\"use_4bit\":false,\"gradient_accumulation_steps\":2,"               \
	"\"per_device_train_batch_size\":3"

/* Loads the files of dir (NULL: the shipped profiles) and builds their catalogs; returns the
 * rf_err, with the message in err. With keep, the loaded files are left in *keep and the
 * catalogs are not built. */
static int load_dir(const char *dir, struct rf_profiles **keep, char *err, size_t errlen)
{
	char *shipped = dir ? NULL : t_path(t_src_dir(), "profiles");
	struct rf_profiles *p = NULL;
	struct rf_catalogs *c = NULL;
	int rc = rf_profiles_load(dir ? dir : shipped, &p, err, errlen);

	free(shipped);
	if (rc == 0 && keep) {
		*keep = p;
		return 0;
	}
	if (rc == 0)
		rc = rf_catalogs_from_profiles(p, &c, err, errlen);
	rf_catalogs_unref(c);
	rf_profiles_free(p);
	return rc;
}

/* POST /api/recommend for chat on an RTX 4090 with env; returns the status (a 200 must
 * recommend something). */
static int recommend(const struct api_env *env)
{
	cJSON *j = NULL;
	int status = t_route_post(api_recommend, env, "/api/recommend",
				  "{\"use_case\":\"chat\",\"hardware_profile\":\"rtx-4090\"}", &j);

	if (status == 200)
		ck_assert_int_gt(cJSON_GetArraySize(cJSON_GetObjectItem(j, "recommendations")), 0);
	cJSON_Delete(j);
	return status;
}

START_TEST(the_tables_are_read_at_load_and_outlive_the_files)
{
	struct rf_profiles *p = NULL;
	struct rf_catalogs *c = NULL;
	struct api_profile custom;
	const cJSON *file_settings = NULL, *t;
	char *want, *got, err[512];
	cJSON *detect = NULL;
	const struct api_tier *mid;

	ck_assert_int_eq(load_dir(NULL, &p, err, sizeof(err)), 0);
	memset(&custom, 0, sizeof(custom));
	snprintf(custom.id, sizeof(custom.id), "my-card");
	snprintf(custom.kind, sizeof(custom.kind), "device");
	snprintf(custom.source, sizeof(custom.source), "custom");
	custom.body = CARD;
	/* With a custom row, so the merged catalogs are a new object holding the files' tables. */
	ck_assert_msg(rf_catalogs_build(p, &custom, 1, NULL, &c, NULL, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_ptr_nonnull(c->tiers);
	ck_assert_ptr_nonnull(c->quality);
	ck_assert_int_eq(c->tiers->n, 3);
	mid = api_tier_find(c->tiers, "mid_range");
	ck_assert_ptr_nonnull(mid);
	ck_assert_ptr_nonnull(api_tier_models(mid, "text-generation"));
	ck_assert_int_gt(c->quality->n_weights, 0);
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(rf_profiles_get(p, "tiers.json"), "tiers"))
	{
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t, "id")), "mid_range") == 0)
			file_settings = cJSON_GetObjectItem(t, "settings");
	}
	ck_assert_ptr_nonnull(file_settings);
	want = cJSON_PrintUnformatted(file_settings);
	/* The files' parsed trees are gone: every request below reads the structs alone. */
	rf_profiles_free(p);
	{
		struct api_env env = {.version = "test",
				      .cat.devices = &c->table,
				      .cat.models = c->models,
				      .cat.tiers = c->tiers,
				      .cat.quality = c->quality};
		ck_assert_int_eq(t_route_post(api_finetune_detect, &env, "/api/finetune/detect",
					      "{\"task\":\"text-generation\",\"hardware_profile\":"
					      "\"rtx-4090\",\"compute_specs\":\"mid_range\"}",
					      &detect),
				 200);
		ck_assert_int_eq(recommend(&env), 200);
		/* ... and the quality table is what recommend reads: without it, no answer. */
		env.cat.quality = NULL;
		ck_assert_int_eq(recommend(&env), 503);
	}
	/* tier_settings is the file's template, rendered from the struct. */
	got = cJSON_PrintUnformatted(cJSON_GetObjectItem(detect, "tier_settings"));
	ck_assert_str_eq(got, want);
	free(got);
	free(want);
	cJSON_Delete(detect);
	rf_catalogs_unref(c);
}
END_TEST

START_TEST(settings_render_in_the_files_order_whatever_order_they_come_in)
{
	cJSON *doc = cJSON_Parse(ONE_TIER(GOOD_SETTINGS)), *j;
	struct api_tier_table *t = malloc(sizeof(*t));
	char why[256], *s;

	ck_assert_ptr_nonnull(doc);
	ck_assert_ptr_nonnull(t);
	ck_assert_msg(api_tiers_from_json(doc, t, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(t->n, 1);
	ck_assert_int_eq(t->tiers[0].n_tasks, 0);
	ck_assert_ptr_null(api_tier_find(t, "high_end"));
	j = api_tier_settings_json(&t->tiers[0].settings);
	s = cJSON_PrintUnformatted(j);
	ck_assert_str_eq(s, "{\"use_4bit\":false,\"per_device_train_batch_size\":3,"
			    "\"gradient_accumulation_steps\":2,\"max_seq_length\":4}");
	free(s);
	cJSON_Delete(j);
	cJSON_Delete(doc);
	free(t);
}
END_TEST

START_TEST(a_bad_tiers_or_quality_file_fails_the_load)
{
	static const struct {
		const char *file, *text, *says;
	} bad[] = {
		{"tiers.json",
		 ONE_TIER("\"use_4bit\":true,\"per_device_train_batch_size\":1,"
			  "\"gradient_accumulation_steps\":8,\"max_seq_length\":0"),
		 "tiers.json: tier 1 (low_end): settings.max_seq_length: a whole number"},
		{"tiers.json", ONE_TIER(GOOD_SETTINGS ",\"learning_rate\":1"),
		 "tiers.json: tier 1 (low_end): settings.learning_rate: not a setting"},
		{"tiers.json", ONE_TIER("\"per_device_train_batch_size\":1"),
		 "tiers.json: tier 1 (low_end): settings.use_4bit: true or false"},
		{"tiers.json",
		 "{\"tiers\":[{\"id\":\"low_end\",\"settings\":{" GOOD_SETTINGS
		 "},\"models\":{\"text-generation\":[\"a/b\",7]}}]}",
		 "tiers.json: tier 1 (low_end): models.text-generation: ids are strings"},
		{"tiers.json",
		 "{\"tiers\":[{\"id\":\"x\",\"settings\":{" GOOD_SETTINGS
		 "}},{\"id\":\"x\",\"settings\":{" GOOD_SETTINGS "}}]}",
		 "tiers.json: tier 2 (x): id: repeated"},
		{"tiers.json", "{\"tiers\":{}}", "tiers.json: tiers: an array"},
		{"quality.json", "{\"tie_kld\":2}", "quality.json: tie_kld"},
		{"quality.json",
		 "{\"tie_kld\":0.001,\"floor\":\"Q4_K_M\",\"weights\":[{\"quant\":\"Q9_Z\","
		 "\"kld\":0.1}],\"kv_cache\":[],\"vllm\":{}}",
		 "quality.json: weights"},
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *dir = t_mkdtemp(), err[512] = "";
		t_put(dir, bad[i].file, bad[i].text);
		ck_assert_int_lt(load_dir(dir, NULL, err, sizeof(err)), 0);
		ck_assert_msg(strstr(err, bad[i].says), "case %zu: '%s' lacks '%s'", i, err,
			      bad[i].says);
		t_rmtree(dir);
		free(dir);
	}
}
END_TEST

/* The CLI refuses a bad quality.json as it refuses a bad devices.json: one line, exit 1. */
START_TEST(the_cli_names_the_bad_file)
{
	char *dir = t_mkdtemp(), *out = NULL, *err = NULL;
	const char *argv[] = {
		t_bin(), "estimate", "llama-3.1-8b", "--hardware-profile", "rtx-4090", "--profiles",
		dir,     NULL};

	t_put(dir, "quality.json", "{\"tie_kld\":-1}");
	ck_assert_int_eq(t_run(argv, &out, &err, 30000), 1);
	ck_assert_msg(strstr(err, "rigfit: profiles: quality.json: tie_kld"), "stderr: %s", err);
	free(out);
	free(err);
	t_rmtree(dir);
	free(dir);
}
END_TEST

Suite *profile_catalogs_suite(void)
{
	Suite *s = suite_create("profile_catalogs");
	TCase *tc = tcase_create("profile_catalogs");

	tcase_add_test(tc, the_tables_are_read_at_load_and_outlive_the_files);
	tcase_add_test(tc, settings_render_in_the_files_order_whatever_order_they_come_in);
	tcase_add_test(tc, a_bad_tiers_or_quality_file_fails_the_load);
	tcase_add_test(tc, the_cli_names_the_bad_file);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
