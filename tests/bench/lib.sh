# shellcheck shell=sh disable=SC2034,SC2154
# (variables set here are used by the scripts that source it; $tmp is theirs)
# Shared by tests/bench/bench.sh and soak.sh (sourced, not run): packages, the daemon on a
# loopback port, wrk runs, resident memory. Expects $tmp (a temporary directory) to be set.

# The fixture machine the daemon describes, so that every run answers the same JSON.
BENCH_MACHINE=${BENCH_MACHINE:-nvidia-rtx3060-laptop}
# The estimate request of both runs.
BENCH_ESTIMATE_BODY='{"model":{"id":"qwen2.5-7b"},"quant":"Q4_K_M"}'

# Installs the Debian packages named (wrk, nginx-light, curl) that are missing; as root, or
# through sudo.
bench_need() {
	missing=""
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
			missing="$missing $p"
	done
	[ -n "$missing" ] || return 0
	echo "bench: installing$missing"
	if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
	$sudo apt-get update -qq
	# shellcheck disable=SC2086 # one package name per word
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
}

# Starts the release daemon on 127.0.0.1 (a free port) with a temporary database and the
# fixture machine as its root, plus the options in its arguments; sets rigfit_pid and
# rigfit_port, and waits until GET /api/hardware answers 200 (the first scan is done).
bench_start_rigfit() {
	./build/rigfit serve --listen 127.0.0.1:0 --db "$tmp/rigfit.db" \
		--root "tests/fixtures/machines/$BENCH_MACHINE" --profiles profiles \
		--scan-interval 3600 --log-level info "$@" 2> "$tmp/rigfit.log" &
	rigfit_pid=$!
	rigfit_port=""
	i=0
	while [ $i -lt 100 ]; do
		rigfit_port=$(sed -n 's/.* listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$tmp/rigfit.log" | head -n 1)
		if [ -n "$rigfit_port" ] &&
			curl -fs -o /dev/null "http://127.0.0.1:$rigfit_port/api/hardware"; then
			return 0
		fi
		sleep 0.1
		i=$((i + 1))
	done
	echo "bench: the daemon did not start; its log:" >&2
	cat "$tmp/rigfit.log" >&2
	return 1
}

# Runs wrk against URL with the settings of $WRK_THREADS, $WRK_CONNS and $WRK_SECS;
# BENCH_METHOD and BENCH_BODY pass through the environment to tests/bench/wrk.lua. Prints
# the RESULT line (see wrk.lua); the full output goes to $tmp/wrk-NAME.txt.
bench_wrk() {
	name=$1 url=$2
	wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"${WRK_SECS}s" --latency -s tests/bench/wrk.lua \
		"$url" > "$tmp/wrk-$name.txt" 2>&1
	grep '^RESULT ' "$tmp/wrk-$name.txt" || echo "RESULT 0 0 1 0 0"
}

# Prints the resident memory of process $1 in KiB.
bench_rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

# Prints how many TCP connections (IPv4) with local port $1 the server still holds open:
# established, or closed by the client and not yet by the server (CLOSE_WAIT) (/proc/net/tcp).
bench_open_conns() {
	awk -v port="$(printf '%04X' "$1")" 'NR > 1 {
		split($2, a, ":"); if (a[2] == port && ($4 == "01" || $4 == "08")) n++ }
		END { print n + 0 }' /proc/net/tcp
}

# Waits (at most 0.5 s, in 20 ms steps) until the server holds no connection on port $1: a
# load's client has gone and the daemon has closed its side.
bench_wait_closed() {
	i=0
	while [ "$(bench_open_conns "$1")" -gt 0 ] && [ $i -lt 25 ]; do
		sleep 0.02
		i=$((i + 1))
	done
}
