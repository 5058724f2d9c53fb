/*
 * The speed model and its fit (see speed.h). The constants below are the output of
 * speed_fit() over every eligible row of tests/data/calibration/llamacpp_tg_pp.csv, rounded:
 * `make accuracy` (tests/accuracy/speed_rows.c) loads the rows, refits, prints the refitted
 * constants next to these, the per-row errors, and the in-sample, every-4th-row held-out and
 * leave-one-device-out medians. Rows used: tests tg128 and pp512 only; rows whose notes mark
 * them anomalous, memory-pressure limited, of large spread or run with a non-default setting
 * (KV cache in host RAM) are left out; devices are resolved through profiles/devices.json.
 */
#include "core/text.h"
#include "core/fit/speed.h"

#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/fit/cpu/speed_cpu.h"
#include "core/err.h"
#include "core/format.h"

/*
 * Fitted by speed_fit() on the calibration rows, as `make accuracy` prints them ("refitted
 * now"), rounded as printed. Rows: decode (tg128, tg512) cuda 29, metal 29, vulkan 10, rocm 2,
 * cpu 2 (one with a measured host bandwidth, the only one mem_eff rests on: a theoretical one
 * takes SPEED_CPU_THEORETICAL_READ_SHARE, fitted on the CPU rows by their own replay,
 * tests/api/test_cpu_speed_rows.c); prefill (pp512) on tensor
 * peaks cuda 27, vulkan 6; on vector peaks metal 23, vulkan 6, rocm 2; CPU prefill 4.
 * Not identifiable from a backend's own rows, so borrowed (speed_fit does the same): rocm and
 * the cpu per-layer cost (cuda's; the cpu has none), the quantization factors of vulkan and rocm
 * (cuda's tensor, metal's vector), ceilings where fewer than three peaks were seen (none).
 * Whole groups without rows inherit: tensor constants of rocm (Instinct), metal and cpu from
 * cuda; vector constants of cuda (Pascal, GTX 16) and cpu from rocm.
 * Reading them: CUDA decode reaches 96% of peak bandwidth on GDDR parts and 57% on HBM ones
 * (datacenter parts of 1200 GB/s or more: A100, H100; the rows cannot tell this from a
 * ceiling near 1150 GB/s, but a share follows H200 and B200 bandwidth where a ceiling would
 * hold them at an H100's speed) plus 0.075 ms per layer; prefill GEMMs reach the tensor peak but the
 * kernels top out near 250 TFLOPS and quantized weights cost a factor 0.64 (dequantisation);
 * workstation and datacenter parts (RTX 6000 Ada, A100, H100: 10 of the 27 rows) reach 78% of
 * their listed peak where GeForce parts reach all of theirs (device_pro_class: clocks held by
 * 250-350 W power limits, and no wgmma for Hopper). Without that share the held-out prefill
 * median was 19% (those parts 20-58% high); with it 11%.
 */
/* Partial offload, pageable weights: the driver stages mmap'd memory into a pinned buffer
 * before each copy, at this rate, fitted by speed_fit_staging() on the partial-offload rows of
 * tests/fixtures/partial_offload_prefill.csv (`make accuracy` prints them and refits it; CUDA,
 * the other GPU backends' host buffers work alike, so they take CUDA's figure, with no rows of
 * their own). The rows are llama.cpp PR #6083's Mixtral 8x7B on an RTX 3090 Ti under WSL:
 * a native driver may stage faster, and the same PR's mmap 0/1 pairs of an older build imply
 * 6.3 GB/s for Mixtral and 13 for Llama 2 7B. */
#define STAGING_GBS 6.1
#define STAGING_ROWS 8
/* Routing concentration of the host experts a micro-batch copies (speed_expert_share), fitted
 * by speed_fit_expert_skew() on the rows of tests/fixtures/partial_offload_prefill.csv that
 * keep experts on the host (gpt-oss-120b with --n-cpu-moe on an RTX 3090 at -ub 256 to 8192;
 * `make accuracy` prints them and refits it). A uniform router (0) would copy every expert
 * from 32 tokens on and leaves the rows' rise with n_ubatch unexplained: it predicts 1.8x the
 * measured prefill at -ub 256 and 0.9x at 4096. */
#define EXPERT_SKEW 1.55
#define SKEW_ROWS 5

const struct speed_params speed_fitted[SPEED_BACKEND_COUNT] = {
	[SPEED_BACKEND_CUDA] = {.mem_eff = 0.96,
				.mem_ceiling_gbs = 0,
				.mem_eff_hbm = 0.57,
				.layer_ms = 0.075,
				.tensor_eff = 1.00,
				.tensor_ceiling_tflops = 250,
				.tensor_quant_factor = 0.64,
				.tensor_eff_pro = 0.78,
				.vector_eff = 0.89,
				.vector_quant_factor = 0.88,
				.cpu_gflops_per_thread = 43.5,
				.host_staging_gbs = STAGING_GBS,
				.rows_staging = STAGING_ROWS,
				.expert_skew = EXPERT_SKEW,
				.rows_skew = SKEW_ROWS,
				.rows_decode = 29,
				.rows_tensor = 27,
				.rows_vector = 0,
				.rows_cpu_prefill = 0},
	[SPEED_BACKEND_ROCM] = {.mem_eff = 0.74,
				.mem_ceiling_gbs = 0,
				.layer_ms = 0.075,
				.tensor_eff = 1.00,
				.tensor_ceiling_tflops = 250,
				.tensor_quant_factor = 0.64,
				.tensor_eff_pro = 0.78,
				.vector_eff = 0.89,
				.vector_quant_factor = 0.88,
				.cpu_gflops_per_thread = 43.5,
				.host_staging_gbs = STAGING_GBS,
				.rows_staging = 0,
				.expert_skew = EXPERT_SKEW,
				.rows_decode = 2,
				.rows_tensor = 0,
				.rows_vector = 2,
				.rows_cpu_prefill = 0},
	[SPEED_BACKEND_METAL] = {.mem_eff = 0.92,
				 .mem_ceiling_gbs = 0,
				 .layer_ms = 0.185,
				 .tensor_eff = 1.00,
				 .tensor_ceiling_tflops = 250,
				 .tensor_quant_factor = 0.64,
				 .tensor_eff_pro = 0.78,
				 .vector_eff = 0.72,
				 .vector_quant_factor = 0.88,
				 .cpu_gflops_per_thread = 43.5,
				 .host_staging_gbs = STAGING_GBS,
				 .rows_staging = 0,
				 .expert_skew = EXPERT_SKEW,
				 .rows_decode = 29,
				 .rows_tensor = 0,
				 .rows_vector = 23,
				 .rows_cpu_prefill = 0},
	[SPEED_BACKEND_VULKAN] = {.mem_eff = 0.62,
				  .mem_ceiling_gbs = 0,
				  .layer_ms = 0.010,
				  .tensor_eff = 0.94,
				  .tensor_ceiling_tflops = 400,
				  .tensor_quant_factor = 0.64,
				  .tensor_eff_pro = 0,
				  .vector_eff = 0.41,
				  .vector_quant_factor = 0.88,
				  .cpu_gflops_per_thread = 43.5,
				  .host_staging_gbs = STAGING_GBS,
				  .rows_staging = 0,
				  .expert_skew = EXPERT_SKEW,
				  .rows_decode = 10,
				  .rows_tensor = 6,
				  .rows_vector = 6,
				  .rows_cpu_prefill = 0},
	[SPEED_BACKEND_CPU] = {.mem_eff = 0.67,
			       .mem_ceiling_gbs = 0,
			       .layer_ms = 0,
			       .tensor_eff = 1.00,
			       .tensor_ceiling_tflops = 250,
			       .tensor_quant_factor = 0.64,
			       .tensor_eff_pro = 0.78,
			       .vector_eff = 0.89,
			       .vector_quant_factor = 0.88,
			       .cpu_gflops_per_thread = 43.5,
			       .host_staging_gbs = STAGING_GBS,
			       .rows_staging = 0,
			       .expert_skew = EXPERT_SKEW,
			       .rows_decode = 2,
			       .rows_tensor = 0,
			       .rows_vector = 0,
			       .rows_cpu_prefill = 4},
};

static const char *const backend_names[SPEED_BACKEND_COUNT] = {"cuda", "rocm", "metal", "vulkan",
							       "cpu"};

const char *speed_backend_name(enum speed_backend b)
{
	return (b >= 0 && b < SPEED_BACKEND_COUNT) ? backend_names[b] : "unknown";
}

int speed_backend_parse(const char *name, enum speed_backend *out)
{
	if (!name || !out)
		return RF_E_INVALID_VALUE;
	for (int b = 0; b < SPEED_BACKEND_COUNT; b++) {
		if (strcmp(name, backend_names[b]) == 0) {
			*out = (enum speed_backend)b;
			return 0;
		}
	}
	if (strcmp(name, "hip") == 0) {
		*out = SPEED_BACKEND_ROCM;
		return 0;
	}
	return RF_E_INVALID_VALUE;
}

static bool in_range(double v, double lo, double hi)
{
	return isfinite(v) && v >= lo && v <= hi;
}

static int validate(const struct speed_input *in)
{
	if (!in || in->backend < 0 || in->backend >= SPEED_BACKEND_COUNT)
		return RF_E_INVALID_VALUE;
	if (!in_range(in->weight_bytes, 1, 1e15) || !in_range(in->kv_bytes_start, 0, 1e15) ||
	    !in_range(in->moe_batch_bytes, 0, 1e15) || !in_range(in->kv_bytes_full, 0, 1e15) ||
	    !in_range(in->host_copy_bytes, 0, 1e15) || !in_range(in->flops_per_token, 1, 1e17) ||
	    !in_range(in->host_expert_bytes, 0, 1e15) || in->n_experts < 0 ||
	    in->n_experts > 100000 || in->n_experts_used < 0 ||
	    in->n_experts_used > in->n_experts || in->n_layers > 100000 ||
	    !in_range(in->gpu_fraction, 0, 1) || in->n_devices < 0 ||
	    in->n_devices > SPEED_MAX_DEVICES)
		return RF_E_INVALID_VALUE;
	if (in->backend != SPEED_BACKEND_CPU && in->gpu_fraction > 0 && in->n_devices == 0)
		return RF_E_INVALID_VALUE;
	for (int i = 0; i < in->n_devices; i++) {
		const struct speed_device *d = &in->devices[i];
		if (!in_range(d->bandwidth_gbs, 1e-3, 1e7) || !isfinite(d->compute_tflops) ||
		    d->compute_tflops > 1e7 || !in_range(d->layer_share, -1, 1) ||
		    d->compute < SPEED_COMPUTE_UNKNOWN || d->compute > SPEED_COMPUTE_VECTOR)
			return RF_E_INVALID_VALUE;
	}
	if (!isfinite(in->host.bandwidth_gbs) || in->host.bandwidth_gbs > 1e7 ||
	    in->host.threads > 100000 || !isfinite(in->host.link_gbs) || in->host.link_gbs > 1e7 ||
	    in->host.cpu_isa < 0 || in->host.cpu_isa >= SPEED_CPU_ISA_N ||
	    !in_range(in->host.int8_gops_per_thread, -1, 1e6) ||
	    !in_range(in->host.f32_gflops_per_thread, -1, 1e6) ||
	    !in_range(in->repacked_share, 0, 1) || in->n_ubatch > (1 << 20) ||
	    !isfinite(in->prompt_tokens) || in->prompt_tokens > 1e9)
		return RF_E_INVALID_VALUE;
	return 0;
}

/* The share of the offloaded layers device i holds. */
static double share(const struct speed_input *in, int i)
{
	double sum = 0;

	for (int k = 0; k < in->n_devices; k++)
		if (in->devices[k].layer_share > 0)
			sum += in->devices[k].layer_share;
	if (sum <= 0)
		return 1.0 / in->n_devices;
	return in->devices[i].layer_share > 0 ? in->devices[i].layer_share / sum : 0;
}

static double gpu_frac(const struct speed_input *in)
{
	return in->backend == SPEED_BACKEND_CPU ? 0 : in->gpu_fraction;
}

static int layers(const struct speed_input *in)
{
	return in->n_layers > 0 ? in->n_layers : SPEED_DEFAULT_LAYERS;
}

/* Effective host bandwidth for weights and KV that live in host memory. */
static double host_rate_gbs(const struct speed_input *in, const struct speed_params *cpu)
{
	double bw = in->host.bandwidth_gbs > 0 ? in->host.bandwidth_gbs :
						 SPEED_ASSUMED_HOST_BANDWIDTH_GBS;
	bool known = in->host.bandwidth_gbs > 0;

	if (known && in->host.bandwidth_hostbench)
		return bw * SPEED_HOST_MEASURED_READ_SHARE;
	if (known && in->host.bandwidth_measured)
		return bw * cpu->mem_eff;
	/* A host nothing describes keeps its conservative default (it may be a laptop, or have
	 * one channel filled); a CPU the table names reaches the fitted share of its figure. */
	return bw * (known ? SPEED_CPU_THEORETICAL_READ_SHARE :
			     cpu->mem_eff * SPEED_MEASURED_OVER_THEORETICAL);
}

/* The host's share (1 - f) of a token's work, for the CPU kernels (core/fit/cpu/speed_cpu.h). */
static void host_work(const struct speed_input *in, double bytes, double f,
		      struct speed_cpu_host *h, struct speed_cpu_work *w)
{
	if (h) {
		h->isa = in->host.cpu_isa;
		h->int8_gops_per_thread = in->host.int8_gops_per_thread;
		h->f32_gflops_per_thread = in->host.f32_gflops_per_thread;
		memcpy(h->kernel, in->host.cpu_kernel, sizeof(h->kernel));
		h->threads = in->host.threads > 0 ? in->host.threads : SPEED_ASSUMED_HOST_THREADS;
	}
	w->weight_ftype = in->weight_ftype_known ? in->weight_ftype : -1;
	w->weight_bytes = bytes * (1 - f);
	w->elements = in->flops_per_token / 2 * (1 - f);
	w->repacked_share = in->repacked_share;
	w->mix = in->cpu_mix;
	w->layers = (double)layers(in) * (1 - f);
}

/* The share of device d's peak bandwidth decode reaches. */
static double mem_eff_of(const struct speed_params *p, const struct speed_device *d)
{
	return d->hbm && p->mem_eff_hbm > 0 ? p->mem_eff_hbm : p->mem_eff;
}

/* The host kernels' rates for in's weights where they do not follow the sizes, into *r: the
 * several decode times of one answer (at another KV size, another batch's weights) then share
 * them. NULL where each decode time computes its own (no host share, no mix, bad input). */
bool speed_host_rates(const struct speed_input *in, struct speed_cpu_rates *out)
{
	struct speed_cpu_host h;
	struct speed_cpu_work w;

	if (!in || !out || in->host.cpu_isa == SPEED_CPU_ISA_UNSET)
		return false;
	/* The rates do not follow the sizes: the whole weights, on the host alone. */
	host_work(in, in->weight_bytes, 0, &h, &w);
	return !speed_cpu_rates_sized(&w) && speed_cpu_rates(&h, &w, out) == 0;
}

/* The host kernels' rates for in's weights where they do not follow the sizes: the caller's
 * (host_rates_known), else worked out into *r; the several decode times of one answer (at
 * another KV size, another batch's weights) then share them. NULL where each decode time
 * computes its own (no host share, no mix, bad input). */
static const struct speed_cpu_rates *host_rates(const struct speed_input *in,
						struct speed_cpu_rates *r)
{
	if (!(gpu_frac(in) < 1) || in->host.cpu_isa == SPEED_CPU_ISA_UNSET)
		return NULL;
	if (in->host_rates_known)
		return &in->host_rates;
	return speed_host_rates(in, r) ? r : NULL;
}

/* Seconds per generated token with kv_bytes of KV cache read; rates: host_rates(in) or NULL. */
static double decode_time(const struct speed_input *in, const struct speed_params *params,
			  double kv_bytes, const struct speed_cpu_rates *rates)
{
	const struct speed_params *p = &params[in->backend];
	const struct speed_params *cpu = &params[SPEED_BACKEND_CPU];
	double bytes = in->weight_bytes + kv_bytes, f = gpu_frac(in), t = 0;

	for (int i = 0; f > 0 && i < in->n_devices; i++) {
		double rate = mem_eff_of(p, &in->devices[i]) * in->devices[i].bandwidth_gbs;
		if (p->mem_ceiling_gbs > 0 && rate > p->mem_ceiling_gbs)
			rate = p->mem_ceiling_gbs;
		t += bytes * f * share(in, i) / (rate * 1e9);
	}
	t += (double)layers(in) * f * p->layer_ms * 1e-3;
	if (f < 1 && in->host.cpu_isa != SPEED_CPU_ISA_UNSET) {
		/* Memory or the dot products, whichever holds the host longer. */
		struct speed_cpu_host h;
		struct speed_cpu_work w;
		host_work(in, bytes, f, rates ? NULL : &h, &w);
		t += rates ? speed_cpu_decode_s_rated(rates, &w, host_rate_gbs(in, cpu), NULL) :
			     speed_cpu_decode_s(&h, &w, host_rate_gbs(in, cpu), NULL);
	} else if (f < 1) {
		t += bytes * (1 - f) / (host_rate_gbs(in, cpu) * 1e9);
	}
	if (f < 1) {
		t += (double)layers(in) * (1 - f) * cpu->layer_ms * 1e-3;
	}
	return t;
}

static double compute_eff(const struct speed_params *p, const struct speed_device *d,
			  bool quantized)
{
	if (d->compute == SPEED_COMPUTE_TENSOR)
		return (d->pro && p->tensor_eff_pro > 0 ? p->tensor_eff_pro : p->tensor_eff) *
		       (quantized ? p->tensor_quant_factor : 1.0);
	return p->vector_eff * (quantized ? p->vector_quant_factor : 1.0);
}

/* The micro-batch llama.cpp splits a prompt into: n_ubatch, or the whole prompt if shorter. */
static double ubatch_of(const struct speed_input *in, double prompt)
{
	double ub = in->n_ubatch > 0 ? (double)in->n_ubatch : SPEED_PREFILL_UBATCH;
	return prompt < ub ? prompt : ub;
}

/* Micro-batches per prompt token: a prompt of P tokens runs ceil(P / n_ubatch) of them, each
 * copying the host layers' weights (and reading the routed experts) once. */
static double ubatches_per_token(const struct speed_input *in, double prompt)
{
	return ceil(prompt / ubatch_of(in, prompt)) / prompt;
}

/* Seconds per byte of host weights copied to the GPU: the link for pinned weights; for
 * mmap'd (pageable) ones the driver first stages them into a pinned buffer, one after the
 * other (CUDA's pageable cudaMemcpyAsync is synchronous with the host). */
static double host_copy_s_per_byte(const struct speed_input *in, const struct speed_params *p)
{
	double link = in->host.link_gbs > 0 ? in->host.link_gbs : SPEED_ASSUMED_HOST_LINK_GBS;
	double t = 1 / (link * 1e9);

	if (!in->host_pinned && in->host.no_page_lock && p->host_staging_gbs > 0)
		t += 1 / (p->host_staging_gbs * 1e9);
	return t;
}

double speed_expert_share(int n_experts, int n_used, double tokens, double skew)
{
	double h = 0, used = 0, draws;

	if (n_experts <= 0 || n_used <= 0 || !(tokens > 0))
		return 1;
	for (int i = 1; i <= n_experts; i++)
		h += pow(i, -skew);
	draws = tokens * n_used;
	for (int i = 1; i <= n_experts; i++)
		used += 1 - pow(1 - pow(i, -skew) / h, draws);
	return used / n_experts;
}

/* The host weights one micro-batch of a prompt copies to the GPU: the host layers, the output
 * layer when it stays there, and of the routed experts held there only those its tokens
 * route to. */
static double host_copied_bytes(const struct speed_input *in, const struct speed_params *p,
				double prompt)
{
	double bytes = in->host_copy_bytes > 0 ?
			       in->host_copy_bytes :
			       (in->weight_bytes + in->moe_batch_bytes) * (1 - gpu_frac(in));
	double experts = in->host_expert_bytes < bytes ? in->host_expert_bytes : bytes;

	return bytes - experts * (1 - speed_expert_share(in->n_experts, in->n_experts_used,
							 ubatch_of(in, prompt), p->expert_skew));
}

/* Returns the prefill time per token of a prompt of prompt tokens, or -1 when a device holding
 * layers has no rate. */
static double prefill_time_at(const struct speed_input *in, const struct speed_params *params,
			      double prompt)
{
	const struct speed_params *p = &params[in->backend];
	const struct speed_params *cpu = &params[SPEED_BACKEND_CPU];
	double fl = in->flops_per_token, f = gpu_frac(in), t = 0;
	double per_tok = ubatches_per_token(in, prompt);

	for (int i = 0; f > 0 && i < in->n_devices; i++) {
		const struct speed_device *d = &in->devices[i];
		double part = fl * f * share(in, i);
		if (part <= 0)
			continue;
		if (d->compute_tflops <= 0 || d->compute == SPEED_COMPUTE_UNKNOWN)
			return -1;
		t += part / (compute_eff(p, d, in->quantized) * d->compute_tflops * 1e12);
		if (d->compute == SPEED_COMPUTE_TENSOR && p->tensor_ceiling_tflops > 0)
			t += part / (p->tensor_ceiling_tflops * 1e12);
		/* A micro-batch of MoE tokens routes to nearly every expert: the experts beyond
		 * the active ones are read once per micro-batch (a dense model's single weight
		 * pass is in the fitted efficiency). */
		if (in->moe_batch_bytes > 0)
			t += in->moe_batch_bytes * f * share(in, i) /
			     (mem_eff_of(p, d) * d->bandwidth_gbs * 1e9) * per_tok;
	}
	if (f < 1 && in->n_devices > 0 && in->backend != SPEED_BACKEND_CPU &&
	    ubatch_of(in, prompt) >= SPEED_OFFLOAD_MIN_BATCH) {
		/* llama.cpp offloads batches of 32 tokens or more to the GPU (ggml_backend_sched's
		 * offload_op): the host layers' weights, every expert of them for MoE, cross the
		 * link once per micro-batch and their FLOPs run on the GPU like the rest. */
		const struct speed_device *d = &in->devices[0];
		if (d->compute_tflops <= 0 || d->compute == SPEED_COMPUTE_UNKNOWN)
			return -1;
		t += host_copied_bytes(in, p, prompt) * host_copy_s_per_byte(in, p) * per_tok;
		t += fl * (1 - f) / (compute_eff(p, d, in->quantized) * d->compute_tflops * 1e12);
		if (d->compute == SPEED_COMPUTE_TENSOR && p->tensor_ceiling_tflops > 0)
			t += fl * (1 - f) / (p->tensor_ceiling_tflops * 1e12);
	} else if (f < 1 && in->host.cpu_isa != SPEED_CPU_ISA_UNSET) {
		struct speed_cpu_host h;
		struct speed_cpu_work w;
		host_work(in, in->weight_bytes, f, in->host_rates_known ? NULL : &h, &w);
		t += in->host_rates_known ? speed_cpu_prefill_s_rated(&in->host_rates, &w) :
					    speed_cpu_prefill_s(&h, &w);
	} else if (f < 1) {
		int threads = in->host.threads > 0 ? in->host.threads : SPEED_ASSUMED_HOST_THREADS;
		t += fl * (1 - f) / ((double)threads * cpu->cpu_gflops_per_thread * 1e9);
	}
	return t;
}

static double prompt_of(const struct speed_input *in)
{
	return in->prompt_tokens > 0 ? in->prompt_tokens : SPEED_PREFILL_PROMPT;
}

/* The prefill time per token of the input's own prompt (pp512 unless it names one). */
static double prefill_time(const struct speed_input *in, const struct speed_params *params)
{
	return prefill_time_at(in, params, prompt_of(in));
}

double speed_predict(const struct speed_input *in,
		     const struct speed_params params[SPEED_BACKEND_COUNT], enum speed_test test)
{
	double t;

	if (!params || validate(in) < 0)
		return -1;
	t = test == SPEED_TEST_PREFILL ? prefill_time(in, params) :
					 decode_time(in, params, in->kv_bytes_start, NULL);
	return t > 0 ? 1.0 / t : -1;
}

void speed_predict_decode_span(const struct speed_input *in,
			       const struct speed_params params[SPEED_BACKEND_COUNT],
			       double *at_start, double *at_full)
{
	struct speed_cpu_rates r;
	const struct speed_cpu_rates *rates;
	double t;

	if (!params || validate(in) < 0) {
		/* Each on its own: one of the two may still be valid. */
		struct speed_input full = *in;
		full.kv_bytes_start = in->kv_bytes_full;
		*at_start = speed_predict(in, params, SPEED_TEST_DECODE);
		*at_full = speed_predict(&full, params, SPEED_TEST_DECODE);
		return;
	}
	/* validate checks both KV sizes alike: in with the full one at the start is valid too. */
	rates = host_rates(in, &r);
	t = decode_time(in, params, in->kv_bytes_start, rates);
	*at_start = t > 0 ? 1.0 / t : -1;
	t = decode_time(in, params, in->kv_bytes_full, rates);
	*at_full = t > 0 ? 1.0 / t : -1;
}

static void note(struct speed_output *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void note(struct speed_output *o, const char *fmt, ...)
{
	va_list ap;

	if (o->n_assumptions >= SPEED_MAX_ASSUMPTIONS)
		return;
	va_start(ap, fmt);
	rf_note_vformat(o->assumptions[o->n_assumptions], SPEED_ASSUMPTION_LEN, fmt, ap);
	va_end(ap);
	o->n_assumptions++;
}

/* How a partial offload's prefill copies the host layers' weights, for the assumptions; for
 * mapped weights, the prefill pinning them would give. */
static void explain_offload(const struct speed_input *in,
			    const struct speed_params params[SPEED_BACKEND_COUNT],
			    struct speed_output *o)
{
	const struct speed_params *p = &params[in->backend];
	double link = in->host.link_gbs > 0 ? in->host.link_gbs : SPEED_ASSUMED_HOST_LINK_GBS;
	double prompt = prompt_of(in), t_pinned;
	struct speed_input pinned = *in;

	double ub_tps[3];
	static const int ubs[3] = {256, 512, 2048};

	note(o,
	     "prefill runs the host layers on the GPU, copying their weights once per %.0f-token "
	     "micro-batch (n_ubatch %d, %.0f per %.0f-token prompt)",
	     ubatch_of(in, prompt), in->n_ubatch > 0 ? in->n_ubatch : SPEED_PREFILL_UBATCH,
	     ceil(prompt / ubatch_of(in, prompt)), prompt);
	/* How prefill follows n_ubatch, on a prompt long enough to show it. */
	for (int i = 0; i < 3; i++) {
		struct speed_input u = *in;
		double t;
		u.n_ubatch = ubs[i];
		t = prefill_time_at(&u, params, 4096);
		ub_tps[i] = t > 0 ? 1 / t : -1;
	}
	if (ub_tps[0] > 0 && ub_tps[1] > 0 && ub_tps[2] > 0)
		note(o,
		     "so prefill follows n_ubatch: a 4096-token prompt at %.0f tokens/s with "
		     "n_ubatch 256, %.0f with 512, %.0f with 2048 (its compute buffer grows with it)",
		     ub_tps[0], ub_tps[1], ub_tps[2]);
	if (in->host_expert_bytes > 0 && in->n_experts > 0 && in->n_experts_used > 0)
		note(o,
		     "of the routed experts on the host a micro-batch copies only those its tokens "
		     "use: %.0f%% at %.0f tokens (routing skew %.2f, fitted on %d rows)",
		     100 * speed_expert_share(in->n_experts, in->n_experts_used,
					      ubatch_of(in, prompt), p->expert_skew),
		     ubatch_of(in, prompt), p->expert_skew, p->rows_skew);
	pinned.host_pinned = true;
	t_pinned = prefill_time(&pinned, params);
	if (in->host_pinned || !(p->host_staging_gbs > 0) || t_pinned <= 0)
		note(o, "host weights %s: copied at %.0f GB/s%s",
		     in->host_pinned ? "pinned (use_mmap false)" :
				       "mmap'd, pageable (native driver)",
		     link, in->host.link_gbs > 0 ? "" : " (assumed: PCIe 4.0 x16 at 80%)");
	else if (!in->host.no_page_lock)
		note(o,
		     "host weights mmap'd (pageable): a native driver copies them at the link's "
		     "%.0f GB/s%s; under WSL they are staged at %.1f GB/s first",
		     link, in->host.link_gbs > 0 ? "" : " (assumed: PCIe 4.0 x16 at 80%)",
		     p->host_staging_gbs);
	else
		note(o,
		     "host weights mmap'd (pageable): staged at %.1f GB/s (fitted on %d rows), "
		     "then copied at %.0f GB/s%s; use_mmap false pins them: prefill %.0f tokens/s",
		     p->host_staging_gbs, p->rows_staging, link,
		     in->host.link_gbs > 0 ? "" : " (assumed: PCIe 4.0 x16 at 80%)", 1 / t_pinned);
}

/* Names the measured kernel each weight class of w is timed with on h, when the host was
 * measured per quant class (server/hostbench.h): "q4_legacy at the measured q4_0 block dot
 * (avx512_vnni, 1.40x AVX2)". */
static void host_kernel_note(const struct speed_cpu_host *h, const struct speed_cpu_work *w,
			     struct speed_output *o)
{
	char list[256] = "";
	size_t used = 0;
	double sum = 0;
	int only;

	for (int c = 0; c < SPEED_CPU_CLASS_N; c++)
		sum += w->mix.share[c] > 0 ? w->mix.share[c] : 0;
	/* Without a mix of types, the file type's class stands for all (speed_cpu.c). */
	only = sum > 0 ?
		       -1 :
		       speed_cpu_class_of(w->weight_ftype,
					  w->elements > 0 ? w->weight_bytes * 8 / w->elements : 0);
	for (int c = 0; c < SPEED_CPU_CLASS_N && used < sizeof(list); c++) {
		double scale;
		bool best;
		int k = speed_cpu_class_kernel(h, c, w->weight_ftype, &scale, &best), n;
		if (k < 0 || (only >= 0 ? c != only : !(w->mix.share[c] >= 0.005)))
			continue;
		n = rf_format(list + used, sizeof(list) - used,
			      "%s%s at the measured %s dot (%s, %.2fx AVX2)", used ? ", " : "",
			      speed_cpu_class_name(c), hw_kernel_name(k),
			      best ? speed_cpu_isa_name(h->kernel[k].isa) : "avx2", scale);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (list[0])
		note(o, "host kernels per quant class, as measured on this host: %s", list);
}

/* The CPU kernels' figures (core/fit/cpu/speed_cpu.h), for the assumptions. */
static void explain_cpu_kernels(const struct speed_input *in, double f, struct speed_output *o)
{
	struct speed_cpu_host h;
	struct speed_cpu_work w;
	struct speed_cpu_rates r;
	char mix[160] = "";
	size_t used = 0;

	host_work(in, in->weight_bytes, f, &h, &w);
	if (speed_cpu_rates(&h, &w, &r) < 0)
		return;
	/* The weight types' kernel classes, when the weights were counted per type. */
	for (int c = 0; c < SPEED_CPU_CLASS_N && used < sizeof(mix); c++) {
		int k;
		if (!(w.mix.share[c] >= 0.005))
			continue;
		k = rf_format(mix + used, sizeof(mix) - used, "%s%s %.0f%%%s", used ? ", " : "",
			      speed_cpu_class_name(c), 100 * w.mix.share[c],
			      w.mix.repacked[c] >= 0.5 ? " repacked" : "");
		if (k < 0)
			break;
		used += (size_t)k;
	}
	if (!mix[0])
		rf_format(mix, sizeof(mix), "%s", speed_cpu_class_name(r.cls));
	note(o,
	     "host kernels (%s; weights %s): %.0f int8 GOPS and %.0f f32 GFLOPS per thread %s x "
	     "%d threads%s",
	     speed_cpu_isa_name(h.isa), mix, r.int8_gops_per_thread, r.f32_gflops_per_thread,
	     r.measured ? "as measured" : "(the AVX2 figures of the table, not measured)",
	     r.threads, in->host.threads > 0 ? "" : " (assumed)");
	host_kernel_note(&h, &w, o);
	note(o,
	     "host decode: max(bytes / bandwidth, dot products at %.1f G elements/s per thread) + "
	     "sync per layer; prefill %.0f GFLOPS per thread (%s)",
	     r.decode_rate / 1e9, r.prefill_rate / 1e9,
	     r.rows_decode > 0 ? "fitted on llama.cpp runs" :
				 "nearest family's: no run of this one");
}

static void explain(const struct speed_input *in, const struct speed_params *params,
		    struct speed_output *o)
{
	const struct speed_params *p = &params[in->backend];
	const struct speed_params *cpu = &params[SPEED_BACKEND_CPU];
	const char *be = speed_backend_name(in->backend);
	double f = gpu_frac(in);

	if (in->n_layers <= 0)
		note(o, "layer count unknown: %d layers assumed", SPEED_DEFAULT_LAYERS);
	if (f > 0) {
		note(o,
		     "decode reads the weights and KV cache at %.0f%% of peak memory bandwidth "
		     "(%s, fitted on %d calibration rows)",
		     100 * p->mem_eff, be, p->rows_decode);
		note(o, "decode adds %.3f ms per layer per token for kernel launches and syncs",
		     p->layer_ms);
		for (int i = 0; i < in->n_devices; i++) {
			if (in->devices[i].hbm && p->mem_eff_hbm > 0) {
				note(o,
				     "HBM devices: decode at %.0f%% of their peak bandwidth (%s, "
				     "fitted on the datacenter rows; it follows the bandwidth, no "
				     "ceiling)",
				     100 * p->mem_eff_hbm, be);
				break;
			}
		}
		for (int i = 0; i < in->n_devices; i++) {
			if (p->mem_ceiling_gbs > 0 &&
			    mem_eff_of(p, &in->devices[i]) * in->devices[i].bandwidth_gbs >
				    p->mem_ceiling_gbs) {
				note(o,
				     "decode held to %.0f GB/s, the most %s kernels were seen to draw "
				     "(fitted)",
				     p->mem_ceiling_gbs, be);
				break;
			}
		}
		if (in->n_devices > 1)
			note(o,
			     "layers split over %d devices run one after the other: bandwidths are "
			     "not summed",
			     in->n_devices);
		for (int i = 0; i < in->n_devices; i++) {
			const struct speed_device *d = &in->devices[i];
			bool tensor = d->compute == SPEED_COMPUTE_TENSOR;
			int rows = tensor ? p->rows_tensor : p->rows_vector;
			if (i > 0 && d->compute == in->devices[0].compute)
				continue;
			note(o, "prefill at %.0f%% of the %s peak%s (%s, %s)",
			     100 * compute_eff(p, d, in->quantized),
			     tensor ? "tensor FP16" : "vector",
			     in->quantized ? " for quantized weights" : "", be,
			     rows ? "fitted" : "not fitted: no calibration rows, inherited");
			if (tensor && p->tensor_ceiling_tflops > 0)
				note(o, "prefill kernels limited to %.0f TFLOPS on %s (fitted)",
				     p->tensor_ceiling_tflops, be);
			if (d->tensor_units_unrated)
				note(o,
				     "device %d has tensor units but only its vector rate is known: "
				     "prefill is likely underestimated",
				     i);
			if (d->compute_tflops <= 0 || d->compute == SPEED_COMPUTE_UNKNOWN)
				note(o, "device %d has no known compute rate: prefill unknown", i);
		}
	}
	if (f < 1) {
		bool known = in->host.bandwidth_gbs > 0;
		note(o, "%.0f%% of the layers run on the host at %.1f GB/s %s x %.2f efficiency",
		     100 * (1 - f),
		     known ? in->host.bandwidth_gbs : SPEED_ASSUMED_HOST_BANDWIDTH_GBS,
		     !known                       ? "(assumed: dual-channel DDR4-3200, as no "
						    "measurement or CPU table entry gives it)" :
		     in->host.bandwidth_hostbench ? "(measured here with vector reads)" :
		     in->host.bandwidth_measured  ? "(measured)" :
						    "(theoretical)",
		     host_rate_gbs(in, cpu) /
			     (known ? in->host.bandwidth_gbs : SPEED_ASSUMED_HOST_BANDWIDTH_GBS));
		if (in->n_devices > 0 && in->backend != SPEED_BACKEND_CPU &&
		    ubatch_of(in, prompt_of(in)) >= SPEED_OFFLOAD_MIN_BATCH)
			explain_offload(in, params, o);
		else if (in->host.cpu_isa != SPEED_CPU_ISA_UNSET)
			explain_cpu_kernels(in, f, o);
		else
			note(o,
			     "host prefill at %.0f GFLOPS per thread x %d threads%s (fitted on %d "
			     "rows)",
			     cpu->cpu_gflops_per_thread,
			     in->host.threads > 0 ? in->host.threads : SPEED_ASSUMED_HOST_THREADS,
			     in->host.threads > 0 ? "" : " (assumed)", cpu->rows_cpu_prefill);
	}
}

int speed_estimate_with(const struct speed_input *in,
			const struct speed_params params[SPEED_BACKEND_COUNT],
			struct speed_output *out)
{
	struct speed_output o;
	const struct speed_params *p;
	struct speed_cpu_rates rates_of_in;
	const struct speed_cpu_rates *rates;
	double t;
	int rc = validate(in);

	if (rc < 0 || !params || !out)
		return RF_E_INVALID_VALUE;
	p = &params[in->backend];
	memset(&o, 0, sizeof(o));
	o.basis = "roofline";
	rates = host_rates(in, &rates_of_in);
	o.decode_tokens_per_s = 1.0 / decode_time(in, params, in->kv_bytes_start, rates);
	o.decode_tokens_per_s_at_full_ctx = 1.0 / decode_time(in, params, in->kv_bytes_full, rates);
	t = prefill_time(in, params);
	o.prefill_tokens_per_s = t > 0 ? 1.0 / t : -1;
	if (gpu_frac(in) > 0) {
		enum speed_compute k = in->devices[0].compute;
		o.mem_efficiency = p->mem_eff;
		o.layer_overhead_ms = p->layer_ms;
		o.compute_efficiency = compute_eff(p, &in->devices[0], in->quantized);
		o.compute_ceiling_tflops = k == SPEED_COMPUTE_TENSOR ? p->tensor_ceiling_tflops : 0;
	} else {
		o.mem_efficiency = params[SPEED_BACKEND_CPU].mem_eff;
		o.layer_overhead_ms = params[SPEED_BACKEND_CPU].layer_ms;
		o.compute_efficiency = -1;
		o.compute_ceiling_tflops = 0;
	}
	explain(in, params, &o);
	*out = o;
	return 0;
}

int speed_estimate(const struct speed_input *in, struct speed_output *out)
{
	return speed_estimate_with(in, speed_fitted, out);
}

/* ---- batched decode ---------------------------------------------------------------------- */

int speed_batched(const struct speed_input *in, const struct speed_batch *b,
		  struct speed_batch_output *out)
{
	return speed_batched_with(in, speed_fitted, b, out);
}

int speed_batched_with(const struct speed_input *in,
		       const struct speed_params params[SPEED_BACKEND_COUNT],
		       const struct speed_batch *b, struct speed_batch_output *out)
{
	struct speed_input step_in;
	struct speed_batch_output o;
	struct speed_cpu_rates rates_of_in;
	const struct speed_cpu_rates *rates;
	double n, dense, share = 1, t_mem, t_mem1, t_pp, t_c, prompt;

	if (validate(in) < 0 || !params || !b || !out || b->n_streams < 1 || b->n_streams > 65536 ||
	    !in_range(b->kv_bytes_per_stream, 0, 1e15) || !in_range(b->expert_bytes, 0, 1e15) ||
	    b->n_experts < 0 || b->n_experts_used < 0 || b->n_experts_used > b->n_experts ||
	    !isfinite(b->prompt_tokens) || b->prompt_tokens > 1e9)
		return RF_E_INVALID_VALUE;
	/* The experts a batch reads are counted below, by the batch's own routing. */
	step_in = *in;
	step_in.moe_batch_bytes = 0;
	t_pp = prefill_time_at(&step_in, params, SPEED_PREFILL_PROMPT);
	if (t_pp <= 0)
		return RF_E_INVALID_VALUE;
	memset(&o, 0, sizeof(o));
	n = (double)b->n_streams;
	/* The experts a step reads: each is skipped by all n tokens with (1 - k/E)^n. */
	if (b->n_experts > 0 && b->expert_bytes > 0) {
		double k_share = (double)b->n_experts_used / (double)b->n_experts;
		dense = in->weight_bytes - b->expert_bytes * k_share;
		if (dense < 0)
			dense = 0;
		share = 1 - pow(1 - k_share, n);
		step_in.weight_bytes = dense + b->expert_bytes * share;
		if (step_in.weight_bytes < 1)
			step_in.weight_bytes = 1;
	}
	/* step_in differs from in in its weights' bytes only: the same host rates. */
	rates = host_rates(in, &rates_of_in);
	t_mem = decode_time(&step_in, params, n * b->kv_bytes_per_stream, rates);
	t_mem1 = decode_time(in, params, b->kv_bytes_per_stream, rates);
	/* A 512-token prefill reads the weights once: what is left of its time per token is
	 * the compute a token adds to a step. */
	t_c = t_pp - decode_time(in, params, 0, rates) / 512.0;
	if (t_c < 0)
		t_c = 0;
	prompt = b->prompt_tokens > 0 ? b->prompt_tokens : 512;
	o.memory_ms = t_mem * 1e3;
	o.compute_ms = n * t_c * 1e3;
	o.step_ms = o.memory_ms + o.compute_ms;
	o.aggregate_tokens_per_s = n / (t_mem + n * t_c);
	o.per_stream_tokens_per_s = 1 / (t_mem + n * t_c);
	/* The prompt's prefill reads whatever experts its micro-batches route to. */
	o.time_to_first_token_s = prompt * prefill_time_at(in, params, prompt) + t_mem1 + t_c;
	o.experts_read_share = share;
	*out = o;
	return 0;
}

/* ---- fitting --------------------------------------------------------------------------- */

enum group {
	G_DECODE,
	G_TENSOR,
	G_VECTOR,
	G_CPU_PREFILL
};

/* The group an observation belongs to, or -1 when it fits none. */
static int obs_group(const struct speed_obs *o)
{
	if (o->test == SPEED_TEST_DECODE)
		return G_DECODE;
	if (o->in.backend == SPEED_BACKEND_CPU || gpu_frac(&o->in) <= 0)
		return G_CPU_PREFILL;
	if (o->in.devices[0].compute == SPEED_COMPUTE_TENSOR)
		return G_TENSOR;
	if (o->in.devices[0].compute == SPEED_COMPUTE_VECTOR)
		return G_VECTOR;
	return -1;
}

struct fit_ctx {
	const struct speed_obs *obs;
	size_t n;
	int backend;
	int group;
	struct speed_params *params; /* the table being fitted */
};

static bool in_group(const struct fit_ctx *c, const struct speed_obs *o)
{
	return (int)o->in.backend == c->backend && obs_group(o) == c->group;
}

/* Sum of absolute log errors of the group under the current table; HUGE_VAL when a prediction
 * fails. */
static double loss(const struct fit_ctx *c)
{
	double s = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct speed_obs *o = &c->obs[i];
		double pred, e;
		if (!in_group(c, o))
			continue;
		pred = speed_predict(&o->in, c->params, o->test);
		if (pred <= 0)
			return HUGE_VAL;
		e = log(pred / o->measured_tps);
		s += fabs(e);
	}
	return s;
}

struct grid {
	double lo, hi, step;
	bool fit; /* false: keep the current value */
};

/* Exhaustive search over up to three parameters on the grid g, restricted to [lo, hi] per
 * parameter; writes the best point into *x. Returns the best loss. */
static double scan(struct fit_ctx *c, double *x[3], const struct grid g[3], const double lo[3],
		   const double hi[3], double step_mult)
{
	double best = HUGE_VAL, bx[3] = {0, 0, 0};
	int steps[3];
	double start[3], step[3];

	for (int k = 0; k < 3; k++) {
		bool on = x[k] && g[k].fit;
		step[k] = g[k].step * step_mult;
		start[k] = on ? lo[k] : (x[k] ? *x[k] : 0);
		steps[k] = on ? (int)floor((hi[k] - lo[k]) / step[k] + 1e-9) : 0;
		bx[k] = x[k] ? *x[k] : 0;
	}
	for (int a = 0; a <= steps[0]; a++) {
		if (steps[0])
			*x[0] = start[0] + a * step[0];
		for (int b = 0; b <= steps[1]; b++) {
			if (steps[1])
				*x[1] = start[1] + b * step[1];
			for (int d = 0; d <= steps[2]; d++) {
				double s;
				if (steps[2])
					*x[2] = start[2] + d * step[2];
				s = loss(c);
				if (s < best - 1e-12) {
					best = s;
					for (int k = 0; k < 3; k++)
						bx[k] = x[k] ? *x[k] : 0;
				}
			}
		}
	}
	for (int k = 0; k < 3; k++)
		if (x[k])
			*x[k] = bx[k];
	return best;
}

/* A coarse pass (four grid steps apart) over the whole range, then a fine pass around its best
 * point: the same optimum as the full grid for the smooth losses here, at a fraction of the
 * cost. Parameters whose g[k].fit is false keep their value. */
static void search(struct fit_ctx *c, double *x[3], const struct grid g[3])
{
	double lo[3], hi[3];

	for (int k = 0; k < 3; k++) {
		lo[k] = g[k].lo;
		hi[k] = g[k].hi;
	}
	scan(c, x, g, lo, hi, 4);
	for (int k = 0; k < 3; k++) {
		if (!x[k] || !g[k].fit)
			continue;
		lo[k] = fmax(g[k].lo, *x[k] - 4 * g[k].step);
		hi[k] = fmin(g[k].hi, *x[k] + 4 * g[k].step);
	}
	scan(c, x, g, lo, hi, 1);
}

/* What the rows of a group can tell apart. */
struct group_stats {
	int rows;
	bool has_quant, has_f16;
	int distinct_peaks; /* compute peaks for prefill groups, bandwidths for decode */
	int hbm_rows;       /* rows on HBM-class devices */
	int pro_rows;       /* rows on workstation and datacenter parts */
};

static struct group_stats stats(const struct fit_ctx *c)
{
	struct group_stats s = {0, false, false, 0, 0, 0};
	double peaks[64];
	int np = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct speed_obs *o = &c->obs[i];
		bool seen = false;
		double pk;
		if (!in_group(c, o))
			continue;
		s.rows++;
		if (o->in.n_devices > 0 && o->in.devices[0].hbm)
			s.hbm_rows++;
		if (o->in.n_devices > 0 && o->in.devices[0].pro)
			s.pro_rows++;
		if (o->in.quantized)
			s.has_quant = true;
		else
			s.has_f16 = true;
		pk = o->in.n_devices == 0 ? 0 :
		     c->group == G_DECODE ? o->in.devices[0].bandwidth_gbs :
					    o->in.devices[0].compute_tflops;
		for (int k = 0; k < np; k++)
			if (fabs(peaks[k] - pk) < 1e-9)
				seen = true;
		if (!seen && np < 64)
			peaks[np++] = pk;
	}
	s.distinct_peaks = np;
	return s;
}

/* Values for the parameters a group's rows cannot tell apart, taken from the backends that
 * can (fitted before the others): the per-layer cost from CUDA (the CPU has no kernel
 * launches: 0), the quantization factors from CUDA (tensor) and Metal (vector); a ceiling
 * nothing supports is none. */
static void fill_unidentified(struct fit_ctx *c, const struct group_stats *s)
{
	struct speed_params *p = &c->params[c->backend];
	const struct speed_params *cuda = &c->params[SPEED_BACKEND_CUDA];
	const struct speed_params *metal = &c->params[SPEED_BACKEND_METAL];
	bool mix = s->has_quant && s->has_f16;

	switch (c->group) {
	case G_DECODE:
		if (s->rows < 3)
			p->layer_ms = c->backend == SPEED_BACKEND_CPU ? 0 :
				      cuda->rows_decode >= 3          ? cuda->layer_ms :
									p->layer_ms;
		/* No ceiling: HBM parts have their own share of the peak instead, fitted where
		 * three rows show it, else none (mem_eff applies). */
		p->mem_ceiling_gbs = 0;
		if (s->hbm_rows < 3)
			p->mem_eff_hbm = 0;
		break;
	case G_TENSOR:
		if (s->distinct_peaks < 3)
			p->tensor_ceiling_tflops = 0;
		if (!mix && c->backend != SPEED_BACKEND_CUDA && cuda->rows_tensor > 0)
			p->tensor_quant_factor = cuda->tensor_quant_factor;
		break;
	case G_VECTOR:
		if (!mix && c->backend != SPEED_BACKEND_METAL && metal->rows_vector > 0)
			p->vector_quant_factor = metal->vector_quant_factor;
		break;
	default:
		break;
	}
}

static void fit_group(struct fit_ctx *c)
{
	struct speed_params *p = &c->params[c->backend];
	struct group_stats s = stats(c);
	bool mix = s.has_quant && s.has_f16;

	if (s.rows > 0)
		fill_unidentified(c, &s);
	switch (c->group) {
	case G_DECODE: {
		double *x[3] = {&p->mem_eff, &p->layer_ms, &p->mem_eff_hbm};
		struct grid g[3] = {{0.30, 0.96, 0.01, true},
				    {0, 0.40, 0.005, s.rows >= 3},
				    {0.20, 0.96, 0.01, s.hbm_rows >= 3}};
		p->rows_decode = s.rows;
		if (s.rows == 0)
			return;
		if (c->backend == SPEED_BACKEND_CPU)
			g[0] = (struct grid){0.04, 1.00, 0.01, true};
		search(c, x, g);
		return;
	}
	case G_TENSOR: {
		double *x[3] = {&p->tensor_eff, &p->tensor_ceiling_tflops, &p->tensor_quant_factor};
		double *y[3] = {&p->tensor_eff_pro, NULL, NULL};
		struct grid g[3] = {{0.10, 1.00, 0.02, true},
				    {0, 1000, 25, s.distinct_peaks >= 3},
				    {0.40, 1.20, 0.04, mix}};
		struct grid gy[3] = {
			{0.10, 1.00, 0.02, s.pro_rows >= 3}, {0, 0, 1, false}, {0, 0, 1, false}};
		p->rows_tensor = s.rows;
		if (s.rows == 0)
			return;
		/* Every row on one share first, then the workstation and datacenter parts' own
		 * share and the rest again, twice: the same start whatever the base table. */
		p->tensor_eff_pro = 0;
		for (int pass = 0; pass < 2; pass++) {
			search(c, x, g);
			if (s.pro_rows >= 3)
				search(c, y, gy);
		}
		return;
	}
	case G_VECTOR: {
		double *x[3] = {&p->vector_eff, &p->vector_quant_factor, NULL};
		struct grid g[3] = {
			{0.05, 1.00, 0.01, true}, {0.40, 1.20, 0.04, mix}, {0, 0, 1, false}};
		p->rows_vector = s.rows;
		if (s.rows == 0)
			return;
		search(c, x, g);
		return;
	}
	case G_CPU_PREFILL: {
		double *x[3] = {&p->cpu_gflops_per_thread, NULL, NULL};
		struct grid g[3] = {{1, 300, 0.5, true}, {0, 0, 1, false}, {0, 0, 1, false}};
		p->rows_cpu_prefill = s.rows;
		if (s.rows == 0)
			return;
		search(c, x, g);
		return;
	}
	}
}

static void inherit_tensor(struct speed_params *dst, const struct speed_params *src)
{
	dst->tensor_eff = src->tensor_eff;
	dst->tensor_ceiling_tflops = src->tensor_ceiling_tflops;
	dst->tensor_quant_factor = src->tensor_quant_factor;
	dst->tensor_eff_pro = src->tensor_eff_pro;
}

static void inherit_vector(struct speed_params *dst, const struct speed_params *src)
{
	dst->vector_eff = src->vector_eff;
	dst->vector_quant_factor = src->vector_quant_factor;
}

int speed_fit(const struct speed_obs *obs, size_t n,
	      const struct speed_params base[SPEED_BACKEND_COUNT],
	      struct speed_params out[SPEED_BACKEND_COUNT])
{
	static const int vector_order[] = {SPEED_BACKEND_ROCM, SPEED_BACKEND_METAL,
					   SPEED_BACKEND_VULKAN};
	static const int fit_order[] = {SPEED_BACKEND_CPU, SPEED_BACKEND_CUDA, SPEED_BACKEND_METAL,
					SPEED_BACKEND_ROCM, SPEED_BACKEND_VULKAN};
	struct speed_params t[SPEED_BACKEND_COUNT];
	struct fit_ctx c;

	if (!base || !out || (n > 0 && !obs))
		return RF_E_INVALID_VALUE;
	for (size_t i = 0; i < n; i++)
		if (validate(&obs[i].in) < 0 || !in_range(obs[i].measured_tps, 1e-9, 1e9))
			return RF_E_INVALID_VALUE;
	memcpy(t, base, sizeof(t));
	c.obs = obs;
	c.n = n;
	c.params = t;
	/* The host first: GPU rows with a partial offload use its constants; then CUDA and Metal,
	 * whose rows pin the parameters that the smaller groups borrow. */
	for (size_t k = 0; k < sizeof(fit_order) / sizeof(fit_order[0]); k++) {
		bool host = fit_order[k] == SPEED_BACKEND_CPU;
		c.backend = fit_order[k];
		c.group = G_DECODE;
		fit_group(&c);
		c.group = host ? G_CPU_PREFILL : G_TENSOR;
		fit_group(&c);
		if (!host) {
			c.group = G_VECTOR;
			fit_group(&c);
		}
	}
	for (int b = 0; b < SPEED_BACKEND_COUNT; b++) {
		if (t[b].rows_tensor == 0 && b != SPEED_BACKEND_CUDA &&
		    t[SPEED_BACKEND_CUDA].rows_tensor > 0)
			inherit_tensor(&t[b], &t[SPEED_BACKEND_CUDA]);
		if (t[b].rows_vector == 0) {
			for (size_t k = 0; k < sizeof(vector_order) / sizeof(vector_order[0]);
			     k++) {
				if (t[vector_order[k]].rows_vector > 0) {
					inherit_vector(&t[b], &t[vector_order[k]]);
					break;
				}
			}
		}
		t[b].cpu_gflops_per_thread = t[SPEED_BACKEND_CPU].cpu_gflops_per_thread;
	}
	memcpy(out, t, sizeof(t));
	return 0;
}

/* A partial-offload prefill observation with pageable (mmap'd) host weights: some layers on
 * the host, staged, then copied to a GPU. */
static bool offload_prefill(const struct speed_obs *o)
{
	return o->test == SPEED_TEST_PREFILL && o->in.backend != SPEED_BACKEND_CPU &&
	       o->in.n_devices > 0 && o->in.gpu_fraction < 1 && !o->in.host_pinned &&
	       o->in.host.no_page_lock;
}

/* A prefill observation whose micro-batches copy routed experts from the host. */
static bool expert_copy_prefill(const struct speed_obs *o)
{
	return o->test == SPEED_TEST_PREFILL && o->in.backend != SPEED_BACKEND_CPU &&
	       o->in.n_devices > 0 && o->in.host_expert_bytes > 0 && o->in.n_experts > 0 &&
	       o->in.n_experts_used > 0;
}

/* Fits the one constant at offset field of every backend's speed_params to the observations
 * pick selects: a grid of steps + 1 values from lo by step, minimising the sum of absolute log
 * errors, every other constant taken from base. Returns 0 and *out, or RF_E_INVALID_VALUE when
 * an observation is invalid or pick selects none. */
static int fit_one(const struct speed_obs *obs, size_t n,
		   const struct speed_params base[SPEED_BACKEND_COUNT],
		   bool (*pick)(const struct speed_obs *), size_t field, double lo, double step,
		   int steps, double *out)
{
	struct speed_params t[SPEED_BACKEND_COUNT];
	double best = -1, best_loss = 0;
	size_t used = 0;

	if (!obs || !base || !out)
		return RF_E_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		if (validate(&obs[i].in) < 0 || !in_range(obs[i].measured_tps, 1e-9, 1e9))
			return RF_E_INVALID_VALUE;
		used += pick(&obs[i]);
	}
	if (used == 0)
		return RF_E_INVALID_VALUE;
	memcpy(t, base, sizeof(t));
	for (int k = 0; k <= steps; k++) {
		double v = lo + k * step, l = 0;
		for (int b = 0; b < SPEED_BACKEND_COUNT; b++)
			memcpy((char *)&t[b] + field, &v, sizeof(v));
		for (size_t i = 0; i < n; i++) {
			double est;
			if (!pick(&obs[i]))
				continue;
			est = speed_predict(&obs[i].in, t, SPEED_TEST_PREFILL);
			l += est > 0 ? fabs(log(est / obs[i].measured_tps)) : 1e9;
		}
		if (best < 0 || l < best_loss - 1e-12) {
			best = v;
			best_loss = l;
		}
	}
	*out = best;
	return 0;
}

int speed_fit_staging(const struct speed_obs *obs, size_t n,
		      const struct speed_params base[SPEED_BACKEND_COUNT], double *gbs)
{
	/* 0.5 to 64 GB/s in steps of 0.1, rounded as speed_fitted holds it. */
	return fit_one(obs, n, base, offload_prefill,
		       offsetof(struct speed_params, host_staging_gbs), 0.5, 0.1, 635, gbs);
}

int speed_fit_expert_skew(const struct speed_obs *obs, size_t n,
			  const struct speed_params base[SPEED_BACKEND_COUNT], double *skew)
{
	/* 0 (uniform) to 4 in steps of 0.05. */
	return fit_one(obs, n, base, expert_copy_prefill,
		       offsetof(struct speed_params, expert_skew), 0, 0.05, 80, skew);
}
