/*
 * Requests that write to the store run on the libuv thread pool, never on the loop thread: a
 * write may wait up to the busy timeout for another process's lock, and the loop must keep
 * answering every other request meanwhile. So do requests whose model only the Hub can answer
 * (--hub): the lookup may take up to --hub-timeout-ms (server/http.c sends them here). The connection stays suspended (server/http.c)
 * until the write finishes; the reply is then sent from the loop thread.
 *
 * What the handler reads while it runs on the worker must not change under it, so a write job
 * owns copies of its request, a reference to the catalogs, and pins the rest: a snapshot that
 * a scan replaces is retired and freed only once no write job runs, a SIGHUP reload of the
 * profiles waits for them, and so does any reopening of the store. The profile hooks run
 * against the files loaded when the job started; a changed custom profile rebuilds the
 * catalogs back on the loop thread, where they are installed.
 */
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "server/daemon_priv.h"
#include "server/log.h"

struct rf_write_job {
	uv_work_t work;
	struct rf_daemon *d;
	void *ctx; /* the waiting request; NULL once its connection went away */
	struct api_env env;
	struct api_request req;
	char *path, *query, *body;
	struct rf_catalogs *catalogs; /* a reference taken when the job starts */
	struct api_reply reply;
	const struct api_route *route;
	bool profiles_changed;
};

/* A retired snapshot, waiting for the write jobs that may read it. */
struct rf_retired {
	struct api_snapshot *s;
	struct rf_retired *next;
};

/* api_profile_hooks.check on the worker: builds the catalogs with pending, installs none. */
static int job_hook_check(void *ctx, const struct api_profile *pending, char *msg, size_t msglen)
{
	struct rf_write_job *job = ctx;

	return rf_daemon_profiles_check(job->d, pending, msg, msglen);
}

/* api_profile_hooks.changed on the worker: the catalogs are rebuilt on the loop thread. */
static void job_hook_changed(void *ctx)
{
	struct rf_write_job *job = ctx;

	job->profiles_changed = true;
}

static void write_work(uv_work_t *w)
{
	struct rf_write_job *job = w->data;

	job->route = api_dispatch(&job->env, &job->req, &job->reply);
}

static void retired_free_all(struct rf_daemon *d)
{
	while (d->retired) {
		struct rf_retired *next = d->retired->next;
		rf_snapshot_free(d->retired->s);
		free(d->retired);
		d->retired = next;
	}
}

static void write_done(uv_work_t *w, int status)
{
	struct rf_write_job *job = w->data;
	struct rf_daemon *d = job->d;

	d->write_jobs--;
	if (job->profiles_changed)
		rf_daemon_profiles_changed(d);
	if (d->write_jobs == 0) {
		retired_free_all(d);
		if (d->reload_pending) {
			d->reload_pending = false;
			rf_daemon_profiles_reload(d, false);
		}
	}
	if (status == UV_ECANCELED) {
		api_reply_reset(&job->reply);
		api_error(&job->reply, RF_E_UNAVAILABLE, NULL, "the daemon is stopping");
	}
	if (job->ctx)
		rf_http_write_done(d, job->ctx, &job->reply, job->route);
	api_reply_reset(&job->reply);
	rf_catalogs_unref(job->catalogs);
	free(job->path);
	free(job->query);
	free(job->body);
	free(job);
}

/* Copies n bytes of s into a new NUL-terminated string, or NULL. */
static char *copy_text(const char *s, size_t n)
{
	char *c = malloc(n + 1);

	if (c) {
		if (n)
			memcpy(c, s, n);
		c[n] = '\0';
	}
	return c;
}

bool rf_write_route(const struct api_route *route, enum api_method method)
{
	return route && (route->flags & API_ROUTE_STORE_WRITE) && route->method == method;
}

int rf_write_start(struct rf_daemon *d, const struct api_request *req, void *ctx,
		   struct rf_write_job **out)
{
	struct rf_write_job *job = calloc(1, sizeof(*job));

	if (!job)
		return RF_E_NOMEM;
	job->d = d;
	job->ctx = ctx;
	job->work.data = job;
	job->path = copy_text(req->path, strlen(req->path));
	job->query = copy_text(req->query, strlen(req->query));
	job->body = req->body ? copy_text(req->body, req->body_len) : NULL;
	if (!job->path || !job->query || (req->body && !job->body)) {
		free(job->path);
		free(job->query);
		free(job->body);
		free(job);
		return RF_E_NOMEM;
	}
	job->req = *req;
	job->req.path = job->path;
	job->req.query = job->query;
	job->req.body = job->body;
	rf_daemon_env(d, &job->env);
	job->catalogs = rf_catalogs_ref(d->catalogs);
	job->env.devices = job->catalogs ? &job->catalogs->table : NULL;
	job->env.models = job->catalogs ? job->catalogs->models : NULL;
	job->env.profiles.ctx = job;
	job->env.profiles.check = job_hook_check;
	job->env.profiles.changed = job_hook_changed;
	if (uv_queue_work(&d->loop, &job->work, write_work, write_done) != 0) {
		rf_catalogs_unref(job->catalogs);
		free(job->path);
		free(job->query);
		free(job->body);
		free(job);
		return RF_E_UNAVAILABLE;
	}
	d->write_jobs++;
	*out = job;
	return 0;
}

void rf_write_detach(struct rf_write_job *job)
{
	if (job)
		job->ctx = NULL;
}

void rf_snapshot_retire(struct rf_daemon *d, struct api_snapshot *s)
{
	struct rf_retired *node;

	if (!s)
		return;
	if (d->write_jobs == 0) {
		rf_snapshot_free(s);
		return;
	}
	node = malloc(sizeof(*node));
	if (!node) {
		/* Freeing it now could pull it from under a running write: keep it, once. */
		rf_log_warn("out of memory retiring a snapshot; it is kept until exit");
		return;
	}
	node->s = s;
	node->next = d->retired;
	d->retired = node;
}

void rf_write_jobs_teardown(struct rf_daemon *d)
{
	retired_free_all(d);
}
