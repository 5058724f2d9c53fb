/*
 * Shared helpers for the Check suites: where the sources and fixtures are, temporary
 * directories, reading files. Every suite file defines `Suite *NAME_suite(void)` at the start
 * of a line; the Makefile collects them into the one test runner (tests/run_tests.c).
 */
#ifndef RIGFIT_TESTS_TEST_H
#define RIGFIT_TESTS_TEST_H

#include <check.h>
#include <stddef.h>

struct hw_snapshot;

/* Every suite's constructor, collected from tests/ by the Makefile. */
#define SUITE(fn) Suite *fn(void);
#include "suites.h"
#undef SUITE

/* The repository root (RIGFIT_SRC_DIR, default "."). */
const char *t_src_dir(void);
/* The measured rows and captured outputs the tests read: tests/data (RIGFIT_TEST_DATA),
 * copied into the repository with their sources (tests/data/README.md). */
const char *t_data_dir(void);
/* The daemon binary under test (RIGFIT_BIN, default build/asan/rigfit). */
const char *t_bin(void);
/* Makes a fresh temporary directory; returns its malloc'd path (remove with t_rmtree). */
char *t_mkdtemp(void);
/* Removes a directory tree (rm -rf); NULL is a no-op. */
void t_rmtree(const char *path);
/* Reads a whole file; returns a malloc'd NUL-terminated buffer (length in *len) or NULL. */
char *t_read_file(const char *path, size_t *len);
/* Writes len bytes to path; returns 0 or -1. */
int t_write_file(const char *path, const void *data, size_t len);
/* Writes a complete GGUF v3 file of a tiny llama model into a malloc'd buffer (length in
 * *len); from tests/core/fit/test_gguf.c. */
unsigned char *t_gguf_write_tiny(size_t *len);

/* Reads tests/data/fixtures/<name> (length in *len); fails the test when it is missing.
 * Returns a malloc'd NUL-terminated buffer. */
char *t_fixture(const char *name, size_t *len);

/* Writes content to root/rel, making the directories between; fails the test on error. */
void t_put(const char *root, const char *rel, const char *content);

/* Scans the recorded machine under root with the real probes (no commands, no NVML).
 * Returns a malloc'd snapshot (free it); fails the test when the scan fails. */
struct hw_snapshot *t_scan(const char *root);

/* Joins a and b with '/' into a malloc'd path. */
char *t_path(const char *a, const char *b);

/* Reads rel (a path under the repository root) whole; fails the test when it is missing.
 * Returns a malloc'd NUL-terminated buffer (length in *len). */
char *t_read_src(const char *rel, size_t *len);

#endif
