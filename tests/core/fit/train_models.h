/*
 * Model shapes the fine-tuning tests share, from the published Hugging Face configs
 * (meta-llama/Llama-3.1-8B and -70B config.json; parameter totals from the model cards).
 */
#ifndef RIGFIT_TESTS_CORE_FIT_TRAIN_MODELS_H
#define RIGFIT_TESTS_CORE_FIT_TRAIN_MODELS_H

#include "core/fit/train_memory.h"

struct train_model t_llama31_8b(void);
struct train_model t_llama31_70b(void);
/* Qwen/Qwen3-30B-A3B config.json: 128 experts of width 768, 8 a token, 48 layers
 * (tests/data/calibration/model_arch.csv). */
struct train_model t_qwen3_30b_a3b(void);

#endif
