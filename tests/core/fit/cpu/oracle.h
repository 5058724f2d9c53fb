/*
 * Running the llama.cpp oracle (tests/llama/oracle.mjs) and asking rigfit the same question,
 * shared by the llama_oracle suite and `make calibrate-cpu` (tests/llama/calibrate_cpu.c).
 * Test-only: it forks node and reads files.
 */
#ifndef RIGFIT_TESTS_ORACLE_H
#define RIGFIT_TESTS_ORACLE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/fit/estimate.h"
#include "core/fit/speed.h"

/* The settings of one load, as llama.cpp ran it. */
struct oracle_settings {
	int64_t n_ctx, n_batch, n_ubatch;
	bool flash_attn;
	const char *kv; /* "F16", "Q8_0" */
	bool use_mmap, swa_full;
};

/* Runs `node tests/llama/oracle.mjs jobs_path` from src_dir with the package under llama_dir
 * (NULL: RIGFIT_LLAMA_DIR, default src_dir/build/llama), its stdout going to dir/oracle.out.
 * Returns that output (malloc'd, NUL-terminated), or NULL with *exit_code set (127: node
 * missing; 2: the package missing). */
char *oracle_run(const char *src_dir, const char *llama_dir, const char *dir, const char *jobs_path,
		 int *exit_code);

/* llama.cpp's prebuilt ships one CPU backend per x86 level (libggml-cpu-haswell.so,
 * -skylakex, -icelake, -zen4, -sapphirerapids...) and loads the best one the CPU runs. Makes
 * (once) src_dir/build/llama-variants/<variant>, a copy of the oracle's package folder made of
 * hard links, in which that variant is the only CPU backend, so that llama.cpp loads it or
 * none. Returns its path (malloc'd), or NULL when the variant is not in the prebuilt or the
 * copy fails. */
char *oracle_variant_dir(const char *src_dir, const char *variant);

/* Whether this host's kernel grants a process the AMX tile state (the permission request
 * ggml makes before it uses AMX); false on CPUs without AMX and on other architectures. */
bool oracle_amx_usable(void);

/* Returns this host's repack class (enum rf_repack_isa) from /proc/cpuinfo, parsed as the
 * product's probe parses it. */
int oracle_host_isa(void);

/* Returns this host's ISA bits (hw.h HW_ISA()) from /proc/cpuinfo, parsed likewise. */
uint32_t oracle_host_bits(void);

/* Returns the number o[k], or -1 when absent. */
double oracle_num(const cJSON *o, const char *k);

/* Reads the settings llama.cpp logged (the oracle's "context") into *s, keeping s->kv,
 * s->use_mmap and s->swa_full. */
void oracle_settings_from_log(const cJSON *ctx, struct oracle_settings *s);

/* rigfit's estimate for the GGUF file at path (its header read as the product reads it) under
 * s, all on the host with repack class isa. Returns 0, or -1 with a reason in msg. */
int oracle_estimate(const char *path, const struct oracle_settings *s, int isa,
		    struct rf_mem_estimate *m /* OUT */, char *msg, size_t msglen);

/* What rigfit's speed model is given for a GGUF file (see oracle_speed). */
struct oracle_speed_work {
	double weight_bytes;   /* read per token */
	double elements;       /* weight elements multiplied per token */
	double repacked_share; /* of the weights, on the host's repack class */
	int n_layers;
	struct speed_cpu_mix mix; /* the weight types' kernel classes */
};

/* rigfit's speed for the GGUF file at path on the CPU host `host` (threads, measured bandwidth
 * and kernel figures) with repack class isa, as POST /api/estimate computes it for a CPU.
 * Returns 0 and *decode / *prefill (tokens per second) and, when given, *work; or -1 with a
 * reason in msg. */
int oracle_speed(const char *path, const struct speed_host *host, int isa, double *decode /* OUT */,
		 double *prefill /* OUT */, struct oracle_speed_work *work /* OUT, optional */,
		 char *msg, size_t msglen);

#endif
