/*
 * The command line: `rigfit serve | detect | healthcheck | version | help`. Every command that
 * prints JSON prints exactly what the HTTP route prints for the same question.
 */
#ifndef RIGFIT_SERVER_CLI_CLI_H
#define RIGFIT_SERVER_CLI_CLI_H

/* Runs the command in argv; returns the process exit status. */
int rf_cli_main(int argc, char **argv);

#endif
