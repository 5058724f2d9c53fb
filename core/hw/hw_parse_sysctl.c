/*
 * macOS sysctl output parser and the Apple Silicon rules that follow from it (see
 * hw_parse_sysctl.h). The GPU working-set rule is the part that matters most for "what fits":
 * it reproduces, to the byte, the recommendedMaxWorkingSetSize values that llama.cpp logged on
 * the machines of tests/data/calibration/gpus.csv (M1 8 GB, M3 16 GB, M1 Max 32/64 GB, M3 Max
 * 48/64 GB, M2 Ultra 192 GB), plus a 24 GB M3 (17179.89 MB) and a 36 GB M4 Max (28991.03 MB)
 * from published llama.cpp logs, which place the switch from 2/3 to 3/4 between 32 and 36 GiB.
 * macOS 26 is reported to allow more on 128 GB machines (107.52 GiB); no calibration row
 * covers it yet, so the rule stays the one the logs above follow.
 */
#include "core/hw/hw_parse_sysctl.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/numparse.h"
#include "core/text.h"

#define GIB (INT64_C(1) << 30)
#define APPLE_PAGE_DEFAULT 16384
#define WIRED_LIMIT_MB_MAX (UINT64_C(1) << 30)

void hw_sysctl_info_init(struct hw_sysctl_info *info)
{
	memset(info, 0, sizeof(*info));
	info->memsize = HW_UNKNOWN;
	info->pagesize = HW_UNKNOWN;
	info->wired_limit_mb = HW_UNKNOWN;
	info->wired_limit_debug = HW_UNKNOWN;
	info->ncpu = HW_UNKNOWN;
	info->physicalcpu = HW_UNKNOWN;
	info->logicalcpu = HW_UNKNOWN;
	info->packages = HW_UNKNOWN;
	info->nperflevels = HW_UNKNOWN;
	info->perf_physicalcpu[0] = HW_UNKNOWN;
	info->perf_physicalcpu[1] = HW_UNKNOWN;
	info->core_count = HW_UNKNOWN;
	info->thread_count = HW_UNKNOWN;
}

static bool sysctl_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

/* Splits "key: value" or "key = value". The key is a sysctl name (letters, digits, '.', '_',
 * '-'); the value is the rest of the line, trimmed (it may hold ':' or '='). */
static bool sysctl_kv(struct rf_span line, struct rf_span *key, struct rf_span *val)
{
	struct rf_span t = rf_span_trim(line);
	size_t i = 0;

	while (i < t.len && sysctl_name_char(t.p[i]))
		i++;
	if (i == 0)
		return false;
	*key = (struct rf_span){t.p, i};
	while (i < t.len && (t.p[i] == ' ' || t.p[i] == '\t'))
		i++;
	if (i == t.len || (t.p[i] != ':' && t.p[i] != '='))
		return false;
	*val = rf_span_trim((struct rf_span){t.p + i + 1, t.len - i - 1});
	return true;
}

/* Parses a count; leaves *dst alone (and returns false) on junk or when already set. */
/* Sets bits for the words of a machdep.cpu.features / leaf7_features line. */
static void features_isa(struct rf_span v, uint32_t *isa)
{
	static const struct {
		const char *word;
		uint32_t bit;
	} words[] = {
		{"AVX1.0", HW_ISA(AVX)},
		{"AVX2", HW_ISA(AVX2)},
		{"AVX512F", HW_ISA(AVX512F)},
		{"AVX512VNNI", HW_ISA(AVX512_VNNI)},
		{"AVX512BF16", HW_ISA(AVX512_BF16)},
		{"FMA", HW_ISA(FMA)},
		{"F16C", HW_ISA(F16C)},
	};
	size_t i = 0;

	while (i < v.len) {
		size_t start;
		while (i < v.len && (v.p[i] == ' ' || v.p[i] == '\t'))
			i++;
		start = i;
		while (i < v.len && v.p[i] != ' ' && v.p[i] != '\t')
			i++;
		for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++)
			if (rf_span_eq((struct rf_span){v.p + start, i - start}, words[k].word))
				*isa |= words[k].bit;
	}
}

/* Reads "M3 Max" out of "Apple M3 Max": the generation is 'M' and one or two digits; the tier
 * is the word that follows when it is one Apple uses. */
static void brand_chip(const char *brand, char *gen, size_t gencap, char *tier, size_t tiercap)
{
	static const char *const tiers[] = {"Pro", "Max", "Ultra"};
	const char *p;
	size_t n = 1;

	if (strncmp(brand, "Apple M", 7) != 0)
		return;
	p = brand + 6;
	while (n < 3 && p[n] >= '0' && p[n] <= '9')
		n++;
	if (n == 1 || (p[n] != '\0' && p[n] != ' '))
		return;
	rf_span_copy((struct rf_span){p, n}, gen, gencap);
	if (p[n] == ' ')
		for (size_t k = 0; k < sizeof(tiers) / sizeof(tiers[0]); k++)
			if (strcmp(p + n + 1, tiers[k]) == 0)
				hw_strlcpy(tier, tiers[k], tiercap);
}

static bool is_one(struct rf_span v)
{
	return rf_span_eq(v, "1");
}

/* The keys read as numbers or strings, and where they go. */
enum sysctl_kind {
	SK_INT,
	SK_I64,
	SK_STR
};

#define SK_(key, kind, field, max, scale)                                                          \
	{                                                                                          \
		key, kind, offsetof(struct hw_sysctl_info, field),                                 \
			sizeof(((struct hw_sysctl_info *)0)->field), max, scale                    \
	}

static const struct {
	const char *key;
	enum sysctl_kind kind;
	size_t off;
	size_t size;
	uint64_t max;
	uint64_t scale;
} sysctl_keys[] = {
	SK_("hw.memsize", SK_I64, memsize, HW_SYSCTL_MEM_MAX, 1),
	SK_("hw.pagesize", SK_I64, pagesize, UINT64_C(1) << 30, 1),
	SK_("iogpu.wired_limit_mb", SK_I64, wired_limit_mb, WIRED_LIMIT_MB_MAX, 1),
	SK_("debug.iogpu.wired_limit", SK_I64, wired_limit_debug, HW_SYSCTL_MEM_MAX, 1),
	SK_("hw.ncpu", SK_INT, ncpu, HW_SYSCTL_CPU_MAX, 1),
	SK_("hw.physicalcpu", SK_INT, physicalcpu, HW_SYSCTL_CPU_MAX, 1),
	SK_("hw.logicalcpu", SK_INT, logicalcpu, HW_SYSCTL_CPU_MAX, 1),
	SK_("hw.packages", SK_INT, packages, 1024, 1),
	SK_("hw.nperflevels", SK_INT, nperflevels, 16, 1),
	SK_("hw.perflevel0.physicalcpu", SK_INT, perf_physicalcpu[0], HW_SYSCTL_CPU_MAX, 1),
	SK_("hw.perflevel1.physicalcpu", SK_INT, perf_physicalcpu[1], HW_SYSCTL_CPU_MAX, 1),
	SK_("machdep.cpu.core_count", SK_INT, core_count, HW_SYSCTL_CPU_MAX, 1),
	SK_("machdep.cpu.thread_count", SK_INT, thread_count, HW_SYSCTL_CPU_MAX, 1),
	SK_("hw.perflevel0.name", SK_STR, perf_name[0], 0, 0),
	SK_("hw.perflevel1.name", SK_STR, perf_name[1], 0, 0),
	SK_("machdep.cpu.brand_string", SK_STR, brand, 0, 0),
	SK_("machdep.cpu.vendor", SK_STR, cpu_vendor, 0, 0),
	SK_("kern.ostype", SK_STR, ostype, 0, 0),
	SK_("kern.osrelease", SK_STR, osrelease, 0, 0),
};

/* ISA flags: "1" sets the bit. */
static const struct {
	const char *key;
	uint32_t bit;
} sysctl_flags[] = {
	{"hw.optional.neon", HW_ISA(NEON)},
	{"hw.optional.AdvSIMD", HW_ISA(NEON)},
	{"hw.optional.arm.AdvSIMD", HW_ISA(NEON)},
	{"hw.optional.arm.FEAT_DotProd", HW_ISA(DOTPROD)},
	{"hw.optional.arm.FEAT_I8MM", HW_ISA(I8MM)},
	{"hw.optional.arm.FEAT_BF16", HW_ISA(BF16)},
	{"hw.optional.avx1_0", HW_ISA(AVX)},
	{"hw.optional.avx2_0", HW_ISA(AVX2)},
	{"hw.optional.avx512f", HW_ISA(AVX512F)},
	{"hw.optional.avx512vnni", HW_ISA(AVX512_VNNI)},
	{"hw.optional.fma", HW_ISA(FMA)},
};

/* Stores one value; the first valid occurrence of a key wins. */
static void store(struct hw_sysctl_info *in, size_t i, struct rf_span v)
{
	char *dst = (char *)in + sysctl_keys[i].off;
	uint64_t x;

	switch (sysctl_keys[i].kind) {
	case SK_INT: {
		int *d = (int *)(void *)dst;
		if (*d == HW_UNKNOWN && rf_parse_u64(v.p, v.len, sysctl_keys[i].max, &x) == 0)
			*d = (int)x;
		break;
	}
	case SK_I64: {
		int64_t *d = (int64_t *)(void *)dst;
		if (*d == HW_UNKNOWN && rf_parse_u64(v.p, v.len, sysctl_keys[i].max, &x) == 0)
			*d = (int64_t)(x * sysctl_keys[i].scale);
		break;
	}
	case SK_STR:
		if (!dst[0] && v.len > 0)
			rf_span_copy(v, dst, sysctl_keys[i].size);
		break;
	}
}

/* Applies one key/value pair to info; returns true when the key is one we use. */
static bool apply_kv(struct hw_sysctl_info *in, struct rf_span k, struct rf_span v)
{
	for (size_t i = 0; i < sizeof(sysctl_keys) / sizeof(sysctl_keys[0]); i++) {
		if (rf_span_eq(k, sysctl_keys[i].key)) {
			store(in, i, v);
			return true;
		}
	}
	if (rf_span_eq(k, "machdep.cpu.features") || rf_span_eq(k, "machdep.cpu.leaf7_features")) {
		features_isa(v, &in->isa);
		return true;
	}
	if (rf_span_eq(k, "hw.optional.arm64")) {
		if (is_one(v))
			in->arm64 = true;
		return true;
	}
	for (size_t i = 0; i < sizeof(sysctl_flags) / sizeof(sysctl_flags[0]); i++) {
		if (rf_span_eq(k, sysctl_flags[i].key)) {
			if (is_one(v))
				in->isa |= sysctl_flags[i].bit;
			return true;
		}
	}
	return false;
}

int hw_parse_sysctl(const char *text, size_t len, struct hw_sysctl_info *info)
{
	struct hw_sysctl_info tmp;
	struct rf_lines it;
	struct rf_span line, k, v;
	bool found = false;

	hw_sysctl_info_init(&tmp);
	rf_lines_init(&it, text, text ? len : 0);
	while (rf_lines_next(&it, &line))
		if (sysctl_kv(line, &k, &v) && apply_kv(&tmp, k, v))
			found = true;
	if (!found)
		return RF_E_PARSE;
	if (tmp.arm64)
		tmp.isa |= HW_ISA(NEON); /* Advanced SIMD is mandatory in AArch64. */
	brand_chip(tmp.brand, tmp.chip_generation, sizeof(tmp.chip_generation), tmp.chip_tier,
		   sizeof(tmp.chip_tier));
	*info = tmp;
	return 0;
}

int64_t hw_sysctl_wired_limit(const struct hw_sysctl_info *in)
{
	if (in->wired_limit_mb >= 0)
		return in->wired_limit_mb << 20;
	return in->wired_limit_debug > 0 ? in->wired_limit_debug : 0;
}

bool hw_sysctl_is_apple_silicon(const struct hw_sysctl_info *in)
{
	return in->arm64 || strncmp(in->brand, "Apple", 5) == 0;
}

int64_t hw_apple_gpu_working_set(int64_t memsize, int64_t pagesize, int64_t wired_limit)
{
	if (memsize <= 0)
		return HW_UNKNOWN;
	if (wired_limit > 0)
		return wired_limit < memsize ? wired_limit : memsize;
	if (pagesize <= 0)
		pagesize = APPLE_PAGE_DEFAULT;
	if (memsize <= 32 * GIB)
		return (memsize * 2 / 3 / pagesize + 1) * pagesize;
	return memsize * 3 / 4;
}

void hw_sysctl_fill_host(const struct hw_sysctl_info *in, struct hw_snapshot *s)
{
	bool apple = hw_sysctl_is_apple_silicon(in);
	const char *arch = in->arm64 ? "arm64" : "";

	if (!s->host.os[0] && in->ostype[0])
		hw_strlcpy(s->host.os, in->ostype, sizeof(s->host.os));
	if (!s->host.kernel[0] && in->osrelease[0])
		hw_strlcpy(s->host.kernel, in->osrelease, sizeof(s->host.kernel));
	if (!s->host.arch[0] && arch[0])
		hw_strlcpy(s->host.arch, arch, sizeof(s->host.arch));
	if (apple && !s->host.soc[0] && in->chip_generation[0])
		hw_strlcpy(s->host.soc, in->brand, sizeof(s->host.soc));

	if (s->cpu.logical_cores < 0) {
		struct hw_cpu *c = &s->cpu;
		int logical = in->logicalcpu >= 0   ? in->logicalcpu :
			      in->thread_count >= 0 ? in->thread_count :
						      in->ncpu;
		int physical = in->physicalcpu >= 0 ? in->physicalcpu : in->core_count;
		if (in->brand[0])
			hw_strlcpy(c->model, in->brand, sizeof(c->model));
		if (in->cpu_vendor[0])
			hw_strlcpy(c->vendor, in->cpu_vendor, sizeof(c->vendor));
		else if (apple)
			hw_strlcpy(c->vendor, "Apple", sizeof(c->vendor));
		if (!c->arch[0] && arch[0])
			hw_strlcpy(c->arch, arch, sizeof(c->arch));
		c->logical_cores = logical;
		c->physical_cores = physical;
		if (in->packages > 0) {
			c->sockets = in->packages;
			c->numa_nodes = in->packages;
		}
		/* perflevel0 is the fastest cluster; with two levels the second is efficiency. */
		if (in->perf_physicalcpu[0] >= 0 && in->perf_physicalcpu[1] >= 0 &&
		    in->nperflevels != 1) {
			c->performance_cores = in->perf_physicalcpu[0];
			c->efficiency_cores = in->perf_physicalcpu[1];
		}
		c->isa |= in->isa;
		if (logical >= 0)
			hw_strlcpy(s->sources.cpu, "sysctl", sizeof(s->sources.cpu));
		if (physical < 0)
			hw_warn(s, "cpu: sysctl output has no physical core count");
	}
	if (s->memory.total_bytes < 0 && in->memsize >= 0) {
		s->memory.total_bytes = in->memsize;
		s->memory.available_bytes = HW_UNKNOWN;
		hw_strlcpy(s->sources.memory, "sysctl", sizeof(s->sources.memory));
		hw_warn(s, "memory: sysctl does not report available memory");
	}
}

void hw_sysctl_fill_gpu(const struct hw_sysctl_info *in, struct hw_snapshot *s, struct hw_gpu *g)
{
	hw_strlcpy(g->vendor, "apple", sizeof(g->vendor));
	if (in->chip_generation[0]) {
		snprintf(g->name, sizeof(g->name), "%.*s GPU", (int)(sizeof(g->name) - 5),
			 in->brand);
	} else {
		hw_strlcpy(g->name, "Apple GPU", sizeof(g->name));
		hw_warn(s, "gpu: the CPU brand (\"%s\") names no Apple chip", in->brand);
	}
	g->unified_memory = true;
	g->memory_total_bytes =
		hw_apple_gpu_working_set(in->memsize, in->pagesize, hw_sysctl_wired_limit(in));
	if (g->memory_total_bytes < 0)
		hw_warn(s, "gpu: hw.memsize missing, so the GPU's share of memory is unknown");
}
