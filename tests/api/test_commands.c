/*
 * Every command rigfit writes runs as printed: /api/config over catalog models x machines x
 * use cases (and the settings users set: --no-mmap, n_parallel, a long context), each command
 * split into words and every flag checked against the runtime's own list, with the values it
 * takes: llama-server's (tests/data/llama-server-args.txt, pinned from common/arg.cpp of the
 * llama.cpp that node-llama-cpp ships, by tests/tools/pin_llama_args.py) and vllm serve's
 * engine arguments (tests/data/vllm-serve-args.txt, from vLLM's arg_utils.py, its header says
 * which). A flag that a runtime renamed or dropped (--no-mmap became --load-mode) fails here
 * before a user finds it.
 *
 * And every command names an artifact that exists for what it loads: a repository the catalog
 * lists for that model and format (never one made up in code), the chat release where the
 * catalog knows one, and AWQ only where an AWQ checkpoint is listed.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api.h"
#include "api/recommend.h"
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

struct flag_list {
	struct flag f[MAX_FLAGS];
	int n;
};

static struct flag_list llama_flags, vllm_flags;

/* Reads a pinned list: one "flag values" per line, # comments. */
static void load_flags(const char *name, struct flag_list *l)
{
	char *path = t_path(t_data_dir(), name);
	size_t len = 0;
	char *text = t_read_file(path, &len), *line, *next;

	ck_assert_msg(text != NULL, "missing %s", path);
	l->n = 0;
	for (line = text; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (*line == '#' || !*line)
			continue;
		ck_assert_int_lt(l->n, MAX_FLAGS);
		ck_assert_int_eq(sscanf(line, "%63s %d", l->f[l->n].name, &l->f[l->n].values), 2);
		l->n++;
	}
	free(text);
	free(path);
}

static void setup(void)
{
	t_profiles_load(&devices, &models, NULL);
	load_flags("llama-server-args.txt", &llama_flags);
	load_flags("vllm-serve-args.txt", &vllm_flags);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, NULL);
}

/* The values flag takes in l, or -1 when the runtime does not know it. */
static int list_values(const struct flag_list *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (strcmp(l->f[i].name, name) == 0)
			return l->f[i].values;
	return -1;
}

static int flag_values(const char *name)
{
	return list_values(&llama_flags, name);
}

/* Checks one command: the program (llama-server, or vllm serve and its model), then flags each
 * with its values. */
static void check_command(const char *cmd, const char *body)
{
	char buf[2048], *save = NULL, *w;
	const struct flag_list *l = &llama_flags;
	int words = 0;

	ck_assert_msg(strlen(cmd) < sizeof(buf), "command too long: %s", cmd);
	snprintf(buf, sizeof(buf), "%s", cmd);
	w = strtok_r(buf, " ", &save);
	if (strcmp(w, "vllm") == 0) {
		l = &vllm_flags;
		ck_assert_str_eq(strtok_r(NULL, " ", &save), "serve");
		w = strtok_r(NULL, " ", &save); /* the model, vllm serve's positional argument */
		ck_assert_msg(w && w[0] != '-', "vllm serve without a model: %s", cmd);
	} else {
		ck_assert_str_eq(w, "llama-server");
	}
	while ((w = strtok_r(NULL, " ", &save)) != NULL) {
		int v = list_values(l, w);
		words++;
		ck_assert_msg(w[0] == '-', "'%s' is no flag in: %s (%s)", w, cmd, body);
		ck_assert_msg(v >= 0, "%s has no flag %s: %s (%s)",
			      l == &vllm_flags ? "vllm serve" : "llama-server", w, cmd, body);
		for (int i = 0; i < v; i++) {
			const char *val = strtok_r(NULL, " ", &save);
			ck_assert_msg(val != NULL && val[0] != '\0', "%s takes a value: %s", w,
				      cmd);
			ck_assert_msg(!(val[0] == '-' && val[1] == '-'), "%s takes a value: %s", w,
				      cmd);
		}
	}
	ck_assert_int_ge(words, 3);
}

/* The word after prefix in cmd (up to a space) into out, or "" when prefix is not there. */
static void word_after(const char *cmd, const char *prefix, char *out, size_t n)
{
	const char *p = strstr(cmd, prefix);
	size_t k = 0;

	if (p)
		for (p += strlen(prefix); *p && *p != ' ' && k + 1 < n; p++)
			out[k++] = *p;
	out[k] = '\0';
}

/* Checks that cmd, written for catalog model m at precision prec, names an artifact the catalog
 * lists for what it loads: vllm serve a checkpoint of that format (AWQ only from an AWQ
 * checkpoint; fp8 from an FP8 checkpoint or quantized on load from the chat release; bf16 the
 * chat release), llama-server -hf a GGUF repository holding that file type (else a placeholder
 * path, only where the catalog lists no repository of the release). Returns 1 when the command names a
 * repository to download. */
static int check_artifact(const struct model_entry *m, const char *cmd, const char *prec,
			  const char *body)
{
	const char *chat = model_chat_id(m), *own = chat ? chat : m->id;
	char word[256];

	ck_assert_msg(strstr(cmd, "--quantization gptq") == NULL, "%s (%s)", cmd, body);
	if (strncmp(cmd, "vllm serve ", 11) == 0) {
		const char *awq = model_ckpt_repo(m, MODEL_CKPT_AWQ);
		const char *fp8 = model_ckpt_repo(m, MODEL_CKPT_FP8);
		bool flag = strstr(cmd, "--quantization") != NULL;
		word_after(cmd, "vllm serve ", word, sizeof(word));
		if (strcmp(prec, "awq") == 0) {
			ck_assert_msg(awq != NULL, "AWQ without an AWQ checkpoint: %s (%s)", cmd,
				      body);
			ck_assert_msg(strcmp(word, awq) == 0 && !flag, "%s (%s)", cmd, body);
		} else if (strcmp(prec, "fp8") == 0 && fp8) {
			ck_assert_msg(strcmp(word, fp8) == 0 && !flag, "%s (%s)", cmd, body);
		} else if (strcmp(prec, "fp8") == 0) {
			const char *q = strstr(cmd, "--quantization fp8");
			ck_assert_msg(strcmp(word, own) == 0 && q && (q[18] == ' ' || !q[18]),
				      "%s (%s)", cmd, body);
		} else {
			ck_assert_msg(strcmp(prec, "bf16") == 0 || strcmp(prec, "mxfp4") == 0,
				      "precision %s: %s", prec, cmd);
			ck_assert_msg(strcmp(word, own) == 0 && !flag, "%s (%s)", cmd, body);
		}
		/* A chat use case never gets the base id when the catalog knows the chat one. */
		ck_assert_msg(!chat || strcmp(chat, m->id) == 0 || strcmp(word, m->id) != 0,
			      "base model served for chat: %s (%s)", cmd, body);
		return 1;
	}
	word_after(cmd, " -hf ", word, sizeof(word));
	if (word[0]) {
		char *colon = strchr(word, ':');
		int ft = rf_ftype_from_name(prec);
		const struct model_gguf_repo *g = NULL;
		if (colon)
			*colon = '\0';
		for (int i = 0; i < m->artifacts.n_gguf; i++)
			if (strcmp(m->artifacts.gguf[i].repo, word) == 0)
				g = &m->artifacts.gguf[i];
		ck_assert_msg(g != NULL, "-hf %s is not a repository the catalog lists for %s (%s)",
			      word, m->id, body);
		ck_assert_msg(ft >= 0 && ft < 64 && (g->ftypes & ((uint64_t)1 << ft)),
			      "%s does not hold %s: %s", word, prec, cmd);
		ck_assert_msg(colon ? strcmp(colon + 1, prec) == 0 :
				      g->ftypes == ((uint64_t)1 << ft),
			      "-hf without the file type of a repository holding several: %s", cmd);
		return 1;
	}
	word_after(cmd, "llama-server -m ", word, sizeof(word));
	ck_assert_msg(strncmp(word, "/path/to/", 9) == 0, "a file name that is no placeholder: %s",
		      cmd);
	ck_assert_msg(m->artifacts.n_gguf == 0,
		      "a placeholder where the catalog lists a repository: %s (%s)", cmd, body);
	return 0;
}

static int config(const char *body, cJSON **out)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .cat.quality = t_quality()};
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
	       llama_flags.n);
	ck_assert_int_gt(checked, 150);
}
END_TEST

/* Every catalog model x machines x both runtimes: each command parses, and names what the
 * catalog lists (check_artifact). */
START_TEST(every_command_names_a_listed_artifact)
{
	static const char *const machines[] = {
		"\"hardware_profile\":\"rtx-4090\"",
		"\"hardware_profile\":\"h100-sxm\"",
		"\"hardware\":{\"gpus\":[{\"name\":\"RTX 3090\",\"count\":2}],\"memory\":{"
		"\"total_bytes\":137438953472}}",
		"\"hardware\":{\"cpu\":{\"model\":\"AMD Ryzen 9 7950X\",\"physical_cores\":16},"
		"\"memory\":{\"total_bytes\":68719476736},\"gpus\":[]}",
	};
	static const char *const runtimes[] = {"llama.cpp", "vllm"};
	int checked = 0, downloads = 0, vllm = 0, awq = 0;

	for (size_t i = 0; i < models->n; i++) {
		const struct model_entry *m = &models->models[i];
		if (m->arch.family != MODEL_DECODER)
			continue;
		for (size_t h = 0; h < sizeof(machines) / sizeof(machines[0]); h++)
			for (size_t r = 0; r < 2; r++) {
				char body[1024];
				cJSON *a = NULL;
				const cJSON *it;
				const char *cmd;
				if (r == 1 && strstr(machines[h], "\"gpus\":[]"))
					continue; /* vLLM needs GPUs */
				snprintf(body, sizeof(body),
					 "{\"model\":\"%s\",\"runtime\":\"%s\",%s}", m->id,
					 runtimes[r], machines[h]);
				if (config(body, &a) != 200) { /* nothing fits: no command */
					cJSON_Delete(a);
					continue;
				}
				cmd = cJSON_GetStringValue(cJSON_GetObjectItem(a, "command"));
				check_command(cmd, body);
				downloads += check_artifact(
					m, cmd,
					cJSON_GetStringValue(cJSON_GetObjectItem(
						cJSON_GetObjectItem(a, "metadata"), "precision")),
					body);
				checked++;
				cJSON_ArrayForEach(it, cJSON_GetObjectItem(a, "alternatives"))
				{
					const char *c = cJSON_GetStringValue(
						cJSON_GetObjectItem(it, "command"));
					const char *p = cJSON_GetStringValue(
						cJSON_GetObjectItem(it, "precision"));
					if (!c || !p)
						continue;
					check_command(c, body);
					downloads += check_artifact(m, c, p, body);
					vllm += strncmp(c, "vllm", 4) == 0;
					awq += strcmp(p, "awq") == 0;
					checked++;
				}
				cJSON_Delete(a);
			}
	}
	printf("commands: %d commands over the catalog (%d vLLM, %d AWQ), %d name a repository "
	       "to download, against %d llama-server and %d vllm serve flags\n",
	       checked, vllm, awq, downloads, llama_flags.n, vllm_flags.n);
	ck_assert_int_gt(checked, 300);
	ck_assert_int_gt(vllm, 50);
	ck_assert_int_gt(awq, 5);
	ck_assert_int_gt(downloads, checked / 2);
}
END_TEST

/* The names whose llama.cpp command on an H100 names no published GGUF, each with why. Every
 * other catalog id and alias written as a Hugging Face id or an Ollama tag gets -hf with a
 * repository the catalog lists for the release the name asks for. */
static const char *const no_gguf[][2] = {
	/* Base (pretrained) releases: no GGUF of them is published by their makers or the usual
	 * quantizers the catalog lists; the user converts one (the assumptions say how). */
	{"Qwen/Qwen3-0.6B-Base", "base release"},
	{"Qwen/Qwen3-1.7B-Base", "base release"},
	{"Qwen/Qwen3-4B-Base", "base release"},
	{"Qwen/Qwen3-8B-Base", "base release"},
	{"Qwen/Qwen3-14B-Base", "base release"},
	{"Qwen/Qwen3-30B-A3B-Base", "base release"},
	{"google/gemma-3-1b-pt", "pretrained release"},
	{"google/gemma-3-4b-pt", "pretrained release"},
	{"google/gemma-3-12b-pt", "pretrained release"},
	{"google/gemma-3-27b-pt", "pretrained release"},
	{"TinyLlama/TinyLlama_v1.1", "base release"},
	{"zai-org/GLM-4.5-Air-Base", "base release"},
	{"EleutherAI/pythia-2.8b", "base release of a stale family"},
	{"huggyllama/llama-7b", "LLaMA-1 base weights"},
	{"huggyllama/llama-13b", "LLaMA-1 base weights"},
	{"huggyllama/llama-30b", "LLaMA-1 base weights"},
	{"huggyllama/llama-65b", "LLaMA-1 base weights"},
	/* Encoders: no chat GGUF; llama.cpp runs BERT-style embedders from a converted file. */
	{"google/flan-t5-large", "encoder-decoder"},
	{"FacebookAI/roberta-base", "encoder"},
	{"deepset/roberta-base-squad2", "encoder"},
	{"BAAI/bge-small-en-v1.5", "encoder (embeddings)"},
	{"BAAI/bge-small-en", "encoder (embeddings)"},
	/* Chat releases whose GGUF repositories could not be verified from their file lists
	 * when the catalog was written: left out rather than guessed. */
	{"meta-llama/Llama-2-70b-hf",
	 "not verified: 70B chat GGUF (TheBloke's Q6_K/Q8_0 are byte splits)"},
	{"meta-llama/Llama-2-70b-chat-hf", "not verified: as above"},
	{"llama2:70b", "not verified: as above"},
	{"mistralai/Mixtral-8x22B-v0.1", "not verified: 8x22B Instruct GGUF"},
	{"mistralai/Mixtral-8x22B-Instruct-v0.1", "not verified: as above"},
	{"mixtral:8x22b", "not verified: as above"},
	{"deepseek-ai/DeepSeek-R1-0528-Qwen3-8B",
	 "not verified: the quants of unsloth's repository"},
	{"deepseek-r1:8b", "not verified: as above"},
};

/* The artifacts the commands for name (a name of m) must come from: the release's own when
 * the catalog lists them, none when the name asks for another release it lists nothing of,
 * else m's. *served: the id vLLM serves unquantized. */
static const struct model_artifacts *name_artifacts(const struct model_entry *m, const char *name,
						    const char **served)
{
	const char *other = model_other_release(m, name);
	const struct model_release *r = model_release_find(m, other);
	const char *chat = model_chat_id(m);

	*served = r ? r->id : other ? other : chat ? chat : m->id;
	return r ? &r->art : other ? NULL : &m->artifacts;
}

/* Whether text (a JSON array of strings) has one containing word. */
static bool notes_say(const cJSON *notes, const char *word)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, notes) if (cJSON_IsString(it) &&
					  strstr(it->valuestring, word)) return true;
	return false;
}

/* Every catalog id and every alias written as a Hugging Face id or an Ollama tag, on an H100:
 * llama.cpp's command downloads a repository the catalog lists for the release the name asks
 * for, holding the file type chosen (or the name is one of no_gguf, and the answer says how to
 * make the file; or llama.cpp cannot run it and the answer is 422 saying so); vLLM's serves the
 * release's own id or a checkpoint the catalog lists for it. */
START_TEST(every_catalog_name_names_a_published_artifact)
{
	int hf = 0, placeholders = 0, refused = 0, vllm = 0, names = 0;

	for (size_t i = 0; i < models->n; i++) {
		const struct model_entry *m = &models->models[i];
		for (int k = -1; k < m->n_aliases; k++) {
			const char *name = k < 0 ? m->id : m->aliases[k];
			const char *served;
			const struct model_artifacts *art = name_artifacts(m, name, &served);
			bool listed = false;
			char body[512], word[256];
			cJSON *a = NULL;
			const char *cmd;
			int st;
			if (k >= 0 && !strchr(name, '/') && !strchr(name, ':'))
				continue;
			names++;
			for (size_t n = 0; n < sizeof(no_gguf) / sizeof(no_gguf[0]); n++)
				listed = listed || strcmp(no_gguf[n][0], name) == 0;
			snprintf(body, sizeof(body),
				 "{\"model\":\"%s\",\"runtime\":\"llama.cpp\","
				 "\"hardware_profile\":\"h100-sxm\"}",
				 name);
			st = config(body, &a);
			if (st != 200) {
				const char *msg = cJSON_GetStringValue(cJSON_GetObjectItem(
					cJSON_GetObjectItem(a, "error"), "message"));
				ck_assert_int_eq(st, 422);
				ck_assert_msg(msg && (strstr(msg, "no configuration fits") ||
						      (strcmp(m->arch.model_type, "mllama") == 0 &&
						       strstr(msg, "llama.cpp does not run"))),
					      "%s: %s", name, msg ? msg : "?");
				refused += strstr(msg, "does not run") != NULL;
				cJSON_Delete(a);
				continue;
			}
			cmd = cJSON_GetStringValue(cJSON_GetObjectItem(a, "command"));
			check_command(cmd, body);
			word_after(cmd, " -hf ", word, sizeof(word));
			if (word[0]) {
				const char *prec = cJSON_GetStringValue(cJSON_GetObjectItem(
					cJSON_GetObjectItem(a, "metadata"), "precision"));
				char *colon = strchr(word, ':');
				int ft = rf_ftype_from_name(prec);
				bool held = false;
				if (colon)
					*colon = '\0';
				ck_assert_msg(!listed, "%s is listed as having no GGUF: %s", name,
					      cmd);
				ck_assert_msg(art != NULL,
					      "%s: -hf for a release with no artifacts", name);
				for (int g = 0; g < art->n_gguf; g++)
					held = held ||
					       (strcmp(art->gguf[g].repo, word) == 0 && ft >= 0 &&
						ft < 64 &&
						(art->gguf[g].ftypes & ((uint64_t)1 << ft)));
				ck_assert_msg(held, "%s: %s is no listed repository holding %s",
					      name, word, prec);
				hf++;
			} else {
				ck_assert_msg(listed, "%s: no published GGUF named: %s", name, cmd);
				ck_assert_msg(notes_say(cJSON_GetObjectItem(a, "assumptions"),
							"convert_hf_to_gguf.py"),
					      "%s: the placeholder does not say how to make it",
					      name);
				placeholders++;
			}
			cJSON_Delete(a);
			snprintf(body, sizeof(body),
				 "{\"model\":\"%s\",\"runtime\":\"vllm\","
				 "\"hardware_profile\":\"h100-sxm\"}",
				 name);
			if (config(body, &a) == 200) {
				bool ok;
				cmd = cJSON_GetStringValue(cJSON_GetObjectItem(a, "command"));
				check_command(cmd, body);
				word_after(cmd, "vllm serve ", word, sizeof(word));
				ok = strcmp(word, served) == 0;
				for (int f = 0; art && f < MODEL_CKPTS; f++)
					ok = ok ||
					     (art->ckpt[f][0] && strcmp(art->ckpt[f], word) == 0);
				ck_assert_msg(
					ok,
					"%s: vllm serves %s, neither %s nor a listed checkpoint",
					name, word, served);
				vllm++;
			}
			cJSON_Delete(a);
		}
	}
	printf("commands: %d catalog names on an H100: %d llama.cpp commands with -hf, %d "
	       "documented placeholders, %d refused (mllama), %d vLLM commands\n",
	       names, hf, placeholders, refused, vllm);
	/* The list stays true: each name on it still gets a placeholder. */
	ck_assert_int_eq(placeholders, (int)(sizeof(no_gguf) / sizeof(no_gguf[0])));
	ck_assert_int_gt(hf, 150);
	ck_assert_int_eq(refused, 7);
	ck_assert_int_gt(vllm, 150);
}
END_TEST

/* /api/recommend for chat shows the chat release of every model the catalog knows one of. */
START_TEST(recommend_shows_the_chat_release)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .cat.quality = t_quality()};
	cJSON *a = NULL;
	const cJSON *it;
	int n = 0;

	ck_assert_int_eq(t_route_post(api_recommend, &env, "/api/recommend",
				      "{\"task\":\"text-generation\",\"hardware_profile\":"
				      "\"rtx-4090\",\"limit\":50}",
				      &a),
			 200);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(a, "recommendations"))
	{
		const struct model_entry *m = model_catalog_find(
			models, cJSON_GetStringValue(cJSON_GetObjectItem(it, "catalog_id")));
		const char *shown = cJSON_GetStringValue(cJSON_GetObjectItem(it, "model"));
		ck_assert(m != NULL);
		if (model_chat_id(m)) {
			ck_assert_str_eq(shown, model_chat_id(m));
			n++;
		}
	}
	cJSON_Delete(a);
	ck_assert_int_gt(n, 5);
}
END_TEST

/* The check can fail: a repository the catalog does not list, AWQ without a checkpoint, a base
 * model for chat, a made-up file name are caught. */
START_TEST(the_artifact_check_knows_a_wrong_command)
{
	const struct model_entry *phi = model_catalog_find(models, "phi-4");
	const struct model_entry *l8 = model_catalog_find(models, "llama-3.1-8b");
	static const char *const wrong[][3] = {
		{"phi-4", "vllm serve microsoft/phi-4 --quantization awq", "awq"},
		{"llama-3.1-8b", "vllm serve meta-llama/Llama-3.1-8B", "bf16"},
		{"llama-3.1-8b", "vllm serve someone/Llama-3.1-8B-AWQ", "awq"},
		{"llama-3.1-8b", "llama-server -hf someone/Llama-3.1-8B-GGUF:Q4_K_M", "Q4_K_M"},
		{"llama-3.1-8b", "llama-server -m Llama-3.1-8B-Q4_K_M.gguf", "Q4_K_M"},
	};

	ck_assert(phi && l8);
	ck_assert_ptr_null(model_ckpt_repo(phi, MODEL_CKPT_AWQ));
	/* Each wrong command runs in a child that a failed check must end. Without Check's own
	 * fork (CK_FORK=no, as make valgrind runs), a failed check does not end the child: it
	 * goes on as the test runner. The sanitizer build, which forks, runs this test. */
	if (getenv("CK_FORK") && strcmp(getenv("CK_FORK"), "no") == 0)
		return;
	for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
		pid_t pid = fork();
		int st = 0;
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			/* A failed check ends the child with a non-zero status. */
			check_artifact(model_catalog_find(models, wrong[i][0]), wrong[i][1],
				       wrong[i][2], "");
			_exit(0);
		}
		waitpid(pid, &st, 0);
		ck_assert_msg(!(WIFEXITED(st) && WEXITSTATUS(st) == 0), "not caught: %s",
			      wrong[i][1]);
	}
	ck_assert_int_eq(list_values(&vllm_flags, "--quantization"), 1);
	ck_assert_int_eq(list_values(&vllm_flags, "--enforce-eager"), 0);
	ck_assert_int_eq(list_values(&vllm_flags, "--frobnicate"), -1);
	ck_assert_int_eq(list_values(&vllm_flags, "-ngl"), -1);
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
	tcase_add_test(tc, every_command_names_a_listed_artifact);
	tcase_add_test(tc, every_catalog_name_names_a_published_artifact);
	tcase_add_test(tc, recommend_shows_the_chat_release);
	tcase_add_test(tc, the_artifact_check_knows_a_wrong_command);
	suite_add_tcase(s, tc);
	return s;
}
