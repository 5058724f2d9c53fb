/*
 * Device profiles (see device.h): name normalisation, exact resolution against a loaded
 * table, the duplicate check the loader runs, and the small derived facts (bandwidth from the
 * memory bus, best documented compute rate, unified-memory working set).
 */
#include "core/hw/device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

#include "core/err.h"
#include "core/format.h"
#include "core/suggest.h"
#include "core/numparse.h"

#define MAX_TOKENS 48
#define TOKEN_LEN 32
#define MAX_CANDIDATES 16

/* Words that vendors and tools add around the part name; dropping them lets "NVIDIA GeForce RTX
 * 4090", "GeForce RTX 4090" and "RTX 4090" meet. None of them tells two parts apart. */
static const char *const noise_words[] = {
	"nvidia", "geforce", "tesla",    "amd",        "radeon", "apple",     "intel",
	"gpu",    "igpu",    "graphics", "generation", "series", "developer", "kit",
};

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char lower(char c)
{
	return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!is_digit(*s))
			return false;
	return true;
}

static bool is_noise(const char *tok)
{
	for (size_t i = 0; i < sizeof(noise_words) / sizeof(noise_words[0]); i++)
		if (strcmp(tok, noise_words[i]) == 0)
			return true;
	return false;
}

/* Copies a lower-cased name into buf with "(r)" and "(tm)" blanked (Intel writes
 * "Intel(R) Arc(TM) A770 Graphics"); they are removed as text because a lone "r" token is part
 * of names such as "R9". */
static void strip_marks(const char *name, size_t len, char *buf)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = lower(name[i]);
	buf[len] = '\0';
	for (i = 0; i < len; i++) {
		if (buf[i] != '(')
			continue;
		if (i + 2 < len && buf[i + 1] == 'r' && buf[i + 2] == ')')
			memset(buf + i, ' ', 3);
		else if (i + 3 < len && buf[i + 1] == 't' && buf[i + 2] == 'm' && buf[i + 3] == ')')
			memset(buf + i, ' ', 4);
	}
}

/* Splits buf into tokens of letters or digits. Returns the count or -1 when a token or the
 * count exceeds the caps. */
static int tokenize(const char *buf, char toks[MAX_TOKENS][TOKEN_LEN])
{
	int n = 0;
	size_t i = 0;

	while (buf[i]) {
		size_t start, len;
		bool digit;

		if (!is_alpha(buf[i]) && !is_digit(buf[i])) {
			i++;
			continue;
		}
		start = i;
		digit = is_digit(buf[i]);
		while (buf[i] && (digit ? is_digit(buf[i]) : is_alpha(buf[i])))
			i++;
		len = i - start;
		if (n >= MAX_TOKENS || len >= TOKEN_LEN)
			return -1;
		memcpy(toks[n], buf + start, len);
		toks[n][len] = '\0';
		n++;
	}
	return n;
}

int device_normalize(const char *name, char *key, size_t keylen, int *size_gib)
{
	char buf[DEVICE_NAME_LEN];
	char toks[MAX_TOKENS][TOKEN_LEN];
	size_t len, used = 0;
	int n, size = 0;

	if (!name || !key || keylen == 0 || !size_gib)
		return RF_E_INVALID_VALUE;
	len = strnlen(name, DEVICE_NAME_LEN);
	if (len == 0)
		return RF_E_INVALID_VALUE;
	if (len >= DEVICE_NAME_LEN)
		return RF_E_TOO_LARGE;
	strip_marks(name, len, buf);
	n = tokenize(buf, toks);
	if (n < 0)
		return RF_E_TOO_LARGE;
	key[0] = '\0';
	for (int i = 0; i < n; i++) {
		const char *t = toks[i];
		size_t tl;

		if (all_digits(t) && i + 1 < n &&
		    (strcmp(toks[i + 1], "gb") == 0 || strcmp(toks[i + 1], "gib") == 0)) {
			uint64_t v;
			if (rf_parse_u64(t, strlen(t), 1000000, &v) < 0)
				return RF_E_INVALID_VALUE;
			size = (int)v;
			i++;
			continue;
		}
		if (is_noise(t))
			continue;
		if (strcmp(t, "pci") == 0 && i + 1 < n && strcmp(toks[i + 1], "e") == 0) {
			t = "pcie";
			i++;
		} else if (strcmp(t, "sxm") == 0 && i + 1 < n && all_digits(toks[i + 1]) &&
			   strlen(toks[i + 1]) == 1) {
			i++;
		}
		tl = strlen(t);
		if (used + tl + (used ? 1 : 0) + 1 > keylen)
			return RF_E_TOO_LARGE;
		if (used)
			key[used++] = ' ';
		memcpy(key + used, t, tl);
		used += tl;
		key[used] = '\0';
	}
	if (used == 0)
		return RF_E_INVALID_VALUE;
	*size_gib = size;
	return 0;
}

void device_profile_init(struct device_profile *p)
{
	memset(p, 0, sizeof(*p));
	p->kind = DEVICE_KIND_GPU;
	p->memory_gib = -1;
	p->memory_bandwidth_gbs = -1;
	p->memory_bandwidth_measured_gbs = -1;
	p->fp16_tflops = -1;
	p->fp16_kind = DEVICE_FP16_UNKNOWN;
	p->fp32_tflops = -1;
	p->bf16_tflops = -1;
	p->sustained_gemm_tflops = -1;
	p->decode_bandwidth_share = -1;
	p->usd_per_hour = -1;
}

/* Offers the ends of name that keep two words or more ("NVIDIA GeForce RTX 3060": "GeForce RTX
 * 3060", "RTX 3060"), as people write GPU names without the vendor's prefix. */
static void offer_tails(struct rf_suggest_search *s, const char *name)
{
	for (const char *sp = strchr(name, ' '); sp; sp = strchr(sp + 1, ' '))
		if (strchr(sp + 1, ' '))
			rf_suggest_offer(s, sp + 1);
}

const char *device_suggest(const struct device_table *t, const char *name, bool accelerators_only)
{
	struct rf_suggest_search s;

	if (!t || !name)
		return NULL;
	rf_suggest_begin(&s, name);
	for (int i = 0; i < t->n; i++) {
		const struct device_profile *p = &t->devices[i];
		if (accelerators_only && p->kind == DEVICE_KIND_CPU)
			continue;
		rf_suggest_offer(&s, p->id);
		rf_suggest_offer(&s, p->name);
		offer_tails(&s, p->name);
		for (int a = 0; a < p->n_aliases; a++) {
			rf_suggest_offer(&s, p->aliases[a]);
			offer_tails(&s, p->aliases[a]);
		}
	}
	return rf_suggest_result(&s);
}

void device_table_clear(struct device_table *t)
{
	if (!t)
		return;
	free(t->devices);
	free(t->name_keys);
	free(t->name_keys_pool);
	free(t->hash_buckets);
	free(t->tail_buckets);
	memset(t, 0, sizeof(*t));
}

/* The names an entry answers to: its id, its name and its aliases. */
static int entry_n_names(const struct device_profile *p)
{
	return 2 + p->n_aliases;
}

static const char *entry_name(const struct device_profile *p, int i)
{
	if (i == 0)
		return p->id;
	if (i == 1)
		return p->name;
	return p->aliases[i - 2];
}

/* True when a name of p that carries size asize (0: none) may be what a query with size qsize
 * (0: none) meant. */
static bool size_ok(const struct device_profile *p, int asize, int qsize)
{
	if (qsize == 0 || p->memory_configurable)
		return true;
	if (asize > 0)
		return asize == qsize;
	if (p->memory_gib > 0)
		return fabs(p->memory_gib - qsize) < 1.0;
	return true;
}

/* FNV-1a of a name key: the index compares these before the keys themselves. */
static uint32_t key_hash(const char *key)
{
	uint32_t h = 2166136261u;

	for (const unsigned char *c = (const unsigned char *)key; *c; c++) {
		h ^= *c;
		h *= 16777619u;
	}
	return h;
}

/* The bucket of hash h in buckets (n a power of two): the one holding h's first name, or the
 * empty one where it would go. keys' hashes are read with which (hash or tail_hash). */
static size_t bucket_of(const uint32_t *buckets, size_t n, const struct device_name_key *keys,
			bool tail, uint32_t h)
{
	size_t b = h & (n - 1);

	while (buckets[b] != DEVICE_KEY_NONE &&
	       (tail ? keys[buckets[b]].tail_hash : keys[buckets[b]].hash) != h)
		b = (b + 1) & (n - 1);
	return b;
}

/* Links keys of equal hash (and of equal tail_hash) in index order and fills t's buckets with
 * each hash's first name. Returns 0 or RF_E_NOMEM (t unchanged). */
static int hash_buckets_build(struct device_name_key *keys, size_t n_keys, struct device_table *t)
{
	size_t n = 16;
	uint32_t *by_hash, *by_tail;

	if (n_keys >= DEVICE_KEY_NONE / 4)
		return RF_E_NOMEM;
	while (n < 2 * n_keys + 1)
		n *= 2;
	by_hash = malloc(n * sizeof(*by_hash));
	by_tail = malloc(n * sizeof(*by_tail));
	if (!by_hash || !by_tail) {
		free(by_hash);
		free(by_tail);
		return RF_E_NOMEM;
	}
	memset(by_hash, 0xff, n * sizeof(*by_hash));
	memset(by_tail, 0xff, n * sizeof(*by_tail));
	/* From the last name back, so that each bucket ends holding its hash's first name and
	 * each name links to the next one after it. */
	for (size_t k = n_keys; k-- > 0;) {
		size_t b = bucket_of(by_hash, n, keys, false, keys[k].hash);
		keys[k].next_same_hash = by_hash[b];
		by_hash[b] = (uint32_t)k;
		keys[k].next_same_tail = DEVICE_KEY_NONE;
		if (keys[k].tail_hash == 0)
			continue;
		b = bucket_of(by_tail, n, keys, true, keys[k].tail_hash);
		keys[k].next_same_tail = by_tail[b];
		by_tail[b] = (uint32_t)k;
	}
	free(t->hash_buckets);
	free(t->tail_buckets);
	t->hash_buckets = by_hash;
	t->tail_buckets = by_tail;
	t->n_buckets = n;
	return 0;
}

int device_table_index(struct device_table *t)
{
	struct device_name_key *keys = NULL;
	char *pool = NULL;
	size_t n_keys = 0, cap_keys = 0, used = 0, cap_pool = 0;

	for (int e = 0; e < t->n; e++) {
		const struct device_profile *p = &t->devices[e];
		for (int i = 0; i < entry_n_names(p); i++) {
			char key[DEVICE_KEY_LEN];
			int asize;
			const char *nm = entry_name(p, i);
			size_t len;

			if (!nm[0] || device_normalize(nm, key, sizeof(key), &asize) < 0)
				continue;
			len = strlen(key) + 1;
			if (n_keys == cap_keys) {
				size_t cap = cap_keys ? cap_keys * 2 : 256;
				struct device_name_key *nk = realloc(keys, cap * sizeof(*nk));
				if (!nk)
					goto nomem;
				keys = nk;
				cap_keys = cap;
			}
			if (used + len > cap_pool) {
				size_t cap = cap_pool ? cap_pool * 2 : 4096;
				char *np;
				while (cap < used + len)
					cap *= 2;
				np = realloc(pool, cap);
				if (!np)
					goto nomem;
				pool = np;
				cap_pool = cap;
			}
			memcpy(pool + used, key, len);
			keys[n_keys].entry = e;
			keys[n_keys].size_gib = asize;
			keys[n_keys].off = used;
			keys[n_keys].hash = key_hash(key);
			keys[n_keys].tail_hash = strchr(key, ' ') ? key_hash(strchr(key, ' ') + 1) :
								    0;
			n_keys++;
			used += len;
		}
	}
	if (hash_buckets_build(keys, n_keys, t) < 0)
		goto nomem;
	free(t->name_keys);
	free(t->name_keys_pool);
	t->name_keys = keys;
	t->name_keys_pool = pool;
	t->n_name_keys = n_keys;
	return 0;
nomem:
	free(keys);
	free(pool);
	return RF_E_NOMEM;
}

/* A name's key is the query's. */
static bool key_is(const char *key, const char *qkey)
{
	return strcmp(key, qkey) == 0;
}

/* A name's key is the query's followed by more words, perhaps after one series word ("rx 7900
 * xtx" for "RX 7900" or "7900"). */
static bool key_extends(const char *key, const char *qkey)
{
	size_t ql = strlen(qkey);
	const char *sp = strchr(key, ' ');

	if (strncmp(key, qkey, ql) == 0 && key[ql] == ' ')
		return true;
	return sp && strncmp(sp + 1, qkey, ql) == 0 && sp[1 + ql] == ' ';
}

/* A name's key is one series word and then the query's ("rtx 4090" for "4090"). */
static bool key_is_series_of(const char *key, const char *qkey)
{
	const char *sp = strchr(key, ' ');
	return sp && strcmp(sp + 1, qkey) == 0;
}

/* Which of the index's hashes a lookup compares before it compares strings. */
enum key_hash_filter {
	HASH_NONE, /* every name is compared */
	HASH_KEY,  /* the name's key hashes as qkey (key_is) */
	HASH_TAIL, /* the key after its first word hashes as qkey (key_is_series_of) */
};

/* The entries with a name whose key matches qkey (an entry counts once, at its first name that
 * matches), in the table's order; at most MAX_CANDIDATES are stored, all are counted. With the
 * index, filter makes a lookup a pass over integers, strings compared only where a hash
 * matches; without it every name is normalised. */
static int scan_names(const struct device_table *t, const char *qkey, int qsize,
		      bool (*match)(const char *key, const char *qkey), enum key_hash_filter filter,
		      const struct device_profile **cands)
{
	const uint32_t qhash = filter != HASH_NONE ? key_hash(qkey) : 0;
	int n = 0, last = -1;

	/* The index holds every name's key already normalised; with a hash to filter by, only
	 * the names of that hash are visited, in index order, through the buckets. */
	size_t k = 0;
	if (t && t->name_keys && filter != HASH_NONE) {
		const uint32_t *buckets = filter == HASH_TAIL ? t->tail_buckets : t->hash_buckets;
		k = buckets[bucket_of(buckets, t->n_buckets, t->name_keys, filter == HASH_TAIL,
				      qhash)];
	}
	while (t && t->name_keys && k < t->n_name_keys) {
		const struct device_name_key *nk = &t->name_keys[k];
		const struct device_profile *p = &t->devices[nk->entry];

		k = filter == HASH_KEY  ? nk->next_same_hash :
		    filter == HASH_TAIL ? nk->next_same_tail :
					  k + 1;
		if ((filter == HASH_KEY && nk->hash != qhash) ||
		    (filter == HASH_TAIL && nk->tail_hash != qhash) || nk->entry == last ||
		    !match(t->name_keys_pool + nk->off, qkey) || !size_ok(p, nk->size_gib, qsize))
			continue;
		if (n < MAX_CANDIDATES)
			cands[n] = p;
		n++;
		last = nk->entry;
	}
	for (int e = 0; t && !t->name_keys && e < t->n; e++) {
		const struct device_profile *p = &t->devices[e];
		for (int i = 0; i < entry_n_names(p); i++) {
			char key[DEVICE_KEY_LEN];
			int asize;
			const char *nm = entry_name(p, i);

			if (!nm[0] || device_normalize(nm, key, sizeof(key), &asize) < 0)
				continue;
			if (!match(key, qkey) || !size_ok(p, asize, qsize))
				continue;
			if (n < MAX_CANDIDATES)
				cands[n] = p;
			n++;
			break;
		}
	}
	return n;
}

static int find_candidates(const struct device_table *t, const char *qkey, int qsize,
			   const struct device_profile **cands)
{
	return scan_names(t, qkey, qsize, key_is, HASH_KEY, cands);
}

/* Picks the candidate whose nominal memory is closest to mem_bytes, within 15%, and clearly
 * closer than the runner-up. Returns NULL when none qualifies. */
static const struct device_profile *pick_by_memory(const struct device_profile **cands, int n,
						   int64_t mem_bytes)
{
	const struct device_profile *best = NULL;
	double best_d = 1e9, second_d = 1e9;
	double gib = (double)mem_bytes / (1024.0 * 1024.0 * 1024.0);

	for (int i = 0; i < n; i++) {
		double d;
		if (cands[i]->memory_configurable || cands[i]->memory_gib <= 0)
			continue;
		d = fabs(log(gib / cands[i]->memory_gib));
		if (d < best_d) {
			second_d = best_d;
			best_d = d;
			best = cands[i];
		} else if (d < second_d) {
			second_d = d;
		}
	}
	if (!best || best_d > log(1.0 / 0.85) || second_d - best_d < 0.01)
		return NULL;
	return best;
}

/* The form factors a data-centre GPU is sold in, as the last word of its name: "H100" stands
 * for the H100 PCIe, SXM and NVL, which differ in memory bandwidth (and the NVL in size). */
static const char *const device_forms[] = {"pcie", "sxm", "nvl", NULL};

/* The entries one of whose names is qkey followed by a form factor word (find_candidates'
 * order and cap): the forms a bare name like "H100" stands for. */
static int find_forms(const struct device_table *t, const char *qkey, int qsize,
		      const struct device_profile **cands)
{
	int n = 0;

	for (int f = 0; device_forms[f]; f++) {
		char key[DEVICE_KEY_LEN];
		const struct device_profile *one[MAX_CANDIDATES];
		int k;

		if (rf_format(key, sizeof(key), "%s %s", qkey, device_forms[f]) >= (int)sizeof(key))
			return 0;
		k = find_candidates(t, key, qsize, one);
		for (int i = 0; i < k && i < MAX_CANDIDATES && n < MAX_CANDIDATES; i++)
			cands[n++] = one[i];
	}
	return n;
}

/* The entries with a name that is one series word and then qkey, a model number as people
 * type it ("4090": "RTX 4090", not "RTX 4090 D" or "RTX 4090 Laptop"; "A6000": "RTX A6000";
 * "M2": "Apple M2"; "MI300X": "Instinct MI300X"). Only asked when no name is qkey itself, so
 * the walk over every name (no index) costs nothing on the common path. */
static int find_series(const struct device_table *t, const char *qkey, int qsize,
		       const struct device_profile **cands)
{
	return scan_names(t, qkey, qsize, key_is_series_of, HASH_TAIL, cands);
}

/* The entries a query names: its exact names, else its form factors, else its series. */
static int find_named(const struct device_table *t, const char *qkey, int qsize,
		      const struct device_profile **cands)
{
	int n = find_candidates(t, qkey, qsize, cands);

	if (n == 0)
		n = find_forms(t, qkey, qsize, cands);
	if (n == 0)
		n = find_series(t, qkey, qsize, cands);
	return n;
}

int device_resolve_mem(const struct device_table *t, const char *reported_name,
		       int64_t memory_total_bytes, const struct device_profile **out)
{
	char key[DEVICE_KEY_LEN];
	const struct device_profile *cands[MAX_CANDIDATES];
	const struct device_profile *pick;
	int qsize, n, rc;

	if (!out)
		return RF_E_INVALID_VALUE;
	rc = device_normalize(reported_name, key, sizeof(key), &qsize);
	if (rc < 0)
		return rc;
	n = find_named(t, key, qsize, cands);
	if (n == 0 && memory_total_bytes > 0) {
		/* A name that begins parts' names ("RX 7900"): the one the memory tells. */
		n = scan_names(t, key, qsize, key_extends, HASH_NONE, cands);
		if (n == 0)
			return RF_E_NOT_FOUND;
	} else if (n == 0) {
		return RF_E_NOT_FOUND;
	} else if (n == 1) {
		*out = cands[0];
		return 0;
	}
	if (memory_total_bytes <= 0 || n > MAX_CANDIDATES)
		return RF_E_CONFLICT;
	pick = pick_by_memory(cands, n, memory_total_bytes);
	if (!pick)
		return RF_E_CONFLICT;
	*out = pick;
	return 0;
}

int device_variants(const struct device_table *t, const char *name,
		    const struct device_profile **out, int max)
{
	char key[DEVICE_KEY_LEN];
	const struct device_profile *cands[MAX_CANDIDATES];
	int qsize, n;

	if (!t || !name || !out || max <= 0 || device_normalize(name, key, sizeof(key), &qsize) < 0)
		return 0;
	n = find_named(t, key, qsize, cands);
	/* A name no part has, that begins several parts' names: those parts ("RX 7900": the XTX,
	 * the XT and the GRE). Listed, never picked: the words left out tell them apart. */
	if (n == 0)
		n = scan_names(t, key, qsize, key_extends, HASH_NONE, cands);
	if (n < 2)
		return 0;
	if (n > MAX_CANDIDATES)
		n = MAX_CANDIDATES;
	if (n > max)
		n = max;
	memcpy(out, cands, (size_t)n * sizeof(*out));
	return n;
}

const char *device_short_name(const struct device_profile *p)
{
	const char *best = p->name;

	for (int a = 0; a < p->n_aliases; a++)
		if (strlen(p->aliases[a]) < strlen(best))
			best = p->aliases[a];
	return best;
}

int device_resolve(const struct device_table *t, const char *reported_name,
		   const struct device_profile **out)
{
	return device_resolve_mem(t, reported_name, -1, out);
}

/* Returns the first place of needle in hay, ignoring ASCII case, or NULL. */
static char *find_nocase(char *hay, const char *needle)
{
	size_t n = strlen(needle);

	for (; *hay; hay++) {
		size_t i = 0;
		while (i < n && hay[i] && lower(hay[i]) == lower(needle[i]))
			i++;
		if (i == n)
			return hay;
	}
	return NULL;
}

int device_resolve_cpu(const struct device_table *t, const char *model,
		       const struct device_profile **out)
{
	static const char *const cut_at[] = {" @", " CPU", " with ", " w/", " Processor"};
	const struct device_profile *p = NULL;
	char buf[DEVICE_NAME_LEN], *c, *start = buf;
	int rc;

	if (!t || !model || !model[0] || !out)
		return RF_E_INVALID_VALUE;
	rf_format(buf, sizeof(buf), "%s", model);
	for (size_t i = 0; i < sizeof(cut_at) / sizeof(cut_at[0]); i++)
		if ((c = find_nocase(buf, cut_at[i])) != NULL)
			*c = '\0';
	/* "16-Core": the count and what follows. */
	if ((c = find_nocase(buf, "-Core")) != NULL) {
		while (c > buf && c[-1] >= '0' && c[-1] <= '9')
			c--;
		*c = '\0';
	}
	/* "13th Gen Intel(R) Core(TM) i7-13700K": the generation is in the number. */
	if ((c = find_nocase(buf, " Gen ")) != NULL && c - buf <= 5)
		start = c + 5;
	rc = device_resolve(t, start, &p);
	if (rc < 0)
		return rc == RF_E_CONFLICT ? rc : RF_E_NOT_FOUND;
	if (p->kind != DEVICE_KIND_CPU)
		return RF_E_NOT_FOUND;
	*out = p;
	return 0;
}

/* The index of the longest alias with a core count that model contains as a whole word
 * (case ignored), or -1. */
static int cpu_part_alias(const struct device_profile *p, const char *model)
{
	char buf[DEVICE_NAME_LEN];
	size_t best = 0;
	int part = -1;

	rf_format(buf, sizeof(buf), "%s", model ? model : "");
	/* /proc/cpuinfo's "Intel(R) Xeon(R) Platinum 8480+": the marks go, the words stay. */
	for (char *c;
	     (c = find_nocase(buf, "(R)")) != NULL || (c = find_nocase(buf, "(TM)")) != NULL;)
		memmove(c, c + (c[1] == 'R' || c[1] == 'r' ? 3 : 4),
			strlen(c + (c[1] == 'R' || c[1] == 'r' ? 3 : 4)) + 1);
	for (int k = 0; k < p->n_aliases && k < DEVICE_MAX_ALIASES; k++) {
		size_t n = strlen(p->aliases[k]);
		char *hit = n > best && p->alias_cores[k] > 0 ? find_nocase(buf, p->aliases[k]) :
								NULL;
		/* A whole word: "EPYC 9554" in "AMD EPYC 9554 64-Core", not in "EPYC 95540". */
		while (hit && (isalnum((unsigned char)hit[n]) ||
			       (hit > buf && isalnum((unsigned char)hit[-1]))))
			hit = find_nocase(hit + 1, p->aliases[k]);
		if (hit) {
			best = n;
			part = k;
		}
	}
	return part;
}

int device_cpu_cores(const struct device_profile *p, const char *model, int *performance)
{
	int k;

	if (performance)
		*performance = 0;
	if (!p)
		return 0;
	if (p->cpu_cores > 0)
		return p->cpu_cores;
	k = cpu_part_alias(p, model);
	if (k >= 0 && performance)
		*performance = p->alias_performance_cores[k];
	return k >= 0 ? p->alias_cores[k] : 0;
}

struct name_key {
	char key[DEVICE_KEY_LEN];
	int size; /* memory the name stands for: its own size, else the entry's; 0 = any */
	int entry;
	int name;
};

static int cmp_name_key(const void *a, const void *b)
{
	const struct name_key *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	if (c)
		return c;
	return x->entry != y->entry ? x->entry - y->entry : x->name - y->name;
}

int device_table_check(const struct device_table *t, char *err, size_t errlen)
{
	struct name_key *keys;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (!t || t->n <= 0)
		return 0;
	for (int e = 0; e < t->n; e++)
		cap += (size_t)entry_n_names(&t->devices[e]);
	keys = calloc(cap, sizeof(*keys));
	if (!keys) {
		snprintf(err, errlen, "out of memory");
		return RF_E_NOMEM;
	}
	for (int e = 0; e < t->n && rc == 0; e++) {
		const struct device_profile *p = &t->devices[e];
		for (int f = e + 1; f < t->n; f++) {
			if (strcmp(p->id, t->devices[f].id) == 0) {
				snprintf(err, errlen, "entry %d (%s): id is also used by entry %d",
					 f + 1, p->id, e + 1);
				rc = RF_E_CONFLICT;
				break;
			}
		}
		for (int i = 0; i < entry_n_names(p) && rc == 0; i++) {
			struct name_key *k = &keys[n];
			const char *nm = entry_name(p, i);
			int asize;

			if (!nm[0] || device_normalize(nm, k->key, sizeof(k->key), &asize) < 0)
				continue;
			if (asize > 0)
				k->size = asize;
			else if (!p->memory_configurable && p->memory_gib > 0)
				k->size = (int)lround(p->memory_gib);
			else
				k->size = 0;
			k->entry = e;
			k->name = i;
			n++;
		}
	}
	if (rc == 0 && n > 1)
		qsort(keys, n, sizeof(*keys), cmp_name_key);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		for (size_t j = i + 1; j < n && strcmp(keys[i].key, keys[j].key) == 0; j++) {
			const struct name_key *a = &keys[i], *b = &keys[j];
			if (a->entry == b->entry)
				continue;
			if (a->size == b->size || a->size == 0 || b->size == 0) {
				snprintf(
					err, errlen,
					"entry %d (%s): name '%s' cannot be told apart from '%s' of "
					"entry %d (%s)",
					b->entry + 1, t->devices[b->entry].id,
					entry_name(&t->devices[b->entry], b->name),
					entry_name(&t->devices[a->entry], a->name), a->entry + 1,
					t->devices[a->entry].id);
				rc = RF_E_CONFLICT;
				break;
			}
		}
	}
	free(keys);
	return rc;
}

double device_bandwidth_from_bus(int bus_width_bits, int mem_clock_mhz)
{
	if (bus_width_bits <= 0 || mem_clock_mhz <= 0 || bus_width_bits > 65536 ||
	    mem_clock_mhz > 100000)
		return -1;
	return (double)mem_clock_mhz * 2.0 * (double)bus_width_bits / 8.0 / 1000.0;
}

double device_gpu_bandwidth(const struct device_profile *p, int bus_width_bits, int mem_clock_mhz,
			    const char **basis)
{
	double bw;

	if (p && p->memory_bandwidth_gbs > 0) {
		if (basis)
			*basis = "profile";
		return p->memory_bandwidth_gbs;
	}
	bw = device_bandwidth_from_bus(bus_width_bits, mem_clock_mhz);
	if (bw > 0) {
		if (basis)
			*basis = "bus_width_and_clock";
		return bw;
	}
	if (basis)
		*basis = "assumed";
	return DEVICE_ASSUMED_GPU_BANDWIDTH_GBS;
}

/* True for NVIDIA parts of compute capability 7.0 (Volta) and later: they have tensor cores. */
static bool has_tensor_units(const struct device_profile *p)
{
	const char *cc = p->compute_capability;
	const char *dot = strchr(cc, '.');
	uint64_t major;

	if (strcmp(p->vendor, "nvidia") != 0 || !dot || p->kind == DEVICE_KIND_CPU)
		return false;
	if (rf_parse_u64(cc, (size_t)(dot - cc), 99, &major) < 0)
		return false;
	return major >= 7;
}

bool device_hbm_class(const struct device_profile *p)
{
	return p && strcmp(p->device_class, "datacenter") == 0 && p->memory_bandwidth_gbs >= 1200;
}

bool device_pro_class(const struct device_profile *p)
{
	return p && (strcmp(p->device_class, "datacenter") == 0 ||
		     strcmp(p->device_class, "workstation") == 0);
}

double device_compute_tflops(const struct device_profile *p, enum device_compute_kind *kind)
{
	double v;

	if (kind)
		*kind = DEVICE_COMPUTE_UNKNOWN;
	if (!p)
		return -1;
	if (p->fp16_kind == DEVICE_FP16_TENSOR && p->fp16_tflops > 0) {
		if (kind)
			*kind = DEVICE_COMPUTE_TENSOR;
		return p->fp16_tflops;
	}
	/* Vector rates: the FP32 rate, which every source documents the same way, and which
	 * llama.cpp's non-tensor kernels compute in; the vector FP16 rate only when it is the one
	 * known. */
	v = p->fp32_tflops > 0 ? p->fp32_tflops : p->fp16_tflops;
	if (v <= 0)
		return -1;
	if (kind)
		*kind = has_tensor_units(p) ? DEVICE_COMPUTE_VECTOR_NO_TENSOR :
					      DEVICE_COMPUTE_VECTOR;
	return v;
}

double device_held_tflops(const struct device_profile *p, double peak)
{
	double held;

	if (!p || !(p->sustained_gemm_tflops > 0) || !(peak > 0))
		return peak;
	held = p->sustained_gemm_tflops / DEVICE_GEMM_SHARE_HELD;
	return held < peak ? held : peak;
}

int64_t device_gpu_working_set_bytes(const struct device_profile *p, int64_t ram_bytes)
{
	const struct device_working_set *w;
	double gib, f;

	if (!p || ram_bytes <= 0)
		return -1;
	w = &p->working_set;
	if (w->fraction_at_or_below <= 0 || w->fraction_above <= 0)
		return -1;
	gib = (double)ram_bytes / (1024.0 * 1024.0 * 1024.0);
	f = gib <= w->up_to_gib ? w->fraction_at_or_below : w->fraction_above;
	return (int64_t)((double)ram_bytes * f);
}
