/*
 * What follows from the hardware found: the platform and backend a runtime would use, and the
 * ModelForge compute tier (seed 000's rules, exactly). Pure functions over struct hw_snapshot.
 */
#ifndef RIGFIT_CORE_CLASSIFY_H
#define RIGFIT_CORE_CLASSIFY_H

#include "core/hw/hw.h"

/* The tier thresholds of seed 000, in GiB. */
#define HW_TIER_LOW_VRAM_GIB 7.2
#define HW_TIER_HIGH_VRAM_GIB 15.2
#define HW_TIER_RAM_GIB 15.2

/* Returns "low_end", "mid_range" or "high_end" for the largest GPU's memory and the system RAM
 * (both GiB), by seed 000's rules. ram_gib < 0 means unknown: the answer is then NULL unless
 * the VRAM alone decides it. */
const char *hw_tier(double vram_gib, double ram_gib);

/* Returns the memory the machine can really use, in bytes: the container's cgroup limit when
 * it is lower than MemTotal, else MemTotal; HW_UNKNOWN when neither is known. */
int64_t hw_effective_ram_bytes(const struct hw_snapshot *s);

/* Sets s->platform, s->backend and s->compute_profile from what the probes found (a warning
 * when the tier cannot be known). Idempotent. */
void hw_classify(struct hw_snapshot *s);

#endif
