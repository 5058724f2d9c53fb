#!/bin/sh
# make soak, after soak.sh: STATIC_READERS (300) slow readers of a STATIC_MIB (20) MiB file
# served by --static-dir. Each asks for the file, reads its first bytes and then nothing more,
# for STATIC_SECS (10) seconds. Files are streamed from their descriptor, so the daemon's
# VmRSS must stay under STATIC_RSS_MAX_KB (65536, 64 MiB) throughout; a copy per request
# would take it to gigabytes. Fails also when a reader got nothing or /healthz stops
# answering meanwhile.
set -eu
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=tests/bench/lib.sh
. tests/bench/lib.sh

STATIC_READERS=${STATIC_READERS:-300}
STATIC_MIB=${STATIC_MIB:-20}
STATIC_SECS=${STATIC_SECS:-10}
STATIC_RSS_MAX_KB=${STATIC_RSS_MAX_KB:-65536}

bench_need curl libsqlite3-dev
make --no-print-directory build/rigfit > /dev/null

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rigfit-static.XXXXXX")
rigfit_pid="" readers_pid=""
cleanup() {
	for p in $readers_pid $rigfit_pid; do kill "$p" 2> /dev/null || true; done
	wait 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
cc -std=c11 -D_DEFAULT_SOURCE -O2 -o "$tmp/load" tests/bench/load.c -lsqlite3
mkdir "$tmp/app"
echo '<!doctype html><title>app</title>' > "$tmp/app/index.html"
head -c "$((STATIC_MIB * 1024 * 1024))" /dev/urandom > "$tmp/app/big.bin"

bench_start_rigfit --static-dir "$tmp/app"
before=$(bench_rss_kb "$rigfit_pid")
echo "static: $STATIC_READERS slow readers of a $STATIC_MIB MiB file for ${STATIC_SECS}s," \
	"VmRSS every second"
"$tmp/load" readers "$rigfit_port" "$STATIC_READERS" /big.bin "$STATIC_SECS" \
	> "$tmp/readers.result" &
readers_pid=$!
peak=$before healthz_bad=0
while kill -0 "$readers_pid" 2> /dev/null; do
	kb=$(bench_rss_kb "$rigfit_pid")
	[ "$kb" -gt "$peak" ] && peak=$kb
	curl -fs -m 2 -o /dev/null "http://127.0.0.1:$rigfit_port/healthz" ||
		healthz_bad=$((healthz_bad + 1))
	sleep 1
done
wait "$readers_pid" || true
readers_pid=""
got=$(awk '$1 == "READERS" { print $2 }' "$tmp/readers.result")
echo "  VmRSS: $((before / 1024)) MiB before, peak $((peak / 1024)) MiB with the readers" \
	"(at most $((STATIC_RSS_MAX_KB / 1024)) MiB); ${got:-0} of $STATIC_READERS readers got" \
	"bytes; $healthz_bad /healthz probes failed"
ok=1
[ "$peak" -le "$STATIC_RSS_MAX_KB" ] || { echo "  FAIL: VmRSS passed the bound"; ok=0; }
[ "${got:-0}" -eq "$STATIC_READERS" ] || { echo "  FAIL: some readers got nothing"; ok=0; }
[ "$healthz_bad" -eq 0 ] || { echo "  FAIL: /healthz did not answer"; ok=0; }
[ "$ok" -eq 1 ] && echo "  PASS"
[ "$ok" -eq 1 ]
