/*
 * The strategy and GPU-count searches (core/plan/plan_strategy.c) on the two cases users ask
 * about: an 8B full fine-tune on 8x H100 and a 70B QLoRA on 24 GB cards.
 */
#include <stdio.h>

#include "core/fit/train_memory.h"
#include "core/fit/train_parallel.h"
#include "core/plan/plan_strategy.h"
#include "tests/core/fit/train_models.h"
#include "tests/test.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* What users ask: an 8B full fine-tune on 8x H100 80GB and a 70B QLoRA on two 24 GB cards fit
 * with a stated strategy, where one GPU alone does not. */
START_TEST(auto_strategy_finds_what_fits)
{
	struct train_model m8 = t_llama31_8b(), m70 = t_llama31_70b();
	struct train_settings s = {.mode = TRAIN_FULL,
				   .weight_bits = 16,
				   .batch_size = 1,
				   .seq_len = 4096,
				   .gradient_checkpointing = true,
				   .optimizer = TRAIN_OPT_ADAMW,
				   .flash_attention = true,
				   .precision = TRAIN_PRECISION_AMP,
				   .n_gpus = 1};
	struct train_settings chosen;
	struct train_memory r;
	int64_t h100 = (int64_t)(78.4 * GIB), rtx3090 = (int64_t)(23.5 * GIB);
	int64_t ram = (int64_t)(230 * GIB); /* a 256 GiB machine less its reserve */

	ck_assert_int_eq(plan_strategy_auto(&m8, &s, h100, -1, &chosen, &r), 0);
	ck_assert_int_eq(plan_strategy_auto(&m8, &s, h100, ram, &chosen, &r), 1);
	ck_assert_int_ne(chosen.offload, TRAIN_OFFLOAD_NONE); /* one GPU needs offloading */
	s.n_gpus = 8;
	ck_assert_int_eq(plan_strategy_auto(&m8, &s, h100, -1, &chosen, &r), 1);
	ck_assert_msg(chosen.strategy == TRAIN_STRATEGY_ZERO1 && chosen.offload == 0, "%s",
		      train_strategy_name(chosen.strategy));
	ck_assert(r.total_bytes <= h100);
	ck_assert(r.comm_bytes_per_step > 0);
	/* A bf16 model with torch AdamW: 8 bytes per parameter, and the step's square roots of
	 * the moments 2 more (15 GiB), leave DDP above 78.4 GiB; ZeRO-1 shards the moments,
	 * which DeepSpeed keeps in fp32 beside an fp32 master copy (12 bytes per parameter,
	 * the step's copy 4 of them). */
	s.precision = TRAIN_PRECISION_BF16;
	ck_assert_int_eq(plan_strategy_auto(&m8, &s, h100, -1, &chosen, &r), 1);
	ck_assert_int_eq(chosen.strategy, TRAIN_STRATEGY_ZERO1);
	ck_assert_int_eq(r.optimizer_temp_bytes, r.optimizer_bytes / 3); /* of the shard */

	s.mode = TRAIN_QLORA;
	s.lora_rank = 16;
	s.seq_len = 2048;
	s.n_gpus = 1;
	ck_assert_int_eq(plan_strategy_auto(&m70, &s, rtx3090, ram, &chosen, &r), 1);
	printf("70B QLoRA 1x RTX 3090: %s + offload %s, %.1f GiB per GPU, host %.0f GiB\n",
	       train_strategy_name(chosen.strategy), train_offload_name(chosen.offload),
	       (double)r.total_bytes / GIB, (double)r.host_bytes / GIB);
	s.n_gpus = 2;
	ck_assert_int_eq(plan_strategy_auto(&m70, &s, rtx3090, ram, &chosen, &r), 1);
	ck_assert_int_eq(chosen.strategy, TRAIN_STRATEGY_FSDP_QLORA);
	printf("70B QLoRA 2x RTX 3090: %s + offload %s, %.1f GiB per GPU, host %.0f GiB\n",
	       train_strategy_name(chosen.strategy), train_offload_name(chosen.offload),
	       (double)r.total_bytes / GIB, (double)r.host_bytes / GIB);
	/* The host must hold what is offloaded: a 32 GiB machine is not enough. */
	if (chosen.offload != TRAIN_OFFLOAD_NONE)
		ck_assert_int_eq(
			plan_strategy_auto(&m70, &s, rtx3090, (int64_t)(8 * GIB), &chosen, &r), 0);
	/* Without host memory known to offload to, more 24 GB cards are needed. */
	s.n_gpus = 0;
	ck_assert_int_eq(plan_strategy_min_gpus(&m70, &s, 16, 8, rtx3090, -1, &chosen, &r), 1);
	printf("70B QLoRA on 24 GB cards without offload: %d GPUs, %s\n", chosen.n_gpus,
	       train_strategy_name(chosen.strategy));
	ck_assert_int_gt(chosen.n_gpus, 2);
	ck_assert_int_eq(chosen.offload, TRAIN_OFFLOAD_NONE);
	ck_assert_int_eq(chosen.strategy, TRAIN_STRATEGY_FSDP_QLORA);
}
END_TEST

START_TEST(bad_counts_are_refused)
{
	struct train_model m8 = t_llama31_8b();
	struct train_settings s = {.mode = TRAIN_LORA,
				   .weight_bits = 16,
				   .batch_size = 1,
				   .seq_len = 2048,
				   .lora_rank = 16,
				   .n_gpus = 1};
	struct train_settings chosen;
	struct train_memory r;

	ck_assert_int_lt(
		plan_strategy_min_gpus(&m8, &s, 0, 8, (int64_t)(24 * GIB), -1, &chosen, &r), 0);
	ck_assert_int_lt(plan_strategy_min_gpus(&m8, &s, PLAN_STRATEGY_MAX_GPUS + 1, 8,
						(int64_t)(24 * GIB), -1, &chosen, &r),
			 0);
	ck_assert_int_lt(
		plan_strategy_min_gpus(&m8, &s, 4, 0, (int64_t)(24 * GIB), -1, &chosen, &r), 0);
}
END_TEST

Suite *plan_strategy_suite(void)
{
	Suite *s = suite_create("plan_strategy");
	TCase *tc = tcase_create("plan_strategy");

	tcase_add_test(tc, auto_strategy_finds_what_fits);
	tcase_add_test(tc, bad_counts_are_refused);
	suite_add_tcase(s, tc);
	return s;
}
