/*
 * GGUF files named by a request, read only from inside the models directories (see
 * model_files.h). The path and every directory are canonicalised with realpath(), so symlinks
 * and ".." are judged by where they lead, and the file's real path must start with a
 * directory's real path followed by '/'. The file is then opened one component at a time from
 * the directory with O_NOFOLLOW, so a directory or file swapped for a symlink after the check
 * makes the open fail instead of leading outside; the opened file must be the regular file
 * that was checked (same device and inode). A path that does not resolve is judged by its
 * nearest existing ancestor: inside a models dir it is NOT_FOUND, outside it is FORBIDDEN, so
 * clients cannot probe which paths exist elsewhere on the machine.
 *
 * Only the header is read: HEADER_FIRST_READ bytes first, then twice as much each time the
 * header goes on past what was read (gguf_parse_prefix says so), up to the cap. A request
 * costs what the model's header costs, not the cap.
 */
#include "server/models/model_files.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "core/fit/gguf.h"

static void set_msg(char *msg, size_t msglen, const char *text)
{
	if (msg && msglen > 0)
		snprintf(msg, msglen, "%s", text);
}

/* set_msg with a format: the kind of file ("gguf", "model") in place of %s. */
__attribute__((format(printf, 3, 4))) static void set_msgf(char *msg, size_t msglen,
							   const char *fmt, ...)
{
	va_list ap;

	if (!msg || msglen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, msglen, fmt, ap);
	va_end(ap);
}

/* Returns 1 when the canonical path real lies inside the canonical directory dir: dir followed
 * by '/' starts it (or, with allow_equal, real is dir itself). */
static int path_inside(const char *real, const char *dir, int allow_equal)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return real[0] == '/' && (allow_equal || real[1] != '\0');
	if (strncmp(real, dir, n) != 0)
		return 0;
	return real[n] == '/' || (allow_equal && real[n] == '\0');
}

/* Returns 1 and the malloc'd real path of the first models dir that holds real in *dreal
 * (when dreal is not NULL), or 0. A dir that does not resolve holds nothing. */
static int find_dir(const char *const *dirs, int n_dirs, const char *real, int allow_equal,
		    char **dreal /* OUT */)
{
	for (int i = 0; i < n_dirs; i++) {
		char *d;

		if (!dirs[i] || !dirs[i][0])
			continue;
		d = realpath(dirs[i], NULL);
		if (!d)
			continue;
		if (path_inside(real, d, allow_equal)) {
			if (dreal)
				*dreal = d;
			else
				free(d);
			return 1;
		}
		free(d);
	}
	return 0;
}

/* The answer for a path that realpath() could not resolve (its errno in err): FORBIDDEN unless
 * the nearest ancestor that does resolve is inside a models dir, then by err. */
static int unresolved(const char *const *dirs, int n_dirs, const char *path, int err,
		      const char *noun, char *msg, size_t msglen)
{
	char *tmp = strdup(path);
	int inside = 0;

	if (!tmp) {
		set_msg(msg, msglen, "out of memory");
		return RF_E_NOMEM;
	}
	for (;;) {
		char *slash = strrchr(tmp, '/'), *anc;

		if (!slash)
			break;
		if (slash == tmp)
			slash[1] = '\0';
		else
			*slash = '\0';
		anc = realpath(tmp, NULL);
		if (anc) {
			inside = find_dir(dirs, n_dirs, anc, 1, NULL);
			free(anc);
			break;
		}
		if (tmp[1] == '\0')
			break;
	}
	free(tmp);
	if (!inside) {
		set_msgf(msg, msglen, "the %s file is not inside a models directory", noun);
		return RF_E_FORBIDDEN;
	}
	switch (err) {
	case ENOENT:
	case ENOTDIR:
		set_msgf(msg, msglen, "the %s file does not exist", noun);
		return RF_E_NOT_FOUND;
	case ELOOP:
	case ENAMETOOLONG:
		set_msgf(msg, msglen, "the %s path has too many symbolic links or is too long",
			 noun);
		return RF_E_INVALID_VALUE;
	case ENOMEM:
		set_msg(msg, msglen, "out of memory");
		return RF_E_NOMEM;
	case EACCES:
		set_msgf(msg, msglen, "the %s file cannot be read: permission denied", noun);
		return RF_E_IO;
	default:
		set_msgf(msg, msglen, "the %s file cannot be read", noun);
		return RF_E_IO;
	}
}

/* Opens real (canonical, inside the canonical dir dreal) from dreal one component at a time,
 * never following a symlink, for reading. Returns 0 and the descriptor in *fd, or a negative
 * rf_err with msg set. */
static int open_under(const char *dreal, const char *real, const char *noun, int *fd /* OUT */,
		      char *msg, size_t msglen)
{
	size_t n = strlen(dreal);
	const char *rel = real + (n == 1 ? 1 : n + 1);
	char *parts = strdup(rel), *comp, *slash;
	int dfd = -1, rc = 0;

	if (!parts) {
		set_msg(msg, msglen, "out of memory");
		return RF_E_NOMEM;
	}
	dfd = open(dreal, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		goto fail;
	comp = parts;
	while ((slash = strchr(comp, '/')) != NULL) {
		int nfd;

		*slash = '\0';
		nfd = openat(dfd, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (nfd < 0)
			goto fail;
		close(dfd);
		dfd = nfd;
		comp = slash + 1;
	}
	/* O_NONBLOCK: should a FIFO have been swapped in after the check, the open must not
	 * wait for a writer. */
	*fd = openat(dfd, comp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (*fd < 0)
		goto fail;
	goto out;
fail:
	switch (errno) {
	case ENOENT:
		set_msgf(msg, msglen, "the %s file does not exist", noun);
		rc = RF_E_NOT_FOUND;
		break;
	case ELOOP:
	case ENOTDIR:
		/* A component became a symlink or a non-directory after it was checked. */
		set_msgf(msg, msglen, "the %s file is not inside a models directory", noun);
		rc = RF_E_FORBIDDEN;
		break;
	case EACCES:
	case EPERM:
		set_msgf(msg, msglen, "the %s file cannot be read: permission denied", noun);
		rc = RF_E_IO;
		break;
	default:
		set_msgf(msg, msglen, "the %s file cannot be opened", noun);
		rc = RF_E_IO;
		break;
	}
out:
	if (dfd >= 0)
		close(dfd);
	free(parts);
	return rc;
}

int rf_model_file_open(const char *const *dirs, int n_dirs, const char *path, const char *noun,
		       int *fd, uint64_t *size, char *msg, size_t msglen)
{
	char *real = NULL, *dreal = NULL;
	struct stat st, fst;
	int rc;

	*fd = -1;
	set_msg(msg, msglen, "");
	if (!dirs || n_dirs <= 0) {
		set_msgf(msg, msglen, "reading %s files is off: no models directory is configured",
			 noun);
		rc = RF_E_FORBIDDEN;
		goto out;
	}
	if (!path || !path[0]) {
		set_msgf(msg, msglen, "the %s path is empty", noun);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	if (path[0] != '/') {
		set_msgf(msg, msglen, "the %s path must be absolute", noun);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	if (strnlen(path, PATH_MAX) >= PATH_MAX) {
		set_msgf(msg, msglen, "the %s path is too long", noun);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	real = realpath(path, NULL);
	if (!real) {
		rc = unresolved(dirs, n_dirs, path, errno, noun, msg, msglen);
		goto out;
	}
	if (!find_dir(dirs, n_dirs, real, 0, &dreal)) {
		set_msgf(msg, msglen, "the %s file is not inside a models directory", noun);
		rc = RF_E_FORBIDDEN;
		goto out;
	}
	/* Judged before opening, so that opening never touches a FIFO or a device. */
	if (stat(real, &st) != 0) {
		rc = errno == ENOENT ? RF_E_NOT_FOUND : RF_E_IO;
		set_msgf(msg, msglen,
			 rc == RF_E_NOT_FOUND ? "the %s file does not exist" :
						"the %s file cannot be read",
			 noun);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		set_msgf(msg, msglen, "the %s path does not name a regular file", noun);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	rc = open_under(dreal, real, noun, fd, msg, msglen);
	if (rc < 0)
		goto out;
	if (fstat(*fd, &fst) != 0) {
		set_msgf(msg, msglen, "the %s file cannot be read", noun);
		rc = RF_E_IO;
		goto out;
	}
	/* Still inside (the walk above followed no symlink), but replaced since the check. */
	if (!S_ISREG(fst.st_mode) || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino) {
		set_msgf(msg, msglen, "the %s file changed while it was opened; try again", noun);
		rc = RF_E_IO;
		goto out;
	}
	*size = (uint64_t)fst.st_size;
	rc = 0;
out:
	if (rc < 0 && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	free(real);
	free(dreal);
	return rc;
}

long rf_model_file_pread(int fd, char *b, size_t want, uint64_t off)
{
	size_t got = 0;

	while (got < want) {
		ssize_t r = pread(fd, b + got, want - got, (off_t)(off + got));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break; /* truncated since fstat: what there is */
		got += (size_t)r;
	}
	return (long)got;
}

#define HEADER_FIRST_READ ((size_t)256 << 10)

/* Reads the GGUF header of fd (size bytes) into *buf (*len bytes): see the top of the file.
 * Returns 0, or RF_E_NOMEM or RF_E_IO with msg set. */
static int read_header(int fd, uint64_t size, size_t cap, char **buf, size_t *len, char *msg,
		       size_t msglen)
{
	size_t limit = size < cap ? (size_t)size : cap;
	size_t want = limit < HEADER_FIRST_READ ? limit : HEADER_FIRST_READ, have = 0;
	char *b = NULL;

	for (;;) {
		char *nb = realloc(b, want ? want : 1);
		struct gguf_file *f = NULL;
		bool more = false;
		size_t ask = want - have;
		long got;

		if (!nb) {
			free(b);
			set_msg(msg, msglen, "out of memory");
			return RF_E_NOMEM;
		}
		b = nb;
		got = rf_model_file_pread(fd, b + have, ask, have);
		if (got < 0) {
			free(b);
			set_msg(msg, msglen, "reading the gguf file failed");
			return RF_E_IO;
		}
		have += (size_t)got;
		if ((size_t)got < ask || have >= limit)
			break; /* the end of the file, or the cap */
		if (gguf_parse_prefix(b, have, size, &f, &more, NULL, 0) == 0 || !more) {
			gguf_free(f);
			break;
		}
		want = want > limit / 2 ? limit : want * 2;
	}
	*buf = b;
	*len = have;
	return 0;
}

int rf_model_file_read(const char *const *dirs, int n_dirs, const char *path, size_t cap,
		       char **buf, size_t *len, uint64_t *file_size, char *msg, size_t msglen)
{
	char *b = NULL;
	uint64_t size = 0;
	size_t got = 0;
	int fd = -1, rc;

	rc = rf_model_file_open(dirs, n_dirs, path, "gguf", &fd, &size, msg, msglen);
	if (rc < 0)
		goto out;
	rc = read_header(fd, size, cap, &b, &got, msg, msglen);
	if (rc < 0)
		goto out;
	if (got < 4 || memcmp(b, "GGUF", 4) != 0) {
		set_msg(msg, msglen, "not a GGUF file");
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	*buf = b;
	b = NULL;
	*len = got;
	*file_size = size;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(b);
	return rc;
}
