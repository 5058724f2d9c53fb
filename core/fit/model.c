/*
 * Architectures, their tensors and their parameter counts (see model.h).
 *
 * The tensor enumeration writes what llama.cpp's converter writes for each family, with
 * llama.cpp's tensor names: that one list gives the parameter counts (checked against the
 * published counts in tests/core/fit/test_model.c), the weight bytes of any quantization scheme
 * (core/fit/quant.c applies the mixes by name) and the per-layer sizes the layer split needs.
 */
#include "core/fit/model.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/err.h"
#include "core/suggest.h"

void model_arch_init(struct model_arch *a)
{
	memset(a, 0, sizeof(*a));
	a->moe_layer_step = 1;
}

int64_t model_n_layer(const struct model_arch *a)
{
	return a->n_encoder_layers > a->n_layers ? a->n_encoder_layers : a->n_layers;
}

static bool is_mla(const struct model_arch *a)
{
	return a->kv_lora_rank > 0;
}

bool model_layer_is_moe(const struct model_arch *a, int64_t il)
{
	int64_t step = a->moe_layer_step > 0 ? a->moe_layer_step : 1;

	if (a->n_experts <= 1 || il < a->first_k_dense)
		return false;
	return (il + 1) % step == 0;
}

bool model_layer_is_swa(const struct model_arch *a, int64_t il)
{
	/* llama.cpp's pattern n: layer il is windowed when il % n < n - 1, so the last layer of
	 * every group of n attends globally. */
	if (a->swa_pattern <= 0 || a->sliding_window <= 0)
		return false;
	if (a->swa_pattern == 1)
		return true;
	return il % a->swa_pattern < a->swa_pattern - 1;
}

bool model_layer_is_cross(const struct model_arch *a, int64_t il)
{
	if (a->n_cross_attn_layers <= 0 || il < 0 || il >= MODEL_MAX_LAYERS)
		return false;
	return (a->cross_attn_mask[il / 64] >> (il % 64)) & 1u;
}

int model_set_cross_layer(struct model_arch *a, int64_t il)
{
	if (il < 0 || il >= MODEL_MAX_LAYERS)
		return RF_E_INVALID_VALUE;
	const uint64_t bit = (uint64_t)1 << (il % 64);
	if (!(a->cross_attn_mask[il / 64] & bit))
		a->n_cross_attn_layers++;
	a->cross_attn_mask[il / 64] |= bit;
	return 0;
}

int64_t model_cross_kv_bytes(const struct model_arch *a, int64_t elem_bytes)
{
	return a->n_cross_attn_layers * a->cross_attn_tokens *
	       (model_kv_k_width(a) + model_kv_v_width(a)) * elem_bytes;
}

int64_t model_kv_k_width(const struct model_arch *a)
{
	if (is_mla(a))
		return a->kv_lora_rank + a->qk_rope_head_dim;
	return a->n_kv_heads * a->head_dim;
}

int64_t model_kv_v_width(const struct model_arch *a)
{
	if (is_mla(a))
		return 0; /* V is read from the latent K row */
	return a->n_kv_heads * a->v_head_dim;
}

/* The highest cross-attention layer, or -1. */
static int64_t last_cross(const struct model_arch *a)
{
	for (int64_t il = MODEL_MAX_LAYERS - 1; il >= 0; il--)
		if (model_layer_is_cross(a, il))
			return il;
	return -1;
}

/* ---- validation ------------------------------------------------------------------------- */

static bool in(int64_t v, int64_t lo, int64_t hi)
{
	return v >= lo && v <= hi;
}

int model_arch_validate(struct model_arch *a, const char **field)
{
	const char *f = NULL;
	const bool t5 = a->family == MODEL_ENCODER_DECODER;

#define CHECK(cond, name)                                                                          \
	do {                                                                                       \
		if (!f && !(cond))                                                                 \
			f = (name);                                                                \
	} while (0)

	CHECK(in(a->hidden_size, 1, MODEL_MAX_HIDDEN), t5 ? "d_model" : "hidden_size");
	CHECK(in(a->n_layers, 1, MODEL_MAX_LAYERS),
	      t5 ? "num_decoder_layers" : "num_hidden_layers");
	CHECK(in(a->n_encoder_layers, t5 ? 1 : 0, t5 ? MODEL_MAX_LAYERS : 0), "num_layers");
	CHECK(in(a->n_heads, 1, MODEL_MAX_HEADS), t5 ? "num_heads" : "num_attention_heads");
	if (!f && a->n_kv_heads == 0)
		a->n_kv_heads = a->n_heads;
	CHECK(in(a->n_kv_heads, 1, a->n_heads) && a->n_heads % a->n_kv_heads == 0,
	      "num_key_value_heads");
	if (!f && is_mla(a)) {
		CHECK(in(a->kv_lora_rank, 1, MODEL_MAX_LORA_RANK), "kv_lora_rank");
		CHECK(in(a->q_lora_rank, 0, MODEL_MAX_LORA_RANK), "q_lora_rank");
		CHECK(in(a->qk_nope_head_dim, 1, MODEL_MAX_HEAD_DIM), "qk_nope_head_dim");
		CHECK(in(a->qk_rope_head_dim, 1, MODEL_MAX_HEAD_DIM), "qk_rope_head_dim");
		if (!f)
			a->head_dim = a->qk_nope_head_dim + a->qk_rope_head_dim;
	}
	if (!f && a->head_dim == 0)
		a->head_dim = a->hidden_size / a->n_heads;
	CHECK(in(a->head_dim, 1, MODEL_MAX_HEAD_DIM), t5 ? "d_kv" : "head_dim");
	if (!f && a->v_head_dim == 0)
		a->v_head_dim = a->head_dim;
	CHECK(in(a->v_head_dim, 1, MODEL_MAX_HEAD_DIM), "v_head_dim");
	CHECK(in(a->vocab_size, 1, MODEL_MAX_VOCAB), "vocab_size");
	CHECK(in(a->max_position_embeddings, 0, MODEL_MAX_POSITIONS), "max_position_embeddings");
	CHECK(in(a->type_vocab_size, 0, 1024), "type_vocab_size");
	CHECK(in(a->n_experts, 0, MODEL_MAX_EXPERTS), "num_experts");
	if (!f && a->n_experts > 1) {
		CHECK(in(a->n_experts_per_tok, 1, a->n_experts), "num_experts_per_tok");
		CHECK(in(a->moe_intermediate_size, 1, MODEL_MAX_FF), "moe_intermediate_size");
		CHECK(in(a->moe_layer_step, 1, MODEL_MAX_LAYERS), "interleave_moe_layer_step");
		CHECK(in(a->first_k_dense, 0, a->n_layers), "first_k_dense_replace");
	}
	CHECK(in(a->n_shared_experts, 0, MODEL_MAX_EXPERTS), "n_shared_experts");
	CHECK(in(a->shared_expert_intermediate_size, 0, MODEL_MAX_FF),
	      "shared_expert_intermediate_size");
	/* A dense FFN width is needed wherever a layer is not MoE. */
	if (!f) {
		bool any_dense = a->n_experts <= 1 || a->first_k_dense > 0 || a->moe_layer_step > 1;
		CHECK(in(a->intermediate_size, any_dense ? 1 : 0, MODEL_MAX_FF),
		      t5 ? "d_ff" : "intermediate_size");
	}
	CHECK(in(a->sliding_window, 0, MODEL_MAX_POSITIONS), "sliding_window");
	CHECK(in(a->swa_pattern, 0, MODEL_MAX_LAYERS), "sliding_window_pattern");
	CHECK(in(a->rel_attn_buckets, 0, 4096), "relative_attention_num_buckets");
	CHECK(in(a->vision_params, 0, (int64_t)1 << 40), "vision_config");
	CHECK(in(a->cross_attn_tokens, 0, 1 << 24), "vision_config");
	CHECK(a->n_cross_attn_layers == 0 ||
		      (a->family == MODEL_DECODER && a->n_cross_attn_layers < a->n_layers &&
		       last_cross(a) < a->n_layers),
	      "cross_attention_layers");
	CHECK(!a->learned_pos || in(a->max_position_embeddings, 1, 1 << 20),
	      "max_position_embeddings");
#undef CHECK
	if (f) {
		if (field)
			*field = f;
		return RF_E_INVALID_VALUE;
	}
	return 0;
}

/* ---- tensors ------------------------------------------------------------------------------ */

void rf_tensor_list_free(struct rf_tensor_list *l)
{
	if (!l)
		return;
	free(l->t);
	memset(l, 0, sizeof(*l));
}

/* Appends a tensor named by fmt with shape ne0 x ne1 x ne2, typed as the converter types it:
 * F32 for vectors, biases, routers and position embeddings, F16 for weight matrices. */
__attribute__((format(printf, 5, 6))) static int add(struct rf_tensor_list *l, int64_t ne0,
						     int64_t ne1, int64_t ne2, const char *fmt, ...)
{
	struct rf_tensor *t;
	va_list ap;
	int n;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct rf_tensor *nt = realloc(l->t, cap * sizeof(*nt));
		if (!nt)
			return RF_E_NOMEM;
		l->t = nt;
		l->cap = cap;
	}
	t = &l->t[l->n];
	memset(t, 0, sizeof(*t));
	va_start(ap, fmt);
	n = vsnprintf(t->name, sizeof(t->name), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(t->name))
		return RF_E_INVALID_VALUE;
	t->ne[0] = ne0;
	t->ne[1] = ne1;
	t->ne[2] = ne2;
	t->ne[3] = 1;
	t->n_dims = ne2 > 1 ? 3 : (ne1 > 1 ? 2 : 1);
	rf_tensor_classify(t);
	{
		size_t len = strlen(t->name);
		bool weight = len >= 6 && strcmp(t->name + len - 6, "weight") == 0;
		bool keep32 = strstr(t->name, "ffn_gate_inp") || strstr(t->name, "position_embd") ||
			      strstr(t->name, "token_types") || strstr(t->name, "attn_rel_b");
		t->type = (t->n_dims >= 2 && weight && !keep32) ? RF_GT_F16 : RF_GT_F32;
	}
	if (rf_tensor_set_bytes(t) < 0)
		return RF_E_INVALID_VALUE;
	l->n++;
	return 0;
}

#define ADD(...)                                                                                   \
	do {                                                                                       \
		int rc_ = add(__VA_ARGS__);                                                        \
		if (rc_ < 0)                                                                       \
			return rc_;                                                                \
	} while (0)

/* A norm vector, with its bias for LayerNorm families. */
static int add_norm(struct rf_tensor_list *l, const struct model_arch *a, int64_t n,
		    const char *pfx, const char *name)
{
	ADD(l, n, 1, 1, "%s%s.weight", pfx, name);
	if (a->norm_bias)
		ADD(l, n, 1, 1, "%s%s.bias", pfx, name);
	return 0;
}

/* A matrix of in x out with an optional bias of out. */
static int add_mat(struct rf_tensor_list *l, int64_t in_, int64_t out, bool bias, const char *pfx,
		   const char *name)
{
	ADD(l, in_, out, 1, "%s%s.weight", pfx, name);
	if (bias)
		ADD(l, out, 1, 1, "%s%s.bias", pfx, name);
	return 0;
}

static int add_attention(struct rf_tensor_list *l, const struct model_arch *a, const char *pfx,
			 const char *q, const char *k, const char *v, const char *o)
{
	const int64_t h = a->hidden_size;
	const int64_t q_dim = a->n_heads * a->head_dim;
	const int64_t kv_dim = a->n_kv_heads * a->head_dim;
	const int64_t v_dim = a->n_kv_heads * a->v_head_dim;
	const int64_t o_in = a->n_heads * a->v_head_dim;
	int rc;

	if (is_mla(a)) {
		const int64_t qk = a->qk_nope_head_dim + a->qk_rope_head_dim;
		if (a->q_lora_rank > 0) {
			ADD(l, h, a->q_lora_rank, 1, "%sattn_q_a.weight", pfx);
			ADD(l, a->q_lora_rank, 1, 1, "%sattn_q_a_norm.weight", pfx);
			ADD(l, a->q_lora_rank, a->n_heads * qk, 1, "%sattn_q_b.weight", pfx);
		} else {
			ADD(l, h, a->n_heads * qk, 1, "%sattn_q.weight", pfx);
		}
		ADD(l, h, a->kv_lora_rank + a->qk_rope_head_dim, 1, "%sattn_kv_a_mqa.weight", pfx);
		ADD(l, a->kv_lora_rank, 1, 1, "%sattn_kv_a_norm.weight", pfx);
		ADD(l, a->kv_lora_rank, a->n_heads * (a->qk_nope_head_dim + a->v_head_dim), 1,
		    "%sattn_kv_b.weight", pfx);
	} else if (a->fused_qkv) {
		if ((rc = add_mat(l, h, q_dim + kv_dim + v_dim, a->attn_bias, pfx, "attn_qkv")) < 0)
			return rc;
	} else {
		if ((rc = add_mat(l, h, q_dim, a->attn_bias, pfx, q)) < 0 ||
		    (rc = add_mat(l, h, kv_dim, a->attn_bias, pfx, k)) < 0 ||
		    (rc = add_mat(l, h, v_dim, a->attn_bias, pfx, v)) < 0)
			return rc;
	}
	if (a->qk_norm) {
		ADD(l, a->head_dim, 1, 1, "%sattn_q_norm.weight", pfx);
		ADD(l, a->head_dim, 1, 1, "%sattn_k_norm.weight", pfx);
	}
	if ((rc = add_mat(l, o_in, h, a->attn_out_bias, pfx, o)) < 0)
		return rc;
	if (a->attn_sinks)
		ADD(l, a->n_heads, 1, 1, "%sattn_sinks.weight", pfx);
	return 0;
}

/* A dense FFN of width ff under the names ffn_gate/up/down + suffix ("", "_shexp"). */
static int add_ffn(struct rf_tensor_list *l, const struct model_arch *a, const char *pfx,
		   int64_t ff, const char *suffix)
{
	const int64_t h = a->hidden_size;

	if (a->ffn == MODEL_FFN_GATED)
		ADD(l, h, ff, 1, "%sffn_gate%s.weight", pfx, suffix);
	ADD(l, h, a->ffn == MODEL_FFN_FUSED ? 2 * ff : ff, 1, "%sffn_up%s.weight", pfx, suffix);
	if (a->mlp_bias)
		ADD(l, ff, 1, 1, "%sffn_up%s.bias", pfx, suffix);
	ADD(l, ff, h, 1, "%sffn_down%s.weight", pfx, suffix);
	if (a->mlp_bias)
		ADD(l, h, 1, 1, "%sffn_down%s.bias", pfx, suffix);
	return 0;
}

static int add_moe(struct rf_tensor_list *l, const struct model_arch *a, const char *pfx)
{
	const int64_t h = a->hidden_size, e = a->n_experts, ff = a->moe_intermediate_size;
	int rc;

	ADD(l, h, e, 1, "%sffn_gate_inp.weight", pfx);
	if (a->mlp_bias)
		ADD(l, e, 1, 1, "%sffn_gate_inp.bias", pfx);
	if (a->ffn != MODEL_FFN_PLAIN)
		ADD(l, h, ff, e, "%sffn_gate_exps.weight", pfx);
	ADD(l, h, ff, e, "%sffn_up_exps.weight", pfx);
	ADD(l, ff, h, e, "%sffn_down_exps.weight", pfx);
	if (a->mlp_bias) {
		if (a->ffn != MODEL_FFN_PLAIN)
			ADD(l, ff, e, 1, "%sffn_gate_exps.bias", pfx);
		ADD(l, ff, e, 1, "%sffn_up_exps.bias", pfx);
		ADD(l, h, e, 1, "%sffn_down_exps.bias", pfx);
	}
	if (a->n_shared_experts > 0 && a->shared_expert_intermediate_size > 0) {
		struct model_arch plain = *a;
		plain.mlp_bias = false;
		plain.ffn = a->ffn == MODEL_FFN_PLAIN ? MODEL_FFN_PLAIN : MODEL_FFN_GATED;
		if ((rc = add_ffn(l, &plain, pfx, a->shared_expert_intermediate_size, "_shexp")) <
		    0)
			return rc;
		if (a->shared_expert_gate)
			ADD(l, h, 1, 1, "%sffn_gate_inp_shexp.weight", pfx);
	}
	return 0;
}

static int add_decoder_layer(struct rf_tensor_list *l, const struct model_arch *a, int64_t il)
{
	char pfx[32];
	int rc;

	snprintf(pfx, sizeof(pfx), "blk.%d.", (int)il);
	if ((rc = add_norm(l, a, a->hidden_size, pfx, "attn_norm")) < 0 ||
	    (rc = add_attention(l, a, pfx, "attn_q", "attn_k", "attn_v", "attn_output")) < 0)
		return rc;
	if (a->post_norms)
		ADD(l, a->hidden_size, 1, 1, "%spost_attention_norm.weight", pfx);
	/* gpt-oss names the norm before its FFN post_attention_norm, as its converter maps it. */
	if ((rc = add_norm(l, a, a->hidden_size, pfx,
			   strcmp(a->llm_arch, "gpt-oss") == 0 ? "post_attention_norm" :
								 "ffn_norm")) < 0)
		return rc;
	if (model_layer_is_moe(a, il))
		rc = add_moe(l, a, pfx);
	else
		rc = add_ffn(l, a, pfx, a->intermediate_size, "");
	if (rc < 0)
		return rc;
	if (a->post_norms)
		ADD(l, a->hidden_size, 1, 1, "%spost_ffw_norm.weight", pfx);
	return 0;
}

/* BERT and RoBERTa: post-norm layers, biases everywhere. */
static int add_encoder_layer(struct rf_tensor_list *l, const struct model_arch *a, int64_t il)
{
	char pfx[32];
	int rc;

	snprintf(pfx, sizeof(pfx), "blk.%d.", (int)il);
	if ((rc = add_attention(l, a, pfx, "attn_q", "attn_k", "attn_v", "attn_output")) < 0 ||
	    (rc = add_norm(l, a, a->hidden_size, pfx, "attn_output_norm")) < 0 ||
	    (rc = add_ffn(l, a, pfx, a->intermediate_size, "")) < 0 ||
	    (rc = add_norm(l, a, a->hidden_size, pfx, "layer_output_norm")) < 0)
		return rc;
	return 0;
}

/* T5: layer il holds encoder block il and decoder block il, as llama.cpp keeps them. */
static int add_t5_layer(struct rf_tensor_list *l, const struct model_arch *a, int64_t il)
{
	char pfx[32];
	int rc;

	if (il < a->n_encoder_layers) {
		snprintf(pfx, sizeof(pfx), "enc.blk.%d.", (int)il);
		if ((rc = add_norm(l, a, a->hidden_size, pfx, "attn_norm")) < 0 ||
		    (rc = add_attention(l, a, pfx, "attn_q", "attn_k", "attn_v", "attn_o")) < 0)
			return rc;
		if (il == 0 && a->rel_attn_buckets > 0)
			ADD(l, a->n_heads, a->rel_attn_buckets, 1, "%sattn_rel_b.weight", pfx);
		if ((rc = add_norm(l, a, a->hidden_size, pfx, "ffn_norm")) < 0 ||
		    (rc = add_ffn(l, a, pfx, a->intermediate_size, "")) < 0)
			return rc;
	}
	if (il < a->n_layers) {
		snprintf(pfx, sizeof(pfx), "dec.blk.%d.", (int)il);
		if ((rc = add_norm(l, a, a->hidden_size, pfx, "attn_norm")) < 0 ||
		    (rc = add_attention(l, a, pfx, "attn_q", "attn_k", "attn_v", "attn_o")) < 0)
			return rc;
		if (il == 0 && a->rel_attn_buckets > 0)
			ADD(l, a->n_heads, a->rel_attn_buckets, 1, "%sattn_rel_b.weight", pfx);
		if ((rc = add_norm(l, a, a->hidden_size, pfx, "cross_attn_norm")) < 0 ||
		    (rc = add_attention(l, a, pfx, "cross_attn_q", "cross_attn_k", "cross_attn_v",
					"cross_attn_o")) < 0 ||
		    (rc = add_norm(l, a, a->hidden_size, pfx, "ffn_norm")) < 0 ||
		    (rc = add_ffn(l, a, pfx, a->intermediate_size, "")) < 0)
			return rc;
	}
	return 0;
}

static int build(const struct model_arch *a, struct rf_tensor_list *l)
{
	const int64_t h = a->hidden_size;
	int rc;

	ADD(l, h, a->vocab_size, 1, "token_embd.weight");
	if (a->family == MODEL_ENCODER) {
		if (a->type_vocab_size > 0)
			ADD(l, h, a->type_vocab_size, 1, "token_types.weight");
		if (a->learned_pos)
			ADD(l, h, a->max_position_embeddings, 1, "position_embd.weight");
		if ((rc = add_norm(l, a, h, "", "token_embd_norm")) < 0)
			return rc;
	}
	for (int64_t il = 0; il < model_n_layer(a); il++) {
		if (a->family == MODEL_ENCODER)
			rc = add_encoder_layer(l, a, il);
		else if (a->family == MODEL_ENCODER_DECODER)
			rc = add_t5_layer(l, a, il);
		else
			rc = add_decoder_layer(l, a, il);
		if (rc < 0)
			return rc;
	}
	if (a->family == MODEL_ENCODER_DECODER) {
		if ((rc = add_norm(l, a, h, "", "enc.output_norm")) < 0 ||
		    (rc = add_norm(l, a, h, "", "dec.output_norm")) < 0)
			return rc;
	} else if (a->family == MODEL_DECODER) {
		if ((rc = add_norm(l, a, h, "", "output_norm")) < 0)
			return rc;
	}
	if (a->family != MODEL_ENCODER && !a->tie_word_embeddings)
		ADD(l, h, a->vocab_size, 1, "output.weight");
	return 0;
}

int model_tensors(const struct model_arch *a, struct rf_tensor_list *out)
{
	struct rf_tensor_list l = {0};
	struct model_arch v = *a;
	int rc = model_arch_validate(&v, NULL);

	if (rc == 0)
		rc = build(&v, &l);
	if (rc < 0) {
		rf_tensor_list_free(&l);
		return rc;
	}
	*out = l;
	return 0;
}

/* ---- parameters ----------------------------------------------------------------------------- */

int model_param_counts(const struct model_arch *a, struct model_params *out)
{
	struct rf_tensor_list l;
	struct model_params p = {0};
	int64_t *per_layer;
	const int64_t n_layer = model_n_layer(a);
	int rc = model_tensors(a, &l);

	if (rc < 0)
		return rc;
	per_layer = calloc((size_t)(n_layer > 0 ? n_layer : 1), sizeof(*per_layer));
	if (!per_layer) {
		rf_tensor_list_free(&l);
		return RF_E_NOMEM;
	}
	for (size_t i = 0; i < l.n; i++) {
		const struct rf_tensor *t = &l.t[i];
		int64_t n = rf_tensor_nelements(t);
		p.total += n;
		if (t->expert) {
			/* k of E routed experts work on each token. */
			p.expert += n;
			p.active += n / a->n_experts * a->n_experts_per_tok;
		} else {
			p.active += n;
		}
		if (t->layer == RF_LAYER_INPUT)
			p.embedding += n;
		else if (t->cat == RF_TC_OUTPUT)
			p.output += n;
		if (t->layer >= 0 && t->layer < n_layer) {
			per_layer[t->layer] += n;
			p.layers += n;
		}
	}
	p.total += a->vision_params;
	if (p.expert > 0) {
		p.n_experts = a->n_experts;
		p.n_experts_used = a->n_experts_per_tok;
	}
	for (int64_t il = 0; il < n_layer; il++)
		if (per_layer[il] > p.layer_max)
			p.layer_max = per_layer[il];
	free(per_layer);
	rf_tensor_list_free(&l);
	*out = p;
	return 0;
}

int64_t model_mllama_vision_params(const struct model_vision *v, int64_t text_hidden)
{
	const int64_t h = v->hidden;
	int64_t side, patches, layer, n;

	if (h < 1 || h > MODEL_MAX_HIDDEN || v->ff < 1 || v->ff > MODEL_MAX_FF || v->layers < 0 ||
	    v->layers > MODEL_MAX_LAYERS || v->global_layers < 0 ||
	    v->global_layers > MODEL_MAX_LAYERS || v->patch < 1 || v->image < v->patch ||
	    v->image > 65536 || v->tiles < 1 || v->tiles > 64 || v->channels < 1 ||
	    v->channels > 16 || v->aspect_ratios < 0 || v->aspect_ratios > 4096 ||
	    v->output_dim < 1 || v->output_dim > MODEL_MAX_HIDDEN || text_hidden < 1 ||
	    text_hidden > MODEL_MAX_HIDDEN)
		return -1;
	side = v->image / v->patch;
	patches = side * side + 1; /* and the class token */
	/* q, k, v, o without biases; fc1 and fc2 with; two layer norms. */
	layer = 4 * h * h + 2 * h * v->ff + v->ff + h + 2 * 2 * h;
	n = v->channels * v->patch * v->patch * h             /* patch embedding, no bias */
	    + h                                               /* class embedding */
	    + patches * h + 1                                 /* position embedding and its gate */
	    + (v->aspect_ratios + 1) * v->tiles * patches * h /* tile position embedding */
	    + 2 * ((v->aspect_ratios + 1) * v->tiles * h + 1) /* pre- and post-tile, gated */
	    + 2 * 2 * h                                       /* layernorm_pre and _post */
	    + v->layers * layer + v->global_layers * (layer + 2) /* gated global layers */
	    + v->output_dim * text_hidden + text_hidden;         /* the projector */
	return n;
}

int64_t model_layer_params(const struct model_arch *a, int64_t il)
{
	struct rf_tensor_list l;
	int64_t n = 0;

	if (il < 0 || il >= model_n_layer(a) || model_tensors(a, &l) < 0)
		return 0;
	for (size_t i = 0; i < l.n; i++)
		if (l.t[i].layer == il)
			n += rf_tensor_nelements(&l.t[i]);
	rf_tensor_list_free(&l);
	return n;
}

/* ---- catalog ------------------------------------------------------------------------------- */

static const struct {
	unsigned bit;
	const char *name;
} tasks[] = {
	{MODEL_TASK_TEXT_GENERATION, "text-generation"},
	{MODEL_TASK_SUMMARIZATION, "summarization"},
	{MODEL_TASK_QUESTION_ANSWERING, "question-answering"},
	{MODEL_TASK_EXTRACTIVE_QA, "extractive-question-answering"},
};

unsigned model_task_from_name(const char *name)
{
	for (size_t i = 0; name && i < sizeof(tasks) / sizeof(tasks[0]); i++)
		if (strcmp(tasks[i].name, name) == 0)
			return tasks[i].bit;
	return 0;
}

const char *model_task_name(unsigned bit)
{
	for (size_t i = 0; i < sizeof(tasks) / sizeof(tasks[0]); i++)
		if (tasks[i].bit == bit)
			return tasks[i].name;
	return NULL;
}

static inline unsigned char ascii_lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c + ('a' - 'A')) : c;
}

/* Exact equality ignoring ASCII case (never locale-dependent). */
static bool same_name(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	for (; *x && *y; x++, y++)
		if (*x != *y && ascii_lower(*x) != ascii_lower(*y))
			return false;
	return *x == *y;
}

/* FNV-1a over the name's bytes, ASCII case folded: equal for names same_name calls equal. */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		h = (h ^ ascii_lower(*p)) * 16777619u;
	return h;
}

int model_catalog_index(struct model_catalog *c)
{
	struct model_name_key *keys;
	uint32_t *buckets;
	size_t n_keys = 0, k = 0, n_buckets = 16;

	if (!c)
		return RF_E_INVALID_VALUE;
	for (size_t i = 0; i < c->n; i++)
		n_keys += 1 + (size_t)c->models[i].n_aliases;
	while (n_buckets < 2 * n_keys)
		n_buckets *= 2;
	keys = malloc((n_keys ? n_keys : 1) * sizeof(*keys));
	buckets = calloc(n_buckets, sizeof(*buckets));
	if (!keys || !buckets || n_keys >= UINT32_MAX) {
		free(keys);
		free(buckets);
		return RF_E_NOMEM;
	}
	/* In model order, each model's id before its aliases: along a probe sequence the first
	 * name that matches is the one a walk of the models would meet first. */
	for (size_t i = 0; i < c->n; i++)
		for (int a = -1; a < c->models[i].n_aliases; a++) {
			const char *name = a < 0 ? c->models[i].id : c->models[i].aliases[a];
			size_t b;
			keys[k].hash = name_hash(name);
			keys[k].model = (uint32_t)i;
			keys[k].name = name;
			for (b = keys[k].hash & (n_buckets - 1); buckets[b];
			     b = (b + 1) & (n_buckets - 1))
				;
			buckets[b] = (uint32_t)++k;
		}
	free(c->keys);
	free(c->buckets);
	c->keys = keys;
	c->buckets = buckets;
	c->n_buckets = n_buckets;
	return 0;
}

const struct model_entry *model_catalog_find(const struct model_catalog *c, const char *name)
{
	if (!c || !name || !*name)
		return NULL;
	if (c->buckets) {
		const uint32_t h = name_hash(name);
		for (size_t b = h & (c->n_buckets - 1); c->buckets[b];
		     b = (b + 1) & (c->n_buckets - 1)) {
			const struct model_name_key *key = &c->keys[c->buckets[b] - 1];
			if (key->hash == h && same_name(key->name, name))
				return &c->models[key->model];
		}
		return NULL;
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct model_entry *e = &c->models[i];
		if (same_name(e->id, name))
			return e;
		for (int k = 0; k < e->n_aliases; k++)
			if (same_name(e->aliases[k], name))
				return e;
	}
	return NULL;
}

const char *model_catalog_suggest(const struct model_catalog *c, const char *name)
{
	struct rf_suggest_search s;

	if (!c || !name)
		return NULL;
	rf_suggest_begin(&s, name);
	for (size_t i = 0; i < c->n; i++) {
		rf_suggest_offer(&s, c->models[i].id);
		for (int a = 0; a < c->models[i].n_aliases; a++)
			rf_suggest_offer(&s, c->models[i].aliases[a]);
	}
	return rf_suggest_result(&s);
}

const char *model_chat_id(const struct model_entry *m)
{
	if (!m)
		return NULL;
	if (m->instruct)
		return m->id;
	return m->artifacts.instruct[0] ? m->artifacts.instruct : NULL;
}

const struct model_gguf_repo *model_gguf_repo_for(const struct model_entry *m, int ft)
{
	if (!m || ft < 0 || ft >= 64)
		return NULL;
	for (int i = 0; i < m->artifacts.n_gguf; i++)
		if (m->artifacts.gguf[i].ftypes & ((uint64_t)1 << ft))
			return &m->artifacts.gguf[i];
	return NULL;
}

const char *model_ckpt_repo(const struct model_entry *m, enum model_ckpt f)
{
	if (!m || (int)f < 0 || f >= MODEL_CKPTS || !m->artifacts.ckpt[f][0])
		return NULL;
	return m->artifacts.ckpt[f];
}

/* Whether s contains word, ignoring ASCII case. */
static bool has_word_ci(const char *s, const char *word)
{
	size_t n = strlen(word);

	for (; *s; s++)
		if (strncasecmp(s, word, n) == 0)
			return true;
	return false;
}

/* The name part of a Hugging Face id without the publisher's "Meta-" prefix, which Meta wrote
 * on Llama 3 and 3.1 repositories and later dropped (the same weights answer to both). */
static const char *release_tail(const char *id, size_t *owner_len /* OUT */)
{
	const char *slash = strchr(id, '/'), *t = slash ? slash + 1 : id;

	*owner_len = slash ? (size_t)(slash - id) : 0;
	return strncasecmp(t, "Meta-", 5) == 0 ? t + 5 : t;
}

/* Whether a and b spell the same release: equal ignoring ASCII case and a "Meta-" prefix. */
static bool same_release(const char *a, const char *b)
{
	size_t na, nb;
	const char *ta = release_tail(a, &na), *tb = release_tail(b, &nb);

	return na == nb && strncasecmp(a, b, na) == 0 && same_name(ta, tb);
}

/* Whether the Hugging Face id's name part (no owner) begins with the letters and digits of
 * short (an alias or an Ollama tag's model part), case, punctuation and separators ignored:
 * "mistral-small3.2" begins "Mistral-Small-3.2-24B-Instruct-2506", not "...-3.1-...". */
static bool release_begins_with(const char *id, const char *short_name, size_t n)
{
	const char *slash = strchr(id, '/'), *t = slash ? slash + 1 : id;
	size_t i = 0;

	for (; *t && i < n; t++) {
		while (i < n && !isalnum((unsigned char)short_name[i]))
			i++;
		if (!isalnum((unsigned char)*t))
			continue;
		if (i == n || tolower((unsigned char)*t) != tolower((unsigned char)short_name[i]))
			return i == n;
		i++;
	}
	while (i < n && !isalnum((unsigned char)short_name[i]))
		i++;
	return i == n;
}

/* The one Hugging Face release among m's aliases whose name begins with a short name's model
 * part (before an Ollama ":tag"), or NULL when none or several do. */
static const char *release_of_short_name(const struct model_entry *m, const char *name)
{
	size_t n = strcspn(name, ":");
	const char *found = NULL;

	if (n == 0 || strchr(name, '/'))
		return NULL;
	/* A short name of the entry itself ("qwen3-30b-a3b") names the entry, not a later
	 * release of it ("Qwen3-30B-A3B-Instruct-2507"). */
	if (release_begins_with(m->id, name, n) ||
	    (model_chat_id(m) && release_begins_with(model_chat_id(m), name, n)))
		return NULL;
	for (int k = 0; k < m->n_aliases; k++) {
		const char *a = m->aliases[k];
		if (!strchr(a, '/') || !release_begins_with(a, name, n))
			continue;
		if (found)
			return NULL;
		found = a;
	}
	return found;
}

const char *model_other_release(const struct model_entry *m, const char *name)
{
	const char *chat = model_chat_id(m);

	if (!m || !name || same_release(name, m->id) || (chat && same_release(name, chat)))
		return NULL;
	for (int k = 0; k < m->n_aliases; k++) {
		const char *a = m->aliases[k];
		if (strchr(a, '/') && same_name(a, name))
			return a;
	}
	/* A short name that spells one release ("mistral-small3.2:24b": the 2506 Instruct
	 * release, which the catalog counts with 3.1), unless that is the chat release. */
	{
		const char *r = release_of_short_name(m, name);
		if (r)
			return r;
	}
	/* A coder name that is no Hugging Face id ("qwen2.5-coder:7b") asks for the coder
	 * release, which the catalog counts with its base model. */
	if (has_word_ci(name, "coder"))
		for (int k = 0; k < m->n_aliases; k++)
			if (strchr(m->aliases[k], '/') && has_word_ci(m->aliases[k], "coder"))
				return m->aliases[k];
	return NULL;
}

const struct model_release *model_release_find(const struct model_entry *m, const char *release)
{
	if (!m || !release)
		return NULL;
	for (int i = 0; i < m->n_releases; i++)
		if (same_name(m->releases[i].id, release))
			return &m->releases[i];
	return NULL;
}

void model_release_entry(const struct model_entry *m, const struct model_release *r,
			 struct model_entry *out)
{
	*out = *m;
	memcpy(out->id, r->id, sizeof(out->id));
	out->instruct = true;
	out->artifacts = r->art;
	out->artifacts.instruct[0] = '\0';
	out->n_releases = 0;
}

void model_catalog_free(struct model_catalog *c)
{
	if (!c)
		return;
	free(c->keys);
	free(c->buckets);
	free(c->models);
	free(c);
}
