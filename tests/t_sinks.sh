#!/usr/bin/env bash
# t_sinks.sh -- every output sink of the clients against every byte and
# hostile strings (cluster (a)), each output checked by its own parser:
# xmllint for SVG, Graphviz's dot for dot (and xmllint for what it draws),
# and the terminal check for the rest (UTF-8 without a C0 control but
# newline and tab, DEL or a C1 control, as psql's aligned output):
#  - heapprof-report offline, every report (text, dot, collapsed, flame
#    graph, symbols, pprof, a --base diff) of a heap_v2 dump whose mapped
#    objects are named with every byte 0x01-0xFF but '/' and newline, the
#    terminal's escape sequences (OSC 52 and 0, CSI 2K, CR), markup, quotes,
#    entities, the end of a CDATA section and bytes that are not UTF-8, with
#    such a --program; its errors about files named so; and no pprof on a
#    terminal;
#  - the SQL functions: every report of a stored profile so named, with and
#    without a base, by its parser; heapprof_top's rows valid UTF-8, and
#    escaped as psql's aligned output shows them;
#  - pg_heapprof: --captures of a statement whose comment holds those escape
#    sequences (they reached the terminal raw), --list while a role so named
#    has a session; and, against a server that answers heapprof_stacks()
#    with hostile frame names and sizes of 1e300, inf and NaN (as a hostile
#    server may), --merge in every format (svg through Graphviz wrote
#    <text>bell^G_ring</text>; the flame graph looped for ever above
#    1e154), no pprof on a terminal, and the server's error, hint and
#    notice relayed.
set -euo pipefail
cd "$HP_TOP"
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
QOPTS="-c heapprof.dump_on_exit_threshold=-1"
command -v xmllint >/dev/null || fail "xmllint is missing (libxml2-utils, tests/deps test)"
command -v dot >/dev/null || fail "dot is missing (graphviz, tests/deps test)"
w=$(scratch)
esc=$'\e'
bel=$'\a'
evil_role="hp_${esc}]0;T${bel}${esc}[2K"$'\r'
cleanup() {
	[ -n "${SLEEP_PID:-}" ] && kill "$SLEEP_PID" 2>/dev/null || true
	[ -n "${data:-}" ] && rm -f "$data"/heapprof/captures/*.heap || true
	q -c "DROP DATABASE IF EXISTS hp_sinks" >/dev/null 2>&1 || true
	q -v r="$evil_role" >/dev/null 2>&1 <<<"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = :'r';
		SELECT pg_sleep(0.2); DROP ROLE IF EXISTS :\"r\"" || true
}
at_exit cleanup

# term_ok FILE WHAT: what a terminal may be given
term_ok() {
	iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1 || fail "$2: not UTF-8: $(od -c "$1" | sed -n 1,5p)"
	if LC_ALL=C grep -naP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' "$1" >"$w/bad"; then
		fail "$2: a control reaches the terminal: $(od -c "$w/bad" | sed -n 1,5p)"
	fi
}
# xml_ok FILE WHAT: well-formed XML
xml_ok() { xmllint --noout --nonet "$1" 2>"$w/xml.err" || fail "$2: not XML: $(head -c 600 "$w/xml.err")"; }
# dot_ok FILE WHAT: Graphviz reads it without a charset complaint, and draws well-formed XML
dot_ok() {
	dot -Tsvg "$1" >"$1.svg" 2>"$w/dot.err" || fail "$2: dot refused it: $(head -c 600 "$w/dot.err")"
	if grep -i 'utf\|latin\|syntax' "$w/dot.err" >/dev/null; then fail "$2: dot: $(head -c 600 "$w/dot.err")"; fi
	xml_ok "$1.svg" "$2 drawn by dot"
}
# check FILE FORMAT WHAT: FILE checked by FORMAT's parser
check() {
	case $2 in
		svg | flamegraph) xml_ok "$1" "$3"; term_ok "$1" "$3" ;;
		dot) dot_ok "$1" "$3"; term_ok "$1" "$3" ;;
		pprof) gzip -t "$1" || fail "$3: not gzip" ;;
		*) term_ok "$1" "$3" ;;
	esac
}

# -- heapprof-report, offline: objects named with every byte and hostile strings
names=()
every=""
for b in $(seq 1 255); do
	[ "$b" = 10 ] || [ "$b" = 47 ] || every+=$(printf "\\x$(printf %02x "$b")")
done
names+=("$every")
names+=("${esc}]52;c;cm0gLXJmIH4K${bel}clip" "${esc}]0;title${bel}${esc}[2K"$'\r'"fake")
names+=($'\xc2\x9b31m C1 CSI \xc2\x9d0;t\xc2\x9c' "]]><x a='1'>&amp;&#7;&#x1b;&foo;&\"'<![CDATA[")
names+=($'bad\xff\xfe \xc0\xaf \xed\xa0\x80 \xf4\x90\x80\x80 \xe2\x82 cut' $'\xef\xbf\xbe nonchar \xe2\x80\xa8 ls')
names+=('back\slash\" \N \G \L {a|b}<c> ::x y' "$(printf 'x%.0s' $(seq 1 3000))")
{
	echo "heap_v2/1"
	echo "  t*: 100: 409600 [0: 0]"
	for i in "${!names[@]}"; do
		printf '@ 0x%x 0x%x\n  t*: 10: 40960 [0: 0]\n' $((0x400000 + i * 0x10000 + 0x100)) $((0x400000 + ((i + 1) % ${#names[@]}) * 0x10000 + 0x200))
	done
	echo
	echo "MAPPED_LIBRARIES:"
	for i in "${!names[@]}"; do
		printf '%x-%x r-xp 00000000 00:00 0 /tmp/%s\n' $((0x400000 + i * 0x10000)) $((0x400000 + (i + 1) * 0x10000)) "${names[$i]}"
	done
} >"$w/hostile.heap"
sed 's/t\*: 10: 40960/t*: 5: 20480/' "$w/hostile.heap" >"$w/base.heap"
program="prog${esc}]0;T${bel}&<\"]]>"$'\xff'
for f in text dot collapsed flamegraph; do
	./heapprof-report --"$f" --program="$program" "$w/hostile.heap" >"$w/offline.$f" 2>"$w/offline.$f.err" ||
		fail "heapprof-report --$f: $(head -c 300 "$w/offline.$f.err")"
	check "$w/offline.$f" "$f" "heapprof-report --$f"
	./heapprof-report --"$f" --program="$program" --base="$w/base.heap" "$w/hostile.heap" >"$w/diff.$f" ||
		fail "heapprof-report --$f --base"
	check "$w/diff.$f" "$f" "heapprof-report --$f --base"
done
grep -F 'clip+0x' "$w/offline.text" | grep -F '\x1B]52;c;' >/dev/null ||
	fail "heapprof-report --text: the object's name is not shown escaped: $(grep -a clip "$w/offline.text")"
./heapprof-report --symbols "$w/hostile.heap" >"$w/offline.symbols" 2>/dev/null || fail "heapprof-report --symbols"
term_ok "$w/offline.symbols" "heapprof-report --symbols"
./heapprof-report --pprof "$w/hostile.heap" >"$w/offline.pprof" || fail "heapprof-report --pprof"
check "$w/offline.pprof" pprof "heapprof-report --pprof"
# a terminal never gets pprof's bytes (script(1) gives the command one)
if script -qec "./heapprof-report --pprof $w/hostile.heap" /dev/null >"$w/tty.pprof" 2>&1; then
	fail "heapprof-report --pprof wrote to a terminal"
fi
grep -a "not writing pprof" "$w/tty.pprof" >/dev/null || fail "heapprof-report --pprof on a terminal: $(cat -v "$w/tty.pprof")"
# errors name the file, escaped
if ./heapprof-report "$w/no${esc}]0;T${bel}such" >/dev/null 2>"$w/err.missing"; then fail "a missing dump was read"; fi
term_ok "$w/err.missing" "heapprof-report's error about a missing file"
printf 'heap_v2/1\n@ 0x1 junk\x1b]52;c;x\x07\n' >"$w/bad${esc}name.heap"
if ./heapprof-report "$w/bad${esc}name.heap" >/dev/null 2>"$w/err.bad"; then fail "a malformed dump was read"; fi
term_ok "$w/err.bad" "heapprof-report's error about a malformed dump"

# -- pg_heapprof --captures: a statement whose comment holds escape sequences
cli() { ./pg_heapprof -d postgres "$@"; }
create_ext heapprof heapprof_test
data=$(q -c "SHOW data_directory")
rm -f "$data"/heapprof/captures/*.heap
# -- the SQL functions: the same profile as a stored snapshot, every report with and without a base
as_pg mkdir -p "$data/heapprof/snapshots"
for p in hostile base; do
	{ echo "%heapprof v=1 pid=1 owner=10 taken_at=0 backend_type=client backend"; cat "$w/$p.heap"; } >"$w/hp_sinks_$p.heap"
	chown "$HP_OSUSER" "$w/hp_sinks_$p.heap"
	mv "$w/hp_sinks_$p.heap" "$data/heapprof/snapshots/hp_sinks_$p.heap"
done
for f in text dot collapsed flamegraph; do
	for base in "" ", base => 'hp_sinks_base'"; do
		q -c "SELECT heapprof_dump_$f(stored => 'hp_sinks_hostile'$base)" >"$w/sql.$f" 2>"$w/sql.$f.err" ||
			fail "heapprof_dump_$f(stored$base): $(head -c 300 "$w/sql.$f.err")"
		check "$w/sql.$f" "$f" "heapprof_dump_$f(stored$base)"
	done
done
# a row's name is a SQL value: valid in the database encoding (psql escapes it for a terminal)
q -c "SELECT * FROM heapprof_top(stored => 'hp_sinks_hostile')" >"$w/sql.top" || fail "heapprof_top(stored)"
iconv -f UTF-8 -t UTF-8 "$w/sql.top" >/dev/null 2>&1 || fail "heapprof_top(stored): not UTF-8"
psql -X -q -d postgres -c "SELECT function FROM heapprof_top(stored => 'hp_sinks_hostile')" >"$w/sql.top.psql" ||
	fail "heapprof_top(stored) in psql's aligned output"
term_ok "$w/sql.top.psql" "heapprof_top(stored), as psql shows it"
grep -F '\x1B]52;c;' "$w/sql.text" >/dev/null || fail "heapprof_dump_text: the object's name is not shown escaped"
rm -f "$data"/heapprof/snapshots/hp_sinks_*.heap

# inside the statement: from 18 a statement's text starts after its leading comments
comment="/* ${esc}]52;c;cm0gLXJmIH4K${bel} ${esc}]0;pwned${bel} ${esc}[2K"$'\r'" \u0085 */"
q -c "SET compute_query_id = on" -c "SET heapprof.store_statement_text = on" -c "SET heapprof.capture_min_growth = '1MB'" -c "SELECT heapprof_enable()" \
	-c "SELECT pg_sleep(0.02)" -c "SELECT $comment heapprof_test_leak(3000000)" >/dev/null
cli --captures >"$w/captures" 2>&1 || fail "pg_heapprof --captures: $(cat "$w/captures")"
term_ok "$w/captures" "pg_heapprof --captures"
grep -F '\x1B]52;c;cm0gLXJmIH4K\x07' "$w/captures" >/dev/null ||
	fail "pg_heapprof --captures does not show the comment escaped as psql does: $(cat -v "$w/captures")"

# -- --list while a role named with escape sequences has a session
q -v r="$evil_role" >/dev/null <<<'CREATE ROLE :"r" LOGIN'
PGUSER=$evil_role psql -X -q -d postgres -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
SLEEP_PID=$!
wait_query "the role's session" 10 "SELECT pid FROM pg_stat_activity WHERE usename LIKE 'hp_%' AND state = 'active'" >/dev/null
cli --list >"$w/list" 2>&1 || fail "pg_heapprof --list: $(cat -v "$w/list")"
term_ok "$w/list" "pg_heapprof --list"
grep -F 'hp_\x1B]0;T\x07' "$w/list" >/dev/null || fail "pg_heapprof --list: the role is not shown escaped: $(cat -v "$w/list")"
kill "$SLEEP_PID" 2>/dev/null || true
SLEEP_PID=

# -- a server that answers with hostile names and sizes: --merge in every format
q -c "CREATE DATABASE hp_sinks" >/dev/null
DB=hp_sinks create_ext heapprof
hostile_sql=$(printf "%s" "${names[1]}|${names[2]}|${names[3]}|]]></script><script>alert(1)</script>|bell${bel}_ring|&#7;&foo;|\"quoted\"\\\\" |
	sed "s/'/''/g")
DB=hp_sinks q >/dev/null <<SQL
ALTER EXTENSION heapprof DROP FUNCTION heapprof_stacks(text, text, boolean, text, boolean, text, integer, boolean, double precision);
DROP FUNCTION heapprof_stacks(text, text, boolean, text, boolean, text, integer, boolean, double precision);
-- every control and C1 character, the hostile names, 5000 stacks of 1e300, one of 1e304 5000 frames deep (drawn
-- frames beyond MAX_FRAMES: the flame graph looks for a cut), and with hp_sinks.sizes = odd a few
-- of inf and NaN
CREATE FUNCTION heapprof_stacks(focus text DEFAULT NULL, ignore text DEFAULT NULL, fold boolean DEFAULT true,
    base text DEFAULT NULL, drop_negative boolean DEFAULT false, stored text DEFAULT NULL,
    pid integer DEFAULT NULL, peak boolean DEFAULT false, seconds double precision DEFAULT NULL)
RETURNS TABLE(bytes double precision, objects double precision, frames text[], queryid bigint, context text)
LANGUAGE sql AS \$\$
  SELECT 1e300::float8, 1::float8, ARRAY['leaf ' || n || ' ' || chr(1 + n % 159), 'main'], NULL::bigint, NULL::text
    FROM generate_series(1, 5000) n
  UNION ALL
  SELECT 1e304::float8, 1::float8, array_agg('deep ' || n ORDER BY n), NULL, NULL FROM generate_series(1, 5000) n
  UNION ALL
  SELECT v, v, ARRAY[h, string_agg(chr(c), '' ORDER BY c), 'main'], NULL, NULL
    FROM unnest(string_to_array('$hostile_sql', '|')) h,
         unnest(CASE current_setting('hp_sinks.sizes') WHEN 'huge' THEN ARRAY['1e300']
                ELSE ARRAY['inf', '-inf', 'nan', '-1e300', '0'] END::float8[]) v,
         generate_series(1, 159) c
   GROUP BY h, v
\$\$;
SQL
for sizes in huge odd; do
	q -c "ALTER DATABASE hp_sinks SET hp_sinks.sizes = '$sizes'" >/dev/null
	for f in text top collapsed dot svg flamegraph pprof; do
		timeout 120 ./pg_heapprof -d hp_sinks --backend-type checkpointer --merge --report "$f" -o "$w/merged.$f" \
			2>"$w/merged.$f.err" || fail "--merge --report $f, $sizes sizes (a loop ends at the timeout): $(head -c 300 "$w/merged.$f.err")"
		check "$w/merged.$f" "$f" "pg_heapprof --merge --report $f, $sizes sizes"
		term_ok "$w/merged.$f.err" "pg_heapprof --merge --report $f's messages"
	done
done
if script -qec "./pg_heapprof -d hp_sinks --backend-type checkpointer --merge --report pprof" /dev/null >"$w/tty.pprof" 2>&1; then
	fail "pg_heapprof --report pprof wrote to a terminal"
fi
grep -a "not writing pprof to a terminal" "$w/tty.pprof" >/dev/null || fail "pg_heapprof --report pprof on a terminal: $(cat -v "$w/tty.pprof")"
grep -F 'bell\x07_ring' "$w/merged.top" >/dev/null || fail "--merge --report top: the name is not escaped: $(cat -v "$w/merged.top")"

# -- the server's error, relayed
DB=hp_sinks q >/dev/null <<SQL
CREATE OR REPLACE FUNCTION heapprof_stacks(focus text DEFAULT NULL, ignore text DEFAULT NULL, fold boolean DEFAULT true,
    base text DEFAULT NULL, drop_negative boolean DEFAULT false, stored text DEFAULT NULL,
    pid integer DEFAULT NULL, peak boolean DEFAULT false, seconds double precision DEFAULT NULL)
RETURNS TABLE(bytes double precision, objects double precision, frames text[], queryid bigint, context text)
LANGUAGE plpgsql AS \$\$
BEGIN
  RAISE NOTICE 'notice %', '$hostile_sql';
  RAISE EXCEPTION 'failed %', '$hostile_sql' USING HINT = 'hint ' || '$hostile_sql';
END \$\$;
SQL
if ./pg_heapprof -d hp_sinks --backend-type checkpointer --merge --report text -o "$w/none" 2>"$w/relayed"; then
	fail "a failing server's merge succeeded"
fi
term_ok "$w/relayed" "pg_heapprof's relay of the server's error"
grep -F 'bell\x07_ring' "$w/relayed" >/dev/null || fail "the server's error is not shown escaped: $(cat -v "$w/relayed")"
echo "sinks: heapprof-report's 7 reports and 2 errors, pg_heapprof's --captures, --list, 7 merged formats of 1e300 and of inf/NaN sizes and a relayed error, each by its parser"
