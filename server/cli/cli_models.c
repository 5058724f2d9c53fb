/*
 * `rigfit models`: what a request can name on this host, as GET /api/models answers it: the
 * catalog, then the GGUF files and Hugging Face folders under --models-dir, the Hugging Face
 * cache and Ollama's store, with their sizes. The same walk as the daemon's scan feeds the same
 * route, so the JSON is the route's; the summary is one aligned line a model, with how each
 * catalog model fits this machine (POST /api/estimate's fit at its defaults).
 */
#include "server/cli/cli_models.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/estimate.h"
#include "core/err.h"
#include "core/fit/model.h"
#include "core/hw/hw_profile.h"
#include "server/cli/cli_priv.h"
#include "server/models/models_list.h"

#define NAME_MAX_BYTES 128
#define ID_COLUMN_MAX 64

const char rf_cli_models_usage[] =
	"usage: rigfit models [NAME] [--source S] [--format summary|json|table]\n"
	"                     [--models-dir DIR]... [--hf-cache DIR] [--ollama-models DIR]\n"
	"                     [--profiles DIR]\n"
	"Lists the models a request can name here: the catalog, GGUF files and Hugging Face\n"
	"folders under --models-dir, the Hugging Face cache and Ollama's tags, with their source\n"
	"and size on disk. The JSON is GET /api/models's. NAME keeps the models whose id or name\n"
	"holds it (any case).\n"
	"  --source S            catalog, local (every place on disk), cache, dir or ollama\n"
	"                        (default: all)\n"
	"  --format F            summary (default on a terminal), json (default otherwise) or\n"
	"                        table\n"
	"  --models-dir DIR      a folder of .gguf files and model folders (repeatable)\n"
	"  --hf-cache DIR        the Hugging Face hub cache (default: $HF_HUB_CACHE,\n"
	"                        $HF_HOME/hub, then ~/.cache/huggingface/hub)\n"
	"  --ollama-models DIR   Ollama's store (default: $OLLAMA_MODELS, then ~/.ollama/models)\n"
	"  --profiles DIR        the catalog's profiles (default: found beside the binary)\n"
	"Environment: RIGFIT_HF_CACHE, RIGFIT_OLLAMA_MODELS, RIGFIT_PROFILES.\n";

/* Appends s to buf[*n..cap) as a query value (percent-encoded). Returns false when full. */
static bool query_put(char *buf, size_t cap, size_t *n, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			     (c >= '0' && c <= '9') || strchr("-._~", c);
		if (*n + 4 > cap)
			return false;
		if (plain) {
			buf[(*n)++] = (char)c;
		} else {
			buf[(*n)++] = '%';
			buf[(*n)++] = hex[c >> 4];
			buf[(*n)++] = hex[c & 15];
		}
	}
	buf[*n] = '\0';
	return true;
}

static void size_text(const cJSON *v, char *buf, size_t len)
{
	if (cJSON_IsNumber(v) && v->valuedouble >= 1073741824.0)
		snprintf(buf, len, "%.2f GiB", v->valuedouble / 1073741824.0);
	else if (cJSON_IsNumber(v))
		snprintf(buf, len, "%.1f MiB", v->valuedouble / 1048576.0);
	else
		snprintf(buf, len, "-");
}

/* The fit of catalog model id on the machine in (this host, resolved once for the whole list),
 * as POST /api/estimate answers it with its defaults at 4096 tokens: "comfortable 45%",
 * "over 130%"; "-" when it cannot say. The estimator is asked in structs
 * (api_estimate_resolved), as the planning routes ask it. */
static void fit_text(const struct api_env *env, struct api_plan_input *in, const char *id,
		     char *buf, size_t len)
{
	const struct model_entry *me = model_catalog_find(env->cat.models, id);
	struct api_estimate_request rq;
	struct api_reply r = {0};
	cJSON *j = NULL;

	snprintf(buf, len, "-");
	if (!me || api_plan_input_set_entry(in, me) != 0)
		return;
	api_estimate_request_init(&rq);
	rq.n_ctx = 4096;
	rq.has_n_ctx = true;
	if (api_estimate_resolved(env, in, &rq, &j, &r) == 0) {
		const cJSON *band = cJSON_GetObjectItemCaseSensitive(j, "fit_band");
		const cJSON *util = cJSON_GetObjectItemCaseSensitive(j, "utilization");
		if (cJSON_IsString(band) && cJSON_IsNumber(util))
			snprintf(buf, len, "%s %.0f%%", band->valuestring, util->valuedouble * 100);
	}
	cJSON_Delete(j);
	api_reply_reset(&r);
}

/* One line a model: id, source, format, size, parameters and, with fit_env, the fit here.
 * Returns the exit status. */
static int print_summary(const struct api_reply *r, const struct api_env *fit_env)
{
	cJSON *j = cJSON_ParseWithLength(r->body ? r->body : r->borrowed_body, r->len);
	const cJSON *models = cJSON_GetObjectItemCaseSensitive(j, "models");
	const cJSON *when = cJSON_GetObjectItemCaseSensitive(j, "scanned_at");
	const cJSON *m;
	struct api_plan_input *in = NULL;
	int width = 2;

	if (!j) {
		fprintf(stderr, "rigfit: out of memory\n");
		return 1;
	}
	cJSON_ArrayForEach(m, models)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
		int n = cJSON_IsString(id) ? (int)strlen(id->valuestring) : 0;
		if (n > width)
			width = n < ID_COLUMN_MAX ? n : ID_COLUMN_MAX;
	}
	printf("%d model(s)", cJSON_GetArraySize(models));
	if (cJSON_IsString(when))
		printf(", on disk as of %s", when->valuestring);
	fputs("\n", stdout);
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(j, "sources"))
	{
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "truncated")))
			printf("%s: the walk stopped at its cap; it may hold more models than "
			       "listed\n",
			       m->string);
	}
	if (fit_env && fit_env->cat.models) {
		/* The machine is resolved once; a failure leaves the column at "-". */
		struct api_reply err = {0};
		if (api_machine_input(fit_env, NULL, NULL, &in, &err) != 0)
			in = NULL;
		api_reply_reset(&err);
	}
	if (cJSON_GetArraySize(models) > 0)
		printf("%-*s  %-10s  %-12s  %10s  %-7s  %s\n", width, "ID", "SOURCE", "FORMAT",
		       "SIZE", "PARAMS", fit_env ? "FIT (Q4_K_M, 4k, here)" : "");
	cJSON_ArrayForEach(m, models)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
		const cJSON *where = cJSON_GetObjectItemCaseSensitive(m, "where");
		const cJSON *format = cJSON_GetObjectItemCaseSensitive(m, "format");
		const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params_b");
		char size[32], p[32], fit[48] = "-";

		size_text(cJSON_GetObjectItemCaseSensitive(m, "size_bytes"), size, sizeof(size));
		if (cJSON_IsNumber(params))
			snprintf(p, sizeof(p), "%.3gB", params->valuedouble);
		else
			snprintf(p, sizeof(p), "-");
		if (in && cJSON_IsString(id) && cJSON_IsString(where) &&
		    strcmp(where->valuestring, "catalog") == 0)
			fit_text(fit_env, in, id->valuestring, fit, sizeof(fit));
		printf("%-*s  %-10s  %-12s  %10s  %-7s  %s\n", width,
		       cJSON_IsString(id) ? id->valuestring : "?",
		       cJSON_IsString(where) ? where->valuestring : "?",
		       cJSON_IsString(format) ? format->valuestring : "?", size, p,
		       fit_env ? fit : "");
	}
	api_plan_input_free(in);
	cJSON_Delete(j);
	return 0;
}

/* Copies a directory option into dst. Returns false when it does not fit. */
static bool dir_set(char *dst, size_t cap, const char *v)
{
	if (strlen(v) >= cap)
		return false;
	snprintf(dst, cap, "%s", v);
	return true;
}

int rf_cli_models(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"format", required_argument, NULL, 'f'},
		{"source", required_argument, NULL, 's'},
		{"models-dir", required_argument, NULL, 'm'},
		{"hf-cache", required_argument, NULL, 'H'},
		{"ollama-models", required_argument, NULL, 'O'},
		{"profiles", required_argument, NULL, 'P'},
		{NULL, 0, NULL, 0},
	};
	static const char *const sources[] = {"catalog", "local", "cache", "dir", "ollama"};
	enum cli_format fmt = cli_format_default();
	const char *source = NULL, *name = NULL, *profiles = NULL, *env;
	struct rf_config *cfg = calloc(1, sizeof(*cfg));
	struct rf_profiles *set = NULL;
	struct rf_catalogs *cat = NULL;
	struct api_snapshot *snap = NULL;
	struct api_env aenv = {0};
	struct api_request req = {0};
	struct api_reply reply = {0};
	char query[64 + 3 * NAME_MAX_BYTES];
	size_t qn = 0;
	bool known = false;
	int c, rc = 2;

	if (!cfg)
		return 1;
	if ((env = getenv("RIGFIT_HF_CACHE")) &&
	    !dir_set(cfg->hf_cache, sizeof(cfg->hf_cache), env))
		goto usage_long;
	if ((env = getenv("RIGFIT_OLLAMA_MODELS")) &&
	    !dir_set(cfg->ollama_models, sizeof(cfg->ollama_models), env))
		goto usage_long;
	if (cli_long_options_exact("models", argc, argv, longopts) != 0)
		goto out;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
		switch (c) {
		case 'f':
			if (cli_format_parse("models", optarg, &fmt) != 0)
				goto out;
			break;
		case 's':
			source = optarg;
			break;
		case 'm':
			if (cfg->n_models_dirs >= RF_CONFIG_MAX_LIST ||
			    !dir_set(cfg->models_dirs[cfg->n_models_dirs],
				     sizeof(cfg->models_dirs[0]), optarg)) {
				cli_usage_error("models: too many or too long --models-dir");
				goto out;
			}
			cfg->n_models_dirs++;
			break;
		case 'H':
			if (!dir_set(cfg->hf_cache, sizeof(cfg->hf_cache), optarg))
				goto usage_long;
			break;
		case 'O':
			if (!dir_set(cfg->ollama_models, sizeof(cfg->ollama_models), optarg))
				goto usage_long;
			break;
		case 'P':
			profiles = optarg;
			break;
		default:
			cli_getopt_error("models", c, argv, longopts);
			goto out;
		}
	}
	if (optind < argc)
		name = argv[optind++];
	if (optind < argc) {
		cli_usage_error("models: unexpected argument '%.60s' (one NAME at most)",
				argv[optind]);
		goto out;
	}
	for (size_t i = 0; source && i < sizeof(sources) / sizeof(sources[0]); i++)
		known = known || strcmp(source, sources[i]) == 0;
	if (source && !known) {
		cli_usage_error("models: --source must be catalog, local, cache, dir or ollama, "
				"not '%.40s'",
				source);
		goto out;
	}
	if (name && (!*name || strlen(name) > NAME_MAX_BYTES)) {
		cli_usage_error("models: NAME must be 1 to %d bytes", NAME_MAX_BYTES);
		goto out;
	}
	qn = (size_t)snprintf(query, sizeof(query), "source=%s%s", source ? source : "",
			      name ? "&name=" : "");
	if (name && !query_put(query, sizeof(query), &qn, name))
		goto usage_long;
	rc = 1;
	/* The catalog comes from the profiles; the rest from one walk of the disk. */
	if ((!source || strcmp(source, "catalog") == 0) && cli_catalogs(profiles, &set, &cat) != 0)
		goto out;
	if (!source || strcmp(source, "catalog") != 0) {
		snap = calloc(1, sizeof(*snap));
		if (!snap || rf_models_walk(cfg, &snap->models) < 0) {
			fprintf(stderr, "rigfit: out of memory\n");
			goto out;
		}
	}
	aenv.version = RIGFIT_VERSION;
	aenv.snapshot = snap;
	aenv.cat.models = cat ? cat->models : NULL;
	req.method = API_GET;
	req.path = "/api/models";
	req.query = query;
	api_dispatch(&aenv, &req, &reply);
	if (reply.status >= 300 || fmt == CLI_FMT_JSON)
		rc = cli_print_reply(&reply);
	else if (fmt == CLI_FMT_TABLE)
		rc = cli_print_reply_as(&reply, fmt, "models");
	else {
		/* The fit column: this machine, scanned as the questions scan it. */
		struct api_snapshot *here = cat ? calloc(1, sizeof(*here)) : NULL;
		struct api_env fenv = aenv;
		if (here) {
			cli_scan(NULL, &here->hw);
			hw_apply_device_profiles(&here->hw, &cat->table);
			fenv.snapshot = here;
			fenv.cat.devices = &cat->table;
		}
		rc = print_summary(&reply, here ? &fenv : NULL);
		free(here);
	}
	goto out;
usage_long:
	rc = cli_usage_error("models: a directory or NAME is too long");
out:
	api_reply_reset(&reply);
	if (snap)
		rf_models_free(&snap->models);
	free(snap);
	rf_catalogs_unref(cat);
	rf_profiles_free(set);
	free(cfg);
	return rc;
}
