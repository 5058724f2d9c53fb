/*
 * How the CLI prints a route's answer (see cli_priv.h): `json` is the route's bytes, `summary`
 * a few labelled lines a person reads first (a table of paths per command, so adding a line is
 * adding a row), and `table` every value of the answer, aligned: its scalars as FIELD VALUE
 * rows, and each list of objects as rows under a header of their short scalar fields.
 */
#include "server/cli/cli_priv.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How a summary line shows its value. */
enum fmt_style {
	FS_VAL,      /* as it is */
	FS_GIB,      /* bytes as GiB */
	FS_GIB_SOME, /* bytes as GiB, left out when none */
	FS_RATE,     /* tokens per second */
	FS_PCT,      /* a 0..1 fraction as a percentage */
	FS_NOTES,    /* an array of strings or of checks {code, message, suggestion} */
	FS_ROWS,     /* an array of objects, one line each from the command's row columns */
	FS_FIT,      /* recommend's models: the fit table (print_fit_table) */
};

struct fmt_line {
	const char *cmd;
	const char *label;
	const char *path; /* dotted, from the answer's top */
	enum fmt_style style;
};

static const struct fmt_line summary_lines[] = {
	{"estimate", "Model", "model.id", FS_VAL},
	{"estimate", "Mode", "mode", FS_VAL},
	{"estimate", "Hardware", "hardware.profile_id", FS_VAL},
	{"estimate", "Backend", "hardware.backend", FS_VAL},
	{"estimate", "Quant", "settings.quant", FS_VAL},
	{"estimate", "Context", "settings.n_ctx", FS_VAL},
	{"estimate", "Fits", "fits", FS_VAL},
	{"estimate", "Fit band", "fit_band", FS_VAL},
	{"estimate", "Utilization", "utilization", FS_PCT},
	{"estimate", "Memory total", "memory.total_bytes", FS_GIB},
	{"estimate", "  weights", "memory.weights_bytes", FS_GIB},
	{"estimate", "  KV cache", "memory.kv_cache_bytes", FS_GIB},
	{"estimate", "  compute", "memory.compute_bytes", FS_GIB},
	{"estimate", "  reclaimable", "memory.host_reclaimable_bytes", FS_GIB_SOME},
	{"estimate", "Decode", "speed.decode_tokens_per_s", FS_RATE},
	{"estimate", "Decode, context full", "speed.decode_tokens_per_s_at_full_ctx", FS_RATE},
	{"estimate", "Prefill (512)", "speed.prefill_tokens_per_s", FS_RATE},
	{"estimate", "Speed basis", "speed.basis", FS_VAL},
	{"estimate", "Training", "training.tokens_per_s", FS_RATE},
	{"estimate", "Sequence length", "training.seq_len", FS_VAL},
	{"estimate", "Batch size", "training.batch_size", FS_VAL},
	{"estimate", "Hours per epoch", "training.hours_per_epoch", FS_VAL},
	{"estimate", "Hours in all", "training.total_hours", FS_VAL},
	{"estimate", "Cost (USD)", "training.cost_usd", FS_VAL},
	{"config", "Runtime", "runtime", FS_VAL},
	{"config", "Model", "model.id", FS_VAL},
	{"config", "Use case", "metadata.use_case", FS_VAL},
	{"config", "Precision", "metadata.precision", FS_VAL},
	{"config", "Context", "settings.n_ctx", FS_VAL},
	{"config", "GPU layers", "settings.n_gpu_layers", FS_VAL},
	{"config", "Expected decode", "metadata.expected_tokens_per_sec", FS_RATE},
	{"config", "VRAM (GB)", "metadata.estimated_vram_usage_gb", FS_VAL},
	{"config", "Downgrades", "downgrades", FS_NOTES},
	{"config", "Command", "command", FS_VAL},
	{"recommend", "For", "for", FS_VAL},
	{"recommend", "Task", "task", FS_VAL},
	{"recommend", "Considered", "considered", FS_VAL},
	{"recommend", "Model", "model", FS_VAL},
	{"recommend", "Best first", "recommendations", FS_FIT},
	{"recommend", "Hardware, best first", "hardware", FS_ROWS},
	{"finetune", "Task", "task", FS_VAL},
	{"finetune", "GPU", "gpu_name", FS_VAL},
	{"finetune", "GPU memory (GB)", "gpu_total_memory_gb", FS_VAL},
	{"finetune", "Backend", "backend", FS_VAL},
	{"finetune", "Tier", "compute_profile", FS_VAL},
	{"finetune", "Model", "recommended_model", FS_VAL},
	{"finetune", "Method", "settings.method", FS_VAL},
	{"finetune", "Provider", "settings.provider", FS_VAL},
	{"finetune", "Sequence length", "settings.max_seq_length", FS_VAL},
	{"finetune", "Batch per device", "settings.per_device_train_batch_size", FS_VAL},
	{"finetune", "Accumulation", "settings.gradient_accumulation_steps", FS_VAL},
	{"finetune", "LoRA rank", "settings.lora_r", FS_VAL},
	{"finetune", "Optimizer", "settings.optim", FS_VAL},
	{"finetune", "GPUs, strategy", "settings.parallel_strategy", FS_VAL},
	{"finetune", "Memory", "estimate.memory.total_bytes", FS_GIB},
	{"finetune", "Utilization", "estimate.utilization", FS_PCT},
	{"finetune", "Training", "estimate.training.tokens_per_s", FS_RATE},
	{"finetune", "Why not", "explanation", FS_VAL},
	{"finetune", "Other models", "possible_models", FS_NOTES},
	{"validate", "Valid", "is_valid", FS_VAL},
	{"validate", "Errors", "errors", FS_NOTES},
	{"validate", "Warnings", "warnings", FS_NOTES},
	{"validate", "Fits", "estimate.fits", FS_VAL},
	{"validate", "Memory total", "estimate.memory.total_bytes", FS_GIB},
};

/* The columns of a summary's FS_ROWS lines. */
static const char *const row_columns[] = {"model",
					  "name",
					  "device",
					  "count",
					  "precision",
					  "settings.n_ctx",
					  "estimate.fit_band",
					  "estimate.decode_tokens_per_s",
					  "usd_per_million_tokens",
					  "score",
					  NULL};

/* Returns the item at a dotted path under j, or NULL. */
static const cJSON *at_path(const cJSON *j, const char *path)
{
	char key[64];

	while (j && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		j = cJSON_GetObjectItemCaseSensitive(j, key);
		path += n + (path[n] == '.');
	}
	return j;
}

/* Writes a scalar's text to buf: strings as they are, numbers without noise digits. */
static void scalar_text(const cJSON *v, char *buf, size_t len)
{
	if (cJSON_IsString(v))
		snprintf(buf, len, "%s", v->valuestring);
	else if (cJSON_IsBool(v))
		snprintf(buf, len, "%s", cJSON_IsTrue(v) ? "yes" : "no");
	else if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
		 fabs(v->valuedouble) < 1e15)
		snprintf(buf, len, "%.0f", v->valuedouble);
	else if (cJSON_IsNumber(v) && fabs(v->valuedouble) >= 1000)
		snprintf(buf, len, "%.0f", v->valuedouble);
	else if (cJSON_IsNumber(v))
		snprintf(buf, len, "%.4g", v->valuedouble);
	else
		snprintf(buf, len, "-");
}

static void print_notes(const cJSON *arr, FILE *out)
{
	const cJSON *it;
	char a[512];

	cJSON_ArrayForEach(it, arr)
	{
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(it, "message");
		const cJSON *sug = cJSON_GetObjectItemCaseSensitive(it, "suggestion");
		scalar_text(cJSON_IsObject(it) ? msg : it, a, sizeof(a));
		fprintf(out, "  - %s\n", a);
		if (cJSON_IsString(sug) && *sug->valuestring)
			fprintf(out, "    try: %s\n", sug->valuestring);
	}
}

static void print_rows(const cJSON *arr, FILE *out)
{
	const cJSON *it;
	int rank = 0;

	cJSON_ArrayForEach(it, arr)
	{
		char v[256];
		fprintf(out, "  %2d.", ++rank);
		for (int c = 0; row_columns[c]; c++) {
			const cJSON *x = at_path(it, row_columns[c]);
			if (!x || cJSON_IsNull(x))
				continue;
			scalar_text(x, v, sizeof(v));
			if (strcmp(row_columns[c], "estimate.decode_tokens_per_s") == 0)
				fprintf(out, "  %s tok/s", v);
			else if (strcmp(row_columns[c], "settings.n_ctx") == 0)
				fprintf(out, "  ctx %s", v);
			else if (strcmp(row_columns[c], "usd_per_million_tokens") == 0)
				fprintf(out, "  $%s/Mtok", v);
			else if (strcmp(row_columns[c], "score") == 0)
				fprintf(out, "  score %s", v);
			else
				fprintf(out, "  %s", v);
		}
		fputc('\n', out);
	}
}

/* Tokens as a person reads a context: 4096 -> "4k", 131072 -> "128k", 17408 -> "17k". */
static void ctx_text(double n, char *buf, size_t len)
{
	if (n >= 1024)
		snprintf(buf, len, "%.0fk", n / 1024.0);
	else
		snprintf(buf, len, "%.0f", n);
}

/* recommend's models as the first screen shows them: one aligned row per model, best first,
 * with its quant, context, speed, memory and fit verdict (the fit band and how full it is). */
static void print_fit_table(const cJSON *arr, FILE *out)
{
	const cJSON *it;
	int rank = 0, w = 5;

	cJSON_ArrayForEach(it, arr)
	{
		const cJSON *m = at_path(it, "model");
		if (cJSON_IsString(m) && (int)strlen(m->valuestring) > w)
			w = (int)strlen(m->valuestring) < 44 ? (int)strlen(m->valuestring) : 44;
	}
	fprintf(out, "  %2s  %-*s  %7s  %-8s  %7s  %12s  %9s  %s\n", "#", w, "MODEL", "PARAMS",
		"QUANT", "CONTEXT", "DECODE", "MEMORY", "FIT");
	cJSON_ArrayForEach(it, arr)
	{
		const cJSON *model = at_path(it, "model"), *params = at_path(it, "params_b");
		const cJSON *quant = at_path(it, "settings.quant"),
			    *ctx = at_path(it, "settings.n_ctx");
		const cJSON *tps = at_path(it, "estimate.decode_tokens_per_s");
		const cJSON *mem = at_path(it, "estimate.memory_needed_bytes");
		const cJSON *band = at_path(it, "estimate.fit_band");
		const cJSON *util = at_path(it, "estimate.utilization");
		char p[24] = "-", c[24] = "-", t[24] = "-", g[24] = "-", f[48] = "-";

		if (!quant)
			quant = at_path(it, "precision");
		if (cJSON_IsNumber(params))
			snprintf(p, sizeof(p), "%.1fB", params->valuedouble);
		if (cJSON_IsNumber(ctx))
			ctx_text(ctx->valuedouble, c, sizeof(c));
		if (cJSON_IsNumber(tps))
			snprintf(t, sizeof(t), "%.1f tok/s", tps->valuedouble);
		if (!mem)
			mem = at_path(it, "estimate.memory_total_bytes");
		if (cJSON_IsNumber(mem))
			snprintf(g, sizeof(g), "%.1f GiB", mem->valuedouble / 1073741824.0);
		if (cJSON_IsString(band) && cJSON_IsNumber(util))
			snprintf(f, sizeof(f), "%s (%.0f%%)", band->valuestring,
				 util->valuedouble * 100);
		else if (cJSON_IsString(band))
			snprintf(f, sizeof(f), "%s", band->valuestring);
		fprintf(out, "  %2d  %-*.*s  %7s  %-8s  %7s  %12s  %9s  %s\n", ++rank, w, w,
			cJSON_IsString(model) ? model->valuestring : "-", p,
			cJSON_IsString(quant) ? quant->valuestring : "-", c, t, g, f);
	}
}

static void print_summary(const cJSON *j, const char *cmd, FILE *out)
{
	for (size_t i = 0; i < sizeof(summary_lines) / sizeof(summary_lines[0]); i++) {
		const struct fmt_line *l = &summary_lines[i];
		const cJSON *v;
		char text[1024];

		if (strcmp(l->cmd, cmd) != 0)
			continue;
		v = at_path(j, l->path);
		if (!v || cJSON_IsNull(v))
			continue;
		if (l->style == FS_NOTES || l->style == FS_ROWS || l->style == FS_FIT) {
			if (cJSON_GetArraySize(v) == 0)
				continue;
			fprintf(out, "%s:\n", l->label);
			if (l->style == FS_NOTES)
				print_notes(v, out);
			else if (l->style == FS_FIT)
				print_fit_table(v, out);
			else
				print_rows(v, out);
			continue;
		}
		if (l->style == FS_GIB_SOME && !(cJSON_IsNumber(v) && v->valuedouble > 0))
			continue;
		if ((l->style == FS_GIB || l->style == FS_GIB_SOME) && cJSON_IsNumber(v))
			snprintf(text, sizeof(text), "%.2f GiB", v->valuedouble / 1073741824.0);
		else if (l->style == FS_RATE && cJSON_IsNumber(v))
			snprintf(text, sizeof(text), "%.1f tokens/s", v->valuedouble);
		else if (l->style == FS_PCT && cJSON_IsNumber(v))
			snprintf(text, sizeof(text), "%.0f%%", v->valuedouble * 100);
		else
			scalar_text(v, text, sizeof(text));
		fprintf(out, "%-22s %s\n", l->label, text);
	}
}

/* Prints every scalar under j as "PATH VALUE" (arrays of scalars joined by commas). */
static void print_pairs(const cJSON *j, const char *prefix, FILE *out)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, j)
	{
		char path[256], v[1024];
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", it->string);
		if (cJSON_IsObject(it)) {
			print_pairs(it, path, out);
		} else if (cJSON_IsArray(it)) {
			const cJSON *first = cJSON_GetArrayItem(it, 0);
			const cJSON *e;
			size_t n = 0;
			if (cJSON_IsObject(first) || cJSON_IsArray(first))
				continue; /* printed as rows below */
			v[0] = '\0';
			cJSON_ArrayForEach(e, it)
			{
				char one[256];
				scalar_text(e, one, sizeof(one));
				n += (size_t)snprintf(v + n, sizeof(v) - n, "%s%s", n ? ", " : "",
						      one);
				if (n >= sizeof(v))
					break;
			}
			fprintf(out, "%-40s %s\n", path, first ? v : "-");
		} else {
			scalar_text(it, v, sizeof(v));
			fprintf(out, "%-40s %s\n", path, v);
		}
	}
}

#define ROW_MAX_COLS 16
#define ROW_MAX_WIDTH 40

/* The columns of a row table: the first item's scalars and those of its objects one level
 * down ("estimate.fits"), leaving out prose (strings longer than ROW_MAX_WIDTH). */
struct row_cols {
	int n;
	char path[ROW_MAX_COLS][64];
	int width[ROW_MAX_COLS];
};

static void cols_add(struct row_cols *c, const cJSON *obj, const char *prefix)
{
	const cJSON *col;

	cJSON_ArrayForEach(col, obj)
	{
		if (c->n >= ROW_MAX_COLS)
			return;
		if (cJSON_IsObject(col) && !*prefix) {
			cols_add(c, col, col->string);
			continue;
		}
		if (cJSON_IsObject(col) || cJSON_IsArray(col) ||
		    (cJSON_IsString(col) && strlen(col->valuestring) > ROW_MAX_WIDTH))
			continue;
		snprintf(c->path[c->n], sizeof(c->path[0]), "%s%s%s", prefix, *prefix ? "." : "",
			 col->string);
		c->width[c->n] = (int)strlen(c->path[c->n]);
		c->n++;
	}
}

static void print_row_table(const cJSON *arr, const char *path, FILE *out)
{
	struct row_cols c = {0};
	const cJSON *row;
	char v[256];

	cols_add(&c, cJSON_GetArrayItem(arr, 0), "");
	cJSON_ArrayForEach(row, arr) for (int i = 0; i < c.n; i++)
	{
		scalar_text(at_path(row, c.path[i]), v, sizeof(v));
		if ((int)strlen(v) > c.width[i])
			c.width[i] = (int)strlen(v) < ROW_MAX_WIDTH ? (int)strlen(v) :
								      ROW_MAX_WIDTH;
	}
	fprintf(out, "\n%s:\n", path);
	for (int i = 0; i < c.n; i++)
		fprintf(out, "%-*s%s", c.width[i], c.path[i], i + 1 < c.n ? "  " : "\n");
	cJSON_ArrayForEach(row, arr) for (int i = 0; i < c.n; i++)
	{
		scalar_text(at_path(row, c.path[i]), v, sizeof(v));
		fprintf(out, "%-*.*s%s", c.width[i], ROW_MAX_WIDTH, v, i + 1 < c.n ? "  " : "\n");
	}
}

/* Prints each array of objects under j (at any depth) as a row table. */
static void print_row_tables(const cJSON *j, const char *prefix, FILE *out)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, j)
	{
		char path[256];

		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", it->string);
		if (cJSON_IsObject(it))
			print_row_tables(it, path, out);
		else if (cJSON_IsArray(it) && cJSON_IsObject(cJSON_GetArrayItem(it, 0)))
			print_row_table(it, path, out);
	}
}

/* Returns true when command cmd has summary lines; the others summarise as a table. */
static bool has_summary(const char *cmd)
{
	for (size_t i = 0; cmd && i < sizeof(summary_lines) / sizeof(summary_lines[0]); i++)
		if (strcmp(summary_lines[i].cmd, cmd) == 0)
			return true;
	return false;
}

int cli_format_parse(const char *cmd, const char *v, enum cli_format *out)
{
	if (strcmp(v, "json") == 0)
		*out = CLI_FMT_JSON;
	else if (strcmp(v, "summary") == 0)
		*out = CLI_FMT_SUMMARY;
	else if (strcmp(v, "table") == 0)
		*out = CLI_FMT_TABLE;
	else
		return cli_usage_error("%s: --format must be summary, json or table, not '%.40s'",
				       cmd, v);
	return 0;
}

enum cli_format cli_format_default(void)
{
	return isatty(STDOUT_FILENO) ? CLI_FMT_SUMMARY : CLI_FMT_JSON;
}

int cli_print_json_as(const char *json, size_t len, enum cli_format f, const char *cmd)
{
	cJSON *j;

	if (f == CLI_FMT_JSON) {
		fwrite(json, 1, len, stdout);
		fputc('\n', stdout);
		return 0;
	}
	j = cJSON_ParseWithLength(json, len);
	if (!j) {
		fprintf(stderr, "rigfit: out of memory\n");
		return 1;
	}
	if (f == CLI_FMT_SUMMARY && has_summary(cmd)) {
		print_summary(j, cmd, stdout);
	} else {
		print_pairs(j, "", stdout);
		print_row_tables(j, "", stdout);
	}
	cJSON_Delete(j);
	return 0;
}

int cli_print_reply_as(const struct api_reply *r, enum cli_format f, const char *cmd)
{
	if (r->status >= 300 || f == CLI_FMT_JSON)
		return cli_print_reply(r);
	return cli_print_json_as(r->body ? r->body : r->borrowed_body, r->len, f, cmd);
}
