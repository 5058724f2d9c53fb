/*
 * Lookup functions over the error table in err.h. The table is the single source of truth:
 * tests check that openapi.yaml documents exactly these codes.
 */
#include "core/err.h"

struct rf_err_row {
	const char *code;
	int status;
	const char *message;
};

static const struct rf_err_row rf_err_rows[] = {
#define RF_ERR_ROW_(name, code, status, msg) {code, status, msg},
	RF_ERROR_TABLE(RF_ERR_ROW_)
#undef RF_ERR_ROW_
};

static const struct rf_err_row *rf_err_row(int err)
{
	if (err <= RF_ERR_BASE_ || err >= RF_ERR_END_)
		return 0;
	return &rf_err_rows[err - RF_ERR_BASE_ - 1];
}

int rf_err_valid(int err)
{
	return rf_err_row(err) != 0;
}

const char *rf_err_code(int err)
{
	const struct rf_err_row *r = rf_err_row(err);
	return r ? r->code : "internal_error";
}

int rf_err_status(int err)
{
	const struct rf_err_row *r = rf_err_row(err);
	return r ? r->status : 500;
}

const char *rf_err_message(int err)
{
	const struct rf_err_row *r = rf_err_row(err);
	return r ? r->message : "internal error";
}
