/*
 * Loading the profile files (see profiles.h). Files are parsed with cJSON; on a syntax error
 * the byte offset cJSON reports is turned into a line number so the log points at the line.
 * The catalogs are then built from the parsed files by the loaders of api/ (device_json.c,
 * model_json.c, catalog/tiers.c, catalog/quality.c).
 */
#include "server/profiles/profiles.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/catalog/quality.h"
#include "api/device_json.h"
#include "api/model_json.h"
#include "core/err.h"
#include "server/detect/readfile.h"

static int json_name_filter(const struct dirent *e)
{
	size_t n = strlen(e->d_name);
	return e->d_name[0] != '.' && n > 5 && strcmp(e->d_name + n - 5, ".json") == 0;
}

static int line_of(const char *buf, size_t off)
{
	int line = 1;
	for (size_t i = 0; i < off && buf[i]; i++)
		if (buf[i] == '\n')
			line++;
	return line;
}

void rf_profiles_free(struct rf_profiles *p)
{
	if (!p)
		return;
	for (int i = 0; i < p->n_files; i++)
		cJSON_Delete(p->files[i].doc);
	free(p);
}

const cJSON *rf_profiles_get(const struct rf_profiles *p, const char *name)
{
	for (int i = 0; p && i < p->n_files; i++)
		if (strcmp(p->files[i].name, name) == 0)
			return p->files[i].doc;
	return NULL;
}

int rf_profile_parse(const char *buf, size_t len, cJSON **doc, char *err, size_t errlen)
{
	const char *end = NULL;
	cJSON *d;

	/* len + 1: cJSON wants the terminating NUL inside the length it is given. */
	d = cJSON_ParseWithLengthOpts(buf, len + 1, &end, 1);
	if (!d || (!cJSON_IsObject(d) && !cJSON_IsArray(d))) {
		size_t off = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
		if (!d && cJSON_GetErrorPtr())
			off = (size_t)(cJSON_GetErrorPtr() - buf);
		snprintf(err, errlen, "%d: %s", line_of(buf, off < len ? off : len),
			 d ? "the top level must be an object or an array" : "invalid JSON");
		cJSON_Delete(d);
		return RF_E_PARSE;
	}
	*doc = d;
	return 0;
}

int rf_profiles_load(const char *dir, struct rf_profiles **out, char *err, size_t errlen)
{
	struct dirent **list = NULL;
	struct rf_profiles *p = NULL;
	int n, rc = 0;

	n = scandir(dir, &list, json_name_filter, alphasort);
	if (n < 0) {
		snprintf(err, errlen, "%.300s: cannot list the profiles directory", dir);
		return RF_E_NOT_FOUND;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		rc = RF_E_NOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (n > RF_PROFILES_MAX_FILES) {
		rc = RF_E_TOO_LARGE;
		snprintf(err, errlen, "%.300s: more than %d profile files", dir,
			 RF_PROFILES_MAX_FILES);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		char rel[4400];
		char *buf = NULL;
		size_t len = 0;
		cJSON *doc = NULL;

		snprintf(rel, sizeof(rel), "/%s", list[i]->d_name);
		rc = rf_read_under_root(dir, rel, RF_PROFILES_MAX_BYTES, &buf, &len);
		if (rc < 0) {
			snprintf(err, errlen, "%.300s/%.120s: cannot read (%s)", dir,
				 list[i]->d_name, rf_err_code(rc));
			goto out;
		}
		rc = rf_profile_parse(buf, len, &doc, err, errlen);
		if (rc < 0) {
			char why[200];
			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "%.300s/%.120s:%s", dir, list[i]->d_name, why);
			free(buf);
			goto out;
		}
		free(buf);
		snprintf(p->files[p->n_files].name, sizeof(p->files[0].name), "%s",
			 list[i]->d_name);
		p->files[p->n_files++].doc = doc;
	}
out:
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
	if (rc < 0) {
		rf_profiles_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int rf_catalogs_from_docs(const cJSON *devices, const cJSON *models, struct rf_catalogs **out,
			  char *err, size_t errlen)
{
	struct rf_catalogs *c = calloc(1, sizeof(*c));
	int rc = 0;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return RF_E_NOMEM;
	}
	c->refs = 1;
	if (devices && (rc = api_device_table_from_json(devices, &c->table, err, errlen)) < 0)
		goto fail;
	if (models) {
		char why[400];
		rc = model_catalog_from_json(models, &c->models, why, sizeof(why));
		if (rc < 0) {
			snprintf(err, errlen, "models.json: %s", why);
			goto fail;
		}
	} else if (!(c->models = calloc(1, sizeof(*c->models)))) {
		snprintf(err, errlen, "out of memory");
		rc = RF_E_NOMEM;
		goto fail;
	}
	*out = c;
	return 0;
fail:
	device_table_clear(&c->table);
	free(c);
	return rc;
}

int rf_catalogs_from_profiles(const struct rf_profiles *p, struct rf_catalogs **out, char *err,
			      size_t errlen)
{
	const cJSON *tiers = rf_profiles_get(p, "tiers.json");
	const cJSON *quality = rf_profiles_get(p, "quality.json");
	struct rf_catalogs *c = NULL;
	int rc = rf_catalogs_from_docs(rf_profiles_get(p, "devices.json"),
				       rf_profiles_get(p, "models.json"), &c, err, errlen);

	if (rc < 0)
		return rc;
	if ((tiers && !(c->tiers = malloc(sizeof(*c->tiers)))) ||
	    (quality && !(c->quality = malloc(sizeof(*c->quality))))) {
		snprintf(err, errlen, "out of memory");
		rc = RF_E_NOMEM;
	} else if (tiers) {
		rc = api_tiers_from_json(tiers, c->tiers, err, errlen);
	}
	if (rc == 0 && quality)
		rc = api_quality_from_json(quality, c->quality, err, errlen);
	if (rc < 0) {
		rf_catalogs_unref(c);
		return rc;
	}
	*out = c;
	return 0;
}

struct rf_catalogs *rf_catalogs_ref(struct rf_catalogs *c)
{
	if (c)
		c->refs++;
	return c;
}

void rf_catalogs_unref(struct rf_catalogs *c)
{
	if (!c || --c->refs > 0)
		return;
	device_table_clear(&c->table);
	model_catalog_free(c->models);
	free(c->tiers);
	free(c->quality);
	free(c);
}
