/*
 * The hardware scan: reads the machine under a root directory and hands the text to core's
 * parsers. Runs on the scan worker thread, never on the request path. Each part of the machine
 * has its own probe (server/detect/probe_*.c, declared in probes.h); a probe fills only its
 * part of the snapshot, names itself in `sources`, and turns whatever it cannot read into
 * HW_UNKNOWN plus a warning.
 */
#ifndef RIGFIT_SERVER_DETECT_DETECT_H
#define RIGFIT_SERVER_DETECT_DETECT_H

#include <stdbool.h>

#include "core/hw/hw.h"

#define RF_PROBE_TIMEOUT_MS_DEFAULT 5000

struct rf_detect_opts {
	const char *root; /* "/" for this machine; files are read as <root>/proc/... */
	/* NVML library to dlopen. NULL: "libnvidia-ml.so.1" when root is "/", off otherwise. */
	const char *nvml_lib;
	/* nvidia-smi to run when NVML fails. NULL: "nvidia-smi" when root is "/", off otherwise. */
	const char *nvidia_smi;
	/* A program whose output is macOS `sysctl` output; naming it selects the Apple path.
	 * NULL: "sysctl" on macOS builds, off on Linux. */
	const char *sysctl;
	int probe_timeout_ms; /* per command or library probe; 0: the default */
	/* Whether the kernel grants this process AMX's tile state (ggml's ARCH_REQ_XCOMP_PERM
	 * request); a CPU whose cpuinfo lists AMX without the grant runs llama.cpp without it.
	 * NULL: the real request when root is "/"; a recorded root's cpuinfo is taken at its
	 * word. */
	bool (*amx_granted)(void);
};

/* Returns true when the scan reads this machine (root "/"), where default commands run. */
bool rf_detect_is_live(const struct rf_detect_opts *o);

/* Scans the machine into *out (initialised here). Never fails as a whole: what cannot be read
 * is HW_UNKNOWN with a warning. Returns 0, or RF_E_NOMEM. */
int rf_detect_scan(const struct rf_detect_opts *opts, struct hw_snapshot *out /* OUT */);

#endif
