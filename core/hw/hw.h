/*
 * Plain data describing one machine: what a scan found (struct hw_snapshot). Filled by
 * server/detect through core's parsers, or from a request's "hardware" object; rendered to
 * JSON by api/hardware_json.c. A number that could not be known is HW_UNKNOWN (or a negative
 * double), rendered as null, and a warning says why. Nothing here is ever guessed.
 */
#ifndef RIGFIT_CORE_HW_H
#define RIGFIT_CORE_HW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HW_UNKNOWN (-1)
#define HW_MAX_GPUS 64
#define HW_MAX_WARNINGS 32
#define HW_WARNING_LEN 200
#define HW_NAME_LEN 128

/* Instruction-set features that matter for inference kernels. */
#define HW_ISA_TABLE(X)                                                                            \
	X(AVX, "avx")                                                                              \
	X(AVX2, "avx2")                                                                            \
	X(AVX512F, "avx512f")                                                                      \
	X(AVX512_BF16, "avx512_bf16")                                                              \
	X(AVX512_VNNI, "avx512_vnni")                                                              \
	X(AMX, "amx")                                                                              \
	X(F16C, "f16c")                                                                            \
	X(FMA, "fma")                                                                              \
	X(NEON, "neon")                                                                            \
	X(SVE, "sve")                                                                              \
	X(DOTPROD, "dotprod")                                                                      \
	X(I8MM, "i8mm")                                                                            \
	X(BF16, "bf16")

enum hw_isa_bit {
#define HW_ISA_ENUM_(name, str) HW_ISA_BIT_##name,
	HW_ISA_TABLE(HW_ISA_ENUM_)
#undef HW_ISA_ENUM_
	HW_ISA_COUNT
};
#define HW_ISA(name) (1u << HW_ISA_BIT_##name)

/* Returns the name ("avx2") of ISA bit index i, or NULL past the end. */
const char *hw_isa_name(int i);

/* A GPU's facts that may come from its device profile (profiles/devices.json) instead of the
 * probe, by the JSON field they fill: hw_gpu.from_profile says which did. */
#define HW_FROM_PROFILE_TABLE(X)                                                                   \
	X(ARCHITECTURE, "architecture")                                                            \
	X(BUS_WIDTH, "memory_bus_width_bits")                                                      \
	X(BANDWIDTH, "memory_bandwidth_gbs")                                                       \
	X(FP16, "fp16_tflops")

enum hw_from_profile_bit {
#define HW_FROM_PROFILE_ENUM_(name, str) HW_FROM_PROFILE_BIT_##name,
	HW_FROM_PROFILE_TABLE(HW_FROM_PROFILE_ENUM_)
#undef HW_FROM_PROFILE_ENUM_
	HW_FROM_PROFILE_COUNT
};
#define HW_FROM_PROFILE(name) (1u << HW_FROM_PROFILE_BIT_##name)

/* Returns the field name ("memory_bus_width_bits") of from_profile bit index i, or NULL past
 * the end. */
const char *hw_from_profile_name(int i);

struct hw_cpu {
	char model[HW_NAME_LEN];
	char vendor[64];
	char arch[32];
	int sockets; /* HW_UNKNOWN when not known */
	int physical_cores;
	int logical_cores;
	int performance_cores; /* 0 on a non-hybrid CPU */
	int efficiency_cores;
	int numa_nodes;
	uint32_t isa;                /* HW_ISA() bits */
	double memory_bandwidth_gbs; /* < 0: not measured */
};

struct hw_memory {
	int64_t total_bytes;
	int64_t available_bytes;
};

struct hw_container {
	bool detected;
	int64_t cgroup_memory_limit_bytes; /* HW_UNKNOWN: no limit */
	double cpu_quota_cores;            /* < 0: no quota */
};

struct hw_host {
	char os[64];
	char kernel[128];
	char arch[32];
	char soc[HW_NAME_LEN]; /* system-on-chip boards: "Apple M3 Max", Jetson's model string */
	struct hw_container container;
};

struct hw_mig {
	bool enabled;
	int instances; /* HW_UNKNOWN when MIG is on but the instances could not be listed */
};

struct hw_gpu {
	int index;
	char vendor[16]; /* nvidia | amd | apple | intel */
	char name[HW_NAME_LEN];
	char uuid[96];
	char pci_bus_id[32];
	int64_t memory_total_bytes;
	int64_t memory_free_bytes;
	int64_t memory_used_bytes;
	bool unified_memory;
	char compute_capability[16]; /* NVIDIA "9.0" */
	char architecture[32];       /* "gfx90a", "Hopper"... when the probe can tell */
	char pci_device_id[12];      /* "0x740f" */
	int64_t memory_gtt_bytes;    /* AMD: host memory the GPU can map (GTT); HW_UNKNOWN */
	int memory_bus_width_bits;   /* HW_UNKNOWN when not known */
	int max_memory_clock_mhz;    /* HW_UNKNOWN when not known */
	char driver_version[32];
	char cuda_version[16];
	bool has_mig;
	struct hw_mig mig;
	double memory_bandwidth_gbs; /* < 0: unknown */
	double fp16_tflops;          /* < 0: unknown */
	unsigned from_profile;       /* HW_FROM_PROFILE() bits: facts the device profile gave */
};

struct hw_sources {
	char cpu[24];
	char memory[24];
	char gpu[24];
};

/* This host's own measurement (server/hostbench.h), taken once per hardware fingerprint and
 * kept in the store: what CPU inference runs on, independent of any runtime. */
#define HW_KERNEL_ISA_LEN 16

/* The quant classes whose llama.cpp CPU kernels differ (ggml-cpu's vec_dot per type): int4
 * blocks with a scale per 32 elements (Q4_0 and the other nibble types), int8 blocks with a
 * scale per 32 (Q8_0), f16 converted to f32 and multiplied with FMA, bf16 (AVX512_BF16's
 * dot where the CPU has it). */
enum hw_kernel {
	HW_KERNEL_Q4_0 = 0,
	HW_KERNEL_Q8_0,
	HW_KERNEL_F16,
	HW_KERNEL_BF16,
	HW_KERNEL_N
};

/* One class's dot product, one thread: with the instructions llama.cpp's CPU backend for this
 * host runs it with (isa), and with AVX2's (the instructions the fitted efficiencies of
 * core/fit/cpu/speed_cpu.c were measured with). gops_per_thread <= 0: not measured. */
struct hw_kernel_rate {
	double gops_per_thread;      /* 2 ops per element, with isa's instructions */
	double avx2_gops_per_thread; /* the same with AVX2's; <= 0: not measured (Arm) */
	char isa[HW_KERNEL_ISA_LEN]; /* "avx512_vnni", "avx512", "avx2", "scalar" */
};

/* Returns the class's name ("q4_0", "q8_0", "f16", "bf16"), or NULL out of range. */
const char *hw_kernel_name(int k);

/* Returns the class named name, or -1. */
int hw_kernel_from_name(const char *name);

struct hw_host_bench {
	bool measured;                      /* false: none (described hardware, or turned off) */
	int threads;                        /* threads the bandwidth was read with */
	double memory_bandwidth_gbs;        /* read bandwidth, GB/s */
	double int8_gops_per_thread;        /* int8 dot, 2 ops per multiply-add, one thread */
	double f32_gflops_per_thread;       /* f32 FMA dot, one thread */
	char kernel_isa[HW_KERNEL_ISA_LEN]; /* the kernels' instruction set: "avx2"... */
	double duration_ms;
	int64_t measured_at_ms; /* Unix time in milliseconds */
	int method; /* the way it was measured (server/hostbench.h: RF_HOSTBENCH_METHOD) */
	struct hw_kernel_rate kernel[HW_KERNEL_N]; /* per quant class (method 3 on) */
};

struct hw_snapshot {
	struct hw_host host;
	struct hw_cpu cpu;
	struct hw_host_bench host_bench;
	struct hw_memory memory;
	int n_gpus;
	struct hw_gpu gpus[HW_MAX_GPUS];
	char platform[16];        /* nvidia | amd | apple_silicon | jetson | cpu */
	char backend[16];         /* cuda | rocm | metal | cpu */
	char compute_profile[16]; /* low_end | mid_range | high_end */
	char profile_id[64];
	int64_t scanned_at_ms; /* Unix time in milliseconds */
	double scan_duration_ms;
	struct hw_sources sources;
	int n_warnings;
	char warnings[HW_MAX_WARNINGS][HW_WARNING_LEN];
};

/* Resets s to "nothing known": every count HW_UNKNOWN, no GPU, no warning. */
void hw_snapshot_init(struct hw_snapshot *s /* OUT */);

/* Appends a printf-style warning to s; silently drops it once HW_MAX_WARNINGS are held. */
void hw_warn(struct hw_snapshot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Copies src into dst (size dstlen) always NUL-terminating; returns 0 or RF_E_TOO_LARGE
 * when src was cut. */
int hw_strlcpy(char *dst, const char *src, size_t dstlen);

#endif
