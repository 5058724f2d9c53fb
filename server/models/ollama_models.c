/*
 * Ollama's local model store (see ollama_models.h).
 */
#include "server/models/ollama_models.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "core/fit/ollama_ref.h"
#include "server/config.h"
#include "server/models/model_files.h"

#define MANIFEST_CAP ((size_t)256 << 10)
#define MODEL_LAYER "application/vnd.ollama.image.model"

void rf_ollama_dir_at(const char *configured, const char *system_dir, char *buf, size_t buflen)
{
	const char *v;
	struct stat st;

	buf[0] = '\0';
	if (configured && configured[0]) {
		snprintf(buf, buflen, "%s", configured);
		return;
	}
	if ((v = getenv("OLLAMA_MODELS")) && v[0] == '/') {
		snprintf(buf, buflen, "%s", v);
		return;
	}
	if ((v = getenv("HOME")) && v[0] == '/') {
		snprintf(buf, buflen, "%s/.ollama/models", v);
		if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode))
			return;
	}
	/* Ollama installed as a system service (its Linux installer) keeps the store under its
	 * own user's home, which a daemon running as another user (rigfit's unit) can read. */
	if (system_dir && stat(system_dir, &st) == 0 && S_ISDIR(st.st_mode))
		snprintf(buf, buflen, "%s", system_dir);
}

void rf_ollama_dir(const char *configured, char *buf, size_t buflen)
{
	rf_ollama_dir_at(configured, RF_OLLAMA_SYSTEM_DIR, buf, buflen);
}

/* Reads the manifest file path (confined to dir) into a malloc'd NUL-terminated buffer. */
static int read_manifest(const char *dir, const char *path, char **out, size_t *len, char *msg,
			 size_t msglen)
{
	const char *dirs[1] = {dir};
	uint64_t size = 0;
	char *b;
	long got;
	int fd, rc = rf_model_file_open(dirs, 1, path, "manifest", &fd, &size, msg, msglen);

	if (rc < 0)
		return rc;
	if (size > MANIFEST_CAP) {
		close(fd);
		snprintf(msg, msglen, "the Ollama manifest is larger than %zu KiB",
			 MANIFEST_CAP >> 10);
		return RF_E_TOO_LARGE;
	}
	b = malloc((size_t)size + 1);
	if (!b) {
		close(fd);
		return RF_E_NOMEM;
	}
	got = rf_model_file_pread(fd, b, (size_t)size, 0);
	close(fd);
	if (got < 0) {
		free(b);
		snprintf(msg, msglen, "the Ollama manifest cannot be read");
		return RF_E_IO;
	}
	b[got] = '\0';
	*out = b;
	*len = (size_t)got;
	return 0;
}

int rf_ollama_manifest_blob(const char *manifest, size_t len, char hex[65], char *msg,
			    size_t msglen)
{
	cJSON *doc = cJSON_ParseWithLength(manifest, len);
	const cJSON *layer;
	int rc = RF_E_INVALID_VALUE;

	snprintf(msg, msglen, "the Ollama manifest has no model layer");
	cJSON_ArrayForEach(layer, cJSON_GetObjectItemCaseSensitive(doc, "layers"))
	{
		const cJSON *mt = cJSON_GetObjectItemCaseSensitive(layer, "mediaType");
		const cJSON *dg = cJSON_GetObjectItemCaseSensitive(layer, "digest");
		const char *h;
		size_t n;

		if (!cJSON_IsString(mt) || strcmp(mt->valuestring, MODEL_LAYER) != 0)
			continue;
		if (!cJSON_IsString(dg) || strncmp(dg->valuestring, "sha256:", 7) != 0)
			break;
		h = dg->valuestring + 7;
		n = strspn(h, "0123456789abcdef");
		if (n != 64 || h[n] != '\0') {
			snprintf(msg, msglen, "the Ollama manifest's model digest is not a sha256");
			break;
		}
		memcpy(hex, h, 65);
		rc = 0;
		break;
	}
	cJSON_Delete(doc);
	return rc;
}

int rf_ollama_read(const char *dir, const char *ref, char **buf, size_t *len, uint64_t *file_size,
		   char *msg, size_t msglen)
{
	struct ollama_ref r;
	const char *dirs[1] = {dir};
	const char *colon = ref ? strchr(ref, ':') : NULL;
	const char *tag = colon ? colon + 1 : "latest";
	char path[PATH_MAX], blob[PATH_MAX], hex[65], *manifest = NULL;
	size_t manifest_len = 0;
	int rc;

	if (!dir || !dir[0])
		return RF_E_NOT_FOUND;
	if (!ollama_ref_parse(ref, &r) || strchr(tag, '/') || strstr(tag, "..")) {
		snprintf(msg, msglen, "not an Ollama library tag");
		return RF_E_INVALID_VALUE;
	}
	/* The manifest is named by the tag as written ("8b-instruct-q4_K_M"), the model name in
	 * lower case as Ollama stores it. */
	if ((size_t)snprintf(path, sizeof(path), "%s/manifests/registry.ollama.ai/library/%s/%s",
			     dir, r.name, tag) >= sizeof(path))
		return RF_E_INVALID_VALUE;
	if (access(path, F_OK) != 0)
		return RF_E_NOT_FOUND;
	rc = read_manifest(dir, path, &manifest, &manifest_len, msg, msglen);
	if (rc == 0)
		rc = rf_ollama_manifest_blob(manifest, manifest_len, hex, msg, msglen);
	free(manifest);
	if (rc < 0)
		return rc;
	if ((size_t)snprintf(blob, sizeof(blob), "%s/blobs/sha256-%s", dir, hex) >= sizeof(blob))
		return RF_E_INVALID_VALUE;
	return rf_model_file_read(dirs, 1, blob, RF_MODEL_HEADER_CAP, buf, len, file_size, msg,
				  msglen);
}

int rf_ollama_read_cfg(void *ctx, const char *ref, char **buf, size_t *len, uint64_t *file_size,
		       char *msg, size_t msglen)
{
	const struct rf_config *cfg = ctx;
	char dir[PATH_MAX];

	rf_ollama_dir(cfg->ollama_models, dir, sizeof(dir));
	return rf_ollama_read(dir, ref, buf, len, file_size, msg, msglen);
}
