/*
 * The data directory and its free space (see data_dir.h).
 */
#include "server/data_dir.h"

#include <stdio.h>
#include <string.h>
#include <sys/statvfs.h>

#include "core/err.h"

void rf_data_dir(const struct rf_config *cfg, char *out, size_t outlen)
{
	const char *slash;

	if (cfg->data_dir[0]) {
		snprintf(out, outlen, "%s", cfg->data_dir);
		return;
	}
	slash = strrchr(cfg->db, '/');
	if (!slash)
		snprintf(out, outlen, ".");
	else if (slash == cfg->db)
		snprintf(out, outlen, "/");
	else
		snprintf(out, outlen, "%.*s", (int)(slash - cfg->db), cfg->db);
}

int rf_disk_free_bytes(const char *dir, int64_t *out)
{
	struct statvfs st;

	if (statvfs(dir, &st) != 0)
		return RF_E_IO;
	*out = (int64_t)st.f_bavail * (int64_t)st.f_frsize;
	return 0;
}
