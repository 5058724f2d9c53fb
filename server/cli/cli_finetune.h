/*
 * `rigfit detect --task T`: POST /api/finetune/detect for this machine, from the command line.
 * Private to server/cli/.
 */
#ifndef RIGFIT_SERVER_CLI_CLI_FINETUNE_H
#define RIGFIT_SERVER_CLI_CLI_FINETUNE_H

#include "server/cli/cli_priv.h"
#include "server/detect/detect.h"

/* Scans this machine with opts, loads the profiles (NULL: found) and prints the route's
 * answer to {"task": task} in format f. Returns the exit status: 0, 1 on failure, 2 for the
 * caller's mistakes (a 4xx answer). */
int rf_cli_detect_task(const char *task, const struct rf_detect_opts *opts, const char *profiles,
		       enum cli_format f);

#endif
