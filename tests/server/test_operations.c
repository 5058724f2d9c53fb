/*
 * What an operator's monitoring reads: the standard process_* series (checked against the
 * daemon's own /proc entries, read independently), points in time as *_timestamp_seconds
 * rather than ages, and log lines that carry journald priorities when stderr is the journal.
 */
#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/metrics.h"
#include "core/err.h"
#include "server/log.h"
#include "server/daemon/process_stats.h"
#include "tests/server/harness.h"
#include "tests/test.h"

START_TEST(a_proc_stat_line_gives_cpu_memory_and_start_time)
{
	/* A stat line as Linux writes it, with a command name holding a space and a ')'. */
	static const char line[] =
		"4242 (rig fit) x) S 1 4242 4242 0 -1 4194560 1500 0 3 0 250 75 0 0 20 0 3 0 "
		"123456 116568064 2419 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 "
		"0 0 0\n";
	struct api_process_stats p = {-1, -1, -1, -1, -1, -1};

	ck_assert_int_eq(rf_process_stat_parse(line, sizeof(line) - 1, 100, 4096, 1.7e9, &p), 0);
	ck_assert_double_eq_tol(p.cpu_seconds, 3.25, 1e-9); /* (250 + 75) / 100 */
	ck_assert_double_eq_tol(p.start_time_s, 1.7e9 + 1234.56, 1e-6);
	ck_assert_double_eq(p.virtual_bytes, 116568064);
	ck_assert_double_eq(p.resident_bytes, 2419.0 * 4096);
	/* What it does not read is left alone. */
	ck_assert_double_eq(p.open_fds, -1);
	/* Not a stat line: no ')', too few fields, junk where a number goes. */
	ck_assert_int_eq(rf_process_stat_parse("4242 rigfit S 1", 15, 100, 4096, 0, &p),
			 RF_E_PARSE);
	ck_assert_int_eq(rf_process_stat_parse("1 (a) S 1 2 3", 13, 100, 4096, 0, &p), RF_E_PARSE);
	{
		char bad[sizeof(line)];
		memcpy(bad, line, sizeof(line));
		memcpy(strstr(bad, " 250 75 ") + 1, "2x0", 3);
		ck_assert_int_eq(rf_process_stat_parse(bad, sizeof(bad) - 1, 100, 4096, 0, &p),
				 RF_E_PARSE);
	}
}
END_TEST

static int fake_process(struct api_process_stats *out)
{
	*out = (struct api_process_stats){1.5, 2e7, 3e8, 12, 1024, 1700000000.25};
	out->virtual_bytes = -1; /* unknown: left out */
	return 0;
}

static int failing_process(struct api_process_stats *out)
{
	(void)out;
	return RF_E_IO;
}

START_TEST(metrics_render_process_series_under_their_standard_names)
{
	struct api_metrics *m = api_metrics_new();
	struct api_env env = {.version = "1", .io.read_process = fake_process};
	struct api_scan_stats st = {2, 1, 0.01, 1700000100.0, 1700000050.0};
	size_t len;
	char *text;

	api_metrics_set_scan(m, &st);
	text = api_metrics_render(m, &env, &len);
	ck_assert_ptr_nonnull(text);
	ck_assert_ptr_nonnull(strstr(text, "# TYPE process_cpu_seconds_total counter\n"
					   "process_cpu_seconds_total 1.5\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nprocess_resident_memory_bytes 20000000\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nprocess_open_fds 12\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nprocess_max_fds 1024\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nprocess_start_time_seconds 1700000000.25\n"));
	ck_assert_ptr_null(strstr(text, "process_virtual_memory_bytes"));
	ck_assert_ptr_nonnull(
		strstr(text, "\nrigfit_scan_last_success_timestamp_seconds 1700000100.000\n"));
	ck_assert_ptr_nonnull(
		strstr(text, "\nrigfit_scan_last_failure_timestamp_seconds 1700000050.000\n"));
	/* Ages are gone: a scrape's delay cannot skew a timestamp. */
	ck_assert_ptr_null(strstr(text, "_age_seconds"));
	ck_assert_ptr_null(strstr(text, "rigfit_uptime_seconds"));
	free(text);
	/* A process that cannot be read shows no process series, and the rest still renders. */
	env.io.read_process = failing_process;
	text = api_metrics_render(m, &env, &len);
	ck_assert_ptr_null(strstr(text, "process_"));
	ck_assert_ptr_nonnull(strstr(text, "rigfit_scans_total 2\n"));
	free(text);
	api_metrics_free(m);
}
END_TEST

/* Returns the value of the unlabelled series name in Prometheus text, or -1 when absent. */
static double series(const char *text, const char *name)
{
	char key[128];
	const char *at;

	snprintf(key, sizeof(key), "\n%s ", name);
	at = strstr(text, key);
	return at ? strtod(at + strlen(key), NULL) : -1;
}

START_TEST(the_daemon_reports_its_own_process_and_scan_time)
{
	struct t_daemon d;
	struct t_resp r;
	char path[64], *statm;
	time_t t0 = time(NULL), t1;
	double rss, start, open_fds, scanned;
	long pages = 0;

	t_daemon_start(&d, (const char *const[]){NULL});
	t_wait_scan(d.port);
	ck_assert_int_eq(t_http(d.port, "GET", "/metrics", NULL, NULL, 0, &r), 0);
	t1 = time(NULL);
	ck_assert_int_eq(r.status, 200);
	/* The resident size agrees with the daemon's /proc/PID/statm, read here. */
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)d.pid);
	statm = t_read_file(path, NULL);
	ck_assert_ptr_nonnull(statm);
	ck_assert_int_eq(sscanf(statm, "%*d %ld", &pages), 1);
	rss = series(r.body, "process_resident_memory_bytes");
	ck_assert_msg(rss > 0.5 * (double)pages * (double)sysconf(_SC_PAGESIZE) &&
			      rss < 2.0 * (double)pages * (double)sysconf(_SC_PAGESIZE),
		      "rss %.0f, statm %ld pages", rss, pages);
	/* It started, and scanned, between the test's clock readings. */
	start = series(r.body, "process_start_time_seconds");
	ck_assert_msg(start >= (double)t0 - 2 && start <= (double)t1 + 1, "start %.3f in %ld..%ld",
		      start, (long)t0, (long)t1);
	scanned = series(r.body, "rigfit_scan_last_success_timestamp_seconds");
	ck_assert_msg(scanned >= start - 1 && scanned <= (double)t1 + 1, "scan at %.3f", scanned);
	open_fds = series(r.body, "process_open_fds");
	ck_assert_msg(open_fds >= 4 && open_fds <= series(r.body, "process_max_fds"), "fds %.0f",
		      open_fds);
	ck_assert(series(r.body, "process_cpu_seconds_total") >= 0);
	ck_assert_ptr_null(strstr(r.body, "rigfit_scan_last_failure_timestamp_seconds"));
	free(statm);
	t_resp_free(&r);
	t_daemon_stop(&d);
}
END_TEST

START_TEST(log_lines_carry_journal_priorities_when_stderr_is_the_journal)
{
	char *dir = t_mkdtemp(), *file = t_path(dir, "journal"), *text, stream[64];
	struct stat st;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600), saved = dup(STDERR_FILENO);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	snprintf(stream, sizeof(stream), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino);
	ck_assert(rf_log_stream_is_journal(stream, fd));
	/* Another file, junk, or nothing: not the journal. */
	ck_assert(!rf_log_stream_is_journal(stream, saved) || saved < 0);
	ck_assert(!rf_log_stream_is_journal("12:x", fd));
	ck_assert(!rf_log_stream_is_journal("", fd));
	ck_assert(!rf_log_stream_is_journal(NULL, fd));

	dup2(fd, STDERR_FILENO);
	setenv("JOURNAL_STREAM", stream, 1);
	rf_log_init();
	rf_log_set_level(RF_LOG_DEBUG);
	rf_log_error("e %d", 1);
	rf_log_warn("w");
	rf_log_info("i");
	rf_log_debug("d");
	/* Redirected elsewhere, the same environment no longer means the journal. */
	dup2(saved, STDERR_FILENO);
	rf_log_init();
	unsetenv("JOURNAL_STREAM");
	rf_log_init();
	rf_log_set_level(RF_LOG_INFO);
	close(saved);
	close(fd);
	text = t_read_file(file, NULL);
	ck_assert_str_eq(text, "<3>e 1\n<4>w\n<6>i\n<7>d\n");
	free(text);
	t_rmtree(dir);
	free(dir);
	free(file);
}
END_TEST

/* Held lines wait for the release and go out together, in order; a warning takes what was
 * held out before itself at once. */
START_TEST(held_log_lines_go_out_together_at_the_release)
{
	char *dir = t_mkdtemp(), *file = t_path(dir, "log"), *text;
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600), saved = dup(STDERR_FILENO);

	ck_assert_int_ge(fd, 0);
	dup2(fd, STDERR_FILENO);
	unsetenv("JOURNAL_STREAM"); /* the plain format */
	rf_log_init();
	rf_log_set_level(RF_LOG_DEBUG);
	rf_log_hold();
	rf_log_info("first");
	rf_log_debug("second");
	text = t_read_file(file, NULL);
	ck_assert_str_eq(text, ""); /* held */
	free(text);
	rf_log_warn("third");
	text = t_read_file(file, NULL);
	ck_assert_ptr_nonnull(strstr(text, "info  first\n"));
	ck_assert_ptr_nonnull(strstr(text, "debug second\n"));
	ck_assert_ptr_nonnull(strstr(text, "warn  third\n"));
	ck_assert(strstr(text, "first") < strstr(text, "second"));
	ck_assert(strstr(text, "second") < strstr(text, "third"));
	free(text);
	rf_log_info("fourth");
	rf_log_release();
	rf_log_info("fifth"); /* not held: at once */
	text = t_read_file(file, NULL);
	ck_assert_ptr_nonnull(strstr(text, "info  fourth\n"));
	ck_assert_ptr_nonnull(strstr(text, "info  fifth\n"));
	/* Every line stamped "YYYY-MM-DDTHH:MM:SS.mmmZ " in UTC, as strftime and %03ld wrote it. */
	for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
		int y, mo, d, h, mi, sec, ms;
		char z, sp;
		ck_assert_int_eq(sscanf(line, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c%c", &y, &mo, &d, &h,
					&mi, &sec, &ms, &z, &sp),
				 9);
		ck_assert(z == 'Z' && sp == ' ' && line[23] == 'Z');
		ck_assert(y >= 2024 && mo >= 1 && mo <= 12 && ms >= 0 && ms <= 999);
	}
	free(text);
	/* More than the buffer holds: nothing lost, nothing out of order. */
	rf_log_hold();
	for (int i = 0; i < 400; i++)
		rf_log_info("line %03d of a long turn ..........................................",
			    i);
	rf_log_release();
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	rf_log_set_level(RF_LOG_INFO);
	text = t_read_file(file, NULL);
	{
		const char *at = text;
		char want[32];
		for (int i = 0; i < 400; i++) {
			snprintf(want, sizeof(want), "line %03d of", i);
			at = strstr(at, want);
			ck_assert_msg(at != NULL, "%s missing or out of order", want);
		}
	}
	free(text);
	t_rmtree(dir);
	free(dir);
	free(file);
}
END_TEST

START_TEST(the_daemon_logs_priorities_to_the_journal)
{
	char *dir = t_mkdtemp(), *log = t_path(dir, "log"), *db = t_path(dir, "db");
	char *profiles = t_path(t_src_dir(), "profiles"), *text;
	/* stderr to a file that JOURNAL_STREAM names; an unwritable --nfd-dir makes a warning
	 * after the first scan; then SIGTERM. */
	const char *argv[] = {
		"/bin/sh",
		"-c",
		"exec 2>\"$0\"; JOURNAL_STREAM=$(stat -c %d:%i \"$0\") \"$@\" & pid=$!; "
		"i=0; while ! grep -q 'nfd:' \"$0\" && [ $i -lt 600 ]; do sleep 0.05; "
		"i=$((i+1)); done; kill -TERM $pid; wait $pid",
		log,
		t_bin(),
		"serve",
		"--listen",
		"127.0.0.1:0",
		"--db",
		db,
		"--profiles",
		profiles,
		"--nfd-dir",
		"/proc/no-such-dir",
		NULL};

	ck_assert_int_eq(t_run(argv, NULL, NULL, 60000), 0);
	text = t_read_file(log, NULL);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strncmp(text, "<6>", 3) == 0, "%s", text);
	ck_assert_msg(strstr(text, "\n<4>nfd: could not write") != NULL, "%s", text);
	/* Every line starts with a priority and none with a timestamp. */
	for (const char *p = text; *p; p = strchr(p, '\n') + 1) {
		ck_assert_msg(p[0] == '<' && p[2] == '>', "line without a priority: %.80s", p);
		if (!strchr(p, '\n'))
			break;
	}
	free(text);
	t_rmtree(dir);
	free(dir);
	free(log);
	free(db);
	free(profiles);
}
END_TEST

Suite *operations_suite(void)
{
	Suite *s = suite_create("operations");
	TCase *tc = tcase_create("operations");

	tcase_set_timeout(tc, t_under_valgrind() ? 1800 : 120);
	tcase_add_test(tc, a_proc_stat_line_gives_cpu_memory_and_start_time);
	tcase_add_test(tc, metrics_render_process_series_under_their_standard_names);
	tcase_add_test(tc, the_daemon_reports_its_own_process_and_scan_time);
	tcase_add_test(tc, log_lines_carry_journal_priorities_when_stderr_is_the_journal);
	tcase_add_test(tc, held_log_lines_go_out_together_at_the_release);
	tcase_add_test(tc, the_daemon_logs_priorities_to_the_journal);
	suite_add_tcase(s, tc);
	return s;
}
