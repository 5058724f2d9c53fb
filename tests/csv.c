/*
 * The calibration CSV reader (see csv.h).
 */
#include "tests/csv.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tests/test.h"

/* Appends one field to a growing row. */
static void push(char ***row, int *n, int *cap, const char *s, size_t len)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*row = realloc(*row, (size_t)*cap * sizeof(**row));
	}
	(*row)[*n] = malloc(len + 1);
	memcpy((*row)[*n], s, len);
	(*row)[*n][len] = '\0';
	(*n)++;
}

struct t_csv *t_csv_read(const char *path)
{
	size_t len, i = 0;
	char *text = t_read_file(path, &len);
	struct t_csv *t;
	char **row = NULL, *field;
	int n = 0, cap = 0, rows_cap = 0;
	size_t flen = 0, fcap = 256;

	if (!text)
		return NULL;
	t = calloc(1, sizeof(*t));
	field = malloc(fcap);
	while (i <= len) {
		bool quoted = false;
		flen = 0;
		if (i < len && text[i] == '"') {
			quoted = true;
			i++;
		}
		for (; i < len; i++) {
			char c = text[i];
			if (quoted) {
				if (c == '"' && i + 1 < len && text[i + 1] == '"') {
					i++;
				} else if (c == '"') {
					quoted = false;
					continue;
				}
			} else if (c == ',' || c == '\n' || c == '\r') {
				break;
			}
			if (flen + 1 >= fcap)
				field = realloc(field, fcap *= 2);
			field[flen++] = c;
		}
		push(&row, &n, &cap, field, flen);
		if (i < len && text[i] == ',') {
			i++;
			continue;
		}
		/* End of a record. */
		if (i < len && text[i] == '\r')
			i++;
		i++;
		if (n == 1 && row[0][0] == '\0') {
			free(row[0]);
			n = 0;
			continue;
		}
		if (!t->header) {
			t->header = row;
			t->n_cols = n;
		} else {
			while (n < t->n_cols)
				push(&row, &n, &cap, "", 0);
			if (t->n_rows == rows_cap) {
				rows_cap = rows_cap ? rows_cap * 2 : 64;
				t->rows = realloc(t->rows, (size_t)rows_cap * sizeof(*t->rows));
			}
			t->rows[t->n_rows++] = row;
		}
		row = NULL;
		n = cap = 0;
	}
	free(row);
	free(field);
	free(text);
	return t;
}

int t_csv_col(const struct t_csv *t, const char *name)
{
	for (int c = 0; t && c < t->n_cols; c++)
		if (strcmp(t->header[c], name) == 0)
			return c;
	return -1;
}

const char *t_csv_get(const struct t_csv *t, int r, const char *name)
{
	int c = t_csv_col(t, name);
	if (c < 0 || r < 0 || r >= t->n_rows)
		return "";
	return t->rows[r][c];
}

int t_csv_num(const struct t_csv *t, int r, const char *name, double *out)
{
	const char *s = t_csv_get(t, r, name);
	char *end;
	double v;

	if (!*s)
		return -1;
	v = strtod(s, &end);
	if (end == s || *end != '\0')
		return -1;
	*out = v;
	return 0;
}

void t_csv_free(struct t_csv *t)
{
	if (!t)
		return;
	for (int r = 0; r < t->n_rows; r++) {
		int n = t->n_cols;
		for (int c = 0; c < n; c++)
			free(t->rows[r][c]);
		free(t->rows[r]);
	}
	for (int c = 0; c < t->n_cols; c++)
		free(t->header[c]);
	free(t->header);
	free(t->rows);
	free(t);
}
