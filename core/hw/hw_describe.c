/*
 * Described machines made whole from the device profiles (see hw_describe.h): the GPUs'
 * memory and unified working set, and the CPU's instruction sets and cores from the CPU table.
 */
#include "core/hw/hw_describe.h"

#include <string.h>

#include "core/hw/classify.h"
#include "core/hw/hw_parse_sysctl.h"

static void lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

static int64_t gib_bytes(double gib)
{
	return gib > 0 ? (int64_t)(gib * 1073741824.0) : HW_UNKNOWN;
}

/* The RAM a unified GPU of profile p shares: the working set of it on the GPU, the RAM on the
 * machine when the machine had none. Returns whether the working set applied. */
static bool unified_pool(struct hw_snapshot *s, struct hw_gpu *g, const struct device_profile *p,
			 int64_t ram)
{
	/* The profile's rule; an Apple GPU no profile knows has macOS's own. */
	int64_t ws = p                               ? device_gpu_working_set_bytes(p, ram) :
		     strcmp(g->vendor, "apple") == 0 ? hw_apple_gpu_working_set(ram, 0, 0) :
						       -1;

	if (ram <= 0)
		return false;
	if (s->memory.total_bytes <= 0) {
		s->memory.total_bytes = ram;
		s->memory.available_bytes = ram;
	}
	if (ws <= 0)
		return false;
	g->memory_total_bytes = ws;
	g->memory_free_bytes = ws;
	return true;
}

/* The core count a CPU's model name states ("AMD Ryzen 9 7950X 16-Core Processor": 16), or 0. */
static int name_cores(const char *model)
{
	for (const char *c = model; *c; c++) {
		int n = 0, scale = 1;
		if (strncmp(c, "-Core", 5) != 0 && strncmp(c, "-core", 5) != 0)
			continue;
		for (const char *d = c; d > model && d[-1] >= '0' && d[-1] <= '9' && scale <= 1000;
		     d--, scale *= 10)
			n += (d[-1] - '0') * scale;
		if (n > 0)
			return n;
	}
	return 0;
}

void hw_describe_cpu(struct hw_snapshot *s, const struct device_table *t,
		     struct hw_describe_cpu *info)
{
	struct hw_describe_cpu d = {0};
	const struct device_profile *p = NULL;

	d.isa_given = s->cpu.isa;
	d.cores_given = s->cpu.physical_cores;
	if (s->cpu.model[0] && t && t->n > 0) {
		if (device_resolve_cpu(t, s->cpu.model, &p) != 0)
			p = NULL;
		d.profile = p;
		d.unknown = !p;
	}
	if (p && p->isa) {
		s->cpu.isa = p->isa;
		d.isa_from_table = true;
	}
	if (p) {
		d.cores = device_cpu_cores(p, s->cpu.model, &d.performance_cores);
		if (d.cores <= 0) {
			d.cores = name_cores(s->cpu.model);
			d.cores_from_name = d.cores > 0;
		}
		/* Cores given are the host's: a VM, a container's share or a second socket has
		 * other than the part's count, and a pasted scan counted them. */
		if (d.cores > 0 && d.cores_given <= 0)
			s->cpu.physical_cores = d.cores;
		/* A hybrid part: llama.cpp's threads are its performance cores. */
		if (d.performance_cores > 0 && d.performance_cores <= d.cores &&
		    s->cpu.physical_cores == d.cores) {
			s->cpu.performance_cores = d.performance_cores;
			s->cpu.efficiency_cores = d.cores - d.performance_cores;
		}
	}
	if (info)
		*info = d;
}

void hw_describe_from_profile(const struct device_profile *p, struct hw_snapshot *s)
{
	struct hw_gpu *g;

	hw_snapshot_init(s);
	hw_strlcpy(s->profile_id, p->id, sizeof(s->profile_id));
	if (p->kind == DEVICE_KIND_CPU) {
		if (p->cpu_cores > 0)
			s->cpu.physical_cores = p->cpu_cores;
		s->cpu.isa = p->isa;
		s->cpu.memory_bandwidth_gbs = p->memory_bandwidth_gbs;
		hw_classify(s);
		return;
	}
	g = &s->gpus[0];
	memset(g, 0, sizeof(*g));
	s->n_gpus = 1;
	hw_strlcpy(g->name, p->name, sizeof(g->name));
	hw_strlcpy(g->vendor, p->vendor, sizeof(g->vendor));
	lower(g->vendor);
	hw_strlcpy(g->compute_capability, p->compute_capability, sizeof(g->compute_capability));
	hw_strlcpy(g->architecture, p->architecture, sizeof(g->architecture));
	g->unified_memory = p->unified;
	g->memory_total_bytes = gib_bytes(p->memory_gib);
	g->memory_free_bytes = g->memory_total_bytes;
	g->memory_used_bytes = g->memory_gtt_bytes = HW_UNKNOWN;
	g->memory_bus_width_bits = g->max_memory_clock_mhz = HW_UNKNOWN;
	g->memory_bandwidth_gbs = p->memory_bandwidth_gbs;
	g->fp16_tflops = p->fp16_tflops;
	if (p->unified)
		unified_pool(s, g, p, g->memory_total_bytes);
	hw_classify(s);
}

int hw_describe_complete(struct hw_snapshot *s, const struct device_table *t,
			 struct hw_describe_gpu *info)
{
	for (int i = 0; i < s->n_gpus && i < HW_MAX_GPUS; i++) {
		struct hw_gpu *g = &s->gpus[i];
		const struct device_profile *p = NULL;
		struct hw_describe_gpu d = {0};
		int64_t ram;

		if (t && t->n > 0)
			(void)device_resolve_mem(t, g->name, g->memory_total_bytes, &p);
		if (g->memory_total_bytes < 0) {
			char key[DEVICE_KEY_LEN];
			int named_gib = 0;
			if (!p || p->memory_gib <= 0)
				return -(1 + i);
			g->unified_memory = g->unified_memory || p->unified;
			/* A SoC sold with several RAM sizes, named with one ("Apple M2 Max 64GB"),
			 * has that one, not the profile's largest. */
			if (!p->memory_configurable ||
			    device_normalize(g->name, key, sizeof(key), &named_gib) < 0)
				named_gib = 0;
			/* A unified GPU shares the machine's RAM when the machine gives it. */
			g->memory_total_bytes = g->unified_memory && s->memory.total_bytes > 0 ?
							s->memory.total_bytes :
						named_gib > 0 ? gib_bytes(named_gib) :
								gib_bytes(p->memory_gib);
			g->memory_free_bytes = g->memory_total_bytes;
			d.memory_from_profile = true;
		}
		if (p && !g->vendor[0]) {
			hw_strlcpy(g->vendor, p->vendor, sizeof(g->vendor));
			lower(g->vendor);
		}
		/* What the part is, as a profile named by id would give it (a T4 named "T4" has
		 * compute capability 7.5, and so no bf16 tensor cores, as "tesla-t4" has). */
		if (p && !g->compute_capability[0])
			hw_strlcpy(g->compute_capability, p->compute_capability,
				   sizeof(g->compute_capability));
		if (p && !g->architecture[0])
			hw_strlcpy(g->architecture, p->architecture, sizeof(g->architecture));
		if (p && p->unified)
			g->unified_memory = true;
		d.profile = p;
		/* Unified: the GPU's memory is the RAM when the machine has none, or at least as
		 * much; below it, it already is the working set (a pasted scan). */
		ram = g->memory_total_bytes;
		if (g->unified_memory && (p || strcmp(g->vendor, "apple") == 0) &&
		    (s->memory.total_bytes <= 0 || ram >= s->memory.total_bytes)) {
			d.working_set = unified_pool(s, g, p, ram);
			d.ram_bytes = ram;
		}
		if (info)
			info[i] = d;
	}
	hw_describe_cpu(s, t, NULL);
	hw_classify(s);
	return 0;
}
