/*
 * Fine-tuning throughput (core/fit/train_speed.c) against torchtune's published tokens/s (the
 * cases are in tests/train_calib.c), and the mechanisms the issue names: LoRA on q/v only
 * is faster than on every linear layer, longer sequences are slower per token, Unsloth faster
 * than Hugging Face, checkpointing costs a forward, and GPUs on PCIe scale worse than on
 * NVLink.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/err.h"
#include "core/fit/train_memory.h"
#include "core/fit/train_speed.h"
#include "tests/core/fit/train_models.h"
#include "tests/test.h"
#include "tests/train_calib.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Published runs, each device class on its own (the issue: no class bought with another's
 * error): the data-centre class (torchtune's 8x A100) and the consumer class (RTX 4090) within
 * 10% median error. The workstation class has two rows, the RTX A6000's, which no one share of
 * its peak reconciles with this FLOP count: full at -5%, LoRA 22% slow (see tests/train_calib.c);
 * each is held within 25%. Every row within 40%. The data-centre class's measured runs (our
 * H200's) are checked in train_memory's reproduces_measured_gpu_peaks. */
START_TEST(reproduces_published_training_speeds)
{
	struct train_speed_result res[16];
	char err[256];
	int n = train_calib_speeds(t_data_dir(), t_src_dir(), res, 16, err, sizeof(err));
	const struct {
		enum train_device_class c;
		const char *name;
		double median, each;
	} classes[] = {{TRAIN_CLASS_DATACENTER, "data-centre", 0.10, 0.40},
		       {TRAIN_CLASS_CONSUMER, "consumer", 0.10, 0.40},
		       {TRAIN_CLASS_WORKSTATION, "workstation", 0.25, 0.25}};

	ck_assert_msg(n >= 8, "%s", err);
	for (size_t k = 0; k < sizeof(classes) / sizeof(classes[0]); k++) {
		double errs[16];
		int m = 0;

		for (int i = 0; i < n; i++) {
			if (res[i].device_class != classes[k].c)
				continue;
			printf("%-15s %-6s %-18s %7.0f tok/s, estimate %7.0f  %+5.1f%%\n",
			       res[i].model, res[i].method, res[i].gpu, res[i].measured,
			       res[i].estimate, res[i].error * 100);
			errs[m] = fabs(res[i].error);
			ck_assert_msg(errs[m] < classes[k].each, "%s %s %s", res[i].model,
				      res[i].method, res[i].gpu);
			m++;
		}
		ck_assert_msg(m >= 2, "%s: %d rows", classes[k].name, m);
		qsort(errs, (size_t)m, sizeof(errs[0]), cmp_double);
		double median = m % 2 ? errs[m / 2] : (errs[m / 2 - 1] + errs[m / 2]) / 2;
		printf("training speed, %s class: median |error| %.1f%% over %d rows\n",
		       classes[k].name, median * 100, m);
		ck_assert_msg(median <= classes[k].median, "%s: median %.1f%%", classes[k].name,
			      median * 100);
	}
}
END_TEST

static double tps(const struct train_model *m, const struct train_settings *s,
		  const struct train_device *d)
{
	struct train_memory mem;
	struct train_speed sp;

	ck_assert_int_eq(train_memory_estimate(m, s, &mem), 0);
	ck_assert_int_eq(train_speed_estimate(m, s, &mem, d, &sp), 0);
	return sp.tokens_per_s;
}

/* 16-bit LoRA of rank 16 on one 2048-token row, checkpointing and flash attention, foreach
 * AdamW: the setup the mechanism tests vary. */
static struct train_settings lora_2k(void)
{
	struct train_settings s = {.mode = TRAIN_LORA,
				   .weight_bits = 16,
				   .batch_size = 1,
				   .seq_len = 2048,
				   .lora_rank = 16,
				   .gradient_checkpointing = true,
				   .optimizer = TRAIN_OPT_ADAMW,
				   .flash_attention = true};
	return s;
}

/* A mixture of experts through the Hugging Face block: it loops over the experts a micro-batch
 * reaches and PEFT dispatches each one's adapted projections, so LoRA on every linear layer of
 * Qwen3-30B-A3B pays (4 + 3 x 128) adapted modules a layer and pass, each TRAIN_PEFT_HOST_S
 * (100 us); adapting attention only, or Unsloth's fused path, does not. */
START_TEST(experts_go_through_the_hugging_face_loop)
{
	struct train_model m = t_qwen3_30b_a3b(), dense = t_llama31_8b();
	struct train_settings s = lora_2k();
	struct train_device h100 = {
		.bf16_tflops = 989, .bandwidth_gbs = 3350, .device_class = TRAIN_CLASS_DATACENTER};
	struct train_memory mem;
	struct train_speed sp;
	double hit = train_experts_hit(&m, 2048), all, attention, unsloth;

	ck_assert_double_eq(train_experts_hit(&dense, 2048), 1);
	ck_assert_double_eq_tol(train_experts_hit(&m, 1), 8, 1e-9);
	ck_assert_double_eq(train_experts_hit(&m, 0), 0);
	ck_assert_double_gt(hit, 127.9);
	ck_assert_double_le(hit, 128);
	/* 16 tokens reach 128 x (1 - (15/16)^16) = 82.4 of them. */
	ck_assert_double_eq_tol(train_experts_hit(&m, 16), 82.4225, 1e-3);
	ck_assert_int_eq(train_memory_estimate(&m, &s, &mem), 0);
	ck_assert_int_eq(train_speed_estimate(&m, &s, &mem, &h100, &sp), 0);
	ck_assert_double_ge(sp.memory_s, (4 + 3 * hit) * 48 * 3 * TRAIN_PEFT_HOST_S);
	all = sp.tokens_per_s;
	s.lora_targets = TRAIN_LORA_Q | TRAIN_LORA_K | TRAIN_LORA_V | TRAIN_LORA_O;
	attention = tps(&m, &s, &h100);
	ck_assert_msg(attention > 10 * all, "attention only %.0f, all-linear %.0f", attention, all);
	s.lora_targets = 0;
	s.provider = TRAIN_PROVIDER_UNSLOTH;
	unsloth = tps(&m, &s, &h100);
	ck_assert_msg(unsloth > 10 * all, "Unsloth %.0f, Hugging Face %.0f", unsloth, all);
}
END_TEST

START_TEST(each_mechanism_moves_the_speed_the_right_way)
{
	struct train_model m = t_llama31_8b();
	struct train_settings s = lora_2k();
	struct train_device a6000 = {.bf16_tflops = 154.8,
				     .bandwidth_gbs = 768,
				     .device_class = TRAIN_CLASS_WORKSTATION};
	struct train_device h100 = {
		.bf16_tflops = 989, .bandwidth_gbs = 3350, .device_class = TRAIN_CLASS_DATACENTER};
	struct train_device rtx4090 = {
		.bf16_tflops = 165.2, .bandwidth_gbs = 1008, .device_class = TRAIN_CLASS_CONSUMER};
	double all = tps(&m, &s, &a6000), qv, longer, unsloth, nockpt, full;
	struct train_device bad = {0};
	struct train_memory mem;
	struct train_speed sp;

	s.lora_targets = TRAIN_LORA_Q | TRAIN_LORA_V;
	qv = tps(&m, &s, &a6000);
	ck_assert_msg(qv > all * 1.05, "q/v %.0f vs all-linear %.0f", qv, all);
	s.lora_targets = 0;
	s.seq_len = 32768;
	longer = tps(&m, &s, &a6000);
	ck_assert_msg(longer < all * 0.8, "32k %.0f vs 2k %.0f", longer, all);
	s.seq_len = 2048;
	/* Unsloth fuses PEFT's memory-bound work at the same GEMM utilisation: faster, by about
	 * what LLaMA-Factory measured (1.5-1.7x), never its stated 2x by a doubled utilisation. */
	s.provider = TRAIN_PROVIDER_UNSLOTH;
	unsloth = tps(&m, &s, &rtx4090);
	ck_assert(tps(&m, &s, &a6000) >= all);
	ck_assert_double_eq(train_utilisation(TRAIN_CLASS_CONSUMER, TRAIN_PROVIDER_UNSLOTH),
			    train_utilisation(TRAIN_CLASS_CONSUMER, TRAIN_PROVIDER_HUGGINGFACE));
	s.provider = TRAIN_PROVIDER_HUGGINGFACE;
	ck_assert_msg(unsloth > 1.2 * tps(&m, &s, &rtx4090) && unsloth < 2 * tps(&m, &s, &rtx4090),
		      "Unsloth %.0f, Hugging Face %.0f tok/s", unsloth, tps(&m, &s, &rtx4090));
	s.gradient_checkpointing = false;
	nockpt = tps(&m, &s, &a6000);
	ck_assert(nockpt > all * 1.2);
	s.gradient_checkpointing = true;
	s.mode = TRAIN_FULL;
	full = tps(&m, &s, &a6000);
	ck_assert(full < all);
	/* FLOPs: 8N with checkpointing for full fine-tuning, plus attention. */
	ck_assert(train_flops_per_token(&m, &s) > 8.0 * 7.5e9);
	/* The workstation card is faster than the GeForce one for training, as torchtune's
	 * compiled runs measured, though its FP16-accumulate peak is half the 4090's. */
	s.mode = TRAIN_LORA;
	s.compiled = true;
	ck_assert(tps(&m, &s, &a6000) > 1.3 * tps(&m, &s, &rtx4090));
	s.compiled = false;
	/* Eight NVLink GPUs scale better than eight PCIe consumer cards. */
	s.mode = TRAIN_FULL;
	s.precision = TRAIN_PRECISION_AMP;
	s.strategy = TRAIN_STRATEGY_ZERO2;
	s.n_gpus = 8;
	ck_assert_int_eq(train_memory_estimate(&m, &s, &mem), 0);
	ck_assert_int_eq(train_speed_estimate(&m, &s, &mem, &h100, &sp), 0);
	double nvlink = sp.scaling;
	ck_assert_int_eq(train_speed_estimate(&m, &s, &mem, &rtx4090, &sp), 0);
	ck_assert_msg(sp.scaling < nvlink && sp.scaling < 0.9, "pcie %.2f nvlink %.2f", sp.scaling,
		      nvlink);
	ck_assert_int_eq(train_speed_estimate(&m, &s, &mem, &bad, &sp), RF_E_INVALID_VALUE);
	/* Packed rows under SDPA read their seq x seq mask in every layer and pass (about 1% at
	 * 16k on an 8B: the slower kernel SDPA falls back to with a mask is not modelled), and
	 * the varlen kernel trains them as fast as padded rows. */
	s.strategy = TRAIN_STRATEGY_NONE;
	s.n_gpus = 1;
	s.mode = TRAIN_LORA;
	s.seq_len = 16384;
	{
		double padded = tps(&m, &s, &rtx4090), masked, varlen;
		s.packing = true;
		masked = tps(&m, &s, &rtx4090);
		s.varlen_attention = true;
		varlen = tps(&m, &s, &rtx4090);
		ck_assert_double_lt(masked, varlen);
		ck_assert_double_eq_tol(varlen, padded, 1e-9 * padded);
		/* Padded rows under SDPA read the same mask; flash-attention unpads them. */
		s.packing = false;
		s.varlen_attention = false;
		s.padded = true;
		ck_assert_double_eq_tol(tps(&m, &s, &rtx4090), masked, 1e-9 * masked);
		s.varlen_attention = true;
		ck_assert_double_eq_tol(tps(&m, &s, &rtx4090), padded, 1e-9 * padded);
	}
}
END_TEST

/* The optimizer step touches what is trained: with LoRA the adapters, their gradients and
 * states, never the frozen base, whichever optimizer steps them; with full fine-tuning the
 * weights too. (A fused or 8-bit step used to be charged two passes over the frozen base:
 * 32 GB a step for an 8B.) */
START_TEST(the_step_touches_only_what_is_trained)
{
	static const enum train_optimizer opts[] = {TRAIN_OPT_ADAMW_FUSED, TRAIN_OPT_ADAMW_8BIT,
						    TRAIN_OPT_PAGED_ADAMW_8BIT, TRAIN_OPT_SGD};
	struct train_model m = t_llama31_8b();
	struct train_settings s = {.mode = TRAIN_LORA,
				   .weight_bits = 16,
				   .batch_size = 1,
				   .seq_len = 2048,
				   .lora_rank = 16,
				   .gradient_checkpointing = true,
				   .flash_attention = true};
	struct train_device h100 = {
		.bf16_tflops = 989, .bandwidth_gbs = 3350, .device_class = TRAIN_CLASS_DATACENTER};
	struct train_memory mem;
	struct train_speed base, heavier;

	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		for (int mode = TRAIN_FULL; mode <= TRAIN_QLORA; mode++) {
			s.optimizer = opts[i];
			s.mode = (enum train_mode)mode;
			s.weight_bits = mode == TRAIN_QLORA ? 4 : 16;
			ck_assert_int_eq(train_memory_estimate(&m, &s, &mem), 0);
			ck_assert_int_eq(train_speed_estimate(&m, &s, &mem, &h100, &base), 0);
			/* The same run with a base twice as heavy in memory: only a trained
			 * base's step reads it. */
			mem.weights_bytes *= 2;
			ck_assert_int_eq(train_speed_estimate(&m, &s, &mem, &h100, &heavier), 0);
			if (mode == TRAIN_FULL)
				ck_assert_msg(
					heavier.memory_s > base.memory_s,
					"optimizer %zu: full fine-tuning's step reads the weights",
					i);
			else
				ck_assert_msg(heavier.memory_s == base.memory_s,
					      "optimizer %zu mode %d: %.6f s vs %.6f s a step", i,
					      mode, heavier.memory_s, base.memory_s);
		}
	}
}
END_TEST

/* The speed of s on an H100 SXM, with its memory estimate. */
static struct train_speed h100_speed(const struct train_model *m, const struct train_settings *s)
{
	static const struct train_device h100 = {
		.bf16_tflops = 989, .bandwidth_gbs = 3350, .device_class = TRAIN_CLASS_DATACENTER};
	struct train_memory mem;
	struct train_speed sp;

	ck_assert_int_eq(train_memory_estimate(m, s, &mem), 0);
	ck_assert_int_eq(train_speed_estimate(m, s, &mem, &h100, &sp), 0);
	return sp;
}

/* The same holds for every optimizer, foreach AdamW's and Adafactor's separate passes
 * included, on a base that is larger for real: a vocabulary twice as wide doubles the frozen
 * embedding and head and leaves the adapters as they are. A LoRA or QLoRA step costs the same
 * on either; full fine-tuning trains the wider embedding and steps more. */
START_TEST(no_optimizer_steps_a_frozen_base)
{
	struct train_model m = t_llama31_8b(), wide = m;
	struct train_settings s = {.batch_size = 1,
				   .seq_len = 2048,
				   .lora_rank = 16,
				   .gradient_checkpointing = true,
				   .flash_attention = true};
	struct train_memory mem, wide_mem;
	struct train_speed base, wider;

	wide.vocab *= 2;
	wide.params_total += wide.params_embedding + wide.params_output;
	wide.params_embedding *= 2;
	wide.params_output *= 2;
	for (int o = 0; o < TRAIN_OPT_COUNT; o++) {
		for (int mode = TRAIN_FULL; mode <= TRAIN_QLORA; mode++) {
			s.optimizer = (enum train_optimizer)o;
			s.mode = (enum train_mode)mode;
			s.weight_bits = mode == TRAIN_QLORA ? 4 : 16;
			ck_assert_int_eq(train_memory_estimate(&m, &s, &mem), 0);
			ck_assert_int_eq(train_memory_estimate(&wide, &s, &wide_mem), 0);
			ck_assert_int_gt(wide_mem.weights_bytes, mem.weights_bytes);
			base = h100_speed(&m, &s);
			wider = h100_speed(&wide, &s);
			if (mode == TRAIN_FULL)
				ck_assert_msg(wider.memory_s > base.memory_s,
					      "optimizer %d: full fine-tuning steps the embedding",
					      o);
			else
				ck_assert_msg(wider.memory_s == base.memory_s,
					      "optimizer %d mode %d: %.6f s vs %.6f s a step", o,
					      mode, wider.memory_s, base.memory_s);
		}
	}
}
END_TEST

/* Under ZeRO or FSDP each GPU steps its shard, whatever the optimizer (Adafactor's fp32
 * copies of the gradients included); with the optimizer on the host the GPU steps nothing,
 * and one GPU or DDP steps everything, as before. */
START_TEST(a_sharded_step_is_the_shards)
{
	struct train_model m = t_llama31_8b();
	struct train_settings s = {.mode = TRAIN_FULL,
				   .weight_bits = 16,
				   .batch_size = 1,
				   .seq_len = 2048,
				   .gradient_checkpointing = true,
				   .flash_attention = true};
	struct train_speed one, ddp, fsdp, offloaded;

	for (int o = 0; o < TRAIN_OPT_COUNT; o++) {
		s.optimizer = (enum train_optimizer)o;
		s.strategy = TRAIN_STRATEGY_NONE;
		s.n_gpus = 1;
		s.offload = TRAIN_OFFLOAD_NONE;
		one = h100_speed(&m, &s);
		s.strategy = TRAIN_STRATEGY_DDP;
		s.n_gpus = 8;
		ddp = h100_speed(&m, &s);
		ck_assert_double_eq_tol(ddp.memory_s, one.memory_s, 1e-12);
		s.strategy = TRAIN_STRATEGY_FSDP;
		fsdp = h100_speed(&m, &s);
		ck_assert_msg(fsdp.memory_s < 0.5 * one.memory_s, "optimizer %d: %.4f s vs %.4f s",
			      o, fsdp.memory_s, one.memory_s);
		s.offload = TRAIN_OFFLOAD_OPTIMIZER;
		offloaded = h100_speed(&m, &s);
		ck_assert_double_lt(offloaded.memory_s, fsdp.memory_s);
	}
}
END_TEST

/* devices.json: every GPU with a known tensor rate has a bf16 (fp32 accumulate) peak; a
 * GeForce card's is half its FP16-accumulate rate, a workstation or data-centre card's the
 * same; Apple GPUs run bf16 at their ALU rate. */
START_TEST(devices_carry_a_bf16_training_peak)
{
	struct train_speed_result res[16];
	char err[256];
	/* The speed cases load devices.json through the API loader and fail on a missing peak. */
	ck_assert_msg(train_calib_speeds(t_data_dir(), t_src_dir(), res, 16, err, sizeof(err)) >= 8,
		      "%s", err);
	ck_assert_msg(train_calib_devices_check(t_src_dir(), err, sizeof(err)) == 0, "%s", err);
}
END_TEST

Suite *train_speed_suite(void)
{
	Suite *s = suite_create("train_speed");
	TCase *tc = tcase_create("speed");

	tcase_add_test(tc, reproduces_published_training_speeds);
	tcase_add_test(tc, each_mechanism_moves_the_speed_the_right_way);
	tcase_add_test(tc, experts_go_through_the_hugging_face_loop);
	tcase_add_test(tc, the_step_touches_only_what_is_trained);
	tcase_add_test(tc, no_optimizer_steps_a_frozen_base);
	tcase_add_test(tc, a_sharded_step_is_the_shards);
	tcase_add_test(tc, devices_carry_a_bf16_training_peak);
	suite_add_tcase(s, tc);
	return s;
}
