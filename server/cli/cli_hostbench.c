/*
 * The CLI's host measurement (see cli_hostbench.h).
 */
#include "server/cli/cli_hostbench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/hw/hw_fingerprint.h"
#include "server/embedded.h"
#include "server/hostbench.h"
#include "server/store/store.h"
#include "server/store/store_hostbench.h"

/* The daemon's measurement budget (server/daemon/scan.c), so that both take the same figures. */
#define CLI_HOSTBENCH_BUDGET_MS 1500

/* Makes the folders above the store's own (~/.local/state on a fresh account); the store
 * makes its own folder. Failures are left to the store's open, which says why. */
static void make_parents(const char *path)
{
	char buf[4096];
	char *last;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return;
	last = strrchr(buf, '/');
	if (!last)
		return;
	*last = '\0';
	last = strrchr(buf, '/');
	if (!last)
		return;
	*last = '\0';
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(buf, 0700);
		*p = '/';
	}
	mkdir(buf, 0700);
}

void rf_cli_store_path(const char *db, char *out, size_t outlen)
{
	const char *env = getenv("RIGFIT_DB"), *state = getenv("STATE_DIRECTORY");
	const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");

	if (db && *db) {
		snprintf(out, outlen, "%s", db);
		return;
	}
	if (env && *env) {
		snprintf(out, outlen, "%s", env);
		return;
	}
	if (state && *state) {
		snprintf(out, outlen, "%.*s/rigfit.db", (int)strcspn(state, ":"), state);
		if (access(out, R_OK) == 0)
			return;
	}
	snprintf(out, outlen, "./var/rigfit.db");
	if (access(out, R_OK) == 0)
		return;
	if (xdg && *xdg)
		snprintf(out, outlen, "%s/rigfit/rigfit.db", xdg);
	else if (home && *home)
		snprintf(out, outlen, "%s/.local/state/rigfit/rigfit.db", home);
	else {
		snprintf(out, outlen, "./var/rigfit.db");
		return;
	}
	make_parents(out);
}

/* The snapshot stands on b: the bandwidth it read is the CPU's, as the daemon's scan says. */
static void apply(struct hw_snapshot *s, const struct hw_host_bench *b)
{
	s->host_bench = *b;
	s->cpu.memory_bandwidth_gbs = b->memory_bandwidth_gbs;
}

void rf_cli_host_bench(struct hw_snapshot *s, const char *db)
{
	const char *off = getenv("RIGFIT_NO_HOST_BENCH");
	struct rf_store *st = NULL;
	struct hw_host_bench b;
	struct rf_hostbench h;
	char path[4096], fp[64], err[512];
	int threads, rc;

	if ((off && *off && strcmp(off, "0") != 0) || hw_fingerprint(s, fp, sizeof(fp)) < 0)
		return;
	rf_cli_store_path(db, path, sizeof(path));
	if (rf_store_open(path, rf_embed_migrations, &st, err, sizeof(err)) < 0) {
		fprintf(stderr, "rigfit: the host measurement will not be kept: %s\n", err);
		st = NULL;
	}
	if (st && rf_store_host_bench_get(st, fp, &b) == 0 && b.method >= RF_HOSTBENCH_METHOD) {
		apply(s, &b);
		rf_store_close(st);
		return;
	}
	threads = s->cpu.physical_cores > 0 ? s->cpu.physical_cores :
		  s->cpu.logical_cores > 0  ? s->cpu.logical_cores :
					      1;
	fprintf(stderr,
		"rigfit: measuring this host once (memory bandwidth and CPU kernels, about "
		"%.1f s)%s%s\n",
		CLI_HOSTBENCH_BUDGET_MS / 1000.0, st ? "; kept in " : "", st ? path : "");
	rc = rf_hostbench_run(threads, CLI_HOSTBENCH_BUDGET_MS, &h);
	if (rc < 0) {
		fprintf(stderr, "rigfit: the host measurement failed (%s); estimating without it\n",
			rf_err_code(rc));
		rf_store_close(st);
		return;
	}
	rf_hostbench_to_hw(&h, (int64_t)time(NULL) * 1000, &b);
	apply(s, &b);
	if (st && (rc = rf_store_host_bench_put(st, fp, &b)) < 0)
		fprintf(stderr, "rigfit: the host measurement was not kept in %s (%s)\n", path,
			rf_err_code(rc));
	rf_store_close(st);
}
