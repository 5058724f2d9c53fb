/*
 * `rigfit names KIND`: the names a question can take, one per line, for shell completion and
 * scripts: models (catalog ids and aliases), quants (llama.cpp's file types), gpus (device
 * profiles' names and aliases), profiles (device profile ids) and tasks.
 */
#ifndef RIGFIT_SERVER_CLI_CLI_NAMES_H
#define RIGFIT_SERVER_CLI_CLI_NAMES_H

#include <stdio.h>

/* rigfit names KIND [--profiles DIR]. Returns the exit status. */
int rf_cli_names(int argc, char **argv);

/* Its usage text. */
extern const char rf_cli_names_usage[];

#endif
