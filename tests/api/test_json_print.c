/*
 * api_json_print against cJSON_PrintUnformatted: the same bytes for numbers of every kind
 * (integers inside and outside int, fractions that need 15 or 17 digits, tiny and huge
 * magnitudes, NaN and infinities, negative zero), strings holding every byte, keys that need
 * escaping, raw items, empty and nested containers.
 */
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_print.h"
#include "tests/test.h"

/* Prints item both ways and compares. */
static void same(const cJSON *item)
{
	char *want = cJSON_PrintUnformatted(item);
	char *got = api_json_print(item);

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	cJSON_free(want);
	cJSON_free(got);
}

static void same_number(double v)
{
	cJSON *n = cJSON_CreateNumber(v);

	ck_assert_ptr_nonnull(n);
	same(n);
	cJSON_Delete(n);
}

/* A deterministic generator (xorshift64*). */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

START_TEST(numbers_as_cjson_prints_them)
{
	static const double fixed[] = {0,
				       -0.0,
				       1,
				       -1,
				       0.1,
				       0.5,
				       1.0 / 3,
				       2147483647.0,
				       2147483648.0,
				       -2147483648.0,
				       -2147483649.0,
				       5905580032.0,
				       999999999999999.0,
				       1e15,
				       1e15 + 1,
				       123456789012345678.0,
				       1e300,
				       -1e-300,
				       4.9e-324,
				       DBL_MAX,
				       4.7093289698237442,
				       0.40000000000000002,
				       12.5,
				       -7.25e-5,
				       NAN,
				       INFINITY,
				       -INFINITY};
	uint64_t s = 88172645463325252ULL;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		same_number(fixed[i]);
	for (int i = 0; i < 20000; i++) {
		uint64_t r = next(&s);
		double v;
		switch (i % 4) {
		case 0: /* any bit pattern that is a number */
			memcpy(&v, &r, sizeof(v));
			if (isnan(v))
				continue;
			break;
		case 1: /* integers of every size */
			v = (double)(int64_t)(r >> (r % 63));
			break;
		case 2: /* fractions around everyday magnitudes */
			v = (double)(r >> 11) / 9007199254740992.0 * pow(10, (double)(i % 24) - 8);
			break;
		default: /* short decimals, which %1.15g reads back */
			v = (double)(int64_t)(r % 2000001 - 1000000) / 1000.0;
		}
		same_number(v);
	}
}
END_TEST

/* v and its neighbours, k units in the last place either way. */
static void same_around(double v, int k)
{
	double up = v, down = v;

	same_number(v);
	for (int i = 0; i < k; i++) {
		up = nextafter(up, INFINITY);
		down = nextafter(down, -INFINITY);
		same_number(up);
		same_number(down);
	}
}

/* Between 1e-4 and 1e15 fractions are written without printf (the exact path of
 * json_print.c): every binade of that range with random mantissas, the neighbours of
 * decimals of 15 to 17 digits (where the 15-digit form stops reading back), exact ties of the
 * rounding to 15 and to 17 digits, and the edges at the powers of ten. */
START_TEST(fractions_written_without_printf)
{
	static const double ties[] = {549755813888.0625,   /* 2^39 + 1/16: 16 digits, ends in 5 */
				      140737488355328.125, /* 2^47 + 1/8: 18 digits, ends in 5 */
				      0.0001220703125,     /* 2^-13 */
				      1.0000000000000002,     0.30000000000000004,
				      9.9999999999999982,     99999999999999.984,
				      0.00010000000000000002, 0.099999999999999992};
	uint64_t s = 0x9e3779b97f4a7c15ULL;
	char buf[40];

	for (size_t i = 0; i < sizeof(ties) / sizeof(ties[0]); i++) {
		same_around(ties[i], 3);
		same_around(-ties[i], 1);
	}
	for (int n = -5; n <= 15; n++)
		same_around(pow(10, n), 4);
	for (int e = -14; e <= 50; e++)
		for (int i = 0; i < 3000; i++) {
			uint64_t r = next(&s);
			double v = ldexp((double)((r >> 11) | (1ULL << 52)), e - 52);
			same_number(i % 2 ? v : -v);
		}
	for (int i = 0; i < 30000; i++) {
		uint64_t r = next(&s);
		int digits = 15 + i % 3, point = (int)(r % 19) - 4;
		/* a decimal of that many digits with the point somewhere in [1e-4, 1e15) */
		snprintf(buf, sizeof(buf), "%.*ee%d", digits - 1,
			 (double)(r >> 11) / 9007199254740992.0 * 9 + 1, point);
		same_around(strtod(buf, NULL), 2);
	}
}
END_TEST

START_TEST(strings_and_keys_with_every_byte)
{
	char s[256];
	cJSON *o = cJSON_CreateObject();

	ck_assert_ptr_nonnull(o);
	for (int i = 1; i < 256; i++)
		s[i - 1] = (char)i;
	s[255] = '\0';
	cJSON_AddStringToObject(o, s, s);
	cJSON_AddStringToObject(o, "", "");
	cJSON_AddStringToObject(o, "quote\"back\\slash",
				"tab\tnew\nline\r\b\f\x01\x1f\x7f\xc3\xa9");
	same(o);
	cJSON_Delete(o);
}
END_TEST

/* The printer reads plain text eight bytes at a time: an escape at every offset of strings of
 * every length up to three words, among ASCII and UTF-8 bytes and bytes just around the
 * escaped ones, prints as cJSON prints it. */
START_TEST(escapes_at_every_offset_of_a_word)
{
	static const char specials[] = {'"', '\\', '\x01', '\x1f', '\n', '\x7f',
					' ', '!',  '#',    '[',    ']',  '\xc3'};
	static const char fill[] = "ab\xc3\xa9!#[]~ z\x80\xff";
	char s[32];

	for (size_t len = 0; len <= 24; len++)
		for (size_t at = 0; at <= len; at++)
			for (size_t k = 0; k < sizeof(specials); k++) {
				cJSON *str;
				for (size_t i = 0; i < len; i++)
					s[i] = fill[(i + k) % (sizeof(fill) - 1)];
				if (at < len)
					s[at] = specials[k];
				s[len] = '\0';
				str = cJSON_CreateString(s);
				ck_assert_ptr_nonnull(str);
				same(str);
				cJSON_Delete(str);
			}
}
END_TEST

START_TEST(trees_of_every_kind)
{
	const char *doc =
		"{\"a\":[],\"b\":{},\"c\":[1,2.5,\"x\",null,true,false,[[[]]],{\"d\":{\"e\":[{}]}}],"
		"\"f\":-0.0001,\"g\":1e+300,\"h\":\"\\u0000tail\",\"i\":[{\"j\":123456789012}]}";
	cJSON *t = cJSON_Parse(doc), *o;

	ck_assert_ptr_nonnull(t);
	same(t);
	same(cJSON_GetObjectItemCaseSensitive(t, "c"));
	cJSON_Delete(t);

	o = cJSON_CreateObject();
	ck_assert_ptr_nonnull(o);
	cJSON_AddRawToObject(o, "raw", "{\"pre\":[1, 2]}");
	cJSON_AddNullToObject(o, "n");
	cJSON_AddItemToObject(o, "s", cJSON_CreateStringReference("ref"));
	same(o);
	cJSON_Delete(o);

	/* A string item without text prints as "" in both. */
	o = cJSON_CreateString("x");
	ck_assert_ptr_nonnull(o);
	cJSON_free(o->valuestring);
	o->valuestring = NULL;
	same(o);
	cJSON_Delete(o);
}
END_TEST

START_TEST(what_cjson_cannot_print_stays_unprintable)
{
	cJSON *raw = cJSON_CreateRaw("1");
	cJSON invalid;

	ck_assert_ptr_nonnull(raw);
	cJSON_free(raw->valuestring);
	raw->valuestring = NULL;
	ck_assert_ptr_null(cJSON_PrintUnformatted(raw));
	ck_assert_ptr_null(api_json_print(raw));
	cJSON_Delete(raw);
	memset(&invalid, 0, sizeof(invalid));
	ck_assert_ptr_null(api_json_print(&invalid));
	ck_assert_ptr_null(api_json_print(NULL));
}
END_TEST

Suite *json_print_suite(void)
{
	Suite *s = suite_create("json_print");
	TCase *tc = tcase_create("print");

	tcase_add_test(tc, numbers_as_cjson_prints_them);
	tcase_add_test(tc, fractions_written_without_printf);
	tcase_add_test(tc, strings_and_keys_with_every_byte);
	tcase_add_test(tc, escapes_at_every_offset_of_a_word);
	tcase_add_test(tc, trees_of_every_kind);
	tcase_add_test(tc, what_cjson_cannot_print_stays_unprintable);
	suite_add_tcase(s, tc);
	return s;
}
