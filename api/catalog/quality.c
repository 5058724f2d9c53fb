/*
 * profiles/quality.json -> struct plan_quality (see quality.h). The file: {"source", "tie_kld",
 * "floor" (a quant), "weights": [{"quant", "kld"}], "kv_cache": [{"type", "kld" (null: not
 * measured)}], "vllm": {"bf16", "fp8", "awq"} (the quant each format is rated as)}.
 */
#include "api/catalog/quality.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/quant.h"

static int fail(char *why, size_t len, const char *what)
{
	snprintf(why, len, "quality.json: %s", what);
	return RF_E_INVALID_VALUE;
}

/* A KLD: a finite number >= 0, or null (-1: not measured). */
static int kld_value(const cJSON *v, double *out)
{
	if (cJSON_IsNull(v)) {
		*out = -1;
		return 0;
	}
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 ||
	    v->valuedouble > 100)
		return -1;
	*out = v->valuedouble;
	return 0;
}

static int rows(const cJSON *arr, const char *key, bool kv, struct plan_quality_row *out, int cap,
		int *n)
{
	const cJSON *it;

	*n = 0;
	if (!cJSON_IsArray(arr))
		return -1;
	cJSON_ArrayForEach(it, arr)
	{
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(it, key);
		int id;
		if (*n >= cap || !cJSON_IsString(name))
			return -1;
		id = kv ? rf_gtype_from_name(name->valuestring) :
			  rf_ftype_from_name(name->valuestring);
		if (id < 0 ||
		    kld_value(cJSON_GetObjectItemCaseSensitive(it, "kld"), &out[*n].kld) < 0)
			return -1;
		out[*n].id = id;
		(*n)++;
	}
	return 0;
}

int api_quality_from_json(const cJSON *doc, struct plan_quality *out, char *why, size_t why_len)
{
	static const char *const vllm[PLAN_VLLM_FORMATS] = {"bf16", "fp8", "awq"};
	const cJSON *tie = cJSON_GetObjectItemCaseSensitive(doc, "tie_kld");
	const cJSON *floor = cJSON_GetObjectItemCaseSensitive(doc, "floor");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "vllm");

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(doc))
		return fail(why, why_len, "not an object");
	if (!cJSON_IsNumber(tie) || !(tie->valuedouble >= 0 && tie->valuedouble < 1))
		return fail(why, why_len, "tie_kld: a number in [0, 1)");
	out->tie_kld = tie->valuedouble;
	if (!cJSON_IsString(floor) ||
	    (out->floor_ftype = rf_ftype_from_name(floor->valuestring)) < 0)
		return fail(why, why_len, "floor: a quantization type");
	if (rows(cJSON_GetObjectItemCaseSensitive(doc, "weights"), "quant", false, out->weights,
		 PLAN_QUALITY_MAX_ROWS, &out->n_weights) < 0)
		return fail(why, why_len, "weights: [{\"quant\", \"kld\"}] with known types");
	if (rows(cJSON_GetObjectItemCaseSensitive(doc, "kv_cache"), "type", true, out->kv,
		 PLAN_QUALITY_MAX_KV, &out->n_kv) < 0)
		return fail(why, why_len, "kv_cache: [{\"type\", \"kld\"}] with known types");
	for (int f = 0; f < PLAN_VLLM_FORMATS; f++) {
		const cJSON *q = cJSON_GetObjectItemCaseSensitive(v, vllm[f]);
		if (!cJSON_IsString(q) ||
		    (out->vllm_as[f] = rf_ftype_from_name(q->valuestring)) < 0)
			return fail(why, why_len,
				    "vllm: {\"bf16\", \"fp8\", \"awq\"} as quant types");
	}
	return 0;
}
