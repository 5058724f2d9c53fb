/*
 * The `hardware` object of DESIGN.md §3: struct hw_snapshot to JSON. One function renders it
 * for GET /api/hardware, `rigfit detect --format json` and the scan history, so all three are
 * byte-identical for the same scan.
 */
#ifndef RIGFIT_API_HARDWARE_JSON_H
#define RIGFIT_API_HARDWARE_JSON_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/hw/hw.h"

/* Returns a new cJSON object for s (caller frees with cJSON_Delete), or NULL when out of
 * memory. Unknown numbers are null. */
cJSON *api_hardware_to_cjson(const struct hw_snapshot *s);

/* Renders s as compact JSON. Returns a malloc'd NUL-terminated string (its length in *len)
 * or NULL when out of memory. */
char *api_hardware_render(const struct hw_snapshot *s, size_t *len /* OUT */);

/* Adds o.kernels: the host measurement per quant class, {"q4_0": {"isa", "gops_per_thread",
 * "avx2_gops_per_thread"}, ...}, the classes measured only (`rigfit bench host` prints the
 * same). Returns false when out of memory. */
bool api_host_kernels_json(cJSON *o, const struct hw_kernel_rate *k);

/* Writes ms (Unix milliseconds) as RFC 3339 UTC ("2026-11-22T03:11:39.123Z") into buf. */
void api_format_time_ms(int64_t ms, char *buf, size_t buflen);

#endif
