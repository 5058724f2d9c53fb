/*
 * make bench (part): the planner's own costs, in the release build, on the shipped profiles.
 *   - the evaluator's cost per setup (plan_evaluate_summed: one memory estimate and one
 *     decode prediction) for an 8B and a 70B model, the weights and their sums already in
 *     hand, as the planner holds them for every setup of a format;
 *   - the same for a vLLM setup (capacity and result) of an 8B and a 70B model on an H100, the
 *     model's vLLM facts in hand, as the planner holds them for every vLLM setup;
 *   - the planner per /api/config-like question (plan_infer) for the scenarios the tests
 *     pin, with how many setups each evaluated;
 *   - one /api/recommend-like sweep: every catalog decoder planned on one machine.
 * Prints one line per figure: "name value unit". Timings are medians of repeated runs, in
 * CPU time (the process's), so that they hold on a shared machine.
 */
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api.h"
#include "api/device_json.h"
#include "api/estimate.h"
#include "api/json_alloc.h"
#include "api/model_json.h"
#include "api/model_memo.h"
#include "api/catalog/quality.h"
#include "core/hw/device.h"
#include "core/fit/model.h"
#include "core/fit/serve_vllm.h"
#include "core/plan/plan_estimate.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_infer.h"

static double now_s(void)
{
	struct timespec ts;

	/* CPU time: the figures hold on a machine the bench shares with other work. */
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static cJSON *load(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;
	cJSON *j;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	fclose(f);
	j = cJSON_Parse(buf);
	free(buf);
	return j;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct api_env env;

static struct api_plan_input *input(const char *model, const char *hw_json)
{
	cJSON *m = cJSON_CreateString(model), *hw = cJSON_Parse(hw_json);
	struct api_plan_input *in = NULL;
	struct api_reply err = {0};

	if (api_plan_input(&env, m, hw, NULL, &in, &err) < 0) {
		fprintf(stderr, "plan_bench: %s: %.*s\n", model, (int)err.len, err.body);
		exit(1);
	}
	cJSON_Delete(m);
	cJSON_Delete(hw);
	return in;
}

static void bench_eval(const char *label, const char *model, const char *hw)
{
	struct api_plan_input *in = input(model, hw);
	struct rf_mem_weights *w = malloc(sizeof(*w));
	struct plan_result *r = malloc(sizeof(*r));
	struct plan_setup s;
	struct plan_wsum sum;
	double t[9];
	const int n = 20000;

	memset(&s, 0, sizeof(s));
	s.ftype = rf_ftype_from_name("Q4_K_M");
	rf_infer_params_default(&s.p);
	s.p.n_ctx = 8192;
	s.p.flash_attn = true;
	api_memo_weights(in->arch, s.ftype, w);
	plan_weights_sum(in->arch, w, s.ftype, in->machine.host.repack_isa, &sum);
	for (int k = 0; k < 9; k++) {
		double t0 = now_s();
		for (int i = 0; i < n; i++) {
			s.p.n_ctx = 4096 + (i % 64) * 256;
			plan_evaluate_summed(in->arch, in->params, w, &sum, &in->machine, &s, r);
		}
		t[k] = (now_s() - t0) / n;
	}
	qsort(t, 9, sizeof(t[0]), cmp_double);
	printf("evaluator_ns_per_setup_%s %.0f ns\n", label, t[4] * 1e9);
	free(w);
	free(r);
	api_plan_input_free(in);
}

/* One vLLM setup as the planner evaluates it (capacity, then speed), the model's facts already in
 * hand as the planner holds them. */
static void bench_eval_vllm(const char *label, const char *model, const char *hw)
{
	struct api_plan_input *in = input(model, hw);
	struct plan_result *r = malloc(sizeof(*r));
	struct plan_setup s;
	struct vllm_capacity c;
	struct rf_tensor_list l = {0};
	struct vllm_facts f = {0};
	double t[9];
	const int n = 5000;

	memset(&s, 0, sizeof(s));
	s.runtime = PLAN_RT_VLLM;
	s.ftype = -1;
	s.vformat = PLAN_VLLM_FP8;
	s.tp = 1;
	rf_infer_params_default(&s.p);
	if (model_tensors(in->arch, &l) < 0 || vllm_facts_build(in->arch, &l, &f) < 0)
		exit(1);
	for (int k = 0; k < 9; k++) {
		double t0 = now_s();
		for (int i = 0; i < n; i++) {
			s.max_num_seqs = 1 + i % 64;
			s.p.n_ctx = 8192;
			if (plan_vllm_capacity(in->arch, &f, &in->machine, &s, &c) == 0)
				plan_vllm_result(in->arch, in->params, &in->machine, &s, &c, r);
			else
				exit(1);
		}
		t[k] = (now_s() - t0) / n;
	}
	qsort(t, 9, sizeof(t[0]), cmp_double);
	printf("evaluator_ns_per_vllm_setup_%s %.0f ns\n", label, t[4] * 1e9);
	rf_tensor_list_free(&l);
	vllm_facts_free(&f);
	free(r);
	api_plan_input_free(in);
}

static void bench_plan_rt(const char *label, const char *model, const char *hw,
			  enum plan_use_case uc, enum plan_runtime rt, int64_t np,
			  const struct plan_quality *q)
{
	struct api_plan_input *in = input(model, hw);
	struct plan_answer *a = malloc(sizeof(*a));
	struct plan_model pm;
	struct plan_request r;
	double t[9];

	api_plan_model(in, &pm);
	plan_request_default(&r);
	r.use_case = uc;
	r.runtime = rt;
	r.n_parallel = np;
	for (int k = 0; k < 9; k++) {
		double t0 = now_s();
		plan_infer(&pm, &in->machine, q, &r, a);
		t[k] = now_s() - t0;
	}
	qsort(t, 9, sizeof(t[0]), cmp_double);
	printf("plan_us_%s %.0f us (%d setups evaluated, %.0f ns each)\n", label, t[4] * 1e6,
	       a->evaluated, t[4] * 1e9 / (a->evaluated > 0 ? a->evaluated : 1));
	free(a);
	api_plan_input_free(in);
}

static void bench_plan(const char *label, const char *model, const char *hw, enum plan_use_case uc,
		       const struct plan_quality *q)
{
	bench_plan_rt(label, model, hw, uc, PLAN_RT_LLAMA_CPP, 1, q);
}

/* Every catalog decoder planned for general use on hw; the second sweep is reported (the first
 * fills the weights memo, as the daemon's first request does). */
static void bench_sweep(const char *hw, const struct plan_quality *q, bool report)
{
	struct plan_answer *a = malloc(sizeof(*a));
	double t0 = now_s();
	long evals = 0;
	int n = 0;

	for (size_t i = 0; i < env.cat.models->n; i++) {
		const struct model_entry *me = &env.cat.models->models[i];
		struct api_plan_input *in;
		struct plan_model pm;
		struct plan_request r;
		if (me->arch.family != MODEL_DECODER)
			continue;
		in = input(me->id, hw);
		api_plan_model(in, &pm);
		plan_request_default(&r);
		plan_infer(&pm, &in->machine, q, &r, a);
		evals += a->evaluated;
		n++;
		api_plan_input_free(in);
	}
	if (report)
		printf("recommend_sweep_ms %.2f ms (%d models, %ld setups evaluated, %.0f ns each)\n",
		       (now_s() - t0) * 1e3, n, evals,
		       (now_s() - t0) * 1e9 / (double)(evals ? evals : 1));
	free(a);
}

int main(void)
{
	static const char hw3060[] =
		"{\"gpus\":[{\"name\":\"RTX 3060\",\"vendor\":\"nvidia\",\"memory_total_bytes\":"
		"12884901888}],\"memory\":{\"total_bytes\":68719476736},\"cpu\":{\"physical_cores\":"
		"8,\"performance_cores\":6}}";
	static const char hw4090[] = "{\"gpus\":[{\"name\":\"RTX 4090\"}],\"memory\":{\"total_"
				     "bytes\":68719476736},\"cpu\":{\"physical_cores\":16}}";
	static const char hwh100[] = "{\"gpus\":[{\"name\":\"NVIDIA H100 SXM5 80GB\"}],\"memory\":{"
				     "\"total_bytes\":274877906944},\"cpu\":{\"physical_cores\":"
				     "32}}";
	struct device_table devices;
	struct model_catalog *models = NULL;
	struct plan_quality q;
	char why[256];
	cJSON *d = load("profiles/devices.json"), *m = load("profiles/models.json");
	cJSON *quality = load("profiles/quality.json");

	api_json_init();
	memset(&devices, 0, sizeof(devices));
	if (!d || !m || !quality || api_device_table_from_json(d, &devices, why, sizeof(why)) < 0 ||
	    model_catalog_from_json(m, &models, why, sizeof(why)) < 0) {
		fprintf(stderr, "plan_bench: cannot load profiles/ (run from the repository)\n");
		return 1;
	}
	env.cat.devices = &devices;
	env.cat.models = models;
	if (api_quality_from_json(quality, &q, why, sizeof(why)) < 0) {
		fprintf(stderr, "plan_bench: %s\n", why);
		return 1;
	}
	env.cat.quality = &q;
	bench_eval("8b", "llama-3.1-8b", hw4090);
	bench_eval("70b", "llama-3.3-70b", hw3060);
	bench_eval_vllm("8b", "llama-3.1-8b", hwh100);
	bench_eval_vllm("70b", "llama-3.3-70b", hwh100);
	if (getenv("PLAN_BENCH_EVAL_ONLY"))
		return 0;
	bench_plan("8b_general_4090", "llama-3.1-8b", hw4090, PLAN_GENERAL, &q);
	bench_plan("30b_a3b_general_3060", "qwen3-30b-a3b", hw3060, PLAN_GENERAL, &q);
	bench_plan("70b_long_context_3060", "llama-3.3-70b", hw3060, PLAN_LONG_CONTEXT, &q);
	/* Both runtimes, as /api/config searches them on CUDA without a runtime named. */
	bench_plan_rt("70b_general_h100_both_runtimes", "llama-3.3-70b", hwh100, PLAN_GENERAL,
		      PLAN_RT_AUTO, 1, &q);
	bench_plan_rt("8b_general_8_streams_h100_both_runtimes", "llama-3.1-8b", hwh100,
		      PLAN_GENERAL, PLAN_RT_AUTO, 8, &q);
	bench_sweep(hw4090, &q, false);
	bench_sweep(hw4090, &q, true);
	cJSON_Delete(d);
	cJSON_Delete(m);
	cJSON_Delete(quality);
	model_catalog_free(models);
	device_table_clear(&devices);
	api_memo_clear();
	return 0;
}
