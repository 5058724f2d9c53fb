/*
 * POST /api/validate's answer (see validate_priv.h): plan_check's findings as the route's
 * checks, each field named where the config has it ("settings.n_ctx" in a config nested as
 * /api/config writes it, "n_ctx" in a flat one), and the planner's setup as settings to apply
 * (suggested_settings), in the config's own terms.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/json_alloc.h"
#include "api/validate_priv.h"
#include "core/err.h"
#include "core/fit/quant.h"

/* Where the config has the setting f names (plan_check_finding.field). */
static void val_field(const struct val_cfg *c, const char *f, char *dst, size_t len)
{
	if (strcmp(f, "quant") == 0)
		snprintf(dst, len, "%s", c->nested ? "metadata.precision" : "quant");
	else if (strcmp(f, "quantization") == 0)
		snprintf(dst, len, "%s", c->nested ? "settings.quantization" : "precision");
	else if (strcmp(f, "backend") == 0 || strcmp(f, "runtime") == 0 ||
		 strcmp(f, "model.id") == 0)
		snprintf(dst, len, "%s", f);
	else
		snprintf(dst, len, "%s%s", c->prefix, f);
}

static cJSON *checks_json(const struct val_cfg *c, const struct plan_check_answer *a, bool errors)
{
	cJSON *arr = cJSON_CreateArray();

	for (int i = 0; arr && i < a->n; i++) {
		const struct plan_check_finding *k = &a->f[i];
		char field[96];
		cJSON *o;
		if (k->error != errors || !(o = cJSON_CreateObject()))
			continue;
		cJSON_AddStringToObject(o, "code", k->code);
		cJSON_AddStringToObject(o, "message", k->message);
		cJSON_AddStringToObject(o, "suggestion", k->suggestion);
		if (k->field[0]) {
			val_field(c, k->field, field, sizeof(field));
			cJSON_AddStringToObject(o, "field", field);
		} else {
			cJSON_AddNullToObject(o, "field");
		}
		api_json_append(arr, o);
	}
	return arr;
}

/* The planner's setup as settings to apply; NULL when out of memory. */
static cJSON *planned_json(const struct api_plan_input *in, const struct plan_choice *p)
{
	const struct plan_setup *s = &p->setup;
	cJSON *set = cJSON_CreateObject();

	if (!set)
		return NULL;
	if (s->runtime == PLAN_RT_VLLM) {
		const char *qf = plan_vllm_format_flag(s->vformat);
		cJSON_AddNumberToObject(set, "tensor_parallel_size", s->tp);
		cJSON_AddNumberToObject(set, "max_model_len", (double)s->p.n_ctx);
		cJSON_AddNumberToObject(set, "gpu_memory_utilization", s->vllm_util);
		if (qf)
			cJSON_AddStringToObject(set, "quantization", qf);
		else
			cJSON_AddNullToObject(set, "quantization");
		cJSON_AddStringToObject(set, "kv_cache_dtype",
					s->p.type_k != RF_GT_F16 ? "fp8" : "auto");
		if (s->max_num_seqs > 0)
			cJSON_AddNumberToObject(set, "max_num_seqs", (double)s->max_num_seqs);
		return set;
	}
	{
		const char *kv = s->p.type_k == RF_GT_Q8_0 ? "q8_0" :
				 s->p.type_k == RF_GT_Q4_0 ? "q4_0" :
							     "f16";
		if (in->gguf_ftype < 0)
			cJSON_AddStringToObject(set, "quant", rf_ftype_name(s->ftype));
		cJSON_AddNumberToObject(set, "n_ctx", (double)s->p.n_ctx);
		cJSON_AddNumberToObject(set, "n_gpu_layers",
					(double)plan_check_gpu_layers(in->arch, &in->machine, s));
		cJSON_AddNumberToObject(set, "n_cpu_moe", (double)s->p.n_cpu_moe);
		cJSON_AddNumberToObject(set, "n_ubatch", (double)s->p.n_ubatch);
		cJSON_AddStringToObject(set, "cache_type_k", kv);
		cJSON_AddStringToObject(set, "cache_type_v", kv);
		cJSON_AddBoolToObject(set, "flash_attn", s->p.flash_attn);
	}
	return set;
}

int val_render(const struct val_cfg *c, const struct api_plan_input *in,
	       const struct plan_check_answer *a, cJSON *est, struct api_reply *out)
{
	cJSON *root = cJSON_CreateObject();
	char *json;

	if (!root) {
		cJSON_Delete(est);
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	}
	cJSON_AddBoolToObject(root, "is_valid", plan_check_errors(a) == 0);
	api_json_add(root, "errors", checks_json(c, a, true));
	api_json_add(root, "warnings", checks_json(c, a, false));
	if (a->planned && in)
		api_json_add(root, "suggested_settings", planned_json(in, &a->plan));
	if (est)
		api_json_add(root, "estimate", est);
	else
		cJSON_AddNullToObject(root, "estimate");
	json = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!json)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	api_reply_json(out, 200, json);
	return 0;
}
