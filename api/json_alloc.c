/*
 * The counting cJSON allocator (see json_alloc.h). With a malloc of its own, cJSON grows
 * printed buffers by allocate-copy-free instead of realloc; printing doubles the buffer, so
 * the copies stay linear in the output.
 */
#include "api/json_alloc.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

static _Thread_local unsigned long api_json_failures;

static void *api_json_malloc(size_t n)
{
	void *p = malloc(n);

	if (!p)
		api_json_failures++;
	return p;
}

void api_json_init(void)
{
	cJSON_Hooks hooks = {.malloc_fn = api_json_malloc, .free_fn = free};

	cJSON_InitHooks(&hooks);
}

unsigned long api_json_failed_allocs(void)
{
	return api_json_failures;
}

void api_json_note_failed_alloc(void)
{
	api_json_failures++;
}

bool api_json_add(cJSON *object, const char *key, cJSON *item)
{
	if (object && cJSON_AddItemToObject(object, key, item))
		return true;
	cJSON_Delete(item);
	return false;
}

bool api_json_append(cJSON *array, cJSON *item)
{
	if (array && cJSON_AddItemToArray(array, item))
		return true;
	cJSON_Delete(item);
	return false;
}
