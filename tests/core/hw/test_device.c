/*
 * Device profiles: name normalisation and exact resolution (near-misses must not match),
 * the bandwidth formula, devices.json loading errors that name the entry and the field, and
 * the shipped profiles/devices.json itself: at least 80 entries, every alias resolving to its
 * own entry, every device of calibration/gpus.csv and of llamacpp_tg_pp.csv present.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/device_json.h"
#include "core/hw/device.h"
#include "core/err.h"
#include "core/hw/hw.h"
#include "core/hw/hw_parse.h"
#include "tests/csv.h"
#include "tests/test.h"

#define GIB (1024LL * 1024 * 1024)

static struct device_table shipped;

/* Loads profiles/devices.json once per test process. */
static const struct device_table *shipped_table(void)
{
	char *path, *text, err[512];
	size_t len;
	cJSON *doc;
	int rc;

	if (shipped.n > 0)
		return &shipped;
	path = t_path(t_src_dir(), "profiles/devices.json");
	text = t_read_file(path, &len);
	ck_assert_msg(text != NULL, "cannot read %s", path);
	doc = cJSON_ParseWithLength(text, len);
	ck_assert_msg(doc != NULL, "profiles/devices.json is not valid JSON");
	rc = api_device_table_from_json(doc, &shipped, err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	cJSON_Delete(doc);
	free(text);
	free(path);
	return &shipped;
}

static void free_shipped(void)
{
	device_table_clear(&shipped);
}

static const char *resolve_id(const char *name, int64_t mem)
{
	const struct device_profile *p = NULL;
	int rc = device_resolve_mem(shipped_table(), name, mem, &p);
	return rc == 0 ? p->id : rc == RF_E_CONFLICT ? "(ambiguous)" : "(none)";
}

START_TEST(normalize_folds_vendor_words_case_dashes_and_sizes)
{
	char a[DEVICE_KEY_LEN], b[DEVICE_KEY_LEN];
	int sa, sb;
	static const char *const same[] = {"RTX 4090", "rtx4090", "GeForce RTX-4090",
					   "NVIDIA GeForce RTX 4090", "NVIDIA_GeForce_RTX_4090"};

	ck_assert_int_eq(device_normalize("NVIDIA GeForce RTX 4090", a, sizeof(a), &sa), 0);
	ck_assert_str_eq(a, "rtx 4090");
	ck_assert_int_eq(sa, 0);
	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		ck_assert_int_eq(device_normalize(same[i], b, sizeof(b), &sb), 0);
		ck_assert_str_eq(a, b);
	}
	ck_assert_int_eq(device_normalize("NVIDIA A100-SXM4-80GB", a, sizeof(a), &sa), 0);
	ck_assert_str_eq(a, "a 100 sxm");
	ck_assert_int_eq(sa, 80);
	ck_assert_int_eq(device_normalize("A100 SXM 80 GB", b, sizeof(b), &sb), 0);
	ck_assert_str_eq(a, b);
	ck_assert_int_eq(sb, 80);
	ck_assert_int_eq(device_normalize("NVIDIA A100 80GB PCIe", a, sizeof(a), &sa), 0);
	ck_assert_str_eq(a, "a 100 pcie");
	ck_assert_int_eq(device_normalize("Tesla V100-PCI-E-16GB", b, sizeof(b), &sb), 0);
	ck_assert_str_eq(b, "v 100 pcie");
	ck_assert_int_eq(sb, 16);
	ck_assert_int_eq(device_normalize("Intel(R) Arc(TM) A770 Graphics", a, sizeof(a), &sa), 0);
	ck_assert_str_eq(a, "arc a 770");
	ck_assert_int_eq(device_normalize("AMD Radeon R9 290X", a, sizeof(a), &sa), 0);
	ck_assert_str_eq(a, "r 9 290 x"); /* a lone "r" is kept: only "(R)" is a mark */
	ck_assert_int_eq(device_normalize("Apple M2 Max", a, sizeof(a), &sa), 0);
	ck_assert_str_eq(a, "m 2 max");
}
END_TEST

START_TEST(normalize_rejects_empty_noise_only_and_long_names)
{
	char key[DEVICE_KEY_LEN], small[4];
	char longname[DEVICE_NAME_LEN + 8];
	int s = 7;

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	ck_assert_int_eq(device_normalize(NULL, key, sizeof(key), &s), RF_E_INVALID_VALUE);
	ck_assert_int_eq(device_normalize("", key, sizeof(key), &s), RF_E_INVALID_VALUE);
	ck_assert_int_eq(device_normalize("NVIDIA GPU", key, sizeof(key), &s), RF_E_INVALID_VALUE);
	ck_assert_int_eq(device_normalize("--- ()", key, sizeof(key), &s), RF_E_INVALID_VALUE);
	ck_assert_int_eq(device_normalize(longname, key, sizeof(key), &s), RF_E_TOO_LARGE);
	ck_assert_int_eq(device_normalize("RTX 4090", small, sizeof(small), &s), RF_E_TOO_LARGE);
	ck_assert_int_eq(s, 7); /* untouched on failure */
}
END_TEST

START_TEST(bandwidth_from_bus_width_and_clock)
{
	const char *basis = NULL;
	struct device_profile p;

	ck_assert_double_eq_tol(device_bandwidth_from_bus(384, 10501), 1008.096, 1e-9);
	ck_assert_double_eq_tol(device_bandwidth_from_bus(5120, 1593), 2039.04, 1e-9);
	ck_assert_double_eq(device_bandwidth_from_bus(0, 10501), -1);
	ck_assert_double_eq(device_bandwidth_from_bus(384, 0), -1);
	ck_assert_double_eq(device_bandwidth_from_bus(-64, 1000), -1);
	ck_assert_double_eq(device_bandwidth_from_bus(1 << 20, 1000), -1);
	ck_assert_double_eq(device_bandwidth_from_bus(384, 1000000), -1);

	device_profile_init(&p);
	ck_assert_double_eq_tol(device_gpu_bandwidth(&p, 384, 10501, &basis), 1008.096, 1e-9);
	ck_assert_str_eq(basis, "bus_width_and_clock");
	ck_assert_double_eq(device_gpu_bandwidth(NULL, -1, -1, &basis),
			    DEVICE_ASSUMED_GPU_BANDWIDTH_GBS);
	ck_assert_str_eq(basis, "assumed");
	p.memory_bandwidth_gbs = 936;
	ck_assert_double_eq(device_gpu_bandwidth(&p, 384, 10501, &basis), 936);
	ck_assert_str_eq(basis, "profile");
}
END_TEST

START_TEST(tool_names_and_short_names_resolve)
{
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 4090", -1), "rtx-4090");
	ck_assert_str_eq(resolve_id("RTX 4090", -1), "rtx-4090");
	ck_assert_str_eq(resolve_id("Apple M2 Max", -1), "apple-m2-max");
	ck_assert_str_eq(resolve_id("NVIDIA H100 80GB HBM3", -1), "h100-sxm");
	ck_assert_str_eq(resolve_id("NVIDIA A100-SXM4-80GB", -1), "a100-sxm4-80gb");
	ck_assert_str_eq(resolve_id("NVIDIA A100-SXM4-40GB", -1), "a100-sxm4-40gb");
	ck_assert_str_eq(resolve_id("NVIDIA A100 80GB PCIe", -1), "a100-pcie-80gb");
	ck_assert_str_eq(resolve_id("Tesla T4", -1), "tesla-t4");
	ck_assert_str_eq(resolve_id("Tesla V100-SXM2-16GB", -1), "tesla-v100-sxm2-16gb");
	ck_assert_str_eq(resolve_id("AMD Instinct MI300X", -1), "mi300x");
	ck_assert_str_eq(resolve_id("AMD Radeon RX 7900 XTX", -1), "rx-7900-xtx");
	ck_assert_str_eq(resolve_id("Intel(R) Arc(TM) A770 Graphics", -1), "arc-a770-16gb");
	ck_assert_str_eq(resolve_id("Apple M3 Max GPU", -1), "apple-m3-max");
	ck_assert_str_eq(resolve_id("Apple M2 Max (30-core GPU)", -1), "apple-m2-max-30c");
	ck_assert_str_eq(resolve_id("Apple M1 Max (32GB)", -1), "apple-m1-max");
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 3060 Laptop GPU", -1), "rtx-3060-laptop");
	ck_assert_str_eq(resolve_id("NVIDIA Jetson Nano Developer Kit", -1), "jetson-nano");
	ck_assert_str_eq(resolve_id("NVIDIA Orin Nano Developer Kit", -1), "jetson-orin-nano-8gb");
	ck_assert_str_eq(resolve_id("rtx-4090", -1), "rtx-4090"); /* the id itself */
}
END_TEST

START_TEST(near_misses_do_not_resolve_to_the_wrong_part)
{
	const struct device_profile *p = NULL;

	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 4090 D", -1), "rtx-4090-d");
	ck_assert_str_eq(resolve_id("RTX 4090D", -1), "rtx-4090-d");
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 4090 Laptop GPU", -1), "rtx-4090-laptop");
	ck_assert_str_eq(resolve_id("RTX 4080", -1), "rtx-4080");
	ck_assert_str_eq(resolve_id("RTX 4080 SUPER", -1), "rtx-4080-super");
	ck_assert_str_eq(resolve_id("A100 PCIe 80GB", -1), "a100-pcie-80gb");
	ck_assert_str_eq(resolve_id("A100 SXM 80GB", -1), "a100-sxm4-80gb");
	/* No form factor: never silently one of the four A100s (the forms are listed). */
	ck_assert_str_eq(resolve_id("NVIDIA A100 40GB", -1), "(ambiguous)");
	ck_assert_str_eq(resolve_id("NVIDIA A100", 80 * GIB), "(ambiguous)");
	/* A size that no variant has is not rounded to one that exists. */
	ck_assert_str_eq(resolve_id("NVIDIA A100-SXM4-60GB", -1), "(none)");
	ck_assert_str_eq(resolve_id("RTX 4090 48GB", -1), "(none)");
	ck_assert_str_eq(resolve_id("RTX 409", -1), "(none)");
	ck_assert_str_eq(resolve_id("RTX 40900", -1), "(none)");
	ck_assert_str_eq(resolve_id("Quadro RTX 6000", -1), "(none)");
	ck_assert_int_eq(device_resolve(shipped_table(), "", &p), RF_E_INVALID_VALUE);
	ck_assert_int_eq(device_resolve(shipped_table(), "Nonexistent 9000", &p), RF_E_NOT_FOUND);
}
END_TEST

/* A model number without its series word, as people type it, is the part whose name is the
 * series and that number: "4090" is the desktop RTX 4090, never the 4090 D or the laptop
 * part, which keep their own words. */
START_TEST(bare_model_numbers_name_their_part)
{
	ck_assert_str_eq(resolve_id("4090", -1), "rtx-4090");
	ck_assert_str_eq(resolve_id("4090 D", -1), "rtx-4090-d");
	ck_assert_str_eq(resolve_id("4090 Laptop", -1), "rtx-4090-laptop");
	ck_assert_str_eq(resolve_id("3090", -1), "rtx-3090");
	ck_assert_str_eq(resolve_id("A6000", -1), "rtx-a6000");
	ck_assert_str_eq(resolve_id("MI300X", -1), "mi300x");
	ck_assert_str_eq(resolve_id("M2 Max", -1), "apple-m2-max");
	/* A size still has to be one the part has. */
	ck_assert_str_eq(resolve_id("4090 48GB", -1), "(none)");
	/* More than one series word is not a bare number ("Ryzen 9 7900" is no GPU's name). */
	ck_assert_str_eq(resolve_id("7900", -1), "(none)");
	ck_assert_str_eq(resolve_id("409", -1), "(none)");
}
END_TEST

/* A name that only begins parts' names ("RX 7900": the XT and the XTX) is listed as those
 * parts, and resolved only where the memory tells which. */
START_TEST(names_that_begin_several_parts_list_them)
{
	const struct device_profile *v[6];
	int n = device_variants(shipped_table(), "RX 7900", v, 6);
	bool xt = false, xtx = false;
	const char *near;

	ck_assert_int_ge(n, 2);
	for (int i = 0; i < n; i++) {
		xt |= strcmp(v[i]->id, "rx-7900-xt") == 0;
		xtx |= strcmp(v[i]->id, "rx-7900-xtx") == 0;
		ck_assert_msg(v[i]->kind != DEVICE_KIND_CPU, "%s", v[i]->id);
	}
	ck_assert(xt && xtx);
	ck_assert_str_eq(resolve_id("RX 7900", -1), "(none)");
	ck_assert_str_eq(resolve_id("RX 7900", 24 * GIB), "rx-7900-xtx");
	ck_assert_str_eq(resolve_id("RX 7900", 20 * GIB), "rx-7900-xt");
	/* A memory no listed part has is not rounded to one. */
	ck_assert_str_eq(resolve_id("RX 7900", 64 * GIB), "(ambiguous)");
	/* A mistyped GPU's name is never offered a processor's ("Ryzen 9 7900"). */
	near = device_suggest(shipped_table(), "7900", true);
	ck_assert_msg(!near || !strstr(near, "Ryzen"), "%s", near);
}
END_TEST

START_TEST(detected_memory_picks_between_variants_with_one_name)
{
	/* nvidia-smi prints "NVIDIA GeForce RTX 3080" for the 10 GB and the 12 GB card. */
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 3080", -1), "(ambiguous)");
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 3080", 10240LL << 20), "rtx-3080-10gb");
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 3080", 12288LL << 20), "rtx-3080-12gb");
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 3060", 12288LL << 20), "rtx-3060-12gb");
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 3060", 8192LL << 20), "rtx-3060-8gb");
	/* ECC hides some memory (A40: 46068 MiB of 48 GB): still within reach. */
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 3060", 11800LL << 20), "rtx-3060-12gb");
	/* Nothing close enough: stays ambiguous rather than guessing. */
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 3060", 4096LL << 20), "(ambiguous)");
	/* A size in the name settles it without detection. */
	ck_assert_str_eq(resolve_id("RTX 3080 12GB", -1), "rtx-3080-12gb");
	ck_assert_str_eq(resolve_id("NVIDIA GeForce RTX 3080 10GB", -1), "rtx-3080-10gb");
	/* Unified SoCs are sold with several sizes: the size does not select them. */
	ck_assert_str_eq(resolve_id("Apple M2 Ultra (192GB)", -1), "apple-m2-ultra");
	ck_assert_str_eq(resolve_id("Apple M2 Max", 32 * GIB), "apple-m2-max");
	/* A bare data-centre name stands for its forms: the size picks where it can (the NVL
	 * is 94 GB), never between forms of one size (PCIe and SXM, both 80 GB). */
	ck_assert_str_eq(resolve_id("H100", -1), "(ambiguous)");
	ck_assert_str_eq(resolve_id("NVIDIA H100", 94LL * 1000 * 1000 * 1000), "h100-nvl");
	ck_assert_str_eq(resolve_id("H100", 80 * GIB), "(ambiguous)");
	ck_assert_str_eq(resolve_id("A100 80GB", -1), "(ambiguous)");
}
END_TEST

START_TEST(shipped_table_is_large_unique_and_every_alias_resolves_to_its_entry)
{
	const struct device_table *t = shipped_table();
	char err[256];
	int vendors[5] = {0, 0, 0, 0, 0};

	ck_assert_int_ge(t->n, 80);
	ck_assert_int_eq(device_table_check(t, err, sizeof(err)), 0);
	for (int e = 0; e < t->n; e++) {
		const struct device_profile *p = &t->devices[e];
		const char *v[] = {"nvidia", "amd", "apple", "intel", "generic"};
		ck_assert_msg(p->source[0], "%s has no source", p->id);
		for (int k = 0; k < 5; k++)
			if (strcmp(p->vendor, v[k]) == 0)
				vendors[k]++;
		for (int a = 0; a < p->n_aliases; a++) {
			const struct device_profile *q = NULL;
			int64_t mem = p->memory_gib > 0 ? (int64_t)(p->memory_gib * GIB) : -1;
			int rc = device_resolve_mem(t, p->aliases[a], mem, &q);
			ck_assert_msg(rc == 0, "alias '%s' of %s does not resolve (%d)",
				      p->aliases[a], p->id, rc);
			ck_assert_msg(q == p, "alias '%s' of %s resolves to %s", p->aliases[a],
				      p->id, q->id);
		}
		ck_assert_msg(p->memory_bandwidth_gbs < 0 || p->memory_bandwidth_gbs < 20000,
			      "%s bandwidth", p->id);
		ck_assert_msg(p->fp16_tflops < 0 || p->fp16_kind != DEVICE_FP16_UNKNOWN,
			      "%s fp16 without a kind", p->id);
	}
	ck_assert_int_ge(vendors[0],
			 40); /* nvidia: consumer, laptop, workstation, datacenter, jetson */
	ck_assert_int_ge(vendors[1], 12); /* amd: radeon and instinct */
	ck_assert_int_ge(vendors[2], 16); /* apple: M1-M4 tiers */
	ck_assert_int_ge(vendors[3], 3);  /* intel */
}
END_TEST

/* The device names of a calibration file, as the resolver must accept them: the "Nx" prefix of
 * a layer split, host details in parentheses and ", N threads" dropped when the full name does
 * not resolve. */
static int resolve_calibration_name(const char *col, const struct device_profile **p)
{
	char buf[256];
	size_t o = 0;
	int depth = 0, rc;
	const char *name = col;

	if (col[0] >= '1' && col[0] <= '9' && col[1] == 'x' && col[2] == ' ')
		name = col + 3;
	rc = device_resolve(shipped_table(), name, p);
	if (rc == 0)
		return 0;
	for (const char *s = name; *s && o + 1 < sizeof(buf); s++) {
		if (*s == '(')
			depth++;
		else if (*s == ')')
			depth -= depth > 0;
		else if (*s == ',' && depth == 0)
			break;
		else if (depth == 0)
			buf[o++] = *s;
	}
	buf[o] = '\0';
	return device_resolve(shipped_table(), buf, p);
}

START_TEST(every_device_of_the_calibration_files_is_present)
{
	char *gp = t_path(t_data_dir(), "calibration/gpus.csv");
	char *bp = t_path(t_data_dir(), "calibration/llamacpp_tg_pp.csv");
	struct t_csv *g = t_csv_read(gp), *b = t_csv_read(bp);
	const struct device_profile *p = NULL;

	ck_assert_ptr_nonnull(g);
	ck_assert_ptr_nonnull(b);
	for (int r = 0; r < g->n_rows; r++) {
		const char *name = t_csv_get(g, r, "name");
		if (strstr(name, "working set"))
			continue; /* a row about the Apple working-set rule, not a device */
		if (strcmp(name, "NVIDIA A100 40GB (SXM/PCIe)") == 0) {
			/* One row for both 40 GB form factors: both must exist. */
			ck_assert_int_eq(
				device_resolve(shipped_table(), "NVIDIA A100-SXM4-40GB", &p), 0);
			ck_assert_int_eq(
				device_resolve(shipped_table(), "NVIDIA A100-PCIE-40GB", &p), 0);
			continue;
		}
		ck_assert_msg(resolve_calibration_name(name, &p) == 0,
			      "gpus.csv row %d '%s' is not in devices.json", r + 2, name);
	}
	for (int r = 0; r < b->n_rows; r++) {
		const char *name = t_csv_get(b, r, "device");
		int rc;
		if (strstr(name, " + ")) {
			/* A host CPU plus a GPU: each part must be present. */
			ck_assert_int_eq(device_resolve(shipped_table(), "Ryzen 9 7900X", &p), 0);
			ck_assert_int_eq(device_resolve(shipped_table(), "RTX 4090", &p), 0);
			continue;
		}
		rc = resolve_calibration_name(name, &p);
		if (strcmp(name, "NVIDIA A100") == 0 ||
		    strcmp(name, "NVIDIA A100 (CUDA 12.4)") == 0) {
			/* The row does not say which A100: refusing to guess is right. */
			ck_assert_int_ne(rc, 0);
			continue;
		}
		ck_assert_msg(rc == 0, "llamacpp_tg_pp.csv row %d '%s' is not in devices.json (%d)",
			      r + 2, name, rc);
	}
	t_csv_free(g);
	t_csv_free(b);
	free(gp);
	free(bp);
}
END_TEST

START_TEST(compute_rate_and_working_set)
{
	const struct device_profile *p = NULL;
	enum device_compute_kind k;

	ck_assert_int_eq(device_resolve(shipped_table(), "RTX 4090", &p), 0);
	ck_assert_double_eq_tol(device_compute_tflops(p, &k), 330.30144, 1e-9);
	ck_assert_int_eq(k, DEVICE_COMPUTE_TENSOR);
	ck_assert_int_eq(device_resolve(shipped_table(), "RTX 4060", &p), 0);
	ck_assert_double_eq_tol(device_compute_tflops(p, &k), 15.1, 1e-9);
	ck_assert_int_eq(k, DEVICE_COMPUTE_VECTOR_NO_TENSOR);
	ck_assert_int_eq(device_resolve(shipped_table(), "Tesla P100-PCIE-16GB", &p), 0);
	ck_assert_double_eq_tol(device_compute_tflops(p, &k), 9.339904, 1e-9);
	ck_assert_int_eq(k, DEVICE_COMPUTE_VECTOR);
	ck_assert_int_eq(device_resolve(shipped_table(), "Apple M2 Max", &p), 0);
	ck_assert_double_gt(device_compute_tflops(p, &k), 0);
	ck_assert_int_eq(k, DEVICE_COMPUTE_VECTOR);
	/* 2/3 of RAM up to 32 GB, 3/4 above (the Metal logs in gpus.csv). */
	ck_assert_int_eq(device_gpu_working_set_bytes(p, 32 * GIB), (int64_t)(32 * GIB * 0.6667));
	ck_assert_int_eq(device_gpu_working_set_bytes(p, 64 * GIB), 48 * GIB);
	ck_assert_int_eq(device_gpu_working_set_bytes(p, 0), -1);
	ck_assert_int_eq(device_resolve(shipped_table(), "AMD Instinct MI300A", &p), 0);
	ck_assert_double_eq(device_compute_tflops(p, &k), -1);
	ck_assert_int_eq(k, DEVICE_COMPUTE_UNKNOWN);
	ck_assert_int_eq(device_gpu_working_set_bytes(p, 64 * GIB), -1);
	ck_assert_double_eq(device_compute_tflops(NULL, &k), -1);
}
END_TEST

/* A long run of GEMMs is rated at the clocks a card holds: its peak, or where its power limit
 * holds the clocks down (a 70 W T4: 24 TFLOPS measured in a continuous GEMM), the peak those
 * clocks give, measured / DEVICE_GEMM_SHARE_HELD. */
START_TEST(held_rate_under_a_power_limit)
{
	const struct device_profile *p = NULL;
	struct device_profile q;

	ck_assert_int_eq(device_resolve(shipped_table(), "Tesla T4", &p), 0);
	ck_assert_double_eq(p->sustained_gemm_tflops, 24);
	ck_assert_double_lt(p->decode_bandwidth_share, 0); /* a discrete card: none */
	ck_assert_double_eq_tol(device_held_tflops(p, p->bf16_tflops), 24 / 0.9, 1e-9);
	ck_assert_double_eq_tol(device_held_tflops(p, p->fp16_tflops), 24 / 0.9, 1e-9);
	/* A lower figure than the held one is kept (a peak given for another precision). */
	ck_assert_double_eq(device_held_tflops(p, 20), 20);
	ck_assert_double_eq(device_held_tflops(p, -1), -1);
	/* A card that holds its clocks, and none known: the peak as given. */
	ck_assert_int_eq(device_resolve(shipped_table(), "RTX 4090", &p), 0);
	ck_assert_double_lt(p->sustained_gemm_tflops, 0);
	ck_assert_double_eq(device_held_tflops(p, p->bf16_tflops), p->bf16_tflops);
	ck_assert_double_eq(device_held_tflops(NULL, 100), 100);
	/* A measurement near the peak changes nothing. */
	q = *p;
	q.sustained_gemm_tflops = q.bf16_tflops * 0.95;
	ck_assert_double_eq(device_held_tflops(&q, q.bf16_tflops), q.bf16_tflops);
}
END_TEST

/* Loads a devices.json text; returns the loader's rc, the message in err. */
static int load_text(const char *text, struct device_table *t, char *err, size_t errlen)
{
	cJSON *doc = cJSON_Parse(text);
	int rc;

	ck_assert_msg(doc != NULL, "test JSON does not parse: %s", text);
	rc = api_device_table_from_json(doc, t, err, errlen);
	cJSON_Delete(doc);
	return rc;
}

#define ENTRY_HEAD "{\"id\":\"x-1\",\"vendor\":\"nvidia\",\"name\":\"X One\",\"aliases\":[\"X 1\"],"
#define ENTRY_TAIL "\"kind\":\"gpu\",\"unified\":false,\"source\":\"test\"}"
#define DOC(entries) "{\"version\":1,\"source\":\"t\",\"devices\":[" entries "]}"

START_TEST(json_errors_name_the_file_entry_and_field)
{
	static const struct {
		const char *text;
		int rc;
		const char *msg;
	} cases[] = {
		{DOC(ENTRY_HEAD "\"memory_bandwidth_gbs\":-5," ENTRY_TAIL), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): memory_bandwidth_gbs must be a positive number"},
		{DOC(ENTRY_HEAD "\"memory_gib\":\"24\"," ENTRY_TAIL), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): memory_gib must be a positive number"},
		{DOC(ENTRY_HEAD "\"bandwith\":5," ENTRY_TAIL), RF_E_UNKNOWN_FIELD,
		 "devices.json: entry 1 (x-1): unknown field 'bandwith'"},
		{DOC("{\"id\":\"x-1\",\"vendor\":\"v\",\"name\":\"n\",\"aliases\":[],\"kind\":\"gpu\","
		     "\"unified\":false}"),
		 RF_E_MISSING_FIELD, "devices.json: entry 1 (x-1): source is missing"},
		{DOC("{\"vendor\":\"v\"}"), RF_E_MISSING_FIELD,
		 "devices.json: entry 1 (?): id is missing"},
		{DOC("{\"id\":\"RTX_4090\"}"), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (RTX_4090): id must be kebab-case (a-z, 0-9 and single dashes)"},
		{DOC(ENTRY_HEAD "\"kind\":\"fpga\",\"unified\":false,\"source\":\"t\"}"),
		 RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): kind must be \"gpu\", \"soc\" or \"cpu\""},
		{DOC(ENTRY_HEAD "\"fp16_tflops\":100," ENTRY_TAIL), RF_E_MISSING_FIELD,
		 "devices.json: entry 1 (x-1): fp16_kind is missing (fp16_tflops needs \"tensor\" or "
		 "\"vector\")"},
		{DOC(ENTRY_HEAD "\"sustained_gemm_tflops\":24," ENTRY_TAIL), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): sustained_gemm_tflops needs fp16_tflops, at least as "
		 "large"},
		{DOC(ENTRY_HEAD "\"fp16_tflops\":20,\"fp16_kind\":\"tensor\","
				"\"sustained_gemm_tflops\":24," ENTRY_TAIL),
		 RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): sustained_gemm_tflops needs fp16_tflops, at least as "
		 "large"},
		{DOC(ENTRY_HEAD "\"decode_bandwidth_share\":0," ENTRY_TAIL), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): decode_bandwidth_share must be a positive number"},
		{DOC(ENTRY_HEAD "\"decode_bandwidth_share\":1.2," ENTRY_TAIL), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): decode_bandwidth_share must be at most 1"},
		{DOC(ENTRY_HEAD "\"compute_capability\":\"8\"," ENTRY_TAIL), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): compute_capability must look like \"8.9\""},
		{DOC(ENTRY_HEAD "\"isa\":[\"avx2\",\"avx1024\"]," ENTRY_TAIL), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): isa: unknown instruction set 'avx1024'"},
		{DOC(ENTRY_HEAD "\"isa\":\"avx2\"," ENTRY_TAIL), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): isa must be an array of instruction-set names"},
		{DOC(ENTRY_HEAD "\"gpu_cores\":2.5," ENTRY_TAIL), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): gpu_cores must be an integer from 1 to 100000"},
		{DOC(ENTRY_HEAD "\"notes\":\"caf\\u00e9\"," ENTRY_TAIL), RF_E_INVALID_VALUE,
		 "devices.json: entry 1 (x-1): notes must be printable ASCII"},
		{DOC(ENTRY_HEAD "\"memory_gib\":24,\"memory_gib\":48," ENTRY_TAIL),
		 RF_E_INVALID_VALUE, "devices.json: entry 1 (x-1): memory_gib is given twice"},
		{DOC(ENTRY_HEAD ENTRY_TAIL "," ENTRY_HEAD ENTRY_TAIL), RF_E_CONFLICT,
		 "devices.json: entry 2 (x-1): id is also used by entry 1"},
		{DOC(ENTRY_HEAD ENTRY_TAIL
		     ",{\"id\":\"x-2\",\"vendor\":\"v\",\"name\":\"Other\","
		     "\"aliases\":[\"NVIDIA X-1\"],\"kind\":\"gpu\",\"unified\":"
		     "false,\"source\":\"t\"}"),
		 RF_E_CONFLICT,
		 "devices.json: entry 2 (x-2): name 'NVIDIA X-1' cannot be told apart from 'x-1' of entry "
		 "1 (x-1)"},
		{"[]", RF_E_INVALID_VALUE, "devices.json: the top level must be an object"},
		{"{\"version\":1}", RF_E_MISSING_FIELD, "devices.json: devices is missing"},
		{"{\"devices\":[],\"extra\":1}", RF_E_UNKNOWN_FIELD,
		 "devices.json: unknown top-level field 'extra'"},
		{"{\"devices\":[]}", RF_E_INVALID_VALUE, "devices.json: devices is empty"},
		{"{\"version\":0,\"devices\":[]}", RF_E_INVALID_VALUE,
		 "devices.json: version must be a positive integer"},
	};
	char err[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct device_table t = {.n = 7, .devices = NULL};
		int rc = load_text(cases[i].text, &t, err, sizeof(err));
		ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d, want %d (%s)", i, rc,
			      cases[i].rc, err);
		ck_assert_str_eq(err, cases[i].msg);
		ck_assert_int_eq(t.n, 7); /* untouched */
		ck_assert_ptr_null(t.devices);
	}
}
END_TEST

START_TEST(json_caps_on_entries_strings_and_aliases)
{
	struct device_table t = {.n = 0, .devices = NULL};
	char err[512], name[DEVICE_NAME_LEN + 2];
	cJSON *doc = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(doc, "devices");
	cJSON *e, *al;

	/* DEVICE_TABLE_MAX + 1 entries. */
	for (int i = 0; i <= DEVICE_TABLE_MAX; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateObject());
	ck_assert_int_eq(api_device_table_from_json(doc, &t, err, sizeof(err)), RF_E_TOO_LARGE);
	ck_assert_str_eq(err, "devices.json: devices has 1025 entries, more than 1024");
	cJSON_Delete(doc);

	doc = cJSON_Parse(DOC(ENTRY_HEAD ENTRY_TAIL));
	e = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "devices"), 0);
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	cJSON_ReplaceItemInObject(e, "name", cJSON_CreateString(name));
	ck_assert_int_eq(api_device_table_from_json(doc, &t, err, sizeof(err)), RF_E_TOO_LARGE);
	ck_assert_str_eq(err, "devices.json: entry 1 (x-1): name is longer than 95 bytes");
	cJSON_ReplaceItemInObject(e, "name", cJSON_CreateString("X One"));
	al = cJSON_GetObjectItem(e, "aliases");
	for (int i = 0; i < DEVICE_MAX_ALIASES; i++)
		cJSON_AddItemToArray(al, cJSON_CreateString("more"));
	ck_assert_int_eq(api_device_table_from_json(doc, &t, err, sizeof(err)), RF_E_TOO_LARGE);
	ck_assert_str_eq(err, "devices.json: entry 1 (x-1): aliases has more than 16 names");
	cJSON_Delete(doc);
	ck_assert_int_eq(t.n, 0);
}
END_TEST

START_TEST(json_round_trip_of_an_entry)
{
	const struct device_profile *p = NULL;
	struct device_table t = {.n = 0, .devices = NULL};
	cJSON *doc = cJSON_CreateObject(), *arr, *o;
	char err[512];

	ck_assert_int_eq(device_resolve(shipped_table(), "RTX 4090", &p), 0);
	o = api_device_to_cjson(p);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "fp16_kind")->valuestring, "tensor");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "usd_per_hour")));
	/* The renderer's nulls and empty strings are not all valid input: drop them. */
	cJSON_DeleteItemFromObject(o, "usd_per_hour");
	cJSON_DeleteItemFromObject(o, "sustained_gemm_tflops");
	cJSON_DeleteItemFromObject(o, "notes");
	arr = cJSON_AddArrayToObject(doc, "devices");
	cJSON_AddItemToArray(arr, o);
	ck_assert_msg(api_device_table_from_json(doc, &t, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(t.n, 1);
	ck_assert_str_eq(t.devices[0].id, "rtx-4090");
	ck_assert_double_eq(t.devices[0].memory_bandwidth_gbs, p->memory_bandwidth_gbs);
	ck_assert_double_eq(t.devices[0].fp16_tflops, p->fp16_tflops);
	ck_assert_int_eq(t.devices[0].n_aliases, p->n_aliases);
	device_table_clear(&t);
	device_table_clear(NULL);
	cJSON_Delete(doc);
}
END_TEST

/* The CPU table: real /proc/cpuinfo captures (tests/data/fixtures) resolve by their model
 * string to the entry of their family, with its theoretical bandwidth; CPUs the table does
 * not hold, and GPU names, resolve to none. */
START_TEST(cpu_models_resolve_to_their_family)
{
	static const struct {
		const char *fixture, *id;
		double gbs;
	} rows[] = {
		{"amd-ryzen9-5950x__proc-cpuinfo-cpu0-only.txt", "amd-ryzen-5000-desktop", 51.2},
		{"amd-ryzen9-9950x__proc-cpuinfo-cpu0-only.txt", "amd-ryzen-9000-desktop", 89.6},
		{"intel-core-ultra9-285__proc-cpuinfo-cpu0-only.txt",
		 "intel-core-ultra-200s-desktop", 102.4},
		{"intel-xeon-platinum-8480plus__proc-cpuinfo-cpu0-only.txt", "xeon-sapphire-rapids",
		 307.2},
		{"amd-ryzen5-1600__proc-cpuinfo.txt", NULL, 0},
		{"intel-core-i7-8650u-laptop__proc-cpuinfo.txt", NULL, 0},
		{"intel-xeon-l5640-2socket__proc-cpuinfo.txt", NULL, 0},
	};
	const struct device_profile *p = NULL;

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *path = t_path(t_data_dir(), "fixtures");
		char *file = t_path(path, rows[i].fixture);
		size_t len;
		char *text = t_read_file(file, &len);
		struct hw_cpu cpu;
		int rc;

		ck_assert_msg(text != NULL, "cannot read %s", file);
		memset(&cpu, 0, sizeof(cpu));
		ck_assert_int_eq(hw_parse_cpuinfo(text, len, &cpu), 0);
		rc = device_resolve_cpu(shipped_table(), cpu.model, &p);
		if (rows[i].id) {
			ck_assert_msg(rc == 0, "%s: '%s' did not resolve (%d)", rows[i].fixture,
				      cpu.model, rc);
			ck_assert_str_eq(p->id, rows[i].id);
			ck_assert_double_eq_tol(p->memory_bandwidth_gbs, rows[i].gbs, 1e-9);
		} else {
			ck_assert_msg(rc == RF_E_NOT_FOUND, "%s: '%s' resolved", rows[i].fixture,
				      cpu.model);
		}
		free(text);
		free(file);
		free(path);
	}
	/* The decorations of other vendors' strings, and names that are not CPUs. */
	ck_assert_int_eq(device_resolve_cpu(shipped_table(), "AMD EPYC 9654 96-Core Processor", &p),
			 0);
	ck_assert_str_eq(p->id, "epyc-9004-genoa");
	ck_assert_int_eq(
		device_resolve_cpu(shipped_table(), "13th Gen Intel(R) Core(TM) i7-13700K", &p), 0);
	ck_assert_str_eq(p->id, "intel-core-13th-14th-desktop");
	ck_assert_int_eq(device_resolve_cpu(shipped_table(),
					    "AMD Ryzen 7 7840HS w/ Radeon 780M Graphics", &p),
			 0);
	ck_assert_str_eq(p->id, "amd-ryzen-7040-8040-mobile");
	ck_assert_int_eq(device_resolve_cpu(shipped_table(), "NVIDIA GeForce RTX 4090", &p),
			 RF_E_NOT_FOUND);
	ck_assert_int_eq(device_resolve_cpu(shipped_table(), "AMD EPYC", &p), RF_E_NOT_FOUND);
	ck_assert_int_eq(device_resolve_cpu(shipped_table(), "", &p), RF_E_INVALID_VALUE);
	ck_assert_int_eq(device_resolve_cpu(shipped_table(), NULL, &p), RF_E_INVALID_VALUE);
}
END_TEST

Suite *device_suite(void)
{
	Suite *s = suite_create("device");
	TCase *tc = tcase_create("device");

	tcase_add_unchecked_fixture(tc, NULL, free_shipped);
	tcase_add_test(tc, normalize_folds_vendor_words_case_dashes_and_sizes);
	tcase_add_test(tc, normalize_rejects_empty_noise_only_and_long_names);
	tcase_add_test(tc, bandwidth_from_bus_width_and_clock);
	tcase_add_test(tc, tool_names_and_short_names_resolve);
	tcase_add_test(tc, near_misses_do_not_resolve_to_the_wrong_part);
	tcase_add_test(tc, bare_model_numbers_name_their_part);
	tcase_add_test(tc, names_that_begin_several_parts_list_them);
	tcase_add_test(tc, detected_memory_picks_between_variants_with_one_name);
	tcase_add_test(tc, shipped_table_is_large_unique_and_every_alias_resolves_to_its_entry);
	tcase_add_test(tc, every_device_of_the_calibration_files_is_present);
	tcase_add_test(tc, compute_rate_and_working_set);
	tcase_add_test(tc, held_rate_under_a_power_limit);
	tcase_add_test(tc, json_errors_name_the_file_entry_and_field);
	tcase_add_test(tc, json_caps_on_entries_strings_and_aliases);
	tcase_add_test(tc, json_round_trip_of_an_entry);
	tcase_add_test(tc, cpu_models_resolve_to_their_family);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
