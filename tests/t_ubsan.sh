#!/usr/bin/env bash
# t_ubsan.sh -- the regression suite over an UndefinedBehaviorSanitizer build
# of the extension (also: make check-ubsan).  AddressSanitizer cannot run
# here: it replaces malloc, and heapprof needs jemalloc as the allocator;
# the engine gets ASan through the fuzzer instead.  Any "runtime error" in
# the server log fails the test.  The files the UBSan build replaces are put
# back at the end as they were, byte for byte: a make install's or those of
# the Debian package tests/run installed (dpkg -V stays clean).
set -euo pipefail
cd "$HP_TOP"
work=$(mktemp -d)
cp -r Makefile heapprof.control heapprof--*.sql src sql expected "$work/"
make -s -C "$work" clean >/dev/null
make -s -C "$work" COPT="-fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	with_llvm=no >/dev/null
# every file make install writes, as it is now
mkdir "$work/saved"
installed=$(make -s -C "$work" -n install with_llvm=no | grep -o "'/[^']*'" | tr -d "'" | sort -u)
for f in $installed; do
	[ -f "$f" ] || continue
	mkdir -p "$work/saved$(dirname "$f")" && cp -a "$f" "$work/saved$f"
done
[ -e "$work/saved$("${PG_CONFIG:-pg_config}" --pkglibdir)/heapprof.so" ] ||
	{ echo "make -n install names no heapprof.so to keep: $installed"; exit 1; }
make -s -C "$work" with_llvm=no install >/dev/null
nm -D "$work/heapprof.so" > "$work/symbols"
grep -q __ubsan_handle "$work/symbols" || { echo "not an UBSan build"; exit 1; }
. tests/lib.sh
# lib.sh's trap stops the clusters; then each kept file goes back, renamed
# into place (a running server may have the library mapped)
restore() {
	hp_cleanup
	(cd "$work/saved" && find . -type f) | while read -r f; do
		f=${f#.}
		cp -a "$work/saved$f" "$f.hp-new" && mv -f "$f.hp-new" "$f"
	done
	rm -rf "$work"
}
trap restore EXIT
start_cluster ubsan 55435 "prof:true,prof_active:false,lg_prof_sample:0" "shared_preload_libraries = 'heapprof'"
# each file in a fresh database, as tests/run does
for t in $(sed -n 's/^REGRESS *= *//p' Makefile); do
	if ! env $(cluster_env ubsan 55435) make -s -C "$work" installcheck REGRESS="$t" >"$work/regress.out" 2>&1; then
		cat "$work/regression.diffs" 2>/dev/null | sed -n 1,60p
		exit 1
	fi
done
if grep -n 'runtime error' "$HP_SCRATCH/ubsan/server.log"; then
	echo "undefined behaviour in the server log"; exit 1
fi
echo "ubsan: regression suite clean"
