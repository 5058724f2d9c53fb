/*
 * The host measurement for the CLI's questions (estimate, config, recommend, validate): the
 * figures the daemon keeps in its store for this machine's hardware fingerprint, or, when
 * there are none, one measurement taken now (said on standard error) and stored for the next
 * command and the daemon. So `rigfit estimate` and the daemon answer from the same figures,
 * with the same basis.
 */
#ifndef RIGFIT_SERVER_CLI_CLI_HOSTBENCH_H
#define RIGFIT_SERVER_CLI_CLI_HOSTBENCH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/hw/hw.h"

/* The store the CLI reads the measurement from: db when given, else RIGFIT_DB, else the
 * daemon's default (STATE_DIRECTORY/rigfit.db under systemd, else ./var/rigfit.db) when that
 * file exists, else the user's state folder ($XDG_STATE_HOME or ~/.local/state)/rigfit/
 * rigfit.db (the folders above it made). Writes the path to out (size outlen). */
void rf_cli_store_path(const char *db, char *out /* OUT */, size_t outlen);

/* Gives the live scan s this host's measurement: read from the store at db (as
 * rf_cli_store_path finds it) for s's fingerprint, or measured now and stored there. Does
 * nothing when RIGFIT_NO_HOST_BENCH is set. A store that cannot be read or written only
 * costs a note on stderr: the answer then stands on a measurement that is not kept. */
void rf_cli_host_bench(struct hw_snapshot *s, const char *db);

#endif
