#!/usr/bin/env bash
# t_formats.sh -- pictures, pprof and pg_heapprof against cluster (a):
#  - every pg_heapprof format of an idle session's profile, by pid: dot (read
#    by Graphviz), svg, flamegraph, collapsed, pprof, raw (read by
#    heapprof-report), text, top; leak mode writes what grew meanwhile;
#  - --client-symbols renders each of those formats here byte for byte as
#    the server does (by default, --nofold, --objects, --focus); raw, which
#    has no names, is a usage error;
#  - a report without --pid writes one file per process, as
#    --backend-type=all; --backend-type takes a comma list; a process's top
#    prints its percentages as --merge does (100.0%);
#  - go tool pprof -top on the pprof output agrees with heapprof_top;
#  - the flame graph loads in headless Chromium and its script finds the
#    expected top frame (screenshot kept in $HP_ARTIFACTS, not in git); its
#    search (?s=REGEX) tells heapprof_top's cum_bytes and cum_pct for a
#    function, and counts each stack once when several of its frames match;
#    frames narrower than a pixel are merged into boxes when drawn, and the
#    search counts functions that only have such frames as exactly;
#  - pg_heapprof fails cleanly on a wrong password, a database without the
#    extension, a bad pid and bad arguments; a role without grants is told
#    the workflow and the heapprof_grant() line (in SQL: how to get one); a server hint naming
#    heapprof_enable(pid => N) is printed as --enable --pid N;
#  - -o DIR/ is created for reports of every process, -o DIR (missing) is a
#    usage error saying so, and a wide dot graph's SVG fits a window.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
cd "$HP_TOP"
w=$(scratch)
art=${HP_ARTIFACTS:-/tmp/heapprof-artifacts}
mkdir -p "$art"
hba=$(dirname "$HP_LOG")/data/pg_hba.conf
cleanup() {
	[ -n "${TARGET_PID:-}" ] && kill "$TARGET_PID" 2>/dev/null || true
	sed -i '/heapprof_pw/d' "$hba" 2>/dev/null || true
	psql -X -q -d postgres -c "SELECT pg_reload_conf()" -c "DROP ROLE IF EXISTS heapprof_pw" \
		-c "SELECT heapprof_drop_snapshot(name) FROM heapprof_snapshots() WHERE name IN ('hp_fmt', 'hp_search')" \
		-c "DROP DATABASE IF EXISTS heapprof_noext" >/dev/null 2>&1 || true
}
at_exit cleanup
cli() { ./pg_heapprof -d postgres "$@"; }

# an idle session holding 3 MiB from known functions
coproc TARGET { psql -X -q -At -d postgres; }
echo "SELECT pg_backend_pid();" >&"${TARGET[1]}"
read -r pid <&"${TARGET[0]}"
cli --enable --pid "$pid" | grep -x "profiling of process $pid is on" >/dev/null || fail "--enable"
echo "SELECT heapprof_test_hold(3145728);" >&"${TARGET[1]}"
read -r _ <&"${TARGET[0]}"
cli --list | grep -E "^ *$pid  client backend .* on " >/dev/null || { cli --list || true; fail "--list"; }

# every format
for f in dot svg flamegraph collapsed pprof raw text top; do
	cli --report "$f" --pid "$pid" -o "$w/out.$f" || fail "format $f"
	[ -s "$w/out.$f" ] || fail "format $f is empty"
done
dot -Tsvg "$w/out.dot" > /dev/null || fail "dot rejects the dot output"
grep -q '<svg' "$w/out.svg" || fail "svg"
# a wide graph's SVG fits a browser window (dot scales it to size="10,7": 720x504 pt)
awk 'BEGIN { printf "heap_v2/524288\n  t*: 1: 100 [0: 0]\n"
	for (i = 0; i < 60; i++) { printf "@"; for (j = 0; j < 4; j++) printf " 0x%x", 4194320 + (i * 4 + j) * 64
		printf " 0x%x 0x%x\n  t*: 1: %d [0: 0]\n", 4294416 + (i % 6) * 64, 4394320, 1000000 + i * 10000 }
	printf "\nMAPPED_LIBRARIES:\n400000-500000 r-xp 00000000 08:01 1 /nonexistent/heapprof/wide.so\n" }' >"$w/wide.heap"
./heapprof-report --dot "$w/wide.heap" | dot -Tsvg >"$w/wide.svg" || fail "the wide graph's svg"
read -r wpt hpt < <(sed -n 's/^<svg width="\([0-9]*\)pt" height="\([0-9]*\)pt".*/\1 \2/p' "$w/wide.svg")
[ "${wpt:-9999}" -le 720 ] && [ "${hpt:-9999}" -le 504 ] || fail "the wide graph's svg is ${wpt}x${hpt} pt, wider than a window"
grep -q 'hpt_leaf_alloc' "$w/out.flamegraph" || fail "flamegraph lacks the frame"
grep -q ';hpt_outer;hpt_middle;hpt_leaf_alloc 3145728$' "$w/out.collapsed" || fail "collapsed"
grep -q '^ *3145728 .* hpt_leaf_alloc$' <(./heapprof-report --show_bytes "$w/out.raw") || fail "raw"
grep -q '^Total: ' "$w/out.text" || fail "text"
grep -qE '^ +1 +3145728 .* hpt_leaf_alloc$' "$w/out.top" || { cat "$w/out.top"; fail "top"; }

# --client-symbols: the engine here, with the server's arguments, writes what the server writes.
# Each takes its own dump of the process, whose allocated total (the coverage
# line's "of the N MB allocated (P%)") may move a little between the two.
same_report() {
	local f=$1 a=$2 b=$3
	if [ "$f" = pprof ]; then
		a=$w/a.raw b=$w/b.raw
		go tool pprof -raw "$2" > "$a" 2>&1 && go tool pprof -raw "$3" > "$b" 2>&1 || return 1
	fi
	cmp -s <(sed -E 's/of the [0-9.]+ [KMGT]?B allocated \([0-9]+%\)/of the N allocated/g' "$a") \
		<(sed -E 's/of the [0-9.]+ [KMGT]?B allocated \([0-9]+%\)/of the N allocated/g' "$b")
}
for f in dot svg flamegraph collapsed pprof text top; do
	for opt in --fold --nofold --objects --focus=hpt_middle; do
		cli --report "$f" --pid "$pid" "$opt" -o "$w/srv.$f" || fail "format $f $opt"
		cli --client-symbols --report "$f" --pid "$pid" "$opt" -o "$w/here.$f" || fail "--client-symbols format $f $opt"
		same_report "$f" "$w/srv.$f" "$w/here.$f" || { diff "$w/srv.$f" "$w/here.$f" | sed -n 1,10p || true; fail "--client-symbols $f $opt differs"; }
	done
done
rc=0
cli --client-symbols --report raw --pid "$pid" >/dev/null 2>"$w/err" || rc=$?
[ "$rc" = 2 ] && grep -q 'raw format has none' "$w/err" || fail "--client-symbols --report raw: exit $rc, $(cat "$w/err")"

# a report without --pid: every process, one file each; top's percentages as --merge's
# (a directory named with a trailing slash is created; one without is not, and says how)
mkdir "$w/typed"
rc=0
cli --report top -o "$w/all" >/dev/null 2>"$w/err" || rc=$?
[ "$rc" = 2 ] && [ ! -e "$w/all" ] && grep -q "hint: end it with / to have it created (-o $w/all/)" "$w/err" ||
	fail "--report top -o a missing directory: exit $rc, $(cat "$w/err")"
rc=0
cli --report top --pid "$pid" -o "$w/one/" >/dev/null 2>"$w/err" || rc=$?
[ "$rc" = 2 ] && grep -q 'names a directory, and this report is one file' "$w/err" ||
	fail "--pid -o DIR/: exit $rc, $(cat "$w/err")"
cli --report top --focus hpt_ -o "$w/all/" >"$w/all.out" 2>/dev/null || { cat "$w/all.out"; fail "--report top without --pid"; }
grep -q "  $pid (client backend): $w/all/.*-$pid.top$" "$w/all.out" && grep -q "(checkpointer)" "$w/all.out" ||
	{ cat "$w/all.out"; fail "--report top without --pid: not every process"; }
cli --backend-type 'client backend' --focus hpt_ --merge --report top -o "$w/merged.top"
# (other client backends may hold hpt_ memory too: the columns are compared, and the numbers' form)
diff <(head -n 1 "$w/all/"*"-$pid.top") <(head -n 1 "$w/merged.top") &&
	grep -qE '^ +1 +[0-9]+ +[0-9]+\.[0-9]% +[0-9]+ +[0-9]+\.[0-9]% +hpt_leaf_alloc$' "$w/all/"*"-$pid.top" &&
	grep -qE '^ +1 +[0-9]+ +[0-9]+\.[0-9]% +[0-9]+ +[0-9]+\.[0-9]% +hpt_leaf_alloc$' "$w/merged.top" ||
	{ head -n 3 "$w/all/"*"-$pid.top" "$w/merged.top"; fail "a process's top and --merge's differ in form"; }
grep -qE '^ +1 +[0-9]+ +100\.0% +[0-9]+ +100\.0%  hpt_leaf_alloc$' "$w/merged.top" || { cat "$w/merged.top"; fail "top percentages"; }
cli --report top --backend-type 'checkpointer,client backend' -o "$w/typed" >"$w/typed.out" 2>/dev/null || fail "comma list"
grep -q "  $pid (client backend): " "$w/typed.out" && grep -q "(checkpointer)" "$w/typed.out" &&
	! grep -q "(background writer)" "$w/typed.out" || { cat "$w/typed.out"; fail "--backend-type 'checkpointer,client backend'"; }

# heapprof-report on a stored profile prints what SQL prints, by default and with --nofold
q -c "SELECT heapprof_snapshot('hp_fmt', true, pid => $pid) > 0" >/dev/null
q -c "SELECT encode(pg_read_binary_file('heapprof/snapshots/hp_fmt.heap'), 'base64')" | base64 -d >"$w/snap.heap"
diff <(q -c "SELECT * FROM heapprof_dump_text(stored => 'hp_fmt')") <(./heapprof-report --text "$w/snap.heap") ||
	fail "heapprof-report and SQL differ by default"
diff <(q -c "SELECT * FROM heapprof_dump_text(stored => 'hp_fmt', fold => false)") <(./heapprof-report --nofold "$w/snap.heap") ||
	fail "heapprof-report --nofold and SQL fold => false differ"
q -c "SELECT heapprof_drop_snapshot('hp_fmt')" >/dev/null

# for the flame graph's search: a stored profile of many functions, as a flame graph and by cum
q -c "SELECT heapprof_enable()" -c "CREATE TEMP TABLE hp_t AS SELECT g, md5(g::text) FROM generate_series(1, 1000) g" \
	-c "SELECT count(*) FROM hp_t, pg_class" -c "SELECT heapprof_test_hold_palloc(2097152, 8192)" \
	-c "SELECT heapprof_test_hold(1048576)" \
	-c "SELECT heapprof_snapshot('hp_search', true)" >/dev/null
q -c "SELECT heapprof_dump_flamegraph(stored => 'hp_search')" > "$w/search.svg"
q -c "SELECT function, cum_bytes, cum_pct FROM heapprof_top(1000000, stored => 'hp_search', order_by => 'cum')" > "$w/cum.top"
# must it draw a box of narrower frames?  Where a drawn frame (a pixel, 1/1180
# of the total, or more) has children under a pixel that add up to a pixel
want_box=$(q -c "WITH s AS (SELECT bytes, frames FROM heapprof_stacks(stored => 'hp_search')),
	t AS (SELECT sum(bytes) / 1180.0 AS px FROM s),
	w AS (SELECT frames[k:] AS path, sum(bytes) AS w FROM s, generate_series(1, cardinality(frames)) k GROUP BY 1),
	x AS (SELECT w.path[2:] AS parent, sum(w.w) FILTER (WHERE w.w < t.px) AS narrow, t.px FROM w, t GROUP BY 1, 3)
	SELECT coalesce(bool_or(narrow >= px), false) FROM x
	WHERE cardinality(parent) = 0 OR (SELECT w.w FROM w WHERE w.path = x.parent) >= px")
names=$(awk -F'|' '$1 ~ /^[A-Za-z_][A-Za-z0-9_]*$/ { print $1 }' "$w/cum.top" | sed -n '1p;3p;6p;12p;24p;48p')
# the stacks through any of three of them, each once (exact: every allocation is sampled)
set -- $(sed -n '4p;5p;6p' <<<"$names")
any=$(q -c "SELECT sum(bytes) FILTER (WHERE frames && ARRAY['$1', '$2', '$3']),
	round(100.0 * sum(bytes) FILTER (WHERE frames && ARRAY['$1', '$2', '$3']) / sum(bytes), 1)
	FROM heapprof_stacks(stored => 'hp_search')" | tr '|' ' ')
q -c "SELECT heapprof_drop_snapshot('hp_search')" >/dev/null

# go tool pprof agrees with heapprof_top
export HOME=${HOME:-$w} GOCACHE=$w/go
go tool pprof -top -sample_index=inuse_space -unit=B "$w/out.pprof" > "$w/pprof.top" 2>&1 || { cat "$w/pprof.top"; fail "go tool pprof"; }
want=$(q -c "SELECT flat_bytes FROM heapprof_top(100, pid => $pid) WHERE function = 'hpt_leaf_alloc'")
grep -qE "^ +${want}B .* hpt_leaf_alloc$" "$w/pprof.top" || { cat "$w/pprof.top"; fail "pprof disagrees: want $want"; }
total_sql=$(q -c "SELECT sum(flat_bytes) FROM heapprof_top(100000, pid => $pid)")
total_pprof=$(sed -n 's/^Showing nodes accounting for [0-9]*B, [0-9.]*% of \([0-9]*\)B total$/\1/p' "$w/pprof.top")
[ -n "$total_pprof" ] && [ "$total_sql" = "$total_pprof" ] ||
	fail "totals differ: heapprof_top $total_sql, pprof $total_pprof"
go tool pprof -top -sample_index=inuse_objects "$w/out.pprof" | grep -E '^ +3 .* hpt_leaf_alloc$' >/dev/null || fail "pprof objects"

# the flame graph in headless Chromium
cp "$w/out.flamegraph" "$w/flame.svg"	# Chromium goes by the extension
chrome=(timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run
	--disable-background-networking --disable-component-update --disable-sync --user-data-dir="$w/chrome")
"${chrome[@]}" --dump-dom "file://$w/flame.svg" > "$w/dom.html" 2>/dev/null || fail "chromium"
grep -q 'id="details"[^>]*>Top frame: hpt_leaf_alloc<' "$w/dom.html" || { grep -o 'id="details"[^<]*' "$w/dom.html"; fail "top frame"; }
"${chrome[@]}" --screenshot="$art/flamegraph.png" --window-size=1200,900 "file://$w/flame.svg" >/dev/null 2>&1 ||
	fail "screenshot"
[ -s "$art/flamegraph.png" ] || fail "empty screenshot"
# search REGEX: "bytes pct" the flame graph's search shows
search() {
	local s=$1 i c u=
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in [A-Za-z0-9_]) u+=$c ;; *) u+=$(printf '%%%02X' "'$c") ;; esac
	done
	"${chrome[@]}" --dump-dom "file://$w/search.svg?s=$u" 2>/dev/null |
		sed -n 's/.*id="matched"[^>]*>Matched: \([0-9]*\) bytes, \([0-9.]*\)% of [0-9]*<.*/\1 \2/p'
}
# cum FUNCTION: "cum_bytes cum_pct" of heapprof_top
cum() { awk -F'|' -v f="$1" '$1 == f { print $2, $3 }' "$w/cum.top"; }
same() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ")
	exit !(x[1] != "" && x[1] - y[1] <= 1 && y[1] - x[1] <= 1 && x[2] + 0 == y[2] + 0) }'; }
# plain names at several ranks of the cum order
for fn in $names; do
	got=$(search "^$fn\$")
	same "$got" "$(cum "$fn")" || fail "search $fn shows '$got', heapprof_top's cum is '$(cum "$fn")'"
done
# three frames of one stack match: it counts once, as hpt_outer's cum
got=$(search '^(hpt_outer|hpt_middle|hpt_leaf_alloc)$')
same "$got" "$(cum hpt_outer)" || fail "search of a chain shows '$got', hpt_outer's cum is '$(cum hpt_outer)'"
got=$(search "^($1|$2|$3)\$")
same "$got" "$any" || fail "search ^($1|$2|$3)\$ shows '$got', the stacks through them hold '$any'"
# many functions narrower than a pixel (1/1180 of the total): drawn merged, searched from the table
T=$(sed -n 's/.*, T = \([0-9.]*\);$/\1/p' "$w/search.svg")
narrow=$(awk -F'|' -v px="$(awk -v t="$T" 'BEGIN { print t / 1180 }')" \
	'$1 ~ /^[A-Za-z_][A-Za-z0-9_]*$/ && $2 > 0 && $2 < px { print $1 }' "$w/cum.top")
[ "$(wc -w <<<"$narrow")" -ge 20 ] || fail "only $(wc -w <<<"$narrow") functions are narrower than a pixel"
if [ "$want_box" = t ]; then
	grep -q ' narrower frames (' "$w/search.svg" || fail "no box of narrower frames"
else
	! grep -q ' narrower frames (' "$w/search.svg" || fail "a box of narrower frames adding up to less than a pixel"
fi
for fn in $(sed -n '1p;7p;19p;$p' <<<"$narrow"); do
	got=$(search "^$fn\$")
	same "$got" "$(cum "$fn")" || fail "search $fn (under a pixel) shows '$got', heapprof_top's cum is '$(cum "$fn")'"
done

# leak mode: the session grows while pg_heapprof watches
cli --seconds 2 --report text --pid "$pid" -o "$w/leak.txt" 2> "$w/leak.err" &
watcher=$!
sleep 0.5
echo "SELECT heapprof_test_hold(2097152);" >&"${TARGET[1]}"
read -r _ <&"${TARGET[0]}"
wait "$watcher" || { cat "$w/leak.err"; fail "leak mode"; }
grep -q 'watch' "$w/leak.err" || fail "no progress shown"
grep -qE '^ +2\.0 +[0-9.]+% .* hpt_leaf_alloc$' "$w/leak.txt" || { cat "$w/leak.txt"; fail "leak mode misses the growth"; }
[ "$(q -c "SELECT count(*) FROM heapprof_snapshots() WHERE name LIKE 'pg_heapprof_%'")" = 0 ] || fail "leak snapshot left"
q -c "SELECT heapprof_dump_flamegraph(pid => $pid, base => 'x')" >/dev/null 2>&1 && fail "unknown base accepted"

# clean failures
q -c "CREATE ROLE heapprof_pw LOGIN PASSWORD 'right'"
sed -i '1i local all heapprof_pw scram-sha-256' "$hba"
q -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.2
if PGPASSWORD=wrong ./pg_heapprof -w -U heapprof_pw -d postgres --list 2> "$w/err"; then fail "wrong password accepted"; fi
grep -q 'password authentication failed' "$w/err" || { cat "$w/err"; fail "wrong password message"; }
# a role without grants is told the workflow its action needs and the grant
for a in "--list processes" "--setup processes" "--captures history"; do
	set -- $a
	if PGPASSWORD=right ./pg_heapprof -w -U heapprof_pw -d postgres "$1" 2>"$w/err" >/dev/null; then fail "$1 without grants"; fi
	grep -qx "pg_heapprof: hint: the role lacks the heapprof workflow $2; a superuser (or the extension's owner) grants it with: SELECT heapprof_grant('heapprof_pw', '$2');" "$w/err" ||
		{ cat "$w/err"; fail "$1 without grants: no heapprof_grant hint"; }
done
# in SQL, PostgreSQL's bare error gains a hint that says how to get the grant
r=$(PGPASSWORD=right psql -X -w -U heapprof_pw -d postgres -c "SELECT heapprof_enable()" 2>&1) && fail "heapprof_enable() without grants: $r"
grep -q "HINT:  heapprof grants its functions by workflow, .*SELECT heapprof_grant('heapprof_pw') names the workflows" <<<"$r" ||
	fail "heapprof_enable() without grants: no hint naming heapprof_grant: $r"
# a server hint that names a SQL call names pg_heapprof's option
psql -X -q -d postgres -c "SET application_name = 'hp_fmt_idle'" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
idle_psql=$!
idle=$(session_pid hp_fmt_idle)
cli --report top --pid "$idle" >/dev/null 2>"$w/err" || true
kill "$idle_psql" 2>/dev/null || true
q -c "SELECT pg_terminate_backend($idle)" >/dev/null
grep -qx "pg_heapprof: hint: Nothing is sampled in process $idle: enable it with pg_heapprof --enable --pid $idle first." "$w/err" ||
	{ cat "$w/err"; fail "a server hint naming heapprof_enable(pid => N), not in pg_heapprof's terms"; }
q -c "CREATE DATABASE heapprof_noext"
if ./pg_heapprof -d heapprof_noext --list 2> "$w/err"; then fail "missing extension accepted"; fi
grep -q 'heapprof extension is not installed' "$w/err" || { cat "$w/err"; fail "missing extension message"; }
if cli --report text --pid 1 2> "$w/err"; then fail "pid 1 accepted"; fi
grep -q 'not a server process' "$w/err" || { cat "$w/err"; fail "bad pid message"; }
set +e
cli --report text --pid abc 2>/dev/null; [ $? = 2 ] || fail "bad pid argument: exit status"
cli --report nosuch --pid "$pid" 2>/dev/null; [ $? = 2 ] || fail "bad format: exit status"
cli --enable 2>/dev/null; [ $? = 2 ] || fail "missing --pid: exit status"
set -e
./pg_heapprof --help | grep '^Usage:' >/dev/null || fail "--help"
echo "formats: every pg_heapprof format (each with --client-symbols as the server renders it), reports of every process, pprof agrees with go tool pprof, flame graph in Chromium (its search = heapprof_top's cum), clean failures"
