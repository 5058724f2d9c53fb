/*
 * The embedded openapi.yaml as a cJSON tree, so that what is built from the spec (the MCP
 * tools' input and output schemas, api/mcp_tools.c) comes from the one document clients read.
 */
#ifndef RIGFIT_SERVER_OPENAPI_JSON_H
#define RIGFIT_SERVER_OPENAPI_JSON_H

#include <stddef.h>

/* Parses the YAML document text[0..len) into a cJSON tree (returned as void * so that callers
 * need not include cJSON). Plain scalars follow YAML's core schema (null, booleans, integers,
 * floats); quoted and block scalars are strings; anchors and aliases are refused. Returns the
 * tree (free with cJSON_Delete), or NULL with one line in err. */
void *rf_yaml_to_json(const char *text, size_t len, char *err, size_t errlen);

/* Returns the embedded spec as a tree (cJSON_Delete frees it), or NULL after logging why. */
void *rf_openapi_json(void);

/* Frees a tree of rf_yaml_to_json or rf_openapi_json. NULL is a no-op. */
void rf_openapi_json_free(void *tree);

#endif
