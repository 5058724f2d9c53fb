/*
 * The NVIDIA probe end to end: NVML really dlopened (the test-built fake libnvidia-ml, in its
 * full and its no-_v2 builds, answering from a description file) inside the forked child, and
 * the nvidia-smi fallback run as real scripts. Covers success, a GPU whose memory query fails,
 * an old library, nvmlInit failing, crashing or hanging, and nvidia-smi hanging, printing
 * garbage, failing or missing. Every case must end with real GPUs or none: never an invented one.
 *
 * The GPUs described are two of the eight RTX 4090s of
 * tests/data/fixtures/rtx4090-8gpu__nvidia-smi-a.txt (driver 550.127.05, CUDA 12.4, 24564 MiB with
 * 354 reserved, 2 used, 24210 free, max memory clock 10501 MHz). Compute capability 8.9 and the
 * 384-bit bus are the RTX 4090's specification, not in that capture; its architecture is Ada
 * (nvmlDeviceGetArchitecture answers NVML_DEVICE_ARCH_ADA, 8, in NVML's header).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/hw/hw.h"
#include "core/hw/hw_profile.h"
#include "server/detect/detect.h"
#include "server/detect/probes.h"
#include "tests/api/profiles_fixture.h"
#include "tests/server/harness.h"
#include "tests/test.h"

#define MIB (1024LL * 1024)

#define RTX4090_GPU(uuid, bus, memory)                                                             \
	"gpu\nname NVIDIA GeForce RTX 4090\nuuid " uuid "\npci " bus " 0x268410DE\n" memory        \
	"cc 8 9\nbus_width 384\nmem_clock 10501\narch 8\nmig unsupported\n"
#define RTX4090_MEMORY "memory 24564 354 2 24210\n"
#define RTX4090_HEAD "driver 550.127.05\ncuda 12040\n"
#define RTX4090_GPU0(memory)                                                                       \
	RTX4090_GPU("GPU-8ee5f1e0-e705-aac5-6d6e-b97ad59601ef", "00000000:01:00.0", memory)
#define RTX4090_GPU1(memory)                                                                       \
	RTX4090_GPU("GPU-a4ac0a07-7668-e715-6e6d-d0dea1c5738b", "00000000:25:00.0", memory)

static const char rtx4090_desc[] = RTX4090_HEAD RTX4090_GPU0(RTX4090_MEMORY)
	RTX4090_GPU1(RTX4090_MEMORY);

/* The same, but GPU 1 answers its memory query with "GPU is lost". */
static const char rtx4090_memfail_desc[] = RTX4090_HEAD RTX4090_GPU0(RTX4090_MEMORY)
	RTX4090_GPU1("memory fail 15\n");

/* The same two GPUs as nvidia-smi prints them for the probe's query. */
static const char rtx4090_smi[] =
	"#!/bin/sh\n"
	"cat <<'EOF'\n"
	"0, NVIDIA GeForce RTX 4090, GPU-8ee5f1e0-e705-aac5-6d6e-b97ad59601ef, 00000000:01:00.0, "
	"0x268410DE, 24564, 2, 24210, 550.127.05, 10501, [N/A], 8.9\n"
	"1, NVIDIA GeForce RTX 4090, GPU-a4ac0a07-7668-e715-6e6d-d0dea1c5738b, 00000000:25:00.0, "
	"0x268410DE, 24564, 2, 24210, 550.127.05, 10501, [N/A], 8.9\n"
	"EOF\n";

/* One test's temporary machine: a root directory holding the description and scripts. */
struct nv_case {
	char *dir;
	char *lib;
	char *smi;
	struct rf_detect_opts o;
	struct hw_snapshot *s;
};

static char *fake_lib(int nov2)
{
	const char *lib = getenv("RIGFIT_FAKE_NVML_LIB");
	const char *alt = getenv("RIGFIT_FAKE_NVML_NOV2_LIB");
	char *path, *slash;

	if (nov2 && alt && *alt)
		return strdup(alt);
	path = lib && *lib ? strdup(lib) : t_path(t_src_dir(), "build/fake/libnvidia-ml.so.1");
	if (nov2) {
		/* Beside the full one, as the Makefile builds them. */
		char *dir = path;
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		path = t_path(slash ? dir : ".", "libnvidia-ml-nov2.so.1");
		free(dir);
	}
	return path;
}

static int nv_timeout_ms(void)
{
	return t_under_valgrind() ? 3000 : 300;
}

static long nv_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Sets up a case: desc (NULL: no NVML) is the fake library's description, smi_script (NULL:
 * no nvidia-smi) the body of a fake nvidia-smi. */
static void nv_case_start(struct nv_case *c, const char *desc, int nov2, const char *smi_script)
{
	memset(c, 0, sizeof(*c));
	c->dir = t_mkdtemp();
	ck_assert_ptr_nonnull(c->dir);
	c->o.root = c->dir;
	c->o.probe_timeout_ms = RF_PROBE_TIMEOUT_MS_DEFAULT;
	if (desc) {
		char *p = t_path(c->dir, "nvml.txt");
		ck_assert_int_eq(t_write_file(p, desc, strlen(desc)), 0);
		setenv("RIGFIT_FAKE_NVML", p, 1);
		free(p);
		c->lib = fake_lib(nov2);
		c->o.nvml_lib = c->lib;
	}
	if (smi_script) {
		c->smi = t_path(c->dir, "nvidia-smi");
		ck_assert_int_eq(t_write_file(c->smi, smi_script, strlen(smi_script)), 0);
		ck_assert_int_eq(chmod(c->smi, 0755), 0);
		c->o.nvidia_smi = c->smi;
	}
	c->s = malloc(sizeof(*c->s));
	ck_assert_ptr_nonnull(c->s);
	hw_snapshot_init(c->s);
}

/* Runs the NVIDIA probe alone; returns how long it took in ms. */
static long nv_probe(struct nv_case *c)
{
	long t0 = nv_now_ms();

	rf_probe_nvidia(&c->o, c->s);
	return nv_now_ms() - t0;
}

static void nv_case_end(struct nv_case *c)
{
	unsetenv("RIGFIT_FAKE_NVML");
	t_rmtree(c->dir);
	free(c->dir);
	free(c->lib);
	free(c->smi);
	free(c->s);
}

/* Returns the first warning containing needle, or NULL. */
static const char *nv_warning(const struct hw_snapshot *s, const char *needle)
{
	for (int i = 0; i < s->n_warnings; i++)
		if (strstr(s->warnings[i], needle))
			return s->warnings[i];
	return NULL;
}

/* Applies the shipped device profiles to the scan, as the daemon does after every scan. */
static void nv_apply_profiles(struct hw_snapshot *s)
{
	struct device_table devices = {0};
	struct model_catalog *models = NULL;

	t_profiles_load(&devices, &models, NULL);
	hw_apply_device_profiles(s, &devices);
	t_profiles_free(&devices, &models, NULL);
}

/* The two RTX 4090s, as either path reports them. */
static void nv_assert_4090s(const struct hw_snapshot *s, int via_nvml)
{
	ck_assert_int_eq(s->n_gpus, 2);
	for (int i = 0; i < 2; i++) {
		const struct hw_gpu *g = &s->gpus[i];
		ck_assert_int_eq(g->index, i);
		ck_assert_str_eq(g->vendor, "nvidia");
		ck_assert_str_eq(g->name, "NVIDIA GeForce RTX 4090");
		ck_assert(!g->unified_memory);
		ck_assert_int_eq(g->memory_total_bytes, 24564 * MIB);
		ck_assert_int_eq(g->memory_free_bytes, 24210 * MIB);
		ck_assert_str_eq(g->compute_capability, "8.9");
		ck_assert_str_eq(g->driver_version, "550.127.05");
		ck_assert_str_eq(g->pci_device_id, "0x2684");
		ck_assert_int_eq(g->max_memory_clock_mhz, 10501);
		ck_assert(!g->has_mig);
		if (via_nvml) {
			ck_assert_str_eq(g->cuda_version, "12.4");
			ck_assert_int_eq(g->memory_bus_width_bits, 384);
			ck_assert(g->memory_bandwidth_gbs > 1008.09 &&
				  g->memory_bandwidth_gbs < 1008.1);
		} else {
			ck_assert_str_eq(g->cuda_version, "");
			ck_assert(g->memory_bandwidth_gbs < 0);
		}
	}
	ck_assert_str_eq(s->gpus[0].uuid, "GPU-8ee5f1e0-e705-aac5-6d6e-b97ad59601ef");
	ck_assert_str_eq(s->gpus[1].pci_bus_id, "00000000:25:00.0");
	ck_assert_str_eq(s->sources.gpu, via_nvml ? "nvml" : "nvidia-smi");
}

START_TEST(nvml_success)
{
	struct nv_case c;

	nv_case_start(&c, rtx4090_desc, 0, NULL);
	nv_probe(&c);
	nv_assert_4090s(c.s, 1);
	ck_assert_int_eq(c.s->gpus[0].memory_used_bytes, 2 * MIB); /* v2: reserved kept apart */
	ck_assert_msg(c.s->n_warnings == 0, "unexpected warning: %s", c.s->warnings[0]);
	/* NVML names the architecture; the profile adds only what no probe measures. */
	ck_assert_str_eq(c.s->gpus[0].architecture, "Ada Lovelace");
	nv_apply_profiles(c.s);
	ck_assert_str_eq(c.s->gpus[1].architecture, "Ada Lovelace");
	ck_assert_uint_eq(c.s->gpus[1].from_profile, HW_FROM_PROFILE(FP16));
	nv_case_end(&c);
}
END_TEST

START_TEST(nvml_gpu_memory_query_fails)
{
	struct nv_case c;

	nv_case_start(&c, rtx4090_memfail_desc, 0, NULL);
	nv_probe(&c);
	ck_assert_int_eq(c.s->n_gpus, 2);
	ck_assert_int_eq(c.s->gpus[0].memory_total_bytes, 24564 * MIB);
	ck_assert_int_eq(c.s->gpus[1].memory_total_bytes, HW_UNKNOWN);
	ck_assert_int_eq(c.s->gpus[1].memory_free_bytes, HW_UNKNOWN);
	ck_assert_str_eq(c.s->gpus[1].name, "NVIDIA GeForce RTX 4090");
	ck_assert_ptr_nonnull(
		nv_warning(c.s, "gpu 1: memory unknown (NVML error 15: GPU is lost)"));
	ck_assert_ptr_null(nv_warning(c.s, "gpu 0"));
	ck_assert_str_eq(c.s->sources.gpu, "nvml");
	nv_case_end(&c);
}
END_TEST

START_TEST(nvml_library_without_v2_symbols)
{
	struct nv_case c;

	nv_case_start(&c, rtx4090_desc, 1, NULL);
	nv_probe(&c);
	nv_assert_4090s(c.s, 1);
	/* The first nvmlDeviceGetMemoryInfo counts reserved memory as used. */
	ck_assert_int_eq(c.s->gpus[0].memory_used_bytes, (24564 - 24210) * MIB);
	/* The first nvmlDeviceGetPciInfo's short bus id, widened. */
	ck_assert_str_eq(c.s->gpus[0].pci_bus_id, "00000000:01:00.0");
	ck_assert_msg(c.s->n_warnings == 0, "unexpected warning: %s", c.s->warnings[0]);
	/* No nvmlDeviceGetArchitecture in this library: the device profile names it, and says so. */
	ck_assert_str_eq(c.s->gpus[0].architecture, "");
	nv_apply_profiles(c.s);
	ck_assert_str_eq(c.s->gpus[0].architecture, "Ada Lovelace");
	ck_assert_uint_eq(c.s->gpus[0].from_profile,
			  HW_FROM_PROFILE(ARCHITECTURE) | HW_FROM_PROFILE(FP16));
	ck_assert_int_eq(c.s->gpus[0].memory_bus_width_bits, 384); /* measured, kept */
	nv_case_end(&c);
}
END_TEST

START_TEST(nvml_init_fails_falls_back_to_nvidia_smi)
{
	struct nv_case c;

	nv_case_start(&c, "init fail 9\n", 0, rtx4090_smi);
	nv_probe(&c);
	nv_assert_4090s(c.s, 0);
	ck_assert_ptr_nonnull(nv_warning(c.s, "nvmlInit failed (NVML error 9: driver not loaded)"));
	/* nvidia-smi prints no bus width or architecture: the RTX 4090 profile's 1008 GB/s at the
	 * 10501 MHz it reports is a 384-bit bus, and the answer says those came from the profile. */
	ck_assert_int_eq(c.s->gpus[0].memory_bus_width_bits, HW_UNKNOWN);
	nv_apply_profiles(c.s);
	for (int i = 0; i < 2; i++) {
		const struct hw_gpu *g = &c.s->gpus[i];
		ck_assert_int_eq(g->memory_bus_width_bits, 384);
		ck_assert_double_eq_tol(g->memory_bandwidth_gbs, 1008, 1e-9);
		ck_assert_str_eq(g->architecture, "Ada Lovelace");
		ck_assert_uint_eq(g->from_profile,
				  HW_FROM_PROFILE(ARCHITECTURE) | HW_FROM_PROFILE(BUS_WIDTH) |
					  HW_FROM_PROFILE(BANDWIDTH) | HW_FROM_PROFILE(FP16));
	}
	nv_case_end(&c);

	nv_case_start(&c, "count fail 3\n", 0, rtx4090_smi);
	nv_probe(&c);
	nv_assert_4090s(c.s, 0);
	ck_assert_ptr_nonnull(nv_warning(c.s, "nvmlDeviceGetCount failed (NVML error 3"));
	nv_case_end(&c);

	/* A library that is not there, named on purpose: said, then nvidia-smi. */
	nv_case_start(&c, NULL, 0, rtx4090_smi);
	c.o.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
	nv_probe(&c);
	nv_assert_4090s(c.s, 0);
	ck_assert_ptr_nonnull(nv_warning(c.s, "could not be loaded"));
	nv_case_end(&c);
}
END_TEST

START_TEST(nvml_crash_falls_back)
{
	struct nv_case c;

	nv_case_start(&c, "init crash\n", 0, rtx4090_smi);
	nv_probe(&c);
	nv_assert_4090s(c.s, 0);
	ck_assert_ptr_nonnull(nv_warning(c.s, "the NVML probe crashed (signal 6)"));
	nv_case_end(&c);
}
END_TEST

/* The driver dies or hangs in the middle of a scan: after init, after the first GPU answered.
 * What NVML said before is not half-used; the scan falls back to nvidia-smi for both. */
START_TEST(nvml_dies_mid_scan_falls_back)
{
	static const char crash[] = RTX4090_HEAD RTX4090_GPU0(RTX4090_MEMORY)
		RTX4090_GPU1("memory crash\n");
	static const char hang[] = RTX4090_HEAD RTX4090_GPU0(RTX4090_MEMORY)
		RTX4090_GPU1("memory hang\n");
	struct nv_case c;
	long ms;
	int t = nv_timeout_ms();

	nv_case_start(&c, crash, 0, rtx4090_smi);
	nv_probe(&c);
	nv_assert_4090s(c.s, 0);
	ck_assert_ptr_nonnull(nv_warning(c.s, "the NVML probe crashed (signal 6)"));
	nv_case_end(&c);

	nv_case_start(&c, hang, 0, rtx4090_smi);
	c.o.probe_timeout_ms = t;
	ms = nv_probe(&c);
	nv_assert_4090s(c.s, 0);
	ck_assert_ptr_nonnull(nv_warning(c.s, "NVML probe timed out"));
	ck_assert_msg(ms < t + (t_under_valgrind() ? 10000 : 700), "probe took %ld ms", ms);
	nv_case_end(&c);
}
END_TEST

START_TEST(nvml_hang_is_cut_off_and_falls_back)
{
	struct nv_case c;
	char want[64];
	long ms;
	int t = nv_timeout_ms();

	nv_case_start(&c, "init hang\n", 0, rtx4090_smi);
	c.o.probe_timeout_ms = t;
	ms = nv_now_ms();
	ck_assert_int_eq(rf_detect_scan(&c.o, c.s), 0);
	ms = nv_now_ms() - ms;
	snprintf(want, sizeof(want), "gpu: NVML probe timed out after %d ms", t);
	ck_assert_ptr_nonnull(nv_warning(c.s, want));
	nv_assert_4090s(c.s, 0);
	ck_assert_msg(ms >= t && ms < t + (t_under_valgrind() ? 10000 : 700),
		      "scan took %ld ms with a %d ms timeout", ms, t);
	nv_case_end(&c);
}
END_TEST

START_TEST(nvidia_smi_hang_is_cut_off)
{
	struct nv_case c;
	char want[64];
	long ms;
	int t = nv_timeout_ms();

	nv_case_start(&c, NULL, 0, "#!/bin/sh\nexec sleep 30\n");
	c.o.probe_timeout_ms = t;
	ms = nv_now_ms();
	ck_assert_int_eq(rf_detect_scan(&c.o, c.s), 0);
	ms = nv_now_ms() - ms;
	snprintf(want, sizeof(want), "gpu: nvidia-smi timed out after %d ms", t);
	ck_assert_ptr_nonnull(nv_warning(c.s, want));
	ck_assert_int_eq(c.s->n_gpus, 0);
	ck_assert_str_eq(c.s->sources.gpu, "none");
	ck_assert_msg(ms < (t_under_valgrind() ? 15000 : 1000), "scan took %ld ms", ms);
	nv_case_end(&c);
}
END_TEST

START_TEST(nvidia_smi_garbage_makes_no_gpu)
{
	static const char *const scripts[] = {
		("#!/bin/sh\necho 'Segmentation fault, core dumped, who knows'\n"
		 "printf '\\001\\002\\377 and so on\\n,,,,,,,,,,,\\n'\n"),
		"#!/bin/sh\nhead -c 4096 /dev/zero\n",
		"#!/bin/sh\necho '0, NVIDIA GeForce RTX 4090, GPU-8ee5f1e0'\n",
	};
	struct nv_case c;

	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
		nv_case_start(&c, NULL, 0, scripts[i]);
		nv_probe(&c);
		ck_assert_msg(c.s->n_gpus == 0, "script %zu made a GPU", i);
		ck_assert_str_eq(c.s->sources.gpu, "none");
		ck_assert_msg(nv_warning(c.s, "gpu: nvidia-smi") != NULL, "script %zu: no warning",
			      i);
		nv_case_end(&c);
	}
}
END_TEST

START_TEST(nvidia_smi_fails_or_is_missing)
{
	struct nv_case c;

	/* The driver is not loaded: nvidia-smi says so and exits 9. */
	nv_case_start(&c, NULL, 0,
		      "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate "
		      "with the NVIDIA driver.\"\nexit 9\n");
	nv_probe(&c);
	ck_assert_int_eq(c.s->n_gpus, 0);
	ck_assert_ptr_nonnull(nv_warning(c.s, "nvidia-smi failed (exit 9): NVIDIA-SMI has failed"));
	nv_case_end(&c);

	/* Named but absent. */
	nv_case_start(&c, NULL, 0, NULL);
	c.o.nvidia_smi = "/nonexistent/nvidia-smi";
	nv_probe(&c);
	ck_assert_int_eq(c.s->n_gpus, 0);
	ck_assert_ptr_nonnull(nv_warning(c.s, "could not be run (not found)"));
	nv_case_end(&c);

	/* Nothing named on a recorded root: nothing runs, nothing is said. */
	nv_case_start(&c, NULL, 0, NULL);
	nv_probe(&c);
	ck_assert_int_eq(c.s->n_gpus, 0);
	ck_assert_msg(c.s->n_warnings == 0, "unexpected warning: %s", c.s->warnings[0]);
	ck_assert_str_eq(c.s->sources.gpu, "none");
	nv_case_end(&c);
}
END_TEST

START_TEST(nvidia_smi_of_an_r470_driver_is_asked_again)
{
	/* R450-R50x drivers know mig.mode.current but not compute_cap. */
	static const char script[] =
		"#!/bin/sh\n"
		"case \"$1\" in\n"
		"*compute_cap*) echo 'Field \"compute_cap\" is not a valid field to query.'; exit 2 "
		";;\n"
		"esac\n"
		"echo '0, NVIDIA A100-SXM4-80GB, GPU-31515c3d-1414-7c2c-004a-f86a898946ac, "
		"00000000:68:00.0, 0x20B210DE, 81920, 1, 81158, 470.182.03, 1593, Enabled'\n";
	struct nv_case c;

	nv_case_start(&c, NULL, 0, script);
	nv_probe(&c);
	ck_assert_int_eq(c.s->n_gpus, 1);
	ck_assert_str_eq(c.s->gpus[0].name, "NVIDIA A100-SXM4-80GB");
	ck_assert_int_eq(c.s->gpus[0].memory_total_bytes, 81920 * MIB);
	ck_assert_str_eq(c.s->gpus[0].compute_capability, "");
	ck_assert(c.s->gpus[0].has_mig && c.s->gpus[0].mig.enabled);
	/* MIG on, but this script has no -L: the count is unknown, and said to be. */
	ck_assert_ptr_nonnull(nv_warning(c.s, "MIG instance counts unknown"));
	nv_case_end(&c);
}
END_TEST

START_TEST(jetson_gpu_is_not_duplicated)
{
	struct nv_case c;
	struct hw_gpu *g;

	nv_case_start(&c, rtx4090_desc, 0, rtx4090_smi);
	g = rf_snapshot_add_gpu(c.s);
	ck_assert_ptr_nonnull(g);
	hw_strlcpy(g->vendor, "nvidia", sizeof(g->vendor));
	hw_strlcpy(g->name, "NVIDIA Jetson AGX Orin", sizeof(g->name));
	g->unified_memory = true;
	nv_probe(&c);
	ck_assert_int_eq(c.s->n_gpus, 1);
	ck_assert_str_eq(c.s->gpus[0].name, "NVIDIA Jetson AGX Orin");
	nv_case_end(&c);
}
END_TEST

Suite *probe_nvidia_suite(void)
{
	Suite *s = suite_create("probe_nvidia");
	TCase *tc = tcase_create("probe_nvidia");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, nvml_success);
	tcase_add_test(tc, nvml_gpu_memory_query_fails);
	tcase_add_test(tc, nvml_library_without_v2_symbols);
	tcase_add_test(tc, nvml_init_fails_falls_back_to_nvidia_smi);
	tcase_add_test(tc, nvml_crash_falls_back);
	tcase_add_test(tc, nvml_hang_is_cut_off_and_falls_back);
	tcase_add_test(tc, nvml_dies_mid_scan_falls_back);
	tcase_add_test(tc, nvidia_smi_hang_is_cut_off);
	tcase_add_test(tc, nvidia_smi_garbage_makes_no_gpu);
	tcase_add_test(tc, nvidia_smi_fails_or_is_missing);
	tcase_add_test(tc, nvidia_smi_of_an_r470_driver_is_asked_again);
	tcase_add_test(tc, jetson_gpu_is_not_duplicated);
	suite_add_tcase(s, tc);
	return s;
}
