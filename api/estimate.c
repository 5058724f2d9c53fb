/*
 * POST /api/estimate (and `rigfit estimate`): memory and speed of one model with one set of
 * settings on one machine, for inference (llama.cpp semantics) or fine-tuning (full, LoRA,
 * QLoRA). The model comes from the catalog, a pasted config.json or a GGUF header; the machine
 * is this host's snapshot, a described one ("hardware") or a device profile
 * ("hardware_profile"). Every default taken and every modelling choice is listed in
 * `assumptions`. An estimate that does not fit is still a 200 with fits: false.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "api/device_json.h"
#include "api/estimate.h"
#include "api/estimate_history.h"
#include "api/hardware_input.h"
#include "api/json_print.h"
#include "api/jsonmap.h"
#include "api/model_folder.h"
#include "api/model_quant.h"
#include "api/model_json.h"
#include "api/json_alloc.h"
#include "api/model_memo.h"
#include "api/hardware_json.h"
#include "core/hw/classify.h"
#include "core/fit/cpu/repack.h"
#include "core/fit/cpu/speed_cpu.h"
#include "core/hw/device.h"
#include "core/err.h"
#include "core/fit/ollama_ref.h"
#include "core/fit/estimate.h"
#include "core/fit/gguf.h"
#include "core/hw/hw_fingerprint.h"
#include "core/hw/hw_describe.h"
#include "core/hw/hw_profile.h"
#include "core/fit/model.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_finetune.h"
#include "core/fit/quant.h"
#include "core/fit/serve_vllm.h"
#include "core/fit/speed.h"
#include "core/fit/speed_history.h"
#include "core/fit/train_memory.h"
#include "core/fit/train_optimizer.h"
#include "core/fit/train_parallel.h"
#include "core/plan/plan_strategy.h"
#include "core/fit/train_speed.h"

#define EST_MAX_ASSUMPTIONS 48
#define EST_ASSUMPTION_LEN API_PLAN_NOTE_LEN
#define EST_DEFAULT_QUANT "Q4_K_M"
#define EST_DEFAULT_SEQ_LEN 2048
#define EST_MAX_BATCH 4096
/* GPUs per node the fine-tuning estimate accepts (nodes x GPUs in the hardware). */
#define EST_MAX_NODES 1024
/* GPUs of one fine-tuning run, all nodes together (core/fit/train_parallel.c's cap). */
#define EST_MAX_TRAIN_GPUS 4096

enum est_mode {
	EST_INFERENCE,
	EST_LORA,
	EST_QLORA,
	EST_FULL
};

static const char *const est_modes[] = {"inference", "lora", "qlora", "full", NULL};
static const char *const est_kv_types[] = {"f16", "q8_0", "q4_0", NULL};
static const char *const est_providers[] = {"huggingface", "unsloth", NULL};
static const char *const est_runtimes[] = {"llama.cpp", "vllm", NULL};
static const char *const est_vllm_kv[] = {"auto", "fp8", NULL};

enum est_runtime {
	EST_RT_LLAMA_CPP,
	EST_RT_VLLM
};

/* Serving traffic assumed for the batched speed when the request does not say: a chat turn. */
#define EST_DEFAULT_PROMPT_TOKENS 512
#define EST_DEFAULT_OUTPUT_TOKENS 256
static const char *const est_precisions[] = {"bf16", "amp", NULL};
static const char *const est_losses[] = {"auto", "transformers", "chunked", NULL};
static const char *const est_attentions[] = {"sdpa", "flash", "eager", NULL};
static const char *const est_objectives[] = {"sft", "dpo", "orpo", NULL};
/* "auto" first, then enum train_strategy's order. */
static const char *const est_strategies[] = {"auto",  "none", "ddp",        "zero1", "zero2",
					     "zero3", "fsdp", "fsdp_qlora", NULL};
static const char *const est_offloads[] = {"none", "optimizer", "optimizer_and_params", NULL};

struct est_request {
	int mode;
	bool has_mode;
	char quant[24];
	bool has_quant;
	int64_t n_ctx, n_batch, n_ubatch, n_parallel, n_gpu_layers, n_cpu_moe;
	bool has_n_ctx, has_n_batch, has_n_ubatch, has_n_parallel, has_n_gpu_layers, has_n_cpu_moe;
	int kv_type;
	bool has_kv_type;
	bool flash_attn, has_flash_attn;
	bool use_mmap, has_use_mmap, mlock, has_mlock, swa_full, has_swa_full;
	int64_t batch_size, seq_len, lora_rank;
	bool has_batch_size, has_seq_len, has_lora_rank;
	bool gradient_checkpointing, has_gradient_checkpointing;
	int optimizer, provider;
	bool has_optimizer, has_provider;
	double dataset_tokens, epochs, usd_per_hour;
	bool has_dataset_tokens, has_epochs, has_usd_per_hour;
	char hardware_profile[64];
	bool has_hardware_profile;
	unsigned lora_targets;     /* train_lora_target bits; 0: all linear layers */
	bool history, has_history; /* false: the roofline alone, without recorded runs */
	/* Serving: the runtime and vLLM's engine arguments; the traffic the batched speed is for. */
	int runtime, vllm_kv;
	bool has_runtime, has_vllm_kv;
	char precision[24];
	bool has_precision;
	int64_t tp, pp, max_model_len, max_num_seqs, max_num_batched_tokens;
	bool has_tp, has_pp, has_max_model_len, has_max_num_seqs, has_max_num_batched_tokens;
	double gpu_util;
	bool has_gpu_util;
	bool enforce_eager, has_enforce_eager;
	int64_t concurrency, prompt_tokens, output_tokens;
	bool has_concurrency, has_prompt_tokens, has_output_tokens;
	/* llama.cpp's --tensor-split: layer proportions per GPU; none given: free memory. */
	double split[RF_MAX_DEVICES];
	int n_split;
	/* Fine-tuning, added later. */
	int train_precision, loss, attention, objective, strategy, offload;
	bool has_loss, has_attention, has_objective, has_strategy, has_offload;
	bool precomputed_ref_logps, has_precomputed_ref_logps;
	int64_t nodes;
	bool has_nodes;
	bool packing, has_packing;
	int64_t grad_accum;
	bool has_grad_accum;
	double lora_dropout;
	bool has_lora_dropout;
	bool padded, has_padded;
	bool compiled, has_compiled;
};

#define F(name, kind, field, size, lo, hi, has)                                                    \
	{                                                                                          \
		name, kind, offsetof(struct est_request, field), size, lo, hi, false,              \
			offsetof(struct est_request, has), NULL                                    \
	}
#define E(name, field, has, choices)                                                               \
	{                                                                                          \
		name, JM_ENUM, offsetof(struct est_request, field), 0, 0, 0, false,                \
			offsetof(struct est_request, has), choices                                 \
	}

static const struct jm_field est_fields[] = {
	{"model", JM_ANY, 0, 0, 0, 0, true, 0, NULL},
	{"hardware", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	{"lora_targets", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	{"tensor_split", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	E("mode", mode, has_mode, est_modes),
	F("quant", JM_STRING, quant, sizeof(((struct est_request *)0)->quant), 0, 0, has_quant),
	F("n_ctx", JM_INT_OR_MAX, n_ctx, 0, 1, 1 << 24, has_n_ctx),
	F("n_batch", JM_INT, n_batch, 0, 1, 1 << 20, has_n_batch),
	F("n_ubatch", JM_INT, n_ubatch, 0, 1, 1 << 20, has_n_ubatch),
	F("n_parallel", JM_INT, n_parallel, 0, 1, 4096, has_n_parallel),
	E("kv_cache_type", kv_type, has_kv_type, est_kv_types),
	F("flash_attn", JM_BOOL, flash_attn, 0, 0, 0, has_flash_attn),
	F("use_mmap", JM_BOOL, use_mmap, 0, 0, 0, has_use_mmap),
	F("mlock", JM_BOOL, mlock, 0, 0, 0, has_mlock),
	F("swa_full", JM_BOOL, swa_full, 0, 0, 0, has_swa_full),
	F("history", JM_BOOL, history, 0, 0, 0, has_history),
	F("n_gpu_layers", JM_INT, n_gpu_layers, 0, -1, MODEL_MAX_LAYERS + 1, has_n_gpu_layers),
	F("n_cpu_moe", JM_INT, n_cpu_moe, 0, 0, MODEL_MAX_LAYERS, has_n_cpu_moe),
	F("batch_size", JM_INT_OR_MAX, batch_size, 0, 1, EST_MAX_BATCH, has_batch_size),
	F("seq_len", JM_INT_OR_MAX, seq_len, 0, 1, 1 << 24, has_seq_len),
	F("lora_rank", JM_INT, lora_rank, 0, 1, 65536, has_lora_rank),
	F("gradient_checkpointing", JM_BOOL, gradient_checkpointing, 0, 0, 0,
	  has_gradient_checkpointing),
	E("optimizer", optimizer, has_optimizer, train_optimizer_choices),
	E("provider", provider, has_provider, est_providers),
	F("dataset_tokens", JM_DOUBLE, dataset_tokens, 0, 1, 1e15, has_dataset_tokens),
	F("epochs", JM_DOUBLE, epochs, 0, 0.01, 1000, has_epochs),
	F("usd_per_hour", JM_DOUBLE, usd_per_hour, 0, 0, 1e6, has_usd_per_hour),
	F("hardware_profile", JM_STRING, hardware_profile,
	  sizeof(((struct est_request *)0)->hardware_profile), 0, 0, has_hardware_profile),
	E("runtime", runtime, has_runtime, est_runtimes),
	F("precision", JM_STRING, precision, sizeof(((struct est_request *)0)->precision), 0, 0,
	  has_precision),
	F("tensor_parallel_size", JM_INT, tp, 0, 1, VLLM_MAX_GPUS, has_tp),
	F("pipeline_parallel_size", JM_INT, pp, 0, 1, VLLM_MAX_GPUS, has_pp),
	F("gpu_memory_utilization", JM_DOUBLE, gpu_util, 0, 0.01, 1, has_gpu_util),
	F("max_model_len", JM_INT, max_model_len, 0, 16, MODEL_MAX_POSITIONS, has_max_model_len),
	F("max_num_seqs", JM_INT, max_num_seqs, 0, 1, 65536, has_max_num_seqs),
	F("max_num_batched_tokens", JM_INT, max_num_batched_tokens, 0, 1, 1 << 24,
	  has_max_num_batched_tokens),
	E("kv_cache_dtype", vllm_kv, has_vllm_kv, est_vllm_kv),
	F("enforce_eager", JM_BOOL, enforce_eager, 0, 0, 0, has_enforce_eager),
	F("concurrency", JM_INT, concurrency, 0, 1, 65536, has_concurrency),
	F("prompt_tokens", JM_INT, prompt_tokens, 0, 1, 1 << 24, has_prompt_tokens),
	F("output_tokens", JM_INT, output_tokens, 0, 1, 1 << 24, has_output_tokens),
	E("loss", loss, has_loss, est_losses),
	E("attention", attention, has_attention, est_attentions),
	E("objective", objective, has_objective, est_objectives),
	F("precomputed_ref_logps", JM_BOOL, precomputed_ref_logps, 0, 0, 0,
	  has_precomputed_ref_logps),
	E("strategy", strategy, has_strategy, est_strategies),
	E("offload", offload, has_offload, est_offloads),
	F("nodes", JM_INT, nodes, 0, 1, EST_MAX_NODES, has_nodes),
	F("packing", JM_BOOL, packing, 0, 0, 0, has_packing),
	F("gradient_accumulation_steps", JM_INT, grad_accum, 0, 1, 4096, has_grad_accum),
	F("lora_dropout", JM_DOUBLE, lora_dropout, 0, 0, 1, has_lora_dropout),
	F("padded", JM_BOOL, padded, 0, 0, 0, has_padded),
	F("compiled", JM_BOOL, compiled, 0, 0, 0, has_compiled),
};

/* Everything one estimate works on; large, so it lives on the heap. */
struct est {
	struct est_request rq;
	struct model_arch arch;
	struct model_params params;
	const struct model_entry *entry;
	char model_id[MODEL_ID_LEN];
	char model_source[16]; /* catalog, ollama, architecture, gguf, folder, hf_cache, hub */
	bool has_checkpoint;   /* a Hugging Face folder: the census of its safetensors */
	struct api_checkpoint checkpoint;
	struct api_model_dir folder_info; /* where/revision only: config and headers freed */
	bool quantized;                   /* config.json has a quantization_config */
	struct hfq_config quant;
	struct gguf_file *gguf;
	int ftype;
	struct rf_mem_weights weights;
	struct hw_snapshot hw;
	char hw_source[16];
	/* The host's memory bandwidth from the CPU table (devices.json entries of kind cpu)
	 * when nothing measured it: theoretical GB/s, <= 0 none. */
	double cpu_table_bandwidth_gbs;
	char fingerprint[HW_FINGERPRINT_LEN + 1]; /* of hw; "" when it cannot be computed */
	int n_assumptions;
	char assumptions[EST_MAX_ASSUMPTIONS][EST_ASSUMPTION_LEN];
};

/* One struct est (about 130 KiB) is kept for the next request instead of freed: allocating it
 * afresh made glibc consolidate its free lists and clear the whole block on every estimate.
 * A global slot, taken and given back atomically, so any thread may use it. */
static _Atomic(struct est *) est_spare;

/* Returns an empty est (as calloc would give it, except the weights' per-layer arrays, which
 * rf_mem_weights_reset leaves for their producer), or NULL when out of memory. */
static struct est *est_new(void)
{
	struct est *e = atomic_exchange(&est_spare, NULL);
	const size_t w_at = offsetof(struct est, weights), w_end = w_at + sizeof(e->weights);

	if (!e && !(e = malloc(sizeof(*e))))
		return NULL;
	memset(e, 0, w_at);
	rf_mem_weights_reset(&e->weights);
	memset((char *)e + w_end, 0, sizeof(*e) - w_end);
	e->ftype = -1;
	return e;
}

/* Frees e's GGUF header and keeps e for the next est_new (or frees it). NULL is a no-op. */
static void est_release(struct est *e)
{
	struct est *none = NULL;

	if (!e)
		return;
	gguf_free(e->gguf);
	e->gguf = NULL;
	if (!atomic_compare_exchange_strong(&est_spare, &none, e))
		free(e);
}

void api_estimate_spare_free(void)
{
	free(atomic_exchange(&est_spare, NULL));
}

static void assume(struct est *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void assume(struct est *e, const char *fmt, ...)
{
	va_list ap;

	if (e->n_assumptions >= EST_MAX_ASSUMPTIONS)
		return;
	va_start(ap, fmt);
	vsnprintf(e->assumptions[e->n_assumptions++], EST_ASSUMPTION_LEN, fmt, ap);
	va_end(ap);
}

/* ---- the model -------------------------------------------------------------------------- */

/* Takes the GGUF header in buf (the whole file is fsize bytes; buf is freed here) as the
 * model; field names the request field in errors. */
static int est_model_gguf_buf(struct est *e, char *buf, size_t len, uint64_t fsize,
			      const char *field, struct api_reply *out)
{
	char msg[256] = "", bad[64] = "";
	int rc = gguf_parse(buf, len, fsize, &e->gguf, msg, sizeof(msg));

	free(buf);
	if (rc == RF_E_NOMEM)
		return api_error(out, rc, NULL, NULL);
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, field, "the GGUF header is invalid: %s",
				 msg);
	rc = gguf_to_arch(e->gguf, &e->arch, bad, sizeof(bad));
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "the GGUF header does not describe a supported model (%s)", bad);
	e->ftype = gguf_file_type(e->gguf);
	rc = rf_weights_from_tensors(&e->arch, e->gguf->tensors, (size_t)e->gguf->n_tensors,
				     &e->weights);
	if (rc == RF_E_NOMEM)
		return api_error(out, rc, NULL, NULL);
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "the GGUF tensors do not fit the architecture");
	return 0;
}

static int est_model_gguf(const struct api_env *env, struct est *e, const char *path,
			  struct api_reply *out)
{
	char *buf = NULL, msg[256] = "";
	size_t len = 0;
	uint64_t fsize = 0;
	int rc;

	if (!env->read_model)
		return api_error(out, RF_E_FORBIDDEN, "model.gguf",
				 "model files cannot be read here (start the daemon with "
				 "--models-dir)");
	rc = env->read_model(env->read_model_ctx, path, &buf, &len, &fsize, msg, sizeof(msg));
	if (rc < 0)
		return api_error(out, rc, "model.gguf", "%s", msg[0] ? msg : rf_err_message(rc));
	rc = est_model_gguf_buf(e, buf, len, fsize, "model.gguf", out);
	if (rc < 0)
		return rc;
	snprintf(e->model_source, sizeof(e->model_source), "gguf");
	snprintf(e->model_id, sizeof(e->model_id), "%s",
		 gguf_get_str(e->gguf, "general.name") ? gguf_get_str(e->gguf, "general.name") :
							 "gguf");
	assume(e, "weights: exact tensor sizes and types from the GGUF header");
	return 0;
}

/* Reads a Hugging Face folder (kind 0: a path under --models-dir; kind 1: an id in the HF
 * cache; kind 2: an id on the Hub) as the model: the architecture from config.json, the census
 * of its safetensors. field names the request field in errors. */
static int est_model_folder(const struct api_env *env, struct est *e, int kind, const char *path,
			    const char *field, struct api_reply *out)
{
	static const char *const sources[] = {"folder", "hf_cache", "hub"};
	api_read_model_dir_fn read = kind == 2 ? env->read_hub : env->read_model_dir;
	void *ctx = kind == 2 ? env->read_hub_ctx : env->read_model_dir_ctx;
	struct api_model_dir *d;
	char msg[256] = "", from[160];
	const char *base;
	int rc;

	if (!read)
		return api_error(out, RF_E_FORBIDDEN, field, "model folders cannot be read here");
	d = calloc(1, sizeof(*d));
	if (!d)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	rc = read(ctx, kind, path, d, msg, sizeof(msg));
	if (rc < 0) {
		free(d);
		return api_error(out, rc, field, "%s", msg[0] ? msg : rf_err_message(rc));
	}
	rc = api_model_folder(d, field, &e->arch, &e->checkpoint, out);
	if (rc == 0) {
		e->has_checkpoint = true;
		e->quantized = e->checkpoint.quantized;
		e->quant = e->checkpoint.quant;
		snprintf(e->folder_info.where, sizeof(e->folder_info.where), "%s", d->where);
		snprintf(e->folder_info.revision, sizeof(e->folder_info.revision), "%s",
			 d->revision);
		e->folder_info.file_bytes = d->file_bytes;
		base = strrchr(path, '/');
		snprintf(e->model_id, sizeof(e->model_id), "%s",
			 kind >= 1 ? path : (base && base[1] ? base + 1 : path));
		snprintf(e->model_source, sizeof(e->model_source), "%s", sources[kind]);
		if (kind == 2) {
			int64_t age_s = (env->now_ms - d->fetched_at_ms) / 1000;
			if (age_s < 60)
				snprintf(from, sizeof(from),
					 "the Hugging Face Hub (revision main, looked up now)");
			else
				snprintf(
					from, sizeof(from),
					"the Hugging Face Hub (revision main, as stored %lld h %lld "
					"min ago)",
					(long long)(age_s / 3600), (long long)(age_s / 60 % 60));
		} else {
			snprintf(from, sizeof(from), "%s",
				 kind == 1 ? "the Hugging Face cache's snapshot" : "the folder");
		}
		assume(e,
		       "model: config.json and the safetensors headers of %s (%d file%s, %lld "
		       "parameters in %s)",
		       from, e->checkpoint.shards, e->checkpoint.shards == 1 ? "" : "s",
		       (long long)e->checkpoint.params, e->checkpoint.dtype);
	}
	api_model_dir_free(d);
	free(d);
	return rc;
}

/* Reads the GGUF blob of Ollama tag name from Ollama's local store. Returns RF_E_NOT_FOUND
 * (out untouched) when the tag is not pulled there, else 0 or the error in out. */
static int est_model_ollama_blob(const struct api_env *env, struct est *e, const char *name,
				 struct api_reply *out)
{
	char *buf = NULL, msg[256] = "";
	size_t len = 0;
	uint64_t fsize = 0;
	int rc = env->read_ollama(env->read_ollama_ctx, name, &buf, &len, &fsize, msg, sizeof(msg));

	if (rc == RF_E_NOT_FOUND || rc == RF_E_INVALID_VALUE)
		return RF_E_NOT_FOUND; /* not in the store: the catalog may still know it */
	if (rc < 0)
		return api_error(out, rc, "model.id", "%s", msg[0] ? msg : rf_err_message(rc));
	rc = est_model_gguf_buf(e, buf, len, fsize, "model.id", out);
	if (rc < 0)
		return rc;
	if (e->rq.has_quant &&
	    strcasecmp(e->rq.quant, rf_ftype_name(e->ftype) ? rf_ftype_name(e->ftype) : "") != 0)
		return api_error(out, RF_E_INVALID_VALUE, "quant",
				 "the Ollama model '%.100s' is %s; leave quant out", name,
				 rf_ftype_name(e->ftype) ? rf_ftype_name(e->ftype) : "its own");
	e->rq.has_quant = false; /* the file has its own, which the request repeated */
	snprintf(e->model_id, sizeof(e->model_id), "%s", name);
	snprintf(e->model_source, sizeof(e->model_source), "ollama_store");
	assume(e, "model: the GGUF file Ollama's local store holds for '%.100s' (its header)",
	       name);
	return 0;
}

/* Resolves a model name: a catalog id or alias, or an Ollama tag, whose quantization (the
 * tag's, else the Q4_K_M Ollama serves) becomes the inference quant unless the request names
 * one; a request naming another than the tag's is refused. */
static int est_model_by_name(const struct api_env *env, struct est *e, const char *name,
			     struct api_reply *out)
{
	char tag_quant[OLLAMA_QUANT_LEN];
	const char *q;
	int rc;

	/* A tag pulled into Ollama's local store is the very file Ollama runs. */
	if (strchr(name, ':') && env->read_ollama && e->rq.mode == EST_INFERENCE) {
		rc = est_model_ollama_blob(env, e, name, out);
		if (rc != RF_E_NOT_FOUND)
			return rc;
	}
	rc = api_model_resolve_ref(env->models, name, "model.id", out, &e->entry, tag_quant,
				   sizeof(tag_quant));

	/* A Hugging Face id the catalog does not know may be in this host's HF cache, else (with
	 * --hub) on the Hub. */
	if (rc < 0 && strchr(name, '/') && !strchr(name, ':') &&
	    (env->read_model_dir || env->read_hub)) {
		struct api_reply cache = {.status = 404};
		int crc = RF_E_NOT_FOUND;
		if (env->read_model_dir)
			crc = est_model_folder(env, e, 1, name, "model.id", &cache);
		if (crc < 0 && cache.status == 404 && env->read_hub) {
			api_reply_reset(&cache);
			crc = est_model_folder(env, e, 2, name, "model.id", &cache);
		}
		if (crc == 0 || cache.status != 404) {
			api_reply_reset(out);
			*out = cache;
			e->entry = NULL;
			return crc;
		}
		api_reply_reset(&cache);
		return rc;
	}
	if (rc < 0)
		return rc;
	if (strchr(name, ':')) /* an Ollama name, listed among the catalog's aliases or not */
		snprintf(e->model_source, sizeof(e->model_source), "ollama");
	/* A catalog name that is no Ollama tag takes the estimate's own defaults. */
	if (!strchr(name, ':') && model_catalog_find(env->models, name))
		return rc;
	/* An Ollama tag (among the aliases or resolved as one): Ollama's download. */
	if (e->rq.mode != EST_INFERENCE)
		return 0;
	q = tag_quant[0] ? tag_quant : ollama_default_quant(e->entry);
	if (e->rq.has_quant) {
		if (tag_quant[0] && strcasecmp(e->rq.quant, tag_quant) != 0)
			return api_error(out, RF_E_INVALID_VALUE, "quant",
					 "quant %.20s contradicts the Ollama tag '%.100s', which "
					 "serves %s; leave quant out",
					 e->rq.quant, name, tag_quant);
		return 0;
	}
	snprintf(e->rq.quant, sizeof(e->rq.quant), "%s", q);
	e->rq.has_quant = true;
	assume(e, "model: the Ollama tag '%.100s' is %s at %s, as Ollama's library serves it", name,
	       e->entry->id, q);
	return 0;
}

/* Resolves the "model" object: exactly one of id, architecture, gguf. */
static int est_model(const struct api_env *env, struct est *e, const cJSON *m,
		     struct api_reply *out)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	const cJSON *arch = cJSON_GetObjectItemCaseSensitive(m, "architecture");
	const cJSON *gguf = cJSON_GetObjectItemCaseSensitive(m, "gguf");
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(m, "path");
	const cJSON *k;
	int given = (id != NULL) + (arch != NULL) + (gguf != NULL) + (path != NULL);
	const char *bad_field = NULL;
	int rc;

	if (cJSON_IsString(m)) {
		id = m; /* "model": "llama-3.1-8b" is accepted as a shorthand */
		given = 1;
	} else if (given == 0 && cJSON_IsObject(m) &&
		   cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "model_type"))) {
		/* A Hugging Face config.json pasted as it is: every config.json names its
		 * model_type, and none of the model object's own keys. */
		arch = m;
		given = 1;
	} else if (!cJSON_IsObject(m)) {
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "model must be an object with id, architecture, gguf or path");
	} else {
		cJSON_ArrayForEach(k, m)
		{
			if (strcmp(k->string, "id") && strcmp(k->string, "architecture") &&
			    strcmp(k->string, "gguf") && strcmp(k->string, "path") &&
			    strcmp(k->string, "params_b"))
				return api_error(out, RF_E_UNKNOWN_FIELD, "model",
						 "model has an unknown field");
		}
	}
	if (given != 1)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "model needs exactly one of id, architecture, gguf or path");
	/* params_b is informative (the architecture is counted), but a value that cannot be a
	 * parameter count is still a client error, not something to ignore. */
	if (cJSON_IsObject(m)) {
		const cJSON *pb = cJSON_GetObjectItemCaseSensitive(m, "params_b");
		if (pb && (!cJSON_IsNumber(pb) || !isfinite(pb->valuedouble) ||
			   pb->valuedouble <= 0 || pb->valuedouble > 1e5))
			return api_error(
				out, RF_E_INVALID_VALUE, "model.params_b",
				"model.params_b must be a number of billions in (0, 100000]");
	}
	if (id) {
		if (!cJSON_IsString(id) || !id->valuestring || !*id->valuestring)
			return api_error(out, RF_E_INVALID_VALUE, "model.id",
					 "model.id must be a string");
		if (!env->models)
			return api_error(out, RF_E_UNAVAILABLE, "model.id",
					 "no model catalog is loaded (profiles/models.json)");
		snprintf(e->model_source, sizeof(e->model_source), "catalog");
		rc = est_model_by_name(env, e, id->valuestring, out);
		if (rc < 0)
			return rc;
		if (e->entry) { /* else read from the Hugging Face cache */
			e->arch = e->entry->arch;
			snprintf(e->model_id, sizeof(e->model_id), "%s", e->entry->id);
		}
	} else if (path) {
		if (!cJSON_IsString(path) || !path->valuestring)
			return api_error(out, RF_E_INVALID_VALUE, "model.path",
					 "model.path must be the path of a model folder");
		rc = est_model_folder(env, e, 0, path->valuestring, "model.path", out);
		if (rc < 0)
			return rc;
	} else if (arch) {
		if (!cJSON_IsObject(arch))
			return api_error(out, RF_E_INVALID_VALUE, "model.architecture",
					 "model.architecture must be a config.json object");
		const char *pfx = arch == m ? "model" : "model.architecture";
		rc = api_model_arch_from_hf(arch, pfx, &e->arch, out);
		if (rc == 0)
			rc = api_hf_quant_from_config(arch, pfx, &e->quant, out);
		if (rc < 0)
			return rc;
		e->quantized = rc == 1;
		snprintf(e->model_id, sizeof(e->model_id), "%s", e->arch.model_type);
		snprintf(e->model_source, sizeof(e->model_source), "architecture");
	} else {
		if (!cJSON_IsString(gguf) || !gguf->valuestring)
			return api_error(out, RF_E_INVALID_VALUE, "model.gguf",
					 "model.gguf must be a path");
		rc = est_model_gguf(env, e, gguf->valuestring, out);
		if (rc < 0)
			return rc;
	}
	rc = model_arch_validate(&e->arch, &bad_field);
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, "model", "the model is invalid (%s)",
				 bad_field ? bad_field : "architecture");
	rc = api_memo_params(&e->arch, &e->params);
	if (rc == RF_E_NOMEM)
		return api_error(out, rc, NULL, NULL);
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "the model's parameters cannot be counted");
	return 0;
}

/* ---- the machine ------------------------------------------------------------------------ */

static int est_hardware_source(const struct api_env *env, struct est *e, const cJSON *hw,
			       struct api_reply *out)
{
	if (hw && e->rq.has_hardware_profile)
		return api_error(out, RF_E_INVALID_VALUE, "hardware_profile",
				 "give hardware or hardware_profile, not both");
	if (hw) {
		int rc = api_hardware_from_json(hw, "hardware", &e->hw, out);
		if (rc < 0)
			return rc;
		/* GPUs named without their memory, and unified memory, from the profiles. */
		{
			struct hw_describe_gpu info[HW_MAX_GPUS];
			int bad = hw_describe_complete(&e->hw, env->devices, info);
			if (bad < 0) {
				char field[48];
				int i = -bad - 1;
				snprintf(field, sizeof(field), "hardware.gpus[%d].name", i);
				return api_device_unknown(out, env->devices, field,
							  e->hw.gpus[i].name, true);
			}
			for (int i = 0; i < e->hw.n_gpus && i < HW_MAX_GPUS; i++) {
				const struct hw_gpu *g = &e->hw.gpus[i];
				if (info[i].working_set)
					assume(e,
					       "hardware.gpus[%d]: %s shares %.0f GiB of unified memory; "
					       "%.1f GiB of it is the GPU's working set (%s%s)",
					       i, g->name, (double)info[i].ram_bytes / 1073741824.0,
					       (double)g->memory_total_bytes / 1073741824.0,
					       info[i].profile ? "the rule of profile " :
								 "macOS's default rule",
					       info[i].profile ? info[i].profile->id : "");
				else if (info[i].memory_from_profile)
					assume(e,
					       "hardware.gpus[%d]: %.0f GiB, all free, from the %s profile",
					       i, (double)g->memory_total_bytes / 1073741824.0,
					       info[i].profile->id);
			}
		}
		hw_classify(&e->hw);
		hw_apply_device_profiles(&e->hw, env->devices);
		snprintf(e->hw_source, sizeof(e->hw_source), "request");
		return 0;
	}
	if (e->rq.has_hardware_profile) {
		const struct device_profile *p = NULL;
		int found = env->devices ?
				    device_resolve(env->devices, e->rq.hardware_profile, &p) :
				    RF_E_NOT_FOUND;
		if (found == RF_E_CONFLICT)
			return api_error(
				out, RF_E_INVALID_VALUE, "hardware_profile",
				"'%.60s' matches several device profiles; name one by its id "
				"in profiles/devices.json",
				e->rq.hardware_profile);
		if (found < 0 || !p)
			return api_device_unknown(out, env->devices, "hardware_profile",
						  e->rq.hardware_profile, false);
		hw_describe_from_profile(p, &e->hw);
		snprintf(e->hw_source, sizeof(e->hw_source), "profile");
		if (p->kind == DEVICE_KIND_CPU) {
			assume(e, "hardware: the CPU profile %s; system memory not known", p->id);
		} else if (e->hw.gpus[0].unified_memory && e->hw.memory.total_bytes > 0) {
			assume(e,
			       "hardware: one %s with %.0f GiB of unified memory, %.1f GiB of it the "
			       "GPU's working set, all free",
			       p->name, p->memory_gib,
			       (double)e->hw.gpus[0].memory_total_bytes / 1073741824.0);
		} else {
			assume(e, "hardware: one %s with all of its %.0f GiB free", p->name,
			       p->memory_gib);
		}
		hw_classify(&e->hw);
		return 0;
	}
	if (!env->snapshot)
		return api_error(out, RF_E_UNAVAILABLE, NULL,
				 "the first hardware scan has not finished yet; retry shortly");
	e->hw = env->snapshot->hw;
	snprintf(e->hw_source, sizeof(e->hw_source), "snapshot");
	return 0;
}

/* The machine of the estimate: described (hardware), a profile (hardware_profile) or this host
 * (the scan). A host whose memory bandwidth nothing measured (described hardware, a host
 * with --no-host-bench) takes it from its CPU model's table entry, where there is one. */
static int est_hardware(const struct api_env *env, struct est *e, const cJSON *hw,
			struct api_reply *out)
{
	const struct device_profile *p = NULL;
	int rc = est_hardware_source(env, e, hw, out);

	if (rc < 0 || !env->devices || !e->hw.cpu.model[0])
		return rc;
	if (device_resolve_cpu(env->devices, e->hw.cpu.model, &p) != 0)
		p = NULL;
	/* A CPU described by name without its instruction sets has the table's: the same
	 * kernels (and so the same speed) as when they are listed. A scan's or a request's own
	 * list is taken at its word. */
	if (p && p->isa && e->hw.cpu.isa == 0) {
		e->hw.cpu.isa = p->isa;
		assume(e,
		       "cpu.isa: the instruction sets of %s from the CPU table (devices.json entry %s)",
		       e->hw.cpu.model, p->id);
	}
	if (e->hw.cpu.memory_bandwidth_gbs > 0)
		return rc;
	if (p && p->memory_bandwidth_gbs > 0) {
		e->cpu_table_bandwidth_gbs = p->memory_bandwidth_gbs;
		if (e->hw.n_gpus == 0) /* said where the host runs the model */
			assume(e,
			       "host memory bandwidth: %.1f GB/s, the CPU table's theoretical figure for "
			       "%s (%s; devices.json entry %s), as nothing measured this host",
			       p->memory_bandwidth_gbs, e->hw.cpu.model, p->name, p->id);
	} else if (e->hw.n_gpus == 0) {
		assume(e,
		       "host memory bandwidth: the CPU '%s' is not in the CPU table and nothing "
		       "measured it",
		       e->hw.cpu.model);
	}
	return rc;
}

/* The devices an estimate may use: every GPU that runs the backend (not Intel iGPUs). */
static int est_devices(struct est *e, struct rf_mem_device *dev, struct rf_mem_host *host,
		       int64_t *totals)
{
	int n = 0;
	int64_t ram_total = e->hw.memory.total_bytes, ram_avail = e->hw.memory.available_bytes;
	int64_t limit = e->hw.host.container.cgroup_memory_limit_bytes;

	for (int i = 0; i < e->hw.n_gpus && n < RF_MAX_DEVICES; i++) {
		const struct hw_gpu *g = &e->hw.gpus[i];
		struct rf_mem_device *d = &dev[n];
		if (strcmp(g->vendor, "intel") == 0 || g->memory_total_bytes <= 0)
			continue;
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s%d", e->hw.backend, n);
		d->unified = g->unified_memory;
		d->free_bytes = g->memory_free_bytes >= 0 ? g->memory_free_bytes :
							    g->memory_total_bytes;
		if (g->unified_memory)
			d->budget_bytes = ram_total > 0 ? rf_budget_unified(ram_total, ram_avail) :
							  rf_budget_device(d->free_bytes,
									   g->memory_total_bytes);
		else
			d->budget_bytes = rf_budget_device(d->free_bytes, g->memory_total_bytes);
		/* A unified GPU never has more than its working set (the probe's total). */
		if (g->unified_memory && d->budget_bytes > g->memory_total_bytes)
			d->budget_bytes = g->memory_total_bytes;
		d->overhead_bytes = rf_backend_overhead_bytes(e->hw.backend);
		if (totals)
			totals[n] = g->memory_total_bytes;
		n++;
	}
	host->budget_bytes = ram_avail >= 0 ? rf_budget_host(ram_avail, ram_total, limit, -1) : -1;
	host->repack_isa = rf_repack_isa_from_bits(e->hw.cpu.isa);
	return n;
}

/* ---- inference --------------------------------------------------------------------------- */

static enum speed_backend est_backend(const char *b)
{
	enum speed_backend sb = SPEED_BACKEND_CPU;
	speed_backend_parse(b, &sb);
	return sb;
}

/* The hardware half of the speed model's inputs: backend, devices and host of e's machine.
 * Resolving the device profiles is the costly part, so it is done once per estimate. */
static void est_speed_devices(const struct api_env *env, struct est *e, struct speed_input *in)
{
	int nd = 0;

	memset(in, 0, sizeof(*in));
	in->backend = est_backend(e->hw.backend);
	for (int i = 0;
	     i < e->hw.n_gpus && nd < SPEED_MAX_DEVICES && in->backend != SPEED_BACKEND_CPU; i++) {
		const struct hw_gpu *g = &e->hw.gpus[i];
		const struct device_profile *prof = NULL;
		enum device_compute_kind kind = DEVICE_COMPUTE_UNKNOWN;
		struct speed_device *sd = &in->devices[nd];
		const char *basis = NULL;
		if (strcmp(g->vendor, "intel") == 0 || g->memory_total_bytes <= 0)
			continue;
		if (env->devices)
			device_resolve_mem(env->devices, g->name, g->memory_total_bytes, &prof);
		sd->bandwidth_gbs = g->memory_bandwidth_gbs > 0 ?
					    g->memory_bandwidth_gbs :
					    device_gpu_bandwidth(prof, g->memory_bus_width_bits,
								 g->max_memory_clock_mhz, &basis);
		if (basis && strcmp(basis, "assumed") == 0)
			assume(e, "speed: %s has no known bandwidth; %.0f GB/s assumed", g->name,
			       sd->bandwidth_gbs);
		sd->compute_tflops = prof ? device_compute_tflops(prof, &kind) : g->fp16_tflops;
		sd->compute = kind == DEVICE_COMPUTE_TENSOR ? SPEED_COMPUTE_TENSOR :
			      kind == DEVICE_COMPUTE_UNKNOWN && !prof && g->fp16_tflops > 0 ?
							      SPEED_COMPUTE_TENSOR :
			      kind == DEVICE_COMPUTE_UNKNOWN ? SPEED_COMPUTE_UNKNOWN :
							       SPEED_COMPUTE_VECTOR;
		sd->tensor_units_unrated = kind == DEVICE_COMPUTE_VECTOR_NO_TENSOR;
		sd->hbm = device_hbm_class(prof);
		sd->pro = device_pro_class(prof);
		nd++;
	}
	in->n_devices = nd;
	if (nd == 0)
		in->backend = SPEED_BACKEND_CPU;
	in->host.bandwidth_gbs = e->hw.cpu.memory_bandwidth_gbs;
	in->host.bandwidth_measured = e->hw.cpu.memory_bandwidth_gbs > 0;
	in->host.bandwidth_hostbench = in->host.bandwidth_measured && e->hw.host_bench.measured;
	if (!(in->host.bandwidth_gbs > 0) && e->cpu_table_bandwidth_gbs > 0)
		in->host.bandwidth_gbs = e->cpu_table_bandwidth_gbs; /* theoretical */
	in->host.threads = e->hw.cpu.performance_cores > 0 ? e->hw.cpu.performance_cores :
							     e->hw.cpu.physical_cores;
	/* The CPU's kernels: this host's measured throughput, else its ISA's table. */
	in->host.cpu_isa = speed_cpu_isa_from_bits(e->hw.cpu.isa, e->hw.cpu.arch);
	if (e->hw.host_bench.measured) {
		in->host.int8_gops_per_thread = e->hw.host_bench.int8_gops_per_thread;
		in->host.f32_gflops_per_thread = e->hw.host_bench.f32_gflops_per_thread;
	}
}

/* The weights' side of the CPU kernels: their type and the share llama.cpp repacks on this
 * CPU (core/fit/cpu/repack.h), which runs the interleaved kernels. */
static void est_speed_weights(const struct est *e, struct speed_input *in)
{
	const struct rf_mem_weights *w = &e->weights;
	int cls = rf_repack_isa_from_bits(e->hw.cpu.isa);
	double all = (double)w->output_bytes, rep = (double)w->output_repack_bytes[cls];

	for (int64_t l = 0; l < w->n_layer && l < MODEL_MAX_LAYERS; l++) {
		all += (double)w->layer_bytes[l];
		rep += (double)w->layer_repack_bytes[cls][l];
	}
	in->weight_ftype = e->ftype;
	in->weight_ftype_known = e->ftype >= 0;
	in->repacked_share = all > 0 && rep < all ? rep / all : all > 0 ? 1 : 0;
	/* Each weight type at its own kernels' rate; without typed matrices the file type's. */
	(void)rf_weights_cpu_mix(w, cls,
				 e->arch.n_experts > 0 ? (double)e->arch.n_experts_per_tok /
								 (double)e->arch.n_experts :
							 1,
				 &in->cpu_mix);
}

static cJSON *est_memory_json(const struct rf_mem_estimate *m)
{
	cJSON *o = cJSON_CreateObject(), *arr;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "weights_bytes", (double)m->weights_bytes);
	cJSON_AddNumberToObject(o, "kv_cache_bytes", (double)m->kv_cache_bytes);
	cJSON_AddNumberToObject(o, "compute_bytes", (double)m->compute_bytes);
	cJSON_AddNumberToObject(o, "overhead_bytes", (double)m->overhead_bytes);
	cJSON_AddNumberToObject(o, "output_buffer_bytes", (double)m->output_buffer_bytes);
	cJSON_AddNumberToObject(o, "total_bytes", (double)m->total_bytes);
	cJSON_AddNumberToObject(o, "host_bytes", (double)m->host_bytes);
	cJSON_AddNumberToObject(o, "experts_host_bytes", (double)m->experts_host_bytes);
	cJSON_AddNumberToObject(o, "host_reclaimable_bytes", (double)m->host_reclaimable_bytes);
	cJSON_AddNumberToObject(o, "host_weights_mapped_bytes", (double)m->weights_mapped_bytes);
	cJSON_AddNumberToObject(o, "host_weights_repacked_bytes", (double)m->weights_repack_bytes);
	arr = cJSON_AddArrayToObject(o, "per_device");
	for (int i = 0; arr && i < m->n_devices; i++) {
		const struct rf_mem_device_use *u = &m->per_device[i];
		cJSON *d = cJSON_CreateObject();
		if (!d)
			break;
		cJSON_AddStringToObject(d, "device", u->device);
		cJSON_AddNumberToObject(d, "layers", (double)u->layers);
		cJSON_AddBoolToObject(d, "output", u->output);
		cJSON_AddNumberToObject(d, "weights_bytes", (double)u->weights_bytes);
		cJSON_AddNumberToObject(d, "kv_cache_bytes", (double)u->kv_bytes);
		cJSON_AddNumberToObject(d, "compute_bytes", (double)u->compute_bytes);
		cJSON_AddNumberToObject(d, "overhead_bytes", (double)u->overhead_bytes);
		cJSON_AddNumberToObject(d, "bytes", (double)u->bytes);
		if (u->budget_bytes >= 0)
			cJSON_AddNumberToObject(d, "budget_bytes", (double)u->budget_bytes);
		else
			cJSON_AddNullToObject(d, "budget_bytes");
		api_json_append(arr, d);
	}
	return o;
}

static void add_num_or_null(cJSON *o, const char *name, double v)
{
	if (v < 0 || !isfinite(v))
		cJSON_AddNullToObject(o, name);
	else
		cJSON_AddNumberToObject(o, name, v);
}

/* What the predictions of recorded runs share: this estimate's hardware. The memory
 * estimate's scratch is allocated at the first prediction, so estimates without history pay
 * nothing for it. */
struct est_predict {
	const struct speed_input *hw; /* the estimate's own inputs: their hardware half */
	const struct rf_mem_device *dev;
	int n_dev;
	const struct rf_mem_host *host;
	struct rf_mem_estimate *m;
	struct rf_mem_weights *w; /* the predicted model's weights */
};

/* api_history_predict_fn: the roofline of catalog model me in ftype on the estimate's
 * hardware, run as llama-bench runs it by default (every layer on the GPUs, llama.cpp's
 * default context and batch), whatever this estimate's own settings are: the run's efficiency
 * is measured against what it did. */
static int est_predict_run(void *ctx, const struct model_entry *me, int ftype,
			   double tps[SPEED_HISTORY_FIGURES])
{
	struct est_predict *pr = ctx;
	struct model_arch arch = me->arch;
	struct model_params params;
	struct rf_infer_params p;
	struct speed_input in;
	const char *bad = NULL;
	int rc;

	if (!pr->m && !(pr->m = calloc(1, sizeof(*pr->m))))
		return RF_E_NOMEM;
	if (!pr->w && !(pr->w = calloc(1, sizeof(*pr->w))))
		return RF_E_NOMEM;
	/* The weights and counts come from the memo: a host with history pays for them once,
	 * not in every estimate of a /api/recommend. */
	if (model_arch_validate(&arch, &bad) < 0 || api_memo_params(&arch, &params) < 0 ||
	    api_memo_weights(&arch, ftype, pr->w) < 0)
		return RF_E_INVALID_VALUE;
	rf_infer_params_default(&p);
	if (arch.max_position_embeddings > 0 && p.n_ctx > arch.max_position_embeddings)
		p.n_ctx = arch.max_position_embeddings;
	if (pr->n_dev == 0)
		p.n_gpu_layers = 0;
	rc = rf_estimate_inference(&arch, pr->w, &p, pr->dev, pr->n_dev, pr->host, pr->m);
	if (rc < 0)
		return rc;
	in = *pr->hw;
	plan_speed_model(&params, pr->w, ftype, pr->m, &p, &in);
	tps[SPEED_TEST_DECODE] = speed_predict(&in, speed_fitted, SPEED_TEST_DECODE);
	tps[SPEED_TEST_PREFILL] = speed_predict(&in, speed_fitted, SPEED_TEST_PREFILL);
	return 0;
}

/* Fills the "speed" object: the roofline of in, refined by the runs recorded on this hardware.
 * Returns 0 or RF_E_NOMEM. */
static int est_speed_json(const struct api_env *env, struct est *e, const struct speed_input *in,
			  struct est_predict *pr, cJSON *speed)
{
	struct speed_output sp;
	struct api_history_query q;
	struct api_history *h = calloc(1, sizeof(*h));
	const struct speed_history_figure *dec, *pre;
	bool known = speed_estimate(in, &sp) == 0;
	int rc;

	if (!h)
		return RF_E_NOMEM;
	memset(&q, 0, sizeof(q));
	/* "history": false asks for the roofline alone (what the page compares runs with). */
	q.fingerprint = e->rq.has_history && !e->rq.history ? NULL : e->fingerprint;
	q.backend = in->backend;
	q.entry = e->entry;
	q.model_name = e->gguf ? e->model_id : NULL;
	q.ftype = e->ftype;
	q.roofline[SPEED_TEST_DECODE] = known ? sp.decode_tokens_per_s : -1;
	q.roofline[SPEED_TEST_PREFILL] = known ? sp.prefill_tokens_per_s : -1;
	q.predict = known ? est_predict_run : NULL;
	q.predict_ctx = pr;
	rc = api_history_refine(env, &q, h);
	if (rc < 0) {
		free(h);
		return rc;
	}
	dec = &h->result.figure[SPEED_TEST_DECODE];
	pre = &h->result.figure[SPEED_TEST_PREFILL];
	add_num_or_null(speed, "decode_tokens_per_s", dec->tokens_per_s);
	/* Full context scales with the start of generation: the same host, the same kernels. */
	add_num_or_null(
		speed, "decode_tokens_per_s_at_full_ctx",
		known && dec->factor > 0 ? sp.decode_tokens_per_s_at_full_ctx * dec->factor : -1);
	add_num_or_null(speed, "prefill_tokens_per_s", pre->tokens_per_s);
	if (in->backend == SPEED_BACKEND_CPU && e->hw.host_bench.measured &&
	    strcmp(e->hw_source, "snapshot") == 0 &&
	    strcmp(speed_basis_name(h->result.basis), "roofline") == 0) {
		/* No run recorded, but this host was measured (the daemon's host measurement,
		 * once per fingerprint, kept in the store): the model stands on measured figures. */
		const struct hw_host_bench *b = &e->hw.host_bench;
		char when[40];
		api_format_time_ms(b->measured_at_ms, when, sizeof(when));
		cJSON_AddStringToObject(speed, "basis", "measured_host");
		cJSON_AddStringToObject(speed, "decode_basis", "measured_host");
		assume(e,
		       "speed: this host as measured at %s: %.1f GB/s read with %d threads, %.0f "
		       "int8 GOPS and %.0f f32 GFLOPS per thread (%s kernels)",
		       when, b->memory_bandwidth_gbs, b->threads, b->int8_gops_per_thread,
		       b->f32_gflops_per_thread, b->kernel_isa);
	} else {
		cJSON_AddStringToObject(speed, "basis", speed_basis_name(h->result.basis));
		cJSON_AddStringToObject(speed, "decode_basis", speed_basis_name(dec->basis));
	}
	cJSON_AddStringToObject(speed, "prefill_basis", speed_basis_name(pre->basis));
	cJSON_AddNumberToObject(speed, "runs", h->result.runs);
	if (known) {
		for (int i = 0; i < sp.n_assumptions; i++)
			assume(e, "speed: %s", sp.assumptions[i]);
	} else {
		assume(e, "speed: no roofline for this machine (no bandwidth could be known)");
	}
	for (int i = 0; i < h->n_notes; i++)
		assume(e, "%s", h->notes[i]);
	free(h);
	return 0;
}

/* ---- serving: batched speed ------------------------------------------------------------ */

/* The traffic the batched figures are for: concurrency streams, each a prompt of prompt tokens
 * generating output tokens. */
struct est_traffic {
	int64_t concurrency, prompt, output;
};

static struct est_traffic est_traffic_of(struct est *e, int64_t dflt_concurrency)
{
	struct est_traffic t;

	t.concurrency = e->rq.has_concurrency ? e->rq.concurrency : dflt_concurrency;
	t.prompt = e->rq.has_prompt_tokens ? e->rq.prompt_tokens : EST_DEFAULT_PROMPT_TOKENS;
	t.output = e->rq.has_output_tokens ? e->rq.output_tokens : EST_DEFAULT_OUTPUT_TOKENS;
	if (t.concurrency < 1)
		t.concurrency = 1;
	if (!e->rq.has_prompt_tokens || !e->rq.has_output_tokens)
		assume(e,
		       "serving traffic: %lld-token prompts generating %lld tokens (defaults of a "
		       "chat turn where not given)",
		       (long long)t.prompt, (long long)t.output);
	return t;
}

/* Adds the batched figures to speed: t.concurrency streams decoding together, each reading
 * its KV cache at its mean context (prompt + half the output); MoE steps read the experts the
 * batch routes to. kv_per_token is the KV bytes of one token over every layer. */
static void est_batched_json(struct est *e, const struct speed_input *in,
			     const struct speed_params params[SPEED_BACKEND_COUNT],
			     double kv_per_token, const struct est_traffic *t, cJSON *speed)
{
	struct speed_batch b;
	struct speed_batch_output o;
	const struct model_params *mp = &e->params;
	bool ok;

	memset(&b, 0, sizeof(b));
	b.n_streams = (int)t->concurrency;
	b.kv_bytes_per_stream = kv_per_token * ((double)t->prompt + (double)t->output / 2.0);
	b.prompt_tokens = (double)t->prompt;
	if (e->arch.n_experts > 1 && mp->expert > 0 && mp->total > 0 && mp->active > 0) {
		/* in->weight_bytes holds the active share; the experts' part of all weights
		 * scales with their share of the parameters. */
		double all = in->weight_bytes * (double)mp->total / (double)mp->active;
		b.expert_bytes = all * (double)mp->expert / (double)mp->total;
		b.n_experts = (int)e->arch.n_experts;
		b.n_experts_used = (int)e->arch.n_experts_per_tok;
	}
	ok = speed_batched_with(in, params, &b, &o) == 0;
	cJSON_AddNumberToObject(speed, "concurrency", (double)t->concurrency);
	cJSON_AddNumberToObject(speed, "prompt_tokens", (double)t->prompt);
	cJSON_AddNumberToObject(speed, "output_tokens", (double)t->output);
	add_num_or_null(speed, "aggregate_decode_tokens_per_s", ok ? o.aggregate_tokens_per_s : -1);
	add_num_or_null(speed, "per_stream_decode_tokens_per_s",
			ok ? o.per_stream_tokens_per_s : -1);
	add_num_or_null(speed, "time_to_first_token_s", ok ? o.time_to_first_token_s : -1);
	if (ok && e->rq.has_usd_per_hour)
		cJSON_AddNumberToObject(speed, "usd_per_million_tokens",
					e->rq.usd_per_hour / (o.aggregate_tokens_per_s * 3600) *
						1e6);
	else
		cJSON_AddNullToObject(speed, "usd_per_million_tokens");
	if (ok)
		assume(e,
		       "batched speed: %lld streams share each step's weight pass (%.1f ms memory, "
		       "%.1f ms compute per step%s); time to first token on an idle server",
		       (long long)t->concurrency, o.memory_ms, o.compute_ms,
		       b.n_experts ? ", the experts the batch routes to" : "");
	else
		assume(e, "batched speed: unknown (no compute rate for prefill)");
	if (ok && e->rq.has_usd_per_hour)
		assume(e,
		       "usd_per_million_tokens: usd_per_hour over the aggregate output at "
		       "concurrency %lld",
		       (long long)t->concurrency);
}

/* The speed object of a setup that does not fit: no figures, basis "none". */
static void est_no_speed(struct est *e, cJSON *speed)
{
	static const char *const figures[] = {"decode_tokens_per_s",
					      "decode_tokens_per_s_at_full_ctx",
					      "prefill_tokens_per_s",
					      "aggregate_decode_tokens_per_s",
					      "per_stream_decode_tokens_per_s",
					      "time_to_first_token_s",
					      "usd_per_million_tokens"};

	for (size_t i = 0; i < sizeof(figures) / sizeof(figures[0]); i++)
		cJSON_AddNullToObject(speed, figures[i]);
	cJSON_AddStringToObject(speed, "basis", "none");
	assume(e, "speed: none, as the setup does not fit (a smaller context, quant or fewer GPU "
		  "layers that fits has one)");
}

static int est_inference(const struct api_env *env, struct est *e, cJSON *root,
			 struct api_reply *out)
{
	struct rf_mem_device dev[RF_MAX_DEVICES];
	struct rf_mem_host host;
	struct rf_infer_params p;
	struct rf_mem_estimate *m = calloc(1, sizeof(*m));
	struct speed_input in;
	cJSON *settings, *speed, *mem;
	int n_dev, rc;

	if (!m)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	if (!e->gguf) {
		const char *q = e->rq.has_quant ? e->rq.quant : EST_DEFAULT_QUANT;
		e->ftype = rf_ftype_from_name(q);
		if (e->ftype < 0) {
			free(m);
			return api_error(
				out, RF_E_INVALID_VALUE, "quant",
				"quant '%.20s' is not a GGUF quantization type (F16, Q8_0, "
				"Q4_K_M, IQ4_XS, UD-Q4_K_XL...)",
				q);
		}
		if (!e->rq.has_quant)
			assume(e, "quant: %s (the usual download) as none was given",
			       EST_DEFAULT_QUANT);
		rc = api_memo_weights(&e->arch, e->ftype, &e->weights);
		if (rc < 0) {
			free(m);
			if (rc == RF_E_NOMEM)
				return api_error(out, rc, NULL, NULL);
			return api_error(out, RF_E_INVALID_VALUE, "quant",
					 "the model cannot be quantized as %s", q);
		}
		if (e->ftype & RF_FT_UD)
			assume(e,
			       "weights: %s as Unsloth describes it (%s, routed experts at the "
			       "base type, embeddings and output 6-bit, MoE attention and shared "
			       "experts 4-6 bit); the GGUF file gives its exact tensors",
			       rf_ftype_name(e->ftype), rf_ftype_name(e->ftype & ~RF_FT_UD));
		else
			assume(e, "weights: per tensor as llama-quantize mixes %s",
			       rf_ftype_name(e->ftype));
	} else if (e->rq.has_quant) {
		free(m);
		return api_error(out, RF_E_INVALID_VALUE, "quant",
				 "a GGUF file has its own quantization; leave quant out");
	}
	rf_infer_params_default(&p);
	if (e->rq.has_n_ctx && e->rq.n_ctx > 0)
		p.n_ctx = e->rq.n_ctx;
	else if (!e->rq.has_n_ctx && e->arch.max_position_embeddings > 0 &&
		 e->arch.max_position_embeddings < p.n_ctx)
		p.n_ctx = e->arch.max_position_embeddings;
	if (e->rq.has_n_batch)
		p.n_batch = e->rq.n_batch;
	if (e->rq.has_n_ubatch)
		p.n_ubatch = e->rq.n_ubatch;
	if (p.n_ubatch > p.n_batch) {
		free(m);
		return api_error(out, RF_E_INVALID_VALUE, "n_ubatch",
				 "n_ubatch (%lld) must not exceed n_batch (%lld)",
				 (long long)p.n_ubatch, (long long)p.n_batch);
	}
	if (e->rq.has_n_parallel)
		p.n_parallel = e->rq.n_parallel;
	if (e->rq.has_kv_type) {
		p.type_k = p.type_v = rf_gtype_from_name(est_kv_types[e->rq.kv_type]);
		/* llama.cpp refuses to start with both: an explicit setting is honoured or
		 * refused, never switched. */
		if (e->rq.kv_type != 0 && e->rq.has_flash_attn && !e->rq.flash_attn) {
			free(m);
			return api_error(out, RF_E_INVALID_VALUE, "flash_attn",
					 "a quantized V cache (kv_cache_type %s) needs flash "
					 "attention in llama.cpp: set flash_attn true, or "
					 "kv_cache_type f16",
					 est_kv_types[e->rq.kv_type]);
		}
		if (e->rq.kv_type != 0 && !e->rq.has_flash_attn)
			assume(e, "kv_cache_type: a quantized V cache needs flash attention in "
				  "llama.cpp");
	}
	if (e->rq.has_flash_attn) {
		p.flash_attn = e->rq.flash_attn;
	} else {
		/* llama.cpp's -fa defaults to auto since September 2025 (b6xxx, "use FA by
		 * default"): on where the backend has the kernels, CUDA, Metal and the CPU. */
		static const char *const fa_auto[] = {"cuda", "metal", "cpu"};
		for (size_t i = 0; i < sizeof(fa_auto) / sizeof(fa_auto[0]); i++)
			if (strcmp(e->hw.backend, fa_auto[i]) == 0 || !e->hw.backend[0])
				p.flash_attn = true;
		assume(e,
		       "flash_attn: %s, as llama.cpp's default -fa auto resolves on %s (on for "
		       "CUDA, Metal and CPU since September 2025)",
		       p.flash_attn ? "on" : "off", e->hw.backend[0] ? e->hw.backend : "cpu");
	}
	if (e->rq.has_use_mmap)
		p.use_mmap = e->rq.use_mmap;
	if (e->rq.has_mlock)
		p.mlock = e->rq.mlock;
	if (e->rq.has_swa_full)
		p.swa_full = e->rq.swa_full;
	if (e->rq.has_n_gpu_layers)
		p.n_gpu_layers = e->rq.n_gpu_layers;
	if (e->rq.has_n_cpu_moe)
		p.n_cpu_moe = e->rq.n_cpu_moe;

	{
		/* Every llama.cpp default taken, in one line. */
		char d[EST_ASSUMPTION_LEN] = "";
		size_t u = 0;
		const struct {
			bool given;
			const char *text;
		} dflt[] = {{e->rq.has_n_ctx, "n_ctx"},
			    {e->rq.has_n_batch, "n_batch 2048"},
			    {e->rq.has_n_ubatch, "n_ubatch 512"},
			    {e->rq.has_n_parallel, "n_parallel 1"},
			    {e->rq.has_kv_type, "cache f16"},
			    {e->rq.has_n_gpu_layers, "n_gpu_layers all"}};
		for (size_t i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++) {
			int w;
			if (dflt[i].given)
				continue;
			if (i == 0)
				w = snprintf(d + u, sizeof(d) - u, "%sn_ctx %lld", u ? ", " : "",
					     (long long)p.n_ctx);
			else
				w = snprintf(d + u, sizeof(d) - u, "%s%s", u ? ", " : "",
					     dflt[i].text);
			if (w < 0 || (size_t)w >= sizeof(d) - u)
				break;
			u += (size_t)w;
		}
		if (u)
			assume(e, "llama.cpp's defaults taken: %s", d);
	}
	n_dev = est_devices(e, dev, &host, NULL);
	if (e->rq.n_split > 0) {
		if (e->rq.n_split > n_dev) {
			free(m);
			return api_error(out, RF_E_INVALID_VALUE, "tensor_split",
					 "tensor_split has %d entries; the hardware has %d GPUs",
					 e->rq.n_split, n_dev);
		}
		for (int i = 0; i < n_dev; i++)
			dev[i].split = i < e->rq.n_split ? e->rq.split[i] : 0;
		assume(e, "tensor_split: layers in the given proportions, as llama.cpp's "
			  "--tensor-split places them");
	}
	if (n_dev == 0 && p.n_gpu_layers != 0) {
		p.n_gpu_layers = 0;
		assume(e, "n_gpu_layers: 0 (no GPU to offload to)");
	}
	if (e->rq.has_n_ctx && e->rq.n_ctx < 0) {
		int64_t best = 0;
		rc = rf_estimate_max_ctx(&e->arch, &e->weights, &p, dev, n_dev, &host, &best, m);
		p.n_ctx = best;
	} else {
		rc = rf_estimate_inference(&e->arch, &e->weights, &p, dev, n_dev, &host, m);
	}
	if (rc < 0) {
		const char *field = m->error_field ? m->error_field : "model";
		free(m);
		return api_error(out, rc == RF_E_NOMEM ? RF_E_NOMEM : RF_E_INVALID_VALUE, field,
				 "%s is out of range for this model", field);
	}
	for (int i = 0; i < m->n_notes; i++)
		assume(e, "%s", m->notes[i]);
	assume(e, "memory: buffers as %s allocates them; CPU weight repacking for %s",
	       RF_LLAMA_CPP_BUILD, rf_repack_isa_name(host.repack_isa));

	mem = est_memory_json(m);
	if (mem)
		api_json_add(root, "memory", mem);
	cJSON_AddBoolToObject(root, "fits", m->fits);
	add_num_or_null(root, "utilization", m->utilization);
	if (m->fit_band)
		cJSON_AddStringToObject(root, "fit_band", m->fit_band);
	else
		cJSON_AddNullToObject(root, "fit_band");

	settings = cJSON_AddObjectToObject(root, "settings");
	if (settings) {
		cJSON_AddStringToObject(settings, "quant",
					e->ftype >= 0 ? rf_ftype_name(e->ftype) : "unknown");
		cJSON_AddNumberToObject(settings, "n_ctx", (double)m->n_ctx);
		cJSON_AddNumberToObject(settings, "n_batch", (double)p.n_batch);
		cJSON_AddNumberToObject(settings, "n_ubatch", (double)m->n_ubatch);
		cJSON_AddNumberToObject(settings, "n_parallel", (double)p.n_parallel);
		cJSON_AddStringToObject(settings, "kv_cache_type",
					est_kv_types[e->rq.has_kv_type ? e->rq.kv_type : 0]);
		cJSON_AddBoolToObject(settings, "flash_attn", p.flash_attn);
		cJSON_AddBoolToObject(settings, "use_mmap", p.use_mmap);
		cJSON_AddBoolToObject(settings, "mlock", p.mlock);
		cJSON_AddBoolToObject(settings, "swa_full", p.swa_full);
		cJSON_AddNumberToObject(settings, "n_gpu_layers", (double)m->n_gpu_layers);
		cJSON_AddNumberToObject(settings, "n_cpu_moe", (double)m->n_cpu_moe);
		cJSON_AddBoolToObject(settings, "output_on_gpu", m->output_on_gpu);
	}

	{
		/* llama-server's side of the serving question: n_parallel slots sharing the
		 * n_ctx cells. */
		cJSON *sv = cJSON_AddObjectToObject(root, "serving");
		if (sv) {
			cJSON_AddStringToObject(sv, "runtime", "llama.cpp");
			cJSON_AddNumberToObject(sv, "kv_cache_tokens", (double)m->n_ctx);
			cJSON_AddNumberToObject(sv, "slots", (double)p.n_parallel);
			cJSON_AddNumberToObject(sv, "tokens_per_slot",
						(double)(m->n_ctx / p.n_parallel));
			cJSON_AddNumberToObject(sv, "max_concurrency", (double)p.n_parallel);
		}
	}
	est_speed_devices(env, e, &in);
	plan_speed_model(&e->params, &e->weights, e->ftype, m, &p, &in);
	est_speed_weights(e, &in);
	speed = cJSON_AddObjectToObject(root, "speed");
	if (speed && !m->fits) {
		/* A setup that cannot be loaded has no speed. */
		est_no_speed(e, speed);
	} else if (speed) {
		struct est_predict pr = {&in, dev, n_dev, &host, NULL, NULL};
		rc = est_speed_json(env, e, &in, &pr, speed);
		free(pr.m);
		free(pr.w);
		if (rc < 0) {
			free(m);
			return api_error(out, rc, NULL, NULL);
		}
		{
			struct est_traffic t = est_traffic_of(e, p.n_parallel);
			/* llama-server decodes at most n_parallel slots at once. */
			if (t.concurrency > p.n_parallel) {
				assume(e,
				       "concurrency %lld is more than the %lld slots (n_parallel): "
				       "the rest wait",
				       (long long)t.concurrency, (long long)p.n_parallel);
				t.concurrency = p.n_parallel;
			}
			if (t.prompt + t.output > m->n_ctx / p.n_parallel)
				assume(e,
				       "a request of %lld tokens is longer than a slot's %lld cells "
				       "(n_ctx / n_parallel)",
				       (long long)(t.prompt + t.output),
				       (long long)(m->n_ctx / p.n_parallel));
			est_batched_json(
				e, &in, speed_fitted,
				m->n_ctx > 0 ? (double)m->kv_cache_bytes / (double)m->n_ctx : 0, &t,
				speed);
		}
	}
	free(m);
	return 0;
}

/* ---- vLLM ------------------------------------------------------------------------------ */

/* All-reduces a tensor-parallel layer adds per token (two per layer, NVLink or PCIe latency):
 * a stated figure, not a fit. */
#define EST_VLLM_ALLREDUCE_MS 0.02

/* Settings that only llama.cpp has, refused with runtime vllm (and the other way round). */
static int est_runtime_fields(struct est *e, struct api_reply *out)
{
	const struct est_request *r = &e->rq;
	const struct {
		bool given;
		const char *name, *instead;
	} cpp[] = {{r->has_quant, "quant", "precision"},
		   {r->has_n_ctx, "n_ctx", "max_model_len"},
		   {r->has_n_batch, "n_batch", "max_num_batched_tokens"},
		   {r->has_n_ubatch, "n_ubatch", "max_num_batched_tokens"},
		   {r->has_n_parallel, "n_parallel", "max_num_seqs or concurrency"},
		   {r->has_n_gpu_layers, "n_gpu_layers", "tensor_parallel_size"},
		   {r->has_kv_type, "kv_cache_type", "kv_cache_dtype"},
		   {r->has_flash_attn, "flash_attn", "nothing (vLLM picks its attention backend)"},
		   {r->n_split > 0, "tensor_split", "tensor_parallel_size"}},
	  vllm[] = {{r->has_precision, "precision", "quant"},
		    {r->has_tp, "tensor_parallel_size", "n_gpu_layers and tensor_split"},
		    {r->has_pp, "pipeline_parallel_size", "n_gpu_layers"},
		    {r->has_gpu_util, "gpu_memory_utilization", "n_ctx"},
		    {r->has_max_model_len, "max_model_len", "n_ctx"},
		    {r->has_max_num_seqs, "max_num_seqs", "n_parallel"},
		    {r->has_max_num_batched_tokens, "max_num_batched_tokens", "n_batch"},
		    {r->has_vllm_kv, "kv_cache_dtype", "kv_cache_type"},
		    {r->has_enforce_eager, "enforce_eager", "nothing"}};
	bool is_vllm = r->has_runtime && r->runtime == EST_RT_VLLM;

	/* "precision" is the weight format for vLLM, the training precision (bf16, amp) when
	 * fine-tuning. */
	if (e->rq.mode != EST_INFERENCE && r->has_precision) {
		int k = -1;
		for (int i = 0; est_precisions[i]; i++)
			if (strcmp(r->precision, est_precisions[i]) == 0)
				k = i;
		if (k < 0)
			return api_error(out, RF_E_INVALID_VALUE, "precision",
					 "precision for fine-tuning is bf16 or amp");
		e->rq.train_precision = k;
	}

	for (size_t i = 0; is_vllm && i < sizeof(cpp) / sizeof(cpp[0]); i++)
		if (cpp[i].given)
			return api_error(out, RF_E_INVALID_VALUE, cpp[i].name,
					 "%s is a llama.cpp setting; with runtime vllm use %s",
					 cpp[i].name, cpp[i].instead);
	for (size_t i = 0; !is_vllm && i < sizeof(vllm) / sizeof(vllm[0]); i++)
		if (vllm[i].given && !(i == 0 && e->rq.mode != EST_INFERENCE))
			return api_error(
				out, RF_E_INVALID_VALUE, vllm[i].name,
				"%s is a vLLM setting (add \"runtime\": \"vllm\"); llama.cpp "
				"uses %s",
				vllm[i].name, vllm[i].instead);
	if (e->rq.mode != EST_INFERENCE && (r->has_runtime || r->has_concurrency))
		return api_error(out, RF_E_INVALID_VALUE,
				 r->has_runtime ? "runtime" : "concurrency",
				 "runtime and concurrency apply to mode inference only");
	return 0;
}

static void est_vllm_setup(const struct est *e, struct vllm_setup *s)
{
	vllm_setup_default(s);
	if (e->rq.has_tp)
		s->tensor_parallel = (int)e->rq.tp;
	if (e->rq.has_pp)
		s->pipeline_parallel = (int)e->rq.pp;
	if (e->rq.has_gpu_util)
		s->gpu_memory_utilization = e->rq.gpu_util;
	if (e->rq.has_max_model_len)
		s->max_model_len = e->rq.max_model_len;
	if (e->rq.has_max_num_seqs)
		s->max_num_seqs = e->rq.max_num_seqs;
	if (e->rq.has_max_num_batched_tokens)
		s->max_num_batched_tokens = e->rq.max_num_batched_tokens;
	if (e->rq.has_vllm_kv)
		s->kv_dtype = e->rq.vllm_kv == 1 ? VLLM_KV_FP8 : VLLM_KV_AUTO;
	s->enforce_eager = e->rq.has_enforce_eager && e->rq.enforce_eager;
}

static cJSON *est_vllm_serving_json(const struct vllm_capacity *c, const struct vllm_setup *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "runtime", "vllm");
	cJSON_AddNumberToObject(o, "kv_cache_tokens", (double)c->kv_cache_tokens);
	cJSON_AddNumberToObject(o, "max_concurrency", c->max_concurrency);
	cJSON_AddNumberToObject(o, "max_model_len", (double)c->max_model_len);
	cJSON_AddNumberToObject(o, "max_num_seqs", (double)c->max_num_seqs);
	cJSON_AddNumberToObject(o, "max_num_batched_tokens", (double)c->max_num_batched_tokens);
	cJSON_AddNumberToObject(o, "block_size", c->block_size);
	cJSON_AddNumberToObject(o, "num_gpu_blocks", (double)c->num_blocks);
	cJSON_AddNumberToObject(o, "tensor_parallel_size", c->tensor_parallel);
	cJSON_AddNumberToObject(o, "pipeline_parallel_size", c->pipeline_parallel);
	cJSON_AddNumberToObject(o, "gpu_memory_utilization", c->gpu_memory_utilization);
	cJSON_AddStringToObject(o, "precision", vllm_precision_name(s->precision));
	cJSON_AddStringToObject(o, "kv_cache_dtype", s->kv_dtype == VLLM_KV_FP8 ? "fp8" : "auto");
	cJSON_AddNumberToObject(o, "gpu_memory_bytes", (double)c->cuda_total_bytes);
	cJSON_AddNumberToObject(o, "requested_bytes_per_gpu", (double)c->requested_bytes);
	cJSON_AddNumberToObject(o, "weights_bytes_per_gpu", (double)c->weights_bytes);
	cJSON_AddNumberToObject(o, "activation_peak_bytes", (double)c->activation_bytes);
	cJSON_AddNumberToObject(o, "non_torch_bytes", (double)c->non_torch_bytes);
	cJSON_AddNumberToObject(o, "kv_cache_bytes_per_gpu", (double)c->kv_cache_bytes);
	cJSON_AddNumberToObject(o, "kv_bytes_per_token_per_gpu", (double)c->kv_bytes_per_token);
	if (c->cross_kv_bytes_per_seq > 0)
		cJSON_AddNumberToObject(o, "cross_attention_kv_bytes_per_request_per_gpu",
					(double)c->cross_kv_bytes_per_seq);
	cJSON_AddNumberToObject(o, "cuda_graph_bytes", (double)c->cuda_graph_bytes);
	if (c->refusal)
		cJSON_AddStringToObject(o, "refusal", c->refusal);
	else
		cJSON_AddNullToObject(o, "refusal");
	return o;
}

/* The speed of the engine: tensor-parallel ranks read their shards side by side (one device
 * of tp x the bandwidth and compute per pipeline stage), stages run one after the other, each
 * layer adds its all-reduces; vLLM's kernels are not held to llama.cpp's bandwidth ceiling. */
static void est_vllm_speed(const struct api_env *env, struct est *e, const struct vllm_setup *s,
			   const struct vllm_capacity *c, cJSON *speed)
{
	struct speed_input in;
	struct speed_params params[SPEED_BACKEND_COUNT];
	struct speed_output so;
	struct speed_device dev;
	double active = e->params.total > 0 ? (double)e->params.active / (double)e->params.total :
					      1;
	double fits_each;
	struct est_traffic t;
	int64_t dflt;

	est_speed_devices(env, e, &in);
	dev = in.devices[0];
	dev.bandwidth_gbs *= c->tensor_parallel;
	dev.compute_tflops *= c->tensor_parallel;
	dev.layer_share = 0;
	in.n_devices = c->pipeline_parallel;
	for (int i = 0; i < in.n_devices; i++)
		in.devices[i] = dev;
	in.weight_bytes = (double)c->weights_bytes_total * active;
	in.moe_batch_bytes = e->params.expert > 0 ? (double)c->weights_bytes_total * (1 - active) :
						    0;
	in.kv_bytes_start = 0;
	in.kv_bytes_full = (double)c->kv_bytes_per_token * c->tensor_parallel *
			   c->pipeline_parallel * (double)c->max_model_len;
	in.flops_per_token = 2.0 * (double)e->params.active;
	in.n_layers = (int)model_n_layer(&e->arch);
	in.quantized = s->precision != VLLM_BF16 && s->precision != VLLM_FP16 &&
		       s->precision != VLLM_FP32;
	in.gpu_fraction = 1;
	memcpy(params, speed_fitted, sizeof(params));
	for (int b = 0; b < SPEED_BACKEND_COUNT; b++) {
		params[b].mem_ceiling_gbs = 0;
		params[b].mem_eff_hbm = 0; /* llama.cpp's lower HBM share is its kernels' */
		if (c->tensor_parallel > 1)
			params[b].layer_ms += EST_VLLM_ALLREDUCE_MS;
	}
	if (speed_estimate_with(&in, params, &so) == 0) {
		add_num_or_null(speed, "decode_tokens_per_s", so.decode_tokens_per_s);
		add_num_or_null(speed, "decode_tokens_per_s_at_full_ctx",
				so.decode_tokens_per_s_at_full_ctx);
		add_num_or_null(speed, "prefill_tokens_per_s", so.prefill_tokens_per_s);
		for (int i = 0; i < so.n_assumptions; i++)
			assume(e, "speed: %s", so.assumptions[i]);
	} else {
		add_num_or_null(speed, "decode_tokens_per_s", -1);
		add_num_or_null(speed, "decode_tokens_per_s_at_full_ctx", -1);
		add_num_or_null(speed, "prefill_tokens_per_s", -1);
	}
	cJSON_AddStringToObject(speed, "basis", "roofline");
	assume(e,
	       "vLLM speed: the llama.cpp-fitted efficiencies without llama.cpp's bandwidth "
	       "ceiling; tensor-parallel ranks read their shards side by side%s",
	       c->tensor_parallel > 1 ? ", 0.02 ms of all-reduce per layer (stated)" : "");
	/* As many streams as the KV cache holds whole requests, up to max_num_seqs. */
	t = est_traffic_of(e, 1);
	fits_each = (double)c->kv_cache_tokens / (double)(t.prompt + t.output);
	dflt = (int64_t)fits_each < c->max_num_seqs ? (int64_t)fits_each : c->max_num_seqs;
	if (!e->rq.has_concurrency) {
		t.concurrency = dflt > 0 ? dflt : 1;
		assume(e,
		       "concurrency: %lld, as many requests as the KV cache holds whole (up to "
		       "max_num_seqs)",
		       (long long)t.concurrency);
	} else if (t.concurrency > c->max_num_seqs || (double)t.concurrency > fits_each) {
		assume(e, "concurrency %lld exceeds what vLLM runs at once (%lld): the rest queue",
		       (long long)t.concurrency, (long long)(dflt > 0 ? dflt : 0));
	}
	est_batched_json(e, &in, params,
			 (double)c->kv_bytes_per_token * c->tensor_parallel * c->pipeline_parallel,
			 &t, speed);
}

/* The vLLM weight format a quantised checkpoint loads as. */
static int est_quant_precision(const struct hfq_config *q)
{
	switch (q->method) {
	case HFQ_AWQ:
		return VLLM_AWQ;
	case HFQ_GPTQ:
		return q->bits == 8 ? VLLM_INT8 : VLLM_GPTQ;
	case HFQ_BNB_4BIT:
		return VLLM_BNB4;
	case HFQ_BNB_8BIT:
		return VLLM_INT8;
	case HFQ_FP8:
		return VLLM_FP8;
	case HFQ_COMPRESSED:
		if (q->bits == 8)
			return q->float_weights ? VLLM_FP8 : VLLM_INT8;
		return VLLM_GPTQ; /* W4A16 runs on the same Marlin kernels */
	case HFQ_MXFP4:
		return VLLM_MXFP4;
	default:
		return VLLM_BF16;
	}
}

static int est_vllm(const struct api_env *env, struct est *e, cJSON *root, struct api_reply *out)
{
	struct vllm_setup s;
	struct vllm_gpu g[VLLM_MAX_GPUS];
	struct vllm_capacity c;
	const char *field = NULL;
	cJSON *mem, *arr, *settings, *serving, *speed;
	int n = 0, rc;

	if (e->gguf)
		return api_error(
			out, RF_E_INVALID_VALUE, "model.gguf",
			"runtime vllm estimates Hugging Face checkpoints: give the model by "
			"id or architecture");
	if (strcmp(e->hw.backend, "cuda") != 0 && strcmp(e->hw.backend, "rocm") != 0)
		return api_error(out, RF_E_INVALID_VALUE, "runtime",
				 "vLLM needs CUDA or ROCm GPUs; this hardware's backend is %s",
				 e->hw.backend[0] ? e->hw.backend : "none");
	if (e->rq.has_precision && vllm_precision_parse(e->rq.precision) < 0)
		return api_error(out, RF_E_INVALID_VALUE, "precision",
				 "precision '%.20s' is not one vLLM loads (bf16, fp16, fp32, fp8, "
				 "int8, awq, gptq, bitsandbytes, mxfp4)",
				 e->rq.precision);
	for (int i = 0; i < e->hw.n_gpus && n < VLLM_MAX_GPUS; i++) {
		const struct hw_gpu *hg = &e->hw.gpus[i];
		if (strcmp(hg->vendor, "intel") == 0 || hg->memory_total_bytes <= 0)
			continue;
		g[n].total_bytes = hg->memory_total_bytes;
		g[n].free_bytes = hg->memory_free_bytes;
		g[n].a100 = strstr(hg->name, "A100") != NULL;
		n++;
	}
	est_vllm_setup(e, &s);
	if (e->rq.has_precision) {
		s.precision = vllm_precision_parse(e->rq.precision);
	} else if (e->quantized) {
		s.precision = est_quant_precision(&e->quant);
		assume(e, "precision: %s, as the checkpoint's quantization_config (%s) stores it",
		       vllm_precision_name(s.precision), hfq_method_name(e->quant.method));
	} else if (strcmp(e->arch.llm_arch, "gpt-oss") == 0) {
		s.precision = VLLM_MXFP4;
		assume(e, "precision: mxfp4, as the gpt-oss checkpoint ships its experts");
	} else {
		assume(e, "precision: bf16 (the checkpoint's dtype) as none was given");
	}
	rc = vllm_capacity(&e->arch, &s, g, n, &c, &field);
	if (rc == RF_E_NOMEM)
		return api_error(out, rc, NULL, NULL);
	if (rc < 0 && field && strcmp(field, "gpus") == 0)
		return api_error(out, RF_E_INVALID_VALUE, "tensor_parallel_size",
				 "tensor_parallel_size x pipeline_parallel_size = %d GPUs; the "
				 "hardware has %d",
				 s.tensor_parallel * s.pipeline_parallel, n);
	if (rc < 0 && field && strcmp(field, "tensor_parallel_size") == 0)
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "tensor_parallel_size must divide the %lld attention heads and "
				 "divide or be a multiple of the %lld KV heads",
				 (long long)e->arch.n_heads, (long long)e->arch.n_kv_heads);
	if (rc < 0 && field && strcmp(field, "max_model_len") == 0)
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "max_model_len must be at most the model's %lld positions (vLLM "
				 "refuses more unless VLLM_ALLOW_LONG_MAX_MODEL_LEN is set)",
				 (long long)e->arch.max_position_embeddings);
	if (rc < 0 && field && strcmp(field, "model") == 0)
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "runtime vllm estimates decoder models (with a KV cache); %s is "
				 "not one",
				 e->model_id);
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, field ? field : "model",
				 "%s is out of range for this model and hardware",
				 field ? field : "the model");
	for (int i = 0; i < c.n_notes; i++)
		assume(e, "%s", c.notes[i]);
	if (c.refusal)
		assume(e, "vLLM would not start: %s", c.refusal);

	mem = cJSON_AddObjectToObject(root, "memory");
	if (mem) {
		int used = c.tensor_parallel * c.pipeline_parallel;
		cJSON_AddNumberToObject(mem, "weights_bytes", (double)c.weights_bytes_total);
		cJSON_AddNumberToObject(mem, "kv_cache_bytes", (double)c.kv_cache_bytes * used);
		cJSON_AddNumberToObject(mem, "compute_bytes", (double)c.activation_bytes * used);
		cJSON_AddNumberToObject(mem, "overhead_bytes",
					(double)(c.non_torch_bytes + c.cuda_graph_bytes) * used);
		cJSON_AddNumberToObject(mem, "total_bytes",
					(double)(c.requested_bytes + c.cuda_graph_bytes) * used);
		arr = cJSON_AddArrayToObject(mem, "per_device");
		for (int i = 0; arr && i < used; i++) {
			cJSON *d = cJSON_CreateObject();
			char name[32];
			if (!d)
				break;
			snprintf(name, sizeof(name), "%s%d", e->hw.backend, i);
			cJSON_AddStringToObject(d, "device", name);
			cJSON_AddNumberToObject(d, "bytes",
						(double)(c.requested_bytes + c.cuda_graph_bytes));
			cJSON_AddNumberToObject(d, "budget_bytes", (double)c.cuda_total_bytes);
			api_json_append(arr, d);
		}
	}
	cJSON_AddBoolToObject(root, "fits", c.fits);
	{
		double u = (double)(c.requested_bytes + c.cuda_graph_bytes) /
			   (double)c.cuda_total_bytes;
		if (c.kv_cache_bytes <= 0)
			u = u > 1.01 ? u : 1.01; /* nothing left for the cache: over */
		cJSON_AddNumberToObject(root, "utilization", u);
		cJSON_AddStringToObject(root, "fit_band", c.fits ? rf_fit_band(u) : "over");
	}
	settings = cJSON_AddObjectToObject(root, "settings");
	if (settings) {
		cJSON_AddStringToObject(settings, "runtime", "vllm");
		cJSON_AddStringToObject(settings, "precision", vllm_precision_name(s.precision));
		cJSON_AddNumberToObject(settings, "tensor_parallel_size", c.tensor_parallel);
		cJSON_AddNumberToObject(settings, "pipeline_parallel_size", c.pipeline_parallel);
		cJSON_AddNumberToObject(settings, "gpu_memory_utilization",
					c.gpu_memory_utilization);
		cJSON_AddNumberToObject(settings, "max_model_len", (double)c.max_model_len);
		cJSON_AddNumberToObject(settings, "max_num_seqs", (double)c.max_num_seqs);
		cJSON_AddNumberToObject(settings, "max_num_batched_tokens",
					(double)c.max_num_batched_tokens);
		cJSON_AddStringToObject(settings, "kv_cache_dtype",
					s.kv_dtype == VLLM_KV_FP8 ? "fp8" : "auto");
		cJSON_AddBoolToObject(settings, "enforce_eager", s.enforce_eager);
	}
	serving = est_vllm_serving_json(&c, &s);
	if (serving)
		api_json_add(root, "serving", serving);
	speed = cJSON_AddObjectToObject(root, "speed");
	if (speed) {
		if (c.fits) {
			est_vllm_speed(env, e, &s, &c, speed);
		} else {
			est_no_speed(e, speed);
		}
	}
	return 0;
}

/* ---- fine-tuning ------------------------------------------------------------------------- */

static void est_train_model(const struct est *e, struct train_model *t)
{
	const struct plan_ft_model m = {&e->arch, &e->params};

	plan_ft_train_model(&m, t);
}

/* The GPUs a training run may use (those est_devices counts, in its order) with their budgets.
 * Unified memory gets one budget however the machine was described: the GPU's working-set
 * share of RAM, taking the GPU's memory as the RAM when the request gave no host memory. */
struct est_train_gpus {
	int n;
	int gpu[RF_MAX_DEVICES]; /* index into hw.gpus */
	int64_t budget[RF_MAX_DEVICES];
	int largest;         /* position in gpu[] of the largest budget */
	int64_t min_budget;  /* the smallest budget of all */
	int64_t host_budget; /* RAM of one node the run may use; < 0 unknown */
	bool apple;          /* a GPU runs Metal (MPS) */
};

static void est_train_gpus(const struct api_env *env, struct est *e, struct est_train_gpus *t)
{
	struct rf_mem_device dev[RF_MAX_DEVICES];
	struct rf_mem_host host;
	int n = est_devices(e, dev, &host, NULL), k = 0;

	memset(t, 0, sizeof(*t));
	t->host_budget = host.budget_bytes;
	t->min_budget = -1;
	for (int i = 0; i < e->hw.n_gpus && k < n; i++) {
		const struct hw_gpu *g = &e->hw.gpus[i];
		const struct device_profile *p = NULL;
		int64_t b = dev[k].budget_bytes;
		if (strcmp(g->vendor, "intel") == 0 || g->memory_total_bytes <= 0)
			continue;
		if (g->unified_memory && e->hw.memory.total_bytes <= 0) {
			int64_t ws = -1;
			if (env->devices &&
			    device_resolve_mem(env->devices, g->name, -1, &p) == 0 && p)
				ws = device_gpu_working_set_bytes(p, g->memory_total_bytes);
			b = ws > 0 ? ws : rf_budget_unified(g->memory_total_bytes, -1);
			assume(e,
			       "%s: unified memory; %.1f GiB of its %.0f GiB taken as the GPU's "
			       "working set",
			       g->name, (double)b / (double)RF_GIB,
			       (double)g->memory_total_bytes / (double)RF_GIB);
		}
		if (strcmp(g->vendor, "apple") == 0 || strcmp(e->hw.backend, "metal") == 0)
			t->apple = true;
		/* On unified memory the "host" is the GPU's own memory: offloading frees nothing. */
		if (g->unified_memory)
			t->host_budget = -1;
		t->gpu[k] = i;
		t->budget[k] = b;
		if (b > t->budget[t->largest])
			t->largest = k;
		if (t->min_budget < 0 || b < t->min_budget)
			t->min_budget = b;
		k++;
	}
	t->n = k;
}

/* Estimates s on the GPUs of t: with strategy auto (want_auto) the cheapest placement that
 * fits, else s as given. Writes the settings used and the estimate; returns 1 when it fits
 * the GPUs' (and, when known, the host's) memory, 0 when not, or a negative error. */
static int est_train_fit(const struct train_model *tm, const struct train_settings *s,
			 bool want_auto, int64_t budget, int64_t host_budget,
			 struct train_settings *used, struct train_memory *r)
{
	int rc;

	if (want_auto)
		return plan_strategy_auto(tm, s, budget, host_budget, used, r);
	*used = *s;
	rc = train_memory_estimate(tm, s, r);
	if (rc < 0)
		return rc;
	train_page_optimizer(s, budget, r);
	return r->total_bytes <= budget && (host_budget < 0 || r->host_bytes <= host_budget);
}

enum train_device_class api_train_class(const struct device_profile *p)
{
	if (!p)
		return TRAIN_CLASS_CONSUMER;
	if (strcmp(p->device_class, "workstation") == 0)
		return TRAIN_CLASS_WORKSTATION;
	if (strcmp(p->device_class, "datacenter") == 0)
		return TRAIN_CLASS_DATACENTER;
	if (strcmp(p->device_class, "consumer") == 0 || strcmp(p->device_class, "laptop") == 0)
		return TRAIN_CLASS_CONSUMER;
	return TRAIN_CLASS_OTHER;
}

/* The training speed on the GPU at hw.gpus[gi], as tokens/s of the whole run; < 0 unknown. */
static double est_train_speed(const struct api_env *env, struct est *e, int gi,
			      const struct train_model *tm, const struct train_settings *s,
			      const struct train_memory *r, struct train_speed *sp)
{
	const struct hw_gpu *g = &e->hw.gpus[gi];
	const struct device_profile *p = NULL;
	struct train_device d = {0};

	if (env->devices)
		device_resolve_mem(env->devices, g->name, g->memory_total_bytes, &p);
	d.device_class = api_train_class(p);
	d.bandwidth_gbs = g->memory_bandwidth_gbs > 0 ? g->memory_bandwidth_gbs :
			  p                           ? p->memory_bandwidth_gbs :
							-1;
	if (p && p->bf16_tflops > 0) {
		d.bf16_tflops = p->bf16_tflops;
	} else if (g->fp16_tflops > 0) {
		d.bf16_tflops = g->fp16_tflops;
		assume(e,
		       "training speed: %s has no known bf16 (fp32 accumulate) peak; its FP16 "
		       "figure %.0f TFLOPS is used, which overstates GeForce cards 2x",
		       g->name, g->fp16_tflops);
	}
	if (train_speed_estimate(tm, s, r, &d, sp) < 0) {
		assume(e, "training speed: unknown (no bf16 peak known for %s)", g->name);
		return -1;
	}
	assume(e,
	       "training speed: %.3g FLOPs per token at %.0f%% of %.0f bf16 TFLOPS (fitted to "
	       "published runs for %s cards)%s",
	       sp->flops_per_token, sp->utilisation * 100, d.bf16_tflops,
	       d.device_class == TRAIN_CLASS_WORKSTATION ? "workstation" :
	       d.device_class == TRAIN_CLASS_DATACENTER  ? "data-centre" :
	       d.device_class == TRAIN_CLASS_CONSUMER    ? "consumer" :
							   "consumer (no figure for this class)",
	       s->provider == TRAIN_PROVIDER_UNSLOTH ? ", Unsloth's stated 2x" : "");
	return sp->tokens_per_s;
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
	cJSON_AddNumberToObject(mem, "kv_cache_bytes", 0);
	cJSON_AddNumberToObject(mem, "compute_bytes",
				(double)(r->activations_bytes + r->logits_bytes - r->reused_bytes));
	cJSON_AddNumberToObject(mem, "overhead_bytes", (double)r->overhead_bytes);
	cJSON_AddNumberToObject(mem, "total_bytes", (double)r->total_bytes);
	cJSON_AddNumberToObject(mem, "reserved_bytes", (double)r->reserved_bytes);
	cJSON_AddNumberToObject(mem, "host_bytes", (double)r->host_bytes);
	if (t->host_budget >= 0)
		cJSON_AddNumberToObject(mem, "host_budget_bytes", (double)t->host_budget);
	else
		cJSON_AddNullToObject(mem, "host_budget_bytes");
	pd = cJSON_AddArrayToObject(mem, "per_device");
	/* One node's GPUs: the others hold the same. */
	for (int k = 0; pd && k < t->n; k++) {
		cJSON *d;
		if (one_gpu && k != t->largest)
			continue;
		d = cJSON_CreateObject();
		if (!d)
			break;
		cJSON_AddStringToObject(d, "device", e->hw.gpus[t->gpu[k]].name);
		cJSON_AddNumberToObject(d, "bytes", (double)r->total_bytes);
		cJSON_AddNumberToObject(d, "budget_bytes", (double)t->budget[k]);
		api_json_append(pd, d);
	}
}

static int est_training(const struct api_env *env, struct est *e, cJSON *root,
			struct api_reply *out)
{
	struct train_model tm;
	struct train_settings s = {0}, used;
	struct train_memory r;
	struct train_speed sp;
	struct est_train_gpus t;
	int64_t budget, nodes = e->rq.has_nodes ? e->rq.nodes : 1;
	bool want_auto = !e->rq.has_strategy || e->rq.strategy == 0, one_gpu;
	cJSON *tr;
	double tps = -1;
	int fits, rc;

	est_train_gpus(env, e, &t);
	est_train_model(e, &tm);
	s.mode = e->rq.mode == EST_FULL ? TRAIN_FULL :
		 e->rq.mode == EST_LORA ? TRAIN_LORA :
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
	s.nodes = t.n > 0 ? (int)nodes : 1;
	s.n_gpus = (int)(t.n > 0 ? t.n * nodes : 1);
	if (t.n * nodes > EST_MAX_TRAIN_GPUS)
		return api_error(out, RF_E_INVALID_VALUE, "nodes",
				 "%lld GPUs in all (%d per node x %lld nodes); at most %d",
				 (long long)(t.n * nodes), t.n, (long long)nodes,
				 EST_MAX_TRAIN_GPUS);
	s.offload = (enum train_offload)(e->rq.has_offload ? e->rq.offload : 0);
	if (!want_auto) {
		s.strategy = (enum train_strategy)(e->rq.strategy - 1);
	} else if (e->rq.has_offload && s.offload != TRAIN_OFFLOAD_NONE) {
		/* Offloading is ZeRO-3's (FSDP-QLoRA's for a 4-bit base). */
		s.strategy = s.mode == TRAIN_QLORA ? TRAIN_STRATEGY_FSDP_QLORA :
						     TRAIN_STRATEGY_ZERO3;
		want_auto = false;
	}
	if (train_parallel_check(&s) < 0)
		return api_error(out, RF_E_INVALID_VALUE,
				 e->rq.has_offload ? "offload" : "strategy",
				 "strategy %s with offload %s cannot run %s fine-tuning on %d GPUs "
				 "(fsdp_qlora needs qlora; optimizer offload a ZeRO stage or FSDP; "
				 "parameter offload zero3, fsdp or fsdp_qlora)",
				 train_strategy_name(s.strategy), train_offload_name(s.offload),
				 est_modes[e->rq.mode], s.n_gpus);
	one_gpu = (!want_auto && s.strategy == TRAIN_STRATEGY_NONE) || t.n <= 1;
	budget = t.n == 0 ? -1 : one_gpu && nodes == 1 ? t.budget[t.largest] : t.min_budget;
	if (!e->rq.has_seq_len)
		assume(e, "seq_len: %d as none was given", EST_DEFAULT_SEQ_LEN);
	if (!e->rq.has_lora_rank && s.mode != TRAIN_FULL)
		assume(e, "lora_rank: 16 as none was given");
	if (!e->rq.lora_targets && s.mode != TRAIN_FULL)
		assume(e, "lora_targets: every linear layer (q, k, v, o, gate, up, down)");
	if (s.mode != TRAIN_FULL && !e->rq.has_lora_dropout)
		assume(e,
		       "lora_dropout: %s as none was given (each adapter keeps a one-byte mask "
		       "of its input when it is above 0)",
		       s.lora_dropout ? "0.05, PEFT's examples'" : "0, Unsloth's");
	if (s.mode != TRAIN_FULL && s.provider == TRAIN_PROVIDER_HUGGINGFACE)
		assume(e, "precision: %s (%s)", est_precisions[s.precision],
		       s.precision == TRAIN_PRECISION_AMP ?
			       "bf16 autocast, as the Trainer's bf16=True runs: each adapter keeps "
			       "a bf16 copy of its input" :
			       "the forward in the base's 16 bits without autocast: each adapter "
			       "keeps an fp32 copy of its input, as PEFT casts it (amp, the "
			       "Trainer's bf16=True, keeps bf16 copies)");
	if (s.mode == TRAIN_FULL)
		assume(e, "precision: %s (%s)", est_precisions[s.precision],
		       s.precision == TRAIN_PRECISION_AMP ?
			       "fp32 master weights, gradients and AdamW moments, bf16 compute" :
			       "weights, gradients and AdamW moments in bf16, as torch keeps "
			       "them for a bf16 model; under a DeepSpeed ZeRO stage an fp32 "
			       "master copy and fp32 moments all the same, as DeepSpeed keeps "
			       "them");
	assume(e, "optimizer: %s (%s), %s", train_optimizer_info(s.optimizer)->name,
	       train_optimizer_info(s.optimizer)->runs,
	       e->rq.has_optimizer ?
		       "as given" :
	       s.provider == TRAIN_PROVIDER_UNSLOTH ?
		       "the default for Unsloth (its notebooks' optim) as none was given" :
		       "the default for Hugging Face (the Trainer's optim) as none was given");
	assume(e,
	       "batch_size is per GPU; activations in 16 bits, the residual stream in %s; loss: %s",
	       train_residual_bytes(&s) == 4 ? "fp32 (the embedding is fp32)" : "16 bits",
	       train_loss_resolve(s.loss, s.provider) == TRAIN_LOSS_CHUNKED ?
		       "chunked/fused cross-entropy (no full logits)" :
		       "transformers' chain (16-bit logits, fp32 upcast, log-softmax, gradient), "
		       "whose memory the layers' backward reuses");

	/* "max": the largest value that fits, by bisection over the monotonic estimate. */
	if ((e->rq.has_seq_len && e->rq.seq_len < 0) ||
	    (e->rq.has_batch_size && e->rq.batch_size < 0)) {
		bool seq = e->rq.has_seq_len && e->rq.seq_len < 0;
		int64_t lo = 0, hi = seq ? (e->arch.max_position_embeddings > 0 ?
						    e->arch.max_position_embeddings :
						    131072) :
					   EST_MAX_BATCH;
		if (budget < 0)
			return api_error(out, RF_E_INVALID_VALUE, seq ? "seq_len" : "batch_size",
					 "\"max\" needs a GPU with a known memory size");
		if (seq && e->rq.has_batch_size && e->rq.batch_size < 0)
			return api_error(out, RF_E_INVALID_VALUE, "batch_size",
					 "only one of seq_len and batch_size can be \"max\"");
		while (lo < hi) {
			int64_t mid = lo + (hi - lo + 1) / 2;
			struct train_settings c = s;
			if (seq)
				c.seq_len = mid;
			else
				c.batch_size = mid;
			if (!e->rq.has_padded)
				c.padded = train_default_padded(&c);
			if (est_train_fit(&tm, &c, want_auto, budget, t.host_budget, &used, &r) ==
			    1)
				lo = mid;
			else
				hi = mid - 1;
		}
		if (seq)
			s.seq_len = lo > 0 ? lo : 1;
		else
			s.batch_size = lo > 0 ? lo : 1;
		if (!e->rq.has_padded)
			s.padded = train_default_padded(&s);
	}
	/* No GPU known: the answer is what one GPU needs to hold the whole run; no sharding or
	 * offload is picked for hardware that is not there (the most frugal of them would read
	 * as the need). */
	if (t.n == 0) {
		if (want_auto) {
			s.strategy = TRAIN_STRATEGY_NONE;
			s.offload = TRAIN_OFFLOAD_NONE;
		}
		want_auto = false;
		assume(e, "no GPU known: the memory is what one GPU of unlimited memory needs for "
			  "the whole run, with no sharding or offload assumed "
			  "(training.unlimited_gpu); POST /api/recommend with \"for\": "
			  "\"hardware\" names the cards that hold it");
	}
	fits = est_train_fit(&tm, &s, want_auto,
			     budget >= 0 ? budget :
			     t.n == 0    ? INT64_MAX / 4 :
					   0,
			     t.host_budget, &used, &r);
	if (fits < 0)
		return api_error(out, RF_E_INVALID_VALUE, "seq_len",
				 "the settings are out of range for this model");
	s = used;
	one_gpu = one_gpu || s.strategy == TRAIN_STRATEGY_NONE;
	if (s.packing)
		assume(e, "packing: every row is seq_len tokens of whole documents, all counted in "
			  "tokens_per_s");
	else
		assume(e,
		       "packing: off; tokens_per_s counts every position up to seq_len, padding "
		       "included (packing: true counts only real tokens); padded: %s%s",
		       s.padded ? "true" : "false",
		       e->rq.has_padded ? "" :
		       s.padded         ? " (several rows a micro-batch, padded to the longest)" :
					  " (one row a micro-batch)");
	if (s.provider == TRAIN_PROVIDER_HUGGINGFACE) {
		enum train_attention_mask mk = train_attention_mask(&s);
		assume(e, "attention mask: %s",
		       mk == TRAIN_MASK_EAGER ?
			       "eager attention adds one 4D mask (batch x seq x seq in the "
			       "embedding's dtype, attention_mask_bytes) to every layer's scores" :
		       mk == TRAIN_MASK_SDPA ?
			       "packed or padded rows give SDPA a 4D boolean mask "
			       "(attention_mask_bytes), which every layer converts to q's dtype and "
			       "keeps, with k and v repeated to every head (attention flash, "
			       "flash-attention's varlen kernel, needs none)" :
		       s.varlen_attention ? "none (flash-attention's varlen kernel)" :
					    "none (SDPA on unpadded rows takes is_causal)");
	}

	if (r.reserved_bytes > r.total_bytes)
		assume(e,
		       "reserved: a GPU with room to spare shows %.1f GiB held (reserved_bytes): "
		       "%s; with less room it gives them back, and %.1f GiB (total_bytes) is what "
		       "the run needs",
		       (double)r.reserved_bytes / 1073741824.0,
		       s.flash_attention ?
			       "from the second step PyTorch keeps the optimizer step's "
			       "blocks and reserves the loss's anew" :
			       "PyTorch reserves eager attention's score tensors twice "
			       "over, as the layers' other requests split the cached ones",
		       (double)r.total_bytes / 1073741824.0);
	est_train_memory_json(root, &r, e, &t, one_gpu);
	cJSON_AddBoolToObject(root, "fits", budget >= 0 && fits == 1);
	if (budget > 0) {
		double u = (double)r.total_bytes / (double)budget;
		cJSON_AddNumberToObject(root, "utilization", u);
		cJSON_AddStringToObject(root, "fit_band", rf_fit_band(u));
		if (t.host_budget >= 0 && r.host_bytes > t.host_budget)
			assume(e,
			       "fits: the GPUs hold it, but host memory does not (%.1f GiB "
			       "needed per node, %.1f GiB available)",
			       (double)r.host_bytes / (double)RF_GIB,
			       (double)t.host_budget / (double)RF_GIB);
		else if (t.host_budget < 0 && r.host_bytes > 0)
			assume(e, "fits: host memory not known; %.1f GiB per node needed",
			       (double)r.host_bytes / (double)RF_GIB);
	} else {
		cJSON_AddNullToObject(root, "utilization");
		cJSON_AddNullToObject(root, "fit_band");
		assume(e, "fits: no GPU with a known memory size; training needs one");
	}
	if (t.n > 0)
		tps = est_train_speed(env, e, t.gpu[t.largest], &tm, &s, &r, &sp);
	else
		assume(e, "training speed: unknown (no GPU)");

	tr = cJSON_AddObjectToObject(root, "training");
	if (tr) {
		cJSON_AddStringToObject(tr, "mode", est_modes[e->rq.mode]);
		cJSON_AddStringToObject(tr, "provider", est_providers[s.provider]);
		cJSON_AddStringToObject(tr, "optimizer", train_optimizer_info(s.optimizer)->name);
		cJSON_AddBoolToObject(tr, "optimizer_default", !e->rq.has_optimizer);
		/* No GPU known: the memory is one GPU's of unlimited size (what the run needs). */
		cJSON_AddBoolToObject(tr, "unlimited_gpu", t.n == 0);
		if (s.mode == TRAIN_FULL || s.provider == TRAIN_PROVIDER_HUGGINGFACE)
			cJSON_AddStringToObject(tr, "precision", est_precisions[s.precision]);
		cJSON_AddStringToObject(tr, "loss",
					est_losses[train_loss_resolve(s.loss, s.provider)]);
		cJSON_AddStringToObject(tr, "attention",
					!s.flash_attention ? "eager" :
					s.varlen_attention ? "flash" :
							     "sdpa");
		cJSON_AddBoolToObject(tr, "packing", s.packing);
		cJSON_AddBoolToObject(tr, "padded", s.padded);
		cJSON_AddBoolToObject(tr, "compiled", s.compiled);
		cJSON_AddStringToObject(tr, "objective", est_objectives[s.objective]);
		cJSON_AddNumberToObject(tr, "batch_size", (double)s.batch_size);
		cJSON_AddNumberToObject(tr, "seq_len", (double)s.seq_len);
		if (s.mode != TRAIN_FULL) {
			cJSON_AddNumberToObject(tr, "lora_rank", (double)s.lora_rank);
			cJSON_AddNumberToObject(tr, "lora_dropout",
						e->rq.has_lora_dropout ? e->rq.lora_dropout :
						s.lora_dropout         ? 0.05 :
									 0.0);
		}
		cJSON_AddBoolToObject(tr, "gradient_checkpointing", s.gradient_checkpointing);
		if (s.grad_accum_steps > 0)
			cJSON_AddNumberToObject(tr, "gradient_accumulation_steps",
						(double)s.grad_accum_steps);
		else
			cJSON_AddNullToObject(tr, "gradient_accumulation_steps");
		cJSON_AddNumberToObject(tr, "trainable_params", (double)r.trainable_params);
		cJSON_AddStringToObject(tr, "strategy", train_strategy_name(s.strategy));
		cJSON_AddStringToObject(tr, "offload", train_offload_name(s.offload));
		cJSON_AddNumberToObject(tr, "n_gpus", (double)r.n_gpus);
		cJSON_AddNumberToObject(tr, "nodes", (double)nodes);
		cJSON_AddNumberToObject(tr, "comm_bytes_per_step", (double)r.comm_bytes_per_step);
		add_num_or_null(tr, "tokens_per_s", tps);
		if (tps > 0) {
			cJSON_AddNumberToObject(tr, "flops_per_token", sp.flops_per_token);
			cJSON_AddNumberToObject(tr, "utilisation", sp.utilisation);
			cJSON_AddNumberToObject(tr, "scaling_efficiency", sp.scaling);
		}
		if (tps > 0 && e->rq.has_dataset_tokens) {
			double hours = e->rq.dataset_tokens / tps / 3600.0;
			double epochs = e->rq.has_epochs ? e->rq.epochs : 1.0;
			cJSON_AddNumberToObject(tr, "hours_per_epoch", hours);
			cJSON_AddNumberToObject(tr, "epochs", epochs);
			cJSON_AddNumberToObject(tr, "total_hours", hours * epochs);
			/* usd_per_hour is per GPU: the run pays for every GPU it uses. */
			if (e->rq.has_usd_per_hour)
				cJSON_AddNumberToObject(tr, "cost_usd",
							hours * epochs * e->rq.usd_per_hour *
								(double)r.n_gpus);
			else
				cJSON_AddNullToObject(tr, "cost_usd");
		} else {
			cJSON_AddNullToObject(tr, "hours_per_epoch");
			cJSON_AddNullToObject(tr, "total_hours");
			cJSON_AddNullToObject(tr, "cost_usd");
		}
	}
	if (r.n_gpus > 1)
		assume(e, "strategy: %s%s over %d GPUs on %lld node(s)%s",
		       train_strategy_name(s.strategy),
		       s.offload ? (s.offload == TRAIN_OFFLOAD_OPTIMIZER ?
					    " with the optimizer on "
					    "the host" :
					    " with optimizer and weights "
					    "on the host") :
				   "",
		       r.n_gpus, (long long)nodes, want_auto ? " (the cheapest that fits)" : "");
	rc = 0;
	return rc;
}

/* Reads "lora_targets": PEFT module names, or "all-linear". */
static int est_lora_targets(const cJSON *v, unsigned *out, struct api_reply *reply)
{
	static const struct {
		const char *name;
		unsigned bit;
	} names[] = {{"q_proj", TRAIN_LORA_Q},       {"k_proj", TRAIN_LORA_K},
		     {"v_proj", TRAIN_LORA_V},       {"o_proj", TRAIN_LORA_O},
		     {"gate_proj", TRAIN_LORA_GATE}, {"up_proj", TRAIN_LORA_UP},
		     {"down_proj", TRAIN_LORA_DOWN}, {"all-linear", TRAIN_LORA_ALL_LINEAR}};
	const cJSON *item;
	unsigned bits = 0;

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0 || cJSON_GetArraySize(v) > 16)
		return api_error(
			reply, RF_E_INVALID_VALUE, "lora_targets",
			"lora_targets must be a list of module names (q_proj, k_proj, "
			"v_proj, o_proj, gate_proj, up_proj, down_proj) or [\"all-linear\"]");
	cJSON_ArrayForEach(item, v)
	{
		unsigned bit = 0;
		for (size_t i = 0; cJSON_IsString(item) && i < sizeof(names) / sizeof(names[0]);
		     i++)
			if (strcmp(item->valuestring, names[i].name) == 0)
				bit = names[i].bit;
		if (!bit)
			return api_error(
				reply, RF_E_INVALID_VALUE, "lora_targets",
				"lora_targets names an unknown module; use q_proj, k_proj, "
				"v_proj, o_proj, gate_proj, up_proj, down_proj or all-linear");
		bits |= bit;
	}
	*out = bits;
	return 0;
}

/* Reads "tensor_split": up to RF_MAX_DEVICES non-negative proportions, not all zero. */
static int est_tensor_split(const cJSON *v, struct est_request *rq, struct api_reply *reply)
{
	const cJSON *x;
	double sum = 0;

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) < 1 ||
	    cJSON_GetArraySize(v) > RF_MAX_DEVICES)
		return api_error(reply, RF_E_INVALID_VALUE, "tensor_split",
				 "tensor_split must be a list of 1 to %d proportions, one per GPU",
				 RF_MAX_DEVICES);
	rq->n_split = 0;
	cJSON_ArrayForEach(x, v)
	{
		if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || x->valuedouble < 0 ||
		    x->valuedouble > 1e6)
			return api_error(reply, RF_E_INVALID_VALUE, "tensor_split",
					 "tensor_split must hold proportions in [0, 1000000]");
		rq->split[rq->n_split++] = x->valuedouble;
		sum += x->valuedouble;
	}
	if (sum <= 0)
		return api_error(reply, RF_E_INVALID_VALUE, "tensor_split",
				 "tensor_split needs at least one GPU with a share above 0");
	return 0;
}

/* ---- the route --------------------------------------------------------------------------- */

/* Adds model.quantization: what the checkpoint's quantization_config says and the bytes it
 * stores (the safetensors headers' when they were read, else the formula's). Returns 0 or
 * RF_E_NOMEM. */
static int est_quant_json(struct est *e, cJSON *model)
{
	struct hfq_bytes b;
	cJSON *q;
	int rc = hfq_checkpoint_bytes(&e->arch, &e->quant, &b);

	if (rc < 0)
		return rc == RF_E_NOMEM ? rc : 0;
	q = api_hf_quant_json(&e->quant, &b, e->has_checkpoint ? e->checkpoint.data_bytes : -1);
	if (!q || !cJSON_AddItemToObject(model, "quantization", q)) {
		cJSON_Delete(q);
		return RF_E_NOMEM;
	}
	if (!e->has_checkpoint)
		assume(e,
		       "model: the %s checkpoint's bytes (%.2f GB) counted from its "
		       "quantization_config, as the library stores them",
		       hfq_method_name(e->quant.method), (double)b.total / 1e9);
	if (e->rq.mode == EST_INFERENCE && !(e->rq.has_runtime && e->rq.runtime == EST_RT_VLLM))
		assume(e,
		       "weights: llama.cpp runs a GGUF converted from the model, so its quant sets "
		       "the weights, not the checkpoint's %s format",
		       hfq_method_name(e->quant.method));
	return 0;
}

int api_estimate_object(const struct api_env *env, const cJSON *body, cJSON **result,
			struct api_reply *out)
{
	struct est *e = est_new();
	cJSON *root = NULL, *model, *hw, *arr;
	int rc;

	if (!e)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	if (!cJSON_IsObject(body)) {
		rc = api_error(out, RF_E_INVALID_VALUE, NULL, "the request must be a JSON object");
		goto done;
	}
	rc = jm_map(body, est_fields, sizeof(est_fields) / sizeof(est_fields[0]), &e->rq, out);
	if (rc < 0)
		goto done;
	if (!e->rq.has_mode)
		e->rq.mode = EST_INFERENCE;
	if (cJSON_GetObjectItemCaseSensitive(body, "lora_targets")) {
		rc = est_lora_targets(cJSON_GetObjectItemCaseSensitive(body, "lora_targets"),
				      &e->rq.lora_targets, out);
		if (rc < 0)
			goto done;
	}
	if (cJSON_GetObjectItemCaseSensitive(body, "tensor_split")) {
		rc = est_tensor_split(cJSON_GetObjectItemCaseSensitive(body, "tensor_split"),
				      &e->rq, out);
		if (rc < 0)
			goto done;
	}
	rc = est_model(env, e, cJSON_GetObjectItemCaseSensitive(body, "model"), out);
	if (rc < 0)
		goto done;
	rc = est_hardware(env, e, cJSON_GetObjectItemCaseSensitive(body, "hardware"), out);
	if (rc < 0)
		goto done;
	if (hw_fingerprint(&e->hw, e->fingerprint, sizeof(e->fingerprint)) < 0)
		e->fingerprint[0] = '\0';

	root = cJSON_CreateObject();
	if (!root) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	model = cJSON_AddObjectToObject(root, "model");
	if (model) {
		cJSON_AddStringToObject(model, "id", e->model_id);
		cJSON_AddStringToObject(model, "source", e->model_source);
		cJSON_AddStringToObject(model, "model_type", e->arch.model_type);
		cJSON_AddNumberToObject(model, "params_total", (double)e->params.total);
		cJSON_AddNumberToObject(model, "params_active", (double)e->params.active);
		if (e->arch.max_position_embeddings > 0)
			cJSON_AddNumberToObject(model, "max_position_embeddings",
						(double)e->arch.max_position_embeddings);
		cJSON_AddNumberToObject(model, "n_layers",
					(double)(e->arch.n_layers + e->arch.n_encoder_layers));
		if (e->has_checkpoint)
			cJSON_AddItemToObject(model, "checkpoint",
					      api_checkpoint_json(&e->checkpoint, &e->folder_info));
		if (e->quantized) {
			rc = est_quant_json(e, model);
			if (rc < 0) {
				rc = api_error(out, rc, NULL, NULL);
				goto done;
			}
		}
	}
	cJSON_AddStringToObject(root, "mode", est_modes[e->rq.mode]);
	hw = cJSON_AddObjectToObject(root, "hardware");
	if (hw) {
		cJSON_AddStringToObject(hw, "source", e->hw_source);
		if (e->hw.profile_id[0])
			cJSON_AddStringToObject(hw, "profile_id", e->hw.profile_id);
		else
			cJSON_AddNullToObject(hw, "profile_id");
		cJSON_AddStringToObject(hw, "backend", e->hw.backend);
		cJSON_AddNumberToObject(hw, "gpus", e->hw.n_gpus);
		cJSON_AddStringToObject(hw, "fingerprint", e->fingerprint);
	}
	rc = est_runtime_fields(e, out);
	if (rc == 0)
		rc = e->rq.mode != EST_INFERENCE  ? est_training(env, e, root, out) :
		     e->rq.runtime == EST_RT_VLLM ? est_vllm(env, e, root, out) :
						    est_inference(env, e, root, out);
	if (rc < 0)
		goto done;
	arr = cJSON_AddArrayToObject(root, "assumptions");
	for (int i = 0; arr && i < e->n_assumptions; i++)
		api_json_append(arr, cJSON_CreateString(e->assumptions[i]));
	*result = root;
	root = NULL;
	rc = 0;
done:
	cJSON_Delete(root);
	est_release(e);
	return rc;
}

int api_estimate(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	cJSON *body = NULL, *result = NULL;
	char *json;
	int rc = jm_parse_body(req, false, &body, out);

	if (rc < 0)
		return rc;
	rc = api_estimate_object(env, body, &result, out);
	cJSON_Delete(body);
	if (rc < 0)
		return rc;
	json = api_json_print(result);
	cJSON_Delete(result);
	if (!json)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	api_reply_json(out, 200, json);
	return 0;
}

/* ---- the planning routes' input ------------------------------------------------------------- */

static int plan_weights(void *ctx, const struct model_arch *a, int ftype,
			struct rf_mem_weights *out)
{
	const struct est *e = ctx;

	if (e->gguf)
		return ftype == e->ftype ? (*out = e->weights, 0) : RF_E_INVALID_VALUE;
	return api_memo_weights(a, ftype, out);
}

/* Allocates an input whose estimate is in training mode (a model named for fine-tuning) or
 * inference mode. Returns it, or NULL when out of memory. */
static struct api_plan_input *plan_input_new(bool training)
{
	struct api_plan_input *in = calloc(1, sizeof(*in));
	struct est *e = est_new();

	if (!in || !e) {
		free(in);
		est_release(e);
		return NULL;
	}
	in->est = e;
	e->rq.mode = training ? EST_LORA : EST_INFERENCE;
	return in;
}

/* Fills the model's side of in from its estimate. */
static void plan_input_model(struct api_plan_input *in)
{
	struct est *e = in->est;

	in->arch = &e->arch;
	in->params = &e->params;
	in->entry = e->entry;
	in->model_id = e->model_id;
	in->model_source = e->model_source;
	in->gguf_ftype = e->gguf ? e->ftype : -1;
	in->n_assumptions = e->n_assumptions;
	in->assumptions = (const char(*)[API_PLAN_NOTE_LEN])e->assumptions;
}

int api_model_input(const struct api_env *env, const cJSON *model, struct api_plan_input **out,
		    struct api_reply *err)
{
	struct api_plan_input *in = plan_input_new(true);
	int rc;

	*out = NULL;
	if (!in)
		return api_error(err, RF_E_NOMEM, NULL, NULL);
	if ((rc = est_model(env, in->est, model, err)) < 0) {
		api_plan_input_free(in);
		return rc;
	}
	plan_input_model(in);
	*out = in;
	return 0;
}

int api_plan_input(const struct api_env *env, const cJSON *model, const cJSON *hardware,
		   const char *hardware_profile, struct api_plan_input **out, struct api_reply *err)
{
	struct api_plan_input *in = plan_input_new(false);
	struct est *e = in ? in->est : NULL;
	struct plan_machine *pm;
	int rc;

	*out = NULL;
	if (!in)
		return api_error(err, RF_E_NOMEM, NULL, NULL);
	if (hardware_profile) {
		e->rq.has_hardware_profile = true;
		snprintf(e->rq.hardware_profile, sizeof(e->rq.hardware_profile), "%s",
			 hardware_profile);
	}
	if ((rc = est_model(env, e, model, err)) < 0 ||
	    (rc = est_hardware(env, e, hardware, err)) < 0) {
		api_plan_input_free(in);
		return rc;
	}
	pm = &in->machine;
	pm->n_dev = est_devices(e, pm->dev, &pm->host, pm->dev_total_bytes);
	pm->ram_total_bytes = e->hw.memory.total_bytes;
	est_speed_devices(env, e, &pm->speed);
	pm->threads = pm->speed.host.threads;
	/* vLLM runs on CUDA and ROCm GPUs (as est_vllm takes them). */
	for (int i = 0; i < e->hw.n_gpus && pm->n_vgpu < RF_MAX_DEVICES &&
			(strcmp(e->hw.backend, "cuda") == 0 || strcmp(e->hw.backend, "rocm") == 0);
	     i++) {
		const struct hw_gpu *hg = &e->hw.gpus[i];
		struct vllm_gpu *g = &pm->vgpu[pm->n_vgpu];
		if (strcmp(hg->vendor, "intel") == 0 || hg->memory_total_bytes <= 0)
			continue;
		g->total_bytes = hg->memory_total_bytes;
		g->free_bytes = hg->memory_free_bytes;
		g->a100 = strstr(hg->name, "A100") != NULL;
		pm->n_vgpu++;
	}
	plan_input_model(in);
	in->hw = &e->hw;
	in->profile_id = e->hw.profile_id;
	*out = in;
	return 0;
}

int api_plan_input_set_entry(struct api_plan_input *in, const struct model_entry *me)
{
	struct est *e = in->est;
	const char *bad = NULL;
	int rc;

	gguf_free(e->gguf);
	e->gguf = NULL;
	e->ftype = -1;
	e->entry = me;
	e->arch = me->arch;
	snprintf(e->model_id, sizeof(e->model_id), "%s", me->id);
	snprintf(e->model_source, sizeof(e->model_source), "catalog");
	if (model_arch_validate(&e->arch, &bad) < 0)
		return RF_E_INVALID_VALUE;
	if ((rc = api_memo_params(&e->arch, &e->params)) < 0)
		return rc;
	in->entry = me;
	in->gguf_ftype = -1;
	return 0;
}

void api_plan_input_free(struct api_plan_input *in)
{
	if (!in)
		return;
	est_release(in->est);
	free(in);
}

/* plan_vllm_facts_fn over the process's memo. */
static int plan_vllm_facts(void *ctx, const struct model_arch *a, struct vllm_facts *out)
{
	(void)ctx;
	return api_memo_vllm_facts(a, out);
}

void api_plan_model(struct api_plan_input *in, struct plan_model *m)
{
	memset(m, 0, sizeof(*m));
	m->arch = in->arch;
	m->params = in->params;
	m->weights = plan_weights;
	m->weights_ctx = in->est;
	m->vllm_facts = plan_vllm_facts;
	m->fixed_ftype = in->gguf_ftype;
	/* gpt-oss is released with its experts in MXFP4: that is the model, not a quantization
	 * of it, and llama.cpp runs it as such. */
	m->native_mxfp4 = in->gguf_ftype < 0 && strcmp(in->arch->model_type, "gpt_oss") == 0;
	m->vllm_missing = plan_vllm_missing(in->entry);
}
