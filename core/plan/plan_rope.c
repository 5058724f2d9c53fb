/*
 * Long context: trained positions, documented rope scaling, or beyond (see plan_rope.h).
 */
#include "core/plan/plan_rope.h"

#include <stddef.h>

static int documented(const struct model_rope *doc)
{
	return doc && doc->type != MODEL_ROPE_NONE && doc->factor > 1 && doc->orig_ctx > 0;
}

int64_t plan_rope_reach(const struct model_rope *r, int64_t native)
{
	int64_t reach;

	if (!r || r->type == MODEL_ROPE_NONE || r->factor <= 1 || r->orig_ctx <= 0)
		return native;
	reach = (int64_t)((double)r->orig_ctx * r->factor);
	return reach > native ? reach : native;
}

int64_t plan_rope_max(const struct model_arch *a, const struct model_rope *doc)
{
	int64_t native = a->max_position_embeddings;

	if (native <= 0)
		return 0;
	return documented(doc) ? plan_rope_reach(doc, native) : native;
}

void plan_rope_decide(const struct model_arch *a, const struct model_rope *doc, int64_t seq,
		      struct plan_rope *out)
{
	double f = 2;

	out->native = a->max_position_embeddings > 0 ? a->max_position_embeddings : 0;
	out->max = plan_rope_max(a, doc);
	out->use.type = MODEL_ROPE_NONE;
	out->use.factor = 0;
	out->use.orig_ctx = 0;
	if (out->native <= 0 || seq <= out->native) {
		out->need = PLAN_ROPE_NATIVE;
		return;
	}
	if (seq > out->max) {
		out->need = PLAN_ROPE_BEYOND;
		return;
	}
	/* The smallest power of two that reaches seq, never above the documented factor. */
	while (f < doc->factor && (double)doc->orig_ctx * f < (double)seq)
		f *= 2;
	if (f > doc->factor)
		f = doc->factor;
	out->need = PLAN_ROPE_SCALED;
	out->use = *doc;
	out->use.factor = f;
}
