/*
 * A CPU cache's size as sysfs writes it (/sys/devices/system/cpu/cpuN/cache/indexM/size): a
 * number and a unit, "32K", "1024K", "491520K" (the kernel writes KiB); "M" and "G" are taken
 * too, as some captures and other kernels write them.
 */
#include <stdint.h>

#include "core/err.h"
#include "core/hw/hw_parse.h"
#include "core/numparse.h"

/* 2^40 KiB (1 PiB): far above any cache, and no overflow once multiplied by 2^30. */
#define CACHE_MAX_UNITS (UINT64_C(1) << 40)

int hw_parse_cache_size(const char *text, size_t len, int64_t *out)
{
	uint64_t v;
	size_t n = 0, end = len;
	int64_t unit = 1;

	while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == ' ' || text[end - 1] == '\t'))
		end--;
	while (n < end && text[n] >= '0' && text[n] <= '9')
		n++;
	if (n == 0 || rf_parse_u64(text, n, CACHE_MAX_UNITS, &v) < 0)
		return RF_E_PARSE;
	if (end - n > 1)
		return RF_E_PARSE;
	if (end - n == 1) {
		switch (text[n]) {
		case 'K':
		case 'k':
			unit = INT64_C(1) << 10;
			break;
		case 'M':
		case 'm':
			unit = INT64_C(1) << 20;
			break;
		case 'G':
		case 'g':
			unit = INT64_C(1) << 30;
			break;
		default:
			return RF_E_PARSE;
		}
	}
	if (unit > 1024 && v > CACHE_MAX_UNITS >> 20)
		return RF_E_PARSE;
	*out = (int64_t)v * unit;
	return 0;
}
