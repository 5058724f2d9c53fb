/*
 * llama.cpp's CPU weight repacking rules (see repack.h), transcribed from ggml-cpu's
 * ggml_repack_get_optimal_repack_type() and qtype_has_amx_kernels().
 */
#include "core/fit/cpu/repack.h"

#include "core/hw/hw.h"

int rf_repack_isa_from_bits(uint32_t isa)
{
	if (isa & HW_ISA(AMX))
		return RF_REPACK_AMX;
	if (isa & HW_ISA(AVX512F))
		return RF_REPACK_AVX512;
	if (isa & HW_ISA(AVX2))
		return RF_REPACK_AVX2;
	if (isa & HW_ISA(DOTPROD))
		return RF_REPACK_ARM;
	return RF_REPACK_NONE;
}

const char *rf_repack_isa_name(int cls)
{
	static const char *const names[RF_REPACK_N] = {"none", "avx2", "avx512", "amx", "arm"};
	return cls >= 0 && cls < RF_REPACK_N ? names[cls] : "none";
}

/* The x86 repack buffer (AVX2; AVX-512 adds Q2_K): 8-row interleaves. */
static bool x86_takes(int type, int64_t ne1, bool avx512)
{
	switch (type) {
	case RF_GT_Q4_0:
	case RF_GT_Q4_K:
	case RF_GT_IQ4_NL:
	case RF_GT_MXFP4:
		return ne1 % 8 == 0;
	case RF_GT_Q2_K:
		return avx512 && ne1 % 8 == 0;
	default:
		return false;
	}
}

bool rf_repack_takes(int cls, int type, int64_t ne1, bool expert)
{
	switch (cls) {
	case RF_REPACK_AVX2:
		return x86_takes(type, ne1, false);
	case RF_REPACK_AVX512:
		return x86_takes(type, ne1, true);
	case RF_REPACK_AMX:
		/* AMX comes first among the extra buffers and takes plain matrix products of its
		 * types; the rest (experts among them) falls to the AVX-512 repack. */
		if (!expert && ne1 % 32 == 0 &&
		    (type == RF_GT_Q4_0 || type == RF_GT_Q4_1 || type == RF_GT_Q8_0 ||
		     type == RF_GT_Q4_K || type == RF_GT_Q5_K || type == RF_GT_Q6_K ||
		     type == RF_GT_IQ4_XS))
			return true;
		return x86_takes(type, ne1, true);
	case RF_REPACK_ARM:
		switch (type) {
		case RF_GT_Q4_0:
		case RF_GT_IQ4_NL:
		case RF_GT_MXFP4:
		case RF_GT_Q8_0:
			return ne1 % 4 == 0;
		case RF_GT_Q4_K:
		case RF_GT_Q5_K:
		case RF_GT_Q6_K:
			return ne1 % 8 == 0;
		default:
			return false;
		}
	default:
		return false;
	}
}
