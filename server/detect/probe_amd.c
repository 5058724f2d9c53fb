/*
 * Placeholder until the amd probe lands: it finds nothing, and says nothing.
 */
#include "server/detect/probes.h"

void rf_probe_amd(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	(void)o;
	(void)s;
}
