/*
 * Allocation fault injection for the unit tests (the curl/SQLite "torture" idea). The unit
 * test binaries are linked with -Wl,--wrap=malloc,calloc,realloc,strdup,strndup (see the
 * Makefile), so every allocation the code under test makes goes through the wrappers in
 * alloc_fault.c. They pass straight through until a test arms them: then they count the
 * allocations of the arming thread and can make exactly one of them, the Nth, return NULL.
 * cJSON allocates inside libcjson.so, which --wrap cannot reach; arming installs the product's
 * cJSON allocator (api/json_alloc.h), whose malloc is wrapped, so they are counted too.
 *
 * The release binary and the daemon binaries are not linked with the wrappers.
 */
#ifndef RIGFIT_TESTS_FAULT_ALLOC_FAULT_H
#define RIGFIT_TESTS_FAULT_ALLOC_FAULT_H

#include <stdbool.h>
#include <stddef.h>

/* Starts counting the calling thread's allocations from zero; when fail_nth > 0, the
 * fail_nth-th of them (1-based) returns NULL, the others succeed. fail_nth == 0 only counts. */
void af_arm(size_t fail_nth);

/* Stops counting and failing. Returns the number of
 * allocations counted since af_arm (the failed one included). */
size_t af_disarm(void);

/* Returns whether the armed failure happened (the count reached fail_nth). */
bool af_fired(void);

#endif
