/*
 * Tests of server/store/store_profiles.c against real SQLite files: the seed (insert, update
 * only what changed, prune what is no longer shipped, never touch a custom row), custom rows
 * (created, replaced, refused on a shipped id or another kind, the cap), delete rules, the
 * listing's filters and pages, and invalid input. A raw sqlite3 connection is the witness.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "server/embedded.h"
#include "server/store/store_profiles.h"
#include "tests/test.h"

static char *tmp_dir;
static char *db_path;
static struct rf_store *st;

static void setup(void)
{
	char err[512] = "";

	tmp_dir = t_mkdtemp();
	db_path = t_path(tmp_dir, "rigfit.db");
	ck_assert_msg(rf_store_open(db_path, rf_embed_migrations, &st, err, sizeof(err)) == 0, "%s",
		      err);
}

static void teardown(void)
{
	rf_store_close(st);
	st = NULL;
	t_rmtree(tmp_dir);
	free(tmp_dir);
	free(db_path);
}

/* Returns the text of the one-value query sql on a second connection (malloc'd; NULL for
 * no row). */
static char *raw_text(const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	char *out = NULL;

	ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0)) {
		const char *t = (const char *)sqlite3_column_text(s, 0);
		out = malloc(strlen(t) + 1);
		memcpy(out, t, strlen(t) + 1);
	}
	sqlite3_finalize(s);
	sqlite3_close(db);
	return out;
}

static void raw_eq(const char *sql, const char *want)
{
	char *got = raw_text(sql);
	ck_assert_msg(got && strcmp(got, want) == 0, "%s: got %s, want %s", sql,
		      got ? got : "(null)", want);
	free(got);
}

static struct rf_profile_seed seed_row(const char *id, const char *kind, const char *body)
{
	struct rf_profile_seed r;
	memset(&r, 0, sizeof(r));
	snprintf(r.id, sizeof(r.id), "%s", id);
	r.kind = kind;
	r.body = (char *)body;
	return r;
}

static struct api_profile custom_row(const char *id, const char *kind, const char *body)
{
	struct api_profile p;
	memset(&p, 0, sizeof(p));
	snprintf(p.id, sizeof(p.id), "%s", id);
	snprintf(p.kind, sizeof(p.kind), "%s", kind);
	p.body = (char *)body;
	return p;
}

START_TEST(seed_inserts_updates_and_prunes_shipped_rows_only)
{
	struct rf_profile_seed rows[3];
	struct api_profile custom = custom_row("mine", "device", "{\"id\":\"mine\"}"), got;
	bool created = false;
	int shadowed = -1;
	char *before;

	rows[0] = seed_row("a-card", "device", "{\"id\":\"a-card\"}");
	rows[1] = seed_row("org--m", "model", "{\"id\":\"org/m\"}");
	rows[2] = seed_row("low_end", "tier", "{\"id\":\"low_end\"}");
	ck_assert_int_eq(rf_store_profiles_seed(st, rows, 3, &shadowed), 0);
	ck_assert_int_eq(shadowed, 0);
	ck_assert_int_eq(rf_store_profile_put(st, &custom, &created), 0);
	ck_assert(created);
	raw_eq("SELECT count(*) FROM profiles WHERE source = 'shipped'", "3");
	raw_eq("SELECT kind FROM profiles WHERE id = 'org--m'", "model");

	/* Unchanged rows keep their updated_at; a changed one moves; a gone one goes. */
	before = raw_text("SELECT updated_at FROM profiles WHERE id = 'a-card'");
	usleep(5000);
	rows[1] = seed_row("org--m", "model", "{\"id\":\"org/m\",\"params_b\":1}");
	rows[2] = seed_row("mine", "device", "{\"id\":\"mine\",\"shipped\":true}");
	ck_assert_int_eq(rf_store_profiles_seed(st, rows, 3, &shadowed), 0);
	ck_assert_int_eq(shadowed, 1); /* "mine" is custom: kept as it is */
	raw_eq("SELECT updated_at FROM profiles WHERE id = 'a-card'", before);
	raw_eq("SELECT body FROM profiles WHERE id = 'org--m'",
	       "{\"id\":\"org/m\",\"params_b\":1}");
	raw_eq("SELECT updated_at > created_at FROM profiles WHERE id = 'org--m'", "1");
	raw_eq("SELECT count(*) FROM profiles WHERE id = 'low_end'", "0");
	ck_assert_int_eq(rf_store_profile_get(st, "mine", &got), 0);
	ck_assert_str_eq(got.source, "custom");
	ck_assert_str_eq(got.body, "{\"id\":\"mine\"}");
	api_profile_clear(&got);
	free(before);

	/* An empty seed prunes every shipped row and keeps the custom one. */
	ck_assert_int_eq(rf_store_profiles_seed(st, NULL, 0, NULL), 0);
	raw_eq("SELECT group_concat(id) FROM profiles", "mine");

	/* Invalid input changes nothing. */
	rows[0] = seed_row("../x", "device", "{}");
	ck_assert_int_eq(rf_store_profiles_seed(st, rows, 1, NULL), RF_E_INVALID_VALUE);
	rows[0] = seed_row("ok", "device", "[1]");
	ck_assert_int_eq(rf_store_profiles_seed(st, rows, 1, NULL), RF_E_INVALID_VALUE);
	raw_eq("SELECT group_concat(id) FROM profiles", "mine");
	ck_assert_int_eq(rf_store_profiles_seed(NULL, rows, 1, NULL), RF_E_STORE_UNAVAILABLE);
}
END_TEST

START_TEST(custom_rows_put_and_delete_rules)
{
	struct rf_profile_seed shipped = seed_row("rtx-x", "device", "{\"id\":\"rtx-x\"}");
	struct api_profile p = custom_row("card", "device", "{\"id\":\"card\"}"), got;
	bool created = true;

	ck_assert_int_eq(rf_store_profiles_seed(st, &shipped, 1, NULL), 0);
	ck_assert_int_eq(rf_store_profile_put(st, &p, &created), 0);
	ck_assert(created);
	p.body = "{\"id\":\"card\",\"v\":2}";
	ck_assert_int_eq(rf_store_profile_put(st, &p, &created), 0);
	ck_assert(!created);
	ck_assert_int_eq(rf_store_profile_get(st, "card", &got), 0);
	ck_assert_str_eq(got.body, "{\"id\":\"card\",\"v\":2}");
	ck_assert_str_eq(got.kind, "device");
	ck_assert_int_eq((int)strlen(got.created_at), 24);
	api_profile_clear(&got);

	/* A shipped id, or the id of a custom row of another kind, is refused. */
	p = custom_row("rtx-x", "device", "{}");
	ck_assert_int_eq(rf_store_profile_put(st, &p, &created), RF_E_CONFLICT);
	p = custom_row("card", "model", "{}");
	ck_assert_int_eq(rf_store_profile_put(st, &p, &created), RF_E_CONFLICT);
	raw_eq("SELECT body FROM profiles WHERE id = 'rtx-x'", "{\"id\":\"rtx-x\"}");
	/* Bodies must be objects; ids must be valid. */
	p = custom_row("other", "device", "not json");
	ck_assert_int_eq(rf_store_profile_put(st, &p, &created), RF_E_INVALID_VALUE);
	p = custom_row("bad/id", "device", "{}");
	ck_assert_int_eq(rf_store_profile_put(st, &p, &created), RF_E_INVALID_VALUE);
	raw_eq("SELECT count(*) FROM profiles", "2");

	ck_assert_int_eq(rf_store_profile_delete(st, "rtx-x"), RF_E_CONFLICT);
	ck_assert_int_eq(rf_store_profile_delete(st, "nope"), RF_E_NOT_FOUND);
	ck_assert_int_eq(rf_store_profile_delete(st, "card"), 0);
	ck_assert_int_eq(rf_store_profile_get(st, "card", &got), RF_E_NOT_FOUND);
	ck_assert_int_eq(rf_store_profile_delete(st, "card"), RF_E_NOT_FOUND);
	ck_assert_int_eq(rf_store_profile_delete(NULL, "card"), RF_E_STORE_UNAVAILABLE);
}
END_TEST

START_TEST(custom_rows_are_capped)
{
	struct api_profile p;
	bool created;
	char id[32];

	for (int i = 0; i < RF_STORE_MAX_CUSTOM_PROFILES; i++) {
		snprintf(id, sizeof(id), "c%03d", i);
		p = custom_row(id, "device", "{}");
		ck_assert_int_eq(rf_store_profile_put(st, &p, &created), 0);
	}
	p = custom_row("one-more", "device", "{}");
	ck_assert_int_eq(rf_store_profile_put(st, &p, &created), RF_E_TOO_LARGE);
	/* Replacing one that exists is still allowed. */
	p = custom_row("c000", "device", "{\"v\":1}");
	ck_assert_int_eq(rf_store_profile_put(st, &p, &created), 0);
	ck_assert(!created);
}
END_TEST

START_TEST(list_filters_and_pages)
{
	struct rf_profile_seed rows[4];
	struct api_profile p = custom_row("zz-custom", "model", "{}"), *got = NULL;
	struct api_profile_filter f;
	bool created;
	int n = -1;

	rows[0] = seed_row("b-dev", "device", "{}");
	rows[1] = seed_row("a-dev", "device", "{}");
	rows[2] = seed_row("m-1", "model", "{}");
	rows[3] = seed_row("high_end", "tier", "{}");
	ck_assert_int_eq(rf_store_profiles_seed(st, rows, 4, NULL), 0);
	ck_assert_int_eq(rf_store_profile_put(st, &p, &created), 0);

	memset(&f, 0, sizeof(f));
	f.limit = 2;
	ck_assert_int_eq(rf_store_profile_list(st, &f, &got, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(got[0].id, "a-dev");
	ck_assert_str_eq(got[1].id, "b-dev");
	snprintf(f.after, sizeof(f.after), "%s", got[1].id);
	api_profiles_free(got, n);
	ck_assert_int_eq(rf_store_profile_list(st, &f, &got, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(got[0].id, "high_end");
	ck_assert_str_eq(got[1].id, "m-1");
	api_profiles_free(got, n);

	memset(&f, 0, sizeof(f));
	f.limit = 100;
	snprintf(f.kind, sizeof(f.kind), "model");
	ck_assert_int_eq(rf_store_profile_list(st, &f, &got, &n), 0);
	ck_assert_int_eq(n, 2);
	api_profiles_free(got, n);
	snprintf(f.source, sizeof(f.source), "custom");
	ck_assert_int_eq(rf_store_profile_list(st, &f, &got, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(got[0].id, "zz-custom");
	ck_assert_str_eq(got[0].source, "custom");
	api_profiles_free(got, n);
	snprintf(f.kind, sizeof(f.kind), "tier");
	got = (struct api_profile *)&f; /* must be overwritten */
	ck_assert_int_eq(rf_store_profile_list(st, &f, &got, &n), 0);
	ck_assert_int_eq(n, 0);
	api_profiles_free(got, n);
	ck_assert_int_eq(rf_store_profile_list(NULL, &f, &got, &n), RF_E_STORE_UNAVAILABLE);
}
END_TEST

Suite *store_profiles_suite(void)
{
	Suite *s = suite_create("store_profiles");
	TCase *tc = tcase_create("store_profiles");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, seed_inserts_updates_and_prunes_shipped_rows_only);
	tcase_add_test(tc, custom_rows_put_and_delete_rules);
	tcase_add_test(tc, custom_rows_are_capped);
	tcase_add_test(tc, list_filters_and_pages);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
