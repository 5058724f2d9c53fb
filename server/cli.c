/*
 * Command-line dispatch (see cli.h). Usage errors print one line to stderr and exit 2;
 * failures exit 1.
 */
#include "server/cli.h"

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
#include "api/hardware_summary.h"
#include "core/err.h"
#include "core/hw_profile.h"
#include "core/numparse.h"
#include "server/config.h"
#include "server/daemon.h"
#include "server/detect/detect.h"
#include "server/healthcheck.h"
#include "server/models_dir.h"
#include "server/profiles.h"

static const char usage[] =
	"usage: rigfit <command> [options]\n"
	"  serve        run the daemon (rigfit serve --help for its options)\n"
	"  detect       scan this machine: --format summary|json, --root DIR, --nvml-lib PATH,\n"
	"               --nvidia-smi PATH, --sysctl PATH, --probe-timeout-ms MS, --profiles DIR\n"
	"  estimate     memory and speed of a model here: the JSON of POST /api/estimate on\n"
	"               stdin or in FILE; --profiles DIR, --models-dir DIR, --root DIR\n"
	"  healthcheck  exit 0 when the daemon answers /healthz: --listen HOST:PORT\n"
	"  version      print the version\n";

static int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints "rigfit: <message>" on one line and returns the usage exit status. */
static int cli_usage_error(const char *fmt, ...)
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
	if (strcmp(format, "json") != 0 && strcmp(format, "summary") != 0)
		return cli_usage_error("detect: --format must be summary or json, not '%.40s'",
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
		char *text = api_hardware_summary(s);
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
static int cli_catalogs(const char *dir, struct rf_profiles **set, struct rf_catalogs **cat)
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
static int cli_print_reply(const struct api_reply *r)
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
static char *cli_read_input(const char *path, size_t *len)
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

/* rigfit estimate [FILE|-]: the request of POST /api/estimate, answered for this machine (a
 * fresh scan) unless the request describes other hardware. */
static int cmd_estimate(int argc, char **argv)
{
	const char *input = "-", *profiles = getenv("RIGFIT_PROFILES");
	struct rf_config cfg_dirs;
	struct rf_profiles *set = NULL;
	struct rf_catalogs *cat = NULL;
	struct api_snapshot *snap = NULL;
	struct rf_detect_opts opts = {0};
	struct api_env env;
	struct api_request req = {0};
	struct api_reply reply = {0};
	char *body;
	size_t len = 0;
	int rc;

	memset(&cfg_dirs, 0, sizeof(cfg_dirs));
	if (profiles && !*profiles)
		profiles = NULL;
	for (int i = 0; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(argv[i], "--profiles") == 0 && v) {
			profiles = v;
			i++;
		} else if (strcmp(argv[i], "--models-dir") == 0 && v) {
			if (cfg_dirs.n_models_dirs >= RF_CONFIG_MAX_LIST ||
			    strlen(v) >= sizeof(cfg_dirs.models_dirs[0]))
				return cli_usage_error(
					"estimate: too many or too long --models-dir");
			snprintf(cfg_dirs.models_dirs[cfg_dirs.n_models_dirs++],
				 sizeof(cfg_dirs.models_dirs[0]), "%s", v);
			i++;
		} else if (strcmp(argv[i], "--root") == 0 && v) {
			opts.root = v;
			i++;
		} else if (argv[i][0] != '-' || strcmp(argv[i], "-") == 0) {
			input = argv[i];
		} else {
			return cli_usage_error("estimate: unknown or incomplete option '%.60s'",
					       argv[i]);
		}
	}
	body = cli_read_input(input, &len);
	if (!body) {
		fprintf(stderr, "rigfit: estimate: cannot read %s: %s\n",
			strcmp(input, "-") == 0 ? "standard input" : input, strerror(errno));
		return 2;
	}
	if (cli_catalogs(profiles, &set, &cat) != 0) {
		free(body);
		return 1;
	}
	snap = calloc(1, sizeof(*snap));
	if (!snap) {
		rc = 1;
		goto out;
	}
	rf_detect_scan(&opts, &snap->hw);
	hw_apply_device_profiles(&snap->hw, &cat->table);
	snap->seq = 1;
	memset(&env, 0, sizeof(env));
	env.version = RIGFIT_VERSION;
	env.snapshot = snap;
	env.devices = &cat->table;
	env.models = cat->models;
	if (cfg_dirs.n_models_dirs > 0) {
		env.read_model = rf_model_file_read_cfg;
		env.read_model_ctx = &cfg_dirs;
	}
	req.method = API_POST;
	req.path = "/api/estimate";
	req.query = "";
	req.body = body;
	req.body_len = len;
	api_estimate(&env, &req, &reply);
	rc = cli_print_reply(&reply);
out:
	api_reply_reset(&reply);
	free(snap);
	rf_catalogs_unref(cat);
	rf_profiles_free(set);
	free(body);
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
	if (strcmp(cmd, "healthcheck") == 0)
		return cmd_healthcheck(argc - 2, argv + 2);
	if (strcmp(cmd, "estimate") == 0)
		return cmd_estimate(argc - 2, argv + 2);
	return cli_usage_error("unknown command '%.60s' (try rigfit help)", cmd);
}
