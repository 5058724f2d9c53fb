/*
 * The 422 for a device name that no profile resolves (see api_device_unknown in device_json.h):
 * route code, kept out of the devices.json loader so that the loader links without it.
 */
#include <stdio.h>

#include "api/device_json.h"
#include "core/err.h"

int api_device_unknown(struct api_reply *out, const struct device_table *t, const char *field,
		       const char *name, bool for_memory)
{
	const struct device_profile *v[6];
	int nv = device_variants(t, name, v, 6);
	const char *near = nv ? NULL : device_suggest(t, name, for_memory);
	char hint[200] = "";

	if (nv) {
		char list[160] = "";
		size_t used = 0;
		int sizes = 0; /* variants whose memory no other variant has */
		for (int i = 0; i < nv; i++) {
			int same = 0;
			if (used < sizeof(list))
				used += (size_t)snprintf(list + used, sizeof(list) - used,
							 "%s'%.40s'", i ? ", " : "",
							 device_short_name(v[i]));
			for (int k = 0; k < nv; k++)
				same += v[k]->memory_gib == v[i]->memory_gib;
			sizes += same == 1;
		}
		/* Only where each variant has its own size does the memory tell them apart. */
		if (sizes == nv && for_memory)
			return api_error(out, RF_E_INVALID_VALUE, field,
					 "'%.60s' is sold with more than one memory size: name one "
					 "(%s) or add memory_total_bytes",
					 name, list);
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "'%.60s' is sold in more than one %s: name one (%s)", name,
				 sizes == 0 && nv > 1 && v[0]->memory_gib == v[1]->memory_gib ?
					 "form" :
					 "form or size",
				 list);
	}
	if (near)
		snprintf(hint, sizeof(hint), "; did you mean '%.80s'?", near);
	if (for_memory)
		return api_error(out, RF_E_INVALID_VALUE, field,
				 "no device profile gives the memory of '%.60s'%s%s", name, hint,
				 near ? " (or add memory_total_bytes)" :
					"; add memory_total_bytes");
	return api_error(out, RF_E_INVALID_VALUE, field, "no device profile is called '%.60s'%s",
			 name, hint);
}
