/*
 * rigfit's host memory against the real llama.cpp. The suite writes GGUF files of the
 * architecture families the catalog holds (small shapes, real tensor names, order, types and
 * metadata; tests/core/fit/cpu/gguf_synth.c), has the CPU build of llama.cpp that node-llama-cpp
 * ships load each of them under several settings (tests/llama/oracle.mjs), and compares every
 * buffer llama.cpp logs with rigfit's estimate for the same file and settings, computed by
 * the product's path: gguf_parse, gguf_to_arch, rf_weights_from_tensors,
 * rf_estimate_inference, with the repack class of this host's CPU from /proc/cpuinfo.
 *
 *  - weights per buffer (CPU_Mapped, CPU, CPU_REPACK with AMX) and the KV cache: to the byte,
 *    as far as llama.cpp's log shows them (MiB with two decimals: within 0.005 MiB);
 *  - KV cells of the full and the windowed caches: exactly;
 *  - compute and output buffers: within 2% or 4 MiB, whichever is larger.
 *
 * The oracle is a test dependency installed by `make deps` (tests/tools/deps.sh) under
 * build/llama; when node or the package is missing the suite fails, it does not skip.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fit/cpu/repack.h"
#include "core/fit/estimate.h"
#include "core/fit/gguf.h"
#include "core/hw/hw.h"
#include "tests/core/fit/cpu/gguf_synth.h"
#include "tests/core/fit/cpu/oracle.h"
#include "tests/test.h"

#define MIB (1024.0 * 1024.0)
#define LOG_ROUND_MIB 0.0051 /* llama.cpp prints MiB with two decimals */

/* A family as the catalog holds it, at a small size. */
struct fam {
	const char *name;
	const char *llm_arch;
	const char *quant;
	bool tied;
	void (*shape)(struct model_arch *a);
};

static void base(struct model_arch *a)
{
	a->hidden_size = 256;
	a->n_layers = 2;
	a->n_heads = 4;
	a->n_kv_heads = 2;
	a->head_dim = 64;
	a->intermediate_size = 512;
	a->vocab_size = 2048;
	a->max_position_embeddings = 32768;
}

static void shape_llama(struct model_arch *a)
{
	base(a);
}

/* Mistral 7B's shape: 4:1 grouped-query attention, llama's architecture. */
static void shape_mistral(struct model_arch *a)
{
	base(a);
	a->n_heads = 8;
	a->n_kv_heads = 2;
	a->head_dim = 32;
}

static void shape_qwen2(struct model_arch *a)
{
	base(a);
	a->attn_bias = true;
}

static void shape_qwen3(struct model_arch *a)
{
	base(a);
	a->qk_norm = true;
	a->head_dim = 128; /* Qwen3's head is wider than hidden / heads */
}

static void shape_qwen3moe(struct model_arch *a)
{
	base(a);
	a->qk_norm = true;
	a->intermediate_size = 0;
	a->n_experts = 8;
	a->n_experts_per_tok = 2;
	a->moe_intermediate_size = 256;
}

/* Mixtral: llama's architecture with routed experts. */
static void shape_mixtral(struct model_arch *a)
{
	base(a);
	a->n_experts = 4;
	a->n_experts_per_tok = 2;
	a->moe_intermediate_size = 512;
}

static void shape_gemma2(struct model_arch *a)
{
	base(a);
	a->post_norms = true;
	a->sliding_window = 512;
	a->swa_pattern = 2;
	a->n_layers = 4;
}

static void shape_gemma3(struct model_arch *a)
{
	base(a);
	a->post_norms = true;
	a->qk_norm = true;
	a->sliding_window = 512;
	a->swa_pattern = 6;
	a->n_layers = 6;
}

static void shape_phi3(struct model_arch *a)
{
	base(a);
	a->fused_qkv = true;
	a->ffn = MODEL_FFN_FUSED;
	a->n_kv_heads = 4;
}

/* gpt-oss: biases everywhere, attention sinks, windowed layers every other layer, MXFP4
 * experts (repacked with AVX2). */
static void shape_gptoss(struct model_arch *a)
{
	base(a);
	a->n_heads = 8;
	a->intermediate_size = 0;
	a->n_experts = 4;
	a->n_experts_per_tok = 2;
	a->moe_intermediate_size = 256;
	a->attn_bias = a->attn_out_bias = a->mlp_bias = a->attn_sinks = true;
	a->sliding_window = 128;
	a->swa_pattern = 2;
	a->n_layers = 4;
}

static const struct fam fams[] = {
	{"llama-q8_0", "llama", "Q8_0", false, shape_llama},
	{"llama-tied-q4_0", "llama", "Q4_0", true, shape_llama},
	{"mistral-q4_k_m", "llama", "Q4_K_M", false, shape_mistral},
	{"qwen2-tied-q4_k_m", "qwen2", "Q4_K_M", true, shape_qwen2},
	{"qwen3-f16", "qwen3", "F16", true, shape_qwen3},
	{"qwen3moe-q4_0", "qwen3moe", "Q4_0", false, shape_qwen3moe},
	{"mixtral-q8_0", "llama", "Q8_0", false, shape_mixtral},
	{"gemma2-tied-q8_0", "gemma2", "Q8_0", true, shape_gemma2},
	{"gemma3-tied-q4_0", "gemma3", "Q4_0", true, shape_gemma3},
	{"phi3-q4_0", "phi3", "Q4_0", false, shape_phi3},
	{"gpt-oss-mxfp4", "gpt-oss", "MXFP4_MOE", false, shape_gptoss},
};
#define N_FAMS (sizeof(fams) / sizeof(fams[0]))

/* The settings each file is loaded with (llama.cpp's n_ubatch is n_batch here). */
struct setting {
	int64_t n_ctx, n_batch;
	bool fa;
	const char *kv; /* "F16", "Q8_0" */
	bool mmap, swa_full;
};

static const struct setting settings[] = {
	{8192, 512, false, "F16", true, false},
	{4096, 256, true, "Q8_0", false, false},
	{16384, 1024, true, "F16", true, true},
};
#define N_SET (sizeof(settings) / sizeof(settings[0]))

static void make_arch(const struct fam *f, struct model_arch *a)
{
	const char *field = NULL;

	model_arch_init(a);
	snprintf(a->llm_arch, sizeof(a->llm_arch), "%s", f->llm_arch);
	snprintf(a->model_type, sizeof(a->model_type), "%s", f->llm_arch);
	f->shape(a);
	a->tie_word_embeddings = f->tied;
	ck_assert_msg(model_arch_validate(a, &field) == 0, "%s: %s", f->name, field);
}

static double num(const cJSON *o, const char *k)
{
	return oracle_num(o, k);
}

/* terms: how many rounded figures of the log llama_mib adds up. */
static void near_log(const char *what, const char *job, double llama_mib, int64_t ours, int terms)
{
	double mib = (double)ours / MIB;
	ck_assert_msg(fabs(mib - llama_mib) <= LOG_ROUND_MIB * terms,
		      "%s, %s: llama.cpp %.2f MiB, rigfit %.4f MiB", job, what, llama_mib, mib);
}

static void near_tol(const char *what, const char *job, double llama_mib, int64_t ours)
{
	double mib = (double)ours / MIB;
	double tol = fmax(0.02 * llama_mib, 4.0);
	ck_assert_msg(fabs(mib - llama_mib) <= tol + LOG_ROUND_MIB,
		      "%s, %s: llama.cpp %.2f MiB, rigfit %.2f MiB (tolerance %.2f)", job, what,
		      llama_mib, mib, tol);
}

/* rigfit's estimate for one job, with the settings llama.cpp logged (node-llama-cpp adds a
 * token to the batch of some models). */
static void estimate_job(const char *path, const struct setting *s, const cJSON *ctx, int isa,
			 struct rf_mem_estimate *m)
{
	struct oracle_settings os = {.kv = s->kv, .use_mmap = s->mmap, .swa_full = s->swa_full};
	char msg[160];

	oracle_settings_from_log(ctx, &os);
	ck_assert_int_eq(os.n_ctx, s->n_ctx);
	ck_assert_int_ge(os.n_ubatch, s->n_batch);
	ck_assert_int_le(os.n_ubatch, s->n_batch + 1);
	ck_assert_int_eq(os.flash_attn, s->fa);
	ck_assert_msg(oracle_estimate(path, &os, isa, m, msg, sizeof(msg)) == 0, "%s: %s", path,
		      msg);
}

static void check_job(const cJSON *r, const char *job, const struct rf_mem_estimate *m)
{
	const cJSON *model = cJSON_GetObjectItemCaseSensitive(r, "model");
	const cJSON *kv = cJSON_GetObjectItemCaseSensitive(r, "kv");
	const cJSON *compute = cJSON_GetObjectItemCaseSensitive(r, "compute");
	const cJSON *output = cJSON_GetObjectItemCaseSensitive(r, "output");
	const cJSON *it;
	double kv_mib = 0, mapped = num(model, "CPU_Mapped"), cpu = num(model, "CPU");
	/* The extra buffers: the repacked copies (CPU_REPACK) and, on a host whose kernel grants
	 * AMX, the AMX buffer's tiles, which llama.cpp logs apart (rigfit's repack bytes are
	 * both). */
	double cpu_repack = num(model, "CPU_REPACK"), amx = num(model, "AMX");
	double repack = fmax(cpu_repack, 0) + fmax(amx, 0);
	int n_repack = (cpu_repack > 0) + (amx > 0), n_kv = 0;

	ck_assert_msg(!cJSON_GetObjectItemCaseSensitive(r, "error"), "%s: llama.cpp: %s", job,
		      cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "error")));
	{
		/* The build the estimate names in its assumptions is the one measured here. */
		char build[128];
		snprintf(build, sizeof(build), "llama.cpp %s (node-llama-cpp %s)",
			 cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "llama_cpp")),
			 cJSON_GetStringValue(
				 cJSON_GetObjectItemCaseSensitive(r, "node_llama_cpp")));
		ck_assert_str_eq(build, RF_LLAMA_CPP_BUILD);
	}
	near_log("CPU_Mapped model buffer", job, mapped < 0 ? 0 : mapped, m->weights_mapped_bytes,
		 1);
	near_log("CPU model buffer", job, cpu < 0 ? 0 : cpu, m->weights_cpu_bytes, 1);
	near_log("CPU_REPACK and AMX model buffers", job, repack, m->weights_repack_bytes,
		 n_repack > 1 ? n_repack : 1);
	near_log("host weights", job, fmax(mapped, 0) + fmax(cpu, 0) + repack,
		 m->weights_host_bytes, 2 + (n_repack > 1 ? n_repack : 1));
	cJSON_ArrayForEach(it, kv)
	{
		int64_t cells = (int64_t)num(it, "cells");
		kv_mib += num(it, "mib");
		ck_assert_msg(cells == m->n_ctx || cells == m->kv_cells_swa,
			      "%s: a KV cache of %lld cells; rigfit has %lld and %lld (windowed)",
			      job, (long long)cells, (long long)m->n_ctx,
			      (long long)m->kv_cells_swa);
		n_kv++;
	}
	ck_assert_msg(n_kv == (m->kv_cells_swa != m->n_ctx ? 2 : 1) || n_kv == 2,
		      "%s: %d KV caches", job, n_kv);
	near_log("KV cache", job, kv_mib, m->kv_cache_bytes, n_kv);
	near_tol("CPU compute buffer", job, num(compute, "CPU"), m->compute_host_bytes);
	near_tol("CPU output buffer", job, num(output, "CPU"), m->output_buffer_bytes);
}

/* The GGUF files of every family, written once into dir, and the jobs (each file under each
 * setting) at jobs_path. */
static void write_jobs(const char *dir, const char *jobs_path, char *paths[N_FAMS])
{
	cJSON *jobs = cJSON_CreateArray();
	char *json;

	for (size_t i = 0; i < N_FAMS; i++) {
		struct model_arch a;
		char msg[160], name[96];
		int ft = rf_ftype_from_name(fams[i].quant);
		snprintf(name, sizeof(name), "%s.gguf", fams[i].name);
		paths[i] = t_path(dir, name);
		make_arch(&fams[i], &a);
		ck_assert_msg(gguf_synth_write(paths[i], &a, ft, 7u + (uint32_t)i, msg,
					       sizeof(msg)) == 0,
			      "%s: %s", fams[i].name, msg);
		for (size_t k = 0; k < N_SET; k++) {
			const struct setting *s = &settings[k];
			cJSON *j = cJSON_CreateObject();
			cJSON_AddStringToObject(j, "file", paths[i]);
			cJSON_AddNumberToObject(j, "n_ctx", (double)s->n_ctx);
			cJSON_AddNumberToObject(j, "n_batch", (double)s->n_batch);
			cJSON_AddBoolToObject(j, "flash_attn", s->fa);
			cJSON_AddStringToObject(j, "type_k", s->kv);
			cJSON_AddStringToObject(j, "type_v", s->kv);
			cJSON_AddBoolToObject(j, "use_mmap", s->mmap);
			cJSON_AddBoolToObject(j, "swa_full", s->swa_full);
			cJSON_AddItemToArray(jobs, j);
		}
	}
	json = cJSON_PrintUnformatted(jobs);
	ck_assert_int_eq(t_write_file(jobs_path, json, strlen(json)), 0);
	free(json);
	cJSON_Delete(jobs);
}

/* Checks the oracle's output text for every job against rigfit's estimate for repack class
 * isa. Returns 0, or -1 when the run is not of `variant` (llama.cpp did not load that CPU
 * backend: this host cannot run it), before anything is checked. */
static int check_run(char *text, char *paths[N_FAMS], int isa, const char *variant)
{
	size_t n_seen = 0, n_repacked = 0;
	char *line, *next;

	for (line = text; line && *line; line = next) {
		cJSON *r;
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		r = cJSON_Parse(line);
		size_t fi = n_seen / N_SET;
		const struct setting *s = &settings[n_seen % N_SET];
		struct rf_mem_estimate *m;
		const char *loaded;
		char job[200];
		ck_assert_ptr_nonnull(r);
		loaded = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "cpu_variant"));
		if (variant && (!loaded || strcmp(loaded, variant) != 0)) {
			ck_assert_msg(n_seen == 0, "%s: the CPU backend changed to %s mid-run",
				      variant, loaded ? loaded : "none");
			cJSON_Delete(r);
			return -1;
		}
		m = calloc(1, sizeof(*m));
		ck_assert_ptr_nonnull(m);
		ck_assert_uint_lt(n_seen, N_FAMS * N_SET);
		snprintf(job, sizeof(job),
			 "[%s, %s] %s n_ctx %lld ubatch %lld fa %d kv %s mmap %d swa_full %d",
			 loaded ? loaded : "?", rf_repack_isa_name(isa), fams[fi].name,
			 (long long)s->n_ctx, (long long)s->n_batch, s->fa, s->kv, s->mmap,
			 s->swa_full);
		estimate_job(paths[fi], s, cJSON_GetObjectItemCaseSensitive(r, "context"), isa, m);
		check_job(r, job, m);
		if (m->weights_repack_bytes > 0)
			n_repacked++;
		free(m);
		cJSON_Delete(r);
		n_seen++;
	}
	if (n_seen == 0 && variant)
		return -1;
	ck_assert_uint_eq(n_seen, N_FAMS * N_SET);
	/* On x86 with AVX2 and on Arm the Q4_0 and Q4_K files must have exercised repacking. */
	if (isa != RF_REPACK_NONE)
		ck_assert_uint_gt(n_repacked, 0);
	return 0;
}

/* The x86 classes and, per class, the prebuilt's CPU backends that fill its buffers, best
 * first: the first one this host runs is checked. */
struct oracle_class {
	int cls;
	uint32_t needs; /* hw.h ISA bits the host must have */
	const char *variants[6];
};

static const struct oracle_class x86_classes[] = {
	{RF_REPACK_NONE, 0, {"sse42", "x64", NULL}},
	{RF_REPACK_AVX2, HW_ISA(AVX2), {"haswell", "alderlake", NULL}},
	{RF_REPACK_AVX512,
	 HW_ISA(AVX512F),
	 {"zen4", "icelake", "cooperlake", "cascadelake", "skylakex", NULL}},
	{RF_REPACK_AMX, HW_ISA(AMX), {"sapphirerapids", NULL}},
};

START_TEST(buffers_match_real_llama_cpp)
{
	char *dir = t_mkdtemp();
	char *jobs_path = t_path(dir, "jobs.json");
	char *paths[N_FAMS];
	uint32_t host_bits = oracle_host_bits();
	int host = oracle_host_isa();
	bool amx = oracle_amx_usable();
	bool covered[RF_REPACK_N] = {false};
	char said[256] = "";

	write_jobs(dir, jobs_path, paths);
#if defined(__x86_64__)
	for (size_t c = 0; c < sizeof(x86_classes) / sizeof(x86_classes[0]); c++) {
		const struct oracle_class *oc = &x86_classes[c];
		/* Without the kernel's grant, ggml's sapphirerapids backend runs without its
		 * AMX buffer: what it fills is the AVX-512 class's. */
		int cls = oc->cls == RF_REPACK_AMX && !amx ? RF_REPACK_AVX512 : oc->cls;
		if ((host_bits & oc->needs) != oc->needs)
			continue;
		for (size_t v = 0; oc->variants[v] && !covered[oc->cls]; v++) {
			char *vdir = oracle_variant_dir(t_src_dir(), oc->variants[v]);
			int exit_code = 0;
			char *text;
			if (!vdir)
				continue;
			text = oracle_run(t_src_dir(), vdir, dir, jobs_path, &exit_code);
			if (text && check_run(text, paths, cls, oc->variants[v]) == 0) {
				size_t n = strlen(said);
				covered[oc->cls] = true;
				snprintf(said + n, sizeof(said) - n, "%s%s (%s)", n ? ", " : "",
					 rf_repack_isa_name(cls), oc->variants[v]);
			}
			free(text);
			free(vdir);
		}
	}
#else
	{
		/* Arm: the prebuilt's one CPU backend, as llama.cpp loads it. */
		int exit_code = 0;
		char *text = oracle_run(t_src_dir(), NULL, dir, jobs_path, &exit_code);
		ck_assert_msg(
			text != NULL,
			"the llama.cpp oracle failed (exit %d): node and node-llama-cpp under "
			"build/llama are needed (make deps)",
			exit_code);
		ck_assert_int_eq(check_run(text, paths, host, NULL), 0);
		covered[host] = true;
		snprintf(said, sizeof(said), "%s (the prebuilt's backend)",
			 rf_repack_isa_name(host));
		free(text);
	}
#endif
	fprintf(stderr, "llama_oracle: checked the CPU classes %s\n", said[0] ? said : "none");
	/* This host's own class is always checked: a missing package or a backend that would
	 * not load fails here, it is never skipped. */
	ck_assert_msg(host == RF_REPACK_NONE || covered[host],
		      "the llama.cpp oracle did not run this host's class (%s): node and "
		      "node-llama-cpp under build/llama are needed (make deps); checked: %s",
		      rf_repack_isa_name(host), said[0] ? said : "none");
	for (size_t i = 0; i < N_FAMS; i++)
		free(paths[i]);
	free(jobs_path);
	t_rmtree(dir);
	free(dir);
}
END_TEST

Suite *llama_oracle_suite(void)
{
	Suite *s = suite_create("llama_oracle");
	TCase *tc = tcase_create("llama_oracle");

	/* Up to four classes of 33 loads each. */
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, buffers_match_real_llama_cpp);
	suite_add_tcase(s, tc);
	return s;
}
