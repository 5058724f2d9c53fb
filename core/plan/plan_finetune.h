/*
 * The fine-tuning planner: for one model on one machine and one task, the best setup the
 * fine-tuning estimator can prove fits. It enumerates the whole space (method, provider,
 * optimizer, gradient checkpointing, micro-batch and accumulation toward an effective batch,
 * sequence length, and on a host with several GPUs the GPU count, the sharding strategy and
 * what is offloaded to host RAM) rather than shrinking a template step by step, and keeps the
 * best by one objective: the longest sequence up to the task's length first, then the fastest.
 *
 * What may be searched follows what runs where: QLoRA and the 8-bit optimizers need
 * bitsandbytes (CUDA or ROCm; never Apple MPS or the CPU); Unsloth loads decoder models on
 * NVIDIA GPUs only (never encoders or encoder-decoders); a device without bf16 trains in fp16,
 * and full fine-tuning there keeps fp32 master weights (mixed precision), since pure fp16
 * weights do not train. The sequence is capped at the model's real usable length (RoBERTa's
 * 514 positions give 512 tokens) and never cut below the task's floor: a model that only fits
 * below it is dropped, not shrunk.
 *
 * Pure: no I/O; the estimator (core/fit/train_memory.h) is its only oracle, asked through one
 * adapter in plan_finetune.c.
 */
#ifndef RIGFIT_CORE_PLAN_FINETUNE_H
#define RIGFIT_CORE_PLAN_FINETUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/model.h"
#include "core/fit/train_memory.h"
#include "core/fit/train_speed.h"

#define PLAN_FT_DEFAULT_EFFECTIVE_BATCH 16
#define PLAN_FT_MAX_EFFECTIVE_BATCH 1024
#define PLAN_FT_DEFAULT_LORA_RANK 16
/* Sequence lengths between the floor and the task's length are tried on this grid. */
#define PLAN_FT_SEQ_STEP 128
#define PLAN_FT_MAX_SEQ (1 << 20)
/* Plans leave 5% of the budget free: the estimate reads 0.8-1.0x of measured peaks at long
 * sequences, and an out-of-memory an hour into a run costs more than a smaller batch. */
#define PLAN_FT_MAX_UTILISATION 0.95
/* GPUs of one host the planner may spread a run over. */
#define PLAN_FT_MAX_GPUS 16

enum plan_ft_task {
	PLAN_FT_TEXT_GENERATION = 0,
	PLAN_FT_SUMMARIZATION,
	PLAN_FT_QUESTION_ANSWERING,
};

enum plan_ft_backend {
	PLAN_FT_BACKEND_NONE = 0, /* no GPU: nothing is planned */
	PLAN_FT_BACKEND_CUDA,
	PLAN_FT_BACKEND_ROCM,
	PLAN_FT_BACKEND_METAL, /* PyTorch MPS */
	PLAN_FT_BACKEND_OTHER,
};

/* Methods, as bits of enum train_mode, for plan_ft_request.methods. */
#define PLAN_FT_METHOD_BIT(mode) (1u << (unsigned)(mode))
#define PLAN_FT_METHODS_ALL                                                                        \
	(PLAN_FT_METHOD_BIT(TRAIN_FULL) | PLAN_FT_METHOD_BIT(TRAIN_LORA) |                         \
	 PLAN_FT_METHOD_BIT(TRAIN_QLORA))

/* The machine, as training sees it: the GPU that trains alone (the one with the largest
 * budget) and, on a host with several GPUs, the budget of each. Fields after tflops were added
 * later; zero is the default of each (one GPU, host RAM unknown, consumer-class links). */
struct plan_ft_device {
	enum plan_ft_backend backend;
	int64_t budget_bytes; /* what one training process may use; < 0 unknown */
	bool bf16;            /* bf16 compute (NVIDIA 8.0+, AMD CDNA 2+, Apple) */
	double tflops;        /* dense 16-bit compute rate; <= 0 unknown (speed not reported) */
	/* The dense bf16 (fp32 accumulate) peak /api/estimate's training speed takes (the
	 * profile's, half the fp16 rate on GeForce cards); <= 0: tflops. */
	double bf16_tflops;
	int n_gpus; /* GPUs that may share a run; 0 or 1: budget_bytes's alone */
	int64_t gpu_budget_bytes[PLAN_FT_MAX_GPUS]; /* each GPU's budget, largest first: a run
						       over n GPUs takes the n largest, each
						       held to gpu_budget_bytes[n - 1] */
	int64_t host_ram_bytes; /* host RAM a run may fill (offloaded states, Unsloth's
				   checkpoints); <= 0 unknown: nothing is offloaded */
	enum train_device_class device_class; /* for the multi-GPU and offload costs */
	double bandwidth_gbs;                 /* memory bandwidth; <= 0 unknown */
	double link_gbs; /* collective bandwidth between the GPUs; <= 0: by class (NVLink for
			    data-centre cards, PCIe otherwise) */
};

/* The model: a validated architecture and its parameter counts (both owned by the caller). */
struct plan_ft_model {
	const struct model_arch *arch;
	const struct model_params *params;
};

struct plan_ft_request {
	enum plan_ft_task task;
	int64_t seq_len;         /* the task's length; 0: the task's default */
	int64_t effective_batch; /* 0: PLAN_FT_DEFAULT_EFFECTIVE_BATCH */
	unsigned methods;        /* PLAN_FT_METHOD_BIT()s that may be chosen; 0: all */
	int64_t lora_rank;       /* 0: PLAN_FT_DEFAULT_LORA_RANK */
	bool packing;            /* sample packing: every row a full sequence of documents */
	/* Added later: the optimizer the run must use (fixed_optimizer), else the planner tries
	 * the fused AdamW and the 8-bit one. */
	bool fixed_optimizer;
	enum train_optimizer optimizer;
};

/* One point of the space, with what the estimator says of it. */
struct plan_ft_setup {
	enum train_mode mode;
	enum train_provider provider;
	enum train_optimizer optimizer;
	bool gradient_checkpointing;
	bool flash_attention; /* false: eager attention (T5's position bias) */
	bool bf16;            /* compute dtype: bf16, else fp16 */
	int weight_bits;      /* 16, or 32 for full fine-tuning in mixed fp16 */
	int64_t lora_rank;    /* 0 for full fine-tuning */
	int64_t batch_size;   /* per device */
	int64_t grad_accum;   /* batch_size x grad_accum = the effective batch */
	int64_t seq_len;
	enum train_strategy strategy; /* none on one GPU; ddp, ZeRO or FSDP over several */
	enum train_offload offload;   /* what ZeRO/FSDP keeps in host RAM */
	int n_gpus;                   /* GPUs of the run (at least 1) */
	bool packing;                 /* as the request asked */
	struct train_memory memory;   /* per GPU; host_bytes in host RAM */
	/* The least memory a single GPU needs for the model with this method by Unsloth's
	 * published requirements (a floor under the estimate, which a plan on one GPU must also
	 * meet); 0: none stated (full fine-tuning, runs over several GPUs). */
	int64_t published_floor_bytes;
	double flops_per_token; /* training FLOPs per token, attention included */
	double utilisation;     /* stated share of the device's peak */
	/* All GPUs together, as /api/estimate gives the same setup (core/fit/train_speed.h);
	 * < 0 when the device's compute is unknown. */
	double tokens_per_s;
	double scaling; /* the planner's tokens/s over n_gpus x one GPU's alone (communication
			   and host copies not hidden behind compute) */
	double speed;   /* what the objective compares: the planner's own account of tokens/s
			   (FLOPs at the method's fitted utilisation, launches, scaling), or
			   without the device's rate utilisation / flops_per_token */
};

struct plan_ft_result {
	bool feasible;         /* a setup at or above floor_seq fits */
	bool reached_target;   /* and it is at target_seq */
	bool capped_by_model;  /* the model's usable length is below the task's floor */
	int64_t requested_seq; /* the request's own length (seq_len); 0: the task's. A model
				  that does not reach it has not reached_target */
	int64_t usable_seq;    /* the model's usable length; 0: no limit from positions */
	int64_t target_seq;    /* the task's length, capped at usable_seq */
	int64_t floor_seq;     /* the task's floor, capped at target_seq */
	int64_t effective_batch;
	int n_evaluated;           /* setups asked of the estimator */
	struct plan_ft_setup best; /* when feasible */
	const char *why_not;       /* static text when not feasible */
};

/* Writes the task's default length and its floor (text generation 2048 and 1024,
 * summarization 4096 and 2048, question answering 512 and 384). */
void plan_ft_task_lengths(enum plan_ft_task task, int64_t *target /* OUT */,
			  int64_t *floor /* OUT */);

/* Returns the longest sequence the model's positions allow: max_position_embeddings, less
 * padding_idx + 1 for the RoBERTa family (whose positions start after the padding index, 1);
 * 0 when positions do not limit it (relative positions as T5's, or none stated). */
int64_t plan_ft_usable_seq(const struct model_arch *a);

/* Returns true when setup s may be planned for model a on device d: QLoRA and 8-bit optimizers
 * only with bitsandbytes (CUDA, ROCm), Unsloth only for decoders on CUDA and on one GPU or DDP,
 * LoRA rank 0 only for full fine-tuning; n_gpus within the device's GPUs, strategy none alone
 * on one GPU and the others only on several (ZeRO and FSDP with offload also on one), a
 * 4-bit base sharded only by fsdp_qlora, offload only with a known host RAM and then only
 * with an AdamW (DeepSpeed's and FSDP's CPU optimizers step it as AdamW), and whatever
 * train_parallel_check refuses. */
bool plan_ft_allowed(const struct model_arch *a, const struct plan_ft_device *d,
		     const struct plan_ft_setup *s);

/* Writes t, model m in the estimator's terms (core/fit/train_memory.h): its parameter counts,
 * layers (encoder and decoder together), widths, heads, vocabulary and experts. */
void plan_ft_train_model(const struct plan_ft_model *m, struct train_model *t /* OUT */);

/* Asks the estimator about setup s (its choices filled; flash_attention, bf16 and weight_bits
 * are derived here from the model and device) and writes memory, FLOPs, utilisation and speed
 * into s. Returns 0, or RF_E_INVALID_VALUE for settings out of the estimator's range. */
int plan_ft_evaluate(const struct plan_ft_model *m, const struct plan_ft_device *d,
		     struct plan_ft_setup *s /* IN/OUT */);

/* Returns true when a fits device d: its memory within PLAN_FT_MAX_UTILISATION of the budget of
 * each of its GPUs, and its host memory within the host's RAM where anything is offloaded. */
bool plan_ft_fits(const struct plan_ft_device *d, const struct plan_ft_setup *a);

/* The objective: returns true when a is better than b. A longer sequence; at the same length
 * a faster one (tokens/s in 1% steps); then fewer GPUs, less offloaded, Unsloth, the method's
 * usual optimizer (paged 8-bit AdamW for QLoRA, fused AdamW otherwise), the simpler strategy (in
 * enum order), less memory, a larger micro-batch, the lighter method and no checkpointing, in
 * order. A total order. */
bool plan_ft_better(const struct plan_ft_setup *a, const struct plan_ft_setup *b);

/* Plans model m for request r on device d. Returns 0 and *out (feasible or not, with why),
 * or RF_E_INVALID_VALUE for an out-of-range request (effective batch, sequence, rank). */
int plan_finetune(const struct plan_ft_model *m, const struct plan_ft_device *d,
		  const struct plan_ft_request *r, struct plan_ft_result *out /* OUT */);

/* ---- ranking the models ------------------------------------------------------------------ */

/* One model planned for a task, as plan_ft_rank orders them. */
struct plan_ft_candidate {
	size_t index;    /* the caller's (its catalog position): not used in ranking but last */
	double params_b; /* total parameters, billions */
	int listed;      /* its position in the tier's own list of models; -1: not listed */
	bool suits;      /* of the class that suits the task (plan_ft_suits) */
	bool stale; /* an older family (the catalog's stale flag): offered after current ones */
	bool moe;   /* routed experts: Hugging Face trains them in a loop over the experts,
			    which the speed model does not count, so dense models come first */
	struct plan_ft_result plan;
};

/* Returns true when a model with the catalog tasks model_tasks (enum model_task bits) is of the
 * class that suits the requested task (one model_task bit): for question answering, one
 * trained to answer questions (tagged question-answering, as a SQuAD-tuned reader is), not a
 * bare encoder that only takes an extractive head; every candidate of other tasks suits. */
bool plan_ft_suits(unsigned task, unsigned model_tasks);

/* Returns the tasks (enum model_task bits) a model of family f takes when no catalog entry
 * says: a decoder generates text, summarizes and answers questions; an encoder-decoder
 * summarizes and answers questions; an encoder only answers extractively (a span head). */
unsigned plan_ft_family_tasks(enum model_family f);

/* Returns true when a model of family f with the tasks model_tasks (its catalog entry's, or
 * plan_ft_family_tasks(f)) may be fine-tuned for task (one enum model_task bit), as the
 * task's trainer loads it: text generation needs a causal LM (a decoder), question answering
 * takes a model of either kind of question answering, the other tasks their own tag. */
bool plan_ft_task_fits(unsigned task, enum model_family f, unsigned model_tasks);

/* Orders c[0..n) best first: feasible models that reach the task's length, then those that
 * reach only its floor, then those whose own usable length is below the floor, then the
 * infeasible; within each, those that need nothing offloaded to host RAM, the class that
 * suits the task, the tier's own models in their
 * order, more parameters, then index. */
void plan_ft_rank(struct plan_ft_candidate *c, size_t n);

/* Returns true when c is of what an expert offers first, before any other at the same
 * length: a run on the GPUs alone (offloading to host RAM trains several times slower) of
 * a current (not stale) dense (not moe) model. plan_ft_rank orders by these same traits. */
bool plan_ft_preferred(const struct plan_ft_candidate *c);

/* Names as the Hugging Face Trainer and PEFT spell them (static strings). */
const char *plan_ft_method_name(enum train_mode mode);      /* "full", "lora", "qlora" */
const char *plan_ft_provider_name(enum train_provider p);   /* "huggingface", "unsloth" */
const char *plan_ft_optimizer_name(enum train_optimizer o); /* "adamw_torch_fused", ... */
/* ModelForge's training strategy for a method: "qlora" for QLoRA, "sft" (supervised
 * fine-tuning, with or without LoRA adapters) for the others. */
const char *plan_ft_strategy_name(enum train_mode mode);

#endif
