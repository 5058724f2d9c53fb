/*
 * "Did you mean": the closest of a list of names to a word someone mistyped, by edit distance
 * (insertions, deletions, substitutions and swaps of neighbours, case-insensitive), for the
 * CLI's commands and any other closed list of names.
 *
 * Pure: no I/O, no allocation.
 */
#ifndef RIGFIT_CORE_SUGGEST_H
#define RIGFIT_CORE_SUGGEST_H

#include <stddef.h>

/* The longest word or candidate compared; longer ones never match. */
#define RF_SUGGEST_MAX_LEN 64

/* Returns the edit distance between a and b (case-insensitive, adjacent swaps count one), or
 * RF_SUGGEST_MAX_LEN + 1 when either is longer than RF_SUGGEST_MAX_LEN. */
int rf_edit_distance(const char *a, const char *b);

/* The same search over candidates offered one at a time (a catalog walked in place):
 * rf_suggest_begin, rf_suggest_offer for each, then rf_suggest_result. */
struct rf_suggest_search {
	const char *word;
	const char *best; /* the closest offered so far within the limit, or NULL */
	int best_d;
	int limit;
	int exact;          /* an offered name was the word itself */
	const char *within; /* the shortest offered name holding the word as a whole token */
};

void rf_suggest_begin(struct rf_suggest_search *s /* OUT */, const char *word);
void rf_suggest_offer(struct rf_suggest_search *s, const char *candidate);
/* Returns the suggestion (a pointer offered): the closest typo, else the shortest name that
 * holds the word as a whole token ("4090" in "RTX 4090"); NULL as rf_suggest would. */
const char *rf_suggest_result(const struct rf_suggest_search *s);

/* Returns the candidate (one of the n in names, NULLs skipped) closest to word when it is
 * close enough to be a typo: at most 1 edit for words of up to 4 characters, 2 up to 8, 3
 * beyond; the first of equally close ones. NULL when none is, or when word is one of them. */
const char *rf_suggest(const char *word, const char *const *names, size_t n);

#endif
