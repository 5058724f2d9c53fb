/*
 * Models in JSON (see model_json.h). The config.json mapper reads each family's fields by the
 * names Hugging Face's configuration classes use, with those classes' defaults where a field
 * may be left out, and checks every number before it reaches core: an integer, finite, within
 * the caps of core/fit/model.h. The catalog loader uses the same mapper for each entry's "config",
 * so the catalog and a pasted config.json can never disagree about a field.
 */
#include "api/model_json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/err.h"

struct hf {
	const cJSON *cfg;  /* the object the text model's fields are in */
	const cJSON *root; /* the top-level config (tie_word_embeddings may live there) */
	char prefix[MODEL_JSON_FIELD_LEN];
	char *field;
	size_t fieldlen;
	char *msg;
	size_t msglen;
};

__attribute__((format(printf, 4, 5))) static int hf_err(struct hf *h, int rc, const char *name,
							const char *fmt, ...)
{
	va_list ap;

	if (h->field && h->fieldlen)
		snprintf(h->field, h->fieldlen, "%s%s%s", h->prefix, *h->prefix && *name ? "." : "",
			 name);
	if (h->msg && h->msglen) {
		va_start(ap, fmt);
		vsnprintf(h->msg, h->msglen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static const cJSON *item(const struct hf *h, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(h->cfg, name);

	return v && !cJSON_IsNull(v) ? v : NULL;
}

/* Reads an integer field. Returns 1 when set, 0 when absent (or null) and not required, or an
 * error naming the field. */
static int hf_int(struct hf *h, const char *name, bool required, int64_t min, int64_t max,
		  int64_t *out)
{
	const cJSON *v = item(h, name);
	double d;

	if (!v) {
		if (required)
			return hf_err(h, RF_E_MISSING_FIELD, name, "%s is required", name);
		return 0;
	}
	d = v->valuedouble;
	if (!cJSON_IsNumber(v) || !isfinite(d) || floor(d) != d)
		return hf_err(h, RF_E_INVALID_VALUE, name, "%s must be an integer", name);
	if (d < (double)min || d > (double)max)
		return hf_err(h, RF_E_INVALID_VALUE, name,
			      "%s must be from %lld to %lld (got %.0f)", name, (long long)min,
			      (long long)max, d);
	*out = (int64_t)d;
	return 1;
}

static int hf_bool(struct hf *h, const char *name, bool *out)
{
	const cJSON *v = item(h, name);

	if (!v)
		return 0;
	if (!cJSON_IsBool(v))
		return hf_err(h, RF_E_INVALID_VALUE, name, "%s must be true or false", name);
	*out = cJSON_IsTrue(v);
	return 1;
}

/* A string field; returns 1 and *out (borrowed), 0 when absent, or an error. */
static int hf_str(struct hf *h, const char *name, const char **out)
{
	const cJSON *v = item(h, name);

	if (!v)
		return 0;
	if (!cJSON_IsString(v) || !v->valuestring || !*v->valuestring)
		return hf_err(h, RF_E_INVALID_VALUE, name, "%s must be a non-empty string", name);
	*out = v->valuestring;
	return 1;
}

#define TRY(x)                                                                                     \
	do {                                                                                       \
		int rc_ = (x);                                                                     \
		if (rc_ < 0)                                                                       \
			return rc_;                                                                \
	} while (0)

/* The fields every decoder-only family shares. */
static int common_decoder(struct hf *h, struct model_arch *a, bool dense_required)
{
	TRY(hf_int(h, "hidden_size", true, 1, MODEL_MAX_HIDDEN, &a->hidden_size));
	TRY(hf_int(h, "num_hidden_layers", true, 1, MODEL_MAX_LAYERS, &a->n_layers));
	TRY(hf_int(h, "num_attention_heads", true, 1, MODEL_MAX_HEADS, &a->n_heads));
	TRY(hf_int(h, "num_key_value_heads", false, 1, a->n_heads, &a->n_kv_heads));
	if (a->n_kv_heads > 0 && a->n_heads % a->n_kv_heads != 0)
		return hf_err(h, RF_E_INVALID_VALUE, "num_key_value_heads",
			      "num_key_value_heads must divide num_attention_heads (%lld)",
			      (long long)a->n_heads);
	TRY(hf_int(h, "head_dim", false, 1, MODEL_MAX_HEAD_DIM, &a->head_dim));
	TRY(hf_int(h, "intermediate_size", dense_required, 1, MODEL_MAX_FF, &a->intermediate_size));
	TRY(hf_int(h, "vocab_size", true, 1, MODEL_MAX_VOCAB, &a->vocab_size));
	TRY(hf_int(h, "max_position_embeddings", false, 1, MODEL_MAX_POSITIONS,
		   &a->max_position_embeddings));
	TRY(hf_int(h, "sliding_window", false, 0, MODEL_MAX_POSITIONS, &a->sliding_window));
	return 0;
}

/* tie_word_embeddings from the text config, else the top level, else the family's default. */
static int read_tie(struct hf *h, struct model_arch *a, bool dflt)
{
	int rc;

	a->tie_word_embeddings = dflt;
	rc = hf_bool(h, "tie_word_embeddings", &a->tie_word_embeddings);
	if (rc == 0 && h->root != h->cfg) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(h->root, "tie_word_embeddings");
		if (cJSON_IsBool(v))
			a->tie_word_embeddings = cJSON_IsTrue(v);
	}
	return rc < 0 ? rc : 0;
}

/* MoE fields under the given names. */
static int read_moe(struct hf *h, struct model_arch *a, const char *experts_name,
		    const char *per_tok_name, bool ff_from_intermediate)
{
	TRY(hf_int(h, experts_name, true, 2, MODEL_MAX_EXPERTS, &a->n_experts));
	TRY(hf_int(h, per_tok_name, true, 1, a->n_experts, &a->n_experts_per_tok));
	if (ff_from_intermediate)
		a->moe_intermediate_size = a->intermediate_size;
	else
		TRY(hf_int(h, "moe_intermediate_size", true, 1, MODEL_MAX_FF,
			   &a->moe_intermediate_size));
	return 0;
}

/* Turns layer_types (["sliding_attention", "full_attention", ...]) into llama.cpp's pattern:
 * the period after which a global layer comes. Returns 1 when present, 0 when absent. */
static int read_layer_types(struct hf *h, struct model_arch *a)
{
	const cJSON *lt = item(h, "layer_types"), *e;
	int64_t n = 0, first_full = -1, n_full = 0;

	if (!lt)
		return 0;
	if (!cJSON_IsArray(lt))
		return hf_err(h, RF_E_INVALID_VALUE, "layer_types", "layer_types must be an array");
	cJSON_ArrayForEach(e, lt)
	{
		if (!cJSON_IsString(e))
			return hf_err(h, RF_E_INVALID_VALUE, "layer_types",
				      "layer_types must hold strings");
		if (strcmp(e->valuestring, "full_attention") == 0) {
			if (first_full < 0)
				first_full = n;
			n_full++;
		} else if (strcmp(e->valuestring, "sliding_attention") != 0 &&
			   strcmp(e->valuestring, "chunked_attention") != 0) {
			return hf_err(h, RF_E_INVALID_VALUE, "layer_types",
				      "layer_types holds an unknown kind '%.40s'", e->valuestring);
		}
		n++;
	}
	if (n != a->n_layers)
		return hf_err(h, RF_E_INVALID_VALUE, "layer_types",
			      "layer_types has %lld entries for %lld layers", (long long)n,
			      (long long)a->n_layers);
	if (n_full == n)
		a->swa_pattern = 0;
	else
		a->swa_pattern = first_full < 0 ? 1 : first_full + 1;
	return 1;
}

static int map_llama(struct hf *h, struct model_arch *a, bool moe)
{
	bool bias = false;

	TRY(common_decoder(h, a, true));
	TRY(read_tie(h, a, false));
	TRY(hf_bool(h, "attention_bias", &bias));
	a->attn_bias = a->attn_out_bias = bias;
	TRY(hf_bool(h, "mlp_bias", &a->mlp_bias));
	if (moe)
		TRY(read_moe(h, a, "num_local_experts", "num_experts_per_tok", true));
	/* llama.cpp runs Mistral's sliding_window as full attention. */
	a->swa_pattern = 0;
	return 0;
}

static int map_qwen(struct hf *h, struct model_arch *a, bool qwen3, bool moe)
{
	bool bias = !qwen3;

	TRY(common_decoder(h, a, !moe));
	TRY(read_tie(h, a, false));
	if (qwen3) {
		TRY(hf_bool(h, "attention_bias", &bias));
		a->attn_out_bias = bias;
		a->qk_norm = true;
	}
	a->attn_bias = bias; /* Qwen2 always has q, k, v biases */
	if (moe) {
		const cJSON *mlp_only = item(h, "mlp_only_layers");
		TRY(read_moe(h, a, "num_experts", "num_experts_per_tok", false));
		TRY(hf_int(h, "decoder_sparse_step", false, 1, MODEL_MAX_LAYERS,
			   &a->moe_layer_step));
		if (mlp_only && (!cJSON_IsArray(mlp_only) || cJSON_GetArraySize(mlp_only) > 0))
			return hf_err(h, RF_E_INVALID_VALUE, "mlp_only_layers",
				      "mlp_only_layers other than [] is not supported");
		if (!qwen3) {
			TRY(hf_int(h, "shared_expert_intermediate_size", false, 0, MODEL_MAX_FF,
				   &a->shared_expert_intermediate_size));
			if (a->shared_expert_intermediate_size > 0) {
				a->n_shared_experts = 1;
				a->shared_expert_gate = true;
			}
		}
	}
	a->swa_pattern = 0; /* use_sliding_window is off in every released Qwen config */
	return 0;
}

static int map_gemma(struct hf *h, struct model_arch *a, int version)
{
	int rc;

	TRY(common_decoder(h, a, true));
	TRY(read_tie(h, a, true));
	if (version >= 2)
		a->post_norms = true;
	if (version == 2 && a->sliding_window > 0)
		a->swa_pattern = 2; /* local and global layers alternate */
	if (version == 3) {
		a->qk_norm = true;
		rc = read_layer_types(h, a);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			a->swa_pattern = 6;
			TRY(hf_int(h, "sliding_window_pattern", false, 1, MODEL_MAX_LAYERS,
				   &a->swa_pattern));
		}
		if (a->sliding_window == 0)
			a->swa_pattern = 0;
	}
	return 0;
}

static int map_phi3(struct hf *h, struct model_arch *a)
{
	TRY(common_decoder(h, a, true));
	TRY(read_tie(h, a, false));
	a->fused_qkv = true;
	a->ffn = MODEL_FFN_FUSED;
	a->swa_pattern = 0; /* llama.cpp disables Phi-3's sliding window */
	return 0;
}

static int map_deepseek(struct hf *h, struct model_arch *a)
{
	int64_t n_shared = 0, freq = 1;

	TRY(common_decoder(h, a, true));
	TRY(read_tie(h, a, false));
	a->n_kv_heads = a->n_heads; /* MLA: every head has its own k and v */
	TRY(hf_int(h, "kv_lora_rank", true, 1, MODEL_MAX_LORA_RANK, &a->kv_lora_rank));
	TRY(hf_int(h, "q_lora_rank", false, 1, MODEL_MAX_LORA_RANK, &a->q_lora_rank));
	TRY(hf_int(h, "qk_nope_head_dim", true, 1, MODEL_MAX_HEAD_DIM, &a->qk_nope_head_dim));
	TRY(hf_int(h, "qk_rope_head_dim", true, 1, MODEL_MAX_HEAD_DIM, &a->qk_rope_head_dim));
	TRY(hf_int(h, "v_head_dim", true, 1, MODEL_MAX_HEAD_DIM, &a->v_head_dim));
	a->head_dim = 0;
	if (item(h, "n_routed_experts")) {
		TRY(read_moe(h, a, "n_routed_experts", "num_experts_per_tok", false));
		TRY(hf_int(h, "n_shared_experts", false, 0, MODEL_MAX_EXPERTS, &n_shared));
		TRY(hf_int(h, "first_k_dense_replace", false, 0, a->n_layers, &a->first_k_dense));
		TRY(hf_int(h, "moe_layer_freq", false, 1, 1, &freq));
		a->n_shared_experts = n_shared;
		a->shared_expert_intermediate_size = n_shared * a->moe_intermediate_size;
	}
	return 0;
}

/* GLM-4.5 (glm4_moe): GQA with q, k, v biases (no o bias), optional per-head q/k norms, and
 * DeepSeek-style MoE: routed experts of moe_intermediate_size, shared experts, leading dense
 * layers. The multi-token-prediction layer (num_nextn_predict_layers) is not counted: the
 * published totals leave it out and llama.cpp does not run it. */
static int map_glm4_moe(struct hf *h, struct model_arch *a)
{
	int64_t n_shared = 0;

	TRY(common_decoder(h, a, true));
	TRY(read_tie(h, a, false));
	TRY(hf_bool(h, "attention_bias", &a->attn_bias));
	TRY(hf_bool(h, "use_qk_norm", &a->qk_norm));
	TRY(read_moe(h, a, "n_routed_experts", "num_experts_per_tok", false));
	TRY(hf_int(h, "n_shared_experts", false, 0, MODEL_MAX_EXPERTS, &n_shared));
	TRY(hf_int(h, "first_k_dense_replace", false, 0, a->n_layers, &a->first_k_dense));
	a->n_shared_experts = n_shared;
	a->shared_expert_intermediate_size = n_shared * a->moe_intermediate_size;
	return 0;
}

/* cross_attention_layers: distinct layer indices below num_hidden_layers, at least one layer
 * left for self-attention. */
static int read_cross_layers(struct hf *h, struct model_arch *a)
{
	const cJSON *ar = item(h, "cross_attention_layers"), *e;

	if (!ar)
		return 0;
	if (!cJSON_IsArray(ar) || cJSON_GetArraySize(ar) >= a->n_layers)
		return hf_err(h, RF_E_INVALID_VALUE, "cross_attention_layers",
			      "cross_attention_layers must be an array of fewer than "
			      "num_hidden_layers (%lld) layer indices",
			      (long long)a->n_layers);
	cJSON_ArrayForEach(e, ar)
	{
		double d = e->valuedouble;
		if (!cJSON_IsNumber(e) || !isfinite(d) || floor(d) != d || d < 0 ||
		    d >= (double)a->n_layers || model_layer_is_cross(a, (int64_t)d))
			return hf_err(h, RF_E_INVALID_VALUE, "cross_attention_layers",
				      "cross_attention_layers must hold distinct layer indices "
				      "from 0 to %lld",
				      (long long)a->n_layers - 1);
		TRY(model_set_cross_layer(a, (int64_t)d));
	}
	return 0;
}

/* Llama 3.2 Vision (mllama): a Llama 3.1 text model whose cross_attention_layers attend to the
 * image (same projections and FFN, counted as layers; their K/V cached per image of
 * max_num_tiles tiles of (image_size / patch_size)^2 + 1 tokens), and a vision encoder counted
 * from vision_config at the top level. */
static int map_mllama(struct hf *h, struct model_arch *a)
{
	const cJSON *vc = cJSON_GetObjectItemCaseSensitive(h->root, "vision_config");
	const cJSON *ar;
	struct model_vision v = {.hidden = 1280,
				 .ff = 5120,
				 .layers = 32,
				 .global_layers = 8,
				 .image = 560,
				 .patch = 14,
				 .tiles = 4,
				 .channels = 3,
				 .aspect_ratios = 8,
				 .output_dim = 7680};
	struct hf vh = *h;
	size_t n = strlen(h->prefix);

	TRY(common_decoder(h, a, true));
	TRY(read_tie(h, a, false));
	TRY(read_cross_layers(h, a));
	/* vision_config sits beside text_config: errors name it under the config's prefix. */
	if (h->root != h->cfg && n >= 11 && strcmp(h->prefix + n - 11, "text_config") == 0)
		vh.prefix[n - 11 - (n > 11)] = '\0';
	vh.cfg = h->root;
	if (!cJSON_IsObject(vc))
		return hf_err(&vh, RF_E_MISSING_FIELD, "vision_config",
			      "vision_config is required for mllama");
	vh.cfg = vc;
	n = strlen(vh.prefix);
	snprintf(vh.prefix + n, sizeof(vh.prefix) - n, "%svision_config", n ? "." : "");
	TRY(hf_int(&vh, "hidden_size", false, 1, MODEL_MAX_HIDDEN, &v.hidden));
	TRY(hf_int(&vh, "intermediate_size", false, 1, MODEL_MAX_FF, &v.ff));
	TRY(hf_int(&vh, "num_hidden_layers", false, 1, MODEL_MAX_LAYERS, &v.layers));
	TRY(hf_int(&vh, "num_global_layers", false, 0, MODEL_MAX_LAYERS, &v.global_layers));
	TRY(hf_int(&vh, "image_size", false, 1, 65536, &v.image));
	TRY(hf_int(&vh, "patch_size", false, 1, 4096, &v.patch));
	TRY(hf_int(&vh, "max_num_tiles", false, 1, 64, &v.tiles));
	TRY(hf_int(&vh, "num_channels", false, 1, 16, &v.channels));
	TRY(hf_int(&vh, "vision_output_dim", false, 1, MODEL_MAX_HIDDEN, &v.output_dim));
	ar = item(&vh, "supported_aspect_ratios");
	if (ar) {
		if (!cJSON_IsArray(ar) || cJSON_GetArraySize(ar) > 4096)
			return hf_err(&vh, RF_E_INVALID_VALUE, "supported_aspect_ratios",
				      "supported_aspect_ratios must be an array");
		v.aspect_ratios = cJSON_GetArraySize(ar);
	}
	a->vision_params = model_mllama_vision_params(&v, a->hidden_size);
	a->cross_attn_tokens = v.tiles * ((v.image / v.patch) * (v.image / v.patch) + 1);
	if (a->vision_params < 0)
		return hf_err(&vh, RF_E_INVALID_VALUE, "", "vision_config is out of range");
	return 0;
}

static int map_gpt_neox(struct hf *h, struct model_arch *a)
{
	TRY(common_decoder(h, a, true));
	TRY(read_tie(h, a, false));
	a->fused_qkv = true;
	a->attn_bias = a->attn_out_bias = a->mlp_bias = a->norm_bias = true;
	a->ffn = MODEL_FFN_PLAIN;
	return 0;
}

static int map_gpt_oss(struct hf *h, struct model_arch *a)
{
	bool bias = true;
	int rc;

	TRY(common_decoder(h, a, true));
	TRY(read_tie(h, a, false));
	TRY(hf_bool(h, "attention_bias", &bias));
	a->attn_bias = a->attn_out_bias = bias;
	a->attn_sinks = true;
	a->mlp_bias = true;
	TRY(hf_int(h, "num_local_experts", true, 2, MODEL_MAX_EXPERTS, &a->n_experts));
	rc = hf_int(h, "num_experts_per_tok", false, 1, a->n_experts, &a->n_experts_per_tok);
	if (rc == 0)
		rc = hf_int(h, "experts_per_token", true, 1, a->n_experts, &a->n_experts_per_tok);
	if (rc < 0)
		return rc;
	a->moe_intermediate_size = a->intermediate_size;
	rc = read_layer_types(h, a);
	if (rc < 0)
		return rc;
	if (rc == 0)
		a->swa_pattern = 2;
	if (a->sliding_window == 0)
		a->swa_pattern = 0;
	return 0;
}

static int map_llama4(struct hf *h, struct model_arch *a)
{
	int64_t ff_mlp = 0, chunk = 0;
	bool moe = item(h, "num_local_experts") != NULL;

	TRY(common_decoder(h, a, true));
	TRY(read_tie(h, a, false));
	TRY(hf_int(h, "intermediate_size_mlp", moe, 1, MODEL_MAX_FF, &ff_mlp));
	if (moe) {
		/* intermediate_size is each expert's width (and the shared expert's);
		 * intermediate_size_mlp the dense layers'. */
		TRY(read_moe(h, a, "num_local_experts", "num_experts_per_tok", true));
		a->n_shared_experts = 1;
		a->shared_expert_intermediate_size = a->intermediate_size;
		a->intermediate_size = ff_mlp;
		TRY(hf_int(h, "interleave_moe_layer_step", false, 1, MODEL_MAX_LAYERS,
			   &a->moe_layer_step));
	}
	TRY(hf_int(h, "attention_chunk_size", false, 1, MODEL_MAX_POSITIONS, &chunk));
	if (chunk > 0) {
		/* llama.cpp: 3 of every 4 layers attend within chunks. */
		a->sliding_window = chunk;
		a->swa_pattern = 4;
		a->swa_chunked = true;
	}
	return 0;
}

static int map_t5(struct hf *h, struct model_arch *a)
{
	const char *proj = "relu";

	a->family = MODEL_ENCODER_DECODER;
	TRY(hf_int(h, "d_model", true, 1, MODEL_MAX_HIDDEN, &a->hidden_size));
	TRY(hf_int(h, "num_layers", true, 1, MODEL_MAX_LAYERS, &a->n_encoder_layers));
	a->n_layers = a->n_encoder_layers;
	TRY(hf_int(h, "num_decoder_layers", false, 1, MODEL_MAX_LAYERS, &a->n_layers));
	TRY(hf_int(h, "num_heads", true, 1, MODEL_MAX_HEADS, &a->n_heads));
	TRY(hf_int(h, "d_kv", true, 1, MODEL_MAX_HEAD_DIM, &a->head_dim));
	TRY(hf_int(h, "d_ff", true, 1, MODEL_MAX_FF, &a->intermediate_size));
	TRY(hf_int(h, "vocab_size", true, 1, MODEL_MAX_VOCAB, &a->vocab_size));
	a->rel_attn_buckets = 32;
	TRY(hf_int(h, "relative_attention_num_buckets", false, 1, 4096, &a->rel_attn_buckets));
	TRY(hf_int(h, "n_positions", false, 1, MODEL_MAX_POSITIONS, &a->max_position_embeddings));
	TRY(hf_str(h, "feed_forward_proj", &proj));
	if (strncmp(proj, "gated-", 6) == 0)
		a->ffn = MODEL_FFN_GATED;
	else if (strcmp(proj, "relu") == 0 || strcmp(proj, "gelu") == 0)
		a->ffn = MODEL_FFN_PLAIN;
	else
		return hf_err(h, RF_E_INVALID_VALUE, "feed_forward_proj",
			      "feed_forward_proj '%.40s' is not known", proj);
	TRY(read_tie(h, a, true));
	a->n_kv_heads = a->n_heads;
	return 0;
}

static int map_bert(struct hf *h, struct model_arch *a)
{
	a->family = MODEL_ENCODER;
	TRY(hf_int(h, "hidden_size", true, 1, MODEL_MAX_HIDDEN, &a->hidden_size));
	TRY(hf_int(h, "num_hidden_layers", true, 1, MODEL_MAX_LAYERS, &a->n_layers));
	TRY(hf_int(h, "num_attention_heads", true, 1, MODEL_MAX_HEADS, &a->n_heads));
	TRY(hf_int(h, "intermediate_size", true, 1, MODEL_MAX_FF, &a->intermediate_size));
	TRY(hf_int(h, "vocab_size", true, 1, MODEL_MAX_VOCAB, &a->vocab_size));
	TRY(hf_int(h, "max_position_embeddings", true, 1, 1 << 20, &a->max_position_embeddings));
	a->type_vocab_size = 2;
	TRY(hf_int(h, "type_vocab_size", false, 0, 1024, &a->type_vocab_size));
	a->n_kv_heads = a->n_heads;
	a->learned_pos = true;
	a->attn_bias = a->attn_out_bias = a->mlp_bias = a->norm_bias = true;
	a->ffn = MODEL_FFN_PLAIN;
	return 0;
}

static const struct {
	const char *hf;  /* model_type */
	const char *llm; /* llama.cpp architecture */
} known_types[] = {
	{"llama", "llama"},
	{"mistral", "llama"},
	{"mixtral", "llama"},
	{"qwen2", "qwen2"},
	{"qwen2_moe", "qwen2moe"},
	{"qwen3", "qwen3"},
	{"qwen3_moe", "qwen3moe"},
	{"gemma", "gemma"},
	{"gemma2", "gemma2"},
	{"gemma3", "gemma3"},
	{"phi3", "phi3"},
	{"deepseek_v2", "deepseek2"},
	{"deepseek_v3", "deepseek2"},
	{"glm4_moe", "glm4moe"},
	{"mllama", "mllama"},
	{"gpt_neox", "gptneox"},
	{"gpt_oss", "gpt-oss"},
	{"llama4", "llama4"},
	{"t5", "t5"},
	{"bert", "bert"},
	{"roberta", "bert"},
	{"xlm-roberta", "bert"},
};

/* The text model's type: "gemma3_text" -> "gemma3"; a container's text_config inherits. */
static void text_type(const char *in, char *out, size_t outlen)
{
	size_t n = strlen(in);

	if (n > 5 && strcmp(in + n - 5, "_text") == 0)
		n -= 5;
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, in, n);
	out[n] = '\0';
	if (strcmp(out, "ministral3") == 0 || strcmp(out, "mistral3") == 0)
		snprintf(out, outlen, "mistral");
	if (strcmp(out, "mllama_text_model") == 0)
		snprintf(out, outlen, "mllama");
}

/* The positions a config reaches with the YaRN it applies itself (rope_scaling {"rope_type" or
 * "type": "yarn", "factor", "original_max_position_embeddings"}, as Qwen's cards have users
 * add it; rope_parameters, as transformers 5 writes the same): vLLM derives its longest length as original x factor, and a GGUF converted from
 * it carries the same scaling for llama.cpp. Other kinds (llama3, longrope, linear) leave
 * max_position_embeddings as it is: it already counts them. A malformed rope_scaling is left
 * to the runtimes; it changes no size. */
static int64_t hf_yarn_positions(const cJSON *cfg, int64_t max_pos)
{
	const cJSON *rs = cJSON_GetObjectItemCaseSensitive(cfg, "rope_scaling"), *t, *f, *o;
	double reach;

	if (!cJSON_IsObject(rs))
		rs = cJSON_GetObjectItemCaseSensitive(cfg, "rope_parameters");
	t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
	f = cJSON_GetObjectItemCaseSensitive(rs, "factor");
	o = cJSON_GetObjectItemCaseSensitive(rs, "original_max_position_embeddings");

	if (!cJSON_IsString(t))
		t = cJSON_GetObjectItemCaseSensitive(rs, "type");
	if (!cJSON_IsObject(rs) || !cJSON_IsString(t) || strcmp(t->valuestring, "yarn") != 0 ||
	    !cJSON_IsNumber(f) || !(f->valuedouble > 1 && f->valuedouble <= 1024) ||
	    !cJSON_IsNumber(o) || !(o->valuedouble >= 1 && o->valuedouble <= MODEL_MAX_POSITIONS))
		return max_pos;
	reach = floor(o->valuedouble) * f->valuedouble;
	return reach > (double)max_pos && reach <= MODEL_MAX_POSITIONS ? (int64_t)reach : max_pos;
}

int model_arch_from_hf(const cJSON *cfg, const char *prefix, struct model_arch *out, char *field,
		       size_t fieldlen, char *msg, size_t msglen)
{
	struct hf h = {.cfg = cfg,
		       .root = cfg,
		       .field = field,
		       .fieldlen = fieldlen,
		       .msg = msg,
		       .msglen = msglen};
	struct model_arch a;
	const char *top = NULL, *inner = NULL, *vfield = NULL;
	const cJSON *tc;
	char type[MODEL_TYPE_LEN];
	const char *llm = NULL;
	int rc;

	snprintf(h.prefix, sizeof(h.prefix), "%s", prefix ? prefix : "");
	if (field && fieldlen)
		field[0] = '\0';
	if (msg && msglen)
		msg[0] = '\0';
	if (!cJSON_IsObject(cfg))
		return hf_err(&h, RF_E_INVALID_VALUE, "", "the architecture must be a JSON object");
	model_arch_init(&a);
	TRY(hf_str(&h, "model_type", &top));
	tc = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
	if (tc && !cJSON_IsNull(tc)) {
		if (!cJSON_IsObject(tc))
			return hf_err(&h, RF_E_INVALID_VALUE, "text_config",
				      "text_config must be an object");
		h.cfg = tc;
		snprintf(h.prefix, sizeof(h.prefix), "%s%stext_config", prefix ? prefix : "",
			 prefix && *prefix ? "." : "");
		TRY(hf_str(&h, "model_type", &inner));
	}
	if (!inner && !top) {
		h.cfg = cfg;
		snprintf(h.prefix, sizeof(h.prefix), "%s", prefix ? prefix : "");
		return hf_err(&h, RF_E_MISSING_FIELD, "model_type", "model_type is required");
	}
	text_type(inner ? inner : top, type, sizeof(type));
	for (size_t i = 0; i < sizeof(known_types) / sizeof(known_types[0]); i++)
		if (strcmp(known_types[i].hf, type) == 0)
			llm = known_types[i].llm;
	if (!llm) {
		struct hf t = h;
		if (!inner) {
			t.cfg = cfg;
			snprintf(t.prefix, sizeof(t.prefix), "%s", prefix ? prefix : "");
		}
		return hf_err(&t, RF_E_INVALID_VALUE, "model_type",
			      "model_type '%.40s' is not supported", inner ? inner : top);
	}
	snprintf(a.model_type, sizeof(a.model_type), "%s", type);
	snprintf(a.llm_arch, sizeof(a.llm_arch), "%s", llm);

	if (!strcmp(type, "llama") || !strcmp(type, "mistral"))
		rc = map_llama(&h, &a, false);
	else if (!strcmp(type, "mixtral"))
		rc = map_llama(&h, &a, true);
	else if (!strcmp(type, "qwen2"))
		rc = map_qwen(&h, &a, false, false);
	else if (!strcmp(type, "qwen2_moe"))
		rc = map_qwen(&h, &a, false, true);
	else if (!strcmp(type, "qwen3"))
		rc = map_qwen(&h, &a, true, false);
	else if (!strcmp(type, "qwen3_moe"))
		rc = map_qwen(&h, &a, true, true);
	else if (!strcmp(type, "gemma"))
		rc = map_gemma(&h, &a, 1);
	else if (!strcmp(type, "gemma2"))
		rc = map_gemma(&h, &a, 2);
	else if (!strcmp(type, "gemma3"))
		rc = map_gemma(&h, &a, 3);
	else if (!strcmp(type, "phi3"))
		rc = map_phi3(&h, &a);
	else if (!strcmp(type, "deepseek_v2") || !strcmp(type, "deepseek_v3"))
		rc = map_deepseek(&h, &a);
	else if (!strcmp(type, "glm4_moe"))
		rc = map_glm4_moe(&h, &a);
	else if (!strcmp(type, "mllama"))
		rc = map_mllama(&h, &a);
	else if (!strcmp(type, "gpt_neox"))
		rc = map_gpt_neox(&h, &a);
	else if (!strcmp(type, "gpt_oss"))
		rc = map_gpt_oss(&h, &a);
	else if (!strcmp(type, "llama4"))
		rc = map_llama4(&h, &a);
	else if (!strcmp(type, "t5"))
		rc = map_t5(&h, &a);
	else
		rc = map_bert(&h, &a);
	if (rc < 0)
		return rc;
	if (a.max_position_embeddings > 0)
		a.max_position_embeddings = hf_yarn_positions(h.cfg, a.max_position_embeddings);
	rc = model_arch_validate(&a, &vfield);
	if (rc < 0)
		return hf_err(&h, rc, vfield ? vfield : "", "%s is out of range for this model",
			      vfield ? vfield : "a field");
	*out = a;
	return 0;
}

/* ---- catalog ----------------------------------------------------------------------------- */

__attribute__((format(printf, 4, 5))) static int cat_err(char *err, size_t errlen, int rc,
							 const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static int copy_str(const cJSON *v, char *dst, size_t dstlen)
{
	size_t n;

	if (!cJSON_IsString(v) || !v->valuestring)
		return RF_E_INVALID_VALUE;
	n = strlen(v->valuestring);
	if (n == 0 || n >= dstlen)
		return RF_E_INVALID_VALUE;
	memcpy(dst, v->valuestring, n + 1);
	return 0;
}

static const char *const entry_keys[] = {
	"id",
	"name",
	"aliases",
	"config",
	"params_b",
	"active_params_b",
	"active_params_excludes_embedding",
	"stale",
	"instruct",
	"tasks",
	"license",
	"quality",
	"source",
	"notes",
	"artifacts",
	"long_context",
};

/* The first member of o whose name is none of keys, or NULL. */
static const cJSON *unknown_key(const cJSON *o, const char *const *keys, size_t n)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, o)
	{
		bool ok = false;
		for (size_t k = 0; k < n; k++)
			ok = ok || (v->string && strcmp(v->string, keys[k]) == 0);
		if (!ok)
			return v;
	}
	return NULL;
}

/* Whether s looks like a Hugging Face repository id: owner/name, one slash, no spaces. */
static bool is_repo_id(const char *s)
{
	const char *slash = strchr(s, '/');

	return slash && slash != s && slash[1] && !strchr(slash + 1, '/') && !strpbrk(s, " \t:");
}

/* Reads one repository id into dst; returns 0 or RF_E_INVALID_VALUE. */
static int copy_repo(const cJSON *v, char *dst, size_t dstlen)
{
	return copy_str(v, dst, dstlen) < 0 || !is_repo_id(dst) ? RF_E_INVALID_VALUE : 0;
}

/* The formats of one release, at where ("models[i].artifacts" or one of its releases):
 * "gguf": [{"repo", "quants"}] and "vllm": {"fp8", "awq", "gptq"}, into art. */
static int load_formats(const cJSON *a, const char *where, struct model_artifacts *art, char *err,
			size_t errlen)
{
	static const char *const ckpts[MODEL_CKPTS] = {"fp8", "awq", "gptq"};
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(a, "gguf"), *x, *q;

	if (v && (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > MODEL_MAX_GGUF_REPOS))
		return cat_err(err, errlen, RF_E_INVALID_VALUE,
			       "%s.gguf: an array of at most %d repositories", where,
			       MODEL_MAX_GGUF_REPOS);
	cJSON_ArrayForEach(x, v)
	{
		struct model_gguf_repo *g = &art->gguf[art->n_gguf];
		const cJSON *quants = cJSON_GetObjectItemCaseSensitive(x, "quants");
		if (!cJSON_IsObject(x) || cJSON_GetArraySize(x) != 2 ||
		    copy_repo(cJSON_GetObjectItemCaseSensitive(x, "repo"), g->repo,
			      sizeof(g->repo)) < 0 ||
		    !cJSON_IsArray(quants) || cJSON_GetArraySize(quants) == 0)
			return cat_err(err, errlen, RF_E_INVALID_VALUE,
				       "%s.gguf[%d]: {\"repo\": a repository id, "
				       "\"quants\": [file types]}",
				       where, art->n_gguf);
		cJSON_ArrayForEach(q, quants)
		{
			int ft = cJSON_IsString(q) ? rf_ftype_from_name(q->valuestring) : -1;
			if (ft < 0 || ft >= 64)
				return cat_err(
					err, errlen, RF_E_INVALID_VALUE,
					"%s.gguf[%d].quants: a llama.cpp file type (Q4_K_M...)",
					where, art->n_gguf);
			g->ftypes |= (uint64_t)1 << ft;
		}
		art->n_gguf++;
	}
	v = cJSON_GetObjectItemCaseSensitive(a, "vllm");
	if (v && !cJSON_IsObject(v))
		return cat_err(err, errlen, RF_E_INVALID_VALUE,
			       "%s.vllm: an object of format: repository", where);
	cJSON_ArrayForEach(x, v)
	{
		int f = -1;
		for (int k = 0; k < MODEL_CKPTS; k++)
			if (x->string && strcmp(x->string, ckpts[k]) == 0)
				f = k;
		if (f < 0 || copy_repo(x, art->ckpt[f], MODEL_ID_LEN) < 0)
			return cat_err(err, errlen, RF_E_INVALID_VALUE,
				       "%s.vllm.%.20s: fp8, awq or gptq, each a repository id",
				       where, x->string ? x->string : "?");
	}
	return 0;
}

/* models[i].artifacts.releases: [{"id", "gguf", "vllm"}], the artifacts of the other releases
 * the entry counts (a coder, an older Instruct). Each id is one of the entry's aliases written
 * as a Hugging Face id, once. */
static int load_releases(const cJSON *v, size_t i, struct model_entry *e, char *err, size_t errlen)
{
	static const char *const keys[] = {"id", "gguf", "vllm"};
	const cJSON *x;
	char where[80];

	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > MODEL_MAX_RELEASES)
		return cat_err(err, errlen, RF_E_INVALID_VALUE,
			       "models[%zu].artifacts.releases: an array of at most %d releases", i,
			       MODEL_MAX_RELEASES);
	cJSON_ArrayForEach(x, v)
	{
		struct model_release *r = &e->releases[e->n_releases];
		const cJSON *bad;
		bool known = false;
		int rc;
		snprintf(where, sizeof(where), "models[%zu].artifacts.releases[%d]", i,
			 e->n_releases);
		if (!cJSON_IsObject(x))
			return cat_err(err, errlen, RF_E_INVALID_VALUE, "%s: must be an object",
				       where);
		if ((bad = unknown_key(x, keys, sizeof(keys) / sizeof(keys[0]))) != NULL)
			return cat_err(err, errlen, RF_E_UNKNOWN_FIELD, "%s.%.60s: unknown field",
				       where, bad->string ? bad->string : "?");
		if (copy_repo(cJSON_GetObjectItemCaseSensitive(x, "id"), r->id, MODEL_ID_LEN) < 0)
			return cat_err(err, errlen, RF_E_INVALID_VALUE,
				       "%s.id: a repository id is required", where);
		for (int k = 0; k < e->n_aliases && !known; k++)
			known = strcmp(e->aliases[k], r->id) == 0;
		for (int k = 0; k < e->n_releases && known; k++)
			known = strcmp(e->releases[k].id, r->id) != 0;
		if (!known)
			return cat_err(err, errlen, RF_E_INVALID_VALUE,
				       "%s.id: must be one of the aliases, listed once", where);
		rc = load_formats(x, where, &r->art, err, errlen);
		if (rc < 0)
			return rc;
		e->n_releases++;
	}
	return 0;
}

/* models[i].artifacts: {"instruct", "gguf": [{"repo", "quants"}], "vllm": {"fp8", "awq",
 * "gptq"}, "releases", "source"}. The chat release must be a name the entry already has (its
 * id or an alias), so that every name still leads to one model. */
static int load_artifacts(const cJSON *a, size_t i, struct model_entry *e, char *err, size_t errlen)
{
	static const char *const keys[] = {"instruct", "gguf", "vllm", "releases", "source"};
	const cJSON *v;
	char where[48];
	int rc;

	if (!cJSON_IsObject(a))
		return cat_err(err, errlen, RF_E_INVALID_VALUE,
			       "models[%zu].artifacts: must be an object", i);
	if ((v = unknown_key(a, keys, sizeof(keys) / sizeof(keys[0]))) != NULL)
		return cat_err(err, errlen, RF_E_UNKNOWN_FIELD,
			       "models[%zu].artifacts.%.60s: unknown field", i,
			       v->string ? v->string : "?");
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(a, "source")))
		return cat_err(err, errlen, RF_E_MISSING_FIELD,
			       "models[%zu].artifacts.source: where the repositories are listed",
			       i);
	v = cJSON_GetObjectItemCaseSensitive(a, "instruct");
	if (v) {
		bool known = false;
		if (copy_repo(v, e->artifacts.instruct, MODEL_ID_LEN) < 0)
			return cat_err(err, errlen, RF_E_INVALID_VALUE,
				       "models[%zu].artifacts.instruct: a repository id", i);
		for (int k = 0; k < e->n_aliases && !known; k++)
			known = strcmp(e->aliases[k], e->artifacts.instruct) == 0;
		if (!known)
			return cat_err(err, errlen, RF_E_INVALID_VALUE,
				       "models[%zu].artifacts.instruct: must be one of the aliases",
				       i);
	}
	snprintf(where, sizeof(where), "models[%zu].artifacts", i);
	rc = load_formats(a, where, &e->artifacts, err, errlen);
	if (rc < 0)
		return rc;
	v = cJSON_GetObjectItemCaseSensitive(a, "releases");
	return v ? load_releases(v, i, e, err, errlen) : 0;
}

/* models[i].long_context: the rope scaling the model card documents beyond the trained
 * window, as the card's config.json snippet writes it: {"rope_type": "yarn", "factor",
 * "original_max_position_embeddings", "rope_theta" (the config's), "source": the card}. The scaled window must reach past
 * the model's own positions, or the entry would document nothing. */
static int load_long_context(const cJSON *o, size_t i, struct model_entry *e, char *err,
			     size_t errlen)
{
	static const char *const keys[] = {
		"rope_type", "factor", "original_max_position_embeddings", "rope_theta", "source"};
	const cJSON *th = cJSON_GetObjectItemCaseSensitive(o, "rope_theta");
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "rope_type");
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "factor");
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(o, "original_max_position_embeddings");
	const cJSON *v;

	if (!cJSON_IsObject(o))
		return cat_err(err, errlen, RF_E_INVALID_VALUE,
			       "models[%zu].long_context: must be an object", i);
	if ((v = unknown_key(o, keys, sizeof(keys) / sizeof(keys[0]))) != NULL)
		return cat_err(err, errlen, RF_E_UNKNOWN_FIELD,
			       "models[%zu].long_context.%.60s: unknown field", i,
			       v->string ? v->string : "?");
	if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "source")))
		return cat_err(err, errlen, RF_E_MISSING_FIELD,
			       "models[%zu].long_context.source: the model card that documents it",
			       i);
	if (!cJSON_IsString(t) || strcmp(t->valuestring, "yarn") != 0)
		return cat_err(err, errlen, RF_E_INVALID_VALUE,
			       "models[%zu].long_context.rope_type: \"yarn\"", i);
	if (!cJSON_IsNumber(f) || !(f->valuedouble > 1 && f->valuedouble <= 64))
		return cat_err(err, errlen, RF_E_INVALID_VALUE,
			       "models[%zu].long_context.factor: a number in (1, 64]", i);
	if (!cJSON_IsNumber(w) || w->valuedouble < 256 || w->valuedouble > MODEL_MAX_POSITIONS ||
	    w->valuedouble != floor(w->valuedouble) ||
	    w->valuedouble * f->valuedouble <= (double)e->arch.max_position_embeddings)
		return cat_err(err, errlen, RF_E_INVALID_VALUE,
			       "models[%zu].long_context.original_max_position_embeddings: a "
			       "window that the factor scales past max_position_embeddings",
			       i);
	if (!cJSON_IsNumber(th) || !(th->valuedouble >= 1 && th->valuedouble <= 1e12))
		return cat_err(
			err, errlen, RF_E_INVALID_VALUE,
			"models[%zu].long_context.rope_theta: the config's rope_theta, which "
			"vLLM's rope_parameters restate",
			i);
	e->long_ctx.rope_theta = th->valuedouble;
	e->long_ctx.type = MODEL_ROPE_YARN;
	e->long_ctx.factor = f->valuedouble;
	e->long_ctx.orig_ctx = (int64_t)w->valuedouble;
	return 0;
}

static int load_entry(const cJSON *m, size_t i, struct model_entry *e, char *err, size_t errlen)
{
	const cJSON *v, *x;
	char prefix[64], field[MODEL_JSON_FIELD_LEN], msg[256];
	int rc;

	if (!cJSON_IsObject(m))
		return cat_err(err, errlen, RF_E_INVALID_VALUE, "models[%zu]: must be an object",
			       i);
	if ((v = unknown_key(m, entry_keys, sizeof(entry_keys) / sizeof(entry_keys[0]))) != NULL)
		return cat_err(err, errlen, RF_E_UNKNOWN_FIELD, "models[%zu].%.60s: unknown field",
			       i, v->string ? v->string : "?");
	memset(e, 0, sizeof(*e));
	e->params_b = -1;
	e->active_params_b = -1;
	if (copy_str(cJSON_GetObjectItemCaseSensitive(m, "id"), e->id, sizeof(e->id)) < 0)
		return cat_err(err, errlen, RF_E_INVALID_VALUE,
			       "models[%zu].id: a string of 1 to %zu bytes is required", i,
			       sizeof(e->id) - 1);
	v = cJSON_GetObjectItemCaseSensitive(m, "name");
	if (v && copy_str(v, e->name, sizeof(e->name)) < 0)
		return cat_err(err, errlen, RF_E_INVALID_VALUE, "models[%zu].name: bad string", i);
	v = cJSON_GetObjectItemCaseSensitive(m, "aliases");
	if (v) {
		if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > MODEL_MAX_ALIASES)
			return cat_err(err, errlen, RF_E_INVALID_VALUE,
				       "models[%zu].aliases: an array of at most %d strings", i,
				       MODEL_MAX_ALIASES);
		cJSON_ArrayForEach(x, v)
		{
			if (copy_str(x, e->aliases[e->n_aliases], MODEL_ID_LEN) < 0)
				return cat_err(err, errlen, RF_E_INVALID_VALUE,
					       "models[%zu].aliases[%d]: bad string", i,
					       e->n_aliases);
			e->n_aliases++;
		}
	}
	snprintf(prefix, sizeof(prefix), "models[%zu].config", i);
	v = cJSON_GetObjectItemCaseSensitive(m, "config");
	if (!v)
		return cat_err(err, errlen, RF_E_MISSING_FIELD, "%s: required", prefix);
	rc = model_arch_from_hf(v, prefix, &e->arch, field, sizeof(field), msg, sizeof(msg));
	if (rc < 0)
		return cat_err(err, errlen, rc, "%s: %s", field, msg);
	v = cJSON_GetObjectItemCaseSensitive(m, "params_b");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble < 1e5))
			return cat_err(err, errlen, RF_E_INVALID_VALUE,
				       "models[%zu].params_b: a positive number", i);
		e->params_b = v->valuedouble;
	}
	v = cJSON_GetObjectItemCaseSensitive(m, "active_params_b");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) || !(v->valuedouble > 0 && v->valuedouble < 1e5))
			return cat_err(err, errlen, RF_E_INVALID_VALUE,
				       "models[%zu].active_params_b: a positive number", i);
		e->active_params_b = v->valuedouble;
	}
	v = cJSON_GetObjectItemCaseSensitive(m, "active_params_excludes_embedding");
	if (v) {
		if (!cJSON_IsBool(v))
			return cat_err(
				err, errlen, RF_E_INVALID_VALUE,
				"models[%zu].active_params_excludes_embedding: true or false", i);
		e->active_excludes_embedding = cJSON_IsTrue(v);
	}
	{
		/* Ranking flags: an older family (offered only when named), an id that is
		 * tuned to follow instructions (chat). */
		static const char *const flags[] = {"stale", "instruct"};
		for (int f = 0; f < 2; f++) {
			v = cJSON_GetObjectItemCaseSensitive(m, flags[f]);
			if (!v)
				continue;
			if (!cJSON_IsBool(v))
				return cat_err(err, errlen, RF_E_INVALID_VALUE,
					       "models[%zu].%s: true or false", i, flags[f]);
			if (f == 0)
				e->stale = cJSON_IsTrue(v);
			else
				e->instruct = cJSON_IsTrue(v);
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(m, "tasks");
	if (v) {
		if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > MODEL_MAX_TASKS)
			return cat_err(err, errlen, RF_E_INVALID_VALUE,
				       "models[%zu].tasks: an array", i);
		cJSON_ArrayForEach(x, v)
		{
			unsigned bit = cJSON_IsString(x) ? model_task_from_name(x->valuestring) : 0;
			if (!bit)
				return cat_err(err, errlen, RF_E_INVALID_VALUE,
					       "models[%zu].tasks: unknown task", i);
			e->tasks |= bit;
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(m, "license");
	if (v && copy_str(v, e->license, sizeof(e->license)) < 0)
		return cat_err(err, errlen, RF_E_INVALID_VALUE, "models[%zu].license: bad string",
			       i);
	v = cJSON_GetObjectItemCaseSensitive(m, "quality");
	if (v && copy_str(v, e->quality, sizeof(e->quality)) < 0)
		return cat_err(err, errlen, RF_E_INVALID_VALUE, "models[%zu].quality: bad string",
			       i);
	v = cJSON_GetObjectItemCaseSensitive(m, "source");
	if (v && copy_str(v, e->source, sizeof(e->source)) < 0)
		return cat_err(err, errlen, RF_E_INVALID_VALUE, "models[%zu].source: bad string",
			       i);
	v = cJSON_GetObjectItemCaseSensitive(m, "long_context");
	if (v && (rc = load_long_context(v, i, e, err, errlen)) < 0)
		return rc;
	v = cJSON_GetObjectItemCaseSensitive(m, "artifacts");
	return v ? load_artifacts(v, i, e, err, errlen) : 0;
}

int model_catalog_from_json(const cJSON *doc, struct model_catalog **out, char *err, size_t errlen)
{
	const cJSON *models = cJSON_GetObjectItemCaseSensitive(doc, "models"), *m;
	struct model_catalog *c;
	size_t n, i = 0;
	int rc = 0;

	if (err && errlen)
		err[0] = '\0';
	if (!cJSON_IsArray(models))
		return cat_err(err, errlen, RF_E_INVALID_VALUE, "models: an array is required");
	n = (size_t)cJSON_GetArraySize(models);
	if (n > MODEL_MAX_CATALOG)
		return cat_err(err, errlen, RF_E_TOO_LARGE, "models: at most %d entries",
			       MODEL_MAX_CATALOG);
	c = calloc(1, sizeof(*c));
	if (!c)
		return RF_E_NOMEM;
	c->models = calloc(n ? n : 1, sizeof(*c->models));
	if (!c->models) {
		free(c);
		return RF_E_NOMEM;
	}
	cJSON_ArrayForEach(m, models)
	{
		rc = load_entry(m, i, &c->models[i], err, errlen);
		if (rc < 0)
			break;
		/* Every name must lead to one model only. */
		c->n = i;
		for (int k = -1; k < c->models[i].n_aliases && rc == 0; k++) {
			const char *name = k < 0 ? c->models[i].id : c->models[i].aliases[k];
			const struct model_entry *other = model_catalog_find(c, name);
			bool self_dup = false;
			for (int j = -1; j < k && !self_dup; j++)
				self_dup = strcasecmp(j < 0 ? c->models[i].id :
							      c->models[i].aliases[j],
						      name) == 0;
			if (other || self_dup)
				rc = cat_err(err, errlen, RF_E_CONFLICT,
					     "models[%zu]: the name '%s' is already taken", i,
					     name);
		}
		if (rc < 0)
			break;
		i++;
		c->n = i;
	}
	if (rc < 0) {
		model_catalog_free(c);
		return rc;
	}
	/* Without the index (no memory for it) names are found by walking the models. */
	(void)model_catalog_index(c);
	*out = c;
	return 0;
}

/* ---- rendering ----------------------------------------------------------------------------- */

static bool add_num(cJSON *o, const char *k, int64_t v)
{
	return cJSON_AddNumberToObject(o, k, (double)v) != NULL;
}

cJSON *api_model_arch_json(const struct model_arch *a)
{
	cJSON *o = cJSON_CreateObject();
	bool ok = o != NULL;
	const bool t5 = a->family == MODEL_ENCODER_DECODER;

	ok = ok && cJSON_AddStringToObject(o, "model_type", a->model_type);
	ok = ok && add_num(o, t5 ? "d_model" : "hidden_size", a->hidden_size);
	ok = ok && add_num(o, t5 ? "num_decoder_layers" : "num_hidden_layers", a->n_layers);
	if (t5)
		ok = ok && add_num(o, "num_layers", a->n_encoder_layers);
	ok = ok && add_num(o, t5 ? "num_heads" : "num_attention_heads", a->n_heads);
	ok = ok && add_num(o, "num_key_value_heads", a->n_kv_heads);
	ok = ok && add_num(o, t5 ? "d_kv" : "head_dim", a->head_dim);
	ok = ok && add_num(o, t5 ? "d_ff" : "intermediate_size", a->intermediate_size);
	ok = ok && add_num(o, "vocab_size", a->vocab_size);
	if (a->max_position_embeddings > 0)
		ok = ok && add_num(o, "max_position_embeddings", a->max_position_embeddings);
	ok = ok && cJSON_AddBoolToObject(o, "tie_word_embeddings", a->tie_word_embeddings);
	if (a->n_experts > 1) {
		ok = ok && add_num(o, "num_experts", a->n_experts);
		ok = ok && add_num(o, "num_experts_per_tok", a->n_experts_per_tok);
		ok = ok && add_num(o, "moe_intermediate_size", a->moe_intermediate_size);
		if (a->n_shared_experts > 0)
			ok = ok && add_num(o, "shared_expert_intermediate_size",
					   a->shared_expert_intermediate_size);
	}
	if (a->kv_lora_rank > 0) {
		ok = ok && add_num(o, "kv_lora_rank", a->kv_lora_rank);
		ok = ok && add_num(o, "qk_rope_head_dim", a->qk_rope_head_dim);
		ok = ok && add_num(o, "qk_nope_head_dim", a->qk_nope_head_dim);
		ok = ok && add_num(o, "v_head_dim", a->v_head_dim);
	}
	if (a->sliding_window > 0)
		ok = ok && add_num(o, "sliding_window", a->sliding_window);
	if (!ok) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

cJSON *api_model_entry_json(const struct model_entry *e)
{
	cJSON *o = cJSON_CreateObject(), *al, *tk, *pp, *arch;
	struct model_params p;
	bool ok = o != NULL;
	int rc;

	ok = ok && cJSON_AddStringToObject(o, "id", e->id);
	if (ok && e->name[0])
		ok = cJSON_AddStringToObject(o, "name", e->name) != NULL;
	al = ok ? cJSON_AddArrayToObject(o, "aliases") : NULL;
	ok = al != NULL;
	for (int i = 0; ok && i < e->n_aliases; i++)
		ok = cJSON_AddItemToArray(al, cJSON_CreateString(e->aliases[i]));
	tk = ok ? cJSON_AddArrayToObject(o, "tasks") : NULL;
	ok = tk != NULL;
	for (unsigned bit = 1; ok && bit <= MODEL_TASK_EXTRACTIVE_QA; bit <<= 1)
		if (e->tasks & bit)
			ok = cJSON_AddItemToArray(tk, cJSON_CreateString(model_task_name(bit)));
	if (ok && e->license[0])
		ok = cJSON_AddStringToObject(o, "license", e->license) != NULL;
	if (ok)
		ok = (e->params_b > 0 ? cJSON_AddNumberToObject(o, "params_b", e->params_b) :
					cJSON_AddNullToObject(o, "params_b")) != NULL;
	rc = ok ? model_param_counts(&e->arch, &p) : 0;
	ok = ok && rc != RF_E_NOMEM;
	if (ok && rc == 0) {
		pp = cJSON_AddObjectToObject(o, "parameters");
		ok = pp && add_num(pp, "total", p.total) && add_num(pp, "active", p.active) &&
		     add_num(pp, "embedding", p.embedding);
	}
	arch = ok ? api_model_arch_json(&e->arch) : NULL;
	ok = arch && cJSON_AddItemToObject(o, "architecture", arch);
	if (!ok) {
		if (arch && o && !cJSON_GetObjectItemCaseSensitive(o, "architecture"))
			cJSON_Delete(arch);
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}
