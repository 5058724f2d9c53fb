/*
 * Described machines made whole (core/hw/hw_describe.h): one 64 GB Mac is one GPU budget
 * however it is described, a profile becomes a machine once, and a pasted scan keeps its
 * working set. The profiles are the repository's (profiles/devices.json), loaded as the daemon
 * loads them.
 */
#include <stdlib.h>
#include <string.h>

#include "core/hw/hw_describe.h"
#include "tests/api/profiles_fixture.h"
#include "tests/test.h"

#define GIB 1073741824LL

static struct device_table devices;
static struct model_catalog *models;
static struct api_tier_table *tiers;

static void setup(void)
{
	t_profiles_load(&devices, &models, &tiers);
}

static void teardown(void)
{
	t_profiles_free(&devices, &models, &tiers);
}

/* A machine with one GPU called name: gpu_mem (< 0 unknown), ram (< 0 unknown). */
static struct hw_snapshot *mac(const char *name, int64_t gpu_mem, int64_t ram, bool unified)
{
	struct hw_snapshot *s = malloc(sizeof(*s));

	ck_assert_ptr_nonnull(s);
	hw_snapshot_init(s);
	s->n_gpus = 1;
	memset(&s->gpus[0], 0, sizeof(s->gpus[0]));
	hw_strlcpy(s->gpus[0].name, name, sizeof(s->gpus[0].name));
	s->gpus[0].memory_total_bytes = gpu_mem;
	s->gpus[0].memory_free_bytes = gpu_mem;
	s->gpus[0].unified_memory = unified;
	s->memory.total_bytes = ram;
	s->memory.available_bytes = ram;
	return s;
}

START_TEST(one_mac_one_budget_however_described)
{
	/* A 64 GB M2 Max: macOS lets its GPU wire 3/4 of RAM above 32 GB. */
	const int64_t ws = 48 * GIB;
	struct hw_snapshot *by_mem = mac("Apple M2 Max", 64 * GIB, -1, false);
	struct hw_snapshot *by_ram = mac("Apple M2 Max", -1, 64 * GIB, false);
	struct hw_snapshot *flagged = mac("Apple M2 Max", 64 * GIB, 64 * GIB, true);
	struct hw_snapshot *pasted = mac("Apple M2 Max", ws, 64 * GIB, true);
	struct hw_snapshot *named = mac("Apple M2 Max", -1, -1, false);
	struct hw_describe_gpu info[HW_MAX_GPUS];

	ck_assert_int_eq(hw_describe_complete(by_mem, &devices, info), 0);
	ck_assert(info[0].working_set);
	ck_assert_int_eq(by_mem->gpus[0].memory_total_bytes, ws);
	ck_assert_int_eq(by_mem->memory.total_bytes, 64 * GIB);
	ck_assert(by_mem->gpus[0].unified_memory);
	ck_assert_int_eq(hw_describe_complete(by_ram, &devices, info), 0);
	ck_assert_int_eq(by_ram->gpus[0].memory_total_bytes, ws);
	ck_assert_int_eq(hw_describe_complete(flagged, &devices, info), 0);
	ck_assert_int_eq(flagged->gpus[0].memory_total_bytes, ws);
	/* A scan pasted back is already at its working set: kept, not taken again. */
	ck_assert_int_eq(hw_describe_complete(pasted, &devices, info), 0);
	ck_assert(!info[0].working_set);
	ck_assert_int_eq(pasted->gpus[0].memory_total_bytes, ws);
	/* By name alone it is the profile's largest configuration (96 GB): 72 GiB of it. */
	ck_assert_int_eq(hw_describe_complete(named, &devices, info), 0);
	ck_assert(info[0].memory_from_profile);
	ck_assert_int_eq(named->memory.total_bytes, 96 * GIB);
	ck_assert_int_eq(named->gpus[0].memory_total_bytes, 72 * GIB);
	free(by_mem);
	free(by_ram);
	free(flagged);
	free(pasted);
	free(named);
}
END_TEST

START_TEST(a_profile_becomes_one_machine)
{
	const struct device_profile *p = NULL;
	struct hw_snapshot *s = malloc(sizeof(*s));

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(device_resolve(&devices, "apple-m2-max", &p), 0);
	hw_describe_from_profile(p, s);
	ck_assert_int_eq(s->n_gpus, 1);
	ck_assert_int_eq(s->memory.total_bytes, 96 * GIB);
	ck_assert_int_eq(s->gpus[0].memory_total_bytes, 72 * GIB);
	ck_assert_str_eq(s->gpus[0].vendor, "apple");
	ck_assert_int_eq(device_resolve(&devices, "amd-ryzen-7000-desktop", &p), 0);
	hw_describe_from_profile(p, s);
	ck_assert_int_eq(s->n_gpus, 0);
	ck_assert(s->cpu.isa & HW_ISA(AVX512F));
	ck_assert(s->cpu.memory_bandwidth_gbs > 80);
	free(s);
}
END_TEST

START_TEST(a_gpu_no_profile_knows_needs_its_memory)
{
	struct hw_snapshot *s = mac("Mystery Accelerator 9", -1, -1, false);
	struct hw_snapshot *apple = mac("Some Apple GPU", 64 * GIB, -1, true);

	ck_assert_int_eq(hw_describe_complete(s, &devices, NULL), -1);
	/* An Apple GPU no profile knows has macOS's own rule. */
	hw_strlcpy(apple->gpus[0].vendor, "apple", sizeof(apple->gpus[0].vendor));
	ck_assert_int_eq(hw_describe_complete(apple, &devices, NULL), 0);
	ck_assert_int_eq(apple->gpus[0].memory_total_bytes, 48 * GIB);
	free(s);
	free(apple);
}
END_TEST

/* A Mac named with its RAM size in the name is that Mac, not the profile's largest. */
START_TEST(a_mac_named_with_its_size_is_that_mac)
{
	struct hw_snapshot *s = mac("Apple M2 Max 64GB", -1, -1, false);
	struct hw_describe_gpu info[HW_MAX_GPUS];

	ck_assert_int_eq(hw_describe_complete(s, &devices, info), 0);
	ck_assert(info[0].working_set);
	ck_assert_int_eq(s->memory.total_bytes, 64 * GIB);
	ck_assert_int_eq(s->gpus[0].memory_total_bytes, 48 * GIB);
	free(s);
}
END_TEST

/* A GPU named by name is the part its profile describes, as one named by profile id is:
 * compute capability and architecture included (a T4's 7.5, so no bf16); what a scan or the
 * request gave is kept. */
START_TEST(a_named_gpu_has_its_profiles_architecture)
{
	struct hw_snapshot *s = mac("T4", -1, -1, false);
	struct hw_snapshot *given = mac("RTX 4090", 24 * GIB, -1, false);

	ck_assert_int_eq(hw_describe_complete(s, &devices, NULL), 0);
	ck_assert_str_eq(s->gpus[0].compute_capability, "7.5");
	ck_assert_str_eq(s->gpus[0].architecture, "Turing");
	hw_strlcpy(given->gpus[0].compute_capability, "8.6",
		   sizeof(given->gpus[0].compute_capability));
	ck_assert_int_eq(hw_describe_complete(given, &devices, NULL), 0);
	ck_assert_str_eq(given->gpus[0].compute_capability, "8.6");
	ck_assert_str_eq(given->gpus[0].architecture, "Ada Lovelace");
	free(s);
	free(given);
}
END_TEST

/* A Jetson named by name shares its module's RAM: its GPU's memory is what Linux sees less what
 * the OS holds at idle (the profile's rule from its tegrastats), not the 64 GiB on the box. */
START_TEST(a_jetson_has_what_linux_leaves_it)
{
	struct hw_snapshot *s = mac("Jetson AGX Orin 64GB", -1, -1, false);
	struct hw_describe_gpu info[HW_MAX_GPUS];

	ck_assert_int_eq(hw_describe_complete(s, &devices, info), 0);
	ck_assert(info[0].working_set);
	ck_assert(s->gpus[0].unified_memory);
	ck_assert_int_eq(s->memory.total_bytes, 64 * GIB);
	ck_assert_int_eq(s->gpus[0].memory_total_bytes, (int64_t)(64.0 * GIB * 0.9215));
	free(s);
}
END_TEST

/* A machine with only a CPU called model, listing isa and cores (<= 0: none). */
static struct hw_snapshot *cpu_host(const char *model, uint32_t isa, int cores)
{
	struct hw_snapshot *s = malloc(sizeof(*s));

	ck_assert_ptr_nonnull(s);
	hw_snapshot_init(s);
	hw_strlcpy(s->cpu.model, model, sizeof(s->cpu.model));
	s->cpu.isa = isa;
	if (cores > 0)
		s->cpu.physical_cores = cores;
	return s;
}

/* A CPU the table holds has the table's instruction sets whatever is listed, and the table's
 * cores where none are given (cores given are the host's: a VM's share), and says what it
 * replaced; doing it again changes nothing; an unknown CPU is said unknown and kept as
 * described. */
START_TEST(a_table_cpu_has_the_table_facts)
{
	const uint32_t zen4 = HW_ISA(AVX) | HW_ISA(AVX2) | HW_ISA(FMA) | HW_ISA(F16C) |
			      HW_ISA(AVX512F) | HW_ISA(AVX512_VNNI) | HW_ISA(AVX512_BF16);
	struct hw_snapshot *s = cpu_host("AMD Ryzen 9 7950X 16-Core Processor", HW_ISA(AVX2), 4);
	struct hw_snapshot *g = cpu_host("AWS Graviton3", 0, 8);
	struct hw_snapshot *u = cpu_host("AMD EPYC 9999 Weird", HW_ISA(AVX2), 12);
	struct hw_snapshot *n = cpu_host("Intel Xeon Sapphire Rapids 48-Core", 0, 0);
	struct hw_snapshot *bare = cpu_host("AMD Ryzen 9 7950X 16-Core Processor", 0, 0);
	struct hw_describe_cpu d;

	hw_describe_cpu(s, &devices, &d);
	ck_assert_ptr_nonnull(d.profile);
	ck_assert_str_eq(d.profile->id, "amd-ryzen-7000-desktop");
	/* The part's cores, from the family entry (alias_cores). */
	ck_assert(!d.unknown && d.isa_from_table && !d.cores_from_name);
	ck_assert_uint_eq(d.isa_given, HW_ISA(AVX2));
	ck_assert_int_eq(d.cores_given, 4);
	ck_assert_uint_eq(s->cpu.isa, zen4);
	ck_assert_int_eq(d.cores, 16);
	ck_assert_int_eq(s->cpu.physical_cores, 4);
	hw_describe_cpu(s, &devices, &d);
	ck_assert_uint_eq(d.isa_given, zen4);
	ck_assert_int_eq(d.cores_given, 4);
	ck_assert_int_eq(s->cpu.physical_cores, 4);

	/* Named alone: the part's cores. */
	hw_describe_cpu(bare, &devices, &d);
	ck_assert_int_eq(bare->cpu.physical_cores, 16);
	ck_assert_uint_eq(bare->cpu.isa, zen4);

	hw_describe_cpu(g, &devices, &d);
	ck_assert(!d.cores_from_name);
	ck_assert_int_eq(d.cores, 64);
	ck_assert_int_eq(g->cpu.physical_cores, 8);
	ck_assert(g->cpu.isa & HW_ISA(I8MM));

	/* A family name with no part: the count the name states. */
	hw_describe_cpu(n, &devices, &d);
	ck_assert_ptr_nonnull(d.profile);
	ck_assert(d.cores_from_name);
	ck_assert_int_eq(n->cpu.physical_cores, 48);

	hw_describe_cpu(u, &devices, &d);
	ck_assert(d.unknown);
	ck_assert_ptr_null(d.profile);
	ck_assert_uint_eq(u->cpu.isa, HW_ISA(AVX2));
	ck_assert_int_eq(u->cpu.physical_cores, 12);
	free(s);
	free(bare);
	free(g);
	free(u);
	free(n);
}
END_TEST

Suite *hw_describe_suite(void)
{
	Suite *s = suite_create("hw_describe");
	TCase *tc = tcase_create("hw_describe");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, one_mac_one_budget_however_described);
	tcase_add_test(tc, a_profile_becomes_one_machine);
	tcase_add_test(tc, a_gpu_no_profile_knows_needs_its_memory);
	tcase_add_test(tc, a_mac_named_with_its_size_is_that_mac);
	tcase_add_test(tc, a_named_gpu_has_its_profiles_architecture);
	tcase_add_test(tc, a_jetson_has_what_linux_leaves_it);
	tcase_add_test(tc, a_table_cpu_has_the_table_facts);
	suite_add_tcase(s, tc);
	return s;
}
