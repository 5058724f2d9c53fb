/*
 * `rigfit mcp`: the MCP stdio transport over the same scan, catalogs and (with --db) store as
 * the other commands, so a desktop client's tool calls answer what `rigfit estimate` and the
 * routes answer.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/hardware_json.h"
#include "server/cli/cli_hostbench.h"
#include "server/cli/cli_priv.h"
#include "server/detect/detect.h"
#include "server/embedded.h"
#include "server/log.h"
#include "server/cli/mcp_stdio.h"
#include "server/models/models_list.h"
#include "server/openapi_json.h"
#include "server/profiles/profiles.h"
#include "server/store/store.h"
#include "server/store/store_profiles.h"

const char rf_cli_mcp_usage[] =
	"usage: rigfit mcp [--profiles DIR] [--models-dir DIR]... [--root DIR] [--db PATH]\n"
	"Serves the Model Context Protocol on standard input and output (one JSON-RPC message\n"
	"a line; logs on standard error) for LLM clients such as Claude Desktop or VS Code.\n"
	"Tools: detect_hardware, estimate, recommend_models, write_runtime_config,\n"
	"validate_config, plan_finetuning, list_models, lookup_model.\n"
	"The store (lookup_model's cache): --db, $RIGFIT_DB, the daemon's default when it\n"
	"exists, else ~/.local/state/rigfit/rigfit.db.\n"
	"Environment: RIGFIT_PROFILES, RIGFIT_ROOT, RIGFIT_DB.\n";

int rf_cli_mcp(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"profiles", required_argument, NULL, 'P'},
		{"models-dir", required_argument, NULL, 'm'},
		{"root", required_argument, NULL, 'r'},
		{"db", required_argument, NULL, 'd'},
		{NULL, 0, NULL, 0},
	};
	struct rf_cli_env ce;
	struct rf_detect_opts opts = {0};
	struct rf_store *store = NULL;
	const char *db = getenv("RIGFIT_DB");
	const char *profiles = NULL;
	char err[512];
	void *spec;
	int c, rc;

	memset(&ce, 0, sizeof(ce));
	opts.root = getenv("RIGFIT_ROOT");
	if (cli_long_options_exact("mcp", argc, argv, longopts) != 0)
		return 2;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case 'P':
			profiles = optarg;
			break;
		case 'm':
			if (ce.cfg.n_models_dirs >= RF_CONFIG_MAX_LIST ||
			    strlen(optarg) >= sizeof(ce.cfg.models_dirs[0]))
				return cli_usage_error("mcp: too many or too long --models-dir");
			snprintf(ce.cfg.models_dirs[ce.cfg.n_models_dirs++],
				 sizeof(ce.cfg.models_dirs[0]), "%s", optarg);
			break;
		case 'r':
			opts.root = optarg;
			break;
		case 'd':
			db = optarg;
			break;
		default:
			return cli_getopt_error("mcp", c, argv, longopts);
		}
	}
	if (optind < argc)
		return cli_usage_error("mcp: unexpected argument '%.60s'", argv[optind]);
	/* Standard input carries the protocol: the request body of the shared env is empty. */
	ce.body = strdup("{}");
	if (!ce.body)
		return 1;
	ce.body_len = 2;
	rc = rf_cli_env_open(&ce, profiles, &opts);
	if (rc != 0)
		return rc;
	/* list_models answers from one walk of the models dirs, the HF cache and Ollama's
	 * store, as the daemon's scan makes it. */
	if (rf_models_walk(&ce.cfg, &ce.snap->models) < 0) {
		rf_cli_env_close(&ce);
		return 1;
	}
	spec = rf_openapi_json();
	/* The snapshot's JSON, which GET /api/hardware and detect_hardware answer with. */
	ce.snap->json = api_hardware_render(&ce.snap->hw, &ce.snap->json_len);
	if (!spec || !ce.snap->json) {
		rf_log_error("mcp: out of memory");
		rf_openapi_json_free(spec);
		free(ce.snap->json);
		rf_cli_env_close(&ce);
		return 1;
	}
	{
		/* The store as the other commands find it: --db, $RIGFIT_DB, the daemon's default
		 * when it exists, else the user's state folder (made on first use), so that a
		 * desktop client's plain "rigfit mcp" has one for lookup_model. */
		char path[4096];
		rf_cli_store_path(db, path, sizeof(path));
		if (rf_store_open(path, rf_embed_migrations, &store, err, sizeof(err)) < 0) {
			rf_log_warn("mcp: store %s: %s; lookup_model needs it", path, err);
		} else {
			/* The shipped profiles, as the daemon seeds them at start, so that
			 * lookup_model answers without a daemon having run on this store. */
			struct rf_profile_seed *rows = NULL;
			int n = 0, shadowed = 0;
			if (rf_profile_seeds(ce.set, &rows, &n) == 0 &&
			    rf_store_profiles_seed(store, rows, n, &shadowed) < 0)
				rf_log_warn("mcp: cannot seed the store %s with the profiles",
					    path);
			rf_profile_seeds_free(rows, n);
			ce.env.store = rf_store_api(store);
		}
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
