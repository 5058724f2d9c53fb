/*
 * The name index of a device table (device_table_index): the shipped devices.json, indexed as
 * the loader leaves it, resolves every name, id and alias of every entry (as given, with a
 * vendor prefix, with a memory size, in other case) to the same entry and the same error as
 * the same table without the index, with and without a reported memory size; so do bare model
 * numbers, which the index finds through its hash buckets.
 */
#include <stdio.h>
#include <string.h>

#include "core/hw/device.h"
#include "core/err.h"
#include "core/fit/model.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

/* Resolves name in both tables and checks that they agree. Returns the indexed result. */
static int agree(const struct device_table *idx, const struct device_table *plain, const char *name,
		 int64_t mem)
{
	const struct device_profile *a = NULL, *b = NULL;
	int ra = device_resolve_mem(idx, name, mem, &a);
	int rb = device_resolve_mem(plain, name, mem, &b);

	ck_assert_msg(ra == rb, "'%s' (%lld bytes): rc %d indexed, %d not", name, (long long)mem,
		      ra, rb);
	if (ra == 0)
		ck_assert_msg(a == b, "'%s': %s indexed, %s not", name, a->id, b->id);
	return ra;
}

START_TEST(index_answers_as_the_plain_table)
{
	struct device_table idx = {.n = 0, .devices = NULL}, plain;
	struct model_catalog *models = NULL;
	static const int64_t mems[] = {-1,         8LL << 30,  16LL << 30,
				       24LL << 30, 40LL << 30, 80LL << 30};
	int resolved = 0;

	t_profiles_load(&idx, &models, NULL);
	ck_assert_ptr_nonnull(idx.name_keys);
	ck_assert_uint_gt(idx.n_name_keys, (size_t)idx.n);
	plain = idx;
	plain.name_keys = NULL;
	plain.n_name_keys = 0;
	plain.name_keys_pool = NULL;
	for (int e = 0; e < idx.n; e++) {
		const struct device_profile *p = &idx.devices[e];
		for (int i = -2; i < p->n_aliases; i++) {
			const char *nm = i == -2 ? p->id : i == -1 ? p->name : p->aliases[i];
			char v[3][DEVICE_NAME_LEN + 16];
			if (!nm[0])
				continue;
			snprintf(v[0], sizeof(v[0]), "NVIDIA %s", nm);
			snprintf(v[1], sizeof(v[1]), "%s %dGB", nm, (int)(p->memory_gib + 0.5));
			snprintf(v[2], sizeof(v[2]), "%s", nm);
			for (char *c = v[2]; *c; c++)
				if (*c >= 'a' && *c <= 'z')
					*c = (char)(*c - 'a' + 'A');
			for (size_t m = 0; m < sizeof(mems) / sizeof(mems[0]); m++) {
				resolved += agree(&idx, &plain, nm, mems[m]) == 0;
				for (int k = 0; k < 3; k++)
					agree(&idx, &plain, v[k], mems[m]);
			}
		}
	}
	/* Bare model numbers (the series and form-factor lookups) and a CPU's name. */
	static const char *const bare[] = {"4090",   "A6000",         "M2",
					   "MI300X", "H100",          "RX 7900",
					   "7900",   "Ryzen 9 7950X", "Intel Core i7-8650U"};
	for (size_t b = 0; b < sizeof(bare) / sizeof(bare[0]); b++)
		for (size_t m = 0; m < sizeof(mems) / sizeof(mems[0]); m++)
			agree(&idx, &plain, bare[b], mems[m]);
	ck_assert_int_eq(agree(&idx, &plain, "4090", -1), 0);
	/* Names no entry has. */
	agree(&idx, &plain, "RTX 4090 D", -1);
	agree(&idx, &plain, "Quantum Accelerator 9000", 24LL << 30);
	ck_assert_int_gt(resolved, idx.n);
	t_profiles_free(&idx, &models, NULL);
}
END_TEST

Suite *device_index_suite(void)
{
	Suite *s = suite_create("device_index");
	TCase *tc = tcase_create("index");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, index_answers_as_the_plain_table);
	suite_add_tcase(s, tc);
	return s;
}
