/*
 * Fuzz target: the DRM and KFD sysfs files of AMD and Intel GPUs (core/hw/hw_parse_amd.c). The
 * input stands for the files of one card, separated by FUZZ_SEP, in this order: device/vendor,
 * device/device, device/uevent, mem_info_vram_total, mem_info_vram_used, mem_info_gtt_total,
 * pp_dpm_mclk, and one KFD node's properties; then the card becomes a GPU as probe_amd.c
 * makes it, both as amdgpu and as an Intel card.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/hw/hw.h"
#include "core/hw/hw_parse_amd.h"
#include "server/detect/probes.h"
#include "tests/fuzz/fuzz.h"

static int64_t u64_or_unknown(const struct fuzz_part *p)
{
	uint64_t v;
	return hw_parse_sysfs_u64(p->p, p->len, HW_GPU_MEM_MAX, &v) == 0 ? (int64_t)v : HW_UNKNOWN;
}

static void check(const struct hw_gpu *g)
{
	if (g->memory_total_bytes < HW_UNKNOWN || g->memory_free_bytes < HW_UNKNOWN ||
	    g->memory_used_bytes < HW_UNKNOWN)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw_snapshot s;
	struct fuzz_part f[8];
	struct hw_drm_card c;
	struct hw_kfd_node kfd[2];
	struct hw_memory ram = {INT64_C(64) << 30, INT64_C(32) << 30};
	char arch[32];
	int64_t domain, loc;
	int k, mhz;
	struct hw_gpu *g;

	fuzz_split(data, size, f, 8);
	hw_drm_card_init(&c);
	(void)hw_parse_sysfs_hex(f[0].p, f[0].len, 0xffff, &c.vendor_id);
	(void)hw_parse_sysfs_hex(f[1].p, f[1].len, 0xffff, &c.device_id);
	(void)hw_parse_drm_uevent(f[2].p, f[2].len, &c);
	c.vram_total = u64_or_unknown(&f[3]);
	c.vram_used = u64_or_unknown(&f[4]);
	c.gtt_total = u64_or_unknown(&f[5]);
	c.local_mem_total = c.gtt_total;
	mhz = hw_parse_amd_dpm_max_mhz(f[6].p, f[6].len);
	c.max_memory_clock_mhz = mhz > 0 ? mhz : HW_UNKNOWN;
	hw_kfd_node_init(&kfd[0]);
	hw_kfd_node_init(&kfd[1]);
	kfd[0].gfx_target_version = 0; /* a CPU node, which never matches */
	if (hw_parse_kfd_properties(f[7].p, f[7].len, &kfd[1]) == 0)
		(void)hw_amd_gfx_arch(kfd[1].gfx_target_version, arch, sizeof(arch));
	(void)hw_pci_slot_location(c.pci_slot, &domain, &loc);
	k = hw_kfd_match(&c, kfd, 2, true);
	if (k != -1 && k != 1)
		abort();
	(void)hw_amd_device_name(c.device_id, NULL);
	(void)hw_intel_device_name(c.device_id, NULL);

	hw_snapshot_init(&s);
	s.memory = ram;
	g = rf_snapshot_add_gpu(&s);
	hw_amd_fill_gpu(&c, k >= 0 ? &kfd[k] : NULL, &s.memory, &s, g);
	check(g);
	g = rf_snapshot_add_gpu(&s);
	hw_intel_fill_gpu(&c, &s, g);
	check(g);
	return 0;
}
