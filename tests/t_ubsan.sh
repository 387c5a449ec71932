#!/usr/bin/env bash
# t_ubsan.sh -- the regression suite over an UndefinedBehaviorSanitizer build
# of the extension (also: make check-ubsan).  AddressSanitizer cannot run
# here: it replaces malloc, and heapprof needs jemalloc as the allocator;
# the engine gets ASan through the fuzzer instead.  Any "runtime error" in
# the server log fails the test.  The normal build is installed again at the
# end.
set -euo pipefail
cd "$HP_TOP"
work=$(mktemp -d)
cp -r Makefile heapprof.control heapprof--*.sql src sql expected "$work/"
make -s -C "$work" clean >/dev/null
make -s -C "$work" COPT="-fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	with_llvm=no install >/dev/null
nm -D "$work/heapprof.so" > "$work/symbols"
grep -q __ubsan_handle "$work/symbols" || { echo "not an UBSan build"; exit 1; }
. tests/lib.sh
# lib.sh's trap stops the clusters; then the normal build goes back in
restore() { hp_cleanup; make -s -C "$HP_TOP" install >/dev/null; rm -rf "$work"; }
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
