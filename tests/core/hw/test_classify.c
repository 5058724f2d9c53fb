/*
 * The compute tier follows seed 000's rules exactly, at and around every threshold; platform
 * and backend follow the GPUs found; unknown sizes give no tier rather than a guess.
 */
#include <string.h>

#include "core/hw/classify.h"
#include "tests/test.h"

#define GIB (1024LL * 1024 * 1024)

START_TEST(seed_tier_rules_at_every_threshold)
{
	static const struct {
		double vram, ram;
		const char *tier;
	} rows[] = {
		{0, 64, "low_end"},         {7.19, 64, "low_end"},    {7.2, 15.19, "low_end"},
		{7.2, 15.2, "mid_range"},   {15.19, 64, "mid_range"}, {15.19, 8, "low_end"},
		{15.2, 15.19, "mid_range"}, {15.2, 15.2, "high_end"}, {80, 512, "high_end"},
		{24, 8, "mid_range"},       {6, -1, "low_end"},       {8, -1, NULL},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const char *t = hw_tier(rows[i].vram, rows[i].ram);
		if (!rows[i].tier)
			ck_assert_msg(t == NULL, "row %zu: %s", i, t);
		else
			ck_assert_msg(t && strcmp(t, rows[i].tier) == 0, "row %zu: %s, want %s", i,
				      t ? t : "(null)", rows[i].tier);
	}
}
END_TEST

static void add_gpu(struct hw_snapshot *s, const char *vendor, int64_t bytes, bool unified)
{
	struct hw_gpu *g = &s->gpus[s->n_gpus];

	memset(g, 0, sizeof(*g));
	g->index = s->n_gpus++;
	hw_strlcpy(g->vendor, vendor, sizeof(g->vendor));
	g->memory_total_bytes = bytes;
	g->unified_memory = unified;
}

START_TEST(platform_backend_and_tier_follow_the_gpus)
{
	struct hw_snapshot s;

	hw_snapshot_init(&s);
	s.memory.total_bytes = 64 * GIB;
	hw_classify(&s);
	ck_assert_str_eq(s.platform, "cpu");
	ck_assert_str_eq(s.compute_profile, "low_end");

	add_gpu(&s, "intel", -1, true);
	hw_classify(&s);
	ck_assert_str_eq(s.platform, "cpu"); /* an iGPU does not make a CUDA/ROCm platform */
	ck_assert_str_eq(s.compute_profile, "low_end");

	add_gpu(&s, "nvidia", 24 * GIB, false);
	add_gpu(&s, "nvidia", 8 * GIB, false);
	hw_classify(&s);
	ck_assert_str_eq(s.platform, "nvidia");
	ck_assert_str_eq(s.backend, "cuda");
	ck_assert_str_eq(s.compute_profile, "high_end"); /* the largest GPU decides */

	/* A container limit is the RAM that counts. */
	s.host.container.cgroup_memory_limit_bytes = 8 * GIB;
	hw_classify(&s);
	ck_assert_str_eq(s.compute_profile, "mid_range");

	hw_snapshot_init(&s);
	s.memory.total_bytes = 64 * GIB;
	add_gpu(&s, "nvidia", 61 * GIB, true);
	hw_classify(&s);
	ck_assert_str_eq(s.platform, "jetson");

	hw_snapshot_init(&s);
	s.memory.total_bytes = 36 * GIB;
	add_gpu(&s, "apple", 27 * GIB, true);
	hw_classify(&s);
	ck_assert_str_eq(s.platform, "apple_silicon");
	ck_assert_str_eq(s.backend, "metal");

	/* A GPU of unknown size might lift the tier: no tier, and a warning says why. */
	hw_snapshot_init(&s);
	s.memory.total_bytes = 64 * GIB;
	add_gpu(&s, "amd", -1, false);
	hw_classify(&s);
	ck_assert_str_eq(s.platform, "amd");
	ck_assert_str_eq(s.compute_profile, "");
	ck_assert_int_eq(s.n_warnings, 1);
	/* ...unless a known one already reaches the top tier. */
	add_gpu(&s, "amd", 64 * GIB, false);
	hw_classify(&s);
	ck_assert_str_eq(s.compute_profile, "high_end");
}
END_TEST

Suite *classify_suite(void)
{
	Suite *s = suite_create("classify");
	TCase *tc = tcase_create("tiers");

	tcase_add_test(tc, seed_tier_rules_at_every_threshold);
	tcase_add_test(tc, platform_backend_and_tier_follow_the_gpus);
	suite_add_tcase(s, tc);
	return s;
}
