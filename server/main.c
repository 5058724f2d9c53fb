/*
 * rigfit's entry point. Everything else lives in functions the tests can call.
 */
#include "server/cli.h"

int main(int argc, char **argv)
{
	return rf_cli_main(argc, argv);
}
