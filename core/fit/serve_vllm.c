/*
 * vLLM's KV-cache capacity (see serve_vllm.h for the mechanism). The constants below are the
 * reserves vLLM's profiling measures, fitted to start-up logs of vLLM 0.19.0 on H100 80GB
 * (llm-d-incubation/llm-d-planner, accuracy/results/v0.19.0/logs: 58 runs over 35 models,
 * "Memory profiling takes ... torch peak memory increase ...; non-torch forward increase
 * memory ...") and checked against the rows of tests/fixtures/vllm_kv_capacity.csv.
 */
#include "core/fit/serve_vllm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/quant.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The dummy sampler run holds, per logit of max_num_seqs x vocab, the logits in the model's
 * dtype plus fp32 copies and the sampler's temporaries (softmax, sort for top-p/top-k): 13.5
 * bytes beside the model dtype's 2 is the median over the v0.19 logs of seven architectures
 * whose torch peak is the sampler's (Llama 3.1 1.89 GiB, Qwen2.5/Qwen3 2.21, Gemma 2 3.62-3.66,
 * Gemma 3 3.89-3.99, Phi-4 1.52 at 1024 sequences; vocabularies 100k-262k). */
#define VLLM_SAMPLER_EXTRA_BYTES 13.5
/* Memory allocated outside torch during profiling: 0.24-0.27 GiB on one GPU; with tensor
 * parallelism NCCL and the custom all-reduce buffers bring it to 2.06-2.21 GiB per GPU (the
 * same logs, TP 2 and 4). */
#define VLLM_NON_TORCH_SINGLE_BYTES ((int64_t)(0.25 * GIB))
#define VLLM_NON_TORCH_TP_BYTES ((int64_t)(2.1 * GIB))
/* CUDA graph pools captured after the KV cache: 0.51-1.85 GiB, mean 1.04 GiB over the same
 * 58 runs (logged "CUDA graph pool memory"). A stated mean, not a model. */
#define VLLM_CUDA_GRAPH_BYTES ((int64_t)(1.0 * GIB))
/* vLLM's larger batch defaults apply from 70 GiB of device memory (engine/arg_utils.py). */
#define VLLM_LARGE_GPU_BYTES ((int64_t)(70 * GIB))
/* Vocabulary rows of the embedding and head are padded to a multiple of this. */
#define VLLM_VOCAB_PAD 64
/* MXFP4 expert matrices are padded to multiples of this in both dimensions. */
#define VLLM_MXFP4_PAD 256

static const char *const precision_names[VLLM_PRECISION_COUNT] = {
	"bf16", "fp16", "fp32", "fp8", "int8", "awq", "gptq", "bitsandbytes", "mxfp4"};

static const struct {
	const char *alias;
	int p;
} precision_aliases[] = {
	{"bfloat16", VLLM_BF16},    {"float16", VLLM_FP16},    {"half", VLLM_FP16},
	{"float32", VLLM_FP32},     {"w8a8", VLLM_INT8},       {"w4a16", VLLM_GPTQ},
	{"gptq_marlin", VLLM_GPTQ}, {"awq_marlin", VLLM_AWQ},  {"bnb", VLLM_BNB4},
	{"nf4", VLLM_BNB4},         {"fp8_dynamic", VLLM_FP8},
};

int vllm_precision_parse(const char *name)
{
	if (!name)
		return -1;
	for (int p = 0; p < VLLM_PRECISION_COUNT; p++)
		if (strcmp(name, precision_names[p]) == 0)
			return p;
	for (size_t i = 0; i < sizeof(precision_aliases) / sizeof(precision_aliases[0]); i++)
		if (strcmp(name, precision_aliases[i].alias) == 0)
			return precision_aliases[i].p;
	return -1;
}

const char *vllm_precision_name(int p)
{
	return p >= 0 && p < VLLM_PRECISION_COUNT ? precision_names[p] : "unknown";
}

void vllm_setup_default(struct vllm_setup *s)
{
	memset(s, 0, sizeof(*s));
	s->precision = VLLM_BF16;
	s->kv_dtype = VLLM_KV_AUTO;
	s->tensor_parallel = 1;
	s->pipeline_parallel = 1;
	s->gpu_memory_utilization = VLLM_DEFAULT_UTILIZATION;
}

static void note(struct vllm_capacity *c, const char *s)
{
	for (int i = 0; i < c->n_notes; i++)
		if (c->notes[i] == s)
			return;
	if (c->n_notes < VLLM_MAX_NOTES)
		c->notes[c->n_notes++] = s;
}

/* Bytes of an activation element: the model's dtype (4-bit and 8-bit formats compute in 16
 * bits). */
static int act_bytes(int precision)
{
	return precision == VLLM_FP32 ? 4 : 2;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A weight matrix the quantization method replaces (the linear layers and experts); norms,
 * routers, biases, embeddings and the head stay in the model's dtype. */
static bool quantized_linear(const struct rf_tensor *t)
{
	if (t->cat == RF_TC_TOKEN_EMBD || t->cat == RF_TC_OUTPUT || t->cat == RF_TC_OTHER)
		return false;
	if (ends_with(t->name, ".bias") || strstr(t->name, "ffn_gate_inp"))
		return false;
	return rf_tensor_quantizable(t);
}

/* Bytes per element of a linear weight in precision p, scales and zero points included:
 * 4-bit group-128 formats carry an fp16 scale and a 4-bit zero per group; NF4 an fp32 absmax
 * per 64; MXFP4 an 8-bit exponent per 32; FP8 and INT8 one fp32 scale per output row (counted
 * per tensor by the caller). */
double vllm_weight_bytes_per_param(int p, bool expert)
{
	switch (p) {
	case VLLM_FP32:
		return 4;
	case VLLM_FP8:
	case VLLM_INT8:
		return 1;
	case VLLM_AWQ:
	case VLLM_GPTQ:
		return 0.5 + 2.5 / 128.0;
	case VLLM_BNB4:
		return 0.5 + 4.0 / 64.0;
	case VLLM_MXFP4:
		return expert ? 0.5 + 1.0 / 32.0 : 2;
	default:
		return 2;
	}
}

static int64_t pad_to(int64_t v, int64_t to)
{
	return (v + to - 1) / to * to;
}

/* Layers of pipeline stage `stage`, as vLLM's get_pp_indices splits them: equal shares, the
 * remainder to the stages before the last, from the second-to-last backwards. */
static void stage_layers(int64_t n_layer, int pp, int stage, int64_t *first, int64_t *count)
{
	int64_t part[VLLM_MAX_GPUS];
	int64_t rem = n_layer % pp, start = 0;

	for (int i = 0; i < pp; i++)
		part[i] = n_layer / pp;
	for (int64_t i = 2; i < rem + 2 && i <= pp; i++)
		part[pp - i]++;
	for (int i = 0; i < stage; i++)
		start += part[i];
	*first = start;
	*count = part[stage];
}

struct stage_need {
	int64_t weights, activation, layers;
};

/* *out = *a + k x *b, field by field. */
static void sums_add(struct vllm_sums *out, const struct vllm_sums *a, const struct vllm_sums *b,
		     double k)
{
	out->plain = a->plain + k * b->plain;
	out->linear = a->linear + k * b->linear;
	out->linear_rows = a->linear_rows + k * b->linear_rows;
	out->kv = a->kv + k * b->kv;
	out->kv_rows = a->kv_rows + k * b->kv_rows;
	out->stacked1 = a->stacked1 + k * b->stacked1;
	out->stacked1_rows = a->stacked1_rows + k * b->stacked1_rows;
	out->stacked = a->stacked + k * b->stacked;
	out->stacked_rows = a->stacked_rows + k * b->stacked_rows;
}

int vllm_facts_build(const struct model_arch *a, const struct rf_tensor_list *l,
		     struct vllm_facts *out)
{
	const int64_t n_layer = model_n_layer(a);
	struct vllm_facts f = {0};

	f.n_layer = n_layer;
	f.layer = calloc((size_t)n_layer + 2, sizeof(*f.layer));
	f.prefix = calloc((size_t)n_layer + 1, sizeof(*f.prefix));
	if (!f.layer || !f.prefix) {
		free(f.layer);
		free(f.prefix);
		return RF_E_NOMEM;
	}
	for (size_t i = 0; i < l->n; i++) {
		const struct rf_tensor *t = &l->t[i];
		const double n = (double)rf_tensor_nelements(t);
		const double rows = (double)t->ne[1] * (t->expert ? (double)t->ne[2] : 1.0);
		struct vllm_layer_facts *L;

		if (t->layer >= n_layer)
			goto invalid;
		L = &f.layer[t->layer >= 0              ? t->layer :
			     t->layer == RF_LAYER_INPUT ? n_layer :
							  n_layer + 1];
		if (t->cat == RF_TC_OUTPUT)
			f.has_head = true;
		if (t->cat == RF_TC_TOKEN_EMBD || t->cat == RF_TC_OUTPUT) {
			if (f.n_embd == VLLM_MAX_EMBD)
				goto invalid;
			f.embd[f.n_embd].ne0 = t->ne[0];
			f.embd[f.n_embd].ne1 = t->ne[1];
			f.embd[f.n_embd++].layer = t->layer;
		} else if (!quantized_linear(t)) {
			L->sum.plain += n;
		} else if (t->expert && t->ne[2] > 1) {
			if (L->n_stacked == VLLM_MAX_STACKED)
				goto invalid;
			L->st[L->n_stacked++] = (struct vllm_stacked){t->ne[0], t->ne[1], t->ne[2],
								      t->cat == RF_TC_FFN_DOWN};
			L->sum.stacked += n;
			L->sum.stacked_rows += rows;
		} else if (t->expert) {
			L->sum.stacked1 += n;
			L->sum.stacked1_rows += rows;
		} else if (t->cat == RF_TC_ATTN_K || t->cat == RF_TC_ATTN_V) {
			L->sum.kv += n;
			L->sum.kv_rows += rows;
		} else {
			L->sum.linear += n;
			L->sum.linear_rows += rows;
		}
	}
	for (int64_t il = 0; il < n_layer; il++)
		sums_add(&f.prefix[il + 1], &f.prefix[il], &f.layer[il].sum, 1.0);
	*out = f;
	return 0;
invalid:
	free(f.layer);
	free(f.prefix);
	return RF_E_INVALID_VALUE;
}

void vllm_facts_free(struct vllm_facts *f)
{
	if (!f)
		return;
	free(f->layer);
	free(f->prefix);
	f->layer = NULL;
	f->prefix = NULL;
}

/* Elements of one rank's shard of a stacked MXFP4 expert tensor: vLLM's MXFP4 MoE kernels
 * take the expert matrices padded to multiples of 256 in both dimensions, the intermediate
 * one after the tensor-parallel split (gpt-oss-20b at TP 2: 2880 -> 3072 and 1440 -> 1536,
 * 7.01 GiB per GPU logged, 6.4 without the padding). */
static double mxfp4_expert_elems(const struct vllm_stacked *t, int tp)
{
	/* ffn_down's rows run over the intermediate dimension; gate and up produce it. */
	int64_t d[2] = {t->ne0, t->ne1};

	d[t->down ? 0 : 1] /= tp;
	return (double)pad_to(d[0], VLLM_MXFP4_PAD) * (double)pad_to(d[1], VLLM_MXFP4_PAD) *
	       (double)t->ne2;
}

/* The bytes of one worker's shard of the tensors summed in u: linear layers split over tp
 * ranks (the key and value projections over kv_shard: fewer KV heads than ranks leave each
 * rank one whole head), FP8 and INT8 with an fp32 scale per output row. Stacked experts of
 * more than one expert are left out under MXFP4 (see mxfp4_expert_elems). */
static double shard_bytes(const struct vllm_sums *u, const struct vllm_setup *s, int tp,
			  double kv_shard)
{
	const int p = s->precision;
	const double bl = vllm_weight_bytes_per_param(p, false);
	const double be = vllm_weight_bytes_per_param(p, true);
	const double scale = p == VLLM_FP8 || p == VLLM_INT8 ? 4.0 : 0.0;
	double b = u->plain * act_bytes(p);

	b += u->linear / tp * bl + u->linear_rows * scale / tp;
	b += u->kv / kv_shard * bl + u->kv_rows * scale / kv_shard;
	b += u->stacked1 / tp * be + u->stacked1_rows * scale / tp;
	if (p != VLLM_MXFP4)
		b += u->stacked / tp * be + u->stacked_rows * scale / tp;
	return b;
}

/* The MXFP4 bytes of one worker's shard of L's stacked experts. */
static double mxfp4_bytes(const struct vllm_layer_facts *L, int tp)
{
	double b = 0;

	for (int i = 0; i < L->n_stacked; i++)
		b += mxfp4_expert_elems(&L->st[i], tp);
	return b * vllm_weight_bytes_per_param(VLLM_MXFP4, true);
}

/* The weights of one worker of stage `stage`: its layers [first, first + count), the input
 * tensors on the first stage, the output ones on the last. */
static int64_t stage_weights(const struct model_arch *a, const struct vllm_facts *f,
			     const struct vllm_setup *s, int stage, int64_t first, int64_t count)
{
	const int tp = s->tensor_parallel, pp = s->pipeline_parallel;
	const int64_t n_kv = a->n_kv_heads > 0 ? a->n_kv_heads : a->n_heads;
	const double kv_shard = n_kv < tp && a->kv_lora_rank <= 0 ? (double)n_kv : (double)tp;
	const int ab = act_bytes(s->precision);
	const struct vllm_layer_facts *in = &f->layer[f->n_layer], *out = &f->layer[f->n_layer + 1];
	struct vllm_sums range;
	double bytes;

	sums_add(&range, &f->prefix[first + count], &f->prefix[first], -1.0);
	bytes = shard_bytes(&range, s, tp, kv_shard);
	if (stage == 0)
		bytes += shard_bytes(&in->sum, s, tp, kv_shard);
	if (stage == pp - 1)
		bytes += shard_bytes(&out->sum, s, tp, kv_shard);
	if (s->precision == VLLM_MXFP4) {
		for (int64_t il = first; il < first + count; il++)
			bytes += mxfp4_bytes(&f->layer[il], tp);
		bytes += (stage == 0 ? mxfp4_bytes(in, tp) : 0) +
			 (stage == pp - 1 ? mxfp4_bytes(out, tp) : 0);
	}
	for (int i = 0; i < f->n_embd; i++) {
		int32_t where = f->embd[i].layer;
		int64_t rows = pad_to(f->embd[i].ne1, VLLM_VOCAB_PAD);
		if (where >= 0              ? (where < first || where >= first + count) :
		    where == RF_LAYER_INPUT ? stage != 0 :
					      stage != pp - 1)
			continue; /* inputs go with the first stage, the output layer the last */
		bytes += (double)(pad_to(rows, tp) / tp) * (double)f->embd[i].ne0 * ab;
	}
	/* A tied head is the embedding; a last stage other than the first loads its own copy. */
	if (!f->has_head && pp > 1 && stage == pp - 1)
		bytes += (double)(pad_to(pad_to(a->vocab_size, VLLM_VOCAB_PAD), tp) / tp) *
			 (double)a->hidden_size * ab;
	return (int64_t)bytes;
}

/* Torch peak of the dummy forward pass over n_tok tokens on one worker: the widest FFN step
 * alive at once (gate and up outputs, the activated product, the residual, the normed input
 * and the output: 3 x ffn/tp + 3 x hidden elements per token), routed experts per token for
 * MoE layers. It matches vLLM 0.6's profiled peak of Llama 3.1 8B on an RTX 3090 (2.07 and
 * 2.99 GiB at 20000 and 29000 tokens: 109.8 kB per token, 110.6 kB counted). */
static int64_t forward_peak(const struct model_arch *a, const struct vllm_setup *s, int64_t n_tok,
			    int64_t first, int64_t count)
{
	const int tp = s->tensor_parallel;
	const double h = (double)a->hidden_size;
	double per_tok = 0;

	for (int64_t il = first; il < first + count; il++) {
		double w;
		if (model_layer_is_moe(a, il)) {
			double k = (double)a->n_experts_per_tok;
			w = k * (3.0 * (double)a->moe_intermediate_size / tp + h) +
			    3.0 * (double)a->shared_expert_intermediate_size / tp + 3.0 * h;
		} else {
			w = 3.0 * (double)a->intermediate_size / tp + 3.0 * h;
		}
		if (w > per_tok)
			per_tok = w;
	}
	return (int64_t)((double)n_tok * per_tok * act_bytes(s->precision));
}

/* Per token and layer, the KV bytes one worker holds. */
static int64_t kv_layer_token_bytes(const struct model_arch *a, const struct vllm_setup *s)
{
	const int tp = s->tensor_parallel;
	const int64_t n_kv = a->n_kv_heads > 0 ? a->n_kv_heads : a->n_heads;
	const int64_t elem = s->kv_dtype == VLLM_KV_FP8 ? 1 : act_bytes(s->precision);
	int64_t k = model_kv_k_width(a), v = model_kv_v_width(a);

	if (a->kv_lora_rank > 0) /* MLA: one latent row, the same on every rank */
		return (k + v) * elem;
	if (n_kv >= tp)
		return (k + v) / tp * elem;
	return (k + v) / n_kv * elem; /* one replicated head per rank */
}

static int bad(const char **field, const char *name)
{
	if (field)
		*field = name;
	return RF_E_INVALID_VALUE;
}

static int64_t cuda_total(const struct vllm_gpu *g)
{
	return g->total_bytes - VLLM_CUDA_RESERVED_BYTES;
}

/* Checks s against the model and the machine and resolves vLLM's defaults into c. */
static int resolve(const struct model_arch *a, const struct vllm_setup *s,
		   const struct vllm_gpu *gpus, int n_gpus, struct vllm_capacity *c,
		   const char **field)
{
	const int tp = s->tensor_parallel, pp = s->pipeline_parallel;
	const int64_t n_kv = a->n_kv_heads > 0 ? a->n_kv_heads : a->n_heads;
	int64_t maxpos;
	bool large;

	if (s->precision < 0 || s->precision >= VLLM_PRECISION_COUNT)
		return bad(field, "precision");
	if (s->kv_dtype != VLLM_KV_AUTO && s->kv_dtype != VLLM_KV_FP8)
		return bad(field, "kv_cache_dtype");
	if (tp < 1 || tp > VLLM_MAX_GPUS || a->n_heads % tp != 0 ||
	    (n_kv % tp != 0 && tp % n_kv != 0))
		return bad(field, "tensor_parallel_size");
	if (pp < 1 || pp > VLLM_MAX_GPUS || pp > model_n_layer(a) || tp * pp > VLLM_MAX_GPUS)
		return bad(field, "pipeline_parallel_size");
	if (!gpus || n_gpus < tp * pp)
		return bad(field, "gpus");
	for (int i = 0; i < tp * pp; i++)
		if (gpus[i].total_bytes <= VLLM_CUDA_RESERVED_BYTES ||
		    gpus[i].total_bytes > ((int64_t)1 << 50))
			return bad(field, "gpus");
	if (!isfinite(s->gpu_memory_utilization) || s->gpu_memory_utilization > 1)
		return bad(field, "gpu_memory_utilization");
	c->tensor_parallel = tp;
	c->pipeline_parallel = pp;
	c->gpu_memory_utilization = s->gpu_memory_utilization > 0 ? s->gpu_memory_utilization :
								    VLLM_DEFAULT_UTILIZATION;
	c->block_size = s->block_size > 0 ? s->block_size : VLLM_DEFAULT_BLOCK_SIZE;
	if (c->block_size > 4096)
		return bad(field, "block_size");
	maxpos = s->max_positions > 0 ? s->max_positions : a->max_position_embeddings;
	c->max_model_len = s->max_model_len > 0 ? s->max_model_len : maxpos > 0 ? maxpos : 2048;
	/* vLLM refuses a length beyond the model's, or beyond what its rope scaling reaches
	 * (unless VLLM_ALLOW_LONG_MAX_MODEL_LEN). */
	if (c->max_model_len > MODEL_MAX_POSITIONS || (maxpos > 0 && c->max_model_len > maxpos))
		return bad(field, "max_model_len");
	large = cuda_total(&gpus[0]) >= VLLM_LARGE_GPU_BYTES && !gpus[0].a100;
	c->max_num_seqs = s->max_num_seqs > 0 ? s->max_num_seqs : (large ? 1024 : 256);
	c->max_num_batched_tokens = s->max_num_batched_tokens > 0 ? s->max_num_batched_tokens :
								    (large ? 8192 : 2048);
	if (c->max_num_seqs > 65536)
		return bad(field, "max_num_seqs");
	if (c->max_num_batched_tokens > (1 << 24) || c->max_num_batched_tokens < c->max_num_seqs)
		return bad(field, "max_num_batched_tokens");
	if (s->max_num_seqs <= 0 || s->max_num_batched_tokens <= 0)
		note(c, large ? "vLLM's defaults for GPUs of 70 GiB or more (not A100): "
				"max_num_seqs 1024, max_num_batched_tokens 8192 (vllm serve)" :
				"vLLM's defaults for smaller GPUs and A100: max_num_seqs 256, "
				"max_num_batched_tokens 2048 (vllm serve)");
	return 0;
}

int vllm_capacity(const struct model_arch *a, const struct vllm_setup *s,
		  const struct vllm_gpu *gpus, int n_gpus, struct vllm_capacity *out,
		  const char **field)
{
	struct rf_tensor_list l = {0};
	struct vllm_facts f = {0};
	int rc;

	if (!a || !s || !out)
		return RF_E_INVALID_VALUE;
	if (a->family != MODEL_DECODER)
		return bad(field, "model");
	rc = model_tensors(a, &l);
	if (rc == 0) {
		rc = vllm_facts_build(a, &l, &f);
		rf_tensor_list_free(&l);
	}
	if (rc < 0)
		return rc == RF_E_NOMEM ? rc : bad(field, "model");
	rc = vllm_capacity_with(a, &f, s, gpus, n_gpus, out, field);
	vllm_facts_free(&f);
	return rc;
}

int vllm_capacity_with(const struct model_arch *a, const struct vllm_facts *f,
		       const struct vllm_setup *s, const struct vllm_gpu *gpus, int n_gpus,
		       struct vllm_capacity *out, const char **field)
{
	struct vllm_capacity c;
	int64_t n_layer, kv_layer, best = -1;
	int rc;

	if (!a || !f || !f->layer || !f->prefix || !s || !out)
		return RF_E_INVALID_VALUE;
	memset(&c, 0, sizeof(c));
	if (a->family != MODEL_DECODER)
		return bad(field, "model");
	rc = resolve(a, s, gpus, n_gpus, &c, field);
	if (rc < 0)
		return rc;
	n_layer = model_n_layer(a);
	if (f->n_layer != n_layer)
		return RF_E_INVALID_VALUE; /* the facts of another model */
	kv_layer = kv_layer_token_bytes(a, s);
	for (int stage = 0; stage < c.pipeline_parallel; stage++) {
		int64_t first, count, weights, act, sampler = 0, non_torch, avail, blocks;
		int64_t requested = INT64_MAX, total = INT64_MAX;
		int64_t self, cross = 0;
		stage_layers(n_layer, c.pipeline_parallel, stage, &first, &count);
		/* Cross-attention layers cache one image per sequence, not text tokens. */
		for (int64_t il = first; il < first + count; il++)
			cross += model_layer_is_cross(a, il);
		self = count - cross;
		/* The smallest GPU of the stage binds its tensor-parallel ranks. */
		for (int r = 0; r < c.tensor_parallel; r++) {
			const struct vllm_gpu *g = &gpus[stage * c.tensor_parallel + r];
			int64_t t = cuda_total(g);
			int64_t q = (int64_t)((double)t * c.gpu_memory_utilization);
			if (q < requested) {
				requested = q;
				total = t;
			}
			if (g->free_bytes >= 0 && g->free_bytes < q && !c.refusal)
				c.refusal =
					"a GPU has less free memory than gpu_memory_utilization x "
					"its memory: vLLM refuses to start";
		}
		weights = stage_weights(a, f, s, stage, first, count);
		act = forward_peak(a, s, c.max_num_batched_tokens, first, count);
		if (stage == c.pipeline_parallel - 1) {
			int64_t reqs = c.max_num_seqs < c.max_num_batched_tokens ?
					       c.max_num_seqs :
					       c.max_num_batched_tokens;
			sampler = (int64_t)((double)reqs * (double)a->vocab_size *
					    (act_bytes(s->precision) + VLLM_SAMPLER_EXTRA_BYTES));
			if (sampler > act)
				act = sampler;
		}
		non_torch = c.tensor_parallel > 1 ? VLLM_NON_TORCH_TP_BYTES :
						    VLLM_NON_TORCH_SINGLE_BYTES;
		avail = requested - weights - act - non_torch;
		blocks = avail > 0 && self > 0 ? avail / ((int64_t)c.block_size * kv_layer * self) :
						 (avail > 0 ? INT64_MAX / 2 : 0);
		c.weights_bytes_total += weights * c.tensor_parallel;
		if (best < 0 || blocks < best) {
			best = blocks;
			c.binding_stage = stage;
			c.cuda_total_bytes = total;
			c.requested_bytes = requested;
			c.weights_bytes = weights;
			c.activation_bytes = act;
			c.non_torch_bytes = non_torch;
			c.kv_cache_bytes = avail > 0 ? avail : 0;
			c.kv_bytes_per_token = kv_layer * self;
			c.cross_kv_bytes_per_seq = kv_layer * cross * a->cross_attn_tokens;
		}
	}
	c.num_blocks = best > 0 ? best : 0;
	c.kv_cache_tokens = c.num_blocks * c.block_size;
	c.max_concurrency = (double)c.kv_cache_tokens / (double)c.max_model_len;
	if (a->n_cross_attn_layers > 0) {
		/* The binding worker's cache holds each request's text and its image. */
		double per_req = (double)c.kv_bytes_per_token * (double)c.max_model_len +
				 (double)c.cross_kv_bytes_per_seq;
		c.max_concurrency = per_req > 0 ? (double)c.kv_cache_bytes / per_req : 0;
		note(&c,
		     "one image of max_num_tiles tiles per request: cross-attention layers cache "
		     "its vision tokens (tiles x ((image_size / patch_size)^2 + 1)) and no text "
		     "tokens; the request cannot say that there is no image");
	}
	c.cuda_graph_bytes = s->enforce_eager ? 0 : VLLM_CUDA_GRAPH_BYTES;
	if (!c.refusal && c.kv_cache_bytes <= 0)
		c.refusal = "no memory is left for the KV cache: weights and profiling reserves "
			    "exceed gpu_memory_utilization x the GPU's memory";
	if (!c.refusal && c.kv_cache_tokens < pad_to(c.max_model_len, c.block_size))
		c.refusal =
			"the KV cache cannot hold one request of max_model_len tokens: vLLM "
			"refuses to start (lower max_model_len or raise gpu_memory_utilization)";
	if (!c.refusal && c.requested_bytes + c.cuda_graph_bytes > c.cuda_total_bytes)
		c.refusal = "CUDA graphs are captured beyond gpu_memory_utilization and would not "
			    "fit (lower it or enforce eager mode)";
	c.fits = c.refusal == NULL;
	note(&c, "vLLM V1 memory profiling (0.17 and later): KV cache = gpu_memory_utilization x "
		 "GPU memory - weights - activation peak - non-torch memory");
	note(&c,
	     "activation peak: the larger of a forward pass over max_num_batched_tokens and "
	     "the sampler over max_num_seqs x vocabulary logits (about 15.5 bytes each, fitted)");
	note(&c, c.tensor_parallel > 1 ?
			 "non-torch memory 2.1 GiB per GPU with tensor parallelism (NCCL, custom "
			 "all-reduce), measured" :
			 "non-torch memory 0.25 GiB (measured on one GPU)");
	note(&c, "KV blocks of 16 tokens over every attention layer of a stage; the engine keeps "
		 "the smallest block count of all workers");
	if (model_n_layer(a) > 0 && a->sliding_window > 0 && a->swa_pattern > 0)
		note(&c, "sliding-window layers are counted as full layers, as vLLM reports its "
			 "KV cache size in tokens");
	if (!s->enforce_eager)
		note(&c, "CUDA graphs take about 1 GiB more per GPU beyond gpu_memory_utilization "
			 "(0.5-1.9 GiB measured)");
	*out = c;
	return 0;
}

/* The vLLM weight format a quantised checkpoint loads as. */
static int precision_of_checkpoint(const struct hfq_config *q)
{
	switch (q->method) {
	case HFQ_AWQ:
		return VLLM_AWQ;
	case HFQ_GPTQ:
		return q->bits == 8 ? VLLM_INT8 : VLLM_GPTQ;
	case HFQ_BNB_4BIT:
		return VLLM_BNB4;
	case HFQ_BNB_8BIT:
		return VLLM_INT8;
	case HFQ_FP8:
		return VLLM_FP8;
	case HFQ_COMPRESSED:
		if (q->bits == 8)
			return q->float_weights ? VLLM_FP8 : VLLM_INT8;
		return VLLM_GPTQ; /* W4A16 runs on the same Marlin kernels */
	case HFQ_MXFP4:
		return VLLM_MXFP4;
	default:
		return VLLM_BF16;
	}
}

int vllm_precision_own(const struct model_arch *a, const struct hfq_config *q)
{
	if (q)
		return precision_of_checkpoint(q);
	return strcmp(a->llm_arch, "gpt-oss") == 0 ? VLLM_MXFP4 : VLLM_BF16;
}
