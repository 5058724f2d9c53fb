/*
 * Device profile matching for a scan (see hw_profile.h). Names are matched by
 * device_resolve_mem, which never guesses between variants: "A100" with 80 GB of memory is the
 * 80 GB entry, and a name that matches nothing is reported, not approximated.
 */
#include "core/hw/hw_profile.h"

#include <string.h>

#include "core/err.h"
#include "core/hw/hw_parse_nvidia.h"

/* Fills what the probe left unknown from the GPU's profile and marks each fact so filled. */
static void hw_gpu_from_profile(struct hw_gpu *g, const struct device_profile *p)
{
	if (!g->architecture[0] && p->architecture[0]) {
		hw_strlcpy(g->architecture, p->architecture, sizeof(g->architecture));
		g->from_profile |= HW_FROM_PROFILE(ARCHITECTURE);
	}
	/* nvidia-smi gives the memory clock but not the bus width; the profile's bandwidth at
	 * that clock does (NVIDIA's double data rate, as hw_nvidia_bandwidth_gbs computes). */
	if (g->memory_bus_width_bits < 0 && strcmp(g->vendor, "nvidia") == 0) {
		g->memory_bus_width_bits = hw_nvidia_bus_width_bits(
			p->memory_bandwidth_gbs, g->max_memory_clock_mhz, g->memory_total_bytes);
		if (g->memory_bus_width_bits > 0)
			g->from_profile |= HW_FROM_PROFILE(BUS_WIDTH);
	}
	if (g->memory_bandwidth_gbs < 0 && p->memory_bandwidth_gbs > 0) {
		g->memory_bandwidth_gbs = p->memory_bandwidth_gbs;
		g->from_profile |= HW_FROM_PROFILE(BANDWIDTH);
	}
	if (g->fp16_tflops < 0 && p->fp16_tflops > 0) {
		g->fp16_tflops = p->fp16_tflops;
		g->from_profile |= HW_FROM_PROFILE(FP16);
	}
}

void hw_apply_device_profiles(struct hw_snapshot *s, const struct device_table *t)
{
	int64_t best_mem = -1;

	for (int i = 0; i < s->n_gpus; i++) {
		struct hw_gpu *g = &s->gpus[i];
		const struct device_profile *p = NULL;
		int rc;

		if (!t || t->n == 0 || !g->name[0])
			continue;
		rc = device_resolve_mem(t, g->name, g->memory_total_bytes, &p);
		/* Apple reports the chip in the CPU brand; its GPU is named after it. */
		if (rc < 0 && s->host.soc[0])
			rc = device_resolve_mem(t, s->host.soc, -1, &p);
		if (rc < 0 || !p) {
			hw_warn(s, "gpu %d: no device profile matches \"%s\"%s", g->index, g->name,
				rc == RF_E_CONFLICT ? " unambiguously" : "");
			continue;
		}
		hw_gpu_from_profile(g, p);
		if (g->memory_total_bytes > best_mem || !s->profile_id[0]) {
			best_mem = g->memory_total_bytes;
			hw_strlcpy(s->profile_id, p->id, sizeof(s->profile_id));
		}
	}
	if (s->n_gpus == 0 && t && t->n > 0 && s->cpu.model[0]) {
		const struct device_profile *p = NULL;
		if (device_resolve(t, s->cpu.model, &p) == 0 && p && p->kind == DEVICE_KIND_CPU)
			hw_strlcpy(s->profile_id, p->id, sizeof(s->profile_id));
	}
}
