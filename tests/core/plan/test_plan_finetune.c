/*
 * The fine-tuning planner over the shipped catalog's real architectures: the chosen setup is
 * optimal by brute force over every point of small spaces (every method, provider, optimizer,
 * checkpointing, micro-batch and every sequence of the grid, no bisection); the task floor is
 * never crossed (a model that only fits below it is dropped, while the old shrink loop would
 * have offered it at 256 tokens); RoBERTa's usable length is 512; Unsloth never takes an
 * encoder or an encoder-decoder, nor runs off CUDA; Apple never gets QLoRA or an 8-bit
 * optimizer; a T4 trains in fp16 and slower than an A100.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/model.h"
#include "core/fit/train_optimizer.h"
#include "core/plan/plan_finetune.h"
#include "core/fit/train_parallel.h"
#include "tests/api/profiles_fixture.h"
#include "tests/csv.h"
#include "tests/test.h"

#define GIB (1024LL * 1024 * 1024)

static struct device_table devices;
static struct model_catalog *models;

static void setup(void)
{
	t_profiles_load(&devices, &models, NULL);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, NULL);
}

/* A catalog model with its parameter counts (a static slot per call site is enough here). */
struct tm {
	const struct model_entry *e;
	struct model_params params;
	struct plan_ft_model pm;
};

static void tm_load(struct tm *t, const char *id)
{
	t->e = model_catalog_find(models, id);
	ck_assert_msg(t->e != NULL, "%s is not in the catalog", id);
	ck_assert_int_eq(model_param_counts(&t->e->arch, &t->params), 0);
	t->pm.arch = &t->e->arch;
	t->pm.params = &t->params;
}

/* Devices as the route builds them: budget = memory less 2% (at least 256 MiB). */
static struct plan_ft_device dev(enum plan_ft_backend b, double gib, bool bf16, double tflops)
{
	struct plan_ft_device d;
	int64_t total = (int64_t)(gib * (double)GIB);
	int64_t reserve = total / 50 > 256LL * 1024 * 1024 ? total / 50 : 256LL * 1024 * 1024;

	memset(&d, 0, sizeof(d));
	d.backend = b;
	d.budget_bytes = total - reserve;
	d.bf16 = bf16;
	d.tflops = tflops;
	return d;
}

/* n GPUs of profile id, each with the budget dev() gives, on a host with ram_gib to spare
 * (<= 0: unknown). */
static struct plan_ft_device gpus(const char *id, int n, double ram_gib)
{
	const struct device_profile *p = NULL;
	enum device_compute_kind kind;
	struct plan_ft_device d;

	ck_assert_int_eq(device_resolve(&devices, id, &p), 0);
	ck_assert_ptr_nonnull(p);
	d = dev(PLAN_FT_BACKEND_CUDA, p->memory_gib, true, device_compute_tflops(p, &kind));
	d.n_gpus = n;
	for (int i = 0; i < n; i++)
		d.gpu_budget_bytes[i] = d.budget_bytes;
	d.host_ram_bytes = ram_gib > 0 ? (int64_t)(ram_gib * (double)GIB) : 0;
	d.device_class = strcmp(p->device_class, "datacenter") == 0 ? TRAIN_CLASS_DATACENTER :
								      TRAIN_CLASS_CONSUMER;
	d.bandwidth_gbs = p->memory_bandwidth_gbs;
	return d;
}

static struct plan_ft_result plan(const struct tm *t, const struct plan_ft_device *d,
				  enum plan_ft_task task, int64_t effective)
{
	struct plan_ft_request r = {0};
	struct plan_ft_result res;

	r.task = task;
	r.effective_batch = effective;
	ck_assert_int_eq(plan_finetune(&t->pm, d, &r, &res), 0);
	return res;
}

/* Every point of the space, each sequence of the grid tried (no bisection, no early stop):
 * none that is allowed and fits may beat the planner's choice, and the choice must be one of
 * them. Returns how many points fit. */
static int brute_force(const struct tm *t, const struct plan_ft_device *d, enum plan_ft_task task,
		       int64_t effective)
{
	static const enum train_optimizer opts[] = {TRAIN_OPT_ADAMW_FUSED, TRAIN_OPT_ADAMW_8BIT,
						    TRAIN_OPT_PAGED_ADAMW_8BIT};
	struct plan_ft_result res = plan(t, d, task, effective);
	int n_fit = 0, max_gpus = d->n_gpus > 1 ? d->n_gpus : 1;
	bool chosen_seen = false;

	for (int place = 0; place < max_gpus * 7 * 3; place++)
		for (int mode = TRAIN_FULL; mode <= TRAIN_QLORA; mode++)
			for (int prov = 0; prov < 2; prov++)
				for (int o = 0; o < 3; o++)
					for (int ck = 0; ck < 2; ck++)
						for (int64_t b = 1; b <= effective; b++) {
							if (effective % b)
								continue;
							for (int64_t seq = res.target_seq; seq >= 1;
							     seq = seq == res.target_seq ?
									   (seq -
									    1) / PLAN_FT_SEQ_STEP *
										   PLAN_FT_SEQ_STEP :
									   seq - PLAN_FT_SEQ_STEP) {
								struct plan_ft_setup s;
								memset(&s, 0, sizeof(s));
								s.mode = (enum train_mode)mode;
								s.provider =
									(enum train_provider)prov;
								s.optimizer = opts[o];
								s.gradient_checkpointing = ck;
								s.lora_rank =
									mode == TRAIN_FULL ?
										0 :
										PLAN_FT_DEFAULT_LORA_RANK;
								s.batch_size = b;
								s.grad_accum = effective / b;
								s.seq_len = seq;
								s.n_gpus = 1 + place / 21;
								s.strategy = (enum train_strategy)(
									place / 3 % 7);
								s.offload = (enum train_offload)(
									place % 3);
								if (seq < res.floor_seq)
									break;
								if (!plan_ft_allowed(&t->e->arch, d,
										     &s) ||
								    plan_ft_evaluate(&t->pm, d,
										     &s) < 0 ||
								    !plan_ft_fits(d, &s))
									continue;
								n_fit++;
								ck_assert_msg(
									res.feasible,
									"%s: a setup fits at %lld but "
									"the plan found none",
									t->e->id, (long long)seq);
								/* The objective's first term alone: no
							 * longer sequence fits. */
								ck_assert_int_le(seq,
										 res.best.seq_len);
								ck_assert_msg(
									!plan_ft_better(&s,
											&res.best),
									"%s: %s b%lld seq %lld on %d GPUs "
									"(%s, offload %s) beats the plan",
									t->e->id,
									plan_ft_method_name(s.mode),
									(long long)b,
									(long long)seq, s.n_gpus,
									train_strategy_name(
										s.strategy),
									train_offload_name(
										s.offload));
								if (!plan_ft_better(&res.best, &s))
									chosen_seen = true;
							}
						}
	if (res.feasible) {
		ck_assert(chosen_seen);
		ck_assert(plan_ft_fits(d, &res.best));
		ck_assert(plan_ft_allowed(&t->e->arch, d, &res.best));
		ck_assert_int_ge(res.best.seq_len, res.floor_seq);
		ck_assert_int_eq(res.best.batch_size * res.best.grad_accum, effective);
	} else {
		ck_assert_int_eq(n_fit, 0);
	}
	return n_fit;
}

START_TEST(brute_force_optimal_on_small_spaces)
{
	struct tm qwen05, llama8, roberta, t5;
	struct plan_ft_device rtx4090 = dev(PLAN_FT_BACKEND_CUDA, 24, true, 165.2);
	struct plan_ft_device t4 = dev(PLAN_FT_BACKEND_CUDA, 15, false, 65.1);
	struct plan_ft_device m2 = dev(PLAN_FT_BACKEND_METAL, 10.7, true, 13.6);
	/* 16 GB: Hugging Face QLoRA of an 8B reaches only ~900 tokens on 12 GB (Unsloth's
	 * published table), below text generation's floor. */
	struct plan_ft_device mi = dev(PLAN_FT_BACKEND_ROCM, 16, true, -1);
	struct plan_ft_device small = dev(PLAN_FT_BACKEND_CUDA, 8, true, 80);

	tm_load(&qwen05, "Qwen/Qwen2.5-0.5B");
	tm_load(&llama8, "meta-llama/Llama-3.1-8B");
	tm_load(&roberta, "FacebookAI/roberta-base");
	tm_load(&t5, "google/flan-t5-large");
	/* Spaces where memory binds (8B on 8-16 GB), where it does not (0.5B on 24 GB), and with
	 * the device's rate unknown. */
	ck_assert_int_gt(brute_force(&llama8, &rtx4090, PLAN_FT_TEXT_GENERATION, 4), 0);
	ck_assert_int_gt(brute_force(&llama8, &t4, PLAN_FT_SUMMARIZATION, 4), 0);
	ck_assert_int_gt(brute_force(&llama8, &small, PLAN_FT_TEXT_GENERATION, 4), 0);
	ck_assert_int_gt(brute_force(&llama8, &mi, PLAN_FT_TEXT_GENERATION, 2), 0);
	ck_assert_int_gt(brute_force(&qwen05, &rtx4090, PLAN_FT_SUMMARIZATION, 8), 0);
	ck_assert_int_gt(brute_force(&qwen05, &m2, PLAN_FT_TEXT_GENERATION, 4), 0);
	ck_assert_int_gt(brute_force(&roberta, &t4, PLAN_FT_QUESTION_ANSWERING, 16), 0);
	ck_assert_int_gt(brute_force(&t5, &small, PLAN_FT_SUMMARIZATION, 4), 0);
	/* Nothing fits: the brute force finds nothing either. */
	ck_assert_int_eq(brute_force(&llama8, &m2, PLAN_FT_SUMMARIZATION, 2), 0);
}
END_TEST

/* The same proof with the GPU count, the sharding strategy and the offload in the space: two
 * 12 GB cards where an 8B needs sharding or host RAM for LoRA and full fine-tuning, and two
 * 24 GB cards with the host's RAM unknown (nothing may be offloaded). */
START_TEST(brute_force_optimal_over_gpus_and_strategies)
{
	struct tm llama8, qwen05;
	struct plan_ft_device two3060 = gpus("rtx-3060-12gb", 2, 96);
	struct plan_ft_device two4090 = gpus("rtx-4090", 2, 0);

	tm_load(&llama8, "meta-llama/Llama-3.1-8B");
	tm_load(&qwen05, "Qwen/Qwen2.5-0.5B");
	ck_assert_int_gt(brute_force(&llama8, &two3060, PLAN_FT_TEXT_GENERATION, 2), 0);
	ck_assert_int_gt(brute_force(&qwen05, &two4090, PLAN_FT_TEXT_GENERATION, 2), 0);
}
END_TEST

/* Packing asked for: every setup carries the SDPA mask (batch x seq x seq: boolean for the
 * Hugging Face stack, whose layers keep 16-bit copies; 16 bits for Unsloth), which never lets a
 * longer sequence fit than unpacked rows do. Unpacked rows carry it too when a micro-batch has
 * several (padded to the longest) with the Hugging Face stack. */
START_TEST(packing_plans_with_the_mask)
{
	struct tm q7;
	struct plan_ft_device d = dev(PLAN_FT_BACKEND_CUDA, 16, true, 100);
	struct plan_ft_request r = {0};
	struct plan_ft_result padded, packed;

	tm_load(&q7, "Qwen/Qwen2.5-7B");
	r.task = PLAN_FT_SUMMARIZATION;
	ck_assert_int_eq(plan_finetune(&q7.pm, &d, &r, &padded), 0);
	r.packing = true;
	ck_assert_int_eq(plan_finetune(&q7.pm, &d, &r, &packed), 0);
	ck_assert(padded.feasible && packed.feasible);
	ck_assert(packed.best.packing);
	ck_assert_int_eq(
		padded.best.memory.mask_bytes,
		padded.best.provider == TRAIN_PROVIDER_HUGGINGFACE && padded.best.batch_size > 1 ?
			padded.best.batch_size * padded.best.seq_len * padded.best.seq_len :
			0);
	ck_assert_int_eq(packed.best.memory.mask_bytes,
			 packed.best.batch_size * packed.best.seq_len * packed.best.seq_len *
				 (packed.best.provider == TRAIN_PROVIDER_HUGGINGFACE ? 1 : 2));
	ck_assert_int_le(packed.best.seq_len, padded.best.seq_len);
	/* The same setup with the Hugging Face stack and four rows a micro-batch: padded. */
	{
		struct plan_ft_setup hf = padded.best;
		hf.provider = TRAIN_PROVIDER_HUGGINGFACE;
		hf.batch_size = 4;
		hf.seq_len = 1024;
		ck_assert_int_eq(plan_ft_evaluate(&q7.pm, &d, &hf), 0);
		ck_assert_int_eq(hf.memory.mask_bytes, 4LL * 1024 * 1024);
		hf.batch_size = 1;
		ck_assert_int_eq(plan_ft_evaluate(&q7.pm, &d, &hf), 0);
		ck_assert_int_eq(hf.memory.mask_bytes, 0);
	}
}
END_TEST

/* Issue scenarios: an 8B full fine-tune on 8x H100 and a 70B QLoRA on 2x RTX 3090 used to
 * answer "one GPU holds the whole model". */
START_TEST(multi_gpu_scenarios)
{
	struct tm l8, l70;
	struct plan_ft_request r = {0};
	struct plan_ft_result res, alone;
	struct plan_ft_device h8 = gpus("h100-sxm", 8, 1800);
	struct plan_ft_device h1 = gpus("h100-sxm", 1, 1800);
	struct plan_ft_device two3090 = gpus("rtx-3090", 2, 120);
	struct plan_ft_setup ddp;

	tm_load(&l8, "meta-llama/Llama-3.1-8B");
	tm_load(&l70, "meta-llama/Llama-3.1-70B");
	r.task = PLAN_FT_TEXT_GENERATION;
	r.methods = PLAN_FT_METHOD_BIT(TRAIN_FULL);
	ck_assert_int_eq(plan_finetune(&l8.pm, &h8, &r, &res), 0);
	ck_assert_int_eq(plan_finetune(&l8.pm, &h1, &r, &alone), 0);
	/* All eight GPUs at the task's length, with a strategy stated. */
	ck_assert(res.feasible && res.reached_target);
	ck_assert_int_eq(res.best.n_gpus, 8);
	ck_assert_int_ge(res.best.strategy, TRAIN_STRATEGY_DDP);
	ck_assert_int_le(res.best.strategy, TRAIN_STRATEGY_FSDP);
	ck_assert_int_eq(res.best.offload, TRAIN_OFFLOAD_NONE);
	ck_assert_int_eq(res.best.memory.n_gpus, 8);
	ck_assert(plan_ft_fits(&h8, &res.best));
	/* With the Hugging Face stack and torch's AdamW (8 bytes per parameter in bf16, 60 GiB
	 * for 8B) the same micro-batch without checkpointing fits only with the states sharded:
	 * DDP's copy does not fit, ZeRO-2's does. */
	ddp = res.best;
	ddp.provider = TRAIN_PROVIDER_HUGGINGFACE;
	ddp.optimizer = TRAIN_OPT_ADAMW;
	ddp.gradient_checkpointing = false;
	ddp.strategy = TRAIN_STRATEGY_DDP;
	ck_assert_int_eq(plan_ft_evaluate(&l8.pm, &h8, &ddp), 0);
	ck_assert(!plan_ft_fits(&h8, &ddp));
	{
		struct plan_ft_setup zero2 = ddp;
		zero2.strategy = TRAIN_STRATEGY_ZERO2;
		ck_assert_int_eq(plan_ft_evaluate(&l8.pm, &h8, &zero2), 0);
		ck_assert_msg(plan_ft_fits(&h8, &zero2), "%.1f GiB",
			      (double)zero2.memory.total_bytes / (1 << 30));
		ck_assert_int_gt(ddp.memory.total_bytes, zero2.memory.total_bytes);
	}
	/* NVLink hides the gradient traffic: close to 8x one H100's plan. */
	ck_assert(alone.feasible);
	ck_assert_int_eq(alone.best.n_gpus, 1);
	ck_assert_double_gt(res.best.tokens_per_s, 6.0 * alone.best.tokens_per_s);
	ck_assert_double_gt(res.best.scaling, 0.9);

	/* 70B QLoRA on two 24 GB cards: the 4-bit base (about 37 GiB) is sharded by FSDP-QLoRA
	 * and, as Answer.AI's recipe does, its shards and the optimizer go to host RAM. */
	r.methods = PLAN_FT_METHOD_BIT(TRAIN_QLORA);
	ck_assert_int_eq(plan_finetune(&l70.pm, &two3090, &r, &res), 0);
	ck_assert(res.feasible && res.reached_target);
	ck_assert_int_eq(res.best.n_gpus, 2);
	ck_assert_int_eq(res.best.strategy, TRAIN_STRATEGY_FSDP_QLORA);
	ck_assert_int_ne(res.best.offload, TRAIN_OFFLOAD_NONE);
	ck_assert(res.best.gradient_checkpointing);
	ck_assert(plan_ft_fits(&two3090, &res.best));
	ck_assert_int_gt(res.best.memory.host_bytes, 16 * GIB);
	ck_assert_int_le(res.best.memory.host_bytes, two3090.host_ram_bytes);
	/* PCIe costs some of the second GPU, not all of it. */
	ck_assert_double_gt(res.best.scaling, 0.5);
	ck_assert_double_lt(res.best.scaling, 1.0);
	/* Host RAM unknown: nothing may be offloaded, and 70B does not fit the two cards. */
	two3090.host_ram_bytes = 0;
	ck_assert_int_eq(plan_finetune(&l70.pm, &two3090, &r, &res), 0);
	ck_assert(!res.feasible);
	/* Too little RAM for the offloaded shards: not planned either. */
	two3090.host_ram_bytes = 16 * GIB;
	ck_assert_int_eq(plan_finetune(&l70.pm, &two3090, &r, &res), 0);
	ck_assert(!res.feasible);
}
END_TEST

/* The smallest memory any allowed setup needs at sequence seq (batch 1, every other choice). */
static int64_t min_bytes_at(const struct tm *t, const struct plan_ft_device *d, int64_t seq)
{
	int64_t best = -1;

	for (int mode = TRAIN_FULL; mode <= TRAIN_QLORA; mode++)
		for (int prov = 0; prov < 2; prov++)
			for (int o = 0; o < 3; o++)
				for (int ck = 0; ck < 2; ck++) {
					struct plan_ft_setup s;
					memset(&s, 0, sizeof(s));
					s.mode = (enum train_mode)mode;
					s.provider = (enum train_provider)prov;
					s.optimizer = (enum train_optimizer)o;
					s.gradient_checkpointing = ck;
					s.lora_rank =
						mode == TRAIN_FULL ? 0 : PLAN_FT_DEFAULT_LORA_RANK;
					s.batch_size = 1;
					s.seq_len = seq;
					if (!plan_ft_allowed(&t->e->arch, d, &s) ||
					    plan_ft_evaluate(&t->pm, d, &s) < 0)
						continue;
					if (best < 0 || s.memory.total_bytes < best)
						best = s.memory.total_bytes;
				}
	return best;
}

/* A budget where Qwen2.5-7B fits at 512 tokens but not at the text-generation floor (1024):
 * dropped, not offered at 512. With a budget that holds 1024, the plan is at least 1024. */
START_TEST(drops_the_model_instead_of_cutting_below_the_floor)
{
	struct tm q7;
	struct plan_ft_device d = dev(PLAN_FT_BACKEND_CUDA, 24, true, 165.2);
	struct plan_ft_result res;
	int64_t at512, at1024;

	tm_load(&q7, "Qwen/Qwen2.5-7B");
	at512 = min_bytes_at(&q7, &d, 512);
	at1024 = min_bytes_at(&q7, &d, 1024);
	ck_assert_int_lt(at512, at1024);
	d.budget_bytes = (int64_t)((double)(at512 + at1024) / 2.0 / PLAN_FT_MAX_UTILISATION);
	res = plan(&q7, &d, PLAN_FT_TEXT_GENERATION, 16);
	ck_assert(!res.feasible);
	ck_assert_ptr_nonnull(res.why_not);
	ck_assert_int_eq(res.floor_seq, 1024);

	d.budget_bytes = (int64_t)((double)at1024 / PLAN_FT_MAX_UTILISATION) + 1;
	res = plan(&q7, &d, PLAN_FT_TEXT_GENERATION, 16);
	ck_assert(res.feasible);
	ck_assert_int_ge(res.best.seq_len, 1024);
	ck_assert_int_lt(res.best.seq_len, 2048);
	ck_assert(!res.reached_target);
	/* The batch went first: one sequence per micro-batch, the rest accumulated. */
	ck_assert_int_eq(res.best.batch_size, 1);
	ck_assert_int_eq(res.best.grad_accum, 16);
}
END_TEST

/* Issue scenarios: an RTX 4090 (24 GB) offered Qwen2.5-32B QLoRA at 256 tokens, then at 2048
 * at 93% of the card, where Unsloth's requirements say a 32B QLoRA needs at least 26 GB.
 * The estimator's figure is kept (it fits its budget), and the published floor refuses the
 * card; a 32 GB card plans it at batch 1 and 2048 tokens. */
START_TEST(rtx4090_qwen32b_qlora_at_2048)
{
	struct tm q32;
	const struct device_profile *p = NULL;
	struct plan_ft_device d;
	struct plan_ft_result res;

	tm_load(&q32, "Qwen/Qwen2.5-32B");
	ck_assert_int_eq(device_resolve(&devices, "rtx-4090", &p), 0);
	d = dev(PLAN_FT_BACKEND_CUDA, p->memory_gib, true, p->fp16_tflops);
	res = plan(&q32, &d, PLAN_FT_TEXT_GENERATION, 16);
	ck_assert(!res.feasible);
	ck_assert_int_eq(device_resolve(&devices, "rtx-5090", &p), 0);
	d = dev(PLAN_FT_BACKEND_CUDA, p->memory_gib, true, p->fp16_tflops);
	res = plan(&q32, &d, PLAN_FT_TEXT_GENERATION, 16);
	ck_assert(res.feasible);
	ck_assert(res.reached_target);
	ck_assert_int_eq(res.best.seq_len, 2048);
	ck_assert_int_eq(res.best.mode, TRAIN_QLORA);
	ck_assert_int_ge(d.budget_bytes, res.best.published_floor_bytes);
	/* 32.8B parameters: just above the published 26 GB of a 32B. */
	ck_assert_int_ge(res.best.published_floor_bytes, 26 * GIB);
	ck_assert_int_lt(res.best.published_floor_bytes, 27 * GIB);
	/* 4-bit 32B weights (about 17 GiB) and the rest within 95% of the budget. */
	ck_assert_int_gt(res.best.memory.weights_bytes, 16 * GIB);
	ck_assert_int_lt(res.best.memory.weights_bytes, 19 * GIB);
	ck_assert_int_le(res.best.memory.total_bytes,
			 (int64_t)((double)d.budget_bytes * PLAN_FT_MAX_UTILISATION));
	/* LoRA on 16-bit weights (65 GB) cannot fit; QLoRA is what makes it. */
	{
		struct plan_ft_request r = {0};
		r.task = PLAN_FT_TEXT_GENERATION;
		r.methods = PLAN_FT_METHOD_BIT(TRAIN_LORA) | PLAN_FT_METHOD_BIT(TRAIN_FULL);
		ck_assert_int_eq(plan_finetune(&q32.pm, &d, &r, &res), 0);
		ck_assert(!res.feasible);
	}
}
END_TEST

/* Issue scenario: on an H100 (80 GB), summarization: Qwen2.5-32B reaches the task's 4096
 * tokens, and 70B-class models do too with QLoRA; none is planned below the 2048 floor. */
START_TEST(h100_summarization_lengths)
{
	static const char *const ids[] = {"Qwen/Qwen2.5-32B", "meta-llama/Llama-3.1-70B",
					  "Qwen/Qwen2.5-72B", "mistralai/Mixtral-8x22B-v0.1"};
	const struct device_profile *p = NULL;
	struct plan_ft_device d;

	ck_assert_int_eq(device_resolve(&devices, "h100-sxm", &p), 0);
	d = dev(PLAN_FT_BACKEND_CUDA, p->memory_gib, true, p->fp16_tflops);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct tm t;
		struct plan_ft_result res;
		tm_load(&t, ids[i]);
		res = plan(&t, &d, PLAN_FT_SUMMARIZATION, 16);
		ck_assert_int_eq(res.target_seq, 4096);
		ck_assert_int_eq(res.floor_seq, 2048);
		if (i < 3) {
			ck_assert_msg(res.feasible && res.best.seq_len == 4096, "%s", ids[i]);
		} else {
			/* 141B in 4 bits is about 73 GiB of weights: no room for 2048 tokens. */
			ck_assert_msg(!res.feasible, "%s planned at %lld", ids[i],
				      (long long)res.best.seq_len);
		}
	}
}
END_TEST

START_TEST(roberta_usable_length_is_512)
{
	struct tm rb, sq, llama, t5;
	struct plan_ft_device d = dev(PLAN_FT_BACKEND_CUDA, 80, true, 312);
	struct plan_ft_result res;

	tm_load(&rb, "FacebookAI/roberta-base");
	tm_load(&sq, "deepset/roberta-base-squad2");
	tm_load(&llama, "meta-llama/Llama-2-7b-hf");
	tm_load(&t5, "google/flan-t5-large");
	ck_assert_int_eq(rb.e->arch.max_position_embeddings, 514);
	ck_assert_int_eq(plan_ft_usable_seq(&rb.e->arch), 512);
	ck_assert_int_eq(plan_ft_usable_seq(&sq.e->arch), 512);
	ck_assert_int_eq(plan_ft_usable_seq(&llama.e->arch), 4096);
	/* T5's relative positions set no limit. */
	ck_assert_int_eq(plan_ft_usable_seq(&t5.e->arch), 0);
	/* Asked for more, a RoBERTa plan still stops at 512, and says it did not reach what was
	 * asked. */
	{
		struct plan_ft_request r = {0};
		r.task = PLAN_FT_QUESTION_ANSWERING;
		r.seq_len = 1024;
		ck_assert_int_eq(plan_finetune(&rb.pm, &d, &r, &res), 0);
	}
	ck_assert(res.feasible && !res.reached_target);
	ck_assert_int_eq(res.requested_seq, 1024);
	ck_assert_int_eq(res.best.seq_len, 512);
	ck_assert_int_eq(res.target_seq, 512);
	/* Llama 2 for summarization: its 4096 positions are the task's 4096. */
	res = plan(&llama, &d, PLAN_FT_SUMMARIZATION, 16);
	ck_assert_int_eq(res.target_seq, 4096);
	ck_assert(!res.capped_by_model);
}
END_TEST

START_TEST(provider_rules)
{
	struct tm rb, t5, q;
	struct plan_ft_device cuda = dev(PLAN_FT_BACKEND_CUDA, 24, true, 165);
	struct plan_ft_device rocm = dev(PLAN_FT_BACKEND_ROCM, 24, true, 165);
	struct plan_ft_result res;

	tm_load(&rb, "deepset/roberta-base-squad2");
	tm_load(&t5, "google/flan-t5-large");
	tm_load(&q, "Qwen/Qwen2.5-1.5B");
	res = plan(&rb, &cuda, PLAN_FT_QUESTION_ANSWERING, 16);
	ck_assert(res.feasible);
	ck_assert_int_eq(res.best.provider, TRAIN_PROVIDER_HUGGINGFACE);
	res = plan(&t5, &cuda, PLAN_FT_SUMMARIZATION, 16);
	ck_assert(res.feasible);
	ck_assert_int_eq(res.best.provider, TRAIN_PROVIDER_HUGGINGFACE);
	/* T5's position bias: eager attention, whose scores cost memory. */
	ck_assert(!res.best.flash_attention);
	/* A decoder on CUDA trains with Unsloth (equal FLOPs, its published speed-up). */
	res = plan(&q, &cuda, PLAN_FT_TEXT_GENERATION, 16);
	ck_assert(res.feasible);
	ck_assert_int_eq(res.best.provider, TRAIN_PROVIDER_UNSLOTH);
	/* ROCm: bitsandbytes (QLoRA) yes, Unsloth no. */
	res = plan(&q, &rocm, PLAN_FT_TEXT_GENERATION, 16);
	ck_assert(res.feasible);
	ck_assert_int_eq(res.best.provider, TRAIN_PROVIDER_HUGGINGFACE);
	{
		struct plan_ft_setup s;
		memset(&s, 0, sizeof(s));
		s.mode = TRAIN_QLORA;
		s.lora_rank = 16;
		s.optimizer = TRAIN_OPT_PAGED_ADAMW_8BIT;
		ck_assert(plan_ft_allowed(&q.e->arch, &rocm, &s));
		s.provider = TRAIN_PROVIDER_UNSLOTH;
		ck_assert(!plan_ft_allowed(&q.e->arch, &rocm, &s));
		ck_assert(plan_ft_allowed(&q.e->arch, &cuda, &s));
		ck_assert(!plan_ft_allowed(&rb.e->arch, &cuda, &s));
		ck_assert(!plan_ft_allowed(&t5.e->arch, &cuda, &s));
	}
}
END_TEST

/* A request that fixes the optimizer gets it in every setup: on a 24 GB card an 8B plans with
 * Adafactor when asked, and with an 8-bit AdamW the planner may pick; an 8-bit one asked of an
 * Apple GPU (no bitsandbytes) plans nothing; an optimizer out of range is refused. */
START_TEST(a_fixed_optimizer_is_planned_with)
{
	struct tm t;
	struct plan_ft_device cuda = dev(PLAN_FT_BACKEND_CUDA, 24, true, 165);
	struct plan_ft_device mac = dev(PLAN_FT_BACKEND_METAL, 64, true, 14.2);
	struct plan_ft_request r = {0};
	struct plan_ft_result res;

	tm_load(&t, "meta-llama/Llama-3.1-8B");
	r.task = PLAN_FT_TEXT_GENERATION;
	for (int o = 0; o < TRAIN_OPT_COUNT; o++) {
		r.fixed_optimizer = true;
		r.optimizer = (enum train_optimizer)o;
		ck_assert_int_eq(plan_finetune(&t.pm, &cuda, &r, &res), 0);
		ck_assert_msg(res.feasible, "%s", plan_ft_optimizer_name(r.optimizer));
		ck_assert_int_eq(res.best.optimizer, o);
		ck_assert_int_eq(plan_finetune(&t.pm, &mac, &r, &res), 0);
		ck_assert(res.feasible == !train_optimizer_info(r.optimizer)->bitsandbytes);
		if (res.feasible)
			ck_assert_int_eq(res.best.optimizer, o);
	}
	r.optimizer = TRAIN_OPT_COUNT;
	ck_assert_int_eq(plan_finetune(&t.pm, &cuda, &r, &res), RF_E_INVALID_VALUE);
	/* Not fixed: the fused AdamW or an 8-bit one. */
	r.fixed_optimizer = false;
	ck_assert_int_eq(plan_finetune(&t.pm, &cuda, &r, &res), 0);
	ck_assert(res.best.optimizer == TRAIN_OPT_ADAMW_FUSED ||
		  train_optimizer_info(res.best.optimizer)->bitsandbytes);
}
END_TEST

/* Apple: no bitsandbytes on MPS, so no QLoRA and no 8-bit optimizer, even where only QLoRA
 * would fit (the model is dropped instead); no Unsloth. */
START_TEST(apple_never_qlora)
{
	static const char *const ids[] = {"Qwen/Qwen2.5-0.5B", "Qwen/Qwen2.5-7B",
					  "meta-llama/Llama-3.1-8B", "Qwen/Qwen2.5-32B"};
	struct plan_ft_device mac = dev(PLAN_FT_BACKEND_METAL, 32, true, 14.2);

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct tm t;
		struct plan_ft_result res;
		struct plan_ft_device cuda = mac;
		tm_load(&t, ids[i]);
		res = plan(&t, &mac, PLAN_FT_TEXT_GENERATION, 16);
		if (res.feasible) {
			ck_assert_int_ne(res.best.mode, TRAIN_QLORA);
			ck_assert_int_eq(res.best.optimizer, TRAIN_OPT_ADAMW_FUSED);
			ck_assert_int_eq(res.best.provider, TRAIN_PROVIDER_HUGGINGFACE);
		}
		/* The same memory on CUDA does take QLoRA where it is needed. */
		cuda.backend = PLAN_FT_BACKEND_CUDA;
		if (i == 3) {
			ck_assert(!res.feasible);
			res = plan(&t, &cuda, PLAN_FT_TEXT_GENERATION, 16);
			ck_assert(res.feasible);
			ck_assert_int_eq(res.best.mode, TRAIN_QLORA);
		}
	}
}
END_TEST

/* A T4 is not an A100: no bf16 (fp16 mixed precision, full fine-tuning over fp32 master
 * weights) and a fifth of the compute. */
START_TEST(t4_plans_on_its_own_compute)
{
	const struct device_profile *pt4 = NULL, *pa100 = NULL;
	struct plan_ft_device t4, a100;
	struct plan_ft_request r = {0};
	struct plan_ft_result on_t4, on_a100;
	struct tm q;

	ck_assert_int_eq(device_resolve(&devices, "tesla-t4", &pt4), 0);
	ck_assert_int_eq(device_resolve(&devices, "a100-sxm4-80gb", &pa100), 0);
	t4 = dev(PLAN_FT_BACKEND_CUDA, pt4->memory_gib, false, pt4->fp16_tflops);
	a100 = dev(PLAN_FT_BACKEND_CUDA, pa100->memory_gib, true, pa100->fp16_tflops);
	tm_load(&q, "Qwen/Qwen2.5-1.5B");
	on_t4 = plan(&q, &t4, PLAN_FT_TEXT_GENERATION, 16);
	on_a100 = plan(&q, &a100, PLAN_FT_TEXT_GENERATION, 16);
	ck_assert(on_t4.feasible && on_a100.feasible);
	ck_assert(!on_t4.best.bf16);
	ck_assert(on_a100.best.bf16);
	ck_assert_double_lt(on_t4.best.tokens_per_s * 3.0, on_a100.best.tokens_per_s);
	/* Full fine-tuning of a 0.5B on the T4: fp32 master weights, 16 bytes a parameter
	 * before activations, where the A100's bf16 run keeps 12. */
	tm_load(&q, "Qwen/Qwen2.5-0.5B");
	r.task = PLAN_FT_TEXT_GENERATION;
	r.methods = PLAN_FT_METHOD_BIT(TRAIN_FULL);
	ck_assert_int_eq(plan_finetune(&q.pm, &t4, &r, &on_t4), 0);
	ck_assert_int_eq(plan_finetune(&q.pm, &a100, &r, &on_a100), 0);
	ck_assert(on_t4.feasible && on_a100.feasible);
	ck_assert_int_eq(on_t4.best.weight_bits, 32);
	ck_assert_int_eq(on_a100.best.weight_bits, 16);
	ck_assert_int_eq(on_t4.best.memory.weights_bytes, q.params.total * 4);
	ck_assert_int_eq(on_a100.best.memory.weights_bytes, q.params.total * 2);
}
END_TEST

/* The speeds the objective compares, against torchtune's measured Llama 3.1 8B runs (batch 2,
 * 2048 packed tokens) on one RTX 4090 and one RTX A6000 (tests/data/calibration/
 * training_memory.csv, tokens/sec in extra_settings): on each card every pair of methods
 * measured ranks as measured (LoRA, QLoRA, full on the 4090). The utilisations were fitted on
 * the 4090's rows; the A6000's full/LoRA ratio, held out, is within 10%. Absolute tokens/s
 * are the estimator's business; the planner only compares setups of one model on one card. */
START_TEST(method_speeds_rank_as_measured)
{
	static const char *const cards[] = {"1x RTX 4090", "1x RTX A6000"};
	static const char *const ids[] = {"rtx-4090", "rtx-a6000"};
	static const char *const methods[] = {"full", "LoRA", "QLoRA"};
	char *path = t_path(t_data_dir(), "calibration/training_memory.csv");
	struct t_csv *csv = t_csv_read(path);
	struct tm l8;

	ck_assert_msg(csv != NULL, "%s is missing", path);
	tm_load(&l8, "meta-llama/Llama-3.1-8B");
	for (int c = 0; c < 2; c++) {
		const struct device_profile *p = NULL;
		struct plan_ft_device d;
		double measured[3] = {0, 0, 0}, ours[3];
		ck_assert_int_eq(device_resolve(&devices, ids[c], &p), 0);
		d = dev(PLAN_FT_BACKEND_CUDA, p->memory_gib, true, p->fp16_tflops);
		for (int r = 0; r < csv->n_rows; r++) {
			const char *x = t_csv_get(csv, r, "extra_settings");
			if (strcmp(t_csv_get(csv, r, "model"), "Llama 3.1 8B") != 0 ||
			    strcmp(t_csv_get(csv, r, "gpu"), cards[c]) != 0 ||
			    strncmp(x, "tokens/sec ", 11) != 0)
				continue;
			for (int m = 0; m < 3; m++)
				if (strcmp(t_csv_get(csv, r, "method"), methods[m]) == 0)
					measured[m] = strtod(x + 11, NULL);
		}
		for (int m = 0; m < 3; m++) {
			struct plan_ft_setup s;
			memset(&s, 0, sizeof(s));
			s.mode = (enum train_mode)m;
			s.lora_rank = m == TRAIN_FULL ? 0 : PLAN_FT_DEFAULT_LORA_RANK;
			s.batch_size = 2;
			s.seq_len = 2048;
			s.gradient_checkpointing = true;
			ck_assert_int_eq(plan_ft_evaluate(&l8.pm, &d, &s), 0);
			ours[m] = s.speed; /* the planner's own account */
		}
		/* Every pair of methods measured on the card is ordered alike. */
		for (int a = 0; a < 3; a++)
			for (int b = 0; b < 3; b++)
				if (measured[a] > 0 && measured[b] > 0 && measured[a] > measured[b])
					ck_assert_msg(ours[a] > ours[b],
						      "%s: %s should be faster than %s", cards[c],
						      methods[a], methods[b]);
		ck_assert(measured[TRAIN_FULL] > 0 && measured[TRAIN_LORA] > 0);
		if (c == 1) /* held out of the fit */
			ck_assert_double_eq_tol(ours[TRAIN_FULL] / ours[TRAIN_LORA],
						measured[TRAIN_FULL] / measured[TRAIN_LORA],
						0.10 * measured[TRAIN_FULL] / measured[TRAIN_LORA]);
	}
	t_csv_free(csv);
	free(path);
}
END_TEST

START_TEST(rank_order_and_class)
{
	struct plan_ft_candidate c[5];

	memset(c, 0, sizeof(c));
	for (int i = 0; i < 5; i++) {
		c[i].index = (size_t)i;
		c[i].listed = -1;
		c[i].suits = true;
		c[i].plan.feasible = true;
		c[i].plan.reached_target = true;
	}
	c[0].params_b = 70; /* shrunk: after every model at the task's length */
	c[0].plan.reached_target = false;
	c[1].params_b = 0.125; /* a bare encoder for QA */
	c[1].suits = false;
	c[2].params_b = 0.124; /* the SQuAD-tuned one */
	c[3].params_b = 400;   /* does not fit */
	c[3].plan.feasible = false;
	c[4].params_b = 1; /* capped by its own length */
	c[4].plan.capped_by_model = true;
	plan_ft_rank(c, 5);
	ck_assert_int_eq(c[0].index, 2);
	ck_assert_int_eq(c[1].index, 1);
	ck_assert_int_eq(c[2].index, 0);
	ck_assert_int_eq(c[3].index, 4);
	ck_assert_int_eq(c[4].index, 3);
	/* Among models at the task's length: current dense ones first, then mixtures of
	 * experts (Hugging Face loops over the experts), then older families, whatever their
	 * size. */
	memset(c, 0, sizeof(c));
	for (int i = 0; i < 4; i++) {
		c[i].index = (size_t)i;
		c[i].listed = -1;
		c[i].suits = true;
		c[i].plan.feasible = true;
		c[i].plan.reached_target = true;
	}
	c[0].params_b = 16; /* a MoE */
	c[0].moe = true;
	c[1].params_b = 2.8; /* Pythia */
	c[1].stale = true;
	c[2].params_b = 14;
	c[3].params_b = 1.7;
	plan_ft_rank(c, 4);
	ck_assert_int_eq(c[0].index, 2);
	ck_assert_int_eq(c[1].index, 3);
	ck_assert_int_eq(c[2].index, 0);
	ck_assert_int_eq(c[3].index, 1);
	/* The preferred ones are those ranked first, and a run that offloads is not one. */
	ck_assert(plan_ft_preferred(&c[0]) && plan_ft_preferred(&c[1]));
	ck_assert(!plan_ft_preferred(&c[2]) && !plan_ft_preferred(&c[3]));
	c[0].plan.best.offload = TRAIN_OFFLOAD_OPTIMIZER;
	ck_assert(!plan_ft_preferred(&c[0]));
	/* A length asked for that none reaches: the longest that fits first. */
	memset(c, 0, sizeof(c));
	for (int i = 0; i < 3; i++) {
		c[i].index = (size_t)i;
		c[i].listed = -1;
		c[i].suits = true;
		c[i].plan.feasible = true;
		c[i].plan.requested_seq = 131072;
		c[i].params_b = 10.0 - i;
	}
	c[0].plan.best.seq_len = 8192;
	c[1].plan.best.seq_len = 40960;
	c[2].plan.best.seq_len = 16384;
	plan_ft_rank(c, 3);
	ck_assert_int_eq(c[0].index, 1);
	ck_assert_int_eq(c[1].index, 2);
	ck_assert_int_eq(c[2].index, 0);
	ck_assert(plan_ft_suits(MODEL_TASK_EXTRACTIVE_QA,
				MODEL_TASK_EXTRACTIVE_QA | MODEL_TASK_QUESTION_ANSWERING));
	ck_assert(!plan_ft_suits(MODEL_TASK_EXTRACTIVE_QA, MODEL_TASK_EXTRACTIVE_QA));
	ck_assert(plan_ft_suits(MODEL_TASK_SUMMARIZATION, MODEL_TASK_SUMMARIZATION));
}
END_TEST

/* Which task a model takes, as the trainer of each task loads it: the catalog's tags when
 * there is an entry, else the family's. */
START_TEST(task_fits_follow_the_trainer)
{
	unsigned dec = plan_ft_family_tasks(MODEL_DECODER);
	unsigned enc = plan_ft_family_tasks(MODEL_ENCODER);
	unsigned t5 = plan_ft_family_tasks(MODEL_ENCODER_DECODER);

	/* Text generation loads a causal LM: a decoder, never an encoder or T5, tagged or not. */
	ck_assert(plan_ft_task_fits(MODEL_TASK_TEXT_GENERATION, MODEL_DECODER, dec));
	ck_assert(!plan_ft_task_fits(MODEL_TASK_TEXT_GENERATION, MODEL_ENCODER, enc));
	ck_assert(!plan_ft_task_fits(MODEL_TASK_TEXT_GENERATION, MODEL_ENCODER_DECODER,
				     MODEL_TASK_TEXT_GENERATION));
	/* Summarization: decoders and T5; not an encoder. */
	ck_assert(plan_ft_task_fits(MODEL_TASK_SUMMARIZATION, MODEL_DECODER, dec));
	ck_assert(plan_ft_task_fits(MODEL_TASK_SUMMARIZATION, MODEL_ENCODER_DECODER, t5));
	ck_assert(!plan_ft_task_fits(MODEL_TASK_SUMMARIZATION, MODEL_ENCODER, enc));
	/* Extractive QA takes a span head (an encoder); question answering either kind. */
	ck_assert(plan_ft_task_fits(MODEL_TASK_EXTRACTIVE_QA, MODEL_ENCODER, enc));
	ck_assert(!plan_ft_task_fits(MODEL_TASK_EXTRACTIVE_QA, MODEL_DECODER, dec));
	ck_assert(plan_ft_task_fits(MODEL_TASK_QUESTION_ANSWERING, MODEL_ENCODER, enc));
	ck_assert(plan_ft_task_fits(MODEL_TASK_QUESTION_ANSWERING, MODEL_DECODER, dec));
	/* A catalog entry's own tags decide over its family's. */
	ck_assert(!plan_ft_task_fits(MODEL_TASK_SUMMARIZATION, MODEL_DECODER,
				     MODEL_TASK_TEXT_GENERATION));
	ck_assert_str_eq(plan_ft_strategy_name(TRAIN_QLORA), "qlora");
	ck_assert_str_eq(plan_ft_strategy_name(TRAIN_LORA), "sft");
	ck_assert_str_eq(plan_ft_strategy_name(TRAIN_FULL), "sft");
}
END_TEST

START_TEST(bad_requests)
{
	struct tm q;
	struct plan_ft_device d = dev(PLAN_FT_BACKEND_CUDA, 24, true, 165);
	struct plan_ft_request r = {0};
	struct plan_ft_result res;

	tm_load(&q, "Qwen/Qwen2.5-0.5B");
	r.effective_batch = PLAN_FT_MAX_EFFECTIVE_BATCH + 1;
	ck_assert_int_lt(plan_finetune(&q.pm, &d, &r, &res), 0);
	r.effective_batch = 0;
	r.seq_len = -1;
	ck_assert_int_lt(plan_finetune(&q.pm, &d, &r, &res), 0);
	r.seq_len = 0;
	r.methods = 1u << 7;
	ck_assert_int_lt(plan_finetune(&q.pm, &d, &r, &res), 0);
	r.methods = 0;
	/* No GPU: an answer that says so, not an error. */
	d.backend = PLAN_FT_BACKEND_NONE;
	ck_assert_int_eq(plan_finetune(&q.pm, &d, &r, &res), 0);
	ck_assert(!res.feasible);
	ck_assert_ptr_nonnull(res.why_not);
	ck_assert_int_eq(res.n_evaluated, 0);
}
END_TEST

Suite *plan_finetune_suite(void)
{
	Suite *s = suite_create("plan_finetune");
	TCase *tc = tcase_create("planner");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, brute_force_optimal_on_small_spaces);
	tcase_add_test(tc, brute_force_optimal_over_gpus_and_strategies);
	tcase_add_test(tc, multi_gpu_scenarios);
	tcase_add_test(tc, packing_plans_with_the_mask);
	tcase_add_test(tc, drops_the_model_instead_of_cutting_below_the_floor);
	tcase_add_test(tc, rtx4090_qwen32b_qlora_at_2048);
	tcase_add_test(tc, h100_summarization_lengths);
	tcase_add_test(tc, roberta_usable_length_is_512);
	tcase_add_test(tc, provider_rules);
	tcase_add_test(tc, apple_never_qlora);
	tcase_add_test(tc, t4_plans_on_its_own_compute);
	tcase_add_test(tc, method_speeds_rank_as_measured);
	tcase_add_test(tc, rank_order_and_class);
	tcase_add_test(tc, task_fits_follow_the_trainer);
	tcase_add_test(tc, bad_requests);
	tcase_add_test(tc, a_fixed_optimizer_is_planned_with);
	suite_add_tcase(s, tc);
	return s;
}
