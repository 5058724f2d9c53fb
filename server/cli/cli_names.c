/*
 * The names a question can take (see cli_names.h), read from the same catalogs the questions
 * resolve against, so completion offers exactly what the routes accept.
 */
#include "server/cli/cli_names.h"

#include <string.h>

#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "core/hw/device.h"
#include "server/cli/cli_priv.h"
#include "server/profiles/profiles.h"

const char rf_cli_names_usage[] =
	"usage: rigfit names models|quants|gpus|profiles|tasks|cpus [--profiles DIR]\n"
	"Prints the names a question can take, one per line (shell completion uses it):\n"
	"  models     catalog ids and aliases (estimate, config, --model)\n"
	"  quants     weight types (--quant)\n"
	"  gpus       device profiles' GPU names and aliases (--gpu)\n"
	"  profiles   device profile ids (--hardware-profile)\n"
	"  tasks      fine-tuning and recommendation tasks (--task)\n"
	"  cpus       the CPU table's model names (--cpu)\n";

static const char *const kinds[] = {"models", "quants", "gpus", "profiles", "tasks", "cpus"};

enum names_kind {
	NAMES_MODELS,
	NAMES_QUANTS,
	NAMES_GPUS,
	NAMES_PROFILES,
	NAMES_TASKS,
	NAMES_CPUS
};

static void print_models(const struct model_catalog *c)
{
	for (size_t i = 0; c && i < c->n; i++) {
		puts(c->models[i].id);
		for (int a = 0; a < c->models[i].n_aliases; a++)
			if (strcmp(c->models[i].aliases[a], c->models[i].id) != 0)
				puts(c->models[i].aliases[a]);
	}
}

/* The profiles' ids (NAMES_PROFILES), or the names and aliases of their GPUs (NAMES_GPUS) or
 * of their CPUs (NAMES_CPUS). */
static void print_devices(const struct device_table *t, enum names_kind k)
{
	for (int i = 0; t && i < t->n; i++) {
		const struct device_profile *p = &t->devices[i];
		if (k == NAMES_PROFILES) {
			puts(p->id);
			continue;
		}
		if ((p->kind == DEVICE_KIND_CPU) != (k == NAMES_CPUS))
			continue;
		puts(p->name);
		for (int a = 0; a < p->n_aliases; a++)
			if (strcmp(p->aliases[a], p->name) != 0)
				puts(p->aliases[a]);
	}
}

int rf_cli_names(int argc, char **argv)
{
	const char *kind = NULL, *profiles = NULL;
	struct rf_profiles *set = NULL;
	struct rf_catalogs *cat = NULL;
	int k = -1;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--profiles") == 0 && i + 1 < argc)
			profiles = argv[++i];
		else if (!kind && argv[i][0] != '-')
			kind = argv[i];
		else
			return cli_usage_error(
				"names: unexpected argument '%.60s' (see rigfit help "
				"names)",
				argv[i]);
	}
	for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kind, kinds[i]) == 0)
			k = (int)i;
	if (k < 0)
		return cli_usage_error(
			"names: say which: models, quants, gpus, profiles, tasks or cpus");
	if (k == NAMES_QUANTS) {
		int ft[64];
		size_t n = rf_ftype_list(ft, sizeof(ft) / sizeof(ft[0]));
		for (size_t i = 0; i < n; i++)
			puts(rf_ftype_name(ft[i]));
		return 0;
	}
	if (k == NAMES_TASKS) {
		puts("text-generation\nsummarization\nextractive-question-answering\n"
		     "question-answering");
		return 0;
	}
	if (cli_catalogs(profiles, &set, &cat) != 0)
		return 1;
	if (k == NAMES_MODELS)
		print_models(cat->models);
	else
		print_devices(&cat->table, (enum names_kind)k);
	rf_catalogs_unref(cat);
	rf_profiles_free(set);
	return 0;
}
