#!/usr/bin/env bash
# t_build.sh -- the extension and heapprof-report build without a single
# warning under -Wall -Wextra, with gcc and with clang.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
src=$HP_TOP
for cc in gcc clang; do
	work=$(scratch)
	cp -r "$src/Makefile" "$src/heapprof.control" "$src"/heapprof--*.sql "$src/src" "$work/"
	if ! out=$(make -C "$work" CC=$cc 2>&1); then
		echo "$out"; exit 1
	fi
	if grep -E 'warning:' <<<"$out"; then
		echo "$cc: warnings above"; exit 1
	fi
	echo "$cc: no warnings"
done
