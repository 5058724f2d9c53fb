/*
 * Memory: /proc/meminfo, then the limits of the cgroup the process runs in, which are the real
 * budget inside a container (or a systemd service with MemoryMax=).
 *
 * Where the cgroup is: /proc/self/cgroup names it per hierarchy and /proc/self/mountinfo says
 * where each hierarchy is mounted (core/hw/hw_parse_cgroup.h joins the two); without mountinfo
 * the usual /sys/fs/cgroup layout is assumed, and when the joined directory does not exist the
 * mount point itself is tried (a container usually sees only its own cgroup there). The memory
 * controller is read from v1 when /proc/self/cgroup has a v1 memory hierarchy (hybrid hosts
 * keep controllers on v1), else from v2; the same for cpu.
 *
 * Limits: v2 memory.max and cpu.max are read from the process's cgroup up to the mount point,
 * the lowest one winning (a limit set on a parent slice binds the child too); v1 uses
 * memory.limit_in_bytes with memory.stat's hierarchical_memory_limit, and cpu.cfs_quota_us /
 * cpu.cfs_period_us up the tree. memory.available_bytes becomes at most the limit minus the
 * usage (memory.current / memory.usage_in_bytes) of the cgroup that set the limit. That usage
 * includes the cgroup's page cache, so the figure is conservative.
 *
 * Container detection (host.container.detected) takes any one of: /.dockerenv (Docker),
 * /run/.containerenv (Podman), /run/systemd/container (systemd-nspawn, LXC and others that
 * follow systemd's container interface), or a container runtime's name in /proc/self/cgroup
 * or /proc/1/cgroup (docker, kubepods, libpod, lxc, crio...). A cgroup path of "/" or not-"/"
 * alone is no evidence: processes on a host sit in /user.slice/..., and a host without a
 * service manager keeps them in "/". A limit is reported and applied whether or not a
 * container was detected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/err.h"
#include "core/hw/hw_parse.h"
#include "core/hw/hw_parse_cgroup.h"
#include "server/detect/probes.h"
#include "server/detect/readfile.h"

#define PROC_FILE_CAP (4u << 20)
#define CGROUP_FILE_CAP (64u << 10)
/* Levels walked from the process's cgroup towards the mount point. */
#define CGROUP_MAX_DEPTH 64

struct cg_result {
	int64_t limit; /* HW_UNKNOWN: no limit */
	int64_t usage; /* of the cgroup that set the limit; HW_UNKNOWN */
	double cores;  /* < 0: no quota */
};

static bool root_exists(const struct rf_detect_opts *o, const char *path)
{
	char full[4352];
	int n = snprintf(full, sizeof(full), "%s%s", strcmp(o->root, "/") == 0 ? "" : o->root,
			 path);

	return n >= 0 && (size_t)n < sizeof(full) && access(full, F_OK) == 0;
}

/* Reads dir/name; returns 0 and a malloc'd buffer, or a negative rf_err. */
static int read_cg(const struct rf_detect_opts *o, const char *dir, const char *name, size_t cap,
		   char **buf, size_t *len)
{
	char path[HW_CGROUP_PATH_LEN + 64];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= sizeof(path))
		return RF_E_TOO_LARGE;
	return rf_read_under_root(o->root, path, cap, buf, len);
}

static int read_cg_bytes(const struct rf_detect_opts *o, const char *dir, const char *name,
			 int64_t *out)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = read_cg(o, dir, name, CGROUP_FILE_CAP, &buf, &len);

	if (rc < 0)
		return rc;
	rc = hw_parse_cgroup_bytes(buf, len, out);
	free(buf);
	return rc;
}

/* Cuts the last path component off dir; returns false when dir is at (or above) stop. */
static bool parent_dir(char *dir, const char *stop)
{
	size_t n = strlen(dir), sn = strlen(stop);
	char *slash;

	if (n <= sn)
		return false;
	slash = strrchr(dir, '/');
	if (!slash || (size_t)(slash - dir) < sn)
		return false;
	*slash = '\0';
	return true;
}

/* The directory of the process's cgroup in mount m: the joined path if it exists there, else
 * the mount point. Returns false when neither exists. */
static bool cg_dir(const struct rf_detect_opts *o, const struct hw_cgroup_mount *m,
		   const char *path, const char *probe_file, char *dir, size_t dirlen)
{
	char file[HW_CGROUP_PATH_LEN + 64];

	if (hw_cgroup_resolve(m, path, dir, dirlen) == 0) {
		snprintf(file, sizeof(file), "%s/%s", dir, probe_file);
		if (root_exists(o, file))
			return true;
	}
	if (strlen(m->point) >= dirlen)
		return false;
	memcpy(dir, m->point, strlen(m->point) + 1);
	snprintf(file, sizeof(file), "%s/%s", dir, probe_file);
	return root_exists(o, file);
}

static void cg_v2_memory(const struct rf_detect_opts *o, const struct hw_cgroup_mount *m,
			 const char *path, struct cg_result *r)
{
	char dir[HW_CGROUP_PATH_LEN];

	if (!cg_dir(o, m, path, "memory.max", dir, sizeof(dir)))
		return;
	for (int depth = 0; depth < CGROUP_MAX_DEPTH; depth++) {
		int64_t v;
		if (read_cg_bytes(o, dir, "memory.max", &v) == 0 && v >= 0 &&
		    (r->limit < 0 || v < r->limit)) {
			int64_t use = HW_UNKNOWN;
			r->limit = v;
			r->usage = read_cg_bytes(o, dir, "memory.current", &use) == 0 ? use :
											HW_UNKNOWN;
		}
		if (!parent_dir(dir, m->point))
			break;
	}
}

static void cg_v1_memory(const struct rf_detect_opts *o, const struct hw_cgroup_mount *m,
			 const char *path, struct cg_result *r)
{
	char dir[HW_CGROUP_PATH_LEN];
	char *buf = NULL;
	size_t len = 0;
	int64_t v;

	if (!cg_dir(o, m, path, "memory.limit_in_bytes", dir, sizeof(dir)))
		return;
	if (read_cg_bytes(o, dir, "memory.limit_in_bytes", &v) == 0 && v >= 0)
		r->limit = v;
	if (read_cg(o, dir, "memory.stat", CGROUP_FILE_CAP, &buf, &len) == 0) {
		if (hw_parse_cgroup_v1_hierarchical_limit(buf, len, &v) == 0 && v >= 0 &&
		    (r->limit < 0 || v < r->limit))
			r->limit = v;
		free(buf);
	}
	if (r->limit >= 0 && read_cg_bytes(o, dir, "memory.usage_in_bytes", &v) == 0)
		r->usage = v;
}

static void cg_cpu(const struct rf_detect_opts *o, const struct hw_cgroup_mount *m,
		   const char *path, bool v2, struct cg_result *r)
{
	char dir[HW_CGROUP_PATH_LEN];

	if (!cg_dir(o, m, path, v2 ? "cpu.max" : "cpu.cfs_quota_us", dir, sizeof(dir)))
		return;
	for (int depth = 0; depth < CGROUP_MAX_DEPTH; depth++) {
		char *q = NULL, *p = NULL;
		size_t ql = 0, pl = 0;
		double cores = -1.0;
		int rc;

		if (v2) {
			rc = read_cg(o, dir, "cpu.max", CGROUP_FILE_CAP, &q, &ql);
			if (rc == 0)
				rc = hw_parse_cgroup_cpu_max(q, ql, &cores);
		} else {
			rc = read_cg(o, dir, "cpu.cfs_quota_us", CGROUP_FILE_CAP, &q, &ql);
			if (rc == 0)
				rc = read_cg(o, dir, "cpu.cfs_period_us", CGROUP_FILE_CAP, &p, &pl);
			if (rc == 0)
				rc = hw_parse_cgroup_cfs(q, ql, p, pl, &cores);
		}
		free(q);
		free(p);
		if (rc == 0 && cores > 0 && (r->cores < 0 || cores < r->cores))
			r->cores = cores;
		if (!parent_dir(dir, m->point))
			break;
	}
}

/* The usual mounts, for roots without /proc/self/mountinfo. */
static void default_mounts(struct hw_cgroup_mounts *m)
{
	memset(m, 0, sizeof(*m));
	m->unified.found = m->memory.found = m->cpu.found = true;
	hw_strlcpy(m->unified.point, "/sys/fs/cgroup", sizeof(m->unified.point));
	hw_strlcpy(m->memory.point, "/sys/fs/cgroup/memory", sizeof(m->memory.point));
	hw_strlcpy(m->cpu.point, "/sys/fs/cgroup/cpu", sizeof(m->cpu.point));
	hw_strlcpy(m->unified.root, "/", sizeof(m->unified.root));
	hw_strlcpy(m->memory.root, "/", sizeof(m->memory.root));
	hw_strlcpy(m->cpu.root, "/", sizeof(m->cpu.root));
}

static bool names_container(const struct rf_detect_opts *o, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	bool yes;

	if (rf_read_under_root(o->root, path, CGROUP_FILE_CAP, &buf, &len) < 0)
		return false;
	yes = hw_cgroup_names_container(buf, len);
	free(buf);
	return yes;
}

static void probe_cgroups(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	struct hw_proc_cgroup *pc = calloc(1, sizeof(*pc));
	struct hw_cgroup_mounts *mounts = calloc(1, sizeof(*mounts));
	struct cg_result r = {HW_UNKNOWN, HW_UNKNOWN, -1.0};
	char *buf = NULL;
	size_t len = 0;
	bool self_read;
	int rc;

	rc = rf_read_under_root(o->root, "/proc/self/cgroup", CGROUP_FILE_CAP, &buf, &len);
	self_read = rc == 0;
	s->host.container.detected = root_exists(o, "/.dockerenv") ||
				     root_exists(o, "/run/.containerenv") ||
				     root_exists(o, "/run/systemd/container") ||
				     (self_read && hw_cgroup_names_container(buf, len)) ||
				     names_container(o, "/proc/1/cgroup");
	if (!pc || !mounts) {
		hw_warn(s, "memory: out of memory reading cgroups");
		goto out;
	}
	if (!self_read)
		goto out; /* no cgroups (not Linux, or a capture without them) */
	if (hw_parse_proc_cgroup(buf, len, pc) < 0) {
		hw_warn(s, "memory: /proc/self/cgroup could not be parsed");
		goto out;
	}
	free(buf);
	buf = NULL;
	if (rf_read_under_root(o->root, "/proc/self/mountinfo", PROC_FILE_CAP, &buf, &len) < 0 ||
	    hw_parse_mountinfo_cgroups(buf, len, mounts) < 0)
		default_mounts(mounts);

	if (pc->has_memory && mounts->memory.found)
		cg_v1_memory(o, &mounts->memory, pc->memory, &r);
	else if (pc->has_unified && mounts->unified.found)
		cg_v2_memory(o, &mounts->unified, pc->unified, &r);
	if (pc->has_cpu && mounts->cpu.found)
		cg_cpu(o, &mounts->cpu, pc->cpu, false, &r);
	else if (pc->has_unified && mounts->unified.found)
		cg_cpu(o, &mounts->unified, pc->unified, true, &r);

	s->host.container.cgroup_memory_limit_bytes = r.limit;
	s->host.container.cpu_quota_cores = r.cores;
	if (r.limit >= 0) {
		s->memory.available_bytes =
			hw_cgroup_budget(s->memory.available_bytes, r.limit, r.usage);
		if (r.usage < 0)
			hw_warn(s, "memory: cgroup memory usage unknown; available memory is "
				   "capped at the limit only");
	}
out:
	free(buf);
	free(pc);
	free(mounts);
}

void rf_probe_memory(const struct rf_detect_opts *o, struct hw_snapshot *s)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (s->memory.total_bytes >= 0)
		return; /* an earlier probe (Apple) answered; macOS has no cgroups */
	rc = rf_read_under_root(o->root, "/proc/meminfo", PROC_FILE_CAP, &buf, &len);
	if (rc < 0) {
		hw_warn(s, "memory: cannot read /proc/meminfo (%s)", rf_err_code(rc));
	} else {
		if (hw_parse_meminfo(buf, len, &s->memory) < 0)
			hw_warn(s, "memory: /proc/meminfo has no MemTotal line");
		else
			hw_strlcpy(s->sources.memory, "proc", sizeof(s->sources.memory));
		free(buf);
	}
	probe_cgroups(o, s);
}

int64_t rf_probe_memory_room(const struct rf_detect_opts *o)
{
	struct hw_snapshot *s = malloc(sizeof(*s));
	int64_t room;

	if (!s)
		return HW_UNKNOWN;
	hw_snapshot_init(s);
	rf_probe_memory(o, s);
	room = s->memory.available_bytes;
	free(s);
	return room;
}
