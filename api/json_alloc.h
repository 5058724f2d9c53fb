/*
 * cJSON's allocator, watched. cJSON returns NULL both for a syntax error and for a failed
 * allocation while parsing, and a client must not be told that its valid JSON is invalid
 * because the server ran out of memory. api_json_init() gives cJSON an allocator that counts,
 * per thread, the allocations that failed; a caller compares the count before and after a
 * parse to tell the two apart. Also the adds that free what they cannot add.
 */
#ifndef RIGFIT_API_JSON_ALLOC_H
#define RIGFIT_API_JSON_ALLOC_H

#include <cjson/cJSON.h>
#include <stdbool.h>

/* Installs the counting allocator as cJSON's (cJSON_InitHooks). Call once at start, before
 * other threads use cJSON. Without it api_json_failed_allocs() always returns 0. */
void api_json_init(void);

/* The arena of one request. Between api_json_arena_begin and api_json_arena_end (nested
 * pairs count as one), cJSON's allocations on the calling thread come from one block, and
 * freeing them is free: the block is taken back whole at the end. A reply tree of an estimate
 * is a few hundred small allocations, each a malloc and a free without it.
 *
 * Rules inside a scope: no cJSON item or string may outlive it (no cache of a tree built
 * there), and text printed by cJSON (cJSON_Print*) must not be passed to free() (cJSON_free
 * it); api_reply_json copies a body that lies in the arena. Without api_json_init, or when
 * the block cannot be allocated, everything comes from malloc as before. */
void api_json_arena_begin(void);
void api_json_arena_end(void);
/* Whether p lies in the calling thread's arena block. */
bool api_json_arena_owns(const void *p);
/* Text s that the caller may pass to free(): s itself, or a malloc'd copy when s lies in the
 * arena (NULL when that copy cannot be made). */
char *api_json_owned(char *s);
/* Frees the calling thread's block and forgets its size (a thread's exit does so too). */
void api_json_arena_free(void);

/* Returns how many of cJSON's allocations have failed on the calling thread so far. */
unsigned long api_json_failed_allocs(void);

/* Counts a failed allocation outside cJSON on the calling thread (api_error does so for
 * RF_E_NOMEM), so that a handler which folds a sub-answer's out-of-memory error into a larger
 * answer (a candidate that "does not fit") still has its reply replaced by a 503. */
void api_json_note_failed_alloc(void);

/* cJSON_AddItemToObject that deletes item when it cannot be added (a NULL object, or no
 * memory for the key), so that a failed add does not leak. Returns whether it was added. */
bool api_json_add(cJSON *object, const char *key, cJSON *item);

/* cJSON_AddItemToArray that deletes item when array is NULL. Returns whether it was added. */
bool api_json_append(cJSON *array, cJSON *item);

#endif
