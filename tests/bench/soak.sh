#!/bin/sh
# make soak: a sustained run. The release daemon (fixture machine, temporary --db, as in make
# bench) takes two loads of SOAK_CONNS (256) connections: half on GET /api/hardware, half on
# POST /api/estimate, one wrk each.
#   baseline  that alone, for SOAK_BASE_SECS (SOAK_SECS) seconds;
#   soak      the same for SOAK_SECS (60) seconds, plus a writer POSTing benchmark runs back
#             to back and SOAK_SLOW (100) slow senders that each send one header byte a second
#             (tests/bench/load.c), with VmRSS sampled every second.
# Fails when any request of the soak errs (socket error, non-2xx, or a write not answered
# 201), when resident memory keeps growing (the largest sample of the last quarter may exceed
# the sample taken after the first quarter, the warm-up, by at most SOAK_RSS_TOLERANCE_KB,
# 2048), or when a route's p99 latency in the soak is more than SOAK_P99_RATIO (3) times the
# baseline's.
# Not part of make test (it takes two minutes and both CPUs).
set -eu
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=tests/bench/lib.sh
. tests/bench/lib.sh

SOAK_SECS=${SOAK_SECS:-60}
SOAK_BASE_SECS=${SOAK_BASE_SECS:-$SOAK_SECS}
SOAK_CONNS=${SOAK_CONNS:-256}
SOAK_SLOW=${SOAK_SLOW:-100}
SOAK_RSS_TOLERANCE_KB=${SOAK_RSS_TOLERANCE_KB:-2048}
SOAK_P99_RATIO=${SOAK_P99_RATIO:-3}
WRK_THREADS=1
WRK_CONNS=$((SOAK_CONNS / 2))

bench_need wrk curl libsqlite3-dev
make --no-print-directory build/rigfit > /dev/null

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rigfit-soak.XXXXXX")
rigfit_pid="" hw_pid="" est_pid="" wr_pid="" slow_pid=""
cleanup() {
	for p in $hw_pid $est_pid $wr_pid $slow_pid $rigfit_pid; do kill "$p" 2> /dev/null || true; done
	wait 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
cc -std=c11 -D_DEFAULT_SOURCE -O2 -o "$tmp/load" tests/bench/load.c -lsqlite3

# Runs both wrk loads for $1 seconds into $tmp/$2-hw.result and $tmp/$2-est.result, sampling
# VmRSS into $tmp/$2-rss.txt.
run_load() {
	WRK_SECS=$1
	BENCH_METHOD=GET bench_wrk "$2-hardware" "http://127.0.0.1:$rigfit_port/api/hardware" \
		> "$tmp/$2-hw.result" &
	hw_pid=$!
	BENCH_METHOD=POST BENCH_BODY=$BENCH_ESTIMATE_BODY \
		bench_wrk "$2-estimate" "http://127.0.0.1:$rigfit_port/api/estimate" \
		> "$tmp/$2-est.result" &
	est_pid=$!
	: > "$tmp/$2-rss.txt"
	t=0
	while kill -0 "$hw_pid" 2> /dev/null || kill -0 "$est_pid" 2> /dev/null; do
		echo "$t $(bench_rss_kb "$rigfit_pid")" >> "$tmp/$2-rss.txt"
		sleep 1
		t=$((t + 1))
	done
	wait "$hw_pid" || true
	wait "$est_pid" || true
	hw_pid="" est_pid=""
	echo "$t $(bench_rss_kb "$rigfit_pid")" >> "$tmp/$2-rss.txt"
}

bench_start_rigfit
echo "soak: baseline ${SOAK_BASE_SECS}s of $SOAK_CONNS connections ($WRK_CONNS on GET" \
	"/api/hardware, $WRK_CONNS on POST /api/estimate)"
run_load "$SOAK_BASE_SECS" base
echo "soak: ${SOAK_SECS}s of the same plus a writer (POST /api/benchmarks) and $SOAK_SLOW slow" \
	"senders, VmRSS every second"
"$tmp/load" writer "$rigfit_port" "$SOAK_SECS" > "$tmp/writer.result" &
wr_pid=$!
"$tmp/load" slow "$rigfit_port" "$SOAK_SLOW" "$SOAK_SECS" > "$tmp/slow.result" &
slow_pid=$!
run_load "$SOAK_SECS" soak
wait "$wr_pid" || true
wait "$slow_pid" || true
wr_pid="" slow_pid=""

cat "$tmp/base-hw.result" "$tmp/base-est.result" "$tmp/soak-hw.result" \
	"$tmp/soak-est.result" "$tmp/writer.result" "$tmp/slow.result" | awk -v secs="$SOAK_SECS" \
	-v tol="$SOAK_RSS_TOLERANCE_KB" -v ratio="$SOAK_P99_RATIO" -v rssfile="$tmp/soak-rss.txt" '
$1 == "RESULT" { k++; rps[k] = $2; p99[k] = $3; bad[k] = $4 + $5; reqs[k] = $6 }
$1 == "WRITER" { writes = $2; wbad = $3 }
$1 == "SLOW" { slow_opened = $2 }
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
	name[1] = "baseline GET /api/hardware"; name[2] = "baseline POST /api/estimate"
	name[3] = "soak GET /api/hardware"; name[4] = "soak POST /api/estimate"
	printf "  %-30s %12s %10s %12s %8s\n", "", "requests/s", "p99 ms", "requests", "errors"
	for (i = 1; i <= 4; i++)
		printf "  %-30s %12.0f %10.2f %12d %8d\n", name[i], rps[i], p99[i], reqs[i], bad[i]
	printf "  %-30s %12.0f %10s %12d %8d\n", "soak POST /api/benchmarks", writes / secs, "",
		writes, wbad
	printf "  slow senders: %d connections opened (each cut at the header deadline)\n", slow_opened
	printf "  VmRSS: %.1f MiB after the warm-up (%ds), at most %.1f MiB in the last quarter, peak %.1f MiB, %.1f MiB after the load\n",
		kb[warm] / 1024, ts[warm], late / 1024, peak / 1024, kb[n - 1] / 1024
	ok = 1
	errs = bad[3] + bad[4] + wbad
	if (errs != 0) { printf "  FAIL: %d errors in the soak\n", errs; ok = 0 }
	if (growth > tol) { printf "  FAIL: VmRSS grew %d KiB after the warm-up (tolerance %d KiB)\n", growth, tol; ok = 0 }
	for (i = 1; i <= 4; i++) if (reqs[i] == 0) { printf "  FAIL: %s did not finish\n", name[i]; ok = 0 }
	if (writes == 0) { print "  FAIL: the writer stored nothing"; ok = 0 }
	for (i = 1; i <= 2; i++) {
		r = p99[i] > 0 ? p99[i + 2] / p99[i] : 0
		printf "  p99 soak / baseline, %s: %.2fx (at most %sx)\n", substr(name[i], 10), r, ratio
		if (r > ratio) { printf "  FAIL: p99 grew past %sx\n", ratio; ok = 0 }
	}
	if (ok) printf "  PASS: no errors, VmRSS growth after the warm-up %d KiB (tolerance %d KiB)\n", growth, tol
	exit ok ? 0 : 1
}'
