/*
 * `rigfit models`: the models a request can name on this host (see cli_models.c).
 */
#ifndef RIGFIT_SERVER_CLI_CLI_MODELS_H
#define RIGFIT_SERVER_CLI_CLI_MODELS_H

/* Runs `rigfit models` with argv[0] "models". Returns the exit status: 0, 1 (a failure) or 2
 * (a usage error, after one line on stderr). */
int rf_cli_models(int argc, char **argv);

/* The command's help, for `rigfit help models` and `rigfit models --help`. */
extern const char rf_cli_models_usage[];

#endif
