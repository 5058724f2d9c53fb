/*
 * Fuzz target: a safetensors header (api/model_folder.c), as a models dir, the Hugging Face
 * cache or a Hub hands it over. The first byte picks what is known of the file: 0 nothing
 * (a stored Hub answer), 1 the shard's size on disk (a little more than the header and the
 * data it claims, from the next 4 bytes), 2 a Hub's total (the same size, and where "hub");
 * the rest is the JSON header. The census must refuse what is not a safetensors header with a
 * 422, never crash or overflow (UBSan aborts on a signed overflow), and what it accepts must
 * add up: data bytes within the file, packed bytes within the data.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_folder.h"
#include "tests/fuzz/fuzz.h"

/* Llama-3.2-1B's config.json, whose architecture maps: the census runs after it. */
static const char config[] =
	"{\"architectures\":[\"LlamaForCausalLM\"],\"head_dim\":64,\"hidden_size\":2048,"
	"\"intermediate_size\":8192,\"max_position_embeddings\":131072,\"model_type\":\"llama\","
	"\"num_attention_heads\":32,\"num_hidden_layers\":16,\"num_key_value_heads\":8,"
	"\"tie_word_embeddings\":true,\"torch_dtype\":\"bfloat16\",\"vocab_size\":128256}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct api_model_dir d;
	struct api_reply r = {0};
	struct api_checkpoint ck;
	struct model_arch arch;
	uint64_t extra = 0;
	char *h;
	int rc;

	if (size < 5)
		return 0;
	memset(&d, 0, sizeof(d));
	for (int i = 1; i < 5; i++)
		extra = extra << 8 | data[i];
	h = fuzz_strdup(data + 5, size - 5); /* the readers NUL-terminate */
	d.config = (char *)config;
	d.config_len = sizeof(config) - 1;
	d.n_shards = 1;
	d.headers[0] = h;
	d.header_len[0] = size - 5;
	snprintf(d.where, sizeof(d.where), "%s", data[0] % 3 == 2 ? "hub" : "models_dir");
	if (data[0] % 3 > 0) {
		d.shard_bytes[0] = 8 + (size - 5) + extra;
		d.file_bytes = d.shard_bytes[0];
	}
	rc = api_model_folder(&d, "model.path", &arch, &ck, &r);
	if (rc < 0 && r.status != 422)
		abort();
	if (rc == 0) {
		cJSON *j = api_checkpoint_json(&ck, &d);
		if (ck.tensors < 0 || ck.params < 0 || ck.data_bytes < 0 || ck.packed_bytes < 0 ||
		    ck.vision_params > ck.params || ck.packed_bytes > ck.data_bytes ||
		    (d.shard_bytes[0] && (uint64_t)ck.data_bytes > d.shard_bytes[0]))
			abort();
		cJSON_Delete(j);
	}
	api_reply_reset(&r);
	free(h);
	return 0;
}
