/*
 * A Hugging Face config.json's quantization_config (AWQ, GPTQ, bitsandbytes, FP8,
 * compressed-tensors, MXFP4) mapped to core's struct hfq_config, with the names and defaults
 * of the libraries that write it (transformers' AwqConfig, GPTQConfig, BitsAndBytesConfig,
 * FineGrainedFP8Config, Mxfp4Config; compressed-tensors' QuantizationConfig), and rendered as
 * the answer's model.quantization.
 */
#ifndef RIGFIT_API_MODEL_QUANT_H
#define RIGFIT_API_MODEL_QUANT_H

#include <cjson/cJSON.h>
#include <stdbool.h>

#include "api/api.h"
#include "core/fit/hf_quant.h"

/* Caps on the input. */
#define API_QUANT_MAX_MODULES 4096 /* entries of a skip list */

/* Reads cfg's quantization_config and its dtype (torch_dtype or dtype: float32 stores 4 bytes a
 * weight, the others 2). Writes *q either way. Returns 1 when cfg has a quantization_config,
 * 0 when it has none, or a 422 envelope in reply naming the field under prefix
 * ("model.quantization_config.bits"): an unknown quant_method, bits or a group size the
 * method cannot have, a skip list that is not an array of strings. */
int api_hf_quant_from_config(const cJSON *cfg, const char *prefix, struct hfq_config *q /* OUT */,
			     struct api_reply *reply);

/* Renders q as the answer's model.quantization: method, bits, group_size, the layout facts that
 * change the bytes, and checkpoint_bytes with its basis ("formula" from the config, or
 * "safetensors" when headers were read: exact_bytes >= 0). Returns a new object or NULL. */
cJSON *api_hf_quant_json(const struct hfq_config *q, const struct hfq_bytes *b,
			 int64_t exact_bytes);

#endif
