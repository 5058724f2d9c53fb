/*
 * Tests of server/daemon/notify.c: real AF_UNIX datagram sockets (a path in a temporary directory
 * and an abstract name) stand in for systemd, and what arrives on them is compared byte for byte
 * with what the daemon meant to say. The watchdog tests drive WATCHDOG_USEC / WATCHDOG_PID.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "server/daemon/notify.h"
#include "tests/test.h"

/* A bound receiving socket and what rf_notify must name to reach it. */
struct sink {
	int fd;
	char *dir; /* temporary directory of a path socket, else NULL */
	char env[sizeof(((struct sockaddr_un *)0)->sun_path) + 1]; /* NOTIFY_SOCKET value */
};

static void clear_env(void)
{
	unsetenv("NOTIFY_SOCKET");
	unsetenv("WATCHDOG_USEC");
	unsetenv("WATCHDOG_PID");
}

/* Binds a datagram socket at <tmpdir>/notify.sock. */
static void sink_path(struct sink *s)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char *path;

	s->dir = t_mkdtemp();
	ck_assert_ptr_nonnull(s->dir);
	path = t_path(s->dir, "notify.sock");
	ck_assert_ptr_nonnull(path);
	ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	snprintf(s->env, sizeof(s->env), "%s", path);
	free(path);
	s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s->fd, 0);
	ck_assert_int_eq(bind(s->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
}

/* Binds a datagram socket at a unique abstract name ("@rigfit-test-PID-N"). */
static void sink_abstract(struct sink *s)
{
	static unsigned counter;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timespec ts;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->dir = NULL;
	n = snprintf(s->env, sizeof(s->env), "@rigfit-test-%ld-%u-%ld", (long)getpid(), counter++,
		     (long)ts.tv_nsec);
	ck_assert_int_gt(n, 1);
	memcpy(sa.sun_path + 1, s->env + 1, (size_t)n - 1);
	s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(s->fd, 0);
	ck_assert_int_eq(bind(s->fd, (struct sockaddr *)&sa,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n)),
			 0);
}

static void sink_close(struct sink *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	t_rmtree(s->dir);
	free(s->dir);
	s->dir = NULL;
}

/* Receives one datagram without waiting. Returns its length, or -1 when none is queued. */
static ssize_t sink_recv(struct sink *s, char *buf, size_t cap)
{
	return recv(s->fd, buf, cap, MSG_DONTWAIT);
}

/* Counts this process's open descriptors, to catch a socket left open on some path. */
static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void expect_datagram(struct sink *s, const char *want)
{
	char buf[8192];
	ssize_t n = sink_recv(s, buf, sizeof(buf));

	ck_assert_int_eq(n, (ssize_t)strlen(want));
	ck_assert_mem_eq(buf, want, strlen(want));
	/* Exactly one datagram per call. */
	ck_assert_int_lt(sink_recv(s, buf, sizeof(buf)), 0);
}

START_TEST(test_notify_path_socket)
{
	const char *state = "READY=1\nSTATUS=serving on 127.0.0.1:8080";
	struct sink s;
	int fds;

	sink_path(&s);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", s.env, 1), 0);
	fds = count_fds();
	ck_assert_int_eq(rf_notify(state), 0);
	ck_assert_int_eq(count_fds(), fds);
	expect_datagram(&s, state);
	ck_assert_int_eq(rf_notify("WATCHDOG=1"), 0);
	expect_datagram(&s, "WATCHDOG=1");
	ck_assert_int_eq(rf_notify("STOPPING=1"), 0);
	expect_datagram(&s, "STOPPING=1");
	sink_close(&s);
}
END_TEST

START_TEST(test_notify_abstract_socket)
{
	struct sink s;

	sink_abstract(&s);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", s.env, 1), 0);
	ck_assert_int_eq(rf_notify("READY=1"), 0);
	expect_datagram(&s, "READY=1");
	sink_close(&s);
}
END_TEST

START_TEST(test_notify_unset_is_noop)
{
	struct sink s;
	char buf[64];

	sink_path(&s);
	/* The socket exists, but without NOTIFY_SOCKET nobody is told about it. */
	unsetenv("NOTIFY_SOCKET");
	ck_assert_int_eq(rf_notify("READY=1"), 0);
	ck_assert_int_eq(rf_notifyf("STATUS=%s", "x"), 0);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "", 1), 0);
	ck_assert_int_eq(rf_notify("READY=1"), 0);
	ck_assert_int_lt(sink_recv(&s, buf, sizeof(buf)), 0);
	ck_assert_int_eq(errno == EAGAIN || errno == EWOULDBLOCK, 1);
	sink_close(&s);
}
END_TEST

START_TEST(test_notify_bad_addresses)
{
	char long_path[200];
	struct sink s;
	int fds = count_fds();

	/* A directory that does not exist: the send itself fails. */
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "/nonexistent-rigfit/dir/notify.sock", 1), 0);
	ck_assert_int_eq(rf_notify("READY=1"), RF_E_IO);
	/* An abstract name nobody bound. */
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "@rigfit-test-nobody-listens-here", 1), 0);
	ck_assert_int_eq(rf_notify("READY=1"), RF_E_IO);
	/* Not an address systemd hands out. */
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "relative/notify.sock", 1), 0);
	ck_assert_int_eq(rf_notify("READY=1"), RF_E_INVALID_VALUE);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", "@", 1), 0);
	ck_assert_int_eq(rf_notify("READY=1"), RF_E_INVALID_VALUE);
	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", long_path, 1), 0);
	ck_assert_int_eq(rf_notify("READY=1"), RF_E_INVALID_VALUE);
	long_path[0] = '@';
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", long_path, 1), 0);
	ck_assert_int_eq(rf_notify("READY=1"), RF_E_INVALID_VALUE);
	/* A path that exists but is a regular file, not a socket. */
	sink_path(&s);
	{
		char *file = t_path(s.dir, "plain-file");
		ck_assert_int_eq(t_write_file(file, "x", 1), 0);
		ck_assert_int_eq(setenv("NOTIFY_SOCKET", file, 1), 0);
		ck_assert_int_eq(rf_notify("READY=1"), RF_E_IO);
		free(file);
	}
	/* A stream socket at the path: a datagram cannot be sent to it. */
	{
		char *path = t_path(s.dir, "stream.sock");
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		ck_assert_int_ge(fd, 0);
		memcpy(sa.sun_path, path, strlen(path) + 1);
		ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		ck_assert_int_eq(listen(fd, 1), 0);
		ck_assert_int_eq(setenv("NOTIFY_SOCKET", path, 1), 0);
		ck_assert_int_eq(rf_notify("READY=1"), RF_E_IO);
		close(fd);
		free(path);
	}
	sink_close(&s);
	ck_assert_int_eq(count_fds(), fds);
}
END_TEST

START_TEST(test_notify_bad_state)
{
	struct sink s;
	char buf[64];

	sink_path(&s);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", s.env, 1), 0);
	ck_assert_int_eq(rf_notify(NULL), RF_E_INVALID_VALUE);
	ck_assert_int_eq(rf_notify(""), RF_E_INVALID_VALUE);
	ck_assert_int_lt(sink_recv(&s, buf, sizeof(buf)), 0);
	sink_close(&s);
}
END_TEST

START_TEST(test_notifyf)
{
	struct sink s;
	char *big;

	sink_path(&s);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", s.env, 1), 0);
	ck_assert_int_eq(
		rf_notifyf("READY=1\nSTATUS=serving on %s (%d profiles)", "[::1]:8080", 12), 0);
	expect_datagram(&s, "READY=1\nSTATUS=serving on [::1]:8080 (12 profiles)");

	/* One byte over the cap is refused, and nothing partial is sent. */
	big = malloc(RF_NOTIFY_MAX_STATE + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, 'x', RF_NOTIFY_MAX_STATE);
	big[RF_NOTIFY_MAX_STATE] = '\0';
	ck_assert_int_eq(rf_notifyf("STATUS=%s", big + 7), RF_E_TOO_LARGE);
	ck_assert_int_lt(sink_recv(&s, big, RF_NOTIFY_MAX_STATE), 0);
	/* The largest allowed state goes through whole. */
	big[RF_NOTIFY_MAX_STATE - 1] = '\0';
	ck_assert_int_eq(rf_notifyf("%s", big), 0);
	expect_datagram(&s, big);
	free(big);
	sink_close(&s);
}
END_TEST

START_TEST(test_notify_reloading)
{
	struct sink s;
	struct timespec ts;
	char buf[128];
	unsigned long long before, after, got = 0;
	ssize_t n;
	int used = 0;

	sink_abstract(&s);
	ck_assert_int_eq(setenv("NOTIFY_SOCKET", s.env, 1), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	before = (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
	ck_assert_int_eq(rf_notify_reloading(), 0);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	after = (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
	n = sink_recv(&s, buf, sizeof(buf) - 1);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	ck_assert_int_eq(sscanf(buf, "RELOADING=1\nMONOTONIC_USEC=%llu%n", &got, &used), 1);
	ck_assert_int_eq(used, (int)n);
	ck_assert_uint_ge(got, before);
	ck_assert_uint_le(got, after);
	sink_close(&s);
}
END_TEST

START_TEST(test_watchdog_env)
{
	const uint64_t sentinel = 0xdeadbeefULL;
	uint64_t usec = sentinel;
	char pid[32];

	/* Off unless WATCHDOG_USEC says otherwise; *out untouched. */
	ck_assert_int_eq(rf_notify_watchdog_usec(&usec), 0);
	ck_assert_uint_eq(usec, sentinel);

	ck_assert_int_eq(setenv("WATCHDOG_USEC", "30000000", 1), 0);
	ck_assert_int_eq(rf_notify_watchdog_usec(&usec), 1);
	ck_assert_uint_eq(usec, 30000000);
	ck_assert_int_eq(rf_notify_watchdog_usec(NULL), 0);

	/* WATCHDOG_PID naming this process keeps it on. */
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	ck_assert_int_eq(setenv("WATCHDOG_PID", pid, 1), 0);
	usec = sentinel;
	ck_assert_int_eq(rf_notify_watchdog_usec(&usec), 1);
	ck_assert_uint_eq(usec, 30000000);

	/* Another process's watchdog (an inherited environment) is not ours to ping. */
	snprintf(pid, sizeof(pid), "%ld", (long)getpid() + 1);
	ck_assert_int_eq(setenv("WATCHDOG_PID", pid, 1), 0);
	usec = sentinel;
	ck_assert_int_eq(rf_notify_watchdog_usec(&usec), 0);
	ck_assert_uint_eq(usec, sentinel);
	unsetenv("WATCHDOG_PID");

	/* The largest value parses exactly. */
	ck_assert_int_eq(setenv("WATCHDOG_USEC", "18446744073709551615", 1), 0);
	ck_assert_int_eq(rf_notify_watchdog_usec(&usec), 1);
	ck_assert_uint_eq(usec, UINT64_MAX);
}
END_TEST

START_TEST(test_watchdog_junk)
{
	static const char *const junk[] = {
		"",
		"0",
		"-5",
		"+5",
		" 5",
		"5 ",
		"5s",
		"0x10",
		"1e6",
		"abc",
		"5\n",
		"3.5",
		"18446744073709551616" /* UINT64_MAX + 1 */,
		"99999999999999999999999",
	};
	static const char *const bad_pids[] = {"", "abc", "-1", "1 ", "99999999999999999999"};
	const uint64_t sentinel = 42;
	uint64_t usec;
	char pid[32];

	for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		usec = sentinel;
		ck_assert_int_eq(setenv("WATCHDOG_USEC", junk[i], 1), 0);
		ck_assert_msg(rf_notify_watchdog_usec(&usec) == 0, "WATCHDOG_USEC='%s' accepted",
			      junk[i]);
		ck_assert_uint_eq(usec, sentinel);
	}
	ck_assert_int_eq(setenv("WATCHDOG_USEC", "1000000", 1), 0);
	for (size_t i = 0; i < sizeof(bad_pids) / sizeof(bad_pids[0]); i++) {
		usec = sentinel;
		ck_assert_int_eq(setenv("WATCHDOG_PID", bad_pids[i], 1), 0);
		ck_assert_msg(rf_notify_watchdog_usec(&usec) == 0, "WATCHDOG_PID='%s' accepted",
			      bad_pids[i]);
		ck_assert_uint_eq(usec, sentinel);
	}
	/* No process has pid 0. */
	ck_assert_int_eq(setenv("WATCHDOG_PID", "0", 1), 0);
	ck_assert_int_eq(rf_notify_watchdog_usec(&usec), 0);
	ck_assert_uint_eq(usec, sentinel);
	/* And the same value with a valid pid is accepted, so the rejections above are real. */
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	ck_assert_int_eq(setenv("WATCHDOG_PID", pid, 1), 0);
	ck_assert_int_eq(rf_notify_watchdog_usec(&usec), 1);
	ck_assert_uint_eq(usec, 1000000);
}
END_TEST

Suite *notify_suite(void)
{
	Suite *s = suite_create("notify");
	TCase *tc = tcase_create("notify");

	tcase_add_checked_fixture(tc, clear_env, clear_env);
	tcase_add_test(tc, test_notify_path_socket);
	tcase_add_test(tc, test_notify_abstract_socket);
	tcase_add_test(tc, test_notify_unset_is_noop);
	tcase_add_test(tc, test_notify_bad_addresses);
	tcase_add_test(tc, test_notify_bad_state);
	tcase_add_test(tc, test_notifyf);
	tcase_add_test(tc, test_notify_reloading);
	tcase_add_test(tc, test_watchdog_env);
	tcase_add_test(tc, test_watchdog_junk);
	suite_add_tcase(s, tc);
	return s;
}
