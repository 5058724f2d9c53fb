/*
 * The question commands: `rigfit estimate | config | recommend | validate`. Each is one row
 * of a table naming its route, its handler and the flags that fill the route's request, so
 * the common questions read as commands (`rigfit estimate llama-3.1-8b --quant Q4_K_M --ctx
 * 8192`) while the route's whole JSON body is still accepted (`--json FILE|-`); flags given
 * with a body override its fields. The options array of getopt_long and the help text are
 * both built from the same rows, so a flag cannot be parsed without being documented.
 */
#include "server/cli/cli_priv.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/recommend.h"
#include "api/finetune_session.h"
#include "api/runtime_config.h"
#include "api/validate.h"
#include "core/numparse.h"
#include "server/cli/cli_hostbench.h"
#include "server/detect/detect.h"

/* How a flag's value becomes a request field. */
enum cli_field_kind {
	CF_STR,        /* a string */
	CF_NUM,        /* a number */
	CF_NUM_OR_MAX, /* a number or "max" */
	CF_BOOL,       /* true/false, 1/0, yes/no; the flag alone is true */
	CF_FALSE,      /* a switch that sets its field false (--no-mmap: use_mmap false) */
	CF_GPU,        /* hardware.gpus[0].name: a GPU completed from its device profile */
	CF_GPU_COUNT,  /* hardware.gpus[0].count */
	CF_CPU,        /* hardware.cpu.model: a CPU completed from the CPU table */
	CF_RAM,        /* hardware.memory.total_bytes, given in GiB */
};

struct cli_field {
	const char *flag;  /* without the dashes */
	const char *field; /* the request's field */
	enum cli_field_kind kind;
	const char *meta; /* the value's name in the help */
	const char *help;
};

/* A question command: its route, handler, flags, and what its positional argument is. */
struct cli_question {
	const char *name;
	const char *path;
	api_handler_fn handler;
	const char *model_field; /* the field a positional MODEL fills; NULL: no MODEL */
	const struct cli_field *fields;
	const char *about;
};

#define CLI_HW_FIELDS                                                                              \
	{"hardware-profile", "hardware_profile", CF_STR, "ID",                                     \
	 "answer for a device profile instead of this machine"},                                   \
		{"gpu", "hardware", CF_GPU, "NAME",                                                \
		 "answer for this GPU (a device profile's name, e.g. \"RTX 4090\")"},              \
		{"gpu-count", "hardware", CF_GPU_COUNT, "N", "how many of --gpu"},                 \
		{"cpu", "hardware", CF_CPU, "NAME",                                                \
		 "answer for this CPU (its model name, e.g. \"Ryzen 7 7700X\")"},                  \
		{"ram", "hardware", CF_RAM, "GIB", "with this much RAM, in GiB (e.g. 64)"},        \
	{                                                                                          \
		NULL, NULL, CF_STR, NULL, NULL                                                     \
	}

static const struct cli_field estimate_fields[] = {
	{"quant", "quant", CF_STR, "Q", "weight type: Q4_K_M, Q8_0, F16... or bf16, int8, nf4"},
	{"ctx", "n_ctx", CF_NUM_OR_MAX, "N|max", "context (KV cache) in tokens"},
	{"mode", "mode", CF_STR, "M", "inference, lora, qlora or full"},
	{"kv-cache-type", "kv_cache_type", CF_STR, "T", "f16, q8_0 or q4_0"},
	{"flash-attn", "flash_attn", CF_BOOL, "BOOL", "flash attention"},
	{"no-mmap", "use_mmap", CF_FALSE, "", "read the weights into memory (llama.cpp --no-mmap)"},
	{"parallel", "n_parallel", CF_NUM, "N", "parallel sequences sharing the context"},
	{"gpu-layers", "n_gpu_layers", CF_NUM, "N", "layers on the GPU (-1: all)"},
	{"batch-size", "batch_size", CF_NUM_OR_MAX, "N|max", "fine-tuning batch size"},
	{"seq-len", "seq_len", CF_NUM_OR_MAX, "N|max", "fine-tuning sequence length"},
	{"lora-rank", "lora_rank", CF_NUM, "N", "LoRA rank"},
	{"optimizer", "optimizer", CF_STR, "O",
	 "fine-tuning optimizer: adamw_torch_fused, adamw_torch, adamw_8bit, paged_adamw_8bit, "
	 "adafactor or sgd (default: the provider's)"},
	{"dataset-tokens", "dataset_tokens", CF_NUM, "N", "tokens per epoch (time and cost)"},
	{"epochs", "epochs", CF_NUM, "N", "epochs (time and cost)"},
	{"usd-per-hour", "usd_per_hour", CF_NUM, "USD", "price of the machine (cost)"},
	CLI_HW_FIELDS,
};

static const struct cli_field config_fields[] = {
	{"use-case", "use_case", CF_STR, "U", "general, coding, long_context, speed or quality"},
	{"runtime", "runtime", CF_STR, "R", "llama.cpp (default) or vllm"},
	{"quant", "precision", CF_STR, "Q", "weight type to use"},
	{"ctx", "n_ctx", CF_NUM_OR_MAX, "N|max", "context in tokens"},
	{"parallel", "n_parallel", CF_NUM, "N", "parallel sequences"},
	{"no-mmap", "use_mmap", CF_FALSE, "", "read the weights into memory (llama.cpp --no-mmap)"},
	CLI_HW_FIELDS,
};

static const struct cli_field recommend_fields[] = {
	{"task", "task", CF_STR, "T", "text-generation, summarization, ..."},
	{"use-case", "use_case", CF_STR, "U", "general, coding, long_context, speed or quality"},
	{"mode", "mode", CF_STR, "M", "inference, lora, qlora or full"},
	{"limit", "limit", CF_NUM, "N", "at most N answers"},
	{"min-context", "min_context", CF_NUM, "N", "only setups with at least N tokens"},
	{"model", "model", CF_STR, "M", "hardware for this model (with --for hardware)"},
	{"for", "for", CF_STR, "WHAT", "models (default) or hardware"},
	{"quant", "quant", CF_STR, "Q", "weight type"},
	{"ctx", "n_ctx", CF_NUM, "N", "context in tokens"},
	{"usd-per-hour", "usd_per_hour", CF_NUM, "USD", "price, for cost per million tokens"},
	CLI_HW_FIELDS,
};

static const struct cli_field validate_fields[] = {CLI_HW_FIELDS};

static const struct cli_field finetune_fields[] = {
	{"task", "task", CF_STR, "T",
	 "text-generation (default), summarization, extractive-question-answering or "
	 "question-answering"},
	{"method", "method", CF_STR, "M", "plan this method only: full, lora or qlora"},
	{"seq-len", "max_seq_length", CF_NUM, "N", "the task's sequence length in tokens"},
	{"batch-size", "effective_batch_size", CF_NUM, "N",
	 "effective batch (per-device batch x accumulation; default 16)"},
	{"packing", "packing", CF_BOOL, "BOOL", "sample packing"},
	{"optimizer", "optimizer", CF_STR, "O",
	 "plan with this optimizer only: adamw_torch_fused, adamw_torch, adamw_8bit, "
	 "paged_adamw_8bit, adafactor or sgd"},
	{"compute-specs", "compute_specs", CF_STR, "TIER", "force low_end, mid_range or high_end"},
	CLI_HW_FIELDS,
};

static const struct cli_question questions[] = {
	{"estimate", "/api/estimate", api_estimate, "model", estimate_fields,
	 "memory and speed of MODEL with the given settings, here or on described hardware"},
	{"config", "/api/config", api_config, "model", config_fields,
	 "a runtime config for MODEL (llama-server or vLLM), decided by the estimator"},
	{"recommend", "/api/recommend", api_recommend, NULL, recommend_fields,
	 "models that fit here for a task, best first, or hardware for a model"},
	{"validate", "/api/validate", api_validate, NULL, validate_fields,
	 "check a runtime config (the JSON of POST /api/validate) here"},
	{"finetune", "/api/finetune/detect", api_finetune_session_detect, NULL, finetune_fields,
	 "the fine-tuning plan here (or on --gpu): method, settings, tier and the models that fit"},
};

/* Options every question takes besides its fields; their getopt values are below 0x100. */
enum {
	OPT_JSON = 'j',
	OPT_FORMAT = 'f',
	OPT_PROFILES = 0x80,
	OPT_MODELS_DIR,
	OPT_ROOT,
	OPT_REQUEST,
	OPT_DB,
	OPT_NO_HOST_BENCH,
	OPT_MODEL,        /* --model M: the positional MODEL, for a question that takes one */
	OPT_FIELD = 0x100 /* + the field's index */
};

static const struct option common_opts[] = {
	{"json", required_argument, NULL, OPT_JSON},
	{"format", required_argument, NULL, OPT_FORMAT},
	{"profiles", required_argument, NULL, OPT_PROFILES},
	{"models-dir", required_argument, NULL, OPT_MODELS_DIR},
	{"root", required_argument, NULL, OPT_ROOT},
	{"config", required_argument, NULL, OPT_REQUEST},
	{"request", required_argument, NULL, OPT_REQUEST},
	{"db", required_argument, NULL, OPT_DB},
	{"no-host-bench", no_argument, NULL, OPT_NO_HOST_BENCH},
};
#define N_COMMON (sizeof(common_opts) / sizeof(common_opts[0]))
#define MAX_FIELDS 24

static const struct cli_question *question_find(const char *name)
{
	for (size_t i = 0; i < sizeof(questions) / sizeof(questions[0]); i++)
		if (strcmp(questions[i].name, name) == 0)
			return &questions[i];
	return NULL;
}

static size_t fields_count(const struct cli_field *f)
{
	size_t n = 0;
	while (f[n].flag)
		n++;
	return n;
}

int cli_question_help(const char *name, FILE *out)
{
	const struct cli_question *q = question_find(name);

	if (!q)
		return -1;
	fprintf(out, "usage: rigfit %s %s[options] [--json FILE|-]\n", q->name,
		q->model_field ? "MODEL " : "");
	fprintf(out, "%c%s.\n", toupper((unsigned char)q->about[0]), q->about + 1);
	fprintf(out,
		"The answer is the JSON of POST %s; --json gives that route's whole request "
		"body\n(flags override its fields).%s\n\n",
		q->path,
		q->model_field ?
			"\nMODEL (or --model MODEL) is an id or alias of the profiles' models.json, "
			"or a .gguf file (read from its folder, or from under --models-dir)." :
			"");
	for (const struct cli_field *f = q->fields; f->flag; f++) {
		char left[48];
		snprintf(left, sizeof(left), "--%s %s", f->flag, f->meta);
		fprintf(out, "  %-26s %s\n", left, f->help);
	}
	fputs("  --json FILE|-              the request body (- reads standard input)\n"
	      "  --format F                 summary, json or table (default: summary on a terminal,\n"
	      "                             json otherwise)\n"
	      "  --profiles DIR             profiles directory (default: found beside the binary)\n"
	      "  --models-dir DIR           allow .gguf models under DIR (repeatable)\n"
	      "  --root DIR                 read this machine's /proc and /sys under DIR\n"
	      "  --db PATH                  the store holding this host's measurement (default:\n"
	      "                             the daemon's, else ~/.local/state/rigfit/rigfit.db);\n"
	      "                             without one, the host is measured once and kept there\n"
	      "  --no-host-bench            answer without this host's measurement\n",
	      out);
	return 0;
}

/* Returns the object hardware.gpus[0] of body, made when missing, or NULL. */
static cJSON *first_gpu(cJSON *body)
{
	cJSON *hw = cJSON_GetObjectItemCaseSensitive(body, "hardware"), *gpus, *g;

	if (!cJSON_IsObject(hw)) {
		cJSON_DeleteItemFromObjectCaseSensitive(body, "hardware");
		hw = cJSON_AddObjectToObject(body, "hardware");
	}
	gpus = cJSON_GetObjectItemCaseSensitive(hw, "gpus");
	if (!cJSON_IsArray(gpus)) {
		cJSON_DeleteItemFromObjectCaseSensitive(hw, "gpus");
		gpus = cJSON_AddArrayToObject(hw, "gpus");
	}
	g = cJSON_GetArrayItem(gpus, 0);
	if (!g && gpus) {
		g = cJSON_CreateObject();
		if (g && !cJSON_AddItemToArray(gpus, g)) {
			cJSON_Delete(g);
			g = NULL;
		}
	}
	return cJSON_IsObject(g) ? g : NULL;
}

/* Returns the object hardware.<key> of body, made when missing, or NULL. */
static cJSON *hardware_part(cJSON *body, const char *key)
{
	cJSON *hw = cJSON_GetObjectItemCaseSensitive(body, "hardware"), *o;

	if (!cJSON_IsObject(hw)) {
		cJSON_DeleteItemFromObjectCaseSensitive(body, "hardware");
		hw = cJSON_AddObjectToObject(body, "hardware");
	}
	o = cJSON_GetObjectItemCaseSensitive(hw, key);
	if (!cJSON_IsObject(o)) {
		cJSON_DeleteItemFromObjectCaseSensitive(hw, key);
		o = cJSON_AddObjectToObject(hw, key);
	}
	return o;
}

/* Replaces key of obj with item (consumed). Returns 0 or -1 when out of memory. */
static int set_item(cJSON *obj, const char *key, cJSON *item)
{
	if (!obj || !item) {
		cJSON_Delete(item);
		return -1;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(obj, key);
	if (!cJSON_AddItemToObject(obj, key, item)) {
		cJSON_Delete(item);
		return -1;
	}
	return 0;
}

/* Sets the request field of f from the flag's value v. Returns 0, 2 after a usage message, or
 * 1 when out of memory. */
static int field_apply(cJSON *body, const char *cmd, const struct cli_field *f, const char *v)
{
	cJSON *item = NULL;
	double d;

	switch (f->kind) {
	case CF_STR:
	case CF_GPU:
	case CF_CPU:
		if (!*v || strlen(v) > 256)
			return cli_usage_error("%s: --%s needs a value of 1 to 256 characters", cmd,
					       f->flag);
		item = cJSON_CreateString(v);
		break;
	case CF_NUM_OR_MAX:
		if (strcmp(v, "max") == 0) {
			item = cJSON_CreateString("max");
			break;
		}
		/* fall through */
	case CF_NUM:
	case CF_GPU_COUNT:
		if (rf_parse_double(v, strlen(v), -1e15, 1e15, &d) < 0)
			return cli_usage_error("%s: --%s expects a number%s, not '%.40s'", cmd,
					       f->flag, f->kind == CF_NUM_OR_MAX ? " or max" : "",
					       v);
		item = cJSON_CreateNumber(d);
		break;
	case CF_RAM:
		if (rf_parse_double(v, strlen(v), 0.001, 1048576, &d) < 0)
			return cli_usage_error("%s: --%s expects GiB from 0.001 to 1048576, not "
					       "'%.40s'",
					       cmd, f->flag, v);
		item = cJSON_CreateNumber(floor(d * 1073741824.0));
		break;
	case CF_FALSE:
		item = cJSON_CreateFalse();
		break;
	case CF_BOOL:
		if (strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "yes") == 0)
			item = cJSON_CreateTrue();
		else if (strcmp(v, "false") == 0 || strcmp(v, "0") == 0 || strcmp(v, "no") == 0)
			item = cJSON_CreateFalse();
		else
			return cli_usage_error("%s: --%s expects true or false, not '%.40s'", cmd,
					       f->flag, v);
		break;
	}
	if (f->kind == CF_GPU || f->kind == CF_GPU_COUNT) {
		cJSON_DeleteItemFromObjectCaseSensitive(body, "hardware_profile");
		return set_item(first_gpu(body), f->kind == CF_GPU ? "name" : "count", item) < 0;
	}
	if (f->kind == CF_CPU || f->kind == CF_RAM) {
		cJSON_DeleteItemFromObjectCaseSensitive(body, "hardware_profile");
		return set_item(hardware_part(body, f->kind == CF_CPU ? "cpu" : "memory"),
				f->kind == CF_CPU ? "model" : "total_bytes", item) < 0;
	}
	return set_item(body, f->field, item) < 0;
}

/* Returns true when arg names the request body rather than a model: "-" or an existing
 * regular file that is not a GGUF model. */
static bool names_body(const char *arg)
{
	struct stat st;
	size_t n = strlen(arg);

	if (strcmp(arg, "-") == 0)
		return true;
	if (n > 5 && strcmp(arg + n - 5, ".gguf") == 0)
		return false;
	return stat(arg, &st) == 0 && S_ISREG(st.st_mode);
}

/* Sets the model field from a positional MODEL: a .gguf path becomes {"gguf": PATH}, anything
 * else the catalog id. Returns 0, or 1 when out of memory. */
static int model_apply(cJSON *body, const char *field, const char *model)
{
	size_t n = strlen(model);
	cJSON *item;

	if (n > 5 && strcmp(model + n - 5, ".gguf") == 0) {
		item = cJSON_CreateObject();
		if (item && !cJSON_AddStringToObject(item, "gguf", model)) {
			cJSON_Delete(item);
			item = NULL;
		}
	} else {
		item = cJSON_CreateString(model);
	}
	return set_item(body, field, item) < 0;
}

/* Parsed command line of one question. */
struct question_args {
	const char *input; /* the body's file, "-", or NULL */
	const char *model;
	bool model_flag;                /* model came from --model */
	char gguf_path[PATH_MAX];       /* a .gguf MODEL made absolute */
	const char *values[MAX_FIELDS]; /* the flags' values, by field index */
	size_t n_values;
	enum cli_format format;
	const char *db;     /* --db: the store with this host's measurement */
	bool no_host_bench; /* --no-host-bench */
};

static int question_parse(const struct cli_question *q, int argc, char **argv,
			  struct question_args *a, struct rf_cli_env *ce, const char **profiles,
			  const char **root)
{
	size_t nf = fields_count(q->fields);
	struct option longopts[N_COMMON + MAX_FIELDS + 2];
	int c, rc;

	memset(longopts, 0, sizeof(longopts));
	memcpy(longopts, common_opts, sizeof(common_opts));
	for (size_t i = 0; i < nf && i < MAX_FIELDS; i++) {
		longopts[N_COMMON + i].name = q->fields[i].flag;
		longopts[N_COMMON + i].has_arg = q->fields[i].kind == CF_BOOL  ? optional_argument :
						 q->fields[i].kind == CF_FALSE ? no_argument :
										 required_argument;
		longopts[N_COMMON + i].val = OPT_FIELD + (int)i;
	}
	/* A question about one MODEL takes it as --model too, as people type it. */
	if (q->model_field)
		longopts[N_COMMON + (nf < MAX_FIELDS ? nf : MAX_FIELDS)] =
			(struct option){"model", required_argument, NULL, OPT_MODEL};
	if ((rc = cli_long_options_exact(q->name, argc, argv, longopts)) != 0)
		return rc;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":j:f:", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON:
		case OPT_REQUEST:
			a->input = optarg;
			break;
		case OPT_FORMAT:
			if ((rc = cli_format_parse(q->name, optarg, &a->format)) != 0)
				return rc;
			break;
		case OPT_PROFILES:
			*profiles = optarg;
			break;
		case OPT_MODELS_DIR:
			if (ce->cfg.n_models_dirs >= RF_CONFIG_MAX_LIST ||
			    strlen(optarg) >= sizeof(ce->cfg.models_dirs[0]))
				return cli_usage_error("%s: too many or too long --models-dir",
						       q->name);
			snprintf(ce->cfg.models_dirs[ce->cfg.n_models_dirs++],
				 sizeof(ce->cfg.models_dirs[0]), "%s", optarg);
			break;
		case OPT_ROOT:
			*root = optarg;
			break;
		case OPT_DB:
			a->db = optarg;
			break;
		case OPT_NO_HOST_BENCH:
			a->no_host_bench = true;
			break;
		case OPT_MODEL:
			if (a->model)
				return cli_usage_error(
					"%s: one MODEL, given once (see rigfit help %s)", q->name,
					q->name);
			a->model = optarg;
			a->model_flag = true;
			break;
		default:
			if (c >= OPT_FIELD && c < OPT_FIELD + (int)nf) {
				a->values[c - OPT_FIELD] = optarg ? optarg : "true";
				a->n_values++;
				break;
			}
			return cli_getopt_error(q->name, c, argv, longopts);
		}
	}
	for (int i = optind; i < argc; i++) {
		if (!a->input && (names_body(argv[i]) || !q->model_field))
			a->input = argv[i];
		else if (q->model_field && !a->model)
			a->model = argv[i];
		else if (q->model_field && a->model_flag)
			return cli_usage_error(
				"%s: one MODEL, given once: '%.60s' and '%.60s' (see "
				"rigfit help %s)",
				q->name, a->model, argv[i], q->name);
		else
			return cli_usage_error(
				"%s: unexpected argument '%.60s' (see rigfit help %s)", q->name,
				argv[i], q->name);
	}
	/* A .gguf file named on the command line: its path made absolute (the route takes only
	 * absolute ones), and read from its own folder unless --models-dir says where model files
	 * may be read (the daemon's rule). */
	if (a->model && strlen(a->model) > 5 &&
	    strcmp(a->model + strlen(a->model) - 5, ".gguf") == 0) {
		char cwd[PATH_MAX];
		const char *slash;
		size_t n;
		if (a->model[0] != '/' && !realpath(a->model, a->gguf_path) &&
		    (!getcwd(cwd, sizeof(cwd)) ||
		     snprintf(a->gguf_path, sizeof(a->gguf_path), "%s/%s", cwd, a->model) >=
			     (int)sizeof(a->gguf_path)))
			return cli_usage_error("%s: the path '%.60s' is too long", q->name,
					       a->model);
		if (a->model[0] != '/')
			a->model = a->gguf_path;
		slash = strrchr(a->model, '/');
		n = slash == a->model ? 1 : (size_t)(slash - a->model);
		if (ce->cfg.n_models_dirs == 0 && n < sizeof(ce->cfg.models_dirs[0])) {
			snprintf(ce->cfg.models_dirs[0], n + 1, "%s", a->model);
			ce->cfg.n_models_dirs = 1;
		}
	}
	return 0;
}

/* Builds the request body: the given one, or {} when flags alone ask the question, with the
 * flags' fields set over it. A body with nothing to override is passed through untouched.
 * Returns 0, or the exit status after a message. */
/* Whether the request describes the machine it asks about (hardware or hardware_profile),
 * so that this host's figures are not used. */
static bool body_describes_machine(const struct rf_cli_env *ce)
{
	cJSON *body = ce->body ? cJSON_ParseWithLength(ce->body, ce->body_len) : NULL;
	bool described = false;

	if (cJSON_IsObject(body))
		described =
			(cJSON_GetObjectItemCaseSensitive(body, "hardware") &&
			 !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(body, "hardware"))) ||
			(cJSON_GetObjectItemCaseSensitive(body, "hardware_profile") &&
			 !cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(body, "hardware_profile")));
	cJSON_Delete(body);
	return described;
}

static int question_body(const struct cli_question *q, const struct question_args *a,
			 struct rf_cli_env *ce)
{
	cJSON *body;
	int rc = 0;

	if (a->input) {
		ce->body = cli_read_input(a->input, &ce->body_len);
		if (!ce->body) {
			fprintf(stderr, "rigfit: %s: cannot read %s: %s\n", q->name,
				strcmp(a->input, "-") == 0 ? "standard input" : a->input,
				strerror(errno));
			return 2;
		}
		if (!a->model && a->n_values == 0)
			return 0;
		body = cJSON_ParseWithLength(ce->body, ce->body_len);
		if (!cJSON_IsObject(body)) {
			cJSON_Delete(body);
			return cli_usage_error("%s: %s is not a JSON object, so flags cannot be "
					       "added to it",
					       q->name, a->input);
		}
	} else {
		body = cJSON_CreateObject();
	}
	if (!body)
		return 1;
	if (a->model)
		rc = model_apply(body, q->model_field, a->model);
	for (size_t i = 0; rc == 0 && q->fields[i].flag; i++)
		if (a->values[i])
			rc = field_apply(body, q->name, &q->fields[i], a->values[i]);
	if (rc == 0) {
		free(ce->body);
		ce->body = cJSON_PrintUnformatted(body);
		if (!ce->body)
			rc = 1;
		else
			ce->body_len = strlen(ce->body);
	}
	cJSON_Delete(body);
	return rc;
}

/* finetune asks about text generation unless the body names a task (the route requires one).
 * Returns 0, or 1 when out of memory; a body that is not an object is left to the route. */
static int default_task(struct rf_cli_env *ce)
{
	cJSON *body =
		cJSON_ParseWithLength(ce->body ? ce->body : "{}", ce->body ? ce->body_len : 2);
	char *text;

	if (!cJSON_IsObject(body) || cJSON_GetObjectItemCaseSensitive(body, "task")) {
		cJSON_Delete(body);
		return 0;
	}
	if (!cJSON_AddStringToObject(body, "task", "text-generation") ||
	    !(text = cJSON_PrintUnformatted(body))) {
		cJSON_Delete(body);
		return 1;
	}
	cJSON_Delete(body);
	free(ce->body);
	ce->body = text;
	ce->body_len = strlen(text);
	return 0;
}

/* Whether a validate reply says the config works ("is_valid": true); false for any reply that
 * does not say so. */
static bool reply_is_valid(const struct api_reply *r)
{
	const char *body = r->body ? r->body : r->borrowed_body;
	cJSON *o;
	bool ok;

	if (r->status >= 300 || !body)
		return false;
	o = cJSON_ParseWithLength(body, r->len);
	ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "is_valid"));
	cJSON_Delete(o);
	return ok;
}

int rf_cli_question(int argc, char **argv)
{
	const struct cli_question *q = question_find(argv[0]);
	struct question_args a;
	struct rf_cli_env ce;
	struct api_reply reply = {0};
	struct rf_detect_opts opts = {0};
	const char *profiles = NULL, *root = NULL;
	int rc;

	if (!q)
		return cli_usage_error("unknown command '%.60s'", argv[0]);
	memset(&a, 0, sizeof(a));
	memset(&ce, 0, sizeof(ce));
	a.format = cli_format_default();
	if ((rc = question_parse(q, argc, argv, &a, &ce, &profiles, &root)) != 0)
		return rc;
	if (!a.input && !a.model && a.n_values == 0 && isatty(STDIN_FILENO) &&
	    (strcmp(q->name, "recommend") == 0 || strcmp(q->name, "finetune") == 0)) {
		/* The first question, asked with nothing: what fits this machine (the route's
		 * defaults: text generation, here). */
	} else if (!a.input && !a.model && a.n_values == 0) {
		/* A request piped in, as before the flags existed. */
		if (isatty(STDIN_FILENO))
			return cli_usage_error("%s: what should it answer? %s--json FILE, or see "
					       "rigfit help %s",
					       q->name,
					       q->model_field ? "Name a MODEL, pass " : "Pass ",
					       q->name);
		a.input = "-";
	}
	if ((rc = question_body(q, &a, &ce)) != 0) {
		rf_cli_env_close(&ce);
		return rc;
	}
	if (strcmp(q->name, "finetune") == 0 && (rc = default_task(&ce)) != 0) {
		rf_cli_env_close(&ce);
		return rc;
	}
	opts.root = root;
	if ((rc = rf_cli_env_open(&ce, profiles, &opts)) != 0)
		return rc;
	/* This machine (not a recorded root): the daemon's measurement of it, or one now; not
	 * for a question about a machine the request describes, which does not use it. */
	if (!root && !a.no_host_bench && !body_describes_machine(&ce))
		rf_cli_host_bench(&ce.snap->hw, a.db);
	ce.req.path = q->path;
	q->handler(&ce.env, &ce.req, &reply);
	rc = cli_print_reply_as(&reply, a.format, q->name);
	if (rc == 0 && strcmp(q->name, "validate") == 0 && !reply_is_valid(&reply))
		rc = 1; /* a config that will not work fails the command, as a linter does */
	api_reply_reset(&reply);
	rf_cli_env_close(&ce);
	return rc;
}
