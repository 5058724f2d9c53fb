/*
 * The inference-memory estimate against measured data (see memory_calib.h).
 *
 * How each llamacpp_memory.csv row is read, and why:
 *  - model: the catalog entry of the row's architecture (the table below; a fine-tune has its
 *    base's shapes); quant: the first word of the quant column.
 *  - n_ctx as written ("8192 (n_seq_max 4)" -> 8192); the Ollama row states none, and its KV
 *    of 224 MiB is Ollama's default of 4096, which is used. n_ubatch as written; rows of builds
 *    from before n_ubatch reserved their graph with the whole batch, so n_batch is used.
 *  - weights: llama.cpp's GPU model buffer, plus the host buffer when the row has it. Old Metal
 *    logs print "mem required" for the whole model; old CUDA logs "VRAM used" for the GPU part
 *    (their "mem required (host)" being the token embeddings left on the host).
 *    The estimate is summed over the same buffers.
 *  - total = model + KV + compute buffers (+ host compute when logged), for rows with all of
 *    them; a layer split sums its GPUs. The encoder row (bge-small) was logged by a build that
 *    still allocated an unused KV cache for BERT, which current llama.cpp no longer does: its
 *    KV is left out of both sides.
 */
#include "tests/memory_calib.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_json.h"
#include "core/fit/estimate.h"
#include "core/fit/quant.h"
#include "tests/csv.h"
#include "tests/test.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * 1024.0 * 1024.0)

struct model_catalog *mc_catalog_load(const char *src_dir)
{
	char *path = t_path(src_dir, "profiles/models.json");
	size_t len = 0;
	char *text = t_read_file(path, &len);
	struct model_catalog *c = NULL;
	cJSON *doc;
	char err[256];

	if (!text) {
		fprintf(stderr, "cannot read %s\n", path);
		free(path);
		return NULL;
	}
	doc = cJSON_ParseWithLength(text, len);
	if (!doc)
		fprintf(stderr, "%s: not valid JSON\n", path);
	else if (model_catalog_from_json(doc, &c, err, sizeof(err)) < 0)
		fprintf(stderr, "%s: %s\n", path, err);
	cJSON_Delete(doc);
	free(text);
	free(path);
	return c;
}

double mc_rel(double est, double meas)
{
	return meas != 0 ? (est - meas) / meas : 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double mc_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The leading integer of s ("8192 requested" -> 8192), or -1. */
static long long lead_int(const char *s)
{
	long long v = 0;
	int digits = 0;

	while (*s == ' ')
		s++;
	for (; *s >= '0' && *s <= '9' && digits < 12; s++, digits++)
		v = v * 10 + (*s - '0');
	return digits ? v : -1;
}

/* The first word of s ("Q4_K_M (4.58 GiB)" -> "Q4_K_M") into out. */
static void first_word(const char *s, char *out, size_t outlen)
{
	size_t n = 0;

	while (s[n] && s[n] != ' ' && s[n] != '(' && s[n] != ',' && n + 1 < outlen)
		n++;
	memcpy(out, s, n);
	out[n] = '\0';
}

static const struct {
	const char *prefix; /* llamacpp_memory.csv model column */
	const char *id;
} mem_models[] = {
	{"Meta-Llama-3-8B", "meta-llama/Meta-Llama-3-8B"},
	{"llama-3-Korean-Bllossom-8B", "meta-llama/Meta-Llama-3-8B"},
	{"Llama-2-7B", "meta-llama/Llama-2-7b-hf"},
	{"Llama-2-13B", "meta-llama/Llama-2-13b-hf"},
	{"LLaMA-1-7B", "huggyllama/llama-7b"},
	{"bge-small-en", "BAAI/bge-small-en-v1.5"},
	{"Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B"},
	{"dolphin-2.2.1-mistral-7b", "mistralai/Mistral-7B-v0.1"},
	{"DeepSeek-R1-Distill-Llama-8B", "meta-llama/Llama-3.1-8B"},
};

static const struct model_entry *mem_model(const struct model_catalog *c, const char *col)
{
	for (size_t i = 0; i < sizeof(mem_models) / sizeof(mem_models[0]); i++)
		if (strncmp(col, mem_models[i].prefix, strlen(mem_models[i].prefix)) == 0)
			return model_catalog_find(c, mem_models[i].id);
	return NULL;
}

static bool num(const struct t_csv *t, int r, const char *col, double *v)
{
	return t_csv_num(t, r, col, v) == 0;
}

static void eval_mem_row(const struct t_csv *t, int r, const struct model_catalog *c,
			 struct mc_mem_row *row)
{
	const struct model_entry *m = mem_model(c, t_csv_get(t, r, "model"));
	struct rf_mem_weights *w = NULL;
	struct rf_infer_params p;
	struct rf_mem_device dev[2];
	struct rf_mem_estimate e;
	double model_gpu, cpu_model = 0, kv = 0, compute = 0, host_compute = 0, v;
	bool has_cpu, has_host_compute, whole, encoder;
	int n_dev, ft;
	long long x;

	memset(row, 0, sizeof(*row));
	row->line = r + 2;
	snprintf(row->model, sizeof(row->model), "%s", t_csv_get(t, r, "model"));
	first_word(t_csv_get(t, r, "quant"), row->quant, sizeof(row->quant));
	snprintf(row->device, sizeof(row->device), "%s", t_csv_get(t, r, "device"));
	ft = rf_ftype_from_name(row->quant);
	if (!m || ft < 0 || !num(t, r, "model_buffer_mib", &model_gpu)) {
		snprintf(row->reason, sizeof(row->reason),
			 "no catalog model, scheme or model buffer");
		return;
	}
	encoder = m->arch.family == MODEL_ENCODER;

	rf_infer_params_default(&p);
	x = lead_int(t_csv_get(t, r, "n_ctx"));
	p.n_ctx = x > 0 ? x : 4096;
	x = lead_int(t_csv_get(t, r, "n_batch"));
	p.n_batch = x > 0 ? x : 512;
	x = lead_int(t_csv_get(t, r, "n_ubatch"));
	p.n_ubatch = x > 0 ? x : p.n_batch;
	x = lead_int(t_csv_get(t, r, "n_gpu_layers"));
	p.n_gpu_layers = x > 0 ? x : -1;
	p.flash_attn = strcmp(t_csv_get(t, r, "flash_attn"), "1") == 0;
	n_dev = strncmp(row->device, "2x ", 3) == 0 ? 2 : 1;
	memset(dev, 0, sizeof(dev));
	for (int i = 0; i < n_dev; i++) {
		snprintf(dev[i].name, sizeof(dev[i].name), "GPU%d", i);
		dev[i].free_bytes = 24LL << 30;
		dev[i].budget_bytes = -1;
	}

	w = malloc(sizeof(*w));
	if (!w || rf_weights_from_scheme(&m->arch, ft, -1, w) < 0 ||
	    rf_estimate_inference(&m->arch, w, &p, dev, n_dev, NULL, &e) < 0) {
		snprintf(row->reason, sizeof(row->reason), "the estimate failed");
		free(w);
		return;
	}
	free(w);
	row->usable = true;

	has_cpu = num(t, r, "cpu_model_buffer_mib", &cpu_model);
	has_host_compute = num(t, r, "host_compute_buffer_mib", &host_compute);
	/* Old Metal logs print the whole model as "mem required"; an old CUDA log's "mem required
	 * (host)" is only the part left on the host. */
	whole = strstr(t_csv_get(t, r, "notes"), "model value is \"mem required\"") != NULL;
	row->meas_weights = model_gpu + (has_cpu ? cpu_model : 0);
	if (whole || has_cpu)
		row->est_weights = (double)e.weights_bytes / MIB;
	else
		row->est_weights = (double)(e.weights_bytes - e.weights_host_bytes) / MIB;

	if (num(t, r, "kv_buffer_mib", &kv)) {
		if (encoder) {
			snprintf(row->reason, sizeof(row->reason),
				 "KV: this build allocated an unused KV cache for BERT (%.2f MiB); "
				 "llama.cpp allocates none now",
				 kv);
		} else {
			row->has_kv = true;
			row->meas_kv = kv;
			row->est_kv = (double)e.kv_cache_bytes / MIB;
		}
	}
	if (num(t, r, "kv_buffer_mib", &v) && num(t, r, "compute_buffer_mib", &compute)) {
		double est_gpu_compute = (double)(e.compute_bytes - e.compute_host_bytes) / MIB;
		row->has_total = true;
		row->meas_total = row->meas_weights + (encoder ? 0 : v) + compute +
				  (has_host_compute ? host_compute : 0);
		row->est_total = row->est_weights + (double)e.kv_cache_bytes / MIB +
				 est_gpu_compute +
				 (has_host_compute ? (double)e.compute_host_bytes / MIB : 0);
	}
}

int mc_memory_rows(const char *data_dir, const struct model_catalog *c, struct mc_mem_row **rows)
{
	char *path = t_path(data_dir, "calibration/llamacpp_memory.csv");
	struct t_csv *t = t_csv_read(path);
	struct mc_mem_row *out;
	int n;

	free(path);
	if (!t)
		return -1;
	n = t->n_rows;
	out = calloc((size_t)(n > 0 ? n : 1), sizeof(*out));
	if (!out) {
		t_csv_free(t);
		return -1;
	}
	for (int r = 0; r < n; r++)
		eval_mem_row(t, r, c, &out[r]);
	t_csv_free(t);
	*rows = out;
	return n;
}

/* ---- GGUF sizes ----------------------------------------------------------------------------- */

static const struct {
	const char *name; /* gguf_sizes.csv model column, exactly */
	const char *id;
} size_models[] = {
	{"Llama-3.1-8B", "meta-llama/Llama-3.1-8B"},
	{"Llama-3.1-405B", "meta-llama/Llama-3.1-405B"},
	{"Llama-3-8B", "meta-llama/Meta-Llama-3-8B"},
	{"Llama-2-7B", "meta-llama/Llama-2-7b-hf"},
	{"Llama-2-13B", "meta-llama/Llama-2-13b-hf"},
	{"LLaMA-1-30B", "huggyllama/llama-30b"},
	{"LLaMA-1-65B", "huggyllama/llama-65b"},
	{"Llama-3.x-8B", "meta-llama/Llama-3.1-8B"},
	{"Llama-3.2-3B-Instruct", "meta-llama/Llama-3.2-3B"},
	{"Llama-3.2-3B", "meta-llama/Llama-3.2-3B"},
	{"Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-1B"},
	{"TinyLlama-1.1B", "TinyLlama/TinyLlama-1.1B-Chat-v1.0"},
	{"Gemma-2-2B", "google/gemma-2-2b"},
	{"Mistral-7B-Instruct-v0.2", "mistralai/Mistral-7B-v0.1"},
	{"Qwen2.5-Coder-7B-Instruct", "Qwen/Qwen2.5-7B"},
	{"Qwen2.5-14B-Instruct", "Qwen/Qwen2.5-14B"},
	{"gpt-oss-20B", "openai/gpt-oss-20b"},
	{"Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B"},
	{"Pythia-2.8B", "EleutherAI/pythia-2.8b"},
};

/* llama-bench "size" (GiB of tensor data) of GGUFs made by others, from the Arc Pro B70
 * benchmark README (llama.cpp b9739; search index file id 56029580622). */
static const struct {
	const char *id;
	const char *quant;
	double gib;
} bench_sizes[] = {
	{"meta-llama/Llama-3.1-8B", "Q5_K_M", 5.33},
	{"meta-llama/Llama-3.1-70B", "Q4_K_M", 39.59},
	{"meta-llama/Llama-3.1-70B", "Q2_K", 24.56},
	{"meta-llama/Llama-3.1-70B", "IQ3_XS", 27.29},
	{"Qwen/Qwen3-8B", "Q4_K_M", 4.68},
	{"google/gemma-3-12b-it", "Q4_K_M", 6.79},
	{"Qwen/Qwen3-14B", "Q4_K_M", 8.38},
	{"microsoft/phi-4", "Q4_K_M", 8.43},
	{"openai/gpt-oss-20b", "MXFP4_MOE", 11.27},
	{"mistralai/Mistral-Small-3.1-24B-Base-2503", "Q4_K_M", 13.34},
	{"google/gemma-3-27b-it", "Q4_K_M", 15.40},
	{"Qwen/Qwen3-30B-A3B", "Q4_K_M", 17.35},
	{"Qwen/Qwen3-32B", "Q4_K_M", 18.40},
	{"openai/gpt-oss-120b", "MXFP4_MOE", 59.02},
};

static double scheme_gib(const struct model_entry *m, int ft, bool *ok)
{
	struct rf_mem_weights *w = malloc(sizeof(*w));
	double gib = 0;

	*ok = w && rf_weights_from_scheme(&m->arch, ft, -1, w) == 0;
	if (*ok)
		gib = (double)w->file_bytes / GIB;
	free(w);
	return gib;
}

int mc_size_rows(const char *data_dir, const struct model_catalog *c, struct mc_size_row **rows)
{
	char *path = t_path(data_dir, "calibration/gguf_sizes.csv");
	struct t_csv *t = t_csv_read(path);
	const size_t n_bench = sizeof(bench_sizes) / sizeof(bench_sizes[0]);
	struct mc_size_row *out;
	int n = 0;

	free(path);
	if (!t)
		return -1;
	out = calloc((size_t)t->n_rows + n_bench, sizeof(*out));
	if (!out) {
		t_csv_free(t);
		return -1;
	}
	for (int r = 0; r < t->n_rows; r++) {
		struct mc_size_row *s = &out[n++];
		const char *model = t_csv_get(t, r, "model");
		const char *quant = t_csv_get(t, r, "quant");
		const struct model_entry *m = NULL;
		double v;
		bool ok;
		int ft;

		snprintf(s->origin, sizeof(s->origin), "gguf_sizes.csv:%d", r + 2);
		snprintf(s->model, sizeof(s->model), "%s", model);
		first_word(quant, s->quant, sizeof(s->quant));
		for (size_t i = 0; i < sizeof(size_models) / sizeof(size_models[0]); i++)
			if (strcmp(model, size_models[i].name) == 0)
				m = model_catalog_find(c, size_models[i].id);
		ft = strncmp(quant, "original", 8) == 0 ? RF_FT_F32 : rf_ftype_from_name(s->quant);
		if (strstr(t_csv_get(t, r, "source"), "Total VRAM")) {
			snprintf(s->reason, sizeof(s->reason), "a VRAM total, not a file size");
			continue;
		}
		if (ft < 0) {
			snprintf(s->reason, sizeof(s->reason), "not a llama.cpp scheme (%s)",
				 s->quant);
			continue;
		}
		if (!m) {
			snprintf(s->reason, sizeof(s->reason), "model not in the catalog");
			continue;
		}
		if (num(t, r, "file_size_gib", &v))
			s->meas_gib = v;
		else if (num(t, r, "file_size_gb", &v))
			s->meas_gib = v * 1e9 / GIB;
		else
			continue;
		s->est_gib = scheme_gib(m, ft, &ok);
		s->usable = ok;
		if (!ok)
			snprintf(s->reason, sizeof(s->reason), "the scheme cannot be applied");
	}
	for (size_t i = 0; i < n_bench; i++) {
		struct mc_size_row *s = &out[n++];
		const struct model_entry *m = model_catalog_find(c, bench_sizes[i].id);
		bool ok = false;

		snprintf(s->origin, sizeof(s->origin), "llama-bench");
		snprintf(s->model, sizeof(s->model), "%s", bench_sizes[i].id);
		snprintf(s->quant, sizeof(s->quant), "%s", bench_sizes[i].quant);
		s->meas_gib = bench_sizes[i].gib;
		if (m)
			s->est_gib = scheme_gib(m, rf_ftype_from_name(bench_sizes[i].quant), &ok);
		s->usable = ok;
		if (!ok)
			snprintf(s->reason, sizeof(s->reason), "model or scheme missing");
	}
	t_csv_free(t);
	*rows = out;
	return n;
}
