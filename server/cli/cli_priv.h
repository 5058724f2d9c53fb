/*
 * What the CLI commands share: reading a request, finding and loading the profiles' catalogs,
 * scanning this machine (with a progress note on a terminal), parsing options with
 * getopt_long, and printing a route's reply as JSON, a summary or a table, so every command
 * that has a route twin answers with exactly the route's JSON. Private to server/cli/.
 */
#ifndef RIGFIT_SERVER_CLI_CLI_PRIV_H
#define RIGFIT_SERVER_CLI_CLI_PRIV_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

#include "api/api.h"
#include "server/config.h"
#include "server/profiles/profiles.h"

struct hw_snapshot;
struct rf_detect_opts;

/* A route's world for one CLI run: this machine's scan and the profiles' catalogs. */
struct rf_cli_env {
	char *body; /* the request body (malloc'd; freed by rf_cli_env_close) */
	size_t body_len;
	struct rf_profiles *set;
	struct rf_catalogs *cat;
	struct api_snapshot *snap;
	struct rf_config cfg; /* models_dirs only */
	struct api_env env;
	struct api_request req; /* POST with body; the caller sets path */
};

/* How a command prints its answer (--format). */
enum cli_format {
	CLI_FMT_JSON,    /* the route's JSON, byte for byte */
	CLI_FMT_SUMMARY, /* a few labelled lines */
	CLI_FMT_TABLE,   /* every value, aligned */
};

/* With ce->body (and ce->cfg.models_dirs) set by the caller: loads the catalogs of profiles
 * (found as cli_profiles_dir says when NULL), scans the machine as opts say (NULL: this
 * machine with the default probes) and fills env and req. Returns 0, or the exit status after printing one line (ce is then
 * closed). */
int rf_cli_env_open(struct rf_cli_env *ce, const char *profiles, const struct rf_detect_opts *opts);

/* Frees what rf_cli_env_open made and ce->body. */
void rf_cli_env_close(struct rf_cli_env *ce);

/* `rigfit estimate | config | recommend | validate`, with argv[0] the command's name. Returns
 * the exit status. */
int rf_cli_question(int argc, char **argv);

/* Prints the help of question command name to out; returns 0, or -1 when name is not one. */
int cli_question_help(const char *name, FILE *out);

/* Prints a reply: the JSON body on stdout (0), or the error as one line on stderr (2 for the
 * caller's mistakes, 1 otherwise). */
int cli_print_reply(const struct api_reply *r);

/* Prints a reply in format f; cmd names the command whose summary lines apply. Errors are
 * printed as cli_print_reply does. Returns the exit status. */
int cli_print_reply_as(const struct api_reply *r, enum cli_format f, const char *cmd);

/* Prints the JSON json[0..len) in format f (cmd as above). Returns 0, or 1 after a message. */
int cli_print_json_as(const char *json, size_t len, enum cli_format f, const char *cmd);

/* Parses a --format value of command cmd. Returns 0, or 2 after a usage message. */
int cli_format_parse(const char *cmd, const char *v, enum cli_format *out /* OUT */);

/* The format when none is asked for: summary on a terminal, JSON otherwise. */
enum cli_format cli_format_default(void);

/* Prints "rigfit: <message>" on one line; returns 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports what getopt_long's return c (':' or '?') says about argv for command name, naming
 * the closest of longopts (may be NULL; ends with a zero entry) to an unknown option; returns
 * 2. */
int cli_getopt_error(const char *name, int c, char **argv, const struct option *longopts);

/* Checks that every long option in argv names one of longopts in full: getopt_long takes an
 * unambiguous prefix ("--model" for "--models-dir") silently, where a user meant another
 * flag. Returns 0, or 2 after cli_getopt_error's message for the first that does not. */
int cli_long_options_exact(const char *name, int argc, char **argv, const struct option *longopts);

/* Finds the profile directory (--profiles given, RIGFIT_PROFILES, beside the binary,
 * ./profiles) into out. Returns 0, or 1 after saying that none was found. */
int cli_profiles_dir(const char *given, char *out /* OUT */, size_t outlen);

/* Loads the profile set of dir (found by cli_profiles_dir when NULL) and its catalogs.
 * Returns 0 or 1 after printing why. */
int cli_catalogs(const char *dir, struct rf_profiles **set, struct rf_catalogs **cat);

/* Scans the machine as opts say into *s, with a one-line note on stderr while it runs when
 * stderr is a terminal. */
void cli_scan(const struct rf_detect_opts *opts, struct hw_snapshot *s /* OUT */);

/* Reads a whole file or standard input ("-"), at most API_MAX_BODY_BYTES. Returns a malloc'd
 * NUL-terminated buffer (length in *len) or NULL with errno set. */
char *cli_read_input(const char *path, size_t *len);

#endif
