/*
 * Model architectures: the facts of a transformer that memory and speed follow from (struct
 * model_arch), their validation against caps, the tensors llama.cpp would hold for them (named
 * as GGUF names them, so the quantization mixes of core/fit/quant.h apply unchanged), and parameter
 * counts: total, active per token (MoE), embedding, output head, per layer.
 *
 * The catalog of known models (struct model_catalog) is plain data filled by api/model_json.c
 * from profiles/models.json; looking a model up by id or alias is exact and case-insensitive,
 * never by substring.
 *
 * Pure: no I/O. Functions that allocate say so and name the matching free.
 */
#ifndef RIGFIT_CORE_MODEL_H
#define RIGFIT_CORE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/fit/quant.h"

/* Caps on architecture facts. A config beyond them is refused, not estimated. */
#define MODEL_MAX_LAYERS 1024
#define MODEL_MAX_HIDDEN 131072
#define MODEL_MAX_HEADS 4096
#define MODEL_MAX_HEAD_DIM 4096
#define MODEL_MAX_FF (1 << 20)
#define MODEL_MAX_VOCAB 10000000
#define MODEL_MAX_POSITIONS (1 << 27)
#define MODEL_MAX_EXPERTS 4096
#define MODEL_MAX_LORA_RANK 65536

#define MODEL_TYPE_LEN 32

enum model_family {
	MODEL_DECODER = 0,         /* causal LM: llama, qwen, gemma... */
	MODEL_ENCODER = 1,         /* bert, roberta: no KV cache, no LM head */
	MODEL_ENCODER_DECODER = 2, /* t5 */
};

enum model_ffn {
	MODEL_FFN_GATED = 0, /* gate, up, down (SwiGLU, GeGLU) */
	MODEL_FFN_PLAIN,     /* up, down (GELU MLP: bert, gpt-neox) */
	MODEL_FFN_FUSED,     /* gate and up fused in one up matrix of 2 x ff (phi3) */
};

struct model_arch {
	char model_type[MODEL_TYPE_LEN]; /* as HF writes it: "llama", "qwen2_moe", "t5"... */
	char llm_arch[MODEL_TYPE_LEN];   /* llama.cpp's architecture: "llama", "deepseek2"... */
	enum model_family family;
	int64_t hidden_size;
	int64_t n_layers;         /* the decoder (or the only) stack */
	int64_t n_encoder_layers; /* encoder-decoder models; 0 otherwise */
	int64_t n_heads;
	int64_t n_kv_heads;
	int64_t head_dim;          /* per head, query and key */
	int64_t v_head_dim;        /* per head, value */
	int64_t intermediate_size; /* dense FFN width (0 when every layer is MoE) */
	int64_t vocab_size;
	int64_t max_position_embeddings; /* 0: not stated (relative positions) */
	int64_t type_vocab_size;         /* bert token types */
	bool tie_word_embeddings;
	enum model_ffn ffn;
	/* Mixture of experts. */
	int64_t n_experts;         /* routed experts; 0: dense */
	int64_t n_experts_per_tok; /* routed experts used per token */
	int64_t moe_intermediate_size;
	int64_t n_shared_experts;                /* always-on experts, as one FFN of shared width */
	int64_t shared_expert_intermediate_size; /* total width of the shared FFN */
	bool shared_expert_gate; /* qwen2_moe: a sigmoid gate on the shared expert */
	int64_t first_k_dense;   /* leading dense layers (deepseek first_k_dense_replace) */
	int64_t moe_layer_step;  /* every n-th layer is MoE (llama4 interleave); 1: all */
	/* Multi-head latent attention (deepseek_v2). */
	int64_t q_lora_rank;  /* 0: plain q projection */
	int64_t kv_lora_rank; /* > 0: MLA */
	int64_t qk_nope_head_dim;
	int64_t qk_rope_head_dim;
	/* Windowed attention, as llama.cpp runs it. */
	int64_t sliding_window; /* the configured window (0: none) */
	int64_t swa_pattern;    /* every n-th layer attends globally, the others within the
				   window (gemma2 2, gemma3 6, gpt-oss 2, llama4 4); 0: llama.cpp
				   runs every layer with full attention */
	bool swa_chunked;       /* llama4: chunked rather than sliding */
	/* Details that change the parameter count. */
	bool attn_bias;           /* q, k, v biases */
	bool attn_out_bias;       /* o bias */
	bool mlp_bias;            /* FFN (and expert) biases */
	bool norm_bias;           /* LayerNorm with a bias */
	bool qk_norm;             /* per-head q and k norms */
	bool post_norms;          /* gemma2/3: norms after attention and FFN too */
	bool fused_qkv;           /* one qkv matrix (phi3, gpt-neox) */
	bool attn_sinks;          /* gpt-oss: a learned sink logit per head */
	bool learned_pos;         /* bert: position embeddings of max_position_embeddings */
	int64_t rel_attn_buckets; /* t5: relative attention bias buckets */
	/* A vision encoder and projector beside the text model (mllama), as one count: part of
	 * the total, not of the text tensors or the active count. */
	int64_t vision_params;
	/* Cross-attention layers (mllama's cross_attention_layers): they attend to one image's
	 * vision tokens, so their K/V are cached per image, never per text token. */
	uint64_t cross_attn_mask[MODEL_MAX_LAYERS / 64]; /* bit il: layer il is cross-attention */
	int64_t n_cross_attn_layers;
	int64_t cross_attn_tokens; /* vision tokens of one image: tiles x (patches + class) */
};

/* Llama 3.2 Vision's encoder, as its vision_config describes it. */
struct model_vision {
	int64_t hidden, ff, layers, global_layers; /* a local and a gated global transformer */
	int64_t image, patch, tiles, channels;     /* tiles of image x image in patches */
	int64_t aspect_ratios;                     /* supported tile layouts */
	int64_t output_dim;                        /* features the projector maps to the text */
};

/* Returns the parameters of an mllama vision encoder (patch embedding, class, tile and
 * position embeddings, both transformers, layer norms) and its projector to text_hidden, as
 * transformers' MllamaVisionModel and multi_modal_projector hold them; -1 for a shape out of
 * range. */
int64_t model_mllama_vision_params(const struct model_vision *v, int64_t text_hidden);

/* Resets a to an empty architecture (all zero; moe_layer_step 1). */
void model_arch_init(struct model_arch *a /* OUT */);

/* Fills what a config may leave implicit (head_dim = hidden / heads, kv heads = heads,
 * v_head_dim = head_dim) and checks every fact against its cap and against the others (kv heads
 * dividing heads, experts per token at most experts...). Returns 0, or RF_E_INVALID_VALUE with
 * *field set to the HF config name of the first offending fact ("num_hidden_layers"). */
int model_arch_validate(struct model_arch *a, const char **field /* OUT */);

/* Returns the layers llama.cpp counts as repeating layers (encoder-decoder: the larger stack). */
int64_t model_n_layer(const struct model_arch *a);

/* Returns true when layer il is a MoE layer. */
bool model_layer_is_moe(const struct model_arch *a, int64_t il);

/* Returns true when layer il is a cross-attention layer (it caches no per-token K/V). */
bool model_layer_is_cross(const struct model_arch *a, int64_t il);

/* Marks layer il as a cross-attention layer. Returns 0, or RF_E_INVALID_VALUE when il is out
 * of 0..MODEL_MAX_LAYERS-1. */
int model_set_cross_layer(struct model_arch *a, int64_t il);

/* Returns the K plus V bytes per token of one layer at elem_bytes per element, times the
 * cross-attention layers' cached tokens for one image (0 without such layers). */
int64_t model_cross_kv_bytes(const struct model_arch *a, int64_t elem_bytes);

/* Returns true when llama.cpp runs layer il with windowed (sliding or chunked) attention. */
bool model_layer_is_swa(const struct model_arch *a, int64_t il);

/* Per token and layer: key and value widths in the KV cache (elements). MLA caches one latent
 * row of kv_lora_rank + qk_rope_head_dim as K and nothing as V. */
int64_t model_kv_k_width(const struct model_arch *a);
int64_t model_kv_v_width(const struct model_arch *a);

/* A growing list of tensors. */
struct rf_tensor_list {
	struct rf_tensor *t;
	size_t n;
	size_t cap;
};

/* Frees the list's array and resets it. NULL is a no-op. */
void rf_tensor_list_free(struct rf_tensor_list *l);

/* Writes the tensors llama.cpp holds for a (validated) architecture, in file order, with the
 * types a converted F16 GGUF has (F32 for vectors, routers and position embeddings, F16 for
 * the rest) and their bytes. A tied model has no "output.weight". Returns 0 and the list in
 * *out (free with rf_tensor_list_free), or RF_E_INVALID_VALUE / RF_E_NOMEM. */
int model_tensors(const struct model_arch *a, struct rf_tensor_list *out /* OUT */);

/* Parameter counts, in weights. */
struct model_params {
	int64_t total;  /* every parameter, tied embeddings once */
	int64_t active; /* used per token: routed experts counted k of E; everything else whole */
	int64_t embedding;      /* token (and position / type) embeddings */
	int64_t output;         /* the LM head (0 when tied or absent) */
	int64_t layers;         /* all repeating layers */
	int64_t layer_max;      /* the largest single layer */
	int64_t expert;         /* routed-expert parameters (all experts) */
	int64_t n_experts;      /* routed experts per MoE layer (the architecture's); 0: dense */
	int64_t n_experts_used; /* routed experts each token uses */
};

/* Counts the parameters of a (validated) architecture from its tensors. Returns 0 or a negative
 * rf_err. */
int model_param_counts(const struct model_arch *a, struct model_params *out /* OUT */);

/* Returns the parameters of repeating layer il (0 outside the layers). */
int64_t model_layer_params(const struct model_arch *a, int64_t il);

/* ---- the catalog ------------------------------------------------------------------------ */

#define MODEL_ID_LEN 128
#define MODEL_MAX_ALIASES 24
#define MODEL_MAX_CATALOG 512
#define MODEL_MAX_TASKS 8

enum model_task {
	MODEL_TASK_TEXT_GENERATION = 1 << 0,
	MODEL_TASK_SUMMARIZATION = 1 << 1,
	MODEL_TASK_QUESTION_ANSWERING = 1 << 2,
	MODEL_TASK_EXTRACTIVE_QA = 1 << 3,
};

/* Returns the task bit of name ("text-generation"), or 0. */
unsigned model_task_from_name(const char *name);
/* Returns the name of a single task bit, or NULL. */
const char *model_task_name(unsigned bit);

/* Checkpoint formats vLLM loads only from a repository already in that format (AWQ, GPTQ), or
 * loads faster and calibrated from one (FP8). */
enum model_ckpt {
	MODEL_CKPT_FP8 = 0,
	MODEL_CKPT_AWQ = 1,
	MODEL_CKPT_GPTQ = 2,
};
#define MODEL_CKPTS 3
#define MODEL_MAX_GGUF_REPOS 3
#define MODEL_MAX_RELEASES 4

/* A Hugging Face repository of GGUF files and the llama.cpp file types it holds. */
struct model_gguf_repo {
	char repo[MODEL_ID_LEN]; /* "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF" */
	uint64_t ftypes;         /* bit ft (enum rf_ftype, below 64) for each file type held */
};

/* What people download to run a catalog model: every repository named here is one the catalog
 * lists with its source (profiles/models.json "artifacts"), so no command names a repository
 * made up in code. All of them hold the instruction-tuned release. */
struct model_artifacts {
	char instruct[MODEL_ID_LEN]; /* the chat release when the id is a base model; "" none */
	int n_gguf;
	struct model_gguf_repo gguf[MODEL_MAX_GGUF_REPOS]; /* preferred first */
	char ckpt[MODEL_CKPTS][MODEL_ID_LEN];              /* per enum model_ckpt; "" none */
};

/* Rope scaling that a model card documents for contexts beyond the trained window, applied
 * only when asked for (llama.cpp's --rope-scaling, vLLM's --rope-scaling): Qwen's cards add
 * YaRN x4 from 32768 positions to 131072, and warn that a static factor can hurt short texts,
 * so it is set only when a context needs it (core/plan/plan_rope.h). */
enum model_rope_type {
	MODEL_ROPE_NONE = 0,
	MODEL_ROPE_YARN = 1,
};

struct model_rope {
	int type;          /* enum model_rope_type; MODEL_ROPE_NONE: nothing documented */
	double factor;     /* the documented factor, > 1 */
	int64_t orig_ctx;  /* original_max_position_embeddings: the window the factor scales */
	double rope_theta; /* the config's base frequency, which vLLM's rope_parameters override
			      restates (it replaces the whole set); 0: not known */
};

/* Another release the catalog counts with an entry (the same weights' shapes: a coder or an
 * older Instruct of the base model) and what people download of it (profiles/models.json
 * "artifacts": {"releases": [{"id", "gguf", "vllm"}]}). Its id is one of the entry's aliases. */
struct model_release {
	char id[MODEL_ID_LEN];
	struct model_artifacts art; /* art.instruct is "": the release is the chat one */
};

struct model_entry {
	char id[MODEL_ID_LEN]; /* exact HF id: "meta-llama/Llama-3.1-8B" */
	char name[MODEL_ID_LEN];
	int n_aliases;
	char aliases[MODEL_MAX_ALIASES][MODEL_ID_LEN];
	struct model_arch arch;
	double params_b;                /* published total, billions; < 0: none */
	double active_params_b;         /* published active (MoE), billions; < 0: none */
	bool active_excludes_embedding; /* the publisher counts active without token_embd */
	bool stale;     /* an older family (LLaMA-1, Llama-2, Pythia...): offered only when named */
	bool instruct;  /* the id is tuned to follow instructions (chat) */
	unsigned tasks; /* enum model_task bits */
	char license[64];
	char quality[32];
	char source[512];
	struct model_artifacts artifacts;
	struct model_rope long_ctx; /* the card's rope scaling beyond the window (profile's
				       "long_context"); type MODEL_ROPE_NONE: none */
	int n_releases;
	struct model_release releases[MODEL_MAX_RELEASES];
};

/* One name of the catalog (an id or an alias) in its index. */
struct model_name_key {
	uint32_t hash;    /* of the name, ASCII case folded */
	uint32_t model;   /* index into models */
	const char *name; /* into the model's entry */
};

struct model_catalog {
	size_t n;
	struct model_entry *models; /* owned; free with model_catalog_free */
	/* The names' index (model_catalog_index): keys in model order, and an open-addressed
	 * table of n_buckets (a power of two) holding key index + 1 (0: empty). NULL: none yet,
	 * and model_catalog_find walks the models. */
	struct model_name_key *keys;
	uint32_t *buckets;
	size_t n_buckets;
};

/* Finds the model whose id or one of whose aliases equals name, ignoring ASCII case. Never
 * matches a part of a name. Returns the entry or NULL. */
const struct model_entry *model_catalog_find(const struct model_catalog *c, const char *name);

/* Indexes c's names, so that model_catalog_find hashes the name instead of comparing it with
 * every id and alias. Call once the models are all in (and again after any change to them).
 * Returns 0, or RF_E_NOMEM (c then stays as it was, found by walking). */
int model_catalog_index(struct model_catalog *c);

/* Returns the id or alias of c closest to a mistyped name (core/suggest.h's typo rule), or
 * NULL when none is close or name is one of them. */
const char *model_catalog_suggest(const struct model_catalog *c, const char *name);

/* Returns the id of m's instruction-tuned (chat) release: m's own id when it is one, else the
 * catalog's artifacts.instruct; NULL when the catalog knows none. */
const char *model_chat_id(const struct model_entry *m);

/* Returns the first GGUF repository of m holding file type ft (a plain type, not an Unsloth
 * dynamic one), or NULL. */
const struct model_gguf_repo *model_gguf_repo_for(const struct model_entry *m, int ft);

/* Returns the repository of m's checkpoint in format f, or NULL when the catalog lists none. */
const char *model_ckpt_repo(const struct model_entry *m, enum model_ckpt f);

/* Returns the Hugging Face id of the release that name (a name the request used for m) asks for
 * when it is another release than m's own id and chat release: an alias written as a Hugging
 * Face id ("Qwen/Qwen2.5-Coder-7B-Instruct", "mistralai/Mistral-7B-Instruct-v0.2"), or for a
 * coder name ("qwen2.5-coder:7b") the alias of the coder release. m's artifacts are not that
 * release's. NULL when name asks for m itself (its id, chat id, or a plain alias). */
const char *model_other_release(const struct model_entry *m, const char *name);

/* Returns the release of m whose id is release (an id model_other_release returned), or NULL
 * when the catalog lists no artifacts of it. */
const struct model_release *model_release_find(const struct model_entry *m, const char *release);

/* Writes into *out the entry as it serves release r: m's facts, with r's id as its (chat) id
 * and r's artifacts, so that model_chat_id, model_gguf_repo_for and model_ckpt_repo answer for
 * r. */
void model_release_entry(const struct model_entry *m, const struct model_release *r,
			 struct model_entry *out /* OUT */);

/* Frees c and its entries. NULL is a no-op. */
void model_catalog_free(struct model_catalog *c);

#endif
