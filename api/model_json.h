/*
 * Models in JSON: the catalog (profiles/models.json) loaded into struct model_catalog, a
 * pasted Hugging Face config.json mapped to struct model_arch, and model names resolved against
 * the catalog. Field names are exactly Hugging Face's (hidden_size, num_hidden_layers,
 * num_key_value_heads, d_model...), so a user can paste config.json as it is; a nested
 * "text_config" (Gemma 3, Llama 4, Mistral 3) is read where the text model's facts are.
 *
 * Supported model_type values: llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe,
 * gemma, gemma2, gemma3 (gemma3_text), phi3, deepseek_v2, deepseek_v3, glm4_moe, mllama (its
 * text_config and vision_config), gpt_neox, gpt_oss,
 * llama4 (llama4_text), mistral3 (its text_config), t5, bert, roberta, xlm-roberta.
 */
#ifndef RIGFIT_API_MODEL_JSON_H
#define RIGFIT_API_MODEL_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "api/api.h"
#include "core/fit/model.h"

#define MODEL_JSON_FIELD_LEN 160

/* Maps a config.json object to *out. prefix names where cfg sits ("model.architecture";
 * "" or NULL: top level); errors name the field as prefix.name ("model.architecture.hidden_size",
 * "...text_config.num_hidden_layers"). Unknown keys are ignored (config.json has many); a
 * missing required field is RF_E_MISSING_FIELD, a wrong type or an absurd value (0 or 4e9
 * layers, negative sizes, a vocabulary over 10M...) RF_E_INVALID_VALUE, an unsupported
 * model_type RF_E_INVALID_VALUE naming model_type. Returns 0, or the error with the field in
 * field (size fieldlen) and a sentence in msg (size msglen). */
int model_arch_from_hf(const cJSON *cfg, const char *prefix, struct model_arch *out /* OUT */,
		       char *field, size_t fieldlen, char *msg, size_t msglen);

/* The same, answering errors as a 422 envelope in reply. Returns 0 or the error. */
int api_model_arch_from_hf(const cJSON *cfg, const char *prefix, struct model_arch *out /* OUT */,
			   struct api_reply *reply);

/* Loads the catalog from the parsed profiles/models.json ({"models": [...]}, each entry with
 * id, aliases, config, params_b, active_params_b, tasks, license, source...). Every id and
 * alias must be unique (ignoring case). Returns 0 and a new catalog in *out (free with
 * model_catalog_free), or a negative rf_err with "models[3].config.hidden_size: reason" in err
 * (size errlen). */
int model_catalog_from_json(const cJSON *doc, struct model_catalog **out /* OUT */, char *err,
			    size_t errlen);

/* Resolves name (an exact HF id or alias, any case; else an Ollama reference such as
 * "llama3.1:8b", core/fit/ollama_ref.h) in c. Returns 0 and the entry in *out, or a 422
 * invalid_value envelope in reply naming field (the request field the name came from). */
int api_model_resolve(const struct model_catalog *c, const char *name, const char *field,
		      struct api_reply *reply, const struct model_entry **out /* OUT */);

/* Renders an architecture with Hugging Face field names. Returns a new object (free with
 * cJSON_Delete) or NULL when out of memory. */
cJSON *api_model_arch_json(const struct model_arch *a);

/* Renders a catalog entry: id, name, aliases, tasks, license, params_b (published),
 * parameters (computed: total, active, embedding), architecture. Returns a new object or NULL. */
cJSON *api_model_entry_json(const struct model_entry *e);

/* The same, also writing the quantization an Ollama tag names ("Q8_0" for
 * "llama3.1:8b-instruct-q8_0"; "" when the name is no tag or its tag names none) into quant
 * (size quantlen). */
int api_model_resolve_ref(const struct model_catalog *c, const char *name, const char *field,
			  struct api_reply *reply, const struct model_entry **out /* OUT */,
			  char *quant, size_t quantlen);

#endif
