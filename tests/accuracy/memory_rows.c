/*
 * `make accuracy`, the memory part: the inference-memory estimate against
 * tests/data/calibration/llamacpp_memory.csv (weights, KV cache, model + KV + compute per
 * logged run) and GGUF sizes (gguf_sizes.csv and llama-bench sizes), with the medians. The
 * rows are evaluated by tests/memory_calib.c, the same code the unit tests assert on; this
 * file prints them. Targets (issue 4): weights within 3%, KV within 1%, totals within 10%
 * everywhere and 4% at the median, GGUF sizes within 3%.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/fit/model.h"
#include "tests/accuracy/accuracy.h"
#include "tests/memory_calib.h"
#include "tests/test.h"

static int memory_table(const char *data_dir, const struct model_catalog *c)
{
	struct mc_mem_row *rows = NULL;
	int n = mc_memory_rows(data_dir, c, &rows);
	double we[64], ke[64], te[64], worst_w = 0, worst_k = 0, worst_t = 0;
	int nw = 0, nk = 0, nt = 0;

	if (n < 0) {
		fprintf(stderr, "memory: cannot read %s/calibration/llamacpp_memory.csv\n",
			data_dir);
		return -1;
	}
	printf("== memory: llamacpp_memory.csv (MiB; estimated from the catalog architecture)\n");
	printf("%-5s %-30s %-7s %9s %9s %7s %8s %8s %7s %9s %9s %7s\n", "line", "model", "quant",
	       "weights", "est", "err", "kv", "est", "err", "total", "est", "err");
	for (int i = 0; i < n && i < 64; i++) {
		const struct mc_mem_row *r = &rows[i];
		double e;
		if (!r->usable) {
			printf("%-5d %-30.30s skipped: %s\n", r->line, r->model, r->reason);
			continue;
		}
		e = mc_rel(r->est_weights, r->meas_weights);
		we[nw++] = fabs(e);
		worst_w = fmax(worst_w, fabs(e));
		printf("%-5d %-30.30s %-7s %9.2f %9.2f %+6.2f%%", r->line, r->model, r->quant,
		       r->meas_weights, r->est_weights, 100 * e);
		if (r->has_kv) {
			e = mc_rel(r->est_kv, r->meas_kv);
			ke[nk++] = fabs(e);
			worst_k = fmax(worst_k, fabs(e));
			printf(" %8.2f %8.2f %+6.2f%%", r->meas_kv, r->est_kv, 100 * e);
		} else {
			printf(" %8s %8s %7s", "-", "-", "-");
		}
		if (r->has_total) {
			e = mc_rel(r->est_total, r->meas_total);
			te[nt++] = fabs(e);
			worst_t = fmax(worst_t, fabs(e));
			printf(" %9.2f %9.2f %+6.2f%%", r->meas_total, r->est_total, 100 * e);
		}
		printf("%s%s\n", r->reason[0] ? "  " : "", r->reason);
	}
	printf("weights: %d rows, median |error| %.2f%%, worst %.2f%% (target 3%%)\n", nw,
	       100 * mc_median(we, nw), 100 * worst_w);
	printf("KV cache: %d rows, median |error| %.2f%%, worst %.2f%% (target 1%%)\n", nk,
	       100 * mc_median(ke, nk), 100 * worst_k);
	printf("model + KV + compute: %d rows, median |error| %.2f%%, worst %.2f%% (targets 4%% "
	       "median, 10%% worst)\n",
	       nt, 100 * mc_median(te, nt), 100 * worst_t);
	free(rows);
	return (worst_w > MC_WEIGHTS_TOL || worst_k > MC_KV_TOL || worst_t > MC_TOTAL_TOL ||
		mc_median(te, nt) > MC_TOTAL_MEDIAN_TOL) ?
		       1 :
		       0;
}

static int size_table(const char *data_dir, const struct model_catalog *c)
{
	struct mc_size_row *rows = NULL;
	int n = mc_size_rows(data_dir, c, &rows);
	double errs[256], worst = 0;
	int ne = 0;

	if (n < 0) {
		fprintf(stderr, "memory: cannot read %s/calibration/gguf_sizes.csv\n", data_dir);
		return -1;
	}
	printf("\n== memory: GGUF sizes (GiB of tensor data; the scheme's mix, tensor by tensor)\n");
	printf("%-20s %-28s %-10s %9s %9s %7s\n", "row", "model", "quant", "measured", "est",
	       "err");
	for (int i = 0; i < n && ne < 256; i++) {
		const struct mc_size_row *r = &rows[i];
		double e;
		if (!r->usable) {
			printf("%-20s %-28.28s %-10s skipped: %s\n", r->origin, r->model, r->quant,
			       r->reason);
			continue;
		}
		e = mc_rel(r->est_gib, r->meas_gib);
		errs[ne++] = fabs(e);
		worst = fmax(worst, fabs(e));
		printf("%-20s %-28.28s %-10s %9.3f %9.3f %+6.2f%%\n", r->origin, r->model, r->quant,
		       r->meas_gib, r->est_gib, 100 * e);
	}
	printf("GGUF sizes: %d rows, median |error| %.2f%%, worst %.2f%% (target 3%%)\n", ne,
	       100 * mc_median(errs, ne), 100 * worst);
	free(rows);
	return worst > MC_SIZE_TOL ? 1 : 0;
}

int accuracy_memory(const char *data_dir)
{
	struct model_catalog *c = mc_catalog_load(t_src_dir());
	int a, b;

	if (!c)
		return -1;
	a = memory_table(data_dir, c);
	b = a < 0 ? -1 : size_table(data_dir, c);
	model_catalog_free(c);
	if (a < 0 || b < 0)
		return -1;
	return a || b;
}
