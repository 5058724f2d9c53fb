/*
 * AMD and Intel GPUs through DRM sysfs (see probes.h): each /sys/class/drm/cardN whose PCI
 * vendor is AMD (driver amdgpu) or Intel (i915, xe), read under the scan's root, plus the KFD
 * compute topology (/sys/class/kfd/kfd/topology/nodes/N/properties) for the AMD architecture.
 * Connector entries (card0-DP-1), render nodes (renderD128) and cards without a PCI vendor
 * (amdgpu's compute-partition cards, simpledrm) are not GPUs of their own and are skipped; a
 * PCI device that several cardN point at is reported once. core/hw/hw_parse_amd.c parses the
 * files and decides what each card is.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hw/hw_parse_amd.h"
#include "server/detect/probes.h"
#include "server/detect/readfile.h"

/* Caps on what one scan looks at: directory entries considered, cards and KFD nodes kept, and
 * the size of one sysfs file. */
#define DRM_DIR_ENTRIES_MAX 4096
#define DRM_CARDS_MAX 256
#define KFD_NODES_MAX 256
#define SYSFS_FILE_CAP (64u << 10)
#define XE_TILES_MAX 8

struct amd_card {
	struct hw_drm_card c;
	int number;    /* N of cardN */
	char key[192]; /* what identifies the PCI device: its slot, else its resolved path */
};

/* Writes <root><path> (path formatted) into buf; returns false when it does not fit. */
static bool root_path(char *buf, size_t cap, const char *root, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static bool root_path(char *buf, size_t cap, const char *root, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(buf, cap, "%s", strcmp(root, "/") == 0 ? "" : root);

	if (n < 0 || (size_t)n >= cap)
		return false;
	va_start(ap, fmt);
	{
		int m = vsnprintf(buf + n, cap - (size_t)n, fmt, ap);
		va_end(ap);
		return m >= 0 && (size_t)m < cap - (size_t)n;
	}
}

/* Reads a small sysfs file under root; returns a malloc'd buffer or NULL. */
static char *read_sysfs(const char *root, const char *path, size_t *len)
{
	char *buf = NULL;

	if (rf_read_under_root(root, path, SYSFS_FILE_CAP, &buf, len) < 0)
		return NULL;
	return buf;
}

/* Parses "<prefix><digits>" (the whole name); returns the number or -1. */
static int numbered_name(const char *name, const char *prefix)
{
	size_t pl = strlen(prefix), n = strlen(name);
	int v = 0;

	if (n <= pl || n - pl > 6 || strncmp(name, prefix, pl) != 0)
		return -1;
	for (size_t i = pl; i < n; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -1;
		v = v * 10 + (name[i] - '0');
	}
	return v;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Lists the numbers N of the entries "<prefix>N" of a directory under root: the cap lowest,
 * sorted. Returns how many, 0 when the directory is absent; *more is set when entries were
 * left out (past cap, or past DRM_DIR_ENTRIES_MAX entries read). */
static int list_numbered(const char *root, const char *dir, const char *prefix, int *out, int cap,
			 bool *more)
{
	char path[4352];
	DIR *d;
	struct dirent *e;
	int n = 0, seen = 0;

	*more = false;
	if (!root_path(path, sizeof(path), root, "%s", dir) || !(d = opendir(path)))
		return 0;
	while ((e = readdir(d)) != NULL && seen++ < DRM_DIR_ENTRIES_MAX) {
		int v = numbered_name(e->d_name, prefix);
		if (v < 0)
			continue;
		if (n < cap) {
			out[n++] = v;
			continue;
		}
		/* Full: keep the lowest numbers, so that the cap drops the highest cards. */
		*more = true;
		{
			int hi = 0;
			for (int i = 1; i < n; i++)
				if (out[i] > out[hi])
					hi = i;
			if (v < out[hi])
				out[hi] = v;
		}
	}
	if (e && seen > DRM_DIR_ENTRIES_MAX)
		*more = true;
	closedir(d);
	qsort(out, (size_t)n, sizeof(*out), cmp_int);
	return n;
}

/* Reads a hex id file (device/vendor, device/device); 0 when absent or junk. */
static uint32_t read_hex_id(const char *root, int card, const char *file)
{
	char path[256];
	size_t len;
	char *buf;
	uint32_t v = 0;

	snprintf(path, sizeof(path), "/sys/class/drm/card%d/device/%s", card, file);
	if (!(buf = read_sysfs(root, path, &len)))
		return 0;
	if (hw_parse_sysfs_hex(buf, len, 0xffff, &v) < 0)
		v = 0;
	free(buf);
	return v;
}

/* Reads a decimal byte count; HW_UNKNOWN when absent or junk. path is under root. */
static int64_t read_bytes(const char *root, const char *path)
{
	size_t len;
	char *buf = read_sysfs(root, path, &len);
	uint64_t v;
	int64_t out = HW_UNKNOWN;

	if (buf && hw_parse_sysfs_u64(buf, len, HW_GPU_MEM_MAX, &v) == 0)
		out = (int64_t)v;
	free(buf);
	return out;
}

static int64_t read_card_bytes(const char *root, int card, const char *file)
{
	char path[256];

	snprintf(path, sizeof(path), "/sys/class/drm/card%d/device/%s", card, file);
	return read_bytes(root, path);
}

/* Copies a one-line text file (trimmed) into dst; leaves dst empty when absent. */
static void read_card_text(const char *root, int card, const char *file, char *dst, size_t cap)
{
	char path[256];
	size_t len, a = 0;
	char *buf;

	snprintf(path, sizeof(path), "/sys/class/drm/card%d/device/%s", card, file);
	if (!(buf = read_sysfs(root, path, &len)))
		return;
	while (a < len && (buf[a] == ' ' || buf[a] == '\t' || buf[a] == '\n' || buf[a] == '\r'))
		a++;
	while (len > a && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\n' ||
			   buf[len - 1] == '\r' || buf[len - 1] == '\0'))
		len--;
	/* A multi-line value is not a name; keep its first line only. */
	for (size_t i = a; i < len; i++)
		if (buf[i] == '\n' || buf[i] == '\r')
			len = i;
	if (len > a) {
		size_t n = len - a < cap - 1 ? len - a : cap - 1;
		memcpy(dst, buf + a, n);
		dst[n] = '\0';
	}
	free(buf);
}

/* The N of the renderDN node that shares the card's PCI device, or HW_UNKNOWN. */
static int render_minor(const char *root, int card)
{
	char dir[64];
	int minors[4];
	bool more;

	snprintf(dir, sizeof(dir), "/sys/class/drm/card%d/device/drm", card);
	return list_numbered(root, dir, "renderD", minors, 4, &more) > 0 ? minors[0] : HW_UNKNOWN;
}

/* Intel local memory: the out-of-tree i915's lmem_total_bytes (on the card, or its device),
 * else the sum of the xe driver's tiles. */
static int64_t intel_local_memory(const char *root, int card)
{
	char path[256];
	int64_t v, sum = 0;
	bool any = false;

	snprintf(path, sizeof(path), "/sys/class/drm/card%d/lmem_total_bytes", card);
	if ((v = read_bytes(root, path)) > 0)
		return v;
	if ((v = read_card_bytes(root, card, "lmem_total_bytes")) > 0)
		return v;
	for (int t = 0; t < XE_TILES_MAX; t++) {
		snprintf(path, sizeof(path),
			 "/sys/class/drm/card%d/device/tile%d/physical_vram_size_bytes", card, t);
		if ((v = read_bytes(root, path)) < 0)
			break;
		sum += v;
		any = true;
	}
	return any && sum > 0 ? sum : HW_UNKNOWN;
}

/* Identifies the PCI device behind a card: its slot name, else its resolved sysfs path. */
static void device_key(const char *root, struct amd_card *a)
{
	char path[4352];
	char *real;

	if (a->c.pci_slot[0]) {
		snprintf(a->key, sizeof(a->key), "%s", a->c.pci_slot);
		return;
	}
	if (!root_path(path, sizeof(path), root, "/sys/class/drm/card%d/device", a->number) ||
	    !(real = realpath(path, NULL))) {
		snprintf(a->key, sizeof(a->key), "card%d", a->number);
		return;
	}
	if (strlen(real) < sizeof(a->key))
		snprintf(a->key, sizeof(a->key), "%s", real);
	else
		snprintf(a->key, sizeof(a->key), "card%d", a->number);
	free(real);
}

/* Reads one card; returns false when it is not an AMD or Intel GPU to report. */
static bool read_card(const char *root, int number, struct amd_card *a, struct hw_snapshot *s)
{
	struct hw_drm_card *c = &a->c;
	char path[256];
	size_t len;
	char *buf;
	uint32_t vendor;

	hw_drm_card_init(c);
	a->number = number;
	snprintf(path, sizeof(path), "/sys/class/drm/card%d/device/uevent", number);
	if ((buf = read_sysfs(root, path, &len)) != NULL) {
		hw_parse_drm_uevent(buf, len, c);
		free(buf);
	}
	if ((vendor = read_hex_id(root, number, "vendor")) != 0)
		c->vendor_id = vendor;
	if (c->vendor_id != HW_PCI_VENDOR_AMD && c->vendor_id != HW_PCI_VENDOR_INTEL)
		return false;
	if (c->vendor_id == HW_PCI_VENDOR_AMD && c->driver[0] && strcmp(c->driver, "amdgpu") != 0) {
		hw_warn(s, "gpu: card%d is an AMD GPU driven by %s, not amdgpu; not reported",
			number, c->driver);
		return false;
	}
	if (c->vendor_id == HW_PCI_VENDOR_INTEL && strcmp(c->driver, "i915") != 0 &&
	    strcmp(c->driver, "xe") != 0)
		return false;
	{
		uint32_t dev = read_hex_id(root, number, "device");
		if (dev)
			c->device_id = dev;
	}
	if (c->vendor_id == HW_PCI_VENDOR_INTEL) {
		c->local_mem_total = intel_local_memory(root, number);
	} else {
		read_card_text(root, number, "product_name", c->product_name,
			       sizeof(c->product_name));
		read_card_text(root, number, "unique_id", c->unique_id, sizeof(c->unique_id));
		c->vram_total = read_card_bytes(root, number, "mem_info_vram_total");
		c->vram_used = read_card_bytes(root, number, "mem_info_vram_used");
		c->gtt_total = read_card_bytes(root, number, "mem_info_gtt_total");
		c->gtt_used = read_card_bytes(root, number, "mem_info_gtt_used");
		c->render_minor = render_minor(root, number);
		snprintf(path, sizeof(path), "/sys/class/drm/card%d/device/pp_dpm_mclk", number);
		if ((buf = read_sysfs(root, path, &len)) != NULL) {
			int mhz = hw_parse_amd_dpm_max_mhz(buf, len);
			c->max_memory_clock_mhz = mhz > 0 ? mhz : HW_UNKNOWN;
			free(buf);
		}
	}
	device_key(root, a);
	return true;
}

/* Reads the KFD topology nodes; returns how many were parsed into nodes (malloc'd). */
static int read_kfd(const char *root, struct hw_kfd_node **nodes_out, struct hw_snapshot *s)
{
	int ids[KFD_NODES_MAX];
	bool more;
	int n = list_numbered(root, "/sys/class/kfd/kfd/topology/nodes", "", ids, KFD_NODES_MAX,
			      &more);
	struct hw_kfd_node *nodes;
	int kept = 0;

	*nodes_out = NULL;
	if (n == 0)
		return 0;
	if (more)
		hw_warn(s, "gpu: more than %d KFD topology nodes; the rest are not read",
			KFD_NODES_MAX);
	nodes = calloc((size_t)n, sizeof(*nodes));
	if (!nodes)
		return 0;
	for (int i = 0; i < n; i++) {
		char path[128];
		size_t len;
		char *buf;
		snprintf(path, sizeof(path), "/sys/class/kfd/kfd/topology/nodes/%d/properties",
			 ids[i]);
		if (!(buf = read_sysfs(root, path, &len)))
			continue;
		hw_kfd_node_init(&nodes[kept]);
		if (hw_parse_kfd_properties(buf, len, &nodes[kept]) == 0)
			kept++;
		free(buf);
	}
	*nodes_out = nodes;
	return kept;
}

void rf_probe_amd(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	int *numbers = NULL;
	struct amd_card *cards = NULL;
	struct hw_kfd_node *nodes = NULL;
	int n_numbers, n_cards = 0, n_nodes, added = 0;
	bool more;

	numbers = malloc(DRM_CARDS_MAX * sizeof(*numbers));
	cards = malloc(DRM_CARDS_MAX * sizeof(*cards));
	if (!numbers || !cards) {
		hw_warn(s, "gpu: out of memory reading /sys/class/drm");
		goto out;
	}
	n_numbers = list_numbered(o->root, "/sys/class/drm", "card", numbers, DRM_CARDS_MAX, &more);
	if (more)
		hw_warn(s, "gpu: more than %d DRM cards; the rest are not read", DRM_CARDS_MAX);
	for (int i = 0; i < n_numbers; i++) {
		struct amd_card *a = &cards[n_cards];
		bool dup = false;
		if (!read_card(o->root, numbers[i], a, s))
			continue;
		for (int j = 0; j < n_cards && !dup; j++)
			dup = strcmp(cards[j].key, a->key) == 0;
		if (!dup)
			n_cards++;
	}
	if (n_cards == 0)
		goto out;
	n_nodes = read_kfd(o->root, &nodes, s);
	for (int i = 0; i < n_cards; i++) {
		const struct hw_drm_card *c = &cards[i].c;
		struct hw_gpu *g;
		if (!(g = rf_snapshot_add_gpu(s)))
			break;
		added++;
		if (c->vendor_id == HW_PCI_VENDOR_INTEL) {
			hw_intel_fill_gpu(c, s, g);
		} else {
			int same = 0, k;
			for (int j = 0; j < n_cards; j++)
				if (cards[j].c.vendor_id == c->vendor_id &&
				    cards[j].c.device_id == c->device_id)
					same++;
			k = hw_kfd_match(c, nodes, n_nodes, same == 1);
			hw_amd_fill_gpu(c, k >= 0 ? &nodes[k] : NULL, &s->memory, s, g);
		}
	}
	if (added > 0 && strcmp(s->sources.gpu, "none") == 0)
		hw_strlcpy(s->sources.gpu, "sysfs", sizeof(s->sources.gpu));
out:
	free(nodes);
	free(cards);
	free(numbers);
}
