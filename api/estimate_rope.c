/*
 * The estimate's long context: what a request's rope scaling (rope_scaling, rope_scale,
 * yarn_orig_ctx) lets each sequence reach, and what the answer says when a context goes
 * beyond the positions the model was trained for, with or without it. The KV cache is sized
 * per token either way: scaling changes the rotary frequencies, not the cache.
 */
#include <string.h>

#include "api/estimate_priv.h"
#include "core/plan/plan_rope.h"

/* The scaling e's request sets (type MODEL_ROPE_NONE: none). Linear scaling stretches the
 * trained window itself; YaRN stretches yarn_orig_ctx, which both runtimes default to it. */
static struct model_rope est_rope_set(const struct est *e)
{
	struct model_rope r = {MODEL_ROPE_NONE, 0, 0, 0};

	if (!e->rq.has_rope || e->rq.rope == 0 || !e->rq.has_rope_scale)
		return r;
	r.type = MODEL_ROPE_YARN;
	r.factor = e->rq.rope_scale;
	r.orig_ctx = e->rq.has_yarn_orig_ctx ? e->rq.yarn_orig_ctx :
					       e->arch.max_position_embeddings;
	return r;
}

int64_t est_rope(struct est *e, int64_t seq)
{
	const struct model_rope *doc = e->entry ? &e->entry->long_ctx : NULL;
	struct model_rope set = est_rope_set(e);
	int64_t native = e->arch.max_position_embeddings;
	int64_t reach = plan_rope_reach(&set, native), doc_max = plan_rope_max(&e->arch, doc);
	struct plan_rope d;

	if (native <= 0)
		return 0;
	plan_rope_decide(&e->arch, doc, seq, &d);
	if (set.type != MODEL_ROPE_NONE) {
		est_assume(e,
			   "rope scaling: %s x%g from %lld positions reaches %lld per sequence; "
			   "the KV cache is sized per token as without it",
			   api_est_ropes[e->rq.rope], set.factor, (long long)set.orig_ctx,
			   (long long)reach);
		if (seq > reach)
			est_assume(e,
				   "n_ctx: %lld positions per sequence are beyond the %lld that "
				   "this rope scaling reaches; a larger rope_scale is needed",
				   (long long)seq, (long long)reach);
		else if (seq > doc_max)
			est_assume(e,
				   "n_ctx: %lld positions per sequence are beyond the %lld %s; "
				   "quality past it is not what the model was made for",
				   (long long)seq, (long long)doc_max,
				   d.max > native ? "the model card documents" :
						    "the model was trained for, and its card "
						    "documents no rope scaling");
		return reach;
	}
	if (d.need == PLAN_ROPE_SCALED)
		est_assume(e,
			   "n_ctx: %lld positions per sequence are beyond the %lld the model was "
			   "trained for; its card documents YaRN x%g from %lld (rope_scaling yarn, "
			   "rope_scale %g, yarn_orig_ctx %lld), which reaches them; without it "
			   "quality falls past %lld. The KV cache is sized per token either way",
			   (long long)seq, (long long)native, d.use.factor,
			   (long long)d.use.orig_ctx, d.use.factor, (long long)d.use.orig_ctx,
			   (long long)native);
	else if (d.need == PLAN_ROPE_BEYOND)
		est_assume(e,
			   "n_ctx: %lld positions per sequence are beyond the %lld the model "
			   "reaches (%s); quality past it is not what the model was made for. The "
			   "KV cache is sized per token either way",
			   (long long)seq, (long long)d.max,
			   d.max > native ? "with the YaRN scaling its card documents" :
					    "its trained positions; its card documents no rope "
					    "scaling");
	return native;
}
