/*
 * The planner over the whole catalog: every catalog model on every kind of device profile
 * (GPUs, SoCs and CPUs of profiles/devices.json; one profile per memory size and kind, as the
 * fit follows the memory) with every use case, resolved as /api/config resolves them. Every setup the planner chooses must fit, keep every GPU at most 90% of its budget
 * (validate's vram_over_90), stay within the model's context and keep n_ubatch <= n_batch; a
 * sample of them is put to the real POST /api/validate as /api/config writes them, which must
 * answer is_valid with no errors and no vram_over_90. For general use, no alternative the
 * answer shows dominates its choice (twice as fast, at most the quality floor's divergence
 * worse, as long).
 *
 * One evaluation of a llama.cpp setup: what POST /api/estimate states of a setup (memory per
 * device and host, fit, decode at the start and with the context filled) is what the planner
 * evaluates for the same setup (plan_evaluate_summed over the format's memo, as plan_infer
 * calls it), to the bit, over a grid of models (dense, MoE, sliding-window, a 70B) x machines
 * (one GPU, a GPU with layers left in RAM, two GPUs, a CPU alone, with and without its ISA) x
 * settings (the whole model on the GPUs, a partial offload, a quantized cache, several
 * sequences, experts kept in RAM). Before both called plan_evaluate_llama, the planner priced a
 * host's share of the weights without their types' CPU kernels, and the two disagreed there.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/estimate.h"
#include "api/plan_quality_json.h"
#include "api/runtime_config.h"
#include "api/validate.h"
#include "core/hw/device.h"
#include "core/fit/model.h"
#include "core/plan/plan_rope.h"
#include "core/fit/estimate.h"
#include "core/fit/quant.h"
#include "core/plan/plan_estimate.h"
#include "core/plan/plan_eval.h"
#include "core/plan/plan_infer.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define VALIDATE_EVERY 53 /* one plan in this many is also put to /api/validate */

static struct device_table devices;
static struct model_catalog *models;

static void setup(void)
{
	t_profiles_load(&devices, &models, NULL);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, NULL);
}

static struct api_env env_of(void)
{
	struct api_env env = {.version = "test",
			      .cat.devices = &devices,
			      .cat.models = models,
			      .cat.quality = t_quality()};
	return env;
}

static int call(api_handler_fn h, const char *path, const char *body, cJSON **out)
{
	struct api_env env = env_of();
	struct api_request req = {.method = API_POST,
				  .path = path,
				  .query = "",
				  .body = body,
				  .body_len = strlen(body)};
	struct api_reply r = {0};
	int st;

	h(&env, &req, &r);
	st = r.status;
	*out = cJSON_ParseWithLength(r.body, r.len);
	ck_assert_msg(*out != NULL, "%s: not JSON", path);
	api_reply_reset(&r);
	return st;
}

/* /api/config for (model, device, use case), then /api/validate on what it wrote. Returns
 * false when config found nothing to write: it plans only the file types the model's published
 * GGUFs hold, so a fit the planner finds with another (IQ2_M of DeepSeek-V2-Lite on a Jetson
 * TX2) is not config's to write; any other refusal fails. */
static bool validate_round_trip(const char *model, const char *device, const char *use_case)
{
	char body[512];
	cJSON *cfg, *val, *req;
	const cJSON *w;
	char *vbody;

	snprintf(body, sizeof(body),
		 "{\"model\":{\"id\":\"%s\"},\"hardware_profile\":\"%s\",\"use_case\":\"%s\","
		 "\"runtime\":\"llama.cpp\"}",
		 model, device, use_case);
	{
		int cst = call(api_config, "/api/config", body, &cfg);
		char *ctxt = cJSON_PrintUnformatted(cfg);
		bool none = cst == 422 && strstr(ctxt, "\"no configuration fits") != NULL;
		ck_assert_msg(cst == 200 || none, "config %d: %s for %s", cst, ctxt, body);
		free(ctxt);
		if (none) {
			cJSON_Delete(cfg);
			return false;
		}
	}
	req = cJSON_CreateObject();
	cJSON_AddItemToObject(req, "model", cJSON_CreateString(model));
	cJSON_AddStringToObject(req, "hardware_profile", device);
	cJSON_AddItemToObject(req, "settings",
			      cJSON_Duplicate(cJSON_GetObjectItem(cfg, "settings"), true));
	cJSON_AddItemToObject(req, "metadata",
			      cJSON_Duplicate(cJSON_GetObjectItem(cfg, "metadata"), true));
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(req, "metadata"), "estimate");
	cJSON_AddStringToObject(req, "backend", cJSON_GetObjectItem(cfg, "backend")->valuestring);
	vbody = cJSON_PrintUnformatted(req);
	{
		int vst = call(api_validate, "/api/validate", vbody, &val);
		char *vtxt = cJSON_PrintUnformatted(val);
		ck_assert_msg(vst == 200, "validate %d: %s for %s", vst, vtxt, vbody);
		free(vtxt);
	}
	ck_assert_msg(cJSON_GetArraySize(cJSON_GetObjectItem(val, "errors")) == 0,
		      "%s on %s (%s): validate errors: %s", model, device, use_case, vbody);
	cJSON_ArrayForEach(w, cJSON_GetObjectItem(val, "warnings")) ck_assert_msg(
		strcmp(cJSON_GetObjectItem(w, "code")->valuestring, "vram_over_90") != 0,
		"%s on %s (%s): vram_over_90", model, device, use_case);
	free(vbody);
	cJSON_Delete(req);
	cJSON_Delete(val);
	cJSON_Delete(cfg);
	return true;
}

START_TEST(every_model_on_every_device_fits_with_headroom)
{
	struct api_env env = env_of();
	struct plan_quality q;
	struct plan_answer *ans = malloc(sizeof(*ans));
	struct api_reply err = {0};
	long plans = 0, found = 0, checked = 0, vllm_won = 0;

	ck_assert_ptr_nonnull(ans);
	ck_assert_int_eq(api_plan_quality(&env, &q, &err), 0);
	for (size_t mi = 0; mi < models->n; mi++) {
		const struct model_entry *me = &models->models[mi];
		cJSON *model = cJSON_CreateString(me->id);
		if (me->arch.family != MODEL_DECODER) {
			cJSON_Delete(model);
			continue;
		}
		for (int dj = 0; dj < devices.n * PLAN_USE_CASES; dj++) {
			int di = dj / PLAN_USE_CASES;
			const struct device_profile *dp = &devices.devices[di];
			enum plan_use_case uc = (enum plan_use_case)(dj % PLAN_USE_CASES);
			bool seen = false;
			struct api_plan_input *in = NULL;
			struct plan_model pm;
			struct plan_request r;
			const struct plan_choice *b;
			int rc;
			for (int o = 0; o < di && !seen; o++)
				seen = devices.devices[o].kind == dp->kind &&
				       devices.devices[o].memory_gib == dp->memory_gib &&
				       devices.devices[o].unified == dp->unified;
			if (seen)
				continue;
			rc = api_plan_input(&env, model, NULL, dp->id, &in, &err);
			if (rc < 0) {
				/* Profiles without a memory size cannot be planned on. */
				ck_assert_msg(dp->memory_gib <= 0 || dp->kind == DEVICE_KIND_CPU,
					      "%s on %s: %.*s", me->id, dp->id, (int)err.len,
					      err.body);
				api_reply_reset(&err);
				continue;
			}
			api_plan_model(in, &pm);
			plan_request_default(&r);
			r.use_case = uc;
			r.runtime = PLAN_RT_AUTO; /* vLLM too on CUDA and ROCm devices */
			ck_assert_int_eq(plan_infer(&pm, &in->machine, &q, &r, ans), 0);
			plans++;
			if (ans->found) {
				b = &ans->best;
				found++;
				vllm_won += b->setup.runtime == PLAN_RT_VLLM;
				ck_assert_msg(b->res.fits, "%s on %s: does not fit", me->id,
					      dp->id);
				/* vLLM: its share and the CUDA graphs within the GPU. */
				ck_assert_msg(b->res.gpu_util <= (b->setup.runtime == PLAN_RT_VLLM ?
									  1.0 :
									  PLAN_MAX_GPU_UTIL),
					      "%s on %s: %.3f", me->id, dp->id, b->res.gpu_util);
				ck_assert(b->setup.runtime == PLAN_RT_LLAMA_CPP ||
					  in->machine.n_vgpu > 0);
				ck_assert(b->setup.p.n_ubatch <= b->setup.p.n_batch);
				ck_assert(b->setup.p.n_ctx >= 256);
				/* Within the positions, or the rope scaling the card documents. */
				ck_assert(me->arch.max_position_embeddings <= 0 ||
					  b->setup.p.n_ctx <=
						  plan_rope_max(&me->arch, &me->long_ctx));
				for (int i = 0; i < ans->n_alt; i++)
					ck_assert(
						ans->alt[i].res.fits &&
						ans->alt[i].res.gpu_util <=
							(ans->alt[i].setup.runtime == PLAN_RT_VLLM ?
								 1.0 :
								 PLAN_MAX_GPU_UTIL));
				/* General: none of the alternatives it shows is twice as fast at
				 * most the quality floor's divergence worse and as long. */
				for (int i = 0; uc == PLAN_GENERAL && i < ans->n_alt; i++) {
					const struct plan_choice *a = &ans->alt[i];
					ck_assert_msg(
						a->kld < 0 || b->kld < 0 ||
							a->res.aggregate_tps <
								2 * b->res.aggregate_tps ||
							a->kld > b->kld + plan_quality_floor(&q) ||
							a->ctx < b->ctx,
						"%s on %s: KLD %.4f at %.1f tok/s (%lld) dominates "
						"the choice, KLD %.4f at %.1f tok/s (%lld)",
						me->id, dp->id, a->kld, a->res.aggregate_tps,
						(long long)a->ctx, b->kld, b->res.aggregate_tps,
						(long long)b->ctx);
				}
				/* The round trip writes llama.cpp's command: none for a model
				 * llama.cpp has no architecture for. */
				if (dp->kind != DEVICE_KIND_CPU && found % VALIDATE_EVERY == 0 &&
				    !pm.no_llama_cpp) {
					checked += validate_round_trip(me->id, dp->id,
								       plan_use_case_name(uc));
				}
			}
			api_plan_input_free(in);
		}
		cJSON_Delete(model);
	}
	ck_assert(plans > 2000);
	ck_assert(found > plans / 2);
	ck_assert(checked > 20);
	ck_assert(vllm_won > 0 && vllm_won < found);
	free(ans);
}
END_TEST

/* The sweep of llama.cpp configs (what validate checks): 5 models x 4 GPUs (with 64 GB
 * of RAM) x 4 use cases; 32 of the 80 configs
 * /api/config wrote were flagged vram_over_90 by /api/validate. Now none is flagged. */
START_TEST(eighty_configs_pass_their_own_validate)
{
	static const char *const ms[] = {"llama-3.1-8b", "qwen2.5-7b", "qwen2.5-32b",
					 "gemma-3-27b-it", "llama-3.3-70b"};
	static const char *const gpus[] = {"RTX 3060 12GB", "RTX 4090", "RTX 3090",
					   "A100 80GB PCIe"};
	static const char *const ucs[] = {"general", "long_context", "speed", "quality"};
	int flagged = 0, n = 0;

	for (size_t a = 0; a < 5; a++)
		for (size_t b = 0; b < 4; b++)
			for (size_t c = 0; c < 4; c++) {
				char body[512], *vbody;
				cJSON *cfg, *val, *req;
				const cJSON *w;
				snprintf(body, sizeof(body),
					 "{\"model\":\"%s\",\"use_case\":\"%s\",\"runtime\":"
					 "\"llama.cpp\",\"hardware\":{\"gpus\":[{\"name\":\"%s\"}],"
					 "\"memory\":{\"total_bytes\":68719476736},\"cpu\":{"
					 "\"physical_cores\":8}}}",
					 ms[a], ucs[c], gpus[b]);
				ck_assert_int_eq(call(api_config, "/api/config", body, &cfg), 200);
				req = cJSON_Parse(body);
				cJSON_DeleteItemFromObject(req, "use_case");
				cJSON_DeleteItemFromObject(req, "runtime");
				cJSON_AddItemToObject(
					req, "settings",
					cJSON_Duplicate(cJSON_GetObjectItem(cfg, "settings"),
							true));
				cJSON_AddItemToObject(
					req, "metadata",
					cJSON_Duplicate(cJSON_GetObjectItem(cfg, "metadata"),
							true));
				cJSON_DeleteItemFromObject(cJSON_GetObjectItem(req, "metadata"),
							   "estimate");
				vbody = cJSON_PrintUnformatted(req);
				ck_assert_int_eq(call(api_validate, "/api/validate", vbody, &val),
						 200);
				flagged += cJSON_GetArraySize(cJSON_GetObjectItem(val, "errors")) >
					   0;
				cJSON_ArrayForEach(w, cJSON_GetObjectItem(val, "warnings"))
					flagged +=
					strcmp(cJSON_GetObjectItem(w, "code")->valuestring,
					       "vram_over_90") == 0;
				ck_assert_msg(flagged == 0, "flagged: %s", vbody);
				n++;
				free(vbody);
				cJSON_Delete(req);
				cJSON_Delete(val);
				cJSON_Delete(cfg);
			}
	ck_assert_int_eq(n, 80);
}
END_TEST

/* A config that does not fit gets the planner's setup, and that setup validates. */
START_TEST(validate_suggests_the_planned_setup)
{
	const char *hw =
		"\"hardware\":{\"gpus\":[{\"name\":\"RTX 3060 12GB\"}],\"memory\":{\"total_"
		"bytes\":68719476736},\"cpu\":{\"physical_cores\":8}}";
	char body[768], *vbody;
	cJSON *val, *again, *req;
	const cJSON *sug, *e;

	snprintf(
		body, sizeof(body),
		"{\"model\":\"qwen3-30b-a3b\",\"metadata\":{\"precision\":\"Q8_0\"},%s,\"settings\":{\"n_ctx\":"
		"16384,\"n_gpu_layers\":99,\"n_threads\":8,\"n_batch\":2048,\"n_ubatch\":512,"
		"\"flash_attn\":true,\"cache_type_k\":\"f16\",\"cache_type_v\":\"f16\"}}",
		hw);
	ck_assert_int_eq(call(api_validate, "/api/validate", body, &val), 200);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(val, "is_valid")));
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(val, "errors"), 0);
	ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(e, "suggestion")->valuestring,
				     "the setup /api/config plans here"));
	sug = cJSON_GetObjectItem(val, "suggested_settings");
	ck_assert_ptr_nonnull(sug);
	/* The quant and the context are kept; the experts go to RAM. */
	ck_assert_str_eq(cJSON_GetObjectItem(sug, "quant")->valuestring, "Q8_0");
	ck_assert_double_eq(cJSON_GetObjectItem(sug, "n_ctx")->valuedouble, 16384);
	ck_assert(cJSON_GetObjectItem(sug, "n_cpu_moe")->valuedouble > 0);
	req = cJSON_Parse(body);
	cJSON_ReplaceItemInObject(req, "settings", cJSON_Duplicate(sug, true));
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(req, "settings"), "quant");
	vbody = cJSON_PrintUnformatted(req);
	ck_assert_int_eq(call(api_validate, "/api/validate", vbody, &again), 200);
	ck_assert_msg(cJSON_IsTrue(cJSON_GetObjectItem(again, "is_valid")), "%s", vbody);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(again, "warnings")) >= 0, 1);
	ck_assert_ptr_null(cJSON_GetObjectItem(again, "suggested_settings"));
	free(vbody);
	cJSON_Delete(req);
	cJSON_Delete(again);
	cJSON_Delete(val);
}
END_TEST

static const char *const grid_models[] = {"llama-3.1-8b", "qwen3-30b-a3b", "gemma-2-9b",
					  "llama-3.3-70b"};

static const char *const grid_machines[] = {
	"{\"gpus\":[{\"name\":\"RTX 4090\"}],\"memory\":{\"total_bytes\":68719476736}}",
	"{\"gpus\":[{\"name\":\"RTX 3060 12GB\"}],\"memory\":{\"total_bytes\":34359738368},"
	"\"cpu\":{\"physical_cores\":8}}",
	"{\"gpus\":[{\"name\":\"RTX 3090\",\"count\":2}],\"memory\":{\"total_bytes\":"
	"137438953472}}",
	"{\"cpu\":{\"model\":\"AMD Ryzen 9 7950X\",\"physical_cores\":16},\"memory\":{"
	"\"total_bytes\":68719476736}}",
	"{\"cpu\":{\"physical_cores\":8,\"isa\":[\"avx2\",\"fma\"]},\"memory\":{\"total_bytes\":"
	"34359738368}}",
};

struct grid_setting {
	const char *quant;
	int64_t n_ctx, n_gpu_layers, n_cpu_moe, n_parallel;
	const char *kv; /* kv_cache_type */
	bool flash_attn;
};

static const struct grid_setting grid_settings[] = {
	{"Q4_K_M", 8192, -1, 0, 1, "f16", true}, {"Q8_0", 32768, 20, 0, 1, "q8_0", true},
	{"Q4_0", 4096, 10, 0, 4, "f16", false},  {"IQ4_XS", 16384, -1, 24, 1, "q4_0", true},
	{"Q6_K", 2048, 0, 0, 2, "f16", true},
};

/* The estimate of setting g of model on machine, asked as a client asks it. */
static cJSON *estimate(const struct api_env *env, const char *model, const char *machine,
		       const struct grid_setting *g)
{
	char body[1024];
	cJSON *rq, *result = NULL;
	struct api_reply r = {0};

	snprintf(body, sizeof(body),
		 "{\"model\":\"%s\",\"quant\":\"%s\",\"n_ctx\":%lld,\"n_batch\":2048,"
		 "\"n_ubatch\":512,\"n_parallel\":%lld,\"n_gpu_layers\":%lld,\"n_cpu_moe\":%lld,"
		 "\"kv_cache_type\":\"%s\",\"flash_attn\":%s,\"hardware\":%s}",
		 model, g->quant, (long long)g->n_ctx, (long long)g->n_parallel,
		 (long long)g->n_gpu_layers, (long long)g->n_cpu_moe, g->kv,
		 g->flash_attn ? "true" : "false", machine);
	rq = cJSON_Parse(body);
	ck_assert_ptr_nonnull(rq);
	ck_assert_msg(api_estimate_object(env, rq, &result, &r) == 0, "%s: %.*s", body, (int)r.len,
		      r.body);
	api_reply_reset(&r);
	cJSON_Delete(rq);
	return result;
}

/* The planner's evaluation of the same setting on the same resolved model and machine. */
static int planned(struct api_plan_input *in, const struct grid_setting *g,
		   struct rf_mem_weights *w, struct plan_result *res)
{
	struct plan_model pm;
	struct plan_setup s;
	struct plan_wsum sum;

	api_plan_model(in, &pm);
	memset(&s, 0, sizeof(s));
	s.runtime = PLAN_RT_LLAMA_CPP;
	s.ftype = rf_ftype_from_name(g->quant);
	rf_infer_params_default(&s.p);
	s.p.n_ctx = g->n_ctx;
	s.p.n_parallel = g->n_parallel;
	s.p.n_gpu_layers = in->machine.n_dev > 0 ? g->n_gpu_layers : 0;
	s.p.n_cpu_moe = g->n_cpu_moe;
	s.p.type_k = s.p.type_v = rf_gtype_from_name(g->kv);
	s.p.flash_attn = g->flash_attn;
	ck_assert_int_eq(pm.weights(pm.weights_ctx, pm.arch, s.ftype, w), 0);
	plan_weights_sum(pm.arch, w, s.ftype, in->machine.host.repack_isa, &sum);
	if (pm.calib)
		ck_assert_int_eq(plan_wsum_calibrate(&sum, pm.arch, pm.params, w, &in->machine,
						     pm.calib, pm.calib_model, pm.calib_name),
				 0);
	return plan_evaluate_summed(pm.arch, pm.params, w, &sum, &in->machine, &s, res);
}

static void assert_same(const char *what, const cJSON *est, const struct plan_result *res)
{
	const struct rf_mem_estimate *m = &res->mem;
	const cJSON *pd = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(est, "memory"), "per_device");
	const cJSON *fits = cJSON_GetObjectItemCaseSensitive(est, "fits");
	int i = 0;
	const cJSON *d;

	ck_assert_msg(cJSON_IsBool(fits) && cJSON_IsTrue(fits) == res->fits, "%s: fits", what);
	ck_assert_msg(t_num(est, "memory", "total_bytes") == (double)m->total_bytes, "%s", what);
	ck_assert_msg(t_num(est, "memory", "weights_bytes") == (double)m->weights_bytes, "%s",
		      what);
	ck_assert_msg(t_num(est, "memory", "kv_cache_bytes") == (double)m->kv_cache_bytes, "%s",
		      what);
	ck_assert_msg(t_num(est, "memory", "compute_bytes") == (double)m->compute_bytes, "%s",
		      what);
	ck_assert_msg(t_num(est, "memory", "host_bytes") == (double)m->host_bytes, "%s", what);
	ck_assert_msg(t_num(est, "settings", "n_gpu_layers") == (double)m->n_gpu_layers, "%s",
		      what);
	ck_assert_msg(t_num(est, "settings", "n_ctx") == (double)m->n_ctx, "%s", what);
	ck_assert_int_eq(cJSON_GetArraySize(pd), m->n_devices);
	cJSON_ArrayForEach(d, pd)
	{
		ck_assert_msg(t_num(d, "bytes", NULL) == (double)m->per_device[i].bytes,
			      "%s: GPU %d", what, i);
		ck_assert_msg(t_num(d, "layers", NULL) == (double)m->per_device[i].layers, "%s",
			      what);
		i++;
	}
	if (!res->fits)
		return; /* a setup that cannot load has no speed in the estimate */
	ck_assert_msg(t_num(est, "speed", "decode_tokens_per_s") == res->decode_tps,
		      "%s: decode %.17g stated, %.17g planned", what,
		      t_num(est, "speed", "decode_tokens_per_s"), res->decode_tps);
	ck_assert_msg(
		t_num(est, "speed", "decode_tokens_per_s_at_full_ctx") == res->decode_tps_full_ctx,
		"%s: full context %.17g stated, %.17g planned", what,
		t_num(est, "speed", "decode_tokens_per_s_at_full_ctx"), res->decode_tps_full_ctx);
}

START_TEST(the_estimate_states_what_the_planner_evaluates)
{
	struct api_env env = {.version = "test", .cat.devices = &devices, .cat.models = models};
	struct rf_mem_weights *w = malloc(sizeof(*w));
	struct plan_result *res = malloc(sizeof(*res));
	int compared = 0, fitting = 0, offloaded = 0;

	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(res);
	for (size_t a = 0; a < sizeof(grid_models) / sizeof(grid_models[0]); a++) {
		for (size_t b = 0; b < sizeof(grid_machines) / sizeof(grid_machines[0]); b++) {
			cJSON *model = cJSON_CreateString(grid_models[a]);
			cJSON *hw = cJSON_Parse(grid_machines[b]);
			struct api_plan_input *in = NULL;
			struct api_reply r = {0};
			ck_assert_int_eq(api_plan_input(&env, model, hw, NULL, &in, &r), 0);
			for (size_t c = 0; c < sizeof(grid_settings) / sizeof(grid_settings[0]);
			     c++) {
				const struct grid_setting *g = &grid_settings[c];
				char what[160];
				cJSON *est;
				if (g->n_cpu_moe > 0 && in->arch->n_experts == 0)
					continue; /* experts in RAM: MoE only */
				snprintf(what, sizeof(what), "%s %s on machine %zu", grid_models[a],
					 g->quant, b);
				est = estimate(&env, grid_models[a], grid_machines[b], g);
				ck_assert_int_eq(planned(in, g, w, res), 0);
				assert_same(what, est, res);
				compared++;
				fitting += res->fits;
				offloaded += res->fits && res->mem.n_gpu_layers > 0 &&
					     res->mem.n_gpu_layers < w->n_layer;
				cJSON_Delete(est);
			}
			api_plan_input_free(in);
			cJSON_Delete(model);
			cJSON_Delete(hw);
		}
	}
	/* The grid holds what differed: setups that fit with layers on the host. */
	printf("estimate = planner: %d setups, %d fit, %d of them partly offloaded\n", compared,
	       fitting, offloaded);
	ck_assert_int_ge(compared, 80);
	ck_assert_int_ge(fitting, 40);
	ck_assert_int_ge(offloaded, 10);
	free(w);
	free(res);
}
END_TEST

/* vLLM: /api/estimate's memory, fit and decode of a vLLM setup are the planner's evaluation of
 * it (plan_vllm_capacity and plan_vllm_result, through the one description of vLLM's speed,
 * plan_vllm_speed_input), over models, GPU machines, precisions, lengths and tensor-parallel
 * sizes. The route used to build its own speed input, a second copy of the planner's. */
START_TEST(the_vllm_estimate_states_what_the_planner_evaluates)
{
	static const struct {
		const char *precision;
		enum plan_vllm_format f;
		int64_t len;
		int tp;
	} settings[] = {{"bf16", PLAN_VLLM_BF16, 8192, 1},
			{"fp8", PLAN_VLLM_FP8, 4096, 1},
			{"bf16", PLAN_VLLM_BF16, 4096, 2},
			{"fp8", PLAN_VLLM_FP8, 8192, 2}};
	static const char *const machines[] = {
		"{\"gpus\":[{\"name\":\"H100 SXM5 80GB\",\"count\":2}]}",
		"{\"gpus\":[{\"name\":\"RTX 3090\",\"count\":2}]}",
	};
	struct api_env env = {.version = "test", .cat.devices = &devices, .cat.models = models};
	int compared = 0, fitting = 0;

	for (size_t a = 0; a < sizeof(grid_models) / sizeof(grid_models[0]); a++) {
		for (size_t b = 0; b < sizeof(machines) / sizeof(machines[0]); b++) {
			cJSON *model = cJSON_CreateString(grid_models[a]);
			cJSON *hw = cJSON_Parse(machines[b]);
			struct api_plan_input *in = NULL;
			struct api_reply r = {0};
			ck_assert_int_eq(api_plan_input(&env, model, hw, NULL, &in, &r), 0);
			for (size_t c = 0; c < sizeof(settings) / sizeof(settings[0]); c++) {
				struct plan_setup s;
				struct vllm_capacity cap;
				struct plan_result res;
				char body[512];
				const char *what = body;
				cJSON *rq, *est = NULL;
				snprintf(
					body, sizeof(body),
					"{\"model\":\"%s\",\"runtime\":\"vllm\",\"precision\":"
					"\"%s\",\"max_model_len\":%lld,\"tensor_parallel_size\":%d,"
					"\"hardware\":%s}",
					grid_models[a], settings[c].precision,
					(long long)settings[c].len, settings[c].tp, machines[b]);
				rq = cJSON_Parse(body);
				ck_assert_msg(api_estimate_object(&env, rq, &est, &r) == 0,
					      "%s: %.*s", body, (int)r.len, r.body);
				api_reply_reset(&r);
				memset(&s, 0, sizeof(s));
				s.runtime = PLAN_RT_VLLM;
				s.vformat = settings[c].f;
				s.tp = settings[c].tp;
				rf_infer_params_default(&s.p);
				s.p.n_ctx = settings[c].len;
				s.p.n_parallel = 1;
				ck_assert_int_eq(plan_vllm_capacity(in->arch, NULL, &in->machine,
								    &s, &cap),
						 0);
				plan_vllm_result(in->arch, in->params, &in->machine, &s, &cap,
						 &res);
				ck_assert_msg(t_num(est, "memory", "total_bytes") ==
						      (double)res.mem.total_bytes,
					      "%s: total", what);
				ck_assert_msg(t_num(est, "memory", "kv_cache_bytes") ==
						      (double)res.mem.kv_cache_bytes,
					      "%s: KV", what);
				if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(est, "fits")) &&
				    res.fits) {
					ck_assert_msg(t_num(est, "speed", "decode_tokens_per_s") ==
							      res.decode_tps,
						      "%s: decode %.17g stated, %.17g planned",
						      what,
						      t_num(est, "speed", "decode_tokens_per_s"),
						      res.decode_tps);
					ck_assert_msg(t_num(est, "speed",
							    "decode_tokens_per_s_at_full_ctx") ==
							      res.decode_tps_full_ctx,
						      "%s: full context", what);
					fitting++;
				}
				compared++;
				cJSON_Delete(est);
				cJSON_Delete(rq);
			}
			api_plan_input_free(in);
			cJSON_Delete(model);
			cJSON_Delete(hw);
		}
	}
	printf("vLLM estimate = planner: %d setups, %d fit\n", compared, fitting);
	ck_assert_int_ge(compared, 30);
	ck_assert_int_ge(fitting, 12);
}
END_TEST

Suite *plan_property_suite(void)
{
	Suite *s = suite_create("plan_property");
	TCase *tc = tcase_create("catalog");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, every_model_on_every_device_fits_with_headroom);
	tcase_add_test(tc, eighty_configs_pass_their_own_validate);
	tcase_add_test(tc, validate_suggests_the_planned_setup);
	tcase_add_test(tc, the_estimate_states_what_the_planner_evaluates);
	tcase_add_test(tc, the_vllm_estimate_states_what_the_planner_evaluates);
	suite_add_tcase(s, tc);
	return s;
}
