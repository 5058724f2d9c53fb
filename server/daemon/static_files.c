/*
 * Files of --static-dir (see static_files.h). A file is opened, checked and handed to the
 * transport as a descriptor, which streams it (sendfile) with the same headers and metrics as
 * every route: nothing of its contents is held in memory, however many clients read it slowly.
 */
#include "server/daemon/static_files.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"

static const struct {
	const char *ext, *type;
} static_types[] = {
	{".html", "text/html; charset=utf-8"},
	{".js", "text/javascript; charset=utf-8"},
	{".mjs", "text/javascript; charset=utf-8"},
	{".css", "text/css; charset=utf-8"},
	{".json", "application/json"},
	{".map", "application/json"},
	{".svg", "image/svg+xml"},
	{".png", "image/png"},
	{".jpg", "image/jpeg"},
	{".ico", "image/x-icon"},
	{".webp", "image/webp"},
	{".woff2", "font/woff2"},
	{".txt", "text/plain; charset=utf-8"},
};

static const char *static_type(const char *name)
{
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < sizeof(static_types) / sizeof(static_types[0]); i++)
		if (strcmp(dot, static_types[i].ext) == 0)
			return static_types[i].type;
	return "application/octet-stream";
}

/* Returns true when rel (no leading '/') is a plain relative path: no empty, "." or hidden
 * segment. */
static bool plain_path(const char *rel)
{
	for (const char *seg = rel; *seg;) {
		size_t n = strcspn(seg, "/");
		if (n == 0 || seg[0] == '.')
			return false;
		seg += n + (seg[n] == '/');
	}
	return true;
}

enum rf_static_plan rf_static_plan(const char *path, const char **rel)
{
	const char *r = path[0] == '/' ? path + 1 : path;
	const char *last = strrchr(path, '/');
	bool asset = *r && last && strchr(last, '.');

	*rel = r;
	if (strcmp(path, "/api") == 0 || strncmp(path, "/api/", 5) == 0)
		return RF_STATIC_API;
	if (*r && plain_path(r))
		return asset ? RF_STATIC_FILE_OR_404 : RF_STATIC_FILE_OR_APP;
	return asset ? RF_STATIC_NOT_FOUND : RF_STATIC_APP;
}

/* Opens dir/rel for streaming into *file when it is a regular file inside dir. The open never
 * blocks (O_NONBLOCK: a FIFO would otherwise wait for a writer) and never follows a link made
 * after the check (O_NOFOLLOW); the descriptor is put back into blocking mode for sendfile.
 * Returns 0, RF_E_NOT_FOUND (missing, a directory, or a link out of dir) or RF_E_FORBIDDEN
 * (a FIFO, a device or a socket); *file is untouched on error. */
static int open_inside(const char *dir, const char *rel, struct rf_static_file *file)
{
	char full[PATH_MAX], real[PATH_MAX], root[PATH_MAX];
	struct stat st;
	size_t rootlen;
	int fd, flags;

	if (snprintf(full, sizeof(full), "%s/%s", dir, rel) >= (int)sizeof(full) ||
	    !realpath(dir, root) || !realpath(full, real))
		return RF_E_NOT_FOUND;
	rootlen = strlen(root);
	if (strncmp(real, root, rootlen) != 0 || (real[rootlen] != '/' && rootlen > 1))
		return RF_E_NOT_FOUND; /* a link out of the directory */
	fd = open(real, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return RF_E_NOT_FOUND;
	if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
		close(fd);
		return RF_E_NOT_FOUND;
	}
	flags = fcntl(fd, F_GETFL);
	if (!S_ISREG(st.st_mode) || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0) {
		close(fd);
		return RF_E_FORBIDDEN;
	}
	file->fd = fd;
	file->size = (uint64_t)st.st_size;
	file->type = static_type(real);
	return 0;
}

int rf_static_reply(const char *dir, const char *path, struct rf_static_file *file,
		    struct api_reply *out)
{
	const char *rel;
	enum rf_static_plan plan = rf_static_plan(path, &rel);
	int rc;

	file->fd = -1;
	if (plan == RF_STATIC_API)
		return -1;
	if (plan == RF_STATIC_FILE_OR_APP || plan == RF_STATIC_FILE_OR_404) {
		rc = open_inside(dir, rel, file);
		if (rc == 0)
			return 0;
		if (rc == RF_E_FORBIDDEN) {
			api_error(out, rc, NULL, "%.200s is not a regular file", path);
			return 0;
		}
	}
	/* A client-side route (/finetune/settings) gets the app, which routes it itself; a
	 * missing asset (/static/x.js) is a 404, not HTML where a script was expected. */
	if (plan == RF_STATIC_FILE_OR_404 || plan == RF_STATIC_NOT_FOUND) {
		api_error(out, RF_E_NOT_FOUND, NULL, "no such file: %.200s", path);
		return 0;
	}
	rc = open_inside(dir, "index.html", file);
	if (rc < 0)
		api_error(out, rc, NULL,
			  "--static-dir %.200s has no index.html that is a regular file", dir);
	return 0;
}
