/*
 * The optimizer table (see train_optimizer.h). Each row as the library implements it:
 *
 * - adamw_torch: torch.optim.AdamW with foreach (torch's default on CUDA when neither foreach
 *   nor fused is given). _multi_tensor_adamw updates both moments in place, then builds
 *   torch._foreach_sqrt of every second moment of the group at once: one moment's size of
 *   temporaries (half the states), freed after the parameters are updated. About ten
 *   element-wise passes over the states (lerp, mul, addcmul, sqrt, div, add, addcdiv).
 * - adamw_torch_fused: torch.optim.AdamW(fused=True): torch._fused_adamw_ updates the
 *   parameters and both moments in one multi-tensor kernel, in registers: no temporaries
 *   beyond a step counter per tensor, one read and write of each.
 * - adamw_8bit, paged_adamw_8bit: bitsandbytes' AdamW8bit and PagedAdamW8bit keep both
 *   moments in 8 bits with block-wise quantisation, one fp32 absmax per block of 256 elements
 *   for each (2 + 2 x 4 / 256 bytes a parameter), updated in one kernel; the paged variant
 *   allocates them in CUDA unified memory, which the driver pages to host RAM when the GPU
 *   runs short (train_page_optimizer). Tensors under 4096 elements keep 32-bit states: the
 *   norms, a few kilobytes.
 * - sgd: torch.optim.SGD as the Trainer's "sgd" makes it, without momentum: no state, the
 *   update added in place.
 * - adafactor: transformers' Adafactor as the Trainer's "adafactor" makes it (no first
 *   moment, beta1 None): the second moment of a matrix is a row and a column vector in the
 *   gradient's dtype, of a vector its full size. Its step runs tensor by tensor and holds, for
 *   the tensor it steps, the gradient upcast to fp32, the squared gradient and the update
 *   that replaces it, or the update and an fp32 copy of a 16-bit parameter: three fp32 copies
 *   of the largest trained tensor at once (the embedding of a full fine-tune).
 */
#include "core/fit/train_optimizer.h"

#include <stddef.h>

/* bitsandbytes' block-wise 8-bit states: two one-byte moments, one fp32 absmax per block of
 * 256 elements each. */
#define BNB_8BIT_STATE_BYTES (2.0 + 2.0 * 4.0 / 256.0)

static const struct train_optimizer_info table[TRAIN_OPT_COUNT] = {
	[TRAIN_OPT_ADAMW] = {"adamw_torch", "torch.optim.AdamW (foreach)", 2, 0.0, false, 0.5, 0.0,
			     10.0, false, false, true},
	[TRAIN_OPT_ADAMW_8BIT] = {"adamw_8bit", "bitsandbytes AdamW8bit", 0, BNB_8BIT_STATE_BYTES,
				  false, 0.0, 0.0, 0.0, true, false, true},
	[TRAIN_OPT_PAGED_ADAMW_8BIT] = {"paged_adamw_8bit", "bitsandbytes PagedAdamW8bit", 0,
					BNB_8BIT_STATE_BYTES, false, 0.0, 0.0, 0.0, true, true,
					true},
	[TRAIN_OPT_SGD] = {"sgd", "torch.optim.SGD (no momentum)", 0, 0.0, false, 0.0, 0.0, 0.0,
			   false, false, false},
	[TRAIN_OPT_ADAMW_FUSED] = {"adamw_torch_fused", "torch.optim.AdamW (fused=True)", 2, 0.0,
				   false, 0.0, 0.0, 0.0, false, false, true},
	[TRAIN_OPT_ADAFACTOR] = {"adafactor", "transformers Adafactor (factored, no momentum)", 0,
				 0.0, true, 0.0, 3.0, 10.0, false, false, false},
};

const char *const train_optimizer_choices[] = {"adamw_torch", "adamw_8bit", "paged_adamw_8bit",
					       "sgd", "adamw_torch_fused", "adafactor",
					       /* Aliases, after the names. */
					       "adamw", NULL};

enum train_optimizer train_optimizer_from_choice(int index)
{
	if (index >= 0 && index < TRAIN_OPT_COUNT)
		return (enum train_optimizer)index;
	return TRAIN_OPT_ADAMW; /* "adamw": what the estimate called torch's AdamW at first */
}

const struct train_optimizer_info *train_optimizer_info(enum train_optimizer o)
{
	return (unsigned)o < TRAIN_OPT_COUNT ? &table[o] : NULL;
}

enum train_optimizer train_optimizer_default(enum train_provider p)
{
	return p == TRAIN_PROVIDER_UNSLOTH ? TRAIN_OPT_ADAMW_8BIT : TRAIN_OPT_ADAMW_FUSED;
}

double train_optimizer_state_bytes(enum train_optimizer o, double params, double param_bytes,
				   double factored_elems)
{
	const struct train_optimizer_info *t = train_optimizer_info(o);

	if (!t)
		return 0.0;
	return params * ((double)t->state_copies * param_bytes + t->state_fixed_bytes) +
	       (t->factored ? factored_elems * param_bytes : 0.0);
}

double train_optimizer_temp_bytes(enum train_optimizer o, double state_bytes, double largest_elems)
{
	const struct train_optimizer_info *t = train_optimizer_info(o);

	if (!t)
		return 0.0;
	return state_bytes * t->temp_state_share + largest_elems * 4.0 * t->temp_fp32_copies;
}
