/*
 * Fuzz target: the profile files under --profiles, parsed as server/profiles/profiles.c parses them
 * and loaded into the catalogs as the daemon does. The first byte names the file ('d' devices.json,
 * 'm' models.json, 't' tiers.json, 'q' quality.json; any other byte by its value), the rest is its
 * content. Every file goes through rf_catalogs_from_profiles; a tiers.json that loads is put in
 * the daemon's env and asked POST /api/finetune/detect, the route that reads it.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "server/profiles/profiles.h"
#include "tests/fuzz/fuzz.h"

static void ask(const struct api_env *env, const char *path, const char *body)
{
	struct api_request req = {.method = API_POST,
				  .path = path,
				  .query = "",
				  .body = body,
				  .body_len = strlen(body)};
	struct api_reply reply = {0};

	api_dispatch(env, &req, &reply);
	/* A tiers file without the asked tier is a 503; anything but a crash or a 500 is fine. */
	fuzz_check_reply(&reply);
	api_reply_reset(&reply);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"devices.json", "models.json", "tiers.json",
					    "quality.json"};
	static struct rf_profiles p;
	const char *name;
	char *buf, err[512];
	cJSON *doc = NULL;
	struct rf_catalogs *c = NULL;

	if (size < 1 || size > RF_PROFILES_MAX_BYTES)
		return 0;
	name = data[0] == 'd' ? names[0] :
	       data[0] == 'm' ? names[1] :
	       data[0] == 't' ? names[2] :
	       data[0] == 'q' ? names[3] :
				names[data[0] % 4];
	buf = fuzz_strdup(data + 1, size - 1); /* the file reader NUL-terminates */
	if (rf_profile_parse(buf, size - 1, &doc, err, sizeof(err)) < 0) {
		free(buf);
		return 0;
	}
	free(buf);
	memset(&p, 0, sizeof(p));
	snprintf(p.files[0].name, sizeof(p.files[0].name), "%s", name);
	p.files[0].doc = doc;
	p.n_files = 1;
	if (rf_catalogs_from_profiles(&p, &c, err, sizeof(err)) == 0) {
		if (c->tiers) {
			struct api_env env = *fuzz_env();
			env.cat.tiers = c->tiers;
			ask(&env, "/api/finetune/detect", "{\"task\":\"text-generation\"}");
		}
		rf_catalogs_unref(c);
	}
	cJSON_Delete(doc);
	return 0;
}
