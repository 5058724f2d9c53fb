/*
 * Installing rigfit as a newcomer would: `make install` into a DESTDIR, then the installed
 * binary run from / (it must find its profiles beside itself), the unit pointing at the
 * installed binary, the man page lint-clean and naming every command and serve flag, the bash
 * completion completing commands, flags and values, and `make deb` building a package of the
 * same files with a system user.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server/config.h"
#include "tests/server/harness.h"
#include "tests/test.h"

/* Runs `make -C SRC target VAR=...` (vars NULL-terminated) quietly; returns its status. */
static int make(const char *target, const char *const *vars, char **err)
{
	const char *argv[16] = {
		"/bin/sh", "-c", "unset MAKEFLAGS MAKELEVEL MFLAGS; exec make -s \"$@\"",
		"sh",      "-C", t_src_dir(),
		target};
	int n = 7;

	for (int i = 0; vars && vars[i] && n < 15; i++)
		argv[n++] = vars[i];
	argv[n] = NULL;
	return t_run(argv, NULL, err, 300000);
}

/* Returns true when the program is on PATH. */
static int have(const char *prog)
{
	const char *argv[] = {"/bin/sh", "-c", "command -v \"$1\" >/dev/null", "sh", prog, NULL};
	return t_run(argv, NULL, NULL, 5000) == 0;
}

static char *complete_with(const char *file, const char *bin, const char *words, int cword);

/* Runs argv[0..] from / with RIGFIT_PROFILES unset; returns its status. */
static int run_from_root(const char *const *args, char **out, char **err)
{
	const char *argv[16] = {"/bin/sh", "-c", "cd / && unset RIGFIT_PROFILES && exec \"$@\"",
				"sh"};
	int n = 4;

	for (int i = 0; args[i] && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return t_run(argv, out, err, 30000);
}

START_TEST(make_install_gives_a_binary_that_works_from_anywhere)
{
	char *dest = t_mkdtemp(), *destvar, *bin, *unit, *out = NULL, *err = NULL;
	static const char *const files[] = {
		"usr/local/share/rigfit/profiles/models.json",
		"usr/local/share/rigfit/profiles/devices.json",
		"usr/local/share/man/man1/rigfit.1",
		"usr/local/share/bash-completion/completions/rigfit",
		"usr/local/share/zsh/site-functions/_rigfit",
	};
	size_t n = strlen(dest) + 16;

	destvar = malloc(n);
	snprintf(destvar, n, "DESTDIR=%s", dest);
	{
		const char *vars[] = {destvar, NULL};
		ck_assert_msg(make("install", vars, &err) == 0, "make install: %s", err);
		free(err);
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *p = t_path(dest, files[i]);
		ck_assert_msg(access(p, R_OK) == 0, "%s not installed", files[i]);
		free(p);
	}
	bin = t_path(dest, "usr/local/bin/rigfit");
	{
		const char *a[] = {bin,      "estimate", "llama-3.1-8b", "--quant",
				   "Q4_K_M", "--format", "json",         NULL};
		ck_assert_msg(run_from_root(a, &out, &err) == 0, "%s", err);
		ck_assert_ptr_nonnull(strstr(out, "\"id\":\"meta-llama/Llama-3.1-8B\""));
		free(out);
		free(err);
	}
	/* `man rigfit` finds the installed page by name (man-db, as a newcomer reads it). */
	{
		char script[512];
		const char *a[] = {"/bin/sh", "-c", script, NULL};
		snprintf(
			script, sizeof(script),
			"cd / && MANPATH='%s/usr/local/share/man' MANWIDTH=100 exec man -P cat rigfit",
			dest);
		ck_assert_msg(have("man"), "man not found: make deps installs man-db");
		ck_assert_msg(t_run(a, &out, &err, 60000) == 0, "man rigfit: %s", err);
		ck_assert_msg(strstr(out, "healthcheck") &&
				      strstr(out, "--mcp-conformance-fixtures"),
			      "man rigfit printed: %.300s", out);
		free(out);
		free(err);
	}
	/* The installed bash completion completes with the installed binary. */
	{
		char *file = t_path(dest, "usr/local/share/bash-completion/completions/rigfit");
		out = complete_with(file, bin, "est", 1);
		ck_assert_str_eq(out, "estimate\n");
		free(out);
		out = complete_with(file, bin, "healthcheck --re", 2);
		ck_assert_str_eq(out, "--ready\n");
		free(out);
		free(file);
	}
	/* The installed unit runs the installed binary. */
	unit = t_path(dest, "usr/local/lib/systemd/system/rigfit.service");
	out = t_read_file(unit, NULL);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(strstr(out, "\nExecStart=/usr/local/bin/rigfit serve"));
	free(out);
	free(unit);
	t_rmtree(dest);

	/* Another PREFIX moves the unit's paths with it. */
	{
		const char *vars[] = {destvar, "PREFIX=/opt/rf", NULL};
		ck_assert_int_eq(make("install", vars, NULL), 0);
	}
	unit = t_path(dest, "opt/rf/lib/systemd/system/rigfit.service");
	out = t_read_file(unit, NULL);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(strstr(out, "\nExecStart=/opt/rf/bin/rigfit serve"));
	ck_assert_ptr_null(strstr(out, "\nExecStart=/usr/local"));
	free(out);
	free(unit);
	t_rmtree(dest);
	free(dest);
	free(destvar);
	free(bin);
}
END_TEST

/* The unit as installed, with a PREFIX that exists on this machine: `systemd-analyze verify`
 * accepts it, which checks that its ExecStart= and its ExecStartPost= health checks name an
 * executable that is there, the closest a test without systemd as init comes to starting it. */
START_TEST(the_installed_unit_verifies)
{
	char *prefix = t_mkdtemp(), *var, *unit, *out = NULL, *err = NULL, *text;
	size_t n = strlen(prefix) + 16;

	if (!have("systemd-analyze")) {
		printf("install: systemd-analyze not found; skipping the installed unit\n");
		t_rmtree(prefix);
		free(prefix);
		return;
	}
	var = malloc(n);
	ck_assert_ptr_nonnull(var);
	snprintf(var, n, "PREFIX=%s", prefix);
	{
		const char *vars[] = {var, NULL};
		ck_assert_msg(make("install", vars, &err) == 0, "make install: %s", err);
		free(err);
	}
	unit = t_path(prefix, "lib/systemd/system/rigfit.service");
	text = t_read_file(unit, NULL);
	ck_assert_ptr_nonnull(text);
	/* Both probes, pointing at the installed binary. */
	ck_assert_ptr_nonnull(
		strstr(text, "/bin/rigfit healthcheck --listen 127.0.0.1:8080 --wait"));
	ck_assert_ptr_nonnull(
		strstr(text, "/bin/rigfit healthcheck --listen 127.0.0.1:8080 --ready"));
	ck_assert_ptr_null(strstr(text, "/usr/local/bin"));
	{
		const char *a[] = {"/bin/sh", "-c", "exec systemd-analyze verify \"$1\"",
				   "sh",      unit, NULL};
		int rc = t_run(a, &out, &err, 60000);
		ck_assert_msg(rc == 0 && !strstr(err, "rigfit.service"), "verify (%d): %s%s", rc,
			      out, err);
		free(out);
		free(err);
	}
	free(text);
	free(unit);
	t_rmtree(prefix);
	free(prefix);
	free(var);
}
END_TEST

/* Returns the man page's spelling of a flag: "--log-level" is written "Fl \-log\-level". */
static void mdoc_flag(const char *flag, char *out, size_t len)
{
	size_t n = (size_t)snprintf(out, len, "Fl ");
	for (const char *p = flag + 1; *p && n + 3 < len; p++) {
		if (*p == '-')
			out[n++] = '\\';
		out[n++] = *p;
	}
	out[n] = '\0';
}

START_TEST(the_man_page_is_lint_clean_and_names_every_command_and_flag)
{
	char *page = t_path(t_src_dir(), "server/doc/rigfit.1"), *text, *out = NULL, *err = NULL;
	const char *help[] = {t_bin(), "help", NULL};

	ck_assert_msg(have("mandoc"), "mandoc not found: make deps installs it");
	{
		const char *argv[] = {"/bin/sh", "-c", "exec mandoc -T lint \"$1\" 2>&1",
				      "sh",      page, NULL};
		ck_assert_msg(t_run(argv, &out, NULL, 30000) == 0, "mandoc -T lint: %s", out);
		ck_assert_msg(out[0] == '\0', "mandoc -T lint: %s", out);
		free(out);
	}
	text = t_read_file(page, NULL);
	ck_assert_ptr_nonnull(text);
	/* Every command `rigfit help` lists has its entry. */
	ck_assert_int_eq(t_run(help, &out, &err, 10000), 0);
	for (char *line = out; line && *line;) {
		char *eol = strchr(line, '\n'), name[32], want[48];
		if (strncmp(line, "  ", 2) == 0 && sscanf(line + 2, "%31[a-z] ", name) == 1) {
			snprintf(want, sizeof(want), "Cm %s", name);
			ck_assert_msg(strstr(text, want) != NULL, "rigfit.1 lacks command %s",
				      name);
		}
		line = eol ? eol + 1 : NULL;
	}
	free(out);
	free(err);
	/* Every flag of serve's usage has its entry. */
	for (const char *p = strstr(rf_serve_usage, "--"); p; p = strstr(p + 2, "--")) {
		char flag[64], want[96];
		size_t n = strspn(p, "-abcdefghijklmnopqrstuvwxyz");
		if (n >= sizeof(flag) || n < 3)
			continue;
		memcpy(flag, p, n);
		flag[n] = '\0';
		mdoc_flag(flag, want, sizeof(want));
		ck_assert_msg(strstr(text, want) != NULL, "rigfit.1 lacks serve's %s (as '%s')",
			      flag, want);
	}
	free(text);
	free(page);
}
END_TEST

/* Returns the completions bash offers for the words after the binary bin (space-separated),
 * with the completion script file sourced. */
static char *complete_with(const char *file, const char *bin, const char *words, int cword)
{
	char script[1024], *out = NULL;
	const char *argv[] = {"/bin/bash", "-c", script, NULL};

	snprintf(script, sizeof(script),
		 "cd / && source '%s' && COMP_WORDS=('%s' %s) && COMP_CWORD=%d && _rigfit && "
		 "echo \"${COMPREPLY[*]}\"",
		 file, bin, words, cword);
	ck_assert_int_eq(t_run(argv, &out, NULL, 30000), 0);
	return out;
}

/* The same with the checkout's completion script and the binary under test. */
static char *complete(const char *words, int cword)
{
	char *file = t_path(t_src_dir(), "server/completions/rigfit.bash");
	char *out = complete_with(file, t_bin(), words, cword);

	free(file);
	return out;
}

START_TEST(the_bash_completion_completes_commands_flags_and_values)
{
	static const struct {
		const char *words;
		int cword;
		const char *want;
	} cases[] = {
		{"est", 1, "estimate\n"},
		{"help rec", 2, "recommend\n"},
		{"estimate --qu", 2, "--quant\n"},
		{"serve --lis", 2, "--listen\n"},
		{"config m --use-case long", 4, "long_context\n"},
		{"detect --format t", 3, "table\n"},
		{"bench l", 2, "list\n"},
		{"mod", 1, "models\n"},
		{"models --sou", 2, "--source\n"},
		{"models --source ol", 3, "ollama\n"},
		/* The names the catalogs hold (rigfit names). */
		{"estimate --quant Q4_K_", 3, "Q4_K_M Q4_K_S\n"},
		{"finetune --task summ", 3, "summarization\n"},
		{"config qwen2.5-7b-i", 2, "qwen2.5-7b-instruct\n"},
		{"estimate x --hardware-profile rtx-4090-l", 4, "rtx-4090-laptop\n"},
		{"estimate x --gpu 'RTX 4090 L'", 4, "RTX\\ 4090\\ Laptop\n"},
		{"config x --cpu 'Ryzen 7 7800'", 4, "Ryzen\\ 7\\ 7800X3D\n"},
		{"config m --use-case cod", 4, "coding\n"},
	};
	char *profiles = t_path(t_src_dir(), "profiles");

	/* The binary under test finds the checkout's profiles from / through the environment. */
	setenv("RIGFIT_PROFILES", profiles, 1);
	free(profiles);
	ck_assert_msg(have("bash"), "bash not found");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = complete(cases[i].words, cases[i].cword);
		ck_assert_msg(strcmp(out, cases[i].want) == 0, "'%s': got '%s'", cases[i].words,
			      out);
		free(out);
	}
	/* The zsh completion at least parses, where zsh is installed. */
	if (have("zsh")) {
		char *file = t_path(t_src_dir(), "server/completions/_rigfit");
		const char *zsh[] = {"/bin/sh", "-c", "exec zsh -n \"$1\"", "sh", file, NULL};
		ck_assert_int_eq(t_run(zsh, NULL, NULL, 10000), 0);
		free(file);
	}
}
END_TEST

START_TEST(make_deb_builds_a_package_with_the_unit_and_a_system_user)
{
	char *out = NULL, *err = NULL, *deb;
	char script[512];

	if (!have("dpkg-deb")) {
		printf("install: dpkg-deb not found; skipping make deb\n");
		return;
	}
	ck_assert_msg(make("deb", NULL, &err) == 0, "make deb: %s", err);
	free(err);
	deb = t_path(t_src_dir(), "build");
	snprintf(script, sizeof(script),
		 "f=$(ls \"$1\"/rigfit_*.deb | head -n1) && dpkg-deb -f \"$f\" Package Depends && "
		 "dpkg-deb -c \"$f\" && dpkg-deb -I \"$f\" postinst && "
		 "dpkg-deb --fsys-tarfile \"$f\" | tar -xO ./lib/systemd/system/rigfit.service");
	{
		const char *argv[] = {"/bin/sh", "-c", script, "sh", deb, NULL};
		ck_assert_int_eq(t_run(argv, &out, &err, 60000), 0);
	}
	ck_assert_ptr_nonnull(strstr(out, "Package: rigfit\n"));
	ck_assert_ptr_nonnull(strstr(out, "libmicrohttpd"));
	ck_assert_ptr_nonnull(strstr(out, " ./usr/bin/rigfit\n"));
	ck_assert_ptr_nonnull(strstr(out, " ./usr/share/rigfit/profiles/models.json\n"));
	ck_assert_ptr_nonnull(strstr(out, " ./usr/share/man/man1/rigfit.1\n"));
	ck_assert_ptr_nonnull(strstr(out, "useradd --system"));
	ck_assert_ptr_nonnull(strstr(out, "\nExecStart=/usr/bin/rigfit serve"));
	ck_assert_ptr_nonnull(strstr(out, "\nUser=rigfit\n"));
	free(out);
	free(err);
	free(deb);
}
END_TEST

Suite *install_suite(void)
{
	Suite *s = suite_create("install");
	TCase *tc = tcase_create("install");

	tcase_set_timeout(tc, t_under_valgrind() ? 1800 : 300);
	tcase_add_test(tc, make_install_gives_a_binary_that_works_from_anywhere);
	tcase_add_test(tc, the_installed_unit_verifies);
	tcase_add_test(tc, the_man_page_is_lint_clean_and_names_every_command_and_flag);
	tcase_add_test(tc, the_bash_completion_completes_commands_flags_and_values);
	tcase_add_test(tc, make_deb_builds_a_package_with_the_unit_and_a_system_user);
	suite_add_tcase(s, tc);
	return s;
}
