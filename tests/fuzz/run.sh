#!/bin/sh
# Runs libFuzzer targets for a bounded time: run.sh FUZZDIR SECONDS JOBS TARGET...
# Each target FUZZDIR/bin/TARGET starts from its committed seeds (tests/fuzz/corpus/TARGET,
# read only) plus a work corpus under FUZZDIR/corpus/TARGET that grows between runs, with
# tests/fuzz/TARGET.dict when there is one. JOBS targets run at a time. A crash, leak, timeout
# or out-of-memory leaves its input in FUZZDIR/artifacts/ and fails the run (exit 1).
set -u
cd "$(dirname "$0")/../.." || exit 2
dir=$1 secs=$2 jobs=$3
shift 3
mkdir -p "$dir/artifacts" "$dir/logs"

run_one() {
	t=$1
	seeds=tests/fuzz/corpus/$t
	work=$dir/corpus/$t
	mkdir -p "$work"
	# Whole profile files are larger than other inputs; a request may estimate many models
	# (recommend), which the instrumentation slows about fiftyfold.
	maxlen=65536 timeout=10
	case $t in
	profiles) maxlen=262144 ;;
	request | mcp) timeout=60 ;;
	esac
	set -- -max_total_time="$secs" -timeout="$timeout" -rss_limit_mb=2048 -max_len="$maxlen" \
		-print_final_stats=1 -artifact_prefix="$dir/artifacts/$t-"
	if [ -f "tests/fuzz/$t.dict" ]; then set -- "$@" -dict="tests/fuzz/$t.dict"; fi
	if [ -d "$seeds" ]; then set -- "$@" "$work" "$seeds"; else set -- "$@" "$work"; fi
	if RIGFIT_SRC_DIR=$(pwd) ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
		"$dir/bin/$t" "$@" > "$dir/logs/$t.log" 2>&1; then
		execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/logs/$t.log")
		cov=$(grep -o 'cov: [0-9]*' "$dir/logs/$t.log" | tail -n 1)
		echo "fuzz: $t ok (${secs}s, ${execs:-?} runs, ${cov:-cov: ?})"
	else
		echo "fuzz: $t FAILED; the log follows (input in $dir/artifacts/$t-*)"
		tail -n 60 "$dir/logs/$t.log"
		return 1
	fi
}

status=0
pids=""
n=0
for t in "$@"; do
	run_one "$t" > "$dir/logs/$t.result" 2>&1 &
	pids="$pids $!:$t"
	n=$((n + 1))
	if [ "$n" -ge "$jobs" ]; then
		# Wait for the oldest; the next starts as soon as it is done.
		first=${pids# }
		first=${first%% *}
		wait "${first%%:*}" || status=1
		cat "$dir/logs/${first#*:}.result"
		pids=${pids#* "$first"}
		n=$((n - 1))
	fi
done
for p in $pids; do
	wait "${p%%:*}" || status=1
	cat "$dir/logs/${p#*:}.result"
done
[ "$status" -eq 0 ] && echo "fuzz: every target passed" || echo "fuzz: FAILED"
exit "$status"
