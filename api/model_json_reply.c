/*
 * The reply side of api/model_json.h: the config.json mapper and the catalog lookup answering
 * their errors as the API's 422 envelope. Kept apart from model_json.c so that the loaders
 * link without the reply helpers (make accuracy uses them on their own).
 */
#include <stdio.h>

#include "api/model_json.h"
#include "core/err.h"
#include "core/fit/ollama_ref.h"

int api_model_arch_from_hf(const cJSON *cfg, const char *prefix, struct model_arch *out,
			   struct api_reply *reply)
{
	char field[MODEL_JSON_FIELD_LEN], msg[256];
	int rc = model_arch_from_hf(cfg, prefix, out, field, sizeof(field), msg, sizeof(msg));

	if (rc < 0)
		return api_error(reply, rc, field[0] ? field : NULL, "%s",
				 msg[0] ? msg : rf_err_message(rc));
	return 0;
}

int api_model_resolve_ref(const struct model_catalog *c, const char *name, const char *field,
			  struct api_reply *reply, const struct model_entry **out, char *quant,
			  size_t quantlen)
{
	const struct model_entry *e = model_catalog_find(c, name);

	if (quant && quantlen)
		quant[0] = '\0';
	if (!e)
		e = ollama_ref_find(c, name, quant, quantlen);
	if (!e) {
		const char *near = model_catalog_suggest(c, name ? name : "");
		if (near)
			return api_error(
				reply, RF_E_INVALID_VALUE, field,
				"unknown model '%.100s'; did you mean '%s'? (a Hugging Face "
				"id, a catalog alias or an Ollama tag)",
				name, near);
		return api_error(reply, RF_E_INVALID_VALUE, field,
				 "unknown model '%.100s': use a Hugging Face id, an alias from "
				 "the catalog (matched exactly, ignoring case) or an Ollama tag "
				 "(llama3.1:8b), or give \"architecture\" or \"gguf\"",
				 name ? name : "");
	}
	*out = e;
	return 0;
}

int api_model_resolve(const struct model_catalog *c, const char *name, const char *field,
		      struct api_reply *reply, const struct model_entry **out)
{
	return api_model_resolve_ref(c, name, field, reply, out, NULL, 0);
}
