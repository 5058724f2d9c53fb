/*
 * The host measurement in the store (see store_hostbench.h). One row per fingerprint in
 * host_bench and one per quant class in host_bench_kernel: a put replaces both in one
 * BEGIN IMMEDIATE transaction; a get reads the row, then its classes (an older row has none).
 * Both hold the connection's mutex; statements are prepared at each call (once per machine).
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
static const char SQL_GET_KERNELS[] =
	"SELECT kernel, isa, gops_per_thread, avx2_gops_per_thread FROM host_bench_kernel "
	"WHERE fingerprint = ?1";
static const char SQL_DEL_KERNELS[] = "DELETE FROM host_bench_kernel WHERE fingerprint = ?1";
static const char SQL_PUT_KERNEL[] =
	"INSERT INTO host_bench_kernel (fingerprint, kernel, isa, gops_per_thread, "
	"avx2_gops_per_thread) VALUES (?1, ?2, ?3, ?4, ?5)";
static const char SQL_PUT[] =
	"INSERT OR REPLACE INTO host_bench (fingerprint, threads, memory_bandwidth_gbs, "
	"int8_gops_per_thread, f32_gflops_per_thread, kernel_isa, duration_ms, measured_at_ms, "
	"method) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

/* The per-class rows of fp into b (none: b's kernels stay unmeasured). Holds the mutex. */
static int get_kernels(struct rf_store *st, const char *fp, struct hw_host_bench *b)
{
	sqlite3_stmt *s = NULL;
	int src = sqlite3_prepare_v2(st->db, SQL_GET_KERNELS, -1, &s, NULL);

	if (src == SQLITE_OK)
		src = sqlite3_bind_text(s, 1, fp, -1, SQLITE_STATIC);
	while (src == SQLITE_OK || src == SQLITE_ROW) {
		int k;
		const unsigned char *isa;
		if ((src = sqlite3_step(s)) != SQLITE_ROW)
			break;
		k = hw_kernel_from_name((const char *)sqlite3_column_text(s, 0));
		if (k < 0)
			continue; /* a class a later build measures */
		isa = sqlite3_column_text(s, 1);
		snprintf(b->kernel[k].isa, sizeof(b->kernel[k].isa), "%s",
			 isa ? (const char *)isa : "");
		b->kernel[k].gops_per_thread = sqlite3_column_double(s, 2);
		b->kernel[k].avx2_gops_per_thread = sqlite3_column_double(s, 3);
	}
	sqlite3_finalize(s);
	return src == SQLITE_DONE ? 0 : rf_store_sqlite_err(src);
}

/* Replaces the per-class rows of fp with b's measured ones. Inside the caller's transaction. */
static int put_kernels(struct rf_store *st, const char *fp, const struct hw_host_bench *b)
{
	sqlite3_stmt *del = NULL, *ins = NULL;
	int src = sqlite3_prepare_v2(st->db, SQL_DEL_KERNELS, -1, &del, NULL);

	if (src == SQLITE_OK)
		src = sqlite3_prepare_v2(st->db, SQL_PUT_KERNEL, -1, &ins, NULL);
	if (src == SQLITE_OK)
		src = sqlite3_bind_text(del, 1, fp, -1, SQLITE_STATIC);
	if (src == SQLITE_OK)
		src = sqlite3_step(del);
	for (int k = 0; k < HW_KERNEL_N && src == SQLITE_DONE; k++) {
		const struct hw_kernel_rate *r = &b->kernel[k];
		if (!(r->gops_per_thread > 0))
			continue;
		sqlite3_reset(ins);
		src = sqlite3_bind_text(ins, 1, fp, -1, SQLITE_STATIC);
		if (src == SQLITE_OK)
			src = sqlite3_bind_text(ins, 2, hw_kernel_name(k), -1, SQLITE_STATIC);
		if (src == SQLITE_OK)
			src = sqlite3_bind_text(ins, 3, r->isa, -1, SQLITE_STATIC);
		if (src == SQLITE_OK)
			src = sqlite3_bind_double(ins, 4, r->gops_per_thread);
		if (src == SQLITE_OK)
			src = sqlite3_bind_double(
				ins, 5, r->avx2_gops_per_thread > 0 ? r->avx2_gops_per_thread : 0);
		if (src == SQLITE_OK)
			src = sqlite3_step(ins);
	}
	sqlite3_finalize(del);
	sqlite3_finalize(ins);
	return src;
}

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
	s = NULL;
	if (rc == 0)
		rc = get_kernels(st, fp, &b);
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
	/* Takes the mutex; the row and its classes in one transaction. */
	src = rf_store_begin_write(st);
	if (src == SQLITE_DONE)
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
	if (src == SQLITE_DONE)
		src = put_kernels(st, fp, b);
	if (src == SQLITE_DONE)
		src = rf_store_step_done(st->commit);
	if (!sqlite3_get_autocommit(st->db))
		rf_store_step_done(st->rollback);
	sqlite3_finalize(s);
	sqlite3_mutex_leave(mx);
	return src == SQLITE_DONE ? 0 : rf_store_sqlite_err(src);
}
