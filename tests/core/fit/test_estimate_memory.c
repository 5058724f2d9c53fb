/*
 * Inference memory against what llama.cpp measured (tests/data/calibration, read through
 * tests/memory_calib.c: weights within 3% of the model buffers, KV within 1%, model + KV +
 * compute within 10%; GGUF sizes within 3%), and the mechanisms one by one: partial offload,
 * a split over two GPUs, n_ctx max, KV cache types, MLA, sliding windows, n_parallel, unified
 * memory and budgets.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/estimate.h"
#include "core/fit/model.h"
#include "tests/memory_calib.h"
#include "tests/test.h"

static struct model_catalog *cat;

static void setup(void)
{
	cat = mc_catalog_load(t_src_dir());
	ck_assert_ptr_nonnull(cat);
}

static void teardown(void)
{
	model_catalog_free(cat);
	cat = NULL;
}

static const struct model_entry *model(const char *name)
{
	const struct model_entry *e = model_catalog_find(cat, name);

	ck_assert_msg(e != NULL, "%s not in the catalog", name);
	return e;
}

/* Weights of a catalog model in a scheme (malloc'd: the struct is large). */
static struct rf_mem_weights *weights(const struct model_entry *e, const char *scheme)
{
	struct rf_mem_weights *w = malloc(sizeof(*w));

	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(rf_weights_from_scheme(&e->arch, rf_ftype_from_name(scheme), -1, w), 0);
	return w;
}

static struct rf_mem_device gpu(const char *name, double free_gib)
{
	struct rf_mem_device d;

	memset(&d, 0, sizeof(d));
	snprintf(d.name, sizeof(d.name), "%s", name);
	d.free_bytes = (int64_t)(free_gib * RF_GIB);
	d.budget_bytes = rf_budget_device(d.free_bytes, d.free_bytes);
	d.overhead_bytes = rf_backend_overhead_bytes("cuda");
	return d;
}

#define MIB_D (1024.0 * 1024.0)

START_TEST(llamacpp_memory_rows)
{
	struct mc_mem_row *rows = NULL;
	int n = mc_memory_rows(t_data_dir(), cat, &rows);
	int used = 0, kv = 0, totals = 0, bad = 0;
	double errs[64];
	int n_errs = 0;

	ck_assert_int_gt(n, 0);
	printf("\n%-5s %-34s %-7s %10s %10s %7s %9s %9s %7s %10s %10s %7s\n", "line", "model",
	       "quant", "weights", "est", "err", "kv", "est", "err", "total", "est", "err");
	for (int i = 0; i < n; i++) {
		const struct mc_mem_row *r = &rows[i];
		double we = mc_rel(r->est_weights, r->meas_weights);
		if (!r->usable) {
			printf("%-5d %-34.34s skipped: %s\n", r->line, r->model, r->reason);
			continue;
		}
		used++;
		printf("%-5d %-34.34s %-7s %10.2f %10.2f %+6.2f%%", r->line, r->model, r->quant,
		       r->meas_weights, r->est_weights, 100 * we);
		if (fabs(we) > MC_WEIGHTS_TOL)
			bad++, fprintf(stderr, "line %d: weights off by %.2f%%\n", r->line,
				       100 * we);
		if (r->has_kv) {
			double ke = mc_rel(r->est_kv, r->meas_kv);
			kv++;
			printf(" %9.2f %9.2f %+6.2f%%", r->meas_kv, r->est_kv, 100 * ke);
			if (fabs(ke) > MC_KV_TOL)
				bad++, fprintf(stderr, "line %d: KV off by %.2f%%\n", r->line,
					       100 * ke);
		} else {
			printf(" %9s %9s %7s", "-", "-", "-");
		}
		if (r->has_total) {
			double te = mc_rel(r->est_total, r->meas_total);
			totals++;
			errs[n_errs++] = fabs(te);
			printf(" %10.2f %10.2f %+6.2f%%", r->meas_total, r->est_total, 100 * te);
			if (fabs(te) > MC_TOTAL_TOL)
				bad++, fprintf(stderr, "line %d: total off by %.2f%%\n", r->line,
					       100 * te);
		}
		printf("%s%s\n", r->reason[0] ? "  " : "", r->reason);
	}
	printf("%d rows compared (%d KV, %d totals); median |total error| %.2f%%\n", used, kv,
	       totals, 100 * mc_median(errs, n_errs));
	ck_assert_int_ge(used, 15);
	ck_assert_int_ge(kv, 10);
	ck_assert_int_ge(totals, 10);
	ck_assert_int_eq(bad, 0);
	ck_assert_double_le(mc_median(errs, n_errs), MC_TOTAL_MEDIAN_TOL);
	free(rows);
}
END_TEST

START_TEST(gguf_sizes_rows)
{
	struct mc_size_row *rows = NULL;
	int n = mc_size_rows(t_data_dir(), cat, &rows);
	int used = 0, bad = 0, n_errs = 0;
	double errs[128];

	ck_assert_int_gt(n, 0);
	printf("\n%-20s %-28s %-10s %9s %9s %7s\n", "origin", "model", "quant", "GiB", "est",
	       "err");
	for (int i = 0; i < n; i++) {
		const struct mc_size_row *r = &rows[i];
		double e;
		if (!r->usable) {
			printf("%-20s %-28.28s %-10s skipped: %s\n", r->origin, r->model, r->quant,
			       r->reason);
			continue;
		}
		e = mc_rel(r->est_gib, r->meas_gib);
		errs[n_errs++] = fabs(e);
		used++;
		printf("%-20s %-28.28s %-10s %9.3f %9.3f %+6.2f%%\n", r->origin, r->model, r->quant,
		       r->meas_gib, r->est_gib, 100 * e);
		if (fabs(e) > MC_SIZE_TOL)
			bad++, fprintf(stderr, "%s %s %s: size off by %.2f%%\n", r->origin,
				       r->model, r->quant, 100 * e);
	}
	printf("%d sizes compared; median |error| %.2f%%\n", used, 100 * mc_median(errs, n_errs));
	ck_assert_int_ge(used, 40);
	ck_assert_int_eq(bad, 0);
	free(rows);
}
END_TEST

START_TEST(q4_k_m_mix_of_llama_3_8b)
{
	/* The row llama.cpp logged: 4403.49 MiB on the GPU, 281.81 MiB token_embd (Q4_K) on the
	 * host; the mix is Q6_K output, Q6_K attn_v/ffn_down on 16 of 32 layers, Q4_K the rest. */
	const struct model_entry *e = model("llama-3-8b");
	struct rf_mem_weights *w = weights(e, "Q4_K_M");
	uint64_t gpu_bytes = w->output_bytes;

	for (int il = 0; il < 32; il++)
		gpu_bytes += w->layer_bytes[il];
	ck_assert_uint_eq(w->input_bytes, 128256ull * 4096 / 256 * 144);
	ck_assert_double_eq_tol((double)w->input_bytes / MIB_D, 281.81, 0.01);
	ck_assert_double_eq_tol((double)gpu_bytes / MIB_D, 4403.49, 1.0);
	/* more_bits layers get Q6_K attn_v: layer 0 does, layer 4 does not, layer 6 does. */
	ck_assert_uint_gt(w->layer_bytes[0], w->layer_bytes[4]);
	ck_assert_uint_eq(w->layer_bytes[6], w->layer_bytes[0]);
	free(w);
}
END_TEST

START_TEST(partial_offload)
{
	const struct model_entry *e = model("llama-3.1-8b");
	struct rf_mem_weights *w = weights(e, "Q4_K_M");
	struct rf_infer_params p;
	struct rf_mem_device d = gpu("CUDA0", 24);
	struct rf_mem_estimate full, part, no_out;
	uint64_t gpu_layers = 0;

	rf_infer_params_default(&p);
	p.n_ctx = 8192;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, NULL, &full), 0);
	ck_assert_int_eq(full.n_gpu_layers, 32);
	ck_assert(full.output_on_gpu);
	ck_assert_int_eq(full.weights_host_bytes, (int64_t)w->input_bytes);

	/* 16 of 33: the last 16 repeating layers on the GPU, the output layer on the host. */
	p.n_gpu_layers = 16;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, NULL, &part), 0);
	ck_assert_int_eq(part.n_gpu_layers, 16);
	ck_assert_int_eq(part.per_device[0].layers, 16);
	ck_assert(!part.output_on_gpu);
	for (int il = 16; il < 32; il++)
		gpu_layers += w->layer_bytes[il];
	ck_assert_int_eq(part.per_device[0].weights_bytes, (int64_t)gpu_layers);
	ck_assert_int_eq(part.weights_host_bytes + part.per_device[0].weights_bytes,
			 full.weights_bytes);
	ck_assert_int_eq(part.kv_host_bytes, full.kv_cache_bytes / 2);
	ck_assert_int_eq(part.per_device[0].kv_bytes, full.kv_cache_bytes / 2);
	/* The host computes the CPU layers and the logits; the GPU gets a host matrix copied in. */
	ck_assert_int_gt(part.compute_host_bytes, full.compute_host_bytes);
	ck_assert_int_gt(part.per_device[0].compute_bytes, 0);
	ck_assert_int_lt(part.per_device[0].bytes, full.per_device[0].bytes);
	ck_assert_int_gt(part.host_bytes, full.host_bytes);

	/* n_gpu_layers = n_layer: every repeating layer on the GPU but the output on the host. */
	p.n_gpu_layers = 32;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, NULL, &no_out), 0);
	ck_assert_int_eq(no_out.n_gpu_layers, 32);
	ck_assert(!no_out.output_on_gpu);

	/* CPU only: everything on the host. */
	p.n_gpu_layers = -1;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &part), 0);
	ck_assert_int_eq(part.n_gpu_layers, 0);
	ck_assert_int_eq(part.weights_host_bytes, part.weights_bytes);
	ck_assert_int_eq(part.kv_host_bytes, part.kv_cache_bytes);
	ck_assert_int_eq(part.host_bytes, part.total_bytes);
	free(w);
}
END_TEST

START_TEST(split_over_two_gpus)
{
	const struct model_entry *e = model("llama-3.1-70b");
	struct rf_mem_weights *w = weights(e, "Q4_K_M");
	struct rf_infer_params p;
	struct rf_mem_device d[2] = {gpu("CUDA0", 24), gpu("CUDA1", 12)};
	struct rf_mem_estimate m;
	int64_t sum = 0, layers = 0;

	rf_infer_params_default(&p);
	p.n_ctx = 8192;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, d, 2, NULL, &m), 0);
	ck_assert_int_eq(m.n_devices, 2);
	/* In proportion to free memory: 81 layers (with the output) split 2:1. */
	ck_assert_int_eq(m.per_device[0].layers, 54);
	ck_assert_int_eq(m.per_device[1].layers, 26);
	ck_assert(!m.per_device[0].output && m.per_device[1].output);
	for (int i = 0; i < 2; i++) {
		const struct rf_mem_device_use *u = &m.per_device[i];
		ck_assert_int_gt(u->compute_bytes, 0); /* each GPU holds a compute buffer */
		ck_assert_int_eq(u->overhead_bytes, RF_GPU_OVERHEAD_BYTES);
		ck_assert_int_eq(u->bytes, u->weights_bytes + u->kv_bytes + u->compute_bytes +
						   u->overhead_bytes);
		ck_assert_int_eq(u->budget_bytes, d[i].budget_bytes);
		ck_assert_str_eq(u->device, d[i].name);
		sum += u->bytes;
		layers += u->layers;
	}
	ck_assert_int_eq(layers, 80);
	ck_assert_int_eq(sum + m.host_bytes, m.total_bytes);
	ck_assert(!m.fits); /* 40 GiB of weights in 36 GiB */
	ck_assert_str_eq(m.fit_band, "over");
	/* At a short context the logits are the peak, and only the GPU with the output has them. */
	p.n_ctx = 512;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, d, 2, NULL, &m), 0);
	ck_assert_int_gt(m.per_device[1].compute_bytes, m.per_device[0].compute_bytes);
	/* mask (512 x 512 f32) + logits and normed hidden (512 x (128256 + 8192) f32) */
	ck_assert_int_eq(m.per_device[1].compute_bytes,
			 512LL * 512 * 4 + 512LL * 4 * (128256 + 8192));

	/* An explicit tensor split overrides free memory. */
	d[0].split = 1;
	d[1].split = 1;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, d, 2, NULL, &m), 0);
	ck_assert_int_eq(m.per_device[0].layers, 41);
	ck_assert_int_eq(m.per_device[1].layers, 39);
	free(w);
}
END_TEST

/* Where each layer lives, counted layer by layer in the test: the host's first n_layer - ngl
 * layers, each GPU's run after them, the routed experts of the first n_cpu_moe on the host.
 * The estimate sums runs of layers (and counts a window pattern's layers); every KV and
 * weight figure must be the per-layer sum, for window patterns of 1 (none), 2 and 6, an MoE
 * and every n_gpu_layers on one and two GPUs. */
START_TEST(runs_of_layers_add_up_as_each_layer_does)
{
	static const char *const models[] = {"llama-3.1-8b", "gemma-2-9b", "gemma-3-27b-it",
					     "gpt-oss-20b"};

	for (size_t mi = 0; mi < sizeof(models) / sizeof(models[0]); mi++) {
		const struct model_entry *e = model(models[mi]);
		struct rf_mem_weights *w = weights(e, "Q4_K_M");
		const int64_t n_layer = w->n_layer;
		struct rf_mem_device d[2] = {gpu("CUDA0", 80), gpu("CUDA1", 40)};
		struct rf_infer_params p;
		struct rf_mem_estimate m;

		rf_infer_params_default(&p);
		p.n_ctx = 16384;
		for (int n_dev = 1; n_dev <= 2; n_dev++)
			for (int64_t ngl = 0; ngl <= n_layer + 1; ngl++)
				for (int moe = 0; moe < 2; moe++) {
					int64_t host_end = n_layer - ngl < 0 ? 0 : n_layer - ngl;
					int64_t units = 0, host_units = 0, dev_units = 0;
					int64_t dev_w = 0, ex_host = 0, kv_cell;
					p.n_gpu_layers = ngl;
					p.n_cpu_moe = moe ? 5 : 0;
					ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, d,
									       n_dev, NULL, &m),
							 0);
					for (int64_t il = 0; il < n_layer; il++) {
						int64_t u =
							il < e->arch.n_layers ?
								(model_layer_is_swa(&e->arch, il) ?
									 m.kv_cells_swa :
									 m.n_ctx) :
								0;
						int64_t ex =
							il < p.n_cpu_moe ?
								(int64_t)w->layer_expert_bytes[il] :
								0;
						units += u;
						if (il < host_end) {
							host_units += u;
						} else {
							dev_units += u;
							dev_w += (int64_t)w->layer_bytes[il] - ex;
							ex_host += ex;
						}
					}
					ck_assert_int_gt(units, 0);
					kv_cell = m.kv_cache_bytes / units;
					ck_assert_int_eq(kv_cell * units, m.kv_cache_bytes);
					ck_assert_int_eq(m.kv_host_bytes, kv_cell * host_units);
					ck_assert_int_eq(
						m.per_device[0].kv_bytes +
							(n_dev > 1 ? m.per_device[1].kv_bytes : 0),
						kv_cell * dev_units);
					ck_assert_int_eq(m.n_gpu_layers, n_layer - host_end);
					ck_assert_int_eq(m.experts_host_bytes, ex_host);
					ck_assert_int_eq(
						m.per_device[0].weights_bytes +
							(n_dev > 1 ? m.per_device[1].weights_bytes :
								     0) -
							(m.output_on_gpu ?
								 (int64_t)w->output_bytes :
								 0),
						dev_w);
					ck_assert_int_eq(
						m.per_device[0].layers +
							(n_dev > 1 ? m.per_device[1].layers : 0),
						n_layer - host_end);
				}
		free(w);
	}
}
END_TEST

START_TEST(n_ctx_max_is_monotonic)
{
	const struct model_entry *e = model("llama-3.1-8b");
	struct rf_mem_weights *w = weights(e, "Q4_K_M");
	struct rf_infer_params p;
	struct rf_mem_estimate m, next;
	int64_t prev = 0, n_ctx;

	rf_infer_params_default(&p);
	for (double gib = 7; gib <= 24; gib += 1) {
		struct rf_mem_device d = gpu("GPU", gib);
		ck_assert_int_eq(rf_estimate_max_ctx(&e->arch, w, &p, &d, 1, NULL, &n_ctx, &m), 0);
		ck_assert_int_ge(n_ctx, prev);
		ck_assert_int_eq(n_ctx % RF_KV_PAD, 0);
		ck_assert(m.fits);
		ck_assert_int_eq(m.n_ctx, n_ctx);
		if (n_ctx < e->arch.max_position_embeddings) {
			p.n_ctx = n_ctx + RF_KV_PAD;
			ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, NULL, &next),
					 0);
			ck_assert(!next.fits);
		}
		prev = n_ctx;
	}
	/* 24 GiB: about 100k cells at 192 KiB each (f16 KV 128 KiB + scores 64 KiB per cell). */
	ck_assert_int_gt(prev, 96 * 1024);
	ck_assert_int_lt(prev, 112 * 1024);
	{
		/* A quantized cache stretches it. */
		struct rf_mem_device d = gpu("GPU", 12);
		int64_t f16, q8;
		p.n_ctx = 4096;
		ck_assert_int_eq(rf_estimate_max_ctx(&e->arch, w, &p, &d, 1, NULL, &f16, &m), 0);
		p.type_k = p.type_v = RF_GT_Q8_0;
		p.flash_attn = true;
		ck_assert_int_eq(rf_estimate_max_ctx(&e->arch, w, &p, &d, 1, NULL, &q8, &m), 0);
		ck_assert_int_gt(q8, f16 * 3 / 2);
		/* Nothing fits on 2 GiB. */
		d = gpu("GPU", 2);
		ck_assert_int_eq(rf_estimate_max_ctx(&e->arch, w, &p, &d, 1, NULL, &n_ctx, &m),
				 RF_E_RANGE);
		ck_assert_int_eq(n_ctx, 0);
		ck_assert(!m.fits);
	}
	free(w);
}
END_TEST

START_TEST(kv_cache_types)
{
	const struct model_entry *e = model("llama-3.1-8b");
	struct rf_mem_weights *w = weights(e, "Q4_K_M");
	struct rf_infer_params p;
	struct rf_mem_estimate f16, q8, q4, bad;
	struct model_arch odd;

	rf_infer_params_default(&p);
	p.n_ctx = 8192;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &f16), 0);
	/* 2 x 32 layers x 8192 cells x 1024 x 2 bytes */
	ck_assert_int_eq(f16.kv_cache_bytes, 2LL * 32 * 8192 * 1024 * 2);
	p.type_k = p.type_v = RF_GT_Q8_0;
	p.flash_attn = true;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &q8), 0);
	ck_assert_int_eq(q8.kv_cache_bytes, 2LL * 32 * 8192 * (1024 / 32 * 34));
	p.type_k = p.type_v = RF_GT_Q4_0;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &q4), 0);
	ck_assert_int_eq(q4.kv_cache_bytes, 2LL * 32 * 8192 * (1024 / 32 * 18));
	/* A quantized V cache needs flash attention: assumed, and said. */
	p.flash_attn = false;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &q4), 0);
	ck_assert_int_gt(q4.n_notes, 0);
	{
		bool said = false;
		for (int i = 0; i < q4.n_notes; i++)
			said = said || strstr(q4.notes[i], "flash attention") != NULL;
		ck_assert(said);
	}
	/* Types a cache cannot have, and rows that do not divide into the type's blocks. */
	p.type_k = RF_GT_Q4_K;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &bad),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(bad.error_field, "cache_type_k");
	p.type_k = RF_GT_F16;
	p.type_v = 77;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &bad),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(bad.error_field, "cache_type_v");
	odd = e->arch;
	odd.n_kv_heads = 1;
	odd.head_dim = 40;
	odd.v_head_dim = 40;
	p.type_k = RF_GT_Q8_0;
	p.type_v = RF_GT_F16;
	ck_assert_int_eq(rf_estimate_inference(&odd, w, &p, NULL, 0, NULL, &bad),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(bad.error_field, "cache_type_k");
	/* Settings out of range name themselves. */
	rf_infer_params_default(&p);
	p.n_ctx = 0;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &bad),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(bad.error_field, "n_ctx");
	rf_infer_params_default(&p);
	p.n_ubatch = 1 << 20;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &bad),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(bad.error_field, "n_ubatch");
	rf_infer_params_default(&p);
	p.n_parallel = 0;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &bad),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(bad.error_field, "n_parallel");
	rf_infer_params_default(&p);
	p.n_gpu_layers = -2;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &bad),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(bad.error_field, "n_gpu_layers");
	free(w);
}
END_TEST

START_TEST(mla_keeps_one_latent_row)
{
	const struct model_entry *e = model("deepseek-v2-lite");
	struct rf_mem_weights *w = weights(e, "Q4_K_M");
	struct rf_infer_params p;
	struct rf_mem_estimate m;

	rf_infer_params_default(&p);
	p.n_ctx = 16384;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &m), 0);
	/* 27 layers x 16384 cells x (512 + 64) x 2 bytes, no V: a quarter of what 16 heads of
	 * 192 + 128 would take. */
	ck_assert_int_eq(m.kv_cache_bytes, 27LL * 16384 * 576 * 2);
	ck_assert_int_lt(m.kv_cache_bytes, 27LL * 16384 * 16 * (192 + 128) * 2 / 8);
	free(w);
}
END_TEST

/* Llama 3.2 Vision: the published config.json of Llama-3.2-11B-Vision(-Instruct) has 40 text
 * layers, 8 of them cross-attention ([3, 8, 13, 18, 23, 28, 33, 38]), 8 KV heads of head dim
 * 128, and vision_config image_size 560, patch_size 14, max_num_tiles 4: one image is
 * 4 x ((560 / 14)^2 + 1) = 6404 vision tokens. 90B: 100 layers, 20 cross-attention, the same
 * heads and vision encoder. */
#define MLLAMA_IMAGE_TOKENS (4LL * ((560 / 14) * (560 / 14) + 1))
#define MLLAMA_KV_ROW (2LL * 8 * 128 * 2) /* K and V, f16, one token of one layer */

static bool has_note(const struct rf_mem_estimate *m, const char *part)
{
	for (int i = 0; i < m->n_notes; i++)
		if (strstr(m->notes[i], part))
			return true;
	return false;
}

START_TEST(mllama_cross_attention_caches_one_image)
{
	const struct model_entry *v11 = model("llama-3.2-11b-vision");
	const struct model_entry *v90 = model("llama-3.2-90b-vision");
	const struct model_entry *l8 = model("llama-3.1-8b");
	struct rf_mem_weights *w11 = weights(v11, "Q4_K_M"), *w90 = weights(v90, "Q4_K_M");
	struct rf_mem_weights *w8 = weights(l8, "Q4_K_M");
	struct rf_infer_params p;
	struct rf_mem_estimate m, two, plain;
	struct rf_mem_device d = gpu("GPU", 80);

	ck_assert_int_eq(MLLAMA_IMAGE_TOKENS, 6404);
	ck_assert_int_eq(v11->arch.n_cross_attn_layers, 8);
	ck_assert_int_eq(v90->arch.n_cross_attn_layers, 20);
	ck_assert(model_layer_is_cross(&v11->arch, 3) && model_layer_is_cross(&v11->arch, 38));
	ck_assert(!model_layer_is_cross(&v11->arch, 0) && !model_layer_is_cross(&v11->arch, 39));
	rf_infer_params_default(&p);
	p.n_ctx = 32768;
	ck_assert_int_eq(rf_estimate_inference(&v11->arch, w11, &p, &d, 1, NULL, &m), 0);
	/* 32 self-attention layers x 32768 cells + 8 cross-attention layers x one image. */
	ck_assert_int_eq(m.kv_cache_bytes,
			 32LL * 32768 * MLLAMA_KV_ROW + 8LL * MLLAMA_IMAGE_TOKENS * MLLAMA_KV_ROW);
	ck_assert_int_lt(m.kv_cache_bytes, 40LL * 32768 * MLLAMA_KV_ROW * 85 / 100);
	ck_assert_int_eq(m.per_device[0].kv_bytes, m.kv_cache_bytes);
	ck_assert(has_note(&m, "one image of max_num_tiles tiles per sequence"));
	/* Two sequences share the cells but each has its image. */
	p.n_parallel = 2;
	ck_assert_int_eq(rf_estimate_inference(&v11->arch, w11, &p, &d, 1, NULL, &two), 0);
	ck_assert_int_eq(two.kv_cache_bytes - m.kv_cache_bytes,
			 8LL * MLLAMA_IMAGE_TOKENS * MLLAMA_KV_ROW);
	/* 90B: 80 self-attention layers, 20 cross-attention. */
	p.n_parallel = 1;
	ck_assert_int_eq(rf_estimate_inference(&v90->arch, w90, &p, NULL, 0, NULL, &m), 0);
	ck_assert_int_eq(m.kv_cache_bytes,
			 80LL * 32768 * MLLAMA_KV_ROW + 20LL * MLLAMA_IMAGE_TOKENS * MLLAMA_KV_ROW);
	/* The text-only Llama 3.1 8B keeps every layer per token and says nothing of images. */
	ck_assert_int_eq(l8->arch.n_cross_attn_layers, 0);
	ck_assert_int_eq(rf_estimate_inference(&l8->arch, w8, &p, NULL, 0, NULL, &plain), 0);
	ck_assert_int_eq(plain.kv_cache_bytes, 32LL * 32768 * MLLAMA_KV_ROW);
	ck_assert(!has_note(&plain, "one image"));
	free(w11);
	free(w90);
	free(w8);
}
END_TEST

START_TEST(sliding_windows)
{
	const struct model_entry *g2 = model("gemma-2-9b");
	const struct model_entry *g3 = model("gemma-3-27b");
	const struct model_entry *mis = model("mistral-7b");
	struct rf_mem_weights *w = weights(g2, "Q4_K_M");
	struct rf_infer_params p;
	struct rf_mem_estimate m;
	const int64_t row2 = 8 * 256 * 2 * 2; /* K + V of one cell and layer, f16 */

	rf_infer_params_default(&p);
	p.n_ctx = 32768;
	/* Gemma 2 9B: 21 windowed layers keep 4096 + 512 cells, 21 global ones all 32768. */
	ck_assert_int_eq(rf_estimate_inference(&g2->arch, w, &p, NULL, 0, NULL, &m), 0);
	ck_assert_int_eq(m.kv_cells_swa, 4608);
	ck_assert_int_eq(m.kv_cache_bytes, 21 * row2 * 4608 + 21 * row2 * 32768);
	/* n_parallel sequences each keep their window: 4 x 4096 + 512. */
	p.n_parallel = 4;
	ck_assert_int_eq(rf_estimate_inference(&g2->arch, w, &p, NULL, 0, NULL, &m), 0);
	ck_assert_int_eq(m.kv_cells_swa, 16896);
	/* Below the window, windowed layers hold the whole context. */
	p.n_parallel = 1;
	p.n_ctx = 2048;
	ck_assert_int_eq(rf_estimate_inference(&g2->arch, w, &p, NULL, 0, NULL, &m), 0);
	ck_assert_int_eq(m.kv_cells_swa, 2048);
	ck_assert_int_eq(m.kv_cache_bytes, 42 * row2 * 2048);
	free(w);

	/* Gemma 3 27B: 52 of 62 layers windowed at 1024 (+ 512). */
	w = weights(g3, "Q4_K_M");
	p.n_ctx = 65536;
	ck_assert_int_eq(rf_estimate_inference(&g3->arch, w, &p, NULL, 0, NULL, &m), 0);
	ck_assert_int_eq(m.kv_cells_swa, 1536);
	ck_assert_int_eq(m.kv_cache_bytes, (52LL * 1536 + 10LL * 65536) * 16 * 128 * 2 * 2);
	free(w);

	/* Mistral 7B's configured window is not run by llama.cpp: the whole context is kept. */
	w = weights(mis, "Q4_K_M");
	p.n_ctx = 16384;
	ck_assert_int_eq(rf_estimate_inference(&mis->arch, w, &p, NULL, 0, NULL, &m), 0);
	ck_assert_int_eq(m.kv_cells_swa, 16384);
	ck_assert_int_eq(m.kv_cache_bytes, 32LL * 16384 * 1024 * 2 * 2);
	free(w);
}
END_TEST

START_TEST(n_parallel_shares_n_ctx)
{
	const struct model_entry *e = model("qwen2.5-7b");
	struct rf_mem_weights *w = weights(e, "Q4_K_M");
	struct rf_infer_params p;
	struct rf_mem_estimate one, four;

	rf_infer_params_default(&p);
	p.n_ctx = 16384;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &one), 0);
	p.n_parallel = 4;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &four), 0);
	ck_assert_int_eq(one.kv_cache_bytes, four.kv_cache_bytes);
	/* One logits row per sequence in the host output buffer. */
	ck_assert_int_eq(four.output_buffer_bytes, 4 * one.output_buffer_bytes);
	ck_assert_int_eq(one.output_buffer_bytes, 152064LL * 4);
	/* n_ctx is padded to 256 cells. */
	p.n_ctx = 1000;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, NULL, &one), 0);
	ck_assert_int_eq(one.n_ctx, 1024);
	free(w);
}
END_TEST

START_TEST(encoder_and_encoder_decoder)
{
	const struct model_entry *bge = model("bge-small-en");
	const struct model_entry *t5 = model("flan-t5-large");
	struct rf_mem_weights *w = weights(bge, "F16");
	struct rf_infer_params p;
	struct rf_mem_estimate m;

	rf_infer_params_default(&p);
	p.n_ctx = 512;
	ck_assert_int_eq(rf_estimate_inference(&bge->arch, w, &p, NULL, 0, NULL, &m), 0);
	ck_assert_int_eq(m.kv_cache_bytes, 0);
	ck_assert_int_eq(m.output_buffer_bytes, 384 * 4);
	free(w);
	w = weights(t5, "F16");
	ck_assert_int_eq(rf_estimate_inference(&t5->arch, w, &p, NULL, 0, NULL, &m), 0);
	/* The decoder's self-attention cache: 24 layers x 512 x 16 heads x 64 x 2 x 2 bytes. */
	ck_assert_int_eq(m.kv_cache_bytes, 24LL * 512 * 1024 * 2 * 2);
	free(w);
}
END_TEST

START_TEST(unified_memory_is_counted_once)
{
	const struct model_entry *e = model("llama-3.1-8b");
	struct rf_mem_weights *w = weights(e, "Q8_0");
	struct rf_infer_params p;
	struct rf_mem_device d;
	struct rf_mem_host h = {0};
	struct rf_mem_estimate m;

	/* Apple's working set: 2/3 of RAM up to 32 GiB, 3/4 above, as the logs print it. */
	ck_assert_int_eq(rf_budget_unified(8 * RF_GIB, 8 * RF_GIB), 8 * RF_GIB / 3 * 2);
	ck_assert_double_eq_tol((double)rf_budget_unified(8 * RF_GIB, 8 * RF_GIB) / 1e6, 5726.63,
				0.01); /* recommendedMaxWorkingSetSize 5726.63 MB */
	ck_assert_int_eq(rf_budget_unified(192 * RF_GIB, 192 * RF_GIB), 147456 * RF_MIB);
	ck_assert_int_eq(rf_budget_unified(48 * RF_GIB, 48 * RF_GIB), 36 * RF_GIB);
	/* Other processes' memory comes out of the same RAM. */
	ck_assert_int_eq(rf_budget_unified(16 * RF_GIB, 6 * RF_GIB), 6 * RF_GIB);

	rf_infer_params_default(&p);
	memset(&d, 0, sizeof(d));
	snprintf(d.name, sizeof(d.name), "Metal");
	d.unified = true;
	d.free_bytes = d.budget_bytes = rf_budget_unified(16 * RF_GIB, 16 * RF_GIB);
	h.budget_bytes = 16 * RF_GIB - 2 * RF_GIB;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, &h, &m), 0);
	ck_assert(m.fits);
	/* Device and host share the RAM: a host budget below their sum does not fit, even
	 * though the device alone would. */
	h.budget_bytes = m.per_device[0].bytes;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, &h, &m), 0);
	ck_assert(!m.fits);
	ck_assert_int_le(m.per_device[0].bytes, d.budget_bytes);
	/* The total counts every buffer once. */
	ck_assert_int_eq(m.per_device[0].bytes + m.host_bytes, m.total_bytes);
	free(w);
}
END_TEST

START_TEST(budgets_and_bands)
{
	const struct model_entry *e = model("qwen2.5-7b");
	struct rf_mem_weights *w = weights(e, "Q4_K_M");
	struct rf_infer_params p;
	struct rf_mem_device d = gpu("GPU", 12);
	struct rf_mem_host h = {.budget_bytes = -1};
	struct rf_mem_estimate m;

	/* Reserves: 256 MiB or 2% on a GPU; 1 GiB or 10% of RAM; a container limit caps RAM. */
	ck_assert_int_eq(rf_budget_device(8 * RF_GIB, 8 * RF_GIB), 8 * RF_GIB - 256 * RF_MIB);
	ck_assert_int_eq(rf_budget_device(80 * RF_GIB, 80 * RF_GIB),
			 80 * RF_GIB - (int64_t)(80.0 * RF_GIB * 0.02));
	ck_assert_int_eq(rf_budget_device(100 * RF_MIB, 8 * RF_GIB), 0);
	ck_assert_int_eq(rf_budget_host(60 * RF_GIB, 64 * RF_GIB, 0, 0),
			 60 * RF_GIB - (int64_t)(64.0 * RF_GIB * 0.10));
	ck_assert_int_eq(rf_budget_host(60 * RF_GIB, 64 * RF_GIB, 8 * RF_GIB, RF_GIB),
			 7 * RF_GIB - RF_GIB);
	ck_assert_str_eq(rf_fit_band(0.5), "comfortable");
	ck_assert_str_eq(rf_fit_band(0.85), "comfortable");
	ck_assert_str_eq(rf_fit_band(0.9), "tight");
	ck_assert_str_eq(rf_fit_band(1.0), "tight");
	ck_assert_str_eq(rf_fit_band(1.01), "over");
	ck_assert_int_eq(rf_backend_overhead_bytes("metal"), 0);
	ck_assert_int_eq(rf_backend_overhead_bytes("rocm"), RF_GPU_OVERHEAD_BYTES);

	rf_infer_params_default(&p);
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, &h, &m), 0);
	ck_assert(m.fits);
	ck_assert_str_eq(m.fit_band, "comfortable");
	ck_assert_double_eq_tol(m.utilization,
				(double)m.per_device[0].bytes / (double)d.budget_bytes, 1e-9);
	d = gpu("GPU", 5.2);
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, &h, &m), 0);
	ck_assert(m.fits);
	ck_assert_str_eq(m.fit_band, "tight");
	d = gpu("GPU", 4);
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, &h, &m), 0);
	ck_assert(!m.fits);
	ck_assert_str_eq(m.fit_band, "over");
	/* A host too small for the token embeddings does not fit either. */
	d = gpu("GPU", 24);
	h.budget_bytes = 100 * RF_MIB;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, &h, &m), 0);
	ck_assert(!m.fits);
	/* No budget known: not judged. */
	d.budget_bytes = -1;
	h.budget_bytes = -1;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, &d, 1, &h, &m), 0);
	ck_assert_ptr_null(m.fit_band);
	ck_assert(m.utilization < 0);
	free(w);
}
END_TEST

/* On a CPU that repacks, the mapped originals of repacked weights are page cache llama.cpp
 * read once: host_bytes counts them (and host_reclaimable_bytes says how much), the fit does
 * not. A budget between the two fits; below what stays in use it does not; with mlock they are
 * locked and count. */
START_TEST(reclaimable_mapped_pages_do_not_decide_the_fit)
{
	const struct model_entry *e = model("qwen2.5-7b");
	struct rf_mem_weights *w = weights(e, "Q4_0");
	struct rf_infer_params p;
	struct rf_mem_host h = {.budget_bytes = -1, .repack_isa = RF_REPACK_AVX2};
	struct rf_mem_estimate m;
	int64_t need;

	rf_infer_params_default(&p);
	p.n_gpu_layers = 0;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, &h, &m), 0);
	ck_assert_int_gt(m.host_reclaimable_bytes, 0);
	need = m.host_bytes - m.host_reclaimable_bytes;
	h.budget_bytes = need + (m.host_reclaimable_bytes / 2);
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, &h, &m), 0);
	ck_assert(m.fits);
	ck_assert_double_eq_tol(m.utilization, (double)need / (double)h.budget_bytes, 1e-9);
	h.budget_bytes = need - RF_MIB;
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, &h, &m), 0);
	ck_assert(!m.fits);
	p.mlock = true;
	h.budget_bytes = need + (m.host_reclaimable_bytes / 2);
	ck_assert_int_eq(rf_estimate_inference(&e->arch, w, &p, NULL, 0, &h, &m), 0);
	ck_assert_int_eq(m.host_reclaimable_bytes, 0);
	ck_assert(!m.fits);
	free(w);
}
END_TEST

Suite *estimate_memory_suite(void)
{
	Suite *s = suite_create("estimate_memory");
	TCase *tc = tcase_create("estimate_memory");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, llamacpp_memory_rows);
	tcase_add_test(tc, gguf_sizes_rows);
	tcase_add_test(tc, q4_k_m_mix_of_llama_3_8b);
	tcase_add_test(tc, partial_offload);
	tcase_add_test(tc, split_over_two_gpus);
	tcase_add_test(tc, runs_of_layers_add_up_as_each_layer_does);
	tcase_add_test(tc, n_ctx_max_is_monotonic);
	tcase_add_test(tc, kv_cache_types);
	tcase_add_test(tc, mla_keeps_one_latent_row);
	tcase_add_test(tc, mllama_cross_attention_caches_one_image);
	tcase_add_test(tc, sliding_windows);
	tcase_add_test(tc, n_parallel_shares_n_ctx);
	tcase_add_test(tc, encoder_and_encoder_decoder);
	tcase_add_test(tc, unified_memory_is_counted_once);
	tcase_add_test(tc, budgets_and_bands);
	tcase_add_test(tc, reclaimable_mapped_pages_do_not_decide_the_fit);
	suite_add_tcase(s, tc);
	return s;
}
