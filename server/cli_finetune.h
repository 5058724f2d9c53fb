/*
 * `rigfit detect --task T`: POST /api/finetune/detect for this machine, from the command line.
 * Private to server/cli*.c.
 */
#ifndef RIGFIT_SERVER_CLI_FINETUNE_H
#define RIGFIT_SERVER_CLI_FINETUNE_H

/* Scans this machine (with detect's options: --root, --profiles, --nvml-lib, --nvidia-smi,
 * --sysctl, --probe-timeout-ms, --format json; --task T is skipped) and prints the route's
 * answer to {"task": task}. Returns the exit status: 0, 1 on failure, 2 for the caller's
 * mistakes (a 4xx answer or a bad option). */
int rf_cli_detect_task(const char *task, int argc, char **argv);

#endif
