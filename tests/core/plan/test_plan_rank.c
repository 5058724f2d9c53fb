/*
 * The ranking scores and orders of core/plan/plan_rank.c, with numbers worked by hand, and
 * the hardware sweep of core/plan/plan_hardware.c over the shipped devices with a machine
 * resolver of the test's own: for fine-tuning a 70B with QLoRA, every device offered runs it
 * at the count given and not at one fewer (by the fine-tuning planner itself), a device the
 * resolver cannot describe is skipped, and the answer is in plan_rank_hardware's order.
 */
#include <math.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/model.h"
#include "core/plan/plan_hardware.h"
#include "core/plan/plan_rank.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

START_TEST(scores_are_the_documented_formulas)
{
	struct plan_rank_score s;

	/* 8B at a divergence of 0.01, 50 tokens/s, half the memory:
	 * 10 x log2(8) = 30, less 1 = 29; 10 x log10(51) = 17.08; 10 x 0.5 = 5. */
	plan_rank_inference(8, 0.01, 50, 0.5, &s);
	ck_assert_double_eq_tol(s.quality, 29.0, 1e-9);
	ck_assert_double_eq_tol(s.speed, 17.1, 1e-9);
	ck_assert_double_eq_tol(s.headroom, 5.0, 1e-9);
	ck_assert_double_eq_tol(s.score, 51.1, 1e-9);
	/* Unknowns count for nothing: params taken as 1B (10 x log2(1) = 0), no divergence,
	 * no speed, no headroom at or above the whole budget. */
	plan_rank_inference(0, -1, -1, 1.2, &s);
	ck_assert_double_eq_tol(s.quality, 0.0, 1e-9);
	ck_assert_double_eq_tol(s.speed, 0.0, 1e-9);
	ck_assert_double_eq_tol(s.headroom, 0.0, 1e-9);
	ck_assert_double_eq_tol(s.score, 0.0, 1e-9);
	/* Each doubling of the parameters is worth 10 at every size: a 135M model is 30 below
	 * a 1.08B one (with log2(1 + params) it was within 10). */
	{
		struct plan_rank_score tiny, one;
		plan_rank_inference(0.135, 0, 60, 0.1, &tiny);
		plan_rank_inference(1.08, 0, 60, 0.1, &one);
		ck_assert_double_eq_tol(one.quality - tiny.quality, 30.0, 0.11);
	}
	/* Fine-tuning: 70B (10 x log2(70) = 61.29), 999 tokens/s (30), 90% used (1). */
	plan_rank_finetune(70, 999, 0.9, &s);
	ck_assert_double_eq_tol(s.quality, 61.3, 1e-9);
	ck_assert_double_eq_tol(s.speed, 30.0, 1e-9);
	ck_assert_double_eq_tol(s.headroom, 1.0, 1e-9);
	ck_assert_double_eq_tol(s.score, 92.3, 1e-9);
	/* Below interactive speed the user waits: 14B at 5 tokens/s (10 x log2(14) = 38.07;
	 * 10 x log10(6) = 7.78; -10 x log2(15 / 5) = -15.85; 10 x 0.2 = 2) ranks below an 8B at
	 * 10 (30; 10.41; -10 x log2(1.5) = -5.85; 2), which it beat by quality alone. */
	plan_rank_inference(14, 0, 5, 0.8, &s);
	ck_assert_double_eq_tol(s.wait, -15.8, 1e-9);
	ck_assert_double_eq_tol(s.score, 38.1 + 7.8 - 15.8 + 2.0, 1e-9);
	{
		struct plan_rank_score eight;
		plan_rank_inference(8, 0, 10, 0.8, &eight);
		ck_assert_double_eq_tol(eight.wait, -5.8, 1e-9);
		ck_assert(eight.score > s.score);
	}
	/* At or above 15 tokens/s nobody waits; an unknown speed counts for nothing. */
	plan_rank_inference(14, 0, 15, 0.8, &s);
	ck_assert_double_eq(s.wait, 0);
	plan_rank_inference(14, 0, -1, 0.8, &s);
	ck_assert_double_eq(s.wait, 0);
	/* Fine-tuning has no wait. */
	plan_rank_finetune(70, 1, 0.9, &s);
	ck_assert_double_eq(s.wait, 0);
	/* The terms shown add up to the score. */
	for (double p = 0.5; p < 500; p *= 1.7) {
		plan_rank_inference(p, p / 1000, 100 / p, p / 600, &s);
		ck_assert_double_eq_tol(
			s.score, round((s.quality + s.speed + s.wait + s.headroom) * 10) / 10,
			1e-9);
	}
	/* $2.50 an hour for two devices at 25 tokens/s: $55.56 per million tokens. */
	ck_assert_double_eq_tol(plan_rank_usd_per_million(2.5, 2, 25), 5e6 / 90000, 1e-9);
	ck_assert_double_eq(plan_rank_usd_per_million(-1, 2, 25), -1);
	ck_assert_double_eq(plan_rank_usd_per_million(2.5, 2, 0), -1);
}
END_TEST

START_TEST(orders_are_stable_and_documented)
{
	struct plan_rank_model m[] = {
		{"b", false, 50, 0}, {"a", false, 50, 1}, {"c", true, 10, 2},
		{"d", false, 70, 3}, {"e", true, 20, 4},
	};
	static const char *const want_m[] = {"e", "c", "d", "a", "b"};
	struct plan_rank_hw h[] = {
		{"x", 1, -1, 30, 0}, {"y", 2, 4.0, 10, 1}, {"z", 1, 4.0, 10, 2},
		{"w", 1, 3.0, 5, 3}, {"v", 1, -1, 60, 4},  {"u", 2, -1, 90, 5},
	};
	static const char *const want_h[] = {"w", "z", "y", "v", "x", "u"};

	plan_rank_models(m, 5);
	for (int i = 0; i < 5; i++)
		ck_assert_str_eq(m[i].id, want_m[i]);
	ck_assert_uint_eq(m[3].index, 1); /* the caller's index travels with its entry */
	plan_rank_hardware(h, 6);
	for (int i = 0; i < 6; i++)
		ck_assert_str_eq(h[i].id, want_h[i]);
	ck_assert_uint_eq(h[0].index, 3);
}
END_TEST

static struct device_table devices;
static struct model_catalog *models;

/* The test's resolver: count GPUs of d, each with its memory less 2% (at least 256 MiB),
 * bf16, CUDA; the host's RAM as the sweep assumes it. Refuses the RTX 4090 (to show a device
 * that cannot be described is skipped) and counts its calls. */
struct stub {
	int calls;
};

static int stub_machine(void *ctx, const struct device_profile *d, int count, int64_t ram,
			struct plan_hw_machine *out)
{
	struct stub *st = ctx;
	int64_t total = (int64_t)(d->memory_gib * GIB);
	int64_t reserve = total / 50 > 256LL * 1024 * 1024 ? total / 50 : 256LL * 1024 * 1024;
	enum device_compute_kind kind;

	st->calls++;
	if (strcmp(d->id, "rtx-4090") == 0)
		return RF_E_INVALID_VALUE;
	memset(out, 0, sizeof(*out));
	out->ft.backend = d->kind == DEVICE_KIND_SOC && strcmp(d->vendor, "apple") == 0 ?
				  PLAN_FT_BACKEND_METAL :
				  PLAN_FT_BACKEND_CUDA;
	out->ft.budget_bytes = total - reserve;
	out->ft.bf16 = true;
	out->ft.tflops = device_compute_tflops(d, &kind);
	out->ft.n_gpus = count;
	for (int i = 0; i < count; i++)
		out->ft.gpu_budget_bytes[i] = total - reserve;
	out->ft.host_ram_bytes = ram;
	out->ft.device_class = TRAIN_CLASS_DATACENTER;
	out->ft.bandwidth_gbs = d->memory_bandwidth_gbs;
	return 0;
}

START_TEST(the_sweep_keeps_the_fewest_devices)
{
	const struct model_entry *e;
	struct model_params params;
	struct plan_ft_model fm;
	struct plan_hw_request r;
	struct plan_hw_answer a;
	struct stub st = {0};
	int offloaded = 0, several = 0;

	t_profiles_load(&devices, &models, NULL);
	e = model_catalog_find(models, "llama-3.1-70b");
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(model_param_counts(&e->arch, &params), 0);
	fm.arch = &e->arch;
	fm.params = &params;
	memset(&r, 0, sizeof(r));
	r.finetune = true;
	r.ft.task = PLAN_FT_TEXT_GENERATION;
	r.ft.methods = PLAN_FT_METHOD_BIT(TRAIN_QLORA);
	r.usd_per_hour = 2.0;
	ck_assert_int_eq(plan_hardware(&devices, NULL, &fm, NULL, &r, stub_machine, &st, &a), 0);
	ck_assert_int_eq(st.calls, a.planned);
	ck_assert(!a.truncated);
	ck_assert_int_gt(a.n_hits, 20);
	for (int i = 0; i < a.n_hits; i++) {
		const struct plan_hw_hit *h = &a.hits[i];
		struct plan_hw_machine m;
		struct plan_ft_result less;
		ck_assert_str_ne(h->device->id, "rtx-4090");
		ck_assert(h->ft.feasible && h->ft.reached_target);
		ck_assert_int_eq(h->ft.best.n_gpus, h->count);
		ck_assert_int_le(h->count, PLAN_HW_MAX_COUNT);
		/* Cheapest first: every device here has a price (its own or the request's). */
		ck_assert(h->usd_per_million < 0 || i == 0 ||
			  a.hits[i - 1].usd_per_million <= h->usd_per_million);
		offloaded += h->ft.best.offload != TRAIN_OFFLOAD_NONE;
		several += h->count > 1;
		if (h->count == 1)
			continue;
		/* One fewer does not run it the same way (nothing offloaded where nothing is). */
		ck_assert_int_eq(stub_machine(&st, h->device, h->count - 1,
					      plan_hw_ram_bytes(h->device, h->count - 1), &m),
				 0);
		if (h->ft.best.offload == TRAIN_OFFLOAD_NONE)
			m.ft.host_ram_bytes = -1;
		ck_assert_int_eq(plan_finetune(&fm, &m.ft, &r.ft, &less), 0);
		ck_assert_msg(!less.feasible || !less.reached_target, "%s: %d fit, %d offered",
			      h->device->id, h->count - 1, h->count);
	}
	ck_assert_int_gt(several, 0);
	ck_assert_int_gt(offloaded, 0);
	plan_hw_answer_free(&a);
	plan_hw_answer_free(NULL);
	t_profiles_free(&devices, &models, NULL);
}
END_TEST

Suite *plan_rank_suite(void)
{
	Suite *s = suite_create("plan_rank");
	TCase *tc = tcase_create("plan_rank");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, scores_are_the_documented_formulas);
	tcase_add_test(tc, orders_are_stable_and_documented);
	tcase_add_test(tc, the_sweep_keeps_the_fewest_devices);
	suite_add_tcase(s, tc);
	return s;
}
