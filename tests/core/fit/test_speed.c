/*
 * The speed model: its mechanism (bytes over bandwidth, FLOPs over throughput, a layer split
 * that does not sum bandwidths, the host share of a partial offload, KV reads at full
 * context), its input checks, and its accuracy against the measured rows of
 * tests/data/calibration/llamacpp_tg_pp.csv: named rows within stated tolerances, the medians
 * in-sample and on rows held out of the fit under the targets, and the constants in
 * core/fit/speed.c equal to what speed_fit() finds again.
 *
 * The row loader is the one `make accuracy` uses; the runner builds only the .c files one level
 * under tests/, so tests/accuracy/speed_rows.c is compiled into this file.
 */
#include "tests/accuracy/speed_rows.c"

#include <math.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/quant.h"
#include "core/fit/speed.h"
#include "tests/test.h"

#define GB 1e9

/* The targets for the rows held out of the fit: decode no worse than the 8% it had,
 * prefill 15% (it was 19% before prefill had a share per device class). */
#define SPEED_HELD_OUT_DECODE_TARGET 0.08
#define SPEED_HELD_OUT_PREFILL_TARGET 0.15

/* One RTX 4090-like device running a 7B Q4 model with everything offloaded. */
static struct speed_input one_gpu(void)
{
	struct speed_input in;

	memset(&in, 0, sizeof(in));
	in.backend = SPEED_BACKEND_CUDA;
	in.weight_bytes = 4 * GB;
	in.flops_per_token = 2 * 7e9;
	in.n_layers = 32;
	in.quantized = true;
	in.gpu_fraction = 1;
	in.n_devices = 1;
	in.devices[0].bandwidth_gbs = 1008;
	in.devices[0].compute_tflops = 330;
	in.devices[0].compute = SPEED_COMPUTE_TENSOR;
	return in;
}

static double decode(const struct speed_input *in)
{
	return speed_predict(in, speed_fitted, SPEED_TEST_DECODE);
}

static double prefill(const struct speed_input *in)
{
	return speed_predict(in, speed_fitted, SPEED_TEST_PREFILL);
}

/* Seconds per byte of pinned host weights crossing the assumed link. */
static double host_copy_s(void)
{
	return 1 / (SPEED_ASSUMED_HOST_LINK_GBS * GB);
}

START_TEST(backend_names_parse_both_ways)
{
	enum speed_backend b = SPEED_BACKEND_CPU;

	for (int i = 0; i < SPEED_BACKEND_COUNT; i++) {
		ck_assert_int_eq(speed_backend_parse(speed_backend_name((enum speed_backend)i), &b),
				 0);
		ck_assert_int_eq(b, i);
	}
	ck_assert_int_eq(speed_backend_parse("hip", &b), 0);
	ck_assert_int_eq(b, SPEED_BACKEND_ROCM);
	ck_assert_int_eq(speed_backend_parse("opencl", &b), RF_E_INVALID_VALUE);
	ck_assert_int_eq(speed_backend_parse(NULL, &b), RF_E_INVALID_VALUE);
	ck_assert_str_eq(speed_backend_name((enum speed_backend)99), "unknown");
}
END_TEST

START_TEST(decode_is_bytes_over_effective_bandwidth_plus_per_layer_cost)
{
	const struct speed_params *p = &speed_fitted[SPEED_BACKEND_CUDA];
	struct speed_input in = one_gpu();
	double rate = fmin(p->mem_eff * 1008, p->mem_ceiling_gbs > 0 ? p->mem_ceiling_gbs : 1e9);
	double want = 1.0 / (4 * GB / (rate * GB) + 32 * p->layer_ms * 1e-3);
	double twice;

	ck_assert_double_eq_tol(decode(&in), want, want * 1e-12);
	/* Twice the bytes: less than twice the time, because the per-layer cost does not grow. */
	in.weight_bytes = 8 * GB;
	twice = decode(&in);
	ck_assert_double_lt(twice, want);
	ck_assert_double_gt(twice, want / 2);
	/* HBM parts have their own share of the peak, with no ceiling: an H200 (4800 GB/s)
	 * reads the weights 4800/3350 times as fast as an H100 SXM. */
	in = one_gpu();
	in.devices[0].hbm = true;
	in.devices[0].bandwidth_gbs = 3350;
	twice = 4 * GB / (1 / decode(&in) - 32 * p->layer_ms * 1e-3);
	in.devices[0].bandwidth_gbs = 4800;
	ck_assert_double_eq_tol(4 * GB / (1 / decode(&in) - 32 * p->layer_ms * 1e-3) / twice,
				4800.0 / 3350.0, 1e-9);
	ck_assert_double_gt(p->mem_eff_hbm, 0);
	ck_assert_double_lt(p->mem_eff_hbm, p->mem_eff);
}
END_TEST

START_TEST(a_layer_split_runs_devices_in_turn)
{
	struct speed_input one = one_gpu(), two = one_gpu();
	double t1, t2;

	two.n_devices = 2;
	two.devices[1] = two.devices[0];
	/* Two equal devices: the same decode and prefill as one, not twice. */
	ck_assert_double_eq_tol(decode(&two), decode(&one), decode(&one) * 1e-12);
	ck_assert_double_eq_tol(prefill(&two), prefill(&one), prefill(&one) * 1e-12);
	/* A slower second device holding half the layers: the times add. */
	two.devices[1].bandwidth_gbs = 504;
	two.devices[0].layer_share = 0.5;
	two.devices[1].layer_share = 0.5;
	t1 = 0.5 * 4 * GB / (speed_fitted[SPEED_BACKEND_CUDA].mem_eff * 1008 * GB);
	t2 = 0.5 * 4 * GB / (speed_fitted[SPEED_BACKEND_CUDA].mem_eff * 504 * GB);
	ck_assert_double_eq_tol(1.0 / decode(&two),
				t1 + t2 + 32 * speed_fitted[SPEED_BACKEND_CUDA].layer_ms * 1e-3,
				1e-12);
}
END_TEST

START_TEST(partial_offload_puts_the_rest_on_host_bandwidth)
{
	struct speed_input all = one_gpu(), half = one_gpu();
	double host_rate = 89.6 * SPEED_CPU_THEORETICAL_READ_SHARE;
	double want;

	half.gpu_fraction = 0.5;
	half.host.bandwidth_gbs = 89.6;
	half.host.threads = 16;
	want = 1.0 / (1.0 / decode(&all) - 16 * speed_fitted[SPEED_BACKEND_CUDA].layer_ms * 1e-3 -
		      2 * GB / (speed_fitted[SPEED_BACKEND_CUDA].mem_eff * 1008 * GB) +
		      2 * GB / (host_rate * GB));
	ck_assert_double_eq_tol(decode(&half), want, want * 1e-9);
	ck_assert_double_lt(decode(&half), decode(&all) / 4);
	/* A measured host bandwidth is used as measured. */
	half.host.bandwidth_measured = true;
	ck_assert_double_gt(decode(&half), want);
	/* Prefill runs the host half on the GPU too, its 2 GB copied once per 512-token
	 * micro-batch over the link (PCIe 4.0 x16 at 80% when unknown), pinned (--no-mmap). */
	half.host_pinned = true;
	ck_assert_double_eq_tol(1 / prefill(&half),
				1 / prefill(&all) + 2 * GB * host_copy_s() / 512, 1e-12);
	half.host.link_gbs = 12.5;
	ck_assert_double_eq_tol(1 / prefill(&half), 1 / prefill(&all) + 2 * GB / (12.5 * GB) / 512,
				1e-12);
	ck_assert_double_gt(prefill(&half), prefill(&all) / 4);
	/* With no layer on the GPU llama.cpp still prefills there; only the CPU backend computes
	 * on the host's threads. */
	half.gpu_fraction = 0;
	ck_assert_double_eq_tol(1 / prefill(&half), 1 / prefill(&all) + 4 * GB / (12.5 * GB) / 512,
				1e-12);
	half.backend = SPEED_BACKEND_CPU;
	ck_assert_double_lt(prefill(&half), prefill(&all) / 4);
}
END_TEST

START_TEST(kv_reads_at_full_context_slow_decode)
{
	struct speed_input in = one_gpu();
	struct speed_output out;

	in.kv_bytes_full = 4 * GB;
	ck_assert_int_eq(speed_estimate(&in, &out), 0);
	ck_assert_double_gt(out.decode_tokens_per_s, out.decode_tokens_per_s_at_full_ctx);
	ck_assert_double_lt(out.decode_tokens_per_s_at_full_ctx, out.decode_tokens_per_s * 0.7);
	ck_assert_str_eq(out.basis, "roofline");
}
END_TEST

/* The decode span (start and whole context, the host's rates computed once) is exactly the
 * two predictions it stands for: on a GPU, split with the host (with a mix of weight types and
 * without), on the host alone, and with one of the two KV sizes invalid. */
START_TEST(the_decode_span_is_two_predictions)
{
	struct speed_input cases[6];
	int n = 0;

	cases[n] = one_gpu();
	cases[n++].kv_bytes_full = 4 * GB;
	for (int mixed = 0; mixed < 2; mixed++) {
		struct speed_input in = one_gpu();
		in.gpu_fraction = 0.4;
		in.kv_bytes_start = 0.1 * GB;
		in.kv_bytes_full = 2 * GB;
		in.host.bandwidth_gbs = 80;
		in.host.threads = 8;
		in.host.cpu_isa = SPEED_CPU_ISA_AVX2;
		in.weight_ftype_known = true;
		in.weight_ftype = RF_FT_Q4_K_M;
		in.repacked_share = 0.5;
		if (mixed) {
			in.cpu_mix.share[SPEED_CPU_K4] = 0.8;
			in.cpu_mix.repacked[SPEED_CPU_K4] = 1;
			in.cpu_mix.share[SPEED_CPU_Q6_K] = 0.2;
		}
		cases[n++] = in;
		in.gpu_fraction = 0;
		in.n_devices = 0;
		in.backend = SPEED_BACKEND_CPU;
		cases[n++] = in;
	}
	cases[n] = cases[1];
	cases[n++].kv_bytes_start = -1; /* invalid: the full context's still predicted */
	for (int i = 0; i < n; i++) {
		struct speed_input full = cases[i];
		double start, whole;
		full.kv_bytes_start = full.kv_bytes_full;
		speed_predict_decode_span(&cases[i], speed_fitted, &start, &whole);
		ck_assert_msg(start == decode(&cases[i]), "case %d: %.17g", i, start);
		ck_assert_msg(whole == decode(&full), "case %d: %.17g", i, whole);
		ck_assert(i == n - 1 ? start == -1 : start > 0);
		ck_assert(whole > 0);
		ck_assert(whole <= start || i == n - 1);
	}
}
END_TEST

START_TEST(moe_prefill_reads_the_experts_its_micro_batch_routes_to)
{
	struct speed_input dense = one_gpu(), moe = one_gpu();
	const struct speed_params *p = &speed_fitted[SPEED_BACKEND_CUDA];

	/* The same active weights and FLOPs; the MoE one has 8 GB more experts, read once per
	 * 512-token micro-batch. */
	moe.moe_batch_bytes = 8 * GB;
	ck_assert_double_eq_tol(1 / prefill(&moe),
				1 / prefill(&dense) + 8 * GB / (p->mem_eff * 1008 * GB) / 512,
				1e-12);
	ck_assert_double_eq_tol(decode(&moe), decode(&dense), 1e-9);
}
END_TEST

START_TEST(prefill_is_flops_over_throughput_with_a_kernel_ceiling)
{
	const struct speed_params *p = &speed_fitted[SPEED_BACKEND_CUDA];
	struct speed_input in = one_gpu();
	double eff = p->tensor_eff * p->tensor_quant_factor;
	double want = 1.0 / (14e9 / (eff * 330e12) + 14e9 / (p->tensor_ceiling_tflops * 1e12));
	double slow;

	ck_assert_double_eq_tol(prefill(&in), want, want * 1e-12);
	in.quantized = false;
	ck_assert_double_gt(prefill(&in), want); /* no dequantisation */
	/* Ten times the peak buys much less than ten times the speed: the ceiling. */
	in = one_gpu();
	slow = prefill(&in);
	in.devices[0].compute_tflops = 3300;
	ck_assert_double_lt(prefill(&in), 3 * slow);
	/* No compute rate: prefill is unknown, decode still known. */
	in.devices[0].compute_tflops = -1;
	in.devices[0].compute = SPEED_COMPUTE_UNKNOWN;
	ck_assert_double_eq(prefill(&in), -1);
	ck_assert_double_gt(decode(&in), 0);
	/* A workstation or datacenter part of the same peak reaches its own, smaller share of
	 * it (power-limited clocks; no wgmma on Hopper), fitted on those parts' rows. */
	in = one_gpu();
	in.devices[0].pro = true;
	eff = p->tensor_eff_pro * p->tensor_quant_factor;
	want = 1.0 / (14e9 / (eff * 330e12) + 14e9 / (p->tensor_ceiling_tflops * 1e12));
	ck_assert_double_eq_tol(prefill(&in), want, want * 1e-12);
	ck_assert_double_lt(p->tensor_eff_pro, p->tensor_eff);
	ck_assert_double_gt(p->tensor_eff_pro, 0);
	slow = decode(&in);
	in.devices[0].pro = false;
	ck_assert_double_eq(decode(&in), slow); /* decode does not depend on the class */
}
END_TEST

START_TEST(cpu_backend_uses_the_host_only)
{
	struct speed_input in;
	struct speed_output out;
	const struct speed_params *cpu = &speed_fitted[SPEED_BACKEND_CPU];

	memset(&in, 0, sizeof(in));
	in.backend = SPEED_BACKEND_CPU;
	in.weight_bytes = 1 * GB;
	in.flops_per_token = 2e9;
	in.n_layers = 22;
	in.host.bandwidth_gbs = 40;
	in.host.bandwidth_measured = true;
	in.host.threads = 12;
	ck_assert_int_eq(speed_estimate(&in, &out), 0);
	ck_assert_double_eq_tol(out.decode_tokens_per_s, 40 * cpu->mem_eff, 1e-9);
	/* rigfit's own measurement reads as the kernels do: SPEED_HOST_MEASURED_READ_SHARE. */
	in.host.bandwidth_hostbench = true;
	ck_assert_int_eq(speed_estimate(&in, &out), 0);
	ck_assert_double_eq_tol(out.decode_tokens_per_s, 40 * SPEED_HOST_MEASURED_READ_SHARE, 1e-9);
	in.host.bandwidth_hostbench = false;
	ck_assert_double_eq_tol(out.prefill_tokens_per_s, 12 * cpu->cpu_gflops_per_thread / 2.0,
				1e-9);
	ck_assert_double_eq(out.compute_efficiency, -1);
}
END_TEST

START_TEST(estimates_list_their_assumptions)
{
	struct speed_input in = one_gpu();
	struct speed_output out;
	bool fitted = false, layers = false, split = false;

	in.n_layers = 0;
	in.n_devices = 2;
	in.devices[1] = in.devices[0];
	in.devices[1].tensor_units_unrated = true;
	in.devices[1].compute = SPEED_COMPUTE_VECTOR;
	in.devices[1].compute_tflops = 82;
	ck_assert_int_eq(speed_estimate(&in, &out), 0);
	ck_assert_int_gt(out.n_assumptions, 3);
	for (int i = 0; i < out.n_assumptions; i++) {
		fitted |= strstr(out.assumptions[i], "fitted on 29 calibration rows") != NULL;
		layers |= strstr(out.assumptions[i], "32 layers assumed") != NULL;
		split |= strstr(out.assumptions[i], "bandwidths are not summed") != NULL;
	}
	ck_assert(fitted && layers && split);
	ck_assert_double_eq(out.mem_efficiency, speed_fitted[SPEED_BACKEND_CUDA].mem_eff);
	ck_assert_double_eq(out.compute_ceiling_tflops,
			    speed_fitted[SPEED_BACKEND_CUDA].tensor_ceiling_tflops);
}
END_TEST

START_TEST(bad_inputs_are_refused_and_leave_the_output_alone)
{
	struct speed_input in;
	struct speed_output out;

	memset(&out, 0x5a, sizeof(out));
	for (int c = 0; c < 9; c++) {
		in = one_gpu();
		switch (c) {
		case 0:
			in.weight_bytes = 0;
			break;
		case 1:
			in.weight_bytes = NAN;
			break;
		case 2:
			in.gpu_fraction = 1.5;
			break;
		case 3:
			in.n_devices = SPEED_MAX_DEVICES + 1;
			break;
		case 4:
			in.n_devices = 0;
			break;
		case 5:
			in.devices[0].bandwidth_gbs = 0;
			break;
		case 6:
			in.backend = (enum speed_backend)17;
			break;
		case 7:
			in.kv_bytes_full = -1;
			break;
		case 8:
			in.flops_per_token = INFINITY;
			break;
		}
		ck_assert_msg(speed_estimate(&in, &out) == RF_E_INVALID_VALUE, "case %d", c);
		ck_assert_double_eq(speed_predict(&in, speed_fitted, SPEED_TEST_DECODE), -1);
	}
	ck_assert_int_eq(((unsigned char *)&out)[0], 0x5a);
	in = one_gpu();
	ck_assert_int_eq(speed_estimate(NULL, &out), RF_E_INVALID_VALUE);
	ck_assert_int_eq(speed_estimate(&in, NULL), RF_E_INVALID_VALUE);
	ck_assert_int_eq(speed_fit(NULL, 1, speed_fitted, NULL), RF_E_INVALID_VALUE);
}
END_TEST

/* ---- against the calibration rows ------------------------------------------------------ */

static struct speed_rows rows;

static void load_rows(void)
{
	if (rows.n == 0)
		ck_assert_int_eq(speed_rows_load(t_data_dir(), t_src_dir(), &rows), 0);
}

static void free_rows(void)
{
	speed_rows_free(&rows);
}

static const struct speed_row *row_at(int line)
{
	for (int i = 0; i < rows.n; i++)
		if (rows.rows[i].line == line)
			return &rows.rows[i];
	return NULL;
}

START_TEST(measured_rows_are_reproduced_within_stated_tolerances)
{
	/* line in llamacpp_tg_pp.csv, tolerance (relative), what it is */
	static const struct {
		int line;
		double tol;
		const char *what;
	} cases[] = {
		{21, 0.10, "Apple M2 Max 30c, Llama 2 7B Q4_0, tg128"},
		{28, 0.10, "Apple M2 Ultra 60c, Llama 2 7B F16, tg128"},
		{51, 0.10, "RTX 4090, Llama 3 8B Q4_K_M, tg512"},
		{53, 0.10, "RTX 4090, Llama 3 8B F16, tg512"},
		{65, 0.15,
		 "A100 PCIe 80GB, Llama 3 70B Q4_K_M, tg512 (HBM: the bandwidth ceiling)"},
		{73, 0.15, "H100 PCIe, Llama 3 8B Q4_K_M, tg512"},
		{97, 0.15, "2x RTX 4090, Llama 3 70B Q4_K_M, tg512 (layer split)"},
		{148, 0.15,
		 "RTX 4090 Vulkan, TinyLlama 1.1B Q4_K_M, tg128 (per-layer cost dominates)"},
		{187, 0.15, "RTX 5070, Llama 2 7B Q4_0, tg128"},
		{50, 0.20, "RTX 4090, Llama 3 8B Q4_K_M, pp512"},
		{74, 0.20, "H100 PCIe, Llama 3 8B F16, pp512 (tensor ceiling)"},
		{82, 0.10, "Apple M2 Ultra 76c, Llama 3 8B F16, pp512"},
		{98, 0.15, "2x RTX 4090, Llama 3 8B Q4_K_M, pp512"},
		{156, 0.20, "Cix CP8180 12 threads, Llama 3.2 3B Q4_K_M, pp512 (CPU)"},
	};

	load_rows();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct speed_row *r = row_at(cases[i].line);
		double est, err;
		ck_assert_msg(r != NULL && r->use == ROW_FIT, "line %d is not a fitted row",
			      cases[i].line);
		err = speed_row_error(r, speed_fitted, &est);
		ck_assert_msg(err >= 0 && err <= cases[i].tol,
			      "%s: measured %.2f, estimated %.2f (%.1f%%, tolerance %.0f%%)",
			      cases[i].what, r->measured, est, 100 * err, 100 * cases[i].tol);
	}
}
END_TEST

START_TEST(median_errors_meet_the_targets_in_sample_and_held_out)
{
	struct speed_obs *obs;
	struct speed_params train[SPEED_BACKEND_COUNT];
	double dec, pre;
	size_t n, n_fit = 0;

	load_rows();
	for (int i = 0; i < rows.n; i++)
		n_fit += rows.rows[i].use == ROW_FIT;
	ck_assert_uint_ge(n_fit, 100);
	speed_rows_medians(&rows, speed_fitted, 0, &dec, &pre);
	ck_assert_msg(dec < ACCURACY_DECODE_TARGET, "decode in-sample median %.3f", dec);
	ck_assert_msg(pre < ACCURACY_PREFILL_TARGET, "prefill in-sample median %.3f", pre);
	/* Every 4th row held out: fitted on the others, scored on those. */
	obs = calloc((size_t)rows.n, sizeof(*obs));
	ck_assert_ptr_nonnull(obs);
	n = speed_rows_obs(&rows, 1, NULL, obs, (size_t)rows.n);
	ck_assert_uint_lt(n, n_fit);
	ck_assert_int_eq(speed_fit(obs, n, speed_fitted, train), 0);
	speed_rows_medians(&rows, train, 2, &dec, &pre);
	ck_assert_msg(dec <= SPEED_HELD_OUT_DECODE_TARGET, "decode held-out median %.3f", dec);
	ck_assert_msg(pre <= SPEED_HELD_OUT_PREFILL_TARGET, "prefill held-out median %.3f", pre);
	free(obs);
}
END_TEST

/* Per-chip Apple bandwidth: the chips of llama.cpp discussion #4167 that the calibration rows
 * lack (M2 Pro 16-core, M4 Pro, M2 Ultra 76-core; tests/fixtures/apple_llamacpp_4167.csv),
 * never fitted, from profiles/devices.json: decode within 10%, prefill within 15%. And the
 * chips are told apart: an M1 Max decodes as fast as an M3 Max (both 400 GB/s) but prefills
 * at its own 32 cores, not the M3 Max's 40; an M4 Max 32-core (410 GB/s) is slower than the
 * 40-core one (546 GB/s). */
static struct speed_input apple_llama2_7b(const struct device_profile *p, const char *quant,
					  double size_gib)
{
	struct speed_input in;

	memset(&in, 0, sizeof(in));
	in.backend = SPEED_BACKEND_METAL;
	in.weight_bytes = size_gib * 1024.0 * 1024.0 * 1024.0;
	in.kv_bytes_start = 2.0 * 32 * 4096 * 2 * 64; /* f16 K and V, 64 tokens on average */
	in.kv_bytes_full = in.kv_bytes_start;
	in.flops_per_token = 2 * 6.74e9;
	in.n_layers = 32;
	in.quantized = strcmp(quant, "F16") != 0;
	in.gpu_fraction = 1;
	in.n_devices = 1;
	in.devices[0].bandwidth_gbs = p->memory_bandwidth_gbs;
	in.devices[0].compute_tflops = p->fp16_tflops;
	in.devices[0].compute = SPEED_COMPUTE_VECTOR;
	return in;
}

static const struct device_profile *profile(const char *name)
{
	const struct device_profile *p = NULL;

	ck_assert_msg(device_resolve(&rows.devices, name, &p) == 0, "%s", name);
	return p;
}

START_TEST(apple_chips_follow_their_own_bandwidth_and_cores)
{
	char *path = t_path(t_src_dir(), "tests/fixtures/apple_llamacpp_4167.csv");
	struct t_csv *c = t_csv_read(path);
	struct speed_input a, b;

	load_rows();
	ck_assert_ptr_nonnull(c);
	ck_assert_int_ge(c->n_rows, 15);
	for (int r = 0; r < c->n_rows; r++) {
		const char *quant = t_csv_get(c, r, "quant");
		const bool pp = strcmp(t_csv_get(c, r, "test"), "pp512") == 0;
		double size, want, got;
		ck_assert_int_eq(t_csv_num(c, r, "model_size_gib", &size), 0);
		ck_assert_int_eq(t_csv_num(c, r, "tokens_per_s", &want), 0);
		a = apple_llama2_7b(profile(t_csv_get(c, r, "device")), quant, size);
		got = pp ? prefill(&a) : decode(&a);
		ck_assert_msg(fabs(got / want - 1) <= (pp ? 0.15 : 0.10),
			      "%s %s %s: measured %.2f, estimated %.2f", t_csv_get(c, r, "device"),
			      quant, pp ? "pp512" : "tg128", want, got);
	}
	a = apple_llama2_7b(profile("Apple M1 Max"), "Q4_0", 3.56);
	b = apple_llama2_7b(profile("Apple M3 Max"), "Q4_0", 3.56);
	ck_assert_double_eq_tol(decode(&a), decode(&b), 1e-9);
	ck_assert_double_lt(prefill(&a), 0.8 * prefill(&b));
	a = apple_llama2_7b(profile("Apple M4 Max (32-core GPU)"), "Q4_0", 3.56);
	b = apple_llama2_7b(profile("Apple M4 Max"), "Q4_0", 3.56);
	ck_assert_double_lt(decode(&a), 0.85 * decode(&b));
	/* The M3 Ultra has a bandwidth now (819 GB/s): decode above the M2 Ultra's 800. */
	a = apple_llama2_7b(profile("Apple M3 Ultra"), "Q4_0", 3.56);
	b = apple_llama2_7b(profile("Apple M2 Ultra"), "Q4_0", 3.56);
	ck_assert_double_gt(decode(&a), decode(&b));
	t_csv_free(c);
	free(path);
}
END_TEST

/* Partial-offload prefill against llama-bench (tests/fixtures/partial_offload_prefill.csv,
 * read by tests/accuracy/speed_rows.c): the host layers' weights cross to the GPU once per
 * micro-batch, staged first when they are mmap'd (pageable). "row" lines are whole prefill
 * rates; "pair" lines come in mmap 0 / mmap 1 pairs of an older build, whose difference is the
 * pageable copy's own time. */
static struct t_csv *offload_rows(void)
{
	struct t_csv *c = speed_offload_csv(t_src_dir());

	ck_assert_ptr_nonnull(c);
	return c;
}

static double col(const struct t_csv *c, int r, const char *name)
{
	double v = 0;

	ck_assert_msg(t_csv_num(c, r, name, &v) == 0, "line %d: %s", r + 2, name);
	return v;
}

static struct speed_input offload_input(const struct t_csv *c, int r)
{
	struct speed_input in;

	ck_assert_msg(speed_offload_input(c, r, &rows.devices, &in) == 0, "line %d", r + 2);
	return in;
}

static bool is_row(const struct t_csv *c, int r)
{
	return strcmp(t_csv_get(c, r, "use"), "row") == 0;
}

/* The largest relative error over the "row" lines with params (each asserted within 25% when
 * strict); *n counts the rows. */
static double worst_row_error(const struct t_csv *c, const struct speed_params *params,
			      bool fixed_ubatch, bool strict, int *n)
{
	double worst = 0;

	*n = 0;
	for (int r = 0; r < c->n_rows; r++) {
		struct speed_input in;
		double want, got;
		if (!is_row(c, r))
			continue;
		in = offload_input(c, r);
		if (fixed_ubatch)
			in.n_ubatch = SPEED_PREFILL_UBATCH;
		want = col(c, r, "tokens_per_s");
		got = speed_predict(&in, params, SPEED_TEST_PREFILL);
		ck_assert_msg(!strict || fabs(got / want - 1) <= 0.25,
			      "line %d, %s ngl %.0f: measured %.2f, estimated %.2f", r + 2,
			      t_csv_get(c, r, "model"), col(c, r, "ngl"), want, got);
		if (fabs(got / want - 1) > worst)
			worst = fabs(got / want - 1);
		(*n)++;
	}
	return worst;
}

START_TEST(partial_offload_prefill_meets_the_published_rows)
{
	struct t_csv *c = offload_rows();
	struct speed_params none[SPEED_BACKEND_COUNT];
	int n = 0;

	load_rows();
	ck_assert_double_le(worst_row_error(c, speed_fitted, false, true, &n), 0.25);
	ck_assert_int_ge(n, 8);
	/* Rows of a device whose profile has no rates (the P40's are from no reliable source):
	 * no prefill is made up for them. */
	for (int r = 0; r < c->n_rows; r++) {
		struct speed_input in;
		if (strcmp(t_csv_get(c, r, "use"), "no_profile") != 0)
			continue;
		in = offload_input(c, r);
		ck_assert_double_eq(prefill(&in), -1);
		n++;
	}
	ck_assert_int_ge(n, 10);
	/* Without the staging of pageable weights, or with the copies counted per 512 tokens
	 * whatever n_ubatch, the rows are missed. */
	memcpy(none, speed_fitted, sizeof(none));
	for (int b = 0; b < SPEED_BACKEND_COUNT; b++)
		none[b].host_staging_gbs = 0;
	ck_assert_double_gt(worst_row_error(c, none, false, false, &n), 0.5);
	ck_assert_double_gt(worst_row_error(c, speed_fitted, true, false, &n), 0.25);
	t_csv_free(c);
}
END_TEST

START_TEST(the_staging_rate_is_what_the_fit_finds)
{
	struct t_csv *c = offload_rows();
	struct speed_obs obs[64];
	size_t n = 0;
	double gbs = 0;

	load_rows();
	for (int r = 0; r < c->n_rows && n < 64; r++) {
		if (!is_row(c, r) || col(c, r, "wsl") == 0)
			continue;
		obs[n].in = offload_input(c, r);
		obs[n].test = SPEED_TEST_PREFILL;
		obs[n].measured_tps = col(c, r, "tokens_per_s");
		n++;
	}
	ck_assert_int_eq(speed_fit_staging(obs, n, speed_fitted, &gbs), 0);
	for (int b = 0; b < SPEED_BACKEND_COUNT; b++)
		ck_assert_double_eq_tol(speed_fitted[b].host_staging_gbs, gbs, 1e-9);
	ck_assert_int_eq(speed_fitted[SPEED_BACKEND_CUDA].rows_staging, (int)n);
	/* Pinned weights are not staged: the same rows then say nothing about the rate. */
	for (size_t i = 0; i < n; i++)
		obs[i].in.host_pinned = true;
	ck_assert_int_eq(speed_fit_staging(obs, n, speed_fitted, &gbs), RF_E_INVALID_VALUE);
	ck_assert_int_eq(speed_fit_staging(obs, 0, speed_fitted, &gbs), RF_E_INVALID_VALUE);
	t_csv_free(c);
}
END_TEST

/* The older build's mmap pairs: the time pageable weights add per token follows the host
 * bytes (its ratio to the estimate stays put as layers move to the GPU) and is the fitted
 * staging's within a factor of 2.5 (Mixtral's pairs imply 6.3 GB/s, Llama 2 7B's 13). */
START_TEST(mmap_pairs_differ_by_the_staging_time)
{
	struct t_csv *c = offload_rows();
	double lo[2] = {1e9, 1e9}, hi[2] = {0, 0};
	int pairs = 0;

	load_rows();
	for (int r = 0; r + 1 < c->n_rows; r++) {
		struct speed_input pinned, pageable;
		double want, got;
		int m = strcmp(t_csv_get(c, r, "model"), "Mixtral 8x7B") == 0;
		if (strcmp(t_csv_get(c, r, "use"), "pair") != 0 || col(c, r, "mmap") != 0)
			continue;
		ck_assert(col(c, r + 1, "mmap") == 1 && col(c, r + 1, "ngl") == col(c, r, "ngl"));
		pinned = offload_input(c, r);
		pageable = offload_input(c, r + 1);
		/* Seconds per token that pageable weights add. */
		want = 1 / col(c, r + 1, "tokens_per_s") - 1 / col(c, r, "tokens_per_s");
		got = 1 / prefill(&pageable) - 1 / prefill(&pinned);
		ck_assert_msg(got > 0 && fabs(log(got / want)) <= log(2.5),
			      "line %d, %s ngl %.0f: pageable adds %.3f ms a token, estimated %.3f",
			      r + 2, t_csv_get(c, r, "model"), col(c, r, "ngl"), want * 1e3,
			      got * 1e3);
		lo[m] = fmin(lo[m], got / want);
		hi[m] = fmax(hi[m], got / want);
		pairs++;
	}
	ck_assert_int_ge(pairs, 10);
	for (int m = 0; m < 2; m++)
		ck_assert_msg(hi[m] / lo[m] < 1.25, "model %d: ratios %.2f to %.2f", m, lo[m],
			      hi[m]);
	t_csv_free(c);
}
END_TEST

/* gpt-oss-120b with --n-cpu-moe on an RTX 3090 (the fixture's rows with n_cpu_moe): each
 * micro-batch copies the host experts its tokens route to, so prefill rises with n_ubatch
 * (240 tokens/s at -ub 256 to 1,113 at 2048 measured). */
START_TEST(moe_host_experts_prefill_follows_n_ubatch)
{
	struct t_csv *c = offload_rows();
	struct speed_params uniform[SPEED_BACKEND_COUNT];
	struct speed_input in, pinned, wsl;
	double worst_uniform = 0, last = 0;
	int n = 0, first = -1;

	load_rows();
	memcpy(uniform, speed_fitted, sizeof(uniform));
	for (int b = 0; b < SPEED_BACKEND_COUNT; b++)
		uniform[b].expert_skew = 0;
	for (int r = 0; r < c->n_rows; r++) {
		double want, got, flat;
		if (!is_row(c, r) || col(c, r, "n_cpu_moe") <= 0)
			continue;
		in = offload_input(c, r);
		ck_assert(in.host_expert_bytes > 0 && !in.host.no_page_lock && !in.host_pinned);
		want = col(c, r, "tokens_per_s");
		got = prefill(&in);
		/* Each within 35% (the -ub 8192 line is a pp8192 run the post calls informal),
		 * those of -ub 256 to 2048 within 15%. */
		ck_assert_msg(fabs(got / want - 1) <= 0.35,
			      "line %d, -ub %.0f: measured %.2f, "
			      "estimated %.2f",
			      r + 2, col(c, r, "n_ubatch"), want, got);
		if (col(c, r, "n_ubatch") <= 2048)
			ck_assert_msg(fabs(got / want - 1) <= 0.15, "line %d: %.2f vs %.2f", r + 2,
				      want, got);
		flat = speed_predict(&in, uniform, SPEED_TEST_PREFILL);
		worst_uniform = fmax(worst_uniform, fabs(flat / want - 1));
		if (first < 0)
			first = r;
		n++;
	}
	ck_assert_int_ge(n, 5);
	/* A uniform router copies every expert from a few dozen tokens on: the small
	 * micro-batches are then missed by far more. */
	ck_assert_double_gt(worst_uniform, 0.35);
	/* At one split, prefill rises with n_ubatch. */
	in = offload_input(c, first);
	in.prompt_tokens = 8192;
	for (int ub = 64; ub <= 8192; ub *= 2) {
		double tps;
		in.n_ubatch = ub;
		tps = prefill(&in);
		ck_assert_msg(tps > last, "-ub %d: %.1f after %.1f", ub, tps, last);
		last = tps;
	}
	/* Copies of pinned weights and of a native driver's pageable ones cost the same; only a
	 * host that cannot page-lock mapped memory (WSL) stages them. */
	in = offload_input(c, first);
	pinned = wsl = in;
	pinned.host_pinned = true;
	wsl.host.no_page_lock = true;
	ck_assert_double_eq_tol(prefill(&pinned), prefill(&in), 1e-9);
	ck_assert_double_lt(prefill(&wsl), 0.5 * prefill(&in));
	t_csv_free(c);
}
END_TEST

START_TEST(expert_share_grows_with_the_micro_batch)
{
	double prev = 0;

	/* Unknown experts: every host expert is copied. */
	ck_assert_double_eq(speed_expert_share(0, 0, 512, 1.5), 1);
	/* A uniform router touches all of Mixtral's 8 experts within a few dozen tokens. */
	ck_assert_double_gt(speed_expert_share(8, 2, 32, 0), 0.99);
	ck_assert_double_gt(speed_expert_share(128, 4, 256, 0), 0.99);
	/* With the fitted skew gpt-oss-120b's 128 experts fill up over thousands of tokens. */
	for (int t = 1; t <= 16384; t *= 2) {
		double s =
			speed_expert_share(128, 4, t, speed_fitted[SPEED_BACKEND_CUDA].expert_skew);
		ck_assert_double_gt(s, prev);
		ck_assert_double_le(s, 1);
		prev = s;
	}
	ck_assert_double_lt(speed_expert_share(128, 4, 256, 1.55), 0.75);
	ck_assert_double_gt(speed_expert_share(128, 4, 4096, 1.55), 0.9);
}
END_TEST

START_TEST(the_expert_skew_is_what_the_fit_finds)
{
	struct t_csv *c = offload_rows();
	struct speed_obs obs[64];
	size_t n = 0;
	double skew = -1;

	load_rows();
	for (int r = 0; r < c->n_rows && n < 64; r++) {
		if (!is_row(c, r))
			continue;
		obs[n].in = offload_input(c, r);
		obs[n].test = SPEED_TEST_PREFILL;
		obs[n].measured_tps = col(c, r, "tokens_per_s");
		n++;
	}
	ck_assert_int_eq(speed_fit_expert_skew(obs, n, speed_fitted, &skew), 0);
	ck_assert_double_eq_tol(speed_fitted[SPEED_BACKEND_CUDA].expert_skew, skew, 1e-9);
	ck_assert_int_eq(speed_fitted[SPEED_BACKEND_CUDA].rows_skew, 5);
	/* Rows that copy no host experts say nothing about it. */
	for (size_t i = 0; i < n; i++)
		obs[i].in.host_expert_bytes = 0;
	ck_assert_int_eq(speed_fit_expert_skew(obs, n, speed_fitted, &skew), RF_E_INVALID_VALUE);
	t_csv_free(c);
}
END_TEST

/* The time to first token of a long prompt on a partial offload follows n_ubatch too: a
 * 4096-token prompt copies the host half 8 times in micro-batches of 512, twice in 2048. */
START_TEST(time_to_first_token_follows_n_ubatch)
{
	struct speed_input in = one_gpu();
	struct speed_batch b;
	struct speed_batch_output small, large;
	double copy = 2 * GB * host_copy_s();

	in.gpu_fraction = 0.5;
	in.host_pinned = true;
	memset(&b, 0, sizeof(b));
	b.n_streams = 1;
	b.prompt_tokens = 4096;
	ck_assert_int_eq(speed_batched(&in, &b, &small), 0);
	in.n_ubatch = 2048;
	ck_assert_int_eq(speed_batched(&in, &b, &large), 0);
	ck_assert_double_eq_tol(small.time_to_first_token_s - large.time_to_first_token_s,
				(8 - 2) * copy, 1e-9);
	/* The decode step does not change. */
	ck_assert_double_eq_tol(small.step_ms, large.step_ms, 1e-9);
}
END_TEST

START_TEST(prefill_copies_follow_n_ubatch)
{
	struct speed_input in = one_gpu();
	double base, s = host_copy_s(), pp512;

	in.gpu_fraction = 0.5;
	in.host_pinned = true;
	base = 1 / prefill(&in) - 2 * GB * s / 512; /* the compute, the same whatever the batch */
	pp512 = prefill(&in);
	/* 512-token prompt: n_ubatch 256 copies twice, 2048 once (the prompt is one micro-batch). */
	in.n_ubatch = 256;
	ck_assert_double_eq_tol(1 / prefill(&in), base + 2 * 2 * GB * s / 512, 1e-12);
	in.n_ubatch = 2048;
	ck_assert_double_eq_tol(prefill(&in), pp512, pp512 * 1e-12);
	/* A 4096-token prompt: ceil(4096 / 2048) = 2 copies, against 8 with the default. */
	in.prompt_tokens = 4096;
	ck_assert_double_eq_tol(1 / prefill(&in), base + 2 * 2 * GB * s / 4096, 1e-12);
	in.n_ubatch = 0;
	ck_assert_double_eq_tol(1 / prefill(&in), base + 8 * 2 * GB * s / 4096, 1e-12);
	/* 1000 tokens in micro-batches of 512: two copies, the second of a partial batch. */
	in.prompt_tokens = 1000;
	ck_assert_double_eq_tol(1 / prefill(&in), base + 2 * 2 * GB * s / 1000, 1e-12);
	/* What the caller counts as copied (experts n_cpu_moe keeps on the host, a host output
	 * layer) replaces the host share of the weights. */
	in.prompt_tokens = 0;
	in.host_copy_bytes = 3 * GB;
	ck_assert_double_eq_tol(1 / prefill(&in), base + 3 * GB * s / 512, 1e-12);
	in.host_copy_bytes = 0;
	/* Micro-batches under 32 tokens leave the host layers on the CPU: far slower. */
	in.prompt_tokens = 0;
	in.n_ubatch = 16;
	ck_assert_double_lt(prefill(&in), pp512 / 4);
	/* Pageable weights cross at the link's rate from a native driver; where mapped memory
	 * cannot be page-locked (WSL) they are staged before the copy: slower than pinned ones. */
	in.n_ubatch = 0;
	in.host_pinned = false;
	ck_assert_double_eq_tol(1 / prefill(&in), base + 2 * GB * s / 512, 1e-12);
	in.host.no_page_lock = true;
	ck_assert_double_eq_tol(
		1 / prefill(&in),
		base + 2 * GB * (s + 1 / (speed_fitted[SPEED_BACKEND_CUDA].host_staging_gbs * GB)) /
				512,
		1e-12);
	/* Out of range. */
	in.n_ubatch = (1 << 20) + 1;
	ck_assert_double_eq(prefill(&in), -1);
	in.n_ubatch = 0;
	in.prompt_tokens = NAN;
	ck_assert_double_eq(prefill(&in), -1);
}
END_TEST

START_TEST(the_constants_are_what_the_fit_finds)
{
	struct speed_obs *obs;
	struct speed_params fit[SPEED_BACKEND_COUNT];
	size_t n;

	load_rows();
	obs = calloc((size_t)rows.n, sizeof(*obs));
	ck_assert_ptr_nonnull(obs);
	n = speed_rows_obs(&rows, 0, NULL, obs, (size_t)rows.n);
	ck_assert_int_eq(speed_fit(obs, n, speed_fitted, fit), 0);
	for (int b = 0; b < SPEED_BACKEND_COUNT; b++) {
		const struct speed_params *a = &speed_fitted[b], *f = &fit[b];
		const char *be = speed_backend_name((enum speed_backend)b);
		const double got[] = {f->mem_eff,
				      f->mem_ceiling_gbs,
				      f->layer_ms,
				      f->mem_eff_hbm,
				      f->tensor_eff,
				      f->tensor_ceiling_tflops,
				      f->tensor_quant_factor,
				      f->tensor_eff_pro,
				      f->vector_eff,
				      f->vector_quant_factor,
				      f->cpu_gflops_per_thread};
		const double want[] = {a->mem_eff,
				       a->mem_ceiling_gbs,
				       a->layer_ms,
				       a->mem_eff_hbm,
				       a->tensor_eff,
				       a->tensor_ceiling_tflops,
				       a->tensor_quant_factor,
				       a->tensor_eff_pro,
				       a->vector_eff,
				       a->vector_quant_factor,
				       a->cpu_gflops_per_thread};
		for (size_t k = 0; k < sizeof(got) / sizeof(got[0]); k++)
			ck_assert_msg(fabs(got[k] - want[k]) < 1e-6,
				      "%s parameter %zu: fit %g, speed.c %g", be, k, got[k],
				      want[k]);
		ck_assert_int_eq(f->rows_decode, a->rows_decode);
		ck_assert_int_eq(f->rows_tensor, a->rows_tensor);
		ck_assert_int_eq(f->rows_vector, a->rows_vector);
		ck_assert_int_eq(f->rows_cpu_prefill, a->rows_cpu_prefill);
	}
	free(obs);
}
END_TEST

START_TEST(rows_left_out_say_why)
{
	int skipped = 0;

	load_rows();
	for (int i = 0; i < rows.n; i++) {
		const struct speed_row *r = &rows.rows[i];
		if (r->use != ROW_SKIPPED)
			continue;
		skipped++;
		ck_assert_msg(r->reason[0], "line %d skipped without a reason", r->line);
	}
	ck_assert_int_gt(skipped, 0);
	ck_assert_str_eq(row_at(68)->reason, "marked in notes (anomalous)");
	ck_assert_int_eq(row_at(197)->use, ROW_SKIPPED); /* "NVIDIA A100": which one? */
	ck_assert_int_eq(row_at(182)->use, ROW_CHECK);   /* tg128 with fa=1: checked, not fitted */
}
END_TEST

Suite *speed_suite(void)
{
	Suite *s = suite_create("speed");
	TCase *model = tcase_create("model");
	TCase *cal = tcase_create("calibration");

	tcase_add_test(model, backend_names_parse_both_ways);
	tcase_add_test(model, decode_is_bytes_over_effective_bandwidth_plus_per_layer_cost);
	tcase_add_test(model, a_layer_split_runs_devices_in_turn);
	tcase_add_test(model, partial_offload_puts_the_rest_on_host_bandwidth);
	tcase_add_test(model, kv_reads_at_full_context_slow_decode);
	tcase_add_test(model, the_decode_span_is_two_predictions);
	tcase_add_test(model, prefill_is_flops_over_throughput_with_a_kernel_ceiling);
	tcase_add_test(model, moe_prefill_reads_the_experts_its_micro_batch_routes_to);
	tcase_add_test(model, cpu_backend_uses_the_host_only);
	tcase_add_test(model, estimates_list_their_assumptions);
	tcase_add_test(model, bad_inputs_are_refused_and_leave_the_output_alone);
	suite_add_tcase(s, model);
	tcase_add_unchecked_fixture(cal, NULL, free_rows);
	tcase_add_test(cal, measured_rows_are_reproduced_within_stated_tolerances);
	tcase_add_test(cal, median_errors_meet_the_targets_in_sample_and_held_out);
	tcase_add_test(cal, the_constants_are_what_the_fit_finds);
	tcase_add_test(cal, apple_chips_follow_their_own_bandwidth_and_cores);
	tcase_add_test(cal, rows_left_out_say_why);
	tcase_add_test(cal, partial_offload_prefill_meets_the_published_rows);
	tcase_add_test(cal, the_staging_rate_is_what_the_fit_finds);
	tcase_add_test(cal, mmap_pairs_differ_by_the_staging_time);
	tcase_add_test(model, prefill_copies_follow_n_ubatch);
	tcase_add_test(model, time_to_first_token_follows_n_ubatch);
	tcase_add_test(model, moe_host_experts_prefill_follows_n_ubatch);
	tcase_add_test(model, expert_share_grows_with_the_micro_batch);
	tcase_add_test(model, the_expert_skew_is_what_the_fit_finds);
	tcase_set_timeout(cal, 300);
	suite_add_tcase(s, cal);
	return s;
}
