/*
 * The /proc parsers against real captures from tests/data/fixtures (see its INDEX.md for where
 * each came from). Expected values were counted from the captures themselves (processor
 * entries, distinct physical/core id pairs, MemTotal lines), not from the parser.
 */
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hw/hw_parse.h"
#include "tests/test.h"

static struct hw_cpu parse_cpu(const char *name)
{
	struct hw_snapshot s;
	size_t len;
	char *buf = t_fixture(name, &len);

	hw_snapshot_init(&s);
	ck_assert_int_eq(hw_parse_cpuinfo(buf, len, &s.cpu), 0);
	free(buf);
	return s.cpu;
}

START_TEST(cpuinfo_two_socket_xeon_with_smt)
{
	struct hw_cpu c = parse_cpu("intel-xeon-l5640-2socket__proc-cpuinfo.txt");

	ck_assert_int_eq(c.logical_cores, 24);
	ck_assert_int_eq(c.physical_cores, 12);
	ck_assert_int_eq(c.sockets, 2);
	ck_assert_str_eq(c.vendor, "GenuineIntel");
	ck_assert_ptr_nonnull(strstr(c.model, "L5640"));
	ck_assert(!(c.isa & HW_ISA(AVX2)));
}
END_TEST

START_TEST(cpuinfo_four_socket_xeon)
{
	struct hw_cpu c = parse_cpu("intel-xeon-x7550-4socket__proc-cpuinfo.txt");

	ck_assert_int_eq(c.logical_cores, 64);
	ck_assert_int_eq(c.physical_cores, 32);
	ck_assert_int_eq(c.sockets, 4);
}
END_TEST

START_TEST(cpuinfo_ryzen_isa)
{
	struct hw_cpu c = parse_cpu("amd-ryzen5-1600__proc-cpuinfo.txt");

	ck_assert_int_eq(c.logical_cores, 12);
	ck_assert_int_eq(c.physical_cores, 6);
	ck_assert_str_eq(c.vendor, "AuthenticAMD");
	ck_assert(c.isa & HW_ISA(AVX2));
	ck_assert(c.isa & HW_ISA(FMA));
	ck_assert(c.isa & HW_ISA(F16C));
	ck_assert(!(c.isa & HW_ISA(AVX512F)));
}
END_TEST

START_TEST(cpuinfo_arm_servers_and_boards)
{
	struct hw_cpu g = parse_cpu("aws-graviton2-neoverse-n1__proc-cpuinfo-cpu0-only.txt");
	struct hw_cpu a7 = parse_cpu("armv7-cortex-a53-32bit-kernel__proc-cpuinfo.txt");
	struct hw_cpu tx1 = parse_cpu("jetson-tx1__proc-cpuinfo.txt");

	ck_assert_int_eq(g.logical_cores, 1);
	ck_assert(g.isa & HW_ISA(NEON));
	ck_assert(g.isa & HW_ISA(DOTPROD));
	/* ARM kernels print no topology here: physical cores stay unknown, never guessed. */
	ck_assert_int_eq(g.physical_cores, HW_UNKNOWN);
	ck_assert_int_eq(a7.logical_cores, 8);
	ck_assert_ptr_nonnull(strstr(a7.model, "ARMv7"));
	ck_assert_int_eq(tx1.logical_cores, 4);
	ck_assert(tx1.isa & HW_ISA(NEON));
}
END_TEST

START_TEST(cpuinfo_without_processors_is_an_error)
{
	struct hw_snapshot s;

	hw_snapshot_init(&s);
	ck_assert_int_eq(hw_parse_cpuinfo("", 0, &s.cpu), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_cpuinfo("garbage\n\x01\x02:::\n", 14, &s.cpu), RF_E_PARSE);
	ck_assert_int_eq(s.cpu.logical_cores, HW_UNKNOWN);
}
END_TEST

START_TEST(meminfo_real_machines)
{
	struct hw_memory m = {-1, -1};
	size_t len;
	char *buf = t_fixture("intel-xeon-l5640-2socket__proc-meminfo.txt", &len);

	ck_assert_int_eq(hw_parse_meminfo(buf, len, &m), 0);
	ck_assert_int_eq(m.total_bytes, 65921280LL * 1024);
	ck_assert_int_eq(m.available_bytes, 63844924LL * 1024);
	free(buf);
	buf = t_fixture("amd-ryzen5-1600__proc-meminfo.txt", &len);
	ck_assert_int_eq(hw_parse_meminfo(buf, len, &m), 0);
	ck_assert_int_eq(m.total_bytes, 32777916LL * 1024);
	ck_assert_int_eq(m.available_bytes, 30323716LL * 1024);
	free(buf);
	/* A 2.4-era file with the old "total: used: free:" table ahead of the key lines. */
	buf = t_fixture("embedded-linux-256mb-legacy-header__proc-meminfo.txt", &len);
	ck_assert_int_eq(hw_parse_meminfo(buf, len, &m), 0);
	ck_assert_int_eq(m.total_bytes, 254472LL * 1024);
	ck_assert_int_eq(m.available_bytes, 210156LL * 1024);
	free(buf);
}
END_TEST

START_TEST(meminfo_before_memavailable_sums_free_buffers_cached)
{
	/* Linux < 3.14 had no MemAvailable line. */
	const char old[] =
		"MemTotal:  1000 kB\nMemFree:  100 kB\nBuffers:  20 kB\nCached:  300 kB\n";
	struct hw_memory m;

	ck_assert_int_eq(hw_parse_meminfo(old, sizeof(old) - 1, &m), 0);
	ck_assert_int_eq(m.total_bytes, 1000 * 1024);
	ck_assert_int_eq(m.available_bytes, 420 * 1024);
}
END_TEST

START_TEST(meminfo_rejects_garbage_and_overflow)
{
	struct hw_memory m = {-5, -5};
	const char huge[] = "MemTotal: 99999999999999999999999 kB\n";

	ck_assert_int_eq(hw_parse_meminfo("MemFree: 1 kB\n", 14, &m), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_meminfo(huge, sizeof(huge) - 1, &m), RF_E_PARSE);
	ck_assert_int_eq(m.total_bytes, -5);
}
END_TEST

/* sysfs writes a cache's size in KiB ("491520K" is a 480 MiB L3); M and G are read too, and
 * nothing else is a size. */
START_TEST(cache_sizes_as_sysfs_writes_them)
{
	int64_t b = -5;
	const char *bad[] = {"", "K", "48X", "48KK", "-1K", "48 K", "99999999999999999999K"};

	ck_assert_int_eq(hw_parse_cache_size("48K\n", 4, &b), 0);
	ck_assert_int_eq(b, 48 * 1024);
	ck_assert_int_eq(hw_parse_cache_size("491520K", 7, &b), 0);
	ck_assert_int_eq(b, INT64_C(480) << 20);
	ck_assert_int_eq(hw_parse_cache_size("32M \n", 5, &b), 0);
	ck_assert_int_eq(b, INT64_C(32) << 20);
	ck_assert_int_eq(hw_parse_cache_size("1G", 2, &b), 0);
	ck_assert_int_eq(b, INT64_C(1) << 30);
	ck_assert_int_eq(hw_parse_cache_size("4096", 4, &b), 0);
	ck_assert_int_eq(b, 4096);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		b = -5;
		ck_assert_msg(hw_parse_cache_size(bad[i], strlen(bad[i]), &b) == RF_E_PARSE, "%s",
			      bad[i]);
		ck_assert_int_eq(b, -5);
	}
}
END_TEST

Suite *hw_parse_suite(void)
{
	Suite *s = suite_create("hw_parse");
	TCase *tc = tcase_create("proc");

	tcase_add_test(tc, cpuinfo_two_socket_xeon_with_smt);
	tcase_add_test(tc, cpuinfo_four_socket_xeon);
	tcase_add_test(tc, cpuinfo_ryzen_isa);
	tcase_add_test(tc, cpuinfo_arm_servers_and_boards);
	tcase_add_test(tc, cpuinfo_without_processors_is_an_error);
	tcase_add_test(tc, meminfo_real_machines);
	tcase_add_test(tc, meminfo_before_memavailable_sums_free_buffers_cached);
	tcase_add_test(tc, meminfo_rejects_garbage_and_overflow);
	tcase_add_test(tc, cache_sizes_as_sysfs_writes_them);
	suite_add_tcase(s, tc);
	return s;
}
