/*
 * devices.json to struct device_table (see device_json.h). One field table describes an
 * entry; one walker checks each member against it, so every field is validated the same way
 * and the first bad one is reported by name. Strings are printable ASCII (the names that
 * nvidia-smi, rocm-smi and sysctl print are) and capped at the sizes of struct device_profile.
 */
#include "api/device_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hw/hw.h"

enum field_kind {
	F_STR,     /* char[size], 1..size-1 printable ASCII bytes */
	F_ID,      /* like F_STR, kebab-case */
	F_CC,      /* like F_STR, "8.9" */
	F_NUM,     /* double in (0, max]; null = unknown */
	F_INT,     /* int in [1, max] */
	F_BOOL,    /* bool */
	F_ALIASES, /* array of F_STR names */
	F_KIND,    /* "gpu" | "soc" | "cpu" */
	F_FP16,    /* "tensor" | "vector" */
	F_WSET,    /* the working-set rule object */
	F_ISA,     /* array of hw.h instruction-set names */
	F_ACORES,  /* {alias: cores}: read after the aliases (take_alias_counts) */
};

struct field {
	const char *name;
	enum field_kind kind;
	size_t offset;
	size_t size;
	double max;
	bool required;
};

#define OFF(m) offsetof(struct device_profile, m)
#define SZ(m) sizeof(((struct device_profile *)0)->m)

static const struct field fields[] = {
	{"id", F_ID, OFF(id), SZ(id), 0, true},
	{"vendor", F_STR, OFF(vendor), SZ(vendor), 0, true},
	{"name", F_STR, OFF(name), SZ(name), 0, true},
	{"aliases", F_ALIASES, 0, 0, 0, true},
	{"kind", F_KIND, 0, 0, 0, true},
	{"device_class", F_STR, OFF(device_class), SZ(device_class), 0, false},
	{"memory_gib", F_NUM, OFF(memory_gib), 0, 1e5, false},
	{"memory_configurable", F_BOOL, OFF(memory_configurable), 0, 0, false},
	{"unified", F_BOOL, OFF(unified), 0, 0, true},
	{"memory_bandwidth_gbs", F_NUM, OFF(memory_bandwidth_gbs), 0, 1e6, false},
	{"memory_bandwidth_measured_gbs", F_NUM, OFF(memory_bandwidth_measured_gbs), 0, 1e6, false},
	{"fp16_tflops", F_NUM, OFF(fp16_tflops), 0, 1e6, false},
	{"fp16_kind", F_FP16, 0, 0, 0, false},
	{"fp32_tflops", F_NUM, OFF(fp32_tflops), 0, 1e6, false},
	{"bf16_tflops", F_NUM, OFF(bf16_tflops), 0, 1e6, false},
	{"sustained_gemm_tflops", F_NUM, OFF(sustained_gemm_tflops), 0, 1e6, false},
	{"decode_bandwidth_share", F_NUM, OFF(decode_bandwidth_share), 0, 1, false},
	{"architecture", F_STR, OFF(architecture), SZ(architecture), 0, false},
	{"compute_capability", F_CC, OFF(compute_capability), SZ(compute_capability), 0, false},
	{"gpu_cores", F_INT, OFF(gpu_cores), 0, 100000, false},
	{"cpu_cores", F_INT, OFF(cpu_cores), 0, 100000, false},
	{"alias_cores", F_ACORES, 0, 0, 100000, false},
	{"alias_performance_cores", F_ACORES, 0, 0, 100000, false},
	{"isa", F_ISA, 0, 0, 0, false},
	{"usd_per_hour", F_NUM, OFF(usd_per_hour), 0, 1e5, false},
	{"gpu_working_set", F_WSET, 0, 0, 0, false},
	{"source", F_STR, OFF(source), SZ(source), 0, true},
	{"notes", F_STR, OFF(notes), SZ(notes), 0, false},
};

#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

/* Writes "devices.json: entry N (id): <message>" into err; returns rc. */
static int fail(char *err, size_t errlen, int rc, int entry, const char *id, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

static int fail(char *err, size_t errlen, int rc, int entry, const char *id, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!err || errlen == 0)
		return rc;
	if (entry > 0)
		snprintf(err, errlen, "devices.json: entry %d (%s): %s", entry,
			 id && id[0] ? id : "?", msg);
	else
		snprintf(err, errlen, "devices.json: %s", msg);
	return rc;
}

static bool printable_ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

static bool kebab_case(const char *s)
{
	bool prev_dash = true;

	for (; *s; s++) {
		if (*s == '-') {
			if (prev_dash)
				return false;
			prev_dash = true;
		} else if ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')) {
			prev_dash = false;
		} else {
			return false;
		}
	}
	return !prev_dash;
}

static bool cc_form(const char *s)
{
	const char *dot = strchr(s, '.');
	size_t len = strlen(s);

	if (!dot || dot == s || dot == s + len - 1 || strchr(dot + 1, '.'))
		return false;
	for (const char *c = s; *c; c++)
		if (c != dot && (*c < '0' || *c > '9'))
			return false;
	return true;
}

/* Copies a string member into dst (size size) after the common checks. Returns 0 or the error. */
static int take_string(const cJSON *item, const char *what, char *dst, size_t size, int entry,
		       const char *id, char *err, size_t errlen)
{
	size_t len;

	if (!cJSON_IsString(item) || !item->valuestring)
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, id, "%s must be a string",
			    what);
	len = strlen(item->valuestring);
	if (len == 0)
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, id, "%s must not be empty",
			    what);
	if (len >= size)
		return fail(err, errlen, RF_E_TOO_LARGE, entry, id, "%s is longer than %zu bytes",
			    what, size - 1);
	if (!printable_ascii(item->valuestring))
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, id,
			    "%s must be printable ASCII", what);
	memcpy(dst, item->valuestring, len + 1);
	return 0;
}

static int take_positive(const cJSON *item, const char *what, double max, double *dst, int entry,
			 const char *id, char *err, size_t errlen)
{
	if (cJSON_IsNull(item)) {
		*dst = -1;
		return 0;
	}
	if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble) || item->valuedouble <= 0)
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, id,
			    "%s must be a positive number", what);
	if (item->valuedouble > max)
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, id, "%s must be at most %g",
			    what, max);
	*dst = item->valuedouble;
	return 0;
}

static int take_working_set(const cJSON *item, struct device_profile *p, int entry, char *err,
			    size_t errlen)
{
	static const char *const names[] = {"up_to_gib", "fraction_at_or_below", "fraction_above",
					    "source"};
	double *dst[] = {&p->working_set.up_to_gib, &p->working_set.fraction_at_or_below,
			 &p->working_set.fraction_above};
	const cJSON *m;
	bool seen[3] = {false, false, false};

	if (!cJSON_IsObject(item))
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
			    "gpu_working_set must be an object");
	cJSON_ArrayForEach(m, item)
	{
		int k = -1;
		for (int i = 0; i < 4; i++)
			if (m->string && strcmp(m->string, names[i]) == 0)
				k = i;
		if (k < 0)
			return fail(err, errlen, RF_E_UNKNOWN_FIELD, entry, p->id,
				    "gpu_working_set has an unknown field '%.64s'",
				    m->string ? m->string : "");
		if (k == 3) {
			if (!cJSON_IsString(m))
				return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
					    "gpu_working_set.source must be a string");
			continue;
		}
		if (!cJSON_IsNumber(m) || !isfinite(m->valuedouble) || m->valuedouble <= 0 ||
		    (k > 0 && m->valuedouble > 1) || m->valuedouble > 1e5)
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "gpu_working_set.%s must be a positive number%s", names[k],
				    k > 0 ? " no larger than 1" : "");
		*dst[k] = m->valuedouble;
		seen[k] = true;
	}
	for (int i = 0; i < 3; i++)
		if (!seen[i])
			return fail(err, errlen, RF_E_MISSING_FIELD, entry, p->id,
				    "gpu_working_set.%s is missing", names[i]);
	return 0;
}

static int take_aliases(const cJSON *item, struct device_profile *p, int entry, char *err,
			size_t errlen)
{
	const cJSON *a;
	int n = 0;

	if (!cJSON_IsArray(item))
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
			    "aliases must be an array of strings");
	if (cJSON_GetArraySize(item) > DEVICE_MAX_ALIASES)
		return fail(err, errlen, RF_E_TOO_LARGE, entry, p->id,
			    "aliases has more than %d names", DEVICE_MAX_ALIASES);
	cJSON_ArrayForEach(a, item)
	{
		char what[32];
		int rc;
		snprintf(what, sizeof(what), "aliases[%d]", n);
		rc = take_string(a, what, p->aliases[n], sizeof(p->aliases[n]), entry, p->id, err,
				 errlen);
		if (rc < 0)
			return rc;
		n++;
	}
	p->n_aliases = n;
	return 0;
}

/* "isa": the instruction sets a CPU has, by the names GET /api/hardware uses. */
static int take_isa(const cJSON *item, struct device_profile *p, int entry, char *err,
		    size_t errlen)
{
	const cJSON *it;

	if (!cJSON_IsArray(item))
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
			    "isa must be an array of instruction-set names");
	cJSON_ArrayForEach(it, item)
	{
		int bit = -1;
		for (int i = 0; cJSON_IsString(it) && hw_isa_name(i); i++)
			if (strcmp(it->valuestring, hw_isa_name(i)) == 0)
				bit = i;
		if (bit < 0)
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "isa: unknown instruction set %s%.40s%s",
				    cJSON_IsString(it) ? "'" : "",
				    cJSON_IsString(it) ? it->valuestring : "(not a string)",
				    cJSON_IsString(it) ? "'" : "");
		p->isa |= 1u << bit;
	}
	return 0;
}

static int take_field(const struct field *f, const cJSON *item, struct device_profile *p, int entry,
		      char *err, size_t errlen)
{
	char *base = (char *)p;
	int rc;

	switch (f->kind) {
	case F_STR:
	case F_ID:
	case F_CC:
		rc = take_string(item, f->name, base + f->offset, f->size, entry, p->id, err,
				 errlen);
		if (rc < 0)
			return rc;
		if (f->kind == F_ID && !kebab_case(base + f->offset))
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, base + f->offset,
				    "id must be kebab-case (a-z, 0-9 and single dashes)");
		if (f->kind == F_CC && !cc_form(base + f->offset))
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "compute_capability must look like \"8.9\"");
		return 0;
	case F_NUM:
		return take_positive(item, f->name, f->max, (double *)(void *)(base + f->offset),
				     entry, p->id, err, errlen);
	case F_INT:
		if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble) ||
		    floor(item->valuedouble) != item->valuedouble || item->valuedouble < 1 ||
		    item->valuedouble > f->max)
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "%s must be an integer from 1 to %g", f->name, f->max);
		*(int *)(void *)(base + f->offset) = (int)item->valuedouble;
		return 0;
	case F_BOOL:
		if (!cJSON_IsBool(item))
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "%s must be true or false", f->name);
		*(bool *)(void *)(base + f->offset) = cJSON_IsTrue(item);
		return 0;
	case F_ALIASES:
		return take_aliases(item, p, entry, err, errlen);
	case F_KIND:
		if (cJSON_IsString(item) && strcmp(item->valuestring, "gpu") == 0)
			p->kind = DEVICE_KIND_GPU;
		else if (cJSON_IsString(item) && strcmp(item->valuestring, "soc") == 0)
			p->kind = DEVICE_KIND_SOC;
		else if (cJSON_IsString(item) && strcmp(item->valuestring, "cpu") == 0)
			p->kind = DEVICE_KIND_CPU;
		else
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "kind must be \"gpu\", \"soc\" or \"cpu\"");
		return 0;
	case F_FP16:
		if (cJSON_IsString(item) && strcmp(item->valuestring, "tensor") == 0)
			p->fp16_kind = DEVICE_FP16_TENSOR;
		else if (cJSON_IsString(item) && strcmp(item->valuestring, "vector") == 0)
			p->fp16_kind = DEVICE_FP16_VECTOR;
		else
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "fp16_kind must be \"tensor\" or \"vector\"");
		return 0;
	case F_WSET:
		return take_working_set(item, p, entry, err, errlen);
	case F_ISA:
		return take_isa(item, p, entry, err, errlen);
	case F_ACORES:
		return 0; /* after the loop: the aliases it names may come later */
	}
	return RF_E_INTERNAL;
}

/* "alias_cores": {"EPYC 9554": 64, ...}: the cores of the part each named alias is, and
 * "alias_performance_cores" ({"Core i9-13900K": 8, ...}) of those its performance cores; every
 * key must be one of the entry's aliases, a performance count one with cores, at most them. */
static int take_alias_counts(const cJSON *item, const char *field, int *counts,
			     struct device_profile *p, int entry, char *err, size_t errlen)
{
	const cJSON *m;

	if (!cJSON_IsObject(item))
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
			    "%s must be an object of alias: cores", field);
	cJSON_ArrayForEach(m, item)
	{
		int k = 0;
		while (k < p->n_aliases && (!m->string || strcmp(p->aliases[k], m->string) != 0))
			k++;
		if (k == p->n_aliases)
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "%s names '%.64s', which is not one of its aliases", field,
				    m->string ? m->string : "");
		if (!cJSON_IsNumber(m) || !isfinite(m->valuedouble) ||
		    floor(m->valuedouble) != m->valuedouble || m->valuedouble < 1 ||
		    m->valuedouble > 100000)
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "%s.%.64s must be an integer from 1 to 100000", field,
				    m->string);
		if (counts != p->alias_cores &&
		    (p->alias_cores[k] <= 0 || m->valuedouble > p->alias_cores[k]))
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "%s.%.64s must be at most the part's alias_cores", field,
				    m->string);
		counts[k] = (int)m->valuedouble;
	}
	return 0;
}

static int take_entry(const cJSON *obj, struct device_profile *p, int entry, char *err,
		      size_t errlen)
{
	const cJSON *m, *id;
	bool seen[N_FIELDS];
	int rc;

	device_profile_init(p);
	memset(seen, 0, sizeof(seen));
	if (!cJSON_IsObject(obj))
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, NULL, "must be an object");
	/* The id first, so that every later message names the entry. */
	id = cJSON_GetObjectItemCaseSensitive(obj, "id");
	if (!id)
		return fail(err, errlen, RF_E_MISSING_FIELD, entry, NULL, "id is missing");
	rc = take_field(&fields[0], id, p, entry, err, errlen);
	if (rc < 0)
		return rc;
	seen[0] = true;
	cJSON_ArrayForEach(m, obj)
	{
		size_t k;
		if (m == id)
			continue;
		for (k = 0; k < N_FIELDS; k++)
			if (m->string && strcmp(m->string, fields[k].name) == 0)
				break;
		if (k == N_FIELDS)
			return fail(err, errlen, RF_E_UNKNOWN_FIELD, entry, p->id,
				    "unknown field '%.64s'", m->string ? m->string : "");
		if (seen[k])
			return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
				    "%s is given twice", fields[k].name);
		rc = take_field(&fields[k], m, p, entry, err, errlen);
		if (rc < 0)
			return rc;
		seen[k] = true;
	}
	for (size_t k = 0; k < N_FIELDS; k++)
		if (fields[k].required && !seen[k])
			return fail(err, errlen, RF_E_MISSING_FIELD, entry, p->id, "%s is missing",
				    fields[k].name);
	if (p->fp16_tflops > 0 && p->fp16_kind == DEVICE_FP16_UNKNOWN)
		return fail(err, errlen, RF_E_MISSING_FIELD, entry, p->id,
			    "fp16_kind is missing (fp16_tflops needs \"tensor\" or \"vector\")");
	if (p->fp16_tflops <= 0 && p->fp16_kind != DEVICE_FP16_UNKNOWN)
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
			    "fp16_kind is given without fp16_tflops");
	if (p->sustained_gemm_tflops > 0 && !(p->fp16_tflops >= p->sustained_gemm_tflops))
		return fail(err, errlen, RF_E_INVALID_VALUE, entry, p->id,
			    "sustained_gemm_tflops needs fp16_tflops, at least as large");
	m = cJSON_GetObjectItemCaseSensitive(obj, "alias_cores");
	rc = m ? take_alias_counts(m, "alias_cores", p->alias_cores, p, entry, err, errlen) : 0;
	m = cJSON_GetObjectItemCaseSensitive(obj, "alias_performance_cores");
	if (rc == 0 && m)
		rc = take_alias_counts(m, "alias_performance_cores", p->alias_performance_cores, p,
				       entry, err, errlen);
	return rc;
}

int api_device_table_from_json(const cJSON *doc, struct device_table *out, char *err, size_t errlen)
{
	const cJSON *m, *devices = NULL, *e;
	struct device_table t = {0};
	char cerr[512];
	int n, i = 0, rc;

	if (err && errlen)
		err[0] = '\0';
	if (!out)
		return RF_E_INVALID_VALUE;
	if (!cJSON_IsObject(doc))
		return fail(err, errlen, RF_E_INVALID_VALUE, 0, NULL,
			    "the top level must be an object");
	cJSON_ArrayForEach(m, doc)
	{
		const char *k = m->string ? m->string : "";
		if (strcmp(k, "devices") == 0) {
			devices = m;
		} else if (strcmp(k, "version") == 0) {
			if (!cJSON_IsNumber(m) || m->valuedouble < 1 || m->valuedouble > 1e6 ||
			    floor(m->valuedouble) != m->valuedouble)
				return fail(err, errlen, RF_E_INVALID_VALUE, 0, NULL,
					    "version must be a positive integer");
		} else if (strcmp(k, "source") == 0) {
			if (!cJSON_IsString(m))
				return fail(err, errlen, RF_E_INVALID_VALUE, 0, NULL,
					    "source must be a string");
		} else {
			return fail(err, errlen, RF_E_UNKNOWN_FIELD, 0, NULL,
				    "unknown top-level field '%.64s'", k);
		}
	}
	if (!devices)
		return fail(err, errlen, RF_E_MISSING_FIELD, 0, NULL, "devices is missing");
	if (!cJSON_IsArray(devices))
		return fail(err, errlen, RF_E_INVALID_VALUE, 0, NULL, "devices must be an array");
	n = cJSON_GetArraySize(devices);
	if (n < 1)
		return fail(err, errlen, RF_E_INVALID_VALUE, 0, NULL, "devices is empty");
	if (n > DEVICE_TABLE_MAX)
		return fail(err, errlen, RF_E_TOO_LARGE, 0, NULL,
			    "devices has %d entries, more than %d", n, DEVICE_TABLE_MAX);
	t.devices = calloc((size_t)n, sizeof(*t.devices));
	if (!t.devices)
		return fail(err, errlen, RF_E_NOMEM, 0, NULL, "out of memory");
	cJSON_ArrayForEach(e, devices)
	{
		rc = take_entry(e, &t.devices[i], i + 1, err, errlen);
		if (rc < 0)
			goto out;
		i++;
	}
	t.n = i;
	rc = device_table_check(&t, cerr, sizeof(cerr));
	if (rc < 0) {
		fail(err, errlen, rc, 0, NULL, "%s", cerr);
		goto out;
	}
	/* Every estimate resolves its GPUs by name; normalise the profiles' names once. */
	rc = device_table_index(&t);
	if (rc < 0) {
		fail(err, errlen, rc, 0, NULL, "out of memory");
		goto out;
	}
	*out = t;
	return 0;
out:
	device_table_clear(&t);
	return rc;
}

static bool add_num(cJSON *o, const char *name, double v)
{
	return v > 0 ? cJSON_AddNumberToObject(o, name, v) != NULL :
		       cJSON_AddNullToObject(o, name) != NULL;
}

cJSON *api_device_to_cjson(const struct device_profile *p)
{
	static const char *const kinds[] = {"gpu", "soc", "cpu"};
	cJSON *o = cJSON_CreateObject(), *a;
	bool ok;

	if (!o)
		return NULL;
	a = cJSON_AddArrayToObject(o, "aliases");
	ok = a && cJSON_AddStringToObject(o, "id", p->id) &&
	     cJSON_AddStringToObject(o, "vendor", p->vendor) &&
	     cJSON_AddStringToObject(o, "name", p->name) &&
	     cJSON_AddStringToObject(o, "kind", kinds[p->kind]) &&
	     cJSON_AddStringToObject(o, "device_class", p->device_class) &&
	     add_num(o, "memory_gib", p->memory_gib) &&
	     cJSON_AddBoolToObject(o, "memory_configurable", p->memory_configurable) &&
	     cJSON_AddBoolToObject(o, "unified", p->unified) &&
	     add_num(o, "memory_bandwidth_gbs", p->memory_bandwidth_gbs) &&
	     add_num(o, "fp16_tflops", p->fp16_tflops) &&
	     (p->fp16_kind == DEVICE_FP16_UNKNOWN ?
		      cJSON_AddNullToObject(o, "fp16_kind") != NULL :
		      cJSON_AddStringToObject(
			      o, "fp16_kind",
			      p->fp16_kind == DEVICE_FP16_TENSOR ? "tensor" : "vector") != NULL) &&
	     add_num(o, "fp32_tflops", p->fp32_tflops) &&
	     add_num(o, "bf16_tflops", p->bf16_tflops) &&
	     add_num(o, "sustained_gemm_tflops", p->sustained_gemm_tflops) &&
	     add_num(o, "decode_bandwidth_share", p->decode_bandwidth_share) &&
	     cJSON_AddStringToObject(o, "architecture", p->architecture) &&
	     cJSON_AddStringToObject(o, "compute_capability", p->compute_capability) &&
	     add_num(o, "usd_per_hour", p->usd_per_hour) &&
	     cJSON_AddStringToObject(o, "source", p->source) &&
	     cJSON_AddStringToObject(o, "notes", p->notes);
	if (ok && p->isa) {
		cJSON *isa = cJSON_AddArrayToObject(o, "isa");
		for (int i = 0; isa && ok && hw_isa_name(i); i++)
			if (p->isa & (1u << i)) {
				cJSON *s = cJSON_CreateString(hw_isa_name(i));
				ok = s && cJSON_AddItemToArray(isa, s);
			}
		ok = ok && isa;
	}
	for (int i = 0; ok && i < p->n_aliases; i++) {
		cJSON *s = cJSON_CreateString(p->aliases[i]);
		ok = s && cJSON_AddItemToArray(a, s);
		if (s && !ok)
			cJSON_Delete(s);
	}
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
