/*
 * Adapter from the configuration to the model file reader (see models_dir.h).
 */
#include "server/models_dir.h"

#include "server/config.h"
#include "server/model_files.h"

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
