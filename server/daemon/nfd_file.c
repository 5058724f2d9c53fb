/*
 * The feature file writer (see nfd_file.h).
 */
#include "server/daemon/nfd_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"

int rf_nfd_write(const char *dir, const char *text)
{
	char path[4200], tmp[4220];
	size_t len = strlen(text), off = 0;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, RF_NFD_FILE_NAME) >= (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, RF_NFD_FILE_NAME) >= (int)sizeof(tmp))
		return RF_E_TOO_LARGE;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return RF_E_IO;
	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);
		if (w <= 0) {
			close(fd);
			unlink(tmp);
			return RF_E_IO;
		}
		off += (size_t)w;
	}
	if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return RF_E_IO;
	}
	return 0;
}
