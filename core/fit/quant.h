/*
 * GGUF tensor types and quantization schemes, as llama.cpp has them.
 *
 * Three things live here. The ggml tensor types (F16, Q4_K, IQ4_XS, MXFP4...) with their block
 * size and bytes per block, so that the bytes of any tensor follow from its shape. The file
 * types a user names ("Q4_K_M", "IQ3_XS"...: llama.cpp's llama_ftype), each with its default
 * tensor type and its per-tensor mix: llama-quantize gives some tensors more bits (the output
 * matrix, attn_v and ffn_down on chosen layers, experts' attn_k...). Those rules are modelled
 * here from how llama.cpp decides (by tensor name, layer and model shape), so that a scheme's
 * size is counted tensor by tensor, the way the file will really be. And the description of one
 * tensor (struct rf_tensor), shared by the GGUF reader, the architecture enumerator in
 * core/fit/model.c and the estimator.
 *
 * Pure: no I/O, no allocation except where a function says so.
 */
#ifndef RIGFIT_CORE_QUANT_H
#define RIGFIT_CORE_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ggml type ids, as written in GGUF tensor infos. Ids 4, 5, 31-33 and 36-38 were removed from
 * ggml and are rejected. */
enum rf_gtype {
	RF_GT_F32 = 0,
	RF_GT_F16 = 1,
	RF_GT_Q4_0 = 2,
	RF_GT_Q4_1 = 3,
	RF_GT_Q5_0 = 6,
	RF_GT_Q5_1 = 7,
	RF_GT_Q8_0 = 8,
	RF_GT_Q8_1 = 9,
	RF_GT_Q2_K = 10,
	RF_GT_Q3_K = 11,
	RF_GT_Q4_K = 12,
	RF_GT_Q5_K = 13,
	RF_GT_Q6_K = 14,
	RF_GT_Q8_K = 15,
	RF_GT_IQ2_XXS = 16,
	RF_GT_IQ2_XS = 17,
	RF_GT_IQ3_XXS = 18,
	RF_GT_IQ1_S = 19,
	RF_GT_IQ4_NL = 20,
	RF_GT_IQ3_S = 21,
	RF_GT_IQ2_S = 22,
	RF_GT_IQ4_XS = 23,
	RF_GT_I8 = 24,
	RF_GT_I16 = 25,
	RF_GT_I32 = 26,
	RF_GT_I64 = 27,
	RF_GT_F64 = 28,
	RF_GT_IQ1_M = 29,
	RF_GT_BF16 = 30,
	RF_GT_TQ1_0 = 34,
	RF_GT_TQ2_0 = 35,
	RF_GT_MXFP4 = 39,
	RF_GT_COUNT = 40
};

struct rf_gtype_info {
	const char *name; /* ggml's name: "q4_K", "f16" */
	int32_t block;    /* elements per block */
	int32_t bytes;    /* bytes per block */
	bool quantized;
};

/* Returns the facts of type id t, or NULL when t is not a ggml type (out of range or removed). */
const struct rf_gtype_info *rf_gtype(int t);

/* Finds a type by its ggml name, case-insensitively ("q8_0", "F16", "bf16"). Returns the id or
 * -1. */
int rf_gtype_from_name(const char *name);

/* Bits per weight of type t (bytes * 8 / block); 0 for an unknown type. */
double rf_gtype_bpw(int t);

/* Writes the bytes of one row of ne0 elements of type t to *out. Returns 0, RF_E_INVALID_VALUE
 * (unknown type, ne0 < 0 or not a multiple of the block size) or RF_E_TOO_LARGE. */
int rf_gtype_row_bytes(int t, int64_t ne0, uint64_t *out /* OUT */);

/* llama.cpp's file types (llama_ftype), with the ids GGUF stores in general.file_type. */
enum rf_ftype {
	RF_FT_F32 = 0,
	RF_FT_F16 = 1,
	RF_FT_Q4_0 = 2,
	RF_FT_Q4_1 = 3,
	RF_FT_Q8_0 = 7,
	RF_FT_Q5_0 = 8,
	RF_FT_Q5_1 = 9,
	RF_FT_Q2_K = 10,
	RF_FT_Q3_K_S = 11,
	RF_FT_Q3_K_M = 12,
	RF_FT_Q3_K_L = 13,
	RF_FT_Q4_K_S = 14,
	RF_FT_Q4_K_M = 15,
	RF_FT_Q5_K_S = 16,
	RF_FT_Q5_K_M = 17,
	RF_FT_Q6_K = 18,
	RF_FT_IQ2_XXS = 19,
	RF_FT_IQ2_XS = 20,
	RF_FT_Q2_K_S = 21,
	RF_FT_IQ3_XS = 22,
	RF_FT_IQ3_XXS = 23,
	RF_FT_IQ1_S = 24,
	RF_FT_IQ4_NL = 25,
	RF_FT_IQ3_S = 26,
	RF_FT_IQ3_M = 27,
	RF_FT_IQ2_S = 28,
	RF_FT_IQ2_M = 29,
	RF_FT_IQ4_XS = 30,
	RF_FT_IQ1_M = 31,
	RF_FT_BF16 = 32,
	RF_FT_TQ1_0 = 36,
	RF_FT_TQ2_0 = 37,
	RF_FT_MXFP4_MOE = 38,
};

/* Unsloth's dynamic quants ("UD-Q4_K_XL", "UD-Q2_K_XL", "UD-IQ1_S"...): the base scheme their
 * mix starts from (Q4_K_M for UD-Q4_K_XL, Q8_0 for UD-Q8_K_XL) with this flag set. Unsloth
 * keeps the tensors its own description calls important at higher precision ("Run DeepSeek
 * R1 Dynamic 1.58-bit", https://unsloth.ai/blog/deepseekr1-dynamic: the routed experts at the
 * low type, attention, the dense layers and the shared experts at 4 or 6 bits, down_proj
 * higher; Dynamic 2.0: every architecture, embeddings and output included): rf_quant_apply
 * says which. A GGUF file needs none of this: its tensors carry their own types. */
#define RF_FT_UD 0x100

/* Returns the scheme called name ("Q4_K_M", case-insensitive; "F16", "MXFP4_MOE",
 * "UD-Q4_K_XL"...), or -1. */
int rf_ftype_from_name(const char *name);
/* Returns the canonical name of scheme ft ("Q4_K_M", "UD-Q4_K_XL"), or NULL for an unknown
 * one. */
const char *rf_ftype_name(int ft);
/* Returns the tensor type most tensors of scheme ft get (Q4_K for Q4_K_M), or -1. */
int rf_ftype_default_type(int ft);
/* Returns true when llama-quantize refuses scheme ft without an importance matrix (the IQ1/IQ2
 * types, IQ3_XXS and Q2_K_S): those files are always made with one. */
bool rf_ftype_needs_imatrix(int ft);
/* Returns the number of llama-quantize's schemes (no UD ones) and writes them (up to cap) to
 * out, in a stable order. */
size_t rf_ftype_list(int *out, size_t cap);

/* Where a tensor lives in llama.cpp's layout. */
#define RF_LAYER_INPUT (-1)  /* token and position embeddings: always in host memory */
#define RF_LAYER_OUTPUT (-2) /* output norm and head: with the last offloaded layer */

/* The tensor categories llama-quantize's mix rules look at (by name, as it does). */
enum rf_tcat {
	RF_TC_OTHER = 0,
	RF_TC_TOKEN_EMBD,
	RF_TC_OUTPUT,
	RF_TC_ATTN_Q,
	RF_TC_ATTN_K,
	RF_TC_ATTN_V,
	RF_TC_ATTN_QKV,
	RF_TC_ATTN_KV_B,
	RF_TC_ATTN_OUTPUT,
	RF_TC_FFN_UP,
	RF_TC_FFN_GATE,
	RF_TC_FFN_DOWN,
};

#define RF_TENSOR_NAME_LEN 64 /* llama.cpp's GGML_MAX_NAME: names are at most 63 bytes */
#define RF_TENSOR_MAX_DIMS 4

/* One tensor: its GGUF name, shape, type and bytes. Plain data. */
struct rf_tensor {
	char name[RF_TENSOR_NAME_LEN];
	uint32_t n_dims;
	int64_t ne[RF_TENSOR_MAX_DIMS]; /* ne[0] is the row length; unused dims are 1 */
	int32_t type;                   /* enum rf_gtype */
	uint64_t bytes;                 /* rf_tensor_set_bytes() */
	uint64_t offset;                /* GGUF: offset in the data section; else 0 */
	/* Derived from the name by rf_tensor_classify(). */
	int32_t layer; /* >= 0: repeating layer; RF_LAYER_INPUT; RF_LAYER_OUTPUT */
	enum rf_tcat cat;
	bool expert; /* stacked routed experts ("_exps"): ne[2] experts */
};

/* Sets t->layer, t->cat and t->expert from t->name, as llama.cpp reads names ("blk.7.attn_v.weight",
 * "enc.blk.0.attn_q.weight", "token_embd.weight", "output.weight"...). Names outside the
 * repeating layers that are not input tensors go with the output layer. */
void rf_tensor_classify(struct rf_tensor *t);

/* Returns the number of elements of t (product of ne), or -1 on overflow or a negative dim. */
int64_t rf_tensor_nelements(const struct rf_tensor *t);

/* Computes t->bytes from t->type and t->ne. Returns 0, RF_E_INVALID_VALUE (unknown type, row
 * not a multiple of the block) or RF_E_TOO_LARGE (overflow). */
int rf_tensor_set_bytes(struct rf_tensor *t);

/* Returns true when llama-quantize would quantize t: a weight of 2 or more dimensions that is
 * not a norm, a router (ffn_gate_inp), a position or token-type embedding or T5's relative
 * attention bias. */
bool rf_tensor_quantizable(const struct rf_tensor *t);

/* Model facts the mix rules depend on. */
struct rf_quant_model {
	int64_t n_layer;    /* repeating layers (llama.cpp's n_layer) */
	int64_t n_head;     /* of layer 0 */
	int64_t n_head_kv;  /* of layer 0 */
	int64_t n_expert;   /* routed experts; 0 or 1: dense */
	bool is_70b;        /* llama.cpp's LLM_TYPE_70B: attn_v gets Q5_K instead of Q3_K/Q4_K */
	bool imatrix;       /* quantized with an importance matrix */
	bool experts_mxfp4; /* the checkpoint's routed experts are MXFP4 (gpt-oss): they stay so */
};

/* Gives every quantizable tensor of t[0..n) the type scheme ft gives it (with llama-quantize's
 * per-tensor mix and its fallbacks for rows that do not divide into blocks), leaves the others
 * as they are, and sets every tensor's bytes. The mix counts attn_v tensors in the order
 * llama-quantize visits them (by layer number, then by name), whatever the order of t. A tied
 * model (no "output.weight") quantizes token_embd as the output. Returns 0 or a negative rf_err
 * (unknown scheme, a shape no type fits, RF_E_NOMEM). */
int rf_quant_apply(const struct rf_quant_model *m, int ft, struct rf_tensor *t, size_t n);

#endif
