/*
 * The one table of rigfit's error codes. Every function that can fail returns 0 or one of
 * these negative codes; the API layer turns a code into an HTTP status and the stable
 * snake_case string that clients match on. Adding a row here is the only way to add an error.
 */
#ifndef RIGFIT_CORE_ERR_H
#define RIGFIT_CORE_ERR_H

/* X(enum suffix, api code, HTTP status, default message) */
#define RF_ERROR_TABLE(X)                                                                          \
	X(NOMEM, "out_of_memory", 503, "the server is out of memory")                              \
	X(INVALID_JSON, "invalid_json", 400, "the request body is not valid JSON")                 \
	X(BAD_REQUEST, "bad_request", 400, "the request is malformed")                             \
	X(UNAUTHORIZED, "unauthorized", 401, "a valid bearer token is required")                   \
	X(FORBIDDEN, "forbidden", 403, "access to this resource is not allowed")                   \
	X(NOT_FOUND, "not_found", 404, "no such resource")                                         \
	X(METHOD_NOT_ALLOWED, "method_not_allowed", 405, "this method is not allowed here")        \
	X(CONFLICT, "conflict", 409, "the resource is in a conflicting state")                     \
	X(BODY_TOO_LARGE, "payload_too_large", 413, "the request body is larger than 1 MiB")       \
	X(URI_TOO_LONG, "uri_too_long", 414, "the request URL is too long")                        \
	X(UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type", 415,                                   \
	  "the request body must be application/json")                                             \
	X(INVALID_VALUE, "invalid_value", 422, "a field has an invalid value")                     \
	X(UNKNOWN_FIELD, "unknown_field", 422, "the request has a field that is not known")        \
	X(MISSING_FIELD, "missing_field", 422, "a required field is missing")                      \
	X(RATE_LIMITED, "rate_limited", 429, "too many requests; try again later")                 \
	X(INTERNAL, "internal_error", 500, "internal error")                                       \
	X(STORE_UNAVAILABLE, "store_unavailable", 503, "the database is unavailable")              \
	X(UNAVAILABLE, "unavailable", 503, "the service is not ready")                             \
	X(PARSE, "parse_error", 422, "the input could not be parsed")                              \
	X(RANGE, "out_of_range", 422, "a value is out of range")                                   \
	X(TOO_LARGE, "too_large", 422, "an input is larger than its limit")                        \
	X(IO, "io_error", 500, "an I/O operation failed")                                          \
	X(TIMEOUT, "timeout", 504, "an operation timed out")

enum rf_err {
	RF_OK = 0,
	RF_ERR_BASE_ = -1000,
#define RF_ERR_ENUM_(name, code, status, msg) RF_E_##name,
	RF_ERROR_TABLE(RF_ERR_ENUM_)
#undef RF_ERR_ENUM_
	RF_ERR_END_
};

/* Returns the stable api code ("invalid_json") of err, or "internal_error" for an unknown one. */
const char *rf_err_code(int err);
/* Returns the HTTP status that err maps to (500 for an unknown code). */
int rf_err_status(int err);
/* Returns the default human message of err. Static storage; never NULL. */
const char *rf_err_message(int err);
/* Returns 1 when err is one of the table's codes. */
int rf_err_valid(int err);

/* Returns from the enclosing function (which returns int) when x, an int expression, is a
 * negative rf_err; x is evaluated once. */
#define RF_TRY(x)                                                                                  \
	do {                                                                                       \
		int rf_try_rc_ = (x);                                                              \
		if (rf_try_rc_ < 0)                                                                \
			return rf_try_rc_;                                                         \
	} while (0)

#endif
