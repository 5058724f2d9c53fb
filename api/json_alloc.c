/*
 * The counting cJSON allocator and the request's arena (see json_alloc.h). With a malloc of
 * its own, cJSON grows printed buffers by allocate-copy-free instead of realloc; printing
 * doubles the buffer, so the copies stay linear in the output.
 */
#include "api/json_alloc.h"

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#if defined(__SANITIZE_ADDRESS__)
/* AddressSanitizer's interface (sanitizer/asan_interface.h declares the same). */
void __asan_poison_memory_region(void const volatile *addr, size_t size);
void __asan_unpoison_memory_region(void const volatile *addr, size_t size);
#define ARENA_POISON(p, n) __asan_poison_memory_region(p, n)
#define ARENA_UNPOISON(p, n) __asan_unpoison_memory_region(p, n)
#else
#define ARENA_POISON(p, n) ((void)(p), (void)(n))
#define ARENA_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static _Thread_local unsigned long api_json_failures;

/* The calling thread's arena (api_json_arena_begin): one block, handed out front to back and
 * taken back whole at the end of the scope. What does not fit comes from malloc, and the block
 * doubles for the next scope (up to ARENA_MAX). Between scopes it is poisoned in the sanitizer
 * build, so a tree kept past its scope is caught at its first use. */
#define ARENA_FIRST ((size_t)32 * 1024)
#define ARENA_MAX ((size_t)512 * 1024)
static _Thread_local struct {
	char *base;
	size_t cap, used, want;
	int depth;
	bool spilled; /* an allocation of this scope did not fit */
} arena;

static tss_t arena_key;
static bool arena_key_ok;
static once_flag arena_once = ONCE_FLAG_INIT;

/* At a thread's exit: its block goes with it. */
static void arena_thread_exit(void *unused)
{
	(void)unused;
	api_json_arena_free();
}

static void arena_key_create(void)
{
	arena_key_ok = tss_create(&arena_key, arena_thread_exit) == thrd_success;
}

bool api_json_arena_owns(const void *p)
{
	const char *c = p;

	return arena.base && c >= arena.base && c < arena.base + arena.cap;
}

char *api_json_owned(char *s)
{
	return s && api_json_arena_owns(s) ? strdup(s) : s;
}

void api_json_arena_begin(void)
{
	if (arena.depth++ > 0)
		return;
	arena.used = 0;
	arena.spilled = false;
	if (!arena.want)
		arena.want = ARENA_FIRST;
	if (arena.base && arena.cap >= arena.want)
		return;
	free(arena.base);
	arena.base = malloc(arena.want);
	arena.cap = arena.base ? arena.want : 0;
	if (!arena.base)
		return; /* every allocation of this scope comes from malloc */
	ARENA_POISON(arena.base, arena.cap);
	call_once(&arena_once, arena_key_create);
	if (arena_key_ok)
		(void)tss_set(arena_key, &arena);
}

void api_json_arena_end(void)
{
	if (arena.depth <= 0 || --arena.depth > 0)
		return;
	if (arena.base)
		ARENA_POISON(arena.base, arena.cap);
	arena.used = 0;
	if (arena.spilled && arena.want < ARENA_MAX)
		arena.want *= 2;
}

void api_json_arena_free(void)
{
	if (arena.base)
		ARENA_UNPOISON(arena.base, arena.cap);
	free(arena.base);
	arena.base = NULL;
	arena.cap = arena.used = arena.want = 0;
}

static void *api_json_malloc(size_t n)
{
	void *p;

	if (arena.depth > 0 && arena.base) {
		size_t need = (n + 15) & ~(size_t)15;
		if (need >= n && need <= arena.cap - arena.used) {
			p = arena.base + arena.used;
			arena.used += need;
			ARENA_UNPOISON(p, n);
			return p;
		}
		arena.spilled = true;
	}
	p = malloc(n);
	if (!p)
		api_json_failures++;
	return p;
}

/* What the arena handed out is taken back with the arena. */
static void api_json_free(void *p)
{
	if (!api_json_arena_owns(p))
		free(p);
}

void api_json_init(void)
{
	cJSON_Hooks hooks = {.malloc_fn = api_json_malloc, .free_fn = api_json_free};

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
