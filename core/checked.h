/*
 * Checked integer arithmetic for sizes, offsets and counts that come from outside input (a
 * GGUF or safetensors header, a Hub's answer). Every sum or product of such numbers goes
 * through these, so that a lying file is refused with RF_E_RANGE instead of wrapping around
 * (unsigned) or being undefined behaviour (signed). They write *out only on success, like the
 * number parsers of core/numparse.h.
 */
#ifndef RIGFIT_CORE_CHECKED_H
#define RIGFIT_CORE_CHECKED_H

#include <stdint.h>

#include "core/err.h"

/* The largest integer a JSON number (an IEEE double) holds exactly: 2^53. Sizes read from
 * JSON are refused above it, since a larger one may already have been rounded. */
#define RF_JSON_INT_MAX (UINT64_C(1) << 53)

/* *out = a + b. Returns 0, or RF_E_RANGE when the sum does not fit in 64 bits. */
static inline int rf_ckd_add_u64(uint64_t *out /* OUT */, uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return RF_E_RANGE;
	*out = r;
	return 0;
}

/* *out = a * b. Returns 0, or RF_E_RANGE when the product does not fit in 64 bits. */
static inline int rf_ckd_mul_u64(uint64_t *out /* OUT */, uint64_t a, uint64_t b)
{
	uint64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return RF_E_RANGE;
	*out = r;
	return 0;
}

/* *acc += v for a signed total of non-negative amounts. Returns 0, or RF_E_RANGE (acc
 * untouched) when v or the sum is above INT64_MAX. */
static inline int rf_ckd_acc_i64(int64_t *acc, uint64_t v)
{
	int64_t r;

	if (v > (uint64_t)INT64_MAX || __builtin_add_overflow(*acc, (int64_t)v, &r))
		return RF_E_RANGE;
	*acc = r;
	return 0;
}

#endif
