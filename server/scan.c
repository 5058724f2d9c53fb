/*
 * The scan cache. A uv_timer starts a scan every --scan-interval seconds; the scan runs on the
 * libuv thread pool (uv_queue_work) so a slow probe never delays a request; the worker also
 * renders the snapshot's JSON and appends it to the scan history. When it finishes, the loop
 * thread swaps the published snapshot pointer: requests always read a complete, immutable
 * snapshot. A timer tick while a scan still runs is skipped, not queued.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/hardware_json.h"
#include "api/hardware_nfd.h"
#include "core/err.h"
#include "core/hw_profile.h"
#include "server/daemon_priv.h"
#include "server/data_dir.h"
#include "server/detect/detect.h"
#include "server/log.h"
#include "server/nfd_file.h"

struct rf_scan_job {
	uv_work_t work;
	struct rf_daemon *d;
	struct api_snapshot *result;
	struct rf_catalogs *catalogs; /* a reference taken when the job starts */
	int rc;
	int store_rc;
	int nfd_rc;
	int disk_rc; /* of data_disk_free; the data directory's free bytes */
	int64_t data_disk_free;
};

void rf_snapshot_free(struct api_snapshot *s)
{
	if (!s)
		return;
	free(s->json);
	free(s);
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

	if (!snap) {
		job->rc = RF_E_NOMEM;
		return;
	}
	job->rc = rf_detect_scan(&opts, &snap->hw);
	if (job->rc == 0)
		hw_apply_device_profiles(&snap->hw, job->catalogs ? &job->catalogs->table : NULL);
	if (job->rc == 0) {
		snap->json = api_hardware_render(&snap->hw, &snap->json_len);
		if (!snap->json)
			job->rc = RF_E_NOMEM;
	}
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
	d->data_disk_known = job->disk_rc == 0;
	d->data_disk_free = job->data_disk_free;
	job->result->seq = ++d->scan_seq;
	rf_snapshot_free(d->snapshot);
	d->snapshot = job->result;
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
	if (uv_queue_work(&d->loop, &job->work, scan_work, scan_done) != 0) {
		d->scan_failures++;
		rf_catalogs_unref(job->catalogs);
		free(job);
		return;
	}
	d->scan_job = job;
}
