/*
 * A GGUF writer for files the real llama.cpp loads (see gguf_synth.h). The format as
 * llama.cpp's gguf.cpp writes it: little-endian, u64 counts and string lengths, the metadata,
 * the tensor infos, then the data, each tensor aligned to 32 bytes.
 */
#include "tests/core/fit/cpu/gguf_synth.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fit/gguf.h"
#include "core/fit/quant.h"

#define SYNTH_ALIGN 32
#define SYNTH_CHUNK (1u << 20)

struct synth {
	FILE *f;
	bool err;
	uint64_t n_kv;
};

static void put(struct synth *s, const void *d, size_t n)
{
	if (!s->err && fwrite(d, 1, n, s->f) != n)
		s->err = true;
}

static void put_u32(struct synth *s, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	put(s, b, 4);
}

static void put_u64(struct synth *s, uint64_t v)
{
	put_u32(s, (uint32_t)v);
	put_u32(s, (uint32_t)(v >> 32));
}

static void put_f32(struct synth *s, float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	put_u32(s, u);
}

static void put_str(struct synth *s, const char *str)
{
	put_u64(s, strlen(str));
	put(s, str, strlen(str));
}

static void key(struct synth *s, const char *arch, const char *k, uint32_t type)
{
	char full[160];
	snprintf(full, sizeof(full), "%s%s%s", arch ? arch : "", arch ? "." : "", k);
	put_str(s, full);
	put_u32(s, type);
	s->n_kv++;
}

static void kv_u32(struct synth *s, const char *arch, const char *k, uint64_t v)
{
	key(s, arch, k, GGUF_T_UINT32);
	put_u32(s, (uint32_t)v);
}

static void kv_f32(struct synth *s, const char *arch, const char *k, float v)
{
	key(s, arch, k, GGUF_T_FLOAT32);
	put_f32(s, v);
}

static void kv_str(struct synth *s, const char *arch, const char *k, const char *v)
{
	key(s, arch, k, GGUF_T_STRING);
	put_str(s, v);
}

static void kv_bool(struct synth *s, const char *arch, const char *k, bool v)
{
	uint8_t b = v;
	key(s, arch, k, GGUF_T_BOOL);
	put(s, &b, 1);
}

/* A SentencePiece vocabulary of n tokens: <unk>, <s>, </s>, the 256 byte tokens llama.cpp
 * looks up (newline among them), then filler pieces. */
static void vocab(struct synth *s, int64_t n)
{
	char tok[32];

	kv_str(s, NULL, "tokenizer.ggml.model", "llama");
	key(s, NULL, "tokenizer.ggml.tokens", GGUF_T_ARRAY);
	put_u32(s, GGUF_T_STRING);
	put_u64(s, (uint64_t)n);
	for (int64_t i = 0; i < n; i++) {
		if (i == 0)
			snprintf(tok, sizeof(tok), "<unk>");
		else if (i == 1)
			snprintf(tok, sizeof(tok), "<s>");
		else if (i == 2)
			snprintf(tok, sizeof(tok), "</s>");
		else if (i < 3 + 256)
			snprintf(tok, sizeof(tok), "<0x%02X>", (unsigned)(i - 3));
		else
			snprintf(tok, sizeof(tok), "\xe2\x96\x81t%lld", (long long)i);
		put_str(s, tok);
	}
	key(s, NULL, "tokenizer.ggml.scores", GGUF_T_ARRAY);
	put_u32(s, GGUF_T_FLOAT32);
	put_u64(s, (uint64_t)n);
	for (int64_t i = 0; i < n; i++)
		put_f32(s, i < 3 + 256 ? 0.0f : -(float)i);
	key(s, NULL, "tokenizer.ggml.token_type", GGUF_T_ARRAY);
	put_u32(s, GGUF_T_INT32);
	put_u64(s, (uint64_t)n);
	for (int64_t i = 0; i < n; i++)
		put_u32(s, i == 0 ? 2u : (i < 3 ? 3u : (i < 3 + 256 ? 6u : 1u)));
	kv_u32(s, NULL, "tokenizer.ggml.unknown_token_id", 0);
	kv_u32(s, NULL, "tokenizer.ggml.bos_token_id", 1);
	kv_u32(s, NULL, "tokenizer.ggml.eos_token_id", 2);
	kv_bool(s, NULL, "tokenizer.ggml.add_bos_token", true);
}

/* The hyperparameters llama.cpp reads for a->llm_arch. */
static void hparams(struct synth *s, const struct model_arch *a, int ft)
{
	const char *ar = a->llm_arch;
	bool moe = a->n_experts > 1;

	kv_str(s, NULL, "general.architecture", ar);
	kv_str(s, NULL, "general.name", "rigfit synthetic");
	kv_u32(s, NULL, "general.file_type", (uint64_t)(ft & ~RF_FT_UD)); /* UD: the base's */
	kv_u32(s, ar, "context_length",
	       a->max_position_embeddings > 0 ? a->max_position_embeddings : 4096);
	kv_u32(s, ar, "embedding_length", a->hidden_size);
	kv_u32(s, ar, "block_count", a->n_layers);
	kv_u32(s, ar, "feed_forward_length",
	       a->intermediate_size > 0 ? a->intermediate_size : a->moe_intermediate_size);
	kv_u32(s, ar, "attention.head_count", a->n_heads);
	kv_u32(s, ar, "attention.head_count_kv", a->n_kv_heads);
	kv_u32(s, ar, "attention.key_length", a->head_dim);
	kv_u32(s, ar, "attention.value_length", a->v_head_dim);
	kv_f32(s, ar, "attention.layer_norm_rms_epsilon", 1e-6f);
	kv_u32(s, ar, "rope.dimension_count", a->head_dim);
	kv_f32(s, ar, "rope.freq_base", 10000.0f);
	if (moe) {
		kv_u32(s, ar, "expert_count", a->n_experts);
		kv_u32(s, ar, "expert_used_count", a->n_experts_per_tok);
		kv_u32(s, ar, "expert_feed_forward_length", a->moe_intermediate_size);
		if (a->shared_expert_intermediate_size > 0)
			kv_u32(s, ar, "expert_shared_feed_forward_length",
			       a->shared_expert_intermediate_size);
	}
	if (a->sliding_window > 0)
		kv_u32(s, ar, "attention.sliding_window", a->sliding_window);
	if (strcmp(ar, "gemma2") == 0) {
		kv_f32(s, ar, "attn_logit_softcapping", 50.0f);
		kv_f32(s, ar, "final_logit_softcapping", 30.0f);
	}
}

static uint64_t align_up(uint64_t v)
{
	return (v + SYNTH_ALIGN - 1) / SYNTH_ALIGN * SYNTH_ALIGN;
}

static uint32_t xorshift(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void data(struct synth *s, uint64_t n, uint32_t *seed)
{
	static uint8_t buf[SYNTH_CHUNK];

	while (n > 0 && !s->err) {
		size_t k = n < sizeof(buf) ? (size_t)n : sizeof(buf);
		for (size_t i = 0; i + 4 <= k; i += 4) {
			uint32_t r = xorshift(seed) & 0x3b3b3b3bu;
			memcpy(buf + i, &r, 4);
		}
		for (size_t i = k & ~(size_t)3; i < k; i++)
			buf[i] = (uint8_t)(xorshift(seed) & 0x3b);
		put(s, buf, k);
		n -= k;
	}
}

int gguf_synth_write(const char *path, const struct model_arch *a, int ft, uint32_t seed, char *msg,
		     size_t msglen)
{
	struct rf_tensor_list l = {0};
	struct rf_quant_model qm;
	struct synth s = {0};
	uint64_t off = 0;
	long kv_count_at;
	int rc;

	if ((rc = model_tensors(a, &l)) < 0) {
		snprintf(msg, msglen, "model_tensors: %d", rc);
		return -1;
	}
	memset(&qm, 0, sizeof(qm));
	qm.n_layer = model_n_layer(a);
	qm.n_head = a->n_heads;
	qm.n_head_kv = a->n_kv_heads;
	qm.n_expert = a->n_experts;
	if ((rc = rf_quant_apply(&qm, ft, l.t, l.n)) < 0) {
		snprintf(msg, msglen, "rf_quant_apply: %d", rc);
		rf_tensor_list_free(&l);
		return -1;
	}
	s.f = fopen(path, "wb");
	if (!s.f) {
		snprintf(msg, msglen, "cannot create %s", path);
		rf_tensor_list_free(&l);
		return -1;
	}
	put(&s, "GGUF", 4);
	put_u32(&s, 3);
	put_u64(&s, l.n);
	kv_count_at = ftell(s.f);
	put_u64(&s, 0); /* the count of pairs, written once known */
	hparams(&s, a, ft);
	vocab(&s, a->vocab_size);
	for (size_t i = 0; i < l.n; i++) {
		const struct rf_tensor *t = &l.t[i];
		put_str(&s, t->name);
		put_u32(&s, t->n_dims);
		for (uint32_t d = 0; d < t->n_dims; d++)
			put_u64(&s, (uint64_t)t->ne[d]);
		put_u32(&s, (uint32_t)t->type);
		put_u64(&s, off);
		off = align_up(off + t->bytes);
	}
	{
		long pos = ftell(s.f);
		static const uint8_t zero[SYNTH_ALIGN];
		put(&s, zero, (size_t)(align_up((uint64_t)pos) - (uint64_t)pos));
	}
	for (size_t i = 0; i < l.n && !s.err; i++) {
		static const uint8_t zero[SYNTH_ALIGN];
		data(&s, l.t[i].bytes, &seed);
		put(&s, zero, (size_t)(align_up(l.t[i].bytes) - l.t[i].bytes));
	}
	if (!s.err && fseek(s.f, kv_count_at, SEEK_SET) == 0)
		put_u64(&s, s.n_kv);
	if (fclose(s.f) != 0)
		s.err = true;
	rf_tensor_list_free(&l);
	if (s.err) {
		snprintf(msg, msglen, "write error on %s", path);
		return -1;
	}
	return 0;
}
