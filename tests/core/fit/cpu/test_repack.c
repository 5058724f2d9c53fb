/*
 * The CPU repack rules on the instruction sets this host cannot show the oracle: which types
 * ggml-cpu's ggml_repack_get_optimal_repack_type() takes on x86 with AVX2 or AVX-512, on Arm
 * with dotprod, and what AMX takes first (qtype_has_amx_kernels), with the row counts their
 * interleaves need; and the class of a CPU from the ISA bits the cpuinfo parser reports,
 * checked on recorded machines.
 */
#include <stdlib.h>

#include "core/fit/cpu/repack.h"
#include "core/hw/hw.h"
#include "core/hw/hw_parse.h"
#include "tests/test.h"

START_TEST(types_by_instruction_set)
{
	/* AVX2: Q4_0, Q4_K, IQ4_NL, MXFP4 in groups of 8 rows; not Q8_0, Q6_K, Q2_K. */
	ck_assert(rf_repack_takes(RF_REPACK_AVX2, RF_GT_Q4_0, 4096, false));
	ck_assert(rf_repack_takes(RF_REPACK_AVX2, RF_GT_Q4_K, 4096, false));
	ck_assert(rf_repack_takes(RF_REPACK_AVX2, RF_GT_IQ4_NL, 4096, false));
	ck_assert(rf_repack_takes(RF_REPACK_AVX2, RF_GT_MXFP4, 2880, true));
	ck_assert(!rf_repack_takes(RF_REPACK_AVX2, RF_GT_Q4_0, 4100, false));
	ck_assert(!rf_repack_takes(RF_REPACK_AVX2, RF_GT_Q8_0, 4096, false));
	ck_assert(!rf_repack_takes(RF_REPACK_AVX2, RF_GT_Q6_K, 4096, false));
	ck_assert(!rf_repack_takes(RF_REPACK_AVX2, RF_GT_Q2_K, 4096, false));
	ck_assert(!rf_repack_takes(RF_REPACK_AVX2, RF_GT_F16, 4096, false));
	/* AVX-512 adds Q2_K. */
	ck_assert(rf_repack_takes(RF_REPACK_AVX512, RF_GT_Q2_K, 4096, false));
	/* Arm with dotprod: Q8_0, Q5_K and Q6_K too; 4-row groups for the 4x4 layouts. */
	ck_assert(rf_repack_takes(RF_REPACK_ARM, RF_GT_Q8_0, 4100, false));
	ck_assert(rf_repack_takes(RF_REPACK_ARM, RF_GT_Q6_K, 4096, false));
	ck_assert(!rf_repack_takes(RF_REPACK_ARM, RF_GT_Q6_K, 4100, false));
	ck_assert(!rf_repack_takes(RF_REPACK_ARM, RF_GT_Q2_K, 4096, false));
	/* AMX takes its types for plain products; experts fall to the AVX-512 repack. */
	ck_assert(rf_repack_takes(RF_REPACK_AMX, RF_GT_Q8_0, 4096, false));
	ck_assert(rf_repack_takes(RF_REPACK_AMX, RF_GT_IQ4_XS, 4096, false));
	ck_assert(!rf_repack_takes(RF_REPACK_AMX, RF_GT_Q8_0, 4096, true));
	ck_assert(rf_repack_takes(RF_REPACK_AMX, RF_GT_Q4_0, 4096, true));
	/* Nothing without an extra buffer. */
	ck_assert(!rf_repack_takes(RF_REPACK_NONE, RF_GT_Q4_0, 4096, false));
	ck_assert(!rf_repack_takes(-1, RF_GT_Q4_0, 4096, false));
	ck_assert_str_eq(rf_repack_isa_name(RF_REPACK_AVX512), "avx512");
	ck_assert_str_eq(rf_repack_isa_name(99), "none");
}
END_TEST

/* The class of a recorded machine's CPU, from its /proc/cpuinfo. */
static int class_of(const char *fixture)
{
	size_t len;
	char *text = t_fixture(fixture, &len);
	struct hw_cpu cpu = {0};
	int cls;

	ck_assert_int_eq(hw_parse_cpuinfo(text, len, &cpu), 0);
	cls = rf_repack_isa_from_bits(cpu.isa);
	free(text);
	return cls;
}

START_TEST(class_from_recorded_cpus)
{
	/* Ryzen 5 1600 (Zen 1): AVX2, no AVX-512. Ryzen 9 9950X (Zen 5): AVX-512. Ampere Altra
	 * (Neoverse N1): dotprod. */
	ck_assert_int_eq(class_of("amd-ryzen5-1600__proc-cpuinfo.txt"), RF_REPACK_AVX2);
	ck_assert_int_eq(class_of("amd-ryzen9-9950x__proc-cpuinfo-cpu0-only.txt"),
			 RF_REPACK_AVX512);
	ck_assert_int_eq(class_of("ampere-altra__proc-cpuinfo-cpu0-only.txt"), RF_REPACK_ARM);
	ck_assert_int_eq(rf_repack_isa_from_bits(HW_ISA(AVX2) | HW_ISA(AVX512F) | HW_ISA(AMX)),
			 RF_REPACK_AMX);
	ck_assert_int_eq(rf_repack_isa_from_bits(HW_ISA(AVX) | HW_ISA(F16C)), RF_REPACK_NONE);
}
END_TEST

Suite *cpu_repack_suite(void)
{
	Suite *s = suite_create("cpu_repack");
	TCase *tc = tcase_create("cpu_repack");

	tcase_add_test(tc, types_by_instruction_set);
	tcase_add_test(tc, class_from_recorded_cpus);
	suite_add_tcase(s, tc);
	return s;
}
