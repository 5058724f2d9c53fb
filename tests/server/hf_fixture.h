/*
 * Hugging Face checkpoints written by the tests: config.json as Hugging Face publishes it and
 * safetensors files whose headers list every tensor of the real checkpoint by its
 * transformers name, shape and dtype, the tensor data left sparse (the file has its full
 * size; nothing past the header is ever read). Qwen2.5-0.5B has 494,032,768 parameters and
 * Llama-3.2-1B 1,235,814,400 (their model cards' safetensors totals).
 */
#ifndef RIGFIT_TESTS_SERVER_HF_FIXTURE_H
#define RIGFIT_TESTS_SERVER_HF_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct rf_config;

struct t_tensor {
	char name[96];
	int64_t shape[2];
	int rank;
	char dtype[8]; /* "" is BF16 */
};

struct t_tlist {
	struct t_tensor t[400];
	int n;
};

#define T_QWEN05_PARAMS 494032768LL

extern const char t_hf_qwen05_config[];
extern const char t_hf_llama32_1b_config[];

/* Appends tensor name of shape [a] (b <= 0) or [a, b] to l. */
void t_hf_add(struct t_tlist *l, const char *name, int64_t a, int64_t b);

/* The same with a safetensors dtype: "BF16", "F16", "F32", "I32", "U8", "F8_E4M3". */
void t_hf_add_typed(struct t_tlist *l, const char *name, int64_t a, int64_t b, const char *dtype);

/* Appends the tensors of a Llama-family decoder as transformers names them (bias on q/k/v for
 * Qwen2 when qkv_bias; no lm_head when tied). */
void t_hf_decoder(struct t_tlist *l, int layers, int64_t hidden, int64_t inter, int heads, int kv,
		  int64_t head_dim, int64_t vocab, int qkv_bias, int tied);

/* Writes tensors [from, to) of l as the safetensors file path (in their dtypes, data sparse). bad: 1
 * makes the first tensor's data_offsets disagree with its shape. */
void t_hf_write_safetensors(const char *path, const struct t_tlist *l, int from, int to, int bad);

/* Returns the JSON text (malloc'd, NUL-terminated, length in *len) of a safetensors header of
 * n F64 tensors "t.<i>" of shape [10^12, 10], each with data_offsets [0, 8 * 10^13]: every entry
 * agrees with itself, but together they claim n times 80 TB, 9.6e18 bytes for 120,000 of them
 * (past 2^63), in a header of about 10 MB. */
char *t_hf_flood_header(int n, size_t *len /* OUT */);

/* Writes the safetensors file path: the 8-byte length of header[0..len), the header, then
 * data_bytes of sparse data. */
void t_hf_write_raw_safetensors(const char *path, const char *header, size_t len,
				uint64_t data_bytes);

/* Writes a Qwen2.5-0.5B folder at dir (created): config.json, two shards and their index. */
void t_hf_write_qwen05(const char *dir);

/* Writes a Hugging Face cache repository hub/models--ORG--NAME (hub created when missing) as
 * huggingface_hub lays it out: a Qwen2.5-0.5B checkpoint in blobs/, refs/main holding rev,
 * and snapshots/REV/ linking to the blobs. */
void t_hf_cache_write_qwen05(const char *hub, const char *org, const char *name, const char *rev);

/* Writes Ollama's store at store (created when missing) with the library tag NAME:TAG: its
 * manifest, whose model layer is the tiny GGUF file (t_gguf_write_tiny) and whose template
 * layer is 1 byte, and that blob. */
void t_ollama_write_tag(const char *store, const char *name, const char *tag);

/* Clears cfg and points it at root: models dir root/models (created), Hugging Face cache
 * root/hub and Ollama's store root/ollama (neither created). */
void t_models_cfg_under(const char *root, struct rf_config *cfg /* OUT */);

/* Writes the tiny GGUF file (t_gguf_write_tiny) at path; returns its length. */
size_t t_gguf_write_tiny_at(const char *path);

/* Returns the entry of a GET /api/models answer whose id is id, or NULL. */
const struct cJSON *t_models_find(const struct cJSON *list, const char *id);

#endif
