/*
 * POST /api/finetune/detect without a socket, with the shipped profiles (devices, models,
 * tiers): seed 000's examples (GTX 1650, RTX 3070 with 16 GiB, RTX 4090 with 64 GiB, A100
 * 80GB, M3 Max, a CPU-only host) land in the seed's tiers, every model offered is estimated
 * again and fits, both answer shapes agree, and input errors name their field. The CLI twin
 * is run on this host for a 200 in valid JSON.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/api.h"
#include "api/device_json.h"
#include "api/estimate.h"
#include "api/finetune_detect.h"
#include "api/model_json.h"
#include "core/device.h"
#include "core/model.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define GIB 1073741824.0

static struct device_table devices;
static struct model_catalog *models;
static cJSON *tiers;

static void setup(void)
{
	t_profiles_load(&devices, &models, &tiers);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, &tiers);
}

static struct api_env env_of(void)
{
	struct api_env env = {
		.version = "test", .devices = &devices, .models = models, .tiers = tiers};
	return env;
}

static int run(const char *body, cJSON **out)
{
	struct api_env env = env_of();
	struct api_request req = {.method = API_POST,
				  .path = "/api/finetune/detect",
				  .query = "",
				  .body = body,
				  .body_len = strlen(body)};
	struct api_reply r = {0};
	int status;

	api_finetune_detect(&env, &req, &r);
	status = r.status;
	*out = cJSON_ParseWithLength(r.body, r.len);
	ck_assert_msg(*out != NULL, "not JSON: %.*s", (int)r.len, r.body);
	api_reply_reset(&r);
	return status;
}

static const cJSON *get(const cJSON *o, const char *a, const char *b)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, a);
	return b ? cJSON_GetObjectItemCaseSensitive(v, b) : v;
}

static const char *str(const cJSON *o, const char *a)
{
	const cJSON *v = get(o, a, NULL);
	ck_assert_msg(cJSON_IsString(v), "%s is not a string", a);
	return v->valuestring;
}

/* Both shapes agree, and every model offered fits when estimated again with its settings. */
static void check_answer(const cJSON *a, const char *hw_field, const char *hw_json)
{
	const cJSON *pm = get(a, "possible_models", NULL), *po = get(a, "possible_options", NULL);
	const cJSON *ms = get(a, "model_settings", NULL), *it;
	struct api_env env = env_of();
	int i = 0;

	ck_assert_int_eq((int)get(a, "status_code", NULL)->valuedouble, 200);
	ck_assert_str_eq(str(a, "profile"), str(a, "compute_profile"));
	ck_assert(cJSON_Compare(pm, po, true));
	ck_assert(cJSON_Compare(get(a, "recommended_model", NULL),
				get(a, "model_recommendation", NULL), true));
	ck_assert(cJSON_Compare(get(a, "hardware_specs", "gpu_name"), get(a, "gpu_name", NULL),
				true));
	ck_assert(cJSON_Compare(get(a, "hardware_specs", "gpu_memory_gb"),
				get(a, "gpu_total_memory_gb", NULL), true));
	ck_assert(cJSON_Compare(get(a, "hardware_specs", "ram_gb"), get(a, "ram_total_gb", NULL),
				true));
	ck_assert(cJSON_IsNull(get(a, "available_diskspace_gb", NULL)));
	ck_assert_int_eq(cJSON_GetArraySize(pm), cJSON_GetArraySize(ms));
	if (cJSON_GetArraySize(pm) > 0) {
		ck_assert_str_eq(str(a, "recommended_model"),
				 cJSON_GetArrayItem(pm, 0)->valuestring);
		ck_assert(cJSON_IsTrue(get(a, "estimate", "fits")));
	} else {
		ck_assert(cJSON_IsNull(get(a, "recommended_model", NULL)));
		ck_assert(cJSON_IsString(get(a, "explanation", NULL)));
	}
	cJSON_ArrayForEach(it, ms)
	{
		const cJSON *s = get(it, "settings", NULL);
		char body[2048];
		cJSON *res = NULL, *parsed;
		struct api_reply r = {0};
		ck_assert_str_eq(str(it, "model"), cJSON_GetArrayItem(pm, i++)->valuestring);
		snprintf(body, sizeof(body),
			 "{\"model\":\"%s\",\"mode\":\"%s\",\"batch_size\":%d,\"seq_len\":%d,"
			 "\"provider\":\"%s\",\"%s\":%s}",
			 str(it, "model"),
			 cJSON_IsTrue(get(s, "use_4bit", NULL)) ? "qlora" : "lora",
			 (int)get(s, "per_device_train_batch_size", NULL)->valuedouble,
			 (int)get(s, "max_seq_length", NULL)->valuedouble, str(s, "provider"),
			 hw_field, hw_json);
		parsed = cJSON_Parse(body);
		ck_assert_msg(parsed != NULL, "%s", body);
		ck_assert_int_eq(api_estimate_object(&env, parsed, &res, &r), 0);
		ck_assert_msg(cJSON_IsTrue(get(res, "fits", NULL)), "%s does not fit",
			      str(it, "model"));
		ck_assert_double_le(get(res, "utilization", NULL)->valuedouble, 1.0);
		cJSON_Delete(res);
		cJSON_Delete(parsed);
		api_reply_reset(&r);
	}
}

static cJSON *detect(const char *task, const char *extra, const char *hw_field, const char *hw)
{
	char body[2048];
	cJSON *a;

	snprintf(body, sizeof(body), "{\"task\":\"%s\"%s,\"%s\":%s}", task, extra, hw_field, hw);
	ck_assert_int_eq(run(body, &a), 200);
	check_answer(a, hw_field, hw);
	return a;
}

#define RTX3070_16                                                                                 \
	"{\"gpus\":[{\"name\":\"NVIDIA GeForce RTX 3070\",\"memory_total_bytes\":8589934592,"      \
	"\"vendor\":\"nvidia\",\"compute_capability\":\"8.6\",\"cuda_version\":\"12.6\"}],"        \
	"\"memory\":{\"total_bytes\":17179869184}}"
#define RTX4090_64                                                                                 \
	"{\"gpus\":[{\"name\":\"NVIDIA GeForce RTX 4090\",\"memory_total_bytes\":25769803776,"     \
	"\"vendor\":\"nvidia\"}],\"memory\":{\"total_bytes\":68719476736}}"
#define A100_80                                                                                    \
	"{\"gpus\":[{\"name\":\"NVIDIA A100-SXM4-80GB\",\"memory_total_bytes\":85899345920,"       \
	"\"vendor\":\"nvidia\"}],\"memory\":{\"total_bytes\":274877906944}}"
#define CPU_16 "{\"memory\":{\"total_bytes\":17179869184}}"

START_TEST(gtx_1650_low_end_qlora)
{
	cJSON *a = detect("text-generation", "", "hardware_profile", "\"gtx-1650\"");

	ck_assert_str_eq(str(a, "compute_profile"), "low_end");
	ck_assert(cJSON_IsTrue(get(a, "settings", "use_4bit")));
	ck_assert_str_eq(str(get(a, "settings", NULL), "strategy"), "qlora");
	ck_assert_str_eq(str(get(a, "settings", NULL), "provider"), "huggingface");
	ck_assert_int_eq((int)get(a, "settings", "per_device_train_batch_size")->valuedouble, 1);
	ck_assert_int_eq((int)get(a, "settings", "gradient_accumulation_steps")->valuedouble, 8);
	ck_assert_int_eq((int)get(a, "settings", "max_seq_length")->valuedouble, 512);
	ck_assert(cJSON_IsFalse(get(a, "settings", "bf16"))); /* Turing, 7.5 */
	ck_assert(cJSON_IsTrue(get(a, "settings", "fp16")));
	ck_assert_double_eq_tol(get(a, "gpu_total_memory_gb", NULL)->valuedouble, 4.0, 0.01);
	ck_assert_int_ge(cJSON_GetArraySize(get(a, "possible_models", NULL)), 1);
	/* The tier's own model (Qwen2.5-3B) does not fit 4 GiB with PEFT's QLoRA: its 152k
	 * vocabulary costs 1.2 GiB of fp32 embeddings and 1.2 GiB of loss at 512 tokens; the
	 * largest model that fits leads. */
	ck_assert_str_eq(str(a, "recommended_model"), "HuggingFaceTB/SmolLM2-1.7B");
	cJSON_Delete(a);
}
END_TEST

START_TEST(rtx_3070_mid_range)
{
	cJSON *a = detect("text-generation", "", "hardware", RTX3070_16);

	ck_assert_str_eq(str(a, "compute_profile"), "mid_range");
	ck_assert_str_eq(str(a, "detected_profile"), "mid_range");
	ck_assert_double_eq_tol(get(a, "ram_total_gb", NULL)->valuedouble, 16.0, 0.01);
	ck_assert_double_eq_tol(get(a, "gpu_total_memory_gb", NULL)->valuedouble, 8.0, 0.01);
	ck_assert_str_eq(str(get(a, "hardware_specs", NULL), "cuda_version"), "12.6");
	ck_assert_int_eq((int)get(a, "settings", "per_device_train_batch_size")->valuedouble, 2);
	ck_assert_int_eq((int)get(a, "settings", "max_seq_length")->valuedouble, 1024);
	ck_assert_str_eq(str(get(a, "settings", NULL), "provider"), "unsloth");
	ck_assert(cJSON_IsTrue(get(a, "settings", "bf16")));
	ck_assert_int_ge(cJSON_GetArraySize(get(a, "possible_models", NULL)), 1);
	cJSON_Delete(a);
}
END_TEST

START_TEST(rtx_4090_high_end_bf16)
{
	cJSON *a = detect("text-generation", "", "hardware", RTX4090_64);

	ck_assert_str_eq(str(a, "compute_profile"), "high_end");
	ck_assert(cJSON_IsTrue(get(a, "settings", "bf16")));
	ck_assert(cJSON_IsFalse(get(a, "settings", "fp16")));
	ck_assert(cJSON_IsFalse(get(a, "settings", "use_4bit")));
	ck_assert_str_eq(str(get(a, "settings", NULL), "strategy"), "sft");
	ck_assert_int_eq((int)get(a, "settings", "per_device_train_batch_size")->valuedouble, 4);
	ck_assert_int_eq((int)get(a, "settings", "max_seq_length")->valuedouble, 2048);
	ck_assert_int_ge(cJSON_GetArraySize(get(a, "possible_models", NULL)), 1);
	cJSON_Delete(a);
}
END_TEST

START_TEST(a100_high_end)
{
	cJSON *a = detect("question-answering", "", "hardware", A100_80);

	ck_assert_str_eq(str(a, "compute_profile"), "high_end");
	ck_assert(cJSON_IsTrue(get(a, "settings", "bf16")));
	ck_assert_double_eq_tol(get(a, "gpu_total_memory_gb", NULL)->valuedouble, 80.0, 0.01);
	/* The tier's QA model, Qwen2.5-32B, fits 80 GB with 16-bit LoRA. */
	ck_assert_str_eq(str(a, "recommended_model"), "Qwen/Qwen2.5-32B");
	cJSON_Delete(a);

	/* A profile without RAM: classified by the GPU, said in the assumptions. */
	a = detect("text-generation", "", "hardware_profile", "\"a100-sxm4-80gb\"");
	ck_assert_str_eq(str(a, "compute_profile"), "high_end");
	cJSON_Delete(a);
}
END_TEST

START_TEST(m3_max_apple)
{
	cJSON *a = detect("text-generation", "", "hardware_profile", "\"apple-m3-max\"");

	ck_assert(cJSON_IsTrue(get(a, "settings", "bf16")));
	ck_assert(cJSON_IsFalse(get(a, "settings", "use_4bit"))); /* no bitsandbytes on MPS */
	ck_assert_str_eq(str(get(a, "settings", NULL), "provider"), "huggingface");
	ck_assert(cJSON_IsString(get(a, "recommended_model", NULL)));
	ck_assert_int_ge(cJSON_GetArraySize(get(a, "possible_models", NULL)), 1);
	cJSON_Delete(a);
}
END_TEST

START_TEST(cpu_only_honest)
{
	cJSON *a = detect("text-generation", "", "hardware", CPU_16);

	ck_assert_str_eq(str(a, "compute_profile"), "low_end");
	ck_assert(cJSON_IsNull(get(a, "gpu_name", NULL)));
	ck_assert(cJSON_IsNull(get(a, "hardware_specs", "gpu_memory_gb")));
	ck_assert_double_eq_tol(get(a, "ram_total_gb", NULL)->valuedouble, 16.0, 0.01);
	/* Fine-tuning is estimated on a GPU only: nothing is offered, and the answer says why. */
	ck_assert_int_eq(cJSON_GetArraySize(get(a, "possible_models", NULL)), 0);
	ck_assert(cJSON_IsNull(get(a, "recommended_model", NULL)));
	ck_assert_ptr_nonnull(strstr(str(a, "explanation"), "GPU"));
	cJSON_Delete(a);
}
END_TEST

START_TEST(compute_specs_override)
{
	cJSON *a =
		detect("summarization", ",\"compute_specs\":\"low_end\"", "hardware", RTX4090_64);

	ck_assert_str_eq(str(a, "compute_profile"), "low_end");
	ck_assert_str_eq(str(a, "detected_profile"), "high_end");
	ck_assert_str_eq(str(a, "profile_source"), "compute_specs");
	ck_assert(cJSON_IsTrue(get(a, "settings", "use_4bit")));
	ck_assert_int_eq((int)get(a, "settings", "max_seq_length")->valuedouble, 512);
	ck_assert_str_eq(str(a, "recommended_model"), "google/flan-t5-large");
	cJSON_Delete(a);
}
END_TEST

START_TEST(tasks_pick_their_models)
{
	cJSON *a = detect("extractive-question-answering", "", "hardware_profile", "\"gtx-1650\"");
	const cJSON *it;

	ck_assert_str_eq(str(a, "recommended_model"), "deepset/roberta-base-squad2");
	cJSON_ArrayForEach(it, get(a, "possible_models", NULL))
	{
		const struct model_entry *m = model_catalog_find(models, it->valuestring);
		ck_assert(m && (m->tasks & MODEL_TASK_EXTRACTIVE_QA));
	}
	cJSON_Delete(a);
	/* text-generation offers decoder models only (no flan-t5). */
	a = detect("text-generation", "", "hardware", A100_80);
	cJSON_ArrayForEach(it, get(a, "possible_models", NULL))
	{
		const struct model_entry *m = model_catalog_find(models, it->valuestring);
		ck_assert(m && m->arch.family == MODEL_DECODER);
	}
	cJSON_Delete(a);
}
END_TEST

START_TEST(input_errors)
{
	cJSON *a;

	ck_assert_int_eq(run("{\"task\":\"translation\"}", &a), 422);
	ck_assert_str_eq(str(get(a, "error", NULL), "field"), "task");
	cJSON_Delete(a);
	ck_assert_int_eq(run("{}", &a), 422);
	ck_assert_str_eq(str(get(a, "error", NULL), "field"), "task");
	cJSON_Delete(a);
	ck_assert_int_eq(run("{\"task\":\"summarization\",\"bogus\":1}", &a), 422);
	ck_assert_str_eq(str(get(a, "error", NULL), "field"), "bogus");
	cJSON_Delete(a);
	ck_assert_int_eq(run("{\"task\":\"summarization\",\"compute_specs\":\"huge\"}", &a), 422);
	ck_assert_str_eq(str(get(a, "error", NULL), "field"), "compute_specs");
	cJSON_Delete(a);
	ck_assert_int_eq(run("{\"task\":\"summarization\",\"hardware_profile\":\"nope-9000\"}", &a),
			 422);
	ck_assert_str_eq(str(get(a, "error", NULL), "field"), "hardware_profile");
	cJSON_Delete(a);
	ck_assert_int_eq(run("{\"task\":", &a), 400);
	cJSON_Delete(a);
	/* No scan yet and no hardware described: 503, not a crash. */
	ck_assert_int_eq(run("{\"task\":\"summarization\"}", &a), 503);
	cJSON_Delete(a);
}
END_TEST

START_TEST(cli_twin)
{
	char *out_path = t_path(t_src_dir(), "build-fd-cli-out.json");
	char *profiles = t_path(t_src_dir(), "profiles");
	pid_t pid;
	int st;
	char *text;
	cJSON *a;

	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		FILE *f = freopen(out_path, "w", stdout);
		if (!f)
			_exit(99);
		execl(t_bin(), "rigfit", "detect", "--task", "text-generation", "--profiles",
		      profiles, (char *)NULL);
		_exit(98);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	text = t_read_file(out_path, NULL);
	ck_assert_ptr_nonnull(text);
	a = cJSON_Parse(text);
	ck_assert_msg(a != NULL, "not JSON: %s", text);
	ck_assert_int_eq((int)get(a, "status_code", NULL)->valuedouble, 200);
	ck_assert(cJSON_IsString(get(a, "compute_profile", NULL)));
	cJSON_Delete(a);
	free(text);
	unlink(out_path);
	free(out_path);
	free(profiles);
}
END_TEST

Suite *finetune_detect_suite(void)
{
	Suite *s = suite_create("finetune_detect");
	TCase *tc = tcase_create("handler");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, gtx_1650_low_end_qlora);
	tcase_add_test(tc, rtx_3070_mid_range);
	tcase_add_test(tc, rtx_4090_high_end_bf16);
	tcase_add_test(tc, a100_high_end);
	tcase_add_test(tc, m3_max_apple);
	tcase_add_test(tc, cpu_only_honest);
	tcase_add_test(tc, compute_specs_override);
	tcase_add_test(tc, tasks_pick_their_models);
	tcase_add_test(tc, input_errors);
	tcase_add_test(tc, cli_twin);
	suite_add_tcase(s, tc);
	return s;
}
