#!/bin/sh
# make bench: rigfit next to nginx on loopback, in one run. Installs wrk and nginx-light from
# Debian when missing (root, or sudo), builds the release binary, starts rigfit on a free
# loopback port (fixture machine tests/fixtures/machines/$BENCH_MACHINE as --root, a temporary
# --db), saves GET /api/hardware's body and has nginx (its own temporary prefix and config,
# one worker like rigfit's one event loop, no access log) serve that file. Then wrk measures,
# with the same settings for all three:
#   nginx    GET the static JSON file
#   hardware GET /api/hardware (rigfit's cached snapshot)
#   estimate POST /api/estimate {"model":{"id":"qwen2.5-7b"},"quant":"Q4_K_M"}
#   window   POST /api/estimate again once this machine has 200 stored benchmark runs (the
#            most the estimator reads; tests/bench/load.c stores them)
#   history  and once it has BENCH_HISTORY_RUNS (100000): the history query reads the newest
#            200 from an index, so its cost must not grow with the history
#   config   POST /api/config {"model":{"id":"qwen2.5-7b"}} (the planner's search)
#   recommend POST /api/recommend {"limit":5} (the planner over the catalog)
# and the script prints requests/s, p99 latency and the ratios to nginx, the errors
# (socket errors and non-2xx answers), the daemon's VmRSS right after the load, once the load's
# connections have closed (their buffers freed, nothing trimmed yet) and again once it has
# been idle for 1.6 s (it gives the heap's free pages back after 1 s idle), and the median
# scan_duration_ms of `rigfit detect --format json` on this machine (--root /).
#
# Targets: hardware >= 1.0x nginx, estimate >= 0.5x nginx, config >= 0.05x and recommend
# >= 0.01x (each with the setups the planner evaluated per request), estimate with 100000
# runs >= 0.5x estimate with none stored and >= 0.5x estimate with 200 (its mean latency
# within 2x of both), 0 errors, VmRSS < 32 MiB right after the load and <= 16 MB once its
# connections closed and idle, scan < 20 ms.
# (An estimate reads the newest 200 runs once per change of the database and reuses them
# until the next: api/history_cache.h.) The ratio of 200 runs to none is printed too, and
# build/plan_bench prints the evaluator's nanoseconds per setup. Exit status 1 when anything
# misses (BENCH_REPORT_ONLY=1: only errors fail).
# wrk settings: WRK_THREADS (1), WRK_CONNS (32), WRK_SECS (10). On a small machine wrk and
# the server share the CPUs, which holds for nginx too, so the ratios stay fair.
set -eu
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=tests/bench/lib.sh
. tests/bench/lib.sh

WRK_THREADS=${WRK_THREADS:-1}
WRK_CONNS=${WRK_CONNS:-32}
WRK_SECS=${WRK_SECS:-10}
SCAN_RUNS=${SCAN_RUNS:-11}
BENCH_HISTORY_RUNS=${BENCH_HISTORY_RUNS:-100000}

bench_need wrk nginx-light curl libsqlite3-dev
make --no-print-directory build/rigfit build/plan_bench > /dev/null

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rigfit-bench.XXXXXX")
rigfit_pid="" nginx_pid=""
cleanup() {
	[ -z "$nginx_pid" ] || kill "$nginx_pid" 2> /dev/null || true
	[ -z "$rigfit_pid" ] || kill "$rigfit_pid" 2> /dev/null || true
	wait 2> /dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

bench_start_rigfit
mkdir -p "$tmp/www" "$tmp/logs"
# nginx started by root serves as nobody: the file and the folders above it must be readable.
chmod 755 "$tmp" "$tmp/www"
curl -fs -o "$tmp/www/hardware.json" "http://127.0.0.1:$rigfit_port/api/hardware"
chmod 644 "$tmp/www/hardware.json"

# nginx on the first free port from a per-process start, non-daemon, everything under $tmp.
nginx_port=$((20000 + $$ % 20000))
tries=0
while :; do
	cat > "$tmp/nginx.conf" <<CONF
daemon off;
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/logs/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $tmp/body;
	proxy_temp_path $tmp/proxy;
	fastcgi_temp_path $tmp/fastcgi;
	keepalive_requests 1000000;
	server {
		listen 127.0.0.1:$nginx_port;
		root $tmp/www;
		location / { default_type application/json; }
	}
}
CONF
	nginx -p "$tmp" -e "$tmp/logs/error.log" -c "$tmp/nginx.conf" &
	nginx_pid=$!
	i=0
	while [ $i -lt 50 ] && kill -0 "$nginx_pid" 2> /dev/null &&
		! curl -fs -o /dev/null "http://127.0.0.1:$nginx_port/hardware.json"; do
		sleep 0.1
		i=$((i + 1))
	done
	if curl -fs -o /dev/null "http://127.0.0.1:$nginx_port/hardware.json"; then break; fi
	kill "$nginx_pid" 2> /dev/null || true
	wait "$nginx_pid" 2> /dev/null || true
	nginx_pid=""
	tries=$((tries + 1))
	if [ $tries -ge 20 ]; then
		echo "bench: nginx did not start:" >&2
		tail -n 20 "$tmp/logs/error.log" >&2
		exit 1
	fi
	nginx_port=$((nginx_port + 1))
done

echo "bench: wrk -t$WRK_THREADS -c$WRK_CONNS -d${WRK_SECS}s, $(nproc) CPUs shared by wrk and the server"
r_nginx=$(BENCH_METHOD=GET bench_wrk nginx "http://127.0.0.1:$nginx_port/hardware.json")
r_hw=$(BENCH_METHOD=GET bench_wrk hardware "http://127.0.0.1:$rigfit_port/api/hardware")
r_est=$(BENCH_METHOD=POST BENCH_BODY=$BENCH_ESTIMATE_BODY \
	bench_wrk estimate "http://127.0.0.1:$rigfit_port/api/estimate")
r_cfg=$(BENCH_METHOD=POST BENCH_BODY='{"model":{"id":"qwen2.5-7b"}}' \
	bench_wrk config "http://127.0.0.1:$rigfit_port/api/config")
r_rec=$(BENCH_METHOD=POST BENCH_BODY='{"limit":5}' \
	bench_wrk recommend "http://127.0.0.1:$rigfit_port/api/recommend")
rss=$(bench_rss_kb "$rigfit_pid")
# The load over: its connections closed (their buffers freed), before the daemon trims anything.
bench_wait_closed "$rigfit_port"
rss_closed=$(bench_rss_kb "$rigfit_pid")
# Idle for a moment: the daemon gives the heap's free pages back (server/daemon/http.c).
sleep 1.6
rss_idle=$(bench_rss_kb "$rigfit_pid")
cfg_setups=$(curl -fs -X POST -H 'Content-Type: application/json' -d '{"model":{"id":"qwen2.5-7b"}}' \
	"http://127.0.0.1:$rigfit_port/api/config" | sed -n 's/.*"setups_evaluated":\([0-9]*\).*/\1/p')
rec_setups=$(curl -fs -X POST -H 'Content-Type: application/json' -d '{"limit":5}' \
	"http://127.0.0.1:$rigfit_port/api/recommend" | sed -n 's/.*"setups_evaluated":\([0-9]*\).*/\1/p')
cc -std=c11 -D_DEFAULT_SOURCE -O2 -o "$tmp/load" tests/bench/load.c -lsqlite3
fingerprint=$(curl -fs "http://127.0.0.1:$rigfit_port/api/hardware" |
	sed -n 's/.*"fingerprint":"\([^"]*\)".*/\1/p')
"$tmp/load" fill "$tmp/rigfit.db" "$fingerprint" 200
r_win=$(BENCH_METHOD=POST BENCH_BODY=$BENCH_ESTIMATE_BODY \
	bench_wrk window "http://127.0.0.1:$rigfit_port/api/estimate")
"$tmp/load" fill "$tmp/rigfit.db" "$fingerprint" $((BENCH_HISTORY_RUNS - 200))
r_hist=$(BENCH_METHOD=POST BENCH_BODY=$BENCH_ESTIMATE_BODY \
	bench_wrk history "http://127.0.0.1:$rigfit_port/api/estimate")

# The scan of this machine, as `rigfit detect` times it: the median of SCAN_RUNS runs.
i=0
: > "$tmp/scan.txt"
while [ $i -lt "$SCAN_RUNS" ]; do
	./build/rigfit detect --format json --root / |
		sed -n 's/.*"scan_duration_ms":\([0-9.eE+-]*\).*/\1/p' >> "$tmp/scan.txt"
	i=$((i + 1))
done
scan=$(sort -n "$tmp/scan.txt" | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : -1 }')

echo
echo "bench: the planner (build/plan_bench, release build, profiles/)"
./build/plan_bench | sed 's/^/  /'

printf '%s\n%s\n%s\n%s\n%s\n%s\n%s\n' "$r_nginx" "$r_hw" "$r_est" "$r_cfg" "$r_rec" "$r_win" \
	"$r_hist" | awk -v rss="$rss" -v rss_closed="$rss_closed" -v rss_idle="$rss_idle" -v scan="$scan" -v runs="$BENCH_HISTORY_RUNS" \
	-v strict="${BENCH_REPORT_ONLY:-0}" -v cfg_setups="${cfg_setups:-0}" \
	-v rec_setups="${rec_setups:-0}" '
function row(name, value, target, ok) {
	printf "  %-34s %-22s %-14s %s\n", name, value, target, ok ? "PASS" : "FAIL"
	if (!ok) fails++
}
{ rps[NR] = $2; p99[NR] = $3; sock[NR] = $4; status[NR] = $5; reqs[NR] = $6 }
END {
	names[1] = "nginx static file"; names[2] = "rigfit GET /api/hardware"
	names[3] = "rigfit POST /api/estimate"; names[4] = "rigfit POST /api/config"
	names[5] = "rigfit POST /api/recommend"
	names[6] = "  estimate with 200 runs stored"
	names[7] = sprintf("  estimate with %d runs stored", runs)
	printf "\n  %-34s %12s %10s %12s %10s\n", "", "requests/s", "p99 ms", "requests", "errors"
	for (i = 1; i <= 7; i++)
		printf "  %-34s %12.0f %10.2f %12d %10d\n", names[i], rps[i], p99[i], reqs[i],
			sock[i] + status[i]
	printf "\n  %-34s %-22s %-14s %s\n", "check", "measured", "target", "result"
	hw = rps[1] > 0 ? rps[2] / rps[1] : 0
	est = rps[1] > 0 ? rps[3] / rps[1] : 0
	row("hardware / nginx", sprintf("%.2fx", hw), ">= 1.00x", hw >= 1.0)
	row("estimate / nginx", sprintf("%.2fx", est), ">= 0.50x", est >= 0.5)
	hist = rps[6] > 0 ? rps[7] / rps[6] : 0
	row(sprintf("estimate, %d runs / 200", runs), sprintf("%.2fx (p99 %.2fx)", hist,
	    p99[6] > 0 ? p99[7] / p99[6] : 0), ">= 0.50x", hist >= 0.5)
	hist0 = rps[3] > 0 ? rps[7] / rps[3] : 0
	row(sprintf("estimate, %d runs / none", runs), sprintf("%.2fx (p99 %.2fx)", hist0,
	    p99[3] > 0 ? p99[7] / p99[3] : 0), ">= 0.50x", hist0 >= 0.5)
	printf "  %-34s %-22s\n", "estimate, 200 runs / none (info)",
		sprintf("%.2fx", rps[3] > 0 ? rps[6] / rps[3] : 0)
	cfg = rps[1] > 0 ? rps[4] / rps[1] : 0
	rec = rps[1] > 0 ? rps[5] / rps[1] : 0
	row("config / nginx", sprintf("%.3fx (%d setups)", cfg, cfg_setups), ">= 0.050x",
	    cfg >= 0.05)
	row("recommend / nginx", sprintf("%.4fx (%d setups)", rec, rec_setups), ">= 0.0100x",
	    rec >= 0.01)
	errs = 0
	for (i = 1; i <= 7; i++) errs += sock[i] + status[i]
	row("errors (socket + non-2xx)", errs, "0", errs == 0)
	row("rigfit VmRSS right after the load", sprintf("%.1f MiB", rss / 1024), "< 32 MiB",
	    rss > 0 && rss < 32 * 1024)
	row("  once its connections closed", sprintf("%.1f MiB (%.1f MB)", rss_closed / 1024,
	    rss_closed * 1.024 / 1000), "<= 16 MB", rss_closed > 0 && rss_closed * 1024 <= 16000000)
	row("rigfit VmRSS idle 1.6 s after it", sprintf("%.1f MiB (%.1f MB)", rss_idle / 1024,
	    rss_idle * 1.024 / 1000), "<= 16 MB", rss_idle > 0 && rss_idle * 1024 <= 16000000)
	row("full scan of this machine (median)", sprintf("%.2f ms", scan), "< 20 ms",
	    scan >= 0 && scan < 20)
	if (errs > 0) exit 1
	if (fails > 0 && strict != "1") exit 1
}'
