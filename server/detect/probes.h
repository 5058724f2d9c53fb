/*
 * The probes of a scan, one per part of the machine, run in this order by rf_detect_scan.
 * Each reads under opts->root (and runs commands only when opts allow), fills its part of the
 * snapshot, sets its `sources` entry, and reports what it could not read as a warning. A probe
 * never fails the scan.
 */
#ifndef RIGFIT_SERVER_DETECT_PROBES_H
#define RIGFIT_SERVER_DETECT_PROBES_H

#include "core/hw/hw.h"
#include "server/detect/detect.h"

/* Kernel identity: os, kernel release, machine architecture (probe_host.c). */
void rf_probe_host(const struct rf_detect_opts *o, struct hw_snapshot *s);

/* Apple Silicon through `sysctl` output (probe_apple.c): CPU, memory and the unified GPU.
 * Runs only when o->sysctl names a program. */
void rf_probe_apple(const struct rf_detect_opts *o, struct hw_snapshot *s);

/* /proc/meminfo and the container's cgroup v2/v1 memory limit and CPU quota
 * (probe_memory.c). Skipped when an earlier probe already filled memory. */
void rf_probe_memory(const struct rf_detect_opts *o, struct hw_snapshot *s);

/* CPU: sysfs topology, hybrid core types, NUMA, /proc/cpuinfo (probe_cpu.c). Skipped when an
 * earlier probe already filled the CPU. */
void rf_probe_cpu(const struct rf_detect_opts *o, struct hw_snapshot *s);

/* For the host measurement (server/hostbench.c), which must read more memory than any cache
 * holds and no more than the process may take:
 * - the largest of cpu0's caches in sysfs, in bytes (the last level: L3, or L2 where there is
 *   none), HW_UNKNOWN when none can be read (probe_cpu.c);
 * - the memory this process can still take: MemAvailable, capped by the room under its
 *   cgroup's limit, as rf_probe_memory fills available_bytes; HW_UNKNOWN when unknown
 *   (probe_memory.c). */
int64_t rf_probe_largest_cache(const struct rf_detect_opts *o);
int64_t rf_probe_memory_room(const struct rf_detect_opts *o);

/* NVIDIA Jetson / Tegra: device tree and nv_tegra_release; one unified-memory GPU
 * (probe_jetson.c). */
void rf_probe_jetson(const struct rf_detect_opts *o, struct hw_snapshot *s);

/* NVIDIA discrete GPUs: NVML through dlopen in a forked child, else nvidia-smi
 * (probe_nvidia.c). */
void rf_probe_nvidia(const struct rf_detect_opts *o, struct hw_snapshot *s);
/* The --query-gpu field lists nvidia-smi is asked, newest driver first. Each query drops the
 * field that the next older drivers reject ("Field "compute_cap" is not a valid field to
 * query."). */
#define RF_NVIDIA_SMI_QUERIES 3
extern const char *const rf_nvidia_smi_queries[RF_NVIDIA_SMI_QUERIES];

/* AMD GPUs (amdgpu sysfs, KFD topology) and Intel GPUs (i915/xe sysfs) (probe_amd.c). */
void rf_probe_amd(const struct rf_detect_opts *o, struct hw_snapshot *s);

/* Appends a GPU to s (index set to its position) and returns it, or NULL when HW_MAX_GPUS are
 * already held (a warning says so). Fields not known must be left HW_UNKNOWN / -1 / "". */
struct hw_gpu *rf_snapshot_add_gpu(struct hw_snapshot *s);

#endif
