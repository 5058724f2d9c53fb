/*
 * The memo of parameter counts and scheme weights (see model_memo.h): a fixed table of slots
 * keyed by a hash of the architecture's bytes, the bytes themselves and the file type, found
 * through buckets of that hash, under one mutex. A slot keeps the weights compactly (only the layers the model has, in a malloc'd
 * array) and writes them back as rf_weights_from_scheme does, except that the per-layer arrays
 * are written up to n_layer only (see model_memo.h).
 * Work on a miss is done outside the lock; two threads missing the same key at once both
 * compute it and the second copy simply takes another slot.
 */
#include "api/model_memo.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#include "core/err.h"
#include "core/fit/serve_vllm.h"

/* ftype of a slot that holds the parameter counts only. */
#define MEMO_PARAMS_ONLY (-1)

struct memo_slot {
	bool used;
	uint64_t hash; /* of arch's bytes */
	int32_t next;  /* the next used slot in this one's hash bucket; -1: none */
	int ftype;     /* MEMO_PARAMS_ONLY or the file type of the weights */
	struct model_arch arch;
	struct model_params params;
	/* The weights (ftype >= 0), layer_bytes holding n_layer entries, then n_layer of
	 * layer_expert_bytes. */
	int64_t n_layer;
	uint64_t input_bytes, output_bytes, file_bytes, largest_matrix, tied_head_bytes;
	uint64_t output_repack_bytes[RF_REPACK_N];
	uint64_t output_edge_repack_bytes[RF_REPACK_N];
	uint64_t output_amx_bytes;
	uint64_t *layer_bytes; /* n_layer entries, n_layer of layer_expert_bytes, n_layer per
				  repack class, then n_layer of layer_amx_bytes */
	double *types;         /* MEMO_TYPE_VALUES: type_elements, type_expert_elements, then
			  type_repack_elements per repack class */
};

#define MEMO_TYPE_VALUES ((size_t)RF_GT_COUNT * (2 + RF_REPACK_N))
/* The per-layer arrays a slot keeps, n_layer entries each (see layer_bytes). */
#define MEMO_LAYER_ARRAYS (RF_REPACK_N + 3)

static struct memo_slot memo_slots[API_MODEL_MEMO_SLOTS];

/* The vLLM facts of a model (vllm_facts_build), in a table of their own: only models planned
 * for vLLM have them. */
#define MEMO_VLLM_SLOTS 128
struct memo_vllm_slot {
	uint64_t hash; /* 0: unused */
	struct model_arch arch;
	struct vllm_facts facts;
};
static struct memo_vllm_slot memo_vllm[MEMO_VLLM_SLOTS];
static size_t memo_vllm_next;
/* The used slots by their hash: the first slot of each bucket (-1: none), the rest chained
 * through next. A lookup walks one bucket (the formats memoized of one architecture, and
 * whatever shares its bucket), not every slot: the planner looks up a format's weights for
 * every model and format it weighs. */
#define MEMO_BUCKETS (2 * API_MODEL_MEMO_SLOTS)
static int32_t memo_buckets[MEMO_BUCKETS];
static size_t memo_next; /* the slot the next insertion replaces */
static mtx_t memo_mtx;
static once_flag memo_once = ONCE_FLAG_INIT;
static bool memo_mtx_ok;

static void memo_buckets_clear(void)
{
	for (size_t b = 0; b < MEMO_BUCKETS; b++)
		memo_buckets[b] = -1;
}

static void memo_init(void)
{
	memo_buckets_clear();
	memo_mtx_ok = mtx_init(&memo_mtx, mtx_plain) == thrd_success;
}

static size_t bucket_of(uint64_t hash)
{
	return (size_t)(hash ^ (hash >> 32)) & (MEMO_BUCKETS - 1);
}

/* Takes used slot i out of its bucket's chain. Call with the lock held. */
static void memo_unlink(int32_t i)
{
	int32_t *at = &memo_buckets[bucket_of(memo_slots[i].hash)];

	while (*at >= 0 && *at != i)
		at = &memo_slots[*at].next;
	if (*at == i)
		*at = memo_slots[i].next;
}

/* FNV-1a over the architecture's bytes. */
static uint64_t arch_hash(const struct model_arch *a)
{
	const unsigned char *p = (const unsigned char *)a;
	uint64_t h = 1469598103934665603ULL;
	size_t i = 0;

	/* FNV-1a over 8-byte words, then the bytes left: a lookup hashes the whole struct. */
	for (; i + sizeof(uint64_t) <= sizeof(*a); i += sizeof(uint64_t)) {
		uint64_t w;
		memcpy(&w, p + i, sizeof(w));
		h ^= w;
		h *= 1099511628211ULL;
		h ^= h >> 29;
	}
	for (; i < sizeof(*a); i++) {
		h ^= p[i];
		h *= 1099511628211ULL;
	}
	return h | 1; /* never 0, which marks an unused slot */
}

static bool memo_lock(void)
{
	call_once(&memo_once, memo_init);
	return memo_mtx_ok && mtx_lock(&memo_mtx) == thrd_success;
}

/* The slot of (a, hash) with file type ftype, or with any file type when ftype is
 * MEMO_PARAMS_ONLY (every slot has the counts). Call with the lock held. */
static const struct memo_slot *memo_find(const struct model_arch *a, uint64_t hash, int ftype)
{
	for (int32_t i = memo_buckets[bucket_of(hash)]; i >= 0; i = memo_slots[i].next) {
		const struct memo_slot *s = &memo_slots[i];
		if (s->hash == hash && (ftype == MEMO_PARAMS_ONLY || s->ftype == ftype) &&
		    memcmp(&s->arch, a, sizeof(*a)) == 0)
			return s;
	}
	return NULL;
}

/* Stores a slot for (a, hash, ftype) with params and, when w is given, its weights. A
 * failing allocation only means nothing is memoized. */
static void memo_put(const struct model_arch *a, uint64_t hash, int ftype,
		     const struct model_params *params, const struct rf_mem_weights *w)
{
	uint64_t *layers = NULL;
	double *types = NULL;
	struct memo_slot *s;

	if (w) {
		layers = malloc((size_t)(w->n_layer > 0 ? w->n_layer : 1) * (MEMO_LAYER_ARRAYS) *
				sizeof(*layers));
		types = malloc(MEMO_TYPE_VALUES * sizeof(*types));
		if (!layers || !types) {
			free(layers);
			free(types);
			return;
		}
		memcpy(types, w->type_elements, sizeof(w->type_elements));
		memcpy(types + RF_GT_COUNT, w->type_expert_elements,
		       sizeof(w->type_expert_elements));
		memcpy(types + 2 * RF_GT_COUNT, w->type_repack_elements,
		       sizeof(w->type_repack_elements));
		memcpy(layers, w->layer_bytes, (size_t)w->n_layer * sizeof(*layers));
		memcpy(layers + w->n_layer, w->layer_expert_bytes,
		       (size_t)w->n_layer * sizeof(*layers));
		for (int c = 0; c < RF_REPACK_N; c++)
			memcpy(layers + (size_t)(c + 2) * (size_t)w->n_layer,
			       w->layer_repack_bytes[c], (size_t)w->n_layer * sizeof(*layers));
		memcpy(layers + (size_t)(RF_REPACK_N + 2) * (size_t)w->n_layer, w->layer_amx_bytes,
		       (size_t)w->n_layer * sizeof(*layers));
	}
	if (!memo_lock()) {
		free(layers);
		free(types);
		return;
	}
	s = &memo_slots[memo_next];
	if (s->used)
		memo_unlink((int32_t)memo_next);
	free(s->layer_bytes);
	free(s->types);
	memset(s, 0, sizeof(*s));
	s->used = true;
	s->hash = hash;
	s->next = memo_buckets[bucket_of(hash)];
	memo_buckets[bucket_of(hash)] = (int32_t)memo_next;
	memo_next = (memo_next + 1) % API_MODEL_MEMO_SLOTS;
	s->ftype = ftype;
	memcpy(&s->arch, a, sizeof(*a));
	s->params = *params;
	if (w) {
		s->n_layer = w->n_layer;
		s->input_bytes = w->input_bytes;
		s->output_bytes = w->output_bytes;
		s->file_bytes = w->file_bytes;
		s->largest_matrix = w->largest_matrix;
		s->tied_head_bytes = w->tied_head_bytes;
		memcpy(s->output_repack_bytes, w->output_repack_bytes,
		       sizeof(s->output_repack_bytes));
		memcpy(s->output_edge_repack_bytes, w->output_edge_repack_bytes,
		       sizeof(s->output_edge_repack_bytes));
		s->output_amx_bytes = w->output_amx_bytes;
		s->layer_bytes = layers;
		s->types = types;
	}
	mtx_unlock(&memo_mtx);
}

int api_memo_params(const struct model_arch *a, struct model_params *out)
{
	const uint64_t hash = arch_hash(a);
	const struct memo_slot *s;
	struct model_params p;
	int rc;

	if (memo_lock()) {
		s = memo_find(a, hash, MEMO_PARAMS_ONLY);
		if (s)
			*out = s->params;
		mtx_unlock(&memo_mtx);
		if (s)
			return 0;
	}
	rc = model_param_counts(a, &p);
	if (rc < 0)
		return rc;
	memo_put(a, hash, MEMO_PARAMS_ONLY, &p, NULL);
	*out = p;
	return 0;
}

int api_memo_weights(const struct model_arch *a, int ftype, struct rf_mem_weights *out)
{
	const uint64_t hash = arch_hash(a);
	const struct memo_slot *s;
	struct model_params p;
	bool have_params = false;
	int rc;

	if (ftype < 0)
		return rf_weights_from_scheme(a, ftype, -1, out);
	if (memo_lock()) {
		s = memo_find(a, hash, ftype);
		if (s) {
			/* Every field is written; of the per-layer arrays only the model's n_layer
			 * entries, which is all any reader looks at: clearing the whole struct
			 * (MODEL_MAX_LAYERS entries per array, 56 KiB) cost more than the estimate. */
			out->n_layer = s->n_layer;
			out->input_bytes = s->input_bytes;
			out->output_bytes = s->output_bytes;
			out->file_bytes = s->file_bytes;
			out->largest_matrix = s->largest_matrix;
			memcpy(out->layer_bytes, s->layer_bytes,
			       (size_t)s->n_layer * sizeof(*s->layer_bytes));
			memcpy(out->layer_expert_bytes, s->layer_bytes + s->n_layer,
			       (size_t)s->n_layer * sizeof(*s->layer_bytes));
			out->tied_head_bytes = s->tied_head_bytes;
			memcpy(out->output_repack_bytes, s->output_repack_bytes,
			       sizeof(out->output_repack_bytes));
			for (int c = 0; c < RF_REPACK_N; c++)
				memcpy(out->layer_repack_bytes[c],
				       s->layer_bytes + (size_t)(c + 2) * (size_t)s->n_layer,
				       (size_t)s->n_layer * sizeof(*s->layer_bytes));
			memcpy(out->layer_amx_bytes,
			       s->layer_bytes + (size_t)(RF_REPACK_N + 2) * (size_t)s->n_layer,
			       (size_t)s->n_layer * sizeof(*s->layer_bytes));
			memcpy(out->output_edge_repack_bytes, s->output_edge_repack_bytes,
			       sizeof(out->output_edge_repack_bytes));
			out->output_amx_bytes = s->output_amx_bytes;
			memcpy(out->type_elements, s->types, sizeof(out->type_elements));
			memcpy(out->type_expert_elements, s->types + RF_GT_COUNT,
			       sizeof(out->type_expert_elements));
			memcpy(out->type_repack_elements, s->types + 2 * RF_GT_COUNT,
			       sizeof(out->type_repack_elements));
		} else if ((s = memo_find(a, hash, MEMO_PARAMS_ONLY)) != NULL) {
			p = s->params;
			have_params = true;
			s = NULL;
		}
		mtx_unlock(&memo_mtx);
		if (s)
			return 0;
	}
	rc = rf_weights_from_scheme(a, ftype, -1, out);
	if (rc < 0)
		return rc;
	/* The slot also answers api_memo_params, so it carries the counts. */
	if (have_params || model_param_counts(a, &p) == 0)
		memo_put(a, hash, ftype, &p, out);
	return 0;
}

/* Copies src into *dst with arrays of its own. Returns 0 or RF_E_NOMEM (dst untouched). */
static int facts_copy(const struct vllm_facts *src, struct vllm_facts *dst)
{
	struct vllm_facts f = *src;
	size_t nl = (size_t)src->n_layer + 2, np = (size_t)src->n_layer + 1;

	f.layer = malloc(nl * sizeof(*f.layer));
	f.prefix = malloc(np * sizeof(*f.prefix));
	if (!f.layer || !f.prefix) {
		free(f.layer);
		free(f.prefix);
		return RF_E_NOMEM;
	}
	memcpy(f.layer, src->layer, nl * sizeof(*f.layer));
	memcpy(f.prefix, src->prefix, np * sizeof(*f.prefix));
	*dst = f;
	return 0;
}

int api_memo_vllm_facts(const struct model_arch *a, struct vllm_facts *out)
{
	uint64_t hash = arch_hash(a);
	struct rf_tensor_list l = {0};
	struct vllm_facts f = {0};
	int rc = RF_E_NOT_FOUND;

	if (memo_lock()) {
		for (size_t i = 0; i < MEMO_VLLM_SLOTS && rc == RF_E_NOT_FOUND; i++)
			if (memo_vllm[i].hash == hash &&
			    memcmp(&memo_vllm[i].arch, a, sizeof(*a)) == 0)
				rc = facts_copy(&memo_vllm[i].facts, out);
		mtx_unlock(&memo_mtx);
	}
	if (rc != RF_E_NOT_FOUND)
		return rc;
	rc = model_tensors(a, &l);
	if (rc == 0)
		rc = vllm_facts_build(a, &l, &f);
	rf_tensor_list_free(&l);
	if (rc < 0)
		return rc;
	if (memo_lock()) {
		struct memo_vllm_slot *slot = &memo_vllm[memo_vllm_next];
		struct vllm_facts kept;
		if (facts_copy(&f, &kept) == 0) {
			vllm_facts_free(&slot->facts);
			slot->hash = hash;
			slot->arch = *a;
			slot->facts = kept;
			memo_vllm_next = (memo_vllm_next + 1) % MEMO_VLLM_SLOTS;
		}
		mtx_unlock(&memo_mtx);
	}
	*out = f;
	return 0;
}

void api_memo_clear(void)
{
	if (!memo_lock())
		return;
	for (size_t i = 0; i < MEMO_VLLM_SLOTS; i++) {
		vllm_facts_free(&memo_vllm[i].facts);
		memset(&memo_vllm[i], 0, sizeof(memo_vllm[i]));
	}
	memo_vllm_next = 0;
	for (size_t i = 0; i < API_MODEL_MEMO_SLOTS; i++) {
		free(memo_slots[i].layer_bytes);
		free(memo_slots[i].types);
		memset(&memo_slots[i], 0, sizeof(memo_slots[i]));
	}
	memo_buckets_clear();
	memo_next = 0;
	mtx_unlock(&memo_mtx);
}
