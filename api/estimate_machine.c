/*
 * Which machine an estimate is about (api/estimate_priv.h): this host's snapshot, a described
 * one ("hardware") or a device profile ("hardware_profile"); the CPU table's figures where
 * nothing measured the host; the devices and budgets the memory estimate takes, and the
 * hardware half of the speed model.
 */
#include <stdio.h>
#include <string.h>

#include "api/device_json.h"
#include "api/hardware_input.h"
#include "core/hw/classify.h"
#include "core/err.h"
#include "core/hw/hw_describe.h"
#include "core/hw/hw_profile.h"
#include "api/estimate_priv.h"

/* ---- the machine ------------------------------------------------------------------------ */

/* A described CPU completed from the CPU table (core/hw/hw_describe.h), said in assumptions:
 * what the table filled or replaced, or that the table does not hold the CPU. */
static void est_cpu_described(const struct api_env *env, struct est *e)
{
	struct hw_describe_cpu ci;
	const struct device_profile *p;

	hw_describe_cpu(&e->hw, env->cat.devices, &ci);
	p = ci.profile;
	if (ci.unknown)
		est_assume(e,
			   "cpu: '%s' is not in the CPU table: its instruction sets, cores and "
			   "memory bandwidth are the description's, assumed where it gives none",
			   e->hw.cpu.model);
	if (!p)
		return;
	if (ci.isa_from_table && ci.isa_given == 0)
		est_assume(e,
			   "cpu.isa: the instruction sets of %s from the CPU table (devices.json "
			   "entry %s)",
			   e->hw.cpu.model, p->id);
	else if (ci.isa_from_table && ci.isa_given != p->isa)
		est_assume(
			e,
			"cpu.isa: the CPU table's instruction sets of %s (devices.json entry %s) "
			"replace the list given",
			e->hw.cpu.model, p->id);
	if (ci.cores > 0 && ci.cores_given > 0 && ci.cores_given != ci.cores)
		est_assume(e, "cpu.physical_cores: %d, as %s, replace the %d given", ci.cores,
			   ci.cores_from_name ? "the model name states" : "the CPU table has",
			   ci.cores_given);
}

static int est_hardware_source(const struct api_env *env, struct est *e, const cJSON *hw,
			       struct api_reply *out)
{
	if (hw && e->rq.has_hardware_profile)
		return api_error(out, RF_E_INVALID_VALUE, "hardware_profile",
				 "give hardware or hardware_profile, not both");
	if (hw) {
		int rc = api_hardware_from_json(hw, "hardware", &e->hw, out);
		if (rc < 0)
			return rc;
		est_cpu_described(env, e);
		/* GPUs named without their memory, and unified memory, from the profiles. */
		{
			struct hw_describe_gpu info[HW_MAX_GPUS];
			int bad = hw_describe_complete(&e->hw, env->cat.devices, info);
			if (bad < 0) {
				char field[48];
				int i = -bad - 1;
				snprintf(field, sizeof(field), "hardware.gpus[%d].name", i);
				return api_device_unknown(out, env->cat.devices, field,
							  e->hw.gpus[i].name, true);
			}
			for (int i = 0; i < e->hw.n_gpus && i < HW_MAX_GPUS; i++) {
				const struct hw_gpu *g = &e->hw.gpus[i];
				if (info[i].working_set)
					est_assume(
						e,
						"hardware.gpus[%d]: %s shares %.0f GiB of unified memory; "
						"%.1f GiB of it is the GPU's working set (%s%s)",
						i, g->name,
						(double)info[i].ram_bytes / 1073741824.0,
						(double)g->memory_total_bytes / 1073741824.0,
						info[i].profile ? "the rule of profile " :
								  "macOS's default rule",
						info[i].profile ? info[i].profile->id : "");
				else if (info[i].memory_from_profile)
					est_assume(
						e,
						"hardware.gpus[%d]: %.0f GiB, all free, from the %s profile",
						i, (double)g->memory_total_bytes / 1073741824.0,
						info[i].profile->id);
			}
		}
		hw_classify(&e->hw);
		hw_apply_device_profiles(&e->hw, env->cat.devices);
		snprintf(e->hw_source, sizeof(e->hw_source), "request");
		return 0;
	}
	if (e->rq.has_hardware_profile) {
		const struct device_profile *p = NULL;
		int found = env->cat.devices ?
				    device_resolve(env->cat.devices, e->rq.hardware_profile, &p) :
				    RF_E_NOT_FOUND;
		if (found == RF_E_CONFLICT)
			return api_error(
				out, RF_E_INVALID_VALUE, "hardware_profile",
				"'%.60s' matches several device profiles; name one by its id "
				"in profiles/devices.json",
				e->rq.hardware_profile);
		if (found < 0 || !p)
			return api_device_unknown(out, env->cat.devices, "hardware_profile",
						  e->rq.hardware_profile, false);
		hw_describe_from_profile(p, &e->hw);
		snprintf(e->hw_source, sizeof(e->hw_source), "profile");
		if (p->kind == DEVICE_KIND_CPU) {
			est_assume(e, "hardware: the CPU profile %s; system memory not known",
				   p->id);
		} else if (e->hw.gpus[0].unified_memory && e->hw.memory.total_bytes > 0) {
			est_assume(
				e,
				"hardware: one %s with %.0f GiB of unified memory, %.1f GiB of it the "
				"GPU's working set, all free",
				p->name, p->memory_gib,
				(double)e->hw.gpus[0].memory_total_bytes / 1073741824.0);
		} else {
			est_assume(e, "hardware: one %s with all of its %.0f GiB free", p->name,
				   p->memory_gib);
		}
		hw_classify(&e->hw);
		return 0;
	}
	if (!env->snapshot)
		return api_error(out, RF_E_UNAVAILABLE, NULL,
				 "the first hardware scan has not finished yet; retry shortly");
	e->hw = env->snapshot->hw;
	snprintf(e->hw_source, sizeof(e->hw_source), "snapshot");
	return 0;
}

/* The machine of the estimate: described (hardware), a profile (hardware_profile) or this host
 * (the scan). A host whose memory bandwidth nothing measured (described hardware, a host
 * with --no-host-bench) takes it from its CPU model's table entry, where there is one. */
int est_hardware(const struct api_env *env, struct est *e, const cJSON *hw, struct api_reply *out)
{
	const struct device_profile *p = NULL;
	int rc = est_hardware_source(env, e, hw, out);

	if (rc < 0 || !env->cat.devices || !e->hw.cpu.model[0])
		return rc;
	if (device_resolve_cpu(env->cat.devices, e->hw.cpu.model, &p) != 0)
		p = NULL;
	/* This host's scan without instruction sets (a CPU the probe could not read) has the
	 * table's; a scan's own list is taken at its word. A described CPU was completed by
	 * est_cpu_described: the table's list whatever it listed. */
	if (p && p->isa && e->hw.cpu.isa == 0 && strcmp(e->hw_source, "request") != 0) {
		e->hw.cpu.isa = p->isa;
		est_assume(
			e,
			"cpu.isa: the instruction sets of %s from the CPU table (devices.json entry %s)",
			e->hw.cpu.model, p->id);
	}
	if (e->hw.cpu.memory_bandwidth_gbs > 0)
		return rc;
	if (p && p->memory_bandwidth_gbs > 0) {
		e->cpu_table_bandwidth_gbs = p->memory_bandwidth_gbs;
		if (e->hw.n_gpus == 0) /* said where the host runs the model */
			est_assume(
				e,
				"host memory bandwidth: %.1f GB/s, the CPU table's theoretical figure for "
				"%s (%s; devices.json entry %s), as nothing measured this host",
				p->memory_bandwidth_gbs, e->hw.cpu.model, p->name, p->id);
	} else if (p && p->memory_bandwidth_measured_gbs > 0) {
		/* No theoretical figure (the bus is not published), a published measurement. */
		e->cpu_table_bandwidth_gbs = p->memory_bandwidth_measured_gbs;
		e->cpu_table_bandwidth_measured = true;
		if (e->hw.n_gpus == 0)
			est_assume(
				e,
				"host memory bandwidth: %.1f GB/s, a published measurement of %s "
				"that the CPU table holds (devices.json entry %s), as its bus width "
				"is not published and nothing measured this host",
				p->memory_bandwidth_measured_gbs, e->hw.cpu.model, p->id);
	} else if (p && e->hw.n_gpus == 0) {
		est_assume(
			e,
			"host memory bandwidth: the CPU table's entry for %s (devices.json entry "
			"%s) gives no bandwidth and nothing measured this host: %.1f GB/s assumed "
			"(dual-channel DDR4-3200)",
			e->hw.cpu.model, p->id, SPEED_ASSUMED_HOST_BANDWIDTH_GBS);
	} else if (e->hw.n_gpus == 0) {
		est_assume(
			e,
			"host memory bandwidth: the CPU '%s' is not in the CPU table and nothing "
			"measured it: %.1f GB/s assumed (dual-channel DDR4-3200)",
			e->hw.cpu.model, SPEED_ASSUMED_HOST_BANDWIDTH_GBS);
	}
	return rc;
}

/* The devices an estimate may use: every GPU that runs the backend (not Intel iGPUs). */
int est_devices(struct est *e, struct rf_mem_device *dev, struct rf_mem_host *host, int64_t *totals)
{
	int n = 0;
	int64_t ram_total = e->hw.memory.total_bytes, ram_avail = e->hw.memory.available_bytes;
	int64_t limit = e->hw.host.container.cgroup_memory_limit_bytes;

	for (int i = 0; i < e->hw.n_gpus && n < RF_MAX_DEVICES; i++) {
		const struct hw_gpu *g = &e->hw.gpus[i];
		struct rf_mem_device *d = &dev[n];
		if (strcmp(g->vendor, "intel") == 0 || g->memory_total_bytes <= 0)
			continue;
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s%d", e->hw.backend, n);
		d->unified = g->unified_memory;
		d->free_bytes = g->memory_free_bytes >= 0 ? g->memory_free_bytes :
							    g->memory_total_bytes;
		if (g->unified_memory)
			d->budget_bytes = ram_total > 0 ? rf_budget_unified(ram_total, ram_avail) :
							  rf_budget_device(d->free_bytes,
									   g->memory_total_bytes);
		else
			d->budget_bytes = rf_budget_device(d->free_bytes, g->memory_total_bytes);
		/* A unified GPU never has more than its working set (the probe's total). */
		if (g->unified_memory && d->budget_bytes > g->memory_total_bytes)
			d->budget_bytes = g->memory_total_bytes;
		d->overhead_bytes = rf_backend_overhead_bytes(e->hw.backend);
		if (totals)
			totals[n] = g->memory_total_bytes;
		n++;
	}
	host->budget_bytes = ram_avail >= 0 ? rf_budget_host(ram_avail, ram_total, limit, -1) : -1;
	host->repack_isa = rf_repack_isa_from_bits(e->hw.cpu.isa);
	return n;
}

/* ---- inference --------------------------------------------------------------------------- */

static enum speed_backend est_backend(const char *b)
{
	enum speed_backend sb = SPEED_BACKEND_CPU;
	speed_backend_parse(b, &sb);
	return sb;
}

/* The hardware half of the speed model's inputs: backend, devices and host of e's machine.
 * Resolving the device profiles is the costly part, so it is done once per estimate. */
void est_speed_devices(const struct api_env *env, struct est *e, struct speed_input *in)
{
	int nd = 0;

	memset(in, 0, sizeof(*in));
	in->backend = est_backend(e->hw.backend);
	for (int i = 0;
	     i < e->hw.n_gpus && nd < SPEED_MAX_DEVICES && in->backend != SPEED_BACKEND_CPU; i++) {
		const struct hw_gpu *g = &e->hw.gpus[i];
		const struct device_profile *prof = NULL;
		enum device_compute_kind kind = DEVICE_COMPUTE_UNKNOWN;
		struct speed_device *sd = &in->devices[nd];
		const char *basis = NULL;
		if (strcmp(g->vendor, "intel") == 0 || g->memory_total_bytes <= 0)
			continue;
		if (env->cat.devices)
			device_resolve_mem(env->cat.devices, g->name, g->memory_total_bytes, &prof);
		sd->bandwidth_gbs = g->memory_bandwidth_gbs > 0 ?
					    g->memory_bandwidth_gbs :
					    device_gpu_bandwidth(prof, g->memory_bus_width_bits,
								 g->max_memory_clock_mhz, &basis);
		if (basis && strcmp(basis, "assumed") == 0)
			est_assume(e, "speed: %s has no known bandwidth; %.0f GB/s assumed",
				   g->name, sd->bandwidth_gbs);
		sd->compute_tflops = prof ? device_compute_tflops(prof, &kind) : g->fp16_tflops;
		sd->compute = kind == DEVICE_COMPUTE_TENSOR ? SPEED_COMPUTE_TENSOR :
			      kind == DEVICE_COMPUTE_UNKNOWN && !prof && g->fp16_tflops > 0 ?
							      SPEED_COMPUTE_TENSOR :
			      kind == DEVICE_COMPUTE_UNKNOWN ? SPEED_COMPUTE_UNKNOWN :
							       SPEED_COMPUTE_VECTOR;
		sd->tensor_units_unrated = kind == DEVICE_COMPUTE_VECTOR_NO_TENSOR;
		sd->hbm = device_hbm_class(prof);
		sd->pro = device_pro_class(prof);
		nd++;
	}
	in->n_devices = nd;
	if (nd == 0)
		in->backend = SPEED_BACKEND_CPU;
	in->host.bandwidth_gbs = e->hw.cpu.memory_bandwidth_gbs;
	in->host.bandwidth_measured = e->hw.cpu.memory_bandwidth_gbs > 0;
	in->host.bandwidth_hostbench = in->host.bandwidth_measured && e->hw.host_bench.measured;
	if (!(in->host.bandwidth_gbs > 0) && e->cpu_table_bandwidth_gbs > 0) {
		in->host.bandwidth_gbs = e->cpu_table_bandwidth_gbs; /* theoretical, or published */
		in->host.bandwidth_measured = e->cpu_table_bandwidth_measured;
	}
	in->host.threads = e->hw.cpu.performance_cores > 0 ? e->hw.cpu.performance_cores :
							     e->hw.cpu.physical_cores;
	/* The CPU's kernels: this host's measured throughput, else its ISA's table. */
	in->host.cpu_isa = speed_cpu_isa_from_bits(e->hw.cpu.isa, e->hw.cpu.arch);
	if (e->hw.host_bench.measured) {
		in->host.int8_gops_per_thread = e->hw.host_bench.int8_gops_per_thread;
		in->host.f32_gflops_per_thread = e->hw.host_bench.f32_gflops_per_thread;
		/* Per quant class: each weight type's own block dot (core/fit/cpu/speed_cpu.h). */
		for (int k = 0; k < HW_KERNEL_N; k++) {
			const struct hw_kernel_rate *r = &e->hw.host_bench.kernel[k];
			in->host.cpu_kernel[k].gops_per_thread = r->gops_per_thread;
			in->host.cpu_kernel[k].avx2_gops_per_thread = r->avx2_gops_per_thread;
			in->host.cpu_kernel[k].isa = speed_cpu_isa_of_kernel(r->isa);
		}
	}
}

int est_vllm_gpus(const struct est *e, struct vllm_gpu *g, int max)
{
	int n = 0;

	if (strcmp(e->hw.backend, "cuda") != 0 && strcmp(e->hw.backend, "rocm") != 0)
		return 0;
	for (int i = 0; i < e->hw.n_gpus && n < max; i++) {
		const struct hw_gpu *hg = &e->hw.gpus[i];
		if (strcmp(hg->vendor, "intel") == 0 || hg->memory_total_bytes <= 0)
			continue;
		g[n].total_bytes = hg->memory_total_bytes;
		g[n].free_bytes = hg->memory_free_bytes;
		g[n].a100 = strstr(hg->name, "A100") != NULL;
		n++;
	}
	return n;
}

void est_plan_machine(const struct api_env *env, struct est *e, struct plan_machine *pm)
{
	pm->n_dev = est_devices(e, pm->dev, &pm->host, pm->dev_total_bytes);
	pm->ram_total_bytes = e->hw.memory.total_bytes;
	est_speed_devices(env, e, &pm->speed);
	pm->threads = pm->speed.host.threads;
	pm->host_measured = e->hw.host_bench.measured && strcmp(e->hw_source, "snapshot") == 0;
	/* vLLM runs on CUDA and ROCm GPUs. */
	pm->n_vgpu = est_vllm_gpus(e, pm->vgpu, RF_MAX_DEVICES);
}

int est_plan_machine_held(const struct api_env *env, struct est *e, struct plan_machine *pm,
			  char notes[SPEED_MAX_DEVICES][EST_ASSUMPTION_LEN])
{
	int n0 = e->n_assumptions, n;

	est_plan_machine(env, e, pm);
	n = e->n_assumptions - n0;
	if (n > SPEED_MAX_DEVICES)
		n = SPEED_MAX_DEVICES;
	for (int i = 0; i < n; i++)
		memcpy(notes[i], e->assumptions[n0 + i], EST_ASSUMPTION_LEN);
	e->n_assumptions = n0;
	return n;
}
