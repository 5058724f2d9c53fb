/*
 * profiles/tiers.json -> struct api_tier_table (see tiers.h), and a tier's settings back to
 * JSON. Every member read is checked and the first bad one is named with its tier ("tiers.json:
 * tier 2 (mid_range): settings.max_seq_length: a whole number from 1 to 1048576"), so a broken
 * file fails the load instead of a request.
 */
#include "api/catalog/tiers.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

#define TIER_NUMBER_MAX 1048576

__attribute__((format(printf, 4, 5))) static int fail(char *why, size_t len, int rc,
						      const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(why, len, "tiers.json: ");

	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < len)
		vsnprintf(why + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return rc;
}

/* Copies the string v into dst[cap]; false when v is not a string of 1..cap-1 bytes. */
static bool copy_str(const cJSON *v, char *dst, size_t cap)
{
	size_t n;

	if (!cJSON_IsString(v) || !v->valuestring)
		return false;
	n = strlen(v->valuestring);
	if (n == 0 || n >= cap)
		return false;
	memcpy(dst, v->valuestring, n + 1);
	return true;
}

/* A whole number in [1, TIER_NUMBER_MAX]; false otherwise. */
static bool whole(const cJSON *v, int *out)
{
	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 1 ||
	    v->valuedouble > TIER_NUMBER_MAX || v->valuedouble != floor(v->valuedouble))
		return false;
	*out = (int)v->valuedouble;
	return true;
}

static int settings(const cJSON *obj, struct api_tier_settings *s, const char *where, char *why,
		    size_t len)
{
	static const char *const numbers[] = {"per_device_train_batch_size",
					      "gradient_accumulation_steps", "max_seq_length"};
	int *const slots[] = {&s->per_device_train_batch_size, &s->gradient_accumulation_steps,
			      &s->max_seq_length};
	const cJSON *m;

	if (!cJSON_IsObject(obj))
		return fail(why, len, RF_E_INVALID_VALUE, "%s: settings: an object", where);
	cJSON_ArrayForEach(m, obj)
	{
		bool known = strcmp(m->string, "use_4bit") == 0 || strcmp(m->string, "bf16") == 0;
		for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++)
			known = known || strcmp(m->string, numbers[i]) == 0;
		if (!known)
			return fail(why, len, RF_E_INVALID_VALUE, "%s: settings.%s: not a setting",
				    where, m->string);
	}
	m = cJSON_GetObjectItemCaseSensitive(obj, "use_4bit");
	if (!cJSON_IsBool(m))
		return fail(why, len, RF_E_INVALID_VALUE, "%s: settings.use_4bit: true or false",
			    where);
	s->use_4bit = cJSON_IsTrue(m);
	m = cJSON_GetObjectItemCaseSensitive(obj, "bf16");
	if (m && !cJSON_IsBool(m))
		return fail(why, len, RF_E_INVALID_VALUE, "%s: settings.bf16: true or false",
			    where);
	s->has_bf16 = m != NULL;
	s->bf16 = cJSON_IsTrue(m);
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
		if (!whole(cJSON_GetObjectItemCaseSensitive(obj, numbers[i]), slots[i]))
			return fail(why, len, RF_E_INVALID_VALUE,
				    "%s: settings.%s: a whole number from 1 to %d", where,
				    numbers[i], TIER_NUMBER_MAX);
	}
	return 0;
}

static int models(const cJSON *obj, struct api_tier *t, const char *where, char *why, size_t len)
{
	const cJSON *task;

	if (!obj)
		return 0;
	if (!cJSON_IsObject(obj))
		return fail(why, len, RF_E_INVALID_VALUE, "%s: models: an object of task: [ids]",
			    where);
	cJSON_ArrayForEach(task, obj)
	{
		struct api_tier_models *tm;
		const cJSON *id;
		if (t->n_tasks >= API_TIER_TASKS_MAX)
			return fail(why, len, RF_E_TOO_LARGE, "%s: models: more than %d tasks",
				    where, API_TIER_TASKS_MAX);
		tm = &t->tasks[t->n_tasks];
		if (strlen(task->string) == 0 || strlen(task->string) >= sizeof(tm->task) ||
		    api_tier_models(t, task->string))
			return fail(why, len, RF_E_INVALID_VALUE,
				    "%s: models: task '%.48s' is empty, too long or repeated",
				    where, task->string);
		memcpy(tm->task, task->string, strlen(task->string) + 1);
		if (!cJSON_IsArray(task))
			return fail(why, len, RF_E_INVALID_VALUE,
				    "%s: models.%s: an array of model ids", where, tm->task);
		cJSON_ArrayForEach(id, task)
		{
			if (tm->n >= API_TIER_MODELS_MAX)
				return fail(why, len, RF_E_TOO_LARGE,
					    "%s: models.%s: more than %d models", where, tm->task,
					    API_TIER_MODELS_MAX);
			if (!copy_str(id, tm->ids[tm->n], sizeof(tm->ids[0])))
				return fail(why, len, RF_E_INVALID_VALUE,
					    "%s: models.%s: ids are strings of 1 to %d bytes",
					    where, tm->task, MODEL_ID_LEN - 1);
			tm->n++;
		}
		t->n_tasks++;
	}
	return 0;
}

int api_tiers_from_json(const cJSON *doc, struct api_tier_table *out, char *why, size_t why_len)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "tiers"), *e;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsObject(doc) || !cJSON_IsArray(arr))
		return fail(why, why_len, RF_E_INVALID_VALUE, "tiers: an array of tiers");
	if (cJSON_GetArraySize(arr) > API_TIERS_MAX)
		return fail(why, why_len, RF_E_TOO_LARGE, "tiers: more than %d", API_TIERS_MAX);
	cJSON_ArrayForEach(e, arr)
	{
		struct api_tier *t = &out->tiers[out->n];
		char where[64];
		snprintf(where, sizeof(where), "tier %d", out->n + 1);
		if (!cJSON_IsObject(e) ||
		    !copy_str(cJSON_GetObjectItemCaseSensitive(e, "id"), t->id, sizeof(t->id)))
			return fail(why, why_len, RF_E_INVALID_VALUE,
				    "%s: id: a string of 1 to %d bytes", where,
				    API_TIER_ID_LEN - 1);
		if (api_tier_find(out, t->id))
			return fail(why, why_len, RF_E_INVALID_VALUE, "%s (%s): id: repeated",
				    where, t->id);
		snprintf(where, sizeof(where), "tier %d (%s)", out->n + 1, t->id);
		rc = settings(cJSON_GetObjectItemCaseSensitive(e, "settings"), &t->settings, where,
			      why, why_len);
		if (rc == 0)
			rc = models(cJSON_GetObjectItemCaseSensitive(e, "models"), t, where, why,
				    why_len);
		if (rc < 0) {
			memset(out, 0, sizeof(*out));
			return rc;
		}
		out->n++;
	}
	return 0;
}

const struct api_tier *api_tier_find(const struct api_tier_table *t, const char *id)
{
	for (int i = 0; t && i < t->n; i++) {
		if (strcmp(t->tiers[i].id, id) == 0)
			return &t->tiers[i];
	}
	return NULL;
}

const struct api_tier_models *api_tier_models(const struct api_tier *t, const char *task)
{
	for (int i = 0; t && i < t->n_tasks; i++) {
		if (strcmp(t->tasks[i].task, task) == 0)
			return &t->tasks[i];
	}
	return NULL;
}

cJSON *api_tier_settings_json(const struct api_tier_settings *s)
{
	cJSON *o = cJSON_CreateObject();

	if (!o || !cJSON_AddBoolToObject(o, "use_4bit", s->use_4bit) ||
	    (s->has_bf16 && !cJSON_AddBoolToObject(o, "bf16", s->bf16)) ||
	    !cJSON_AddNumberToObject(o, "per_device_train_batch_size",
				     s->per_device_train_batch_size) ||
	    !cJSON_AddNumberToObject(o, "gradient_accumulation_steps",
				     s->gradient_accumulation_steps) ||
	    !cJSON_AddNumberToObject(o, "max_seq_length", s->max_seq_length)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
