/* Model shapes the fine-tuning tests share (see train_models.h). */
#include "tests/core/fit/train_models.h"

struct train_model t_llama31_8b(void)
{
	struct train_model m = {.params_total = 8030000000LL,
				.params_embedding = 128256LL * 4096,
				.params_output = 128256LL * 4096,
				.n_layers = 32,
				.hidden = 4096,
				.intermediate = 14336,
				.n_heads = 32,
				.n_kv_heads = 8,
				.head_dim = 128,
				.vocab = 128256,
				.gated_ffn = true};
	return m;
}

struct train_model t_llama31_70b(void)
{
	struct train_model m = {.params_total = 70550000000LL,
				.params_embedding = 128256LL * 8192,
				.params_output = 128256LL * 8192,
				.n_layers = 80,
				.hidden = 8192,
				.intermediate = 28672,
				.n_heads = 64,
				.n_kv_heads = 8,
				.head_dim = 128,
				.vocab = 128256,
				.gated_ffn = true};
	return m;
}

struct train_model t_qwen3_30b_a3b(void)
{
	struct train_model m = {.params_total = 30532000000LL,
				.params_embedding = 151936LL * 2048,
				.params_output = 151936LL * 2048,
				.n_layers = 48,
				.hidden = 2048,
				.intermediate = 768,
				.n_heads = 32,
				.n_kv_heads = 4,
				.head_dim = 128,
				.vocab = 151936,
				.gated_ffn = true,
				.n_experts = 128,
				.n_experts_per_tok = 8};
	return m;
}
