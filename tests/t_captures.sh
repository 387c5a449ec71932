#!/usr/bin/env bash
# t_captures.sh -- statements that leave memory behind (cluster (a):
# prof_active:false, lg_prof_sample:0, heapprof preloaded):
#  - off by default: a leaking statement is not captured;
#  - with heapprof.capture_min_growth = 1MB, a function that leaks 3 MB into
#    TopMemoryContext on each call is captured each time, with the queryid
#    EXPLAIN VERBOSE shows, its text, role, database and growth; the leaking
#    stack is on top of every report read with stored => NAME, the flame
#    graph's title names the query, and jeprof reads the same file with the
#    same total;
#  - statements below the threshold and heapprof's own reports (its symbol
#    caches) are not captured;
#  - growth at the commit counts: a WITH HOLD cursor is captured, as its
#    DECLARE in autocommit, as the COMMIT of a block;
#  - a deferred trigger's memory is its INSERT's (found at the commit), and
#    neither a statement that failed at its commit nor the SET that turns
#    captures off is captured;
#  - heapprof.max_captures keeps the newest; a role reads only its own.
set -euo pipefail
. "${HP_TOP:=$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
QOPTS="-c heapprof.dump_on_exit_threshold=-1 -c heapprof.store_statement_text=on"
w=$(scratch)
cleanup() {
	[ -n "${data:-}" ] && rm -f "$data"/heapprof/captures/*.heap || true
	q -c "DROP ROLE IF EXISTS hp_capturer" >/dev/null 2>&1 || true
}
at_exit cleanup
create_ext heapprof heapprof_test
data=$(q -c "SHOW data_directory")
rm -f "$data"/heapprof/captures/*.heap
leak="SELECT heapprof_test_leak(3000000)"
# jemalloc's clock for these records ticks every few ms: keep the statements apart
gap="SELECT pg_sleep(0.02)"

# -- off by default
q -c "SELECT heapprof_enable()" -c "$leak" >/dev/null
[ "$(q -c "SELECT count(*) FROM heapprof_captures()")" = 0 ] || { echo "captured with the setting off"; exit 1; }

# -- on: two leaks captured, a small statement and a report not
out=$(q -c "SET compute_query_id = on" -c "SET heapprof.capture_min_growth = '1MB'" \
	-c "SELECT heapprof_enable()" -c "$gap" -c "$leak" -c "$gap" -c "$leak" -c "$gap" \
	-c "SELECT count(*) FROM generate_series(1, 1000)" -c "$gap" \
	-c "SELECT count(*) FROM heapprof_dump_text()" -c "$gap" \
	-c "EXPLAIN (VERBOSE, COSTS OFF) $leak")
queryid=$(echo "$out" | sed -n 's/^Query Identifier: //p')
[ -n "$queryid" ] || { echo "no query identifier: $out"; exit 1; }
rows=$(q -F ' ' -c "SELECT queryid, usename, datname, growth_bytes >= 3000000, total_bytes BETWEEN 3145728 AND 3145728 + 65536, partial, query FROM heapprof_captures() ORDER BY name")
expected="$queryid postgres postgres t t f $leak"
[ "$rows" = "$expected
$expected" ] || { printf 'captures:\n%s\nexpected twice:\n%s\n' "$rows" "$expected"; exit 1; }

name=$(q -c "SELECT name FROM heapprof_captures() ORDER BY name LIMIT 1")
out=$(q -F ' ' -c "SELECT function, flat_bytes FROM heapprof_top(1, stored => '$name')" \
	-c "SELECT frames[1] FROM heapprof_stacks(stored => '$name') ORDER BY bytes DESC LIMIT 1" \
	-c "SELECT heapprof_dump_flamegraph(stored => '$name') LIKE '%statement capture of query $queryid, % kB left behind%'" \
	-c "SELECT count(*) > 0 FROM heapprof_dump_dot(stored => '$name')" \
	-c "SELECT length(heapprof_dump_pprof(stored => '$name')) > 100")
[ "$out" = "hpt_leak_top 3145728
hpt_leak_top
t
t
t" ] || { echo "reports of capture $name: $out"; exit 1; }
ours=$(q -c "SELECT line FROM heapprof_dump_text(stored => '$name', fold => false) line LIMIT 1" | sed -n 's/^Total: \([0-9.]*\) MB$/\1/p')
theirs=$(jeprof --text "$(pg_config --bindir)/postgres" "$data/heapprof/captures/$name.heap" 2>/dev/null | sed -n 's/^Total: \([0-9.]*\) MB$/\1/p')
[ -n "$ours" ] && [ "$ours" = "$theirs" ] || { echo "capture total: heapprof $ours MB, jeprof $theirs MB"; exit 1; }

# -- growth at the commit: a WITH HOLD cursor's rows are stored as its
#    transaction commits, after the statement's end (in memory: work_mem);
#    autocommit and a block
cursor="DECLARE hp_held CURSOR WITH HOLD FOR SELECT md5(g::text) FROM generate_series(1, 300000) g ORDER BY 1"
rm -f "$data"/heapprof/captures/*.heap
list="SELECT count(*), bool_and(growth_bytes >= 10485760), bool_and(total_bytes >= 10485760), min(query) FROM heapprof_captures()"
out=$(q -c "SET heapprof.capture_min_growth = '10MB'" -c "SET work_mem = '256MB'" -c "SELECT heapprof_enable()" -c "$gap" -c "$cursor" -c "$gap" -c "$list")
[ "$(echo "$out" | tail -n1)" = "1|t|t|$cursor" ] || { echo "a WITH HOLD cursor in autocommit: $out"; exit 1; }
rm -f "$data"/heapprof/captures/*.heap
out=$(q -c "SET heapprof.capture_min_growth = '10MB'" -c "SET work_mem = '256MB'" -c "SELECT heapprof_enable()" -c "$gap" -c "BEGIN" -c "$cursor" \
	-c "COMMIT" -c "$gap" -c "$list")
[ "$(echo "$out" | tail -n1)" = "1|t|t|COMMIT" ] || { echo "a WITH HOLD cursor in a block: $out"; exit 1; }
rm -f "$data"/heapprof/captures/*.heap

# -- the statement a capture names: never the query of a deferred trigger
#    (its memory is its statement's, found at the commit), never a statement
#    that failed at its commit, never the SET that turns captures off
big="PERFORM set_config('hp.big', repeat('b', 20000000), false)"
q >/dev/null <<SQL
CREATE TABLE hp_cap_d(x int);
CREATE FUNCTION hp_cap_trg() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN $big; RETURN NULL; END \$\$;
CREATE CONSTRAINT TRIGGER hp_cap_dt AFTER INSERT ON hp_cap_d DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION hp_cap_trg();
CREATE TABLE hp_cap_u(x int UNIQUE DEFERRABLE INITIALLY DEFERRED);
CREATE PROCEDURE hp_cap_p() LANGUAGE plpgsql AS \$\$ BEGIN $big; COMMIT; RAISE EXCEPTION 'after the commit'; END \$\$;
SQL
rm -f "$data"/heapprof/captures/*.heap
psql -X -q -At -d postgres -c "SET heapprof.store_statement_text = on" \
	-c "SET heapprof.capture_min_growth = '4MB'" -c "SELECT heapprof_enable()" \
	-c "$gap" -c "INSERT INTO hp_cap_d VALUES (1)" -c "$gap" \
	-c "INSERT INTO hp_cap_u VALUES (1), (1)" -c "CALL hp_cap_p()" -c "$gap" \
	-c "SET heapprof.capture_min_growth = '1MB'" -c "SET heapprof.capture_min_growth = -1" -c "$gap" >/dev/null 2>&1 || true
out=$(q -c "SELECT query FROM heapprof_captures() ORDER BY name")
[ "$out" = "INSERT INTO hp_cap_d VALUES (1)" ] || { echo "captures of a deferred trigger, a failed commit, a SET: $out"; exit 1; }
q -c "DROP TABLE hp_cap_d, hp_cap_u" -c "DROP FUNCTION hp_cap_trg()" -c "DROP PROCEDURE hp_cap_p()" >/dev/null
rm -f "$data"/heapprof/captures/*.heap

# -- retention: the newest max_captures stay
q -c "SET heapprof.capture_min_growth = '1MB'" -c "SET heapprof.max_captures = 3" -c "SELECT heapprof_enable()" \
	-c "$gap" -c "$leak" -c "$gap" -c "$leak" -c "$gap" -c "$leak" >/dev/null
n=$(q -c "SELECT count(*) FROM heapprof_captures()")
[ "$n" = 3 ] && ! q -c "SELECT name FROM heapprof_captures()" | grep -x "$name" >/dev/null ||
	{ echo "retention: $n captures, oldest kept: $(q -c "SELECT name FROM heapprof_captures()")"; exit 1; }

# -- a role sees its own captures only
q -c "CREATE ROLE hp_capturer LOGIN" \
	-c "GRANT EXECUTE ON FUNCTION heapprof_captures(), heapprof_enable(integer), heapprof_test_leak(bigint) TO hp_capturer" \
	-c "ALTER ROLE hp_capturer SET heapprof.capture_min_growth = '1MB'" >/dev/null
q_as hp_capturer -c "SELECT heapprof_enable()" -c "$gap" -c "$leak" \
	-c "SELECT count(*), min(usename) FROM heapprof_captures()" > "$w/own"
[ "$(tail -n1 "$w/own")" = "1|hp_capturer" ] || { echo "a role's view of captures: $(cat "$w/own")"; exit 1; }
echo "captures: leaks captured with queryid $queryid, text, role, database; hpt_leak_top on top in every form; jeprof agrees ($ours MB); small statements and reports left out; WITH HOLD cursors captured at their commit (autocommit and block); retention; roles"
