/*
 * The daemon's life cycle (see daemon.h): open the store and the profiles, start listening,
 * scan at start and on a timer, then run the loop until a signal.
 *
 * Stopping: SIGTERM or SIGINT stop accepting at once (MHD_quiesce_daemon), let in-flight
 * requests finish, and stop within 1.5 s whatever happens, so the process exits 0 within the
 * 2 s that systemd and the tests allow. A second signal stops at once. SIGHUP reloads the
 * profiles, keeping the last good set when the new one is broken.
 */
#include "server/daemon/daemon.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "api/mcp.h"
#include "core/err.h"
#include "server/daemon/daemon_priv.h"
#include "server/embedded.h"
#include "server/models/hub.h"
#include "server/log.h"
#include "server/models/read_hooks.h"
#include "server/models/ollama_models.h"
#include "server/daemon/notify.h"
#include "server/openapi_json.h"
#include "server/daemon/process_stats.h"

/* Descriptors wanted: the 1024 connections of server/daemon/http.c, plus the store, the log, the
 * loop's own and a probe's pipes. */
#define RF_FD_WANT ((rlim_t)4096)
#define DRAIN_MAX_NS (1500ull * 1000 * 1000)
#define DRAIN_TICK_MS 10
/* How often the store's file is checked, and a failed store opened again. */
#define STORE_CHECK_MS 2000

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The history cache's guard: estimates run on the loop thread and in write jobs. */
static void history_lock(void *mu)
{
	pthread_mutex_lock(mu);
}

static void history_unlock(void *mu)
{
	pthread_mutex_unlock(mu);
}

void rf_daemon_env(struct rf_daemon *d, struct api_env *env)
{
	struct api_scan_stats stats = {
		.scans_total = d->scans_total,
		.scan_failures_total = d->scan_failures,
		.last_scan_duration_s = d->snapshot ? d->snapshot->hw.scan_duration_ms / 1e3 : -1,
		.last_success_timestamp_s = d->snapshot ? d->snapshot->hw.scanned_at_ms / 1e3 : -1,
		.last_failure_timestamp_s = -1,
	};

	memset(env, 0, sizeof(*env));
	env->version = RIGFIT_VERSION;
	env->uptime_s = (double)(uv_hrtime() - d->started_ns) / 1e9;
	env->now_ms = wall_ms();
	env->snapshot = d->snapshot;
	env->openapi = rf_embed_openapi;
	env->openapi_len = rf_embed_openapi_len;
	env->ui = d->cfg->no_ui ? NULL : rf_embed_ui;
	env->metrics = d->metrics;
	env->store = rf_store_api(d->store);
	env->history_cache = d->history_cache;
	{
		struct rf_store_error e;
		if (rf_store_last_error(&e)) {
			snprintf(d->store_error, sizeof(d->store_error), "%s", e.message);
			d->store_error_ms = e.at_ms;
		}
		if (d->store_error[0]) {
			env->store_error = d->store_error;
			env->store_error_ms = d->store_error_ms;
		}
	}
	env->scan_interval_s = d->cfg->scan_interval_s;
	env->cat.devices = d->catalogs ? &d->catalogs->table : NULL;
	env->cat.models = d->catalogs ? d->catalogs->models : NULL;
	env->cat.tiers = d->catalogs ? d->catalogs->tiers : NULL;
	env->cat.quality = d->catalogs ? d->catalogs->quality : NULL;
	env->profiles = rf_daemon_profile_hooks(d);
	env->openapi_tree = d->openapi_tree;
	env->mcp = d->mcp;
	env->mcp_fixtures = d->cfg->mcp_conformance_fixtures;
	if (d->cfg->n_models_dirs > 0) {
		env->io.read_model = rf_model_file_read_cfg;
		env->io.read_model_ctx = d->cfg;
	}
	/* Folders need a models dir (checked when read); the HF cache is read by id. */
	env->io.read_model_dir = rf_model_dir_read_cfg;
	env->io.read_model_dir_ctx = d->cfg;
	env->io.read_ollama = rf_ollama_read_cfg;
	env->io.read_ollama_ctx = d->cfg;
	env->io.read_process = rf_process_stats_self;
	env->session = &d->session;
	env->data_disk_known = d->data_disk_known;
	env->data_disk_free_bytes = d->data_disk_free;
	if (d->last_scan_failed_s > 0)
		stats.last_failure_timestamp_s = (double)d->last_scan_failed_s;
	/* --hub: a stored answer serves on the loop; a lookup that needs the network runs on the
	 * thread pool (server/daemon/http.c), bounded by --hub-timeout-ms. */
	if (d->hub) {
		env->io.read_hub = rf_hub_read;
		env->io.read_hub_ctx = d->hub;
	}
	api_metrics_set_scan(d->metrics, &stats);
}

/* The connection limit (1024) needs more descriptors than the usual soft limit of 1024
 * (systemd's default, and most shells'): raise the soft limit toward the hard one, which is
 * what systemd leaves the hard limit high for. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= RF_FD_WANT)
		return;
	rl.rlim_cur = rl.rlim_max < RF_FD_WANT ? rl.rlim_max : RF_FD_WANT;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		rf_log_warn("cannot raise the open-file limit to %llu: at most about %llu "
			    "connections will be served",
			    (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_cur - 32);
}

static void close_handle(uv_handle_t *h)
{
	if (h->loop && !uv_is_closing(h))
		uv_close(h, NULL);
}

/* Closes everything so that uv_run returns. A scan still on the thread pool is abandoned:
 * waiting for a hung probe would break the promise to exit quickly. */
static void finish(struct rf_daemon *d)
{
	rf_http_stop(d);
	close_handle((uv_handle_t *)&d->sig_term);
	close_handle((uv_handle_t *)&d->sig_int);
	close_handle((uv_handle_t *)&d->sig_hup);
	close_handle((uv_handle_t *)&d->scan_timer);
	close_handle((uv_handle_t *)&d->watchdog_timer);
	close_handle((uv_handle_t *)&d->drain_timer);
	close_handle((uv_handle_t *)&d->store_timer);
	if (d->scan_job) {
		if (uv_cancel((uv_req_t *)d->scan_job) != 0) {
			rf_log_warn("a hardware scan is still running; exiting without it");
			d->scan_abandoned = true;
			uv_stop(&d->loop);
		}
	}
	if (rf_hostbench_cancel(d)) {
		rf_log_warn("the host measurement is still running; exiting without it");
		d->scan_abandoned = true;
		uv_stop(&d->loop);
	}
}

static void on_drain_tick(uv_timer_t *t)
{
	struct rf_daemon *d = t->data;

	if (d->in_flight <= 0 || uv_hrtime() >= d->stop_deadline_ns) {
		if (d->in_flight > 0)
			rf_log_warn("stopping with %d request(s) unfinished", d->in_flight);
		uv_timer_stop(t);
		finish(d);
	}
}

static void begin_stop(struct rf_daemon *d, const char *why)
{
	if (d->stopping) {
		rf_log_warn("second %s: stopping now", why);
		d->stop_deadline_ns = 0;
		return;
	}
	rf_log_info("%s: stopping (finishing %d in-flight request(s))", why, d->in_flight);
	d->stopping = true;
	d->stop_deadline_ns = uv_hrtime() + DRAIN_MAX_NS;
	rf_notify("STOPPING=1");
	uv_timer_stop(&d->scan_timer);
	rf_hub_stop(d->hub); /* a lookup under way gives up rather than hold the exit */
	rf_http_quiesce(d);
	/* Requests waiting for a rescan answer now: the scan may never come. */
	rf_http_resume_waiters(d, RF_E_UNAVAILABLE);
	uv_timer_start(&d->drain_timer, on_drain_tick, 0, DRAIN_TICK_MS);
}

static bool open_store(struct rf_daemon *d, bool retry);
static bool store_idle(const struct rf_daemon *d);

static void on_signal(uv_signal_t *s, int signum)
{
	struct rf_daemon *d = s->data;

	if (signum == SIGHUP) {
		rf_notify_reloading();
		/* A write running on the thread pool reads the loaded files: reload after it. */
		if (d->write_jobs > 0)
			d->reload_pending = true;
		else {
			/* A store that failed is tried again too; the reload then seeds it. */
			if (!d->store && store_idle(d) && !d->stopping)
				(void)open_store(d, true);
			rf_daemon_profiles_reload(d, false);
		}
		rf_notify("READY=1");
		return;
	}
	begin_stop(d, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void on_scan_timer(uv_timer_t *t)
{
	struct rf_daemon *d = t->data;

	if (d->scan_job)
		rf_log_warn("scan: the previous scan is still running; skipping this tick");
	rf_scan_start(d);
}

static void on_watchdog(uv_timer_t *t)
{
	(void)t;
	rf_notify("WATCHDOG=1");
}

/* Opens the store. A failure is logged (once per distinct reason when retrying) and kept
 * as the store's last error; returns whether it opened. */
static bool open_store(struct rf_daemon *d, bool retry)
{
	char err[512] = "";
	int rc = rf_store_open(d->cfg->db, rf_embed_migrations, &d->store, err, sizeof(err));

	if (rc < 0) {
		d->store = NULL;
		if (!retry || strcmp(err, d->store_open_err) != 0) {
			rf_store_note_error(0, err[0] ? err : rf_err_code(rc));
			rf_log_error(
				"store: %s: %s; serving without it (routes that need it answer "
				"503; retried every %d s and on SIGHUP)",
				d->cfg->db, err[0] ? err : rf_err_code(rc), STORE_CHECK_MS / 1000);
		}
		snprintf(d->store_open_err, sizeof(d->store_open_err), "%s", err);
		return false;
	}
	d->store_open_err[0] = '\0';
	rf_hub_set_store(d->hub, d->store);
	rf_log_info("store: %s%s (schema %d)", retry ? "reopened " : "", d->cfg->db,
		    rf_store_schema_version(d->store));
	return true;
}

/* Whether the store handle may be closed or replaced now: no scan or write on the thread
 * pool holds it. */
static bool store_idle(const struct rf_daemon *d)
{
	return d->write_jobs == 0 && !d->scan_job;
}

/* The store's watch: a store whose file was deleted or replaced goes unavailable (rather than
 * acknowledging writes that a restart would lose), and a store that is down is opened again,
 * its profiles seeded and the catalogs rebuilt with its custom profiles. */
static void store_watch(struct rf_daemon *d)
{
	if (d->stopping || !store_idle(d))
		return;
	if (d->store && rf_store_check_linked(d->store, NULL, 0) < 0) {
		rf_log_error("store: %s was deleted or replaced while open; going unavailable "
			     "until it can be opened again",
			     d->cfg->db);
		rf_store_close(d->store);
		d->store = NULL;
		rf_hub_set_store(d->hub, NULL);
		return;
	}
	if (!d->store && open_store(d, true))
		rf_daemon_profiles_reload(d, false);
}

static void on_store_timer(uv_timer_t *t)
{
	store_watch(t->data);
}

static void teardown(struct rf_daemon *d)
{
	rf_write_jobs_teardown(d);
	rf_hub_free(d->hub);
	rf_store_close(d->store);
	rf_profiles_free(d->profiles);
	rf_catalogs_unref(d->catalogs);
	rf_snapshot_free(d->snapshot);
	api_metrics_free(d->metrics);
	api_history_cache_free(d->history_cache);
	pthread_mutex_destroy(&d->history_mu);
	mcp_http_free(d->mcp);
	rf_openapi_json_free(d->openapi_tree);
}

/* Fills buf[0..n) from the kernel's random source: MCP session ids. Returns 0 or -1. */
static int random_bytes(void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = getrandom((char *)buf + got, n - got, 0);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r > 0)
			got += (size_t)r;
	}
	return 0;
}

/* Opens the MCP session table: Host checked when listening on loopback only, and the
 * --cors-origin values accepted as Origins. */
static struct mcp_http *open_mcp(const struct rf_config *cfg, const char *host)
{
	const char *origins[RF_CONFIG_MAX_LIST];

	for (int i = 0; i < cfg->n_cors_origins && i < RF_CONFIG_MAX_LIST; i++)
		origins[i] = cfg->cors_origins[i];
	return mcp_http_new(rf_host_is_loopback(host), origins, cfg->n_cors_origins, random_bytes);
}

int rf_serve(struct rf_config *cfg)
{
	struct rf_daemon *d;
	char host[128], err[512];
	int port, rc;

	rf_log_init();
	rf_log_set_level(cfg->log_level);
	if (rf_config_load_token(cfg, err, sizeof(err)) < 0) {
		rf_log_error("%s", err);
		return 1;
	}
	if (rf_listen_parse(cfg->listen, host, sizeof(host), &port) < 0)
		return 1;
	if (!rf_host_is_loopback(host) && !cfg->token[0] && !cfg->insecure) {
		rf_log_error("refusing to listen on %s without a token: anyone who can reach it "
			     "could use it. Pass --token-file FILE, or --insecure if the network "
			     "is private (a container's own namespace, say).",
			     cfg->listen);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* A file size limit (ulimit -f, systemd's LimitFSIZE=) reached by the database or the log
	 * must fail that write (the store answers 503), not kill the daemon. */
	signal(SIGXFSZ, SIG_IGN);
	raise_fd_limit();

	d = calloc(1, sizeof(*d));
	if (!d)
		return 1;
	d->cfg = cfg;
	d->started_ns = uv_hrtime();
	d->started_ms = wall_ms();
	d->metrics = api_metrics_new();
	pthread_mutex_init(&d->history_mu, NULL);
	d->history_cache = api_history_cache_new(history_lock, history_unlock, &d->history_mu);
	d->openapi_tree = rf_openapi_json();
	d->mcp = open_mcp(cfg, host);
	if (!d->metrics || !d->history_cache || !d->mcp || uv_loop_init(&d->loop) != 0) {
		api_metrics_free(d->metrics);
		api_history_cache_free(d->history_cache);
		pthread_mutex_destroy(&d->history_mu);
		mcp_http_free(d->mcp);
		rf_openapi_json_free(d->openapi_tree);
		free(d);
		return 1;
	}
	rf_store_log_install();
	open_store(d, false);
	if (cfg->hub[0]) {
		struct rf_hub_opts ho = {cfg->hub, cfg->hub_token, cfg->hub_timeout_ms};
		if (rf_hub_new(&ho, d->store, &d->hub, err, sizeof(err)) < 0) {
			rf_log_error("%s", err);
			teardown(d);
			uv_loop_close(&d->loop);
			free(d);
			return 1;
		}
	}
	rf_daemon_profiles_reload(d, true);
	if (!d->catalogs) {
		/* No profiles: an empty device table, so a scan never has to check. */
		if (rf_catalogs_from_profiles(NULL, &d->catalogs, err, sizeof(err)) < 0) {
			rf_log_error("%s", err);
			teardown(d);
			uv_loop_close(&d->loop);
			free(d);
			return 1;
		}
	}

	if (rf_http_start(d) < 0) {
		teardown(d);
		uv_loop_close(&d->loop);
		free(d);
		return 1;
	}
	uv_signal_init(&d->loop, &d->sig_term);
	uv_signal_init(&d->loop, &d->sig_int);
	uv_signal_init(&d->loop, &d->sig_hup);
	d->sig_term.data = d->sig_int.data = d->sig_hup.data = d;
	uv_signal_start(&d->sig_term, on_signal, SIGTERM);
	uv_signal_start(&d->sig_int, on_signal, SIGINT);
	uv_signal_start(&d->sig_hup, on_signal, SIGHUP);
	uv_timer_init(&d->loop, &d->scan_timer);
	uv_timer_init(&d->loop, &d->watchdog_timer);
	uv_timer_init(&d->loop, &d->drain_timer);
	uv_timer_init(&d->loop, &d->store_timer);
	d->scan_timer.data = d->watchdog_timer.data = d->drain_timer.data = d;
	d->store_timer.data = d;
	uv_timer_start(&d->store_timer, on_store_timer, STORE_CHECK_MS, STORE_CHECK_MS);
	/* The first scan starts now; the timer repeats it. */
	rf_scan_start(d);
	uv_timer_start(&d->scan_timer, on_scan_timer, (uint64_t)cfg->scan_interval_s * 1000,
		       (uint64_t)cfg->scan_interval_s * 1000);
	if (rf_notify_watchdog_usec(&d->watchdog_usec) > 0 && d->watchdog_usec >= 2000)
		uv_timer_start(&d->watchdog_timer, on_watchdog, d->watchdog_usec / 2000,
			       d->watchdog_usec / 2000);

	rf_log_info("rigfit %s listening on %s%s%s:%d (db %s, scan every %d s)", RIGFIT_VERSION,
		    strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", d->port,
		    cfg->db, cfg->scan_interval_s);
	{
		char status[256];
		snprintf(status, sizeof(status), "READY=1\nSTATUS=serving on port %d", d->port);
		rf_notify(status);
	}

	rc = uv_run(&d->loop, UV_RUN_DEFAULT);
	(void)rc;
	if (d->scan_abandoned) {
		/* The worker thread may still touch the daemon's memory: leave it all to exit. */
		rf_log_info("stopped");
		_exit(0);
	}
	uv_loop_close(&d->loop);
	teardown(d);
	free(d);
	rf_log_info("stopped");
	return 0;
}
