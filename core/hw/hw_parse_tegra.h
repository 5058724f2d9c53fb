/*
 * Boards described by a device tree: NVIDIA Jetson / Tegra (and the Clara AGX kits built on
 * them) and Raspberry Pi. Reads /proc/device-tree/model (one NUL-terminated string),
 * /proc/device-tree/compatible (NUL-separated strings, most specific first) and the first line
 * of /etc/nv_tegra_release ("# R36 (release), REVISION: 2.0, GCID: ..., BOARD: generic, ...").
 * server/detect/probe_jetson.c reads the files and builds the snapshot from struct hw_tegra.
 *
 * Captures that went through a terminal have lost their NULs ("nvidia,p3768-0000+p3767-0003
 * nvidia,tegra234" run together); the parsers accept both forms: the Tegra chip is found as
 * "nvidia,tegra" followed by its digits wherever it stands.
 */
#ifndef RIGFIT_CORE_HW_PARSE_TEGRA_H
#define RIGFIT_CORE_HW_PARSE_TEGRA_H

#include <stdbool.h>
#include <stddef.h>

#include "core/hw/hw.h"

/* What the board files said. Strings are "" and numbers HW_UNKNOWN when not known. */
struct hw_tegra {
	bool is_tegra;           /* a Jetson / Tegra board: it has one unified-memory GPU */
	bool is_raspberry_pi;    /* a Raspberry Pi: its VideoCore is no compute GPU */
	char model[HW_NAME_LEN]; /* device-tree model, e.g. "NVIDIA Jetson AGX Orin Developer Kit" */
	char chip[16];           /* "tegra234" */
	char family[16];         /* "Orin", "Xavier", "Tegra X1"... */
	char gpu_architecture[16];  /* "Ampere" */
	char compute_capability[8]; /* CUDA's "8.7" */
	int l4t_major;              /* nv_tegra_release: 36 in "# R36 (release)" */
	char l4t_revision[16];      /* "2.0" */
	char l4t_board[32];         /* "t186ref", "generic" */
};

/* Extracts the device-tree model string: the bytes before the first NUL (or all of them),
 * trimmed. Returns 0 and writes out (cut to outlen), or RF_E_PARSE when it is empty or holds
 * control bytes. */
int hw_parse_dt_model(const char *buf, size_t len, char *out /* OUT */, size_t outlen);

/* Finds the Tegra chip in a device-tree compatible list, with or without its NULs: the first
 * "nvidia,tegra" followed by at least three digits. Writes "tegra234" to chip. Returns 0, or
 * RF_E_NOT_FOUND. */
int hw_parse_dt_tegra_chip(const char *buf, size_t len, char *chip /* OUT */, size_t chiplen);

/* Returns true when the compatible list (with or without NULs) holds the given string as a
 * prefix of one of its entries, e.g. "raspberrypi,". */
bool hw_dt_compatible_has(const char *buf, size_t len, const char *prefix);

/* Parses the first "# R<major> (release), REVISION: <rev>, ..., BOARD: <board>, ..." line of
 * /etc/nv_tegra_release. Writes l4t_major, l4t_revision and l4t_board of out. Returns 0, or
 * RF_E_PARSE when no such line is present (out untouched). */
int hw_parse_nv_tegra_release(const char *text, size_t len, struct hw_tegra *out);

/* Fills the chip's family, GPU architecture and CUDA compute capability from out->chip
 * (tegra124, 210, 186, 194, 234, 264); leaves them "" for a chip it does not know. */
void hw_tegra_chip_info(struct hw_tegra *out);

/* Decides from all three files (any may be NULL) what the board is. A board is Tegra when its
 * compatible list names a Tegra chip, or /etc/nv_tegra_release parses, or its model says
 * "Jetson"; a Raspberry Pi when its model starts with "Raspberry Pi" or its compatible list
 * has "raspberrypi,". Returns 0 (out initialised and filled). */
int hw_parse_tegra(const char *model, size_t model_len, const char *compat, size_t compat_len,
		   const char *release, size_t release_len, struct hw_tegra *out /* OUT */);

#endif
