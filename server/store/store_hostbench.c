/*
 * The host measurement in the store (see store_hostbench.h). One row per fingerprint: a put is
 * one INSERT OR REPLACE (a single statement is its own transaction); a get one SELECT. Both
 * hold the connection's mutex; statements are prepared at each call (once per machine).
 */
#include "server/store/store_hostbench.h"
#include "server/store/store_priv.h"

#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

static const char SQL_GET[] =
	"SELECT threads, memory_bandwidth_gbs, int8_gops_per_thread, f32_gflops_per_thread, "
	"kernel_isa, duration_ms, measured_at_ms, method FROM host_bench WHERE fingerprint = ?1";
static const char SQL_PUT[] =
	"INSERT OR REPLACE INTO host_bench (fingerprint, threads, memory_bandwidth_gbs, "
	"int8_gops_per_thread, f32_gflops_per_thread, kernel_isa, duration_ms, measured_at_ms, "
	"method) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

int rf_store_host_bench_get(struct rf_store *st, const char *fp, struct hw_host_bench *out)
{
	struct hw_host_bench b;
	sqlite3_stmt *s = NULL;
	sqlite3_mutex *mx;
	int rc = 0, src;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	memset(&b, 0, sizeof(b));
	mx = sqlite3_db_mutex(st->db);
	sqlite3_mutex_enter(mx);
	src = sqlite3_prepare_v2(st->db, SQL_GET, -1, &s, NULL);
	if (src == SQLITE_OK)
		src = sqlite3_bind_text(s, 1, fp, -1, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_step(s);
	if (src == SQLITE_ROW) {
		const unsigned char *isa = sqlite3_column_text(s, 4);
		b.measured = true;
		b.threads = sqlite3_column_int(s, 0);
		b.memory_bandwidth_gbs = sqlite3_column_double(s, 1);
		b.int8_gops_per_thread = sqlite3_column_double(s, 2);
		b.f32_gflops_per_thread = sqlite3_column_double(s, 3);
		snprintf(b.kernel_isa, sizeof(b.kernel_isa), "%s", isa ? (const char *)isa : "");
		b.duration_ms = sqlite3_column_double(s, 5);
		b.measured_at_ms = sqlite3_column_int64(s, 6);
		b.method = sqlite3_column_int(s, 7);
	} else {
		rc = src == SQLITE_DONE ? RF_E_NOT_FOUND : rf_store_sqlite_err(src);
	}
	sqlite3_finalize(s);
	sqlite3_mutex_leave(mx);
	if (rc == 0)
		*out = b;
	return rc;
}

int rf_store_host_bench_put(struct rf_store *st, const char *fp, const struct hw_host_bench *b)
{
	sqlite3_stmt *s = NULL;
	sqlite3_mutex *mx;
	int src;

	if (!st)
		return RF_E_STORE_UNAVAILABLE;
	if (!fp || !fp[0] || !b || !b->measured)
		return RF_E_INVALID_VALUE;
	mx = sqlite3_db_mutex(st->db);
	sqlite3_mutex_enter(mx);
	src = sqlite3_prepare_v2(st->db, SQL_PUT, -1, &s, NULL);
	if (src == SQLITE_OK)
		src = sqlite3_bind_text(s, 1, fp, -1, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int(s, 2, b->threads);
	if (src == SQLITE_OK)
		src = sqlite3_bind_double(s, 3, b->memory_bandwidth_gbs);
	if (src == SQLITE_OK)
		src = sqlite3_bind_double(s, 4, b->int8_gops_per_thread);
	if (src == SQLITE_OK)
		src = sqlite3_bind_double(s, 5, b->f32_gflops_per_thread);
	if (src == SQLITE_OK)
		src = sqlite3_bind_text(s, 6, b->kernel_isa, -1, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_bind_double(s, 7, b->duration_ms);
	if (src == SQLITE_OK)
		src = sqlite3_bind_int64(s, 8, b->measured_at_ms);
	/* A figure that does not say how it was measured counts as the oldest method. */
	if (src == SQLITE_OK)
		src = sqlite3_bind_int(s, 9, b->method > 0 ? b->method : 1);
	if (src == SQLITE_OK)
		src = sqlite3_step(s);
	sqlite3_finalize(s);
	sqlite3_mutex_leave(mx);
	return src == SQLITE_DONE ? 0 : rf_store_sqlite_err(src);
}
