/*
 * DRM sysfs GPUs: amdgpu and KFD text parsers, the PCI-id name tables, and the rules that turn
 * one card into a struct hw_gpu (see hw_parse_amd.h). The tables name products; they never
 * carry a memory size, because a size read from a table would be a guess presented as a fact.
 */
#include "core/hw/hw_parse_amd.h"

#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/numparse.h"
#include "core/text.h"

#define KFD_VALUE_MAX (UINT64_C(1) << 62)

void hw_drm_card_init(struct hw_drm_card *c)
{
	memset(c, 0, sizeof(*c));
	c->render_minor = HW_UNKNOWN;
	c->vram_total = HW_UNKNOWN;
	c->vram_used = HW_UNKNOWN;
	c->gtt_total = HW_UNKNOWN;
	c->gtt_used = HW_UNKNOWN;
	c->local_mem_total = HW_UNKNOWN;
	c->max_memory_clock_mhz = HW_UNKNOWN;
}

void hw_kfd_node_init(struct hw_kfd_node *n)
{
	n->gfx_target_version = HW_UNKNOWN;
	n->cpu_cores_count = HW_UNKNOWN;
	n->simd_count = HW_UNKNOWN;
	n->vendor_id = HW_UNKNOWN;
	n->device_id = HW_UNKNOWN;
	n->location_id = HW_UNKNOWN;
	n->domain = HW_UNKNOWN;
	n->drm_render_minor = HW_UNKNOWN;
	n->num_xcc = HW_UNKNOWN;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses exactly s[0..len) as hex digits (no prefix) into a value at most max. */
static int parse_hex_span(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || len > 16)
		return len == 0 ? RF_E_PARSE : RF_E_RANGE;
	for (size_t i = 0; i < len; i++) {
		int d = hex_digit(s[i]);
		if (d < 0)
			return RF_E_PARSE;
		v = v << 4 | (uint64_t)d;
	}
	if (v > max)
		return RF_E_RANGE;
	*out = v;
	return 0;
}

int hw_parse_sysfs_hex(const char *text, size_t len, uint32_t max, uint32_t *out)
{
	struct rf_span v = rf_span_trim((struct rf_span){text, text ? len : 0});
	uint64_t x;
	int rc;

	if (v.len >= 2 && v.p[0] == '0' && (v.p[1] == 'x' || v.p[1] == 'X')) {
		v.p += 2;
		v.len -= 2;
	}
	rc = parse_hex_span(v.p, v.len, max, &x);
	if (rc < 0)
		return rc;
	*out = (uint32_t)x;
	return 0;
}

int hw_parse_sysfs_u64(const char *text, size_t len, uint64_t max, uint64_t *out)
{
	struct rf_span v = rf_span_trim((struct rf_span){text, text ? len : 0});

	return rf_parse_u64(v.p, v.len, max, out);
}

int hw_parse_drm_uevent(const char *text, size_t len, struct hw_drm_card *c)
{
	struct rf_lines it;
	struct rf_span line;
	char driver[sizeof(c->driver)] = "", slot[sizeof(c->pci_slot)] = "";
	uint32_t vendor = 0, device = 0;
	bool found = false;

	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		const char *eq = line.len ? memchr(line.p, '=', line.len) : NULL;
		struct rf_span key, val;
		if (!eq)
			continue;
		key = rf_span_trim((struct rf_span){line.p, (size_t)(eq - line.p)});
		val = rf_span_trim((struct rf_span){eq + 1, line.len - (size_t)(eq - line.p) - 1});
		if (rf_span_eq(key, "DRIVER") && val.len > 0) {
			rf_span_copy(val, driver, sizeof(driver));
			found = true;
		} else if (rf_span_eq(key, "PCI_SLOT_NAME") && val.len > 0 &&
			   val.len < sizeof(slot)) {
			rf_span_copy(val, slot, sizeof(slot));
			found = true;
		} else if (rf_span_eq(key, "PCI_ID")) {
			const char *colon = val.len ? memchr(val.p, ':', val.len) : NULL;
			uint64_t v, d;
			if (colon &&
			    parse_hex_span(val.p, (size_t)(colon - val.p), 0xffff, &v) == 0 &&
			    parse_hex_span(colon + 1, val.len - (size_t)(colon - val.p) - 1, 0xffff,
					   &d) == 0) {
				vendor = (uint32_t)v;
				device = (uint32_t)d;
				found = true;
			}
		}
	}
	if (!found)
		return RF_E_PARSE;
	if (driver[0])
		hw_strlcpy(c->driver, driver, sizeof(c->driver));
	if (slot[0])
		hw_strlcpy(c->pci_slot, slot, sizeof(c->pci_slot));
	if (vendor && !c->vendor_id)
		c->vendor_id = vendor;
	if (device && !c->device_id)
		c->device_id = device;
	return 0;
}

int hw_parse_amd_dpm_max_mhz(const char *text, size_t len)
{
	struct rf_lines it;
	struct rf_span line, key, val;
	int best = RF_E_PARSE;

	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		uint64_t mhz;
		size_t n = 0;
		if (!rf_split_kv(line, &key, &val))
			continue;
		while (n < val.len && val.p[n] >= '0' && val.p[n] <= '9')
			n++;
		/* The unit follows the digits: "852Mhz", "900MHz". */
		if (n == 0 || val.len - n < 3 || (val.p[n] != 'M' && val.p[n] != 'm') ||
		    (val.p[n + 1] != 'h' && val.p[n + 1] != 'H') ||
		    (val.p[n + 2] != 'z' && val.p[n + 2] != 'Z'))
			continue;
		if (rf_parse_u64(val.p, n, 100000, &mhz) < 0)
			continue;
		if ((int)mhz > best)
			best = (int)mhz;
	}
	return best;
}

int hw_parse_kfd_properties(const char *text, size_t len, struct hw_kfd_node *n)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
		{"gfx_target_version", offsetof(struct hw_kfd_node, gfx_target_version)},
		{"cpu_cores_count", offsetof(struct hw_kfd_node, cpu_cores_count)},
		{"simd_count", offsetof(struct hw_kfd_node, simd_count)},
		{"vendor_id", offsetof(struct hw_kfd_node, vendor_id)},
		{"device_id", offsetof(struct hw_kfd_node, device_id)},
		{"location_id", offsetof(struct hw_kfd_node, location_id)},
		{"domain", offsetof(struct hw_kfd_node, domain)},
		{"drm_render_minor", offsetof(struct hw_kfd_node, drm_render_minor)},
		{"num_xcc", offsetof(struct hw_kfd_node, num_xcc)},
	};
	struct hw_kfd_node tmp;
	struct rf_lines it;
	struct rf_span line;
	bool found = false;

	hw_kfd_node_init(&tmp);
	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		struct rf_span t = rf_span_trim(line), key, val;
		size_t sp = 0;
		uint64_t v;
		while (sp < t.len && t.p[sp] != ' ' && t.p[sp] != '\t')
			sp++;
		if (sp == t.len)
			continue;
		key = (struct rf_span){t.p, sp};
		val = rf_span_trim((struct rf_span){t.p + sp, t.len - sp});
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			int64_t *dst = (int64_t *)((char *)&tmp + keys[k].off);
			if (!rf_span_eq(key, keys[k].key) || *dst != HW_UNKNOWN)
				continue;
			if (rf_parse_u64(val.p, val.len, KFD_VALUE_MAX, &v) == 0) {
				*dst = (int64_t)v;
				found = true;
			}
			break;
		}
	}
	if (!found)
		return RF_E_PARSE;
	*n = tmp;
	return 0;
}

int hw_amd_gfx_arch(int64_t v, char *buf, size_t buflen)
{
	int64_t major, minor, step;

	if (v <= 0)
		return RF_E_RANGE;
	major = v / 10000;
	minor = v / 100 % 100;
	step = v % 100;
	if (major < 1 || major > 99 || minor > 15 || step > 15)
		return RF_E_RANGE;
	snprintf(buf, buflen, "gfx%d%x%x", (int)major, (unsigned)minor, (unsigned)step);
	return 0;
}

int hw_pci_slot_location(const char *slot, int64_t *domain, int64_t *location_id)
{
	const char *c1, *c2, *dot;
	uint64_t dom, bus, dev, fn;
	size_t len;

	if (!slot)
		return RF_E_PARSE;
	len = strnlen(slot, 64);
	c1 = memchr(slot, ':', len);
	if (!c1)
		return RF_E_PARSE;
	c2 = memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - slot));
	if (!c2)
		return RF_E_PARSE;
	dot = memchr(c2 + 1, '.', len - (size_t)(c2 + 1 - slot));
	if (!dot)
		return RF_E_PARSE;
	if (parse_hex_span(slot, (size_t)(c1 - slot), 0xffffffffu, &dom) < 0 ||
	    parse_hex_span(c1 + 1, (size_t)(c2 - c1 - 1), 0xff, &bus) < 0 ||
	    parse_hex_span(c2 + 1, (size_t)(dot - c2 - 1), 0x1f, &dev) < 0 ||
	    parse_hex_span(dot + 1, len - (size_t)(dot + 1 - slot), 7, &fn) < 0)
		return RF_E_PARSE;
	*domain = (int64_t)dom;
	*location_id = (int64_t)(bus << 8 | dev << 3 | fn);
	return 0;
}

int hw_kfd_match(const struct hw_drm_card *c, const struct hw_kfd_node *nodes, int n,
		 bool ids_unique)
{
	int64_t dom, loc;
	int hit = -1, count = 0;

	if (!nodes || n <= 0)
		return -1;
	if (hw_pci_slot_location(c->pci_slot, &dom, &loc) == 0) {
		for (int i = 0; i < n; i++)
			if (nodes[i].gfx_target_version > 0 && nodes[i].location_id == loc &&
			    (nodes[i].domain == dom || (nodes[i].domain == HW_UNKNOWN && dom == 0)))
				return i;
	}
	if (c->render_minor >= 0) {
		for (int i = 0; i < n; i++)
			if (nodes[i].gfx_target_version > 0 &&
			    nodes[i].drm_render_minor == c->render_minor)
				return i;
	}
	if (!ids_unique || c->device_id == 0)
		return -1;
	for (int i = 0; i < n; i++) {
		if (nodes[i].gfx_target_version > 0 &&
		    nodes[i].device_id == (int64_t)c->device_id &&
		    (nodes[i].vendor_id == HW_UNKNOWN ||
		     nodes[i].vendor_id == (int64_t)c->vendor_id)) {
			hit = i;
			count++;
		}
	}
	return count == 1 ? hit : -1;
}

struct pci_name {
	uint16_t id;
	bool flag; /* AMD: integrated (APU); Intel: discrete */
	const char *name;
};

/* AMD PCI device ids. The Instinct and Radeon ids seen in tests/data/fixtures come first; the
 * rest are from the PCI id database. One id often covers several boards: the name then lists
 * them rather than picking one. */
static const struct pci_name amd_names[] = {
	{0x66a1, false, "AMD Radeon Instinct MI50/MI60"},
	{0x687f, false, "AMD Radeon RX Vega 56/64"},
	{0x738c, false, "AMD Instinct MI100"},
	{0x7408, false, "AMD Instinct MI250X"},
	{0x740c, false, "AMD Instinct MI250/MI250X"},
	{0x740f, false, "AMD Instinct MI210"},
	{0x74a0, true, "AMD Instinct MI300A"},
	{0x74a1, false, "AMD Instinct MI300X"},
	{0x74a2, false, "AMD Instinct MI308X"},
	{0x74a5, false, "AMD Instinct MI325X"},
	{0x75a0, false, "AMD Instinct MI350X"},
	{0x73bf, false, "AMD Radeon RX 6800/6800 XT/6900 XT"},
	{0x73df, false, "AMD Radeon RX 6700/6700 XT/6800M"},
	{0x73ff, false, "AMD Radeon RX 6600/6600 XT"},
	{0x744c, false, "AMD Radeon RX 7900 XT/7900 XTX"},
	{0x7448, false, "AMD Radeon PRO W7900"},
	{0x747e, false, "AMD Radeon RX 7700 XT/7800 XT"},
	{0x7480, false, "AMD Radeon RX 7600"},
	{0x7550, false, "AMD Radeon RX 9070/9070 XT"},
	{0x7551, false, "AMD Radeon AI PRO R9700"},
	{0x15d8, true, "AMD Radeon Vega Graphics (Picasso)"},
	{0x15dd, true, "AMD Radeon Vega Graphics (Raven Ridge)"},
	{0x1636, true, "AMD Radeon Graphics (Renoir)"},
	{0x1638, true, "AMD Radeon Graphics (Cezanne)"},
	{0x163f, true, "AMD Custom GPU 0405 (Van Gogh)"},
	{0x164c, true, "AMD Radeon Graphics (Lucienne)"},
	{0x164e, true, "AMD Radeon Graphics (Raphael)"},
	{0x1681, true, "AMD Radeon 680M (Rembrandt)"},
	{0x15bf, true, "AMD Radeon 780M (Phoenix)"},
	{0x15c8, true, "AMD Radeon 740M (Phoenix2)"},
	{0x150e, true, "AMD Radeon 890M (Strix Point)"},
	{0x1586, true, "AMD Radeon 8060S (Strix Halo)"},
};

/* Intel GPU PCI device ids: the Arc and Data Center cards (discrete) and common iGPUs. */
static const struct pci_name intel_names[] = {
	{0x56a0, true, "Intel Arc A770"},
	{0x56a1, true, "Intel Arc A750"},
	{0x56a5, true, "Intel Arc A380"},
	{0x56a6, true, "Intel Arc A310"},
	{0xe20b, true, "Intel Arc B580"},
	{0xe20c, true, "Intel Arc B570"},
	{0x0bd5, true, "Intel Data Center GPU Max 1550"},
	{0x0bda, true, "Intel Data Center GPU Max 1100"},
	{0x1616, false, "Intel HD Graphics 5500"},
	{0x5917, false, "Intel UHD Graphics 620"},
	{0x3e92, false, "Intel UHD Graphics 630"},
	{0x3e9b, false, "Intel UHD Graphics 630"},
	{0x9a49, false, "Intel Iris Xe Graphics"},
	{0x46a6, false, "Intel Iris Xe Graphics"},
	{0x7d55, false, "Intel Arc Graphics (Meteor Lake)"},
};

static const struct pci_name *pci_lookup(const struct pci_name *t, size_t n, uint32_t id)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].id == id)
			return &t[i];
	return NULL;
}

const char *hw_amd_device_name(uint32_t device_id, bool *is_apu)
{
	const struct pci_name *e =
		pci_lookup(amd_names, sizeof(amd_names) / sizeof(amd_names[0]), device_id);

	if (!e)
		return NULL;
	if (is_apu)
		*is_apu = e->flag;
	return e->name;
}

const char *hw_intel_device_name(uint32_t device_id, bool *discrete)
{
	const struct pci_name *e =
		pci_lookup(intel_names, sizeof(intel_names) / sizeof(intel_names[0]), device_id);

	if (!e)
		return NULL;
	if (discrete)
		*discrete = e->flag;
	return e->name;
}

/* Copies the ids and the bus address every vendor shares. */
static void fill_pci(const struct hw_drm_card *c, const char *vendor, struct hw_gpu *g)
{
	hw_strlcpy(g->vendor, vendor, sizeof(g->vendor));
	if (c->device_id)
		snprintf(g->pci_device_id, sizeof(g->pci_device_id), "0x%04x",
			 (unsigned)c->device_id);
	if (c->pci_slot[0])
		hw_strlcpy(g->pci_bus_id, c->pci_slot, sizeof(g->pci_bus_id));
}

/* A unique_id is printed as hex digits; anything else (or all zeros) is not an identity. */
static bool usable_unique_id(const char *u)
{
	bool nonzero = false;
	size_t n = 0;

	for (; u[n]; n++) {
		if (hex_digit(u[n]) < 0)
			return false;
		if (u[n] != '0')
			nonzero = true;
	}
	return n > 0 && nonzero;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

void hw_amd_fill_gpu(const struct hw_drm_card *c, const struct hw_kfd_node *kfd,
		     const struct hw_memory *ram, struct hw_snapshot *s, struct hw_gpu *g)
{
	bool apu = false;
	const char *table = hw_amd_device_name(c->device_id, &apu);
	int64_t vram_free = HW_UNKNOWN;

	fill_pci(c, "amd", g);
	if (c->product_name[0])
		hw_strlcpy(g->name, c->product_name, sizeof(g->name));
	else if (table)
		hw_strlcpy(g->name, table, sizeof(g->name));
	else
		snprintf(g->name, sizeof(g->name), "AMD GPU 0x%04x", (unsigned)c->device_id);
	if (usable_unique_id(c->unique_id))
		snprintf(g->uuid, sizeof(g->uuid), "GPU-%s", c->unique_id);
	if (kfd &&
	    hw_amd_gfx_arch(kfd->gfx_target_version, g->architecture, sizeof(g->architecture)) < 0)
		g->architecture[0] = '\0';
	g->max_memory_clock_mhz = c->max_memory_clock_mhz;
	g->memory_gtt_bytes = c->gtt_total;

	/* The id table decides when it knows the id; otherwise the carve-out and KFD hints. */
	if (!table)
		apu = (kfd && kfd->cpu_cores_count > 0) ||
		      (c->vram_total >= 0 && c->vram_total <= HW_AMD_APU_CARVEOUT_MAX &&
		       c->gtt_total > c->vram_total);
	if (c->vram_total >= 0 && c->vram_used >= 0)
		vram_free = c->vram_total > c->vram_used ? c->vram_total - c->vram_used : 0;

	if (c->vram_total < 0) {
		hw_warn(s, "gpu %d (%s): memory size unknown (no readable mem_info_vram_total)",
			g->index, g->name);
		g->unified_memory = apu;
		return;
	}
	if (!apu) {
		g->memory_total_bytes = c->vram_total;
		g->memory_used_bytes = c->vram_used >= 0 ? min64(c->vram_used, c->vram_total) :
							   HW_UNKNOWN;
		g->memory_free_bytes = vram_free;
		return;
	}

	g->unified_memory = true;
	if (c->gtt_total < 0) {
		g->memory_total_bytes = c->vram_total;
		g->memory_used_bytes = c->vram_used;
		g->memory_free_bytes = vram_free;
		hw_warn(s,
			"gpu %d (%s): integrated GPU without a readable GTT size; only its %lld-byte "
			"VRAM carve-out is counted",
			g->index, g->name, (long long)c->vram_total);
		return;
	}
	{
		int64_t gtt = ram && ram->total_bytes >= 0 ? min64(c->gtt_total, ram->total_bytes) :
							     c->gtt_total;
		g->memory_total_bytes = c->vram_total + gtt;
		if (c->vram_used >= 0 && c->gtt_used >= 0)
			g->memory_used_bytes = c->vram_used + c->gtt_used;
		if (vram_free >= 0 && c->gtt_used >= 0 && ram && ram->available_bytes >= 0) {
			int64_t gtt_free = c->gtt_total > c->gtt_used ? c->gtt_total - c->gtt_used :
									0;
			g->memory_free_bytes = vram_free + min64(gtt_free, ram->available_bytes);
		}
		if (!ram || ram->total_bytes < 0)
			hw_warn(s,
				"gpu %d (%s): host memory unknown, so the GTT size is counted "
				"uncapped",
				g->index, g->name);
	}
}

void hw_intel_fill_gpu(const struct hw_drm_card *c, struct hw_snapshot *s, struct hw_gpu *g)
{
	bool discrete = false;
	const char *table = hw_intel_device_name(c->device_id, &discrete);
	bool integrated = table ? !discrete : strcmp(c->pci_slot, "0000:00:02.0") == 0;

	fill_pci(c, "intel", g);
	if (table)
		hw_strlcpy(g->name, table, sizeof(g->name));
	else
		snprintf(g->name, sizeof(g->name), "Intel GPU 0x%04x", (unsigned)c->device_id);
	if (c->local_mem_total > 0) {
		g->memory_total_bytes = c->local_mem_total;
		return;
	}
	if (integrated) {
		g->unified_memory = true;
		hw_warn(s,
			"gpu %d (%s): integrated GPU sharing host memory; the driver reports no "
			"GPU share, so its memory is unknown",
			g->index, g->name);
		return;
	}
	hw_warn(s, "gpu %d (%s): the %s driver does not report this card's memory", g->index,
		g->name, c->driver[0] ? c->driver : "Intel");
}
