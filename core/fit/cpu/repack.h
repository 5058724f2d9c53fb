/*
 * Which weights llama.cpp's CPU backend copies into an interleaved layout (an "extra" buffer:
 * CPU_REPACK, or AMX on Xeons with AMX) when it loads a model, as ggml-cpu's repack.cpp and
 * amx/ decide: by tensor type, by the CPU's instruction set and by the row count the
 * interleave needs. Only weights that a matrix multiplication reads are repacked (2-D weights
 * and stacked experts); token embeddings are read row by row and stay as they are, unless a
 * tied model reads them as its output head.
 *
 * The repacked copy has the bytes of the original (AMX's VNNI packing adds a little, not
 * modelled). With mmap the mapped file stays mapped beside the copy, so both count.
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

#endif
