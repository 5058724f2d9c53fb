/*
 * CPU topology: cpulist and one-number parsing, ARM core names, and the counting rules that
 * hw_parse_topology.h states. Pure: the probe reads the files, this file only counts. Work is
 * bounded by HW_TOPO_MAX_CPUS; the only sort is of at most that many keys.
 */
#include "core/hw/hw_parse_topology.h"

#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/numparse.h"
#include "core/text.h"

/* A cpulist number above this is junk, not a CPU. */
#define CPULIST_MAX_NUMBER (UINT64_C(1) << 31)
/* The widest range walked; a wider one ("0-2147483647") is capped to the limit anyway, but
 * walking it bit by bit would be slow, so it is clipped before the walk. */
#define CPULIST_MAX_SPAN (1u << 20)
#define TOPO_MAX_CLASSES 16

void hw_cpuset_clear(struct hw_cpuset *s)
{
	memset(s, 0, sizeof(*s));
}

void hw_cpuset_add(struct hw_cpuset *s, unsigned cpu)
{
	if (cpu >= HW_TOPO_MAX_CPUS) {
		s->truncated = true;
		return;
	}
	s->bits[cpu / 64] |= UINT64_C(1) << (cpu % 64);
}

bool hw_cpuset_has(const struct hw_cpuset *s, unsigned cpu)
{
	return cpu < HW_TOPO_MAX_CPUS && (s->bits[cpu / 64] >> (cpu % 64)) & 1u;
}

int hw_cpuset_count(const struct hw_cpuset *s)
{
	int n = 0;

	for (size_t i = 0; i < HW_TOPO_MAX_CPUS / 64; i++) {
		uint64_t w = s->bits[i];
		while (w) {
			w &= w - 1;
			n++;
		}
	}
	return n;
}

int hw_cpuset_next(const struct hw_cpuset *s, unsigned from)
{
	for (unsigned c = from; c < HW_TOPO_MAX_CPUS; c++) {
		uint64_t w = s->bits[c / 64] >> (c % 64);
		if (!w) {
			c = (c / 64) * 64 + 63;
			continue;
		}
		while (!(w & 1u)) {
			w >>= 1;
			c++;
		}
		return (int)c;
	}
	return -1;
}

void hw_topology_init(struct hw_topology *t)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < HW_TOPO_MAX_CPUS; i++) {
		struct hw_topo_cpu *c = &t->cpu[i];
		c->package = c->die = c->core = c->cluster = HW_UNKNOWN;
		c->first_sibling = c->capacity = c->implementer = c->part = HW_UNKNOWN;
		c->kind = HW_CORE_KIND_UNKNOWN;
	}
}

int hw_parse_cpulist(const char *text, size_t len, unsigned limit, struct hw_cpuset *out)
{
	struct hw_cpuset set;
	struct rf_span all = rf_span_trim((struct rf_span){text, text ? len : 0});
	size_t i = 0;

	if (limit > HW_TOPO_MAX_CPUS)
		limit = HW_TOPO_MAX_CPUS;
	hw_cpuset_clear(&set);
	while (i < all.len) {
		size_t start = i, dash = 0;
		uint64_t lo, hi;

		while (i < all.len && all.p[i] != ',') {
			if (all.p[i] == '-' && !dash)
				dash = i;
			i++;
		}
		/* [start, i) is one item: "N" or "N-M". */
		if (dash) {
			if (rf_parse_u64(all.p + start, dash - start, CPULIST_MAX_NUMBER, &lo) <
				    0 ||
			    rf_parse_u64(all.p + dash + 1, i - dash - 1, CPULIST_MAX_NUMBER, &hi) <
				    0)
				return RF_E_PARSE;
		} else {
			if (rf_parse_u64(all.p + start, i - start, CPULIST_MAX_NUMBER, &lo) < 0)
				return RF_E_PARSE;
			hi = lo;
		}
		if (hi < lo)
			return RF_E_PARSE;
		if (hi >= limit) {
			set.truncated = true;
			if (lo >= limit)
				hi = lo; /* nothing of it is kept: add nothing below */
			else
				hi = limit - 1;
		}
		if (hi - lo > CPULIST_MAX_SPAN)
			hi = lo + CPULIST_MAX_SPAN;
		if (lo < limit)
			for (uint64_t c = lo; c <= hi; c++)
				hw_cpuset_add(&set, (unsigned)c);
		if (i < all.len) {
			i++; /* the comma */
			if (i == all.len)
				return RF_E_PARSE; /* "0-3," */
		}
	}
	*out = set;
	return 0;
}

int hw_parse_topology_id(const char *text, size_t len, int32_t *out)
{
	struct rf_span v = rf_span_trim((struct rf_span){text, text ? len : 0});
	uint64_t n;
	int rc;

	if (rf_span_eq(v, "-1")) {
		*out = HW_UNKNOWN;
		return 0;
	}
	rc = rf_parse_u64(v.p, v.len, INT32_MAX, &n);
	if (rc < 0)
		return rc;
	*out = (int32_t)n;
	return 0;
}

void hw_topology_add_siblings(struct hw_topology *t, unsigned cpu, const struct hw_cpuset *siblings)
{
	int first = (int)cpu;

	if (cpu >= HW_TOPO_MAX_CPUS)
		return;
	for (int c = hw_cpuset_next(siblings, 0); c >= 0 && c < first;
	     c = hw_cpuset_next(siblings, (unsigned)c + 1))
		if (hw_cpuset_has(&t->online, (unsigned)c)) {
			first = c;
			break;
		}
	if (t->cpu[cpu].first_sibling < 0)
		t->cpu[cpu].first_sibling = first;
	for (int c = hw_cpuset_next(siblings, 0); c >= 0;
	     c = hw_cpuset_next(siblings, (unsigned)c + 1))
		if (hw_cpuset_has(&t->online, (unsigned)c) && t->cpu[c].first_sibling < 0)
			t->cpu[c].first_sibling = first;
}

void hw_topology_set_kind(struct hw_topology *t, const struct hw_cpuset *set,
			  enum hw_core_kind kind)
{
	for (int c = hw_cpuset_next(set, 0); c >= 0; c = hw_cpuset_next(set, (unsigned)c + 1))
		t->cpu[c].kind = (int8_t)kind;
}

/* Parses "0x41" (hex, as cpuinfo prints implementer and part). Returns -1 on junk. */
static int32_t cpuinfo_hex(struct rf_span v)
{
	int32_t n = 0;

	if (v.len < 3 || v.len > 10 || v.p[0] != '0' || (v.p[1] != 'x' && v.p[1] != 'X'))
		return -1;
	for (size_t i = 2; i < v.len; i++) {
		char c = v.p[i];
		int d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		if (n > (INT32_MAX >> 4))
			return -1;
		n = n * 16 + d;
	}
	return n;
}

int hw_parse_cpuinfo_arm_parts(const char *text, size_t len, struct hw_topology *t)
{
	struct rf_lines it;
	struct rf_span line, key, val;
	long cur = -1;
	int found = 0;

	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		if (!rf_split_kv(line, &key, &val))
			continue;
		if (rf_span_eq(key, "processor")) {
			uint64_t n;
			cur = rf_parse_u64(val.p, val.len, HW_TOPO_MAX_CPUS - 1, &n) == 0 ?
				      (long)n :
				      -1;
		} else if (cur >= 0 && rf_span_eq(key, "CPU implementer")) {
			t->cpu[cur].implementer = cpuinfo_hex(val);
		} else if (cur >= 0 && rf_span_eq(key, "CPU part")) {
			int32_t part = cpuinfo_hex(val);
			if (part >= 0 && t->cpu[cur].part < 0)
				found++;
			t->cpu[cur].part = part;
		}
	}
	return found;
}

/* Returns true when the space-separated list holds the word. */
static bool words_have(struct rf_span list, const char *word)
{
	size_t i = 0;

	while (i < list.len) {
		size_t s;
		while (i < list.len && (list.p[i] == ' ' || list.p[i] == '\t'))
			i++;
		s = i;
		while (i < list.len && list.p[i] != ' ' && list.p[i] != '\t')
			i++;
		if (i > s && rf_span_eq((struct rf_span){list.p + s, i - s}, word))
			return true;
	}
	return false;
}

const char *hw_parse_cpuinfo_arch(const char *text, size_t len)
{
	struct rf_lines it;
	struct rf_span line, key, val;
	bool x86 = false, lm = false, arm = false, asimd = false, v7 = false;

	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		if (!rf_split_kv(line, &key, &val))
			continue;
		if (rf_span_eq(key, "vendor_id")) {
			x86 = true;
		} else if (rf_span_eq(key, "flags")) {
			lm = lm || words_have(val, "lm");
		} else if (rf_span_eq(key, "CPU implementer")) {
			arm = true;
		} else if (rf_span_eq(key, "Features")) {
			asimd = asimd || words_have(val, "asimd");
		} else if (rf_span_eq(key, "CPU architecture")) {
			arm = true;
			v7 = v7 || rf_span_eq(val, "7");
		}
	}
	if (x86)
		return lm ? "x86_64" : "i686";
	if (arm && asimd)
		return "aarch64";
	if (arm && v7)
		return "armv7l";
	return NULL;
}

/* ARM core names, after util-linux's lscpu-arm.c and Linux's arch/arm64 cputype.h, limited
 * to application cores. `little` marks the small in-order designs that big.LITTLE systems
 * pair with bigger cores: they are the efficiency cores of the rule in the header. */
static const struct arm_part {
	int16_t implementer;
	int16_t part;
	bool little;
	const char *name;
} arm_parts[] = {
	{0x41, 0xc05, true, "Cortex-A5"},
	{0x41, 0xc07, true, "Cortex-A7"},
	{0x41, 0xc08, false, "Cortex-A8"},
	{0x41, 0xc09, false, "Cortex-A9"},
	{0x41, 0xc0d, false, "Cortex-A17"},
	{0x41, 0xc0e, false, "Cortex-A17"},
	{0x41, 0xc0f, false, "Cortex-A15"},
	{0x41, 0xd01, true, "Cortex-A32"},
	{0x41, 0xd02, true, "Cortex-A34"},
	{0x41, 0xd03, true, "Cortex-A53"},
	{0x41, 0xd04, true, "Cortex-A35"},
	{0x41, 0xd05, true, "Cortex-A55"},
	{0x41, 0xd06, false, "Cortex-A65"},
	{0x41, 0xd07, false, "Cortex-A57"},
	{0x41, 0xd08, false, "Cortex-A72"},
	{0x41, 0xd09, false, "Cortex-A73"},
	{0x41, 0xd0a, false, "Cortex-A75"},
	{0x41, 0xd0b, false, "Cortex-A76"},
	{0x41, 0xd0c, false, "Neoverse-N1"},
	{0x41, 0xd0d, false, "Cortex-A77"},
	{0x41, 0xd0e, false, "Cortex-A76AE"},
	{0x41, 0xd40, false, "Neoverse-V1"},
	{0x41, 0xd41, false, "Cortex-A78"},
	{0x41, 0xd42, false, "Cortex-A78AE"},
	{0x41, 0xd43, false, "Cortex-A65AE"},
	{0x41, 0xd44, false, "Cortex-X1"},
	{0x41, 0xd46, true, "Cortex-A510"},
	{0x41, 0xd47, false, "Cortex-A710"},
	{0x41, 0xd48, false, "Cortex-X2"},
	{0x41, 0xd49, false, "Neoverse-N2"},
	{0x41, 0xd4a, false, "Neoverse-E1"},
	{0x41, 0xd4b, false, "Cortex-A78C"},
	{0x41, 0xd4c, false, "Cortex-X1C"},
	{0x41, 0xd4d, false, "Cortex-A715"},
	{0x41, 0xd4e, false, "Cortex-X3"},
	{0x41, 0xd4f, false, "Neoverse-V2"},
	{0x41, 0xd80, true, "Cortex-A520"},
	{0x41, 0xd81, false, "Cortex-A720"},
	{0x41, 0xd82, false, "Cortex-X4"},
	{0x41, 0xd83, false, "Neoverse-V3AE"},
	{0x41, 0xd84, false, "Neoverse-V3"},
	{0x41, 0xd85, false, "Cortex-X925"},
	{0x41, 0xd87, false, "Cortex-A725"},
	{0x41, 0xd8e, false, "Neoverse-N3"},
	{0x42, 0x100, false, "Brahma-B53"},
	{0x42, 0x516, false, "ThunderX2"},
	{0x43, 0x0a0, false, "ThunderX"},
	{0x43, 0x0a1, false, "ThunderX-88XX"},
	{0x43, 0x0a2, false, "ThunderX-81XX"},
	{0x43, 0x0a3, false, "ThunderX-83XX"},
	{0x43, 0x0af, false, "ThunderX2-99xx"},
	{0x43, 0x0b8, false, "ThunderX3-T110"},
	{0x46, 0x001, false, "A64FX"},
	{0x48, 0xd01, false, "Kunpeng-920"},
	{0x4e, 0x000, false, "Denver"},
	{0x4e, 0x003, false, "Denver 2"},
	{0x4e, 0x004, false, "Carmel"},
	{0x50, 0x000, false, "X-Gene"},
	{0x51, 0x800, false, "Falkor-V1/Kryo"},
	{0x51, 0x801, true, "Kryo-V2"},
	{0x51, 0x802, false, "Kryo-3XX-Gold"},
	{0x51, 0x803, true, "Kryo-3XX-Silver"},
	{0x51, 0x804, false, "Kryo-4XX-Gold"},
	{0x51, 0x805, true, "Kryo-4XX-Silver"},
	{0x51, 0xc00, false, "Falkor"},
	{0x61, 0x022, true, "Icestorm-M1"},
	{0x61, 0x023, false, "Firestorm-M1"},
	{0x61, 0x024, true, "Icestorm-M1-Pro"},
	{0x61, 0x025, false, "Firestorm-M1-Pro"},
	{0x61, 0x028, true, "Icestorm-M1-Max"},
	{0x61, 0x029, false, "Firestorm-M1-Max"},
	{0x61, 0x032, true, "Blizzard-M2"},
	{0x61, 0x033, false, "Avalanche-M2"},
	{0xc0, 0xac3, false, "Ampere-1"},
	{0xc0, 0xac4, false, "Ampere-1a"},
};

static const struct {
	int implementer;
	const char *name;
} arm_implementers[] = {
	{0x41, "ARM"},       {0x42, "Broadcom"}, {0x43, "Cavium"}, {0x46, "Fujitsu"},
	{0x48, "HiSilicon"}, {0x4e, "NVIDIA"},   {0x50, "APM"},    {0x51, "Qualcomm"},
	{0x53, "Samsung"},   {0x56, "Marvell"},  {0x61, "Apple"},  {0x69, "Intel"},
	{0x6d, "Microsoft"}, {0x70, "Phytium"},  {0xc0, "Ampere"},
};

static const struct arm_part *arm_part_find(int implementer, int part)
{
	for (size_t i = 0; i < sizeof(arm_parts) / sizeof(arm_parts[0]); i++)
		if (arm_parts[i].implementer == implementer && arm_parts[i].part == part)
			return &arm_parts[i];
	return NULL;
}

const char *hw_arm_part_name(int implementer, int part)
{
	const struct arm_part *p = arm_part_find(implementer, part);
	return p ? p->name : NULL;
}

const char *hw_arm_implementer_name(int implementer)
{
	for (size_t i = 0; i < sizeof(arm_implementers) / sizeof(arm_implementers[0]); i++)
		if (arm_implementers[i].implementer == implementer)
			return arm_implementers[i].name;
	return NULL;
}

void hw_topology_arm_names(const struct hw_topology *t, char *model, size_t model_len, char *vendor,
			   size_t vendor_len)
{
	const char *seen[TOPO_MAX_CLASSES];
	int n_seen = 0;
	char buf[HW_NAME_LEN] = "";
	size_t used = 0;
	const char *vend = NULL;
	bool any_online = hw_cpuset_count(&t->online) > 0;

	for (int c = 0; c < HW_TOPO_MAX_CPUS; c++) {
		const char *name;
		bool dup = false;
		size_t n;

		if (any_online ? !hw_cpuset_has(&t->online, (unsigned)c) : t->cpu[c].part < 0)
			continue;
		name = hw_arm_part_name(t->cpu[c].implementer, t->cpu[c].part);
		if (!vend && t->cpu[c].implementer >= 0)
			vend = hw_arm_implementer_name(t->cpu[c].implementer);
		if (!name)
			continue;
		for (int i = 0; i < n_seen; i++)
			if (seen[i] == name)
				dup = true;
		if (dup || n_seen == TOPO_MAX_CLASSES)
			continue;
		seen[n_seen++] = name;
		n = strlen(name);
		if (used + (used ? 3 : 0) + n + 1 > sizeof(buf))
			break;
		if (used) {
			memcpy(buf + used, " + ", 3);
			used += 3;
		}
		memcpy(buf + used, name, n + 1);
		used += n;
	}
	if (used && model && model_len)
		hw_strlcpy(model, buf, model_len);
	if (vend && vendor && vendor_len)
		hw_strlcpy(vendor, vend, vendor_len);
}

/* A field of CPU c, inherited from its first sibling when c's own file was not read (the
 * probe reads package, cluster and capacity once per core: threads of a core share them). */
#define TOPO_INHERITED(t, c, field)                                                                \
	((t)->cpu[c].field >= 0 || (t)->cpu[c].first_sibling < 0 ||                                \
			 (t)->cpu[c].first_sibling >= HW_TOPO_MAX_CPUS ?                           \
		 (t)->cpu[c].field :                                                               \
		 (t)->cpu[(t)->cpu[c].first_sibling].field)

static int32_t topo_package(const struct hw_topology *t, int c)
{
	return TOPO_INHERITED(t, c, package);
}

static int32_t topo_capacity(const struct hw_topology *t, int c)
{
	return TOPO_INHERITED(t, c, capacity);
}

static int32_t topo_cluster(const struct hw_topology *t, int c)
{
	return TOPO_INHERITED(t, c, cluster);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Returns how many distinct values keys[0..n) holds (sorting them). */
static int count_distinct(uint64_t *keys, int n)
{
	int d = 0;

	qsort(keys, (size_t)n, sizeof(keys[0]), cmp_u64);
	for (int i = 0; i < n; i++)
		if (i == 0 || keys[i] != keys[i - 1])
			d++;
	return d;
}

/* Sort key of a (package, die, core) triple, with the CPU number in the low 12 bits so that
 * the first entry of each group after sorting is its lowest CPU. Returns false when a value
 * does not fit its field (then cores are not counted this way). */
static bool topo_core_key(const struct hw_topology *t, int c, uint64_t *key)
{
	int32_t pkg = topo_package(t, c), die = t->cpu[c].die, core = t->cpu[c].core;

	if (pkg < 0 || core < 0 || pkg > 0xfffff || core > 0x7fffff || die > 0xff)
		return false;
	*key = ((uint64_t)pkg << 43 | (uint64_t)(die < 0 ? 0 : die) << 35 | (uint64_t)core << 12 |
		(uint64_t)c);
	return true;
}

/* The CPUs that stand for one core each: the first sibling of every CPU a thread_siblings_list
 * covered, and the lowest CPU of each (package, die, core) triple among the others (a junk or
 * missing list). Returns false when some core cannot be told apart. */
static bool topo_core_reps(const struct hw_topology *t, struct hw_cpuset *reps, uint64_t *keys)
{
	int n = 0;

	hw_cpuset_clear(reps);
	for (int c = hw_cpuset_next(&t->online, 0); c >= 0;
	     c = hw_cpuset_next(&t->online, (unsigned)c + 1)) {
		int32_t f = t->cpu[c].first_sibling;
		if (f >= 0 && hw_cpuset_has(&t->online, (unsigned)f))
			hw_cpuset_add(reps, (unsigned)f);
		else if (!topo_core_key(t, c, &keys[n++]))
			return false;
	}
	qsort(keys, (size_t)n, sizeof(keys[0]), cmp_u64);
	for (int i = 0; i < n; i++)
		if (i == 0 || keys[i] >> 12 != keys[i - 1] >> 12)
			hw_cpuset_add(reps, (unsigned)(keys[i] & 0xfffu));
	return true;
}

/* ARM: efficiency = lowest cpu_capacity when capacities differ, else little parts when parts
 * differ. Writes perf/eff; returns false when no ranking applies. */
static bool topo_arm_kinds(const struct hw_topology *t, const struct hw_cpuset *reps, int *perf,
			   int *eff, bool *unranked)
{
	int32_t min_cap = INT32_MAX;
	bool caps_known = true, caps_differ = false, parts_known = true, parts_differ = false;
	bool any_little = false, any_big = false;
	int32_t cap0 = HW_UNKNOWN, impl0 = HW_UNKNOWN, part0 = HW_UNKNOWN;

	for (int c = hw_cpuset_next(reps, 0); c >= 0; c = hw_cpuset_next(reps, (unsigned)c + 1)) {
		int32_t cap = topo_capacity(t, c);
		const struct arm_part *p = arm_part_find(t->cpu[c].implementer, t->cpu[c].part);

		if (cap < 0)
			caps_known = false;
		else if (cap0 < 0)
			cap0 = cap;
		else if (cap != cap0)
			caps_differ = true;
		if (cap >= 0 && cap < min_cap)
			min_cap = cap;
		if (t->cpu[c].part < 0 || t->cpu[c].implementer < 0) {
			parts_known = false;
		} else if (part0 < 0) {
			part0 = t->cpu[c].part;
			impl0 = t->cpu[c].implementer;
		} else if (t->cpu[c].part != part0 || t->cpu[c].implementer != impl0) {
			parts_differ = true;
		}
		if (p && p->little)
			any_little = true;
		else
			any_big = true;
	}
	*perf = *eff = 0;
	if (caps_known && caps_differ) {
		for (int c = hw_cpuset_next(reps, 0); c >= 0;
		     c = hw_cpuset_next(reps, (unsigned)c + 1))
			(*(topo_capacity(t, c) == min_cap ? eff : perf))++;
		return true;
	}
	if (!parts_known || !parts_differ)
		return false;
	if (!any_little || !any_big) {
		*unranked = true;
		return false;
	}
	for (int c = hw_cpuset_next(reps, 0); c >= 0; c = hw_cpuset_next(reps, (unsigned)c + 1)) {
		const struct arm_part *p = arm_part_find(t->cpu[c].implementer, t->cpu[c].part);
		(*(p && p->little ? eff : perf))++;
	}
	return true;
}

int hw_topology_summarize(const struct hw_topology *t, struct hw_topology_summary *out)
{
	struct hw_topology_summary r = {HW_UNKNOWN, HW_UNKNOWN, HW_UNKNOWN, 0, 0, false, false};
	struct hw_cpuset *reps;
	uint64_t *keys;
	bool have_cores, pkgs_known = true, clusters_valid = true, any_kind = false;
	bool any_p = false, any_e = false;
	int n = 0;

	r.logical = hw_cpuset_count(&t->online);
	if (r.logical == 0)
		return RF_E_PARSE;
	reps = malloc(sizeof(*reps));
	keys = malloc(sizeof(*keys) * HW_TOPO_MAX_CPUS);
	if (!reps || !keys) {
		free(reps);
		free(keys);
		return RF_E_NOMEM;
	}

	have_cores = topo_core_reps(t, reps, keys);
	if (have_cores)
		r.physical = hw_cpuset_count(reps);

	for (int c = hw_cpuset_next(&t->online, 0); c >= 0;
	     c = hw_cpuset_next(&t->online, (unsigned)c + 1)) {
		int32_t p = topo_package(t, c);
		if (p < 0)
			pkgs_known = false;
		else
			keys[n++] = (uint64_t)p;
		if (topo_cluster(t, c) < 0)
			clusters_valid = false;
		if (t->cpu[c].kind == HW_CORE_KIND_PERFORMANCE)
			any_p = true;
		else if (t->cpu[c].kind == HW_CORE_KIND_EFFICIENCY)
			any_e = true;
		if (t->cpu[c].kind != HW_CORE_KIND_UNKNOWN)
			any_kind = true;
	}
	if (pkgs_known) {
		r.sockets = count_distinct(keys, n);
		if (t->arm && r.sockets > 1 && !t->acpi_pptt && !clusters_valid) {
			r.sockets = HW_UNKNOWN;
			r.sockets_are_clusters = true;
		}
	}

	if (any_kind) {
		/* Intel hybrid PMUs: both kinds present means a hybrid CPU. */
		if (any_p && any_e) {
			if (!have_cores) {
				r.performance = r.efficiency = HW_UNKNOWN;
			} else {
				for (int c = hw_cpuset_next(reps, 0); c >= 0;
				     c = hw_cpuset_next(reps, (unsigned)c + 1)) {
					if (t->cpu[c].kind == HW_CORE_KIND_PERFORMANCE)
						r.performance++;
					else if (t->cpu[c].kind == HW_CORE_KIND_EFFICIENCY)
						r.efficiency++;
				}
			}
		}
	} else if (t->arm) {
		int perf = 0, eff = 0;
		if (!have_cores) {
			/* Without SMT information a core cannot be told from a thread; ARM cores
			 * with SMT are rare but exist (Neoverse E1), so nothing is assumed. */
			struct hw_cpuset *all = reps;
			*all = t->online;
			if (topo_arm_kinds(t, all, &perf, &eff, &r.mixed_types_unranked))
				r.performance = r.efficiency = HW_UNKNOWN;
		} else if (topo_arm_kinds(t, reps, &perf, &eff, &r.mixed_types_unranked)) {
			r.performance = perf;
			r.efficiency = eff;
		}
	}
	free(reps);
	free(keys);
	*out = r;
	return 0;
}
