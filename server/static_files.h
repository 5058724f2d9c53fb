/*
 * --static-dir: a built single-page web app (ModelForge's React build) served from files on
 * the daemon's own origin, so its relative /api calls reach rigfit without CORS. Paths under
 * /api/ are never files: they stay the API, with JSON 404s.
 */
#ifndef RIGFIT_SERVER_STATIC_FILES_H
#define RIGFIT_SERVER_STATIC_FILES_H

#include "api/api.h"

/* The largest file served. */
#define RF_STATIC_MAX_BYTES (32u << 20)

/* Answers GET path from dir into out: the file when it exists under dir (no segment starting
 * with '.', no way out of dir through a link), index.html for a path whose last segment has
 * no extension (a client-side route), else a 404 envelope. Returns 0 with out set, or -1 when
 * path is the API's (/api, /api/...), for the caller to route. */
int rf_static_reply(const char *dir, const char *path, struct api_reply *out /* OUT */);

#endif
