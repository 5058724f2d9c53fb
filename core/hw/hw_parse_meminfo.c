/*
 * /proc/meminfo parser. Values are "<n> kB"; the kernel's kB is KiB. MemAvailable exists since
 * Linux 3.14; before it, free + buffers + page cache is the usual approximation.
 */
#include <stdint.h>

#include "core/err.h"
#include "core/hw/hw_parse.h"
#include "core/numparse.h"
#include "core/text.h"

/* Largest value accepted, in kB: 2^50 kB (1 ZiB) is far above any machine and cannot overflow
 * the multiplication by 1024 in int64. */
#define MEMINFO_MAX_KB (UINT64_C(1) << 50)

static int meminfo_value(struct rf_span val, int64_t *out)
{
	uint64_t kb;
	size_t n = 0;

	while (n < val.len && val.p[n] >= '0' && val.p[n] <= '9')
		n++;
	if (rf_parse_u64(val.p, n, MEMINFO_MAX_KB, &kb) < 0)
		return RF_E_PARSE;
	*out = (int64_t)kb * 1024;
	return 0;
}

int hw_parse_meminfo(const char *text, size_t len, struct hw_memory *out)
{
	struct rf_lines it;
	struct rf_span line, key, val;
	int64_t total = -1, avail = -1, free_b = -1, buffers = -1, cached = -1;

	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		int64_t *dst = NULL;
		if (!rf_split_kv(line, &key, &val))
			continue;
		if (rf_span_eq(key, "MemTotal"))
			dst = &total;
		else if (rf_span_eq(key, "MemAvailable"))
			dst = &avail;
		else if (rf_span_eq(key, "MemFree"))
			dst = &free_b;
		else if (rf_span_eq(key, "Buffers"))
			dst = &buffers;
		else if (rf_span_eq(key, "Cached"))
			dst = &cached;
		if (dst && *dst < 0)
			meminfo_value(val, dst);
	}
	if (total < 0)
		return RF_E_PARSE;
	if (avail < 0 && free_b >= 0)
		avail = free_b + (buffers > 0 ? buffers : 0) + (cached > 0 ? cached : 0);
	if (avail > total)
		avail = total;
	out->total_bytes = total;
	out->available_bytes = avail >= 0 ? avail : HW_UNKNOWN;
	return 0;
}
