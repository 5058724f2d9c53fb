/*
 * `rigfit detect --task T`: the CLI twin of POST /api/finetune/detect. It builds the request
 * {"task": T}, opens the route's world with detect's own probe options (the profiles'
 * catalogs, tiers.json and one scan of this machine) and prints the handler's reply, so the
 * CLI and the daemon answer with the same JSON.
 */
#include "server/cli/cli_finetune.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/finetune_session.h"
#include "server/cli/cli_priv.h"
#include "server/data_dir.h"
#include "server/detect/detect.h"

int rf_cli_detect_task(const char *task, const struct rf_detect_opts *opts, const char *profiles,
		       enum cli_format f)
{
	struct rf_cli_env ce;
	struct api_reply reply = {0};
	cJSON *body;
	int rc;

	memset(&ce, 0, sizeof(ce));
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
	if ((rc = rf_cli_env_open(&ce, profiles, opts)) != 0)
		return rc;
	ce.req.path = "/api/finetune/detect";
	/* Without a database, the data directory is the one the command runs in. */
	ce.env.data_disk_known = rf_disk_free_bytes(".", &ce.env.data_disk_free_bytes) == 0;
	api_finetune_session_detect(&ce.env, &ce.req, &reply);
	rc = cli_print_reply_as(&reply, f, "detect-task");
	api_reply_reset(&reply);
	rf_cli_env_close(&ce);
	return rc;
}
