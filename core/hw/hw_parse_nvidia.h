/*
 * Parsers of what the NVIDIA probe captures: the line record written by rigfit's own NVML child
 * (server/detect/nvml.c), `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` and
 * `nvidia-smi -L`. Like every parser in core/ they take bytes and a length, never read past it,
 * and turn anything they do not understand into "unknown" (and a count of rejected lines),
 * never into a GPU.
 *
 * The NVML record is one `key=value` per line (no spaces around '='; a value runs to the end of
 * its line). It starts with the line `rigfit-nvml 1` and ends with the line `end`, so a child
 * that died half-way is told apart from one that finished. Keys before the first `gpu=` line
 * are about the system, the keys after a `gpu=N` line describe that GPU until the next one:
 *
 *   rigfit-nvml 1
 *   dlopen_error=<text>          the library could not be loaded (nothing else follows)
 *   missing=<symbol>             an optional NVML function the library lacks (repeatable)
 *   init_error=<nvml code>       nvmlInit failed
 *   driver_version=565.57.01     nvmlSystemGetDriverVersion
 *   cuda_version=12070           nvmlSystemGetCudaDriverVersion(_v2): major*1000 + minor*10
 *   count=8 | count_error=<code> nvmlDeviceGetCount(_v2)
 *   gpu=0                        starts GPU 0 (NVML's index)
 *   handle_error=<code>          nvmlDeviceGetHandleByIndex failed: nothing else is known
 *   name=NVIDIA H100 80GB HBM3   uuid=GPU-...   pci_bus_id=00000000:18:00.0
 *   pci_device_id=590418142      nvmlPciInfo_t.pciDeviceId (device << 16 | vendor), decimal
 *   memory_total=85520809984  memory_free=...  memory_used=...   bytes
 *   memory_error=<code>          the memory query failed
 *   compute_capability=9.0       memory_bus_width=5120 (bits)  max_memory_clock=2619 (MHz)
 *   architecture=9               nvmlDeviceGetArchitecture's nvmlDeviceArchitecture_t
 *   mig_mode=0|1                 absent when MIG is not supported;  mig_instances=4
 *   end
 *
 * Unknown keys are ignored (a newer child may say more); a line without '=' is rejected.
 */
#ifndef RIGFIT_CORE_HW_PARSE_NVIDIA_H
#define RIGFIT_CORE_HW_PARSE_NVIDIA_H

#include <stdbool.h>
#include <stddef.h>

#include "core/hw/hw.h"

/* The most output either probe keeps (a 64-GPU record is about 30 KiB). */
#define HW_NVIDIA_OUTPUT_CAP (256 * 1024)
/* The record's first line. */
#define HW_NVML_RECORD_MAGIC "rigfit-nvml 1"

/* NVML return codes the probe reports by name (nvmlReturn_t). */
#define HW_NVML_SUCCESS 0
#define HW_NVML_ERROR_NOT_SUPPORTED 3
#define HW_NVML_ERROR_NOT_FOUND 6
#define HW_NVML_ERROR_FUNCTION_NOT_FOUND 13

/* What one capture said. GPUs are filled as far as known; everything else is HW_UNKNOWN / -1 /
 * "" as rf_snapshot_add_gpu leaves it. vendor is "nvidia" and unified_memory false. */
struct hw_nvidia_report {
	int n_gpus;
	struct hw_gpu gpus[HW_MAX_GPUS];
	int nv_index[HW_MAX_GPUS];     /* the driver's index of each GPU; -1 when not given */
	int memory_error[HW_MAX_GPUS]; /* NVML code of a failed memory query; 0 when it worked */
	int handle_error[HW_MAX_GPUS]; /* NVML code of a failed handle lookup; 0 when it worked */
	int n_dropped;                 /* GPUs beyond HW_MAX_GPUS, not kept */
	int n_rejected;                /* lines that were not understood */
	int n_bad_values;              /* values out of range or malformed (left unknown) */
	/* NVML record only. */
	bool magic;           /* the first line was HW_NVML_RECORD_MAGIC */
	bool complete;        /* the closing `end` line was seen */
	bool library_missing; /* dlopen failed; library_error says why */
	char library_error[120];
	int init_error;      /* 0, or NVML's code for a failed nvmlInit */
	int count_error;     /* 0, or NVML's code for a failed nvmlDeviceGetCount */
	int count;           /* GPUs NVML reported; HW_UNKNOWN when not said */
	int n_missing;       /* optional functions the library lacks */
	char missing[8][48]; /* the first of them, by name */
};

/* Resets r to "nothing captured". */
void hw_nvidia_report_init(struct hw_nvidia_report *r /* OUT */);

/* Parses the NVML child's record (format above) into *out (initialised here). Returns 0, or
 * RF_E_PARSE when the text is not a record at all (no magic line; *out then holds what was
 * seen). A record without its `end` line is parsed as far as it goes, with complete false. */
int hw_parse_nvml_record(const char *text, size_t len, struct hw_nvidia_report *out /* OUT */);

/* Parses `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits` output into *out
 * (initialised here). fields is the comma-separated list the query named, in order; the columns
 * rigfit understands are index, name, uuid, pci.bus_id, pci.device_id, memory.total,
 * memory.used, memory.free (MiB), compute_cap, driver_version, clocks.max.memory (MHz) and
 * mig.mode.current; others are skipped. `[N/A]`, `N/A`, `[Not Supported]` and any other
 * bracketed value mean unknown. A line whose cell count differs from the field count, or whose
 * number is junk or overflows, is rejected (counted in n_rejected, no GPU made of it). Returns 0
 * (even when nothing was found), or RF_E_INVALID_VALUE when fields is empty or longer than 32
 * columns. */
int hw_parse_nvidia_smi_csv(const char *text, size_t len, const char *fields,
			    struct hw_nvidia_report *out /* OUT */);

/* Parses `nvidia-smi -L`: for each "GPU <n>: ..." line, counts the "  MIG ..." lines under it
 * into mig_counts[n] (n < max_gpus; others are skipped). mig_counts[0..max_gpus) is zeroed
 * first. Returns the number of GPU lines seen. */
int hw_parse_nvidia_smi_list(const char *text, size_t len, int *mig_counts /* OUT */, int max_gpus);

/* Returns the peak memory bandwidth in GB/s of a double-data-rate memory bus: max memory clock
 * (MHz) x 2 x bus width (bits) / 8 / 1000; -1 when either is unknown (<= 0). */
double hw_nvidia_bandwidth_gbs(int max_memory_clock_mhz, int memory_bus_width_bits);

/* The inverse of hw_nvidia_bandwidth_gbs, for a GPU whose driver does not report its bus
 * width (nvidia-smi) but whose peak bandwidth is known from its device profile: the bus width
 * in bits, a whole number of 32-bit channels, that gives bandwidth_gbs at max_memory_clock_mhz.
 * HW_UNKNOWN when either is unknown, when no whole bus comes within 3% of it, or when a GDDR
 * bus (not a multiple of 1024 bits, HBM's stack) would split memory_bytes (the GPU's total;
 * <= 0 unknown) into chip sizes that are not made: then the board's memory does not run at the
 * profile's rate, and neither the width nor the profile's bandwidth describes it. */
int hw_nvidia_bus_width_bits(double bandwidth_gbs, int max_memory_clock_mhz, int64_t memory_bytes);

/* Returns the architecture name ("Hopper") of an nvmlDeviceArchitecture_t value, as the
 * device profiles spell it, or NULL for a value NVML's header does not name (0xffffffff is
 * NVML's "unknown"; larger values are newer than this table). Static storage. */
const char *hw_nvml_architecture_name(unsigned arch);

/* Writes NVML's CUDA driver version v (major*1000 + minor*10, e.g. 12040) as "12.4" into buf.
 * Returns 0, or RF_E_RANGE when v is not a plausible version (buf is then ""). */
int hw_nvidia_cuda_version(int v, char *buf /* OUT */, size_t buflen);

/* Returns a short English name for an NVML return code ("not supported"), never NULL. */
const char *hw_nvml_error_name(int code);

#endif
