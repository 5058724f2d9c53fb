/*
 * The health checks that the packaging files name, run as written against the real daemon:
 * the Dockerfile's HEALTHCHECK command and the systemd unit's ExecStartPost probes are read
 * from the files, pointed at a daemon on an ephemeral port, and must tell a ready daemon from
 * one whose store is down (liveness passes there, readiness fails) and from no daemon at all.
 * The DaemonSet's probe paths are checked in test_daemonset.c.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/server/harness.h"
#include "tests/test.h"

#define MAX_ARGS 16

struct probe_cmd {
	char *argv[MAX_ARGS + 1]; /* argv[0] is "rigfit" as written; malloc'd strings */
	int argc;
};

static void cmd_free(struct probe_cmd *c)
{
	for (int i = 0; i < c->argc; i++)
		free(c->argv[i]);
	c->argc = 0;
}

static void cmd_push(struct probe_cmd *c, const char *s, size_t n)
{
	ck_assert_int_lt(c->argc, MAX_ARGS);
	c->argv[c->argc] = strndup(s, n);
	ck_assert_ptr_nonnull(c->argv[c->argc]);
	c->argv[++c->argc] = NULL;
}

/* The Dockerfile's HEALTHCHECK ... CMD ["rigfit", ...] (exec form, continuation lines
 * joined) as an argv. */
static void docker_healthcheck(struct probe_cmd *c)
{
	char *path = t_path(t_src_dir(), "Dockerfile"), *text = t_read_file(path, NULL), *line,
	     *cmd, *end;
	cJSON *arr;
	const cJSON *it;

	ck_assert_ptr_nonnull(text);
	line = strstr(text, "\nHEALTHCHECK ");
	ck_assert_msg(line != NULL, "the Dockerfile has no HEALTHCHECK");
	cmd = strstr(line, "CMD [");
	ck_assert_ptr_nonnull(cmd);
	end = strchr(cmd, ']');
	ck_assert_ptr_nonnull(end);
	end[1] = '\0';
	arr = cJSON_Parse(cmd + 4);
	ck_assert_msg(cJSON_IsArray(arr), "HEALTHCHECK CMD is not the exec form: %s", cmd);
	memset(c, 0, sizeof(*c));
	cJSON_ArrayForEach(it, arr)
	{
		ck_assert(cJSON_IsString(it));
		cmd_push(c, it->valuestring, strlen(it->valuestring));
	}
	cJSON_Delete(arr);
	free(text);
	free(path);
}

/* The unit's ExecStartPost= lines that run rigfit, split on spaces, at most max of them.
 * Returns how many. */
static int unit_probes(struct probe_cmd *c, int max)
{
	static const char key[] = "\nExecStartPost=";
	char *path = t_path(t_src_dir(), "systemd/rigfit.service"), *text = t_read_file(path, NULL);
	int n = 0;

	ck_assert_ptr_nonnull(text);
	for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
		const char *s = p + sizeof(key) - 1, *eol = s + strcspn(s, "\n");
		ck_assert_int_lt(n, max);
		memset(&c[n], 0, sizeof(c[n]));
		while (s < eol) {
			size_t w = strcspn(s, " \n");
			if (w)
				cmd_push(&c[n], s, w);
			s += w + (s[w] == ' ');
		}
		n++;
	}
	free(text);
	free(path);
	return n;
}

/* Runs c with the binary under test for its program and the port for 8080 in --listen;
 * a --wait longer than max_wait is shortened to it (the unit gives a starting daemon a minute,
 * a test of a daemon that never gets ready should not). Returns the exit status; *err gets
 * stderr (malloc'd). */
static int run_probe(const struct probe_cmd *c, int port, const char *max_wait, char **err)
{
	const char *argv[MAX_ARGS + 1];
	char listen[32];
	int rc;

	ck_assert_int_ge(c->argc, 2);
	ck_assert_msg(strcmp(c->argv[0], "rigfit") == 0 ||
			      strcmp(c->argv[0], "/usr/local/bin/rigfit") == 0,
		      "probe program %s", c->argv[0]);
	ck_assert_str_eq(c->argv[1], "healthcheck");
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	argv[0] = t_bin();
	for (int i = 1; i < c->argc; i++) {
		argv[i] = c->argv[i];
		if (strcmp(c->argv[i], "127.0.0.1:8080") == 0)
			argv[i] = listen;
		if (i > 1 && strcmp(c->argv[i - 1], "--wait") == 0 &&
		    strtol(c->argv[i], NULL, 10) > strtol(max_wait, NULL, 10))
			argv[i] = max_wait;
	}
	argv[c->argc] = NULL;
	rc = t_run(argv, NULL, err, 90000);
	return rc;
}

static int has_arg(const struct probe_cmd *c, const char *a)
{
	for (int i = 0; i < c->argc; i++)
		if (strcmp(c->argv[i], a) == 0)
			return 1;
	return 0;
}

/* A ready daemon passes every probe the files name. */
START_TEST(test_probes_pass_on_a_ready_daemon)
{
	struct t_daemon d;
	struct probe_cmd docker, unit[4];
	int n = unit_probes(unit, 4);
	char *err = NULL;

	docker_healthcheck(&docker);
	t_daemon_start(&d, NULL);
	t_wait_scan(d.port);
	ck_assert_msg(run_probe(&docker, d.port, "5", &err) == 0, "HEALTHCHECK: %s", err);
	free(err);
	for (int i = 0; i < n; i++) {
		err = NULL;
		ck_assert_msg(run_probe(&unit[i], d.port, "5", &err) == 0, "ExecStartPost %d: %s",
			      i, err);
		free(err);
	}
	t_daemon_stop(&d);
	for (int i = 0; i < n; i++)
		cmd_free(&unit[i]);
	cmd_free(&docker);
}
END_TEST

/* A daemon whose store cannot be opened is alive but not ready: the unit has one probe of
 * each kind and only liveness passes; Docker's single health check is readiness. With no
 * daemon at all, every probe fails. */
START_TEST(test_probes_tell_store_down_from_ready)
{
	struct t_daemon d;
	struct probe_cmd docker, unit[4];
	int n = unit_probes(unit, 4), live = 0, ready = 0, port;
	char *dir = t_mkdtemp(), *db = t_path(dir, "bad.db"), *err = NULL;
	const char *extra[] = {"--db", db, NULL};

	ck_assert_int_eq(n, 2);
	docker_healthcheck(&docker);
	ck_assert_msg(has_arg(&docker, "--ready"), "the Dockerfile's HEALTHCHECK is not readiness");
	ck_assert_int_eq(t_write_file(db, "this is not a database, not even close to one", 46), 0);
	t_daemon_start(&d, extra);
	port = d.port;
	ck_assert_int_eq(run_probe(&docker, port, "1", &err), 1);
	ck_assert_msg(strstr(err, "/readyz") && strstr(err, "503"), "HEALTHCHECK said: %s", err);
	free(err);
	for (int i = 0; i < n; i++) {
		int rc;
		err = NULL;
		rc = run_probe(&unit[i], port, "1", &err);
		if (has_arg(&unit[i], "--ready")) {
			ck_assert_msg(rc == 1, "readiness passed on a store that is down: %s", err);
			ready++;
		} else {
			ck_assert_msg(rc == 0, "liveness failed on a live daemon: %s", err);
			live++;
		}
		free(err);
	}
	ck_assert_int_eq(live, 1);
	ck_assert_int_eq(ready, 1);
	t_daemon_stop(&d);

	/* The daemon is gone: nothing answers on its port any more. */
	for (int i = 0; i < n; i++) {
		err = NULL;
		ck_assert_int_eq(run_probe(&unit[i], port, "1", &err), 1);
		free(err);
		cmd_free(&unit[i]);
	}
	cmd_free(&docker);
	t_rmtree(dir);
	free(dir);
	free(db);
}
END_TEST

Suite *probes_suite(void)
{
	Suite *s = suite_create("probes");
	TCase *tc = tcase_create("probes");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_probes_pass_on_a_ready_daemon);
	tcase_add_test(tc, test_probes_tell_store_down_from_ready);
	suite_add_tcase(s, tc);
	return s;
}
