/*
 * The scan (see detect.h). This release reads /proc/meminfo, /proc/cpuinfo and the kernel's
 * identity; GPUs, topology, containers and the other platforms plug in here as probes that
 * each fill their part of the snapshot and name themselves in `sources`.
 */
#include "server/detect/detect.h"

#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "core/err.h"
#include "core/hw_parse.h"
#include "core/text.h"
#include "server/detect/readfile.h"

#define PROC_FILE_CAP (4u << 20)

static void probe_memory(const char *root, struct hw_snapshot *s)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = rf_read_under_root(root, "/proc/meminfo", PROC_FILE_CAP, &buf, &len);

	if (rc < 0) {
		hw_warn(s, "memory: cannot read /proc/meminfo (%s)", rf_err_code(rc));
		return;
	}
	if (hw_parse_meminfo(buf, len, &s->memory) < 0)
		hw_warn(s, "memory: /proc/meminfo has no MemTotal line");
	else
		hw_strlcpy(s->sources.memory, "proc", sizeof(s->sources.memory));
	free(buf);
}

static void probe_cpu(const char *root, struct hw_snapshot *s)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = rf_read_under_root(root, "/proc/cpuinfo", PROC_FILE_CAP, &buf, &len);

	if (rc < 0) {
		hw_warn(s, "cpu: cannot read /proc/cpuinfo (%s)", rf_err_code(rc));
		return;
	}
	if (hw_parse_cpuinfo(buf, len, &s->cpu) < 0)
		hw_warn(s, "cpu: /proc/cpuinfo lists no processor");
	else
		hw_strlcpy(s->sources.cpu, "proc", sizeof(s->sources.cpu));
	free(buf);
	if (s->cpu.physical_cores == HW_UNKNOWN)
		hw_warn(s, "cpu: physical core count unknown (no topology in /proc/cpuinfo)");
}

/* The kernel's identity: uname for this machine, /proc/sys/kernel for a recorded root. */
static void probe_host(const char *root, struct hw_snapshot *s)
{
	if (strcmp(root, "/") == 0) {
		struct utsname u;
		if (uname(&u) == 0) {
			hw_strlcpy(s->host.os, u.sysname, sizeof(s->host.os));
			hw_strlcpy(s->host.kernel, u.release, sizeof(s->host.kernel));
			hw_strlcpy(s->host.arch, u.machine, sizeof(s->host.arch));
		}
	} else {
		static const struct {
			const char *path;
			size_t off;
			size_t size;
		} files[] = {
			{"/proc/sys/kernel/ostype", offsetof(struct hw_host, os),
			 sizeof(s->host.os)},
			{"/proc/sys/kernel/osrelease", offsetof(struct hw_host, kernel),
			 sizeof(s->host.kernel)},
		};
		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			char *buf = NULL;
			size_t len = 0;
			if (rf_read_under_root(root, files[i].path, 4096, &buf, &len) == 0) {
				struct rf_span v = rf_span_trim((struct rf_span){buf, len});
				rf_span_copy(v, (char *)&s->host + files[i].off, files[i].size);
				free(buf);
			}
		}
	}
	hw_strlcpy(s->cpu.arch, s->host.arch, sizeof(s->cpu.arch));
}

int rf_detect_scan(const struct rf_detect_opts *opts, struct hw_snapshot *out)
{
	const char *root = opts && opts->root && *opts->root ? opts->root : "/";
	struct timespec t0, t1, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	hw_snapshot_init(out);
	probe_host(root, out);
	probe_memory(root, out);
	probe_cpu(root, out);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_REALTIME, &now);
	out->scanned_at_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	out->scan_duration_ms =
		(double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	return 0;
}
