/*
 * Command-line dispatch (see cli.h). Commands are rows of one table: name, one line for
 * `rigfit help`, the full help, and the function that runs it with getopt_long. Every command
 * answers `--help` and `rigfit help CMD` from its row, before its own parsing. Usage errors
 * print one line to stderr and exit 2; failures exit 1.
 */
#include "server/cli/cli.h"
#include "server/cli/cli_priv.h"
#include "server/cli/cli_bench.h"
#include "server/cli/cli_finetune.h"
#include "server/cli/cli_models.h"
#include "server/cli/cli_names.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/hardware_json.h"
#include "api/hardware_nfd.h"
#include "api/hardware_summary.h"
#include "core/err.h"
#include "core/hw/hw_profile.h"
#include "core/numparse.h"
#include "core/suggest.h"
#include "server/config.h"
#include "server/daemon/daemon.h"
#include "server/detect/detect.h"
#include "server/cli/healthcheck.h"
#include "server/cli/mcp_stdio.h"
#include "server/models/read_hooks.h"
#include "server/models/models_list.h"
#include "server/models/ollama_models.h"
#include "server/profiles/profiles.h"
#include "server/profiles/profiles_find.h"

/* Prints "rigfit: <message>" on one line and returns the usage exit status. */
int cli_usage_error(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "rigfit: %s\n", msg);
	return 2;
}

int cli_getopt_error(const char *name, int c, char **argv, const struct option *longopts)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	struct rf_suggest_search s;
	const char *near;
	char word[96];

	if (c == ':')
		return cli_usage_error("%s: %.60s needs a value", name, arg);
	/* "--ctxx=8" is compared as "ctxx". */
	snprintf(word, sizeof(word), "%s", arg[0] == '-' && arg[1] == '-' ? arg + 2 : arg);
	word[strcspn(word, "=")] = '\0';
	rf_suggest_begin(&s, word);
	for (int i = 0; longopts && longopts[i].name; i++)
		rf_suggest_offer(&s, longopts[i].name);
	near = rf_suggest_result(&s);
	if (near && arg[0] == '-' && arg[1] == '-')
		return cli_usage_error("%s: unknown option '%.60s'; did you mean '--%s'? (see "
				       "rigfit help %s)",
				       name, arg, near, name);
	return cli_usage_error("%s: unknown option '%.60s' (see rigfit help %s)", name, arg, name);
}

int cli_long_options_exact(const char *name, int argc, char **argv, const struct option *longopts)
{
	int i = rf_long_option_inexact(1, argc, argv, longopts);

	if (i < 0)
		return 0;
	optind = i + 1; /* where cli_getopt_error reads the option */
	return cli_getopt_error(name, '?', argv, longopts);
}

int cli_profiles_dir(const char *given, char *out, size_t outlen)
{
	char exe[4096], err[600];

	rf_self_exe(exe, sizeof(exe));
	if (rf_profiles_find(given, getenv("RIGFIT_PROFILES"), exe, out, outlen, err, sizeof(err)) <
	    0) {
		fprintf(stderr, "rigfit: %s\n", err);
		return 1;
	}
	return 0;
}

int cli_catalogs(const char *dir, struct rf_profiles **set, struct rf_catalogs **cat)
{
	char err[512], found[4200];

	*set = NULL;
	if (cli_profiles_dir(dir, found, sizeof(found)) != 0)
		return 1;
	if (rf_profiles_load(found, set, err, sizeof(err)) < 0) {
		fprintf(stderr, "rigfit: profiles: %s\n", err);
		return 1;
	}
	if (rf_catalogs_from_profiles(*set, cat, err, sizeof(err)) < 0) {
		fprintf(stderr, "rigfit: profiles: %s\n", err);
		rf_profiles_free(*set);
		*set = NULL;
		return 1;
	}
	return 0;
}

void cli_scan(const struct rf_detect_opts *opts, struct hw_snapshot *s)
{
	static const struct rf_detect_opts live = {0};
	bool note = isatty(STDERR_FILENO);

	/* A scan takes milliseconds, or seconds when a driver probe times out: say what is
	 * happening, then erase the note so that only the answer stays on screen. */
	if (note)
		fputs("rigfit: scanning this machine...", stderr);
	rf_detect_scan(opts ? opts : &live, s);
	if (note)
		fputs("\r\033[K", stderr);
}

/* The CLI flag that sets a request field, for error messages; NULL when none does. */
static const char *cli_flag_of_field(const char *field)
{
	static const struct {
		const char *prefix, *flag;
	} map[] = {
		{"hardware.gpus", "--gpu"}, {"hardware_profile", "--hardware-profile"},
		{"model", "MODEL"},         {"quant", "--quant"},
		{"n_ctx", "--ctx"},         {"settings.n_ctx", "--ctx"},
		{"task", "--task"},         {"use_case", "--use-case"},
		{"mode", "--mode"},         {"limit", "--limit"},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		size_t n = strlen(map[i].prefix);
		if (strncmp(field, map[i].prefix, n) == 0 &&
		    (field[n] == '\0' || field[n] == '.' || field[n] == '['))
			return map[i].flag;
	}
	return NULL;
}

/* Prints a reply: the JSON body on stdout (exit 0), or the error envelope as one line on
 * stderr (exit 2 for the caller's mistakes, 1 otherwise). */
int cli_print_reply(const struct api_reply *r)
{
	const char *body = r->body ? r->body : r->borrowed_body;
	cJSON *j, *e;

	if (r->status < 300) {
		fwrite(body, 1, r->len, stdout);
		fputc('\n', stdout);
		return 0;
	}
	j = cJSON_ParseWithLength(body, r->len);
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	{
		const cJSON *code = cJSON_GetObjectItemCaseSensitive(e, "code");
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
		const cJSON *field = cJSON_GetObjectItemCaseSensitive(e, "field");
		const char *flag = cJSON_IsString(field) ? cli_flag_of_field(field->valuestring) :
							   NULL;
		/* The API's advice names request fields; say what the CLI has for them. */
		bool gpu_hint = flag && strcmp(flag, "--gpu") == 0 && cJSON_IsString(msg) &&
				strstr(msg->valuestring, "memory_total_bytes");
		fprintf(stderr, "rigfit: %s: %s%s%s%s%s%s%s%s\n",
			cJSON_IsString(code) ? code->valuestring : "error",
			cJSON_IsString(msg) ? msg->valuestring : "",
			cJSON_IsString(field) ? " (" : "", flag ? flag : "", flag ? ", " : "",
			cJSON_IsString(field) ? "field " : "",
			cJSON_IsString(field) ? field->valuestring : "",
			cJSON_IsString(field) ? ")" : "",
			gpu_hint ?
				"; --gpu takes a device profile's name (rigfit names gpus lists "
				"them), another GPU goes in a --json body with its memory_total_bytes" :
				"");
	}
	cJSON_Delete(j);
	return r->status < 500 ? 2 : 1;
}

/* Reads all of stdin or a file, at most API_MAX_BODY_BYTES. Returns a malloc'd buffer. */
char *cli_read_input(const char *path, size_t *len)
{
	FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	size_t cap = 65536, n = 0;
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(cap + 1);
	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
		if (n == cap) {
			char *nb;
			if (cap >= API_MAX_BODY_BYTES) {
				free(buf);
				buf = NULL;
				errno = EFBIG;
				break;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
		}
	}
	if (f != stdin)
		fclose(f);
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

int rf_cli_env_open(struct rf_cli_env *ce, const char *profiles, const struct rf_detect_opts *opts)
{
	if (cli_catalogs(profiles, &ce->set, &ce->cat) != 0) {
		rf_cli_env_close(ce);
		return 1;
	}
	ce->snap = calloc(1, sizeof(*ce->snap));
	if (!ce->snap) {
		rf_cli_env_close(ce);
		return 1;
	}
	cli_scan(opts, &ce->snap->hw);
	hw_apply_device_profiles(&ce->snap->hw, &ce->cat->table);
	ce->snap->seq = 1;
	ce->env.version = RIGFIT_VERSION;
	ce->env.snapshot = ce->snap;
	ce->env.cat.devices = &ce->cat->table;
	ce->env.cat.models = ce->cat->models;
	ce->env.cat.tiers = ce->cat->tiers;
	ce->env.cat.quality = ce->cat->quality;
	if (ce->cfg.n_models_dirs > 0) {
		ce->env.io.read_model = rf_model_file_read_cfg;
		ce->env.io.read_model_ctx = &ce->cfg;
	}
	ce->env.io.read_model_dir = rf_model_dir_read_cfg;
	ce->env.io.read_model_dir_ctx = &ce->cfg;
	ce->env.io.read_ollama = rf_ollama_read_cfg;
	ce->env.io.read_ollama_ctx = &ce->cfg;
	ce->req.method = API_POST;
	ce->req.query = "";
	ce->req.body = ce->body;
	ce->req.body_len = ce->body_len;
	return 0;
}

void rf_cli_env_close(struct rf_cli_env *ce)
{
	if (ce->snap)
		rf_models_free(&ce->snap->models);
	free(ce->snap);
	rf_catalogs_unref(ce->cat);
	rf_profiles_free(ce->set);
	free(ce->body);
	memset(ce, 0, sizeof(*ce));
}

static const char detect_usage[] =
	"usage: rigfit detect [--format summary|json|table|nfd] [--task T] [--root DIR]\n"
	"                     [--nvml-lib PATH] [--nvidia-smi PATH] [--sysctl PATH]\n"
	"                     [--probe-timeout-ms MS] [--profiles DIR]\n"
	"Scans this machine: CPU, memory, GPUs (NVML, nvidia-smi, sysfs, sysctl), container\n"
	"limits. The JSON is GET /api/hardware's; nfd is a Node Feature Discovery feature file.\n"
	"With --task T, answers POST /api/finetune/detect for task T (ModelForge's detect).\n"
	"  --format F            summary (default on a terminal), json (default otherwise),\n"
	"                        table or nfd\n"
	"  --task T              tier, fine-tuning settings and models that fit for task T\n"
	"  --root DIR            read /proc, /sys and /dev under DIR (a recorded machine)\n"
	"  --nvml-lib PATH       the NVML library to load (libnvidia-ml.so.1)\n"
	"  --nvidia-smi PATH     the nvidia-smi to run when NVML fails\n"
	"  --sysctl PATH         a program printing macOS sysctl output (the Apple probe)\n"
	"  --probe-timeout-ms MS per probe, 50 to 60000 (default 5000)\n"
	"  --profiles DIR        device profiles (default: found beside the binary)\n"
	"Environment: RIGFIT_ROOT, RIGFIT_NVML_LIB, RIGFIT_NVIDIA_SMI, RIGFIT_SYSCTL,\n"
	"RIGFIT_PROFILES.\n";

static int cmd_detect(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"task", required_argument, NULL, 't'},
		{"root", required_argument, NULL, 'r'},
		{"nvml-lib", required_argument, NULL, 'n'},
		{"nvidia-smi", required_argument, NULL, 's'},
		{"sysctl", required_argument, NULL, 'c'},
		{"probe-timeout-ms", required_argument, NULL, 'p'},
		{"profiles", required_argument, NULL, 'P'},
		{NULL, 0, NULL, 0},
	};
	enum cli_format fmt = cli_format_default();
	bool nfd = false;
	const char *root = getenv("RIGFIT_ROOT");
	const char *profiles = NULL, *task = NULL;
	struct rf_profiles *set = NULL;
	struct rf_catalogs *catalogs = NULL;
	struct rf_detect_opts opts = {0};
	struct hw_snapshot *s;
	uint64_t timeout = 0;
	char *text = NULL;
	size_t len = 0;
	int c, rc = 0;

	opts.nvml_lib = getenv("RIGFIT_NVML_LIB");
	opts.nvidia_smi = getenv("RIGFIT_NVIDIA_SMI");
	opts.sysctl = getenv("RIGFIT_SYSCTL");
	if (cli_long_options_exact("detect", argc, argv, longopts) != 0)
		return 2;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			nfd = strcmp(optarg, "nfd") == 0;
			if (!nfd && cli_format_parse("detect", optarg, &fmt) != 0)
				return cli_usage_error(
					"detect: --format must be summary, json, table or nfd");
			break;
		case 't':
			task = optarg;
			break;
		case 'r':
			root = optarg;
			break;
		case 'n':
			opts.nvml_lib = optarg;
			break;
		case 's':
			opts.nvidia_smi = optarg;
			break;
		case 'c':
			opts.sysctl = optarg;
			break;
		case 'p':
			if (rf_parse_u64_str(optarg, 60000, &timeout) < 0 || timeout < 50)
				return cli_usage_error(
					"detect: --probe-timeout-ms must be 50 to 60000");
			opts.probe_timeout_ms = (int)timeout;
			break;
		case 'P':
			profiles = optarg;
			break;
		default:
			return cli_getopt_error("detect", c, argv, longopts);
		}
	}
	if (optind < argc)
		return cli_usage_error("detect: unexpected argument '%.60s'", argv[optind]);
	opts.root = root && *root ? root : "/";
	if (task) {
		if (nfd)
			return cli_usage_error("detect: --task answers in summary, json or table");
		return rf_cli_detect_task(task, &opts, profiles, fmt);
	}
	/* The same device profiles the daemon would use. */
	if (cli_catalogs(profiles, &set, &catalogs) != 0)
		return 1;
	s = malloc(sizeof(*s));
	if (!s) {
		rf_catalogs_unref(catalogs);
		rf_profiles_free(set);
		return 1;
	}
	cli_scan(&opts, s);
	hw_apply_device_profiles(s, &catalogs->table);
	rf_catalogs_unref(catalogs);
	rf_profiles_free(set);
	if (nfd)
		text = api_hardware_nfd(s);
	else if (fmt == CLI_FMT_SUMMARY)
		text = api_hardware_summary(s);
	else
		text = api_hardware_render(s, &len);
	if (!text) {
		fprintf(stderr, "rigfit: out of memory\n");
		rc = 1;
	} else if (nfd || fmt == CLI_FMT_SUMMARY) {
		fputs(text, stdout);
	} else {
		rc = cli_print_json_as(text, len, fmt, NULL);
	}
	free(text);
	free(s);
	return rc;
}

static const char healthcheck_usage[] =
	"usage: rigfit healthcheck [--listen HOST:PORT] [--ready] [--wait SECONDS]\n"
	"                          [--timeout-ms MS]\n"
	"Exits 0 when the daemon at HOST:PORT answers /healthz (it is alive), or with --ready\n"
	"/readyz (its store is usable and a scan has finished), 1 otherwise; for container and\n"
	"service health checks, no curl needed. --wait asks again every second for up to SECONDS\n"
	"(1 to 3600) before failing, for a daemon that is still starting. --listen defaults to\n"
	"RIGFIT_LISTEN, then 127.0.0.1:8080; a daemon bound to every address is reached on\n"
	"loopback. --timeout-ms (default 2000) bounds each attempt.\n";

/* Sleeps about ms milliseconds (less when a signal interrupts; the caller rechecks time). */
static void hc_pause_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int cmd_healthcheck(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"listen", required_argument, NULL, 'l'},
		{"timeout-ms", required_argument, NULL, 't'},
		{"ready", no_argument, NULL, 'r'},
		{"wait", required_argument, NULL, 'w'},
		{NULL, 0, NULL, 0},
	};
	const char *listen = getenv("RIGFIT_LISTEN"), *path = RF_HEALTHCHECK_LIVE;
	char addr[300], host[128], err[256];
	int port, c;
	uint64_t timeout_ms = 2000, wait_s = 0;
	struct timespec t0, now;

	if (cli_long_options_exact("healthcheck", argc, argv, longopts) != 0)
		return 2;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		if (c == 'l')
			listen = optarg;
		else if (c == 'r')
			path = RF_HEALTHCHECK_READY;
		else if (c == 'w') {
			if (rf_parse_u64_str(optarg, 3600, &wait_s) < 0 || wait_s == 0)
				return cli_usage_error("healthcheck: --wait must be 1 to 3600");
		} else if (c == 't') {
			if (rf_parse_u64_str(optarg, 60000, &timeout_ms) < 0 || timeout_ms == 0)
				return cli_usage_error(
					"healthcheck: --timeout-ms must be 1 to 60000");
		} else
			return cli_getopt_error("healthcheck", c, argv, longopts);
	}
	if (optind < argc)
		return cli_usage_error("healthcheck: unexpected argument '%.60s'", argv[optind]);
	if (!listen || !*listen)
		listen = "127.0.0.1:8080";
	if (rf_listen_parse(listen, host, sizeof(host), &port) < 0)
		return cli_usage_error("healthcheck: bad --listen '%.60s'", listen);
	/* A daemon bound to every address is reached on loopback. */
	if (strcmp(host, "0.0.0.0") == 0)
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
	else if (strcmp(host, "::") == 0)
		snprintf(addr, sizeof(addr), "[::1]:%d", port);
	else
		snprintf(addr, sizeof(addr), "%s%s%s:%d", strchr(host, ':') ? "[" : "", host,
			 strchr(host, ':') ? "]" : "", port);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rf_healthcheck_path(addr, path, (int)timeout_ms, err, sizeof(err)) < 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((uint64_t)(now.tv_sec - t0.tv_sec) >= wait_s) {
			fprintf(stderr, "rigfit: healthcheck %s failed: %s\n", path, err);
			return 1;
		}
		hc_pause_ms(1000);
	}
	return 0;
}

static int cmd_serve(int argc, char **argv)
{
	static struct rf_config cfg;
	char err[512];

	if (rf_config_parse(argc - 1, argv + 1, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "rigfit: %s\n", err);
		return 2;
	}
	if (cfg.static_dir[0]) {
		char index[RF_CONFIG_PATH_MAX + 16];
		snprintf(index, sizeof(index), "%s/index.html", cfg.static_dir);
		if (access(index, R_OK) != 0) {
			fprintf(stderr, "rigfit: --static-dir %s has no readable index.html\n",
				cfg.static_dir);
			return 2;
		}
	}
	/* Without --profiles or RIGFIT_PROFILES, the daemon finds them as every command does. */
	if (!cfg.profiles[0] && cli_profiles_dir(NULL, cfg.profiles, sizeof(cfg.profiles)) != 0)
		return 1;
	return rf_serve(&cfg);
}

static const char version_usage[] = "usage: rigfit version [--format summary|json]\n"
				    "Prints rigfit's version.\n";

static int cmd_version(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{NULL, 0, NULL, 0},
	};
	enum cli_format fmt = CLI_FMT_SUMMARY;
	int c;

	if (cli_long_options_exact("version", argc, argv, longopts) != 0)
		return 2;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		if (c != 'f')
			return cli_getopt_error("version", c, argv, longopts);
		if (cli_format_parse("version", optarg, &fmt) != 0)
			return 2;
	}
	if (optind < argc)
		return cli_usage_error("version: unexpected argument '%.60s'", argv[optind]);
	if (fmt == CLI_FMT_JSON)
		printf("{\"version\":\"%s\"}\n", RIGFIT_VERSION);
	else
		printf("rigfit %s\n", RIGFIT_VERSION);
	return 0;
}

static int cmd_bench(int argc, char **argv)
{
	return rf_cli_bench(argc - 1, argv + 1);
}

/* One command: what `rigfit help` lists, what `rigfit help NAME` prints (usage, or help()
 * when the text is built from the command's own tables) and the function run with argv[0]
 * the command's name. */
struct cli_command {
	const char *name;
	const char *summary;
	const char *usage;
	int (*help)(const char *name, FILE *out);
	int (*run)(int argc, char **argv);
};

static const struct cli_command commands[] = {
	{"serve", "run the daemon (HTTP API on 127.0.0.1:8080)", rf_serve_usage, NULL, cmd_serve},
	{"detect", "scan this machine (or answer ModelForge's detect with --task)", detect_usage,
	 NULL, cmd_detect},
	{"estimate", "memory and speed of a model with given settings", NULL, cli_question_help,
	 rf_cli_question},
	{"config", "a runtime config for a model (llama-server or vLLM)", NULL, cli_question_help,
	 rf_cli_question},
	{"recommend", "models that fit here for a task, or hardware for a model", NULL,
	 cli_question_help, rf_cli_question},
	{"validate", "check a runtime config here", NULL, cli_question_help, rf_cli_question},
	{"finetune", "the fine-tuning plan here or on --gpu (--task, --method)", NULL,
	 cli_question_help, rf_cli_question},
	{"models", "list the models on this host and in the catalog, with sizes",
	 rf_cli_models_usage, NULL, rf_cli_models},
	{"bench", "record or list measured speeds; measure this host (host)", rf_cli_bench_usage,
	 NULL, cmd_bench},
	{"healthcheck", "exit 0 when the daemon answers /healthz (--ready: /readyz)",
	 healthcheck_usage, NULL, cmd_healthcheck},
	{"mcp", "serve MCP on standard input and output for LLM clients", rf_cli_mcp_usage, NULL,
	 rf_cli_mcp},
	{"names", "the names questions take, one per line (models, quants, gpus...)",
	 rf_cli_names_usage, NULL, rf_cli_names},
	{"version", "print the version", version_usage, NULL, cmd_version},
	{"help", "help on a command: rigfit help COMMAND", NULL, NULL, NULL},
};
#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct cli_command *command_find(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* The one-line error for a command that does not exist, naming the closest one. */
static int unknown_command(const char *prefix, const char *name)
{
	const char *names[N_COMMANDS];
	const char *near;

	for (size_t i = 0; i < N_COMMANDS; i++)
		names[i] = commands[i].name;
	near = rf_suggest(name, names, N_COMMANDS);
	if (near)
		return cli_usage_error("%sunknown command '%.60s'; did you mean '%s'? (try rigfit "
				       "help)",
				       prefix, name, near);
	return cli_usage_error("%sunknown command '%.60s' (try rigfit help)", prefix, name);
}

static void usage_print(FILE *out)
{
	fputs("usage: rigfit <command> [options]\n", out);
	for (size_t i = 0; i < N_COMMANDS; i++)
		fprintf(out, "  %-12s %s\n", commands[i].name, commands[i].summary);
	fputs("rigfit help COMMAND or rigfit COMMAND --help tells more; man rigfit tells all.\n",
	      out);
}

static int command_help(const struct cli_command *c, FILE *out)
{
	if (c->help)
		return c->help(c->name, out) < 0 ? 1 : 0;
	if (c->usage)
		fputs(c->usage, out);
	else
		usage_print(out);
	return 0;
}

/* Returns true when argv asks for help (-h or --help before a "--"). */
static bool wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return false;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return true;
	}
	return false;
}

int rf_cli_main(int argc, char **argv)
{
	const char *name = argc > 1 ? argv[1] : NULL;
	const struct cli_command *c;

	if (!name) {
		/* A person at a terminal gets the first answer, what fits this machine; a script
		 * gets the usage and exit status 2, as before. */
		if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)) {
			char cmd[] = "recommend";
			char *args[] = {cmd, NULL};
			int rc = rf_cli_question(1, args);
			if (rc == 0)
				fputs("\nrigfit help lists the commands; rigfit recommend --help the "
				      "questions this one takes.\n",
				      stdout);
			return rc;
		}
		usage_print(stderr);
		return 2;
	}
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0)
		name = "help";
	if (strcmp(name, "--version") == 0)
		name = "version";
	c = command_find(name);
	if (!c)
		return unknown_command("", name);
	if (!c->run) {
		const struct cli_command *topic = argc > 2 ? command_find(argv[2]) : NULL;
		if (argc > 2 && !topic)
			return unknown_command("help: ", argv[2]);
		if (argc > 3)
			return cli_usage_error("help: one command at a time");
		if (!topic) {
			usage_print(stdout);
			return 0;
		}
		return command_help(topic, stdout);
	}
	if (wants_help(argc - 1, argv + 1))
		return command_help(c, stdout);
	return c->run(argc - 1, argv + 1);
}
