#!/usr/bin/env bash
# t_symbols.sh -- honest names against known truth, off-server.
#
# tests/symbols/tprog.c and tlib.c, built with -g, allocate from a static
# function, an exported one, an inlined one and a static function in a
# shared library.  Then, on dumps of:
#  - a stripped copy: exported functions keep their names; each static
#    function gets "object+0xSTART" with START its true start (nm of the -g
#    build), never a neighbour's name;
#  - the stripped copy with a separate debug file (.gnu_debuglink): true
#    names, file:line and the inline chain are back;
#  - the -g build and the debuglink copy: every level's file:line is GNU
#    addr2line -i's (tests/symbols/lines.sh);
#  - a library replaced on disk after the dump (renamed over, or rewritten
#    in place with build-ids recorded in the profile), and one deleted
#    before it: its frames are flagged, not named;
#  - a raw dump from another machine (other inodes, no build-ids): named by
#    the code's evidence, jemalloc cut; one whose code does not match: refused;
#  - a library whose symbol names lie outside its string table: no crash;
#  - a dwz file of another build where the debug info names its own: refused.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
cd "$HP_TOP"
report=$PWD/heapprof-report
w=$(scratch)
src=tests/symbols
cflags="-g -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls"

cc $cflags -fPIC -shared $src/tlib.c -o "$w/libtlib.so"
cc $cflags -fPIE -pie -rdynamic $src/tprog.c -L"$w" -ltlib -ljemalloc -Wl,-rpath,"$w" -o "$w/tprog"
export MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:0
start_of() { printf '0x%x' "0x$(nm "$1" | awk -v f="$2" '$3 == f {print $1}')"; }

# 1. stripped: honest labels at the true starts
cp "$w/tprog" "$w/tprog.stripped"
strip --strip-all "$w/tprog.stripped"
"$w/tprog.stripped" "$w/stripped.heap"
"$report" --collapsed "$w/stripped.heap" > "$w/stripped.txt"
label="tprog.stripped+$(start_of "$w/tprog" static_worker)"
grep -q ";main;exported_func;$label 1048576\$" "$w/stripped.txt" ||
	{ cat "$w/stripped.txt"; fail "static function: expected $label under exported_func"; }
grep -q ";main;inline_user 2097152\$" "$w/stripped.txt" || fail "inline_user frame"
grep -q ";main;tlib_entry;lib_static_alloc 3145728\$" "$w/stripped.txt" || fail "library frames"
# no frame of the stripped program carries a name nm does not place there
! grep -qE 'static_worker|inlined_alloc' "$w/stripped.txt" || fail "a static name leaked from nowhere"

# 2. separate debug file: true names, file:line and the inline chain
objcopy --only-keep-debug "$w/tprog" "$w/tprog.debug"
cp "$w/tprog.stripped" "$w/tprog.dbglink"
objcopy --add-gnu-debuglink="$w/tprog.debug" "$w/tprog.dbglink"
"$w/tprog.dbglink" "$w/dbg.heap"
"$report" --collapsed "$w/dbg.heap" > "$w/dbg.txt"
grep -q ";main;exported_func;static_worker 1048576\$" "$w/dbg.txt" || { cat "$w/dbg.txt"; fail "debuglink names"; }
grep -q ";main;inline_user;inlined_alloc\[inline\] 2097152\$" "$w/dbg.txt" || fail "inline chain"
"$report" --text --focus='tprog\.c:[0-9]+' "$w/dbg.heap" | grep ' static_worker$' >/dev/null || fail "file:line"

# 2b. file:line of every level against GNU addr2line -i: inlined levels at
#     the call site in the level out, not at the innermost line
"$w/tprog" "$w/g.heap"
tests/symbols/lines.sh "$report" "$w/g.heap" "$w/tprog" "$w/libtlib.so" || fail "locations differ from addr2line -i"
tests/symbols/lines.sh "$report" "$w/dbg.heap" "$w/tprog.dbglink" || fail "debuglink locations differ from addr2line -i"
"$report" --symbols "$w/g.heap" > "$w/g.sym"
grep -q ' inlined_alloc (inline) at [^ ]*tprog\.c:[0-9]* <- inlined_twice (inline) at [^ ]*tprog\.c:[0-9]* <- deep_user at ' "$w/g.sym" ||
	fail "two inlined levels"
# pprof Lines carry the same per-level locations (checked above against addr2line)
if command -v go > /dev/null; then
	"$report" --pprof "$w/g.heap" > "$w/g.pb.gz"
	go tool pprof -raw "$w/g.pb.gz" > "$w/g.raw" 2>/dev/null
	for f in inline_user inlined_twice deep_user; do
		at=$(grep -o "$f[ (inline)]* at [^ ]*" "$w/g.sym" | sed -n 1p | sed 's/.* at //')
		grep -q " $f[ (inline)]* $at s=0\$" "$w/g.raw" || { cat "$w/g.raw"; fail "pprof: $f not at $at"; }
	done
fi

# 3. library replaced after the dump (an upgrade renames a new file in place)
cc $cflags -DVERSION2 -fPIC -shared $src/tlib.c -o "$w/libtlib.so.new"
mv "$w/libtlib.so.new" "$w/libtlib.so"
"$report" --collapsed "$w/stripped.heap" > "$w/replaced.txt"
grep -qE ';main;libtlib\.so\+0x[0-9a-f]+ \[replaced\];libtlib\.so\+0x[0-9a-f]+ \[replaced\] 3145728$' "$w/replaced.txt" ||
	{ cat "$w/replaced.txt"; fail "replaced library not flagged"; }
! grep -qE 'tlib_entry|lib_static_alloc|tlib_padding' "$w/replaced.txt" || fail "replaced library named"

# 3b. rewritten in place (same inode): only build-ids recorded with the
#     dump (as heapprof does) can tell
cc $cflags -fPIC -shared $src/tlib.c -o "$w/libtlib.so"
"$w/tprog" "$w/inplace.heap"
bias=$(awk -v p="$w/libtlib.so" '$6 == p && $3 == "00000000" {split($1, r, "-"); print r[1]; exit}' "$w/inplace.heap")
id=$(readelf -n "$w/libtlib.so" | awk '/Build ID/ {print $3}')
{ echo "%heapprof-build-id $bias $id"; cat "$w/inplace.heap"; } > "$w/inplace-id.heap"
"$report" --collapsed "$w/inplace-id.heap" | grep ';main;tlib_entry;lib_static_alloc 3145728$' >/dev/null || fail "matching build-id"
cc $cflags -DVERSION2 -fPIC -shared $src/tlib.c -o "$w/libtlib.v2"
cat "$w/libtlib.v2" > "$w/libtlib.so"
"$report" --collapsed "$w/inplace-id.heap" > "$w/inplace.txt"
grep -qE ';main;libtlib\.so\+0x[0-9a-f]+ \[build-id mismatch\];libtlib\.so\+0x[0-9a-f]+ \[build-id mismatch\] 3145728$' "$w/inplace.txt" ||
	{ cat "$w/inplace.txt"; fail "library rewritten in place not flagged"; }
# 3c. and by a build without a build-id: no build-id is not the one recorded
cc $cflags -DVERSION2 -Wl,--build-id=none -fPIC -shared $src/tlib.c -o "$w/libtlib.none"
cat "$w/libtlib.none" > "$w/libtlib.so"
"$report" --collapsed "$w/inplace-id.heap" > "$w/inplace-none.txt"
grep -qE ';main;libtlib\.so\+0x[0-9a-f]+ \[build-id mismatch\];libtlib\.so\+0x[0-9a-f]+ \[build-id mismatch\] 3145728$' "$w/inplace-none.txt" ||
	{ cat "$w/inplace-none.txt"; fail "library rewritten in place by a build without a build-id not flagged"; }

# 4. library deleted before the dump
cp "$w/libtlib.so" "$w/libtlib.keep"
"$w/tprog" "$w/deleted.heap" "$w/libtlib.so"
cp "$w/libtlib.keep" "$w/libtlib.so"
grep -q 'libtlib.so (deleted)' "$w/deleted.heap" || fail "maps should show the deletion"
"$report" --collapsed "$w/deleted.heap" > "$w/deleted.txt"
grep -qE ';main;libtlib\.so\+0x[0-9a-f]+ \[deleted\];libtlib\.so\+0x[0-9a-f]+ \[deleted\] 3145728$' "$w/deleted.txt" ||
	{ cat "$w/deleted.txt"; fail "deleted library not flagged"; }
# 4b. a backend that has symbolized before has libelf's own rw-p mmap of a
#     library in its maps, here just below the loaded image
cc $cflags -fPIC -shared $src/tlib.c -o "$w/libtlib.so"
"$w/tprog" "$w/stray.heap"
first=$(awk -v p="$w/libtlib.so" '$6 == p && $3 == "00000000" {print; exit}' "$w/stray.heap")
lo=$((16#${first%%-*}))
stray=$(printf '%x-%x rw-p 00000000 %s' $((lo - 0x100000)) $((lo - 0xf7000)) "${first#* * * }")
awk -v f="$first" -v s="$stray" '$0 == f {print s} {print}' "$w/stray.heap" > "$w/stray2.heap"
[ "$(grep -c "rw-p 00000000 .*libtlib.so" "$w/stray2.heap")" -ge 1 ] || fail "stray mapping not added"
"$report" --collapsed "$w/stray2.heap" | grep ';main;tlib_entry;lib_static_alloc 3145728$' >/dev/null ||
	{ "$report" --collapsed "$w/stray2.heap"; fail "a stray mapping of the library broke its names"; }

# 4c. a raw dump from another machine with the same files: other inodes, no
#     build-ids.  The code decides: names as at home, jemalloc's frames cut
cc $cflags -fPIC -shared $src/tlib.c -o "$w/libtlib.so"
"$w/tprog" "$w/home.heap"
awk 'm && NF >= 6 && $5 != 0 {$5 = $5 + 1} /^MAPPED_LIBRARIES:/ {m = 1} {print}' "$w/home.heap" > "$w/foreign.heap"
! cmp -s "$w/home.heap" "$w/foreign.heap" || fail "inodes not edited"
"$report" --collapsed "$w/home.heap" > "$w/home.txt"
"$report" --collapsed "$w/foreign.heap" > "$w/foreign.txt"
cmp -s "$w/home.txt" "$w/foreign.txt" || { diff "$w/home.txt" "$w/foreign.txt"; fail "another machine's dump named otherwise"; }
grep -q ';main;tlib_entry;lib_static_alloc 3145728$' "$w/foreign.txt" || fail "foreign dump: jemalloc frames not cut"
! grep -q 'jemalloc\|replaced' "$w/foreign.txt" || fail "foreign dump: jemalloc frames or refusals left"
# (into files: grep -q in a pipe may end it early, and pipefail sees that)
"$report" --symbols "$w/foreign.heap" > "$w/foreign.sym"
grep -q "^# identity $w/libtlib.so: other inode, code: all 2 return addresses follow a call$" "$w/foreign.sym" ||
	fail "--symbols: evidence"
"$report" --stats --collapsed "$w/foreign.heap" 2> "$w/foreign.stats" > /dev/null
grep -q "^# identity .*/libjemalloc.so.2: other inode, code: all" "$w/foreign.stats" || fail "--stats: evidence"
# ... and one whose code is not the file's (libtlib mapped 16 bytes off): refused, jemalloc still cut
while read -r line; do
	set -- $line
	if [ "${6:-}" = "$w/libtlib.so" ]; then
		lo=$((16#${1%-*} - 16)) hi=$((16#${1#*-} - 16))
		printf '%x-%x %s %s %s %s %s\n' "$lo" "$hi" "$2" "$3" "$4" "$5" "$6"
	else
		printf '%s\n' "$line"
	fi
done < "$w/foreign.heap" > "$w/shifted.heap"
"$report" --collapsed "$w/shifted.heap" > "$w/shifted.txt"
grep -qE ';main;libtlib\.so\+0x[0-9a-f]+ \[replaced\];libtlib\.so\+0x[0-9a-f]+ \[replaced\] 3145728$' "$w/shifted.txt" ||
	{ cat "$w/shifted.txt"; fail "shifted library not refused"; }
! grep -qE 'jemalloc|tlib_entry|lib_static_alloc' "$w/shifted.txt" || fail "shifted library named, or jemalloc frames left"
"$report" --symbols "$w/shifted.heap" > "$w/shifted.sym"
grep -q "^# identity $w/libtlib.so: other inode, code: return address [12] of 2 follows no call \[replaced\]$" "$w/shifted.sym" ||
	fail "--symbols: evidence of the refusal"

# 5. a library whose symbol names point outside its string table: no crash
cc $cflags -fPIC -shared $src/tlib.c -o "$w/libtlib.so"
cc -O1 $src/badnames.c -lelf -o "$w/badnames"
"$w/badnames" "$w/libtlib.so" >/dev/null
"$w/tprog" "$w/badnames.heap"
"$report" --collapsed "$w/badnames.heap" > "$w/badnames.txt" || fail "bad symbol names: report failed"
grep -qE ';main;[^ ]+;[^ ]+ 3145728$' "$w/badnames.txt" || { cat "$w/badnames.txt"; fail "bad symbol names"; }

# 6. a dwz file of another build where the debug info says its dwz file is:
#    refused (libdw would open it by that path, unchecked), and no name
#    comes from its strings (before: tlib_entry was named "try")
mkdir "$w/dwz" "$w/dwz/other"
cc $cflags -fPIC -shared $src/tlib.c -o "$w/dwz/libtlib.so"
cc $cflags -fPIE -pie -rdynamic $src/tprog.c -L"$w/dwz" -ltlib -ljemalloc -Wl,-rpath,"$w/dwz" -o "$w/dwz/tprog"
dwz -m "$w/dwz/common.own" -M "$w/dwz/common" "$w/dwz/tprog" "$w/dwz/libtlib.so"
cc $cflags -fPIC -shared $src/tlib.c -o "$w/dwz/other/libtlib.so"
cc $cflags -fPIE -pie -rdynamic -Dsize_t=long $src/tprog.c -L"$w/dwz" -ltlib -ljemalloc -o "$w/dwz/other/tprog"
dwz -m "$w/dwz/common.other" -M "$w/dwz/common" "$w/dwz/other/tprog" "$w/dwz/other/libtlib.so"
cp "$w/dwz/common.own" "$w/dwz/common"
"$w/dwz/tprog" "$w/dwz.heap"
"$report" --collapsed "$w/dwz.heap" > "$w/dwz.txt"
grep -q ";main;tlib_entry;lib_static_alloc 3145728\$" "$w/dwz.txt" || { cat "$w/dwz.txt"; fail "dwz: names"; }
cp "$w/dwz/common.other" "$w/dwz/common"
"$report" --collapsed "$w/dwz.heap" > "$w/dwz_other.txt" 2> "$w/dwz_other.err"
grep -q "dwz file for tprog refused: build-id mismatch ($w/dwz/common)" "$w/dwz_other.err" ||
	{ cat "$w/dwz_other.err"; fail "dwz: the other build's dwz file is not said to be refused"; }
tr ';' '\n' < "$w/dwz.txt" | sed 's/ [0-9]*$//' | sort -u > "$w/dwz.names"
tr ';' '\n' < "$w/dwz_other.txt" | sed 's/ [0-9]*$//' | sort -u > "$w/dwz_other.names"
[ -z "$(comm -13 "$w/dwz.names" "$w/dwz_other.names")" ] ||
	{ cat "$w/dwz_other.txt"; fail "dwz: names from the other build's dwz file"; }
grep -q ";main;tlib_entry;lib_static_alloc 3145728\$" "$w/dwz_other.txt" || { cat "$w/dwz_other.txt"; fail "dwz: symbol names"; }
echo "symbols: honest labels, debuglink names, replaced, deleted and broken objects handled, another build's dwz file refused"
