/*
 * Capped file reads under a root directory (see readfile.h). /proc and /sys files report a
 * size of 0 or 4096 whatever they hold, so the file is read until EOF, not by its stat size.
 */
#include "server/detect/readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"

int rf_read_under_root(const char *root, const char *path, size_t cap, char **buf, size_t *len)
{
	char full[4352];
	size_t used = 0, size = 4096;
	char *b;
	int fd, n;

	n = snprintf(full, sizeof(full), "%s%s", strcmp(root, "/") == 0 ? "" : root, path);
	if (n < 0 || (size_t)n >= sizeof(full))
		return RF_E_TOO_LARGE;
	fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? RF_E_NOT_FOUND : RF_E_IO;
	b = malloc(size + 1);
	if (!b) {
		close(fd);
		return RF_E_NOMEM;
	}
	for (;;) {
		ssize_t got;
		if (used == size) {
			char *nb;
			if (size >= cap) {
				free(b);
				close(fd);
				return RF_E_TOO_LARGE;
			}
			size = size * 2 > cap ? cap : size * 2;
			nb = realloc(b, size + 1);
			if (!nb) {
				free(b);
				close(fd);
				return RF_E_NOMEM;
			}
			b = nb;
		}
		got = read(fd, b + used, size - used);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			free(b);
			close(fd);
			return RF_E_IO;
		}
		if (got == 0)
			break;
		used += (size_t)got;
	}
	close(fd);
	b[used] = '\0';
	*buf = b;
	*len = used;
	return 0;
}
