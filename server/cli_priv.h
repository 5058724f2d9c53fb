/*
 * What the CLI commands share: reading a request, loading the profiles' catalogs, scanning
 * this machine, and printing a route's reply, so every command that has a route twin answers
 * with exactly the route's JSON. Private to server/cli*.c.
 */
#ifndef RIGFIT_SERVER_CLI_PRIV_H
#define RIGFIT_SERVER_CLI_PRIV_H

#include <stddef.h>

#include "api/api.h"
#include "server/config.h"
#include "server/profiles.h"

/* A route's world for one CLI run: this machine's scan and the profiles' catalogs. */
struct rf_cli_env {
	const char *input; /* "-" for standard input */
	char *body;
	size_t body_len;
	struct rf_profiles *set;
	struct rf_catalogs *cat;
	struct api_snapshot *snap;
	struct rf_config cfg; /* models_dirs only */
	struct api_env env;
	struct api_request req; /* POST with body; the caller sets path */
};

/* Parses the shared options (--profiles DIR, --models-dir DIR..., --root DIR, --config or
 * --request FILE, or FILE / - as the input), reads the request, loads the catalogs and scans.
 * Returns 0, or the exit status after printing one line (close is then done). */
int rf_cli_env_open(struct rf_cli_env *ce /* OUT */, int argc, char **argv, const char *name);

/* Frees what rf_cli_env_open made. */
void rf_cli_env_close(struct rf_cli_env *ce);

/* Runs handler on the request read from argv's input and prints its reply (cli_print_reply).
 * Returns the exit status. */
int rf_cli_run_route(int argc, char **argv, const char *name, const char *path,
		     api_handler_fn handler);

/* Prints a reply: the JSON body on stdout (0), or the error as one line on stderr (2 for the
 * caller's mistakes, 1 otherwise). */
int cli_print_reply(const struct api_reply *r);

/* Prints "rigfit: <message>" on one line; returns 2. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Loads the profile set of dir (./profiles quietly when NULL) and its catalogs. Returns 0 or 1
 * after printing why. */
int cli_catalogs(const char *dir, struct rf_profiles **set, struct rf_catalogs **cat);

/* Reads a whole file or standard input ("-"), at most API_MAX_BODY_BYTES. Returns a malloc'd
 * NUL-terminated buffer (length in *len) or NULL with errno set. */
char *cli_read_input(const char *path, size_t *len);

#endif
