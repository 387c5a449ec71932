#!/usr/bin/env bash
# t_labels.sh -- every sample labelled with its statement (queryid) and its
# memory context (cluster (a): prof_active:false, lg_prof_sample:0, heapprof
# preloaded, so every allocation is sampled and bytes compare exactly):
#  - two statements that leave memory behind, 300 prepared plans from a DO
#    block and a temp table's local buffers, are told apart by queryid: the
#    bytes of each queryid in heapprof_stacks() are those heapprof_captures()
#    reports the statement left behind (within 1% + 64 kB), and a diff of
#    two snapshots (stored =>, base =>) holds the first statement alone;
#    heapprof_query_bytes() has the same bytes and each statement's text,
#    heapprof_queries() too (pg_stat_statements is not installed);
#    allocations made outside any statement have queryid NULL;
#  - the context column names CachedPlanSource where the stacks are
#    CreateCachedPlan's or CompleteCachedPlan's, and CacheMemoryContext;
#  - group_by => 'query' puts each statement under its own root (top, flame
#    graph, collapsed), group_by => 'context' too; queryid => and context =>
#    keep one statement's or one context's samples;
#  - pprof: go tool pprof -tags lists the queryids, -tagfocus keeps one;
#  - jeprof reads the raw dump with its label frames: the same total as
#    heapprof, and no label address in its function view;
#  - a capture and the peak keep their labels; another backend's
#    (pid =>) statements come with their text;
#  - heapprof.labels = off records none; compute_query_id = off records the
#    context only;
#  - a statement whose text is cut inside a character leaves a text of
#    whole characters: heapprof_dump_portable() stays valid in the
#    database encoding.
set -euo pipefail
[ -z "${HP_TRACE:-}" ] || set -x
# its captures are found by their text: kept only with heapprof.store_statement_text
q() { PGOPTIONS="-c heapprof.dump_on_exit_threshold=-1 -c heapprof.store_statement_text=on" psql -X -q -At -d postgres -v ON_ERROR_STOP=1 "$@"; }
w=$(mktemp -d)
bg=
cleanup() {
	[ -z "$bg" ] || kill "$bg" 2>/dev/null || true
	[ -n "${data:-}" ] && rm -f "$data"/heapprof/captures/*.heap || true
	q -c "SELECT heapprof_drop_snapshot(n) FROM unnest(ARRAY['lbl0', 'lbl1']) n
		WHERE n IN (SELECT name FROM heapprof_snapshots())" >/dev/null 2>&1 || true
	rm -rf "$w"
}
trap cleanup EXIT
q -c "CREATE EXTENSION IF NOT EXISTS heapprof" -c "CREATE EXTENSION IF NOT EXISTS heapprof_test" >/dev/null
data=$(q -c "SHOW data_directory")
rm -f "$data"/heapprof/captures/*.heap
bindir=$(pg_config --bindir)
# within 1% + 64 kB of the other figure
close() { awk -v a="$1" -v b="$2" 'BEGIN {d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b / 100 + 65536)}'; }

plans="DO \$\$ BEGIN FOR i IN 1..300 LOOP EXECUTE format('PREPARE p%s AS SELECT %s + g FROM generate_series(1, 3) g', i, i); END LOOP; END \$\$"
temp="CREATE TEMP TABLE t AS SELECT g, repeat('x', 200) AS f FROM generate_series(1, 20000) g"
gap="SELECT pg_sleep(0.05)"
{
	echo "SET compute_query_id = on;"
	echo "SET heapprof.capture_min_growth = '256kB';"
	echo "SELECT heapprof_enable();"
	echo "SELECT heapprof_snapshot('lbl0', persist => true);"
	echo "$plans;"
	echo "$gap;"
	echo "SELECT heapprof_snapshot('lbl1', persist => true);"
	echo "$temp;"
	echo "$gap;"
	echo "SET heapprof.capture_min_growth = -1;"
	echo "\\o $w/stacks"
	echo "SELECT coalesce(queryid::text, 'null'), sum(bytes) FROM heapprof_stacks() GROUP BY 1 ORDER BY 2 DESC;"
	echo "\\o $w/query_bytes"
	echo "SELECT coalesce(queryid::text, 'null'), bytes, coalesce(query, '') FROM heapprof_query_bytes();"
	echo "\\o $w/queries"
	echo "SELECT coalesce(queryid::text, 'null'), bytes, backends, coalesce(query, '') FROM heapprof_queries();"
	echo "\\o $w/diff"
	echo "SELECT coalesce(queryid::text, 'null'), sum(bytes) FROM heapprof_stacks(stored => 'lbl1', base => 'lbl0') GROUP BY 1 ORDER BY 2 DESC;"
	echo "\\o $w/plan_context"
	echo "SELECT DISTINCT context FROM heapprof_stacks() WHERE frames && ARRAY['CreateCachedPlan', 'CompleteCachedPlan'] ORDER BY 1;"
	echo "\\o $w/contexts"
	echo "SELECT DISTINCT context FROM heapprof_stacks() WHERE context IS NOT NULL;"
	echo "\\o $w/top"
	echo "SELECT function, cum_bytes FROM heapprof_top(1000, group_by => 'query', order_by => 'cum') WHERE function LIKE 'query %';"
	echo "\\o $w/flame"
	echo "SELECT heapprof_dump_flamegraph(group_by => 'query');"
	echo "\\o $w/collapsed"
	echo "SELECT * FROM heapprof_dump_collapsed(group_by => 'context');"
	echo "\\o $w/ctx_filter"
	echo "SELECT (SELECT sum(bytes) FROM heapprof_stacks() WHERE context = 'CachedPlanSource'),"
	echo "       (SELECT sum(cum_bytes) FROM heapprof_top(1, group_by => 'context', context => 'CachedPlanSource', order_by => 'cum'));"
	echo "\\o $w/pprof.hex"
	echo "SELECT encode(heapprof_dump_pprof(), 'hex');"
	echo "\\o $w/raw"
	echo "SELECT heapprof_dump_raw();"
	echo "\\o $w/peak"
	echo "SELECT count(DISTINCT queryid) FROM heapprof_stacks(peak => true);"
	echo "\\o"
} > "$w/session.sql"
q -f "$w/session.sql" >/dev/null 2>"$w/session.err" || { cat "$w/session.err"; exit 1; }

# the two statements, by their text in the captures
capture() { q -F ' ' -c "SELECT queryid, growth_bytes, name FROM heapprof_captures() WHERE query LIKE '$1%'"; }
read -r qa ga na <<<"$(capture 'DO $$')"
read -r qb gb nb <<<"$(capture 'CREATE TEMP')"
[ -n "$qa" ] && [ -n "$qb" ] && [ "$qa" != "$qb" ] ||
	{ echo "two statement captures expected:"; q -c "SELECT queryid, growth_bytes, query FROM heapprof_captures()"; exit 1; }
bytes_of() { awk -F '|' -v id="$2" '$1 == id {print $2}' "$1"; }
sa=$(bytes_of "$w/stacks" "$qa")
sb=$(bytes_of "$w/stacks" "$qb")
close "$sa" "$ga" && close "$sb" "$gb" ||
	{ printf 'bytes by queryid:\n%s\ncaptures: %s %s, %s %s\n' "$(cat "$w/stacks")" "$qa" "$ga" "$qb" "$gb"; exit 1; }
[ "$(bytes_of "$w/stacks" null)" -gt 0 ] || { echo "no allocation outside a statement (queryid NULL):"; cat "$w/stacks"; exit 1; }
da=$(bytes_of "$w/diff" "$qa")
close "$da" "$sa" && [ "$(head -1 "$w/diff" | cut -d'|' -f1)" = "$qa" ] ||
	{ printf 'snapshot diff by queryid:\n%s\nexpected %s first with about %s\n' "$(cat "$w/diff")" "$qa" "$sa"; exit 1; }
[ "$(bytes_of "$w/query_bytes" "$qa")" = "$sa" ] && [ "$(bytes_of "$w/query_bytes" "$qb")" = "$sb" ] &&
	grep -qF -e "$qa|$sa|$plans" "$w/query_bytes" && grep -qF -e "$qb|$sb|$temp" "$w/query_bytes" ||
	{ printf 'heapprof_query_bytes():\n%s\n' "$(cat "$w/query_bytes")"; exit 1; }
grep -qF -e "$qa|$sa|1|$plans" "$w/queries" || { printf 'heapprof_queries():\n%s\n' "$(cat "$w/queries")"; exit 1; }
echo "bytes by queryid: plans $sa (capture $ga, diff $da), temp table $sb (capture $gb)"

# -- contexts
grep -qx CachedPlanSource "$w/plan_context" && grep -qx CacheMemoryContext "$w/contexts" ||
	{ printf "contexts of the cached plans' stacks:\n%s\nall contexts:\n%s\n" "$(cat "$w/plan_context")" "$(cat "$w/contexts")"; exit 1; }

# -- grouping and filters
[ "$(bytes_of <(sed 's/^query //' "$w/top") "$qa")" = "$sa" ] ||
	{ printf 'heapprof_top(group_by => query):\n%s\nexpected query %s at %s\n' "$(cat "$w/top")" "$qa" "$sa"; exit 1; }
grep -q "query $qa" "$w/flame" && grep -q "query $qb" "$w/flame" || { echo "flame graph without a root per query"; exit 1; }
grep -q '^context CachedPlanSource;' "$w/collapsed" && ! grep -qv '^context ' "$w/collapsed" ||
	{ echo "collapsed stacks not rooted at their context:"; head -5 "$w/collapsed"; exit 1; }
IFS='|' read -r c1 c2 < "$w/ctx_filter"
[ -n "$c1" ] && [ "$c1" = "$c2" ] || { echo "context => CachedPlanSource: $c2 bytes, its stacks: $c1"; exit 1; }
out=$(q -F ' ' -c "SELECT sum(cum_bytes) FROM heapprof_top(1, queryid => $qa, stored => 'lbl1', order_by => 'cum', group_by => 'query')" \
	-c "SELECT count(*) FROM heapprof_top(queryid => 42, stored => 'lbl1')" 2>&1)
[ "$(echo "$out" | sed -n 1p)" = "$sa" ] && echo "$out" | grep "no sampled allocation of the heap profile has that queryid" >/dev/null ||
	{ printf 'queryid => %s: %s (expected %s)\n' "$qa" "$out" "$sa"; exit 1; }

# -- pprof's own labels
xxd -r -p "$w/pprof.hex" > "$w/heap.pb.gz"
HOME=$w go tool pprof -tags "$w/heap.pb.gz" > "$w/tags" 2>&1 || true
grep -q -e "$qa" "$w/tags" && grep -q "CachedPlanSource" "$w/tags" || { echo "go tool pprof -tags:"; cat "$w/tags"; exit 1; }
HOME=$w go tool pprof -raw -tagfocus="queryid=^$qa\$" "$w/heap.pb.gz" > "$w/focus" 2>&1 || true
sum=$(awk '/^Samples:/ {s = 1; next} /^Locations/ {s = 0} s && /^ *[0-9]+ +-?[0-9]+:/ {n += $2} END {print n + 0}' "$w/focus")
close "$sum" "$sa" || { echo "pprof -tagfocus=queryid=^$qa\$: $sum bytes, expected $sa"; head -20 "$w/focus"; exit 1; }

# -- jeprof reads every dump: a raw one, a stored one
snap=$(ls "$data"/heapprof/snapshots/lbl1*.heap | sed -n 1p)
ours=$(q -c "SELECT * FROM heapprof_dump_text(stored => 'lbl1', fold => false) LIMIT 1" | sed -n 's/^Total: \([0-9.]*\) MB$/\1/p')
jeprof --text "$bindir/postgres" "$snap" > "$w/jeprof" 2>/dev/null
theirs=$(sed -n 's/^Total: \([0-9.]*\) MB$/\1/p' "$w/jeprof")
jeprof --text "$bindir/postgres" "$w/raw" > "$w/jeprof.raw" 2>/dev/null
grep -q '^@.* 0xfffe0' "$w/raw" && grep -q '^@.* 0xfffe0' "$snap" && [ -n "$ours" ] && [ "$ours" = "$theirs" ] &&
	grep -q '^Total: ' "$w/jeprof.raw" && ! grep -qi 'fffe0' "$w/jeprof" "$w/jeprof.raw" ||
	{ echo "snapshot: heapprof $ours MB, jeprof $theirs MB"; grep -i fffe0 "$w/jeprof" "$w/jeprof.raw" | sed -n 1,3p; exit 1; }

# -- stored profiles keep their labels
[ "$(q -c "SELECT count(*) FROM heapprof_stacks(stored => '$na') WHERE queryid = $qa")" -gt 0 ] &&
	[ "$(cat "$w/peak")" -ge 2 ] ||
	{ echo "labels lost: capture $na, peak $(cat "$w/peak") queryids"; exit 1; }

# -- another backend's statements, with their text
q -c "SET compute_query_id = on" -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_leak(2000000)" \
	-c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
bg=$!
pid=
for _ in $(seq 100); do
	pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(60)'")
	[ -z "$pid" ] || break
	sleep 0.1
done
out=$(q -F '|' -c "SELECT bytes >= 2000000 FROM heapprof_query_bytes(pid => $pid) WHERE query = 'SELECT heapprof_test_leak(2000000)'")
[ "$out" = t ] || { echo "pid => $pid: $out"; q -c "SELECT * FROM heapprof_query_bytes(pid => $pid)"; exit 1; }
kill "$bg" 2>/dev/null || true
q -c "SELECT pg_terminate_backend($pid)" >/dev/null
bg=

# -- off: no labels; without compute_query_id: the context only
out=$(q -F ' ' -c "SET compute_query_id = on" -c "SET heapprof.labels = off" -c "SELECT heapprof_enable()" \
	-c "SELECT heapprof_test_leak(3000000)" \
	-c "SELECT 'off', count(*), count(queryid), count(context) FROM heapprof_stacks() WHERE frames[1] = 'hpt_leak_top'" \
	-c "SET heapprof.labels = on" -c "SET compute_query_id = off" -c "SELECT heapprof_reset()" \
	-c "SELECT heapprof_test_leak(3000000)" \
	-c "SELECT 'noid', count(*), count(queryid), count(context) FROM heapprof_stacks() WHERE frames[1] = 'hpt_leak_top'" |
	grep -e '^off ' -e '^noid ')
[ "$out" = "off 1 0 0
noid 1 0 1" ] || { printf 'labels off, then compute_query_id off:\n%s\n' "$out"; exit 1; }
# -- a statement cut inside a character (its 255th byte starts an e-acute)
long="SELECT heapprof_test_leak(100000), 'ab$(printf '\303\251%.0s' $(seq 1 200))'"
out=$(q -c "SET compute_query_id = on" -c "SELECT heapprof_enable()" -c "$long" \
	-c "SELECT length(heapprof_dump_portable()) > 0" 2>&1 | tail -n 1)
[ "$out" = t ] || { echo "heapprof_dump_portable() after a statement cut inside a character: $out"; exit 1; }
# -- the owners' wrappers are in a process only while it samples (gdb reads
#    owner.c's tables shown; a stripped heapprof.so, the package's, is not checked)
so=$(pg_config --pkglibdir)/heapprof.so
wrapped=
if readelf -S "$so" 2>/dev/null | grep '\.debug_info' >/dev/null; then
	q -c "SET application_name = 'hp_wrap'" -c "SELECT pg_sleep(3.01)" -c "SELECT heapprof_enable()" \
		-c "SELECT pg_sleep(3.02)" -c "SELECT heapprof_disable()" -c "SELECT pg_sleep(3.03)" >/dev/null &
	# flag N: owner.c's flag while the session sleeps its Nth sleep (polled
	# for 5 s at most)
	flag() {
		local pid=
		for _ in $(seq 50); do
			pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'hp_wrap' AND query LIKE '%pg_sleep(3.0$1)%'")
			[ -z "$pid" ] || break
			sleep 0.1
		done
		[ -n "$pid" ] && gdb -p "$pid" -batch -ex "print (int) ('owner.c'::shown != 0)" 2>/dev/null | sed -n 's/^\$1 = //p'
	}
	wrapped="$(flag 1) $(flag 2) $(flag 3)"
	wait
	[ "$wrapped" = "0 1 0" ] || { echo "the wrappers before, while and after sampling: '$wrapped' (0 1 0 wanted)"; exit 1; }
	wrapped="; the owners' wrappers in only while sampling"
fi
echo "labels: statements told apart by queryid; contexts, grouping, filters, pprof tags, jeprof, stored profiles, pid$wrapped"
