/*
 * Inference memory (see estimate.h for what is modelled and why). All sizes are bytes in
 * int64_t; inputs are capped (layers, n_ctx, n_ubatch, devices) so no product overflows.
 */
#include "core/fit/estimate.h"

#include <stdio.h>
#include <stddef.h>
#include <string.h>

#include "core/err.h"

#define F32 4 /* activations and the no-FA mask are f32 */

void rf_infer_params_default(struct rf_infer_params *p)
{
	memset(p, 0, sizeof(*p));
	p->n_ctx = 4096;
	p->n_batch = 2048;
	p->n_ubatch = 512;
	p->n_parallel = 1;
	p->type_k = RF_GT_F16;
	p->type_v = RF_GT_F16;
	p->flash_attn = false;
	p->n_gpu_layers = -1;
	p->use_mmap = true;
}

/* ---- weights ---------------------------------------------------------------------------- */

/* Counts matrix x's elements under its type (as the head when head: a tied token_embd). */
static void add_matrix_elements(struct rf_mem_weights *w, const struct rf_tensor *x, bool head)
{
	double el = 1;

	if (x->type < 0 || x->type >= RF_GT_COUNT)
		return;
	for (uint32_t d = 0; d < x->n_dims && d < RF_TENSOR_MAX_DIMS; d++)
		el *= (double)x->ne[d];
	w->type_elements[x->type] += el;
	if (x->expert && !head)
		w->type_expert_elements[x->type] += el;
	for (int c = 1; c < RF_REPACK_N; c++)
		if (rf_repack_takes(c, x->type, x->ne[1], x->expert && !head))
			w->type_repack_elements[c][x->type] += el;
}

int rf_weights_cpu_mix(const struct rf_mem_weights *w, int repack_isa, double expert_active,
		       struct speed_cpu_mix *out)
{
	double el[RF_GT_COUNT], rep[RF_GT_COUNT];

	if (!(expert_active >= 0) || expert_active > 1)
		expert_active = 1;
	for (int t = 0; t < RF_GT_COUNT; t++) {
		double ex = w->type_expert_elements[t], r = 0;
		/* The experts a token does not route to are not multiplied. */
		el[t] = w->type_elements[t] - ex * (1 - expert_active);
		if (repack_isa > 0 && repack_isa < RF_REPACK_N && w->type_elements[t] > 0)
			r = w->type_repack_elements[repack_isa][t] * el[t] / w->type_elements[t];
		rep[t] = r;
	}
	return speed_cpu_mix_from_types(el, rep, RF_GT_COUNT, out);
}

/* Whether x is a matrix of the output layer that class c repacks. */
static bool output_repacked(const struct rf_mem_weights *w, int c, const struct rf_tensor *x)
{
	if (x->layer == RF_LAYER_INPUT || (x->layer >= 0 && x->layer < w->n_layer))
		return false;
	return x->n_dims >= 2 && rf_tensor_quantizable(x) &&
	       rf_repack_takes(c, x->type, x->ne[1], x->expert);
}

/* The bytes of the output layer's tensors that class c repacks and that lie before the first
 * or after the last other tensor of the file t[0..n) (in the file's order). */
static uint64_t output_edge_bytes(const struct rf_mem_weights *w, int c, const struct rf_tensor *t,
				  size_t n)
{
	uint64_t edge = 0;
	size_t lo = 0, hi = n;

	while (lo < n && output_repacked(w, c, &t[lo]))
		edge += t[lo++].bytes;
	while (hi > lo && output_repacked(w, c, &t[hi - 1]))
		edge += t[--hi].bytes;
	return edge;
}

void rf_mem_weights_reset(struct rf_mem_weights *w)
{
	w->n_layer = 0;
	w->input_bytes = 0;
	w->output_bytes = 0;
	w->file_bytes = 0;
	w->largest_matrix = 0;
	w->tied_head_bytes = 0;
	memset(w->output_repack_bytes, 0, sizeof(w->output_repack_bytes));
	w->output_amx_bytes = 0;
	memset(w->output_edge_repack_bytes, 0, sizeof(w->output_edge_repack_bytes));
	memset(w->type_elements, 0, sizeof(w->type_elements));
	memset(w->type_expert_elements, 0, sizeof(w->type_expert_elements));
	memset(w->type_repack_elements, 0, sizeof(w->type_repack_elements));
}

int rf_weights_from_tensors(const struct model_arch *a, const struct rf_tensor *t, size_t n,
			    struct rf_mem_weights *out)
{
	struct rf_mem_weights w;
	bool head = false;
	uint64_t tok = 0;

	memset(&w, 0, sizeof(w));
	w.n_layer = model_n_layer(a);
	if (w.n_layer < 1 || w.n_layer > MODEL_MAX_LAYERS)
		return RF_E_INVALID_VALUE;
	for (size_t i = 0; i < n; i++) {
		const struct rf_tensor *x = &t[i];
		w.file_bytes += x->bytes;
		if (x->cat == RF_TC_OUTPUT)
			head = true;
		if (strcmp(x->name, "token_embd.weight") == 0)
			tok = x->bytes;
		if (x->layer == RF_LAYER_INPUT) {
			w.input_bytes += x->bytes;
			continue;
		}
		if (x->layer >= 0 && x->layer < w.n_layer) {
			w.layer_bytes[x->layer] += x->bytes;
			if (x->expert)
				w.layer_expert_bytes[x->layer] += x->bytes;
		} else
			w.output_bytes += x->bytes; /* output layer (and layers past n_layer) */
		if (x->bytes > w.largest_matrix)
			w.largest_matrix = x->bytes;
		/* Weights a matrix product reads, as the CPU backend may repack them. */
		if (x->n_dims < 2 || !rf_tensor_quantizable(x))
			continue;
		add_matrix_elements(&w, x, false);
		for (int c = 1; c < RF_REPACK_N; c++) {
			uint64_t packed;
			if (!rf_repack_takes(c, x->type, x->ne[1], x->expert))
				continue;
			packed = rf_repack_bytes(c, x->type, x->ne[0], x->ne[1], x->expert,
						 x->bytes);
			if (x->layer >= 0 && x->layer < w.n_layer) {
				w.layer_repack_bytes[c][x->layer] += x->bytes;
				if (c == RF_REPACK_AMX)
					w.layer_amx_bytes[x->layer] += packed;
			} else {
				w.output_repack_bytes[c] += x->bytes;
				if (c == RF_REPACK_AMX)
					w.output_amx_bytes += packed;
			}
		}
	}
	for (int c = 1; c < RF_REPACK_N; c++)
		w.output_edge_repack_bytes[c] = output_edge_bytes(&w, c, t, n);
	/* A tied model's head is token_embd, which llama.cpp loads a second time into the output
	 * layer's buffer when that buffer is not token_embd's (see tied_head_bytes). */
	if (!head && a->family != MODEL_ENCODER) {
		w.output_bytes += tok;
		w.tied_head_bytes = tok;
		if (tok > w.largest_matrix)
			w.largest_matrix = tok;
		for (size_t i = 0; i < n; i++) {
			if (strcmp(t[i].name, "token_embd.weight") != 0)
				continue;
			add_matrix_elements(&w, &t[i], true);
			for (int c = 1; c < RF_REPACK_N; c++) {
				if (!rf_repack_takes(c, t[i].type, t[i].ne[1], false))
					continue;
				w.output_repack_bytes[c] += tok;
				if (c == RF_REPACK_AMX)
					w.output_amx_bytes += rf_repack_bytes(
						c, t[i].type, t[i].ne[0], t[i].ne[1], false, tok);
			}
		}
	}
	*out = w;
	return 0;
}

int rf_weights_from_scheme(const struct model_arch *a, int ft, int imatrix,
			   struct rf_mem_weights *out)
{
	struct rf_tensor_list l;
	struct rf_quant_model qm;
	int rc = model_tensors(a, &l);

	if (rc < 0)
		return rc;
	memset(&qm, 0, sizeof(qm));
	qm.n_layer = model_n_layer(a);
	qm.n_head = a->n_heads;
	qm.n_head_kv = a->n_kv_heads > 0 ? a->n_kv_heads : a->n_heads;
	qm.n_expert = a->n_experts;
	/* llama.cpp's 70B type: 80-layer GQA llama and qwen2 models. */
	qm.is_70b = model_n_layer(a) == 80 && qm.n_head_kv < qm.n_head &&
		    (strcmp(a->llm_arch, "llama") == 0 || strcmp(a->llm_arch, "qwen2") == 0);
	qm.imatrix = imatrix < 0 ? rf_ftype_needs_imatrix(ft) : imatrix != 0;
	qm.experts_mxfp4 = strcmp(a->llm_arch, "gpt-oss") == 0;
	rc = rf_quant_apply(&qm, ft, l.t, l.n);
	if (rc == 0)
		rc = rf_weights_from_tensors(a, l.t, l.n, out);
	rf_tensor_list_free(&l);
	return rc;
}

/* ---- budgets ------------------------------------------------------------------------------ */

int64_t rf_backend_overhead_bytes(const char *backend)
{
	static const char *const gpu[] = {"cuda", "rocm", "hip", "vulkan", "sycl"};

	for (size_t i = 0; backend && i < sizeof(gpu) / sizeof(gpu[0]); i++)
		if (strcmp(backend, gpu[i]) == 0)
			return RF_GPU_OVERHEAD_BYTES;
	return 0;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static double dmax(double a, double b)
{
	return a > b ? a : b;
}

int64_t rf_budget_device(int64_t free_bytes, int64_t total_bytes)
{
	int64_t reserve =
		max64(RF_GPU_RESERVE_MIN, (int64_t)((double)total_bytes * RF_GPU_RESERVE_FRAC));

	return max64(free_bytes - reserve, 0);
}

int64_t rf_budget_unified(int64_t ram_total_bytes, int64_t ram_available_bytes)
{
	int64_t share = ram_total_bytes <= 32 * RF_GIB ? ram_total_bytes / 3 * 2 :
							 ram_total_bytes / 4 * 3;
	int64_t used = ram_total_bytes - ram_available_bytes;

	/* What other processes use comes out of the same RAM. */
	if (ram_available_bytes >= 0 && used > 0)
		share = min64(share, ram_available_bytes);
	return max64(share, 0);
}

int64_t rf_budget_host(int64_t available_bytes, int64_t total_bytes, int64_t cgroup_limit_bytes,
		       int64_t cgroup_used_bytes)
{
	int64_t avail = available_bytes;
	int64_t base = total_bytes;

	if (cgroup_limit_bytes > 0) {
		int64_t in_cg = cgroup_limit_bytes - max64(cgroup_used_bytes, 0);
		avail = min64(avail, in_cg);
		base = min64(base > 0 ? base : cgroup_limit_bytes, cgroup_limit_bytes);
	}
	return max64(avail - max64(RF_HOST_RESERVE_MIN,
				   (int64_t)((double)base * RF_HOST_RESERVE_FRAC)),
		     0);
}

const char *rf_fit_band(double u)
{
	if (u <= RF_FIT_COMFORTABLE_MAX)
		return "comfortable";
	if (u <= RF_FIT_TIGHT_MAX)
		return "tight";
	return "over";
}

/* ---- the estimate ----------------------------------------------------------------------------- */

static int64_t pad(int64_t v, int64_t to)
{
	return (v + to - 1) / to * to;
}

static void note(struct rf_mem_estimate *e, const char *s)
{
	for (int i = 0; i < e->n_notes; i++)
		if (e->notes[i] == s)
			return;
	if (e->n_notes < RF_MEM_MAX_NOTES)
		e->notes[e->n_notes++] = s;
}

static bool kv_type_ok(int t)
{
	static const int ok[] = {RF_GT_F32,  RF_GT_F16,  RF_GT_BF16, RF_GT_Q8_0,  RF_GT_Q4_0,
				 RF_GT_Q4_1, RF_GT_Q5_0, RF_GT_Q5_1, RF_GT_IQ4_NL};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (ok[i] == t)
			return true;
	return false;
}

/* The parts of one backend's compute buffer (see estimate.h). */
struct cparts {
	int64_t mask;  /* KQ mask(s) */
	int64_t attn;  /* scores + tensors alive during attention */
	int64_t ffn;   /* tensors alive during the FFN */
	int64_t out;   /* logits and the normed hidden state */
	int64_t input; /* host inputs beside the masks: embedding rows, positions, tokens */
};

static struct cparts compute_parts(const struct model_arch *a, int64_t n_tok, int64_t n_kv,
				   int64_t n_kv_swa, bool fa)
{
	struct cparts c = {0};
	const int64_t h = a->hidden_size;
	const int64_t q_dim = a->n_heads * a->head_dim;
	bool swa_any = false, full_any = false;
	int64_t n_masks;
	int64_t kv_attn = n_kv;
	int64_t ffn_dense = 0, ffn_moe = 0;
	bool any_dense = false, any_moe = false;

	/* Windowed and full layers side by side: a second mask (even with swa_full). By
	 * model_layer_is_swa's pattern n: layer 0 is windowed, layer n - 1 the first global. */
	{
		const int64_t nl = model_n_layer(a);
		if (a->swa_pattern <= 0 || a->sliding_window <= 0) {
			full_any = nl > 0;
		} else {
			swa_any = nl > 0;
			full_any = a->swa_pattern > 1 && nl >= a->swa_pattern;
		}
	}
	n_masks = swa_any && full_any ? 2 : 1;
	if (a->family == MODEL_ENCODER)
		kv_attn = n_tok; /* no cache: the batch attends to itself */
	if (a->swa_pattern == 1)
		kv_attn = n_kv_swa;
	/* The mask is f32 [n_kv, n_tok] without flash attention, f16 with the token dim padded
	 * with it. A second one, over the windowed cache's cells, serves the windowed layers. */
	{
		int64_t mask_kv = kv_attn + (n_masks == 2 ? n_kv_swa : 0);
		if (fa)
			c.mask = mask_kv * pad(n_tok, RF_KQ_MASK_PAD) * 2;
		else
			c.mask = mask_kv * n_tok * F32;
	}
	c.attn = n_tok * F32 * (2 * h + 2 * q_dim);
	if (!fa)
		c.attn += kv_attn * n_tok * a->n_heads * F32;
	/* Which kinds of FFN layer there are (model_layer_is_moe's pattern, in closed form: an
	 * estimate is asked thousands of times per plan). */
	{
		int64_t step = a->moe_layer_step > 0 ? a->moe_layer_step : 1;
		int64_t first = (a->first_k_dense + step) / step * step - 1; /* first MoE layer */
		any_moe = a->n_experts > 1 && first < model_n_layer(a);
		any_dense = !any_moe || a->first_k_dense > 0 || step > 1;
	}
	if (any_dense)
		ffn_dense = n_tok * F32 *
			    (2 * h + (a->ffn == MODEL_FFN_PLAIN ? 1 : 2) * a->intermediate_size);
	if (any_moe) {
		const int64_t k = a->n_experts_per_tok;
		ffn_moe = n_tok * F32 *
			  (2 * h + a->n_experts + 2 * k * a->moe_intermediate_size + k * h +
			   2 * a->shared_expert_intermediate_size);
	}
	c.ffn = max64(ffn_dense, ffn_moe);
	if (a->family != MODEL_ENCODER)
		c.out = n_tok * F32 * (a->vocab_size + h);
	c.input = n_tok * F32 * h * (a->learned_pos ? 2 : 1) + n_tok * 3 * 4;
	return c;
}

/* The bytes of one cell's K and V rows of a layer (the same in every layer). Returns 0 and
 * *out, or 1 (the K type does not fit the row) or 2 (the V type does not). */
static int kv_cell_bytes(const struct model_arch *a, const struct rf_infer_params *p, int64_t *out)
{
	uint64_t k_row = 0, v_row = 0;
	int64_t kw = model_kv_k_width(a), vw = model_kv_v_width(a);

	*out = 0;
	if (a->family == MODEL_ENCODER)
		return 0;
	if (rf_gtype_row_bytes(p->type_k, kw, &k_row) < 0)
		return 1;
	if (vw > 0 && rf_gtype_row_bytes(p->type_v, vw, &v_row) < 0)
		return 2;
	*out = (int64_t)k_row + (int64_t)v_row;
	return 0;
}

/* Copies a device name (NUL-terminated, truncated to the field). */
static void copy_name(char *dst, const char *src)
{
	size_t n = strnlen(src, RF_DEVICE_NAME_LEN - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The weights of layers [lo, hi), each layer's bytes counted whole as the per-layer sums
 * count them. */
static int64_t range_bytes(const uint64_t *layer_bytes, int64_t lo, int64_t hi)
{
	int64_t sum = 0;

	for (int64_t il = lo; il < hi; il++)
		sum += (int64_t)layer_bytes[il];
	return sum;
}

/* Splits the host's weights by llama.cpp's buffers. Weights the CPU backend repacks get a
 * copy in the extra buffer (AMX's packed rows a little larger); with mmap the file's span of
 * the tensors kept in the plain buffer stays mapped beside it (the originals of repacked
 * weights inside the span are read once and left as page cache the OS may reclaim; those at
 * the file's ends are outside the span), without mmap only the copy is kept. A tied head that
 * is repacked is a copy of token_embd in both cases. */
static void host_weights_by_buffer(const struct rf_mem_weights *w, const struct rf_infer_params *p,
				   int isa, int64_t host_end, bool output_on_host,
				   struct rf_mem_estimate *e)
{
	int64_t orig = 0, extra = 0, edge = 0, before = e->weights_host_bytes;
	bool amx = isa == RF_REPACK_AMX;

	if (isa <= RF_REPACK_NONE || isa >= RF_REPACK_N)
		isa = RF_REPACK_NONE;
	/* The host's layers are the first host_end. */
	if (host_end > w->n_layer)
		host_end = w->n_layer;
	if (isa != RF_REPACK_NONE) {
		orig = range_bytes(w->layer_repack_bytes[isa], 0, host_end);
		extra = amx ? range_bytes(w->layer_amx_bytes, 0, host_end) : orig;
	}
	if (output_on_host && isa != RF_REPACK_NONE) {
		extra += (int64_t)(amx ? w->output_amx_bytes : w->output_repack_bytes[isa]);
		if (w->tied_head_bytes == 0) {
			orig += (int64_t)w->output_repack_bytes[isa];
			edge = (int64_t)w->output_edge_repack_bytes[isa];
		}
	}
	e->weights_repack_bytes = extra;
	if (p->use_mmap) {
		e->weights_mapped_bytes = before - edge;
		e->weights_host_bytes = e->weights_mapped_bytes + extra;
		e->host_reclaimable_bytes = p->mlock ? 0 : orig - edge;
	} else {
		e->weights_cpu_bytes = before - orig;
		e->weights_host_bytes = e->weights_cpu_bytes + extra;
	}
	e->weights_bytes += e->weights_host_bytes - before;
	if (extra > 0)
		note(e, p->use_mmap ? "CPU weight repacking: with mmap the mapped file and the "
				      "repacked copy both count" :
				      "CPU weight repacking: without mmap only the repacked copy "
				      "is kept");
	if (amx && extra > 0)
		note(e, "AMX: Q4_0, Q4_1, Q8_0, K-quant, IQ4_XS and F16 matrices with out-features "
			"a multiple of 32 are copied into the AMX buffer, Q8_0, Q4_K, Q5_K and "
			"IQ4_XS rows with their packing extras");
	if (p->mlock && p->use_mmap)
		note(e, "mlock: the mapped file is locked in RAM (needs RLIMIT_MEMLOCK)");
}

/* What the KV cache of one layer holds (kv_cell bytes a cell): cells, or cells_swa for a
 * sliding-window layer; a cross-attention layer one image's tokens per sequence; a layer past
 * the model's (an encoder-decoder's) nothing. */
struct kv_rule {
	const struct model_arch *a;
	bool has_swa;
	int64_t kv_cell, cells, cells_swa, n_parallel;
};

static int64_t layer_kv(const struct kv_rule *r, int64_t il)
{
	const struct model_arch *a = r->a;
	int64_t kv = il < a->n_layers ?
			     r->kv_cell * (r->has_swa && model_layer_is_swa(a, il) ? r->cells_swa :
										     r->cells) :
			     0;

	if (a->n_cross_attn_layers > 0 && model_layer_is_cross(a, il))
		kv = r->kv_cell * a->cross_attn_tokens * r->n_parallel;
	return kv;
}

/* The KV bytes of layers [lo, hi): layer_kv summed, counted by the window pattern where no
 * layer is cross-attention (model_layer_is_swa: layer il is windowed when il % n < n - 1, so
 * [0, x) holds x / n global layers). */
static int64_t range_kv(const struct kv_rule *r, int64_t lo, int64_t hi)
{
	const struct model_arch *a = r->a;
	int64_t n, global, sum = 0;

	if (a->n_cross_attn_layers > 0) {
		for (int64_t il = lo; il < hi; il++)
			sum += layer_kv(r, il);
		return sum;
	}
	if (hi > a->n_layers)
		hi = a->n_layers;
	if (hi <= lo)
		return 0;
	n = hi - lo;
	if (!r->has_swa)
		return r->kv_cell * r->cells * n;
	global = a->swa_pattern == 1 ? 0 : hi / a->swa_pattern - lo / a->swa_pattern;
	return r->kv_cell * (r->cells * global + r->cells_swa * (n - global));
}

static int bad(struct rf_mem_estimate *out, const char *field)
{
	memset(out, 0, sizeof(*out));
	out->error_field = field;
	return RF_E_INVALID_VALUE;
}

int rf_estimate_inference(const struct model_arch *a, const struct rf_mem_weights *w,
			  const struct rf_infer_params *p, const struct rf_mem_device *dev,
			  int n_dev, const struct rf_mem_host *host, struct rf_mem_estimate *out)
{
	/* Built in place: the estimate is large, and a copy costs more than the arithmetic. */
	struct rf_mem_estimate *const e = out;
	const int64_t n_layer = w->n_layer;
	double cum[RF_MAX_DEVICES], total_split = 0;
	int64_t cells, cells_swa, n_tok, ngl, i_gpu_start, act;
	int layer_dev[MODEL_MAX_LAYERS]; /* -1: host */
	const bool has_swa = a->swa_pattern > 0 && a->sliding_window > 0;
	int64_t kv_cell;
	int out_dev = -1;
	bool fa = p->flash_attn, host_layers = false, host_experts = false, pools = false;
	struct cparts c;
	int err_kind = 0;

	if (n_layer < 1 || n_layer > MODEL_MAX_LAYERS || n_layer != model_n_layer(a))
		return bad(out, "model");
	if (p->n_ctx < 1 || p->n_ctx > MODEL_MAX_POSITIONS)
		return bad(out, "n_ctx");
	if (p->n_batch < 1 || p->n_batch > (1 << 20))
		return bad(out, "n_batch");
	if (p->n_ubatch < 1 || p->n_ubatch > (1 << 16))
		return bad(out, "n_ubatch");
	if (p->n_parallel < 1 || p->n_parallel > 256)
		return bad(out, "n_parallel");
	if (!kv_type_ok(p->type_k))
		return bad(out, "cache_type_k");
	if (!kv_type_ok(p->type_v))
		return bad(out, "cache_type_v");
	if (p->n_gpu_layers < -1 || p->n_gpu_layers > MODEL_MAX_LAYERS + 1)
		return bad(out, "n_gpu_layers");
	if (p->n_cpu_moe < 0 || p->n_cpu_moe > MODEL_MAX_LAYERS)
		return bad(out, "n_cpu_moe");
	if (n_dev < 0 || n_dev > RF_MAX_DEVICES || (n_dev > 0 && !dev))
		return bad(out, "devices");

	/* Cleared but for the devices past n_dev, which are read up to n_devices only (the
	 * planner estimates thousands of setups a request; per_device is most of *e). */
	{
		const size_t dev_at = offsetof(struct rf_mem_estimate, per_device);
		const size_t after_dev = dev_at + sizeof(e->per_device);
		memset(e, 0, dev_at + (size_t)n_dev * sizeof(e->per_device[0]));
		memset((char *)e + after_dev, 0, sizeof(*e) - after_dev);
	}
	/* Sizes llama.cpp settles on: cells padded, the micro-batch within the batch and the
	 * context, windowed layers holding n_swa per sequence plus one micro-batch. */
	cells = pad(p->n_ctx, RF_KV_PAD);
	n_tok = min64(min64(p->n_ubatch, p->n_batch), cells);
	cells_swa = cells;
	/* Layer 0 is windowed whenever the model has windowed layers (model_layer_is_swa). */
	if (has_swa && n_layer > 0 && !p->swa_full)
		cells_swa = min64(cells, pad(a->sliding_window * p->n_parallel + n_tok, RF_KV_PAD));
	e->n_ctx = cells;
	e->kv_cells_swa = cells_swa;
	e->n_ubatch = n_tok;
	if (rf_gtype(p->type_v)->quantized && !fa) {
		fa = true;
		note(e, "a quantized V cache needs flash attention; assumed on");
	}
	if (a->max_position_embeddings > 0 &&
	    p->n_ctx > (p->rope_positions > 0 ? p->rope_positions : a->max_position_embeddings))
		note(e, "n_ctx is above the model's trained context");
	note(e, "token embeddings stay in host memory, as llama.cpp keeps them");
	note(e, "KV cache padded to 256 cells; n_ctx is shared by the n_parallel sequences");
	if (cells_swa < cells)
		note(e, "sliding-window layers keep n_swa x n_parallel + n_ubatch cells");
	if (p->swa_full && a->sliding_window > 0 && a->swa_pattern > 0)
		note(e, "swa_full: sliding-window layers keep the whole context");
	if (a->kv_lora_rank > 0)
		note(e,
		     "MLA: the KV cache holds one latent row of kv_lora_rank + qk_rope_head_dim");
	if (a->family == MODEL_ENCODER)
		note(e, "encoder-only model: no KV cache");
	if (a->n_cross_attn_layers > 0)
		note(e,
		     "one image of max_num_tiles tiles per sequence: cross-attention layers cache "
		     "its vision tokens (tiles x ((image_size / patch_size)^2 + 1)), not the text "
		     "tokens; the request cannot say that there is no image");

	/* Layers to devices, as llama.cpp assigns them: the last n_gpu_layers of n_layer + 1
	 * (the output layer counts as the last), split in proportion to free memory. */
	ngl = n_dev == 0 ? 0 : (p->n_gpu_layers < 0 ? n_layer + 1 : p->n_gpu_layers);
	i_gpu_start = max64(n_layer - ngl, 0);
	act = min64(ngl, n_layer + 1);
	for (int i = 0; i < n_dev; i++) {
		if (dev[i].split < 0)
			return bad(out, "tensor_split");
		total_split += dev[i].split;
	}
	for (int i = 0; i < n_dev; i++) {
		double s = dev[i].split;
		if (total_split <= 0) {
			s = (double)(dev[i].free_bytes > 0 ? dev[i].free_bytes :
							     max64(dev[i].budget_bytes, 0));
		}
		cum[i] = (i ? cum[i - 1] : 0) + s;
	}
	if (n_dev > 0) {
		double tot = cum[n_dev - 1];
		for (int i = 0; i < n_dev; i++)
			cum[i] = tot > 0 ? cum[i] / tot : (double)(i + 1) / n_dev;
		if (total_split <= 0 && n_dev > 1)
			note(e, "layers split across GPUs in proportion to their free memory");
	}
	/* The layers below i_gpu_start stay on the host. One GPU holds every offloaded layer
	 * (its cum is 1, above every position); over several, a layer goes to the first device
	 * whose cumulative share exceeds its position: cum does not fall, so that device only
	 * moves forward with the layer. */
	if (n_dev == 1) {
		out_dev = n_layer >= i_gpu_start && n_layer - i_gpu_start < act ? 0 : -1;
	} else {
		for (int64_t il = i_gpu_start, first = 0; il <= n_layer; il++) {
			int d = -1;
			if (il - i_gpu_start < act) {
				double x = (double)(il - i_gpu_start) / (double)act;
				while (first < n_dev && !(cum[first] > x))
					first++;
				d = first < n_dev ? (int)first : n_dev - 1;
			}
			if (il < n_layer)
				layer_dev[il] = d;
			else
				out_dev = d;
		}
	}

	c = compute_parts(a, n_tok, cells, cells_swa, fa);
	for (int i = 0; i < n_dev; i++) {
		copy_name(e->per_device[i].device, dev[i].name);
		e->per_device[i].budget_bytes = dev[i].budget_bytes;
	}
	e->n_devices = n_dev;

	/* Weights and KV, layer by layer, where the layer lives. */
	e->weights_host_bytes = (int64_t)w->input_bytes;
	err_kind = kv_cell_bytes(a, p, &kv_cell);
	if (err_kind)
		return bad(out, err_kind == 1 ? "cache_type_k" : "cache_type_v");
	/* Layer by layer where the layer lives, summed over the runs of layers one place holds:
	 * the host's first host_end, then each GPU's consecutive share. Encoder-decoder models
	 * cache only the decoder's layers; cross-attention layers hold one image's vision tokens
	 * per sequence (layer_kv). */
	{
		const struct kv_rule kr = {a, has_swa, kv_cell, cells, cells_swa, p->n_parallel};
		const int64_t host_end = min64(i_gpu_start, n_layer);
		e->kv_cache_bytes = range_kv(&kr, 0, n_layer);
		e->weights_bytes = range_bytes(w->layer_bytes, 0, n_layer);
		if (host_end > 0) {
			e->weights_host_bytes += range_bytes(w->layer_bytes, 0, host_end);
			e->kv_host_bytes += range_kv(&kr, 0, host_end);
			host_layers = true;
		}
		for (int64_t lo = host_end, hi; lo < n_layer; lo = hi) {
			struct rf_mem_device_use *u =
				&e->per_device[n_dev == 1 ? 0 : layer_dev[lo]];
			hi = n_dev == 1 ? n_layer : lo + 1;
			while (hi < n_layer && layer_dev[hi] == layer_dev[lo])
				hi++;
			u->layers += hi - lo;
			u->weights_bytes += range_bytes(w->layer_bytes, lo, hi);
			u->kv_bytes += range_kv(&kr, lo, hi);
			e->n_gpu_layers += hi - lo;
			/* --n-cpu-moe: the layer runs on its GPU, its routed experts from host
			 * memory (llama.cpp places them with a buffer-type override). */
			for (int64_t il = lo; il < hi && il < p->n_cpu_moe; il++) {
				int64_t ex = (int64_t)w->layer_expert_bytes[il];
				if (ex <= 0)
					continue;
				u->weights_bytes -= ex;
				e->weights_host_bytes += ex;
				e->experts_host_bytes += ex;
				e->n_cpu_moe++;
				host_experts = true;
			}
		}
	}
	if (host_experts)
		note(e, "n_cpu_moe: the routed experts of the first layers stay in host memory; "
			"attention and the KV cache stay on the GPU");
	e->weights_bytes += (int64_t)w->input_bytes + (int64_t)w->output_bytes;
	if (out_dev < 0) {
		/* A tied head beside token_embd on the host is token_embd itself. */
		e->weights_host_bytes += (int64_t)(w->output_bytes - w->tied_head_bytes);
		e->weights_bytes -= (int64_t)w->tied_head_bytes;
	} else {
		e->per_device[out_dev].output = true;
		e->per_device[out_dev].weights_bytes += (int64_t)w->output_bytes;
		e->output_on_gpu = true;
	}
	host_weights_by_buffer(w, p, host ? host->repack_isa : RF_REPACK_NONE,
			       min64(i_gpu_start, n_layer), out_dev < 0, e);

	/* Compute buffers: one per GPU that holds layers, one on the host. */
	{
		int64_t layer_peak = max64(c.attn, c.ffn);
		bool weights_on_host = host_layers || host_experts || out_dev < 0;
		for (int i = 0; i < n_dev; i++) {
			struct rf_mem_device_use *u = &e->per_device[i];
			if (u->layers == 0 && !u->output)
				continue;
			u->compute_bytes = c.mask + max64(layer_peak, u->output ? c.out : 0);
			/* With layers left on the CPU, llama.cpp still runs batched matmuls on the
			 * GPU, copying the host weight in first. */
			if (weights_on_host) {
				u->compute_bytes += (int64_t)w->largest_matrix;
				note(e,
				     "partial offload: a host weight matrix is copied into the GPU "
				     "compute buffer for batched matmuls");
			}
			u->overhead_bytes = max64(dev[i].overhead_bytes, 0);
		}
		/* The masks' last reader is the last layer's attention: the allocator has
		 * freed them by the time the output layer runs, so the host's peak is the larger
		 * of a layer beside the masks and the logits (measured on the CPU backend:
		 * llama.cpp's host compute buffer stays at the logits' size from 2k to 8k
		 * tokens of context, where the masks would have added to it). */
		e->compute_host_bytes =
			c.input +
			max64(c.mask + (host_layers ? layer_peak : (host_experts ? c.ffn : 0)),
			      out_dev < 0 ? c.out : 0);
	}
	e->output_buffer_bytes =
		p->n_parallel * F32 * (a->family == MODEL_ENCODER ? a->hidden_size : a->vocab_size);

	/* Totals and the fit. */
	e->compute_bytes = e->compute_host_bytes;
	e->host_bytes = e->weights_host_bytes + e->kv_host_bytes + e->compute_host_bytes +
			e->output_buffer_bytes;
	for (int i = 0; i < n_dev; i++) {
		struct rf_mem_device_use *u = &e->per_device[i];
		u->bytes = u->weights_bytes + u->kv_bytes + u->compute_bytes + u->overhead_bytes;
		e->compute_bytes += u->compute_bytes;
		e->overhead_bytes += u->overhead_bytes;
	}
	e->total_bytes = e->weights_bytes + e->kv_cache_bytes + e->compute_bytes +
			 e->overhead_bytes + e->output_buffer_bytes;
	e->utilization = -1;
	e->fits = true;
	{
		/* The originals of repacked weights inside the mapped span are clean page cache
		 * llama.cpp read once: the kernel drops them before anything else, so they count in
		 * host_bytes but not against the budget. */
		int64_t host_need = e->host_bytes - e->host_reclaimable_bytes;
		if (e->host_reclaimable_bytes > 0)
			note(e,
			     "fit: the mapped originals of repacked weights are reclaimable page "
			     "cache, not counted against the host's budget");
		for (int i = 0; i < n_dev; i++) {
			const struct rf_mem_device_use *u = &e->per_device[i];
			if (dev[i].unified)
				host_need +=
					u->bytes; /* the same RAM: counted once, in the host pool */
			if (dev[i].budget_bytes < 0)
				continue;
			pools = true;
			if (u->bytes > dev[i].budget_bytes)
				e->fits = false;
			if (dev[i].budget_bytes > 0)
				e->utilization =
					dmax(e->utilization,
					     (double)u->bytes / (double)dev[i].budget_bytes);
			else if (u->bytes > 0)
				e->utilization = dmax(e->utilization, 2.0);
		}
		if (host && host->budget_bytes >= 0) {
			pools = true;
			if (host_need > host->budget_bytes)
				e->fits = false;
			if (host->budget_bytes > 0)
				e->utilization =
					dmax(e->utilization,
					     (double)host_need / (double)host->budget_bytes);
			else if (host_need > 0)
				e->utilization = dmax(e->utilization, 2.0);
		}
	}
	if (pools) {
		e->fit_band = rf_fit_band(e->utilization);
	} else {
		/* Nothing to fit into is not a fit: the answer must not say yes. */
		e->fits = false;
		e->fit_band = NULL;
		note(e, "no memory budget known: fit not judged, so fits is false (give the "
			"hardware's memory)");
	}
	if (e->overhead_bytes > 0)
		note(e, "runtime overhead per GPU (context, library handles): 256 MiB");
	return 0;
}

int rf_estimate_max_ctx(const struct model_arch *a, const struct rf_mem_weights *w,
			const struct rf_infer_params *p, const struct rf_mem_device *dev, int n_dev,
			const struct rf_mem_host *host, int64_t *n_ctx, struct rf_mem_estimate *out)
{
	struct rf_infer_params q = *p;
	struct rf_mem_estimate e;
	int64_t lo = 1, hi; /* in units of RF_KV_PAD cells */
	int rc;

	hi = (a->max_position_embeddings > 0 ? a->max_position_embeddings : (1 << 20)) / RF_KV_PAD;
	if (hi < 1)
		hi = 1;
	q.n_ctx = RF_KV_PAD;
	if ((rc = rf_estimate_inference(a, w, &q, dev, n_dev, host, out)) < 0)
		return rc;
	if (!out->fits) {
		*n_ctx = 0;
		return RF_E_RANGE;
	}
	/* Memory grows with n_ctx (cells, masks, scores), so the fitting sizes are a prefix. */
	while (lo < hi) {
		int64_t mid = lo + (hi - lo + 1) / 2;
		q.n_ctx = mid * RF_KV_PAD;
		if ((rc = rf_estimate_inference(a, w, &q, dev, n_dev, host, &e)) < 0)
			return rc;
		if (e.fits)
			lo = mid;
		else
			hi = mid - 1;
	}
	q.n_ctx = lo * RF_KV_PAD;
	if ((rc = rf_estimate_inference(a, w, &q, dev, n_dev, host, out)) < 0)
		return rc;
	*n_ctx = q.n_ctx;
	return 0;
}
