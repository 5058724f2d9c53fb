/*
 * Tests of the packaging: systemd/rigfit.service, Dockerfile and .dockerignore. No Docker
 * engine runs in the test environment, so what Docker would find out at build time is checked
 * here instead: the build stage's COPY lines are replayed into an empty directory and the
 * build is dry-run there with make -n (a missing source or header fails here, not on a
 * release build machine), the RUN make target is the Makefile's default goal, the runtime
 * packages are exactly the libraries the release binary links, and the daemon-facing settings
 * (paths, ports, user) agree between the Dockerfile, the unit and each other. The unit is
 * checked with `systemd-analyze verify` where that tool exists.
 */
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/test.h"

#define MAX_INSNS 256
#define MAX_TOKENS 128
#define RUN_OUTPUT_CAP (1024 * 1024)

/* ---- helpers: files, commands ---- */

/* Reads <src dir>/rel; fails the test when it is missing. */
static char *read_src(const char *rel)
{
	char *path = t_path(t_src_dir(), rel);
	char *text;

	ck_assert_ptr_nonnull(path);
	text = t_read_file(path, NULL);
	ck_assert_msg(text != NULL, "cannot read %s", path);
	free(path);
	return text;
}

static int is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Returns the malloc'd path of an executable called name on $PATH, or NULL. */
static char *find_in_path(const char *name)
{
	const char *path = getenv("PATH");
	const char *p;

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char dir[PATH_MAX];
		if (len > 0 && len < sizeof(dir)) {
			char *full;
			memcpy(dir, p, len);
			dir[len] = '\0';
			full = t_path(dir, name);
			if (full && access(full, X_OK) == 0)
				return full;
			free(full);
		}
		if (!end)
			break;
		p = end + 1;
	}
	return NULL;
}

/* Runs argv (argv[0] looked up on $PATH) in dir with stdout and stderr captured into a
 * malloc'd string *out (capped), killing it after limit_s seconds. The command is started
 * through /bin/sh so that `make valgrind` (which skips sh) does not trace make, cp or
 * readelf. Returns the exit status, or -1 when it could not run or was killed. */
static int run_cmd(const char *const argv[], const char *dir, int limit_s, char **out)
{
	const char *sh_argv[MAX_TOKENS + 4];
	char *buf = malloc(RUN_OUTPUT_CAP + 1);
	size_t n = 0, argc = 0;
	long long deadline;
	struct timespec ts;
	int pfd[2], status = 0;
	pid_t pid;

	ck_assert_ptr_nonnull(buf);
	sh_argv[argc++] = "/bin/sh";
	sh_argv[argc++] = "-c";
	sh_argv[argc++] = "exec \"$0\" \"$@\"";
	for (size_t i = 0; argv[i]; i++) {
		ck_assert_uint_lt(argc, MAX_TOKENS + 3);
		sh_argv[argc++] = argv[i];
	}
	sh_argv[argc] = NULL;
	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pfd[0]);
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		close(pfd[1]);
		if (dir && chdir(dir) != 0)
			_exit(126);
		/* When the suite runs under `make unit`, make's settings (B=..., -j and its
		 * jobserver) are in the environment; the Docker build has none of them. */
		unsetenv("MAKEFLAGS");
		unsetenv("MFLAGS");
		unsetenv("MAKELEVEL");
		unsetenv("B");
		unsetenv("CC");
		execv("/bin/sh", (char *const *)sh_argv);
		_exit(127);
	}
	close(pfd[1]);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + (long long)limit_s * 1000;
	for (;;) {
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		char tmp[4096];
		long long now;
		ssize_t got;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
		if (now >= deadline || poll(&p, 1, (int)(deadline - now)) == 0) {
			kill(pid, SIGKILL);
			status = -1;
			break;
		}
		got = read(pfd[0], tmp, sizeof(tmp));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (n < RUN_OUTPUT_CAP) {
			size_t take = (size_t)got < RUN_OUTPUT_CAP - n ? (size_t)got :
									 RUN_OUTPUT_CAP - n;
			memcpy(buf + n, tmp, take);
			n += take;
		}
	}
	close(pfd[0]);
	buf[n] = '\0';
	{
		int ws = 0;
		while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
			;
		if (status == 0)
			status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
	}
	*out = buf;
	return status;
}

/* Returns the last 1500 bytes of a command's output: Check cannot carry a longer message. */
static const char *tail_of(const char *out)
{
	size_t n = strlen(out);
	return n > 1500 ? out + n - 1500 : out;
}

/* ---- the Dockerfile, as instructions ---- */

struct insn {
	char kw[16]; /* upper-case instruction: FROM, RUN, COPY... */
	char *args;  /* the rest, continuation lines joined */
	int stage;   /* 0 for the first FROM's stage */
	int line;    /* where it starts, for messages */
};

struct dockerfile {
	struct insn v[MAX_INSNS];
	size_t n;
	int stages;
};

static void df_add(struct dockerfile *df, const char *logical, int line, int *stage)
{
	struct insn *in;
	size_t k = 0;

	while (*logical == ' ' || *logical == '\t')
		logical++;
	if (!*logical)
		return;
	ck_assert_uint_lt(df->n, MAX_INSNS);
	in = &df->v[df->n++];
	while (logical[k] && logical[k] != ' ' && logical[k] != '\t' && k + 1 < sizeof(in->kw)) {
		char c = logical[k];
		in->kw[k] = (c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
		k++;
	}
	in->kw[k] = '\0';
	while (logical[k] == ' ' || logical[k] == '\t')
		k++;
	in->args = strdup(logical + k);
	ck_assert_ptr_nonnull(in->args);
	if (strcmp(in->kw, "FROM") == 0)
		*stage = df->stages++;
	in->stage = *stage;
	in->line = line;
}

/* Parses Dockerfile text: comment lines dropped (also inside continuations, as Docker does),
 * backslash continuations joined with a space. */
static void df_parse(struct dockerfile *df, const char *text)
{
	size_t cap = strlen(text) + 1, len = 0;
	char *logical = malloc(cap);
	const char *p = text;
	int line = 0, start = 0, stage = -1;

	ck_assert_ptr_nonnull(logical);
	memset(df, 0, sizeof(*df));
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);
		const char *s = p;
		int cont = 0;

		line++;
		while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t' || s[l - 1] == '\r'))
			l--;
		while (l > 0 && (*s == ' ' || *s == '\t')) {
			s++;
			l--;
		}
		if (l > 0 && *s != '#') {
			if (s[l - 1] == '\\') {
				cont = 1;
				l--;
				while (l > 0 && (s[l - 1] == ' ' || s[l - 1] == '\t'))
					l--;
			}
			if (len == 0)
				start = line;
			else
				logical[len++] = ' ';
			memcpy(logical + len, s, l);
			len += l;
			logical[len] = '\0';
			if (!cont) {
				df_add(df, logical, start, &stage);
				len = 0;
			}
		}
		p = eol ? eol + 1 : p + strlen(p);
	}
	if (len > 0)
		df_add(df, logical, start, &stage);
	free(logical);
}

static void df_free(struct dockerfile *df)
{
	for (size_t i = 0; i < df->n; i++)
		free(df->v[i].args);
}

static void df_load(struct dockerfile *df)
{
	char *text = read_src("Dockerfile");
	df_parse(df, text);
	free(text);
	ck_assert_msg(df->stages >= 2, "the Dockerfile needs a build and a runtime stage");
}

/* Splits args into malloc'd tokens: the JSON form ["a", "b"] by its strings, the shell form
 * by whitespace. Returns the count. */
static size_t split_args(const char *args, char **tok, size_t max)
{
	size_t n = 0;
	const char *p = args;

	while (*p == ' ')
		p++;
	if (*p == '[') {
		while ((p = strchr(p, '"')) != NULL) {
			const char *q = strchr(p + 1, '"');
			ck_assert_ptr_nonnull(q);
			ck_assert_uint_lt(n, max);
			tok[n++] = strndup(p + 1, (size_t)(q - p - 1));
			p = q + 1;
		}
		return n;
	}
	while (*p) {
		const char *q;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			break;
		q = p;
		while (*q && *q != ' ' && *q != '\t')
			q++;
		ck_assert_uint_lt(n, max);
		tok[n++] = strndup(p, (size_t)(q - p));
		p = q;
	}
	return n;
}

static void free_tokens(char **tok, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(tok[i]);
}

/* Returns the value of --name=VALUE among tok[0..n) (malloc'd), or NULL. */
static char *flag_value(char **tok, size_t n, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < n; i++)
		if (strncmp(tok[i], name, len) == 0 && tok[i][len] == '=')
			return strdup(tok[i] + len + 1);
	return NULL;
}

/* The value of KEY in the runtime stage's ENV lines (malloc'd), or NULL. */
static char *df_env(const struct dockerfile *df, const char *key)
{
	char *tok[MAX_TOKENS], *val = NULL;
	size_t klen = strlen(key);

	for (size_t i = 0; i < df->n; i++) {
		size_t n;
		if (strcmp(df->v[i].kw, "ENV") != 0 || df->v[i].stage != df->stages - 1)
			continue;
		n = split_args(df->v[i].args, tok, MAX_TOKENS);
		for (size_t j = 0; j < n; j++)
			if (strncmp(tok[j], key, klen) == 0 && tok[j][klen] == '=') {
				free(val);
				val = strdup(tok[j] + klen + 1);
			}
		free_tokens(tok, n);
	}
	return val;
}

/* The first instruction kw in stage (-1: any), or NULL. With last, the last one instead. */
static const struct insn *df_find(const struct dockerfile *df, const char *kw, int stage, int last)
{
	const struct insn *found = NULL;
	for (size_t i = 0; i < df->n; i++) {
		if (strcmp(df->v[i].kw, kw) != 0 || (stage >= 0 && df->v[i].stage != stage))
			continue;
		found = &df->v[i];
		if (!last)
			break;
	}
	return found;
}

/* The target of the build stage's `RUN make TARGET` (malloc'd); fails when there is none. */
static char *df_make_target(const struct dockerfile *df)
{
	char *tok[MAX_TOKENS], *target = NULL;

	for (size_t i = 0; i < df->n && !target; i++) {
		size_t n;
		if (strcmp(df->v[i].kw, "RUN") != 0 || df->v[i].stage != 0)
			continue;
		n = split_args(df->v[i].args, tok, MAX_TOKENS);
		if (n >= 1 && strcmp(tok[0], "make") == 0) {
			/* make [-jN] [VAR=value]... TARGET: the first word that is neither. */
			for (size_t j = 1; j < n && !target; j++)
				if (tok[j][0] != '-' && !strchr(tok[j], '='))
					target = strdup(tok[j]);
			ck_assert_msg(target != NULL, "line %d: RUN make names no target",
				      df->v[i].line);
		}
		free_tokens(tok, n);
	}
	ck_assert_msg(target != NULL, "the build stage has no `RUN make TARGET` line");
	return target;
}

/* ---- the Makefile ---- */

/* The file the Makefile's default goal (`all:`) builds, with $(B) expanded to its default. */
static char *makefile_default_target(void)
{
	char *text = read_src("Makefile");
	char bdir[64] = "", target[256] = "";
	const char *p = text;

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);
		char line[512];
		if (l < sizeof(line)) {
			memcpy(line, p, l);
			line[l] = '\0';
			if (!bdir[0] && sscanf(line, "B ?= %63s", bdir) == 1) {
			} else if (!target[0] && strncmp(line, "all:", 4) == 0) {
				ck_assert_int_eq(sscanf(line + 4, " %255s", target), 1);
			}
		}
		p = eol ? eol + 1 : p + l;
	}
	free(text);
	ck_assert_msg(bdir[0], "no `B ?= DIR` in the Makefile");
	ck_assert_msg(target[0], "no `all:` goal in the Makefile");
	if (strncmp(target, "$(B)/", 5) == 0) {
		char *out = t_path(bdir, target + 5);
		ck_assert_ptr_nonnull(out);
		return out;
	}
	return strdup(target);
}

/* ---- systemd/rigfit.service ---- */

/* Returns 1 when [section] of unit text has key=value exactly (a repeatable key may appear on
 * several lines). */
static int unit_has(const char *unit, const char *section, const char *key, const char *value)
{
	const char *p = unit;
	int in_section = 0;
	size_t klen = strlen(key);

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);
		if (l > 0 && p[0] == '[') {
			in_section = l == strlen(section) + 2 &&
				     strncmp(p + 1, section, strlen(section)) == 0;
		} else if (in_section && l > klen && strncmp(p, key, klen) == 0 && p[klen] == '=' &&
			   l - klen - 1 == strlen(value) &&
			   strncmp(p + klen + 1, value, l - klen - 1) == 0) {
			return 1;
		}
		p = eol ? eol + 1 : p + l;
	}
	return 0;
}

/* The value of the first key= line of [section] (malloc'd), or NULL. */
static char *unit_get(const char *unit, const char *section, const char *key)
{
	const char *p = unit;
	int in_section = 0;
	size_t klen = strlen(key);

	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);
		if (l > 0 && p[0] == '[')
			in_section = l == strlen(section) + 2 &&
				     strncmp(p + 1, section, strlen(section)) == 0;
		else if (in_section && l > klen && strncmp(p, key, klen) == 0 && p[klen] == '=')
			return strndup(p + klen + 1, l - klen - 1);
		p = eol ? eol + 1 : p + l;
	}
	return NULL;
}

/* The release binary under test (RIGFIT_REL_BIN, default build/rigfit under the source
 * directory) as an absolute path, malloc'd; fails when it is not built. */
static char *rel_bin(void)
{
	const char *b = getenv("RIGFIT_REL_BIN");
	char *rel = NULL, *abs;

	if (!b || !*b)
		b = rel = t_path(t_src_dir(), "build/rigfit");
	abs = realpath(b, NULL);
	ck_assert_msg(abs != NULL && access(abs, X_OK) == 0,
		      "release binary %s is not built (make build/rigfit, or set RIGFIT_REL_BIN)",
		      b);
	free(rel);
	return abs;
}

/* Writes unit with every /usr/local/bin/rigfit (ExecStart and the ExecStartPost health
 * checks) replaced by bin into dir/rigfit.service and runs `systemd-analyze verify` on it.
 * Returns 1 when it exits 0 and says nothing about rigfit.service (other units on the machine
 * may be noisy; that is not ours to judge); *out holds what it printed (malloc'd). */
static int verify_unit(const char *analyze, const char *unit, const char *bin, const char *dir,
		       char **out)
{
	static const char old_bin[] = "/usr/local/bin/rigfit";
	char *path = t_path(dir, "rigfit.service"), *copy;
	size_t n = strlen(unit) + 1, used = 0, uses = 0;
	int status, clean = 1;

	for (const char *p = strstr(unit, old_bin); p; p = strstr(p + 1, old_bin))
		uses++;
	ck_assert_uint_ge(uses, 1);
	n += uses * strlen(bin);
	copy = malloc(n);
	ck_assert_ptr_nonnull(copy);
	for (const char *p = unit, *at; *p; p = at + sizeof(old_bin) - 1) {
		at = strstr(p, old_bin);
		if (!at) {
			snprintf(copy + used, n - used, "%s", p);
			break;
		}
		used += (size_t)snprintf(copy + used, n - used, "%.*s%s", (int)(at - p), p, bin);
	}
	ck_assert_int_eq(t_write_file(path, copy, strlen(copy)), 0);
	{
		const char *argv[] = {analyze, "verify", path, NULL};
		status = run_cmd(argv, NULL, 60, out);
	}
	if (status != 0)
		clean = 0;
	for (const char *p = *out; *p;) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);
		for (size_t i = 0; i + 14 <= l; i++)
			if (memcmp(p + i, "rigfit.service", 14) == 0)
				clean = 0;
		p = eol ? eol + 1 : p + l;
	}
	free(copy);
	free(path);
	return clean;
}

START_TEST(test_unit_settings)
{
	char *unit = read_src("systemd/rigfit.service");
	char *exec, *families;

	ck_assert(unit_has(unit, "Service", "Type", "notify"));
	ck_assert(unit_has(unit, "Service", "NotifyAccess", "main"));
	ck_assert(unit_has(unit, "Service", "DynamicUser", "yes"));
	ck_assert(unit_has(unit, "Service", "StateDirectory", "rigfit"));
	ck_assert(unit_has(unit, "Service", "ProtectSystem", "strict"));
	ck_assert(unit_has(unit, "Service", "ProtectHome", "yes"));
	ck_assert(unit_has(unit, "Service", "PrivateTmp", "yes"));
	ck_assert(unit_has(unit, "Service", "NoNewPrivileges", "yes"));
	ck_assert(unit_has(unit, "Service", "WatchdogSec", "30"));
	ck_assert(unit_has(unit, "Service", "Restart", "on-failure"));
	ck_assert(unit_has(unit, "Service", "KillSignal", "SIGTERM"));
	ck_assert(unit_has(unit, "Service", "ExecReload", "/bin/kill -HUP $MAINPID"));
	ck_assert(unit_has(unit, "Service", "DevicePolicy", "closed"));
	ck_assert(unit_has(unit, "Service", "DeviceAllow", "char-nvidia* rw"));
	ck_assert(unit_has(unit, "Install", "WantedBy", "multi-user.target"));
	/* A key in the wrong section does not count. */
	ck_assert(!unit_has(unit, "Unit", "Type", "notify"));

	exec = unit_get(unit, "Service", "ExecStart");
	ck_assert_ptr_nonnull(exec);
	ck_assert_msg(strncmp(exec, "/usr/local/bin/rigfit serve ", 28) == 0, "ExecStart=%s", exec);
	ck_assert_ptr_nonnull(strstr(exec, " --listen 127.0.0.1:8080"));
	ck_assert_ptr_nonnull(strstr(exec, " --profiles /usr/local/share/rigfit/profiles"));
	/* The daemon must be able to reach $NOTIFY_SOCKET (AF_UNIX) and serve (AF_INET). */
	families = unit_get(unit, "Service", "RestrictAddressFamilies");
	ck_assert_ptr_nonnull(families);
	ck_assert_ptr_nonnull(strstr(families, "AF_UNIX"));
	ck_assert_ptr_nonnull(strstr(families, "AF_INET"));
	free(families);
	free(exec);
	free(unit);
}
END_TEST

START_TEST(test_unit_verify)
{
	char *analyze = find_in_path("systemd-analyze");
	char *unit, *bin, *dir, *dir2, *out = NULL, *broken, *at;
	size_t n;

	if (!analyze) {
		printf("packaging: systemd-analyze not found; skipping `systemd-analyze verify`\n");
		return;
	}
	unit = read_src("systemd/rigfit.service");
	bin = rel_bin();
	dir = t_mkdtemp();
	dir2 = t_mkdtemp();
	ck_assert_ptr_nonnull(dir);
	ck_assert_ptr_nonnull(dir2);
	ck_assert_msg(verify_unit(analyze, unit, bin, dir, &out), "systemd-analyze verify:\n%s",
		      tail_of(out));
	free(out);

	/* The check can fail: the same unit with an unknown key must be flagged. */
	at = strstr(unit, "\nType=notify\n");
	ck_assert_ptr_nonnull(at);
	n = strlen(unit) + 32;
	broken = malloc(n);
	ck_assert_ptr_nonnull(broken);
	snprintf(broken, n, "%.*s\nTypo=notify\n%s", (int)(at - unit), unit,
		 at + strlen("\nType=notify\n"));
	ck_assert_msg(!verify_unit(analyze, broken, bin, dir2, &out),
		      "a unit with an unknown key passed: %s", tail_of(out));
	free(out);
	free(broken);

	t_rmtree(dir);
	t_rmtree(dir2);
	free(dir);
	free(dir2);
	free(bin);
	free(unit);
	free(analyze);
}
END_TEST

START_TEST(test_docker_from)
{
	struct dockerfile df;
	int froms = 0;

	df_load(&df);
	for (size_t i = 0; i < df.n; i++) {
		char *tok[MAX_TOKENS];
		size_t n;
		if (strcmp(df.v[i].kw, "FROM") != 0)
			continue;
		n = split_args(df.v[i].args, tok, MAX_TOKENS);
		ck_assert_uint_ge(n, 1);
		ck_assert_msg(strcmp(tok[0], "debian:bookworm-slim") == 0, "line %d: FROM %s",
			      df.v[i].line, df.v[i].args);
		if (froms == 0)
			ck_assert_msg(n == 3 && strcasecmp(tok[1], "AS") == 0 &&
					      strcmp(tok[2], "build") == 0,
				      "the first stage must be `AS build` (COPY --from=build)");
		froms++;
		free_tokens(tok, n);
	}
	ck_assert_int_ge(froms, 2);
	df_free(&df);
}
END_TEST

START_TEST(test_docker_copy_sources)
{
	struct dockerfile df;
	char *ignore = read_src(".dockerignore");
	int copies = 0;

	df_load(&df);
	for (size_t i = 0; i < df.n; i++) {
		char *tok[MAX_TOKENS], *from;
		size_t n, first = 0;
		if (strcmp(df.v[i].kw, "COPY") != 0 && strcmp(df.v[i].kw, "ADD") != 0)
			continue;
		ck_assert_msg(strcmp(df.v[i].kw, "ADD") != 0, "line %d: use COPY, not ADD",
			      df.v[i].line);
		n = split_args(df.v[i].args, tok, MAX_TOKENS);
		from = flag_value(tok, n, "--from");
		while (first < n && strncmp(tok[first], "--", 2) == 0)
			first++;
		ck_assert_msg(n - first >= 2, "line %d: COPY needs a source and a destination",
			      df.v[i].line);
		for (size_t j = first; !from && j + 1 < n; j++) {
			char *path = t_path(t_src_dir(), tok[j]);
			const char *p = ignore;
			ck_assert_msg(is_file(path) || is_dir(path),
				      "line %d: COPY source %s is not in the repository",
				      df.v[i].line, tok[j]);
			/* .dockerignore must not hide what the Dockerfile copies. */
			while (*p) {
				const char *eol = strchr(p, '\n');
				size_t l = eol ? (size_t)(eol - p) : strlen(p);
				char pat[256];
				if (l > 0 && l < sizeof(pat) && p[0] != '#' && p[0] != '!') {
					memcpy(pat, p, l);
					pat[l] = '\0';
					ck_assert_msg(
						fnmatch(pat, tok[j], 0) != 0,
						".dockerignore pattern %s hides COPY source %s",
						pat, tok[j]);
				}
				p = eol ? eol + 1 : p + l;
			}
			free(path);
			copies++;
		}
		free(from);
		free_tokens(tok, n);
	}
	ck_assert_int_gt(copies, 0);
	free(ignore);
	df_free(&df);
}
END_TEST

/* Replays the build stage's COPY lines from the repository into root, as Docker would into
 * the WORKDIR (relative destinations; a directory source copies its contents). */
static void stage_build_context(const struct dockerfile *df, const char *root)
{
	const struct insn *wd = df_find(df, "WORKDIR", 0, 1);

	for (size_t i = 0; i < df->n; i++) {
		char *tok[MAX_TOKENS], *out = NULL;
		size_t n, first = 0, nsrc;
		const char *dest;
		if (strcmp(df->v[i].kw, "COPY") != 0 || df->v[i].stage != 0)
			continue;
		n = split_args(df->v[i].args, tok, MAX_TOKENS);
		while (first < n && strncmp(tok[first], "--", 2) == 0)
			first++;
		dest = tok[n - 1];
		nsrc = n - 1 - first;
		if (dest[0] == '/') {
			/* An absolute destination under WORKDIR is relative to it. */
			size_t wl;
			ck_assert_msg(wd != NULL, "line %d: absolute COPY without WORKDIR",
				      df->v[i].line);
			wl = strlen(wd->args);
			ck_assert_msg(strncmp(dest, wd->args, wl) == 0,
				      "line %d: COPY outside WORKDIR", df->v[i].line);
			dest += wl;
			while (*dest == '/')
				dest++;
		}
		for (size_t j = first; j + 1 < n; j++) {
			char *src = t_path(t_src_dir(), tok[j]);
			char *to_dir = t_path(root, *dest ? dest : ".");
			int dir_dest = nsrc > 1 || dest[strlen(dest) - 1] == '/' || is_dir(src);
			ck_assert_ptr_nonnull(src);
			ck_assert_ptr_nonnull(to_dir);
			if (dir_dest) {
				const char *mk[] = {"mkdir", "-p", to_dir, NULL};
				ck_assert_int_eq(run_cmd(mk, NULL, 30, &out), 0);
				free(out);
				if (is_dir(src)) {
					char *dot = t_path(src, ".");
					const char *cp[] = {"cp", "-R", dot, to_dir, NULL};
					ck_assert_msg(run_cmd(cp, NULL, 60, &out) == 0, "%s",
						      tail_of(out));
					free(dot);
				} else {
					const char *cp[] = {"cp", src, to_dir, NULL};
					ck_assert_msg(run_cmd(cp, NULL, 60, &out) == 0, "%s",
						      tail_of(out));
				}
			} else {
				char *parent = strdup(to_dir), *slash = strrchr(parent, '/');
				const char *cp[] = {"cp", src, to_dir, NULL};
				const char *mk[] = {"mkdir", "-p", parent, NULL};
				*slash = '\0';
				ck_assert_int_eq(run_cmd(mk, NULL, 30, &out), 0);
				free(out);
				ck_assert_msg(run_cmd(cp, NULL, 60, &out) == 0, "%s", tail_of(out));
				free(parent);
			}
			free(out);
			out = NULL;
			free(src);
			free(to_dir);
		}
		free_tokens(tok, n);
	}
}

/* Checks that every #include "x" in the C files under root/dir resolves inside root (the
 * Makefile compiles with -I.) or beside the including file. */
static void check_includes(const char *root, const char *dir)
{
	char *out = NULL, *full = t_path(root, dir);
	const char *find[] = {"find", full, "-name", "*.[ch]", "-type", "f", NULL};
	const char *p;

	if (!is_dir(full)) {
		free(full);
		return;
	}
	ck_assert_int_eq(run_cmd(find, NULL, 30, &out), 0);
	for (p = out; *p;) {
		const char *eol = strchr(p, '\n');
		size_t l = eol ? (size_t)(eol - p) : strlen(p);
		char *file = strndup(p, l), *text = t_read_file(file, NULL);
		ck_assert_ptr_nonnull(text);
		for (const char *q = text; (q = strstr(q, "#include \"")) != NULL;) {
			const char *name = q + 10, *end = strchr(name, '"');
			char *inc, *beside, *slash, *candidate;
			ck_assert_ptr_nonnull(end);
			inc = strndup(name, (size_t)(end - name));
			candidate = t_path(root, inc);
			beside = strdup(file);
			slash = strrchr(beside, '/');
			*slash = '\0';
			slash = t_path(beside, inc);
			ck_assert_msg(
				is_file(candidate) || is_file(slash),
				"%s includes \"%s\", which the Docker build stage does not copy",
				file, inc);
			free(slash);
			free(beside);
			free(candidate);
			free(inc);
			q = end;
		}
		free(text);
		free(file);
		p = eol ? eol + 1 : p + l;
	}
	free(out);
	free(full);
}

START_TEST(test_docker_build_context)
{
	struct dockerfile df;
	char *root = t_mkdtemp(), *target, *out = NULL, *out_default = NULL, *out_repo = NULL;

	ck_assert_ptr_nonnull(root);
	df_load(&df);
	stage_build_context(&df, root);
	target = df_make_target(&df);
	{
		/* make -n fails on a missing prerequisite (a source, the spec, the embed script)
		 * exactly as the real build in the image would; -B prints every command. */
		const char *argv[] = {"make", "-n", "-B", target, NULL};
		int rc = run_cmd(argv, root, 120, &out);
		ck_assert_msg(rc == 0, "make -n %s in the Docker build context failed:\n%s", target,
			      tail_of(out));
	}
	{
		/* RUN make TARGET does what a plain `make` does. */
		const char *argv[] = {"make", "-n", "-B", NULL};
		ck_assert_int_eq(run_cmd(argv, root, 120, &out_default), 0);
		ck_assert_msg(strcmp(out, out_default) == 0,
			      "`make %s` and `make` differ in the build context", target);
	}
	{
		/* And the same commands as in the repository. The Makefile picks sources and
		 * migrations up by wildcard, so an input left out of the COPY lines would not
		 * stop make; it would silently build a binary without, say, its migrations. */
		const char *argv[] = {"make", "-n", "-B", "B=build", target, NULL};
		ck_assert_int_eq(run_cmd(argv, t_src_dir(), 120, &out_repo), 0);
		ck_assert_msg(strcmp(out, out_repo) == 0,
			      "the Docker build context builds differently from the repository; "
			      "a build input is missing from the COPY lines. In the context:\n%s",
			      tail_of(out));
	}
	/* Headers are found by the compiler, not by make -n. */
	check_includes(root, "core");
	check_includes(root, "api");
	check_includes(root, "server");
	free(out);
	free(out_default);
	free(out_repo);
	free(target);
	t_rmtree(root);
	free(root);
	df_free(&df);
}
END_TEST

START_TEST(test_docker_make_target)
{
	struct dockerfile df;
	char *target, *want, *bin_src, *tok[MAX_TOKENS];
	const struct insn *wd;
	int copied = 0;

	df_load(&df);
	target = df_make_target(&df);
	want = makefile_default_target();
	ck_assert_str_eq(target, "build/rigfit");
	ck_assert_msg(strcmp(target, want) == 0, "RUN make %s, but `make` builds %s", target, want);
	/* The runtime stage copies the file that RUN make produced. */
	wd = df_find(&df, "WORKDIR", 0, 1);
	ck_assert_ptr_nonnull(wd);
	bin_src = t_path(wd->args, target);
	for (size_t i = 0; i < df.n; i++) {
		size_t n;
		char *from;
		if (strcmp(df.v[i].kw, "COPY") != 0 || df.v[i].stage != df.stages - 1)
			continue;
		n = split_args(df.v[i].args, tok, MAX_TOKENS);
		from = flag_value(tok, n, "--from");
		if (from && strcmp(from, "build") == 0 && n == 3 && strcmp(tok[1], bin_src) == 0 &&
		    strcmp(tok[2], "/usr/local/bin/rigfit") == 0)
			copied = 1;
		free(from);
		free_tokens(tok, n);
	}
	ck_assert_msg(copied, "no `COPY --from=build %s /usr/local/bin/rigfit`", bin_src);
	free(bin_src);
	free(want);
	free(target);
	df_free(&df);
}
END_TEST

/* Returns 1 when the word occurs in text delimited by non-identifier characters. */
static int has_word(const char *text, const char *word)
{
	size_t wl = strlen(word);
	for (const char *p = text; (p = strstr(p, word)) != NULL; p++) {
		int before = p == text ||
			     !(p[-1] == '-' || p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z'));
		int after = !(p[wl] == '-' || p[wl] == '_' || (p[wl] >= 'a' && p[wl] <= 'z'));
		if (before && after)
			return 1;
	}
	return 0;
}

START_TEST(test_docker_runtime)
{
	struct dockerfile df;
	const struct insn *in;
	char *tok[MAX_TOKENS], *unit, *val, *vol_prefix;
	int stage, profiles_copied = 0;
	size_t n;

	df_load(&df);
	stage = df.stages - 1;

	/* No HTTP client in the runtime image: the HEALTHCHECK is rigfit itself. */
	for (size_t i = 0; i < df.n; i++)
		if (df.v[i].stage == stage)
			ck_assert_msg(!has_word(df.v[i].args, "curl") &&
					      !has_word(df.v[i].args, "wget"),
				      "line %d: the runtime stage uses curl/wget", df.v[i].line);
	in = df_find(&df, "HEALTHCHECK", stage, 1);
	ck_assert_ptr_nonnull(in);
	{
		const char *cmd = strstr(in->args, "CMD ");
		ck_assert_ptr_nonnull(cmd);
		n = split_args(cmd + 4, tok, MAX_TOKENS);
		ck_assert_uint_ge(n, 2);
		ck_assert_str_eq(tok[0], "rigfit");
		ck_assert_str_eq(tok[1], "healthcheck");
		/* Readiness: a container whose store is down is not healthy (test_probes.c runs
		 * this command against such a daemon). */
		ck_assert_uint_eq(n, 5);
		ck_assert_str_eq(tok[2], "--ready");
		ck_assert_str_eq(tok[3], "--listen");
		ck_assert_str_eq(tok[4], "127.0.0.1:8080");
		free_tokens(tok, n);
	}

	/* A non-root user that the image creates. */
	in = df_find(&df, "USER", stage, 1);
	ck_assert_ptr_nonnull(in);
	{
		char user[64];
		const struct insn *ua = NULL;
		size_t ul = strcspn(in->args, ":");
		ck_assert_uint_lt(ul, sizeof(user));
		memcpy(user, in->args, ul);
		user[ul] = '\0';
		ck_assert_msg(strcmp(user, "root") != 0 && strcmp(user, "0") != 0, "USER %s",
			      in->args);
		for (size_t i = 0; i < df.n; i++)
			if (df.v[i].stage == stage && strcmp(df.v[i].kw, "RUN") == 0 &&
			    strstr(df.v[i].args, "useradd"))
				ua = &df.v[i];
		ck_assert_msg(ua != NULL, "the runtime stage creates no user");
		if (user[0] >= '0' && user[0] <= '9') {
			char want[80];
			snprintf(want, sizeof(want), "--uid %s ", user);
			ck_assert_msg(strstr(ua->args, want) != NULL,
				      "USER %s is not the uid useradd gives", user);
		} else {
			ck_assert_msg(has_word(ua->args, user), "USER %s is not created", user);
		}
	}

	in = df_find(&df, "ENTRYPOINT", stage, 1);
	ck_assert_ptr_nonnull(in);
	n = split_args(in->args, tok, MAX_TOKENS);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(tok[0], "rigfit");
	free_tokens(tok, n);
	in = df_find(&df, "CMD", stage, 1);
	ck_assert_ptr_nonnull(in);
	n = split_args(in->args, tok, MAX_TOKENS);
	ck_assert_uint_ge(n, 1);
	ck_assert_str_eq(tok[0], "serve");
	free_tokens(tok, n);
	in = df_find(&df, "EXPOSE", stage, 1);
	ck_assert_ptr_nonnull(in);
	ck_assert_str_eq(in->args, "8080");

	/* The daemon's settings agree with the rest of the image and with the unit. */
	val = df_env(&df, "RIGFIT_LISTEN");
	ck_assert_ptr_nonnull(val);
	ck_assert_str_eq(val, "0.0.0.0:8080");
	free(val);
	val = df_env(&df, "NVIDIA_DRIVER_CAPABILITIES");
	ck_assert_ptr_nonnull(val);
	ck_assert_str_eq(val, "utility");
	free(val);
	val = df_env(&df, "NVIDIA_VISIBLE_DEVICES");
	ck_assert_ptr_nonnull(val);
	ck_assert_str_eq(val, "all");
	free(val);

	in = df_find(&df, "VOLUME", stage, 1);
	ck_assert_ptr_nonnull(in);
	val = df_env(&df, "RIGFIT_DB");
	ck_assert_ptr_nonnull(val);
	vol_prefix = t_path(in->args, "");
	ck_assert_msg(strncmp(val, vol_prefix, strlen(vol_prefix)) == 0 &&
			      !strchr(val + strlen(vol_prefix), '/'),
		      "RIGFIT_DB=%s is not in the VOLUME %s", val, in->args);
	free(vol_prefix);
	free(val);

	val = df_env(&df, "RIGFIT_PROFILES");
	ck_assert_ptr_nonnull(val);
	for (size_t i = 0; i < df.n; i++) {
		if (strcmp(df.v[i].kw, "COPY") != 0 || df.v[i].stage != stage)
			continue;
		n = split_args(df.v[i].args, tok, MAX_TOKENS);
		if (n >= 2 && strcmp(tok[n - 1], val) == 0 &&
		    (strcmp(tok[n - 2], "profiles") == 0 ||
		     strstr(tok[n - 2], "/profiles") != NULL))
			profiles_copied = 1;
		free_tokens(tok, n);
	}
	ck_assert_msg(profiles_copied, "nothing copies profiles to RIGFIT_PROFILES=%s", val);
	unit = read_src("systemd/rigfit.service");
	{
		char want[300];
		snprintf(want, sizeof(want), " --profiles %s", val);
		ck_assert_msg(strstr(unit, want) != NULL,
			      "the unit and the image disagree on where profiles live");
	}
	free(unit);
	free(val);
	df_free(&df);
}
END_TEST

/* Runtime packages and the library each provides (bookworm names); a NULL soname is a data
 * package the libraries read (the CA certificates libcurl verifies the Hub's TLS with). A
 * loaded library is opened with dlopen when it is needed (libcurl, by --hub) and must not be
 * linked: linked, it and the libraries under it are resident in every daemon. */
static const struct {
	const char *pkg;
	const char *soname;
	bool loaded;
} runtime_libs[] = {
	{"libmicrohttpd12", "libmicrohttpd.so.12", false},
	{"libcjson1", "libcjson.so.1", false},
	{"libuv1", "libuv.so.1", false},
	{"libsqlite3-0", "libsqlite3.so.0", false},
	{"libcurl4", "libcurl.so.4", true},
	{"ca-certificates", NULL, false},
	{"libyaml-0-2", "libyaml-0.so.2", false},
};

/* Libraries every debian:bookworm-slim image has (libc6, libgcc-s1). */
static int base_image_lib(const char *soname)
{
	static const char *const base[] = {"libc.so.",  "libm.so.",  "libpthread.so.",
					   "libdl.so.", "librt.so.", "libgcc_s.so.",
					   "ld-linux"};
	for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++)
		if (strncmp(soname, base[i], strlen(base[i])) == 0)
			return 1;
	return 0;
}

START_TEST(test_docker_runtime_libs)
{
	struct dockerfile df;
	char *pkgs[MAX_TOKENS], *readelf, *bin, *out = NULL;
	size_t npkgs = 0;
	int stage;

	df_load(&df);
	stage = df.stages - 1;
	/* The packages the runtime stage's apt-get install lines name. */
	for (size_t i = 0; i < df.n; i++) {
		char *tok[MAX_TOKENS];
		size_t n;
		int in_install = 0;
		if (df.v[i].stage != stage || strcmp(df.v[i].kw, "RUN") != 0)
			continue;
		n = split_args(df.v[i].args, tok, MAX_TOKENS);
		for (size_t j = 0; j < n; j++) {
			if (strcmp(tok[j], "&&") == 0 || strcmp(tok[j], ";") == 0)
				in_install = 0;
			else if (j > 0 && strcmp(tok[j], "install") == 0 &&
				 strstr(tok[j - 1], "apt"))
				in_install = 1;
			else if (in_install && tok[j][0] != '-')
				pkgs[npkgs++] = strdup(tok[j]);
		}
		free_tokens(tok, n);
	}
	ck_assert_uint_gt(npkgs, 0);
	/* Each installed package is one of the libraries rigfit needs, nothing more. */
	for (size_t i = 0; i < npkgs; i++) {
		int known = 0;
		for (size_t k = 0; k < sizeof(runtime_libs) / sizeof(runtime_libs[0]); k++)
			known |= strcmp(pkgs[i], runtime_libs[k].pkg) == 0;
		ck_assert_msg(known, "the runtime stage installs %s, which rigfit does not link",
			      pkgs[i]);
	}

	readelf = find_in_path("readelf");
	if (!readelf) {
		printf("packaging: readelf not found; skipping the soname comparison\n");
		goto out;
	}
	bin = rel_bin();
	{
		const char *argv[] = {readelf, "-d", bin, NULL};
		ck_assert_int_eq(run_cmd(argv, NULL, 60, &out), 0);
	}
	/* Both ways: every package's soname is NEEDED, every NEEDED soname has its package. */
	for (size_t k = 0; k < sizeof(runtime_libs) / sizeof(runtime_libs[0]); k++) {
		char needed[128];
		int installed = 0;
		if (!runtime_libs[k].soname)
			continue;
		snprintf(needed, sizeof(needed), "Shared library: [%s]", runtime_libs[k].soname);
		for (size_t i = 0; i < npkgs; i++)
			installed |= strcmp(pkgs[i], runtime_libs[k].pkg) == 0;
		if (runtime_libs[k].loaded) {
			ck_assert_msg(!strstr(out, needed), "%s links %s, which it should load",
				      bin, runtime_libs[k].soname);
			ck_assert_msg(installed, "%s loads %s; install %s in the runtime stage",
				      bin, runtime_libs[k].soname, runtime_libs[k].pkg);
		} else if (strstr(out, needed))
			ck_assert_msg(installed, "%s needs %s; install %s in the runtime stage",
				      bin, runtime_libs[k].soname, runtime_libs[k].pkg);
		else
			ck_assert_msg(!installed,
				      "the runtime stage installs %s, but %s does not "
				      "link %s",
				      runtime_libs[k].pkg, bin, runtime_libs[k].soname);
	}
	for (const char *p = out; (p = strstr(p, "Shared library: [")) != NULL;) {
		const char *name = p + 17, *end = strchr(name, ']');
		char soname[128];
		int provided = 0;
		ck_assert_ptr_nonnull(end);
		ck_assert_uint_lt((size_t)(end - name), sizeof(soname));
		memcpy(soname, name, (size_t)(end - name));
		soname[end - name] = '\0';
		for (size_t k = 0; k < sizeof(runtime_libs) / sizeof(runtime_libs[0]); k++)
			provided |= runtime_libs[k].soname &&
				    strcmp(soname, runtime_libs[k].soname) == 0;
		ck_assert_msg(provided || base_image_lib(soname),
			      "%s needs %s, which no runtime package of the Dockerfile provides",
			      bin, soname);
		p = end;
	}
	free(out);
	free(bin);
	free(readelf);
out:
	for (size_t i = 0; i < npkgs; i++)
		free(pkgs[i]);
	df_free(&df);
}
END_TEST

START_TEST(test_dockerignore)
{
	char *text = read_src(".dockerignore");
	static const char *const want[] = {".git", "build*", "var"};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const char *p = text;
		int found = 0;
		while (*p && !found) {
			const char *eol = strchr(p, '\n');
			size_t l = eol ? (size_t)(eol - p) : strlen(p);
			found = l == strlen(want[i]) && strncmp(p, want[i], l) == 0;
			p = eol ? eol + 1 : p + l;
		}
		ck_assert_msg(found, ".dockerignore does not exclude %s", want[i]);
	}
	/* The patterns do what they say on the names they are for. */
	ck_assert_int_eq(fnmatch("build*", "build-pkg", 0), 0);
	free(text);
}
END_TEST

START_TEST(test_dockerfile_parser)
{
	/* The checks above are only as good as this parser. */
	struct dockerfile df;
	char *tok[MAX_TOKENS];
	size_t n;

	df_parse(&df, "# c\nFROM a AS b\nrun x \\\n  # inside\n  y\\\n\tz\n\nFROM c\n"
		      "COPY [\"s 1\", \"d\"]\n");
	ck_assert_uint_eq(df.n, 4);
	ck_assert_int_eq(df.stages, 2);
	ck_assert_str_eq(df.v[1].kw, "RUN");
	ck_assert_str_eq(df.v[1].args, "x y z");
	ck_assert_int_eq(df.v[1].line, 3);
	ck_assert_int_eq(df.v[1].stage, 0);
	ck_assert_int_eq(df.v[3].stage, 1);
	n = split_args(df.v[3].args, tok, MAX_TOKENS);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(tok[0], "s 1");
	free_tokens(tok, n);
	df_free(&df);
	ck_assert(has_word("apt-get install curl ca-certificates", "curl"));
	ck_assert(!has_word("apt-get install libcurl4", "curl"));
}
END_TEST

Suite *packaging_suite(void)
{
	Suite *s = suite_create("packaging");
	TCase *tc = tcase_create("packaging");

	/* systemd-analyze and the make dry-run take seconds, not milliseconds. */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_dockerfile_parser);
	tcase_add_test(tc, test_unit_settings);
	tcase_add_test(tc, test_unit_verify);
	tcase_add_test(tc, test_docker_from);
	tcase_add_test(tc, test_docker_copy_sources);
	tcase_add_test(tc, test_docker_build_context);
	tcase_add_test(tc, test_docker_make_target);
	tcase_add_test(tc, test_docker_runtime);
	tcase_add_test(tc, test_docker_runtime_libs);
	tcase_add_test(tc, test_dockerignore);
	suite_add_tcase(s, tc);
	return s;
}
