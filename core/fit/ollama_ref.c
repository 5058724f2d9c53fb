/*
 * Ollama model references (see ollama_ref.h).
 */
#include "core/fit/ollama_ref.h"

#include <stdio.h>
#include <string.h>

/* Ollama's quantization words and the GGUF scheme each names. */
static const struct {
	const char *word;
	const char *scheme;
} quant_words[] = {
	{"fp16", "F16"},
	{"f16", "F16"},
	{"bf16", "BF16"},
	{"fp32", "F32"},
	{"q8_0", "Q8_0"},
	{"q6_k", "Q6_K"},
	{"q5_k_m", "Q5_K_M"},
	{"q5_k_s", "Q5_K_S"},
	{"q5_1", "Q5_1"},
	{"q5_0", "Q5_0"},
	{"q4_k_m", "Q4_K_M"},
	{"q4_k_s", "Q4_K_S"},
	{"q4_1", "Q4_1"},
	{"q4_0", "Q4_0"},
	{"q3_k_l", "Q3_K_L"},
	{"q3_k_m", "Q3_K_M"},
	{"q3_k_s", "Q3_K_S"},
	{"q2_k", "Q2_K"},
	{"iq4_xs", "IQ4_XS"},
	{"iq4_nl", "IQ4_NL"},
	{"mxfp4", "MXFP4_MOE"},
	/* Gemma 3's quantization-aware-trained tags ship Q4_0. */
	{"qat", "Q4_0"},
};

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

/* Copies s[0..n) lower-cased into dst (size dstlen); false when it does not fit, is empty or
 * holds a character no Ollama name has. */
static bool copy_name(const char *s, size_t n, char *dst, size_t dstlen)
{
	if (n == 0 || n >= dstlen)
		return false;
	for (size_t i = 0; i < n; i++) {
		dst[i] = lower(s[i]);
		if (!name_char(dst[i]))
			return false;
	}
	dst[n] = '\0';
	return true;
}

bool ollama_ref_parse(const char *ref, struct ollama_ref *out)
{
	const char *colon, *slash, *name, *dash;
	size_t name_len;

	memset(out, 0, sizeof(*out));
	if (!ref || !*ref || strlen(ref) > OLLAMA_NAME_LEN + OLLAMA_TAG_LEN + 64)
		return false;
	/* The last '/' ends the registry and namespace ("registry.ollama.ai/library/"); a
	 * namespace other than Ollama's own library is somebody's upload, not a library model,
	 * and its name is kept whole so it cannot collide with one. */
	slash = strrchr(ref, '/');
	name = slash ? slash + 1 : ref;
	if (slash) {
		size_t ns_len = (size_t)(slash - ref);
		const char *lib = "library";
		size_t lib_len = strlen(lib);
		if (!(ns_len >= lib_len && strncmp(slash - lib_len, lib, lib_len) == 0 &&
		      (ns_len == lib_len || slash[-(long)lib_len - 1] == '/')))
			return false;
	}
	colon = strchr(name, ':');
	name_len = colon ? (size_t)(colon - name) : strlen(name);
	if (!copy_name(name, name_len, out->name, sizeof(out->name)))
		return false;
	if (!colon) {
		snprintf(out->tag, sizeof(out->tag), "latest");
		return true;
	}
	if (!copy_name(colon + 1, strlen(colon + 1), out->tag, sizeof(out->tag)))
		return false;
	/* The tag's last word may be the quantization: "8b-instruct-q4_K_M", or the whole tag
	 * ("gemma3:q4_0" is not a form Ollama uses, but "fp16" alone is not a size either). */
	dash = strrchr(out->tag, '-');
	for (size_t i = 0; i < sizeof(quant_words) / sizeof(quant_words[0]); i++) {
		const char *w = dash ? dash + 1 : out->tag;
		if (strcmp(w, quant_words[i].word) != 0)
			continue;
		snprintf(out->quant, sizeof(out->quant), "%s", quant_words[i].scheme);
		if (dash)
			out->tag[dash - out->tag] = '\0';
		else
			snprintf(out->tag, sizeof(out->tag), "latest");
		break;
	}
	return true;
}

bool ollama_ref_candidate(const struct ollama_ref *r, int i, char *buf, size_t buflen)
{
	char tag[OLLAMA_TAG_LEN];
	int n;

	if (i < 0)
		return false;
	snprintf(tag, sizeof(tag), "%s", r->tag);
	for (int k = 0; k < i; k++) {
		char *dash = strrchr(tag, '-');
		if (!dash)
			return false;
		*dash = '\0';
	}
	n = snprintf(buf, buflen, "%s:%s", r->name, tag);
	return n > 0 && (size_t)n < buflen;
}

const struct model_entry *ollama_ref_find(const struct model_catalog *c, const char *ref,
					  char *quant, size_t quantlen)
{
	struct ollama_ref r;
	char name[OLLAMA_NAME_LEN + OLLAMA_TAG_LEN + 2];

	if (quant && quantlen)
		quant[0] = '\0';
	if (!c || !ref || !ollama_ref_parse(ref, &r))
		return NULL;
	/* A bare name is Ollama's ":latest" ("ollama run llama3.2"): that exact tag, where the
	 * catalog says which size it is; no other size of the family is guessed. */
	if (!strchr(ref, ':')) {
		const struct model_entry *e;
		snprintf(name, sizeof(name), "%s:latest", r.name);
		e = model_catalog_find(c, name);
		if (e && quant && quantlen)
			snprintf(quant, quantlen, "%s", r.quant);
		return e;
	}
	for (int i = 0; ollama_ref_candidate(&r, i, name, sizeof(name)); i++) {
		const struct model_entry *e = model_catalog_find(c, name);
		if (!e)
			continue;
		if (quant && quantlen)
			snprintf(quant, quantlen, "%s", r.quant);
		return e;
	}
	return NULL;
}

const char *ollama_default_quant(const struct model_entry *e)
{
	if (e && strcmp(e->arch.model_type, "gpt_oss") == 0)
		return "MXFP4_MOE";
	return OLLAMA_DEFAULT_QUANT;
}
