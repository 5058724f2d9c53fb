/*
 * Quantised checkpoint bytes (see hf_quant.h). The layouts are those the libraries write:
 *  - AutoAWQ (WQLinear_GEMM): qweight int32 [in, out/8], qzeros int32 [in/G, out/8], scales
 *    fp16 [in/G, out].
 *  - AutoGPTQ / GPTQModel (QuantLinear): qweight int32 [in*b/32, out], qzeros int32
 *    [in/G, out*b/32], scales fp16 [in/G, out], g_idx int32 [in]. Both libraries register
 *    qzeros and g_idx whatever sym and desc_act say, so both are always stored.
 *  - bitsandbytes Params4bit: weight uint8 [n/2, 1], absmax per block of 64 (uint8 with
 *    double quantisation, plus nested_absmax fp32 per 256 blocks and a 256-entry fp32
 *    nested_quant_map), quant_map fp32 [16]. Int8Params: int8 weight, SCB fp32 per row.
 *  - FP8 (DeepSeek-V3, Qwen3-FP8): e4m3 weights, weight_scale_inv fp32 per 128x128 block.
 *  - compressed-tensors: weight_packed int32 (pack-quantized, with weight_shape int64 [2]) or
 *    int8 / fp8 weights, weight_scale per group, channel or tensor in the model dtype,
 *    weight_zero_point for asymmetric schemes, input_scale for static activations.
 *  - MXFP4 (gpt-oss): experts' blocks uint8 [E, out, in/32, 16] and scales uint8 (e8m0)
 *    [E, out, in/32]; everything else bf16.
 */
#include "core/fit/hf_quant.h"

#include <string.h>

#include "core/err.h"

static const char *const method_names[HFQ_METHOD_COUNT] = {
	"none", "awq", "gptq", "bitsandbytes", "bitsandbytes", "fp8", "compressed-tensors", "mxfp4",
};

const char *hfq_method_name(int m)
{
	return m > 0 && m < HFQ_METHOD_COUNT ? method_names[m] : "none";
}

void hfq_config_init(struct hfq_config *q)
{
	memset(q, 0, sizeof(*q));
	q->dense_bytes = 2;
}

void hfq_config_method(struct hfq_config *q, int method)
{
	/* The layout is the method's; the dtype and the skip list stay. */
	q->method = method;
	q->float_weights = q->zero_point = q->g_idx = q->double_quant = false;
	q->experts_only = q->lm_head = q->input_scale = false;
	q->block[0] = q->block[1] = 0;
	q->scale_bytes = 2;
	switch (method) {
	case HFQ_AWQ:
		q->bits = 4;
		q->group_size = 128;
		q->zero_point = true;
		break;
	case HFQ_GPTQ:
		q->bits = 4;
		q->group_size = 128;
		q->zero_point = true;
		q->g_idx = true;
		break;
	case HFQ_BNB_4BIT:
		q->bits = 4;
		q->group_size = 64;
		q->scale_bytes = 4;
		break;
	case HFQ_BNB_8BIT:
		q->bits = 8;
		q->group_size = 0;
		q->scale_bytes = 4;
		break;
	case HFQ_FP8:
		q->bits = 8;
		q->float_weights = true;
		q->group_size = -1;
		q->scale_bytes = 4;
		break;
	case HFQ_COMPRESSED:
		q->bits = 4;
		q->group_size = 128;
		q->lm_head = true; /* every Linear is a target unless ignore names it */
		break;
	case HFQ_MXFP4:
		q->bits = 4;
		q->float_weights = true;
		q->group_size = 32;
		q->scale_bytes = 1;
		q->experts_only = true;
		break;
	default:
		break;
	}
}

static bool has(const char *s, const char *part)
{
	return strstr(s, part) != NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* The layer a module name is in ("model.layers.12.mlp" -> 12; "layers.*" or none -> -1). */
static int32_t rule_layer(const char *name)
{
	const char *p = strstr(name, "layers.");
	int64_t v = 0;
	int digits = 0;

	if (!p)
		return -1;
	for (p += 7; *p >= '0' && *p <= '9' && digits < 7; p++, digits++)
		v = v * 10 + (*p - '0');
	return digits > 0 && digits < 7 && (*p == '.' || *p == '\0') ? (int32_t)v : -1;
}

bool hfq_rule_parse(const char *name, struct hfq_rule *out)
{
	static const struct {
		const char *part;
		unsigned modules;
	} kinds[] = {
		/* The most specific names first: "shared_expert.down_proj" is a shared expert,
		 * "gate_proj" is not the router "mlp.gate". */
		{"lm_head", HFQ_M_LM_HEAD},
		{"embed_tokens", HFQ_M_EMBED},
		{"wte", HFQ_M_EMBED},
		{"shared_expert", HFQ_M_SHARED},
		{"experts", HFQ_M_EXPERTS},
		{"qkv_proj", HFQ_M_Q | HFQ_M_K | HFQ_M_V},
		{"q_a_proj", HFQ_M_Q},
		{"q_b_proj", HFQ_M_Q},
		{"kv_a_proj", HFQ_M_K | HFQ_M_V},
		{"kv_b_proj", HFQ_M_K | HFQ_M_V},
		{"q_proj", HFQ_M_Q},
		{"k_proj", HFQ_M_K},
		{"v_proj", HFQ_M_V},
		{"o_proj", HFQ_M_O},
		{"attn", HFQ_M_ATTN},
		{"gate_up_proj", HFQ_M_GATE | HFQ_M_UP},
		{"gate_proj", HFQ_M_GATE},
		{"up_proj", HFQ_M_UP},
		{"down_proj", HFQ_M_DOWN},
	};
	struct hfq_rule r = {.layer = rule_layer(name), .modules = 0};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]) && !r.modules; i++)
		if (has(name, kinds[i].part))
			r.modules = kinds[i].modules;
	/* Routers ("mlp.gate", "mlp.router") are never quantised here: nothing to skip. */
	if (!r.modules && has(name, "mlp") && !has(name, "router") && !ends_with(name, "gate") &&
	    !ends_with(name, "gate$"))
		r.modules = HFQ_M_MLP;
	if (!r.modules && r.layer >= 0 && !has(name, "router") && !has(name, "gate") &&
	    !has(name, "norm"))
		r.modules = HFQ_M_ATTN | HFQ_M_MLP; /* a whole layer */
	if (!r.modules)
		return false;
	*out = r;
	return true;
}

/* The module kinds of one of core/fit/model.c's tensors (GGUF names); 0 for those that are not a
 * linear projection of a layer or the LM head or an embedding. */
static unsigned tensor_kinds(const struct rf_tensor *t)
{
	const char *n = t->name;
	unsigned k = 0;

	if (strcmp(n, "output.weight") == 0)
		return HFQ_M_LM_HEAD;
	if (has(n, "token_embd"))
		return HFQ_M_EMBED;
	if (has(n, "attn_qkv."))
		k = HFQ_M_ATTN | HFQ_M_Q | HFQ_M_K | HFQ_M_V;
	else if (has(n, "attn_q.") || has(n, "attn_q_a.") || has(n, "attn_q_b."))
		k = HFQ_M_ATTN | HFQ_M_Q;
	else if (has(n, "attn_k.") || has(n, "attn_k_b."))
		k = HFQ_M_ATTN | HFQ_M_K;
	else if (has(n, "attn_v.") || has(n, "attn_v_b."))
		k = HFQ_M_ATTN | HFQ_M_V;
	else if (has(n, "attn_kv_a_mqa.") || has(n, "attn_kv_b."))
		k = HFQ_M_ATTN | HFQ_M_K | HFQ_M_V;
	else if (has(n, "attn_output."))
		k = HFQ_M_ATTN | HFQ_M_O;
	else if (has(n, "ffn_gate.") || has(n, "ffn_gate_exps.") || has(n, "ffn_gate_shexp."))
		k = HFQ_M_MLP | HFQ_M_GATE;
	else if (has(n, "ffn_up.") || has(n, "ffn_up_exps.") || has(n, "ffn_up_shexp."))
		k = HFQ_M_MLP | HFQ_M_UP;
	else if (has(n, "ffn_down.") || has(n, "ffn_down_exps.") || has(n, "ffn_down_shexp."))
		k = HFQ_M_MLP | HFQ_M_DOWN;
	if (k && has(n, "_exps."))
		k |= HFQ_M_EXPERTS;
	if (k && has(n, "_shexp."))
		k |= HFQ_M_SHARED;
	return k;
}

/* Returns true when the checkpoint stores t quantised. */
static bool quantized(const struct hfq_config *q, const struct rf_tensor *t)
{
	unsigned k;

	if (q->method == HFQ_NONE || !rf_tensor_quantizable(t) || t->ne[1] < 2)
		return false;
	k = tensor_kinds(t);
	if (!k || k == HFQ_M_EMBED || (k == HFQ_M_LM_HEAD && !q->lm_head))
		return false;
	if (q->experts_only && !(k & HFQ_M_EXPERTS))
		return false;
	for (int i = 0; i < q->n_skip && i < HFQ_MAX_RULES; i++) {
		const struct hfq_rule *r = &q->skip[i];
		bool in_layer = r->layer < 0 || r->layer == t->layer;
		/* A rule naming a projection ("q_proj") skips it wherever it is; one naming the
		 * experts skips only experts. */
		if (in_layer && (r->modules & k) &&
		    (!(r->modules & (HFQ_M_EXPERTS | HFQ_M_SHARED)) ||
		     (r->modules & k & (HFQ_M_EXPERTS | HFQ_M_SHARED))))
			return false;
	}
	return true;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
	return (a + b - 1) / b;
}

/* Adds the bytes of quantised tensor t (rows of in = ne[0] weights) to b. */
static void add_quantized(const struct hfq_config *q, const struct rf_tensor *t,
			  struct hfq_bytes *b)
{
	const int64_t in = t->ne[0], out = t->ne[1], mats = t->ne[2] * t->ne[3];
	const int64_t rows = out * mats, n = in * rows;
	int64_t scales = 0, extra = 0, nscales;

	b->quantized += ceil_div(n * q->bits, 8);
	b->quantized_params += n;
	switch (q->method) {
	case HFQ_BNB_4BIT: {
		int64_t blocks = ceil_div(n, 64);
		extra = 16 * 4; /* quant_map */
		if (q->double_quant)
			extra += blocks + ceil_div(blocks, 256) * 4 + 256 * 4;
		else
			extra += blocks * 4;
		break;
	}
	case HFQ_BNB_8BIT:
		extra = rows * 4; /* SCB */
		break;
	default:
		if (q->block[0] > 0 && q->block[1] > 0)
			nscales = ceil_div(out, q->block[0]) * ceil_div(in, q->block[1]) * mats;
		else if (q->group_size > 0)
			nscales = ceil_div(in, q->group_size) * rows;
		else if (q->group_size == 0)
			nscales = rows;
		else
			nscales = mats;
		scales = nscales * q->scale_bytes;
		if (q->zero_point)
			extra += ceil_div(nscales * q->bits, 8);
		if (q->g_idx)
			extra += in * 4 * mats;
		if (q->input_scale)
			extra += 4 * mats;
		if (q->method == HFQ_COMPRESSED && q->bits < 8)
			extra += 16 * mats; /* weight_shape */
		break;
	}
	b->scales += scales + extra;
}

int hfq_checkpoint_bytes(const struct model_arch *a, const struct hfq_config *q,
			 struct hfq_bytes *out)
{
	struct rf_tensor_list l;
	struct hfq_bytes b = {0};
	int rc;

	if (q->method != HFQ_NONE &&
	    (q->bits < 1 || q->bits > 8 || q->group_size < -1 || q->scale_bytes < 1 ||
	     q->scale_bytes > 4 || q->block[0] < 0 || q->block[1] < 0))
		return RF_E_INVALID_VALUE;
	if (q->dense_bytes < 1 || q->dense_bytes > 4)
		return RF_E_INVALID_VALUE;
	rc = model_tensors(a, &l);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < l.n; i++) {
		const struct rf_tensor *t = &l.t[i];
		int64_t n = rf_tensor_nelements(t);

		b.params += n;
		if (quantized(q, t))
			add_quantized(q, t, &b);
		else
			b.dense += n * q->dense_bytes;
	}
	rf_tensor_list_free(&l);
	b.total = b.quantized + b.scales + b.dense;
	*out = b;
	return 0;
}
