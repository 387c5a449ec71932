#!/usr/bin/env bash
# t_remote.sh -- requests by pid under concurrency (cluster (a)):
# 20 requesters at once against one idle session, every request answered;
# 70 requesters terminated while they wait leave no slot taken, no file;
# a walsender and the autovacuum launcher reachable; and the server log holds
# no memory-context lines caused by heapprof, and no crash.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
w=$(scratch)
cleanup() {
	[ -n "${recv:-}" ] && kill "$recv" 2>/dev/null || true
	[ -n "${TARGET_PID:-}" ] && kill "$TARGET_PID" 2>/dev/null || true
}
at_exit cleanup

# an idle session: psql waiting for input on a pipe
coproc TARGET { psql -X -q -At -d postgres; }
echo "SELECT pg_backend_pid();" >&"${TARGET[1]}"
read -r pid <&"${TARGET[0]}"
echo "SELECT heapprof_enable(); SELECT heapprof_test_hold(3145728);" >&"${TARGET[1]}"
read -r _ <&"${TARGET[0]}"
read -r _ <&"${TARGET[0]}"

# 20 requesters at once, reports and status mixed
for i in $(seq 20); do
	if [ $((i % 2)) = 0 ]; then
		q -c "SELECT flat_bytes FROM heapprof_top(1, pid => $pid)" > "$w/out.$i" 2>&1 &
	else
		q -c "SELECT active FROM heapprof_status(pid => $pid)" > "$w/out.$i" 2>&1 &
	fi
done
wait_ok=0
for job in $(jobs -p); do
	[ "$job" = "${TARGET_PID:-}" ] && continue
	wait "$job" || wait_ok=1
done
for i in $(seq 20); do
	want=t
	[ $((i % 2)) = 0 ] && want=3145728
	[ "$(cat "$w/out.$i")" = "$want" ] || { echo "requester $i got: $(cat "$w/out.$i")"; exit 1; }
done
[ "$wait_ok" = 0 ] || { echo "a requester failed"; exit 1; }

# the target still works as a session
echo "SELECT 41 + 1;" >&"${TARGET[1]}"
read -r answer <&"${TARGET[0]}"
[ "$answer" = 42 ] || { echo "target session broken: $answer"; exit 1; }

# a walsender and the autovacuum launcher
"$(pg_config --bindir)/pg_receivewal" -D "$w" --no-sync >/dev/null 2>&1 &
recv=$!
ws=$(wait_query "a walsender" 5 "SELECT pid FROM pg_stat_activity WHERE backend_type = 'walsender'")
[ "$(q -c "SELECT prof_enabled FROM heapprof_status(pid => $ws)")" = t ] || { echo "walsender not reached"; exit 1; }
launcher=$(q -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'autovacuum launcher'")
[ "$(q -c "SELECT prof_enabled FROM heapprof_status(pid => $launcher)")" = t ] || { echo "launcher not reached"; exit 1; }

# a requester terminated while it waits (FATAL: no PG_FINALLY) frees its slot
# and leaves no dump file: 70 such requesters, more than there are slots
echo "SELECT heapprof_test_spin(3);" >&"${TARGET[1]}"
requesters=()
for i in $(seq 70); do
	q -c "SET heapprof.request_timeout = '10s'" -c "SELECT count(*) FROM heapprof_top(1, pid => $pid)" \
		>/dev/null 2>&1 &
	requesters+=($!)
done
sleep 1
q -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
      WHERE query LIKE '%heapprof_top(1, pid => $pid)%' AND pid <> pg_backend_pid()" >/dev/null
for job in "${requesters[@]}"; do wait "$job" 2>/dev/null || true; done
read -r _ <&"${TARGET[0]}"		# the spin is over
sleep 0.5
[ "$(q -c "SELECT active FROM heapprof_status(pid => $pid)")" = t ] || { echo "slots were not freed"; exit 1; }
left=$(q -c "SELECT count(*) FROM pg_ls_dir('base/pgsql_tmp', true, false) f WHERE f LIKE '%heapprof%'")
[ "$left" = 0 ] || { echo "$left dump files left by terminated requesters"; exit 1; }

# nothing in the log from the memory-context machinery, and no crash
log=${HP_LOG:?}
if grep -E 'logging memory contexts|Grand total:|level: [0-9]+;' "$log"; then
	echo "memory-context lines in the server log"; exit 1
fi
if grep -E 'terminated by signal|PANIC|server process .* was terminated' "$log"; then
	echo "a server process crashed"; exit 1
fi
echo "remote: 20 concurrent requests answered, walsender and launcher reached, log clean"
