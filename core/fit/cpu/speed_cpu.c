/*
 * CPU speed by mechanism (see speed_cpu.h): kernel rates per weight type and instruction set.
 *
 * Fitted on make bench-cpu (tests/llama/calibrate_cpu.c, rows in
 * tests/llama/cpu_speed_calibration.csv): node-llama-cpp 3.22.1's CPU build (its AVX2
 * "haswell" variant) on this project's 2-core AMD EPYC host (AVX2, no AVX-512; about 36 GB/s
 * read with vector loads, 165 int8 GOPS and 46 f32 GFLOPS per thread), 2 threads, the
 * Qwen2.5-0.5B, Qwen3-0.6B and Llama-3.2-1B shapes in Q4_0, Q8_0, Q4_K_M and F16, pp128 and
 * tg32, each figure the best of three runs on a quiet host (a shared host's other tenants only
 * ever slow a run down). Each file is a mix of weight types (a Q4_0 file keeps a Q6_K head,
 * Qwen2.5-0.5B's rows of 896 make Q4_K_M fall back to Q5_0 and Q8_0), so the twelve rows
 * tell the six kernel classes apart: the time of a token is the sum over the classes of their
 * elements at their own rate, and each class's rate was fitted on all rows together
 * (least squares in log space; decode and prefill medians 3%, worst rows 8% and 14%).
 * Rows per class: Q4_0 and Q4_K repacked 3 each, Q8_0 5 (three files and two heads), Q6_K 5
 * (heads and Q4_K_M's Q6_K layers), F16 3, Q5_0 1 (Qwen2.5's fallback). The classes that no
 * row runs (2-3 bit K-quants, i-quants, the plain layouts of Q4_0 and Q4_K) take the class
 * nearest by mechanism (rows_* = 0, said in the answer).
 */
#include "core/fit/cpu/speed_cpu.h"

#include <math.h>
#include <string.h>

#include "core/err.h"
#include "core/hw/hw.h"
#include "core/fit/quant.h"

/* The AVX2 kernel throughputs per thread assumed for a CPU that was not measured: this host's
 * measurement (server/hostbench.c's maddubs and FMA loops; AMD EPYC, AVX2). A CPU's clock
 * moves them by tens of percent; a measurement replaces them. */
#define DEFAULT_INT8_GOPS 165.0
#define DEFAULT_F32_GFLOPS 46.0

/* Per ISA: what its kernels do per thread beyond the AVX2 kernel the host measurement runs
 * (decode's dot products, prefill's matrix products, f32/f16 FMA). AVX2 is the measured
 * anchor; x86 beyond it follows the vector width and the instructions ggml-cpu uses there:
 * AVX-512 doubles the width of the repacked and tinyBLAS GEMMs (Zen 4 splits 512-bit ops in
 * two, hence 1.6, not 2) but decode's dot products stay 256-bit; VNNI fuses the three
 * instructions of the int8 multiply-add into vpdpbusd; AMX's tiles run prefill's int8 GEMM
 * (decode still runs AVX-512 VNNI dot products). Not fitted: no such host was at hand.
 * Arm with i8mm: prefill is fitted on the four CPU rows of tests/data/calibration/
 * llamacpp_tg_pp.csv (Cix CP8180 with 12 threads and Radxa Dragon Q8B with 8, TinyLlama 1.1B
 * and Llama 3.2 3B in Q4_K_M, pp512, whose Q4_K and Q6_K ggml-cpu repacks on Arm:
 * 0.27-0.44 of this host's repacked AVX2 Q4_K rate per thread, median 0.36; their cores are
 * smaller than a desktop x86 core and half of them are efficiency cores). Arm with dotprod
 * (no i8mm): prefill is fitted on the Radxa Dragon Q8B's two rows (Snapdragon 8cx Gen 3,
 * Cortex-X1C and A78C, 8 threads): 0.58 of the AVX2 rate per thread, above the CP8180's i8mm
 * figure because all eight cores are big ones (the CP8180's four little cores hold every
 * barrier); it was 0.18, half of smmla's multiply-adds, which put the Dragon 3.2x low. Plain
 * NEON keeps a third of dotprod's old figure; decode keeps the proportions (not fitted: the
 * rows' decode is held by memory). */
static const struct {
	const char *name;
	double decode, prefill, f32;
} isa_scale[SPEED_CPU_ISA_N] = {
	[SPEED_CPU_ISA_UNSET] = {"unset", 1, 1, 1},
	[SPEED_CPU_ISA_BASIC] = {"sse", 0.5, 0.5, 0.5},
	[SPEED_CPU_ISA_SSE42] = {"sse42", 0, 0, 0}, /* per class: isa_class_scale */
	[SPEED_CPU_ISA_AVX2] = {"avx2", 1, 1, 1},
	[SPEED_CPU_ISA_AVX512] = {"avx512", 1, 1.6, 1.6},
	[SPEED_CPU_ISA_AVX512_VNNI] = {"avx512_vnni", 1.3, 2.1, 1.6},
	[SPEED_CPU_ISA_AMX] = {"amx", 1.3, 4.2, 1.6},
	[SPEED_CPU_ISA_NEON] = {"neon", 0.074, 0.055, 0.3},
	[SPEED_CPU_ISA_DOTPROD] = {"dotprod", 0.22, 0.58, 0.4},
	[SPEED_CPU_ISA_I8MM] = {"i8mm", 0.22, 0.36, 0.4},
};

/* Per ISA class and weight class: the rate over AVX2's where one factor for the ISA does not
 * hold, measured with llama.cpp's own backends side by side (make bench-cpu; the rows are
 * tests/llama/cpu_speed_by_class.csv): each variant's rows against the haswell rows of the same
 * run on one host, as ratios, so the host's own offset from the AVX2 fit cancels; least squares
 * in log space, the classes sharing a path sharing a factor. 0: the ISA's factor (isa_scale).
 * - sse42 (x86 without AVX): ggml's x86 kernels have an SSSE3 path for the 4-bit legacy dot
 *   alone; Q8_0, Q5_0 and the K- and i-quants run the portable C loop, and f16 is converted
 *   through a table (no F16C). Ratio median error decode 14%, prefill 4% over 12 rows (one
 *   factor for the ISA: 43% and 122%); leaving one model out 5% and 12%. Q5_0's C loop
 *   rebuilds the fifth bit per element: its factor comes from the one row that runs it
 *   (Qwen2.5-0.5B's Q4_K_M fallback).
 * - skylakex (AVX-512) and zen4 (AVX-512 with VNNI), prefill: the repacked 4-bit GEMMs gain
 *   most (2.3x and 2.9x), the K-quant ones 1.45x, Q8_0's plain GEMM 1.08x and 1.29x, f16's
 *   tinyBLAS 1.29x, where the one factor said 1.6 and 2.1 for every int8 class and the f16
 *   block dot's measured 2x for f16 (12 and 24 rows, two runs; ratio median error 3% for both,
 *   worst 11% and 12%). Measured on one Zen 5 class host, whose AVX-512 units are full width;
 *   decode keeps the host's measured block dots. */
static const struct {
	double decode, prefill;
} isa_class_scale[SPEED_CPU_ISA_N][SPEED_CPU_CLASS_N] = {
	[SPEED_CPU_ISA_SSE42] =
		{
			[SPEED_CPU_Q4_LEGACY] = {0.51, 1.0},
			[SPEED_CPU_Q5_LEGACY] = {0.092, 0.047},
			[SPEED_CPU_Q8_0] = {0.35, 0.18},
			[SPEED_CPU_K_LOW] = {0.35, 0.18},
			[SPEED_CPU_K4] = {0.35, 0.18},
			[SPEED_CPU_Q6_K] = {0.35, 0.18},
			[SPEED_CPU_IQ] = {0.35, 0.18},
			[SPEED_CPU_FLOAT] = {0.24, 0.092},
		},
	[SPEED_CPU_ISA_AVX512] =
		{
			[SPEED_CPU_Q4_LEGACY] = {0, 2.26},
			[SPEED_CPU_Q5_LEGACY] = {0, 1.45},
			[SPEED_CPU_Q8_0] = {0, 1.08},
			[SPEED_CPU_K_LOW] = {0, 1.45},
			[SPEED_CPU_K4] = {0, 1.45},
			[SPEED_CPU_Q6_K] = {0, 1.45},
			[SPEED_CPU_IQ] = {0, 1.45},
			[SPEED_CPU_FLOAT] = {0, 1.29},
		},
	[SPEED_CPU_ISA_AVX512_VNNI] =
		{
			[SPEED_CPU_Q4_LEGACY] = {0, 2.86},
			[SPEED_CPU_Q5_LEGACY] = {0, 1.45},
			[SPEED_CPU_Q8_0] = {0, 1.29},
			[SPEED_CPU_K_LOW] = {0, 1.45},
			[SPEED_CPU_K4] = {0, 1.45},
			[SPEED_CPU_Q6_K] = {0, 1.45},
			[SPEED_CPU_IQ] = {0, 1.45},
			[SPEED_CPU_FLOAT] = {0, 1.29},
		},
};

/* Per class: the share of the host's int8 (FLOAT: f32) throughput per thread that the decode
 * dot products and the prefill GEMMs reach, in the plain and the repacked layouts (decode's
 * repacked GEMV reads the interleaved rows), and the rows each was fitted on. */
struct class_eff {
	const char *name;
	double decode, decode_repacked;
	double prefill, prefill_repacked;
	int rows_decode, rows_prefill;
};

/* Fitted (see the top of this file), as elements per second per thread over half the int8
 * rate for decode (FLOAT: over half the f32 rate) and as FLOPs over the int8 (f32) rate for
 * prefill. Q4_0 and Q4_K on AVX2 are always repacked in the rows (their rows are multiples of
 * 8), so their plain layouts are not measured: Q4_0's takes the repacked decode rate (ggml's
 * vec_dot_q4_0_q8_0 unpacks the same nibbles per block); K4's plain layout (Q5_K has no
 * repacked one) sits between Q6_K and the repacked Q4_K; for prefill both take a little less
 * than the plain Q8_0 GEMM (the interleaved GEMMs reuse each activation block across eight
 * rows; the plain ones do not, and they unpack nibbles besides). Q8_0 decode reaches half of Q4_0's rate: ggml's Q8_0 dot has twice the bytes to
 * load per element and no repacked layout on x86. FLOAT decode is held by the f16-to-f32
 * conversion at 0.37 of the FMA rate (about the memory's rate on this host), its prefill is
 * tinyBLAS at 0.86 of it. Q6_K unpacks a 4-bit and a 2-bit plane and scales per 16: the
 * slowest of the measured kernels. Q2_K and Q3_K have Q6_K's shape of work on fewer bits;
 * the i-quants look their lattices up per 8 elements: slower still (not measured). */
static const struct class_eff class_eff[SPEED_CPU_CLASS_N] = {
	[SPEED_CPU_Q4_LEGACY] = {"q4_legacy", 0.33, 0.33, 0.30, 0.56, 3, 3},
	[SPEED_CPU_Q5_LEGACY] = {"q5_legacy", 0.147, 0.147, 0.25, 0.25, 1, 1},
	[SPEED_CPU_Q8_0] = {"q8_0", 0.149, 0.149, 0.42, 0.42, 5, 5},
	[SPEED_CPU_K_LOW] = {"k_low", 0.11, 0.11, 0.28, 0.28, 0, 0},
	[SPEED_CPU_K4] = {"k4", 0.20, 0.346, 0.34, 0.80, 3, 3},
	[SPEED_CPU_Q6_K] = {"q6_k", 0.111, 0.111, 0.285, 0.285, 5, 5},
	[SPEED_CPU_IQ] = {"iq", 0.08, 0.08, 0.20, 0.20, 0, 0},
	[SPEED_CPU_FLOAT] = {"float", 0.374, 0.374, 0.855, 0.855, 3, 3},
};

/* The threads' synchronisation per layer per generated token: ggml's barriers after each
 * operation, each waiting for every thread, so their cost grows with the threads: 4 us per
 * thread per layer, fitted with SPEED_CPU_THEORETICAL_READ_SHARE (core/fit/speed.h) by least
 * squares in log space on the 29 decode rows of public CPU runs in
 * tests/data/calibration/llamacpp_tg_pp.csv (2 to 192 threads). Only the 3B on the 192-core
 * AmpereOne is held by it (a 70B there is not), so that one row sets it: left out, the rest
 * fit 2 us and that row comes out 2x fast. The make bench-cpu rows (two threads on a busy
 * shared host) wait far longer at each barrier (0.51 ms per layer fitted there): a measured
 * host keeps that figure. */
#define SYNC_MS_PER_THREAD_LAYER 0.004
#define SYNC_MS_PER_LAYER_MEASURED 0.51

/* Threads beyond which more cores add little to the matrix products (shared L3 and memory,
 * each barrier waiting for the slowest): working threads t / sqrt(1 + (t / 64)^2), all of them
 * while few (8 threads work as 7.9). Fitted on the prefill rows of the same file; only the
 * 32-thread Threadripper row reaches where it bites (24% high without it, 10% with it), so it
 * is the least supported of these figures. Decode's dot products are not saturated: they wait
 * on memory. */
#define SATURATION_THREADS 64.0

int speed_cpu_isa_from_bits(uint32_t isa, const char *arch)
{
	bool arm = arch && (strcmp(arch, "aarch64") == 0 || strcmp(arch, "arm64") == 0);

	if (isa & HW_ISA(AMX))
		return SPEED_CPU_ISA_AMX;
	if (isa & HW_ISA(AVX512_VNNI))
		return SPEED_CPU_ISA_AVX512_VNNI;
	if (isa & HW_ISA(AVX512F))
		return SPEED_CPU_ISA_AVX512;
	if (isa & HW_ISA(AVX2))
		return SPEED_CPU_ISA_AVX2;
	if (isa & HW_ISA(I8MM))
		return SPEED_CPU_ISA_I8MM;
	if (isa & HW_ISA(DOTPROD))
		return SPEED_CPU_ISA_DOTPROD;
	if (arm || (isa & HW_ISA(NEON)))
		return SPEED_CPU_ISA_NEON;
	/* An x86 CPU whose flags were read (or that was described with its architecture) and that
	 * has neither AVX2 nor AVX-512 (AVX alone is llama.cpp's sandybridge backend: its kernels
	 * keep the one factor); with no architecture either, nothing is known. */
	if (arch && !(isa & HW_ISA(AVX)) &&
	    (strcmp(arch, "x86_64") == 0 || strcmp(arch, "amd64") == 0 ||
	     strcmp(arch, "i686") == 0))
		return SPEED_CPU_ISA_SSE42;
	return SPEED_CPU_ISA_BASIC;
}

const char *speed_cpu_isa_name(int isa)
{
	return isa > SPEED_CPU_ISA_UNSET && isa < SPEED_CPU_ISA_N ? isa_scale[isa].name : "unknown";
}

const char *speed_cpu_class_name(int cls)
{
	return cls >= 0 && cls < SPEED_CPU_CLASS_N ? class_eff[cls].name : "unknown";
}

int speed_cpu_class_of(int ftype, double bpw)
{
	switch (ftype) {
	case RF_FT_F32:
	case RF_FT_F16:
	case RF_FT_BF16:
		return SPEED_CPU_FLOAT;
	case RF_FT_Q4_0:
	case RF_FT_Q4_1:
	case RF_FT_IQ4_NL:
	case RF_FT_MXFP4_MOE:
		return SPEED_CPU_Q4_LEGACY;
	case RF_FT_Q5_0:
	case RF_FT_Q5_1:
		return SPEED_CPU_Q5_LEGACY;
	case RF_FT_Q8_0:
		return SPEED_CPU_Q8_0;
	case RF_FT_Q2_K:
	case RF_FT_Q2_K_S:
	case RF_FT_Q3_K_S:
	case RF_FT_Q3_K_M:
	case RF_FT_Q3_K_L:
		return SPEED_CPU_K_LOW;
	case RF_FT_Q4_K_S:
	case RF_FT_Q4_K_M:
	case RF_FT_Q5_K_S:
	case RF_FT_Q5_K_M:
		return SPEED_CPU_K4;
	case RF_FT_Q6_K:
		return SPEED_CPU_Q6_K;
	default:
		break;
	}
	if (ftype >= 0)
		return SPEED_CPU_IQ;
	/* Unknown type: the family its bits per weight point to (the GGUF's mix shifts them a
	 * little: embeddings and the head are often of another type). */
	if (!(bpw > 0) || bpw >= 12)
		return SPEED_CPU_FLOAT;
	if (bpw >= 7.5)
		return SPEED_CPU_Q8_0;
	if (bpw >= 5.25)
		return SPEED_CPU_Q6_K;
	if (bpw >= 3.5)
		return SPEED_CPU_K4;
	return SPEED_CPU_K_LOW;
}

int speed_cpu_class_of_gtype(int gtype)
{
	switch (gtype) {
	case RF_GT_F32:
	case RF_GT_F16:
	case RF_GT_BF16:
		return SPEED_CPU_FLOAT;
	case RF_GT_Q4_0:
	case RF_GT_Q4_1:
	case RF_GT_IQ4_NL:
	case RF_GT_MXFP4:
		return SPEED_CPU_Q4_LEGACY;
	case RF_GT_Q5_0:
	case RF_GT_Q5_1:
		return SPEED_CPU_Q5_LEGACY;
	case RF_GT_Q8_0:
	case RF_GT_Q8_1:
		return SPEED_CPU_Q8_0;
	case RF_GT_Q2_K:
	case RF_GT_Q3_K:
		return SPEED_CPU_K_LOW;
	case RF_GT_Q4_K:
	case RF_GT_Q5_K:
		return SPEED_CPU_K4;
	case RF_GT_Q6_K:
		return SPEED_CPU_Q6_K;
	case RF_GT_IQ2_XXS:
	case RF_GT_IQ2_XS:
	case RF_GT_IQ3_XXS:
	case RF_GT_IQ1_S:
	case RF_GT_IQ3_S:
	case RF_GT_IQ2_S:
	case RF_GT_IQ4_XS:
	case RF_GT_IQ1_M:
	case RF_GT_TQ1_0:
	case RF_GT_TQ2_0:
		return SPEED_CPU_IQ;
	default:
		return -1;
	}
}

int speed_cpu_mix_from_types(const double *elements, const double *repacked, int n,
			     struct speed_cpu_mix *out)
{
	double all = 0, rep[SPEED_CPU_CLASS_N] = {0};

	memset(out, 0, sizeof(*out));
	for (int t = 0; elements && t < n; t++) {
		int c = speed_cpu_class_of_gtype(t);
		if (c < 0 || !(elements[t] > 0) || !isfinite(elements[t]))
			continue;
		out->share[c] += elements[t];
		if (repacked && repacked[t] > 0 && isfinite(repacked[t]))
			rep[c] += fmin(repacked[t], elements[t]);
		all += elements[t];
	}
	if (!(all > 0)) {
		memset(out, 0, sizeof(*out));
		return RF_E_INVALID_VALUE;
	}
	for (int c = 0; c < SPEED_CPU_CLASS_N; c++) {
		out->repacked[c] = out->share[c] > 0 ? rep[c] / out->share[c] : 0;
		out->share[c] /= all;
	}
	return 0;
}

static bool finite_nonneg(double x)
{
	return isfinite(x) && x >= 0;
}

static double clamp01(double x)
{
	return x < 0 ? 0 : x > 1 ? 1 : x;
}

int speed_cpu_isa_of_kernel(const char *name)
{
	if (!name)
		return SPEED_CPU_ISA_UNSET;
	if (strcmp(name, "avx2") == 0)
		return SPEED_CPU_ISA_AVX2;
	if (strcmp(name, "avx512") == 0)
		return SPEED_CPU_ISA_AVX512;
	/* vdpbf16ps comes with the VNNI generation (Cooper Lake, Zen 4). */
	if (strcmp(name, "avx512_vnni") == 0 || strcmp(name, "avx512_bf16") == 0)
		return SPEED_CPU_ISA_AVX512_VNNI;
	return SPEED_CPU_ISA_UNSET;
}

static bool x86_with_avx2(int isa)
{
	return isa >= SPEED_CPU_ISA_AVX2 && isa <= SPEED_CPU_ISA_AMX;
}

int speed_cpu_class_kernel(const struct speed_cpu_host *h, int cls, int ftype, double *scale,
			   bool *best)
{
	const struct speed_cpu_kernel *k;
	int kern;

	*scale = 1;
	if (best)
		*best = false;
	switch (cls) {
	case SPEED_CPU_Q4_LEGACY:
	case SPEED_CPU_Q5_LEGACY: /* the same signed block dot, a high-bit plane added */
		kern = HW_KERNEL_Q4_0;
		break;
	case SPEED_CPU_Q8_0:
		kern = HW_KERNEL_Q8_0;
		break;
	case SPEED_CPU_FLOAT:
		kern = ftype == RF_FT_BF16 ? HW_KERNEL_BF16 : HW_KERNEL_F16;
		break;
	default:
		return -1;
	}
	k = &h->kernel[kern];
	if (!x86_with_avx2(h->isa) || !(k->gops_per_thread > 0) || !(k->avx2_gops_per_thread > 0) ||
	    !isfinite(k->gops_per_thread) || !isfinite(k->avx2_gops_per_thread) ||
	    !x86_with_avx2(k->isa))
		return -1;
	/* A described class below the measured instructions runs AVX2's (an AVX2 backend on an
	 * AVX-512 host: the ratio is 1). */
	if (k->isa <= h->isa && k->isa > SPEED_CPU_ISA_AVX2) {
		*scale = k->gops_per_thread / k->avx2_gops_per_thread;
		if (best)
			*best = true;
	}
	return kern;
}

/* Class c's decode (elements/s) and prefill (FLOP/s) rates per thread with a share rep of its
 * elements repacked: a mix of layouts runs each share at its own rate. A class whose block dot
 * was measured on this host takes the measured factor over AVX2 in place of the table's for
 * its decode (float weights: and prefill, tinyBLAS's FMA has the dot's width); the K-quants
 * and i-quants run ggml's AVX2 dot on every x86 class, so measured, they keep the AVX2 rate. */
static void class_rates(const struct speed_cpu_host *h, int c, int ftype, double rep,
			double int8_gops, double f32_gflops, double *dec, double *pre)
{
	const struct class_eff *e = &class_eff[c];
	double base_dec, base_pre, k = 1;
	int isa = h->isa;
	bool measured = speed_cpu_class_kernel(h, c, ftype, &k, NULL) >= 0;
	bool avx2_dot = !measured && x86_with_avx2(isa) && c != SPEED_CPU_FLOAT &&
			h->kernel[HW_KERNEL_Q4_0].avx2_gops_per_thread > 0;

	if (c == SPEED_CPU_FLOAT) {
		base_dec = f32_gflops * 1e9 / 2 * (measured ? k : isa_scale[isa].f32);
		base_pre = f32_gflops * 1e9 * (measured ? k : isa_scale[isa].f32);
	} else {
		base_dec = int8_gops * 1e9 / 2 *
			   (measured ? k :
			    avx2_dot ? 1 :
				       isa_scale[isa].decode);
		base_pre = int8_gops * 1e9 * isa_scale[isa].prefill;
	}
	/* Where llama.cpp's backend for the ISA was measured per class, its factors over AVX2. */
	if (isa_class_scale[isa][c].decode > 0)
		base_dec = (c == SPEED_CPU_FLOAT ? f32_gflops : int8_gops) * 1e9 / 2 *
			   isa_class_scale[isa][c].decode;
	if (isa_class_scale[isa][c].prefill > 0)
		base_pre = (c == SPEED_CPU_FLOAT ? f32_gflops : int8_gops) * 1e9 *
			   isa_class_scale[isa][c].prefill;
	*dec = base_dec / ((1 - rep) / e->decode + rep / e->decode_repacked);
	*pre = base_pre / ((1 - rep) / e->prefill + rep / e->prefill_repacked);
}

/* w's mix: its own, or the file type's class for all with w's repacked share. */
static void work_mix(const struct speed_cpu_work *w, struct speed_cpu_mix *m)
{
	double sum = 0;

	for (int c = 0; c < SPEED_CPU_CLASS_N; c++)
		sum += finite_nonneg(w->mix.share[c]) ? w->mix.share[c] : 0;
	if (sum > 0) {
		for (int c = 0; c < SPEED_CPU_CLASS_N; c++) {
			m->share[c] = finite_nonneg(w->mix.share[c]) ? w->mix.share[c] / sum : 0;
			m->repacked[c] =
				isfinite(w->mix.repacked[c]) ? clamp01(w->mix.repacked[c]) : 0;
		}
		return;
	}
	double bpw = w->elements > 0 ? w->weight_bytes * 8 / w->elements : 0;
	int c = speed_cpu_class_of(w->weight_ftype, bpw);
	memset(m, 0, sizeof(*m));
	m->share[c] = 1;
	m->repacked[c] = clamp01(w->repacked_share);
}

int speed_cpu_rates(const struct speed_cpu_host *h, const struct speed_cpu_work *w,
		    struct speed_cpu_rates *out)
{
	struct speed_cpu_rates r;
	struct speed_cpu_mix m;
	double t_dec = 0, t_pre = 0, top = -1;
	bool measured;

	if (!h || !w || !out || h->isa <= SPEED_CPU_ISA_UNSET || h->isa >= SPEED_CPU_ISA_N ||
	    !finite_nonneg(w->weight_bytes) || !finite_nonneg(w->elements) ||
	    !finite_nonneg(w->layers) || !isfinite(w->repacked_share) ||
	    !isfinite(h->int8_gops_per_thread) || !isfinite(h->f32_gflops_per_thread))
		return RF_E_INVALID_VALUE;
	memset(&r, 0, sizeof(r));
	work_mix(w, &m);
	/* The host measurement runs the AVX2 kernels; on an AVX2 host they are the anchor
	 * itself. Measured elsewhere, its figures still stand for that host's AVX2 rate. */
	measured = h->int8_gops_per_thread > 0 && h->f32_gflops_per_thread > 0;
	r.measured = measured;
	r.int8_gops_per_thread = measured ? h->int8_gops_per_thread : DEFAULT_INT8_GOPS;
	r.f32_gflops_per_thread = measured ? h->f32_gflops_per_thread : DEFAULT_F32_GFLOPS;
	r.threads = h->threads > 0 ? h->threads : SPEED_CPU_DEFAULT_THREADS;
	r.rows_decode = r.rows_prefill = -1;
	/* Each class's elements at its own rate: the time per element adds up over the mix. */
	for (int c = 0; c < SPEED_CPU_CLASS_N; c++) {
		double dec, pre;
		if (!(m.share[c] > 0))
			continue;
		class_rates(h, c, w->weight_ftype, m.repacked[c], r.int8_gops_per_thread,
			    r.f32_gflops_per_thread, &dec, &pre);
		t_dec += m.share[c] / dec;
		t_pre += m.share[c] / pre;
		r.repacked += m.share[c] * m.repacked[c];
		if (m.share[c] > top) {
			top = m.share[c];
			r.cls = c;
		}
		/* The fewest rows behind a class that carries a real part of the work. */
		if (m.share[c] >= 0.05) {
			if (r.rows_decode < 0 || class_eff[c].rows_decode < r.rows_decode)
				r.rows_decode = class_eff[c].rows_decode;
			if (r.rows_prefill < 0 || class_eff[c].rows_prefill < r.rows_prefill)
				r.rows_prefill = class_eff[c].rows_prefill;
		}
	}
	if (!(t_dec > 0) || !(t_pre > 0))
		return RF_E_INVALID_VALUE;
	r.decode_rate = 1 / t_dec;
	r.prefill_rate = 1 / t_pre;
	if (r.rows_decode < 0)
		r.rows_decode = class_eff[r.cls].rows_decode;
	if (r.rows_prefill < 0)
		r.rows_prefill = class_eff[r.cls].rows_prefill;
	*out = r;
	return 0;
}

double speed_cpu_working_threads(int threads)
{
	double t = threads > 0 ? threads : SPEED_CPU_DEFAULT_THREADS, q = t / SATURATION_THREADS;

	return t / sqrt(1 + q * q);
}

double speed_cpu_sync_ms(int threads, bool measured)
{
	int t = threads > 0 ? threads : SPEED_CPU_DEFAULT_THREADS;

	return measured ? SYNC_MS_PER_LAYER_MEASURED : t * SYNC_MS_PER_THREAD_LAYER;
}

bool speed_cpu_rates_sized(const struct speed_cpu_work *w)
{
	double sum = 0;

	for (int c = 0; c < SPEED_CPU_CLASS_N; c++)
		sum += finite_nonneg(w->mix.share[c]) ? w->mix.share[c] : 0;
	return !(sum > 0);
}

double speed_cpu_decode_s_rated(const struct speed_cpu_rates *r, const struct speed_cpu_work *w,
				double bandwidth_gbs, bool *kernel_bound)
{
	double t_mem, t_kernel;

	/* What speed_cpu_rates refuses of a work's sizes. */
	if (!(bandwidth_gbs > 0) || !isfinite(bandwidth_gbs) || !finite_nonneg(w->weight_bytes) ||
	    !finite_nonneg(w->elements) || !finite_nonneg(w->layers))
		return -1;
	t_mem = w->weight_bytes / (bandwidth_gbs * 1e9);
	t_kernel = w->elements / ((double)r->threads * r->decode_rate);
	if (kernel_bound)
		*kernel_bound = t_kernel > t_mem;
	return (t_kernel > t_mem ? t_kernel : t_mem) +
	       w->layers * speed_cpu_sync_ms(r->threads, r->measured) * 1e-3;
}

double speed_cpu_decode_s(const struct speed_cpu_host *h, const struct speed_cpu_work *w,
			  double bandwidth_gbs, bool *kernel_bound)
{
	struct speed_cpu_rates r;

	if (!(bandwidth_gbs > 0) || !isfinite(bandwidth_gbs) || speed_cpu_rates(h, w, &r) < 0)
		return -1;
	return speed_cpu_decode_s_rated(&r, w, bandwidth_gbs, kernel_bound);
}

double speed_cpu_prefill_s_rated(const struct speed_cpu_rates *r, const struct speed_cpu_work *w)
{
	/* What speed_cpu_rates refuses of a work's sizes, and no work at all. */
	if (!finite_nonneg(w->weight_bytes) || !finite_nonneg(w->elements) ||
	    !finite_nonneg(w->layers) || !(w->elements > 0))
		return -1;
	return 2 * w->elements / (speed_cpu_working_threads(r->threads) * r->prefill_rate);
}

double speed_cpu_prefill_s(const struct speed_cpu_host *h, const struct speed_cpu_work *w)
{
	struct speed_cpu_rates r;

	if (speed_cpu_rates(h, w, &r) < 0)
		return -1;
	return speed_cpu_prefill_s_rated(&r, w);
}
