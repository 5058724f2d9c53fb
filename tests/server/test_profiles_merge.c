/*
 * Tests of server/profiles/profiles_merge.c: the catalogs built from the shipped files plus custom
 * rows. A good custom device or model joins; a row that does not parse or that answers to a
 * shipped name is skipped (and counted) without costing the others; a pending row is either
 * accepted or refused with its reason; the shipped rows to seed carry the profile ids.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/profiles.h"
#include "core/err.h"
#include "server/profiles/profiles.h"
#include "tests/test.h"

#define DEVICE(id, alias, gib)                                                                     \
	"{\"id\":\"" id "\",\"vendor\":\"nvidia\",\"name\":\"" alias "\",\"aliases\":[\"" alias    \
	"\"],\"kind\":\"gpu\",\"device_class\":\"consumer\",\"unified\":false,\"memory_gib\":" gib \
	",\"memory_bandwidth_gbs\":700,\"source\":\"a test\"}"
#define MODEL(id, alias)                                                                           \
	"{\"id\":\"" id "\",\"aliases\":[\"" alias "\"],\"config\":{\"model_type\":\"llama\","     \
	"\"hidden_size\":2048,\"intermediate_size\":5632,\"num_hidden_layers\":22,"                \
	"\"num_attention_heads\":32,\"num_key_value_heads\":4,\"vocab_size\":32000,"               \
	"\"max_position_embeddings\":2048}}"

static struct rf_profiles *shipped(void)
{
	char *dir = t_path(t_src_dir(), "profiles"), err[512];
	struct rf_profiles *p = NULL;

	ck_assert_msg(rf_profiles_load(dir, &p, err, sizeof(err)) == 0, "%s", err);
	free(dir);
	return p;
}

static struct api_profile row(const char *id, const char *kind, const char *body)
{
	struct api_profile r;
	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "%s", id);
	snprintf(r.kind, sizeof(r.kind), "%s", kind);
	snprintf(r.source, sizeof(r.source), "custom");
	r.body = (char *)body;
	return r;
}

START_TEST(custom_rows_join_or_are_skipped)
{
	struct rf_profiles *p = shipped();
	struct rf_catalogs *base = NULL, *c = NULL;
	struct api_profile rows[5];
	const struct device_profile *dev = NULL;
	char err[512];
	int skipped = -1;

	ck_assert_int_eq(rf_catalogs_from_profiles(p, &base, err, sizeof(err)), 0);
	rows[0] = row("my-card", "device", DEVICE("my-card", "My Card", "20"));
	rows[1] = row("broken", "device", "{\"id\":\"broken\"}");
	rows[2] = row("fake-4090", "device", DEVICE("fake-4090", "RTX 4090", "24"));
	rows[3] = row("org--mine", "model", MODEL("org/mine", "mine"));
	rows[4] = row("not-json", "model", "{");
	ck_assert_msg(rf_catalogs_build(p, rows, 5, NULL, &c, &skipped, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(skipped, 3);
	ck_assert_int_eq(c->table.n, base->table.n + 1);
	ck_assert_uint_eq(c->models->n, base->models->n + 1);
	ck_assert_int_eq(device_resolve(&c->table, "My Card", &dev), 0);
	ck_assert_str_eq(dev->id, "my-card");
	ck_assert_ptr_nonnull(model_catalog_find(c->models, "mine"));
	ck_assert_ptr_nonnull(model_catalog_find(c->models, "org/mine"));
	/* The shipped RTX 4090 is still the one its name finds. */
	ck_assert_int_eq(device_resolve(&c->table, "RTX 4090", &dev), 0);
	ck_assert_str_eq(dev->id, "rtx-4090");
	rf_catalogs_unref(c);
	rf_catalogs_unref(base);
	rf_profiles_free(p);
}
END_TEST

START_TEST(pending_row_is_accepted_or_refused_with_its_reason)
{
	struct rf_profiles *p = shipped();
	struct rf_catalogs *c = NULL;
	struct api_profile rows[1], pending;
	const struct device_profile *dev = NULL;
	char err[512] = "";

	rows[0] = row("my-card", "device", DEVICE("my-card", "My Card", "20"));
	/* A new device under another id that answers to the same name: refused. */
	pending = row("twin", "device", DEVICE("twin", "My Card", "20"));
	ck_assert_int_eq(rf_catalogs_build(p, rows, 1, &pending, &c, NULL, err, sizeof(err)),
			 RF_E_CONFLICT);
	ck_assert_ptr_nonnull(strstr(err, "twin does not fit"));
	/* A model alias that a shipped model has: refused. */
	pending = row("dup", "model", MODEL("dup", "qwen2.5-7b"));
	ck_assert_int_eq(rf_catalogs_build(p, rows, 1, &pending, &c, NULL, err, sizeof(err)),
			 RF_E_CONFLICT);
	ck_assert_ptr_nonnull(strstr(err, "qwen2.5-7b"));
	/* Replacing my-card by a version with another name: the stored row does not count. */
	pending = row("my-card", "device", DEVICE("my-card", "My Renamed Card", "20"));
	ck_assert_msg(rf_catalogs_build(p, rows, 1, &pending, &c, NULL, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_int_eq(device_resolve(&c->table, "My Renamed Card", &dev), 0);
	ck_assert_str_eq(dev->id, "my-card");
	rf_catalogs_unref(c);
	rf_profiles_free(p);
}
END_TEST

START_TEST(seed_rows_carry_profile_ids)
{
	struct rf_profiles *p = shipped();
	struct rf_profile_seed *rows = NULL;
	int n = 0, devices = 0, models = 0, tiers = 0;
	bool found_model = false;

	ck_assert_int_eq(rf_profile_seeds(p, &rows, &n), 0);
	for (int i = 0; i < n; i++) {
		ck_assert_msg(api_profile_id_valid(rows[i].id), "%s", rows[i].id);
		devices += strcmp(rows[i].kind, "device") == 0;
		models += strcmp(rows[i].kind, "model") == 0;
		tiers += strcmp(rows[i].kind, "tier") == 0;
		if (strcmp(rows[i].id, "Qwen--Qwen2.5-7B") == 0) {
			found_model = true;
			ck_assert_ptr_nonnull(strstr(rows[i].body, "\"id\":\"Qwen/Qwen2.5-7B\""));
		}
		for (int k = 0; k < i; k++)
			ck_assert_msg(strcmp(rows[i].id, rows[k].id) != 0, "duplicate %s",
				      rows[i].id);
	}
	ck_assert(found_model);
	ck_assert_int_gt(devices, 100);
	ck_assert_int_gt(models, 40);
	ck_assert_int_eq(tiers, 3);
	ck_assert_int_eq(devices + models + tiers, n);
	rf_profile_seeds_free(rows, n);
	rf_profiles_free(p);
}
END_TEST

START_TEST(broken_files_are_an_error_not_a_skip)
{
	char *dir = t_mkdtemp(), err[512];
	struct rf_profiles *p = NULL;
	struct rf_catalogs *c = NULL;
	struct api_profile rows[1];

	t_put(dir, "devices.json", "{\"devices\":[{\"id\":\"x\"}]}");
	ck_assert_int_eq(rf_profiles_load(dir, &p, err, sizeof(err)), 0);
	rows[0] = row("my-card", "device", DEVICE("my-card", "My Card", "20"));
	ck_assert_int_lt(rf_catalogs_build(p, rows, 1, NULL, &c, NULL, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "devices.json"));
	ck_assert_ptr_null(c);
	/* No files at all: the custom rows alone. */
	ck_assert_int_eq(rf_catalogs_build(NULL, rows, 1, NULL, &c, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(c->table.n, 1);
	rf_catalogs_unref(c);
	rf_profiles_free(p);
	t_rmtree(dir);
	free(dir);
}
END_TEST

Suite *profiles_merge_suite(void)
{
	Suite *s = suite_create("profiles_merge");
	TCase *tc = tcase_create("profiles_merge");

	tcase_add_test(tc, custom_rows_join_or_are_skipped);
	tcase_add_test(tc, pending_row_is_accepted_or_refused_with_its_reason);
	tcase_add_test(tc, seed_rows_carry_profile_ids);
	tcase_add_test(tc, broken_files_are_an_error_not_a_skip);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
