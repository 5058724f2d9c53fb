/*
 * Boards with a device tree: NVIDIA Jetson / Tegra, whose integrated GPU shares the board's
 * RAM, and other boards (Raspberry Pi...) whose model string is all there is to say.
 *
 * Files: the device tree's `model` and `compatible`, read under /proc/device-tree (the kernel's
 * link to /sys/firmware/devicetree/base, which is tried second), and /etc/nv_tegra_release.
 * core/hw/hw_parse_tegra.h decides what the board is.
 *
 * Any device-tree model goes to host.soc (unless an earlier probe named the SoC). A Tegra
 * board gets one GPU: vendor nvidia, unified_memory true, named after the model, with the
 * architecture and CUDA compute capability of its chip. Its memory_total_bytes is MemTotal:
 * the GPU allocates from the same DRAM as the CPU (through nvmap), with no carve-out, so all
 * of RAM is what it can use; memory_free_bytes is memory.available_bytes, which the memory
 * probe has already capped at a container's limit, so the estimator's budget for the GPU never
 * exceeds what the process may take. The estimator must not add this memory to system RAM
 * (it is the same memory). A Raspberry Pi gets no GPU: VideoCore runs no CUDA, ROCm or Metal
 * compute that LLM runtimes use.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hw/hw_parse_tegra.h"
#include "server/detect/probes.h"
#include "server/detect/readfile.h"

#define DT_FILE_CAP 4096
#define RELEASE_FILE_CAP (64u << 10)

/* Reads a device-tree property from /proc/device-tree, else /sys/firmware/devicetree/base. */
static int read_dt(const struct rf_detect_opts *o, const char *name, char **buf, size_t *len)
{
	char path[96];
	int rc;

	snprintf(path, sizeof(path), "/proc/device-tree/%s", name);
	rc = rf_read_under_root(o->root, path, DT_FILE_CAP, buf, len);
	if (rc == RF_E_NOT_FOUND) {
		snprintf(path, sizeof(path), "/sys/firmware/devicetree/base/%s", name);
		rc = rf_read_under_root(o->root, path, DT_FILE_CAP, buf, len);
	}
	return rc;
}

void rf_probe_jetson(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	char *model = NULL, *compat = NULL, *release = NULL;
	size_t model_len = 0, compat_len = 0, release_len = 0;
	struct hw_tegra tg;
	struct hw_gpu *g;

	if (read_dt(o, "model", &model, &model_len) < 0)
		model = NULL;
	if (read_dt(o, "compatible", &compat, &compat_len) < 0)
		compat = NULL;
	if (rf_read_under_root(o->root, "/etc/nv_tegra_release", RELEASE_FILE_CAP, &release,
			       &release_len) < 0)
		release = NULL;
	if (!model && !compat && !release)
		return; /* no device tree: nothing for this probe */
	hw_parse_tegra(model, model_len, compat, compat_len, release, release_len, &tg);
	free(model);
	free(compat);
	free(release);

	if (tg.model[0] && !s->host.soc[0])
		hw_strlcpy(s->host.soc, tg.model, sizeof(s->host.soc));
	if (!tg.is_tegra)
		return;

	g = rf_snapshot_add_gpu(s);
	if (!g)
		return;
	hw_strlcpy(g->vendor, "nvidia", sizeof(g->vendor));
	if (tg.model[0])
		hw_strlcpy(g->name, tg.model, sizeof(g->name));
	else if (tg.family[0])
		snprintf(g->name, sizeof(g->name), "NVIDIA %s", tg.family);
	else
		hw_strlcpy(g->name, "NVIDIA Tegra", sizeof(g->name));
	g->unified_memory = true;
	hw_strlcpy(g->architecture, tg.gpu_architecture, sizeof(g->architecture));
	hw_strlcpy(g->compute_capability, tg.compute_capability, sizeof(g->compute_capability));
	g->memory_total_bytes = s->memory.total_bytes;
	g->memory_free_bytes = s->memory.available_bytes;
	if (g->memory_total_bytes < 0)
		hw_warn(s, "jetson: system memory unknown, so the GPU's memory is unknown");
	if (!tg.chip[0])
		hw_warn(s, "jetson: Tegra chip not named by the device tree; GPU architecture "
			   "unknown");
	hw_strlcpy(s->sources.gpu, "device-tree", sizeof(s->sources.gpu));
}
