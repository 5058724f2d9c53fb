/*
 * The long-context decision (core/plan/plan_rope.c) on the cases the model cards give:
 * Qwen2.5-7B-Instruct (32768 positions, YaRN x4 from 32768 to 131072), Qwen3-8B (40960 in its
 * config, YaRN from 32768, factor 2.0 advised for 65,536 tokens), Llama 3.1 (131072 itself,
 * nothing documented beyond) and a model that states no positions.
 */
#include "core/plan/plan_rope.h"
#include "tests/test.h"

static const struct model_rope qwen_yarn = {MODEL_ROPE_YARN, 4.0, 32768, 1000000};

static struct model_arch arch_of(int64_t max_pos)
{
	struct model_arch a;

	model_arch_init(&a);
	a.max_position_embeddings = max_pos;
	return a;
}

START_TEST(qwen2_5_scales_only_past_its_window)
{
	struct model_arch a = arch_of(32768);
	struct plan_rope d;

	ck_assert_int_eq(plan_rope_max(&a, &qwen_yarn), 131072);
	plan_rope_decide(&a, &qwen_yarn, 16384, &d);
	ck_assert_int_eq(d.need, PLAN_ROPE_NATIVE);
	ck_assert_int_eq(d.use.type, MODEL_ROPE_NONE);
	plan_rope_decide(&a, &qwen_yarn, 32768, &d);
	ck_assert_int_eq(d.need, PLAN_ROPE_NATIVE);
	plan_rope_decide(&a, &qwen_yarn, 32769, &d); /* one past: x2 reaches it */
	ck_assert_int_eq(d.need, PLAN_ROPE_SCALED);
	ck_assert_double_eq(d.use.factor, 2.0);
	ck_assert_int_eq(d.use.orig_ctx, 32768);
	plan_rope_decide(&a, &qwen_yarn, 65537, &d);
	ck_assert_double_eq(d.use.factor, 4.0);
	plan_rope_decide(&a, &qwen_yarn, 131072, &d);
	ck_assert_int_eq(d.need, PLAN_ROPE_SCALED);
	ck_assert_double_eq(d.use.factor, 4.0);
	ck_assert_int_eq(plan_rope_reach(&d.use, d.native), 131072);
	plan_rope_decide(&a, &qwen_yarn, 131073, &d);
	ck_assert_int_eq(d.need, PLAN_ROPE_BEYOND);
	ck_assert_int_eq(d.max, 131072);
	ck_assert_int_eq(d.native, 32768);
}
END_TEST

START_TEST(qwen3_counts_its_config_window_as_trained)
{
	struct model_arch a = arch_of(40960);
	struct plan_rope d;

	plan_rope_decide(&a, &qwen_yarn, 40960, &d);
	ck_assert_int_eq(d.need, PLAN_ROPE_NATIVE);
	plan_rope_decide(&a, &qwen_yarn, 65536, &d); /* the card's own example: 2.0 */
	ck_assert_int_eq(d.need, PLAN_ROPE_SCALED);
	ck_assert_double_eq(d.use.factor, 2.0);
	ck_assert_int_eq(plan_rope_max(&a, &qwen_yarn), 131072);
}
END_TEST

START_TEST(nothing_documented_stops_at_the_trained_window)
{
	struct model_arch a = arch_of(131072), none = arch_of(0);
	struct model_rope odd = {MODEL_ROPE_YARN, 3.0, 8192, 10000};
	struct plan_rope d;

	ck_assert_int_eq(plan_rope_max(&a, NULL), 131072);
	plan_rope_decide(&a, NULL, 131072, &d);
	ck_assert_int_eq(d.need, PLAN_ROPE_NATIVE);
	plan_rope_decide(&a, NULL, 200000, &d);
	ck_assert_int_eq(d.need, PLAN_ROPE_BEYOND);
	ck_assert_int_eq(d.max, 131072);
	/* No positions stated (relative positions): no limit. */
	ck_assert_int_eq(plan_rope_max(&none, &qwen_yarn), 0);
	plan_rope_decide(&none, &qwen_yarn, 1 << 20, &d);
	ck_assert_int_eq(d.need, PLAN_ROPE_NATIVE);
	/* A documented factor that is no power of two is the top step. */
	a = arch_of(8192);
	plan_rope_decide(&a, &odd, 20000, &d);
	ck_assert_int_eq(d.need, PLAN_ROPE_SCALED);
	ck_assert_double_eq(d.use.factor, 3.0);
	plan_rope_decide(&a, &odd, 16000, &d);
	ck_assert_double_eq(d.use.factor, 2.0);
}
END_TEST

Suite *plan_rope_suite(void)
{
	Suite *s = suite_create("plan_rope");
	TCase *tc = tcase_create("plan_rope");

	tcase_add_test(tc, qwen2_5_scales_only_past_its_window);
	tcase_add_test(tc, qwen3_counts_its_config_window_as_trained);
	tcase_add_test(tc, nothing_documented_stops_at_the_trained_window);
	suite_add_tcase(s, tc);
	return s;
}
