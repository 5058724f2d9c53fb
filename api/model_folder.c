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

/* Adds one header's tensors to ck and bytes_by_dtype. Returns 0 or RF_E_INVALID_VALUE with a
 * reason in why. */
static int census(const char *text, size_t len, struct api_checkpoint *ck,
		  int64_t bytes_by_dtype[N_DTYPES], char *why, size_t whylen)
{
	cJSON *doc = cJSON_ParseWithLength(text, len);
	const cJSON *t;
	int rc = 0;

	if (!cJSON_IsObject(doc)) {
		snprintf(why, whylen, "a safetensors header is not a JSON object");
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	cJSON_ArrayForEach(t, doc)
	{
		const cJSON *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
		const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
		const cJSON *off = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
		const cJSON *d;
		double elems = 1, begin, end;
		int k;

		if (strcmp(t->string, "__metadata__") == 0)
			continue;
		if (!cJSON_IsString(dt) || (k = dtype_index(dt->valuestring)) < 0 ||
		    !cJSON_IsArray(shape) || !cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(off, 0)) ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(off, 1))) {
			snprintf(why, whylen,
				 "tensor %.80s has no valid dtype, shape or data_offsets",
				 t->string);
			rc = RF_E_INVALID_VALUE;
			goto out;
		}
		cJSON_ArrayForEach(d, shape)
		{
			if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 1e12 ||
			    d->valuedouble != (double)(int64_t)d->valuedouble) {
				snprintf(why, whylen, "tensor %.80s has an invalid shape",
					 t->string);
				rc = RF_E_INVALID_VALUE;
				goto out;
			}
			elems *= d->valuedouble;
		}
		begin = cJSON_GetArrayItem(off, 0)->valuedouble;
		end = cJSON_GetArrayItem(off, 1)->valuedouble;
		if (begin < 0 || end < begin || end > 1e15 || elems > 1e13 ||
		    (dtypes[k].size > 0 && elems * dtypes[k].size != end - begin)) {
			snprintf(why, whylen,
				 "tensor %.80s: its shape and dtype do not match its data_offsets",
				 t->string);
			rc = RF_E_INVALID_VALUE;
			goto out;
		}
		ck->tensors++;
		ck->data_bytes += (int64_t)(end - begin);
		bytes_by_dtype[k] += (int64_t)(end - begin);
		if (dtypes[k].fp) {
			ck->params += (int64_t)elems;
			if (vision_tensor(t->string))
				ck->vision_params += (int64_t)elems;
		} else {
			ck->packed_bytes += (int64_t)(end - begin);
		}
		if (lm_head_tensor(t->string))
			ck->lm_head = true;
	}
out:
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
	int64_t by_dtype[N_DTYPES] = {0};
	char why[200] = "";
	cJSON *cfg;
	int rc, best = -1;

	memset(ck, 0, sizeof(*ck));
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
	for (int i = 0; i < d->n_shards; i++) {
		rc = census(d->headers[i], d->header_len[i], ck, by_dtype, why, sizeof(why));
		if (rc < 0)
			return api_error(out, rc, field_prefix, "%s", why);
	}
	ck->shards = d->n_shards;
	for (size_t k = 0; k < N_DTYPES; k++)
		if (dtypes[k].fp && by_dtype[k] > 0 && (best < 0 || by_dtype[k] > by_dtype[best]))
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
