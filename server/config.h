/*
 * The daemon's configuration: command-line flags over RIGFIT_* environment variables over
 * built-in defaults. Parsing is strict: an unknown flag, a missing value or a value out of
 * range is a one-line error, never a silent default.
 */
#ifndef RIGFIT_SERVER_CONFIG_H
#define RIGFIT_SERVER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define RF_CONFIG_MAX_LIST 16
#define RF_CONFIG_PATH_MAX 4096
#define RF_TOKEN_MAX 512

enum rf_log_level {
	RF_LOG_ERROR,
	RF_LOG_WARN,
	RF_LOG_INFO,
	RF_LOG_DEBUG
};

struct rf_config {
	char listen[256]; /* HOST:PORT or [V6]:PORT */
	char db[RF_CONFIG_PATH_MAX];
	char root[RF_CONFIG_PATH_MAX];
	char nvml_lib[RF_CONFIG_PATH_MAX]; /* "" : the default (see rf_detect_opts) */
	char nvidia_smi[RF_CONFIG_PATH_MAX];
	char sysctl[RF_CONFIG_PATH_MAX];
	int probe_timeout_ms;
	int scan_interval_s;      /* 1 .. 86400 */
	int scan_history_keep;    /* rows kept in the scan history; 0 = all */
	int connection_timeout_s; /* an idle or stalled connection is closed after this */
	int header_timeout_s;     /* a request's line and headers must arrive within this */
	int body_timeout_s;       /* a request's body must arrive within this */
	char profiles[RF_CONFIG_PATH_MAX];
	int n_models_dirs;
	char models_dirs[RF_CONFIG_MAX_LIST][RF_CONFIG_PATH_MAX];
	char hf_cache[RF_CONFIG_PATH_MAX]; /* --hf-cache: the Hugging Face hub cache; "": default */
	char ollama_models[RF_CONFIG_PATH_MAX]; /* --ollama-models: Ollama's store; "": default */
	int n_cors_origins;
	char cors_origins[RF_CONFIG_MAX_LIST][256];
	int n_allowed_hosts; /* Host header values accepted besides the loopback names */
	char allowed_hosts[RF_CONFIG_MAX_LIST][256];
	char token_file[RF_CONFIG_PATH_MAX];
	char nfd_dir[RF_CONFIG_PATH_MAX];    /* "" : no feature file */
	char data_dir[RF_CONFIG_PATH_MAX];   /* "" : the database's directory */
	char static_dir[RF_CONFIG_PATH_MAX]; /* "" : no web app served from files */
	char token[RF_TOKEN_MAX];            /* loaded from token_file; empty: no token */
	char hub[512];                       /* --hub: a Hugging Face Hub URL; "": no lookup */
	char hub_token_file[RF_CONFIG_PATH_MAX];
	char hub_token[RF_TOKEN_MAX]; /* loaded from hub_token_file; empty: none */
	int hub_timeout_ms;           /* the whole lookup of one model */
	enum rf_log_level log_level;
	bool insecure;
	bool no_host_bench; /* do not measure this host (memory bandwidth, kernels) */
	bool no_ui;         /* --no-ui: GET / and /ui/ answer 404 */
	/* --mcp-conformance-fixtures: MCP also lists and reads the conformance suite's fixture
	 * resources (test://static-text...), for testing MCP clients and the suite itself */
	bool mcp_conformance_fixtures;
};

struct option;

/* The index in argv[first..argc) of the first long option ("--name" or "--name=value", up to a
 * "--" that ends the options) that names none of longopts in full, or -1 when each does.
 * getopt_long takes an unambiguous prefix ("--lis" for "--listen") silently; the daemon and the
 * CLI refuse one. A value given as the word after an option that requires one is skipped. */
int rf_long_option_inexact(int first, int argc, char **argv, const struct option *longopts);

/* Fills cfg with the defaults, then RIGFIT_* environment variables, then the flags in
 * argv[0..argc) (argv[0] is the first flag, not the program name). Does not read the token
 * file (see rf_config_load_token). Returns 0, or RF_E_INVALID_VALUE with a one-line message in
 * err (size errlen). */
int rf_config_parse(int argc, char **argv, struct rf_config *cfg /* OUT */, char *err,
		    size_t errlen);

/* Reads cfg->token_file (at most 4 KiB, surrounding whitespace trimmed, non-empty) into
 * cfg->token, and cfg->hub_token_file the same way into cfg->hub_token. A config without
 * token_file (hub_token_file) is left without that token. Returns 0 or a negative
 * rf_err with a message in err. */
int rf_config_load_token(struct rf_config *cfg, char *err, size_t errlen);

/* Parses "HOST:PORT" / "[V6]:PORT" ("localhost" is 127.0.0.1). Writes the numeric host (no
 * brackets) and the port. Returns 0 or RF_E_INVALID_VALUE. */
int rf_listen_parse(const char *listen, char *host /* OUT */, size_t hostlen, int *port /* OUT */);

/* Returns true when the numeric host is a loopback address (127.0.0.0/8 or ::1). */
bool rf_host_is_loopback(const char *host);

/* Returns the log level named by s ("error", "warn", "info", "debug"), or -1. */
int rf_log_level_parse(const char *s);

/* The flags' one-paragraph usage text. */
extern const char rf_serve_usage[];

#endif
