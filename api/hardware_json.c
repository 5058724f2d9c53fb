/*
 * Rendering of struct hw_snapshot as the `hardware` JSON object (see hardware_json.h).
 * Field names are a contract with clients: add fields, never rename.
 */
#include "api/hardware_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hw/hw_fingerprint.h"

/* Adds an integer, or null when it is unknown (negative). Returns false when out of memory. */
static bool add_int_or_null(cJSON *o, const char *name, int64_t v)
{
	if (v < 0)
		return cJSON_AddNullToObject(o, name) != NULL;
	return cJSON_AddNumberToObject(o, name, (double)v) != NULL;
}

static bool add_double_or_null(cJSON *o, const char *name, double v)
{
	if (v < 0)
		return cJSON_AddNullToObject(o, name) != NULL;
	return cJSON_AddNumberToObject(o, name, v) != NULL;
}

static bool add_str_or_null(cJSON *o, const char *name, const char *s)
{
	if (!s || !*s)
		return cJSON_AddNullToObject(o, name) != NULL;
	return cJSON_AddStringToObject(o, name, s) != NULL;
}

void api_format_time_ms(int64_t ms, char *buf, size_t buflen)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	char day[32];

	if (ms < 0 || !gmtime_r(&secs, &tm) ||
	    strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(buf, buflen, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf, buflen, "%s.%03dZ", day, (int)(ms % 1000));
}

static cJSON *hw_host_json(const struct hw_host *h)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *c = o ? cJSON_AddObjectToObject(o, "container") : NULL;

	if (!c || !add_str_or_null(o, "os", h->os) || !add_str_or_null(o, "kernel", h->kernel) ||
	    !add_str_or_null(o, "arch", h->arch) || !add_str_or_null(o, "soc", h->soc) ||
	    !cJSON_AddBoolToObject(c, "detected", h->container.detected) ||
	    !add_int_or_null(c, "cgroup_memory_limit_bytes",
			     h->container.cgroup_memory_limit_bytes) ||
	    !add_double_or_null(c, "cpu_quota_cores", h->container.cpu_quota_cores)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static cJSON *hw_cpu_json(const struct hw_cpu *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *isa = o ? cJSON_AddArrayToObject(o, "isa") : NULL;

	if (!isa)
		goto fail;
	for (int i = 0; i < HW_ISA_COUNT; i++) {
		cJSON *s;
		if (!(c->isa & (1u << i)))
			continue;
		s = cJSON_CreateString(hw_isa_name(i));
		if (!s)
			goto fail;
		cJSON_AddItemToArray(isa, s);
	}
	if (!add_str_or_null(o, "model", c->model) || !add_str_or_null(o, "vendor", c->vendor) ||
	    !add_str_or_null(o, "arch", c->arch) || !add_int_or_null(o, "sockets", c->sockets) ||
	    !add_int_or_null(o, "physical_cores", c->physical_cores) ||
	    !add_int_or_null(o, "logical_cores", c->logical_cores) ||
	    !add_int_or_null(o, "performance_cores", c->performance_cores) ||
	    !add_int_or_null(o, "efficiency_cores", c->efficiency_cores) ||
	    !add_int_or_null(o, "numa_nodes", c->numa_nodes) ||
	    !add_double_or_null(o, "memory_bandwidth_gbs", c->memory_bandwidth_gbs))
		goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

bool api_host_kernels_json(cJSON *o, const struct hw_kernel_rate *k)
{
	cJSON *ks = cJSON_AddObjectToObject(o, "kernels");

	for (int i = 0; ks && i < HW_KERNEL_N; i++) {
		cJSON *one;
		if (!(k[i].gops_per_thread > 0))
			continue;
		one = cJSON_AddObjectToObject(ks, hw_kernel_name(i));
		if (!one || !cJSON_AddStringToObject(one, "isa", k[i].isa) ||
		    !cJSON_AddNumberToObject(one, "gops_per_thread", k[i].gops_per_thread) ||
		    !(k[i].avx2_gops_per_thread > 0 ?
			      cJSON_AddNumberToObject(one, "avx2_gops_per_thread",
						      k[i].avx2_gops_per_thread) != NULL :
			      cJSON_AddNullToObject(one, "avx2_gops_per_thread") != NULL))
			return false;
	}
	return ks != NULL;
}

/* The host measurement (null when there is none: described hardware, --no-host-bench). */
static bool hw_host_bench_json(cJSON *o, const struct hw_host_bench *b)
{
	char when[40];
	cJSON *hb;

	if (!b->measured)
		return cJSON_AddNullToObject(o, "host_bench") != NULL;
	api_format_time_ms(b->measured_at_ms, when, sizeof(when));
	hb = cJSON_AddObjectToObject(o, "host_bench");
	return hb && cJSON_AddStringToObject(hb, "measured_at", when) &&
	       cJSON_AddNumberToObject(hb, "threads", b->threads) &&
	       cJSON_AddNumberToObject(hb, "memory_bandwidth_gbs", b->memory_bandwidth_gbs) &&
	       cJSON_AddNumberToObject(hb, "int8_gops_per_thread", b->int8_gops_per_thread) &&
	       cJSON_AddNumberToObject(hb, "f32_gflops_per_thread", b->f32_gflops_per_thread) &&
	       cJSON_AddStringToObject(hb, "kernel_isa", b->kernel_isa) &&
	       api_host_kernels_json(hb, b->kernel) &&
	       cJSON_AddNumberToObject(hb, "duration_ms", b->duration_ms);
}

static cJSON *hw_gpu_json(const struct hw_gpu *g)
{
	cJSON *o = cJSON_CreateObject(), *from;

	if (!o || !cJSON_AddNumberToObject(o, "index", g->index) ||
	    !add_str_or_null(o, "vendor", g->vendor) || !add_str_or_null(o, "name", g->name) ||
	    !add_str_or_null(o, "uuid", g->uuid) ||
	    !add_str_or_null(o, "pci_bus_id", g->pci_bus_id) ||
	    !add_int_or_null(o, "memory_total_bytes", g->memory_total_bytes) ||
	    !add_int_or_null(o, "memory_free_bytes", g->memory_free_bytes) ||
	    !add_int_or_null(o, "memory_used_bytes", g->memory_used_bytes) ||
	    !cJSON_AddBoolToObject(o, "unified_memory", g->unified_memory) ||
	    !add_str_or_null(o, "compute_capability", g->compute_capability) ||
	    !add_str_or_null(o, "driver_version", g->driver_version) ||
	    !add_str_or_null(o, "cuda_version", g->cuda_version) ||
	    !add_str_or_null(o, "architecture", g->architecture) ||
	    !add_str_or_null(o, "pci_device_id", g->pci_device_id) ||
	    !add_int_or_null(o, "memory_gtt_bytes", g->memory_gtt_bytes) ||
	    !add_int_or_null(o, "memory_bus_width_bits", g->memory_bus_width_bits) ||
	    !add_int_or_null(o, "max_memory_clock_mhz", g->max_memory_clock_mhz))
		goto fail;
	if (g->has_mig) {
		cJSON *m = cJSON_AddObjectToObject(o, "mig");
		if (!m || !cJSON_AddBoolToObject(m, "enabled", g->mig.enabled) ||
		    !add_int_or_null(m, "instances", g->mig.instances))
			goto fail;
	} else if (!cJSON_AddNullToObject(o, "mig")) {
		goto fail;
	}
	if (!add_double_or_null(o, "memory_bandwidth_gbs", g->memory_bandwidth_gbs) ||
	    !add_double_or_null(o, "fp16_tflops", g->fp16_tflops) ||
	    !(from = cJSON_AddArrayToObject(o, "from_profile")))
		goto fail;
	for (int i = 0; i < HW_FROM_PROFILE_COUNT; i++) {
		cJSON *name;
		if (!(g->from_profile & (1u << i)))
			continue;
		if (!(name = cJSON_CreateString(hw_from_profile_name(i))))
			goto fail;
		cJSON_AddItemToArray(from, name);
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

cJSON *api_hardware_to_cjson(const struct hw_snapshot *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *part, *arr, *src;
	char when[40];
	char fingerprint[HW_FINGERPRINT_LEN + 1];

	if (!o)
		return NULL;
	if (!(part = hw_host_json(&s->host)))
		goto fail;
	cJSON_AddItemToObject(o, "host", part);
	if (!(part = hw_cpu_json(&s->cpu)))
		goto fail;
	cJSON_AddItemToObject(o, "cpu", part);
	part = cJSON_AddObjectToObject(o, "memory");
	if (!part || !add_int_or_null(part, "total_bytes", s->memory.total_bytes) ||
	    !add_int_or_null(part, "available_bytes", s->memory.available_bytes))
		goto fail;
	if (!(arr = cJSON_AddArrayToObject(o, "gpus")))
		goto fail;
	for (int i = 0; i < s->n_gpus && i < HW_MAX_GPUS; i++) {
		cJSON *g = hw_gpu_json(&s->gpus[i]);
		if (!g)
			goto fail;
		cJSON_AddItemToArray(arr, g);
	}
	if (!cJSON_AddStringToObject(o, "platform", s->platform) ||
	    !cJSON_AddStringToObject(o, "backend", s->backend) ||
	    !(arr = cJSON_AddArrayToObject(o, "capabilities")))
		goto fail;
	/* Capabilities are derived, so every renderer agrees: the backend first, then ISA. */
	{
		cJSON *cap = cJSON_CreateString(s->backend);
		if (!cap)
			goto fail;
		cJSON_AddItemToArray(arr, cap);
		for (int i = 0; i < HW_ISA_COUNT; i++) {
			if (!(s->cpu.isa & (1u << i)))
				continue;
			if (!(cap = cJSON_CreateString(hw_isa_name(i))))
				goto fail;
			cJSON_AddItemToArray(arr, cap);
		}
	}
	api_format_time_ms(s->scanned_at_ms, when, sizeof(when));
	hw_fingerprint(s, fingerprint, sizeof(fingerprint));
	if (!add_str_or_null(o, "profile_id", s->profile_id) ||
	    !cJSON_AddStringToObject(o, "fingerprint", fingerprint) ||
	    !add_str_or_null(o, "compute_profile", s->compute_profile) ||
	    !cJSON_AddStringToObject(o, "scanned_at", when) ||
	    !add_double_or_null(o, "scan_duration_ms", s->scan_duration_ms) ||
	    !(src = cJSON_AddObjectToObject(o, "sources")) ||
	    !cJSON_AddStringToObject(src, "cpu", s->sources.cpu) ||
	    !cJSON_AddStringToObject(src, "memory", s->sources.memory) ||
	    !cJSON_AddStringToObject(src, "gpu", s->sources.gpu) ||
	    !hw_host_bench_json(o, &s->host_bench) ||
	    !(arr = cJSON_AddArrayToObject(o, "warnings")))
		goto fail;
	for (int i = 0; i < s->n_warnings && i < HW_MAX_WARNINGS; i++) {
		cJSON *w = cJSON_CreateString(s->warnings[i]);
		if (!w)
			goto fail;
		cJSON_AddItemToArray(arr, w);
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

char *api_hardware_render(const struct hw_snapshot *s, size_t *len)
{
	cJSON *o = api_hardware_to_cjson(s);
	char *json = o ? cJSON_PrintUnformatted(o) : NULL;

	cJSON_Delete(o);
	if (json && len)
		*len = strlen(json);
	return json;
}
