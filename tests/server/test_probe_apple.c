/*
 * The GPU probes outside NVIDIA, end to end through rf_detect_scan: Apple Silicon through a
 * `sysctl` program (scripts that print the real captures of tests/data/fixtures, fail, print
 * junk or hang), and the AMD/Intel sysfs probe on small trees built here for what recorded
 * machines do not show: duplicate cards, connectors and render nodes, partition cards without
 * a PCI vendor, other vendors and drivers, and the caps on cards and GPUs.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/detect/detect.h"
#include "tests/test.h"

#define GIB (INT64_C(1) << 30)

/* Creates every directory of path (relative to root) except the last component. */
static void mkparents(const char *root, const char *rel)
{
	char path[1024];
	int n = snprintf(path, sizeof(path), "%s/%s", root, rel);

	ck_assert(n > 0 && (size_t)n < sizeof(path));
	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		ck_assert_msg(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s", path);
		*p = '/';
	}
}

static void put(const char *root, const char *rel, const char *content)
{
	char *path = t_path(root, rel);

	mkparents(root, rel);
	ck_assert_int_eq(t_write_file(path, content, strlen(content)), 0);
	free(path);
}

static void link_to(const char *root, const char *rel, const char *target)
{
	char *path = t_path(root, rel);

	mkparents(root, rel);
	ck_assert_msg(symlink(target, path) == 0, "symlink %s", path);
	free(path);
}

static char *script(const char *dir, const char *body)
{
	char *path = t_path(dir, "sysctl");
	char text[2048];
	int n = snprintf(text, sizeof(text), "#!/bin/sh\n%s\n", body);

	ck_assert(n > 0 && (size_t)n < sizeof(text));
	ck_assert_int_eq(t_write_file(path, text, (size_t)n), 0);
	ck_assert_int_eq(chmod(path, 0755), 0);
	return path;
}

static char *fixture_path(const char *name)
{
	char *dir = t_path(t_data_dir(), "fixtures");
	char *path = t_path(dir, name);

	free(dir);
	return path;
}

static bool has_warning(const struct hw_snapshot *s, const char *needle)
{
	for (int i = 0; i < s->n_warnings; i++)
		if (strstr(s->warnings[i], needle))
			return true;
	return false;
}

/* Scans an empty root with the given sysctl program. */
static struct hw_snapshot *scan_with_sysctl(const char *root, const char *prog, int timeout_ms)
{
	struct hw_snapshot *s = malloc(sizeof(*s));
	struct rf_detect_opts o = {.root = root, .sysctl = prog, .probe_timeout_ms = timeout_ms};

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	return s;
}

START_TEST(apple_m3_max_through_a_script)
{
	char *dir = t_mkdtemp(),
	     *fx = fixture_path("apple-m3-max-macos15__sysctl-a-hw-machdep.txt");
	char body[1024], *prog;
	struct hw_snapshot *s;

	snprintf(body, sizeof(body), "cat '%s'", fx);
	prog = script(dir, body);
	s = scan_with_sysctl(dir, prog, 0);
	ck_assert_int_eq(s->n_gpus, 1);
	ck_assert_str_eq(s->gpus[0].vendor, "apple");
	ck_assert_str_eq(s->gpus[0].name, "Apple M3 Max GPU");
	ck_assert(s->gpus[0].unified_memory);
	ck_assert_int_eq(s->gpus[0].memory_total_bytes, 28991029248);
	ck_assert_str_eq(s->platform, "apple_silicon");
	ck_assert_str_eq(s->backend, "metal");
	ck_assert_str_eq(s->compute_profile, "high_end");
	ck_assert_str_eq(s->sources.cpu, "sysctl");
	ck_assert_str_eq(s->sources.memory, "sysctl");
	ck_assert_str_eq(s->sources.gpu, "sysctl");
	ck_assert_str_eq(s->host.soc, "Apple M3 Max");
	ck_assert_int_eq(s->cpu.performance_cores, 10);
	ck_assert_int_eq(s->cpu.efficiency_cores, 4);
	ck_assert_int_eq(s->memory.total_bytes, 38654705664);
	free(s);
	free(prog);
	free(fx);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(apple_wired_limit_overrides)
{
	char *dir = t_mkdtemp(),
	     *fx = fixture_path("apple-m3-max-macos15__sysctl-a-hw-machdep.txt");
	char body[1024], *prog;
	struct hw_snapshot *s;

	snprintf(body, sizeof(body), "cat '%s'; echo 'iogpu.wired_limit_mb: 32768'", fx);
	prog = script(dir, body);
	s = scan_with_sysctl(dir, prog, 0);
	ck_assert_int_eq(s->n_gpus, 1);
	ck_assert_int_eq(s->gpus[0].memory_total_bytes, 32 * GIB);
	free(s);
	free(prog);
	free(fx);
	t_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(apple_failures_are_warnings)
{
	char *dir = t_mkdtemp(), *missing = t_path(dir, "no-such-sysctl"), *prog;
	struct hw_snapshot *s;

	s = scan_with_sysctl(dir, missing, 0);
	ck_assert_int_eq(s->n_gpus, 0);
	ck_assert(has_warning(s, "sysctl: cannot run"));
	ck_assert_str_eq(s->platform, "cpu");
	free(s);

	prog = script(dir, "echo 'not sysctl output'; exit 3");
	s = scan_with_sysctl(dir, prog, 0);
	ck_assert_int_eq(s->n_gpus, 0);
	ck_assert(has_warning(s, "printed no known key (exit status 3)"));
	free(s);
	free(prog);

	prog = script(dir, "echo 'hw.memsize: 17179869184'; exec sleep 5");
	s = scan_with_sysctl(dir, prog, 300);
	ck_assert(has_warning(s, "did not finish"));
	free(s);
	free(prog);
	free(missing);
	t_rmtree(dir);
	free(dir);
}
END_TEST

/* An amdgpu device directory with the files probe_amd.c reads. */
static void amd_device(const char *root, const char *dev, const char *id, const char *slot,
		       const char *driver, const char *vram)
{
	char rel[512], text[256];

	snprintf(rel, sizeof(rel), "%s/vendor", dev);
	put(root, rel, "0x1002\n");
	snprintf(rel, sizeof(rel), "%s/device", dev);
	snprintf(text, sizeof(text), "%s\n", id);
	put(root, rel, text);
	snprintf(rel, sizeof(rel), "%s/uevent", dev);
	snprintf(text, sizeof(text), "DRIVER=%s\nPCI_SLOT_NAME=%s\n", driver, slot);
	put(root, rel, text);
	snprintf(rel, sizeof(rel), "%s/mem_info_vram_total", dev);
	snprintf(text, sizeof(text), "%s\n", vram);
	put(root, rel, text);
	snprintf(rel, sizeof(rel), "%s/mem_info_vram_used", dev);
	put(root, rel, "10485760\n");
}

START_TEST(amd_and_intel_sysfs_tree)
{
	char *root = t_mkdtemp();
	struct hw_snapshot *s = malloc(sizeof(*s));
	struct rf_detect_opts o = {.root = root};
	const char *mi210 = "sys/devices/pci0000:00/0000:03:00.0";

	amd_device(root, mi210, "0x740f", "0000:03:00.0", "amdgpu", "68702699520");
	put(root, "sys/devices/pci0000:00/0000:03:00.0/drm/renderD128/uevent", "MINOR=128\n");
	put(root, "sys/devices/pci0000:00/0000:03:00.0/drm/card0/uevent", "MINOR=0\n");
	link_to(root, "sys/devices/pci0000:00/0000:03:00.0/drm/card0/device",
		"../../../0000:03:00.0");
	link_to(root, "sys/class/drm/card0", "../../devices/pci0000:00/0000:03:00.0/drm/card0");
	/* A second minor of the same PCI device, a connector and a render node. */
	link_to(root, "sys/class/drm/card1/device", "../../../devices/pci0000:00/0000:03:00.0");
	link_to(root, "sys/class/drm/card0-DP-1/device",
		"../../../devices/pci0000:00/0000:03:00.0");
	link_to(root, "sys/class/drm/renderD128/device",
		"../../../devices/pci0000:00/0000:03:00.0");
	/* A compute-partition card: a platform device with no PCI vendor. */
	put(root, "sys/class/drm/card2/device/uevent", "DRIVER=amdgpu_xcp_drv\n");
	/* Another vendor, an old driver, and a vendor file of junk. */
	put(root, "sys/class/drm/card3/device/vendor", "0x10de\n");
	amd_device(root, "sys/class/drm/card4/device", "0x6798", "0000:05:00.0", "radeon",
		   "3221225472");
	put(root, "sys/class/drm/card5/device/vendor", "vendor?\n");
	/* An Intel iGPU on i915, and one bound to vfio-pci (not ours to report). */
	put(root, "sys/class/drm/card6/device/vendor", "0x8086\n");
	put(root, "sys/class/drm/card6/device/device", "0x9a49\n");
	put(root, "sys/class/drm/card6/device/uevent", "DRIVER=i915\nPCI_SLOT_NAME=0000:00:02.0\n");
	put(root, "sys/class/drm/card7/device/vendor", "0x8086\n");
	put(root, "sys/class/drm/card7/device/uevent", "DRIVER=vfio-pci\n");
	/* KFD: the CPU, then the MI210 (gfx90a) at bus 3. */
	put(root, "sys/class/kfd/kfd/topology/nodes/0/properties",
	    "cpu_cores_count 16\ngfx_target_version 0\nlocation_id 0\ndomain 0\n");
	put(root, "sys/class/kfd/kfd/topology/nodes/1/properties",
	    "cpu_cores_count 0\nsimd_count 416\ngfx_target_version 90010\nvendor_id 4098\n"
	    "device_id 29711\nlocation_id 768\ndomain 0\ndrm_render_minor 128\n");
	put(root, "sys/class/kfd/kfd/topology/nodes/junk/properties", "gfx_target_version 1\n");

	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	ck_assert_int_eq(s->n_gpus, 2);
	ck_assert_str_eq(s->gpus[0].vendor, "amd");
	ck_assert_str_eq(s->gpus[0].name, "AMD Instinct MI210");
	ck_assert_str_eq(s->gpus[0].architecture, "gfx90a");
	ck_assert_str_eq(s->gpus[0].pci_bus_id, "0000:03:00.0");
	ck_assert_int_eq(s->gpus[0].memory_total_bytes, 68702699520);
	ck_assert_int_eq(s->gpus[0].memory_free_bytes, 68702699520 - 10485760);
	ck_assert(!s->gpus[0].unified_memory);
	ck_assert_str_eq(s->gpus[1].vendor, "intel");
	ck_assert_str_eq(s->gpus[1].name, "Intel Iris Xe Graphics");
	ck_assert(s->gpus[1].unified_memory);
	ck_assert_str_eq(s->sources.gpu, "sysfs");
	ck_assert_str_eq(s->platform, "amd");
	ck_assert_str_eq(s->backend, "rocm");
	ck_assert(has_warning(s, "card4 is an AMD GPU driven by radeon"));
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(amd_caps_on_cards_and_gpus)
{
	char *root = t_mkdtemp();
	struct hw_snapshot *s = malloc(sizeof(*s));
	struct rf_detect_opts o = {.root = root};
	char rel[256], slot[32];

	/* 70 distinct AMD GPUs: 64 are reported, with a warning. */
	for (int i = 0; i < 70; i++) {
		snprintf(rel, sizeof(rel), "sys/class/drm/card%d/device", i);
		snprintf(slot, sizeof(slot), "0000:%02x:00.0", i + 1);
		amd_device(root, rel, "0x74a1", slot, "amdgpu", "206141652992");
	}
	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	ck_assert_int_eq(s->n_gpus, HW_MAX_GPUS);
	ck_assert_str_eq(s->gpus[63].pci_bus_id, "0000:40:00.0");
	ck_assert(has_warning(s, "more than 64 GPUs"));

	/* 300 card entries: the first 256 (in number order) are read. */
	for (int i = 70; i < 300; i++) {
		snprintf(rel, sizeof(rel), "sys/class/drm/card%d/device/uevent", i);
		put(root, rel, "DRIVER=none\n");
	}
	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	ck_assert(has_warning(s, "more than 256 DRM cards"));
	ck_assert_int_eq(s->n_gpus, HW_MAX_GPUS);
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

Suite *probe_apple_suite(void)
{
	Suite *s = suite_create("probe_apple");
	TCase *tc = tcase_create("sysctl_and_sysfs");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, apple_m3_max_through_a_script);
	tcase_add_test(tc, apple_wired_limit_overrides);
	tcase_add_test(tc, apple_failures_are_warnings);
	tcase_add_test(tc, amd_and_intel_sysfs_tree);
	tcase_add_test(tc, amd_caps_on_cards_and_gpus);
	suite_add_tcase(s, tc);
	return s;
}
