/*
 * Text rendering of a scan (see hardware_summary.h).
 */
#include "api/hardware_summary.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		size_t cap = (b->cap + (size_t)n) * 2;
		char *np = realloc(b->p, cap);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
		va_start(ap, fmt);
		vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

static double gib(int64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

static const char *or_unknown(const char *s)
{
	return s && *s ? s : "unknown";
}

static void sb_count(struct sbuf *b, int v)
{
	if (v < 0)
		sb_printf(b, "unknown");
	else
		sb_printf(b, "%d", v);
}

/* " (device profile)" when the profile, not the probe, gave the fact flagged by bit. */
static const char *from_profile(const struct hw_gpu *g, unsigned bit)
{
	return (g->from_profile & bit) ? " (device profile)" : "";
}

char *api_hardware_summary(const struct hw_snapshot *s)
{
	struct sbuf b = {malloc(2048), 0, 2048, false};
	int64_t vram = -1;

	if (!b.p)
		return NULL;
	b.p[0] = '\0';
	for (int i = 0; i < s->n_gpus; i++)
		if (s->gpus[i].memory_total_bytes > vram)
			vram = s->gpus[i].memory_total_bytes;

	sb_printf(&b, "Hardware Profile: %s", or_unknown(s->compute_profile));
	if (s->profile_id[0])
		sb_printf(&b, " (%s)", s->profile_id);
	sb_printf(&b, "\nPlatform: %s\n\nSystem:\n  OS: %s %s\n  Architecture: %s\n", s->platform,
		  or_unknown(s->host.os), s->host.kernel, or_unknown(s->host.arch));
	if (s->host.soc[0])
		sb_printf(&b, "  Board: %s\n", s->host.soc);
	if (s->host.container.detected) {
		sb_printf(&b, "  Container: memory limit ");
		if (s->host.container.cgroup_memory_limit_bytes >= 0)
			sb_printf(&b, "%.1f GiB", gib(s->host.container.cgroup_memory_limit_bytes));
		else
			sb_printf(&b, "none");
		if (s->host.container.cpu_quota_cores >= 0)
			sb_printf(&b, ", CPU quota %.2f cores", s->host.container.cpu_quota_cores);
		sb_printf(&b, "\n");
	}

	sb_printf(&b, "\nCPU:\n  Model: %s\n  Cores: ", or_unknown(s->cpu.model));
	sb_count(&b, s->cpu.physical_cores);
	sb_printf(&b, " physical, ");
	sb_count(&b, s->cpu.logical_cores);
	sb_printf(&b, " logical, ");
	sb_count(&b, s->cpu.sockets);
	sb_printf(&b, " socket(s), ");
	sb_count(&b, s->cpu.numa_nodes);
	sb_printf(&b, " NUMA node(s)\n");
	if (s->cpu.performance_cores > 0 || s->cpu.efficiency_cores > 0)
		sb_printf(&b, "  Performance cores: %d\n  Efficiency cores: %d\n",
			  s->cpu.performance_cores, s->cpu.efficiency_cores);
	sb_printf(&b, "  ISA:");
	for (int i = 0, first = 1; i < HW_ISA_COUNT; i++)
		if (s->cpu.isa & (1u << i)) {
			sb_printf(&b, "%s %s", first ? "" : ",", hw_isa_name(i));
			first = 0;
		}
	sb_printf(&b, "\n\nMemory:\n  RAM: ");
	if (s->memory.total_bytes >= 0)
		sb_printf(&b, "%.1f GiB total", gib(s->memory.total_bytes));
	else
		sb_printf(&b, "unknown");
	if (s->memory.available_bytes >= 0)
		sb_printf(&b, ", %.1f GiB available", gib(s->memory.available_bytes));
	sb_printf(&b, "\n  VRAM: ");
	if (vram >= 0)
		sb_printf(&b, "%.1f GiB (largest GPU)\n", gib(vram));
	else
		sb_printf(&b, "none\n");

	if (s->n_gpus == 0)
		sb_printf(&b, "\nGPU: none\n");
	for (int i = 0; i < s->n_gpus; i++) {
		const struct hw_gpu *g = &s->gpus[i];
		sb_printf(&b, "\nGPU %d:\n  Model: %s\n  Vendor: %s%s\n  Memory: ", g->index,
			  or_unknown(g->name), or_unknown(g->vendor),
			  g->unified_memory ? " (unified memory)" : "");
		if (g->memory_total_bytes >= 0)
			sb_printf(&b, "%.1f GiB total", gib(g->memory_total_bytes));
		else
			sb_printf(&b, "unknown");
		if (g->memory_free_bytes >= 0)
			sb_printf(&b, ", %.1f GiB free", gib(g->memory_free_bytes));
		sb_printf(&b, "\n");
		if (g->compute_capability[0])
			sb_printf(&b, "  Compute capability: %s\n", g->compute_capability);
		if (g->driver_version[0] || g->cuda_version[0])
			sb_printf(&b, "  Driver: %s%s%s\n", or_unknown(g->driver_version),
				  g->cuda_version[0] ? ", CUDA " : "", g->cuda_version);
		if (g->has_mig && g->mig.enabled)
			sb_printf(&b, "  MIG: enabled, %d instance(s)\n", g->mig.instances);
		if (g->architecture[0])
			sb_printf(&b, "  Architecture: %s%s\n", g->architecture,
				  from_profile(g, HW_FROM_PROFILE(ARCHITECTURE)));
		if (g->memory_bus_width_bits > 0)
			sb_printf(&b, "  Memory bus: %d-bit%s\n", g->memory_bus_width_bits,
				  from_profile(g, HW_FROM_PROFILE(BUS_WIDTH)));
		if (g->memory_bandwidth_gbs >= 0)
			sb_printf(&b, "  Bandwidth: %.0f GB/s%s\n", g->memory_bandwidth_gbs,
				  from_profile(g, HW_FROM_PROFILE(BANDWIDTH)));
	}
	sb_printf(&b, "\nRecommended Backend: %s\nCapabilities: %s", s->backend, s->backend);
	for (int i = 0; i < HW_ISA_COUNT; i++)
		if (s->cpu.isa & (1u << i))
			sb_printf(&b, ", %s", hw_isa_name(i));
	sb_printf(&b, "\nSources: cpu=%s memory=%s gpu=%s\n", s->sources.cpu, s->sources.memory,
		  s->sources.gpu);
	if (s->scan_duration_ms >= 0)
		sb_printf(&b, "Scan: %.1f ms\n", s->scan_duration_ms);
	if (s->n_warnings > 0) {
		sb_printf(&b, "Warnings:\n");
		for (int i = 0; i < s->n_warnings; i++)
			sb_printf(&b, "  - %s\n", s->warnings[i]);
	}
	if (b.oom) {
		free(b.p);
		return NULL;
	}
	return b.p;
}
