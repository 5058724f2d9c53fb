/*
 * Fuzz target: a client's "hardware" object (JSON) mapped to struct hw_snapshot by
 * api/hardware_input.c. An accepted object is rendered back to JSON (api/hardware_json.c) and
 * mapped again: what rigfit renders it must accept, so a second refusal is a finding.
 */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "api/api.h"
#include "api/hardware_input.h"
#include "api/hardware_json.h"
#include "core/hw/hw.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hw_snapshot s, again;
	cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
	struct api_reply reply = {0};
	char *json;
	size_t len;

	if (!doc)
		return 0;
	if (api_hardware_from_json(doc, "hardware", &s, &reply) < 0) {
		fuzz_check_reply(&reply);
		api_reply_reset(&reply);
		cJSON_Delete(doc);
		return 0;
	}
	cJSON_Delete(doc);
	json = api_hardware_render(&s, &len);
	if (!json)
		abort();
	doc = cJSON_ParseWithLength(json, len);
	if (!doc)
		abort();
	if (api_hardware_from_json(doc, "hardware", &again, &reply) < 0) {
		fprintf(stderr, "rendered hardware refused: %.*s\nin: %s\n", (int)reply.len,
			reply.body ? reply.body : "", json);
		abort();
	}
	api_reply_reset(&reply);
	cJSON_Delete(doc);
	free(json);
	return 0;
}
