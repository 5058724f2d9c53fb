/*
 * GGUF tensor types and llama-quantize's mixes (see quant.h). The type table carries ggml's
 * block layouts (bytes per block of 32 or 256 weights). The mix rules below follow the
 * decisions llama.cpp's quantizer makes for each tensor category; they are restated here as
 * rules over our own tensor descriptions, not translated code, and each one says what it does.
 */
#include "core/fit/quant.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/checked.h"
#include "core/err.h"

static const struct rf_gtype_info gtypes[RF_GT_COUNT] = {
	[RF_GT_F32] = {"f32", 1, 4, false},
	[RF_GT_F16] = {"f16", 1, 2, false},
	[RF_GT_Q4_0] = {"q4_0", 32, 18, true},
	[RF_GT_Q4_1] = {"q4_1", 32, 20, true},
	[RF_GT_Q5_0] = {"q5_0", 32, 22, true},
	[RF_GT_Q5_1] = {"q5_1", 32, 24, true},
	[RF_GT_Q8_0] = {"q8_0", 32, 34, true},
	[RF_GT_Q8_1] = {"q8_1", 32, 36, true},
	[RF_GT_Q2_K] = {"q2_K", 256, 84, true},
	[RF_GT_Q3_K] = {"q3_K", 256, 110, true},
	[RF_GT_Q4_K] = {"q4_K", 256, 144, true},
	[RF_GT_Q5_K] = {"q5_K", 256, 176, true},
	[RF_GT_Q6_K] = {"q6_K", 256, 210, true},
	[RF_GT_Q8_K] = {"q8_K", 256, 292, true},
	[RF_GT_IQ2_XXS] = {"iq2_xxs", 256, 66, true},
	[RF_GT_IQ2_XS] = {"iq2_xs", 256, 74, true},
	[RF_GT_IQ3_XXS] = {"iq3_xxs", 256, 98, true},
	[RF_GT_IQ1_S] = {"iq1_s", 256, 50, true},
	[RF_GT_IQ4_NL] = {"iq4_nl", 32, 18, true},
	[RF_GT_IQ3_S] = {"iq3_s", 256, 110, true},
	[RF_GT_IQ2_S] = {"iq2_s", 256, 82, true},
	[RF_GT_IQ4_XS] = {"iq4_xs", 256, 136, true},
	[RF_GT_I8] = {"i8", 1, 1, false},
	[RF_GT_I16] = {"i16", 1, 2, false},
	[RF_GT_I32] = {"i32", 1, 4, false},
	[RF_GT_I64] = {"i64", 1, 8, false},
	[RF_GT_F64] = {"f64", 1, 8, false},
	[RF_GT_IQ1_M] = {"iq1_m", 256, 56, true},
	[RF_GT_BF16] = {"bf16", 1, 2, false},
	[RF_GT_TQ1_0] = {"tq1_0", 256, 54, true},
	[RF_GT_TQ2_0] = {"tq2_0", 256, 66, true},
	[RF_GT_MXFP4] = {"mxfp4", 32, 17, true},
};

const struct rf_gtype_info *rf_gtype(int t)
{
	if (t < 0 || t >= RF_GT_COUNT || !gtypes[t].name)
		return NULL;
	return &gtypes[t];
}

int rf_gtype_from_name(const char *name)
{
	if (!name)
		return -1;
	for (int t = 0; t < RF_GT_COUNT; t++)
		if (gtypes[t].name && strcasecmp(gtypes[t].name, name) == 0)
			return t;
	return -1;
}

double rf_gtype_bpw(int t)
{
	const struct rf_gtype_info *g = rf_gtype(t);

	return g ? (double)g->bytes * 8.0 / (double)g->block : 0.0;
}

int rf_gtype_row_bytes(int t, int64_t ne0, uint64_t *out)
{
	const struct rf_gtype_info *g = rf_gtype(t);
	uint64_t blocks;

	if (!g || ne0 < 0 || ne0 % g->block != 0)
		return RF_E_INVALID_VALUE;
	blocks = (uint64_t)ne0 / (uint64_t)g->block;
	if (blocks > UINT64_MAX / (uint64_t)g->bytes)
		return RF_E_TOO_LARGE;
	*out = blocks * (uint64_t)g->bytes;
	return 0;
}

/* ---- file types ------------------------------------------------------------------------ */

static const struct {
	int ft;
	const char *name;
	int type; /* default tensor type */
	bool imatrix;
} ftypes[] = {
	{RF_FT_F32, "F32", RF_GT_F32, false},
	{RF_FT_F16, "F16", RF_GT_F16, false},
	{RF_FT_BF16, "BF16", RF_GT_BF16, false},
	{RF_FT_Q8_0, "Q8_0", RF_GT_Q8_0, false},
	{RF_FT_Q6_K, "Q6_K", RF_GT_Q6_K, false},
	{RF_FT_Q5_K_M, "Q5_K_M", RF_GT_Q5_K, false},
	{RF_FT_Q5_K_S, "Q5_K_S", RF_GT_Q5_K, false},
	{RF_FT_Q5_1, "Q5_1", RF_GT_Q5_1, false},
	{RF_FT_Q5_0, "Q5_0", RF_GT_Q5_0, false},
	{RF_FT_Q4_K_M, "Q4_K_M", RF_GT_Q4_K, false},
	{RF_FT_Q4_K_S, "Q4_K_S", RF_GT_Q4_K, false},
	{RF_FT_Q4_1, "Q4_1", RF_GT_Q4_1, false},
	{RF_FT_Q4_0, "Q4_0", RF_GT_Q4_0, false},
	{RF_FT_IQ4_NL, "IQ4_NL", RF_GT_IQ4_NL, false},
	{RF_FT_IQ4_XS, "IQ4_XS", RF_GT_IQ4_XS, false},
	{RF_FT_Q3_K_L, "Q3_K_L", RF_GT_Q3_K, false},
	{RF_FT_Q3_K_M, "Q3_K_M", RF_GT_Q3_K, false},
	{RF_FT_Q3_K_S, "Q3_K_S", RF_GT_Q3_K, false},
	{RF_FT_IQ3_M, "IQ3_M", RF_GT_IQ3_S, false},
	{RF_FT_IQ3_S, "IQ3_S", RF_GT_IQ3_S, false},
	{RF_FT_IQ3_XS, "IQ3_XS", RF_GT_IQ3_S, false},
	{RF_FT_IQ3_XXS, "IQ3_XXS", RF_GT_IQ3_XXS, true},
	{RF_FT_Q2_K, "Q2_K", RF_GT_Q2_K, false},
	{RF_FT_Q2_K_S, "Q2_K_S", RF_GT_Q2_K, true},
	{RF_FT_IQ2_M, "IQ2_M", RF_GT_IQ2_S, true},
	{RF_FT_IQ2_S, "IQ2_S", RF_GT_IQ2_XS, true},
	{RF_FT_IQ2_XS, "IQ2_XS", RF_GT_IQ2_XS, true},
	{RF_FT_IQ2_XXS, "IQ2_XXS", RF_GT_IQ2_XXS, true},
	{RF_FT_IQ1_M, "IQ1_M", RF_GT_IQ1_M, true},
	{RF_FT_IQ1_S, "IQ1_S", RF_GT_IQ1_S, true},
	{RF_FT_TQ2_0, "TQ2_0", RF_GT_TQ2_0, false},
	{RF_FT_TQ1_0, "TQ1_0", RF_GT_TQ1_0, false},
	{RF_FT_MXFP4_MOE, "MXFP4_MOE", RF_GT_MXFP4, false},
};
#define N_FTYPES (sizeof(ftypes) / sizeof(ftypes[0]))

/* Names llama-quantize also accepts for a scheme. */
static const struct {
	const char *alias;
	int ft;
} ftype_aliases[] = {
	{"Q3_K", RF_FT_Q3_K_M},
	{"Q4_K", RF_FT_Q4_K_M},
	{"Q5_K", RF_FT_Q5_K_M},
	{"MXFP4", RF_FT_MXFP4_MOE},
};

/* Unsloth's dynamic quants, as its repositories name them, and the scheme each starts from. */
static const struct {
	int ft;
	const char *name;
} ud_names[] = {
	{RF_FT_Q8_0, "UD-Q8_K_XL"},    {RF_FT_Q6_K, "UD-Q6_K_XL"},    {RF_FT_Q5_K_M, "UD-Q5_K_XL"},
	{RF_FT_Q4_K_M, "UD-Q4_K_XL"},  {RF_FT_Q3_K_M, "UD-Q3_K_XL"},  {RF_FT_Q2_K, "UD-Q2_K_XL"},
	{RF_FT_IQ4_XS, "UD-IQ4_XS"},   {RF_FT_IQ3_XXS, "UD-IQ3_XXS"}, {RF_FT_IQ2_M, "UD-IQ2_M"},
	{RF_FT_IQ2_XXS, "UD-IQ2_XXS"}, {RF_FT_IQ1_M, "UD-IQ1_M"},     {RF_FT_IQ1_S, "UD-IQ1_S"},
};
#define N_UD (sizeof(ud_names) / sizeof(ud_names[0]))

static bool ends_with_ci(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* The base scheme of ft: ft itself, or the scheme a UD quant starts from; -1 for a flag on a
 * scheme Unsloth does not publish. */
static int base_ft(int ft)
{
	if (!(ft & RF_FT_UD))
		return ft;
	for (size_t i = 0; i < N_UD; i++)
		if ((ft & ~RF_FT_UD) == ud_names[i].ft)
			return ud_names[i].ft;
	return -1;
}

int rf_ftype_from_name(const char *name)
{
	if (!name)
		return -1;
	for (size_t i = 0; i < N_UD; i++)
		if (strcasecmp(ud_names[i].name, name) == 0 ||
		    (ends_with_ci(ud_names[i].name, "_XL") &&
		     strcasecmp(ud_names[i].name + 3, name) == 0)) /* "Q4_K_XL" */
			return ud_names[i].ft | RF_FT_UD;
	for (size_t i = 0; i < N_FTYPES; i++)
		if (strcasecmp(ftypes[i].name, name) == 0)
			return ftypes[i].ft;
	for (size_t i = 0; i < sizeof(ftype_aliases) / sizeof(ftype_aliases[0]); i++)
		if (strcasecmp(ftype_aliases[i].alias, name) == 0)
			return ftype_aliases[i].ft;
	return -1;
}

const char *rf_ftype_name(int ft)
{
	for (size_t i = 0; (ft & RF_FT_UD) && i < N_UD; i++)
		if ((ft & ~RF_FT_UD) == ud_names[i].ft)
			return ud_names[i].name;
	for (size_t i = 0; i < N_FTYPES; i++)
		if (ftypes[i].ft == ft)
			return ftypes[i].name;
	return NULL;
}

int rf_ftype_default_type(int ft)
{
	ft = base_ft(ft);
	for (size_t i = 0; i < N_FTYPES; i++)
		if (ftypes[i].ft == ft)
			return ftypes[i].type;
	return -1;
}

bool rf_ftype_needs_imatrix(int ft)
{
	if ((ft & RF_FT_UD) && base_ft(ft) >= 0)
		return true; /* Unsloth calibrates every dynamic quant */
	for (size_t i = 0; i < N_FTYPES; i++)
		if (ftypes[i].ft == ft)
			return ftypes[i].imatrix;
	return false;
}

size_t rf_ftype_list(int *out, size_t cap)
{
	for (size_t i = 0; i < N_FTYPES && i < cap; i++)
		out[i] = ftypes[i].ft;
	return N_FTYPES;
}

/* ---- tensors --------------------------------------------------------------------------- */

static bool has(const char *s, const char *sub)
{
	return strstr(s, sub) != NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

/* Parses "blk.N." after an optional "enc." or "dec."; returns N or -1. */
static int32_t layer_of(const char *name)
{
	const char *p = name;
	int64_t v = 0;
	int digits = 0;

	if (strncmp(p, "enc.", 4) == 0 || strncmp(p, "dec.", 4) == 0)
		p += 4;
	if (strncmp(p, "blk.", 4) != 0)
		return -1;
	p += 4;
	while (*p >= '0' && *p <= '9' && digits < 7) {
		v = v * 10 + (*p - '0');
		p++;
		digits++;
	}
	if (digits == 0 || *p != '.')
		return -1;
	return (int32_t)v;
}

void rf_tensor_classify(struct rf_tensor *t)
{
	const char *n = t->name;
	int32_t layer = layer_of(n);

	t->expert = has(n, "_exps.");
	if (layer >= 0)
		t->layer = layer;
	else if (strcmp(n, "token_embd.weight") == 0 ||
		 strcmp(n, "per_layer_token_embd.weight") == 0 ||
		 strcmp(n, "token_types.weight") == 0 || strcmp(n, "position_embd.weight") == 0 ||
		 strncmp(n, "token_embd_norm.", 16) == 0)
		t->layer = RF_LAYER_INPUT;
	else
		t->layer = RF_LAYER_OUTPUT;

	/* The categories, tested in the order llama-quantize tests them (by substring). */
	if (strcmp(n, "output.weight") == 0)
		t->cat = RF_TC_OUTPUT;
	else if (strcmp(n, "token_embd.weight") == 0 ||
		 strcmp(n, "per_layer_token_embd.weight") == 0)
		t->cat = RF_TC_TOKEN_EMBD;
	else if (has(n, "attn_qkv.weight"))
		t->cat = RF_TC_ATTN_QKV;
	else if (has(n, "attn_kv_b.weight"))
		t->cat = RF_TC_ATTN_KV_B;
	else if (has(n, "attn_v.weight"))
		t->cat = RF_TC_ATTN_V;
	else if (has(n, "attn_k.weight"))
		t->cat = RF_TC_ATTN_K;
	else if (has(n, "attn_q.weight"))
		t->cat = RF_TC_ATTN_Q;
	else if (has(n, "attn_output.weight"))
		t->cat = RF_TC_ATTN_OUTPUT;
	else if (has(n, "ffn_up"))
		t->cat = RF_TC_FFN_UP;
	else if (has(n, "ffn_gate"))
		t->cat = RF_TC_FFN_GATE;
	else if (has(n, "ffn_down"))
		t->cat = RF_TC_FFN_DOWN;
	else
		t->cat = RF_TC_OTHER;
}

int64_t rf_tensor_nelements(const struct rf_tensor *t)
{
	uint64_t n = 1;

	for (int i = 0; i < RF_TENSOR_MAX_DIMS; i++)
		if (t->ne[i] < 0 || rf_ckd_mul_u64(&n, n, (uint64_t)t->ne[i]) < 0 ||
		    n > (uint64_t)INT64_MAX)
			return -1;
	return (int64_t)n;
}

int rf_tensor_set_bytes(struct rf_tensor *t)
{
	uint64_t row, rows = 1;
	int rc;

	if (rf_tensor_nelements(t) < 0)
		return RF_E_TOO_LARGE;
	rc = rf_gtype_row_bytes(t->type, t->ne[0], &row);
	if (rc < 0)
		return rc;
	for (int i = 1; i < RF_TENSOR_MAX_DIMS; i++)
		rows *= (uint64_t)t->ne[i]; /* bounded by the element count checked above */
	if (rf_ckd_mul_u64(&t->bytes, row, rows) < 0)
		return RF_E_TOO_LARGE;
	return 0;
}

/* ggml_n_dims: the dimensions up to the last one larger than 1. */
static int n_dims_eff(const struct rf_tensor *t)
{
	for (int i = RF_TENSOR_MAX_DIMS - 1; i >= 1; i--)
		if (t->ne[i] > 1)
			return i + 1;
	return 1;
}

bool rf_tensor_quantizable(const struct rf_tensor *t)
{
	const char *n = t->name;

	if (n_dims_eff(t) < 2 || !ends_with(n, "weight"))
		return false;
	/* Norms, routers and the small or position-like tensors stay as converted. */
	return !has(n, "_norm.weight") && !has(n, "ffn_gate_inp.weight") &&
	       strcmp(n, "position_embd.weight") != 0 && strcmp(n, "token_types.weight") != 0 &&
	       !has(n, "attn_rel_b.weight") && !has(n, "ssm_conv1d") && !has(n, "altup") &&
	       !has(n, "laurel") && !has(n, "per_layer_model_proj") && !has(n, ".position_embd") &&
	       !has(n, "time_mix_");
}

/* ---- the mix ---------------------------------------------------------------------------- */

struct qstate {
	const struct rf_quant_model *m;
	int ft;
	bool tied;
	int64_t n_attn_v, i_attn_v;
	int64_t i_ffn_down, i_ffn_gate, i_ffn_up;
};

/* The layers llama.cpp's _M mixes give more bits: the first and last eighth, and every third
 * layer in between. */
static bool more_bits(int64_t i, int64_t n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static bool ft_in(int ft, const int *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == ft)
			return true;
	return false;
}
#define FT_IN(ft, ...)                                                                             \
	ft_in((ft), (const int[]){__VA_ARGS__}, sizeof((int[]){__VA_ARGS__}) / sizeof(int))

static bool is_attn_v_like(enum rf_tcat c)
{
	return c == RF_TC_ATTN_V || c == RF_TC_ATTN_QKV || c == RF_TC_ATTN_KV_B;
}

/* The layer a per-layer rule looks at: the running count for dense models, the layer in the
 * name for MoE models (whose expert tensors are not in layer order). */
static int64_t rule_layer(const struct qstate *q, int64_t counter, const struct rf_tensor *t)
{
	if (q->m->n_expert > 1 && t->layer >= 0)
		return t->layer;
	return counter;
}

/* The type llama-quantize picks for quantizable tensor t in scheme q->ft, before fallbacks. */
static int mix_type(struct qstate *q, const struct rf_tensor *t, int type)
{
	const struct rf_quant_model *m = q->m;
	const int ft = q->ft;
	const int64_t n_layer = m->n_layer > 0 ? m->n_layer : 1;
	const int64_t n_gqa = m->n_head_kv > 0 ? m->n_head / m->n_head_kv : 1;
	const enum rf_tcat c = t->cat;
	const bool iq12 = FT_IN(ft, RF_FT_IQ2_XXS, RF_FT_IQ2_XS, RF_FT_IQ1_S, RF_FT_IQ2_S,
				RF_FT_IQ2_M, RF_FT_IQ1_M);
	const bool iq2sm = ft == RF_FT_IQ2_S || ft == RF_FT_IQ2_M;

	if (c == RF_TC_OUTPUT || (q->tied && c == RF_TC_TOKEN_EMBD)) {
		/* The output matrix (or a tied embedding that serves as it) gets Q6_K, Q8_0 when
		 * its rows do not divide into blocks, Q5_K in the tiniest schemes. */
		const struct rf_gtype_info *g = rf_gtype(type);
		if (ft == RF_FT_MXFP4_MOE || !g || t->ne[0] % g->block != 0)
			return RF_GT_Q8_0;
		if (FT_IN(ft, RF_FT_IQ2_XXS, RF_FT_IQ2_XS, RF_FT_IQ3_XXS, RF_FT_IQ1_S, RF_FT_IQ2_S,
			  RF_FT_IQ2_M, RF_FT_IQ1_M))
			return RF_GT_Q5_K;
		return type != RF_GT_Q8_0 ? RF_GT_Q6_K : type;
	}
	if (ft == RF_FT_MXFP4_MOE) /* experts in MXFP4, everything else in Q8_0 */
		return t->ne[2] > 1 ? RF_GT_MXFP4 : RF_GT_Q8_0;
	if (c == RF_TC_TOKEN_EMBD) {
		if (FT_IN(ft, RF_FT_IQ2_XXS, RF_FT_IQ2_XS, RF_FT_IQ1_S, RF_FT_IQ1_M))
			return RF_GT_Q2_K;
		if (iq2sm || ft == RF_FT_IQ3_XXS)
			return RF_GT_IQ3_S;
		if (ft == RF_FT_TQ1_0 || ft == RF_FT_TQ2_0)
			return RF_GT_Q4_K;
		return type;
	}
	if (iq12) {
		/* The 1-2 bit schemes: attention values and the first ffn_down layers lifted. */
		if (is_attn_v_like(c)) {
			q->i_attn_v++;
			if (n_gqa >= 4 || m->n_expert >= 4)
				return RF_GT_Q4_K;
			return iq2sm ? RF_GT_IQ3_S : RF_GT_Q2_K;
		}
		if (m->n_expert == 8 && c == RF_TC_ATTN_K)
			return RF_GT_Q4_K;
		if (c == RF_TC_FFN_DOWN) {
			int64_t i = q->i_ffn_down++;
			if (i < n_layer / 8)
				return iq2sm ? RF_GT_IQ3_S : RF_GT_Q2_K;
			return type;
		}
		if (c == RF_TC_ATTN_OUTPUT) {
			if (m->n_expert == 8)
				return RF_GT_Q5_K;
			if (ft == RF_FT_IQ1_S || ft == RF_FT_IQ1_M)
				return RF_GT_IQ2_XXS;
			if (iq2sm)
				return RF_GT_IQ3_S;
		}
		return type;
	}
	if (is_attn_v_like(c)) {
		/* attn_v (and fused qkv, MLA's kv_b) is small and sensitive: most schemes lift it. */
		int64_t i = q->i_attn_v;
		if (ft == RF_FT_Q2_K)
			type = n_gqa >= 4 ? RF_GT_Q4_K : RF_GT_Q3_K;
		else if (ft == RF_FT_Q2_K_S && n_gqa >= 4)
			type = RF_GT_Q4_K;
		else if (ft == RF_FT_IQ3_XXS)
			type = n_gqa >= 4 ? RF_GT_Q4_K :
					    (!m->imatrix ? RF_GT_IQ3_S : RF_GT_IQ3_XXS);
		else if ((ft == RF_FT_IQ3_XS || ft == RF_FT_IQ3_S) && n_gqa >= 4)
			type = RF_GT_Q4_K;
		else if (ft == RF_FT_IQ3_M)
			type = RF_GT_Q4_K;
		else if (ft == RF_FT_Q3_K_M)
			type = i < 2 ? RF_GT_Q5_K : RF_GT_Q4_K;
		else if (ft == RF_FT_Q3_K_L)
			type = RF_GT_Q5_K;
		else if ((ft == RF_FT_IQ4_NL || ft == RF_FT_IQ4_XS) && n_gqa >= 4)
			type = RF_GT_Q5_K;
		else if ((ft == RF_FT_Q4_K_M || ft == RF_FT_Q5_K_M) && more_bits(i, q->n_attn_v))
			type = RF_GT_Q6_K;
		else if (ft == RF_FT_Q4_K_S && i < 4)
			type = RF_GT_Q5_K;
		/* 70B models share one attn_v among 8 heads: it is tiny, so it gets more bits. */
		if (m->is_70b && (type == RF_GT_Q3_K || type == RF_GT_Q4_K))
			type = RF_GT_Q5_K;
		if (m->n_expert == 8)
			type = RF_GT_Q8_0;
		q->i_attn_v++;
		return type;
	}
	if (c == RF_TC_ATTN_K) {
		if (m->n_expert == 8)
			return RF_GT_Q8_0;
		if (ft == RF_FT_IQ3_XS)
			return RF_GT_IQ3_XXS;
		if (ft == RF_FT_IQ3_XXS)
			return RF_GT_IQ2_S;
		return type;
	}
	if (c == RF_TC_ATTN_Q) {
		if (ft == RF_FT_IQ3_XS)
			return RF_GT_IQ3_XXS;
		if (ft == RF_FT_IQ3_XXS)
			return RF_GT_IQ2_S;
		return type;
	}
	if (c == RF_TC_FFN_DOWN) {
		/* ffn_down: more bits on the first layers, or on the more_bits() layers in _M. */
		int64_t i = rule_layer(q, q->i_ffn_down, t);
		q->i_ffn_down++;
		if (ft == RF_FT_Q2_K)
			type = RF_GT_Q3_K;
		else if (ft == RF_FT_Q2_K_S) {
			if (i < n_layer / 8)
				type = RF_GT_Q4_K;
		} else if (ft == RF_FT_IQ3_XXS && !m->imatrix)
			type = i < n_layer / 8 ? RF_GT_Q4_K : RF_GT_Q3_K;
		else if (ft == RF_FT_Q3_K_M)
			type = i < n_layer / 16 ? RF_GT_Q5_K : RF_GT_Q4_K;
		else if (ft == RF_FT_IQ3_M &&
			 (i < n_layer / 8 || (m->n_expert == 8 && more_bits(i, n_layer))))
			type = RF_GT_Q4_K;
		else if (ft == RF_FT_Q3_K_L)
			type = RF_GT_Q5_K;
		else if (ft == RF_FT_Q4_K_M) {
			if (more_bits(i, n_layer))
				type = RF_GT_Q6_K;
		} else if (i < n_layer / 8 && (ft == RF_FT_IQ4_NL || ft == RF_FT_IQ4_XS) &&
			   !m->imatrix)
			type = RF_GT_Q5_K;
		else if (ft == RF_FT_Q5_K_M && more_bits(i, n_layer))
			type = RF_GT_Q6_K;
		else if (ft == RF_FT_Q4_K_S && i < n_layer / 8)
			type = RF_GT_Q5_K;
		else if ((ft == RF_FT_Q4_0 || ft == RF_FT_Q5_0) && m->imatrix && i < n_layer / 8)
			type = ft == RF_FT_Q4_0 ? RF_GT_Q4_1 : RF_GT_Q5_1;
		return type;
	}
	if (c == RF_TC_ATTN_OUTPUT) {
		if (m->n_expert == 8) {
			if (FT_IN(ft, RF_FT_Q2_K, RF_FT_IQ3_XS, RF_FT_IQ3_XXS, RF_FT_Q3_K_S,
				  RF_FT_Q3_K_M, RF_FT_IQ4_NL, RF_FT_Q4_K_S, RF_FT_Q4_K_M,
				  RF_FT_IQ3_S, RF_FT_IQ3_M, RF_FT_IQ4_XS))
				return RF_GT_Q5_K;
			return type;
		}
		if (ft == RF_FT_Q2_K)
			return RF_GT_Q3_K;
		if (ft == RF_FT_IQ3_XXS)
			return RF_GT_IQ3_S;
		if (ft == RF_FT_Q3_K_M || ft == RF_FT_IQ3_M)
			return RF_GT_Q4_K;
		if (ft == RF_FT_Q3_K_L)
			return RF_GT_Q5_K;
		return type;
	}
	if (c == RF_TC_FFN_GATE || c == RF_TC_FFN_UP) {
		/* IQ3_XS drops the middle layers' gate and up to IQ3_XXS. */
		int64_t *ctr = c == RF_TC_FFN_GATE ? &q->i_ffn_gate : &q->i_ffn_up;
		int64_t i = rule_layer(q, *ctr, t);
		(*ctr)++;
		if (ft == RF_FT_IQ3_XS && i >= n_layer / 8 && i < 7 * n_layer / 8)
			return RF_GT_IQ3_XXS;
		return type;
	}
	return type;
}

/* Unsloth's dynamic mix over llama-quantize's (RF_FT_UD). The routed experts, the bulk of an
 * MoE model, take the scheme's own type: no _M lift on some layers in the 3-6 bit schemes;
 * in the 1-2 bit ones their down projection keeps llama-quantize's lift of the first layers
 * (the blog's "2.06/1.56bit" beside IQ1_S experts), all of it at IQ2_XXS beside IQ1_M ones
 * ("2.06bit"). The embeddings and the output take 6 bits or more; in MoE models everything
 * else (attention, shared experts, the dense layers) takes 6 bits when the scheme has 4 or
 * more, 4 bits below that ("4 or 6bit"). Dense models keep llama-quantize's mix elsewhere. */
static int ud_type(const struct qstate *q, const struct rf_tensor *t, int type, int def)
{
	const double bits = rf_gtype_bpw(def);
	int floor;

	if (t->expert && t->ne[2] > 1) {
		if (t->cat != RF_TC_FFN_DOWN || bits >= 3)
			return def;
		return def == RF_GT_IQ1_M ? RF_GT_IQ2_XXS : type;
	}
	if (t->cat == RF_TC_TOKEN_EMBD || t->cat == RF_TC_OUTPUT)
		floor = RF_GT_Q6_K;
	else if (q->m->n_expert > 1)
		floor = bits >= 4 ? RF_GT_Q6_K : RF_GT_Q4_K;
	else
		return type;
	return rf_gtype_bpw(type) >= rf_gtype_bpw(floor) ? type : floor;
}

/* A row that does not divide into the chosen type's blocks gets a type with smaller blocks,
 * and F16 when even those do not fit. Returns -1 where llama-quantize has no fallback. */
static int fallback_type(int type, int64_t ncols)
{
	const struct rf_gtype_info *g = rf_gtype(type);
	int to;

	if (!g)
		return -1;
	if (ncols % g->block == 0)
		return type;
	switch (type) {
	case RF_GT_IQ1_S:
	case RF_GT_IQ1_M:
	case RF_GT_IQ2_XXS:
	case RF_GT_IQ2_XS:
	case RF_GT_IQ2_S:
	case RF_GT_IQ3_XXS:
	case RF_GT_IQ3_S:
	case RF_GT_IQ4_XS:
		to = RF_GT_IQ4_NL;
		break;
	case RF_GT_Q2_K:
	case RF_GT_Q3_K:
	case RF_GT_TQ1_0:
	case RF_GT_TQ2_0:
		to = RF_GT_Q4_0;
		break;
	case RF_GT_Q4_K:
		to = RF_GT_Q5_0;
		break;
	case RF_GT_Q5_K:
		to = RF_GT_Q5_1;
		break;
	case RF_GT_Q6_K:
		to = RF_GT_Q8_0;
		break;
	default:
		return -1;
	}
	return ncols % rf_gtype(to)->block == 0 ? to : RF_GT_F16;
}

/* llama-quantize visits tensors ordered by the layer number of a "blk.N." prefix (other names
 * count as layer -1), then by name. */
static int visit_cmp(const void *pa, const void *pb)
{
	const struct rf_tensor *a = *(const struct rf_tensor *const *)pa;
	const struct rf_tensor *b = *(const struct rf_tensor *const *)pb;
	int32_t la = strncmp(a->name, "blk.", 4) == 0 ? layer_of(a->name) : -1;
	int32_t lb = strncmp(b->name, "blk.", 4) == 0 ? layer_of(b->name) : -1;

	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a->name, b->name);
}

int rf_quant_apply(const struct rf_quant_model *m, int ft, struct rf_tensor *t, size_t n)
{
	struct qstate q = {.m = m, .ft = base_ft(ft), .tied = true};
	int def = rf_ftype_default_type(ft);
	const bool ud = (ft & RF_FT_UD) != 0;
	struct rf_tensor **order;
	bool quantized;
	int rc = 0;

	if (def < 0 || !m)
		return RF_E_INVALID_VALUE;
	if (n == 0)
		return 0;
	order = malloc(n * sizeof(*order));
	if (!order)
		return RF_E_NOMEM;
	quantized = rf_gtype(def)->quantized;
	for (size_t i = 0; i < n; i++) {
		order[i] = &t[i];
		if (t[i].cat == RF_TC_OUTPUT)
			q.tied = false;
		if (is_attn_v_like(t[i].cat))
			q.n_attn_v++;
	}
	qsort(order, n, sizeof(*order), visit_cmp);
	for (size_t i = 0; i < n && rc == 0; i++) {
		struct rf_tensor *x = order[i];
		if (rf_tensor_quantizable(x)) {
			int type = def;
			if (quantized)
				type = fallback_type(mix_type(&q, x, def), x->ne[0]);
			if (quantized && ud && type >= 0)
				type = fallback_type(ud_type(&q, x, type, def), x->ne[0]);
			/* Experts the checkpoint ships in MXFP4 (gpt-oss) are written as MXFP4 by
			 * the converter and kept by llama-quantize in every scheme, F16 included:
			 * every published gpt-oss-20b GGUF is 11.5-13.8 GB. */
			if (m->experts_mxfp4 && x->expert && x->ne[2] > 1 &&
			    x->ne[0] % rf_gtype(RF_GT_MXFP4)->block == 0)
				type = RF_GT_MXFP4;
			if (type < 0) {
				rc = RF_E_INVALID_VALUE;
				break;
			}
			x->type = type;
		} else if (ft == RF_FT_F32 && (x->type == RF_GT_F16 || x->type == RF_GT_BF16)) {
			x->type = RF_GT_F32;
		}
		rc = rf_tensor_set_bytes(x);
	}
	free(order);
	return rc;
}
