/*
 * The profile routes against the real daemon: a custom device and a custom model are usable
 * by /api/estimate, /api/config and /api/validate right after their PUT and gone right after
 * their DELETE; shipped profiles are read-only; custom profiles survive a restart on the same
 * database (and one that no longer parses is skipped, not fatal); a broken profile file on
 * SIGHUP is logged with its file and line while the last good set, custom profiles included,
 * stays in use; a good reload seeds the store again, dropping shipped rows no longer shipped,
 * and swaps the tiers and quality tables the next request reads (a bad one keeps both).
 */
#include <cjson/cJSON.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/server/harness.h"
#include "tests/test.h"

static const char JSON_HDR[] = "Content-Type: application/json\r\n";

/* A device that no shipped profile knows. */
static const char CARD_BODY[] =
	"{\"kind\":\"device\",\"profile\":{\"vendor\":\"nvidia\",\"name\":\"Test Card 9000\","
	"\"aliases\":[\"Test Card 9000\"],\"kind\":\"gpu\",\"device_class\":\"consumer\","
	"\"unified\":false,\"memory_gib\":20,\"memory_bandwidth_gbs\":700,\"fp16_tflops\":80,"
	"\"fp16_kind\":\"tensor\",\"source\":\"a test\"}}";
static const char CARD_ESTIMATE[] = "{\"model\":{\"id\":\"qwen2.5-7b\"},\"quant\":\"Q4_K_M\","
				    "\"hardware\":{\"gpus\":[{\"name\":\"Test Card 9000\"}]}}";

/* A TinyLlama-shaped model under a name no shipped profile has. */
static const char MODEL_BODY[] =
	"{\"kind\":\"model\",\"profile\":{\"id\":\"testorg/tiny-test\",\"name\":\"Tiny test\","
	"\"aliases\":[\"tiny-test\"],\"config\":{\"model_type\":\"llama\",\"hidden_size\":2048,"
	"\"intermediate_size\":5632,\"num_hidden_layers\":22,\"num_attention_heads\":32,"
	"\"num_key_value_heads\":4,\"vocab_size\":32000,\"max_position_embeddings\":2048},"
	"\"params_b\":1.1,\"tasks\":[\"text-generation\"],\"license\":\"mit\","
	"\"source\":\"a test\"}}";

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends a request with a JSON body (NULL: none). */
static void req(const struct t_daemon *d, const char *method, const char *path, const char *body,
		struct t_resp *r)
{
	ck_assert_int_eq(t_http(d->port, method, path, body ? JSON_HDR : NULL, body,
				body ? strlen(body) : 0, r),
			 0);
}

/* Sends a request and checks its status; returns the reply's body parsed (free it). */
static cJSON *req_expect(const struct t_daemon *d, const char *method, const char *path,
			 const char *body, int status)
{
	struct t_resp r;
	cJSON *j;

	req(d, method, path, body, &r);
	ck_assert_msg(r.status == status, "%s %s: %d, not %d: %s", method, path, r.status, status,
		      r.body);
	j = r.body_len ? cJSON_Parse(r.body) : NULL;
	ck_assert_msg(r.body_len == 0 || j, "%s %s: not JSON: %s", method, path, r.body);
	t_resp_free(&r);
	return j;
}

/* Checks an error reply's code and field. */
static void expect_error(const struct t_daemon *d, const char *method, const char *path,
			 const char *body, int status, const char *code, const char *field)
{
	cJSON *j = req_expect(d, method, path, body, status);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "code");
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(e, "field");

	ck_assert_msg(cJSON_IsString(c) && strcmp(c->valuestring, code) == 0, "%s %s: code %s",
		      method, path, cJSON_IsString(c) ? c->valuestring : "(none)");
	if (field)
		ck_assert_msg(cJSON_IsString(f) && strcmp(f->valuestring, field) == 0,
			      "%s %s: field %s, not %s", method, path,
			      cJSON_IsString(f) ? f->valuestring : "(none)", field);
	cJSON_Delete(j);
}

/* Returns the string at a dotted path of j ("hardware.profile_id"), or NULL. */
static const char *str_at(const cJSON *j, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, a);
	if (b)
		v = cJSON_GetObjectItemCaseSensitive(v, b);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Returns how many times needle occurs in s (NULL: 0). */
static int count_of(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s ? strstr(s, needle) : NULL; p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* Waits until the daemon's log holds needle at least times times; fails the test after a few
 * seconds. */
static void wait_log_n(const struct t_daemon *d, const char *needle, int times)
{
	long deadline = now_ms() + (t_under_valgrind() ? 30000 : 5000);

	for (;;) {
		char *log = t_daemon_log(d);
		bool found = count_of(log, needle) >= times;
		if (found || now_ms() > deadline) {
			ck_assert_msg(found, "the log lacks '%s':\n%s", needle, log ? log : "");
			free(log);
			return;
		}
		free(log);
		usleep(20000);
	}
}

/* Waits until the daemon's log holds needle. */
static void wait_log(const struct t_daemon *d, const char *needle)
{
	wait_log_n(d, needle, 1);
}

/* Starts a daemon on the database db with the profiles in pdir. */
static void start_on(struct t_daemon *d, const char *db, const char *pdir)
{
	const char *extra[] = {"--db", db, "--profiles", pdir, NULL};
	t_daemon_start(d, extra);
}

/* Copies the shipped profile files into dir/profiles; returns that path (free it). */
static char *copy_profiles(const char *dir)
{
	static const char *const files[] = {"devices.json", "models.json", "tiers.json"};
	char *pdir = t_path(dir, "profiles");

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *src = t_path(t_src_dir(), "profiles");
		char *from = t_path(src, files[i]);
		char *text = t_read_file(from, NULL), rel[64];
		ck_assert_ptr_nonnull(text);
		snprintf(rel, sizeof(rel), "profiles/%s", files[i]);
		t_put(dir, rel, text);
		free(text);
		free(from);
		free(src);
	}
	return pdir;
}

START_TEST(custom_device_and_model_are_usable_at_once)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "rigfit.db");
	char *pdir = t_path(t_src_dir(), "profiles");
	cJSON *j;
	static const char *const routes[] = {"/api/estimate", "/api/config", "/api/validate"};
	char body[1024];

	start_on(&d, db, pdir);
	/* Unknown before the PUT. */
	expect_error(&d, "POST", "/api/estimate", CARD_ESTIMATE, 422, "invalid_value",
		     "hardware.gpus[0].name");
	j = req_expect(&d, "PUT", "/api/profiles/test-card-9000", CARD_BODY, 201);
	ck_assert_str_eq(str_at(j, "source", NULL), "custom");
	ck_assert_str_eq(str_at(j, "kind", NULL), "device");
	ck_assert_str_eq(str_at(j, "profile", "id"), "test-card-9000");
	cJSON_Delete(j);
	j = req_expect(&d, "POST", "/api/estimate", CARD_ESTIMATE, 200);
	ck_assert_str_eq(str_at(j, "hardware", "profile_id"), "test-card-9000");
	cJSON_Delete(j);
	/* The same PUT again replaces it. */
	cJSON_Delete(req_expect(&d, "PUT", "/api/profiles/test-card-9000", CARD_BODY, 200));

	/* A model: its profile id spells the '/' as "--"; its id and alias both resolve. */
	expect_error(&d, "PUT", "/api/profiles/tiny-test", MODEL_BODY, 422, "invalid_value",
		     "profile.id");
	j = req_expect(&d, "PUT", "/api/profiles/testorg--tiny-test", MODEL_BODY, 201);
	ck_assert_str_eq(str_at(j, "profile", "id"), "testorg/tiny-test");
	cJSON_Delete(j);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const char *name = i % 2 ? "tiny-test" : "testorg/tiny-test";
		snprintf(body, sizeof(body),
			 "{\"model\":{\"id\":\"%s\"},\"hardware\":{\"gpus\":[{\"name\":\"Test "
			 "Card 9000\"}]}%s}",
			 name, i == 2 ? ",\"settings\":{\"n_ctx\":2048}" : "");
		j = req_expect(&d, "POST", routes[i], body, 200);
		if (i == 0)
			ck_assert_str_eq(str_at(j, "model", "id"), "testorg/tiny-test");
		cJSON_Delete(j);
	}

	/* A custom model may not take a name a shipped one answers to. */
	expect_error(
		&d, "PUT", "/api/profiles/clash",
		"{\"kind\":\"model\",\"profile\":{\"aliases\":[\"qwen2.5-7b\"],"
		"\"config\":{\"model_type\":\"llama\",\"hidden_size\":2048,"
		"\"intermediate_size\":5632,\"num_hidden_layers\":22,\"num_attention_heads\":32,"
		"\"num_key_value_heads\":4,\"vocab_size\":32000,"
		"\"max_position_embeddings\":2048}}}",
		409, "conflict", "profile");
	/* Nor a device the name and memory of a shipped one. */
	expect_error(&d, "PUT", "/api/profiles/fake-4090",
		     "{\"kind\":\"device\",\"profile\":{\"vendor\":\"nvidia\",\"name\":\"Fake\","
		     "\"aliases\":[\"RTX 4090\"],\"kind\":\"gpu\",\"device_class\":\"consumer\","
		     "\"unified\":false,\"memory_gib\":24,\"memory_bandwidth_gbs\":700,"
		     "\"source\":\"a test\"}}",
		     409, "conflict", "profile");
	/* Shipped profiles are read-only; ids are checked; tiers are not custom. */
	expect_error(&d, "PUT", "/api/profiles/rtx-4090", CARD_BODY, 409, "conflict", "id");
	expect_error(&d, "DELETE", "/api/profiles/rtx-4090", NULL, 409, "conflict", "id");
	expect_error(&d, "DELETE", "/api/profiles/no-such-profile", NULL, 404, "not_found", "id");
	expect_error(&d, "GET", "/api/profiles/..%2Fetc%2Fpasswd", NULL, 422, "invalid_value",
		     "id");
	expect_error(&d, "PUT", "/api/profiles/.hidden", CARD_BODY, 422, "invalid_value", "id");
	expect_error(&d, "PUT", "/api/profiles/my-tier", "{\"kind\":\"tier\",\"profile\":{}}", 422,
		     "invalid_value", "kind");
	expect_error(&d, "PUT", "/api/profiles/test-card-9000",
		     "{\"kind\":\"model\",\"profile\":{}}", 409, "conflict", "id");
	expect_error(&d, "PUT", "/api/profiles/bad-card",
		     "{\"kind\":\"device\",\"profile\":{\"vendor\":\"nvidia\",\"name\":\"Bad\","
		     "\"aliases\":[\"Bad\"],\"kind\":\"gpu\",\"device_class\":\"consumer\","
		     "\"unified\":false,\"memory_gib\":8,\"memory_bandwidth_gbs\":-1,"
		     "\"source\":\"a test\"}}",
		     422, "invalid_value", "profile");
	expect_error(&d, "PUT", "/api/profiles/x", "{\"kind\":\"device\",\"profile\":{},\"y\":1}",
		     422, "unknown_field", "y");
	expect_error(&d, "GET", "/api/profiles?kind=gpu", NULL, 422, "invalid_value", "kind");

	/* Listing: filters and pages. */
	j = req_expect(&d, "GET", "/api/profiles?source=custom", NULL, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "profiles")), 2);
	cJSON_Delete(j);
	j = req_expect(&d, "GET", "/api/profiles?kind=model&source=custom", NULL, 200);
	ck_assert_str_eq(
		str_at(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "profiles"), 0), "id",
		       NULL),
		"testorg--tiny-test");
	cJSON_Delete(j);
	j = req_expect(&d, "GET", "/api/profiles?kind=tier&limit=2", NULL, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "profiles")), 2);
	ck_assert_str_eq(str_at(j, "next_after", NULL), "low_end");
	cJSON_Delete(j);
	j = req_expect(&d, "GET", "/api/profiles?kind=tier&limit=2&after=low_end", NULL, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "profiles")), 1);
	ck_assert_str_eq(
		str_at(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "profiles"), 0), "id",
		       NULL),
		"mid_range");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "next_after")));
	cJSON_Delete(j);
	j = req_expect(&d, "GET", "/api/profiles/Qwen--Qwen2.5-7B", NULL, 200);
	ck_assert_str_eq(str_at(j, "source", NULL), "shipped");
	ck_assert_str_eq(str_at(j, "profile", "id"), "Qwen/Qwen2.5-7B");
	cJSON_Delete(j);

	/* DELETE: gone from the routes at once. */
	cJSON_Delete(req_expect(&d, "DELETE", "/api/profiles/test-card-9000", NULL, 204));
	expect_error(&d, "POST", "/api/estimate", CARD_ESTIMATE, 422, "invalid_value",
		     "hardware.gpus[0].name");
	expect_error(&d, "GET", "/api/profiles/test-card-9000", NULL, 404, "not_found", "id");
	t_daemon_stop(&d);
	t_rmtree(dir);
	free(dir);
	free(db);
	free(pdir);
}
END_TEST

START_TEST(custom_profiles_survive_a_restart)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "rigfit.db");
	char *pdir = t_path(t_src_dir(), "profiles");
	sqlite3 *raw = NULL;
	cJSON *j;

	start_on(&d, db, pdir);
	cJSON_Delete(req_expect(&d, "PUT", "/api/profiles/test-card-9000", CARD_BODY, 201));
	cJSON_Delete(req_expect(&d, "PUT", "/api/profiles/testorg--tiny-test", MODEL_BODY, 201));
	t_daemon_stop(&d);

	/* A custom row that no longer parses (as after an upgrade that tightened a rule). */
	ck_assert_int_eq(sqlite3_open(db, &raw), SQLITE_OK);
	ck_assert_int_eq(
		sqlite3_exec(raw,
			     "INSERT INTO profiles (id, kind, source, body) VALUES "
			     "('stale-card', 'device', 'custom', '{\"id\":\"stale-card\"}')",
			     NULL, NULL, NULL),
		SQLITE_OK);
	sqlite3_close(raw);

	start_on(&d, db, pdir);
	wait_log(&d, "custom profile stale-card skipped");
	j = req_expect(&d, "GET", "/api/profiles/test-card-9000", NULL, 200);
	ck_assert_str_eq(str_at(j, "source", NULL), "custom");
	cJSON_Delete(j);
	j = req_expect(&d, "POST", "/api/estimate", CARD_ESTIMATE, 200);
	ck_assert_str_eq(str_at(j, "hardware", "profile_id"), "test-card-9000");
	cJSON_Delete(j);
	j = req_expect(&d, "POST", "/api/estimate",
		       "{\"model\":{\"id\":\"tiny-test\"},\"hardware\":{\"gpus\":[{\"name\":"
		       "\"RTX 4090\"}]}}",
		       200);
	ck_assert_str_eq(str_at(j, "model", "id"), "testorg/tiny-test");
	cJSON_Delete(j);
	/* The shipped rows were seeded once, not twice. */
	j = req_expect(&d, "GET", "/api/profiles?kind=tier", NULL, 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "profiles")), 3);
	cJSON_Delete(j);
	/* The stale row is still listed (a client can fix or delete it). */
	cJSON_Delete(req_expect(&d, "DELETE", "/api/profiles/stale-card", NULL, 204));
	t_daemon_stop(&d);
	t_rmtree(dir);
	free(dir);
	free(db);
	free(pdir);
}
END_TEST

START_TEST(sighup_with_a_broken_file_keeps_the_last_good_set)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "rigfit.db"), *pdir = copy_profiles(dir);
	char *devices = t_path(pdir, "devices.json"), *good;
	const char broken[] = "{\n  \"devices\": [\n    {\"id\": \"x\",}\n  ]\n}\n";
	const char invalid[] = "{\"devices\": [{\"id\": \"x\"}]}\n";
	cJSON *doc, *arr, *e;
	char *smaller;
	int i = 0;

	start_on(&d, db, pdir);
	cJSON_Delete(req_expect(&d, "PUT", "/api/profiles/test-card-9000", CARD_BODY, 201));
	good = t_read_file(devices, NULL);
	ck_assert_ptr_nonnull(good);

	/* Broken JSON: file and line in the log, everything still served. */
	ck_assert_int_eq(t_write_file(devices, broken, sizeof(broken) - 1), 0);
	kill(d.pid, SIGHUP);
	wait_log(&d, "devices.json:3: invalid JSON; keeping the 3 file(s) loaded before");
	/* Valid JSON that is not a valid devices.json: refused as well. */
	ck_assert_int_eq(t_write_file(devices, invalid, sizeof(invalid) - 1), 0);
	kill(d.pid, SIGHUP);
	wait_log(&d, "devices.json: entry 1 (x)");
	cJSON_Delete(req_expect(&d, "POST", "/api/estimate", CARD_ESTIMATE, 200));
	cJSON_Delete(req_expect(&d, "POST", "/api/estimate",
				"{\"model\":{\"id\":\"qwen2.5-7b\"},\"hardware\":{\"gpus\":[{"
				"\"name\":\"RTX 4090\"}]}}",
				200));
	cJSON_Delete(req_expect(&d, "GET", "/api/profiles/rtx-4090", NULL, 200));

	/* A good file without rtx-4090: the shipped row goes, the custom one stays. */
	doc = cJSON_Parse(good);
	arr = cJSON_GetObjectItemCaseSensitive(doc, "devices");
	cJSON_ArrayForEach(e, arr)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
		if (cJSON_IsString(id) && strcmp(id->valuestring, "rtx-4090") == 0)
			break;
		i++;
	}
	ck_assert_ptr_nonnull(e);
	cJSON_DeleteItemFromArray(arr, i);
	smaller = cJSON_Print(doc);
	ck_assert_int_eq(t_write_file(devices, smaller, strlen(smaller)), 0);
	kill(d.pid, SIGHUP);
	wait_log_n(&d, "profiles: loaded 3 file(s)", 2);
	expect_error(&d, "GET", "/api/profiles/rtx-4090", NULL, 404, "not_found", "id");
	cJSON_Delete(req_expect(&d, "GET", "/api/profiles/test-card-9000", NULL, 200));
	cJSON_Delete(req_expect(&d, "POST", "/api/estimate", CARD_ESTIMATE, 200));
	t_daemon_stop(&d);
	cJSON_Delete(doc);
	free(smaller);
	free(good);
	free(devices);
	t_rmtree(dir);
	free(dir);
	free(db);
	free(pdir);
}
END_TEST

/* The tier_settings.max_seq_length POST /api/finetune/detect answers for mid_range. */
static int mid_range_seq(const struct t_daemon *d)
{
	cJSON *j = req_expect(d, "POST", "/api/finetune/detect",
			      "{\"task\":\"text-generation\",\"hardware_profile\":\"rtx-4090\","
			      "\"compute_specs\":\"mid_range\"}",
			      200);
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "tier_settings"), "max_seq_length");
	int n = cJSON_IsNumber(v) ? v->valueint : -1;

	cJSON_Delete(j);
	return n;
}

START_TEST(sighup_swaps_tiers_and_quality_and_keeps_them_on_a_bad_file)
{
	struct t_daemon d;
	char *dir = t_mkdtemp(), *db = t_path(dir, "rigfit.db"), *pdir = copy_profiles(dir);
	char *src = t_path(t_src_dir(), "profiles/quality.json"), *quality = t_read_file(src, NULL);
	char *tiers_file = t_path(pdir, "tiers.json"), *tiers = t_read_file(tiers_file, NULL);
	char *quality_file = t_path(pdir, "quality.json");
	static const char RECOMMEND[] = "{\"use_case\":\"chat\",\"hardware_profile\":\"rtx-4090\"}";
	const char bad_quality[] = "{\"tie_kld\":2}";
	cJSON *doc = cJSON_Parse(tiers), *t;
	char *changed;
	int before;

	ck_assert_ptr_nonnull(quality);
	ck_assert_ptr_nonnull(doc);
	t_put(dir, "profiles/quality.json", quality);
	start_on(&d, db, pdir);
	before = mid_range_seq(&d);
	ck_assert_int_gt(before, 0);
	cJSON_Delete(req_expect(&d, "POST", "/api/recommend", RECOMMEND, 200));

	/* A good tiers.json with another template: the next request answers with it. */
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(doc, "tiers"))
	{
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(t, "id")), "mid_range") == 0)
			cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "settings"),
								 "max_seq_length"),
					     before + 512);
	}
	changed = cJSON_Print(doc);
	ck_assert_int_eq(t_write_file(tiers_file, changed, strlen(changed)), 0);
	kill(d.pid, SIGHUP);
	wait_log_n(&d, "profiles: loaded 4 file(s)", 2);
	ck_assert_int_eq(mid_range_seq(&d), before + 512);

	/* A quality.json that is JSON but not a quality table: the load fails with its reason and
	 * the last good set, both tables included, stays in use. */
	ck_assert_int_eq(t_write_file(quality_file, bad_quality, sizeof(bad_quality) - 1), 0);
	kill(d.pid, SIGHUP);
	wait_log(&d, "profiles: quality.json: tie_kld: a number in [0, 1); keeping the 4 file(s) "
		     "loaded before");
	cJSON_Delete(req_expect(&d, "POST", "/api/recommend", RECOMMEND, 200));
	ck_assert_int_eq(mid_range_seq(&d), before + 512);
	t_daemon_stop(&d);
	cJSON_Delete(doc);
	free(changed);
	free(tiers);
	free(tiers_file);
	free(quality_file);
	free(quality);
	free(src);
	t_rmtree(dir);
	free(dir);
	free(db);
	free(pdir);
}
END_TEST

Suite *profiles_daemon_suite(void)
{
	Suite *s = suite_create("profiles_daemon");
	TCase *tc = tcase_create("profiles_daemon");

	tcase_add_test(tc, custom_device_and_model_are_usable_at_once);
	tcase_add_test(tc, custom_profiles_survive_a_restart);
	tcase_add_test(tc, sighup_with_a_broken_file_keeps_the_last_good_set);
	tcase_add_test(tc, sighup_swaps_tiers_and_quality_and_keeps_them_on_a_bad_file);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}
