/*
 * The request's arena for cJSON (api/json_alloc.h): inside a scope cJSON allocates from one
 * block and frees nothing; outside, and past the block, from malloc. A body printed in the
 * arena leaves it as a copy the reply owns; nested scopes end with the outermost; a scope that
 * spilled past its block gets a larger one next time. The runner installs the allocator
 * (tests/run_tests.c) as the daemon does.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/json_alloc.h"
#include "core/err.h"
#include "tests/test.h"

/* A tree of n members, each a number and a string: 3 allocations per member. */
static cJSON *tree(int n)
{
	cJSON *o = cJSON_CreateObject();
	char key[32];

	ck_assert_ptr_nonnull(o);
	for (int i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "member-%d", i);
		ck_assert_ptr_nonnull(cJSON_AddStringToObject(o, key, "a value of some length"));
	}
	return o;
}

START_TEST(a_scope_allocates_from_its_block_and_outside_from_malloc)
{
	cJSON *in, *out_of_scope;
	char *text;

	api_json_arena_free();
	out_of_scope = cJSON_CreateObject();
	ck_assert(!api_json_arena_owns(out_of_scope));
	api_json_arena_begin();
	in = tree(20);
	ck_assert(api_json_arena_owns(in));
	ck_assert(api_json_arena_owns(in->child));
	ck_assert(api_json_arena_owns(in->child->valuestring));
	/* A tree from outside the scope is freed as usual inside it. */
	cJSON_Delete(out_of_scope);
	text = cJSON_PrintUnformatted(in);
	ck_assert(api_json_arena_owns(text));
	ck_assert_ptr_nonnull(strstr(text, "\"member-19\":\"a value of some length\""));
	cJSON_Delete(in); /* taken back with the block */
	api_json_arena_end();
	out_of_scope = cJSON_CreateString("after");
	ck_assert(!api_json_arena_owns(out_of_scope));
	cJSON_Delete(out_of_scope);
	api_json_arena_free();
}
END_TEST

START_TEST(a_body_printed_in_the_arena_is_copied_into_the_reply)
{
	struct api_reply r;
	cJSON *o;
	char *text;

	memset(&r, 0, sizeof(r));
	api_json_arena_begin();
	o = tree(3);
	text = cJSON_PrintUnformatted(o);
	ck_assert(api_json_arena_owns(text));
	api_reply_json(&r, 200, text);
	ck_assert_ptr_nonnull(r.body);
	ck_assert(!api_json_arena_owns(r.body));
	ck_assert_str_eq(r.body, text);
	ck_assert_uint_eq(r.len, strlen(text));
	/* An error envelope built in the scope too. */
	api_error(&r, RF_E_INVALID_VALUE, "quant", "not a quant");
	ck_assert(!api_json_arena_owns(r.body));
	ck_assert_ptr_nonnull(strstr(r.body, "\"field\":\"quant\""));
	cJSON_Delete(o);
	api_json_arena_end();
	/* The reply outlives the scope; freeing it is free()'s. */
	ck_assert_ptr_nonnull(strstr(r.body, "invalid_value"));
	api_reply_reset(&r);
	ck_assert(!api_json_arena_owns(api_json_owned(NULL)));
	api_json_arena_free();
}
END_TEST

START_TEST(nested_scopes_end_with_the_outermost)
{
	cJSON *outer, *inner, *later;

	api_json_arena_free();
	api_json_arena_begin();
	outer = tree(2);
	api_json_arena_begin();
	inner = tree(2);
	api_json_arena_end();
	/* Still in the outer scope: new items follow, the earlier ones are intact. */
	later = cJSON_CreateString("later");
	ck_assert(api_json_arena_owns(later));
	ck_assert((char *)later > (char *)inner);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(outer, "member-1")),
			 "a value of some length");
	cJSON_Delete(later);
	cJSON_Delete(inner);
	cJSON_Delete(outer);
	api_json_arena_end();
	api_json_arena_end(); /* one too many: nothing */
	api_json_arena_begin();
	ck_assert(api_json_arena_owns(later = cJSON_CreateNull()));
	cJSON_Delete(later);
	api_json_arena_end();
	api_json_arena_free();
}
END_TEST

START_TEST(a_scope_past_its_block_spills_to_malloc_and_the_next_block_is_larger)
{
	cJSON *big, *last;

	api_json_arena_free();
	api_json_arena_begin();
	big = tree(2000); /* about 6000 allocations: past the first block */
	last = cJSON_GetArrayItem(big, 1999);
	ck_assert_ptr_nonnull(last);
	ck_assert(!api_json_arena_owns(last)); /* from malloc */
	ck_assert(api_json_arena_owns(big));
	ck_assert_str_eq(last->string, "member-1999");
	cJSON_Delete(big); /* frees the spilled ones */
	api_json_arena_end();
	for (int round = 0; round < 6; round++) {
		api_json_arena_begin();
		big = tree(2000);
		last = cJSON_GetArrayItem(big, 1999);
		ck_assert_str_eq(last->string, "member-1999");
		if (api_json_arena_owns(last)) {
			cJSON_Delete(big);
			api_json_arena_end();
			api_json_arena_free();
			return; /* the block grew to hold it all */
		}
		cJSON_Delete(big);
		api_json_arena_end();
	}
	api_json_arena_free();
	ck_abort_msg("the block never grew to hold the tree");
}
END_TEST

Suite *json_alloc_suite(void)
{
	Suite *s = suite_create("json_alloc");
	TCase *tc = tcase_create("arena");

	tcase_add_test(tc, a_scope_allocates_from_its_block_and_outside_from_malloc);
	tcase_add_test(tc, a_body_printed_in_the_arena_is_copied_into_the_reply);
	tcase_add_test(tc, nested_scopes_end_with_the_outermost);
	tcase_add_test(tc, a_scope_past_its_block_spills_to_malloc_and_the_next_block_is_larger);
	suite_add_tcase(s, tc);
	return s;
}
