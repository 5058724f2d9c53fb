/*
 * The readable summary of a scan (`rigfit detect --format summary`), laid out like the seeds'
 * `detect_hardware.py --format summary`, with rigfit's honest units (GiB) and nulls spelled
 * "unknown".
 */
#ifndef RIGFIT_API_HARDWARE_SUMMARY_H
#define RIGFIT_API_HARDWARE_SUMMARY_H

#include <stddef.h>

#include "core/hw/hw.h"

/* Renders s as text. Returns a malloc'd NUL-terminated string (caller frees) or NULL when out
 * of memory. */
char *api_hardware_summary(const struct hw_snapshot *s);

#endif
