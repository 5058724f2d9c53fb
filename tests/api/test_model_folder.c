/*
 * The safetensors census of api/model_folder.c against headers that lie: every size is checked
 * against its dtype and shape, the tensors' data must be one block without holes or overlap
 * (as the safetensors format requires), a shard's data must lie inside its file when the size
 * is known, a Hub's claimed total must be what the headers account for, and no sum may
 * overflow: the 120,000-tensor header whose byte count once wrapped to -8.8e18 is a 422.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/model_folder.h"
#include "core/err.h"
#include "tests/server/hf_fixture.h"
#include "tests/test.h"

/* A folder of one shard whose header is text (borrowed), with config.json of Llama-3.2-1B. */
static void one_shard(struct api_model_dir *d, const char *text, size_t len)
{
	memset(d, 0, sizeof(*d));
	d->config = (char *)t_hf_llama32_1b_config;
	d->config_len = strlen(t_hf_llama32_1b_config);
	d->n_shards = 1;
	d->headers[0] = (char *)text;
	d->header_len[0] = len;
	snprintf(d->where, sizeof(d->where), "models_dir");
}

/* Runs the census of d. Returns its rc; the checkpoint in *ck, and the error message (when
 * rc < 0) in msg. */
static int census_of(const struct api_model_dir *d, struct api_checkpoint *ck, char *msg,
		     size_t msglen)
{
	struct api_reply r = {0};
	struct model_arch *arch = malloc(sizeof(*arch));
	int rc;

	ck_assert_ptr_nonnull(arch);
	msg[0] = '\0';
	rc = api_model_folder(d, "model.path", arch, ck, &r);
	if (rc < 0) {
		ck_assert_int_eq(r.status, 422);
		ck_assert_ptr_nonnull(strstr(r.body, rf_err_code(rc)));
		ck_assert_ptr_nonnull(strstr(r.body, "\"field\":\"model.path\""));
		snprintf(msg, msglen, "%s", r.body);
	}
	free(arch);
	api_reply_reset(&r);
	return rc;
}

/* The census of one shard with header text: its rc, and msg as census_of. */
static int census_text(const char *text, uint64_t shard_bytes, struct api_checkpoint *ck, char *msg,
		       size_t msglen)
{
	struct api_model_dir d;

	one_shard(&d, text, strlen(text));
	d.shard_bytes[0] = shard_bytes;
	return census_of(&d, ck, msg, msglen);
}

#define A_F16 "\"a\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]}"

START_TEST(a_header_is_checked_tensor_by_tensor_and_as_one_block)
{
	static const char honest[] =
		"{\"__metadata__\":{\"format\":\"pt\"}," A_F16 ","
		"\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[12,20]}}";
	/* Headers that lie, the error and words of its message. */
	static const struct {
		const char *header;
		int rc;
		const char *words;
	} lies[] = {
		/* Overlapping tensors, and a hole between them. */
		{"{" A_F16 ",\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[8,16]}}",
		 RF_E_INVALID_VALUE, "overlap"},
		{"{" A_F16 ",\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[14,22]}}",
		 RF_E_INVALID_VALUE, "hole"},
		/* A shape whose product passes 2^64. */
		{"{\"a\":{\"dtype\":\"F16\",\"shape\":[4294967296,4294967296,4294967296],"
		 "\"data_offsets\":[0,2]}}",
		 RF_E_RANGE, "overflows"},
		/* Numbers a double does not hold exactly, negative or fractional ones. */
		{"{\"a\":{\"dtype\":\"U8\",\"shape\":[9007199254740994],"
		 "\"data_offsets\":[0,9007199254740994]}}",
		 RF_E_INVALID_VALUE, "data_offsets"},
		{"{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[-2,0]}}",
		 RF_E_INVALID_VALUE, "data_offsets"},
		{"{\"a\":{\"dtype\":\"U8\",\"shape\":[2.5],\"data_offsets\":[0,2.5]}}",
		 RF_E_INVALID_VALUE, "data_offsets"},
	};
	struct api_checkpoint ck;
	char msg[512];

	ck_assert_int_eq(census_text(honest, 0, &ck, msg, sizeof(msg)), 0);
	ck_assert_int_eq(ck.tensors, 2);
	ck_assert_int_eq(ck.params, 10);
	ck_assert_int_eq(ck.data_bytes, 20);
	/* The file is exactly its length, header and data; one byte less cuts a tensor off. */
	ck_assert_int_eq(census_text(honest, 8 + strlen(honest) + 20, &ck, msg, sizeof(msg)), 0);
	ck_assert_int_eq(census_text(honest, 8 + strlen(honest) + 19, &ck, msg, sizeof(msg)),
			 RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(msg, "past the end of the"));
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		ck_assert_msg(census_text(lies[i].header, 0, &ck, msg, sizeof(msg)) == lies[i].rc,
			      "%s: %s", lies[i].header, msg);
		ck_assert_msg(strstr(msg, lies[i].words), "%s: %s", lies[i].header, msg);
	}
}
END_TEST

/* 120,000 tensors of 80 TB each at the same offsets: each entry is consistent, and their sum
 * (9.6e18) passes 2^63. The signed sum overflowed here (undefined behaviour, -8.8e18 in a
 * release build); now it is refused with out_of_range before it can wrap. */
START_TEST(a_header_of_120k_tensors_that_add_up_past_2_63_is_out_of_range)
{
	struct api_model_dir d;
	struct api_checkpoint ck;
	size_t len;
	char *h = t_hf_flood_header(120000, &len), msg[512];

	one_shard(&d, h, len);
	ck_assert_int_eq(census_of(&d, &ck, msg, sizeof(msg)), RF_E_RANGE);
	ck_assert_ptr_nonnull(strstr(msg, "past 2^63"));
	/* The same header with few enough tensors not to overflow is still no file: they
	 * overlap. */
	free(h);
	h = t_hf_flood_header(3, &len);
	one_shard(&d, h, len);
	ck_assert_int_eq(census_of(&d, &ck, msg, sizeof(msg)), RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(msg, "overlap"));
	free(h);
}
END_TEST

/* A Hub's sizes are its Content-Range totals: kept only when they are what the headers say. */
START_TEST(a_hubs_total_must_be_what_its_headers_account_for)
{
	static const char h[] = "{" A_F16 "}";
	struct api_model_dir d;
	struct api_checkpoint ck;
	char msg[512];

	one_shard(&d, h, strlen(h));
	snprintf(d.where, sizeof(d.where), "hub");
	d.file_bytes = 8 + strlen(h) + 12;
	ck_assert_int_eq(census_of(&d, &ck, msg, sizeof(msg)), 0);
	/* A lying total of 9.2e18 bytes: not a file this header describes. */
	d.file_bytes = UINT64_MAX / 2;
	ck_assert_int_eq(census_of(&d, &ck, msg, sizeof(msg)), RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(msg, "Hugging Face Hub says"));
	/* A models dir's file may be larger than its data (trailing bytes are harmless). */
	snprintf(d.where, sizeof(d.where), "models_dir");
	d.shard_bytes[0] = UINT64_MAX / 2;
	ck_assert_int_eq(census_of(&d, &ck, msg, sizeof(msg)), 0);
}
END_TEST

Suite *model_folder_suite(void)
{
	Suite *s = suite_create("model_folder");
	TCase *tc = tcase_create("census");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, a_header_is_checked_tensor_by_tensor_and_as_one_block);
	tcase_add_test(tc, a_header_of_120k_tensors_that_add_up_past_2_63_is_out_of_range);
	tcase_add_test(tc, a_hubs_total_must_be_what_its_headers_account_for);
	suite_add_tcase(s, tc);
	return s;
}
