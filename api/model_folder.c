/*
 * Hugging Face model folders (see model_folder.h). A safetensors header is a JSON object of
 * tensor name -> {"dtype", "shape", "data_offsets": [begin, end]}, plus an optional
 * "__metadata__" of strings; the data of each tensor is its element count times the dtype's
 * size, which is checked here for every floating-point tensor.
 */
#include "api/model_folder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_json.h"
#include "api/model_quant.h"
#include "core/checked.h"
#include "core/err.h"

/* safetensors dtypes: name, bytes per element, floating point. */
static const struct {
	const char *name;
	int size;
	bool fp;
} dtypes[] = {
	{"F64", 8, true},     {"F32", 4, true},     {"F16", 2, true},      {"BF16", 2, true},
	{"F8_E4M3", 1, true}, {"F8_E5M2", 1, true}, {"F8_E8M0", 1, false}, {"F4", 0, false},
	{"I64", 8, false},    {"I32", 4, false},    {"I16", 2, false},     {"I8", 1, false},
	{"U64", 8, false},    {"U32", 4, false},    {"U16", 2, false},     {"U8", 1, false},
	{"BOOL", 1, false},
};
#define N_DTYPES (sizeof(dtypes) / sizeof(dtypes[0]))

static int dtype_index(const char *s)
{
	for (size_t i = 0; i < N_DTYPES; i++)
		if (strcmp(dtypes[i].name, s) == 0)
			return (int)i;
	return -1;
}

/* Returns true for the tensors of a vision tower or multimodal projector, by the names
 * transformers gives them (LLaVA, Gemma 3, Llama 3.2 Vision, Qwen2-VL, Mistral 3, Llama 4). */
static bool vision_tensor(const char *name)
{
	static const char *const parts[] = {"vision_tower",   "vision_model",
					    "visual.",        "multi_modal_projector",
					    "mm_projector",   "image_newline",
					    "vision_encoder", "patch_embed"};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (strstr(name, parts[i]))
			return true;
	return false;
}

static bool lm_head_tensor(const char *name)
{
	const char *p = strstr(name, "lm_head.");
	return p && (p == name || p[-1] == '.');
}

/* The bytes [begin, end) of one tensor's data, for the check that the data is one block. */
struct span {
	uint64_t begin, end;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* Returns true when j is a JSON number holding a whole number in [0, RF_JSON_INT_MAX], and
 * writes it to *v. */
static bool json_size(const cJSON *j, uint64_t *v)
{
	double d;

	if (!cJSON_IsNumber(j))
		return false;
	d = j->valuedouble;
	if (!(d >= 0 && d <= (double)RF_JSON_INT_MAX) || d != (double)(uint64_t)d)
		return false;
	*v = (uint64_t)d;
	return true;
}

/* Running totals of the headers read so far, all of them checked sums. */
struct totals {
	uint64_t by_dtype[N_DTYPES];
	uint64_t accounted; /* 8 + header + data of every shard: the files' sizes they imply */
};

/* Reads one tensor t of a header: its dtype index in *k, its elements in *elems and its data
 * in *sp. Returns 0, or RF_E_INVALID_VALUE / RF_E_RANGE with a reason in why. */
static int tensor_entry(const cJSON *t, int *k, uint64_t *elems, struct span *sp, char *why,
			size_t whylen)
{
	const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
	const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
	const cJSON *d;
	uint64_t n = 1, dim, bytes;

	if (!cJSON_IsString(dt) || (*k = dtype_index(dt->valuestring)) < 0 ||
	    !cJSON_IsArray(shape) || !cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 ||
	    !json_size(cJSON_GetArrayItem(off, 0), &sp->begin) ||
	    !json_size(cJSON_GetArrayItem(off, 1), &sp->end) || sp->end < sp->begin) {
		snprintf(why, whylen, "tensor %.80s has no valid dtype, shape or data_offsets",
			 t->string);
		return RF_E_INVALID_VALUE;
	}
	cJSON_ArrayForEach(d, shape)
	{
		if (!json_size(d, &dim)) {
			snprintf(why, whylen, "tensor %.80s has an invalid shape", t->string);
			return RF_E_INVALID_VALUE;
		}
		if (rf_ckd_mul_u64(&n, n, dim) < 0) {
			snprintf(why, whylen, "tensor %.80s: the product of its shape overflows",
				 t->string);
			return RF_E_RANGE;
		}
	}
	/* A dtype of known size must fill its data_offsets exactly; the packed 4-bit F4 has no
	 * whole bytes per element and is bounded by the block check alone. */
	if (dtypes[*k].size > 0 && (rf_ckd_mul_u64(&bytes, n, (uint64_t)dtypes[*k].size) < 0 ||
				    bytes != sp->end - sp->begin)) {
		snprintf(why, whylen,
			 "tensor %.80s: its shape and dtype do not match its data_offsets",
			 t->string);
		return RF_E_INVALID_VALUE;
	}
	*elems = n;
	return 0;
}

/* Checks that spans[0..n) tile [0, end) with neither hole nor overlap, as the safetensors
 * format requires of a file's data; sorts spans. Returns 0 with the end in *end, or
 * RF_E_INVALID_VALUE with a reason in why. */
static int one_block(struct span *spans, size_t n, uint64_t *end, char *why, size_t whylen)
{
	uint64_t at = 0;

	qsort(spans, n, sizeof(*spans), cmp_span);
	for (size_t i = 0; i < n; i++) {
		if (spans[i].begin != at) {
			snprintf(why, whylen,
				 "the data_offsets %s at byte %llu: tensors must not overlap or "
				 "leave holes",
				 spans[i].begin < at ? "overlap" : "leave a hole",
				 (unsigned long long)(spans[i].begin < at ? spans[i].begin : at));
			return RF_E_INVALID_VALUE;
		}
		at = spans[i].end;
	}
	*end = at;
	return 0;
}

/* Adds the tensors of shard i of d to ck and tot. Every size is checked: against the dtype and
 * shape, against the other tensors (the data is one block), against the shard's size when it
 * is known, and every sum against overflow. Returns 0 or RF_E_INVALID_VALUE / RF_E_RANGE /
 * RF_E_NOMEM with a reason in why. */
static int census(const struct api_model_dir *d, int i, struct api_checkpoint *ck,
		  struct totals *tot, char *why, size_t whylen)
{
	cJSON *doc = cJSON_ParseWithLength(d->headers[i], d->header_len[i]);
	struct span *spans = NULL;
	const cJSON *t;
	size_t n = 0;
	uint64_t end = 0, shard = 0;
	int rc = 0;

	if (!cJSON_IsObject(doc)) {
		snprintf(why, whylen, "a safetensors header is not a JSON object");
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	spans = malloc(((size_t)cJSON_GetArraySize(doc) + 1) * sizeof(*spans));
	if (!spans) {
		snprintf(why, whylen, "out of memory");
		rc = RF_E_NOMEM;
		goto out;
	}
	cJSON_ArrayForEach(t, doc)
	{
		uint64_t elems = 0;
		int k = 0;

		if (strcmp(t->string, "__metadata__") == 0)
			continue;
		rc = tensor_entry(t, &k, &elems, &spans[n], why, whylen);
		if (rc < 0)
			goto out;
		if (rf_ckd_acc_i64(&ck->tensors, 1) < 0 ||
		    rf_ckd_acc_i64(&ck->data_bytes, spans[n].end - spans[n].begin) < 0 ||
		    rf_ckd_add_u64(&tot->by_dtype[k], tot->by_dtype[k],
				   spans[n].end - spans[n].begin) < 0 ||
		    (dtypes[k].fp && rf_ckd_acc_i64(&ck->params, elems) < 0) ||
		    (dtypes[k].fp && vision_tensor(t->string) &&
		     rf_ckd_acc_i64(&ck->vision_params, elems) < 0) ||
		    (!dtypes[k].fp &&
		     rf_ckd_acc_i64(&ck->packed_bytes, spans[n].end - spans[n].begin) < 0)) {
			snprintf(why, whylen, "the tensors' sizes add up past 2^63");
			rc = RF_E_RANGE;
			goto out;
		}
		if (lm_head_tensor(t->string))
			ck->lm_head = true;
		n++;
	}
	rc = one_block(spans, n, &end, why, whylen);
	if (rc < 0)
		goto out;
	if (rf_ckd_add_u64(&shard, 8 + (uint64_t)d->header_len[i], end) < 0 ||
	    rf_ckd_add_u64(&tot->accounted, tot->accounted, shard) < 0) {
		snprintf(why, whylen, "the shards' sizes add up past 2^64");
		rc = RF_E_RANGE;
		goto out;
	}
	if (d->shard_bytes[i] > 0 && shard > d->shard_bytes[i]) {
		snprintf(why, whylen,
			 "shard %d: its data_offsets end at byte %llu, past the end of the "
			 "%llu-byte file",
			 i + 1, (unsigned long long)shard, (unsigned long long)d->shard_bytes[i]);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
out:
	free(spans);
	cJSON_Delete(doc);
	return rc;
}

void api_model_dir_free(struct api_model_dir *d)
{
	if (!d)
		return;
	free(d->config);
	for (int i = 0; i < d->n_shards && i < API_MODEL_DIR_MAX_SHARDS; i++)
		free(d->headers[i]);
	memset(d, 0, sizeof(*d));
}

int api_model_folder(const struct api_model_dir *d, const char *field_prefix,
		     struct model_arch *arch, struct api_checkpoint *ck, struct api_reply *out)
{
	struct totals tot;
	char why[200] = "";
	cJSON *cfg;
	int rc, best = -1;

	memset(ck, 0, sizeof(*ck));
	memset(&tot, 0, sizeof(tot));
	cfg = cJSON_ParseWithLength(d->config, d->config_len);
	if (!cJSON_IsObject(cfg)) {
		cJSON_Delete(cfg);
		return api_error(out, RF_E_INVALID_VALUE, field_prefix,
				 "the folder's config.json is not a JSON object");
	}
	rc = api_model_arch_from_hf(cfg, field_prefix, arch, out);
	if (rc == 0)
		rc = api_hf_quant_from_config(cfg, field_prefix, &ck->quant, out);
	cJSON_Delete(cfg);
	if (rc < 0)
		return rc;
	ck->quantized = rc == 1;
	for (int i = 0; i < d->n_shards && i < API_MODEL_DIR_MAX_SHARDS; i++) {
		rc = census(d, i, ck, &tot, why, sizeof(why));
		if (rc < 0)
			return api_error(out, rc, field_prefix, "%s", why);
	}
	/* A Hub's sizes are its word alone (Content-Range): a safetensors file is exactly its
	 * length, header and data, so any other total is a lie that must not be kept. */
	if (strcmp(d->where, "hub") == 0 && d->file_bytes != tot.accounted)
		return api_error(out, RF_E_INVALID_VALUE, field_prefix,
				 "the Hugging Face Hub says the safetensors files hold %llu bytes; "
				 "their headers account for %llu",
				 (unsigned long long)d->file_bytes,
				 (unsigned long long)tot.accounted);
	ck->shards = d->n_shards;
	for (size_t k = 0; k < N_DTYPES; k++)
		if (dtypes[k].fp && tot.by_dtype[k] > 0 &&
		    (best < 0 || tot.by_dtype[k] > tot.by_dtype[best]))
			best = (int)k;
	snprintf(ck->dtype, sizeof(ck->dtype), "%s", best >= 0 ? dtypes[best].name : "none");
	return 0;
}

cJSON *api_checkpoint_json(const struct api_checkpoint *ck, const struct api_model_dir *d)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddStringToObject(o, "where", d->where) ||
	    !(d->revision[0] ? cJSON_AddStringToObject(o, "revision", d->revision) :
			       cJSON_AddNullToObject(o, "revision")) ||
	    !cJSON_AddNumberToObject(o, "shards", ck->shards) ||
	    !cJSON_AddNumberToObject(o, "tensors", (double)ck->tensors) ||
	    !cJSON_AddNumberToObject(o, "params", (double)ck->params) ||
	    !cJSON_AddNumberToObject(o, "vision_params", (double)ck->vision_params) ||
	    !cJSON_AddNumberToObject(o, "packed_bytes", (double)ck->packed_bytes) ||
	    !cJSON_AddNumberToObject(o, "data_bytes", (double)ck->data_bytes) ||
	    !cJSON_AddNumberToObject(o, "file_bytes", (double)d->file_bytes) ||
	    !cJSON_AddStringToObject(o, "dtype", ck->dtype) ||
	    !cJSON_AddBoolToObject(o, "tied_embeddings", !ck->lm_head)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
