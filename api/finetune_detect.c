/*
 * POST /api/finetune/detect: which models a machine can fine-tune for a task, ModelForge's
 * way. The machine (this host's snapshot, a described one or a device profile) is classified
 * by seed 000's rules (hw_tier on the largest GPU's memory and the RAM, in GiB), or the tier is
 * forced with compute_specs. The tier's template in profiles/tiers.json gives the settings
 * (4-bit, batch, gradient accumulation, sequence length, provider, strategy), adapted to what
 * the host can run (bitsandbytes 4-bit needs CUDA or ROCm, Unsloth needs NVIDIA, bf16 needs
 * compute capability 8.0, AMD CDNA 2+ or Apple). Candidates are the catalog models for the
 * task, the tier's own models first, then by parameters, largest first; each is asked of the
 * estimator with the settings, which shrink (sequence length halving down to 256, batch 1,
 * then 4-bit) before a model is dropped, so every model offered fits. The answer carries the
 * seed's shape and ModelForge's flat one with the same values.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/finetune_detect.h"
#include "api/hardware_input.h"
#include "api/jsonmap.h"
#include "api/json_alloc.h"
#include "core/classify.h"
#include "core/device.h"
#include "core/err.h"
#include "core/hw.h"
#include "core/hw_profile.h"
#include "core/model.h"

#define FD_GIB 1073741824.0
#define FD_MAX_OFFERED 8
#define FD_MIN_SEQ 256
#define FD_MAX_ASSUMPTIONS 24
#define FD_ASSUMPTION_LEN 256

enum fd_task {
	FD_TEXT_GENERATION,
	FD_SUMMARIZATION,
	FD_EXTRACTIVE_QA,
	FD_QA
};

static const char *const fd_tasks[] = {"text-generation", "summarization",
				       "extractive-question-answering", "question-answering", NULL};
static const char *const fd_tiers[] = {"low_end", "mid_range", "high_end", NULL};

struct fd_request {
	int task;
	bool has_task;
	int compute_specs;
	bool has_compute_specs;
	char hardware_profile[64];
	bool has_hardware_profile;
};

static const struct jm_field fd_fields[] = {
	{"task", JM_ENUM, offsetof(struct fd_request, task), 0, 0, 0, true,
	 offsetof(struct fd_request, has_task), fd_tasks},
	{"compute_specs", JM_ENUM, offsetof(struct fd_request, compute_specs), 0, 0, 0, false,
	 offsetof(struct fd_request, has_compute_specs), fd_tiers},
	{"hardware", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	{"hardware_profile", JM_STRING, offsetof(struct fd_request, hardware_profile),
	 sizeof(((struct fd_request *)0)->hardware_profile), 0, 0, false,
	 offsetof(struct fd_request, has_hardware_profile), NULL},
};

/* Fine-tuning settings as ModelForge names them. */
struct fd_settings {
	bool use_4bit;
	int64_t batch;
	int64_t accum;
	int64_t seq;
	const char *strategy_16bit; /* "sft" or "lora": the strategy when not 4-bit */
	const char *provider;
};

/* Everything one answer works on; large (a snapshot), so it lives on the heap. */
struct fd {
	struct fd_request rq;
	struct hw_snapshot hw;
	const cJSON *hardware;    /* the request's "hardware", or NULL */
	const struct hw_gpu *gpu; /* the largest GPU, or NULL */
	bool bf16;
	bool allow_4bit;
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
	vsnprintf(f->assumptions[f->n_assumptions++], FD_ASSUMPTION_LEN, fmt, ap);
	va_end(ap);
}

static void fd_lower(char *s)
{
	for (; *s; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s = (char)(*s - 'A' + 'a');
}

/* ---- the machine ------------------------------------------------------------------------ */

/* A described machine, its GPUs named without memory completed from their profiles, as the
 * estimator does. */
static int fd_hw_described(const struct api_env *env, struct fd *f, struct api_reply *out)
{
	int rc = api_hardware_from_json(f->hardware, "hardware", &f->hw, out);

	if (rc < 0)
		return rc;
	for (int i = 0; i < f->hw.n_gpus; i++) {
		struct hw_gpu *g = &f->hw.gpus[i];
		const struct device_profile *p = NULL;
		if (g->memory_total_bytes >= 0)
			continue;
		if (!env->devices || device_resolve(env->devices, g->name, &p) < 0 || !p ||
		    p->memory_gib <= 0) {
			char field[48];
			snprintf(field, sizeof(field), "hardware.gpus[%d].name", i);
			return api_error(out, RF_E_INVALID_VALUE, field,
					 "no device profile gives the memory of '%.60s'; add "
					 "memory_total_bytes",
					 g->name);
		}
		g->memory_total_bytes = (int64_t)(p->memory_gib * FD_GIB);
		g->memory_free_bytes = g->memory_total_bytes;
		g->unified_memory = p->unified;
		if (!g->vendor[0]) {
			hw_strlcpy(g->vendor, p->vendor, sizeof(g->vendor));
			fd_lower(g->vendor);
		}
	}
	hw_classify(&f->hw);
	hw_apply_device_profiles(&f->hw, env->devices);
	return 0;
}

/* A device profile as a machine of one GPU (or only a CPU), as the estimator builds it. */
static int fd_hw_profile(const struct api_env *env, struct fd *f, struct api_reply *out)
{
	const struct device_profile *p = NULL;
	int found = env->devices ? device_resolve(env->devices, f->rq.hardware_profile, &p) :
				   RF_E_NOT_FOUND;
	struct hw_gpu *g;

	if (found == RF_E_CONFLICT)
		return api_error(out, RF_E_INVALID_VALUE, "hardware_profile",
				 "'%.60s' matches several device profiles; name one by its id in "
				 "profiles/devices.json",
				 f->rq.hardware_profile);
	if (found < 0 || !p)
		return api_error(out, RF_E_INVALID_VALUE, "hardware_profile",
				 "no device profile is called '%.60s'", f->rq.hardware_profile);
	hw_snapshot_init(&f->hw);
	hw_strlcpy(f->hw.profile_id, p->id, sizeof(f->hw.profile_id));
	if (p->kind == DEVICE_KIND_CPU) {
		if (p->cpu_cores > 0)
			f->hw.cpu.physical_cores = p->cpu_cores;
		hw_classify(&f->hw);
		return 0;
	}
	g = &f->hw.gpus[0];
	memset(g, 0, sizeof(*g));
	f->hw.n_gpus = 1;
	hw_strlcpy(g->name, p->name, sizeof(g->name));
	hw_strlcpy(g->vendor, p->vendor, sizeof(g->vendor));
	fd_lower(g->vendor);
	hw_strlcpy(g->compute_capability, p->compute_capability, sizeof(g->compute_capability));
	hw_strlcpy(g->architecture, p->architecture, sizeof(g->architecture));
	g->unified_memory = p->unified;
	g->memory_total_bytes = p->memory_gib > 0 ? (int64_t)(p->memory_gib * FD_GIB) : HW_UNKNOWN;
	g->memory_free_bytes = g->memory_total_bytes;
	g->memory_used_bytes = g->memory_gtt_bytes = HW_UNKNOWN;
	g->memory_bus_width_bits = g->max_memory_clock_mhz = HW_UNKNOWN;
	g->memory_bandwidth_gbs = p->memory_bandwidth_gbs;
	g->fp16_tflops = p->fp16_tflops;
	if (p->unified) {
		f->hw.memory.total_bytes = g->memory_total_bytes;
		f->hw.memory.available_bytes = g->memory_total_bytes;
		g->memory_total_bytes = device_gpu_working_set_bytes(p, f->hw.memory.total_bytes);
		g->memory_free_bytes = g->memory_total_bytes;
	}
	hw_classify(&f->hw);
	return 0;
}

static int fd_hardware(const struct api_env *env, struct fd *f, struct api_reply *out)
{
	int rc;

	if (f->hardware && f->rq.has_hardware_profile)
		return api_error(out, RF_E_INVALID_VALUE, "hardware_profile",
				 "give hardware or hardware_profile, not both");
	if (f->hardware)
		rc = fd_hw_described(env, f, out);
	else if (f->rq.has_hardware_profile)
		rc = fd_hw_profile(env, f, out);
	else if (!env->snapshot)
		rc = api_error(out, RF_E_UNAVAILABLE, NULL,
			       "the first hardware scan has not finished yet; retry shortly");
	else {
		f->hw = env->snapshot->hw;
		rc = 0;
	}
	if (rc < 0)
		return rc;
	for (int i = 0; i < f->hw.n_gpus; i++)
		if (f->hw.gpus[i].memory_total_bytes > 0 &&
		    (!f->gpu || f->hw.gpus[i].memory_total_bytes > f->gpu->memory_total_bytes))
			f->gpu = &f->hw.gpus[i];
	return 0;
}

/* bf16: NVIDIA compute capability 8.0 or later, AMD CDNA 2 or later, Apple silicon. */
static bool fd_bf16(const struct api_env *env, const struct hw_gpu *g)
{
	const struct device_profile *p = NULL;
	const char *cc = g->compute_capability, *arch = g->architecture;

	if (env->devices &&
	    device_resolve_mem(env->devices, g->name, g->memory_total_bytes, &p) == 0 && p) {
		if (!cc[0])
			cc = p->compute_capability;
		if (!arch[0])
			arch = p->architecture;
	}
	if (strcmp(g->vendor, "apple") == 0)
		return true;
	if (strcmp(g->vendor, "nvidia") == 0)
		return cc[0] && strtod(cc, NULL) >= 8.0;
	if (strcmp(g->vendor, "amd") == 0)
		return strstr(arch, "gfx90a") || strstr(arch, "gfx94") || strstr(arch, "gfx95") ||
		       strstr(arch, "CDNA 2") || strstr(arch, "CDNA 3") || strstr(arch, "CDNA 4");
	return false;
}

/* The tier: seed 000's rules on the largest GPU and the RAM, or the one compute_specs names. */
static const char *fd_tier(struct fd *f, const char **detected)
{
	double vram = f->gpu ? (double)f->gpu->memory_total_bytes / FD_GIB : 0.0;
	int64_t ram_b = hw_effective_ram_bytes(&f->hw);
	const char *t = f->hw.compute_profile[0] ? f->hw.compute_profile : NULL;

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

/* ---- the template ----------------------------------------------------------------------- */

static const cJSON *fd_tier_object(const cJSON *tiers, const char *id)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(tiers, "tiers"))
	{
		const cJSON *tid = cJSON_GetObjectItemCaseSensitive(t, "id");
		if (cJSON_IsString(tid) && strcmp(tid->valuestring, id) == 0)
			return t;
	}
	return NULL;
}

static int64_t fd_int(const cJSON *o, const char *name, int64_t dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	return cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 1e6 ?
		       (int64_t)v->valuedouble :
		       dflt;
}

/* The tier's settings, adapted to what this host can run. */
static void fd_template(struct fd *f, const cJSON *tier, struct fd_settings *s)
{
	const cJSON *set = cJSON_GetObjectItemCaseSensitive(tier, "settings");
	const cJSON *prov = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(tier, "provider"), "primary");
	const cJSON *st;
	const char *backend = f->hw.backend;

	s->use_4bit = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(set, "use_4bit"));
	s->batch = fd_int(set, "per_device_train_batch_size", 1);
	s->accum = fd_int(set, "gradient_accumulation_steps", 1);
	s->seq = fd_int(set, "max_seq_length", 512);
	s->strategy_16bit = "lora";
	cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(tier, "strategies"))
	{
		if (cJSON_IsString(st) && strcmp(st->valuestring, "sft") == 0)
			s->strategy_16bit = "sft";
	}
	s->provider = cJSON_IsString(prov) && strcmp(prov->valuestring, "unsloth") == 0 ?
			      "unsloth" :
			      "huggingface";
	f->allow_4bit = strcmp(backend, "cuda") == 0 || strcmp(backend, "rocm") == 0;
	if (s->use_4bit && !f->allow_4bit) {
		s->use_4bit = false;
		fd_assume(f,
			  "use_4bit: false; bitsandbytes 4-bit needs CUDA or ROCm and this host "
			  "runs %s, so adapters train on 16-bit weights%s",
			  backend[0] ? backend : "no GPU backend",
			  strcmp(backend, "metal") == 0 ? " (PyTorch MPS)" : "");
	}
	if (strcmp(s->provider, "unsloth") == 0 && strcmp(backend, "cuda") != 0) {
		s->provider = "huggingface";
		fd_assume(f, "provider: huggingface; Unsloth needs an NVIDIA GPU on Linux or WSL");
	}
	if (s->strategy_16bit[0] == 's')
		fd_assume(f, "strategy sft: ModelForge's SFT trains LoRA adapters on the 16-bit "
			     "model; estimated as mode lora");
}

static const char *fd_strategy(const struct fd_settings *s)
{
	return s->use_4bit ? "qlora" : s->strategy_16bit;
}

static cJSON *fd_settings_json(const struct fd *f, const struct fd_settings *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddBoolToObject(o, "use_4bit", s->use_4bit);
	cJSON_AddBoolToObject(o, "bf16", f->bf16);
	cJSON_AddBoolToObject(o, "fp16", f->gpu && !f->bf16);
	cJSON_AddNumberToObject(o, "per_device_train_batch_size", (double)s->batch);
	cJSON_AddNumberToObject(o, "gradient_accumulation_steps", (double)s->accum);
	cJSON_AddNumberToObject(o, "max_seq_length", (double)s->seq);
	cJSON_AddStringToObject(o, "strategy", fd_strategy(s));
	cJSON_AddStringToObject(o, "provider", s->provider);
	return o;
}

/* ---- the candidates --------------------------------------------------------------------- */

static bool fd_task_fits(const struct model_entry *m, int task)
{
	switch (task) {
	case FD_TEXT_GENERATION:
		return (m->tasks & MODEL_TASK_TEXT_GENERATION) && m->arch.family == MODEL_DECODER;
	case FD_SUMMARIZATION:
		return (m->tasks & MODEL_TASK_SUMMARIZATION) != 0;
	case FD_EXTRACTIVE_QA:
		return (m->tasks & MODEL_TASK_EXTRACTIVE_QA) != 0;
	default:
		return (m->tasks & (MODEL_TASK_QUESTION_ANSWERING | MODEL_TASK_EXTRACTIVE_QA)) != 0;
	}
}

static int fd_by_params(const void *a, const void *b)
{
	const struct model_entry *x = *(const struct model_entry *const *)a;
	const struct model_entry *y = *(const struct model_entry *const *)b;

	if (x->params_b != y->params_b)
		return x->params_b < y->params_b ? 1 : -1;
	return strcmp(x->id, y->id);
}

/* Writes the candidates, ranked, to list (room for the catalog) and returns their count. */
static size_t fd_candidates(const struct api_env *env, struct fd *f, const cJSON *tier,
			    const struct model_entry **list)
{
	const char *key = f->rq.task == FD_EXTRACTIVE_QA ? "question-answering" :
							   fd_tasks[f->rq.task];
	const cJSON *tm;
	size_t n = 0, n_tpl;

	cJSON_ArrayForEach(tm, cJSON_GetObjectItemCaseSensitive(
				       cJSON_GetObjectItemCaseSensitive(tier, "models"), key))
	{
		const struct model_entry *m =
			cJSON_IsString(tm) ? model_catalog_find(env->models, tm->valuestring) :
					     NULL;
		bool dup = false;
		if (!cJSON_IsString(tm))
			continue;
		if (!m) {
			fd_assume(f, "the tier's model %.120s is not in the catalog; not estimated",
				  tm->valuestring);
			continue;
		}
		if (!fd_task_fits(m, f->rq.task))
			continue;
		for (size_t i = 0; i < n; i++)
			dup = dup || list[i] == m;
		if (!dup)
			list[n++] = m;
	}
	n_tpl = n;
	for (size_t i = 0; i < env->models->n; i++) {
		const struct model_entry *m = &env->models->models[i];
		bool dup = false;
		if (!fd_task_fits(m, f->rq.task))
			continue;
		for (size_t j = 0; j < n_tpl; j++)
			dup = dup || list[j] == m;
		if (!dup)
			list[n++] = m;
	}
	qsort(list + n_tpl, n - n_tpl, sizeof(*list), fd_by_params);
	return n;
}

/* Asks the estimator about model m with settings s. Returns 0 and the answer, or < 0 when the
 * estimator refused the question (the envelope is dropped). */
static int fd_estimate(const struct api_env *env, const struct fd *f, const struct model_entry *m,
		       const struct fd_settings *s, cJSON **res)
{
	cJSON *body = cJSON_CreateObject();
	struct api_reply tmp = {0};
	int rc;

	*res = NULL;
	if (!body)
		return RF_E_NOMEM;
	cJSON_AddStringToObject(body, "model", m->id);
	cJSON_AddStringToObject(body, "mode", s->use_4bit ? "qlora" : "lora");
	cJSON_AddNumberToObject(body, "batch_size", (double)s->batch);
	cJSON_AddNumberToObject(body, "seq_len", (double)s->seq);
	cJSON_AddStringToObject(body, "provider", s->provider);
	if (f->hardware)
		api_json_add(body, "hardware", cJSON_Duplicate(f->hardware, true));
	else if (f->rq.has_hardware_profile)
		cJSON_AddStringToObject(body, "hardware_profile", f->rq.hardware_profile);
	rc = api_estimate_object(env, body, res, &tmp);
	api_reply_reset(&tmp);
	cJSON_Delete(body);
	return rc;
}

/* Finds settings under which m fits, shrinking s. Returns true and the answer in *res. */
static bool fd_fit(const struct api_env *env, const struct fd *f, const struct model_entry *m,
		   struct fd_settings *s, cJSON **res)
{
	int64_t mpe = m->arch.max_position_embeddings;

	if (mpe > 0 && s->seq > mpe)
		s->seq = mpe;
	for (;;) {
		if (fd_estimate(env, f, m, s, res) < 0)
			return false;
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(*res, "fits")))
			return true;
		cJSON_Delete(*res);
		*res = NULL;
		if (s->seq > FD_MIN_SEQ)
			s->seq = s->seq / 2 > FD_MIN_SEQ ? s->seq / 2 : FD_MIN_SEQ;
		else if (s->batch > 1) {
			s->accum *= s->batch; /* the same effective batch */
			s->batch = 1;
		} else if (!s->use_4bit && f->allow_4bit)
			s->use_4bit = true;
		else
			return false;
	}
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
	int64_t ram = hw_effective_ram_bytes(&f->hw);
	double vram = f->gpu ? (double)f->gpu->memory_total_bytes / FD_GIB : 0;
	int cores = f->hw.cpu.physical_cores > 0 ? f->hw.cpu.physical_cores :
						   f->hw.cpu.logical_cores;
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
	cJSON_AddStringToObject(root, "backend", f->hw.backend[0] ? f->hw.backend : "cpu");
}

static const char *fd_none_reason(const struct fd *f)
{
	if (!f->gpu)
		return "no GPU with a known memory size: rigfit estimates fine-tuning on a GPU only; "
		       "training on the CPU is possible for the smallest models but very slow and "
		       "not estimated here";
	return "no candidate model fits this GPU even with max_seq_length 256, batch size 1 and "
	       "4-bit weights where the host supports them";
}

int api_finetune_detect(const struct api_env *env, const struct api_request *req,
			struct api_reply *out)
{
	cJSON *body = NULL, *root = NULL, *possible, *options, *per, *est = NULL, *arr;
	const struct model_entry **list = NULL;
	const char *tier_id, *detected = NULL, *recommended = NULL;
	const cJSON *tier;
	struct fd_settings base, best = {0};
	struct fd *f = NULL;
	size_t n = 0;
	int offered = 0, checked = 0, rc;
	char *json;

	rc = jm_parse_body(req, false, &body, out);
	if (rc < 0)
		return rc;
	f = calloc(1, sizeof(*f));
	if (!f) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	rc = jm_map(body, fd_fields, sizeof(fd_fields) / sizeof(fd_fields[0]), &f->rq, out);
	if (rc < 0)
		goto done;
	f->hardware = cJSON_GetObjectItemCaseSensitive(body, "hardware");
	if (!env->tiers || !env->models) {
		rc = api_error(out, RF_E_UNAVAILABLE, NULL, "%s is not loaded",
			       !env->tiers ? "profiles/tiers.json" : "profiles/models.json");
		goto done;
	}
	rc = fd_hardware(env, f, out);
	if (rc < 0)
		goto done;
	f->bf16 = f->gpu && fd_bf16(env, f->gpu);
	tier_id = fd_tier(f, &detected);
	tier = fd_tier_object((const cJSON *)env->tiers, tier_id);
	if (!tier) {
		rc = api_error(out, RF_E_UNAVAILABLE, NULL, "profiles/tiers.json has no tier %s",
			       tier_id);
		goto done;
	}
	fd_template(f, tier, &base);
	list = calloc(env->models->n + 16, sizeof(*list));
	root = cJSON_CreateObject();
	if (!list || !root) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	n = fd_candidates(env, f, tier, list);

	cJSON_AddNumberToObject(root, "status_code", 200);
	cJSON_AddStringToObject(root, "task", fd_tasks[f->rq.task]);
	cJSON_AddStringToObject(root, "profile", tier_id);
	cJSON_AddStringToObject(root, "compute_profile", tier_id);
	cJSON_AddStringToObject(root, "detected_profile", detected);
	cJSON_AddStringToObject(root, "profile_source",
				f->rq.has_compute_specs ? "compute_specs" : "hardware");
	fd_machine_json(f, root);
	api_json_add(root, "settings", fd_settings_json(f, &base));
	possible = cJSON_AddArrayToObject(root, "possible_models");
	options = cJSON_AddArrayToObject(root, "possible_options");
	per = cJSON_AddArrayToObject(root, "model_settings");
	for (size_t i = 0; i < n && offered < FD_MAX_OFFERED && f->gpu; i++) {
		struct fd_settings s = base;
		cJSON *res = NULL, *ms;
		checked++;
		if (!fd_fit(env, f, list[i], &s, &res))
			continue;
		offered++;
		api_json_append(possible, cJSON_CreateString(list[i]->id));
		api_json_append(options, cJSON_CreateString(list[i]->id));
		ms = cJSON_CreateObject();
		if (ms) {
			const cJSON *mem = cJSON_GetObjectItemCaseSensitive(res, "memory");
			const cJSON *u = cJSON_GetObjectItemCaseSensitive(res, "utilization");
			cJSON_AddStringToObject(ms, "model", list[i]->id);
			api_json_add(ms, "settings", fd_settings_json(f, &s));
			cJSON_AddBoolToObject(ms, "shrunk",
					      s.seq != base.seq || s.batch != base.batch ||
						      s.use_4bit != base.use_4bit);
			api_json_add(ms, "memory_total_bytes",
				     cJSON_Duplicate(
					     cJSON_GetObjectItemCaseSensitive(mem, "total_bytes"),
					     true));
			cJSON_AddNumberToObject(ms, "utilization",
						cJSON_IsNumber(u) ? u->valuedouble : 0);
			api_json_append(per, ms);
		}
		if (!recommended) {
			recommended = list[i]->id;
			best = s;
			est = res;
			res = NULL;
		}
		cJSON_Delete(res);
	}
	fd_add_str_or_null(root, "recommended_model", recommended);
	fd_add_str_or_null(root, "model_recommendation", recommended);
	if (recommended) {
		api_json_add(root, "recommended_settings", fd_settings_json(f, &best));
		api_json_add(root, "estimate", est);
		est = NULL;
		cJSON_AddNullToObject(root, "explanation");
	} else {
		cJSON_AddNullToObject(root, "recommended_settings");
		cJSON_AddNullToObject(root, "estimate");
		cJSON_AddStringToObject(root, "explanation", fd_none_reason(f));
	}
	cJSON_AddNumberToObject(root, "candidates_checked", checked);
	fd_assume(f, "available_diskspace_gb: null, the disk is not measured");
	fd_assume(f,
		  "candidates: catalog models for the task (text-generation: decoder models; "
		  "question-answering also takes extractive ones), the tier's own models first, "
		  "then by parameters, largest first; at most %d offered",
		  FD_MAX_OFFERED);
	fd_assume(f,
		  "every model offered fits by the estimator; settings shrink (max_seq_length "
		  "halving to %d, batch 1 with the same effective batch, then 4-bit) before a "
		  "model is dropped; model_settings lists those used",
		  FD_MIN_SEQ);
	if (strcmp(f->hw.backend, "metal") == 0)
		fd_assume(f,
			  "Apple silicon: training runs on PyTorch MPS within the GPU's share of "
			  "the unified memory; slower than CUDA");
	arr = cJSON_AddArrayToObject(root, "assumptions");
	for (int i = 0; arr && i < f->n_assumptions; i++)
		api_json_append(arr, cJSON_CreateString(f->assumptions[i]));
	json = cJSON_PrintUnformatted(root);
	if (!json) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	api_reply_json(out, 200, json);
	rc = 0;
done:
	cJSON_Delete(est);
	cJSON_Delete(root);
	cJSON_Delete(body);
	free(list);
	free(f);
	return rc;
}
