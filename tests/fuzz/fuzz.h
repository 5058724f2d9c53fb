/*
 * Shared by the libFuzzer targets under tests/fuzz/ (one target per fuzz_*.c file, each with
 * its own LLVMFuzzerTestOneInput): where the sources are, splitting one input into the several
 * files a parser combines, and the static env of the request targets.
 *
 * The targets run from the repository root (make fuzz) or wherever RIGFIT_SRC_DIR points.
 */
#ifndef RIGFIT_TESTS_FUZZ_FUZZ_H
#define RIGFIT_TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "api/api.h"

/* Separates the parts of an input that stands for several files ("\n##\n"). */
#define FUZZ_SEP "\n##\n"
#define FUZZ_SEP_LEN 4

/* One part of a split input: a pointer into the input and its length. */
struct fuzz_part {
	const char *p;
	size_t len;
};

/* The machine the request targets' snapshot is scanned from, under tests/fixtures/machines. */
#define FUZZ_MACHINE "nvidia-rtx3060-laptop"

/* Returns the repository root (RIGFIT_SRC_DIR, default "."). */
const char *fuzz_src_dir(void);

/* Splits data[0..size) at each FUZZ_SEP into at most n parts (the last part keeps any further
 * separators). Parts not present are empty (p points at the end of data, len 0). Returns the
 * number of parts found (1..n). */
int fuzz_split(const uint8_t *data, size_t size, struct fuzz_part *parts /* OUT */, int n);

/* Returns a malloc'd NUL-terminated copy of data[0..size) (as a request body or a file read
 * is), or aborts when out of memory. The caller frees it. */
char *fuzz_strdup(const uint8_t *data, size_t size);

/* Returns the env the request handlers get in the daemon, built on the first call and kept
 * for the process: a snapshot scanned (with the real probes) from FUZZ_MACHINE, the device table,
 * model catalog and tiers loaded from profiles/ by server/profiles/profiles.c, no store and no
 * model file reader. Aborts when any of it cannot be built. */
const struct api_env *fuzz_env(void);

/* Aborts (a finding for libFuzzer) when reply is not what a request may get: a status outside
 * 200..599, a 500, or a JSON content type with a body that is not JSON. */
void fuzz_check_reply(const struct api_reply *reply);

#endif
