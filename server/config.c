/*
 * Configuration parsing (see config.h). Each option is one row of a table naming its flag,
 * its environment variable and how its value is stored, so flags and environment can never
 * disagree on a name or a rule.
 */
#include "server/config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "core/numparse.h"

const char rf_serve_usage[] =
	"usage: rigfit serve [--listen HOST:PORT] [--db FILE] [--root DIR] [--scan-interval S]\n"
	"                    [--nvml-lib PATH] [--nvidia-smi PATH] [--sysctl PATH]\n"
	"                    [--probe-timeout-ms MS] [--connection-timeout S]\n"
	"                    [--header-timeout S] [--body-timeout S] [--allowed-host HOST]...\n"
	"                    [--scan-history-keep N] [--profiles DIR] [--models-dir DIR]...\n"
	"                    [--hf-cache DIR] [--ollama-models DIR]\n"
	"                    [--cors-origin ORIGIN]... [--token-file FILE] [--log-level LEVEL]\n"
	"                    [--nfd-dir DIR] [--data-dir DIR] [--static-dir DIR]\n"
	"                    [--hub URL] [--hub-token-file FILE] [--hub-timeout-ms MS]\n"
	"                    [--insecure] [--no-ui] [--mcp-conformance-fixtures]\n"
	"Every flag can also be set in the environment: RIGFIT_LISTEN, RIGFIT_DB, RIGFIT_ROOT,\n"
	"RIGFIT_NVML_LIB, RIGFIT_NVIDIA_SMI, RIGFIT_SYSCTL, RIGFIT_PROBE_TIMEOUT_MS,\n"
	"RIGFIT_CONNECTION_TIMEOUT, RIGFIT_HEADER_TIMEOUT, RIGFIT_BODY_TIMEOUT,\n"
	"RIGFIT_ALLOWED_HOST (a comma-separated list),\n"
	"RIGFIT_SCAN_INTERVAL, RIGFIT_SCAN_HISTORY_KEEP, RIGFIT_PROFILES, RIGFIT_HF_CACHE,\n"
	"RIGFIT_OLLAMA_MODELS, "
	"RIGFIT_MODELS_DIR and\n"
	"RIGFIT_CORS_ORIGIN (comma-separated lists), RIGFIT_TOKEN_FILE, RIGFIT_LOG_LEVEL,\n"
	"RIGFIT_NFD_DIR, RIGFIT_DATA_DIR, RIGFIT_STATIC_DIR, RIGFIT_HUB, RIGFIT_HUB_TOKEN_FILE,\n"
	"RIGFIT_HUB_TIMEOUT_MS,\n"
	"RIGFIT_INSECURE=1, RIGFIT_NO_UI=1, RIGFIT_MCP_CONFORMANCE_FIXTURES=1. Flags win over\n"
	"the environment.\n"
	"--no-ui: do not serve the web page at / (the API is unchanged).\n"
	"--mcp-conformance-fixtures: adds the conformance suite's fixture resources to MCP\n"
	"(test://static-text, test://static-binary), for testing MCP clients and the\n"
	"conformance suite; off by default.\n"
	"Limits: a connection must send a request's line and headers within --header-timeout\n"
	"(10 s) and its body within --body-timeout (30 s) of the headers, or it is closed; one\n"
	"address holds at most 384 connections (a stalled one is closed to make room for a new\n"
	"one), 1024 in all; request bodies held at once share 64 MiB (more answers 503).\n"
	"Without a token only Host headers naming this machine (localhost, an IP address,\n"
	"the --listen host) or an --allowed-host are served; others answer 403.\n"
	"Without --profiles, the profiles are found in ../share/rigfit/profiles beside the\n"
	"binary, then in ./profiles. --data-dir: whose free space ModelForge's detection shows\n"
	"(default: the database's directory). --static-dir: serve a built web app (ModelForge's)\n"
	"from DIR at /, index.html for its client routes; /api/ stays the API.\n"
	"--hub URL: look Hugging Face ids that neither the catalog nor the HF cache holds up on\n"
	"this Hub (https://huggingface.co, or a mirror as HF_ENDPOINT names one); off by default.\n";

enum opt_kind {
	OPT_STR,
	OPT_INT,
	OPT_LIST,
	OPT_BOOL,
	OPT_LEVEL
};

struct opt {
	const char *flag;
	const char *env;
	enum opt_kind kind;
	size_t offset;       /* of the field in struct rf_config */
	size_t size;         /* of one string slot */
	size_t count_offset; /* OPT_LIST: offset of the int count */
	long min, max;       /* OPT_INT */
};

/* getopt_long's value for row i of the table is OPT_INDEX_BASE + i. */
#define OPT_INDEX_BASE 0x100

#define FIELD(f) offsetof(struct rf_config, f), sizeof(((struct rf_config *)0)->f)
#define LISTF(f, n)                                                                                \
	offsetof(struct rf_config, f), sizeof(((struct rf_config *)0)->f[0]),                      \
		offsetof(struct rf_config, n)

static const struct opt opts[] = {
	{"--listen", "RIGFIT_LISTEN", OPT_STR, FIELD(listen), 0, 0, 0},
	{"--db", "RIGFIT_DB", OPT_STR, FIELD(db), 0, 0, 0},
	{"--root", "RIGFIT_ROOT", OPT_STR, FIELD(root), 0, 0, 0},
	{"--nvml-lib", "RIGFIT_NVML_LIB", OPT_STR, FIELD(nvml_lib), 0, 0, 0},
	{"--nvidia-smi", "RIGFIT_NVIDIA_SMI", OPT_STR, FIELD(nvidia_smi), 0, 0, 0},
	{"--sysctl", "RIGFIT_SYSCTL", OPT_STR, FIELD(sysctl), 0, 0, 0},
	{"--probe-timeout-ms", "RIGFIT_PROBE_TIMEOUT_MS", OPT_INT, FIELD(probe_timeout_ms), 0, 50,
	 60000},
	{"--scan-interval", "RIGFIT_SCAN_INTERVAL", OPT_INT, FIELD(scan_interval_s), 0, 1, 86400},
	{"--connection-timeout", "RIGFIT_CONNECTION_TIMEOUT", OPT_INT, FIELD(connection_timeout_s),
	 0, 1, 3600},
	{"--header-timeout", "RIGFIT_HEADER_TIMEOUT", OPT_INT, FIELD(header_timeout_s), 0, 1, 3600},
	{"--body-timeout", "RIGFIT_BODY_TIMEOUT", OPT_INT, FIELD(body_timeout_s), 0, 1, 3600},
	{"--allowed-host", "RIGFIT_ALLOWED_HOST", OPT_LIST, LISTF(allowed_hosts, n_allowed_hosts),
	 0, 0},
	{"--scan-history-keep", "RIGFIT_SCAN_HISTORY_KEEP", OPT_INT, FIELD(scan_history_keep), 0, 0,
	 10000000},
	{"--profiles", "RIGFIT_PROFILES", OPT_STR, FIELD(profiles), 0, 0, 0},
	{"--models-dir", "RIGFIT_MODELS_DIR", OPT_LIST, LISTF(models_dirs, n_models_dirs), 0, 0},
	{"--hf-cache", "RIGFIT_HF_CACHE", OPT_STR, FIELD(hf_cache), 0, 0, 0},
	{"--ollama-models", "RIGFIT_OLLAMA_MODELS", OPT_STR, FIELD(ollama_models), 0, 0, 0},
	{"--cors-origin", "RIGFIT_CORS_ORIGIN", OPT_LIST, LISTF(cors_origins, n_cors_origins), 0,
	 0},
	{"--token-file", "RIGFIT_TOKEN_FILE", OPT_STR, FIELD(token_file), 0, 0, 0},
	{"--nfd-dir", "RIGFIT_NFD_DIR", OPT_STR, FIELD(nfd_dir), 0, 0, 0},
	{"--data-dir", "RIGFIT_DATA_DIR", OPT_STR, FIELD(data_dir), 0, 0, 0},
	{"--static-dir", "RIGFIT_STATIC_DIR", OPT_STR, FIELD(static_dir), 0, 0, 0},
	{"--hub", "RIGFIT_HUB", OPT_STR, FIELD(hub), 0, 0, 0},
	{"--hub-token-file", "RIGFIT_HUB_TOKEN_FILE", OPT_STR, FIELD(hub_token_file), 0, 0, 0},
	{"--hub-timeout-ms", "RIGFIT_HUB_TIMEOUT_MS", OPT_INT, FIELD(hub_timeout_ms), 0, 100,
	 60000},
	{"--log-level", "RIGFIT_LOG_LEVEL", OPT_LEVEL, FIELD(log_level), 0, 0, 0},
	{"--insecure", "RIGFIT_INSECURE", OPT_BOOL, FIELD(insecure), 0, 0, 0},
	{"--no-host-bench", "RIGFIT_NO_HOST_BENCH", OPT_BOOL, FIELD(no_host_bench), 0, 0, 0},
	{"--no-ui", "RIGFIT_NO_UI", OPT_BOOL, FIELD(no_ui), 0, 0, 0},
	{"--mcp-conformance-fixtures", "RIGFIT_MCP_CONFORMANCE_FIXTURES", OPT_BOOL,
	 FIELD(mcp_conformance_fixtures), 0, 0, 0},
};

int rf_log_level_parse(const char *s)
{
	static const char *const names[] = {"error", "warn", "info", "debug"};
	for (int i = 0; i < 4; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

static int opt_set_str(char *dst, size_t size, const char *v, const char *name, char *err,
		       size_t errlen)
{
	size_t n = strlen(v);
	if (n == 0 || n >= size) {
		snprintf(err, errlen, "%s: value must be 1 to %zu characters", name, size - 1);
		return RF_E_INVALID_VALUE;
	}
	memcpy(dst, v, n + 1);
	return 0;
}

/* Applies one value to one option. from_env: lists are comma-separated and replace. */
static int opt_apply(const struct opt *o, const char *v, bool from_env, bool *list_reset,
		     struct rf_config *cfg, char *err, size_t errlen)
{
	char *base = (char *)cfg + o->offset;
	const char *name = from_env ? o->env : o->flag;

	switch (o->kind) {
	case OPT_STR:
		return opt_set_str(base, o->size, v, name, err, errlen);
	case OPT_INT: {
		uint64_t n;
		if (rf_parse_u64_str(v, (uint64_t)o->max, &n) < 0 || (long)n < o->min) {
			snprintf(err, errlen,
				 "%s: expected an integer from %ld to %ld, got '%.40s'", name,
				 o->min, o->max, v);
			return RF_E_INVALID_VALUE;
		}
		*(int *)(void *)base = (int)n;
		return 0;
	}
	case OPT_LEVEL: {
		int lvl = rf_log_level_parse(v);
		if (lvl < 0) {
			snprintf(err, errlen,
				 "%s: expected error, warn, info or debug, got '%.40s'", name, v);
			return RF_E_INVALID_VALUE;
		}
		*(enum rf_log_level *)(void *)base = (enum rf_log_level)lvl;
		return 0;
	}
	case OPT_BOOL:
		if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0) {
			*(bool *)(void *)base = true;
		} else if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0 || strcmp(v, "no") == 0) {
			*(bool *)(void *)base = false;
		} else {
			snprintf(err, errlen, "%s: expected 1/0, true/false or yes/no", name);
			return RF_E_INVALID_VALUE;
		}
		return 0;
	case OPT_LIST: {
		int *count = (int *)(void *)((char *)cfg + o->count_offset);
		const char *p = v;
		if (!*list_reset) {
			*count = 0;
			*list_reset = true;
		}
		do {
			const char *end = from_env ? strchr(p, ',') : NULL;
			size_t n = end ? (size_t)(end - p) : strlen(p);
			char item[RF_CONFIG_PATH_MAX];
			if (n >= sizeof(item))
				n = sizeof(item) - 1;
			memcpy(item, p, n);
			item[n] = '\0';
			if (*count >= RF_CONFIG_MAX_LIST) {
				snprintf(err, errlen, "%s: at most %d values", name,
					 RF_CONFIG_MAX_LIST);
				return RF_E_INVALID_VALUE;
			}
			if (n > 0) {
				int rc = opt_set_str(base + (size_t)*count * o->size, o->size, item,
						     name, err, errlen);
				if (rc < 0)
					return rc;
				(*count)++;
			}
			p = end ? end + 1 : NULL;
		} while (p);
		return 0;
	}
	}
	return RF_E_INTERNAL;
}

static void config_defaults(struct rf_config *cfg)
{
	const char *state = getenv("STATE_DIRECTORY");

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->listen, sizeof(cfg->listen), "127.0.0.1:8080");
	/* Under systemd, StateDirectory= names the directory (a colon-separated list when there
	 * are several; the first is ours). */
	if (state && *state) {
		size_t n = strcspn(state, ":");
		snprintf(cfg->db, sizeof(cfg->db), "%.*s/rigfit.db", (int)(n < 4000 ? n : 4000),
			 state);
	} else {
		snprintf(cfg->db, sizeof(cfg->db), "./var/rigfit.db");
	}
	snprintf(cfg->root, sizeof(cfg->root), "/");
	/* profiles stays empty: `rigfit serve` finds the directory
	 * (server/profiles/profiles_find.h). */
	cfg->scan_interval_s = 30;
	cfg->probe_timeout_ms = 5000;
	cfg->hub_timeout_ms = 5000;
	cfg->connection_timeout_s = 15;
	cfg->header_timeout_s = 10;
	cfg->body_timeout_s = 30;
	cfg->scan_history_keep = 1000;
	cfg->log_level = RF_LOG_INFO;
}

int rf_long_option_inexact(int first, int argc, char **argv, const struct option *longopts)
{
	for (int i = first; i < argc; i++) {
		const char *arg = argv[i];
		size_t n;
		int k;
		if (strcmp(arg, "--") == 0)
			break;
		if (arg[0] != '-' || arg[1] != '-')
			continue;
		n = strcspn(arg + 2, "=");
		for (k = 0; longopts && longopts[k].name; k++)
			if (strlen(longopts[k].name) == n &&
			    strncmp(longopts[k].name, arg + 2, n) == 0)
				break;
		if (!longopts || !longopts[k].name)
			return i;
		/* A value given as the next word is not an option, whatever it looks like. */
		if (longopts[k].has_arg == required_argument && !arg[2 + n])
			i++;
	}
	return -1;
}

int rf_config_parse(int argc, char **argv, struct rf_config *cfg, char *err, size_t errlen)
{
	const size_t n_opts = sizeof(opts) / sizeof(opts[0]);
	bool reset[sizeof(opts) / sizeof(opts[0])] = {false};
	int rc;

	config_defaults(cfg);
	for (size_t i = 0; i < n_opts; i++) {
		const char *v = getenv(opts[i].env);
		bool env_reset = false;
		if (!v || !*v)
			continue;
		rc = opt_apply(&opts[i], v, true, &env_reset, cfg, err, errlen);
		if (rc < 0)
			return rc;
	}
	/* getopt_long wants the program's name first and may reorder its array: give it a
	 * copy, with one long option per row of the table (the row's index as its value). */
	{
		struct option longopts[sizeof(opts) / sizeof(opts[0]) + 1];
		char **args = calloc((size_t)argc + 2, sizeof(*args));
		int c;

		if (!args) {
			snprintf(err, errlen, "out of memory");
			return RF_E_NOMEM;
		}
		args[0] = "serve";
		for (int a = 0; a < argc; a++)
			args[a + 1] = argv[a];
		memset(longopts, 0, sizeof(longopts));
		for (size_t i = 0; i < n_opts; i++) {
			longopts[i].name = opts[i].flag + 2;
			longopts[i].has_arg = opts[i].kind == OPT_BOOL ? optional_argument :
									 required_argument;
			longopts[i].val = OPT_INDEX_BASE + (int)i;
		}
		optind = 0;
		opterr = 0;
		rc = 0;
		c = rf_long_option_inexact(1, argc + 1, args, longopts);
		if (c >= 0) {
			snprintf(err, errlen, "unknown option '%.60s' (see rigfit serve --help)",
				 args[c]);
			rc = RF_E_INVALID_VALUE;
		}
		while (rc == 0 && (c = getopt_long(argc + 1, args, ":", longopts, NULL)) != -1) {
			const char *arg = args[optind - 1];
			if (c == ':') {
				snprintf(err, errlen, "%.60s needs a value", arg);
				rc = RF_E_INVALID_VALUE;
			} else if (c < OPT_INDEX_BASE || c >= OPT_INDEX_BASE + (int)n_opts) {
				snprintf(err, errlen,
					 "unknown option '%.60s' (see rigfit serve --help)", arg);
				rc = RF_E_INVALID_VALUE;
			} else {
				size_t i = (size_t)(c - OPT_INDEX_BASE);
				rc = opt_apply(&opts[i], optarg ? optarg : "1", false, &reset[i],
					       cfg, err, errlen);
			}
		}
		if (rc == 0 && optind < argc + 1) {
			snprintf(err, errlen,
				 "unexpected argument '%.60s' (see rigfit serve --help)",
				 args[optind]);
			rc = RF_E_INVALID_VALUE;
		}
		free(args);
		if (rc < 0)
			return rc;
	}
	{
		char host[128];
		int port;
		if (rf_listen_parse(cfg->listen, host, sizeof(host), &port) < 0) {
			snprintf(
				err, errlen,
				"--listen: expected HOST:PORT or [IPv6]:PORT with a numeric host, got "
				"'%.60s'",
				cfg->listen);
			return RF_E_INVALID_VALUE;
		}
	}
	return 0;
}

int rf_listen_parse(const char *listen, char *host, size_t hostlen, int *port)
{
	const char *colon, *hs, *he;
	uint64_t p;
	unsigned char buf[16];

	if (!listen || !*listen)
		return RF_E_INVALID_VALUE;
	if (listen[0] == '[') {
		he = strchr(listen, ']');
		if (!he || he[1] != ':')
			return RF_E_INVALID_VALUE;
		hs = listen + 1;
		colon = he + 1;
	} else {
		colon = strrchr(listen, ':');
		if (!colon || strchr(listen, ':') != colon)
			return RF_E_INVALID_VALUE;
		hs = listen;
		he = colon;
	}
	if (he == hs || (size_t)(he - hs) >= hostlen || rf_parse_u64_str(colon + 1, 65535, &p) < 0)
		return RF_E_INVALID_VALUE;
	memcpy(host, hs, (size_t)(he - hs));
	host[he - hs] = '\0';
	if (strcmp(host, "localhost") == 0)
		snprintf(host, hostlen, "127.0.0.1");
	if (inet_pton(listen[0] == '[' ? AF_INET6 : AF_INET, host, buf) != 1)
		return RF_E_INVALID_VALUE;
	*port = (int)p;
	return 0;
}

bool rf_host_is_loopback(const char *host)
{
	unsigned char a[16];

	if (inet_pton(AF_INET, host, a) == 1)
		return a[0] == 127;
	if (inet_pton(AF_INET6, host, a) == 1) {
		static const unsigned char lo[16] = {0, 0, 0, 0, 0, 0, 0, 0,
						     0, 0, 0, 0, 0, 0, 0, 1};
		return memcmp(a, lo, 16) == 0;
	}
	return false;
}

/* Reads the token file path (named flag in messages) into token (size RF_TOKEN_MAX). */
static int load_token_file(const char *flag, const char *path, char *token, char *err,
			   size_t errlen)
{
	char buf[4097];
	ssize_t n;
	size_t len = 0, start = 0;
	int fd;

	token[0] = '\0';
	if (!path[0])
		return 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s %.200s: %s", flag, path, strerror(errno));
		return RF_E_IO;
	}
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len >= sizeof(buf) - 1) {
		snprintf(err, errlen, "%s %.200s: larger than 4 KiB", flag, path);
		return RF_E_INVALID_VALUE;
	}
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' ||
			   buf[len - 1] == '\t'))
		len--;
	while (start < len && (buf[start] == ' ' || buf[start] == '\t' || buf[start] == '\n'))
		start++;
	if (len - start == 0 || len - start >= RF_TOKEN_MAX) {
		snprintf(err, errlen, "%s %.200s: the token must be 1 to %d characters", flag, path,
			 RF_TOKEN_MAX - 1);
		return RF_E_INVALID_VALUE;
	}
	for (size_t i = start; i < len; i++) {
		if ((unsigned char)buf[i] < 0x21 || (unsigned char)buf[i] > 0x7e) {
			snprintf(err, errlen,
				 "%s %.200s: the token must be printable ASCII without "
				 "spaces",
				 flag, path);
			return RF_E_INVALID_VALUE;
		}
	}
	memcpy(token, buf + start, len - start);
	token[len - start] = '\0';
	return 0;
}

int rf_config_load_token(struct rf_config *cfg, char *err, size_t errlen)
{
	int rc = load_token_file("--token-file", cfg->token_file, cfg->token, err, errlen);

	if (rc == 0)
		rc = load_token_file("--hub-token-file", cfg->hub_token_file, cfg->hub_token, err,
				     errlen);
	return rc;
}
