/*
 * The host measurement (see hostbench.h). Bandwidth: every thread sums its own slice of one
 * buffer (faulted in before the clock starts, four times the largest cache: a 2-vCPU share of
 * a server with a 480 MiB L3 read 34-43 GB/s over the 128 MiB it once took, 17.5 over 512 MiB
 * and more) pass after pass
 * until the deadline; the figure is the sum of the threads' median pass rates (a pass slowed by
 * another tenant does not set it). Kernels: one thread runs, in rounds whose fastest stands,
 * an int8 and an f32 dot product over L1-resident rows, with AVX2 (and FMA) when the CPU has
 * them, so that the figure is what the CPU's SIMD does, not its memory; then each quant class's
 * block dot as ggml-cpu's vec_dot runs it (Q4_0 and Q8_0 blocks against Q8 activations, f16,
 * bf16), with the widest instructions ggml uses for it on this CPU and with AVX2's.
 * Not measured: AMX tiles (prefill on AMX hosts keeps the table's figure) and Arm's dotprod and
 * i8mm (there every class takes a plain C loop and the estimate the table).
 */
#include "server/hostbench.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HB_X86 1
#elif defined(__aarch64__)
#include <arm_neon.h>
#define HB_NEON 1
#endif

#include "core/err.h"
#include "server/detect/probes.h"

/* The bandwidth's buffer (rf_hostbench_buffer_bytes): four times the largest cache, at least
 * 512 MiB and at most 4 GiB, at most a quarter of the memory the process may still take, never
 * below 16 MiB a thread. */
#define HB_CACHE_TIMES 4
#define HB_BUFFER_MIN (INT64_C(512) << 20)
#define HB_BUFFER_MAX (INT64_C(4) << 30)
#define HB_ROOM_SHARE 4
#define HB_SLICE_MIN (16u << 20)
#define HB_PASSES_MAX 1024
#define HB_ROUNDS 8       /* kernel rounds: the fastest stands (interference only slows) */
#define HB_PAIR_ROUNDS 32 /* short rounds for the classes: more chances of a quiet moment */
#define HB_ROW 4096       /* elements of the kernels' rows: 4-16 KiB, in L1 */

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ---- bandwidth ------------------------------------------------------------------------------ */

struct hb_reader {
	pthread_t tid;
	const uint64_t *p;
	size_t n; /* uint64_t words */
	const int *go;
	const double *deadline_ms;
	uint64_t bytes;
	double elapsed_ms;
	double pass_ms[HB_PASSES_MAX]; /* each full pass, while the others read too */
	int n_pass;
	uint64_t sink;
	uint64_t (*pass)(const uint64_t *p, size_t n);
};

/* One pass over n words (n a multiple of 16); returns a value that depends on every word. */
static uint64_t hb_pass_scalar(const uint64_t *p, size_t n)
{
	uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;

	for (size_t i = 0; i < n; i += 4) {
		s0 += p[i];
		s1 += p[i + 1];
		s2 += p[i + 2];
		s3 += p[i + 3];
	}
	return s0 ^ s1 ^ s2 ^ s3;
}

#ifdef HB_X86
__attribute__((target("avx2"))) static uint64_t hb_pass_avx2(const uint64_t *p, size_t n)
{
	__m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;

	for (size_t i = 0; i < n; i += 16) {
		s0 = _mm256_xor_si256(s0, _mm256_load_si256((const __m256i *)(p + i)));
		s1 = _mm256_xor_si256(s1, _mm256_load_si256((const __m256i *)(p + i + 4)));
		s2 = _mm256_xor_si256(s2, _mm256_load_si256((const __m256i *)(p + i + 8)));
		s3 = _mm256_xor_si256(s3, _mm256_load_si256((const __m256i *)(p + i + 12)));
	}
	s0 = _mm256_xor_si256(_mm256_xor_si256(s0, s1), _mm256_xor_si256(s2, s3));
	return (uint64_t)_mm256_extract_epi64(s0, 0) ^ (uint64_t)_mm256_extract_epi64(s0, 3);
}
#endif

#ifdef HB_NEON
static uint64_t hb_pass_neon(const uint64_t *p, size_t n)
{
	uint64x2_t s0 = vdupq_n_u64(0), s1 = s0, s2 = s0, s3 = s0;

	for (size_t i = 0; i < n; i += 8) {
		s0 = veorq_u64(s0, vld1q_u64(p + i));
		s1 = veorq_u64(s1, vld1q_u64(p + i + 2));
		s2 = veorq_u64(s2, vld1q_u64(p + i + 4));
		s3 = veorq_u64(s3, vld1q_u64(p + i + 6));
	}
	s0 = veorq_u64(veorq_u64(s0, s1), veorq_u64(s2, s3));
	return vgetq_lane_u64(s0, 0) ^ vgetq_lane_u64(s0, 1);
}
#endif

static void *hb_read(void *arg)
{
	struct hb_reader *r = arg;
	uint64_t s = 0;
	double t0;

	/* Start together: wait for the go, then read until the common deadline. */
	while (!__atomic_load_n(r->go, __ATOMIC_ACQUIRE))
		sched_yield();
	t0 = now_ms();
	while (now_ms() < *r->deadline_ms) {
		double p0 = now_ms();
		s ^= r->pass(r->p, r->n);
		r->bytes += r->n * sizeof(uint64_t);
		if (r->n_pass < HB_PASSES_MAX)
			r->pass_ms[r->n_pass++] = now_ms() - p0;
	}
	r->elapsed_ms = now_ms() - t0;
	r->sink = s;
	return NULL;
}

/* The widest read this CPU has. */
static uint64_t (*hb_pass_for_cpu(void))(const uint64_t *, size_t)
{
#ifdef HB_X86
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2"))
		return hb_pass_avx2;
#elif defined(HB_NEON)
	return hb_pass_neon;
#endif
	return hb_pass_scalar;
}

static int hb_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* A thread's typical pass: the median, so that a pass slowed by another tenant, or the last
 * one run alone after the others stopped, does not set the figure. */
static double hb_median_pass_ms(struct hb_reader *r)
{
	if (r->n_pass < 3)
		return 0;
	qsort(r->pass_ms, (size_t)r->n_pass, sizeof(r->pass_ms[0]), hb_cmp_double);
	return r->pass_ms[r->n_pass / 2];
}

int64_t rf_hostbench_buffer_bytes(int64_t cache_bytes, int64_t room_bytes, int threads)
{
	int64_t want = HB_BUFFER_MIN, floor;

	if (threads < 1)
		threads = 1;
	floor = (int64_t)HB_SLICE_MIN * threads;
	if (cache_bytes > 0 && cache_bytes <= HB_BUFFER_MAX && cache_bytes * HB_CACHE_TIMES > want)
		want = cache_bytes * HB_CACHE_TIMES;
	if (want > HB_BUFFER_MAX)
		want = HB_BUFFER_MAX;
	if (room_bytes > 0 && want > room_bytes / HB_ROOM_SHARE)
		want = room_bytes / HB_ROOM_SHARE;
	return want > floor ? want : floor;
}

static int hb_bandwidth(int threads, double ms, double *gbs, int64_t *buffer_bytes)
{
	const struct rf_detect_opts here = {.root = "/"};
	size_t slice = (size_t)(rf_hostbench_buffer_bytes(rf_probe_largest_cache(&here),
							  rf_probe_memory_room(&here), threads) /
				threads);
	struct hb_reader *r = calloc((size_t)threads, sizeof(*r));
	uint64_t *buf = NULL, bytes = 0, sink = 0;
	double slowest = 0, deadline = 0, per_pass = 0;
	int started = 0, go = 0, typical = 0;
	uint64_t (*pass)(const uint64_t *, size_t) = hb_pass_for_cpu();

	slice &= ~(size_t)4095; /* every slice page-aligned for the vector loads */
	*buffer_bytes = (int64_t)(slice * (size_t)threads);
	if (r)
		buf = aligned_alloc(4096, slice * (size_t)threads);
	if (!r || !buf) {
		free(r);
		free(buf);
		return RF_E_NOMEM;
	}
	memset(buf, 1, slice * (size_t)threads); /* fault every page in before the clock */
	for (; started < threads; started++) {
		struct hb_reader *x = &r[started];
		x->p = buf + (size_t)started * (slice / sizeof(uint64_t));
		x->n = slice / sizeof(uint64_t);
		x->pass = pass;
		x->go = &go;
		x->deadline_ms = &deadline;
		if (pthread_create(&x->tid, NULL, hb_read, x) != 0)
			break;
	}
	/* A thread that could not start: the others go with a deadline already past. */
	deadline = started < threads ? 0 : now_ms() + ms;
	__atomic_store_n(&go, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < started; i++) {
		pthread_join(r[i].tid, NULL);
		bytes += r[i].bytes;
		sink ^= r[i].sink;
		if (r[i].elapsed_ms > slowest)
			slowest = r[i].elapsed_ms;
		double med = hb_median_pass_ms(&r[i]);
		if (med > 0) {
			per_pass += (double)(r[i].n * sizeof(uint64_t)) / (med * 1e6);
			typical++;
		}
	}
	free(buf);
	free(r);
	if (started < threads)
		return RF_E_INTERNAL;
	/* All threads' typical passes together; too few passes: the bytes over the slowest. */
	if (typical == started)
		*gbs = per_pass + (double)(sink & 0);
	else
		*gbs = slowest > 0 ? (double)bytes / (slowest * 1e6) + (double)(sink & 0) : 0;
	return 0;
}

/* ---- kernels -------------------------------------------------------------------------------- */

static uint8_t hb_a[HB_ROW] __attribute__((aligned(64)));
static int8_t hb_b[HB_ROW] __attribute__((aligned(64)));
static float hb_x[HB_ROW] __attribute__((aligned(64)));
static float hb_y[HB_ROW] __attribute__((aligned(64)));

static int32_t dot_i8_c(void)
{
	int32_t s = 0;
	for (int i = 0; i < HB_ROW; i++)
		s += (int32_t)hb_a[i] * (int32_t)hb_b[i];
	return s;
}

static float dot_f32_c(void)
{
	float s[8] = {0};
	for (int i = 0; i < HB_ROW; i += 8)
		for (int k = 0; k < 8; k++)
			s[k] += hb_x[i + k] * hb_y[i + k];
	return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7];
}

#ifdef HB_X86
__attribute__((target("avx2"))) static int32_t dot_i8_avx2(void)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
	int32_t out[8];

	for (int i = 0; i < HB_ROW; i += 64) {
		__m256i a0 = _mm256_load_si256((const __m256i *)(hb_a + i));
		__m256i b0 = _mm256_load_si256((const __m256i *)(hb_b + i));
		__m256i a1 = _mm256_load_si256((const __m256i *)(hb_a + i + 32));
		__m256i b1 = _mm256_load_si256((const __m256i *)(hb_b + i + 32));
		acc0 = _mm256_add_epi32(acc0,
					_mm256_madd_epi16(_mm256_maddubs_epi16(a0, b0), ones));
		acc1 = _mm256_add_epi32(acc1,
					_mm256_madd_epi16(_mm256_maddubs_epi16(a1, b1), ones));
	}
	_mm256_storeu_si256((__m256i *)out, _mm256_add_epi32(acc0, acc1));
	return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

__attribute__((target("avx2,fma"))) static float dot_f32_avx2(void)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	__m256 a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
	float out[8];

	for (int i = 0; i < HB_ROW; i += 32) {
		a0 = _mm256_fmadd_ps(_mm256_load_ps(hb_x + i), _mm256_load_ps(hb_y + i), a0);
		a1 = _mm256_fmadd_ps(_mm256_load_ps(hb_x + i + 8), _mm256_load_ps(hb_y + i + 8),
				     a1);
		a2 = _mm256_fmadd_ps(_mm256_load_ps(hb_x + i + 16), _mm256_load_ps(hb_y + i + 16),
				     a2);
		a3 = _mm256_fmadd_ps(_mm256_load_ps(hb_x + i + 24), _mm256_load_ps(hb_y + i + 24),
				     a3);
	}
	_mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
	return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}
#endif

/* ---- quant classes ----------------------------------------------------------------------- */

/* One row of each class's weights against Q8 activations, as ggml lays them out: 32-element
 * blocks with a scale each (Q4_0: 16 bytes of nibbles; Q8_0: 32 bytes), f16 and bf16 rows. */
#define HB_BLOCKS (HB_ROW / 32)
static uint8_t hb_q4[HB_ROW / 2] __attribute__((aligned(64)));
static int8_t hb_q8w[HB_ROW] __attribute__((aligned(64)));
static int8_t hb_q8a[HB_ROW] __attribute__((aligned(64)));
static float hb_dw[HB_BLOCKS], hb_da[HB_BLOCKS];
static uint16_t hb_h[HB_ROW] __attribute__((aligned(64)));  /* f16 or bf16 weights */
static uint16_t hb_h2[HB_ROW] __attribute__((aligned(64))); /* f16 or bf16 activations */

static float dot_q4_0_c(void)
{
	float s = 0;
	for (int b = 0; b < HB_BLOCKS; b++) {
		int32_t d = 0;
		for (int j = 0; j < 16; j++) {
			uint8_t q = hb_q4[b * 16 + j];
			d += ((q & 15) - 8) * hb_q8a[b * 32 + j] +
			     ((q >> 4) - 8) * hb_q8a[b * 32 + j + 16];
		}
		s += hb_dw[b] * hb_da[b] * (float)d;
	}
	return s;
}

static float dot_q8_0_c(void)
{
	float s = 0;
	for (int b = 0; b < HB_BLOCKS; b++) {
		int32_t d = 0;
		for (int j = 0; j < 32; j++)
			d += hb_q8w[b * 32 + j] * hb_q8a[b * 32 + j];
		s += hb_dw[b] * hb_da[b] * (float)d;
	}
	return s;
}

#ifdef HB_X86
/* ggml-cpu's x86 block dot (mul_sum_i8_pairs_float): the signs of x moved onto y so that the
 * unsigned-by-signed multiply-add takes them, then maddubs + madd (AVX2) or one vpdpbusd
 * (AVX-512 VNNI with VL, at 256 bits as ggml runs it), a float per block scaled and added. */
#define HB_BLOCK_DOT(type, suffix, target_isa)                                                     \
	__attribute__((target(target_isa))) static float dot_##type##_##suffix(void)               \
	{                                                                                          \
		__m256 acc = _mm256_setzero_ps();                                                  \
		float out[8];                                                                      \
		for (int b = 0; b < HB_BLOCKS; b++) {                                              \
			__m256i y = _mm256_load_si256((const __m256i *)(hb_q8a + b * 32));         \
			acc = _mm256_fmadd_ps(_mm256_set1_ps(hb_dw[b] * hb_da[b]),                 \
					      hb_sum_##suffix(hb_load_##type##_##suffix(b), y),    \
					      acc);                                                \
		}                                                                                  \
		_mm256_storeu_ps(out, acc);                                                        \
		return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];      \
	}
#define HB_BLOCK_DOTS(suffix, target_isa, SUMS)                                                    \
	__attribute__((target(target_isa))) static inline __m256 hb_sum_##suffix(__m256i x,        \
										 __m256i y)        \
	{                                                                                          \
		const __m256i ax = _mm256_sign_epi8(x, x), sy = _mm256_sign_epi8(y, x);            \
		return _mm256_cvtepi32_ps(SUMS);                                                   \
	}                                                                                          \
	/* Q4_0: 32 nibbles of a block widened to signed bytes (ggml's bytes_from_nibbles_32). */  \
	__attribute__((target(target_isa))) static inline __m256i hb_load_q4_0_##suffix(int b)     \
	{                                                                                          \
		__m128i q = _mm_loadu_si128((const __m128i *)(hb_q4 + b * 16));                    \
		__m256i x = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);                             \
		return _mm256_sub_epi8(_mm256_and_si256(x, _mm256_set1_epi8(15)),                  \
				       _mm256_set1_epi8(8));                                       \
	}                                                                                          \
	__attribute__((target(target_isa))) static inline __m256i hb_load_q8_0_##suffix(int b)     \
	{                                                                                          \
		return _mm256_load_si256((const __m256i *)(hb_q8w + b * 32));                      \
	}                                                                                          \
	HB_BLOCK_DOT(q4_0, suffix, target_isa)                                                     \
	HB_BLOCK_DOT(q8_0, suffix, target_isa)

HB_BLOCK_DOTS(avx2, "avx2,fma",
	      _mm256_madd_epi16(_mm256_maddubs_epi16(ax, sy), _mm256_set1_epi16(1)))
HB_BLOCK_DOTS(vnni, "avx2,fma,avx512vnni,avx512vl",
	      _mm256_dpbusd_epi32(_mm256_setzero_si256(), ax, sy))

/* f16 (ggml_vec_dot_f16): F16C conversion and FMA, 8 lanes (AVX2) or 16 (AVX-512). */
__attribute__((target("avx2,fma,f16c"))) static float dot_f16_avx2(void)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	float out[8];

	for (int i = 0; i < HB_ROW; i += 16) {
		a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_load_si128((const __m128i *)(hb_h + i))),
				     _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(hb_h2 + i))),
				     a0);
		a1 = _mm256_fmadd_ps(
			_mm256_cvtph_ps(_mm_load_si128((const __m128i *)(hb_h + i + 8))),
			_mm256_cvtph_ps(_mm_load_si128((const __m128i *)(hb_h2 + i + 8))), a1);
	}
	_mm256_storeu_ps(out, _mm256_add_ps(a0, a1));
	return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

__attribute__((target("avx512f"))) static float dot_f16_avx512(void)
{
	__m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();

	for (int i = 0; i < HB_ROW; i += 32) {
		a0 = _mm512_fmadd_ps(
			_mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(hb_h + i))),
			_mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(hb_h2 + i))), a0);
		a1 = _mm512_fmadd_ps(
			_mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(hb_h + i + 16))),
			_mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(hb_h2 + i + 16))), a1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

/* bf16 (ggml_vec_dot_bf16): widened by a 16-bit shift and FMA, or AVX512_BF16's vdpbf16ps,
 * which multiplies and adds pairs in one instruction. */
/* bf16 widened to f32: its 16 bits moved to the top of a 32-bit lane. */
#define HB_BF16_256(p)                                                                             \
	_mm256_castsi256_ps(_mm256_slli_epi32(                                                     \
		_mm256_cvtepu16_epi32(_mm_load_si128((const __m128i *)(p))), 16))
#define HB_BF16_512(p)                                                                             \
	_mm512_castsi512_ps(_mm512_slli_epi32(                                                     \
		_mm512_cvtepu16_epi32(_mm256_load_si256((const __m256i *)(p))), 16))

__attribute__((target("avx2,fma"))) static float dot_bf16_avx2(void)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
	float out[8];

	for (int i = 0; i < HB_ROW; i += 16) {
		a0 = _mm256_fmadd_ps(HB_BF16_256(hb_h + i), HB_BF16_256(hb_h2 + i), a0);
		a1 = _mm256_fmadd_ps(HB_BF16_256(hb_h + i + 8), HB_BF16_256(hb_h2 + i + 8), a1);
	}
	_mm256_storeu_ps(out, _mm256_add_ps(a0, a1));
	return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

__attribute__((target("avx512f"))) static float dot_bf16_avx512(void)
{
	__m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();

	for (int i = 0; i < HB_ROW; i += 32) {
		a0 = _mm512_fmadd_ps(HB_BF16_512(hb_h + i), HB_BF16_512(hb_h2 + i), a0);
		a1 = _mm512_fmadd_ps(HB_BF16_512(hb_h + i + 16), HB_BF16_512(hb_h2 + i + 16), a1);
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}

__attribute__((target("avx512f,avx512bf16"))) static float dot_bf16_avx512bf16(void)
{
	__m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();

	for (int i = 0; i < HB_ROW; i += 64) {
		a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_load_si512(hb_h + i),
				      (__m512bh)_mm512_load_si512(hb_h2 + i));
		a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_load_si512(hb_h + i + 32),
				      (__m512bh)_mm512_load_si512(hb_h2 + i + 32));
	}
	return _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
}
#endif

static float dot_h_c(void)
{
	float s = 0;
	for (int i = 0; i < HB_ROW; i++)
		s += (float)(hb_h[i] >> 8) * (float)(hb_h2[i] >> 8);
	return s;
}

/* Each class's kernel with the instructions llama.cpp's CPU backend for this CPU runs it with
 * (best) and with AVX2's (the anchor of the fitted efficiencies). */
struct hb_kernel_pick {
	float (*best)(void), (*avx2)(void);
	const char *isa;
};

static void hb_kernel_picks(struct hb_kernel_pick k[HW_KERNEL_N])
{
	k[HW_KERNEL_Q4_0] = (struct hb_kernel_pick){dot_q4_0_c, NULL, "scalar"};
	k[HW_KERNEL_Q8_0] = (struct hb_kernel_pick){dot_q8_0_c, NULL, "scalar"};
	k[HW_KERNEL_F16] = (struct hb_kernel_pick){dot_h_c, NULL, "scalar"};
	k[HW_KERNEL_BF16] = (struct hb_kernel_pick){dot_h_c, NULL, "scalar"};
#ifdef HB_X86
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
	    !__builtin_cpu_supports("f16c"))
		return;
	k[HW_KERNEL_Q4_0] = (struct hb_kernel_pick){dot_q4_0_avx2, dot_q4_0_avx2, "avx2"};
	k[HW_KERNEL_Q8_0] = (struct hb_kernel_pick){dot_q8_0_avx2, dot_q8_0_avx2, "avx2"};
	k[HW_KERNEL_F16] = (struct hb_kernel_pick){dot_f16_avx2, dot_f16_avx2, "avx2"};
	k[HW_KERNEL_BF16] = (struct hb_kernel_pick){dot_bf16_avx2, dot_bf16_avx2, "avx2"};
	if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl")) {
		k[HW_KERNEL_Q4_0] =
			(struct hb_kernel_pick){dot_q4_0_vnni, dot_q4_0_avx2, "avx512_vnni"};
		k[HW_KERNEL_Q8_0] =
			(struct hb_kernel_pick){dot_q8_0_vnni, dot_q8_0_avx2, "avx512_vnni"};
	}
	if (__builtin_cpu_supports("avx512f")) {
		k[HW_KERNEL_F16] = (struct hb_kernel_pick){dot_f16_avx512, dot_f16_avx2, "avx512"};
		k[HW_KERNEL_BF16] =
			(struct hb_kernel_pick){dot_bf16_avx512, dot_bf16_avx2, "avx512"};
	}
	if (__builtin_cpu_supports("avx512bf16"))
		k[HW_KERNEL_BF16] =
			(struct hb_kernel_pick){dot_bf16_avx512bf16, dot_bf16_avx2, "avx512_bf16"};
#endif
}

static void hb_fill_classes(void)
{
	for (int i = 0; i < HB_ROW; i++) {
		hb_q8w[i] = (int8_t)(i * 11 % 200 - 100);
		hb_q8a[i] = (int8_t)(i * 17 % 250 - 125);
		hb_h[i] = (uint16_t)(0x3c00 + i % 511);
		hb_h2[i] = (uint16_t)(0x3800 + i % 257);
	}
	for (int i = 0; i < HB_ROW / 2; i++)
		hb_q4[i] = (uint8_t)(i * 29);
	for (int b = 0; b < HB_BLOCKS; b++) {
		hb_dw[b] = 0.01f + 0.001f * (float)(b % 7);
		hb_da[b] = 0.02f + 0.001f * (float)(b % 5);
	}
}

/* Runs one kernel (fi or ff) for about ms; returns operations per second (2 per element). */
static double hb_rate_once(int32_t (*fi)(void), float (*ff)(void), double ms)
{
	volatile uint32_t si = 0;
	volatile float sf = 0;
	double t0 = now_ms(), t;
	uint64_t n = 0;

	do {
		for (int k = 0; k < 64; k++) {
			if (fi)
				si = si + (uint32_t)fi();
			else
				sf = sf + ff();
		}
		n += 64;
		t = now_ms() - t0;
	} while (t < ms);
	(void)si;
	(void)sf;
	return (double)n * HB_ROW * 2 / (t * 1e-3);
}

/* The fastest of HB_ROUNDS rounds within ms: what the core does when nothing else runs on it
 * (another tenant or a clock still ramping up only slows a round). */
static double hb_rate(int32_t (*fi)(void), float (*ff)(void), double ms)
{
	double best = 0;

	for (int i = 0; i < HB_ROUNDS; i++) {
		double r = hb_rate_once(fi, ff, ms / HB_ROUNDS);
		if (r > best)
			best = r;
	}
	return best;
}

/* A class's kernel with its best instructions and with AVX2's, in alternating rounds within
 * ms, the fastest of each standing (GOPS): both see the same moments of a shared host, so
 * that their ratio, which the estimate takes, is not one measured busy and one quiet. */
static void hb_rate_pair(const struct hb_kernel_pick *k, double ms, double *best, double *avx2)
{
	bool two = k->avx2 && k->avx2 != k->best;
	double round = ms / HB_PAIR_ROUNDS / (two ? 2 : 1);

	*best = *avx2 = 0;
	for (int i = 0; i < HB_PAIR_ROUNDS; i++) {
		*best = fmax(*best, hb_rate_once(NULL, k->best, round) / 1e9);
		if (two)
			*avx2 = fmax(*avx2, hb_rate_once(NULL, k->avx2, round) / 1e9);
	}
	if (k->avx2 && !two)
		*avx2 = *best;
}

void rf_hostbench_to_hw(const struct rf_hostbench *h, int64_t now_ms, struct hw_host_bench *b)
{
	memset(b, 0, sizeof(*b));
	b->measured = true;
	b->threads = h->threads;
	b->memory_bandwidth_gbs = h->memory_bandwidth_gbs;
	b->int8_gops_per_thread = h->int8_gops_per_thread;
	b->f32_gflops_per_thread = h->f32_gflops_per_thread;
	snprintf(b->kernel_isa, sizeof(b->kernel_isa), "%s", h->kernel_isa ? h->kernel_isa : "");
	b->duration_ms = h->duration_ms;
	b->measured_at_ms = now_ms;
	b->method = RF_HOSTBENCH_METHOD;
	for (int k = 0; k < HW_KERNEL_N; k++) {
		b->kernel[k].gops_per_thread = h->kernel[k].gops_per_thread;
		b->kernel[k].avx2_gops_per_thread = h->kernel[k].avx2_gops_per_thread;
		snprintf(b->kernel[k].isa, sizeof(b->kernel[k].isa), "%s",
			 h->kernel[k].isa ? h->kernel[k].isa : "");
	}
}

int rf_hostbench_run(int threads, int budget_ms, struct rf_hostbench *out)
{
	struct rf_hostbench h;
	double t0 = now_ms(), gbs = 0;
	int32_t (*i8)(void) = dot_i8_c;
	float (*f32)(void) = dot_f32_c;
	struct hb_kernel_pick picks[HW_KERNEL_N];
	int rc;

	memset(&h, 0, sizeof(h));
	if (threads < 1)
		threads = 1;
	if (threads > 1024)
		threads = 1024;
	if (budget_ms < 300)
		budget_ms = 300;
	if (budget_ms > 2500)
		budget_ms = 2500;
	for (int i = 0; i < HB_ROW; i++) {
		hb_a[i] = (uint8_t)(i * 7 % 64);
		hb_b[i] = (int8_t)(i * 13 % 64 - 32);
		hb_x[i] = (float)(i % 17) * 0.01f;
		hb_y[i] = (float)(i % 13) * 0.02f;
	}
	h.kernel_isa = "scalar";
#ifdef HB_X86
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2")) {
		i8 = dot_i8_avx2;
		h.kernel_isa = "avx2";
		if (__builtin_cpu_supports("fma"))
			f32 = dot_f32_avx2;
	}
#elif defined(__aarch64__)
	h.kernel_isa = "neon";
#endif
	/* Half of the budget for the bandwidth (memory is what decode waits on), a tenth for
	 * each of the int8 and f32 anchors and the rest for the quant classes, each with its
	 * best instructions and with AVX2's; faulting the buffer in comes on top. */
	rc = hb_bandwidth(threads, budget_ms * 0.5, &gbs, &h.bandwidth_bytes);
	if (rc < 0)
		return rc;
	h.threads = threads;
	h.memory_bandwidth_gbs = gbs;
	h.int8_gops_per_thread = hb_rate(i8, NULL, budget_ms * 0.1) / 1e9;
	h.f32_gflops_per_thread = hb_rate(NULL, f32, budget_ms * 0.1) / 1e9;
	hb_fill_classes();
	hb_kernel_picks(picks);
	for (int k = 0; k < HW_KERNEL_N; k++)
		hb_rate_pair(&picks[k], budget_ms * 0.3 / HW_KERNEL_N, &h.kernel[k].gops_per_thread,
			     &h.kernel[k].avx2_gops_per_thread);
	for (int k = 0; k < HW_KERNEL_N; k++)
		h.kernel[k].isa = picks[k].isa;
	h.duration_ms = now_ms() - t0;
	*out = h;
	return 0;
}
