/*
 * The models this host holds, for GET /api/models: GGUF files and Hugging Face folders in each
 * --models-dir (two levels deep), the Hugging Face cache's repositories that have a snapshot,
 * and the tags of Ollama's local store. Only directory entries and file sizes are read (and an
 * Ollama manifest's layer sizes); every walk is capped in depth and entries, and symbolic links
 * are not followed out of a directory.
 */
#include "server/models/models_list.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "server/config.h"
#include "server/models/hf_folders.h"
#include "server/models/ollama_models.h"

#define ENTRIES_PER_DIR 4096 /* directory entries looked at per directory */
#define MANIFEST_CAP (256 << 10)

struct lister {
	struct api_local_model *out; /* room for RF_MODELS_PER_SOURCE a place */
	int n;
	enum api_local_source source; /* the place being walked */
	int per_source[API_N_LOCAL_SOURCES];
	bool truncated[API_N_LOCAL_SOURCES];
};

/* Called for each directory entry a walk is about to look at, seen of them so far in this
 * directory (counted here). Returns false, marking the place truncated, when a cap stops the
 * walk there: the place has its RF_MODELS_PER_SOURCE models, or the directory its
 * ENTRIES_PER_DIR entries. */
static bool may_look(struct lister *l, int *seen)
{
	if ((*seen)++ < ENTRIES_PER_DIR && l->per_source[l->source] < RF_MODELS_PER_SOURCE)
		return true;
	l->truncated[l->source] = true;
	return false;
}

static void add(struct lister *l, const char *id, const char *format, int64_t size)
{
	struct api_local_model *m;

	if (l->per_source[l->source] >= RF_MODELS_PER_SOURCE) {
		l->truncated[l->source] = true;
		return;
	}
	l->per_source[l->source]++;
	m = &l->out[l->n++];
	snprintf(m->id, sizeof(m->id), "%s", id);
	snprintf(m->where, sizeof(m->where), "%s", api_local_source_name(l->source));
	snprintf(m->format, sizeof(m->format), "%s", format);
	m->size_bytes = size;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n > k && strcmp(s + n - k, suffix) == 0;
}

/* Sum of the sizes of the regular files (following links within the tree) in dir whose name
 * ends with suffix (NULL: every file). */
static int64_t dir_bytes(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int64_t sum = 0;
	int seen = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL && seen++ < ENTRIES_PER_DIR) {
		char p[PATH_MAX];
		struct stat st;
		if (e->d_name[0] == '.' || (suffix && !ends_with(e->d_name, suffix)))
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= sizeof(p))
			continue;
		if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
			sum += (int64_t)st.st_size;
	}
	closedir(d);
	return sum;
}

/* GGUF files and folders with a config.json under dir, depth levels down. */
static void walk_models_dir(struct lister *l, const char *dir, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int seen = 0;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL && may_look(l, &seen)) {
		char p[PATH_MAX], cfg[PATH_MAX];
		struct stat st;
		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >= sizeof(p) - 16)
			continue;
		if (lstat(p, &st) != 0)
			continue;
		if (S_ISREG(st.st_mode) && ends_with(e->d_name, ".gguf")) {
			add(l, p, "gguf", (int64_t)st.st_size);
		} else if (S_ISDIR(st.st_mode)) {
			if ((size_t)snprintf(cfg, sizeof(cfg), "%s/config.json", p) >= sizeof(cfg))
				continue;
			if (access(cfg, R_OK) == 0)
				add(l, p, "safetensors", dir_bytes(p, ".safetensors"));
			else if (depth > 1)
				walk_models_dir(l, p, depth - 1);
		}
	}
	closedir(d);
}

/* hub/models--ORG--NAME with a refs/main: the id ORG/NAME and the size of its blobs. */
static void walk_hf_cache(struct lister *l, const char *hub)
{
	DIR *d = opendir(hub);
	struct dirent *e;
	int seen = 0;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL && may_look(l, &seen)) {
		char p[PATH_MAX], id[160];
		const char *name = e->d_name, *sep;
		if (strncmp(name, "models--", 8) != 0 || !(sep = strstr(name + 8, "--")))
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s/refs/main", hub, name) >= sizeof(p))
			continue;
		if (access(p, R_OK) != 0)
			continue;
		snprintf(id, sizeof(id), "%.*s/%s", (int)(sep - (name + 8)), name + 8, sep + 2);
		if ((size_t)snprintf(p, sizeof(p), "%s/%s/blobs", hub, name) >= sizeof(p))
			continue;
		add(l, id, "safetensors", dir_bytes(p, NULL));
	}
	closedir(d);
}

/* The total of a manifest's layer sizes (the bytes Ollama keeps for the tag). */
static int64_t manifest_bytes(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;
	cJSON *doc;
	const cJSON *layer;
	int64_t sum = 0;

	if (!f)
		return 0;
	buf = malloc(MANIFEST_CAP + 1);
	n = buf ? fread(buf, 1, MANIFEST_CAP, f) : 0;
	fclose(f);
	if (!buf)
		return 0;
	buf[n] = '\0';
	doc = cJSON_Parse(buf);
	free(buf);
	cJSON_ArrayForEach(layer, cJSON_GetObjectItemCaseSensitive(doc, "layers"))
	{
		const cJSON *sz = cJSON_GetObjectItemCaseSensitive(layer, "size");
		if (cJSON_IsNumber(sz) && sz->valuedouble > 0)
			sum += (int64_t)sz->valuedouble;
	}
	cJSON_Delete(doc);
	return sum;
}

/* Ollama's library tags: manifests/registry.ollama.ai/library/NAME/TAG as NAME:TAG. */
static void walk_ollama(struct lister *l, const char *store)
{
	char lib[PATH_MAX];
	DIR *d;
	struct dirent *e;
	int seen = 0;

	if ((size_t)snprintf(lib, sizeof(lib), "%s/manifests/registry.ollama.ai/library", store) >=
	    sizeof(lib))
		return;
	d = opendir(lib);
	if (!d)
		return;
	while ((e = readdir(d)) != NULL && may_look(l, &seen)) {
		char p[PATH_MAX];
		DIR *t;
		struct dirent *te;
		int tseen = 0;
		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", lib, e->d_name) >= sizeof(p))
			continue;
		t = opendir(p);
		if (!t)
			continue;
		while ((te = readdir(t)) != NULL && may_look(l, &tseen)) {
			char m[PATH_MAX], id[160];
			if (te->d_name[0] == '.')
				continue;
			if ((size_t)snprintf(m, sizeof(m), "%s/%s", p, te->d_name) >= sizeof(m))
				continue;
			snprintf(id, sizeof(id), "%.80s:%.70s", e->d_name, te->d_name);
			add(l, id, "gguf", manifest_bytes(m));
		}
		closedir(t);
	}
	closedir(d);
}

int rf_models_walk(const struct rf_config *cfg, struct api_local_models *out)
{
	struct timespec now;
	struct lister l = {0};
	char dir[PATH_MAX];

	clock_gettime(CLOCK_REALTIME, &now);
	l.out = calloc((size_t)RF_MODELS_PER_SOURCE * API_N_LOCAL_SOURCES, sizeof(*l.out));
	if (!l.out)
		return RF_E_NOMEM;
	l.source = API_SOURCE_MODELS_DIR;
	for (int i = 0; i < cfg->n_models_dirs && i < RF_CONFIG_MAX_LIST; i++)
		walk_models_dir(&l, cfg->models_dirs[i], 2);
	l.source = API_SOURCE_HF_CACHE;
	rf_hf_hub_dir(cfg->hf_cache, dir, sizeof(dir));
	if (dir[0])
		walk_hf_cache(&l, dir);
	l.source = API_SOURCE_OLLAMA;
	rf_ollama_dir(cfg->ollama_models, dir, sizeof(dir));
	if (dir[0])
		walk_ollama(&l, dir);
	/* Keep only what was found: a snapshot holds its list for a whole scan interval. */
	if (l.n == 0) {
		free(l.out);
		l.out = NULL;
	} else {
		struct api_local_model *fit = realloc(l.out, (size_t)l.n * sizeof(*l.out));
		if (fit)
			l.out = fit;
	}
	out->items = l.out;
	out->n = l.n;
	memcpy(out->truncated, l.truncated, sizeof(out->truncated));
	out->scanned_at_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
	return 0;
}

void rf_models_free(struct api_local_models *m)
{
	if (!m)
		return;
	free(m->items);
	m->items = NULL;
	m->n = 0;
	memset(m->truncated, 0, sizeof(m->truncated));
}
