/*
 * Device-tree boards: model and compatible strings with their NULs and without them (as the
 * captures in tests/data/fixtures printed them), /etc/nv_tegra_release lines, the Tegra chip
 * table, and Raspberry Pi; then the Jetson probe on a tree where the device tree is found only
 * under /sys/firmware/devicetree/base.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/err.h"
#include "core/hw/hw_parse_tegra.h"
#include "server/detect/detect.h"
#include "tests/test.h"

START_TEST(dt_model_with_and_without_nul)
{
	static const char with_nul[] = "NVIDIA Jetson AGX Orin Developer Kit\0";
	char out[HW_NAME_LEN] = "x";
	char small[8];

	ck_assert_int_eq(hw_parse_dt_model(with_nul, sizeof(with_nul) - 1, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "NVIDIA Jetson AGX Orin Developer Kit");
	/* As a terminal printed it: no NUL, a trailing newline. */
	ck_assert_int_eq(hw_parse_dt_model("jetson_tx1\n", 11, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "jetson_tx1");
	/* Bytes after the NUL are not part of the model. */
	ck_assert_int_eq(
		hw_parse_dt_model("Raspberry Pi 4 Model B Rev 1.4\0junk", 35, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "Raspberry Pi 4 Model B Rev 1.4");
	ck_assert_int_eq(hw_parse_dt_model("Clara-AGX", 9, small, sizeof(small)), 0);
	ck_assert_str_eq(small, "Clara-A"); /* cut to fit, terminated */
	hw_strlcpy(out, "x", sizeof(out));
	ck_assert_int_eq(hw_parse_dt_model("\0", 1, out, sizeof(out)), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_dt_model("", 0, out, sizeof(out)), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_dt_model(NULL, 0, out, sizeof(out)), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_dt_model("bad\x01model", 9, out, sizeof(out)), RF_E_PARSE);
	ck_assert_str_eq(out, "x");
}
END_TEST

START_TEST(dt_tegra_chip_with_and_without_nuls)
{
	static const char nuls[] = "nvidia,p3768-0000+p3767-0003\0nvidia,p3767-0003\0"
				   "nvidia,tegra234\0nvidia,tegra23x\0";
	size_t len;
	char *thor = t_fixture("jetson-agx-thor-devkit-l4t38.4__proc-device-tree-compatible-as-"
			       "printed.txt",
			       &len);
	char chip[16] = "";

	ck_assert_int_eq(hw_parse_dt_tegra_chip(nuls, sizeof(nuls) - 1, chip, sizeof(chip)), 0);
	ck_assert_str_eq(chip, "tegra234");
	/* The Thor capture lost its NULs: "...p3834-0008nvidia,tegra264". */
	ck_assert_int_eq(hw_parse_dt_tegra_chip(thor, len, chip, sizeof(chip)), 0);
	ck_assert_str_eq(chip, "tegra264");
	free(thor);
	/* Orin Nano as jtop printed it: the first full chip wins over "tegra23x". */
	ck_assert_int_eq(hw_parse_dt_tegra_chip("nvidia,p3767-0005nvidia,tegra234nvidia,tegra23x",
						47, chip, sizeof(chip)),
			 0);
	ck_assert_str_eq(chip, "tegra234");
	ck_assert_int_eq(hw_parse_dt_tegra_chip("nvidia,jetson-cvnvidia,tegra210", 31, chip,
						sizeof(chip)),
			 0);
	ck_assert_str_eq(chip, "tegra210");
	ck_assert_int_eq(hw_parse_dt_tegra_chip("nvidia,tegra23x\0", 16, chip, sizeof(chip)),
			 RF_E_NOT_FOUND);
	ck_assert_int_eq(hw_parse_dt_tegra_chip("nvidia,tegra2", 13, chip, sizeof(chip)),
			 RF_E_NOT_FOUND);
	ck_assert_int_eq(hw_parse_dt_tegra_chip("raspberrypi,4-model-b\0brcm,bcm2711\0", 35, chip,
						sizeof(chip)),
			 RF_E_NOT_FOUND);
	ck_assert_int_eq(hw_parse_dt_tegra_chip(NULL, 0, chip, sizeof(chip)), RF_E_NOT_FOUND);
	ck_assert(
		hw_dt_compatible_has("raspberrypi,4-model-b\0brcm,bcm2711\0", 35, "raspberrypi,"));
	ck_assert(hw_dt_compatible_has("raspberrypi,4-model-bbrcm,bcm2711", 33, "brcm,bcm2711"));
	ck_assert(!hw_dt_compatible_has("brcm,bcm2711\0", 13, "raspberrypi,"));
}
END_TEST

START_TEST(nv_tegra_release_lines)
{
	size_t len;
	char *nx = t_fixture("jetson-xavier-nx-l4t32.5.1__etc-nv_tegra_release-line1.txt", &len);
	static const char r36[] =
		"# R36 (release), REVISION: 2.0, GCID: 35084178, BOARD: generic, EABI: aarch64, "
		"DATE: Tue Dec 19 05:55:03 UTC 2023\n"
		"# KERNEL_VARIANT: oot\n"
		"TARGET_USERSPACE_LIB_DIR=nvidia\n"
		"TARGET_USERSPACE_LIB_DIR_PATH=usr/lib/aarch64-linux-gnu/nvidia\n";
	struct hw_tegra t;

	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(hw_parse_nv_tegra_release(nx, len, &t), 0);
	ck_assert_int_eq(t.l4t_major, 32);
	ck_assert_str_eq(t.l4t_revision, "5.1");
	ck_assert_str_eq(t.l4t_board, "t186ref");
	free(nx);
	ck_assert_int_eq(hw_parse_nv_tegra_release(r36, sizeof(r36) - 1, &t), 0);
	ck_assert_int_eq(t.l4t_major, 36);
	ck_assert_str_eq(t.l4t_revision, "2.0");
	ck_assert_str_eq(t.l4t_board, "generic");
	/* Junk leaves out untouched. */
	ck_assert_int_eq(hw_parse_nv_tegra_release("# R (release)\n", 14, &t), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_nv_tegra_release("# Rabc\n", 7, &t), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_nv_tegra_release("R36 (release)\n", 14, &t), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_nv_tegra_release("# R99999 (release)\n", 19, &t), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_nv_tegra_release("", 0, &t), RF_E_PARSE);
	ck_assert_int_eq(t.l4t_major, 36);
	/* A line with no fields still names the release. */
	ck_assert_int_eq(hw_parse_nv_tegra_release("# R28\n", 6, &t), 0);
	ck_assert_int_eq(t.l4t_major, 28);
	ck_assert_str_eq(t.l4t_revision, "");
}
END_TEST

START_TEST(boards_are_told_apart)
{
	static const char pi_model[] = "Raspberry Pi 4 Model B Rev 1.4\0";
	static const char pi_compat[] = "raspberrypi,4-model-b\0brcm,bcm2711\0";
	static const char clara_compat[] = "nvidia,e3900-0000+p2888-0004\0nvidia,galen\0"
					   "nvidia,jetson-xavier\0nvidia,tegra194\0";
	static const char nano_model[] = "NVIDIA Jetson Nano Developer Kit\0";
	struct hw_tegra t;

	ck_assert_int_eq(hw_parse_tegra(pi_model, sizeof(pi_model) - 1, pi_compat,
					sizeof(pi_compat) - 1, NULL, 0, &t),
			 0);
	ck_assert(t.is_raspberry_pi);
	ck_assert(!t.is_tegra);
	ck_assert_str_eq(t.model, "Raspberry Pi 4 Model B Rev 1.4");
	/* The compatible list alone names a Pi too. */
	ck_assert_int_eq(hw_parse_tegra(NULL, 0, pi_compat, sizeof(pi_compat) - 1, NULL, 0, &t), 0);
	ck_assert(t.is_raspberry_pi);

	ck_assert_int_eq(hw_parse_tegra("Clara-AGX\0", 10, clara_compat, sizeof(clara_compat) - 1,
					NULL, 0, &t),
			 0);
	ck_assert(t.is_tegra);
	ck_assert_str_eq(t.chip, "tegra194");
	ck_assert_str_eq(t.family, "Xavier");
	ck_assert_str_eq(t.gpu_architecture, "Volta");
	ck_assert_str_eq(t.compute_capability, "7.2");
	ck_assert_int_eq(t.l4t_major, HW_UNKNOWN);

	/* A model that says Jetson is enough; the chip stays unknown. */
	ck_assert_int_eq(hw_parse_tegra(nano_model, sizeof(nano_model) - 1, NULL, 0, NULL, 0, &t),
			 0);
	ck_assert(t.is_tegra);
	ck_assert_str_eq(t.chip, "");
	ck_assert_str_eq(t.gpu_architecture, "");
	ck_assert_int_eq(hw_parse_tegra("jetson_tx1", 10, NULL, 0, NULL, 0, &t), 0);
	ck_assert(t.is_tegra);

	/* nv_tegra_release alone (a container with the L4T userspace) is Tegra. */
	ck_assert_int_eq(
		hw_parse_tegra(NULL, 0, NULL, 0, "# R35 (release), REVISION: 3.1\n", 31, &t), 0);
	ck_assert(t.is_tegra);
	ck_assert_int_eq(t.l4t_major, 35);

	ck_assert_int_eq(hw_parse_tegra("Generic DT board\0", 17, "acme,board\0", 11, NULL, 0, &t),
			 0);
	ck_assert(!t.is_tegra && !t.is_raspberry_pi);
	ck_assert_int_eq(hw_parse_tegra(NULL, 0, NULL, 0, NULL, 0, &t), 0);
	ck_assert(!t.is_tegra && !t.is_raspberry_pi);
	ck_assert_str_eq(t.model, "");
}
END_TEST

START_TEST(chip_table)
{
	static const char *const chips[][3] = {
		{"tegra210", "Maxwell", "5.3"},    {"tegra186", "Pascal", "6.2"},
		{"tegra194", "Volta", "7.2"},      {"tegra234", "Ampere", "8.7"},
		{"tegra264", "Blackwell", "11.0"},
	};
	struct hw_tegra t;

	for (size_t i = 0; i < sizeof(chips) / sizeof(chips[0]); i++) {
		memset(&t, 0, sizeof(t));
		hw_strlcpy(t.chip, chips[i][0], sizeof(t.chip));
		hw_tegra_chip_info(&t);
		ck_assert_str_eq(t.gpu_architecture, chips[i][1]);
		ck_assert_str_eq(t.compute_capability, chips[i][2]);
	}
	memset(&t, 0, sizeof(t));
	hw_strlcpy(t.chip, "tegra999", sizeof(t.chip));
	hw_tegra_chip_info(&t);
	ck_assert_str_eq(t.gpu_architecture, "");
}
END_TEST

/* Writes len bytes to root/rel, making the directories. */
static void put(const char *root, const char *rel, const char *content, size_t len)
{
	char *path = t_path(root, rel);

	for (char *p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	ck_assert_int_eq(t_write_file(path, content, len), 0);
	free(path);
}

START_TEST(probe_jetson_under_sys_firmware)
{
	static const char model[] = "NVIDIA Jetson AGX Orin Developer Kit\0";
	static const char compat[] = "nvidia,p3737-0000+p3701-0005\0nvidia,p3701-0005\0"
				     "nvidia,tegra234\0";
	static const char meminfo[] = "MemTotal:       64335836 kB\nMemAvailable:   60000000 kB\n";
	char *root = t_mkdtemp();
	struct rf_detect_opts o = {.root = root};
	struct hw_snapshot *s = malloc(sizeof(*s));

	put(root, "sys/firmware/devicetree/base/model", model, sizeof(model) - 1);
	put(root, "sys/firmware/devicetree/base/compatible", compat, sizeof(compat) - 1);
	put(root, "proc/meminfo", meminfo, sizeof(meminfo) - 1);
	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	ck_assert_str_eq(s->host.soc, "NVIDIA Jetson AGX Orin Developer Kit");
	ck_assert_int_eq(s->n_gpus, 1);
	ck_assert_str_eq(s->gpus[0].vendor, "nvidia");
	ck_assert(s->gpus[0].unified_memory);
	ck_assert_str_eq(s->gpus[0].name, "NVIDIA Jetson AGX Orin Developer Kit");
	ck_assert_str_eq(s->gpus[0].compute_capability, "8.7");
	ck_assert_int_eq(s->gpus[0].memory_total_bytes, INT64_C(64335836) * 1024);
	ck_assert_int_eq(s->gpus[0].memory_free_bytes, INT64_C(60000000) * 1024);
	ck_assert_str_eq(s->sources.gpu, "device-tree");
	ck_assert_str_eq(s->platform, "jetson");
	ck_assert_str_eq(s->backend, "cuda");
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(probe_raspberry_pi_has_no_gpu)
{
	static const char model[] = "Raspberry Pi 4 Model B Rev 1.4\0";
	char *root = t_mkdtemp();
	struct rf_detect_opts o = {.root = root};
	struct hw_snapshot *s = malloc(sizeof(*s));

	put(root, "proc/device-tree/model", model, sizeof(model) - 1);
	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	ck_assert_str_eq(s->host.soc, "Raspberry Pi 4 Model B Rev 1.4");
	ck_assert_int_eq(s->n_gpus, 0);
	ck_assert_str_eq(s->sources.gpu, "none");
	ck_assert_str_eq(s->platform, "cpu");
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

Suite *hw_parse_tegra_suite(void)
{
	Suite *s = suite_create("hw_parse_tegra");
	TCase *tc = tcase_create("parse");
	TCase *tp = tcase_create("probe");

	tcase_add_test(tc, dt_model_with_and_without_nul);
	tcase_add_test(tc, dt_tegra_chip_with_and_without_nuls);
	tcase_add_test(tc, nv_tegra_release_lines);
	tcase_add_test(tc, boards_are_told_apart);
	tcase_add_test(tc, chip_table);
	suite_add_tcase(s, tc);
	tcase_add_test(tp, probe_jetson_under_sys_firmware);
	tcase_add_test(tp, probe_raspberry_pi_has_no_gpu);
	suite_add_tcase(s, tp);
	return s;
}
