/*
 * Fuzz target: the path of a GET that --static-dir may answer (rf_static_plan,
 * server/daemon/static_files.c), decided before any file is looked at. A path the plan lets reach
 * the file system must be a plain relative path inside the request's own path: not empty, no
 * empty, ".", ".." or hidden segment, no leading '/'; /api and /api/... are never files.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/daemon/static_files.h"
#include "tests/fuzz/fuzz.h"

static void check_plain(const char *rel)
{
	if (!*rel || rel[0] == '/')
		abort();
	for (const char *seg = rel; *seg;) {
		size_t n = strcspn(seg, "/");
		if (n == 0 || seg[0] == '.')
			abort();
		seg += n + (seg[n] == '/');
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = fuzz_strdup(data, size); /* MHD hands the URL as a C string */
	size_t n = strlen(path);
	const char *rel = NULL;
	enum rf_static_plan plan = rf_static_plan(path, &rel);

	if (!rel || rel < path || rel > path + n)
		abort();
	if (plan == RF_STATIC_API) {
		if (strncmp(path, "/api", 4) != 0 || (path[4] != '\0' && path[4] != '/'))
			abort();
	} else if (strcmp(path, "/api") == 0 || strncmp(path, "/api/", 5) == 0) {
		abort();
	}
	if (plan == RF_STATIC_FILE_OR_APP || plan == RF_STATIC_FILE_OR_404)
		check_plain(rel);
	free(path);
	return 0;
}
