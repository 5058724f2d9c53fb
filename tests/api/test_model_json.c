/*
 * Hugging Face config.json -> struct model_arch, for every supported model_type, with the
 * values of the real configs (quoted from the sources profiles/models.json cites); absurd or
 * missing fields named in the error; and the catalog: exact ids and aliases, any case, never a
 * substring, unknown names a 422 naming the request field.
 */
#include <ctype.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/model_json.h"
#include "core/err.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "tests/memory_calib.h"
#include "tests/test.h"

static char field[MODEL_JSON_FIELD_LEN], msg[256];

/* Maps the JSON text; returns the rc, the architecture in *a. */
static int map(const char *json, const char *prefix, struct model_arch *a)
{
	cJSON *cfg = cJSON_Parse(json);
	int rc;

	ck_assert_msg(cfg != NULL, "test JSON does not parse: %s", json);
	rc = model_arch_from_hf(cfg, prefix, a, field, sizeof(field), msg, sizeof(msg));
	cJSON_Delete(cfg);
	return rc;
}

static struct model_arch ok(const char *json)
{
	struct model_arch a;
	int rc = map(json, NULL, &a);

	ck_assert_msg(rc == 0, "mapping failed: %s: %s", field, msg);
	return a;
}

static int64_t total_params(const struct model_arch *a)
{
	struct model_params p;

	ck_assert_int_eq(model_param_counts(a, &p), 0);
	return p.total;
}

START_TEST(llama_mistral_mixtral)
{
	struct model_arch a =
		ok("{\"architectures\":[\"LlamaForCausalLM\"],\"attention_bias\":false,"
		   "\"hidden_size\":4096,\"intermediate_size\":14336,"
		   "\"max_position_embeddings\":131072,\"mlp_bias\":false,"
		   "\"model_type\":\"llama\",\"num_attention_heads\":32,"
		   "\"num_hidden_layers\":32,\"num_key_value_heads\":8,"
		   "\"rope_scaling\":{\"factor\":8.0,\"rope_type\":\"llama3\"},"
		   "\"rope_theta\":500000.0,\"tie_word_embeddings\":false,"
		   "\"torch_dtype\":\"bfloat16\",\"vocab_size\":128256}");

	ck_assert_str_eq(a.model_type, "llama");
	ck_assert_str_eq(a.llm_arch, "llama");
	ck_assert_int_eq(a.hidden_size, 4096);
	ck_assert_int_eq(a.n_layers, 32);
	ck_assert_int_eq(a.n_heads, 32);
	ck_assert_int_eq(a.n_kv_heads, 8);
	ck_assert_int_eq(a.head_dim, 128);
	ck_assert_int_eq(a.intermediate_size, 14336);
	ck_assert_int_eq(a.vocab_size, 128256);
	ck_assert_int_eq(a.max_position_embeddings, 131072);
	ck_assert(!a.tie_word_embeddings);
	ck_assert_int_eq(total_params(&a), 8030261248LL);

	/* Mistral: a head_dim of null, a window llama.cpp does not run. */
	a = ok("{\"model_type\":\"mistral\",\"hidden_size\":4096,\"intermediate_size\":14336,"
	       "\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":8,"
	       "\"head_dim\":null,\"vocab_size\":32000,\"max_position_embeddings\":32768,"
	       "\"sliding_window\":4096}");
	ck_assert_int_eq(a.head_dim, 128);
	ck_assert_int_eq(a.sliding_window, 4096);
	ck_assert_int_eq(a.swa_pattern, 0);

	a = ok("{\"model_type\":\"mixtral\",\"hidden_size\":4096,\"intermediate_size\":14336,"
	       "\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":8,"
	       "\"num_local_experts\":8,\"num_experts_per_tok\":2,\"vocab_size\":32000,"
	       "\"max_position_embeddings\":32768,\"sliding_window\":null,"
	       "\"tie_word_embeddings\":false}");
	ck_assert_int_eq(a.n_experts, 8);
	ck_assert_int_eq(a.n_experts_per_tok, 2);
	ck_assert_int_eq(a.moe_intermediate_size, 14336);
	ck_assert(model_layer_is_moe(&a, 0));
	ck_assert_int_eq(total_params(&a) / 100000000, 467);
}
END_TEST

START_TEST(qwen_families)
{
	struct model_arch a = ok(
		"{\"architectures\":[\"Qwen2ForCausalLM\"],\"hidden_size\":3584,"
		"\"intermediate_size\":18944,\"max_position_embeddings\":32768,\"max_window_layers\":28,"
		"\"model_type\":\"qwen2\",\"num_attention_heads\":28,\"num_hidden_layers\":28,"
		"\"num_key_value_heads\":4,\"rope_theta\":1000000.0,\"sliding_window\":131072,"
		"\"tie_word_embeddings\":false,\"use_sliding_window\":false,\"vocab_size\":152064}");

	ck_assert(a.attn_bias && !a.attn_out_bias);
	ck_assert_int_eq(a.swa_pattern, 0);
	ck_assert_int_eq(total_params(&a) / 10000000, 761);
	ck_assert_int_eq(a.max_position_embeddings, 32768);
	/* The same config with the rope_scaling Qwen2.5-7B-Instruct's card has users add: vLLM
	 * derives 32768 x 4 positions from it, and so does this. */
	a = ok("{\"hidden_size\":3584,\"intermediate_size\":18944,\"max_position_embeddings\":32768,"
	       "\"model_type\":\"qwen2\",\"num_attention_heads\":28,\"num_hidden_layers\":28,"
	       "\"num_key_value_heads\":4,\"vocab_size\":152064,\"rope_scaling\":{\"factor\":4.0,"
	       "\"original_max_position_embeddings\":32768,\"type\":\"yarn\"}}");
	ck_assert_int_eq(a.max_position_embeddings, 131072);
	ck_assert_int_eq(total_params(&a) / 10000000, 761);
	/* transformers 5 writes it as rope_parameters, rope_theta inside. */
	a = ok("{\"hidden_size\":3584,\"intermediate_size\":18944,\"max_position_embeddings\":32768,"
	       "\"model_type\":\"qwen2\",\"num_attention_heads\":28,\"num_hidden_layers\":28,"
	       "\"num_key_value_heads\":4,\"vocab_size\":152064,\"rope_parameters\":{\"factor\":2.0,"
	       "\"original_max_position_embeddings\":32768,\"rope_type\":\"yarn\","
	       "\"rope_theta\":1000000}}");
	ck_assert_int_eq(a.max_position_embeddings, 65536);
	/* Another kind, or no original window: the config's own figure. */
	a = ok("{\"hidden_size\":3584,\"intermediate_size\":18944,\"max_position_embeddings\":32768,"
	       "\"model_type\":\"qwen2\",\"num_attention_heads\":28,\"num_hidden_layers\":28,"
	       "\"num_key_value_heads\":4,\"vocab_size\":152064,\"rope_scaling\":{\"factor\":4.0,"
	       "\"rope_type\":\"yarn\"}}");
	ck_assert_int_eq(a.max_position_embeddings, 32768);

	a = ok("{\"model_type\":\"qwen2_moe\",\"hidden_size\":2048,\"intermediate_size\":5632,"
	       "\"num_hidden_layers\":24,\"num_attention_heads\":16,\"num_key_value_heads\":16,"
	       "\"vocab_size\":151936,\"max_position_embeddings\":8192,\"decoder_sparse_step\":1,"
	       "\"moe_intermediate_size\":1408,\"shared_expert_intermediate_size\":5632,"
	       "\"num_experts_per_tok\":4,\"num_experts\":60,\"tie_word_embeddings\":false,"
	       "\"mlp_only_layers\":[]}");
	ck_assert_int_eq(a.n_experts, 60);
	ck_assert_int_eq(a.shared_expert_intermediate_size, 5632);
	ck_assert(a.shared_expert_gate);
	/* Qwen1.5-MoE-A2.7B: 14.3B total. */
	ck_assert_int_eq(total_params(&a) / 100000000, 143);

	a = ok("{\"architectures\":[\"Qwen3ForCausalLM\"],\"attention_bias\":false,"
	       "\"head_dim\":128,\"hidden_size\":4096,\"intermediate_size\":12288,"
	       "\"max_position_embeddings\":40960,\"model_type\":\"qwen3\","
	       "\"num_attention_heads\":32,\"num_hidden_layers\":36,\"num_key_value_heads\":8,"
	       "\"sliding_window\":null,\"tie_word_embeddings\":false,\"vocab_size\":151936}");
	ck_assert(a.qk_norm && !a.attn_bias);
	ck_assert_int_eq(total_params(&a) / 10000000, 819);

	a = ok("{\"model_type\":\"qwen3_moe\",\"hidden_size\":2048,\"intermediate_size\":6144,"
	       "\"moe_intermediate_size\":768,\"num_hidden_layers\":48,\"num_attention_heads\":32,"
	       "\"num_key_value_heads\":4,\"num_experts\":128,\"num_experts_per_tok\":8,"
	       "\"vocab_size\":151936,\"max_position_embeddings\":40960,\"head_dim\":128,"
	       "\"decoder_sparse_step\":1,\"mlp_only_layers\":[],\"tie_word_embeddings\":false}");
	ck_assert_int_eq(a.n_experts, 128);
	ck_assert_int_eq(a.moe_intermediate_size, 768);
	ck_assert_int_eq(total_params(&a) / 10000000, 3053);
}
END_TEST

START_TEST(gemma_families)
{
	struct model_arch a = ok(
		"{\"architectures\":[\"Gemma2ForCausalLM\"],\"attn_logit_softcapping\":50.0,"
		"\"cache_implementation\":\"hybrid\",\"final_logit_softcapping\":30.0,\"head_dim\":256,"
		"\"hidden_activation\":\"gelu_pytorch_tanh\",\"hidden_size\":2304,"
		"\"intermediate_size\":9216,\"max_position_embeddings\":8192,\"model_type\":\"gemma2\","
		"\"num_attention_heads\":8,\"num_hidden_layers\":26,\"num_key_value_heads\":4,"
		"\"query_pre_attn_scalar\":256,\"sliding_window\":4096,\"vocab_size\":256000}");

	ck_assert(a.tie_word_embeddings); /* Gemma ties by default */
	ck_assert(a.post_norms);
	ck_assert_int_eq(a.swa_pattern, 2);
	ck_assert_int_eq(a.head_dim, 256);
	ck_assert_int_eq(total_params(&a) / 10000000, 261);

	/* Gemma 3 4B: the text model nested in text_config. */
	a = ok("{\"architectures\":[\"Gemma3ForConditionalGeneration\"],\"model_type\":\"gemma3\","
	       "\"text_config\":{\"model_type\":\"gemma3_text\",\"hidden_size\":2560,"
	       "\"intermediate_size\":10240,\"num_hidden_layers\":34,\"num_attention_heads\":8,"
	       "\"num_key_value_heads\":4,\"head_dim\":256,\"vocab_size\":262208,"
	       "\"max_position_embeddings\":131072,\"sliding_window\":1024,"
	       "\"rope_scaling\":{\"factor\":8.0,\"rope_type\":\"linear\"}},"
	       "\"vision_config\":{\"hidden_size\":1152,\"model_type\":\"siglip_vision_model\"}}");
	ck_assert_str_eq(a.model_type, "gemma3");
	ck_assert_int_eq(a.hidden_size, 2560);
	ck_assert_int_eq(a.swa_pattern, 6);
	ck_assert_int_eq(a.sliding_window, 1024);
	ck_assert(a.qk_norm && a.tie_word_embeddings);
	ck_assert_int_eq(total_params(&a) / 10000000, 388);

	/* Gemma 3 1B, not nested, with layer_types instead of a pattern. */
	a = ok("{\"model_type\":\"gemma3_text\",\"hidden_size\":1152,\"intermediate_size\":6912,"
	       "\"num_hidden_layers\":6,\"num_attention_heads\":4,\"num_key_value_heads\":1,"
	       "\"head_dim\":256,\"vocab_size\":262144,\"sliding_window\":512,"
	       "\"layer_types\":[\"sliding_attention\",\"sliding_attention\",\"sliding_attention\","
	       "\"sliding_attention\",\"sliding_attention\",\"full_attention\"]}");
	ck_assert_int_eq(a.swa_pattern, 6);
}
END_TEST

START_TEST(phi3_deepseek_neox)
{
	struct model_arch a = ok(
		"{\"architectures\":[\"Phi3ForCausalLM\"],\"hidden_size\":3072,"
		"\"intermediate_size\":8192,\"max_position_embeddings\":4096,\"model_type\":\"phi3\","
		"\"num_attention_heads\":32,\"num_hidden_layers\":32,\"num_key_value_heads\":32,"
		"\"original_max_position_embeddings\":4096,\"sliding_window\":2047,"
		"\"tie_word_embeddings\":false,\"vocab_size\":32064}");

	ck_assert(a.fused_qkv);
	ck_assert_int_eq(a.ffn, MODEL_FFN_FUSED);
	ck_assert_int_eq(a.swa_pattern, 0);
	ck_assert_int_eq(total_params(&a), 3821079552LL);

	a = ok("{\"architectures\":[\"DeepseekV2ForCausalLM\"],\"first_k_dense_replace\":1,"
	       "\"hidden_size\":2048,\"intermediate_size\":10944,\"kv_lora_rank\":512,"
	       "\"max_position_embeddings\":163840,\"model_type\":\"deepseek_v2\","
	       "\"moe_intermediate_size\":1408,\"moe_layer_freq\":1,\"n_routed_experts\":64,"
	       "\"n_shared_experts\":2,\"num_attention_heads\":16,\"num_experts_per_tok\":6,"
	       "\"num_hidden_layers\":27,\"num_key_value_heads\":16,\"q_lora_rank\":null,"
	       "\"qk_nope_head_dim\":128,\"qk_rope_head_dim\":64,\"v_head_dim\":128,"
	       "\"vocab_size\":102400}");
	ck_assert_int_eq(a.kv_lora_rank, 512);
	ck_assert_int_eq(a.q_lora_rank, 0);
	ck_assert_int_eq(a.head_dim, 192);
	ck_assert_int_eq(a.v_head_dim, 128);
	ck_assert_int_eq(a.first_k_dense, 1);
	ck_assert_int_eq(a.shared_expert_intermediate_size, 2 * 1408);
	ck_assert_int_eq(model_kv_k_width(&a), 576);
	ck_assert_int_eq(total_params(&a) / 10000000, 1570);

	a = ok("{\"architectures\":[\"GPTNeoXForCausalLM\"],\"hidden_size\":2560,"
	       "\"intermediate_size\":10240,\"max_position_embeddings\":2048,"
	       "\"model_type\":\"gpt_neox\",\"num_attention_heads\":32,\"num_hidden_layers\":32,"
	       "\"rotary_pct\":0.25,\"use_parallel_residual\":true,\"vocab_size\":50304}");
	ck_assert(a.fused_qkv && a.attn_bias && a.mlp_bias && a.norm_bias);
	ck_assert_int_eq(a.ffn, MODEL_FFN_PLAIN);
	ck_assert_int_eq(total_params(&a) / 10000000, 277);
}
END_TEST

START_TEST(gpt_oss_and_llama4)
{
	struct model_arch a = ok(
		"{\"model_type\":\"gpt_oss\",\"vocab_size\":201088,\"hidden_size\":2880,"
		"\"intermediate_size\":2880,\"num_hidden_layers\":4,\"num_attention_heads\":64,"
		"\"num_key_value_heads\":8,\"head_dim\":64,\"num_local_experts\":32,"
		"\"experts_per_token\":4,\"sliding_window\":128,\"swiglu_limit\":7.0,"
		"\"attention_bias\":true,\"layer_types\":[\"sliding_attention\",\"full_attention\","
		"\"sliding_attention\",\"full_attention\"]}");

	ck_assert_int_eq(a.n_experts, 32);
	ck_assert_int_eq(a.n_experts_per_tok, 4);
	ck_assert_int_eq(a.moe_intermediate_size, 2880);
	ck_assert(a.attn_sinks && a.attn_bias && a.attn_out_bias && a.mlp_bias);
	ck_assert_int_eq(a.swa_pattern, 2);
	ck_assert(model_layer_is_swa(&a, 0) && !model_layer_is_swa(&a, 1));

	a = ok("{\"architectures\":[\"Llama4ForConditionalGeneration\"],\"model_type\":\"llama4\","
	       "\"text_config\":{\"num_hidden_layers\":48,\"hidden_size\":5120,"
	       "\"num_attention_heads\":40,\"num_key_value_heads\":8,\"head_dim\":128,"
	       "\"intermediate_size\":8192,\"intermediate_size_mlp\":16384,\"vocab_size\":202048,"
	       "\"max_position_embeddings\":10485760,\"num_experts_per_tok\":1,"
	       "\"num_local_experts\":16,\"interleave_moe_layer_step\":1,"
	       "\"attention_chunk_size\":8192}}");
	ck_assert_str_eq(a.model_type, "llama4");
	ck_assert_int_eq(a.n_experts, 16);
	ck_assert_int_eq(a.moe_intermediate_size, 8192);
	ck_assert_int_eq(a.intermediate_size, 16384);
	ck_assert_int_eq(a.n_shared_experts, 1);
	ck_assert_int_eq(a.sliding_window, 8192);
	ck_assert_int_eq(a.swa_pattern, 4);
	ck_assert(a.swa_chunked);
	ck_assert_int_eq(total_params(&a) / 1000000000, 107);

	/* Mistral 3: the text model of a multimodal container. */
	a = ok("{\"architectures\":[\"Mistral3ForConditionalGeneration\"],\"model_type\":\"mistral3\","
	       "\"text_config\":{\"head_dim\":128,\"hidden_size\":5120,\"intermediate_size\":32768,"
	       "\"max_position_embeddings\":131072,\"model_type\":\"mistral\","
	       "\"num_attention_heads\":32,\"num_hidden_layers\":40,\"num_key_value_heads\":8,"
	       "\"sliding_window\":null,\"vocab_size\":131072},"
	       "\"vision_config\":{\"hidden_size\":1024}}");
	ck_assert_str_eq(a.model_type, "mistral");
	ck_assert_int_eq(total_params(&a), 23572403200LL);
}
END_TEST

START_TEST(t5_bert_roberta)
{
	struct model_arch a =
		ok("{\"architectures\":[\"T5ForConditionalGeneration\"],"
		   "\"d_ff\":2816,\"d_kv\":64,\"d_model\":1024,\"decoder_start_token_id\":0,"
		   "\"feed_forward_proj\":\"gated-gelu\",\"model_type\":\"t5\","
		   "\"n_positions\":512,\"num_decoder_layers\":24,\"num_heads\":16,"
		   "\"num_layers\":24,\"relative_attention_num_buckets\":32,"
		   "\"tie_word_embeddings\":false,\"vocab_size\":32128}");

	ck_assert_int_eq(a.family, MODEL_ENCODER_DECODER);
	ck_assert_int_eq(a.n_encoder_layers, 24);
	ck_assert_int_eq(a.n_layers, 24);
	ck_assert_int_eq(a.head_dim, 64);
	ck_assert_int_eq(a.ffn, MODEL_FFN_GATED);
	ck_assert_int_eq(total_params(&a), 783150080LL);

	a = ok("{\"architectures\":[\"BertModel\"],\"hidden_size\":384,\"intermediate_size\":1536,"
	       "\"max_position_embeddings\":512,\"model_type\":\"bert\",\"num_attention_heads\":12,"
	       "\"num_hidden_layers\":12,\"type_vocab_size\":2,\"vocab_size\":30522}");
	ck_assert_int_eq(a.family, MODEL_ENCODER);
	ck_assert(a.learned_pos);
	ck_assert_int_eq(total_params(&a) / 100000, 332);

	a = ok("{\"architectures\":[\"RobertaForQuestionAnswering\"],\"hidden_size\":768,"
	       "\"intermediate_size\":3072,\"max_position_embeddings\":514,"
	       "\"model_type\":\"roberta\",\"num_attention_heads\":12,\"num_hidden_layers\":12,"
	       "\"type_vocab_size\":1,\"vocab_size\":50265}");
	ck_assert_int_eq(a.family, MODEL_ENCODER);
	ck_assert_int_eq(a.type_vocab_size, 1);
	ck_assert_int_eq(total_params(&a) / 1000000, 124);
}
END_TEST

static const char base_llama[] =
	"{\"model_type\":\"llama\",\"hidden_size\":4096,\"intermediate_size\":14336,"
	"\"num_hidden_layers\":%s,\"num_attention_heads\":32,\"num_key_value_heads\":%s,"
	"\"vocab_size\":%s}";

static int map_llama(const char *layers, const char *kv, const char *vocab)
{
	char json[512];
	struct model_arch a;

	snprintf(json, sizeof(json), base_llama, layers, kv, vocab);
	return map(json, "model.architecture", &a);
}

START_TEST(bad_fields_are_named)
{
	struct model_arch a;

	ck_assert_int_eq(map_llama("32", "8", "128256"), 0);
	ck_assert_int_eq(map_llama("0", "8", "128256"), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.num_hidden_layers");
	ck_assert_int_eq(map_llama("4e9", "8", "128256"), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.num_hidden_layers");
	ck_assert_int_eq(map_llama("-3", "8", "128256"), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.num_hidden_layers");
	ck_assert_int_eq(map_llama("32.5", "8", "128256"), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.num_hidden_layers");
	ck_assert_int_eq(map_llama("\"32\"", "8", "128256"), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.num_hidden_layers");
	ck_assert_int_eq(map_llama("32", "3", "128256"), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.num_key_value_heads");
	ck_assert_int_eq(map_llama("32", "64", "128256"), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.num_key_value_heads");
	ck_assert_int_eq(map_llama("32", "8", "20000000"), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.vocab_size");
	ck_assert_int_eq(map_llama("32", "8", "1e300"), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.vocab_size");
	ck_assert_int_eq(map_llama("32", "8", "true"), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.vocab_size");

	/* Missing fields. */
	ck_assert_int_eq(map("{\"model_type\":\"llama\",\"num_hidden_layers\":2}", NULL, &a),
			 RF_E_MISSING_FIELD);
	ck_assert_str_eq(field, "hidden_size");
	ck_assert_int_eq(map("{\"hidden_size\":4096}", "architecture", &a), RF_E_MISSING_FIELD);
	ck_assert_str_eq(field, "architecture.model_type");
	ck_assert_int_eq(map("{\"model_type\":\"mixtral\",\"hidden_size\":4096,"
			     "\"intermediate_size\":14336,\"num_hidden_layers\":32,"
			     "\"num_attention_heads\":32,\"vocab_size\":32000,"
			     "\"num_local_experts\":8}",
			     NULL, &a),
			 RF_E_MISSING_FIELD);
	ck_assert_str_eq(field, "num_experts_per_tok");
	ck_assert_int_eq(map("{\"model_type\":\"t5\",\"d_model\":512,\"num_layers\":6,"
			     "\"num_heads\":8,\"d_ff\":2048,\"vocab_size\":32128}",
			     NULL, &a),
			 RF_E_MISSING_FIELD);
	ck_assert_str_eq(field, "d_kv");

	/* Unknown types, wrong shapes of the whole, nested errors with their path. */
	ck_assert_int_eq(map("{\"model_type\":\"rwkv5\",\"hidden_size\":2560}", "m", &a),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "m.model_type");
	ck_assert_ptr_nonnull(strstr(msg, "rwkv5"));
	ck_assert_int_eq(map("[1,2]", "architecture", &a), RF_E_INVALID_VALUE);
	ck_assert_int_eq(
		map("{\"model_type\":\"gemma3\",\"text_config\":{\"model_type\":"
		    "\"gemma3_text\",\"hidden_size\":2560,\"intermediate_size\":10240,"
		    "\"num_hidden_layers\":0,\"num_attention_heads\":8,\"vocab_size\":262208}}",
		    "model.architecture", &a),
		RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.architecture.text_config.num_hidden_layers");
	ck_assert_int_eq(map("{\"model_type\":\"gemma3\",\"text_config\":7}", NULL, &a),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "text_config");
	ck_assert_int_eq(map("{\"model_type\":\"llama\",\"hidden_size\":4096,"
			     "\"intermediate_size\":14336,\"num_hidden_layers\":32,"
			     "\"num_attention_heads\":32,\"vocab_size\":1000,"
			     "\"tie_word_embeddings\":\"yes\"}",
			     NULL, &a),
			 RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "tie_word_embeddings");
	ck_assert_int_eq(
		map("{\"model_type\":\"gpt_oss\",\"hidden_size\":2880,"
		    "\"intermediate_size\":2880,\"num_hidden_layers\":4,"
		    "\"num_attention_heads\":64,\"num_key_value_heads\":8,\"vocab_size\":1000,"
		    "\"num_local_experts\":32,\"num_experts_per_tok\":4,\"sliding_window\":128,"
		    "\"layer_types\":[\"sliding_attention\"]}",
		    NULL, &a),
		RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "layer_types");
	ck_assert_int_eq(
		map("{\"model_type\":\"qwen3_moe\",\"hidden_size\":2048,"
		    "\"num_hidden_layers\":4,\"num_attention_heads\":32,\"vocab_size\":1000,"
		    "\"num_experts\":128,\"num_experts_per_tok\":200,"
		    "\"moe_intermediate_size\":768}",
		    NULL, &a),
		RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "num_experts_per_tok");
}
END_TEST

START_TEST(errors_as_the_api_answers_them)
{
	cJSON *cfg = cJSON_Parse("{\"model_type\":\"llama\",\"hidden_size\":-4096}");
	struct api_reply r = {0};
	struct model_arch a;
	cJSON *body, *err;

	ck_assert_int_eq(api_model_arch_from_hf(cfg, "model.architecture", &a, &r),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(r.status, 422);
	body = cJSON_Parse(r.body);
	err = cJSON_GetObjectItem(body, "error");
	ck_assert_str_eq(cJSON_GetObjectItem(err, "code")->valuestring, "invalid_value");
	ck_assert_str_eq(cJSON_GetObjectItem(err, "field")->valuestring,
			 "model.architecture.hidden_size");
	cJSON_Delete(body);
	cJSON_Delete(cfg);
	api_reply_reset(&r);
}
END_TEST

START_TEST(catalog_resolution)
{
	struct model_catalog *c = mc_catalog_load(t_src_dir());
	const struct model_entry *e = NULL;
	struct api_reply r = {0};
	static const char *const same[] = {
		"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",      "llama-3.1-8b",
		"LLAMA-3.1-8B-INSTRUCT",   "meta-llama/meta-llama-3.1-8b-instruct",
	};
	static const char *const none[] = {
		"llama-3.1",
		"llama",
		"8b",
		"Llama-3.1-8B-Instruct-GGUF",
		"bartowski/Llama-3.1-8B",
		"llama-3.1-8b ",
		" llama-3.1-8b",
		"meta-llama/Llama-3.1-8",
		"",
		"qwen9.9", /* a bare family name Ollama does not know ("qwen2.5" is its :latest) */
	};

	ck_assert_ptr_nonnull(c);
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		ck_assert_int_eq(api_model_resolve(c, same[i], "model.id", &r, &e), 0);
		ck_assert_str_eq(e->id, "meta-llama/Llama-3.1-8B");
	}
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		cJSON *body, *err;
		e = NULL;
		ck_assert_int_eq(api_model_resolve(c, none[i], "model.id", &r, &e),
				 RF_E_INVALID_VALUE);
		ck_assert_ptr_null(e);
		ck_assert_int_eq(r.status, 422);
		body = cJSON_Parse(r.body);
		err = cJSON_GetObjectItem(body, "error");
		ck_assert_str_eq(cJSON_GetObjectItem(err, "field")->valuestring, "model.id");
		cJSON_Delete(body);
		api_reply_reset(&r);
	}
	/* The seeds' ids, in the seeds' spelling. */
	ck_assert_int_eq(api_model_resolve(c, "qwen/Qwen2.5-3B", "model.id", &r, &e), 0);
	ck_assert_str_eq(e->id, "Qwen/Qwen2.5-3B");
	ck_assert_int_eq(api_model_resolve(c, "deepset/roberta-base-squad2", "model.id", &r, &e),
			 0);
	ck_assert(e->tasks & MODEL_TASK_EXTRACTIVE_QA);
	ck_assert_int_eq(api_model_resolve(c, "google/flan-t5-large", "model.id", &r, &e), 0);
	ck_assert(e->tasks & MODEL_TASK_SUMMARIZATION);
	ck_assert_int_eq(api_model_resolve(c, "meta-llama/Llama-4-Maverick-17B-128E-Instruct", "id",
					   &r, &e),
			 0);
	ck_assert_int_eq(e->arch.n_experts, 128);
	model_catalog_free(c);
}
END_TEST

/* The loaded catalog is indexed, and the index finds what a walk of the models finds: every
 * id and alias in any ASCII case, and nothing for a name cut short, lengthened or unknown. */
START_TEST(the_name_index_finds_what_the_walk_finds)
{
	struct model_catalog *c = mc_catalog_load(t_src_dir());
	struct model_catalog walk;
	char name[MODEL_ID_LEN + 8];
	size_t names = 0;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(c->buckets);
	walk = *c;
	walk.buckets = NULL; /* the same models, found by walking */
	walk.keys = NULL;
	for (size_t i = 0; i < c->n; i++)
		for (int a = -1; a < c->models[i].n_aliases; a++) {
			const char *n = a < 0 ? c->models[i].id : c->models[i].aliases[a];
			size_t len = strlen(n);
			ck_assert_ptr_eq(model_catalog_find(c, n), &c->models[i]);
			ck_assert_ptr_eq(model_catalog_find(&walk, n), &c->models[i]);
			for (size_t k = 0; k <= len; k++)
				name[k] = (char)(k % 2 ? toupper((unsigned char)n[k]) :
							 tolower((unsigned char)n[k]));
			ck_assert_ptr_eq(model_catalog_find(c, name), &c->models[i]);
			snprintf(name, sizeof(name), "%s-x", n);
			ck_assert_ptr_eq(model_catalog_find(c, name),
					 model_catalog_find(&walk, name));
			snprintf(name, sizeof(name), "%.*s", (int)(len - 1), n);
			ck_assert_ptr_eq(model_catalog_find(c, name),
					 model_catalog_find(&walk, name));
			names++;
		}
	ck_assert_uint_gt(names, c->n);
	ck_assert_ptr_null(model_catalog_find(c, "no-such-model"));
	ck_assert_ptr_null(model_catalog_find(c, ""));
	ck_assert_ptr_null(model_catalog_find(c, NULL));
	model_catalog_free(c);
}
END_TEST

static int load(const char *json, char *err, size_t errlen)
{
	cJSON *doc = cJSON_Parse(json);
	struct model_catalog *c = NULL;
	int rc;

	ck_assert_ptr_nonnull(doc);
	rc = model_catalog_from_json(doc, &c, err, errlen);
	if (rc == 0) {
		ck_assert_ptr_nonnull(c);
		model_catalog_free(c);
	}
	cJSON_Delete(doc);
	return rc;
}

#define CFG                                                                                        \
	"{\"model_type\":\"llama\",\"hidden_size\":64,\"intermediate_size\":128,"                  \
	"\"num_hidden_layers\":2,\"num_attention_heads\":4,\"vocab_size\":100}"

START_TEST(catalog_loader_refuses_bad_entries)
{
	char err[256];

	ck_assert_int_eq(load("{\"models\":[{\"id\":\"a/b\",\"aliases\":[\"x\"],\"config\":" CFG
			      ",\"params_b\":0.001,\"tasks\":[\"text-generation\"]}]}",
			      err, sizeof(err)),
			 0);
	ck_assert_int_eq(load("{\"models\":{}}", err, sizeof(err)), RF_E_INVALID_VALUE);
	/* A name used twice (ignoring case) would make lookups ambiguous. */
	ck_assert_int_eq(load("{\"models\":[{\"id\":\"a/b\",\"config\":" CFG
			      "},{\"id\":\"c/d\",\"aliases\":[\"A/B\"],\"config\":" CFG "}]}",
			      err, sizeof(err)),
			 RF_E_CONFLICT);
	ck_assert_ptr_nonnull(strstr(err, "models[1]"));
	ck_assert_int_eq(
		load("{\"models\":[{\"id\":\"a/b\",\"aliases\":[\"x\",\"X\"],\"config\":" CFG "}]}",
		     err, sizeof(err)),
		RF_E_CONFLICT);
	/* Unknown keys, bad configs, bad tasks. */
	ck_assert_int_eq(load("{\"models\":[{\"id\":\"a/b\",\"paramz_b\":1,\"config\":" CFG "}]}",
			      err, sizeof(err)),
			 RF_E_UNKNOWN_FIELD);
	ck_assert_int_eq(load("{\"models\":[{\"id\":\"a/b\",\"config\":{\"model_type\":\"llama\","
			      "\"hidden_size\":0}}]}",
			      err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "models[0].config.hidden_size"));
	ck_assert_int_eq(load("{\"models\":[{\"id\":\"a/b\"}]}", err, sizeof(err)),
			 RF_E_MISSING_FIELD);
	ck_assert_int_eq(load("{\"models\":[{\"id\":\"a/b\",\"tasks\":[\"dancing\"],\"config\":" CFG
			      "}]}",
			      err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(load("{\"models\":[{\"id\":\"\",\"config\":" CFG "}]}", err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(load("{\"models\":[{\"id\":\"a/b\",\"params_b\":-1,\"config\":" CFG "}]}",
			      err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	/* Artifacts: a chat release among the names, repositories as owner/name, known quants and
	 * formats, a source. */
#define ART(x)                                                                                     \
	"{\"models\":[{\"id\":\"a/b\",\"aliases\":[\"a/b-Instruct\"],\"config\":" CFG              \
	",\"artifacts\":{" x "}}]}"
	ck_assert_int_eq(
		load(ART("\"instruct\":\"a/b-Instruct\",\"gguf\":[{\"repo\":\"q/b-GGUF\","
			 "\"quants\":[\"Q4_K_M\",\"Q8_0\"]}],\"vllm\":{\"awq\":\"q/b-AWQ\"},"
			 "\"source\":\"cards\""),
		     err, sizeof(err)),
		0);
	ck_assert_int_eq(load(ART("\"instruct\":\"a/c-Instruct\",\"source\":\"s\""), err,
			      sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "artifacts.instruct"));
	ck_assert_int_eq(load(ART("\"gguf\":[{\"repo\":\"q/b\",\"quants\":[\"Q9_K\"]}],"
				  "\"source\":\"s\""),
			      err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(load(ART("\"gguf\":[{\"repo\":\"no-owner\",\"quants\":[\"Q8_0\"]}],"
				  "\"source\":\"s\""),
			      err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(load(ART("\"vllm\":{\"int3\":\"q/b\"},\"source\":\"s\""), err,
			      sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(load(ART("\"vllm\":{\"awq\":\"q/b-AWQ\"}"), err, sizeof(err)),
			 RF_E_MISSING_FIELD);
	ck_assert_int_eq(load(ART("\"ollama\":\"b\",\"source\":\"s\""), err, sizeof(err)),
			 RF_E_UNKNOWN_FIELD);
#undef ART
	/* long_context: the card's YaRN, scaling past the config's positions, with its source. */
#define LONG(x)                                                                                    \
	"{\"models\":[{\"id\":\"a/b\",\"config\":{\"model_type\":\"llama\",\"hidden_size\":64,"    \
	"\"intermediate_size\":128,\"num_hidden_layers\":2,\"num_attention_heads\":4,"             \
	"\"vocab_size\":100,\"max_position_embeddings\":2048},\"long_context\":{" x "}}]}"
	ck_assert_int_eq(load(LONG("\"rope_type\":\"yarn\",\"factor\":4.0,"
				   "\"original_max_position_embeddings\":4096,\"rope_theta\":10000,"
				   "\"source\":\"card\""),
			      err, sizeof(err)),
			 0);
	ck_assert_int_eq(load(LONG("\"rope_type\":\"yarn\",\"factor\":4.0,"
				   "\"original_max_position_embeddings\":4096,\"source\":\"card\""),
			      err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "long_context.rope_theta"));
	ck_assert_int_eq(load(LONG("\"rope_type\":\"yarn\",\"factor\":4.0,"
				   "\"original_max_position_embeddings\":4096"),
			      err, sizeof(err)),
			 RF_E_MISSING_FIELD);
	ck_assert_int_eq(load(LONG("\"rope_type\":\"dynamic\",\"factor\":4.0,"
				   "\"original_max_position_embeddings\":4096,\"source\":\"card\""),
			      err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(load(LONG("\"rope_type\":\"yarn\",\"factor\":1.0,"
				   "\"original_max_position_embeddings\":4096,\"source\":\"card\""),
			      err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(load(LONG("\"rope_type\":\"yarn\",\"factor\":2.0,"
				   "\"original_max_position_embeddings\":256,\"source\":\"card\""),
			      err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "long_context.original_max_position_embeddings"));
	ck_assert_int_eq(load(LONG("\"rope_type\":\"yarn\",\"factor\":4.0,\"attn_factor\":1,"
				   "\"original_max_position_embeddings\":4096,\"source\":\"card\""),
			      err, sizeof(err)),
			 RF_E_UNKNOWN_FIELD);
#undef LONG
}
END_TEST

/* artifacts.releases: a release the entry counts (a coder of a base model) with its own
 * repositories, found by its id and served as its own entry; a release that is no alias, one
 * listed twice, an unknown key or a bad quant is refused with the field named. */
START_TEST(catalog_loads_a_releases_artifacts)
{
#define REL(x)                                                                                     \
	"{\"models\":[{\"id\":\"a/b\",\"aliases\":[\"a/b-Instruct\",\"a/b-Coder-Instruct\"],"      \
	"\"config\":" CFG ",\"artifacts\":{\"instruct\":\"a/b-Instruct\",\"gguf\":[{\"repo\":"     \
	"\"q/b-Instruct-GGUF\",\"quants\":[\"Q8_0\"]}],\"releases\":[" x "],\"source\":\"s\"}}]}"
	static const char good[] = REL(
		"{\"id\":\"a/b-Coder-Instruct\",\"gguf\":[{\"repo\":\"q/b-Coder-GGUF\",\"quants\":"
		"[\"Q4_K_M\",\"Q6_K\"]}],\"vllm\":{\"awq\":\"q/b-Coder-AWQ\"}}");
	char err[256];
	cJSON *doc = cJSON_Parse(good);
	struct model_catalog *c = NULL;
	const struct model_entry *m;
	const struct model_release *r;
	struct model_entry view;

	ck_assert_int_eq(model_catalog_from_json(doc, &c, err, sizeof(err)), 0);
	m = model_catalog_find(c, "a/b-coder-instruct");
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(m->n_releases, 1);
	ck_assert_str_eq(model_other_release(m, "a/b-Coder-Instruct"), "a/b-Coder-Instruct");
	r = model_release_find(m, model_other_release(m, "a/b-Coder-Instruct"));
	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_null(model_release_find(m, "a/b-Instruct"));
	model_release_entry(m, r, &view);
	ck_assert_str_eq(model_chat_id(&view), "a/b-Coder-Instruct");
	ck_assert_str_eq(model_gguf_repo_for(&view, rf_ftype_from_name("Q6_K"))->repo,
			 "q/b-Coder-GGUF");
	ck_assert_ptr_null(model_gguf_repo_for(&view, rf_ftype_from_name("Q8_0")));
	ck_assert_str_eq(model_ckpt_repo(&view, MODEL_CKPT_AWQ), "q/b-Coder-AWQ");
	ck_assert_ptr_null(model_ckpt_repo(m, MODEL_CKPT_AWQ)); /* the entry's own: none */
	model_catalog_free(c);
	cJSON_Delete(doc);

	ck_assert_int_eq(load(REL("{\"id\":\"a/other-Instruct\",\"gguf\":[]}"), err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "artifacts.releases[0].id"));
	ck_assert_int_eq(
		load(REL("{\"id\":\"a/b-Coder-Instruct\"},{\"id\":\"a/b-Coder-Instruct\"}"), err,
		     sizeof(err)),
		RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "releases[1].id"));
	ck_assert_int_eq(load(REL("{\"id\":\"a/b-Coder-Instruct\",\"ollama\":\"x\"}"), err,
			      sizeof(err)),
			 RF_E_UNKNOWN_FIELD);
	ck_assert_int_eq(load(REL("{\"id\":\"a/b-Coder-Instruct\",\"gguf\":[{\"repo\":\"q/c\","
				  "\"quants\":[\"Q9_K\"]}]}"),
			      err, sizeof(err)),
			 RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "releases[0].gguf[0].quants"));
	ck_assert_int_eq(load(REL("\"a/b-Coder-Instruct\""), err, sizeof(err)), RF_E_INVALID_VALUE);
	ck_assert_int_eq(load(REL("{},{},{},{},{}"), err, sizeof(err)), RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "at most"));
#undef REL
}
END_TEST

/* Meta wrote "Meta-" before Llama 3 and 3.1 repository names and later dropped it: both
 * spellings are the release itself, not another release. */
START_TEST(meta_spelling_is_the_same_release)
{
	static const char doc_text[] =
		"{\"models\":[{\"id\":\"meta-llama/Llama-3.1-8B\",\"aliases\":["
		"\"meta-llama/Llama-3.1-8B-Instruct\",\"meta-llama/Meta-Llama-3.1-8B\","
		"\"meta-llama/Meta-Llama-3.1-8B-Instruct\",\"meta-llama/Llama-3.1-8B-Coder\"],"
		"\"config\":" CFG
		",\"artifacts\":{\"instruct\":\"meta-llama/Llama-3.1-8B-Instruct\","
		"\"source\":\"s\"}}]}";
	char err[256];
	cJSON *doc = cJSON_Parse(doc_text);
	struct model_catalog *c = NULL;
	const struct model_entry *m;

	ck_assert_int_eq(model_catalog_from_json(doc, &c, err, sizeof(err)), 0);
	m = &c->models[0];
	ck_assert_ptr_null(model_other_release(m, "meta-llama/Meta-Llama-3.1-8B-Instruct"));
	ck_assert_ptr_null(model_other_release(m, "META-LLAMA/meta-llama-3.1-8b"));
	ck_assert_str_eq(model_other_release(m, "meta-llama/Llama-3.1-8B-Coder"),
			 "meta-llama/Llama-3.1-8B-Coder");
	model_catalog_free(c);
	cJSON_Delete(doc);
}
END_TEST

START_TEST(entries_render_with_hf_names)
{
	struct model_catalog *c = mc_catalog_load(t_src_dir());
	const struct model_entry *e = model_catalog_find(c, "deepseek-v2-lite");
	cJSON *o = api_model_entry_json(e), *arch;

	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "id")->valuestring, "deepseek-ai/DeepSeek-V2-Lite");
	ck_assert_double_eq(cJSON_GetObjectItem(o, "params_b")->valuedouble, 15.71);
	ck_assert_double_eq(
		cJSON_GetObjectItem(cJSON_GetObjectItem(o, "parameters"), "total")->valuedouble,
		15706484224.0);
	arch = cJSON_GetObjectItem(o, "architecture");
	ck_assert_int_eq(cJSON_GetObjectItem(arch, "kv_lora_rank")->valueint, 512);
	ck_assert_int_eq(cJSON_GetObjectItem(arch, "num_experts")->valueint, 64);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(o, "tasks")), 3);
	cJSON_Delete(o);
	e = model_catalog_find(c, "flan-t5-large");
	o = api_model_entry_json(e);
	arch = cJSON_GetObjectItem(o, "architecture");
	ck_assert_int_eq(cJSON_GetObjectItem(arch, "d_model")->valueint, 1024);
	ck_assert_int_eq(cJSON_GetObjectItem(arch, "num_layers")->valueint, 24);
	cJSON_Delete(o);
	model_catalog_free(c);
}
END_TEST

START_TEST(glm4_moe_and_mllama)
{
	/* GLM-4.5-Air's config.json: q/k/v biases without an o bias, shared experts, one
	 * leading dense layer; the MTP layer is not a layer here. */
	struct model_arch a =
		ok("{\"model_type\":\"glm4_moe\",\"hidden_size\":4096,\"intermediate_size\":10944,"
		   "\"moe_intermediate_size\":1408,\"num_hidden_layers\":46,"
		   "\"num_attention_heads\":96,\"num_key_value_heads\":8,\"head_dim\":128,"
		   "\"n_routed_experts\":128,\"n_shared_experts\":1,\"num_experts_per_tok\":8,"
		   "\"first_k_dense_replace\":1,\"vocab_size\":151552,\"attention_bias\":true,"
		   "\"use_qk_norm\":false,\"num_nextn_predict_layers\":1,"
		   "\"tie_word_embeddings\":false}");
	struct model_arch v;
	const char *vision = "\"vision_config\":{\"hidden_size\":1280,\"intermediate_size\":5120,"
			     "\"num_hidden_layers\":32,\"num_global_layers\":8,"
			     "\"image_size\":560,\"patch_size\":14,\"max_num_tiles\":4,"
			     "\"vision_output_dim\":7680}";
	char json[1024];

	ck_assert_str_eq(a.llm_arch, "glm4moe");
	ck_assert(a.attn_bias && !a.attn_out_bias && !a.qk_norm);
	ck_assert_int_eq(a.n_layers, 46);
	ck_assert_int_eq(a.first_k_dense, 1);
	ck_assert_int_eq(a.shared_expert_intermediate_size, 1408);
	ck_assert(!model_layer_is_moe(&a, 0) && model_layer_is_moe(&a, 1));

	/* Llama 3.2 11B Vision: the text model in text_config, the encoder beside it. */
	snprintf(json, sizeof(json),
		 "{\"model_type\":\"mllama\",\"text_config\":{\"model_type\":"
		 "\"mllama_text_model\",\"hidden_size\":4096,\"intermediate_size\":14336,"
		 "\"num_hidden_layers\":40,\"num_attention_heads\":32,\"num_key_value_heads\":8,"
		 "\"vocab_size\":128256,\"tie_word_embeddings\":false},%s}",
		 vision);
	v = ok(json);
	ck_assert_str_eq(v.model_type, "mllama");
	/* ViT-H/14 of 32 + 8 layers and the projector: about 0.9 B of the published 10.6 B. */
	ck_assert_int_gt(v.vision_params, 850000000);
	ck_assert_int_lt(v.vision_params, 950000000);
	/* The text model is Llama 3.1 8B's shape with 40 layers, the cross-attention ones
	 * counted as layers of the same size. */
	a = ok("{\"model_type\":\"llama\",\"hidden_size\":4096,\"intermediate_size\":14336,"
	       "\"num_hidden_layers\":40,\"num_attention_heads\":32,\"num_key_value_heads\":8,"
	       "\"vocab_size\":128256,\"tie_word_embeddings\":false}");
	ck_assert_int_eq(total_params(&v) - v.vision_params, total_params(&a));
	snprintf(json, sizeof(json),
		 "{\"model_type\":\"mllama\",\"text_config\":{\"model_type\":"
		 "\"mllama_text_model\",\"hidden_size\":4096,\"intermediate_size\":14336,"
		 "\"num_hidden_layers\":40,\"num_attention_heads\":32,\"vocab_size\":128256}}");
	ck_assert_int_eq(map(json, "model", &v), RF_E_MISSING_FIELD);
	ck_assert_str_eq(field, "model.vision_config");
	snprintf(json, sizeof(json),
		 "{\"model_type\":\"mllama\",\"text_config\":{\"model_type\":"
		 "\"mllama_text_model\",\"hidden_size\":4096,\"intermediate_size\":14336,"
		 "\"num_hidden_layers\":40,\"num_attention_heads\":32,\"vocab_size\":128256},"
		 "\"vision_config\":{\"patch_size\":0}}");
	ck_assert_int_eq(map(json, "model", &v), RF_E_INVALID_VALUE);
	ck_assert_str_eq(field, "model.vision_config.patch_size");
	/* cross_attention_layers as the published config lists them: per-image K/V of
	 * 4 tiles x ((560 / 14)^2 + 1) vision tokens. */
	snprintf(json, sizeof(json),
		 "{\"model_type\":\"mllama\",\"text_config\":{\"model_type\":"
		 "\"mllama_text_model\",\"hidden_size\":4096,\"intermediate_size\":14336,"
		 "\"num_hidden_layers\":40,\"num_attention_heads\":32,\"vocab_size\":128256,"
		 "\"cross_attention_layers\":[3,8,13,18,23,28,33,38]},%s}",
		 vision);
	v = ok(json);
	ck_assert_int_eq(v.n_cross_attn_layers, 8);
	ck_assert_int_eq(v.cross_attn_tokens, 4 * (40 * 40 + 1));
	ck_assert(model_layer_is_cross(&v, 3) && model_layer_is_cross(&v, 38));
	ck_assert(!model_layer_is_cross(&v, 4) && !model_layer_is_cross(&v, 39));
	{
		static const char *const bad[] = {"[3,40]", "[3,3]", "[-1]",
						  "[2.5]",  "\"3\"", "[\"3\"]"};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(json, sizeof(json),
				 "{\"model_type\":\"mllama\",\"text_config\":{\"model_type\":"
				 "\"mllama_text_model\",\"hidden_size\":4096,"
				 "\"intermediate_size\":14336,\"num_hidden_layers\":40,"
				 "\"num_attention_heads\":32,\"vocab_size\":128256,"
				 "\"cross_attention_layers\":%s},%s}",
				 bad[i], vision);
			ck_assert_int_eq(map(json, "model", &v), RF_E_INVALID_VALUE);
			ck_assert_str_eq(field, "model.text_config.cross_attention_layers");
		}
	}
}
END_TEST

Suite *model_json_suite(void)
{
	Suite *s = suite_create("model_json");
	TCase *tc = tcase_create("model_json");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, llama_mistral_mixtral);
	tcase_add_test(tc, qwen_families);
	tcase_add_test(tc, gemma_families);
	tcase_add_test(tc, phi3_deepseek_neox);
	tcase_add_test(tc, gpt_oss_and_llama4);
	tcase_add_test(tc, glm4_moe_and_mllama);
	tcase_add_test(tc, t5_bert_roberta);
	tcase_add_test(tc, bad_fields_are_named);
	tcase_add_test(tc, errors_as_the_api_answers_them);
	tcase_add_test(tc, catalog_resolution);
	tcase_add_test(tc, the_name_index_finds_what_the_walk_finds);
	tcase_add_test(tc, catalog_loader_refuses_bad_entries);
	tcase_add_test(tc, catalog_loads_a_releases_artifacts);
	tcase_add_test(tc, meta_spelling_is_the_same_release);
	tcase_add_test(tc, entries_render_with_hf_names);
	suite_add_tcase(s, tc);
	return s;
}
