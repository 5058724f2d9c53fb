/*
 * Declarative JSON -> struct mapping. A request type is a table of fields (name, kind, range,
 * where it goes); one walker checks the body against it and reports the first offending field
 * by name, so every route rejects bad input the same way: unknown fields, wrong types,
 * fractions where integers are expected, values out of range, missing required fields.
 */
#ifndef RIGFIT_API_JSONMAP_H
#define RIGFIT_API_JSONMAP_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"

enum jm_kind {
	JM_INT,        /* int64_t; integral JSON number in [min, max] */
	JM_DOUBLE,     /* double; finite number in [min, max] */
	JM_BOOL,       /* bool */
	JM_STRING,     /* char[size]; 1..size-1 bytes of UTF-8 without NUL */
	JM_ENUM,       /* int; the index of the string in `choices` */
	JM_INT_OR_MAX, /* int64_t like JM_INT, or the string "max": then -1 ("as large as fits") */
	JM_ANY,        /* accepted here, mapped by the caller (nested objects: model, hardware) */
};

struct jm_field {
	const char *name;
	enum jm_kind kind;
	size_t offset;   /* where the value goes in the destination struct */
	size_t size;     /* JM_STRING: the buffer size */
	double min, max; /* JM_INT, JM_DOUBLE */
	bool required;
	size_t set_offset; /* offset of a bool set to true when the field was given; 0: none */
	const char *const *choices; /* JM_ENUM: NULL-terminated allowed strings */
};

/* Parses req's body as one JSON object. An empty body gives an empty object when
 * allow_empty. Returns 0 and the tree in *out (free with cJSON_Delete), or an error envelope
 * in reply: 400 invalid_json (malformed, not UTF-8, trailing bytes), 422 when the top level is
 * not an object. */
int jm_parse_body(const struct api_request *req, bool allow_empty, cJSON **out /* OUT */,
		  struct api_reply *reply);

/* Parses req's body as one JSON value of any type (an array, for formats that write one), with
 * the same checks and errors as jm_parse_body except the object requirement. Returns 0 and the
 * tree in *out (free with cJSON_Delete), or an error envelope in reply. */
int jm_parse_value(const struct api_request *req, bool allow_empty, cJSON **out /* OUT */,
		   struct api_reply *reply);

/* Why jm_parse_text refused a text. */
enum jm_text_fault {
	JM_TEXT_OK = 0,
	JM_TEXT_NOMEM,      /* cJSON ran out of memory */
	JM_TEXT_UTF8,       /* not valid UTF-8, or a raw NUL byte */
	JM_TEXT_NUL_ESCAPE, /* a \u0000 escape, which would cut a C string short */
	JM_TEXT_MALFORMED,  /* not JSON; *off: near which byte */
	JM_TEXT_TRAILING,   /* bytes other than white space after the value; *off: the first */
};

/* Parses text[0..len) as exactly one JSON value, with the checks cJSON leaves out: valid UTF-8
 * without NUL, no \u0000 escape, nothing but white space after the value. Every transport that
 * reads JSON from a client (REST bodies, MCP messages) goes through it, so they accept the same
 * texts. Returns JM_TEXT_OK and the tree in *out (free with cJSON_Delete), or why not (*out
 * untouched; *off where, for MALFORMED and TRAILING). */
enum jm_text_fault jm_parse_text(const char *text, size_t len, cJSON **out /* OUT */,
				 size_t *off /* OUT */);

/* Copies the fields of obj into dst as the table says. Returns 0, or an error envelope in
 * reply naming the field (422 unknown_field / missing_field / invalid_value). */
int jm_map(const cJSON *obj, const struct jm_field *fields, size_t n_fields, void *dst,
	   struct api_reply *reply);

/* Returns the index of name in choices (a JM_ENUM field's names, NULL-terminated), or -1:
 * how a route that fills a request struct directly picks the value a JSON name stands for. */
int jm_choice(const char *const *choices, const char *name);

/* Returns true when s[0..len) is valid UTF-8 (no overlongs, no surrogates, no NUL). */
bool jm_utf8_valid(const char *s, size_t len);

#endif
