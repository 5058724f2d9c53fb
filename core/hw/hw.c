/*
 * Helpers over the plain hardware data of hw.h: initialisation, warnings, ISA and kernel class
 * names.
 */
#include "core/hw/hw.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

static const char *const hw_isa_names[] = {
#define HW_ISA_NAME_(name, str) str,
	HW_ISA_TABLE(HW_ISA_NAME_)
#undef HW_ISA_NAME_
};

const char *hw_isa_name(int i)
{
	if (i < 0 || i >= HW_ISA_COUNT)
		return NULL;
	return hw_isa_names[i];
}

static const char *const hw_kernel_names[HW_KERNEL_N] = {
	[HW_KERNEL_Q4_0] = "q4_0",
	[HW_KERNEL_Q8_0] = "q8_0",
	[HW_KERNEL_F16] = "f16",
	[HW_KERNEL_BF16] = "bf16",
};

const char *hw_kernel_name(int k)
{
	return k >= 0 && k < HW_KERNEL_N ? hw_kernel_names[k] : NULL;
}

int hw_kernel_from_name(const char *name)
{
	for (int k = 0; name && k < HW_KERNEL_N; k++)
		if (strcmp(name, hw_kernel_names[k]) == 0)
			return k;
	return -1;
}

static const char *const hw_from_profile_names[] = {
#define HW_FROM_PROFILE_NAME_(name, str) str,
	HW_FROM_PROFILE_TABLE(HW_FROM_PROFILE_NAME_)
#undef HW_FROM_PROFILE_NAME_
};

const char *hw_from_profile_name(int i)
{
	if (i < 0 || i >= HW_FROM_PROFILE_COUNT)
		return NULL;
	return hw_from_profile_names[i];
}

void hw_snapshot_init(struct hw_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	s->cpu.sockets = HW_UNKNOWN;
	s->cpu.physical_cores = HW_UNKNOWN;
	s->cpu.logical_cores = HW_UNKNOWN;
	s->cpu.numa_nodes = HW_UNKNOWN;
	s->cpu.memory_bandwidth_gbs = -1.0;
	s->memory.total_bytes = HW_UNKNOWN;
	s->memory.available_bytes = HW_UNKNOWN;
	s->host.container.cgroup_memory_limit_bytes = HW_UNKNOWN;
	s->host.container.cpu_quota_cores = -1.0;
	s->scan_duration_ms = -1.0;
	hw_strlcpy(s->platform, "cpu", sizeof(s->platform));
	hw_strlcpy(s->backend, "cpu", sizeof(s->backend));
	hw_strlcpy(s->sources.cpu, "none", sizeof(s->sources.cpu));
	hw_strlcpy(s->sources.memory, "none", sizeof(s->sources.memory));
	hw_strlcpy(s->sources.gpu, "none", sizeof(s->sources.gpu));
}

void hw_warn(struct hw_snapshot *s, const char *fmt, ...)
{
	va_list ap;

	if (s->n_warnings >= HW_MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	vsnprintf(s->warnings[s->n_warnings], HW_WARNING_LEN, fmt, ap);
	va_end(ap);
	s->n_warnings++;
}

int hw_strlcpy(char *dst, const char *src, size_t dstlen)
{
	size_t n;

	if (dstlen == 0)
		return RF_E_TOO_LARGE;
	n = strlen(src);
	if (n >= dstlen) {
		memcpy(dst, src, dstlen - 1);
		dst[dstlen - 1] = '\0';
		return RF_E_TOO_LARGE;
	}
	memcpy(dst, src, n + 1);
	return 0;
}
