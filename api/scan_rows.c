/*
 * Ownership helper for struct api_scan_row (api.h): the store fills the rows, the handler that
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
