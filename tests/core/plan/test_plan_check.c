/*
 * validate's rules in core (plan_check) on small models and machines, against the evaluator
 * itself: a suggested n_ctx or n_gpu_layers is the largest that fits (the next step up does
 * not), the 90% rule keeps every GPU at PLAN_MAX_GPU_UTIL, ram_exceeded's quant is the
 * planner's own choice and fits, a config that fits is quiet; the settings rules and vLLM's
 * layout and capacity rules name their settings; a model that is unknown runs only the rules
 * that need none.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/fit/estimate.h"
#include "core/fit/model.h"
#include "core/fit/quant.h"
#include "core/fit/serve_vllm.h"
#include "core/hw/hw.h"
#include "core/plan/plan_check.h"
#include "core/plan/plan_estimate.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_infer.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define GIB (INT64_C(1) << 30)

static struct plan_quality quality;
static struct model_arch arch;
static struct model_params params;
static struct plan_model model;
static struct plan_machine pm;
static struct hw_snapshot hw;
static struct plan_check_machine mach;
static struct plan_check_config cfg;
static struct plan_check_answer ans;

static int weights_fn(void *ctx, const struct model_arch *a, int ft, struct rf_mem_weights *out)
{
	(void)ctx;
	return rf_weights_from_scheme(a, ft, -1, out);
}

/* A 1B-class llama: 16 layers of 2048, GQA 32/8, 128k context. */
static void small_llama(void)
{
	const char *bad = NULL;

	model_arch_init(&arch);
	strcpy(arch.model_type, "llama");
	strcpy(arch.llm_arch, "llama");
	arch.hidden_size = 2048;
	arch.n_layers = 16;
	arch.n_heads = 32;
	arch.n_kv_heads = 8;
	arch.intermediate_size = 8192;
	arch.vocab_size = 128256;
	arch.max_position_embeddings = 131072;
	ck_assert_int_eq(model_arch_validate(&arch, &bad), 0);
	ck_assert_int_eq(model_param_counts(&arch, &params), 0);
	memset(&model, 0, sizeof(model));
	model.arch = &arch;
	model.params = &params;
	model.weights = weights_fn;
	model.fixed_ftype = -1;
}

/* gpus CUDA GPUs of gpu bytes each (all free; vLLM runs on them) and host bytes of RAM. */
static void machine(int gpus, int64_t gpu, int64_t host)
{
	memset(&pm, 0, sizeof(pm));
	hw_snapshot_init(&hw);
	pm.n_dev = gpus;
	pm.n_vgpu = gpus;
	for (int i = 0; i < gpus; i++) {
		snprintf(pm.dev[i].name, sizeof(pm.dev[i].name), "cuda%d", i);
		pm.dev[i].free_bytes = gpu;
		pm.dev[i].budget_bytes = gpu;
		pm.dev_total_bytes[i] = gpu;
		pm.speed.devices[i].bandwidth_gbs = 900;
		pm.speed.devices[i].compute_tflops = 80;
		pm.speed.devices[i].compute = SPEED_COMPUTE_TENSOR;
		pm.vgpu[i].total_bytes = gpu;
		pm.vgpu[i].free_bytes = -1;
		snprintf(hw.gpus[i].vendor, sizeof(hw.gpus[i].vendor), "nvidia");
		snprintf(hw.gpus[i].name, sizeof(hw.gpus[i].name), "NVIDIA Test GPU");
	}
	hw.n_gpus = gpus;
	snprintf(hw.backend, sizeof(hw.backend), "%s", gpus ? "cuda" : "cpu");
	hw.cpu.physical_cores = 8;
	pm.host.budget_bytes = host;
	pm.ram_total_bytes = host;
	pm.speed.backend = gpus ? SPEED_BACKEND_CUDA : SPEED_BACKEND_CPU;
	pm.speed.n_devices = gpus;
	pm.speed.host.bandwidth_gbs = 60;
	pm.speed.host.threads = 8;
	pm.threads = 8;
	mach.pm = &pm;
	mach.hw = &hw;
	mach.mobile = false;
}

/* A llama.cpp config of the model at Q4_K_M with n_ctx, every layer on the GPUs. */
static void llama_config(int64_t n_ctx)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.s.runtime = PLAN_RT_LLAMA_CPP;
	cfg.s.ftype = RF_FT_Q4_K_M;
	rf_infer_params_default(&cfg.s.p);
	cfg.s.p.n_ctx = n_ctx;
	cfg.s.p.flash_attn = true;
	cfg.s.p.n_gpu_layers = pm.n_dev > 0 ? -1 : 0;
	cfg.has_ctx = true;
	cfg.quant_given = true;
	cfg.n_batch = cfg.s.p.n_batch;
	cfg.kv_f16 = true;
	cfg.fa_on = true;
}

static void check(const struct plan_model *m)
{
	memset(&ans, 0, sizeof(ans));
	ck_assert_int_eq(plan_check(m, &mach, &quality, &cfg, &ans), 0);
}

static const struct plan_check_finding *find(const char *code)
{
	for (int i = 0; i < ans.n; i++)
		if (strcmp(ans.f[i].code, code) == 0)
			return &ans.f[i];
	return NULL;
}

/* The first integer of f's suggestion after after. */
static long long number_after(const struct plan_check_finding *f, const char *after)
{
	const char *p = strstr(f->suggestion, after);

	ck_assert_msg(p != NULL, "'%s' lacks '%s'", f->suggestion, after);
	p += strlen(after);
	while (*p && (*p < '0' || *p > '9'))
		p++;
	return strtoll(p, NULL, 10);
}

/* The evaluation of s on the machine. */
static struct plan_result evaluate(const struct plan_setup *s)
{
	struct rf_mem_weights *w = malloc(sizeof(*w));
	struct plan_result r;

	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(weights_fn(NULL, &arch, s->ftype, w), 0);
	ck_assert_int_eq(plan_evaluate(&arch, &params, w, &pm, s, &r), 0);
	free(w);
	return r;
}

static void setup(void)
{
	quality = *t_quality();
	small_llama();
}

START_TEST(a_config_that_fits_is_quiet)
{
	machine(1, 24 * GIB, 64 * GIB);
	llama_config(8192);
	check(&model);
	ck_assert_int_eq(ans.n, 0);
	ck_assert(!ans.planned);
}
END_TEST

START_TEST(vram_exceeded_suggests_the_largest_context_that_fits)
{
	struct plan_setup s;
	long long n_ctx;

	machine(1, 2 * GIB, 64 * GIB);
	llama_config(131072);
	check(&model);
	ck_assert_int_eq(plan_check_errors(&ans), 1);
	ck_assert_str_eq(ans.f[0].code, "vram_exceeded");
	ck_assert_str_eq(ans.f[0].field, "n_ctx");
	n_ctx = number_after(&ans.f[0], "n_ctx to");
	ck_assert(n_ctx > 0 && n_ctx % RF_KV_PAD == 0);
	/* The largest: it fits and the next step does not. */
	s = cfg.s;
	s.p.n_ctx = n_ctx;
	ck_assert(evaluate(&s).fits);
	s.p.n_ctx = n_ctx + RF_KV_PAD;
	ck_assert(!evaluate(&s).fits);
	/* The planner's setup closes the finding. */
	ck_assert(ans.planned);
	ck_assert_ptr_nonnull(strstr(ans.f[0].suggestion, "; or the setup /api/config plans"));
	ck_assert(ans.plan.res.fits && ans.plan.res.gpu_util <= PLAN_MAX_GPU_UTIL);
	/* Applied, the config is valid. */
	llama_config(n_ctx);
	check(&model);
	ck_assert_int_eq(plan_check_errors(&ans), 0);
}
END_TEST

START_TEST(vram_over_90_keeps_every_gpu_under_the_planners_headroom)
{
	struct plan_setup s;
	long long n_ctx, tight;
	struct plan_result r;

	machine(1, 2 * GIB, 64 * GIB);
	llama_config(131072);
	check(&model);
	tight = number_after(&ans.f[0], "n_ctx to");
	llama_config(tight);
	check(&model);
	s = cfg.s;
	r = evaluate(&s);
	/* One KV step (8 MiB here) below the budget: far above 90%. */
	ck_assert(r.gpu_util > PLAN_MAX_GPU_UTIL && r.fits);
	ck_assert(find("vram_exceeded") == NULL);
	ck_assert_ptr_nonnull(find("vram_over_90"));
	n_ctx = number_after(find("vram_over_90"), "n_ctx to");
	s.p.n_ctx = n_ctx;
	ck_assert(evaluate(&s).gpu_util <= PLAN_MAX_GPU_UTIL);
	s.p.n_ctx = n_ctx + RF_KV_PAD;
	ck_assert(evaluate(&s).gpu_util > PLAN_MAX_GPU_UTIL);
}
END_TEST

START_TEST(no_context_fits_so_the_layers_that_do)
{
	struct plan_setup s;
	long long ngl;

	/* The weights alone (about 0.8 GiB) do not fit 0.5 GiB. */
	machine(1, GIB / 2, 64 * GIB);
	llama_config(4096);
	check(&model);
	ck_assert_str_eq(find("vram_exceeded")->field, "n_gpu_layers");
	ngl = number_after(find("vram_exceeded"), "n_gpu_layers to");
	s = cfg.s;
	s.p.n_gpu_layers = ngl;
	ck_assert(evaluate(&s).fits);
	s.p.n_gpu_layers = ngl + 1;
	ck_assert(!evaluate(&s).fits);
}
END_TEST

START_TEST(ram_exceeded_takes_the_planners_quant)
{
	struct plan_setup s;

	/* CPU only, 1.2 GiB: F16 (2.5 GiB of weights) cannot fit at any context. */
	machine(0, 0, GIB * 6 / 5);
	llama_config(4096);
	cfg.s.ftype = RF_FT_F16;
	check(&model);
	ck_assert_ptr_nonnull(find("ram_exceeded"));
	ck_assert_str_eq(find("ram_exceeded")->field, "quant");
	ck_assert(ans.planned);
	ck_assert_int_ne(ans.plan.setup.ftype, RF_FT_F16);
	ck_assert_ptr_nonnull(
		strstr(find("ram_exceeded")->suggestion, rf_ftype_name(ans.plan.setup.ftype)));
	s = ans.plan.setup;
	ck_assert(evaluate(&s).fits);
}
END_TEST

START_TEST(settings_rules_name_their_settings)
{
	machine(1, 24 * GIB, 64 * GIB);
	mach.mobile = true;
	hw.cpu.performance_cores = 6;
	llama_config(2048);
	cfg.has_ubatch = true;
	cfg.n_ubatch = 1024;
	cfg.n_batch = 4096;
	cfg.has_threads = true;
	cfg.n_threads = 12;
	cfg.cache_v = "q8_0";
	cfg.fa_on = false;
	cfg.backend = "metal";
	cfg.has_ngl = true;
	cfg.ngl = 40;
	check(&model);
	ck_assert_int_eq(number_after(find("batch_over_ctx"), "n_batch to"), 2048);
	ck_assert_int_eq(number_after(find("threads_over_physical"), "n_threads"), 6);
	ck_assert_str_eq(find("kv_quant_needs_flash_attn")->field, "cache_type_v");
	ck_assert_str_eq(find("backend_unavailable")->field, "backend");
	ck_assert_ptr_nonnull(strstr(find("backend_unavailable")->suggestion, "cuda"));
	ck_assert_int_eq(number_after(find("gpu_layers_over_model"), "n_gpu_layers to"), 17);
	ck_assert_str_eq(find("thermal_risk")->field, "n_batch");
	ck_assert(find("ubatch_over_batch") == NULL); /* 1024 <= 4096 */
	ck_assert_int_eq(plan_check_errors(&ans), 2);

	/* Beyond the trained context: a warning up to twice, an error above. */
	llama_config(262144);
	check(&model);
	ck_assert(!find("ctx_over_model")->error);
	llama_config(524288);
	cfg.s.p.n_gpu_layers = 0;
	check(&model);
	ck_assert(find("ctx_over_model")->error);
	ck_assert_int_eq(number_after(find("ctx_over_model"), "n_ctx to"), 131072);
}
END_TEST

START_TEST(an_unknown_model_runs_the_rules_without_one)
{
	machine(1, 24 * GIB, 64 * GIB);
	llama_config(4096);
	cfg.n_batch = 8192;
	cfg.has_ngl = true;
	cfg.ngl = 40;
	memset(&ans, 0, sizeof(ans));
	ck_assert_ptr_nonnull(plan_check_add(&ans, "unknown_model", true, "model.id"));
	ck_assert_int_eq(plan_check(NULL, &mach, &quality, &cfg, &ans), 0);
	ck_assert_str_eq(ans.f[0].code, "unknown_model");
	ck_assert_ptr_nonnull(find("batch_over_ctx"));
	ck_assert(find("gpu_layers_over_model") == NULL); /* needs the model's layers */
	ck_assert(!ans.planned);
}
END_TEST

/* A vLLM config with tp and max_model_len. */
static void vllm_config(int tp, int64_t mml)
{
	memset(&cfg, 0, sizeof(cfg));
	cfg.vllm = true;
	vllm_setup_default(&cfg.v);
	cfg.v.tensor_parallel = tp;
	cfg.has_tp = true;
	cfg.v.max_model_len = mml;
	cfg.has_mml = mml > 0;
}

START_TEST(vllm_layout_and_capacity)
{
	const struct plan_check_finding *f;
	struct vllm_capacity c;
	const char *field = NULL;

	machine(2, 24 * GIB, 64 * GIB);
	vllm_config(4, 0);
	memset(&ans, 0, sizeof(ans));
	ck_assert(plan_check_vllm_layout(&arch, &mach, &cfg, &ans));
	ck_assert_str_eq(ans.f[0].code, "parallel_over_gpus");
	ck_assert_int_eq(number_after(&ans.f[0], "tensor_parallel_size to"), 2);
	vllm_config(3, 0);
	machine(4, 24 * GIB, 64 * GIB);
	memset(&ans, 0, sizeof(ans));
	ck_assert(plan_check_vllm_layout(&arch, &mach, &cfg, &ans));
	ck_assert_str_eq(ans.f[0].code, "tp_not_dividing_heads");
	machine(0, 0, 64 * GIB);
	memset(&ans, 0, sizeof(ans));
	ck_assert(plan_check_vllm_layout(&arch, &mach, &cfg, &ans));
	ck_assert_str_eq(ans.f[0].field, "runtime");

	/* One 6 GiB GPU: the KV cache holds less than the model's 128k positions. */
	machine(1, 6 * GIB, 64 * GIB);
	vllm_config(1, 131072);
	memset(&ans, 0, sizeof(ans));
	ck_assert(!plan_check_vllm_layout(&arch, &mach, &cfg, &ans));
	ck_assert_int_eq(plan_check(&model, &mach, &quality, &cfg, &ans), 0);
	f = find("kv_capacity_exceeded");
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(f->field, "max_model_len");
	ck_assert_int_eq(vllm_capacity(&arch, &cfg.v, pm.vgpu, pm.n_vgpu, &c, &field), 0);
	ck_assert_int_eq(number_after(f, "max_model_len to"), c.kv_cache_tokens);
	/* 1 GiB of CUDA graphs do not fit beside 90% of 6 GiB either. */
	ck_assert_ptr_nonnull(strstr(find("cuda_graphs_exceeded")->suggestion, "enforce_eager"));
	/* Both applied, vLLM starts. */
	vllm_config(1, c.kv_cache_tokens / 16 * 16);
	cfg.v.enforce_eager = true;
	memset(&ans, 0, sizeof(ans));
	ck_assert_int_eq(plan_check(&model, &mach, &quality, &cfg, &ans), 0);
	ck_assert_msg(plan_check_errors(&ans) == 0, "%s: %s", ans.f[0].code, ans.f[0].message);
}
END_TEST

Suite *plan_check_suite(void)
{
	Suite *s = suite_create("plan_check");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, a_config_that_fits_is_quiet);
	tcase_add_test(tc, vram_exceeded_suggests_the_largest_context_that_fits);
	tcase_add_test(tc, vram_over_90_keeps_every_gpu_under_the_planners_headroom);
	tcase_add_test(tc, no_context_fits_so_the_layers_that_do);
	tcase_add_test(tc, ram_exceeded_takes_the_planners_quant);
	tcase_add_test(tc, settings_rules_name_their_settings);
	tcase_add_test(tc, an_unknown_model_runs_the_rules_without_one);
	tcase_add_test(tc, vllm_layout_and_capacity);
	suite_add_tcase(s, tc);
	return s;
}
