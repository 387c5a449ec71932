#!/usr/bin/env bash
# t_reveal.sh -- what a role learns with exactly README's recommended grants
# (the two blocks of "Permissions"; cluster (a)), against docs/security.md:
#  (a) focus / ignore on hex prefixes of real run-time addresses (taken by
#      the superuser from heapprof_dump_raw) answer as for prefixes of no
#      address: bisecting a code address one digit at a time learns nothing;
#  (b) no output or message of any function the role may call holds an
#      absolute address of the server's mappings (the superuser's maps and
#      the role's backend's), and the functions that hand them out by
#      design (dump_raw, dump_portable, dump_pprof) are not granted;
#  (c) another role's statement text (captures), snapshots, exit dumps and
#      session state stay hidden, as pg_stat_activity hides them;
#  (d) the documented workflow still works: reports, patterns on names and
#      object+0xOFFSET, snapshots, listings, the peak, windows, pg_heapprof.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
QOPTS="-c heapprof.dump_on_exit_threshold=-1"
rv() { q_as hp_rv "$@"; }
w=$(scratch)
cleanup() {
	[ -n "${RV_PID:-}" ] && kill "$RV_PID" 2>/dev/null || true
	[ -n "${sleeper:-}" ] && kill "$sleeper" 2>/dev/null || true
	q -c "SELECT heapprof_drop_snapshot(name) FROM heapprof_snapshots() WHERE name LIKE 'hp_rv%'" >/dev/null 2>&1 || true
	if [ -n "${data:-}" ]; then
		for n in ${stored:-}; do as_pg rm -f "$data/heapprof/dumps/$n.heap" "$data/heapprof/captures/$n.heap"; done
	fi
	for r in hp_rv hp_rv_other; do
		q -c "DROP OWNED BY $r" -c "DROP ROLE $r" >/dev/null 2>&1 || true
	done
}
at_exit cleanup
create_ext heapprof heapprof_test
data=$(q -c "SHOW data_directory")

# -- two roles with exactly README's recommended grants
# readme_sql LINE: the SQL block that follows a docs/permissions.md paragraph starting with LINE
readme_sql() {
	awk -v start="$1" 'index($0, start) == 1 { on = 1 } on && /^```sql/ { sql = 1; next }
		sql && /^```/ { exit } sql' "$HP_TOP/docs/permissions.md" | sed "s/app_debugger/$2/g"
}
for r in hp_rv hp_rv_other; do
	q -c "CREATE ROLE $r LOGIN" -c "$(readme_sql 'role profile its own sessions:' $r)" \
		-c "$(readme_sql 'The complete grant for each workflow' $r)" \
		-c "GRANT EXECUTE ON FUNCTION heapprof_test_hold(bigint, integer), heapprof_test_leak(bigint) TO $r" >/dev/null
done
granted=$(q -c "SELECT p.proname FROM pg_proc p JOIN pg_depend d ON d.classid = 'pg_proc'::regclass
	AND d.objid = p.oid AND d.deptype = 'e' JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'heapprof'
	WHERE has_function_privilege('hp_rv', p.oid, 'EXECUTE') ORDER BY 1")
for f in heapprof_dump_raw heapprof_dump_portable heapprof_dump_pprof; do
	grep -qx "$f" <<<"$granted" && { echo "(b) README's recommended grants include $f, which hands out run-time addresses"; exit 1; }
done

# -- the ground truth, as superuser: the maps and a real code address
q -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_hold(2097152)" -c "SELECT heapprof_dump_raw()" |
	tail -n +3 >"$w/su.heap"
# the rootmost code frame of the first stack (not a label's pseudo-frame,
# 0xfffe...): main's caller chain, the same in every backend
root=$(awk '/^@/ { for (i = NF; i > 1; i--) if ($i !~ /^0xfffe/) { print $i; exit } }' "$w/su.heap")
[ -n "$root" ] || { echo "no stack in the superuser's dump"; head "$w/su.heap"; exit 1; }
hex=$(printf '%016x' "$((root - 1))")		# as frames are located: inside the call
prefix=${hex:0:12}
grep -q "^MAPPED_LIBRARIES:" "$w/su.heap" || { echo "no maps in the superuser's dump"; exit 1; }

# the role's session: holds memory allocated under postgres' and the helper's code
coproc RV { PGUSER=hp_rv psql -X -q -At -d postgres 2>/dev/null; }
ask() {
	echo "$1" >&"${RV[1]}"
	read -r -t 60 ans <&"${RV[0]}" || { echo "hp_rv's session did not answer: $1"; exit 1; }
	echo "$ans"
}
rvpid=$(ask "SELECT pg_backend_pid();")
ask "SELECT heapprof_enable();" >/dev/null
ask "SELECT heapprof_test_hold(4194304) IS NOT NULL;" >/dev/null
q -c "SELECT heapprof_dump_raw(pid => $rvpid)" >"$w/rv.heap"
# every mapping of both processes, [start, end) in hex
sed -n '/^MAPPED_LIBRARIES:/,$p' "$w/su.heap" "$w/rv.heap" |
	awk '$1 ~ /^[0-9a-f]+-[0-9a-f]+$/ { split($1, r, "-"); print r[1], r[2] }' >"$w/ranges"
[ -s "$w/ranges" ] || { echo "no mappings read"; exit 1; }

# -- (a) the bisection: true and false prefixes of a real code address answer alike
answer() { ask "SELECT count(*) || ':' || coalesce(sum(flat_bytes), 0) FROM heapprof_top(1000, $1);"; }
t=$(answer "focus => '^$prefix'")
f=$(answer "focus => '^ffffffffffff'")
[ "$t" = "$f" ] || { echo "(a) focus on a prefix of a real address ($prefix) answers $t, on none $f"; exit 1; }
# ignore keeps the heap's bytes in the answer, so both on one snapshot: the
# live heap moves from one call to the next with the statement's own memory
# (its parse and plan, caches warming)
ask "SELECT 1 FROM heapprof_snapshot('hp_rv_a');" >/dev/null
t=$(answer "ignore => '^$prefix', stored => 'hp_rv_a'")
f=$(answer "ignore => '^ffffffffffff', stored => 'hp_rv_a'")
ask "SELECT 1 FROM heapprof_drop_snapshot('hp_rv_a');" >/dev/null
[ "$t" = "$f" ] || { echo "(a) ignore on a prefix of a real address ($prefix) answers $t, on none $f"; exit 1; }
# the attack itself: extend a prefix one hex digit at a time (user space starts 0000)
known=0000
for _ in 1 2 3 4 5 6; do
	declare -A seen=()
	hit=
	for d in 0 1 2 3 4 5 6 7 8 9 a b c d e f; do
		a=$(answer "focus => '^$known$d'")
		seen[$a]=1
		[ "${a%%:*}" != 0 ] && hit=$d
	done
	[ "${#seen[@]}" = 1 ] && break
	known=$known$hit
done
[ "$known" = 0000 ] ||
	{ echo "(a) the role bisected a code address: ${known}... (the real one: $hex)"; exit 1; }
unset seen

# -- (b) nothing any granted function says holds an address of the mappings
other_pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'autovacuum launcher'")
{
	echo "SELECT heapprof_enable();"
	echo "SELECT heapprof_test_hold(3145728) IS NOT NULL;"
	while read -r f; do
		case $f in
			heapprof_status | heapprof_backends | heapprof_requests | heapprof_snapshots | heapprof_dumps | heapprof_stored | heapprof_queries | heapprof_query_bytes | \
				heapprof_captures | heapprof_objects | heapprof_history | heapprof_growth | heapprof_collector | \
				heapprof_metrics_heap | heapprof_metrics_functions | heapprof_metrics_growth)
				echo "SELECT * FROM $f();" ;;
			heapprof_dump_timeline) echo "SELECT $f();" ;;
			heapprof_enable | heapprof_forget_symbols) echo "SELECT $f();" ;;
			heapprof_disable | heapprof_reset | heapprof_drop_snapshot) ;;	# last, below
			heapprof_top | heapprof_stacks | heapprof_peak)
				echo "SELECT * FROM $f(fold => false);"
				echo "SELECT * FROM $f(pid => $other_pid);"
				echo "SELECT * FROM $f(focus => '(');" ;;
			heapprof_allocations) echo "SELECT * FROM $f(0.3, fold => false);" ;;
			heapprof_dump_dot) echo "SELECT $f(fold => false, show_bytes => true, nodecount => 10000);" ;;
			heapprof_dump_text | heapprof_dump_collapsed | heapprof_dump_flamegraph)
				echo "SELECT $f(fold => false);"
				echo "SELECT $f(stored => 'hp_rv_none');" ;;
			heapprof_dump_raw | heapprof_dump_portable) echo "SELECT $f();" ;;
			heapprof_snapshot) echo "SELECT heapprof_snapshot('hp_rv_b', true);" ;;
			*) echo "(b) no call here for $f, granted by README: add one" >&2; exit 1 ;;
		esac
	done <<<"$granted"
	for f in heapprof_drop_snapshot heapprof_reset heapprof_disable; do
		grep -qx $f <<<"$granted" || continue
		case $f in
			heapprof_drop_snapshot) echo "SELECT heapprof_drop_snapshot('hp_rv_b');" ;;
			*) echo "SELECT $f();" ;;
		esac
	done
} >"$w/calls.sql"
PGUSER=hp_rv psql -X -q -At -d postgres -v VERBOSITY=verbose -f "$w/calls.sql" >"$w/said" 2>&1 || true
grep -q 'Total:' "$w/said" || { echo "(b) the role's reports said nothing:"; head -20 "$w/said"; exit 1; }
# hex numbers of 9 or more digits (addresses of a 64-bit process), with or without 0x
grep -oE '0x[0-9a-fA-F]+|\b[0-9a-fA-F]{9,16}\b' "$w/said" | sort -u >"$w/numbers" || true
leaks=$(awk 'function h(s,   v, i, c) { s = tolower(s); sub(/^0x/, "", s); v = 0
		for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
		return v }
	NR == FNR { lo[NR] = h($1); hi[NR] = h($2); n = NR; next }
	{ v = h($1); if (v < 4294967296) next
	  for (i = 1; i <= n; i++) if (v >= lo[i] && v < hi[i]) { print $1; break } }' "$w/ranges" "$w/numbers")
[ -z "$leaks" ] || { echo "(b) the role was shown addresses of the server's mappings:"; grep -F -m 5 "$leaks" "$w/said"; exit 1; }

# -- (c) another role's text, profiles and state stay hidden
# a session of the other role, running, from before the settings that make files
PGUSER=hp_rv_other psql -X -q -At -d postgres -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
sleeper=$!
q -c "ALTER ROLE hp_rv_other SET heapprof.capture_min_growth = '1MB'" \
	-c "ALTER ROLE hp_rv_other SET heapprof.dump_on_exit_threshold = 0" \
	-c "ALTER ROLE hp_rv_other SET heapprof.store_statement_text = on" >/dev/null
q_as hp_rv_other -c "SELECT heapprof_enable()" \
	-c "SELECT heapprof_snapshot('hp_rv_other_snap', true)" -c "SELECT pg_sleep(0.02)" \
	-c "SELECT heapprof_test_leak(3000000) /* hp_rv_secret_text */" -c "SELECT pg_sleep(0.02)" >/dev/null
other_ready() {
	stored=$(q -c "SELECT name FROM heapprof_dumps() WHERE owner = 'hp_rv_other'
		UNION ALL SELECT name FROM heapprof_captures() WHERE usename = 'hp_rv_other'")
	spid=$(q -c "SELECT pid FROM pg_stat_activity WHERE usename = 'hp_rv_other' AND state = 'active'")
	[ "$(wc -w <<<"$stored")" = 2 ] && [ -n "$spid" ]
}
wait_for "the other role's two profiles and session" 10 other_ready || true
q -c "SELECT query FROM heapprof_captures() WHERE usename = 'hp_rv_other'" | grep hp_rv_secret_text >/dev/null ||
	{ echo "(c) setup: no capture of the other role's statement: $stored"; exit 1; }
[ "$(wc -w <<<"$stored")" = 2 ] && [ -n "$spid" ] || { echo "(c) setup: stored '$stored', session '$spid'"; exit 1; }
out=$(rv -c "SELECT * FROM heapprof_captures()" -c "SELECT * FROM heapprof_snapshots()" -c "SELECT * FROM heapprof_dumps()")
grep -q 'hp_rv_secret_text\|hp_rv_other' <<<"$out" && { echo "(c) the role lists the other role's profiles: $out"; exit 1; }
for n in $stored hp_rv_other_snap; do
	PGUSER=hp_rv expect_error 42501 -c "SELECT count(*) FROM heapprof_top(stored => '$n')" || exit 1
done
PGUSER=hp_rv expect_error 42501 -c "SELECT count(*) FROM heapprof_top(pid => $spid)" || exit 1
# heapprof_backends shows what pg_stat_activity shows the role, no more
row=$(rv -c "SELECT b.usename, b.state IS NULL, b.active IS NULL, b.allocated_bytes IS NULL,
	b.sampling_since IS NULL, a.state IS NULL FROM heapprof_backends() b JOIN pg_stat_activity a USING (pid)
	WHERE pid = $spid")
[ "$row" = "hp_rv_other|t|t|t|t|t" ] || { echo "(c) heapprof_backends shows the role another role's session: $row"; exit 1; }
more=$(rv -c "SELECT count(*) FROM heapprof_backends() b JOIN pg_stat_activity a USING (pid)
	WHERE a.state IS NULL AND (b.state IS NOT NULL OR b.active IS NOT NULL OR b.allocated_bytes IS NOT NULL)")
[ "$more" = 0 ] || { echo "(c) heapprof_backends shows $more processes' state pg_stat_activity hides"; exit 1; }
q -c "SELECT pg_terminate_backend($spid)" -c "SELECT heapprof_drop_snapshot('hp_rv_other_snap')" >/dev/null
wait "$sleeper" 2>/dev/null || true		# reaped now, not in the middle of a read below
sleeper=

# -- (d) the documented workflow, in the role's own sessions
[ "$(answer "focus => 'heapprof_test_hold'")" != "0:0" ] || { echo "(d) focus on a name matches nothing"; exit 1; }
[ "$(answer "focus => '^heapprof_test\\.so\\+0x[0-9a-f]+\$'")" != "0:0" ] ||
	{ echo "(d) focus on object+0xOFFSET matches nothing"; exit 1; }
[ "$(answer "ignore => '^heapprof_test\\.so\\+0x'")" != "$(answer "ignore => 'no_such_frame'")" ] ||
	{ echo "(d) ignore on object+0xOFFSET drops nothing"; exit 1; }
[ "$(ask "SELECT heapprof_snapshot('hp_rv_d', true) > 0;")" = t ] || { echo "(d) snapshot failed"; exit 1; }
[ "$(ask "SELECT count(*) > 0 FROM heapprof_stacks(base => 'hp_rv_d', drop_negative => true);")" = t ] || { echo "(d) a report with a base failed"; exit 1; }
[ "$(ask "SELECT count(*) FROM heapprof_snapshots() WHERE name = 'hp_rv_d';")" = 1 ] || { echo "(d) snapshot not listed"; exit 1; }
[ "$(ask "SELECT count(*) > 0 FROM heapprof_dump_dot(stored => 'hp_rv_d');")" = t ] || { echo "(d) stored => failed"; exit 1; }
[ "$(ask "SELECT count(*) FROM heapprof_drop_snapshot('hp_rv_d');")" = 1 ] || { echo "(d) drop failed"; exit 1; }
[ "$(ask "SELECT heapprof_reset() > 0;")" = t ] || { echo "(d) reset failed"; exit 1; }
cli() { PGUSER=hp_rv "$HP_TOP/pg_heapprof" -d postgres "$@"; }
cli --list | grep "^ *$rvpid " >/dev/null || { echo "(d) pg_heapprof --list misses the role's session"; exit 1; }
ask "SELECT heapprof_test_hold(1048576) IS NOT NULL;" >/dev/null
for f in top text dot collapsed flamegraph; do
	cli --report "$f" --pid "$rvpid" -o "$w/cli.$f" || { echo "(d) pg_heapprof --report $f failed"; exit 1; }
done
grep -q 'heapprof_test_hold\|hpt_' "$w/cli.top" || { echo "(d) --report top: $(head -5 "$w/cli.top")"; exit 1; }
echo "reveal: prefixes of real addresses answer as none; no address in $(wc -l <"$w/said") lines of output; other roles hidden; workflow works"
