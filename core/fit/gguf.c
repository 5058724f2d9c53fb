/*
 * The GGUF header reader (see gguf.h). The format, little-endian throughout:
 *
 *   "GGUF" u32 version  u64 n_tensors  u64 n_kv
 *   n_kv x   { string key, u32 type, value }        string = u64 length + bytes
 *   n_tensors x { string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset }
 *   padding to general.alignment (32 by default), then the tensor data
 *
 * Every read goes through struct rd, which never reads past the buffer; every count is
 * compared with the bytes left before anything is allocated for it.
 */
#include "core/fit/gguf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/err.h"

struct rd {
	const uint8_t *p;
	size_t len;
	uint64_t file_size; /* >= len: the buffer may be the file's first len bytes */
	bool more;          /* a read ran past len where the file goes on */
	size_t pos;
	char *msg;
	size_t msglen;
};

__attribute__((format(printf, 3, 4))) static int fail(struct rd *r, int err, const char *fmt, ...)
{
	if (r->msg && r->msglen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(r->msg, r->msglen, fmt, ap);
		va_end(ap);
	}
	return err;
}

static size_t left(const struct rd *r)
{
	return r->len - r->pos;
}

/* Bytes the file holds past the position: what a count claims is checked against these. */
static uint64_t avail(const struct rd *r)
{
	return r->file_size - r->pos;
}

/* Whether fewer than n bytes are left in the buffer; notes when the file has them (the header
 * goes on past the prefix read). */
static bool short_of(struct rd *r, uint64_t n)
{
	if (left(r) >= n)
		return false;
	if (avail(r) >= n)
		r->more = true;
	return true;
}

static int rd_u32(struct rd *r, uint32_t *v)
{
	const uint8_t *p;

	if (short_of(r, 4))
		return fail(r, RF_E_PARSE, "truncated at byte %zu", r->pos);
	p = r->p + r->pos;
	*v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	r->pos += 4;
	return 0;
}

static int rd_u64(struct rd *r, uint64_t *v)
{
	uint32_t lo = 0, hi = 0;
	int rc;

	if ((rc = rd_u32(r, &lo)) < 0 || (rc = rd_u32(r, &hi)) < 0)
		return rc;
	*v = (uint64_t)hi << 32 | lo;
	return 0;
}

/* Reads a string header and points *s at its bytes inside the buffer. */
static int rd_str(struct rd *r, uint64_t cap, const char **s, uint64_t *n)
{
	int rc = rd_u64(r, n);

	if (rc < 0)
		return rc;
	if (*n > cap)
		return fail(r, RF_E_TOO_LARGE,
			    "a string of %llu bytes at byte %zu is over the limit",
			    (unsigned long long)*n, r->pos - 8);
	if (short_of(r, *n))
		return fail(r, RF_E_PARSE, "a string of %llu bytes runs past the end (byte %zu)",
			    (unsigned long long)*n, r->pos - 8);
	*s = (const char *)r->p + r->pos;
	r->pos += (size_t)*n;
	return 0;
}

static char *dup_bytes(const char *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* Bytes of one scalar of type t; 0 for strings and arrays, -1 for an unknown type. */
static int scalar_size(uint32_t t)
{
	switch (t) {
	case GGUF_T_UINT8:
	case GGUF_T_INT8:
	case GGUF_T_BOOL:
		return 1;
	case GGUF_T_UINT16:
	case GGUF_T_INT16:
		return 2;
	case GGUF_T_UINT32:
	case GGUF_T_INT32:
	case GGUF_T_FLOAT32:
		return 4;
	case GGUF_T_UINT64:
	case GGUF_T_INT64:
	case GGUF_T_FLOAT64:
		return 8;
	case GGUF_T_STRING:
	case GGUF_T_ARRAY:
		return 0;
	default:
		return -1;
	}
}

/* Reads one scalar of type t into kv's u/i/f/b fields. */
static int rd_scalar(struct rd *r, uint32_t t, struct gguf_kv *kv)
{
	uint32_t v32 = 0;
	uint64_t v64 = 0;
	int rc = 0;

	switch (t) {
	case GGUF_T_UINT8:
	case GGUF_T_INT8:
	case GGUF_T_BOOL:
		if (short_of(r, 1))
			return fail(r, RF_E_PARSE, "truncated at byte %zu", r->pos);
		v32 = r->p[r->pos++];
		if (t == GGUF_T_BOOL && v32 > 1)
			return fail(r, RF_E_PARSE, "a bool of value %u at byte %zu", (unsigned)v32,
				    r->pos - 1);
		if (t == GGUF_T_INT8)
			kv->i = (int8_t)v32;
		else
			kv->u = v32, kv->i = v32;
		kv->b = v32 != 0;
		kv->f = t == GGUF_T_INT8 ? (double)kv->i : (double)v32;
		return 0;
	case GGUF_T_UINT16:
	case GGUF_T_INT16:
		if (short_of(r, 2))
			return fail(r, RF_E_PARSE, "truncated at byte %zu", r->pos);
		v32 = (uint32_t)r->p[r->pos] | (uint32_t)r->p[r->pos + 1] << 8;
		r->pos += 2;
		if (t == GGUF_T_INT16)
			kv->i = (int16_t)v32;
		else
			kv->u = v32, kv->i = v32;
		kv->f = (double)kv->i;
		return 0;
	case GGUF_T_UINT32:
	case GGUF_T_INT32:
	case GGUF_T_FLOAT32:
		if ((rc = rd_u32(r, &v32)) < 0)
			return rc;
		if (t == GGUF_T_FLOAT32) {
			float fv;
			memcpy(&fv, &v32, sizeof(fv));
			kv->f = fv;
		} else if (t == GGUF_T_INT32) {
			kv->i = (int32_t)v32;
			kv->f = (double)kv->i;
		} else {
			kv->u = v32;
			kv->i = v32;
			kv->f = v32;
		}
		return 0;
	case GGUF_T_UINT64:
	case GGUF_T_INT64:
	case GGUF_T_FLOAT64:
		if ((rc = rd_u64(r, &v64)) < 0)
			return rc;
		if (t == GGUF_T_FLOAT64) {
			memcpy(&kv->f, &v64, sizeof(kv->f));
		} else if (t == GGUF_T_INT64) {
			kv->i = (int64_t)v64;
			kv->f = (double)kv->i;
		} else {
			kv->u = v64;
			kv->i = v64 > INT64_MAX ? INT64_MAX : (int64_t)v64;
			kv->f = (double)v64;
		}
		return 0;
	default:
		return fail(r, RF_E_PARSE, "unknown value type %u", (unsigned)t);
	}
}

static bool is_signed(uint32_t t)
{
	return t == GGUF_T_INT8 || t == GGUF_T_INT16 || t == GGUF_T_INT32 || t == GGUF_T_INT64;
}

/* Reads an array body (element type and count already read for depth 0 by the caller through
 * this same function). Keeps numeric elements of the outermost array in kv. */
static int rd_array(struct rd *r, struct gguf_kv *kv, int depth)
{
	uint32_t et;
	uint64_t n;
	int rc, sz;

	if (depth >= GGUF_MAX_ARRAY_DEPTH)
		return fail(r, RF_E_TOO_LARGE, "arrays nested deeper than %d",
			    GGUF_MAX_ARRAY_DEPTH);
	if ((rc = rd_u32(r, &et)) < 0 || (rc = rd_u64(r, &n)) < 0)
		return rc;
	sz = scalar_size(et);
	if (sz < 0)
		return fail(r, RF_E_PARSE, "an array of unknown type %u at byte %zu", (unsigned)et,
			    r->pos - 12);
	if (n > GGUF_MAX_ARRAY_LEN)
		return fail(r, RF_E_TOO_LARGE, "an array of %llu elements is over the limit",
			    (unsigned long long)n);
	/* Each element takes at least 1 byte (scalars), 8 (strings) or 12 (arrays). */
	if (n > avail(r) / (uint64_t)(sz > 0 ? sz : (et == GGUF_T_STRING ? 8 : 12)))
		return fail(r, RF_E_PARSE, "an array of %llu elements runs past the end (byte %zu)",
			    (unsigned long long)n, r->pos);
	/* Scalars are skipped in one step: all of them must be in the buffer. */
	if (sz > 0 && short_of(r, n * (uint64_t)sz))
		return fail(r, RF_E_PARSE, "an array of %llu elements runs past the end (byte %zu)",
			    (unsigned long long)n, r->pos);
	if (depth == 0) {
		kv->arr_type = et;
		kv->arr_n = n;
	}
	if (sz > 0) {
		if (depth == 0 && n > 0) {
			size_t keep = n < GGUF_ARRAY_KEEP ? (size_t)n : GGUF_ARRAY_KEEP;
			kv->arr = malloc(keep * sizeof(double));
			if (!kv->arr)
				return RF_E_NOMEM;
			for (size_t k = 0; k < keep; k++) {
				struct gguf_kv tmp = {0};
				if ((rc = rd_scalar(r, et, &tmp)) < 0)
					return rc;
				kv->arr[k] = is_signed(et) || et == GGUF_T_FLOAT32 ||
							     et == GGUF_T_FLOAT64 ?
						     tmp.f :
						     (double)tmp.u;
			}
			kv->arr_kept = keep;
			r->pos += (size_t)(n - keep) * (size_t)sz; /* bounds checked above */
		} else {
			r->pos += (size_t)n * (size_t)sz;
		}
		return 0;
	}
	for (uint64_t k = 0; k < n; k++) {
		if (et == GGUF_T_STRING) {
			const char *s;
			uint64_t sl;
			if ((rc = rd_str(r, GGUF_MAX_STRING_LEN, &s, &sl)) < 0)
				return rc;
		} else if ((rc = rd_array(r, kv, depth + 1)) < 0) {
			return rc;
		}
	}
	return 0;
}

static int rd_kv(struct rd *r, struct gguf_kv *kv)
{
	const char *s;
	uint64_t n;
	uint32_t t;
	int rc;

	if ((rc = rd_str(r, GGUF_MAX_KEY_LEN, &s, &n)) < 0)
		return rc;
	if (n == 0 || memchr(s, '\0', (size_t)n))
		return fail(r, RF_E_PARSE, "an empty key or a key with a NUL byte at byte %zu",
			    r->pos - (size_t)n);
	kv->key = dup_bytes(s, (size_t)n);
	if (!kv->key)
		return RF_E_NOMEM;
	if ((rc = rd_u32(r, &t)) < 0)
		return rc;
	if (t >= GGUF_T_COUNT)
		return fail(r, RF_E_PARSE, "key '%.64s' has unknown type %u", kv->key, (unsigned)t);
	kv->type = t;
	if (t == GGUF_T_STRING) {
		if ((rc = rd_str(r, GGUF_MAX_STRING_LEN, &s, &n)) < 0)
			return rc;
		kv->str = dup_bytes(s, (size_t)n);
		if (!kv->str)
			return RF_E_NOMEM;
		kv->str_len = (size_t)n;
		return 0;
	}
	if (t == GGUF_T_ARRAY)
		return rd_array(r, kv, 0);
	return rd_scalar(r, t, kv);
}

static int rd_tensor(struct rd *r, struct rf_tensor *t)
{
	const char *s;
	uint64_t n, ne;
	uint32_t nd, type;
	int rc;

	if ((rc = rd_str(r, UINT32_MAX, &s, &n)) < 0)
		return rc;
	if (n == 0 || n >= RF_TENSOR_NAME_LEN || memchr(s, '\0', (size_t)n))
		return fail(r, RF_E_PARSE, "a tensor name of %llu bytes at byte %zu (1 to %d)",
			    (unsigned long long)n, r->pos - (size_t)n - 8, RF_TENSOR_NAME_LEN - 1);
	memcpy(t->name, s, (size_t)n);
	t->name[n] = '\0';
	if ((rc = rd_u32(r, &nd)) < 0)
		return rc;
	if (nd < 1 || nd > RF_TENSOR_MAX_DIMS)
		return fail(r, RF_E_PARSE, "tensor '%s' has %u dimensions", t->name, (unsigned)nd);
	t->n_dims = nd;
	for (int i = 0; i < RF_TENSOR_MAX_DIMS; i++)
		t->ne[i] = 1;
	for (uint32_t i = 0; i < nd; i++) {
		if ((rc = rd_u64(r, &ne)) < 0)
			return rc;
		if (ne > (uint64_t)INT64_MAX)
			return fail(r, RF_E_PARSE, "tensor '%s' has a dimension of %llu", t->name,
				    (unsigned long long)ne);
		t->ne[i] = (int64_t)ne;
	}
	if (rf_tensor_nelements(t) < 0)
		return fail(r, RF_E_PARSE, "the dimensions of tensor '%s' overflow", t->name);
	if ((rc = rd_u32(r, &type)) < 0)
		return rc;
	if (!rf_gtype((int)type))
		return fail(r, RF_E_PARSE, "tensor '%s' has unknown type %u", t->name,
			    (unsigned)type);
	t->type = (int32_t)type;
	if ((rc = rd_u64(r, &t->offset)) < 0)
		return rc;
	rc = rf_tensor_set_bytes(t);
	if (rc == RF_E_INVALID_VALUE)
		return fail(r, RF_E_PARSE,
			    "tensor '%s': %lld elements per row do not divide into %s blocks",
			    t->name, (long long)t->ne[0], rf_gtype(t->type)->name);
	if (rc < 0)
		return fail(r, RF_E_PARSE, "tensor '%s' is too large", t->name);
	rf_tensor_classify(t);
	return 0;
}

static int cmp_kv(const void *a, const void *b)
{
	return strcmp((*(const struct gguf_kv *const *)a)->key,
		      (*(const struct gguf_kv *const *)b)->key);
}

static int cmp_tensor(const void *a, const void *b)
{
	return strcmp((*(const struct rf_tensor *const *)a)->name,
		      (*(const struct rf_tensor *const *)b)->name);
}

/* Sets *dup when two items of v[0..n) compare equal. Returns 0 or RF_E_NOMEM. */
static int has_dup(void **v, size_t n, int (*cmp)(const void *, const void *), bool *dup)
{
	void **s;

	*dup = false;
	if (n < 2)
		return 0;
	s = malloc(n * sizeof(*s));
	if (!s)
		return RF_E_NOMEM;
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp);
	for (size_t i = 1; i < n && !*dup; i++)
		*dup = cmp(&s[i - 1], &s[i]) == 0;
	free(s);
	return 0;
}

void gguf_free(struct gguf_file *f)
{
	if (!f)
		return;
	for (uint64_t i = 0; f->kv && i < f->n_kv; i++) {
		free(f->kv[i].key);
		free(f->kv[i].str);
		free(f->kv[i].arr);
	}
	free(f->kv);
	free(f->tensors);
	free(f);
}

static int check_unique(struct gguf_file *f, struct rd *r)
{
	size_t n = (size_t)(f->n_kv > f->n_tensors ? f->n_kv : f->n_tensors);
	void **v;
	bool dup;
	int rc;

	if (n < 2)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return RF_E_NOMEM;
	for (uint64_t i = 0; i < f->n_kv; i++)
		v[i] = &f->kv[i];
	rc = has_dup(v, (size_t)f->n_kv, cmp_kv, &dup);
	if (rc == 0 && dup)
		rc = fail(r, RF_E_PARSE, "a metadata key appears twice");
	if (rc == 0) {
		for (uint64_t i = 0; i < f->n_tensors; i++)
			v[i] = &f->tensors[i];
		rc = has_dup(v, (size_t)f->n_tensors, cmp_tensor, &dup);
		if (rc == 0 && dup)
			rc = fail(r, RF_E_PARSE, "a tensor name appears twice");
	}
	free(v);
	return rc;
}

int gguf_parse(const void *buf, size_t len, uint64_t file_size, struct gguf_file **out, char *msg,
	       size_t msglen)
{
	return gguf_parse_prefix(buf, len, file_size, out, NULL, msg, msglen);
}

int gguf_parse_prefix(const void *buf, size_t len, uint64_t file_size, struct gguf_file **out,
		      bool *more, char *msg, size_t msglen)
{
	struct rd r = {.p = buf, .len = len, .msg = msg, .msglen = msglen};
	struct gguf_file *f;
	uint64_t data_size, need, tensor_min;
	int rc;

	if (more)
		*more = false;
	if (msg && msglen)
		msg[0] = '\0';
	if (!buf && len)
		return RF_E_PARSE;
	if (file_size == 0 || file_size < len)
		file_size = len;
	r.file_size = file_size;
	if (len < 4 || memcmp(buf, GGUF_MAGIC, 4) != 0)
		return fail(&r, RF_E_PARSE, "not a GGUF file (no GGUF magic)");
	r.pos = 4;
	f = calloc(1, sizeof(*f));
	if (!f)
		return RF_E_NOMEM;
	f->alignment = GGUF_DEFAULT_ALIGNMENT;
	if ((rc = rd_u32(&r, &f->version)) < 0)
		goto out;
	if (f->version == 1) {
		rc = fail(&r, RF_E_PARSE, "GGUF version 1 is not supported (2 and 3 are)");
		goto out;
	}
	if (f->version != 2 && f->version != 3) {
		rc = fail(&r, RF_E_PARSE, "unsupported GGUF version %u (a big-endian file?)",
			  (unsigned)f->version);
		goto out;
	}
	if ((rc = rd_u64(&r, &f->n_tensors)) < 0 || (rc = rd_u64(&r, &f->n_kv)) < 0)
		goto out;
	if (f->n_tensors > GGUF_MAX_TENSORS || f->n_kv > GGUF_MAX_KV) {
		rc = fail(&r, RF_E_TOO_LARGE, "%llu tensors and %llu keys are over the limits",
			  (unsigned long long)f->n_tensors, (unsigned long long)f->n_kv);
		goto out;
	}
	/* A key takes at least 13 bytes, a tensor info at least 32: counts that cannot fit in
	 * what is left are lies, refused before any allocation. */
	if (rf_ckd_mul_u64(&need, f->n_kv, 13) < 0 ||
	    rf_ckd_mul_u64(&tensor_min, f->n_tensors, 32) < 0 ||
	    rf_ckd_add_u64(&need, need, tensor_min) < 0 || need > avail(&r)) {
		rc = fail(&r, RF_E_PARSE,
			  "%llu keys and %llu tensors cannot fit in the %llu bytes that follow",
			  (unsigned long long)f->n_kv, (unsigned long long)f->n_tensors,
			  (unsigned long long)avail(&r));
		goto out;
	}
	if (f->n_kv) {
		f->kv = calloc((size_t)f->n_kv, sizeof(*f->kv));
		if (!f->kv) {
			rc = RF_E_NOMEM;
			goto out;
		}
	}
	for (uint64_t i = 0; i < f->n_kv; i++)
		if ((rc = rd_kv(&r, &f->kv[i])) < 0)
			goto out;
	{
		const struct gguf_kv *al = gguf_find(f, "general.alignment");
		if (al) {
			if (al->type != GGUF_T_UINT32 || al->u == 0 || (al->u & (al->u - 1)) != 0 ||
			    al->u > GGUF_MAX_ALIGNMENT) {
				rc = fail(&r, RF_E_PARSE,
					  "general.alignment must be a power of 2 up to %u",
					  GGUF_MAX_ALIGNMENT);
				goto out;
			}
			f->alignment = al->u;
		}
	}
	if (f->n_tensors) {
		f->tensors = calloc((size_t)f->n_tensors, sizeof(*f->tensors));
		if (!f->tensors) {
			rc = RF_E_NOMEM;
			goto out;
		}
	}
	for (uint64_t i = 0; i < f->n_tensors; i++)
		if ((rc = rd_tensor(&r, &f->tensors[i])) < 0)
			goto out;
	if ((rc = check_unique(f, &r)) < 0)
		goto out;
	f->header_bytes = r.pos;
	if (rf_ckd_add_u64(&f->data_offset, r.pos, f->alignment - 1) < 0) {
		rc = fail(&r, RF_E_PARSE, "the header's padding overflows");
		goto out;
	}
	f->data_offset = f->data_offset / f->alignment * f->alignment;
	if (f->n_tensors > 0 && f->data_offset > file_size) {
		rc = fail(&r, RF_E_PARSE, "the file ends before its tensor data");
		goto out;
	}
	data_size = file_size > f->data_offset ? file_size - f->data_offset : 0;
	for (uint64_t i = 0; i < f->n_tensors; i++) {
		const struct rf_tensor *t = &f->tensors[i];
		if (t->offset % f->alignment != 0) {
			rc = fail(&r, RF_E_PARSE, "tensor '%s' is not aligned to %llu bytes",
				  t->name, (unsigned long long)f->alignment);
			goto out;
		}
		if (t->offset > data_size || t->bytes > data_size - t->offset) {
			rc = fail(&r, RF_E_PARSE, "tensor '%s' lies past the end of the file",
				  t->name);
			goto out;
		}
		/* Tensors that share bytes would count them twice: their sum must fit in the
		 * data, which also keeps it from wrapping around. */
		if (rf_ckd_add_u64(&f->data_bytes, f->data_bytes, t->bytes) < 0 ||
		    f->data_bytes > data_size) {
			rc = fail(&r, RF_E_PARSE,
				  "the tensors up to '%s' take more bytes than the file's data "
				  "(they overlap)",
				  t->name);
			goto out;
		}
	}
	*out = f;
	return 0;
out:
	if (more)
		*more = r.more;
	gguf_free(f);
	return rc;
}

const struct gguf_kv *gguf_find(const struct gguf_file *f, const char *key)
{
	for (uint64_t i = 0; f && key && i < f->n_kv; i++)
		if (f->kv[i].key && strcmp(f->kv[i].key, key) == 0)
			return &f->kv[i];
	return NULL;
}

static bool is_int_type(enum gguf_vtype t)
{
	return t == GGUF_T_UINT8 || t == GGUF_T_INT8 || t == GGUF_T_UINT16 || t == GGUF_T_INT16 ||
	       t == GGUF_T_UINT32 || t == GGUF_T_INT32 || t == GGUF_T_UINT64 || t == GGUF_T_INT64;
}

int gguf_get_uint(const struct gguf_file *f, const char *key, uint64_t *out)
{
	const struct gguf_kv *kv = gguf_find(f, key);

	if (!kv)
		return RF_E_NOT_FOUND;
	if (kv->type == GGUF_T_ARRAY) {
		double mx = 0;
		if (!is_int_type(kv->arr_type) || kv->arr_kept == 0)
			return RF_E_INVALID_VALUE;
		for (size_t i = 0; i < kv->arr_kept; i++) {
			if (kv->arr[i] < 0)
				return RF_E_INVALID_VALUE;
			if (kv->arr[i] > mx)
				mx = kv->arr[i];
		}
		*out = (uint64_t)mx;
		return 0;
	}
	if (!is_int_type(kv->type) || (is_signed(kv->type) && kv->i < 0))
		return RF_E_INVALID_VALUE;
	*out = is_signed(kv->type) ? (uint64_t)kv->i : kv->u;
	return 0;
}

const char *gguf_get_str(const struct gguf_file *f, const char *key)
{
	const struct gguf_kv *kv = gguf_find(f, key);

	return kv && kv->type == GGUF_T_STRING ? kv->str : NULL;
}

int gguf_file_type(const struct gguf_file *f)
{
	uint64_t v;

	if (gguf_get_uint(f, "general.file_type", &v) < 0 || v > 1000 || !rf_ftype_name((int)v))
		return -1;
	return (int)v;
}

/* ---- architecture ---------------------------------------------------------------------------- */

static const struct {
	const char *llm;
	const char *hf;
	enum model_family family;
	int swa_pattern;
} gguf_archs[] = {
	{"llama", "llama", MODEL_DECODER, 0},
	{"qwen2", "qwen2", MODEL_DECODER, 0},
	{"qwen2moe", "qwen2_moe", MODEL_DECODER, 0},
	{"qwen3", "qwen3", MODEL_DECODER, 0},
	{"qwen3moe", "qwen3_moe", MODEL_DECODER, 0},
	{"gemma", "gemma", MODEL_DECODER, 0},
	{"gemma2", "gemma2", MODEL_DECODER, 2},
	{"gemma3", "gemma3_text", MODEL_DECODER, 6},
	{"phi3", "phi3", MODEL_DECODER, 0},
	{"deepseek2", "deepseek_v2", MODEL_DECODER, 0},
	{"gptneox", "gpt_neox", MODEL_DECODER, 0},
	{"gpt-oss", "gpt_oss", MODEL_DECODER, 2},
	{"llama4", "llama4_text", MODEL_DECODER, 4},
	{"t5", "t5", MODEL_ENCODER_DECODER, 0},
	{"bert", "bert", MODEL_ENCODER, 0},
	{"nomic-bert", "nomic_bert", MODEL_ENCODER, 0},
	{"jina-bert-v2", "jina_bert", MODEL_ENCODER, 0},
};

static int get_key(const struct gguf_file *f, const char *arch, const char *suffix, bool required,
		   uint64_t *v, char *field, size_t fieldlen)
{
	char key[128];
	int rc;

	snprintf(key, sizeof(key), "%s.%s", arch, suffix);
	rc = gguf_get_uint(f, key, v);
	if (rc == RF_E_NOT_FOUND && !required) {
		*v = 0;
		return 0;
	}
	if (rc < 0) {
		snprintf(field, fieldlen, "%s", key);
		return rc == RF_E_NOT_FOUND ? RF_E_PARSE : RF_E_INVALID_VALUE;
	}
	return 0;
}

static int64_t clamp64(uint64_t v)
{
	return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* The positions a file reaches with the YaRN it applies itself (converted from a config.json
 * with rope_scaling yarn): llama.cpp stretches <arch>.rope.scaling.original_context_length by
 * .factor with no flag, as vLLM derives its longest length from the same config; max_pos
 * when the file sets none. */
static int64_t gguf_yarn_positions(const struct gguf_file *f, const char *arch, int64_t max_pos)
{
	char key[128];
	const char *type;
	const struct gguf_kv *fk;
	uint64_t orig = 0;
	double reach;

	snprintf(key, sizeof(key), "%s.rope.scaling.type", arch);
	type = gguf_get_str(f, key);
	snprintf(key, sizeof(key), "%s.rope.scaling.factor", arch);
	fk = gguf_find(f, key);
	snprintf(key, sizeof(key), "%s.rope.scaling.original_context_length", arch);
	if (!type || strcmp(type, "yarn") != 0 || !fk ||
	    (fk->type != GGUF_T_FLOAT32 && fk->type != GGUF_T_FLOAT64) || !(fk->f > 1) ||
	    fk->f > 1024 || gguf_get_uint(f, key, &orig) < 0 || orig == 0 ||
	    orig > MODEL_MAX_POSITIONS)
		return max_pos;
	reach = (double)orig * fk->f;
	return reach > (double)max_pos && reach <= MODEL_MAX_POSITIONS ? (int64_t)reach : max_pos;
}

int gguf_to_arch(const struct gguf_file *f, struct model_arch *out, char *field, size_t fieldlen)
{
	struct model_arch a;
	const char *arch = gguf_get_str(f, "general.architecture");
	uint64_t v;
	int rc;
	int known = -1;
	const char *vfield = NULL;

	model_arch_init(&a);
	if (!arch || !*arch || strlen(arch) >= MODEL_TYPE_LEN) {
		snprintf(field, fieldlen, "general.architecture");
		return RF_E_PARSE;
	}
	for (size_t i = 0; i < sizeof(gguf_archs) / sizeof(gguf_archs[0]); i++)
		if (strcmp(gguf_archs[i].llm, arch) == 0)
			known = (int)i;
	snprintf(a.llm_arch, sizeof(a.llm_arch), "%s", arch);
	snprintf(a.model_type, sizeof(a.model_type), "%s",
		 known >= 0 ? gguf_archs[known].hf : arch);
	a.family = known >= 0 ? gguf_archs[known].family : MODEL_DECODER;

#define GET(suffix, required, dst)                                                                 \
	do {                                                                                       \
		if ((rc = get_key(f, arch, suffix, required, &v, field, fieldlen)) < 0)            \
			return rc;                                                                 \
		(dst) = clamp64(v);                                                                \
	} while (0)

	GET("block_count", true, a.n_layers);
	GET("embedding_length", true, a.hidden_size);
	GET("attention.head_count", true, a.n_heads);
	GET("attention.head_count_kv", false, a.n_kv_heads);
	GET("attention.key_length", false, a.head_dim);
	GET("attention.value_length", false, a.v_head_dim);
	GET("context_length", false, a.max_position_embeddings);
	if (a.max_position_embeddings > 0)
		a.max_position_embeddings = gguf_yarn_positions(f, arch, a.max_position_embeddings);
	GET("feed_forward_length", false, a.intermediate_size);
	GET("expert_count", false, a.n_experts);
	GET("expert_used_count", false, a.n_experts_per_tok);
	GET("expert_feed_forward_length", false, a.moe_intermediate_size);
	GET("expert_shared_count", false, a.n_shared_experts);
	GET("expert_shared_feed_forward_length", false, a.shared_expert_intermediate_size);
	GET("leading_dense_block_count", false, a.first_k_dense);
	GET("interleave_moe_layer_step", false, a.moe_layer_step);
	GET("attention.kv_lora_rank", false, a.kv_lora_rank);
	GET("attention.q_lora_rank", false, a.q_lora_rank);
	GET("attention.sliding_window", false, a.sliding_window);
	if (a.moe_layer_step == 0)
		a.moe_layer_step = 1;
	if (a.family == MODEL_ENCODER_DECODER) {
		a.n_encoder_layers = a.n_layers;
		GET("decoder_block_count", false, v);
		if (v > 0)
			a.n_layers = clamp64(v);
	}
	if (a.kv_lora_rank > 0) {
		/* MLA: the rope part of the head from rope.dimension_count, the full q/k head and
		 * the v head from the *_mla lengths when the file has them. */
		int64_t k_mla = 0, v_mla = 0;
		GET("rope.dimension_count", true, a.qk_rope_head_dim);
		GET("attention.key_length_mla", false, k_mla);
		GET("attention.value_length_mla", false, v_mla);
		if (k_mla == 0)
			k_mla = a.head_dim;
		if (v_mla > 0)
			a.v_head_dim = v_mla;
		a.qk_nope_head_dim = k_mla - a.qk_rope_head_dim;
		a.head_dim = 0;
		if (a.qk_nope_head_dim <= 0) {
			snprintf(field, fieldlen, "%s.attention.key_length_mla", arch);
			return RF_E_INVALID_VALUE;
		}
	}
	if (a.n_shared_experts > 0 && a.shared_expert_intermediate_size == 0)
		a.shared_expert_intermediate_size = a.n_shared_experts * a.moe_intermediate_size;
	if (a.n_experts > 1 && a.moe_intermediate_size == 0)
		a.moe_intermediate_size = a.intermediate_size;
	if (known >= 0 && gguf_archs[known].swa_pattern > 0 && a.sliding_window > 0)
		a.swa_pattern = gguf_archs[known].swa_pattern;
	if (strcmp(arch, "llama4") == 0) {
		/* llama.cpp runs Llama 4 with 8192-token chunks on 3 of every 4 layers. */
		a.sliding_window = 8192;
		a.swa_pattern = 4;
		a.swa_chunked = true;
	}
#undef GET
	{
		const struct gguf_kv *tok = gguf_find(f, "tokenizer.ggml.tokens");
		char key[128];
		snprintf(key, sizeof(key), "%s.vocab_size", arch);
		if (tok && tok->type == GGUF_T_ARRAY)
			a.vocab_size = clamp64(tok->arr_n);
		else if (gguf_get_uint(f, key, &v) == 0)
			a.vocab_size = clamp64(v);
	}
	a.tie_word_embeddings = true;
	for (uint64_t i = 0; i < f->n_tensors; i++) {
		const struct rf_tensor *t = &f->tensors[i];
		if (t->cat == RF_TC_OUTPUT)
			a.tie_word_embeddings = false;
		if (a.vocab_size == 0 && strcmp(t->name, "token_embd.weight") == 0)
			a.vocab_size = t->ne[1];
		if (strcmp(t->name, "blk.0.attn_q.bias") == 0)
			a.attn_bias = true;
		if (strcmp(t->name, "blk.0.attn_q_norm.weight") == 0)
			a.qk_norm = true;
		if (strcmp(t->name, "blk.0.attn_qkv.weight") == 0)
			a.fused_qkv = true;
		if (strcmp(t->name, "position_embd.weight") == 0)
			a.learned_pos = true;
	}
	if (a.family == MODEL_ENCODER)
		a.ffn = MODEL_FFN_PLAIN;
	if (a.n_experts > 1 && a.n_experts_per_tok == 0) {
		snprintf(field, fieldlen, "%s.expert_used_count", arch);
		return RF_E_PARSE;
	}
	rc = model_arch_validate(&a, &vfield);
	if (rc < 0) {
		snprintf(field, fieldlen, "%s (%s)", vfield ? vfield : "?", arch);
		return rc;
	}
	*out = a;
	return 0;
}
