/*
 * The fine-tuning planner (see plan_finetune.h).
 *
 * Every discrete choice is enumerated: 3 methods x 2 providers x 2 optimizers (the fused AdamW
 * and an 8-bit one, or the one the request fixes) x gradient
 * checkpointing on or off x the divisors of the effective batch (120 points for 16), none
 * inferred from another; on a host with several GPUs, each of those also with every GPU count,
 * sharding strategy (DDP, ZeRO-1/2/3, FSDP, FSDP-QLoRA) and offload (none, the optimizer, the
 * optimizer and the weights, where the host's RAM is known) that core/fit/train_parallel.h can
 * run. For each, memory grows with the sequence, so the longest sequence of
 * the grid (the task's length, then multiples of PLAN_FT_SEQ_STEP down to the floor) that
 * fits is solved by bisection: a few hundred estimates per model, each a few hundred
 * nanoseconds of arithmetic.
 *
 * Speed is the usual FLOPs account, per trained token: the forward pass 2N (N the active
 * parameters), the backward pass 4N for full fine-tuning or 2N through frozen weights plus
 * the adapters' own 6 x rank-params, one more forward with gradient checkpointing, and the
 * attention scores and weighted sums, which grow with the sequence (halved for causal
 * models). Dividing the device's dense 16-bit rate times a utilisation by it gives tokens/s.
 * The utilisations rank setups of one model on one card against each other, where only their
 * ratios matter. Over n GPUs, or with states offloaded, a run does n times one GPU's work at
 * the share core/train_speed leaves once the communication backward does not hide and the
 * host copies are paid (see pf_scaling). LoRA's is the 30% /api/estimate states; the others are fitted to torchtune's
 * measured Llama 3.1 8B runs on one RTX 4090 (batch 2, 2048 tokens, checkpointing on, as its
 * single-device recipes run; tests/data/calibration/training_memory.csv): QLoRA 2413 against
 * LoRA 3083 tokens/s (dequantising the 4-bit weights costs time) gives 0.30 x 0.783; full
 * 1650 against 3083, with 8N FLOPs a token against LoRA's 6N, gives 0.30 x 0.535 x 8 / 6 (the
 * weight gradients and the optimizer's pass over every weight run at a lower utilisation
 * than the frozen forward). The RTX A6000's full/LoRA pair (2579/4699) is held out as a check.
 */
#include "core/plan/plan_finetune.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/train_optimizer.h"
#include "core/fit/train_parallel.h"

/* Utilisations of the device's dense 16-bit peak (see the top of the file). */
#define PF_UTIL_LORA 0.30
#define PF_UTIL_QLORA (PF_UTIL_LORA * 2413.0 / 3083.0)
#define PF_UTIL_FULL (PF_UTIL_LORA * 1650.0 / 3083.0 * 8.0 / 6.0)
/* Speeds are compared in steps of 1%: closer than that, the estimate cannot tell them apart
 * (its error is far larger), and the tie-breaks decide. Steps, not a tolerance, keep the
 * order transitive. */
#define PF_SPEED_STEP 0.01
/* Kernel launches per layer and micro-batch: about 20 kernels forward and 40 backward at
 * 3-7 us of launch latency each (CUDA's documented range). A small model at a small
 * micro-batch is bound by it, which is why a larger micro-batch trains faster; a large
 * model's step time dwarfs it. */
#define PF_LAUNCH_S_PER_LAYER 300e-6
/* Caps on the divisors of the effective batch tried as micro-batches. */
#define PF_MAX_BATCHES 64

void plan_ft_task_lengths(enum plan_ft_task task, int64_t *target, int64_t *floor)
{
	switch (task) {
	case PLAN_FT_SUMMARIZATION:
		*target = 4096;
		*floor = 2048;
		break;
	case PLAN_FT_QUESTION_ANSWERING:
		*target = 512;
		*floor = 384;
		break;
	default:
		*target = 2048;
		*floor = 1024;
		break;
	}
}

/* Model types whose learned positions start after padding_idx (1), as RoBERTa's do. */
static bool pf_offset_positions(const char *model_type)
{
	static const char *const types[] = {"roberta",
					    "xlm-roberta",
					    "xlm-roberta-xl",
					    "camembert",
					    "roberta-prelayernorm",
					    "data2vec-text",
					    "longformer",
					    "mpnet",
					    "ibert",
					    "xlm_roberta",
					    NULL};

	for (int i = 0; types[i]; i++)
		if (strcmp(model_type, types[i]) == 0)
			return true;
	return false;
}

int64_t plan_ft_usable_seq(const struct model_arch *a)
{
	int64_t mpe = a->max_position_embeddings;

	/* T5's relative position buckets put no limit on the length. */
	if (a->rel_attn_buckets > 0 || mpe <= 0)
		return 0;
	/* positions = padding_idx + 1 + i: two of the table's rows are never a token's. */
	if (pf_offset_positions(a->model_type) && mpe > 2)
		return mpe - 2;
	return mpe;
}

static bool pf_has_bitsandbytes(enum plan_ft_backend b)
{
	return b == PLAN_FT_BACKEND_CUDA || b == PLAN_FT_BACKEND_ROCM;
}

static int pf_max_gpus(const struct plan_ft_device *d)
{
	if (d->n_gpus <= 1)
		return 1;
	return d->n_gpus < PLAN_FT_MAX_GPUS ? d->n_gpus : PLAN_FT_MAX_GPUS;
}

/* The budget of each GPU of a run over n of the device's GPUs (the n largest). */
static int64_t pf_budget(const struct plan_ft_device *d, int n)
{
	return n <= 1 || d->n_gpus <= 1 ? d->budget_bytes : d->gpu_budget_bytes[n - 1];
}

static bool pf_shards_weights(enum train_strategy st)
{
	return st == TRAIN_STRATEGY_ZERO3 || st == TRAIN_STRATEGY_FSDP ||
	       st == TRAIN_STRATEGY_FSDP_QLORA;
}

static void pf_parallel_settings(const struct plan_ft_setup *s, struct train_settings *ts)
{
	ts->strategy = s->strategy;
	ts->offload = s->offload;
	ts->n_gpus = s->n_gpus > 0 ? s->n_gpus : 1;
	ts->nodes = 1;
}

/* How s spreads over the GPUs and the host (see plan_ft_allowed). One GPU runs alone, or
 * with ZeRO-3/FSDP offloading to the host (ZeRO-Offload, ZeRO-Infinity); the ZeRO-1/2
 * offloads on one GPU hold what ZeRO-3's does and are not planned twice. */
static bool pf_placement_allowed(const struct plan_ft_device *d, const struct plan_ft_setup *s)
{
	struct train_settings ts;
	int n = s->n_gpus > 0 ? s->n_gpus : 1;

	memset(&ts, 0, sizeof(ts));
	ts.mode = s->mode;
	pf_parallel_settings(s, &ts);
	if (n > pf_max_gpus(d) || train_parallel_check(&ts) < 0)
		return false;
	if (n == 1 && s->strategy != TRAIN_STRATEGY_NONE &&
	    !(pf_shards_weights(s->strategy) && s->offload != TRAIN_OFFLOAD_NONE))
		return false;
	if (n > 1 && s->strategy == TRAIN_STRATEGY_NONE)
		return false;
	/* A 4-bit base is sharded by FSDP-QLoRA, which is what ZeRO-3 and FSDP become for it. */
	if (s->mode == TRAIN_QLORA &&
	    (s->strategy == TRAIN_STRATEGY_ZERO3 || s->strategy == TRAIN_STRATEGY_FSDP))
		return false;
	/* Unsloth trains on one GPU or under DDP (accelerate/torchrun), without ZeRO or FSDP. */
	if (s->provider == TRAIN_PROVIDER_UNSLOTH && s->strategy != TRAIN_STRATEGY_NONE &&
	    s->strategy != TRAIN_STRATEGY_DDP)
		return false;
	/* Offloading steps AdamW on the CPU (DeepSpeedCPUAdam, FSDP's CPU offload) into RAM that
	 * must be known to be there. */
	if (s->offload != TRAIN_OFFLOAD_NONE &&
	    (d->host_ram_bytes <= 0 || !train_optimizer_info(s->optimizer) ||
	     !train_optimizer_info(s->optimizer)->adam))
		return false;
	return true;
}

bool plan_ft_allowed(const struct model_arch *a, const struct plan_ft_device *d,
		     const struct plan_ft_setup *s)
{
	if (s->mode == TRAIN_QLORA && !pf_has_bitsandbytes(d->backend))
		return false;
	if (!train_optimizer_info(s->optimizer) ||
	    (train_optimizer_info(s->optimizer)->bitsandbytes && !pf_has_bitsandbytes(d->backend)))
		return false;
	if (s->provider == TRAIN_PROVIDER_UNSLOTH &&
	    (a->family != MODEL_DECODER || d->backend != PLAN_FT_BACKEND_CUDA))
		return false;
	return (s->mode == TRAIN_FULL) == (s->lora_rank == 0) && pf_placement_allowed(d, s);
}

/* ---- the adapter: the one place that speaks the estimator's language ---------------------- */

void plan_ft_train_model(const struct plan_ft_model *m, struct train_model *t)
{
	const struct model_arch *a = m->arch;

	memset(t, 0, sizeof(*t));
	t->params_total = m->params->total;
	t->params_embedding = m->params->embedding;
	t->params_output = m->params->output;
	t->n_layers = a->n_layers + a->n_encoder_layers;
	t->hidden = a->hidden_size;
	t->intermediate = a->n_experts > 0 && a->moe_intermediate_size > 0 ?
				  a->moe_intermediate_size :
				  a->intermediate_size;
	if (t->intermediate <= 0)
		t->intermediate = a->hidden_size * 4;
	t->n_heads = a->n_heads;
	t->n_kv_heads = a->n_kv_heads > 0 ? a->n_kv_heads : a->n_heads;
	t->head_dim = a->head_dim > 0 ? a->head_dim :
		      a->n_heads > 0  ? a->hidden_size / a->n_heads :
					0;
	t->vocab = a->vocab_size;
	t->gated_ffn = a->ffn != MODEL_FFN_PLAIN;
	t->n_experts = a->n_experts;
	t->n_experts_per_tok = a->n_experts_per_tok;
}

static double pf_flops_per_token(const struct plan_ft_model *m, const struct train_model *t,
				 const struct plan_ft_setup *s)
{
	double n = (double)(m->params->active > 0 ? m->params->active : m->params->total);
	double fwd = 2.0 * n, bwd, attn;
	/* Scores and weighted sums: 2 x seq x q-width each per layer, half of it for a causal
	 * mask; the backward pass costs twice the forward, checkpointing one forward more. */
	double causal = m->arch->family == MODEL_ENCODER ? 1.0 : 0.5;

	attn = 4.0 * causal * (double)s->seq_len * (double)(t->n_heads * t->head_dim) *
	       (double)t->n_layers;
	if (s->mode == TRAIN_FULL)
		bwd = 4.0 * n;
	else
		bwd = 2.0 * n + 6.0 * (double)s->memory.trainable_params;
	return fwd + bwd + (s->gradient_checkpointing ? fwd : 0.0) +
	       attn * (3.0 + (s->gradient_checkpointing ? 1.0 : 0.0));
}

/* The share of n GPUs' compute a run keeps once the communication backward does not hide and
 * the host copies of offloaded states are paid: core/train_speed's account of one step,
 * (compute + memory-bound kernels) over the whole step. 1 for one GPU with nothing
 * offloaded. Without the device's rate it is taken at a nominal 100 TFLOPS (only ratios
 * count then). */
static double pf_scaling(const struct plan_ft_device *d, const struct train_model *t,
			 const struct train_settings *ts, const struct train_memory *mem)
{
	struct train_device dev;
	struct train_speed sp;
	struct train_settings compiled;

	if (mem->n_gpus <= 1 && ts->offload == TRAIN_OFFLOAD_NONE)
		return 1.0;
	/* The share against this file's step, which counts FLOPs and launches only: without
	 * Hugging Face's unfused element-wise work, which would dilute the communication's and
	 * the offload's share of a step that does not contain it. */
	compiled = *ts;
	compiled.compiled = true;
	ts = &compiled;
	memset(&dev, 0, sizeof(dev));
	dev.bf16_tflops = d->tflops > 0 ? d->tflops : 100.0;
	dev.bandwidth_gbs = d->bandwidth_gbs;
	dev.device_class = d->device_class;
	dev.link_gbs = d->link_gbs;
	if (train_speed_estimate(t, ts, mem, &dev, &sp) < 0 || !(sp.step_s > 0))
		return 1.0;
	return (sp.compute_s + sp.memory_s) / sp.step_s;
}

/* Unsloth's published minimum GPU memory ("Unsloth Requirements", the vendor's own figures
 * for short sequences at batch 1-3; tests/data/calibration/training_memory.csv) by
 * parameter count: GB (taken as GiB) for QLoRA and 16-bit LoRA. */
static const struct {
	double params_b, qlora_gb, lora_gb;
} pf_published_floors[] = {
	{3, 3.5, 8},  {7, 5, 19},   {8, 6, 22},    {14, 8.5, 33},
	{27, 22, 64}, {32, 26, 76}, {70, 41, 164}, {405, 237, 950},
};

/* The published floor for a model of params_b billion parameters trained with mode:
 * linear between the sizes listed, in proportion below the smallest, beyond the largest;
 * 0 for full fine-tuning (none is published). */
static int64_t pf_published_floor(double params_b, enum train_mode mode)
{
	const size_t n = sizeof(pf_published_floors) / sizeof(pf_published_floors[0]);
	double gb;
	size_t i = 1;

	if (mode == TRAIN_FULL || !(params_b > 0))
		return 0;
#define PF_FLOOR(k)                                                                                \
	(mode == TRAIN_QLORA ? pf_published_floors[k].qlora_gb : pf_published_floors[k].lora_gb)
	if (params_b <= pf_published_floors[0].params_b) {
		gb = PF_FLOOR(0) * params_b / pf_published_floors[0].params_b;
	} else {
		while (i < n - 1 && params_b > pf_published_floors[i].params_b)
			i++;
		gb = PF_FLOOR(i - 1) + (PF_FLOOR(i) - PF_FLOOR(i - 1)) *
					       (params_b - pf_published_floors[i - 1].params_b) /
					       (pf_published_floors[i].params_b -
						pf_published_floors[i - 1].params_b);
	}
#undef PF_FLOOR
	return (int64_t)(gb * 1073741824.0);
}

int plan_ft_evaluate(const struct plan_ft_model *m, const struct plan_ft_device *d,
		     struct plan_ft_setup *s)
{
	struct train_model t;
	struct train_settings ts;
	int rc;

	plan_ft_train_model(m, &t);
	if (s->n_gpus < 1)
		s->n_gpus = 1;
	/* transformers runs T5 with eager attention (its position bias); others with SDPA. */
	s->flash_attention = m->arch->rel_attn_buckets <= 0;
	s->bf16 = d->bf16;
	/* Without bf16, full fine-tuning is mixed fp16 over fp32 master weights. */
	s->weight_bits = s->mode == TRAIN_FULL && !d->bf16 ? 32 : 16;
	memset(&ts, 0, sizeof(ts));
	ts.mode = s->mode;
	ts.weight_bits = s->weight_bits;
	ts.batch_size = s->batch_size;
	ts.seq_len = s->seq_len;
	ts.lora_rank = s->lora_rank;
	ts.lora_targets = TRAIN_LORA_ALL_LINEAR;
	ts.gradient_checkpointing = s->gradient_checkpointing;
	ts.optimizer = s->optimizer;
	ts.provider = s->provider;
	ts.flash_attention = s->flash_attention;
	ts.lora_dropout = train_default_lora_dropout(s->mode, s->provider);
	/* Packed rows, or several padded ones a micro-batch, give SDPA a mask (no varlen
	 * kernel). */
	ts.packing = s->packing;
	ts.padded = train_default_padded(&ts);
	pf_parallel_settings(s, &ts);
	rc = train_memory_estimate(&t, &ts, &s->memory);
	if (rc < 0)
		return rc;
	s->published_floor_bytes =
		s->n_gpus <= 1 ? pf_published_floor((double)m->params->total / 1e9, s->mode) : 0;
	s->flops_per_token = pf_flops_per_token(m, &t, s);
	s->utilisation = s->mode == TRAIN_FULL ? PF_UTIL_FULL :
			 s->mode == TRAIN_LORA ? PF_UTIL_LORA :
						 PF_UTIL_QLORA;
	s->scaling = pf_scaling(d, &t, &ts, &s->memory);
	if (d->tflops > 0 && s->flops_per_token > 0) {
		double tokens = (double)(s->batch_size * s->seq_len);
		double step = tokens * s->flops_per_token / (d->tflops * 1e12 * s->utilisation) +
			      (double)t.n_layers * PF_LAUNCH_S_PER_LAYER *
				      (s->gradient_checkpointing ? 4.0 / 3.0 : 1.0);
		struct train_device td;
		struct train_speed sp;
		s->speed = tokens / step * (double)s->memory.n_gpus * s->scaling;
		/* The figure an answer states is /api/estimate's for the same setup. */
		memset(&td, 0, sizeof(td));
		td.bf16_tflops = d->bf16_tflops > 0 ? d->bf16_tflops : d->tflops;
		td.bandwidth_gbs = d->bandwidth_gbs;
		td.device_class = d->device_class;
		td.link_gbs = d->link_gbs;
		s->tokens_per_s = train_speed_estimate(&t, &ts, &s->memory, &td, &sp) == 0 ?
					  sp.tokens_per_s :
					  s->speed;
	} else {
		/* Without the device's rate only the ratios of the FLOPs count. */
		s->tokens_per_s = -1.0;
		s->speed = s->flops_per_token > 0 ? s->utilisation / s->flops_per_token *
							    (double)s->memory.n_gpus * s->scaling :
						    0.0;
	}
	return 0;
}

bool plan_ft_fits(const struct plan_ft_device *d, const struct plan_ft_setup *a)
{
	int64_t budget = pf_budget(d, a->n_gpus);

	if (budget < 0 || (double)a->memory.total_bytes > (double)budget * PLAN_FT_MAX_UTILISATION)
		return false;
	/* Below what the framework's authors say the model needs on one GPU holding its
	 * weights, the estimate is not taken at its word. */
	if (a->n_gpus <= 1 && a->offload != TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS &&
	    a->published_floor_bytes > budget)
		return false;
	/* Offloaded states need RAM known to hold them; Unsloth's offloaded checkpoints are
	 * checked where the RAM is known. */
	if (a->offload != TRAIN_OFFLOAD_NONE)
		return d->host_ram_bytes > 0 && a->memory.host_bytes <= d->host_ram_bytes;
	return d->host_ram_bytes <= 0 || a->memory.host_bytes <= d->host_ram_bytes;
}

/* ---- the objective ------------------------------------------------------------------------ */

/* The speed's 1% step. */
static long pf_speed_step(const struct plan_ft_setup *s)
{
	return s->speed > 0 ? (long)floor(log(s->speed) / log1p(PF_SPEED_STEP)) : LONG_MIN;
}

/* The optimizer each method's usual recipe uses: QLoRA pages an 8-bit AdamW (its paper's
 * guard against memory spikes); LoRA and full fine-tuning use exact AdamW, fused as the
 * Trainer runs it. */
static bool pf_recipe_optimizer(const struct plan_ft_setup *s)
{
	return s->optimizer ==
	       (s->mode == TRAIN_QLORA ? TRAIN_OPT_PAGED_ADAMW_8BIT : TRAIN_OPT_ADAMW_FUSED);
}

bool plan_ft_better(const struct plan_ft_setup *a, const struct plan_ft_setup *b)
{
	long sa = pf_speed_step(a), sb = pf_speed_step(b);

	if (a->seq_len != b->seq_len)
		return a->seq_len > b->seq_len;
	/* Offloading to host RAM runs several times slower than the GPUs alone (DeepSpeed's
	 * CPU Adam and its parameter fetches, which the step's copy time does not capture):
	 * at the same length, a setup that needs none wins whatever its FLOPs say. */
	if ((a->offload != TRAIN_OFFLOAD_NONE) != (b->offload != TRAIN_OFFLOAD_NONE))
		return a->offload == TRAIN_OFFLOAD_NONE;
	if (sa != sb)
		return sa > sb;
	/* Equal on the objective: fewer GPUs and less in host RAM (the same speed for less
	 * hardware), Unsloth (its published speed-up is not in the FLOPs), then the method's
	 * usual optimizer, the simpler strategy, then room to spare (and less host memory for
	 * offloaded checkpoints), then fewer accumulation steps. */
	if (a->n_gpus != b->n_gpus)
		return a->n_gpus < b->n_gpus;
	if (a->offload != b->offload)
		return a->offload < b->offload;
	if (a->provider != b->provider)
		return a->provider == TRAIN_PROVIDER_UNSLOTH;
	if (pf_recipe_optimizer(a) != pf_recipe_optimizer(b))
		return pf_recipe_optimizer(a);
	if (a->strategy != b->strategy)
		return a->strategy < b->strategy;
	if (a->memory.total_bytes != b->memory.total_bytes)
		return a->memory.total_bytes < b->memory.total_bytes;
	if (a->batch_size != b->batch_size)
		return a->batch_size > b->batch_size;
	if (a->mode != b->mode)
		return a->mode < b->mode;
	return a->gradient_checkpointing < b->gradient_checkpointing;
}

/* ---- the search --------------------------------------------------------------------------- */

/* Writes the sequence grid, longest first: the target, then the multiples of the step down to
 * the floor. Returns how many. */
static int pf_seq_grid(int64_t target, int64_t floor, int64_t *grid, int cap)
{
	int n = 0;

	grid[n++] = target;
	for (int64_t v = (target - 1) / PLAN_FT_SEQ_STEP * PLAN_FT_SEQ_STEP; v >= floor && n < cap;
	     v -= PLAN_FT_SEQ_STEP)
		if (v > 0)
			grid[n++] = v;
	if (grid[n - 1] != floor && floor < target && n < cap)
		grid[n++] = floor;
	return n;
}

/* One way to place a run on the machine: GPUs, strategy, offload. */
struct pf_place {
	int n_gpus;
	enum train_strategy strategy;
	enum train_offload offload;
};

#define PF_MAX_PLACES                                                                              \
	(PLAN_FT_MAX_GPUS * (TRAIN_STRATEGY_FSDP_QLORA + 1) *                                      \
	 (TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS + 1))

/* Writes every placement of the device's GPUs and host that some setup may take (the mode,
 * provider and optimizer are checked per setup by plan_ft_allowed). Returns how many. */
static int pf_placements(const struct plan_ft_device *d, struct pf_place *out)
{
	int n = 0;

	for (int g = 1; g <= pf_max_gpus(d); g++)
		for (int st = 0; st <= TRAIN_STRATEGY_FSDP_QLORA; st++)
			for (int o = 0; o <= TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS; o++) {
				struct plan_ft_setup s;
				memset(&s, 0, sizeof(s));
				s.n_gpus = g;
				s.strategy = (enum train_strategy)st;
				s.offload = (enum train_offload)o;
				/* The most permissive mode and optimizer for each strategy. */
				s.mode = st == TRAIN_STRATEGY_FSDP_QLORA ? TRAIN_QLORA : TRAIN_FULL;
				s.optimizer = TRAIN_OPT_ADAMW_FUSED;
				if (!pf_placement_allowed(d, &s))
					continue;
				out[n].n_gpus = g;
				out[n].strategy = s.strategy;
				out[n].offload = s.offload;
				n++;
			}
	return n;
}

static int pf_batches(int64_t effective, int64_t *out)
{
	int n = 0;

	for (int64_t b = 1; b <= effective && n < PF_MAX_BATCHES; b++)
		if (effective % b == 0)
			out[n++] = b;
	return n;
}

static void pf_lengths(const struct plan_ft_model *m, const struct plan_ft_request *r,
		       struct plan_ft_result *out)
{
	int64_t target, floor;

	plan_ft_task_lengths(r->task, &target, &floor);
	if (r->seq_len > 0)
		target = out->requested_seq = r->seq_len;
	out->usable_seq = plan_ft_usable_seq(m->arch);
	if (out->usable_seq > 0 && out->usable_seq < target) {
		out->capped_by_model = out->usable_seq < floor;
		target = out->usable_seq;
	}
	out->target_seq = target;
	out->floor_seq = floor < target ? floor : target;
}

/* For setup s with every choice but the sequence made, finds the longest sequence of the grid
 * that fits (memory grows with the sequence, so by bisection) and keeps it in res when it
 * beats res's best. */
static void pf_solve_seq(const struct plan_ft_model *m, const struct plan_ft_device *d,
			 struct plan_ft_setup *s, const int64_t *grid, int n_grid,
			 struct plan_ft_result *res)
{
	struct plan_ft_setup fit = *s;
	int lo = 0, hi = n_grid; /* grid[i] fits for every i >= the answer, in [lo, hi] */

	fit.seq_len = 0;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		s->seq_len = grid[mid];
		res->n_evaluated++;
		if (plan_ft_evaluate(m, d, s) == 0 && plan_ft_fits(d, s)) {
			hi = mid;
			fit = *s;
		} else {
			lo = mid + 1;
		}
	}
	if (lo == n_grid)
		return;
	if (fit.seq_len != grid[lo]) {
		s->seq_len = grid[lo];
		res->n_evaluated++;
		if (plan_ft_evaluate(m, d, s) < 0)
			return;
		fit = *s;
	}
	if (!res->feasible || plan_ft_better(&fit, &res->best))
		res->best = fit;
	res->feasible = true;
}

int plan_finetune(const struct plan_ft_model *m, const struct plan_ft_device *d,
		  const struct plan_ft_request *r, struct plan_ft_result *out)
{
	static const enum train_mode modes[] = {TRAIN_FULL, TRAIN_LORA, TRAIN_QLORA};
	struct plan_ft_result res;
	int64_t grid[PLAN_FT_MAX_SEQ / PLAN_FT_SEQ_STEP + 2], batches[PF_MAX_BATCHES];
	int64_t rank = r->lora_rank > 0 ? r->lora_rank : PLAN_FT_DEFAULT_LORA_RANK;
	unsigned methods = r->methods ? r->methods : PLAN_FT_METHODS_ALL;
	struct pf_place places[PF_MAX_PLACES];
	int n_grid, n_batches, n_places;

	if (r->effective_batch < 0 || r->effective_batch > PLAN_FT_MAX_EFFECTIVE_BATCH ||
	    r->seq_len < 0 || r->seq_len > PLAN_FT_MAX_SEQ || r->lora_rank < 0 ||
	    r->lora_rank > MODEL_MAX_LORA_RANK || (methods & ~PLAN_FT_METHODS_ALL) != 0 ||
	    (r->fixed_optimizer && !train_optimizer_info(r->optimizer)))
		return RF_E_INVALID_VALUE;
	memset(&res, 0, sizeof(res));
	res.effective_batch = r->effective_batch > 0 ? r->effective_batch :
						       PLAN_FT_DEFAULT_EFFECTIVE_BATCH;
	pf_lengths(m, r, &res);
	if (d->backend == PLAN_FT_BACKEND_NONE || d->budget_bytes < 0) {
		res.why_not = "no GPU with a known memory size to train on";
		*out = res;
		return 0;
	}
	n_grid = pf_seq_grid(res.target_seq, res.floor_seq, grid,
			     (int)(sizeof(grid) / sizeof(grid[0])));
	n_batches = pf_batches(res.effective_batch, batches);

	n_places = pf_placements(d, places);

	/* Every discrete choice is enumerated; only the sequence is solved. */
	for (int i = 0; i < 3 * 2 * 2 * 2 * n_batches * n_places; i++) {
		struct plan_ft_setup s;
		int k = i;
		memset(&s, 0, sizeof(s));
		s.n_gpus = places[k % n_places].n_gpus;
		s.strategy = places[k % n_places].strategy;
		s.offload = places[k % n_places].offload;
		s.packing = r->packing;
		k /= n_places;
		s.mode = modes[k % 3];
		k /= 3;
		s.provider = k % 2 ? TRAIN_PROVIDER_UNSLOTH : TRAIN_PROVIDER_HUGGINGFACE;
		k /= 2;
		/* The fused AdamW the Trainer runs, or an 8-bit one (QLoRA's recipe pages it);
		 * only the one asked for when the request fixes it. */
		s.optimizer = k % 2 == 0            ? TRAIN_OPT_ADAMW_FUSED :
			      s.mode == TRAIN_QLORA ? TRAIN_OPT_PAGED_ADAMW_8BIT :
						      TRAIN_OPT_ADAMW_8BIT;
		if (r->fixed_optimizer) {
			if (k % 2 == 1) {
				k /= 2;
				continue;
			}
			s.optimizer = r->optimizer;
		}
		k /= 2;
		s.gradient_checkpointing = k % 2 == 1;
		k /= 2;
		s.batch_size = batches[k];
		s.grad_accum = res.effective_batch / s.batch_size;
		s.lora_rank = s.mode == TRAIN_FULL ? 0 : rank;
		if (!(methods & PLAN_FT_METHOD_BIT(s.mode)) || !plan_ft_allowed(m->arch, d, &s))
			continue;
		pf_solve_seq(m, d, &s, grid, n_grid, &res);
	}
	if (res.feasible)
		res.reached_target = res.best.seq_len >= res.target_seq &&
				     res.best.seq_len >= res.requested_seq;
	else
		res.why_not = "does not fit at the task's shortest sequence with batch 1, 4-bit "
			      "weights where bitsandbytes runs, and gradient checkpointing";
	*out = res;
	return 0;
}

/* ---- ranking ------------------------------------------------------------------------------- */

bool plan_ft_suits(unsigned task, unsigned model_tasks)
{
	if (task & (MODEL_TASK_QUESTION_ANSWERING | MODEL_TASK_EXTRACTIVE_QA))
		return (model_tasks & MODEL_TASK_QUESTION_ANSWERING) != 0;
	return true;
}

unsigned plan_ft_family_tasks(enum model_family f)
{
	switch (f) {
	case MODEL_DECODER:
		return MODEL_TASK_TEXT_GENERATION | MODEL_TASK_SUMMARIZATION |
		       MODEL_TASK_QUESTION_ANSWERING;
	case MODEL_ENCODER_DECODER:
		return MODEL_TASK_SUMMARIZATION | MODEL_TASK_QUESTION_ANSWERING;
	default:
		return MODEL_TASK_EXTRACTIVE_QA;
	}
}

bool plan_ft_task_fits(unsigned task, enum model_family f, unsigned model_tasks)
{
	if (task & MODEL_TASK_TEXT_GENERATION)
		return (model_tasks & MODEL_TASK_TEXT_GENERATION) && f == MODEL_DECODER;
	if (task & MODEL_TASK_QUESTION_ANSWERING)
		return (model_tasks & (MODEL_TASK_QUESTION_ANSWERING | MODEL_TASK_EXTRACTIVE_QA)) !=
		       0;
	return (model_tasks & task) != 0;
}

static int pf_group(const struct plan_ft_result *p)
{
	if (!p->feasible)
		return 3;
	if (p->capped_by_model)
		return 2;
	return p->reached_target ? 0 : 1;
}

static int pf_rank_cmp(const void *va, const void *vb)
{
	const struct plan_ft_candidate *a = va, *b = vb;
	int ga = pf_group(&a->plan), gb = pf_group(&b->plan);
	int la = a->listed >= 0 ? a->listed : 1 << 20, lb = b->listed >= 0 ? b->listed : 1 << 20;
	bool oa = a->plan.feasible && a->plan.best.offload != TRAIN_OFFLOAD_NONE;
	bool ob = b->plan.feasible && b->plan.best.offload != TRAIN_OFFLOAD_NONE;

	if (ga != gb)
		return ga < gb ? -1 : 1;
	/* Offloading to host RAM trains several times slower than the GPUs alone: a model that
	 * needs it is offered after those that do not. */
	if (oa != ob)
		return oa ? 1 : -1;
	/* A length asked for that none of them reaches: the longest that fits first. */
	if (ga == 1 && a->plan.requested_seq > 0 && a->plan.best.seq_len != b->plan.best.seq_len)
		return a->plan.best.seq_len > b->plan.best.seq_len ? -1 : 1;
	if (a->suits != b->suits)
		return a->suits ? -1 : 1;
	if (a->stale != b->stale)
		return a->stale ? 1 : -1;
	if (a->moe != b->moe)
		return a->moe ? 1 : -1;
	if (la != lb)
		return la < lb ? -1 : 1;
	if (a->params_b != b->params_b)
		return a->params_b > b->params_b ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

bool plan_ft_preferred(const struct plan_ft_candidate *c)
{
	return c->plan.feasible && c->plan.best.offload == TRAIN_OFFLOAD_NONE && !c->stale &&
	       !c->moe;
}

void plan_ft_rank(struct plan_ft_candidate *c, size_t n)
{
	if (c && n > 1)
		qsort(c, n, sizeof(*c), pf_rank_cmp);
}

const char *plan_ft_method_name(enum train_mode mode)
{
	return mode == TRAIN_FULL ? "full" : mode == TRAIN_LORA ? "lora" : "qlora";
}

const char *plan_ft_strategy_name(enum train_mode mode)
{
	return mode == TRAIN_QLORA ? "qlora" : "sft";
}

const char *plan_ft_provider_name(enum train_provider p)
{
	return p == TRAIN_PROVIDER_UNSLOTH ? "unsloth" : "huggingface";
}

const char *plan_ft_optimizer_name(enum train_optimizer o)
{
	const struct train_optimizer_info *t = train_optimizer_info(o);

	return t ? t->name : "unknown";
}
