/*
 * The machine as the fine-tuning planner (core/plan/plan_finetune.h) takes it, from a resolved
 * snapshot: the GPU that trains alone (the largest budget, as /api/estimate picks it), every
 * GPU's budget for runs spread over several, the host RAM a run may offload to, bf16 support,
 * the dense 16-bit compute rate and the training speed's device class. One function, so that
 * /api/finetune/detect, /api/recommend and the hardware sweep (core/plan/plan_hardware.h)
 * plan on the same device. Pure: no I/O.
 */
#ifndef RIGFIT_CORE_PLAN_FT_MACHINE_H
#define RIGFIT_CORE_PLAN_FT_MACHINE_H

#include "core/fit/train_speed.h"
#include "core/hw/device.h"
#include "core/hw/hw.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_finetune.h"

/* Returns the training speed's class of device profile p (consumer for NULL or unknown
 * classes; laptops are consumer cards). */
enum train_device_class plan_ft_device_class(const struct device_profile *p);

/* Returns true when GPU g computes in bf16: NVIDIA compute capability 8.0 or later, AMD CDNA 2
 * or later, Apple silicon; what the scan does not say is taken from its profile in devices
 * (NULL: none). */
bool plan_ft_gpu_bf16(const struct hw_gpu *g, const struct device_table *devices);

/* Writes d, the machine hw as training sees it, with the budgets the resolver gave it in pm
 * (its devices are hw's GPUs that run the backend, in the scan's order: free memory less the
 * reserve, for unified memory the GPU's share of the RAM; its host budget), so that training
 * and inference plan within the same figures (devices: the profiles that complete what the
 * scan does not say; NULL: none). Without a GPU, d->backend is PLAN_FT_BACKEND_NONE. Unified
 * memory trains on one device and offloads nothing (the "host" is the same memory). */
void plan_ft_machine(const struct hw_snapshot *hw, const struct plan_machine *pm,
		     const struct device_table *devices, struct plan_ft_device *d /* OUT */);

#endif
