/*
 * Ollama references: how `ollama run` names models (library name, size tag, variant words and
 * the quantization word) and how they find the shipped catalog's entries. The tag forms are
 * those listed on Ollama's library pages (ollama.com/library/<name>/tags).
 */
#include <string.h>

#include "core/fit/model.h"
#include "core/fit/ollama_ref.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

START_TEST(parses_name_tag_and_quant)
{
	struct ollama_ref r;

	ck_assert(ollama_ref_parse("llama3.1", &r));
	ck_assert_str_eq(r.name, "llama3.1");
	ck_assert_str_eq(r.tag, "latest");
	ck_assert_str_eq(r.quant, "");
	ck_assert(ollama_ref_parse("qwen2.5:32b-instruct-q4_K_M", &r));
	ck_assert_str_eq(r.name, "qwen2.5");
	ck_assert_str_eq(r.tag, "32b-instruct");
	ck_assert_str_eq(r.quant, "Q4_K_M");
	ck_assert(ollama_ref_parse("registry.ollama.ai/library/Llama3.1:8B-Instruct-FP16", &r));
	ck_assert_str_eq(r.name, "llama3.1");
	ck_assert_str_eq(r.tag, "8b-instruct");
	ck_assert_str_eq(r.quant, "F16");
	ck_assert(ollama_ref_parse("library/gpt-oss:20b", &r));
	ck_assert_str_eq(r.name, "gpt-oss");
	ck_assert(ollama_ref_parse("gemma3:fp16", &r));
	ck_assert_str_eq(r.tag, "latest");
	ck_assert_str_eq(r.quant, "F16");
}
END_TEST

START_TEST(refuses_what_is_no_library_reference)
{
	struct ollama_ref r;

	ck_assert(!ollama_ref_parse("", &r));
	ck_assert(!ollama_ref_parse(":8b", &r));
	ck_assert(!ollama_ref_parse("llama3.1:", &r));
	ck_assert(!ollama_ref_parse("somebody/llama3.1:8b", &r)); /* a user's upload */
	ck_assert(!ollama_ref_parse("llama 3.1:8b", &r));
	ck_assert(!ollama_ref_parse("llama3.1:8b/../x", &r));
}
END_TEST

START_TEST(candidates_drop_words_from_the_end)
{
	struct ollama_ref r;
	char buf[64];

	ck_assert(ollama_ref_parse("qwen3:30b-a3b-instruct-2507-q4_K_M", &r));
	ck_assert(ollama_ref_candidate(&r, 0, buf, sizeof(buf)));
	ck_assert_str_eq(buf, "qwen3:30b-a3b-instruct-2507");
	ck_assert(ollama_ref_candidate(&r, 2, buf, sizeof(buf)));
	ck_assert_str_eq(buf, "qwen3:30b-a3b");
	ck_assert(ollama_ref_candidate(&r, 3, buf, sizeof(buf)));
	ck_assert_str_eq(buf, "qwen3:30b");
	ck_assert(!ollama_ref_candidate(&r, 4, buf, sizeof(buf)));
	ck_assert(!ollama_ref_candidate(&r, 0, buf, 8)); /* does not fit */
}
END_TEST

START_TEST(finds_catalog_models_by_their_ollama_names)
{
	struct device_table devices;
	struct model_catalog *models = NULL;
	const struct {
		const char *ref, *id, *quant;
	} cases[] = {
		{"llama3.1:8b", "meta-llama/Llama-3.1-8B", ""},
		{"llama3.1:latest", "meta-llama/Llama-3.1-8B", ""},
		{"llama3.1:70b-instruct-q8_0", "meta-llama/Llama-3.1-70B", "Q8_0"},
		{"qwen2.5:32b-instruct-q4_K_M", "Qwen/Qwen2.5-32B", "Q4_K_M"},
		{"qwen3:30b-a3b-instruct-2507-q4_K_M", "Qwen/Qwen3-30B-A3B", "Q4_K_M"},
		{"gemma3:latest", "google/gemma-3-4b-it", ""},
		{"gemma3:27b-it-qat", "google/gemma-3-27b-it", "Q4_0"},
		{"phi3:mini-128k", "microsoft/Phi-3-mini-128k-instruct", ""},
		{"gpt-oss:20b", "openai/gpt-oss-20b", ""},
		{"mistral:latest", "mistralai/Mistral-7B-v0.3", ""},
		/* Bare names are Ollama's :latest ("ollama run llama3.2"). */
		{"llama3.2", "meta-llama/Llama-3.2-3B", ""},
		{"qwen2.5", "Qwen/Qwen2.5-7B", ""},
		{"mistral", "mistralai/Mistral-7B-v0.3", ""},
		{"gpt-oss", "openai/gpt-oss-20b", ""},
		/* The library's popular tags (ollama.com/library). */
		{"qwen2.5-coder:7b", "Qwen/Qwen2.5-7B", ""},
		{"qwen2.5-coder:14b", "Qwen/Qwen2.5-14B", ""},
		{"deepseek-r1:1.5b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", ""},
		{"deepseek-r1:7b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", ""},
		{"deepseek-r1:8b", "deepseek-ai/DeepSeek-R1-0528-Qwen3-8B", ""},
		{"deepseek-r1:14b-qwen-distill-q8_0", "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
		 "Q8_0"},
		{"deepseek-r1:32b", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", ""},
		{"deepseek-r1:70b", "deepseek-ai/DeepSeek-R1-Distill-Llama-70B", ""},
		{"deepseek-coder-v2:16b", "deepseek-ai/DeepSeek-V2-Lite", ""},
	};
	char quant[OLLAMA_QUANT_LEN];

	t_profiles_load(&devices, &models, NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct model_entry *e =
			ollama_ref_find(models, cases[i].ref, quant, sizeof(quant));
		ck_assert_msg(e != NULL, "%s: not found", cases[i].ref);
		ck_assert_msg(strcmp(e->id, cases[i].id) == 0, "%s: %s, want %s", cases[i].ref,
			      e->id, cases[i].id);
		ck_assert_str_eq(quant, cases[i].quant);
	}
	/* Sizes the catalog does not hold, and names it does not know, find nothing. */
	ck_assert_ptr_null(ollama_ref_find(models, "llama3.1:13b", quant, sizeof(quant)));
	ck_assert_ptr_null(ollama_ref_find(models, "notamodel:7b", quant, sizeof(quant)));
	ck_assert_ptr_null(ollama_ref_find(models, "notamodel", quant, sizeof(quant)));
	/* What Ollama serves when the tag names no quant: gpt-oss as its MXFP4 checkpoint. */
	ck_assert_str_eq(ollama_default_quant(ollama_ref_find(models, "gpt-oss:20b", NULL, 0)),
			 "MXFP4_MOE");
	ck_assert_str_eq(ollama_default_quant(ollama_ref_find(models, "llama3.1:8b", NULL, 0)),
			 "Q4_K_M");
	ck_assert_ptr_null(ollama_ref_find(models, "meta-llama/Llama-3.1-8B", NULL, 0));
	t_profiles_free(&devices, &models, NULL);
}
END_TEST

Suite *ollama_ref_suite(void)
{
	Suite *s = suite_create("ollama_ref");
	TCase *tc = tcase_create("ref");

	tcase_add_test(tc, parses_name_tag_and_quant);
	tcase_add_test(tc, refuses_what_is_no_library_reference);
	tcase_add_test(tc, candidates_drop_words_from_the_end);
	tcase_add_test(tc, finds_catalog_models_by_their_ollama_names);
	suite_add_tcase(s, tc);
	return s;
}
