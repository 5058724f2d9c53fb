/*
 * Requests that write to the store run on the libuv thread pool, never on the loop thread: a
 * write may wait up to the busy timeout for another process's lock, and the loop must keep
 * answering every other request meanwhile. So do requests whose model only the Hub can answer
 * (--hub): the lookup may take up to --hub-timeout-ms (server/daemon/http.c sends them here).
 * The connection stays suspended (server/daemon/http.c) until the write finishes; the reply is
 * then sent from the loop thread.
 *
 * What the handler reads while it runs on the worker must not change under it, so a write job
 * owns copies of its request and of the sessions the loop keeps (MCP's; ModelForge's, whose
 * changes, set_custom_model's choice, are put back on the loop when the job ends), a
 * reference to the catalogs, and pins the rest: a snapshot that
 * a scan replaces is retired and freed only once no write job runs, a SIGHUP reload of the
 * profiles waits for them, and so does any reopening of the store. The profile hooks run
 * against the files loaded when the job started; a changed custom profile rebuilds the
 * catalogs back on the loop thread, where they are installed.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/mcp.h"
#include "core/err.h"
#include "server/daemon/daemon_priv.h"
#include "server/models/hub.h"
#include "server/log.h"

/* The request headers a handler may read (POST /mcp), copied: the worker never reads the
 * suspended connection. */
static const char *const job_header_names[] = {"Origin", "Host", "MCP-Protocol-Version",
					       "Mcp-Session-Id"};
#define JOB_HEADERS (sizeof(job_header_names) / sizeof(job_header_names[0]))

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
	bool hub_lookup;             /* counted in d->hub_jobs; cancelled when its client leaves */
	struct rf_hub_reader reader; /* the job's Hub lookups, cancellable */
	struct mcp_http *mcp;        /* POST /mcp: a copy of the request's session */
	/* ModelForge's session as the job found it ([0]) and the copy its route works on ([1]),
	 * put back on the loop when it ends (api_ft_session_apply); NULL: none. */
	struct api_ft_session *session;
	char *headers[JOB_HEADERS]; /* copies of job_header_names' values, or NULL */
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

static const char *job_header(void *ctx, const char *name)
{
	struct rf_write_job *job = ctx;

	for (size_t i = 0; i < JOB_HEADERS; i++)
		if (strcasecmp(job_header_names[i], name) == 0)
			return job->headers[i];
	return NULL;
}

static void job_free(struct rf_write_job *job)
{
	for (size_t i = 0; i < JOB_HEADERS; i++)
		free(job->headers[i]);
	mcp_http_free(job->mcp);
	free(job->session);
	free(job->path);
	free(job->query);
	free(job->body);
	free(job);
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
	if (job->hub_lookup)
		d->hub_jobs--;
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
	/* What the route changed in its copy of the session holds once its client has it. */
	if (job->ctx && job->session)
		api_ft_session_apply(&d->session, &job->session[0], &job->session[1]);
	if (job->ctx)
		rf_http_write_done(d, job->ctx, &job->reply, job->route);
	api_reply_reset(&job->reply);
	rf_catalogs_unref(job->catalogs);
	job_free(job);
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

int rf_write_start(struct rf_daemon *d, const struct api_request *req, void *ctx, bool hub_lookup,
		   struct rf_write_job **out)
{
	struct rf_write_job *job = calloc(1, sizeof(*job));
	bool copied;

	if (!job)
		return RF_E_NOMEM;
	job->d = d;
	job->ctx = ctx;
	job->work.data = job;
	job->path = copy_text(req->path, strlen(req->path));
	job->query = copy_text(req->query, strlen(req->query));
	job->body = req->body ? copy_text(req->body, req->body_len) : NULL;
	copied = job->path && job->query && (!req->body || job->body);
	for (size_t i = 0; i < JOB_HEADERS && copied && req->header; i++) {
		const char *v = req->header(req->header_ctx, job_header_names[i]);
		job->headers[i] = v ? copy_text(v, strlen(v)) : NULL;
		copied = !v || job->headers[i];
	}
	if (!copied) {
		job_free(job);
		return RF_E_NOMEM;
	}
	job->req = *req;
	job->req.path = job->path;
	job->req.query = job->query;
	job->req.body = job->body;
	job->req.header = job_header;
	job->req.header_ctx = job;
	rf_daemon_env(d, &job->env);
	/* The loop's MCP sessions change under a worker: it answers from a copy of its own. */
	job->env.mcp = NULL;
	if (d->mcp && strcmp(job->path, "/mcp") == 0)
		job->env.mcp = job->mcp = mcp_http_detach(d->mcp, &job->req);
	/* So is ModelForge's session (set_custom_model's choice): a copy, put back when done. */
	if (job->env.session) {
		job->session = malloc(2 * sizeof(*job->session));
		if (!job->session) {
			job_free(job);
			return RF_E_NOMEM;
		}
		memcpy(&job->session[0], job->env.session, sizeof(*job->session));
		memcpy(&job->session[1], job->env.session, sizeof(*job->session));
		job->env.session = &job->session[1];
	}
	if (job->env.io.read_hub == rf_hub_read) {
		job->reader.hub = job->env.io.read_hub_ctx;
		atomic_init(&job->reader.cancelled, false);
		job->env.io.read_hub = rf_hub_read_for;
		job->env.io.read_hub_ctx = &job->reader;
	}
	job->hub_lookup = hub_lookup;
	job->catalogs = rf_catalogs_ref(d->catalogs);
	job->env.cat.devices = job->catalogs ? &job->catalogs->table : NULL;
	job->env.cat.models = job->catalogs ? job->catalogs->models : NULL;
	job->env.cat.tiers = job->catalogs ? job->catalogs->tiers : NULL;
	job->env.cat.quality = job->catalogs ? job->catalogs->quality : NULL;
	job->env.profiles.ctx = job;
	job->env.profiles.check = job_hook_check;
	job->env.profiles.changed = job_hook_changed;
	if (uv_queue_work(&d->loop, &job->work, write_work, write_done) != 0) {
		rf_catalogs_unref(job->catalogs);
		job_free(job);
		return RF_E_UNAVAILABLE;
	}
	d->write_jobs++;
	if (hub_lookup)
		d->hub_jobs++;
	*out = job;
	return 0;
}

void rf_write_detach(struct rf_write_job *job)
{
	if (!job)
		return;
	job->ctx = NULL;
	/* A store write still lands (nothing acknowledged is lost); a lookup nobody waits for
	 * gives up, or never starts. */
	if (job->hub_lookup) {
		atomic_store(&job->reader.cancelled, true);
		uv_cancel((uv_req_t *)&job->work);
	}
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
