/*
 * Parsers of text captured from a machine. Each takes the bytes exactly as read (no NUL
 * needed, any size up to the caller's cap), never reads past len, and fills only the fields it
 * found. They are pure: tests and fuzzers call them with recorded outputs.
 */
#ifndef RIGFIT_CORE_HW_PARSE_H
#define RIGFIT_CORE_HW_PARSE_H

#include <stddef.h>

#include "core/hw/hw.h"

/* Parses /proc/meminfo. Writes total_bytes (MemTotal) and available_bytes (MemAvailable, or
 * MemFree + Buffers + Cached on kernels older than 3.14). Returns 0, or RF_E_PARSE when no
 * MemTotal line is present (out is then untouched). */
int hw_parse_meminfo(const char *text, size_t len, struct hw_memory *out /* OUT */);

/* Parses a CPU cache's size as sysfs writes it ("32K", "491520K"; "M" and "G" too), trailing
 * blanks allowed. Returns 0 and the bytes in *out, or RF_E_PARSE. */
int hw_parse_cache_size(const char *text, size_t len, int64_t *out /* OUT */);

/* Parses /proc/cpuinfo (x86, ARM, and the space-separated variants). Writes logical_cores
 * (processor entries), model, vendor, isa bits, and physical_cores / sockets when the file
 * carries "physical id" and "core id". Returns 0, or RF_E_PARSE when no processor entry is
 * present. */
int hw_parse_cpuinfo(const char *text, size_t len, struct hw_cpu *out /* OUT */);

#endif
