/*
 * CPU topology from the values Linux publishes under /sys/devices/system/cpu: cpulists
 * ("0-3,8-11"), one-number files (core_id, physical_package_id, cpu_capacity), the hybrid PMU
 * cpulists (/sys/devices/cpu_core/cpus, cpu_atom/cpus) and ARM core types from /proc/cpuinfo.
 * server/detect/probe_cpu.c reads the files into a struct hw_topology; the functions here turn
 * it into counts: logical CPUs, physical cores, sockets, performance and efficiency cores.
 *
 * The rules, in one place:
 *  - Only online CPUs count. A CPU is online when the `online` cpulist says so (or, where the
 *    kernel or a capture has no such file, when its cpuN directory exists and cpuN/online is
 *    not "0").
 *  - A physical core is one thread_siblings_list set: the CPUs that share a core. Where that
 *    file is missing, distinct (physical_package_id, die_id, core_id) triples are counted.
 *  - A socket is one distinct physical_package_id. On ARM the kernel used to report each
 *    cluster as a package when the firmware is a device tree (before Linux 5.19 and the
 *    cluster_id file); so on ARM several packages are trusted only when the CPUs carry a valid
 *    cluster_id or the firmware has an ACPI PPTT table, else sockets are unknown (as lscpu
 *    prints "Socket(s): -").
 *  - Hybrid cores: on Intel the kernel's PMUs name them (cpu_core: performance; cpu_atom and
 *    cpu_lowpower: efficiency). On ARM, cpu_capacity decides when it differs between CPUs (the
 *    lowest capacity is the efficiency class, every other class performance); otherwise the
 *    CPU part from /proc/cpuinfo does, when the parts differ and some are little in-order
 *    designs (Cortex-A5/A7/A32/A34/A35/A53/A55/A510/A520, Kryo Silver, Apple Icestorm).
 *    Different big parts with no little one (Jetson TX2's Denver + A57) are not called
 *    hybrid: performance and efficiency stay 0, the value of a non-hybrid CPU.
 *  - Counts are of cores, not threads: an Intel P-core with two threads is one performance
 *    core.
 */
#ifndef RIGFIT_CORE_HW_PARSE_TOPOLOGY_H
#define RIGFIT_CORE_HW_PARSE_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hw/hw.h"

/* The most CPUs (numbers 0..4095) and NUMA nodes (0..1023) rigfit looks at. */
#define HW_TOPO_MAX_CPUS 4096
#define HW_TOPO_MAX_NODES 1024

/* A set of CPU (or node) numbers below HW_TOPO_MAX_CPUS. `truncated` says that the text named
 * numbers at or above the caller's maximum, which were left out. */
struct hw_cpuset {
	uint64_t bits[HW_TOPO_MAX_CPUS / 64];
	bool truncated;
};

enum hw_core_kind {
	HW_CORE_KIND_UNKNOWN = 0,
	HW_CORE_KIND_PERFORMANCE = 1,
	HW_CORE_KIND_EFFICIENCY = 2,
};

/* One CPU as sysfs and /proc/cpuinfo describe it. Every field is HW_UNKNOWN when not known. */
struct hw_topo_cpu {
	int32_t package;       /* physical_package_id */
	int32_t die;           /* die_id */
	int32_t core;          /* core_id */
	int32_t cluster;       /* cluster_id (Linux 5.16+) */
	int32_t first_sibling; /* lowest online CPU of its thread_siblings_list */
	int32_t capacity;      /* cpu_capacity (ARM) */
	int32_t implementer;   /* /proc/cpuinfo "CPU implementer" (ARM) */
	int32_t part;          /* /proc/cpuinfo "CPU part" (ARM) */
	int8_t kind;           /* enum hw_core_kind, from the hybrid PMU cpulists */
};

/* Everything the probe found, indexed by CPU number. About 150 KiB: allocate it. */
struct hw_topology {
	struct hw_cpuset online;
	bool have_online; /* `online` is known (from the file or from cpuN directories) */
	bool arm;         /* an ARM CPU: the socket and core-type rules above apply */
	bool acpi_pptt;   /* /sys/firmware/acpi/tables/PPTT exists (ARM sockets) */
	struct hw_topo_cpu cpu[HW_TOPO_MAX_CPUS];
};

/* What hw_topology_summarize derives. Counts are HW_UNKNOWN when they cannot be known. */
struct hw_topology_summary {
	int logical;
	int physical;
	int sockets;
	int performance; /* 0 on a non-hybrid CPU */
	int efficiency;
	bool sockets_are_clusters; /* ARM: packages looked like clusters, so sockets is unknown */
	bool mixed_types_unranked; /* ARM: different core types, none known to be little */
};

/* Resets t: no CPU online, every per-CPU field HW_UNKNOWN. */
void hw_topology_init(struct hw_topology *t /* OUT */);

/* Empties s. */
void hw_cpuset_clear(struct hw_cpuset *s /* OUT */);
/* Adds cpu to s; numbers at or above HW_TOPO_MAX_CPUS set s->truncated instead. */
void hw_cpuset_add(struct hw_cpuset *s, unsigned cpu);
/* Returns true when cpu is in s. */
bool hw_cpuset_has(const struct hw_cpuset *s, unsigned cpu);
/* Returns the number of members of s. */
int hw_cpuset_count(const struct hw_cpuset *s);
/* Returns the lowest member of s that is at least `from`, or -1. */
int hw_cpuset_next(const struct hw_cpuset *s, unsigned from);

/* Parses a kernel cpulist ("0-3,8-11\n"; also node lists): comma-separated numbers and
 * inclusive ranges, a trailing newline allowed. An empty (or blank) text is the empty set.
 * Numbers at or above `limit` (at most HW_TOPO_MAX_CPUS) are left out and set out->truncated;
 * a range may span at most 2^20 numbers. Returns 0 and writes *out, or RF_E_PARSE (junk, a
 * reversed range, a number above 2^31) with *out untouched. */
int hw_parse_cpulist(const char *text, size_t len, unsigned limit, struct hw_cpuset *out /* OUT */);

/* Parses a one-number sysfs file ("12\n"). "-1" (the kernel's "none") gives HW_UNKNOWN.
 * Returns 0 and writes *out, or RF_E_PARSE (junk, empty) / RF_E_RANGE (above INT32_MAX). */
int hw_parse_topology_id(const char *text, size_t len, int32_t *out /* OUT */);

/* Records cpu's thread_siblings_list: the lowest online CPU among cpu and its siblings becomes
 * the first_sibling of cpu and of every online sibling that has none yet. Called in ascending
 * CPU order, it lets the probe skip the files of CPUs already covered. cpu must be online. */
void hw_topology_add_siblings(struct hw_topology *t, unsigned cpu,
			      const struct hw_cpuset *siblings);

/* Marks every CPU of `set` (PMU cpulist) as `kind`. */
void hw_topology_set_kind(struct hw_topology *t, const struct hw_cpuset *set,
			  enum hw_core_kind kind);

/* Reads /proc/cpuinfo's per-processor "CPU implementer" and "CPU part" (ARM) into t->cpu[N]
 * for each "processor : N" block. Returns the number of processors whose part was found (0 on
 * x86 or when nothing matched); never fails. */
int hw_parse_cpuinfo_arm_parts(const char *text, size_t len, struct hw_topology *t);

/* Returns the architecture that /proc/cpuinfo shows: "x86_64" (x86 with the "lm" flag),
 * "i686" (x86 without it), "aarch64" (ARM "Features" with "asimd", which only 64-bit kernels
 * print), "armv7l" ("CPU architecture: 7"), or NULL when it cannot tell. */
const char *hw_parse_cpuinfo_arch(const char *text, size_t len);

/* Returns the name of an ARM core ("Neoverse-N1") for an implementer and part, or NULL. */
const char *hw_arm_part_name(int implementer, int part);
/* Returns the vendor name of an ARM implementer code (0x41: "ARM"), or NULL. */
const char *hw_arm_implementer_name(int implementer);

/* Describes the ARM cores of t (the online ones, or every CPU with a known part when the
 * online set is not known): writes to model the distinct core names in CPU order,
 * joined by " + " ("Cortex-A510 + Cortex-A710 + Cortex-X3"), and to vendor the implementer's
 * name (the first CPU's). Leaves a buffer untouched when nothing is known for it. */
void hw_topology_arm_names(const struct hw_topology *t, char *model, size_t model_len, char *vendor,
			   size_t vendor_len);

/* Derives the counts from t by the rules at the top of this file (allocating scratch space of
 * about 40 KiB, freed before it returns). Returns 0, RF_E_PARSE when no CPU is online, or
 * RF_E_NOMEM; out is untouched on failure. */
int hw_topology_summarize(const struct hw_topology *t, struct hw_topology_summary *out /* OUT */);

#endif
