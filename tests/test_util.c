/*
 * Helpers shared by the Check suites (see test.h).
 */
#include "tests/test.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char *t_src_dir(void)
{
	const char *d = getenv("RIGFIT_SRC_DIR");
	return d && *d ? d : ".";
}

const char *t_data_dir(void)
{
	const char *d = getenv("RIGFIT_TEST_DATA");
	return d && *d ? d : "tests/data";
}

const char *t_bin(void)
{
	const char *b = getenv("RIGFIT_BIN");
	return b && *b ? b : "build/asan/rigfit";
}

/* Under $TMPDIR when set (make test points it at a folder it removes after the run), else
 * /tmp. */
char *t_mkdtemp(void)
{
	const char *base = getenv("TMPDIR");
	char tmpl[512];
	char *d;

	if (!base || !*base || strlen(base) > sizeof(tmpl) - 32)
		base = "/tmp";
	snprintf(tmpl, sizeof(tmpl), "%s/rigfit-test-XXXXXX", base);
	d = mkdtemp(tmpl);
	return d ? strdup(d) : NULL;
}

/* Removes only what t_mkdtemp made (a "rigfit-test-" folder), never a path given by mistake. */
void t_rmtree(const char *path)
{
	pid_t pid;
	int status;

	if (!path || !strstr(path, "/rigfit-test-") || strstr(path, ".."))
		return;
	pid = fork();
	if (pid == 0) {
		execlp("rm", "rm", "-rf", path, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
}

char *t_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		size_t got;
		if (n + 4096 + 1 > cap) {
			char *nb;
			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n - 1, f);
		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int t_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (!f)
		return -1;
	if (fwrite(data, 1, len, f) != len)
		rc = -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

char *t_path(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (p)
		snprintf(p, n, "%s/%s", a, b);
	return p;
}

char *t_read_src(const char *rel, size_t *len)
{
	char *path = t_path(t_src_dir(), rel);
	char *text = t_read_file(path, len);

	ck_assert_msg(text != NULL, "cannot read %s", path);
	free(path);
	return text;
}
