/*
 * The MCP tools: one per question rigfit answers, each a call of its route's handler through
 * api_dispatch with a synthetic request whose body is the tool's arguments, so that the tool
 * answers exactly what the route answers. The schemas are not written twice: a tool's
 * inputSchema is its operation's request body schema in openapi.yaml (for a route without a
 * body, its path and query parameters as an object), compacted for an LLM (see "Compact
 * schemas"), and its outputSchema the top of the operation's 200 schema; the components they
 * reference are copied under $defs and their $refs rewritten to match.
 */
#include "api/mcp.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/json_alloc.h"
#include "api/json_print.h"
#include "api/profiles.h"
#include "core/err.h"
#include "core/fit/model.h"

#define REF_PREFIX "#/components/schemas/"
#define DEFS_PREFIX "#/$defs/"
#define TOOL_PATH_MAX (sizeof("/api/profiles/") + API_PROFILE_ID_LEN + 1)
#define TOOL_QUERY_MAX 1024

static const struct mcp_tool mcp_tool_table[] = {
	{"detect_hardware", "Detect this machine's hardware", "getHardware", API_GET,
	 "/api/hardware",
	 "The hardware of the host rigfit runs on, from its latest scan: CPU, memory, GPUs with "
	 "their free memory and bandwidth, platform, backend and container limits. Takes no "
	 "arguments. Example: {}."},
	{"estimate", "Estimate memory and speed", "estimate", API_POST, "/api/estimate",
	 "Memory per device, whether it fits, and decode/prefill speed of a model with given "
	 "settings (quant, n_ctx, ...), for inference or fine-tuning (mode lora, qlora, full), on "
	 "this host or on hardware given by profile or description. Example: {\"model\": {\"id\": "
	 "\"llama-3.1-8b\"}, \"quant\": \"Q4_K_M\", \"n_ctx\": 8192}."},
	{"recommend_models", "Recommend models that fit", "recommend", API_POST, "/api/recommend",
	 "The models that fit this host (or the given hardware) for a task or use case, ranked, "
	 "with the settings that fit; or, given a model, the hardware it needs. Example: "
	 "{\"task\": \"chat\"}."},
	{"write_runtime_config", "Write a runtime config", "runtimeConfig", API_POST, "/api/config",
	 "A llama.cpp (or vLLM) runtime config for a model here, for a use case (general, "
	 "long_context, speed, quality, coding): the largest settings that fit, the downgrades taken and "
	 "the command line. Example: {\"model\": {\"id\": \"qwen2.5-7b\"}, \"use_case\": "
	 "\"general\"}."},
	{"validate_config", "Validate a runtime config", "validateConfig", API_POST,
	 "/api/validate",
	 "Checks a runtime config against this machine: errors, warnings with suggestions, and "
	 "the estimate behind them. Takes the config write_runtime_config returns, or flat "
	 "settings. Example: {\"model\": {\"id\": \"llama-3.1-8b\"}, \"settings\": {\"n_ctx\": "
	 "131072}, \"metadata\": {\"precision\": \"Q4_K_M\"}}."},
	{"plan_finetuning", "Plan fine-tuning", "finetuneDetect", API_POST, "/api/finetune/detect",
	 "For a fine-tuning task, the hardware tier of this host, the models and settings that fit "
	 "(ModelForge-compatible), the recommended model and its estimate. Example: {\"task\": "
	 "\"text-generation\"}."},
	{"list_models", "List the models", "listModels", API_GET, "/api/models",
	 "The models a request can name: the catalog, and the models this host holds (GGUF "
	 "files and Hugging Face folders under --models-dir, the Hugging Face cache, Ollama's "
	 "store) with their sizes on disk. Example: {\"source\": \"local\"}."},
	{"lookup_model", "Look up a model", "getProfile", API_GET, "/api/profiles/{id}",
	 "One catalog entry (model, device or tier profile) by its profile id (a model's '/' "
	 "written '--', as Qwen--Qwen2.5-7B); a model may also be named by one of its aliases. "
	 "Example: {\"id\": \"llama-3.1-8b\"}."},
};

const struct mcp_tool *mcp_tools(size_t *n)
{
	*n = sizeof(mcp_tool_table) / sizeof(mcp_tool_table[0]);
	return mcp_tool_table;
}

const struct mcp_tool *mcp_tool_find(const char *name)
{
	size_t n;
	const struct mcp_tool *t = mcp_tools(&n);

	for (size_t i = 0; i < n; i++)
		if (strcmp(t[i].name, name) == 0)
			return &t[i];
	return NULL;
}

/* --- Schemas ------------------------------------------------------------------------------ */

static const cJSON *get_path(const cJSON *o, const char *const *keys)
{
	for (; o && *keys; keys++)
		o = cJSON_GetObjectItemCaseSensitive(o, *keys);
	return o;
}

/* Finds the operation with operationId id; writes its path item to *item. */
static const cJSON *find_operation(const cJSON *spec, const char *id, const cJSON **item)
{
	const cJSON *paths = cJSON_GetObjectItemCaseSensitive(spec, "paths");
	const cJSON *p, *op;

	cJSON_ArrayForEach(p, paths)
	{
		cJSON_ArrayForEach(op, p)
		{
			const cJSON *oid = cJSON_GetObjectItemCaseSensitive(op, "operationId");
			if (cJSON_IsString(oid) && strcmp(oid->valuestring, id) == 0) {
				*item = p;
				return op;
			}
		}
	}
	return NULL;
}

/* Rewrites every $ref under s to point into $defs, and copies each component it names (and
 * theirs, transitively) into defs. Returns false when a $ref is not a component schema. */
static bool move_refs(cJSON *s, const cJSON *components, cJSON *defs, int depth)
{
	cJSON *c;

	if (depth > 64)
		return false;
	if (cJSON_IsObject(s)) {
		cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
		if (cJSON_IsString(ref)) {
			const char *name;
			char buf[160];
			if (strncmp(ref->valuestring, REF_PREFIX, strlen(REF_PREFIX)) != 0)
				return false;
			name = ref->valuestring + strlen(REF_PREFIX);
			if (!cJSON_GetObjectItemCaseSensitive(defs, name)) {
				const cJSON *target =
					cJSON_GetObjectItemCaseSensitive(components, name);
				cJSON *copy = target ? cJSON_Duplicate(target, true) : NULL;
				if (!copy || !api_json_add(defs, name, copy) ||
				    !move_refs(copy, components, defs, depth + 1))
					return false;
			}
			snprintf(buf, sizeof(buf), DEFS_PREFIX "%s", name);
			if (!cJSON_ReplaceItemInObjectCaseSensitive(s, "$ref",
								    cJSON_CreateString(buf)))
				return false;
			return true;
		}
	}
	cJSON_ArrayForEach(c, s)
	{
		if ((cJSON_IsObject(c) || cJSON_IsArray(c)) &&
		    !move_refs(c, components, defs, depth + 1))
			return false;
	}
	return true;
}

/* A self-contained schema from an OpenAPI schema object: a $ref at the top is replaced by the
 * component itself, and every other reference lives in $defs. Returns NULL on failure. */
static cJSON *standalone_schema(const cJSON *schema, const cJSON *spec)
{
	static const char *const comp_path[] = {"components", "schemas", NULL};
	const cJSON *components = get_path(spec, comp_path);
	const cJSON *ref = cJSON_GetObjectItemCaseSensitive(schema, "$ref");
	cJSON *out, *defs = cJSON_CreateObject();

	if (cJSON_IsString(ref) && strncmp(ref->valuestring, REF_PREFIX, strlen(REF_PREFIX)) == 0)
		schema = cJSON_GetObjectItemCaseSensitive(components,
							  ref->valuestring + strlen(REF_PREFIX));
	out = schema ? cJSON_Duplicate(schema, true) : NULL;
	if (!out || !defs || !move_refs(out, components, defs, 0)) {
		cJSON_Delete(out);
		cJSON_Delete(defs);
		return NULL;
	}
	if (cJSON_GetArraySize(defs) > 0)
		api_json_add(out, "$defs", defs);
	else
		cJSON_Delete(defs);
	return out;
}

/* The input schema of an operation without a request body: its path and query parameters. */
static cJSON *params_schema(const cJSON *op, const cJSON *item, const cJSON *spec)
{
	cJSON *s = cJSON_CreateObject();
	cJSON *props, *req;
	const cJSON *lists[2] = {cJSON_GetObjectItemCaseSensitive(item, "parameters"),
				 cJSON_GetObjectItemCaseSensitive(op, "parameters")};

	cJSON_AddStringToObject(s, "type", "object");
	props = cJSON_AddObjectToObject(s, "properties");
	req = cJSON_AddArrayToObject(s, "required");
	for (int l = 0; l < 2; l++) {
		const cJSON *p;
		cJSON_ArrayForEach(p, lists[l])
		{
			const cJSON *in = cJSON_GetObjectItemCaseSensitive(p, "in");
			const cJSON *name = cJSON_GetObjectItemCaseSensitive(p, "name");
			const cJSON *desc = cJSON_GetObjectItemCaseSensitive(p, "description");
			cJSON *ps;
			if (!cJSON_IsString(in) || !cJSON_IsString(name) ||
			    (strcmp(in->valuestring, "path") != 0 &&
			     strcmp(in->valuestring, "query") != 0))
				continue;
			ps = standalone_schema(cJSON_GetObjectItemCaseSensitive(p, "schema"), spec);
			if (!ps) {
				cJSON_Delete(s);
				return NULL;
			}
			if (cJSON_IsString(desc) &&
			    !cJSON_GetObjectItemCaseSensitive(ps, "description"))
				cJSON_AddStringToObject(ps, "description", desc->valuestring);
			api_json_add(props, name->valuestring, ps);
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(p, "required")))
				api_json_append(req, cJSON_CreateString(name->valuestring));
		}
	}
	cJSON_AddBoolToObject(s, "additionalProperties", false);
	return s;
}

/* --- Compact schemas ----------------------------------------------------------------------
 * openapi.yaml documents every field at length for people; an LLM choosing arguments needs the
 * names, types, ranges and choices, and a line on what each argument is. So an input schema
 * keeps the validation keywords of each argument (a top-level property, or a shared
 * definition under $defs) and of its fields, and the first sentence of each argument's
 * description; what is nested deeper (the fields of a field) is given by its type alone and
 * every other annotation goes. Only constraints are dropped, never added, so whatever the
 * route accepts the schema accepts. The output schema says what every answer has (an object
 * and its required fields), which every answer the full schema accepts satisfies too. */

#define DESC_MAX 100

/* Annotations: they change no validation. */
static bool is_annotation(const char *key)
{
	return strcmp(key, "description") == 0 || strcmp(key, "example") == 0 ||
	       strcmp(key, "examples") == 0 || strcmp(key, "title") == 0 ||
	       strcmp(key, "externalDocs") == 0 || strncmp(key, "x-", 2) == 0;
}

/* What describes an object's fields: dropped from the fields of a field. */
static bool is_structure(const char *key)
{
	return strcmp(key, "properties") == 0 || strcmp(key, "patternProperties") == 0 ||
	       strcmp(key, "additionalProperties") == 0 || strcmp(key, "required") == 0 ||
	       strcmp(key, "propertyNames") == 0 || strcmp(key, "dependentRequired") == 0 ||
	       strcmp(key, "dependentSchemas") == 0 || strcmp(key, "minProperties") == 0 ||
	       strcmp(key, "maxProperties") == 0;
}

/* Cuts the description of s to its first sentence; one longer than DESC_MAX bytes to its
 * clauses (up to a ';', ',' or '(') that fit, else its words. */
static void first_sentence(cJSON *s)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(s, "description");
	char buf[DESC_MAX + 1];
	size_t n = 0, clause = 0, word = 0;
	const char *c;

	if (!cJSON_IsString(d))
		return;
	/* openapi.yaml wraps its text: a line break is a space, a blank line a new paragraph. */
	for (c = d->valuestring; *c && n < DESC_MAX; c++) {
		char ch = *c == '\n' ? ' ' : *c;
		if ((*c == '\n' && c[1] == '\n') ||
		    (*c == '.' && (c[1] == ' ' || c[1] == '\n' || !c[1])))
			break;
		if (ch == ' ' && n > 0 && strchr(";,", buf[n - 1]))
			clause = n - 1;
		else if (ch == '(' && n > 0)
			clause = n;
		if (ch == ' ')
			word = n;
		buf[n++] = ch;
	}
	if (n == DESC_MAX && *c && *c != '\n' && *c != '.')
		n = clause > DESC_MAX / 3 ? clause : word;
	while (n > 0 && strchr(" ,;:(", buf[n - 1]))
		n--;
	buf[n] = '\0';
	cJSON_ReplaceItemInObjectCaseSensitive(s, "description", cJSON_CreateString(buf));
}

/* Compacts schema s at level (0: the input, 1: an argument or a shared definition, 2: a
 * field of one, 3 and more: deeper, dropped), as the comment above says. */
static void compact(cJSON *s, int level)
{
	cJSON *c, *next;

	if (cJSON_IsArray(s)) { /* allOf, oneOf, anyOf, prefixItems: at s's level */
		cJSON_ArrayForEach(c, s) compact(c, level);
		return;
	}
	if (!cJSON_IsObject(s) || level > 64)
		return;
	for (c = s->child; c; c = next) {
		next = c->next;
		if ((is_annotation(c->string) &&
		     !(level == 1 && strcmp(c->string, "description") == 0)) ||
		    (level >= 2 && is_structure(c->string)))
			cJSON_Delete(cJSON_DetachItemViaPointer(s, c));
	}
	if (level == 1)
		first_sentence(s);
	cJSON_ArrayForEach(c, s)
	{
		cJSON *p;
		if (strcmp(c->string, "properties") == 0 ||
		    strcmp(c->string, "patternProperties") == 0) {
			cJSON_ArrayForEach(p, c) compact(p, level + 1);
		} else if (strcmp(c->string, "$defs") == 0) {
			cJSON_ArrayForEach(p, c) compact(p, 1);
		} else if (strcmp(c->string, "additionalProperties") == 0) {
			compact(c, level + 1);
		} else if (strcmp(c->string, "enum") != 0 && strcmp(c->string, "const") != 0 &&
			   strcmp(c->string, "default") != 0) {
			compact(c, level); /* items, oneOf...: the same level */
		}
	}
}

/* The top level of a standalone answer schema: an object and the fields it always has.
 * Returns a new schema or NULL. */
static cJSON *top_level(const cJSON *full)
{
	cJSON *s = cJSON_CreateObject();
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(full, "required");

	if (!s || !cJSON_AddStringToObject(s, "type", "object") ||
	    (cJSON_IsArray(req) && !api_json_add(s, "required", cJSON_Duplicate(req, true)))) {
		cJSON_Delete(s);
		return NULL;
	}
	return s;
}

void *mcp_tool_describe(const struct mcp_tool *t, const void *spec_, char *err, size_t errlen)
{
	static const char *const body_path[] = {"requestBody", "content", "application/json",
						"schema", NULL};
	static const char *const ok_path[] = {"responses",        "200",    "content",
					      "application/json", "schema", NULL};
	const cJSON *spec = spec_;
	const cJSON *item = NULL;
	const cJSON *op = find_operation(spec, t->operation_id, &item);
	const cJSON *body = op ? get_path(op, body_path) : NULL;
	const cJSON *ok = op ? get_path(op, ok_path) : NULL;
	cJSON *d, *in, *out, *full, *ann;

	if (!op || !ok) {
		snprintf(err, errlen, "openapi.yaml has no operation %s with a 200 schema",
			 t->operation_id);
		return NULL;
	}
	in = body ? standalone_schema(body, spec) : params_schema(op, item, spec);
	full = standalone_schema(ok, spec);
	out = full ? top_level(full) : NULL;
	cJSON_Delete(full);
	compact(in, 0);
	if (!in || !out) {
		cJSON_Delete(in);
		cJSON_Delete(out);
		snprintf(err, errlen, "the schemas of %s do not resolve", t->operation_id);
		return NULL;
	}
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "name", t->name);
	cJSON_AddStringToObject(d, "title", t->title);
	cJSON_AddStringToObject(d, "description", t->description);
	api_json_add(d, "inputSchema", in);
	api_json_add(d, "outputSchema", out);
	ann = cJSON_AddObjectToObject(d, "annotations");
	cJSON_AddStringToObject(ann, "title", t->title);
	cJSON_AddBoolToObject(ann, "readOnlyHint", true);
	cJSON_AddBoolToObject(ann, "destructiveHint", false);
	cJSON_AddBoolToObject(ann, "idempotentHint", true);
	cJSON_AddBoolToObject(ann, "openWorldHint", false);
	if (!d || cJSON_GetArraySize(d) < 6) {
		cJSON_Delete(d);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	return d;
}

/* --- Sentences a model can quote ---------------------------------------------------------- */

static const cJSON *jget(const cJSON *o, const char *a, const char *b)
{
	o = cJSON_GetObjectItemCaseSensitive(o, a);
	return b ? cJSON_GetObjectItemCaseSensitive(o, b) : o;
}

static const char *jstr(const cJSON *o, const char *fallback)
{
	return cJSON_IsString(o) && o->valuestring[0] ? o->valuestring : fallback;
}

static double gib(const cJSON *bytes)
{
	return cJSON_IsNumber(bytes) ? bytes->valuedouble / (1024.0 * 1024.0 * 1024.0) : 0;
}

/* Appends "about N tok/s" when the estimate has a decode speed. */
static void speed_words(const cJSON *est, char *buf, size_t len)
{
	const cJSON *tps = jget(jget(est, "speed", NULL), "decode_tokens_per_s", NULL);

	buf[0] = '\0';
	if (cJSON_IsNumber(tps) && tps->valuedouble > 0)
		snprintf(buf, len, ", about %.0f tok/s decode", tps->valuedouble);
}

static const char *model_name(const cJSON *o)
{
	const cJSON *m = jget(o, "model", NULL);

	if (cJSON_IsString(m))
		return m->valuestring;
	return jstr(jget(m, "id", NULL), jstr(jget(m, "name", NULL), "the model"));
}

static void say_estimate(const cJSON *r, char *buf, size_t len)
{
	const cJSON *set = jget(r, "settings", NULL);
	const cJSON *dev = cJSON_GetArrayItem(jget(r, "memory", "per_device"), 0);
	const cJSON *ctx = jget(set, "n_ctx", NULL);
	const cJSON *budget = jget(dev, "budget_bytes", NULL);
	char speed[64], where[96] = "";

	speed_words(r, speed, sizeof(speed));
	if (cJSON_IsNumber(budget))
		snprintf(where, sizeof(where), " %s: %.1f of %.1f GiB",
			 jstr(jget(dev, "device", NULL), "the device"),
			 gib(jget(dev, "bytes", NULL)), gib(budget));
	snprintf(buf, len, "%s %s (%s) at %.0f tokens of context %s%s%s; fit band %s.",
		 model_name(r), jstr(jget(set, "quant", NULL), ""),
		 jstr(jget(r, "mode", NULL), "inference"),
		 cJSON_IsNumber(ctx) ? ctx->valuedouble : 0,
		 cJSON_IsTrue(jget(r, "fits", NULL)) ? "fits" : "does not fit", where, speed,
		 jstr(jget(r, "fit_band", NULL), "unknown"));
}

static void say_hardware(const cJSON *r, char *buf, size_t len)
{
	const cJSON *gpus = jget(r, "gpus", NULL);
	const cJSON *g0 = cJSON_GetArrayItem(gpus, 0);
	int n = cJSON_GetArraySize(gpus);
	const cJSON *cores = jget(r, "cpu", "physical_cores");

	if (n > 0)
		snprintf(buf, len,
			 "%s with %d core(s) and %.1f GiB RAM; %d GPU(s), the first %s with "
			 "%.1f GiB; platform %s, backend %s.",
			 jstr(jget(r, "cpu", "model"), "A CPU"),
			 cJSON_IsNumber(cores) ? cores->valueint : 0,
			 gib(jget(r, "memory", "total_bytes")), n,
			 jstr(jget(g0, "name", NULL), "?"),
			 gib(jget(g0, "memory_total_bytes", NULL)),
			 jstr(jget(r, "platform", NULL), "?"), jstr(jget(r, "backend", NULL), "?"));
	else
		snprintf(buf, len,
			 "%s with %d core(s) and %.1f GiB RAM; no GPU found; platform %s, backend "
			 "%s.",
			 jstr(jget(r, "cpu", "model"), "A CPU"),
			 cJSON_IsNumber(cores) ? cores->valueint : 0,
			 gib(jget(r, "memory", "total_bytes")),
			 jstr(jget(r, "platform", NULL), "?"), jstr(jget(r, "backend", NULL), "?"));
}

static void say_recommend(const cJSON *r, char *buf, size_t len)
{
	const cJSON *recs = jget(r, "recommendations", NULL);
	const cJSON *first = cJSON_GetArrayItem(recs, 0);

	if (first)
		snprintf(buf, len, "%d recommendation(s); the first is %s.",
			 cJSON_GetArraySize(recs), model_name(first));
	else
		snprintf(buf, len, "No recommendation: %s",
			 jstr(jget(r, "reason", NULL), "nothing fits."));
}

static void say_config(const cJSON *r, char *buf, size_t len)
{
	const cJSON *tps = jget(r, "metadata", "expected_tokens_per_sec");
	const cJSON *vram = jget(r, "metadata", "estimated_vram_usage_gb");

	snprintf(buf, len,
		 "Run it with: %s (about %.1f GB of VRAM, %.0f tok/s expected; %d "
		 "downgrade(s)).",
		 jstr(jget(r, "command", NULL), "?"), cJSON_IsNumber(vram) ? vram->valuedouble : 0,
		 cJSON_IsNumber(tps) ? tps->valuedouble : 0,
		 cJSON_GetArraySize(jget(r, "downgrades", NULL)));
}

static void say_validate(const cJSON *r, char *buf, size_t len)
{
	const cJSON *errs = jget(r, "errors", NULL);
	const cJSON *first = cJSON_GetArrayItem(errs, 0);
	int nw = cJSON_GetArraySize(jget(r, "warnings", NULL));

	if (cJSON_IsTrue(jget(r, "is_valid", NULL)))
		snprintf(buf, len, "The config is valid here, with %d warning(s).", nw);
	else
		snprintf(buf, len, "The config will not work here: %s; %s.",
			 jstr(jget(first, "message", NULL), "see errors"),
			 jstr(jget(first, "suggestion", NULL), "see the errors"));
}

static void say_finetune(const cJSON *r, char *buf, size_t len)
{
	const char *why = jstr(jget(r, "explanation", NULL), "");

	snprintf(buf, len, "Tier %s; recommended model %s.%s%s",
		 jstr(jget(r, "profile", NULL), "?"),
		 jstr(jget(r, "recommended_model", NULL), "none"), why[0] ? " " : "", why);
}

static void say_profile(const cJSON *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s is a %s %s profile.", jstr(jget(r, "id", NULL), "?"),
		 jstr(jget(r, "source", NULL), "?"), jstr(jget(r, "kind", NULL), "?"));
}

static void say_models(const cJSON *r, char *buf, size_t len)
{
	const cJSON *m;
	int catalog = 0, local = 0;

	cJSON_ArrayForEach(m, jget(r, "models", NULL))
	{
		if (strcmp(jstr(jget(m, "where", NULL), ""), "catalog") == 0)
			catalog++;
		else
			local++;
	}
	snprintf(buf, len, "%d model(s) in the catalog and %d on this host.", catalog, local);
}

static void say(const struct mcp_tool *t, const cJSON *r, char *buf, size_t len)
{
	if (strcmp(t->name, "detect_hardware") == 0)
		say_hardware(r, buf, len);
	else if (strcmp(t->name, "estimate") == 0)
		say_estimate(r, buf, len);
	else if (strcmp(t->name, "recommend_models") == 0)
		say_recommend(r, buf, len);
	else if (strcmp(t->name, "write_runtime_config") == 0)
		say_config(r, buf, len);
	else if (strcmp(t->name, "validate_config") == 0)
		say_validate(r, buf, len);
	else if (strcmp(t->name, "plan_finetuning") == 0)
		say_finetune(r, buf, len);
	else if (strcmp(t->name, "list_models") == 0)
		say_models(r, buf, len);
	else
		say_profile(r, buf, len);
}

/* --- Calls -------------------------------------------------------------------------------- */

static cJSON *text_block(const char *text)
{
	cJSON *b = cJSON_CreateObject();

	cJSON_AddStringToObject(b, "type", "text");
	cJSON_AddStringToObject(b, "text", text);
	return b;
}

/* A tool result for an error envelope (the route's, or one made here). */
static cJSON *error_result(const char *envelope)
{
	cJSON *res = cJSON_CreateObject();
	cJSON *content = cJSON_AddArrayToObject(res, "content");

	api_json_append(content, text_block(envelope));
	cJSON_AddBoolToObject(res, "isError", true);
	return res;
}

static cJSON *error_result_of(int err, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A tool result for err with a printf-style message, naming field. */
static cJSON *error_result_of(int err, const char *field, const char *fmt, ...)
{
	struct api_reply r = {0};
	char msg[256];
	va_list ap;
	cJSON *res;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	api_error(&r, err, field, "%s", msg);
	res = error_result(r.body ? r.body : r.borrowed_body);
	api_reply_reset(&r);
	return res;
}

/* Builds the path of lookup_model: the id (a model alias or Hugging Face id resolved through
 * the catalog) as a profile id. Returns 0 or an error result in *err_res. */
static int profile_path(const struct api_env *env, const cJSON *args, char *path, size_t len,
			cJSON **err_res)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(args, "id");
	const cJSON *a;
	const char *name;
	char pid[API_PROFILE_ID_LEN + 1];

	cJSON_ArrayForEach(a, args)
	{
		if (strcmp(a->string, "id") != 0) {
			*err_res = error_result_of(RF_E_UNKNOWN_FIELD, a->string,
						   "lookup_model takes only id");
			return -1;
		}
	}
	if (!cJSON_IsString(id) || !id->valuestring[0]) {
		*err_res = error_result_of(id ? RF_E_INVALID_VALUE : RF_E_MISSING_FIELD, "id",
					   "id must be a non-empty string");
		return -1;
	}
	name = id->valuestring;
	if (env->cat.models) {
		const struct model_entry *e = model_catalog_find(env->cat.models, name);
		if (e)
			name = e->id;
	}
	if (api_profile_id_of(name, pid, sizeof(pid)) < 0) {
		*err_res =
			error_result_of(RF_E_INVALID_VALUE, "id", "id is not a valid profile id");
		return -1;
	}
	snprintf(path, len, "/api/profiles/%s", pid);
	return 0;
}

/* Whether the operation of t has a query parameter named name. */
static bool has_query_param(const struct api_env *env, const struct mcp_tool *t, const char *name)
{
	const cJSON *item = NULL;
	const cJSON *op = env->openapi_tree ?
				  find_operation(env->openapi_tree, t->operation_id, &item) :
				  NULL;
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(op, "parameters"))
	{
		const cJSON *in = cJSON_GetObjectItemCaseSensitive(p, "in");
		const cJSON *n = cJSON_GetObjectItemCaseSensitive(p, "name");
		if (cJSON_IsString(in) && strcmp(in->valuestring, "query") == 0 &&
		    cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return true;
	}
	return false;
}

/* Builds the query string of a GET tool from its arguments, each one of the operation's
 * query parameters with a string, number or boolean value, percent-encoded. Returns 0, or -1
 * with an error result in *err_res. */
static int query_of(const struct api_env *env, const struct mcp_tool *t, const cJSON *args,
		    char *buf, size_t len, cJSON **err_res)
{
	static const char hex[] = "0123456789ABCDEF";
	const cJSON *a;
	size_t used = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(a, args)
	{
		char val[256];
		if (!has_query_param(env, t, a->string)) {
			*err_res = error_result_of(RF_E_UNKNOWN_FIELD, a->string,
						   "%s takes no argument '%.60s'", t->name,
						   a->string);
			return -1;
		}
		if (cJSON_IsString(a) && strlen(a->valuestring) < sizeof(val))
			snprintf(val, sizeof(val), "%s", a->valuestring);
		else if (cJSON_IsNumber(a))
			snprintf(val, sizeof(val), "%.17g", a->valuedouble);
		else if (cJSON_IsBool(a))
			snprintf(val, sizeof(val), "%s", cJSON_IsTrue(a) ? "true" : "false");
		else {
			*err_res = error_result_of(RF_E_INVALID_VALUE, a->string,
						   "%.60s must be a string of at most 255 bytes, a "
						   "number or a boolean",
						   a->string);
			return -1;
		}
		/* name=value&: the name is a parameter of the spec, plain ASCII. */
		if (used + strlen(a->string) + 3 * strlen(val) + 3 > len) {
			*err_res = error_result_of(RF_E_TOO_LARGE, a->string, "%s",
						   "the arguments are too long");
			return -1;
		}
		used += (size_t)snprintf(buf + used, len - used, "%s%s=", used ? "&" : "",
					 a->string);
		for (const unsigned char *c = (const unsigned char *)val; *c; c++) {
			if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			    (*c >= '0' && *c <= '9') || strchr("-._~", *c)) {
				buf[used++] = (char)*c;
			} else {
				buf[used++] = '%';
				buf[used++] = hex[*c >> 4];
				buf[used++] = hex[*c & 15];
			}
		}
		buf[used] = '\0';
	}
	return 0;
}

void *mcp_tool_call(const struct api_env *env, const struct mcp_tool *t, const void *args_)
{
	const cJSON *args = args_;
	struct api_request req = {0};
	struct api_reply out = {0};
	char path[TOOL_PATH_MAX + 16];
	char query[TOOL_QUERY_MAX];
	char *body = NULL;
	cJSON *res = NULL, *structured, *content;
	const char *text;
	char sentence[1024];

	req.method = t->method;
	req.query = "";
	req.path = t->path;
	if (strcmp(t->path, "/api/profiles/{id}") == 0) {
		if (profile_path(env, args, path, sizeof(path), &res) < 0)
			return res;
		req.path = path;
	} else if (t->method == API_GET) {
		if (query_of(env, t, args, query, sizeof(query), &res) < 0)
			return res;
		req.query = query;
	} else {
		body = args ? api_json_print(args) : strdup("{}");
		if (!body)
			return NULL;
		req.body = body;
		req.body_len = strlen(body);
	}
	api_dispatch(env, &req, &out);
	free(body);
	text = out.body ? out.body : out.borrowed_body;
	if (out.status < 200 || out.status > 299 || !text) {
		res = error_result(text ? text : "{}");
		api_reply_reset(&out);
		return res;
	}
	structured = cJSON_ParseWithLength(text, out.len);
	if (!structured) {
		api_reply_reset(&out);
		return NULL;
	}
	say(t, structured, sentence, sizeof(sentence));
	res = cJSON_CreateObject();
	content = cJSON_AddArrayToObject(res, "content");
	api_json_append(content, text_block(sentence));
	/* Clients without structuredContent support read the answer from a text block. */
	api_json_append(content, text_block(text));
	api_json_add(res, "structuredContent", structured);
	cJSON_AddBoolToObject(res, "isError", false);
	api_reply_reset(&out);
	return res;
}
