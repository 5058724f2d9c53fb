/*
 * The command line as a newcomer meets it, through the real binary: every command answers
 * --help and `rigfit help CMD`; the common questions asked with flags get the same answer as
 * the route's JSON body; --format summary|json|table; one-line errors for bad options; the
 * scan's progress note only on a terminal; and profile discovery (given, environment, beside
 * the binary, ./profiles, or a clear refusal).
 */
#define _XOPEN_SOURCE 700
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/err.h"
#include "server/profiles/profiles_find.h"
#include "tests/server/harness.h"
#include "tests/test.h"

static const char *const commands[] = {"serve",       "detect",   "estimate", "config", "recommend",
				       "validate",    "finetune", "models",   "names",  "bench",
				       "healthcheck", "version",  NULL};

#define MAX_ARGS 24

/* Fills argv (MAX_ARGS + 2 slots) with first, then args (NULL-terminated), then NULL. */
static void argv_of(const char **argv, const char *first, const char *const *args)
{
	int n = 1;

	argv[0] = first;
	while (args[n - 1] && n <= MAX_ARGS) {
		argv[n] = args[n - 1];
		n++;
	}
	argv[n] = NULL;
}

/* Runs the binary with args (NULL-terminated, at most MAX_ARGS) and returns its exit status. */
static int run(const char *const *args, char **out, char **err)
{
	const char *argv[MAX_ARGS + 2];

	argv_of(argv, t_bin(), args);
	return t_run(argv, out, err, 30000);
}

/* run() for the tests that repeat one code path per format or per bad option: under valgrind
 * they use the release binary (each traced run scans and estimates for tens of seconds), the
 * other cases keep the traced one, and the sanitizer build runs them all. */
static int run_bulk(const char *const *args, char **out, char **err)
{
	const char *rel = getenv("RIGFIT_REL_BIN");
	const char *argv[MAX_ARGS + 2];

	argv_of(argv, t_under_valgrind() && rel && *rel ? rel : t_bin(), args);
	return t_run(argv, out, err, 30000);
}

/* Asserts err is one "rigfit: ..." line naming what. */
static void assert_one_line(const char *err, const char *what)
{
	ck_assert_ptr_nonnull(err);
	ck_assert_msg(strncmp(err, "rigfit: ", 8) == 0 &&
			      strchr(err, '\n') == err + strlen(err) - 1,
		      "not one line: %s", err);
	ck_assert_msg(strstr(err, what) != NULL, "'%s' not in: %s", what, err);
}

START_TEST(every_command_answers_help)
{
	for (int i = 0; commands[i]; i++) {
		char usage[64], *out = NULL, *out2 = NULL, *out3 = NULL;
		const char *a[] = {commands[i], "--help", NULL};
		const char *b[] = {"help", commands[i], NULL};
		const char *c[] = {commands[i], "-h", NULL};

		snprintf(usage, sizeof(usage), "usage: rigfit %s", commands[i]);
		ck_assert_msg(run(a, &out, NULL) == 0, "%s --help failed", commands[i]);
		ck_assert_msg(strncmp(out, usage, strlen(usage)) == 0, "%s --help: %s", commands[i],
			      out);
		ck_assert_int_eq(run(b, &out2, NULL), 0);
		ck_assert_str_eq(out, out2);
		ck_assert_int_eq(run(c, &out3, NULL), 0);
		ck_assert_str_eq(out, out3);
		free(out);
		free(out2);
		free(out3);
	}
	{
		const char *list[] = {"help", NULL};
		const char *none[] = {NULL};
		const char *bad[] = {"help", "frobnicate", NULL};
		char *out = NULL, *err = NULL;

		ck_assert_int_eq(run(list, &out, NULL), 0);
		for (int i = 0; commands[i]; i++)
			ck_assert_msg(strstr(out, commands[i]) != NULL, "%s not listed",
				      commands[i]);
		free(out);
		/* No command at all is a usage error, with the list on stderr. */
		ck_assert_int_eq(run(none, &out, &err), 2);
		ck_assert_str_eq(out, "");
		ck_assert_ptr_nonnull(strstr(err, "estimate"));
		free(out);
		free(err);
		ck_assert_int_eq(run(bad, NULL, &err), 2);
		assert_one_line(err, "frobnicate");
		free(err);
	}
}
END_TEST

/* The answer of estimate as parsed JSON, from args after "estimate". */
static cJSON *estimate(const char *const *args)
{
	char *out = NULL, *err = NULL;
	const char *argv[MAX_ARGS + 2];
	int rc;
	cJSON *j;

	argv_of(argv, "estimate", args);
	rc = run(argv, &out, &err);
	ck_assert_msg(rc == 0, "rc %d: %s", rc, err);
	j = cJSON_Parse(out);
	ck_assert_msg(j != NULL, "not JSON: %s", out);
	free(out);
	free(err);
	return j;
}

START_TEST(flags_ask_the_same_question_as_the_body)
{
	char *dir = t_mkdtemp(), *req = t_path(dir, "req.json");
	char *profiles = t_path(t_src_dir(), "profiles");
	const char body[] = "{\"model\":\"llama-3.1-8b\",\"quant\":\"Q4_K_M\",\"n_ctx\":4096,"
			    "\"hardware_profile\":\"rtx-4090\",\"flash_attn\":true}";
	const char *by_body[] = {"--profiles", profiles, "--json", req, NULL};
	const char *by_flags[] = {"llama-3.1-8b",
				  "--quant",
				  "Q4_K_M",
				  "--ctx",
				  "4096",
				  "--hardware-profile",
				  "rtx-4090",
				  "--flash-attn",
				  "--profiles",
				  profiles,
				  NULL};
	const char *override[] = {"--profiles", profiles, "--json", req, "--ctx", "16384", NULL};
	const char *gpu[] = {"llama-3.1-8b", "--gpu", "RTX 3060 12GB",
			     "--gpu-count",  "2",     "--profiles",
			     profiles,       NULL};
	cJSON *a, *b, *c, *d;
	char *sa, *sb;

	ck_assert_int_eq(t_write_file(req, body, sizeof(body) - 1), 0);
	a = estimate(by_body);
	b = estimate(by_flags);
	sa = cJSON_PrintUnformatted(a);
	sb = cJSON_PrintUnformatted(b);
	ck_assert_str_eq(sa, sb);
	ck_assert_double_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(a, "settings"), "n_ctx")->valuedouble,
		4096);
	/* A flag given with a body overrides the body's field, and only that one. */
	c = estimate(override);
	ck_assert_double_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(c, "settings"), "n_ctx")->valuedouble,
		16384);
	ck_assert(cJSON_IsTrue(
		cJSON_GetObjectItem(cJSON_GetObjectItem(c, "settings"), "flash_attn")));
	/* A GPU named on the command line is completed from its device profile. */
	d = estimate(gpu);
	ck_assert_double_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(d, "hardware"), "gpus")->valuedouble, 2);
	ck_assert_str_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(d, "hardware"), "backend")->valuestring,
		"cuda");
	free(sa);
	free(sb);
	cJSON_Delete(a);
	cJSON_Delete(b);
	cJSON_Delete(c);
	cJSON_Delete(d);
	t_rmtree(dir);
	free(dir);
	free(req);
	free(profiles);
}
END_TEST

START_TEST(config_and_recommend_take_flags)
{
	char *profiles = t_path(t_src_dir(), "profiles"), *out = NULL, *err = NULL;
	const char *cfg[] = {"config",   "llama-3.1-8b", "--use-case", "long_context",
			     "--gpu",    "RTX 4090",     "--profiles", profiles,
			     "--format", "json",         NULL};
	const char *rec[] = {"recommend",          "--task",   "text-generation", "--limit", "2",
			     "--hardware-profile", "rtx-4090", "--profiles",      profiles,  NULL};
	cJSON *j;

	ck_assert_msg(run(cfg, &out, &err) == 0, "%s", err);
	j = cJSON_Parse(out);
	ck_assert_str_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "metadata"), "use_case")->valuestring,
		"long_context");
	cJSON_Delete(j);
	free(out);
	free(err);
	ck_assert_msg(run(rec, &out, &err) == 0, "%s", err);
	j = cJSON_Parse(out);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "recommendations")), 2);
	ck_assert_str_eq(cJSON_GetObjectItem(j, "task")->valuestring, "text-generation");
	cJSON_Delete(j);
	free(out);
	free(err);
	free(profiles);
}
END_TEST

/* Runs the command asked with flags and with the request body it stands for, asserts that both
 * answer the same bytes, and returns that answer parsed. */
static cJSON *same_answer(const char *const *by_flags, const char *const *by_body)
{
	char *a = NULL, *b = NULL, *err = NULL;
	cJSON *j;

	ck_assert_msg(run(by_flags, &a, &err) == 0, "%s", err);
	free(err);
	ck_assert_msg(run(by_body, &b, &err) == 0, "%s", err);
	free(err);
	ck_assert_str_eq(a, b);
	j = cJSON_Parse(a);
	ck_assert_ptr_nonnull(j);
	free(a);
	free(b);
	return j;
}

/* --cpu and --ram describe the host as a body's hardware.cpu.model and
 * hardware.memory.total_bytes do (a GPU with RAM beside it for a partial offload, or a CPU
 * alone), answer for answer; a bad --ram is a usage error. */
START_TEST(cpu_and_ram_flags_describe_the_host)
{
	char *dir = t_mkdtemp(), *profiles = t_path(t_src_dir(), "profiles");
	char *req = t_path(dir, "req.json"), *a = NULL, *err = NULL;
	static const char body[] =
		"{\"model\":\"llama-3.3-70b\",\"use_case\":\"long_context\",\"hardware\":{"
		"\"gpus\":[{\"name\":\"RTX 3060 12GB\"}],\"cpu\":{\"model\":\"Ryzen 7 7700X\"},"
		"\"memory\":{\"total_bytes\":68719476736}}}";
	const char *by_flags[] = {"config",       "llama-3.3-70b", "--use-case",
				  "long_context", "--gpu",         "RTX 3060 12GB",
				  "--cpu",        "Ryzen 7 7700X", "--ram",
				  "64",           "--profiles",    profiles,
				  "--format",     "json",          NULL};
	const char *by_body[] = {"config", "--json",   req,    "--profiles",
				 profiles, "--format", "json", NULL};
	const char *bad[] = {"config", "llama-3.3-70b", "--ram", "0", "--profiles", profiles, NULL};
	cJSON *j;

	ck_assert_int_eq(t_write_file(req, body, sizeof(body) - 1), 0);
	/* With the RAM known the 70B is split between the GPU and the host. */
	j = same_answer(by_flags, by_body);
	ck_assert(strstr(cJSON_GetObjectItem(j, "command")->valuestring, "-t 8 ") != NULL);
	ck_assert(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "settings"), "n_gpu_layers")
			  ->valuedouble < 80);
	cJSON_Delete(j);
	ck_assert_int_eq(run(bad, &a, &err), 2);
	assert_one_line(err, "--ram");
	free(a);
	free(err);
	t_rmtree(dir);
	free(dir);
	free(req);
	free(profiles);
}
END_TEST

/* finetune is POST /api/finetune/detect asked with flags: text generation unless --task says
 * otherwise, the same JSON as the route's body, and one-line errors naming the field. */
START_TEST(finetune_asks_the_detect_route_with_flags)
{
	char *dir = t_mkdtemp(), *profiles = t_path(t_src_dir(), "profiles");
	char *req = t_path(dir, "req.json"), *err = NULL;
	const char *body = "{\"task\":\"text-generation\",\"method\":\"lora\","
			   "\"max_seq_length\":4096,\"hardware\":{\"gpus\":[{\"name\":\"RTX 3060 "
			   "12GB\"}]}}";
	const char *flags[] = {"finetune", "--gpu",     "RTX 3060 12GB", "--method",
			       "lora",     "--seq-len", "4096",          "--profiles",
			       profiles,   "--format",  "json",          NULL};
	const char *json[] = {"finetune", "--json",   req,    "--profiles",
			      profiles,   "--format", "json", NULL};
	const char *bad[] = {"finetune", "--task", "poetry", "--profiles", profiles, NULL};
	cJSON *j;

	ck_assert_int_eq(t_write_file(req, body, strlen(body)), 0);
	j = same_answer(flags, json);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "task")), "text-generation");
	ck_assert_str_eq(cJSON_GetStringValue(
				 cJSON_GetObjectItem(cJSON_GetObjectItem(j, "settings"), "method")),
			 "lora");
	ck_assert_int_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(j, "settings"), "max_seq_length")->valueint,
		4096);
	cJSON_Delete(j);
	ck_assert_int_eq(run(bad, NULL, &err), 2);
	assert_one_line(err, "task");
	free(err);
	t_rmtree(dir);
	free(dir);
	free(req);
	free(profiles);
}
END_TEST

/* rigfit names lists what the questions accept, from the same catalogs they resolve against:
 * every model it lists is one estimate knows, and every GPU name one --gpu takes. */
START_TEST(names_are_what_the_questions_accept)
{
	char *profiles = t_path(t_src_dir(), "profiles"), *out = NULL, *err = NULL;
	const char *models[] = {"names", "models", "--profiles", profiles, NULL};
	const char *gpus[] = {"names", "gpus", "--profiles", profiles, NULL};
	const char *quants[] = {"names", "quants", NULL};
	const char *cpus[] = {"names", "cpus", "--profiles", profiles, NULL};
	const char *bad[] = {"names", "colours", NULL};
	int n = 0;

	ck_assert_msg(run(models, &out, &err) == 0, "%s", err);
	ck_assert_ptr_nonnull(strstr(out, "meta-llama/Llama-3.1-8B\n"));
	ck_assert_ptr_nonnull(strstr(out, "\nllama-3.1-8b\n"));
	for (const char *p = out; (p = strchr(p, '\n')); p++)
		n++;
	ck_assert_int_gt(n, 100);
	free(out);
	free(err);
	ck_assert_msg(run(gpus, &out, &err) == 0, "%s", err);
	ck_assert_ptr_nonnull(strstr(out, "RTX 4090\n"));
	free(out);
	free(err);
	/* CPU names are --cpu's, not --gpu's. */
	ck_assert_msg(run(cpus, &out, &err) == 0, "%s", err);
	ck_assert_ptr_nonnull(strstr(out, "Ryzen 7 7700X\n"));
	ck_assert_ptr_null(strstr(out, "RTX 4090\n"));
	free(out);
	free(err);
	ck_assert_msg(run(gpus, &out, &err) == 0, "%s", err);
	ck_assert_ptr_null(strstr(out, "Ryzen 7 7700X\n"));
	free(out);
	free(err);
	ck_assert_msg(run(quants, &out, &err) == 0, "%s", err);
	ck_assert_ptr_nonnull(strstr(out, "Q4_K_M\n"));
	ck_assert_ptr_nonnull(strstr(out, "MXFP4_MOE\n"));
	free(out);
	free(err);
	ck_assert_int_eq(run(bad, &out, &err), 2);
	assert_one_line(err, "models, quants, gpus");
	free(out);
	free(err);
	free(profiles);
}
END_TEST

/* validate is a check: a config that will not work exits 1 (its answer still printed), one
 * that works exits 0, as a linter does in a script or CI. */
START_TEST(validate_fails_a_config_that_will_not_work)
{
	char *dir = t_mkdtemp(), *profiles = t_path(t_src_dir(), "profiles");
	char *bad = t_path(dir, "bad.json"), *good = t_path(dir, "good.json");
	char *out = NULL, *err = NULL;
	const char *b = "{\"model\": \"llama-3.1-70b\", \"n_ctx\": 131072, \"n_gpu_layers\": 99}";
	const char *g = "{\"model\": \"llama-3.2-1b\", \"n_ctx\": 4096, \"n_gpu_layers\": 99}";
	const char *vb[] = {"validate",   "--json", bad,        "--gpu", "RTX 4090",
			    "--profiles", profiles, "--format", "json",  NULL};
	const char *vg[] = {"validate",   "--json", good,       "--gpu", "RTX 4090",
			    "--profiles", profiles, "--format", "json",  NULL};
	cJSON *j;

	ck_assert_int_eq(t_write_file(bad, b, strlen(b)), 0);
	ck_assert_int_eq(t_write_file(good, g, strlen(g)), 0);
	ck_assert_msg(run(vb, &out, &err) == 1, "%s", err);
	j = cJSON_Parse(out);
	ck_assert_ptr_nonnull(j);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "is_valid")));
	cJSON_Delete(j);
	free(out);
	free(err);
	ck_assert_msg(run(vg, &out, &err) == 0, "%s", err);
	j = cJSON_Parse(out);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "is_valid")));
	cJSON_Delete(j);
	free(out);
	free(err);
	t_rmtree(dir);
	free(dir);
	free(bad);
	free(good);
	free(profiles);
}
END_TEST

START_TEST(every_printing_command_takes_each_format)
{
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *const fmts[] = {"json", "summary", "table"};
	/* What each format of an estimate must show: the JSON's key, a summary label, a table
	 * path. */
	const char *const marks[] = {"\"fit_band\":", "Fit band ", "memory.total_bytes "};

	for (int f = 0; f < 3; f++) {
		const char *est[] = {"estimate", "llama-3.1-8b", "--hardware-profile",
				     "rtx-4090", "--profiles",   profiles,
				     "--format", fmts[f],        NULL};
		const char *det[] = {"detect", "--format", fmts[f], NULL};
		const char *ver[] = {"version", "--format", fmts[f], NULL};
		char *out = NULL, *err = NULL;

		ck_assert_msg(run_bulk(est, &out, &err) == 0, "%s: %s", fmts[f], err);
		ck_assert_msg(strstr(out, marks[f]) != NULL, "%s: %s", fmts[f], out);
		/* Only JSON is JSON. */
		ck_assert_int_eq(out[0] == '{', f == 0);
		free(out);
		free(err);
		ck_assert_int_eq(run_bulk(det, &out, NULL), 0);
		ck_assert_int_eq(out[0] == '{', f == 0);
		free(out);
		ck_assert_int_eq(run_bulk(ver, &out, NULL), 0);
		ck_assert_ptr_nonnull(strstr(out, "0."));
		free(out);
	}
	/* The other question commands and the benchmark history print each format too. */
	{
		char *db_dir = t_mkdtemp(), *db = t_path(db_dir, "rigfit.db");
		const char *rec_marks[] = {
			"\"recommendations\":", "Best first:", "\nrecommendations:\n"};
		const char *cfg_marks[] = {"\"command\":", "Command ", "\ncommand "};
		const char *bench_marks[] = {"\"runs\":", "runs", "runs"};
		for (int f = 0; f < 3; f++) {
			const char *rec[] = {"recommend", "--limit",
					     "2",         "--hardware-profile",
					     "rtx-4090",  "--profiles",
					     profiles,    "--format",
					     fmts[f],     NULL};
			const char *cfg[] = {"config",   "llama-3.1-8b", "--gpu",
					     "RTX 4090", "--profiles",   profiles,
					     "--format", fmts[f],        NULL};
			const char *bench[] = {"bench",  "list",     "--db",  db,  "--profiles",
					       profiles, "--format", fmts[f], NULL};
			char *out = NULL, *err = NULL;
			ck_assert_msg(run_bulk(rec, &out, &err) == 0, "%s", err);
			ck_assert_msg(strstr(out, rec_marks[f]) != NULL, "%s: %s", fmts[f], out);
			free(out);
			free(err);
			ck_assert_msg(run_bulk(cfg, &out, &err) == 0, "%s", err);
			ck_assert_msg(strstr(out, cfg_marks[f]) != NULL, "%s: %s", fmts[f], out);
			free(out);
			free(err);
			ck_assert_msg(run_bulk(bench, &out, &err) == 0, "%s", err);
			ck_assert_msg(strstr(out, bench_marks[f]) != NULL, "%s: %s", fmts[f], out);
			ck_assert_int_eq(out[0] == '{', f == 0);
			free(out);
			free(err);
		}
		t_rmtree(db_dir);
		free(db_dir);
		free(db);
	}
	{
		const char *bad[] = {"estimate", "llama-3.1-8b", "--format", "yaml", NULL};
		char *err = NULL;
		ck_assert_int_eq(run(bad, NULL, &err), 2);
		assert_one_line(err, "--format");
		free(err);
	}
	free(profiles);
}
END_TEST

/* A .gguf named on the command line is read from its own folder; --models-dir, when given,
 * is the rule, as the daemon's. */
START_TEST(a_gguf_on_the_command_line_is_read_from_its_folder)
{
	char *gguf = t_path(t_src_dir(), "tests/fuzz/corpus/gguf/llama-tiny.gguf");
	char *missing = t_path(t_src_dir(), "tests/fuzz/corpus/gguf/no-such.gguf");
	char *other = t_mkdtemp(); /* a models dir that does not hold it */
	char *out = NULL, *err = NULL;
	const char *here[] = {"estimate", gguf, "--format", "json", NULL};
	const char *elsewhere[] = {"estimate", gguf, "--models-dir", other, NULL};
	const char *gone[] = {"estimate", missing, NULL};

	ck_assert_msg(run(here, &out, &err) == 0, "%s", err);
	ck_assert_ptr_nonnull(strstr(out, "\"source\":\"gguf\""));
	free(out);
	free(err);
	out = err = NULL;
	ck_assert_int_eq(run(elsewhere, &out, &err), 2);
	assert_one_line(err, "not inside a models directory");
	free(out);
	free(err);
	out = err = NULL;
	ck_assert_int_eq(run(gone, &out, &err), 2);
	assert_one_line(err, "does not exist");
	free(out);
	free(err);
	free(gguf);
	free(missing);
	t_rmtree(other);
	free(other);
}
END_TEST

/* --model MODEL asks what the positional MODEL asks, for estimate and config (on a fixture
 * machine, so that both answers see the same free memory). */
START_TEST(model_as_a_flag_is_the_positional_model)
{
	char *root = t_path(t_src_dir(), "tests/fixtures/machines/nvidia-rtx3060-laptop");
	const char *const pairs[][2][10] = {
		{{"estimate", "llama-3.1-8b", "--quant", "Q8_0", "--root", root, "--format", "json",
		  NULL},
		 {"estimate", "--model", "llama-3.1-8b", "--quant", "Q8_0", "--root", root,
		  "--format", "json", NULL}},
		{{"config", "qwen2.5-7b", "--root", root, "--format", "json", NULL},
		 {"config", "--root", root, "--model=qwen2.5-7b", "--format", "json", NULL}},
	};

	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		char *a = NULL, *b = NULL, *ea = NULL, *eb = NULL;
		ck_assert_msg(run_bulk(pairs[i][0], &a, &ea) == 0, "%s", ea);
		ck_assert_msg(run_bulk(pairs[i][1], &b, &eb) == 0, "%s", eb);
		ck_assert_ptr_nonnull(strstr(a, "\"model\""));
		ck_assert_msg(strcmp(a, b) == 0, "%s: the answers differ", pairs[i][0][0]);
		free(a);
		free(b);
		free(ea);
		free(eb);
	}
	free(root);
}
END_TEST

START_TEST(bad_options_are_one_line_usage_errors)
{
	static const char *const cases[][6] = {
		{"estimate", "llama-3.1-8b", "--ctx", "lots", NULL, "--ctx"},
		{"estimate", "llama-3.1-8b", "--frob", NULL, NULL, "--frob"},
		{"estimate", "llama-3.1-8b", "--quant", NULL, NULL, "--quant needs a value"},
		{"estimate", "llama-3.1-8b", "--flash-attn=maybe", NULL, NULL, "--flash-attn"},
		{"estimate", "a", "b", NULL, NULL, "unexpected argument 'b'"},
		{"detect", "--probe-timeout-ms", "5", NULL, NULL, "--probe-timeout-ms"},
		{"detect", "--frob", NULL, NULL, NULL, "--frob"},
		{"healthcheck", "--listen", NULL, NULL, NULL, "--listen needs a value"},
		{"healthcheck", "--ready", "--wait", "0", NULL, "--wait must be 1 to 3600"},
		{"healthcheck", "--wait", "3601", NULL, NULL, "--wait must be 1 to 3600"},
		{"serve", "--frob", NULL, NULL, NULL, "--frob"},
		{"bench", "list", "--frob", "1", NULL, "--frob"},
		{"recommend", "--limit", "x", NULL, NULL, "--limit"},
		{"estimat", "llama-3.1-8b", NULL, NULL, NULL, "did you mean 'estimate'?"},
		{"estimate", "llama-3.1-8b", "--ctxx", "8", NULL, "did you mean '--ctx'?"},
		{"models", "--sorce", "catalog", NULL, NULL, "did you mean '--source'?"},
		/* A prefix of a flag is not that flag: getopt_long would take "--mod" for
		 * "--mode" and "--model" for "--models-dir". */
		{"estimate", "llama-3.1-8b", "--mod", "qlora", NULL, "did you mean '--mode'?"},
		{"models", "--model", "x", NULL, NULL, "unknown option '--model'"},
		{"detect", "--form", "json", NULL, NULL, "unknown option '--form'"},
		{"serve", "--lis", "127.0.0.1:0", NULL, NULL, "unknown option '--lis'"},
		{"estimate", "llama-3.1-8b", "--model", "qwen2.5-7b", NULL,
		 "one MODEL, given once"},
		{"help", "vaildate", NULL, NULL, NULL, "did you mean 'validate'?"},
		{"frobnicate", NULL, NULL, NULL, NULL, "unknown command 'frobnicate' (try"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL, *err = NULL;
		ck_assert_msg(run_bulk(cases[i], &out, &err) == 2, "case %zu: %s", i, err);
		ck_assert_str_eq(out, "");
		assert_one_line(err, cases[i][5]);
		free(out);
		free(err);
	}
	/* A model the catalog does not know is the route's 422, one line naming the field. */
	{
		char *profiles = t_path(t_src_dir(), "profiles"), *err = NULL;
		const char *a[] = {"estimate", "no-such-model", "--profiles", profiles, NULL};
		ck_assert_int_eq(run(a, NULL, &err), 2);
		assert_one_line(err, "model");
		free(err);
		free(profiles);
	}
}
END_TEST

/* Runs the binary with args, stderr on a new pseudo-terminal and stdout on a pipe; returns
 * what the terminal showed (malloc'd) and the exit status in *rc. */
static char *run_on_tty_as(const char *const *args, bool whole, const char *profiles, int *rc);

static char *run_on_tty(const char *const *args, int *rc)
{
	return run_on_tty_as(args, false, NULL, rc);
}

/* whole: standard input and output on the terminal too, as a person runs a command; profiles:
 * RIGFIT_PROFILES for the child (NULL: as inherited). */
static char *run_on_tty_as(const char *const *args, bool whole, const char *profiles, int *rc)
{
	int master = posix_openpt(O_RDWR | O_NOCTTY), out[2];
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	pid_t pid;
	int status;

	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	ck_assert_int_eq(pipe(out), 0);
	pid = fork();
	if (pid == 0) {
		int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
		const char *argv[MAX_ARGS + 2];
		argv_of(argv, t_bin(), args);
		dup2(slave, STDERR_FILENO);
		dup2(whole ? slave : out[1], STDOUT_FILENO);
		if (whole)
			dup2(slave, STDIN_FILENO);
		if (profiles)
			setenv("RIGFIT_PROFILES", profiles, 1);
		close(out[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	for (;;) {
		struct pollfd p = {master, POLLIN, 0};
		ssize_t got;
		char sink[4096];
		if (poll(&p, 1, 100) > 0) {
			got = read(master, buf + n, cap - n);
			if (got > 0)
				n += (size_t)got;
		}
		/* Drain stdout so the child never blocks on a full pipe. */
		fcntl(out[0], F_SETFL, O_NONBLOCK);
		while (read(out[0], sink, sizeof(sink)) > 0)
			;
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
	}
	while (poll(&(struct pollfd){master, POLLIN, 0}, 1, 50) > 0 && n < cap) {
		ssize_t got = read(master, buf + n, cap - n);
		if (got <= 0)
			break;
		n += (size_t)got;
	}
	buf[n] = '\0';
	close(master);
	close(out[0]);
	*rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	return buf;
}

START_TEST(the_scan_says_so_on_a_terminal_only)
{
	char *profiles = t_path(t_src_dir(), "profiles"), *tty, *err = NULL;
	const char *args[] = {"estimate", "llama-3.1-8b", "--profiles", profiles, NULL};
	int rc;

	tty = run_on_tty(args, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_msg(strstr(tty, "scanning this machine") != NULL, "terminal showed: %s", tty);
	/* The note is erased once the scan is done: it ends with an erase-line sequence. */
	ck_assert_ptr_nonnull(strstr(tty, "\r\033[K"));
	free(tty);
	/* Not a terminal: not a byte on stderr. */
	ck_assert_int_eq(run(args, NULL, &err), 0);
	ck_assert_str_eq(err, "");
	free(err);
	free(profiles);
}
END_TEST

/* The first question needs no arguments: at a terminal, `rigfit` and `rigfit recommend` print
 * the table of what fits this machine, best first (model, quant, context, speed, memory, fit
 * verdict); a script gets the usage and exit status 2. */
START_TEST(the_first_answer_needs_no_arguments)
{
	char *profiles = t_path(t_src_dir(), "profiles"), *tty, *err = NULL;
	const char *none[] = {NULL};
	const char *rec[] = {"recommend", NULL};
	const char *bare[] = {t_bin(), NULL};
	int rc;

	for (int i = 0; i < 2; i++) {
		tty = run_on_tty_as(i == 0 ? none : rec, true, profiles, &rc);
		ck_assert_msg(rc == 0, "%s", tty);
		ck_assert_msg(strstr(tty, "MODEL") && strstr(tty, "QUANT") &&
				      strstr(tty, "CONTEXT") && strstr(tty, "DECODE") &&
				      strstr(tty, "FIT"),
			      "%s", tty);
		ck_assert_msg(strstr(tty, "   1  "), "no first row: %s", tty);
		free(tty);
	}
	/* Not a terminal: the usage, exit status 2. */
	ck_assert_int_eq(t_run(bare, NULL, &err, 20000), 2);
	ck_assert_ptr_nonnull(strstr(err, "usage: rigfit"));
	free(err);
	free(profiles);
}
END_TEST

/* The fit table's MEMORY is what must stay resident (the answer's memory_needed_bytes): on a
 * CPU host the mapped pages of repacked tensors are page cache the kernel takes back, so the
 * total (file and repacked copy both) would show more than the machine has at a 56% fit. */
START_TEST(the_fit_table_shows_the_memory_that_stays_resident)
{
	static const char body[] =
		"{\"limit\":3,\"hardware\":{\"memory\":{\"total_bytes\":34359738368},\"cpu\":{"
		"\"physical_cores\":8,\"isa\":[\"avx2\",\"fma\",\"f16c\"]}}}";
	char *dir = t_mkdtemp(), *file = t_path(dir, "body.json"), *out = NULL, *table = NULL;
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *json[] = {"recommend", "--json",     file,     "--format",
			      "json",      "--profiles", profiles, "--no-host-bench",
			      NULL};
	const char *summary[] = {"recommend", "--json",          file,
				 "--format",  "summary",         "--profiles",
				 profiles,    "--no-host-bench", NULL};
	const cJSON *e;
	cJSON *j;
	int shown = 0;

	ck_assert_int_eq(t_write_file(file, body, strlen(body)), 0);
	ck_assert_int_eq(run(json, &out, NULL), 0);
	ck_assert_int_eq(run(summary, &table, NULL), 0);
	j = cJSON_Parse(out);
	ck_assert_ptr_nonnull(j);
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(j, "recommendations"))
	{
		const cJSON *est = cJSON_GetObjectItemCaseSensitive(e, "estimate");
		double need = cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(est, "memory_needed_bytes"));
		double total = cJSON_GetNumberValue(
			cJSON_GetObjectItemCaseSensitive(est, "memory_total_bytes"));
		char gib[32];

		snprintf(gib, sizeof(gib), "%.1f GiB", need / 1073741824.0);
		ck_assert_msg(strstr(table, gib), "%s not in:\n%s", gib, table);
		shown += need < total;
	}
	ck_assert_int_ge(shown, 1);
	cJSON_Delete(j);
	free(out);
	free(table);
	t_rmtree(dir);
	free(dir);
	free(file);
	free(profiles);
}
END_TEST

START_TEST(profiles_are_found_given_from_the_environment_or_beside_the_binary)
{
	char *root = t_mkdtemp(), *exe = t_path(root, "bin/rigfit"), *dir, *cwd;
	char out[4200], err[600];

	/* Nothing anywhere: a refusal that says what to do. */
	cwd = getcwd(NULL, 0);
	ck_assert_int_eq(chdir(root), 0);
	ck_assert_int_eq(rf_profiles_find(NULL, NULL, exe, out, sizeof(out), err, sizeof(err)),
			 RF_E_NOT_FOUND);
	ck_assert_ptr_nonnull(strstr(err, "--profiles"));
	ck_assert_ptr_nonnull(strstr(err, "share/rigfit/profiles"));
	/* An installed tree: PREFIX/bin/rigfit reads PREFIX/share/rigfit/profiles. */
	t_put(root, "bin/rigfit", "");
	t_put(root, "share/rigfit/profiles/models.json", "{}");
	ck_assert_int_eq(rf_profiles_find(NULL, "", exe, out, sizeof(out), err, sizeof(err)), 0);
	dir = t_path(root, "bin/../share/rigfit/profiles");
	ck_assert_str_eq(out, dir);
	/* The environment, then a flag, win over the search, even where nothing is. */
	ck_assert_int_eq(rf_profiles_find(NULL, "/env/p", exe, out, sizeof(out), err, sizeof(err)),
			 0);
	ck_assert_str_eq(out, "/env/p");
	ck_assert_int_eq(
		rf_profiles_find("/flag/p", "/env/p", exe, out, sizeof(out), err, sizeof(err)), 0);
	ck_assert_str_eq(out, "/flag/p");
	/* A checkout: ./profiles when nothing is beside the binary. */
	t_put(root, "profiles/models.json", "{}");
	ck_assert_int_eq(rf_profiles_find(NULL, NULL, "/nowhere/rigfit", out, sizeof(out), err,
					  sizeof(err)),
			 0);
	ck_assert_str_eq(out, "./profiles");
	/* A checkout's build/rigfit, started from any folder, reads the checkout's profiles. */
	{
		char *build_exe = t_path(root, "checkout/build/rigfit");
		char *tree = t_path(root, "checkout/build/../profiles");
		t_put(root, "checkout/profiles/models.json", "{}");
		t_put(root, "checkout/build/rigfit", "");
		ck_assert_int_eq(chdir("/"), 0);
		ck_assert_int_eq(rf_profiles_find(NULL, NULL, build_exe, out, sizeof(out), err,
						  sizeof(err)),
				 0);
		ck_assert_str_eq(out, tree);
		free(build_exe);
		free(tree);
	}
	ck_assert_int_eq(chdir(cwd), 0);
	free(cwd);
	free(dir);
	t_rmtree(root);
	free(root);
	free(exe);
}
END_TEST

START_TEST(a_binary_without_profiles_says_so)
{
	char *dir = t_mkdtemp(), *err = NULL;
	/* From a directory without ./profiles, with nothing beside the test binary. */
	const char *argv[] = {"/bin/sh",
			      "-c",
			      "cd \"$0\" && unset RIGFIT_PROFILES && exec \"$@\"",
			      dir,
			      t_bin(),
			      "estimate",
			      "llama-3.1-8b",
			      NULL};
	const char *serve[] = {
		"/bin/sh",  "-c",          "cd \"$0\" && unset RIGFIT_PROFILES && exec \"$@\"",
		dir,        t_bin(),       "serve",
		"--listen", "127.0.0.1:0", NULL};

	ck_assert_int_eq(t_run(argv, NULL, &err, 20000), 1);
	assert_one_line(err, "no profiles found");
	free(err);
	ck_assert_int_eq(t_run(serve, NULL, &err, 20000), 1);
	ck_assert_ptr_nonnull(strstr(err, "no profiles found"));
	free(err);
	t_rmtree(dir);
	free(dir);
}
END_TEST

Suite *cli_suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_set_timeout(tc, t_under_valgrind() ? 1800 : 120);
	tcase_add_test(tc, every_command_answers_help);
	tcase_add_test(tc, flags_ask_the_same_question_as_the_body);
	tcase_add_test(tc, config_and_recommend_take_flags);
	tcase_add_test(tc, cpu_and_ram_flags_describe_the_host);
	tcase_add_test(tc, validate_fails_a_config_that_will_not_work);
	tcase_add_test(tc, the_first_answer_needs_no_arguments);
	tcase_add_test(tc, the_fit_table_shows_the_memory_that_stays_resident);
	tcase_add_test(tc, finetune_asks_the_detect_route_with_flags);
	tcase_add_test(tc, names_are_what_the_questions_accept);
	tcase_add_test(tc, every_printing_command_takes_each_format);
	tcase_add_test(tc, bad_options_are_one_line_usage_errors);
	tcase_add_test(tc, model_as_a_flag_is_the_positional_model);
	tcase_add_test(tc, a_gguf_on_the_command_line_is_read_from_its_folder);
	tcase_add_test(tc, the_scan_says_so_on_a_terminal_only);
	tcase_add_test(tc, profiles_are_found_given_from_the_environment_or_beside_the_binary);
	tcase_add_test(tc, a_binary_without_profiles_says_so);
	suite_add_tcase(s, tc);
	return s;
}
