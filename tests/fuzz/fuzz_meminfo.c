/*
 * Fuzz target: /proc/meminfo (core/hw/hw_parse_meminfo.c).
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/hw/hw.h"
#include "core/hw/hw_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hw_memory m = {.total_bytes = HW_UNKNOWN, .available_bytes = HW_UNKNOWN};

	if (hw_parse_meminfo((const char *)data, size, &m) < 0)
		return 0;
	/* A negative size other than HW_UNKNOWN is neither a size nor "unknown". */
	if (m.total_bytes < HW_UNKNOWN || m.available_bytes < HW_UNKNOWN)
		abort();
	return 0;
}
