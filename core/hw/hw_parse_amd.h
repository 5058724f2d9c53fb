/*
 * GPUs that Linux exposes through DRM sysfs and that no vendor library reports: AMD (amdgpu,
 * plus the KFD compute topology) and Intel (i915, xe). server/detect/probe_amd.c reads the
 * files of each /sys/class/drm/cardN and each /sys/class/kfd/kfd/topology/nodes/N; the pure
 * functions here parse those texts and turn one card into a struct hw_gpu. Nothing here
 * invents a capacity: the PCI-id tables give names and the APU flag only.
 *
 * The files, as the kernel writes them:
 *   device/vendor, device/device      "0x1002\n"  (PCI ids, hex)
 *   device/uevent                     "DRIVER=amdgpu\nPCI_ID=1002:687F\nPCI_SLOT_NAME=0000:09:00.0\n..."
 *   device/mem_info_vram_total, _used, mem_info_gtt_total, _used   bytes, decimal
 *   device/product_name               the board FRU name; empty on consumer cards
 *   device/unique_id                  16 hex digits (absent on most consumer cards)
 *   device/pp_dpm_mclk                "0: 167Mhz *\n1: 500Mhz\n..." (memory clock levels)
 *   cardN/lmem_total_bytes            Intel's out-of-tree i915 (DKMS): local memory, bytes
 *   device/tileN/physical_vram_size_bytes   Intel xe: VRAM per tile, bytes
 *   kfd/topology/nodes/N/properties   "key value" lines: gfx_target_version 90010, vendor_id
 *                                     4098, device_id, location_id, domain, drm_render_minor,
 *                                     cpu_cores_count, simd_count... local_mem_size is always 0
 *                                     on current kernels (memory is under mem_banks/), so it is
 *                                     not used.
 */
#ifndef RIGFIT_CORE_HW_PARSE_AMD_H
#define RIGFIT_CORE_HW_PARSE_AMD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hw/hw.h"

#define HW_PCI_VENDOR_AMD 0x1002u
#define HW_PCI_VENDOR_INTEL 0x8086u

/* Largest byte count accepted from a memory file: 2^50 (1 PiB), far above any GPU, and small
 * enough that sums of a few such values cannot overflow int64. */
#define HW_GPU_MEM_MAX (UINT64_C(1) << 50)

/* A VRAM carve-out at most this large, with a larger GTT, marks an AMD GPU whose PCI id is not
 * in the tables as integrated (see hw_amd_fill_gpu). */
#define HW_AMD_APU_CARVEOUT_MAX (INT64_C(512) << 20)

/* What the probe read for one /sys/class/drm/cardN. Integers are HW_UNKNOWN when the file was
 * absent or unreadable, strings "" when absent. */
struct hw_drm_card {
	uint32_t vendor_id; /* 0 when unknown */
	uint32_t device_id; /* 0 when unknown */
	char driver[32];    /* uevent DRIVER= */
	char pci_slot[32];  /* uevent PCI_SLOT_NAME=, "0000:09:00.0" */
	char product_name[HW_NAME_LEN];
	char unique_id[40];
	int render_minor; /* N of the renderDN beside cardN under device/drm; HW_UNKNOWN */
	int64_t vram_total;
	int64_t vram_used;
	int64_t gtt_total;
	int64_t gtt_used;
	int64_t local_mem_total; /* Intel: lmem_total_bytes or the sum of xe tiles */
	int max_memory_clock_mhz;
};

/* One node of the KFD topology (a CPU or a GPU agent). Fields are HW_UNKNOWN when the key was
 * absent. */
struct hw_kfd_node {
	int64_t gfx_target_version; /* 0 for a CPU node */
	int64_t cpu_cores_count;
	int64_t simd_count;
	int64_t vendor_id;
	int64_t device_id;
	int64_t location_id; /* PCI bus << 8 | device << 3 | function */
	int64_t domain;
	int64_t drm_render_minor;
	int64_t num_xcc;
};

/* Resets c to "nothing read": every number HW_UNKNOWN, every string empty. */
void hw_drm_card_init(struct hw_drm_card *c /* OUT */);

/* Resets n to "no key seen". */
void hw_kfd_node_init(struct hw_kfd_node *n /* OUT */);

/* Parses a one-value sysfs file holding a hex number ("0x1002\n"; the 0x is optional).
 * Returns 0 and writes *out, RF_E_PARSE (junk, empty) or RF_E_RANGE (above max). */
int hw_parse_sysfs_hex(const char *text, size_t len, uint32_t max, uint32_t *out /* OUT */);

/* Parses a one-value sysfs file holding a decimal count ("8573157376\n").
 * Returns 0 and writes *out, RF_E_PARSE or RF_E_RANGE (above max). */
int hw_parse_sysfs_u64(const char *text, size_t len, uint64_t max, uint64_t *out /* OUT */);

/* Parses a PCI device's uevent: fills c->driver (DRIVER=) and c->pci_slot (PCI_SLOT_NAME=),
 * and c->vendor_id / c->device_id from PCI_ID= when they are still 0. Returns 0, or
 * RF_E_PARSE when none of those keys is present (c untouched). */
int hw_parse_drm_uevent(const char *text, size_t len, struct hw_drm_card *c /* OUT */);

/* Parses device/pp_dpm_mclk ("0: 167Mhz *" per level) and returns the highest level in MHz,
 * or RF_E_PARSE when no level can be read. */
int hw_parse_amd_dpm_max_mhz(const char *text, size_t len);

/* Parses a KFD node's properties file ("key value" per line; unknown keys ignored). Writes the
 * keys of struct hw_kfd_node it finds. Returns 0, or RF_E_PARSE when no known key has a valid
 * value (n is then untouched). */
int hw_parse_kfd_properties(const char *text, size_t len, struct hw_kfd_node *n /* OUT */);

/* Writes the LLVM target name of a KFD gfx_target_version into buf: major * 10000 + minor *
 * 100 + stepping, with minor and stepping printed as one hex digit each (90010 -> "gfx90a",
 * 100300 -> "gfx1030", 90402 -> "gfx942"). Returns 0, or RF_E_RANGE for 0 (a CPU node), a
 * minor or stepping above 15, or a major above 99 (buf then untouched). */
int hw_amd_gfx_arch(int64_t gfx_target_version, char *buf /* OUT */, size_t buflen);

/* Parses a PCI slot name "DDDD:BB:DD.F" into its domain and KFD location_id (bus << 8 |
 * device << 3 | function). Returns 0, or RF_E_PARSE. */
int hw_pci_slot_location(const char *slot, int64_t *domain /* OUT */,
			 int64_t *location_id /* OUT */);

/* Finds the KFD GPU node of a card among n nodes: the one at the same PCI domain and
 * location, else the one with the same DRM render minor, else the only one with the same PCI
 * device id when the card's id is unique among cards (ids_unique). CPU nodes (gfx target 0)
 * never match. Returns the node's index, or -1. */
int hw_kfd_match(const struct hw_drm_card *c, const struct hw_kfd_node *nodes, int n,
		 bool ids_unique);

/* Returns the marketing name of an AMD PCI device id (0x740f -> "AMD Instinct MI210"), or
 * NULL when the id is not in the table. Where one id covers several products the name says so
 * ("AMD Radeon RX 6800/6800 XT/6900 XT"). Sets *is_apu (may be NULL) for known ids. */
const char *hw_amd_device_name(uint32_t device_id, bool *is_apu /* OUT */);

/* Returns the marketing name of an Intel GPU PCI id, or NULL when unknown. Sets *discrete (may
 * be NULL) for known ids. */
const char *hw_intel_device_name(uint32_t device_id, bool *discrete /* OUT */);

/* Fills g (already initialised by the caller to "nothing known") from an amdgpu card and its
 * KFD node (kfd may be NULL), and appends warnings to s for what cannot be known. ram is the
 * host memory (for an APU, whose GTT is host RAM); it may hold HW_UNKNOWN.
 *
 * Discrete GPU: memory_total = VRAM, memory_used = VRAM used, memory_free = their difference;
 * memory_gtt_bytes = GTT.
 *
 * Integrated GPU (APU), when the PCI id is a known APU (Raven..Strix Halo, MI300A), or the id
 * is unknown and either the KFD node counts CPU cores (a combined CPU+GPU agent) or the VRAM
 * is a carve-out of at most HW_AMD_APU_CARVEOUT_MAX with a larger GTT: unified_memory is true
 * and memory_total = VRAM carve-out + min(GTT, RAM total): what the GPU can allocate, counting
 * the carve-out (which RAM does not include) once and host memory at most once. memory_free =
 * VRAM free + min(GTT free, RAM available) when those are known. Without a GTT size only the
 * carve-out is counted, with a warning.
 *
 * Name: device/product_name when not empty, else the id table, else "AMD GPU 0xNNNN". */
void hw_amd_fill_gpu(const struct hw_drm_card *c, const struct hw_kfd_node *kfd,
		     const struct hw_memory *ram, struct hw_snapshot *s,
		     struct hw_gpu *g /* OUT */);

/* Fills g from an Intel card (i915 or xe). Memory is the local memory the driver reports
 * (lmem_total_bytes, xe tiles) for a discrete card; an integrated GPU (PCI slot 0000:00:02.0,
 * where Intel places its iGPUs, or a known integrated id) shares host RAM: unified_memory true
 * and memory unknown, because the driver reports no share. A discrete card without a memory
 * file has unknown memory and a warning. Never guesses a capacity. */
void hw_intel_fill_gpu(const struct hw_drm_card *c, struct hw_snapshot *s,
		       struct hw_gpu *g /* OUT */);

#endif
