/*
 * Hugging Face checkpoints written by the tests (see hf_fixture.h).
 */
#include "tests/server/hf_fixture.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/config.h"
#include "tests/test.h"

void t_hf_add(struct t_tlist *l, const char *name, int64_t a, int64_t b)
{
	struct t_tensor *t = &l->t[l->n++];
	ck_assert_int_le(l->n, 400);
	snprintf(t->name, sizeof(t->name), "%s", name);
	t->shape[0] = a;
	t->shape[1] = b;
	t->rank = b > 0 ? 2 : 1;
	t->dtype[0] = '\0';
}

void t_hf_add_typed(struct t_tlist *l, const char *name, int64_t a, int64_t b, const char *dtype)
{
	t_hf_add(l, name, a, b);
	snprintf(l->t[l->n - 1].dtype, sizeof(l->t[l->n - 1].dtype), "%s", dtype);
}

/* Bytes per element of a safetensors dtype ("" is BF16). */
static uint64_t dtype_bytes(const char *dtype)
{
	if (strcmp(dtype, "F32") == 0 || strcmp(dtype, "I32") == 0)
		return 4;
	if (strcmp(dtype, "U8") == 0 || strcmp(dtype, "I8") == 0 || strcmp(dtype, "F8_E4M3") == 0)
		return 1;
	return 2;
}

/* The tensors of a Llama-family decoder as transformers names them (bias on q/k/v for Qwen2). */
void t_hf_decoder(struct t_tlist *l, int layers, int64_t hidden, int64_t inter, int heads, int kv,
		  int64_t head_dim, int64_t vocab, int qkv_bias, int tied)
{
	char n[96];

	t_hf_add(l, "model.embed_tokens.weight", vocab, hidden);
	for (int i = 0; i < layers; i++) {
#define T(suffix, a, b)                                                                            \
	do {                                                                                       \
		snprintf(n, sizeof(n), "model.layers.%d.%s", i, suffix);                           \
		t_hf_add(l, n, a, b);                                                              \
	} while (0)
		T("input_layernorm.weight", hidden, 0);
		T("post_attention_layernorm.weight", hidden, 0);
		T("self_attn.q_proj.weight", heads * head_dim, hidden);
		T("self_attn.k_proj.weight", kv * head_dim, hidden);
		T("self_attn.v_proj.weight", kv * head_dim, hidden);
		T("self_attn.o_proj.weight", hidden, heads * head_dim);
		if (qkv_bias) {
			T("self_attn.q_proj.bias", heads * head_dim, 0);
			T("self_attn.k_proj.bias", kv * head_dim, 0);
			T("self_attn.v_proj.bias", kv * head_dim, 0);
		}
		T("mlp.gate_proj.weight", inter, hidden);
		T("mlp.up_proj.weight", inter, hidden);
		T("mlp.down_proj.weight", hidden, inter);
#undef T
	}
	t_hf_add(l, "model.norm.weight", hidden, 0);
	if (!tied)
		t_hf_add(l, "lm_head.weight", vocab, hidden);
}

/* Writes tensors [from, to) of l as the safetensors file path (in their dtypes, data sparse). bad: 1
 * makes the first tensor's data_offsets disagree with its shape. */
void t_hf_write_safetensors(const char *path, const struct t_tlist *l, int from, int to, int bad)
{
	cJSON *h = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(h, "__metadata__");
	uint64_t off = 0, n;
	unsigned char len8[8];
	char *json;
	int fd;

	cJSON_AddStringToObject(meta, "format", "pt");
	for (int i = from; i < to; i++) {
		const struct t_tensor *t = &l->t[i];
		cJSON *o = cJSON_AddObjectToObject(h, t->name), *shape, *offs;
		uint64_t bytes = (uint64_t)t->shape[0] *
				 (t->rank == 2 ? (uint64_t)t->shape[1] : 1) * dtype_bytes(t->dtype);
		cJSON_AddStringToObject(o, "dtype", t->dtype[0] ? t->dtype : "BF16");
		shape = cJSON_AddArrayToObject(o, "shape");
		for (int k = 0; k < t->rank; k++)
			cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->shape[k]));
		offs = cJSON_AddArrayToObject(o, "data_offsets");
		cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
		cJSON_AddItemToArray(
			offs,
			cJSON_CreateNumber((double)(off + bytes + (bad && i == from ? 2 : 0))));
		off += bytes + (bad && i == from ? 2 : 0);
	}
	json = cJSON_PrintUnformatted(h);
	n = strlen(json);
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)(n >> (8 * i));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, len8, 8), 8);
	ck_assert_int_eq(write(fd, json, n), (ssize_t)n);
	ck_assert_int_eq(ftruncate(fd, (off_t)(8 + n + off)), 0);
	close(fd);
	cJSON_free(json);
	cJSON_Delete(h);
}

char *t_hf_flood_header(int n, size_t *len)
{
	static const char entry[] = "\"t.%06d\":{\"dtype\":\"F64\",\"shape\":[1000000000000,10],"
				    "\"data_offsets\":[0,80000000000000]}";
	size_t cap = (size_t)n * (sizeof(entry) + 16) + 16, at = 0; /* %06d: up to 10 digits */
	char *h = malloc(cap);

	ck_assert_ptr_nonnull(h);
	h[at++] = '{';
	for (int i = 0; i < n; i++) {
		if (i)
			h[at++] = ',';
		at += (size_t)snprintf(h + at, cap - at, entry, i);
	}
	h[at++] = '}';
	h[at] = '\0';
	*len = at;
	return h;
}

void t_hf_write_raw_safetensors(const char *path, const char *header, size_t len,
				uint64_t data_bytes)
{
	unsigned char len8[8];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)((uint64_t)len >> (8 * i));
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, len8, 8), 8);
	ck_assert_int_eq(write(fd, header, len), (ssize_t)len);
	ck_assert_int_eq(ftruncate(fd, (off_t)(8 + len + data_bytes)), 0);
	close(fd);
}

const char t_hf_qwen05_config[] =
	"{\"architectures\":[\"Qwen2ForCausalLM\"],\"hidden_size\":896,"
	"\"intermediate_size\":4864,\"max_position_embeddings\":32768,\"model_type\":\"qwen2\","
	"\"num_attention_heads\":14,\"num_hidden_layers\":24,\"num_key_value_heads\":2,"
	"\"rms_norm_eps\":1e-06,\"rope_theta\":1000000.0,\"tie_word_embeddings\":true,"
	"\"torch_dtype\":\"bfloat16\",\"vocab_size\":151936}";
const char t_hf_llama32_1b_config[] =
	"{\"architectures\":[\"LlamaForCausalLM\"],\"head_dim\":64,\"hidden_size\":2048,"
	"\"intermediate_size\":8192,\"max_position_embeddings\":131072,\"model_type\":\"llama\","
	"\"num_attention_heads\":32,\"num_hidden_layers\":16,\"num_key_value_heads\":8,"
	"\"rope_theta\":500000.0,\"tie_word_embeddings\":true,\"torch_dtype\":\"bfloat16\","
	"\"vocab_size\":128256}";

/* Writes a Qwen2.5-0.5B folder at dir: two shards and their index. */
void t_hf_write_qwen05(const char *dir)
{
	struct t_tlist *l = calloc(1, sizeof(*l));
	char p[4096];
	cJSON *idx = cJSON_CreateObject(), *map;
	char *text;
	int half;

	mkdir(dir, 0755);
	t_hf_decoder(l, 24, 896, 4864, 14, 2, 64, 151936, 1, 1);
	half = l->n / 2;
	snprintf(p, sizeof(p), "%s/config.json", dir);
	ck_assert_int_eq(t_write_file(p, t_hf_qwen05_config, strlen(t_hf_qwen05_config)), 0);
	snprintf(p, sizeof(p), "%s/model-00001-of-00002.safetensors", dir);
	t_hf_write_safetensors(p, l, 0, half, 0);
	snprintf(p, sizeof(p), "%s/model-00002-of-00002.safetensors", dir);
	t_hf_write_safetensors(p, l, half, l->n, 0);
	cJSON_AddObjectToObject(idx, "metadata");
	map = cJSON_AddObjectToObject(idx, "weight_map");
	for (int i = 0; i < l->n; i++)
		cJSON_AddStringToObject(map, l->t[i].name,
					i < half ? "model-00001-of-00002.safetensors" :
						   "model-00002-of-00002.safetensors");
	text = cJSON_Print(idx);
	snprintf(p, sizeof(p), "%s/model.safetensors.index.json", dir);
	ck_assert_int_eq(t_write_file(p, text, strlen(text)), 0);
	cJSON_free(text);
	cJSON_Delete(idx);
	free(l);
}

void t_hf_cache_write_qwen05(const char *hub, const char *org, const char *name, const char *rev)
{
	static const char *const files[] = {"config.json", "model.safetensors.index.json",
					    "model-00001-of-00002.safetensors",
					    "model-00002-of-00002.safetensors"};
	char repo[4200], p[4400], q[4400];

	/* blobs hold the files, the snapshot links to them. */
	mkdir(hub, 0755);
	snprintf(repo, sizeof(repo), "%s/models--%s--%s", hub, org, name);
	mkdir(repo, 0755);
	snprintf(p, sizeof(p), "%s/blobs", repo);
	t_hf_write_qwen05(p);
	snprintf(p, sizeof(p), "%s/refs", repo);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/refs/main", repo);
	ck_assert_int_eq(t_write_file(p, rev, strlen(rev)), 0);
	snprintf(p, sizeof(p), "%s/snapshots", repo);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/snapshots/%s", repo, rev);
	mkdir(p, 0755);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(p, sizeof(p), "%s/snapshots/%s/%s", repo, rev, files[i]);
		snprintf(q, sizeof(q), "../../blobs/%s", files[i]);
		ck_assert_int_eq(symlink(q, p), 0);
	}
}

void t_ollama_write_tag(const char *store, const char *name, const char *tag)
{
	const char *digest = "4b1e8d7a9f5b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5";
	char p[4400], manifest[1024];
	size_t len = 0;
	unsigned char *gguf = t_gguf_write_tiny(&len);
	const char *dirs[] = {"", "/blobs", "/manifests", "/manifests/registry.ollama.ai",
			      "/manifests/registry.ollama.ai/library"};

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", store, dirs[i]);
		mkdir(p, 0755);
	}
	snprintf(p, sizeof(p), "%s/manifests/registry.ollama.ai/library/%s", store, name);
	mkdir(p, 0755);
	snprintf(manifest, sizeof(manifest),
		 "{\"schemaVersion\":2,\"mediaType\":"
		 "\"application/vnd.docker.distribution.manifest.v2+json\",\"config\":{"
		 "\"mediaType\":\"application/vnd.docker.container.image.v1+json\",\"digest\":"
		 "\"sha256:%s\",\"size\":485},\"layers\":[{\"mediaType\":"
		 "\"application/vnd.ollama.image.model\",\"digest\":\"sha256:%s\",\"size\":%zu},"
		 "{\"mediaType\":\"application/vnd.ollama.image.template\",\"digest\":"
		 "\"sha256:%s\",\"size\":1}]}",
		 digest, digest, len, digest);
	snprintf(p, sizeof(p), "%s/manifests/registry.ollama.ai/library/%s/%s", store, name, tag);
	ck_assert_int_eq(t_write_file(p, manifest, strlen(manifest)), 0);
	snprintf(p, sizeof(p), "%s/blobs/sha256-%s", store, digest);
	ck_assert_int_eq(t_write_file(p, gguf, len), 0);
	free(gguf);
}

size_t t_gguf_write_tiny_at(const char *path)
{
	size_t len = 0;
	unsigned char *gguf = t_gguf_write_tiny(&len);

	ck_assert_int_eq(t_write_file(path, gguf, len), 0);
	free(gguf);
	return len;
}

const cJSON *t_models_find(const cJSON *list, const char *id)
{
	const cJSON *m;

	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(list, "models"))
	{
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, "id");
		if (cJSON_IsString(v) && strcmp(v->valuestring, id) == 0)
			return m;
	}
	return NULL;
}

void t_models_cfg_under(const char *root, struct rf_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->models_dirs[0], sizeof(cfg->models_dirs[0]), "%s/models", root);
	cfg->n_models_dirs = 1;
	snprintf(cfg->hf_cache, sizeof(cfg->hf_cache), "%s/hub", root);
	snprintf(cfg->ollama_models, sizeof(cfg->ollama_models), "%s/ollama", root);
	mkdir(cfg->models_dirs[0], 0755);
}
