/*
 * The daemon's profiles: the files under --profiles and the custom profiles of the store,
 * merged into the refcounted catalogs that requests and scans read (see profiles_merge.c).
 *
 * At start and on SIGHUP the files are loaded all or nothing: a broken file is logged with its
 * name and line and the last good set stays in use, custom profiles included. After a good
 * load the files' entries are seeded into the store as the shipped rows. When a client PUTs or
 * DELETEs a custom profile, the profile routes call the hooks below: check (would the catalogs
 * still build with it?) before the write, and changed (rebuild and install) after it, so the
 * next request, of any route, sees the change. Everything here runs on the loop thread.
 */
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "server/daemon/daemon_priv.h"
#include "server/log.h"

/* Builds the catalogs of the files p and the store's custom rows, with pending (see
 * rf_catalogs_build). Returns 0 and the catalogs in *out, or a negative rf_err with err set. */
static int build(struct rf_daemon *d, const struct rf_profiles *p,
		 const struct api_profile *pending, struct rf_catalogs **out, int *skipped,
		 char *err, size_t errlen)
{
	struct api_profile_filter f;
	struct api_profile *rows = NULL;
	int n = 0, rc = 0;

	memset(&f, 0, sizeof(f));
	snprintf(f.source, sizeof(f.source), "custom");
	f.limit = RF_STORE_MAX_CUSTOM_PROFILES;
	if (d->store)
		rc = rf_store_profile_list(d->store, &f, &rows, &n);
	if (rc < 0) {
		if (pending) {
			snprintf(err, errlen, "cannot read the custom profiles (%s)",
				 rf_err_code(rc));
			return rc;
		}
		rf_log_warn("profiles: cannot read the custom profiles from the store (%s); "
			    "building the catalogs without them",
			    rf_err_code(rc));
		rows = NULL;
		n = 0;
	}
	rc = rf_catalogs_build(p, rows, n, pending, out, skipped, err, errlen);
	api_profiles_free(rows, n);
	return rc;
}

/* Writes the shipped rows of p into the store. A failure is logged: the catalogs are built
 * from the files, so requests do not depend on it. */
static void seed(struct rf_daemon *d, const struct rf_profiles *p)
{
	struct rf_profile_seed *rows = NULL;
	int n = 0, shadowed = 0, rc;

	if (!d->store)
		return;
	rc = rf_profile_seeds(p, &rows, &n);
	if (rc == 0)
		rc = rf_store_profiles_seed(d->store, rows, n, &shadowed);
	rf_profile_seeds_free(rows, n);
	if (rc < 0)
		rf_log_warn("profiles: cannot seed the store (%s); GET /api/profiles lists what "
			    "it held before",
			    rf_err_code(rc));
	else if (shadowed > 0)
		rf_log_warn("profiles: %d shipped profile id(s) are held by custom profiles; the "
			    "store keeps the custom rows and the catalogs use the shipped entries",
			    shadowed);
}

void rf_daemon_profiles_reload(struct rf_daemon *d, bool at_start)
{
	struct rf_profiles *p = NULL;
	struct rf_catalogs *catalogs = NULL;
	char err[512];
	int skipped = 0;
	int rc = rf_profiles_load(d->cfg->profiles, &p, err, sizeof(err));

	if (rc < 0) {
		if (!at_start) {
			rf_log_error("profiles: %s; keeping the %d file(s) loaded before", err,
				     d->profiles ? d->profiles->n_files : 0);
			return;
		}
		rf_log_warn("profiles: %s; starting without them", err);
		/* The custom profiles still count. */
		if (build(d, NULL, NULL, &catalogs, &skipped, err, sizeof(err)) == 0) {
			rf_catalogs_unref(d->catalogs);
			d->catalogs = catalogs;
		}
		return;
	}
	rc = build(d, p, NULL, &catalogs, &skipped, err, sizeof(err));
	if (rc < 0) {
		rf_log_error("profiles: %s; keeping the %d file(s) loaded before", err,
			     d->profiles ? d->profiles->n_files : 0);
		rf_profiles_free(p);
		return;
	}
	rf_profiles_free(d->profiles);
	d->profiles = p;
	rf_catalogs_unref(d->catalogs);
	d->catalogs = catalogs;
	seed(d, p);
	rf_log_info("profiles: loaded %d file(s) from %s (%d device and %d model profiles%s)",
		    p->n_files, d->cfg->profiles, catalogs->table.n, (int)catalogs->models->n,
		    skipped ? ", some custom ones skipped" : "");
}

int rf_daemon_profiles_check(struct rf_daemon *d, const struct api_profile *pending, char *msg,
			     size_t msglen)
{
	struct rf_catalogs *c = NULL;
	int rc = build(d, d->profiles, pending, &c, NULL, msg, msglen);

	rf_catalogs_unref(c);
	return rc;
}

/* api_profile_hooks.check: builds the catalogs with pending, installs nothing. */
static int hook_check(void *ctx, const struct api_profile *pending, char *msg, size_t msglen)
{
	return rf_daemon_profiles_check(ctx, pending, msg, msglen);
}

/* Rebuilds and installs the catalogs. A scan or a write that holds the old ones keeps its
 * reference; the next request sees the new ones. */
void rf_daemon_profiles_changed(struct rf_daemon *d)
{
	struct rf_catalogs *c = NULL;
	char err[512];
	int skipped = 0;

	if (build(d, d->profiles, NULL, &c, &skipped, err, sizeof(err)) < 0) {
		rf_log_error("profiles: %s; keeping the catalogs in use", err);
		return;
	}
	rf_catalogs_unref(d->catalogs);
	d->catalogs = c;
	rf_log_info("profiles: custom profiles changed (%d device and %d model profiles)",
		    c->table.n, (int)c->models->n);
}

/* api_profile_hooks.changed */
static void hook_changed(void *ctx)
{
	rf_daemon_profiles_changed(ctx);
}

struct api_profile_hooks rf_daemon_profile_hooks(struct rf_daemon *d)
{
	struct api_profile_hooks h = {
		.ctx = d,
		.check = hook_check,
		.changed = hook_changed,
	};
	return h;
}
