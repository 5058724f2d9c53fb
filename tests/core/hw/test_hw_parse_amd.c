/*
 * The DRM sysfs parsers and GPU rules of core/hw/hw_parse_amd.c. The amdgpu values come from the
 * real Vega 10 listing in tests/data/fixtures (amd-vega10-rx-vega-asus__amdgpu-sysfs.txt),
 * expanded back into file contents here; the KFD properties text is one node of a published
 * dump of a four-APU MI300A machine (`cat /sys/class/kfd/kfd/topology/nodes/ * /properties`
 * in the test resources of a Kubernetes device-plugin project, found by code search), in the
 * order amdkfd prints it. Expected values were read off the captures, not the parser.
 */
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hw/hw_parse_amd.h"
#include "tests/test.h"

#define GIB (INT64_C(1) << 30)
#define MIB (INT64_C(1) << 20)

/* Rebuilds one file of a `path: value` listing: the value plus its continuation lines (two
 * spaces of indent), each ending in the newline the listing stripped. Returns malloc'd text or
 * NULL when the key is not listed. */
static char *listing_file(const char *listing, const char *key, size_t *len)
{
	size_t klen = strlen(key), cap = strlen(listing) + 2, n = 0;
	char *out = NULL;
	const char *p = listing;
	int in = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);
		if (in && ll >= 2 && p[0] == ' ' && p[1] == ' ') {
			memcpy(out + n, p + 2, ll - 2);
			n += ll - 2;
			out[n++] = '\n';
		} else if (in) {
			break;
		} else if (p[0] != '#' && ll > klen && strncmp(p, key, klen) == 0 &&
			   p[klen] == ':') {
			size_t skip = klen + 1 + (ll > klen + 1 && p[klen + 1] == ' ');
			out = malloc(cap);
			memcpy(out, p + skip, ll - skip);
			n = ll - skip;
			out[n++] = '\n';
			in = 1;
		}
		p = nl ? nl + 1 : p + ll;
	}
	if (out) {
		out[n] = '\0';
		*len = n;
	}
	return out;
}

/* Reads a listed file of the Vega capture as the kernel would serve it. */
static char *vega(const char *key, size_t *len)
{
	size_t llen;
	char *listing = t_fixture("amd-vega10-rx-vega-asus__amdgpu-sysfs.txt", &llen);
	char *f = listing_file(listing, key, len);

	ck_assert_msg(f != NULL, "%s not in the Vega listing", key);
	free(listing);
	return f;
}

static uint32_t vega_hex(const char *key)
{
	size_t len;
	char *f = vega(key, &len);
	uint32_t v = 0;

	ck_assert_int_eq(hw_parse_sysfs_hex(f, len, 0xffff, &v), 0);
	free(f);
	return v;
}

static int64_t vega_u64(const char *key)
{
	size_t len;
	char *f = vega(key, &len);
	uint64_t v = 0;

	ck_assert_int_eq(hw_parse_sysfs_u64(f, len, HW_GPU_MEM_MAX, &v), 0);
	free(f);
	return (int64_t)v;
}

/* The Vega 10 card as probe_amd.c would read it. */
static void vega_card(struct hw_drm_card *c)
{
	size_t len;
	char *f;

	hw_drm_card_init(c);
	c->vendor_id = vega_hex("vendor");
	c->device_id = vega_hex("device");
	f = vega("uevent", &len);
	ck_assert_int_eq(hw_parse_drm_uevent(f, len, c), 0);
	free(f);
	c->vram_total = vega_u64("mem_info_vram_total");
	c->vram_used = vega_u64("mem_info_vram_used");
	c->gtt_total = vega_u64("mem_info_gtt_total");
	c->gtt_used = vega_u64("mem_info_gtt_used");
	f = vega("pp_dpm_mclk", &len);
	c->max_memory_clock_mhz = hw_parse_amd_dpm_max_mhz(f, len);
	free(f);
	hw_strlcpy(c->unique_id, "0123456789abcdef", sizeof(c->unique_id));
}

static struct hw_gpu *new_gpu(struct hw_snapshot *s)
{
	struct hw_gpu *g = &s->gpus[s->n_gpus];

	memset(g, 0, sizeof(*g));
	g->index = s->n_gpus++;
	g->memory_total_bytes = HW_UNKNOWN;
	g->memory_free_bytes = HW_UNKNOWN;
	g->memory_used_bytes = HW_UNKNOWN;
	g->memory_gtt_bytes = HW_UNKNOWN;
	g->max_memory_clock_mhz = HW_UNKNOWN;
	return g;
}

static bool has_warning(const struct hw_snapshot *s, const char *needle)
{
	for (int i = 0; i < s->n_warnings; i++)
		if (strstr(s->warnings[i], needle))
			return true;
	return false;
}

START_TEST(vega_listing_values)
{
	size_t len;
	char *f;
	struct hw_drm_card c;

	ck_assert_uint_eq(vega_hex("vendor"), 0x1002);
	ck_assert_uint_eq(vega_hex("device"), 0x687f);
	ck_assert_uint_eq(vega_hex("subsystem_vendor"), 0x1043);
	ck_assert_uint_eq(vega_hex("subsystem_device"), 0x04c4);
	ck_assert_int_eq(vega_u64("mem_info_vram_total"), 8573157376);
	ck_assert_int_eq(vega_u64("mem_info_vram_used"), 1490378752);
	ck_assert_int_eq(vega_u64("mem_info_gtt_total"), 8573157376);
	ck_assert_int_eq(vega_u64("mem_info_gtt_used"), 144560128);
	f = vega("pp_dpm_mclk", &len);
	ck_assert_int_eq(hw_parse_amd_dpm_max_mhz(f, len), 945);
	free(f);
	f = vega("pp_dpm_sclk", &len);
	ck_assert_int_eq(hw_parse_amd_dpm_max_mhz(f, len), 1630);
	free(f);
	hw_drm_card_init(&c);
	f = vega("uevent", &len);
	ck_assert_int_eq(hw_parse_drm_uevent(f, len, &c), 0);
	free(f);
	ck_assert_str_eq(c.driver, "amdgpu");
	ck_assert_str_eq(c.pci_slot, "0000:09:00.0");
	ck_assert_uint_eq(c.vendor_id, 0x1002);
	ck_assert_uint_eq(c.device_id, 0x687f);
	/* product_name is empty on this consumer card: only a newline. */
	f = vega("product_name", &len);
	ck_assert_str_eq(f, "\n");
	free(f);
}
END_TEST

START_TEST(vega_becomes_a_discrete_gpu)
{
	static struct hw_snapshot s;
	struct hw_drm_card c;
	struct hw_gpu *g;

	hw_snapshot_init(&s);
	vega_card(&c);
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &s.memory, &s, g);
	ck_assert_str_eq(g->vendor, "amd");
	ck_assert_str_eq(g->name, "AMD Radeon RX Vega 56/64");
	ck_assert_str_eq(g->pci_device_id, "0x687f");
	ck_assert_str_eq(g->pci_bus_id, "0000:09:00.0");
	ck_assert_str_eq(g->uuid, "GPU-0123456789abcdef");
	ck_assert(!g->unified_memory);
	ck_assert_int_eq(g->memory_total_bytes, 8573157376);
	ck_assert_int_eq(g->memory_used_bytes, 1490378752);
	ck_assert_int_eq(g->memory_free_bytes, 8573157376 - 1490378752);
	ck_assert_int_eq(g->memory_gtt_bytes, 8573157376);
	ck_assert_int_eq(g->max_memory_clock_mhz, 945);
	ck_assert_str_eq(g->architecture, "");
	ck_assert_int_eq(s.n_warnings, 0);
}
END_TEST

START_TEST(sysfs_hex_edges)
{
	uint32_t v = 7;

	ck_assert_int_eq(hw_parse_sysfs_hex("0x1002\n", 7, 0xffff, &v), 0);
	ck_assert_uint_eq(v, 0x1002);
	ck_assert_int_eq(hw_parse_sysfs_hex(" 0X10DE \r\n", 10, 0xffff, &v), 0);
	ck_assert_uint_eq(v, 0x10de);
	ck_assert_int_eq(hw_parse_sysfs_hex("8086", 4, 0xffff, &v), 0);
	ck_assert_uint_eq(v, 0x8086);
	v = 7;
	ck_assert_int_eq(hw_parse_sysfs_hex("0x", 2, 0xffff, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysfs_hex("", 0, 0xffff, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysfs_hex(NULL, 0, 0xffff, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysfs_hex("0x10g2", 6, 0xffff, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysfs_hex("-0x1", 4, 0xffff, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysfs_hex("0x10000", 7, 0xffff, &v), RF_E_RANGE);
	ck_assert_int_eq(hw_parse_sysfs_hex("0x100000000000000001", 20, 0xffffffff, &v),
			 RF_E_RANGE);
	ck_assert_int_eq(hw_parse_sysfs_hex("0x10 02", 7, 0xffff, &v), RF_E_PARSE);
	/* Only len bytes are read: the rest of the buffer is not part of the value. */
	ck_assert_int_eq(hw_parse_sysfs_hex("0x1002zzz", 6, 0xffff, &v), 0);
	ck_assert_uint_eq(v, 0x1002);
}
END_TEST

START_TEST(sysfs_u64_edges)
{
	uint64_t v = 7;

	ck_assert_int_eq(hw_parse_sysfs_u64("8573157376\n", 11, HW_GPU_MEM_MAX, &v), 0);
	ck_assert_uint_eq(v, 8573157376u);
	ck_assert_int_eq(hw_parse_sysfs_u64("0\r\n", 3, HW_GPU_MEM_MAX, &v), 0);
	ck_assert_uint_eq(v, 0);
	v = 7;
	ck_assert_int_eq(hw_parse_sysfs_u64("-1\n", 3, HW_GPU_MEM_MAX, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysfs_u64("12 34", 5, HW_GPU_MEM_MAX, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysfs_u64("\n", 1, HW_GPU_MEM_MAX, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysfs_u64("0x10", 4, HW_GPU_MEM_MAX, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_sysfs_u64("18446744073709551616", 20, UINT64_MAX, &v),
			 RF_E_RANGE);
	ck_assert_int_eq(hw_parse_sysfs_u64("1125899906842625", 16, HW_GPU_MEM_MAX, &v),
			 RF_E_RANGE);
	ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(uevent_edges)
{
	struct hw_drm_card c;
	const char *crlf = "DRIVER=i915\r\nPCI_CLASS=30000\r\nPCI_ID=8086:5917\r\n"
			   "PCI_SLOT_NAME=0000:00:02.0\r\n";
	const char *junk = "no equals here\n=\nDRIVER=\nPCI_ID=zz:yy\n";

	hw_drm_card_init(&c);
	ck_assert_int_eq(hw_parse_drm_uevent(crlf, strlen(crlf), &c), 0);
	ck_assert_str_eq(c.driver, "i915");
	ck_assert_str_eq(c.pci_slot, "0000:00:02.0");
	ck_assert_uint_eq(c.vendor_id, 0x8086);
	ck_assert_uint_eq(c.device_id, 0x5917);
	hw_drm_card_init(&c);
	ck_assert_int_eq(hw_parse_drm_uevent(junk, strlen(junk), &c), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_drm_uevent("", 0, &c), RF_E_PARSE);
	ck_assert_str_eq(c.driver, "");
	ck_assert_uint_eq(c.vendor_id, 0);
	/* A vendor already read from device/vendor is kept. */
	c.vendor_id = 0x1002;
	ck_assert_int_eq(hw_parse_drm_uevent("PCI_ID=8086:1234", 16, &c), 0);
	ck_assert_uint_eq(c.vendor_id, 0x1002);
	ck_assert_uint_eq(c.device_id, 0x1234);
}
END_TEST

START_TEST(dpm_edges)
{
	const char *s = "S: 30Mhz *\n0: 889Mhz\n1: 1000MHz\n2: 1143Mhz\n";

	ck_assert_int_eq(hw_parse_amd_dpm_max_mhz(s, strlen(s)), 1143);
	ck_assert_int_eq(hw_parse_amd_dpm_max_mhz("", 0), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_amd_dpm_max_mhz("junk\n0: fast\n", 13), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_amd_dpm_max_mhz("0: 99999999999Mhz\n1: 500Mhz\n", 28), 500);
	ck_assert_int_eq(hw_parse_amd_dpm_max_mhz("0: 500\n", 7), RF_E_PARSE);
}
END_TEST

/* One GPU node and the first CPU node of the MI300A dump (see the file comment). */
static const char mi300a_gpu_node[] = "cpu_cores_count 0\n"
				      "simd_count 912\n"
				      "mem_banks_count 1\n"
				      "caches_count 470\n"
				      "io_links_count 4\n"
				      "p2p_links_count 3\n"
				      "cpu_core_id_base 0\n"
				      "simd_id_base 2147487784\n"
				      "max_waves_per_simd 8\n"
				      "lds_size_in_kb 64\n"
				      "gds_size_in_kb 0\n"
				      "num_gws 64\n"
				      "wave_front_size 64\n"
				      "array_count 24\n"
				      "simd_arrays_per_engine 1\n"
				      "cu_per_simd_array 10\n"
				      "simd_per_cu 4\n"
				      "max_slots_scratch_cu 32\n"
				      "gfx_target_version 90402\n"
				      "vendor_id 4098\n"
				      "device_id 29856\n"
				      "location_id 512\n"
				      "domain 1\n"
				      "drm_render_minor 136\n"
				      "hive_id 9034655720432782706\n"
				      "num_sdma_engines 2\n"
				      "num_sdma_xgmi_engines 10\n"
				      "num_sdma_queues_per_engine 8\n"
				      "num_cp_queues 24\n"
				      "max_engine_clk_fcompute 2100\n"
				      "local_mem_size 0\n"
				      "fw_version 138\n"
				      "capability 1013424768\n"
				      "debug_prop 1511\n"
				      "sdma_fw_version 19\n"
				      "unique_id 11940228331418201223\n"
				      "num_xcc 6\n"
				      "max_engine_clk_ccompute 3700\n";

static const char mi300a_cpu_node[] = "cpu_cores_count 48\n"
				      "simd_count 0\n"
				      "mem_banks_count 1\n"
				      "caches_count 0\n"
				      "io_links_count 4\n"
				      "p2p_links_count 3\n"
				      "cpu_core_id_base 0\n"
				      "simd_id_base 0\n"
				      "gfx_target_version 0\n"
				      "vendor_id 0\n"
				      "device_id 0\n"
				      "location_id 0\n"
				      "domain 0\n"
				      "drm_render_minor 0\n"
				      "hive_id 9034655720432782706\n"
				      "max_engine_clk_ccompute 3700\n";

START_TEST(kfd_properties_real_nodes)
{
	struct hw_kfd_node n;
	char arch[16];

	hw_kfd_node_init(&n);
	ck_assert_int_eq(hw_parse_kfd_properties(mi300a_gpu_node, strlen(mi300a_gpu_node), &n), 0);
	ck_assert_int_eq(n.gfx_target_version, 90402);
	ck_assert_int_eq(n.cpu_cores_count, 0);
	ck_assert_int_eq(n.simd_count, 912);
	ck_assert_int_eq(n.vendor_id, 0x1002);
	ck_assert_int_eq(n.device_id, 0x74a0);
	ck_assert_int_eq(n.location_id, 512);
	ck_assert_int_eq(n.domain, 1);
	ck_assert_int_eq(n.drm_render_minor, 136);
	ck_assert_int_eq(n.num_xcc, 6);
	ck_assert_int_eq(hw_amd_gfx_arch(n.gfx_target_version, arch, sizeof(arch)), 0);
	ck_assert_str_eq(arch, "gfx942");
	ck_assert_int_eq(hw_parse_kfd_properties(mi300a_cpu_node, strlen(mi300a_cpu_node), &n), 0);
	ck_assert_int_eq(n.gfx_target_version, 0);
	ck_assert_int_eq(n.cpu_cores_count, 48);
	ck_assert_int_eq(n.num_xcc, HW_UNKNOWN);
	ck_assert_int_eq(hw_amd_gfx_arch(n.gfx_target_version, arch, sizeof(arch)), RF_E_RANGE);
}
END_TEST

START_TEST(kfd_properties_edges)
{
	struct hw_kfd_node n;
	const char *crlf = "gfx_target_version 100300\r\nvendor_id\t4098\r\n";
	const char *dup = "device_id 29631\ndevice_id 5710\n";
	const char *overflow = "gfx_target_version 99999999999999999999\nsimd_count x\n";

	hw_kfd_node_init(&n);
	ck_assert_int_eq(hw_parse_kfd_properties(crlf, strlen(crlf), &n), 0);
	ck_assert_int_eq(n.gfx_target_version, 100300);
	ck_assert_int_eq(n.vendor_id, 4098);
	ck_assert_int_eq(hw_parse_kfd_properties(dup, strlen(dup), &n), 0);
	ck_assert_int_eq(n.device_id, 29631);
	ck_assert_int_eq(n.gfx_target_version, HW_UNKNOWN);
	/* Nothing usable: the node is left as it was. */
	n.device_id = 42;
	ck_assert_int_eq(hw_parse_kfd_properties(overflow, strlen(overflow), &n), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_kfd_properties("", 0, &n), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_kfd_properties("\n\n\n", 3, &n), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_kfd_properties("gfx_target_version", 18, &n), RF_E_PARSE);
	ck_assert_int_eq(n.device_id, 42);
}
END_TEST

START_TEST(gfx_arch_names)
{
	static const struct {
		int64_t v;
		const char *arch;
	} ok[] = {{90010, "gfx90a"},   {100300, "gfx1030"}, {90402, "gfx942"},
		  {110000, "gfx1100"}, {120001, "gfx1201"}, {90008, "gfx908"},
		  {110501, "gfx1151"}, {100306, "gfx1036"}, {90006, "gfx906"}};
	char arch[16] = "";

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_int_eq(hw_amd_gfx_arch(ok[i].v, arch, sizeof(arch)), 0);
		ck_assert_str_eq(arch, ok[i].arch);
	}
	ck_assert_int_eq(hw_amd_gfx_arch(0, arch, sizeof(arch)), RF_E_RANGE);
	ck_assert_int_eq(hw_amd_gfx_arch(-5, arch, sizeof(arch)), RF_E_RANGE);
	ck_assert_int_eq(hw_amd_gfx_arch(110099, arch, sizeof(arch)), RF_E_RANGE);
	ck_assert_int_eq(hw_amd_gfx_arch(91600, arch, sizeof(arch)), RF_E_RANGE);
	ck_assert_int_eq(hw_amd_gfx_arch(1000000, arch, sizeof(arch)), RF_E_RANGE);
	ck_assert_int_eq(hw_amd_gfx_arch(99, arch, sizeof(arch)), RF_E_RANGE);
	ck_assert_str_eq(arch, "gfx906");
}
END_TEST

START_TEST(pci_slot_locations)
{
	int64_t dom = -9, loc = -9;

	ck_assert_int_eq(hw_pci_slot_location("0000:09:00.0", &dom, &loc), 0);
	ck_assert_int_eq(dom, 0);
	ck_assert_int_eq(loc, 0x900);
	ck_assert_int_eq(hw_pci_slot_location("0001:02:00.0", &dom, &loc), 0);
	ck_assert_int_eq(dom, 1);
	ck_assert_int_eq(loc, 512);
	ck_assert_int_eq(hw_pci_slot_location("10000:e1:1f.7", &dom, &loc), 0);
	ck_assert_int_eq(dom, 0x10000);
	ck_assert_int_eq(loc, 0xe1 << 8 | 0x1f << 3 | 7);
	ck_assert_int_eq(hw_pci_slot_location("09:00.0", &dom, &loc), RF_E_PARSE);
	ck_assert_int_eq(hw_pci_slot_location("0000:09:20.0", &dom, &loc), RF_E_PARSE);
	ck_assert_int_eq(hw_pci_slot_location("0000:09:00.8", &dom, &loc), RF_E_PARSE);
	ck_assert_int_eq(hw_pci_slot_location("0000:109:00.0", &dom, &loc), RF_E_PARSE);
	ck_assert_int_eq(hw_pci_slot_location("", &dom, &loc), RF_E_PARSE);
	ck_assert_int_eq(hw_pci_slot_location(NULL, &dom, &loc), RF_E_PARSE);
	ck_assert_int_eq(dom, 0x10000);
}
END_TEST

START_TEST(kfd_match_by_address_minor_and_id)
{
	struct hw_kfd_node nodes[5];
	struct hw_drm_card c;

	/* The MI300A dump: one CPU node, then four GPUs at location 512 in domains 0-3. */
	hw_kfd_node_init(&nodes[0]);
	ck_assert_int_eq(
		hw_parse_kfd_properties(mi300a_cpu_node, strlen(mi300a_cpu_node), &nodes[0]), 0);
	for (int i = 1; i < 5; i++) {
		hw_kfd_node_init(&nodes[i]);
		ck_assert_int_eq(hw_parse_kfd_properties(mi300a_gpu_node, strlen(mi300a_gpu_node),
							 &nodes[i]),
				 0);
		nodes[i].domain = i - 1;
		nodes[i].drm_render_minor = 128 + 8 * (i - 1);
	}
	hw_drm_card_init(&c);
	c.vendor_id = 0x1002;
	c.device_id = 0x74a0;
	hw_strlcpy(c.pci_slot, "0002:02:00.0", sizeof(c.pci_slot));
	ck_assert_int_eq(hw_kfd_match(&c, nodes, 5, false), 3);
	c.pci_slot[0] = '\0';
	c.render_minor = 152;
	ck_assert_int_eq(hw_kfd_match(&c, nodes, 5, false), 4);
	c.render_minor = HW_UNKNOWN;
	/* Four nodes share the id: no guess. */
	ck_assert_int_eq(hw_kfd_match(&c, nodes, 5, true), -1);
	ck_assert_int_eq(hw_kfd_match(&c, nodes, 2, true), 1);
	ck_assert_int_eq(hw_kfd_match(&c, nodes, 2, false), -1);
	/* The CPU node never matches, even at "location 0, minor 0". */
	hw_strlcpy(c.pci_slot, "0000:00:00.0", sizeof(c.pci_slot));
	c.render_minor = 0;
	ck_assert_int_eq(hw_kfd_match(&c, nodes, 1, true), -1);
	ck_assert_int_eq(hw_kfd_match(&c, NULL, 0, true), -1);
}
END_TEST

START_TEST(name_tables)
{
	bool flag = false;

	ck_assert_str_eq(hw_amd_device_name(0x740f, &flag), "AMD Instinct MI210");
	ck_assert(!flag);
	ck_assert_str_eq(hw_amd_device_name(0x74a0, &flag), "AMD Instinct MI300A");
	ck_assert(flag);
	ck_assert_str_eq(hw_amd_device_name(0x74a1, NULL), "AMD Instinct MI300X");
	ck_assert_str_eq(hw_amd_device_name(0x738c, NULL), "AMD Instinct MI100");
	ck_assert_str_eq(hw_amd_device_name(0x73bf, NULL), "AMD Radeon RX 6800/6800 XT/6900 XT");
	ck_assert_str_eq(hw_amd_device_name(0x164e, &flag), "AMD Radeon Graphics (Raphael)");
	ck_assert(flag);
	ck_assert_ptr_null(hw_amd_device_name(0x1234, NULL));
	ck_assert_ptr_null(hw_amd_device_name(0, NULL));
	ck_assert_str_eq(hw_intel_device_name(0x56a0, &flag), "Intel Arc A770");
	ck_assert(flag);
	ck_assert_str_eq(hw_intel_device_name(0x5917, &flag), "Intel UHD Graphics 620");
	ck_assert(!flag);
	ck_assert_ptr_null(hw_intel_device_name(0xabcd, NULL));
}
END_TEST

START_TEST(unknown_id_is_named_honestly)
{
	static struct hw_snapshot s;
	struct hw_drm_card c;
	struct hw_gpu *g;

	hw_snapshot_init(&s);
	hw_drm_card_init(&c);
	c.vendor_id = 0x1002;
	c.device_id = 0x1234;
	c.vram_total = 16 * GIB;
	c.vram_used = 17 * GIB; /* a driver bug: used above total */
	c.gtt_total = 32 * GIB;
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &s.memory, &s, g);
	ck_assert_str_eq(g->name, "AMD GPU 0x1234");
	ck_assert(!g->unified_memory);
	ck_assert_int_eq(g->memory_total_bytes, 16 * GIB);
	ck_assert_int_eq(g->memory_used_bytes, 16 * GIB);
	ck_assert_int_eq(g->memory_free_bytes, 0);
	/* A board name from the FRU wins over the table. */
	hw_strlcpy(c.product_name, "AMD Instinct MI210", sizeof(c.product_name));
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &s.memory, &s, g);
	ck_assert_str_eq(g->name, "AMD Instinct MI210");
}
END_TEST

START_TEST(apu_memory_rule)
{
	static struct hw_snapshot s;
	struct hw_memory ram = {.total_bytes = 32 * GIB, .available_bytes = 20 * GIB};
	struct hw_drm_card c;
	struct hw_gpu *g;

	/* Raphael (the iGPU of amd-rx6800xt-plus-raphael-igpu: 64 MiB carve-out), with a GTT
	 * larger than RAM allows: host memory is counted at most once. */
	hw_snapshot_init(&s);
	hw_drm_card_init(&c);
	c.vendor_id = 0x1002;
	c.device_id = 0x164e;
	c.vram_total = 67108864;
	c.vram_used = 26079232;
	c.gtt_total = 48 * GIB;
	c.gtt_used = 1 * GIB;
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &ram, &s, g);
	ck_assert(g->unified_memory);
	ck_assert_int_eq(g->memory_total_bytes, 67108864 + 32 * GIB);
	ck_assert_int_eq(g->memory_used_bytes, 26079232 + 1 * GIB);
	ck_assert_int_eq(g->memory_free_bytes, 67108864 - 26079232 + 20 * GIB);
	ck_assert_int_eq(g->memory_gtt_bytes, 48 * GIB);

	/* A GTT smaller than RAM is what the GPU may map. */
	c.gtt_total = 16 * GIB;
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &ram, &s, g);
	ck_assert_int_eq(g->memory_total_bytes, 67108864 + 16 * GIB);
	ck_assert_int_eq(g->memory_free_bytes, 67108864 - 26079232 + 15 * GIB);

	/* Rembrandt's 512 MiB carve-out (amd-radeon-680m capture) without a GTT size. */
	c.device_id = 0x1681;
	c.vram_total = 536870912;
	c.vram_used = 445550592;
	c.gtt_total = HW_UNKNOWN;
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &ram, &s, g);
	ck_assert(g->unified_memory);
	ck_assert_int_eq(g->memory_total_bytes, 536870912);
	ck_assert_int_eq(g->memory_free_bytes, 536870912 - 445550592);
	ck_assert(has_warning(&s, "integrated GPU without a readable GTT size"));

	/* MI300A: a known APU whatever the size of its carve-out. */
	c.device_id = 0x74a0;
	c.vram_total = 64289 * MIB;
	c.vram_used = HW_UNKNOWN;
	c.gtt_total = 64 * GIB;
	c.gtt_used = HW_UNKNOWN;
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, NULL, &s, g);
	ck_assert(g->unified_memory);
	ck_assert_int_eq(g->memory_total_bytes, 64289 * MIB + 64 * GIB);
	ck_assert_int_eq(g->memory_free_bytes, HW_UNKNOWN);
	ck_assert_int_eq(g->memory_used_bytes, HW_UNKNOWN);
	ck_assert(has_warning(&s, "host memory unknown"));
}
END_TEST

START_TEST(apu_heuristic_for_unknown_ids)
{
	static struct hw_snapshot s;
	struct hw_memory ram = {.total_bytes = 16 * GIB, .available_bytes = HW_UNKNOWN};
	struct hw_kfd_node kfd;
	struct hw_drm_card c;
	struct hw_gpu *g;

	hw_snapshot_init(&s);
	hw_drm_card_init(&c);
	c.vendor_id = 0x1002;
	c.device_id = 0x9999;
	c.vram_total = 512 * MIB;
	c.gtt_total = 8 * GIB;
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &ram, &s, g);
	ck_assert(g->unified_memory);
	ck_assert_int_eq(g->memory_total_bytes, 512 * MIB + 8 * GIB);
	ck_assert_int_eq(g->memory_free_bytes, HW_UNKNOWN);

	/* 1 GiB of VRAM is a small discrete card, not a carve-out. */
	c.vram_total = 1 * GIB;
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &ram, &s, g);
	ck_assert(!g->unified_memory);
	ck_assert_int_eq(g->memory_total_bytes, 1 * GIB);

	/* A combined CPU+GPU KFD agent is an APU; its gfx target names the architecture. */
	hw_kfd_node_init(&kfd);
	kfd.cpu_cores_count = 4;
	kfd.gfx_target_version = 80001;
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, &kfd, &ram, &s, g);
	ck_assert(g->unified_memory);
	ck_assert_str_eq(g->architecture, "gfx801");

	/* A known discrete id stays discrete even with a tiny VRAM reading. */
	c.device_id = 0x73bf;
	c.vram_total = 256 * MIB;
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, &kfd, &ram, &s, g);
	ck_assert(!g->unified_memory);
}
END_TEST

START_TEST(amd_memory_unknown)
{
	static struct hw_snapshot s;
	struct hw_drm_card c;
	struct hw_gpu *g;

	hw_snapshot_init(&s);
	hw_drm_card_init(&c);
	c.vendor_id = 0x1002;
	c.device_id = 0x740f;
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &s.memory, &s, g);
	ck_assert_str_eq(g->name, "AMD Instinct MI210");
	ck_assert_int_eq(g->memory_total_bytes, HW_UNKNOWN);
	ck_assert_int_eq(g->memory_free_bytes, HW_UNKNOWN);
	ck_assert(has_warning(&s, "memory size unknown"));
	ck_assert_str_eq(g->uuid, "");
	/* Junk and all-zero unique ids are not identities. */
	hw_strlcpy(c.unique_id, "0000000000000000", sizeof(c.unique_id));
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &s.memory, &s, g);
	ck_assert_str_eq(g->uuid, "");
	hw_strlcpy(c.unique_id, "N/A", sizeof(c.unique_id));
	g = new_gpu(&s);
	hw_amd_fill_gpu(&c, NULL, &s.memory, &s, g);
	ck_assert_str_eq(g->uuid, "");
}
END_TEST

START_TEST(intel_cards)
{
	static struct hw_snapshot s;
	struct hw_drm_card c;
	struct hw_gpu *g;

	hw_snapshot_init(&s);
	hw_drm_card_init(&c);
	c.vendor_id = 0x8086;
	c.device_id = 0x5917;
	hw_strlcpy(c.driver, "i915", sizeof(c.driver));
	hw_strlcpy(c.pci_slot, "0000:00:02.0", sizeof(c.pci_slot));
	g = new_gpu(&s);
	hw_intel_fill_gpu(&c, &s, g);
	ck_assert_str_eq(g->vendor, "intel");
	ck_assert_str_eq(g->name, "Intel UHD Graphics 620");
	ck_assert(g->unified_memory);
	ck_assert_int_eq(g->memory_total_bytes, HW_UNKNOWN);
	ck_assert(has_warning(&s, "integrated GPU sharing host memory"));

	/* Arc A770 on the out-of-tree i915 that reports lmem_total_bytes. */
	c.device_id = 0x56a0;
	hw_strlcpy(c.pci_slot, "0000:03:00.0", sizeof(c.pci_slot));
	c.local_mem_total = 16 * GIB;
	g = new_gpu(&s);
	hw_intel_fill_gpu(&c, &s, g);
	ck_assert_str_eq(g->name, "Intel Arc A770");
	ck_assert(!g->unified_memory);
	ck_assert_int_eq(g->memory_total_bytes, 16 * GIB);
	ck_assert_str_eq(g->pci_device_id, "0x56a0");

	/* Mainline i915 reports no local memory: unknown, never guessed. */
	c.local_mem_total = HW_UNKNOWN;
	g = new_gpu(&s);
	hw_intel_fill_gpu(&c, &s, g);
	ck_assert(!g->unified_memory);
	ck_assert_int_eq(g->memory_total_bytes, HW_UNKNOWN);
	ck_assert(has_warning(&s, "does not report this card's memory"));

	/* Unknown ids: the slot tells an iGPU from a card. */
	c.device_id = 0xabcd;
	g = new_gpu(&s);
	hw_intel_fill_gpu(&c, &s, g);
	ck_assert_str_eq(g->name, "Intel GPU 0xabcd");
	ck_assert(!g->unified_memory);
	hw_strlcpy(c.pci_slot, "0000:00:02.0", sizeof(c.pci_slot));
	g = new_gpu(&s);
	hw_intel_fill_gpu(&c, &s, g);
	ck_assert(g->unified_memory);
}
END_TEST

Suite *hw_parse_amd_suite(void)
{
	Suite *s = suite_create("hw_parse_amd");
	TCase *tc = tcase_create("amdgpu");

	tcase_add_test(tc, vega_listing_values);
	tcase_add_test(tc, vega_becomes_a_discrete_gpu);
	tcase_add_test(tc, sysfs_hex_edges);
	tcase_add_test(tc, sysfs_u64_edges);
	tcase_add_test(tc, uevent_edges);
	tcase_add_test(tc, dpm_edges);
	tcase_add_test(tc, kfd_properties_real_nodes);
	tcase_add_test(tc, kfd_properties_edges);
	tcase_add_test(tc, gfx_arch_names);
	tcase_add_test(tc, pci_slot_locations);
	tcase_add_test(tc, kfd_match_by_address_minor_and_id);
	tcase_add_test(tc, name_tables);
	tcase_add_test(tc, unknown_id_is_named_honestly);
	tcase_add_test(tc, apu_memory_rule);
	tcase_add_test(tc, apu_heuristic_for_unknown_ids);
	tcase_add_test(tc, amd_memory_unknown);
	tcase_add_test(tc, intel_cards);
	suite_add_tcase(s, tc);
	return s;
}
