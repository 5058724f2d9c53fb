/*
 * The hardware fingerprint (see hw_fingerprint.h): FNV-1a (64 bit) over a canonical text of
 * the machine's configuration. The text is never stored; changing what it covers changes
 * every fingerprint, so do that only with a migration of recorded benchmarks in mind.
 */
#include "core/hw/hw_fingerprint.h"

#include <inttypes.h>
#include <stdio.h>

#include "core/err.h"

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull
#define GIB (1024.0 * 1024.0 * 1024.0)

static uint64_t fnv_str(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= FNV_PRIME;
	}
	/* A separator, so that ("ab","c") and ("a","bc") differ. */
	h ^= 0x1f;
	h *= FNV_PRIME;
	return h;
}

static uint64_t fnv_int(uint64_t h, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	return fnv_str(h, buf);
}

/* Whole GiB, rounded to nearest; -1 stays unknown. */
static int64_t round_gib(int64_t bytes)
{
	if (bytes < 0)
		return -1;
	return (int64_t)((double)bytes / GIB + 0.5);
}

int hw_fingerprint(const struct hw_snapshot *s, char *out, size_t outlen)
{
	uint64_t h = FNV_OFFSET;

	if (outlen < HW_FINGERPRINT_LEN + 1) {
		if (outlen > 0)
			out[0] = '\0';
		return RF_E_TOO_LARGE;
	}
	h = fnv_str(h, "rigfit-fingerprint-1");
	h = fnv_str(h, s->platform);
	h = fnv_str(h, s->cpu.model);
	h = fnv_int(h, s->cpu.physical_cores);
	h = fnv_int(h, round_gib(s->memory.total_bytes));
	h = fnv_int(h, s->n_gpus);
	for (int i = 0; i < s->n_gpus && i < HW_MAX_GPUS; i++) {
		h = fnv_str(h, s->gpus[i].vendor);
		h = fnv_str(h, s->gpus[i].name);
		h = fnv_int(h, round_gib(s->gpus[i].memory_total_bytes));
	}
	snprintf(out, outlen, "hw-%016" PRIx64, h);
	return 0;
}
