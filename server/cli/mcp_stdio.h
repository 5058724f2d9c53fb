/*
 * MCP's stdio transport (`rigfit mcp`): newline-delimited JSON-RPC messages on standard input,
 * one reply per line on standard output, logs on standard error.
 */
#ifndef RIGFIT_SERVER_CLI_MCP_STDIO_H
#define RIGFIT_SERVER_CLI_MCP_STDIO_H

#include <stdio.h>

#include "api/api.h"

/* Reads messages from in until end of input and writes each reply to out as one line. A line
 * longer than MCP_MAX_MESSAGE_BYTES is skipped to its end and answered with an invalid
 * request error; blank lines are ignored. Returns 0 at end of input, or -1 when out cannot be
 * written (the client went away) or no reply could be built for lack of memory. */
int rf_mcp_stdio_serve(const struct api_env *env, FILE *in, FILE *out);

/* `rigfit mcp [--profiles DIR] [--models-dir DIR]... [--root DIR] [--db PATH]`, with argv[0]
 * the command's name: scans this machine, loads the catalogs (and the store, with --db or
 * $RIGFIT_DB) and serves MCP on standard input and output. Returns the exit status. */
int rf_cli_mcp(int argc, char **argv);

/* The help of `rigfit mcp`. */
extern const char rf_cli_mcp_usage[];

#endif
