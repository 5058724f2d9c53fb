/*
 * Command-line dispatch (see cli.h). Usage errors print one line to stderr and exit 2;
 * failures exit 1.
 */
#include "server/cli.h"
#include "server/cli_priv.h"
#include "server/cli_bench.h"
#include "server/cli_finetune.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/hardware_json.h"
#include "api/hardware_nfd.h"
#include "api/hardware_summary.h"
#include "api/recommend.h"
#include "api/runtime_config.h"
#include "api/validate.h"
#include "core/err.h"
#include "core/hw_profile.h"
#include "core/numparse.h"
#include "server/config.h"
#include "server/daemon.h"
#include "server/detect/detect.h"
#include "server/healthcheck.h"
#include "server/mcp_stdio.h"
#include "server/models_dir.h"
#include "server/models_list.h"
#include "server/ollama_models.h"
#include "server/profiles.h"

static const char usage[] =
	"usage: rigfit <command> [options]\n"
	"  serve        run the daemon (rigfit serve --help for its options)\n"
	"  detect       scan this machine: --format summary|json, --root DIR, --nvml-lib PATH,\n"
	"               --nvidia-smi PATH, --sysctl PATH, --probe-timeout-ms MS, --profiles DIR\n"
	"  estimate     memory and speed of a model here: the JSON of POST /api/estimate on\n"
	"               stdin or in FILE; --profiles DIR, --models-dir DIR, --root DIR\n"
	"  recommend    models that fit here, or hardware for a model: POST /api/recommend's JSON\n"
	"  config       a runtime config (llama-server or vllm): the JSON of POST /api/config\n"
	"  validate     check a runtime config here: --config FILE, the JSON of POST /api/validate\n"
	"  bench        record [-|FILE] (llama-bench -o json, llama-server timings or a run) or\n"
	"               list the benchmark history: --db PATH, --model M, --hardware FP...\n"
	"  healthcheck  exit 0 when the daemon answers /healthz: --listen HOST:PORT\n"
	"  mcp          serve MCP on stdin/stdout for LLM clients: --profiles DIR, --db PATH\n"
	"  version      print the version\n";

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

static int cmd_detect(int argc, char **argv)
{
	const char *format = isatty(STDOUT_FILENO) ? "summary" : "json";
	const char *root = getenv("RIGFIT_ROOT");
	const char *profiles = getenv("RIGFIT_PROFILES");
	bool profiles_given = profiles && *profiles;
	struct rf_profiles *set = NULL;
	struct rf_catalogs *catalogs = NULL;
	char err[512];
	struct rf_detect_opts opts = {0};
	struct hw_snapshot *s;
	uint64_t timeout = 0;
	int rc = 0;

	for (int i = 0; i + 1 < argc; i += 2)
		if (strcmp(argv[i], "--task") == 0)
			return rf_cli_detect_task(argv[i + 1], argc, argv);
	opts.nvml_lib = getenv("RIGFIT_NVML_LIB");
	opts.nvidia_smi = getenv("RIGFIT_NVIDIA_SMI");
	opts.sysctl = getenv("RIGFIT_SYSCTL");
	for (int i = 0; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--format") == 0 && v)
			format = v;
		else if (strcmp(argv[i], "--root") == 0 && v)
			root = v;
		else if (strcmp(argv[i], "--nvml-lib") == 0 && v)
			opts.nvml_lib = v;
		else if (strcmp(argv[i], "--nvidia-smi") == 0 && v)
			opts.nvidia_smi = v;
		else if (strcmp(argv[i], "--sysctl") == 0 && v)
			opts.sysctl = v;
		else if (strcmp(argv[i], "--profiles") == 0 && v) {
			profiles = v;
			profiles_given = true;
		} else if (strcmp(argv[i], "--probe-timeout-ms") == 0 && v) {
			if (rf_parse_u64_str(v, 60000, &timeout) < 0 || timeout < 50)
				return cli_usage_error(
					"detect: --probe-timeout-ms must be 50 to 60000");
			opts.probe_timeout_ms = (int)timeout;
		} else
			return cli_usage_error("detect: unknown or incomplete option '%.60s'",
					       argv[i]);
		i++;
	}
	if (strcmp(format, "json") != 0 && strcmp(format, "summary") != 0 &&
	    strcmp(format, "nfd") != 0)
		return cli_usage_error("detect: --format must be summary, json or nfd, not '%.40s'",
				       format);
	/* The same device profiles the daemon would use; ./profiles is optional, a named
	 * directory is not. */
	if (!profiles_given)
		profiles = "./profiles";
	if (rf_profiles_load(profiles, &set, err, sizeof(err)) < 0) {
		if (profiles_given) {
			fprintf(stderr, "rigfit: profiles: %s\n", err);
			return 1;
		}
		set = NULL;
	}
	if (rf_catalogs_from_profiles(set, &catalogs, err, sizeof(err)) < 0) {
		fprintf(stderr, "rigfit: profiles: %s\n", err);
		rf_profiles_free(set);
		return 1;
	}
	s = malloc(sizeof(*s));
	if (!s) {
		rf_catalogs_unref(catalogs);
		rf_profiles_free(set);
		return 1;
	}
	opts.root = root && *root ? root : "/";
	rf_detect_scan(&opts, s);
	hw_apply_device_profiles(s, &catalogs->table);
	rf_catalogs_unref(catalogs);
	rf_profiles_free(set);
	if (strcmp(format, "json") == 0) {
		size_t len;
		char *json = api_hardware_render(s, &len);
		if (json) {
			fwrite(json, 1, len, stdout);
			fputc('\n', stdout);
			free(json);
		} else {
			fprintf(stderr, "rigfit: out of memory\n");
			rc = 1;
		}
	} else {
		char *text = strcmp(format, "nfd") == 0 ? api_hardware_nfd(s) :
							  api_hardware_summary(s);
		if (text) {
			fputs(text, stdout);
			free(text);
		} else {
			fprintf(stderr, "rigfit: out of memory\n");
			rc = 1;
		}
	}
	free(s);
	return rc;
}

/* Loads the profile set of dir (./profiles quietly when dir is NULL) into catalogs. */
int cli_catalogs(const char *dir, struct rf_profiles **set, struct rf_catalogs **cat)
{
	char err[512];
	bool given = dir != NULL;

	*set = NULL;
	if (!dir)
		dir = "./profiles";
	if (rf_profiles_load(dir, set, err, sizeof(err)) < 0) {
		if (given) {
			fprintf(stderr, "rigfit: profiles: %s\n", err);
			return 1;
		}
		*set = NULL;
	}
	if (rf_catalogs_from_profiles(*set, cat, err, sizeof(err)) < 0) {
		fprintf(stderr, "rigfit: profiles: %s\n", err);
		rf_profiles_free(*set);
		*set = NULL;
		return 1;
	}
	return 0;
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
		fprintf(stderr, "rigfit: %s: %s%s%s%s\n",
			cJSON_IsString(code) ? code->valuestring : "error",
			cJSON_IsString(msg) ? msg->valuestring : "",
			cJSON_IsString(field) ? " (field " : "",
			cJSON_IsString(field) ? field->valuestring : "",
			cJSON_IsString(field) ? ")" : "");
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

int rf_cli_env_open(struct rf_cli_env *ce, int argc, char **argv, const char *name)
{
	const char *profiles = getenv("RIGFIT_PROFILES");
	struct rf_detect_opts opts = {0};

	memset(ce, 0, sizeof(*ce));
	ce->input = "-";
	if (profiles && !*profiles)
		profiles = NULL;
	for (int i = 0; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--profiles") == 0 && v) {
			profiles = v;
			i++;
		} else if (strcmp(argv[i], "--models-dir") == 0 && v) {
			if (ce->cfg.n_models_dirs >= RF_CONFIG_MAX_LIST ||
			    strlen(v) >= sizeof(ce->cfg.models_dirs[0]))
				return cli_usage_error("%s: too many or too long --models-dir",
						       name);
			snprintf(ce->cfg.models_dirs[ce->cfg.n_models_dirs++],
				 sizeof(ce->cfg.models_dirs[0]), "%s", v);
			i++;
		} else if (strcmp(argv[i], "--root") == 0 && v) {
			opts.root = v;
			i++;
		} else if ((strcmp(argv[i], "--config") == 0 ||
			    strcmp(argv[i], "--request") == 0) &&
			   v) {
			ce->input = v;
			i++;
		} else if (argv[i][0] != '-' || strcmp(argv[i], "-") == 0) {
			ce->input = argv[i];
		} else {
			return cli_usage_error("%s: unknown or incomplete option '%.60s'", name,
					       argv[i]);
		}
	}
	ce->body = cli_read_input(ce->input, &ce->body_len);
	if (!ce->body) {
		fprintf(stderr, "rigfit: %s: cannot read %s: %s\n", name,
			strcmp(ce->input, "-") == 0 ? "standard input" : ce->input,
			strerror(errno));
		return 2;
	}
	if (cli_catalogs(profiles, &ce->set, &ce->cat) != 0) {
		rf_cli_env_close(ce);
		return 1;
	}
	ce->snap = calloc(1, sizeof(*ce->snap));
	if (!ce->snap) {
		rf_cli_env_close(ce);
		return 1;
	}
	rf_detect_scan(&opts, &ce->snap->hw);
	hw_apply_device_profiles(&ce->snap->hw, &ce->cat->table);
	ce->snap->seq = 1;
	ce->env.version = RIGFIT_VERSION;
	ce->env.snapshot = ce->snap;
	ce->env.devices = &ce->cat->table;
	ce->env.models = ce->cat->models;
	ce->env.tiers = rf_profiles_get(ce->set, "tiers.json");
	if (ce->cfg.n_models_dirs > 0) {
		ce->env.read_model = rf_model_file_read_cfg;
		ce->env.read_model_ctx = &ce->cfg;
	}
	ce->env.read_model_dir = rf_model_dir_read_cfg;
	ce->env.read_model_dir_ctx = &ce->cfg;
	ce->env.read_ollama = rf_ollama_read_cfg;
	ce->env.read_ollama_ctx = &ce->cfg;
	ce->env.list_models = rf_list_models_cfg;
	ce->env.list_models_ctx = &ce->cfg;
	ce->req.method = API_POST;
	ce->req.query = "";
	ce->req.body = ce->body;
	ce->req.body_len = ce->body_len;
	return 0;
}

void rf_cli_env_close(struct rf_cli_env *ce)
{
	free(ce->snap);
	rf_catalogs_unref(ce->cat);
	rf_profiles_free(ce->set);
	free(ce->body);
	memset(ce, 0, sizeof(*ce));
}

int rf_cli_run_route(int argc, char **argv, const char *name, const char *path,
		     api_handler_fn handler)
{
	struct rf_cli_env ce;
	struct api_reply reply = {0};
	int rc = rf_cli_env_open(&ce, argc, argv, name);

	if (rc != 0)
		return rc;
	ce.req.path = path;
	handler(&ce.env, &ce.req, &reply);
	rc = cli_print_reply(&reply);
	api_reply_reset(&reply);
	rf_cli_env_close(&ce);
	return rc;
}

static int cmd_healthcheck(int argc, char **argv)
{
	const char *listen = getenv("RIGFIT_LISTEN");
	char addr[300], host[128], err[256];
	int port;
	uint64_t timeout_ms = 2000;

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
			listen = argv[++i];
		else if (strcmp(argv[i], "--timeout-ms") == 0 && i + 1 < argc) {
			if (rf_parse_u64_str(argv[++i], 60000, &timeout_ms) < 0 || timeout_ms == 0)
				return cli_usage_error(
					"healthcheck: --timeout-ms must be 1 to 60000");
		} else
			return cli_usage_error("healthcheck: unknown or incomplete option '%.60s'",
					       argv[i]);
	}
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
	if (rf_healthcheck(addr, (int)timeout_ms, err, sizeof(err)) < 0) {
		fprintf(stderr, "rigfit: healthcheck failed: %s\n", err);
		return 1;
	}
	return 0;
}

static int cmd_serve(int argc, char **argv)
{
	static struct rf_config cfg;
	char err[512];

	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(rf_serve_usage, stdout);
			return 0;
		}
	}
	if (rf_config_parse(argc, argv, &cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "rigfit: %s\n", err);
		return 2;
	}
	return rf_serve(&cfg);
}

int rf_cli_main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd || strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 ||
	    strcmp(cmd, "-h") == 0) {
		fputs(usage, cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
		printf("rigfit %s\n", RIGFIT_VERSION);
		return 0;
	}
	if (strcmp(cmd, "serve") == 0)
		return cmd_serve(argc - 2, argv + 2);
	if (strcmp(cmd, "detect") == 0)
		return cmd_detect(argc - 2, argv + 2);
	if (strcmp(cmd, "bench") == 0)
		return rf_cli_bench(argc - 2, argv + 2);
	if (strcmp(cmd, "healthcheck") == 0)
		return cmd_healthcheck(argc - 2, argv + 2);
	if (strcmp(cmd, "mcp") == 0)
		return rf_cli_mcp(argc - 2, argv + 2);
	if (strcmp(cmd, "estimate") == 0)
		return rf_cli_run_route(argc - 2, argv + 2, "estimate", "/api/estimate",
					api_estimate);
	if (strcmp(cmd, "recommend") == 0)
		return rf_cli_run_route(argc - 2, argv + 2, "recommend", "/api/recommend",
					api_recommend);
	if (strcmp(cmd, "validate") == 0)
		return rf_cli_run_route(argc - 2, argv + 2, "validate", "/api/validate",
					api_validate);
	if (strcmp(cmd, "config") == 0)
		return rf_cli_run_route(argc - 2, argv + 2, "config", "/api/config", api_config);
	return cli_usage_error("unknown command '%.60s' (try rigfit help)", cmd);
}
