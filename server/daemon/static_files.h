/*
 * --static-dir: a built single-page web app (ModelForge's React build) served from files on
 * the daemon's own origin, so its relative /api calls reach rigfit without CORS. Paths under
 * /api/ are never files: they stay the API, with JSON 404s.
 */
#ifndef RIGFIT_SERVER_DAEMON_STATIC_FILES_H
#define RIGFIT_SERVER_DAEMON_STATIC_FILES_H

#include <stdint.h>

#include "api/api.h"

/* A file to serve: an open, blocking descriptor of a regular file. */
struct rf_static_file {
	int fd; /* -1: none; else the caller's, to close (MHD closes it with its response) */
	uint64_t size;
	const char *type; /* the Content-Type, static */
};

/* What GET path asks of --static-dir, decided from the path alone (no file is looked at). */
enum rf_static_plan {
	RF_STATIC_API,         /* /api or /api/...: the API's, never a file */
	RF_STATIC_FILE_OR_APP, /* rel may name a file; else the app (a client-side route) */
	RF_STATIC_FILE_OR_404, /* rel may name a file (an asset: its last segment has a '.') */
	RF_STATIC_APP,         /* the app: "/", or a route that cannot name a file */
	RF_STATIC_NOT_FOUND,   /* an asset's path that cannot name a file (a hidden segment) */
};

/* Decides path and points *rel into it: the part to look up under the directory (path without
 * its leading '/'). For the FILE plans rel is a plain relative path: not empty, no empty,
 * "." or ".." segment and no segment starting with '.', so it cannot leave the directory by
 * name (links are judged when the file is opened). Pure. */
enum rf_static_plan rf_static_plan(const char *path, const char **rel /* OUT */);

/* Answers GET path from dir: the file when it exists under dir (no segment starting with '.',
 * no way out of dir through a link), index.html for a path whose last segment has no extension
 * (a client-side route). Only regular files are opened, without blocking: a FIFO, a device or
 * a socket is a 403. Returns 0 with either file->fd >= 0 (a 200 to stream from it) or an error
 * envelope in out (404, 403), or -1 when path is the API's (/api, /api/...), for the caller to
 * route. */
int rf_static_reply(const char *dir, const char *path, struct rf_static_file *file /* OUT */,
		    struct api_reply *out /* OUT */);

#endif
