/*
 * Fuzz target: the cgroup files of a container (core/hw/hw_parse_cgroup.c). The input stands
 * for several files, separated by FUZZ_SEP: /proc/self/cgroup, /proc/self/mountinfo,
 * memory.max, memory.current, v1 memory.stat, cpu.max, cpu.cfs_quota_us, cpu.cfs_period_us;
 * then the cgroup directory is resolved and the memory budget combined, as probe_memory.c
 * does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/hw/hw.h"
#include "core/hw/hw_parse_cgroup.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw_proc_cgroup pc;
	static struct hw_cgroup_mounts m;
	struct fuzz_part f[8];
	char dir[HW_CGROUP_PATH_LEN * 2];
	int64_t limit = HW_UNKNOWN, usage = HW_UNKNOWN, v1 = HW_UNKNOWN, budget;
	double cores;

	fuzz_split(data, size, f, 8);
	memset(&pc, 0, sizeof(pc));
	memset(&m, 0, sizeof(m));
	(void)hw_cgroup_names_container(f[0].p, f[0].len);
	if (hw_parse_proc_cgroup(f[0].p, f[0].len, &pc) == 0 &&
	    hw_parse_mountinfo_cgroups(f[1].p, f[1].len, &m) == 0) {
		if (pc.has_unified && m.unified.found &&
		    hw_cgroup_resolve(&m.unified, pc.unified, dir, sizeof(dir)) == 0 &&
		    strlen(dir) >= sizeof(dir))
			abort();
		if (pc.has_memory && m.memory.found)
			(void)hw_cgroup_resolve(&m.memory, pc.memory, dir, sizeof(dir));
		if (pc.has_cpu && m.cpu.found)
			(void)hw_cgroup_resolve(&m.cpu, pc.cpu, dir, 16);
	}
	(void)hw_parse_cgroup_bytes(f[2].p, f[2].len, &limit);
	(void)hw_parse_cgroup_bytes(f[3].p, f[3].len, &usage);
	(void)hw_parse_cgroup_v1_hierarchical_limit(f[4].p, f[4].len, &v1);
	(void)hw_parse_cgroup_cpu_max(f[5].p, f[5].len, &cores);
	(void)hw_parse_cgroup_cfs(f[6].p, f[6].len, f[7].p, f[7].len, &cores);
	budget = hw_cgroup_budget(INT64_C(8) << 30, limit, usage);
	if (budget < HW_UNKNOWN || budget > (INT64_C(8) << 30))
		abort();
	return 0;
}
