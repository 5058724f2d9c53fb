/*
 * Adapter from the configuration to the model file reader (see read_hooks.h).
 */
#include "server/models/read_hooks.h"

#include <limits.h>

#include "core/err.h"
#include "server/config.h"
#include "server/models/hf_folders.h"
#include "server/models/model_files.h"

int rf_model_file_read_cfg(void *ctx, const char *path, char **buf, size_t *len,
			   uint64_t *file_size, char *msg, size_t msglen)
{
	const struct rf_config *cfg = ctx;
	const char *dirs[RF_CONFIG_MAX_LIST];
	int n = cfg->n_models_dirs < RF_CONFIG_MAX_LIST ? cfg->n_models_dirs : RF_CONFIG_MAX_LIST;

	for (int i = 0; i < n; i++)
		dirs[i] = cfg->models_dirs[i];
	return rf_model_file_read(dirs, n, path, RF_MODEL_HEADER_CAP, buf, len, file_size, msg,
				  msglen);
}

int rf_model_dir_read_cfg(void *ctx, int kind, const char *path, struct api_model_dir *out,
			  char *msg, size_t msglen)
{
	const struct rf_config *cfg = ctx;
	const char *dirs[RF_CONFIG_MAX_LIST];
	int n = cfg->n_models_dirs < RF_CONFIG_MAX_LIST ? cfg->n_models_dirs : RF_CONFIG_MAX_LIST;
	char hub[PATH_MAX];

	if (kind == 1) {
		rf_hf_hub_dir(cfg->hf_cache, hub, sizeof(hub));
		return rf_hf_cache_read(hub, path, out, msg, msglen);
	}
	for (int i = 0; i < n; i++)
		dirs[i] = cfg->models_dirs[i];
	return rf_model_dir_read(dirs, n, path, out, msg, msglen);
}
