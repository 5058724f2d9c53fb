/*
 * Fuzz target: model.safetensors.index.json (rf_model_index_shards, server/models/hf_folders.c), as
 * a models dir, the Hugging Face cache or a Hub serves it. Every name handed on must be a plain
 * .safetensors file name, each at most once, and at most API_MODEL_DIR_MAX_SHARDS of them; a long
 * index must cost one lookup per entry (libFuzzer's timeout catches a quadratic walk).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "server/models/hf_folders.h"
#include "tests/fuzz/fuzz.h"

struct seen {
	int n;
	char *names[API_MODEL_DIR_MAX_SHARDS];
};

static int each(void *ctx, const char *name)
{
	struct seen *s = ctx;

	if (!rf_model_shard_name_ok(name) || strchr(name, '/') || s->n >= API_MODEL_DIR_MAX_SHARDS)
		abort();
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->names[i], name) == 0)
			abort();
	s->names[s->n] = strdup(name);
	if (!s->names[s->n])
		abort();
	s->n++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct seen s;
	char *idx = fuzz_strdup(data, size), msg[256];

	s.n = 0;
	(void)rf_model_index_shards(idx, size, each, &s, msg, sizeof(msg));
	for (int i = 0; i < s.n; i++)
		free(s.names[i]);
	free(idx);
	return 0;
}
