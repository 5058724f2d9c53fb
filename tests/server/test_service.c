/*
 * The systemd unit as an operator's first day meets it: `systemd-analyze security` rates its
 * exposure at 2.5 or lower (and the rating can fail: the same unit without its system call
 * filter rates worse), and its device list lets NVML open every NVIDIA device group the
 * driver registers and the AMD nodes, while DevicePolicy=closed keeps the rest out.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/server/harness.h"
#include "tests/test.h"

/* Returns the unit with ExecStart's binary replaced by bin and the lines starting with one of
 * drop (NULL-terminated, may be NULL) removed; malloc'd. */
static char *unit_variant(const char *bin, const char *const *drop)
{
	char *path = t_path(t_src_dir(), "systemd/rigfit.service");
	char *unit = t_read_file(path, NULL), *out;
	size_t cap, n = 0;

	ck_assert_ptr_nonnull(unit);
	cap = strlen(unit) + strlen(bin) + 1;
	out = malloc(cap);
	ck_assert_ptr_nonnull(out);
	for (const char *p = unit; *p;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p + 1) : strlen(p);
		int skip = 0;
		for (int i = 0; drop && drop[i]; i++)
			if (strncmp(p, drop[i], strlen(drop[i])) == 0)
				skip = 1;
		if (strncmp(p, "ExecStart=/usr/local/bin/rigfit", 31) == 0)
			n += (size_t)snprintf(out + n, cap - n, "ExecStart=%s%.*s", bin,
					      (int)(len - 31), p + 31);
		else if (!skip) {
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	out[n] = '\0';
	free(unit);
	free(path);
	return out;
}

/* Returns systemd-analyze's overall exposure of unit text, or -1 when it cannot rate
 * offline (systemd older than 250). */
static double exposure(const char *unit)
{
	char *dir = t_mkdtemp(), *file = t_path(dir, "rigfit.service"), *out = NULL;
	const char *argv[] = {"/bin/sh", "-c",
			      "cd \"$0\" && exec systemd-analyze security --offline=true "
			      "./rigfit.service 2>&1",
			      dir, NULL};
	const char *at;
	double e = -1;

	ck_assert_int_eq(t_write_file(file, unit, strlen(unit)), 0);
	t_run(argv, &out, NULL, 60000);
	at = out ? strstr(out, "Overall exposure level for rigfit.service: ") : NULL;
	if (at)
		e = strtod(at + strlen("Overall exposure level for rigfit.service: "), NULL);
	free(out);
	t_rmtree(dir);
	free(dir);
	free(file);
	return e;
}

START_TEST(the_unit_is_rated_2_5_or_lower)
{
	const char *rel = getenv("RIGFIT_REL_BIN");
	const char *bin = rel && *rel ? rel : t_bin();
	const char *probe[] = {"/bin/sh", "-c", "command -v systemd-analyze >/dev/null", NULL};
	const char *const unfiltered[] = {
		"SystemCallFilter=", "ProtectProc=", "PrivateMounts=", NULL};
	char *unit, *loose;
	double e, e_loose;

	if (t_run(probe, NULL, NULL, 5000) != 0) {
		printf("service: systemd-analyze not found; skipping the exposure rating\n");
		return;
	}
	unit = unit_variant(bin, NULL);
	e = exposure(unit);
	if (e < 0) {
		printf("service: systemd-analyze cannot rate offline; skipping\n");
		free(unit);
		return;
	}
	ck_assert_msg(e <= 2.5, "exposure %.1f > 2.5", e);
	/* The rating can fail: without the system call filter and the /proc and mount
	 * isolation, the same unit rates worse than the bar. */
	loose = unit_variant(bin, unfiltered);
	e_loose = exposure(loose);
	ck_assert_msg(e_loose > 2.5, "the loosened unit still rates %.1f", e_loose);
	free(loose);
	free(unit);
}
END_TEST

/* Returns true when one DeviceAllow= line of unit matches node (a device group "char-NAME"
 * by glob, or a path exactly) with every access letter of mode. */
static int device_allowed(const char *unit, const char *node, const char *mode)
{
	for (const char *p = strstr(unit, "\nDeviceAllow="); p;
	     p = strstr(p + 1, "\nDeviceAllow=")) {
		char spec[128] = "", acc[8] = "";
		int all = 1;
		if (sscanf(p + strlen("\nDeviceAllow="), "%127s %7s", spec, acc) < 1)
			continue;
		for (const char *m = mode; *m; m++)
			if (!strchr(acc, *m))
				all = 0;
		if (all && fnmatch(spec, node, 0) == 0)
			return 1;
	}
	return 0;
}

START_TEST(every_gpu_device_group_is_allowed_and_nothing_else)
{
	char *unit = unit_variant("/usr/local/bin/rigfit", NULL);
	/* The character device groups NVIDIA's kernel modules register in /proc/devices:
	 * /dev/nvidiactl and /dev/nvidia0..N and -modeset (frontend), /dev/nvidia-uvm and
	 * -uvm-tools, /dev/nvidia-caps/ (MIG), NVLink and NVSwitch fabrics, IMEX channels. NVML
	 * needs read-write descriptors for its ioctls. */
	static const char *const nvidia[] = {
		"char-nvidia-frontend", "char-nvidia-uvm",      "char-nvidia-caps",
		"char-nvidia-nvlink",   "char-nvidia-nvswitch", "char-nvidia-caps-imex-channels",
	};

	for (size_t i = 0; i < sizeof(nvidia) / sizeof(nvidia[0]); i++)
		ck_assert_msg(device_allowed(unit, nvidia[i], "rw"), "%s is not allowed rw",
			      nvidia[i]);
	/* AMD: the compute node and the render nodes, read. */
	ck_assert(device_allowed(unit, "/dev/kfd", "r"));
	ck_assert(device_allowed(unit, "char-drm", "r"));
	/* The list is closed: a disk or the input devices are not in it. */
	ck_assert(!device_allowed(unit, "block-sd", "r"));
	ck_assert(!device_allowed(unit, "char-input", "r"));
	ck_assert_ptr_nonnull(strstr(unit, "\nDevicePolicy=closed\n"));
	free(unit);
}
END_TEST

Suite *service_suite(void)
{
	Suite *s = suite_create("service");
	TCase *tc = tcase_create("service");

	tcase_set_timeout(tc, t_under_valgrind() ? 900 : 180);
	tcase_add_test(tc, the_unit_is_rated_2_5_or_lower);
	tcase_add_test(tc, every_gpu_device_group_is_allowed_and_nothing_else);
	suite_add_tcase(s, tc);
	return s;
}
