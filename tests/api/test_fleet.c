/*
 * What a fleet reads from each host: the snapshot as Prometheus gauges beside the request
 * metrics, and the node-feature-discovery labels (rigfit detect --format nfd, --nfd-dir).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/hardware_nfd.h"
#include "api/metrics.h"
#include "tests/test.h"

#define GIB (1024LL * 1024 * 1024)

static void h100_server(struct hw_snapshot *s)
{
	hw_snapshot_init(s);
	s->memory.total_bytes = 2048 * GIB;
	s->memory.available_bytes = 1900 * GIB;
	s->cpu.physical_cores = 112;
	for (int i = 0; i < 8; i++) {
		struct hw_gpu *g = &s->gpus[i];
		memset(g, 0, sizeof(*g));
		g->index = i;
		hw_strlcpy(g->vendor, "nvidia", sizeof(g->vendor));
		hw_strlcpy(g->name, "NVIDIA H100 80GB HBM3", sizeof(g->name));
		snprintf(g->uuid, sizeof(g->uuid), "GPU-0000000%d", i);
		hw_strlcpy(g->compute_capability, "9.0", sizeof(g->compute_capability));
		g->memory_total_bytes = 81559LL * 1024 * 1024; /* what nvidia-smi reports */
		g->memory_free_bytes = 81000LL * 1024 * 1024;
	}
	s->n_gpus = 8;
	hw_strlcpy(s->platform, "nvidia", sizeof(s->platform));
	hw_strlcpy(s->backend, "cuda", sizeof(s->backend));
	hw_strlcpy(s->compute_profile, "high_end", sizeof(s->compute_profile));
	hw_strlcpy(s->profile_id, "h100-sxm", sizeof(s->profile_id));
}

START_TEST(nfd_labels_of_a_gpu_server)
{
	struct hw_snapshot *s = malloc(sizeof(*s));
	char *text;

	h100_server(s);
	text = api_hardware_nfd(s);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/compute-profile=high_end\n"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/gpu-memory-gib=80\n"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/gpu-count=8\n"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/gpu-memory-total-gib=637\n"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/gpu-name=NVIDIA-H100-80GB-HBM3\n"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/profile-id=h100-sxm\n"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/memory-gib=2048\n"));
	/* Every value is a valid label value: [A-Za-z0-9._-], at most 63, alphanumeric ends. */
	for (char *line = text; *line; line = strchr(line, '\n') + 1) {
		char *eq = strchr(line, '='), *end = strchr(line, '\n');
		ck_assert_ptr_nonnull(eq);
		ck_assert(end - eq - 1 > 0 && end - eq - 1 <= 63);
		for (char *c = eq + 1; c < end; c++)
			ck_assert_msg(
				strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
				       *c),
				"bad character in %.*s", (int)(end - line), line);
	}
	free(text);
	/* Unknown values are left out, never guessed; odd names are made valid. */
	hw_snapshot_init(s);
	s->n_gpus = 1;
	memset(&s->gpus[0], 0, sizeof(s->gpus[0]));
	hw_strlcpy(s->gpus[0].vendor, "amd", sizeof(s->gpus[0].vendor));
	hw_strlcpy(s->gpus[0].name, "  (AMD) Radeon/RX 7900 XTX!! ", sizeof(s->gpus[0].name));
	s->gpus[0].memory_total_bytes = -1;
	text = api_hardware_nfd(s);
	ck_assert_ptr_null(strstr(text, "compute-profile="));
	ck_assert_ptr_null(strstr(text, "gpu-memory-gib="));
	ck_assert_ptr_null(strstr(text, "memory-gib="));
	ck_assert_ptr_nonnull(strstr(text, "rigfit.io/gpu-name=AMD--Radeon-RX-7900-XTX\n"));
	free(text);
	free(s);
}
END_TEST

START_TEST(metrics_export_the_snapshot_as_gauges)
{
	struct api_snapshot *snap = calloc(1, sizeof(*snap));
	struct api_metrics *m = api_metrics_new();
	struct api_env env = {.version = "t"};
	size_t len;
	char *text;

	h100_server(&snap->hw);
	hw_strlcpy(snap->hw.gpus[3].name, "weird \"name\" \\ here", sizeof(snap->hw.gpus[3].name));
	env.snapshot = snap;
	text = api_metrics_render(m, &env, &len);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "\nrigfit_gpus 8\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "rigfit_gpu_memory_total_bytes{index=\"0\",uuid=\"GPU-00000000\","
			     "name=\"NVIDIA H100 80GB HBM3\"} 85520809984\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "rigfit_gpu_memory_free_bytes{index=\"7\",uuid=\"GPU-00000007\","
			     "name=\"NVIDIA H100 80GB HBM3\"} 84934656000\n"));
	/* Label values escape quotes and backslashes as the text format requires. */
	ck_assert_ptr_nonnull(strstr(text, "name=\"weird \\\"name\\\" \\\\ here\"}"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit_compute_profile{profile=\"high_end\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit_compute_profile{profile=\"low_end\"} 0\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nrigfit_memory_total_bytes 2199023255552\n"));
	free(text);
	api_metrics_free(m);
	free(snap);
}
END_TEST

Suite *fleet_suite(void)
{
	Suite *s = suite_create("fleet");
	TCase *tc = tcase_create("fleet");

	tcase_add_test(tc, nfd_labels_of_a_gpu_server);
	tcase_add_test(tc, metrics_export_the_snapshot_as_gauges);
	suite_add_tcase(s, tc);
	return s;
}
