#!/bin/bash
# t_deep.sh -- a request costs a deep target almost nothing, leaves its
# error-context stack as it found it, and a DBA's own
# pg_log_backend_memory_contexts logs as before.  Also the canary for the
# server behaviour the request mechanism leans on (the memory-context logging
# signal, its message strings, the context walk): check 3 fails loudly when a
# PostgreSQL version changes them.
#
# A target 50 SQL-function levels deep sleeps, then RAISEs a NOTICE whose
# CONTEXT lists every level.  Checks, each against a run with no request:
#  1. after a heapprof_status(pid => target) served by emit_log_hook, the
#     NOTICE's CONTEXT is the same;
#  2. the same with log_min_messages = fatal in the target (served by the
#     doorbell's stats method, the hook never runs);
#  3. a DBA's pg_log_backend_memory_contexts(target) logs the header, one
#     line per context and the Grand total, no CONTEXT line, and the NOTICE's
#     CONTEXT is the same afterwards;
#  4. the time bound: at depth 1000 one request adds < 2 s to the target.
set -euo pipefail
cd "${HP_TOP:-$(dirname "$0")/..}"
. tests/lib.sh
PORT=${PORT:-55732}
ulimit -s 262144
start_cluster ctx "$PORT" "prof:true,prof_active:false" \
	"shared_preload_libraries = 'heapprof'" "max_stack_depth = '200MB'"
export $(cluster_env ctx "$PORT")
LOG=$HP_SCRATCH/ctx/server.log
q <<'SQL'
CREATE EXTENSION heapprof;
CREATE FUNCTION bottom(secs float8) RETURNS int LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
  WHILE clock_timestamp() < t0 + secs * interval '1 s' LOOP
    PERFORM pg_sleep(0.01);
  END LOOP;
  RAISE NOTICE 'probe';
  RETURN (extract(epoch FROM clock_timestamp() - t0) * 1000)::int;
END $$;
-- STRICT over a CASE: never inlined, one fmgr_sql frame per level
CREATE FUNCTION r(n int, secs float8) RETURNS int LANGUAGE sql STRICT AS $$
  SELECT CASE WHEN n = 0 THEN bottom(secs) ELSE r(n - 1, secs) END $$;
SQL

fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }

# target DEPTH SECS SETUP-SQL REQUEST-SQL(with %PID%) -> stdout: "ms"; NOTICE
# and its CONTEXT in $HP_SCRATCH/notice
n=0
target() {
	local depth=$1 secs=$2 setup=$3 request=$4 pid
	n=$((n + 1))
	q >"$HP_SCRATCH/out" 2>"$HP_SCRATCH/notice" <<SQL &
\\set SHOW_CONTEXT always
SET application_name = 'hp_ctx_target$n';
$setup
SELECT heapprof_enable() AS e \\gset
SELECT r($depth, $secs);
SQL
	local job=$!
	if [ -n "$request" ]; then
		pid=$(WAIT_STEP=0.02 wait_query "target $n to sleep" 40 "SELECT pid FROM pg_stat_activity
			WHERE application_name = 'hp_ctx_target$n' AND wait_event = 'PgSleep'") || return 1
		sleep 0.3
		q -c "${request//%PID%/$pid}" >/dev/null
	fi
	wait $job
	grep -E '^[0-9]+$' "$HP_SCRATCH/out" | tail -1
}
context_of_notice() { grep -c 'SQL function "r"' "$HP_SCRATCH/notice" || true; }

target 50 1 "" "" >/dev/null
want=$(context_of_notice)
[ "$want" -ge 50 ] && ok "no request: the NOTICE names $want SQL-function levels" || bad "no request: $want levels"

target 50 1 "" "SELECT heapprof_status(pid => %PID%)" >/dev/null
got=$(context_of_notice)
[ "$got" = "$want" ] && ok "after a request served by emit_log_hook: same CONTEXT ($got)" || bad "hook path: CONTEXT $got, want $want"

target 50 1 "SET log_min_messages = fatal;" "SELECT heapprof_status(pid => %PID%)" >/dev/null
got=$(context_of_notice)
[ "$got" = "$want" ] && ok "after a request served by the doorbell (log_min_messages = fatal): same CONTEXT ($got)" || bad "doorbell path: CONTEXT $got, want $want"

before=$(wc -l <"$LOG")
# (no peak tracking here: a peak taken at the same moment rides on the same
# memory-context signal, and its walk is heapprof's to keep out of the log)
target 50 1 "SET heapprof.track_peak = off;" "SELECT pg_log_backend_memory_contexts(%PID%)" >/dev/null
got=$(context_of_notice)
[ "$got" = "$want" ] && ok "after a DBA's pg_log_backend_memory_contexts: same CONTEXT ($got)" || bad "DBA call: CONTEXT $got, want $want"
tail -n +"$((before + 1))" "$LOG" >"$HP_SCRATCH/dba.log"
hdr=$(grep -c 'logging memory contexts of PID' "$HP_SCRATCH/dba.log" || true)
lines=$(grep -c 'LOG:  level: ' "$HP_SCRATCH/dba.log" || true)
total=$(grep -c 'LOG:  Grand total: ' "$HP_SCRATCH/dba.log" || true)
ctx=$(grep -c 'CONTEXT:' "$HP_SCRATCH/dba.log" || true)
[ "$hdr" = 1 ] && [ "$lines" -gt 50 ] && [ "$total" = 1 ] && [ "$ctx" = 0 ] &&
	ok "the DBA's call logged its header, $lines context lines, the Grand total and no CONTEXT line" ||
	bad "DBA's log: header $hdr, lines $lines, total $total, CONTEXT $ctx"

base=$(target 1000 3 "" "")
with=$(target 1000 3 "" "SELECT heapprof_status(pid => %PID%)")
[ $((with - base)) -lt 2000 ] && ok "depth 1000: the request added $((with - base)) ms (< 2000)" ||
	bad "depth 1000: the request added $((with - base)) ms"

[ "$(grep -c 'level: \|Grand total' "$LOG")" = "$((lines + total))" ] &&
	ok "heapprof's own requests left no memory-context line in the log" || bad "heapprof's walks reached the log"
[ $fail = 0 ] || exit 1
echo "deep target: a request at depth 1000 added $((with - base)) ms; CONTEXT unchanged on every path; a DBA's call logs as before"
