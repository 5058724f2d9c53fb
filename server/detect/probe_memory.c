/*
 * Memory: /proc/meminfo. (Container limits arrive with the cgroup probe.)
 */
#include <stdlib.h>

#include "core/err.h"
#include "core/hw_parse.h"
#include "server/detect/probes.h"
#include "server/detect/readfile.h"

#define PROC_FILE_CAP (4u << 20)

void rf_probe_memory(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (s->memory.total_bytes >= 0)
		return;
	rc = rf_read_under_root(o->root, "/proc/meminfo", PROC_FILE_CAP, &buf, &len);
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
