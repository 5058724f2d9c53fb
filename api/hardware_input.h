/*
 * A client's description of hardware ("hardware": {...} in a request body) turned into a
 * struct hw_snapshot. The shape is the one GET /api/hardware returns, so a client can paste a
 * scan from another machine as it is; every field is optional, validated, and reported by its
 * path ("hardware.gpus[2].memory_total_bytes") when it is wrong.
 */
#ifndef RIGFIT_API_HARDWARE_INPUT_H
#define RIGFIT_API_HARDWARE_INPUT_H

#include <cjson/cJSON.h>

#include "api/api.h"
#include "core/hw/hw.h"

/* Fills *out (initialised here) from the hardware object obj; field_prefix names obj in
 * error messages ("hardware"). Returns 0, or an error envelope in reply (422 naming the field:
 * unknown fields, wrong types, negative or absurd sizes, more than HW_MAX_GPUS GPUs). Free
 * memory not given is taken as the total; platform, backend and tier are derived again, so a
 * client cannot make them disagree with the devices. */
int api_hardware_from_json(const cJSON *obj, const char *field_prefix,
			   struct hw_snapshot *out /* OUT */, struct api_reply *reply);

#endif
