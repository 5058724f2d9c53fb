#!/bin/sh
# make soak: a sustained run. The release daemon (fixture machine, temporary --db, as in make
# bench) takes SOAK_SECS (60) seconds of SOAK_CONNS (256) connections: half on GET
# /api/hardware, half on POST /api/estimate, one wrk each. VmRSS is sampled every second.
# Fails when any request errs (socket error or non-2xx) or when resident memory keeps
# growing: the largest sample of the last quarter of the load may exceed the sample taken
# after its first quarter (the warm-up: connection buffers, allocator arenas) by at most
# SOAK_RSS_TOLERANCE_KB (2048).
# Not part of make test (it takes a minute and both CPUs).
set -eu
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=tests/bench/lib.sh
. tests/bench/lib.sh

SOAK_SECS=${SOAK_SECS:-60}
SOAK_CONNS=${SOAK_CONNS:-256}
SOAK_RSS_TOLERANCE_KB=${SOAK_RSS_TOLERANCE_KB:-2048}
WRK_THREADS=1
WRK_CONNS=$((SOAK_CONNS / 2))
WRK_SECS=$SOAK_SECS

bench_need wrk curl
make --no-print-directory build/rigfit > /dev/null

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rigfit-soak.XXXXXX")
rigfit_pid="" hw_pid="" est_pid=""
cleanup() {
	for p in $hw_pid $est_pid $rigfit_pid; do kill "$p" 2> /dev/null || true; done
	wait 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

bench_start_rigfit
echo "soak: ${SOAK_SECS}s, $SOAK_CONNS connections ($WRK_CONNS on GET /api/hardware," \
	"$WRK_CONNS on POST /api/estimate), VmRSS every second"
BENCH_METHOD=GET bench_wrk hardware "http://127.0.0.1:$rigfit_port/api/hardware" \
	> "$tmp/hw.result" &
hw_pid=$!
BENCH_METHOD=POST BENCH_BODY=$BENCH_ESTIMATE_BODY \
	bench_wrk estimate "http://127.0.0.1:$rigfit_port/api/estimate" > "$tmp/est.result" &
est_pid=$!

: > "$tmp/rss.txt"
t=0
while kill -0 "$hw_pid" 2> /dev/null || kill -0 "$est_pid" 2> /dev/null; do
	echo "$t $(bench_rss_kb "$rigfit_pid")" >> "$tmp/rss.txt"
	sleep 1
	t=$((t + 1))
done
wait "$hw_pid" || true
wait "$est_pid" || true
hw_pid="" est_pid=""
echo "$t $(bench_rss_kb "$rigfit_pid")" >> "$tmp/rss.txt"

cat "$tmp/hw.result" "$tmp/est.result" | awk -v secs="$SOAK_SECS" \
	-v tol="$SOAK_RSS_TOLERANCE_KB" -v rssfile="$tmp/rss.txt" '
{ rps[NR] = $2; p99[NR] = $3; errs += $4 + $5; reqs[NR] = $6; bad[NR] = $4 + $5 }
END {
	n = 0
	while ((getline line < rssfile) > 0) { split(line, f, " "); ts[n] = f[1]; kb[n] = f[2]; n++ }
	warm = 0
	for (i = 0; i < n; i++) if (ts[i] <= secs / 4) warm = i
	peak = 0
	late = 0
	for (i = 0; i < n; i++) {
		if (kb[i] > peak) peak = kb[i]
		if (ts[i] >= secs * 3 / 4 && ts[i] < secs && kb[i] > late) late = kb[i]
	}
	growth = late - kb[warm]
	printf "  %-26s %12s %10s %12s %8s\n", "", "requests/s", "p99 ms", "requests", "errors"
	printf "  %-26s %12.0f %10.2f %12d %8d\n", "GET /api/hardware", rps[1], p99[1], reqs[1], bad[1]
	printf "  %-26s %12.0f %10.2f %12d %8d\n", "POST /api/estimate", rps[2], p99[2], reqs[2], bad[2]
	printf "  VmRSS: %.1f MiB after the warm-up (%ds), at most %.1f MiB in the last quarter, peak %.1f MiB, %.1f MiB after the load\n",
		kb[warm] / 1024, ts[warm], late / 1024, peak / 1024, kb[n - 1] / 1024
	ok = 1
	if (errs != 0) { printf "  FAIL: %d errors\n", errs; ok = 0 }
	if (growth > tol) { printf "  FAIL: VmRSS grew %d KiB after the warm-up (tolerance %d KiB)\n", growth, tol; ok = 0 }
	if (reqs[1] == 0 || reqs[2] == 0) { print "  FAIL: a wrk run did not finish"; ok = 0 }
	if (ok) printf "  PASS: no errors, VmRSS growth after the warm-up %d KiB (tolerance %d KiB)\n", growth, tol
	exit ok ? 0 : 1
}'
