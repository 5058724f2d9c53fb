/*
 * POST /api/finetune/detect: which models a machine can fine-tune for a task, ModelForge's
 * way, with the settings rigfit's planner proves best. The machine (this host's snapshot, a
 * described one or a device profile), resolved once by the resolver every route uses
 * (api_plan_input: a Mac's GPU is its working set), is classified by seed 000's rules
 * (hw_tier on the largest GPU's memory and the RAM, in GiB) for the ModelForge field
 * compute_profile, or the tier is
 * forced with compute_specs; the tier's template is returned as tier_settings. The settings
 * themselves come from core/plan/plan_finetune.h, planned on the GPU's real budget, compute
 * and bf16 support for every catalog model of the task (method, provider, optimizer,
 * checkpointing, micro-batch toward the effective batch, sequence up to the task's length and
 * never below its floor), and the models are ranked by plan_ft_rank: those that reach the
 * task's length first, the class that suits the task, current families before older ones,
 * dense models before mixtures of experts, the tier's own models, the largest.
 * The answer carries the seed's shape and ModelForge's flat one with the same values, and
 * settings equals recommended_settings; its estimate block is /api/estimate's answer for the
 * recommended setup, asked in structs on the same resolved machine (api_estimate_resolved).
 * api_ft_detect_ask is the whole answer from the parsed question (resolve once, plan, render):
 * the route and ModelForge's session routes (api/finetune_session.c) both answer with it.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/catalog/tiers.h"
#include "api/estimate.h"
#include "api/estimate_request.h"
#include "api/finetune_detect.h"
#include "api/json_alloc.h"
#include "api/json_print.h"
#include "api/jsonmap.h"
#include "api/model_memo.h"
#include "core/text.h"
#include "core/hw/classify.h"
#include "core/hw/device.h"
#include "core/err.h"
#include "core/fit/estimate.h"
#include "core/hw/hw.h"
#include "core/hw/hw_profile.h"
#include "core/fit/model.h"
#include "core/plan/plan_finetune.h"
#include "core/plan/plan_ft_machine.h"
#include "core/fit/train_optimizer.h"
#include "core/fit/train_parallel.h"

#define FD_GIB 1073741824.0
#define FD_MAX_OFFERED 8
#define FD_MAX_SEQ 131072
#define FD_MAX_ASSUMPTIONS 24
#define FD_ASSUMPTION_LEN 400

enum fd_task {
	FD_TEXT_GENERATION,
	FD_SUMMARIZATION,
	FD_EXTRACTIVE_QA,
	FD_QA
};

static const char *const fd_tasks[] = {"text-generation", "summarization",
				       "extractive-question-answering", "question-answering", NULL};
static const char *const fd_tiers[] = {"low_end", "mid_range", "high_end", NULL};

/* As enum train_mode orders them. */
static const char *const fd_methods[] = {"full", "lora", "qlora", NULL};

#define FD_F(name, kind, field, lo, hi, has)                                                       \
	{                                                                                          \
		name, kind, offsetof(struct api_ft_question, field), 0, lo, hi, false,             \
			offsetof(struct api_ft_question, has), NULL                                \
	}

static const struct jm_field fd_fields[] = {
	{"task", JM_ENUM, offsetof(struct api_ft_question, task), 0, 0, 0, true,
	 offsetof(struct api_ft_question, has_task), fd_tasks},
	{"compute_specs", JM_ENUM, offsetof(struct api_ft_question, compute_specs), 0, 0, 0, false,
	 offsetof(struct api_ft_question, has_compute_specs), fd_tiers},
	{"hardware", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	{"hardware_profile", JM_STRING, offsetof(struct api_ft_question, hardware_profile),
	 sizeof(((struct api_ft_question *)0)->hardware_profile), 0, 0, false,
	 offsetof(struct api_ft_question, has_hardware_profile), NULL},
	FD_F("max_seq_length", JM_INT, max_seq_length, 64, FD_MAX_SEQ, has_max_seq_length),
	FD_F("effective_batch_size", JM_INT, effective_batch, 1, PLAN_FT_MAX_EFFECTIVE_BATCH,
	     has_effective_batch),
	{"method", JM_ENUM, offsetof(struct api_ft_question, method), 0, 0, 0, false,
	 offsetof(struct api_ft_question, has_method), fd_methods},
	FD_F("packing", JM_BOOL, packing, 0, 0, has_packing),
	{"optimizer", JM_ENUM, offsetof(struct api_ft_question, optimizer), 0, 0, 0, false,
	 offsetof(struct api_ft_question, has_optimizer), train_optimizer_choices},
};

/* Everything one answer works on; large (a snapshot), so it lives on the heap. */
struct fd {
	struct api_ft_question rq;
	struct api_plan_input *in;    /* the machine as every route resolves it (owned) */
	const struct hw_snapshot *hw; /* in's machine */
	const cJSON *hardware;        /* the request's "hardware", or NULL */
	const struct hw_gpu *gpu;     /* the largest GPU, or NULL */
	struct plan_ft_device dev;
	long evaluated; /* setups the planner asked of the estimator */
	int n_assumptions;
	char assumptions[FD_MAX_ASSUMPTIONS][FD_ASSUMPTION_LEN];
};

static void fd_assume(struct fd *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void fd_assume(struct fd *f, const char *fmt, ...)
{
	va_list ap;

	if (f->n_assumptions >= FD_MAX_ASSUMPTIONS)
		return;
	va_start(ap, fmt);
	rf_note_vformat(f->assumptions[f->n_assumptions++], FD_ASSUMPTION_LEN, fmt, ap);
	va_end(ap);
}

/* ---- the machine ------------------------------------------------------------------------ */

/* The machine (described, a device profile or this host's scan), resolved once by the
 * resolver every route uses (api_machine_input, as /api/estimate resolves it); each model
 * planned later is put in with api_plan_input_set_entry. */
static int fd_hardware(const struct api_env *env, struct fd *f, struct api_reply *out)
{
	int rc = api_machine_input(env, f->hardware,
				   f->rq.has_hardware_profile ? f->rq.hardware_profile : NULL,
				   &f->in, out);

	if (rc < 0)
		return rc;
	f->hw = f->in->hw;
	for (int i = 0; i < f->hw->n_gpus; i++)
		if (f->hw->gpus[i].memory_total_bytes > 0 &&
		    (!f->gpu || f->hw->gpus[i].memory_total_bytes > f->gpu->memory_total_bytes))
			f->gpu = &f->hw->gpus[i];
	return 0;
}

/* The tier: seed 000's rules on the largest GPU and the RAM, or the one compute_specs names. */
static const char *fd_tier(struct fd *f, const char **detected)
{
	double vram = f->gpu ? (double)f->gpu->memory_total_bytes / FD_GIB : 0.0;
	int64_t ram_b = hw_effective_ram_bytes(f->hw);
	const char *t = f->hw->compute_profile[0] ? f->hw->compute_profile : NULL;

	if (!t)
		t = hw_tier(vram, ram_b >= 0 ? (double)ram_b / FD_GIB : -1.0);
	if (!t) {
		t = hw_tier(vram, HW_TIER_RAM_GIB);
		fd_assume(f,
			  "compute_profile: the RAM is not known; classified by the GPU's %.1f GiB "
			  "as if the host had at least %.1f GiB (give hardware.memory.total_bytes "
			  "or compute_specs to decide)",
			  vram, HW_TIER_RAM_GIB);
	}
	*detected = t;
	if (f->rq.has_compute_specs) {
		if (strcmp(fd_tiers[f->rq.compute_specs], t) != 0)
			fd_assume(f,
				  "compute_profile: %s as compute_specs asks; the hardware is %s",
				  fd_tiers[f->rq.compute_specs], t);
		return fd_tiers[f->rq.compute_specs];
	}
	return t;
}

/* ---- the plan -------------------------------------------------------------------------- */

static const unsigned fd_task_bits[] = {MODEL_TASK_TEXT_GENERATION, MODEL_TASK_SUMMARIZATION,
					MODEL_TASK_EXTRACTIVE_QA, MODEL_TASK_QUESTION_ANSWERING};
/* Whether catalog model m is fine-tuned for the task (core/plan/plan_finetune.h's rule). */
static bool fd_task_fits(const struct model_entry *m, int task)
{
	return plan_ft_task_fits(fd_task_bits[task], m->arch.family, m->tasks);
}

static const enum plan_ft_task fd_plan_tasks[] = {PLAN_FT_TEXT_GENERATION, PLAN_FT_SUMMARIZATION,
						  PLAN_FT_QUESTION_ANSWERING,
						  PLAN_FT_QUESTION_ANSWERING};

#define FD_MAX_LISTED 16

/* Resolves the tier's own models for the task (in its order) into listed. Returns how many. */
static int fd_listed(const struct api_env *env, const struct fd *f, const struct api_tier *tier,
		     const struct model_entry **listed)
{
	const char *key = f->rq.task == FD_EXTRACTIVE_QA ? "question-answering" :
							   fd_tasks[f->rq.task];
	const struct api_tier_models *tm = api_tier_models(tier, key);
	int n = 0;

	for (int i = 0; tm && i < tm->n && n < FD_MAX_LISTED; i++)
		listed[n++] = model_catalog_find(env->cat.models, tm->ids[i]);
	return n;
}

/* Plans every catalog model of the task on the machine and ranks them, best first, into
 * list (room for the catalog). Returns how many, or a negative rf_err. */
static int fd_plan_all(const struct api_env *env, struct fd *f, const struct api_tier *tier,
		       struct plan_ft_candidate *list, size_t *n_out)
{
	struct plan_ft_request r = {0};
	const struct model_entry *listed[FD_MAX_LISTED];
	int n_listed = fd_listed(env, f, tier, listed);
	size_t n = 0;

	r.task = fd_plan_tasks[f->rq.task];
	r.seq_len = f->rq.has_max_seq_length ? f->rq.max_seq_length : 0;
	r.effective_batch = f->rq.has_effective_batch ? f->rq.effective_batch : 0;
	r.methods = f->rq.has_method ? PLAN_FT_METHOD_BIT((enum train_mode)f->rq.method) : 0;
	r.packing = f->rq.has_packing && f->rq.packing;
	r.fixed_optimizer = f->rq.has_optimizer;
	r.optimizer = train_optimizer_from_choice(f->rq.optimizer);
	for (size_t i = 0; i < env->cat.models->n; i++) {
		const struct model_entry *m = &env->cat.models->models[i];
		struct model_params params;
		struct plan_ft_model pm = {&m->arch, &params};
		struct plan_ft_candidate *c = &list[n];
		int rc;
		if (!fd_task_fits(m, f->rq.task))
			continue;
		rc = api_memo_params(&m->arch, &params);
		if (rc == RF_E_NOMEM)
			return rc;
		if (rc < 0)
			continue;
		memset(c, 0, sizeof(*c));
		c->index = i;
		c->params_b = m->params_b > 0 ? m->params_b : (double)params.total / 1e9;
		c->listed = -1;
		for (int k = n_listed - 1; k >= 0; k--)
			if (listed[k] == m)
				c->listed = k;
		c->suits = plan_ft_suits(fd_task_bits[f->rq.task], m->tasks);
		c->stale = m->stale;
		c->moe = m->arch.n_experts > 0;
		rc = plan_finetune(&pm, &f->dev, &r, &c->plan);
		if (rc < 0)
			return rc;
		f->evaluated += c->plan.n_evaluated;
		n++;
	}
	plan_ft_rank(list, n);
	if (r.seq_len > 0 && n > 0 && list[0].plan.feasible && !list[0].plan.reached_target)
		fd_assume(f,
			  "max_seq_length %lld: no model trains at that length on this machine; "
			  "the longest that fits is %s at %lld tokens",
			  (long long)r.seq_len, env->cat.models->models[list[0].index].id,
			  (long long)list[0].plan.best.seq_len);
	*n_out = n;
	return 0;
}

/* ModelForge's settings for a planned setup, with rigfit's names for what it adds. */
static cJSON *fd_settings_json(const struct plan_ft_setup *s, int64_t effective)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddBoolToObject(o, "use_4bit", s->mode == TRAIN_QLORA);
	cJSON_AddBoolToObject(o, "bf16", s->bf16);
	cJSON_AddBoolToObject(o, "fp16", !s->bf16);
	cJSON_AddNumberToObject(o, "per_device_train_batch_size", (double)s->batch_size);
	cJSON_AddNumberToObject(o, "gradient_accumulation_steps", (double)s->grad_accum);
	cJSON_AddNumberToObject(o, "effective_batch_size", (double)effective);
	cJSON_AddNumberToObject(o, "max_seq_length", (double)s->seq_len);
	cJSON_AddStringToObject(o, "strategy", plan_ft_strategy_name(s->mode));
	cJSON_AddStringToObject(o, "method", plan_ft_method_name(s->mode));
	cJSON_AddStringToObject(o, "provider", plan_ft_provider_name(s->provider));
	cJSON_AddBoolToObject(o, "gradient_checkpointing", s->gradient_checkpointing);
	cJSON_AddStringToObject(o, "optim", plan_ft_optimizer_name(s->optimizer));
	if (s->mode == TRAIN_FULL)
		cJSON_AddNullToObject(o, "lora_r");
	else
		cJSON_AddNumberToObject(o, "lora_r", (double)s->lora_rank);
	/* "strategy" is ModelForge's (sft, qlora): how the run spreads over GPUs has its own. */
	cJSON_AddNumberToObject(o, "n_gpus", (double)(s->n_gpus > 0 ? s->n_gpus : 1));
	cJSON_AddStringToObject(o, "parallel_strategy", train_strategy_name(s->strategy));
	cJSON_AddStringToObject(o, "offload", train_offload_name(s->offload));
	cJSON_AddBoolToObject(o, "packing", s->packing);
	return o;
}

/* One model_settings entry: the plan of one model and what the estimator says of it. */
static cJSON *fd_model_json(const struct fd *f, const struct model_entry *m,
			    const struct plan_ft_result *p)
{
	cJSON *o = cJSON_CreateObject();
	const struct plan_ft_setup *s = &p->best;
	int64_t budget = s->n_gpus > 1 ? f->dev.gpu_budget_bytes[s->n_gpus - 1] :
					 f->dev.budget_bytes;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "model", m->id);
	api_json_add(o, "settings", fd_settings_json(s, p->effective_batch));
	cJSON_AddBoolToObject(o, "reached_task_length", p->reached_target);
	cJSON_AddBoolToObject(o, "shrunk", !p->reached_target);
	cJSON_AddNumberToObject(o, "task_seq_len", (double)p->target_seq);
	if (p->usable_seq > 0)
		cJSON_AddNumberToObject(o, "usable_seq_len", (double)p->usable_seq);
	else
		cJSON_AddNullToObject(o, "usable_seq_len");
	/* Per GPU of the run, against the smallest budget among them. */
	cJSON_AddNumberToObject(o, "memory_total_bytes", (double)s->memory.total_bytes);
	cJSON_AddNumberToObject(o, "memory_host_bytes", (double)s->memory.host_bytes);
	cJSON_AddNumberToObject(o, "budget_bytes", (double)budget);
	cJSON_AddNumberToObject(o, "utilization",
				budget > 0 ? (double)s->memory.total_bytes / (double)budget : 0);
	if (s->tokens_per_s > 0)
		cJSON_AddNumberToObject(o, "tokens_per_s", round(s->tokens_per_s));
	else
		cJSON_AddNullToObject(o, "tokens_per_s");
	return o;
}

/* /api/estimate's answer for the recommended setup of catalog model m on the machine resolved
 * once (f->in), so that the answer carries the estimator's own account of it; no request is
 * built and nothing resolved again. Returns 0 and the answer in *res (NULL when the estimator
 * refused the setup), or RF_E_NOMEM. */
static int fd_estimate(const struct api_env *env, struct fd *f, const struct model_entry *m,
		       const struct plan_ft_setup *s, cJSON **res)
{
	struct api_estimate_request rq;
	struct api_reply tmp = {0};
	int mode = jm_choice(api_est_modes, plan_ft_method_name(s->mode));
	int provider = jm_choice(api_est_providers, plan_ft_provider_name(s->provider));
	int optimizer = jm_choice(train_optimizer_choices, plan_ft_optimizer_name(s->optimizer));
	/* The plan's placement, not the estimate's own cheapest: one GPU stays one. */
	int strategy = jm_choice(api_est_strategies, train_strategy_name(s->strategy));
	int offload = jm_choice(api_est_offloads, train_offload_name(s->offload));
	int rc;

	*res = NULL;
	if (mode < 0 || provider < 0 || optimizer < 0 || strategy < 0 || offload < 0)
		return 0;
	rc = api_plan_input_set_entry(f->in, m);
	if (rc < 0)
		return rc == RF_E_NOMEM ? rc : 0;
	api_estimate_request_init(&rq);
	rq.mode = mode;
	rq.provider = provider;
	rq.optimizer = optimizer;
	rq.strategy = strategy;
	rq.offload = offload;
	rq.has_mode = rq.has_provider = rq.has_optimizer = rq.has_strategy = rq.has_offload = true;
	rq.batch_size = s->batch_size;
	rq.seq_len = s->seq_len;
	rq.has_batch_size = rq.has_seq_len = true;
	rq.gradient_checkpointing = s->gradient_checkpointing;
	rq.has_gradient_checkpointing = true;
	if (s->mode != TRAIN_FULL) {
		rq.lora_rank = s->lora_rank;
		rq.has_lora_rank = true;
	}
	rq.packing = s->packing;
	rq.has_packing = true;
	if (f->rq.has_hardware_profile) {
		snprintf(rq.hardware_profile, sizeof(rq.hardware_profile), "%s",
			 f->rq.hardware_profile);
		rq.has_hardware_profile = true;
	}
	rc = api_estimate_resolved(env, f->in, &rq, res, &tmp);
	api_reply_reset(&tmp);
	if (rc < 0)
		*res = NULL;
	return rc == RF_E_NOMEM ? rc : 0;
}

/* ---- the answer ------------------------------------------------------------------------- */

static void fd_add_num_or_null(cJSON *o, const char *name, double v, bool known)
{
	if (known)
		cJSON_AddNumberToObject(o, name, round(v * 100.0) / 100.0);
	else
		cJSON_AddNullToObject(o, name);
}

static void fd_add_str_or_null(cJSON *o, const char *name, const char *v)
{
	if (v && *v)
		cJSON_AddStringToObject(o, name, v);
	else
		cJSON_AddNullToObject(o, name);
}

/* The machine in both shapes. */
static void fd_machine_json(const struct fd *f, cJSON *root)
{
	int64_t ram = hw_effective_ram_bytes(f->hw);
	double vram = f->gpu ? (double)f->gpu->memory_total_bytes / FD_GIB : 0;
	int cores = f->hw->cpu.physical_cores > 0 ? f->hw->cpu.physical_cores :
						    f->hw->cpu.logical_cores;
	cJSON *hs = cJSON_AddObjectToObject(root, "hardware_specs");

	if (hs) {
		fd_add_str_or_null(hs, "gpu_name", f->gpu ? f->gpu->name : NULL);
		fd_add_num_or_null(hs, "gpu_memory_gb", vram, f->gpu != NULL);
		fd_add_num_or_null(hs, "ram_gb", (double)ram / FD_GIB, ram >= 0);
		fd_add_str_or_null(hs, "cuda_version", f->gpu ? f->gpu->cuda_version : NULL);
	}
	fd_add_str_or_null(root, "gpu_name", f->gpu ? f->gpu->name : NULL);
	fd_add_num_or_null(root, "gpu_total_memory_gb", vram, f->gpu != NULL);
	fd_add_num_or_null(root, "ram_total_gb", (double)ram / FD_GIB, ram >= 0);
	cJSON_AddNullToObject(root, "available_diskspace_gb");
	if (cores > 0)
		cJSON_AddNumberToObject(root, "cpu_cores", cores);
	else
		cJSON_AddNullToObject(root, "cpu_cores");
	cJSON_AddStringToObject(root, "backend", f->hw->backend[0] ? f->hw->backend : "cpu");
}

static const char *fd_none_reason(const struct fd *f)
{
	if (f->dev.backend == PLAN_FT_BACKEND_NONE)
		return "no GPU with a known memory size: rigfit estimates fine-tuning on a GPU only; "
		       "training on the CPU is possible for the smallest models but very slow and "
		       "not estimated here. POST /api/estimate with a model and a fine-tuning mode "
		       "answers what one GPU needs (training.unlimited_gpu), and POST "
		       "/api/recommend with \"for\": \"hardware\" the cards that hold it";
	if (f->rq.has_method && f->rq.method == TRAIN_QLORA &&
	    f->dev.backend != PLAN_FT_BACKEND_CUDA && f->dev.backend != PLAN_FT_BACKEND_ROCM)
		return f->dev.backend == PLAN_FT_BACKEND_METAL ?
			       "QLoRA needs bitsandbytes, which runs on CUDA and ROCm, not on Apple "
			       "silicon: use LoRA on 16-bit weights (method lora, PyTorch MPS) or "
			       "MLX's LoRA/QLoRA" :
			       "QLoRA needs bitsandbytes, which runs on CUDA and ROCm only";
	if (f->rq.has_optimizer &&
	    train_optimizer_info(train_optimizer_from_choice(f->rq.optimizer))->bitsandbytes &&
	    f->dev.backend != PLAN_FT_BACKEND_CUDA && f->dev.backend != PLAN_FT_BACKEND_ROCM)
		return "the 8-bit optimizers need bitsandbytes, which runs on CUDA and ROCm only: "
		       "use adamw_torch_fused, adamw_torch, adafactor or sgd";
	return "no candidate model fits this GPU at the task's shortest sequence (text "
	       "generation 1024, summarization 2048, question answering 384 tokens), even with "
	       "batch size 1, gradient checkpointing and 4-bit weights where bitsandbytes runs";
}

static void fd_plan_json(const struct fd *f, cJSON *root)
{
	cJSON *p = cJSON_AddObjectToObject(root, "plan");
	int64_t target, floor;

	if (!p)
		return;
	plan_ft_task_lengths(fd_plan_tasks[f->rq.task], &target, &floor);
	cJSON_AddNumberToObject(p, "task_seq_len",
				(double)(f->rq.has_max_seq_length ? f->rq.max_seq_length : target));
	cJSON_AddNumberToObject(p, "floor_seq_len", (double)floor);
	cJSON_AddNumberToObject(p, "effective_batch_size",
				(double)(f->rq.has_effective_batch ?
						 f->rq.effective_batch :
						 PLAN_FT_DEFAULT_EFFECTIVE_BATCH));
	if (f->rq.has_method)
		cJSON_AddStringToObject(p, "method", fd_methods[f->rq.method]);
	else
		cJSON_AddNullToObject(p, "method");
	if (f->rq.has_optimizer)
		cJSON_AddStringToObject(
			p, "optimizer",
			plan_ft_optimizer_name(train_optimizer_from_choice(f->rq.optimizer)));
	else
		cJSON_AddNullToObject(p, "optimizer");
	cJSON_AddStringToObject(p, "objective",
				"the task's sequence length first (never below its floor), then "
				"the most tokens per second");
	cJSON_AddBoolToObject(p, "bf16", f->dev.bf16);
	cJSON_AddNumberToObject(p, "budget_bytes", (double)f->dev.budget_bytes);
	cJSON_AddNumberToObject(p, "n_gpus", f->dev.n_gpus > 1 ? f->dev.n_gpus : 1);
	if (f->dev.host_ram_bytes > 0)
		cJSON_AddNumberToObject(p, "host_ram_bytes", (double)f->dev.host_ram_bytes);
	else
		cJSON_AddNullToObject(p, "host_ram_bytes");
	if (f->dev.tflops > 0)
		cJSON_AddNumberToObject(p, "device_tflops", f->dev.tflops);
	else
		cJSON_AddNullToObject(p, "device_tflops");
	cJSON_AddNumberToObject(p, "setups_evaluated", (double)f->evaluated);
}

static void fd_assumptions(struct fd *f)
{
	fd_assume(f, "available_diskspace_gb: null, the disk is not measured");
	fd_assume(f,
		  "candidates: catalog models for the task (text-generation: decoder models; "
		  "question-answering also takes extractive ones); at most %d offered",
		  FD_MAX_OFFERED);
	fd_assume(f,
		  "ranking: those reaching the task's length, then its floor, then the rest (for "
		  "a length asked, the longest first); within each: no offload to RAM, the class "
		  "suiting the task, current families, dense before MoE, the tier's own, the "
		  "largest");
	fd_assume(f, "floors: a run on one GPU holding its weights gets at least Unsloth's "
		     "published minimum for the model's size and method (a 32B QLoRA 26 GB, a 70B "
		     "41 GB), whatever the estimate says");
	fd_assume(f, "settings: for each model the best of every method (full, LoRA, QLoRA where "
		     "bitsandbytes runs), provider (Unsloth for decoders on CUDA), optimizer, "
		     "gradient checkpointing and micro-batch toward the effective batch: the "
		     "longest sequence up to the task's first, then the most tokens/s");
	if (f->rq.has_optimizer)
		fd_assume(f, "optimizer: %s as given, for every setup",
			  plan_ft_optimizer_name(train_optimizer_from_choice(f->rq.optimizer)));
	else
		fd_assume(f, "optimizer: adamw_torch_fused (the Trainer's default) or an 8-bit "
			     "AdamW (paged for QLoRA, as its recipe runs; needs bitsandbytes), "
			     "whichever plans better; settings.optim names the one chosen");
	fd_assume(f, "tokens_per_s: /api/estimate's training speed for the setup; a model's "
		     "setups are compared on FLOPs per token at 30%% of the 16-bit rate for LoRA, "
		     "23%% QLoRA, 21%% full (ratios fitted to torchtune's runs)");
	if (f->dev.backend == PLAN_FT_BACKEND_CUDA)
		fd_assume(f,
			  "provider unsloth: its checkpoints are offloaded to host RAM "
			  "(memory_host_bytes), checked against the host's RAM where it is known");
	if (f->dev.n_gpus > 1)
		fd_assume(
			f,
			"GPUs: 1 to %d, with every strategy that runs there (Unsloth: none or ddp) "
			"and offload where host RAM is known; n GPUs give n x one GPU's tokens/s "
			"less the communication backward does not hide and the host copies",
			f->dev.n_gpus);
	if (!f->dev.bf16 && f->dev.backend != PLAN_FT_BACKEND_NONE)
		fd_assume(f, "fp16: the GPU has no bf16, so training runs in fp16 mixed precision "
			     "(full fine-tuning keeps fp32 master weights)");
	if (f->dev.backend == PLAN_FT_BACKEND_METAL)
		fd_assume(f,
			  "Apple silicon: training runs on PyTorch MPS within the GPU's share of "
			  "the unified memory; no bitsandbytes (no QLoRA, no 8-bit optimizers) "
			  "and no Unsloth");
}

int api_ft_question_parse(const struct api_request *req, struct api_ft_question *q, cJSON **body,
			  struct api_reply *out)
{
	int rc;

	*body = NULL;
	memset(q, 0, sizeof(*q));
	rc = jm_parse_body(req, false, body, out);
	if (rc < 0)
		return rc;
	rc = jm_map(*body, fd_fields, sizeof(fd_fields) / sizeof(fd_fields[0]), q, out);
	if (rc < 0) {
		cJSON_Delete(*body);
		*body = NULL;
	}
	return rc;
}

/* Plans the question of f on its machine (resolved) and renders the answer into root. Returns
 * 0, or a negative rf_err with the envelope in out. */
static int fd_answer(const struct api_env *env, struct fd *f, cJSON *root, struct api_reply *out)
{
	cJSON *possible, *options, *per, *est = NULL, *arr;
	struct plan_ft_candidate *list = NULL;
	const struct model_entry *rec = NULL;
	const struct plan_ft_result *rec_plan = NULL;
	const char *tier_id, *detected = NULL;
	const struct api_tier *tier;
	size_t n = 0;
	int offered = 0, rc;

	/* The GPU that trains, as /api/estimate picks it (core/plan/plan_ft_machine.h). */
	plan_ft_machine(f->hw, &f->in->machine, env->cat.devices, &f->dev);
	tier_id = fd_tier(f, &detected);
	tier = api_tier_find(env->cat.tiers, tier_id);
	if (!tier)
		return api_error(out, RF_E_UNAVAILABLE, NULL, "profiles/tiers.json has no tier %s",
				 tier_id);
	list = calloc(env->cat.models->n + 1, sizeof(*list));
	if (!list)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	rc = fd_plan_all(env, f, tier, list, &n);
	if (rc < 0) {
		rc = api_error(out, rc, NULL, NULL);
		goto done;
	}

	cJSON_AddNumberToObject(root, "status_code", 200);
	cJSON_AddStringToObject(root, "task", fd_tasks[f->rq.task]);
	cJSON_AddStringToObject(root, "profile", tier_id);
	cJSON_AddStringToObject(root, "compute_profile", tier_id);
	cJSON_AddStringToObject(root, "detected_profile", detected);
	cJSON_AddStringToObject(root, "profile_source",
				f->rq.has_compute_specs ? "compute_specs" : "hardware");
	fd_machine_json(f, root);
	possible = cJSON_AddArrayToObject(root, "possible_models");
	options = cJSON_AddArrayToObject(root, "possible_options");
	per = cJSON_AddArrayToObject(root, "model_settings");
	for (size_t i = 0; i < n && offered < FD_MAX_OFFERED; i++) {
		const struct model_entry *m = &env->cat.models->models[list[i].index];
		if (!list[i].plan.feasible)
			break;
		offered++;
		api_json_append(possible, cJSON_CreateString(m->id));
		api_json_append(options, cJSON_CreateString(m->id));
		api_json_append(per, fd_model_json(f, m, &list[i].plan));
		if (!rec) {
			rec = m;
			rec_plan = &list[i].plan;
		}
	}
	fd_add_str_or_null(root, "recommended_model", rec ? rec->id : NULL);
	fd_add_str_or_null(root, "model_recommendation", rec ? rec->id : NULL);
	if (rec) {
		/* One object, rendered twice: settings is what recommended_settings says. */
		api_json_add(root, "settings",
			     fd_settings_json(&rec_plan->best, rec_plan->effective_batch));
		api_json_add(root, "recommended_settings",
			     fd_settings_json(&rec_plan->best, rec_plan->effective_batch));
		rc = fd_estimate(env, f, rec, &rec_plan->best, &est);
		if (rc < 0) {
			rc = api_error(out, rc, NULL, NULL);
			goto done;
		}
		if (est)
			api_json_add(root, "estimate", est);
		else
			cJSON_AddNullToObject(root, "estimate");
		cJSON_AddNullToObject(root, "explanation");
	} else {
		cJSON_AddNullToObject(root, "settings");
		cJSON_AddNullToObject(root, "recommended_settings");
		cJSON_AddNullToObject(root, "estimate");
		cJSON_AddStringToObject(root, "explanation", fd_none_reason(f));
	}
	api_json_add(root, "tier_settings", api_tier_settings_json(&tier->settings));
	fd_plan_json(f, root);
	cJSON_AddNumberToObject(root, "candidates_checked", (double)n);
	fd_assumptions(f);
	if (rec_plan && !rec_plan->best.flash_attention)
		fd_assume(f, "estimate: /api/estimate assumes SDPA attention; the plan counted the "
			     "eager attention scores this model runs with (T5's position bias)");
	if (rec_plan && rec_plan->best.n_gpus > 1 && rec_plan->best.n_gpus < f->dev.n_gpus)
		fd_assume(f,
			  "estimate: /api/estimate spreads the run over all %d GPUs; the plan uses "
			  "the %d largest",
			  f->dev.n_gpus, rec_plan->best.n_gpus);
	if (rec_plan && rec_plan->best.weight_bits == 32)
		fd_assume(f,
			  "estimate: /api/estimate takes full fine-tuning as pure 16-bit; the plan "
			  "counted fp32 master weights, as fp16 mixed precision needs");
	arr = cJSON_AddArrayToObject(root, "assumptions");
	for (int i = 0; arr && i < f->n_assumptions; i++)
		api_json_append(arr, cJSON_CreateString(f->assumptions[i]));
	rc = 0;
done:
	free(list);
	return rc;
}

int api_ft_detect_ask(const struct api_env *env, const struct api_ft_question *q,
		      const cJSON *hardware, cJSON **result, struct api_reply *out)
{
	struct fd *f = calloc(1, sizeof(*f));
	cJSON *root = NULL;
	int rc;

	*result = NULL;
	if (!f)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	f->rq = *q;
	f->hardware = hardware;
	if (!env->cat.tiers || !env->cat.models || env->cat.models->n == 0) {
		rc = api_error(out, RF_E_UNAVAILABLE, NULL, "%s is not loaded",
			       !env->cat.tiers ? "profiles/tiers.json" : "profiles/models.json");
		goto done;
	}
	rc = fd_hardware(env, f, out);
	if (rc < 0)
		goto done;
	root = cJSON_CreateObject();
	rc = root ? fd_answer(env, f, root, out) : api_error(out, RF_E_NOMEM, NULL, NULL);
	if (rc == 0) {
		*result = root;
		root = NULL;
	}
done:
	cJSON_Delete(root);
	api_plan_input_free(f->in);
	free(f);
	return rc;
}

int api_finetune_detect(const struct api_env *env, const struct api_request *req,
			struct api_reply *out)
{
	struct api_ft_question q;
	cJSON *body, *root;
	int rc = api_ft_question_parse(req, &q, &body, out);

	if (rc < 0)
		return rc;
	rc = api_ft_detect_ask(env, &q, cJSON_GetObjectItemCaseSensitive(body, "hardware"), &root,
			       out);
	cJSON_Delete(body);
	return rc < 0 ? rc : api_reply_cjson(out, 200, root);
}
