/*
 * The hardware scan: reads the machine under a root directory and hands the text to core's
 * parsers. Runs on the scan worker thread, never on the request path.
 */
#ifndef RIGFIT_SERVER_DETECT_DETECT_H
#define RIGFIT_SERVER_DETECT_DETECT_H

#include "core/hw.h"

struct rf_detect_opts {
	const char *root; /* "/" for this machine */
};

/* Scans the machine into *out (initialised here). Never fails as a whole: what cannot be read
 * is HW_UNKNOWN with a warning. Returns 0, or RF_E_NOMEM. */
int rf_detect_scan(const struct rf_detect_opts *opts, struct hw_snapshot *out /* OUT */);

#endif
