/*
 * Unit tests for the server's pieces that need no socket: configuration from flags and
 * environment, the token file, listen addresses, profile loading, capped reads under a root,
 * and a scan of a recorded machine (tests/fixtures/machines/).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/err.h"
#include "server/config.h"
#include "server/detect/detect.h"
#include "server/detect/readfile.h"
#include "server/profiles/profiles.h"
#include "tests/test.h"

static void clear_env(void)
{
	static const char *const vars[] = {"RIGFIT_LISTEN",
					   "RIGFIT_DB",
					   "RIGFIT_ROOT",
					   "RIGFIT_SCAN_INTERVAL",
					   "RIGFIT_SCAN_HISTORY_KEEP",
					   "RIGFIT_PROFILES",
					   "RIGFIT_MODELS_DIR",
					   "RIGFIT_CORS_ORIGIN",
					   "RIGFIT_TOKEN_FILE",
					   "RIGFIT_LOG_LEVEL",
					   "RIGFIT_INSECURE",
					   "STATE_DIRECTORY"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static int parse(struct rf_config *c, char *err, const char *const *argv)
{
	int argc = 0;
	while (argv[argc])
		argc++;
	return rf_config_parse(argc, (char **)argv, c, err, 256);
}

START_TEST(config_defaults)
{
	static struct rf_config c;
	char err[256];
	const char *argv[] = {NULL};

	clear_env();
	ck_assert_int_eq(parse(&c, err, argv), 0);
	ck_assert_str_eq(c.listen, "127.0.0.1:8080");
	ck_assert_str_eq(c.db, "./var/rigfit.db");
	ck_assert_str_eq(c.root, "/");
	ck_assert_int_eq(c.scan_interval_s, 30);
	ck_assert_int_eq(c.log_level, RF_LOG_INFO);
	ck_assert(!c.insecure);
	setenv("STATE_DIRECTORY", "/var/lib/rigfit:/var/lib/other", 1);
	ck_assert_int_eq(parse(&c, err, argv), 0);
	ck_assert_str_eq(c.db, "/var/lib/rigfit/rigfit.db");
	clear_env();
}
END_TEST

START_TEST(config_flags_override_environment)
{
	static struct rf_config c;
	char err[256];
	const char *argv[] = {"--listen=127.0.0.1:9000",
			      "--models-dir",
			      "/m1",
			      "--models-dir",
			      "/m2",
			      "--insecure",
			      "--log-level",
			      "debug",
			      NULL};

	clear_env();
	setenv("RIGFIT_LISTEN", "127.0.0.1:7000", 1);
	setenv("RIGFIT_SCAN_INTERVAL", "5", 1);
	setenv("RIGFIT_MODELS_DIR", "/e1,/e2,/e3", 1);
	setenv("RIGFIT_CORS_ORIGIN", "http://a,http://b", 1);
	ck_assert_int_eq(parse(&c, err, argv), 0);
	ck_assert_str_eq(c.listen, "127.0.0.1:9000");
	ck_assert_int_eq(c.scan_interval_s, 5);
	ck_assert_int_eq(c.n_models_dirs, 2); /* flags replace the environment's list */
	ck_assert_str_eq(c.models_dirs[0], "/m1");
	ck_assert_str_eq(c.models_dirs[1], "/m2");
	ck_assert_int_eq(c.n_cors_origins, 2);
	ck_assert_str_eq(c.cors_origins[1], "http://b");
	ck_assert(c.insecure);
	ck_assert_int_eq(c.log_level, RF_LOG_DEBUG);
	clear_env();
}
END_TEST

START_TEST(config_rejects_bad_values_with_a_message)
{
	static struct rf_config c;
	char err[256];
	const char *unknown[] = {"--frob", NULL};
	const char *missing[] = {"--db", NULL};
	const char *zero[] = {"--scan-interval", "0", NULL};
	const char *junk[] = {"--scan-interval", "10s", NULL};
	const char *level[] = {"--log-level", "loud", NULL};
	const char *listen[] = {"--listen", "example.com:80", NULL};
	const char *port[] = {"--listen", "127.0.0.1:70000", NULL};

	clear_env();
	ck_assert_int_eq(parse(&c, err, unknown), RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "--frob"));
	ck_assert_int_eq(parse(&c, err, missing), RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "--db needs a value"));
	ck_assert_int_eq(parse(&c, err, zero), RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "--scan-interval"));
	ck_assert_int_eq(parse(&c, err, junk), RF_E_INVALID_VALUE);
	ck_assert_int_eq(parse(&c, err, level), RF_E_INVALID_VALUE);
	ck_assert_int_eq(parse(&c, err, listen), RF_E_INVALID_VALUE);
	ck_assert_int_eq(parse(&c, err, port), RF_E_INVALID_VALUE);
	setenv("RIGFIT_SCAN_INTERVAL", "-3", 1);
	ck_assert_int_eq(parse(&c, err, (const char *[]){NULL}), RF_E_INVALID_VALUE);
	ck_assert_ptr_nonnull(strstr(err, "RIGFIT_SCAN_INTERVAL"));
	clear_env();
}
END_TEST

START_TEST(listen_addresses_and_loopback)
{
	char host[128];
	int port;

	ck_assert_int_eq(rf_listen_parse("127.0.0.1:8080", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_int_eq(port, 8080);
	ck_assert_int_eq(rf_listen_parse("[::1]:0", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "::1");
	ck_assert_int_eq(rf_listen_parse("localhost:1", host, sizeof(host), &port), 0);
	ck_assert_str_eq(host, "127.0.0.1");
	ck_assert_int_lt(rf_listen_parse("::1:80", host, sizeof(host), &port), 0);
	ck_assert_int_lt(rf_listen_parse("1.2.3.4", host, sizeof(host), &port), 0);
	ck_assert_int_lt(rf_listen_parse(":80", host, sizeof(host), &port), 0);
	ck_assert(rf_host_is_loopback("127.3.4.5"));
	ck_assert(rf_host_is_loopback("::1"));
	ck_assert(!rf_host_is_loopback("0.0.0.0"));
	ck_assert(!rf_host_is_loopback("10.0.0.1"));
	ck_assert(!rf_host_is_loopback("::"));
}
END_TEST

START_TEST(token_file_is_trimmed_and_checked)
{
	static struct rf_config c;
	char err[256], *dir = t_mkdtemp(), *f = t_path(dir, "tok");

	memset(&c, 0, sizeof(c));
	snprintf(c.token_file, sizeof(c.token_file), "%s", f);
	ck_assert_int_eq(t_write_file(f, "  abc123\n\n", 10), 0);
	ck_assert_int_eq(rf_config_load_token(&c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.token, "abc123");
	ck_assert_int_eq(t_write_file(f, "\n", 1), 0);
	ck_assert_int_lt(rf_config_load_token(&c, err, sizeof(err)), 0);
	ck_assert_int_eq(t_write_file(f, "two words", 9), 0);
	ck_assert_int_lt(rf_config_load_token(&c, err, sizeof(err)), 0);
	snprintf(c.token_file, sizeof(c.token_file), "%s/missing", dir);
	ck_assert_int_eq(rf_config_load_token(&c, err, sizeof(err)), RF_E_IO);
	ck_assert_ptr_nonnull(strstr(err, "missing"));
	t_rmtree(dir);
	free(dir);
	free(f);
}
END_TEST

START_TEST(profiles_load_all_or_nothing)
{
	char *dir = t_mkdtemp(), *a = t_path(dir, "a.json"), *b = t_path(dir, "b.json"), err[512];
	struct rf_profiles *p = NULL, *keep;

	ck_assert_int_eq(t_write_file(a, "{\"x\":1}", 7), 0);
	ck_assert_int_eq(t_write_file(b, "[1,2]\n", 6), 0);
	ck_assert_int_eq(rf_profiles_load(dir, &p, err, sizeof(err)), 0);
	ck_assert_int_eq(p->n_files, 2);
	ck_assert_str_eq(p->files[0].name, "a.json");
	ck_assert_ptr_nonnull(rf_profiles_get(p, "b.json"));
	ck_assert_ptr_null(rf_profiles_get(p, "c.json"));
	keep = p;
	ck_assert_int_eq(t_write_file(b, "[1,\n2,\n}", 8), 0);
	ck_assert_int_eq(rf_profiles_load(dir, &p, err, sizeof(err)), RF_E_PARSE);
	ck_assert_ptr_eq(p, keep); /* untouched on failure */
	ck_assert_ptr_nonnull(strstr(err, "b.json:3: invalid JSON"));
	ck_assert_int_eq(t_write_file(b, "42", 2), 0);
	ck_assert_int_eq(rf_profiles_load(dir, &p, err, sizeof(err)), RF_E_PARSE);
	ck_assert_ptr_nonnull(strstr(err, "must be an object or an array"));
	rf_profiles_free(keep);
	ck_assert_int_eq(rf_profiles_load("/nonexistent/rigfit", &p, err, sizeof(err)),
			 RF_E_NOT_FOUND);
	rf_profiles_free(NULL);
	t_rmtree(dir);
	free(dir);
	free(a);
	free(b);
}
END_TEST

START_TEST(shipped_profiles_load)
{
	char *dir = t_path(t_src_dir(), "profiles"), err[512];
	struct rf_profiles *p = NULL;

	ck_assert_msg(rf_profiles_load(dir, &p, err, sizeof(err)) == 0, "%s", err);
	ck_assert_ptr_nonnull(rf_profiles_get(p, "tiers.json"));
	rf_profiles_free(p);
	free(dir);
}
END_TEST

START_TEST(read_under_root_is_capped)
{
	char *dir = t_mkdtemp(), *f = t_path(dir, "big"), *buf = NULL;
	char data[10000];
	size_t len = 0;

	memset(data, 'x', sizeof(data));
	ck_assert_int_eq(t_write_file(f, data, sizeof(data)), 0);
	ck_assert_int_eq(rf_read_under_root(dir, "/big", 20000, &buf, &len), 0);
	ck_assert_uint_eq(len, sizeof(data));
	ck_assert_int_eq(buf[len], '\0');
	free(buf);
	ck_assert_int_eq(rf_read_under_root(dir, "/big", 5000, &buf, &len), RF_E_TOO_LARGE);
	ck_assert_int_eq(rf_read_under_root(dir, "/absent", 5000, &buf, &len), RF_E_NOT_FOUND);
	t_rmtree(dir);
	free(dir);
	free(f);
}
END_TEST

START_TEST(scan_of_a_recorded_machine)
{
	char *machines = t_path(t_src_dir(), "tests/fixtures/machines");
	char *root = t_path(machines, "xeon-l5640-2socket");
	struct rf_detect_opts o = {.root = root};
	struct hw_snapshot *s = malloc(sizeof(*s));

	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	ck_assert_int_eq(s->cpu.logical_cores, 24);
	ck_assert_int_eq(s->cpu.physical_cores, 12);
	ck_assert_int_eq(s->cpu.sockets, 2);
	ck_assert_int_eq(s->memory.total_bytes, 65921280LL * 1024);
	ck_assert_int_eq(s->n_gpus, 0);
	ck_assert_str_eq(s->sources.cpu, "sysfs");
	ck_assert_str_eq(s->host.kernel, ""); /* not in the capture: unknown, not invented */
	ck_assert_int_gt(s->scanned_at_ms, 0);
	free(s);
	/* A root without /proc: every part unknown, each with a warning, no failure. */
	o.root = "/nonexistent-root";
	s = malloc(sizeof(*s));
	ck_assert_int_eq(rf_detect_scan(&o, s), 0);
	ck_assert_int_eq(s->memory.total_bytes, HW_UNKNOWN);
	ck_assert_int_eq(s->cpu.logical_cores, HW_UNKNOWN);
	ck_assert_int_ge(s->n_warnings, 2);
	free(s);
	free(root);
	free(machines);
}
END_TEST

Suite *server_units_suite(void)
{
	Suite *s = suite_create("server_units");
	TCase *tc = tcase_create("server");

	tcase_add_test(tc, config_defaults);
	tcase_add_test(tc, config_flags_override_environment);
	tcase_add_test(tc, config_rejects_bad_values_with_a_message);
	tcase_add_test(tc, listen_addresses_and_loopback);
	tcase_add_test(tc, token_file_is_trimmed_and_checked);
	tcase_add_test(tc, profiles_load_all_or_nothing);
	tcase_add_test(tc, shipped_profiles_load);
	tcase_add_test(tc, read_under_root_is_capped);
	tcase_add_test(tc, scan_of_a_recorded_machine);
	suite_add_tcase(s, tc);
	return s;
}
