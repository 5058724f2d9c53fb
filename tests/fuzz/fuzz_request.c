/*
 * Fuzz target: a request body through the real API code, as the daemon runs it. The first
 * byte picks the route ('e' estimate, 'r' recommend, 'f' finetune/detect, 'v' validate,
 * 'c' config, 'h' hardware/rescan; any other byte by its value), the rest is the body. The
 * env is the daemon's (fuzz_env: a scanned fixture machine and the shipped profiles). Every
 * reply must be a 2xx..4xx (or a 503) with a JSON body: a 500 or a malformed body is a
 * finding, as are crashes, leaks and undefined behaviour.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "tests/fuzz/fuzz.h"

static const char *route_of(uint8_t b)
{
	static const char *const paths[] = {"/api/estimate",        "/api/recommend",
					    "/api/finetune/detect", "/api/validate",
					    "/api/config",          "/api/hardware/rescan"};
	static const char keys[] = "erfvch";
	const char *k = strchr(keys, b);

	if (b && k)
		return paths[k - keys];
	return paths[b % (sizeof(paths) / sizeof(paths[0]))];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct api_env *env = fuzz_env();
	char *body;
	struct api_request req = {.method = API_POST, .query = ""};
	struct api_reply reply = {0};

	if (size < 1 || size > API_MAX_BODY_BYTES)
		return 0;
	req.path = route_of(data[0]);
	/* The transport hands a NUL-terminated copy of the body to the handlers. */
	body = fuzz_strdup(data + 1, size - 1);
	req.body = body;
	req.body_len = size - 1;
	api_dispatch(env, &req, &reply);
	fuzz_check_reply(&reply);
	api_reply_reset(&reply);
	free(body);
	return 0;
}
