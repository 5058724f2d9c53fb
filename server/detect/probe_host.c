/*
 * The kernel's identity: uname for this machine, /proc/sys/kernel for a recorded root.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "core/text.h"
#include "server/detect/probes.h"
#include "server/detect/readfile.h"

void rf_probe_host(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	static const struct {
		const char *path;
		size_t off;
		size_t size;
	} files[] = {
		{"/proc/sys/kernel/ostype", offsetof(struct hw_host, os),
		 sizeof(((struct hw_host *)0)->os)},
		{"/proc/sys/kernel/osrelease", offsetof(struct hw_host, kernel),
		 sizeof(((struct hw_host *)0)->kernel)},
	};

	if (rf_detect_is_live(o)) {
		struct utsname u;
		if (uname(&u) == 0) {
			hw_strlcpy(s->host.os, u.sysname, sizeof(s->host.os));
			hw_strlcpy(s->host.kernel, u.release, sizeof(s->host.kernel));
			hw_strlcpy(s->host.arch, u.machine, sizeof(s->host.arch));
		}
		return;
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		if (rf_read_under_root(o->root, files[i].path, 4096, &buf, &len) == 0) {
			struct rf_span v = rf_span_trim((struct rf_span){buf, len});
			rf_span_copy(v, (char *)&s->host + files[i].off, files[i].size);
			free(buf);
		}
	}
}
