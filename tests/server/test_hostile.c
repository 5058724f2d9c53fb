/*
 * Hostile-input replay: every file under tests/hostile/ is one malformed or abusive request,
 * sent byte for byte to the real daemon. Each must be answered promptly with its expected 4xx
 * status and the JSON error envelope ({"error":{"code","message"}}), never a 5xx, and the
 * daemon must still answer /healthz afterwards. Leaks and memory errors in the daemon surface
 * through ASan (make test) or valgrind (make valgrind) when it is stopped.
 *
 * The corpus is data, not code: a new route gets its entries by adding files. The format of
 * one entry (tests/hostile/README has examples):
 *
 *   # comments
 *   expect STATUS [CODE [FIELD]]    the answer; CODE "-" means libmicrohttpd's own reply
 *   METHOD TARGET [HTTP/x.y]        the request line (HTTP/1.1 unless given)
 *   Name: value                     headers (Host and Connection: close are added)
 *                                   a blank line, then the body: the rest of the file
 *
 * Content-Length is added for a body unless the entry sets it or Transfer-Encoding itself.
 * Anywhere after the expect line, {{N*TEXT}} stands for TEXT repeated N times and {{0xHH..}}
 * for raw bytes, so the 100k-level nesting and the megabyte bodies stay one-line files.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "tests/server/harness.h"
#include "tests/test.h"

/* A growing byte buffer. */
struct buf {
	char *p;
	size_t n, cap;
};

static void buf_add(struct buf *b, const void *data, size_t n)
{
	if (n == 0)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + n + 1)
			cap *= 2;
		b->p = realloc(b->p, cap);
		ck_assert_ptr_nonnull(b->p);
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
	b->p[b->n] = '\0';
}

/* Returns the first occurrence of needle (nlen bytes) in hay[0..n), or NULL. */
static const char *find(const char *hay, size_t n, const char *needle, size_t nlen)
{
	for (size_t i = 0; i + nlen <= n; i++)
		if (memcmp(hay + i, needle, nlen) == 0)
			return hay + i;
	return NULL;
}

/* Appends s[0..n) to out with its {{...}} generators expanded. Returns 0, or -1 with a reason
 * in why for a malformed generator. */
static int expand(struct buf *out, const char *s, size_t n, char *why, size_t whylen)
{
	size_t i = 0;

	while (i < n) {
		const char *open = i + 1 < n ? memchr(s + i, '{', n - i) : NULL;
		const char *close;
		const char *g;
		size_t glen;

		while (open && (size_t)(open - s) + 1 < n && open[1] != '{')
			open = memchr(open + 1, '{', n - (size_t)(open + 1 - s));
		if (!open || (size_t)(open - s) + 1 >= n) {
			buf_add(out, s + i, n - i);
			return 0;
		}
		buf_add(out, s + i, (size_t)(open - s) - i);
		g = open + 2;
		close = NULL;
		for (const char *p = g; p + 1 < s + n; p++)
			if (p[0] == '}' && p[1] == '}') {
				close = p;
				break;
			}
		if (!close) {
			snprintf(why, whylen, "unterminated {{");
			return -1;
		}
		glen = (size_t)(close - g);
		if (glen > 2 && g[0] == '0' && g[1] == 'x') {
			if ((glen - 2) % 2) {
				snprintf(why, whylen, "odd number of hex digits in {{%.*s}}",
					 (int)glen, g);
				return -1;
			}
			for (size_t k = 2; k < glen; k += 2) {
				char pair[3] = {g[k], g[k + 1], '\0'};
				unsigned char byte;
				if (!isxdigit((unsigned char)pair[0]) ||
				    !isxdigit((unsigned char)pair[1])) {
					snprintf(why, whylen, "bad hex in {{%.*s}}", (int)glen, g);
					return -1;
				}
				byte = (unsigned char)strtoul(pair, NULL, 16);
				buf_add(out, &byte, 1);
			}
		} else {
			char *end;
			unsigned long count = strtoul(g, &end, 10);
			if (end == g || *end != '*' || count > 16ul * 1024 * 1024) {
				snprintf(why, whylen,
					 "expected {{N*TEXT}} or {{0xHH}}, got {{%.*s}}",
					 (int)(glen < 40 ? glen : 40), g);
				return -1;
			}
			struct buf unit = {0};
			end++;
			/* The repeated text may itself be raw bytes ({{N*0x7d}}: a "}" cannot end
			 * a generator's text). */
			if (close - end > 2 && end[0] == '0' && end[1] == 'x') {
				char inner[256];
				int w = snprintf(inner, sizeof(inner), "{{%.*s}}",
						 (int)(close - end < 200 ? close - end : 200), end);
				if (expand(&unit, inner, (size_t)w, why, whylen) < 0) {
					free(unit.p);
					return -1;
				}
			} else {
				buf_add(&unit, end, (size_t)(close - end));
			}
			for (unsigned long k = 0; k < count; k++)
				buf_add(out, unit.p, unit.n);
			free(unit.p);
		}
		i = (size_t)(close - s) + 2;
	}
	return 0;
}

/* One corpus entry, parsed. */
struct entry {
	int status;
	char code[64];  /* "" : any code; "-" : libmicrohttpd's own reply, not our envelope */
	char field[64]; /* "" : not checked */
	struct buf req; /* the bytes to send */
};

/* Returns the end of the line starting at p (the '\n' or end). */
static const char *line_end(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	return nl ? nl : end;
}

/* Parses the file text[0..len) into e. Returns 0, or -1 with a reason in why. */
static int entry_parse(const char *text, size_t len, struct entry *e, char *why, size_t whylen)
{
	const char *p = text, *end = text + len, *eol;
	struct buf head = {0};
	bool has_len = false, has_body = false;
	char cl[48];

	memset(e, 0, sizeof(*e));
	/* Comments and the expect line. */
	for (;;) {
		if (p >= end) {
			snprintf(why, whylen, "no request line");
			return -1;
		}
		eol = line_end(p, end);
		if (*p == '#' || eol == p) {
			p = eol + 1;
			continue;
		}
		if (strncmp(p, "expect ", 7) != 0)
			break;
		char line[256];
		snprintf(line, sizeof(line), "%.*s", (int)(eol - p), p);
		if (sscanf(line + 7, "%d %63s %63s", &e->status, e->code, e->field) < 1) {
			snprintf(why, whylen, "bad expect line");
			return -1;
		}
		p = eol + 1;
	}
	if (e->status < 400 || e->status > 499) {
		snprintf(why, whylen, "every entry must expect a 4xx (expect %d)", e->status);
		return -1;
	}
	/* The request line. */
	eol = line_end(p, end);
	if (expand(&e->req, p, (size_t)(eol - p), why, whylen) < 0)
		return -1;
	if (!find(e->req.p, e->req.n, " HTTP/", 6))
		buf_add(&e->req, " HTTP/1.1", 9);
	buf_add(&e->req, "\r\nHost: 127.0.0.1\r\nConnection: close\r\n", 38);
	p = eol < end ? eol + 1 : end;
	/* Headers up to the blank line. */
	while (p < end) {
		eol = line_end(p, end);
		if (eol == p) {
			has_body = true;
			p = eol + 1;
			break;
		}
		if (strncasecmp(p, "Content-Length:", 15) == 0 ||
		    strncasecmp(p, "Transfer-Encoding:", 18) == 0)
			has_len = true;
		if (expand(&head, p, (size_t)(eol - p), why, whylen) < 0) {
			free(head.p);
			return -1;
		}
		buf_add(&head, "\r\n", 2);
		p = eol < end ? eol + 1 : end;
	}
	if (head.n)
		buf_add(&e->req, head.p, head.n);
	free(head.p);
	if (has_body) {
		struct buf body = {0};
		size_t blen = p <= end ? (size_t)(end - p) : 0;
		if (blen && p[blen - 1] == '\n')
			blen--; /* the file's final newline is not part of the body */
		if (expand(&body, p, blen, why, whylen) < 0) {
			free(body.p);
			return -1;
		}
		if (!has_len) {
			snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", body.n);
			buf_add(&e->req, cl, strlen(cl));
		}
		buf_add(&e->req, "\r\n", 2);
		if (body.n)
			buf_add(&e->req, body.p, body.n);
		free(body.p);
	} else {
		buf_add(&e->req, "\r\n", 2);
	}
	return 0;
}

/* Checks r against e; appends what is wrong to report. Returns true when it matched. */
static bool entry_check(const struct entry *e, const struct t_resp *r, struct buf *report,
			const char *name)
{
	char line[1024];
	char *ct = t_resp_header(r, "Content-Type");
	cJSON *j = NULL, *err, *code, *msg, *field;
	bool ok = true;

	if (r->status != e->status || r->status >= 500) {
		snprintf(line, sizeof(line), "%s: status %d, want %d; body %.300s\n", name,
			 r->status, e->status, r->body);
		buf_add(report, line, strlen(line));
		ok = false;
		goto out;
	}
	if (strcmp(e->code, "-") == 0)
		goto out; /* libmicrohttpd answered before rigfit saw the request */
	j = cJSON_ParseWithLength(r->body, r->body_len);
	err = cJSON_GetObjectItemCaseSensitive(j, "error");
	code = cJSON_GetObjectItemCaseSensitive(err, "code");
	msg = cJSON_GetObjectItemCaseSensitive(err, "message");
	field = cJSON_GetObjectItemCaseSensitive(err, "field");
	/* /mcp answers its protocol's envelope, a JSON-RPC error whose code is a number. */
	if (cJSON_IsNumber(code) &&
	    cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "jsonrpc"))) {
		char num[24];
		snprintf(num, sizeof(num), "%d", code->valueint);
		cJSON_ReplaceItemInObjectCaseSensitive(err, "code", cJSON_CreateString(num));
		code = cJSON_GetObjectItemCaseSensitive(err, "code");
	}
	if (!ct || strcmp(ct, "application/json") != 0 || !cJSON_IsString(code) ||
	    !cJSON_IsString(msg) || !msg->valuestring[0]) {
		snprintf(line, sizeof(line), "%s: not the error envelope (%s): %.300s\n", name,
			 ct ? ct : "no Content-Type", r->body);
		ok = false;
	} else if (e->code[0] && strcmp(code->valuestring, e->code) != 0) {
		snprintf(line, sizeof(line), "%s: code %s, want %s (field %s); message %.200s\n",
			 name, code->valuestring, e->code,
			 cJSON_IsString(field) ? field->valuestring : "-", msg->valuestring);
		ok = false;
	} else if (e->field[0] &&
		   (!cJSON_IsString(field) || strcmp(field->valuestring, e->field) != 0)) {
		snprintf(line, sizeof(line), "%s: field %s, want %s; message %.200s\n", name,
			 cJSON_IsString(field) ? field->valuestring : "(none)", e->field,
			 msg->valuestring);
		ok = false;
	}
	if (!ok)
		buf_add(report, line, strlen(line));
out:
	cJSON_Delete(j);
	free(ct);
	return ok;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Collects the paths of the *.http files under dir (one level of subdirectories), sorted. */
static char **corpus_list(const char *dir, size_t *n)
{
	char **list = NULL;
	size_t cap = 0;
	DIR *top = opendir(dir);
	struct dirent *de;

	*n = 0;
	ck_assert_msg(top != NULL, "no corpus at %s", dir);
	while ((de = readdir(top)) != NULL) {
		char *sub;
		DIR *d;
		struct dirent *fe;
		if (de->d_name[0] == '.')
			continue;
		sub = t_path(dir, de->d_name);
		d = opendir(sub);
		while (d && (fe = readdir(d)) != NULL) {
			size_t l = strlen(fe->d_name);
			if (l < 6 || strcmp(fe->d_name + l - 5, ".http") != 0)
				continue;
			if (*n == cap) {
				cap = cap ? cap * 2 : 64;
				list = realloc(list, cap * sizeof(*list));
			}
			list[(*n)++] = t_path(sub, fe->d_name);
		}
		if (d)
			closedir(d);
		free(sub);
	}
	closedir(top);
	if (*n)
		qsort(list, *n, sizeof(*list), cmp_str);
	return list;
}

static struct t_daemon dmn;
static char *models_dir;

static void start_daemon(void)
{
	char *profiles = t_path(t_src_dir(), "profiles");
	const char *extra[] = {"--models-dir", NULL, "--profiles", profiles, NULL};
	char *gguf;
	unsigned char *tiny;
	size_t len;

	models_dir = t_mkdtemp();
	gguf = t_path(models_dir, "tiny.gguf");
	tiny = t_gguf_write_tiny(&len);
	ck_assert_int_eq(t_write_file(gguf, tiny, len), 0);
	free(tiny);
	free(gguf);
	extra[1] = models_dir;
	t_daemon_start(&dmn, extra);
	free(profiles);
}

static void stop_daemon(void)
{
	t_daemon_stop(&dmn);
	t_rmtree(models_dir);
	free(models_dir);
	models_dir = NULL;
}

/* Entries name the daemon's --models-dir as "@models" (a test cannot know it in advance).
 * Returns the text with every occurrence replaced, malloc'd, length in *len. */
static char *substitute_models_dir(const char *text, size_t *len)
{
	struct buf out = {0};
	const char *p = text, *end = text + *len, *at;

	while ((at = find(p, (size_t)(end - p), "@models", 7)) != NULL) {
		buf_add(&out, p, (size_t)(at - p));
		buf_add(&out, models_dir, strlen(models_dir));
		p = at + 7;
	}
	buf_add(&out, p, (size_t)(end - p));
	*len = out.n;
	return out.p;
}

START_TEST(every_hostile_request_gets_a_4xx_envelope)
{
	char *dir = t_path(t_src_dir(), "tests/hostile");
	size_t n = 0, bad = 0;
	char **files = corpus_list(dir, &n);
	struct buf report = {0};

	ck_assert_msg(n >= 50, "only %zu corpus entries under %s", n, dir);
	for (size_t i = 0; i < n; i++) {
		const char *name = files[i] + strlen(dir) + 1;
		size_t len;
		char *raw = t_read_file(files[i], &len), *text;
		char why[256] = "";
		struct entry e;
		struct t_resp r;
		char line[512];

		ck_assert_ptr_nonnull(raw);
		text = substitute_models_dir(raw, &len);
		free(raw);
		if (entry_parse(text, len, &e, why, sizeof(why)) < 0)
			ck_abort_msg("%s: %s", name, why);
		free(text);
		if (t_http_raw(dmn.port, e.req.p, e.req.n, &r, 5000) != 0) {
			snprintf(line, sizeof(line), "%s: no reply within 5 s\n", name);
			buf_add(&report, line, strlen(line));
			bad++;
		} else if (!entry_check(&e, &r, &report, name)) {
			bad++;
		}
		t_resp_free(&r);
		free(e.req.p);
		/* The daemon survived it. */
		ck_assert_msg(t_http(dmn.port, "GET", "/healthz", NULL, NULL, 0, &r) == 0 &&
				      r.status == 200,
			      "/healthz failed after %s", name);
		t_resp_free(&r);
	}
	if (bad)
		fprintf(stderr, "%s", report.p); /* Check caps its message; the whole list */
	ck_assert_msg(bad == 0, "%zu of %zu entries failed:\n%.3000s", bad, n, report.p);
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
	free(report.p);
	free(dir);
}
END_TEST

/* The format itself: generators expand, a body gets its Content-Length, bad entries are
 * refused (so a typo in a corpus file fails loudly instead of testing nothing). */
START_TEST(corpus_format_expands_and_refuses)
{
	struct entry e;
	char why[256];
	static const char ok[] = "# c\nexpect 422 invalid_value n_ctx\nPOST /x\n"
				 "Content-Type: a/b\n\n{{3*ab}}{{0x00ff}}\n";
	static const char want[] = "POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
				   "Content-Type: a/b\r\nContent-Length: 8\r\n\r\nababab\0\xff";

	ck_assert_int_eq(entry_parse(ok, sizeof(ok) - 1, &e, why, sizeof(why)), 0);
	ck_assert_int_eq(e.status, 422);
	ck_assert_str_eq(e.code, "invalid_value");
	ck_assert_str_eq(e.field, "n_ctx");
	ck_assert_uint_eq(e.req.n, sizeof(want) - 1);
	ck_assert(memcmp(e.req.p, want, e.req.n) == 0);
	free(e.req.p);

	ck_assert_int_eq(entry_parse("expect 200\nGET /\n", 17, &e, why, sizeof(why)), -1);
	ck_assert_ptr_nonnull(strstr(why, "4xx"));
	free(e.req.p);
	ck_assert_int_eq(entry_parse("expect 400\nGET /{{x}}\n", 22, &e, why, sizeof(why)), -1);
	free(e.req.p);
	ck_assert_int_eq(entry_parse("expect 400\nGET /{{0x0}}\n", 24, &e, why, sizeof(why)), -1);
	free(e.req.p);
	ck_assert_int_eq(entry_parse("expect 400\nGET /{{2*a\n", 22, &e, why, sizeof(why)), -1);
	free(e.req.p);
}
END_TEST

Suite *hostile_suite(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc = tcase_create("corpus");
	TCase *fmt = tcase_create("format");

	tcase_add_checked_fixture(tc, start_daemon, stop_daemon);
	tcase_set_timeout(tc, t_under_valgrind() ? 900 : 60);
	tcase_add_test(tc, every_hostile_request_gets_a_4xx_envelope);
	suite_add_tcase(s, tc);
	tcase_add_test(fmt, corpus_format_expands_and_refuses);
	suite_add_tcase(s, fmt);
	return s;
}
