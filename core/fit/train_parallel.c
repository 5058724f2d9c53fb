/*
 * Data parallelism and sharding for fine-tuning (see train_parallel.h).
 *
 * Placement, per GPU, of N:
 * - none, DDP: everything on every GPU. Mixed precision (amp) is torch autocast: fp32 weights
 *   and gradients, fp32 moments.
 * - ZeRO/FSDP with amp use DeepSpeed's split: 16-bit weights and gradients, and K = 12 bytes of
 *   optimizer state (the fp32 master copy and both moments), so that the paper's formulas hold.
 *   ZeRO always does (DeepSpeed has no pure-bf16 optimizer: train_strategy_is_zero); FSDP
 *   with precision bf16 keeps bf16 weights, gradients and moments, as torchtune runs it.
 * - ZeRO-1 shards the optimizer states; ZeRO-2 also the gradients; ZeRO-3 and FSDP also the
 *   weights, and each GPU gathers two layers at a time (the one computing and the one
 *   prefetched) and the larger of the embedding and the head, each its own unit as torchtune
 *   wraps them for large vocabularies (custom_sharded_layers). FSDP-QLoRA shards the 4-bit base the same way; ZeRO-1/2 and DDP
 *   replicate it.
 * - Optimizer offload (ZeRO-Offload, FSDP CPU offload) keeps the optimizer states, the master
 *   weights and fp32 gradients for the CPU optimizer in host memory; parameter offload also
 *   the weight shards, the GPU holding only what is gathered.
 * - torch's AdamW (foreach) holds a copy of the square roots of the second moments (of its
 *   shard) in its step, under ZeRO too when the DeepSpeed config names no optimizer.
 * - ZeRO-1/2 reduce gradients through contiguous buckets of reduce_bucket_size 16-bit elements
 *   (two with overlap_comm), allocated in full when backward starts even for a few adapters.
 * Communication per GPU and step, ring collectives over N GPUs: an all-reduce sends
 * 2 (N - 1) / N of the buffer, an all-gather or reduce-scatter (N - 1) / N. DDP and ZeRO-1/2
 * send 2 x the gradients (ZeRO-2's reduce-scatter plus the all-gather of updated weights is the
 * same volume); ZeRO-3/FSDP gather the weights twice (forward, backward) and reduce-scatter the
 * gradients: 1.5 x DDP for full fine-tuning, as the ZeRO paper states.
 */
#include "core/fit/train_parallel.h"

#include <stddef.h>

#include "core/err.h"
#include "core/fit/train_optimizer.h"

#define MAX_GPUS 4096
/* DeepSpeed's reduce_bucket_size default, and a cap far above any configuration's (elements). */
#define ZERO_DEFAULT_BUCKET_ELEMS 500000000LL
#define ZERO_MAX_BUCKET_ELEMS (1LL << 36)

static const char *const strategy_names[] = {"none",  "ddp",  "zero1",     "zero2",
					     "zero3", "fsdp", "fsdp_qlora"};
static const char *const offload_names[] = {"none", "optimizer", "optimizer_and_params"};

const char *train_strategy_name(enum train_strategy st)
{
	return (unsigned)st <= TRAIN_STRATEGY_FSDP_QLORA ? strategy_names[st] : "unknown";
}

const char *train_offload_name(enum train_offload o)
{
	return (unsigned)o <= TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS ? offload_names[o] : "unknown";
}

bool train_strategy_is_zero(enum train_strategy st)
{
	return st == TRAIN_STRATEGY_ZERO1 || st == TRAIN_STRATEGY_ZERO2 ||
	       st == TRAIN_STRATEGY_ZERO3;
}

static bool shards_weights(enum train_strategy st)
{
	return st == TRAIN_STRATEGY_ZERO3 || st == TRAIN_STRATEGY_FSDP ||
	       st == TRAIN_STRATEGY_FSDP_QLORA;
}

int train_parallel_check(const struct train_settings *s)
{
	if ((unsigned)s->strategy > TRAIN_STRATEGY_FSDP_QLORA ||
	    (unsigned)s->offload > TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS || s->n_gpus < 0 ||
	    s->n_gpus > MAX_GPUS || s->nodes < 0 || s->nodes > MAX_GPUS ||
	    s->zero_bucket_elems < 0 || s->zero_bucket_elems > ZERO_MAX_BUCKET_ELEMS)
		return RF_E_INVALID_VALUE;
	if (s->strategy == TRAIN_STRATEGY_FSDP_QLORA && s->mode != TRAIN_QLORA)
		return RF_E_INVALID_VALUE;
	if (s->offload == TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS && !shards_weights(s->strategy))
		return RF_E_INVALID_VALUE;
	if (s->offload == TRAIN_OFFLOAD_OPTIMIZER &&
	    (s->strategy == TRAIN_STRATEGY_NONE || s->strategy == TRAIN_STRATEGY_DDP))
		return RF_E_INVALID_VALUE;
	if (s->nodes > 1 && (s->n_gpus < s->nodes || s->n_gpus % s->nodes != 0))
		return RF_E_INVALID_VALUE;
	return 0;
}

int train_gpus(const struct train_settings *s)
{
	if (s->strategy == TRAIN_STRATEGY_NONE || s->n_gpus < 1)
		return 1;
	return s->n_gpus;
}

int train_gpus_per_node(const struct train_settings *s)
{
	int n = train_gpus(s), nodes = s->nodes > 1 ? s->nodes : 1;
	return n / nodes > 0 ? n / nodes : 1;
}

int train_parallel_apply(const struct train_model *m, const struct train_settings *s,
			 const struct train_states *st, struct train_memory *r)
{
	enum train_strategy sg = s->strategy;
	int n = train_gpus(s);
	double nd = (double)n, f = (nd - 1.0) / nd;
	double weights = st->base_bytes, grads = st->grad_bytes, opt = st->optimizer_bytes;
	double master = 0, ref = st->reference_bytes, host = 0, grad_comm;
	double non_linear = (double)(m->params_embedding + m->params_output);
	double linear = (double)m->params_total - non_linear;
	/* What is gathered for compute: linear weights as stored for compute (16-bit, or NF4
	 * dequantised one matrix at a time), embeddings and head in 16 bits. */
	double gathered_total = linear * st->gathered_bytes_per_param + non_linear * 2.0;
	double largest_unit = (double)(m->params_embedding > m->params_output ?
					       m->params_embedding :
					       m->params_output);
	double gathered_layers = 2.0 * linear / (double)m->n_layers * st->gathered_bytes_per_param +
				 largest_unit * 2.0;
	bool sharded = sg != TRAIN_STRATEGY_NONE && sg != TRAIN_STRATEGY_DDP;
	int rc = train_parallel_check(s);

	if (rc < 0)
		return rc;
	/* A QLoRA base sharded by ZeRO-3 or FSDP is FSDP-QLoRA. */
	if (s->mode == TRAIN_QLORA && shards_weights(sg))
		sg = TRAIN_STRATEGY_FSDP_QLORA;
	if (st->amp && sharded) {
		/* DeepSpeed's split: 16-bit working weights and gradients, fp32 master with the
		 * optimizer (K = 12 for AdamW). */
		weights = st->base_bytes / 2.0;
		grads = st->grad_bytes / 2.0;
		master = st->base_bytes;
	}
	/* What goes over the wire for gradients: 16-bit for a 16-bit model, fp32 otherwise. */
	grad_comm = grads;

	if (sg == TRAIN_STRATEGY_ZERO1) {
		opt /= nd;
		master /= nd;
	} else if (sg == TRAIN_STRATEGY_ZERO2) {
		opt /= nd;
		master /= nd;
		grads /= nd;
	} else if (shards_weights(sg)) {
		opt /= nd;
		master /= nd;
		grads /= nd;
		weights /= nd;
		ref /= nd;
		if (s->offload == TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS) {
			host += weights + ref;
			weights = 0;
			ref = 0;
		}
		if (n > 1 || s->offload == TRAIN_OFFLOAD_OPTIMIZER_AND_PARAMS)
			weights += gathered_layers;
	}
	if (s->offload != TRAIN_OFFLOAD_NONE) {
		/* The CPU optimizer steps the gradients (fp32 with a master copy or for fp32
		 * adapters, else in the weights' dtype) next to its states; the GPU keeps one
		 * layer's gradients as they are reduced and moved. */
		double trained = s->mode == TRAIN_FULL ? (double)m->params_total :
							 (double)st->trainable_params;
		double grad_bytes = st->amp || s->mode != TRAIN_FULL ? 4.0 : 2.0;
		host += opt + master + trained * grad_bytes / (sharded ? nd : 1.0);
		opt = 0;
		master = 0;
		if (grads > st->grad_bytes / (double)m->n_layers)
			grads = st->grad_bytes / (double)m->n_layers;
	}

	r->n_gpus = n;
	r->weights_bytes = (int64_t)weights;
	r->reference_bytes = (int64_t)ref;
	if (s->mode == TRAIN_FULL) {
		r->adapter_bytes = 0;
	} else {
		/* Adapters are trained weights: ZeRO-3/FSDP shard them with the rest. */
		r->adapter_bytes =
			(int64_t)(shards_weights(sg) ? st->adapter_bytes / nd : st->adapter_bytes);
	}
	r->gradients_bytes = (int64_t)grads;
	r->optimizer_bytes = (int64_t)(opt + master);
	/* ZeRO-1/2 with contiguous gradients (DeepSpeed's default) allocates reduce_bucket_size
	 * 16-bit elements when backward starts, twice with overlap_comm, whatever the number of
	 * trained weights (stage_1_and_2.py, backward). */
	/* The optimizer step's temporaries (core/fit/train_optimizer.c), of the shard it steps:
	 * FSDP steps its shards with torch's optimizer, and so does ZeRO when the DeepSpeed
	 * config names no optimizer (the Trainer's own is wrapped); offloaded states are stepped
	 * on the host. */
	r->optimizer_temp_bytes = s->offload != TRAIN_OFFLOAD_NONE ?
					  0 :
					  (int64_t)train_optimizer_temp_bytes(
						  s->optimizer, opt,
						  st->largest_trained_elems / (sharded ? nd : 1.0));
	r->bucket_bytes = 0;
	if (sg == TRAIN_STRATEGY_ZERO1 || sg == TRAIN_STRATEGY_ZERO2)
		r->bucket_bytes = (s->zero_bucket_elems > 0 ? s->zero_bucket_elems :
							      ZERO_DEFAULT_BUCKET_ELEMS) *
				  2 * (s->zero_overlap_comm ? 2 : 1);
	r->host_bytes = (int64_t)(host * (double)train_gpus_per_node(s));
	if (n <= 1)
		r->comm_bytes_per_step = 0;
	else if (shards_weights(sg))
		r->comm_bytes_per_step = (int64_t)(f * (2.0 * gathered_total + grad_comm));
	else
		r->comm_bytes_per_step = (int64_t)(2.0 * f * grad_comm);
	return 0;
}
