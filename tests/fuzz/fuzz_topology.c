/*
 * Fuzz target: the CPU topology values of /sys/devices/system/cpu (core/hw/hw_parse_topology.c).
 * The input stands for several files, separated by FUZZ_SEP: the `online` cpulist, then for
 * CPU 0, 1, ... one part each that is read as its thread_siblings_list and as its core_id
 * file (also giving its package and capacity), as probe_cpu.c reads them; then the counts are
 * derived. Every part is also parsed as a node list with a small limit.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/hw/hw.h"
#include "core/hw/hw_parse_topology.h"
#include "tests/fuzz/fuzz.h"

#define PARTS 17

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw_topology t;
	static struct hw_cpuset set;
	struct fuzz_part part[PARTS];
	struct hw_topology_summary sum;
	int n = fuzz_split(data, size, part, PARTS);

	hw_topology_init(&t);
	if (hw_parse_cpulist(part[0].p, part[0].len, HW_TOPO_MAX_CPUS, &t.online) < 0)
		return 0;
	t.have_online = true;
	t.arm = size > 0 && data[0] == 'a';
	for (int i = 1; i < n; i++) {
		unsigned cpu = (unsigned)(i - 1);
		int32_t id;

		(void)hw_parse_cpulist(part[i].p, part[i].len, 64, &set);
		if (!hw_cpuset_has(&t.online, cpu))
			continue;
		if (hw_parse_topology_id(part[i].p, part[i].len, &id) == 0) {
			t.cpu[cpu].core = id;
			t.cpu[cpu].package = id == HW_UNKNOWN ? id : id % 4;
			t.cpu[cpu].capacity = id;
		}
		if (hw_parse_cpulist(part[i].p, part[i].len, HW_TOPO_MAX_CPUS, &set) == 0) {
			hw_cpuset_add(&set, cpu);
			hw_topology_add_siblings(&t, cpu, &set);
			if (i % 3 == 0)
				hw_topology_set_kind(&t, &set, HW_CORE_KIND_EFFICIENCY);
		}
	}
	if (hw_topology_summarize(&t, &sum) == 0) {
		int online = hw_cpuset_count(&t.online);
		if (sum.logical != online || sum.physical > sum.logical ||
		    sum.performance + sum.efficiency > sum.logical)
			abort();
	}
	return 0;
}
