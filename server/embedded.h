/*
 * Files embedded in the binary at build time (tests/tools/gen_embed.sh writes the assembler
 * that holds them): the OpenAPI spec served at /openapi.yaml, the SQL migrations and the web
 * page served at /, so the daemon runs from any directory with no data file beside it.
 */
#ifndef RIGFIT_SERVER_EMBEDDED_H
#define RIGFIT_SERVER_EMBEDDED_H

#include <stddef.h>

#include "api/api.h"

struct rf_embedded_file {
	const char *name; /* "0001_init.sql" */
	const char *data; /* NUL-terminated */
	size_t len;
};

extern const char rf_embed_openapi[];
extern const size_t rf_embed_openapi_len;
/* Migrations in file-name order, ended by a row whose name is NULL. */
extern const struct rf_embedded_file rf_embed_migrations[];
/* The web page served at / (server/ui/), ended by a row whose name is NULL. */
extern const struct api_asset rf_embed_ui[];

#endif
