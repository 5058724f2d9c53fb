/*
 * The allocation wrappers behind alloc_fault.h. The linker sends every malloc, calloc,
 * realloc, strdup and strndup of the objects linked into the unit test binary to the
 * __wrap_ functions here; __real_ reaches the C library (or the sanitizer's or valgrind's
 * replacement of it). Only the thread that armed the injector is counted, so a helper thread
 * of a library cannot shift the count.
 */
#include "tests/fault/alloc_fault.h"

#include "api/json_alloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t nmemb, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t nmemb, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static struct {
	bool armed;
	bool fired;
	pthread_t thread;
	size_t count;
	size_t fail_nth;
} af;

/* Counts one allocation of the armed thread; returns true when it is the one to fail. */
static bool af_should_fail(void)
{
	if (!af.armed || !pthread_equal(af.thread, pthread_self()))
		return false;
	af.count++;
	if (af.fail_nth == 0 || af.count != af.fail_nth)
		return false;
	af.fired = true;
	return true;
}

void *__wrap_malloc(size_t n)
{
	return af_should_fail() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t nmemb, size_t n)
{
	return af_should_fail() ? NULL : __real_calloc(nmemb, n);
}

void *__wrap_realloc(void *p, size_t n)
{
	/* A failed realloc leaves p allocated, as the C library does. */
	return af_should_fail() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return af_should_fail() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return af_should_fail() ? NULL : __real_strndup(s, n);
}

void af_arm(size_t fail_nth)
{
	/* The product's cJSON allocator calls malloc from api/json_alloc.c, which is linked
	 * with the wrappers: cJSON's allocations are counted (and fail) with the others. */
	api_json_init();
	af.thread = pthread_self();
	af.count = 0;
	af.fail_nth = fail_nth;
	af.fired = false;
	af.armed = true;
}

size_t af_disarm(void)
{
	af.armed = false;
	return af.count;
}

bool af_fired(void)
{
	return af.fired;
}
