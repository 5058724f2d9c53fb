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
			int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
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

const char *rf_suggest(const char *word, const char *const *names, size_t n)
{
	size_t len = strlen(word);
	int limit = len <= 4 ? 1 : len <= 8 ? 2 : 3, best_d = limit + 1;
	const char *best = NULL;

	for (size_t i = 0; i < n; i++) {
		int d;
		if (!names[i])
			continue;
		d = rf_edit_distance(word, names[i]);
		if (d == 0)
			return NULL;
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
	}
	return best;
}
