/*
 * Which machine an estimate is about (api/estimate_priv.h): this host's snapshot, a described
 * one ("hardware") or a device profile ("hardware_profile"), with the CPU table's figures where
 * nothing measured the host. What the estimate and the planners take of that machine (devices,
 * budgets, the speed model's hardware half) is core's: core/plan/plan_machine.h.
 */
#include <stdio.h>
#include <string.h>

#include "api/device_json.h"
#include "api/hardware_input.h"
#include "core/hw/classify.h"
#include "core/err.h"
#include "core/hw/hw_describe.h"
#include "core/hw/hw_profile.h"
#include "core/plan/plan_machine.h"
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
		est_assume(e,
			   "cpu.physical_cores: the %d given, where %s %d (a VM, a container's "
			   "share or more sockets than one)",
			   ci.cores_given,
			   ci.cores_from_name ? "the model name states" : "the CPU table has",
			   ci.cores);
	if (ci.performance_cores > 0 && e->hw.cpu.physical_cores == ci.cores)
		est_assume(e,
			   "cpu: %s is hybrid, %d performance and %d efficiency cores (CPU table); "
			   "llama.cpp's default threads are the performance cores",
			   e->hw.cpu.model, ci.performance_cores, ci.cores - ci.performance_cores);
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
	/* The table adds nothing to a machine with its instruction sets and a measured
	 * bandwidth. */
	if ((e->hw.cpu.isa != 0 || strcmp(e->hw_source, "request") == 0) &&
	    e->hw.cpu.memory_bandwidth_gbs > 0)
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

/* ---- the machine as core takes it -------------------------------------------------------- */

void est_machine_source(struct est *e, const struct api_env *env, struct plan_machine_source *m)
{
	m->hw = &e->hw;
	m->devices = env->cat.devices;
	m->cpu_table_bandwidth_gbs = e->cpu_table_bandwidth_gbs;
	m->cpu_table_bandwidth_measured = e->cpu_table_bandwidth_measured;
	m->this_host = strcmp(e->hw_source, "snapshot") == 0;
}

void est_plan_machine(const struct api_env *env, struct est *e, struct plan_machine *pm)
{
	struct plan_machine_source m;
	struct plan_machine_notes notes = {.n = 0};

	est_machine_source(e, env, &m);
	plan_machine_build(&m, pm, &notes);
	for (int i = 0; i < notes.n; i++)
		est_assume(e, "%s", notes.line[i]);
}

int est_plan_machine_held(const struct api_env *env, struct est *e, struct plan_machine *pm,
			  char held[SPEED_MAX_DEVICES][EST_ASSUMPTION_LEN])
{
	struct plan_machine_source m;
	struct plan_machine_notes notes = {.n = 0};
	int n;

	est_machine_source(e, env, &m);
	plan_machine_build(&m, pm, &notes);
	n = notes.n < SPEED_MAX_DEVICES ? notes.n : SPEED_MAX_DEVICES;
	for (int i = 0; i < n; i++)
		memcpy(held[i], notes.line[i], EST_ASSUMPTION_LEN);
	return n;
}
