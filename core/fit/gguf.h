/*
 * A GGUF (v2 and v3) header reader over a buffer: the magic, the version, the metadata key/value
 * pairs of every type (arrays included), the tensor infos (name, shape, type, offset) and the
 * data alignment. From these it takes the architecture facts (<arch>.block_count,
 * .embedding_length, .attention.head_count...) and the exact bytes of every tensor, so that an
 * estimate for a GGUF file needs no quantization guess at all.
 *
 * The reader is written for hostile input: every count, length and dimension is checked against
 * the bytes that remain and against a cap before anything is allocated, so a truncated or lying
 * header is an error (RF_E_PARSE, RF_E_TOO_LARGE), never a crash or a huge allocation.
 *
 * Pure: the caller reads the file (the header, or all of it) and passes the bytes.
 */
#ifndef RIGFIT_CORE_GGUF_H
#define RIGFIT_CORE_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/fit/model.h"
#include "core/fit/quant.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32

/* Caps. llama.cpp's own files stay far below them (a 671B model has ~1100 tensors; a tokenizer
 * array ~260k strings). */
#define GGUF_MAX_TENSORS (1u << 16)
#define GGUF_MAX_KV (1u << 16)
#define GGUF_MAX_KEY_LEN 65535u
#define GGUF_MAX_STRING_LEN (16u << 20)
#define GGUF_MAX_ARRAY_LEN (1u << 26)
#define GGUF_MAX_ARRAY_DEPTH 4
#define GGUF_MAX_ALIGNMENT (1u << 20)
#define GGUF_ARRAY_KEEP 4096 /* numeric array elements kept (as doubles) per key */

enum gguf_vtype {
	GGUF_T_UINT8 = 0,
	GGUF_T_INT8 = 1,
	GGUF_T_UINT16 = 2,
	GGUF_T_INT16 = 3,
	GGUF_T_UINT32 = 4,
	GGUF_T_INT32 = 5,
	GGUF_T_FLOAT32 = 6,
	GGUF_T_BOOL = 7,
	GGUF_T_STRING = 8,
	GGUF_T_ARRAY = 9,
	GGUF_T_UINT64 = 10,
	GGUF_T_INT64 = 11,
	GGUF_T_FLOAT64 = 12,
	GGUF_T_COUNT = 13
};

struct gguf_kv {
	char *key; /* owned, NUL-terminated */
	enum gguf_vtype type;
	/* Scalars: the value, in the field its type suggests. */
	uint64_t u;
	int64_t i;
	double f;
	bool b;
	char *str; /* STRING: owned copy, NUL-terminated (NUL bytes inside are kept as is) */
	size_t str_len;
	/* ARRAY: element type, length; numeric elements also as doubles (the first
	 * GGUF_ARRAY_KEEP of them, owned). Arrays of strings or arrays keep only the length. */
	enum gguf_vtype arr_type;
	uint64_t arr_n;
	double *arr;
	size_t arr_kept;
};

struct gguf_file {
	uint32_t version;
	uint64_t n_kv;
	struct gguf_kv *kv; /* owned, n_kv entries */
	uint64_t n_tensors;
	struct rf_tensor *tensors; /* owned, n_tensors entries, classified (rf_tensor_classify) */
	uint64_t alignment;
	uint64_t data_offset;  /* where tensor data starts in the file */
	uint64_t data_bytes;   /* the sum of the tensors' bytes */
	uint64_t header_bytes; /* bytes of the header, before the padding to data_offset */
};

/* Parses the GGUF header in buf[0..len). file_size is the size of the whole file (0: len), used
 * to check that every tensor's data lies inside the file; buf must hold at least the header.
 * Returns 0 and a new gguf_file in *out (free with gguf_free), or RF_E_PARSE (bad magic or
 * version, truncated, a count larger than the bytes left, an unknown value or tensor type,
 * dimensions that overflow, a tensor outside the file, tensors that together take more
 * bytes than the file's data holds (they overlap), duplicate names), RF_E_TOO_LARGE (a cap
 * exceeded) or RF_E_NOMEM. On error *out is untouched and, when msg is not NULL, msg holds a
 * short reason. */
int gguf_parse(const void *buf, size_t len, uint64_t file_size, struct gguf_file **out /* OUT */,
	       char *msg, size_t msglen);

/* gguf_parse over the first len bytes of a file of file_size bytes. When the header goes on
 * past len (a read ran past the buffer where the file has the bytes), the error is RF_E_PARSE
 * with *more true (more NULL: not asked): read more of the file and parse again. *more is false
 * on success and on every other error. */
int gguf_parse_prefix(const void *buf, size_t len, uint64_t file_size,
		      struct gguf_file **out /* OUT */, bool *more /* OUT, may be NULL */,
		      char *msg, size_t msglen);

/* Frees f. NULL is a no-op. */
void gguf_free(struct gguf_file *f);

/* Returns the pair with this key, or NULL. */
const struct gguf_kv *gguf_find(const struct gguf_file *f, const char *key);

/* Reads an integer value (any integer type, non-negative; an array gives its largest element).
 * Returns 0 and *out, or RF_E_NOT_FOUND (absent) / RF_E_INVALID_VALUE (not a non-negative
 * integer). */
int gguf_get_uint(const struct gguf_file *f, const char *key, uint64_t *out /* OUT */);

/* Returns the string value of key (NUL-terminated, owned by f), or NULL. */
const char *gguf_get_str(const struct gguf_file *f, const char *key);

/* Fills a model_arch from the metadata of f: general.architecture, <arch>.block_count,
 * .embedding_length, .attention.head_count(_kv), .attention.key_length / value_length,
 * .context_length, .feed_forward_length, .expert_count, .expert_used_count,
 * .expert_feed_forward_length, .attention.kv_lora_rank, .attention.sliding_window, and the
 * vocabulary from the length of tokenizer.ggml.tokens. A file that applies YaRN itself
 * (.rope.scaling.type "yarn", .factor, .original_context_length) reaches original x factor
 * positions, which max_position_embeddings then holds where it is more. Unknown architectures keep llama.cpp's
 * architecture name as model_type. Returns 0, or RF_E_PARSE / RF_E_INVALID_VALUE with the
 * missing or bad key written to field (size fieldlen). */
int gguf_to_arch(const struct gguf_file *f, struct model_arch *out /* OUT */, char *field,
		 size_t fieldlen);

/* Returns the quantization scheme of general.file_type (enum rf_ftype), or -1. */
int gguf_file_type(const struct gguf_file *f);

#endif
