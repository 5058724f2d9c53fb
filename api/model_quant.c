/*
 * quantization_config (see model_quant.h). Every field is checked before it reaches core: an
 * integer in range, a boolean, a string from the method's list; a field the method does not
 * read is ignored, as transformers ignores it. The skip lists (modules_to_not_convert,
 * llm_int8_skip_modules, ignore) are mapped by core's hfq_rule_parse; names of modules rigfit
 * does not model (vision towers, routers) are accepted and change nothing.
 */
#include "api/model_quant.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

struct qctx {
	const char *prefix; /* where the config is: "model" */
	const char *sub;    /* "" or a path inside quantization_config: "config_groups.group_0" */
	struct api_reply *reply;
};

/* Answers a 422 (or rc) naming prefix.quantization_config[.sub].name. */
static int qerr(const struct qctx *c, int rc, const char *name, const char *msg)
{
	char rel[160], field[240];

	snprintf(rel, sizeof(rel), "quantization_config%s%s%s%s", *c->sub ? "." : "", c->sub,
		 *name ? "." : "", name);
	snprintf(field, sizeof(field), "%s%s%s", c->prefix, *c->prefix ? "." : "", rel);
	return api_error(c->reply, rc, field, "%s %s", rel, msg);
}

static const cJSON *get(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);

	return v && !cJSON_IsNull(v) ? v : NULL;
}

/* An integer field within [min, max]; returns 1 when set, 0 when absent, or the error. */
static int qint(const struct qctx *c, const cJSON *o, const char *name, int64_t min, int64_t max,
		int64_t *out)
{
	const cJSON *v = get(o, name);
	char msg[96];

	if (!v)
		return 0;
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) ||
	    floor(v->valuedouble) != v->valuedouble || v->valuedouble < (double)min ||
	    v->valuedouble > (double)max) {
		snprintf(msg, sizeof(msg), "must be an integer from %lld to %lld", (long long)min,
			 (long long)max);
		return qerr(c, RF_E_INVALID_VALUE, name, msg);
	}
	*out = (int64_t)v->valuedouble;
	return 1;
}

static int qbool(const struct qctx *c, const cJSON *o, const char *name, bool *out)
{
	const cJSON *v = get(o, name);

	if (!v)
		return 0;
	if (!cJSON_IsBool(v))
		return qerr(c, RF_E_INVALID_VALUE, name, "must be true or false");
	*out = cJSON_IsTrue(v);
	return 1;
}

/* A string field; returns 1 and *out (borrowed), 0 when absent, or the error. */
static int qstr(const struct qctx *c, const cJSON *o, const char *name, const char **out)
{
	const cJSON *v = get(o, name);

	if (!v)
		return 0;
	if (!cJSON_IsString(v) || !v->valuestring)
		return qerr(c, RF_E_INVALID_VALUE, name, "must be a string");
	*out = v->valuestring;
	return 1;
}

/* Adds the modules of a skip list (an array of names, or null) to q->skip. lm_head in it
 * clears q->lm_head. */
static int qskip(const struct qctx *c, const cJSON *o, const char *name, struct hfq_config *q)
{
	const cJSON *v = get(o, name), *e;

	if (!v)
		return 0;
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > API_QUANT_MAX_MODULES)
		return qerr(c, RF_E_INVALID_VALUE, name, "must be an array of module names");
	cJSON_ArrayForEach(e, v)
	{
		struct hfq_rule r;
		if (!cJSON_IsString(e) || !e->valuestring)
			return qerr(c, RF_E_INVALID_VALUE, name, "must hold strings");
		if (!hfq_rule_parse(e->valuestring, &r))
			continue;
		if (r.modules == HFQ_M_LM_HEAD) {
			q->lm_head = false;
			continue;
		}
		if (q->n_skip >= HFQ_MAX_RULES)
			return qerr(c, RF_E_TOO_LARGE, name,
				    "names more modules than rigfit keeps apart (64)");
		q->skip[q->n_skip++] = r;
	}
	return 1;
}

/* bits and group_size as AWQ and GPTQ name them (AutoAWQ's own w_bit and q_group_size too). */
static int qbits_group(const struct qctx *c, const cJSON *o, struct hfq_config *q, bool awq)
{
	int64_t bits = q->bits, g = q->group_size;
	int rc = qint(c, o, "bits", 2, 8, &bits);

	if (rc < 0)
		return rc;
	if (rc == 0 && awq)
		RF_TRY(qint(c, o, "w_bit", 2, 8, &bits));
	if (bits == 5 || bits == 6 || bits == 7)
		return qerr(c, RF_E_INVALID_VALUE, "bits", "must be 2, 3, 4 or 8");
	RF_TRY(qint(c, o, "group_size", -1, 1 << 20, &g));
	if (!get(o, "group_size") && awq)
		RF_TRY(qint(c, o, "q_group_size", -1, 1 << 20, &g));
	if (g == 0)
		return qerr(c, RF_E_INVALID_VALUE, "group_size", "must be -1 or positive");
	q->bits = (int)bits;
	q->group_size = g > 0 ? g : 0; /* -1: one group per row */
	return 0;
}

static int q_bnb(const struct qctx *c, const cJSON *o, struct hfq_config *q)
{
	bool b4 = false, b8 = false;
	const char *type = "nf4";

	RF_TRY(qbool(c, o, "load_in_4bit", &b4));
	RF_TRY(qbool(c, o, "load_in_8bit", &b8));
	if (b4 == b8)
		return qerr(c, RF_E_INVALID_VALUE, "load_in_4bit",
			    "and load_in_8bit: exactly one must be true");
	hfq_config_method(q, b4 ? HFQ_BNB_4BIT : HFQ_BNB_8BIT);
	if (b4) {
		RF_TRY(qstr(c, o, "bnb_4bit_quant_type", &type));
		if (strcmp(type, "nf4") != 0 && strcmp(type, "fp4") != 0)
			return qerr(c, RF_E_INVALID_VALUE, "bnb_4bit_quant_type",
				    "must be nf4 or fp4");
		RF_TRY(qbool(c, o, "bnb_4bit_use_double_quant", &q->double_quant));
	}
	return qskip(c, o, "llm_int8_skip_modules", q);
}

static int q_fp8(const struct qctx *c, const cJSON *o, struct hfq_config *q)
{
	const cJSON *bs = get(o, "weight_block_size");
	const char *act = "dynamic";

	hfq_config_method(q, HFQ_FP8);
	if (bs) {
		if (!cJSON_IsArray(bs) || cJSON_GetArraySize(bs) != 2)
			return qerr(c, RF_E_INVALID_VALUE, "weight_block_size",
				    "must be [rows, columns]");
		for (int i = 0; i < 2; i++) {
			const cJSON *d = cJSON_GetArrayItem(bs, i);
			if (!cJSON_IsNumber(d) ||
			    !(d->valuedouble >= 1 && d->valuedouble <= 65536) ||
			    floor(d->valuedouble) != d->valuedouble)
				return qerr(c, RF_E_INVALID_VALUE, "weight_block_size",
					    "must hold two integers from 1 to 65536");
			q->block[i] = (int64_t)d->valuedouble;
		}
	}
	RF_TRY(qstr(c, o, "activation_scheme", &act));
	if (strcmp(act, "dynamic") != 0 && strcmp(act, "static") != 0)
		return qerr(c, RF_E_INVALID_VALUE, "activation_scheme",
			    "must be dynamic or static");
	q->input_scale = strcmp(act, "static") == 0;
	RF_TRY(qskip(c, o, "modules_to_not_convert", q));
	return qskip(c, o, "ignored_layers", q);
}

/* compressed-tensors: the first of config_groups says how weights are stored. */
static int q_compressed(const struct qctx *c, const cJSON *o, struct hfq_config *q)
{
	const cJSON *groups = get(o, "config_groups"), *g, *w, *act;
	const char *type = "int", *strategy = "group";
	int64_t bits = 4, gs = 128;
	bool sym = true, dyn = true;
	char sub[80];
	struct qctx wc = *c;

	hfq_config_method(q, HFQ_COMPRESSED);
	if (!cJSON_IsObject(groups) || !(g = groups->child) || !cJSON_IsObject(g))
		return qerr(c, RF_E_MISSING_FIELD, "config_groups",
			    "must hold at least one group with its weights");
	snprintf(sub, sizeof(sub), "config_groups.%.40s.weights", g->string ? g->string : "");
	wc.sub = sub;
	w = get(g, "weights");
	if (!cJSON_IsObject(w))
		return qerr(&wc, RF_E_MISSING_FIELD, "", "must be an object");
	RF_TRY(qint(&wc, w, "num_bits", 2, 8, &bits));
	RF_TRY(qstr(&wc, w, "type", &type));
	RF_TRY(qstr(&wc, w, "strategy", &strategy));
	RF_TRY(qint(&wc, w, "group_size", 1, 1 << 20, &gs));
	RF_TRY(qbool(&wc, w, "symmetric", &sym));
	if (strcmp(type, "int") != 0 && strcmp(type, "float") != 0)
		return qerr(&wc, RF_E_INVALID_VALUE, "type", "must be int or float");
	q->bits = (int)bits;
	q->float_weights = strcmp(type, "float") == 0;
	q->zero_point = !sym;
	if (strcmp(strategy, "group") == 0 || strcmp(strategy, "tensor_group") == 0) {
		q->group_size = gs;
		/* NVFP4 (4-bit floats in groups of 16) keeps fp8 group scales. */
		if (q->float_weights && bits == 4)
			q->scale_bytes = 1;
	} else if (strcmp(strategy, "channel") == 0) {
		q->group_size = 0;
	} else if (strcmp(strategy, "tensor") == 0) {
		q->group_size = -1;
	} else if (strcmp(strategy, "block") == 0) {
		const cJSON *bs = get(w, "block_structure");
		if (!cJSON_IsArray(bs) || cJSON_GetArraySize(bs) != 2 ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(bs, 0)) ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(bs, 1)) ||
		    !(cJSON_GetArrayItem(bs, 0)->valuedouble >= 1) ||
		    !(cJSON_GetArrayItem(bs, 1)->valuedouble >= 1) ||
		    cJSON_GetArrayItem(bs, 0)->valuedouble > 65536 ||
		    cJSON_GetArrayItem(bs, 1)->valuedouble > 65536)
			return qerr(&wc, RF_E_INVALID_VALUE, "block_structure",
				    "must be [rows, columns]");
		q->block[0] = (int64_t)cJSON_GetArrayItem(bs, 0)->valuedouble;
		q->block[1] = (int64_t)cJSON_GetArrayItem(bs, 1)->valuedouble;
	} else {
		return qerr(&wc, RF_E_INVALID_VALUE, "strategy",
			    "must be tensor, channel, group, tensor_group or block");
	}
	act = get(g, "input_activations");
	if (cJSON_IsObject(act)) {
		RF_TRY(qbool(c, act, "dynamic", &dyn));
		q->input_scale = !dyn;
	}
	return qskip(c, o, "ignore", q);
}

int api_hf_quant_from_config(const cJSON *cfg, const char *prefix, struct hfq_config *q,
			     struct api_reply *reply)
{
	const struct qctx c = {.prefix = prefix ? prefix : "", .sub = "", .reply = reply};
	const cJSON *o = get(cfg, "quantization_config"), *dt = get(cfg, "torch_dtype");
	const char *method = NULL;

	hfq_config_init(q);
	if (!dt)
		dt = get(cfg, "dtype");
	if (cJSON_IsString(dt) && dt->valuestring && strcmp(dt->valuestring, "float32") == 0)
		q->dense_bytes = 4;
	if (!o)
		return 0;
	if (!cJSON_IsObject(o))
		return qerr(&c, RF_E_INVALID_VALUE, "", "must be an object");
	RF_TRY(qstr(&c, o, "quant_method", &method));
	if (!method && (get(o, "load_in_4bit") || get(o, "load_in_8bit")))
		method = "bitsandbytes";
	if (!method)
		return qerr(&c, RF_E_MISSING_FIELD, "quant_method", "is required");
	if (strcmp(method, "awq") == 0) {
		const char *version = "gemm";
		hfq_config_method(q, HFQ_AWQ);
		RF_TRY(qbits_group(&c, o, q, true));
		RF_TRY(qbool(&c, o, "zero_point", &q->zero_point));
		RF_TRY(qstr(&c, o, "version", &version));
		RF_TRY(qskip(&c, o, "modules_to_not_convert", q));
	} else if (strcmp(method, "gptq") == 0) {
		bool desc_act = false, sym = true;
		hfq_config_method(q, HFQ_GPTQ);
		RF_TRY(qbits_group(&c, o, q, false));
		/* Read for their checks; AutoGPTQ stores qzeros and g_idx either way. */
		RF_TRY(qbool(&c, o, "desc_act", &desc_act));
		RF_TRY(qbool(&c, o, "sym", &sym));
		RF_TRY(qbool(&c, o, "lm_head", &q->lm_head));
		RF_TRY(qskip(&c, o, "modules_to_not_convert", q));
	} else if (strcmp(method, "bitsandbytes") == 0) {
		RF_TRY(q_bnb(&c, o, q));
	} else if (strcmp(method, "fp8") == 0) {
		RF_TRY(q_fp8(&c, o, q));
	} else if (strcmp(method, "compressed-tensors") == 0) {
		RF_TRY(q_compressed(&c, o, q));
	} else if (strcmp(method, "mxfp4") == 0) {
		hfq_config_method(q, HFQ_MXFP4);
		RF_TRY(qskip(&c, o, "modules_to_not_convert", q));
	} else {
		char msg[160];
		snprintf(msg, sizeof(msg),
			 "'%.40s' is not supported (awq, gptq, bitsandbytes, fp8, "
			 "compressed-tensors, mxfp4)",
			 method);
		return qerr(&c, RF_E_INVALID_VALUE, "quant_method", msg);
	}
	return 1;
}

cJSON *api_hf_quant_json(const struct hfq_config *q, const struct hfq_bytes *b, int64_t exact_bytes)
{
	cJSON *o = cJSON_CreateObject();
	const char *scales = q->block[0] > 0    ? "block" :
			     q->group_size > 0  ? "group" :
			     q->group_size == 0 ? "channel" :
						  "tensor";
	bool ok = o != NULL;

	ok = ok && cJSON_AddStringToObject(o, "method", hfq_method_name(q->method));
	ok = ok && cJSON_AddNumberToObject(o, "bits", q->bits);
	ok = ok && cJSON_AddStringToObject(o, "weights", q->float_weights ? "float" : "int");
	ok = ok && cJSON_AddStringToObject(o, "scales", scales);
	if (q->group_size > 0)
		ok = ok && cJSON_AddNumberToObject(o, "group_size", (double)q->group_size);
	if (q->block[0] > 0) {
		cJSON *bs = cJSON_AddArrayToObject(o, "block_size");
		ok = ok && bs &&
		     cJSON_AddItemToArray(bs, cJSON_CreateNumber((double)q->block[0])) &&
		     cJSON_AddItemToArray(bs, cJSON_CreateNumber((double)q->block[1]));
	}
	ok = ok && cJSON_AddBoolToObject(o, "zero_point", q->zero_point);
	ok = ok && cJSON_AddBoolToObject(o, "lm_head_quantized", q->lm_head);
	ok = ok && cJSON_AddNumberToObject(o, "modules_not_converted", q->n_skip);
	ok = ok && cJSON_AddNumberToObject(o, "quantized_params", (double)b->quantized_params);
	ok = ok && cJSON_AddNumberToObject(o, "checkpoint_bytes",
					   (double)(exact_bytes >= 0 ? exact_bytes : b->total));
	ok = ok && cJSON_AddNumberToObject(o, "formula_bytes", (double)b->total);
	ok = ok &&
	     cJSON_AddStringToObject(o, "basis", exact_bytes >= 0 ? "safetensors" : "formula");
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
