/*
 * A Hugging Face model folder (api_model_dir: config.json and the safetensors headers) mapped
 * to an architecture and the checkpoint's exact tensor census: parameters by dtype, tied
 * embeddings, vision towers and projectors counted apart, and the bytes the tensors take.
 */
#ifndef RIGFIT_API_MODEL_FOLDER_H
#define RIGFIT_API_MODEL_FOLDER_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "api/api.h"
#include "core/fit/hf_quant.h"
#include "core/fit/model.h"

struct api_checkpoint {
	int64_t tensors;
	int64_t params;        /* elements of every floating-point tensor */
	int64_t vision_params; /* of them, in a vision tower or multimodal projector */
	int64_t packed_bytes;  /* integer tensors (packed quantized weights: GPTQ, AWQ...) */
	int64_t data_bytes;    /* every tensor's data */
	bool lm_head;          /* the checkpoint stores an output head (untied) */
	char dtype[12];        /* the floating-point dtype holding the most bytes ("BF16") */
	int shards;
	bool quantized;          /* config.json has a quantization_config */
	struct hfq_config quant; /* what it says (api/model_quant.h) */
};

/* Maps d to *arch (config.json, as model_arch_from_hf; errors name field_prefix) and *ck (the
 * headers, and config.json's quantization_config as api_hf_quant_from_config reads it). A
 * header that is not a safetensors header is a 422 naming field_prefix: RF_E_INVALID_VALUE for
 * a tensor without dtype, shape or data_offsets, a shape whose size disagrees with its
 * data_offsets, tensors that overlap or leave holes, data past the end of a shard whose size
 * is known (d->shard_bytes), or, for a Hub's answer (where "hub"), a total size other than the
 * headers account for; RF_E_RANGE for a size or sum that overflows (numbers above 2^53, a
 * shape whose product or totals that pass 2^63). Returns 0 or a negative rf_err with the
 * envelope in out. */
int api_model_folder(const struct api_model_dir *d, const char *field_prefix,
		     struct model_arch *arch /* OUT */, struct api_checkpoint *ck /* OUT */,
		     struct api_reply *out);

/* Renders ck as the answer's model.checkpoint object (NULL when out of memory). */
cJSON *api_checkpoint_json(const struct api_checkpoint *ck, const struct api_model_dir *d);

#endif
