/*
 * Fuzz target: a GGUF file header (core/fit/gguf.c), the architecture and the quantization taken
 * from it. The input is the whole file; a second parse claims a larger file, as the server
 * does when it has read only the header.
 */
#include <stdint.h>
#include <stdlib.h>

#include "core/fit/gguf.h"
#include "core/fit/model.h"

static void use(const struct gguf_file *f)
{
	struct model_arch a;
	char field[128];
	uint64_t v;

	(void)gguf_to_arch(f, &a, field, sizeof(field));
	(void)gguf_file_type(f);
	(void)gguf_get_uint(f, "general.alignment", &v);
	(void)gguf_get_str(f, "general.architecture");
	(void)gguf_find(f, "tokenizer.ggml.tokens");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gguf_file *f = NULL;
	char msg[160];

	if (gguf_parse(data, size, 0, &f, msg, sizeof(msg)) == 0) {
		use(f);
		gguf_free(f);
	}
	f = NULL;
	if (gguf_parse(data, size, (uint64_t)size + (UINT64_C(1) << 32), &f, msg, sizeof(msg)) ==
	    0) {
		use(f);
		gguf_free(f);
	}
	return 0;
}
