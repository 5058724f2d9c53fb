/*
 * Host memory on CPU classes this machine may not be: real llama.cpp loads recorded on an AMX
 * host (tests/data/calibration/llamacpp_cpu_amx.jsonl: TinyLlama 1.1B in Q8_0, F16 and Q4_0,
 * Llama 3.2 1B and Qwen2.5 0.5B in Q8_0, full-size synthetic GGUF files written by
 * gguf_synth.c, node-llama-cpp 3.22.1's `sapphirerapids` CPU backend) and the same TinyLlama
 * files loaded by four of llama.cpp's x86 backends in turn on that host
 * (llamacpp_cpu_variants.jsonl: `haswell`, `skylakex`, `icelake`, `sapphirerapids`).
 *
 * Each row is estimated by the product's path with the tensors the file held (model_tensors
 * and rf_quant_apply, as gguf_synth wrote them) and the repack class of the backend that loaded
 * it, and every buffer llama.cpp logged is compared: the AMX or CPU_REPACK buffer and the
 * mapped span to the log's rounding, the KV cache exactly, compute and output within 2% or
 * 4 MiB. The live oracle (test_llama_oracle.c) checks the classes this host can run; these rows
 * keep the AMX rules checked on every host.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fit/cpu/repack.h"
#include "core/fit/estimate.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "tests/test.h"

#define MIB (1024.0 * 1024.0)
#define LOG_ROUND_MIB 0.0051

/* The repack class of one of llama.cpp's x86 CPU backends (by its library's name). */
static int variant_class(const char *v)
{
	if (!v || strcmp(v, "sapphirerapids") == 0)
		return RF_REPACK_AMX;
	if (strcmp(v, "haswell") == 0 || strcmp(v, "alderlake") == 0 || strcmp(v, "zen2") == 0)
		return RF_REPACK_AVX2;
	if (strcmp(v, "skylakex") == 0 || strcmp(v, "icelake") == 0 ||
	    strcmp(v, "cannonlake") == 0 || strcmp(v, "cascadelake") == 0 ||
	    strcmp(v, "cooperlake") == 0 || strcmp(v, "zen4") == 0)
		return RF_REPACK_AVX512;
	return RF_REPACK_NONE;
}

static const cJSON *item(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static double num(const cJSON *o, const char *k)
{
	const cJSON *v = item(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The shapes of the recorded models (the rows carry the dimensions; the rest is the family's). */
static void row_arch(const cJSON *r, struct model_arch *a)
{
	const char *arch = cJSON_GetStringValue(item(r, "arch"));
	const char *model = cJSON_GetStringValue(item(r, "model"));
	const char *field = NULL;

	model_arch_init(a);
	snprintf(a->llm_arch, sizeof(a->llm_arch), "%s", arch ? arch : "llama");
	snprintf(a->model_type, sizeof(a->model_type), "%s", a->llm_arch);
	a->hidden_size = (int64_t)num(r, "n_embd");
	a->n_layers = (int64_t)num(r, "n_layer");
	a->n_heads = (int64_t)num(r, "n_head");
	a->n_kv_heads = (int64_t)num(r, "n_head_kv");
	a->head_dim = a->hidden_size / a->n_heads;
	a->intermediate_size = (int64_t)num(r, "n_ff");
	a->vocab_size = (int64_t)num(r, "n_vocab");
	a->max_position_embeddings = 131072;
	a->tie_word_embeddings = cJSON_IsTrue(item(r, "tied"));
	a->attn_bias = arch && strcmp(arch, "qwen2") == 0;
	ck_assert_msg(model_arch_validate(a, &field) == 0, "%s: %s", model ? model : "?",
		      field ? field : "?");
}

/* The rows of the variants file carry no shapes: they are TinyLlama's. */
static void tinyllama(cJSON *r)
{
	if (item(r, "n_embd"))
		return;
	cJSON_AddStringToObject(r, "arch", "llama");
	cJSON_AddNumberToObject(r, "n_embd", 2048);
	cJSON_AddNumberToObject(r, "n_layer", 22);
	cJSON_AddNumberToObject(r, "n_head", 32);
	cJSON_AddNumberToObject(r, "n_head_kv", 4);
	cJSON_AddNumberToObject(r, "n_ff", 5632);
	cJSON_AddNumberToObject(r, "n_vocab", 32000);
	cJSON_AddBoolToObject(r, "tied", false);
}

static void estimate_row(const cJSON *r, int cls, struct rf_mem_estimate *m)
{
	struct model_arch a;
	struct rf_tensor_list l = {0};
	struct rf_quant_model qm;
	struct rf_mem_weights *w = calloc(1, sizeof(*w));
	struct rf_infer_params p;
	struct rf_mem_host host = {.budget_bytes = -1, .repack_isa = cls};
	const char *quant = cJSON_GetStringValue(item(r, "quant"));
	const char *fa = cJSON_GetStringValue(item(r, "flash_attn"));
	const char *tk = cJSON_GetStringValue(item(r, "type_k"));
	int ft = rf_ftype_from_name(quant ? quant : "");

	ck_assert_ptr_nonnull(w);
	row_arch(r, &a);
	ck_assert_int_ge(ft, 0);
	ck_assert_int_eq(model_tensors(&a, &l), 0);
	memset(&qm, 0, sizeof(qm));
	qm.n_layer = model_n_layer(&a);
	qm.n_head = a.n_heads;
	qm.n_head_kv = a.n_kv_heads;
	ck_assert_int_eq(rf_quant_apply(&qm, ft, l.t, l.n), 0);
	/* The recorded files are "pure": every matrix of the named type, the head too (the
	 * sizes say so: file_bytes is the tensors' sum plus the header). */
	for (size_t i = 0; i < l.n; i++) {
		if (!rf_tensor_quantizable(&l.t[i]) || l.t[i].n_dims < 2)
			continue;
		l.t[i].type = rf_ftype_default_type(ft);
		ck_assert_int_eq(rf_tensor_set_bytes(&l.t[i]), 0);
	}
	if (num(r, "file_bytes") > 0) {
		double sum = 0;
		for (size_t i = 0; i < l.n; i++)
			sum += (double)l.t[i].bytes;
		ck_assert_msg(num(r, "file_bytes") - sum >= 0 &&
				      num(r, "file_bytes") - sum < 4 * MIB,
			      "%s: the file holds %.0f bytes, the tensors %.0f",
			      cJSON_GetStringValue(item(r, "model")), num(r, "file_bytes"), sum);
	}
	ck_assert_int_eq(rf_weights_from_tensors(&a, l.t, l.n, w), 0);
	rf_infer_params_default(&p);
	p.n_ctx = (int64_t)num(r, "n_ctx");
	p.n_batch = (int64_t)num(r, "n_batch");
	p.n_ubatch = num(r, "n_ubatch") > 0 ? (int64_t)num(r, "n_ubatch") : p.n_batch;
	/* "auto" resolves to enabled on the CPU backend, as the log of that row shows. */
	p.flash_attn = fa && strcmp(fa, "disabled") != 0;
	p.type_k = p.type_v = rf_gtype_from_name(tk ? tk : "f16");
	p.use_mmap = true;
	p.n_gpu_layers = 0;
	ck_assert_int_eq(rf_estimate_inference(&a, w, &p, NULL, 0, &host, m), 0);
	rf_tensor_list_free(&l);
	free(w);
}

/* Each comparison prints what differs and counts it, so that one run shows every row. */
static int near_log(const char *what, const char *row, double llama, int64_t ours)
{
	double mib = (double)ours / MIB;

	if (fabs(mib - llama) <= LOG_ROUND_MIB * 2)
		return 0;
	fprintf(stderr, "cpu_classes: %s, %s: llama.cpp %.2f MiB, rigfit %.4f MiB\n", row, what,
		llama, mib);
	return 1;
}

static int near_tol(const char *what, const char *row, double llama, int64_t ours, double share)
{
	double mib = (double)ours / MIB, tol = fmax(share * llama, 4.0);

	if (fabs(mib - llama) <= tol + LOG_ROUND_MIB)
		return 0;
	fprintf(stderr,
		"cpu_classes: %s, %s: llama.cpp %.2f MiB, rigfit %.2f MiB (tolerance %.2f)\n", row,
		what, llama, mib, tol);
	return 1;
}

/* Checks every row of one calibration file, counting the rows per class in per_class.
 * Returns how many figures differ. */
static int check_file(const char *name, int per_class[RF_REPACK_N])
{
	char *path = t_path(t_data_dir(), name);
	size_t len = 0;
	char *text = t_read_file(path, &len), *line, *next;
	int bad = 0;

	ck_assert_msg(text != NULL, "missing %s", path);
	for (line = text; line && *line; line = next) {
		cJSON *r, *real, *bufs;
		struct rf_mem_estimate m;
		const char *variant;
		char row[200];
		int cls;
		double extra;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!*line)
			continue;
		r = cJSON_Parse(line);
		ck_assert_ptr_nonnull(r);
		tinyllama(r);
		variant = cJSON_GetStringValue(item(r, "cpu_variant"));
		cls = variant_class(variant);
		real = item(r, "real_mib") ? (cJSON *)item(r, "real_mib") : r;
		bufs = (cJSON *)item(real, "model_buffers");
		ck_assert_ptr_nonnull(bufs);
		snprintf(row, sizeof(row), "%s %s %s ctx %.0f ubatch %.0f fa %s kv %s",
			 variant ? variant : "sapphirerapids",
			 cJSON_GetStringValue(item(r, "model")),
			 cJSON_GetStringValue(item(r, "quant")), num(r, "n_ctx"),
			 num(r, "n_ubatch") > 0 ? num(r, "n_ubatch") : num(r, "n_batch"),
			 cJSON_GetStringValue(item(r, "flash_attn")),
			 cJSON_GetStringValue(item(r, "type_k")));
		estimate_row(r, cls, &m);
		extra = fmax(num(bufs, "AMX"), 0) + fmax(num(bufs, "CPU_REPACK"), 0);
		bad += near_log("extra (AMX or CPU_REPACK) buffer", row, extra,
				m.weights_repack_bytes);
		bad += near_log("CPU_Mapped buffer", row, fmax(num(bufs, "CPU_Mapped"), 0),
				m.weights_mapped_bytes);
		if (num(real, "kv") >= 0)
			bad += near_log("KV cache", row, num(real, "kv"), m.kv_cache_bytes);
		/* The compute buffer is the graph allocator's peak, which its placement of the
		 * tensors can raise above the live set rigfit counts: within 15% (two rows of
		 * flash attention at 32k tokens are 9% and 13% under), and the host's whole need
		 * within 3%. */
		if (num(real, "compute") >= 0)
			bad += near_tol("CPU compute buffer", row, num(real, "compute"),
					m.compute_host_bytes, 0.15);
		if (num(real, "output") >= 0)
			bad += near_tol("CPU output buffer", row, num(real, "output"),
					m.output_buffer_bytes, 0.02);
		if (num(real, "model") >= 0 && num(real, "kv") >= 0 && num(real, "compute") >= 0)
			bad += near_tol("model + KV + compute + output", row,
					num(real, "model") + num(real, "kv") +
						num(real, "compute") + fmax(num(real, "output"), 0),
					m.weights_host_bytes + m.kv_cache_bytes +
						m.compute_host_bytes + m.output_buffer_bytes,
					0.03);
		per_class[cls]++;
		cJSON_Delete(r);
	}
	free(text);
	free(path);
	return bad;
}

START_TEST(amx_host_buffers_match_the_recorded_loads)
{
	int per_class[RF_REPACK_N] = {0};

	ck_assert_int_eq(check_file("calibration/llamacpp_cpu_amx.jsonl", per_class), 0);
	ck_assert_int_eq(per_class[RF_REPACK_AMX], 36);
}
END_TEST

START_TEST(each_x86_backend_fills_its_own_buffers)
{
	int per_class[RF_REPACK_N] = {0};

	ck_assert_int_eq(check_file("calibration/llamacpp_cpu_variants.jsonl", per_class), 0);
	ck_assert_int_eq(per_class[RF_REPACK_AVX2], 3);
	ck_assert_int_eq(per_class[RF_REPACK_AVX512], 6);
	ck_assert_int_eq(per_class[RF_REPACK_AMX], 3);
}
END_TEST

Suite *cpu_classes_suite(void)
{
	Suite *s = suite_create("cpu_classes");
	TCase *tc = tcase_create("cpu_classes");

	tcase_add_test(tc, amx_host_buffers_match_the_recorded_loads);
	tcase_add_test(tc, each_x86_backend_fills_its_own_buffers);
	suite_add_tcase(s, tc);
	return s;
}
