/*
 * CPU topology: the cpulist and one-number parsers, the counting rules of
 * core/hw/hw_parse_topology.h on hand-built topologies, ARM core names from real /proc/cpuinfo
 * captures (tests/data/fixtures), and the CPU probe on small synthetic sysfs trees for what no
 * capture shows: an Intel hybrid CPU (no sysfs capture of one exists; the tree below follows
 * the layout of a Core i7-12700H: 6 P-cores with two threads as CPUs 0-11, 8 E-cores as CPUs
 * 12-19, PMU cpulists under /sys/devices/cpu_core and cpu_atom), per-CPU `online` files
 * without a global list, junk files, and ARM cores that differ in cpu_capacity.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/err.h"
#include "core/hw/hw_parse.h"
#include "core/hw/hw_parse_topology.h"
#include "server/detect/detect.h"
#include "tests/test.h"

static int cpulist(const char *text, unsigned limit, struct hw_cpuset *out)
{
	return hw_parse_cpulist(text, strlen(text), limit, out);
}

START_TEST(cpulist_ranges_singles_and_empty)
{
	struct hw_cpuset s;

	ck_assert_int_eq(cpulist("0", HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), 1);
	ck_assert(hw_cpuset_has(&s, 0));
	ck_assert_int_eq(cpulist("0-3,8-11\n", HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), 8);
	ck_assert(hw_cpuset_has(&s, 3) && hw_cpuset_has(&s, 8) && hw_cpuset_has(&s, 11));
	ck_assert(!hw_cpuset_has(&s, 4) && !hw_cpuset_has(&s, 12));
	ck_assert(!s.truncated);
	ck_assert_int_eq(hw_cpuset_next(&s, 4), 8);
	ck_assert_int_eq(hw_cpuset_next(&s, 12), -1);
	/* Real lists: the L5640's sibling pairs, the X7550's `online`. */
	ck_assert_int_eq(cpulist("1,13\n", HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), 2);
	ck_assert_int_eq(cpulist("0-63\n", HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), 64);
	/* The kernel prints an empty `offline` as a bare newline. */
	ck_assert_int_eq(cpulist("", HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), 0);
	ck_assert_int_eq(cpulist("\n", HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), 0);
	ck_assert_int_eq(hw_parse_cpulist(NULL, 0, HW_TOPO_MAX_CPUS, &s), 0);
	/* The length is honoured: only "0-1" of "0-15" is read. */
	ck_assert_int_eq(hw_parse_cpulist("0-15", 3, HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), 2);
}
END_TEST

START_TEST(cpulist_rejects_junk_and_leaves_output_untouched)
{
	static const char *const junk[] = {"garbage", "1-",     "-1",  "3-1", "0,,1",  "0-3,",
					   ",0",      "0-62:2", "0 1", "0x3", "1-2-3", "0-3\n4"};
	struct hw_cpuset s;

	ck_assert_int_eq(cpulist("5", HW_TOPO_MAX_CPUS, &s), 0);
	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		ck_assert_msg(cpulist(junk[i], HW_TOPO_MAX_CPUS, &s) == RF_E_PARSE, "%s", junk[i]);
		ck_assert_int_eq(hw_cpuset_count(&s), 1);
		ck_assert(hw_cpuset_has(&s, 5));
	}
	/* Past 2^31 a number is junk, not a CPU. */
	ck_assert_int_eq(cpulist("0-4294967295", HW_TOPO_MAX_CPUS, &s), RF_E_PARSE);
	ck_assert_int_eq(cpulist("99999999999999999999999", HW_TOPO_MAX_CPUS, &s), RF_E_PARSE);
}
END_TEST

START_TEST(cpulist_huge_ranges_are_capped)
{
	struct hw_cpuset s;

	ck_assert_int_eq(cpulist("0-100000", HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), HW_TOPO_MAX_CPUS);
	ck_assert(s.truncated);
	ck_assert_int_eq(cpulist("0-2147483648", HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), HW_TOPO_MAX_CPUS);
	ck_assert_int_eq(cpulist("4095-5000,6000", HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), 1);
	ck_assert(s.truncated);
	ck_assert_int_eq(cpulist("5000", HW_TOPO_MAX_CPUS, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), 0);
	ck_assert(s.truncated);
	/* NUMA node lists are capped at 1024 nodes. */
	ck_assert_int_eq(cpulist("0-2047", HW_TOPO_MAX_NODES, &s), 0);
	ck_assert_int_eq(hw_cpuset_count(&s), HW_TOPO_MAX_NODES);
	ck_assert(s.truncated);
}
END_TEST

START_TEST(topology_ids)
{
	int32_t v = 7;

	ck_assert_int_eq(hw_parse_topology_id("12\n", 3, &v), 0);
	ck_assert_int_eq(v, 12);
	ck_assert_int_eq(hw_parse_topology_id("-1\n", 3, &v), 0);
	ck_assert_int_eq(v, HW_UNKNOWN);
	v = 7;
	ck_assert_int_eq(hw_parse_topology_id("abc", 3, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_topology_id("", 0, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_topology_id("-2", 2, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_topology_id("1 2", 3, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_topology_id("2147483648", 10, &v), RF_E_RANGE);
	ck_assert_int_eq(v, 7);
}
END_TEST

static struct hw_topology *topo_new(const char *online)
{
	struct hw_topology *t = malloc(sizeof(*t));

	ck_assert_ptr_nonnull(t);
	hw_topology_init(t);
	ck_assert_int_eq(cpulist(online, HW_TOPO_MAX_CPUS, &t->online), 0);
	t->have_online = true;
	return t;
}

/* Gives cpu its sibling list and package, as the probe does. */
static void topo_core(struct hw_topology *t, int cpu, const char *siblings, int package)
{
	struct hw_cpuset s;

	ck_assert_int_eq(cpulist(siblings, HW_TOPO_MAX_CPUS, &s), 0);
	hw_topology_add_siblings(t, (unsigned)cpu, &s);
	t->cpu[cpu].package = package;
}

START_TEST(summary_two_socket_smt_like_the_l5640)
{
	/* The L5640 capture: CPU n and n+12 share a core; even CPUs on package 1. */
	struct hw_topology *t = topo_new("0-23");
	struct hw_topology_summary r;

	for (int c = 0; c < 12; c++) {
		char sib[32];
		snprintf(sib, sizeof(sib), "%d,%d", c, c + 12);
		topo_core(t, c, sib, c % 2 ? 0 : 1);
	}
	ck_assert_int_eq(t->cpu[13].first_sibling, 1);
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.logical, 24);
	ck_assert_int_eq(r.physical, 12);
	ck_assert_int_eq(r.sockets, 2);
	ck_assert_int_eq(r.performance, 0);
	ck_assert_int_eq(r.efficiency, 0);
	free(t);
}
END_TEST

START_TEST(summary_offline_cpus_do_not_count)
{
	/* The Dell E4310 capture: possible 0-7, online 0-3, two cores with two threads. */
	struct hw_topology *t = topo_new("0-3");
	struct hw_topology_summary r;

	topo_core(t, 0, "0-1", 0);
	topo_core(t, 2, "2-3", 0);
	/* A sibling list naming an offline CPU (a capture taken mid-hotplug) changes nothing. */
	topo_core(t, 3, "3,7", 0);
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.logical, 4);
	ck_assert_int_eq(r.physical, 2);
	ck_assert_int_eq(r.sockets, 1);
	free(t);
}
END_TEST

START_TEST(summary_without_sibling_lists_uses_core_ids)
{
	/* Two dies with the same core ids: die_id keeps them apart. */
	struct hw_topology *t = topo_new("0-7");
	struct hw_topology_summary r;

	for (int c = 0; c < 8; c++) {
		t->cpu[c].package = 0;
		t->cpu[c].die = c / 4;
		t->cpu[c].core = (c % 4) / 2; /* two threads per core */
	}
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.physical, 4);
	ck_assert_int_eq(r.sockets, 1);
	/* A core id that does not fit the key: cores are unknown, not miscounted. */
	t->cpu[5].core = 0x7fffffff;
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.physical, HW_UNKNOWN);
	/* A CPU without a package: sockets unknown. */
	t->cpu[5].core = 0;
	t->cpu[6].package = HW_UNKNOWN;
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.sockets, HW_UNKNOWN);
	ck_assert_int_eq(r.physical, HW_UNKNOWN);
	free(t);
}
END_TEST

START_TEST(summary_nothing_online_is_an_error)
{
	struct hw_topology *t = topo_new("");
	struct hw_topology_summary r = {.logical = 99};

	ck_assert_int_eq(hw_topology_summarize(t, &r), RF_E_PARSE);
	ck_assert_int_eq(r.logical, 99);
	free(t);
}
END_TEST

START_TEST(summary_intel_hybrid_counts_cores_not_threads)
{
	/* i7-12700H layout: P-cores 0-11 in pairs, E-cores 12-19 alone. */
	struct hw_topology *t = topo_new("0-19");
	struct hw_topology_summary r;
	struct hw_cpuset p, e;

	for (int c = 0; c < 12; c += 2) {
		char sib[32];
		snprintf(sib, sizeof(sib), "%d-%d", c, c + 1);
		topo_core(t, c, sib, 0);
	}
	for (int c = 12; c < 20; c++) {
		char sib[32];
		snprintf(sib, sizeof(sib), "%d", c);
		topo_core(t, c, sib, 0);
	}
	ck_assert_int_eq(cpulist("0-11", HW_TOPO_MAX_CPUS, &p), 0);
	ck_assert_int_eq(cpulist("12-19", HW_TOPO_MAX_CPUS, &e), 0);
	hw_topology_set_kind(t, &p, HW_CORE_KIND_PERFORMANCE);
	hw_topology_set_kind(t, &e, HW_CORE_KIND_EFFICIENCY);
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.logical, 20);
	ck_assert_int_eq(r.physical, 14);
	ck_assert_int_eq(r.performance, 6);
	ck_assert_int_eq(r.efficiency, 8);
	/* All CPUs in cpu_core only: one core type, not hybrid. */
	hw_topology_set_kind(t, &e, HW_CORE_KIND_PERFORMANCE);
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.performance, 0);
	ck_assert_int_eq(r.efficiency, 0);
	free(t);
}
END_TEST

START_TEST(summary_arm_capacity_decides_before_parts)
{
	struct hw_topology *t = topo_new("0-7");
	struct hw_topology_summary r;

	t->arm = true;
	for (int c = 0; c < 8; c++) {
		char sib[32];
		snprintf(sib, sizeof(sib), "%d", c);
		topo_core(t, c, sib, 0);
		t->cpu[c].cluster = c / 4;
		t->cpu[c].capacity = c < 4 ? 446 : (c < 7 ? 871 : 1024);
		/* Same part everywhere: only capacity tells them apart. */
		t->cpu[c].implementer = 0x41;
		t->cpu[c].part = 0xd0b;
	}
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.physical, 8);
	ck_assert_int_eq(r.sockets, 1);
	ck_assert_int_eq(r.efficiency, 4);
	ck_assert_int_eq(r.performance, 4);
	/* Equal capacities and equal parts: not hybrid. */
	for (int c = 0; c < 8; c++)
		t->cpu[c].capacity = 1024;
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.efficiency, 0);
	ck_assert_int_eq(r.performance, 0);
	free(t);
}
END_TEST

START_TEST(summary_arm_parts_and_clusters_as_packages)
{
	/* The big.LITTLE phone capture: cpuinfo parts, three clusters reported as packages. */
	size_t len;
	char *buf = t_fixture("arm64-cortex-a510-a710-a715-x3-phone__proc-cpuinfo.txt", &len);
	struct hw_topology *t = topo_new("0-7");
	struct hw_topology_summary r;
	char model[HW_NAME_LEN] = "", vendor[64] = "";
	static const int pkg[8] = {0, 0, 0, 1, 1, 1, 1, 2};

	t->arm = true;
	ck_assert_int_eq(hw_parse_cpuinfo_arm_parts(buf, len, t), 8);
	free(buf);
	for (int c = 0; c < 8; c++) {
		char sib[32];
		snprintf(sib, sizeof(sib), "%d", c);
		topo_core(t, c, sib, pkg[c]);
	}
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.physical, 8);
	ck_assert_int_eq(r.sockets, HW_UNKNOWN);
	ck_assert(r.sockets_are_clusters);
	ck_assert_int_eq(r.efficiency, 3); /* 3x Cortex-A510 */
	ck_assert_int_eq(r.performance, 5);
	hw_topology_arm_names(t, model, sizeof(model), vendor, sizeof(vendor));
	ck_assert_str_eq(model, "Cortex-A510 + Cortex-A715 + Cortex-A710 + Cortex-X3");
	ck_assert_str_eq(vendor, "ARM");
	/* With an ACPI PPTT the packages are real sockets. */
	t->acpi_pptt = true;
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert_int_eq(r.sockets, 3);
	ck_assert(!r.sockets_are_clusters);
	free(t);
}
END_TEST

START_TEST(summary_arm_big_parts_only_are_not_ranked)
{
	/* Jetson TX2's Denver 2 + Cortex-A57 (the capture holds CPUs 0-3 of 6). */
	size_t len;
	char *buf = t_fixture("jetson-tx2-denver-a57__proc-cpuinfo-first4-of-6.txt", &len);
	struct hw_topology *t = topo_new("0-3");
	struct hw_topology_summary r;
	char model[HW_NAME_LEN] = "", vendor[64] = "";

	t->arm = true;
	ck_assert_int_eq(hw_parse_cpuinfo_arm_parts(buf, len, t), 4);
	free(buf);
	ck_assert_int_eq(t->cpu[1].implementer, 0x4e);
	ck_assert_int_eq(t->cpu[1].part, 0x003);
	for (int c = 0; c < 4; c++) {
		char sib[32];
		snprintf(sib, sizeof(sib), "%d", c);
		topo_core(t, c, sib, 0);
	}
	ck_assert_int_eq(hw_topology_summarize(t, &r), 0);
	ck_assert(r.mixed_types_unranked);
	ck_assert_int_eq(r.performance, 0);
	ck_assert_int_eq(r.efficiency, 0);
	hw_topology_arm_names(t, model, sizeof(model), vendor, sizeof(vendor));
	ck_assert_str_eq(model, "Cortex-A57 + Denver 2");
	free(t);
}
END_TEST

START_TEST(arm_names_and_cpuinfo_arch)
{
	static const struct {
		const char *file;
		const char *arch;
	} cases[] = {
		{"intel-xeon-l5640-2socket__proc-cpuinfo.txt", "x86_64"},
		{"raspberry-pi-3__proc-cpuinfo.txt", "armv7l"},
		{"jetson-tx1__proc-cpuinfo.txt", "aarch64"},
		{"aws-graviton4-96vcpu__proc-cpuinfo.txt", "aarch64"},
		{"armv7-cortex-a53-32bit-kernel__proc-cpuinfo.txt", "armv7l"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		char *buf = t_fixture(cases[i].file, &len);
		ck_assert_msg(hw_parse_cpuinfo_arch(buf, len) != NULL, "%s", cases[i].file);
		ck_assert_str_eq(hw_parse_cpuinfo_arch(buf, len), cases[i].arch);
		free(buf);
	}
	ck_assert_ptr_null(hw_parse_cpuinfo_arch("junk\n", 5));
	ck_assert_str_eq(hw_arm_part_name(0x41, 0xd0c), "Neoverse-N1");
	ck_assert_str_eq(hw_arm_part_name(0x41, 0xd4f), "Neoverse-V2");
	ck_assert_str_eq(hw_arm_part_name(0x41, 0xd85), "Cortex-X925");
	ck_assert_str_eq(hw_arm_part_name(0xc0, 0xac3), "Ampere-1");
	ck_assert_ptr_null(hw_arm_part_name(0x41, 0xfff));
	ck_assert_str_eq(hw_arm_implementer_name(0x4e), "NVIDIA");
	ck_assert_ptr_null(hw_arm_implementer_name(0x99));
}
END_TEST

START_TEST(cpuinfo_arm_parts_ignores_junk)
{
	struct hw_topology *t = topo_new("0");
	static const char text[] = "processor\t: 0\nCPU implementer\t: 0xZZ\nCPU part\t: 12\n\n"
				   "processor\t: 99999\nCPU part\t: 0xd03\n";

	ck_assert_int_eq(hw_parse_cpuinfo_arm_parts(text, sizeof(text) - 1, t), 0);
	ck_assert_int_eq(t->cpu[0].implementer, -1);
	ck_assert_int_eq(t->cpu[0].part, -1);
	free(t);
}
END_TEST

START_TEST(probe_intel_hybrid_tree)
{
	char *root = t_mkdtemp();
	struct hw_snapshot *s;

	t_put(root, "proc/cpuinfo",
	      "processor\t: 0\nvendor_id\t: GenuineIntel\n"
	      "model name\t: 12th Gen Intel(R) Core(TM) i7-12700H\nflags\t\t: fpu lm avx avx2 fma\n");
	t_put(root, "sys/devices/system/cpu/online", "0-19\n");
	t_put(root, "sys/devices/system/cpu/possible", "0-19\n");
	for (int c = 0; c < 20; c++) {
		char rel[96], val[32];
		snprintf(rel, sizeof(rel),
			 "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
		if (c < 12)
			snprintf(val, sizeof(val), "%d-%d\n", c & ~1, (c & ~1) + 1);
		else
			snprintf(val, sizeof(val), "%d\n", c);
		t_put(root, rel, val);
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/topology/core_id", c);
		snprintf(val, sizeof(val), "%d\n", c < 12 ? (c / 2) * 4 : 24 + (c - 12));
		t_put(root, rel, val);
		snprintf(rel, sizeof(rel),
			 "sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		t_put(root, rel, "0\n");
	}
	t_put(root, "sys/devices/cpu_core/cpus", "0-11\n");
	t_put(root, "sys/devices/cpu_atom/cpus", "12-19\n");
	t_put(root, "sys/devices/system/node/online", "0\n");

	s = t_scan(root);
	ck_assert_int_eq(s->cpu.logical_cores, 20);
	ck_assert_int_eq(s->cpu.physical_cores, 14);
	ck_assert_int_eq(s->cpu.performance_cores, 6);
	ck_assert_int_eq(s->cpu.efficiency_cores, 8);
	ck_assert_int_eq(s->cpu.sockets, 1);
	ck_assert_int_eq(s->cpu.numa_nodes, 1);
	ck_assert_str_eq(s->cpu.arch, "x86_64");
	ck_assert_str_eq(s->sources.cpu, "sysfs");
	ck_assert(s->cpu.isa & HW_ISA(AVX2));
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(probe_per_cpu_online_files_and_junk)
{
	char *root = t_mkdtemp();
	struct hw_snapshot *s;

	/* No global `online`: cpu0 (no online file), cpu1, cpu2 online; cpu3 offline. */
	t_put(root, "sys/devices/system/cpu/cpu1/online", "1\n");
	t_put(root, "sys/devices/system/cpu/cpu2/online", "1\n");
	t_put(root, "sys/devices/system/cpu/cpu3/online", "0\n");
	t_put(root, "sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0\n");
	t_put(root, "sys/devices/system/cpu/cpu1/topology/thread_siblings_list", "1\n");
	/* cpu2's sibling list is junk: its core_id stands in. */
	t_put(root, "sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "garbage\n");
	t_put(root, "sys/devices/system/cpu/cpu2/topology/core_id", "2\n");
	for (int c = 0; c < 4; c++) {
		char rel[96];
		snprintf(rel, sizeof(rel),
			 "sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		t_put(root, rel, "0\n");
	}
	t_put(root, "sys/devices/system/cpu/cpu0/topology/core_id", "0\n");
	t_put(root, "sys/devices/system/cpu/cpu1/topology/core_id", "1\n");
	t_put(root, "sys/devices/system/cpu/cpufreq/policy0/scaling_driver", "acpi-cpufreq\n");
	t_put(root, "sys/devices/system/node/node0/cpumap", "f\n");
	t_put(root, "sys/devices/system/node/node1/cpumap", "0\n");
	t_put(root, "sys/devices/system/node/has_cpu", "0-1\n");

	s = t_scan(root);
	ck_assert_int_eq(s->cpu.logical_cores, 3);
	ck_assert_int_eq(s->cpu.physical_cores, 3);
	ck_assert_int_eq(s->cpu.sockets, 1);
	ck_assert_int_eq(s->cpu.numa_nodes, 2);
	ck_assert_str_eq(s->sources.cpu, "sysfs");
	/* No cpuinfo: model unknown, with a warning; hybrid kinds known from sysfs (none). */
	ck_assert_str_eq(s->cpu.model, "");
	ck_assert_int_eq(s->cpu.performance_cores, 0);
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(probe_arm_capacity_tree)
{
	char *root = t_mkdtemp();
	struct hw_snapshot *s;
	char info[2048] = "";
	size_t used = 0;

	for (int c = 0; c < 8; c++) {
		char rel[96], val[16];
		used += (size_t)snprintf(info + used, sizeof(info) - used,
					 "processor\t: %d\nFeatures\t: fp asimd asimddp\n"
					 "CPU implementer\t: 0x41\nCPU part\t: %s\n\n",
					 c, c < 4 ? "0xd05" : "0xd0b");
		snprintf(rel, sizeof(rel),
			 "sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
		snprintf(val, sizeof(val), "%d\n", c);
		t_put(root, rel, val);
		snprintf(rel, sizeof(rel),
			 "sys/devices/system/cpu/cpu%d/topology/physical_package_id", c);
		t_put(root, rel, "0\n");
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/topology/cluster_id", c);
		t_put(root, rel, c < 4 ? "0\n" : "1\n");
		snprintf(rel, sizeof(rel), "sys/devices/system/cpu/cpu%d/cpu_capacity", c);
		t_put(root, rel, c < 4 ? "381\n" : "1024\n");
	}
	t_put(root, "proc/cpuinfo", info);
	t_put(root, "sys/devices/system/cpu/online", "0-7\n");

	s = t_scan(root);
	ck_assert_str_eq(s->cpu.arch, "aarch64");
	ck_assert_str_eq(s->cpu.vendor, "ARM");
	ck_assert_str_eq(s->cpu.model, "Cortex-A55 + Cortex-A76");
	ck_assert_int_eq(s->cpu.logical_cores, 8);
	ck_assert_int_eq(s->cpu.physical_cores, 8);
	ck_assert_int_eq(s->cpu.sockets, 1);
	ck_assert_int_eq(s->cpu.efficiency_cores, 4);
	ck_assert_int_eq(s->cpu.performance_cores, 4);
	ck_assert(s->cpu.isa & HW_ISA(DOTPROD));
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(probe_empty_root_reports_unknowns)
{
	char *root = t_mkdtemp();
	struct hw_snapshot *s = t_scan(root);

	ck_assert_int_eq(s->cpu.logical_cores, HW_UNKNOWN);
	ck_assert_int_eq(s->cpu.performance_cores, HW_UNKNOWN);
	ck_assert_int_eq(s->cpu.numa_nodes, HW_UNKNOWN);
	ck_assert_str_eq(s->sources.cpu, "none");
	ck_assert_int_gt(s->n_warnings, 0);
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

Suite *hw_parse_topology_suite(void)
{
	Suite *s = suite_create("hw_parse_topology");
	TCase *tc = tcase_create("parse");
	TCase *tp = tcase_create("probe");

	tcase_add_test(tc, cpulist_ranges_singles_and_empty);
	tcase_add_test(tc, cpulist_rejects_junk_and_leaves_output_untouched);
	tcase_add_test(tc, cpulist_huge_ranges_are_capped);
	tcase_add_test(tc, topology_ids);
	tcase_add_test(tc, summary_two_socket_smt_like_the_l5640);
	tcase_add_test(tc, summary_offline_cpus_do_not_count);
	tcase_add_test(tc, summary_without_sibling_lists_uses_core_ids);
	tcase_add_test(tc, summary_nothing_online_is_an_error);
	tcase_add_test(tc, summary_intel_hybrid_counts_cores_not_threads);
	tcase_add_test(tc, summary_arm_capacity_decides_before_parts);
	tcase_add_test(tc, summary_arm_parts_and_clusters_as_packages);
	tcase_add_test(tc, summary_arm_big_parts_only_are_not_ranked);
	tcase_add_test(tc, arm_names_and_cpuinfo_arch);
	tcase_add_test(tc, cpuinfo_arm_parts_ignores_junk);
	suite_add_tcase(s, tc);
	tcase_add_test(tp, probe_intel_hybrid_tree);
	tcase_add_test(tp, probe_per_cpu_online_files_and_junk);
	tcase_add_test(tp, probe_arm_capacity_tree);
	tcase_add_test(tp, probe_empty_root_reports_unknowns);
	suite_add_tcase(s, tp);
	return s;
}
