/*
 * The macOS sysctl parser and the Apple Silicon rules (core/hw/hw_parse_sysctl.c), against the
 * real `sysctl -a` captures of tests/data/fixtures (M1 Pro, M2, M3 Max, a Big Sur M1, an Intel
 * Mac) and the GPU working-set limits that Metal logged on the machines listed in
 * tests/data/calibration/gpus.csv, which the rule must reproduce.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hw/hw_parse_sysctl.h"
#include "tests/test.h"

#define GIB (INT64_C(1) << 30)

static char *shared_file(const char *sub, const char *name, size_t *len)
{
	char *dir = t_path(t_data_dir(), sub);
	char *path = t_path(dir, name);
	char *buf = t_read_file(path, len);

	ck_assert_msg(buf != NULL, "missing %s", path);
	free(dir);
	free(path);
	return buf;
}

static struct hw_sysctl_info parse_fixture(const char *name)
{
	struct hw_sysctl_info in;
	size_t len;
	char *buf = shared_file("fixtures", name, &len);

	hw_sysctl_info_init(&in);
	ck_assert_int_eq(hw_parse_sysctl(buf, len, &in), 0);
	free(buf);
	return in;
}

static bool has_warning(const struct hw_snapshot *s, const char *needle)
{
	for (int i = 0; i < s->n_warnings; i++)
		if (strstr(s->warnings[i], needle))
			return true;
	return false;
}

static struct hw_gpu *new_gpu(struct hw_snapshot *s)
{
	struct hw_gpu *g = &s->gpus[s->n_gpus];

	memset(g, 0, sizeof(*g));
	g->index = s->n_gpus++;
	g->memory_total_bytes = HW_UNKNOWN;
	g->memory_free_bytes = HW_UNKNOWN;
	g->memory_used_bytes = HW_UNKNOWN;
	return g;
}

START_TEST(m3_max_macos15)
{
	struct hw_sysctl_info in = parse_fixture("apple-m3-max-macos15__sysctl-a-hw-machdep.txt");
	static struct hw_snapshot s;
	struct hw_gpu *g;

	ck_assert_int_eq(in.memsize, 38654705664);
	ck_assert_int_eq(in.pagesize, 16384);
	ck_assert_int_eq(in.perf_physicalcpu[0], 10);
	ck_assert_int_eq(in.perf_physicalcpu[1], 4);
	ck_assert_str_eq(in.perf_name[0], "Performance");
	ck_assert_str_eq(in.perf_name[1], "Efficiency");
	ck_assert_int_eq(in.physicalcpu, 14);
	ck_assert_int_eq(in.logicalcpu, 14);
	ck_assert_int_eq(in.packages, 1);
	ck_assert_int_eq(in.nperflevels, 2);
	ck_assert_str_eq(in.brand, "Apple M3 Max");
	ck_assert_str_eq(in.chip_generation, "M3");
	ck_assert_str_eq(in.chip_tier, "Max");
	ck_assert(in.arm64);
	/* FEAT_BF16 is 1 on the M3 Max; the M1 Pro's capture says 0. */
	ck_assert_uint_eq(in.isa, HW_ISA(NEON) | HW_ISA(DOTPROD) | HW_ISA(I8MM) | HW_ISA(BF16));
	ck_assert_int_eq(in.wired_limit_mb, HW_UNKNOWN);
	ck_assert(hw_sysctl_is_apple_silicon(&in));

	hw_snapshot_init(&s);
	hw_sysctl_fill_host(&in, &s);
	ck_assert_str_eq(s.host.soc, "Apple M3 Max");
	ck_assert_str_eq(s.host.arch, "arm64");
	ck_assert_str_eq(s.cpu.model, "Apple M3 Max");
	ck_assert_str_eq(s.cpu.vendor, "Apple");
	ck_assert_str_eq(s.cpu.arch, "arm64");
	ck_assert_int_eq(s.cpu.performance_cores, 10);
	ck_assert_int_eq(s.cpu.efficiency_cores, 4);
	ck_assert_int_eq(s.cpu.physical_cores, 14);
	ck_assert_int_eq(s.cpu.logical_cores, 14);
	ck_assert_int_eq(s.cpu.sockets, 1);
	ck_assert_int_eq(s.memory.total_bytes, 38654705664);
	ck_assert_int_eq(s.memory.available_bytes, HW_UNKNOWN);
	ck_assert_str_eq(s.sources.cpu, "sysctl");
	ck_assert_str_eq(s.sources.memory, "sysctl");
	ck_assert(has_warning(&s, "available memory"));
	g = new_gpu(&s);
	hw_sysctl_fill_gpu(&in, &s, g);
	ck_assert_str_eq(g->vendor, "apple");
	ck_assert_str_eq(g->name, "Apple M3 Max GPU");
	ck_assert(g->unified_memory);
	/* 36 GiB: 3/4, as a 36 GB M4 Max logged (28991.03 MB). */
	ck_assert_int_eq(g->memory_total_bytes, 28991029248);
	ck_assert_int_eq(g->memory_free_bytes, HW_UNKNOWN);
}
END_TEST

START_TEST(m1_pro_and_m2_macos12)
{
	struct hw_sysctl_info p = parse_fixture("apple-m1-pro-macos12__sysctl-a-hw-machdep.txt");
	struct hw_sysctl_info m2 = parse_fixture("apple-m2-macos12__sysctl-a-hw-machdep.txt");
	static struct hw_snapshot s;
	struct hw_gpu *g;

	ck_assert_str_eq(p.brand, "Apple M1 Pro");
	ck_assert_str_eq(p.chip_generation, "M1");
	ck_assert_str_eq(p.chip_tier, "Pro");
	ck_assert_int_eq(p.perf_physicalcpu[0], 6);
	ck_assert_int_eq(p.perf_physicalcpu[1], 2);
	ck_assert_int_eq(p.memsize, 17179869184);
	/* FEAT_I8MM: 0 on the M1 Pro. */
	ck_assert_uint_eq(p.isa, HW_ISA(NEON) | HW_ISA(DOTPROD));
	ck_assert_str_eq(p.perf_name[0], "");

	ck_assert_str_eq(m2.brand, "Apple M2");
	ck_assert_str_eq(m2.chip_generation, "M2");
	ck_assert_str_eq(m2.chip_tier, "");
	ck_assert_int_eq(m2.perf_physicalcpu[0], 4);
	ck_assert_int_eq(m2.perf_physicalcpu[1], 4);
	ck_assert_uint_eq(m2.isa, HW_ISA(NEON) | HW_ISA(DOTPROD) | HW_ISA(I8MM) | HW_ISA(BF16));

	hw_snapshot_init(&s);
	hw_sysctl_fill_host(&m2, &s);
	g = new_gpu(&s);
	hw_sysctl_fill_gpu(&m2, &s, g);
	ck_assert_str_eq(s.host.soc, "Apple M2");
	ck_assert_str_eq(g->name, "Apple M2 GPU");
	/* 16 GiB: the 11453.25 MB an M3 16 GB logged (gpus.csv). */
	ck_assert_int_eq(g->memory_total_bytes, 11453251584);
}
END_TEST

START_TEST(m1_big_sur_brand_names_no_chip)
{
	struct hw_sysctl_info in =
		parse_fixture("apple-m1-macos11__sysctl-machdep-cpu-hw-optional-partial.txt");
	static struct hw_snapshot s;
	struct hw_gpu *g;

	ck_assert_str_eq(in.brand, "Apple processor");
	ck_assert_str_eq(in.chip_generation, "");
	ck_assert(in.arm64);
	ck_assert_int_eq(in.memsize, HW_UNKNOWN);
	ck_assert_int_eq(in.core_count, 8);
	ck_assert_int_eq(in.thread_count, 8);
	/* No FEAT_DotProd key on Big Sur: not claimed. */
	ck_assert_uint_eq(in.isa, HW_ISA(NEON));

	hw_snapshot_init(&s);
	hw_sysctl_fill_host(&in, &s);
	ck_assert_str_eq(s.host.soc, "");
	ck_assert_int_eq(s.cpu.logical_cores, 8);
	ck_assert_int_eq(s.cpu.physical_cores, 8);
	ck_assert_int_eq(s.cpu.performance_cores, 0);
	ck_assert_int_eq(s.memory.total_bytes, HW_UNKNOWN);
	ck_assert_str_eq(s.sources.memory, "none");
	g = new_gpu(&s);
	hw_sysctl_fill_gpu(&in, &s, g);
	ck_assert_str_eq(g->name, "Apple GPU");
	ck_assert_int_eq(g->memory_total_bytes, HW_UNKNOWN);
	ck_assert(has_warning(&s, "names no Apple chip"));
	ck_assert(has_warning(&s, "hw.memsize missing"));
}
END_TEST

START_TEST(intel_mac)
{
	struct hw_sysctl_info in =
		parse_fixture("intel-mac-core-i5-3230m-macos10.14__sysctl-machdep-cpu.txt");
	static struct hw_snapshot s;

	ck_assert_str_eq(in.cpu_vendor, "GenuineIntel");
	ck_assert_str_eq(in.brand, "Intel(R) Core(TM) i5-3230M CPU @ 2.60GHz");
	ck_assert_int_eq(in.core_count, 2);
	ck_assert_int_eq(in.thread_count, 4);
	/* Ivy Bridge: AVX and F16C, no FMA or AVX2. */
	ck_assert_uint_eq(in.isa, HW_ISA(AVX) | HW_ISA(F16C));
	ck_assert(!hw_sysctl_is_apple_silicon(&in));
	hw_snapshot_init(&s);
	hw_sysctl_fill_host(&in, &s);
	ck_assert_str_eq(s.cpu.vendor, "GenuineIntel");
	ck_assert_int_eq(s.cpu.physical_cores, 2);
	ck_assert_int_eq(s.cpu.logical_cores, 4);
	ck_assert_str_eq(s.host.soc, "");
}
END_TEST

/* Every row of gpus.csv named "... GPU working set": the RAM size from the name, the limit Metal logged
 * (in MB of 10^6 bytes, or MiB where the notes say so) from the notes, two decimals. */
START_TEST(working_set_reproduces_calibration_rows)
{
	size_t len;
	char *csv = shared_file("calibration", "gpus.csv", &len);
	char *line = csv;
	int rows = 0;

	while (line && *line) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		const char *comma = strchr(line, ',');
		if (strncmp(line, "Apple ", 6) == 0 && comma && comma - line > 15 &&
		    strncmp(comma - 15, "GPU working set", 15) == 0) {
			const char *paren = strstr(line, "GB)");
			const char *lim = strstr(line, "working-set limit ");
			int gb = 0;
			double logged, got;
			int64_t ws;
			ck_assert_ptr_nonnull(paren);
			ck_assert_ptr_nonnull(lim);
			while (paren > line && paren[-1] >= '0' && paren[-1] <= '9')
				paren--;
			ck_assert_int_eq(sscanf(paren, "%d", &gb), 1);
			ck_assert_int_eq(sscanf(lim + 18, "%lf", &logged), 1);
			ws = hw_apple_gpu_working_set((int64_t)gb * GIB, 16384, 0);
			got = strstr(line, "value is MiB") ? (double)ws / 1048576.0 :
							     (double)ws / 1e6;
			ck_assert_msg(got > logged - 0.005 && got < logged + 0.005,
				      "%d GB: rule gives %.4f, Metal logged %.2f", gb, got, logged);
			rows++;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(csv);
	ck_assert_int_ge(rows, 7);
}
END_TEST

START_TEST(working_set_rule)
{
	ck_assert_int_eq(hw_apple_gpu_working_set(8 * GIB, 16384, 0), 5726633984);
	ck_assert_int_eq(hw_apple_gpu_working_set(16 * GIB, 16384, 0), 11453251584);
	/* 24 GB M3: llama.cpp logged 17179.89 MB, one page above 2/3. */
	ck_assert_int_eq(hw_apple_gpu_working_set(24 * GIB, 16384, 0), 17179885568);
	ck_assert_int_eq(hw_apple_gpu_working_set(32 * GIB, 16384, 0), 22906503168);
	ck_assert_int_eq(hw_apple_gpu_working_set(36 * GIB, 16384, 0), 28991029248);
	ck_assert_int_eq(hw_apple_gpu_working_set(48 * GIB, 16384, 0), 38654705664);
	ck_assert_int_eq(hw_apple_gpu_working_set(64 * GIB, 16384, 0), 51539607552);
	ck_assert_int_eq(hw_apple_gpu_working_set(192 * GIB, 16384, 0), 154618822656);
	/* The page size defaults to Apple Silicon's 16 KiB. */
	ck_assert_int_eq(hw_apple_gpu_working_set(8 * GIB, 0, 0), 5726633984);
	ck_assert_int_eq(hw_apple_gpu_working_set(8 * GIB, HW_UNKNOWN, 0), 5726633984);
	/* A user's wired limit overrides, capped at RAM. */
	ck_assert_int_eq(hw_apple_gpu_working_set(32 * GIB, 16384, 28 * GIB), 28 * GIB);
	ck_assert_int_eq(hw_apple_gpu_working_set(32 * GIB, 16384, 40 * GIB), 32 * GIB);
	ck_assert_int_eq(hw_apple_gpu_working_set(HW_UNKNOWN, 16384, 0), HW_UNKNOWN);
	ck_assert_int_eq(hw_apple_gpu_working_set(0, 16384, 8 * GIB), HW_UNKNOWN);
}
END_TEST

START_TEST(wired_limit_keys)
{
	struct hw_sysctl_info in;
	const char *both = "debug.iogpu.wired_limit: 1073741824\niogpu.wired_limit_mb: 24576\n"
			   "hw.memsize: 34359738368\n";
	const char *zero = "iogpu.wired_limit_mb: 0\ndebug.iogpu.wired_limit: 1073741824\n";
	const char *old = "hw.memsize = 34359738368\ndebug.iogpu.wired_limit = 1073741824\n";

	hw_sysctl_info_init(&in);
	ck_assert_int_eq(hw_parse_sysctl(both, strlen(both), &in), 0);
	ck_assert_int_eq(hw_sysctl_wired_limit(&in), INT64_C(24576) << 20);
	hw_sysctl_info_init(&in);
	ck_assert_int_eq(hw_parse_sysctl(zero, strlen(zero), &in), 0);
	ck_assert_int_eq(hw_sysctl_wired_limit(&in), 0);
	hw_sysctl_info_init(&in);
	ck_assert_int_eq(hw_parse_sysctl(old, strlen(old), &in), 0);
	ck_assert_int_eq(hw_sysctl_wired_limit(&in), 1073741824);
	ck_assert_int_eq(in.memsize, 32 * GIB);
	hw_sysctl_info_init(&in);
	ck_assert_int_eq(hw_sysctl_wired_limit(&in), 0);
}
END_TEST

START_TEST(forms_and_junk)
{
	struct hw_sysctl_info in;
	const char *eq = "hw.ncpu = 8\r\nhw.memsize=17179869184\r\nmachdep.cpu.brand_string = "
			 "Apple M4 Max\r\nkern.version: Darwin Kernel Version 24.0.0: Mon Aug 12 "
			 "20:51:54 PDT 2024; root:xnu-11215.1.10~2/RELEASE_ARM64_T6000\r\n"
			 "kern.ostype: Darwin\nkern.osrelease: 24.0.0\n";
	const char *junk = "this is not sysctl\n: no key\nhw.memsize\n=5\nhw.memsize : \n";
	const char *bad = "hw.memsize: 99999999999999999999999\nhw.ncpu: -4\n"
			  "hw.logicalcpu: 999999\nhw.physicalcpu: 8\nhw.memsize: 8589934592\n";
	const char *big = "hw.memsize: 2251799813685248\n";
	static struct hw_snapshot s;

	hw_sysctl_info_init(&in);
	ck_assert_int_eq(hw_parse_sysctl(eq, strlen(eq), &in), 0);
	ck_assert_int_eq(in.ncpu, 8);
	ck_assert_int_eq(in.memsize, 16 * GIB);
	ck_assert_str_eq(in.brand, "Apple M4 Max");
	ck_assert_str_eq(in.chip_generation, "M4");
	ck_assert_str_eq(in.chip_tier, "Max");
	hw_snapshot_init(&s);
	hw_sysctl_fill_host(&in, &s);
	ck_assert_str_eq(s.host.os, "Darwin");
	ck_assert_str_eq(s.host.kernel, "24.0.0");
	ck_assert_int_eq(s.cpu.logical_cores, 8);

	hw_sysctl_info_init(&in);
	ck_assert_int_eq(hw_parse_sysctl(junk, strlen(junk), &in), 0);
	ck_assert_int_eq(in.memsize, HW_UNKNOWN);
	ck_assert_int_eq(hw_parse_sysctl("", 0, &in), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysctl(NULL, 0, &in), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysctl("a.b: c\nx\n", 9, &in), RF_E_PARSE);

	/* Overflow and out-of-range values are skipped; the next valid one is taken. */
	hw_sysctl_info_init(&in);
	ck_assert_int_eq(hw_parse_sysctl(bad, strlen(bad), &in), 0);
	ck_assert_int_eq(in.memsize, 8 * GIB);
	ck_assert_int_eq(in.ncpu, HW_UNKNOWN);
	ck_assert_int_eq(in.logicalcpu, HW_UNKNOWN);
	ck_assert_int_eq(in.physicalcpu, 8);
	hw_sysctl_info_init(&in);
	ck_assert_int_eq(hw_parse_sysctl(big, strlen(big), &in), 0);
	ck_assert_int_eq(in.memsize, HW_UNKNOWN);
}
END_TEST

START_TEST(brand_edges)
{
	static const struct {
		const char *brand, *gen, *tier;
	} cases[] = {
		{"Apple M10 Ultra", "M10", "Ultra"},
		{"Apple M3 Maximum", "M3", ""},
		{"Apple M1", "M1", ""},
		{"Apple Max", "", ""},
		{"Apple M", "", ""},
		{"Apple M123", "", ""},
		{"Apple M3Max", "", ""},
		{"Intel Apple M3", "", ""},
	};
	char text[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hw_sysctl_info in;
		int n = snprintf(text, sizeof(text), "machdep.cpu.brand_string: %s\n",
				 cases[i].brand);
		hw_sysctl_info_init(&in);
		ck_assert_int_eq(hw_parse_sysctl(text, (size_t)n, &in), 0);
		ck_assert_str_eq(in.chip_generation, cases[i].gen);
		ck_assert_str_eq(in.chip_tier, cases[i].tier);
	}
	/* A brand longer than the field is cut, never overrun. */
	{
		struct hw_sysctl_info in;
		char longtext[600] = "machdep.cpu.brand_string: Apple M9 ";
		size_t n = strlen(longtext);
		memset(longtext + n, 'x', 400);
		longtext[n + 400] = '\0';
		hw_sysctl_info_init(&in);
		ck_assert_int_eq(hw_parse_sysctl(longtext, strlen(longtext), &in), 0);
		ck_assert_uint_eq(strlen(in.brand), HW_NAME_LEN - 1);
		ck_assert_str_eq(in.chip_generation, "M9");
		ck_assert_str_eq(in.chip_tier, "");
	}
}
END_TEST

START_TEST(fill_keeps_what_is_known)
{
	struct hw_sysctl_info in = parse_fixture("apple-m3-max-macos15__sysctl-a-hw-machdep.txt");
	static struct hw_snapshot s;

	hw_snapshot_init(&s);
	s.cpu.logical_cores = 3;
	s.memory.total_bytes = 1024;
	hw_strlcpy(s.host.soc, "Board", sizeof(s.host.soc));
	hw_sysctl_fill_host(&in, &s);
	ck_assert_int_eq(s.cpu.logical_cores, 3);
	ck_assert_int_eq(s.memory.total_bytes, 1024);
	ck_assert_str_eq(s.host.soc, "Board");
	ck_assert_str_eq(s.sources.cpu, "none");
	ck_assert_str_eq(s.sources.memory, "none");
}
END_TEST

Suite *hw_parse_sysctl_suite(void)
{
	Suite *s = suite_create("hw_parse_sysctl");
	TCase *tc = tcase_create("sysctl");

	tcase_add_test(tc, m3_max_macos15);
	tcase_add_test(tc, m1_pro_and_m2_macos12);
	tcase_add_test(tc, m1_big_sur_brand_names_no_chip);
	tcase_add_test(tc, intel_mac);
	tcase_add_test(tc, working_set_reproduces_calibration_rows);
	tcase_add_test(tc, working_set_rule);
	tcase_add_test(tc, wired_limit_keys);
	tcase_add_test(tc, forms_and_junk);
	tcase_add_test(tc, brand_edges);
	tcase_add_test(tc, fill_keeps_what_is_known);
	suite_add_tcase(s, tc);
	return s;
}
