/*
 * The helpers of tests/fuzz/fuzz.h: input splitting and the request targets' static env.
 */
#include "tests/fuzz/fuzz.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/hardware_json.h"
#include "server/detect/detect.h"
#include "server/profiles/profiles.h"

const char *fuzz_src_dir(void)
{
	const char *d = getenv("RIGFIT_SRC_DIR");
	return d && *d ? d : ".";
}

/* Returns the first FUZZ_SEP in p[0..len), or NULL. */
static const char *find_sep(const char *p, size_t len)
{
	for (size_t i = 0; i + FUZZ_SEP_LEN <= len; i++)
		if (memcmp(p + i, FUZZ_SEP, FUZZ_SEP_LEN) == 0)
			return p + i;
	return NULL;
}

int fuzz_split(const uint8_t *data, size_t size, struct fuzz_part *parts, int n)
{
	const char *p = (const char *)data, *end = p + size;
	int found = 0;

	for (int i = 0; i < n; i++)
		parts[i] = (struct fuzz_part){end, 0};
	while (found < n) {
		const char *sep = NULL;
		if (found < n - 1)
			sep = find_sep(p, (size_t)(end - p));
		parts[found].p = p;
		parts[found].len = sep ? (size_t)(sep - p) : (size_t)(end - p);
		found++;
		if (!sep)
			break;
		p = sep + FUZZ_SEP_LEN;
	}
	return found;
}

char *fuzz_strdup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (!s)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "fuzz env: %s: %s (run from the repository root or set RIGFIT_SRC_DIR)\n",
		what, why);
	abort();
}

const struct api_env *fuzz_env(void)
{
	static struct api_env env;
	static struct api_snapshot snap;
	static struct rf_profiles *profiles;
	static struct rf_catalogs *catalogs;
	char dir[4096], err[512];

	if (env.version)
		return &env;
	snprintf(dir, sizeof(dir), "%s/profiles", fuzz_src_dir());
	if (rf_profiles_load(dir, &profiles, err, sizeof(err)) < 0)
		die(dir, err);
	if (rf_catalogs_from_profiles(profiles, &catalogs, err, sizeof(err)) < 0)
		die(dir, err);
	snprintf(dir, sizeof(dir), "%s/tests/fixtures/machines/" FUZZ_MACHINE, fuzz_src_dir());
	struct rf_detect_opts o = {.root = dir};
	if (rf_detect_scan(&o, &snap.hw) < 0)
		die(dir, "scan failed");
	snap.json = api_hardware_render(&snap.hw, &snap.json_len);
	if (!snap.json)
		die(dir, "cannot render the snapshot");
	snap.seq = 1;
	env.uptime_s = 1.0;
	env.now_ms = INT64_C(1795000000000);
	env.snapshot = &snap;
	env.scan_interval_s = 60;
	env.cat.devices = &catalogs->table;
	env.cat.models = catalogs->models;
	env.cat.tiers = catalogs->tiers;
	env.cat.quality = catalogs->quality;
	env.version = "fuzz";
	return &env;
}

void fuzz_check_reply(const struct api_reply *reply)
{
	const char *body = reply->body ? reply->body : reply->borrowed_body;

	if (reply->status < 200 || reply->status > 599 || reply->status == 500) {
		fprintf(stderr, "fuzz: status %d: %.*s\n", reply->status, (int)reply->len,
			body ? body : "");
		abort();
	}
	if (body && reply->content_type && strstr(reply->content_type, "json")) {
		cJSON *j = cJSON_ParseWithLength(body, reply->len);
		if (!j) {
			fprintf(stderr, "fuzz: %d reply is not JSON: %.*s\n", reply->status,
				(int)reply->len, body);
			abort();
		}
		cJSON_Delete(j);
	}
}
