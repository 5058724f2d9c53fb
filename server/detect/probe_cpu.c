/*
 * CPU: /proc/cpuinfo. (sysfs topology, hybrid cores and NUMA arrive with the topology probe.)
 */
#include <stdlib.h>

#include "core/err.h"
#include "core/hw_parse.h"
#include "server/detect/probes.h"
#include "server/detect/readfile.h"

#define PROC_FILE_CAP (4u << 20)

void rf_probe_cpu(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (s->cpu.logical_cores >= 0)
		return;
	rc = rf_read_under_root(o->root, "/proc/cpuinfo", PROC_FILE_CAP, &buf, &len);
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
