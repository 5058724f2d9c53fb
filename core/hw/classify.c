/*
 * Platform, backend and tier (see classify.h). The GPU that decides the tier is the one with
 * the most memory: a training job is placed on one device, and ModelForge reads one device's
 * total. Unified-memory GPUs (Apple, Jetson) count with their GPU-usable share, which their
 * probes already put in memory_total_bytes.
 */
#include "core/hw/classify.h"

#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

const char *hw_tier(double vram_gib, double ram_gib)
{
	if (vram_gib < HW_TIER_LOW_VRAM_GIB)
		return "low_end";
	if (ram_gib < 0)
		return NULL;
	if (vram_gib < HW_TIER_HIGH_VRAM_GIB)
		return ram_gib < HW_TIER_RAM_GIB ? "low_end" : "mid_range";
	return ram_gib < HW_TIER_RAM_GIB ? "mid_range" : "high_end";
}

int64_t hw_effective_ram_bytes(const struct hw_snapshot *s)
{
	int64_t total = s->memory.total_bytes;
	int64_t limit = s->host.container.cgroup_memory_limit_bytes;

	if (limit > 0 && (total < 0 || limit < total))
		return limit;
	return total;
}

static bool has_vendor(const struct hw_snapshot *s, const char *vendor, bool unified)
{
	for (int i = 0; i < s->n_gpus; i++)
		if (strcmp(s->gpus[i].vendor, vendor) == 0 && s->gpus[i].unified_memory == unified)
			return true;
	return false;
}

void hw_classify(struct hw_snapshot *s)
{
	static const struct {
		const char *vendor;
		int unified; /* -1: either */
		const char *platform;
		const char *backend;
	} order[] = {
		{"nvidia", 1, "jetson", "cuda"},
		{"nvidia", 0, "nvidia", "cuda"},
		{"amd", -1, "amd", "rocm"},
		{"apple", -1, "apple_silicon", "metal"},
	};
	double vram = 0, ram;
	bool vram_unknown = false;
	int64_t eff_ram = hw_effective_ram_bytes(s);
	const char *tier;

	hw_strlcpy(s->platform, "cpu", sizeof(s->platform));
	hw_strlcpy(s->backend, "cpu", sizeof(s->backend));
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		bool found = order[i].unified < 0 ?
				     (has_vendor(s, order[i].vendor, false) ||
				      has_vendor(s, order[i].vendor, true)) :
				     has_vendor(s, order[i].vendor, order[i].unified);
		if (found) {
			hw_strlcpy(s->platform, order[i].platform, sizeof(s->platform));
			hw_strlcpy(s->backend, order[i].backend, sizeof(s->backend));
			break;
		}
	}
	for (int i = 0; i < s->n_gpus; i++) {
		/* Intel GPUs run no CUDA/ROCm training: they do not lift the tier. */
		if (strcmp(s->gpus[i].vendor, "intel") == 0)
			continue;
		if (s->gpus[i].memory_total_bytes < 0)
			vram_unknown = true;
		else if (s->gpus[i].memory_total_bytes / GIB > vram)
			vram = (double)s->gpus[i].memory_total_bytes / GIB;
	}
	ram = eff_ram >= 0 ? (double)eff_ram / GIB : -1.0;
	/* A GPU of unknown size could lift the tier: only a known VRAM above the high mark
	 * decides without it. */
	tier = vram_unknown && vram < HW_TIER_HIGH_VRAM_GIB ? NULL : hw_tier(vram, ram);
	if (vram_unknown && !tier) {
		s->compute_profile[0] = '\0';
		hw_warn(s,
			"tier: a GPU's memory is unknown, so the compute profile cannot be decided");
	} else if (tier) {
		hw_strlcpy(s->compute_profile, tier, sizeof(s->compute_profile));
	} else {
		s->compute_profile[0] = '\0';
		hw_warn(s, "tier: system memory unknown, so the compute profile cannot be decided");
	}
}
