/*
 * A machine as a client describes it, made whole from the device profiles: the one place that
 * turns a profile into a machine (a `hardware_profile`) and completes a described `hardware`
 * (GPUs named without their memory), for every route. Unified memory is one pool: a unified
 * GPU (Apple Silicon, and other SoCs with a working-set rule) described by its RAM gets the
 * GPU working set the OS allows of that RAM, and the machine that RAM, however it is described:
 * by name alone, by name with memory_total_bytes, with the unified flag, or as a profile.
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
 * profile gives one. */
int hw_describe_complete(struct hw_snapshot *s, const struct device_table *t,
			 struct hw_describe_gpu *info /* OUT, may be NULL */);

#endif
