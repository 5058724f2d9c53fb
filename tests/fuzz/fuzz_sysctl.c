/*
 * Fuzz target: macOS `sysctl` output (core/hw/hw_parse_sysctl.c) and the snapshot the Apple path
 * fills from it (host, CPU, memory and the Apple GPU).
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/hw/hw.h"
#include "core/hw/hw_parse_sysctl.h"
#include "server/detect/probes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw_snapshot s;
	struct hw_sysctl_info info;
	struct hw_gpu *g;

	hw_sysctl_info_init(&info);
	if (hw_parse_sysctl((const char *)data, size, &info) < 0)
		return 0;
	hw_snapshot_init(&s);
	hw_sysctl_fill_host(&info, &s);
	(void)hw_sysctl_wired_limit(&info);
	if (hw_sysctl_is_apple_silicon(&info)) {
		g = rf_snapshot_add_gpu(&s);
		hw_sysctl_fill_gpu(&info, &s, g);
		if (g->memory_total_bytes < HW_UNKNOWN)
			abort();
	}
	if (s.memory.total_bytes < HW_UNKNOWN || s.cpu.logical_cores < HW_UNKNOWN)
		abort();
	return 0;
}
