/*
 * Reading files of the machine under a root directory, with a size cap: every probe reads
 * <root>/<path>, so tests can point a scan at a recorded tree.
 */
#ifndef RIGFIT_SERVER_DETECT_READFILE_H
#define RIGFIT_SERVER_DETECT_READFILE_H

#include <stddef.h>

/* Reads at most cap bytes of <root>/<path> (path starts with '/'). Returns 0 and a malloc'd,
 * NUL-terminated buffer in *buf (length in *len; free it), RF_E_NOT_FOUND when the file is
 * absent, RF_E_TOO_LARGE past cap, RF_E_IO otherwise. */
int rf_read_under_root(const char *root, const char *path, size_t cap, char **buf /* OUT */,
		       size_t *len /* OUT */);

#endif
