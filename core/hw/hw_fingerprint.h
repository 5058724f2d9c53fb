/*
 * The hardware fingerprint: a short stable id of a machine's configuration ("hw-" and 16 hex
 * digits), so that a benchmark measured on it can be found again. It covers what decides
 * speed and fit (platform, CPU model and cores, RAM and each GPU's name and memory, rounded
 * to whole GiB so that a driver reserving a few MiB more does not change it) and never what
 * changes from scan to scan (free memory, time, warnings) or identifies one physical unit
 * (UUIDs, PCI addresses): two identical machines share a fingerprint on purpose, since what
 * one of them measured holds for the other.
 */
#ifndef RIGFIT_CORE_HW_FINGERPRINT_H
#define RIGFIT_CORE_HW_FINGERPRINT_H

#include <stddef.h>

#include "core/hw/hw.h"

#define HW_FINGERPRINT_LEN 19 /* "hw-" + 16 hex digits */

/* Writes the fingerprint of s into out (size outlen >= HW_FINGERPRINT_LEN + 1). Returns 0, or
 * RF_E_TOO_LARGE when out is too small (it is then empty, when it has room for that). */
int hw_fingerprint(const struct hw_snapshot *s, char *out, size_t outlen);

#endif
