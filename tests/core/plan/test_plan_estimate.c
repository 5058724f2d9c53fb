/*
 * The one estimate (core/plan/plan_estimate.h): what it answers is what its parts answer, and
 * the decisions it took over from the route hold. A llama.cpp setup's figures are
 * plan_evaluate_llama's, and the traffic is held to llama-server's slots; a vLLM engine runs as
 * many requests as its cache holds whole, up to max_num_seqs, and says when more queue; a
 * fine-tuning run with no GPU is one GPU's need with no strategy, and "max" needs a GPU.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/estimate.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "core/fit/serve_vllm.h"
#include "core/plan/plan_estimate.h"
#include "tests/core/fit/train_models.h"
#include "tests/core/plan/plan_fixtures.h"
#include "tests/test.h"

/* The small llama of the planning tests and its counts. */
static void tiny_llama(struct model_arch *a, struct model_params *mp)
{
	t_tiny_dense(a);
	ck_assert_int_eq(model_param_counts(a, mp), 0);
}

START_TEST(llama_figures_are_the_evaluation_and_slots_hold_the_traffic)
{
	struct model_arch a;
	struct model_params mp;
	struct plan_machine hw;
	struct rf_mem_weights *w = malloc(sizeof(*w));
	struct plan_est_answer *ans = malloc(sizeof(*ans));
	struct plan_result *r = malloc(sizeof(*r));
	struct plan_wsum sum;
	struct plan_setup s;
	struct plan_est_request q = {.kind = PLAN_EST_LLAMA_CPP, .detail = true};
	struct plan_est_context x = {.a = &a, .mp = &mp, .hw = &hw};

	ck_assert(w && ans && r);
	tiny_llama(&a, &mp);
	t_vllm_machine(&hw, 2 * RF_GIB, 8 * RF_GIB);
	ck_assert_int_eq(rf_weights_from_scheme(&a, RF_FT_Q4_K_M, -1, w), 0);
	plan_weights_sum(&a, w, RF_FT_Q4_K_M, hw.host.repack_isa, &sum);
	memset(&s, 0, sizeof(s));
	s.ftype = RF_FT_Q4_K_M;
	rf_infer_params_default(&s.p);
	s.p.n_ctx = 8192;
	s.p.n_parallel = 2;
	x.w = w;
	x.sum = &sum;
	q.u.llama = &s;
	q.traffic.concurrency = 5;
	q.traffic.usd_per_hour = -1; /* no price given */
	ck_assert_int_eq(plan_estimate(&q, &x, ans), 0);
	ck_assert_int_eq(plan_evaluate_llama(&a, &mp, w, &sum, &hw, &s, r, NULL, NULL), 0);
	ck_assert_int_eq(ans->res.mem.total_bytes, r->mem.total_bytes);
	ck_assert(ans->res.decode_tps == r->decode_tps && ans->res.decode_tps > 0);
	ck_assert(ans->speed.tps[SPEED_TEST_PREFILL] > 0);
	ck_assert_int_eq(ans->basis, SPEED_BASIS_ROOFLINE);
	ck_assert(!ans->measured_host); /* a GPU setup, no host measurement */
	/* Five streams asked, two slots: two decode together, the rest wait; a chat turn each. */
	ck_assert_int_eq(ans->serving.asked, 5);
	ck_assert_int_eq(ans->serving.t.concurrency, 2);
	ck_assert(ans->serving.warn & PLAN_WARN_SLOTS_FULL);
	ck_assert_int_eq(ans->serving.t.prompt, PLAN_PROMPT_TOKENS);
	ck_assert_int_eq(ans->serving.t.output, PLAN_OUTPUT_TOKENS);
	ck_assert(ans->serving.ok && ans->serving.b.aggregate_tokens_per_s > 0);
	ck_assert(ans->serving.usd_per_million_tokens < 0); /* no price given */
	q.traffic.usd_per_hour = 2;
	ck_assert_int_eq(plan_estimate(&q, &x, ans), 0);
	ck_assert_double_eq_tol(ans->serving.usd_per_million_tokens,
				2 / (ans->serving.b.aggregate_tokens_per_s * 3600) * 1e6, 1e-9);
	/* The planner's form, without detail, writes the same result. */
	q.detail = false;
	ck_assert_int_eq(plan_estimate(&q, &x, ans), 0);
	ck_assert_int_eq(ans->res.mem.total_bytes, r->mem.total_bytes);
	ck_assert(ans->res.aggregate_tps == r->aggregate_tps);
	free(w);
	free(ans);
	free(r);
}
END_TEST

START_TEST(vllm_runs_what_its_cache_holds_whole)
{
	struct model_arch a;
	struct model_params mp;
	struct plan_machine hw;
	struct plan_est_answer *ans = malloc(sizeof(*ans));
	struct plan_est_request q = {.kind = PLAN_EST_VLLM, .detail = true};
	struct plan_est_context x = {.a = &a, .mp = &mp, .hw = &hw};
	const struct vllm_capacity *c;
	int64_t whole;

	ck_assert_ptr_nonnull(ans);
	tiny_llama(&a, &mp);
	t_vllm_machine(&hw, 12 * RF_GIB, 16 * RF_GIB);
	vllm_setup_default(&q.u.vllm.engine);
	q.u.vllm.engine.max_model_len = 4096;
	ck_assert_int_eq(plan_estimate(&q, &x, ans), 0);
	c = &ans->vllm.cap;
	ck_assert(c->fits && c->kv_cache_tokens > 0 && c->max_num_seqs > 0);
	whole = c->kv_cache_tokens / (PLAN_PROMPT_TOKENS + PLAN_OUTPUT_TOKENS);
	ck_assert_int_eq(ans->serving.t.concurrency,
			 whole < c->max_num_seqs ? whole : c->max_num_seqs);
	ck_assert(!ans->serving.concurrency_queued);
	ck_assert(ans->so_ok && ans->so.decode_tokens_per_s > 0);
	ck_assert(ans->vllm.utilization > 0 && ans->vllm.utilization < 1);
	/* max_num_seqs caps it; asking for more than run at once queues the rest. */
	q.u.vllm.engine.max_num_seqs = 4;
	q.traffic.concurrency = 9;
	ck_assert_int_eq(plan_estimate(&q, &x, ans), 0);
	ck_assert_int_eq(ans->serving.vllm_at_once, 4);
	ck_assert_int_eq(ans->serving.t.concurrency, 9);
	ck_assert(ans->serving.concurrency_queued);
	/* A length beyond the model's positions is refused, with the setting named. */
	q.u.vllm.engine.max_model_len = 1 << 20;
	q.u.vllm.engine.max_positions = a.max_position_embeddings;
	ck_assert_int_lt(plan_estimate(&q, &x, ans), 0);
	ck_assert_str_eq(ans->vllm.error_field, "max_model_len");
	free(ans);
}
END_TEST

START_TEST(training_without_a_gpu_is_one_gpus_need)
{
	struct train_model tm = t_llama31_8b();
	struct plan_est_answer *ans = malloc(sizeof(*ans));
	struct plan_est_request q = {.kind = PLAN_EST_TRAIN};
	struct plan_est_context x = {.tm = &tm};
	struct plan_train_request *t = &q.u.train;

	ck_assert_ptr_nonnull(ans);
	t->s.mode = TRAIN_LORA;
	t->s.weight_bits = 16;
	t->s.batch_size = 1;
	t->s.seq_len = 2048;
	t->s.lora_rank = 16;
	t->s.lora_targets = TRAIN_LORA_ALL_LINEAR;
	t->s.gradient_checkpointing = true;
	t->s.flash_attention = true;
	t->s.n_gpus = 1;
	t->s.nodes = 1;
	t->strategy_auto = true;
	t->nodes = 1;
	t->gpus.host_budget = -1;
	t->gpus.min_budget = -1;
	t->dataset_tokens = t->epochs = t->usd_per_hour = -1;
	ck_assert_int_eq(plan_estimate(&q, &x, ans), 0);
	ck_assert(!ans->train.fits);
	ck_assert_int_eq(ans->train.budget, -1);
	ck_assert_int_eq(ans->train.s.strategy, TRAIN_STRATEGY_NONE);
	ck_assert(!ans->train.strategy_auto);
	ck_assert(ans->train.mem.total_bytes > 0);
	ck_assert(ans->train.tokens_per_s < 0 && !ans->train.speed_known);
	/* "max" needs a GPU with a known size. */
	t->max_seq_len = true;
	ck_assert_int_eq(plan_estimate(&q, &x, ans), RF_E_INVALID_VALUE);
	ck_assert_int_eq(ans->train.error, PLAN_TRAIN_E_MAX_NO_GPU);
	/* On a 24 GiB GPU it is the longest that fits, and one token more does not. */
	t->gpus.n = 1;
	t->gpus.budget[0] = 24 * RF_GIB;
	t->gpus.min_budget = 24 * RF_GIB;
	ck_assert_int_eq(plan_estimate(&q, &x, ans), 0);
	ck_assert(ans->train.fits);
	ck_assert_int_gt(ans->train.s.seq_len, 2048);
	t->max_seq_len = false;
	t->s.seq_len = ans->train.s.seq_len + 1;
	t->s.padded = ans->train.s.padded;
	t->padded_given = true;
	ck_assert_int_eq(plan_estimate(&q, &x, ans), 0);
	ck_assert(!ans->train.fits);
	free(ans);
}
END_TEST

/* A format's host kernel rates worked out once (plan_wsum_rates) give every setup the figures
 * it gets when each speed works them out: a GPU with every split toward the host, and a host
 * alone fast enough for its kernels to bound decode; one stream and several, every figure
 * equal. */
START_TEST(a_formats_host_rates_time_every_setup_alike)
{
	struct model_arch a;
	struct model_params mp;
	struct plan_machine hw;
	struct rf_mem_weights *w = malloc(sizeof(*w));
	struct plan_result *r1 = malloc(sizeof(*r1)), *r2 = malloc(sizeof(*r2));
	struct plan_llama_speed sp1, sp2;
	struct plan_wsum each, once;
	struct plan_setup s;
	int kernel_bound = 0;

	ck_assert(w && r1 && r2);
	tiny_llama(&a, &mp);
	ck_assert_int_eq(rf_weights_from_scheme(&a, RF_FT_Q4_K_M, -1, w), 0);
	for (int gpu = 1; gpu >= 0; gpu--) {
		t_gpu_machine(&hw, 2 * RF_GIB, 8 * RF_GIB);
		hw.speed.host.cpu_isa = SPEED_CPU_ISA_AVX2;
		if (!gpu) {
			hw.n_dev = 0;
			hw.speed.n_devices = 0;
			hw.speed.backend = SPEED_BACKEND_CPU;
			hw.speed.host.bandwidth_gbs = 2000; /* the kernels bound decode */
		}
		plan_weights_sum(&a, w, RF_FT_Q4_K_M, hw.host.repack_isa, &each);
		once = each;
		ck_assert(!each.host_rates_known);
		plan_wsum_rates(&once, &hw);
		ck_assert(once.host_rates_known);
		for (int ngl = 0; ngl <= (gpu ? (int)a.n_layers + 1 : 0); ngl++)
			for (int np = 1; np <= 4; np *= 4) {
				memset(&s, 0, sizeof(s));
				s.ftype = RF_FT_Q4_K_M;
				rf_infer_params_default(&s.p);
				s.p.n_ctx = 8192;
				s.p.n_gpu_layers = ngl;
				s.p.n_parallel = np;
				ck_assert_int_eq(plan_evaluate_llama(&a, &mp, w, &each, &hw, &s, r1,
								     &sp1, NULL),
						 0);
				ck_assert_int_eq(plan_evaluate_llama(&a, &mp, w, &once, &hw, &s, r2,
								     &sp2, NULL),
						 0);
				ck_assert(r1->decode_tps > 0);
				ck_assert(r1->decode_tps == r2->decode_tps);
				ck_assert(r1->decode_tps_full_ctx == r2->decode_tps_full_ctx);
				ck_assert(r1->aggregate_tps == r2->aggregate_tps);
				ck_assert(sp1.tps[SPEED_TEST_PREFILL] ==
					  sp2.tps[SPEED_TEST_PREFILL]);
				ck_assert(sp1.roofline[SPEED_TEST_PREFILL] > 0);
				/* Kernel-bound: a faster kernel would be faster. */
				if (!gpu) {
					struct plan_wsum faster = once;
					faster.host_rates.decode_rate *= 2;
					faster.host_rates.prefill_rate *= 2;
					ck_assert_int_eq(plan_evaluate_llama(&a, &mp, w, &faster,
									     &hw, &s, r2, &sp2,
									     NULL),
							 0);
					kernel_bound += r2->decode_tps > r1->decode_tps &&
							sp2.tps[SPEED_TEST_PREFILL] >
								sp1.tps[SPEED_TEST_PREFILL];
				}
			}
	}
	ck_assert_int_eq(kernel_bound, 2); /* the host's rates were the ones used */
	/* No ISA class for the host: nothing to work out. */
	hw.speed.host.cpu_isa = SPEED_CPU_ISA_UNSET;
	plan_wsum_rates(&once, &hw);
	ck_assert(!once.host_rates_known);
	free(w);
	free(r1);
	free(r2);
}
END_TEST

Suite *plan_estimate_suite(void)
{
	Suite *s = suite_create("plan_estimate");
	TCase *tc = tcase_create("one estimate");

	tcase_add_test(tc, llama_figures_are_the_evaluation_and_slots_hold_the_traffic);
	tcase_add_test(tc, vllm_runs_what_its_cache_holds_whole);
	tcase_add_test(tc, training_without_a_gpu_is_one_gpus_need);
	tcase_add_test(tc, a_formats_host_rates_time_every_setup_alike);
	suite_add_tcase(s, tc);
	return s;
}
