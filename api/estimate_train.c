/*
 * A fine-tuning estimate (api/estimate_priv.h): full, LoRA or QLoRA memory per GPU with the
 * strategy and GPU count, the run's speed and cost, as the one estimate (plan_estimate,
 * core/plan/plan_estimate.h, over core/plan/plan_train_eval.h) evaluates them; this file fills
 * its request and words its answer.
 */
#include <stdlib.h>
#include <string.h>

#include "api/json_alloc.h"
#include "core/err.h"
#include "core/numparse.h"
#include "core/hw/hw_profile.h"
#include "core/plan/plan_finetune.h"
#include "core/plan/plan_ft_machine.h"
#include "core/fit/train_optimizer.h"
#include "core/fit/train_parallel.h"
#include "core/fit/train_speed.h"
#include "api/estimate_priv.h"

/* ---- fine-tuning ------------------------------------------------------------------------- */

static void est_train_model(const struct est *e, struct train_model *t)
{
	const struct plan_ft_model m = {&e->arch, &e->params};

	plan_ft_train_model(&m, t);
}

/* The GPUs a training run may use with their budgets (core/plan/plan_machine.h): g, the index
 * of each into hw.gpus, and whether one runs Metal (MPS). */
struct est_train_gpus {
	struct plan_train_gpus g;
	int gpu[RF_MAX_DEVICES]; /* index into hw.gpus */
	bool apple;              /* a GPU runs Metal (MPS) */
};

static void est_train_gpus(const struct api_env *env, struct est *e, struct est_train_gpus *t)
{
	struct plan_machine_source m;
	struct plan_machine_notes notes = {.n = 0};

	est_machine_source(e, env, &m);
	plan_machine_train_gpus(&m, &t->g, t->gpu, &t->apple, &notes);
	for (int i = 0; i < notes.n; i++)
		est_assume(e, "%s", notes.line[i]);
}

/* Where the peak a training speed stands on comes from. */
struct est_train_peak {
	bool fp16;     /* the GPU's FP16 peak stands in for an unknown bf16 one */
	double quoted; /* the peak as quoted, where a power limit's held rate replaced it; else 0 */
};

/* The figures of the GPU at hw.gpus[gi] the training speed is computed for, and *pk where its
 * peak comes from. */
static void est_train_device(const struct api_env *env, const struct est *e, int gi,
			     struct train_device *d, struct est_train_peak *pk)
{
	const struct hw_gpu *g = &e->hw.gpus[gi];
	const struct device_profile *p = NULL;

	memset(d, 0, sizeof(*d));
	memset(pk, 0, sizeof(*pk));
	if (env->cat.devices)
		device_resolve_mem(env->cat.devices, g->name, g->memory_total_bytes, &p);
	d->device_class = plan_ft_device_class(p);
	d->bandwidth_gbs = g->memory_bandwidth_gbs > 0 ? g->memory_bandwidth_gbs :
			   p                           ? p->memory_bandwidth_gbs :
							 -1;
	if (p && p->bf16_tflops > 0) {
		d->bf16_tflops = p->bf16_tflops;
	} else if (g->fp16_tflops > 0) {
		d->bf16_tflops = g->fp16_tflops;
		pk->fp16 = true;
	}
	if (device_held_tflops(p, d->bf16_tflops) < d->bf16_tflops) {
		pk->quoted = d->bf16_tflops;
		d->bf16_tflops = device_held_tflops(p, d->bf16_tflops);
	}
}

/* Says what the training speed a stands on, on the GPU of figures d at hw.gpus[gi]. */
static void est_train_speed_notes(struct est *e, int gi, const struct train_device *d,
				  const struct est_train_peak *pk,
				  const struct plan_train_answer *a)
{
	const struct hw_gpu *g = &e->hw.gpus[gi];
	double cc = 0;
	bool no_bf16 = rf_parse_double(g->compute_capability, strlen(g->compute_capability), 0, 100,
				       &cc) == 0 &&
		       cc < 8;

	if (pk->fp16)
		est_assume(e,
			   "training speed: %s has no known bf16 (fp32 accumulate) peak; its FP16 "
			   "figure %.0f TFLOPS is used, which overstates GeForce cards 2x",
			   g->name, g->fp16_tflops);
	if (!a->speed_known) {
		est_assume(e, "training speed: unknown (no bf16 peak known for %s)", g->name);
		return;
	}
	/* Before compute capability 8.0 (Ampere) an NVIDIA GPU has no bf16 tensor cores: the
	 * run is fp16 with fp32 accumulate, the figure the profile holds for it. */
	est_assume(
		e,
		"training speed: %.3g FLOPs per token at %.0f%% of %.0f %s TFLOPS (fitted to "
		"published runs for %s cards)%s",
		a->speed.flops_per_token, a->speed.utilisation * 100, d->bf16_tflops,
		no_bf16 ? "fp16" : "bf16",
		d->device_class == TRAIN_CLASS_WORKSTATION ? "workstation" :
		d->device_class == TRAIN_CLASS_DATACENTER  ? "data-centre" :
		d->device_class == TRAIN_CLASS_CONSUMER    ? "consumer" :
							     "consumer (no figure for this class)",
		a->s.provider == TRAIN_PROVIDER_UNSLOTH ?
			"; Unsloth's fused kernels drop PEFT's memory-bound work, at the same GEMM rate" :
			"");
	if (e->arch.n_experts > 1 && a->s.mode != TRAIN_FULL &&
	    a->s.provider == TRAIN_PROVIDER_HUGGINGFACE && !a->s.compiled &&
	    (a->s.lora_targets == 0 ||
	     (a->s.lora_targets & (TRAIN_LORA_GATE | TRAIN_LORA_UP | TRAIN_LORA_DOWN)))) {
		struct train_model tm;
		est_train_model(e, &tm);
		est_assume(
			e,
			"training speed: the Hugging Face MoE block loops over the %.0f experts "
			"of %lld a micro-batch of %lld tokens reaches, and PEFT dispatches each "
			"one's adapted projections (about %.0f us each a pass), which outweighs "
			"the GEMMs; Unsloth's fused path, or LoRA on attention only, does not pay it",
			train_experts_hit(&tm, (double)a->s.batch_size * (double)a->s.seq_len),
			(long long)e->arch.n_experts,
			(long long)a->s.batch_size * (long long)a->s.seq_len,
			TRAIN_PEFT_HOST_S * 1e6);
	}
	if (pk->quoted > 0)
		est_assume(e,
			   "training speed: %s's power limit holds its clocks below the boost its "
			   "%.0f TFLOPS peak is quoted at; a continuous GEMM was measured at %.0f, "
			   "%.0f%% of the %.0f TFLOPS its clocks hold, the share cards that keep "
			   "their boost reach",
			   g->name, pk->quoted, d->bf16_tflops * DEVICE_GEMM_SHARE_HELD,
			   DEVICE_GEMM_SHARE_HELD * 100, d->bf16_tflops);
}

static void est_train_memory_json(cJSON *root, const struct train_memory *r, const struct est *e,
				  const struct est_train_gpus *t, bool one_gpu)
{
	cJSON *mem = cJSON_AddObjectToObject(root, "memory"), *pd;

	if (!mem)
		return;
	cJSON_AddNumberToObject(mem, "weights_bytes", (double)r->weights_bytes);
	cJSON_AddNumberToObject(mem, "adapter_bytes", (double)r->adapter_bytes);
	cJSON_AddNumberToObject(mem, "gradients_bytes", (double)r->gradients_bytes);
	cJSON_AddNumberToObject(mem, "optimizer_bytes", (double)r->optimizer_bytes);
	cJSON_AddNumberToObject(mem, "activations_bytes", (double)r->activations_bytes);
	cJSON_AddNumberToObject(mem, "checkpoint_bytes", (double)r->checkpoint_bytes);
	cJSON_AddNumberToObject(mem, "logits_bytes", (double)r->logits_bytes);
	cJSON_AddNumberToObject(mem, "attention_mask_bytes", (double)r->mask_bytes);
	cJSON_AddNumberToObject(mem, "reference_bytes", (double)r->reference_bytes);
	cJSON_AddNumberToObject(mem, "reused_bytes", (double)r->reused_bytes);
	cJSON_AddNumberToObject(mem, "zero_bucket_bytes", (double)r->bucket_bytes);
	cJSON_AddNumberToObject(mem, "optimizer_temp_bytes", (double)r->optimizer_temp_bytes);
	cJSON_AddNumberToObject(mem, "autocast_weights_bytes", (double)r->autocast_weights_bytes);
	cJSON_AddNumberToObject(mem, "kv_cache_bytes", (double)r->kv_cache_bytes);
	/* Only the objectives that have them (answers for SFT keep their fields). */
	if (e->rq.has_objective && e->rq.objective != 0) {
		cJSON_AddNumberToObject(mem, "reference_logits_bytes",
					(double)r->reference_logits_bytes);
		cJSON_AddNumberToObject(mem, "generation_bytes", (double)r->generation_bytes);
	}
	cJSON_AddNumberToObject(mem, "compute_bytes",
				(double)(r->activations_bytes + r->logits_bytes +
					 r->reference_logits_bytes - r->reused_bytes));
	cJSON_AddNumberToObject(mem, "overhead_bytes", (double)r->overhead_bytes);
	cJSON_AddNumberToObject(mem, "total_bytes", (double)r->total_bytes);
	cJSON_AddNumberToObject(mem, "reserved_bytes", (double)r->reserved_bytes);
	cJSON_AddNumberToObject(mem, "host_bytes", (double)r->host_bytes);
	if (t->g.host_budget >= 0)
		cJSON_AddNumberToObject(mem, "host_budget_bytes", (double)t->g.host_budget);
	else
		cJSON_AddNullToObject(mem, "host_budget_bytes");
	pd = cJSON_AddArrayToObject(mem, "per_device");
	/* One node's GPUs: the others hold the same. */
	for (int k = 0; pd && k < t->g.n; k++) {
		cJSON *d;
		if (one_gpu && k != t->g.largest)
			continue;
		d = cJSON_CreateObject();
		if (!d)
			break;
		cJSON_AddStringToObject(d, "device", e->hw.gpus[t->gpu[k]].name);
		cJSON_AddNumberToObject(d, "bytes", (double)r->total_bytes);
		cJSON_AddNumberToObject(d, "budget_bytes", (double)t->g.budget[k]);
		api_json_append(pd, d);
	}
}

_Static_assert(TRAIN_OBJECTIVE_KTO == API_EST_OBJECTIVE_KTO &&
		       TRAIN_OBJECTIVE_GRPO == API_EST_OBJECTIVE_GRPO,
	       "api_est_objectives follows enum train_objective");

/* TRL's defaults for KTO and GRPO (KTOConfig, GRPOConfig), each named in the assumptions. */
#define KTO_DEFAULT_BATCH 2
#define GRPO_DEFAULT_GENERATIONS 8
#define GRPO_DEFAULT_PROMPT 512
#define GRPO_DEFAULT_COMPLETION 256
#define GRPO_DEFAULT_VLLM_SHARE 0.3

/* The settings KTO and GRPO add to s (batch_size and seq_len already read), with the
 * assumptions that name TRL's defaults. */
static void est_train_objective(struct est *e, const struct est_train_gpus *t,
				struct train_settings *s)
{
	const struct api_estimate_request *rq = &e->rq;
	int64_t gens, prompt;

	if (s->objective == TRAIN_OBJECTIVE_KTO) {
		if (!rq->has_batch_size) {
			s->batch_size = KTO_DEFAULT_BATCH;
			est_assume(e,
				   "batch_size: %d as none was given, the least TRL's KTOTrainer "
				   "takes (its KL term pairs each prompt with another row's "
				   "completion)",
				   KTO_DEFAULT_BATCH);
		}
		est_assume(
			e,
			"objective kto: TRL's KTOTrainer; one completion a row; the KL "
			"batch runs forward through the policy without gradients%s",
			s->precomputed_ref_logps ?
				"; reference log-probs precomputed (no reference model)" :
				", and the batch and the KL batch through the reference model "
				"(the base with the adapter disabled for LoRA, a 16-bit copy for "
				"full fine-tuning)");
	}
	if (s->objective != TRAIN_OBJECTIVE_GRPO)
		return;
	gens = rq->has_num_generations ? rq->num_generations : GRPO_DEFAULT_GENERATIONS;
	prompt = rq->has_max_prompt_length ? rq->max_prompt_length : GRPO_DEFAULT_PROMPT;
	s->completion_len = rq->has_max_completion_length ? rq->max_completion_length :
							    GRPO_DEFAULT_COMPLETION;
	s->seq_len = prompt + s->completion_len;
	s->grpo_reference = rq->has_beta && rq->beta > 0;
	s->generation = !rq->has_use_vllm || !rq->use_vllm      ? TRAIN_GEN_TRANSFORMERS :
			rq->has_vllm_mode && rq->vllm_mode == 1 ? TRAIN_GEN_VLLM_COLOCATE :
								  TRAIN_GEN_VLLM_SERVER;
	s->vllm_share = rq->has_vllm_share ? rq->vllm_share : GRPO_DEFAULT_VLLM_SHARE;
	s->gpu_memory_bytes = t->g.n > 0 ? e->hw.gpus[t->gpu[t->g.largest]].memory_total_bytes : 0;
	if (s->gpu_memory_bytes < 0)
		s->gpu_memory_bytes = 0;
	if (!rq->has_batch_size)
		s->batch_size = gens;
	est_assume(e,
		   "objective grpo: TRL's GRPOTrainer; batch_size counts completions per GPU "
		   "(per_device_train_batch_size)%s",
		   rq->has_batch_size ? "" :
					", num_generations as none was given (one prompt's group a "
					"micro-batch)");
	est_assume(e, "num_generations %lld%s", (long long)gens,
		   rq->has_num_generations ? "" : " (TRL's default)");
	est_assume(e,
		   "a row: a prompt of %lld tokens (max_prompt_length%s), a completion of %lld "
		   "(max_completion_length%s) at full length",
		   (long long)prompt,
		   rq->has_max_prompt_length ? "" :
					       ", TRL's former default; TRL now keeps whole "
					       "prompts",
		   (long long)s->completion_len,
		   rq->has_max_completion_length ? "" : ", TRL's default 256");
	est_assume(e, "beta: %g%s: %s", rq->has_beta ? rq->beta : 0.0,
		   rq->has_beta ? "" : " (TRL's default)",
		   s->grpo_reference ?
			   "a reference model scores the completions (the base with the adapter "
			   "disabled for LoRA, a 16-bit copy for full fine-tuning)" :
			   "no reference model is loaded");
	est_assume(e,
		   "generation: the completions of a step (batch_size x accumulation steps a GPU, "
		   "TRL's steps_per_generation) together, %s",
		   s->generation == TRAIN_GEN_TRANSFORMERS ?
			   "by model.generate (use_vllm false, TRL's default): its KV cache and "
			   "prefill a phase of their own" :
		   s->generation == TRAIN_GEN_VLLM_SERVER ?
			   "by a vLLM server on other GPUs (vllm_mode server, TRL's default)" :
			   "by vLLM colocated, its share of the GPU held beside training");
	if (s->generation == TRAIN_GEN_VLLM_COLOCATE)
		est_assume(e, "vllm_gpu_memory_utilization: %g%s%s", s->vllm_share,
			   rq->has_vllm_share ? "" : " (TRL's default)",
			   s->gpu_memory_bytes > 0 ? "" :
						     "; no GPU known: vLLM's own need (its "
						     "16-bit weights and the KV cache) instead");
	if (rq->has_batch_size && rq->batch_size > 0 &&
	    (rq->batch_size * (rq->has_grad_accum ? rq->grad_accum : 1) *
	     (t->g.n > 0 ? t->g.n : 1) * (rq->has_nodes ? rq->nodes : 1)) %
			    gens !=
		    0)
		est_assume(e,
			   "num_generations %lld must divide the completions of a step (GPUs x "
			   "batch_size x accumulation steps), or TRL refuses the run",
			   (long long)gens);
}

/* The GRPO settings the estimate used, in TRL's names, and the generation's share of a step. */
static void est_train_grpo_json(cJSON *tr, const struct est *e, const struct train_settings *s,
				const struct train_memory *r, const struct train_speed *sp)
{
	cJSON *g = cJSON_AddObjectToObject(tr, "grpo");

	if (!g)
		return;
	cJSON_AddNumberToObject(g, "num_generations",
				(double)(e->rq.has_num_generations ? e->rq.num_generations :
								     GRPO_DEFAULT_GENERATIONS));
	cJSON_AddNumberToObject(g, "max_prompt_length", (double)(s->seq_len - s->completion_len));
	cJSON_AddNumberToObject(g, "max_completion_length", (double)s->completion_len);
	cJSON_AddNumberToObject(g, "beta", e->rq.has_beta ? e->rq.beta : 0.0);
	cJSON_AddBoolToObject(g, "reference_model", s->grpo_reference);
	cJSON_AddBoolToObject(g, "use_vllm", s->generation != TRAIN_GEN_TRANSFORMERS);
	if (s->generation != TRAIN_GEN_TRANSFORMERS)
		cJSON_AddStringToObject(g, "vllm_mode",
					s->generation == TRAIN_GEN_VLLM_COLOCATE ? "colocate" :
										   "server");
	else
		cJSON_AddNullToObject(g, "vllm_mode");
	if (s->generation == TRAIN_GEN_VLLM_COLOCATE)
		cJSON_AddNumberToObject(g, "vllm_gpu_memory_utilization", s->vllm_share);
	cJSON_AddNumberToObject(g, "generation_rows", (double)train_generation_rows(s));
	cJSON_AddNumberToObject(g, "kv_cache_bytes", (double)r->kv_cache_bytes);
	if (sp && sp->step_s > 0)
		cJSON_AddNumberToObject(g, "generation_share", sp->generation_s / sp->step_s);
	else
		cJSON_AddNullToObject(g, "generation_share");
}

/* Words and renders the answer a of a fine-tuning estimate on the GPUs of t (the largest's
 * figures dev, its FP16 peak standing in for bf16 when fp16): memory, fit, training and what
 * each stands on. Returns 0. */
static int est_train_render(struct est *e, cJSON *root, const struct est_train_gpus *t,
			    const struct train_device *dev, const struct est_train_peak *pk,
			    const struct plan_train_answer *a)
{
	cJSON *tr;

	if (t->g.n == 0)
		est_assume(e,
			   "no GPU known: the memory is what one GPU of unlimited memory needs for "
			   "the whole run, with no sharding or offload assumed "
			   "(training.unlimited_gpu); POST /api/recommend with \"for\": "
			   "\"hardware\" names the cards that hold it");
	if (a->s.packing)
		est_assume(
			e,
			"packing: every row is seq_len tokens of whole documents, all counted in "
			"tokens_per_s");
	else
		est_assume(
			e,
			"packing: off; tokens_per_s counts every position up to seq_len, padding "
			"included (packing: true counts only real tokens); padded: %s%s",
			a->s.padded ? "true" : "false",
			e->rq.has_padded ? "" :
			a->s.padded      ? " (several rows a micro-batch, padded to the longest)" :
					   " (one row a micro-batch)");
	if (a->s.provider == TRAIN_PROVIDER_HUGGINGFACE) {
		enum train_attention_mask mk = train_attention_mask(&a->s);
		est_assume(
			e, "attention mask: %s",
			mk == TRAIN_MASK_EAGER ?
				"eager attention adds one 4D mask (batch x seq x seq in the "
				"embedding's dtype, attention_mask_bytes) to every layer's scores" :
			mk == TRAIN_MASK_SDPA ?
				"packed or padded rows give SDPA a 4D boolean mask "
				"(attention_mask_bytes), which every layer converts to q's dtype and "
				"keeps, with k and v repeated to every head (attention flash, "
				"flash-attention's varlen kernel, needs none)" :
			a->s.varlen_attention ? "none (flash-attention's varlen kernel)" :
						"none (SDPA on unpadded rows takes is_causal)");
	}

	if (a->mem.reserved_bytes > a->mem.total_bytes)
		est_assume(
			e,
			"reserved: a GPU with room to spare shows %.1f GiB held (reserved_bytes): "
			"%s; with less room it gives them back, and %.1f GiB (total_bytes) is what "
			"the run needs",
			(double)a->mem.reserved_bytes / 1073741824.0,
			a->s.flash_attention ?
				"from the second step PyTorch keeps the optimizer step's "
				"blocks and reserves the loss's anew" :
				"PyTorch reserves eager attention's score tensors twice "
				"over, as the layers' other requests split the cached ones",
			(double)a->mem.total_bytes / 1073741824.0);
	est_train_memory_json(root, &a->mem, e, t, a->one_gpu);
	cJSON_AddBoolToObject(root, "fits", a->fits);
	if (a->budget > 0) {
		cJSON_AddNumberToObject(root, "utilization", a->utilization);
		cJSON_AddStringToObject(root, "fit_band", rf_fit_band(a->utilization));
		if (t->g.host_budget >= 0 && a->mem.host_bytes > t->g.host_budget)
			est_assume(e,
				   "fits: the GPUs hold it, but host memory does not (%.1f GiB "
				   "needed per node, %.1f GiB available)",
				   (double)a->mem.host_bytes / (double)RF_GIB,
				   (double)t->g.host_budget / (double)RF_GIB);
		else if (t->g.host_budget < 0 && a->mem.host_bytes > 0)
			est_assume(e, "fits: host memory not known; %.1f GiB per node needed",
				   (double)a->mem.host_bytes / (double)RF_GIB);
	} else {
		cJSON_AddNullToObject(root, "utilization");
		cJSON_AddNullToObject(root, "fit_band");
		est_assume(e, "fits: no GPU with a known memory size; training needs one");
	}
	if (t->g.n > 0)
		est_train_speed_notes(e, t->gpu[t->g.largest], dev, pk, a);
	else
		est_assume(e, "training speed: unknown (no GPU)");

	tr = cJSON_AddObjectToObject(root, "training");
	if (tr) {
		cJSON_AddStringToObject(tr, "mode", api_est_modes[e->rq.mode]);
		cJSON_AddStringToObject(tr, "provider", api_est_providers[a->s.provider]);
		cJSON_AddStringToObject(tr, "optimizer",
					train_optimizer_info(a->s.optimizer)->name);
		cJSON_AddBoolToObject(tr, "optimizer_default", !e->rq.has_optimizer);
		/* No GPU known: the memory is one GPU's of unlimited size (what the run needs). */
		cJSON_AddBoolToObject(tr, "unlimited_gpu", t->g.n == 0);
		if (a->s.mode == TRAIN_FULL || a->s.provider == TRAIN_PROVIDER_HUGGINGFACE)
			cJSON_AddStringToObject(tr, "precision",
						api_est_precisions[a->s.precision]);
		cJSON_AddStringToObject(
			tr, "loss", api_est_losses[train_loss_resolve(a->s.loss, a->s.provider)]);
		cJSON_AddStringToObject(tr, "attention",
					!a->s.flash_attention ? "eager" :
					a->s.varlen_attention ? "flash" :
								"sdpa");
		cJSON_AddBoolToObject(tr, "packing", a->s.packing);
		cJSON_AddBoolToObject(tr, "padded", a->s.padded);
		cJSON_AddBoolToObject(tr, "compiled", a->s.compiled);
		cJSON_AddStringToObject(tr, "objective", api_est_objectives[a->s.objective]);
		if (a->s.objective == TRAIN_OBJECTIVE_GRPO)
			est_train_grpo_json(tr, e, &a->s, &a->mem,
					    a->tokens_per_s > 0 ? &a->speed : NULL);
		cJSON_AddNumberToObject(tr, "batch_size", (double)a->s.batch_size);
		cJSON_AddNumberToObject(tr, "seq_len", (double)a->s.seq_len);
		if (a->s.mode != TRAIN_FULL) {
			cJSON_AddNumberToObject(tr, "lora_rank", (double)a->s.lora_rank);
			cJSON_AddNumberToObject(tr, "lora_dropout",
						e->rq.has_lora_dropout ? e->rq.lora_dropout :
						a->s.lora_dropout      ? 0.05 :
									 0.0);
		}
		cJSON_AddBoolToObject(tr, "gradient_checkpointing", a->s.gradient_checkpointing);
		if (a->s.grad_accum_steps > 0)
			cJSON_AddNumberToObject(tr, "gradient_accumulation_steps",
						(double)a->s.grad_accum_steps);
		else
			cJSON_AddNullToObject(tr, "gradient_accumulation_steps");
		cJSON_AddNumberToObject(tr, "trainable_params", (double)a->mem.trainable_params);
		cJSON_AddStringToObject(tr, "strategy", train_strategy_name(a->s.strategy));
		cJSON_AddStringToObject(tr, "offload", train_offload_name(a->s.offload));
		cJSON_AddNumberToObject(tr, "n_gpus", (double)a->mem.n_gpus);
		cJSON_AddNumberToObject(tr, "nodes", (double)a->nodes);
		cJSON_AddNumberToObject(tr, "comm_bytes_per_step",
					(double)a->mem.comm_bytes_per_step);
		est_num_or_null(tr, "tokens_per_s", a->tokens_per_s);
		if (a->tokens_per_s > 0) {
			cJSON_AddNumberToObject(tr, "flops_per_token", a->speed.flops_per_token);
			cJSON_AddNumberToObject(tr, "utilisation", a->speed.utilisation);
			cJSON_AddNumberToObject(tr, "scaling_efficiency", a->speed.scaling);
		}
		if (a->hours_per_epoch >= 0) {
			cJSON_AddNumberToObject(tr, "hours_per_epoch", a->hours_per_epoch);
			cJSON_AddNumberToObject(tr, "epochs", a->epochs);
			cJSON_AddNumberToObject(tr, "total_hours", a->total_hours);
			est_num_or_null(tr, "cost_usd", a->cost_usd);
		} else {
			cJSON_AddNullToObject(tr, "hours_per_epoch");
			cJSON_AddNullToObject(tr, "total_hours");
			cJSON_AddNullToObject(tr, "cost_usd");
		}
	}
	if (a->mem.n_gpus > 1)
		est_assume(e, "strategy: %s%s over %d GPUs on %lld node(s)%s",
			   train_strategy_name(a->s.strategy),
			   a->s.offload ? (a->s.offload == TRAIN_OFFLOAD_OPTIMIZER ?
						   " with the optimizer on "
						   "the host" :
						   " with optimizer and weights "
						   "on the host") :
					  "",
			   a->mem.n_gpus, (long long)a->nodes,
			   a->strategy_auto ? " (the cheapest that fits)" : "");
	return 0;
}

int est_training(const struct api_env *env, struct est *e, cJSON *root, struct api_reply *out)
{
	struct train_model tm;
	struct plan_train_request q = {0};
	struct plan_est_answer *ans;
	const struct plan_train_answer *a;
	struct train_settings s = {0};
	struct train_device dev;
	struct est_train_gpus t;
	int64_t nodes = e->rq.has_nodes ? e->rq.nodes : 1;
	struct est_train_peak pk = {0};
	int rc;

	est_train_gpus(env, e, &t);
	est_train_model(e, &tm);
	s.mode = e->rq.mode == API_EST_FULL ? TRAIN_FULL :
		 e->rq.mode == API_EST_LORA ? TRAIN_LORA :
					      TRAIN_QLORA;
	if (s.mode == TRAIN_QLORA && t.apple)
		return api_error(out, RF_E_INVALID_VALUE,
				 strcmp(e->hw_source, "profile") == 0 ? "hardware_profile" :
									"hardware",
				 "QLoRA with bitsandbytes does not run on Apple GPUs (MPS); use "
				 "MLX LoRA on a 4-bit model (mlx-lm) or 16-bit LoRA (mode lora)");
	s.weight_bits = 16;
	s.batch_size = e->rq.has_batch_size && e->rq.batch_size > 0 ? e->rq.batch_size : 1;
	s.seq_len = e->rq.has_seq_len && e->rq.seq_len > 0 ? e->rq.seq_len : EST_DEFAULT_SEQ_LEN;
	s.lora_rank = e->rq.has_lora_rank ? e->rq.lora_rank : 16;
	s.lora_targets = e->rq.lora_targets ? e->rq.lora_targets : TRAIN_LORA_ALL_LINEAR;
	s.gradient_checkpointing = e->rq.has_gradient_checkpointing ? e->rq.gradient_checkpointing :
								      true;
	s.provider = e->rq.has_provider ? (enum train_provider)e->rq.provider :
					  TRAIN_PROVIDER_HUGGINGFACE;
	/* The optimizer the provider runs when none is named (core/fit/train_optimizer.h). */
	s.optimizer = e->rq.has_optimizer ? train_optimizer_from_choice(e->rq.optimizer) :
					    train_optimizer_default(s.provider);
	if (train_optimizer_info(s.optimizer)->bitsandbytes && t.apple)
		return api_error(out, RF_E_INVALID_VALUE, "optimizer",
				 "%s needs bitsandbytes, which does not run on Apple GPUs (MPS); "
				 "use adamw_torch_fused, adamw_torch, adafactor or sgd",
				 train_optimizer_info(s.optimizer)->name);
	/* attention "eager" (or flash_attn false) keeps the scores; sdpa and flash do not. */
	s.flash_attention = e->rq.has_attention  ? e->rq.attention != 2 :
			    e->rq.has_flash_attn ? e->rq.flash_attn :
						   true;
	s.precision = (enum train_precision)(e->rq.has_precision ? e->rq.train_precision : 0);
	s.loss = (enum train_loss)(e->rq.has_loss ? e->rq.loss : 0);
	s.objective = (enum train_objective)(e->rq.has_objective ? e->rq.objective : 0);
	s.precomputed_ref_logps = e->rq.has_precomputed_ref_logps && e->rq.precomputed_ref_logps;
	est_train_objective(e, &t, &s);
	s.grad_accum_steps = e->rq.has_grad_accum ? (int)e->rq.grad_accum : 0;
	s.lora_dropout = s.mode != TRAIN_FULL &&
			 (e->rq.has_lora_dropout ? e->rq.lora_dropout > 0 :
						   train_default_lora_dropout(s.mode, s.provider));
	s.packing = e->rq.has_packing && e->rq.packing;
	/* attention "flash": flash-attention's varlen kernel takes packed and padded rows without
	 * a mask. */
	s.varlen_attention = e->rq.has_attention && e->rq.attention == 1;
	s.padded = e->rq.has_padded ? e->rq.padded && !s.packing : train_default_padded(&s);
	s.compiled = e->rq.has_compiled && e->rq.compiled;
	/* Without a GPU nothing is spread: the answer is fits false. */
	s.nodes = t.g.n > 0 ? (int)nodes : 1;
	s.n_gpus = (int)(t.g.n > 0 ? t.g.n * nodes : 1);
	if (t.g.n * nodes > EST_MAX_TRAIN_GPUS)
		return api_error(out, RF_E_INVALID_VALUE, "nodes",
				 "%lld GPUs in all (%d per node x %lld nodes); at most %d",
				 (long long)(t.g.n * nodes), t.g.n, (long long)nodes,
				 EST_MAX_TRAIN_GPUS);
	s.offload = (enum train_offload)(e->rq.has_offload ? e->rq.offload : 0);
	q.strategy_auto = !e->rq.has_strategy || e->rq.strategy == 0;
	if (!q.strategy_auto)
		s.strategy = (enum train_strategy)(e->rq.strategy - 1);
	q.s = s;
	q.offload_given = e->rq.has_offload;
	q.max_seq_len = e->rq.has_seq_len && e->rq.seq_len < 0;
	q.max_batch = e->rq.has_batch_size && e->rq.batch_size < 0;
	q.padded_given = e->rq.has_padded;
	q.max_positions = e->arch.max_position_embeddings;
	q.nodes = nodes;
	q.gpus = t.g;
	q.dataset_tokens = e->rq.has_dataset_tokens ? e->rq.dataset_tokens : -1;
	q.epochs = e->rq.has_epochs ? e->rq.epochs : -1;
	q.usd_per_hour = e->rq.has_usd_per_hour ? e->rq.usd_per_hour : -1;
	if (t.g.n > 0) {
		est_train_device(env, e, t.gpu[t.g.largest], &dev, &pk);
		q.dev = &dev;
	}
	/* The settings are worded as the run places them (an offload asked for is ZeRO-3's). */
	plan_train_placement(&q);
	s = q.s;
	if (!e->rq.has_seq_len && s.objective != TRAIN_OBJECTIVE_GRPO)
		est_assume(e, "seq_len: %d as none was given", EST_DEFAULT_SEQ_LEN);
	if (!e->rq.has_lora_rank && s.mode != TRAIN_FULL)
		est_assume(e, "lora_rank: 16 as none was given");
	if (!e->rq.lora_targets && s.mode != TRAIN_FULL)
		est_assume(e, "lora_targets: every linear layer (q, k, v, o, gate, up, down)");
	if (s.mode != TRAIN_FULL && !e->rq.has_lora_dropout)
		est_assume(e,
			   "lora_dropout: %s as none was given (each adapter keeps a one-byte mask "
			   "of its input when it is above 0)",
			   s.lora_dropout ? "0.05, PEFT's examples'" : "0, Unsloth's");
	if (s.mode != TRAIN_FULL && s.provider == TRAIN_PROVIDER_HUGGINGFACE)
		est_assume(
			e, "precision: %s (%s)", api_est_precisions[s.precision],
			s.precision == TRAIN_PRECISION_AMP ?
				"bf16 autocast, as the Trainer's bf16=True runs: each adapter keeps "
				"a bf16 copy of its input" :
				"the forward in the base's 16 bits without autocast: each adapter "
				"keeps an fp32 copy of its input, as PEFT casts it (amp, the "
				"Trainer's bf16=True, keeps bf16 copies)");
	if (s.mode == TRAIN_FULL)
		est_assume(
			e, "precision: %s (%s)", api_est_precisions[s.precision],
			s.precision == TRAIN_PRECISION_AMP ?
				"fp32 master weights, gradients and AdamW moments, bf16 compute" :
				"weights, gradients and AdamW moments in bf16, as torch keeps "
				"them for a bf16 model; under a DeepSpeed ZeRO stage an fp32 "
				"master copy and fp32 moments all the same, as DeepSpeed keeps "
				"them");
	est_assume(e, "optimizer: %s (%s), %s", train_optimizer_info(s.optimizer)->name,
		   train_optimizer_info(s.optimizer)->runs,
		   e->rq.has_optimizer ?
			   "as given" :
		   s.provider == TRAIN_PROVIDER_UNSLOTH ?
			   "the default for Unsloth (its notebooks' optim) as none was given" :
			   "the default for Hugging Face (the Trainer's optim) as none was given");
	est_assume(
		e,
		"batch_size is per GPU; activations in 16 bits, the residual stream in %s; loss: %s",
		train_residual_bytes(&s) == 4 ? "fp32 (the embedding is fp32)" : "16 bits",
		train_loss_resolve(s.loss, s.provider) == TRAIN_LOSS_CHUNKED ?
			"chunked/fused cross-entropy (no full logits)" :
			"transformers' chain (16-bit logits, fp32 upcast, log-softmax, gradient), "
			"whose memory the layers' backward reuses");
	ans = calloc(1, sizeof(*ans));
	if (!ans)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	{
		const struct plan_est_request eq = {.kind = PLAN_EST_TRAIN, .u.train = q};
		const struct plan_est_context x = {.a = &e->arch, .mp = &e->params, .tm = &tm};
		rc = plan_estimate(&eq, &x, ans);
	}
	a = &ans->train;
	if (rc < 0 && a->error == PLAN_TRAIN_E_STRATEGY)
		rc = api_error(out, RF_E_INVALID_VALUE, e->rq.has_offload ? "offload" : "strategy",
			       "strategy %s with offload %s cannot run %s fine-tuning on %d GPUs "
			       "(fsdp_qlora needs qlora; optimizer offload a ZeRO stage or FSDP; "
			       "parameter offload zero3, fsdp or fsdp_qlora)",
			       train_strategy_name(a->s.strategy), train_offload_name(a->s.offload),
			       api_est_modes[e->rq.mode], a->s.n_gpus);
	else if (rc == 0)
		rc = est_train_render(e, root, &t, &dev, &pk, a);
	else if (a->error == PLAN_TRAIN_E_MAX_NO_GPU)
		rc = api_error(out, RF_E_INVALID_VALUE, q.max_seq_len ? "seq_len" : "batch_size",
			       "\"max\" needs a GPU with a known memory size");
	else if (a->error == PLAN_TRAIN_E_MAX_BOTH)
		rc = api_error(out, RF_E_INVALID_VALUE, "batch_size",
			       "only one of seq_len and batch_size can be \"max\"");
	else
		rc = api_error(out, RF_E_INVALID_VALUE, "seq_len",
			       "the settings are out of range for this model");
	free(ans);
	return rc;
}
