/*
 * openapi.yaml is the contract clients read, and the route table (api/routes.c) and the error
 * table (core/err.h) are what the daemon does: these tests keep the three in step. They check
 * that the spec's paths and methods are exactly the route table, both ways; that operations
 * without a security requirement are exactly the public routes; that the ErrorCode enum lists
 * exactly the api codes of the error table; that info.version is this release (VERSION); and
 * that the copy embedded in the binary (served at GET /openapi.yaml) is the file byte for byte.
 *
 * The spec is read with a small line-based parser that relies on the file's fixed layout (a
 * top-level `paths:`, two-space path keys, four-space method keys), so a test of the parser on
 * a small document comes first: if the layout changes, that is where it shows.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "core/err.h"
#include "server/embedded.h"
#include "tests/test.h"

#define SPEC_MAX_OPS 256
#define SPEC_MAX_CODES 128
#define SPEC_PATH_LEN 256
#define SPEC_CODE_LEN 64
#define REPORT_LEN 4096

struct spec_op {
	unsigned method; /* one enum api_method bit */
	char path[SPEC_PATH_LEN];
	bool public_; /* the operation says `security: []` */
	int line;
};

struct spec {
	struct spec_op ops[SPEC_MAX_OPS];
	size_t n_ops;
	char codes[SPEC_MAX_CODES][SPEC_CODE_LEN];
	size_t n_codes;
	char version[SPEC_CODE_LEN]; /* info.version */
	bool has_paths;
	bool has_error_enum;
};

/* One line of the document without its end of line, trailing blanks and trailing comment. */
struct line {
	const char *s;
	size_t len;
	size_t indent; /* leading spaces */
};

static const struct {
	const char *name;
	unsigned bit;
} spec_methods[] = {
	{"get", API_GET},         {"post", API_POST}, {"put", API_PUT}, {"delete", API_DELETE},
	{"options", API_OPTIONS}, {"head", API_HEAD}, {"patch", 0},     {"trace", 0},
};

/* Reads the line that starts at text[*pos] into *l and moves *pos past it. Returns false at the
 * end of the text. */
static bool next_line(const char *text, size_t len, size_t *pos, struct line *l)
{
	size_t start = *pos, end = *pos;

	if (start >= len)
		return false;
	while (end < len && text[end] != '\n')
		end++;
	*pos = end < len ? end + 1 : end;
	l->s = text + start;
	l->len = end - start;
	l->indent = 0;
	while (l->indent < l->len && l->s[l->indent] == ' ')
		l->indent++;
	/* A comment starts at a '#' that begins the line or follows a blank. */
	for (size_t i = l->indent; i < l->len; i++) {
		if (l->s[i] == '#' && (i == l->indent || l->s[i - 1] == ' ')) {
			l->len = i;
			break;
		}
	}
	while (l->len > l->indent &&
	       (l->s[l->len - 1] == ' ' || l->s[l->len - 1] == '\r' || l->s[l->len - 1] == '\t'))
		l->len--;
	return true;
}

/* True when the line, after its indentation, is exactly word. */
static bool line_is(const struct line *l, const char *word)
{
	size_t n = strlen(word);
	return l->len - l->indent == n && memcmp(l->s + l->indent, word, n) == 0;
}

/* Copies the key of a `key:` line (quotes removed) into buf. Returns false when the line is not
 * a lone mapping key or the key does not fit. */
static bool line_key(const struct line *l, char *buf, size_t buflen)
{
	const char *k = l->s + l->indent;
	size_t n = l->len - l->indent;

	if (n < 2 || k[n - 1] != ':')
		return false;
	n--;
	if (n >= 2 && (k[0] == '\'' || k[0] == '"') && k[n - 1] == k[0]) {
		k++;
		n -= 2;
	}
	if (n == 0 || n >= buflen)
		return false;
	memcpy(buf, k, n);
	buf[n] = '\0';
	return true;
}

/* Appends a printf-style line to the report buffer rep (size REPORT_LEN). */
static void report(char *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void report(char *rep, const char *fmt, ...)
{
	size_t used = strlen(rep);
	va_list ap;

	if (used + 1 >= REPORT_LEN)
		return;
	va_start(ap, fmt);
	vsnprintf(rep + used, REPORT_LEN - used, fmt, ap);
	va_end(ap);
}

/* What the parser knows about the line it is at. */
struct parse_state {
	struct spec *sp;
	char path[SPEC_PATH_LEN]; /* the path key being read */
	struct spec_op *op;       /* the operation being read, or NULL */
	bool in_info, in_paths, in_code_schema, in_enum;
	int lineno;
	char *err;
	size_t errlen;
};

/* Reads a line under `info:`, keeping `  version: X` (quotes removed). */
static void parse_info_line(struct parse_state *st, const struct line *l)
{
	const char *v = l->s + 11;
	size_t n = l->len > 11 ? l->len - 11 : 0;

	if (l->indent != 2 || n == 0 || memcmp(l->s + 2, "version: ", 9) != 0)
		return;
	if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0]) {
		v++;
		n -= 2;
	}
	snprintf(st->sp->version, sizeof(st->sp->version), "%.*s", (int)n, v);
}

/* Reads a line under `paths:`. Returns 0 or -1 with a reason in st->err. */
static int parse_paths_line(struct parse_state *st, const struct line *l)
{
	struct spec *sp = st->sp;
	char key[SPEC_PATH_LEN];
	size_t i, n_methods = sizeof(spec_methods) / sizeof(spec_methods[0]);

	if (l->indent == 6 && st->op && line_is(l, "security: []"))
		st->op->public_ = true;
	if (l->indent != 2 && l->indent != 4)
		return 0;
	st->op = NULL;
	if (l->indent == 2) {
		if (line_key(l, st->path, sizeof(st->path)) && st->path[0] == '/')
			return 0;
		snprintf(st->err, st->errlen, "line %d: a path key must be `  /path:`", st->lineno);
		return -1;
	}
	if (!line_key(l, key, sizeof(key)))
		return 0;
	for (i = 0; i < n_methods && strcmp(key, spec_methods[i].name) != 0; i++)
		;
	if (i == n_methods)
		return 0; /* summary, parameters... */
	if (!spec_methods[i].bit) {
		snprintf(st->err, st->errlen, "line %d: rigfit has no method `%s`", st->lineno,
			 key);
		return -1;
	}
	if (sp->n_ops == SPEC_MAX_OPS) {
		snprintf(st->err, st->errlen, "more than %d operations", SPEC_MAX_OPS);
		return -1;
	}
	st->op = &sp->ops[sp->n_ops++];
	st->op->method = spec_methods[i].bit;
	st->op->line = st->lineno;
	snprintf(st->op->path, sizeof(st->op->path), "%s", st->path);
	return 0;
}

/* Reads a line outside `paths:`, looking for `    ErrorCode:`, its `      enum:` and the
 * `        - code` items. Returns 0 or -1 with a reason in st->err. */
static int parse_codes_line(struct parse_state *st, const struct line *l)
{
	struct spec *sp = st->sp;
	const char *v = l->s + 10;
	size_t n = l->len > 10 ? l->len - 10 : 0;

	if (l->indent == 4) {
		st->in_code_schema = line_is(l, "ErrorCode:");
		st->in_enum = false;
		return 0;
	}
	if (l->indent <= 6) {
		st->in_enum = st->in_code_schema && l->indent == 6 && line_is(l, "enum:");
		sp->has_error_enum |= st->in_enum;
		return 0;
	}
	if (!st->in_enum || l->indent != 8 || n == 0 || l->s[8] != '-' || l->s[9] != ' ')
		return 0;
	if (n >= 2 && (v[0] == '\'' || v[0] == '"') && v[n - 1] == v[0]) {
		v++;
		n -= 2;
	}
	if (sp->n_codes == SPEC_MAX_CODES || n >= SPEC_CODE_LEN) {
		snprintf(st->err, st->errlen, "line %d: too many or too long error codes",
			 st->lineno);
		return -1;
	}
	memcpy(sp->codes[sp->n_codes], v, n);
	sp->codes[sp->n_codes][n] = '\0';
	sp->n_codes++;
	return 0;
}

/* Collects the operations under the top-level `paths:` and the values of the ErrorCode schema's
 * enum into *sp. Returns 0, or -1 with a reason in err (size errlen). */
static int spec_parse(const char *text, size_t len, struct spec *sp, char *err, size_t errlen)
{
	struct parse_state st = {.sp = sp, .err = err, .errlen = errlen};
	struct line l;
	size_t pos = 0;
	int rc = 0;

	memset(sp, 0, sizeof(*sp));
	while (rc == 0 && next_line(text, len, &pos, &l)) {
		st.lineno++;
		if (l.len == l.indent)
			continue; /* blank or comment only */
		if (l.indent == 0) {
			/* A top-level key ends whatever was being read. */
			st.in_info = line_is(&l, "info:");
			st.in_paths = line_is(&l, "paths:");
			sp->has_paths |= st.in_paths;
			st.in_code_schema = st.in_enum = false;
			st.op = NULL;
		} else if (st.in_info) {
			parse_info_line(&st, &l);
		} else if (st.in_paths) {
			rc = parse_paths_line(&st, &l);
		} else {
			rc = parse_codes_line(&st, &l);
		}
	}
	return rc;
}

static const struct spec_op *spec_find(const struct spec *sp, unsigned method, const char *path)
{
	for (size_t i = 0; i < sp->n_ops; i++) {
		if (sp->ops[i].method == method && strcmp(sp->ops[i].path, path) == 0)
			return &sp->ops[i];
	}
	return NULL;
}

static bool spec_has_code(const struct spec *sp, const char *code)
{
	for (size_t i = 0; i < sp->n_codes; i++) {
		if (strcmp(sp->codes[i], code) == 0)
			return true;
	}
	return false;
}

/* Returns the route for one method bit and path, or NULL. */
static const struct api_route *route_find(unsigned method, const char *path)
{
	size_t n = 0;
	const struct api_route *t = api_routes(&n);

	for (size_t i = 0; i < n; i++) {
		if (((unsigned)t[i].method & method) && strcmp(t[i].path, path) == 0)
			return &t[i];
	}
	return NULL;
}

/* Reads and parses openapi.yaml from the source tree into *sp (fails the test otherwise). */
static void load_spec(struct spec *sp)
{
	char *file = t_path(t_src_dir(), "openapi.yaml");
	size_t len = 0;
	char *text = file ? t_read_file(file, &len) : NULL;
	char err[256] = "";
	int rc;

	ck_assert_msg(text != NULL, "cannot read %s (set RIGFIT_SRC_DIR to the repository root)",
		      file ? file : "openapi.yaml");
	rc = spec_parse(text, len, sp, err, sizeof(err));
	free(text);
	ck_assert_msg(rc == 0, "openapi.yaml: %s", err);
	ck_assert_msg(sp->has_paths, "openapi.yaml has no top-level `paths:`");
	ck_assert_msg(sp->n_ops > 0, "openapi.yaml: no operation found under `paths:`");
	free(file);
}

START_TEST(test_parser_reads_the_layout)
{
	static const char doc[] = "openapi: 3.1.0\n"
				  "info:\n"
				  "  title: t\n"
				  "  license:\n"
				  "    version: not this one\n"
				  "  version: '1.2.3'\n"
				  "# paths: in a comment is not the key\n"
				  "paths:\n"
				  "  /a:\n"
				  "    summary: not a method\n"
				  "    get:\n"
				  "      security: []\n"
				  "      responses:\n"
				  "        '200':\n"
				  "          get:\n"
				  "    post:  # a comment\n"
				  "      operationId: postA\r\n"
				  "\n"
				  "  '/b/{id}':\n"
				  "    delete:\n"
				  "      security:\n"
				  "        - bearerAuth: []\n"
				  "components:\n"
				  "  /c:\n"
				  "    put:\n"
				  "  schemas:\n"
				  "    ErrorCode:\n"
				  "      type: string\n"
				  "      enum:\n"
				  "        - one\n"
				  "        - 'two'\n"
				  "      description: after the enum\n"
				  "    Other:\n"
				  "      enum:\n"
				  "        - three\n";
	static const char bad[] = "paths:\n  /x:\n    patch:\n";
	struct spec sp;
	char err[256] = "";

	ck_assert_int_eq(spec_parse(doc, sizeof(doc) - 1, &sp, err, sizeof(err)), 0);
	ck_assert_uint_eq(sp.n_ops, 3);
	ck_assert_uint_eq(sp.ops[0].method, API_GET);
	ck_assert_str_eq(sp.ops[0].path, "/a");
	ck_assert(sp.ops[0].public_);
	ck_assert_uint_eq(sp.ops[1].method, API_POST);
	ck_assert_str_eq(sp.ops[1].path, "/a");
	ck_assert(!sp.ops[1].public_);
	ck_assert_uint_eq(sp.ops[2].method, API_DELETE);
	ck_assert_str_eq(sp.ops[2].path, "/b/{id}");
	ck_assert(!sp.ops[2].public_);
	ck_assert(spec_find(&sp, API_PUT, "/c") == NULL);
	ck_assert_str_eq(sp.version, "1.2.3");
	ck_assert(sp.has_error_enum);
	ck_assert_uint_eq(sp.n_codes, 2);
	ck_assert_str_eq(sp.codes[0], "one");
	ck_assert_str_eq(sp.codes[1], "two");

	/* A method rigfit cannot route is an error, not something silently skipped. */
	ck_assert_int_eq(spec_parse(bad, strlen(bad), &sp, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "patch"));
}
END_TEST

START_TEST(test_every_route_is_documented)
{
	struct spec *sp = malloc(sizeof(*sp));
	char rep[REPORT_LEN] = "";
	size_t n = 0;
	const struct api_route *t = api_routes(&n);

	ck_assert_ptr_nonnull(sp);
	load_spec(sp);
	ck_assert_msg(n > 0, "api_routes() returned an empty table");
	for (size_t i = 0; i < n; i++) {
		for (unsigned bit = 1; bit <= API_HEAD; bit <<= 1) {
			/* OPTIONS is the CORS preflight, answered for every path alike. */
			if (!((unsigned)t[i].method & bit) || bit == API_OPTIONS)
				continue;
			if (!spec_find(sp, bit, t[i].path))
				report(rep,
				       "\n  %s %s is in the route table but not in openapi.yaml",
				       api_method_name((enum api_method)bit), t[i].path);
		}
	}
	free(sp);
	ck_assert_msg(rep[0] == '\0', "openapi.yaml misses routes:%s", rep);
}
END_TEST

START_TEST(test_every_documented_operation_is_routed)
{
	struct spec *sp = malloc(sizeof(*sp));
	char rep[REPORT_LEN] = "";

	ck_assert_ptr_nonnull(sp);
	load_spec(sp);
	for (size_t i = 0; i < sp->n_ops; i++) {
		const struct spec_op *op = &sp->ops[i];
		if (op->method == API_OPTIONS)
			continue;
		if (!route_find(op->method, op->path))
			report(rep, "\n  %s %s (openapi.yaml line %d) has no route in api_routes()",
			       api_method_name((enum api_method)op->method), op->path, op->line);
		for (size_t j = 0; j < i; j++) {
			if (sp->ops[j].method == op->method &&
			    strcmp(sp->ops[j].path, op->path) == 0)
				report(rep, "\n  %s %s is documented twice (lines %d and %d)",
				       api_method_name((enum api_method)op->method), op->path,
				       sp->ops[j].line, op->line);
		}
	}
	free(sp);
	ck_assert_msg(rep[0] == '\0', "openapi.yaml documents routes rigfit does not serve:%s",
		      rep);
}
END_TEST

START_TEST(test_public_routes_need_no_token)
{
	struct spec *sp = malloc(sizeof(*sp));
	char rep[REPORT_LEN] = "";

	ck_assert_ptr_nonnull(sp);
	load_spec(sp);
	for (size_t i = 0; i < sp->n_ops; i++) {
		const struct spec_op *op = &sp->ops[i];
		const struct api_route *r = route_find(op->method, op->path);
		bool pub;
		if (!r)
			continue; /* reported by test_every_documented_operation_is_routed */
		pub = (r->flags & API_ROUTE_PUBLIC) != 0;
		if (pub != op->public_)
			report(rep, "\n  %s %s: the route is %s but openapi.yaml line %d %s",
			       api_method_name((enum api_method)op->method), op->path,
			       pub ? "public" : "behind the token", op->line,
			       op->public_ ? "says `security: []`" : "does not say `security: []`");
	}
	free(sp);
	ck_assert_msg(rep[0] == '\0', "public routes and `security: []` disagree:%s", rep);
}
END_TEST

START_TEST(test_error_codes_match_the_table)
{
	struct spec *sp = malloc(sizeof(*sp));
	char rep[REPORT_LEN] = "";
	size_t n_table = 0;

	ck_assert_ptr_nonnull(sp);
	load_spec(sp);
	ck_assert_msg(sp->has_error_enum,
		      "openapi.yaml: no `enum:` under components/schemas/ErrorCode");
	for (int e = RF_ERR_BASE_ + 1; e < RF_ERR_END_; e++) {
		const char *code = rf_err_code(e);
		n_table++;
		if (!spec_has_code(sp, code))
			report(rep, "\n  %s is in core/err.h but not in ErrorCode", code);
	}
	for (size_t i = 0; i < sp->n_codes; i++) {
		bool found = false;
		for (int e = RF_ERR_BASE_ + 1; e < RF_ERR_END_ && !found; e++)
			found = strcmp(rf_err_code(e), sp->codes[i]) == 0;
		if (!found)
			report(rep, "\n  %s is in ErrorCode but not in core/err.h", sp->codes[i]);
		for (size_t j = 0; j < i; j++) {
			if (strcmp(sp->codes[j], sp->codes[i]) == 0)
				report(rep, "\n  %s is listed twice in ErrorCode", sp->codes[i]);
		}
	}
	free(sp);
	ck_assert_msg(n_table > 0, "the error table is empty");
	ck_assert_msg(rep[0] == '\0', "ErrorCode and the error table disagree:%s", rep);
}
END_TEST

START_TEST(test_version_is_the_release)
{
	struct spec *sp = malloc(sizeof(*sp));

	ck_assert_ptr_nonnull(sp);
	load_spec(sp);
	ck_assert_msg(strcmp(sp->version, RIGFIT_VERSION) == 0,
		      "openapi.yaml info.version is \"%s\" but this release (VERSION) is \"%s\"",
		      sp->version, RIGFIT_VERSION);
	free(sp);
}
END_TEST

START_TEST(test_embedded_copy_is_the_file)
{
	char *file = t_path(t_src_dir(), "openapi.yaml");
	size_t len = 0;
	char *text = file ? t_read_file(file, &len) : NULL;
	size_t at = 0;

	ck_assert_msg(text != NULL, "cannot read %s", file ? file : "openapi.yaml");
	while (at < len && at < rf_embed_openapi_len && text[at] == rf_embed_openapi[at])
		at++;
	ck_assert_msg(rf_embed_openapi_len == len && at == len,
		      "the embedded openapi.yaml (%zu bytes) differs from %s (%zu bytes) at byte "
		      "%zu: rebuild",
		      rf_embed_openapi_len, file, len, at);
	ck_assert_msg(rf_embed_openapi[rf_embed_openapi_len] == '\0',
		      "the embedded spec is not NUL-terminated");
	free(text);
	free(file);
}
END_TEST

/* Declared here (not at the start of a line, which the Makefile's suite list would collect)
 * for -Wmissing-prototypes; tests/run_tests.c declares it again from suites.h. */

Suite *openapi_suite(void)
{
	Suite *s = suite_create("openapi");
	TCase *tc = tcase_create("contract");

	tcase_add_test(tc, test_parser_reads_the_layout);
	tcase_add_test(tc, test_every_route_is_documented);
	tcase_add_test(tc, test_every_documented_operation_is_routed);
	tcase_add_test(tc, test_public_routes_need_no_token);
	tcase_add_test(tc, test_error_codes_match_the_table);
	tcase_add_test(tc, test_version_is_the_release);
	tcase_add_test(tc, test_embedded_copy_is_the_file);
	suite_add_tcase(s, tc);
	return s;
}
