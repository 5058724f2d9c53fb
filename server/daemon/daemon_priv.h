/*
 * The daemon's state, shared by the files that make up `rigfit serve` (daemon.c: life cycle
 * and signals; http.c: libmicrohttpd glue; scan.c: the scan timer and worker). Nothing outside
 * server/ includes this header.
 */
#ifndef RIGFIT_SERVER_DAEMON_DAEMON_PRIV_H
#define RIGFIT_SERVER_DAEMON_DAEMON_PRIV_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "api/api.h"
#include "api/history_cache.h"
#include "api/metrics.h"
#include "api/finetune_session.h"
#include "server/config.h"
#include "server/hostbench.h"
#include "server/profiles/profiles.h"
#include "server/store/store.h"

struct rf_scan_job;
struct rf_hostbench_job;
struct rf_req;
struct rf_conn;
struct rf_linger;
struct rf_write_job;
struct rf_retired;

struct rf_daemon {
	struct rf_config *cfg;
	uv_loop_t loop;

	/* libmicrohttpd, driven from the loop */
	struct MHD_Daemon *mhd;
	uv_poll_t mhd_poll;
	uv_timer_t mhd_timer;
	uv_prepare_t mhd_prepare;
	int port;              /* the bound port (useful with --listen HOST:0) */
	char listen_host[128]; /* the numeric host of --listen, for the Host header check */

	/* http.c: open connections (oldest first), their deadlines and shared budgets */
	struct rf_conn *conns, *conns_tail;
	int n_conns;
	bool mhd_rerun; /* a connection closed: run MHD once more so it takes up accepting */
	uv_timer_t deadline_timer;
	size_t body_bytes;         /* memory held by request bodies now */
	struct rf_linger *lingers; /* closed connections still drained for their client */
	int n_lingers;

	/* signals and timers */
	uv_signal_t sig_term, sig_int, sig_hup;
	uv_timer_t scan_timer;
	uv_timer_t watchdog_timer;
	uv_timer_t drain_timer;
	uv_timer_t store_timer;   /* checks the store's file, reopens a store that failed */
	char store_error[300];    /* the store's last failure as handlers see it */
	char store_open_err[512]; /* why the last open failed ("" : it did not) */
	int64_t store_error_ms;
	uint64_t watchdog_usec;

	/* state read by requests; replaced only on the loop thread */
	struct api_snapshot *snapshot;
	struct rf_store *store;
	struct rf_hub *hub; /* --hub: the Hugging Face Hub lookup; NULL: off */
	struct api_metrics *metrics;
	struct api_history_cache *history_cache; /* what estimates read of the benchmarks */
	pthread_mutex_t history_mu;              /* guards history_cache */
	struct rf_profiles *profiles;
	struct rf_catalogs *catalogs; /* devices.json and models.json; never NULL once started */
	void *openapi_tree;           /* the embedded spec as a cJSON tree (the MCP schemas) */
	struct mcp_http *mcp;         /* the sessions of /mcp */

	/* the scan in progress, if any */
	struct rf_scan_job *scan_job;
	uint64_t scans_total;
	uint64_t scan_failures;
	int64_t last_scan_failed_s; /* Unix time of the last failed scan; 0: none */
	bool data_disk_known;       /* the data directory's free bytes, from the last scan */
	int64_t data_disk_free;
	struct api_ft_session session; /* ModelForge's one session */
	uint64_t scan_seq;
	struct rf_req *scan_waiters;  /* requests suspended until the scan finishes */
	uint64_t last_forced_scan_ns; /* when POST /api/hardware/rescan last started one */

	/* daemon_writes.c: store writes running on the thread pool */
	int write_jobs;
	int hub_jobs;               /* of write_jobs, the Hub lookups (at most RF_HUB_JOBS_MAX) */
	struct rf_retired *retired; /* snapshots replaced while write jobs ran */
	bool reload_pending;        /* a SIGHUP came while write jobs ran */

	uint64_t started_ns; /* uv_hrtime at start */
	int64_t started_ms;  /* wall clock at start */
	int in_flight;       /* requests between URI and completion */
	/* When the last request completed, and whether any has since the heap was last given
	 * back to the system (http.c: trim_when_idle). */
	uint64_t last_done_ns;
	bool heap_dirty;
	bool stopping;
	uint64_t stop_deadline_ns;
	bool scan_abandoned; /* a hung scan was left behind at shutdown */

	/* The host measurement (scan.c): made once per hardware fingerprint of this machine, in a
	 * worker, after a scan finds a fingerprint not measured yet; the scans that follow put
	 * its bandwidth in the snapshot. Read and written on the loop thread only. */
	struct rf_hostbench_job *hostbench_job;
	struct hw_host_bench hostbench; /* measured, or read back from the store */
	char hostbench_fp[64];          /* the fingerprint hostbench belongs to; "" : none yet */
};

/* http.c: starts libmicrohttpd on cfg->listen and wires it into the loop. Returns 0 or a
 * negative rf_err (logged). */
int rf_http_start(struct rf_daemon *d);
/* http.c: stops accepting new connections (in-flight requests go on). */
void rf_http_quiesce(struct rf_daemon *d);
/* http.c: resumes every request suspended for a rescan. why is 0 when the scan published a
 * snapshot (they answer with it), RF_E_IO when the scan failed, RF_E_UNAVAILABLE when
 * the daemon is stopping (both answer 503). */
void rf_http_resume_waiters(struct rf_daemon *d, int why);
/* http.c: stops libmicrohttpd and closes its loop handles. */
void rf_http_stop(struct rf_daemon *d);

/* scan.c: starts a scan now unless one is running. */
void rf_scan_start(struct rf_daemon *d);
/* scan.c: cancels a host measurement that has not started; returns true when one is still
 * running (it ends within its budget, about 2 s). */
bool rf_hostbench_cancel(struct rf_daemon *d);
/* scan.c: frees a snapshot. NULL is a no-op. */
void rf_snapshot_free(struct api_snapshot *s);

/* daemon_profiles.c: loads the profile files and builds the catalogs from them and the
 * store's custom profiles; at start a broken set starts without files, later it keeps the last
 * good one (logged with file and line). After a good load the files are seeded into the
 * store. */
void rf_daemon_profiles_reload(struct rf_daemon *d, bool at_start);

/* daemon_profiles.c: the hooks the profile routes call (api_env.profiles), backed by d. */
struct api_profile_hooks rf_daemon_profile_hooks(struct rf_daemon *d);

/* daemon_profiles.c: the hooks' work, callable from a write job: check builds the catalogs
 * with pending (reads the files and the store, installs nothing; safe on a worker while no
 * reload runs), changed rebuilds and installs them (loop thread only). */
int rf_daemon_profiles_check(struct rf_daemon *d, const struct api_profile *pending, char *msg,
			     size_t msglen);
void rf_daemon_profiles_changed(struct rf_daemon *d);

/* daemon_writes.c: whether route (matched for method) writes to the store and so runs on the
 * thread pool. */
bool rf_write_route(const struct api_route *route, enum api_method method);
/* daemon_writes.c: runs req (copied) through api_dispatch on the thread pool with the env of
 * now (a store write, or, hub_lookup, a request whose Hub lookup has to go to the network),
 * then calls rf_http_write_done(d, ctx, ...) on the loop thread unless detached. Writes the
 * job to *out. Returns 0 or a negative rf_err (nothing started). */
/* Hub lookups on the thread pool at once: the other threads stay free for store writes and
 * scans; more lookups answer 503 with Retry-After. */
#define RF_HUB_JOBS_MAX 2
int rf_write_start(struct rf_daemon *d, const struct api_request *req, void *ctx, bool hub_lookup,
		   struct rf_write_job **out /* OUT */);
/* daemon_writes.c: the request went away; the job finishes without calling back. A Hub
 * lookup (hub_lookup) is cancelled: not started, or cut off at its next progress report. */
void rf_write_detach(struct rf_write_job *job);
/* daemon_writes.c: frees a replaced snapshot now, or once no write job can read it. */
void rf_snapshot_retire(struct rf_daemon *d, struct api_snapshot *s);
/* daemon_writes.c: frees what is still retired (at exit, after the loop ran out). */
void rf_write_jobs_teardown(struct rf_daemon *d);
/* http.c: a write job finished: answers its request with reply (taken: reset on return) and
 * the route it matched. */
void rf_http_write_done(struct rf_daemon *d, void *ctx, struct api_reply *reply,
			const struct api_route *route);

/* daemon.c: the env that handlers see, as of now. */
void rf_daemon_env(struct rf_daemon *d, struct api_env *env /* OUT */);

#endif
