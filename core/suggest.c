/*
 * Edit distances and suggestions (see suggest.h): the optimal-string-alignment variant of
 * Damerau-Levenshtein over two rows of a fixed-size table.
 */
#include "core/suggest.h"

#include <ctype.h>
#include <string.h>

static int min3(int a, int b, int c)
{
	int m = a < b ? a : b;
	return m < c ? m : c;
}

int rf_edit_distance(const char *a, const char *b)
{
	int prev2[RF_SUGGEST_MAX_LEN + 1], prev[RF_SUGGEST_MAX_LEN + 1],
		cur[RF_SUGGEST_MAX_LEN + 1];
	size_t la = strlen(a), lb = strlen(b);

	if (la > RF_SUGGEST_MAX_LEN || lb > RF_SUGGEST_MAX_LEN)
		return RF_SUGGEST_MAX_LEN + 1;
	for (size_t j = 0; j <= lb; j++)
		prev[j] = prev2[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		cur[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]),
			    cb = tolower((unsigned char)b[j - 1]);
			int cost = ca != cb;
			cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < cur[j])
				cur[j] = prev2[j - 2] + 1;
		}
		memcpy(prev2, prev, sizeof(prev));
		memcpy(prev, cur, sizeof(cur));
	}
	return prev[lb];
}

void rf_suggest_begin(struct rf_suggest_search *s, const char *word)
{
	size_t len = strlen(word);

	s->word = word;
	s->best = NULL;
	s->limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
	s->best_d = s->limit + 1;
	s->exact = 0;
	s->within = NULL;
}

/* Whether word (3 characters or more) stands in name as a whole token, ignoring case. */
static int holds_token(const char *name, const char *word)
{
	size_t wl = strlen(word), nl = strlen(name);

	if (wl < 3 || wl >= nl)
		return 0;
	for (size_t i = 0; i + wl <= nl; i++) {
		size_t k = 0;
		while (k < wl &&
		       tolower((unsigned char)name[i + k]) == tolower((unsigned char)word[k]))
			k++;
		if (k == wl && (i == 0 || !isalnum((unsigned char)name[i - 1])) &&
		    (i + wl == nl || !isalnum((unsigned char)name[i + wl])))
			return 1;
	}
	return 0;
}

void rf_suggest_offer(struct rf_suggest_search *s, const char *candidate)
{
	int d;

	if (!candidate || s->exact)
		return;
	d = rf_edit_distance(s->word, candidate);
	if (d == 0)
		s->exact = 1;
	else if (d < s->best_d) {
		s->best_d = d;
		s->best = candidate;
	}
	if (holds_token(candidate, s->word) &&
	    (!s->within || strlen(candidate) < strlen(s->within)))
		s->within = candidate;
}

const char *rf_suggest_result(const struct rf_suggest_search *s)
{
	return s->exact ? NULL : s->best ? s->best : s->within;
}

const char *rf_suggest(const char *word, const char *const *names, size_t n)
{
	struct rf_suggest_search s;

	rf_suggest_begin(&s, word);
	for (size_t i = 0; i < n; i++)
		rf_suggest_offer(&s, names[i]);
	return rf_suggest_result(&s);
}
