/*
 * Parsers of the NVIDIA probe's captures (see hw_parse_nvidia.h): the NVML child's record,
 * nvidia-smi's CSV and `nvidia-smi -L`. Every number goes through core/numparse.h with a cap
 * well above any real GPU; a value past its cap is left unknown and counted, and a CSV line that
 * does not have the shape of a GPU row never becomes one.
 */
#include "core/hw/hw_parse_nvidia.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"
#include "core/numparse.h"
#include "core/text.h"

/* Caps, far above any real value and low enough that no arithmetic below can overflow. */
#define NV_MAX_BYTES (UINT64_C(1) << 50) /* 1 PiB of memory on one GPU */
#define NV_MAX_MIB (UINT64_C(1) << 30)   /* the same, in MiB */
#define NV_MAX_CLOCK_MHZ 100000
#define NV_MAX_BUS_BITS 65536
#define NV_MAX_INDEX 1000000
#define NV_MAX_CODE 1000000
#define NV_MAX_CC_PART 99
#define NV_MAX_CSV_FIELDS 32

void hw_nvidia_report_init(struct hw_nvidia_report *r)
{
	memset(r, 0, sizeof(*r));
	r->count = HW_UNKNOWN;
}

/* Starts GPU i of r as rf_snapshot_add_gpu would: everything unknown, vendor nvidia. */
static struct hw_gpu *nv_new_gpu(struct hw_nvidia_report *r)
{
	struct hw_gpu *g;

	if (r->n_gpus >= HW_MAX_GPUS) {
		r->n_dropped++;
		return NULL;
	}
	g = &r->gpus[r->n_gpus];
	memset(g, 0, sizeof(*g));
	g->index = r->n_gpus;
	hw_strlcpy(g->vendor, "nvidia", sizeof(g->vendor));
	g->memory_total_bytes = HW_UNKNOWN;
	g->memory_free_bytes = HW_UNKNOWN;
	g->memory_used_bytes = HW_UNKNOWN;
	g->memory_gtt_bytes = HW_UNKNOWN;
	g->memory_bus_width_bits = HW_UNKNOWN;
	g->max_memory_clock_mhz = HW_UNKNOWN;
	g->memory_bandwidth_gbs = -1;
	g->fp16_tflops = -1;
	r->nv_index[r->n_gpus] = -1;
	r->memory_error[r->n_gpus] = 0;
	r->handle_error[r->n_gpus] = 0;
	r->n_gpus++;
	return g;
}

/* Copies a text value into dst when it fits, replacing control bytes with '?'. Returns false
 * (dst untouched) when it is empty or longer than dst can hold. */
static bool nv_copy_text(struct rf_span v, char *dst, size_t dstlen)
{
	v = rf_span_trim(v);
	if (v.len == 0 || v.len >= dstlen)
		return false;
	for (size_t i = 0; i < v.len; i++) {
		unsigned char c = (unsigned char)v.p[i];
		dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	dst[v.len] = '\0';
	return true;
}

/* Copies a PCI bus id, widening the first NVML version's 4-digit domain ("0000:18:00.0") to
 * the 8 digits that nvidia-smi and newer NVML print, so both paths name a GPU alike. */
static bool nv_copy_bus_id(struct rf_span v, char *dst, size_t dstlen)
{
	char wide[32];

	v = rf_span_trim(v);
	if (v.len == 12 && v.p[4] == ':' && v.p[7] == ':' && v.p[10] == '.') {
		memcpy(wide, "0000", 4);
		memcpy(wide + 4, v.p, v.len);
		v = (struct rf_span){wide, v.len + 4};
	}
	return nv_copy_text(v, dst, dstlen);
}

/* Parses an unsigned decimal value no larger than max into *out. */
static bool nv_u64(struct rf_span v, uint64_t max, uint64_t *out)
{
	v = rf_span_trim(v);
	return rf_parse_u64(v.p, v.len, max, out) == 0;
}

/* Parses "M.m" (each part 1-2 digits) and writes the canonical form into dst. */
static bool nv_compute_capability(struct rf_span v, char *dst, size_t dstlen)
{
	const char *dot;
	uint64_t major, minor;
	char tmp[16];

	v = rf_span_trim(v);
	dot = v.len ? memchr(v.p, '.', v.len) : NULL;
	if (!dot)
		return false;
	if (rf_parse_u64(v.p, (size_t)(dot - v.p), NV_MAX_CC_PART, &major) < 0 ||
	    rf_parse_u64(dot + 1, v.len - (size_t)(dot - v.p) - 1, NV_MAX_CC_PART, &minor) < 0)
		return false;
	snprintf(tmp, sizeof(tmp), "%u.%u", (unsigned)major, (unsigned)minor);
	return hw_strlcpy(dst, tmp, dstlen) == 0;
}

/* Formats the PCI device id (the high 16 bits of NVML's pciDeviceId) as "0x2330". */
static void nv_pci_device_id(uint64_t combined, char *dst, size_t dstlen)
{
	snprintf(dst, dstlen, "0x%04x", (unsigned)((combined >> 16) & 0xffffu));
}

/* Whether memory_bytes spreads evenly over the 32-bit channels of a GDDR bus this wide: every
 * channel holds one or two (clamshell) chips of 4, 8, 12, 16 or 24 Gbit, so the memory per
 * channel is one of a few sizes (within 2%: the driver reserves a little of the total). */
static bool nv_gddr_bus_fits(int bits, int64_t memory_bytes)
{
	static const double mib[] = {256, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144};
	double per = (double)memory_bytes / (1024.0 * 1024.0) / (bits / 32);

	for (size_t i = 0; i < sizeof(mib) / sizeof(mib[0]); i++)
		if (per > mib[i] * 0.98 && per <= mib[i] * 1.0001)
			return true;
	return false;
}

int hw_nvidia_bus_width_bits(double bandwidth_gbs, int max_memory_clock_mhz, int64_t memory_bytes)
{
	double bits;
	long w;

	if (!(bandwidth_gbs > 0) || max_memory_clock_mhz <= 0)
		return HW_UNKNOWN;
	bits = bandwidth_gbs * 1000.0 * 8.0 / (2.0 * (double)max_memory_clock_mhz);
	if (!(bits >= 16) || bits > NV_MAX_BUS_BITS)
		return HW_UNKNOWN;
	/* Memory buses are built of 32-bit channels (GDDR) or 1024-bit stacks (HBM). */
	w = (long)(bits / 32.0 + 0.5) * 32;
	/* A clock that does not give the stated bandwidth on any whole bus (a profile of another
	 * variant) says nothing about the width. */
	if (w <= 0 || bits < (double)w * 0.97 || bits > (double)w * 1.03)
		return HW_UNKNOWN;
	/* Nor does a board whose memory runs below the profile's rate: the width that the rate
	 * implies then splits the memory into chips that do not exist (an RTX 3060 Laptop GPU's
	 * 6 GiB at 12 Gbps instead of 14 would need a 224-bit bus, 7 channels of 878 MiB). */
	if (w % 1024 != 0 && (memory_bytes <= 0 || !nv_gddr_bus_fits((int)w, memory_bytes)))
		return HW_UNKNOWN;
	return (int)w;
}

const char *hw_nvml_architecture_name(unsigned arch)
{
	/* NVML_DEVICE_ARCH_* in nvml.h: KEPLER 2 ... BLACKWELL 10, and T23X 11, Jetson Orin,
	 * whose GPU is an Ampere (as core/hw/hw_parse_tegra.c names it). "Ada Lovelace" as
	 * profiles/devices.json spells it. */
	static const char *const names[] = {
		NULL,     NULL,     "Kepler",       "Maxwell", "Pascal",    "Volta",
		"Turing", "Ampere", "Ada Lovelace", "Hopper",  "Blackwell", "Ampere",
	};

	return arch < sizeof(names) / sizeof(names[0]) ? names[arch] : NULL;
}

double hw_nvidia_bandwidth_gbs(int max_memory_clock_mhz, int memory_bus_width_bits)
{
	if (max_memory_clock_mhz <= 0 || memory_bus_width_bits <= 0)
		return -1;
	return (double)max_memory_clock_mhz * 2.0 * (double)memory_bus_width_bits / 8.0 / 1000.0;
}

int hw_nvidia_cuda_version(int v, char *buf, size_t buflen)
{
	int major = v / 1000, minor = (v % 1000) / 10;

	if (buflen)
		buf[0] = '\0';
	if (v <= 0 || major < 1 || major > 99)
		return RF_E_RANGE;
	if (snprintf(buf, buflen, "%d.%d", major, minor) >= (int)buflen) {
		if (buflen)
			buf[0] = '\0';
		return RF_E_RANGE;
	}
	return 0;
}

const char *hw_nvml_error_name(int code)
{
	static const struct {
		int code;
		const char *name;
	} names[] = {
		{0, "success"},
		{1, "not initialised"},
		{2, "invalid argument"},
		{3, "not supported"},
		{4, "no permission"},
		{6, "not found"},
		{7, "buffer too small"},
		{8, "insufficient power"},
		{9, "driver not loaded"},
		{10, "timeout"},
		{11, "interrupt problem"},
		{12, "library not found"},
		{13, "function not found"},
		{14, "corrupted inforom"},
		{15, "GPU is lost"},
		{16, "reset required"},
		{17, "blocked by the operating system"},
		{18, "library and driver versions differ"},
		{19, "in use"},
		{20, "out of memory"},
		{21, "no data"},
		{25, "struct version mismatch"},
		{999, "unknown error"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].code == code)
			return names[i].name;
	return "unrecognised error";
}

/* Final touches shared by both parsers: memory that contradicts itself is dropped, bandwidth
 * follows from clock and bus width. */
static void nv_finish_gpu(struct hw_nvidia_report *r, struct hw_gpu *g)
{
	if (g->memory_total_bytes >= 0 && g->memory_free_bytes > g->memory_total_bytes) {
		g->memory_free_bytes = HW_UNKNOWN;
		r->n_bad_values++;
	}
	if (g->memory_total_bytes >= 0 && g->memory_used_bytes > g->memory_total_bytes) {
		g->memory_used_bytes = HW_UNKNOWN;
		r->n_bad_values++;
	}
	if (!g->mig.enabled)
		g->mig.instances = 0;
	g->memory_bandwidth_gbs =
		hw_nvidia_bandwidth_gbs(g->max_memory_clock_mhz, g->memory_bus_width_bits);
}

/* ---- the NVML record ---------------------------------------------------------------------- */

/* Sets an int field from a decimal value, counting a bad one. */
static void nv_set_int(struct hw_nvidia_report *r, struct rf_span v, uint64_t max, int *dst)
{
	uint64_t n;

	if (nv_u64(v, max, &n))
		*dst = (int)n;
	else
		r->n_bad_values++;
}

static void nv_set_bytes(struct hw_nvidia_report *r, struct rf_span v, int64_t *dst)
{
	uint64_t n;

	if (nv_u64(v, NV_MAX_BYTES, &n))
		*dst = (int64_t)n;
	else
		r->n_bad_values++;
}

static void nv_set_text(struct hw_nvidia_report *r, struct rf_span v, char *dst, size_t dstlen)
{
	if (!nv_copy_text(v, dst, dstlen))
		r->n_bad_values++;
}

/* Applies one key of a GPU section. Returns false for a key that is not a GPU key. */
static bool nvml_gpu_key(struct hw_nvidia_report *r, int i, struct rf_span k, struct rf_span v)
{
	struct hw_gpu *g = &r->gpus[i];
	uint64_t n;
	int mode = -1;

	if (rf_span_eq(k, "handle_error"))
		nv_set_int(r, v, NV_MAX_CODE, &r->handle_error[i]);
	else if (rf_span_eq(k, "name"))
		nv_set_text(r, v, g->name, sizeof(g->name));
	else if (rf_span_eq(k, "uuid"))
		nv_set_text(r, v, g->uuid, sizeof(g->uuid));
	else if (rf_span_eq(k, "pci_bus_id")) {
		if (!nv_copy_bus_id(v, g->pci_bus_id, sizeof(g->pci_bus_id)))
			r->n_bad_values++;
	} else if (rf_span_eq(k, "pci_device_id")) {
		if (nv_u64(v, UINT32_MAX, &n))
			nv_pci_device_id(n, g->pci_device_id, sizeof(g->pci_device_id));
		else
			r->n_bad_values++;
	} else if (rf_span_eq(k, "memory_total"))
		nv_set_bytes(r, v, &g->memory_total_bytes);
	else if (rf_span_eq(k, "memory_free"))
		nv_set_bytes(r, v, &g->memory_free_bytes);
	else if (rf_span_eq(k, "memory_used"))
		nv_set_bytes(r, v, &g->memory_used_bytes);
	else if (rf_span_eq(k, "memory_error"))
		nv_set_int(r, v, NV_MAX_CODE, &r->memory_error[i]);
	else if (rf_span_eq(k, "compute_capability")) {
		if (!nv_compute_capability(v, g->compute_capability, sizeof(g->compute_capability)))
			r->n_bad_values++;
	} else if (rf_span_eq(k, "architecture")) {
		/* A value NVML's header does not name (UNKNOWN, or newer than this table) leaves
		 * the name to the device profile; it is not a malformed value. */
		if (!nv_u64(v, UINT32_MAX, &n))
			r->n_bad_values++;
		else if (hw_nvml_architecture_name((unsigned)n))
			hw_strlcpy(g->architecture, hw_nvml_architecture_name((unsigned)n),
				   sizeof(g->architecture));
	} else if (rf_span_eq(k, "memory_bus_width"))
		nv_set_int(r, v, NV_MAX_BUS_BITS, &g->memory_bus_width_bits);
	else if (rf_span_eq(k, "max_memory_clock"))
		nv_set_int(r, v, NV_MAX_CLOCK_MHZ, &g->max_memory_clock_mhz);
	else if (rf_span_eq(k, "mig_mode")) {
		nv_set_int(r, v, 1, &mode);
		if (mode >= 0) {
			g->has_mig = true;
			g->mig.enabled = mode == 1;
		}
	} else if (rf_span_eq(k, "mig_instances"))
		nv_set_int(r, v, NV_MAX_INDEX, &g->mig.instances);
	else
		return false;
	return true;
}

/* Applies one key about the system. Returns false for a key that is not one. */
static bool nvml_system_key(struct hw_nvidia_report *r, struct rf_span k, struct rf_span v,
			    char *driver, size_t driverlen, int *cuda)
{
	if (rf_span_eq(k, "dlopen_error")) {
		r->library_missing = true;
		if (!nv_copy_text(v, r->library_error, sizeof(r->library_error)))
			rf_span_copy(rf_span_trim(v), r->library_error, sizeof(r->library_error));
	} else if (rf_span_eq(k, "missing")) {
		if (r->n_missing < (int)(sizeof(r->missing) / sizeof(r->missing[0])))
			nv_set_text(r, v, r->missing[r->n_missing], sizeof(r->missing[0]));
		r->n_missing++;
	} else if (rf_span_eq(k, "init_error"))
		nv_set_int(r, v, NV_MAX_CODE, &r->init_error);
	else if (rf_span_eq(k, "count_error"))
		nv_set_int(r, v, NV_MAX_CODE, &r->count_error);
	else if (rf_span_eq(k, "count"))
		nv_set_int(r, v, NV_MAX_INDEX, &r->count);
	else if (rf_span_eq(k, "driver_version"))
		nv_set_text(r, v, driver, driverlen);
	else if (rf_span_eq(k, "cuda_version"))
		nv_set_int(r, v, NV_MAX_INDEX, cuda);
	else
		return false;
	return true;
}

int hw_parse_nvml_record(const char *text, size_t len, struct hw_nvidia_report *out)
{
	struct rf_lines it;
	struct rf_span line;
	char driver[32] = "", cuda_str[16] = "";
	int cuda = -1, cur = -1; /* cur: index in out->gpus of the open GPU section, -1: none */
	bool in_gpu = false;     /* inside a GPU section (kept or dropped) */

	hw_nvidia_report_init(out);
	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		struct rf_span t = rf_span_trim(line), k, v;
		const char *eq;

		if (t.len == 0)
			continue;
		if (!out->magic) {
			if (!rf_span_eq(t, HW_NVML_RECORD_MAGIC))
				return RF_E_PARSE;
			out->magic = true;
			continue;
		}
		if (rf_span_eq(t, "end")) {
			out->complete = true;
			break;
		}
		eq = memchr(t.p, '=', t.len);
		if (!eq) {
			out->n_rejected++;
			continue;
		}
		k = rf_span_trim((struct rf_span){t.p, (size_t)(eq - t.p)});
		v = (struct rf_span){eq + 1, t.len - (size_t)(eq - t.p) - 1};
		if (rf_span_eq(k, "gpu")) {
			uint64_t idx;
			in_gpu = true;
			cur = -1;
			if (!nv_u64(v, NV_MAX_INDEX, &idx)) {
				out->n_rejected++;
				continue;
			}
			if (nv_new_gpu(out)) {
				cur = out->n_gpus - 1;
				out->nv_index[cur] = (int)idx;
			}
			continue;
		}
		if (in_gpu) {
			if (cur >= 0)
				nvml_gpu_key(out, cur, k, v);
			continue;
		}
		nvml_system_key(out, k, v, driver, sizeof(driver), &cuda);
	}
	if (!out->magic)
		return RF_E_PARSE;
	if (cuda >= 0 && hw_nvidia_cuda_version(cuda, cuda_str, sizeof(cuda_str)) < 0)
		out->n_bad_values++;
	for (int i = 0; i < out->n_gpus; i++) {
		struct hw_gpu *g = &out->gpus[i];
		hw_strlcpy(g->driver_version, driver, sizeof(g->driver_version));
		hw_strlcpy(g->cuda_version, cuda_str, sizeof(g->cuda_version));
		nv_finish_gpu(out, g);
	}
	return 0;
}

/* ---- nvidia-smi --query-gpu CSV ---------------------------------------------------------- */

enum nv_col {
	NV_COL_SKIP,
	NV_COL_INDEX,
	NV_COL_NAME,
	NV_COL_UUID,
	NV_COL_BUS_ID,
	NV_COL_DEVICE_ID,
	NV_COL_MEM_TOTAL,
	NV_COL_MEM_USED,
	NV_COL_MEM_FREE,
	NV_COL_CC,
	NV_COL_DRIVER,
	NV_COL_MAX_MEM_CLOCK,
	NV_COL_MIG_MODE,
};

static enum nv_col nv_col_of(struct rf_span name)
{
	static const struct {
		const char *name;
		enum nv_col col;
	} cols[] = {
		{"index", NV_COL_INDEX},
		{"name", NV_COL_NAME},
		{"gpu_name", NV_COL_NAME},
		{"uuid", NV_COL_UUID},
		{"gpu_uuid", NV_COL_UUID},
		{"pci.bus_id", NV_COL_BUS_ID},
		{"gpu_bus_id", NV_COL_BUS_ID},
		{"pci.device_id", NV_COL_DEVICE_ID},
		{"memory.total", NV_COL_MEM_TOTAL},
		{"memory.used", NV_COL_MEM_USED},
		{"memory.free", NV_COL_MEM_FREE},
		{"compute_cap", NV_COL_CC},
		{"driver_version", NV_COL_DRIVER},
		{"clocks.max.memory", NV_COL_MAX_MEM_CLOCK},
		{"clocks.max.mem", NV_COL_MAX_MEM_CLOCK},
		{"mig.mode.current", NV_COL_MIG_MODE},
	};

	for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
		if (rf_span_eq(name, cols[i].name))
			return cols[i].col;
	return NV_COL_SKIP;
}

/* Splits s at commas into at most max trimmed cells; returns the cell count, or max + 1 when
 * there are more. */
static int nv_split_csv(struct rf_span s, struct rf_span *cells, int max)
{
	int n = 0;
	const char *p = s.p, *end = s.p + s.len;

	for (;;) {
		const char *c = memchr(p, ',', (size_t)(end - p));
		const char *stop = c ? c : end;
		if (n >= max)
			return max + 1;
		cells[n++] = rf_span_trim((struct rf_span){p, (size_t)(stop - p)});
		if (!c)
			break;
		p = c + 1;
	}
	return n;
}

/* nvidia-smi's ways of saying "no value": "[N/A]", "N/A", "[Not Supported]", "[Unknown
 * Error]"... and an empty cell. */
static bool nv_is_na(struct rf_span v)
{
	return v.len == 0 || rf_span_eq(v, "N/A") || rf_span_eq(v, "Not Supported") ||
	       (v.p[0] == '[' && v.p[v.len - 1] == ']');
}

/* Parses "0x233010DE" (1-8 hex digits after 0x). */
static bool nv_hex32(struct rf_span v, uint64_t *out)
{
	uint64_t n = 0;

	if (v.len < 3 || v.len > 10 || v.p[0] != '0' || (v.p[1] != 'x' && v.p[1] != 'X'))
		return false;
	for (size_t i = 2; i < v.len; i++) {
		char c = v.p[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return false;
		n = n * 16 + d;
	}
	*out = n;
	return true;
}

/* Fills g from one row's cells. Returns false when a cell is junk (the row is then rejected);
 * a cell that nvidia-smi marks as unavailable leaves its field unknown. */
static bool nv_csv_row(const enum nv_col *cols, const struct rf_span *cells, int n,
		       struct hw_gpu *g, int *nv_index, int *bad_values)
{
	for (int i = 0; i < n; i++) {
		struct rf_span v = cells[i];
		uint64_t num;

		if (cols[i] == NV_COL_SKIP || nv_is_na(v))
			continue;
		switch (cols[i]) {
		case NV_COL_INDEX:
			if (rf_parse_u64(v.p, v.len, NV_MAX_INDEX, &num) < 0)
				return false;
			*nv_index = (int)num;
			break;
		case NV_COL_NAME:
			if (!nv_copy_text(v, g->name, sizeof(g->name)))
				(*bad_values)++;
			break;
		case NV_COL_UUID:
			if (!nv_copy_text(v, g->uuid, sizeof(g->uuid)))
				(*bad_values)++;
			break;
		case NV_COL_BUS_ID:
			if (!nv_copy_bus_id(v, g->pci_bus_id, sizeof(g->pci_bus_id)))
				(*bad_values)++;
			break;
		case NV_COL_DRIVER:
			if (!nv_copy_text(v, g->driver_version, sizeof(g->driver_version)))
				(*bad_values)++;
			break;
		case NV_COL_DEVICE_ID:
			if (!nv_hex32(v, &num))
				return false;
			nv_pci_device_id(num, g->pci_device_id, sizeof(g->pci_device_id));
			break;
		case NV_COL_MEM_TOTAL:
		case NV_COL_MEM_USED:
		case NV_COL_MEM_FREE: {
			int64_t *dst = cols[i] == NV_COL_MEM_TOTAL ? &g->memory_total_bytes :
				       cols[i] == NV_COL_MEM_USED  ? &g->memory_used_bytes :
								     &g->memory_free_bytes;
			if (rf_parse_u64(v.p, v.len, NV_MAX_MIB, &num) < 0)
				return false;
			*dst = (int64_t)num * 1024 * 1024;
			break;
		}
		case NV_COL_CC:
			if (!nv_compute_capability(v, g->compute_capability,
						   sizeof(g->compute_capability)))
				return false;
			break;
		case NV_COL_MAX_MEM_CLOCK:
			if (rf_parse_u64(v.p, v.len, NV_MAX_CLOCK_MHZ, &num) < 0)
				return false;
			g->max_memory_clock_mhz = (int)num;
			break;
		case NV_COL_MIG_MODE:
			if (rf_span_eq(v, "Enabled") || rf_span_eq(v, "Disabled")) {
				g->has_mig = true;
				g->mig.enabled = rf_span_eq(v, "Enabled");
			} else {
				(*bad_values)++;
			}
			break;
		case NV_COL_SKIP:
			break;
		}
	}
	/* A row that names nothing is not evidence of a GPU. */
	return g->name[0] || g->uuid[0] || g->pci_bus_id[0];
}

int hw_parse_nvidia_smi_csv(const char *text, size_t len, const char *fields,
			    struct hw_nvidia_report *out)
{
	enum nv_col cols[NV_MAX_CSV_FIELDS];
	struct rf_span names[NV_MAX_CSV_FIELDS], cells[NV_MAX_CSV_FIELDS];
	struct rf_lines it;
	struct rf_span line;
	int nf;

	hw_nvidia_report_init(out);
	if (!fields || !*fields)
		return RF_E_INVALID_VALUE;
	nf = nv_split_csv((struct rf_span){fields, strlen(fields)}, names, NV_MAX_CSV_FIELDS);
	if (nf > NV_MAX_CSV_FIELDS)
		return RF_E_INVALID_VALUE;
	for (int i = 0; i < nf; i++)
		cols[i] = nv_col_of(names[i]);
	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		struct rf_span t = rf_span_trim(line);
		struct hw_gpu row;
		int nv_index = -1, bad = 0, nc;
		struct hw_gpu *g;

		if (t.len == 0)
			continue;
		nc = nv_split_csv(t, cells, NV_MAX_CSV_FIELDS);
		if (nc != nf) {
			out->n_rejected++;
			continue;
		}
		/* The row is built aside, so a rejected line leaves no trace in out. */
		memset(&row, 0, sizeof(row));
		row.memory_total_bytes = row.memory_free_bytes = row.memory_used_bytes = HW_UNKNOWN;
		row.max_memory_clock_mhz = HW_UNKNOWN;
		if (!nv_csv_row(cols, cells, nc, &row, &nv_index, &bad)) {
			out->n_rejected++;
			continue;
		}
		g = nv_new_gpu(out);
		if (!g)
			continue;
		hw_strlcpy(g->name, row.name, sizeof(g->name));
		hw_strlcpy(g->uuid, row.uuid, sizeof(g->uuid));
		hw_strlcpy(g->pci_bus_id, row.pci_bus_id, sizeof(g->pci_bus_id));
		hw_strlcpy(g->pci_device_id, row.pci_device_id, sizeof(g->pci_device_id));
		hw_strlcpy(g->driver_version, row.driver_version, sizeof(g->driver_version));
		hw_strlcpy(g->compute_capability, row.compute_capability,
			   sizeof(g->compute_capability));
		g->memory_total_bytes = row.memory_total_bytes;
		g->memory_used_bytes = row.memory_used_bytes;
		g->memory_free_bytes = row.memory_free_bytes;
		g->max_memory_clock_mhz = row.max_memory_clock_mhz;
		g->has_mig = row.has_mig;
		g->mig = row.mig;
		out->nv_index[out->n_gpus - 1] = nv_index;
		out->n_bad_values += bad;
		nv_finish_gpu(out, g);
	}
	return 0;
}

/* ---- nvidia-smi -L ------------------------------------------------------------------------ */

int hw_parse_nvidia_smi_list(const char *text, size_t len, int *mig_counts, int max_gpus)
{
	struct rf_lines it;
	struct rf_span line;
	int cur = -1, seen = 0;

	for (int i = 0; i < max_gpus; i++)
		mig_counts[i] = 0;
	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		struct rf_span t = rf_span_trim(line);
		bool indented = line.len > 0 && (line.p[0] == ' ' || line.p[0] == '\t');

		if (!indented && t.len > 4 && memcmp(t.p, "GPU ", 4) == 0) {
			const char *colon = memchr(t.p, ':', t.len);
			uint64_t idx;
			cur = -1;
			if (colon && rf_parse_u64(t.p + 4, (size_t)(colon - t.p - 4), NV_MAX_INDEX,
						  &idx) == 0) {
				seen++;
				if ((int)idx < max_gpus)
					cur = (int)idx;
			}
		} else if (indented && t.len > 4 && memcmp(t.p, "MIG ", 4) == 0 && cur >= 0) {
			mig_counts[cur]++;
		}
	}
	return seen;
}
