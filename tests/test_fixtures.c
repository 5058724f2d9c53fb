/*
 * Test helpers that assert (Check) or scan (server/detect): recorded fixtures, file trees and
 * scans of recorded machines (see test.h). Kept apart from test_util.c, which `make accuracy`
 * links without Check or the server.
 */
#include "tests/test.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "server/detect/detect.h"

char *t_fixture(const char *name, size_t *len)
{
	char *dir = t_path(t_data_dir(), "fixtures");
	char *path = t_path(dir, name);
	char *buf = t_read_file(path, len);

	ck_assert_msg(buf != NULL, "missing fixture %s", path);
	free(dir);
	free(path);
	return buf;
}

void t_put(const char *root, const char *rel, const char *content)
{
	char *path = t_path(root, rel);

	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	ck_assert_int_eq(t_write_file(path, content, strlen(content)), 0);
	free(path);
}

struct hw_snapshot *t_scan(const char *root)
{
	struct hw_snapshot *s = malloc(sizeof(*s));
	struct rf_detect_opts o = {.root = root};

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	return s;
}
