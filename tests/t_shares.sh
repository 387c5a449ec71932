#!/usr/bin/env bash
# t_shares.sh -- no role touches another's files in the store (its own
# cluster: jemalloc, heapprof preloaded; it restarts it):
#  - a login role with no heapprof grant, with the DBA's capture and exit
#    dump thresholds set, leaks in many statements and exits holding memory
#    in many short sessions: a superuser's capture and exit dump stay, the
#    role keeps its newest within its share (heapprof.role_share);
#  - one role's persisted snapshots stop at its share: another role still
#    persists one;
#  - a stored name means one thing: a session snapshot may not take the
#    name of another role's persisted one, and a session snapshot's drop
#    leaves the file another role persisted under its name meanwhile;
#  - listings and drop read only a file's first line before its owner is
#    checked, and no more than heapprof.report_memory_limit after (read
#    bytes from /proc/PID/io);
#  - a login that fails after authentication (no such role) leaves no exit
#    dump and removes none;
#  - heapprof_status() removes nothing; lock files of symbol index builders
#    that died are swept at the next start.
set -euo pipefail
cd "${HP_TOP:-$(dirname "$0")/..}"
. tests/lib.sh
P=${PORT:-55771}
QOPTS="-c heapprof.dump_on_exit_threshold=-1"
start_cluster shares "$P" "prof:true,prof_active:false,lg_prof_sample:0" \
	"shared_preload_libraries = 'heapprof'" || fail "cluster did not start"
export $(cluster_env shares "$P")
data=$HP_SCRATCH/shares/data
create_ext heapprof heapprof_test
q -c "CREATE ROLE mallory LOGIN" -c "CREATE ROLE bob LOGIN" -c "CREATE ROLE alice LOGIN" \
	-c "GRANT EXECUTE ON FUNCTION heapprof_test_leak(bigint), heapprof_test_hold(bigint, integer) TO mallory" \
	-c "SELECT heapprof_grant('bob', 'leaks')" -c "SELECT heapprof_grant('alice', 'leaks')" >/dev/null
q -c "ALTER SYSTEM SET heapprof.enable_at_start = on" -c "ALTER SYSTEM SET heapprof.capture_min_growth = '1MB'" \
	-c "ALTER SYSTEM SET heapprof.max_captures = 6" -c "ALTER SYSTEM SET heapprof.dump_on_exit_threshold = '5MB'" \
	-c "ALTER SYSTEM SET heapprof.max_dumps = 6" -c "ALTER SYSTEM SET heapprof.max_snapshots = 4" \
	-c "SELECT pg_reload_conf()" >/dev/null
reloaded() { [ "$(q -c "SHOW heapprof.max_snapshots")" = 4 ]; }
wait_for "the settings" 10 reloaded
names() { ls "$data/heapprof/$1" 2>/dev/null | grep '\.heap$' || true; }
owned() { q -c "SELECT count(*) FROM heapprof_stored() WHERE owner = '$1' AND kind = '$2'"; }

# -- captures and exit dumps: the superuser's first
q -c "SELECT heapprof_test_leak(3000000)" >/dev/null
QOPTS= q -c "SELECT heapprof_test_hold(10000000)" >/dev/null
has_dump() { [ -n "$(names dumps)" ]; }
wait_for "the superuser's exit dump" 10 has_dump
su_capture=$(names captures)
su_dump=$(names dumps)
[ -n "$su_capture" ] && [ -n "$su_dump" ] || fail "superuser's files: capture '$su_capture', dump '$su_dump'"

# mallory: 12 statements that keep 3 MB, then 10 sessions that exit holding 10 MB
args=()
for i in $(seq 12); do args+=(-c "SELECT heapprof_test_leak(3000000)"); done
q_as mallory "${args[@]}" >/dev/null 2>"$HP_SCRATCH/mallory.err"
for i in $(seq 10); do q_as mallory -c "SELECT heapprof_test_hold(10000000)" >/dev/null; done
sleep 1
for f in $su_capture; do [ -e "$data/heapprof/captures/$f" ] || fail "mallory's captures pushed out the superuser's $f"; done
for f in $su_dump; do [ -e "$data/heapprof/dumps/$f" ] || fail "mallory's exit dumps pushed out the superuser's $f"; done
mc=$(owned mallory capture)
md=$(owned mallory 'exit dump')
# share: 50% of 6 = 3
[ "$mc" = 3 ] || fail "mallory holds $mc captures, her share is 3"
[ "$md" -ge 1 ] && [ "$md" -le 3 ] || fail "mallory holds $md exit dumps, her share is 3"
grep -q "no room in the role's share" "$HP_SCRATCH/mallory.err" && fail "mallory's own older captures should make room: $(cat "$HP_SCRATCH/mallory.err")"
echo "captures and exit dumps: the superuser's stay; mallory keeps $mc captures and $md exit dumps of her share of 3"

# -- snapshots: bob's share of 4 is 2; alice still gets one
q_as bob -c "SELECT heapprof_snapshot('b1', true)" -c "SELECT heapprof_snapshot('b2', true)" >/dev/null
PGUSER=bob expect_error 53400 -c "SELECT heapprof_snapshot('b3', true)" || fail "bob's third snapshot"
q_as alice -c "SELECT heapprof_snapshot('a1', true)" >/dev/null || fail "alice was locked out by bob's snapshots"

# -- a name means one thing
expect_error 42710 -c "SELECT heapprof_snapshot('b1', false)" ||
	fail "a superuser's session snapshot took bob's persisted name"
# the superuser's session snapshot y; bob persists y meanwhile; the superuser drops its y
out=$(q -c "SELECT heapprof_snapshot('y', false) > 0" \
	-c "\\! PGOPTIONS= PGUSER=bob psql -X -q -At -d postgres -c \"SELECT heapprof_drop_snapshot('b2')\" -c \"SELECT heapprof_snapshot('y', true) > 0\"" \
	-c "SELECT count(*) FILTER (WHERE persisted), count(*) FILTER (WHERE NOT persisted) FROM heapprof_snapshots() WHERE name = 'y'" \
	-c "SELECT heapprof_drop_snapshot('y')")
grep -qx '1|1' <<<"$out" || fail "listing of y: session and bob's file expected, got: $out"
[ -e "$data/heapprof/snapshots/y.heap" ] || fail "the superuser's drop of its session snapshot removed bob's file"
[ "$(q_as bob -c "SELECT count(*) FROM heapprof_snapshots() WHERE name = 'y'")" = 1 ] || fail "bob lost y"
echo "names: a session snapshot cannot take another role's name; its drop leaves the other role's file"

# -- listings read a first line before the owner check, the budget after
bob_oid=$(q -c "SELECT oid FROM pg_roles WHERE rolname = 'bob'")
{
	head -n1 "$data/heapprof/snapshots/b1.heap" | sed "s/owner=[0-9]*/owner=$bob_oid/"
	head -c 50000000 /dev/zero | tr '\0' 'x'
	echo
} >"$HP_SCRATCH/big.heap"
chown "$HP_OSUSER" "$HP_SCRATCH/big.heap"
mv "$HP_SCRATCH/big.heap" "$data/heapprof/snapshots/big.heap"
# rchar_during WHO SQL: the bytes the backend of one session of WHO read (rchar) while it ran SQL
rchar_during() {
	local who=$1 sql=$2 out
	out=$(PGUSER=$who psql -X -q -At -d postgres 2>&1 <<-EOF || true
		SELECT pg_backend_pid() AS pid \\gset
		\\setenv HP_PID :pid
		\\! grep rchar /proc/\$HP_PID/io
		\\o /dev/null
		$sql;
		\\o
		\\! grep rchar /proc/\$HP_PID/io
	EOF
	)
	[ "$(grep -c '^rchar' <<<"$out")" = 2 ] || { echo "no rchar: $out" >&2; echo 999999999; return; }
	awk '/^rchar/ { v[n++] = $2 } END { print v[1] - v[0] }' <<<"$out"
}
as_alice=$(rchar_during alice "SELECT * FROM heapprof_stored()")
[ "$as_alice" -lt 5000000 ] || fail "alice's heapprof_stored() read $as_alice bytes: another role's file read whole"
as_alice_drop=$(rchar_during alice "SELECT heapprof_drop_snapshot('big')")
[ "$as_alice_drop" -lt 5000000 ] || fail "alice's drop of bob's file read $as_alice_drop bytes"
[ -e "$data/heapprof/snapshots/big.heap" ] || fail "alice dropped bob's file"
out=$(q -c "SET heapprof.report_memory_limit = '1MB'" -c "SELECT name, total_bytes IS NULL, file_bytes FROM heapprof_stored() WHERE name = 'big'")
[ "$out" = "big|t|50000001" ] || [ "${out%|*}" = "big|t" ] || fail "a file over the report budget: $out"
as_su=$(rchar_during postgres "SET heapprof.report_memory_limit = '1MB'; SELECT * FROM heapprof_stored()")
[ "$as_su" -lt 5000000 ] || fail "heapprof_stored() under a 1 MB budget read $as_su bytes"
rm -f "$data/heapprof/snapshots/big.heap"
echo "listings: alice's listing read $as_alice bytes and her refused drop $as_alice_drop of bob's 50 MB file; a superuser's under a 1 MB budget $as_su"

# -- a login that fails after authentication (no such role) leaves no dump and removes none
# room for every dump: the superuser's own sessions (the checks here) leave dumps meanwhile, and
# its retention may rightly remove its oldest
q -c "ALTER SYSTEM SET heapprof.dump_on_exit_threshold = '256kB'" -c "ALTER SYSTEM SET heapprof.max_dumps = 1000" \
	-c "SELECT pg_reload_conf()" >/dev/null
low() { [ "$(QOPTS= q -c "SHOW heapprof.dump_on_exit_threshold")" = 256kB ]; }
wait_for "the low threshold" 10 low
before=$(names dumps)
for i in 1 2 3; do PGUSER=no_such_role psql -X -q -At -d postgres -c "SELECT 1" >/dev/null 2>&1 || true; done
sleep 0.5
# by their owner line: other sessions (the check above) may leave dumps of their own meanwhile
for f in $before; do [ -e "$data/heapprof/dumps/$f" ] || fail "failed logins removed $f"; done
nobody=$(grep -l '^%heapprof v=[0-9]* pid=[0-9]* owner=0 ' "$data"/heapprof/dumps/*.heap 2>/dev/null || true)
[ -z "$nobody" ] || fail "failed logins left dumps of no role: $nobody"
q -c "ALTER SYSTEM SET heapprof.dump_on_exit_threshold = '5MB'" -c "ALTER SYSTEM SET heapprof.max_dumps = 6" \
	-c "SELECT pg_reload_conf()" >/dev/null
echo "failed logins: no dump, none removed"

# -- heapprof_status() removes nothing; stale build locks go at the next start
as_pg mkdir -p "$data/heapprof/symbols"
as_pg touch "$data/heapprof/symbols/tmp.4000000.7" "$data/heapprof/symbols/0123abcd.heap.lock"
q -c "SELECT symbol_index_bytes >= 0 FROM heapprof_status()" >/dev/null
[ -e "$data/heapprof/symbols/tmp.4000000.7" ] || fail "heapprof_status() removed a file"
as_pg "$PGBIN/pg_ctl" -D "$data" -w restart -m fast >/dev/null
[ ! -e "$data/heapprof/symbols/0123abcd.heap.lock" ] || fail "a stale build lock survived a restart"
[ ! -e "$data/heapprof/symbols/tmp.4000000.7" ] || fail "a dead writer's draft survived a restart"
echo "shares: no role's files pushed out by another's; names mean one thing; listings read first lines; status removes nothing; stale locks swept"
