/*
 * Matching a scan to the known device profiles (profiles/devices.json): each GPU to its entry,
 * by the name the driver reports and its memory, and the machine to its closest profile
 * (`profile_id`). Facts the probes could not measure (bandwidth, FP16 TFLOPs) come from the
 * profile; measured ones are kept.
 */
#ifndef RIGFIT_CORE_HW_PROFILE_H
#define RIGFIT_CORE_HW_PROFILE_H

#include "core/hw/device.h"
#include "core/hw/hw.h"

/* Applies t to s: fills each matched GPU's architecture, memory_bandwidth_gbs and fp16_tflops
 * when the probe found none, and an NVIDIA GPU's memory_bus_width_bits from the profile's
 * bandwidth at the measured memory clock (hw_nvidia_bus_width_bits), marking each fact so
 * filled in from_profile; sets s->profile_id to the entry of the GPU with the most memory (the CPU's
 * entry on a machine without GPUs, when its model string resolves), and warns about GPUs no
 * entry knows. t may be NULL or empty: then only bus-width bandwidths are kept. */
void hw_apply_device_profiles(struct hw_snapshot *s, const struct device_table *t);

#endif
