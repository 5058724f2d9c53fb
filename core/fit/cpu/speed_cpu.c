/*
 * CPU speed by mechanism (see speed_cpu.h): kernel rates per weight type and instruction set.
 *
 * Fitted on make bench-cpu (tests/llama/calibrate_cpu.c, rows in
 * tests/llama/cpu_speed_calibration.csv): node-llama-cpp 3.22.1's CPU build (its AVX2
 * "haswell" variant) on this project's 2-core AMD EPYC host (AVX2, no AVX-512; 27.2 GB/s read,
 * 165 int8 GOPS and 46 f32 GFLOPS per thread as measured beside the runs), 2 threads, the
 * Qwen2.5-0.5B, Qwen3-0.6B and Llama-3.2-1B shapes in Q4_0 (repacked) and Q8_0, pp128 and tg32.
 * Decode: the per-layer synchronisation and the Q4_0 dot rate come from the three Q4_0 rows
 * together (24, 28 and 16 layers of 0.5, 0.6 and 1.2 billion elements tell a cost per layer
 * from a cost per element: 0.56 ms and 15.6 G elements/s per thread); Q8_0's dot rate is the
 * median of its three rows with that per-layer cost. Prefill: the median FLOP rate per thread of
 * each type's three rows. Each figure rests on three models, so no model sets it alone.
 * Q4_K_M, F16 and the other families had no quiet run (the host's load made llama.cpp's
 * threads wait on each other, 10-50x below these figures): they take the family nearest by
 * mechanism (rows_* = 0, said in the answer).
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
 * Arm with i8mm: prefill is fitted on the four CPU rows of ../shared/calibration/
 * llamacpp_tg_pp.csv (Cix CP8180 with 12 threads and Radxa Dragon Q8B with 8, TinyLlama 1.1B
 * and Llama 3.2 3B in Q4_K_M, pp512: 0.49-0.80 of this host's AVX2 rate per thread, median
 * 0.65; their cores are smaller than a desktop x86 core and half of them are efficiency
 * cores). dotprod has half of smmla's multiply-adds per instruction, plain NEON a third of
 * that again; decode keeps the same proportions. */
static const struct {
	const char *name;
	double decode, prefill, f32;
} isa_scale[SPEED_CPU_ISA_N] = {
	[SPEED_CPU_ISA_UNSET] = {"unset", 1, 1, 1},
	[SPEED_CPU_ISA_BASIC] = {"sse", 0.5, 0.5, 0.5},
	[SPEED_CPU_ISA_AVX2] = {"avx2", 1, 1, 1},
	[SPEED_CPU_ISA_AVX512] = {"avx512", 1, 1.6, 1.6},
	[SPEED_CPU_ISA_AVX512_VNNI] = {"avx512_vnni", 1.3, 2.1, 1.6},
	[SPEED_CPU_ISA_AMX] = {"amx", 1.3, 4.2, 1.6},
	[SPEED_CPU_ISA_NEON] = {"neon", 0.15, 0.1, 0.3},
	[SPEED_CPU_ISA_DOTPROD] = {"dotprod", 0.45, 0.33, 0.4},
	[SPEED_CPU_ISA_I8MM] = {"i8mm", 0.45, 0.65, 0.4},
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

/* Q4_0 on AVX2 is always repacked (its rows are multiples of 8): its rows fit the repacked
 * columns, and the plain layout takes them too (ggml's vec_dot_q4_0_q8_0 does the same nibble
 * unpacking per block). Q8_0 is never repacked on x86. FLOAT's decode is the f32 FMA rate per
 * element after the f16 conversion (a third, F16C's throughput), its prefill the share of the
 * f32 rate tinyBLAS reaches (0.9, the single 43.5 GFLOPS per thread the previous model fitted
 * on F16 rows of an AVX-512 host over that host's FMA rate). K-quants and the 5/6-bit legacy
 * types unpack more bits per element than Q4_0: a little slower. */
static const struct class_eff class_eff[SPEED_CPU_CLASS_N] = {
	[SPEED_CPU_Q4_LEGACY] = {"q4_legacy", 0.19, 0.19, 0.48, 0.48, 3, 3},
	[SPEED_CPU_Q5_LEGACY] = {"q5_legacy", 0.15, 0.15, 0.40, 0.40, 0, 0},
	[SPEED_CPU_Q8_0] = {"q8_0", 0.058, 0.058, 0.395, 0.395, 3, 3},
	[SPEED_CPU_K_LOW] = {"k_low", 0.13, 0.13, 0.36, 0.36, 0, 0},
	[SPEED_CPU_K4] = {"k4", 0.17, 0.17, 0.44, 0.44, 0, 0},
	[SPEED_CPU_Q6_K] = {"q6_k", 0.15, 0.15, 0.40, 0.40, 0, 0},
	[SPEED_CPU_IQ] = {"iq", 0.08, 0.08, 0.24, 0.24, 0, 0},
	[SPEED_CPU_FLOAT] = {"float", 0.33, 0.33, 0.90, 0.90, 0, 0},
};

/* The threads' synchronisation per layer per generated token, ms (fitted with the Q4_0 rows;
 * two threads on a shared host: a quiet many-core host waits less, a busy one more). */
#define SYNC_MS_PER_LAYER 0.56

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

static bool finite_nonneg(double x)
{
	return isfinite(x) && x >= 0;
}

int speed_cpu_rates(const struct speed_cpu_host *h, const struct speed_cpu_work *w,
		    struct speed_cpu_rates *out)
{
	struct speed_cpu_rates r;
	const struct class_eff *e;
	double bpw, base_dec, base_pre, rep;
	bool measured;

	if (!h || !w || !out || h->isa <= SPEED_CPU_ISA_UNSET || h->isa >= SPEED_CPU_ISA_N ||
	    !finite_nonneg(w->weight_bytes) || !finite_nonneg(w->elements) ||
	    !finite_nonneg(w->layers) || !isfinite(w->repacked_share) ||
	    !isfinite(h->int8_gops_per_thread) || !isfinite(h->f32_gflops_per_thread))
		return RF_E_INVALID_VALUE;
	memset(&r, 0, sizeof(r));
	bpw = w->elements > 0 ? w->weight_bytes * 8 / w->elements : 0;
	r.cls = speed_cpu_class_of(w->weight_ftype, bpw);
	e = &class_eff[r.cls];
	/* The host measurement runs the AVX2 kernels; on an AVX2 host they are the anchor
	 * itself. Measured elsewhere, its figures still stand for that host's AVX2 rate. */
	measured = h->int8_gops_per_thread > 0 && h->f32_gflops_per_thread > 0;
	r.measured = measured;
	r.int8_gops_per_thread = measured ? h->int8_gops_per_thread : DEFAULT_INT8_GOPS;
	r.f32_gflops_per_thread = measured ? h->f32_gflops_per_thread : DEFAULT_F32_GFLOPS;
	r.threads = h->threads > 0 ? h->threads : SPEED_CPU_DEFAULT_THREADS;
	if (r.cls == SPEED_CPU_FLOAT) {
		base_dec = r.f32_gflops_per_thread * 1e9 / 2 * isa_scale[h->isa].f32;
		base_pre = r.f32_gflops_per_thread * 1e9 * isa_scale[h->isa].f32;
	} else {
		base_dec = r.int8_gops_per_thread * 1e9 / 2 * isa_scale[h->isa].decode;
		base_pre = r.int8_gops_per_thread * 1e9 * isa_scale[h->isa].prefill;
	}
	rep = w->repacked_share;
	if (rep < 0)
		rep = 0;
	if (rep > 1)
		rep = 1;
	r.repacked = rep;
	/* Elements per second: a mix of layouts runs each share at its own rate. */
	r.decode_rate = base_dec / ((1 - rep) / e->decode + rep / e->decode_repacked);
	r.prefill_rate = base_pre / ((1 - rep) / e->prefill + rep / e->prefill_repacked);
	r.rows_decode = e->rows_decode;
	r.rows_prefill = e->rows_prefill;
	*out = r;
	return 0;
}

double speed_cpu_decode_s(const struct speed_cpu_host *h, const struct speed_cpu_work *w,
			  double bandwidth_gbs, bool *kernel_bound)
{
	struct speed_cpu_rates r;
	double t_mem, t_kernel;

	if (!(bandwidth_gbs > 0) || !isfinite(bandwidth_gbs) || speed_cpu_rates(h, w, &r) < 0)
		return -1;
	t_mem = w->weight_bytes / (bandwidth_gbs * 1e9);
	t_kernel = w->elements / ((double)r.threads * r.decode_rate);
	if (kernel_bound)
		*kernel_bound = t_kernel > t_mem;
	return (t_kernel > t_mem ? t_kernel : t_mem) + w->layers * SYNC_MS_PER_LAYER * 1e-3;
}

double speed_cpu_prefill_s(const struct speed_cpu_host *h, const struct speed_cpu_work *w)
{
	struct speed_cpu_rates r;

	if (speed_cpu_rates(h, w, &r) < 0 || !(w->elements > 0))
		return -1;
	return 2 * w->elements / ((double)r.threads * r.prefill_rate);
}
