/*
 * The optimizers fine-tuning runs, as one table: for each, the bytes of state it keeps per
 * trained parameter, the temporaries its step allocates, how many passes over memory the step
 * makes, and what it needs (bitsandbytes, a CPU optimizer for offloading). Names are the
 * Hugging Face Trainer's `optim` values. Which one a provider runs when nobody says is here
 * too (train_optimizer_default). Pure data and arithmetic; train_memory.c, train_parallel.c
 * and train_speed.c read it.
 */
#ifndef RIGFIT_CORE_TRAIN_OPTIMIZER_H
#define RIGFIT_CORE_TRAIN_OPTIMIZER_H

#include <stdbool.h>

#include "core/fit/train_memory.h"

/* What an optimizer keeps and allocates (see train_optimizer.c for the source of each row). */
struct train_optimizer_info {
	const char *name; /* the Trainer's optim value: "adamw_torch_fused", ... */
	const char *runs; /* what it is: "torch.optim.AdamW(fused=True)", ... */
	/* State per trained parameter: full-size copies in the parameter's dtype, plus bytes
	 * whatever the dtype (8-bit states and their block scales). */
	int state_copies;
	double state_fixed_bytes;
	/* Adafactor: the second moment factored into a row and a column vector per matrix (in
	 * the gradient's dtype), the full size for vectors; no first moment. */
	bool factored;
	/* The step's temporaries: a share of the states built at once (foreach AdamW's square
	 * roots of every second moment: half of its two moments), and fp32 copies of the largest
	 * trained tensor that a per-tensor step holds at once. */
	double temp_state_share;
	double temp_fp32_copies;
	/* Passes of separate element-wise kernels over the states (or, for a factored
	 * optimizer, over fp32 copies of the gradients) per step; 0: one fused kernel reads
	 * and writes each tensor once. */
	double step_passes;
	bool bitsandbytes; /* needs bitsandbytes (CUDA, ROCm) */
	bool paged;        /* states in CUDA unified memory, paged to host RAM under pressure */
	bool adam;         /* DeepSpeed's and FSDP's CPU offload step it as AdamW */
};

/* Returns the row of o, or NULL when o is out of range. */
const struct train_optimizer_info *train_optimizer_info(enum train_optimizer o);

/* The names in enum order, then the aliases ("adamw", the earlier name of adamw_torch), then
 * NULL: a JSON enum's choices. train_optimizer_from_choice maps an index of it to the enum. */
extern const char *const train_optimizer_choices[];
enum train_optimizer train_optimizer_from_choice(int index);

/* Returns the optimizer a provider runs when the request does not name one: the Hugging Face
 * Trainer's default (adamw_torch_fused since torch 2.8 made it available everywhere it
 * trains; torchtune's recipes and Axolotl's configs use the fused AdamW as well), Unsloth's
 * notebooks' adamw_8bit. */
enum train_optimizer train_optimizer_default(enum train_provider p);

/* Returns the bytes of state of params trained parameters of param_bytes each (2 for a
 * 16-bit parameter, 4 for fp32), whose matrices' rows and columns add up to factored_elems
 * (for a factored optimizer). */
double train_optimizer_state_bytes(enum train_optimizer o, double params, double param_bytes,
				   double factored_elems);

/* Returns the bytes the step allocates on top of the states: state_bytes is what this GPU
 * steps (its shard), largest_elems the elements of the largest trained tensor it steps. */
double train_optimizer_temp_bytes(enum train_optimizer o, double state_bytes, double largest_elems);

#endif
