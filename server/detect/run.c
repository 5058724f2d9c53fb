/*
 * Command runner (see run.h). The child gets its own process group so that a timeout kills a
 * shell script and everything it started, not just the script. exec failure is reported
 * through a close-on-exec pipe, so "not installed" is told apart from "ran and failed".
 */
#define _GNU_SOURCE /* pipe2 */
#include "server/detect/run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"

static long run_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

void rf_run_result_free(struct rf_run_result *res)
{
	if (!res)
		return;
	free(res->out);
	res->out = NULL;
	res->len = 0;
}

/* What the child does: exec a command, or call a function (rf_run_fork_capture). */
struct run_child {
	const char *const *argv;
	int (*fn)(void *arg, int out_fd);
	void *arg;
};

static int run_child_capture(const struct run_child *what, int timeout_ms, size_t cap,
			     struct rf_run_result *res)
{
	const char *const *argv = what->argv;
	int out_pipe[2], err_pipe[2];
	pid_t pid;
	char *buf;
	size_t n = 0;
	long deadline;
	int status = 0, exec_errno = 0;
	int timed_out = 0, truncated = 0;

	memset(res, 0, sizeof(*res));
	buf = malloc(cap + 1);
	if (!buf)
		return RF_E_NOMEM;
	if (pipe2(out_pipe, O_CLOEXEC) != 0) {
		free(buf);
		return RF_E_IO;
	}
	if (pipe2(err_pipe, O_CLOEXEC) != 0) {
		close(out_pipe[0]);
		close(out_pipe[1]);
		free(buf);
		return RF_E_IO;
	}
	pid = fork();
	if (pid < 0) {
		close(out_pipe[0]);
		close(out_pipe[1]);
		close(err_pipe[0]);
		close(err_pipe[1]);
		free(buf);
		return RF_E_IO;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDWR);
		setpgid(0, 0);
		if (nul >= 0) {
			dup2(nul, STDIN_FILENO);
			dup2(nul, STDERR_FILENO);
		}
		dup2(out_pipe[1], STDOUT_FILENO);
		if (what->fn)
			_exit(what->fn(what->arg, STDOUT_FILENO) & 0xff);
		execvp(argv[0], (char *const *)argv);
		exec_errno = errno;
		if (write(err_pipe[1], &exec_errno, sizeof(exec_errno)) < 0) {
			/* The parent then sees exit 127 without a reason. */
		}
		_exit(127);
	}
	setpgid(pid, pid); /* both sides, to win the race with exec */
	close(out_pipe[1]);
	close(err_pipe[1]);
	deadline = run_now_ms() + timeout_ms;
	for (;;) {
		struct pollfd p = {out_pipe[0], POLLIN, 0};
		long left = deadline - run_now_ms();
		ssize_t r;
		char sink[4096];
		int pr;

		if (left <= 0) {
			timed_out = 1;
			break;
		}
		pr = poll(&p, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			timed_out = pr == 0;
			break;
		}
		if (n < cap)
			r = read(out_pipe[0], buf + n, cap - n);
		else
			r = read(out_pipe[0], sink, sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (n < cap)
			n += (size_t)r;
		else
			truncated = 1;
	}
	close(out_pipe[0]);
	if (timed_out)
		kill(-pid, SIGKILL);
	/* stdout closed: the command is ending; wait for it within what is left of the time. */
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			break;
		if (run_now_ms() >= deadline && !timed_out) {
			timed_out = 1;
			kill(-pid, SIGKILL);
		}
		if (timed_out) {
			waitpid(pid, &status, 0);
			break;
		}
		{
			struct timespec ts = {0, 2 * 1000 * 1000};
			nanosleep(&ts, NULL);
		}
	}
	if (read(err_pipe[0], &exec_errno, sizeof(exec_errno)) == (ssize_t)sizeof(exec_errno)) {
		close(err_pipe[0]);
		free(buf);
		return RF_E_NOT_FOUND;
	}
	close(err_pipe[0]);
	buf[n] = '\0';
	res->out = buf;
	res->len = n;
	res->timed_out = timed_out;
	res->truncated = truncated;
	res->exit_status = WIFEXITED(status) ? WEXITSTATUS(status) :
					       (WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 0);
	return 0;
}

int rf_run_capture(const char *const argv[], int timeout_ms, size_t cap, struct rf_run_result *res)
{
	struct run_child what = {argv, NULL, NULL};
	return run_child_capture(&what, timeout_ms, cap, res);
}

int rf_run_fork_capture(int (*fn)(void *arg, int out_fd), void *arg, int timeout_ms, size_t cap,
			struct rf_run_result *res)
{
	struct run_child what = {NULL, fn, arg};
	return run_child_capture(&what, timeout_ms, cap, res);
}
