#!/usr/bin/env bash
# t_requests.sh -- request slots are a bounded, shared resource (cluster (a)):
#  - a target that exits while it works on a request leaves no slot behind
#    (gdb stops it inside jemalloc's dump and makes it exit cleanly);
#  - 64 sessions of one plain role, each waiting on a target that never
#    answers, hold at most that role's share: the others get 53300 with a
#    hint, and a superuser's request still goes through.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
w=$(scratch)
pids=()
cleanup() {
	[ -n "${stopped:-}" ] && kill -CONT "$stopped" 2>/dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
at_exit cleanup

# -- a target that exits while working on a request
psql -X -q -At -d postgres -c "SET application_name = 'hp_exiting'" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
pids+=($!)
target=$(session_pid hp_exiting)
gdb -p "$target" -batch -ex 'break hpj_dump' -ex 'continue' -ex 'call (void) proc_exit(0)' \
	>"$w/gdb.log" 2>&1 &
gdbpid=$!
wait_for "gdb's breakpoint" 10 grep -q '^Breakpoint 1 at' "$w/gdb.log" ||
	{ echo "gdb could not set a breakpoint:"; cat "$w/gdb.log"; exit 1; }
sleep 0.5	# gdb continues the target
err=$(q -c "SET heapprof.request_timeout = '30s'" -c "SELECT length(heapprof_dump_raw(pid => $target))" 2>&1 || true)
wait "$gdbpid" || true
case $err in
	*"exited before answering"*) ;;
	*) echo "expected 'exited before answering', got: $err"; cat "$w/gdb.log"; exit 1 ;;
esac
left=$(q -c "SELECT count(*) FROM heapprof_requests() WHERE target = $target")
[ "$left" = 0 ] || { echo "the exited target's request still holds a slot"; q -c "SELECT * FROM heapprof_requests()"; exit 1; }

# -- one plain role cannot take every slot
q -c "DROP ROLE IF EXISTS hp_greedy" -c "CREATE ROLE hp_greedy LOGIN" \
	-c "GRANT EXECUTE ON FUNCTION heapprof_status(integer) TO hp_greedy"
psql -X -q -At -d postgres -U hp_greedy -c "SET application_name = 'hp_stopped'" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
pids+=($!)
stopped=$(session_pid hp_stopped)
kill -STOP "$stopped"			# it never answers
for i in $(seq 64); do
	psql -X -q -At -d postgres -U hp_greedy -c "SET heapprof.request_timeout = '60s'" \
		-c "SELECT active FROM heapprof_status(pid => $stopped)" >"$w/greedy.$i" 2>&1 &
	pids+=($!)
done
wait_for "48 refusals" 10 eval '[ "$(grep -l "too many heapprof requests" "$w"/greedy.* 2>/dev/null | wc -l)" -ge 48 ]' || true
held=$(q -c "SELECT count(*) FROM heapprof_requests() WHERE requester_role = 'hp_greedy'")
refused=$(grep -l 'too many heapprof requests' "$w"/greedy.* | wc -l || true)
grep -qh 'at most 16 requests' "$w"/greedy.* || { echo "no per-role hint:"; cat "$w"/greedy.1; exit 1; }
[ "$held" -le 16 ] || { echo "one role holds $held slots"; exit 1; }
[ "$refused" -ge 48 ] || { echo "only $refused of 64 greedy requests were refused"; exit 1; }
checkpointer=$(q -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
[ "$(q -c "SELECT prof_enabled FROM heapprof_status(pid => $checkpointer)")" = t ] ||
	{ echo "a superuser's request did not go through"; exit 1; }
kill -CONT "$stopped"
stopped=
for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
q -c "DROP OWNED BY hp_greedy" -c "DROP ROLE hp_greedy" >/dev/null 2>&1 || true
echo "requests: a target exiting mid-request freed its slot; one role held $held slots, $refused of 64 refused (53300), a superuser still got through"
