/*
 * Preference and RL objectives as TRL runs them (core/fit/train_memory.c, train_speed.c),
 * each checked against its mechanism:
 * - KTO: one completion a row (SFT's activations), a reference model as DPO's, and three
 *   forwards without gradients (the KL batch through the policy, the batch and the KL batch
 *   through the reference): full fine-tuning without checkpointing is 6N + 3A a token for
 *   SFT and 12N + 6A for KTO, twice the compute; precomputed reference log-probs leave one
 *   forward (4/3), as does DPO's reference per sequence.
 * - GRPO: rows are prompt + completion, logits for the completion only, the generation
 *   batch's KV cache (2 x kv heads x head_dim x 2 bytes a token and layer), a reference model
 *   only with beta > 0, colocated vLLM's share held beside training, and the generation time
 *   bound below by reading every weight once per completion token.
 */
#include <math.h>

#include "core/fit/train_memory.h"
#include "core/fit/train_speed.h"
#include "tests/core/fit/train_models.h"
#include "tests/test.h"

#define GIB (1024LL * 1024 * 1024)

static struct train_settings full_sft(void)
{
	struct train_settings s = {.mode = TRAIN_FULL,
				   .weight_bits = 16,
				   .batch_size = 4,
				   .seq_len = 1024,
				   .gradient_checkpointing = false,
				   .optimizer = TRAIN_OPT_ADAMW_FUSED,
				   .provider = TRAIN_PROVIDER_HUGGINGFACE,
				   .flash_attention = true};
	return s;
}

static struct train_speed speed(const struct train_model *m, const struct train_settings *s,
				struct train_memory *mem /* OUT */)
{
	struct train_device h100 = {
		.bf16_tflops = 989, .bandwidth_gbs = 3350, .device_class = TRAIN_CLASS_DATACENTER};
	struct train_speed sp;

	ck_assert_int_eq(train_memory_estimate(m, s, mem), 0);
	ck_assert_int_eq(train_speed_estimate(m, s, mem, &h100, &sp), 0);
	return sp;
}

/* Asserts that got is ratio times base (to rounding). */
static void assert_ratio(double got, double base, double ratio)
{
	ck_assert_msg(fabs(got - ratio * base) <= 1e-9 * base, "%g is not %g x %g", got, ratio,
		      base);
}

/* Returns the FLOPs per token of b over a's. */
static double flops_ratio(const struct train_model *m, const struct train_settings *a,
			  const struct train_settings *b)
{
	struct train_memory mem;

	return speed(m, b, &mem).flops_per_token / speed(m, a, &mem).flops_per_token;
}

START_TEST(kto_holds_sft_activations_and_a_reference)
{
	struct train_model m = t_llama31_8b();
	struct train_settings s = full_sft();
	struct train_memory sft, kto, pre, lora;

	ck_assert_int_eq(train_memory_estimate(&m, &s, &sft), 0);
	s.objective = TRAIN_OBJECTIVE_KTO;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &kto), 0);
	/* Unpaired rows: the tokens, activations and loss of SFT; the KL batch runs without
	 * gradients and keeps nothing. */
	ck_assert_int_eq(kto.activations_bytes, sft.activations_bytes);
	ck_assert_int_eq(kto.logits_bytes, sft.logits_bytes);
	/* The reference: a 16-bit copy, and its forward's 16-bit logits (and one row's
	 * log-softmax) beside the policy's. */
	ck_assert_int_eq(kto.reference_bytes, 2 * m.params_total);
	ck_assert_int_eq(kto.reference_logits_bytes, (4LL * 1024 + 1024) * m.vocab * 2);
	ck_assert_int_gt(kto.total_bytes - sft.total_bytes,
			 kto.reference_bytes + kto.reference_logits_bytes);
	/* Precomputed reference log-probs: SFT's memory exactly. */
	s.precomputed_ref_logps = true;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &pre), 0);
	ck_assert_int_eq(pre.reference_bytes, 0);
	ck_assert_int_eq(pre.total_bytes, sft.total_bytes);
	/* Adapters: the reference is the base with the adapter disabled. */
	s.precomputed_ref_logps = false;
	s.mode = TRAIN_LORA;
	s.lora_rank = 16;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &lora), 0);
	ck_assert_int_eq(lora.reference_bytes, 0);
	ck_assert_int_gt(lora.reference_logits_bytes, 0);
}
END_TEST

START_TEST(kto_costs_three_forwards_more)
{
	struct train_model m = t_llama31_8b();
	struct train_settings s = full_sft();
	struct train_memory mem;
	struct train_settings k;
	struct train_speed sft, kto, pre, dpo;

	sft = speed(&m, &s, &mem);
	s.objective = TRAIN_OBJECTIVE_KTO;
	kto = speed(&m, &s, &mem);
	/* Without checkpointing SFT is forward + 2 forwards' backward (6N + 3A): a forward is
	 * a third of it, and KTO adds three. */
	assert_ratio(kto.flops_per_token, sft.flops_per_token, 2.0);
	assert_ratio(kto.compute_s, sft.compute_s, 2.0);
	ck_assert(kto.tokens_per_s < sft.tokens_per_s);
	s.precomputed_ref_logps = true;
	pre = speed(&m, &s, &mem);
	assert_ratio(pre.flops_per_token, sft.flops_per_token, 4.0 / 3.0);
	/* DPO's reference forward: a third of a forward and backward more per sequence. */
	s.objective = TRAIN_OBJECTIVE_DPO;
	s.precomputed_ref_logps = false;
	dpo = speed(&m, &s, &mem);
	assert_ratio(dpo.flops_per_token, sft.flops_per_token, 4.0 / 3.0);
	/* With checkpointing SFT is four forwards' worth (8N + 4A): KTO adds three of four. */
	s = full_sft();
	s.gradient_checkpointing = true;
	k = s;
	k.objective = TRAIN_OBJECTIVE_KTO;
	assert_ratio(flops_ratio(&m, &s, &k), 1.0, 7.0 / 4.0);
}
END_TEST

static struct train_settings lora_grpo(void)
{
	struct train_settings s = {.mode = TRAIN_LORA,
				   .weight_bits = 16,
				   .batch_size = 8,
				   .seq_len = 512 + 256,
				   .lora_rank = 16,
				   .gradient_checkpointing = true,
				   .optimizer = TRAIN_OPT_ADAMW_FUSED,
				   .provider = TRAIN_PROVIDER_HUGGINGFACE,
				   .flash_attention = true,
				   .objective = TRAIN_OBJECTIVE_GRPO,
				   .completion_len = 256,
				   .padded = true};
	return s;
}

START_TEST(grpo_counts_its_completions_and_generation)
{
	struct train_model m = t_llama31_8b();
	struct train_settings s = lora_grpo();
	/* Keys and values, 8 heads of 128, 16 bits, 32 layers. */
	int64_t kv_token = 32LL * 2 * 8 * 128 * 2;
	struct train_memory g, longer, more_rows, server, colocate, need, accum, one, z3;

	ck_assert_int_eq(train_kv_bytes_per_token(&m), kv_token);
	ck_assert_int_eq(train_memory_estimate(&m, &s, &g), 0);
	ck_assert_int_eq(g.kv_cache_bytes, 8LL * (512 + 256) * kv_token);
	ck_assert_int_ge(g.generation_bytes, g.kv_cache_bytes);
	/* The loss over the completion's positions only (transformers' 16 bytes a logit). */
	ck_assert_int_eq(g.logits_bytes, 8LL * 256 * m.vocab * 16);
	ck_assert_int_eq(g.reference_bytes, 0);
	/* Longer completions and more rows need more. */
	s.completion_len = 1024;
	s.seq_len = 512 + 1024;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &longer), 0);
	ck_assert_int_gt(longer.total_bytes, g.total_bytes);
	ck_assert_int_eq(longer.kv_cache_bytes, 8LL * (512 + 1024) * kv_token);
	s = lora_grpo();
	s.batch_size = 16;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &more_rows), 0);
	ck_assert_int_gt(more_rows.total_bytes, g.total_bytes);
	/* The completions of all accumulation steps are generated together. */
	s = lora_grpo();
	s.grad_accum_steps = 4;
	ck_assert_int_eq(train_generation_rows(&s), 32);
	ck_assert_int_eq(train_memory_estimate(&m, &s, &accum), 0);
	ck_assert_int_eq(accum.kv_cache_bytes, 4 * g.kv_cache_bytes);
	/* A vLLM server holds nothing here; colocated vLLM holds its share of the GPU, beside
	 * everything training needs (no allocator slack on its own pool). */
	s = lora_grpo();
	s.generation = TRAIN_GEN_VLLM_SERVER;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &server), 0);
	ck_assert_int_eq(server.generation_bytes, 0);
	ck_assert_int_le(server.total_bytes, g.total_bytes);
	s.generation = TRAIN_GEN_VLLM_COLOCATE;
	s.vllm_share = 0.3;
	s.gpu_memory_bytes = 80 * GIB;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &colocate), 0);
	ck_assert_int_eq(colocate.generation_bytes, (int64_t)(0.3 * 80 * GIB));
	ck_assert_int_eq(colocate.total_bytes - server.total_bytes, colocate.generation_bytes);
	/* The GPU unknown: what vLLM needs, its own 16-bit weights and the cache. */
	s.gpu_memory_bytes = 0;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &need), 0);
	ck_assert_int_eq(need.generation_bytes, 2 * m.params_total + need.kv_cache_bytes);
	/* ZeRO-3 gathers the whole 16-bit weights for model.generate. */
	s = lora_grpo();
	s.mode = TRAIN_FULL;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &one), 0);
	s.strategy = TRAIN_STRATEGY_ZERO3;
	s.n_gpus = 4;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &z3), 0);
	ck_assert_int_lt(z3.weights_bytes, 2 * m.params_total);
	ck_assert_int_eq(z3.generation_bytes - one.generation_bytes,
			 2 * m.params_total - z3.weights_bytes);
	/* A completion longer than the row is refused. */
	s = lora_grpo();
	s.completion_len = s.seq_len + 1;
	ck_assert_int_lt(train_memory_estimate(&m, &s, &g), 0);
}
END_TEST

/* model.generate's phase (KV cache and prefill, no gradients or activations) sets the peak
 * when it is larger than training's: many rows, short of gradients. */
START_TEST(grpo_generation_phase_can_set_the_peak)
{
	struct train_model m = t_llama31_8b();
	struct train_settings s = lora_grpo();
	struct train_memory hf, server;

	s.batch_size = 1;
	s.grad_accum_steps = 64;
	s.seq_len = 512 + 4096;
	s.completion_len = 4096;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &hf), 0);
	s.generation = TRAIN_GEN_VLLM_SERVER;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &server), 0);
	/* 64 rows of 4608 tokens: 38.6 GB of cache, beyond one row's training work. */
	ck_assert_int_eq(hf.kv_cache_bytes, 64LL * 4608 * train_kv_bytes_per_token(&m));
	ck_assert_int_gt(hf.total_bytes, server.total_bytes);
	ck_assert_int_ge(hf.total_bytes, hf.weights_bytes + hf.adapter_bytes + hf.optimizer_bytes +
						 hf.generation_bytes);
}
END_TEST

START_TEST(grpo_reference_only_with_beta)
{
	struct train_model m = t_llama31_8b();
	struct train_settings s = lora_grpo(), base;
	struct train_memory none, ref;

	s.mode = TRAIN_FULL;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &none), 0);
	ck_assert(!train_has_reference(&s));
	base = s;
	s.grpo_reference = true;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &ref), 0);
	ck_assert_int_eq(ref.reference_bytes, 2 * m.params_total);
	/* The reference scores the completions in the generation phase: nothing beside the
	 * training forward's logits. */
	ck_assert_int_eq(ref.reference_logits_bytes, 0);
	ck_assert_int_ge(ref.total_bytes - none.total_bytes, ref.reference_bytes);
	/* Its forward: with checkpointing a training token is four forwards, one more. */
	assert_ratio(flops_ratio(&m, &base, &s), 1.0, 5.0 / 4.0);
}
END_TEST

START_TEST(grpo_generation_is_bound_by_reading_the_weights)
{
	struct train_model m = t_llama31_8b();
	struct train_settings s = lora_grpo();
	struct train_memory mem;
	struct train_speed hf, server, longer, accum, big;
	double bw = 3350e9, peak = 989e12;
	double kv_full = 8.0 * (512 + 256) * (double)train_kv_bytes_per_token(&m);

	hf = speed(&m, &s, &mem);
	s.generation = TRAIN_GEN_VLLM_SERVER;
	server = speed(&m, &s, &mem);
	/* Each of the 256 steps reads vLLM's 16-bit weights at no more than the bandwidth, and
	 * no less than half of it, with every row's cache; the prefill of 8 x 512 tokens at no
	 * less than a fifth of the peak. */
	ck_assert(server.generation_s >= 256.0 * 2.0 * (double)m.params_total / bw);
	ck_assert(server.generation_s <=
		  256.0 * (2.0 * (double)m.params_total + kv_full) / (0.5 * bw) +
			  8.0 * 512 * 2.5 * (double)m.params_total / (0.2 * peak));
	ck_assert(server.tokens_per_s < (8.0 * 768) / server.generation_s);
	/* model.generate through PEFT dispatches every adapted projection each step. */
	ck_assert(hf.generation_s > server.generation_s);
	/* Longer completions take longer. */
	s.completion_len = 1024;
	s.seq_len = 512 + 1024;
	longer = speed(&m, &s, &mem);
	ck_assert(longer.generation_s > 3.0 * server.generation_s);
	/* One generation serves the accumulation steps: per micro-batch, a quarter of
	 * generating four micro-batches' rows at once. */
	s = lora_grpo();
	s.generation = TRAIN_GEN_VLLM_SERVER;
	s.grad_accum_steps = 4;
	accum = speed(&m, &s, &mem);
	s.grad_accum_steps = 1;
	s.batch_size = 32;
	big = speed(&m, &s, &mem);
	assert_ratio(accum.generation_s, big.generation_s, 0.25);
}
END_TEST

Suite *train_preference_suite(void)
{
	Suite *s = suite_create("train_preference");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, kto_holds_sft_activations_and_a_reference);
	tcase_add_test(tc, kto_costs_three_forwards_more);
	tcase_add_test(tc, grpo_counts_its_completions_and_generation);
	tcase_add_test(tc, grpo_generation_phase_can_set_the_peak);
	tcase_add_test(tc, grpo_reference_only_with_beta);
	tcase_add_test(tc, grpo_generation_is_bound_by_reading_the_weights);
	suite_add_tcase(s, tc);
	return s;
}
