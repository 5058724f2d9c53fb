/*
 * POST /api/recommend (and `rigfit recommend`). Two questions, both answered only through the
 * estimator (api_estimate_object), so a recommendation never disagrees with /api/estimate:
 *
 *  - "Which models fit here?" (the default): every catalog model that serves the task is
 *    estimated on the machine (this host, "hardware" or "hardware_profile"). Inference tries
 *    Q8_0, Q6_K, Q5_K_M, Q4_K_M, IQ4_XS, Q3_K_M and keeps the highest that fits at n_ctx =
 *    max(min_context, min(4096, the model's maximum)), flash attention on where there are GPUs;
 *    fine-tuning tries seq_len 2048, 1024, 512 at batch size 1. The lowest setting is tried
 *    first, so a model that cannot fit costs one estimate. Models are ranked by
 *    score = quality + speed + headroom:
 *      quality  = 10 x log2(1 + params in billions) + a precision bonus (Q8_0 8, Q6_K 6,
 *                 Q5_K_M 5, Q4_K_M 4, IQ4_XS 3, Q3_K_M 1; fine-tuning 0),
 *      speed    = 10 x log10(1 + tokens/s) (decode for inference, training tokens/s),
 *      headroom = 10 x (1 - utilization), at least 0;
 *    each entry says its numbers in `why`.
 *  - "Which hardware runs this model?" ("for": "hardware"): every GPU and SoC profile of
 *    devices.json with a known memory size is estimated with 1, 2, 4 and 8 of a kind (SoCs:
 *    one; fine-tuning: one estimate of the fewest of 1 to 8 that core's strategy search finds
 *    enough, without offloading where any count allows), system RAM assumed large enough,
 *    and the fewest that fit is kept with its strategy, its speed and,
 *    where a price per device-hour is known, usd_per_million_tokens = usd_per_hour x count /
 *    (tokens_per_s x 3600) x 1e6. Counts that cannot fit by memory alone are skipped and the
 *    number of estimates is capped, so a request stays well under a second.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/json_print.h"
#include "api/jsonmap.h"
#include "api/model_memo.h"
#include "api/recommend.h"
#include "api/json_alloc.h"
#include "core/hw/device.h"
#include "core/err.h"
#include "core/fit/estimate.h"
#include "core/fit/model.h"
#include "core/plan/plan_finetune.h"
#include "core/plan/plan_infer.h"
#include "core/fit/train_optimizer.h"
#include "core/fit/train_parallel.h"
#include "core/plan/plan_strategy.h"
#include "api/plan_quality_json.h"

#define REC_DEFAULT_LIMIT 5
#define REC_MAX_LIMIT 50
#define REC_DEFAULT_CTX 4096
#define REC_MAX_ESTIMATES 600 /* per request: a bound on the work of the device scan */
#define REC_GIB 1073741824.0
#define REC_MIN_RAM_GIB 64.0
#define REC_MAX_GPUS 8 /* of a kind, for "for": "hardware" */
#define REC_WHY_LEN 1024

static const char *const rec_modes[] = {"inference", "lora", "qlora", "full", NULL};
static const char *const rec_targets[] = {"models", "hardware", NULL};

enum {
	REC_INFERENCE = 0,
	REC_QLORA = 2,
	REC_FULL = 3
};
/* Which estimator errors concern one candidate only (skipped) rather than the request. */
enum {
	REC_SKIP_MODEL_ERRORS,
	REC_SKIP_HARDWARE_ERRORS
};
enum {
	REC_FOR_MODELS = 0,
	REC_FOR_HARDWARE = 1
};

static const char *const rec_quants[] = {"Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "IQ4_XS", "Q3_K_M"};
static const double rec_quant_bonus[] = {8, 6, 5, 4, 3, 1};
#define REC_N_QUANTS ((int)(sizeof(rec_quants) / sizeof(rec_quants[0])))

static const int64_t rec_seq_lens[] = {2048, 1024, 512};
#define REC_N_SEQ ((int)(sizeof(rec_seq_lens) / sizeof(rec_seq_lens[0])))

struct rec_request {
	char task[48];
	bool has_task;
	char use_case[48];
	bool has_use_case;
	int mode;
	bool has_mode;
	int64_t limit;
	bool has_limit;
	int64_t min_context;
	bool has_min_context;
	char hardware_profile[64];
	bool has_hardware_profile;
	char model[MODEL_ID_LEN];
	bool has_model;
	int target;
	bool has_target;
	double usd_per_hour;
	bool has_usd_per_hour;
	int64_t n_ctx;
	bool has_n_ctx;
	char quant[24];
	bool has_quant;
	double min_tps;
	bool has_min_tps;
};

#define RF_(name, kind, field, size, lo, hi, has)                                                  \
	{                                                                                          \
		name, kind, offsetof(struct rec_request, field), size, lo, hi, false,              \
			offsetof(struct rec_request, has), NULL                                    \
	}
#define RS_(name, field, has)                                                                      \
	RF_(name, JM_STRING, field, sizeof(((struct rec_request *)0)->field), 0, 0, has)
#define RE_(name, field, has, choices)                                                             \
	{                                                                                          \
		name, JM_ENUM, offsetof(struct rec_request, field), 0, 0, 0, false,                \
			offsetof(struct rec_request, has), choices                                 \
	}

static const struct jm_field rec_fields[] = {
	{"hardware", JM_ANY, 0, 0, 0, 0, false, 0, NULL},
	RS_("task", task, has_task),
	RS_("use_case", use_case, has_use_case),
	RE_("mode", mode, has_mode, rec_modes),
	RF_("limit", JM_INT, limit, 0, 1, REC_MAX_LIMIT, has_limit),
	RF_("min_context", JM_INT, min_context, 0, 1, 1 << 24, has_min_context),
	RS_("hardware_profile", hardware_profile, has_hardware_profile),
	{"model", JM_ANY, 0, 0, 0, 0, false, 0, NULL}, /* rec_model: a name or {"id": ...} */
	RE_("for", target, has_target, rec_targets),
	RF_("usd_per_hour", JM_DOUBLE, usd_per_hour, 0, 0, 1e6, has_usd_per_hour),
	RF_("n_ctx", JM_INT, n_ctx, 0, 1, 1 << 24, has_n_ctx),
	RS_("quant", quant, has_quant),
	RF_("min_tokens_per_s", JM_DOUBLE, min_tps, 0, 0.01, 100000, has_min_tps),
};

/* One candidate found to fit: a model (models) or a device and count (hardware). */
struct rec_hit {
	const struct model_entry *model;
	const struct device_profile *device;
	int count;
	int quant; /* index in rec_quants; -1: fine-tuning */
	int64_t n_ctx_or_seq;
	cJSON *answer;          /* the estimator's answer (owned) */
	double tokens_per_s;    /* < 0 unknown */
	double utilization;     /* < 0 unknown */
	double usd_per_hour;    /* per device; < 0 unknown */
	double usd_per_million; /* < 0 unknown */
	double quality, speed, headroom, score;
};

/* Returns the number at a dotted path of o, or dflt when it is absent or not a number. */
static double rec_num(const cJSON *o, const char *a, const char *b, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);

	if (b)
		v = cJSON_GetObjectItemCaseSensitive(v, b);
	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static bool rec_fits(const cJSON *answer)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(answer, "fits"));
}

/* Whether the estimator's error in r concerns one candidate: with REC_SKIP_MODEL_ERRORS, a
 * field that is not the hardware's (the machine and the service concern every candidate);
 * with REC_SKIP_HARDWARE_ERRORS, a field of the hardware (one device that cannot be
 * described). */
static bool rec_error_is_candidate(const struct api_reply *r, int policy)
{
	cJSON *j = r->body ? cJSON_ParseWithLength(r->body, r->len) : NULL;
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(j, "error"), "field");
	bool hw = cJSON_IsString(f) && strncmp(f->valuestring, "hardware", 8) == 0;
	bool candidate = policy == REC_SKIP_MODEL_ERRORS ? cJSON_IsString(f) && !hw : hw;

	cJSON_Delete(j);
	return candidate;
}

/* Asks the estimator about body (consumed). Returns 1 with the answer in *answer, 0 when the
 * error concerns this candidate only (policy; out is reset), or a negative rf_err with the
 * envelope in out. */
static int rec_ask(const struct api_env *env, cJSON *body, int policy, cJSON **answer,
		   struct api_reply *out)
{
	int rc;

	*answer = NULL;
	if (!body)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	rc = api_estimate_object(env, body, answer, out);
	cJSON_Delete(body);
	if (rc == 0)
		return 1;
	if (rc == RF_E_NOMEM || !rec_error_is_candidate(out, policy))
		return rc;
	api_reply_reset(out);
	return 0;
}

/* Replaces the quant of settings s; a replacement that cannot be made is freed. */
static void rec_set_quant(cJSON *s, const char *quant)
{
	cJSON *q = cJSON_CreateString(quant);

	if (!cJSON_ReplaceItemInObjectCaseSensitive(s, "quant", q))
		cJSON_Delete(q);
}

/* The settings of an estimate request, without model and hardware. */
static cJSON *rec_settings(int mode, int quant, int64_t n, bool flash_attn)
{
	cJSON *s = cJSON_CreateObject();

	if (!s)
		return NULL;
	cJSON_AddStringToObject(s, "mode", rec_modes[mode]);
	if (mode == REC_INFERENCE) {
		cJSON_AddStringToObject(s, "quant", rec_quants[quant]);
		cJSON_AddNumberToObject(s, "n_ctx", (double)n);
		if (flash_attn)
			cJSON_AddBoolToObject(s, "flash_attn", true);
	} else {
		cJSON_AddNumberToObject(s, "seq_len", (double)n);
		cJSON_AddNumberToObject(s, "batch_size", 1);
	}
	return s;
}

/* Fine-tuning: how the estimate spread the run over the GPUs (strategy, offload). */
static void rec_training_strategy(const cJSON *a, cJSON *s)
{
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(a, "training");
	const char *keys[] = {"strategy", "offload"};

	for (int i = 0; i < 2; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(tr, keys[i]);
		if (cJSON_IsString(v))
			cJSON_AddStringToObject(s, keys[i], v->valuestring);
	}
}

/* The summary of an answer every entry carries. */
static cJSON *rec_summary(const cJSON *a, int mode)
{
	cJSON *s = cJSON_CreateObject();
	const cJSON *band = cJSON_GetObjectItemCaseSensitive(a, "fit_band");
	double v;

	if (!s)
		return NULL;
	cJSON_AddBoolToObject(s, "fits", rec_fits(a));
	v = rec_num(a, "utilization", NULL, -1);
	if (v >= 0)
		cJSON_AddNumberToObject(s, "utilization", round(v * 1000) / 1000);
	else
		cJSON_AddNullToObject(s, "utilization");
	if (cJSON_IsString(band))
		cJSON_AddStringToObject(s, "fit_band", band->valuestring);
	else
		cJSON_AddNullToObject(s, "fit_band");
	cJSON_AddNumberToObject(s, "memory_total_bytes", rec_num(a, "memory", "total_bytes", 0));
	if (mode == REC_INFERENCE) {
		const char *keys[] = {"decode_tokens_per_s", "prefill_tokens_per_s"};
		for (int i = 0; i < 2; i++) {
			v = rec_num(a, "speed", keys[i], -1);
			if (v >= 0)
				cJSON_AddNumberToObject(s, keys[i], round(v * 10) / 10);
			else
				cJSON_AddNullToObject(s, keys[i]);
		}
	} else {
		v = rec_num(a, "training", "tokens_per_s", -1);
		if (v >= 0)
			cJSON_AddNumberToObject(s, "training_tokens_per_s", round(v * 10) / 10);
		else
			cJSON_AddNullToObject(s, "training_tokens_per_s");
		rec_training_strategy(a, s);
	}
	return s;
}

static double rec_tokens_per_s(const cJSON *a, int mode)
{
	return mode == REC_INFERENCE ? rec_num(a, "speed", "decode_tokens_per_s", -1) :
				       rec_num(a, "training", "tokens_per_s", -1);
}

/* ---- which models fit here -------------------------------------------------------------- */

/* Whether the machine of the request has GPUs (flash attention is turned on for them). */
static bool rec_has_gpus(const struct api_env *env, const struct rec_request *rq, const cJSON *hw)
{
	const struct device_profile *p = NULL;

	if (hw)
		return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(hw, "gpus")) > 0;
	if (rq->has_hardware_profile)
		return env->devices &&
		       device_resolve(env->devices, rq->hardware_profile, &p) == 0 && p &&
		       p->kind != DEVICE_KIND_CPU;
	return env->snapshot && env->snapshot->hw.n_gpus > 0;
}

/* An estimate request for model m with setting index i (a quant or a seq_len). */
static cJSON *rec_model_body(const struct rec_request *rq, const cJSON *hw,
			     const struct model_entry *m, int i, int64_t n_ctx, bool gpus)
{
	cJSON *b = rec_settings(rq->mode, i, rq->mode == REC_INFERENCE ? n_ctx : rec_seq_lens[i],
				gpus);

	if (!b)
		return NULL;
	cJSON_AddStringToObject(b, "model", m->id);
	if (hw)
		api_json_add(b, "hardware", cJSON_Duplicate(hw, true));
	else if (rq->has_hardware_profile)
		cJSON_AddStringToObject(b, "hardware_profile", rq->hardware_profile);
	return b;
}

/* Finds the best setting of m that fits. Returns 1 with *hit filled, 0 when none fits, or a
 * negative rf_err with the envelope in out. */
static int rec_model_try(const struct api_env *env, const struct rec_request *rq, const cJSON *hw,
			 const struct model_entry *m, bool gpus, int64_t min_ctx,
			 struct rec_hit *hit, struct api_reply *out)
{
	int n = rq->mode == REC_INFERENCE ? REC_N_QUANTS : REC_N_SEQ;
	int64_t maxpos = m->arch.max_position_embeddings, n_ctx = REC_DEFAULT_CTX;
	cJSON *low = NULL, *a = NULL;
	int rc;

	if (rq->mode == REC_INFERENCE) {
		if (maxpos > 0 && maxpos < n_ctx)
			n_ctx = maxpos;
		if (min_ctx > n_ctx)
			n_ctx = min_ctx;
		if (maxpos > 0 && n_ctx > maxpos)
			return 0; /* the model cannot take that context */
	}
	/* The lowest setting first: when it does not fit, nothing does. */
	rc = rec_ask(env, rec_model_body(rq, hw, m, n - 1, n_ctx, gpus), REC_SKIP_MODEL_ERRORS,
		     &low, out);
	if (rc <= 0)
		return rc;
	if (!rec_fits(low)) {
		cJSON_Delete(low);
		return 0;
	}
	hit->quant = n - 1;
	for (int i = 0; i < n - 1; i++) {
		rc = rec_ask(env, rec_model_body(rq, hw, m, i, n_ctx, gpus), REC_SKIP_MODEL_ERRORS,
			     &a, out);
		if (rc < 0) {
			cJSON_Delete(low);
			return rc;
		}
		if (rc == 1 && rec_fits(a)) {
			cJSON_Delete(low);
			low = a;
			hit->quant = i;
			break;
		}
		cJSON_Delete(a);
	}
	hit->model = m;
	hit->answer = low;
	hit->n_ctx_or_seq = rq->mode == REC_INFERENCE ? n_ctx : rec_seq_lens[hit->quant];
	if (rq->mode != REC_INFERENCE)
		hit->quant = -1;
	return 1;
}

static void rec_score(struct rec_hit *h, int mode)
{
	double params = h->model->params_b > 0 ? h->model->params_b : 1;

	h->tokens_per_s = rec_tokens_per_s(h->answer, mode);
	h->utilization = rec_num(h->answer, "utilization", NULL, -1);
	h->quality = 10 * log2(1 + params) + (h->quant >= 0 ? rec_quant_bonus[h->quant] : 0);
	h->speed = h->tokens_per_s > 0 ? 10 * log10(1 + h->tokens_per_s) : 0;
	h->headroom = h->utilization >= 0 && h->utilization < 1 ? 10 * (1 - h->utilization) : 0;
	h->quality = round(h->quality * 10) / 10;
	h->speed = round(h->speed * 10) / 10;
	h->headroom = round(h->headroom * 10) / 10;
	h->score = round((h->quality + h->speed + h->headroom) * 10) / 10;
}

static int rec_by_score(const void *pa, const void *pb)
{
	const struct rec_hit *a = pa, *b = pb;

	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return strcmp(a->model->id, b->model->id);
}

static const char *rec_precision(const struct rec_hit *h, int mode)
{
	if (h->quant >= 0)
		return rec_quants[h->quant];
	return mode == REC_QLORA ? "nf4 base, bf16 adapters" : "bf16";
}

static cJSON *rec_model_entry_json(const struct rec_hit *h, int mode, bool gpus)
{
	cJSON *o = cJSON_CreateObject();
	char why[REC_WHY_LEN];
	const char *prec = rec_precision(h, mode);

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "model", h->model->id);
	cJSON_AddStringToObject(o, "name", h->model->name[0] ? h->model->name : h->model->id);
	if (h->model->params_b > 0)
		cJSON_AddNumberToObject(o, "params_b", h->model->params_b);
	else
		cJSON_AddNullToObject(o, "params_b");
	cJSON_AddStringToObject(o, "precision", prec);
	api_json_add(o, "settings",
		     rec_settings(mode, h->quant, h->n_ctx_or_seq, gpus && mode == REC_INFERENCE));
	api_json_add(o, "estimate", rec_summary(h->answer, mode));
	cJSON_AddNumberToObject(o, "score", h->score);
	snprintf(why, sizeof(why),
		 "%s (%.2fB params) at %s, %s %lld: quality %.1f (10 x log2(1 + %.2f) + %.0f "
		 "for the precision) + speed %.1f (%.1f %s tokens/s) + headroom %.1f (%.0f%% of "
		 "the memory used) = %.1f.",
		 h->model->id, h->model->params_b > 0 ? h->model->params_b : 1, prec,
		 mode == REC_INFERENCE ? "n_ctx" : "seq_len", (long long)h->n_ctx_or_seq,
		 h->quality, h->model->params_b > 0 ? h->model->params_b : 1,
		 h->quant >= 0 ? rec_quant_bonus[h->quant] : 0, h->speed,
		 h->tokens_per_s > 0 ? h->tokens_per_s : 0,
		 mode == REC_INFERENCE ? "decode" : "training", h->headroom,
		 h->utilization >= 0 ? h->utilization * 100 : 100, h->score);
	cJSON_AddStringToObject(o, "why", why);
	return o;
}

/* Maps task or use_case to a task bit; 0 (and a 422 in out) for an unknown one. */
static unsigned rec_task(const struct rec_request *rq, const char **name, struct api_reply *out)
{
	const char *field = rq->has_use_case ? "use_case" : "task";
	const char *t = rq->has_use_case ? rq->use_case :
			rq->has_task     ? rq->task :
					   "text-generation";
	unsigned bit;

	if (rq->has_task && rq->has_use_case) {
		api_error(out, RF_E_INVALID_VALUE, "use_case", "give task or use_case, not both");
		return 0;
	}
	if (strcmp(t, "chat") == 0 || strcmp(t, "general") == 0)
		t = "text-generation";
	bit = model_task_from_name(t);
	if (!bit) {
		api_error(out, RF_E_INVALID_VALUE, field,
			  "unknown task '%.48s'; use text-generation, summarization, "
			  "question-answering, extractive-question-answering, chat or general",
			  t);
		return 0;
	}
	*name = model_task_name(bit);
	return bit;
}

static int rec_models(const struct api_env *env, const struct rec_request *rq, const cJSON *hw,
		      struct api_reply *out)
{
	const char *task_name = NULL;
	unsigned task = rec_task(rq, &task_name, out);
	size_t n_models = env->models ? env->models->n : 0, n_hits = 0, considered = 0;
	struct rec_hit *hits;
	bool gpus;
	int64_t limit = rq->has_limit ? rq->limit : REC_DEFAULT_LIMIT;
	int rc = 0;
	cJSON *root, *arr;
	char *json;

	if (!task)
		return RF_E_INVALID_VALUE;
	hits = calloc(n_models + 1, sizeof(*hits));
	if (!hits)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	gpus = rec_has_gpus(env, rq, hw);
	for (size_t i = 0; i < n_models; i++) {
		const struct model_entry *m = &env->models->models[i];
		if (!(m->tasks & task))
			continue;
		considered++;
		rc = rec_model_try(env, rq, hw, m, gpus, rq->has_min_context ? rq->min_context : 0,
				   &hits[n_hits], out);
		if (rc < 0)
			goto done;
		if (rc == 1)
			rec_score(&hits[n_hits++], rq->mode);
	}
	rc = 0;
	qsort(hits, n_hits, sizeof(*hits), rec_by_score);
	root = cJSON_CreateObject();
	if (!root) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	cJSON_AddStringToObject(root, "for", "models");
	cJSON_AddStringToObject(root, "task", task_name);
	cJSON_AddStringToObject(root, "mode", rec_modes[rq->mode]);
	cJSON_AddNumberToObject(root, "considered", (double)considered);
	cJSON_AddStringToObject(root, "scoring",
				"score = quality (10 x log2(1 + params in billions) + precision "
				"bonus: Q8_0 8, Q6_K 6, Q5_K_M 5, Q4_K_M 4, IQ4_XS 3, Q3_K_M 1) + "
				"speed (10 x log10(1 + tokens/s)) + headroom (10 x (1 - "
				"utilization))");
	arr = cJSON_AddArrayToObject(root, "recommendations");
	for (size_t i = 0; i < n_hits && (int64_t)i < limit; i++)
		api_json_append(arr, rec_model_entry_json(&hits[i], rq->mode, gpus));
	if (n_hits == 0)
		cJSON_AddStringToObject(
			root, "reason",
			considered == 0     ? "no model in the catalog serves this task" :
			rq->has_min_context ? "no model for this task fits this machine with this "
					      "min_context at any precision tried" :
					      "no model for this task fits this machine at any "
					      "precision or sequence length tried");
	json = api_json_print(root);
	cJSON_Delete(root);
	if (!json) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	api_reply_json(out, 200, json);
done:
	for (size_t i = 0; i < n_hits; i++)
		cJSON_Delete(hits[i].answer);
	free(hits);
	return rc;
}

/* ---- which models fit here: inference, by the planner ------------------------------------- */

struct rec_plan_hit {
	const struct model_entry *m;
	const char *shown; /* the id shown: an Instruct release for chat when the catalog has it */
	bool chat;         /* tuned to follow instructions */
	struct plan_choice best;
	double quality, speed, headroom, score;
};

static int rec_plan_order(const void *pa, const void *pb)
{
	const struct rec_plan_hit *a = pa, *b = pb;

	if (a->chat != b->chat)
		return a->chat ? -1 : 1;
	if (a->score != b->score)
		return a->score > b->score ? -1 : 1;
	return strcmp(a->m->id, b->m->id);
}

static void rec_plan_score(struct rec_plan_hit *h)
{
	double params = h->m->params_b > 0 ? h->m->params_b : 1;
	double u = h->best.res.mem.utilization;

	h->quality =
		round((10 * log2(1 + params) - 100 * (h->best.kld > 0 ? h->best.kld : 0)) * 10) /
		10;
	h->speed = round(10 * log10(1 + (h->best.res.decode_tps > 0 ? h->best.res.decode_tps : 0)) *
			 10) /
		   10;
	h->headroom = round((u >= 0 && u < 1 ? 10 * (1 - u) : 0) * 10) / 10;
	h->score = round((h->quality + h->speed + h->headroom) * 10) / 10;
}

static const char *rec_kv(int t)
{
	return t == RF_GT_Q8_0 ? "q8_0" : t == RF_GT_Q4_0 ? "q4_0" : "f16";
}

/* An entry: the estimate request's settings (so the entry can be asked of /api/estimate as it
 * is), the planner's estimate and the score with its terms. */
static cJSON *rec_plan_entry_json(const struct rec_plan_hit *h, bool gpus)
{
	const struct plan_setup *s = &h->best.setup;
	const struct rf_mem_estimate *e = &h->best.res.mem;
	cJSON *o = cJSON_CreateObject(), *set, *est;
	const char *prec = rf_ftype_name(s->ftype) ? rf_ftype_name(s->ftype) : "unknown";
	char why[REC_WHY_LEN];

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "model", h->shown);
	cJSON_AddStringToObject(o, "catalog_id", h->m->id);
	cJSON_AddStringToObject(o, "name", h->m->name[0] ? h->m->name : h->m->id);
	if (h->m->params_b > 0)
		cJSON_AddNumberToObject(o, "params_b", h->m->params_b);
	else
		cJSON_AddNullToObject(o, "params_b");
	cJSON_AddBoolToObject(o, "instruct", h->chat);
	cJSON_AddStringToObject(o, "precision", prec);
	set = cJSON_AddObjectToObject(o, "settings");
	if (set) {
		cJSON_AddStringToObject(set, "mode", "inference");
		cJSON_AddStringToObject(set, "quant", prec);
		cJSON_AddNumberToObject(set, "n_ctx", (double)s->p.n_ctx);
		cJSON_AddStringToObject(set, "kv_cache_type", rec_kv(s->p.type_k));
		/* The planner shrinks the micro-batch where that buys context. */
		cJSON_AddNumberToObject(set, "n_ubatch", (double)s->p.n_ubatch);
		/* Always said: /api/estimate's default is llama.cpp's -fa auto (on for CUDA,
		 * Metal and the CPU), which need not be the planner's choice. */
		cJSON_AddBoolToObject(set, "flash_attn", s->p.flash_attn);
		if (gpus) {
			cJSON_AddNumberToObject(set, "n_gpu_layers", (double)s->p.n_gpu_layers);
			cJSON_AddNumberToObject(set, "n_cpu_moe", (double)s->p.n_cpu_moe);
		}
	}
	est = cJSON_AddObjectToObject(o, "estimate");
	if (est) {
		cJSON_AddBoolToObject(est, "fits", h->best.res.fits);
		cJSON_AddNumberToObject(est, "utilization", round(e->utilization * 1000) / 1000);
		cJSON_AddStringToObject(est, "fit_band",
					e->fit_band ? e->fit_band : rf_fit_band(e->utilization));
		cJSON_AddNumberToObject(est, "memory_total_bytes", (double)e->total_bytes);
		cJSON_AddNumberToObject(est, "decode_tokens_per_s",
					round(h->best.res.decode_tps * 10) / 10);
		cJSON_AddNumberToObject(est, "kl_divergence", h->best.kld);
	}
	cJSON_AddNumberToObject(o, "score", h->score);
	snprintf(why, sizeof(why),
		 "%s (%.2fB params) at %s, n_ctx %lld: quality %.1f (10 x log2(1 + %.2f) - 100 x "
		 "KLD %.4f) + speed %.1f (%.1f decode tokens/s) + headroom %.1f (%.0f%% of the "
		 "memory used) = %.1f. %s",
		 h->shown, h->m->params_b > 0 ? h->m->params_b : 1, prec, (long long)s->p.n_ctx,
		 h->quality, h->m->params_b > 0 ? h->m->params_b : 1, h->best.kld, h->speed,
		 h->best.res.decode_tps, h->headroom, e->utilization * 100, h->score, h->best.why);
	cJSON_AddStringToObject(o, "why", why);
	return o;
}

static int rec_models_planned(const struct api_env *env, const struct rec_request *rq,
			      const cJSON *hw, struct api_reply *out)
{
	const char *task_name = NULL;
	unsigned task = rec_task(rq, &task_name, out);
	size_t n_models = env->models ? env->models->n : 0, n_hits = 0, considered = 0;
	size_t slow = 0, stale = 0, evaluated = 0;
	const struct model_entry *named = NULL;
	struct rec_plan_hit *hits = NULL;
	struct plan_answer *ans = NULL;
	struct plan_quality q;
	struct plan_request preq;
	struct api_plan_input *in = NULL;
	bool chat = task == MODEL_TASK_TEXT_GENERATION, gpus;
	int64_t limit = rq->has_limit ? rq->limit : REC_DEFAULT_LIMIT;
	cJSON *root, *arr, *probe;
	int rc;

	if (!task)
		return RF_E_INVALID_VALUE;
	if ((rc = api_plan_quality(env, &q, out)) < 0)
		return rc;
	if (rq->has_model &&
	    (!env->models || !(named = model_catalog_find(env->models, rq->model))))
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "no catalog model is called '%.60s'", rq->model);
	if (n_models == 0)
		return api_error(out, RF_E_UNAVAILABLE, NULL,
				 "no model catalog is loaded (profiles/models.json)");
	/* The machine, resolved once with the first model. */
	probe = cJSON_CreateString(env->models->models[0].id);
	if (!probe)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	rc = api_plan_input(env, probe, hw, rq->has_hardware_profile ? rq->hardware_profile : NULL,
			    &in, out);
	cJSON_Delete(probe);
	if (rc < 0)
		return rc;
	gpus = in->machine.n_dev > 0;
	hits = calloc(n_models + 1, sizeof(*hits));
	ans = malloc(sizeof(*ans));
	if (!hits || !ans) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	plan_request_default(&preq);
	preq.choice_only = true;
	if (rq->has_min_context)
		preq.n_ctx = rq->min_context;
	if (rq->has_min_tps)
		preq.min_tps = rq->min_tps;
	for (size_t i = 0; i < n_models; i++) {
		const struct model_entry *m = &env->models->models[i];
		struct plan_model pm;
		if (!(m->tasks & task) || m->arch.family != MODEL_DECODER)
			continue;
		if (m->stale && m != named) {
			stale++;
			continue;
		}
		if (rq->has_min_context && m->arch.max_position_embeddings > 0 &&
		    m->arch.max_position_embeddings < rq->min_context)
			continue; /* the model cannot take that context */
		considered++;
		rc = api_plan_input_set_entry(in, m);
		if (rc == RF_E_NOMEM) {
			rc = api_error(out, rc, NULL, NULL);
			goto done;
		}
		if (rc < 0)
			continue;
		api_plan_model(in, &pm);
		rc = plan_infer(&pm, &in->machine, &q, &preq, ans);
		if (rc == RF_E_NOMEM) {
			rc = api_error(out, rc, NULL, NULL);
			goto done;
		}
		evaluated += rc == 0 ? (size_t)ans->evaluated : 0;
		if (rc < 0 || !ans->found)
			continue;
		/* Nothing slower than the floor is recommended. */
		if (ans->below_floor) {
			slow++;
			continue;
		}
		hits[n_hits].m = m;
		hits[n_hits].shown = chat && model_chat_id(m) ? model_chat_id(m) : m->id;
		hits[n_hits].chat = chat && model_chat_id(m) != NULL;
		hits[n_hits].best = ans->best;
		rec_plan_score(&hits[n_hits++]);
	}
	rc = 0;
	qsort(hits, n_hits, sizeof(*hits), rec_plan_order);
	root = cJSON_CreateObject();
	if (!root) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	cJSON_AddStringToObject(root, "for", "models");
	cJSON_AddStringToObject(root, "task", task_name);
	cJSON_AddStringToObject(root, "mode", "inference");
	cJSON_AddNumberToObject(root, "considered", (double)considered);
	cJSON_AddNumberToObject(root, "below_speed_floor", (double)slow);
	cJSON_AddNumberToObject(root, "stale_left_out", (double)stale);
	cJSON_AddNumberToObject(root, "setups_evaluated", (double)evaluated);
	cJSON_AddStringToObject(root, "objective", ans->objective);
	cJSON_AddStringToObject(
		root, "scoring",
		chat ? "instruction-tuned models first (chat), then score = quality (10 x log2(1 + "
		       "params in billions) - 100 x the setup's KL divergence) + speed (10 x "
		       "log10(1 + decode tokens/s)) + headroom (10 x (1 - utilization)); each "
		       "model at the planner's best setup for general use; none below the speed "
		       "floor; older families only when named (model)" :
		       "score = quality (10 x log2(1 + params in billions) - 100 x the setup's KL "
		       "divergence) + speed (10 x log10(1 + decode tokens/s)) + headroom (10 x (1 - "
		       "utilization)); each model at the planner's best setup for general use; "
		       "none below the speed floor; older families only when named (model)");
	arr = cJSON_AddArrayToObject(root, "recommendations");
	for (size_t i = 0; i < n_hits && (int64_t)i < limit; i++)
		api_json_append(arr, rec_plan_entry_json(&hits[i], gpus));
	if (n_hits == 0)
		cJSON_AddStringToObject(
			root, "reason",
			considered == 0 ? "no current model in the catalog serves this task" :
			slow > 0        ? "no model for this task reaches the speed floor here" :
			rq->has_min_context ? "no model for this task fits this machine with this "
					      "min_context" :
					      "no model for this task fits this machine");
	rc = api_reply_cjson(out, 200, root);
done:
	api_plan_input_free(in);
	free(hits);
	free(ans);
	return rc;
}

/* ---- which hardware runs this model ----------------------------------------------------- */

static cJSON *rec_hw_body(const struct rec_request *rq, const struct model_entry *m,
			  const struct device_profile *d, int count, int64_t n_ctx,
			  const struct train_settings *placed)
{
	int quant = 3; /* Q4_K_M */
	cJSON *b, *hw, *gpus, *g, *mem;
	double ram_gib = d->memory_gib * count * 2;

	for (int i = 0; rq->has_quant && i < REC_N_QUANTS; i++)
		if (strcmp(rq->quant, rec_quants[i]) == 0)
			quant = i;
	b = rec_settings(rq->mode, quant, rq->mode == REC_INFERENCE ? n_ctx : rec_seq_lens[0],
			 true);
	if (!b)
		return NULL;
	if (rq->mode == REC_INFERENCE && rq->has_quant)
		rec_set_quant(b, rq->quant);
	cJSON_AddStringToObject(b, "model", m->id);
	/* Fine-tuning: the placement core chose for this count. */
	if (placed) {
		cJSON_AddStringToObject(b, "strategy", train_strategy_name(placed->strategy));
		cJSON_AddStringToObject(b, "offload", train_offload_name(placed->offload));
	}
	hw = cJSON_AddObjectToObject(b, "hardware");
	gpus = cJSON_AddArrayToObject(hw, "gpus");
	g = cJSON_CreateObject();
	cJSON_AddStringToObject(g, "name", d->id);
	cJSON_AddNumberToObject(g, "count", count);
	api_json_append(gpus, g);
	mem = cJSON_AddObjectToObject(hw, "memory");
	if (d->kind == DEVICE_KIND_SOC)
		ram_gib = d->memory_gib;
	else if (ram_gib < REC_MIN_RAM_GIB)
		ram_gib = REC_MIN_RAM_GIB;
	cJSON_AddNumberToObject(mem, "total_bytes", round(ram_gib * REC_GIB));
	return b;
}

static int rec_by_cost(const void *pa, const void *pb)
{
	const struct rec_hit *a = pa, *b = pb;
	bool ca = a->usd_per_million >= 0, cb = b->usd_per_million >= 0;

	if (ca != cb)
		return ca ? -1 : 1;
	if (ca && a->usd_per_million != b->usd_per_million)
		return a->usd_per_million < b->usd_per_million ? -1 : 1;
	if (a->count != b->count)
		return a->count < b->count ? -1 : 1;
	if (a->tokens_per_s != b->tokens_per_s)
		return a->tokens_per_s > b->tokens_per_s ? -1 : 1;
	return strcmp(a->device->id, b->device->id);
}

static cJSON *rec_hw_entry_json(const struct rec_hit *h, const struct rec_request *rq,
				const struct model_entry *m)
{
	cJSON *o = cJSON_CreateObject();
	char why[REC_WHY_LEN], cost[160] = "";
	double u = h->utilization >= 0 ? h->utilization * 100 : 100;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "device", h->device->id);
	cJSON_AddStringToObject(o, "name", h->device->name);
	cJSON_AddStringToObject(o, "kind", h->device->kind == DEVICE_KIND_SOC ? "soc" : "gpu");
	cJSON_AddNumberToObject(o, "count", h->count);
	api_json_add(o, "estimate", rec_summary(h->answer, rq->mode));
	if (h->tokens_per_s >= 0)
		cJSON_AddNumberToObject(o, "tokens_per_s", round(h->tokens_per_s * 10) / 10);
	else
		cJSON_AddNullToObject(o, "tokens_per_s");
	if (h->usd_per_hour >= 0)
		cJSON_AddNumberToObject(o, "usd_per_hour", h->usd_per_hour);
	else
		cJSON_AddNullToObject(o, "usd_per_hour");
	if (h->usd_per_million >= 0) {
		cJSON_AddNumberToObject(o, "usd_per_million_tokens", h->usd_per_million);
		snprintf(cost, sizeof(cost), "; at $%.2f per device-hour, $%.2f per million tokens",
			 h->usd_per_hour, h->usd_per_million);
	} else {
		cJSON_AddNullToObject(o, "usd_per_million_tokens");
	}
	snprintf(why, sizeof(why),
		 "%d x %s (%.0f GiB each) hold%s %s %s using %.0f%% of the memory, at %.1f %s "
		 "tokens/s%s (system RAM assumed large enough).",
		 h->count, h->device->name, h->device->memory_gib, h->count == 1 ? "s" : "", m->id,
		 rec_modes[rq->mode], u, h->tokens_per_s > 0 ? h->tokens_per_s : 0,
		 rq->mode == REC_INFERENCE ? "decode" : "training", cost);
	cJSON_AddStringToObject(o, "why", why);
	return o;
}

/* Fine-tuning: the fewest GPUs of profile d (1 .. REC_MAX_GPUS) that hold the run the
 * estimate is asked about (its defaults: batch 1, 2048 tokens, gradient checkpointing, LoRA
 * rank 16 on every linear layer, the provider's default optimizer), each with the budget rec_hw_body
 * describes, by core's cheapest strategy for each count (plan_strategy_auto): first with
 * nothing offloaded, and only when no count holds it so, with the host RAM rec_hw_body
 * assumes (offloading trains several times slower, and one GPU with everything in host RAM
 * would otherwise answer for any model). Returns the count and writes the strategy and
 * offload chosen, 0 when no count holds it, or -1 when it cannot be told (then the counts
 * are asked with the estimate's own choice). */
static int rec_ft_min_gpus(const struct rec_request *rq, const struct model_entry *m,
			   const struct device_profile *d, struct train_settings *chosen)
{
	struct model_params params;
	struct plan_ft_model pm = {&m->arch, &params};
	struct train_model tm;
	struct train_settings s;
	struct train_memory r;
	int64_t total = (int64_t)(d->memory_gib * REC_GIB);

	if (api_memo_params(&m->arch, &params) < 0)
		return -1;
	plan_ft_train_model(&pm, &tm);
	memset(&s, 0, sizeof(s));
	s.mode = rq->mode == REC_QLORA ? TRAIN_QLORA :
		 rq->mode == REC_FULL  ? TRAIN_FULL :
					 TRAIN_LORA;
	s.weight_bits = 16;
	s.batch_size = 1;
	s.seq_len = rec_seq_lens[0];
	s.lora_rank = 16;
	s.lora_targets = TRAIN_LORA_ALL_LINEAR;
	s.gradient_checkpointing = true;
	s.lora_dropout = train_default_lora_dropout(s.mode, s.provider);
	s.optimizer = train_optimizer_default(s.provider); /* as /api/estimate takes it */
	s.flash_attention = true;
	for (int offload = 0; offload < 2; offload++)
		for (int n = 1; n <= REC_MAX_GPUS; n++) {
			double ram_gib = fmax(d->memory_gib * n * 2, REC_MIN_RAM_GIB);
			int64_t ram = (int64_t)(ram_gib * REC_GIB);
			int rc;
			s.n_gpus = n;
			rc = plan_strategy_auto(&tm, &s, rf_budget_device(total, total),
						offload ? rf_budget_host(ram, ram, -1, -1) : -1,
						chosen, &r);
			if (rc < 0)
				return -1;
			if (rc == 1)
				return n;
		}
	return 0;
}

static int rec_hardware(const struct api_env *env, const struct rec_request *rq,
			struct api_reply *out)
{
	const struct model_entry *m = env->models ? model_catalog_find(env->models, rq->model) :
						    NULL;
	int n_dev = env->devices ? env->devices->n : 0, n_hits = 0, n_est = 0, considered = 0;
	int64_t limit = rq->has_limit ? rq->limit : REC_DEFAULT_LIMIT, n_ctx = REC_DEFAULT_CTX;
	static const int pow2_counts[] = {1, 2, 4, 8};
	struct rec_hit *hits;
	bool truncated = false;
	double need = -1; /* the least memory any estimate needed, bytes; < 0 none yet */
	int rc = 0;
	cJSON *root, *arr, *as, *settings;
	char *json, line[200];

	if (!m)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "no catalog model is called '%.80s'", rq->model);
	if (rq->has_n_ctx)
		n_ctx = rq->n_ctx;
	else if (m->arch.max_position_embeddings > 0 && m->arch.max_position_embeddings < n_ctx)
		n_ctx = m->arch.max_position_embeddings;
	hits = calloc((size_t)n_dev + 1, sizeof(*hits));
	if (!hits)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	for (int i = 0; i < n_dev; i++) {
		const struct device_profile *d = &env->devices->devices[i];
		double total1 = -1, budget1 = -1;
		int n_counts = d->kind == DEVICE_KIND_SOC ? 1 : 4, first = -1;
		int counts[REC_MAX_GPUS];
		struct train_settings placed;

		if (d->kind == DEVICE_KIND_CPU || d->memory_gib <= 0)
			continue;
		considered++;
		memcpy(counts, pow2_counts, sizeof(pow2_counts));
		/* Fine-tuning on GPUs: the fewest that core finds enough, none when no count is. */
		if (rq->mode != REC_INFERENCE && d->kind != DEVICE_KIND_SOC)
			first = rec_ft_min_gpus(rq, m, d, &placed);
		if (first == 0)
			continue;
		if (first > 0) {
			/* The estimate is asked about that count and placement only. */
			n_counts = 1;
			counts[0] = first;
		}
		for (int c = 0; c < n_counts; c++) {
			cJSON *a = NULL;
			if (total1 > 0 && budget1 > 0 && counts[c] * budget1 < total1)
				continue; /* cannot hold the model by memory alone */
			if (need > 0 && counts[c] * d->memory_gib * REC_GIB < need * 0.9 &&
			    c + 1 < n_counts)
				continue; /* far less memory than any estimate so far needed */
			if (n_est >= REC_MAX_ESTIMATES) {
				truncated = true;
				break;
			}
			n_est++;
			rc = rec_ask(env,
				     rec_hw_body(rq, m, d, counts[c], n_ctx,
						 first > 0 ? &placed : NULL),
				     REC_SKIP_HARDWARE_ERRORS, &a, out);
			if (rc < 0)
				goto done;
			if (rc == 0)
				break; /* this device cannot be described: skip it */
			if (rec_fits(a)) {
				struct rec_hit *h = &hits[n_hits++];
				h->device = d;
				h->model = m;
				h->count = counts[c];
				h->answer = a;
				h->tokens_per_s = rec_tokens_per_s(a, rq->mode);
				h->utilization = rec_num(a, "utilization", NULL, -1);
				h->usd_per_hour = d->usd_per_hour >= 0 ? d->usd_per_hour :
						  rq->has_usd_per_hour ? rq->usd_per_hour :
									 -1;
				h->usd_per_million = h->usd_per_hour >= 0 && h->tokens_per_s > 0 ?
							     h->usd_per_hour * h->count /
								     (h->tokens_per_s * 3600) *
								     1e6 :
							     -1;
				break;
			}
			if (c == 0) {
				const cJSON *pd = cJSON_GetArrayItem(
					cJSON_GetObjectItemCaseSensitive(
						cJSON_GetObjectItemCaseSensitive(a, "memory"),
						"per_device"),
					0);
				total1 = rec_num(a, "memory", "total_bytes", -1);
				budget1 = rec_num(pd, "budget_bytes", NULL, -1);
			}
			if (rec_num(a, "memory", "total_bytes", -1) > 0 &&
			    (need < 0 || rec_num(a, "memory", "total_bytes", -1) < need))
				need = rec_num(a, "memory", "total_bytes", -1);
			cJSON_Delete(a);
		}
	}
	rc = 0;
	qsort(hits, (size_t)n_hits, sizeof(*hits), rec_by_cost);
	root = cJSON_CreateObject();
	if (!root) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	cJSON_AddStringToObject(root, "for", "hardware");
	cJSON_AddStringToObject(root, "model", m->id);
	cJSON_AddStringToObject(root, "mode", rec_modes[rq->mode]);
	settings = rec_settings(rq->mode, 3, rq->mode == REC_INFERENCE ? n_ctx : rec_seq_lens[0],
				true);
	if (settings && rq->mode == REC_INFERENCE && rq->has_quant)
		rec_set_quant(settings, rq->quant);
	api_json_add(root, "settings", settings);
	cJSON_AddNumberToObject(root, "considered", considered);
	cJSON_AddNumberToObject(root, "estimates", n_est);
	cJSON_AddBoolToObject(root, "truncated", truncated);
	as = cJSON_AddArrayToObject(root, "assumptions");
	api_json_append(as,
			cJSON_CreateString(
				rq->mode == REC_INFERENCE ?
					"devices: every GPU and SoC profile with a known memory "
					"size; GPUs 1, 2, 4 or 8 of a kind (the fewest that fit), "
					"SoCs one" :
					"devices: every GPU and SoC profile with a known memory "
					"size; GPUs 1 to 8 of a kind: the fewest that hold the run "
					"without offloading (with the cheapest strategy for that "
					"count), else the fewest with offload; SoCs one"));
	api_json_append(as, cJSON_CreateString(
				    "system RAM assumed large enough: twice the GPUs' memory, at "
				    "least 64 GiB (SoCs: their own memory)"));
	snprintf(line, sizeof(line),
		 "usd_per_million_tokens = usd_per_hour x count / (tokens_per_s x 3600) x 1e6; "
		 "usd_per_hour per device from its profile%s",
		 rq->has_usd_per_hour ? ", else the request's" :
					" (none known: give usd_per_hour)");
	api_json_append(as, cJSON_CreateString(line));
	arr = cJSON_AddArrayToObject(root, "hardware");
	for (int i = 0; i < n_hits && i < limit; i++)
		api_json_append(arr, rec_hw_entry_json(&hits[i], rq, m));
	if (n_hits == 0)
		cJSON_AddStringToObject(root, "reason",
					considered == 0 ? "no GPU or SoC profile is loaded" :
							  "no device fits this model with up to 8 "
							  "of a kind at these settings");
	json = api_json_print(root);
	cJSON_Delete(root);
	if (!json) {
		rc = api_error(out, RF_E_NOMEM, NULL, NULL);
		goto done;
	}
	api_reply_json(out, 200, json);
done:
	for (int i = 0; i < n_hits; i++)
		cJSON_Delete(hits[i].answer);
	free(hits);
	return rc;
}

/* ---- the route -------------------------------------------------------------------------- */

/* "model": the catalog model to rank hardware for, named as /api/estimate names one: a string
 * (id or alias) or {"id": ...}. The other shapes (a GGUF file, a folder, a pasted config) are
 * not catalog models; they are refused with where to ask instead. */
static int rec_model(const cJSON *m, struct rec_request *rq, struct api_reply *out)
{
	const cJSON *id = NULL, *it;

	if (!m)
		return 0;
	if (cJSON_IsString(m)) {
		id = m;
	} else if (cJSON_IsObject(m)) {
		cJSON_ArrayForEach(it, m)
		{
			if (strcmp(it->string, "id") != 0)
				return api_error(
					out, RF_E_INVALID_VALUE, "model",
					"recommend ranks catalog models: give model as an id "
					"or {\"id\": ...}; '%.40s' is for /api/estimate and "
					"/api/config",
					it->string);
		}
		id = cJSON_GetObjectItemCaseSensitive(m, "id");
		if (!cJSON_IsString(id))
			return api_error(out, RF_E_INVALID_VALUE, "model.id",
					 "model.id must be a string");
	} else {
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "model must be a catalog id or {\"id\": ...}");
	}
	if (!id->valuestring[0] || strlen(id->valuestring) >= sizeof(rq->model))
		return api_error(out, RF_E_INVALID_VALUE, cJSON_IsObject(m) ? "model.id" : "model",
				 "model must be 1 to %zu characters", sizeof(rq->model) - 1);
	snprintf(rq->model, sizeof(rq->model), "%s", id->valuestring);
	rq->has_model = true;
	return 0;
}

int api_recommend(const struct api_env *env, const struct api_request *req, struct api_reply *out)
{
	struct rec_request rq;
	cJSON *body = NULL;
	const cJSON *hw;
	int rc;

	memset(&rq, 0, sizeof(rq));
	rc = jm_parse_body(req, true, &body, out);
	if (rc < 0)
		return rc;
	rc = jm_map(body, rec_fields, sizeof(rec_fields) / sizeof(rec_fields[0]), &rq, out);
	if (rc < 0)
		goto done;
	rc = rec_model(cJSON_GetObjectItemCaseSensitive(body, "model"), &rq, out);
	if (rc < 0)
		goto done;
	hw = cJSON_GetObjectItemCaseSensitive(body, "hardware");
	if (!rq.has_mode)
		rq.mode = REC_INFERENCE;
	if (rq.has_target && rq.target == REC_FOR_HARDWARE) {
		const char *unused = rq.has_task             ? "task" :
				     rq.has_use_case         ? "use_case" :
				     rq.has_min_context      ? "min_context" :
				     hw                      ? "hardware" :
				     rq.has_hardware_profile ? "hardware_profile" :
							       NULL;
		if (unused)
			rc = api_error(out, RF_E_INVALID_VALUE, unused,
				       "%s is not used with \"for\": \"hardware\"", unused);
		else if (!rq.has_model)
			rc = api_error(out, RF_E_MISSING_FIELD, "model",
				       "\"for\": \"hardware\" needs a model");
		else if (rq.has_quant && rq.mode != REC_INFERENCE)
			rc = api_error(out, RF_E_INVALID_VALUE, "quant",
				       "quant is for inference; fine-tuning ranks by mode");
		else if (rq.has_n_ctx && rq.mode != REC_INFERENCE)
			rc = api_error(out, RF_E_INVALID_VALUE, "n_ctx",
				       "n_ctx is for inference; fine-tuning uses seq_len 2048");
		else
			rc = rec_hardware(env, &rq, out);
		goto done;
	}
	{
		const char *unused = rq.has_model && rq.mode != REC_INFERENCE ? "model" :
				     rq.has_usd_per_hour                      ? "usd_per_hour" :
				     rq.has_n_ctx                             ? "n_ctx" :
				     rq.has_quant                             ? "quant" :
										NULL;
		if (unused) {
			rc = api_error(out, RF_E_INVALID_VALUE, unused,
				       "%s is only used with \"for\": \"hardware\"", unused);
			goto done;
		}
	}
	if (rq.has_min_context && rq.mode != REC_INFERENCE) {
		rc = api_error(out, RF_E_INVALID_VALUE, "min_context",
			       "min_context is for inference");
		goto done;
	}
	if (rq.has_min_tps && rq.mode != REC_INFERENCE) {
		rc = api_error(out, RF_E_INVALID_VALUE, "min_tokens_per_s",
			       "min_tokens_per_s is for inference");
		goto done;
	}
	rc = rq.mode == REC_INFERENCE ? rec_models_planned(env, &rq, hw, out) :
					rec_models(env, &rq, hw, out);
done:
	cJSON_Delete(body);
	return rc;
}
