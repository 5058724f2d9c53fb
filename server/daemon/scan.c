/*
 * The scan cache. A uv_timer starts a scan every --scan-interval seconds; the scan runs on the
 * libuv thread pool (uv_queue_work) so a slow probe never delays a request; the worker also
 * renders the snapshot's JSON, walks the models dirs, the Hugging Face cache and Ollama's
 * store for the list GET /api/models answers with (kept in the snapshot), and appends the scan
 * to the scan history. When it finishes, the loop thread swaps the published snapshot pointer:
 * requests always read a complete, immutable snapshot. A timer tick while a scan still runs
 * is skipped, not queued.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/hardware_json.h"
#include "api/hardware_nfd.h"
#include "core/err.h"
#include "core/hw/hw_fingerprint.h"
#include "core/hw/hw_profile.h"
#include "server/daemon/daemon_priv.h"
#include "server/data_dir.h"
#include "server/detect/detect.h"
#include "server/log.h"
#include "server/models/models_list.h"
#include "server/daemon/nfd_file.h"
#include "server/hostbench.h"
#include "server/store/store_hostbench.h"

struct rf_scan_job {
	uv_work_t work;
	struct rf_daemon *d;
	struct api_snapshot *result;
	struct rf_catalogs *catalogs; /* a reference taken when the job starts */
	int rc;
	int store_rc;
	int nfd_rc;
	struct hw_host_bench bench; /* the daemon's measurement when the job started */
	char bench_fp[64];          /* its fingerprint; "" : none */
	bool bench_loaded;          /* bench was read from the store by this job */
	char fp[64];                /* the fingerprint of the machine scanned */
	int disk_rc;                /* of data_disk_free; the data directory's free bytes */
	int64_t data_disk_free;
};

struct rf_hostbench_job {
	uv_work_t work;
	struct rf_daemon *d;
	int threads;
	char fp[64];
	struct hw_host_bench result;
	int rc;
	int store_rc;
};

/* The measurement's share of a scan interval: bounded, so that a host is never busy long. */
#define HOSTBENCH_BUDGET_MS 1500

void rf_snapshot_free(struct api_snapshot *s)
{
	if (!s)
		return;
	free(s->json);
	rf_models_free(&s->models);
	free(s);
}

/* This process measures the machine it runs on (and reads its stored figures back) unless told
 * not to, and never for a --root tree, which is another machine's. */
static bool hostbench_allowed(const struct rf_daemon *d)
{
	return !d->cfg->no_host_bench && strcmp(d->cfg->root, "/") == 0;
}

static void scan_work(uv_work_t *w)
{
	struct rf_scan_job *job = w->data;
	struct rf_daemon *d = job->d;
	const struct rf_config *c = d->cfg;
	struct rf_detect_opts opts = {
		.root = c->root,
		.nvml_lib = c->nvml_lib[0] ? c->nvml_lib : NULL,
		.nvidia_smi = c->nvidia_smi[0] ? c->nvidia_smi : NULL,
		.sysctl = c->sysctl[0] ? c->sysctl : NULL,
		.probe_timeout_ms = c->probe_timeout_ms,
	};
	struct api_snapshot *snap = calloc(1, sizeof(*snap));
	struct hw_host_bench stored;

	if (!snap) {
		job->rc = RF_E_NOMEM;
		return;
	}
	job->rc = rf_detect_scan(&opts, &snap->hw);
	if (job->rc == 0)
		hw_apply_device_profiles(&snap->hw, job->catalogs ? &job->catalogs->table : NULL);
	if (job->rc == 0 && hw_fingerprint(&snap->hw, job->fp, sizeof(job->fp)) < 0)
		job->fp[0] = '\0';
	/* A machine measured before this process started: its figures are in the store, unless
	 * an older way of measuring took them (then the daemon measures it again). */
	if (job->rc == 0 && job->fp[0] && strcmp(job->fp, job->bench_fp) != 0 && d->store &&
	    hostbench_allowed(d) && rf_store_host_bench_get(d->store, job->fp, &stored) == 0 &&
	    stored.method >= RF_HOSTBENCH_METHOD) {
		job->bench = stored;
		snprintf(job->bench_fp, sizeof(job->bench_fp), "%s", job->fp);
		job->bench_loaded = true;
	}
	/* This machine measured: its bandwidth is a measured figure, not a guess. */
	if (job->rc == 0 && job->fp[0] && strcmp(job->fp, job->bench_fp) == 0 &&
	    job->bench.measured) {
		snap->hw.host_bench = job->bench;
		snap->hw.cpu.memory_bandwidth_gbs = job->bench.memory_bandwidth_gbs;
	}
	if (job->rc == 0) {
		snap->json = api_hardware_render(&snap->hw, &snap->json_len);
		if (!snap->json)
			job->rc = RF_E_NOMEM;
	}
	/* The models on disk are walked here too, so GET /api/models never reads a directory. */
	if (job->rc == 0)
		job->rc = rf_models_walk(c, &snap->models);
	if (job->rc < 0) {
		rf_snapshot_free(snap);
		return;
	}
	job->result = snap;
	if (c->nfd_dir[0]) {
		char *nfd = api_hardware_nfd(&snap->hw);
		job->nfd_rc = nfd ? rf_nfd_write(c->nfd_dir, nfd) : RF_E_NOMEM;
		free(nfd);
	}
	/* statvfs can block on a network file system, so it runs here, off the loop. */
	{
		char dir[RF_CONFIG_PATH_MAX];
		rf_data_dir(c, dir, sizeof(dir));
		job->disk_rc = rf_disk_free_bytes(dir, &job->data_disk_free);
	}
	if (d->store)
		job->store_rc = rf_store_scan_append(d->store, snap->hw.scanned_at_ms,
						     snap->hw.scan_duration_ms, snap->json,
						     snap->json_len, d->cfg->scan_history_keep);
}

static void hostbench_work(uv_work_t *w)
{
	struct rf_hostbench_job *job = w->data;
	struct hw_host_bench *b = &job->result;
	struct rf_hostbench h;

	job->rc = rf_hostbench_run(job->threads, HOSTBENCH_BUDGET_MS, &h);
	if (job->rc < 0)
		return;
	rf_hostbench_to_hw(&h, (int64_t)time(NULL) * 1000, b);
	/* Kept with the fingerprint: a restart on this machine reads it back (scan_work). */
	if (job->d->store)
		job->store_rc = rf_store_host_bench_put(job->d->store, job->fp, b);
}

static void hostbench_done(uv_work_t *w, int status)
{
	struct rf_hostbench_job *job = w->data;
	struct rf_daemon *d = job->d;

	d->hostbench_job = NULL;
	if (status == 0 && job->rc == 0) {
		d->hostbench = job->result;
		snprintf(d->hostbench_fp, sizeof(d->hostbench_fp), "%s", job->fp);
		if (job->store_rc < 0)
			rf_log_warn("host measurement: could not store it (%s)",
				    rf_err_code(job->store_rc));
		rf_log_info("host measured in %.0f ms: %.1f GB/s read with %d threads, %.1f int8 "
			    "GOPS and %.1f f32 GFLOPS per thread (%s)",
			    job->result.duration_ms, job->result.memory_bandwidth_gbs,
			    job->result.threads, job->result.int8_gops_per_thread,
			    job->result.f32_gflops_per_thread, job->result.kernel_isa);
		if (!d->stopping)
			rf_scan_start(d); /* publish the measured bandwidth now */
	} else if (status != UV_ECANCELED) {
		rf_log_warn("host measurement failed: %s", rf_err_code(job->rc));
		snprintf(d->hostbench_fp, sizeof(d->hostbench_fp), "%s", job->fp);
	}
	free(job);
}

/* Measures this machine once per fingerprint, after a scan of it (never of a --root tree). */
static void hostbench_maybe_start(struct rf_daemon *d, const char *fp, int threads)
{
	struct rf_hostbench_job *job;

	if (!hostbench_allowed(d) || d->stopping || d->hostbench_job || !fp[0] ||
	    strcmp(fp, d->hostbench_fp) == 0)
		return;
	job = calloc(1, sizeof(*job));
	if (!job)
		return;
	job->d = d;
	job->work.data = job;
	job->threads = threads > 0 ? threads : 1;
	snprintf(job->fp, sizeof(job->fp), "%s", fp);
	if (uv_queue_work(&d->loop, &job->work, hostbench_work, hostbench_done) != 0) {
		free(job);
		return;
	}
	d->hostbench_job = job;
}

bool rf_hostbench_cancel(struct rf_daemon *d)
{
	return d->hostbench_job && uv_cancel((uv_req_t *)d->hostbench_job) != 0;
}

static void scan_done(uv_work_t *w, int status)
{
	struct rf_scan_job *job = w->data;
	struct rf_daemon *d = job->d;

	d->scan_job = NULL;
	rf_catalogs_unref(job->catalogs);
	if (status == UV_ECANCELED || job->rc < 0) {
		d->scan_failures++;
		d->last_scan_failed_s = time(NULL);
		if (status != UV_ECANCELED)
			rf_log_error("scan failed: %s", rf_err_code(job->rc));
		rf_snapshot_free(job->result);
		free(job);
		rf_http_resume_waiters(d, RF_E_IO);
		return;
	}
	if (job->nfd_rc < 0)
		rf_log_warn("nfd: could not write %s/%s (%s)", d->cfg->nfd_dir, RF_NFD_FILE_NAME,
			    rf_err_code(job->nfd_rc));
	if (job->store_rc < 0)
		rf_log_warn("scan history: could not store the scan (%s)",
			    rf_err_code(job->store_rc));
	if (job->bench_loaded && strcmp(job->fp, d->hostbench_fp) != 0) {
		d->hostbench = job->bench;
		snprintf(d->hostbench_fp, sizeof(d->hostbench_fp), "%s", job->fp);
		rf_log_info(
			"host figures of this machine read from the store (measured at %lld ms): "
			"%.1f GB/s read, %.1f int8 GOPS and %.1f f32 GFLOPS per thread (%s)",
			(long long)job->bench.measured_at_ms, job->bench.memory_bandwidth_gbs,
			job->bench.int8_gops_per_thread, job->bench.f32_gflops_per_thread,
			job->bench.kernel_isa);
	}
	d->data_disk_known = job->disk_rc == 0;
	d->data_disk_free = job->data_disk_free;
	job->result->seq = ++d->scan_seq;
	rf_snapshot_retire(d, d->snapshot);
	d->snapshot = job->result;
	hostbench_maybe_start(d, job->fp,
			      d->snapshot->hw.cpu.physical_cores > 0 ?
				      d->snapshot->hw.cpu.physical_cores :
				      d->snapshot->hw.cpu.logical_cores);
	d->scans_total++;
	rf_log_debug("scan %llu done in %.2f ms", (unsigned long long)d->scan_seq,
		     d->snapshot->hw.scan_duration_ms);
	free(job);
	rf_http_resume_waiters(d, 0);
}

void rf_scan_start(struct rf_daemon *d)
{
	struct rf_scan_job *job;

	if (d->scan_job || d->stopping)
		return;
	job = calloc(1, sizeof(*job));
	if (!job) {
		d->scan_failures++;
		return;
	}
	job->d = d;
	job->work.data = job;
	job->catalogs = rf_catalogs_ref(d->catalogs);
	job->bench = d->hostbench;
	snprintf(job->bench_fp, sizeof(job->bench_fp), "%s", d->hostbench_fp);
	if (uv_queue_work(&d->loop, &job->work, scan_work, scan_done) != 0) {
		d->scan_failures++;
		rf_catalogs_unref(job->catalogs);
		free(job);
		return;
	}
	d->scan_job = job;
}
