/*
 * Fuzz target: /proc/cpuinfo (core/hw/hw_parse_cpuinfo.c), and what the topology code reads of
 * it (ARM implementer and part per processor, the architecture, the ARM core names).
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/hw/hw.h"
#include "core/hw/hw_parse.h"
#include "core/hw/hw_parse_topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw_topology t;
	const char *text = (const char *)data;
	struct hw_cpu cpu = {
		.sockets = HW_UNKNOWN, .physical_cores = HW_UNKNOWN, .logical_cores = HW_UNKNOWN};
	char model[HW_NAME_LEN] = "", vendor[64] = "";

	if (hw_parse_cpuinfo(text, size, &cpu) == 0 && cpu.logical_cores < 1)
		abort(); /* parsed means at least one processor entry */
	(void)hw_parse_cpuinfo_arch(text, size);
	hw_topology_init(&t);
	if (hw_parse_cpuinfo_arm_parts(text, size, &t) > 0) {
		t.arm = true;
		hw_topology_arm_names(&t, model, sizeof(model), vendor, sizeof(vendor));
	}
	return 0;
}
