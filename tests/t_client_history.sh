#!/usr/bin/env bash
# t_client_history.sh -- pg_heapprof's reports of what is not the heap now
# (cluster (a): prof_active:false, lg_prof_sample:0, heapprof preloaded):
#  - --captures lists a statement capture (a function leaking 3 MB with
#    heapprof.capture_min_growth = 1MB): name, pid, role, database,
#    queryid, growth, time, server and query, as heapprof_captures() has
#    them; --report=top --stored=NAME has the leaking function on top, and
#    --stored alone writes text (and --dump, its name before 1.2);
#  - --peak of a session before it has a peak fails with the server's
#    message; after a hash join, --peak --report=flamegraph is titled as the
#    peak of that process, and --peak alone writes text holding the hash
#    table;
#  - --allocations=1 --report=top of a session churning 1 MB values has
#    repeat on top, with a progress line; --merge sums windows by type;
#    Ctrl-C ends the window on the server at once and writes nothing;
#  - the combinations that make no sense exit 2 with a message.
set -euo pipefail
cd "$HP_TOP"
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
QOPTS="-c heapprof.dump_on_exit_threshold=-1 -c heapprof.store_statement_text=on"
cli() { ./pg_heapprof -d postgres "$@"; }
w=$(scratch)
cleanup() {
	[ -n "${BG_PID:-}" ] && kill "$BG_PID" 2>/dev/null || true
	[ -n "${CHURN_PID:-}" ] && kill "$CHURN_PID" 2>/dev/null || true
	[ -n "${data:-}" ] && rm -f "$data"/heapprof/captures/*.heap || true
}
at_exit cleanup
create_ext heapprof heapprof_test
data=$(q -c "SHOW data_directory")
rm -f "$data"/heapprof/captures/*.heap

# -- --captures and --stored
leak="SELECT heapprof_test_leak(3000000)"
q -c "SET compute_query_id = on" -c "SET heapprof.capture_min_growth = '1MB'" -c "SELECT heapprof_enable()" \
	-c "SELECT pg_sleep(0.02)" -c "$leak" >/dev/null
rows=$(q -F '|' -c "SELECT name, pid, usename, datname, queryid, pg_size_pretty(growth_bytes),
	to_char(captured_at, 'YYYY-MM-DD HH24:MI:SS'), query FROM heapprof_captures()")
[ "$(echo "$rows" | wc -l)" = 1 ] && [ -n "$rows" ] || { echo "captures: $rows"; exit 1; }
IFS='|' read -r name cpid user db queryid growth at query <<< "$rows"
[ "$query" = "$leak" ] && [ -n "$queryid" ] || { echo "capture: $rows"; exit 1; }
cli --captures > "$w/captures"
expected=$(printf '%-40s %8s %-12s %-12s %20s %10s %-19s  %-24s %s' "$name" "$cpid" "$user" "$db" "$queryid" \
	"$growth" "$at" "$PGHOST:$PGPORT" "$query")
[ "$(head -n1 "$w/captures" | awk '{print $1, $2, $NF}')" = "name pid query" ] &&
	[ "$(sed -n 2p "$w/captures")" = "$expected" ] && [ "$(wc -l < "$w/captures")" = 2 ] ||
	{ printf 'pg_heapprof --captures:\n%s\nexpected:\n%s\n' "$(cat "$w/captures")" "$expected"; exit 1; }
top=$(cli --report=top --stored="$name" | awk 'NR == 2 {print $NF}')
[ "$top" = hpt_leak_top ] || { echo "--report=top --stored=$name: top is $top"; cli --report=top --stored="$name"; exit 1; }
cli --stored="$name" > "$w/dump.txt"
grep -q hpt_leak_top "$w/dump.txt" || { echo "--stored=$name without --report: $(head -n3 "$w/dump.txt")"; exit 1; }
if cli --report=top --stored=hp_no_such_profile 2> "$w/err" >/dev/null; then echo "--stored of no profile succeeded"; exit 1; fi
grep -q "hp_no_such_profile" "$w/err" || { echo "--stored of no profile: $(cat "$w/err")"; exit 1; }
# --dump, its name before 1.2, and a database still at 1.1 (whose reports
# call the argument dump) read the same profile
q -c "DROP DATABASE IF EXISTS hp_cli_old" -c "CREATE DATABASE hp_cli_old" >/dev/null
psql -X -q -d hp_cli_old -c "CREATE EXTENSION heapprof VERSION '1.1'" >/dev/null
old_top=$(./pg_heapprof -d hp_cli_old --report=top --dump="$name" | awk 'NR == 2 {print $NF}')
q -c "DROP DATABASE hp_cli_old" >/dev/null
[ "$old_top" = hpt_leak_top ] || { echo "--dump on a 1.1 database: top is $old_top"; exit 1; }

# -- --peak: a session that will run a hash join
mkfifo "$w/in"
QOPTS= q < "$w/in" > "$w/bg.out" 2>&1 &
BG_PID=$!
exec 3> "$w/in"
echo "SELECT pg_backend_pid();" >&3
wait_for "the session's pid" 10 test -s "$w/bg.out"
pid=$(head -n1 "$w/bg.out")
if cli --peak --report=top --pid "$pid" > /dev/null 2> "$w/err"; then echo "--peak before any peak succeeded"; exit 1; fi
grep -q "process $pid has no peak profile yet" "$w/err" || { echo "--peak before any peak: $(cat "$w/err")"; exit 1; }
echo "SELECT heapprof_enable(); SET work_mem = '512MB'; SET jit = off;
	SELECT count(*) FROM generate_series(1, 1000000) a(x) JOIN generate_series(1, 1000000) b(x) USING (x);" >&3
wait_for "the hash join" 30 has_lines "$w/bg.out" 3
[ "$(sed -n 3p "$w/bg.out")" = 1000000 ] || { echo "the hash join: $(cat "$w/bg.out")"; exit 1; }
cli --peak --report=flamegraph --pid "$pid" -o "$w/peak.svg"
grep -q "peak of process $pid" "$w/peak.svg" || { echo "--peak --report=flamegraph: not titled as the peak"; exit 1; }
peak_mb=$(cli --peak --pid "$pid" | sed -n '1s/^Total: \([0-9]*\).* MB$/\1/p')
live_mb=$(cli --report=text --pid "$pid" | sed -n '1s/^Total: \([0-9]*\).* MB$/\1/p')
[ -n "$peak_mb" ] && [ "$peak_mb" -ge 100 ] && [ "$live_mb" -lt "$peak_mb" ] ||
	{ echo "--peak holds ${peak_mb:-?} MB, the live heap ${live_mb:-?} MB"; exit 1; }

# -- --allocations: a session churning 1 MB values for 30 s
q -c "SET application_name = 'hp_churn'" -c "SELECT heapprof_enable()" \
	-c "DO \$\$ BEGIN WHILE clock_timestamp() < now() + interval '30 s' LOOP
		PERFORM length(repeat('x', 1000000 + (random() * 10)::int)); END LOOP; END \$\$" >/dev/null 2>&1 &
CHURN_PID=$!
churn=$(wait_query "the churning session" 10 \
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'hp_churn' AND query LIKE 'DO%'")
t0=$SECONDS
cli --allocations=1 --report=top --pid "$churn" > "$w/alloc.top" 2> "$w/alloc.err"
top=$(awk 'NR == 2 {print $NF}' "$w/alloc.top")
[ "$top" = repeat ] || { echo "--allocations=1 --report=top: top is $top"; cat "$w/alloc.top" "$w/alloc.err"; exit 1; }
grep -q "watching what process $churn allocates" "$w/alloc.err" || { echo "no progress: $(cat "$w/alloc.err")"; exit 1; }
[ $((SECONDS - t0)) -le 10 ] || { echo "--allocations=1 took $((SECONDS - t0)) s"; exit 1; }
# every client backend but pg_heapprof's own: the churn and the joined session
top=$(cli --backend-type='client backend' --merge --allocations=0.5 --report=top 2>/dev/null | awk 'NR == 2 {print $NF}')
[ "$top" = repeat ] || { echo "--merge --allocations: top is $top"; exit 1; }
./pg_heapprof -d postgres --allocations=30 --report=top --pid "$churn" > "$w/int.top" 2> "$w/int.err" &
cpid=$!
wait_query "pg_heapprof's window" 5 "SELECT pid FROM pg_stat_activity WHERE application_name = 'pg_heapprof'
	AND state = 'active' AND query LIKE '%seconds =>%'" >/dev/null || true
t0=$SECONDS
kill -INT "$cpid"
rc=0
wait "$cpid" || rc=$?
[ "$rc" = 1 ] && grep -q "interrupted; nothing written" "$w/int.err" && [ ! -s "$w/int.top" ] ||
	{ echo "Ctrl-C during --allocations: exit $rc, $(cat "$w/int.err")"; exit 1; }
gone() { left=$(q -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pg_heapprof'"); [ -z "$left" ]; }
wait_for "pg_heapprof's session to end" 3 gone || true
[ -z "$left" ] && [ $((SECONDS - t0)) -le 5 ] || { echo "after Ctrl-C the window goes on in $left"; exit 1; }

# -- combinations that make no sense
bad=0
usage() {
	local rc=0
	cli "$@" > /dev/null 2> "$w/usage" || rc=$?
	[ "$rc" = 2 ] && [ -s "$w/usage" ] || { echo "pg_heapprof $*: exit $rc, $(cat "$w/usage")"; exit 1; }
	bad=$((bad + 1))
}
usage --peak --report=raw --pid "$pid"
grep -q "heapprof_dump_raw takes no peak" "$w/usage" || { cat "$w/usage"; exit 1; }
usage --allocations=1 --report=raw --pid "$churn"
usage --stored="$name" --report=raw
usage --peak --client-symbols --pid "$pid"
grep -q "client-symbols" "$w/usage" || { cat "$w/usage"; exit 1; }
usage --stored="$name" --client-symbols
usage --peak --seconds=2 --pid "$pid"
usage --allocations=1 --seconds=2 --pid "$churn"
usage --client-symbols --seconds=2 --pid "$pid"
usage --peak --allocations=1 --pid "$pid"
usage --peak --stored="$name"
usage --stored="$name" --pid "$pid"
usage --stored="$name" --backend-type='client backend' --merge
usage --stored="$name" -d postgres
usage --list --peak
usage --enable --peak --pid "$pid"
usage --captures --pid "$pid"
usage --captures --report=top
usage --peak
usage --allocations=1
for s in 0 -1 3600.5 1e3 . 1.2.3 nan 0x10 ' 1' 10s; do usage --allocations="$s" --pid "$churn"; done
grep -q "at most 3600" "$w/usage" || { cat "$w/usage"; exit 1; }
echo "client history: --captures lists the capture as heapprof_captures() has it, --dump reads it (hpt_leak_top); --peak ${peak_mb} MB (live ${live_mb} MB), titled; --allocations=1 has repeat on top, merged too, Ctrl-C ends the window; $bad bad combinations exit 2"
