/*
 * Ollama's model references, as `ollama run` takes them: "llama3.1", "llama3.1:8b",
 * "qwen2.5:32b-instruct-q4_K_M", "registry.ollama.ai/library/gemma3:27b". A reference is a
 * library name, a tag (":latest" when none is given) whose last dash-separated word may name
 * the quantization Ollama serves (q4_K_M, q8_0, fp16...; Q4_K_M when the tag names none), and
 * words between the size and the quantization that name a variant (instruct, text, a date).
 *
 * The catalog lists each model's Ollama names ("llama3.1:8b", "llama3.1:latest") among its
 * aliases; ollama_ref_candidate() yields the names to look up there, most specific first, so
 * "qwen3:30b-a3b-instruct-2507-q4_K_M" finds "qwen3:30b-a3b". Pure: no I/O.
 */
#ifndef RIGFIT_CORE_OLLAMA_REF_H
#define RIGFIT_CORE_OLLAMA_REF_H

#include <stdbool.h>
#include <stddef.h>

#include "core/fit/model.h"

#define OLLAMA_NAME_LEN 96
#define OLLAMA_TAG_LEN 96
#define OLLAMA_QUANT_LEN 24

/* The quantization Ollama's library serves when a tag names none (see ollama_default_quant). */
#define OLLAMA_DEFAULT_QUANT "Q4_K_M"

struct ollama_ref {
	char name[OLLAMA_NAME_LEN];   /* "qwen2.5" (registry and "library/" removed), lower case */
	char tag[OLLAMA_TAG_LEN];     /* "32b-instruct" (the quantization word removed), lower case;
				       "latest" when none */
	char quant[OLLAMA_QUANT_LEN]; /* GGUF scheme name ("Q4_K_M", "F16"), "" when the tag has
					 none */
};

/* Parses ref. Returns true and fills *out for a reference that could name an Ollama model
 * (a library name of letters, digits, '.', '-', '_', an optional namespace and registry, an
 * optional ":tag"); false for anything else (then *out is undefined). */
bool ollama_ref_parse(const char *ref, struct ollama_ref *out /* OUT */);

/* Writes the i-th name to look up in the catalog ("name:tag", then the tag with its last
 * dash-separated word removed, and so on to "name:<first word>") into buf. Returns false when
 * there is no i-th name or it does not fit in buflen. */
bool ollama_ref_candidate(const struct ollama_ref *r, int i, char *buf, size_t buflen);

/* Finds the catalog model that Ollama reference ref names, by its candidates in order. Returns
 * the entry, with the tag's quantization in quant (size quantlen; "" when the tag names none;
 * quant may be NULL), or NULL when ref is no Ollama reference or names no catalog model. A
 * bare name is Ollama's ":latest" and finds only the entry that lists that exact tag. */
const struct model_entry *ollama_ref_find(const struct model_catalog *c, const char *ref,
					  char *quant, size_t quantlen);

/* The scheme Ollama's library serves model e in when its tag names none: MXFP4 for gpt-oss
 * (its checkpoint's experts, as Ollama ships them), else OLLAMA_DEFAULT_QUANT. Static string. */
const char *ollama_default_quant(const struct model_entry *e);

#endif
