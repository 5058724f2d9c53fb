/*
 * POST /api/config (and `rigfit config`): turns a model, a machine and a use case into the
 * settings and the command line of llama-server (or vllm serve). The decision is the planner's
 * (core/plan/plan_infer.h): it searches the weight formats, KV cache types, GPU layers, MoE
 * experts in host memory and n_ctx with the estimator as its oracle and returns the best setup
 * for the use case's stated objective, with the Pareto front of the others as `alternatives`.
 * This file maps the request to the planner's terms and renders its answer; the chosen
 * setup is put to the estimator once more for metadata.estimate, in structs on the model and
 * machine resolved once (api_estimate_resolved), so a config this route writes is one
 * /api/estimate and /api/validate accept as it is.
 *
 * When nothing fits the answer is 422 (field model) with the memory the smallest setup needs.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/estimate_request.h"
#include "api/json_alloc.h"
#include "api/json_print.h"
#include "api/jsonmap.h"
#include "api/plan_quality_json.h"
#include "api/rope_settings.h"
#include "api/runtime_config.h"
#include "core/text.h"
#include "core/err.h"
#include "core/fit/estimate.h"
#include "core/fit/speed.h"
#include "core/hw/hw.h"
#include "core/plan/plan_infer.h"
#include "core/plan/plan_machine.h"
#include "core/plan/plan_rope.h"
#include "core/fit/quant.h"

/* Threads written when the physical cores are not known: the ones the speed is estimated at,
 * so that the command runs what the attached estimate costs. */
#define CFG_DEFAULT_THREADS SPEED_ASSUMED_HOST_THREADS
#define GIB (1024.0 * 1024.0 * 1024.0)

enum cfg_runtime {
	CFG_LLAMA_CPP,
	CFG_VLLM
};

static const char *const cfg_runtimes[] = {"llama.cpp", "vllm", NULL};

struct cfg_request {
	int use_case;
	bool has_use_case;
	char precision[24];
	bool has_precision;
	int64_t n_ctx, n_parallel;
	bool has_n_ctx, has_n_parallel;
	int runtime;
	bool has_runtime;
	double min_tps;
	bool has_min_tps;
	char hardware_profile[64];
	bool has_hardware_profile;
	bool use_mmap;
	bool has_use_mmap;
};

#define F(name, kind, field, size, lo, hi, has)                                                    \
	{                                                                                          \
		name, kind, offsetof(struct cfg_request, field), size, lo, hi, false,              \
			offsetof(struct cfg_request, has), NULL                                    \
	}
#define E(name, field, has, choices)                                                               \
	{                                                                                          \
		name, JM_ENUM, offsetof(struct cfg_request, field), 0, 0, 0, false,                \
			offsetof(struct cfg_request, has), choices                                 \
	}

static const struct jm_field cfg_fields[] = {
	{"model", JM_ANY, 0, 0, 0, 0, true, 0, NULL},
	{"hardware", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	E("use_case", use_case, has_use_case, plan_use_case_names),
	F("precision", JM_STRING, precision, sizeof(((struct cfg_request *)0)->precision), 0, 0,
	  has_precision),
	F("n_ctx", JM_INT_OR_MAX, n_ctx, 0, 1, 1 << 24, has_n_ctx),
	F("n_parallel", JM_INT, n_parallel, 0, 1, 256, has_n_parallel),
	E("runtime", runtime, has_runtime, cfg_runtimes),
	F("min_tokens_per_s", JM_DOUBLE, min_tps, 0, 0.01, 100000, has_min_tps),
	F("hardware_profile", JM_STRING, hardware_profile,
	  sizeof(((struct cfg_request *)0)->hardware_profile), 0, 0, has_hardware_profile),
	F("use_mmap", JM_BOOL, use_mmap, 0, 0, 0, has_use_mmap),
};

struct cfg {
	const struct api_env *env;
	const cJSON *body;
	struct cfg_request rq;
	bool gguf, vllm;
	const char *gguf_path;
	struct api_plan_input *in;
	/* The catalog entry whose artifacts the commands name: NULL when the request named
	 * another release (a coder, an older Instruct) than the entry's own, served as named. */
	const struct model_entry *art;
	const char *served;          /* that release's id, or the model's */
	struct model_entry *release; /* owned: the entry as it serves a release the catalog lists
					 artifacts of (model_release_entry); art points here */
	struct plan_request preq;
	struct plan_answer *ans;
	cJSON *assumptions;
};

static void cfg_note(cJSON *arr, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void cfg_note(cJSON *arr, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	rf_note_vformat(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	api_json_append(arr, cJSON_CreateString(buf));
}

static const char *kv_name(int t)
{
	return t == RF_GT_Q8_0 ? "q8_0" : t == RF_GT_Q4_0 ? "q4_0" : "f16";
}

/* Bits per weight of the tensors most of scheme name gets. */
static double cfg_bpw(const char *name)
{
	int ft = rf_ftype_from_name(name);
	int t = ft >= 0 ? rf_ftype_default_type(ft) : -1;

	return t >= 0 ? rf_gtype_bpw(t) : 0;
}

struct cfg_cmd {
	char buf[2048];
	size_t len;
};

static void cmd_add(struct cfg_cmd *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void cmd_add(struct cfg_cmd *m, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (m->len >= sizeof(m->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(m->buf + m->len, sizeof(m->buf) - m->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		m->len += (size_t)n < sizeof(m->buf) - m->len ? (size_t)n :
								sizeof(m->buf) - m->len - 1;
}

/* Whether s is safe to put on a command line without quoting. */
static bool cfg_shell_safe(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("-_./:+=@,", *s)))
			return false;
	return true;
}

/* Appends word, single-quoted when it needs to be. */
static void cmd_word(struct cfg_cmd *m, const char *w)
{
	if (cfg_shell_safe(w) && w[0]) {
		cmd_add(m, " %s", w);
		return;
	}
	cmd_add(m, " '");
	for (; *w; w++) {
		if (*w == '\'')
			cmd_add(m, "'\\''");
		else
			cmd_add(m, "%c", *w);
	}
	cmd_add(m, "'");
}

/* The rope scaling ch's context needs, against the model's positions and the scaling its
 * card documents (api_rope_for). */
static void cfg_rope(const struct cfg *c, const struct plan_choice *ch, struct plan_rope *out)
{
	api_rope_for(c->in->arch, c->in->entry ? &c->in->entry->long_ctx : NULL, &ch->setup, out);
}

static int64_t cfg_ngl(const struct cfg *c, const struct plan_choice *ch)
{
	if (c->in->machine.n_dev == 0)
		return 0;
	return ch->setup.p.n_gpu_layers < 0 ? model_n_layer(c->in->arch) + 1 :
					      ch->setup.p.n_gpu_layers;
}

static const char *cfg_precision(const struct plan_choice *ch)
{
	if (ch->setup.runtime == PLAN_RT_VLLM)
		return ch->setup.vformat == PLAN_VLLM_MXFP4 ?
			       "mxfp4" :
		       ch->setup.vformat == PLAN_VLLM_BF16 ?
			       "bf16" :
			       plan_vllm_format_flag(ch->setup.vformat);
	return rf_ftype_name(ch->setup.ftype) ? rf_ftype_name(ch->setup.ftype) : "unknown";
}

static int cfg_threads(const struct cfg *c)
{
	return c->in->machine.threads > 0 ? c->in->machine.threads : CFG_DEFAULT_THREADS;
}

/* The name a placeholder file takes: the served release's, without its owner. */
static const char *cfg_base_name(const struct cfg *c)
{
	const char *chat = model_chat_id(c->art), *id = chat ? chat : c->served;
	const char *slash = strrchr(id, '/');

	return slash ? slash + 1 : id;
}

/* Where llama-server gets the weights of ch: the local file, a catalog repository holding
 * the file type (-hf REPO:QUANT, which llama-server downloads itself), else a placeholder path
 * the user replaces (cfg_assumptions says so). */
static void cfg_llama_model(const struct cfg *c, const struct plan_choice *ch, struct cfg_cmd *m)
{
	const struct model_gguf_repo *g = c->gguf ? NULL :
						    model_gguf_repo_for(c->art, ch->setup.ftype);
	char path[256];

	if (c->gguf) {
		cmd_add(m, " -m");
		cmd_word(m, c->gguf_path);
	} else if (g && (g->ftypes & (g->ftypes - 1)) == 0) {
		cmd_add(m, " -hf"); /* one file type: the repository's only file */
		cmd_word(m, g->repo);
	} else if (g) {
		snprintf(path, sizeof(path), "%s:%s", g->repo, cfg_precision(ch));
		cmd_add(m, " -hf");
		cmd_word(m, path);
	} else {
		snprintf(path, sizeof(path), "/path/to/%s-%s.gguf", cfg_base_name(c),
			 cfg_precision(ch));
		cmd_add(m, " -m");
		cmd_word(m, path);
	}
}

/* llama-server's command line for ch. */
static void cfg_llama_command(const struct cfg *c, const struct plan_choice *ch, struct cfg_cmd *m)
{
	const struct rf_mem_estimate *e = &ch->res.mem;
	const struct rf_infer_params *p = &ch->setup.p;
	struct plan_rope r;

	cmd_add(m, "llama-server");
	cfg_llama_model(c, ch, m);
	cmd_add(m, " -ngl %lld -c %lld -t %d -b %lld -ub %lld", (long long)cfg_ngl(c, ch),
		(long long)p->n_ctx, cfg_threads(c), (long long)p->n_batch, (long long)p->n_ubatch);
	/* Said either way: llama.cpp's default, -fa auto, depends on the backend it finds. */
	cmd_add(m, " -fa %s", p->flash_attn ? "on" : "off");
	if (p->type_k != RF_GT_F16)
		cmd_add(m, " -ctk %s -ctv %s", kv_name(p->type_k), kv_name(p->type_v));
	if (p->n_cpu_moe > 0)
		cmd_add(m, " --n-cpu-moe %lld", (long long)p->n_cpu_moe);
	if (e->n_devices > 1) {
		cmd_add(m, " --tensor-split ");
		for (int i = 0; i < e->n_devices; i++)
			cmd_add(m, "%s%lld", i ? "," : "", (long long)e->per_device[i].layers);
	}
	if (p->n_parallel > 1)
		cmd_add(m, " -np %lld", (long long)p->n_parallel);
	/* The pinned llama.cpp has no --no-mmap: its --load-mode none reads the weights into
	 * buffers (tests/data/llama-server-args.txt). */
	if (!p->use_mmap)
		cmd_add(m, " --load-mode none");
	cfg_rope(c, ch, &r);
	if (r.need == PLAN_ROPE_SCALED)
		cmd_add(m, " --rope-scaling yarn --rope-scale %g --yarn-orig-ctx %lld",
			r.use.factor, (long long)r.use.orig_ctx);
}

/* vllm serve's command line for ch. */
static void cfg_vllm_command(const struct cfg *c, const struct plan_choice *ch, struct cfg_cmd *m)
{
	struct plan_vllm_ckpt ck;
	struct plan_rope r;
	char json[192];

	/* The planner proposes no format without a checkpoint (plan_vllm_missing). */
	if (plan_vllm_checkpoint(c->art, c->served, ch->setup.vformat, &ck) < 0) {
		ck.repo = c->served;
		ck.quantization = plan_vllm_format_flag(ch->setup.vformat);
	}
	cmd_add(m, "vllm serve");
	cmd_word(m, ck.repo);
	cmd_add(m, " --tensor-parallel-size %d --max-model-len %lld --gpu-memory-utilization %.2f",
		ch->setup.tp, (long long)ch->setup.p.n_ctx, ch->setup.vllm_util);
	if (ck.quantization)
		cmd_add(m, " --quantization %s", ck.quantization);
	if (ch->setup.p.type_k != RF_GT_F16)
		cmd_add(m, " --kv-cache-dtype fp8");
	if (ch->setup.max_num_seqs > 0)
		cmd_add(m, " --max-num-seqs %lld", (long long)ch->setup.max_num_seqs);
	/* vLLM's docs (Context Extension): --rope-scaling is gone; the model's rope_parameters
	 * are overridden whole, rope_theta with them, and vLLM then allows --max-model-len up to
	 * the original window x factor. */
	cfg_rope(c, ch, &r);
	if (r.need == PLAN_ROPE_SCALED) {
		snprintf(json, sizeof(json),
			 "{\"rope_parameters\":{\"rope_type\":\"yarn\",\"factor\":%.1f,"
			 "\"original_max_position_embeddings\":%lld,\"rope_theta\":%.0f}}",
			 r.use.factor, (long long)r.use.orig_ctx, r.use.rope_theta);
		cmd_add(m, " --hf-overrides");
		cmd_word(m, json);
	}
}

static void cfg_command(const struct cfg *c, const struct plan_choice *ch, cJSON *o)
{
	struct cfg_cmd m = {.len = 0};

	if (ch->setup.runtime == PLAN_RT_VLLM)
		cfg_vllm_command(c, ch, &m);
	else
		cfg_llama_command(c, ch, &m);
	cJSON_AddStringToObject(o, "command", m.buf);
}

/* The settings object of ch, in the runtime's names. */
static cJSON *cfg_settings(const struct cfg *c, const struct plan_choice *ch)
{
	cJSON *set = cJSON_CreateObject(), *split;
	const struct rf_infer_params *p = &ch->setup.p;
	const struct rf_mem_estimate *e = &ch->res.mem;
	struct plan_rope r;

	if (!set)
		return NULL;
	/* Rope scaling, only where the context needs it: the same three names for both
	 * runtimes (vLLM's --hf-overrides carries them as rope_parameters' rope_type, factor and
	 * original_max_position_embeddings). */
	cfg_rope(c, ch, &r);
	api_rope_settings(&r, set);
	if (ch->setup.runtime == PLAN_RT_VLLM) {
		const char *q = plan_vllm_format_flag(ch->setup.vformat);
		cJSON_AddNumberToObject(set, "tensor_parallel_size", ch->setup.tp);
		cJSON_AddNumberToObject(set, "max_model_len", (double)p->n_ctx);
		cJSON_AddNumberToObject(set, "gpu_memory_utilization", ch->setup.vllm_util);
		if (q)
			cJSON_AddStringToObject(set, "quantization", q);
		else
			cJSON_AddNullToObject(set, "quantization");
		cJSON_AddStringToObject(set, "kv_cache_dtype",
					p->type_k != RF_GT_F16 ? "fp8" : "auto");
		if (ch->setup.max_num_seqs > 0)
			cJSON_AddNumberToObject(set, "max_num_seqs",
						(double)ch->setup.max_num_seqs);
		else
			cJSON_AddNullToObject(set, "max_num_seqs");
		cJSON_AddNumberToObject(set, "kv_cache_tokens", (double)ch->res.kv_tokens);
		return set;
	}
	cJSON_AddNumberToObject(set, "n_gpu_layers", (double)cfg_ngl(c, ch));
	cJSON_AddNumberToObject(set, "n_cpu_moe", (double)p->n_cpu_moe);
	cJSON_AddNumberToObject(set, "n_threads", cfg_threads(c));
	cJSON_AddNumberToObject(set, "n_batch", (double)p->n_batch);
	cJSON_AddNumberToObject(set, "n_ubatch", (double)p->n_ubatch);
	cJSON_AddNumberToObject(set, "n_ctx", (double)p->n_ctx);
	cJSON_AddNumberToObject(set, "n_parallel", (double)p->n_parallel);
	split = cJSON_AddArrayToObject(set, "tensor_split");
	for (int i = 0; split && e->n_devices > 1 && i < e->n_devices; i++)
		api_json_append(split, cJSON_CreateNumber((double)e->per_device[i].layers));
	cJSON_AddBoolToObject(set, "flash_attn", p->flash_attn);
	cJSON_AddBoolToObject(set, "use_mmap", p->use_mmap);
	cJSON_AddStringToObject(set, "cache_type_k", kv_name(p->type_k));
	cJSON_AddStringToObject(set, "cache_type_v", kv_name(p->type_v));
	return set;
}

static double round_to(double v, double unit)
{
	return round(v / unit) * unit;
}

/* The planner's own estimate of ch: memory, fit, speed and quality. */
static cJSON *cfg_plan_estimate(const struct plan_choice *ch)
{
	const struct rf_mem_estimate *e = &ch->res.mem;
	cJSON *o = cJSON_CreateObject(), *mem, *pd;

	if (!o)
		return NULL;
	mem = cJSON_AddObjectToObject(o, "memory");
	if (mem) {
		cJSON_AddNumberToObject(mem, "weights_bytes", (double)e->weights_bytes);
		cJSON_AddNumberToObject(mem, "kv_cache_bytes", (double)e->kv_cache_bytes);
		cJSON_AddNumberToObject(mem, "total_bytes", (double)e->total_bytes);
		cJSON_AddNumberToObject(mem, "host_bytes", (double)e->host_bytes);
		pd = cJSON_AddArrayToObject(mem, "per_device");
		for (int i = 0; pd && i < e->n_devices; i++) {
			cJSON *d = cJSON_CreateObject();
			if (!d)
				break;
			cJSON_AddStringToObject(d, "device", e->per_device[i].device);
			cJSON_AddNumberToObject(d, "layers", (double)e->per_device[i].layers);
			cJSON_AddNumberToObject(d, "bytes", (double)e->per_device[i].bytes);
			cJSON_AddNumberToObject(d, "budget_bytes",
						(double)e->per_device[i].budget_bytes);
			api_json_append(pd, d);
		}
	}
	cJSON_AddBoolToObject(o, "fits", ch->res.fits);
	cJSON_AddNumberToObject(o, "utilization", round_to(e->utilization, 0.001));
	cJSON_AddNumberToObject(o, "decode_tokens_per_s", round_to(ch->res.decode_tps, 0.1));
	cJSON_AddNumberToObject(o, "aggregate_tokens_per_s", round_to(ch->res.aggregate_tps, 0.1));
	cJSON_AddNumberToObject(o, "n_ctx_per_sequence", (double)ch->ctx);
	if (ch->kld >= 0)
		cJSON_AddNumberToObject(o, "kl_divergence", ch->kld);
	else
		cJSON_AddNullToObject(o, "kl_divergence");
	return o;
}

static cJSON *cfg_alternatives(const struct cfg *c)
{
	cJSON *arr = cJSON_CreateArray();

	for (int i = 0; arr && i < c->ans->n_alt; i++) {
		const struct plan_choice *ch = &c->ans->alt[i];
		cJSON *o = cJSON_CreateObject();
		if (!o)
			break;
		cJSON_AddStringToObject(o, "runtime",
					ch->setup.runtime == PLAN_RT_VLLM ? "vllm" : "llama.cpp");
		cJSON_AddStringToObject(o, "precision", cfg_precision(ch));
		api_json_add(o, "settings", cfg_settings(c, ch));
		api_json_add(o, "estimate", cfg_plan_estimate(ch));
		cJSON_AddStringToObject(o, "why", ch->why);
		cfg_command(c, ch, o);
		api_json_append(arr, o);
	}
	return arr;
}

/* vLLM's setup goes to runtime vllm: the same capacity model the planner sized it with. */
static void cfg_vllm_settings(const struct plan_choice *ch, struct api_estimate_request *rq)
{
	const struct rf_infer_params *p = &ch->setup.p;

	rq->runtime = API_EST_RT_VLLM;
	rq->has_runtime = true;
	snprintf(rq->precision, sizeof(rq->precision), "%s", cfg_precision(ch));
	rq->has_precision = true;
	rq->tp = ch->setup.tp;
	rq->has_tp = true;
	rq->gpu_util = ch->setup.vllm_util;
	rq->has_gpu_util = true;
	rq->max_model_len = p->n_ctx;
	rq->has_max_model_len = true;
	if (ch->setup.max_num_seqs > 0) {
		rq->max_num_seqs = ch->setup.max_num_seqs;
		rq->has_max_num_seqs = true;
	}
	rq->vllm_kv = jm_choice(api_est_vllm_kv, p->type_k != RF_GT_F16 ? "fp8" : "auto");
	rq->has_vllm_kv = rq->vllm_kv >= 0;
}

static void cfg_llama_settings(const struct cfg *c, const struct plan_choice *ch,
			       struct api_estimate_request *rq)
{
	const struct rf_infer_params *p = &ch->setup.p;

	if (!c->gguf) {
		snprintf(rq->quant, sizeof(rq->quant), "%s", cfg_precision(ch));
		rq->has_quant = true;
	}
	rq->n_ctx = p->n_ctx;
	rq->n_batch = p->n_batch;
	rq->n_ubatch = p->n_ubatch;
	rq->n_parallel = p->n_parallel;
	rq->n_gpu_layers = p->n_gpu_layers;
	rq->n_cpu_moe = p->n_cpu_moe;
	rq->has_n_ctx = rq->has_n_batch = rq->has_n_ubatch = rq->has_n_parallel = true;
	rq->has_n_gpu_layers = rq->has_n_cpu_moe = true;
	rq->kv_type = jm_choice(api_est_kv_types, kv_name(p->type_k));
	rq->has_kv_type = rq->kv_type >= 0;
	rq->flash_attn = p->flash_attn;
	rq->has_flash_attn = true;
	if (!p->use_mmap) {
		rq->use_mmap = false;
		rq->has_use_mmap = true;
	}
}

/* The estimator's answer for the chosen setup (metadata.estimate), asked in structs of the
 * model and machine resolved once (no request built, nothing resolved again). Returns 0 and
 * *est, or a negative rf_err with the envelope in out. */
static int cfg_estimate(const struct cfg *c, const struct plan_choice *ch, cJSON **est,
			struct api_reply *out)
{
	struct api_estimate_request rq;
	struct plan_rope r;

	api_estimate_request_init(&rq);
	if (c->rq.has_hardware_profile) {
		snprintf(rq.hardware_profile, sizeof(rq.hardware_profile), "%s",
			 c->rq.hardware_profile);
		rq.has_hardware_profile = true;
	}
	if (ch->setup.runtime == PLAN_RT_VLLM)
		cfg_vllm_settings(ch, &rq);
	else
		cfg_llama_settings(c, ch, &rq);
	cfg_rope(c, ch, &r);
	api_rope_request(&r, &rq);
	return api_estimate_resolved(c->env, c->in, &rq, est, out);
}

static cJSON *cfg_answer(struct cfg *c, cJSON *est)
{
	const struct plan_choice *best = &c->ans->best;
	cJSON *root = cJSON_CreateObject(), *meta, *arr, *mo;
	const cJSON *speed = NULL;
	double vram = 0;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "runtime", c->vllm ? "vllm" : "llama.cpp");
	cJSON_AddStringToObject(root, "backend",
				c->in->hw->backend[0] ? c->in->hw->backend : "cpu");
	if (est)
		mo = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(est, "model"), true);
	else if ((mo = cJSON_CreateObject()) != NULL) {
		cJSON_AddStringToObject(mo, "id", c->in->model_id);
		cJSON_AddStringToObject(mo, "source", c->in->model_source);
		cJSON_AddStringToObject(mo, "model_type", c->in->arch->model_type);
		cJSON_AddNumberToObject(mo, "params_total", (double)c->in->params->total);
		cJSON_AddNumberToObject(mo, "params_active", (double)c->in->params->active);
		if (c->in->arch->max_position_embeddings > 0)
			cJSON_AddNumberToObject(mo, "max_position_embeddings",
						(double)c->in->arch->max_position_embeddings);
		cJSON_AddNumberToObject(mo, "n_layers", (double)model_n_layer(c->in->arch));
	}
	api_json_add(root, "model", mo);
	api_json_add(root, "settings", cfg_settings(c, best));
	cJSON_AddStringToObject(root, "objective", c->ans->objective);
	if (c->ans->runtime_why[0])
		cJSON_AddStringToObject(root, "runtime_choice", c->ans->runtime_why);
	else
		cJSON_AddNullToObject(root, "runtime_choice");
	meta = cJSON_AddObjectToObject(root, "metadata");
	if (meta) {
		if (c->in->profile_id[0])
			cJSON_AddStringToObject(meta, "hardware_profile", c->in->profile_id);
		else
			cJSON_AddNullToObject(meta, "hardware_profile");
		cJSON_AddStringToObject(meta, "use_case", plan_use_case_name(c->rq.use_case));
		cJSON_AddStringToObject(meta, "precision", cfg_precision(best));
		if (est)
			speed = cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(est, "speed"),
				"decode_tokens_per_s");
		if (cJSON_IsNumber(speed))
			cJSON_AddNumberToObject(meta, "expected_tokens_per_sec",
						round(speed->valuedouble * 10.0) / 10.0);
		else if (best->res.decode_tps > 0)
			cJSON_AddNumberToObject(meta, "expected_tokens_per_sec",
						round(best->res.decode_tps * 10.0) / 10.0);
		else
			cJSON_AddNullToObject(meta, "expected_tokens_per_sec");
		for (int i = 0; i < best->res.mem.n_devices; i++)
			vram += (double)best->res.mem.per_device[i].bytes;
		cJSON_AddNumberToObject(meta, "estimated_vram_usage_gb", round(vram / 1e7) / 100.0);
		if (best->kld >= 0)
			cJSON_AddNumberToObject(meta, "kl_divergence", best->kld);
		else
			cJSON_AddNullToObject(meta, "kl_divergence");
		cJSON_AddBoolToObject(meta, "below_speed_floor", c->ans->below_floor);
		cJSON_AddNumberToObject(meta, "setups_evaluated", c->ans->evaluated);
		api_json_add(meta, "estimate",
			     est ? cJSON_Duplicate(est, true) : cfg_plan_estimate(best));
	}
	arr = cJSON_AddArrayToObject(root, "downgrades");
	for (int i = 0; arr && i < c->ans->n_notes; i++)
		api_json_append(arr, cJSON_CreateString(c->ans->notes[i]));
	api_json_add(root, "alternatives", cfg_alternatives(c));
	cJSON_AddStringToObject(root, "why", best->why);
	cfg_command(c, best, root);
	api_json_add(root, "assumptions", cJSON_Duplicate(c->assumptions, true));
	return root;
}

/* ---- the route -------------------------------------------------------------------------- */

/* Checks what the planner cannot: precision, the model's form for the runtime. */
static int cfg_check(struct cfg *c, struct api_reply *out)
{
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(c->body, "model");
	const cJSON *g = cJSON_IsObject(model) ? cJSON_GetObjectItemCaseSensitive(model, "gguf") :
						 NULL;

	c->gguf = g != NULL;
	c->gguf_path = cJSON_IsString(g) ? g->valuestring : "model.gguf";
	c->vllm = c->rq.has_runtime && c->rq.runtime == CFG_VLLM;
	if (c->vllm && c->rq.has_use_mmap)
		return api_error(
			out, RF_E_INVALID_VALUE, "use_mmap",
			"use_mmap is llama.cpp's (--no-mmap); vLLM loads its weights itself");
	if (!c->rq.has_use_case)
		c->rq.use_case = PLAN_GENERAL;
	if (c->rq.has_precision) {
		int ft = rf_ftype_from_name(c->rq.precision);
		if (ft < 0)
			return api_error(out, RF_E_INVALID_VALUE, "precision",
					 "precision '%.20s' is not a GGUF quantization type (F16, "
					 "Q8_0, Q6_K, Q5_K_M, Q4_K_M, IQ4_XS...)",
					 c->rq.precision);
		if (c->gguf)
			return api_error(out, RF_E_INVALID_VALUE, "precision",
					 "a GGUF file has its own quantization; leave precision "
					 "out");
	}
	if (c->rq.has_n_ctx && c->rq.n_ctx > 0 && c->rq.has_n_parallel &&
	    c->rq.n_ctx < c->rq.n_parallel)
		return api_error(
			out, RF_E_INVALID_VALUE, "n_ctx",
			"n_ctx %lld is shared by the %lld sequences of n_parallel: give each "
			"at least one token",
			(long long)c->rq.n_ctx, (long long)c->rq.n_parallel);
	if (c->vllm && c->gguf)
		return api_error(out, RF_E_INVALID_VALUE, "runtime",
				 "vLLM serves Hugging Face checkpoints; name the model by its id "
				 "or architecture, not a GGUF file");
	return 0;
}

/* A context asked for beyond the longest the model reaches is refused, never cut short: the
 * trained positions, or with the rope scaling its card documents (YaRN for Qwen2.5 and Qwen3),
 * which the command then sets. Past that llama.cpp would only warn and answer worse. Each
 * sequence's share counts (llama.cpp's n_ctx is shared by n_parallel). "max" is capped there
 * by the planner. */
static int cfg_check_positions(const struct cfg *c, struct api_reply *out)
{
	const struct model_rope *doc = c->in->entry ? &c->in->entry->long_ctx : NULL;
	int64_t np = c->rq.has_n_parallel ? c->rq.n_parallel : 1;
	int64_t each = c->rq.has_n_ctx && c->rq.n_ctx > 0 ? c->rq.n_ctx / (c->vllm ? 1 : np) : 0;
	struct plan_rope r;

	plan_rope_decide(c->in->arch, doc, each, &r);
	if (r.need != PLAN_ROPE_BEYOND)
		return 0;
	if (r.max > r.native)
		return api_error(out, RF_E_INVALID_VALUE, "n_ctx",
				 "n_ctx %lld gives each sequence %lld positions, beyond the %lld "
				 "the model reaches with the YaRN scaling its card documents (x%g "
				 "from %lld; %lld trained): ask for at most %lld",
				 (long long)c->rq.n_ctx, (long long)each, (long long)r.max,
				 doc->factor, (long long)doc->orig_ctx, (long long)r.native,
				 (long long)(c->vllm ? r.max : r.max * np));
	return api_error(
		out, RF_E_INVALID_VALUE, "n_ctx",
		"n_ctx %lld gives each sequence %lld positions, beyond the %lld the model "
		"was trained for (max_position_embeddings), and its card documents no rope "
		"scaling to go further: ask for at most %lld",
		(long long)c->rq.n_ctx, (long long)each, (long long)r.native,
		(long long)(c->vllm ? r.native : r.native * np));
}

/* The planner's request. */
static void cfg_plan_request(struct cfg *c)
{
	struct plan_request *r = &c->preq;

	plan_request_default(r);
	r->use_case = (enum plan_use_case)c->rq.use_case;
	/* No runtime named: vLLM is searched beside llama.cpp where it runs, unless the model is
	 * a GGUF file or the precision a GGUF type. */
	r->runtime = c->vllm ? PLAN_RT_VLLM :
		     c->rq.has_runtime || c->gguf || c->rq.has_precision || c->rq.has_use_mmap ?
			       PLAN_RT_LLAMA_CPP :
			       PLAN_RT_AUTO;
	r->no_mmap = c->rq.has_use_mmap && !c->rq.use_mmap;
	if (c->rq.has_precision && !c->vllm)
		r->ftype = rf_ftype_from_name(c->rq.precision);
	if (c->rq.has_precision && c->vllm) {
		/* vLLM's formats: bf16, fp8, awq (an int4 checkpoint). */
		double bits = cfg_bpw(c->rq.precision);
		r->vformat = bits >= 16 ? PLAN_VLLM_BF16 :
			     bits >= 5  ? PLAN_VLLM_FP8 :
					  PLAN_VLLM_AWQ;
		cfg_note(c->assumptions,
			 "precision: vLLM does not load GGUF k-quants; %s maps to %s",
			 c->rq.precision,
			 r->vformat == PLAN_VLLM_BF16 ?
				 "bf16 weights" :
				 plan_vllm_format_flag((enum plan_vllm_format)r->vformat));
	}
	if (c->rq.has_n_ctx)
		r->n_ctx = c->rq.n_ctx < 0 ? -1 : c->rq.n_ctx;
	if (c->rq.has_n_parallel)
		r->n_parallel = c->rq.n_parallel;
	if (c->rq.has_min_tps)
		r->min_tps = c->rq.min_tps;
}

/* Which release the commands serve: the one the request named when the catalog counts it
 * with another model (model_other_release), else the catalog entry's, with its artifacts. */
static void cfg_release(struct cfg *c)
{
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(c->body, "model");
	const char *name =
		cJSON_IsString(model) ?
			model->valuestring :
			cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(model, "id"));
	const char *other = model_other_release(c->in->entry, name);
	const struct model_release *r = model_release_find(c->in->entry, other);

	c->art = other ? NULL : c->in->entry;
	c->served = other ? other : c->in->model_id;
	/* A release with its own artifacts in the catalog is served from them. */
	if (r && (c->release = malloc(sizeof(*c->release))) != NULL) {
		model_release_entry(c->in->entry, r, c->release);
		c->art = c->release;
		c->served = c->release->id;
	}
}

/* A model llama.cpp has no architecture for (pm->no_llama_cpp: Llama 3.2 Vision, llama.cpp
 * issue 9643 "architecture is unsupported") runs only in vLLM. Returns 0, or the 422 (field
 * runtime) when the request would run it in llama.cpp. */
static int cfg_llama_cpp_runs(const struct cfg *c, const struct plan_model *pm,
			      struct api_reply *out)
{
	bool vllm_here = c->in->machine.n_dev > 0 && (strcmp(c->in->hw->backend, "cuda") == 0 ||
						      strcmp(c->in->hw->backend, "rocm") == 0);

	if (!pm->no_llama_cpp || c->preq.runtime == PLAN_RT_VLLM ||
	    (c->preq.runtime == PLAN_RT_AUTO && vllm_here))
		return 0;
	return api_error(out, RF_E_INVALID_VALUE, "runtime",
			 "llama.cpp does not run %s: it has no Llama 3.2 Vision (mllama) "
			 "architecture, so no GGUF of it loads in llama-server; use runtime vllm "
			 "on NVIDIA or AMD GPUs, or a vision model llama.cpp runs (gemma-3, "
			 "Llama 4 Scout)",
			 c->in->model_id);
}

/* The 422 when nothing fits: how much the smallest setup needs. */
static int cfg_nothing_fits(const struct cfg *c, struct api_reply *out)
{
	double need = (double)c->ans->min_total_bytes, offer = 0;
	int64_t ram = c->in->machine.host.budget_bytes;

	for (int i = 0; i < c->in->machine.n_dev; i++)
		offer += (double)c->in->machine.dev[i].budget_bytes;
	/* vLLM alone: its capacity refuses before any memory figure of the smallest setup. */
	if (need <= 0 && c->vllm)
		return api_error(
			out, RF_E_INVALID_VALUE, "model",
			"no vLLM configuration fits: on these GPUs (%.1f GiB available) "
			"the weights and vLLM's reserves leave no KV cache for one request "
			"at the smallest length; more or larger GPUs, or runtime llama.cpp "
			"(layers in RAM), may",
			offer / GIB);
	/* Unified memory: the RAM is the GPU's; layers "on the CPU" would only crowd the OS. */
	if (c->in->machine.n_dev == 1 && c->in->machine.dev[0].unified)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "no configuration fits: the model needs at least %.1f GiB of the "
				 "GPU's working set of the unified memory, %.1f GiB available "
				 "there (layers on the CPU would share the same memory)",
				 need / GIB, offer / GIB);
	if (c->in->machine.n_dev > 0 && ram >= 0)
		return api_error(
			out, RF_E_INVALID_VALUE, "model",
			"no configuration fits: the model needs at least %.1f GiB on the "
			"GPU%s (%.1f GiB available there) or, with layers on the CPU, more "
			"than this machine's %.1f GiB of RAM",
			need / GIB, c->in->machine.n_dev > 1 ? "s" : "", offer / GIB,
			(double)ram / GIB);
	if (c->in->machine.n_dev > 0)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "no configuration fits: the model needs at least %.1f GiB on the "
				 "GPU%s, %.1f GiB available there",
				 need / GIB, c->in->machine.n_dev > 1 ? "s" : "", offer / GIB);
	if (ram >= 0)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "no configuration fits: the model needs at least %.1f GiB, "
				 "this machine offers %.1f GiB",
				 need / GIB, (double)ram / GIB);
	return api_error(out, RF_E_INVALID_VALUE, "model",
			 "no configuration fits: the model needs at least %.1f GiB of memory",
			 need / GIB);
}

static void cfg_assumptions(struct cfg *c)
{
	struct plan_rope r;

	for (int i = 0; i < c->in->n_assumptions; i++)
		cfg_note(c->assumptions, "%s", c->in->assumptions[i]);
	cfg_rope(c, &c->ans->best, &r);
	if (r.need == PLAN_ROPE_SCALED)
		cfg_note(c->assumptions,
			 "rope scaling: YaRN x%g from %lld positions (reaching %lld), as the model "
			 "card documents beyond the %lld it was trained for; set only because this "
			 "context needs it, as a static factor can cost quality on short texts",
			 r.use.factor, (long long)r.use.orig_ctx,
			 (long long)plan_rope_reach(&r.use, r.native), (long long)r.native);

	if (c->in->machine.threads <= 0 && !c->vllm)
		cfg_note(c->assumptions,
			 "n_threads: %d, the threads the speed is estimated at, as the number of "
			 "physical cores is not known; set -t to this host's physical cores",
			 CFG_DEFAULT_THREADS);
	if (!c->gguf && model_chat_id(c->art) && strcmp(model_chat_id(c->art), c->served) != 0)
		cfg_note(c->assumptions,
			 "model: the command serves %s, the instruction-tuned release of %s, as "
			 "every use case here is a chat or coding one",
			 model_chat_id(c->art), c->served);
	if (!c->gguf && !c->vllm) {
		const struct model_gguf_repo *g =
			model_gguf_repo_for(c->art, c->ans->best.setup.ftype);
		const char *chat = model_chat_id(c->art);
		if (g)
			cfg_note(c->assumptions,
				 "command: -hf %s makes llama-server download the %s file of %s "
				 "from that Hugging Face repository (the catalog's source for it)",
				 g->repo, cfg_precision(&c->ans->best), chat ? chat : c->served);
		else
			cfg_note(
				c->assumptions,
				"command: no published GGUF of %s as %s is known to the catalog; "
				"/path/to/%s-%s.gguf stands for the file you make: python "
				"convert_hf_to_gguf.py on the Hugging Face folder (--outtype bf16), "
				"then llama-quantize to %s, and put its path after -m",
				chat ? chat : c->served, cfg_precision(&c->ans->best),
				cfg_base_name(c), cfg_precision(&c->ans->best),
				cfg_precision(&c->ans->best));
	}
	if (c->vllm) {
		cfg_note(c->assumptions,
			 "vLLM memory: vLLM's start-up profiling as /api/estimate models it (KV "
			 "cache = gpu_memory_utilization x GPU memory - weights - activation peak "
			 "- non-torch memory); max_model_len is the longest request the cache "
			 "holds for each of the n_parallel sequences");
		struct plan_vllm_ckpt ck = {NULL, NULL};
		if (plan_vllm_checkpoint(c->art, c->served, c->ans->best.setup.vformat, &ck) == 0 &&
		    !ck.quantization && strcmp(ck.repo, c->served) != 0 &&
		    c->ans->best.setup.vformat != PLAN_VLLM_BF16)
			cfg_note(c->assumptions,
				 "model: %s is the catalog's %s checkpoint of %s; vLLM reads its "
				 "quantization from the checkpoint's config",
				 ck.repo, cfg_precision(&c->ans->best), c->served);
		else if (ck.quantization)
			cfg_note(c->assumptions,
				 "quantization: fp8 is quantized by vLLM as it loads %s's bf16 "
				 "weights (the catalog lists no FP8 checkpoint of it)",
				 ck.repo);
		if (c->ans->best.setup.tp < c->in->machine.n_vgpu)
			cfg_note(c->assumptions,
				 "tensor_parallel_size: %d of %d GPUs (a power of two that divides "
				 "the attention heads)",
				 c->ans->best.setup.tp, c->in->machine.n_vgpu);
	}
}

int api_config(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	struct cfg c = {.env = env};
	struct plan_quality *q = NULL;
	struct plan_model pm;
	cJSON *body = NULL, *est = NULL;
	int rc = jm_parse_body(req, false, &body, out);

	if (rc < 0)
		return rc;
	c.body = body;
	c.assumptions = cJSON_CreateArray();
	c.ans = malloc(sizeof(*c.ans));
	q = malloc(sizeof(*q));
	if (!c.assumptions || !c.ans || !q) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	rc = jm_map(body, cfg_fields, sizeof(cfg_fields) / sizeof(cfg_fields[0]), &c.rq, out);
	if (rc < 0 || (rc = cfg_check(&c, out)) < 0)
		goto done;
	rc = api_plan_input(env, cJSON_GetObjectItemCaseSensitive(body, "model"),
			    cJSON_GetObjectItemCaseSensitive(body, "hardware"),
			    c.rq.has_hardware_profile ? c.rq.hardware_profile : NULL, &c.in, out);
	if (rc < 0)
		goto done;
	if (c.vllm && (c.in->machine.n_dev == 0 || (strcmp(c.in->hw->backend, "cuda") != 0 &&
						    strcmp(c.in->hw->backend, "rocm") != 0))) {
		rc = api_error(out, RF_E_INVALID_VALUE, "runtime",
			       "vLLM needs NVIDIA (CUDA) or AMD (ROCm) GPUs; this machine's "
			       "backend is %s",
			       c.in->hw->backend[0] ? c.in->hw->backend : "cpu");
		goto done;
	}
	if ((rc = cfg_check_positions(&c, out)) < 0 || (rc = api_plan_quality(env, q, out)) < 0)
		goto done;
	/* The runs recorded on this machine refine the planner's speeds as they refine the
	 * estimate of its pick (metadata.estimate). */
	if ((rc = api_plan_input_history(env, c.in)) < 0) {
		rc = api_error(out, rc, NULL, NULL);
		goto done;
	}
	cfg_plan_request(&c);
	cfg_release(&c);
	api_plan_model(c.in, &pm);
	if ((rc = cfg_llama_cpp_runs(&c, &pm, out)) < 0)
		goto done;
	pm.vllm_missing = plan_vllm_missing(c.art);
	/* The commands name a published file: the file types its repositories hold. */
	for (int i = 0; !c.gguf && c.art && i < c.art->artifacts.n_gguf; i++)
		pm.gguf_held |= c.art->artifacts.gguf[i].ftypes;
	if (c.vllm && c.preq.vformat >= 0 && (pm.vllm_missing & (1u << c.preq.vformat))) {
		rc = api_error(out, RF_E_INVALID_VALUE, "precision",
			       "the catalog lists no %s checkpoint of %s, and vLLM loads %s only "
			       "from one; leave precision out, or ask for Q8_0 (fp8) or F16 (bf16)",
			       plan_vllm_format_flag((enum plan_vllm_format)c.preq.vformat),
			       c.served,
			       plan_vllm_format_flag((enum plan_vllm_format)c.preq.vformat));
		goto done;
	}
	if (c.preq.runtime == PLAN_RT_VLLM) {
		char why[PLAN_NOTE_LEN];
		if (plan_machine_vllm_unable(c.in->hw, why, sizeof(why))) {
			rc = api_error(out, RF_E_INVALID_VALUE, "runtime",
				       "%s; use runtime llama.cpp", why);
			goto done;
		}
	}
	rc = plan_infer(&pm, &c.in->machine, q, &c.preq, c.ans);
	if (rc < 0) {
		rc = api_error(out, rc == RF_E_NOMEM ? RF_E_NOMEM : RF_E_INVALID_VALUE,
			       rc == RF_E_NOMEM ? NULL : "model", NULL);
		goto done;
	}
	if (!c.ans->found) {
		rc = cfg_nothing_fits(&c, out);
		goto done;
	}
	c.vllm = c.ans->best.setup.runtime == PLAN_RT_VLLM;
	if ((rc = cfg_estimate(&c, &c.ans->best, &est, out)) < 0)
		goto done;
	cfg_assumptions(&c);
	rc = api_reply_cjson(out, 200, cfg_answer(&c, est));
done:
	cJSON_Delete(est);
	cJSON_Delete(c.assumptions);
	cJSON_Delete(body);
	api_plan_input_free(c.in);
	free(c.release);
	free(c.ans);
	free(q);
	return rc;
}
