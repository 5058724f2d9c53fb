/*
 * macOS `sysctl` output: "key: value" per line (current macOS) or "key = value" (older Darwin
 * and BSD), as `sysctl -a` or `sysctl hw machdep` prints it. server/detect/probe_apple.c runs
 * the command; the pure functions here parse the text and fill the snapshot: CPU (brand, cores
 * per performance level, ISA), memory (hw.memsize) and, on Apple Silicon, the one GPU, whose
 * memory is the share of RAM that Metal lets it wire.
 */
#ifndef RIGFIT_CORE_HW_PARSE_SYSCTL_H
#define RIGFIT_CORE_HW_PARSE_SYSCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hw/hw.h"

/* Largest hw.memsize accepted: 2^50 bytes (1 PiB). */
#define HW_SYSCTL_MEM_MAX (UINT64_C(1) << 50)
/* Largest CPU count accepted from any *cpu key. */
#define HW_SYSCTL_CPU_MAX 65536

/* What the parser found. Integers are HW_UNKNOWN when the key was absent or not a valid
 * number; strings are "" when absent. */
struct hw_sysctl_info {
	char brand[HW_NAME_LEN];   /* machdep.cpu.brand_string: "Apple M3 Max" */
	char cpu_vendor[64];       /* machdep.cpu.vendor (Intel Macs): "GenuineIntel" */
	char chip_generation[8];   /* from the brand: "M3"; "" when it names no M chip */
	char chip_tier[16];        /* "Pro", "Max", "Ultra", or "" for the base chip */
	char ostype[32];           /* kern.ostype: "Darwin" */
	char osrelease[64];        /* kern.osrelease: "24.1.0" */
	int64_t memsize;           /* hw.memsize, bytes */
	int64_t pagesize;          /* hw.pagesize, bytes */
	int64_t wired_limit_mb;    /* iogpu.wired_limit_mb (macOS 14+); 0: the default */
	int64_t wired_limit_debug; /* debug.iogpu.wired_limit (macOS 13), bytes; 0: the default */
	int ncpu;                  /* hw.ncpu */
	int physicalcpu;           /* hw.physicalcpu */
	int logicalcpu;            /* hw.logicalcpu */
	int packages;              /* hw.packages */
	int nperflevels;           /* hw.nperflevels */
	int perf_physicalcpu[2];   /* hw.perflevel0/1.physicalcpu */
	char perf_name[2][16];     /* hw.perflevel0/1.name: "Performance", "Efficiency" */
	int core_count;            /* machdep.cpu.core_count */
	int thread_count;          /* machdep.cpu.thread_count */
	bool arm64;                /* hw.optional.arm64: 1 */
	uint32_t isa;              /* HW_ISA() bits */
};

/* Resets info to "nothing found". */
void hw_sysctl_info_init(struct hw_sysctl_info *info /* OUT */);

/* Parses sysctl output (either form; CRLF tolerated; lines that are not key/value pairs are
 * skipped; the first occurrence of a key wins). ISA: neon on every arm64 machine (and from
 * hw.optional.neon / AdvSIMD), dotprod from hw.optional.arm.FEAT_DotProd, i8mm from
 * FEAT_I8MM; on Intel Macs avx/avx2/avx512f/fma/f16c from machdep.cpu.features /
 * leaf7_features or hw.optional.avx*. Returns 0, or RF_E_PARSE when no known key was found
 * (info then untouched). */
int hw_parse_sysctl(const char *text, size_t len, struct hw_sysctl_info *info /* OUT */);

/* Returns the GPU wired-memory limit the user set, in bytes: iogpu.wired_limit_mb when the key
 * is present (macOS 14+), else debug.iogpu.wired_limit; 0 when neither overrides the default. */
int64_t hw_sysctl_wired_limit(const struct hw_sysctl_info *info);

/* Returns true when info describes an Apple Silicon Mac (arm64, or a brand "Apple ..."). */
bool hw_sysctl_is_apple_silicon(const struct hw_sysctl_info *info);

/* Returns the memory an Apple GPU may use on a Mac with memsize bytes of RAM, in bytes:
 * wired_limit_bytes when it is > 0 (the user's iogpu.wired_limit_mb, capped at memsize), else
 * macOS's default recommendedMaxWorkingSetSize. That default, as Metal reports it in the logs
 * of tests/data/calibration/gpus.csv: on 32 GiB or less, 2/3 of RAM rounded up to the next
 * page above it (8 GiB -> 5726633984, 16 GiB -> 11453251584, 32 GiB -> 22906503168 bytes);
 * above 32 GiB, exactly 3/4 of RAM (36 GiB -> 28991029248, 48 GiB -> 38654705664, 64 GiB ->
 * 51539607552, 192 GiB -> 154618822656). pagesize <= 0 means 16384. Returns HW_UNKNOWN when
 * memsize is unknown. */
int64_t hw_apple_gpu_working_set(int64_t memsize, int64_t pagesize, int64_t wired_limit_bytes);

/* Fills the host, CPU and memory parts of s from info, for the parts still unknown: host os,
 * kernel, arch and (Apple Silicon) soc; cpu model, vendor, arch, sockets (hw.packages; also
 * the NUMA node count, as macOS spreads no package over several memory nodes), core counts
 * (performance / efficiency from the perflevels), ISA; memory total (available memory is not
 * in sysctl output and stays unknown, with a warning). Sets sources.cpu and sources.memory to
 * "sysctl" for what it filled. */
void hw_sysctl_fill_host(const struct hw_sysctl_info *info, struct hw_snapshot *s);

/* Fills g (initialised by the caller) as the Apple Silicon GPU: vendor "apple", name "<chip>
 * GPU" ("Apple M3 Max GPU"; "Apple GPU" when the brand names no chip), unified memory, memory
 * total from hw_apple_gpu_working_set (a warning when it cannot be known). Free memory is not
 * in sysctl output and stays unknown. */
void hw_sysctl_fill_gpu(const struct hw_sysctl_info *info, struct hw_snapshot *s,
			struct hw_gpu *g /* OUT */);

#endif
