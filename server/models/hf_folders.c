/*
 * Hugging Face model folders named by a request ({"model": {"path": DIR}}) or found in the
 * Hugging Face cache by id: config.json and the JSON header of every safetensors file, each
 * opened under the confinement of server/models/model_files.c (the folder must lie in a models dir;
 * in the cache, the snapshot's symlinks must lead into the cache's own blobs). Of a
 * safetensors file only the 8-byte header length and the header are read, never the tensors.
 *
 * The cache layout (huggingface_hub): HUB/models--ORG--NAME/refs/main holds the commit of the
 * snapshot HUB/models--ORG--NAME/snapshots/<commit>/, whose files link to ../../blobs/.
 */
#include "server/models/hf_folders.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/err.h"
#include "server/models/model_files.h"

#define CONFIG_CAP ((size_t)1 << 20)
#define INDEX_CAP ((size_t)16 << 20)
#define HEADERS_CAP ((size_t)64 << 20) /* all shards' headers together */
#define REF_CAP 64                     /* a 40-digit commit and its newline */

static void set_msg(char *msg, size_t msglen, const char *text)
{
	if (msg && msglen > 0)
		snprintf(msg, msglen, "%s", text);
}

/* Opens dir/name for reading under the models dirs' confinement. Returns 0 with the
 * descriptor and size, or a negative rf_err with msg set. */
static int open_in(const char *const *dirs, int n_dirs, const char *dir, const char *name, int *fd,
		   uint64_t *size, char *msg, size_t msglen)
{
	char path[PATH_MAX];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
		set_msg(msg, msglen, "the model path is too long");
		return RF_E_INVALID_VALUE;
	}
	return rf_model_file_open(dirs, n_dirs, path, "model", fd, size, msg, msglen);
}

/* Reads the whole file dir/name (at most cap bytes, else RF_E_TOO_LARGE) into a malloc'd,
 * NUL-terminated buffer. Returns 0 or a negative rf_err with msg set. */
static int read_small(const char *const *dirs, int n_dirs, const char *dir, const char *name,
		      size_t cap, char **out, size_t *len, char *msg, size_t msglen)
{
	uint64_t size = 0;
	char *b = NULL;
	long got;
	int fd = -1, rc;

	rc = open_in(dirs, n_dirs, dir, name, &fd, &size, msg, msglen);
	if (rc < 0)
		return rc;
	if (size > cap) {
		snprintf(msg, msglen, "%s is larger than %zu MiB", name, cap >> 20);
		rc = RF_E_TOO_LARGE;
		goto out;
	}
	b = malloc((size_t)size + 1);
	if (!b) {
		rc = RF_E_NOMEM;
		set_msg(msg, msglen, "out of memory");
		goto out;
	}
	got = rf_model_file_pread(fd, b, (size_t)size, 0);
	if (got < 0) {
		snprintf(msg, msglen, "reading %s failed", name);
		rc = RF_E_IO;
		goto out;
	}
	b[got] = '\0';
	*out = b;
	*len = (size_t)got;
	b = NULL;
	rc = 0;
out:
	close(fd);
	free(b);
	return rc;
}

/* Reads the JSON header of the safetensors file dir/name into d's next slot; *budget is the
 * header bytes still allowed. Returns 0 or a negative rf_err with msg set. */
static int read_header(const char *const *dirs, int n_dirs, const char *dir, const char *name,
		       size_t *budget, struct api_model_dir *d, char *msg, size_t msglen)
{
	unsigned char lenbuf[8];
	uint64_t size = 0, n = 0;
	char *b = NULL;
	int fd = -1, rc;

	if (d->n_shards >= API_MODEL_DIR_MAX_SHARDS) {
		snprintf(msg, msglen, "the model has more than %d safetensors files",
			 API_MODEL_DIR_MAX_SHARDS);
		return RF_E_TOO_LARGE;
	}
	rc = open_in(dirs, n_dirs, dir, name, &fd, &size, msg, msglen);
	if (rc < 0)
		return rc;
	if (rf_model_file_pread(fd, (char *)lenbuf, 8, 0) != 8) {
		snprintf(msg, msglen, "%.100s is not a safetensors file (shorter than 8 bytes)",
			 name);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	for (int i = 7; i >= 0; i--)
		n = n << 8 | lenbuf[i];
	if (n < 2 || n > *budget || size < 8 || n > size - 8) {
		snprintf(
			msg, msglen,
			"%.100s: the safetensors header length %llu is not possible for a %llu-byte "
			"file (or exceeds the %zu MiB read for headers)",
			name, (unsigned long long)n, (unsigned long long)size, HEADERS_CAP >> 20);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	b = malloc((size_t)n + 1);
	if (!b) {
		rc = RF_E_NOMEM;
		set_msg(msg, msglen, "out of memory");
		goto out;
	}
	if (rf_model_file_pread(fd, b, (size_t)n, 8) != (long)n || b[0] != '{') {
		snprintf(msg, msglen, "%.100s: the safetensors header is truncated or not JSON",
			 name);
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	if (rf_ckd_add_u64(&d->file_bytes, d->file_bytes, size) < 0) {
		set_msg(msg, msglen, "the safetensors files' sizes add up past 2^64");
		rc = RF_E_RANGE;
		goto out;
	}
	b[n] = '\0';
	*budget -= (size_t)n;
	d->headers[d->n_shards] = b;
	d->header_len[d->n_shards] = (size_t)n;
	d->shard_bytes[d->n_shards] = size;
	d->n_shards++;
	b = NULL;
	rc = 0;
out:
	close(fd);
	free(b);
	return rc;
}

int rf_model_shard_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n > 12 && n < 256 && s[0] != '.' && !strchr(s, '/') &&
	       strcmp(s + n - 12, ".safetensors") == 0;
}

/* The distinct shard names an index has named so far: at most API_MODEL_DIR_MAX_SHARDS, in an
 * open-addressing table of twice as many slots, so that each entry of a 16 MiB index costs one
 * lookup rather than a walk back over every entry before it. */
#define SEEN_SLOTS (2 * API_MODEL_DIR_MAX_SHARDS)

static size_t name_slot(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h % SEEN_SLOTS;
}

int rf_model_index_shards(const char *idx, size_t len, int (*each)(void *ctx, const char *name),
			  void *ctx, char *msg, size_t msglen)
{
	cJSON *doc = cJSON_ParseWithLength(idx, len);
	const cJSON *map = cJSON_GetObjectItemCaseSensitive(doc, "weight_map"), *e;
	const char **seen = calloc(SEEN_SLOTS, sizeof(*seen));
	int rc = 0, distinct = 0;

	if (!seen) {
		set_msg(msg, msglen, "out of memory");
		rc = RF_E_NOMEM;
		goto out;
	}
	if (!cJSON_IsObject(map) || !map->child) {
		set_msg(msg, msglen, "model.safetensors.index.json has no weight_map");
		rc = RF_E_INVALID_VALUE;
		goto out;
	}
	cJSON_ArrayForEach(e, map)
	{
		size_t k;

		if (!cJSON_IsString(e) || !rf_model_shard_name_ok(e->valuestring)) {
			set_msg(msg, msglen,
				"model.safetensors.index.json names a file that is not a "
				".safetensors file in the folder");
			rc = RF_E_INVALID_VALUE;
			goto out;
		}
		for (k = name_slot(e->valuestring); seen[k] && strcmp(seen[k], e->valuestring) != 0;
		     k = (k + 1) % SEEN_SLOTS)
			;
		if (seen[k])
			continue;
		if (distinct >= API_MODEL_DIR_MAX_SHARDS) {
			snprintf(msg, msglen, "the model has more than %d safetensors files",
				 API_MODEL_DIR_MAX_SHARDS);
			rc = RF_E_TOO_LARGE;
			goto out;
		}
		seen[k] = e->valuestring;
		distinct++;
		rc = each(ctx, e->valuestring);
		if (rc < 0)
			goto out;
	}
out:
	free(seen);
	cJSON_Delete(doc);
	return rc;
}

/* What read_shard needs of read_shards' arguments. */
struct shard_walk {
	const char *const *dirs;
	int n_dirs;
	const char *dir;
	size_t budget;
	struct api_model_dir *d;
	char *msg;
	size_t msglen;
};

static int read_shard(void *ctx, const char *name)
{
	struct shard_walk *w = ctx;

	return read_header(w->dirs, w->n_dirs, w->dir, name, &w->budget, w->d, w->msg, w->msglen);
}

/* Reads every shard the index names (each once) or model.safetensors. */
static int read_shards(const char *const *dirs, int n_dirs, const char *dir,
		       struct api_model_dir *d, char *msg, size_t msglen)
{
	struct shard_walk w = {dirs, n_dirs, dir, HEADERS_CAP, d, msg, msglen};
	char *idx = NULL;
	size_t idx_len = 0;
	int rc = read_small(dirs, n_dirs, dir, "model.safetensors.index.json", INDEX_CAP, &idx,
			    &idx_len, msg, msglen);

	if (rc == RF_E_NOT_FOUND) {
		rc = read_header(dirs, n_dirs, dir, "model.safetensors", &w.budget, d, msg, msglen);
		if (rc == RF_E_NOT_FOUND)
			set_msg(msg, msglen,
				"the folder has no model.safetensors or "
				"model.safetensors.index.json");
		return rc;
	}
	if (rc < 0)
		return rc;
	rc = rf_model_index_shards(idx, idx_len, read_shard, &w, msg, msglen);
	free(idx);
	return rc;
}

int rf_model_dir_read(const char *const *dirs, int n_dirs, const char *dir,
		      struct api_model_dir *out, char *msg, size_t msglen)
{
	struct api_model_dir d;
	struct stat st;
	int rc;

	memset(&d, 0, sizeof(d));
	set_msg(msg, msglen, "");
	if (!dirs || n_dirs <= 0) {
		set_msg(msg, msglen,
			"reading model folders is off: no models directory is configured");
		return RF_E_FORBIDDEN;
	}
	if (!dir || dir[0] != '/' || strnlen(dir, PATH_MAX) >= PATH_MAX - 64) {
		set_msg(msg, msglen, "the model path must be an absolute path to a folder");
		return RF_E_INVALID_VALUE;
	}
	/* The folder's files are each confined as they are opened; a folder outside every
	 * models dir fails there with the same FORBIDDEN as a file would. */
	rc = read_small(dirs, n_dirs, dir, "config.json", CONFIG_CAP, &d.config, &d.config_len, msg,
			msglen);
	if (rc == RF_E_NOT_FOUND && (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)))
		set_msg(msg, msglen, "the model folder does not exist");
	else if (rc == RF_E_NOT_FOUND)
		set_msg(msg, msglen, "the model folder has no config.json");
	if (rc == 0)
		rc = read_shards(dirs, n_dirs, dir, &d, msg, msglen);
	if (rc < 0) {
		api_model_dir_free(&d);
		return rc;
	}
	snprintf(d.where, sizeof(d.where), "models_dir");
	*out = d;
	return 0;
}

/* Returns 1 when id is ORG/NAME of Hugging Face's characters. */
static int hf_id_ok(const char *id)
{
	const char *slash = strchr(id, '/');
	size_t n = strlen(id);

	if (!slash || slash == id || !slash[1] || strchr(slash + 1, '/') || n > 200)
		return 0;
	for (const char *p = id; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.' || c == '/'))
			return 0;
	}
	return strstr(id, "..") == NULL && id[0] != '.' && slash[1] != '.';
}

int rf_hf_cache_read(const char *hub, const char *id, struct api_model_dir *out, char *msg,
		     size_t msglen)
{
	char repo[PATH_MAX], snap[PATH_MAX], rev[REF_CAP] = "";
	const char *dirs[1];
	char *ref = NULL;
	size_t ref_len = 0;
	int rc;

	set_msg(msg, msglen, "");
	if (!hub || !hub[0])
		return RF_E_NOT_FOUND;
	if (!hf_id_ok(id)) {
		set_msg(msg, msglen, "not a Hugging Face id (ORG/NAME)");
		return RF_E_INVALID_VALUE;
	}
	{
		/* models--ORG--NAME: the id's '/' becomes "--". */
		const char *slash = strchr(id, '/');
		if ((size_t)snprintf(repo, sizeof(repo), "%s/models--%.*s--%s", hub,
				     (int)(slash - id), id, slash + 1) >= sizeof(repo))
			return RF_E_INVALID_VALUE;
	}
	dirs[0] = hub;
	rc = read_small(dirs, 1, repo, "refs/main", REF_CAP, &ref, &ref_len, NULL, 0);
	if (rc < 0)
		return RF_E_NOT_FOUND;
	for (size_t i = 0; i < ref_len && i + 1 < sizeof(rev); i++) {
		char c = ref[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			break;
		rev[i] = c;
		rev[i + 1] = '\0';
	}
	free(ref);
	if (strlen(rev) < 7) {
		set_msg(msg, msglen, "the Hugging Face cache's refs/main is not a commit");
		return RF_E_INVALID_VALUE;
	}
	if ((size_t)snprintf(snap, sizeof(snap), "%s/snapshots/%s", repo, rev) >= sizeof(snap))
		return RF_E_INVALID_VALUE;
	rc = rf_model_dir_read(dirs, 1, snap, out, msg, msglen);
	if (rc == 0) {
		snprintf(out->where, sizeof(out->where), "hf_cache");
		memcpy(out->revision, rev, sizeof(out->revision) - 1);
		out->revision[sizeof(out->revision) - 1] = '\0';
	}
	return rc;
}

void rf_hf_hub_dir(const char *configured, char *buf, size_t buflen)
{
	const char *v;

	buf[0] = '\0';
	if (configured && configured[0]) {
		snprintf(buf, buflen, "%s", configured);
	} else if ((v = getenv("HF_HUB_CACHE")) && v[0] == '/') {
		snprintf(buf, buflen, "%s", v);
	} else if ((v = getenv("HF_HOME")) && v[0] == '/') {
		snprintf(buf, buflen, "%s/hub", v);
	} else if ((v = getenv("HOME")) && v[0] == '/') {
		snprintf(buf, buflen, "%s/.cache/huggingface/hub", v);
	}
}
