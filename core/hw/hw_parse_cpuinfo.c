/*
 * /proc/cpuinfo parser for x86 and ARM kernels. Blocks are separated by blank lines; keys are
 * split at the first ':' and trimmed, so files whose tabs became spaces parse the same.
 * Physical cores and sockets come from distinct ("physical id", "core id") pairs when the
 * kernel prints them (x86); sysfs topology is the better source and server/detect prefers it.
 */
#include <string.h>

#include "core/err.h"
#include "core/hw/hw_parse.h"
#include "core/numparse.h"
#include "core/text.h"

#define CPUINFO_MAX_PAIRS 4096
#define CPUINFO_MAX_ID 1000000

struct cpu_pair {
	unsigned pkg;
	unsigned core;
};

struct cpuinfo_state {
	struct cpu_pair pairs[CPUINFO_MAX_PAIRS];
	int n_pairs;
	bool pairs_overflow;
	unsigned pkgs[256];
	int n_pkgs;
	long cur_pkg;
	long cur_core;
};

/* Sets the ISA bits named in a space-separated flags/Features list. */
static uint32_t cpuinfo_isa(struct rf_span list)
{
	static const struct {
		const char *flag;
		uint32_t bit;
	} map[] = {
		{"avx", HW_ISA(AVX)},
		{"avx2", HW_ISA(AVX2)},
		{"avx512f", HW_ISA(AVX512F)},
		{"avx512_bf16", HW_ISA(AVX512_BF16)},
		{"avx512_vnni", HW_ISA(AVX512_VNNI)},
		{"amx_tile", HW_ISA(AMX)},
		{"f16c", HW_ISA(F16C)},
		{"fma", HW_ISA(FMA)},
		{"asimd", HW_ISA(NEON)},
		{"neon", HW_ISA(NEON)},
		{"sve", HW_ISA(SVE)},
		{"asimddp", HW_ISA(DOTPROD)},
		{"i8mm", HW_ISA(I8MM)},
		{"bf16", HW_ISA(BF16)},
	};
	uint32_t isa = 0;
	size_t i = 0;

	while (i < list.len) {
		struct rf_span w;
		while (i < list.len && list.p[i] == ' ')
			i++;
		w.p = list.p + i;
		while (i < list.len && list.p[i] != ' ')
			i++;
		w.len = (size_t)(list.p + i - w.p);
		for (size_t m = 0; m < sizeof(map) / sizeof(map[0]); m++)
			if (rf_span_eq(w, map[m].flag))
				isa |= map[m].bit;
	}
	return isa;
}

static void cpuinfo_end_block(struct cpuinfo_state *st)
{
	bool seen = false;

	if (st->cur_pkg < 0 || st->cur_core < 0)
		goto reset;
	for (int i = 0; i < st->n_pairs; i++)
		if (st->pairs[i].pkg == (unsigned)st->cur_pkg &&
		    st->pairs[i].core == (unsigned)st->cur_core)
			seen = true;
	if (!seen) {
		if (st->n_pairs < CPUINFO_MAX_PAIRS)
			st->pairs[st->n_pairs++] =
				(struct cpu_pair){(unsigned)st->cur_pkg, (unsigned)st->cur_core};
		else
			st->pairs_overflow = true;
	}
	seen = false;
	for (int i = 0; i < st->n_pkgs; i++)
		if (st->pkgs[i] == (unsigned)st->cur_pkg)
			seen = true;
	if (!seen && st->n_pkgs < (int)(sizeof(st->pkgs) / sizeof(st->pkgs[0])))
		st->pkgs[st->n_pkgs++] = (unsigned)st->cur_pkg;
reset:
	st->cur_pkg = -1;
	st->cur_core = -1;
}

static long cpuinfo_id(struct rf_span v)
{
	uint64_t id;
	return rf_parse_u64(v.p, v.len, CPUINFO_MAX_ID, &id) == 0 ? (long)id : -1;
}

int hw_parse_cpuinfo(const char *text, size_t len, struct hw_cpu *out)
{
	static const struct cpuinfo_state zero = {.cur_pkg = -1, .cur_core = -1};
	struct cpuinfo_state *st;
	struct rf_lines it;
	struct rf_span line, key, val;
	int processors = 0;
	char model[HW_NAME_LEN] = "", vendor[64] = "";
	uint32_t isa = 0;
	bool have_isa = false;

	/* The pair table is too large for a comfortable stack frame in a fuzzer. */
	static _Thread_local struct cpuinfo_state state;
	st = &state;
	*st = zero;

	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		if (rf_span_trim(line).len == 0) {
			cpuinfo_end_block(st);
			continue;
		}
		if (!rf_split_kv(line, &key, &val))
			continue;
		if (rf_span_eq(key, "processor")) {
			/* ARM kernels before 3.8 print "Processor : ARMv7 ..." as the model. */
			uint64_t n;
			if (rf_parse_u64(val.p, val.len, CPUINFO_MAX_ID, &n) == 0)
				processors++;
			else if (!model[0])
				rf_span_copy(val, model, sizeof(model));
		} else if (rf_span_eq(key, "Processor") && !model[0]) {
			rf_span_copy(val, model, sizeof(model));
		} else if ((rf_span_eq(key, "model name") || rf_span_eq(key, "Model") ||
			    rf_span_eq(key, "cpu model")) &&
			   val.len) {
			if (rf_span_eq(key, "model name") || !model[0])
				rf_span_copy(val, model, sizeof(model));
		} else if (rf_span_eq(key, "vendor_id") || rf_span_eq(key, "CPU implementer")) {
			if (!vendor[0])
				rf_span_copy(val, vendor, sizeof(vendor));
		} else if (rf_span_eq(key, "flags") || rf_span_eq(key, "Features")) {
			isa |= cpuinfo_isa(val);
			have_isa = true;
		} else if (rf_span_eq(key, "physical id")) {
			st->cur_pkg = cpuinfo_id(val);
		} else if (rf_span_eq(key, "core id")) {
			st->cur_core = cpuinfo_id(val);
		}
	}
	cpuinfo_end_block(st);
	if (processors == 0)
		return RF_E_PARSE;

	out->logical_cores = processors;
	if (st->n_pairs > 0 && !st->pairs_overflow) {
		out->physical_cores = st->n_pairs;
		out->sockets = st->n_pkgs;
	}
	if (model[0])
		memcpy(out->model, model, sizeof(model));
	if (vendor[0])
		memcpy(out->vendor, vendor, sizeof(vendor));
	if (have_isa)
		out->isa = isa;
	return 0;
}
