/*
 * The scan (see detect.h): runs the probes of probes.h in order, then derives what follows
 * from them (platform, backend, tier) with core/hw/classify.c, and times the whole.
 */
#include "server/detect/detect.h"

#include <string.h>
#include <time.h>

#include "core/hw/classify.h"
#include "core/err.h"
#include "server/detect/probes.h"

bool rf_detect_is_live(const struct rf_detect_opts *o)
{
	return !o || !o->root || !*o->root || strcmp(o->root, "/") == 0;
}

struct hw_gpu *rf_snapshot_add_gpu(struct hw_snapshot *s)
{
	struct hw_gpu *g;

	if (s->n_gpus >= HW_MAX_GPUS) {
		hw_warn(s, "gpu: more than %d GPUs; the rest are not reported", HW_MAX_GPUS);
		return NULL;
	}
	g = &s->gpus[s->n_gpus];
	memset(g, 0, sizeof(*g));
	g->index = s->n_gpus++;
	g->memory_total_bytes = HW_UNKNOWN;
	g->memory_free_bytes = HW_UNKNOWN;
	g->memory_used_bytes = HW_UNKNOWN;
	g->memory_gtt_bytes = HW_UNKNOWN;
	g->memory_bus_width_bits = HW_UNKNOWN;
	g->max_memory_clock_mhz = HW_UNKNOWN;
	g->memory_bandwidth_gbs = -1;
	g->fp16_tflops = -1;
	return g;
}

int rf_detect_scan(const struct rf_detect_opts *opts, struct hw_snapshot *out)
{
	struct rf_detect_opts o = opts ? *opts : (struct rf_detect_opts){0};
	struct timespec t0, t1, now;

	if (!o.root || !*o.root)
		o.root = "/";
	if (o.probe_timeout_ms <= 0)
		o.probe_timeout_ms = RF_PROBE_TIMEOUT_MS_DEFAULT;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	hw_snapshot_init(out);
	rf_probe_host(&o, out);
	rf_probe_apple(&o, out);
	rf_probe_memory(&o, out);
	rf_probe_cpu(&o, out);
	if (!out->cpu.arch[0])
		hw_strlcpy(out->cpu.arch, out->host.arch, sizeof(out->cpu.arch));
	rf_probe_jetson(&o, out);
	rf_probe_nvidia(&o, out);
	rf_probe_amd(&o, out);
	hw_classify(out);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_REALTIME, &now);
	out->scanned_at_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	out->scan_duration_ms =
		(double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	return 0;
}
