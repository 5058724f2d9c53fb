/*
 * The GGUF header reader against files written here by a small GGUF writer (the format as
 * llama.cpp's gguf.cpp writes it: little-endian, u64 counts and string lengths, tensor infos
 * after the metadata, data aligned to general.alignment). Parsed back, everything written must
 * come back; cut short at any byte, or lying about a count, a type, a length or a shape, it
 * must fail cleanly (ASan and valgrind watch for the rest).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/estimate.h"
#include "core/fit/gguf.h"
#include "tests/test.h"

/* ---- the writer ---------------------------------------------------------------------------- */

struct gw {
	uint8_t *p;
	size_t len, cap;
};

static void gw_raw(struct gw *w, const void *d, size_t n)
{
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 1024;
		while (cap < w->len + n)
			cap *= 2;
		w->p = realloc(w->p, cap);
		ck_assert_ptr_nonnull(w->p);
		w->cap = cap;
	}
	memcpy(w->p + w->len, d, n);
	w->len += n;
}

static void gw_u8(struct gw *w, uint8_t v)
{
	gw_raw(w, &v, 1);
}

static void gw_u32(struct gw *w, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	gw_raw(w, b, 4);
}

static void gw_u64(struct gw *w, uint64_t v)
{
	gw_u32(w, (uint32_t)v);
	gw_u32(w, (uint32_t)(v >> 32));
}

static void gw_str(struct gw *w, const char *s)
{
	gw_u64(w, strlen(s));
	gw_raw(w, s, strlen(s));
}

static void gw_key(struct gw *w, const char *key, uint32_t type)
{
	gw_str(w, key);
	gw_u32(w, type);
}

static void kv_u32(struct gw *w, const char *key, uint32_t v)
{
	gw_key(w, key, GGUF_T_UINT32);
	gw_u32(w, v);
}

static void kv_str(struct gw *w, const char *key, const char *v)
{
	gw_key(w, key, GGUF_T_STRING);
	gw_str(w, v);
}

static void kv_f32(struct gw *w, const char *key, float v)
{
	gw_key(w, key, GGUF_T_FLOAT32);
	gw_raw(w, &v, sizeof(v));
}

static void gw_header(struct gw *w, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
	gw_raw(w, "GGUF", 4);
	gw_u32(w, version);
	gw_u64(w, n_tensors);
	gw_u64(w, n_kv);
}

static void gw_tensor(struct gw *w, const char *name, uint32_t n_dims, const uint64_t *ne,
		      uint32_t type, uint64_t offset)
{
	gw_str(w, name);
	gw_u32(w, n_dims);
	for (uint32_t i = 0; i < n_dims; i++)
		gw_u64(w, ne[i]);
	gw_u32(w, type);
	gw_u64(w, offset);
}

/* A tiny llama-shaped model: 2 layers, hidden 256, 4 heads (2 KV), FFN 512, 300 tokens. */
#define T_HIDDEN 256
#define T_FF 512
#define T_VOCAB 300
#define S_VOCAB 32

struct t_tensor {
	const char *name;
	uint32_t n_dims;
	uint64_t ne[2];
	uint32_t type;
};

static const struct t_tensor tiny_tensors[] = {
	{"token_embd.weight", 2, {T_HIDDEN, T_VOCAB}, RF_GT_Q8_0},
	{"blk.0.attn_norm.weight", 1, {T_HIDDEN, 1}, RF_GT_F32},
	{"blk.0.attn_q.weight", 2, {T_HIDDEN, T_HIDDEN}, RF_GT_Q4_K},
	{"blk.0.attn_k.weight", 2, {T_HIDDEN, 128}, RF_GT_Q4_K},
	{"blk.0.attn_v.weight", 2, {T_HIDDEN, 128}, RF_GT_Q6_K},
	{"blk.0.attn_output.weight", 2, {T_HIDDEN, T_HIDDEN}, RF_GT_Q4_K},
	{"blk.0.ffn_gate.weight", 2, {T_HIDDEN, T_FF}, RF_GT_Q4_K},
	{"blk.0.ffn_up.weight", 2, {T_HIDDEN, T_FF}, RF_GT_Q4_K},
	{"blk.0.ffn_down.weight", 2, {T_FF, T_HIDDEN}, RF_GT_Q6_K},
	{"blk.1.attn_norm.weight", 1, {T_HIDDEN, 1}, RF_GT_F32},
	{"blk.1.attn_q.weight", 2, {T_HIDDEN, T_HIDDEN}, RF_GT_IQ4_XS},
	{"blk.1.attn_k.weight", 2, {T_HIDDEN, 128}, RF_GT_Q5_0},
	{"blk.1.attn_v.weight", 2, {T_HIDDEN, 128}, RF_GT_Q8_0},
	{"blk.1.attn_output.weight", 2, {T_HIDDEN, T_HIDDEN}, RF_GT_BF16},
	{"blk.1.ffn_gate.weight", 2, {T_HIDDEN, T_FF}, RF_GT_F16},
	{"blk.1.ffn_up.weight", 2, {T_HIDDEN, T_FF}, RF_GT_MXFP4},
	{"blk.1.ffn_down.weight", 2, {T_FF, T_HIDDEN}, RF_GT_Q2_K},
	{"output_norm.weight", 1, {T_HIDDEN, 1}, RF_GT_F32},
	{"output.weight", 2, {T_HIDDEN, T_VOCAB}, RF_GT_Q6_K},
};
#define N_TINY (sizeof(tiny_tensors) / sizeof(tiny_tensors[0]))

/* The same layout at hidden 32 with 32-element block types, small enough to cut at every byte. */
static const struct t_tensor small_tensors[] = {
	{"token_embd.weight", 2, {32, S_VOCAB}, RF_GT_Q8_0},
	{"blk.0.attn_norm.weight", 1, {32, 1}, RF_GT_F32},
	{"blk.0.attn_q.weight", 2, {32, 32}, RF_GT_Q4_0},
	{"blk.0.attn_k.weight", 2, {32, 16}, RF_GT_IQ4_NL},
	{"blk.0.attn_v.weight", 2, {32, 16}, RF_GT_Q5_1},
	{"blk.0.attn_output.weight", 2, {32, 32}, RF_GT_Q4_1},
	{"blk.0.ffn_gate.weight", 2, {32, 64}, RF_GT_MXFP4},
	{"blk.0.ffn_up.weight", 2, {32, 64}, RF_GT_F16},
	{"blk.0.ffn_down.weight", 2, {64, 32}, RF_GT_BF16},
	{"blk.1.attn_norm.weight", 1, {32, 1}, RF_GT_F32},
	{"blk.1.attn_q.weight", 2, {32, 32}, RF_GT_Q8_0},
	{"blk.1.attn_k.weight", 2, {32, 16}, RF_GT_Q8_0},
	{"blk.1.attn_v.weight", 2, {32, 16}, RF_GT_Q8_0},
	{"blk.1.attn_output.weight", 2, {32, 32}, RF_GT_Q8_0},
	{"blk.1.ffn_gate.weight", 2, {32, 64}, RF_GT_Q8_0},
	{"blk.1.ffn_up.weight", 2, {32, 64}, RF_GT_Q8_0},
	{"blk.1.ffn_down.weight", 2, {64, 32}, RF_GT_Q5_0},
	{"output_norm.weight", 1, {32, 1}, RF_GT_F32},
	{"output.weight", 2, {32, S_VOCAB}, RF_GT_Q8_0},
};

static uint64_t tensor_bytes(const struct t_tensor *t)
{
	const struct rf_gtype_info *g = rf_gtype((int)t->type);

	return t->ne[0] / (uint64_t)g->block * (uint64_t)g->bytes * t->ne[1];
}

#define N_KV 16

/* Writes the tiny model (or, with small, its hidden-32 variant) as a version-`version` GGUF
 * with `align`-byte alignment, data included. Returns the buffer (free()) and its length. */
static uint8_t *write_model(uint32_t version, uint32_t align, bool small, size_t *len)
{
	const struct t_tensor *tt = small ? small_tensors : tiny_tensors;
	const uint32_t hidden = small ? 32 : T_HIDDEN, ff = small ? 64 : T_FF;
	const int vocab = small ? S_VOCAB : T_VOCAB;
	struct gw w = {0};
	uint64_t off = 0;
	uint64_t offsets[N_TINY];

	gw_header(&w, version, N_TINY, N_KV);
	kv_str(&w, "general.architecture", "llama");
	kv_str(&w, "general.name", "tiny");
	kv_u32(&w, "general.alignment", align);
	kv_u32(&w, "general.file_type", RF_FT_Q4_K_M);
	kv_u32(&w, "llama.block_count", 2);
	gw_key(&w, "llama.context_length", GGUF_T_UINT64);
	gw_u64(&w, 4096);
	kv_u32(&w, "llama.embedding_length", hidden);
	kv_u32(&w, "llama.feed_forward_length", ff);
	gw_key(&w, "llama.attention.head_count", GGUF_T_INT32);
	gw_u32(&w, 4);
	/* An array of per-layer KV head counts, as some converters write it. */
	gw_key(&w, "llama.attention.head_count_kv", GGUF_T_ARRAY);
	gw_u32(&w, GGUF_T_UINT16);
	gw_u64(&w, 2);
	gw_raw(&w, (uint8_t[]){2, 0, 2, 0}, 4);
	gw_key(&w, "llama.rope.freq_base", GGUF_T_FLOAT32);
	{
		float f = 500000.0f;
		uint32_t u;
		memcpy(&u, &f, 4);
		gw_u32(&w, u);
	}
	gw_key(&w, "general.flag", GGUF_T_BOOL);
	gw_u8(&w, 1);
	gw_key(&w, "general.neg", GGUF_T_INT64);
	gw_u64(&w, (uint64_t)-7);
	gw_key(&w, "general.ratio", GGUF_T_FLOAT64);
	{
		double d = 0.25;
		uint64_t u;
		memcpy(&u, &d, 8);
		gw_u64(&w, u);
	}
	/* tokenizer.ggml.tokens: an array of T_VOCAB strings gives the vocabulary. */
	gw_key(&w, "tokenizer.ggml.tokens", GGUF_T_ARRAY);
	gw_u32(&w, GGUF_T_STRING);
	gw_u64(&w, (uint64_t)vocab);
	for (int i = 0; i < vocab; i++) {
		char tok[16];
		snprintf(tok, sizeof(tok), "t%d", i);
		gw_str(&w, tok);
	}
	/* A nested array (arrays of arrays are legal GGUF). */
	gw_key(&w, "general.nested", GGUF_T_ARRAY);
	gw_u32(&w, GGUF_T_ARRAY);
	gw_u64(&w, 2);
	for (int i = 0; i < 2; i++) {
		gw_u32(&w, GGUF_T_INT8);
		gw_u64(&w, 3);
		gw_raw(&w, (uint8_t[]){1, 2, 3}, 3);
	}
	for (size_t i = 0; i < N_TINY; i++) {
		offsets[i] = off;
		off += (tensor_bytes(&tt[i]) + align - 1) / align * align;
	}
	for (size_t i = 0; i < N_TINY; i++)
		gw_tensor(&w, tt[i].name, tt[i].n_dims, tt[i].ne, tt[i].type, offsets[i]);
	while (w.len % align)
		gw_u8(&w, 0);
	for (uint64_t i = 0; i < off; i++)
		gw_u8(&w, (uint8_t)i);
	*len = w.len;
	return w.p;
}

static uint8_t *write_tiny(uint32_t version, uint32_t align, size_t *len)
{
	return write_model(version, align, false, len);
}

static int parse(const uint8_t *buf, size_t len, struct gguf_file **f)
{
	char msg[200];

	return gguf_parse(buf, len, 0, f, msg, sizeof(msg));
}

static void check_tiny(const struct gguf_file *f, uint32_t version, uint32_t align)
{
	struct model_arch a;
	uint64_t v, data = 0;
	char field[96];
	const struct gguf_kv *kv;

	ck_assert_uint_eq(f->version, version);
	ck_assert_uint_eq(f->n_tensors, N_TINY);
	ck_assert_uint_eq(f->n_kv, N_KV);
	ck_assert_uint_eq(f->alignment, align);
	ck_assert_uint_eq(f->data_offset % align, 0);
	ck_assert_str_eq(gguf_get_str(f, "general.architecture"), "llama");
	ck_assert_str_eq(gguf_get_str(f, "general.name"), "tiny");
	ck_assert_int_eq(gguf_get_uint(f, "llama.block_count", &v), 0);
	ck_assert_uint_eq(v, 2);
	ck_assert_int_eq(gguf_get_uint(f, "llama.context_length", &v), 0);
	ck_assert_uint_eq(v, 4096);
	ck_assert_int_eq(gguf_get_uint(f, "llama.attention.head_count_kv", &v), 0);
	ck_assert_uint_eq(v, 2);
	ck_assert_int_eq(gguf_get_uint(f, "general.neg", &v), RF_E_INVALID_VALUE);
	ck_assert_int_eq(gguf_get_uint(f, "no.such.key", &v), RF_E_NOT_FOUND);
	ck_assert_int_eq(gguf_get_uint(f, "general.name", &v), RF_E_INVALID_VALUE);
	ck_assert_ptr_null(gguf_get_str(f, "llama.block_count"));
	kv = gguf_find(f, "llama.rope.freq_base");
	ck_assert_ptr_nonnull(kv);
	ck_assert_double_eq(kv->f, 500000.0);
	kv = gguf_find(f, "general.flag");
	ck_assert(kv && kv->type == GGUF_T_BOOL && kv->b);
	kv = gguf_find(f, "general.neg");
	ck_assert(kv && kv->i == -7);
	kv = gguf_find(f, "general.ratio");
	ck_assert(kv && kv->f == 0.25);
	kv = gguf_find(f, "tokenizer.ggml.tokens");
	ck_assert(kv && kv->type == GGUF_T_ARRAY && kv->arr_type == GGUF_T_STRING);
	ck_assert_uint_eq(kv->arr_n, T_VOCAB);
	kv = gguf_find(f, "general.nested");
	ck_assert(kv && kv->arr_type == GGUF_T_ARRAY && kv->arr_n == 2);
	ck_assert_int_eq(gguf_file_type(f), RF_FT_Q4_K_M);

	for (size_t i = 0; i < N_TINY; i++) {
		const struct rf_tensor *t = &f->tensors[i];
		ck_assert_str_eq(t->name, tiny_tensors[i].name);
		ck_assert_uint_eq(t->n_dims, tiny_tensors[i].n_dims);
		ck_assert_int_eq(t->ne[0], (int64_t)tiny_tensors[i].ne[0]);
		ck_assert_int_eq(t->type, (int32_t)tiny_tensors[i].type);
		ck_assert_uint_eq(t->bytes, tensor_bytes(&tiny_tensors[i]));
		data += t->bytes;
	}
	ck_assert_uint_eq(f->data_bytes, data);
	ck_assert_int_eq(f->tensors[4].layer, 0);
	ck_assert_int_eq(f->tensors[4].cat, RF_TC_ATTN_V);
	ck_assert_int_eq(f->tensors[0].layer, RF_LAYER_INPUT);
	ck_assert_int_eq(f->tensors[N_TINY - 1].cat, RF_TC_OUTPUT);

	ck_assert_int_eq(gguf_to_arch(f, &a, field, sizeof(field)), 0);
	ck_assert_str_eq(a.model_type, "llama");
	ck_assert_int_eq(a.n_layers, 2);
	ck_assert_int_eq(a.hidden_size, T_HIDDEN);
	ck_assert_int_eq(a.n_heads, 4);
	ck_assert_int_eq(a.n_kv_heads, 2);
	ck_assert_int_eq(a.head_dim, 64);
	ck_assert_int_eq(a.intermediate_size, T_FF);
	ck_assert_int_eq(a.vocab_size, T_VOCAB);
	ck_assert_int_eq(a.max_position_embeddings, 4096);
	ck_assert(!a.tie_word_embeddings);
}

START_TEST(writes_and_reads_back_v3_and_v2)
{
	static const uint32_t versions[] = {3, 2};
	static const uint32_t aligns[] = {32, 64};

	for (int k = 0; k < 2; k++) {
		size_t len;
		uint8_t *buf = write_tiny(versions[k], aligns[k], &len);
		struct gguf_file *f = NULL;
		ck_assert_int_eq(parse(buf, len, &f), 0);
		check_tiny(f, versions[k], aligns[k]);
		gguf_free(f);
		/* Only the header in the buffer, the file size given apart. */
		ck_assert_int_eq(gguf_parse(buf, len - 4096, len, &f, NULL, 0), 0);
		check_tiny(f, versions[k], aligns[k]);
		gguf_free(f);
		free(buf);
	}
	gguf_free(NULL);
}
END_TEST

START_TEST(exact_weights_from_the_header)
{
	size_t len;
	uint8_t *buf = write_tiny(3, 32, &len);
	struct gguf_file *f = NULL;
	struct model_arch a;
	struct rf_mem_weights *w = malloc(sizeof(*w));
	char field[96];
	uint64_t layer0 = 0, layer1 = 0;

	ck_assert_int_eq(parse(buf, len, &f), 0);
	ck_assert_int_eq(gguf_to_arch(f, &a, field, sizeof(field)), 0);
	ck_assert_int_eq(rf_weights_from_tensors(&a, f->tensors, (size_t)f->n_tensors, w), 0);
	for (size_t i = 1; i <= 8; i++)
		layer0 += tensor_bytes(&tiny_tensors[i]);
	for (size_t i = 9; i <= 16; i++)
		layer1 += tensor_bytes(&tiny_tensors[i]);
	ck_assert_uint_eq(w->input_bytes, tensor_bytes(&tiny_tensors[0]));
	ck_assert_uint_eq(w->layer_bytes[0], layer0);
	ck_assert_uint_eq(w->layer_bytes[1], layer1);
	ck_assert_uint_eq(w->output_bytes,
			  tensor_bytes(&tiny_tensors[17]) + tensor_bytes(&tiny_tensors[18]));
	ck_assert_uint_eq(w->file_bytes, f->data_bytes);
	free(w);
	gguf_free(f);
	free(buf);
}
END_TEST

START_TEST(truncated_at_every_byte)
{
	size_t len;
	uint8_t *buf = write_model(3, 32, true, &len);
	struct gguf_file *whole = NULL;
	size_t end = 0;

	/* The file may end anywhere in the last tensor's padding; before that it is cut. */
	ck_assert_int_eq(parse(buf, len, &whole), 0);
	for (uint64_t i = 0; i < whole->n_tensors; i++) {
		uint64_t e =
			whole->data_offset + whole->tensors[i].offset + whole->tensors[i].bytes;
		if (e > end)
			end = (size_t)e;
	}
	gguf_free(whole);
	ck_assert_uint_le(end, len);
	for (size_t cut = 0; cut < end; cut++) {
		/* A fresh copy of exactly cut bytes, so a read past it is caught by ASan. */
		uint8_t *part = malloc(cut ? cut : 1);
		struct gguf_file *f = NULL;
		memcpy(part, buf, cut);
		ck_assert_msg(parse(part, cut, &f) < 0, "a file cut at %zu bytes parsed", cut);
		ck_assert_ptr_null(f);
		free(part);
	}
	free(buf);
}
END_TEST

/* A header with one key and one tensor, with fields to lie about. */
struct lie {
	uint32_t version;
	uint64_t n_tensors, n_kv;
	uint32_t kv_type;
	uint64_t str_len; /* the string value's declared length */
	uint32_t n_dims;
	uint64_t ne0, ne1;
	uint32_t ttype;
	uint64_t offset;
	const char *name;
	uint32_t align; /* 0: no general.alignment key */
};

static struct lie honest(void)
{
	struct lie l = {3, 1, 1, GGUF_T_STRING, 5, 2, 32, 4, RF_GT_F32, 0, "w.weight", 0};
	return l;
}

static uint8_t *write_lie(const struct lie *l, size_t *len)
{
	struct gw w = {0};

	gw_header(&w, l->version, l->n_tensors, l->n_kv + (l->align ? 1 : 0));
	gw_key(&w, "general.name", l->kv_type);
	gw_u64(&w, l->str_len);
	gw_raw(&w, "hello", 5);
	if (l->align)
		kv_u32(&w, "general.alignment", l->align);
	gw_tensor(&w, l->name, l->n_dims, (uint64_t[]){l->ne0, l->ne1, 1, 1, 1}, l->ttype,
		  l->offset);
	while (w.len % 32)
		gw_u8(&w, 0);
	for (int i = 0; i < 1024; i++)
		gw_u8(&w, 0);
	*len = w.len;
	return w.p;
}

static int parse_lie(const struct lie *l)
{
	size_t len;
	uint8_t *buf = write_lie(l, &len);
	struct gguf_file *f = NULL;
	int rc = parse(buf, len, &f);

	if (rc == 0)
		gguf_free(f);
	else
		ck_assert_ptr_null(f);
	free(buf);
	return rc;
}

START_TEST(lying_headers_are_errors)
{
	struct lie l = honest();

	ck_assert_int_eq(parse_lie(&l), 0);
	/* Counts larger than the file, or than the caps. */
	l = honest(), l.n_tensors = 1000;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.n_kv = 1000;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.n_tensors = 1ULL << 40;
	ck_assert_int_eq(parse_lie(&l), RF_E_TOO_LARGE);
	l = honest(), l.n_kv = UINT64_MAX;
	ck_assert_int_eq(parse_lie(&l), RF_E_TOO_LARGE);
	/* Bad type ids: a value type, tensor types out of range or removed from ggml. */
	l = honest(), l.kv_type = 13;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.kv_type = 0xffffffffu;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.ttype = 4;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.ttype = 99;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	/* Huge strings. */
	l = honest(), l.str_len = 1ULL << 62;
	ck_assert_int_eq(parse_lie(&l), RF_E_TOO_LARGE);
	l = honest(), l.str_len = UINT64_MAX;
	ck_assert_int_eq(parse_lie(&l), RF_E_TOO_LARGE);
	l = honest(), l.str_len = 100000;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	/* Dimensions: product overflow, negative as int64, too many, a row not in blocks. */
	l = honest(), l.ne0 = 1ULL << 40, l.ne1 = 1ULL << 40;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.ne0 = 1ULL << 63;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.n_dims = 5;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.n_dims = 0;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.ttype = RF_GT_Q4_K; /* 32 elements per row, Q4_K needs 256 */
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	/* Data outside the file, misaligned, alignment not a power of 2. */
	l = honest(), l.offset = 1 << 20;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.offset = 4;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.align = 48;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.align = 64;
	ck_assert_int_eq(parse_lie(&l), 0);
	/* Versions and names. */
	l = honest(), l.version = 1;
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.version = 0x03000000; /* a big-endian file */
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(), l.name = "";
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
	l = honest(),
	l.name = "a.name.that.is.far.too.long.for.ggml.which.allows.sixty.three.bytes";
	ck_assert_int_eq(parse_lie(&l), RF_E_PARSE);
}
END_TEST

START_TEST(other_malformed_headers)
{
	struct gw w = {0};
	struct gguf_file *f = NULL;
	char msg[200];

	/* Not GGUF at all, and empty. */
	ck_assert_int_eq(gguf_parse("GGML", 4, 0, &f, msg, sizeof(msg)), RF_E_PARSE);
	ck_assert_ptr_nonnull(strstr(msg, "magic"));
	ck_assert_int_eq(gguf_parse("", 0, 0, &f, NULL, 0), RF_E_PARSE);
	ck_assert_int_eq(gguf_parse(NULL, 0, 0, &f, NULL, 0), RF_E_PARSE);

	/* Duplicate keys. */
	gw_header(&w, 3, 0, 2);
	kv_u32(&w, "a.b", 1);
	kv_u32(&w, "a.b", 2);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, msg, sizeof(msg)), RF_E_PARSE);
	w.len = 0;
	/* Duplicate tensor names. */
	gw_header(&w, 3, 2, 0);
	gw_tensor(&w, "x.weight", 1, (uint64_t[]){8}, RF_GT_F32, 0);
	gw_tensor(&w, "x.weight", 1, (uint64_t[]){8}, RF_GT_F32, 32);
	for (int i = 0; i < 128; i++)
		gw_u8(&w, 0);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, msg, sizeof(msg)), RF_E_PARSE);
	w.len = 0;
	/* A bool that is neither 0 nor 1, an empty key, a key with a NUL byte. */
	gw_header(&w, 3, 0, 1);
	gw_key(&w, "b", GGUF_T_BOOL);
	gw_u8(&w, 2);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), RF_E_PARSE);
	w.len = 0;
	gw_header(&w, 3, 0, 1);
	kv_u32(&w, "", 1);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), RF_E_PARSE);
	w.len = 0;
	gw_header(&w, 3, 0, 1);
	gw_u64(&w, 3);
	gw_raw(&w, "a\0b", 3);
	gw_u32(&w, GGUF_T_UINT8);
	gw_u8(&w, 1);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), RF_E_PARSE);
	w.len = 0;
	/* Arrays: too long for the file, over the cap, of an unknown type, nested too deep. */
	gw_header(&w, 3, 0, 1);
	gw_key(&w, "arr", GGUF_T_ARRAY);
	gw_u32(&w, GGUF_T_UINT32);
	gw_u64(&w, 1000);
	gw_u32(&w, 1);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), RF_E_PARSE);
	w.len = 0;
	gw_header(&w, 3, 0, 1);
	gw_key(&w, "arr", GGUF_T_ARRAY);
	gw_u32(&w, GGUF_T_UINT8);
	gw_u64(&w, 1ULL << 40);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), RF_E_TOO_LARGE);
	w.len = 0;
	gw_header(&w, 3, 0, 1);
	gw_key(&w, "arr", GGUF_T_ARRAY);
	gw_u32(&w, 77);
	gw_u64(&w, 1);
	gw_u32(&w, 0);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), RF_E_PARSE);
	w.len = 0;
	gw_header(&w, 3, 0, 1);
	gw_key(&w, "arr", GGUF_T_ARRAY);
	for (int d = 0; d < GGUF_MAX_ARRAY_DEPTH + 1; d++) {
		gw_u32(&w, GGUF_T_ARRAY);
		gw_u64(&w, 1);
	}
	for (int i = 0; i < 64; i++)
		gw_u8(&w, 0);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), RF_E_TOO_LARGE);
	ck_assert_ptr_null(f);
	free(w.p);
}
END_TEST

/* Tensors that share their bytes: each lies inside the file, but their sum is more than the
 * file holds. With the file's size claimed at 2^62 + the header, five 2^62-byte tensors at
 * offset 0 sum to 5 * 2^62, which wrapped around to a plausible 2^62 before the sum was
 * checked. */
START_TEST(overlapping_tensors_do_not_add_up_past_the_file)
{
	const uint64_t big = UINT64_C(1) << 62;
	struct gw w = {0};
	struct gguf_file *f = NULL;
	char msg[200] = "", name[32];

	gw_header(&w, 3, 5, 0);
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "t%d.weight", i);
		gw_tensor(&w, name, 2, (uint64_t[]){UINT64_C(1) << 30, big >> 32}, RF_GT_F32, 0);
	}
	while (w.len % 32)
		gw_u8(&w, 0);
	ck_assert_int_eq(gguf_parse(w.p, w.len, w.len + big, &f, msg, sizeof(msg)), RF_E_PARSE);
	ck_assert_ptr_nonnull(strstr(msg, "overlap"));
	ck_assert_ptr_null(f);
	/* One of them alone is a file of 2^62 bytes of data, as claimed. */
	w.len = 0;
	gw_header(&w, 3, 1, 0);
	gw_tensor(&w, "t0.weight", 2, (uint64_t[]){UINT64_C(1) << 30, big >> 32}, RF_GT_F32, 0);
	while (w.len % 32)
		gw_u8(&w, 0);
	ck_assert_int_eq(gguf_parse(w.p, w.len, w.len + big, &f, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(f->data_bytes, big);
	gguf_free(f);
	/* Two small tensors over the same 128 bytes of a real buffer. */
	w.len = 0;
	gw_header(&w, 3, 2, 0);
	gw_tensor(&w, "a.weight", 1, (uint64_t[]){32}, RF_GT_F32, 0);
	gw_tensor(&w, "b.weight", 1, (uint64_t[]){32}, RF_GT_F32, 0);
	while (w.len % 32)
		gw_u8(&w, 0);
	for (int i = 0; i < 128; i++)
		gw_u8(&w, 0);
	f = NULL;
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, msg, sizeof(msg)), RF_E_PARSE);
	ck_assert_ptr_null(f);
	free(w.p);
}
END_TEST

START_TEST(random_corruption_never_crashes)
{
	size_t len;
	uint8_t *buf = write_model(3, 32, true, &len);
	uint8_t *copy = malloc(len);
	uint32_t seed = 12345;
	int ok = 0;

	for (int iter = 0; iter < 2000; iter++) {
		struct gguf_file *f = NULL;
		memcpy(copy, buf, len);
		for (int k = 0; k < 1 + iter % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			size_t pos = (seed >> 8) % (len / 4); /* mostly the header */
			seed = seed * 1103515245u + 12345u;
			copy[pos] = (uint8_t)(seed >> 16);
		}
		if (parse(copy, len, &f) == 0) {
			ok++;
			gguf_free(f);
		}
	}
	/* Some corruptions hit bytes that do not matter (token text); most are caught. */
	ck_assert_int_lt(ok, 2000);
	free(copy);
	free(buf);
}
END_TEST

/* A Qwen2.5-7B-like header of 32768 positions, with n_more keys to follow. */
static void qwen2_header(struct gw *w, uint64_t n_more)
{
	gw_header(w, 3, 0, 7 + n_more);
	kv_str(w, "general.architecture", "qwen2");
	kv_u32(w, "qwen2.vocab_size", 152064);
	kv_u32(w, "qwen2.feed_forward_length", 18944);
	kv_u32(w, "qwen2.block_count", 28);
	kv_u32(w, "qwen2.embedding_length", 3584);
	kv_u32(w, "qwen2.attention.head_count", 28);
	kv_u32(w, "qwen2.context_length", 32768);
}

START_TEST(architectures_from_gguf_metadata)
{
	struct gw w = {0};
	struct gguf_file *f = NULL;
	struct model_arch a;
	char field[96];

	/* A DeepSeek-V2-Lite-like header: MLA and experts. */
	gw_header(&w, 3, 1, 14);
	kv_str(&w, "general.architecture", "deepseek2");
	kv_u32(&w, "deepseek2.block_count", 27);
	kv_u32(&w, "deepseek2.embedding_length", 2048);
	kv_u32(&w, "deepseek2.attention.head_count", 16);
	kv_u32(&w, "deepseek2.attention.head_count_kv", 16);
	kv_u32(&w, "deepseek2.attention.key_length", 192);
	kv_u32(&w, "deepseek2.attention.value_length", 128);
	kv_u32(&w, "deepseek2.feed_forward_length", 10944);
	kv_u32(&w, "deepseek2.expert_count", 64);
	kv_u32(&w, "deepseek2.expert_used_count", 6);
	kv_u32(&w, "deepseek2.expert_feed_forward_length", 1408);
	kv_u32(&w, "deepseek2.attention.kv_lora_rank", 512);
	kv_u32(&w, "deepseek2.rope.dimension_count", 64);
	kv_u32(&w, "deepseek2.vocab_size", 102400);
	gw_tensor(&w, "output.weight", 2, (uint64_t[]){2048, 102400}, RF_GT_Q6_K, 0);
	while (w.len % 32)
		gw_u8(&w, 0);
	ck_assert_int_eq(gguf_parse(w.p, w.len, w.len + 172032000ULL, &f, NULL, 0), 0);
	ck_assert_int_eq(gguf_to_arch(f, &a, field, sizeof(field)), 0);
	ck_assert_str_eq(a.model_type, "deepseek_v2");
	ck_assert_int_eq(a.kv_lora_rank, 512);
	ck_assert_int_eq(a.qk_rope_head_dim, 64);
	ck_assert_int_eq(a.qk_nope_head_dim, 128);
	ck_assert_int_eq(model_kv_k_width(&a), 576);
	ck_assert_int_eq(model_kv_v_width(&a), 0);
	ck_assert_int_eq(a.n_experts, 64);
	ck_assert_int_eq(a.vocab_size, 102400);
	gguf_free(f);
	w.len = 0;

	/* A Qwen2.5 file converted from a config with the card's YaRN: llama.cpp applies it from
	 * the metadata, reaching 32768 x 4 positions. */
	qwen2_header(&w, 3);
	kv_str(&w, "qwen2.rope.scaling.type", "yarn");
	kv_f32(&w, "qwen2.rope.scaling.factor", 4.0f);
	kv_u32(&w, "qwen2.rope.scaling.original_context_length", 32768);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), 0);
	ck_assert_msg(gguf_to_arch(f, &a, field, sizeof(field)) == 0, "%s", field);
	ck_assert_int_eq(a.max_position_embeddings, 131072);
	gguf_free(f);
	w.len = 0;
	/* Linear scaling: context_length already counts it. */
	qwen2_header(&w, 2);
	kv_str(&w, "qwen2.rope.scaling.type", "linear");
	kv_f32(&w, "qwen2.rope.scaling.factor", 4.0f);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), 0);
	ck_assert_int_eq(gguf_to_arch(f, &a, field, sizeof(field)), 0);
	ck_assert_int_eq(a.max_position_embeddings, 32768);
	gguf_free(f);
	w.len = 0;

	/* No architecture, no block count: errors naming the key. */
	gw_header(&w, 3, 0, 1);
	kv_str(&w, "general.architecture", "gemma3");
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), 0);
	ck_assert_int_eq(gguf_to_arch(f, &a, field, sizeof(field)), RF_E_PARSE);
	ck_assert_str_eq(field, "gemma3.block_count");
	gguf_free(f);
	w.len = 0;
	gw_header(&w, 3, 0, 1);
	kv_u32(&w, "general.alignment", 32);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), 0);
	ck_assert_int_eq(gguf_to_arch(f, &a, field, sizeof(field)), RF_E_PARSE);
	ck_assert_str_eq(field, "general.architecture");
	gguf_free(f);
	w.len = 0;
	/* Absurd facts are refused like a config.json's. */
	gw_header(&w, 3, 0, 5);
	kv_str(&w, "general.architecture", "llama");
	kv_u32(&w, "llama.block_count", 0);
	kv_u32(&w, "llama.embedding_length", 4096);
	kv_u32(&w, "llama.attention.head_count", 32);
	kv_u32(&w, "llama.feed_forward_length", 14336);
	ck_assert_int_eq(gguf_parse(w.p, w.len, 0, &f, NULL, 0), 0);
	ck_assert_int_eq(gguf_to_arch(f, &a, field, sizeof(field)), RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(field, "num_hidden_layers"));
	gguf_free(f);
	free(w.p);
}
END_TEST

Suite *gguf_suite(void)
{
	Suite *s = suite_create("gguf");
	TCase *tc = tcase_create("gguf");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, writes_and_reads_back_v3_and_v2);
	tcase_add_test(tc, exact_weights_from_the_header);
	tcase_add_test(tc, truncated_at_every_byte);
	tcase_add_test(tc, lying_headers_are_errors);
	tcase_add_test(tc, other_malformed_headers);
	tcase_add_test(tc, overlapping_tensors_do_not_add_up_past_the_file);
	tcase_add_test(tc, random_corruption_never_crashes);
	tcase_add_test(tc, architectures_from_gguf_metadata);
	suite_add_tcase(s, tc);
	return s;
}

/* For other suites: a complete GGUF v3 file of a tiny llama model (see write_model). */
unsigned char *t_gguf_write_tiny(size_t *len)
{
	return write_tiny(3, 32, len);
}
