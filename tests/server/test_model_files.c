/*
 * Tests of server/models/model_files.c: real files, directories, symlinks and a FIFO in a temporary
 * tree stand in for a models directory and the rest of the machine. Every refusal is checked
 * for its code and for a message that names no path outside the models directory.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/fit/gguf.h"
#include "server/models/model_files.h"
#include "tests/test.h"

/* <root>/models (the models dir), <root>/models2 (a sibling with a common prefix) and
 * <root>/outside, each holding a small GGUF file x.gguf. */
struct tree {
	char *root;
	char *models;
	char *models2;
	char *outside;
};

static char gguf_bytes[1000];

static void fill_gguf(void)
{
	memcpy(gguf_bytes, "GGUF", 4);
	for (size_t i = 4; i < sizeof(gguf_bytes); i++)
		gguf_bytes[i] = (char)(i * 7 + 3);
}

static char *mkdir_in(const char *parent, const char *name)
{
	char *p = t_path(parent, name);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	return p;
}

static void write_in(const char *dir, const char *name, const void *data, size_t len)
{
	char *p = t_path(dir, name);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(t_write_file(p, data, len), 0);
	free(p);
}

static void link_in(const char *dir, const char *name, const char *target)
{
	char *p = t_path(dir, name);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(symlink(target, p), 0);
	free(p);
}

static void tree_make(struct tree *t)
{
	fill_gguf();
	t->root = t_mkdtemp();
	ck_assert_ptr_nonnull(t->root);
	t->models = mkdir_in(t->root, "models");
	t->models2 = mkdir_in(t->root, "models2");
	t->outside = mkdir_in(t->root, "outside");
	write_in(t->models, "x.gguf", gguf_bytes, sizeof(gguf_bytes));
	write_in(t->models2, "x.gguf", gguf_bytes, sizeof(gguf_bytes));
	write_in(t->outside, "x.gguf", gguf_bytes, sizeof(gguf_bytes));
}

static void tree_free(struct tree *t)
{
	t_rmtree(t->root);
	free(t->root);
	free(t->models);
	free(t->models2);
	free(t->outside);
}

/* Reads path with the single models dir dir; checks that a refusal leaves the outputs alone
 * and says something that names neither the outside dir nor the temporary root. */
static int read_one(const struct tree *t, const char *dir, const char *path, size_t cap, char **buf,
		    size_t *len, uint64_t *size)
{
	const char *dirs[] = {dir};
	char msg[256];
	int rc;

	*buf = (char *)&rc; /* a sentinel: must be untouched on error */
	*len = 12345;
	*size = 67890;
	rc = rf_model_file_read(dirs, 1, path, cap, buf, len, size, msg, sizeof(msg));
	if (rc == 0) {
		ck_assert_str_eq(msg, "");
		return 0;
	}
	ck_assert_ptr_eq(*buf, (char *)&rc);
	ck_assert_uint_eq(*len, 12345);
	ck_assert_uint_eq(*size, 67890);
	ck_assert_uint_gt(strlen(msg), 0);
	ck_assert_ptr_null(strchr(msg, '\n'));
	ck_assert_ptr_null(strstr(msg, t->root));
	ck_assert_ptr_null(strstr(msg, "outside"));
	ck_assert_ptr_null(strstr(msg, "/"));
	*buf = NULL;
	return rc;
}

static char *join3(const char *a, const char *b, const char *c)
{
	char *ab = t_path(a, b), *abc;
	ck_assert_ptr_nonnull(ab);
	abc = t_path(ab, c);
	ck_assert_ptr_nonnull(abc);
	free(ab);
	return abc;
}

START_TEST(inside_reads_whole_file)
{
	struct tree t;
	char *p, *buf;
	size_t len;
	uint64_t size;

	tree_make(&t);
	p = t_path(t.models, "x.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, RF_MODEL_HEADER_CAP, &buf, &len, &size), 0);
	ck_assert_uint_eq(len, sizeof(gguf_bytes));
	ck_assert_uint_eq(size, sizeof(gguf_bytes));
	ck_assert_mem_eq(buf, gguf_bytes, sizeof(gguf_bytes));
	free(buf);
	free(p);
	tree_free(&t);
}
END_TEST

START_TEST(cap_is_respected)
{
	struct tree t;
	char *p, *buf;
	size_t len;
	uint64_t size;

	tree_make(&t);
	p = t_path(t.models, "x.gguf");
	/* The buffer is exactly as long as the bytes read: ASan reports any write past it. */
	ck_assert_int_eq(read_one(&t, t.models, p, 100, &buf, &len, &size), 0);
	ck_assert_uint_eq(len, 100);
	ck_assert_uint_eq(size, sizeof(gguf_bytes));
	ck_assert_mem_eq(buf, gguf_bytes, 100);
	free(buf);
	/* A cap that leaves fewer bytes than the magic cannot show a GGUF file. */
	ck_assert_int_eq(read_one(&t, t.models, p, 3, &buf, &len, &size), RF_E_INVALID_VALUE);
	ck_assert_int_eq(read_one(&t, t.models, p, 0, &buf, &len, &size), RF_E_INVALID_VALUE);
	free(p);
	tree_free(&t);
}
END_TEST

/* Appends v's n little-endian bytes at *p. */
static void put_le(char **p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		*(*p)++ = (char)(v >> (8 * i));
}

/* Writes dir/name: a GGUF file whose header holds one key with a pad-byte string and one F32
 * tensor of 32 elements, then data padded out to total bytes (a sparse file). Returns the
 * header's length. */
static size_t write_padded_gguf(const char *dir, const char *name, size_t pad, off_t total)
{
	size_t cap = pad + 256, n;
	char *b = calloc(1, cap), *p = b, *path = t_path(dir, name);
	FILE *f;

	ck_assert_ptr_nonnull(b);
	memcpy(p, "GGUF", 4);
	p += 4;
	put_le(&p, 3, 4); /* version */
	put_le(&p, 1, 8); /* tensors */
	put_le(&p, 1, 8); /* keys */
	put_le(&p, 5, 8);
	memcpy(p, "x.pad", 5);
	p += 5;
	put_le(&p, 8, 4); /* string */
	put_le(&p, pad, 8);
	memset(p, 'a', pad);
	p += pad;
	put_le(&p, 1, 8);
	*p++ = 't';
	put_le(&p, 1, 4);  /* dims */
	put_le(&p, 32, 8); /* ne[0] */
	put_le(&p, 0, 4);  /* F32 */
	put_le(&p, 0, 8);  /* offset */
	n = (size_t)(p - b);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(b, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(truncate(path, total), 0);
	free(b);
	free(path);
	return n;
}

/* Only the header is read: a 100 MiB file with a small header costs one first read, and one
 * whose header is larger than that is read in growing steps until the header is whole, never
 * up to the cap. Either way the bytes read parse. */
START_TEST(only_the_header_is_read)
{
	struct tree t;
	const size_t pads[] = {16, 700000, 3000000};
	const off_t total = (off_t)100 << 20;

	tree_make(&t);
	for (size_t i = 0; i < sizeof(pads) / sizeof(pads[0]); i++) {
		size_t head = write_padded_gguf(t.models, "big.gguf", pads[i], total), len;
		char *p = t_path(t.models, "big.gguf"), *buf;
		struct gguf_file *g = NULL;
		uint64_t size;

		ck_assert_int_eq(read_one(&t, t.models, p, RF_MODEL_HEADER_CAP, &buf, &len, &size),
				 0);
		ck_assert_uint_eq(size, (uint64_t)total);
		ck_assert_uint_ge(len, head);
		/* At most twice what the header needs, past the first read. */
		ck_assert_msg(len <= (head < (256u << 10) ? (256u << 10) : 2 * head),
			      "%zu bytes read for a header of %zu", len, head);
		ck_assert_int_eq(gguf_parse(buf, len, size, &g, NULL, 0), 0);
		ck_assert_uint_eq(g->header_bytes, head);
		gguf_free(g);
		free(buf);
		free(p);
	}
	tree_free(&t);
}
END_TEST

START_TEST(nested_and_untidy_paths_inside)
{
	struct tree t;
	char *sub, *deep, *p, *buf, *dir_slash;
	size_t len;
	uint64_t size;

	tree_make(&t);
	sub = mkdir_in(t.models, "sub");
	deep = mkdir_in(sub, "deep");
	write_in(deep, "y.gguf", gguf_bytes, sizeof(gguf_bytes));
	p = join3(t.models, "./sub//deep/../deep", "y.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, RF_MODEL_HEADER_CAP, &buf, &len, &size), 0);
	ck_assert_mem_eq(buf, gguf_bytes, sizeof(gguf_bytes));
	free(buf);
	free(p);
	/* The configured dir may itself be untidy. */
	dir_slash = join3(t.root, "outside/../models", "");
	p = join3(t.models, "sub/deep", "y.gguf");
	ck_assert_int_eq(read_one(&t, dir_slash, p, RF_MODEL_HEADER_CAP, &buf, &len, &size), 0);
	free(buf);
	free(p);
	free(dir_slash);
	free(deep);
	free(sub);
	tree_free(&t);
}
END_TEST

START_TEST(outside_is_forbidden)
{
	struct tree t;
	char *p, *buf;
	size_t len;
	uint64_t size;

	tree_make(&t);
	p = t_path(t.outside, "x.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, RF_MODEL_HEADER_CAP, &buf, &len, &size),
			 RF_E_FORBIDDEN);
	free(p);
	ck_assert_int_eq(read_one(&t, t.models, "/etc/passwd", 64, &buf, &len, &size),
			 RF_E_FORBIDDEN);
	/* A missing file outside is refused the same way: no probing what exists. */
	p = t_path(t.outside, "missing.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	p = join3(t.outside, "no/such/dir", "missing.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	/* The models dir itself is not a file inside it. */
	ck_assert_int_eq(read_one(&t, t.models, t.models, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	tree_free(&t);
}
END_TEST

START_TEST(dotdot_traversal_is_forbidden)
{
	struct tree t;
	char *p, *buf;
	size_t len;
	uint64_t size;

	tree_make(&t);
	p = join3(t.models, "../outside", "x.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	p = join3(t.models, "../../../../../../../..", "etc/passwd");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	p = join3(t.models, "../outside", "missing.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	/* Out and back in again is inside. */
	p = join3(t.models, "../models", "x.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), 0);
	free(buf);
	free(p);
	tree_free(&t);
}
END_TEST

START_TEST(symlink_out_is_forbidden)
{
	struct tree t;
	char *target, *p, *buf;
	size_t len;
	uint64_t size;

	tree_make(&t);
	target = t_path(t.outside, "x.gguf");
	link_in(t.models, "evil.gguf", target);
	link_in(t.models, "evildir", t.outside);
	link_in(t.models, "rel.gguf", "../outside/x.gguf");
	p = t_path(t.models, "evil.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	p = t_path(t.models, "rel.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	p = join3(t.models, "evildir", "x.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	/* Through a symlinked dir that leads out, a missing file is still FORBIDDEN. */
	p = join3(t.models, "evildir", "missing.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	free(target);
	tree_free(&t);
}
END_TEST

START_TEST(symlink_inside_is_read)
{
	struct tree t;
	char *target, *p, *buf, *dirlink;
	size_t len;
	uint64_t size;

	tree_make(&t);
	target = t_path(t.models, "x.gguf");
	link_in(t.models, "abs.gguf", target);
	link_in(t.models, "rel.gguf", "x.gguf");
	link_in(t.models, "chain.gguf", "rel.gguf");
	p = t_path(t.models, "abs.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), 0);
	ck_assert_uint_eq(len, 64);
	ck_assert_uint_eq(size, sizeof(gguf_bytes));
	ck_assert_mem_eq(buf, gguf_bytes, 64);
	free(buf);
	free(p);
	p = t_path(t.models, "chain.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), 0);
	free(buf);
	free(p);
	/* A models dir configured through a symlink holds what its target holds. */
	dirlink = t_path(t.root, "models-link");
	ck_assert_int_eq(symlink(t.models, dirlink), 0);
	p = t_path(dirlink, "x.gguf");
	ck_assert_int_eq(read_one(&t, dirlink, p, 64, &buf, &len, &size), 0);
	free(buf);
	free(p);
	ck_assert_int_eq(read_one(&t, dirlink, target, 64, &buf, &len, &size), 0);
	free(buf);
	free(dirlink);
	free(target);
	tree_free(&t);
}
END_TEST

START_TEST(sibling_prefix_is_forbidden)
{
	struct tree t;
	char *p, *buf, *dirs_slash;
	size_t len;
	uint64_t size;

	tree_make(&t);
	p = t_path(t.models2, "x.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	dirs_slash = join3(t.root, "models", "");
	ck_assert_int_eq(read_one(&t, dirs_slash, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(dirs_slash);
	free(p);
	p = t_path(t.models2, "missing.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	tree_free(&t);
}
END_TEST

START_TEST(no_dirs_is_forbidden)
{
	struct tree t;
	const char *dirs[] = {NULL};
	char msg[256], *buf = NULL, *p;
	size_t len = 0;
	uint64_t size = 0;

	tree_make(&t);
	p = t_path(t.models, "x.gguf");
	ck_assert_int_eq(rf_model_file_read(NULL, 0, p, 64, &buf, &len, &size, msg, sizeof(msg)),
			 RF_E_FORBIDDEN);
	ck_assert_ptr_nonnull(strstr(msg, "no models directory"));
	ck_assert_int_eq(rf_model_file_read(dirs, 0, p, 64, &buf, &len, &size, msg, sizeof(msg)),
			 RF_E_FORBIDDEN);
	/* A configured entry that is NULL or empty holds nothing. */
	ck_assert_int_eq(rf_model_file_read(dirs, 1, p, 64, &buf, &len, &size, msg, sizeof(msg)),
			 RF_E_FORBIDDEN);
	dirs[0] = "";
	ck_assert_int_eq(rf_model_file_read(dirs, 1, p, 64, &buf, &len, &size, msg, sizeof(msg)),
			 RF_E_FORBIDDEN);
	ck_assert_ptr_null(buf);
	free(p);
	tree_free(&t);
}
END_TEST

START_TEST(missing_dir_is_forbidden)
{
	struct tree t;
	char *gone, *p, *buf;
	size_t len;
	uint64_t size;

	tree_make(&t);
	gone = t_path(t.root, "gone");
	p = t_path(gone, "x.gguf");
	ck_assert_int_eq(read_one(&t, gone, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	p = t_path(t.models, "x.gguf");
	ck_assert_int_eq(read_one(&t, gone, p, 64, &buf, &len, &size), RF_E_FORBIDDEN);
	free(p);
	free(gone);
	tree_free(&t);
}
END_TEST

START_TEST(second_dir_matches)
{
	struct tree t;
	const char *dirs[3];
	char msg[256], *buf = NULL, *p;
	size_t len = 0;
	uint64_t size = 0;

	tree_make(&t);
	dirs[0] = "/nonexistent-rigfit-dir";
	dirs[1] = t.models;
	dirs[2] = t.models2;
	p = t_path(t.models2, "x.gguf");
	ck_assert_int_eq(rf_model_file_read(dirs, 3, p, 64, &buf, &len, &size, msg, sizeof(msg)),
			 0);
	ck_assert_uint_eq(len, 64);
	free(buf);
	free(p);
	/* msg may be NULL. */
	p = t_path(t.outside, "x.gguf");
	ck_assert_int_eq(rf_model_file_read(dirs, 3, p, 64, &buf, &len, &size, NULL, 0),
			 RF_E_FORBIDDEN);
	free(p);
	tree_free(&t);
}
END_TEST

START_TEST(missing_inside_is_not_found)
{
	struct tree t;
	char *p, *buf;
	size_t len;
	uint64_t size;

	tree_make(&t);
	p = t_path(t.models, "missing.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_NOT_FOUND);
	free(p);
	p = join3(t.models, "no/such", "missing.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_NOT_FOUND);
	free(p);
	/* A component that is a file, and a dangling symlink inside. */
	p = join3(t.models, "x.gguf", "y.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_NOT_FOUND);
	free(p);
	link_in(t.models, "dangling.gguf", "nowhere.gguf");
	p = t_path(t.models, "dangling.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_NOT_FOUND);
	free(p);
	tree_free(&t);
}
END_TEST

START_TEST(not_a_regular_file)
{
	struct tree t;
	char *sub, *fifo, *buf;
	size_t len;
	uint64_t size;
	struct timespec t0, t1;

	tree_make(&t);
	sub = mkdir_in(t.models, "sub.gguf");
	ck_assert_int_eq(read_one(&t, t.models, sub, 64, &buf, &len, &size), RF_E_INVALID_VALUE);
	fifo = t_path(t.models, "fifo.gguf");
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(read_one(&t, t.models, fifo, 64, &buf, &len, &size), RF_E_INVALID_VALUE);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 2);
	ck_assert_int_eq(read_one(&t, t.models, "/dev/null", 64, &buf, &len, &size),
			 RF_E_FORBIDDEN);
	free(fifo);
	free(sub);
	tree_free(&t);
}
END_TEST

START_TEST(bad_paths_are_invalid)
{
	struct tree t;
	char *buf, *p, *longp;
	size_t len, n = 5000;
	uint64_t size;

	tree_make(&t);
	ck_assert_int_eq(read_one(&t, t.models, "", 64, &buf, &len, &size), RF_E_INVALID_VALUE);
	ck_assert_int_eq(read_one(&t, t.models, "models/x.gguf", 64, &buf, &len, &size),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(read_one(&t, t.models, "./x.gguf", 64, &buf, &len, &size),
			 RF_E_INVALID_VALUE);
	ck_assert_int_eq(read_one(&t, t.models, NULL, 64, &buf, &len, &size), RF_E_INVALID_VALUE);
	/* Longer than PATH_MAX (4096 on Linux), made of "/./" steps inside the dir. */
	p = t_path(t.models, "x.gguf");
	longp = malloc(n + strlen(p) + 1);
	ck_assert_ptr_nonnull(longp);
	memcpy(longp, t.models, strlen(t.models));
	for (size_t i = strlen(t.models); i < n; i += 2)
		memcpy(longp + i, "/.", 2);
	snprintf(longp + n, strlen(p) + 1, "%s", "/x.gguf");
	ck_assert_int_eq(read_one(&t, t.models, longp, 64, &buf, &len, &size), RF_E_INVALID_VALUE);
	free(longp);
	free(p);
	tree_free(&t);
}
END_TEST

START_TEST(not_gguf_is_invalid)
{
	struct tree t;
	char *p, *buf;
	size_t len;
	uint64_t size;

	tree_make(&t);
	write_in(t.models, "text.gguf", "hello, world\n", 13);
	write_in(t.models, "empty.gguf", "", 0);
	write_in(t.models, "short.gguf", "GGU", 3);
	write_in(t.models, "magic.gguf", "GGUF", 4);
	p = t_path(t.models, "text.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_INVALID_VALUE);
	free(p);
	p = t_path(t.models, "empty.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_INVALID_VALUE);
	free(p);
	p = t_path(t.models, "short.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_INVALID_VALUE);
	free(p);
	/* The magic alone passes here; the header parser judges the rest. */
	p = t_path(t.models, "magic.gguf");
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), 0);
	ck_assert_uint_eq(len, 4);
	ck_assert_uint_eq(size, 4);
	free(buf);
	free(p);
	tree_free(&t);
}
END_TEST

START_TEST(unreadable_is_io)
{
	struct tree t;
	char *p, *buf;
	size_t len;
	uint64_t size;

	/* root reads any file whatever its mode. */
	if (geteuid() == 0)
		return;
	tree_make(&t);
	p = t_path(t.models, "x.gguf");
	ck_assert_int_eq(chmod(p, 0), 0);
	ck_assert_int_eq(read_one(&t, t.models, p, 64, &buf, &len, &size), RF_E_IO);
	free(p);
	tree_free(&t);
}
END_TEST

Suite *model_files_suite(void)
{
	Suite *s = suite_create("model_files");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, inside_reads_whole_file);
	tcase_add_test(tc, cap_is_respected);
	tcase_add_test(tc, only_the_header_is_read);
	tcase_add_test(tc, nested_and_untidy_paths_inside);
	tcase_add_test(tc, outside_is_forbidden);
	tcase_add_test(tc, dotdot_traversal_is_forbidden);
	tcase_add_test(tc, symlink_out_is_forbidden);
	tcase_add_test(tc, symlink_inside_is_read);
	tcase_add_test(tc, sibling_prefix_is_forbidden);
	tcase_add_test(tc, no_dirs_is_forbidden);
	tcase_add_test(tc, missing_dir_is_forbidden);
	tcase_add_test(tc, second_dir_matches);
	tcase_add_test(tc, missing_inside_is_not_found);
	tcase_add_test(tc, not_a_regular_file);
	tcase_add_test(tc, bad_paths_are_invalid);
	tcase_add_test(tc, not_gguf_is_invalid);
	tcase_add_test(tc, unreadable_is_io);
	suite_add_tcase(s, tc);
	return s;
}
