/*
 * A resolved machine as the fine-tuning planner takes it (see plan_ft_machine.h).
 */
#include "core/plan/plan_ft_machine.h"

#include <stdlib.h>
#include <string.h>

#include "core/fit/estimate.h"

enum train_device_class plan_ft_device_class(const struct device_profile *p)
{
	if (!p)
		return TRAIN_CLASS_CONSUMER;
	if (strcmp(p->device_class, "workstation") == 0)
		return TRAIN_CLASS_WORKSTATION;
	if (strcmp(p->device_class, "datacenter") == 0)
		return TRAIN_CLASS_DATACENTER;
	if (strcmp(p->device_class, "consumer") == 0 || strcmp(p->device_class, "laptop") == 0)
		return TRAIN_CLASS_CONSUMER;
	return TRAIN_CLASS_OTHER;
}

bool plan_ft_gpu_bf16(const struct hw_gpu *g, const struct device_table *devices)
{
	const struct device_profile *p = NULL;
	const char *cc = g->compute_capability, *arch = g->architecture;

	if (devices && device_resolve_mem(devices, g->name, g->memory_total_bytes, &p) == 0 && p) {
		if (!cc[0])
			cc = p->compute_capability;
		if (!arch[0])
			arch = p->architecture;
	}
	if (strcmp(g->vendor, "apple") == 0)
		return true;
	if (strcmp(g->vendor, "nvidia") == 0)
		return cc[0] && strtod(cc, NULL) >= 8.0;
	if (strcmp(g->vendor, "amd") == 0)
		return strstr(arch, "gfx90a") || strstr(arch, "gfx94") || strstr(arch, "gfx95") ||
		       strstr(arch, "CDNA 2") || strstr(arch, "CDNA 3") || strstr(arch, "CDNA 4");
	return false;
}

static enum plan_ft_backend ftm_backend(const char *b)
{
	if (strcmp(b, "cuda") == 0)
		return PLAN_FT_BACKEND_CUDA;
	if (strcmp(b, "rocm") == 0)
		return PLAN_FT_BACKEND_ROCM;
	if (strcmp(b, "metal") == 0)
		return PLAN_FT_BACKEND_METAL;
	return b[0] && strcmp(b, "cpu") != 0 ? PLAN_FT_BACKEND_OTHER : PLAN_FT_BACKEND_NONE;
}

/* Keeps budget among the largest PLAN_FT_MAX_GPUS of d's GPUs, largest first. */
static void ftm_add_gpu_budget(struct plan_ft_device *d, int64_t budget)
{
	int i;

	if (d->n_gpus < PLAN_FT_MAX_GPUS)
		i = d->n_gpus++;
	else if (budget <= d->gpu_budget_bytes[PLAN_FT_MAX_GPUS - 1])
		return;
	else
		i = PLAN_FT_MAX_GPUS - 1;
	for (; i > 0 && d->gpu_budget_bytes[i - 1] < budget; i--)
		d->gpu_budget_bytes[i] = d->gpu_budget_bytes[i - 1];
	d->gpu_budget_bytes[i] = budget;
}

void plan_ft_machine(const struct hw_snapshot *hw, const struct plan_machine *pm,
		     const struct device_table *devices, struct plan_ft_device *d)
{
	const struct hw_gpu *train = NULL;
	const struct device_profile *p = NULL;
	int k = 0;

	memset(d, 0, sizeof(*d));
	d->backend = ftm_backend(hw->backend);
	d->budget_bytes = -1;
	d->tflops = -1;
	d->host_ram_bytes = pm->host.budget_bytes;
	for (int i = 0; i < hw->n_gpus && k < pm->n_dev; i++) {
		const struct hw_gpu *g = &hw->gpus[i];
		int64_t budget;
		if (strcmp(g->vendor, "intel") == 0 || g->memory_total_bytes <= 0)
			continue;
		budget = pm->dev[k++].budget_bytes;
		ftm_add_gpu_budget(d, budget);
		if (budget > d->budget_bytes) {
			d->budget_bytes = budget;
			train = g;
		}
	}
	if (!train) {
		d->backend = PLAN_FT_BACKEND_NONE;
		return;
	}
	d->bf16 = plan_ft_gpu_bf16(train, devices);
	d->tflops = train->fp16_tflops;
	if (devices && device_resolve_mem(devices, train->name, train->memory_total_bytes, &p) != 0)
		p = NULL;
	if (d->tflops <= 0 && p) {
		enum device_compute_kind kind;
		d->tflops = device_compute_tflops(p, &kind);
	}
	d->bf16_tflops = p && p->bf16_tflops > 0 ? p->bf16_tflops : train->fp16_tflops;
	/* A run of GEMMs holds only the clocks the card's power limit allows (device_held_tflops). */
	d->tflops = device_held_tflops(p, d->tflops);
	d->bf16_tflops = device_held_tflops(p, d->bf16_tflops);
	/* Several GPUs share a run only where their memory is their own (not Apple's unified
	 * memory, one device in any case). */
	if (train->unified_memory) {
		d->n_gpus = 1;
		/* Nor is anything offloaded to a "host" that is the GPU's own memory. */
		d->host_ram_bytes = -1;
	}
	d->device_class = plan_ft_device_class(p);
	d->bandwidth_gbs = train->memory_bandwidth_gbs > 0 ? train->memory_bandwidth_gbs :
			   p                               ? p->memory_bandwidth_gbs :
							     -1;
}
