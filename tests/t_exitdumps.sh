#!/usr/bin/env bash
# t_exitdumps.sh -- backends exiting above heapprof.dump_on_exit_threshold
# leave their profile in $PGDATA/heapprof/dumps (cluster (a), which preloads
# heapprof); it carries the right pid and can be reported on; retention
# holds at heapprof.max_dumps and heapprof.max_dump_bytes.
set -euo pipefail
# helper sessions must not leave dumps of their own: they opt out
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
QOPTS="-c heapprof.dump_on_exit_threshold=-1"
settings() {
	q -c "ALTER SYSTEM SET heapprof.dump_on_exit_threshold = '$1'" \
	  -c "ALTER SYSTEM SET heapprof.max_dumps = $2" \
	  -c "ALTER SYSTEM SET heapprof.max_dump_bytes = '$3'" -c "SELECT pg_reload_conf()" >/dev/null
}
cleanup() {
	q -c "ALTER SYSTEM RESET heapprof.dump_on_exit_threshold" -c "ALTER SYSTEM RESET heapprof.max_dumps" \
	  -c "ALTER SYSTEM RESET heapprof.max_dump_bytes" -c "SELECT pg_reload_conf()" >/dev/null || true
}
at_exit cleanup
count() { q -c "SELECT count(*) FROM heapprof_dumps()"; }
# a session that holds memory from known functions, then exits; prints its pid
leaky_session() {
	QOPTS= q -c "SELECT heapprof_enable()" \
		-c "SELECT heapprof_test_hold($1)" -c "SELECT pg_backend_pid()" | tail -n1
}
has_dumps() { [ "$(count)" = "$1" ]; }
wait_dumps() {
	wait_for "$1 exit dumps" 10 has_dumps "$1" ||
		{ echo "have $(count)"; q -c "SELECT name FROM heapprof_dumps()"; return 1; }
}

create_ext heapprof heapprof_test
q -c "SELECT count(*) FROM (SELECT pg_ls_dir('heapprof/dumps', true, false)) d" >/dev/null
before=$(count)
[ "$before" = 0 ] || { echo "dumps left over: $before"; exit 1; }

# below the threshold: nothing
settings 1GB 5 100MB
leaky_session 1048576 >/dev/null
sleep 0.5
[ "$(count)" = 0 ] || { echo "dumped below the threshold"; exit 1; }

# above it: a dump with this pid, reportable
settings 1MB 5 100MB
pid=$(leaky_session 4194304)
wait_dumps 1
q -c "SELECT pid, backend_type, owner FROM heapprof_dumps()" | grep -x "$pid|client backend|postgres" >/dev/null ||
	{ echo "wrong metadata for pid $pid:"; q -c "SELECT * FROM heapprof_dumps()"; exit 1; }
name=$(q -c "SELECT name FROM heapprof_dumps()")
[[ $name == *-$pid-client_backend ]] || { echo "name $name lacks pid and type"; exit 1; }
q -c "SELECT flat_bytes, function FROM heapprof_top(1, stored => '$name')" | grep -x '4194304|hpt_leaf_alloc' >/dev/null ||
	{ echo "exit dump does not show the held memory"; q -c "SELECT * FROM heapprof_top(3, stored => '$name')"; exit 1; }

# retention: at most 3 files, the oldest go first
settings 1MB 3 100MB
for i in 1 2 3; do last=$(leaky_session 2097152); done
wait_dumps 3
q -c "SELECT name FROM heapprof_dumps()" | grep -- "-$pid-" >/dev/null && { echo "oldest dump kept"; exit 1; }
q -c "SELECT name FROM heapprof_dumps()" | grep -- "-$last-" >/dev/null || { echo "newest dump missing"; exit 1; }

# retention by size: each dump is some kB; a limit below two keeps one
size=$(q -c "SELECT max(file_bytes) FROM heapprof_dumps()")
settings 1MB 100 "$(( (size * 3 / 2) / 1024 + 1 ))kB"
leaky_session 2097152 >/dev/null
wait_dumps 1
total=$(q -c "SELECT sum(file_bytes) FROM heapprof_dumps()")
[ "$total" -le $(( (size * 3 / 2) + 1024 )) ] || { echo "max_dump_bytes exceeded: $total"; exit 1; }

# no temporary files are left behind
left=$(q -c "SELECT count(*) FROM pg_ls_dir('heapprof/dumps') f WHERE f NOT LIKE '%.heap'")
[ "$left" = 0 ] || { echo "temporary files left: $left"; exit 1; }

# clean up the dumps for later tests
settings 1MB 0 100MB
leaky_session 2097152 >/dev/null
wait_dumps 0
echo "exit dumps: written above the threshold with pid and type, reportable, retention held"
