/*
 * Writes complete GGUF files that the real llama.cpp loads: the metadata llama.cpp reads for an
 * architecture (llama, qwen2, qwen3, qwen3moe, gemma2, gemma3, phi3...), a small synthetic
 * SentencePiece vocabulary (byte tokens, control tokens, filler pieces), the tensors rigfit's
 * model_tensors() enumerates for the architecture, in its order and shapes, typed by a
 * quantization scheme's mix (rf_quant_apply), and random finite tensor data (every byte kept
 * at or below 0x3b, so that any f32, f16, bf16 or E8M0 scale read from it is a small finite
 * number and quantized blocks decode to finite weights).
 *
 * Test-only: it writes files.
 */
#ifndef RIGFIT_TESTS_GGUF_SYNTH_H
#define RIGFIT_TESTS_GGUF_SYNTH_H

#include <stdint.h>

#include "core/fit/model.h"

/* Writes a GGUF v3 file of architecture a (validated; a->llm_arch names llama.cpp's
 * architecture) quantized with scheme ft (enum rf_ftype) to path. seed drives the random data.
 * Returns 0, or -1 with a reason in msg (size msglen). */
int gguf_synth_write(const char *path, const struct model_arch *a, int ft, uint32_t seed, char *msg,
		     size_t msglen);

#endif
