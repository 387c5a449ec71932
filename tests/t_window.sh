#!/usr/bin/env bash
# t_window.sh -- what a process allocates during a window (cluster (a):
# prof_active:false, lg_prof_sample:0, heapprof preloaded):
#  - a loop that allocates and frees 1 MB again and again: in
#    heapprof_allocations(seconds => 2, pid => N) its stack allocated
#    at least 20 MB (hundreds on an idle machine), every object 1 MiB (jemalloc's size class, unsampled
#    exactly at lg_prof_sample:0), nearly all of it temporary; the live heap
#    holds at most the one in hand;
#  - the same window in the other forms (top, flame graph titled with the
#    window);
#  - refused without pid, with bad seconds, with stored; a process not sampling
#    gets a NOTICE; a cancelled window ends at once.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
QOPTS="-c heapprof.dump_on_exit_threshold=-1"
w=$(scratch)
at_exit '[ -n "${BG_PID:-}" ] && kill "$BG_PID" 2>/dev/null'
create_ext heapprof heapprof_test

# a session churning 1 MB values for 20 s (random(): the planner cannot fold it away)
q -c "SET application_name = 'hp_churn'" -c "SELECT heapprof_enable()" \
	-c "DO \$\$ BEGIN WHILE clock_timestamp() < now() + interval '20 s' LOOP
		PERFORM length(repeat('x', 1000000 + (random() * 10)::int)); END LOOP; END \$\$" >/dev/null 2>&1 &
BG_PID=$!
pid=$(wait_query "the churning session" 10 \
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'hp_churn' AND query LIKE 'DO%'")

out=$(q -F ' ' -c "SELECT bytes, objects, bytes = objects * 1048576, temporary_pct >= 95
	FROM heapprof_allocations(seconds => 2, pid => $pid) WHERE frames[1] = 'repeat'" \
	-c "SELECT coalesce(sum(flat_bytes), 0) FROM heapprof_top(1000, pid => $pid) WHERE function = 'repeat'")
read -r bytes objects exact temporary live <<< "$(echo $out)"
[ "$exact $temporary" = "t t" ] && [ "$bytes" -ge $((20 * 1048576)) ] && [ "$live" -le 1048576 ] ||
	{ echo "repeat in the window: $out"; exit 1; }

out=$(q -c "SELECT function FROM heapprof_top(1, pid => $pid, seconds => 1)" \
	-c "SELECT heapprof_dump_flamegraph(pid => $pid, seconds => 0.5) LIKE '%allocations of process $pid during 0.5 s%'")
[ "$out" = "repeat
t" ] || { echo "other forms of the window: $out"; exit 1; }

# -- refusals; a cancelled window ends at once
err() { q -c "SELECT heapprof_test_error(\$q\$$1\$q\$)" | sed -n 1p; }
[ "$(err "SELECT * FROM heapprof_allocations()")" = "22023: a window of allocations needs pid => N" ] &&
[ "$(err "SELECT * FROM heapprof_allocations(seconds => 0, pid => $pid)")" = "22023: seconds must be more than 0 and at most 3600, not 0" ] &&
[ "$(err "SELECT * FROM heapprof_top(seconds => 1, pid => $pid, base => 'x')")" = "22023: seconds cannot be combined with stored, base or peak" ] ||
	{ echo "refusals: $(err "SELECT * FROM heapprof_allocations()")"; exit 1; }
t0=$SECONDS
out=$(q -c "SET statement_timeout = '300ms'" -c "SELECT count(*) FROM heapprof_allocations(seconds => 30, pid => $pid)" 2>&1 || true)
[ "$out" = "ERROR:  canceling statement due to statement timeout" ] && [ $((SECONDS - t0)) -le 5 ] ||
	{ echo "cancelled window: $out after $((SECONDS - t0)) s"; exit 1; }
kill "$BG_PID" 2>/dev/null || true
wait "$BG_PID" 2>/dev/null || true
BG_PID=

# -- a process that does not sample: told so
q -c "SELECT pg_backend_pid()" -c "SELECT pg_sleep(5)" > "$w/idle" 2>&1 &
BG_PID=$!
wait_for "the idle session's pid" 5 test -s "$w/idle"
idle=$(head -n1 "$w/idle")
PGOPTIONS="-c client_min_messages=notice" psql -X -q -At -d postgres -c "SELECT count(*) FROM heapprof_allocations(seconds => 0.2, pid => $idle)" > "$w/notice" 2>&1
grep -q "NOTICE:  sampling is not active in process $idle: the window will record nothing" "$w/notice" ||
	{ echo "no notice for a process not sampling: $(cat "$w/notice")"; exit 1; }
echo "window: repeat allocated $((bytes / 1048576)) MB in $objects objects of 1 MiB in 2 s, >= 95% temporary, $live bytes live; other forms; refusals, cancel, notice"
