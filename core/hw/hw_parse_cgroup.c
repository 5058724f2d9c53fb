/*
 * cgroup v1/v2 parsing and the memory budget under a limit (see hw_parse_cgroup.h). Paths are
 * copied into fixed buffers; a longer path is dropped, never cut, since a cut path would name
 * another cgroup.
 */
#include "core/hw/hw_parse_cgroup.h"

#include <string.h>

#include "core/err.h"
#include "core/hw/hw.h"
#include "core/numparse.h"
#include "core/text.h"

/* Microseconds: the kernel bounds cfs periods to [1 ms, 1 s] and quotas to about 2^44 us;
 * these caps only reject junk. */
#define CGROUP_MAX_USEC (UINT64_C(1) << 50)

int hw_parse_cgroup_bytes(const char *text, size_t len, int64_t *out)
{
	struct rf_span v = rf_span_trim((struct rf_span){text, text ? len : 0});
	uint64_t n;

	if (rf_span_eq(v, "max") || rf_span_eq(v, "-1")) {
		*out = HW_UNKNOWN;
		return 0;
	}
	if (rf_parse_u64(v.p, v.len, UINT64_MAX, &n) < 0)
		return RF_E_PARSE;
	*out = n >= (uint64_t)HW_CGROUP_UNLIMITED_MIN ? HW_UNKNOWN : (int64_t)n;
	return 0;
}

int hw_parse_cgroup_v1_hierarchical_limit(const char *text, size_t len, int64_t *out)
{
	struct rf_lines it;
	struct rf_span line;

	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		static const char key[] = "hierarchical_memory_limit ";
		if (line.len > sizeof(key) - 1 && memcmp(line.p, key, sizeof(key) - 1) == 0)
			return hw_parse_cgroup_bytes(line.p + sizeof(key) - 1,
						     line.len - (sizeof(key) - 1), out);
	}
	return RF_E_PARSE;
}

static int cgroup_ratio(uint64_t quota, uint64_t period, double *cores)
{
	if (quota == 0 || period == 0)
		return RF_E_PARSE;
	*cores = (double)quota / (double)period;
	return 0;
}

int hw_parse_cgroup_cpu_max(const char *text, size_t len, double *cores)
{
	struct rf_span v = rf_span_trim((struct rf_span){text, text ? len : 0});
	const char *sp = v.len ? memchr(v.p, ' ', v.len) : NULL;
	struct rf_span q, p;
	uint64_t quota, period;

	if (!sp) {
		if (rf_span_eq(v, "max")) {
			*cores = -1.0;
			return 0;
		}
		return RF_E_PARSE;
	}
	q = (struct rf_span){v.p, (size_t)(sp - v.p)};
	p = rf_span_trim((struct rf_span){sp + 1, v.len - q.len - 1});
	if (rf_parse_u64(p.p, p.len, CGROUP_MAX_USEC, &period) < 0 || period == 0)
		return RF_E_PARSE;
	if (rf_span_eq(q, "max")) {
		*cores = -1.0;
		return 0;
	}
	if (rf_parse_u64(q.p, q.len, CGROUP_MAX_USEC, &quota) < 0)
		return RF_E_PARSE;
	return cgroup_ratio(quota, period, cores);
}

int hw_parse_cgroup_cfs(const char *quota, size_t quota_len, const char *period, size_t period_len,
			double *cores)
{
	struct rf_span q = rf_span_trim((struct rf_span){quota, quota ? quota_len : 0});
	struct rf_span p = rf_span_trim((struct rf_span){period, period ? period_len : 0});
	uint64_t qv, pv;

	if (rf_span_eq(q, "-1")) {
		*cores = -1.0;
		return 0;
	}
	if (rf_parse_u64(q.p, q.len, CGROUP_MAX_USEC, &qv) < 0 ||
	    rf_parse_u64(p.p, p.len, CGROUP_MAX_USEC, &pv) < 0)
		return RF_E_PARSE;
	return cgroup_ratio(qv, pv, cores);
}

/* Returns true when the comma-separated list holds the word. */
static bool list_has(struct rf_span list, const char *word)
{
	size_t i = 0;

	while (i <= list.len) {
		size_t s = i;
		while (i < list.len && list.p[i] != ',')
			i++;
		if (rf_span_eq((struct rf_span){list.p + s, i - s}, word))
			return true;
		i++;
	}
	return false;
}

static bool copy_path(struct rf_span s, char *dst, size_t dstlen)
{
	if (s.len == 0 || s.len >= dstlen || s.p[0] != '/' || memchr(s.p, '\0', s.len))
		return false;
	memcpy(dst, s.p, s.len);
	dst[s.len] = '\0';
	return true;
}

int hw_parse_proc_cgroup(const char *text, size_t len, struct hw_proc_cgroup *out)
{
	struct hw_proc_cgroup r;
	struct rf_lines it;
	struct rf_span line;
	bool any = false;

	memset(&r, 0, sizeof(r));
	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		const char *c1 = line.len ? memchr(line.p, ':', line.len) : NULL;
		const char *c2;
		struct rf_span id, ctl, path;
		uint64_t n;

		if (!c1)
			continue;
		c2 = memchr(c1 + 1, ':', (size_t)(line.p + line.len - c1 - 1));
		if (!c2)
			continue;
		id = (struct rf_span){line.p, (size_t)(c1 - line.p)};
		ctl = (struct rf_span){c1 + 1, (size_t)(c2 - c1 - 1)};
		/* The path is the rest of the line: it may itself hold ':'. */
		path = (struct rf_span){c2 + 1, (size_t)(line.p + line.len - c2 - 1)};
		if (rf_parse_u64(id.p, id.len, 1u << 20, &n) < 0)
			continue;
		if (n == 0 && ctl.len == 0) {
			if (copy_path(path, r.unified, sizeof(r.unified)))
				r.has_unified = any = true;
		} else {
			if (list_has(ctl, "memory") && copy_path(path, r.memory, sizeof(r.memory)))
				r.has_memory = any = true;
			if (list_has(ctl, "cpu") && copy_path(path, r.cpu, sizeof(r.cpu)))
				r.has_cpu = any = true;
		}
	}
	if (!any)
		return RF_E_PARSE;
	*out = r;
	return 0;
}

/* Copies a mountinfo field, decoding the kernel's "\ooo" escapes (space, tab, newline,
 * backslash). Returns false when it does not fit or is not an absolute path. */
static bool mount_field(struct rf_span f, char *dst, size_t dstlen)
{
	size_t o = 0;

	if (f.len == 0 || f.p[0] != '/')
		return false;
	for (size_t i = 0; i < f.len; i++) {
		char c = f.p[i];
		if (c == '\\' && i + 3 < f.len && f.p[i + 1] >= '0' && f.p[i + 1] <= '3' &&
		    f.p[i + 2] >= '0' && f.p[i + 2] <= '7' && f.p[i + 3] >= '0' &&
		    f.p[i + 3] <= '7') {
			c = (char)((f.p[i + 1] - '0') * 64 + (f.p[i + 2] - '0') * 8 +
				   (f.p[i + 3] - '0'));
			i += 3;
		}
		if (c == '\0' || o + 1 >= dstlen)
			return false;
		dst[o++] = c;
	}
	dst[o] = '\0';
	return true;
}

/* Splits a line into space-separated fields; returns how many (at most max). */
static int split_fields(struct rf_span line, struct rf_span *f, int max)
{
	int n = 0;
	size_t i = 0;

	while (i < line.len && n < max) {
		size_t s;
		while (i < line.len && line.p[i] == ' ')
			i++;
		if (i == line.len)
			break;
		s = i;
		while (i < line.len && line.p[i] != ' ')
			i++;
		f[n++] = (struct rf_span){line.p + s, i - s};
	}
	return n;
}

static void set_mount(struct hw_cgroup_mount *m, struct rf_span root, struct rf_span point)
{
	struct hw_cgroup_mount tmp;

	if (m->found)
		return;
	if (!mount_field(root, tmp.root, sizeof(tmp.root)) ||
	    !mount_field(point, tmp.point, sizeof(tmp.point)))
		return;
	tmp.found = true;
	*m = tmp;
}

int hw_parse_mountinfo_cgroups(const char *text, size_t len, struct hw_cgroup_mounts *out)
{
	struct hw_cgroup_mounts r;
	struct rf_lines it;
	struct rf_span line;

	memset(&r, 0, sizeof(r));
	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		/* id parent major:minor root point options [optional...] - fstype source super */
		struct rf_span f[32];
		int n = split_fields(line, f, 32), dash = -1;

		for (int i = 6; i < n; i++)
			if (rf_span_eq(f[i], "-")) {
				dash = i;
				break;
			}
		if (dash < 0 || dash + 3 >= n)
			continue;
		if (rf_span_eq(f[dash + 1], "cgroup2")) {
			set_mount(&r.unified, f[3], f[4]);
		} else if (rf_span_eq(f[dash + 1], "cgroup")) {
			if (list_has(f[dash + 3], "memory"))
				set_mount(&r.memory, f[3], f[4]);
			if (list_has(f[dash + 3], "cpu"))
				set_mount(&r.cpu, f[3], f[4]);
		}
	}
	if (!r.unified.found && !r.memory.found && !r.cpu.found)
		return RF_E_PARSE;
	*out = r;
	return 0;
}

int hw_cgroup_resolve(const struct hw_cgroup_mount *m, const char *cgroup_path, char *out,
		      size_t outlen)
{
	const char *rel = "";
	size_t rlen = strlen(m->root), plen, n;

	if (strcmp(m->root, "/") == 0) {
		rel = strcmp(cgroup_path, "/") == 0 ? "" : cgroup_path;
	} else if (strcmp(m->root, cgroup_path) == 0) {
		rel = "";
	} else if (strncmp(cgroup_path, m->root, rlen) == 0 && cgroup_path[rlen] == '/') {
		rel = cgroup_path + rlen;
	}
	/* A path that climbs ("/../..": the process sits outside its cgroup namespace's root)
	 * is not visible below the mount: use the mount point. */
	if (strstr(rel, "/..") || strstr(rel, "//"))
		rel = "";
	plen = strlen(m->point);
	if (plen == 1 && m->point[0] == '/' && rel[0])
		plen = 0; /* "/" + "/x" */
	n = plen + strlen(rel);
	if (n + 1 > outlen)
		return RF_E_TOO_LARGE;
	memcpy(out, m->point, plen);
	memcpy(out + plen, rel, strlen(rel) + 1);
	return 0;
}

/* Returns true when one path segment names a container runtime's cgroup. */
static bool container_segment(struct rf_span s)
{
	static const char *const exact[] = {"docker", "lxc", "ecs", "actions_job"};
	static const char *const prefix[] = {"docker-",     "kubepods", "libpod",
					     "lxc.payload", "crio-",    "cri-containerd-"};

	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (rf_span_eq(s, exact[i]))
			return true;
	for (size_t i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++) {
		size_t n = strlen(prefix[i]);
		if (s.len >= n && memcmp(s.p, prefix[i], n) == 0)
			return true;
	}
	return false;
}

bool hw_cgroup_names_container(const char *text, size_t len)
{
	struct rf_lines it;
	struct rf_span line;

	rf_lines_init(&it, text, len);
	while (rf_lines_next(&it, &line)) {
		const char *c1 = line.len ? memchr(line.p, ':', line.len) : NULL;
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(line.p + line.len - c1 - 1)) :
				      NULL;
		size_t i, end;

		if (!c2)
			continue;
		i = (size_t)(c2 + 1 - line.p);
		end = line.len;
		while (i < end) {
			size_t s;
			while (i < end && line.p[i] == '/')
				i++;
			s = i;
			while (i < end && line.p[i] != '/')
				i++;
			if (i > s && container_segment((struct rf_span){line.p + s, i - s}))
				return true;
		}
	}
	return false;
}

int64_t hw_cgroup_budget(int64_t mem_available, int64_t limit, int64_t usage)
{
	int64_t room;

	if (limit < 0)
		return mem_available < 0 ? HW_UNKNOWN : mem_available;
	room = limit;
	if (usage >= 0)
		room = usage >= limit ? 0 : limit - usage;
	if (mem_available < 0 || room < mem_available)
		return room;
	return mem_available;
}
