/*
 * This host's measurement in the store (table host_bench, migration NNNN_host_bench.sql, and its
 * quant classes in host_bench_kernel, NNNN_host_bench_kernel.sql), one row per hardware
 * fingerprint: the daemon measures a machine once and, after a restart on
 * the same machine, reads its figures back instead of measuring again.
 */
#ifndef RIGFIT_SERVER_STORE_STORE_HOSTBENCH_H
#define RIGFIT_SERVER_STORE_STORE_HOSTBENCH_H

#include "core/hw/hw.h"
#include "server/store/store.h"

/* Reads the figures stored for fingerprint fp into *out (measured true). Returns 0,
 * RF_E_NOT_FOUND, or RF_E_STORE_UNAVAILABLE (NULL store, busy, failing); on error *out is not
 * written. */
int rf_store_host_bench_get(struct rf_store *st, const char *fp,
			    struct hw_host_bench *out /* OUT */);

/* Stores b (measured, every figure > 0) for fingerprint fp, replacing what was stored for it.
 * Returns 0, RF_E_STORE_UNAVAILABLE (NULL store, busy, full, read-only) or RF_E_INVALID_VALUE
 * (what the schema refuses: a figure <= 0, an empty fingerprint). */
int rf_store_host_bench_put(struct rf_store *st, const char *fp, const struct hw_host_bench *b);

#endif
