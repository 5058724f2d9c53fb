/*
 * The machine as the estimate and the planners take it, from a resolved snapshot: the devices
 * and their budgets (free memory less the reserve; unified memory's working set), the host's
 * budget, the hardware half of the speed model (bandwidths, compute, the CPU's kernels), the
 * GPUs vLLM can use, and the GPUs a training run may share. Every route, the CLI and MCP reach
 * it through api/'s resolver (api/estimate_machine.c), which only says where the snapshot came
 * from and what the CPU table adds. Pure: no I/O.
 */
#ifndef RIGFIT_CORE_PLAN_MACHINE_H
#define RIGFIT_CORE_PLAN_MACHINE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/estimate.h"
#include "core/fit/serve_vllm.h"
#include "core/fit/speed.h"
#include "core/hw/device.h"
#include "core/hw/hw.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_infer.h"
#include "core/plan/plan_train_eval.h"

/* A resolved machine: its snapshot and what the tables add to it. */
struct plan_machine_source {
	const struct hw_snapshot *hw;
	const struct device_table *devices; /* the profiles that complete the scan; NULL none */
	/* The host's memory bandwidth from the CPU table when nothing measured it: GB/s, <= 0
	 * none; measured: that figure is a published measurement, not the bus's theory. */
	double cpu_table_bandwidth_gbs;
	bool cpu_table_bandwidth_measured;
	bool this_host; /* hw is this host's own scan: its measurement stands for it */
};

/* What building a machine says of it (a GPU of unknown bandwidth, a working set taken from
 * a profile), one line each, for the answer's assumptions. */
#define PLAN_MACHINE_MAX_NOTES (SPEED_MAX_DEVICES + RF_MAX_DEVICES)
struct plan_machine_notes {
	int n;
	char line[PLAN_MACHINE_MAX_NOTES][PLAN_NOTE_LEN];
};

/* Whether hw's GPU g runs the machine's backend: every GPU with a known memory size except
 * Intel's integrated ones. */
bool plan_machine_gpu_used(const struct hw_gpu *g);

/* Fills dev (and totals, when not NULL) with the devices an estimate may use, in the scan's
 * order, and host with the host's budget; returns the number of devices. A device's budget is
 * its free memory less the reserve; unified memory's is the GPU's working-set share of the RAM
 * however the machine was described: without the RAM, the GPU's memory taken as the RAM and
 * its profile's rule (devices; NULL: macOS's default), noted. */
int plan_machine_devices(const struct hw_snapshot *hw, const struct device_table *devices,
			 struct rf_mem_device *dev /* OUT */, struct rf_mem_host *host /* OUT */,
			 int64_t *totals /* OUT */, struct plan_machine_notes *notes);

/* The hardware half of the speed model's inputs: backend, devices and host. A GPU whose
 * bandwidth nothing gives is noted (notes may be NULL). */
void plan_machine_speed(const struct plan_machine_source *m, struct speed_input *in /* OUT */,
			struct plan_machine_notes *notes);

/* Fills g with the GPUs vLLM can use (CUDA or ROCm; at most max); returns their number: 0
 * where one of them is a GPU vLLM cannot run on (NVIDIA before compute capability 7.0, an AMD
 * gfx target its ROCm build does not list). */
int plan_machine_vllm_gpus(const struct hw_snapshot *hw, struct vllm_gpu *g /* OUT */, int max);

/* True where something known stops vLLM on hw's GPUs (an NVIDIA GPU before compute capability
 * 7.0, an AMD gfx target vLLM's ROCm build does not list), with the reason in why (len bytes). */
bool plan_machine_vllm_unable(const struct hw_snapshot *hw, char *why /* OUT */, size_t len);

/* Fills pm with the machine as the planner takes it: devices and budgets, the speed model's
 * hardware half, threads, RAM and the GPUs vLLM can use. */
void plan_machine_build(const struct plan_machine_source *m, struct plan_machine *pm /* OUT */,
			struct plan_machine_notes *notes);

/* The GPUs a training run may use (plan_machine_devices's, in its order) with their budgets,
 * as the estimate's training answer takes them: gpu[k] is the index into hw->gpus of the
 * run's GPU k, *apple whether a GPU runs Metal. The budgets are plan_machine_devices's; a
 * machine with unified memory offloads nothing (its "host" is the same memory). */
void plan_machine_train_gpus(const struct plan_machine_source *m,
			     struct plan_train_gpus *t /* OUT */, int gpu[RF_MAX_DEVICES] /* OUT */,
			     bool *apple /* OUT */, struct plan_machine_notes *notes);

#endif
