/*
 * `rigfit detect --task T`: the CLI twin of POST /api/finetune/detect. It builds the request
 * {"task": T}, fills the route's world by hand as rf_cli_env_open does (the profiles'
 * catalogs, tiers.json and one scan of this machine, with detect's own probe options) and
 * prints the handler's reply, so the CLI and the daemon answer with the same JSON.
 */
#include "server/cli_finetune.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/finetune_detect.h"
#include "core/hw_profile.h"
#include "core/numparse.h"
#include "server/cli_priv.h"
#include "server/detect/detect.h"
#include "server/profiles.h"

int rf_cli_detect_task(const char *task, int argc, char **argv)
{
	struct rf_cli_env ce;
	struct rf_detect_opts opts = {0};
	struct api_reply reply = {0};
	const char *profiles = getenv("RIGFIT_PROFILES");
	cJSON *body;
	uint64_t timeout = 0;
	int rc;

	memset(&ce, 0, sizeof(ce));
	if (profiles && !*profiles)
		profiles = NULL;
	opts.root = getenv("RIGFIT_ROOT");
	opts.nvml_lib = getenv("RIGFIT_NVML_LIB");
	opts.nvidia_smi = getenv("RIGFIT_NVIDIA_SMI");
	opts.sysctl = getenv("RIGFIT_SYSCTL");
	for (int i = 0; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return cli_usage_error("detect: unknown or incomplete option '%.60s'",
					       argv[i]);
		if (strcmp(argv[i], "--task") == 0)
			;
		else if (strcmp(argv[i], "--profiles") == 0)
			profiles = v;
		else if (strcmp(argv[i], "--root") == 0)
			opts.root = v;
		else if (strcmp(argv[i], "--nvml-lib") == 0)
			opts.nvml_lib = v;
		else if (strcmp(argv[i], "--nvidia-smi") == 0)
			opts.nvidia_smi = v;
		else if (strcmp(argv[i], "--sysctl") == 0)
			opts.sysctl = v;
		else if (strcmp(argv[i], "--format") == 0) {
			if (strcmp(v, "json") != 0)
				return cli_usage_error("detect: --task answers in JSON only");
		} else if (strcmp(argv[i], "--probe-timeout-ms") == 0) {
			if (rf_parse_u64_str(v, 60000, &timeout) < 0 || timeout < 50)
				return cli_usage_error(
					"detect: --probe-timeout-ms must be 50 to 60000");
			opts.probe_timeout_ms = (int)timeout;
		} else
			return cli_usage_error("detect: unknown or incomplete option '%.60s'",
					       argv[i]);
		i++;
	}
	body = cJSON_CreateObject();
	if (!body || !cJSON_AddStringToObject(body, "task", task)) {
		cJSON_Delete(body);
		return 1;
	}
	ce.body = cJSON_PrintUnformatted(body);
	cJSON_Delete(body);
	if (!ce.body)
		return 1;
	ce.body_len = strlen(ce.body);
	if (cli_catalogs(profiles, &ce.set, &ce.cat) != 0) {
		rf_cli_env_close(&ce);
		return 1;
	}
	ce.snap = calloc(1, sizeof(*ce.snap));
	if (!ce.snap) {
		rf_cli_env_close(&ce);
		return 1;
	}
	rf_detect_scan(&opts, &ce.snap->hw);
	hw_apply_device_profiles(&ce.snap->hw, &ce.cat->table);
	ce.snap->seq = 1;
	ce.env.version = RIGFIT_VERSION;
	ce.env.snapshot = ce.snap;
	ce.env.devices = &ce.cat->table;
	ce.env.models = ce.cat->models;
	ce.env.tiers = rf_profiles_get(ce.set, "tiers.json");
	ce.req.method = API_POST;
	ce.req.path = "/api/finetune/detect";
	ce.req.query = "";
	ce.req.body = ce.body;
	ce.req.body_len = ce.body_len;
	api_finetune_detect(&ce.env, &ce.req, &reply);
	rc = cli_print_reply(&reply);
	api_reply_reset(&reply);
	rf_cli_env_close(&ce);
	return rc;
}
