/*
 * Parsing a client's hardware object (see hardware_input.h). Output-only fields of the scan
 * (sources, warnings, capabilities, scan times) are accepted and ignored so that a pasted scan
 * round-trips; fields that describe the machine are checked against caps that no real machine
 * exceeds.
 */
#include "api/hardware_input.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/hw/classify.h"
#include "core/err.h"

#define MAX_BYTES 1e16 /* 10 PB: far above any device or host */
#define MAX_CORES 65536

struct hin {
	struct api_reply *reply;
	char path[256];
};

static int hin_err(struct hin *h, const char *name, const char *what)
{
	char field[320];

	snprintf(field, sizeof(field), "%s.%s", h->path, name);
	return api_error(h->reply, RF_E_INVALID_VALUE, field, "%s %s", field, what);
}

/* Reads an optional integer in [min, max]; JSON null leaves *out unchanged (unknown). */
static int hin_int(struct hin *h, const cJSON *o, const char *name, double min, double max,
		   int64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    floor(v->valuedouble) != v->valuedouble)
		return hin_err(h, name, "must be an integer");
	if (v->valuedouble < min || v->valuedouble > max) {
		char what[96];
		snprintf(what, sizeof(what), "must be from %.0f to %.0f", min, max);
		return hin_err(h, name, what);
	}
	*out = (int64_t)v->valuedouble;
	return 1;
}

static int hin_int32(struct hin *h, const cJSON *o, const char *name, double min, double max,
		     int *out)
{
	int64_t v = *out;
	int rc = hin_int(h, o, name, min, max, &v);
	if (rc > 0)
		*out = (int)v;
	return rc;
}

static int hin_num(struct hin *h, const cJSON *o, const char *name, double min, double max,
		   double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return hin_err(h, name, "must be a number");
	if (v->valuedouble < min || v->valuedouble > max)
		return hin_err(h, name, "is out of range");
	*out = v->valuedouble;
	return 1;
}

static int hin_bool(struct hin *h, const cJSON *o, const char *name, bool *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsBool(v))
		return hin_err(h, name, "must be true or false");
	*out = cJSON_IsTrue(v);
	return 1;
}

static int hin_str(struct hin *h, const cJSON *o, const char *name, char *dst, size_t size)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsString(v) || !v->valuestring)
		return hin_err(h, name, "must be a string");
	if (strlen(v->valuestring) >= size)
		return hin_err(h, name, "is too long");
	memcpy(dst, v->valuestring, strlen(v->valuestring) + 1);
	return 1;
}

/* Rejects keys of o that are not in allowed (NULL-terminated). */
static int hin_known(struct hin *h, const cJSON *o, const char *const *allowed)
{
	const cJSON *v;

	if (!cJSON_IsObject(o)) {
		char field[256];
		snprintf(field, sizeof(field), "%s", h->path);
		return api_error(h->reply, RF_E_INVALID_VALUE, field, "%s must be an object",
				 field);
	}
	cJSON_ArrayForEach(v, o)
	{
		bool ok = false;
		for (int i = 0; allowed[i]; i++)
			if (v->string && strcmp(v->string, allowed[i]) == 0)
				ok = true;
		if (!ok) {
			char field[320], name[64];
			size_t k = 0;
			for (const char *p = v->string ? v->string : ""; *p && k < 60; p++)
				name[k++] = (*p >= 0x20 && *p < 0x7f) ? *p : '?';
			name[k] = '\0';
			snprintf(field, sizeof(field), "%s.%s", h->path, name);
			return api_error(h->reply, RF_E_UNKNOWN_FIELD, field, "unknown field %s",
					 field);
		}
	}
	return 0;
}

#define TRY(x)                                                                                     \
	do {                                                                                       \
		int rc_ = (x);                                                                     \
		if (rc_ < 0)                                                                       \
			return rc_;                                                                \
	} while (0)

/* Reads from_profile: an array of the field names a device profile filled (a pasted scan
 * keeps saying which of its facts were not measured). */
static int hin_from_profile(struct hin *h, const cJSON *o, unsigned *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "from_profile"), *e;

	if (!v || cJSON_IsNull(v))
		return 0;
	if (!cJSON_IsArray(v))
		return hin_err(h, "from_profile", "must be an array of field names");
	cJSON_ArrayForEach(e, v)
	{
		int bit = -1;
		for (int i = 0; i < HW_FROM_PROFILE_COUNT && cJSON_IsString(e); i++)
			if (strcmp(e->valuestring, hw_from_profile_name(i)) == 0)
				bit = i;
		if (bit < 0)
			return hin_err(h, "from_profile",
				       "must name architecture, memory_bus_width_bits, "
				       "memory_bandwidth_gbs or fp16_tflops");
		*out |= 1u << bit;
	}
	return 1;
}

static int hin_gpu(struct hin *h, const cJSON *o, struct hw_gpu *g)
{
	static const char *const keys[] = {"index",
					   "vendor",
					   "name",
					   "uuid",
					   "pci_bus_id",
					   "memory_total_bytes",
					   "memory_free_bytes",
					   "memory_used_bytes",
					   "unified_memory",
					   "compute_capability",
					   "driver_version",
					   "cuda_version",
					   "architecture",
					   "pci_device_id",
					   "memory_gtt_bytes",
					   "memory_bus_width_bits",
					   "max_memory_clock_mhz",
					   "mig",
					   "memory_bandwidth_gbs",
					   "fp16_tflops",
					   "from_profile",
					   "count",
					   NULL};
	static const char *const vendors[] = {"nvidia", "amd", "apple", "intel", NULL};
	bool vendor_ok = false;

	TRY(hin_known(h, o, keys));
	TRY(hin_str(h, o, "vendor", g->vendor, sizeof(g->vendor)));
	for (int i = 0; vendors[i]; i++)
		if (strcmp(g->vendor, vendors[i]) == 0)
			vendor_ok = true;
	if (g->vendor[0] && !vendor_ok)
		return hin_err(h, "vendor", "must be nvidia, amd, apple or intel");
	TRY(hin_str(h, o, "name", g->name, sizeof(g->name)));
	TRY(hin_str(h, o, "uuid", g->uuid, sizeof(g->uuid)));
	TRY(hin_str(h, o, "pci_bus_id", g->pci_bus_id, sizeof(g->pci_bus_id)));
	TRY(hin_int(h, o, "memory_total_bytes", 1, MAX_BYTES, &g->memory_total_bytes));
	TRY(hin_int(h, o, "memory_free_bytes", 0, MAX_BYTES, &g->memory_free_bytes));
	TRY(hin_int(h, o, "memory_used_bytes", 0, MAX_BYTES, &g->memory_used_bytes));
	TRY(hin_int(h, o, "memory_gtt_bytes", 0, MAX_BYTES, &g->memory_gtt_bytes));
	TRY(hin_bool(h, o, "unified_memory", &g->unified_memory));
	TRY(hin_str(h, o, "compute_capability", g->compute_capability,
		    sizeof(g->compute_capability)));
	TRY(hin_str(h, o, "driver_version", g->driver_version, sizeof(g->driver_version)));
	TRY(hin_str(h, o, "cuda_version", g->cuda_version, sizeof(g->cuda_version)));
	TRY(hin_str(h, o, "architecture", g->architecture, sizeof(g->architecture)));
	TRY(hin_str(h, o, "pci_device_id", g->pci_device_id, sizeof(g->pci_device_id)));
	TRY(hin_int32(h, o, "memory_bus_width_bits", 1, 65536, &g->memory_bus_width_bits));
	TRY(hin_int32(h, o, "max_memory_clock_mhz", 1, 1000000, &g->max_memory_clock_mhz));
	TRY(hin_num(h, o, "memory_bandwidth_gbs", 0.001, 1e6, &g->memory_bandwidth_gbs));
	TRY(hin_num(h, o, "fp16_tflops", 0.001, 1e6, &g->fp16_tflops));
	TRY(hin_from_profile(h, o, &g->from_profile));
	if (g->memory_free_bytes > g->memory_total_bytes && g->memory_total_bytes >= 0)
		return hin_err(h, "memory_free_bytes", "is larger than memory_total_bytes");
	if (g->memory_free_bytes < 0 && g->memory_total_bytes >= 0)
		g->memory_free_bytes = g->memory_used_bytes >= 0 && g->memory_used_bytes <=
									    g->memory_total_bytes ?
					       g->memory_total_bytes - g->memory_used_bytes :
					       g->memory_total_bytes;
	if (!g->name[0] && g->memory_total_bytes < 0)
		return hin_err(h, "name", "or memory_total_bytes is needed to know the GPU");
	return 0;
}

static void gpu_init(struct hw_gpu *g, int index)
{
	memset(g, 0, sizeof(*g));
	g->index = index;
	g->memory_total_bytes = g->memory_free_bytes = g->memory_used_bytes = HW_UNKNOWN;
	g->memory_gtt_bytes = HW_UNKNOWN;
	g->memory_bus_width_bits = g->max_memory_clock_mhz = HW_UNKNOWN;
	g->memory_bandwidth_gbs = g->fp16_tflops = -1;
}

int api_hardware_from_json(const cJSON *obj, const char *field_prefix, struct hw_snapshot *out,
			   struct api_reply *reply)
{
	static const char *const top[] = {"host",         "cpu",
					  "memory",       "gpus",
					  "platform",     "backend",
					  "capabilities", "profile_id",
					  "fingerprint",  "compute_profile",
					  "scanned_at",   "scan_duration_ms",
					  "sources",      "host_bench",
					  "warnings",     NULL};
	static const char *const mem_keys[] = {"total_bytes", "available_bytes", NULL};
	static const char *const cpu_keys[] = {"model",
					       "vendor",
					       "arch",
					       "sockets",
					       "physical_cores",
					       "logical_cores",
					       "performance_cores",
					       "efficiency_cores",
					       "isa",
					       "numa_nodes",
					       "memory_bandwidth_gbs",
					       NULL};
	static const char *const host_keys[] = {"os", "kernel", "arch", "soc", "container", NULL};
	static const char *const cont_keys[] = {"detected", "cgroup_memory_limit_bytes",
						"cpu_quota_cores", NULL};
	struct hin h = {reply, ""};
	const cJSON *part, *g;

	hw_snapshot_init(out);
	snprintf(h.path, sizeof(h.path), "%s", field_prefix);
	TRY(hin_known(&h, obj, top));

	if ((part = cJSON_GetObjectItemCaseSensitive(obj, "memory")) && !cJSON_IsNull(part)) {
		snprintf(h.path, sizeof(h.path), "%s.memory", field_prefix);
		TRY(hin_known(&h, part, mem_keys));
		TRY(hin_int(&h, part, "total_bytes", 1, MAX_BYTES, &out->memory.total_bytes));
		TRY(hin_int(&h, part, "available_bytes", 0, MAX_BYTES,
			    &out->memory.available_bytes));
		if (out->memory.total_bytes >= 0 &&
		    out->memory.available_bytes > out->memory.total_bytes)
			return hin_err(&h, "available_bytes", "is larger than total_bytes");
		if (out->memory.available_bytes < 0)
			out->memory.available_bytes = out->memory.total_bytes;
	}
	if ((part = cJSON_GetObjectItemCaseSensitive(obj, "cpu")) && !cJSON_IsNull(part)) {
		snprintf(h.path, sizeof(h.path), "%s.cpu", field_prefix);
		TRY(hin_known(&h, part, cpu_keys));
		TRY(hin_str(&h, part, "model", out->cpu.model, sizeof(out->cpu.model)));
		TRY(hin_str(&h, part, "vendor", out->cpu.vendor, sizeof(out->cpu.vendor)));
		TRY(hin_str(&h, part, "arch", out->cpu.arch, sizeof(out->cpu.arch)));
		TRY(hin_int32(&h, part, "sockets", 1, 64, &out->cpu.sockets));
		TRY(hin_int32(&h, part, "physical_cores", 1, MAX_CORES, &out->cpu.physical_cores));
		TRY(hin_int32(&h, part, "logical_cores", 1, MAX_CORES, &out->cpu.logical_cores));
		TRY(hin_int32(&h, part, "performance_cores", 0, MAX_CORES,
			      &out->cpu.performance_cores));
		TRY(hin_int32(&h, part, "efficiency_cores", 0, MAX_CORES,
			      &out->cpu.efficiency_cores));
		TRY(hin_int32(&h, part, "numa_nodes", 1, 1024, &out->cpu.numa_nodes));
		TRY(hin_num(&h, part, "memory_bandwidth_gbs", 0.001, 1e5,
			    &out->cpu.memory_bandwidth_gbs));
		if ((g = cJSON_GetObjectItemCaseSensitive(part, "isa")) && !cJSON_IsNull(g)) {
			const cJSON *flag;
			if (!cJSON_IsArray(g))
				return hin_err(&h, "isa", "must be an array of strings");
			cJSON_ArrayForEach(flag, g)
			{
				bool known = false;
				if (!cJSON_IsString(flag))
					return hin_err(&h, "isa", "must be an array of strings");
				for (int i = 0; i < HW_ISA_COUNT; i++)
					if (strcmp(flag->valuestring, hw_isa_name(i)) == 0) {
						out->cpu.isa |= 1u << i;
						known = true;
					}
				if (!known)
					return hin_err(&h, "isa",
						       "names an unknown instruction set");
			}
		}
	}
	if ((part = cJSON_GetObjectItemCaseSensitive(obj, "host")) && !cJSON_IsNull(part)) {
		const cJSON *c;
		snprintf(h.path, sizeof(h.path), "%s.host", field_prefix);
		TRY(hin_known(&h, part, host_keys));
		TRY(hin_str(&h, part, "os", out->host.os, sizeof(out->host.os)));
		TRY(hin_str(&h, part, "kernel", out->host.kernel, sizeof(out->host.kernel)));
		TRY(hin_str(&h, part, "arch", out->host.arch, sizeof(out->host.arch)));
		TRY(hin_str(&h, part, "soc", out->host.soc, sizeof(out->host.soc)));
		if ((c = cJSON_GetObjectItemCaseSensitive(part, "container")) && !cJSON_IsNull(c)) {
			snprintf(h.path, sizeof(h.path), "%s.host.container", field_prefix);
			TRY(hin_known(&h, c, cont_keys));
			TRY(hin_bool(&h, c, "detected", &out->host.container.detected));
			TRY(hin_int(&h, c, "cgroup_memory_limit_bytes", 1, MAX_BYTES,
				    &out->host.container.cgroup_memory_limit_bytes));
			TRY(hin_num(&h, c, "cpu_quota_cores", 0.001, MAX_CORES,
				    &out->host.container.cpu_quota_cores));
		}
	}
	if ((part = cJSON_GetObjectItemCaseSensitive(obj, "gpus")) && !cJSON_IsNull(part)) {
		int i = 0;
		if (!cJSON_IsArray(part)) {
			snprintf(h.path, sizeof(h.path), "%s", field_prefix);
			return hin_err(&h, "gpus", "must be an array");
		}
		cJSON_ArrayForEach(g, part)
		{
			int64_t count = 1;
			snprintf(h.path, sizeof(h.path), "%s.gpus[%d]", field_prefix, i);
			if (!cJSON_IsObject(g))
				return api_error(reply, RF_E_INVALID_VALUE, h.path,
						 "%s must be an object", h.path);
			/* "count": N describes N identical devices in one entry. */
			TRY(hin_int(&h, g, "count", 1, HW_MAX_GPUS, &count));
			if (out->n_gpus + count > HW_MAX_GPUS) {
				snprintf(h.path, sizeof(h.path), "%s.gpus", field_prefix);
				return api_error(reply, RF_E_INVALID_VALUE, h.path,
						 "at most %d GPUs can be described", HW_MAX_GPUS);
			}
			gpu_init(&out->gpus[out->n_gpus], out->n_gpus);
			TRY(hin_gpu(&h, g, &out->gpus[out->n_gpus]));
			for (int64_t k = 1; k < count; k++) {
				out->gpus[out->n_gpus + k] = out->gpus[out->n_gpus];
				out->gpus[out->n_gpus + k].index = out->n_gpus + (int)k;
			}
			out->n_gpus += (int)count;
			i++;
		}
	}
	hw_strlcpy(out->sources.cpu, "request", sizeof(out->sources.cpu));
	hw_strlcpy(out->sources.memory, "request", sizeof(out->sources.memory));
	hw_strlcpy(out->sources.gpu, out->n_gpus ? "request" : "none", sizeof(out->sources.gpu));
	hw_classify(out);
	return 0;
}
