/*
 * A small reader for the calibration CSV files of tests/data/calibration (RFC 4180: quoted
 * fields with "" escapes and embedded commas or newlines). Test code only.
 */
#ifndef RIGFIT_TESTS_CSV_H
#define RIGFIT_TESTS_CSV_H

#include <stddef.h>

struct t_csv {
	int n_rows; /* data rows, the header not counted */
	int n_cols; /* columns of the header */
	char **header;
	char ***rows; /* rows[r][c], every row padded to n_cols with "" */
};

/* Reads path. Returns a new table (free with t_csv_free) or NULL when the file is missing. */
struct t_csv *t_csv_read(const char *path);

/* Returns the index of the header column called name, or -1. */
int t_csv_col(const struct t_csv *t, const char *name);

/* Returns row r's value in column name ("" when the column does not exist). */
const char *t_csv_get(const struct t_csv *t, int r, const char *name);

/* Parses row r's value in column name as a number; returns 0 and *out, or -1 when empty or
 * not a plain number. */
int t_csv_num(const struct t_csv *t, int r, const char *name, double *out);

/* Frees t. NULL is a no-op. */
void t_csv_free(struct t_csv *t);

#endif
