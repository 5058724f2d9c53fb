#!/bin/sh
# The checks behind `make lint`, run from anywhere (it moves to the repository root):
#   banned      no sprintf, strcpy, atoi... in core/ api/ server/ (code only, not comments
#               or strings); the list is curl's habit, see STYLE.md.
#   includes    core/ includes only standard C headers and core/; api/ adds <cjson/cJSON.h>
#               and api/; neither includes libmicrohttpd, libuv, SQLite or server/ headers;
#               api/catalog/ (the profile loaders) includes no other api/ header.
#   format      clang-format --dry-run against .clang-format; any difference fails
#               (`make format` fixes it).
#   openapi     redocly lint (recommended rules, tests/tools/redocly.yaml): errors and
#               warnings both fail.
#   manifests   every systemd/*.yaml parses as YAML (js-yaml, which the OpenAPI linter
#               brings) into Kubernetes objects: apiVersion, kind and metadata.name each.
#   scripts     shellcheck over tests/tools/*.sh and .ci/run at severity warning, if installed.
# Prints what is wrong as file:line, ends with a one-line summary, exits 1 on any failure.
# Tools can be overridden: CLANG_FORMAT, REDOCLY, SHELLCHECK.
set -u
cd "$(dirname "$0")/../.." || exit 2

failed=""
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rigfit-lint.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# The C sources of the product (not the tests), one per line.
for d in core api server; do
	if [ -d "$d" ]; then find "$d" -type f \( -name '*.c' -o -name '*.h' \); fi
done | LC_ALL=C sort > "$tmp/src"

# --- banned functions -------------------------------------------------------------------
# A small scanner blanks comments, string and character literals, so that a function named
# in prose ("never atoi") is not reported; then a name counts when it is called.
: > "$tmp/banned"
if [ -s "$tmp/src" ]; then
	# shellcheck disable=SC2046 # one file name per line, none with blanks
	awk -v names="sprintf vsprintf strcpy strcat strncpy strtok atoi atol atof gets tmpnam system popen" '
	BEGIN {
		nb = split(names, banned, " ")
		use["sprintf"] = use["vsprintf"] = "snprintf"
		use["strcpy"] = use["strcat"] = use["strncpy"] = "hw_strlcpy or snprintf"
		use["strtok"] = "a span walker (core/text.h)"
		use["atoi"] = use["atol"] = use["atof"] = "rf_parse_* (core/numparse.h)"
		use["gets"] = "fgets"
		use["tmpnam"] = "mkstemp"
		use["system"] = use["popen"] = "fork and exec with an argv, a timeout and an output cap"
	}
	FNR == 1 { incomment = 0 }
	{
		line = $0; n = length(line); code = ""; i = 1
		while (i <= n) {
			c = substr(line, i, 1); c2 = substr(line, i, 2)
			if (incomment) {
				if (c2 == "*/") { incomment = 0; code = code "  "; i += 2 }
				else { code = code " "; i++ }
				continue
			}
			if (c2 == "/*") { incomment = 1; code = code "  "; i += 2; continue }
			if (c2 == "//") break
			if (c == "\"" || c == "\047") {
				q = c; code = code q; i++
				while (i <= n) {
					c = substr(line, i, 1)
					if (c == "\\") { i += 2; continue }
					i++
					if (c == q) break
				}
				code = code q
				continue
			}
			code = code c; i++
		}
		for (k = 1; k <= nb; k++)
			if (code ~ ("(^|[^A-Za-z0-9_.>])" banned[k] "[ \t]*\\("))
				printf "%s:%d: %s() is banned; use %s\n", FILENAME, FNR, banned[k], use[banned[k]]
	}' $(cat "$tmp/src") > "$tmp/banned"
fi
n_banned=$(wc -l < "$tmp/banned" | tr -d ' ')
cat "$tmp/banned"
[ "$n_banned" -eq 0 ] || failed="$failed banned"

# --- include rules ----------------------------------------------------------------------
: > "$tmp/includes"
if [ -s "$tmp/src" ]; then
	# shellcheck disable=SC2046
	awk '
	BEGIN {
		# Standard C11 headers, plus the two POSIX ones that declare data, not I/O.
		libc = " assert.h complex.h ctype.h errno.h fenv.h float.h inttypes.h iso646.h " \
		       "limits.h locale.h math.h setjmp.h signal.h stdalign.h stdarg.h " \
		       "stdatomic.h stdbool.h stddef.h stdint.h stdio.h stdlib.h stdnoreturn.h " \
		       "string.h tgmath.h threads.h time.h uchar.h wchar.h wctype.h strings.h " \
		       "sys/types.h "
	}
	/^[ \t]*#[ \t]*include[ \t]*[<"]/ {
		dir = FILENAME; sub(/\/.*/, "", dir)
		if (dir != "core" && dir != "api")
			next
		s = $0; sub(/^[ \t]*#[ \t]*include[ \t]*/, "", s)
		op = substr(s, 1, 1); cl = op == "<" ? ">" : "\""
		h = substr(s, 2); e = index(h, cl)
		if (e == 0) {
			printf "%s:%d: unreadable #include\n", FILENAME, FNR
			next
		}
		h = substr(h, 1, e - 1)
		why = ""
		if (op == "\"") {
			if (h !~ /^core\//) {
				if (dir == "core")
					why = "core/ includes only core/ headers"
				else if (h !~ /^api\//)
					why = "api/ includes only api/ and core/ headers"
			}
		} else if (index(libc, " " h " ") == 0) {
			if (dir == "api" && h == "cjson/cJSON.h")
				why = ""
			else if (dir == "api" && h == "cJSON.h")
				why = "include cJSON as <cjson/cJSON.h>"
			else if (dir == "core")
				why = "core/ includes only standard C headers and core/ (no I/O, HTTP, loop, SQLite or JSON)"
			else
				why = "api/ includes only standard C headers, <cjson/cJSON.h>, api/ and core/ (no MHD, libuv, SQLite or server/)"
		}
		if (why == "" && op == "\"" && FILENAME ~ /^api\/catalog\// && h ~ /^api\// &&
		    h !~ /^api\/catalog\//)
			why = "api/catalog/ includes only api/catalog/ and core/ headers (its loaders link without route code)"
		if (why != "")
			printf "%s:%d: #include %s%s%s: %s\n", FILENAME, FNR, op, h, cl, why
	}' $(cat "$tmp/src") > "$tmp/includes"
fi
n_includes=$(wc -l < "$tmp/includes" | tr -d ' ')
cat "$tmp/includes"
[ "$n_includes" -eq 0 ] || failed="$failed includes"

# --- clang-format ---------------------------------------------------------------------------
clang_format=${CLANG_FORMAT:-clang-format}
format_state="skipped (no $clang_format)"
if command -v "$clang_format" > /dev/null 2>&1; then
	{
		cat "$tmp/src"
		for f in tests/*.c tests/*/*.c tests/*.h tests/*/*.h ./*.h; do
			if [ -f "$f" ]; then echo "${f#./}"; fi
		done
	} > "$tmp/fmt_files"
	: > "$tmp/fmt"
	while IFS= read -r f; do
		"$clang_format" --dry-run "$f" 2>&1 | grep ': warning:' >> "$tmp/fmt"
	done < "$tmp/fmt_files"
	n_fmt=$(wc -l < "$tmp/fmt" | tr -d ' ')
	if [ "$n_fmt" -eq 0 ]; then
		format_state="clean"
	else
		n_fmt_files=$(cut -d: -f1 "$tmp/fmt" | sort -u | wc -l | tr -d ' ')
		cut -d: -f1 "$tmp/fmt" | sort | uniq -c | sed 's/^ *\([0-9]*\) \(.*\)/format: \2: \1 warnings from clang-format --dry-run/'
		format_state="$n_fmt warnings in $n_fmt_files files (make format fixes them)"
		failed="$failed format"
	fi
fi

# --- OpenAPI ------------------------------------------------------------------------------
redocly=${REDOCLY:-build/npm/node_modules/.bin/redocly}
if [ -x "$redocly" ]; then
	REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true NO_UPDATE_NOTIFIER=1 \
		"$redocly" lint --config tests/tools/redocly.yaml openapi.yaml > "$tmp/redocly" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] || grep -q 'You have [0-9]* warning' "$tmp/redocly"; then
		cat "$tmp/redocly"
		openapi_state="FAILED"
		failed="$failed openapi"
	else
		openapi_state="ok"
	fi
else
	echo "openapi: $redocly not found (make deps-lint installs it)"
	openapi_state="FAILED (no redocly)"
	failed="$failed openapi"
fi

# --- Kubernetes manifests -----------------------------------------------------------------
jsyaml=${JSYAML:-build/npm/node_modules/js-yaml}
manifests_state="ok"
if ! ls systemd/*.yaml > /dev/null 2>&1; then
	manifests_state="none"
elif [ -d "$jsyaml" ] && command -v node > /dev/null 2>&1; then
	# shellcheck disable=SC2016 # the $ are JavaScript's
	if ! JSYAML="$(pwd)/$jsyaml" node -e '
const yaml = require(process.env.JSYAML), fs = require("fs");
let bad = 0;
for (const f of process.argv.slice(1)) {
	let docs;
	try { docs = yaml.loadAll(fs.readFileSync(f, "utf8")); }
	catch (e) { console.log(`${f}: ${e.message.split("\n")[0]}`); bad++; continue; }
	docs.forEach((d, i) => {
		const ok = d && typeof d === "object" && !Array.isArray(d) &&
			typeof d.apiVersion === "string" && typeof d.kind === "string" &&
			d.metadata && typeof d.metadata.name === "string";
		if (!ok) { console.log(`${f}: document ${i + 1} is not a Kubernetes object`); bad++; }
	});
}
process.exit(bad ? 1 : 0);' systemd/*.yaml; then
		manifests_state="FAILED"
		failed="$failed manifests"
	fi
else
	echo "manifests: $jsyaml not found (make deps-lint installs it)"
	manifests_state="FAILED (no js-yaml)"
	failed="$failed manifests"
fi

# --- shellcheck ---------------------------------------------------------------------------
shellcheck=${SHELLCHECK:-shellcheck}
if command -v "$shellcheck" > /dev/null 2>&1; then
	if "$shellcheck" -S warning tests/tools/*.sh .ci/run; then
		shellcheck_state="ok"
	else
		shellcheck_state="FAILED"
		failed="$failed shellcheck"
	fi
else
	shellcheck_state="skipped (not installed)"
fi

summary="banned: $n_banned, includes: $n_includes, format: $format_state, openapi: $openapi_state, manifests: $manifests_state, shellcheck: $shellcheck_state"
if [ -n "$failed" ]; then
	echo "lint: FAILED (${failed# }) -- $summary"
	exit 1
fi
echo "lint: ok -- $summary"
