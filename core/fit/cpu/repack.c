/*
 * llama.cpp's CPU weight repacking rules (see repack.h), as ggml-cpu decides them: the repack
 * buffer's choice of layout per type and ISA, and the AMX buffer's supports_op (2-D products,
 * out-features a multiple of two 16-row tiles, the types with AMX kernels and F16) and its
 * per-tensor allocation size.
 */
#include "core/fit/cpu/repack.h"

#include "core/fit/quant.h"
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

/* The types with AMX kernels (packed into tiles), and F16, which AMX multiplies unpacked. */
static bool amx_type(int type)
{
	switch (type) {
	case RF_GT_Q4_0:
	case RF_GT_Q4_1:
	case RF_GT_Q8_0:
	case RF_GT_Q4_K:
	case RF_GT_Q5_K:
	case RF_GT_Q6_K:
	case RF_GT_IQ4_XS:
	case RF_GT_F16:
		return true;
	default:
		return false;
	}
}

/* AMX's buffer: 2-D products (not experts) with out-features a multiple of two tiles. */
static bool amx_takes(int type, int64_t ne1, bool expert)
{
	return !expert && ne1 > 0 && ne1 % 32 == 0 && amx_type(type);
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
		if (amx_takes(type, ne1, expert))
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

uint64_t rf_repack_bytes(int cls, int type, int64_t ne0, int64_t ne1, bool expert, uint64_t bytes)
{
	const struct rf_gtype_info *g = rf_gtype(type);
	uint64_t extra;

	/* The AMX extras are per block; every other extra buffer copies the bytes (AVX-512's
	 * repack among them, for what AMX declines). */
	if (cls != RF_REPACK_AMX || !amx_takes(type, ne1, expert) || !g || g->block <= 0 ||
	    g->bytes <= 0 || ne0 <= 0 || ne0 % g->block != 0)
		return bytes;
	switch (type) {
	case RF_GT_Q8_0:
	case RF_GT_Q4_K:
	case RF_GT_Q5_K:
		extra = 4;
		break;
	case RF_GT_IQ4_XS:
		extra = 2;
		break;
	default:
		return bytes;
	}
	/* Every block of every row carries the extra. */
	return bytes + bytes / (uint64_t)g->bytes * extra;
}
