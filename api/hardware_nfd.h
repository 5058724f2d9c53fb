/*
 * The scan as a Kubernetes node-feature-discovery feature file: one `rigfit.io/<name>=<value>`
 * line per label, so a scheduler can place jobs by tier, GPU memory and count. Values follow
 * the label-value rules (at most 63 characters of [A-Za-z0-9._-], alphanumeric at both ends);
 * a label whose value is unknown is left out rather than guessed.
 */
#ifndef RIGFIT_API_HARDWARE_NFD_H
#define RIGFIT_API_HARDWARE_NFD_H

#include "core/hw/hw.h"

/* Renders the labels of s. Returns a malloc'd NUL-terminated text (caller frees) or NULL when
 * out of memory. */
char *api_hardware_nfd(const struct hw_snapshot *s);

#endif
