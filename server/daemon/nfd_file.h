/*
 * Writing the node-feature-discovery feature file (--nfd-dir): NFD's local source reads every
 * file in its features.d directory, so the file is replaced atomically (written beside, then
 * renamed) and a reader never sees half of it.
 */
#ifndef RIGFIT_SERVER_DAEMON_NFD_FILE_H
#define RIGFIT_SERVER_DAEMON_NFD_FILE_H

#define RF_NFD_FILE_NAME "rigfit.features"

/* Writes text to <dir>/rigfit.features. Returns 0 or a negative rf_err (RF_E_IO). */
int rf_nfd_write(const char *dir, const char *text);

#endif
