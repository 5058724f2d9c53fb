/*
 * The speed model against tests/data/calibration/llamacpp_tg_pp.csv (see accuracy.h). Each row
 * becomes a core/fit/speed.h observation: weight bytes from model_size_gib (GiB), FLOPs from
 * params_b (2 x active parameters; MoE rows state their active count in notes), layers and KV
 * size from model_arch.csv, the device from profiles/devices.json by the row's device name
 * ("2x" prefix = a layer split over two devices; host details in parentheses dropped). Rows of
 * another test than tg128/pp512 are kept as checks that are never fitted; rows marked in notes
 * (anomalous, memory-pressure limited, large spread, KV cache in host RAM) are skipped, and so
 * is every row whose device or model facts cannot be sourced, with the reason printed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/device_json.h"
#include "core/err.h"
#include "core/numparse.h"
#include "tests/accuracy/accuracy.h"
#include "tests/csv.h"
#include "tests/test.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* Calibration model names -> model_arch.csv names (same architecture: Llama 3 and 3.1 8B/70B
 * share their config; Mistral 7B v0.1 and v0.2 have the same layer layout). */
static const char *const model_map[][2] = {
	{"Llama 2 7B", "Llama-2-7B"},
	{"Llama 2 70B", "Llama-2-70B"},
	{"Llama 3 8B", "Llama-3.1-8B"},
	{"Llama 3.x 8B", "Llama-3.1-8B"},
	{"Llama 3 70B", "Llama-3.1-70B"},
	{"Mistral 7B Instruct v0.2", "Mistral-7B-v0.1"},
	{"TinyLlama 1.1B", "TinyLlama-1.1B-Chat-v1.0"},
	{"Llama 3.2 3B Instruct", "Llama-3.2-3B"},
	{"Llama 3.2 1B Instruct", "Llama-3.2-1B"},
};

/* Notes that mark a row as not representative. */
static const char *const bad_notes[] = {"anomalous", "memory-pressure", "very low", "spread",
					"nkvo=1"};

struct arch {
	int layers;
	double kv_bytes_per_token; /* f16 K and V over all layers, per token of context */
};

/* Leading unsigned integer of s ("24 (per stack)" -> 24), or 0. */
static int lead_int(const char *s)
{
	size_t n = 0;
	uint64_t v;

	while (s[n] >= '0' && s[n] <= '9')
		n++;
	if (n == 0 || rf_parse_u64(s, n, 1000000, &v) < 0)
		return 0;
	return (int)v;
}

static bool arch_for(const struct t_csv *a, const char *model, struct arch *out)
{
	const char *name = NULL;

	for (size_t i = 0; i < sizeof(model_map) / sizeof(model_map[0]); i++)
		if (strcmp(model, model_map[i][0]) == 0)
			name = model_map[i][1];
	if (!name || !a)
		return false;
	for (int r = 0; r < a->n_rows; r++) {
		const char *m = t_csv_get(a, r, "model");
		size_t len = strlen(name);
		int layers, heads, kv, hd, hidden;
		if (strncmp(m, name, len) != 0 || (m[len] != '\0' && m[len] != ' '))
			continue;
		layers = lead_int(t_csv_get(a, r, "num_layers"));
		heads = lead_int(t_csv_get(a, r, "num_attention_heads"));
		kv = lead_int(t_csv_get(a, r, "num_kv_heads"));
		hd = lead_int(t_csv_get(a, r, "head_dim"));
		hidden = lead_int(t_csv_get(a, r, "hidden_size"));
		if (layers <= 0)
			return false;
		if (hd <= 0 && heads > 0)
			hd = hidden / heads;
		if (kv <= 0)
			kv = heads;
		out->layers = layers;
		out->kv_bytes_per_token = 2.0 * layers * kv * hd * 2.0;
		return true;
	}
	return false;
}

static bool starts_with_ci(const char *s, const char *prefix)
{
	for (; *prefix; s++, prefix++) {
		char a = *s, b = *prefix;
		if (a >= 'A' && a <= 'Z')
			a = (char)(a - 'A' + 'a');
		if (a != b)
			return false;
	}
	return true;
}

static int backend_of(const char *col, enum speed_backend *b)
{
	if (starts_with_ci(col, "cuda"))
		*b = SPEED_BACKEND_CUDA;
	else if (starts_with_ci(col, "rocm"))
		*b = SPEED_BACKEND_ROCM;
	else if (starts_with_ci(col, "metal"))
		*b = SPEED_BACKEND_METAL;
	else if (starts_with_ci(col, "vulkan"))
		*b = SPEED_BACKEND_VULKAN;
	else if (starts_with_ci(col, "cpu"))
		*b = SPEED_BACKEND_CPU;
	else
		return -1;
	return 0;
}

/* Copies s without its parenthesised parts and without ", N threads". */
static void strip_host_details(const char *s, char *out, size_t outlen)
{
	size_t o = 0;
	int depth = 0;

	for (; *s && o + 1 < outlen; s++) {
		if (*s == '(') {
			depth++;
			continue;
		}
		if (*s == ')') {
			if (depth > 0)
				depth--;
			continue;
		}
		if (*s == ',' && depth == 0)
			break;
		if (depth == 0)
			out[o++] = *s;
	}
	while (o > 0 && out[o - 1] == ' ')
		o--;
	out[o] = '\0';
}

/* Resolves the device column: "2x NVIDIA RTX 3090 24GB" -> 2 devices. Returns 0 or the
 * resolver's error. */
static int resolve_row_device(const struct device_table *t, const char *col, int *count,
			      const struct device_profile **p)
{
	char buf[256];
	const char *name = col;
	int rc;

	*count = 1;
	if (col[0] >= '1' && col[0] <= '9' && col[1] == 'x' && col[2] == ' ') {
		*count = col[0] - '0';
		name = col + 3;
	}
	rc = device_resolve(t, name, p);
	if (rc == 0)
		return 0;
	strip_host_details(name, buf, sizeof(buf));
	return device_resolve(t, buf, p);
}

/* ", 12 threads" in the device column, or 0. */
static int threads_of(const char *col)
{
	const char *c = strstr(col, " threads");
	const char *s;

	if (!c)
		return 0;
	s = c;
	while (s > col && s[-1] >= '0' && s[-1] <= '9')
		s--;
	return s < c ? lead_int(s) : 0;
}

/* "~3.6B active" in the notes: active parameters in billions, or 0. */
static double active_params_b(const char *notes)
{
	const char *c = strstr(notes, "B active");
	const char *s;
	double v;

	if (!c)
		return 0;
	s = c;
	while (s > notes && ((s[-1] >= '0' && s[-1] <= '9') || s[-1] == '.'))
		s--;
	if (s == c || rf_parse_double(s, (size_t)(c - s), 0, 1e5, &v) < 0)
		return 0;
	return v;
}

static bool is_float_type(const char *quant)
{
	return starts_with_ci(quant, "f16") || starts_with_ci(quant, "bf16") ||
	       starts_with_ci(quant, "f32");
}

/* The tests the constants are fitted to: llama-bench's tg128 and pp512, and tg512. tg512 is the
 * same llama-bench decode test run for 512 tokens from an empty cache; the model adds the KV
 * reads at the mean context (256 tokens, under 1% of the weights for these models), so it
 * measures the same thing. It is included because only tg512 rows cover HBM parts (A100,
 * H100) and large models, where decode is held by the kernels' bandwidth ceiling rather than
 * the peak. FIT_TG128_ONLY=1 at build time restores the strict tg128/pp512 selection. */
#ifndef FIT_TG128_ONLY
#define FIT_TG128_ONLY 0
#endif

static bool fit_test(const char *test)
{
	return strcmp(test, "tg128") == 0 || strcmp(test, "pp512") == 0 ||
	       (!FIT_TG128_ONLY && strcmp(test, "tg512") == 0);
}

static void skip(struct speed_row *row, const char *why)
{
	row->use = ROW_SKIPPED;
	snprintf(row->reason, sizeof(row->reason), "%s", why);
}

/* Context tokens in the KV cache, on average, while the test generates. */
static double mean_context(const char *test)
{
	if (strcmp(test, "tg128") == 0 || strcmp(test, "tg128 (fa=1)") == 0)
		return 64;
	if (strcmp(test, "tg512") == 0)
		return 256;
	return 512; /* ./main runs generating about 1024 tokens */
}

static void build_row(struct speed_row *row, const struct t_csv *c, int r, const struct t_csv *a,
		      const struct device_table *devs)
{
	const char *notes = t_csv_get(c, r, "notes");
	const char *ngl = t_csv_get(c, r, "n_gpu_layers");
	const struct device_profile *p = NULL;
	struct speed_input *in = &row->obs.in;
	enum device_compute_kind ck;
	enum speed_backend be;
	struct arch ar = {0, 0};
	double size_gib, params_b = 0, active, tf;
	int count = 1, rc;
	bool decode, prefill;

	row->line = r + 2;
	snprintf(row->device, sizeof(row->device), "%s", t_csv_get(c, r, "device"));
	snprintf(row->model, sizeof(row->model), "%s", t_csv_get(c, r, "model"));
	snprintf(row->quant, sizeof(row->quant), "%s", t_csv_get(c, r, "quant"));
	snprintf(row->test, sizeof(row->test), "%s", t_csv_get(c, r, "test"));
	t_csv_num(c, r, "tokens_per_s", &row->measured);
	decode = row->test[0] == 't';
	prefill = row->test[0] == 'p';
	row->use = fit_test(row->test) ? ROW_FIT : ROW_CHECK;
	if (strstr(row->test, "prompt-eval")) {
		skip(row,
		     "./main prompt-eval average of a short prompt: not comparable with pp512");
		return;
	}
	if (strstr(row->test, "eval rate")) {
		skip(row, "Ollama eval rate with the quantization not stated");
		return;
	}
	/* A described CPU's run: the CPU table's model (cores, instruction sets, bandwidth)
	 * replays it through the estimate (tests/api/test_cpu_speed_rows.c); this file's single
	 * GFLOPS figure and host efficiency are not fitted on it. */
	if (strstr(notes, "CPU-table replay")) {
		skip(row, "replayed by tests/api/test_cpu_speed_rows.c through the CPU table");
		return;
	}
	for (size_t i = 0; i < sizeof(bad_notes) / sizeof(bad_notes[0]); i++) {
		if (strstr(notes, bad_notes[i])) {
			char why[96];
			snprintf(why, sizeof(why), "marked in notes (%s)", bad_notes[i]);
			skip(row, why);
			return;
		}
	}
	if (backend_of(t_csv_get(c, r, "backend"), &be) < 0) {
		skip(row, "backend not one of cuda/rocm/metal/vulkan/cpu");
		return;
	}
	rc = resolve_row_device(devs, row->device, &count, &p);
	if (rc == RF_E_CONFLICT) {
		skip(row, "device name matches several devices.json entries (variant not stated)");
		return;
	}
	if (rc < 0) {
		skip(row, "device not in devices.json under this name (variant not stated?)");
		return;
	}
	snprintf(row->device_id, sizeof(row->device_id), "%s", p->id);
	if (t_csv_num(c, r, "model_size_gib", &size_gib) < 0) {
		skip(row, "model size not stated");
		return;
	}
	if (t_csv_num(c, r, "params_b", &params_b) < 0 && prefill) {
		skip(row, "parameter count not stated");
		return;
	}
	if (params_b <= 0)
		params_b = size_gib * GIB / 2.0 / 1e9; /* only for decode, where it is unused */
	active = active_params_b(notes);
	if (active <= 0 || active > params_b)
		active = params_b;
	arch_for(a, row->model, &ar);
	memset(in, 0, sizeof(*in));
	in->backend = be;
	in->weight_bytes = size_gib * GIB * active / params_b;
	in->kv_bytes_start = ar.kv_bytes_per_token * mean_context(row->test);
	in->kv_bytes_full = in->kv_bytes_start;
	in->flops_per_token = 2.0 * active * 1e9;
	/* MoE: a micro-batch reads the experts beyond the active ones too. */
	in->moe_batch_bytes = active < params_b ? size_gib * GIB - in->weight_bytes : 0;
	in->n_layers = ar.layers;
	in->quantized = !is_float_type(row->quant);
	row->obs.test = decode ? SPEED_TEST_DECODE : SPEED_TEST_PREFILL;
	row->obs.measured_tps = row->measured;
	if (be == SPEED_BACKEND_CPU || strcmp(ngl, "0") == 0) {
		in->gpu_fraction = 0;
		in->host.bandwidth_gbs = p->memory_bandwidth_measured_gbs > 0 ?
						 p->memory_bandwidth_measured_gbs :
						 p->memory_bandwidth_gbs;
		in->host.bandwidth_measured = p->memory_bandwidth_measured_gbs > 0;
		in->host.threads = threads_of(row->device);
		if (in->host.threads <= 0)
			in->host.threads = p->cpu_cores;
		if (decode && in->host.bandwidth_gbs <= 0) {
			skip(row, "host memory bandwidth not in devices.json");
			return;
		}
		if (prefill && in->host.threads <= 0) {
			skip(row, "thread count not stated");
			return;
		}
		return;
	}
	if (strstr(ngl, "partial")) {
		skip(row, "partial offload with the split not stated");
		return;
	}
	in->gpu_fraction = 1;
	if (decode && p->memory_bandwidth_gbs <= 0) {
		skip(row, "device memory bandwidth not in devices.json");
		return;
	}
	tf = device_compute_tflops(p, &ck);
	if (prefill && ck == DEVICE_COMPUTE_UNKNOWN) {
		skip(row, "device compute rate not in devices.json");
		return;
	}
	if (prefill && ck == DEVICE_COMPUTE_VECTOR_NO_TENSOR) {
		skip(row, "tensor FP16 rate of this device not in devices.json");
		return;
	}
	in->n_devices = count;
	for (int i = 0; i < count; i++) {
		in->devices[i].bandwidth_gbs =
			p->memory_bandwidth_gbs > 0 ? p->memory_bandwidth_gbs : 1;
		in->devices[i].compute_tflops = tf;
		in->devices[i].hbm = device_hbm_class(p);
		in->devices[i].pro = device_pro_class(p);
		in->devices[i].compute = ck == DEVICE_COMPUTE_TENSOR  ? SPEED_COMPUTE_TENSOR :
					 ck == DEVICE_COMPUTE_UNKNOWN ? SPEED_COMPUTE_UNKNOWN :
									SPEED_COMPUTE_VECTOR;
	}
}

static struct device_table load_devices(const char *src_dir, int *rc)
{
	struct device_table t = {.n = 0, .devices = NULL};
	char *path = t_path(src_dir, "profiles/devices.json");
	char err[512];
	size_t len;
	char *text = t_read_file(path, &len);
	cJSON *doc;

	*rc = -1;
	if (!text) {
		fprintf(stderr, "accuracy: cannot read %s\n", path);
		free(path);
		return t;
	}
	doc = cJSON_ParseWithLength(text, len);
	if (!doc)
		fprintf(stderr, "accuracy: %s is not valid JSON\n", path);
	else if (api_device_table_from_json(doc, &t, err, sizeof(err)) < 0)
		fprintf(stderr, "accuracy: %s\n", err);
	else
		*rc = 0;
	cJSON_Delete(doc);
	free(text);
	free(path);
	return t;
}

int speed_rows_load(const char *data_dir, const char *src_dir, struct speed_rows *out)
{
	char *cp = t_path(data_dir, "calibration/llamacpp_tg_pp.csv");
	char *ap = t_path(data_dir, "calibration/model_arch.csv");
	struct t_csv *c = t_csv_read(cp), *a = t_csv_read(ap);
	struct speed_rows r = {.n = 0, .rows = NULL, .devices = {.n = 0, .devices = NULL}};
	int rc = -1;

	if (!c || !a) {
		fprintf(stderr, "accuracy: cannot read %s or %s\n", cp, ap);
		goto out;
	}
	r.devices = load_devices(src_dir, &rc);
	if (rc < 0)
		goto out;
	r.rows = calloc((size_t)c->n_rows, sizeof(*r.rows));
	if (!r.rows) {
		rc = -1;
		goto out;
	}
	for (int i = 0; i < c->n_rows; i++)
		build_row(&r.rows[i], c, i, a, &r.devices);
	r.n = c->n_rows;
	*out = r;
	r.rows = NULL;
	memset(&r.devices, 0, sizeof(r.devices)); /* *out owns the table now */
	rc = 0;
out:
	speed_rows_free(&r);
	t_csv_free(c);
	t_csv_free(a);
	free(cp);
	free(ap);
	return rc;
}

void speed_rows_free(struct speed_rows *r)
{
	if (!r)
		return;
	free(r->rows);
	r->rows = NULL;
	r->n = 0;
	device_table_clear(&r->devices);
}

size_t speed_rows_obs(const struct speed_rows *r, int odd_out, const char *skip_device,
		      struct speed_obs *obs, size_t cap)
{
	size_t n = 0;
	int k = 0;

	for (int i = 0; i < r->n; i++) {
		const struct speed_row *row = &r->rows[i];
		bool held;
		if (row->use != ROW_FIT)
			continue;
		held = (k++ % 4) == 3;
		if ((odd_out == 1 && held) || (odd_out == 2 && !held))
			continue;
		if (skip_device && strcmp(row->device_id, skip_device) == 0)
			continue;
		if (n < cap)
			obs[n] = row->obs;
		n++;
	}
	return n < cap ? n : cap;
}

double speed_row_error(const struct speed_row *row,
		       const struct speed_params params[SPEED_BACKEND_COUNT], double *estimate)
{
	double e = speed_predict(&row->obs.in, params, row->obs.test);

	if (estimate)
		*estimate = e;
	if (e <= 0 || row->measured <= 0)
		return -1;
	return fabs(e - row->measured) / row->measured;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	if (n <= 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void speed_rows_medians(const struct speed_rows *r,
			const struct speed_params params[SPEED_BACKEND_COUNT], int which,
			double *dec, double *pre)
{
	double *d = calloc((size_t)r->n + 1, sizeof(double));
	double *p = calloc((size_t)r->n + 1, sizeof(double));
	int nd = 0, np = 0, k = 0;

	for (int i = 0; d && p && i < r->n; i++) {
		const struct speed_row *row = &r->rows[i];
		double e;
		bool held;
		if (row->use != ROW_FIT)
			continue;
		held = (k++ % 4) == 3;
		if (which == 2 && !held)
			continue;
		e = speed_row_error(row, params, NULL);
		if (e < 0)
			continue;
		if (row->obs.test == SPEED_TEST_DECODE)
			d[nd++] = e;
		else
			p[np++] = e;
	}
	*dec = d ? median(d, nd) : NAN;
	*pre = p ? median(p, np) : NAN;
	free(d);
	free(p);
}

int speed_rows_lodo(const struct speed_rows *r, double *dec, double *pre)
{
	struct speed_obs *obs = calloc((size_t)r->n + 1, sizeof(*obs));
	double *d = calloc((size_t)r->n + 1, sizeof(double));
	double *p = calloc((size_t)r->n + 1, sizeof(double));
	int nd = 0, np = 0, rc = 0;

	if (!obs || !d || !p) {
		rc = -1;
		goto out;
	}
	for (int i = 0; i < r->n; i++) {
		const struct speed_row *row = &r->rows[i];
		struct speed_params fit[SPEED_BACKEND_COUNT];
		bool first = true;
		size_t n;
		if (row->use != ROW_FIT)
			continue;
		for (int j = 0; j < i; j++)
			if (r->rows[j].use == ROW_FIT &&
			    strcmp(r->rows[j].device_id, row->device_id) == 0)
				first = false;
		if (!first)
			continue;
		n = speed_rows_obs(r, 0, row->device_id, obs, (size_t)r->n);
		if (speed_fit(obs, n, speed_fitted, fit) < 0) {
			rc = -1;
			goto out;
		}
		for (int j = i; j < r->n; j++) {
			const struct speed_row *q = &r->rows[j];
			double e;
			if (q->use != ROW_FIT || strcmp(q->device_id, row->device_id) != 0)
				continue;
			e = speed_row_error(q, fit, NULL);
			if (e < 0)
				continue;
			if (q->obs.test == SPEED_TEST_DECODE)
				d[nd++] = e;
			else
				p[np++] = e;
		}
	}
	*dec = median(d, nd);
	*pre = median(p, np);
out:
	free(obs);
	free(d);
	free(p);
	return rc;
}

static void print_params(FILE *f, const char *title, const struct speed_params *t)
{
	fprintf(f,
		"\n%s\nbackend, mem_eff, mem_eff_hbm, layer_ms, tensor_eff, "
		"tensor_ceiling_tflops, tensor_quant_factor, tensor_eff_pro, vector_eff, "
		"vector_quant_factor, "
		"cpu_gflops_per_thread, rows (decode/tensor/vector/cpu prefill)\n",
		title);
	for (int b = 0; b < SPEED_BACKEND_COUNT; b++)
		fprintf(f,
			"%s, %.3f, %.3f, %.3f, %.2f, %.0f, %.2f, %.2f, %.2f, %.2f, %.1f, "
			"%d/%d/%d/%d\n",
			speed_backend_name((enum speed_backend)b), t[b].mem_eff, t[b].mem_eff_hbm,
			t[b].layer_ms, t[b].tensor_eff, t[b].tensor_ceiling_tflops,
			t[b].tensor_quant_factor, t[b].tensor_eff_pro, t[b].vector_eff,
			t[b].vector_quant_factor, t[b].cpu_gflops_per_thread, t[b].rows_decode,
			t[b].rows_tensor, t[b].rows_vector, t[b].rows_cpu_prefill);
}

static void print_rows(FILE *f, const struct speed_rows *r, enum speed_row_use use)
{
	fprintf(f, "row, device, model, quant, test, measured, estimated, error%%\n");
	for (int i = 0; i < r->n; i++) {
		const struct speed_row *row = &r->rows[i];
		double est, e;
		if (row->use != use)
			continue;
		e = speed_row_error(row, speed_fitted, &est);
		fprintf(f, "%d, %s, %s, %s, %s, %.2f, %.2f, %+.1f\n", row->line, row->device,
			row->model, row->quant, row->test, row->measured, est,
			e < 0 ? NAN : 100.0 * (est - row->measured) / row->measured);
	}
}

/* The rows held out of the train fit (every 4th fitted row), scored with that fit. */
static void print_held_out(FILE *f, const struct speed_rows *r,
			   const struct speed_params train[SPEED_BACKEND_COUNT])
{
	int k = 0;

	fprintf(f, "\n== speed: held-out rows (every 4th), fitted on the others\n"
		   "row, device, model, quant, test, measured, estimated, error%%\n");
	for (int i = 0; i < r->n; i++) {
		const struct speed_row *row = &r->rows[i];
		double est, e;
		if (row->use != ROW_FIT || (k++ % 4) != 3)
			continue;
		e = speed_row_error(row, train, &est);
		fprintf(f, "%d, %s, %s, %s, %s, %.2f, %.2f, %+.1f\n", row->line, row->device,
			row->model, row->quant, row->test, row->measured, est,
			e < 0 ? NAN : 100.0 * (est - row->measured) / row->measured);
	}
}

static void backend_medians(FILE *f, const struct speed_rows *r)
{
	fprintf(f, "\nper backend (in-sample): backend, test, rows, median error%%\n");
	for (int b = 0; b < SPEED_BACKEND_COUNT; b++) {
		for (int t = SPEED_TEST_DECODE; t <= SPEED_TEST_PREFILL; t++) {
			double v[512];
			int n = 0;
			for (int i = 0; i < r->n && n < 512; i++) {
				const struct speed_row *row = &r->rows[i];
				double e;
				if (row->use != ROW_FIT || (int)row->obs.in.backend != b ||
				    (int)row->obs.test != t)
					continue;
				e = speed_row_error(row, speed_fitted, NULL);
				if (e >= 0)
					v[n++] = e;
			}
			if (n)
				fprintf(f, "%s, %s, %d, %.1f\n",
					speed_backend_name((enum speed_backend)b),
					t == SPEED_TEST_DECODE ? "decode" : "prefill", n,
					100 * median(v, n));
		}
	}
}

static void check_medians(const struct speed_rows *r, double *dec, double *pre)
{
	double *d = calloc((size_t)r->n + 1, sizeof(double));
	double *p = calloc((size_t)r->n + 1, sizeof(double));
	int nd = 0, np = 0;

	for (int i = 0; d && p && i < r->n; i++) {
		const struct speed_row *row = &r->rows[i];
		double e;
		if (row->use != ROW_CHECK)
			continue;
		e = speed_row_error(row, speed_fitted, NULL);
		if (e < 0)
			continue;
		if (row->obs.test == SPEED_TEST_DECODE)
			d[nd++] = e;
		else
			p[np++] = e;
	}
	*dec = d ? median(d, nd) : NAN;
	*pre = p ? median(p, np) : NAN;
	free(d);
	free(p);
}

struct t_csv *speed_offload_csv(const char *src_dir)
{
	char *path = t_path(src_dir, "tests/fixtures/partial_offload_prefill.csv");
	struct t_csv *c = t_csv_read(path);

	free(path);
	return c;
}

int speed_offload_input(const struct t_csv *c, int r, const struct device_table *t,
			struct speed_input *out)
{
	const struct device_profile *prof = NULL;
	enum device_compute_kind kind = DEVICE_COMPUTE_UNKNOWN;
	double size, params, active, layers, ngl, ub, prompt, mmap, wsl = 0;
	double ncmoe = 0, expert_layer = 0, n_exp = 0, n_used = 0;
	struct speed_input in;

	if (device_resolve(t, t_csv_get(c, r, "device"), &prof) < 0 ||
	    t_csv_num(c, r, "model_size_gib", &size) < 0 ||
	    t_csv_num(c, r, "params_b", &params) < 0 ||
	    t_csv_num(c, r, "active_params_b", &active) < 0 ||
	    t_csv_num(c, r, "n_layers", &layers) < 0 || t_csv_num(c, r, "ngl", &ngl) < 0 ||
	    t_csv_num(c, r, "n_ubatch", &ub) < 0 || t_csv_num(c, r, "prompt", &prompt) < 0 ||
	    t_csv_num(c, r, "mmap", &mmap) < 0 || params <= 0 || layers <= 0)
		return -1;
	memset(&in, 0, sizeof(in));
	in.backend = SPEED_BACKEND_CUDA;
	size *= 1024.0 * 1024.0 * 1024.0;
	in.weight_bytes = size * active / params;
	in.moe_batch_bytes = size * (1 - active / params);
	in.flops_per_token = 2e9 * active;
	in.n_layers = (int)layers;
	in.quantized = true;
	in.gpu_fraction = ngl / layers;
	in.n_ubatch = (int)ub;
	in.prompt_tokens = prompt;
	in.host_pinned = mmap == 0;
	if (t_csv_get(c, r, "link_gbs")[0] && t_csv_num(c, r, "link_gbs", &in.host.link_gbs) < 0)
		return -1;
	in.host.no_page_lock = t_csv_num(c, r, "wsl", &wsl) == 0 && wsl > 0;
	if (t_csv_num(c, r, "n_cpu_moe", &ncmoe) == 0 && ncmoe > 0 &&
	    (t_csv_num(c, r, "expert_layer_gib", &expert_layer) < 0 ||
	     t_csv_num(c, r, "n_experts", &n_exp) < 0 ||
	     t_csv_num(c, r, "n_experts_used", &n_used) < 0 || n_exp <= 0))
		return -1;
	if (ncmoe > 0) {
		/* --n-cpu-moe: the experts of that many layers stay on the host; a token reads k
		 * of E of them there (plan_eval.c's speed_model does the same). */
		double host = ncmoe * expert_layer * 1024.0 * 1024.0 * 1024.0;
		in.host_copy_bytes = in.host_expert_bytes = host;
		in.n_experts = (int)n_exp;
		in.n_experts_used = (int)n_used;
		in.gpu_fraction = (in.gpu_fraction * in.weight_bytes - host * n_used / n_exp) /
				  in.weight_bytes;
		if (in.gpu_fraction < 0)
			in.gpu_fraction = 0;
	}
	in.n_devices = 1;
	in.devices[0].bandwidth_gbs = prof->memory_bandwidth_gbs;
	in.devices[0].compute_tflops = device_compute_tflops(prof, &kind);
	in.devices[0].compute = kind == DEVICE_COMPUTE_TENSOR  ? SPEED_COMPUTE_TENSOR :
				kind == DEVICE_COMPUTE_UNKNOWN ? SPEED_COMPUTE_UNKNOWN :
								 SPEED_COMPUTE_VECTOR;
	in.devices[0].pro = device_pro_class(prof);
	in.devices[0].hbm = device_hbm_class(prof);
	*out = in;
	return 0;
}

/* The partial-offload rows: each "row" line's estimate, and the staging rate refitted. */
static void print_offload(FILE *f, const struct speed_rows *r, const char *src_dir)
{
	struct t_csv *c = speed_offload_csv(src_dir);
	struct speed_obs obs[64];
	size_t n = 0;
	double gbs = -1, skew = -1;

	if (!c) {
		fprintf(f, "\n== speed: tests/fixtures/partial_offload_prefill.csv missing\n");
		return;
	}
	fprintf(f,
		"\n== speed: partial-offload prefill (tests/fixtures/partial_offload_prefill.csv)"
		"\nline, device, model, ngl, n_ubatch, mmap, measured, estimated, error\n");
	for (int i = 0; i < c->n_rows && n < 64; i++) {
		double est;
		if (strcmp(t_csv_get(c, i, "use"), "row") != 0 ||
		    speed_offload_input(c, i, &r->devices, &obs[n].in) < 0 ||
		    t_csv_num(c, i, "tokens_per_s", &obs[n].measured_tps) < 0)
			continue;
		obs[n].test = SPEED_TEST_PREFILL;
		est = speed_predict(&obs[n].in, speed_fitted, SPEED_TEST_PREFILL);
		fprintf(f, "%d, %s, %s, %s, %s, %s, %.2f, %.2f, %+.1f%%\n", i + 2,
			t_csv_get(c, i, "device"), t_csv_get(c, i, "model"), t_csv_get(c, i, "ngl"),
			t_csv_get(c, i, "n_ubatch"), t_csv_get(c, i, "mmap"), obs[n].measured_tps,
			est, 100 * (est / obs[n].measured_tps - 1));
		n++;
	}
	if (speed_fit_staging(obs, n, speed_fitted, &gbs) < 0)
		gbs = -1;
	if (speed_fit_expert_skew(obs, n, speed_fitted, &skew) < 0)
		skew = -1;
	fprintf(f,
		"pageable staging (WSL rows): %.1f GB/s in core/fit/speed.c (%d rows), %.1f "
		"refitted now\nexpert routing skew (rows copying host experts): %.2f in "
		"core/fit/speed.c (%d rows), %.2f refitted now\n",
		speed_fitted[SPEED_BACKEND_CUDA].host_staging_gbs,
		speed_fitted[SPEED_BACKEND_CUDA].rows_staging, gbs,
		speed_fitted[SPEED_BACKEND_CUDA].expert_skew,
		speed_fitted[SPEED_BACKEND_CUDA].rows_skew, skew);
	t_csv_free(c);
}

int accuracy_speed(const char *data_dir, const char *src_dir, FILE *f)
{
	struct speed_rows r;
	struct speed_obs *obs;
	struct speed_params refit[SPEED_BACKEND_COUNT], train[SPEED_BACKEND_COUNT];
	double in_d, in_p, ho_d, ho_p, lo_d, lo_p, ck_d, ck_p;
	size_t n;
	int rc = 0, skipped = 0;

	if (speed_rows_load(data_dir, src_dir, &r) < 0)
		return -1;
	obs = calloc((size_t)r.n + 1, sizeof(*obs));
	if (!obs) {
		speed_rows_free(&r);
		return -1;
	}
	fprintf(f, "== speed: tg128 / tg512 / pp512 rows of calibration/llamacpp_tg_pp.csv "
		   "(fitted; estimates with the constants in core/fit/speed.c)\n");
	print_rows(f, &r, ROW_FIT);
	fprintf(f, "\n== speed: rows of other tests (./main averages, fa=1): never fitted\n");
	print_rows(f, &r, ROW_CHECK);
	fprintf(f, "\n== speed: rows skipped\nrow, device, model, test, reason\n");
	for (int i = 0; i < r.n; i++) {
		const struct speed_row *row = &r.rows[i];
		if (row->use != ROW_SKIPPED)
			continue;
		skipped++;
		fprintf(f, "%d, %s, %s, %s, %s\n", row->line, row->device, row->model, row->test,
			row->reason);
	}
	backend_medians(f, &r);
	speed_rows_medians(&r, speed_fitted, 0, &in_d, &in_p);
	n = speed_rows_obs(&r, 0, NULL, obs, (size_t)r.n);
	speed_fit(obs, n, speed_fitted, refit);
	print_params(f, "constants in core/fit/speed.c", speed_fitted);
	print_params(f, "refitted now on all fit rows (should match the above up to rounding)",
		     refit);
	n = speed_rows_obs(&r, 1, NULL, obs, (size_t)r.n);
	speed_fit(obs, n, speed_fitted, train);
	print_params(f, "fitted on the train rows (every 4th row held out)", train);
	speed_rows_medians(&r, train, 2, &ho_d, &ho_p);
	print_held_out(f, &r, train);
	print_offload(f, &r, src_dir);
	if (speed_rows_lodo(&r, &lo_d, &lo_p) < 0)
		lo_d = lo_p = NAN;
	check_medians(&r, &ck_d, &ck_p);
	fprintf(f, "\n== speed medians (relative error)\n");
	fprintf(f, "decode in-sample: %.1f%%, prefill in-sample: %.1f%%\n", 100 * in_d, 100 * in_p);
	fprintf(f, "decode held out (every 4th row, fitted on the rest): %.1f%%, prefill: %.1f%%\n",
		100 * ho_d, 100 * ho_p);
	fprintf(f, "decode leave-one-device-out: %.1f%%, prefill: %.1f%%\n", 100 * lo_d,
		100 * lo_p);
	fprintf(f, "decode on other tests (./main averages, fa=1; never fitted): %.1f%%\n",
		100 * ck_d);
	(void)ck_p;
	fprintf(f, "rows skipped: %d (reasons above)\n", skipped);
	fprintf(f, "targets: decode < %.0f%%, prefill < %.0f%%\n", 100 * ACCURACY_DECODE_TARGET,
		100 * ACCURACY_PREFILL_TARGET);
	if (!(in_d < ACCURACY_DECODE_TARGET && ho_d < ACCURACY_DECODE_TARGET &&
	      lo_d < ACCURACY_DECODE_TARGET && in_p < ACCURACY_PREFILL_TARGET &&
	      ho_p < ACCURACY_PREFILL_TARGET && lo_p < ACCURACY_PREFILL_TARGET)) {
		fprintf(f, "speed: a median misses its target\n");
		rc = 1;
	}
	free(obs);
	speed_rows_free(&r);
	return rc;
}
