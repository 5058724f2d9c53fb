/*
 * A process-wide memo of what a model's tensor list gives: its parameter counts
 * (model_param_counts) and its weights in a quantization scheme (rf_weights_from_scheme).
 * Both walk every tensor of the model (hundreds, each named and classified), which is most of
 * what an estimate costs, and both depend only on the architecture and the file type; so they
 * are computed once per (architecture, file type) and copied out afterwards.
 *
 * The key is the validated architecture's bytes themselves, never a pointer: catalogs are
 * rebuilt (SIGHUP, custom profiles) and freed while the memo lives, and equal bytes are the
 * same model, so an entry can never be stale or alias another model. The memo is bounded
 * (API_MODEL_MEMO_SLOTS entries, the oldest replaced first), safe to call from any thread, and
 * its answers are byte-identical to calling the two functions directly.
 */
#ifndef RIGFIT_API_MODEL_MEMO_H
#define RIGFIT_API_MODEL_MEMO_H

#include "core/fit/estimate.h"
#include "core/fit/model.h"

/* Enough for every catalog model in every quantization /api/recommend tries (61 x 6 today). */
#define API_MODEL_MEMO_SLOTS 1024

/* Writes model_param_counts(a) to *out, from the memo when a (validated, as
 * model_arch_validate leaves it) was counted before. Returns 0 or model_param_counts' error
 * (nothing is memoized then). */
int api_memo_params(const struct model_arch *a, struct model_params *out /* OUT */);

/* Writes rf_weights_from_scheme(a, ftype, -1) to *out, from the memo when a (validated) was
 * weighed in ftype before. From the memo the per-layer arrays (layer_bytes, layer_expert_bytes,
 * layer_repack_bytes, layer_amx_bytes) are written in their first n_layer entries only and the
 * rest of them is left as it was (no reader looks past n_layer); every other field is written.
 * Returns 0 or rf_weights_from_scheme's error (nothing is memoized then). */
int api_memo_weights(const struct model_arch *a, int ftype, struct rf_mem_weights *out /* OUT */);

struct vllm_facts;

/* Writes vllm_facts_build(a, model_tensors(a)) to *out (free with vllm_facts_free), from the
 * memo when a (validated) was summed before. Returns 0 or the error of either (nothing is
 * memoized then). */
int api_memo_vllm_facts(const struct model_arch *a, struct vllm_facts *out /* OUT */);

/* Forgets every memoized model and frees what the memo holds. The next call of each model
 * computes it again (the allocation-failure tests use this to fail the cold path's
 * allocations too). Safe from any thread. */
void api_memo_clear(void);

#endif
