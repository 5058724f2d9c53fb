/*
 * Running a probe command (nvidia-smi, sysctl, rigfit's own NVML probe) the only safe way: an
 * argv (no shell), a wall-clock timeout after which the process group is killed, and a cap on
 * the output kept. Used from the scan worker thread.
 */
#ifndef RIGFIT_SERVER_DETECT_RUN_H
#define RIGFIT_SERVER_DETECT_RUN_H

#include <stddef.h>

struct rf_run_result {
	char *out; /* stdout, NUL-terminated, at most cap bytes (malloc'd; free it) */
	size_t len;
	int exit_status; /* 0..255, or 128 + signal */
	int timed_out;   /* 1 when the timeout killed it */
	int truncated;   /* 1 when stdout was longer than cap (the rest was discarded) */
};

/* Runs argv[0] (an absolute path, or a name looked up in PATH) with argv, stdin from
 * /dev/null and stderr discarded, for at most timeout_ms. Returns 0 when the command ran (even
 * if it failed, timed out or was truncated: see *res), RF_E_NOT_FOUND when it could not be
 * executed, RF_E_NOMEM or RF_E_IO otherwise. */
int rf_run_capture(const char *const argv[], int timeout_ms, size_t cap,
		   struct rf_run_result *res /* OUT */);

/* Like rf_run_capture, but the child runs fn(arg, out_fd) after fork, without exec, and exits
 * with its return value. For probes that load a library which may hang or crash (NVML): the
 * scan survives both. fn must only write its result to out_fd and return. */
int rf_run_fork_capture(int (*fn)(void *arg, int out_fd), void *arg, int timeout_ms, size_t cap,
			struct rf_run_result *res /* OUT */);

/* Frees res->out. */
void rf_run_result_free(struct rf_run_result *res);

#endif
