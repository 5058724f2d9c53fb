/*
 * The NVIDIA parsers of core/hw/hw_parse_nvidia.c: the NVML child's record, nvidia-smi's CSV and
 * `nvidia-smi -L`. Real outputs come from tests/data/fixtures (see its INDEX.md); values were
 * read off the captures by eye, not from the parser. Hostile inputs (CRLF, truncation, [N/A],
 * overflow, garbage, nothing at all) must give unknowns and rejected lines, never a GPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/hw/hw_parse_nvidia.h"
#include "tests/test.h"

#define MIB (1024LL * 1024)
#define QUERY_FULL                                                                                 \
	"index,name,uuid,pci.bus_id,pci.device_id,memory.total,memory.used,memory.free,"           \
	"driver_version,clocks.max.memory,mig.mode.current,compute_cap"

static struct hw_nvidia_report *report(void)
{
	struct hw_nvidia_report *r = malloc(sizeof(*r));

	ck_assert_ptr_nonnull(r);
	return r;
}

/* ---- the NVML record ---------------------------------------------------------------------- */

/* Two GPUs of the HGX H100 capture (hgx-h100-sxm-8gpu__nvidia-smi-a.txt), as the child writes
 * them: bytes, not MiB. */
static const char h100_record[] = "rigfit-nvml 1\n"
				  "driver_version=565.57.01\n"
				  "cuda_version=12070\n"
				  "count=2\n"
				  "gpu=0\n"
				  "name=NVIDIA H100 80GB HBM3\n"
				  "uuid=GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1\n"
				  "pci_bus_id=00000000:18:00.0\n"
				  "pci_device_id=590352606\n"
				  "memory_total=85520809984\n"
				  "memory_free=85045805056\n"
				  "memory_used=1048576\n"
				  "compute_capability=9.0\n"
				  "memory_bus_width=5120\n"
				  "max_memory_clock=2619\n"
				  "architecture=9\n"
				  "mig_mode=0\n"
				  "gpu=1\n"
				  "name=NVIDIA H100 80GB HBM3\n"
				  "uuid=GPU-7c3cadbd-17e5-0913-f69b-c618122ea0cd\n"
				  "pci_bus_id=00000000:2A:00.0\n"
				  "memory_error=15\n"
				  "compute_capability=9.0\n"
				  "end\n";

START_TEST(nvml_record_two_gpus)
{
	struct hw_nvidia_report *r = report();
	const struct hw_gpu *g;

	ck_assert_int_eq(hw_parse_nvml_record(h100_record, strlen(h100_record), r), 0);
	ck_assert(r->magic && r->complete && !r->library_missing);
	ck_assert_int_eq(r->count, 2);
	ck_assert_int_eq(r->n_gpus, 2);
	ck_assert_int_eq(r->n_rejected, 0);
	ck_assert_int_eq(r->n_bad_values, 0);
	g = &r->gpus[0];
	ck_assert_str_eq(g->vendor, "nvidia");
	ck_assert_str_eq(g->name, "NVIDIA H100 80GB HBM3");
	ck_assert_str_eq(g->uuid, "GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1");
	ck_assert_str_eq(g->pci_bus_id, "00000000:18:00.0");
	ck_assert_str_eq(g->pci_device_id, "0x2330"); /* 590352606 = 0x233010DE */
	ck_assert_int_eq(g->memory_total_bytes, 81559 * MIB);
	ck_assert_int_eq(g->memory_free_bytes, 81106 * MIB);
	ck_assert_int_eq(g->memory_used_bytes, 1 * MIB);
	ck_assert(!g->unified_memory);
	ck_assert_str_eq(g->compute_capability, "9.0");
	ck_assert_str_eq(g->driver_version, "565.57.01");
	ck_assert_str_eq(g->cuda_version, "12.7");
	ck_assert_int_eq(g->memory_bus_width_bits, 5120);
	ck_assert_int_eq(g->max_memory_clock_mhz, 2619);
	ck_assert_str_eq(g->architecture, "Hopper"); /* NVML_DEVICE_ARCH_HOPPER */
	ck_assert(fabs(g->memory_bandwidth_gbs - 3352.32) < 1e-6);
	ck_assert(g->has_mig && !g->mig.enabled);
	ck_assert_int_eq(g->mig.instances, 0);
	/* The second GPU's memory query failed: unknown, and the code kept for the warning. */
	g = &r->gpus[1];
	ck_assert_int_eq(r->memory_error[1], 15);
	ck_assert_int_eq(r->memory_error[0], 0);
	ck_assert_int_eq(g->memory_total_bytes, HW_UNKNOWN);
	ck_assert_int_eq(g->memory_free_bytes, HW_UNKNOWN);
	ck_assert(!g->has_mig); /* no mig_mode line: MIG not supported, rendered as null */
	ck_assert(g->memory_bandwidth_gbs < 0);
	ck_assert_int_eq(r->nv_index[1], 1);
	free(r);
}
END_TEST

START_TEST(nvml_record_mig_and_crlf)
{
	static const char rec[] = "rigfit-nvml 1\r\n"
				  "driver_version=590.48.01\r\n"
				  "cuda_version=13010\r\n"
				  "count=1\r\n"
				  "gpu=0\r\n"
				  "name=NVIDIA H100 80GB HBM3\r\n"
				  "pci_bus_id=0000:00:09.0\r\n"
				  "mig_mode=1\r\n"
				  "mig_instances=4\r\n"
				  "future_key=ignored\r\n"
				  "end\r\n";
	struct hw_nvidia_report *r = report();

	ck_assert_int_eq(hw_parse_nvml_record(rec, strlen(rec), r), 0);
	ck_assert(r->complete);
	ck_assert_int_eq(r->n_gpus, 1);
	ck_assert_str_eq(r->gpus[0].name, "NVIDIA H100 80GB HBM3");
	ck_assert_str_eq(r->gpus[0].cuda_version, "13.1");
	/* The first NVML version's short bus id is widened to nvidia-smi's form. */
	ck_assert_str_eq(r->gpus[0].pci_bus_id, "00000000:00:09.0");
	ck_assert(r->gpus[0].has_mig && r->gpus[0].mig.enabled);
	ck_assert_int_eq(r->gpus[0].mig.instances, 4);
	ck_assert_int_eq(r->n_rejected, 0);
	free(r);
}
END_TEST

START_TEST(nvml_record_failures)
{
	static const char no_lib[] =
		"rigfit-nvml 1\n"
		"dlopen_error=libnvidia-ml.so.1: cannot open shared object file\n"
		"end\n";
	static const char no_init[] = "rigfit-nvml 1\nmissing=nvmlDeviceGetMemoryBusWidth\n"
				      "missing=nvmlDeviceGetMigMode\ninit_error=9\nend\n";
	static const char no_count[] = "rigfit-nvml 1\ncount_error=3\nend\n";
	struct hw_nvidia_report *r = report();

	ck_assert_int_eq(hw_parse_nvml_record(no_lib, strlen(no_lib), r), 0);
	ck_assert(r->library_missing && r->complete);
	ck_assert_ptr_nonnull(strstr(r->library_error, "cannot open shared object"));
	ck_assert_int_eq(r->n_gpus, 0);

	ck_assert_int_eq(hw_parse_nvml_record(no_init, strlen(no_init), r), 0);
	ck_assert_int_eq(r->init_error, 9);
	ck_assert_int_eq(r->n_missing, 2);
	ck_assert_str_eq(r->missing[0], "nvmlDeviceGetMemoryBusWidth");
	ck_assert_str_eq(r->missing[1], "nvmlDeviceGetMigMode");

	ck_assert_int_eq(hw_parse_nvml_record(no_count, strlen(no_count), r), 0);
	ck_assert_int_eq(r->count_error, 3);
	ck_assert_int_eq(r->count, HW_UNKNOWN);
	free(r);
}
END_TEST

START_TEST(nvml_record_truncated_or_not_a_record)
{
	struct hw_nvidia_report *r = report();
	/* A child killed half-way through GPU 1: parsed as far as it goes, but not complete. */
	size_t cut = (size_t)(strstr(h100_record, "pci_bus_id=00000000:2A") - h100_record) + 15;

	ck_assert_int_eq(hw_parse_nvml_record(h100_record, cut, r), 0);
	ck_assert(!r->complete);
	ck_assert_int_eq(r->n_gpus, 2);
	ck_assert_str_eq(r->gpus[0].name, "NVIDIA H100 80GB HBM3");

	ck_assert_int_eq(hw_parse_nvml_record("", 0, r), RF_E_PARSE);
	ck_assert_int_eq(r->n_gpus, 0);
	ck_assert_int_eq(hw_parse_nvml_record(NULL, 0, r), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_nvml_record("gpu=0\nname=x\nend\n", 18, r), RF_E_PARSE);
	ck_assert_int_eq(r->n_gpus, 0);
	/* The magic line must be whole: a prefix is not it. */
	ck_assert_int_eq(hw_parse_nvml_record("rigfit-nvml", 11, r), RF_E_PARSE);
	free(r);
}
END_TEST

START_TEST(nvml_record_hostile_values)
{
	static const char rec[] =
		"rigfit-nvml 1\n"
		"cuda_version=7\n" /* not a CUDA version */
		"gpu=0\n"
		"name=\n"                                   /* empty: unknown */
		"memory_total=99999999999999999999999999\n" /* overflows u64 */
		"memory_free=12\n"
		"memory_bus_width=-384\n" /* signed: junk */
		"max_memory_clock=1e4\n"  /* not decimal digits */
		"compute_capability=9\n"  /* no minor */
		"mig_mode=2\n"            /* out of range */
		"architecture=Hopper\n"   /* a name, not NVML's number */
		"garbage line without an equals sign\n"
		"gpu=one\n" /* bad index: the section is dropped */
		"name=ghost\n"
		"gpu=1\n"
		"memory_total=1000\n"
		"memory_free=2000\n"        /* more free than total: dropped */
		"architecture=4294967295\n" /* NVML_DEVICE_ARCH_UNKNOWN: not malformed */
		"end\n"
		"gpu=2\n"; /* after end: ignored */
	struct hw_nvidia_report *r = report();
	const struct hw_gpu *g;

	ck_assert_int_eq(hw_parse_nvml_record(rec, strlen(rec), r), 0);
	ck_assert(r->complete);
	ck_assert_int_eq(r->n_gpus, 2);
	ck_assert_int_eq(r->n_rejected, 2);
	g = &r->gpus[0];
	ck_assert_str_eq(g->name, "");
	ck_assert_str_eq(g->cuda_version, "");
	ck_assert_int_eq(g->memory_total_bytes, HW_UNKNOWN);
	ck_assert_int_eq(g->memory_free_bytes, 12);
	ck_assert_int_eq(g->memory_bus_width_bits, HW_UNKNOWN);
	ck_assert_int_eq(g->max_memory_clock_mhz, HW_UNKNOWN);
	ck_assert_str_eq(g->compute_capability, "");
	ck_assert_str_eq(g->architecture, "");
	ck_assert(!g->has_mig);
	g = &r->gpus[1];
	ck_assert_int_eq(g->memory_total_bytes, 1000);
	ck_assert_int_eq(g->memory_free_bytes, HW_UNKNOWN);
	ck_assert_str_eq(g->architecture, "");
	/* cuda, name, total, width, clock, cc, mig, architecture, free>total */
	ck_assert_int_eq(r->n_bad_values, 9);
	free(r);
}
END_TEST

START_TEST(nvml_record_caps_gpu_count)
{
	size_t cap = 100 * 32 + 64, n = 0;
	char *rec = malloc(cap);
	struct hw_nvidia_report *r = report();

	n += (size_t)snprintf(rec + n, cap - n, "rigfit-nvml 1\ncount=100\n");
	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(rec + n, cap - n, "gpu=%d\nname=G%d\n", i, i);
	n += (size_t)snprintf(rec + n, cap - n, "end\n");
	ck_assert_int_eq(hw_parse_nvml_record(rec, n, r), 0);
	ck_assert_int_eq(r->n_gpus, HW_MAX_GPUS);
	ck_assert_int_eq(r->n_dropped, 100 - HW_MAX_GPUS);
	ck_assert_str_eq(r->gpus[HW_MAX_GPUS - 1].name, "G63");
	free(rec);
	free(r);
}
END_TEST

/* ---- nvidia-smi CSV ----------------------------------------------------------------------- */

/* henrygd/beszel's query, recorded on a 4× A10 server: used as is, with its own field list. */
START_TEST(smi_csv_a10_server_as_recorded)
{
	size_t len;
	char *csv = t_fixture("nvidia-a10-4gpu-server__nvidia-smi-query-gpu-noheader-nounits.csv",
			      &len);
	struct hw_nvidia_report *r = report();

	ck_assert_int_eq(hw_parse_nvidia_smi_csv(csv, len,
						 "index,name,temperature.gpu,memory.used,"
						 "memory.total,utilization.gpu,power.draw",
						 r),
			 0);
	ck_assert_int_eq(r->n_gpus, 4);
	ck_assert_int_eq(r->n_rejected, 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_str_eq(r->gpus[i].name, "NVIDIA A10");
		ck_assert_str_eq(r->gpus[i].vendor, "nvidia");
		ck_assert_int_eq(r->gpus[i].memory_total_bytes, 23028 * MIB);
		ck_assert_int_eq(r->gpus[i].memory_free_bytes, HW_UNKNOWN); /* not asked */
		ck_assert_int_eq(r->nv_index[i], i);
		ck_assert(!r->gpus[i].has_mig);
	}
	ck_assert_int_eq(r->gpus[0].memory_used_bytes, 19676 * MIB);
	ck_assert_int_eq(r->gpus[3].memory_used_bytes, 18222 * MIB);
	/* The same bytes read with rigfit's own query do not line up: rejected, no GPU. */
	ck_assert_int_eq(hw_parse_nvidia_smi_csv(csv, len, QUERY_FULL, r), 0);
	ck_assert_int_eq(r->n_gpus, 0);
	ck_assert_int_eq(r->n_rejected, 4);
	free(csv);
	free(r);
}
END_TEST

START_TEST(smi_csv_na_values_crlf_and_spaces)
{
	/* Row 0: the RTX 3060 Laptop of rtx-3060-laptop__nvidia-smi-q-x.xml, MIG "[N/A]", CRLF.
	 * Row 1: the MIG H100 of h100-mig-linux-driver590.48.01__nvidia-smi-query-gpu-wide.csv
	 * with extra spaces and tabs. Row 2: every value unavailable but the name. */
	static const char csv[] =
		"0, NVIDIA GeForce RTX 3060 Laptop GPU, GPU-473d8d0f-d462-185c-6b36-6fc23e23e571, "
		"00000000:01:00.0, 0x252010DE, 6144, 5, 5940, 515.65.01, 6001, [N/A], 8.6\r\n"
		"  1 ,NVIDIA H100 80GB HBM3,\tGPU-00000000-0000-0000-0000-000000000000 , "
		"00000000:00:09.0,0x233010DE,81559 ,59,  81022,590.48.01,2619,Enabled,9.0  \r\n"
		"\r\n"
		"2, Tesla X, [N/A], [Not Supported], [N/A], [N/A], N/A, [Unknown Error], [N/A], "
		"[Not Supported], [N/A], [N/A]\n";
	struct hw_nvidia_report *r = report();
	const struct hw_gpu *g;

	ck_assert_int_eq(hw_parse_nvidia_smi_csv(csv, strlen(csv), QUERY_FULL, r), 0);
	ck_assert_int_eq(r->n_gpus, 3);
	ck_assert_int_eq(r->n_rejected, 0);
	ck_assert_int_eq(r->n_bad_values, 0);
	g = &r->gpus[0];
	ck_assert_str_eq(g->name, "NVIDIA GeForce RTX 3060 Laptop GPU");
	ck_assert_str_eq(g->uuid, "GPU-473d8d0f-d462-185c-6b36-6fc23e23e571");
	ck_assert_str_eq(g->pci_bus_id, "00000000:01:00.0");
	ck_assert_str_eq(g->pci_device_id, "0x2520");
	ck_assert_int_eq(g->memory_total_bytes, 6144 * MIB);
	ck_assert_int_eq(g->memory_used_bytes, 5 * MIB);
	ck_assert_int_eq(g->memory_free_bytes, 5940 * MIB);
	ck_assert_str_eq(g->driver_version, "515.65.01");
	ck_assert_int_eq(g->max_memory_clock_mhz, 6001);
	ck_assert(!g->has_mig);
	ck_assert_str_eq(g->compute_capability, "8.6");
	ck_assert_str_eq(g->cuda_version, "");  /* nvidia-smi's CSV does not say */
	ck_assert(g->memory_bandwidth_gbs < 0); /* no bus width from nvidia-smi */
	g = &r->gpus[1];
	ck_assert_int_eq(r->nv_index[1], 1);
	ck_assert_str_eq(g->uuid, "GPU-00000000-0000-0000-0000-000000000000");
	ck_assert_int_eq(g->memory_total_bytes, 81559 * MIB);
	ck_assert_int_eq(g->memory_free_bytes, 81022 * MIB);
	ck_assert(g->has_mig && g->mig.enabled);
	ck_assert_str_eq(g->compute_capability, "9.0");
	g = &r->gpus[2];
	ck_assert_str_eq(g->name, "Tesla X");
	ck_assert_str_eq(g->uuid, "");
	ck_assert_str_eq(g->pci_bus_id, "");
	ck_assert_int_eq(g->memory_total_bytes, HW_UNKNOWN);
	ck_assert_int_eq(g->memory_used_bytes, HW_UNKNOWN);
	ck_assert_int_eq(g->memory_free_bytes, HW_UNKNOWN);
	ck_assert_int_eq(g->max_memory_clock_mhz, HW_UNKNOWN);
	ck_assert_str_eq(g->compute_capability, "");
	free(r);
}
END_TEST

START_TEST(smi_csv_truncated_and_overflowing_rows_are_rejected)
{
	static const char csv[] =
		/* cut by the output cap in the middle of the row */
		"0, NVIDIA H100 80GB HBM3, GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1, 00000000:18:00.0, "
		"0x233010DE, 81559, 1, 81106\n"
		/* 26 digits: overflows */
		"1, NVIDIA H100 80GB HBM3, GPU-x, 00000000:2A:00.0, 0x233010DE, "
		"99999999999999999999999999, 1, 81106, 565.57.01, 2619, Disabled, 9.0\n"
		/* fits u64 but not the cap (2^30 MiB) */
		"2, NVIDIA H100 80GB HBM3, GPU-y, 00000000:3A:00.0, 0x233010DE, "
		"1073741825, 1, 81106, 565.57.01, 2619, Disabled, 9.0\n"
		/* negative, units left in, hex junk, signed index */
		"3, G, GPU-z, 00000000:5D:00.0, 0x233010DE, -5, 1, 1, 1, 1, Disabled, 9.0\n"
		"4, G, GPU-z, 00000000:5D:00.0, 0x233010DE, 81559 MiB, 1, 1, 1, 1, Disabled, 9.0\n"
		"5, G, GPU-z, 00000000:5D:00.0, 0xZZ, 1, 1, 1, 1, 1, Disabled, 9.0\n"
		"+6, G, GPU-z, 00000000:5D:00.0, 0x2330, 1, 1, 1, 1, 1, Disabled, 9.0\n"
		/* a good row still counts */
		"7, NVIDIA H100 80GB HBM3, GPU-33135771-a848-ece1-b61e-489e221d663c, 00000000:DB:00.0, "
		"0x233010DE, 81559, 1, 81106, 565.57.01, 2619, Disabled, 9.0";
	struct hw_nvidia_report *r = report();

	ck_assert_int_eq(hw_parse_nvidia_smi_csv(csv, strlen(csv), QUERY_FULL, r), 0);
	ck_assert_int_eq(r->n_rejected, 7);
	ck_assert_int_eq(r->n_gpus, 1);
	ck_assert_str_eq(r->gpus[0].uuid, "GPU-33135771-a848-ece1-b61e-489e221d663c");
	ck_assert_int_eq(r->nv_index[0], 7);
	ck_assert_int_eq(r->gpus[0].index, 0);
	free(r);
}
END_TEST

START_TEST(smi_csv_garbage_and_nothing)
{
	static const char *const garbage[] = {
		("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make "
		 "sure that the latest NVIDIA driver is installed and running.\n\n"),
		"No devices were found\n",
		"Field \"compute_cap\" is not a valid field to query.\n\n",
		"\x01\x02\xff\xfe,,,,,,,,,,,\n",
		",,,,,,,,,,,\n",
		"[N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A]\n",
	};
	struct hw_nvidia_report *r = report();

	for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
		ck_assert_int_eq(
			hw_parse_nvidia_smi_csv(garbage[i], strlen(garbage[i]), QUERY_FULL, r), 0);
		ck_assert_msg(r->n_gpus == 0, "a GPU was made of garbage %zu", i);
		ck_assert_int_ge(r->n_rejected, 1);
	}
	ck_assert_int_eq(hw_parse_nvidia_smi_csv("", 0, QUERY_FULL, r), 0);
	ck_assert_int_eq(r->n_gpus, 0);
	ck_assert_int_eq(r->n_rejected, 0);
	ck_assert_int_eq(hw_parse_nvidia_smi_csv(NULL, 0, QUERY_FULL, r), 0);
	ck_assert_int_eq(r->n_gpus, 0);
	ck_assert_int_eq(hw_parse_nvidia_smi_csv("\n\r\n  \n", 6, QUERY_FULL, r), 0);
	ck_assert_int_eq(r->n_rejected, 0);
	/* A field list rigfit cannot use. */
	ck_assert_int_eq(hw_parse_nvidia_smi_csv("0\n", 2, "", r), RF_E_INVALID_VALUE);
	ck_assert_int_eq(hw_parse_nvidia_smi_csv("0\n", 2, NULL, r), RF_E_INVALID_VALUE);
	ck_assert_int_eq(
		hw_parse_nvidia_smi_csv("0\n", 2,
					"a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,a,"
					"a,a,a,a,a,a,a,a",
					r),
		RF_E_INVALID_VALUE);
	free(r);
}
END_TEST

START_TEST(smi_csv_caps_gpu_count)
{
	size_t cap = 100 * 48, n = 0;
	char *csv = malloc(cap);
	struct hw_nvidia_report *r = report();

	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(csv + n, cap - n, "%d, GPU %d, 1024\n", i, i);
	ck_assert_int_eq(hw_parse_nvidia_smi_csv(csv, n, "index,name,memory.total", r), 0);
	ck_assert_int_eq(r->n_gpus, HW_MAX_GPUS);
	ck_assert_int_eq(r->n_dropped, 100 - HW_MAX_GPUS);
	free(csv);
	free(r);
}
END_TEST

/* ---- nvidia-smi -L ------------------------------------------------------------------------ */

START_TEST(smi_list_counts_mig_devices)
{
	static const char nine[] = "GPU 9: X\n  MIG 1g.10gb Device 0:\n";
	int counts[4];
	size_t len;
	char *h100 = t_fixture("h100-mig-linux-driver590.48.01__nvidia-smi-L.txt", &len);
	char *h200, *quadro;

	ck_assert_int_eq(hw_parse_nvidia_smi_list(h100, len, counts, 4), 1);
	ck_assert_int_eq(counts[0], 4);
	ck_assert_int_eq(counts[1], 0);
	h200 = t_fixture("h200-mig-linux-driver590.48.01__nvidia-smi-L.txt", &len);
	ck_assert_int_eq(hw_parse_nvidia_smi_list(h200, len, counts, 4), 1);
	ck_assert_int_eq(counts[0], 5);
	quadro = t_fixture("quadro-rtx4000-2gpu__nvidia-smi-L.txt", &len);
	ck_assert_int_eq(hw_parse_nvidia_smi_list(quadro, len, counts, 4), 2);
	ck_assert_int_eq(counts[0], 0);
	ck_assert_int_eq(counts[1], 0);
	/* A GPU index past the caller's array is counted but not stored. */
	ck_assert_int_eq(hw_parse_nvidia_smi_list(nine, strlen(nine), counts, 4), 1);
	ck_assert_int_eq(counts[0] + counts[1] + counts[2] + counts[3], 0);
	ck_assert_int_eq(hw_parse_nvidia_smi_list("", 0, counts, 4), 0);
	free(h100);
	free(h200);
	free(quadro);
}
END_TEST

/* ---- helpers ------------------------------------------------------------------------------ */

START_TEST(bandwidth_cuda_version_and_error_names)
{
	char v[16];

	/* RTX 4090: 10501 MHz max memory clock (rtx4090-8gpu__nvidia-smi-a.txt), 384-bit bus. */
	ck_assert(fabs(hw_nvidia_bandwidth_gbs(10501, 384) - 1008.096) < 1e-6);
	/* H100 SXM: 2619 MHz (hgx-h100-sxm-8gpu__nvidia-smi-a.txt), 5120-bit HBM3. */
	ck_assert(fabs(hw_nvidia_bandwidth_gbs(2619, 5120) - 3352.32) < 1e-6);
	ck_assert(hw_nvidia_bandwidth_gbs(HW_UNKNOWN, 384) < 0);
	ck_assert(hw_nvidia_bandwidth_gbs(2619, 0) < 0);

	ck_assert_int_eq(hw_nvidia_cuda_version(12040, v, sizeof(v)), 0);
	ck_assert_str_eq(v, "12.4");
	ck_assert_int_eq(hw_nvidia_cuda_version(13010, v, sizeof(v)), 0);
	ck_assert_str_eq(v, "13.1");
	ck_assert_int_eq(hw_nvidia_cuda_version(10010, v, sizeof(v)), 0);
	ck_assert_str_eq(v, "10.1");
	ck_assert_int_eq(hw_nvidia_cuda_version(0, v, sizeof(v)), RF_E_RANGE);
	ck_assert_str_eq(v, "");
	ck_assert_int_eq(hw_nvidia_cuda_version(999, v, sizeof(v)), RF_E_RANGE);
	ck_assert_int_eq(hw_nvidia_cuda_version(12040, v, 3), RF_E_RANGE);
	ck_assert_str_eq(v, "");

	ck_assert_str_eq(hw_nvml_error_name(9), "driver not loaded");
	ck_assert_str_eq(hw_nvml_error_name(3), "not supported");
	ck_assert_str_eq(hw_nvml_error_name(-7), "unrecognised error");
}
END_TEST

/* NVML's architecture numbers (nvml.h, NVML_DEVICE_ARCH_*), and the bus width that a device
 * profile's bandwidth implies at the clock nvidia-smi reports, checked against the published
 * buses of the GPUs in tests/data/fixtures' captures. */
START_TEST(architecture_names_and_bus_width_from_bandwidth)
{
	ck_assert_ptr_null(hw_nvml_architecture_name(0));
	ck_assert_ptr_null(hw_nvml_architecture_name(1));
	ck_assert_str_eq(hw_nvml_architecture_name(2), "Kepler");
	ck_assert_str_eq(hw_nvml_architecture_name(5), "Volta");
	ck_assert_str_eq(hw_nvml_architecture_name(7), "Ampere");
	ck_assert_str_eq(hw_nvml_architecture_name(8), "Ada Lovelace");
	ck_assert_str_eq(hw_nvml_architecture_name(9), "Hopper");
	ck_assert_str_eq(hw_nvml_architecture_name(10), "Blackwell");
	ck_assert_str_eq(hw_nvml_architecture_name(11), "Ampere"); /* T23X: Jetson Orin */
	ck_assert_ptr_null(hw_nvml_architecture_name(12));
	ck_assert_ptr_null(hw_nvml_architecture_name(0xffffffffu));

	/* H100 SXM: 3350 GB/s at 2619 MHz, 81559 MiB: five 1024-bit HBM3 stacks. */
	ck_assert_int_eq(hw_nvidia_bus_width_bits(3350, 2619, 81559 * MIB), 5120);
	/* RTX 4090: 1008 GB/s at 10501 MHz over 24564 MiB: twelve channels of 2 GiB. */
	ck_assert_int_eq(hw_nvidia_bus_width_bits(1008, 10501, 24564 * MIB), 384);
	/* RTX 3060 Laptop GPU: the profile's 336 GB/s is 14 Gbps on 192 bits, but this laptop's
	 * memory runs at 6001 MHz (12 Gbps): 224 bits would mean 7 chips of 878 MiB. Unknown. */
	ck_assert_int_eq(hw_nvidia_bus_width_bits(336, 6001, 6144 * MIB), HW_UNKNOWN);
	ck_assert_int_eq(hw_nvidia_bus_width_bits(336, 7001, 6144 * MIB), 192);
	/* GDDR with unknown memory cannot be checked; HBM needs no check. */
	ck_assert_int_eq(hw_nvidia_bus_width_bits(1008, 10501, HW_UNKNOWN), HW_UNKNOWN);
	ck_assert_int_eq(hw_nvidia_bus_width_bits(3350, 2619, HW_UNKNOWN), 5120);
	/* Nothing to go on, or no whole bus near the ratio (966 GB/s at 10501 MHz: 368 bits). */
	ck_assert_int_eq(hw_nvidia_bus_width_bits(-1, 2619, 81559 * MIB), HW_UNKNOWN);
	ck_assert_int_eq(hw_nvidia_bus_width_bits(3350, HW_UNKNOWN, 81559 * MIB), HW_UNKNOWN);
	ck_assert_int_eq(hw_nvidia_bus_width_bits(966, 10501, 24564 * MIB), HW_UNKNOWN);
	ck_assert_int_eq(hw_nvidia_bus_width_bits(1e9, 1, 24564 * MIB), HW_UNKNOWN);
}
END_TEST

Suite *hw_parse_nvidia_suite(void)
{
	Suite *s = suite_create("hw_parse_nvidia");
	TCase *tc = tcase_create("nvidia");

	tcase_add_test(tc, nvml_record_two_gpus);
	tcase_add_test(tc, nvml_record_mig_and_crlf);
	tcase_add_test(tc, nvml_record_failures);
	tcase_add_test(tc, nvml_record_truncated_or_not_a_record);
	tcase_add_test(tc, nvml_record_hostile_values);
	tcase_add_test(tc, nvml_record_caps_gpu_count);
	tcase_add_test(tc, smi_csv_a10_server_as_recorded);
	tcase_add_test(tc, smi_csv_na_values_crlf_and_spaces);
	tcase_add_test(tc, smi_csv_truncated_and_overflowing_rows_are_rejected);
	tcase_add_test(tc, smi_csv_garbage_and_nothing);
	tcase_add_test(tc, smi_csv_caps_gpu_count);
	tcase_add_test(tc, smi_list_counts_mig_devices);
	tcase_add_test(tc, bandwidth_cuda_version_and_error_names);
	tcase_add_test(tc, architecture_names_and_bus_width_from_bandwidth);
	suite_add_tcase(s, tc);
	return s;
}
