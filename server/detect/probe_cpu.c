/*
 * CPU: /proc/cpuinfo for the model, vendor and ISA flags; /sys/devices/system/cpu for the
 * counts (core/hw/hw_parse_topology.h states the rules); the hybrid PMUs under /sys/devices for
 * Intel performance/efficiency cores; /sys/devices/system/node for NUMA nodes.
 *
 * Reads are kept few, since a scan must stay in the low milliseconds: per physical core one
 * thread_siblings_list and one physical_package_id (its sibling threads are covered by that
 * list and not read again), plus cpu_capacity and cluster_id on ARM; core_id and die_id only
 * when a kernel or a capture has no sibling lists; per-CPU `online` files only when the global
 * `online` list is missing. sources.cpu is "sysfs" when sysfs gave the logical and physical
 * counts, "proc" when /proc/cpuinfo had to answer.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#endif

#include "core/err.h"
#include "core/hw/hw_parse.h"
#include "core/hw/hw_parse_topology.h"
#include "core/numparse.h"
#include "server/detect/probes.h"
#include "server/detect/readfile.h"

#define PROC_FILE_CAP (4u << 20)
/* The longest cpulist of 4096 CPUs ("0,2,4,...") is about 20 KB. */
#define SYS_FILE_CAP (64u << 10)
#define SYS_CPU "/sys/devices/system/cpu"
#define SYS_NODE "/sys/devices/system/node"

/* Reads a one-number file; returns 0 and *out, or a negative rf_err. */
static int read_id(const struct rf_detect_opts *o, const char *path, int32_t *out)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = rf_read_under_root(o->root, path, SYS_FILE_CAP, &buf, &len);

	if (rc < 0)
		return rc;
	rc = hw_parse_topology_id(buf, len, out);
	free(buf);
	return rc;
}

/* Reads a cpulist file; returns 0 and *out, or a negative rf_err. */
static int read_cpulist(const struct rf_detect_opts *o, const char *path, unsigned limit,
			struct hw_cpuset *out)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = rf_read_under_root(o->root, path, SYS_FILE_CAP, &buf, &len);

	if (rc < 0)
		return rc;
	rc = hw_parse_cpulist(buf, len, limit, out);
	free(buf);
	return rc;
}

/* Opens <root><path> as a directory, or returns NULL. */
static DIR *open_dir(const struct rf_detect_opts *o, const char *path)
{
	char full[4352];
	int n = snprintf(full, sizeof(full), "%s%s", strcmp(o->root, "/") == 0 ? "" : o->root,
			 path);

	return n < 0 || (size_t)n >= sizeof(full) ? NULL : opendir(full);
}

/* Returns true when <root><path> exists. */
static bool exists(const struct rf_detect_opts *o, const char *path)
{
	char full[4352];
	int n = snprintf(full, sizeof(full), "%s%s", strcmp(o->root, "/") == 0 ? "" : o->root,
			 path);

	return n >= 0 && (size_t)n < sizeof(full) && access(full, F_OK) == 0;
}

/* Parses "<prefix><number>" directory names ("cpu12", "node3"); returns the number or -1. */
static long numbered(const char *name, const char *prefix, uint64_t max)
{
	size_t n = strlen(prefix);
	uint64_t v;

	if (strncmp(name, prefix, n) != 0 || rf_parse_u64_str(name + n, max, &v) < 0)
		return -1;
	return (long)v;
}

/* Online CPUs without the `online` list (old kernels, some captures): every cpuN directory
 * whose cpuN/online is not "0" (the boot CPU often has no such file). Returns the count. */
static int online_from_dirs(const struct rf_detect_opts *o, struct hw_topology *t)
{
	DIR *d = open_dir(o, SYS_CPU);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL) {
		long c = numbered(e->d_name, "cpu", HW_TOPO_MAX_CPUS - 1);
		char path[96];
		int32_t on = 1;

		if (c < 0)
			continue;
		snprintf(path, sizeof(path), SYS_CPU "/cpu%ld/online", c);
		if (read_id(o, path, &on) == 0 && on == 0)
			continue;
		hw_cpuset_add(&t->online, (unsigned)c);
		n++;
	}
	closedir(d);
	return n;
}

/* Reads the per-core files of every online CPU into t. Returns true when any topology file
 * answered. */
static bool read_cores(const struct rf_detect_opts *o, struct hw_topology *t)
{
	struct hw_cpuset sib;
	bool any = false;

	for (int c = hw_cpuset_next(&t->online, 0); c >= 0;
	     c = hw_cpuset_next(&t->online, (unsigned)c + 1)) {
		struct hw_topo_cpu *cpu = &t->cpu[c];
		char path[112];

		if (cpu->first_sibling >= 0)
			continue; /* a thread of a core already read */
		snprintf(path, sizeof(path), SYS_CPU "/cpu%d/topology/thread_siblings_list", c);
		if (read_cpulist(o, path, HW_TOPO_MAX_CPUS, &sib) == 0) {
			hw_topology_add_siblings(t, (unsigned)c, &sib);
			any = true;
		} else {
			snprintf(path, sizeof(path), SYS_CPU "/cpu%d/topology/core_id", c);
			any |= read_id(o, path, &cpu->core) == 0;
			snprintf(path, sizeof(path), SYS_CPU "/cpu%d/topology/die_id", c);
			read_id(o, path, &cpu->die);
		}
		snprintf(path, sizeof(path), SYS_CPU "/cpu%d/topology/physical_package_id", c);
		any |= read_id(o, path, &cpu->package) == 0;
		if (t->arm) {
			snprintf(path, sizeof(path), SYS_CPU "/cpu%d/topology/cluster_id", c);
			read_id(o, path, &cpu->cluster);
			snprintf(path, sizeof(path), SYS_CPU "/cpu%d/cpu_capacity", c);
			read_id(o, path, &cpu->capacity);
		}
	}
	return any;
}

/* Intel hybrid: the kernel registers one PMU per core type, each with its cpulist. */
static void read_hybrid(const struct rf_detect_opts *o, struct hw_topology *t)
{
	static const struct {
		const char *path;
		enum hw_core_kind kind;
	} pmus[] = {
		{"/sys/devices/cpu_core/cpus", HW_CORE_KIND_PERFORMANCE},
		{"/sys/devices/cpu_atom/cpus", HW_CORE_KIND_EFFICIENCY},
		{"/sys/devices/cpu_lowpower/cpus", HW_CORE_KIND_EFFICIENCY},
	};
	struct hw_cpuset set;

	for (size_t i = 0; i < sizeof(pmus) / sizeof(pmus[0]); i++) {
		if (read_cpulist(o, pmus[i].path, HW_TOPO_MAX_CPUS, &set) < 0) {
			if (i == 0)
				return; /* no cpu_core PMU: not a hybrid Intel CPU */
			continue;
		}
		hw_topology_set_kind(t, &set, pmus[i].kind);
	}
}

static int numa_nodes(const struct rf_detect_opts *o)
{
	struct hw_cpuset nodes;
	struct dirent *e;
	DIR *d;
	int n = 0;

	if (read_cpulist(o, SYS_NODE "/online", HW_TOPO_MAX_NODES, &nodes) == 0) {
		n = hw_cpuset_count(&nodes);
		return n > 0 ? n : HW_UNKNOWN;
	}
	d = open_dir(o, SYS_NODE);
	if (!d)
		return HW_UNKNOWN;
	while ((e = readdir(d)) != NULL)
		if (numbered(e->d_name, "node", HW_TOPO_MAX_NODES - 1) >= 0)
			n++;
	closedir(d);
	return n > 0 ? n : HW_UNKNOWN;
}

/* Names ARM cores from their part numbers where cpuinfo printed only codes or a generic
 * "ARMv7 Processor rev 4 (v7l)". */
static void arm_names(const struct hw_topology *t, struct hw_cpu *cpu)
{
	char model[HW_NAME_LEN] = "", vendor[64] = "";

	hw_topology_arm_names(t, model, sizeof(model), vendor, sizeof(vendor));
	if (model[0] && (!cpu->model[0] || strncmp(cpu->model, "ARMv", 4) == 0))
		hw_strlcpy(cpu->model, model, sizeof(cpu->model));
	if (vendor[0] && (!cpu->vendor[0] || strncmp(cpu->vendor, "0x", 2) == 0))
		hw_strlcpy(cpu->vendor, vendor, sizeof(cpu->vendor));
}

/* ggml asks the kernel for the AMX tile state before it uses AMX (Linux 5.16 and later grant
 * it on request; older kernels and other systems refuse). */
static bool amx_request(void)
{
#if defined(__linux__) && defined(__x86_64__)
	return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
		       18 /* XFEATURE_XTILEDATA */) == 0;
#else
	return false;
#endif
}

/* Keeps AMX among the CPU's instruction sets only where llama.cpp could use it. */
static void amx_usable(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	bool (*granted)(void) = o->amx_granted;

	if (!(s->cpu.isa & HW_ISA(AMX)))
		return;
	if (!granted && rf_detect_is_live(o))
		granted = amx_request;
	if (!granted || granted())
		return;
	s->cpu.isa &= ~HW_ISA(AMX);
	hw_warn(s, "cpu: the CPU has AMX but the kernel does not grant its tile state "
		   "(Linux 5.16 or later does): llama.cpp runs without AMX here");
}

void rf_probe_cpu(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	struct hw_topology *t;
	struct hw_topology_summary sum;
	char *buf = NULL;
	size_t len = 0;
	bool have_cpuinfo = false, sysfs = false, clusters = false, kinds = false, arm;
	int rc;

	if (s->cpu.logical_cores >= 0)
		return;
	t = malloc(sizeof(*t));
	if (!t) {
		hw_warn(s, "cpu: out of memory");
		return;
	}
	hw_topology_init(t);

	rc = rf_read_under_root(o->root, "/proc/cpuinfo", PROC_FILE_CAP, &buf, &len);
	if (rc < 0) {
		hw_warn(s, "cpu: cannot read /proc/cpuinfo (%s)", rf_err_code(rc));
	} else {
		const char *arch = hw_parse_cpuinfo_arch(buf, len);
		if (hw_parse_cpuinfo(buf, len, &s->cpu) < 0)
			hw_warn(s, "cpu: /proc/cpuinfo lists no processor");
		else
			have_cpuinfo = true;
		amx_usable(o, s);
		hw_parse_cpuinfo_arm_parts(buf, len, t);
		/* The kernel's architecture (uname) is the one that runs code; cpuinfo's only
		 * stands in for it when reading a recorded root. */
		if (s->host.arch[0])
			hw_strlcpy(s->cpu.arch, s->host.arch, sizeof(s->cpu.arch));
		else if (arch)
			hw_strlcpy(s->cpu.arch, arch, sizeof(s->cpu.arch));
		free(buf);
	}
	arm = strncmp(s->cpu.arch, "arm", 3) == 0 || strncmp(s->cpu.arch, "aarch64", 7) == 0;
	t->arm = arm;

	if (read_cpulist(o, SYS_CPU "/online", HW_TOPO_MAX_CPUS, &t->online) == 0)
		t->have_online = hw_cpuset_count(&t->online) > 0;
	else
		t->have_online = online_from_dirs(o, t) > 0;
	if (t->online.truncated)
		hw_warn(s, "cpu: more than %d CPUs; only the first %d are counted",
			HW_TOPO_MAX_CPUS, HW_TOPO_MAX_CPUS);
	if (t->have_online) {
		bool cores = read_cores(o, t);
		if (!arm)
			read_hybrid(o, t);
		else
			t->acpi_pptt = exists(o, "/sys/firmware/acpi/tables/PPTT");
		if (hw_topology_summarize(t, &sum) == 0) {
			s->cpu.logical_cores = sum.logical;
			if (sum.physical >= 0)
				s->cpu.physical_cores = sum.physical;
			if (sum.sockets >= 0 || sum.sockets_are_clusters)
				s->cpu.sockets = sum.sockets;
			s->cpu.performance_cores = sum.performance;
			s->cpu.efficiency_cores = sum.efficiency;
			kinds = true;
			sysfs = cores && sum.physical >= 0;
			clusters = sum.sockets_are_clusters;
			if (clusters)
				hw_warn(s, "cpu: this ARM kernel reports core clusters as packages "
					   "(no cluster_id, no ACPI PPTT); socket count unknown");
			if (sum.mixed_types_unranked)
				hw_warn(s,
					"cpu: cores of different types, none known to be an "
					"efficiency core; performance/efficiency counts left at 0");
		}
	} else if (arm && have_cpuinfo) {
		/* No sysfs: cpuinfo's processors stand for the online set, only to tell whether
		 * the cores differ in type (hybrid counts are then unknown, not 0). */
		for (int c = 0; c < HW_TOPO_MAX_CPUS; c++)
			if (t->cpu[c].part >= 0)
				hw_cpuset_add(&t->online, (unsigned)c);
		if (hw_topology_summarize(t, &sum) == 0) {
			s->cpu.performance_cores = sum.performance;
			s->cpu.efficiency_cores = sum.efficiency;
			kinds = true;
		}
		hw_cpuset_clear(&t->online);
	}
	if (arm)
		arm_names(t, &s->cpu);
	free(t);

	/* Hybrid counts stay unknown when neither sysfs nor (on ARM) cpuinfo's core types could
	 * tell: x86 cores' types show only in sysfs PMUs. */
	if (!kinds)
		s->cpu.performance_cores = s->cpu.efficiency_cores = HW_UNKNOWN;
	s->cpu.numa_nodes = numa_nodes(o);
	if (sysfs)
		hw_strlcpy(s->sources.cpu, "sysfs", sizeof(s->sources.cpu));
	else if (have_cpuinfo)
		hw_strlcpy(s->sources.cpu, "proc", sizeof(s->sources.cpu));
	if (s->cpu.logical_cores >= 0 && s->cpu.physical_cores == HW_UNKNOWN)
		hw_warn(s, "cpu: physical core count unknown (no sysfs topology, no core ids in "
			   "/proc/cpuinfo)");
	if (s->cpu.logical_cores >= 0 && s->cpu.sockets == HW_UNKNOWN && !clusters)
		hw_warn(s, "cpu: socket count unknown");
	if (s->cpu.logical_cores >= 0 && s->cpu.numa_nodes == HW_UNKNOWN)
		hw_warn(s, "cpu: NUMA node count unknown (no %s)", SYS_NODE);
}

int64_t rf_probe_largest_cache(const struct rf_detect_opts *o)
{
	int64_t largest = HW_UNKNOWN;

	/* cpu0's cache entries: L1d, L1i, L2, L3 (a few parts have more); the kernel numbers them
	 * from 0 without gaps. */
	for (int i = 0; i < 16; i++) {
		char path[128], *buf = NULL;
		size_t len = 0;
		int64_t bytes;
		snprintf(path, sizeof(path), SYS_CPU "/cpu0/cache/index%d/size", i);
		if (rf_read_under_root(o->root, path, SYS_FILE_CAP, &buf, &len) < 0)
			break;
		if (hw_parse_cache_size(buf, len, &bytes) == 0 && bytes > largest)
			largest = bytes;
		free(buf);
	}
	return largest;
}
