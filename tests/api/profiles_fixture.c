/*
 * The shipped profiles for the route suites (see profiles_fixture.h).
 */
#include "tests/api/profiles_fixture.h"

#include <stdlib.h>
#include <string.h>

#include "api/catalog/quality.h"
#include "api/estimate.h"
#include "api/finetune_detect.h"
#include "api/recommend.h"
#include "api/runtime_config.h"
#include "api/validate.h"
#include "api/device_json.h"
#include "api/model_json.h"
#include "tests/test.h"

cJSON *t_profiles_json(const char *rel)
{
	char *p = t_path(t_src_dir(), rel), *text = t_read_file(p, NULL);
	cJSON *j = text ? cJSON_Parse(text) : NULL;

	ck_assert_msg(j != NULL, "cannot read %s", p);
	free(text);
	free(p);
	return j;
}

void t_profiles_load(struct device_table *devices, struct model_catalog **models,
		     struct api_tier_table **tiers)
{
	char err[512];
	cJSON *d = t_profiles_json("profiles/devices.json");
	cJSON *m = t_profiles_json("profiles/models.json");

	ck_assert_msg(api_device_table_from_json(d, devices, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(model_catalog_from_json(m, models, err, sizeof(err)) == 0, "%s", err);
	if (tiers) {
		*tiers = malloc(sizeof(**tiers));
		ck_assert_ptr_nonnull(*tiers);
		**tiers = *t_tiers();
	}
	cJSON_Delete(d);
	cJSON_Delete(m);
}

void t_profiles_free(struct device_table *devices, struct model_catalog **models,
		     struct api_tier_table **tiers)
{
	device_table_clear(devices);
	model_catalog_free(*models);
	*models = NULL;
	if (tiers) {
		free(*tiers);
		*tiers = NULL;
	}
}

const struct plan_quality *t_quality(void)
{
	static struct plan_quality q;
	static bool loaded;
	char why[256];

	if (!loaded) {
		cJSON *doc = t_profiles_json("profiles/quality.json");
		ck_assert_msg(api_quality_from_json(doc, &q, why, sizeof(why)) == 0, "%s", why);
		cJSON_Delete(doc);
		loaded = true;
	}
	return &q;
}

const struct api_tier_table *t_tiers(void)
{
	static struct api_tier_table t;
	static bool loaded;
	char why[256];

	if (!loaded) {
		cJSON *doc = t_profiles_json("profiles/tiers.json");
		ck_assert_msg(api_tiers_from_json(doc, &t, why, sizeof(why)) == 0, "%s", why);
		cJSON_Delete(doc);
		loaded = true;
	}
	return &t;
}

int t_route_post(api_handler_fn handler, const struct api_env *env, const char *path,
		 const char *body, cJSON **out)
{
	struct api_request req = {.method = API_POST,
				  .path = path,
				  .query = "",
				  .body = body,
				  .body_len = strlen(body)};
	struct api_reply r = {0};
	int status;

	handler(env, &req, &r);
	status = r.status;
	*out = cJSON_ParseWithLength(r.body ? r.body : r.borrowed_body, r.len);
	ck_assert_msg(*out != NULL, "not JSON: %.*s", (int)r.len, r.body ? r.body : "");
	api_reply_reset(&r);
	return status;
}

const cJSON *t_check_find(const cJSON *answer, const char *code, bool error)
{
	const cJSON *k;

	cJSON_ArrayForEach(k, cJSON_GetObjectItem(answer, error ? "errors" : "warnings"))
	{
		const cJSON *c = cJSON_GetObjectItem(k, "code");
		if (cJSON_IsString(c) && strcmp(c->valuestring, code) == 0)
			return k;
	}
	return NULL;
}

double t_num(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b)
		v = cJSON_GetObjectItemCaseSensitive(v, b);
	ck_assert_msg(cJSON_IsNumber(v), "%s.%s is not a number", a, b ? b : "");
	return v->valuedouble;
}

api_handler_fn t_route_handler(const char *route)
{
	static const struct {
		const char *path;
		api_handler_fn fn;
	} routes[] = {
		{"/api/estimate", api_estimate},
		{"/api/config", api_config},
		{"/api/recommend", api_recommend},
		{"/api/validate", api_validate},
		{"/api/finetune/detect", api_finetune_detect},
	};

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(route, routes[i].path) == 0)
			return routes[i].fn;
	return NULL;
}
