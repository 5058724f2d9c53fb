/*
 * CPU inference speed by mechanism: what llama.cpp's CPU backend does per token.
 *
 *   decode:  time per token = max(bytes read / (mem_eff x read bandwidth),
 *                                 sum over the weight types t of the file's mix:
 *                                 elements of t / (threads x dot rate of t))
 *            + layers x the threads' synchronisation per layer (ggml's barrier after each
 *              operation: a dozen per layer, each waiting for the slowest thread)
 *            With a few threads a CPU is held by the dequantise-and-dot work, not by memory:
 *            the dot rate of a type is the host's int8 (quantized types) or f32 (F16, BF16,
 *            F32) dot throughput per thread times that type's kernel efficiency.
 *   prefill: time per token = sum over the mix: 2 x elements of t / (threads x matrix rate of t)
 *            where repacked weights (core/fit/cpu/repack.h) run the interleaved GEMM kernels and
 *            the rest the plain ones; the rate is again the host's int8 or f32 throughput per
 *            thread, scaled by what the instruction set does per cycle beyond the AVX2 kernel
 *            the host measurement runs (AVX-512, VNNI, AMX tiles, Arm dotprod and i8mm).
 *
 * The per-thread throughputs come from the host measurement (server/hostbench.h) when there
 * is one, else from this file's table by instruction set. The kernel efficiencies are fitted
 * on real llama.cpp runs (make bench-cpu: node-llama-cpp's CPU build on this project's AVX2
 * host, two threads); see speed_cpu.c for the rows. Pure: no I/O.
 */
#ifndef RIGFIT_CORE_CPU_SPEED_CPU_H
#define RIGFIT_CORE_CPU_SPEED_CPU_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hw/hw.h"

/* The instruction-set classes that set a CPU's kernel throughput. UNSET: not described (the
 * caller built the input by hand; speed.c keeps its single GFLOPS figure). */
enum speed_cpu_isa {
	SPEED_CPU_ISA_UNSET = 0,
	SPEED_CPU_ISA_BASIC, /* a CPU whose instructions nobody described: one factor, half AVX2's */
	SPEED_CPU_ISA_SSE42, /* x86 read or described without AVX (llama.cpp's sse42 backend) */
	SPEED_CPU_ISA_AVX2,
	SPEED_CPU_ISA_AVX512,
	SPEED_CPU_ISA_AVX512_VNNI,
	SPEED_CPU_ISA_AMX,
	SPEED_CPU_ISA_NEON,    /* Armv8 without the dot-product extension */
	SPEED_CPU_ISA_DOTPROD, /* Armv8.2 sdot */
	SPEED_CPU_ISA_I8MM,    /* Armv8.6 smmla */
	SPEED_CPU_ISA_N
};

/* The kernel families llama.cpp's CPU backend runs, by weight type. */
enum speed_cpu_class {
	SPEED_CPU_Q4_LEGACY = 0, /* Q4_0, Q4_1, IQ4_NL, MXFP4: 32-element blocks, nibbles */
	SPEED_CPU_Q5_LEGACY,     /* Q5_0, Q5_1: nibbles and a high-bit plane */
	SPEED_CPU_Q8_0,          /* bytes: the int8 dot itself */
	SPEED_CPU_K_LOW,         /* Q2_K, Q3_K: 2-3 bit K-quants */
	SPEED_CPU_K4,            /* Q4_K, Q5_K (and the _S/_M mixes with Q6_K) */
	SPEED_CPU_Q6_K,
	SPEED_CPU_IQ,    /* i-quants with lattice tables (IQ1-IQ3, IQ4_XS) and ternary types */
	SPEED_CPU_FLOAT, /* F16, BF16, F32: converted to f32 and multiplied with FMA */
	SPEED_CPU_CLASS_N
};

/* A quant class's measured block dot (core/hw/hw.h struct hw_kernel_rate, enum hw_kernel):
 * its rate with the instructions of ISA class isa, and with AVX2's. Rates <= 0 or isa UNSET:
 * not measured. */
struct speed_cpu_kernel {
	double gops_per_thread;
	double avx2_gops_per_thread;
	int isa; /* enum speed_cpu_isa the measured instructions need */
};

/* A host's kernel figures. Rates <= 0: not measured, the table's for isa apply. */
struct speed_cpu_host {
	int isa;                      /* enum speed_cpu_isa */
	double int8_gops_per_thread;  /* AVX2 int8 dot (maddubs), 2 ops per multiply-add */
	double f32_gflops_per_thread; /* f32 FMA dot, 2 ops per FMA */
	int threads;                  /* <= 0: SPEED_CPU_DEFAULT_THREADS */
	struct speed_cpu_kernel kernel[HW_KERNEL_N]; /* per quant class; all 0: none */
};

#define SPEED_CPU_DEFAULT_THREADS 8

/* The weight types a token's matrix products run, by kernel class: a GGUF is a mix (a Q4_0
 * file keeps a Q6_K head, a K-quant falls back to Q5_0 or Q8_0 where a row is not a multiple
 * of 256, gpt-oss keeps MXFP4 experts beside Q8_0 attention), and each class runs its own
 * kernels. share: the class's part of the elements (sums to 1; all 0: unknown, the file type's
 * class stands for all); repacked: the part of that class's elements in repacked layouts. */
struct speed_cpu_mix {
	double share[SPEED_CPU_CLASS_N];
	double repacked[SPEED_CPU_CLASS_N];
};

/* The work of one token on the host. */
struct speed_cpu_work {
	struct speed_cpu_mix mix; /* all 0: one class from weight_ftype and repacked_share */
	int weight_ftype;      /* enum rf_ftype; < 0: unknown (guessed from the bits per weight) */
	double weight_bytes;   /* weight and KV bytes read per generated token */
	double elements;       /* weight elements multiplied per token (about active params) */
	double repacked_share; /* share of the elements in repacked layouts; < 0: unknown */
	double layers;         /* repeating blocks run on the host (their share of them) */
};

struct speed_cpu_rates {
	int cls;                     /* enum speed_cpu_class: the mix's largest */
	double decode_rate;          /* elements per second per thread, decode kernels (mix) */
	double prefill_rate;         /* FLOPs per second per thread, prefill (mix of layouts) */
	double int8_gops_per_thread; /* the throughputs used */
	double f32_gflops_per_thread;
	bool measured;    /* the throughputs were measured on this host */
	int threads;      /* threads used */
	int rows_decode;  /* llama.cpp rows the class's decode efficiency was fitted on */
	int rows_prefill; /* the same for prefill; 0: inherited by mechanism */
	double repacked;  /* share of repacked elements assumed */
};

/* Returns the class of an ISA from hw.h's HW_ISA() bits and the CPU's architecture name
 * ("x86_64", "aarch64"; NULL or "" unknown). Never UNSET. */
int speed_cpu_isa_from_bits(uint32_t isa_bits, const char *arch);

/* Returns the ISA class's name ("avx2"...). Static storage. */
const char *speed_cpu_isa_name(int isa);

/* Returns the ISA class that a measured kernel's instructions need, from its name in the host
 * measurement ("avx2", "avx512", "avx512_vnni", "avx512_bf16"), or SPEED_CPU_ISA_UNSET. */
int speed_cpu_isa_of_kernel(const char *name);

/* Which measured kernel of h times the weights of class cls (enum speed_cpu_class) of a file of
 * type ftype (enum rf_ftype; BF16 picks the bf16 dot for its float weights) in decode (and,
 * for float weights, prefill): the hw.h enum hw_kernel, with *scale the kernel's rate on h's
 * ISA class over its AVX2 rate (the factor over the fitted AVX2 efficiencies) and *best true
 * when that is the measured instructions beyond AVX2. Returns -1 when none applies (not
 * measured, not an x86 class with AVX2, or a class whose llama.cpp dot is the same on every
 * x86 class: the K-quants and i-quants run AVX2's maddubs, *scale then 1 when h was measured). */
int speed_cpu_class_kernel(const struct speed_cpu_host *h, int cls, int ftype,
			   double *scale /* OUT */, bool *best /* OUT, optional */);

/* Returns the class's name ("q4_legacy"...). Static storage. */
const char *speed_cpu_class_name(int cls);

/* The class of weight type ftype (enum rf_ftype); ftype < 0: guessed from bits per weight
 * (bytes x 8 / elements). */
int speed_cpu_class_of(int ftype, double bits_per_weight);

/* The class of ggml tensor type gtype (enum rf_gtype); -1 for a type no matrix product runs
 * (integers) or an unknown one. */
int speed_cpu_class_of_gtype(int gtype);

/* The mix of elements[t] (t an enum rf_gtype, n types) of which repacked[t] are repacked.
 * Types of no class are left out. Returns 0, or RF_E_INVALID_VALUE when nothing is left
 * (*out then all 0). */
int speed_cpu_mix_from_types(const double *elements, const double *repacked, int n,
			     struct speed_cpu_mix *out /* OUT */);

/* The kernel rates of work w on host h. Returns 0 and *out, or RF_E_INVALID_VALUE (no host ISA
 * class, non-finite numbers). */
int speed_cpu_rates(const struct speed_cpu_host *h, const struct speed_cpu_work *w,
		    struct speed_cpu_rates *out /* OUT */);

/* The threads' worth of work threads do together: all of them while few, saturating at the
 * fitted count where more cores add little (shared caches, memory, barriers). */
double speed_cpu_working_threads(int threads);

/* The threads' synchronisation per layer per generated token, ms, for threads threads (<= 0:
 * SPEED_CPU_DEFAULT_THREADS); measured: the host's kernels were measured (make bench-cpu's
 * figure, fitted on that busy host). */
double speed_cpu_sync_ms(int threads, bool measured);

/* Seconds per generated token, the larger of the memory time (bytes / (bandwidth_gbs x 1e9))
 * and the kernel time; bandwidth_gbs is the rate the caller reaches (efficiency applied).
 * *kernel_bound (optional) says which. Returns a time > 0, or -1 on bad input. */
double speed_cpu_decode_s(const struct speed_cpu_host *h, const struct speed_cpu_work *w,
			  double bandwidth_gbs, bool *kernel_bound /* OUT, optional */);

/* Seconds per prompt token of a batch of prompt tokens. Returns a time > 0, or -1. */
double speed_cpu_prefill_s(const struct speed_cpu_host *h, const struct speed_cpu_work *w);

/* Whether w's rates follow its sizes: only a work without a mix, whose class its bits per
 * weight choose. Any other work's rates are those of its host and mix, whatever its bytes,
 * elements and layers: a caller timing one mix at several sizes computes them once. */
bool speed_cpu_rates_sized(const struct speed_cpu_work *w);

/* speed_cpu_prefill_s with r, the rates of w's host and mix (w not sized). */
double speed_cpu_prefill_s_rated(const struct speed_cpu_rates *r, const struct speed_cpu_work *w);

/* speed_cpu_decode_s with r, the rates of w's host and mix (speed_cpu_rates of a work of the
 * same mix; w not sized). */
double speed_cpu_decode_s_rated(const struct speed_cpu_rates *r, const struct speed_cpu_work *w,
				double bandwidth_gbs, bool *kernel_bound /* OUT, optional */);

#endif
