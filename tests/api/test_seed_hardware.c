/*
 * Every product route on the seeds' example hardware (GTX 1650, RTX 3060/3070/4090, A100, H100,
 * Apple M1 8 GB and M3 Max, Jetson AGX Orin, CPU-only), checked against each other: what
 * finetune/detect and recommend offer fits by the estimator, the config /api/config writes is
 * valid by /api/validate, and the tier is the seed's.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/device_json.h"
#include "api/estimate.h"
#include "api/finetune_detect.h"
#include "api/model_json.h"
#include "api/recommend.h"
#include "api/runtime_config.h"
#include "api/validate.h"
#include "core/hw/device.h"
#include "core/fit/model.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define GIB "1073741824"

struct seed_hw {
	const char *name;
	const char *hardware; /* the "hardware" object */
	const char *tier;     /* seed 000's classification */
};

static const struct seed_hw machines[] = {
	{"GTX 1650 + 16 GiB",
	 "{\"gpus\":[{\"name\":\"GTX 1650\"}],\"memory\":{\"total_bytes\":17179869184}}",
	 "low_end"},
	{"RTX 3060 12GB + 32 GiB",
	 "{\"gpus\":[{\"name\":\"RTX 3060 12GB\"}],\"memory\":{\"total_bytes\":34359738368}}",
	 "mid_range"},
	{"RTX 3070 + 16 GiB",
	 "{\"gpus\":[{\"name\":\"RTX 3070\"}],\"memory\":{\"total_bytes\":17179869184}}",
	 "mid_range"},
	{"RTX 4090 + 64 GiB",
	 "{\"gpus\":[{\"name\":\"RTX 4090\"}],\"memory\":{\"total_bytes\":68719476736}}",
	 "high_end"},
	{"A100 80GB + 256 GiB",
	 "{\"gpus\":[{\"name\":\"A100 SXM4 80GB\"}],\"memory\":{\"total_bytes\":274877906944}}",
	 "high_end"},
	{"H100 SXM + 512 GiB",
	 "{\"gpus\":[{\"name\":\"H100 SXM\"}],\"memory\":{\"total_bytes\":549755813888}}",
	 "high_end"},
	/* Unified memory: the GPU's share is the working set macOS allows (gpus.csv). */
	{"Apple M1 8 GB",
	 "{\"gpus\":[{\"name\":\"Apple M1\",\"vendor\":\"apple\",\"unified_memory\":true,"
	 "\"memory_total_bytes\":5726633984}],\"memory\":{\"total_bytes\":8589934592}}",
	 "low_end"},
	{"Apple M3 Max 128 GB",
	 "{\"gpus\":[{\"name\":\"Apple M3 Max\",\"vendor\":\"apple\",\"unified_memory\":true,"
	 "\"memory_total_bytes\":103079215104}],\"memory\":{\"total_bytes\":137438953472}}",
	 "high_end"},
	{"Jetson AGX Orin 64 GB",
	 "{\"gpus\":[{\"name\":\"Jetson AGX Orin 64GB\",\"vendor\":\"nvidia\",\"unified_memory\":true,"
	 "\"memory_total_bytes\":68719476736}],\"memory\":{\"total_bytes\":68719476736}}",
	 "high_end"},
	{"CPU-only 16 GiB",
	 "{\"memory\":{\"total_bytes\":17179869184},\"cpu\":{\"physical_cores\":8}}", "low_end"},
};

static struct device_table devices;
static struct model_catalog *models;
static struct api_tier_table *tiers;

static void setup(void)
{
	t_profiles_load(&devices, &models, &tiers);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, &tiers);
}

static struct api_env env_of(void)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .cat.tiers = tiers,
			      .cat.quality = t_quality()};
	return env;
}

/* Calls handler with body; returns the status and the answer in *out. */
static int call(api_handler_fn handler, const char *body, cJSON **out)
{
	struct api_env env = env_of();
	struct api_request req = {.method = API_POST,
				  .path = "/",
				  .query = "",
				  .body = body,
				  .body_len = strlen(body)};
	struct api_reply r = {0};
	int status;

	handler(&env, &req, &r);
	status = r.status;
	*out = cJSON_ParseWithLength(r.body ? r.body : r.borrowed_body, r.len);
	ck_assert_msg(*out != NULL, "not JSON: %.*s", (int)r.len, r.body);
	api_reply_reset(&r);
	return status;
}

/* Re-estimates request (an object; the model and hardware are added) and returns whether it
 * fits. */
static bool fits(const cJSON *request, const char *model, const char *hardware)
{
	struct api_env env = env_of();
	struct api_reply r = {0};
	cJSON *req = cJSON_Duplicate(request, 1), *res = NULL;
	bool ok;

	cJSON_DeleteItemFromObject(req, "hardware");
	cJSON_DeleteItemFromObject(req, "hardware_profile");
	if (!cJSON_GetObjectItem(req, "model"))
		cJSON_AddStringToObject(req, "model", model);
	cJSON_AddItemToObject(req, "hardware", cJSON_Parse(hardware));
	ck_assert_msg(api_estimate_object(&env, req, &res, &r) == 0, "estimate failed: %.*s",
		      (int)r.len, r.body);
	ok = cJSON_IsTrue(cJSON_GetObjectItem(res, "fits"));
	cJSON_Delete(res);
	cJSON_Delete(req);
	api_reply_reset(&r);
	return ok;
}

START_TEST(each_route_on_each_seed_machine)
{
	const struct seed_hw *m = &machines[_i];
	char body[2048];
	cJSON *j, *list, *item;
	int st;

	/* finetune/detect: the seed's tier, and a recommended model that fits. */
	snprintf(body, sizeof(body), "{\"task\":\"text-generation\",\"hardware\":%s}", m->hardware);
	st = call(api_finetune_detect, body, &j);
	ck_assert_msg(st == 200, "%s: finetune/detect %d", m->name, st);
	ck_assert_msg(strcmp(cJSON_GetObjectItem(j, "compute_profile")->valuestring, m->tier) == 0,
		      "%s: tier %s, want %s", m->name,
		      cJSON_GetObjectItem(j, "compute_profile")->valuestring, m->tier);
	if (!cJSON_IsNull(cJSON_GetObjectItem(j, "recommended_model")))
		ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "estimate"),
							       "fits")),
			      "%s: the recommended fine-tuning model does not fit", m->name);
	cJSON_Delete(j);

	/* recommend: every model offered fits when its settings are estimated again. */
	snprintf(body, sizeof(body), "{\"task\":\"text-generation\",\"limit\":3,\"hardware\":%s}",
		 m->hardware);
	ck_assert_int_eq(call(api_recommend, body, &j), 200);
	list = cJSON_GetObjectItem(j, "recommendations");
	ck_assert_msg(cJSON_GetArraySize(list) > 0, "%s: nothing recommended", m->name);
	cJSON_ArrayForEach(item, list)
	{
		ck_assert_msg(fits(cJSON_GetObjectItem(item, "settings"),
				   cJSON_GetObjectItem(item, "model")->valuestring, m->hardware),
			      "%s: %s does not fit", m->name,
			      cJSON_GetObjectItem(item, "model")->valuestring);
	}
	cJSON_Delete(j);

	/* config for an 8B model, then validate that very config: no errors (validate checks
	 * llama.cpp configs; on CUDA /api/config would weigh vLLM too). */
	snprintf(body, sizeof(body),
		 "{\"model\":\"llama-3.1-8b\",\"runtime\":\"llama.cpp\",\"hardware\":%s}",
		 m->hardware);
	st = call(api_config, body, &j);
	ck_assert_msg(st == 200, "%s: config %d", m->name, st);
	{
		cJSON *v, *cfg = cJSON_Duplicate(j, 1);
		char *text;
		cJSON_DeleteItemFromObject(cfg, "assumptions");
		cJSON_AddItemToObject(cfg, "hardware", cJSON_Parse(m->hardware));
		text = cJSON_PrintUnformatted(cfg);
		st = call(api_validate, text, &v);
		ck_assert_msg(st == 200, "%s: validate %d", m->name, st);
		ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(v, "is_valid")),
			      "%s: /api/config's own config is not valid: %s", m->name, text);
		cJSON_Delete(v);
		free(text);
		cJSON_Delete(cfg);
	}
	cJSON_Delete(j);
}
END_TEST

Suite *seed_hardware_suite(void)
{
	Suite *s = suite_create("seed_hardware");
	TCase *tc = tcase_create("routes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, each_route_on_each_seed_machine, 0,
			    (int)(sizeof(machines) / sizeof(machines[0])));
	suite_add_tcase(s, tc);
	return s;
}
