/*
 * Fuzz target: an Ollama model reference and a tag's manifest (server/models/ollama_models.c,
 * core/fit/ollama_ref.c), joined with FUZZ_SEP: the reference as a request names it
 * ("qwen2.5:32b-instruct-q8_0"), then the manifest file of Ollama's store. The manifest's
 * model layer must give exactly 64 lower-case hex digits (they become a file name under
 * blobs/), or an error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fit/ollama_ref.h"
#include "server/models/ollama_models.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_part p[2];
	struct ollama_ref ref;
	char *s, *m, hex[65], msg[200], cand[256];

	fuzz_split(data, size, p, 2);
	s = fuzz_strdup((const uint8_t *)p[0].p, p[0].len);
	if (ollama_ref_parse(s, &ref))
		for (int i = 0; ollama_ref_candidate(&ref, i, cand, sizeof(cand)); i++)
			if (strlen(cand) >= sizeof(cand))
				abort();
	m = fuzz_strdup((const uint8_t *)p[1].p, p[1].len);
	memset(hex, 'x', sizeof(hex));
	if (rf_ollama_manifest_blob(m, p[1].len, hex, msg, sizeof(msg)) == 0 &&
	    (strlen(hex) != 64 || strspn(hex, "0123456789abcdef") != 64))
		abort();
	free(s);
	free(m);
	return 0;
}
