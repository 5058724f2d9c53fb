/*
 * Container limits from the cgroup files Linux publishes: the memory limit and usage (v2
 * memory.max / memory.current, v1 memory.limit_in_bytes / memory.usage_in_bytes /
 * memory.stat), the CPU quota (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us), and where
 * to find them: /proc/self/cgroup names the process's cgroup per hierarchy, and
 * /proc/self/mountinfo says where each hierarchy is mounted and which of its subtrees the
 * mount shows (a container usually sees only its own cgroup, mounted as the root).
 * server/detect/probe_memory.c reads the files; these functions only parse and combine.
 *
 * "No limit" has three spellings: "max" (v2), -1 (v1 quota), and v1's PAGE_COUNTER_MAX in
 * bytes (9223372036854771712 with 4 KiB pages, slightly less with 16 or 64 KiB pages). Every
 * value at or above HW_CGROUP_UNLIMITED_MIN (4 EiB, far above any machine) is taken as that
 * sentinel.
 */
#ifndef RIGFIT_CORE_HW_PARSE_CGROUP_H
#define RIGFIT_CORE_HW_PARSE_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HW_CGROUP_PATH_LEN 1024
#define HW_CGROUP_UNLIMITED_MIN (INT64_C(1) << 62)

/* The process's cgroup per hierarchy, from /proc/self/cgroup. */
struct hw_proc_cgroup {
	bool has_unified; /* "0::/path" (cgroup v2) */
	char unified[HW_CGROUP_PATH_LEN];
	bool has_memory; /* v1 hierarchy with the memory controller */
	char memory[HW_CGROUP_PATH_LEN];
	bool has_cpu; /* v1 hierarchy with the cpu controller (often "cpu,cpuacct") */
	char cpu[HW_CGROUP_PATH_LEN];
};

/* One cgroup file system mount, from /proc/self/mountinfo. */
struct hw_cgroup_mount {
	bool found;
	char point[HW_CGROUP_PATH_LEN]; /* where it is mounted: "/sys/fs/cgroup/memory" */
	char root[HW_CGROUP_PATH_LEN];  /* which cgroup it shows there: "/" or "/docker/<id>" */
};

struct hw_cgroup_mounts {
	struct hw_cgroup_mount unified; /* the first cgroup2 mount */
	struct hw_cgroup_mount memory;  /* the v1 mount with the memory controller */
	struct hw_cgroup_mount cpu;     /* the v1 mount with the cpu controller */
};

/* Parses a byte count: memory.max, memory.current, memory.limit_in_bytes,
 * memory.usage_in_bytes. "max", "-1" and values at or above HW_CGROUP_UNLIMITED_MIN give
 * HW_UNKNOWN (no limit). Returns 0 and writes *out, or RF_E_PARSE. */
int hw_parse_cgroup_bytes(const char *text, size_t len, int64_t *out /* OUT */);

/* Parses v1 memory.stat for "hierarchical_memory_limit" (the lowest limit on the way to the
 * root). Writes the value as hw_parse_cgroup_bytes does. Returns 0, or RF_E_PARSE when the line
 * is missing or junk. */
int hw_parse_cgroup_v1_hierarchical_limit(const char *text, size_t len, int64_t *out /* OUT */);

/* Parses v2 cpu.max ("200000 100000": quota and period in microseconds; "max 100000": none).
 * Writes *cores = quota / period, or -1.0 when there is no quota. Returns 0, or RF_E_PARSE
 * (junk, a zero period or quota). */
int hw_parse_cgroup_cpu_max(const char *text, size_t len, double *cores /* OUT */);

/* Parses v1 cpu.cfs_quota_us and cpu.cfs_period_us. Quota -1 means none: *cores = -1.0.
 * Returns 0, or RF_E_PARSE (junk, a zero period or quota). */
int hw_parse_cgroup_cfs(const char *quota, size_t quota_len, const char *period, size_t period_len,
			double *cores /* OUT */);

/* Parses /proc/self/cgroup ("hierarchy-ID:controllers:path" lines). Returns 0 when at least
 * one hierarchy was understood, else RF_E_PARSE (out then holds nothing). Paths longer than
 * HW_CGROUP_PATH_LEN - 1 are dropped. */
int hw_parse_proc_cgroup(const char *text, size_t len, struct hw_proc_cgroup *out /* OUT */);

/* Parses /proc/self/mountinfo for cgroup and cgroup2 mounts (octal escapes such as "\040"
 * decoded). Returns 0 when one was found, else RF_E_PARSE. */
int hw_parse_mountinfo_cgroups(const char *text, size_t len,
			       struct hw_cgroup_mounts *out /* OUT */);

/* Joins a mount and the process's cgroup path into the directory that holds the process's
 * cgroup files, as seen inside the mount namespace: the mount point plus the part of the path
 * below the mount's root. When the path is not below the root (or climbs with ".."), the
 * process's cgroup is not visible beyond the mount, and the mount point itself is the answer.
 * Returns 0, or RF_E_TOO_LARGE when the result does not fit outlen. */
int hw_cgroup_resolve(const struct hw_cgroup_mount *m, const char *cgroup_path, char *out,
		      size_t outlen);

/* Returns true when a /proc/<pid>/cgroup text names a container runtime's cgroup: a path
 * segment "docker", "docker-<id>.scope", "kubepods*", "libpod*", "lxc", "lxc.payload*",
 * "crio-*", "cri-containerd-*", "ecs" or "actions_job". ("docker.service" is the daemon on the
 * host, not a container.) */
bool hw_cgroup_names_container(const char *text, size_t len);

/* The memory a process can still get: the smaller of MemAvailable and the room left under the
 * cgroup limit (limit - usage, at least 0). Any argument may be HW_UNKNOWN (negative): an
 * unknown limit leaves MemAvailable; an unknown usage leaves the limit itself as the room.
 * Returns HW_UNKNOWN when both MemAvailable and the limit are unknown. */
int64_t hw_cgroup_budget(int64_t mem_available, int64_t limit, int64_t usage);

#endif
