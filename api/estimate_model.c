/*
 * Which model an estimate is about (api/estimate_priv.h): a catalog id or alias, an Ollama tag
 * (its catalog model and quant, or the GGUF file Ollama's store holds), a GGUF file's header,
 * a Hugging Face folder, the HF cache or the Hub, or a pasted config.json.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_quant.h"
#include "api/model_memo.h"
#include "core/err.h"
#include "core/fit/ollama_ref.h"
#include "api/estimate_priv.h"

/* ---- the model -------------------------------------------------------------------------- */

/* Takes the GGUF header in buf (the whole file is fsize bytes; buf is freed here) as the
 * model; field names the request field in errors. */
static int est_model_gguf_buf(struct est *e, char *buf, size_t len, uint64_t fsize,
			      const char *field, struct api_reply *out)
{
	char msg[256] = "", bad[64] = "";
	int rc = gguf_parse(buf, len, fsize, &e->gguf, msg, sizeof(msg));

	free(buf);
	if (rc == RF_E_NOMEM)
		return api_error(out, rc, NULL, NULL);
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, field, "the GGUF header is invalid: %s",
				 msg);
	rc = gguf_to_arch(e->gguf, &e->arch, bad, sizeof(bad));
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "the GGUF header does not describe a supported model (%s)", bad);
	e->ftype = gguf_file_type(e->gguf);
	rc = rf_weights_from_tensors(&e->arch, e->gguf->tensors, (size_t)e->gguf->n_tensors,
				     &e->weights);
	if (rc == RF_E_NOMEM)
		return api_error(out, rc, NULL, NULL);
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "the GGUF tensors do not fit the architecture");
	return 0;
}

static int est_model_gguf(const struct api_env *env, struct est *e, const char *path,
			  struct api_reply *out)
{
	char *buf = NULL, msg[256] = "";
	size_t len = 0;
	uint64_t fsize = 0;
	int rc;

	if (!env->io.read_model)
		return api_error(out, RF_E_FORBIDDEN, "model.gguf",
				 "model files cannot be read here (start the daemon with "
				 "--models-dir)");
	rc = env->io.read_model(env->io.read_model_ctx, path, &buf, &len, &fsize, msg, sizeof(msg));
	if (rc < 0)
		return api_error(out, rc, "model.gguf", "%s", msg[0] ? msg : rf_err_message(rc));
	rc = est_model_gguf_buf(e, buf, len, fsize, "model.gguf", out);
	if (rc < 0)
		return rc;
	snprintf(e->model_source, sizeof(e->model_source), "gguf");
	snprintf(e->model_id, sizeof(e->model_id), "%s",
		 gguf_get_str(e->gguf, "general.name") ? gguf_get_str(e->gguf, "general.name") :
							 "gguf");
	est_assume(e, "weights: exact tensor sizes and types from the GGUF header");
	return 0;
}

/* Reads a Hugging Face folder (kind 0: a path under --models-dir; kind 1: an id in the HF
 * cache; kind 2: an id on the Hub) as the model: the architecture from config.json, the census
 * of its safetensors. field names the request field in errors. */
static int est_model_folder(const struct api_env *env, struct est *e, int kind, const char *path,
			    const char *field, struct api_reply *out)
{
	static const char *const sources[] = {"folder", "hf_cache", "hub"};
	api_read_model_dir_fn read = kind == 2 ? env->io.read_hub : env->io.read_model_dir;
	void *ctx = kind == 2 ? env->io.read_hub_ctx : env->io.read_model_dir_ctx;
	struct api_model_dir *d;
	char msg[256] = "", from[160];
	const char *base;
	int rc;

	if (!read)
		return api_error(out, RF_E_FORBIDDEN, field, "model folders cannot be read here");
	d = calloc(1, sizeof(*d));
	if (!d)
		return api_error(out, RF_E_NOMEM, NULL, NULL);
	rc = read(ctx, kind, path, d, msg, sizeof(msg));
	if (rc < 0) {
		free(d);
		return api_error(out, rc, field, "%s", msg[0] ? msg : rf_err_message(rc));
	}
	rc = api_model_folder(d, field, &e->arch, &e->checkpoint, out);
	if (rc == 0) {
		e->has_checkpoint = true;
		e->quantized = e->checkpoint.quantized;
		e->quant = e->checkpoint.quant;
		/* est_new leaves the origin as it was: written whole here. */
		memset(&e->folder_info, 0, sizeof(e->folder_info));
		snprintf(e->folder_info.where, sizeof(e->folder_info.where), "%s", d->where);
		snprintf(e->folder_info.revision, sizeof(e->folder_info.revision), "%s",
			 d->revision);
		e->folder_info.file_bytes = d->file_bytes;
		base = strrchr(path, '/');
		snprintf(e->model_id, sizeof(e->model_id), "%s",
			 kind >= 1 ? path : (base && base[1] ? base + 1 : path));
		snprintf(e->model_source, sizeof(e->model_source), "%s", sources[kind]);
		if (kind == 2) {
			int64_t age_s = (env->now_ms - d->fetched_at_ms) / 1000;
			if (age_s < 60)
				snprintf(from, sizeof(from),
					 "the Hugging Face Hub (revision main, looked up now)");
			else
				snprintf(
					from, sizeof(from),
					"the Hugging Face Hub (revision main, as stored %lld h %lld "
					"min ago)",
					(long long)(age_s / 3600), (long long)(age_s / 60 % 60));
		} else {
			snprintf(from, sizeof(from), "%s",
				 kind == 1 ? "the Hugging Face cache's snapshot" : "the folder");
		}
		est_assume(e,
			   "model: config.json and the safetensors headers of %s (%d file%s, %lld "
			   "parameters in %s)",
			   from, e->checkpoint.shards, e->checkpoint.shards == 1 ? "" : "s",
			   (long long)e->checkpoint.params, e->checkpoint.dtype);
	}
	api_model_dir_free(d);
	free(d);
	return rc;
}

/* Reads the GGUF blob of Ollama tag name from Ollama's local store. Returns RF_E_NOT_FOUND
 * (out untouched) when the tag is not pulled there, else 0 or the error in out. */
static int est_model_ollama_blob(const struct api_env *env, struct est *e, const char *name,
				 struct api_reply *out)
{
	char *buf = NULL, msg[256] = "";
	size_t len = 0;
	uint64_t fsize = 0;
	int rc = env->io.read_ollama(env->io.read_ollama_ctx, name, &buf, &len, &fsize, msg,
				     sizeof(msg));

	if (rc == RF_E_NOT_FOUND || rc == RF_E_INVALID_VALUE)
		return RF_E_NOT_FOUND; /* not in the store: the catalog may still know it */
	if (rc < 0)
		return api_error(out, rc, "model.id", "%s", msg[0] ? msg : rf_err_message(rc));
	rc = est_model_gguf_buf(e, buf, len, fsize, "model.id", out);
	if (rc < 0)
		return rc;
	if (e->rq.has_quant &&
	    strcasecmp(e->rq.quant, rf_ftype_name(e->ftype) ? rf_ftype_name(e->ftype) : "") != 0)
		return api_error(out, RF_E_INVALID_VALUE, "quant",
				 "the Ollama model '%.100s' is %s; leave quant out", name,
				 rf_ftype_name(e->ftype) ? rf_ftype_name(e->ftype) : "its own");
	e->rq.has_quant = false; /* the file has its own, which the request repeated */
	snprintf(e->model_id, sizeof(e->model_id), "%s", name);
	snprintf(e->model_source, sizeof(e->model_source), "ollama_store");
	est_assume(e, "model: the GGUF file Ollama's local store holds for '%.100s' (its header)",
		   name);
	return 0;
}

/* Resolves a model name: a catalog id or alias, or an Ollama tag, whose quantization (the
 * tag's, else the Q4_K_M Ollama serves) becomes the inference quant unless the request names
 * one; a request naming another than the tag's is refused. */
static int est_model_by_name(const struct api_env *env, struct est *e, const char *name,
			     struct api_reply *out)
{
	char tag_quant[OLLAMA_QUANT_LEN];
	const char *q;
	int rc;

	/* A tag pulled into Ollama's local store is the very file Ollama runs. */
	if (strchr(name, ':') && env->io.read_ollama && e->rq.mode == API_EST_INFERENCE) {
		rc = est_model_ollama_blob(env, e, name, out);
		if (rc != RF_E_NOT_FOUND)
			return rc;
	}
	rc = api_model_resolve_ref(env->cat.models, name, "model.id", out, &e->entry, tag_quant,
				   sizeof(tag_quant));

	/* A Hugging Face id the catalog does not know may be in this host's HF cache, else (with
	 * --hub) on the Hub. */
	if (rc < 0 && strchr(name, '/') && !strchr(name, ':') &&
	    (env->io.read_model_dir || env->io.read_hub)) {
		struct api_reply cache = {.status = 404};
		int crc = RF_E_NOT_FOUND;
		if (env->io.read_model_dir)
			crc = est_model_folder(env, e, 1, name, "model.id", &cache);
		if (crc < 0 && cache.status == 404 && env->io.read_hub) {
			api_reply_reset(&cache);
			crc = est_model_folder(env, e, 2, name, "model.id", &cache);
		}
		if (crc == 0 || cache.status != 404) {
			api_reply_reset(out);
			*out = cache;
			e->entry = NULL;
			return crc;
		}
		api_reply_reset(&cache);
		return rc;
	}
	if (rc < 0)
		return rc;
	if (strchr(name, ':')) /* an Ollama name, listed among the catalog's aliases or not */
		snprintf(e->model_source, sizeof(e->model_source), "ollama");
	/* A catalog name that is no Ollama tag takes the estimate's own defaults. */
	if (!strchr(name, ':') && model_catalog_find(env->cat.models, name))
		return rc;
	/* An Ollama tag (among the aliases or resolved as one): Ollama's download. */
	if (e->rq.mode != API_EST_INFERENCE)
		return 0;
	q = tag_quant[0] ? tag_quant : ollama_default_quant(e->entry);
	if (e->rq.has_quant) {
		if (tag_quant[0] && strcasecmp(e->rq.quant, tag_quant) != 0)
			return api_error(out, RF_E_INVALID_VALUE, "quant",
					 "quant %.20s contradicts the Ollama tag '%.100s', which "
					 "serves %s; leave quant out",
					 e->rq.quant, name, tag_quant);
		return 0;
	}
	snprintf(e->rq.quant, sizeof(e->rq.quant), "%s", q);
	e->rq.has_quant = true;
	est_assume(e, "model: the Ollama tag '%.100s' is %s at %s, as Ollama's library serves it",
		   name, e->entry->id, q);
	return 0;
}

/* Resolves the "model" object: exactly one of id, architecture, gguf. */
int est_model(const struct api_env *env, struct est *e, const cJSON *m, struct api_reply *out)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
	const cJSON *arch = cJSON_GetObjectItemCaseSensitive(m, "architecture");
	const cJSON *gguf = cJSON_GetObjectItemCaseSensitive(m, "gguf");
	const cJSON *path = cJSON_GetObjectItemCaseSensitive(m, "path");
	const cJSON *k;
	int given = (id != NULL) + (arch != NULL) + (gguf != NULL) + (path != NULL);
	const char *bad_field = NULL;
	int rc;

	if (cJSON_IsString(m)) {
		id = m; /* "model": "llama-3.1-8b" is accepted as a shorthand */
		given = 1;
	} else if (given == 0 && cJSON_IsObject(m) &&
		   cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "model_type"))) {
		/* A Hugging Face config.json pasted as it is: every config.json names its
		 * model_type, and none of the model object's own keys. */
		arch = m;
		given = 1;
	} else if (!cJSON_IsObject(m)) {
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "model must be an object with id, architecture, gguf or path");
	} else {
		cJSON_ArrayForEach(k, m)
		{
			if (strcmp(k->string, "id") && strcmp(k->string, "architecture") &&
			    strcmp(k->string, "gguf") && strcmp(k->string, "path") &&
			    strcmp(k->string, "params_b"))
				return api_error(out, RF_E_UNKNOWN_FIELD, "model",
						 "model has an unknown field");
		}
	}
	if (given != 1)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "model needs exactly one of id, architecture, gguf or path");
	/* params_b is informative (the architecture is counted), but a value that cannot be a
	 * parameter count is still a client error, not something to ignore. */
	if (cJSON_IsObject(m)) {
		const cJSON *pb = cJSON_GetObjectItemCaseSensitive(m, "params_b");
		if (pb && (!cJSON_IsNumber(pb) || !isfinite(pb->valuedouble) ||
			   pb->valuedouble <= 0 || pb->valuedouble > 1e5))
			return api_error(
				out, RF_E_INVALID_VALUE, "model.params_b",
				"model.params_b must be a number of billions in (0, 100000]");
	}
	if (id) {
		if (!cJSON_IsString(id) || !id->valuestring || !*id->valuestring)
			return api_error(out, RF_E_INVALID_VALUE, "model.id",
					 "model.id must be a string");
		if (!env->cat.models)
			return api_error(out, RF_E_UNAVAILABLE, "model.id",
					 "no model catalog is loaded (profiles/models.json)");
		snprintf(e->model_source, sizeof(e->model_source), "catalog");
		rc = est_model_by_name(env, e, id->valuestring, out);
		if (rc < 0)
			return rc;
		if (e->entry) { /* else read from the Hugging Face cache */
			e->arch = e->entry->arch;
			snprintf(e->model_id, sizeof(e->model_id), "%s", e->entry->id);
		}
	} else if (path) {
		if (!cJSON_IsString(path) || !path->valuestring)
			return api_error(out, RF_E_INVALID_VALUE, "model.path",
					 "model.path must be the path of a model folder");
		rc = est_model_folder(env, e, 0, path->valuestring, "model.path", out);
		if (rc < 0)
			return rc;
	} else if (arch) {
		if (!cJSON_IsObject(arch))
			return api_error(out, RF_E_INVALID_VALUE, "model.architecture",
					 "model.architecture must be a config.json object");
		const char *pfx = arch == m ? "model" : "model.architecture";
		rc = api_model_arch_from_hf(arch, pfx, &e->arch, out);
		if (rc == 0)
			rc = api_hf_quant_from_config(arch, pfx, &e->quant, out);
		if (rc < 0)
			return rc;
		e->quantized = rc == 1;
		snprintf(e->model_id, sizeof(e->model_id), "%s", e->arch.model_type);
		snprintf(e->model_source, sizeof(e->model_source), "architecture");
	} else {
		if (!cJSON_IsString(gguf) || !gguf->valuestring)
			return api_error(out, RF_E_INVALID_VALUE, "model.gguf",
					 "model.gguf must be a path");
		rc = est_model_gguf(env, e, gguf->valuestring, out);
		if (rc < 0)
			return rc;
	}
	rc = model_arch_validate(&e->arch, &bad_field);
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, "model", "the model is invalid (%s)",
				 bad_field ? bad_field : "architecture");
	rc = api_memo_params(&e->arch, &e->params);
	if (rc == RF_E_NOMEM)
		return api_error(out, rc, NULL, NULL);
	if (rc < 0)
		return api_error(out, RF_E_INVALID_VALUE, "model",
				 "the model's parameters cannot be counted");
	return 0;
}
