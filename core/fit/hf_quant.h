/*
 * Quantised Hugging Face checkpoints: the bytes a checkpoint stores when its config.json has a
 * quantization_config (AWQ, GPTQ, bitsandbytes 4- and 8-bit, FP8, compressed-tensors, MXFP4).
 *
 * Each method writes a quantised linear layer as packed integer (or 8-bit float) weights plus
 * what dequantises them: scales per group of input columns, per output row, per tensor or per
 * 2-D block, packed zero points for asymmetric schemes, GPTQ's group index per input column,
 * bitsandbytes' absmax per block of 64 (itself quantised to 8 bits with double quantisation).
 * What a method leaves unquantised (embeddings, the LM head, norms, routers, biases, and the
 * modules a config lists to skip) stays in the checkpoint's dtype. The count walks the tensors
 * core/fit/model.c enumerates for the architecture, so every family the config parser knows is
 * covered by the same rules.
 *
 * This is the formula for a config without weights; a folder with safetensors headers is
 * counted from the headers instead (exact).
 *
 * Pure: no I/O. hfq_checkpoint_bytes() allocates only temporarily (the tensor list).
 */
#ifndef RIGFIT_CORE_HF_QUANT_H
#define RIGFIT_CORE_HF_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/fit/model.h"

enum hfq_method {
	HFQ_NONE = 0,
	HFQ_AWQ,        /* AutoAWQ GEMM/GEMV: int4 packed in int32, fp16 scales and zeros */
	HFQ_GPTQ,       /* AutoGPTQ / GPTQModel: qweight, qzeros, fp16 scales, g_idx */
	HFQ_BNB_4BIT,   /* bitsandbytes NF4 / FP4: 2 weights a byte, absmax per 64 */
	HFQ_BNB_8BIT,   /* bitsandbytes LLM.int8(): int8 weights, one fp32 scale per row */
	HFQ_FP8,        /* fp8 e4m3 weights with tensor, channel or block scales */
	HFQ_COMPRESSED, /* compressed-tensors (llm-compressor): int or float weights by group */
	HFQ_MXFP4,      /* OCP MXFP4: blocks of 32 4-bit floats, one e8m0 scale a block */
	HFQ_METHOD_COUNT
};

/* Returns the config's name of method m ("awq", "compressed-tensors"), or "none". */
const char *hfq_method_name(int m);

/* Module kinds a skip rule names (bits), mapped from Hugging Face module names. */
enum hfq_module {
	HFQ_M_ATTN = 1u << 0, /* every attention projection */
	HFQ_M_Q = 1u << 1,
	HFQ_M_K = 1u << 2,
	HFQ_M_V = 1u << 3,
	HFQ_M_O = 1u << 4,
	HFQ_M_MLP = 1u << 5, /* dense FFN, experts and shared experts */
	HFQ_M_GATE = 1u << 6,
	HFQ_M_UP = 1u << 7,
	HFQ_M_DOWN = 1u << 8,
	HFQ_M_EXPERTS = 1u << 9, /* routed experts */
	HFQ_M_SHARED = 1u << 10, /* shared experts */
	HFQ_M_LM_HEAD = 1u << 11,
	HFQ_M_EMBED = 1u << 12,
};

/* One module name a config lists as unquantised: the kinds it names and in which layer. */
struct hfq_rule {
	int32_t layer; /* >= 0: that layer only; -1: every layer */
	unsigned modules;
};

/* Maps a Hugging Face module name or pattern ("lm_head", "model.layers.0.mlp.down_proj",
 * "model.layers.*.self_attn", "re:.*mlp.gate$") to a rule. Returns true when the name names
 * modules rigfit models; false for others (a vision tower, a router, which are never
 * quantised here anyway). */
bool hfq_rule_parse(const char *name, struct hfq_rule *out /* OUT */);

#define HFQ_MAX_RULES 64

/* How a checkpoint stores its quantised linear layers. Plain data; api/ fills it from the
 * quantization_config. */
struct hfq_config {
	int method;         /* enum hfq_method */
	int bits;           /* weight bits: 2, 3, 4 or 8 */
	bool float_weights; /* 8-bit float (fp8) rather than integer weights */
	int64_t group_size; /* input columns per scale; 0: one per output row; -1: one per tensor */
	int64_t block[2];   /* 2-D block scales [rows, columns] (fp8 weight_block_size); 0: none */
	int scale_bytes;    /* bytes of one scale: 2 (fp16/bf16), 4 (fp32), 1 (e8m0) */
	bool zero_point;    /* asymmetric: a zero point per scale, packed at bits bits */
	bool g_idx;         /* an int32 group index per input column */
	bool double_quant;  /* bitsandbytes: absmax in 8 bits, an fp32 constant per 256 */
	bool experts_only;  /* only routed experts are quantised (gpt-oss MXFP4) */
	bool lm_head;       /* the LM head is quantised too (compressed-tensors without it in
				ignore, GPTQ's lm_head: true) */
	bool input_scale;   /* a static activation scale per tensor (fp8 / w8a8, static) */
	int dense_bytes;    /* bytes per weight of what is not quantised: the checkpoint dtype */
	int n_skip;
	struct hfq_rule skip[HFQ_MAX_RULES];
};

/* Resets q to "not quantised" (dense_bytes 2). */
void hfq_config_init(struct hfq_config *q /* OUT */);

/* Sets the defaults of a method as its library writes checkpoints when a config leaves them
 * out (AWQ: 4 bits, groups of 128, zero points; GPTQ: qzeros and g_idx always written;
 * bitsandbytes: absmax per 64; MXFP4: experts only, e8m0 scales per 32). */
void hfq_config_method(struct hfq_config *q, int method);

/* What the checkpoint stores. */
struct hfq_bytes {
	int64_t total;            /* every tensor */
	int64_t quantized;        /* packed weights of quantised layers */
	int64_t scales;           /* scales, zero points, group indices, absmax and constants */
	int64_t dense;            /* tensors kept in the checkpoint dtype */
	int64_t quantized_params; /* weights of quantised layers */
	int64_t params;           /* every weight */
};

/* Counts the bytes of a (validated) architecture stored as q says. Returns 0, RF_E_INVALID_VALUE
 * (a bad config: bits, group size) or RF_E_NOMEM. */
int hfq_checkpoint_bytes(const struct model_arch *a, const struct hfq_config *q,
			 struct hfq_bytes *out /* OUT */);

#endif
