/*
 * Tests of the sample DaemonSet (systemd/rigfit-daemonset.yaml) against the binary and the
 * Dockerfile: the container's args parse with the daemon's own flag parser; the port, the
 * probes, the root and the feature directory agree with the mounts; the host's /proc and /sys
 * are mounted read-only; the pod's user is the image's. `make lint` checks that the file is
 * well-formed YAML; this checks that it says the right things.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/config.h"
#include "tests/test.h"

#define MAX_LINES 512
#define MAX_ARGS 64

struct manifest {
	char *text;
	char *lines[MAX_LINES];
	int n;
};

static void manifest_load(struct manifest *m)
{
	char *path = t_path(t_src_dir(), "systemd/rigfit-daemonset.yaml");
	char *save = NULL;

	memset(m, 0, sizeof(*m));
	m->text = t_read_file(path, NULL);
	ck_assert_msg(m->text != NULL, "cannot read %s", path);
	free(path);
	for (char *l = strtok_r(m->text, "\n", &save); l && m->n < MAX_LINES;
	     l = strtok_r(NULL, "\n", &save))
		m->lines[m->n++] = l;
}

static int indent_of(const char *l)
{
	int n = 0;
	while (l[n] == ' ')
		n++;
	return n;
}

/* Returns the value of the list item or key line l ("- x", "key: x"), quotes removed, in buf;
 * NULL when l has none. */
static const char *value_of(const char *l, const char *key, char *buf, size_t len)
{
	const char *v;
	size_t n;

	l += indent_of(l);
	if (key) {
		size_t k = strlen(key);
		if (strncmp(l, key, k) != 0 || l[k] != ':')
			return NULL;
		v = l + k + 1;
	} else {
		if (strncmp(l, "- ", 2) != 0)
			return NULL;
		v = l + 2;
	}
	while (*v == ' ')
		v++;
	n = strcspn(v, "#");
	while (n > 0 && v[n - 1] == ' ')
		n--;
	if (n >= 2 && (v[0] == '"' || v[0] == '\'') && v[n - 1] == v[0]) {
		v++;
		n -= 2;
	}
	snprintf(buf, len, "%.*s", (int)n, v);
	return buf;
}

/* Finds the first line from `from` with key (at any indentation) and writes its value.
 * Returns the line index or -1. */
static int find_key(const struct manifest *m, int from, const char *key, char *buf, size_t len)
{
	for (int i = from; i < m->n; i++)
		if (value_of(m->lines[i], key, buf, len))
			return i;
	return -1;
}

/* Collects the rigfit container's args (the list under its "args:") into argv. */
static int container_args(const struct manifest *m, char argv[MAX_ARGS][256])
{
	char buf[256];
	int at = -1, n = 0;

	for (int i = 0; i < m->n && at < 0; i++)
		if (value_of(m->lines[i], "args", buf, sizeof(buf)))
			at = i;
	ck_assert_int_ge(at, 0);
	for (int i = at + 1; i < m->n && n < MAX_ARGS; i++) {
		const char *l = m->lines[i] + indent_of(m->lines[i]);
		if (*l == '#')
			continue;
		if (!value_of(m->lines[i], NULL, argv[n], 256))
			break;
		n++;
	}
	return n;
}

/* Returns true when a volumeMount at mountPath path exists, and tells whether it is
 * readOnly. */
static bool mount_of(const struct manifest *m, const char *path, bool *read_only)
{
	char buf[256];

	for (int i = 0; i < m->n; i++) {
		if (!value_of(m->lines[i], "mountPath", buf, sizeof(buf)) || strcmp(buf, path) != 0)
			continue;
		*read_only = false;
		for (int k = i + 1; k < m->n && indent_of(m->lines[k]) == indent_of(m->lines[i]);
		     k++)
			if (value_of(m->lines[k], "readOnly", buf, sizeof(buf)))
				*read_only = strcmp(buf, "true") == 0;
		return true;
	}
	return false;
}

START_TEST(daemonset_agrees_with_the_binary_and_the_image)
{
	struct manifest m;
	char args[MAX_ARGS][256], *argv[MAX_ARGS], err[256], buf[256], host[128], path[4200];
	char *docker = t_path(t_src_dir(), "Dockerfile"), *dockerfile;
	struct rf_config cfg;
	int n, port = 0, i;
	bool ro = false;

	manifest_load(&m);
	ck_assert_int_ge(find_key(&m, 0, "kind", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "DaemonSet");

	/* The args are a serve command line the daemon accepts. */
	n = container_args(&m, args);
	ck_assert_int_gt(n, 1);
	ck_assert_str_eq(args[0], "serve");
	for (i = 1; i < n; i++)
		argv[i - 1] = args[i];
	ck_assert_msg(rf_config_parse(n - 1, argv, &cfg, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(rf_listen_parse(cfg.listen, host, sizeof(host), &port), 0);
	/* Listening beyond loopback needs a token (or --insecure). */
	ck_assert(cfg.token_file[0] != '\0' || cfg.insecure);

	/* The port is the one the image exposes and the probes use (by name). */
	ck_assert_int_ge(find_key(&m, 0, "containerPort", buf, sizeof(buf)), 0);
	ck_assert_int_eq((int)strtol(buf, NULL, 10), port);
	dockerfile = t_read_file(docker, NULL);
	ck_assert_ptr_nonnull(dockerfile);
	snprintf(path, sizeof(path), "\nEXPOSE %d\n", port);
	ck_assert_msg(strstr(dockerfile, path), "the Dockerfile does not EXPOSE %d", port);
	i = find_key(&m, 0, "livenessProbe", buf, sizeof(buf));
	ck_assert_int_ge(i, 0);
	ck_assert_int_ge(find_key(&m, i, "path", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/healthz");
	i = find_key(&m, 0, "readinessProbe", buf, sizeof(buf));
	ck_assert_int_ge(i, 0);
	ck_assert_int_ge(find_key(&m, i, "path", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "/readyz");

	/* The host's /proc and /sys, read-only, where --root reads them. */
	ck_assert_str_ne(cfg.root, "/");
	snprintf(path, sizeof(path), "%s/proc", cfg.root);
	ck_assert_msg(mount_of(&m, path, &ro) && ro, "%s is not mounted read-only", path);
	snprintf(path, sizeof(path), "%s/sys", cfg.root);
	ck_assert_msg(mount_of(&m, path, &ro) && ro, "%s is not mounted read-only", path);
	/* With a root other than /, NVML and nvidia-smi must be named to be used. */
	ck_assert(cfg.nvml_lib[0] != '\0');
	ck_assert(cfg.nvidia_smi[0] != '\0');
	/* The feature file goes where the host directory is mounted, writable. */
	ck_assert(cfg.nfd_dir[0] != '\0');
	ck_assert_msg(mount_of(&m, cfg.nfd_dir, &ro) && !ro, "%s is not mounted writable",
		      cfg.nfd_dir);
	/* The token file lies in a mounted directory. */
	snprintf(path, sizeof(path), "%s", cfg.token_file);
	*strrchr(path, '/') = '\0';
	ck_assert_msg(mount_of(&m, path, &ro), "%s is not mounted", path);

	/* The pod runs as the image's user, and the NVIDIA runtime class is named. */
	ck_assert_int_ge(find_key(&m, 0, "runAsUser", buf, sizeof(buf)), 0);
	snprintf(path, sizeof(path), "\nUSER %s:", buf);
	ck_assert_msg(strstr(dockerfile, path), "the image's USER is not %s", buf);
	ck_assert_int_ge(find_key(&m, 0, "runtimeClassName", buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "nvidia");
	free(dockerfile);
	free(docker);
	free(m.text);
}
END_TEST

Suite *daemonset_suite(void)
{
	Suite *s = suite_create("daemonset");
	TCase *tc = tcase_create("daemonset");

	tcase_add_test(tc, daemonset_agrees_with_the_binary_and_the_image);
	suite_add_tcase(s, tc);
	return s;
}
