/*
 * Every llama-server command rigfit writes runs as printed: /api/config over catalog models x
 * machines x use cases (and the settings users set: --no-mmap, n_parallel, a long context),
 * each command split into words and every flag checked against llama-server's own list, with
 * the values it takes (tests/data/llama-server-args.txt, pinned from common/arg.cpp of the
 * llama.cpp that node-llama-cpp ships, by tests/tools/pin_llama_args.py). A flag that llama.cpp
 * renamed or dropped (--no-mmap became --load-mode) fails here before a user finds it.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/runtime_config.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define MAX_FLAGS 1024

static struct device_table devices;
static struct model_catalog *models;

struct flag {
	char name[64];
	int values;
};

static struct flag flags[MAX_FLAGS];
static int n_flags;

static void setup(void)
{
	char *path = t_path(t_data_dir(), "llama-server-args.txt");
	size_t len = 0;
	char *text = t_read_file(path, &len), *line, *next;

	t_profiles_load(&devices, &models, NULL);
	ck_assert_msg(text != NULL, "missing %s", path);
	n_flags = 0;
	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (*line == '#' || !*line)
			continue;
		ck_assert_int_lt(n_flags, MAX_FLAGS);
		ck_assert_int_eq(
			sscanf(line, "%63s %d", flags[n_flags].name, &flags[n_flags].values), 2);
		n_flags++;
	}
	free(text);
	free(path);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, NULL);
}

/* The values flag takes, or -1 when llama-server does not know it. */
static int flag_values(const char *name)
{
	for (int i = 0; i < n_flags; i++)
		if (strcmp(flags[i].name, name) == 0)
			return flags[i].values;
	return -1;
}

/* Checks one llama-server command: the program, then flags each with its values. */
static void check_command(const char *cmd, const char *body)
{
	char buf[2048], *save = NULL, *w;
	int words = 0;

	ck_assert_msg(strlen(cmd) < sizeof(buf), "command too long: %s", cmd);
	snprintf(buf, sizeof(buf), "%s", cmd);
	w = strtok_r(buf, " ", &save);
	ck_assert_str_eq(w, "llama-server");
	while ((w = strtok_r(NULL, " ", &save)) != NULL) {
		int v = flag_values(w);
		words++;
		ck_assert_msg(w[0] == '-', "'%s' is no flag in: %s (%s)", w, cmd, body);
		ck_assert_msg(v >= 0, "llama-server has no flag %s: %s (%s)", w, cmd, body);
		for (int i = 0; i < v; i++) {
			const char *val = strtok_r(NULL, " ", &save);
			ck_assert_msg(val != NULL && val[0] != '\0', "%s takes a value: %s", w,
				      cmd);
			ck_assert_msg(!(val[0] == '-' && val[1] == '-'), "%s takes a value: %s", w,
				      cmd);
		}
	}
	ck_assert_int_gt(words, 3);
}

static int config(const char *body, cJSON **out)
{
	struct api_env env = {
		.version = "test", .devices = &devices, .models = models, .quality = t_quality()};
	struct api_request req = {.method = API_POST,
				  .path = "/api/config",
				  .query = "",
				  .body = body,
				  .body_len = strlen(body)};
	struct api_reply r = {0};
	int status;

	api_config(&env, &req, &r);
	status = r.status;
	*out = cJSON_ParseWithLength(r.body, r.len);
	api_reply_reset(&r);
	return status;
}

START_TEST(every_llama_server_command_parses)
{
	static const char *const model_ids[] = {
		"llama-3.2-1b",   "llama-3.1-8b",  "qwen2.5-7b",   "qwen3-30b-a3b", "gpt-oss-20b",
		"gemma-3-27b-it", "llama-3.3-70b", "mixtral-8x7b", "phi-4",         "qwen2.5-32b",
	};
	static const char *const machines[] = {
		"\"hardware_profile\":\"rtx-3060-12gb\"",
		"\"hardware_profile\":\"rtx-4090\"",
		"\"hardware\":{\"gpus\":[{\"name\":\"RTX 3090\",\"count\":2}],\"memory\":{"
		"\"total_bytes\":137438953472}}",
		"\"hardware\":{\"gpus\":[{\"name\":\"RTX 3060 12GB\"}],\"memory\":{\"total_bytes\":"
		"68719476736}}",
		"\"hardware\":{\"cpu\":{\"model\":\"AMD Ryzen 9 7950X\",\"physical_cores\":16},"
		"\"memory\":{\"total_bytes\":68719476736},\"gpus\":[]}",
		"\"hardware\":{\"gpus\":[{\"name\":\"Apple M2 Max\"}],\"memory\":{\"total_bytes\":"
		"68719476736}}",
	};
	static const char *const extras[] = {
		"\"use_case\":\"general\"",
		"\"use_case\":\"long_context\"",
		"\"use_case\":\"speed\",\"use_mmap\":false",
		"\"use_case\":\"quality\",\"n_parallel\":4",
	};
	int checked = 0;

	for (size_t m = 0; m < sizeof(model_ids) / sizeof(model_ids[0]); m++)
		for (size_t h = 0; h < sizeof(machines) / sizeof(machines[0]); h++)
			for (size_t x = 0; x < sizeof(extras) / sizeof(extras[0]); x++) {
				char body[1024];
				cJSON *a = NULL, *alt;
				const cJSON *it;
				snprintf(body, sizeof(body),
					 "{\"model\":\"%s\",\"runtime\":\"llama.cpp\",%s,%s}",
					 model_ids[m], machines[h], extras[x]);
				if (config(body, &a) != 200) { /* nothing fits: no command */
					cJSON_Delete(a);
					continue;
				}
				check_command(
					cJSON_GetStringValue(cJSON_GetObjectItem(a, "command")),
					body);
				checked++;
				alt = cJSON_GetObjectItem(a, "alternatives");
				cJSON_ArrayForEach(it, alt)
				{
					const char *c = cJSON_GetStringValue(
						cJSON_GetObjectItem(it, "command"));
					if (c && strncmp(c, "llama-server", 12) == 0) {
						check_command(c, body);
						checked++;
					}
				}
				cJSON_Delete(a);
			}
	printf("commands: %d llama-server commands checked against %d pinned flags\n", checked,
	       n_flags);
	ck_assert_int_gt(checked, 150);
}
END_TEST

/* The check can fail: flags llama-server lacks, or a flag without its value, are caught. */
START_TEST(the_check_knows_a_wrong_flag)
{
	ck_assert_int_eq(flag_values("--no-mmap"), -1); /* renamed: --load-mode */
	ck_assert_int_eq(flag_values("-ngl"), 1);
	ck_assert_int_eq(flag_values("-hf"), 1);
	ck_assert_int_eq(flag_values("--load-mode"), 1);
	ck_assert_int_eq(flag_values("-nkvo"), 0);
	ck_assert_int_eq(flag_values("--frobnicate"), -1);
}
END_TEST

Suite *commands_suite(void)
{
	Suite *s = suite_create("commands");
	TCase *tc = tcase_create("commands");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, every_llama_server_command_parses);
	tcase_add_test(tc, the_check_knows_a_wrong_flag);
	suite_add_tcase(s, tc);
	return s;
}
