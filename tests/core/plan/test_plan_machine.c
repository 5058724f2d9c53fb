/*
 * The machine as the estimate and the planners take it (core/plan/plan_machine.h): one budget
 * per device whoever asks (inference, training, the fine-tuning planner), unified memory's
 * working set however the machine is described, Intel iGPUs left out, vLLM's GPUs on CUDA
 * only, and the CPU table's bandwidth where nothing measured the host.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "core/hw/device.h"
#include "core/hw/hw.h"
#include "core/plan/plan_ft_machine.h"
#include "core/plan/plan_machine.h"
#include "tests/test.h"

static void gpu(struct hw_snapshot *hw, const char *vendor, const char *name, int64_t total,
		int64_t free_bytes, bool unified)
{
	struct hw_gpu *g = &hw->gpus[hw->n_gpus++];

	snprintf(g->vendor, sizeof(g->vendor), "%s", vendor);
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->memory_total_bytes = total;
	g->memory_free_bytes = free_bytes;
	g->unified_memory = unified;
}

/* A table with one Apple-like profile whose working set is 70% up to 36 GiB, 80% above. */
static void one_profile_table(struct device_table *t, struct device_profile *p)
{
	device_profile_init(p);
	snprintf(p->id, sizeof(p->id), "%s", "soc-x1");
	snprintf(p->name, sizeof(p->name), "%s", "SoC X1");
	p->kind = DEVICE_KIND_GPU;
	p->working_set.up_to_gib = 36;
	p->working_set.fraction_at_or_below = 0.70;
	p->working_set.fraction_above = 0.80;
	t->n = 1;
	t->devices = p;
}

/* A CUDA machine whose one GPU is the unified "SoC X1" of one_profile_table (a Jetson's shape),
 * with gib GiB of memory. */
static void soc_host(struct hw_snapshot *hw, struct device_table *t, struct device_profile *p,
		     int64_t gib)
{
	one_profile_table(t, p);
	hw_snapshot_init(hw);
	snprintf(hw->backend, sizeof(hw->backend), "%s", "cuda");
	gpu(hw, "nvidia", "SoC X1", gib * RF_GIB, gib * RF_GIB, true);
}

/* Whether one of the notes holds text. */
static bool noted(const struct plan_machine_notes *notes, const char *text)
{
	for (int i = 0; i < notes->n; i++)
		if (strstr(notes->line[i], text))
			return true;
	return false;
}

START_TEST(unified_memory_has_one_budget_for_every_planner)
{
	struct hw_snapshot hw;
	struct device_table t = {0};
	struct device_profile p;
	struct plan_machine_source m = {.hw = &hw, .devices = &t};
	struct plan_machine pm;
	struct plan_machine_notes notes = {.n = 0};
	struct plan_train_gpus tg;
	struct plan_ft_device ft;
	int idx[RF_MAX_DEVICES];
	bool apple;
	const int64_t gib = RF_GIB;

	one_profile_table(&t, &p);
	hw_snapshot_init(&hw);
	snprintf(hw.backend, sizeof(hw.backend), "%s", "metal");
	gpu(&hw, "apple", "SoC X1", 64 * gib, -1, true);
	/* No RAM described: the GPU's memory is the RAM, the profile's rule its working set. */
	plan_machine_build(&m, &pm, &notes);
	ck_assert_int_eq(pm.n_dev, 1);
	ck_assert_int_eq(pm.dev[0].budget_bytes, (int64_t)(64.0 * (double)gib * 0.80));
	/* Said once: the working set, then the speed model's guess at an unknown bandwidth. */
	ck_assert_int_eq(notes.n, 2);
	ck_assert_ptr_nonnull(strstr(notes.line[0], "51.2 GiB of its 64 GiB"));
	ck_assert_ptr_nonnull(strstr(notes.line[1], "no known bandwidth"));
	plan_machine_train_gpus(&m, &tg, idx, &apple, NULL);
	ck_assert_int_eq(tg.n, 1);
	ck_assert_int_eq(tg.budget[0], pm.dev[0].budget_bytes);
	ck_assert_int_eq(tg.host_budget, -1);
	ck_assert(apple);
	plan_ft_machine(&hw, &pm, &t, &ft);
	ck_assert_int_eq(ft.budget_bytes, pm.dev[0].budget_bytes);
	ck_assert_int_eq(ft.host_ram_bytes, -1);
	/* Without a profile: macOS's default share (three quarters above 32 GiB). */
	m.devices = NULL;
	plan_machine_build(&m, &pm, NULL);
	ck_assert_int_eq(pm.dev[0].budget_bytes, 48 * gib);
	/* With the RAM described: the share of the RAM that is free, never above the probe's
	 * total. */
	hw.memory.total_bytes = 64 * gib;
	hw.memory.available_bytes = 40 * gib;
	plan_machine_build(&m, &pm, NULL);
	ck_assert_int_eq(pm.dev[0].budget_bytes, 40 * gib);
	plan_machine_train_gpus(&m, &tg, idx, &apple, NULL);
	ck_assert_int_eq(tg.budget[0], 40 * gib);
}
END_TEST

/* A unified GPU that is not a Mac (a Jetson) takes its profile's working set of the RAM, not
 * macOS's rule, whether the RAM is described or not; what is already in use comes out of it,
 * and every planner sees the same budget. */
START_TEST(a_jetsons_budget_is_its_profiles_share_of_the_ram)
{
	struct hw_snapshot hw;
	struct device_table t = {0};
	struct device_profile p;
	struct plan_machine_source m = {.hw = &hw, .devices = &t};
	struct plan_machine pm;
	struct plan_train_gpus tg;
	int idx[RF_MAX_DEVICES];
	bool apple;
	const int64_t gib = RF_GIB;

	soc_host(&hw, &t, &p, 64);
	p.working_set.up_to_gib = 64;
	p.working_set.fraction_at_or_below = p.working_set.fraction_above = 0.92;
	hw.memory.total_bytes = 64 * gib;
	hw.memory.available_bytes = 64 * gib;
	plan_machine_build(&m, &pm, NULL);
	ck_assert_int_eq(pm.dev[0].budget_bytes, (int64_t)(64.0 * (double)gib * 0.92));
	plan_machine_train_gpus(&m, &tg, idx, &apple, NULL);
	ck_assert_int_eq(tg.budget[0], pm.dev[0].budget_bytes);
	ck_assert(!apple);
	/* 20 GiB already in use: what is left, below the share. */
	hw.memory.available_bytes = 44 * gib;
	plan_machine_build(&m, &pm, NULL);
	ck_assert_int_eq(pm.dev[0].budget_bytes, 44 * gib);
	/* A Mac keeps macOS's rule even where a profile restates it. */
	snprintf(hw.gpus[0].vendor, sizeof(hw.gpus[0].vendor), "%s", "apple");
	hw.memory.available_bytes = 64 * gib;
	plan_machine_build(&m, &pm, NULL);
	ck_assert_int_eq(pm.dev[0].budget_bytes, 48 * gib);
}
END_TEST

/* An SoC's GPU that shares its memory controller with the CPU decodes at its profile's share
 * of the bandwidth, and a note says so; without a share, the bandwidth as it is. */
START_TEST(a_jetsons_gpu_decodes_at_its_profiles_bandwidth_share)
{
	struct hw_snapshot hw;
	struct device_table t = {0};
	struct device_profile p;
	struct plan_machine_source m = {.hw = &hw, .devices = &t};
	struct speed_input in;
	struct plan_machine_notes notes = {.n = 0};

	soc_host(&hw, &t, &p, 32);
	p.memory_bandwidth_gbs = 200;
	p.decode_bandwidth_share = 0.5;
	plan_machine_speed(&m, &in, &notes);
	ck_assert_int_eq(in.n_devices, 1);
	ck_assert_double_eq_tol(in.devices[0].bandwidth_gbs, 100, 1e-9);
	ck_assert(noted(&notes, "decodes at 50% of the share of its 200.0 GB/s"));
	p.decode_bandwidth_share = -1;
	notes.n = 0;
	plan_machine_speed(&m, &in, &notes);
	ck_assert_double_eq_tol(in.devices[0].bandwidth_gbs, 200, 1e-9);
	ck_assert(!noted(&notes, "decodes at"));
}
END_TEST

/* In a container the cgroup's limit bounds the host's budget and a note says so; a limit at or
 * above the RAM says nothing. */
START_TEST(a_containers_limit_is_said_to_bound_the_plan)
{
	struct hw_snapshot hw;
	struct plan_machine_source m = {.hw = &hw, .devices = NULL};
	struct plan_machine pm;
	struct plan_machine_notes notes = {.n = 0};
	const int64_t gib = RF_GIB;

	hw_snapshot_init(&hw);
	snprintf(hw.backend, sizeof(hw.backend), "%s", "cpu");
	hw.memory.total_bytes = hw.memory.available_bytes = 64 * gib;
	hw.host.container.cgroup_memory_limit_bytes = 8 * gib;
	plan_machine_build(&m, &pm, &notes);
	ck_assert_int_le(pm.host.budget_bytes, 8 * gib);
	ck_assert(noted(&notes, "container's limit of 8.0 GiB"));
	hw.host.container.cgroup_memory_limit_bytes = 64 * gib;
	notes.n = 0;
	plan_machine_build(&m, &pm, &notes);
	ck_assert(!noted(&notes, "container"));
}
END_TEST

/* vLLM runs on NVIDIA GPUs of compute capability 7.0 and newer: a Pascal card (or one among
 * several) leaves it no GPU; an unknown capability is not held against a card. */
START_TEST(vllm_needs_compute_capability_seven)
{
	struct hw_snapshot hw;
	struct vllm_gpu g[4];
	const int64_t gib = RF_GIB;

	hw_snapshot_init(&hw);
	snprintf(hw.backend, sizeof(hw.backend), "%s", "cuda");
	gpu(&hw, "nvidia", "Tesla V100", 16 * gib, 16 * gib, false);
	snprintf(hw.gpus[0].compute_capability, sizeof(hw.gpus[0].compute_capability), "7.0");
	ck_assert_int_eq(plan_machine_vllm_gpus(&hw, g, 4), 1);
	/* Blackwell's two-digit major (a B200 is 10.0) is newer, not older. */
	snprintf(hw.gpus[0].compute_capability, sizeof(hw.gpus[0].compute_capability), "10.0");
	ck_assert_int_eq(plan_machine_vllm_gpus(&hw, g, 4), 1);
	gpu(&hw, "nvidia", "Tesla P100", 16 * gib, 16 * gib, false);
	ck_assert_int_eq(plan_machine_vllm_gpus(&hw, g, 4), 2);
	snprintf(hw.gpus[1].compute_capability, sizeof(hw.gpus[1].compute_capability), "6.0");
	ck_assert_int_eq(plan_machine_vllm_gpus(&hw, g, 4), 0);
	hw.n_gpus = 1;
	snprintf(hw.gpus[0].compute_capability, sizeof(hw.gpus[0].compute_capability), "6.2");
	ck_assert_int_eq(plan_machine_vllm_gpus(&hw, g, 4), 0);
	/* ROCm: the gfx targets vLLM's ROCm build lists, however the architecture names them. */
	hw_snapshot_init(&hw);
	snprintf(hw.backend, sizeof(hw.backend), "%s", "rocm");
	gpu(&hw, "amd", "AMD Instinct MI300X", 192 * gib, 192 * gib, false);
	snprintf(hw.gpus[0].architecture, sizeof(hw.gpus[0].architecture), "CDNA 3 (gfx942)");
	ck_assert_int_eq(plan_machine_vllm_gpus(&hw, g, 4), 1);
	snprintf(hw.gpus[0].architecture, sizeof(hw.gpus[0].architecture), "gfx1100");
	ck_assert_int_eq(plan_machine_vllm_gpus(&hw, g, 4), 1);
	snprintf(hw.gpus[0].architecture, sizeof(hw.gpus[0].architecture), "CDNA 3");
	ck_assert_int_eq(plan_machine_vllm_gpus(&hw, g, 4), 1);
	snprintf(hw.gpus[0].architecture, sizeof(hw.gpus[0].architecture), "RDNA 2 (gfx1030)");
	ck_assert_int_eq(plan_machine_vllm_gpus(&hw, g, 4), 0);
	{
		char why[PLAN_NOTE_LEN];
		ck_assert(plan_machine_vllm_unable(&hw, why, sizeof(why)));
		ck_assert_ptr_nonnull(strstr(why, "is gfx1030"));
	}
	/* gfx110 is not gfx1100: the whole target is compared. */
	snprintf(hw.gpus[0].architecture, sizeof(hw.gpus[0].architecture), "gfx110");
	ck_assert_int_eq(plan_machine_vllm_gpus(&hw, g, 4), 0);
}
END_TEST

START_TEST(discrete_gpus_budget_their_free_memory_and_igpus_are_left_out)
{
	struct hw_snapshot hw;
	struct plan_machine_source m = {.hw = &hw};
	struct plan_machine pm;
	struct plan_train_gpus tg;
	int idx[RF_MAX_DEVICES];
	bool apple;
	const int64_t gib = RF_GIB;

	hw_snapshot_init(&hw);
	snprintf(hw.backend, sizeof(hw.backend), "%s", "cuda");
	hw.memory.total_bytes = 64 * gib;
	hw.memory.available_bytes = 60 * gib;
	gpu(&hw, "intel", "Intel UHD Graphics", 2 * gib, 2 * gib, false);
	gpu(&hw, "nvidia", "NVIDIA A100-SXM4-80GB", 80 * gib, 70 * gib, false);
	gpu(&hw, "nvidia", "NVIDIA GeForce RTX 3090", 24 * gib, 23 * gib, false);
	plan_machine_build(&m, &pm, NULL);
	ck_assert_int_eq(pm.n_dev, 2);
	ck_assert_int_eq(pm.dev[0].budget_bytes, rf_budget_device(70 * gib, 80 * gib));
	ck_assert_int_eq(pm.dev[1].budget_bytes, rf_budget_device(23 * gib, 24 * gib));
	ck_assert_int_eq(pm.dev_total_bytes[1], 24 * gib);
	ck_assert_int_gt(pm.host.budget_bytes, 0);
	ck_assert_int_eq(pm.n_vgpu, 2);
	ck_assert(pm.vgpu[0].a100);
	ck_assert(!pm.vgpu[1].a100);
	plan_machine_train_gpus(&m, &tg, idx, &apple, NULL);
	ck_assert_int_eq(tg.n, 2);
	ck_assert_int_eq(idx[0], 1); /* the iGPU at hw.gpus[0] is not the run's */
	ck_assert_int_eq(tg.largest, 0);
	ck_assert_int_eq(tg.min_budget, pm.dev[1].budget_bytes);
	ck_assert_int_eq(tg.host_budget, pm.host.budget_bytes);
	ck_assert(!apple);
	/* vLLM runs on CUDA and ROCm only. */
	snprintf(hw.backend, sizeof(hw.backend), "%s", "vulkan");
	plan_machine_build(&m, &pm, NULL);
	ck_assert_int_eq(pm.n_vgpu, 0);
}
END_TEST

START_TEST(the_cpu_tables_bandwidth_stands_in_only_for_no_measurement)
{
	struct hw_snapshot hw;
	struct plan_machine_source m = {.hw = &hw, .cpu_table_bandwidth_gbs = 89.6};
	struct speed_input in;
	struct plan_machine pm;

	hw_snapshot_init(&hw);
	snprintf(hw.backend, sizeof(hw.backend), "%s", "cpu");
	hw.cpu.physical_cores = 8;
	plan_machine_speed(&m, &in, NULL);
	ck_assert_int_eq(in.backend, SPEED_BACKEND_CPU);
	ck_assert_double_eq(in.host.bandwidth_gbs, 89.6);
	ck_assert(!in.host.bandwidth_measured);
	ck_assert_int_eq(in.host.threads, 8);
	m.cpu_table_bandwidth_measured = true;
	plan_machine_speed(&m, &in, NULL);
	ck_assert(in.host.bandwidth_measured);
	ck_assert(!in.host.bandwidth_hostbench);
	/* A measured host keeps its own figure; its measurement counts on this host only. */
	hw.cpu.memory_bandwidth_gbs = 61.0;
	hw.host_bench.measured = true;
	plan_machine_build(&m, &pm, NULL);
	ck_assert_double_eq(pm.speed.host.bandwidth_gbs, 61.0);
	ck_assert(pm.speed.host.bandwidth_hostbench);
	ck_assert(!pm.host_measured);
	m.this_host = true;
	plan_machine_build(&m, &pm, NULL);
	ck_assert(pm.host_measured);
}
END_TEST

Suite *plan_machine_suite(void)
{
	Suite *s = suite_create("plan_machine");
	TCase *tc = tcase_create("machine");

	tcase_add_test(tc, unified_memory_has_one_budget_for_every_planner);
	tcase_add_test(tc, a_jetsons_budget_is_its_profiles_share_of_the_ram);
	tcase_add_test(tc, a_jetsons_gpu_decodes_at_its_profiles_bandwidth_share);
	tcase_add_test(tc, a_containers_limit_is_said_to_bound_the_plan);
	tcase_add_test(tc, vllm_needs_compute_capability_seven);
	tcase_add_test(tc, discrete_gpus_budget_their_free_memory_and_igpus_are_left_out);
	tcase_add_test(tc, the_cpu_tables_bandwidth_stands_in_only_for_no_measurement);
	suite_add_tcase(s, tc);
	return s;
}
