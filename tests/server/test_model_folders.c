/*
 * Hugging Face model folders and the Hugging Face cache as the model of an estimate. The tests
 * write real folders: config.json as Hugging Face publishes it and safetensors files whose
 * headers list every tensor of the real checkpoint by its transformers name, shape and dtype,
 * with the tensor data left sparse (the file has its full size; nothing is read past the
 * header). The parameter counts found must be the published ones: Qwen2.5-0.5B 494,032,768
 * and Llama-3.2-1B 1,235,814,400 (their model cards' safetensors totals). The cache follows
 * huggingface_hub's layout: refs/main, snapshots/<commit>/ with links into blobs/.
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "core/err.h"
#include "server/config.h"
#include "server/models/hf_folders.h"
#include "server/models/read_hooks.h"
#include "server/models/models_list.h"
#include "server/models/ollama_models.h"
#include "tests/api/profiles_fixture.h"
#include "tests/server/harness.h"
#include "tests/server/hf_fixture.h"
#include "tests/test.h"

#define HW "\"hardware\":{\"gpus\":[{\"name\":\"RTX 4090\"}]}"

static struct device_table devices;
static struct model_catalog *models;
static struct rf_config cfg;
static char *root;

static void setup(void)
{
	t_profiles_load(&devices, &models, NULL);
	root = t_mkdtemp();
	t_models_cfg_under(root, &cfg);
}

static void teardown(void)
{
	t_rmtree(root);
	free(root);
	t_profiles_free(&devices, &models, NULL);
}

static int estimate(const char *body, cJSON **out)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .io.read_model_dir = rf_model_dir_read_cfg,
			      .io.read_model_dir_ctx = &cfg,
			      .io.read_ollama = rf_ollama_read_cfg,
			      .io.read_ollama_ctx = &cfg};

	return t_route_post(api_estimate, &env, "/api/estimate", body, out);
}

/* Returns o.a.b (.c when c is not NULL), failing the test when it is missing. */
static const cJSON *item_at(const cJSON *o, const char *a, const char *b, const char *c)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
	v = cJSON_GetObjectItemCaseSensitive(v, b);
	if (c)
		v = cJSON_GetObjectItemCaseSensitive(v, c);
	ck_assert_msg(v != NULL, "no %s.%s.%s", a, b, c ? c : "");
	return v;
}

static double num_at(const cJSON *o, const char *a, const char *b, const char *c)
{
	const cJSON *v = item_at(o, a, b, c);
	ck_assert(cJSON_IsNumber(v));
	return v->valuedouble;
}

static const char *str_at(const cJSON *o, const char *a, const char *b, const char *c)
{
	const cJSON *v = item_at(o, a, b, c);
	ck_assert(cJSON_IsString(v));
	return v->valuestring;
}

/* Asserts body answers status with the error envelope naming field. */
static void assert_refused(const char *body, int status, const char *field)
{
	cJSON *j;
	int got = estimate(body, &j);
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");

	ck_assert_msg(got == status, "%s: %d, want %d", body, got, status);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(e, "field")->valuestring, field);
	cJSON_Delete(j);
}

START_TEST(a_sharded_folder_counts_the_published_parameters)
{
	char dir[4200], body[4400];
	cJSON *j;

	snprintf(dir, sizeof(dir), "%s/Qwen2.5-0.5B", cfg.models_dirs[0]);
	t_hf_write_qwen05(dir);
	snprintf(body, sizeof(body), "{\"model\":{\"path\":\"%s\"},\"quant\":\"Q8_0\",%s}", dir,
		 HW);
	ck_assert_int_eq(estimate(body, &j), 200);
	ck_assert_str_eq(str_at(j, "model", "source", NULL), "folder");
	ck_assert_str_eq(str_at(j, "model", "id", NULL), "Qwen2.5-0.5B");
	ck_assert_double_eq(num_at(j, "model", "checkpoint", "params"), 494032768.0);
	ck_assert_double_eq(num_at(j, "model", "checkpoint", "shards"), 2);
	ck_assert_double_eq(num_at(j, "model", "checkpoint", "data_bytes"), 2 * 494032768.0);
	ck_assert_str_eq(str_at(j, "model", "checkpoint", "dtype"), "BF16");
	ck_assert(cJSON_IsTrue(item_at(j, "model", "checkpoint", "tied_embeddings")));
	/* The architecture from config.json counts what the headers hold. */
	ck_assert_double_eq(num_at(j, "model", "params_total", NULL), 494032768.0);
	cJSON_Delete(j);
}
END_TEST

START_TEST(a_single_file_folder_and_a_vision_tower)
{
	struct t_tlist *l = calloc(1, sizeof(*l));
	char dir[4200], p[4400], body[4400];
	cJSON *j;

	snprintf(dir, sizeof(dir), "%s/Llama-3.2-1B", cfg.models_dirs[0]);
	mkdir(dir, 0755);
	t_hf_decoder(l, 16, 2048, 8192, 32, 8, 64, 128256, 0, 1);
	/* A vision tower and projector beside the text model, as multimodal checkpoints store
	 * them: counted apart. */
	t_hf_add(l, "vision_tower.patch_embedding.weight", 1024, 588);
	t_hf_add(l, "multi_modal_projector.linear_1.weight", 2048, 1024);
	snprintf(p, sizeof(p), "%s/config.json", dir);
	ck_assert_int_eq(t_write_file(p, t_hf_llama32_1b_config, strlen(t_hf_llama32_1b_config)),
			 0);
	snprintf(p, sizeof(p), "%s/model.safetensors", dir);
	t_hf_write_safetensors(p, l, 0, l->n, 0);
	snprintf(body, sizeof(body), "{\"model\":{\"path\":\"%s/\"},%s}", dir, HW);
	ck_assert_int_eq(estimate(body, &j), 200);
	ck_assert_double_eq(num_at(j, "model", "checkpoint", "params"),
			    1235814400.0 + 1024 * 588 + 2048 * 1024);
	ck_assert_double_eq(num_at(j, "model", "checkpoint", "vision_params"),
			    1024 * 588 + 2048 * 1024);
	ck_assert_double_eq(num_at(j, "model", "params_total", NULL), 1235814400.0);
	cJSON_Delete(j);
	free(l);
}
END_TEST

/* AutoAWQ's tensors for linear layer name ([out, in] in the model): qweight int32 [in, out/8],
 * qzeros int32 [in/128, out/8], scales fp16 [in/128, out]. */
static void awq_linear(struct t_tlist *l, const char *name, int64_t out, int64_t in)
{
	char n[96];

	snprintf(n, sizeof(n), "%s.qweight", name);
	t_hf_add_typed(l, n, in, out / 8, "I32");
	snprintf(n, sizeof(n), "%s.qzeros", name);
	t_hf_add_typed(l, n, in / 128, out / 8, "I32");
	snprintf(n, sizeof(n), "%s.scales", name);
	t_hf_add_typed(l, n, in / 128, out, "F16");
}

START_TEST(a_quantised_folder_is_counted_from_its_headers)
{
	static const char config[] =
		"{\"architectures\":[\"LlamaForCausalLM\"],\"model_type\":\"llama\","
		"\"hidden_size\":1024,\"intermediate_size\":2048,\"num_hidden_layers\":2,"
		"\"num_attention_heads\":8,\"num_key_value_heads\":8,\"vocab_size\":4096,"
		"\"tie_word_embeddings\":false,\"torch_dtype\":\"float16\","
		"\"quantization_config\":{\"bits\":4,\"group_size\":128,\"quant_method\":\"awq\","
		"\"version\":\"gemm\",\"zero_point\":true,\"modules_to_not_convert\":null}}";
	static const char *const attn[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
	struct t_tlist *l = calloc(1, sizeof(*l));
	char dir[4200], p[4400], body[4400], n[96];
	const cJSON *q;
	cJSON *j;

	snprintf(dir, sizeof(dir), "%s/tiny-awq", cfg.models_dirs[0]);
	mkdir(dir, 0755);
	t_hf_add_typed(l, "model.embed_tokens.weight", 4096, 1024, "F16");
	for (int il = 0; il < 2; il++) {
		for (int k = 0; k < 4; k++) {
			snprintf(n, sizeof(n), "model.layers.%d.self_attn.%s", il, attn[k]);
			awq_linear(l, n, 1024, 1024);
		}
		snprintf(n, sizeof(n), "model.layers.%d.mlp.gate_proj", il);
		awq_linear(l, n, 2048, 1024);
		snprintf(n, sizeof(n), "model.layers.%d.mlp.up_proj", il);
		awq_linear(l, n, 2048, 1024);
		snprintf(n, sizeof(n), "model.layers.%d.mlp.down_proj", il);
		awq_linear(l, n, 1024, 2048);
		snprintf(n, sizeof(n), "model.layers.%d.input_layernorm.weight", il);
		t_hf_add_typed(l, n, 1024, 0, "F16");
		snprintf(n, sizeof(n), "model.layers.%d.post_attention_layernorm.weight", il);
		t_hf_add_typed(l, n, 1024, 0, "F16");
	}
	t_hf_add_typed(l, "model.norm.weight", 1024, 0, "F16");
	t_hf_add_typed(l, "lm_head.weight", 4096, 1024, "F16");
	snprintf(p, sizeof(p), "%s/config.json", dir);
	ck_assert_int_eq(t_write_file(p, config, strlen(config)), 0);
	snprintf(p, sizeof(p), "%s/model.safetensors", dir);
	t_hf_write_safetensors(p, l, 0, l->n, 0);
	snprintf(body, sizeof(body), "{\"model\":{\"path\":\"%s\"},\"runtime\":\"vllm\",%s}", dir,
		 HW);
	ck_assert_int_eq(estimate(body, &j), 200);
	q = item_at(j, "model", "quantization", NULL);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(q, "method")->valuestring, "awq");
	/* The headers are the exact answer; the formula writes the same layout, byte for byte. */
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(q, "basis")->valuestring, "safetensors");
	ck_assert_double_eq(num_at(j, "model", "quantization", "checkpoint_bytes"),
			    num_at(j, "model", "checkpoint", "data_bytes"));
	ck_assert_double_eq(num_at(j, "model", "quantization", "formula_bytes"),
			    num_at(j, "model", "checkpoint", "data_bytes"));
	ck_assert_double_gt(num_at(j, "model", "checkpoint", "packed_bytes"), 0);
	ck_assert_str_eq(str_at(j, "settings", "precision", NULL), "awq");
	cJSON_Delete(j);
	free(l);
}
END_TEST

START_TEST(folders_are_confined_and_checked)
{
	struct t_tlist *l = calloc(1, sizeof(*l));
	char dir[4200], p[4400], body[4600], outside[4200];

	/* Outside every models dir, by path, by "..", by a symlink. */
	snprintf(outside, sizeof(outside), "%s/elsewhere", root);
	t_hf_write_qwen05(outside);
	snprintf(body, sizeof(body), "{\"model\":{\"path\":\"%s\"},%s}", outside, HW);
	assert_refused(body, 403, "model.path");
	snprintf(body, sizeof(body), "{\"model\":{\"path\":\"%s/../elsewhere\"},%s}",
		 cfg.models_dirs[0], HW);
	assert_refused(body, 403, "model.path");
	snprintf(p, sizeof(p), "%s/link", cfg.models_dirs[0]);
	ck_assert_int_eq(symlink(outside, p), 0);
	snprintf(body, sizeof(body), "{\"model\":{\"path\":\"%s\"},%s}", p, HW);
	assert_refused(body, 403, "model.path");
	/* Missing folder, folder without config.json, relative path. */
	snprintf(body, sizeof(body), "{\"model\":{\"path\":\"%s/none\"},%s}", cfg.models_dirs[0],
		 HW);
	assert_refused(body, 404, "model.path");
	snprintf(dir, sizeof(dir), "%s/empty", cfg.models_dirs[0]);
	mkdir(dir, 0755);
	snprintf(body, sizeof(body), "{\"model\":{\"path\":\"%s\"},%s}", dir, HW);
	assert_refused(body, 404, "model.path");
	assert_refused("{\"model\":{\"path\":\"models/x\"}," HW "}", 422, "model.path");
	assert_refused("{\"model\":{\"path\":7}," HW "}", 422, "model.path");
	/* A header whose offsets disagree with its shape, and an index naming a file outside. */
	snprintf(dir, sizeof(dir), "%s/bad", cfg.models_dirs[0]);
	mkdir(dir, 0755);
	t_hf_decoder(l, 16, 2048, 8192, 32, 8, 64, 128256, 0, 1);
	snprintf(p, sizeof(p), "%s/config.json", dir);
	ck_assert_int_eq(t_write_file(p, t_hf_llama32_1b_config, strlen(t_hf_llama32_1b_config)),
			 0);
	snprintf(p, sizeof(p), "%s/model.safetensors", dir);
	t_hf_write_safetensors(p, l, 0, l->n, 1);
	snprintf(body, sizeof(body), "{\"model\":{\"path\":\"%s\"},%s}", dir, HW);
	assert_refused(body, 422, "model.path");
	snprintf(p, sizeof(p), "%s/model.safetensors", dir);
	ck_assert_int_eq(t_write_file(p, "\xff\xff\xff\xff\x00\x00\x00\x00{}", 10), 0);
	assert_refused(body, 422, "model.path");
	snprintf(p, sizeof(p), "%s/model.safetensors.index.json", dir);
	ck_assert_int_eq(t_write_file(p, "{\"weight_map\":{\"a\":\"../x.safetensors\"}}", 40), 0);
	assert_refused(body, 422, "model.path");
	free(l);
}
END_TEST

START_TEST(an_id_in_the_hugging_face_cache_resolves_offline)
{
	char repo[4200], p[4400], q[4400];
	const char *rev = "0123456789abcdef0123456789abcdef01234567";
	cJSON *j;

	t_hf_cache_write_qwen05(cfg.hf_cache, "acme", "qwen-tuned", rev);
	snprintf(repo, sizeof(repo), "%s/hub/models--acme--qwen-tuned", root);
	ck_assert_int_eq(estimate("{\"model\":{\"id\":\"acme/qwen-tuned\"}," HW "}", &j), 200);
	ck_assert_str_eq(str_at(j, "model", "source", NULL), "hf_cache");
	ck_assert_str_eq(str_at(j, "model", "id", NULL), "acme/qwen-tuned");
	ck_assert_str_eq(str_at(j, "model", "checkpoint", "revision"), rev);
	ck_assert_double_eq(num_at(j, "model", "checkpoint", "params"), 494032768.0);
	cJSON_Delete(j);
	/* The catalog still answers its own ids; an id in neither is the usual 422. */
	ck_assert_int_eq(estimate("{\"model\":{\"id\":\"Qwen/Qwen2.5-7B\"}," HW "}", &j), 200);
	ck_assert_str_eq(str_at(j, "model", "source", NULL), "catalog");
	cJSON_Delete(j);
	assert_refused("{\"model\":{\"id\":\"acme/not-cached\"}," HW "}", 422, "model.id");
	/* A snapshot link that leads out of the cache is refused. */
	snprintf(p, sizeof(p), "%s/snapshots/%s/config.json", repo, rev);
	unlink(p);
	snprintf(q, sizeof(q), "%s/elsewhere.json", root);
	ck_assert_int_eq(t_write_file(q, t_hf_qwen05_config, strlen(t_hf_qwen05_config)), 0);
	ck_assert_int_eq(symlink(q, p), 0);
	assert_refused("{\"model\":{\"id\":\"acme/qwen-tuned\"}," HW "}", 403, "model.id");
}
END_TEST

/* Writes Ollama's store under root with tag NAME:TAG (the tiny GGUF file as its model). */
static void write_ollama_tag(const char *name, const char *tag)
{
	t_ollama_write_tag(cfg.ollama_models, name, tag);
}

START_TEST(a_tag_pulled_into_ollama_is_read_as_its_gguf)
{
	cJSON *j;

	write_ollama_tag("tiny", "1b-q8_0");
	ck_assert_int_eq(estimate("{\"model\":\"tiny:1b-q8_0\"," HW "}", &j), 200);
	ck_assert_str_eq(str_at(j, "model", "source", NULL), "ollama_store");
	ck_assert_str_eq(str_at(j, "model", "id", NULL), "tiny:1b-q8_0");
	cJSON_Delete(j);
	/* A pulled tag wins over the catalog's name for it; one not pulled still maps. */
	write_ollama_tag("llama3.1", "8b");
	ck_assert_int_eq(estimate("{\"model\":\"llama3.1:8b\"," HW "}", &j), 200);
	ck_assert_str_eq(str_at(j, "model", "source", NULL), "ollama_store");
	cJSON_Delete(j);
	ck_assert_int_eq(estimate("{\"model\":\"llama3.1:70b\"," HW "}", &j), 200);
	ck_assert_str_eq(str_at(j, "model", "source", NULL), "ollama");
	cJSON_Delete(j);
	/* A manifest without a model layer, and a blob that leads out of the store. */
	{
		char p[4400], q[4400];
		snprintf(p, sizeof(p), "%s/ollama/manifests/registry.ollama.ai/library/tiny/broken",
			 root);
		ck_assert_int_eq(t_write_file(p, "{\"layers\":[]}", 13), 0);
		snprintf(
			p, sizeof(p),
			"%s/ollama/blobs/sha256-4b1e8d7a9f5b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5"
			"f60718293a4b5",
			root);
		unlink(p);
		snprintf(q, sizeof(q), "%s/models", root);
		ck_assert_int_eq(symlink(q, p), 0);
	}
	assert_refused("{\"model\":\"tiny:1b-q8_0\"," HW "}", 403, "model.id");
	assert_refused("{\"model\":\"tiny:broken\"," HW "}", 422, "model.id");
}
END_TEST

/* GET /api/models?query over snap (NULL: no scan yet); returns the status and the answer. */
static int list_models_in(const struct api_snapshot *snap, const char *query, cJSON **out)
{
	struct api_env env = {
		.version = "test", .cat.devices = &devices, .cat.models = models, .snapshot = snap};
	struct api_request req = {.method = API_GET, .path = "/api/models", .query = query};
	struct api_reply r = {0};
	int status;

	api_models_list(&env, &req, &r);
	status = r.status;
	*out = cJSON_ParseWithLength(r.body, r.len);
	ck_assert_ptr_nonnull(*out);
	api_reply_reset(&r);
	return status;
}

/* The same after a walk of this suite's folders, as the daemon's scan makes it. */
static int list_models(const char *query, cJSON **out)
{
	struct api_snapshot snap = {0};
	int status;

	ck_assert_int_eq(rf_models_walk(&cfg, &snap.models), 0);
	status = list_models_in(&snap, query, out);
	rf_models_free(&snap.models);
	return status;
}

/* How many models list holds. */
static int models_in(const cJSON *list)
{
	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(list, "models"));
}

START_TEST(the_models_on_this_host_are_listed_with_sizes)
{
	char dir[4200], p[4400];
	size_t len = 0;
	unsigned char *gguf = t_gguf_write_tiny(&len);
	const cJSON *m;
	cJSON *j;

	snprintf(dir, sizeof(dir), "%s/Qwen2.5-0.5B", cfg.models_dirs[0]);
	t_hf_write_qwen05(dir);
	snprintf(p, sizeof(p), "%s/tiny.gguf", cfg.models_dirs[0]);
	ck_assert_int_eq(t_write_file(p, gguf, len), 0);
	write_ollama_tag("tiny", "1b-q8_0");
	ck_assert_int_eq(list_models("", &j), 200);
	/* The folder: both shards' sizes; the GGUF file by the path a request gives. */
	m = t_models_find(j, dir);
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(m, "format")->valuestring, "safetensors");
	ck_assert_double_gt(cJSON_GetObjectItemCaseSensitive(m, "size_bytes")->valuedouble,
			    2 * 494032768.0);
	m = t_models_find(j, p);
	ck_assert_ptr_nonnull(m);
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(m, "size_bytes")->valuedouble,
			    (double)len);
	/* Ollama's tag with its layers' sizes, and the catalog beside them. */
	m = t_models_find(j, "tiny:1b-q8_0");
	ck_assert_ptr_nonnull(m);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(m, "where")->valuestring, "ollama");
	ck_assert_double_eq(cJSON_GetObjectItemCaseSensitive(m, "size_bytes")->valuedouble,
			    (double)len + 1);
	ck_assert_ptr_nonnull(t_models_find(j, "meta-llama/Llama-3.1-8B"));
	cJSON_Delete(j);
	/* source narrows the list; a bad one is a 422. */
	ck_assert_int_eq(list_models("source=local", &j), 200);
	ck_assert_ptr_null(t_models_find(j, "meta-llama/Llama-3.1-8B"));
	ck_assert_ptr_nonnull(t_models_find(j, "tiny:1b-q8_0"));
	cJSON_Delete(j);
	ck_assert_int_eq(list_models("source=catalog", &j), 200);
	ck_assert_ptr_null(t_models_find(j, "tiny:1b-q8_0"));
	cJSON_Delete(j);
	ck_assert_int_eq(list_models("source=disk", &j), 422);
	cJSON_Delete(j);
	free(gguf);
}
END_TEST

/* Each place alone, a name in any case, and the time of the walk. */
START_TEST(the_list_narrows_to_one_place_or_a_name)
{
	char gguf_path[4400];
	cJSON *j;

	snprintf(gguf_path, sizeof(gguf_path), "%s/tiny.gguf", cfg.models_dirs[0]);
	t_gguf_write_tiny_at(gguf_path);
	t_hf_cache_write_qwen05(cfg.hf_cache, "acme", "qwen-tuned",
				"0123456789abcdef0123456789abcdef01234567");
	t_ollama_write_tag(cfg.ollama_models, "tiny", "1b-q8_0");
	ck_assert_int_eq(list_models("source=cache", &j), 200);
	ck_assert_int_eq(models_in(j), 1);
	ck_assert_ptr_nonnull(t_models_find(j, "acme/qwen-tuned"));
	/* The cache's size is its blobs': the two shards hold the checkpoint's BF16 bytes. */
	ck_assert_double_gt(cJSON_GetObjectItemCaseSensitive(t_models_find(j, "acme/qwen-tuned"),
							     "size_bytes")
				    ->valuedouble,
			    2 * 494032768.0);
	ck_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "scanned_at")));
	cJSON_Delete(j);
	ck_assert_int_eq(list_models("source=dir", &j), 200);
	ck_assert_int_eq(models_in(j), 1);
	ck_assert_ptr_nonnull(t_models_find(j, gguf_path));
	cJSON_Delete(j);
	ck_assert_int_eq(list_models("source=ollama", &j), 200);
	ck_assert_int_eq(models_in(j), 1);
	ck_assert_ptr_nonnull(t_models_find(j, "tiny:1b-q8_0"));
	cJSON_Delete(j);
	/* On disk, "TINY" is the GGUF file and Ollama's tag, not the cache's repository. */
	ck_assert_int_eq(list_models("source=local&name=TINY", &j), 200);
	ck_assert_int_eq(models_in(j), 2);
	ck_assert_ptr_nonnull(t_models_find(j, gguf_path));
	ck_assert_ptr_nonnull(t_models_find(j, "tiny:1b-q8_0"));
	cJSON_Delete(j);
	ck_assert_int_eq(list_models("source=catalog&name=llama-3.1-8B", &j), 200);
	ck_assert_int_ge(models_in(j), 1);
	ck_assert_ptr_nonnull(t_models_find(j, "meta-llama/Llama-3.1-8B"));
	ck_assert_ptr_null(t_models_find(j, "Qwen/Qwen2.5-7B"));
	cJSON_Delete(j);
	ck_assert_int_eq(list_models("name=%zz", &j), 422);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(
				 cJSON_GetObjectItemCaseSensitive(j, "error"), "field")
				 ->valuestring,
			 "name");
	cJSON_Delete(j);
}
END_TEST

/* The route reads the list the scan walked, never the disk: a model on disk but not in the
 * snapshot's list is not answered, and one in the list is, though the disk lacks it. Before
 * the first scan, only the catalog can be listed. */
START_TEST(the_route_answers_from_the_scans_list_not_the_disk)
{
	struct api_local_model ghost = {.id = "/nowhere/ghost.gguf",
					.where = "models_dir",
					.format = "gguf",
					.size_bytes = 4096};
	struct api_snapshot snap = {.models = {.items = &ghost, .n = 1, .scanned_at_ms = 1000}};
	char p[4400];
	cJSON *j;

	snprintf(p, sizeof(p), "%s/on-disk.gguf", cfg.models_dirs[0]);
	t_gguf_write_tiny_at(p);
	ck_assert_int_eq(list_models_in(&snap, "source=local", &j), 200);
	ck_assert_int_eq(models_in(j), 1);
	ck_assert_ptr_nonnull(t_models_find(j, "/nowhere/ghost.gguf"));
	ck_assert_ptr_null(t_models_find(j, p));
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "scanned_at")->valuestring,
			 "1970-01-01T00:00:01.000Z");
	cJSON_Delete(j);
	ck_assert_int_eq(list_models_in(NULL, "source=local", &j), 503);
	cJSON_Delete(j);
	ck_assert_int_eq(list_models_in(NULL, "source=catalog", &j), 200);
	ck_assert_ptr_nonnull(t_models_find(j, "meta-llama/Llama-3.1-8B"));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "scanned_at")));
	cJSON_Delete(j);
}
END_TEST

/* GET /api/models?source=dir from the daemon at port: the answer, after checking it is a 200. */
static cJSON *daemon_models(int port)
{
	struct t_resp r;
	cJSON *j;

	ck_assert_int_eq(t_http(port, "GET", "/api/models?source=dir", NULL, NULL, 0, &r), 0);
	ck_assert_msg(r.status == 200, "%d %s", r.status, r.body);
	j = cJSON_Parse(r.body);
	ck_assert_ptr_nonnull(j);
	t_resp_free(&r);
	return j;
}

/* The daemon walks the disk in its scan, not on the request: a file added to the models dir is
 * listed after a rescan, not before, and scanned_at says when the list was taken. */
START_TEST(the_daemon_lists_a_new_file_after_a_rescan_not_before)
{
	struct t_daemon dmn;
	struct t_resp r;
	char a[4400], b[4400], first[64];
	const char *extra[] = {"--models-dir",
			       cfg.models_dirs[0],
			       "--hf-cache",
			       cfg.hf_cache,
			       "--ollama-models",
			       cfg.ollama_models,
			       "--scan-interval",
			       "86400",
			       NULL};
	cJSON *j;

	snprintf(a, sizeof(a), "%s/a.gguf", cfg.models_dirs[0]);
	snprintf(b, sizeof(b), "%s/b.gguf", cfg.models_dirs[0]);
	t_gguf_write_tiny_at(a);
	t_daemon_start(&dmn, extra);
	j = daemon_models(dmn.port);
	ck_assert_ptr_nonnull(t_models_find(j, a));
	snprintf(first, sizeof(first), "%s",
		 cJSON_GetObjectItemCaseSensitive(j, "scanned_at")->valuestring);
	cJSON_Delete(j);
	t_gguf_write_tiny_at(b);
	j = daemon_models(dmn.port);
	ck_assert_ptr_nonnull(t_models_find(j, a));
	ck_assert_ptr_null(t_models_find(j, b));
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "scanned_at")->valuestring, first);
	cJSON_Delete(j);
	usleep(5000);
	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/hardware/rescan", NULL, NULL, 0, &r), 0);
	ck_assert_msg(r.status == 200, "rescan: %d %s", r.status, r.body);
	t_resp_free(&r);
	j = daemon_models(dmn.port);
	ck_assert_ptr_nonnull(t_models_find(j, a));
	ck_assert_ptr_nonnull(t_models_find(j, b));
	ck_assert_str_ne(cJSON_GetObjectItemCaseSensitive(j, "scanned_at")->valuestring, first);
	cJSON_Delete(j);
	t_daemon_stop(&dmn);
}
END_TEST

/* What rf_model_index_shards handed to its callback: how many names, the first ones. */
struct named {
	int n;
	char first[4][64];
};

static int note_name(void *ctx, const char *name)
{
	struct named *w = ctx;

	if (w->n < 4)
		snprintf(w->first[w->n], sizeof(w->first[0]), "%s", name);
	w->n++;
	return 0;
}

#define INDEX_CAP (300000 * 48 + 64)

/* Appends n weight_map entries t<from>... naming shard file to the index text b[0..at). */
static size_t index_entries(char *b, size_t at, int from, int n, const char *file)
{
	for (int i = from; i < from + n; i++)
		at += (size_t)snprintf(b + at, INDEX_CAP - at, "%s\"t%d\":\"%s\"",
				       b[at - 1] == '{' ? "" : ",", i, file);
	ck_assert_uint_lt(at, INDEX_CAP - 8);
	return at;
}

/* The index names each shard once, in order of first mention; 300,000 entries that name two
 * shards (the second first named after 150,000 entries) are two shards, found with one lookup
 * per entry (a walk back over the entries before each one took 10^10 compares); a 513th
 * distinct shard is too many. */
START_TEST(an_index_names_each_shard_once_however_long_it_is)
{
	char *b = malloc(INDEX_CAP), msg[200];
	size_t at;
	struct named w = {0};

	ck_assert_ptr_nonnull(b);
	at = (size_t)snprintf(b, INDEX_CAP, "{\"weight_map\":{");
	at = index_entries(b, at, 0, 2, "b.safetensors");
	at = index_entries(b, at, 2, 1, "a.safetensors");
	at = index_entries(b, at, 3, 2, "b.safetensors");
	at += (size_t)snprintf(b + at, INDEX_CAP - at, "}}");
	ck_assert_int_eq(rf_model_index_shards(b, at, note_name, &w, msg, sizeof(msg)), 0);
	ck_assert_int_eq(w.n, 2);
	ck_assert_str_eq(w.first[0], "b.safetensors");
	ck_assert_str_eq(w.first[1], "a.safetensors");

	memset(&w, 0, sizeof(w));
	at = (size_t)snprintf(b, INDEX_CAP, "{\"weight_map\":{");
	at = index_entries(b, at, 0, 150000, "model-00001-of-00002.safetensors");
	at = index_entries(b, at, 150000, 150000, "model-00002-of-00002.safetensors");
	at += (size_t)snprintf(b + at, INDEX_CAP - at, "}}");
	ck_assert_int_eq(rf_model_index_shards(b, at, note_name, &w, msg, sizeof(msg)), 0);
	ck_assert_int_eq(w.n, 2);

	memset(&w, 0, sizeof(w));
	at = (size_t)snprintf(b, INDEX_CAP, "{\"weight_map\":{");
	for (int i = 0; i < 513; i++) {
		char f[32];
		snprintf(f, sizeof(f), "s%d.safetensors", i);
		at = index_entries(b, at, i, 1, f);
	}
	at += (size_t)snprintf(b + at, INDEX_CAP - at, "}}");
	ck_assert_int_eq(rf_model_index_shards(b, at, note_name, &w, msg, sizeof(msg)),
			 RF_E_TOO_LARGE);
	ck_assert_int_eq(w.n, 512);
	free(b);
}
END_TEST

/* The 120,000-tensor header (t_hf_flood_header) as a user would hand it to the daemon: a folder
 * in its models dir. The ASan build that once died on the overflowing sum answers 422
 * out_of_range naming model.path, and stays up. */
START_TEST(the_daemon_answers_a_120k_tensor_header_with_a_422)
{
	struct t_daemon dmn;
	struct t_resp r;
	char dir[4200], p[4400], body[4600];
	const char *extra[] = {"--models-dir", cfg.models_dirs[0], NULL};
	size_t len;
	char *h = t_hf_flood_header(120000, &len);

	snprintf(dir, sizeof(dir), "%s/flood", cfg.models_dirs[0]);
	mkdir(dir, 0755);
	snprintf(p, sizeof(p), "%s/config.json", dir);
	ck_assert_int_eq(t_write_file(p, t_hf_llama32_1b_config, strlen(t_hf_llama32_1b_config)),
			 0);
	snprintf(p, sizeof(p), "%s/model.safetensors", dir);
	t_hf_write_raw_safetensors(p, h, len, 0);
	free(h);
	snprintf(body, sizeof(body), "{\"model\":{\"path\":\"%s\"},%s}", dir, HW);
	t_daemon_start(&dmn, extra);
	ck_assert_int_eq(t_http(dmn.port, "POST", "/api/estimate",
				"Content-Type: application/json\r\n", body, strlen(body), &r),
			 0);
	ck_assert_msg(r.status == 422, "%d %.300s", r.status, r.body);
	ck_assert_ptr_nonnull(strstr(r.body, "\"code\":\"out_of_range\""));
	ck_assert_ptr_nonnull(strstr(r.body, "\"field\":\"model.path\""));
	t_resp_free(&r);
	ck_assert_int_eq(t_http(dmn.port, "GET", "/healthz", NULL, NULL, 0, &r), 0);
	ck_assert_int_eq(r.status, 200);
	t_resp_free(&r);
	t_daemon_stop(&dmn);
}
END_TEST

Suite *model_folders_suite(void)
{
	Suite *s = suite_create("model_folders");
	TCase *tc = tcase_create("folders");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_sharded_folder_counts_the_published_parameters);
	tcase_add_test(tc, a_single_file_folder_and_a_vision_tower);
	tcase_add_test(tc, a_quantised_folder_is_counted_from_its_headers);
	tcase_add_test(tc, folders_are_confined_and_checked);
	tcase_add_test(tc, an_id_in_the_hugging_face_cache_resolves_offline);
	tcase_add_test(tc, a_tag_pulled_into_ollama_is_read_as_its_gguf);
	tcase_add_test(tc, the_models_on_this_host_are_listed_with_sizes);
	tcase_add_test(tc, the_list_narrows_to_one_place_or_a_name);
	tcase_add_test(tc, the_route_answers_from_the_scans_list_not_the_disk);
	tcase_add_test(tc, the_daemon_lists_a_new_file_after_a_rescan_not_before);
	tcase_add_test(tc, an_index_names_each_shard_once_however_long_it_is);
	tcase_add_test(tc, the_daemon_answers_a_120k_tensor_header_with_a_422);
	suite_add_tcase(s, tc);
	return s;
}
