/*
 * Ownership helpers for struct api_scan_row and struct api_bench_run (api.h): the store fills the rows, the handler that
 * asked frees them. It lives in api/ so that code linking only api/ (and its tests) can free
 * rows built by any api_store implementation, not only the SQLite one.
 */
#include <stdlib.h>

#include "api/api.h"

/* Frees each row's hardware_json and then the array. NULL rows is a no-op. */
void api_scan_rows_free(struct api_scan_row *rows, int n)
{
	if (!rows)
		return;
	for (int i = 0; i < n; i++)
		free(rows[i].hardware_json);
	free(rows);
}

/* Frees each run's JSON members and then the array. NULL runs is a no-op. */
void api_bench_runs_free(struct api_bench_run *runs, int n)
{
	if (!runs)
		return;
	for (int i = 0; i < n; i++) {
		free(runs[i].settings_json);
		free(runs[i].peak_memory_json);
	}
	free(runs);
}
