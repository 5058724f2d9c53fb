/*
 * Fuzz target: the NVIDIA probe's captures (core/hw/hw_parse_nvidia.c): the first byte picks the
 * nvidia-smi --query-gpu field list the probe asks for (its fallbacks, or a short one),
 * the rest is parsed as that CSV, as `nvidia-smi -L` output and as the NVML child's record.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/hw/hw.h"
#include "core/hw/hw_parse_nvidia.h"
#include "server/detect/probes.h"

static void check(const struct hw_nvidia_report *r)
{
	if (r->n_gpus < 0 || r->n_gpus > HW_MAX_GPUS)
		abort();
	for (int i = 0; i < r->n_gpus; i++)
		if (r->gpus[i].memory_total_bytes < HW_UNKNOWN)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw_nvidia_report r;
	int mig[HW_MAX_GPUS];
	const char *text = (const char *)data + 1, *fields = "name,memory.total,memory.free";

	if (size < 1 || size > HW_NVIDIA_OUTPUT_CAP)
		return 0;
	if (data[0] % 4 < RF_NVIDIA_SMI_QUERIES)
		fields = rf_nvidia_smi_queries[data[0] % 4];

	if (hw_parse_nvidia_smi_csv(text, size - 1, fields, &r) == 0)
		check(&r);
	(void)hw_parse_nvidia_smi_list(text, size - 1, mig, HW_MAX_GPUS);
	(void)hw_parse_nvml_record(text, size - 1, &r);
	check(&r);
	return 0;
}
