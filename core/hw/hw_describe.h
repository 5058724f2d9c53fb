/*
 * A machine as a client describes it, made whole from the device profiles: the one place that
 * turns a profile into a machine (a `hardware_profile`) and completes a described `hardware`
 * (GPUs named without their memory), for every route. Unified memory is one pool: a unified
 * GPU (Apple Silicon, and other SoCs with a working-set rule) described by its RAM gets the
 * GPU working set the OS allows of that RAM, and the machine that RAM, however it is described:
 * by name alone, by name with memory_total_bytes, with the unified flag, or as a profile.
 * A CPU named in the CPU table (devices.json entries of kind cpu) runs the table's kernels
 * whatever the description lists, so that one CPU has one set of kernels; its cores are the
 * description's where it gives them (a VM or a container has a share of the part), the
 * table's where it does not.
 *
 * Pure: no I/O.
 */
#ifndef RIGFIT_CORE_HW_DESCRIBE_H
#define RIGFIT_CORE_HW_DESCRIBE_H

#include <stdint.h>

#include "core/hw/device.h"
#include "core/hw/hw.h"

/* What hw_describe_complete did to a GPU, for the caller's assumptions. */
struct hw_describe_gpu {
	const struct device_profile *profile; /* the entry that completed it, or NULL */
	bool memory_from_profile;             /* its memory was the profile's */
	bool working_set;                     /* a unified GPU: memory is the working set */
	int64_t ram_bytes;                    /* the RAM the working set is of (working_set) */
};

/* What hw_describe_cpu did to a machine's CPU, for the caller's assumptions. */
struct hw_describe_cpu {
	const struct device_profile *profile; /* the CPU table's entry, or NULL */
	bool unknown;                         /* the CPU is named and the table does not hold it */
	uint32_t isa_given;    /* the instruction sets as described (HW_ISA() bits; 0: none) */
	bool isa_from_table;   /* the CPU now has the table's sets (filled or replaced) */
	int cores_given;       /* physical cores as described (<= 0: none) */
	int cores;             /* the part's count, from the table or the model name; 0: none */
	bool cores_from_name;  /* that count is the model name's ("8-Core Processor") */
	int performance_cores; /* of those, a hybrid part's performance cores; 0: none known */
};

/* Completes the CPU of s from t's CPU entries by its model name (device_resolve_cpu): a CPU
 * the table holds gets the table's instruction sets in place of whatever s lists, as one CPU
 * has one set of kernels, and, where s gives no physical cores, the core count of the table or
 * of the name ("16-Core"). Cores s gives are kept: a VM, a container's share or a second
 * socket differs from the part's count. A measured memory bandwidth is s's own and kept; the
 * table's theoretical one is info->profile->memory_bandwidth_gbs, for the caller to use where
 * nothing measured it.
 * Running it again changes nothing. Writes what it did to info (may be NULL). */
void hw_describe_cpu(struct hw_snapshot *s, const struct device_table *t,
		     struct hw_describe_cpu *info /* OUT, may be NULL */);

/* Makes *s the machine of profile p: one GPU of p (or, for a CPU entry, only that CPU, with
 * its cores, instruction sets and bandwidth), all of its memory free; a unified device's RAM
 * is p's memory and its GPU the working set of it. */
void hw_describe_from_profile(const struct device_profile *p, struct hw_snapshot *s /* OUT */);

/* Completes the described machine s from t: a GPU without memory_total_bytes takes its
 * profile's (or, when unified, the machine's RAM when s gives it); a unified GPU whose memory
 * is the machine's RAM (the RAM unknown, or the GPU's memory at least the RAM, as someone
 * describing a Mac writes it) gets the profile's working set of that RAM (2/3 of RAM up to
 * 32 GiB, 3/4 above, on Apple Silicon), and the machine that RAM when it had none. A GPU
 * already at its working set (a pasted scan) is kept. Writes what it did per GPU to info
 * (HW_MAX_GPUS entries, may be NULL). Returns 0, or -(1 + i) when GPU i has no memory and no
 * profile gives one. The CPU is completed by hw_describe_cpu. */
int hw_describe_complete(struct hw_snapshot *s, const struct device_table *t,
			 struct hw_describe_gpu *info /* OUT, may be NULL */);

#endif
