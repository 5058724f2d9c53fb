/*
 * Tests of api/profiles.c without a daemon: profile ids and their mapping from model ids, the
 * entry check (the parsers of devices.json and models.json), and the four handlers against an
 * in-memory store and hooks that record what they were asked: statuses, envelopes, the order
 * check -> write -> changed, and that nothing is written when a check fails.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/profiles.h"
#include "core/err.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define FAKE_MAX 8

static struct api_profile fake_rows[FAKE_MAX];
static int fake_n;
static int hook_rc;         /* what check answers */
static int checks, changes; /* calls of the hooks */

static void fake_reset(void)
{
	for (int i = 0; i < fake_n; i++)
		free(fake_rows[i].body);
	fake_n = 0;
	hook_rc = 0;
	checks = changes = 0;
}

static char *dup_str(const char *s)
{
	char *d = malloc(strlen(s) + 1);
	ck_assert_ptr_nonnull(d);
	memcpy(d, s, strlen(s) + 1);
	return d;
}

static void fake_add(const char *id, const char *kind, const char *source, const char *body)
{
	struct api_profile *p = &fake_rows[fake_n++];
	memset(p, 0, sizeof(*p));
	snprintf(p->id, sizeof(p->id), "%s", id);
	snprintf(p->kind, sizeof(p->kind), "%s", kind);
	snprintf(p->source, sizeof(p->source), "%s", source);
	snprintf(p->created_at, sizeof(p->created_at), "2026-01-01T00:00:00.000Z");
	snprintf(p->updated_at, sizeof(p->updated_at), "2026-01-01T00:00:00.000Z");
	p->body = dup_str(body);
}

static int fake_find(const char *id)
{
	for (int i = 0; i < fake_n; i++)
		if (strcmp(fake_rows[i].id, id) == 0)
			return i;
	return -1;
}

static int fake_list(void *ctx, const struct api_profile_filter *f, struct api_profile **rows,
		     int *n)
{
	struct api_profile *arr = calloc(FAKE_MAX, sizeof(*arr));
	int k = 0;

	(void)ctx;
	for (int i = 0; i < fake_n && k < f->limit; i++) {
		const struct api_profile *p = &fake_rows[i];
		if ((f->kind[0] && strcmp(f->kind, p->kind) != 0) ||
		    (f->source[0] && strcmp(f->source, p->source) != 0) ||
		    strcmp(p->id, f->after) <= 0)
			continue;
		arr[k] = *p;
		arr[k++].body = dup_str(p->body);
	}
	*rows = arr;
	*n = k;
	return 0;
}

static int fake_get(void *ctx, const char *id, struct api_profile *row)
{
	int i = fake_find(id);

	(void)ctx;
	if (i < 0)
		return RF_E_NOT_FOUND;
	*row = fake_rows[i];
	row->body = dup_str(fake_rows[i].body);
	return 0;
}

static int fake_put(void *ctx, const struct api_profile *p, bool *created)
{
	int i = fake_find(p->id);

	(void)ctx;
	ck_assert_int_eq(checks, 1); /* checked before written */
	if (i >= 0) {
		free(fake_rows[i].body);
		fake_rows[i].body = dup_str(p->body);
		*created = false;
		return 0;
	}
	fake_add(p->id, p->kind, "custom", p->body);
	*created = true;
	return 0;
}

static int fake_delete(void *ctx, const char *id)
{
	int i = fake_find(id);

	(void)ctx;
	if (i < 0)
		return RF_E_NOT_FOUND;
	if (strcmp(fake_rows[i].source, "custom") != 0)
		return RF_E_CONFLICT;
	free(fake_rows[i].body);
	fake_rows[i] = fake_rows[--fake_n];
	return 0;
}

static int hook_check(void *ctx, const struct api_profile *pending, char *msg, size_t msglen)
{
	(void)ctx;
	ck_assert_ptr_nonnull(pending->body);
	checks++;
	if (hook_rc < 0)
		snprintf(msg, msglen, "%s clashes", pending->id);
	return hook_rc;
}

static void hook_changed(void *ctx)
{
	(void)ctx;
	changes++;
}

static struct api_env env_with_store(bool available)
{
	struct api_env env;

	memset(&env, 0, sizeof(env));
	env.store.available = available;
	env.store.profile_list = fake_list;
	env.store.profile_get = fake_get;
	env.store.profile_put = fake_put;
	env.store.profile_delete = fake_delete;
	env.profiles.check = hook_check;
	env.profiles.changed = hook_changed;
	return env;
}

/* Calls handler with method, the path's id (NULL: none), query and body; returns the reply's
 * status and its body parsed into *json (may be NULL). */
static int call(api_handler_fn handler, const struct api_env *env, enum api_method m,
		const char *id, const char *query, const char *body, cJSON **json)
{
	struct api_request req;
	struct api_reply out;
	int status;

	memset(&req, 0, sizeof(req));
	memset(&out, 0, sizeof(out));
	req.method = m;
	req.path = "/api/profiles";
	req.path_id = id;
	req.query = query ? query : "";
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	handler(env, &req, &out);
	status = out.status;
	if (json)
		*json = out.body ? cJSON_Parse(out.body) : NULL;
	api_reply_reset(&out);
	return status;
}

static const char *err_code(const cJSON *j)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "error"), "code");
	return cJSON_IsString(c) ? c->valuestring : "";
}

/* A valid device entry: the first of the shipped devices.json, renamed. */
static char *device_put_body(const char *id, const char *name)
{
	cJSON *doc = t_profiles_json("profiles/devices.json");
	cJSON *e = cJSON_DetachItemFromArray(cJSON_GetObjectItemCaseSensitive(doc, "devices"), 0);
	cJSON *body = cJSON_CreateObject(), *aliases = cJSON_CreateArray();
	char *out;

	cJSON_ReplaceItemInObject(e, "id", cJSON_CreateString(id));
	cJSON_ReplaceItemInObject(e, "name", cJSON_CreateString(name));
	cJSON_AddItemToArray(aliases, cJSON_CreateString(name));
	cJSON_ReplaceItemInObject(e, "aliases", aliases);
	cJSON_AddStringToObject(body, "kind", "device");
	cJSON_AddItemToObject(body, "profile", e);
	out = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	cJSON_Delete(doc);
	return out;
}

START_TEST(profile_ids)
{
	char out[API_PROFILE_ID_LEN + 1], long_id[200];

	ck_assert(api_profile_id_valid("rtx-4090"));
	ck_assert(api_profile_id_valid("Qwen--Qwen2.5-7B"));
	ck_assert(api_profile_id_valid("low_end"));
	ck_assert(!api_profile_id_valid(""));
	ck_assert(!api_profile_id_valid(NULL));
	ck_assert(!api_profile_id_valid(".."));
	ck_assert(!api_profile_id_valid(".hidden"));
	ck_assert(!api_profile_id_valid("a/b"));
	ck_assert(!api_profile_id_valid("a%2Fb"));
	ck_assert(!api_profile_id_valid("a b"));
	memset(long_id, 'a', 129);
	long_id[129] = '\0';
	ck_assert(!api_profile_id_valid(long_id));
	long_id[128] = '\0';
	ck_assert(api_profile_id_valid(long_id));

	ck_assert_int_eq(api_profile_id_of("Qwen/Qwen2.5-7B", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "Qwen--Qwen2.5-7B");
	ck_assert_int_eq(api_profile_id_of("rtx-4090", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "rtx-4090");
	ck_assert_int_eq(api_profile_id_of("../etc", out, sizeof(out)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_profile_id_of("a b", out, sizeof(out)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(api_profile_id_of("a/b", out, 4), RF_E_INVALID_VALUE);
}
END_TEST

START_TEST(entry_check_uses_the_file_parsers)
{
	cJSON *devices = t_profiles_json("profiles/devices.json"),
	      *models = t_profiles_json("profiles/models.json");
	cJSON *dev = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(devices, "devices"), 0);
	cJSON *mod = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(models, "models"), 0);
	char err[512];

	ck_assert_msg(api_profile_entry_check("device", dev, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(api_profile_entry_check("model", mod, err, sizeof(err)) == 0, "%s", err);
	/* A model is not a device. */
	ck_assert_int_lt(api_profile_entry_check("device", mod, err, sizeof(err)), 0);
	ck_assert_msg(strncmp(err, "profile", 7) == 0, "%s", err);
	cJSON_ReplaceItemInObject(dev, "memory_bandwidth_gbs", cJSON_CreateNumber(-5));
	ck_assert_int_eq(api_profile_entry_check("device", dev, err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_msg(strstr(err, "memory_bandwidth_gbs") && strncmp(err, "profile: ", 9) == 0,
		      "%s", err);
	cJSON_DeleteItemFromObject(cJSON_GetObjectItemCaseSensitive(mod, "config"), "hidden_size");
	ck_assert_int_lt(api_profile_entry_check("model", mod, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "profile.config.hidden_size"), "%s", err);
	ck_assert_int_eq(api_profile_entry_check("tier", dev, err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	cJSON_Delete(devices);
	cJSON_Delete(models);
}
END_TEST

START_TEST(store_down_and_bad_ids)
{
	struct api_env env = env_with_store(false);
	cJSON *j = NULL;

	fake_reset();
	ck_assert_int_eq(call(api_profiles_list, &env, API_GET, NULL, NULL, NULL, &j), 503);
	ck_assert_str_eq(err_code(j), "store_unavailable");
	cJSON_Delete(j);
	ck_assert_int_eq(call(api_profile_get, &env, API_GET, "x", NULL, NULL, NULL), 503);
	ck_assert_int_eq(call(api_profile_delete, &env, API_DELETE, "x", NULL, NULL, NULL), 503);
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "x", NULL, "{}", NULL), 503);
	env = env_with_store(true);
	ck_assert_int_eq(call(api_profile_get, &env, API_GET, "..", NULL, NULL, &j), 422);
	ck_assert_str_eq(err_code(j), "invalid_value");
	cJSON_Delete(j);
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "a%2F..", NULL, "{}", NULL), 422);
	ck_assert_int_eq(call(api_profile_delete, &env, API_DELETE, "-x", NULL, NULL, NULL), 422);
	ck_assert_int_eq(call(api_profiles_list, &env, API_GET, NULL, "after=..", NULL, NULL), 422);
	ck_assert_int_eq(call(api_profiles_list, &env, API_GET, NULL, "source=x", NULL, NULL), 422);
	ck_assert_int_eq(call(api_profiles_list, &env, API_GET, NULL, "limit=0", NULL, NULL), 422);
	ck_assert_int_eq(checks + changes, 0);
}
END_TEST

START_TEST(put_get_delete_flow)
{
	struct api_env env = env_with_store(true);
	char *body = device_put_body("my-card", "My Card");
	const cJSON *prof, *msg;
	cJSON *j = NULL;

	fake_reset();
	fake_add("rtx-x", "device", "shipped", "{\"id\":\"rtx-x\"}");
	fake_add("low_end", "tier", "shipped", "{\"id\":\"low_end\"}");

	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "my-card", NULL, body, &j), 201);
	ck_assert_int_eq(checks, 1);
	ck_assert_int_eq(changes, 1);
	prof = cJSON_GetObjectItemCaseSensitive(j, "profile");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(prof, "id")->valuestring, "my-card");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "source")->valuestring, "custom");
	cJSON_Delete(j);
	checks = 0;
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "my-card", NULL, body, NULL), 200);
	ck_assert_int_eq(changes, 2);

	/* Refusals write nothing and change nothing. */
	checks = 0;
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "rtx-x", NULL, body, &j), 409);
	ck_assert_str_eq(err_code(j), "conflict");
	cJSON_Delete(j);
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "other", NULL, body, &j), 422);
	cJSON_Delete(j); /* the entry's id is my-card, not other */
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "my-card", NULL,
			      "{\"kind\":\"model\",\"profile\":{}}", NULL),
			 409);
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "t", NULL,
			      "{\"kind\":\"tier\",\"profile\":{}}", NULL),
			 422);
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "my-card", NULL,
			      "{\"kind\":\"device\",\"profile\":[]}", NULL),
			 422);
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "my-card", NULL,
			      "{\"kind\":\"device\",\"profile\":{},\"source\":\"shipped\"}", NULL),
			 422);
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "my-card", NULL, "{", NULL), 400);
	free(body);
	body = device_put_body("twin", "My Card");
	hook_rc = RF_E_CONFLICT;
	ck_assert_int_eq(call(api_profile_put, &env, API_PUT, "twin", NULL, body, &j), 409);
	msg = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "error"),
					       "message");
	ck_assert(cJSON_IsString(msg) && strstr(msg->valuestring, "twin clashes"));
	cJSON_Delete(j);
	ck_assert_int_eq(checks, 1);
	ck_assert_int_eq(changes, 2);
	ck_assert_int_eq(fake_find("twin"), -1);

	/* GET and the list. */
	ck_assert_int_eq(call(api_profile_get, &env, API_GET, "my-card", NULL, NULL, NULL), 200);
	ck_assert_int_eq(call(api_profile_get, &env, API_GET, "nope", NULL, NULL, &j), 404);
	ck_assert_str_eq(err_code(j), "not_found");
	cJSON_Delete(j);
	ck_assert_int_eq(
		call(api_profiles_list, &env, API_GET, NULL, "kind=device&limit=1", NULL, &j), 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "profiles")), 1);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "next_after")->valuestring, "rtx-x");
	cJSON_Delete(j);
	ck_assert_int_eq(call(api_profiles_list, &env, API_GET, NULL, "source=custom", NULL, &j),
			 200);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "profiles")), 1);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "next_after")));
	cJSON_Delete(j);

	/* DELETE. */
	ck_assert_int_eq(call(api_profile_delete, &env, API_DELETE, "rtx-x", NULL, NULL, NULL),
			 409);
	ck_assert_int_eq(call(api_profile_delete, &env, API_DELETE, "nope", NULL, NULL, NULL), 404);
	ck_assert_int_eq(changes, 2);
	ck_assert_int_eq(call(api_profile_delete, &env, API_DELETE, "my-card", NULL, NULL, NULL),
			 204);
	ck_assert_int_eq(changes, 3);
	ck_assert_int_eq(fake_find("my-card"), -1);
	free(body);
	fake_reset();
}
END_TEST

Suite *profiles_api_suite(void)
{
	Suite *s = suite_create("profiles_api");
	TCase *tc = tcase_create("profiles_api");

	tcase_add_test(tc, profile_ids);
	tcase_add_test(tc, entry_check_uses_the_file_parsers);
	tcase_add_test(tc, store_down_and_bad_ids);
	tcase_add_test(tc, put_get_delete_flow);
	suite_add_tcase(s, tc);
	return s;
}
