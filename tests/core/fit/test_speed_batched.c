/*
 * Batched decode (speed_batched): the mechanism (weights read once per step, KV per stream,
 * compute per token, the experts a batch of MoE tokens routes to) and its accuracy against
 * llama.cpp runs where every step carries several tokens: llama-bench pp2048 at micro-batch
 * sizes 16-128 (each step pushes that many tokens through the weights once, as that many
 * streams decoding together do), within 25% (RIGFIT_SHOW_ROWS=1 prints the errors).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/speed.h"
#include "tests/test.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* One GPU holding every layer, as profiles/devices.json describes it. */
static struct speed_input gpu(double bw_gbs, double tensor_tflops, double weight_bytes,
			      double active_params, int n_layers)
{
	struct speed_input in;

	memset(&in, 0, sizeof(in));
	in.backend = SPEED_BACKEND_CUDA;
	in.weight_bytes = weight_bytes;
	in.flops_per_token = 2 * active_params;
	in.n_layers = n_layers;
	in.quantized = true;
	in.gpu_fraction = 1;
	in.n_devices = 1;
	in.devices[0].bandwidth_gbs = bw_gbs;
	in.devices[0].compute_tflops = tensor_tflops;
	in.devices[0].compute = SPEED_COMPUTE_TENSOR;
	return in;
}

static struct speed_batch_output run(const struct speed_input *in, const struct speed_batch *b)
{
	struct speed_batch_output o;

	ck_assert_int_eq(speed_batched(in, b, &o), 0);
	return o;
}

/* Measured micro-batch runs. The weights read per token exclude the token embeddings (rows
 * are looked up, not read whole); the one sequence of pp2048 holds 1024 cells on average,
 * read once per step whatever the micro-batch. */
static const struct {
	const char *what;
	int mb;
	double tps;
} llama8b_q4ks_4090[] =
	{
		/* ggml-org/llama.cpp#7860 (int8 tensor cores for MMQ), RTX 4090, llama 8B Q4_K_S,
	 * pp2048, "t/s cuda-ptx-mma-12" column. */
		{"mb16", 16, 1946.01},
		{"mb32", 32, 3358.03},
		{"mb64", 64, 5349.26},
		{"mb128", 128, 6901.00},
},
  gptoss20b_3090[] = {
	  /* ggml-org/llama.cpp#22298 (reduce MMQ stream-k overhead), RTX 3090, gpt-oss 20B MXFP4
	 * MoE, pp2048, "t/s 5f1074e09" column. */
	  {"mb16", 16, 1095.24},
	  {"mb32", 32, 1576.91},
};

START_TEST(micro_batch_runs_are_reproduced_within_25_percent)
{
	/* RTX 4090 (profiles/devices.json: 1008 GB/s, 330 FP16 tensor TFLOPS); Llama 3 8B
	 * Q4_K_S: 4.37 GiB file less 0.28 GB of token embeddings; 8.03 B parameters. */
	struct speed_input l = gpu(1008, 330.3, 4.37 * GIB - 0.28e9, 8.03e9, 32);
	/* RTX 3090 (936 GB/s, 142 TFLOPS); gpt-oss-20b MXFP4: 11.27 GiB file, of which the
	 * routed experts are 24 layers x 32 experts x 3 x 2880 x 2880 weights at 4.25 bits;
	 * 4 of 32 experts per token; 3.6 B active parameters. */
	double experts = 24.0 * 32 * 3 * 2880 * 2880 * 4.25 / 8;
	double dense = 11.27 * GIB - experts;
	struct speed_input g = gpu(936, 142, dense + experts * 4 / 32, 3.6e9, 24);

	for (size_t i = 0; i < sizeof(llama8b_q4ks_4090) / sizeof(llama8b_q4ks_4090[0]); i++) {
		int n = llama8b_q4ks_4090[i].mb;
		struct speed_batch b = {n, 1024.0 * 131072 / n, 0, 0, 0, 512};
		struct speed_batch_output o = run(&l, &b);
		double e = o.aggregate_tokens_per_s / llama8b_q4ks_4090[i].tps - 1;
		if (getenv("RIGFIT_SHOW_ROWS"))
			fprintf(stderr, "llama 8B Q4_K_S 4090 %s: %+.1f%%\n",
				llama8b_q4ks_4090[i].what, 100 * e);
		ck_assert_msg(fabs(e) <= 0.25, "llama 8B Q4_K_S 4090 %s: %.0f t/s, measured %.0f",
			      llama8b_q4ks_4090[i].what, o.aggregate_tokens_per_s,
			      llama8b_q4ks_4090[i].tps);
	}
	for (size_t i = 0; i < sizeof(gptoss20b_3090) / sizeof(gptoss20b_3090[0]); i++) {
		int n = gptoss20b_3090[i].mb;
		struct speed_batch b = {n, 1024.0 * 24 * 2 * 8 * 64 * 2 / n, experts, 32, 4, 512};
		struct speed_batch_output o = run(&g, &b);
		double e = o.aggregate_tokens_per_s / gptoss20b_3090[i].tps - 1;
		if (getenv("RIGFIT_SHOW_ROWS"))
			fprintf(stderr, "gpt-oss 20B 3090 %s: %+.1f%%\n", gptoss20b_3090[i].what,
				100 * e);
		ck_assert_msg(fabs(e) <= 0.25, "gpt-oss 20B 3090 %s: %.0f t/s, measured %.0f",
			      gptoss20b_3090[i].what, o.aggregate_tokens_per_s,
			      gptoss20b_3090[i].tps);
	}
}
END_TEST

START_TEST(weights_are_read_once_per_step_kv_per_stream)
{
	struct speed_input in = gpu(1008, 330.3, 4.4e9, 8.03e9, 32);
	struct speed_batch one = {1, 0, 0, 0, 0, 512}, many = {32, 0, 0, 0, 0, 512};
	struct speed_batch_output o1, o32, kv32;

	o1 = run(&in, &one);
	/* One stream decodes as speed_estimate's decode at the start of generation. */
	ck_assert(fabs(o1.aggregate_tokens_per_s /
			       speed_predict(&in, speed_fitted, SPEED_TEST_DECODE) -
		       1) < 0.03);
	o32 = run(&in, &many);
	/* 32 streams share the weight pass: far more in all, a little less each. */
	ck_assert(o32.aggregate_tokens_per_s > 10 * o1.aggregate_tokens_per_s);
	ck_assert(o32.per_stream_tokens_per_s < o1.per_stream_tokens_per_s);
	ck_assert(fabs(o32.memory_ms - o1.memory_ms) < 1e-9);
	/* With 256 MB of KV per stream the step reads 32 x 256 MB more. */
	many.kv_bytes_per_stream = 256e6;
	kv32 = run(&in, &many);
	ck_assert(fabs((kv32.memory_ms - o32.memory_ms) -
		       32 * 256e6 / (speed_fitted[SPEED_BACKEND_CUDA].mem_eff * 1008e9) * 1e3) <
		  0.05);
	/* At 512 streams the batch runs at the pp512 rate: the same weight pass, the same
	 * compute. */
	many.n_streams = 512;
	many.kv_bytes_per_stream = 0;
	ck_assert(fabs(run(&in, &many).aggregate_tokens_per_s /
			       speed_predict(&in, speed_fitted, SPEED_TEST_PREFILL) -
		       1) < 0.02);
	/* The first token waits for the prompt's prefill. */
	ck_assert(fabs(o1.time_to_first_token_s -
		       (512 / speed_predict(&in, speed_fitted, SPEED_TEST_PREFILL) +
			1 / o1.aggregate_tokens_per_s)) < 1e-6);
}
END_TEST

START_TEST(moe_batches_read_the_experts_they_route_to)
{
	double experts = 10e9;
	struct speed_input in = gpu(936, 142, 2e9 + experts / 8, 3.6e9, 24);
	struct speed_batch b = {1, 0, experts, 32, 4, 512};
	struct speed_batch_output o1, o8, o64;

	o1 = run(&in, &b);
	ck_assert(fabs(o1.experts_read_share - 4.0 / 32) < 1e-9);
	b.n_streams = 8;
	o8 = run(&in, &b);
	ck_assert(fabs(o8.experts_read_share - (1 - pow(28.0 / 32, 8))) < 1e-9);
	ck_assert(o8.memory_ms > 2 * o1.memory_ms);
	b.n_streams = 64;
	o64 = run(&in, &b);
	ck_assert(o64.experts_read_share > 0.99);
	/* A dense model of the same active size would gain far more from batching. */
	ck_assert(o64.aggregate_tokens_per_s / o1.aggregate_tokens_per_s < 40);
}
END_TEST

START_TEST(bad_batches_are_refused)
{
	struct speed_input in = gpu(1008, 330.3, 4.4e9, 8.03e9, 32);
	struct speed_batch b = {0, 0, 0, 0, 0, 512};
	struct speed_batch_output o;

	memset(&o, 0x5a, sizeof(o));
	ck_assert_int_eq(speed_batched(&in, &b, &o), RF_E_INVALID_VALUE);
	b.n_streams = 4;
	b.kv_bytes_per_stream = -1;
	ck_assert_int_eq(speed_batched(&in, &b, &o), RF_E_INVALID_VALUE);
	b.kv_bytes_per_stream = 0;
	b.n_experts = 8;
	b.n_experts_used = 9;
	ck_assert_int_eq(speed_batched(&in, &b, &o), RF_E_INVALID_VALUE);
	b.n_experts_used = 2;
	in.devices[0].compute_tflops = 0; /* no compute rate: no prefill, no batch */
	ck_assert_int_eq(speed_batched(&in, &b, &o), RF_E_INVALID_VALUE);
	ck_assert_int_eq(speed_batched(NULL, &b, &o), RF_E_INVALID_VALUE);
	ck_assert(o.step_ms != 0); /* untouched: still the 0x5a pattern */
}
END_TEST

Suite *speed_batched_suite(void)
{
	Suite *s = suite_create("speed_batched");
	TCase *tc = tcase_create("batched");

	tcase_add_test(tc, micro_batch_runs_are_reproduced_within_25_percent);
	tcase_add_test(tc, weights_are_read_once_per_step_kv_per_stream);
	tcase_add_test(tc, moe_batches_read_the_experts_they_route_to);
	tcase_add_test(tc, bad_batches_are_refused);
	suite_add_tcase(s, tc);
	return s;
}
