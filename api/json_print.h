/*
 * A faster cJSON_PrintUnformatted: the same bytes for every tree cJSON can print (numbers as
 * cJSON 1.7.15 prints them: %1.15g, or %1.17g when %1.15g does not read back within one
 * DBL_EPSILON; strings escaped as cJSON escapes them), written into one
 * growing buffer with integers formatted by hand, fractions between 1e-4 and 1e15 rounded and
 * read back in exact 128-bit integer arithmetic, and only the rest printed with printf and read
 * back with strtod. Replies with dozens of numbers spent more time in cJSON's printf/sscanf
 * pairs than in the estimate.
 */
#ifndef RIGFIT_API_JSON_PRINT_H
#define RIGFIT_API_JSON_PRINT_H

#include <cjson/cJSON.h>

/* Returns item printed without whitespace, as cJSON_PrintUnformatted prints it, in a malloc'd
 * string (free with cJSON_free or free: cJSON's default hooks), or NULL where
 * cJSON_PrintUnformatted returns NULL (what this printer cannot handle is handed to it). */
char *api_json_print(const cJSON *item);

struct api_reply; /* api/api.h */

/* Sets out to o printed (api_json_print) as the body with status, and frees o (NULL: out of
 * memory). Returns 0, or the out-of-memory envelope's code when o or its printing is NULL. */
int api_reply_cjson(struct api_reply *out, int status, cJSON *o);

#endif
