/*
 * The env's quality table for the planning routes (see plan_quality_json.h). The table is read
 * once, when the profiles are loaded (api/catalog/quality.c); a request copies the struct.
 */
#include "api/plan_quality_json.h"

#include "core/err.h"

int api_plan_quality(const struct api_env *env, struct plan_quality *out, struct api_reply *err)
{
	if (!env->cat.quality)
		return api_error(err, RF_E_UNAVAILABLE, NULL,
				 "no quality table is loaded (profiles/quality.json)");
	*out = *env->cat.quality;
	return 0;
}
