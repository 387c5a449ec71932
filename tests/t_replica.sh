#!/usr/bin/env bash
# t_replica.sh -- heapprof on a primary and its streaming hot standby
# (pg_basebackup -R), both with jemalloc and heapprof preloaded:
#  - the extension, created on the primary after the standby started,
#    arrives through WAL;
#  - under a write workload the standby's startup process and walreceiver
#    (and the primary's walsender) are enabled and reported by pid; the
#    startup process, idle at the end of WAL, answers within the default
#    request timeout (from 16 it sleeps until WAL or a wake-up comes);
#  - on the standby: session and persisted snapshots, exit dumps and the
#    heap history work (files under its own $PGDATA, no WAL) and the primary
#    sees none of them;
#  - pg_heapprof over both servers: --list shows both with their roles,
#    per-process reports land in one file each, --merge totals equal the sum
#    of the single reports (and the bytes the sessions hold), --list --merge
#    shows each one's share, --base-type diffs across servers;
#  - a standby that hangs (SIGSTOP) or is stopped is reported as down within
#    the connect timeout, the primary still answers, and the exit status is 1.
set -euo pipefail
cd "${HP_TOP:-$(dirname "$0")/..}"
top=$PWD
. tests/lib.sh
P1=${PORT:-55741}
P2=$((P1 + 1))
conf=prof:true,prof_active:false,lg_prof_sample:0
pdir=$HP_SCRATCH/primary
sdir=$HP_SCRATCH/standby
w=$HP_SCRATCH/work
mkdir -p "$w"
stopped=
finish() {
	[ -n "$stopped" ] && kill -CONT "$stopped" 2>/dev/null
	[ -n "${HOLD_P_PID:-}" ] && kill "$HOLD_P_PID" 2>/dev/null
	[ -n "${HOLD_S_PID:-}" ] && kill "$HOLD_S_PID" 2>/dev/null
}
at_exit finish
qp() { PGHOST=$pdir/sock PGPORT=$P1 PGUSER=postgres q "$@"; }
qs() { PGHOST=$sdir/sock PGPORT=$P2 PGUSER=postgres q "$@"; }
A="host=$pdir/sock port=$P1 user=postgres dbname=postgres"
B="host=$sdir/sock port=$P2 user=postgres dbname=postgres"
cli() { "$top/pg_heapprof" "$@"; }

start_cluster primary "$P1" "$conf" "shared_preload_libraries = 'heapprof'" || fail "primary"
as_pg mkdir -p "$sdir/sock"
as_pg "$PGBIN/pg_basebackup" -h "$pdir/sock" -p "$P1" -U postgres -D "$sdir/data" -R -X stream -c fast \
	>"$w/basebackup.log" 2>&1 || { cat "$w/basebackup.log"; fail "pg_basebackup"; }
printf "port = %s\nunix_socket_directories = '%s'\n" "$P2" "$sdir/sock" | as_pg tee -a "$sdir/data/postgresql.conf" >/dev/null
HP_CLUSTERS+=("$sdir")
as_pg env LD_PRELOAD="$JEMALLOC_SO" MALLOC_CONF="$conf" "$PGBIN/pg_ctl" -D "$sdir/data" -l "$sdir/server.log" -w start \
	>/dev/null || { cat "$sdir/server.log"; fail "standby start"; }
[ "$(qs -c 'SELECT pg_is_in_recovery()')" = t ] || fail "the standby is not in recovery"

# the extensions reach the standby through WAL
qp -c "CREATE EXTENSION heapprof" -c "CREATE EXTENSION heapprof_test"
replayed_ext() { [ "$(qs -c "SELECT count(*) FROM pg_extension WHERE extname LIKE 'heapprof%'")" = 2 ]; }
wait_for "the extension on the standby" 20 replayed_ext

# the replication processes, enabled by pid
startup=$(qs -c "SELECT pid FROM heapprof_backends() WHERE backend_type = 'startup'")
walrcv=$(qs -c "SELECT pid FROM heapprof_backends() WHERE backend_type = 'walreceiver'")
walsnd=$(qp -c "SELECT pid FROM heapprof_backends() WHERE backend_type = 'walsender'")
[ -n "$startup" ] && [ -n "$walrcv" ] && [ -n "$walsnd" ] || fail "startup '$startup', walreceiver '$walrcv', walsender '$walsnd'"
cli -d "$B" --enable --pid "$startup" | grep -x "profiling of process $startup is on" >/dev/null || fail "--enable startup"
[ "$(qs -c "SELECT heapprof_enable(pid => $walrcv)")" = t ] || fail "enable walreceiver"
cli -d "$A" --enable --backend-type walsender | grep "profiling of process $walsnd (walsender) on .* is on" >/dev/null ||
	fail "--enable --backend-type walsender"

# a write workload on the primary, replayed by the standby
qp -c "CREATE TABLE t AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 200000) g" \
	-c "CREATE INDEX ON t (v)" -c "UPDATE t SET v = md5(v) WHERE id % 3 = 0" -c "DELETE FROM t WHERE id % 7 = 0"
lsn=$(qp -c "SELECT pg_current_wal_insert_lsn()")
replayed() { [ "$(qs -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ]; }
wait_for "replay" 60 replayed
n=$(qs -c "SELECT count(*) FROM t"); [ "$n" = 171429 ] || fail "the standby has $n rows"

t0=$(date +%s%N)
cli -d "$B" --report top --pid "$startup" -o "$w/startup.top" || fail "report of the startup process"
startup_ms=$((($(date +%s%N) - t0) / 1000000))
grep -qE '^ +1 +[1-9][0-9]* .* StartupXLOG|^ +1 +[1-9]' "$w/startup.top" || { cat "$w/startup.top"; fail "the startup process shows no memory"; }
grep -q 'StartupProcessMain' <(cli -d "$B" --report collapsed --pid "$startup") || fail "startup stacks"
startup_b=$(qs -c "SELECT sum(flat_bytes) FROM heapprof_top(100000, pid => $startup)")
# the walreceiver may hold no sampled allocation: its report must answer, rows or not
qs -c "SELECT count(*) FROM heapprof_dump_text(pid => $walrcv)" >/dev/null 2>&1 || fail "walreceiver report"
[ "$(qs -c "SELECT (heapprof_status(pid => $walrcv)).active")" = t ] || fail "status of the walreceiver"
[ "$(qs -c "SELECT (heapprof_status(pid => $startup)).active")" = t ] || fail "status of the startup process"

# snapshots and exit dumps on the standby: its own files, never WAL
qs -c "SELECT heapprof_enable()" -c "SELECT heapprof_snapshot('replica_session') > 0" \
	-c "SELECT heapprof_snapshot('replica_persisted', persist => true) > 0" \
	-c "SELECT count(*) FROM heapprof_stacks(base => 'replica_session')" >/dev/null || fail "snapshots on the standby"
[ -f "$sdir/data/heapprof/snapshots/replica_persisted.heap" ] || fail "no persisted snapshot file on the standby"
[ "$(qs -c "SELECT count(*) FROM heapprof_snapshots() WHERE name = 'replica_persisted'")" = 1 ] || fail "persisted snapshot not listed"
[ "$(qp -c "SELECT count(*) FROM heapprof_snapshots()")" = 0 ] || fail "a standby's snapshot reached the primary"
qs -c "SELECT count(*) > 0 FROM heapprof_stacks(stored => 'replica_persisted')" >/dev/null ||
	fail "report on a persisted snapshot on the standby"
qs -c "SELECT heapprof_drop_snapshot('replica_persisted')"
PGOPTIONS="-c heapprof.dump_on_exit_threshold=0" \
	qs -c "SELECT heapprof_enable()" -c "SELECT heapprof_test_hold(1048576)" >/dev/null
wait_for "an exit dump on the standby" 10 eval 'ls "$sdir/data/heapprof/dumps/" 2>/dev/null | grep . >/dev/null'
dump=$(qs -c "SELECT name FROM heapprof_dumps() LIMIT 1")
[ -n "$dump" ] && [ "$(qs -c "SELECT count(*) > 0 FROM heapprof_top(5, stored => '$dump')")" = t ] || fail "exit dump on the standby"
[ "$(qp -c "SELECT count(*) FROM heapprof_dumps()")" = 0 ] || fail "a standby's exit dump reached the primary"

# one idle session on each server holding known bytes
coproc HOLD_P { psql -X -q -At -h "$pdir/sock" -p "$P1" -U postgres -d postgres; }
coproc HOLD_S { psql -X -q -At -h "$sdir/sock" -p "$P2" -U postgres -d postgres; }
echo "SET compute_query_id = on; SELECT heapprof_enable(); SELECT heapprof_test_hold(3145728); SELECT pg_backend_pid();" >&"${HOLD_P[1]}"
echo "SET compute_query_id = on; SELECT heapprof_enable(); SELECT heapprof_test_hold(2097152); SELECT pg_backend_pid();" >&"${HOLD_S[1]}"
for _ in 1 2; do read -r -t 20 _ <&"${HOLD_P[0]}"; read -r -t 20 _ <&"${HOLD_S[0]}"; done
read -r -t 20 hp <&"${HOLD_P[0]}" && read -r -t 20 hs <&"${HOLD_S[0]}" || fail "holding sessions"

# the heap history on the standby: its collector keeps its own processes,
# in its own files (no WAL, no table), readable there; the primary has none
echo "heapprof.history_interval = '1s'" | as_pg tee -a "$sdir/data/postgresql.conf" >/dev/null
qs -c "SELECT pg_reload_conf()" >/dev/null
PGHOST=$sdir/sock PGPORT=$P2 PGUSER=postgres wait_query "the standby session in the standby's history" 20 \
	"SELECT 1 FROM heapprof_history() WHERE pid = $hs AND what = 'function' AND key = 'hpt_leaf_alloc'" >/dev/null ||
	fail "no history of the standby's session on the standby: $(qs -c 'SELECT * FROM heapprof_collector()')"
[ "$(qp -c "SELECT count(*) FROM heapprof_history()")" = 0 ] || fail "the primary has a history"

# --list over both: both servers, their roles, the replication processes
cli -d "$A" -d "$B" --list > "$w/list.txt" || { cat "$w/list.txt"; fail "--list over both"; }
grep -qE "^ *$startup +startup .* on .*:$P2 +standby$" "$w/list.txt" || { cat "$w/list.txt"; fail "--list: startup on the standby"; }
grep -qE "^ *$walsnd +walsender .*:$P1 +primary$" "$w/list.txt" || { cat "$w/list.txt"; fail "--list: walsender on the primary"; }
grep -qE "^ *$hs +client backend .*:$P2 +standby$" "$w/list.txt" || { cat "$w/list.txt"; fail "--list: session on the standby"; }
printf '# both servers\n%s\n\n  %s\n' "$A" "$B" > "$w/servers"
cli -f "$w/servers" --list --backend-type startup | grep -c "startup" | grep -x 1 >/dev/null || fail "--servers file"

# per-process reports, one file each, and their merge
sum() { awk '{s += $NF} END {printf "%d\n", s}' "$@"; }
mkdir "$w/per"
cli -d "$A" -d "$B" --backend-type "client backend" --focus hpt_ --report collapsed -o "$w/per" > "$w/per.out" ||
	{ cat "$w/per.out"; fail "per-process reports"; }
ls "$w/per" | grep -- "-$hp\.collapsed$" >/dev/null && ls "$w/per" | grep -- "-$hs\.collapsed$" >/dev/null || { ls "$w/per"; fail "report files"; }
per=$(cat "$w/per"/*.collapsed | sum)
cli -d "$A" -d "$B" --backend-type "client backend" --focus hpt_ --merge --report collapsed -o "$w/merged.collapsed" ||
	fail "--merge"
merged=$(sum "$w/merged.collapsed")
[ "$merged" = "$per" ] && [ "$merged" = $((3145728 + 2097152)) ] || fail "merged $merged, single reports $per"
grep -q ';hpt_outer;hpt_middle;hpt_leaf_alloc 5242880$' "$w/merged.collapsed" || { cat "$w/merged.collapsed"; fail "merged stack"; }
cli -d "$A" -d "$B" --backend-type "client backend" --focus hpt_ --merge --report top -o "$w/merged.top" || fail "merged top"
grep -qE '^ +1 +5242880 +100.0% .* hpt_leaf_alloc$' "$w/merged.top" || { cat "$w/merged.top"; fail "merged top"; }
# ... by statement over both servers: the one statement that holds it on each,
# by the queryid each server's heapprof_stacks gives it
cli -d "$A" -d "$B" --backend-type "client backend" --focus hpt_ --merge --group-by query --report collapsed \
	-o "$w/byquery.collapsed" || fail "--merge --group-by query"
qid=$(qp -c "SELECT DISTINCT queryid FROM heapprof_stacks(pid => $hp, focus => 'hpt_')")
[ -n "$qid" ] && [ "$qid" = "$(qs -c "SELECT DISTINCT queryid FROM heapprof_stacks(pid => $hs, focus => 'hpt_')")" ] ||
	fail "the holding statement's queryid: '$qid' on the primary"
[ "$(cut -d';' -f1 "$w/byquery.collapsed" | sort -u)" = "query $qid" ] && [ "$(sum "$w/byquery.collapsed")" = 5242880 ] ||
	{ cat "$w/byquery.collapsed"; fail "--group-by query: not one root 'query $qid' of 5242880 bytes"; }
for f in text dot flamegraph pprof svg; do
	cli -d "$A" -d "$B" --backend-type "client backend" --merge --report $f -o "$w/merged.$f" && [ -s "$w/merged.$f" ] ||
		fail "merged $f"
done
cli -d "$A" -d "$B" --backend-type "client backend" --focus hpt_ --merge --list > "$w/share.txt" || fail "--list --merge"
grep -qE "^ *$hp +client backend .* 3145728 +60\.0% .*:$P1 +primary$" "$w/share.txt" &&
	grep -qE "^ *$hs +client backend .* 2097152 +40\.0% .*:$P2 +standby$" "$w/share.txt" || { cat "$w/share.txt"; fail "shares"; }
# across servers: the standby's startup process minus the primary's walsender
cli -d "$A" -d "$B" --backend-type startup --base-type walsender --merge --report text -o "$w/diff.txt" ||
	fail "--base-type across servers"
grep -q '^Total: ' "$w/diff.txt" || fail "diff report"

# a hung standby (SIGSTOP: connections wait in its backlog) and a stopped one
stopped=$(head -n 1 "$sdir/data/postmaster.pid")
kill -STOP "$stopped"
t0=$(date +%s%N)
set +e
cli -d "$A" -d "$B" --connect-timeout 2 --list > "$w/hung.txt" 2> "$w/hung.err"
rc=$?
set -e
hung_ms=$((($(date +%s%N) - t0) / 1000000))
kill -CONT "$stopped"
stopped=
[ $rc = 1 ] || fail "a hung standby: exit status $rc"
[ $hung_ms -lt 6000 ] || fail "a hung standby held --list for $hung_ms ms"
grep -qE "^ *$walsnd +walsender .*:$P1 +primary$" "$w/hung.txt" && grep -qE "unreachable.*:$P2 +down$" "$w/hung.txt" ||
	{ cat "$w/hung.txt" "$w/hung.err"; fail "--list with a hung standby"; }
grep -q ":$P2: " "$w/hung.err" || { cat "$w/hung.err"; fail "no message for the hung standby"; }
kill "$HOLD_S_PID" 2>/dev/null || true
as_pg "$PGBIN/pg_ctl" -D "$sdir/data" -m fast -w stop >/dev/null
t0=$(date +%s%N)
set +e
cli -d "$A" -d "$B" --backend-type "client backend" --focus hpt_ --merge --report collapsed -o "$w/half.collapsed" 2> "$w/half.err"
rc=$?
set -e
down_ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc = 1 ] && [ "$(sum "$w/half.collapsed")" = 3145728 ] || { cat "$w/half.err"; fail "merge with a stopped standby: status $rc"; }
grep -q ":$P2: .*" "$w/half.err" || { cat "$w/half.err"; fail "no message for the stopped standby"; }
echo "replica: startup process reported in $startup_ms ms ($startup_b B live after replay), snapshots and exit dumps on the standby, --list/--merge over primary+standby (merged $merged B = sum of singles), hung standby down in $hung_ms ms, stopped in $down_ms ms"
