#!/usr/bin/env bash
# t_symindex.sh -- symbol indexes shared by every backend, on a real cluster.
#
# A stored profile of a real workload is reported by fresh sessions:
#  - without shared indexes (heapprof.symbol_index_limit = 0): the baseline
#    names, and the cost of a cold first report;
#  - the first session with them writes one index per object to
#    $PGDATA/heapprof/symbols (misses, files appear), and the next fresh
#    session names every object from them (hits only, no miss), keeps
#    almost nothing of its own (heapprof_forget_symbols(), and its
#    Anonymous memory in /proc/self/smaps), and is at least ten times
#    faster than the cold one; another pid's status shows the folder's
#    bytes and no counters;
#  - names, locations and stacks are identical with and without indexes;
#  - hostile files planted at postgres's index (a symlink, a FIFO, a file of
#    another owner, a group-writable one, a truncated one, another object's
#    index, a huge sparse file, a directory) are refused: the report still
#    works with the same names, and (but for the directory) the index is
#    written again as a regular file of the server's user; a whole index
#    published while a backend removes a refused one is not removed;
#  - heapprof.symbol_index_limit: the oldest index is removed to make room,
#    an index larger than the limit is not kept (and removes nothing);
#  - an index written while an object had no debug info is written again
#    once its debug file is installed (libc's, from libc6-dbg);
#  - 4 sessions started together on a server without indexes build each
#    index once between them (the others wait for it), and name the same;
#    a build cancelled midway leaves no lock held, and locks nobody releases
#    cost a report 10 s of waiting in all.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
cd "$HP_TOP"
w=$(scratch)
chmod 755 "$w"

q -q -c "CREATE EXTENSION IF NOT EXISTS heapprof" -c "CREATE EXTENSION IF NOT EXISTS heapprof_test"
data=$(q -c "SHOW data_directory")
dir=$data/heapprof/symbols
owner=$(stat -c %U "$data")
rm -rf "$dir"

q >/dev/null <<'SQL'
SELECT heapprof_enable();
CREATE TEMP TABLE t AS SELECT g, md5(g::text) AS h, repeat('x', g % 100) AS r FROM generate_series(1, 50000) g;
SELECT count(*) FROM (SELECT h, count(*) FROM t GROUP BY h ORDER BY 1) s;
SELECT count(*) FROM t WHERE h ~ '^a[0-9]+b';
SELECT jsonb_agg(jsonb_build_object('k', g, 'v', h)) IS NOT NULL FROM t WHERE g < 5000;
SELECT heapprof_test_hold(1000000);
SELECT heapprof_snapshot('hp_symix', persist => true);
SQL

# fresh SETTINGS: a new session's first report, then its names.  Prints
# "ms symbolizer_bytes hits misses anon_kb" to $w/figures, the names to $w/names.
kb() { awk -v k="$2" '$1 == k":" {s += $2} END {print s + 0}' "$1"; }
fresh() {
	timeout 60 psql -X -At -d postgres -v ON_ERROR_STOP=1 -q <<SQL >/dev/null
$1
\o $w/before
SELECT pg_read_file('/proc/self/smaps_rollup');
\o
SELECT clock_timestamp() AS t0 \gset
SELECT count(*) FROM heapprof_top(20, stored => 'hp_symix');
SELECT round(extract(epoch FROM clock_timestamp() - :'t0') * 1000, 1) AS ms \gset
\o $w/after
SELECT pg_read_file('/proc/self/smaps_rollup');
\o $w/status
SELECT :ms, heapprof_forget_symbols(), symbol_index_hits, symbol_index_misses FROM heapprof_status();
\o $w/names
SELECT rank, flat_bytes, cum_bytes, function, location FROM heapprof_top(n => 100000, fold => false, stored => 'hp_symix');
SELECT bytes, frames FROM heapprof_stacks(fold => false, stored => 'hp_symix') ORDER BY 1, 2;
SQL
	echo "$(tr '|' ' ' < "$w/status") $(( $(kb "$w/after" Anonymous) - $(kb "$w/before" Anonymous) ))" > "$w/figures"
}

# 1. without shared indexes: the baseline, and no file written
fresh "SET heapprof.symbol_index_limit = 0;"
cp "$w/names" "$w/baseline"
read -r cold_ms cold_bytes hits misses cold_anon < "$w/figures"
[ ! -e "$dir" ] || [ -z "$(ls -A "$dir")" ] || fail "indexes written with heapprof.symbol_index_limit = 0"
grep -q 'hpt_leaf_alloc' "$w/baseline" || fail "the baseline does not name heapprof_test's allocation"
grep -qE '\.c:[0-9]+' "$w/baseline" || fail "the baseline has no file:line (postgres is a -g build here)"

# 2. the first session with them writes one index per object
fresh ""
read -r ms bytes hits misses anon < "$w/figures"
[ "$hits" = 0 ] && [ "$misses" -gt 0 ] || fail "first session: hits $hits, misses $misses"
nfiles=$(find "$dir" -maxdepth 1 -type f -name '*.heap' | wc -l)
[ "$nfiles" = "$misses" ] || fail "$misses objects indexed, $nfiles files in $dir"
cmp -s "$w/baseline" "$w/names" || { diff "$w/baseline" "$w/names" | sed -n 1,10p || true; fail "names differ in the session that wrote the indexes"; }

# 3. a fresh session names every object from them, cheaply
best=
for i in 1 2 3; do
	fresh ""
	read -r ms bytes hits misses anon < "$w/figures"
	[ "$hits" = "$nfiles" ] && [ "$misses" = 0 ] || fail "fresh session: hits $hits, misses $misses of $nfiles indexes"
	cmp -s "$w/baseline" "$w/names" || { diff "$w/baseline" "$w/names" | sed -n 1,10p || true; fail "names differ with the shared indexes"; }
	[ "$bytes" -lt 1048576 ] || fail "the symbolizer keeps $bytes bytes with shared indexes"
	[ "$anon" -lt 2048 ] || fail "the first report took $anon kB of anonymous memory (without indexes: $cold_anon kB)"
	best=$(printf '%s\n' $best "$ms" | sort -n | sed -n 1p)
done
awk -v c="$cold_ms" -v b="$best" 'BEGIN {exit !(b * 10 <= c)}' ||
	fail "first report $best ms with shared indexes, $cold_ms ms without"
echo "first report in a fresh session: $cold_ms ms, $cold_anon kB anonymous, $cold_bytes bytes kept without shared indexes;" \
	"$best ms, $anon kB, $bytes bytes with them ($nfiles files, $(du -sk "$dir" | cut -f1) kB)"

# another process's status: the folder's bytes, but not its counters
psql -X -q -At -d postgres -c "SET application_name = 'hp_symix_other'" -c "SELECT pg_sleep(30)" >/dev/null 2>&1 &
sleeper=$!
other_pid=$(wait_query "the other session" 5 "SELECT pid FROM pg_stat_activity WHERE application_name = 'hp_symix_other'")
r=$(q -c "SELECT symbol_index_bytes > 0, symbol_index_hits IS NULL, symbol_index_misses IS NULL FROM heapprof_status(pid => $other_pid)")
[ "$r" = "t|t|t" ] || fail "another pid's status: $r"
q -c "SELECT pg_cancel_backend($other_pid)" >/dev/null
wait "$sleeper" || true

# 4. hostile files at postgres's index
bid=$(q -c "SELECT build_id FROM heapprof_objects() WHERE object ~ '/postgres\$'")
target=$dir/$bid.heap
[ -f "$target" ] || fail "no index for postgres ($bid)"
good=$w/good
cp "$target" "$good"
other=$(find "$dir" -maxdepth 1 -type f -name '*.heap' ! -name "$bid.heap" | sed -n 1p)
size=$(stat -c %s "$good")

plant() {
	local what=$1
	rm -rf "$target"
	case $what in
	symlink) cp "$good" "$w/copy"; chown "$owner" "$w/copy"; ln -s "$w/copy" "$target" ;;
	fifo) mkfifo "$target"; chown "$owner" "$target" ;;
	owner) cp "$good" "$target"; chown root "$target"; chmod 644 "$target" ;;
	writable) cp "$good" "$target"; chown "$owner" "$target"; chmod 666 "$target" ;;
	truncated) head -c $((size / 2)) "$good" > "$target"; chown "$owner" "$target" ;;
	build-id) cp "$other" "$target"; chown "$owner" "$target" ;;
	huge) truncate -s 300G "$target"; chown "$owner" "$target" ;;
	directory) mkdir "$target"; chown "$owner" "$target" ;;
	esac
	fresh ""
	read -r ms bytes hits misses anon < "$w/figures"
	cmp -s "$w/baseline" "$w/names" || { diff "$w/baseline" "$w/names" | sed -n 1,10p || true; fail "$what: names differ"; }
	[ "$misses" = 1 ] && [ "$hits" = $((nfiles - 1)) ] || fail "$what: hits $hits, misses $misses"
	if [ "$what" = directory ]; then
		[ -d "$target" ] || fail "directory: gone"
		rmdir "$target"
		fresh ""
	fi
	[ -f "$target" ] && [ ! -L "$target" ] && [ "$(stat -c %U "$target")" = "$owner" ] &&
		[ "$(stat -c %s "$target")" = "$size" ] || fail "$what: the index was not written again"
	[ -e "$w/copy" ] || [ "$what" != symlink ] || fail "symlink: its target was removed"
}
for what in symlink fifo owner writable truncated build-id huge directory; do
	plant "$what"
done
cmp -s "$good" "$target" || fail "the rewritten index differs from the first"

# 4b. a refused index is removed only while it is still the file refused: a
#     backend held (gdb) where it removes a truncated index, while a whole
#     one is published under the name meanwhile, leaves the whole one
head -c $((size / 2)) "$good" > "$target"
chown "$owner" "$target"
rm -f "$w/in13" "$w/ino"
mkfifo "$w/in13"
psql -X -q -At -d postgres < "$w/in13" > "$w/out13" 2>&1 &
held=$!
exec 13>"$w/in13"
echo "SELECT pg_backend_pid();" >&13
wait_for "the held session's pid" 10 test -s "$w/out13" || fail "the held session did not start: $(cat "$w/out13")"
swap="cp $good $data/heapprof/hp_swap && chown $owner $data/heapprof/hp_swap && mv $data/heapprof/hp_swap $target"
gdb -p "$(sed -n 1p "$w/out13")" -batch -ex 'break hpg_store_remove_judged' -ex continue \
	-ex "shell $swap && stat -c %i $target > $w/ino" -ex continue > "$w/gdb.discard" 2>&1 13>&- &
gdbpid=$!
wait_for "gdb's breakpoint" 10 grep -q '^Breakpoint 1 at' "$w/gdb.discard" || fail "gdb: $(cat "$w/gdb.discard")"
sleep 0.5
echo "SELECT count(*) > 0 FROM heapprof_top(20, stored => 'hp_symix');" >&13
exec 13>&-
wait "$held" || fail "the held session failed: $(cat "$w/out13")"
wait "$gdbpid" || true
[ -s "$w/ino" ] || fail "gdb did not stop at the removal: $(cat "$w/gdb.discard")"
[ "$(stat -c %i "$target")" = "$(cat "$w/ino")" ] && cmp -s "$good" "$target" ||
	fail "the index published while a refused one was being removed was removed"

# 5. heapprof.symbol_index_limit: the index written longest ago (an object
#    replaced since: another build-id) makes room for a new one; an index
#    larger than the limit is not kept, and nothing else is removed for it
stale=$dir/$(printf 'ab%.0s' $(seq 20)).heap
cp "$other" "$stale"
chown "$owner" "$stale"
touch -d '2020-01-01' "$stale"
rm "$target"
real=$(find "$dir" -maxdepth 1 -type f -name '*.heap' ! -name "$(basename "$stale")" -printf '%s\n' | awk '{s += $1} END {print s}')
limit_kb=$(( (real + size + $(stat -c %s "$stale") / 2) / 1024 ))
fresh "SET heapprof.symbol_index_limit = $limit_kb;"
cmp -s "$w/baseline" "$w/names" || fail "limit: names differ"
[ ! -e "$stale" ] || fail "the stale index was not removed to make room"
cmp -s "$good" "$target" || fail "the index was not written after making room"
# ... and in a session whose limit postgres's index exceeds (a superuser may
# lower it for a session), indexes over that limit are neither used nor
# removed, and postgres's is written but not kept
fresh ""	# every other object's index is there again
rm "$target"
before=$(ls "$dir" | sort)
fresh "SET heapprof.symbol_index_limit = $(( size / 2048 ));"
cmp -s "$w/baseline" "$w/names" || fail "small limit: names differ"
[ ! -e "$target" ] || fail "an index larger than heapprof.symbol_index_limit was kept"
[ "$(ls "$dir" | sort)" = "$before" ] || fail "files were removed for an index that cannot fit"
grep -q "symbol index $bid not kept" "$HP_LOG" || fail "no LOG line for the index not kept"

# 6. debug info installed after the index was written: written again
lib=$(awk '/\/libc\.so/ {print $NF; exit}' "/proc/$(head -n 1 "$data/postmaster.pid")/maps")
bid=$(readelf -n "$lib" | awk '/Build ID/ {print $3}')
dbg=/usr/lib/debug/.build-id/${bid:0:2}/${bid:2}.debug
[ -f "$dbg" ] || fail "no debug file for $lib ($dbg): install libc6-dbg"
fresh ""	# every index written again after the limits above
mv "$dbg" "$dbg.hp-away"
at_exit "[ ! -e '$dbg.hp-away' ] || mv -f '$dbg.hp-away' '$dbg'"
rm -f "$dir/$bid.heap"
fresh ""
read -r ms bytes hits misses anon < "$w/figures"
[ "$misses" = 1 ] && [ -f "$dir/$bid.heap" ] || fail "libc without its debug file: $misses misses, index $(ls "$dir")"
fresh ""
read -r ms bytes hits misses anon < "$w/figures"
[ "$misses" = 0 ] || fail "libc's index without debug info not used while the debug file is absent ($misses misses)"
mv "$dbg.hp-away" "$dbg"
fresh ""
read -r ms bytes hits misses anon < "$w/figures"
[ "$misses" = 1 ] || fail "libc's debug file installed: its index was not written again ($misses misses)"
cmp -s "$w/baseline" "$w/names" || { diff "$w/baseline" "$w/names" | sed -n 1,10p || true; fail "names differ after the debug file came back"; }
fresh ""
read -r ms bytes hits misses anon < "$w/figures"
[ "$misses" = 0 ] || fail "libc's new index not used ($misses misses)"

# 7. sessions that start together on a server without indexes: each index is
#    built by one of them (it holds BUILDID.heap.lock); the others wait for
#    it and map it, and every session names the same.  A build cancelled
#    midway lets go of its lock at once: the session stays, nobody waits.
rm -rf "$dir"
psql -X -At -d postgres -q >"$w/cancelled" 2>&1 <<SQL &
SET application_name = 'hp_symix_cancelled';
SET statement_timeout = '40ms';
SELECT count(*) FROM heapprof_top(20, stored => 'hp_symix');
RESET statement_timeout;
SELECT pg_sleep(30);
SQL
sleeper=$!
wait_query "the cancelled session to sleep" 10 \
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'hp_symix_cancelled' AND query LIKE '%pg_sleep%'" >/dev/null
grep -q "canceling statement due to statement timeout" "$w/cancelled" || fail "the cold report was not cancelled: $(cat "$w/cancelled")"
[ -z "$(find "$dir" -name '*.lock')" ] || fail "a cancelled build left its lock: $(ls "$dir")"
fresh ""
read -r ms bytes hits misses anon < "$w/figures"
awk -v m="$ms" 'BEGIN {exit !(m < 5000)}' || fail "after a cancelled build, a fresh session's report took $ms ms"
q -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'hp_symix_cancelled'" >/dev/null
wait "$sleeper" || true
rm -rf "$dir"	# as on a new server
for i in 1 2 3 4; do
	timeout 60 psql -X -At -d postgres -v ON_ERROR_STOP=1 -q >"$w/together.$i" 2>&1 <<SQL &
SELECT 'names', md5(string_agg(concat_ws('|', rank, flat_bytes, cum_bytes, function, location), E'\n' ORDER BY rank))
FROM heapprof_top(n => 100000, fold => false, stored => 'hp_symix');
SELECT 'counts', symbol_index_hits, symbol_index_misses FROM heapprof_status();
SQL
done
wait
built=$(awk -F'|' '$1 == "counts" {s += $3} END {print s + 0}' "$w"/together.*)
[ "$(grep -c '^counts|' "$w"/together.* | awk -F: '{s += $2} END {print s}')" = 4 ] ||
	{ cat "$w"/together.*; fail "sessions started together did not all report"; }
[ "$built" = "$nfiles" ] || fail "4 sessions started together built $built indexes for $nfiles objects" \
	"(hits|misses of each: $(grep -h '^counts|' "$w"/together.* | cut -d'|' -f2,3 | tr '\n' ' '); log:" \
	"$(grep -E 'symbol index|lock' "$HP_LOG" | tail -n 5 | tr '\n' ' '))"
[ "$(grep -h '^names|' "$w"/together.* | sort -u | wc -l)" = 1 ] || fail "sessions started together name differently"
[ -z "$(find "$dir" -name '*.lock')" ] || fail "lock files left: $(ls "$dir")"
# locks nobody releases (held by another process of the server's user) cost
# one analysis 10 s in all, not 10 s per object
rm -f "$dir"/*.heap
locks=()
for bid in $(q -c "SELECT build_id FROM heapprof_objects() WHERE build_id IS NOT NULL"); do
	locks+=("$dir/$bid.heap.lock")
done
as_pg bash -c 'for f; do exec {fd}>"$f"; flock -x "$fd"; done; exec sleep 60' _ "${locks[@]}" &
holder=$!
at_exit "kill $holder 2>/dev/null || true"
held() { [ "$(find "$dir" -name '*.lock' | wc -l)" = "${#locks[@]}" ]; }
wait_for "the outside locks" 5 held
fresh ""
read -r ms bytes hits misses anon < "$w/figures"
awk -v m="$ms" 'BEGIN {exit !(m >= 9000 && m < 20000)}' ||
	fail "with ${#locks[@]} locks held outside, the first report took $ms ms (10 s of waiting in all expected)"
kill "$holder"; wait "$holder" 2>/dev/null || true
rm -f "${locks[@]}"

# every hostile file refused left a trace in the log, none a crash
! grep -qE 'server process .* was terminated|PANIC' "$HP_LOG" || fail "a backend crashed"
echo "symbol indexes: $nfiles objects, names identical, 8 kinds of planted files refused, the limit kept, written again when debug info is installed, built once by 4 sessions started together"
