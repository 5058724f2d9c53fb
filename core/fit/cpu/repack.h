/*
 * Which weights llama.cpp's CPU backend copies into an "extra" buffer (CPU_REPACK, or AMX on
 * Xeons whose kernel grants the AMX tile state) when it loads a model, and how large the copy
 * is, as ggml-cpu's repack.cpp and amx/ decide: by tensor type, by the instruction set the
 * loaded CPU backend was built for, and by the row count the interleave or tile needs. Only
 * weights that a matrix multiplication reads are candidates (2-D weights and stacked experts);
 * token embeddings are read row by row and stay as they are, unless a tied model reads them as
 * its output head.
 *
 *  - AVX2 and AVX-512 (CPU_REPACK): Q4_0, Q4_K, IQ4_NL and MXFP4 in 8-row interleaves (AVX-512
 *    adds Q2_K); the copy has the bytes of the original.
 *  - AMX: plain 2-D products (not stacked experts) whose row count is a multiple of 32 (two
 *    16-row tiles), of the types with AMX kernels (Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_XS)
 *    and F16 (kept unpacked). The packed rows carry per-block extras: Q8_0 a 4-byte
 *    compensation term per 32-element block, Q4_K and Q5_K 4 bytes per 256-element block,
 *    IQ4_XS 2 bytes. What AMX declines falls to the AVX-512 repack.
 *  - Arm with dotprod (and i8mm): Q4_0, IQ4_NL, MXFP4 and Q8_0 in 4-row, Q4_K, Q5_K and Q6_K in
 *    8-row interleaves.
 *
 * With mmap the file stays mapped beside the copy, except where the repacked tensors lie at
 * the file's ends (llama.cpp maps the span of the tensors it keeps in the plain buffer).
 *
 * Pure: no I/O.
 */
#ifndef RIGFIT_CORE_CPU_REPACK_H
#define RIGFIT_CORE_CPU_REPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/quant.h"

/* The instruction-set classes that decide repacking. */
enum rf_repack_isa {
	RF_REPACK_NONE = 0, /* no extra buffer (SSE-only x86, unknown CPUs) */
	RF_REPACK_AVX2,     /* x86 with AVX2: Q4_0, Q4_K, IQ4_NL, MXFP4 in 8-row groups */
	RF_REPACK_AVX512,   /* AVX-512 adds Q2_K */
	RF_REPACK_AMX,      /* AMX int8: Q4_0, Q4_1, Q8_0, Q4_K, Q5_K, Q6_K, IQ4_XS to AMX */
	RF_REPACK_ARM,      /* Arm with dotprod (and i8mm): Q4_0, Q4_K, Q5_K, Q6_K, IQ4_NL,
			       MXFP4, Q8_0 */
	RF_REPACK_N
};

/* Returns the class of a CPU from its hw.h ISA bits (HW_ISA()). */
int rf_repack_isa_from_bits(uint32_t isa);

/* Returns the class's name ("avx2", "none"...). */
const char *rf_repack_isa_name(int cls);

/* Returns true when a weight of type `type` with ne1 rows (ne[1]) that a matrix multiplication
 * reads goes to the extra buffer of class cls. expert: stacked experts (matrix multiplication
 * by expert id), which AMX does not take. */
bool rf_repack_takes(int cls, int type, int64_t ne1, bool expert);

/* Returns the bytes the extra buffer of class cls holds for a weight that it takes (see
 * rf_repack_takes) of type `type`, ne0 elements per row and ne1 rows, `bytes` in the file: the
 * file's bytes for CPU_REPACK and for AMX's F16 and 4-bit legacy types, more for the AMX types
 * whose packed rows carry extras. */
uint64_t rf_repack_bytes(int cls, int type, int64_t ne0, int64_t ne1, bool expert, uint64_t bytes);

#endif
