#!/bin/sh
# Prints the DEBIAN/control of rigfit's package: usage: deb_control.sh BINARY VERSION ARCH.
# Depends lists the Debian package of each shared library the binary links directly (its
# NEEDED entries, found where ldd resolves them), as this build machine has them, so the
# package installs where it was built and on the same release. Libraries the binary loads
# with dlopen (LOADED: libcurl, for --hub) are listed the same way, found where ldconfig has them.
set -eu
bin=$1 version=$2 arch=$3
LOADED="libcurl.so.4"
deps=$({
	objdump -p "$bin" | awk '$1 == "NEEDED" { print $2 }'
	for name in $LOADED; do echo "$name"; done
} | while read -r name; do
	lib=$(ldd "$bin" | awk -v n="$name" '$1 == n { print $3 }')
	[ -n "$lib" ] || lib=$(ldconfig -p | awk -v n="$name" '$1 == n { print $NF; exit }')
	[ -n "$lib" ] || continue
	dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true
done | cut -d: -f1 | sort -u | paste -sd, - | sed 's/,/, /g')
cat <<CONTROL
Package: rigfit
Version: $version
Architecture: $arch
Maintainer: rigfit developers <rigfit@localhost>
Section: utils
Priority: optional
Depends: ${deps}, passwd
Description: which LLMs fit this machine, and how to set them up
 rigfit scans a machine (CPU, memory, NVIDIA, AMD, Intel and Apple GPUs, container limits),
 estimates memory and speed of LLMs on it, writes llama.cpp and vLLM configurations, and
 recommends models for a task, over HTTP (a systemd service) and on the command line.
CONTROL
