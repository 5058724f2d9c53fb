/*
 * The hardware fingerprint: stable across scans of the same machine, different for a
 * different configuration.
 */
#include <string.h>

#include "core/err.h"
#include "core/hw/hw_fingerprint.h"
#include "tests/test.h"

static void two_gpu_box(struct hw_snapshot *s)
{
	hw_snapshot_init(s);
	strcpy(s->platform, "nvidia");
	strcpy(s->cpu.model, "AMD EPYC 7763 64-Core Processor");
	s->cpu.physical_cores = 64;
	s->memory.total_bytes = 512LL << 30;
	s->n_gpus = 2;
	for (int i = 0; i < 2; i++) {
		strcpy(s->gpus[i].vendor, "nvidia");
		strcpy(s->gpus[i].name, "NVIDIA A100-SXM4-80GB");
		s->gpus[i].memory_total_bytes = 85899345920LL;
		s->gpus[i].memory_free_bytes = 80000000000LL;
	}
}

START_TEST(fingerprint_ignores_what_changes_between_scans)
{
	struct hw_snapshot a, b;
	char fa[32], fb[32];

	two_gpu_box(&a);
	two_gpu_box(&b);
	ck_assert_int_eq(hw_fingerprint(&a, fa, sizeof(fa)), 0);
	ck_assert_uint_eq(strlen(fa), HW_FINGERPRINT_LEN);
	ck_assert(strncmp(fa, "hw-", 3) == 0);
	/* free memory, time, UUIDs, a few MiB of total and warnings do not count */
	b.gpus[0].memory_free_bytes = 1;
	b.memory.available_bytes = 12345;
	b.scanned_at_ms = 99;
	strcpy(b.gpus[1].uuid, "GPU-1234");
	b.gpus[1].memory_total_bytes -= 3 << 20;
	hw_warn(&b, "something");
	ck_assert_int_eq(hw_fingerprint(&b, fb, sizeof(fb)), 0);
	ck_assert_str_eq(fa, fb);
}
END_TEST

START_TEST(fingerprint_changes_with_the_configuration)
{
	struct hw_snapshot a, b;
	char fa[32], fb[32];

	two_gpu_box(&a);
	hw_fingerprint(&a, fa, sizeof(fa));

	two_gpu_box(&b);
	b.n_gpus = 1; /* a GPU disappeared */
	hw_fingerprint(&b, fb, sizeof(fb));
	ck_assert_str_ne(fa, fb);

	two_gpu_box(&b);
	strcpy(b.gpus[1].name, "NVIDIA A100-SXM4-40GB");
	b.gpus[1].memory_total_bytes = 42949672960LL;
	hw_fingerprint(&b, fb, sizeof(fb));
	ck_assert_str_ne(fa, fb);

	two_gpu_box(&b);
	b.memory.total_bytes = 256LL << 30;
	hw_fingerprint(&b, fb, sizeof(fb));
	ck_assert_str_ne(fa, fb);
}
END_TEST

START_TEST(fingerprint_refuses_a_short_buffer)
{
	struct hw_snapshot a;
	char small[8] = "xxxxxxx";

	two_gpu_box(&a);
	ck_assert_int_eq(hw_fingerprint(&a, small, sizeof(small)), RF_E_TOO_LARGE);
	ck_assert_str_eq(small, "");
}
END_TEST

Suite *hw_fingerprint_suite(void)
{
	Suite *s = suite_create("hw_fingerprint");
	TCase *tc = tcase_create("fingerprint");

	tcase_add_test(tc, fingerprint_ignores_what_changes_between_scans);
	tcase_add_test(tc, fingerprint_changes_with_the_configuration);
	tcase_add_test(tc, fingerprint_refuses_a_short_buffer);
	suite_add_tcase(s, tc);
	return s;
}
