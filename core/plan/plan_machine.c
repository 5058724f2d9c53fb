/*
 * The machine as the estimate and the planners take it (see plan_machine.h).
 */
#include "core/plan/plan_machine.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/fit/cpu/repack.h"
#include "core/fit/cpu/speed_cpu.h"
#include "core/format.h"
#include "core/numparse.h"
#include "core/text.h"

static void note(struct plan_machine_notes *notes, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note(struct plan_machine_notes *notes, const char *fmt, ...)
{
	va_list ap;

	if (!notes || notes->n >= PLAN_MACHINE_MAX_NOTES)
		return;
	va_start(ap, fmt);
	rf_note_vformat(notes->line[notes->n++], PLAN_NOTE_LEN, fmt, ap);
	va_end(ap);
}

bool plan_machine_gpu_used(const struct hw_gpu *g)
{
	return strcmp(g->vendor, "intel") != 0 && g->memory_total_bytes > 0;
}

/* The budget of unified GPU g on a machine with ram_total bytes of RAM (ram_avail available;
 * ram_total <= 0: not known, the GPU's memory taken as the RAM, noted): its profile's
 * working-set rule (a Jetson's: what Linux sees less what the OS holds), else macOS's. A Mac
 * whose RAM is known keeps macOS's rule itself, which its profile restates to four places.
 * What other processes already use comes out of it. */
static int64_t unified_budget(const struct hw_gpu *g, const struct device_table *devices,
			      int64_t ram_total, int64_t ram_avail,
			      struct plan_machine_notes *notes)
{
	const struct device_profile *p = NULL;
	bool known = ram_total > 0;
	int64_t ram = known ? ram_total : g->memory_total_bytes, ws = -1;

	if (devices && (!known || strcmp(g->vendor, "apple") != 0) &&
	    device_resolve_mem(devices, g->name, -1, &p) == 0 && p)
		ws = device_gpu_working_set_bytes(p, ram);
	if (ws <= 0)
		ws = rf_budget_unified(ram, known ? ram_avail : -1);
	else if (known && ram_avail >= 0 && ram_avail < ram_total && ram_avail < ws)
		ws = ram_avail;
	if (!known)
		note(notes,
		     "%s: unified memory; %.1f GiB of its %.0f GiB taken as the GPU's working set",
		     g->name, (double)ws / (double)RF_GIB, (double)ram / (double)RF_GIB);
	return ws;
}

int plan_machine_devices(const struct hw_snapshot *hw, const struct device_table *devices,
			 struct rf_mem_device *dev, struct rf_mem_host *host, int64_t *totals,
			 struct plan_machine_notes *notes)
{
	int n = 0;
	int64_t ram_total = hw->memory.total_bytes, ram_avail = hw->memory.available_bytes;
	int64_t limit = hw->host.container.cgroup_memory_limit_bytes;

	for (int i = 0; i < hw->n_gpus && n < RF_MAX_DEVICES; i++) {
		const struct hw_gpu *g = &hw->gpus[i];
		struct rf_mem_device *d = &dev[n];
		if (!plan_machine_gpu_used(g))
			continue;
		memset(d, 0, sizeof(*d));
		rf_format(d->name, sizeof(d->name), "%s%d", hw->backend, n);
		d->unified = g->unified_memory;
		d->free_bytes = g->memory_free_bytes >= 0 ? g->memory_free_bytes :
							    g->memory_total_bytes;
		/* Unified memory has one budget however the machine was described: the GPU's
		 * working-set share of the RAM. */
		if (g->unified_memory)
			d->budget_bytes = unified_budget(g, devices, ram_total, ram_avail, notes);
		else
			d->budget_bytes = rf_budget_device(d->free_bytes, g->memory_total_bytes);
		/* A unified GPU never has more than its working set (the probe's total). */
		if (g->unified_memory && d->budget_bytes > g->memory_total_bytes)
			d->budget_bytes = g->memory_total_bytes;
		d->overhead_bytes = rf_backend_overhead_bytes(hw->backend);
		if (totals)
			totals[n] = g->memory_total_bytes;
		n++;
	}
	host->budget_bytes = ram_avail >= 0 ? rf_budget_host(ram_avail, ram_total, limit, -1) : -1;
	if (limit > 0 && (ram_total <= 0 || limit < ram_total))
		note(notes,
		     "host memory: the container's limit of %.1f GiB (cgroup) bounds the plan, not "
		     "the host's RAM; past it the kernel's OOM killer stops the server",
		     (double)limit / (double)RF_GIB);
	host->repack_isa = rf_repack_isa_from_bits(hw->cpu.isa);
	return n;
}

static enum speed_backend machine_backend(const char *b)
{
	enum speed_backend sb = SPEED_BACKEND_CPU;
	speed_backend_parse(b, &sb);
	return sb;
}

/* The speed model's figures of GPU g: bandwidth, compute and memory class from the scan and
 * its profile (resolving the profile is the costly part: once per machine). */
static void machine_speed_device(const struct hw_gpu *g, const struct device_table *devices,
				 struct speed_device *sd, struct plan_machine_notes *notes)
{
	const struct device_profile *prof = NULL;
	enum device_compute_kind kind = DEVICE_COMPUTE_UNKNOWN;
	const char *basis = NULL;

	if (devices)
		device_resolve_mem(devices, g->name, g->memory_total_bytes, &prof);
	sd->bandwidth_gbs = g->memory_bandwidth_gbs > 0 ?
				    g->memory_bandwidth_gbs :
				    device_gpu_bandwidth(prof, g->memory_bus_width_bits,
							 g->max_memory_clock_mhz, &basis);
	if (basis && strcmp(basis, "assumed") == 0)
		note(notes, "speed: %s has no known bandwidth; %.0f GB/s assumed", g->name,
		     sd->bandwidth_gbs);
	/* An SoC's GPU sharing its memory controller with the CPU pulls less of the peak than
	 * a discrete card does of its own (the profile's measured share). */
	if (prof && prof->decode_bandwidth_share > 0 && sd->bandwidth_gbs > 0) {
		note(notes,
		     "speed: %s's GPU decodes at %.0f%% of the share of its %.1f GB/s a discrete "
		     "card reaches of its own (its memory controller is shared with the CPU; "
		     "devices.json entry %s)",
		     g->name, 100 * prof->decode_bandwidth_share, sd->bandwidth_gbs, prof->id);
		sd->bandwidth_gbs *= prof->decode_bandwidth_share;
	}
	sd->compute_tflops = prof ? device_compute_tflops(prof, &kind) : g->fp16_tflops;
	sd->compute = kind == DEVICE_COMPUTE_TENSOR ? SPEED_COMPUTE_TENSOR :
		      kind == DEVICE_COMPUTE_UNKNOWN && !prof && g->fp16_tflops > 0 ?
						      SPEED_COMPUTE_TENSOR :
		      kind == DEVICE_COMPUTE_UNKNOWN ? SPEED_COMPUTE_UNKNOWN :
						       SPEED_COMPUTE_VECTOR;
	sd->tensor_units_unrated = kind == DEVICE_COMPUTE_VECTOR_NO_TENSOR;
	sd->hbm = device_hbm_class(prof);
	sd->pro = device_pro_class(prof);
}

void plan_machine_speed(const struct plan_machine_source *m, struct speed_input *in,
			struct plan_machine_notes *notes)
{
	const struct hw_snapshot *hw = m->hw;
	int nd = 0;

	memset(in, 0, sizeof(*in));
	in->backend = machine_backend(hw->backend);
	for (int i = 0;
	     i < hw->n_gpus && nd < SPEED_MAX_DEVICES && in->backend != SPEED_BACKEND_CPU; i++) {
		if (!plan_machine_gpu_used(&hw->gpus[i]))
			continue;
		machine_speed_device(&hw->gpus[i], m->devices, &in->devices[nd++], notes);
	}
	in->n_devices = nd;
	if (nd == 0)
		in->backend = SPEED_BACKEND_CPU;
	in->host.bandwidth_gbs = hw->cpu.memory_bandwidth_gbs;
	in->host.bandwidth_measured = hw->cpu.memory_bandwidth_gbs > 0;
	in->host.bandwidth_hostbench = in->host.bandwidth_measured && hw->host_bench.measured;
	if (!(in->host.bandwidth_gbs > 0) && m->cpu_table_bandwidth_gbs > 0) {
		in->host.bandwidth_gbs = m->cpu_table_bandwidth_gbs; /* theoretical, or published */
		in->host.bandwidth_measured = m->cpu_table_bandwidth_measured;
	}
	in->host.threads = hw->cpu.performance_cores > 0 ? hw->cpu.performance_cores :
							   hw->cpu.physical_cores;
	/* The CPU's kernels: this host's measured throughput, else its ISA's table. */
	in->host.cpu_isa = speed_cpu_isa_from_bits(hw->cpu.isa, hw->cpu.arch);
	if (hw->host_bench.measured) {
		in->host.int8_gops_per_thread = hw->host_bench.int8_gops_per_thread;
		in->host.f32_gflops_per_thread = hw->host_bench.f32_gflops_per_thread;
		/* Per quant class: each weight type's own block dot (core/fit/cpu/speed_cpu.h). */
		for (int k = 0; k < HW_KERNEL_N; k++) {
			const struct hw_kernel_rate *r = &hw->host_bench.kernel[k];
			in->host.cpu_kernel[k].gops_per_thread = r->gops_per_thread;
			in->host.cpu_kernel[k].avx2_gops_per_thread = r->avx2_gops_per_thread;
			in->host.cpu_kernel[k].isa = speed_cpu_isa_of_kernel(r->isa);
		}
	}
}

/* vLLM's CUDA kernels need compute capability 7.0 or newer (vLLM's GPU installation docs:
 * "compute capability 7.0 or higher"): a Pascal card (P100, GTX 10 series, a Jetson TX2)
 * cannot start it. Its ROCm build runs on the gfx targets its ROCm requirements list; an RX
 * 6800 (gfx1030) or an MI100 (gfx908) cannot start it. An unknown capability or target is not
 * held against the card. */
static const char *const vllm_rocm_targets[] = {"gfx90a",  "gfx942",  "gfx950",  "gfx1100",
						"gfx1101", "gfx1150", "gfx1151", "gfx1200",
						"gfx1201", NULL};

/* The gfx target an AMD architecture names ("RDNA 2 (gfx1030)", "gfx90a"), into out; false
 * when it names none. */
static bool gfx_target(const char *arch, char *out, size_t len)
{
	const char *p = strstr(arch, "gfx");
	size_t n = 3;

	if (!p || len < 2)
		return false;
	while (p[n] && ((p[n] >= '0' && p[n] <= '9') || (p[n] >= 'a' && p[n] <= 'f')))
		n++;
	if (n == 3 || n >= len)
		return false;
	memcpy(out, p, n);
	out[n] = '\0';
	return true;
}

static bool vllm_unsupported(const struct hw_gpu *g)
{
	double cc = 0;
	char gfx[16];

	if (strcmp(g->vendor, "nvidia") == 0)
		return g->compute_capability[0] &&
		       rf_parse_double(g->compute_capability, strlen(g->compute_capability), 0, 100,
				       &cc) == 0 &&
		       cc < 7.0;
	if (strcmp(g->vendor, "amd") == 0 && gfx_target(g->architecture, gfx, sizeof(gfx))) {
		for (int i = 0; vllm_rocm_targets[i]; i++)
			if (strcmp(gfx, vllm_rocm_targets[i]) == 0)
				return false;
		return true;
	}
	return false;
}

/* The first GPU of hw that vLLM uses and cannot run on, or NULL. */
static const struct hw_gpu *vllm_blocker(const struct hw_snapshot *hw)
{
	for (int i = 0; i < hw->n_gpus; i++)
		if (plan_machine_gpu_used(&hw->gpus[i]) && vllm_unsupported(&hw->gpus[i]))
			return &hw->gpus[i];
	return NULL;
}

bool plan_machine_vllm_unable(const struct hw_snapshot *hw, char *why, size_t len)
{
	const struct hw_gpu *g = vllm_blocker(hw);
	char gfx[16];

	if (!g)
		return false;
	if (strcmp(g->vendor, "amd") == 0 && gfx_target(g->architecture, gfx, sizeof(gfx)))
		rf_format(
			why, len,
			"vLLM's ROCm build runs on gfx90a, gfx942, gfx950, gfx1100/1101, "
			"gfx1150/1151 and gfx1200/1201 GPUs (its ROCm installation requirements); "
			"%s is %s",
			g->name, gfx);
	else
		rf_format(why, len,
			  "vLLM needs NVIDIA GPUs of compute capability 7.0 or newer (its GPU "
			  "installation requirements); %s is %s",
			  g->name, g->compute_capability);
	return true;
}

int plan_machine_vllm_gpus(const struct hw_snapshot *hw, struct vllm_gpu *g, int max)
{
	int n = 0;

	if (strcmp(hw->backend, "cuda") != 0 && strcmp(hw->backend, "rocm") != 0)
		return 0;
	/* vLLM takes every GPU it sees: one it cannot run on stops it. */
	if (vllm_blocker(hw))
		return 0;
	for (int i = 0; i < hw->n_gpus && n < max; i++) {
		const struct hw_gpu *hg = &hw->gpus[i];
		if (!plan_machine_gpu_used(hg))
			continue;
		g[n].total_bytes = hg->memory_total_bytes;
		g[n].free_bytes = hg->memory_free_bytes;
		g[n].a100 = strstr(hg->name, "A100") != NULL;
		n++;
	}
	return n;
}

void plan_machine_build(const struct plan_machine_source *m, struct plan_machine *pm,
			struct plan_machine_notes *notes)
{
	pm->n_dev = plan_machine_devices(m->hw, m->devices, pm->dev, &pm->host, pm->dev_total_bytes,
					 notes);
	pm->ram_total_bytes = m->hw->memory.total_bytes;
	plan_machine_speed(m, &pm->speed, notes);
	pm->threads = pm->speed.host.threads;
	pm->host_measured = m->hw->host_bench.measured && m->this_host;
	/* vLLM runs on CUDA and ROCm GPUs. */
	pm->n_vgpu = plan_machine_vllm_gpus(m->hw, pm->vgpu, VLLM_MAX_GPUS);
}

void plan_machine_train_gpus(const struct plan_machine_source *m, struct plan_train_gpus *t,
			     int gpu[RF_MAX_DEVICES], bool *apple, struct plan_machine_notes *notes)
{
	const struct hw_snapshot *hw = m->hw;
	struct rf_mem_device dev[RF_MAX_DEVICES];
	struct rf_mem_host host;
	int n = plan_machine_devices(hw, m->devices, dev, &host, NULL, notes), k = 0;

	memset(t, 0, sizeof(*t));
	*apple = false;
	t->host_budget = host.budget_bytes;
	t->min_budget = -1;
	for (int i = 0; i < hw->n_gpus && k < n; i++) {
		const struct hw_gpu *g = &hw->gpus[i];
		int64_t b = dev[k].budget_bytes;
		if (!plan_machine_gpu_used(g))
			continue;
		if (strcmp(g->vendor, "apple") == 0 || strcmp(hw->backend, "metal") == 0)
			*apple = true;
		/* On unified memory the "host" is the GPU's own memory: offloading frees nothing. */
		if (g->unified_memory)
			t->host_budget = -1;
		gpu[k] = i;
		t->budget[k] = b;
		if (b > t->budget[t->largest])
			t->largest = k;
		if (t->min_budget < 0 || b < t->min_budget)
			t->min_budget = b;
		k++;
	}
	t->n = k;
}
