/*
 * `rigfit bench record` and `rigfit bench list`: the benchmark history from the command line,
 * through the same handlers as POST and GET /api/benchmarks and on the same SQLite file as the
 * daemon (WAL mode lets both use it at once), so what one records the other lists.
 */
#ifndef RIGFIT_SERVER_CLI_CLI_BENCH_H
#define RIGFIT_SERVER_CLI_CLI_BENCH_H

/* Runs `rigfit bench SUBCOMMAND ...` with argv holding what follows "bench". Prints the
 * route's JSON on stdout; returns the exit status (0, 1 for failures, 2 for the caller's
 * mistakes, after one line on stderr). */
int rf_cli_bench(int argc, char **argv);

/* The help of `rigfit bench`. */
extern const char rf_cli_bench_usage[];

#endif
