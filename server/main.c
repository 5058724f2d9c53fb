/*
 * rigfit's entry point. Everything else lives in functions the tests can call.
 */
#include "api/json_alloc.h"
#include "server/cli/cli.h"

int main(int argc, char **argv)
{
	api_json_init();
	return rf_cli_main(argc, argv);
}
