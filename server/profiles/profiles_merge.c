/*
 * The catalogs that requests see: the profile files plus the custom profiles of the store,
 * merged and checked by the very parsers that load devices.json and models.json, so that a
 * custom device or model is held to the rules of a shipped one (every field checked, and no
 * two entries answering to one name). Also the other direction: the files' entries as the
 * shipped rows seeded into the store.
 *
 * The merged documents are built from cJSON references to the files' entries and the custom
 * bodies, so nothing is copied; a build is a few milliseconds for a few hundred entries. A
 * custom row that breaks the build is found by adding the rows one at a time, and skipped.
 */
#include "server/profiles/profiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/profiles.h"
#include "core/err.h"
#include "server/log.h"

/* The custom bodies of one build, parsed once. */
struct merge {
	const cJSON *file_devices; /* devices.json's "devices" array, or NULL */
	const cJSON *file_models;  /* models.json's "models" array, or NULL */
	cJSON **bodies;            /* [i]: row i's parsed body, NULL when it was skipped */
	const char **kinds;        /* [i]: row i's kind */
};

/* Adds a reference to every element of arr (NULL: none) to dst. Returns false when out of
 * memory. */
static bool add_refs(cJSON *dst, const cJSON *arr)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, arr)
	{
		if (!cJSON_AddItemReferenceToArray(dst, (cJSON *)e))
			return false;
	}
	return true;
}

/* Builds the catalogs of the files and the rows in use[0..n) (indexes into m). Returns 0 and
 * the catalogs in *out, or a negative rf_err with the reason in err. */
static int try_build(const struct merge *m, const int *use, int n, struct rf_catalogs **out,
		     char *err, size_t errlen)
{
	cJSON *ddoc = cJSON_CreateObject(), *mdoc = cJSON_CreateObject();
	cJSON *darr = ddoc ? cJSON_AddArrayToObject(ddoc, "devices") : NULL;
	cJSON *marr = mdoc ? cJSON_AddArrayToObject(mdoc, "models") : NULL;
	int rc = RF_E_NOMEM;

	if (!darr || !marr || !add_refs(darr, m->file_devices) || !add_refs(marr, m->file_models))
		goto out;
	for (int i = 0; i < n; i++) {
		cJSON *dst = strcmp(m->kinds[use[i]], "device") == 0 ? darr : marr;
		if (!cJSON_AddItemReferenceToArray(dst, m->bodies[use[i]]))
			goto out;
	}
	/* An empty devices array is refused by its parser: no devices is no document. */
	rc = rf_catalogs_from_docs(cJSON_GetArraySize(darr) > 0 ? ddoc : NULL, mdoc, out, err,
				   errlen);
out:
	if (rc == RF_E_NOMEM && err && errlen && !err[0])
		snprintf(err, errlen, "out of memory");
	cJSON_Delete(ddoc);
	cJSON_Delete(mdoc);
	return rc;
}

/* Parses the bodies of the rows that take part (device and model rows, the pending one
 * instead of the stored row of its id) into m; writes their indexes to use and their count to
 * *n_use. The pending row, if any, is the last index (n). Returns 0 or RF_E_NOMEM. */
static int merge_parse(struct merge *m, const struct api_profile *custom, int n,
		       const struct api_profile *pending, int *use, int *n_use, int *skipped)
{
	int k = 0;

	for (int i = 0; i <= n; i++) {
		const struct api_profile *row = i < n ? &custom[i] : pending;
		bool usable;
		if (!row)
			break;
		usable = strcmp(row->kind, "device") == 0 || strcmp(row->kind, "model") == 0;
		if (!usable || (i < n && pending && strcmp(row->id, pending->id) == 0))
			continue;
		m->kinds[i] = row->kind;
		m->bodies[i] = row->body ? cJSON_Parse(row->body) : NULL;
		if (!cJSON_IsObject(m->bodies[i])) {
			if (i == n)
				return RF_E_INVALID_VALUE;
			if (!pending)
				rf_log_warn("profiles: custom profile %s is not a JSON object; "
					    "skipping it",
					    row->id);
			cJSON_Delete(m->bodies[i]);
			m->bodies[i] = NULL;
			(*skipped)++;
			continue;
		}
		use[k++] = i;
	}
	*n_use = k;
	return 0;
}

int rf_catalogs_build(const struct rf_profiles *p, const struct api_profile *custom, int n,
		      const struct api_profile *pending, struct rf_catalogs **out, int *n_skipped,
		      char *err, size_t errlen)
{
	struct merge m = {0};
	struct rf_catalogs *files = NULL, *c = NULL;
	int *use = NULL, n_use = 0, kept = 0, skipped = 0, rc;
	char why[512];

	if (err && errlen)
		err[0] = '\0';
	/* The files alone first: their own errors name them, and they are never skipped. */
	rc = rf_catalogs_from_profiles(p, &files, err, errlen);
	if (rc < 0)
		return rc;
	if (n <= 0 && !pending) {
		*out = files;
		if (n_skipped)
			*n_skipped = 0;
		return 0;
	}
	if (n < 0)
		n = 0;
	m.file_devices =
		cJSON_GetObjectItemCaseSensitive(rf_profiles_get(p, "devices.json"), "devices");
	m.file_models =
		cJSON_GetObjectItemCaseSensitive(rf_profiles_get(p, "models.json"), "models");
	m.bodies = calloc((size_t)n + 1, sizeof(*m.bodies));
	m.kinds = calloc((size_t)n + 1, sizeof(*m.kinds));
	use = calloc((size_t)n + 1, sizeof(*use));
	if (!m.bodies || !m.kinds || !use) {
		rc = RF_E_NOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	rc = merge_parse(&m, custom, n, pending, use, &n_use, &skipped);
	if (rc < 0) {
		snprintf(err, errlen, "%s", rc == RF_E_NOMEM ? "out of memory" : "not an object");
		goto out;
	}
	/* Usually everything joins at once. */
	if (try_build(&m, use, n_use, &c, why, sizeof(why)) == 0)
		goto done;
	/* Else the rows one at a time, the pending one last: a row that breaks the build is
	 * skipped, except the pending one, whose reason is the answer. */
	for (int i = 0; i < n_use; i++) {
		struct rf_catalogs *t = NULL;
		bool is_pending = pending && use[i] == n;
		use[kept] = use[i];
		rc = try_build(&m, use, kept + 1, &t, why, sizeof(why));
		if (rc == RF_E_NOMEM) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		if (rc < 0 && is_pending) {
			snprintf(err, errlen, "%s does not fit with the other profiles: %s",
				 pending->id, why);
			goto out;
		}
		if (rc < 0) {
			if (!pending)
				rf_log_warn("profiles: custom profile %s skipped: %s",
					    custom[use[i]].id, why);
			skipped++;
			continue;
		}
		rf_catalogs_unref(c);
		c = t;
		kept++;
	}
	if (!c) {
		/* Every row was skipped: the files alone. */
		c = files;
		files = NULL;
	}
done:
	/* Custom rows are devices and models only: tiers and quality are the files'. */
	if (files && c != files) {
		c->tiers = files->tiers;
		c->quality = files->quality;
		files->tiers = NULL;
		files->quality = NULL;
	}
	rc = 0;
	*out = c;
	c = NULL;
	if (n_skipped)
		*n_skipped = skipped;
out:
	rf_catalogs_unref(c);
	rf_catalogs_unref(files);
	for (int i = 0; m.bodies && i <= n; i++)
		cJSON_Delete(m.bodies[i]);
	free(m.bodies);
	free(m.kinds);
	free(use);
	return rc;
}

void rf_profile_seeds_free(struct rf_profile_seed *rows, int n)
{
	if (!rows)
		return;
	for (int i = 0; i < n; i++)
		free(rows[i].body);
	free(rows);
}

int rf_profile_seeds(const struct rf_profiles *p, struct rf_profile_seed **rows, int *n)
{
	static const struct {
		const char *file, *member, *kind;
	} srcs[] = {
		{"devices.json", "devices", "device"},
		{"models.json", "models", "model"},
		{"tiers.json", "tiers", "tier"},
	};
	struct rf_profile_seed *arr = NULL;
	int count = 0, cap = 0;

	for (size_t s = 0; s < sizeof(srcs) / sizeof(srcs[0]); s++) {
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(
			rf_profiles_get(p, srcs[s].file), srcs[s].member);
		cap += cJSON_IsArray(list) ? cJSON_GetArraySize(list) : 0;
	}
	arr = calloc((size_t)cap + 1, sizeof(*arr));
	if (!arr)
		return RF_E_NOMEM;
	for (size_t s = 0; s < sizeof(srcs) / sizeof(srcs[0]); s++) {
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(
			rf_profiles_get(p, srcs[s].file), srcs[s].member);
		const cJSON *e;
		if (!cJSON_IsArray(list))
			continue;
		cJSON_ArrayForEach(e, list)
		{
			const cJSON *id = cJSON_GetObjectItemCaseSensitive(e, "id");
			struct rf_profile_seed *r = &arr[count];
			if (count >= cap)
				break;
			if (!cJSON_IsString(id) ||
			    api_profile_id_of(id->valuestring, r->id, sizeof(r->id)) < 0) {
				rf_log_warn("profiles: %s: an entry without a usable id is not "
					    "seeded into the store",
					    srcs[s].file);
				continue;
			}
			r->kind = srcs[s].kind;
			r->body = cJSON_PrintUnformatted(e);
			if (!r->body) {
				rf_profile_seeds_free(arr, count);
				return RF_E_NOMEM;
			}
			count++;
		}
	}
	*rows = arr;
	*n = count;
	return 0;
}
