/*
 * Every recorded machine under tests/fixtures/machines/<name>/ is scanned with the real probes
 * and compared with its expected.json.
 *
 * A machine directory mirrors a root file system (proc/, sys/, etc/), and may hold:
 *   expected.json  the parts of the `hardware` object that must come out (a subset: every key
 *                  given must be present with this value; arrays must match in length and
 *                  element by element)
 *   machine.json   how to scan it: {"nvml_lib": "@fake" (the test-built fake libnvidia-ml) or a
 *                  path, "nvidia_smi": "bin/nvidia-smi", "sysctl": "bin/sysctl",
 *                  "probe_timeout_ms": N, "env": {"NAME": "value"}}; relative paths are taken
 *                  from the machine directory, and "@dir" inside an env value expands to it
 *   SOURCE.md      where each file came from (tests/data/fixtures, with any change explained)
 * The shipped profiles/devices.json is applied as the daemon applies it, so expected.json can
 * state the machine's profile_id and the bandwidth its GPUs get from their profile.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/device_json.h"
#include "api/hardware_json.h"
#include "core/hw/hw_profile.h"
#include "server/detect/detect.h"
#include "tests/test.h"

/* Compares expected (a subset) with actual; appends mismatches to report. */
static void subset_match(const cJSON *want, const cJSON *got, const char *path, char *report,
			 size_t cap, int *fails)
{
	char sub[512];
	size_t used = strlen(report);

	if (!got) {
		snprintf(report + used, cap - used, "  %s: missing\n", path);
		(*fails)++;
		return;
	}
	if (cJSON_IsObject(want)) {
		const cJSON *w;
		if (!cJSON_IsObject(got)) {
			snprintf(report + used, cap - used, "  %s: not an object\n", path);
			(*fails)++;
			return;
		}
		cJSON_ArrayForEach(w, want)
		{
			snprintf(sub, sizeof(sub), "%s.%s", path, w->string);
			subset_match(w, cJSON_GetObjectItemCaseSensitive(got, w->string), sub,
				     report, cap, fails);
		}
		return;
	}
	if (cJSON_IsArray(want)) {
		int n = cJSON_GetArraySize(want);
		if (!cJSON_IsArray(got) || cJSON_GetArraySize(got) != n) {
			snprintf(report + used, cap - used, "  %s: want an array of %d, got %d\n",
				 path, n, cJSON_IsArray(got) ? cJSON_GetArraySize(got) : -1);
			(*fails)++;
			return;
		}
		for (int i = 0; i < n; i++) {
			snprintf(sub, sizeof(sub), "%s[%d]", path, i);
			subset_match(cJSON_GetArrayItem(want, i), cJSON_GetArrayItem(got, i), sub,
				     report, cap, fails);
		}
		return;
	}
	if (cJSON_IsNumber(want) && cJSON_IsNumber(got)) {
		double a = want->valuedouble, b = got->valuedouble;
		if (fabs(a - b) <= 1e-9 * fmax(1.0, fabs(a)))
			return;
	} else if (cJSON_Compare(want, got, 1)) {
		return;
	}
	{
		char *ws = cJSON_PrintUnformatted(want), *gs = cJSON_PrintUnformatted(got);
		snprintf(report + used, cap - used, "  %s: want %s, got %s\n", path, ws, gs);
		free(ws);
		free(gs);
		(*fails)++;
	}
}

/* Resolves a machine.json path: "@fake" is the fake NVML, relative paths are under dir. */
static char *machine_path(const char *dir, const char *v)
{
	if (strcmp(v, "@fake") == 0) {
		const char *f = getenv("RIGFIT_FAKE_NVML_LIB");
		return strdup(f ? f : "build/fake/libnvidia-ml.so.1");
	}
	if (v[0] == '/')
		return strdup(v);
	return t_path(dir, v);
}

/* Sets the env of machine.json, expanding "@dir". */
static void machine_env(const cJSON *env, const char *dir)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, env)
	{
		char val[4096];
		const char *at = strstr(e->valuestring, "@dir");
		if (at)
			snprintf(val, sizeof(val), "%.*s%s%s", (int)(at - e->valuestring),
				 e->valuestring, dir, at + 4);
		else
			snprintf(val, sizeof(val), "%s", e->valuestring);
		setenv(e->string, val, 1);
	}
}

/* Scans one machine with the shipped device profiles applied, as the daemon does; returns the
 * number of mismatches (report filled). */
static int check_machine(const char *dir, const struct device_table *devices, char *report,
			 size_t cap)
{
	char *mpath = t_path(dir, "machine.json"), *epath = t_path(dir, "expected.json");
	char *mtext = t_read_file(mpath, NULL), *etext = t_read_file(epath, NULL);
	cJSON *mj = mtext ? cJSON_Parse(mtext) : cJSON_CreateObject();
	cJSON *want = etext ? cJSON_Parse(etext) : NULL, *got;
	char *nvml = NULL, *smi = NULL, *sysctl = NULL, *json;
	struct rf_detect_opts o = {.root = dir};
	struct hw_snapshot *s = malloc(sizeof(*s));
	const cJSON *v;
	int fails = 0;

	ck_assert_msg(want != NULL, "%s: expected.json missing or not JSON", dir);
	ck_assert_msg(mj != NULL, "%s: machine.json is not JSON", dir);
	if ((v = cJSON_GetObjectItem(mj, "nvml_lib")) && cJSON_IsString(v))
		o.nvml_lib = nvml = machine_path(dir, v->valuestring);
	if ((v = cJSON_GetObjectItem(mj, "nvidia_smi")) && cJSON_IsString(v))
		o.nvidia_smi = smi = machine_path(dir, v->valuestring);
	if ((v = cJSON_GetObjectItem(mj, "sysctl")) && cJSON_IsString(v))
		o.sysctl = sysctl = machine_path(dir, v->valuestring);
	if ((v = cJSON_GetObjectItem(mj, "probe_timeout_ms")) && cJSON_IsNumber(v))
		o.probe_timeout_ms = v->valueint;
	machine_env(cJSON_GetObjectItem(mj, "env"), dir);

	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	hw_apply_device_profiles(s, devices);
	json = api_hardware_render(s, NULL);
	got = cJSON_Parse(json);
	subset_match(want, got, "hardware", report, cap, &fails);

	cJSON_Delete(got);
	free(json);
	free(s);
	cJSON_Delete(want);
	cJSON_Delete(mj);
	free(mtext);
	free(etext);
	free(mpath);
	free(epath);
	free(nvml);
	free(smi);
	free(sysctl);
	return fails;
}

/* Loads the shipped profiles/devices.json. */
static void load_devices(struct device_table *t)
{
	char *path = t_path(t_src_dir(), "profiles/devices.json"), err[512];
	char *text = t_read_file(path, NULL);
	cJSON *doc = text ? cJSON_Parse(text) : NULL;

	ck_assert_msg(doc != NULL, "cannot read %s", path);
	ck_assert_msg(api_device_table_from_json(doc, t, err, sizeof(err)) == 0, "%s", err);
	cJSON_Delete(doc);
	free(text);
	free(path);
}

START_TEST(every_recorded_machine_matches_its_expected_json)
{
	char *root = t_path(t_src_dir(), "tests/fixtures/machines");
	struct dirent **list = NULL;
	int n = scandir(root, &list, NULL, alphasort), checked = 0, failed = 0;
	size_t cap = 65536;
	char *all = calloc(1, cap);
	struct device_table devices = {0};

	ck_assert_msg(n > 0, "no machines under %s", root);
	load_devices(&devices);
	for (int i = 0; i < n; i++) {
		char *dir, report[8192] = "";
		char *exp;
		if (list[i]->d_name[0] == '.') {
			free(list[i]);
			continue;
		}
		dir = t_path(root, list[i]->d_name);
		exp = t_path(dir, "expected.json");
		if (access(exp, R_OK) == 0) {
			int f = check_machine(dir, &devices, report, sizeof(report));
			checked++;
			if (f) {
				size_t used = strlen(all);
				failed++;
				snprintf(all + used, cap - used, "%s (%d mismatches):\n%s",
					 list[i]->d_name, f, report);
			}
		}
		free(exp);
		free(dir);
		free(list[i]);
	}
	free(list);
	free(root);
	device_table_clear(&devices);
	printf("machines: %d scanned, %d mismatched\n", checked, failed);
	ck_assert_msg(failed == 0, "%s", all);
	ck_assert_int_gt(checked, 0);
	free(all);
}
END_TEST

Suite *machines_suite(void)
{
	Suite *s = suite_create("machines");
	TCase *tc = tcase_create("fixtures");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, every_recorded_machine_matches_its_expected_json);
	suite_add_tcase(s, tc);
	return s;
}
