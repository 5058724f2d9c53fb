#!/bin/sh
# Runs the Check binary $1 as RIGFIT_SHARDS processes side by side (default: one per CPU, at
# most 4), each taking every n-th suite (RIGFIT_SHARD, tests/run_tests.c) and writing its own
# log; prints the logs in order and the totals, and exits non-zero when any shard failed.
# With RIGFIT_SUITE set, or one CPU, the binary runs alone as it always did.
set -u
bin=$1
n=${RIGFIT_SHARDS:-$(nproc 2>/dev/null || echo 1)}
case $n in '' | *[!0-9]*) n=1 ;; esac
[ "$n" -gt 4 ] && n=4
[ "$n" -lt 1 ] && n=1
if [ -n "${RIGFIT_SUITE:-}" ] || [ "$n" -eq 1 ]; then
	exec "$bin"
fi
# The shards share the cores: a test that takes Check's default 4 s alone may take twice that.
CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-10}
export CK_DEFAULT_TIMEOUT
dir=$(mktemp -d) || exit 2
trap 'rm -rf "$dir"' EXIT
i=0
pids=
while [ "$i" -lt "$n" ]; do
	RIGFIT_SHARD="$i/$n" "$bin" >"$dir/$i.log" 2>&1 &
	pids="$pids $!"
	i=$((i + 1))
done
rc=0
for p in $pids; do
	wait "$p" || rc=1
done
i=0
while [ "$i" -lt "$n" ]; do
	cat "$dir/$i.log"
	i=$((i + 1))
done
cat "$dir"/*.log | awk '/^[0-9]+%: Checks: / {
	gsub(",", ""); c += $3; f += $5; e += $7 }
	END { printf "all %d shards: Checks: %d, Failures: %d, Errors: %d\n", '"$n"', c, f, e }'
exit $rc
