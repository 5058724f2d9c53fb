/*
 * The data directory: where the database lives unless --data-dir names another, and whose
 * file system's free space ModelForge's detection shows as available_diskspace_gb (datasets
 * and checkpoints go there).
 */
#ifndef RIGFIT_SERVER_DATA_DIR_H
#define RIGFIT_SERVER_DATA_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "server/config.h"

/* Writes the data directory of cfg to out: cfg->data_dir, else the database's directory. */
void rf_data_dir(const struct rf_config *cfg, char *out /* OUT */, size_t outlen);

/* Writes the bytes an unprivileged user may still write on dir's file system (statvfs:
 * f_bavail x f_frsize). Returns 0, or RF_E_IO when dir cannot be examined. */
int rf_disk_free_bytes(const char *dir, int64_t *out /* OUT */);

#endif
