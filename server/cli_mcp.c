/*
 * `rigfit mcp`: the MCP stdio transport over the same scan, catalogs and (with --db) store as
 * the other commands, so a desktop client's tool calls answer what `rigfit estimate` and the
 * routes answer.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/hardware_json.h"
#include "server/cli_priv.h"
#include "server/embedded.h"
#include "server/log.h"
#include "server/mcp_stdio.h"
#include "server/openapi_json.h"
#include "server/store/store.h"

#define MCP_MAX_ARGS 64

static const char mcp_usage[] =
	"usage: rigfit mcp [--profiles DIR] [--models-dir DIR]... [--root DIR] [--db PATH]\n"
	"Serves the Model Context Protocol on standard input and output (one JSON-RPC message\n"
	"a line; logs on standard error) for LLM clients such as Claude Desktop or VS Code.\n"
	"Tools: detect_hardware, estimate, recommend_models, write_runtime_config,\n"
	"validate_config, plan_finetuning, list_models, lookup_model (needs --db).\n";

int rf_cli_mcp(int argc, char **argv)
{
	struct rf_cli_env ce;
	struct rf_store *store = NULL;
	const char *db = getenv("RIGFIT_DB");
	char *args[MCP_MAX_ARGS + 2];
	char request_opt[] = "--request", dev_null[] = "/dev/null";
	char err[512];
	void *spec;
	int n = 0, rc;

	/* The shared options are the other commands'; the request is not read from standard
	 * input, which carries the protocol, so it is pointed at /dev/null. */
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(mcp_usage, stdout);
			return 0;
		}
		if (strcmp(argv[i], "--db") == 0 && i + 1 < argc) {
			db = argv[++i];
			continue;
		}
		if (n >= MCP_MAX_ARGS)
			return cli_usage_error("mcp: too many options");
		args[n++] = argv[i];
	}
	args[n++] = request_opt;
	args[n++] = dev_null;
	rc = rf_cli_env_open(&ce, n, args, "mcp");
	if (rc != 0)
		return rc;
	spec = rf_openapi_json();
	if (!spec) {
		rf_cli_env_close(&ce);
		return 1;
	}
	if (db && *db) {
		if (rf_store_open(db, rf_embed_migrations, &store, err, sizeof(err)) < 0)
			rf_log_warn("mcp: store %s: %s; lookup_model needs it", db, err);
		else
			ce.env.store = rf_store_api(store);
	}
	/* The snapshot's JSON, which GET /api/hardware and detect_hardware answer with. */
	ce.snap->json = api_hardware_render(&ce.snap->hw, &ce.snap->json_len);
	if (!ce.snap->json) {
		rf_log_error("mcp: out of memory");
		rf_openapi_json_free(spec);
		rf_cli_env_close(&ce);
		return 1;
	}
	ce.env.openapi_tree = spec;
	signal(SIGPIPE, SIG_IGN);
	rf_log_info("mcp: serving on standard input and output");
	rc = rf_mcp_stdio_serve(&ce.env, stdin, stdout) < 0 ? 1 : 0;
	rf_store_close(store);
	rf_openapi_json_free(spec);
	free(ce.snap->json);
	rf_cli_env_close(&ce);
	return rc;
}
