/*
 * A short measurement of this host, for CPU inference estimates: the memory read bandwidth
 * with one thread per physical core (what decoding on the CPU streams the weights with), and
 * the throughput of one thread in the dot-product kernels CPU inference runs: int8 (the
 * quantized types' dot products against Q8 activations) and f32 fused multiply-add (what
 * F16/BF16 weights become once converted), each with the widest instruction set the CPU has;
 * and per quant class (Q4_0 and Q8_0 blocks, f16, bf16) ggml's block dot with the instructions
 * llama.cpp's CPU backend runs it with on this CPU and with AVX2's.
 *
 * Bounded: the whole run takes about budget_ms (at most a few seconds), whatever the host.
 * Used by `rigfit bench host` and by the daemon, once per hardware fingerprint, in a worker.
 */
#ifndef RIGFIT_SERVER_HOSTBENCH_H
#define RIGFIT_SERVER_HOSTBENCH_H

#include <stdint.h>

#include "core/hw/hw.h"

/* The way this build measures: 4, the bandwidth read over four times the largest cache
 * (rf_hostbench_buffer_bytes; it was 128 MiB on two threads, which a server's L3 can hold);
 * 3, method 2 and each quant class's kernel (hw.h enum hw_kernel, migration 0007); 2, vector
 * reads with the median pass and the fastest of several kernel rounds (1: 64-bit reads, the
 * mean over the slowest thread). A figure stored by an older method is measured again
 * (migration 0006). */
#define RF_HOSTBENCH_METHOD 4

struct rf_hostbench {
	int threads;                  /* threads the bandwidth was read with */
	double memory_bandwidth_gbs;  /* read bandwidth, GB/s (1e9 bytes) */
	int64_t bandwidth_bytes;      /* the buffer it was read over (rf_hostbench_buffer_bytes) */
	double int8_gops_per_thread;  /* int8 multiply-adds x 2, per second, one thread */
	double f32_gflops_per_thread; /* f32 FMA x 2, per second, one thread */
	const char *kernel_isa;       /* "avx2", "sse2", "neon", "scalar" (static) */
	struct {
		double gops_per_thread;      /* best instructions, one thread */
		double avx2_gops_per_thread; /* AVX2's; 0: not measured */
		const char *isa;             /* static */
	} kernel[HW_KERNEL_N];               /* per quant class (hw.h enum hw_kernel) */
	double duration_ms;
};

/* Measures this host with `threads` threads (<= 0: one) in about budget_ms milliseconds
 * (clamped to 300..2500). Returns 0 and *out, or a negative rf_err (out of memory, a thread
 * that could not start). */
int rf_hostbench_run(int threads, int budget_ms, struct rf_hostbench *out /* OUT */);

/* The bytes the bandwidth is read over with `threads` threads: HB_CACHE_TIMES (4) times the
 * largest cache (cache_bytes; <= 0 unknown), at least 512 MiB and at most 4 GiB, at most a
 * quarter of room_bytes (what the process may still take; <= 0 unknown), and never below
 * 16 MiB a thread. */
int64_t rf_hostbench_buffer_bytes(int64_t cache_bytes, int64_t room_bytes, int threads);

/* The figures of h as the snapshot and the store keep them, measured at now_ms (Unix ms). */
void rf_hostbench_to_hw(const struct rf_hostbench *h, int64_t now_ms,
			struct hw_host_bench *out /* OUT */);

#endif
