/*
 * YAML to cJSON with libyaml's document loader. The spec is small (tens of KiB) and trusted
 * (built into the binary), but the converter is still bounded: nesting deeper than
 * YAML_MAX_DEPTH and aliases (which can blow a document up exponentially) are refused.
 */
#include "server/openapi_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "server/embedded.h"
#include "server/log.h"

#define YAML_MAX_DEPTH 64

/* A plain scalar as YAML 1.2's core schema reads it. */
static cJSON *plain_scalar(const char *s, size_t len)
{
	char *end;
	double v;

	if (len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
	    strcmp(s, "NULL") == 0)
		return cJSON_CreateNull();
	if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
		return cJSON_CreateTrue();
	if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0)
		return cJSON_CreateFalse();
	if (strchr("-+.0123456789", s[0])) {
		errno = 0;
		v = strtod(s, &end);
		if (end == s + len && errno == 0 && isfinite(v) && strpbrk(s, "xXpP") == NULL)
			return cJSON_CreateNumber(v);
	}
	return cJSON_CreateString(s);
}

static cJSON *node_json(yaml_document_t *doc, yaml_node_t *n, int depth, char *err, size_t errlen)
{
	cJSON *out = NULL;

	if (!n || depth > YAML_MAX_DEPTH) {
		snprintf(err, errlen, "nesting deeper than %d", YAML_MAX_DEPTH);
		return NULL;
	}
	switch (n->type) {
	case YAML_SCALAR_NODE:
		if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
			out = plain_scalar((const char *)n->data.scalar.value,
					   n->data.scalar.length);
		else
			out = cJSON_CreateString((const char *)n->data.scalar.value);
		break;
	case YAML_SEQUENCE_NODE:
		out = cJSON_CreateArray();
		for (yaml_node_item_t *it = n->data.sequence.items.start;
		     out && it < n->data.sequence.items.top; it++) {
			cJSON *v = node_json(doc, yaml_document_get_node(doc, *it), depth + 1, err,
					     errlen);
			if (!v) {
				cJSON_Delete(out);
				return NULL;
			}
			cJSON_AddItemToArray(out, v);
		}
		break;
	case YAML_MAPPING_NODE:
		out = cJSON_CreateObject();
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
		     out && p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(doc, p->key);
			cJSON *v;
			if (!k || k->type != YAML_SCALAR_NODE) {
				snprintf(err, errlen, "line %lu: a key that is not a scalar",
					 k ? (unsigned long)k->start_mark.line + 1 : 0ul);
				cJSON_Delete(out);
				return NULL;
			}
			v = node_json(doc, yaml_document_get_node(doc, p->value), depth + 1, err,
				      errlen);
			if (!v) {
				cJSON_Delete(out);
				return NULL;
			}
			cJSON_AddItemToObject(out, (const char *)k->data.scalar.value, v);
		}
		break;
	default:
		break;
	}
	if (!out && !err[0])
		snprintf(err, errlen, "out of memory");
	return out;
}

/* Refuses aliases before loading: libyaml's loader shares aliased nodes, and the walk above
 * would expand each use. */
static int has_alias(const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int rc = 0;

	if (!yaml_parser_initialize(&p))
		return -1;
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	for (;;) {
		if (!yaml_parser_parse(&p, &ev)) {
			snprintf(err, errlen, "line %lu: %s",
				 (unsigned long)p.problem_mark.line + 1,
				 p.problem ? p.problem : "syntax error");
			rc = -1;
			break;
		}
		if (ev.type == YAML_ALIAS_EVENT) {
			snprintf(err, errlen, "line %lu: aliases are not supported",
				 (unsigned long)ev.start_mark.line + 1);
			rc = -1;
		}
		if (ev.type == YAML_STREAM_END_EVENT || rc < 0) {
			yaml_event_delete(&ev);
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return rc;
}

void *rf_yaml_to_json(const char *text, size_t len, char *err, size_t errlen)
{
	yaml_parser_t p;
	yaml_document_t doc;
	cJSON *out = NULL;

	err[0] = '\0';
	if (has_alias(text, len, err, errlen) < 0)
		return NULL;
	if (!yaml_parser_initialize(&p)) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
	if (!yaml_parser_load(&p, &doc)) {
		snprintf(err, errlen, "line %lu: %s", (unsigned long)p.problem_mark.line + 1,
			 p.problem ? p.problem : "syntax error");
		yaml_parser_delete(&p);
		return NULL;
	}
	if (yaml_document_get_root_node(&doc))
		out = node_json(&doc, yaml_document_get_root_node(&doc), 0, err, errlen);
	else
		snprintf(err, errlen, "the document is empty");
	yaml_document_delete(&doc);
	yaml_parser_delete(&p);
	return out;
}

void *rf_openapi_json(void)
{
	char err[256];
	void *tree = rf_yaml_to_json(rf_embed_openapi, rf_embed_openapi_len, err, sizeof(err));

	if (!tree)
		rf_log_error("the embedded openapi.yaml does not parse: %s", err);
	return tree;
}

void rf_openapi_json_free(void *tree)
{
	cJSON_Delete(tree);
}
