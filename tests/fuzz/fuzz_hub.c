/*
 * Fuzz target: what a Hugging Face Hub answers to a lookup (server/models/hub.c), without the
 * network: the response head of a shard's range request (its Content-Range line gives the shard's
 * size, core/content_range.c), config.json, model.safetensors.index.json and a shard's JSON header,
 * joined with FUZZ_SEP in that order. As the lookup does, a config.json that is not a JSON object
 * or a shard without a size is refused; an empty index means one model.safetensors; every shard the
 * index names gets the header. The answer then goes through the check that decides whether it is
 * kept (api_model_folder, where "hub"): 0 or a 422, never a crash, and a kept answer's sizes add
 * up.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_folder.h"
#include "core/checked.h"
#include "core/content_range.h"
#include "server/models/hf_folders.h"
#include "tests/fuzz/fuzz.h"

/* The shards of the answer being built: each gets the one header, and the head's size. */
struct answer {
	struct api_model_dir d;
	char *header;
	size_t header_len;
	uint64_t total;
};

static int add_shard(void *ctx, const char *name)
{
	struct answer *a = ctx;
	struct api_model_dir *d = &a->d;

	(void)name;
	if (d->n_shards >= API_MODEL_DIR_MAX_SHARDS)
		return RF_E_TOO_LARGE;
	if (rf_ckd_add_u64(&d->file_bytes, d->file_bytes, a->total) < 0)
		return RF_E_INVALID_VALUE;
	d->headers[d->n_shards] = a->header;
	d->header_len[d->n_shards] = a->header_len;
	d->shard_bytes[d->n_shards] = a->total;
	d->n_shards++;
	return 0;
}

/* The Content-Range total of head, the last well-formed line that has one; 0: none. */
static uint64_t head_total(const struct fuzz_part *head)
{
	uint64_t total = 0;

	for (size_t at = 0; at < head->len;) {
		const char *nl = memchr(head->p + at, '\n', head->len - at);
		size_t n = nl ? (size_t)(nl - (head->p + at)) + 1 : head->len - at;
		struct rf_content_range cr;

		if (rf_content_range_line(head->p + at, n, &cr) == 0 && cr.has_total)
			total = cr.total;
		at += n;
	}
	return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct answer a;
	struct fuzz_part p[4];
	struct api_reply r = {0};
	struct api_checkpoint ck;
	struct model_arch arch;
	char msg[256], *cfg, *idx;
	cJSON *doc;
	int rc;

	fuzz_split(data, size, p, 4);
	memset(&a, 0, sizeof(a));
	a.total = head_total(&p[0]);
	cfg = fuzz_strdup((const uint8_t *)p[1].p, p[1].len);
	idx = fuzz_strdup((const uint8_t *)p[2].p, p[2].len);
	a.header = fuzz_strdup((const uint8_t *)p[3].p, p[3].len);
	a.header_len = p[3].len;
	doc = cJSON_ParseWithLength(cfg, p[1].len);
	if (!cJSON_IsObject(doc) || a.total == 0)
		goto out;
	a.d.config = cfg;
	a.d.config_len = p[1].len;
	snprintf(a.d.where, sizeof(a.d.where), "hub");
	rc = p[2].len == 0 ? add_shard(&a, "model.safetensors") :
			     rf_model_index_shards(idx, p[2].len, add_shard, &a, msg, sizeof(msg));
	if (rc < 0)
		goto out;
	rc = api_model_folder(&a.d, "model.id", &arch, &ck, &r);
	if (rc < 0 && r.status != 422)
		abort();
	if (rc == 0 && (ck.data_bytes < 0 || (uint64_t)ck.data_bytes > a.d.file_bytes))
		abort();
out:
	api_reply_reset(&r);
	cJSON_Delete(doc);
	free(cfg);
	free(idx);
	free(a.header);
	return 0;
}
