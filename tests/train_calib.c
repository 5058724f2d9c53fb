/*
 * The fine-tuning calibration cases (see train_calib.h).
 */
#include "tests/train_calib.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/device_json.h"
#include "core/hw/device.h"
#include "core/fit/train_memory.h"
#include "core/fit/train_parallel.h"
#include "core/fit/train_speed.h"
#include "tests/csv.h"
#include "tests/test.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

struct case_row {
	/* Which training_memory.csv row: model, method, bits and framework, all exact. */
	const char *model, *method, *bits, *framework;
	const char *arch; /* model_arch.csv "model" column prefix */
	double params_b;  /* published total when model_arch.csv has none */
	enum train_mode mode;
	enum train_provider provider;
	enum train_optimizer optimizer;
	int64_t batch, seq, rank;
	bool flash;
	double tolerance;             /* |error| allowed for this row */
	unsigned targets;             /* LoRA targets; 0: every linear layer */
	enum train_strategy strategy; /* several GPUs */
	int n_gpus;
	int64_t bucket_elems; /* DeepSpeed reduce_bucket_size, two buckets (overlap_comm) */
};

/* The Unsloth benchmark (Llama 2 7B, batch 4, seq 1024, rank 8, grad accum 2): gradient
 * checkpointing as in the Unsloth and HF examples it compares; "HF" ran eager attention.
 * The "generic NB" rows are Unsloth's stated minimums (batch 1, short sequences: 512 taken,
 * 8-bit AdamW as its notebooks use); they are vendor statements, so they get a wider band. */
static const struct case_row cases[] = {
	{"Llama 2 7B", "LoRA", "16", "HF", "Llama-2-7B", 0, TRAIN_LORA, TRAIN_PROVIDER_HUGGINGFACE,
	 TRAIN_OPT_ADAMW, 4, 1024, 8, false, 0.25, 0, TRAIN_STRATEGY_NONE, 1, 0},
	{"Llama 2 7B", "LoRA", "16", "HF+FA2", "Llama-2-7B", 0, TRAIN_LORA,
	 TRAIN_PROVIDER_HUGGINGFACE, TRAIN_OPT_ADAMW, 4, 1024, 8, true, 0.25, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	{"Llama 2 7B", "LoRA", "16", "Unsloth+FA2", "Llama-2-7B", 0, TRAIN_LORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW, 4, 1024, 8, true, 0.25, 0, TRAIN_STRATEGY_NONE, 1,
	 0},
	/* LLaMA-Factory keeps the embeddings and head in 16 bits, where PEFT's
	 * prepare_model_for_kbit_training (which the estimate follows for Hugging Face) upcasts
	 * them to fp32: +0.5 GiB on this model, on a figure rounded to the GB. */
	{"Llama 2 7B", "QLoRA", "4", "HF", "Llama-2-7B", 0, TRAIN_QLORA, TRAIN_PROVIDER_HUGGINGFACE,
	 TRAIN_OPT_ADAMW, 4, 1024, 8, false, 0.30, 0, TRAIN_STRATEGY_NONE, 1, 0},
	{"Llama 2 7B", "QLoRA", "4", "Unsloth+FA2", "Llama-2-7B", 0, TRAIN_QLORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW, 4, 1024, 8, true, 0.30, 0, TRAIN_STRATEGY_NONE, 1,
	 0},
	{"generic 3B model", "QLoRA", "4", "Unsloth", "Llama-3.2-3B", 0, TRAIN_QLORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW_8BIT, 1, 512, 16, true, 0.35, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	{"generic 3B model", "LoRA", "16", "Unsloth", "Llama-3.2-3B", 0, TRAIN_LORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW_8BIT, 1, 512, 16, true, 0.35, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	{"generic 8B model", "QLoRA", "4", "Unsloth", "Llama-3.1-8B", 0, TRAIN_QLORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW_8BIT, 1, 512, 16, true, 0.35, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	{"generic 8B model", "LoRA", "16", "Unsloth", "Llama-3.1-8B", 0, TRAIN_LORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW_8BIT, 1, 512, 16, true, 0.35, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	/* Below what NF4 linears and Qwen's 16-bit 152k-vocabulary embedding and head take
	 * together (9.2 GiB) before any context: a vendor minimum, not a run. */
	{"generic 14B model", "QLoRA", "4", "Unsloth", "Qwen2.5-14B", 0, TRAIN_QLORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW_8BIT, 1, 512, 16, true, 0.40, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	{"generic 14B model", "LoRA", "16", "Unsloth", "Qwen2.5-14B", 0, TRAIN_LORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW_8BIT, 1, 512, 16, true, 0.35, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	{"generic 70B model", "QLoRA", "4", "Unsloth", "Llama-3.1-70B", 0, TRAIN_QLORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW_8BIT, 1, 512, 16, true, 0.35, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	{"generic 70B model", "LoRA", "16", "Unsloth", "Llama-3.1-70B", 0, TRAIN_LORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW_8BIT, 1, 512, 16, true, 0.35, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	{"generic 405B model", "QLoRA", "4", "Unsloth", "Llama-3.1-405B", 405.85, TRAIN_QLORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW_8BIT, 1, 512, 16, true, 0.35, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	{"generic 405B model", "LoRA", "16", "Unsloth", "Llama-3.1-405B", 405.85, TRAIN_LORA,
	 TRAIN_PROVIDER_UNSLOTH, TRAIN_OPT_ADAMW_8BIT, 1, 512, 16, true, 0.35, 0,
	 TRAIN_STRATEGY_NONE, 1, 0},
	/* LongLoRA's plain-LoRA baseline at 8k tokens (its Table 12): LoRA rank 8 on q, k, v, o,
	 * FlashAttention 2, gradient checkpointing, DeepSpeed ZeRO-2 over 8 A100s, batch 1 per
	 * GPU, transformers' loss; its ds_configs/stage2.json: reduce_bucket_size 1e9 with
	 * overlap_comm and contiguous gradients. */
	{"Llama 2 7B", "LoRA (plain)", "bf16", "LongLoRA codebase (FA2, DeepSpeed ZeRO-2, 8x A100)",
	 "Llama-2-7B", 0, TRAIN_LORA, TRAIN_PROVIDER_HUGGINGFACE, TRAIN_OPT_ADAMW, 1, 8192, 8, true,
	 0.20, TRAIN_LORA_Q | TRAIN_LORA_K | TRAIN_LORA_V | TRAIN_LORA_O, TRAIN_STRATEGY_ZERO2, 8,
	 1000000000LL},
};

/* Fills m from the model_arch.csv row whose name starts with arch. Returns 0 or -1. */
static int arch_dims(const struct t_csv *a, const char *arch, double params_b,
		     struct train_model *m)
{
	for (int r = 0; r < a->n_rows; r++) {
		double v;
		if (strncmp(t_csv_get(a, r, "model"), arch, strlen(arch)) != 0)
			continue;
		memset(m, 0, sizeof(*m));
		if (t_csv_num(a, r, "hidden_size", &v) < 0)
			return -1;
		m->hidden = (int64_t)v;
		if (t_csv_num(a, r, "intermediate_size", &v) < 0)
			return -1;
		m->intermediate = (int64_t)v;
		if (t_csv_num(a, r, "num_layers", &v) < 0)
			return -1;
		m->n_layers = (int64_t)v;
		if (t_csv_num(a, r, "num_attention_heads", &v) < 0)
			return -1;
		m->n_heads = (int64_t)v;
		if (t_csv_num(a, r, "num_kv_heads", &v) < 0)
			return -1;
		m->n_kv_heads = (int64_t)v;
		m->head_dim = t_csv_num(a, r, "head_dim", &v) == 0 ? (int64_t)v :
								     m->hidden / m->n_heads;
		if (t_csv_num(a, r, "vocab_size", &v) < 0)
			return -1;
		m->vocab = (int64_t)v;
		if (params_b <= 0 && t_csv_num(a, r, "params_b", &params_b) < 0)
			return -1;
		m->params_total = (int64_t)(params_b * 1e9);
		m->params_embedding = m->vocab * m->hidden;
		m->params_output = strcmp(t_csv_get(a, r, "tie_embeddings"), "true") == 0 ?
					   0 :
					   m->params_embedding;
		m->gated_ffn = true;
		return 0;
	}
	return -1;
}

static int measured(const struct t_csv *t, const struct case_row *c, double *out)
{
	for (int r = 0; r < t->n_rows; r++) {
		if (strcmp(t_csv_get(t, r, "model"), c->model) == 0 &&
		    strcmp(t_csv_get(t, r, "method"), c->method) == 0 &&
		    strcmp(t_csv_get(t, r, "bits"), c->bits) == 0 &&
		    strcmp(t_csv_get(t, r, "framework"), c->framework) == 0 &&
		    t_csv_num(t, r, "peak_gib", out) == 0)
			return 0;
	}
	return -1;
}

int train_calib_run(const char *data_dir, struct train_calib_result *out, int cap, char *err,
		    size_t errlen)
{
	char *tp = t_path(data_dir, "calibration/training_memory.csv");
	char *ap = t_path(data_dir, "calibration/model_arch.csv");
	struct t_csv *train = t_csv_read(tp), *arch = t_csv_read(ap);
	int n = 0, rc = 0;

	if (!train || !arch) {
		snprintf(err, errlen, "cannot read %s or %s", tp, ap);
		rc = -1;
		goto out;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]) && n < cap; i++) {
		const struct case_row *c = &cases[i];
		struct train_model m;
		struct train_settings s = {
			.mode = c->mode,
			.weight_bits = 16,
			.batch_size = c->batch,
			.seq_len = c->seq,
			.lora_rank = c->rank,
			.gradient_checkpointing = true,
			.optimizer = c->optimizer,
			.provider = c->provider,
			.flash_attention = c->flash,
			.lora_targets = c->targets,
			.strategy = c->strategy,
			.n_gpus = c->n_gpus,
			.zero_bucket_elems = c->bucket_elems,
			.zero_overlap_comm = c->bucket_elems > 0,
		};
		struct train_memory r;
		double want;

		if (measured(train, c, &want) < 0 ||
		    arch_dims(arch, c->arch, c->params_b, &m) < 0 ||
		    train_memory_estimate(&m, &s, &r) < 0) {
			snprintf(err, errlen,
				 "case %s/%s/%s: row, architecture or estimate missing", c->model,
				 c->method, c->framework);
			rc = -1;
			goto out;
		}
		out[n].model = c->model;
		out[n].method = c->method;
		out[n].framework = c->framework;
		out[n].measured_gib = want;
		out[n].estimate_gib = (double)r.total_bytes / GIB;
		out[n].error = (out[n].estimate_gib - want) / want;
		out[n].tolerance = c->tolerance;
		n++;
	}
out:
	t_csv_free(train);
	t_csv_free(arch);
	free(tp);
	free(ap);
	return rc < 0 ? rc : n;
}

/* Unsloth README @ 2025 ("Llama 3.1 (8B) max. context length" and "Llama 3.3 (70B) max.
 * context length"): 4-bit QLoRA on q, k, v, o, gate, up, down with rank 32, batch 1, every
 * sequence padded to the length; Unsloth's offloaded gradient checkpointing against Hugging
 * Face with FlashAttention 2 and gradient checkpointing. The optimizer is not stated; the
 * notebooks the table accompanies use AdamW in fp32 states for the adapters ("adamw_torch"
 * default) for Hugging Face, and Unsloth's notebooks 8-bit AdamW ("adamw_8bit"), taken so. The
 * cards' memory is taken in GiB (nvidia-smi's total). */
static const struct {
	const char *arch, *framework;
	double card_gib, published;
	double hi; /* the largest estimate / published allowed */
} contexts[] = {
	{"Llama-3.1-8B", "Unsloth", 8, 2972, 1.1},    {"Llama-3.1-8B", "Unsloth", 12, 21848, 1.1},
	{"Llama-3.1-8B", "Unsloth", 16, 40724, 1.1},  {"Llama-3.1-8B", "Unsloth", 24, 78475, 1.1},
	{"Llama-3.1-8B", "Unsloth", 40, 153977, 1.1}, {"Llama-3.1-8B", "Unsloth", 48, 191728, 1.1},
	{"Llama-3.1-8B", "Unsloth", 80, 342733, 1.1}, {"Llama-3.1-8B", "HF+FA2", 12, 932, 1.1},
	{"Llama-3.1-8B", "HF+FA2", 16, 2551, 1.1},    {"Llama-3.1-8B", "HF+FA2", 24, 5789, 1.1},
	{"Llama-3.1-8B", "HF+FA2", 40, 12264, 1.1},   {"Llama-3.1-8B", "HF+FA2", 48, 15502, 1.1},
	{"Llama-3.1-8B", "HF+FA2", 80, 28454, 1.1},   {"Llama-3.1-70B", "Unsloth", 48, 12106, 1.1},
	{"Llama-3.1-70B", "Unsloth", 80, 89389, 1.1}, {"Llama-3.1-70B", "HF+FA2", 80, 6916, 1.1},
};

int train_calib_contexts(const char *data_dir, struct train_context_result *out, int cap, char *err,
			 size_t errlen)
{
	char *ap = t_path(data_dir, "calibration/model_arch.csv");
	struct t_csv *arch = t_csv_read(ap);
	int n = 0, rc = 0;

	if (!arch) {
		snprintf(err, errlen, "cannot read %s", ap);
		rc = -1;
		goto out;
	}
	for (size_t i = 0; i < sizeof(contexts) / sizeof(contexts[0]) && n < cap; i++) {
		bool unsloth = strcmp(contexts[i].framework, "Unsloth") == 0;
		struct train_model m;
		struct train_settings s = {
			.mode = TRAIN_QLORA,
			.weight_bits = 16,
			.batch_size = 1,
			.seq_len = 1,
			.lora_rank = 32,
			.lora_targets = TRAIN_LORA_ALL_LINEAR,
			.gradient_checkpointing = true,
			.optimizer = unsloth ? TRAIN_OPT_ADAMW_8BIT : TRAIN_OPT_ADAMW,
			.provider = unsloth ? TRAIN_PROVIDER_UNSLOTH : TRAIN_PROVIDER_HUGGINGFACE,
			.flash_attention = true,
		};
		if (arch_dims(arch, contexts[i].arch, 0, &m) < 0) {
			snprintf(err, errlen, "no architecture %s", contexts[i].arch);
			rc = -1;
			goto out;
		}
		out[n].model = contexts[i].arch;
		out[n].framework = contexts[i].framework;
		out[n].card_gib = contexts[i].card_gib;
		out[n].published = contexts[i].published;
		out[n].estimate = (double)train_max_seq_len(
			&m, &s, 1 << 22, (int64_t)(contexts[i].card_gib * GIB), -1);
		out[n].ratio = out[n].estimate / out[n].published;
		out[n].hi = contexts[i].hi;
		n++;
	}
out:
	t_csv_free(arch);
	free(ap);
	return rc < 0 ? rc : n;
}

/* torchtune README @bd2a0fc7c3 ("Memory and training speed"): batch 2, packed to 2048,
 * torch.compile. Its configs (recipes/configs/llama3_1): LoRA on q, v, output and the MLP, rank
 * 8 for 8B and 16 for 70B and 405B; QLoRA likewise; every AdamW fused (fused: True); full
 * single-device with a paged 8-bit AdamW; 70B full with FSDP and CPU offload, 70B LoRA with
 * FSDP, 405B QLoRA with FSDP. The distributed configs turn activation checkpointing on, and
 * their peaks say so (70B LoRA's 2 x 2048 tokens over 80 layers would keep some 90 GiB of
 * activations without it, where 27.6 GiB a GPU was measured). The single-device rows are taken
 * without it: with its recomputation counted the RTX A6000 rows would exceed the card's peak.
 * They do not agree with one another, and the README states no more settings:
 * - the RTX 4090's LoRA and QLoRA peaks (16.2 and 7.4 GiB) leave no room for 4096 tokens of
 *   activations without checkpointing, which would put LoRA at 0.84 of the card's peak where
 *   full fine-tuning reaches 0.60;
 * - on both cards LoRA ran 1.82-1.87x as fast as full fine-tuning, where its FLOPs are 0.68x
 *   of full's and the paged 8-bit step adds 6-11% to full's step, so LoRA comes out 19-22%
 *   slow at the share that fits the full rows.
 * So these rows fit the consumer and workstation shares only roughly: the A6000's LoRA row is
 * the workstation class's known gap (tests/core/fit/test_train_speed.c). */
#define TORCHTUNE_TARGETS                                                                          \
	(TRAIN_LORA_Q | TRAIN_LORA_V | TRAIN_LORA_O | TRAIN_LORA_GATE | TRAIN_LORA_UP |            \
	 TRAIN_LORA_DOWN)
static const struct {
	const char *model, *method, *gpu; /* training_memory.csv columns, exact */
	const char *arch;                 /* model_arch.csv prefix */
	double params_b;
	const char *device; /* profiles/devices.json id */
	int n_gpus;
	enum train_mode mode;
	int64_t rank;
	unsigned targets;
	enum train_optimizer optimizer;
	enum train_strategy strategy;
	enum train_offload offload;
	bool checkpointing;
} speeds[] = {
	{"Llama 3.1 8B", "full", "1x RTX 4090", "Llama-3.1-8B", 0, "rtx-4090", 1, TRAIN_FULL, 0, 0,
	 TRAIN_OPT_PAGED_ADAMW_8BIT, TRAIN_STRATEGY_NONE, TRAIN_OFFLOAD_NONE, false},
	{"Llama 3.1 8B", "full", "1x RTX A6000", "Llama-3.1-8B", 0, "rtx-a6000", 1, TRAIN_FULL, 0,
	 0, TRAIN_OPT_PAGED_ADAMW_8BIT, TRAIN_STRATEGY_NONE, TRAIN_OFFLOAD_NONE, false},
	{"Llama 3.1 8B", "LoRA", "1x RTX 4090", "Llama-3.1-8B", 0, "rtx-4090", 1, TRAIN_LORA, 8,
	 TORCHTUNE_TARGETS, TRAIN_OPT_ADAMW_FUSED, TRAIN_STRATEGY_NONE, TRAIN_OFFLOAD_NONE, false},
	{"Llama 3.1 8B", "LoRA", "1x RTX A6000", "Llama-3.1-8B", 0, "rtx-a6000", 1, TRAIN_LORA, 8,
	 TORCHTUNE_TARGETS, TRAIN_OPT_ADAMW_FUSED, TRAIN_STRATEGY_NONE, TRAIN_OFFLOAD_NONE, false},
	{"Llama 3.1 8B", "QLoRA", "1x RTX 4090", "Llama-3.1-8B", 0, "rtx-4090", 1, TRAIN_QLORA, 8,
	 TORCHTUNE_TARGETS, TRAIN_OPT_ADAMW_FUSED, TRAIN_STRATEGY_NONE, TRAIN_OFFLOAD_NONE, false},
	{"Llama 3.1 70B", "full", "8x A100 (per GPU)", "Llama-3.1-70B", 0, "a100-sxm4-80gb", 8,
	 TRAIN_FULL, 0, 0, TRAIN_OPT_ADAMW_FUSED, TRAIN_STRATEGY_FSDP,
	 TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS, true},
	{"Llama 3.1 70B", "LoRA", "8x A100 (per GPU)", "Llama-3.1-70B", 0, "a100-sxm4-80gb", 8,
	 TRAIN_LORA, 16, TORCHTUNE_TARGETS, TRAIN_OPT_ADAMW_FUSED, TRAIN_STRATEGY_FSDP,
	 TRAIN_OFFLOAD_NONE, true},
	{"Llama 3.1 405B", "QLoRA", "8x A100 (per GPU)", "Llama-3.1-405B", 405.85, "a100-sxm4-80gb",
	 8, TRAIN_QLORA, 16, TORCHTUNE_TARGETS, TRAIN_OPT_ADAMW_FUSED, TRAIN_STRATEGY_FSDP_QLORA,
	 TRAIN_OFFLOAD_NONE, true},
};

/* Returns the index of v in names (n of them), or -1. */
static int pick(const char *v, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(v, names[i]) == 0)
			return i;
	return -1;
}

/* LoRA targets as the CSV names them: "qv", "qkvo", or "" for every linear layer. */
static unsigned lora_targets(const char *v)
{
	if (strcmp(v, "qv") == 0)
		return TRAIN_LORA_Q | TRAIN_LORA_V;
	if (strcmp(v, "qkvo") == 0)
		return TRAIN_LORA_Q | TRAIN_LORA_K | TRAIN_LORA_V | TRAIN_LORA_O;
	return 0;
}

/* Fills s from row r of hf_peaks.csv. Returns 0, or -1 naming the column in err. */
static int hf_settings(const struct t_csv *t, int r, struct train_settings *s, bool *allocated,
		       char *err, size_t errlen)
{
	static const char *const methods[] = {"full", "lora", "qlora"};
	static const char *const precisions[] = {"bf16", "amp"};
	static const char *const optimizers[] = {"adamw", "adamw_8bit", "paged_adamw_8bit"};
	static const char *const yesno[] = {"no", "yes"};
	static const char *const attentions[] = {"eager", "sdpa", "flash"};
	static const char *const losses[] = {"transformers", "chunked"};
	static const char *const strategies[] = {"none", "ddp", "zero1", "zero2", "zero3", "fsdp"};
	static const char *const kinds[] = {"reserved", "allocated"};
	int v[8];
	double batch, seq, gpus, opt;
	const char *col = NULL;

	v[0] = pick(t_csv_get(t, r, "method"), methods, 3);
	v[1] = pick(t_csv_get(t, r, "precision"), precisions, 2);
	v[2] = pick(t_csv_get(t, r, "optimizer"), optimizers, 3);
	v[3] = pick(t_csv_get(t, r, "grad_checkpointing"), yesno, 2);
	v[4] = pick(t_csv_get(t, r, "attention"), attentions, 3);
	v[5] = pick(t_csv_get(t, r, "loss"), losses, 2);
	v[6] = pick(t_csv_get(t, r, "strategy"), strategies, 6);
	v[7] = pick(t_csv_get(t, r, "peak_kind"), kinds, 2);
	for (int i = 0; i < 8 && !col; i++)
		if (v[i] < 0)
			col = "a setting";
	if (!col && (t_csv_num(t, r, "batch_size", &batch) < 0 ||
		     t_csv_num(t, r, "seq_len", &seq) < 0 || t_csv_num(t, r, "n_gpus", &gpus) < 0))
		col = "batch_size, seq_len or n_gpus";
	if (col) {
		snprintf(err, errlen, "hf_peaks.csv row %d: %s not understood", r + 2, col);
		return -1;
	}
	memset(s, 0, sizeof(*s));
	s->mode = (enum train_mode)v[0];
	s->weight_bits = 16;
	s->precision = (enum train_precision)v[1];
	s->optimizer = (enum train_optimizer)v[2];
	s->gradient_checkpointing = v[3] == 1;
	s->flash_attention = v[4] != 0;
	s->loss = v[5] == 0 ? TRAIN_LOSS_TRANSFORMERS : TRAIN_LOSS_CHUNKED;
	s->strategy = (enum train_strategy)v[6];
	s->n_gpus = (int)gpus;
	s->batch_size = (int64_t)batch;
	s->seq_len = (int64_t)seq;
	/* Optional columns: empty is the estimate's default. */
	s->lora_rank = t_csv_num(t, r, "lora_rank", &opt) == 0 ? (int64_t)opt : 16;
	s->lora_targets = lora_targets(t_csv_get(t, r, "lora_targets"));
	if (t_csv_num(t, r, "zero_bucket_elems", &opt) == 0)
		s->zero_bucket_elems = (int64_t)opt;
	s->zero_overlap_comm = strcmp(t_csv_get(t, r, "zero_overlap_comm"), "yes") == 0;
	if (t_csv_num(t, r, "grad_accum_steps", &opt) == 0)
		s->grad_accum_steps = (int)opt;
	*allocated = v[7] == 1;
	return 0;
}

int train_calib_hf(const char *src_dir, const char *data_dir, struct train_hf_result *out, int cap,
		   char *err, size_t errlen)
{
	char *hp = t_path(src_dir, "tests/fixtures/training/hf_peaks.csv");
	char *ap = t_path(data_dir, "calibration/model_arch.csv");
	struct t_csv *rows = t_csv_read(hp), *arch = t_csv_read(ap);
	int n = 0, rc = 0;

	if (!rows || !arch) {
		snprintf(err, errlen, "cannot read %s or %s", hp, ap);
		rc = -1;
		goto out;
	}
	for (int r = 0; r < rows->n_rows && n < cap; r++) {
		struct train_settings s;
		struct train_model m;
		struct train_memory mem;
		bool allocated;
		double want, est;

		if (hf_settings(rows, r, &s, &allocated, err, errlen) < 0) {
			rc = -1;
			goto out;
		}
		if (t_csv_num(rows, r, "peak_gib", &want) < 0 || want <= 0 ||
		    arch_dims(arch, t_csv_get(rows, r, "arch"), 0, &m) < 0 ||
		    train_memory_estimate(&m, &s, &mem) < 0) {
			snprintf(err, errlen, "hf_peaks.csv row %d: peak, architecture or estimate",
				 r + 2);
			rc = -1;
			goto out;
		}
		est = (double)(allocated ? mem.total_bytes - mem.overhead_bytes : mem.total_bytes);
		snprintf(out[n].label, sizeof(out[n].label),
			 "%s %s %lldx%lld, checkpointing %s, %s x%d, %s loss",
			 t_csv_get(rows, r, "model"), t_csv_get(rows, r, "method"),
			 (long long)s.batch_size, (long long)s.seq_len,
			 t_csv_get(rows, r, "grad_checkpointing"), t_csv_get(rows, r, "strategy"),
			 s.n_gpus, t_csv_get(rows, r, "loss"));
		out[n].checkpointing = s.gradient_checkpointing;
		out[n].in_band = strcmp(t_csv_get(rows, r, "in_band"), "yes") == 0;
		out[n].measured_gib = want;
		out[n].estimate_gib = est / GIB;
		out[n].ratio = out[n].estimate_gib / want;
		n++;
	}
out:
	t_csv_free(rows);
	t_csv_free(arch);
	free(hp);
	free(ap);
	return rc < 0 ? rc : n;
}

/* Loads src_dir's profiles/devices.json into t. Returns 0 or -1. */
static int load_devices(const char *src_dir, struct device_table *t, char *err, size_t errlen)
{
	char *path = t_path(src_dir, "profiles/devices.json");
	size_t len = 0;
	char *text = t_read_file(path, &len);
	cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
	int rc = doc && api_device_table_from_json(doc, t, err, errlen) == 0 ? 0 : -1;

	if (rc < 0 && !doc)
		snprintf(err, errlen, "cannot read %s", path);
	cJSON_Delete(doc);
	free(text);
	free(path);
	return rc;
}

static enum train_device_class device_class(const struct device_profile *p)
{
	if (strcmp(p->device_class, "workstation") == 0)
		return TRAIN_CLASS_WORKSTATION;
	if (strcmp(p->device_class, "datacenter") == 0)
		return TRAIN_CLASS_DATACENTER;
	return strcmp(p->device_class, "consumer") == 0 || strcmp(p->device_class, "laptop") == 0 ?
		       TRAIN_CLASS_CONSUMER :
		       TRAIN_CLASS_OTHER;
}

int train_calib_speeds(const char *data_dir, const char *src_dir, struct train_speed_result *out,
		       int cap, char *err, size_t errlen)
{
	char *tp = t_path(data_dir, "calibration/training_memory.csv");
	char *ap = t_path(data_dir, "calibration/model_arch.csv");
	struct t_csv *train = t_csv_read(tp), *arch = t_csv_read(ap);
	struct device_table devices = {0};
	int n = 0, rc = 0;

	if (!train || !arch || load_devices(src_dir, &devices, err, errlen) < 0) {
		if (!train || !arch)
			snprintf(err, errlen, "cannot read %s or %s", tp, ap);
		rc = -1;
		goto out;
	}
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]) && n < cap; i++) {
		const struct device_profile *p = NULL;
		struct train_model m;
		struct train_settings s = {
			.mode = speeds[i].mode,
			.weight_bits = 16,
			.batch_size = 2,
			.seq_len = 2048,
			.lora_rank = speeds[i].rank,
			.lora_targets = speeds[i].targets,
			.optimizer = speeds[i].optimizer,
			.gradient_checkpointing = speeds[i].checkpointing,
			.flash_attention = true,
			.loss = TRAIN_LOSS_CHUNKED,
			.compiled = true,
			.strategy = speeds[i].strategy,
			.offload = speeds[i].offload,
			.n_gpus = speeds[i].n_gpus,
		};
		struct train_memory mem;
		struct train_speed sp;
		struct train_device dev = {0};
		double want = -1;

		for (int r = 0; r < train->n_rows; r++) {
			const char *x = t_csv_get(train, r, "extra_settings");
			if (strcmp(t_csv_get(train, r, "model"), speeds[i].model) == 0 &&
			    strcmp(t_csv_get(train, r, "method"), speeds[i].method) == 0 &&
			    strcmp(t_csv_get(train, r, "gpu"), speeds[i].gpu) == 0 &&
			    strncmp(x, "tokens/sec ", 11) == 0)
				want = strtod(x + 11, NULL);
		}
		if (want <= 0 || arch_dims(arch, speeds[i].arch, speeds[i].params_b, &m) < 0 ||
		    device_resolve(&devices, speeds[i].device, &p) < 0 || !p ||
		    train_memory_estimate(&m, &s, &mem) < 0) {
			snprintf(err, errlen,
				 "speed case %s/%s/%s: row, architecture, device or "
				 "estimate missing",
				 speeds[i].model, speeds[i].method, speeds[i].gpu);
			rc = -1;
			goto out;
		}
		dev.bf16_tflops = p->bf16_tflops;
		dev.bandwidth_gbs = p->memory_bandwidth_gbs;
		dev.device_class = device_class(p);
		if (train_speed_estimate(&m, &s, &mem, &dev, &sp) < 0) {
			snprintf(err, errlen, "speed case %s: no bf16 peak for %s", speeds[i].model,
				 speeds[i].device);
			rc = -1;
			goto out;
		}
		out[n].model = speeds[i].model;
		out[n].method = speeds[i].method;
		out[n].gpu = speeds[i].gpu;
		out[n].device_class = dev.device_class;
		out[n].measured = want;
		out[n].estimate = sp.tokens_per_s;
		out[n].error = sp.tokens_per_s / want - 1;
		n++;
	}
out:
	device_table_clear(&devices);
	t_csv_free(train);
	t_csv_free(arch);
	free(tp);
	free(ap);
	return rc < 0 ? rc : n;
}

int train_calib_devices_check(const char *src_dir, char *err, size_t errlen)
{
	struct device_table t = {0};
	int rc = load_devices(src_dir, &t, err, errlen);

	for (int i = 0; rc == 0 && i < t.n; i++) {
		const struct device_profile *p = &t.devices[i];
		bool nvidia = strcmp(p->vendor, "nvidia") == 0;
		bool geforce = nvidia && (strcmp(p->device_class, "consumer") == 0 ||
					  strcmp(p->device_class, "laptop") == 0);
		double want = -1;
		if (p->kind == DEVICE_KIND_CPU)
			continue;
		if (strcmp(p->vendor, "apple") == 0)
			want = p->fp32_tflops;
		else if (nvidia && p->fp16_kind == DEVICE_FP16_TENSOR && p->fp16_tflops > 0)
			want = geforce && strcmp(p->id, "titan-rtx") != 0 ? p->fp16_tflops / 2 :
									    p->fp16_tflops;
		else if (p->fp16_kind == DEVICE_FP16_TENSOR && p->bf16_tflops <= 0)
			want = 0; /* a tensor part without a bf16 peak: missing */
		if (want < 0)
			continue;
		if (!(p->bf16_tflops > 0) ||
		    (want > 0 && fabs(p->bf16_tflops - want) > want * 0.01)) {
			snprintf(err, errlen, "%s: bf16_tflops %.3f, expected %.3f", p->id,
				 p->bf16_tflops, want);
			rc = -1;
		}
	}
	device_table_clear(&t);
	return rc;
}
