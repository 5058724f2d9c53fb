/*
 * AMX as llama.cpp can use it: a CPU whose cpuinfo lists AMX keeps it among the scan's
 * instruction sets only when the kernel grants the tile state (ggml asks with
 * ARCH_REQ_XCOMP_PERM before it uses AMX, and runs without it when refused). The grant is the
 * one boundary faked here: the recorded machine is a real Sapphire Rapids capture
 * (tests/fixtures/machines/nvidia-hgx-h100-8gpu, Xeon Platinum 8480+), read by the real probe.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/fit/cpu/repack.h"
#include "core/hw/hw.h"
#include "server/detect/detect.h"
#include "tests/test.h"

static bool granted(void)
{
	return true;
}

static bool refused(void)
{
	return false;
}

static void scan(bool (*grant)(void), struct hw_snapshot *s)
{
	char *root = t_path(t_src_dir(), "tests/fixtures/machines/nvidia-hgx-h100-8gpu");
	struct rf_detect_opts o = {.root = root, .amx_granted = grant};

	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	free(root);
}

static bool warned(const struct hw_snapshot *s, const char *what)
{
	for (int i = 0; i < s->n_warnings; i++)
		if (strstr(s->warnings[i], what))
			return true;
	return false;
}

START_TEST(amx_is_kept_only_where_the_kernel_grants_it)
{
	struct hw_snapshot *s = malloc(sizeof(*s));

	ck_assert_ptr_nonnull(s);
	/* A recorded root is taken at its word. */
	scan(NULL, s);
	ck_assert(s->cpu.isa & HW_ISA(AMX));
	ck_assert_int_eq(rf_repack_isa_from_bits(s->cpu.isa), RF_REPACK_AMX);
	scan(granted, s);
	ck_assert(s->cpu.isa & HW_ISA(AMX));
	ck_assert(!warned(s, "AMX"));
	/* Refused: llama.cpp's AMX buffer is off, its AVX-512 repack takes over. */
	scan(refused, s);
	ck_assert(!(s->cpu.isa & HW_ISA(AMX)));
	ck_assert(s->cpu.isa & HW_ISA(AVX512F));
	ck_assert_int_eq(rf_repack_isa_from_bits(s->cpu.isa), RF_REPACK_AVX512);
	ck_assert(warned(s, "does not grant its tile state"));
	free(s);
}
END_TEST

Suite *probe_amx_suite(void)
{
	Suite *s = suite_create("probe_amx");
	TCase *tc = tcase_create("probe_amx");

	tcase_add_test(tc, amx_is_kept_only_where_the_kernel_grants_it);
	suite_add_tcase(s, tc);
	return s;
}
