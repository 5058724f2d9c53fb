/*
 * cgroup limits: the value parsers ("max", v1's PAGE_COUNTER_MAX sentinel, quota -1, junk),
 * /proc/self/cgroup and /proc/self/mountinfo (this development machine's hybrid v1/v2 layout
 * and Docker's, as the container fixtures under tests/fixtures/machines describe them), path
 * resolution, container hints and the memory budget; then the memory probe on small trees: a
 * limit set on a parent cgroup, an unlimited v1 container, a root without mountinfo, junk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/err.h"
#include "core/hw/hw.h"
#include "core/hw/hw_parse_cgroup.h"
#include "server/detect/detect.h"
#include "tests/test.h"

#define GIB (INT64_C(1) << 30)

static int bytes(const char *s, int64_t *out)
{
	return hw_parse_cgroup_bytes(s, strlen(s), out);
}

START_TEST(memory_values_and_no_limit_spellings)
{
	int64_t v = 7;

	ck_assert_int_eq(bytes("4294967296\n", &v), 0);
	ck_assert_int_eq(v, 4 * GIB);
	ck_assert_int_eq(bytes("0\n", &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(bytes("max\n", &v), 0);
	ck_assert_int_eq(v, HW_UNKNOWN);
	/* v1's "unlimited": PAGE_COUNTER_MAX pages with 4 KiB and with 64 KiB pages. */
	v = 7;
	ck_assert_int_eq(bytes("9223372036854771712\n", &v), 0);
	ck_assert_int_eq(v, HW_UNKNOWN);
	v = 7;
	ck_assert_int_eq(bytes("9223372036854710272", &v), 0);
	ck_assert_int_eq(v, HW_UNKNOWN);
	v = 7;
	ck_assert_int_eq(bytes("-1", &v), 0);
	ck_assert_int_eq(v, HW_UNKNOWN);
	v = 7;
	ck_assert_int_eq(bytes("", &v), RF_E_PARSE);
	ck_assert_int_eq(bytes("lots", &v), RF_E_PARSE);
	ck_assert_int_eq(bytes("12 kB", &v), RF_E_PARSE);
	ck_assert_int_eq(bytes("-2", &v), RF_E_PARSE);
	ck_assert_int_eq(bytes("18446744073709551616", &v), RF_E_PARSE);
	ck_assert_int_eq(bytes("0x1000", &v), RF_E_PARSE);
	ck_assert_int_eq(v, 7);
}
END_TEST

START_TEST(v1_hierarchical_limit)
{
	static const char stat[] = "cache 4096000\nrss 98304000\n"
				   "hierarchical_memory_limit 2147483648\n"
				   "hierarchical_memsw_limit 4294967296\n";
	static const char unlimited[] = "hierarchical_memory_limit 9223372036854771712\n";
	int64_t v = 7;

	ck_assert_int_eq(hw_parse_cgroup_v1_hierarchical_limit(stat, sizeof(stat) - 1, &v), 0);
	ck_assert_int_eq(v, 2 * GIB);
	ck_assert_int_eq(
		hw_parse_cgroup_v1_hierarchical_limit(unlimited, sizeof(unlimited) - 1, &v), 0);
	ck_assert_int_eq(v, HW_UNKNOWN);
	ck_assert_int_eq(hw_parse_cgroup_v1_hierarchical_limit("cache 1\n", 8, &v), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_cgroup_v1_hierarchical_limit("hierarchical_memory_limit x\n", 28,
							       &v),
			 RF_E_PARSE);
}
END_TEST

static int cpu_max(const char *s, double *out)
{
	return hw_parse_cgroup_cpu_max(s, strlen(s), out);
}

START_TEST(cpu_quota_v2_and_v1)
{
	double c = 7;

	ck_assert_int_eq(cpu_max("200000 100000\n", &c), 0);
	ck_assert_double_eq_tol(c, 2.0, 1e-12);
	ck_assert_int_eq(cpu_max("150000 100000", &c), 0);
	ck_assert_double_eq_tol(c, 1.5, 1e-12);
	ck_assert_int_eq(cpu_max("max 100000\n", &c), 0);
	ck_assert(c == -1.0);
	ck_assert_int_eq(cpu_max("max", &c), 0);
	ck_assert(c == -1.0);
	c = 7;
	ck_assert_int_eq(cpu_max("0 100000", &c), RF_E_PARSE);
	ck_assert_int_eq(cpu_max("100000 0", &c), RF_E_PARSE);
	ck_assert_int_eq(cpu_max("abc 100000", &c), RF_E_PARSE);
	ck_assert_int_eq(cpu_max("200000", &c), RF_E_PARSE);
	ck_assert_int_eq(cpu_max("", &c), RF_E_PARSE);
	ck_assert_int_eq(cpu_max("-1 100000", &c), RF_E_PARSE);
	ck_assert_int_eq(cpu_max("max junk", &c), RF_E_PARSE);
	ck_assert(c == 7.0);

	ck_assert_int_eq(hw_parse_cgroup_cfs("-1\n", 3, "100000\n", 7, &c), 0);
	ck_assert(c == -1.0);
	ck_assert_int_eq(hw_parse_cgroup_cfs("150000\n", 7, "100000\n", 7, &c), 0);
	ck_assert_double_eq_tol(c, 1.5, 1e-12);
	/* Quota -1 needs no period at all. */
	ck_assert_int_eq(hw_parse_cgroup_cfs("-1", 2, NULL, 0, &c), 0);
	c = 7;
	ck_assert_int_eq(hw_parse_cgroup_cfs("junk", 4, "100000", 6, &c), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_cgroup_cfs("50000", 5, "0", 1, &c), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_cgroup_cfs("50000", 5, "", 0, &c), RF_E_PARSE);
	ck_assert(c == 7.0);
}
END_TEST

START_TEST(proc_self_cgroup_v1_v2_and_hybrid)
{
	/* This development machine (a firecracker VM): v1 controllers plus an empty v2 tree. */
	static const char hybrid[] = "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n"
				     "5:devices:/\n4:memory:/process_api/36507350b92ec2552b49862b\n"
				     "3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::/\n";
	static const char docker_v1[] = "12:pids:/docker/abc\n8:memory:/docker/abc\n"
					"3:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n";
	struct hw_proc_cgroup pc;

	ck_assert_int_eq(hw_parse_proc_cgroup(hybrid, sizeof(hybrid) - 1, &pc), 0);
	ck_assert(pc.has_unified && pc.has_memory && pc.has_cpu);
	ck_assert_str_eq(pc.unified, "/");
	ck_assert_str_eq(pc.memory, "/process_api/36507350b92ec2552b49862b");
	ck_assert_str_eq(pc.cpu, "/");
	ck_assert_int_eq(hw_parse_proc_cgroup(docker_v1, sizeof(docker_v1) - 1, &pc), 0);
	ck_assert(!pc.has_unified);
	ck_assert_str_eq(pc.memory, "/docker/abc");
	ck_assert_str_eq(pc.cpu, "/docker/abc");
	/* "cpuacct" alone is not the cpu controller; a path may hold ':'. */
	ck_assert_int_eq(hw_parse_proc_cgroup("2:cpuacct:/x\n0::/a:b\n", 22, &pc), 0);
	ck_assert(!pc.has_cpu);
	ck_assert_str_eq(pc.unified, "/a:b");
	ck_assert_int_eq(hw_parse_proc_cgroup("junk\n", 5, &pc), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_proc_cgroup("x::/\n", 5, &pc), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_proc_cgroup("0::relative\n", 12, &pc), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_proc_cgroup("", 0, &pc), RF_E_PARSE);
}
END_TEST

START_TEST(proc_self_cgroup_drops_overlong_paths)
{
	size_t n = HW_CGROUP_PATH_LEN + 16;
	char *text = malloc(n + 8);
	struct hw_proc_cgroup pc;

	memcpy(text, "0::/", 4);
	memset(text + 4, 'a', n - 4);
	memcpy(text + n, "\n", 2);
	ck_assert_int_eq(hw_parse_proc_cgroup(text, n + 1, &pc), RF_E_PARSE);
	free(text);
}
END_TEST

START_TEST(mountinfo_cgroup_mounts)
{
	static const char host[] =
		"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
		"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
		"33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
		"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
		"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
		"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
	static const char docker[] =
		"1196 1191 0:35 /docker/abc /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime "
		"master:19 - cgroup cgroup rw,memory\n"
		"1200 1191 0:31 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid master:15 shared:3 "
		"- cgroup cgroup rw,cpu,cpuacct\n";
	static const char escaped[] =
		"50 1 0:40 /a\\040b /mnt/my\\040cg rw - cgroup2 cgroup2 rw,nsdelegate\n";
	struct hw_cgroup_mounts m;

	ck_assert_int_eq(hw_parse_mountinfo_cgroups(host, sizeof(host) - 1, &m), 0);
	ck_assert(m.unified.found && m.memory.found && m.cpu.found);
	ck_assert_str_eq(m.unified.point, "/sys/fs/cgroup/unified");
	ck_assert_str_eq(m.memory.point, "/sys/fs/cgroup/memory");
	ck_assert_str_eq(m.cpu.point, "/sys/fs/cgroup/cpu");
	ck_assert_str_eq(m.cpu.root, "/");
	ck_assert_int_eq(hw_parse_mountinfo_cgroups(docker, sizeof(docker) - 1, &m), 0);
	ck_assert(!m.unified.found);
	ck_assert_str_eq(m.memory.root, "/docker/abc");
	ck_assert_str_eq(m.cpu.point, "/sys/fs/cgroup/cpu,cpuacct");
	ck_assert_int_eq(hw_parse_mountinfo_cgroups(escaped, sizeof(escaped) - 1, &m), 0);
	ck_assert_str_eq(m.unified.point, "/mnt/my cg");
	ck_assert_str_eq(m.unified.root, "/a b");
	ck_assert_int_eq(hw_parse_mountinfo_cgroups("junk\n", 5, &m), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_mountinfo_cgroups("1 2 3 4 5 6 - cgroup2\n", 22, &m), RF_E_PARSE);
	ck_assert_int_eq(hw_parse_mountinfo_cgroups("", 0, &m), RF_E_PARSE);
}
END_TEST

START_TEST(resolve_joins_mount_and_path)
{
	struct hw_cgroup_mount m = {.found = true};
	char out[HW_CGROUP_PATH_LEN];
	char tiny[8];

	hw_strlcpy(m.point, "/sys/fs/cgroup", sizeof(m.point));
	hw_strlcpy(m.root, "/", sizeof(m.root));
	ck_assert_int_eq(hw_cgroup_resolve(&m, "/user.slice/a.scope", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup/user.slice/a.scope");
	ck_assert_int_eq(hw_cgroup_resolve(&m, "/", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup");
	/* Outside the cgroup namespace's root: only the mount point is visible. */
	ck_assert_int_eq(hw_cgroup_resolve(&m, "/../../x", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup");
	hw_strlcpy(m.root, "/docker/abc", sizeof(m.root));
	ck_assert_int_eq(hw_cgroup_resolve(&m, "/docker/abc", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup");
	ck_assert_int_eq(hw_cgroup_resolve(&m, "/docker/abc/child", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup/child");
	ck_assert_int_eq(hw_cgroup_resolve(&m, "/docker/abcdef", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/sys/fs/cgroup");
	ck_assert_int_eq(hw_cgroup_resolve(&m, "/other", tiny, sizeof(tiny)), RF_E_TOO_LARGE);
}
END_TEST

static bool names(const char *s)
{
	return hw_cgroup_names_container(s, strlen(s));
}

START_TEST(container_hints_in_cgroup_paths)
{
	ck_assert(names("8:memory:/docker/3f6b2a9e0c1d\n"));
	ck_assert(names("0::/system.slice/docker-3f6b2a9e0c1d.scope\n"));
	ck_assert(names("0::/kubepods.slice/kubepods-burstable.slice/cri-containerd-1.scope\n"));
	ck_assert(names("0::/kubepods/besteffort/pod1/abc\n"));
	ck_assert(names("0::/machine.slice/libpod-3f6b.scope/container\n"));
	ck_assert(names("0::/lxc.payload.web/\n"));
	ck_assert(names("1:name=systemd:/actions_job/abc\n"));
	ck_assert(!names("0::/\n"));
	ck_assert(!names("0::/user.slice/user-1000.slice/session-2.scope\n"));
	ck_assert(!names("0::/system.slice/docker.service\n"));
	ck_assert(!names("0::/system.slice/containerd.service\n"));
	ck_assert(!names("junk\n"));
	ck_assert(!names(""));
}
END_TEST

START_TEST(budget_under_a_limit)
{
	ck_assert_int_eq(hw_cgroup_budget(10 * GIB, 4 * GIB, 1 * GIB), 3 * GIB);
	ck_assert_int_eq(hw_cgroup_budget(2 * GIB, 4 * GIB, 1 * GIB), 2 * GIB);
	ck_assert_int_eq(hw_cgroup_budget(10 * GIB, 4 * GIB, 5 * GIB), 0);
	ck_assert_int_eq(hw_cgroup_budget(10 * GIB, 4 * GIB, HW_UNKNOWN), 4 * GIB);
	ck_assert_int_eq(hw_cgroup_budget(10 * GIB, HW_UNKNOWN, 1 * GIB), 10 * GIB);
	ck_assert_int_eq(hw_cgroup_budget(HW_UNKNOWN, 4 * GIB, 1 * GIB), 3 * GIB);
	ck_assert_int_eq(hw_cgroup_budget(HW_UNKNOWN, HW_UNKNOWN, 1 * GIB), HW_UNKNOWN);
}
END_TEST

static const char meminfo_16g[] = "MemTotal:       16384000 kB\nMemFree:         8000000 kB\n"
				  "MemAvailable:   12000000 kB\n";

START_TEST(probe_v2_limit_on_a_parent_cgroup)
{
	char *root = t_mkdtemp();
	struct hw_snapshot *s;

	t_put(root, "proc/meminfo", meminfo_16g);
	t_put(root, "proc/self/cgroup", "0::/app.slice/job.scope\n");
	t_put(root, "proc/self/mountinfo",
	      "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n");
	t_put(root, "sys/fs/cgroup/app.slice/job.scope/memory.max", "max\n");
	t_put(root, "sys/fs/cgroup/app.slice/job.scope/memory.current", "100000000\n");
	t_put(root, "sys/fs/cgroup/app.slice/job.scope/cpu.max", "50000 100000\n");
	t_put(root, "sys/fs/cgroup/app.slice/memory.max", "2147483648\n");
	t_put(root, "sys/fs/cgroup/app.slice/memory.current", "1073741824\n");
	t_put(root, "sys/fs/cgroup/app.slice/cpu.max", "max 100000\n");

	s = t_scan(root);
	/* A service's limit binds, but it is no container. */
	ck_assert(!s->host.container.detected);
	ck_assert_int_eq(s->host.container.cgroup_memory_limit_bytes, 2 * GIB);
	ck_assert_double_eq_tol(s->host.container.cpu_quota_cores, 0.5, 1e-12);
	ck_assert_int_eq(s->memory.total_bytes, INT64_C(16384000) * 1024);
	ck_assert_int_eq(s->memory.available_bytes, 1 * GIB);
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(probe_v1_unlimited_container)
{
	char *root = t_mkdtemp();
	struct hw_snapshot *s;

	t_put(root, "proc/meminfo", meminfo_16g);
	t_put(root, ".dockerenv", "");
	t_put(root, "proc/self/cgroup", "4:memory:/\n1:cpu,cpuacct:/\n");
	t_put(root, "proc/self/mountinfo",
	      "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n");
	t_put(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
	t_put(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "144691200\n");
	t_put(root, "sys/fs/cgroup/memory/memory.stat",
	      "hierarchical_memory_limit 9223372036854771712\n");
	t_put(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
	t_put(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");

	s = t_scan(root);
	ck_assert(s->host.container.detected);
	ck_assert_int_eq(s->host.container.cgroup_memory_limit_bytes, HW_UNKNOWN);
	ck_assert(s->host.container.cpu_quota_cores < 0);
	ck_assert_int_eq(s->memory.available_bytes, INT64_C(12000000) * 1024);
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

START_TEST(probe_without_mountinfo_and_with_junk)
{
	char *root = t_mkdtemp();
	struct hw_snapshot *s;

	/* No mountinfo: /sys/fs/cgroup is assumed. The process's own cgroup directory is not
	 * there (no cgroup namespace view), so the mount point is read. */
	t_put(root, "proc/meminfo", meminfo_16g);
	t_put(root, "proc/self/cgroup", "0::/lxc.payload.web\n");
	t_put(root, "sys/fs/cgroup/memory.max", "1073741824\n");
	t_put(root, "sys/fs/cgroup/cpu.max", "lots of cpu\n");
	s = t_scan(root);
	ck_assert(s->host.container.detected); /* lxc.payload in the path */
	ck_assert_int_eq(s->host.container.cgroup_memory_limit_bytes, 1 * GIB);
	ck_assert(s->host.container.cpu_quota_cores < 0);
	/* Usage unknown: the limit itself caps what is available, with a warning. */
	ck_assert_int_eq(s->memory.available_bytes, 1 * GIB);
	ck_assert_int_gt(s->n_warnings, 0);
	free(s);

	t_put(root, "sys/fs/cgroup/memory.max", "junk\n");
	t_put(root, "proc/self/cgroup", "garbage\n");
	s = t_scan(root);
	ck_assert_int_eq(s->host.container.cgroup_memory_limit_bytes, HW_UNKNOWN);
	ck_assert_int_eq(s->memory.available_bytes, INT64_C(12000000) * 1024);
	free(s);
	t_rmtree(root);
	free(root);
}
END_TEST

Suite *hw_parse_cgroup_suite(void)
{
	Suite *s = suite_create("hw_parse_cgroup");
	TCase *tc = tcase_create("parse");
	TCase *tp = tcase_create("probe");

	tcase_add_test(tc, memory_values_and_no_limit_spellings);
	tcase_add_test(tc, v1_hierarchical_limit);
	tcase_add_test(tc, cpu_quota_v2_and_v1);
	tcase_add_test(tc, proc_self_cgroup_v1_v2_and_hybrid);
	tcase_add_test(tc, proc_self_cgroup_drops_overlong_paths);
	tcase_add_test(tc, mountinfo_cgroup_mounts);
	tcase_add_test(tc, resolve_joins_mount_and_path);
	tcase_add_test(tc, container_hints_in_cgroup_paths);
	tcase_add_test(tc, budget_under_a_limit);
	suite_add_tcase(s, tc);
	tcase_add_test(tp, probe_v2_limit_on_a_parent_cgroup);
	tcase_add_test(tp, probe_v1_unlimited_container);
	tcase_add_test(tp, probe_without_mountinfo_and_with_junk);
	suite_add_tcase(s, tp);
	return s;
}
